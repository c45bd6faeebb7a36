#!/usr/bin/env bash
# Regenerates tests/data/imatrix/smollm2-q4_1-c128.json: llama-imatrix's per-tensor
# summary (scripts/imatrix_summary.py: counts, sum and max of in_sum2) of SmolLM2-135M Q4_1
# on the US Constitution (Debian miscfiles' /usr/share/state/us-constitution.gz), 4 windows
# of 128 tokens. tests/native/imatrix_test.cpp checks `runnel imatrix` with the same
# arguments against it (CI has no llama-imatrix).
#
#   scripts/imatrix_reference.sh [MODEL]   (default models/SmolLM2-135M-Instruct.Q4_1.gguf)
#
# llama-imatrix comes from `scripts/build_llama_cpp.sh llama-imatrix` (built when missing).
# With RUNNEL_BIN set (e.g. build-release/runnel), the same run of runnel imatrix is
# compared tensor by tensor too.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
model="${1:-$root/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
llama="$root/build-llama.cpp/build/bin/llama-imatrix"
out="$root/tests/data/imatrix/smollm2-q4_1-c128.json"
args=(-c 128 --chunks 4 -t "$(nproc)")

[ -f "$model" ] || { echo "imatrix_reference: no model $model" >&2; exit 1; }
[ -f /usr/share/state/us-constitution.gz ] || { echo "imatrix_reference: apt-get install miscfiles" >&2; exit 1; }
[ -x "$llama" ] || "$root/scripts/build_llama_cpp.sh" llama-imatrix
scratch="$(mktemp -d "${TMPDIR:-/tmp}/imatrix-ref-XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
gzip -dc /usr/share/state/us-constitution.gz >"$scratch/us-constitution.txt"

"$llama" -m "$model" -f "$scratch/us-constitution.txt" -o "$scratch/llama.gguf" "${args[@]}" \
  >"$scratch/llama.log" 2>&1 || { cat "$scratch/llama.log" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
python3 "$root/scripts/imatrix_summary.py" "$scratch/llama.gguf" >"$out"
echo "imatrix_reference: llama.cpp $(git -C "$root/build-llama.cpp/src" log -1 --format=%h 2>/dev/null || echo '?') -> $out"
grep -o 'Final estimate: PPL = .*' "$scratch/llama.log" || true

if [ -n "${RUNNEL_BIN:-}" ]; then
  "$RUNNEL_BIN" imatrix -m "$model" -f "$scratch/us-constitution.txt" -o "$scratch/runnel.gguf" "${args[@]}" \
    >"$scratch/runnel.log" 2>&1 || { cat "$scratch/runnel.log" >&2; exit 1; }
  grep -o 'Final estimate: PPL = .*' "$scratch/runnel.log" || true
  python3 "$root/scripts/imatrix_summary.py" "$scratch/runnel.gguf" "$scratch/llama.gguf"
fi
