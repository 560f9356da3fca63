#!/usr/bin/env bash
# End-to-end check of `banyan plan` on tests/partitioner/periodic/: a plan whose every workflow meets
# its target, written and judged again with --evaluate (same figures for the same seed), JSON with
# the baselines, and bad input exiting 2 naming file:line: a plan or a workload for another
# deployment, an unknown subtree, an unreachable target exits 1 naming the workflow.
# Usage: periodic_cli_test.sh BANYAN SOURCE_DIR
set -euo pipefail
banyan=$1
src=$2/tests/partitioner/periodic
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cp "$src"/*.yaml "$dir"
cd "$dir"
fail() { echo "periodic_cli_test: $*" >&2; exit 1; }

"$banyan" plan --help | grep -q -- "--deployment" || fail "--help does not list --deployment"

"$banyan" plan workload.yaml --deployment deployment.yaml --samples 20000 --seed 7 --baselines --json --out plan.yaml \
  > plan.json 2> plan.err || fail "plan failed: $(cat plan.err)"
python3 - <<'PY' || fail "plan.json is wrong: $(cat plan.json)"
import json
j = json.load(open("plan.json"))
assert j["seed"] == 7 and j["samples"] == 20000
assert all(f["meets"] for f in j["plan"]["workflows"]), j["plan"]
names = [b["policy"] for b in j["baselines"]]
assert names == ["always-on", "keep-alive-60s", "hybrid-histogram"], names
on = j["baselines"][0]["cost"]
assert 0 < j["plan"]["cost"] < on, (j["plan"]["cost"], on)
assert j["fingerprint"].startswith("fnv1a64:")
PY
grep -q "fingerprint" plan.yaml || fail "plan.yaml has no fingerprint"

# The written plan, judged again with the same seed, predicts the same.
"$banyan" plan workload.yaml --deployment deployment.yaml --samples 20000 --seed 7 --json --evaluate plan.yaml \
  > again.json 2> again.err || fail "--evaluate failed: $(cat again.err)"
python3 - <<'PY' || fail "--evaluate differs: $(cat again.json)"
import json
a = json.load(open("plan.json"))["plan"]
b = json.load(open("again.json"))["plan"]
assert [f["met_fraction"] for f in a["workflows"]] == [f["met_fraction"] for f in b["workflows"]]
assert abs(a["cost"] - b["cost"]) <= 1e-9 * max(1, a["cost"]), (a["cost"], b["cost"])
PY

expect_error() {  # CODE PATTERN ARGS...
  local code=$1 pattern=$2
  shift 2
  set +e
  "$banyan" plan "$@" --samples 2000 > out.txt 2> err.txt
  local got=$?
  set -e
  [ "$got" = "$code" ] || fail "$* exited $got, not $code: $(cat err.txt)"
  grep -q -- "$pattern" err.txt || fail "$*: no '$pattern' in: $(cat err.txt)"
}

# Another deployment: one more assignment changes the fingerprint.
sed 's|  /app/ingest: n2|  /app/ingest: n1|' deployment.yaml > other.yaml
expect_error 2 "plan.yaml:4: this plan is for another deployment" workload.yaml --deployment other.yaml --evaluate plan.yaml
fp=$(python3 -c 'import json; print(json.load(open("plan.json"))["fingerprint"])')
sed "s|^timings: timings.yaml|timings: timings.yaml\ndeployment: {fingerprint: \"$fp\"}|" workload.yaml > pinned.yaml
"$banyan" plan pinned.yaml --deployment deployment.yaml --samples 2000 > /dev/null 2>&1 || fail "pinned workload refused"
expect_error 2 "pinned.yaml:7: this workload is for another deployment" pinned.yaml --deployment other.yaml
sed 's|/app/report, demand|/app/reportx, demand|' workload.yaml > unknown.yaml
expect_error 2 "unknown.yaml:14: unknown subtree \`/app/reportx\`" unknown.yaml --deployment deployment.yaml
sed 's|period: 1h|period: 0|' workload.yaml > zero.yaml
expect_error 2 "zero.yaml:28: workflow \`hourly\`: period must be positive" zero.yaml --deployment deployment.yaml
expect_error 2 "unknown --algorithm" workload.yaml --deployment deployment.yaml --algorithm best
# A 10 s deadline for the hourly eval (30-90 s responses) cannot be met, whatever is awake.
sed 's|deadline: 10m|deadline: 40s|' workload.yaml > tight.yaml
expect_error 1 "workflow \`hourly\`: the reliability target 0.99 cannot be met: at best" tight.yaml --deployment deployment.yaml
echo "periodic_cli_test: ok"
