#!/usr/bin/env bash
# build-llama-server.sh SOURCE_DIR [BUILD_DIR]: builds llama.cpp's llama-server, CPU only,
# without libcurl (no model downloads), into BUILD_DIR (default SOURCE_DIR/../llama-build).
# About 2-3 minutes with -j2. Prints the binary's path.
set -euo pipefail
src=$(cd "${1:?usage: build-llama-server.sh SOURCE_DIR [BUILD_DIR]}" && pwd)
build=${2:-$src/../llama-build}
jobs=${JOBS:-2}

cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DLLAMA_CURL=OFF -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=ON -DLLAMA_BUILD_SERVER=ON >&2
cmake --build "$build" --target llama-server -j "$jobs" >&2
echo "$(cd "$build" && pwd)/bin/llama-server"
