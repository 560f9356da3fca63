#!/bin/sh
# `banyan pipeline ... --json` reports errors as JSON on stdout: a table with a
# huge microbatch number is refused with exit code 2, and stdout parses as {"error", "exit_code"}.
# Usage: cli_json_errors.sh BANYAN_CLI
set -u
cli=$1
dir=$(mktemp -d /tmp/banyan-pipe-XXXXXX)
trap 'rm -rf "$dir"' EXIT
printf '0F0,0F999999999\n' > "$dir/huge.csv"
"$cli" pipeline validate "$dir/huge.csv" --json > "$dir/out.json" 2> "$dir/err.txt"
rc=$?
cat "$dir/out.json" "$dir/err.txt"
test "$rc" -eq 2 || { echo "exit code $rc, expected 2"; exit 1; }
python3 - "$dir/out.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["exit_code"] == 2, j
assert "huge.csv" in j["error"] and "only 2 compute actions" in j["error"], j
PY
# Search with per-layer costs: the split comes back in --json, and the same seed
# and --budget give the same result twice; simulate refuses a split that does not add up.
costs=$(dirname "$0")/../../actors/pipeline/examples/gpt2_lm_head_layers.json
for i in 1 2; do
  "$cli" pipeline search -p 4 -m 8 --costs "$costs" --budget 600 --seed 3 --json > "$dir/s$i.json" 2> /dev/null || { echo "search failed"; exit 1; }
done
python3 - "$dir/s1.json" "$dir/s2.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert sum(a["best"]["layers_per_stage"]) == 14 and len(a["best"]["cuts"]) == len(a["best"]["layers_per_stage"]) + 1, a["best"]
assert a["best"]["sim"] == b["best"]["sim"] and a["best"]["cuts"] == b["best"]["cuts"] and a["evaluations"] == b["evaluations"], (a, b)
assert a["lower_bound"] <= a["best"]["sim"]["makespan"] + 1e-9 and a["seed"] == 3 and a["budget"] == 600, a
PY
# The written program says its split in a comment, and the summary how train_gpt runs it.
"$cli" pipeline search -p 4 -m 8 --costs "$costs" --budget 600 --seed 3 --out-dsl "$dir/s.pipe" > "$dir/s.txt" 2> /dev/null || { echo "search --out-dsl failed"; exit 1; }
split=$(python3 -c 'import json, sys; print(",".join(map(str, json.load(open(sys.argv[1]))["best"]["layers_per_stage"])))' "$dir/s1.json")
head -1 "$dir/s.pipe" | grep -qx "# layers per stage: $split (train_gpt --layers-per-stage $split)" || { head -2 "$dir/s.pipe"; exit 1; }
grep -q "^run it: train_gpt --pipeline 4 --microbatches 8 --schedule $dir/s.pipe.* --layers-per-stage $split\$" "$dir/s.txt" || { cat "$dir/s.txt"; exit 1; }
"$cli" pipeline simulate 1f1b -p 4 -m 8 --costs "$costs" --layers-per-stage 5,4,4,2 --json > "$dir/bad.json" 2> /dev/null
rc=$?
test "$rc" -eq 2 || { echo "--layers-per-stage 5,4,4,2: exit code $rc, expected 2"; exit 1; }
grep -q "sums to 15 layers" "$dir/bad.json" || { cat "$dir/bad.json"; exit 1; }
# --latency on the command line overrides the cost file's (0 in the example): 1f1b at p=4 has at
# least 2(p-1) messages on its critical path, so 1 time unit of latency adds at least 6.
for l in 0 1; do
  "$cli" pipeline simulate 1f1b -p 4 -m 8 --costs "$costs" --latency $l --json > "$dir/lat$l.json" 2> /dev/null || { echo "simulate --latency $l failed"; exit 1; }
done
python3 - "$dir/lat0.json" "$dir/lat1.json" <<'PY'
import json, sys
a, b = (json.load(open(p))["makespan"] for p in sys.argv[1:])
assert b >= a + 6 - 1e-9, (a, b)
PY
# A program nested 20,000 deep is a parse error naming file:line:col (exit 2), not a stack overflow.
python3 -c "print('rank all: ' + '(' * 20000 + 'F' + ')' * 20000 + '* B*')" > "$dir/deep.pipe"
"$cli" pipeline show "$dir/deep.pipe" -p 2 -m 4 --json > "$dir/deep.json" 2> /dev/null
rc=$?
test "$rc" -eq 2 || { echo "deep.pipe: exit code $rc, expected 2"; exit 1; }
grep -q "deep.pipe:1:111: nested deeper than 100 levels" "$dir/deep.json" || { cat "$dir/deep.json"; exit 1; }
