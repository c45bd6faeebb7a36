#!/usr/bin/env bash
# A fleet on one machine: N `runnel serve` replicas on loopback ports and Debian's nginx
# in front of them (native/server/deploy/nginx.conf.in: least connections, conversation
# affinity by the X-Conversation-Id header, a refused or draining replica retried once on
# another, streams unbuffered). nginx runs unprivileged with its config, temp files and
# logs in a scratch folder.
#
#   scripts/fleet.sh start N MODEL [-- extra serve args]   # prints `front URL`, then
#                                                           # `replica PID URL` per replica
#   scripts/fleet.sh restart I     # replica I (1..N): SIGTERM, wait for its in-flight
#                                  # requests, start it again on its port, wait until
#                                  # nginx uses it again (5 s; a rolling restart is one
#                                  # call per replica); prints its line
#   scripts/fleet.sh status        # the lines `start` printed, for what still runs
#   scripts/fleet.sh stop          # SIGTERM to all, waits for them
#
#   env: RUNNEL_BIN (default build-release/runnel), RUNNEL_FLEET_DIR (scratch folder,
#        default /tmp/runnel-fleet-$UID), RUNNEL_FLEET_PORT (the front's port, default
#        8100; replicas take the next N ports, each must be free), NGINX (the nginx
#        binary, default: nginx on the PATH, else /usr/sbin/nginx)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
binary="${RUNNEL_BIN:-$root/build-release/runnel}"
dir="${RUNNEL_FLEET_DIR:-/tmp/runnel-fleet-$(id -u)}"
base_port="${RUNNEL_FLEET_PORT:-8100}"
# Debian puts nginx in /usr/sbin, which is not on a normal user's PATH.
nginx_bin="${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}"
template="$root/native/server/deploy/nginx.conf.in"
# nginx takes a replica out for this long after a refused or 503 request (max_fails=1).
readonly kFailTimeoutS=5

die() { echo "fleet: $*" >&2; exit 1; }

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# start_replica I PORT: starts replica I on PORT with the saved model and args, waits
# until it listens (up to 120 s), records "I PID PORT" and prints its line.
start_replica() {
  local i="$1" port="$2" log="$dir/replica-$1.log" pid
  local -a args
  mapfile -t args <"$dir/serve-args"
  "$binary" serve --host 127.0.0.1 --port "$port" "${args[@]}" </dev/null >/dev/null 2>>"$log" &
  pid=$!
  for _ in $(seq 1 1200); do
    kill -0 "$pid" 2>/dev/null || { tail -5 "$log" >&2; die "replica $i exited before listening (log: $log)"; }
    [ "$(grep -c "listening on http://127.0.0.1:$port" "$log" 2>/dev/null)" -gt "$(cat "$dir/listens-$i" 2>/dev/null || echo 0)" ] && break
    sleep 0.1
  done
  grep -c "listening on http://127.0.0.1:$port" "$log" >"$dir/listens-$i"
  kill -0 "$pid" 2>/dev/null || die "replica $i did not start"
  grep -v "^$i " "$dir/replicas" 2>/dev/null >"$dir/replicas.new" || true
  echo "$i $pid $port" >>"$dir/replicas.new"
  sort -n "$dir/replicas.new" >"$dir/replicas"
  rm -f "$dir/replicas.new"
  echo "replica $pid http://127.0.0.1:$port"
}

# stop_pid PID: SIGTERM, then waits for the exit (in-flight requests end first).
stop_pid() {
  kill -TERM "$1" 2>/dev/null || return 0
  for _ in $(seq 1 600); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 0.1
  done
  echo "fleet: process $1 did not exit 60 s after SIGTERM; killing it" >&2
  kill -KILL "$1" 2>/dev/null || true
}

cmd_start() {
  [ $# -ge 2 ] || die "usage: fleet.sh start N MODEL [-- extra serve args]"
  local n="$1" model="$2"
  shift 2
  [ "${1:-}" = "--" ] && shift
  [[ "$n" =~ ^[1-9][0-9]*$ ]] && [ "$n" -le 64 ] || die "N must be in [1, 64], got '$n'"
  [ -f "$model" ] || die "no model file at '$model'"
  [ -x "$binary" ] || die "no runnel binary at $binary (build it, or set RUNNEL_BIN)"
  [ -x "$nginx_bin" ] || die "nginx is not installed (apt-get install nginx-light)"
  [ -f "$dir/replicas" ] && die "a fleet already runs from $dir (scripts/fleet.sh stop first)"
  for p in $(seq "$base_port" $((base_port + n))); do
    port_in_use "$p" && die "port $p is in use (set RUNNEL_FLEET_PORT to a free range of $((n + 1)) ports)"
  done
  mkdir -p "$dir"/tmp/{client_body,proxy,fastcgi,uwsgi,scgi}
  # Run as root, nginx's workers drop to nobody, who must write its temp files.
  [ "$(id -u)" -eq 0 ] && chmod -R a+rwx "$dir/tmp"
  rm -f "$dir"/replica-*.log "$dir"/listens-* "$dir/replicas"
  printf '%s\n' -m "$model" "$@" >"$dir/serve-args"

  local servers="" lines=() i
  for i in $(seq 1 "$n"); do
    servers+="    server 127.0.0.1:$((base_port + i)) max_fails=1 fail_timeout=${kFailTimeoutS}s;"$'\n'
  done
  local front="127.0.0.1:$base_port"
  awk -v prefix="$dir" -v listen="$front" -v servers="${servers%$'\n'}" '
    /^@SERVERS@$/ { print servers; next }
    { gsub(/@PREFIX@/, prefix); gsub(/@LISTEN@/, listen); print }' "$template" >"$dir/nginx.conf"
  for i in $(seq 1 "$n"); do
    lines+=("$(start_replica "$i" $((base_port + i)))") || { cmd_stop >/dev/null 2>&1; exit 1; }
  done
  "$nginx_bin" -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" 2>>"$dir/error.log" ||
    { cmd_stop >/dev/null 2>&1; die "nginx did not start: $(tail -3 "$dir/error.log")"; }
  for _ in $(seq 1 50); do port_in_use "$base_port" && break; sleep 0.1; done
  echo "http://$front" >"$dir/front"
  echo "front http://$front"
  printf '%s\n' "${lines[@]}"
}

cmd_restart() {
  [ $# -eq 1 ] || die "usage: fleet.sh restart I"
  [ -f "$dir/replicas" ] || die "no fleet runs from $dir"
  local line pid port
  line="$(grep "^$1 " "$dir/replicas")" || die "no replica $1 (replicas: $(cut -d' ' -f1 "$dir/replicas" | tr '\n' ' '))"
  read -r _ pid port <<<"$line"
  stop_pid "$pid"
  start_replica "$1" "$port"
  # nginx still counts the replica as failed (from the requests it refused while down)
  # for up to fail_timeout: restarting the next one sooner could leave no replica it
  # would use, and every request would get 502 meanwhile.
  sleep "$kFailTimeoutS"
}

cmd_status() {
  [ -f "$dir/replicas" ] || die "no fleet runs from $dir"
  echo "front $(cat "$dir/front" 2>/dev/null)"
  while read -r _ pid port; do
    kill -0 "$pid" 2>/dev/null && echo "replica $pid http://127.0.0.1:$port"
  done <"$dir/replicas"
}

cmd_stop() {
  if [ -f "$dir/nginx.pid" ]; then
    local npid
    npid="$(cat "$dir/nginx.pid")"
    kill -QUIT "$npid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$npid" 2>/dev/null || break; sleep 0.1; done
  fi
  if [ -f "$dir/replicas" ]; then
    local pids=()
    while read -r _ pid _; do pids+=("$pid"); kill -TERM "$pid" 2>/dev/null || true; done <"$dir/replicas"
    for pid in "${pids[@]}"; do stop_pid "$pid"; done
  fi
  rm -f "$dir/replicas" "$dir/front"
  echo "fleet: stopped"
}

case "${1:-}" in
  start) shift; cmd_start "$@" ;;
  restart) shift; cmd_restart "$@" ;;
  status) cmd_status ;;
  stop) cmd_stop ;;
  *) die "usage: fleet.sh start N MODEL [-- serve args] | restart I | status | stop" ;;
esac
