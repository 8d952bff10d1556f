#!/usr/bin/env bash
# app-latency.sh: how long one short app takes, as a new user sees it —
# `weft serve` at its defaults (its local agent), then
#   weft app run -n 1 --memory 64mb --vcores 1 --wait -- /bin/true
# timed from before the command to its return. For each round and each
# BINARY in turn: a fresh server on loopback in a temp dir, one warm-up
# app, then APPS apps one after another (SLEEP_S apart, so they meet the
# scheduling interval at different phases); the server is stopped by its
# pid (SIGTERM) and its dir removed. Prints each round's times and, per
# binary, the median, p90 and range over all rounds.
#
#   bench-scripts/app-latency.sh BINARY [BINARY...]
#
# Environment (defaults in brackets): ROUNDS [3] APPS [10] SLEEP_S [0.37] PORT [18777]
set -u
cd "$(dirname "$0")/.." || exit 1
[ $# -ge 1 ] || { echo "usage: $0 BINARY [BINARY...]" >&2; exit 2; }
ROUNDS=${ROUNDS:-3}
APPS=${APPS:-10}
SLEEP_S=${SLEEP_S:-0.37}
PORT=${PORT:-18777}
URL="http://127.0.0.1:$PORT"
OUT=$(mktemp -d /tmp/weft-app-latency.XXXXXX)
SERVE_PID=
cleanup() {
  if [ -n "$SERVE_PID" ]; then kill -TERM "$SERVE_PID" 2>/dev/null; wait "$SERVE_PID" 2>/dev/null; fi
  rm -rf "$OUT"
}
trap cleanup EXIT

ms_now() { date +%s%N; }
# One app of one /bin/true container through BINARY ($1), waited for.
run_app() { "$1" app run --server "$URL" -n 1 --memory 64mb --vcores 1 --wait -- /bin/true >/dev/null 2>&1; }

for round in $(seq "$ROUNDS"); do
  for binary in "$@"; do
    [ -x "$binary" ] || { echo "no $binary" >&2; exit 1; }
    dir="$OUT/run"; rm -rf "$dir"; mkdir -p "$dir"
    "$binary" serve --listen "127.0.0.1:$PORT" --data-dir "$dir/data" >"$dir/serve.log" 2>&1 &
    SERVE_PID=$!
    for _ in $(seq 100); do curl -sf "$URL/ws/v1/cluster/info" >/dev/null && break; sleep 0.1; done
    run_app "$binary" || { echo "the warm-up app failed ($binary); see its log:" >&2; tail -5 "$dir/serve.log" >&2; exit 1; }
    times=""
    for _ in $(seq "$APPS"); do
      start=$(ms_now)
      run_app "$binary" || { echo "an app failed ($binary)" >&2; exit 1; }
      times="$times $(( ($(ms_now) - start) / 1000000 ))"
      sleep "$SLEEP_S"
    done
    echo "$binary round $round (ms):$times"
    echo "$binary$times" >>"$OUT/times"
    kill -TERM "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null; SERVE_PID=
  done
done

python3 - "$OUT/times" <<'EOF'
import sys, statistics
by = {}
for line in open(sys.argv[1]):
    binary, *times = line.split()
    by.setdefault(binary, []).extend(int(t) for t in times)
for binary, times in by.items():
    times.sort()
    p90 = times[min(len(times) - 1, int(0.9 * len(times)))]
    print(f"{binary}: {len(times)} apps, median {statistics.median(times)} ms, p90 {p90} ms, range {times[0]}-{times[-1]} ms")
EOF
