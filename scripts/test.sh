#!/usr/bin/env bash
# The whole test suite, as the README's second command and CI (.ci/run) run it.
#
#   ./scripts/test.sh                  # every stage, in this order
#   ./scripts/test.sh release parity   # only the named stages (setup always runs)
#
# Setup: scripts/setup.sh --tests, the build needs plus the test toolchain (Catch2,
# Emscripten, clang-16, aarch64 cross compiler and qemu, Chromium, wrk, Node.js and the
# suites' npm packages), each only if missing.
#
# Stages (each builds in its own folder, so re-runs are incremental):
#   release  Release build in build-release; ctest (unit_tests, native_tests) and
#            the [real] tests on the SmolLM2 model, once per kernel set the host runs
#            (RUNNEL_ISA=ref, avx2, and avx512 where the CPU has it)
#   asan     ASan+UBSan build (-O1 -g1) in build-asan; the same tests
#   fuzz     libFuzzer targets (clang-16, ASan+UBSan) in build-fuzz, each fuzzed for
#            RUNNEL_FUZZ_SECONDS (default 45), two at a time, from the seeds in
#            tests/fuzz/corpus into a scratch corpus (scripts/fuzz.sh all); any crash,
#            leak, timeout (> 1 s per input) or out-of-memory fails it
#   neon     aarch64 cross build of unit_tests in build-neon
#            (scripts/aarch64-toolchain.cmake), run under qemu-aarch64: all of it but
#            [many-runs] on a CPU with the dot-product extension (-cpu max), the [neon]
#            tests on one without (-cpu cortex-a53: the fallback table and its selection)
#   wasm     Emscripten build of unit_tests in build-wasm, run under node by ctest; then
#            the runnel-llm module (npm run build in wasm/: build-wasm-module{,-mt})
#            and its Node tests (node --test tests/wasm/, needs build-release/runnel), with
#            relaxed SIMD on (--experimental-wasm-relaxed-simd) and again without it;
#            arch.test.mjs compares its logits at every prompt position with native
#            runnel's on a tiny model of every architecture and on Gemma 3 270M
#   web      node --test tests/web/: the demo page and runnel-llm in headless Chromium
#            (download + OPFS reuse, resume, streamed layers, threads with COOP/COEP, the
#            npm tarball in a Vite app); needs the wasm stage's build. Screenshots go to
#            build-web-artifacts/
#   parity   node --test tests/parity/: runnel vs llama.cpp (node-llama-cpp) on
#            tokenization, greedy text and logits (needs build-release/runnel), with
#            every kernel set the host runs against one evaluation of llama.cpp's
#            (RUNNEL_PARITY_ISAS); on an AVX-512 host also greedy text and logits
#            against llama.cpp's AVX2 build (what an AVX2-only host runs), with runnel's
#            avx2 and ref kernels (a copy of the suite in build-parity-avx2). arch.test.mjs
#            compares tiny random models of every architecture at every prompt position
#   memory   scripts/cgroup_test.sh: SmolLM2 (3/4 of its size), the 1B-shaped
#            Q4_K_M and the moe-small Q4_K_M (experts streamed; each half its size)
#            inside a cgroup memory limit, same greedy tokens as unlimited (skips
#            without cgroups)
#   server   node --test tests/server/: `runnel serve` driven by the openai npm client
#            (hostile clients, the systemd unit and nginx config, a 3-replica fleet
#            behind nginx), then scripts/load_test.sh (wrk, 32 connections, 30 s,
#            --slots 1 --queue 8) and scripts/soak.sh 2 (mixed traffic for 2 minutes)
# Every stage runs even after one fails (a later stage that needs an earlier one's
# build says so); the summary names each stage's result and the exit status is
# non-zero if any failed. A failed setup stops the run: nothing can run without it.
# On 2 cores the full run takes about 57 minutes from clean build folders and a cold
# ccache (3409 s on 2026-11-26; scripts/BENCHMARKS.md has the stages), less with a warm one.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

readonly kAllStages=(release asan fuzz neon wasm web parity memory server)
readonly kJobs="${RUNNEL_JOBS:-2}"  # the machines have 2 cores, shared

export RUNNEL_MODEL="${RUNNEL_MODEL:-$root/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
# Sanitizer reports must fail the run, with a stack to read.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:strict_string_checks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# ccache hits across checkouts of the same tree (a CI clone beside a working copy): paths
# hashed relative to the root, and not the build folder (-g builds would hash it).
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
# Emscripten's optimizing link runs node tools that need Debian's node modules.
export NODE_PATH="${NODE_PATH:-/usr/share/nodejs}"

summary=()
n_passed=0
n_failed=0

print_summary() {
  echo
  echo "==== test.sh summary ===="
  local line
  for line in "${summary[@]}"; do echo "  $line"; done
}

begin() {
  echo
  echo "==== [$1] $2 ===="
}

# run_stage NAME: runs stage_NAME in a subshell with errexit on (its first failing
# command ends it) and records the result; the run goes on either way.
run_stage() {
  local name="$1" start=$SECONDS rc=0
  set +e
  ( set -e; "stage_$name" )
  rc=$?
  set -e
  if [ "$rc" -eq 0 ]; then
    summary+=("$(printf '%-8s ok in %ds' "$name" $(( SECONDS - start )))")
    n_passed=$(( n_passed + 1 ))
  else
    summary+=("$(printf '%-8s FAILED (exit %d) after %ds' "$name" "$rc" $(( SECONDS - start )))")
    n_failed=$(( n_failed + 1 ))
    echo "test.sh: stage '$name' failed (exit $rc); the output above it shows why."
  fi
}

# host_isas BIN: the native kernel sets this CPU runs, as RUNNEL_ISA names them.
host_isas() {
  local bin="$1" isa
  for isa in ref avx2 avx512; do
    RUNNEL_ISA="$isa" "$bin" inspect --cpu >/dev/null 2>&1 && echo "$isa"
  done
  return 0
}

# run_real_tests BUILD_DIR [widest]: the [real] tagged Catch2 tests (the [.real] ones
# are hidden from ctest's default run, which runs the others with ref) load the real
# model named by RUNNEL_MODEL; once per kernel set the host runs, or with "widest" only
# on the widest of them (the test binaries and the runnel children they start read
# RUNNEL_ISA).
run_real_tests() {
  local dir="$1" bin isa isas
  isas="$(host_isas "$dir/runnel")"
  [ -n "$isas" ] || { echo "test.sh: $dir/runnel runs no kernel set" >&2; return 1; }
  [ "${2:-}" != widest ] || isas="$(echo "$isas" | tail -n 1)"
  for isa in $isas; do
    for bin in "$dir/tests/unit_tests" "$dir/tests/native_tests"; do
      [ -x "$bin" ] || continue
      echo "-- $bin [real] (RUNNEL_ISA=$isa RUNNEL_MODEL=$RUNNEL_MODEL)"
      RUNNEL_ISA="$isa" "$bin" "[real]"
    done
  done
}

stage_setup() {
  begin setup "install what is missing (scripts/setup.sh --tests)"
  scripts/setup.sh --tests
  [ -f "$RUNNEL_MODEL" ] || { echo "test.sh: no model at $RUNNEL_MODEL" >&2; return 1; }
}

stage_release() {
  begin release "Release build + ctest + [real] tests (build-release)"
  # RUNNEL_TESTS=ON: quickstart.sh configures the same folder without the tests.
  cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DRUNNEL_TESTS=ON
  ninja -C build-release -j"$kJobs"
  ctest --test-dir build-release --output-on-failure -j"$kJobs"
  run_real_tests build-release
}

stage_asan() {
  begin asan "ASan+UBSan build + ctest + [real] tests (build-asan)"
  # g++ 12 with -fsanitize at -O2 reports false "may be used uninitialized" inside
  # libstdc++ (<regex> via catch.hpp, <functional>); -Werror would stop the build.
  # -O1 -g1 instead of RelWithDebInfo's -O2 -g: the same tests and sanitizers, stacks
  # still with file:line, and 0.54x the compile CPU time (measured on 25 of its files:
  # 126 s vs 233 s), which pays for the fuzz stage; its tests take about 1.3x the CPU.
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRUNNEL_SANITIZE=ON \
    -DCMAKE_CXX_FLAGS=-Wno-maybe-uninitialized "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
  ninja -C build-asan -j"$kJobs"
  # unit_tests and native_tests side by side: each is mostly one thread (178 s wall for
  # both instead of 121 + 172 s, 2-vCPU VM).
  ctest --test-dir build-asan --output-on-failure -j"$kJobs"
  # ctest ran the visible [real] tests with ref; the release stage runs them on every
  # kernel set, and unit_tests checks each set's kernels under ASan: here the [real] and
  # [.real] tests run once more, on the widest set.
  run_real_tests build-asan widest
}

stage_fuzz() {
  # Long campaigns (10 minutes and more per target) run outside CI: scripts/fuzz.sh.
  local seconds="${RUNNEL_FUZZ_SECONDS:-45}"
  begin fuzz "libFuzzer targets, ${seconds} s each (build-fuzz, scripts/fuzz.sh all)"
  # Each libFuzzer process is one thread: as many at a time as the stage has cores.
  RUNNEL_FUZZ_PARALLEL="${RUNNEL_FUZZ_PARALLEL:-$kJobs}" scripts/fuzz.sh all "$seconds"
}

stage_neon() {
  begin neon "aarch64 cross build of unit_tests, run under qemu (build-neon)"
  # Only unit_tests: native/ (httplib server, mmap store) is not built for aarch64.
  cmake -S . -B build-neon -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE=scripts/aarch64-toolchain.cmake
  ninja -C build-neon -j"$kJobs" unit_tests
  # qemu's `max` CPU has dotprod, so both NEON tables run. [many-runs] (a statistical
  # test of the sampler, 8000 generations) takes 129 of the 167 s under qemu: it runs in
  # the other stages' builds.
  echo "-- build-neon/tests/unit_tests ~[many-runs] on qemu -cpu max"
  qemu-aarch64 -L /usr/aarch64-linux-gnu -cpu max build-neon/tests/unit_tests "~[many-runs]"
  # A CPU without dotprod: automatic selection must fall back to the baseline NEON table,
  # whose kernels the [neon] tests check there (the rest of the suite ran above).
  echo "-- build-neon/tests/unit_tests [neon] on qemu -cpu cortex-a53 (no dot-product extension)"
  qemu-aarch64 -L /usr/aarch64-linux-gnu -cpu cortex-a53 build-neon/tests/unit_tests "[neon]"
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
}

stage_web() {
  begin web "demo page + npm package in headless Chromium (node --test tests/web/)"
  [ -f wasm/dist/runnel.wasm ] && [ -f web/runnel-llm/dist/runnel.wasm ] ||
    { echo "test.sh: no wasm module in wasm/dist (run the wasm stage)" >&2; return 1; }
  node --test tests/web/
}

stage_parity() {
  begin parity "llama.cpp parity suite (node --test tests/parity/)"
  export RUNNEL_BIN="${RUNNEL_BIN:-$root/build-release/runnel}"
  [ -x "$RUNNEL_BIN" ] || { echo "test.sh: no runnel binary at $RUNNEL_BIN (run the release stage)" >&2; return 1; }
  local isas simd failed=0
  isas="$(host_isas "$RUNNEL_BIN" | paste -sd, -)"
  # One run for all the kernel sets the host has: each test evaluates llama.cpp once
  # (most of the stage's time) and compares runnel under every set with it.
  echo "-- parity with RUNNEL_PARITY_ISAS=$isas"
  RUNNEL_PARITY_ISAS="$isas" node --test tests/parity/ || failed=1
  case ",$isas," in
    *,avx512,*) parity_against_llama_avx2 || failed=1 ;;
  esac
  # Gemma 3 270M: a second architecture, k-quants and a 262k vocabulary. Its tokens are
  # checked with the suite above (gemma_tokenize); greedy text and logits here, with the
  # SIMD kernel sets (ref's KL on one prompt is 2.07x llama.cpp's own spread, over the 2x
  # bound: see the closing notes of the architectures issue).
  local gemma="$root/models/gemma-3-270m-q4_k_m.gguf"
  [ -f "$gemma" ] || { echo "test.sh: no $gemma (scripts/fetch_models.sh gemma3)" >&2; return 1; }
  simd="$(echo "$isas" | tr , '\n' | { grep -v '^ref$' || true; } | paste -sd, -)"
  if [ -n "$simd" ]; then
    echo "-- Gemma 3 270M greedy and logit parity, RUNNEL_PARITY_ISAS=$simd"
    RUNNEL_PARITY_ISAS="$simd" RUNNEL_MODEL="$gemma" \
      node --test tests/parity/greedy.test.mjs tests/parity/logits.test.mjs || failed=1
  fi
  return "$failed"
}

# llama.cpp's numerics (and so its near-ties) depend on the kernel variant it loads for
# the CPU. On an AVX-512 host, a copy of the suite whose node-llama-cpp holds only the
# AVX2 (haswell) variant shows what an AVX2-only host compares against.
parity_against_llama_avx2() {
  local copy="$root/build-parity-avx2"
  local bins="tests/parity/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"
  [ -f "$root/$bins/libggml-cpu-haswell.so" ] ||
    { echo "test.sh: no AVX2 (haswell) variant in $bins" >&2; return 1; }
  rm -rf "$copy"
  mkdir -p "$copy/tests"
  cp -al "$root/tests/parity" "$copy/tests/parity"  # hard links: no copy of the 85 MB
  find "$copy/$bins" -name 'libggml-cpu-*.so' ! -name 'libggml-cpu-haswell.so' -delete
  echo "-- greedy and logit parity against llama.cpp's AVX2 build, RUNNEL_PARITY_ISAS=avx2,ref"
  (cd "$copy" && RUNNEL_PARITY_ISAS=avx2,ref RUNNEL_MODEL="$RUNNEL_MODEL" \
     node --test tests/parity/greedy.test.mjs tests/parity/logits.test.mjs)
}

stage_memory() {
  begin memory "streaming under a cgroup memory limit (scripts/cgroup_test.sh)"
  export RUNNEL_BIN="${RUNNEL_BIN:-$root/build-release/runnel}"
  [ -x "$RUNNEL_BIN" ] || { echo "test.sh: no runnel binary at $RUNNEL_BIN (run the release stage)" >&2; return 1; }
  scripts/cgroup_test.sh
  # The 1B-shaped Q4_K_M (synthetic, written in seconds) in half its file size.
  scripts/gen_bench_models.sh 1b q4_k_m
  scripts/cgroup_test.sh models/bench/llama-1b-q4_k_m.gguf 0.5
  # A mixture of experts (32 experts, 4 a token) in half its size: experts streamed.
  scripts/gen_bench_models.sh moe-small q4_k_m
  scripts/cgroup_test.sh models/bench/moe-small-q4_k_m.gguf 0.5
}

stage_server() {
  begin server "OpenAI server suite + load and soak tests (tests/server, scripts/load_test.sh, scripts/soak.sh)"
  export RUNNEL_BIN="${RUNNEL_BIN:-$root/build-release/runnel}"
  [ -x "$RUNNEL_BIN" ] || { echo "test.sh: no runnel binary at $RUNNEL_BIN (run the release stage)" >&2; return 1; }
  node --test tests/server/
  scripts/load_test.sh --duration 30s --connections 32
  scripts/soak.sh 2
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
run_stage setup
if [ "$n_failed" -ne 0 ]; then
  print_summary
  echo "test.sh: setup failed; no stage can run without it"
  exit 1
fi
for stage in "${stages[@]}"; do run_stage "$stage"; done
summary+=("$(printf '%-8s %ds' total $(( SECONDS - total_start )))")
print_summary
echo "stages: $n_passed passed, $n_failed failed"
[ "$n_failed" -eq 0 ]
