#!/usr/bin/env python3
"""Measured costs on real nodes: does the simulator, fed the engine's measured per-layer costs, predict the
pipeline trainer's step on real nodes? And what does the search make of those costs?

  1. Profiles the model: train_gpt --profile-costs (the per-layer cost file, ms, at the microbatch shape).
  2. Runs train_gpt --pipeline P on P loopback nodes under `banyan launch` (one stage leaf and one nn
     thread per node) for each schedule, with --trace; the measured makespan is the median of
     pipeline.per_step[].span_ms over the steps after the first.
  3. Simulates each schedule on the same split (the trainer's even split, as --layers-per-stage) four
     ways:  profile    the cost file as written (link free);
            +latency   the same with the message latency measured from the run's timeline: per
                       cross-rank dependency where the receiving rank sat idle, start(receiver) -
                       end(sender) (both nodes read one monotonic clock), median;
            stages     the run's split profiled stage by stage (--profile-stages) plus that latency;
            in-run     per-stage costs taken from the run's own timeline (median action time per stage
                       and kind) plus that latency: what is left of the error is the schedule model's.
  4. Tokens/s of the pipelined run (P nodes x 1 thread) against one process with --nn-threads P and
     the same global batch.
  5. banyan pipeline search on the measured costs (+latency): its predicted makespan against GPipe,
     1F1B, the best shipped program and the lower bound; then runs its table (--out-csv) on the nodes
     with its split (train_gpt --layers-per-stage) and compares.

  tools/bench/pipeline_measured.py --build build/default [--steps 20] [--ranks 2] [--node-threads 1] [--json out.json]
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

MODEL = ["--layers", "4", "--heads", "4", "--channels", "128", "--seq", "64", "--batch", "32"]
COMMON = ["--data", "/usr/share/games/fortunes", "--checkpoint", "", "--val-every", "0", "--val-batches", "1",
          "--sample-chars", "0"]


def sh(cmd, what):
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"pipeline_measured: {what} failed ({out.returncode}): {' '.join(cmd)}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return out.stdout


IDLE_WAIT = 60  # --idle-wait


def cpu_mark():
    """(busy CPU seconds of the machine, CPU seconds of this script's reaped children)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    busy = sum(v) - v[3] - v[4]  # all but idle and iowait (steal counts: the host took it)
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return busy / os.sysconf("SC_CLK_TCK"), r.ru_utime + r.ru_stime


def foreign_share(before, after, wall):
    """Share of the machine's CPU time used by anything but our processes (or stolen) over `wall` s."""
    return max(0.0, (after[0] - before[0]) - (after[1] - before[1])) / (wall * os.cpu_count())


def wait_idle(limit_s=None, busy_max=0.1):
    """Waits (up to limit_s) for a second in which the machine's CPUs are at most busy_max busy: another
    build or test on a 2-core machine doubles a stage's time, and a figure taken then says nothing."""
    t_end = time.monotonic() + (IDLE_WAIT if limit_s is None else limit_s)
    while True:
        b0, w0 = cpu_mark()[0], time.monotonic()
        time.sleep(1)
        share = (cpu_mark()[0] - b0) / ((time.monotonic() - w0) * os.cpu_count())
        if share <= busy_max or time.monotonic() > t_end:
            return share


def summary(text, node=None):
    """The app's JSON summary: the lines from the last `{` to the next `}` (of one node under launch)."""
    prefix = f"[{node}] " if node else ""
    lines = [l[len(prefix):] for l in text.splitlines() if l.startswith(prefix)]
    start = max(i for i, l in enumerate(lines) if l == "{")
    end = lines.index("}", start)
    return json.loads("\n".join(lines[start:end + 1]))


def deployment(tmp, ranks):
    path = os.path.join(tmp, f"dep{ranks}.yaml")
    with open(path, "w") as f:
        f.write("version: 1\nnodes:\n")
        for i in range(ranks):
            f.write(f'  - {{name: n{i}, endpoint: "ipc://{tmp}/p{ranks}n{i}", capacity: {{cpu: 1}}}}\n')
        f.write("assignments:\n  /train_gpt: n0\n")
        for i in range(1, ranks):
            f.write(f"  /train_gpt/trainer/r{i}: n{i}\n")
    return path


def even_split(layers, stages):
    """The trainer's even split (stage s from block s*L/S) in the cost file's layers (embedding, head)."""
    starts = [s * layers // stages for s in range(stages)] + [layers]
    counts = [starts[s + 1] - starts[s] for s in range(stages)]
    counts[0] += 1
    counts[-1] += 1
    return counts


def timeline(trace_path):
    """Compute events of the trace: (rank, stage, microbatch, kind, start_ms, end_ms)."""
    with open(trace_path) as f:
        d = json.load(f)
    out = []
    for e in d["traceEvents"]:
        if e.get("ph") != "X":
            continue
        a = e["args"]
        out.append((e["tid"], a["stage"], a["microbatch"], e["cat"], e["ts"] / 1e3, (e["ts"] + e["dur"]) / 1e3))
    return out


def latency_of(events, rank_of_stage, stages):
    """Median idle-receiver gap over cross-rank dependencies (F from the stage before, I/B from the one after)."""
    by_key = {(s, m, k): (r, t0, t1) for r, s, m, k, t0, t1 in events}
    per_rank = defaultdict(list)
    for r, s, m, k, t0, t1 in events:
        per_rank[r].append((t0, t1))
    for v in per_rank.values():
        v.sort()
    gaps = []
    for r, s, m, k, t0, t1 in events:
        if k == "F":
            pre = [(s - 1, m, "F")] if s > 0 else []
        elif k in ("B", "I"):
            pre = [(s + 1, m, x) for x in ("B", "I")] if s + 1 < stages else []
        else:
            pre = []
        for p in pre:
            if p not in by_key:
                continue
            pr, p0, p1 = by_key[p]
            if pr == r:
                continue
            prev_end = max((b for a, b in per_rank[r] if b <= t0 + 1e-9), default=-1e18)
            if p1 > prev_end and t0 >= p1:  # the receiver was idle, waiting for this message
                gaps.append(t0 - p1)
    return (statistics.median(gaps) if gaps else 0.0), len(gaps)


def in_run_costs(events, stages, profile):
    """Per-stage costs from the run's own action times (median per stage and kind)."""
    t = defaultdict(list)
    for r, s, m, k, t0, t1 in events:
        t[(s, k)].append(t1 - t0)
    med = lambda s, k: statistics.median(t[(s, k)]) if t[(s, k)] else None
    units = []
    for s in range(stages):
        f, b, i, w = med(s, "F"), med(s, "B"), med(s, "I"), med(s, "W")
        u = {"t_f": f, "mem": 1}
        if i is not None and w is not None:
            u["t_i"], u["t_w"] = i, w
        else:
            # A B-only schedule: split B by the profile's I/(I+W) of the stage.
            u["t_b"], u["t_i"] = b, b * profile[s]
        units.append(u)
    return {"stages": units}


def simulate(banyan, schedule, ranks, m, costs_path, split, chunks=1, extra=()):
    cmd = [banyan, "pipeline", "simulate", schedule, "-p", str(ranks), "-m", str(m), "--costs", costs_path, "--json"]
    if chunks > 1:
        cmd += ["-v", str(chunks)]
    if split:
        cmd += ["--layers-per-stage"] + [str(x) for x in split]
    return json.loads(sh(cmd + list(extra), f"simulate {schedule}"))["makespan"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build/default")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--microbatches", type=int, default=8)
    ap.add_argument("--schedules", default="1f1b,zb-h1,gpipe,zb-h2,interleaved-1f1b:2,zb-v:2")
    ap.add_argument("--budget", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=3, help="runs of each profile and schedule; the fastest counts")
    ap.add_argument("--json", help="write every figure here")
    ap.add_argument("--node-threads", type=int, default=0,
                    help="CAF scheduler threads per node (train_gpt --threads; 0: the machine's cores)")
    ap.add_argument("--idle-wait", type=float, default=60, help="seconds to wait for an idle machine before each run")
    a = ap.parse_args()
    global IDLE_WAIT
    IDLE_WAIT = a.idle_wait
    app = os.path.join(a.build, "samples/train_gpt/train_gpt")
    banyan = os.path.join(a.build, "tools/banyan")
    P, M = a.ranks, a.microbatches
    L = int(MODEL[MODEL.index("--layers") + 1])
    tokens_per_step = int(MODEL[MODEL.index("--batch") + 1]) * int(MODEL[MODEL.index("--seq") + 1])
    tmp = tempfile.mkdtemp(prefix="pipeline_measured.")
    dep = deployment(tmp, P)
    report = {"model": MODEL, "node_threads": a.node_threads, "ranks": P, "microbatches": M, "steps": a.steps, "load_before": os.getloadavg()[0]}

    # 1. Profile, on the stage code (the file every prediction uses) and from the engine's profile.
    costs_path = os.path.join(tmp, "costs.json")
    engine_path = os.path.join(tmp, "costs-engine.json")
    # Other work on the machine only slows a run down, so of R profiles each field keeps its least
    # (each already a median over 20 steps), as each schedule keeps its fastest of R runs below.
    profile = [app] + COMMON + MODEL + ["--nn-threads", "1", "--pipeline", str(P), "--microbatches", str(M),
                                        "--profile-steps", "20", "--json"]

    def profile_min(path, source):
        runs = []
        for _ in range(a.repeats):
            wait_idle()
            runs.append(json.loads(sh(profile + ["--profile-costs", path, "--profile-source", source], "profile")))
        best = runs[0]
        for k, u in enumerate(best["costs"]["layers"]):
            for key in ("t_f", "t_i", "t_w"):
                u[key] = min(r["costs"]["layers"][k][key] for r in runs)
            u["t_b"] = u["t_i"] + u["t_w"]
        with open(path, "w") as f:
            json.dump(best["costs"], f, indent=2)
        best["microbatch_ms"] = {"forward": sum(u["t_f"] for u in best["costs"]["layers"]),
                                 "backward": sum(u["t_b"] for u in best["costs"]["layers"])}
        return best

    stage_files = {}

    def stage_profile(split, chunks):
        """The per-stage file of this split (--profile-stages), least of R per field, made once."""
        key = (tuple(split), chunks)
        if key in stage_files:
            return stage_files[key]
        path = os.path.join(tmp, f"stages-{'-'.join(map(str, split))}.json")
        cmd = profile + ["--profile-costs", path, "--profile-stages", "--interleave", str(chunks),
                         "--layers-per-stage", ",".join(map(str, split))]
        runs = []
        for _ in range(a.repeats):
            wait_idle()
            runs.append(json.loads(sh(cmd, "stage profile"))["costs"])
        best = runs[0]
        for k, u in enumerate(best["stages"]):
            for f in ("t_f", "t_i", "t_w"):
                u[f] = min(r["stages"][k][f] for r in runs)
            u["t_b"] = u["t_i"] + u["t_w"]
        with open(path, "w") as f:
            json.dump(best, f, indent=2)
        stage_files[key] = path
        return path

    prof = profile_min(costs_path, "stage")
    prof_engine = profile_min(engine_path, "engine")
    report["profile_engine"] = prof_engine
    layers = prof["costs"]["layers"]
    report["profile"] = prof
    print(f"profile: {len(layers)} layers, one microbatch F {prof['microbatch_ms']['forward']:.2f} ms + "
          f"B {prof['microbatch_ms']['backward']:.2f} ms (I/(I+W) of a block {prof['input_fraction']['block']:.2f})",
          file=sys.stderr)

    def run_pipeline(schedule, chunks, split_arg, trace):
        # A .csv table carries its own stages and placement; --interleave is for programs.
        cmd = [banyan, "launch", dep, "--run-for", "300s", "--", app] + COMMON + MODEL + [
            "--nn-threads", "1", "--steps", str(a.steps), "--pipeline", str(P), "--schedule", schedule,
            "--microbatches", str(M), "--json", "--trace", trace]
        if chunks > 1 and not schedule.endswith(".csv"):
            cmd += ["--interleave", str(chunks)]
        if a.node_threads:
            cmd += ["--threads", str(a.node_threads)]
        if split_arg:
            cmd += ["--layers-per-stage", ",".join(str(x) for x in split_arg)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if out.returncode != 0:
            return None, (out.stdout + out.stderr)[-600:]
        return summary(out.stdout, "n0"), None

    def measure(name, schedule, chunks, split, pass_split=False):
        stages = P * chunks
        best = None
        for k in range(a.repeats):
            trace = os.path.join(tmp, f"trace-{name}-{k}.json")
            wait_idle()
            t0, m0 = time.monotonic(), cpu_mark()
            s, err = run_pipeline(schedule, chunks, split if pass_split else None, trace)
            foreign = foreign_share(m0, cpu_mark(), time.monotonic() - t0)
            if s is None:
                print(f"{name}: did not run: {err.strip().splitlines()[-1] if err.strip() else '?'}", file=sys.stderr)
                return {"schedule": name, "ran": False, "error": err}
            spans = [x["span_ms"] for x in s["pipeline"]["per_step"]][1:]
            if best is None or statistics.median(spans) < best[1]:
                best = (s, statistics.median(spans), spans, trace, foreign)
        s, measured, spans, trace, foreign = best
        rates = [x["tokens_per_s"] for x in s["pipeline"]["per_step"]][1:]
        ev = timeline(trace)
        # The trace's tid is the rank; a stage's rank from its events.
        rank_of_stage = {st: r for r, st, m_, k, t0, t1 in ev}
        lat, samples = latency_of(ev, rank_of_stage, stages)
        sim_v = 1 if schedule.endswith(".csv") else chunks
        pred = simulate(banyan, schedule, P, M, costs_path, split, sim_v)
        pred_engine = simulate(banyan, schedule, P, M, engine_path, split, sim_v)
        stages_path = stage_profile(split, chunks)
        pred_stages = simulate(banyan, schedule, P, M, stages_path, None, sim_v, ["--latency", f"{lat:.6f}"])
        pred_lat = simulate(banyan, schedule, P, M, costs_path, split, sim_v, ["--latency", f"{lat:.6f}"])
        # The profile's I/(I+W) per stage, to split a B-only run's B.
        frac = []
        bounds = [0]
        for c in split:
            bounds.append(bounds[-1] + c)
        for st in range(stages):
            ls = layers[bounds[st]:bounds[st + 1]]
            frac.append(sum(u["t_i"] for u in ls) / max(1e-12, sum(u["t_b"] for u in ls)))
        inrun_path = os.path.join(tmp, f"inrun-{name}.json")
        with open(inrun_path, "w") as f:
            json.dump(in_run_costs(ev, stages, frac), f)
        pred_inrun = simulate(banyan, schedule, P, M, inrun_path, None, sim_v, ["--latency", f"{lat:.6f}"])
        traced = max(e[5] for e in ev) - min(e[4] for e in ev)  # the traced (last) step's span
        r = {"schedule": name, "ran": True, "split": split, "measured_ms": measured, "spans_ms": spans,
             "simulated_ms": pred, "simulated_engine_ms": pred_engine, "simulated_latency_ms": pred_lat,
             "simulated_stages_ms": pred_stages,
             "simulated_in_run_ms": pred_inrun, "traced_step_ms": traced, "foreign_cpu": foreign,
             "latency_ms": lat, "latency_samples": samples, "tokens_per_s": statistics.median(rates),
             "overall_tokens_per_s": s["tokens_per_s"],
             "mean_bubble": s["pipeline"]["mean_bubble"]}
        print(f"{name}: measured {measured:.1f} ms, simulated {pred:.1f} ({measured / pred:.2f}x), engine profile "
              f"{pred_engine:.1f}, +latency {lat * 1e3:.0f} us {pred_lat:.1f} ({measured / pred_lat:.2f}x), stage "
              f"profile {pred_stages:.1f} ({measured / pred_stages:.2f}x); traced step "
              f"{traced:.1f} vs in-run {pred_inrun:.1f} ({traced / pred_inrun:.2f}x)", file=sys.stderr)
        return r

    # 2-3. Each schedule on the even split.
    rows = []
    for item in a.schedules.split(","):
        name, _, v = item.partition(":")
        chunks = int(v) if v else 1
        rows.append(measure(name, name, chunks, even_split(L, P * chunks)))
    report["schedules"] = rows

    # 4. The unpipelined baseline: one process, P threads, the same global batch.
    def unpipelined():
        wait_idle()
        return json.loads(sh([app] + COMMON + MODEL + ["--nn-threads", str(P), "--steps", str(a.steps), "--json"],
                             "unpipelined run"))

    whole = max((unpipelined() for _ in range(a.repeats)), key=lambda w: w["tokens_per_s"])
    report["unpipelined"] = {"tokens_per_s": whole["tokens_per_s"], "seconds": whole["seconds"]}

    # 5. The search on the measured costs (with the measured latency of the 1f1b run).
    lat = next((r["latency_ms"] for r in rows if r["ran"]), 0.0)
    with open(costs_path) as f:
        c = json.load(f)
    c["latency"] = lat
    lat_costs = os.path.join(tmp, "costs-latency.json")
    with open(lat_costs, "w") as f:
        json.dump(c, f)
    csv = os.path.join(tmp, "searched.csv")
    found = json.loads(sh([banyan, "pipeline", "search", "-p", str(P), "-m", str(M), "--costs", lat_costs, "--budget",
                           str(a.budget), "--seed", "1", "--json", "--out-csv", csv], "search"))
    report["search"] = {k: v for k, v in found.items() if k != "best"}
    best = found["best"]
    report["search"]["best"] = {k: v for k, v in best.items() if k not in ("dsl", "table")}
    split = best["layers_per_stage"]
    chunks = best["table"]["stages"] // P
    shipped = {}
    for name, v in (("gpipe", 1), ("1f1b", 1)):
        shipped[name] = simulate(banyan, name, P, M, lat_costs, even_split(L, P * v), v)
    report["search_reference"] = shipped
    # p = 4 on the same costs, simulated only: 4 single-threaded nodes on this 2-core machine would
    # measure the oversubscription, not the schedule.
    found4 = json.loads(sh([banyan, "pipeline", "search", "-p", "4", "-m", str(M), "--costs", lat_costs, "--budget",
                            str(a.budget), "--seed", "1", "--json"], "search p=4"))
    shipped4 = {n: simulate(banyan, n, 4, M, lat_costs, None, 1) for n in ("gpipe", "1f1b")}
    report["search_p4"] = {k: v for k, v in found4.items() if k != "best"}
    report["search_p4"]["best"] = {k: v for k, v in found4["best"].items() if k not in ("dsl", "table")}
    report["search_p4_reference"] = shipped4
    searched = measure("searched", csv, chunks, split, pass_split=True)
    report["searched_run"] = searched

    # The table.
    print()
    print(f"model {' '.join(MODEL)}, p={P}, m={M}, {a.steps} steps, scheduler threads per node "
          f"{a.node_threads or os.cpu_count()}, load average before {report['load_before']:.2f}")
    print("measured: median step span; simulated: the stage-code cost file (engine: the engine's profile), "
          "+latency: with the timeline's message latency; stages: --profile-stages of the run's split + that latency; traced/in-run: the traced step against the simulator "
          "fed that step's own action times")
    print(f"{'schedule':18} {'measured ms':>11} {'simulated':>10} {'ratio':>6} {'engine':>7} {'ratio':>6} "
          f"{'+latency':>9} {'ratio':>6} {'stages':>7} {'ratio':>6} {'traced':>7} {'in-run':>7} {'ratio':>6} {'tokens/s':>9} {'other CPU':>9}")
    for r in rows + ([searched] if searched else []):
        if not r["ran"]:
            print(f"{r['schedule']:18} did not run")
            continue
        print(f"{r['schedule']:18} {r['measured_ms']:11.1f} {r['simulated_ms']:10.1f} "
              f"{r['measured_ms'] / r['simulated_ms']:6.2f} {r['simulated_engine_ms']:7.1f} "
              f"{r['measured_ms'] / r['simulated_engine_ms']:6.2f} {r['simulated_latency_ms']:9.1f} "
              f"{r['measured_ms'] / r['simulated_latency_ms']:6.2f} {r['simulated_stages_ms']:7.1f} "
              f"{r['measured_ms'] / r['simulated_stages_ms']:6.2f} {r['traced_step_ms']:7.1f} "
              f"{r['simulated_in_run_ms']:7.1f} {r['traced_step_ms'] / r['simulated_in_run_ms']:6.2f} "
              f"{r['tokens_per_s']:9.0f} {100 * r['foreign_cpu']:8.0f}%")
    lat_line = ", ".join(f"{r['schedule']} {r['latency_ms'] * 1e3:.0f} us" for r in rows if r["ran"])
    print(f"message latency from the timelines: {lat_line}")
    print(f"tokens/s over the whole run (start included): unpipelined (1 process, --nn-threads {P}) "
          f"{whole['tokens_per_s']:.0f}; pipelined ({P} nodes x 1 thread): " +
          ", ".join(f"{r['schedule']} {r['overall_tokens_per_s']:.0f}" for r in rows if r["ran"]))
    bp = found["best_predefined"]
    print(f"search (p={P}, m={M}, --budget {a.budget} --seed 1, the measured costs + {lat * 1e3:.0f} us latency): "
          f"best {best['sim']['makespan']:.1f} ms ({best['origin']}, layers per stage {split}); best shipped "
          f"{bp['sim']['makespan']:.1f} ({bp['origin']}); gpipe {shipped['gpipe']:.1f}, 1f1b {shipped['1f1b']:.1f} "
          f"(even split); lower bound {found['lower_bound']:.1f} (gap {100 * found['gap_to_lower_bound']:.1f}%)")
    b4, bp4 = found4["best"], found4["best_predefined"]
    print(f"search p=4 (simulated only): best {b4['sim']['makespan']:.1f} ms ({b4['origin']}, layers per stage "
          f"{b4['layers_per_stage']}); best shipped {bp4['sim']['makespan']:.1f} ({bp4['origin']}); gpipe "
          f"{shipped4['gpipe']:.1f}, 1f1b {shipped4['1f1b']:.1f} (balanced split); lower bound "
          f"{found4['lower_bound']:.1f} (gap {100 * found4['gap_to_lower_bound']:.1f}%)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
