#!/usr/bin/env bash
# Load test of `runnel serve`: wrk with 32 connections for 60 s, each POSTing a short
# chat request, against --slots 1 --queue 8 (so most requests must get 429).
# Passes when the server survives, every response is a 200 or a 429, the server still
# answers afterwards, and its RSS did not grow by more than 64 MiB over the run.
# Prints throughput, latency percentiles, status counts and RSS.
#
#   scripts/load_test.sh [--duration 60s] [--connections 32]
#   env: RUNNEL_BIN (default build-release/runnel), RUNNEL_MODEL (default SmolLM2)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
binary="${RUNNEL_BIN:-$root/build-release/runnel}"
model="${RUNNEL_MODEL:-$root/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
duration=60s
connections=32
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration="$2"; shift 2 ;;
    --connections) connections="$2"; shift 2 ;;
    *) echo "load_test: unknown option $1" >&2; exit 2 ;;
  esac
done
command -v wrk >/dev/null || { echo "load_test: wrk is not installed (apt-get install wrk)" >&2; exit 1; }
[ -x "$binary" ] || { echo "load_test: no runnel binary at $binary" >&2; exit 1; }

work="$(mktemp -d)"
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

"$binary" serve -m "$model" --port 0 --slots 1 --queue 8 2>"$work/server.log" &
server_pid=$!
# Up to 60 s: loading the model takes longer on a slow disk or at a low-bandwidth hour.
for _ in $(seq 1 600); do
  grep -q "listening on" "$work/server.log" 2>/dev/null && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
  sleep 0.1
done
port="$(grep -o '127.0.0.1:[0-9]*' "$work/server.log" | head -1 | cut -d: -f2 || true)"
[ -n "$port" ] || {
  echo "load_test: FAIL: the server did not say \"listening on\" within 60 s; server.log:" >&2
  cat "$work/server.log" >&2
  exit 1
}
url="http://127.0.0.1:$port"
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$server_pid/status"; }

body='{"messages":[{"role":"user","content":"Say hello in five words."}],"max_tokens":8,"temperature":0}'
# Warm up (page in the weights) before the first RSS reading.
curl -sf --max-time 30 "$url/v1/chat/completions" -d "$body" >/dev/null ||
  { echo "load_test: FAIL: the warm-up request failed; server.log:" >&2; cat "$work/server.log" >&2; exit 1; }
rss_before="$(rss_kib)"

cat > "$work/post.lua" <<EOF
wrk.method = "POST"
wrk.body = '$body'
wrk.headers["Content-Type"] = "application/json"
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init() statuses = {} end
function response(status) statuses[status] = (statuses[status] or 0) + 1 end
function done(summary, latency, requests)
  local total = {}
  for _, t in ipairs(threads) do
    for status, n in pairs(t:get("statuses")) do total[status] = (total[status] or 0) + n end
  end
  for status, n in pairs(total) do io.write(string.format("status %d: %d\n", status, n)) end
  io.write(string.format("errors: connect %d, read %d, write %d, timeout %d\n",
    summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.timeout))
end
EOF

echo "load_test: wrk -t2 -c$connections -d$duration --latency on $url (--slots 1 --queue 8)"
wrk -t2 -c"$connections" -d"$duration" --timeout 30s --latency -s "$work/post.lua" \
  "$url/v1/chat/completions" | tee "$work/wrk.txt"

kill -0 "$server_pid" 2>/dev/null || { echo "load_test: FAIL: the server died" >&2; cat "$work/server.log" >&2; exit 1; }
# Requests wrk gave up on may still hold the slot or the queue for a moment.
after=""
for _ in $(seq 1 60); do
  # (A refused or timed-out request prints 000 and counts as not answered, not as set -e.)
  after="$(curl -s --max-time 30 -o /dev/null -w '%{http_code}' "$url/v1/chat/completions" -d "$body" || true)"
  [ "$after" = "200" ] && break
  sleep 0.5
done
rss_after="$(rss_kib)"
n200="$(awk '/^status 200:/ {print $3}' "$work/wrk.txt")"
n429="$(awk '/^status 429:/ {print $3}' "$work/wrk.txt")"
others="$(awk '/^status / && $2 != "200:" && $2 != "429:" {print}' "$work/wrk.txt")"
echo "load_test: 200s ${n200:-0}, 429s ${n429:-0}; RSS ${rss_before} KiB before, ${rss_after} KiB after; next request: $after"

fail=0
[ -z "$others" ] || { echo "load_test: FAIL: statuses other than 200/429: $others" >&2; fail=1; }
[ "${n200:-0}" -gt 0 ] || { echo "load_test: FAIL: no request succeeded" >&2; fail=1; }
[ "$after" = "200" ] || { echo "load_test: FAIL: the server did not answer after the load ($after)" >&2; fail=1; }
[ "$rss_after" -le $(( rss_before + 65536 )) ] || { echo "load_test: FAIL: RSS grew by more than 64 MiB" >&2; fail=1; }
kill -TERM "$server_pid"
wait "$server_pid" || { echo "load_test: FAIL: the server did not exit 0 on SIGTERM" >&2; fail=1; }
server_pid=""
[ "$fail" -eq 0 ] && echo "load_test: ok"
exit "$fail"
