#!/usr/bin/python3
"""PyTorch reference for banyan's GPT (tests/nn/reference_test.cpp).

Reads the model config, the initial weights, one batch per step and the AdamW settings that banyan
exported, builds the same GPT from plain torch ops, and runs `steps` training steps (forward,
backward, gradient clipping, AdamW), each on its own batch, in fp32 on the CPU with one thread. Writes
the logits of the first forward pass, then per step the loss and the gradient of every parameter
tensor (before clipping), then every parameter tensor and both AdamW moments after the last step.

Input file (little-endian):
  8s   magic b"BNYNREF2"
  8 x i32  vocab, max_seq_len, layers, heads, channels, B, T, steps
  6 x f32  lr, beta1, beta2, eps, weight_decay, grad_clip
  steps x (B*T i32 tokens, B*T i32 targets)
  i32 tensor count, then per tensor: i32 name length, name bytes, i32 rank, rank x i32 dims,
  prod(dims) f32 values (in banyan's parameter arena order)
Output file, f32 throughout, tensors packed in input order:
  logits of step 0 (B*T*V)
  steps x (loss, every gradient tensor)
  every parameter tensor after the last step, then every exp_avg, then every exp_avg_sq

Usage: gpt_reference.py INPUT OUTPUT
"""
import math
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


def read_input(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"BNYNREF2":
        raise SystemExit(f"gpt_reference: {path}: bad magic (not a banyan reference input)")
    off = 8
    V, maxT, L, NH, C, B, T, steps = struct.unpack_from("<8i", data, off)
    off += 32
    lr, b1, b2, eps, wd, clip = struct.unpack_from("<6f", data, off)
    off += 24
    batches = []
    for _ in range(steps):
        tokens = np.frombuffer(data, dtype="<i4", count=B * T, offset=off).reshape(B, T)
        off += 4 * B * T
        targets = np.frombuffer(data, dtype="<i4", count=B * T, offset=off).reshape(B, T)
        off += 4 * B * T
        batches.append((torch.from_numpy(tokens.astype(np.int64)), torch.from_numpy(targets.astype(np.int64))))
    (count,) = struct.unpack_from("<i", data, off)
    off += 4
    params = []
    for _ in range(count):
        (n,) = struct.unpack_from("<i", data, off)
        off += 4
        name = data[off:off + n].decode()
        off += n
        (rank,) = struct.unpack_from("<i", data, off)
        off += 4
        dims = struct.unpack_from(f"<{rank}i", data, off)
        off += 4 * rank
        size = int(np.prod(dims))
        values = np.frombuffer(data, dtype="<f4", count=size, offset=off).reshape(dims)
        off += 4 * size
        params.append((name, values.copy()))
    if off != len(data):
        raise SystemExit(f"gpt_reference: {path}: {len(data) - off} trailing bytes")
    cfg = dict(V=V, maxT=maxT, L=L, NH=NH, C=C, B=B, T=T, steps=steps)
    opt = dict(lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd)
    return cfg, opt, clip, batches, params


def init_params(cfg, device="cpu"):
    """GPT-2-style initial parameters (layernorm weights 1, the rest N(0, 0.02)), for the benchmarks'
    PyTorch side (the reference test reads banyan's own weights instead)."""
    V, maxT, L, C = cfg["V"], cfg["maxT"], cfg["L"], cfg["C"]
    shapes = {"wte": (V, C), "wpe": (maxT, C), "lnf_w": (C,), "lnf_b": (C,)}
    for l in range(L):
        h = f"h{l}."
        shapes.update({h + "ln1_w": (C,), h + "ln1_b": (C,), h + "qkv_w": (3 * C, C), h + "qkv_b": (3 * C,),
                       h + "proj_w": (C, C), h + "proj_b": (C,), h + "ln2_w": (C,), h + "ln2_b": (C,),
                       h + "fc_w": (4 * C, C), h + "fc_b": (4 * C,), h + "fcproj_w": (C, 4 * C), h + "fcproj_b": (C,)})
    P = {}
    for name, shape in shapes.items():
        t = torch.ones(shape) if name.endswith("_w") and "ln" in name else 0.02 * torch.randn(shape)
        P[name] = t.to(device).requires_grad_(True)
    return P


def block(x, P, h, NH):
    """Transformer block `h` ("h3."): pre-norm causal self-attention, then the tanh-GELU MLP."""
    B, T, C = x.shape
    hs = C // NH
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
    a = F.layer_norm(x, (C,), P[h + "ln1_w"], P[h + "ln1_b"], 1e-5)
    qkv = F.linear(a, P[h + "qkv_w"], P[h + "qkv_b"])
    q, k, v = qkv.split(C, dim=2)
    q = q.view(B, T, NH, hs).transpose(1, 2)
    k = k.view(B, T, NH, hs).transpose(1, 2)
    v = v.view(B, T, NH, hs).transpose(1, 2)
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
    att = att.masked_fill(~mask, float("-inf"))
    att = F.softmax(att, dim=-1)
    y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
    x = x + F.linear(y, P[h + "proj_w"], P[h + "proj_b"])
    m = F.layer_norm(x, (C,), P[h + "ln2_w"], P[h + "ln2_b"], 1e-5)
    m = F.gelu(F.linear(m, P[h + "fc_w"], P[h + "fc_b"]), approximate="tanh")
    return x + F.linear(m, P[h + "fcproj_w"], P[h + "fcproj_b"])


def forward(P, cfg, idx, targets, checkpointed=False):
    """Logits and mean cross-entropy; `checkpointed`: torch.utils.checkpoint around every block."""
    T = idx.shape[1]
    C, NH, L = cfg["C"], cfg["NH"], cfg["L"]
    x = P["wte"][idx] + P["wpe"][:T]
    for l in range(L):
        h = f"h{l}."
        x = checkpoint(block, x, P, h, NH, use_reentrant=False) if checkpointed else block(x, P, h, NH)
    x = F.layer_norm(x, (C,), P["lnf_w"], P["lnf_b"], 1e-5)
    logits = F.linear(x, P["wte"])
    loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
    return logits, loss


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    cfg, opt, clip, batches, params = read_input(sys.argv[1])
    P = {name: torch.tensor(v, dtype=torch.float32, requires_grad=True) for name, v in params}
    order = [P[name] for name, _ in params]
    optimizer = torch.optim.AdamW(order, **opt)
    out = []
    for step, (idx, targets) in enumerate(batches):
        optimizer.zero_grad()
        logits, loss = forward(P, cfg, idx, targets)
        loss.backward()
        if step == 0:
            out.append(logits.detach().numpy().astype("<f4").ravel())
        out.append(np.array([loss.item()], dtype="<f4"))
        out += [p.grad.numpy().astype("<f4").ravel() for p in order]
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(order, clip)
        optimizer.step()
    out += [p.detach().numpy().astype("<f4").ravel() for p in order]
    for key in ("exp_avg", "exp_avg_sq"):
        out += [optimizer.state[p][key].numpy().astype("<f4").ravel() for p in order]
    with open(sys.argv[2], "wb") as f:
        for a in out:
            f.write(a.tobytes())


if __name__ == "__main__":
    main()
