#!/bin/sh
# Plans the periodic sample (banyan plan on samples/periodic/workload.yaml, with wake-up and
# response times given here as constants) and runs the plan on three loopback nodes (banyan launch
# --plan, ipc:// endpoints in a fresh folder). Checks what does not depend on the machine's speed:
# every instance of every workflow completed (none failed), render kept its count across its sleeps
# and wakes, the launch asked every change of the plan and none failed, and subtrees slept and
# woke. Deadlines are the benchmark's (tools/bench/periodic_sample.py), not this test's. A plan
# for another deployment is refused.
# Usage: three_nodes.sh BANYAN_CLI PERIODIC_APP WORKLOAD
set -eu
banyan=$1
app=$2
workload=$3
dir=$(mktemp -d /tmp/banyan-periodic-XXXXXX)
trap 'rm -rf "$dir"' EXIT

cat > "$dir/deployment.yaml" <<YAML
version: 1
nodes:
  - {name: n0, endpoint: "ipc://$dir/n0", capacity: {cpu: 2}}
  - {name: n1, endpoint: "ipc://$dir/n1", capacity: {cpu: 2}}
  - {name: n2, endpoint: "ipc://$dir/n2", capacity: {cpu: 2}}
assignments:
  /reports: n0
  /reports/sim: n1
  /reports/eval: n1
  /reports/render: n2
YAML
cp "$workload" "$dir/workload.yaml"
cat > "$dir/timings.yaml" <<YAML
format: banyan-timings
version: 1
subtrees:
  - {path: /reports/sim, wake: 0.45, response: 0.16}
  - {path: /reports/eval, wake: 0.3, response: 0.07}
  - {path: /reports/render, wake: 0.09, response: 0.012}
YAML
"$banyan" plan "$dir/workload.yaml" --deployment "$dir/deployment.yaml" --samples 10000 --out "$dir/plan.yaml" \
  > "$dir/plan.out" 2>&1 || { cat "$dir/plan.out"; echo "three_nodes.sh: banyan plan failed"; exit 1; }
"$banyan" launch "$dir/deployment.yaml" --plan "$dir/plan.yaml" --run-for 120s -- "$app" --duration 14s \
  > "$dir/run.log" 2>&1 || { cat "$dir/run.log"; echo "three_nodes.sh: the run failed"; exit 1; }

# A plan for another deployment (render on n1 here) is refused before any node starts: exit 2,
# naming the plan's line.
sed 's|/reports/render: n2|/reports/render: n1|' "$dir/deployment.yaml" > "$dir/other.yaml"
code=0
"$banyan" launch "$dir/other.yaml" --plan "$dir/plan.yaml" -- "$app" > "$dir/other.log" 2>&1 || code=$?
if [ "$code" -ne 2 ] || ! grep -Eq 'plan\.yaml:[0-9]+: this plan is for another deployment' "$dir/other.log"; then
  cat "$dir/other.log"
  echo "three_nodes.sh: a plan for another deployment was not refused with exit 2 (exit $code)"
  exit 1
fi

status=0
check() {
  if ! grep -Eq "$1" "$dir/run.log"; then
    echo "three_nodes.sh: missing: $2"
    status=1
  fi
}
check 'PERIODIC workflow regression instances 2 met [0-9]+ failed 0 ' "both regression instances, none failed"
check 'PERIODIC workflow evaluation instances 4 met [0-9]+ failed 0 ' "four evaluation instances, none failed"
check 'PERIODIC render kept its count: yes' "render's count kept across its sleeps"
check 'plan [^ ]+: [1-9][0-9]* wake\(s\) and [1-9][0-9]* sleep\(s\) asked, 0 failed' "every change of the plan asked, none failed"
check '`/reports/render` is asleep' "render put to sleep"
check 'woke `/reports/(sim|eval|render)`' "a subtree woken"
if [ "$status" -ne 0 ]; then cat "$dir/plan.yaml" "$dir/run.log"; fi
exit "$status"
