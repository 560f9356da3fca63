#!/usr/bin/env python3
"""The figures of elastic training with virtual workers (train_gpt --elastic).

  1. Heterogeneity: physical workers of unequal speed (one throttled 3x), step
     time with the measured assignment against the static even split, in the same run of this script;
     the two loss trajectories must be bit-identical.
  2. Leave: on loopback nodes, the time from kill -9 of a worker's node to the step being handed to
     the survivors (the scheduler's `redoing` line, or its next assignment when the kill fell between
     steps), and the loss trajectory against an uninterrupted run.
  3. Join: the time from `banyan launch --join` to the joining worker taking work (`pN joined`).

Times of log lines are taken as this script reads them (monotonic clock).

  tools/bench/elastic_bench.py --build build/default [--steps 200] [--json out.json]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from watched import Watched as Node  # noqa: E402

MODEL = ["--layers", "2", "--heads", "2", "--channels", "32", "--seq", "64", "--batch", "12"]
COMMON = ["--data", "/usr/share/games/fortunes", "--val-every", "0", "--val-batches", "1", "--sample-chars", "10",
          "--nn-threads", "1", "--checkpoint", "", "--json", "--elastic", "--virtual-workers", "12"]


def summary(lines):
    """The app's JSON summary: the lines from the last `{` to the next `}`."""
    start = max(i for i, l in enumerate(lines) if l == "{")
    end = lines.index("}", start)
    return json.loads("\n".join(lines[start:end + 1]))


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"elastic_bench: {' '.join(cmd)} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    return summary(out.stdout.splitlines())


def heterogeneity(train, steps):
    # Two workers, one per core of a 2-core machine (no oversubscription): p1 a 3x slower device.
    mix = ["--physical-workers", "2", "--worker-threads", "1", "--throttle", "p1=3"]
    rows = []
    for balance in ("even", "measured"):
        s = run([train] + MODEL + COMMON + ["--steps", str(steps), "--balance", balance] + mix)
        rows.append((balance, s))
    even, measured = rows[0][1], rows[1][1]
    return {
        "workers": "p0, p1 (throttled 3x); 1 thread each; 12 virtual workers",
        "even_step_ms": even["elastic"]["step_ms"],
        "measured_step_ms": measured["elastic"]["step_ms"],
        "speedup": even["elastic"]["step_ms"] / measured["elastic"]["step_ms"],
        "measured_assignment": measured["elastic"]["assignment"],
        "losses_bit_identical": even["losses"] == measured["losses"],
    }


def leave_and_join(train, banyan, steps, heartbeat):
    with tempfile.TemporaryDirectory(prefix="banyan-elastic-") as d:
        dep = os.path.join(d, "deployment.yaml")
        with open(dep, "w") as f:
            f.write("version: 1\nnodes:\n")
            for i in range(4):
                later = ", join: later" if i == 3 else ""
                f.write(f'  - {{name: n{i}, endpoint: "ipc://{d}/n{i}", capacity: {{cpu: 1}}{later}}}\n')
            f.write("assignments:\n  /train_gpt: n0\n")
            for i in range(1, 4):
                f.write(f"  /train_gpt/trainer/p{i}: n{i}\n")
        app = [train] + MODEL + COMMON + ["--steps", str(steps), "--physical-workers", "4", "--min-workers", "3",
                                          "--balance", "even", "--throttle", "p2=10", "--heartbeat-timeout", heartbeat]
        nodes = {n: Node(app + ["--deployment", dep, "--node", n]) for n in ("n0", "n1", "n2")}
        n0 = nodes["n0"]
        n0.wait_for("elastic: step", "assignment", "p2 v")
        t_join = time.monotonic()
        joiner = Node([banyan, "launch", dep, "--join", "n3", "--"] + app)
        t_joined, _ = n0.wait_for("elastic: p3 joined", after=t_join)
        t_kill = time.monotonic()
        nodes["n2"].p.kill()
        t_left, _ = n0.wait_for("elastic: p2 left", after=t_kill)
        t_resumed, line = n0.wait_for("elastic: step", "p3", after=t_left)
        lines = n0.finish()
        nodes["n1"].finish()
        joiner.finish()
        s = summary(lines)
    plain = run([train] + MODEL + COMMON + ["--steps", str(steps), "--physical-workers", "1"])
    return {
        "join_to_work_s": t_joined - t_join,
        "kill_to_detected_s": t_left - t_kill,
        "kill_to_resumed_s": t_resumed - t_kill,
        "resumed_by": line.split("] ", 1)[-1],
        "redone_steps": s["elastic"]["redone"],
        "losses_equal_uninterrupted": s["losses"] == plain["losses"],
        "steps": len(s["losses"]),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build/default", help="the build folder with train_gpt and banyan")
    ap.add_argument("--steps", type=int, default=200, help="steps per run")
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--heartbeat-timeout", default="1s", help="the nodes' --heartbeat-timeout (how soon a kill is noticed)")
    a = ap.parse_args()
    train = os.path.join(a.build, "samples/train_gpt/train_gpt")
    banyan = os.path.join(a.build, "tools/banyan")
    h = heterogeneity(train, a.steps)
    print(f"heterogeneity ({h['workers']}): even split {h['even_step_ms']:.1f} ms/step, measured "
          f"{h['measured_step_ms']:.1f} ms/step: {h['speedup']:.2f}x; assignment {h['measured_assignment']}; "
          f"losses bit-identical: {h['losses_bit_identical']}")
    j = leave_and_join(train, banyan, a.steps, a.heartbeat_timeout)
    print(f"heartbeat timeout {a.heartbeat_timeout}: join: {j['join_to_work_s']:.2f} s from banyan launch --join to work; kill -9: detected in "
          f"{j['kill_to_detected_s']:.3f} s, work handed out again in {j['kill_to_resumed_s']:.3f} s "
          f"({j['redone_steps']} step redone); {j['steps']} losses equal the uninterrupted run's: "
          f"{j['losses_equal_uninterrupted']}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"heterogeneity": h, "leave_and_join": j}, f, indent=1)
    ok = h["losses_bit_identical"] and j["losses_equal_uninterrupted"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
