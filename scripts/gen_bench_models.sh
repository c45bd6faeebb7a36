#!/usr/bin/env bash
# Writes the synthetic benchmark models: the shapes of Llama-3.2-1B and Llama-3.1-8B
# (../shared/MODELS.md), Gemma-3-1B (sliding-window layers, 262k vocabulary) and
# Qwen3-4B (q/k norms), and the mixture-of-experts Qwen3-30B-A3B (128 experts, 8 a
# token) and moe-small (32 experts, 4 a token) in Q8_0, Q4_0 and Q4_K_M, with random weights quantized by
# runnel's own reference quantizers and SmolLM2's real tokenizer padded to each shape's
# vocabulary (`runnel synth-model --help`). Speed and memory only: the text they
# generate is noise.
#
#   scripts/gen_bench_models.sh [1b|8b|llama|gemma3-1b|qwen3-4b|qwen3-30b-a3b|moe-small|all] [TYPES...]
#     default: llama (= 1b and 8b), q8_0 q4_0 q4_k_m; all: every shape but qwen3-30b-a3b
# Files go to models/bench/ (git-ignored; llama-1b-*, llama-8b-*, gemma3-1b-*,
# qwen3-4b-*, qwen3-30b-a3b-*, moe-small-*); existing ones are kept. Sizes: 1B ~0.8-1.5 GB
# each, Gemma-3-1B ~0.8-1.4, Qwen3-4B ~2.4-4.3, 8B ~4.6-8.5, Qwen3-30B-A3B ~17-32,
# moe-small ~0.7-1.3.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
binary="${RUNNEL_BIN:-$root/build-release/runnel}"
tokenizer="${RUNNEL_MODEL:-$root/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
which="${1:-llama}"
shift || true
types=("$@")
[ "${#types[@]}" -gt 0 ] || types=(q8_0 q4_0 q4_k_m)
[ -x "$binary" ] || { echo "gen_bench_models: no runnel binary at $binary (build it first)" >&2; exit 1; }
[ -f "$tokenizer" ] || "$root/scripts/fetch_models.sh"

case "$which" in
  1b | 8b) shapes=("llama-$which") ;;
  gemma3-1b | qwen3-4b | qwen3-30b-a3b | moe-small) shapes=("$which") ;;
  llama) shapes=(llama-1b llama-8b) ;;
  all) shapes=(llama-1b llama-8b gemma3-1b qwen3-4b moe-small) ;;
  *) echo "gen_bench_models: expected 1b, 8b, llama, gemma3-1b, qwen3-4b, qwen3-30b-a3b, moe-small or all, got '$which'" >&2; exit 2 ;;
esac

mkdir -p "$root/models/bench"
for shape in "${shapes[@]}"; do
  for type in "${types[@]}"; do
    out="$root/models/bench/$shape-$type.gguf"
    if [ -f "$out" ]; then
      echo "gen_bench_models: $out exists"
      continue
    fi
    "$binary" synth-model --shape "$shape" --type "$type" --tokenizer-from "$tokenizer" -o "$out"
  done
done
