#!/bin/sh
# Runs the factory sample in one process and on three loopback nodes (ipc:// endpoints in a fresh
# folder) whose deployment separates every line (on n0) from all of its machines (on n1 and n2),
# the ledger from its dynamic auditor and the packers from the quality service; compares the
# result lines (`FACTORY ...`, sorted) and checks that each press jammed once and was restarted.
# Usage: three_nodes.sh BANYAN_CLI FACTORY_APP
set -eu
banyan=$1
factory=$2
dir=$(mktemp -d /tmp/banyan-factory-XXXXXX)
trap 'rm -rf "$dir"' EXIT

cat > "$dir/deployment.yaml" <<YAML
version: 1
nodes:
  - {name: n0, endpoint: "ipc://$dir/n0", capacity: {cpu: 1}}
  - {name: n1, endpoint: "ipc://$dir/n1", capacity: {cpu: 1}}
  - {name: n2, endpoint: "ipc://$dir/n2", capacity: {cpu: 1}}
assignments:
  /factory: n0
  /factory/line1/feeder: n1
  /factory/line1/cutter: n1
  /factory/line1/press: n1
  /factory/line1/packer: n1
  /factory/line2/feeder: n2
  /factory/line2/cutter: n1
  /factory/line2/press: n2
  /factory/line2/packer: n1
  /factory/line3/feeder: n2
  /factory/line3/cutter: n2
  /factory/line3/press: n1
  /factory/line3/packer: n2
  /factory/quality: n2
  /factory/ledger/auditor: n1
YAML

# The result lines of a run: node prefixes (`[n1] `) dropped, sorted.
result() { sed 's/^\[[^]]*\] //' "$1" | grep '^FACTORY ' | sort; }

status=0
timeout 60 "$factory" --threads 2 > "$dir/one.out" 2>&1 || status=$?
if [ "$status" -ne 0 ]; then echo "one process: exit $status"; cat "$dir/one.out"; exit 1; fi
timeout 90 "$banyan" launch "$dir/deployment.yaml" --run-for 60s -- "$factory" --threads 2 > "$dir/three.out" 2>&1 || status=$?
if [ "$status" -ne 0 ]; then echo "three nodes: exit $status"; cat "$dir/three.out"; exit 1; fi

result "$dir/one.out" > "$dir/one.result"
result "$dir/three.out" > "$dir/three.result"
echo "one process:"; cat "$dir/one.result"
if ! diff -u "$dir/one.result" "$dir/three.result"; then
  echo "three nodes differ from one process; their output:"; cat "$dir/three.out"; exit 1
fi
for want in "FACTORY FAILURE /factory/line1/press: jammed on part 3" "FACTORY FAILURE /factory/line2/press: jammed on part 3" \
            "FACTORY FAILURE /factory/line3/press: jammed on part 3" "FACTORY AUDIT checked" \
            "FACTORY DOWN /factory/ledger/auditor: stopped" "FACTORY line 3: 1"; do
  if ! grep -q "^$want" "$dir/one.result"; then echo "missing: $want"; cat "$dir/one.out"; exit 1; fi
done
echo "three nodes: the same"
