#!/usr/bin/env bash
# Coverage-guided fuzzing with libFuzzer (clang-16, ASan + UBSan): tests/fuzz/README.md.
#
#   scripts/fuzz.sh list                 # the targets (tests/fuzz/fuzz_NAME.cpp)
#   scripts/fuzz.sh build                # configure + build them in build-fuzz
#   scripts/fuzz.sh TARGET SECONDS       # fuzz one target (builds first)
#   scripts/fuzz.sh all SECONDS          # every target, RUNNEL_FUZZ_PARALLEL at a time
#                                        # (default 1); what ./scripts/test.sh fuzz runs
#
# Each run starts from the seeds in tests/fuzz/corpus/TARGET and writes what it learns
# to a scratch corpus, build-fuzz/corpus/TARGET (kept between runs, so long runs add
# up; `all` starts it afresh from the seeds, so CI runs do not depend on earlier ones).
# The repo corpus is only read. A crash, leak, timeout (-timeout=1: over 1 s for one
# input), out-of-memory (-rss_limit_mb=2048) or failed check leaves its input in
# build-fuzz/findings/TARGET/ and makes the exit status non-zero. Reproduce one with
#   build-fuzz/tests/fuzz/fuzz_TARGET FILE
# and, once fixed, copy it to tests/fuzz/corpus/TARGET/regression-SHORTDESC. (The timeout
# is wall-clock: a timeout whose input runs in time on 3 replays is put down to a busy
# machine, said so, and not counted.)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

readonly kBuild="$root/build-fuzz"
readonly kJobs="${RUNNEL_JOBS:-2}"

targets() {
  local f
  for f in tests/fuzz/fuzz_*.cpp; do
    f="${f##*/fuzz_}"
    echo "${f%.cpp}"
  done
}

# Longest input per target: a little above its largest seed, so that inputs stay
# small enough to run hundreds of times a second.
max_len() {
  case "$1" in
    tokenizer_*) echo 512 ;;
    detokenizer) echo 768 ;;
    json_schema) echo 2048 ;;
    jinja) echo 8192 ;;
    *) echo 4096 ;;
  esac
}

build() {
  command -v clang++-16 >/dev/null ||
    { echo "fuzz.sh: no clang++-16 (scripts/setup.sh --tests installs it)" >&2; return 1; }
  cmake -S . -B "$kBuild" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++-16 \
    -DRUNNEL_FUZZ=ON -DRUNNEL_TESTS=OFF >/dev/null
  ninja -C "$kBuild" -j"$kJobs" fuzz_targets
}

# timeout_was_load BIN FINDINGS: whether each timeout-* input in FINDINGS runs within
# the timeout on 3 replays.
timeout_was_load() {
  local bin="$1" findings="$2" f i
  for f in "$findings"/timeout-*; do
    [ -f "$f" ] || return 1
    for i in 1 2 3; do
      "$bin" -timeout=1 -rss_limit_mb=2048 "$f" >/dev/null 2>&1 || return 1
    done
  done
  return 0
}

# run_target NAME SECONDS LOG: one libFuzzer run; its output goes to LOG, and its final
# figures (executions, coverage, corpus) are printed as one line.
run_target() {
  local name="$1" seconds="$2" log="$3"
  local bin="$kBuild/tests/fuzz/fuzz_$name" scratch="$kBuild/corpus/$name"
  local findings="$kBuild/findings/$name" dict="tests/fuzz/dict/$name.dict"
  [ -x "$bin" ] || { echo "fuzz.sh: no $bin (unknown target? see: scripts/fuzz.sh list)" >&2; return 2; }
  rm -rf "$findings"  # what an earlier run found is in its log
  mkdir -p "$scratch" "$findings"
  local args=(-max_total_time="$seconds" -timeout=1 -rss_limit_mb=2048 -max_len="$(max_len "$name")"
              -print_final_stats=1 -artifact_prefix="$findings/")
  [ -f "$dict" ] && args+=(-dict="$dict")
  local rc=0
  # The scratch corpus first: libFuzzer writes new inputs to its first directory only.
  "$bin" "${args[@]}" "$scratch" "tests/fuzz/corpus/$name" >"$log" 2>&1 || rc=$?
  # (a run that ends on its first input prints no coverage line: "?")
  local runs cov ft corp
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  cov="$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)"
  ft="$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)"
  corp="$(grep -o 'corp: [0-9]*/[0-9]*[a-zA-Z]*' "$log" | tail -1 | cut -d' ' -f2 || true)"
  if [ "$rc" -eq 70 ] && timeout_was_load "$bin" "$findings"; then
    # The -timeout is wall-clock: a busy machine can stop a process for over a second.
    echo "fuzz $name: the input that timed out runs in under a second when replayed 3 times" \
         "(a loaded machine, not a finding); the run ended after ${runs:-?} runs"
    rm -f "$findings"/timeout-*
    rc=0
  fi
  if [ "$rc" -eq 0 ]; then
    printf 'fuzz %-14s ok      %6ss  runs %-9s cov %-6s ft %-6s corpus %s\n' \
      "$name" "$seconds" "${runs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}"
  else
    printf 'fuzz %-14s FINDING (exit %d) after runs %s: %s\n' "$name" "$rc" "${runs:-?}" \
      "$(grep -m1 -E 'ERROR: |SUMMARY: |==[0-9]+== ?ERROR|fuzz: |tokenizer |detokenizer |grammar: |json_schema: |restore_session' "$log" || echo "see $log")"
    echo "  input(s): $(ls "$findings" | tr '\n' ' ')  log: $log"
    tail -n 40 "$log"
  fi
  return "$rc"
}

run_all() {
  local seconds="$1" parallel="${RUNNEL_FUZZ_PARALLEL:-1}" name failed=0
  local logs="$kBuild/logs"
  mkdir -p "$logs"
  rm -rf "$kBuild/corpus" "$kBuild/findings"
  local running=()
  for name in $(targets); do
    run_target "$name" "$seconds" "$logs/$name.log" &
    running+=("$!")
    if [ "${#running[@]}" -ge "$parallel" ]; then
      wait "${running[0]}" || failed=1
      running=("${running[@]:1}")
    fi
  done
  local pid
  for pid in "${running[@]}"; do wait "$pid" || failed=1; done
  return "$failed"
}

case "${1:-}" in
  list) targets ;;
  build) build ;;
  all)
    [ $# -eq 2 ] || { echo "usage: scripts/fuzz.sh all SECONDS" >&2; exit 2; }
    build
    run_all "$2"
    ;;
  ""|-h|--help)
    sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
  *)
    [ $# -eq 2 ] || { echo "usage: scripts/fuzz.sh TARGET SECONDS (targets: $(targets | tr '\n' ' '))" >&2; exit 2; }
    targets | grep -qx "$1" || { echo "fuzz.sh: unknown target '$1' (expected one of: $(targets | tr '\n' ' '))" >&2; exit 2; }
    build
    mkdir -p "$kBuild/logs"
    run_target "$1" "$2" "$kBuild/logs/$1.log"
    ;;
esac
