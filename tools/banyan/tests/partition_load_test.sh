#!/usr/bin/env bash
# `banyan partition --load messages` and the warning about CPU loads measured too thinly.
# Two profiles of the same app — the same messages and edge traffic, CPU loads that differ
# only by measurement noise, from a 0.2 s window — must give the same deployment by messages, while
# by CPU time they give different ones and a warning; a well-measured profile gives no warning.
#   partition_load_test.sh BANYAN
set -euo pipefail
banyan=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
fail() { echo "partition_load_test: $*" >&2; exit 1; }

# profile NAME WINDOW_S CPU... : the app /app{a{a1,a2,a3},b{b1,b2,b3}} with the given CPU seconds for
# app a b a1 a2 a3 b1 b2 b3 (in that order); messages and edges are the same in every profile.
profile() {
  local name=$1 window=$2
  shift 2
  local paths=(/app /app/a /app/b /app/a/a1 /app/a/a2 /app/a/a3 /app/b/b1 /app/b/b2 /app/b/b3)
  local parents=(null '"/app"' '"/app"' '"/app/a"' '"/app/a"' '"/app/a"' '"/app/b"' '"/app/b"' '"/app/b"')
  local messages=(100 200 200 1000 1000 1000 1000 1000 1000)
  {
    echo "{\"format\": \"banyan-profile\", \"version\": 1, \"mode\": \"hier\", \"duration_s\": $window,"
    echo ' "components": ['
    for i in "${!paths[@]}"; do
      [ "$i" -gt 0 ] && echo ","
      printf '  {"path": "%s", "parent": %s, "kind": "leaf", "load": {"cpu": %s, "messages": %s, "memory": 0}}' \
        "${paths[$i]}" "${parents[$i]}" "$1" "${messages[$i]}"
      shift
    done
    echo '],'
    echo ' "edges": [{"parent": "/app", "child": "/app/a", "messages": 50, "bytes": 800},'
    echo '           {"parent": "/app", "child": "/app/b", "messages": 40, "bytes": 640},'
    local first=1
    for leaf in a/a1 a/a2 a/a3 b/b1 b/b2 b/b3; do
      [ $first = 1 ] || echo ","
      first=0
      printf '  {"parent": "/app/%s", "child": "/app/%s", "messages": 1000, "bytes": 16000}' "${leaf%/*}" "$leaf"
    done
    echo ']}'
  } > "$name"
}
#                       app     a       b       a1      a2      a3      b1      b2      b3
profile run1.json 0.2   0.0001  0.0001  0.0001  0.0012  0.0001  0.0001  0.0001  0.0001  0.0011
profile run2.json 0.2   0.0001  0.0001  0.0001  0.0010  0.0010  0.0010  0.0001  0.0001  0.0001
profile long.json 60    0.20    0.40    0.40    2.0     2.0     2.0     2.0     2.0     2.0
printf 'version: 1\nnodes:\n  - {name: n0, capacity: {cpu: "60%%"}}\n  - {name: n1, capacity: {cpu: "60%%"}}\n' > c.yaml

assignments() { sed -n '/^assignments:/,$p' "$1"; }

# By messages: the two noisy runs give the same deployment, and no warning about CPU noise.
for run in run1 run2; do
  "$banyan" partition $run.json --cluster c.yaml --load messages --out $run-msg.yaml --json > $run-msg.json 2> $run-msg.err \
    || fail "--load messages failed on $run: $(cat $run-msg.err)"
  grep -q '"unit": "messages"' $run-msg.json || fail "$run: --json does not say the load unit: $(cat $run-msg.json)"
  ! grep -q "too noisy" $run-msg.err || fail "$run: --load messages warned about CPU noise: $(cat $run-msg.err)"
done
[ -n "$(assignments run1-msg.yaml)" ] || fail "no assignments written"
diff <(assignments run1-msg.yaml) <(assignments run2-msg.yaml) >/dev/null \
  || fail "--load messages gave different deployments for the same app: $(diff <(assignments run1-msg.yaml) <(assignments run2-msg.yaml))"

# By CPU time: the same two runs give different partitions (the noise the option exists for), and
# both warn, naming the window and the way out.
for run in run1 run2; do
  "$banyan" partition $run.json --cluster c.yaml --out $run-cpu.yaml --json > $run-cpu.json 2> $run-cpu.err \
    || fail "--load cpu failed on $run: $(cat $run-cpu.err)"
  grep -q "too noisy to trust" $run-cpu.err || fail "$run: no warning about thin CPU loads: $(cat $run-cpu.err)"
  grep -q "0.20 s window" $run-cpu.err || fail "$run: the warning does not name the window: $(cat $run-cpu.err)"
  grep -q -- "--load messages" $run-cpu.err || fail "$run: the warning does not suggest --load messages"
  grep -q '"cpu_confidence": "low"' $run-cpu.json || fail "$run: --json does not report low confidence"
done
cost() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cost"])' "$1"; }
[ "$(cost run1-cpu.json)" != "$(cost run2-cpu.json)" ] \
  || fail "expected the noisy CPU loads to partition differently (costs $(cost run1-cpu.json), $(cost run2-cpu.json)); the test lost its point"

# A long, well-sampled run: no warning, high confidence.
"$banyan" partition long.json --cluster c.yaml --json > long.json.out 2> long.err || fail "long: $(cat long.err)"
! grep -q "too noisy" long.err || fail "a well-measured profile was warned about: $(cat long.err)"
grep -q '"cpu_confidence": "high"' long.json.out || fail "long: confidence is not high: $(cat long.json.out)"

# A profile without message counts (gen-tree's) cannot be partitioned by messages: exit 2, saying why.
"$banyan" gen-tree -n 20 -k 2 --seed 3 -o gen.json --cluster gen.yaml > /dev/null
if "$banyan" partition gen.json --cluster gen.yaml --load messages 2> gen.err > /dev/null; then
  fail "--load messages accepted a profile without message counts"
fi
grep -q "no message counts" gen.err || fail "unclear error: $(cat gen.err)"
if "$banyan" partition run1.json --cluster c.yaml --load bytes 2> bad.err > /dev/null; then fail "--load bytes accepted"; fi
grep -q "must be \`cpu\` or \`messages\`" bad.err || fail "unclear error: $(cat bad.err)"
echo "partition_load_test: ok"
