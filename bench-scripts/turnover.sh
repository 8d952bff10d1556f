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
settings=()
for property in ${WEFT_SET:-}; do settings+=(--set "$property"); done
"$binary" serve --listen "127.0.0.1:$port" --data-dir "$dir/data" "${settings[@]}" >"$dir/out" 2>"$dir/err" &
server=$!
trap 'kill -INT "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; [ -n "${KEEP_IN:-}" ] || rm -rf "$dir"' EXIT
for _ in $(seq 100); do
    grep -q listening "$dir/out" 2>/dev/null && break
    sleep 0.1
done
sleep 1 # the local agent registers
start=$(date +%s.%N)
"$binary" app run --server "http://127.0.0.1:$port" -n "$count" --memory 64mb --vcores 1 \
    --wait -- /bin/true >/dev/null 2>&1
end=$(date +%s.%N)
echo "$(basename "$binary") $(echo "$end - $start" | bc)"
