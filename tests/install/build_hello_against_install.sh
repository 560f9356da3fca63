#!/usr/bin/env bash
# Installs the SDK from a build tree into a scratch prefix, builds samples/hello out of tree against it
# with find_package(banyan), and runs it: the installed headers, libraries and package config must be
# enough for a user's app.
#   build_hello_against_install.sh BUILD_DIR SOURCE_DIR SCRATCH_DIR
set -euo pipefail
build=$1 src=$2 scratch=$3
rm -rf "$scratch"
mkdir -p "$scratch"
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
cmake -S "$src/samples/hello" -B "$scratch/hello" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/hello" >/dev/null
out=$("$scratch/hello/hello" --report)
echo "$out" | tail -3
echo "$out" | grep -q "total edge traffic"
