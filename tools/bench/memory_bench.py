#!/usr/bin/python3
"""PyTorch anchor of memory_bench: the same GPT (pre-norm blocks, causal attention, tanh-GELU MLP,
tied head; the math of tools/reference/gpt_reference.py, written per block here) trained with AdamW,
once without checkpointing and once with torch.utils.checkpoint around every block (non-reentrant).

Per variant: ms per training step, and the activation bytes held for the backward at the end of the
forward (unique storages that autograd saved, parameters excluded, counted with
torch.autograd.graph.saved_tensors_hooks); on CUDA also the peak of torch.cuda.max_memory_allocated
during a step above the memory held before it (parameters, gradients, optimizer state).

Usage: memory_bench.py VOCAB LAYERS HEADS CHANNELS SEQ BATCH THREADS STEPS BACKEND
Prints one JSON line: {"plain": {"ms", "saved_bytes", "peak_bytes"}, "checkpoint": {...}}.
"""
import json
import math
import sys
import time

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


def block(x, P, h, NH):
    B, T, C = x.shape
    hs = C // NH
    a = F.layer_norm(x, (C,), P[h + "ln1_w"], P[h + "ln1_b"], 1e-5)
    qkv = a @ P[h + "qkv_w"].t() + P[h + "qkv_b"]
    q, k, v = qkv.split(C, dim=2)
    q = q.view(B, T, NH, hs).transpose(1, 2)
    k = k.view(B, T, NH, hs).transpose(1, 2)
    v = v.view(B, T, NH, hs).transpose(1, 2)
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
    att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
    y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
    x = x + (y @ P[h + "proj_w"].t() + P[h + "proj_b"])
    m = F.layer_norm(x, (C,), P[h + "ln2_w"], P[h + "ln2_b"], 1e-5)
    m = F.gelu(m @ P[h + "fc_w"].t() + P[h + "fc_b"], approximate="tanh")
    return x + (m @ P[h + "fcproj_w"].t() + P[h + "fcproj_b"])


def loss_of(P, idx, tgt, L, NH, ckpt):
    B, T = idx.shape
    x = P["wte"][idx] + P["wpe"][:T]
    for l in range(L):
        h = f"h{l}."
        x = checkpoint(block, x, P, h, NH, use_reentrant=False) if ckpt else block(x, P, h, NH)
    x = F.layer_norm(x, (x.shape[-1],), P["lnf_w"], P["lnf_b"], 1e-5)
    logits = x @ P["wte"].t()
    return F.cross_entropy(logits.view(-1, logits.shape[-1]), tgt.view(-1))


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
    shapes = {"wte": (V, C), "wpe": (T, C), "lnf_w": (C,), "lnf_b": (C,)}
    for l in range(L):
        h = f"h{l}."
        shapes.update({h + "ln1_w": (C,), h + "ln1_b": (C,), h + "qkv_w": (3 * C, C), h + "qkv_b": (3 * C,),
                       h + "proj_w": (C, C), h + "proj_b": (C,), h + "ln2_w": (C,), h + "ln2_b": (C,),
                       h + "fc_w": (4 * C, C), h + "fc_b": (4 * C,), h + "fcproj_w": (C, 4 * C), h + "fcproj_b": (C,)})
    P = {}
    for name, shape in shapes.items():
        t = torch.ones(shape) if name.endswith("_w") and "ln" in name else 0.02 * torch.randn(shape)
        P[name] = t.to(dev).requires_grad_(True)
    params = list(P.values())
    param_ptrs = {p.storage().data_ptr() for p in params}
    opt = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.0)
    idx = torch.randint(0, V, (B, T), device=dev)
    tgt = torch.randint(0, V, (B, T), device=dev)
    cuda = dev == "cuda"

    def step(ckpt):
        opt.zero_grad(set_to_none=False)
        loss_of(P, idx, tgt, L, NH, ckpt).backward()
        opt.step()

    def saved_bytes(ckpt):
        seen = {}

        def pack(t):
            s = t.storage()
            if s.data_ptr() not in param_ptrs:
                seen[s.data_ptr()] = s.nbytes()
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss = loss_of(P, idx, tgt, L, NH, ckpt)
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
