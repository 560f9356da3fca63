#!/usr/bin/env python3
"""What a checkpoint costs train_gpt's step loop, in one run of this script:

  1. Stall per checkpoint (the time the step loop is blocked in save), same model and checkpoint
     size: --checkpoint-sync (each checkpoint written, fsynced and renamed before training goes on:
     what a checkpoint cost before the store), torch.save of tensors of the same sizes (the model's
     parameters and both AdamW moments, float32, on the same disk; /usr/bin/python3's torch, timed
     around torch.save, which does not fsync, and around torch.save + fsync), and the store's host
     buffer (the default). Also how long after the end of training the last checkpoint was durable
     (the flush the run waits for).
  2. A checkpoint every step against none: the step loop's overhead (train time per step).

Runs alternate (none, sync, buffer, none, ...) `--repeats` times; medians are reported.

  tools/bench/checkpoint_stall.py --build build/default [--repeats 3] [--json out.json]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

MODEL = ["--layers", "4", "--heads", "4", "--channels", "256", "--seq", "64", "--batch", "8"]
COMMON = ["--data", "/usr/share/games/fortunes", "--val-every", "0", "--val-batches", "1", "--sample-chars", "4",
          "--json"]

TORCH_SAVE = r"""
import json, os, sys, time, torch
n, path, repeats = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
t = {"params": torch.randn(n), "m": torch.randn(n), "v": torch.rand(n)}
plain, synced = [], []
for i in range(repeats):
    a = time.perf_counter()
    torch.save(t, path)
    plain.append((time.perf_counter() - a) * 1e3)
    a = time.perf_counter()
    torch.save(t, path)
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
    synced.append((time.perf_counter() - a) * 1e3)
print(json.dumps({"plain_ms": plain, "fsync_ms": synced, "bytes": os.path.getsize(path)}))
"""


def summary(text):
    lines = text.splitlines()
    start = max(i for i, l in enumerate(lines) if l == "{")
    end = len(lines) - 1 - lines[::-1].index("}")
    return json.loads("\n".join(lines[start:end + 1]))


def train(app, steps, every, folder, sync, threads):
    cmd = [app] + MODEL + COMMON + ["--steps", str(steps), "--nn-threads", str(threads)]
    if folder is None:
        cmd += ["--checkpoint", ""]
    else:
        cmd += ["--checkpoint", folder, "--checkpoint-every", str(every)]
        if sync:
            cmd.append("--checkpoint-sync")
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"checkpoint_stall: {' '.join(cmd)} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    return summary(out.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build/default")
    ap.add_argument("--steps", type=int, default=40, help="steps per run (default 40)")
    ap.add_argument("--every", type=int, default=4, help="checkpoint every N steps in the stall runs (default 4)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--nn-threads", type=int, default=max(1, (os.cpu_count() or 2) - 1),
                    help="train_gpt's compute threads (default: all cores but one, left to the store's writer)")
    ap.add_argument("--dir", default=None,
                    help="where the checkpoint folders go (default: a temporary folder in --build, on its disk; "
                         "removed at the end)")
    ap.add_argument("--json", default=None, help="also write the figures to this file")
    a = ap.parse_args()
    app = os.path.join(a.build, "samples", "train_gpt", "train_gpt")
    if not os.access(app, os.X_OK):
        sys.exit(f"checkpoint_stall: {app} not found; build train_gpt first")
    work = tempfile.mkdtemp(prefix="ckpt-stall-", dir=a.dir or a.build)
    try:
        fig = measure(a, app, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report(fig)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(fig, f, indent=2)


def measure(a, app, work):
    runs = {"none": [], "sync": [], "buffer": [], "every_step": []}
    for r in range(a.repeats):
        print(f"checkpoint_stall: repeat {r + 1}/{a.repeats}", file=sys.stderr, flush=True)
        runs["none"].append(train(app, a.steps, 0, None, False, a.nn_threads))
        for kind, sync in (("sync", True), ("buffer", False)):
            folder = os.path.join(work, f"{kind}-{r}")
            runs[kind].append(train(app, a.steps, a.every, folder, sync, a.nn_threads))
        runs["every_step"].append(train(app, a.steps, 1, os.path.join(work, f"every-{r}"), False, a.nn_threads))
    ck = runs["buffer"][0]["checkpoints"]
    floats = (ck["bytes"] // ck["saves"]) // 12  # params, m, v: 12 bytes per float (plus a small header)
    torch = subprocess.run(["/usr/bin/python3", "-c", TORCH_SAVE, str(floats), os.path.join(work, "torch.pt"),
                            str(3 * a.repeats)], capture_output=True, text=True, check=False)
    if torch.returncode != 0:
        sys.exit(f"checkpoint_stall: torch.save failed (is python3-torch installed?):\n{torch.stderr}")
    t = json.loads(torch.stdout)

    def stalls(kind):
        return [x for run in runs[kind] for x in [run["checkpoints"]["stall_ms_median"]]]

    def per_step_ms(kind):
        return statistics.median(run["seconds"] * 1e3 / a.steps for run in runs[kind])

    fig = {
        "checkpoint_bytes": ck["bytes"] // ck["saves"],
        "parameters": runs["none"][0]["parameters"],
        "sync_stall_ms": statistics.median(stalls("sync")),
        "sync_stall_max_ms": max(r["checkpoints"]["stall_ms_max"] for r in runs["sync"]),
        "torch_save_ms": statistics.median(t["plain_ms"]),
        "torch_save_fsync_ms": statistics.median(t["fsync_ms"]),
        "buffer_stall_ms": statistics.median(stalls("buffer")),
        "buffer_stall_max_ms": max(r["checkpoints"]["stall_ms_max"] for r in runs["buffer"]),
        "buffer_flush_ms": statistics.median(r["checkpoints"]["flush_ms"] for r in runs["buffer"]),
        "buffer_waits": sum(r["checkpoints"]["buffer_waits"] for r in runs["buffer"]),
        "step_ms_none": per_step_ms("none"),
        "step_ms_every_step": per_step_ms("every_step"),
    }
    fig["less_stall_than_sync"] = 1 - fig["buffer_stall_ms"] / fig["sync_stall_ms"]
    fig["less_stall_than_torch_save"] = 1 - fig["buffer_stall_ms"] / fig["torch_save_ms"]
    fig["every_step_overhead"] = fig["step_ms_every_step"] / fig["step_ms_none"] - 1
    fig["nn_threads"] = a.nn_threads
    fig["torch_save_max_ms"] = max(t["plain_ms"])
    fig["torch_save_fsync_max_ms"] = max(t["fsync_ms"])
    return fig


def report(fig):
    print(f"checkpoint: {fig['checkpoint_bytes'] / 2**20:.1f} MiB ({fig['parameters']} parameters, params + AdamW m, v); "
          f"--nn-threads {fig['nn_threads']} of {os.cpu_count()} cores")
    print("| save | stall median ms | max ms |")
    print("|---|---:|---:|")
    print(f"| --checkpoint-sync (write + fsync + rename) | {fig['sync_stall_ms']:.1f} | {fig['sync_stall_max_ms']:.1f} |")
    print(f"| torch.save (no fsync) | {fig['torch_save_ms']:.1f} | {fig['torch_save_max_ms']:.1f} |")
    print(f"| torch.save + fsync | {fig['torch_save_fsync_ms']:.1f} | {fig['torch_save_fsync_max_ms']:.1f} |")
    print(f"| store buffer (default) | {fig['buffer_stall_ms']:.1f} | {fig['buffer_stall_max_ms']:.1f} |")
    print(f"less stall than sync: {fig['less_stall_than_sync']:.1%}, than torch.save: "
          f"{fig['less_stall_than_torch_save']:.1%}; last checkpoint durable {fig['buffer_flush_ms']:.0f} ms after "
          f"training ended; buffer waits {fig['buffer_waits']}")
    print(f"checkpoint every step: {fig['step_ms_every_step']:.1f} ms/step against {fig['step_ms_none']:.1f} "
          f"without checkpoints ({fig['every_step_overhead']:+.1%})")


if __name__ == "__main__":
    main()
