#!/usr/bin/env bash
# End-to-end check of `banyan partition --current --migration-cost`: on a five-component profile where
# exactly one subtree (/r/a/x, 40 bytes) pays for its move at alpha 1 and not at alpha 2, the JSON
# names the move, the costs before/after and the bytes; the written deployment reads back and costs
# what the plan says; bad input (a node not in the cluster, a path not in the profile, a negative
# alpha) exits 2 naming it. Usage: migration_cli_test.sh BANYAN
set -euo pipefail
banyan=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
fail() { echo "migration_cli_test: $*" >&2; exit 1; }

cat > p.json <<'JSON'
{"format": "banyan-profile", "version": 1,
 "components": [
  {"path": "/r", "parent": null, "load": {"cpu": 1, "memory": 10}},
  {"path": "/r/a", "parent": "/r", "load": {"cpu": 1, "memory": 100}},
  {"path": "/r/a/x", "parent": "/r/a", "load": {"cpu": 1, "memory": 40}},
  {"path": "/r/b", "parent": "/r", "load": {"cpu": 1, "memory": 1000}},
  {"path": "/r/b/y", "parent": "/r/b", "load": {"cpu": 1, "memory": 5}}],
 "edges": [
  {"parent": "/r", "child": "/r/a", "messages": 1},
  {"parent": "/r/a", "child": "/r/a/x", "messages": 50},
  {"parent": "/r", "child": "/r/b", "messages": 1},
  {"parent": "/r/b", "child": "/r/b/y", "messages": 2}]}
JSON
cat > d.yaml <<'YAML'
version: 1
nodes:
  - name: n0
    endpoint: tcp://127.0.0.1:7100
    capacity: {cpu: 3}
  - name: n1
    endpoint: tcp://127.0.0.1:7101
    capacity: {cpu: 3}
assignments:
  /r: n0
  /r/a/x: n1
  /r/b: n1
YAML

"$banyan" partition p.json --current d.yaml --migration-cost 1 --out new.yaml --json > plan.json 2> err.txt \
  || fail "plan failed: $(cat err.txt)"
/usr/bin/python3 - <<'PY'
import json
m = json.load(open("plan.json"))["migration"]
assert m["moves"] == [{"path": "/r/a/x", "from": "n1", "to": "n0", "components": 1, "state_bytes": 40}], m["moves"]
assert (m["cost_before"], m["cost_after"], m["bytes_moved"], m["objective"]) == (51, 1, 40, 41), m
assert m["current_feasible"] is True, m
PY
grep -q '/r/b: n1' new.yaml || fail "new deployment: $(cat new.yaml)"
if grep -q '/r/a/x' new.yaml; then fail "/r/a/x still assigned apart: $(cat new.yaml)"; fi
# The written deployment, as the new current one, has nothing left worth moving.
"$banyan" partition p.json --current new.yaml --migration-cost 0 --json > again.json
/usr/bin/python3 -c 'import json; m = json.load(open("again.json"))["migration"]; assert m["moves"] == [] and m["cost_before"] == 1, m'

# At 2 per byte, moving /r/a/x (80) costs more than the 50 it saves: nothing moves.
"$banyan" partition p.json --current d.yaml --migration-cost 2 --json > stay.json
/usr/bin/python3 -c 'import json; m = json.load(open("stay.json"))["migration"]; assert m["moves"] == [] and m["objective"] == 51, m'
"$banyan" partition p.json --current d.yaml --migration-cost 1 > table.txt
grep -q '/r/a/x *n1 *n0' table.txt || fail "no move row: $(cat table.txt)"
grep -q '51 before, 1 after; 40 bytes' table.txt || fail "no costs: $(cat table.txt)"

# Bad input: exit 2, naming it.
expect_2() {  # expect_2 PATTERN ARGS...
  local pattern=$1; shift
  local rc=0
  "$banyan" partition p.json "$@" > /dev/null 2> err.txt || rc=$?
  [ "$rc" = 2 ] || fail "exit $rc, not 2, for $*: $(cat err.txt)"
  grep -q -- "$pattern" err.txt || fail "no \`$pattern\` for $*: $(cat err.txt)"
}
expect_2 'non-negative' --current d.yaml --migration-cost=-1
sed 's#/r/b: n1#/r/zz: n1#' d.yaml > badpath.yaml
expect_2 'badpath.yaml:12: assignment `/r/zz` names no component' --current badpath.yaml
printf 'version: 1\nnodes:\n  - name: n0\n    capacity: {cpu: 3}\n  - name: m1\n    capacity: {cpu: 3}\n' > other.yaml
expect_2 'assignment `/r/a/x` is on node `n1`, which cluster other.yaml does not have' --cluster other.yaml --current d.yaml
echo "migration_cli_test: ok"
