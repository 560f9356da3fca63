#!/usr/bin/python3
"""PyTorch anchor of memory_bench: the same GPT (pre-norm blocks, causal attention, tanh-GELU MLP,
tied head: tools/reference/gpt_reference.py's model and initialisation) trained with AdamW,
once without checkpointing and once with torch.utils.checkpoint around every block (non-reentrant).

Per variant: ms per training step, and the activation bytes held for the backward at the end of the
forward (unique storages that autograd saved, parameters excluded, counted with
torch.autograd.graph.saved_tensors_hooks); on CUDA also the peak of torch.cuda.max_memory_allocated
during a step above the memory held before it (parameters, gradients, optimizer state).

Usage: memory_bench.py VOCAB LAYERS HEADS CHANNELS SEQ BATCH THREADS STEPS BACKEND
Prints one JSON line: {"plain": {"ms", "saved_bytes", "peak_bytes"}, "checkpoint": {...}}.
"""
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
from gpt_reference import forward, init_params  # noqa: E402


def main():
    if len(sys.argv) != 10:
        raise SystemExit(__doc__)
    V, L, NH, C, T, B, threads, steps = map(int, sys.argv[1:9])
    dev = sys.argv[9]
    if dev == "cuda" and not torch.cuda.is_available():
        raise SystemExit("memory_bench.py: this torch has no CUDA (Debian's python3-torch is a CPU build)")
    if threads > 0:
        torch.set_num_threads(threads)
    torch.manual_seed(0)
    cfg = dict(V=V, maxT=T, L=L, NH=NH, C=C)
    P = init_params(cfg, dev)
    params = list(P.values())
    param_ptrs = {p.storage().data_ptr() for p in params}
    opt = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.0)
    idx = torch.randint(0, V, (B, T), device=dev)
    tgt = torch.randint(0, V, (B, T), device=dev)
    cuda = dev == "cuda"

    def step(ckpt):
        opt.zero_grad(set_to_none=False)
        forward(P, cfg, idx, tgt, ckpt)[1].backward()
        opt.step()

    def saved_bytes(ckpt):
        seen = {}

        def pack(t):
            s = t.storage()
            if s.data_ptr() not in param_ptrs:
                seen[s.data_ptr()] = s.nbytes()
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss = forward(P, cfg, idx, tgt, ckpt)[1]
        total = sum(seen.values())
        loss.backward()
        return total

    out = {}
    for name, ckpt in (("plain", False), ("checkpoint", True)):
        step(ckpt)  # warm-up (and the optimizer's state)
        peak = None
        if cuda:
            torch.cuda.synchronize()
            before = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            step(ckpt)
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated() - before
        start = time.perf_counter()
        for _ in range(steps):
            step(ckpt)
        if cuda:
            torch.cuda.synchronize()
        ms = (time.perf_counter() - start) * 1000.0 / steps
        out[name] = {"ms": ms, "saved_bytes": saved_bytes(ckpt), "peak_bytes": peak}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
