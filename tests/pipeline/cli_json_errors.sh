#!/bin/sh
# `banyan pipeline ... --json` reports errors as JSON on stdout (issue #12 item 7): a table with a
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
