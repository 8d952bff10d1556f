#!/usr/bin/env bash
# turnover.sh: what a new user meets — `weft serve` at its defaults (its local
# agent sized to this machine), then
#   weft app run -n N --memory 64mb --vcores 1 --wait -- /bin/true
# timed from before the command to its return. Prints "BINARY SECONDS".
# The server is started on loopback in a fresh temp dir and stopped by its
# pid (SIGINT); nothing else is touched. The temp dir is removed at the end,
# unless KEEP_IN names a dir to make it in (the caller removes it later:
# see turnover-vs-slurm.sh for why). WEFT_SET may list properties for the
# server, KEY=VALUE separated by spaces (each passed as --set).
#
#   bench-scripts/turnover.sh BINARY PORT [N=100]
set -euo pipefail
binary=$1
port=$2
count=${3:-100}
dir=$(mktemp -d "${KEEP_IN:-/var/tmp}/weft-turnover-XXXX")
source "$(dirname "$0")/serve-local.sh"
server=
trap '[ -z "$server" ] || { kill -INT "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; }; [ -n "${KEEP_IN:-}" ] || rm -rf "$dir"' EXIT
start_local_server "$binary" "$port" "$dir"
start=$(date +%s.%N)
"$binary" app run --server "http://127.0.0.1:$port" -n "$count" --memory 64mb --vcores 1 \
    --wait -- /bin/true >/dev/null 2>&1
end=$(date +%s.%N)
echo "$(basename "$binary") $(echo "$end - $start" | bc)"
