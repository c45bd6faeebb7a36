#!/usr/bin/env bash
# runnel quantize against llama-quantize on the same input, type and thread count:
# wall time and peak RSS of each (GNU time), the ratio, and whether the two files are
# byte-identical. Outputs are written to a scratch folder and deleted after each run
# (an 8B-shaped Q8_0 is 8.5 GB), so the disk needs room for one output at a time.
#
#   scripts/quantize_bench.sh [-t THREADS] [--runs N] [--keep-dir DIR] [--imatrix FILE] IN.gguf TYPE [TYPE ...]
#
# --imatrix FILE gives both tools the same importance matrix (runnel imatrix's or
# llama-imatrix's); the files are byte-identical then too (the path is recorded in them).
#
# Prints one line per type: `TYPE  runnel S s (RSS MiB)  llama-quantize S s (RSS MiB)  ratio X
# (llama/runnel: above 1 = runnel faster)  files identical|differ`, medians over --runs.
# llama-quantize comes from `scripts/build_llama_cpp.sh llama-quantize` (LLAMA_QUANTIZE
# overrides), runnel from build-release/runnel (RUNNEL_BIN overrides).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
runnel="${RUNNEL_BIN:-$root/build-release/runnel}"
llama="${LLAMA_QUANTIZE:-$root/build-llama.cpp/build/bin/llama-quantize}"
threads="$(nproc)"
runs=1
scratch=""
imatrix=()
while [ $# -gt 0 ]; do
  case "$1" in
    -t) threads="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --keep-dir) scratch="$2"; shift 2 ;;
    --imatrix) imatrix=(--imatrix "$2"); shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || { echo "usage: $0 [-t THREADS] [--runs N] IN.gguf TYPE [TYPE ...]" >&2; exit 2; }
input="$1"; shift
[ -f "$input" ] || { echo "quantize_bench: no input $input" >&2; exit 1; }
[ -x "$runnel" ] || { echo "quantize_bench: no runnel at $runnel (set RUNNEL_BIN)" >&2; exit 1; }
[ -x "$llama" ] || { echo "quantize_bench: no llama-quantize at $llama (scripts/build_llama_cpp.sh llama-quantize)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "quantize_bench: needs GNU time (apt-get install time)" >&2; exit 1; }
if [ -z "$scratch" ]; then
  scratch="$(mktemp -d "${TMPDIR:-/tmp}/quantize-bench-XXXXXX")"
  trap 'rm -rf "$scratch"' EXIT
fi

# Runs "$@" under GNU time; prints "SECONDS RSS_KB".
timed() {
  local log="$scratch/time.log"
  /usr/bin/time -f "%e %M" -o "$log" "$@" >/dev/null 2>"$scratch/stderr.log" || {
    echo "quantize_bench: failed: $*" >&2; cat "$scratch/stderr.log" >&2; exit 1; }
  tail -1 "$log"
}

median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }

echo "input $input ($(du -h "$input" | cut -f1)), $threads threads, $runs run(s) each"
for type in "$@"; do
  rt=(); rr=(); lt=(); lr=(); same="identical"
  for ((i = 0; i < runs; ++i)); do
    read -r s kb < <(timed "$runnel" quantize -t "$threads" "${imatrix[@]}" "$input" "$scratch/runnel.gguf" "$type")
    rt+=("$s"); rr+=("$kb")
    read -r s kb < <(timed "$llama" "${imatrix[@]}" "$input" "$scratch/llama.gguf" "$type" "$threads")
    lt+=("$s"); lr+=("$kb")
    cmp -s "$scratch/runnel.gguf" "$scratch/llama.gguf" || same="differ"
    rm -f "$scratch/runnel.gguf" "$scratch/llama.gguf"
  done
  r_s=$(printf '%s\n' "${rt[@]}" | median); l_s=$(printf '%s\n' "${lt[@]}" | median)
  r_kb=$(printf '%s\n' "${rr[@]}" | median); l_kb=$(printf '%s\n' "${lr[@]}" | median)
  awk -v t="$type" -v rs="$r_s" -v ls="$l_s" -v rk="$r_kb" -v lk="$l_kb" -v same="$same" 'BEGIN {
    printf "%-7s runnel %7.2f s (%5.0f MiB)  llama-quantize %7.2f s (%5.0f MiB)  ratio %.2f  files %s\n",
           t, rs, rk / 1024, ls, lk / 1024, (rs > 0 ? ls / rs : 0), same }'
done
