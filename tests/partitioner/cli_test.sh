#!/usr/bin/env bash
# End-to-end check of `banyan gen-tree` and `banyan partition`: files written, JSON parseable, the
# deployment readable again, bad input rejected with a message naming it. Usage: cli_test.sh BANYAN
set -euo pipefail
banyan=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
fail() { echo "cli_test: $*" >&2; exit 1; }

"$banyan" gen-tree -n 120 -k 4 --seed 5 --rack 2 -o p.json --cluster-out c.yaml --json > gen.json
grep -q '"components": 120' gen.json || fail "gen-tree summary: $(cat gen.json)"

"$banyan" partition p.json --cluster c.yaml --algo all --timeout 2 --out d.yaml --report r.json \
  --dot t.dot --json > out.json 2> progress.txt
/usr/bin/python3 - <<'PY'
import json
out = json.load(open("out.json"))
rep = json.load(open("r.json"))
assert out == rep, "report differs from --json output"
names = [r["algorithm"] for r in out["results"]]
assert sorted(names) == sorted(["bottom-up", "smt", "mip", "metis", "greedy", "round-robin", "round-robin-leaves", "hash", "random"]), names
best = min(r["cost"] for r in out["results"] if r["status"] in ("optimal", "feasible"))
assert out["cost"] == best, (out["cost"], best)
for r in out["results"]:
    if r["status"] in ("optimal", "feasible"):
        assert r["max_utilisation"] <= 1 + 1e-9, r
PY
grep -q '^assignments:' d.yaml || fail "deployment has no assignments"
grep -q 'digraph' t.dot || fail "no dot output"

# The written deployment is itself a valid cluster (its assignments are ignored when read as one).
"$banyan" partition p.json --cluster d.yaml --algo greedy > /dev/null

# Bad input: exit 1 and a message naming the file and place.
printf '{"format": "banyan-profile", "version": 1,\n "components": [}\n' > bad.json
if "$banyan" partition bad.json --cluster c.yaml 2> err.txt; then fail "malformed JSON accepted"; fi
grep -q 'bad.json:2:' err.txt || fail "no file:line for malformed JSON: $(cat err.txt)"
printf 'version: 1\nnodes:\n  - name: n0\n    capacity: {cpu: 1e-9}\n' > tiny.yaml
if "$banyan" partition p.json --cluster tiny.yaml 2> err.txt; then fail "over-capacity cluster accepted"; fi
grep -q 'exceeds total cpu capacity' err.txt || fail "no capacity numbers: $(cat err.txt)"
if "$banyan" partition p.json --cluster c.yaml --algo nope 2> err.txt; then fail "unknown algorithm accepted"; fi
grep -q 'unknown algorithm `nope`' err.txt || fail "$(cat err.txt)"
# A folder given as the profile is named as one; garbage is placed by line:col.
mkdir folder
if "$banyan" partition folder --cluster c.yaml 2> err.txt; then fail "a folder accepted as the profile"; fi
grep -q 'folder: is a directory' err.txt || fail "folder as profile: $(cat err.txt)"
printf '\n\nnot json at all\n' > garbage.json
if "$banyan" partition garbage.json --cluster c.yaml 2> err.txt; then fail "garbage accepted"; fi
grep -q 'garbage.json:3:[0-9]*: syntax error' err.txt || fail "no line:col for garbage: $(cat err.txt)"
# An edge listed twice is summed, and warned about once with both ends.
cat > dup.json <<'JSON'
{"version": 1, "components": [
  {"path": "/r", "parent": null, "load": {"cpu": 1}},
  {"path": "/r/a", "parent": "/r", "load": {"cpu": 1}}],
 "edges": [{"parent": "/r", "child": "/r/a", "messages": 2},
           {"parent": "/r", "child": "/r/a", "messages": 3},
           {"parent": "/r", "child": "/r/a", "messages": 4}]}
JSON
printf 'version: 1\nnodes:\n  - {name: n0, capacity: {cpu: 1}}\n  - {name: n1, capacity: {cpu: 1}}\n' > two.yaml
"$banyan" partition dup.json --cluster two.yaml --algo greedy --json > dup_out.json 2> err.txt || fail "repeated edge: $(cat err.txt)"
[ "$(grep -c 'is listed again' err.txt)" = 1 ] || fail "repeated edge not warned once: $(cat err.txt)"
grep -q 'dup.json:5:12: edges\[1\]: `/r` -> `/r/a` is listed again (first as edges\[0\])' err.txt || fail "warning: $(cat err.txt)"
/usr/bin/python3 -c 'import json,sys; c=json.load(open("dup_out.json"))["cost"]; assert c == 9, c' || fail "repeated edge not summed: $(cat dup_out.json)"
echo "cli_test: ok"
