#!/usr/bin/env bash
# One command for the per-core workers' figures on a many-core machine (e.g. the 16-core device machine):
# builds cpu_bench (Release, no tests, no CUDA) in build/cpu-bench and runs the full sweep (GPT and MLP,
# per-core workers vs one instance on as many OpenMP threads, same cores, same global batch), printing
# the table and writing the JSON to <build>/cpu_bench.json.
#   tools/bench/cpu_bench.sh                 the full sweep (GPT batches 16,32,64; MLP 256,1024,4096;
#                                            5 rounds of 10 steps)
#   tools/bench/cpu_bench.sh <options>       cpu_bench with these options instead of the sweep's
# BANYAN_BENCH_BUILD: the build folder; BANYAN_BENCH_BIN: an already built cpu_bench (no build).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BANYAN_BENCH_BUILD:-$root/build/cpu-bench}
bench=${BANYAN_BENCH_BIN:-}
if [ -z "$bench" ]; then
  jobs=$(nproc)
  echo "cpu_bench.sh: building cpu_bench in $build with $jobs jobs" >&2
  mkdir -p "$build"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBANYAN_ENABLE_TESTING=OFF \
    -DBANYAN_ENABLE_CUDA=OFF > "$build/configure.log" 2>&1 || { cat "$build/configure.log" >&2; exit 1; }
  cmake --build "$build" -j "$jobs" --target cpu_bench >&2
  bench=$build/tools/bench/cpu_bench
fi
mkdir -p "$build"
lscpu 2>/dev/null | grep -E "^(Model name|Socket|Core|Thread|NUMA node\(s\))" >&2 || true
if [ $# -eq 0 ]; then
  set -- --rounds 5 --steps 10 --gpt-batches 16,32,64 --mlp-batches 256,1024,4096
fi
"$bench" --results "$build/cpu_bench.json" "$@"
echo "cpu_bench.sh: JSON in $build/cpu_bench.json" >&2
