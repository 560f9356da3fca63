#!/usr/bin/env bash
# Measured times, from a run to a plan: samples/factory runs in one process with --profile (its
# packers ask the quality service for every part; its presses jam once and restart), `banyan
# profile --read PROFILE --timings FILE` writes the start (wake) and reply (response) times the run
# measured as a timings file, and `banyan plan` plans a workload that takes its histograms from it.
#   profile_timings_test.sh BANYAN FACTORY
set -euo pipefail
banyan=$1
factory=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
fail() { echo "profile_timings_test: $*" >&2; exit 1; }

"$factory" --threads 2 --parts 20 --profile factory.json > factory.out 2>&1 || { cat factory.out; fail "factory failed"; }
"$banyan" profile --read factory.json --timings timings.yaml --json > summary.json || fail "banyan profile --timings failed"
grep -q '"components"' summary.json || fail "no summary: $(cat summary.json)"
grep -q '^format: banyan-timings$' timings.yaml || fail "not a timings file: $(cat timings.yaml)"
# The quality service answered 60 requests (3 lines x 20 parts) and started once; each press
# started twice (its first incarnation jammed).
entry() { awk -v p="  - path: \"$1\"" '$0 == p {on = 1; next} /^  - / {on = 0} on' timings.yaml; }
total() { sed -n "s/.*$1: {bounds: \[[^]]*\], counts: \[\([^]]*\)\]}.*/\1/p" | tr ',' '\n' | awk '{s += $1} END {print s + 0}'; }
[ "$(entry /factory/quality | total response)" = 60 ] || fail "quality: expected 60 replies timed: $(entry /factory/quality)"
[ "$(entry /factory/quality | total wake)" = 1 ] || fail "quality: expected 1 start timed: $(entry /factory/quality)"
[ "$(entry /factory/line1/press | total wake)" = 2 ] || fail "press: expected 2 starts timed: $(entry /factory/line1/press)"

cat > workload.yaml <<YAML
version: 1
slot: 1m
horizon: 1h
timings: timings.yaml
nodes:
  - {name: n0, cost_per_hour: 0.4, capacity: 4}
subtrees:
  - {path: /factory/quality, demand: 1}
workflows:
  - name: inspect
    period: 15m
    deadline: 5s
    reliability: 0.99
    requests:
      - {subtree: /factory/quality}
YAML
"$banyan" plan workload.yaml --profile factory.json --samples 10000 --json > plan.json 2> plan.err ||
  fail "banyan plan on the measured timings failed: $(cat plan.err plan.json)"
grep -q '"inspect"' plan.json || fail "the plan does not judge the workflow: $(cat plan.json)"
echo "profile_timings_test: measured start and reply times planned from"
