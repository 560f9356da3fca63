#!/usr/bin/env python3
"""The periodic sample under each policy: measured node-time cost and met fraction, and the plan's
Monte Carlo prediction beside what the run measured.

Runs samples/periodic on 3 loopback nodes under `banyan launch` (n0: the clock; n1: sim and eval;
n2: render), --duration long each time, in this order:

  1. always-on: the deployment as it is, with --profile: the subtrees' response times, measured;
  2. keep-alive: every subtree asleep, woken on demand and put back to sleep after --keep-alive
     (Knative's scale-to-zero: 60 s in real time, scaled like the horizon), with --profile: the
     subtrees' wake-up times (restore + start), measured;
  3. `banyan plan` on samples/periodic/workload.yaml with those timings (written as the timings
     file beside it): the plan (MIP) and the baselines as plan files, each with its prediction;
  4. hybrid-histogram (Shahrad et al.'s policy, as banyan plan computes it) and plan, each run.

Each run's met fraction comes from the sample's `PERIODIC workflow ...` lines (every instance,
from its release to render's reply, against its deadline); its node-time cost from each node's
`node time: in use X s of Y s` line (time with any component awake on it) times the node's cost per
hour in the workload, per horizon. Always-on is the anchor of the cost.

  tools/bench/periodic_sample.py --build build/default [--duration 120s] [--keep-alive 67ms]
      [--json F]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def progress(msg):
    print(f"periodic_sample: {msg}", file=sys.stderr, flush=True)


def seconds(text):
    m = re.fullmatch(r"([0-9.]+)(ms|s|m)?", text)
    if not m:
        raise SystemExit(f"periodic_sample: `{text}` is not a duration")
    return float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, None: 1}[m.group(2)]


def deployment(folder):
    path = os.path.join(folder, "d.yaml")
    with open(path, "w") as f:
        f.write("version: 1\nnodes:\n")
        for n in range(3):
            f.write(f'  - {{name: n{n}, endpoint: "ipc://{folder}/n{n}", capacity: {{cpu: 2}}}}\n')
        f.write("assignments:\n  /reports: n0\n  /reports/sim: n1\n  /reports/eval: n1\n  /reports/render: n2\n")
    return path


def run(banyan, app, d, duration, plan=None, profile=None):
    argv = [banyan, "launch", d, "--run-for", "600s"]
    if plan:
        argv += ["--plan", plan]
    if profile:
        argv += ["--profile", profile]
    argv += ["--", app, "--duration", f"{int(duration * 1000)}ms"]
    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if out.returncode != 0:
        sys.stderr.write(out.stdout[-6000:])
        raise SystemExit(f"periodic_sample: {' '.join(argv)} exited with {out.returncode}")
    flows = {m[0]: {"instances": int(m[1]), "met": int(m[2]), "failed": int(m[3]), "slowest_ms": float(m[4])}
             for m in re.findall(r"PERIODIC workflow (\S+) instances (\d+) met (\d+) failed (\d+) slowest_ms ([0-9.]+)",
                                 out.stdout)}
    in_use = {m[0]: (float(m[1]), float(m[2]))
              for m in re.findall(r"\[(n\d)\] .*node time: in use ([0-9.]+) s of ([0-9.]+) s", out.stdout)}
    kept = re.search(r"PERIODIC render kept its count: (\S+)", out.stdout)
    if len(flows) != 2 or len(in_use) != 3 or not kept or kept.group(1) != "yes":
        sys.stderr.write(out.stdout[-6000:])
        raise SystemExit("periodic_sample: the run's result lines are missing or render lost its count")
    return flows, in_use, out.stdout


def timings_yaml(always_on, keep_alive, path):
    """wake from the keep-alive run's `start` timings, response from the always-on run's `reply`."""
    def component(profile, p):
        for c in profile["components"]:
            if c["path"] == p:
                return c.get("timings", {})
        return {}

    lines = ["# measured by tools/bench/periodic_sample.py: wake from a keep-alive run, response from an always-on run",
             "format: banyan-timings", "version: 1", "subtrees:"]
    for p in ("/reports/sim", "/reports/eval", "/reports/render"):
        wake = component(keep_alive, p).get("start")
        response = component(always_on, p).get("reply")
        if not wake or not response:
            raise SystemExit(f"periodic_sample: no measured wake or response time of {p}")
        lines.append(f"  - path: {p}")
        lines.append(f"    wake: {json.dumps(wake)}")
        lines.append(f"    response: {json.dumps(response)}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "default"))
    ap.add_argument("--duration", default="120s", help="each run releases instances for this long")
    ap.add_argument("--keep-alive", default="67ms",
                    help="the keep-alive baseline's (60 s of an hour, at 4 s for an hour: 67 ms)")
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--dir", help="keep the deployment, plans, timings and profiles in this folder")
    a = ap.parse_args()
    banyan = os.path.join(a.build, "tools", "banyan")
    app = os.path.join(a.build, "samples", "periodic", "periodic")
    duration = seconds(a.duration)
    workload_src = os.path.join(ROOT, "samples", "periodic", "workload.yaml")
    costs = {"n0": 0.0, "n1": 1.0, "n2": 1.0}  # as the workload's nodes
    horizon = 12.0
    with tempfile.TemporaryDirectory(prefix="banyan-periodic-") as scratch:
        folder = a.dir or scratch
        os.makedirs(folder, exist_ok=True)
        d = deployment(folder)
        workload = os.path.join(folder, "workload.yaml")
        with open(workload_src) as f, open(workload, "w") as g:
            g.write(f.read())
        # Baselines need no timings: a first guess makes the keep-alive plan file of step 2.
        with open(os.path.join(folder, "timings.yaml"), "w") as f:
            f.write("format: banyan-timings\nversion: 1\nsubtrees:\n" + "".join(
                f"  - {{path: {p}, wake: 0.5, response: 0.1}}\n"
                for p in ("/reports/sim", "/reports/eval", "/reports/render")))
        plans = os.path.join(folder, "plans")
        os.makedirs(plans)
        keep_name = None

        def plan(extra):
            out = subprocess.run([banyan, "plan", workload, "--deployment", d, "--keep-alive", a.keep_alive,
                                  "--baseline-plans", plans, "--json"] + extra,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            if out.returncode not in (0, 1) or not out.stdout.strip():
                sys.stderr.write(out.stderr)
                raise SystemExit(f"periodic_sample: banyan plan failed (exit {out.returncode}); files in {folder}")
            return json.loads(out.stdout)

        plan([])
        keep_name = next(p for p in os.listdir(plans) if p.startswith("keep-alive"))
        figures = {"duration_s": duration, "keep_alive": a.keep_alive, "policies": {}}

        def measured(name, flows, in_use):
            instances = sum(f["instances"] for f in flows.values())
            met = sum(f["met"] for f in flows.values())
            cost = sum(costs[n] * use / total * horizon / 3600 for n, (use, total) in in_use.items())
            figures["policies"][name] = {"met": met, "instances": instances, "met_fraction": met / instances,
                                         "cost_per_horizon": cost, "workflows": flows,
                                         "in_use": {n: use / total for n, (use, total) in in_use.items()}}
            progress(f"{name}: met {met}/{instances}, node time in use " +
                     ", ".join(f"{n} {100 * use / total:.1f}%" for n, (use, total) in sorted(in_use.items())))

        progress("always-on (measures the response times)")
        on_profile = os.path.join(folder, "always-on.json")
        flows, in_use, _ = run(banyan, app, d, duration, profile=on_profile)
        measured("always-on", flows, in_use)
        progress("keep-alive (measures the wake-up times)")
        ka_profile = os.path.join(folder, "keep-alive.json")
        flows, in_use, _ = run(banyan, app, d, duration, plan=os.path.join(plans, keep_name), profile=ka_profile)
        measured("keep-alive", flows, in_use)
        with open(on_profile) as f, open(ka_profile) as g:
            timings_yaml(json.load(f), json.load(g), os.path.join(folder, "timings.yaml"))
        progress("banyan plan with the measured timings")
        the_plan = os.path.join(folder, "plan.yaml")
        predicted = plan(["--out", the_plan, "--baselines"])
        figures["planner"] = {k: predicted.get(k) for k in ("algorithm", "optimal", "gap", "plan", "baselines")}
        progress("hybrid-histogram")
        flows, in_use, _ = run(banyan, app, d, duration, plan=os.path.join(plans, "hybrid-histogram.yaml"))
        measured("hybrid-histogram", flows, in_use)
        progress("plan")
        flows, in_use, log = run(banyan, app, d, duration, plan=the_plan)
        measured("plan", flows, in_use)
        figures["plan_file"] = open(the_plan).read()

    on = figures["policies"]["always-on"]["cost_per_horizon"]
    print(f"{'policy':18} {'met':>12} {'cost/horizon':>14} {'vs always-on':>13}")
    for name, p in figures["policies"].items():
        print(f"{name:18} {p['met']:>5}/{p['instances']:<6} {p['cost_per_horizon']:14.6f} "
              f"{(p['cost_per_horizon'] / on if on else 0):12.3f}x")
    pred = {w["name"]: w for w in (figures["planner"]["plan"] or {}).get("workflows", [])}
    for name, f in figures["policies"]["plan"]["workflows"].items():
        if name in pred:
            print(f"plan, {name}: predicted {pred[name]['met_fraction']:.4f} "
                  f"[{pred[name]['low']:.4f}, {pred[name]['high']:.4f}], measured {f['met']}/{f['instances']}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(figures, f, indent=1)


if __name__ == "__main__":
    main()
