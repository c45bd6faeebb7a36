#!/usr/bin/env bash
# Builds llama.cpp's own tools, the native peers of the benchmarks (llama-bench,
# llama-server, llama-perplexity, llama-quantize), from the llama.cpp source that
# node-llama-cpp ships (tests/parity/node_modules/node-llama-cpp/llama/gitRelease.bundle,
# installed by `scripts/setup.sh --tests`). Nothing of it is committed: the clone and
# the build go to build-llama.cpp/ (git-ignored), the binaries (and the shared libraries
# beside them) to build-llama.cpp/build/bin/.
#
#   scripts/build_llama_cpp.sh [TARGET...]   (default: llama-bench llama-server
#                                            llama-perplexity llama-quantize)
# A second run reuses the clone and the build (ccache where installed). -DGGML_NATIVE=ON:
# the binaries use every ISA extension of this CPU, as a user building llama.cpp gets.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bundle="$root/tests/parity/node_modules/node-llama-cpp/llama/gitRelease.bundle"
out="$root/build-llama.cpp"
targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=(llama-bench llama-server llama-perplexity llama-quantize)

[ -f "$bundle" ] || { echo "build_llama_cpp: no $bundle (run scripts/setup.sh --tests)" >&2; exit 1; }
command -v cmake >/dev/null || { echo "build_llama_cpp: cmake is missing (apt-get install cmake)" >&2; exit 1; }

if [ ! -d "$out/src/.git" ]; then
  rm -rf "$out/src"
  mkdir -p "$out"
  git clone --quiet "$bundle" "$out/src"
fi
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$out/src" -B "$out/build" "${generator[@]}" "${launcher[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON >/dev/null
cmake --build "$out/build" --parallel "$(nproc)" --target "${targets[@]}"
echo "build_llama_cpp: llama.cpp $(git -C "$out/src" log -1 --format='%h') -> $out/build/bin:"
for t in "${targets[@]}"; do ls -l "$out/build/bin/$t"; done
