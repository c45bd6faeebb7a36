#!/usr/bin/env bash
# Writes the synthetic benchmark models: the shapes of Llama-3.2-1B and Llama-3.1-8B
# (../shared/MODELS.md) in Q8_0, Q4_0 and Q4_K_M, with random weights quantized by
# runnel's own reference quantizers and SmolLM2's real tokenizer padded to the
# 128256-token vocabulary (`runnel synth-model --help`). Speed and memory only: the
# text they generate is noise.
#
#   scripts/gen_bench_models.sh [1b|8b|all] [TYPES...]   (default: all, q8_0 q4_0 q4_k_m)
# Files go to models/bench/ (git-ignored); existing ones are kept. Sizes: 1B ~0.8-1.5
# GB each, 8B ~4.6-8.5 GB each.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
binary="${RUNNEL_BIN:-$root/build-release/runnel}"
tokenizer="${RUNNEL_MODEL:-$root/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
which="${1:-all}"
shift || true
types=("$@")
[ "${#types[@]}" -gt 0 ] || types=(q8_0 q4_0 q4_k_m)
[ -x "$binary" ] || { echo "gen_bench_models: no runnel binary at $binary (build it first)" >&2; exit 1; }
[ -f "$tokenizer" ] || "$root/scripts/fetch_models.sh"

case "$which" in
  1b) shapes=(1b) ;;
  8b) shapes=(8b) ;;
  all) shapes=(1b 8b) ;;
  *) echo "gen_bench_models: expected 1b, 8b or all, got '$which'" >&2; exit 2 ;;
esac

mkdir -p "$root/models/bench"
for shape in "${shapes[@]}"; do
  for type in "${types[@]}"; do
    out="$root/models/bench/llama-$shape-$type.gguf"
    if [ -f "$out" ]; then
      echo "gen_bench_models: $out exists"
      continue
    fi
    "$binary" synth-model --shape "llama-$shape" --type "$type" --tokenizer-from "$tokenizer" -o "$out"
  done
done
