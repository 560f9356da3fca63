#!/usr/bin/env python3
"""Failover figures: the time from kill -9 of a node to its lost subtree serving again, per state size.

Runs the supervision test app (tests/integration/supervise_app.cpp, --scenario failover) on three
loopback nodes under `banyan launch ... --state-dir`: /sv/group/middle runs on n1 and keeps a state of
--state-bytes bytes, made durable in the state folder. Once every node is ready and n1's state is on
disk, this script sends SIGKILL to n1 and times, as it reads launch's output (monotonic clock):

  detected   the root's node logs the failover (`failing over ...`): the heartbeats found the loss
  restarted  the new incarnation on n0 printed `INCARNATION /sv/group/middle 2` (its state restored)
  serving    group's request to middle answered (`AFTER pong ...`; group asks every 50 ms)

  tools/bench/failover_bench.py --build build/default [--repeats 3] [--sizes 2048,1048576,67108864] [--json F]
"""
import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from watched import Watched  # noqa: E402

DEPLOYMENT = """version: 1
nodes:
  - {{name: n0, endpoint: "ipc://{d}/n0", capacity: {{cpu: 1}}}}
  - {{name: n1, endpoint: "ipc://{d}/n1", capacity: {{cpu: 1}}}}
  - {{name: n2, endpoint: "ipc://{d}/n2", capacity: {{cpu: 1}}}}
assignments:
  /sv: n0
  /sv/group/middle: n1
  /sv/group/last: n2
"""


def durable_bytes(folder):
    try:
        return sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder) if f.endswith(".dat"))
    except FileNotFoundError:
        return 0


def one_run(build, size):
    with tempfile.TemporaryDirectory(prefix="failover-bench-", dir=build) as d:
        deployment = os.path.join(d, "d.yaml")
        with open(deployment, "w") as f:
            f.write(DEPLOYMENT.format(d=d))
        states = os.path.join(d, "states")
        app = os.path.join(build, "tests", "supervise_app")
        cli = os.path.join(build, "tools", "banyan")
        l = Watched([cli, "launch", deployment, "--run-for", "120s", "--", app, "--threads", "2", "--scenario",
                    "failover", "--state-dir", states, "--state-bytes", str(size)])
        try:
            for node in ("n0", "n1", "n2"):
                l.wait_for("[%s] [/sv] every node is ready" % node)
            _, m = l.wait_match(r"node n1 started \(pid (\d+)\)")
            deadline = time.monotonic() + 60
            while durable_bytes(os.path.join(states, "n1")) < size and time.monotonic() < deadline:
                time.sleep(0.01)  # polling the folder: the writer's fsync has no signal to wait on
            killed = time.monotonic()
            os.kill(int(m.group(1)), signal.SIGKILL)
            detected, _ = l.wait_for("node `n1` lost: failing over")
            restarted, _ = l.wait_match(r"^\[n0\] INCARNATION /sv/group/middle 2")
            serving, _ = l.wait_for("AFTER pong from /sv/group/middle incarnation 2")
            l.p.wait(60)
            return {"detected_ms": (detected - killed) * 1e3, "restarted_ms": (restarted - killed) * 1e3,
                    "serving_ms": (serving - killed) * 1e3, "exit_code": l.p.returncode}
        finally:
            if l.p.poll() is None:
                l.p.kill()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build/default")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sizes", default="2048,1048576,67108864")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    rows = []
    for size in [int(x) for x in a.sizes.split(",")]:
        runs = []
        for r in range(a.repeats):
            print(f"failover_bench: state {size} bytes, run {r + 1}/{a.repeats}", file=sys.stderr, flush=True)
            runs.append(one_run(a.build, size))
        row = {"state_bytes": size, "runs": runs}
        for k in ("detected_ms", "restarted_ms", "serving_ms"):
            row[k] = statistics.median(x[k] for x in runs)
        row["exit_codes"] = sorted({x["exit_code"] for x in runs})
        rows.append(row)
    print("| state | loss found (ms) | restarted from its state (ms) | serving again (ms) | launch exit |")
    print("|---:|---:|---:|---:|---|")
    for r in rows:
        print(f"| {r['state_bytes']} B | {r['detected_ms']:.0f} | {r['restarted_ms']:.0f} | {r['serving_ms']:.0f} | "
              f"{r['exit_codes']} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
