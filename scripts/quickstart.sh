#!/usr/bin/env bash
# From a fresh checkout to generated text: installs what is missing, builds the
# Release binary and runs SmolLM2-135M-Instruct on a chat prompt (README command 1).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

scripts/setup.sh
cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release
ninja -C build-release -j"${RUNNEL_JOBS:-2}" runnel

# The model is instruction-tuned with ChatML: --special lets the markup become its
# control tokens instead of plain text.
prompt=$'<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nWhat are three good reasons to learn to cook at home?<|im_end|>\n<|im_start|>assistant\n'
echo
echo "==== build-release/runnel run -m models/SmolLM2-135M-Instruct.Q4_1.gguf -p <chat prompt> -n 64"
build-release/runnel run -m models/SmolLM2-135M-Instruct.Q4_1.gguf -p "$prompt" -n 64 --special
