#!/usr/bin/env python3
"""The EDA sample under failover: kill -9 of nodes mid-run, and the simulation still matches Icarus.

Runs samples/eda_sim as components (--grain leaf, hier routing, --check against Icarus) on 3 loopback
nodes under `banyan launch`, on a round-robin deployment (`banyan partition --algorithm
round-robin-leaves`: every node runs leaves of every part of the design, the worst case for a loss;
each node has room for the whole design, so that the survivors can take what a loss leaves them).
Every leaf keeps a checkpoint every --checkpoint-every cycles, durable in a --state-dir folder.

  0. no checkpoints: the run as it is, timed (the anchor of the checkpoints' cost);
  1. undisturbed: with checkpoints, timed (the anchor of the failover);
  2. failover: the same run; each node of --kill (in turn) is sent SIGKILL at its --kill-at fraction
     of the undisturbed run's time (and after the previous loss has failed over). The root's node places the lost leaves on the
     survivors; each resumes from its last durable checkpoint, sends again what it sent since the
     period before, and asks its drivers for what it needs again (docs/runtime.md, "Failover").

Both runs must end with exit 0, outputs identical to the engine's and the check against Icarus
passed. Reported: the slowdown (failover wall time over undisturbed), the bytes of state re-read
from the store, the group messages sent again.

  tools/bench/eda_failover.py --build build/default [--top multiplier --files F.v] [--cycles 1500]
      [--checkpoint-every 100] [--kill n2[,n1]] [--kill-at 0.4[,0.7]] [--no-plain] [--json F]
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from watched import Watched  # noqa: E402


def progress(msg):
    print(f"eda_failover: {msg}", file=sys.stderr, flush=True)


def run(cmd, what):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"eda_failover: {what} failed (exit {r.returncode}):\n{r.stderr}{r.stdout}")
    return r.stdout


def judge(name, lines, code):
    """Exit 0, one node ended the simulation, its outputs identical to the engine's and to Icarus."""
    text = "\n".join(lines)
    problems = []
    if code != 0:
        problems.append(f"banyan launch exited {code}")
    if len(re.findall(r'"hosted_io": true', text)) != 1:
        problems.append("not exactly one node ended the simulation (hosted_io)")
    if '"identical_to_engine": true' not in text:
        problems.append("the component outputs are not identical to the engine's")
    if not re.search(r'"check": \{\s*\n\[n\d\]\s+"passed": true', text):
        problems.append("the check against Icarus did not pass")
    if problems:
        raise SystemExit(f"eda_failover: {name}: " + "; ".join(problems) + "\n" + "\n".join(lines[-60:]))


def one_launch(a, tools, deployment, states, kill, kill_at):
    cmd = [tools["banyan"], "launch", deployment, "--run-for", f"{a.run_limit}s", "--", tools["eda_sim"], "--top",
           a.top, *a.files, "--cycles", str(a.cycles), "--seed", "1", "--components", "--grain", "leaf", "--mode",
           "hier", "--engine", a.engine, "--check", "--json"]
    if states:
        cmd += ["--checkpoint-every", str(a.checkpoint_every), "--state-dir", states]
    start = time.monotonic()
    l = Watched(cmd)
    figures = {"killed": []}
    try:
        for victim, at in zip(kill, kill_at):
            _, m = l.wait_match(r"node %s started \(pid (\d+)\)" % victim)
            # A moment mid-run (a fraction of the undisturbed run's time): the result must not depend on it.
            time.sleep(max(0.0, start + at - time.monotonic()))
            lines = l.output()
            if l.p.poll() is not None or any("ended the run" in line for line in lines):
                raise SystemExit(f"eda_failover: the run ended before {victim} was killed; raise --cycles\n" +
                                 "\n".join(lines[-30:]))
            killed = time.monotonic()
            os.kill(int(m.group(1)), signal.SIGKILL)
            progress(f"killed {victim} after {killed - start:.1f} s")
            found, _ = l.wait_for("node `%s` lost: failing over" % victim, timeout=a.run_limit)
            figures["killed"].append({"node": victim, "at_s": killed - start, "failover_ms": (found - killed) * 1e3})
        code = l.p.wait(a.run_limit)
    finally:
        if l.p.poll() is None:
            l.p.kill()
        if a.log:
            with open(a.log, "a") as f:
                f.write("\n".join(l.output()) + "\n")
    end = time.monotonic()
    lines = l.output()
    figures["seconds"] = end - start
    figures["code"] = code
    figures["reread_bytes"] = sum(int(b) for b in re.findall(r"restart from their last durable state in `[^`]*` "
                                                             r"\((\d+) bytes\)", "\n".join(lines)))
    figures["resent_messages"] = sum(int(n) for n in re.findall(r'"resent_after_failover": (\d+)', "\n".join(lines)))
    return figures, lines


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build/default")
    ap.add_argument("--banyan", default=None)
    ap.add_argument("--eda-sim", default=None)
    ap.add_argument("--top", default="multiplier")
    ap.add_argument("--files", nargs="+", default=None)
    ap.add_argument("--cycles", type=int, default=1500)
    ap.add_argument("--engine", choices=["auto", "compiled", "interp"], default="auto", help="eda_sim --engine")
    ap.add_argument("--checkpoint-every", type=int, default=100)
    ap.add_argument("--kill", default="n2", help="nodes to kill, in turn (comma-separated; never n0, the root's)")
    ap.add_argument("--kill-at", default="0.4",
                    help="when to kill each, as fractions of the undisturbed run's time (comma-separated)")
    ap.add_argument("--run-limit", type=int, default=300)
    ap.add_argument("--no-plain", action="store_true", help="skip the run without checkpoints (the test)")
    ap.add_argument("--log", default=None, help="append every launch's output to this file")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    a.files = [os.path.abspath(f) for f in (a.files or [os.path.join(here, "..", "..", "samples", "eda_sim", "designs",
                                                                      "multiplier", "multiplier.v")])]
    tools = {"banyan": a.banyan or os.path.join(a.build, "tools", "banyan"),
             "eda_sim": a.eda_sim or os.path.join(a.build, "samples", "eda_sim", "eda_sim")}
    kill = [k for k in a.kill.split(",") if k]
    a.kill_at = [float(f) for f in a.kill_at.split(",")]
    if len(a.kill_at) != len(kill):
        raise SystemExit("eda_failover: --kill-at needs one fraction per node of --kill")
    if "n0" in kill:
        raise SystemExit("eda_failover: --kill n0: the root's node cannot fail over (its loss ends the run)")

    with tempfile.TemporaryDirectory(prefix="eda-failover-") as work:
        cal = os.path.join(work, "cal.json")
        run([tools["eda_sim"], "--top", a.top, *a.files, "--cycles", "20", "--components", "--grain", "leaf",
             "--profile", cal], "the calibration run")
        cluster = os.path.join(work, "cluster.yaml")
        with open(cluster, "w") as f:
            f.write("version: 1\nnodes:\n")
            for n in range(3):
                # Room for the whole design on each node, so that the survivors can take what a
                # loss leaves them (the deployment's `loads:` are weighed against it).
                f.write(f'  - {{name: n{n}, endpoint: "ipc://{work}/n{n}", capacity: {{cpu: "100%"}}}}\n')
        deployment = os.path.join(work, "roundrobin.yaml")
        run([tools["banyan"], "partition", cal, "--cluster", cluster, "--algorithm", "round-robin-leaves", "--load",
             "messages", "--out", deployment], "banyan partition --algorithm round-robin-leaves")

        plain = {"seconds": float("nan")}
        if not a.no_plain:
            progress(f"no checkpoints: {a.cycles} cycles of {a.top} on 3 nodes")
            plain, lines = one_launch(a, tools, deployment, None, [], [])
            judge("no checkpoints", lines, plain["code"])
        progress(f"undisturbed: {plain['seconds']:.1f} s without checkpoints; now with one every {a.checkpoint_every}")
        base, lines = one_launch(a, tools, deployment, os.path.join(work, "states-undisturbed"), [], [])
        judge("undisturbed", lines, base["code"])
        progress(f"undisturbed: {base['seconds']:.1f} s; failover: killing {', '.join(kill)}")
        kill_at = [f * base["seconds"] for f in a.kill_at]
        fo, lines = one_launch(a, tools, deployment, os.path.join(work, "states-failover"), kill, kill_at)
        judge("failover", lines, fo["code"])

    result = {"design": a.top, "cycles": a.cycles, "checkpoint_every": a.checkpoint_every, "killed": fo["killed"],
              "no_checkpoints_s": plain["seconds"], "undisturbed_s": base["seconds"], "failover_s": fo["seconds"],
              "checkpoint_overhead": base["seconds"] / plain["seconds"],
              "slowdown": fo["seconds"] / base["seconds"], "reread_bytes": fo["reread_bytes"],
              "resent_messages": fo["resent_messages"], "identical_to_icarus": True}
    print("| design | cycles | checkpoint every | killed | no checkpoints (s) | undisturbed (s) | with failover (s) | "
          "slowdown | state re-read | messages sent again |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    print(f"| {a.top} | {a.cycles} | {a.checkpoint_every} | {', '.join(kill)} | {plain['seconds']:.1f} | "
          f"{base['seconds']:.1f} | {fo['seconds']:.1f} | {result['slowdown']:.2f}x | {fo['reread_bytes']} B | "
          f"{fo['resent_messages']} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
