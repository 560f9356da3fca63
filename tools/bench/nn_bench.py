#!/usr/bin/python3
"""PyTorch side of nn_bench: times the training step of the same GPT (same config, batch, threads)
that banyan's nn_bench times. The forward is the reference model of tools/reference/gpt_reference.py
(nanoGPT's manual-attention GPT in plain torch ops); the step is forward, backward, gradient clipping
and AdamW, as in banyan's trainer.

The threading configuration is the caller's: torch.set_num_threads(THREADS) here, and whatever
OPENBLAS_NUM_THREADS and OMP_WAIT_POLICY the environment holds (nn_bench tries several and keeps the
fastest; both are read when torch loads its libraries, so they cannot change inside one process).

Usage: nn_bench.py VOCAB CTX LAYERS HEADS CHANNELS BATCH SEQ THREADS STEPS WARMUP
Prints one JSON line: {"ms_per_step": ..., "peak_rss_kb": ..., "threads": ..., "env": {...}}.
"""
import json
import os
import resource
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
from gpt_reference import forward, init_params  # noqa: E402


def main():
    if len(sys.argv) != 11:
        raise SystemExit(__doc__)
    V, maxT, L, NH, C, B, T, threads, steps, warmup = map(int, sys.argv[1:])
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    cfg = dict(V=V, maxT=maxT, L=L, NH=NH, C=C)
    P = init_params(cfg)
    params = list(P.values())
    opt = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.0)
    idx = torch.randint(0, V, (B, T))
    tgt = torch.randint(0, V, (B, T))

    def step():
        opt.zero_grad(set_to_none=False)
        _, loss = forward(P, cfg, idx, tgt)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()

    for _ in range(warmup):
        step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    ms = (time.perf_counter() - start) * 1000.0 / steps
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    env = {k: os.environ.get(k, "(unset)") for k in ("OPENBLAS_NUM_THREADS", "OMP_WAIT_POLICY", "OMP_NUM_THREADS")}
    print(json.dumps({"ms_per_step": ms, "peak_rss_kb": rss, "threads": torch.get_num_threads(), "env": env}))


if __name__ == "__main__":
    main()
