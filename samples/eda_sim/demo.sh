#!/usr/bin/env bash
# The EDA demo: profile -> partition -> 3 local nodes -> simulate -> check against Icarus, for the
# 11.9k-gate `soc` design; prints the cross-node traffic table (hier / flat-p2p / flat-node, for
# bottom-up and metis deployments) and the speed.
#   samples/eda_sim/demo.sh [BUILD_DIR] [CYCLES]      (default build/default, 300 cycles)
#   TOP=aes_round FILES=samples/eda_sim/designs/aes_round/aes_round.v samples/eda_sim/demo.sh ...
#                                                     (another design; BANYAN=path picks the banyan CLI)
# Needs eda_sim and banyan built in BUILD_DIR (targets eda_sim, banyan).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/default}
cycles=${2:-300}
sim=$build/samples/eda_sim/eda_sim
banyan=${BANYAN:-$build/tools/banyan}
D=samples/eda_sim/designs
top=${TOP:-soc}
files=${FILES:-"$D/soc/soc.v $D/cpu/cpu.v $D/multiplier/multiplier.v $D/alu_regfile/alu_regfile.v $D/fifo/fifo.v"}
work=$(mktemp -d /tmp/eda-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT
step() { echo "== $*" >&2; }

step "1/5 profile: one process, hier routing, --grain leaf (every group a message), $cycles cycles"
$sim --top "$top" $files --cycles "$cycles" --components --grain leaf --profile "$work/profile.json" --json > "$work/profile_run.json"

cat > "$work/cluster.yaml" <<EOF
version: 1
nodes:
  - {name: n0, endpoint: "tcp://127.0.0.1:7311", capacity: {cpu: "40%"}}
  - {name: n1, endpoint: "tcp://127.0.0.1:7312", capacity: {cpu: "40%"}}
  - {name: n2, endpoint: "tcp://127.0.0.1:7313", capacity: {cpu: "40%"}}
EOF

algos=${ALGOS:-"bottom-up metis"}
for algo in $algos; do
  # By messages handled, not CPU time: the same input gives the same loads in every run, so the
  # deployments (and the table below) are the same each time; a short run's CPU times are noise.
  step "2/5 partition with $algo onto 3 nodes (loads: messages handled)"
  # An algorithm that finds no mapping within the nodes' capacity (METIS balances parts within 3%
  # and knows no hard capacity) is said and skipped; the demo goes on with the others.
  if ! $banyan partition "$work/profile.json" --cluster "$work/cluster.yaml" --algorithm "$algo" --weight bytes \
    --load messages --out "$work/$algo.yaml" >"$work/$algo.partition" 2>&1; then
    cat "$work/$algo.partition" >&2
    why=$(grep -m1 -oE '(infeasible|unknown|error)[^|]*' "$work/$algo.partition" || tail -1 "$work/$algo.partition")
    echo "demo: $algo gave no deployment at this capacity ($why); skipped" >&2
    echo "$algo: $why" >>"$work/skipped"
    continue
  fi
  cat "$work/$algo.partition" >&2
  for mode in hier flat-p2p flat-node; do
    step "3/5 simulate on 3 local nodes: $algo, $mode (with --check against Icarus)"
    $banyan launch "$work/$algo.yaml" --profile "$work/$algo-$mode.json" --run-for 10m -- \
      "$(realpath "$sim")" --top "$top" $(for f in $files; do realpath "$f"; done) --cycles "$cycles" \
      --components --mode "$mode" --check --json > "$work/$algo-$mode.out"
  done
done

step "4/5 single node speed"
$sim --top "$top" $files --cycles 2000 --lanes 64 --json > "$work/engine.json"

step "5/5 report"
/usr/bin/python3 - "$work" "$cycles" "$top" $algos <<'EOF'
import json, sys, glob, os, re
work, cycles, top, algos = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
print(f"\n{top} on 3 local nodes, {cycles} cycles: cross-node traffic (measured on the node links)")
failed = []
print(f"{'deployment':<12}{'mode':<11}{'messages':>12}{'bytes':>14}{'check':>8}")
skipped = dict(l.split(": ", 1) for l in open(f"{work}/skipped").read().splitlines()) if os.path.exists(f"{work}/skipped") else {}
for algo in algos:
    if algo in skipped:
        print(f"{algo:<12}no deployment within the nodes' capacity: {skipped[algo]}")
        continue
    for mode in ("hier", "flat-p2p", "flat-node"):
        prof = json.load(open(f"{work}/{algo}-{mode}.json"))
        msgs = sum(l["messages"] for l in prof.get("links", []))
        byts = sum(l["bytes"] for l in prof.get("links", []))
        text = open(f"{work}/{algo}-{mode}.out").read()
        ok = "passed" if '"passed": true' in text else "FAILED"
        if ok != "passed": failed.append(f"{algo}/{mode}")
        print(f"{algo:<12}{mode:<11}{msgs:>12,}{byts:>14,}{ok:>8}")
e = json.load(open(f"{work}/engine.json"))
p = json.load(open(f"{work}/profile_run.json"))
print(f"\nengine, one node: {e['cycles_per_second']:,.0f} cycles/s x 64 lanes = {e['lane_cycles_per_second']:,.0f} lane-cycles/s")
print(f"components --grain leaf (the profile run), one process: {p['components']['cycles_per_second']:,.0f} cycles/s, outputs identical to the engine: {p['components']['identical_to_engine']}")
if failed:
    sys.exit("demo: the check against Icarus failed for " + ", ".join(failed))
if len(skipped) == len(algos):
    sys.exit("demo: no algorithm gave a deployment within the nodes' capacity")
EOF
