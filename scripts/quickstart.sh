#!/usr/bin/env bash
# From a fresh checkout to generated text: installs what building and running need
# (not the test toolchain), builds the Release binary and runs SmolLM2-135M-Instruct on
# a chat prompt (README command 1). It leaves `git status` as it found it.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

scripts/setup.sh
# Without the tests: Catch2 comes with the test toolchain (scripts/setup.sh --tests).
cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DRUNNEL_TESTS=OFF
ninja -C build-release -j"${RUNNEL_JOBS:-2}" runnel

# The model is instruction-tuned: --chat sends the question through its own chat
# template (ChatML, with its default system message) and prints only the reply.
question='What are three good reasons to learn to cook at home?'
echo
echo "==== build-release/runnel run -m models/SmolLM2-135M-Instruct.Q4_1.gguf --chat -p '$question' -n 64"
build-release/runnel run -m models/SmolLM2-135M-Instruct.Q4_1.gguf --chat -p "$question" -n 64
echo
echo "Talk to it: build-release/runnel chat -m models/SmolLM2-135M-Instruct.Q4_1.gguf"
