#!/usr/bin/env bash
# container-syscalls.sh: what a container's system calls cost under the
# agent's settings — `weft serve` with its local agent (WEFT_SET may list
# properties, KEY=VALUE separated by spaces, e.g.
# "weft.agent.syscall-filter=false"), then one container running
#   dd if=/dev/zero of=/dev/null bs=1 count=N
# (N reads and N writes of one byte) and, to time calls the filter must
# read the arguments of, N/100 forks of /bin/true. Prints
# "ns-per-read-write NS ms-per-100-forks MS" as the container measured
# them. The server is started on loopback in a fresh temp dir and stopped
# by its pid (SIGINT); the dir is removed at the end.
#
#   bench-scripts/container-syscalls.sh BINARY PORT [N=2000000]
set -euo pipefail
binary=$1
port=$2
count=${3:-2000000}
dir=$(mktemp -d /var/tmp/weft-syscalls-XXXX)
source "$(dirname "$0")/serve-local.sh"
server=
trap '[ -z "$server" ] || { kill -INT "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; }; rm -rf "$dir"' EXIT
start_local_server "$binary" "$port" "$dir"
forks=$((count / 100))
probe="s=\$(date +%s%N); dd if=/dev/zero of=/dev/null bs=1 count=$count 2>/dev/null; m=\$(date +%s%N); \
i=0; while [ \$i -lt $forks ]; do /bin/true; i=\$((i+1)); done; e=\$(date +%s%N); \
echo ns-per-read-write \$(( (m - s) / ($count * 2) )) ms-per-100-forks \$(( (e - m) * 100 / $forks / 1000000 ))"
id=$("$binary" app run --server "http://127.0.0.1:$port" --memory 256mb --vcores 1 --wait --shell -- "$probe")
"$binary" app logs --server "http://127.0.0.1:$port" "$id" | grep '^ns-per-read-write'
