#!/usr/bin/env bash
# Runs a command inside a fresh cgroup memory limit and prints the cgroup's peak usage
# (page cache included, as on a VM of that size). For the memory figures of the
# README/closing notes: runnel and llama.cpp side by side under the same limit.
#
#   scripts/in_cgroup.sh 6G -- build-release/runnel run -m MODEL -p "..." -n 16
#   scripts/in_cgroup.sh 2.5G -- node scripts/llama_generate.mjs MODEL 16 4096 2
# Needs root and cgroup v1 (memory controller) or v2. Evicts the command's model file
# (the first *.gguf argument) from the page cache first, so its reads are charged here.
set -euo pipefail
[ $# -ge 3 ] && [ "$2" = "--" ] || { echo "usage: in_cgroup.sh LIMIT -- COMMAND..." >&2; exit 2; }
limit_text="$1"
shift 2
limit="$(python3 -c '
import sys
t = sys.argv[1].upper().rstrip("B").rstrip("I")
mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:], 1)
print(int(float(t[:-1] if t[-1:] in "KMG" else t) * mult))' "$limit_text")"
name="runnel-measure-$$"
if [ -w /sys/fs/cgroup/memory ]; then
  dir="/sys/fs/cgroup/memory/$name"
  mkdir "$dir"
  echo "$limit" > "$dir/memory.limit_in_bytes"
  echo "$limit" > "$dir/memory.memsw.limit_in_bytes" 2>/dev/null || true
  peak_file="$dir/memory.max_usage_in_bytes"
elif [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  dir="/sys/fs/cgroup/$name"
  mkdir "$dir"
  echo "$limit" > "$dir/memory.max"
  echo 0 > "$dir/memory.swap.max" 2>/dev/null || true
  peak_file="$dir/memory.peak"
else
  echo "in_cgroup: no writable cgroup memory controller" >&2
  exit 1
fi
trap 'rmdir "$dir" 2>/dev/null || true' EXIT
for arg in "$@"; do
  case "$arg" in
    *.gguf) [ -f "$arg" ] && python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$arg"; break ;;
  esac
done
set +e
sh -c 'echo $$ > "$1"; shift; exec "$@"' sh "$dir/cgroup.procs" "$@"
status=$?
set -e
peak="$(cat "$peak_file")"
echo "in_cgroup: exit $status, peak usage $((peak >> 20)) MiB of $((limit >> 20)) MiB limit" >&2
exit "$status"
