#!/usr/bin/env bash
# The main job (tools/run-demo runs samples/eda_sim/demo.sh) on a small design: every deployment's
# outputs pass the check against Icarus, no step warns that its loads are too noisy to trust, and
# the partition is the same from two profile runs (loads by messages handled, not CPU time).
#   demo_test.sh BUILD_DIR
set -euo pipefail
build=$(realpath "$1")
cd "$(dirname "$0")/../.."
D=samples/eda_sim/designs
work=$(mktemp -d /tmp/eda-demo-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "demo_test: $*" >&2; exit 1; }

if ! TOP=multiplier FILES="$D/multiplier/multiplier.v" samples/eda_sim/demo.sh "$build" 40 >"$work/demo.out" 2>&1; then
  cat "$work/demo.out"
  fail "the demo failed"
fi
tail -12 "$work/demo.out"
! grep -q "too noisy" "$work/demo.out" || fail "the demo warned that its loads are too noisy to trust"
[ "$(grep -cE ' passed$' "$work/demo.out")" = 6 ] || fail "not every deployment passed the check against Icarus"

# Two profile runs of the same input, partitioned as the demo does: the same deployment.
sim=$build/samples/eda_sim/eda_sim
printf 'version: 1\nnodes:\n' >"$work/cluster.yaml"
for i in 0 1 2; do
  printf '  - {name: n%d, endpoint: "tcp://127.0.0.1:%d", capacity: {cpu: "40%%"}}\n' $i $((7311 + i)) >>"$work/cluster.yaml"
done
for run in a b; do
  "$sim" --top multiplier "$D/multiplier/multiplier.v" --cycles 40 --components --grain leaf --profile "$work/$run.json" >/dev/null
  "$build/tools/banyan" partition "$work/$run.json" --cluster "$work/cluster.yaml" --algorithm bottom-up \
    --weight bytes --load messages --out "$work/$run.yaml" 2>"$work/$run.err" || { cat "$work/$run.err"; fail "partition failed"; }
  grep -v '^#' "$work/$run.yaml" >"$work/$run.body"
done
diff "$work/a.body" "$work/b.body" || fail "two profile runs of the same input partitioned differently"
echo "demo_test: passed"
