#!/usr/bin/env bash
# Installs the SDK from a build tree into a scratch prefix and builds, out of tree and against it with
# find_package(banyan), what a user would: samples/hello, and the worked example of docs/install.md
# (tests/install/consumer), a project that enables CXX only (`project(weather LANGUAGES CXX)`), compiles
# a .capnp schema with capnp_generate_cpp and, when the prefix holds them, links banyan::trainer,
# banyan::cpu, banyan::partitioner, banyan::pipeline and banyan::runtime. Runs them: the installed
# headers, libraries and package config must be enough.
#   build_hello_against_install.sh BUILD_DIR SOURCE_DIR SCRATCH_DIR
set -euo pipefail
build=$1 src=$2 scratch=$3
rm -rf "$scratch"
mkdir -p "$scratch"
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
prefix=$scratch/prefix

cmake -S "$src/samples/hello" -B "$scratch/hello" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$scratch/hello" >/dev/null
out=$("$scratch/hello/hello" --report)
echo "$out" | tail -3
echo "$out" | grep -q "total edge traffic"

# The C++-only consumer: configuring it fails if the package config (or a dependency it finds) needs C.
consumer=$scratch/consumer
if ! cmake -S "$src/tests/install/consumer" -B "$consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
     -DCMAKE_PREFIX_PATH="$prefix" >"$scratch/consumer-configure.log" 2>&1; then
  cat "$scratch/consumer-configure.log"
  echo "FAIL: find_package(banyan) in a CXX-only project" >&2
  exit 1
fi
if grep -q '^CMAKE_C_COMPILER:' "$consumer/CMakeCache.txt"; then
  echo "FAIL: the consumer was meant to enable CXX only, but C is enabled" >&2
  exit 1
fi
cmake --build "$consumer" >/dev/null
out=$("$consumer/weather" --readings 4)
echo "$out"
echo "$out" | grep -qx "north: 8 readings, mean 11.25 C"
echo "$out" | grep -qx "south: 8 readings, mean 21.25 C"
# Every component library that was installed must be usable by a consumer too.
if ls "$prefix"/lib*/libbanyan_trainer.so >/dev/null 2>&1; then
  [ -x "$consumer/weather_trainer" ] || { echo "FAIL: banyan::trainer is installed but was not linked" >&2; exit 1; }
  "$consumer/weather_trainer" | grep "trainer backend cpu on 1 package, 2 NUMA domains, 4 cores"
fi
if ls "$prefix"/lib*/libbanyan_partitioner.so "$prefix"/lib*/libbanyan_pipeline.so >/dev/null 2>&1; then
  [ -x "$consumer/weather_tools" ] || { echo "FAIL: banyan::partitioner and banyan::pipeline are installed but were not linked" >&2; exit 1; }
  "$consumer/weather_tools" | grep "partitioning algorithms; pipeline action 2F0"
fi
