#!/usr/bin/env bash
# How close runnel's logits are to llama.cpp's, per kernel set, beside how close
# llama.cpp's two CPU attention paths are to each other, on a real text:
#   scripts/kld_table.sh [--model M.gguf] [--chunks N] [--threads N] [--paired]
# 1. llama-perplexity (its default path, flash attention) saves a KL-divergence base of
#    the text's log-probs (Debian miscfiles' US Constitution, 512-token windows);
# 2. llama-perplexity -fa off against that base: llama.cpp's own spread;
# 3. `runnel perplexity --kl-divergence` against it with each kernel set the CPU runs
#    (RUNNEL_ISA=ref, avx2, avx512);
# 4. runnel-llm (the wasm build, in Node) with SIMD128, relaxed SIMD and ref kernels
#    (scripts/lib/kld_wasm.mjs; needs wasm/dist, built by the wasm stage of test.sh).
# Prints a markdown table of mean KLD and same-top-token rate, each row's KLD as a ratio
# to llama.cpp's own, and whether the row is no worse than llama.cpp's own (mean KLD
# at most its own plus one standard error, same-top at least its own minus one).
# --paired also saves every row's logits (and llama.cpp -fa off's) as base files and
# compares the same-top rates position by position (scripts/lib/kld_paired.mjs: the
# difference to llama.cpp's own with its paired standard error, and "no worse" unless it
# is below -1.645 of them). The one-error bands above flag an equal implementation about
# one time in six by chance; the paired verdict is the one to go by. About twice the time
# (42 min on the dev VM, most of it the ref rows).
# Needs llama-perplexity (scripts/build_llama_cpp.sh llama-perplexity) and build-release.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

model="$root/models/SmolLM2-135M-Instruct.Q4_1.gguf"
chunks=20
threads=2
paired=0
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model="$2"; shift 2 ;;
    --chunks) chunks="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --paired) paired=1; shift ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "kld_table: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
runnel="${RUNNEL_BIN:-$root/build-release/runnel}"
llama="$root/build-llama.cpp/build/bin/llama-perplexity"
[ -x "$runnel" ] || { echo "kld_table: no $runnel (build-release)" >&2; exit 1; }
[ -x "$llama" ] || scripts/build_llama_cpp.sh llama-perplexity
[ -f "$model" ] || { echo "kld_table: no model $model" >&2; exit 1; }
[ -f /usr/share/state/us-constitution.gz ] || { echo "kld_table: apt-get install miscfiles" >&2; exit 1; }

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
text="$scratch/us-constitution.txt"
gzip -dc /usr/share/state/us-constitution.gz >"$text"
base="$scratch/base.kld"

echo "kld_table: $(basename "$model"), $chunks windows of 512, $threads threads," \
     "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')" >&2
"$llama" -m "$model" -f "$text" -c 512 -t "$threads" --chunks "$chunks" \
  --kl-divergence-base "$base" >"$scratch/base.log" 2>&1 ||
  { tail -20 "$scratch/base.log" >&2; exit 1; }

# "KLD ERR SAME SAME_ERR" from a log holding the native tools' summary lines.
figures() {
  local kld same
  kld="$(sed -n 's/^Mean *KLD: *\([0-9.e+-]*\) *± *\([0-9.e+-]*\).*/\1 \2/p' "$1" | tail -1)"
  same="$(sed -n 's/^Same top p: *\([0-9.]*\) *± *\([0-9.]*\).*/\1 \2/p' "$1" | tail -1)"
  [ -n "$kld" ] && [ -n "$same" ] || { echo "kld_table: no KLD summary in $1:" >&2; tail -20 "$1" >&2; return 1; }
  echo "$kld $same"
}

rows=()
"$llama" -m "$model" -t "$threads" -fa off --kl-divergence-base "$base" --kl-divergence \
  >"$scratch/own.log" 2>&1 || { tail -20 "$scratch/own.log" >&2; exit 1; }
own="$(figures "$scratch/own.log")"
rows+=("llama.cpp -fa off (its own spread)|$own")
paired_rows=()
if [ "$paired" = 1 ]; then
  "$llama" -m "$model" -f "$text" -c 512 -t "$threads" --chunks "$chunks" -fa off \
    --kl-divergence-base "$scratch/own.kld" >"$scratch/own-save.log" 2>&1 ||
    { tail -20 "$scratch/own-save.log" >&2; exit 1; }
fi
for isa in ref avx2 avx512; do
  RUNNEL_ISA="$isa" "$runnel" inspect --cpu >/dev/null 2>&1 || continue
  RUNNEL_ISA="$isa" "$runnel" perplexity -m "$model" -t "$threads" --kl-divergence-base "$base" \
    --kl-divergence >"$scratch/$isa.log" 2>&1 || { tail -20 "$scratch/$isa.log" >&2; exit 1; }
  rows+=("runnel $isa|$(figures "$scratch/$isa.log")")
  if [ "$paired" = 1 ]; then
    RUNNEL_ISA="$isa" "$runnel" perplexity -m "$model" -f "$text" -c 512 -t "$threads" --chunks "$chunks" \
      --kl-divergence-base "$scratch/$isa.kld" >"$scratch/$isa-save.log" 2>&1 ||
      { tail -20 "$scratch/$isa-save.log" >&2; exit 1; }
    paired_rows+=("runnel $isa=$scratch/$isa.kld")
  fi
done
if [ -f wasm/dist/runnel.wasm ]; then
  for isa in simd128-relaxed simd128 ref; do
    save=()
    if [ "$paired" = 1 ]; then
      save=(--save-base "$scratch/wasm-$isa.kld")
      paired_rows+=("runnel-llm (wasm) $isa=$scratch/wasm-$isa.kld")
    fi
    node --experimental-wasm-relaxed-simd scripts/lib/kld_wasm.mjs --model "$model" --base "$base" --isa "$isa" \
      "${save[@]}" >"$scratch/wasm-$isa.log" 2>&1 || { tail -20 "$scratch/wasm-$isa.log" >&2; exit 1; }
    rows+=("runnel-llm (wasm) $isa|$(figures "$scratch/wasm-$isa.log")")
  done
else
  echo "kld_table: no wasm/dist/runnel.wasm (./scripts/test.sh wasm builds it): no wasm rows" >&2
fi

read -r own_kld own_err own_same own_same_err <<<"$own"
echo "| logits | mean KLD vs llama.cpp (flash) | same top token | KLD / llama.cpp's own | no worse than llama.cpp's own |"
echo "| --- | ---: | ---: | ---: | --- |"
for row in "${rows[@]}"; do
  name="${row%%|*}"
  read -r kld err same same_err <<<"${row#*|}"
  awk -v n="$name" -v k="$kld" -v e="$err" -v s="$same" -v se="$same_err" \
      -v ok="$own_kld" -v oe="$own_err" -v os="$own_same" -v ose="$own_same_err" 'BEGIN {
    verdict = (k <= ok + oe && s >= os - ose) ? "yes" : "NO"
    printf "| %s | %.6f ± %.6f | %.2f ± %.2f %% | %.3f | %s |\n", n, k, e, s, se, k / ok, verdict
  }'
done
if [ "$paired" = 1 ]; then
  echo
  node scripts/lib/kld_paired.mjs --base "$base" --own "$scratch/own.kld" "${paired_rows[@]}"
fi
