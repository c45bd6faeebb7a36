#!/usr/bin/env bash
# The whole test suite, as the README's second command and CI (.ci/run) run it.
#
#   ./scripts/test.sh                  # every stage, in this order
#   ./scripts/test.sh release parity   # only the named stages (setup always runs)
#
# Stages (each builds in its own folder, so re-runs are incremental):
#   release  Release build in build-release; ctest (unit_tests, native_tests) and
#            the [real] tests on the SmolLM2 model
#   asan     ASan+UBSan build (RelWithDebInfo) in build-asan; the same tests
#   neon     aarch64 cross build of unit_tests in build-neon
#            (scripts/aarch64-toolchain.cmake), run under qemu-aarch64: on a CPU with
#            the dot-product extension (-cpu max, by ctest) and on one without
#            (-cpu cortex-a53); about 3 minutes from a clean folder and a cold ccache
#   wasm     Emscripten build of unit_tests in build-wasm, run under node by ctest; then
#            the runnel-llm module (npm run build in wasm/: build-wasm-module{,-mt})
#            and its Node tests (node --test tests/wasm/, needs build-release/runnel), with
#            relaxed SIMD on (--experimental-wasm-relaxed-simd) and again without it
#   web      node --test tests/web/: the demo page and runnel-llm in headless Chromium
#            (download + OPFS reuse, resume, streamed layers, threads with COOP/COEP, the
#            npm tarball in a Vite app); needs the wasm stage's build. Screenshots go to
#            build-web-artifacts/
#   parity   node --test tests/parity/: runnel vs llama.cpp (node-llama-cpp) on
#            tokenization, greedy text and logits (needs build-release/runnel), with
#            the automatic kernel set and again with RUNNEL_ISA=ref
#   memory   scripts/cgroup_test.sh: SmolLM2 (3/4 of its size) and the 1B-shaped
#            Q4_K_M (half its size) streamed inside a cgroup memory limit, same greedy
#            tokens as unlimited (skips without cgroups)
#   server   node --test tests/server/: `runnel serve` driven by the openai npm client,
#            then scripts/load_test.sh (wrk, 32 connections, 60 s, --slots 1 --queue 8)
# Fails fast: the first failing stage stops the run and is named in the summary.
# On 2 cores the full run takes about 35-40 minutes from clean build folders and a cold
# ccache (under 10 minutes with a warm one).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

readonly kAllStages=(release asan neon wasm web parity memory server)
readonly kJobs="${RUNNEL_JOBS:-2}"  # the machines have 2 cores, shared

export RUNNEL_MODEL="${RUNNEL_MODEL:-$root/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
# Sanitizer reports must fail the run, with a stack to read.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:strict_string_checks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# Emscripten's optimizing link runs node tools that need Debian's node modules.
export NODE_PATH="${NODE_PATH:-/usr/share/nodejs}"

summary=()
current=""
stage_start=0
n_passed=0

print_summary() {
  echo
  echo "==== test.sh summary ===="
  local line
  for line in "${summary[@]}"; do echo "  $line"; done
}

on_exit() {
  local rc=$?
  if [ "$rc" -ne 0 ] && [ -n "$current" ]; then
    summary+=("$(printf '%-8s FAILED after %ds' "$current" $(( SECONDS - stage_start )))")
    print_summary
    echo "test.sh: stage '$current' failed (exit $rc); the output above it shows why."
    echo "stages: $n_passed passed, 1 failed"
  fi
}
trap on_exit EXIT

begin() {
  current="$1"
  stage_start=$SECONDS
  echo
  echo "==== [$current] $2 ===="
}

end() {
  summary+=("$(printf '%-8s ok in %ds' "$current" $(( SECONDS - stage_start )))")
  n_passed=$(( n_passed + 1 ))
  current=""
}

# run_real_tests BUILD_DIR: the [real] tagged Catch2 tests (hidden from ctest's default
# run) load the real model named by RUNNEL_MODEL.
run_real_tests() {
  local dir="$1" bin
  for bin in "$dir/tests/unit_tests" "$dir/tests/native_tests"; do
    [ -x "$bin" ] || continue
    echo "-- $bin [real] (RUNNEL_MODEL=$RUNNEL_MODEL)"
    "$bin" "[real]"
  done
}

stage_setup() {
  begin setup "install what is missing (scripts/setup.sh)"
  scripts/setup.sh
  [ -f "$RUNNEL_MODEL" ] || { echo "test.sh: no model at $RUNNEL_MODEL" >&2; return 1; }
  end
}

stage_release() {
  begin release "Release build + ctest + [real] tests (build-release)"
  cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release
  ninja -C build-release -j"$kJobs"
  ctest --test-dir build-release --output-on-failure
  run_real_tests build-release
  end
}

stage_asan() {
  begin asan "ASan+UBSan build + ctest + [real] tests (build-asan)"
  # g++ 12 with -fsanitize at -O2 reports false "may be used uninitialized" inside
  # libstdc++ (<regex> via catch.hpp, <functional>); -Werror would stop the build.
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRUNNEL_SANITIZE=ON \
    -DCMAKE_CXX_FLAGS=-Wno-maybe-uninitialized
  ninja -C build-asan -j"$kJobs"
  ctest --test-dir build-asan --output-on-failure
  run_real_tests build-asan
  end
}

stage_neon() {
  begin neon "aarch64 cross build of unit_tests, run under qemu (build-neon)"
  # Only unit_tests: native/ (httplib server, mmap store) is not built for aarch64.
  cmake -S . -B build-neon -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE=scripts/aarch64-toolchain.cmake
  ninja -C build-neon -j"$kJobs" unit_tests
  # The toolchain's emulator: qemu's `max` CPU has dotprod, so both NEON tables run.
  ctest --test-dir build-neon --output-on-failure -R '^unit_tests$'
  # A CPU without dotprod: automatic selection must fall back to the baseline NEON table.
  echo "-- build-neon/tests/unit_tests on qemu -cpu cortex-a53 (no dot-product extension)"
  qemu-aarch64 -L /usr/aarch64-linux-gnu -cpu cortex-a53 build-neon/tests/unit_tests
  end
}

stage_wasm() {
  begin wasm "Emscripten build of unit_tests, run under node (build-wasm)"
  # The default emulator flag is rejected by Node 20; fetch must be off for wasm loading.
  # Node 20 runs relaxed SIMD (the relaxed kernel table) only with its flag.
  emcmake cmake -S . -B build-wasm -G Ninja -DCMAKE_BUILD_TYPE=Release \
    "-DCMAKE_CROSSCOMPILING_EMULATOR=/usr/bin/node;--no-experimental-fetch;--experimental-wasm-relaxed-simd"
  ninja -C build-wasm -j"$kJobs" unit_tests
  ctest --test-dir build-wasm --output-on-failure
  (cd wasm && RUNNEL_JOBS="$kJobs" node scripts/build.mjs)
  export RUNNEL_BIN="${RUNNEL_BIN:-$root/build-release/runnel}"
  [ -x "$RUNNEL_BIN" ] || { echo "test.sh: no runnel binary at $RUNNEL_BIN (run the release stage)" >&2; return 1; }
  node --experimental-wasm-relaxed-simd --test tests/wasm/
  echo "-- without relaxed SIMD (Node 20's default): the SIMD128 fallback"
  node --test --test-name-pattern "relaxed SIMD|info describes" tests/wasm/
  end
}

stage_web() {
  begin web "demo page + npm package in headless Chromium (node --test tests/web/)"
  [ -f wasm/dist/runnel.wasm ] && [ -f web/runnel-llm/dist/runnel.wasm ] ||
    { echo "test.sh: no wasm module in wasm/dist (run the wasm stage)" >&2; return 1; }
  node --test tests/web/
  end
}

stage_parity() {
  begin parity "llama.cpp parity suite (node --test tests/parity/)"
  export RUNNEL_BIN="${RUNNEL_BIN:-$root/build-release/runnel}"
  [ -x "$RUNNEL_BIN" ] || { echo "test.sh: no runnel binary at $RUNNEL_BIN (run the release stage)" >&2; return 1; }
  node --test tests/parity/
  # The scalar kernels again: they are what a machine without a SIMD table runs.
  echo "-- parity with RUNNEL_ISA=ref"
  RUNNEL_ISA=ref node --test tests/parity/
  end
}

stage_memory() {
  begin memory "streaming under a cgroup memory limit (scripts/cgroup_test.sh)"
  export RUNNEL_BIN="${RUNNEL_BIN:-$root/build-release/runnel}"
  [ -x "$RUNNEL_BIN" ] || { echo "test.sh: no runnel binary at $RUNNEL_BIN (run the release stage)" >&2; return 1; }
  scripts/cgroup_test.sh
  # The 1B-shaped Q4_K_M (synthetic, written in seconds) in half its file size.
  scripts/gen_bench_models.sh 1b q4_k_m
  scripts/cgroup_test.sh models/bench/llama-1b-q4_k_m.gguf 0.5
  end
}

stage_server() {
  begin server "OpenAI server suite + load test (tests/server, scripts/load_test.sh)"
  export RUNNEL_BIN="${RUNNEL_BIN:-$root/build-release/runnel}"
  [ -x "$RUNNEL_BIN" ] || { echo "test.sh: no runnel binary at $RUNNEL_BIN (run the release stage)" >&2; return 1; }
  node --test tests/server/
  scripts/load_test.sh --duration 60s --connections 32
  end
}

stages=("$@")
[ "${#stages[@]}" -gt 0 ] || stages=("${kAllStages[@]}")
for stage in "${stages[@]}"; do
  case " ${kAllStages[*]} " in
    *" $stage "*) ;;
    *) echo "test.sh: unknown stage '$stage' (expected one of: ${kAllStages[*]})" >&2; exit 2 ;;
  esac
done

total_start=$SECONDS
stage_setup
for stage in "${stages[@]}"; do "stage_$stage"; done
summary+=("$(printf '%-8s %ds' total $(( SECONDS - total_start )))")
print_summary
echo "stages: $n_passed passed, 0 failed"
