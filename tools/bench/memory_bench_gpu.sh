#!/usr/bin/env bash
# One command for the memory manager's GPU figures on the device machine: builds test_nn and memory_bench with
# CUDA (Release) in build/memory-gpu, runs the CUDA memory-manager test (MemoryExecutor.Cuda*: a swap
# plan on the GPU against the CPU reference), then memory_bench --backend cuda on a GPT-2-small-shaped
# model (12 layers, 768 channels, 12 heads, vocabulary 50304, 512 tokens) with keep-all at batch 8, writing the JSON to
# build/memory-gpu/memory_bench_gpu.json. PyTorch's anchor runs on the GPU when its torch has CUDA
# (Debian's python3-torch is a CPU build: then the JSON's "torch" is null and the log says so).
#   tools/bench/memory_bench_gpu.sh             the run above
#   tools/bench/memory_bench_gpu.sh <options>   memory_bench --backend cuda with these options instead
# BANYAN_BENCH_BUILD: the build folder.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BANYAN_BENCH_BUILD:-$root/build/memory-gpu}
mkdir -p "$build"
echo "memory_bench_gpu.sh: building in $build with $(nproc) jobs" >&2
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBANYAN_ENABLE_CUDA=ON > "$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; exit 1; }
cmake --build "$build" -j "$(nproc)" --target test_nn memory_bench >&2
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv >&2 || true
"$build/actors/nn/test_nn" --gtest_filter='MemoryExecutor.Cuda*:Cuda*' >&2
if [ $# -eq 0 ]; then
  set -- --layers 12 --channels 768 --heads 12 --seq 512 --vocab 50304 --batch 8 --steps 3 --rounds 3 \
    --fractions 0.6,0.4,0.3,0.2 --max-batch-factor 8
fi
"$build/tools/bench/memory_bench" --backend cuda --json "$@" > "$build/memory_bench_gpu.json"
echo "memory_bench_gpu.sh: JSON in $build/memory_bench_gpu.json" >&2
