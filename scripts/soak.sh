#!/usr/bin/env bash
# Soak test of `runnel serve`: a live server under mixed traffic for MINUTES (streams,
# non-streamed requests, cancels mid-stream, bad bodies, over-limit requests, 429s,
# embeddings: scripts/soak.mjs). Passes when every answer was a well-formed 2xx/4xx/429
# (no 5xx, no dropped connection but our cancels), RSS grew by at most 32 MiB after
# the warm-up (a quarter of the run, at most 60 s), open file descriptors are back to
# their count before the traffic, the server still answers afterwards and exits 0 on
# SIGTERM. Prints request counts by kind and status, RSS and descriptor figures.
#
#   scripts/soak.sh MINUTES [--workers 6]
#   env: RUNNEL_BIN (default build-release/runnel), RUNNEL_MODEL (default SmolLM2)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
binary="${RUNNEL_BIN:-$root/build-release/runnel}"
model="${RUNNEL_MODEL:-$root/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
minutes="${1:-}"
shift || true
workers=6
while [ $# -gt 0 ]; do
  case "$1" in
    --workers) workers="$2"; shift 2 ;;
    *) echo "soak: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ "$minutes" =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "usage: scripts/soak.sh MINUTES [--workers N]" >&2; exit 2; }
[ -x "$binary" ] || { echo "soak: no runnel binary at $binary" >&2; exit 1; }
[ -d "$root/tests/server/node_modules/openai" ] || { echo "soak: run npm ci in tests/server first" >&2; exit 1; }

work="$(mktemp -d)"
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# Two slots and a queue of two for six workers: some requests must get 429.
"$binary" serve -m "$model" --port 0 --slots 2 --queue 2 --max-body-bytes 1048576 \
  --max-completion-tokens 48 --log-disable 2>"$work/server.log" &
server_pid=$!
for _ in $(seq 1 600); do
  grep -q "listening on" "$work/server.log" 2>/dev/null && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
  sleep 0.1
done
port="$(grep -o '127.0.0.1:[0-9]*' "$work/server.log" | head -1 | cut -d: -f2 || true)"
[ -n "$port" ] || { echo "soak: FAIL: the server did not start; server.log:" >&2; cat "$work/server.log" >&2; exit 1; }
url="http://127.0.0.1:$port"

fail=0
node "$root/scripts/soak.mjs" --url "$url" --pid "$server_pid" --minutes "$minutes" --workers "$workers" || fail=1

kill -0 "$server_pid" 2>/dev/null || { echo "soak: FAIL: the server died; server.log:" >&2; cat "$work/server.log" >&2; exit 1; }
after="$(curl -s --max-time 30 -o /dev/null -w '%{http_code}' "$url/v1/chat/completions" \
  -H 'Content-Type: application/json' -d '{"messages":[{"role":"user","content":"Hi"}],"max_tokens":4}' || true)"
[ "$after" = "200" ] || { echo "soak: FAIL: the server did not answer after the soak ($after)" >&2; fail=1; }
kill -TERM "$server_pid"
wait "$server_pid" || { echo "soak: FAIL: the server did not exit 0 on SIGTERM; server.log:" >&2; cat "$work/server.log" >&2; fail=1; }
server_pid=""
[ "$fail" -eq 0 ] && echo "soak: ok"
exit "$fail"
