#!/usr/bin/env bash
# Makes a Debian 12 machine ready to build and test runnel; safe to re-run.
#
# 1. Debian packages (toolchains, test libraries, sanitizer runtime); apt runs only
#    when something is missing, so a re-run on a ready machine takes a second.
# 2. The models (scripts/fetch_models.sh -> models/, git-ignored).
# 3. The npm dependencies of the parity, server and web suites (tests/*/node_modules),
#    if missing.
# Runs as root (CI and fresh machines) or through sudo.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
die() { echo "setup: $*" >&2; exit 1; }

readonly kDebianPackages=(
  cmake ninja-build g++ emscripten catch2 nlohmann-json3-dev libcpp-httplib-dev
  unicode-data libclang-rt-14-dev python3-pip ccache pkg-config
  g++-aarch64-linux-gnu qemu-user  # NEON kernels, cross-built and run under qemu
  clang-16 lld-16 llvm-16          # the relaxed-SIMD wasm kernels (kernels/wasm/relaxed)
  chromium wrk                     # the demo page in headless Chromium; the server load test
)

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@";
  elif command -v sudo >/dev/null; then sudo "$@";
  else die "need root (or sudo) to run: $*"; fi
}

install_debian_packages() {
  local missing=() pkg
  for pkg in "${kDebianPackages[@]}"; do
    # (a removed package keeps a dpkg record: look for "install ok installed")
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
      || missing+=("$pkg")
  done
  # Node.js may come from another repository whose nodejs package also provides npm
  # (and conflicts with Debian's): ask apt for them only when the commands are absent.
  command -v node >/dev/null || missing+=(nodejs)
  command -v npm >/dev/null || missing+=(npm)
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
  [ "$major" -ge 20 ] || die "node $(node --version) found; the parity suite needs Node 20 or newer"
}

install_parity_deps() {
  local dir="$root/tests/parity"
  if [ -d "$dir/node_modules/node-llama-cpp" ] && [ -d "$dir/node_modules/@node-llama-cpp/linux-x64" ]; then
    echo "setup: parity npm dependencies present"
    return 0
  fi
  echo "setup: installing parity npm dependencies (node-llama-cpp, prebuilt llama.cpp)"
  # The prebuilt llama.cpp ships inside @node-llama-cpp/linux-x64; nothing may be
  # downloaded or compiled at install time (no network beyond the registry here).
  # `npm ci` cannot be used: the lock omits the other platforms' optional packages.
  (cd "$dir" && NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm install --omit=optional --no-audit --no-fund) \
    || die "npm install in tests/parity failed"
}

# The server suite's npm dependencies (the official openai client), if missing.
install_server_deps() {
  local dir="$root/tests/server"
  if [ -d "$dir/node_modules/openai" ]; then
    echo "setup: server-test npm dependencies present"
    return 0
  fi
  echo "setup: installing server-test npm dependencies (openai)"
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
  # `npm ci` refuses this lock: it lacks the other platforms' optional rollup/esbuild
  # packages (as tests/parity's does).
  (cd "$dir" && npm install --no-audit --no-fund) || die "npm install in tests/web failed"
}

install_debian_packages
check_node_version
"$root/scripts/fetch_models.sh"
install_parity_deps
install_server_deps
install_web_deps
echo "setup: ready"
