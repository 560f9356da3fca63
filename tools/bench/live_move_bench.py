#!/usr/bin/env python3
"""Live moves, measured (docs/runtime.md "Moving subtrees live").

Runs tests/integration/move_app on 3 loopback nodes under `banyan launch` (5 publishers at full rate,
3 subscribers, a request loop; see move_app.cpp) and moves its two subtrees back and forth with
`banyan reconfigure` while it publishes, for each --ballast size (bytes every subscriber adds to its
state, so the moved subtree `/mv/s` carries about that much). For each size it reports:

  * pause per move of /mv/s (freeze to thaw, as its coordinator measured it) against the bytes of
    state that moved: median and max;
  * the throughput dip: the run's wall time with --moves reconfigures (2 moves each) against the
    same run without moves, as extra milliseconds per move and as the ratio of the two runs' rates;
    and, finer, the delivery rate (the live profile's edge messages, sampled about every 50 ms with
    `banyan profile --from`) over the sample intervals that span a reconfigure against the median
    of those that do not (moves are --gap seconds apart);
  * that every subscriber's digests equal between the two runs (exactly once, in order).

  tools/bench/live_move_bench.py --build build/default [--messages 400000] [--ballast 0,1048576] [--json]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

T0 = time.monotonic()


def progress(msg):
    print(f"live_move_bench [{time.monotonic() - T0:6.1f} s] {msg}", file=sys.stderr, flush=True)


def deployment(path, work, s, u):
    with open(path, "w") as f:
        f.write("version: 1\nnodes:\n")
        for i in range(3):
            f.write(f'  - {{name: n{i}, endpoint: "ipc://{work}/n{i}", capacity: {{cpu: 1}}}}\n')
        f.write("assignments:\n  /mv: n0\n  /mv/p1: n1\n  /mv/p2: n2\n  /mv/q: n2\n")
        f.write(f"  /mv/s: {s}\n  /mv/u: {u}\n")


def digests(text):
    return dict(re.findall(r"DIGEST (\S+) (.*)", text))


def one_run(args, work, d1, d2, ballast, moves):
    """Runs the app on d1 with `moves` reconfigures while it publishes; returns (wall s, log, answers)."""
    for n in ("n0", "n1", "n2"):
        if os.path.exists(os.path.join(work, n)):
            os.unlink(os.path.join(work, n))
    cmd = [args.banyan, "launch", d1, "--run-for", str(args.run_limit) + "s", "--", args.app,
           "--messages", str(args.messages), "--ballast", str(ballast)]
    start = time.monotonic()
    launch = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log = []
    while True:  # until every node is ready
        line = launch.stdout.readline()
        if not line:
            raise SystemExit("live_move_bench: the launch ended before every node was ready:\n" + "".join(log))
        log.append(line)
        if "every node is ready" in line:
            break
    answers, spans, samples = [], [], []
    stop = threading.Event()

    def sample():  # (time, edge messages so far) while it runs
        while not stop.is_set():
            r = subprocess.run([args.banyan, "profile", "--from", d1, "--json"], capture_output=True, text=True)
            if r.returncode == 0:
                samples.append((time.monotonic(), json.loads(r.stdout)["total_edge_messages"]))
            stop.wait(0.05)

    sampler = threading.Thread(target=sample)
    if moves:
        sampler.start()
    for i in range(moves):
        target = d2 if i % 2 == 0 else d1
        time.sleep(args.gap)  # between moves: intervals without one, for the rate they dip from
        t = time.monotonic()
        r = subprocess.run([args.banyan, "reconfigure", target, "--from", d1, "--json"], capture_output=True, text=True)
        spans.append((t, time.monotonic()))
        if r.returncode != 0:
            launch.kill()
            raise SystemExit(f"live_move_bench: reconfigure {i} failed:\n{r.stdout}{r.stderr}")
        answers.append(json.loads(r.stdout))
    stop.set()
    if moves:
        sampler.join()
    out, _ = launch.communicate()
    wall = time.monotonic() - start
    log.append(out)
    text = "".join(log)
    if launch.returncode != 0 or "every subscriber got everything exactly once, in order" not in text:
        raise SystemExit("live_move_bench: the run failed:\n" + text[-4000:])
    return wall, text, answers, dip(samples, spans)


def dip(samples, spans):
    """Delivery rate over sample intervals that overlap a reconfigure, against the median rate of those
    between the first and the last reconfigure that do not: (during, outside, during / outside)."""
    if not spans:
        return None
    during, outside = [], []
    for (t0, m0), (t1, m1) in zip(samples, samples[1:]):
        if t1 <= t0 or t0 < spans[0][0] - 1 or t1 > spans[-1][1] + 1:
            continue
        rate = (m1 - m0) / (t1 - t0)
        (during if any(a < t1 and t0 < b for a, b in spans) else outside).append(rate)
    if not during or not outside:
        return None
    d, o = median(during), median(outside)
    return {"rate_during": d, "rate_outside": o, "ratio": d / o if o else None,
            "intervals_during": len(during), "intervals_outside": len(outside)}


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description="Pause per live move vs state size, and the throughput dip (move_app on 3 nodes)")
    ap.add_argument("--build", default="build/default", help="build folder with tools/banyan and tests/move_app")
    ap.add_argument("--messages", type=int, default=400000, help="messages per publisher (default 400000)")
    ap.add_argument("--ballast", default="0,65536,1048576,8388608",
                    help="comma list of bytes each subscriber adds to its state (default 0,64Ki,1Mi,8Mi)")
    ap.add_argument("--moves", type=int, default=10, help="reconfigures per run, 2 moves each (default 10)")
    ap.add_argument("--gap", type=float, default=0.5, help="seconds between reconfigures (default 0.5)")
    ap.add_argument("--run-limit", type=int, default=600, help="banyan launch --run-for, seconds (default 600)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON on stdout")
    args = ap.parse_args()
    args.banyan = os.path.join(args.build, "tools", "banyan")
    args.app = os.path.join(args.build, "tests", "move_app")
    for p in (args.banyan, args.app):
        if not os.access(p, os.X_OK):
            raise SystemExit(f"live_move_bench: {p}: not built (cmake --build {args.build} --target banyan move_app)")
    rows = []
    with tempfile.TemporaryDirectory(prefix="live-move-bench.") as work:
        d1, d2 = os.path.join(work, "d1.yaml"), os.path.join(work, "d2.yaml")
        deployment(d1, work, "n1", "n0")
        deployment(d2, work, "n2", "n1")
        for ballast in [int(b) for b in args.ballast.split(",")]:
            progress(f"ballast {ballast} bytes: a run without moves")
            still, still_log, _, _ = one_run(args, work, d1, d2, ballast, 0)
            progress(f"ballast {ballast} bytes: a run with {args.moves} reconfigures")
            moved, moved_log, answers, fine = one_run(args, work, d1, d2, ballast, args.moves)
            if digests(still_log) != digests(moved_log) or len(digests(still_log)) != 3:
                raise SystemExit("live_move_bench: the digests differ between the runs with and without moves")
            s_moves = [m for a in answers for m in a["moves"] if m["path"] == "/mv/s"]
            all_moves = [m for a in answers for m in a["moves"]]
            row = {
                "ballast_bytes": ballast,
                "moves": len(all_moves),
                "s_state_bytes_median": median([m["state_bytes"] for m in s_moves]),
                "s_pause_ms_median": median([m["pause_ms"] for m in s_moves]),
                "s_pause_ms_max": max(m["pause_ms"] for m in s_moves),
                "all_pause_ms_median": median([m["pause_ms"] for m in all_moves]),
                "wall_s_without_moves": still,
                "wall_s_with_moves": moved,
                "extra_ms_per_move": (moved - still) * 1000 / len(all_moves),
                "rate_ratio": still / moved,
                "digests_equal": True,
                "rate_during_vs_outside_moves": fine,
            }
            rows.append(row)
            progress(f"ballast {ballast}: /mv/s state {row['s_state_bytes_median']} B, pause median "
                     f"{row['s_pause_ms_median']:.1f} ms (max {row['s_pause_ms_max']:.1f}); run {still:.1f} s -> {moved:.1f} s "
                     f"({row['extra_ms_per_move']:.0f} ms per move, rate {row['rate_ratio']:.2f}x)" +
                     (f"; delivery rate over intervals with a move {fine['ratio']:.2f}x of those without "
                      f"({fine['intervals_during']} / {fine['intervals_outside']} intervals)" if fine else ""))
    if args.json:
        print(json.dumps({"messages": args.messages, "rows": rows}, indent=1))
    else:
        print("| state of /mv/s (bytes) | pause median (ms) | pause max (ms) | run without / with moves (s) | extra per move (ms) | rate with moves | rate in intervals with a move |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            fine = r["rate_during_vs_outside_moves"]
            fine_text = f"{fine['ratio']:.2f}x" if fine else "n/a"
            print(f"| {r['s_state_bytes_median']:,} | {r['s_pause_ms_median']:.1f} | {r['s_pause_ms_max']:.1f} | "
                  f"{r['wall_s_without_moves']:.1f} / {r['wall_s_with_moves']:.1f} | {r['extra_ms_per_move']:.0f} | "
                  f"{r['rate_ratio']:.2f}x | {fine_text} |")
    progress(f"done: {len(rows)} state sizes, digests equal with and without moves in every one")


if __name__ == "__main__":
    main()
