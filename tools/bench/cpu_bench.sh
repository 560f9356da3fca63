#!/usr/bin/env bash
# One command for issue 14's figures on a many-core machine (e.g. the 16-core device machine):
# builds cpu_bench (Release, no tests) in build/cpu-bench and runs the full sweep (GPT and MLP, per-core
# workers vs one instance on as many OpenMP threads), writing the table to stdout and the JSON to
# build/cpu-bench/cpu_bench.json. Extra arguments go to cpu_bench (e.g. --rounds 5 --steps 20).
#   tools/bench/cpu_bench.sh [cpu_bench options]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BANYAN_BENCH_BUILD:-$root/build/cpu-bench}
jobs=$(nproc)
echo "cpu_bench.sh: building cpu_bench in $build with $jobs jobs" >&2
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBANYAN_ENABLE_TESTING=OFF \
  -DBANYAN_ENABLE_CUDA=OFF > "$build.configure.log" 2>&1 || { cat "$build.configure.log" >&2; exit 1; }
cmake --build "$build" -j "$jobs" --target cpu_bench >&2
bench=$build/tools/bench/cpu_bench
lscpu | grep -E "^(Model name|Socket|Core|Thread|NUMA node\(s\))" >&2 || true
"$bench" --results "$build/cpu_bench.json" --rounds 5 --steps 10 --gpt-batches 16,32,64 --mlp-batches 256,1024,4096 "$@"
echo "cpu_bench.sh: JSON in $build/cpu_bench.json" >&2
