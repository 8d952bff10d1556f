#!/usr/bin/env bash
# heartbeat-load.sh: the heartbeat protocol under load on loopback (issue 9,
# benchmark (b)). NODES simulated agents (host/examples/heartbeat_load.rs),
# each with its own HTTP/1.1 keep-alive connection, register with a fresh
# release `weft serve --no-local-agent` and heartbeat it as `weft agent`
# does; the generator measures heartbeats answered per second and their
# latency (p50, p99, max) client side, and, with containers submitted, the
# launch orders that reach the agents per second.
#
#   bench-scripts/heartbeat-load.sh heartbeats    RUNS runs: NODES agents every HB_MS (no apps)
#   bench-scripts/heartbeat-load.sh allocations   RUNS runs: NODES agents every ALLOC_HB_MS,
#                                                 CONTAINERS of /bin/true submitted when the window opens
#   bench-scripts/heartbeat-load.sh sweep         RUNS runs at each of SWEEP_MS (no apps): where p99 passes 10 ms
#   bench-scripts/heartbeat-load.sh all           heartbeats, then allocations (default)
#
# Each run is a fresh server (its own data dir), started with its open-file
# limit raised and these connection caps raised, because the generator is ONE
# client address holding NODES connections (the defaults are 256 per client
# address and half the open-file limit, at most 10,000, in all):
#   --set weft.http.max-connections=$MAX_CONN --set weft.http.max-connections-per-client=$MAX_CONN
# The server is stopped by its PID after each run (SIGTERM, then SIGKILL
# after 10 s); nothing else is touched. Per run the generator prints its
# table and one RESULT line; the script then prints medians and ranges.
# The generator runs on the same 2 cores as the server: its own CPU and the
# server's (per thread) are in each table.
#
# Environment (defaults in brackets):
#   WEFT [target/release/weft]  GEN [target/release/examples/heartbeat_load]
#     (build: cargo build --release && cargo build --release -p weft-host --example heartbeat_load)
#   RUNS [3]  NODES [10000]  WARMUP_S [5]  DURATION_S [20]  GEN_THREADS [1]
#   HB_MS [500]                  heartbeats: the server's heartbeat interval (NODES / HB_MS offered)
#   SWEEP_MS ["1000 667 500 400"] sweep: the intervals tried
#   ALLOC_HB_MS [1000]           allocations: the heartbeat interval (YARN's default)
#   SCHED_MS [100]               weft.scheduler.interval-ms (the default)
#   CONTAINERS [3000000]         allocations: containers submitted (apps of 1,000,000)
#   ALLOC_DURATION_S [30]        allocations: the window, from the submission
#   ALLOC_OOB [1]                allocations: 1 = the agents report ends at once, as `weft agent`
#                                does (--out-of-band); 0 = only at the interval, as YARN's NodeManager
#                                does (every allocations figure before 2026-11-28 16:30 UTC)
#   AFTER_ANSWER [agent]         when an agent's next regular heartbeat goes (the generator's
#                                --after-answer): agent = up to 10 % sooner than the interval after the
#                                answer, at random, as weft agent waits; interval = an interval after every
#                                answer; grid = its phase kept unless the answer was late (every figure
#                                before 2026-11-28 21:00 UTC)
#   NODE_VCORES [16] NODE_MEMORY_MB [65536]  each simulated node (1 vcore, 1024 MB a container):
#                                160,000 containers fit at once on 10,000 nodes
#   PORT [18490]  MAX_CONN [15000]  BENCH_DIR [/tmp/weft-heartbeat-bench]
set -u
cd "$(dirname "$0")/.." || exit 1
MODE=${1:-all}
WEFT=${WEFT:-target/release/weft}
GEN=${GEN:-target/release/examples/heartbeat_load}
RUNS=${RUNS:-3}
NODES=${NODES:-10000}
WARMUP_S=${WARMUP_S:-5}
DURATION_S=${DURATION_S:-20}
GEN_THREADS=${GEN_THREADS:-1}
HB_MS=${HB_MS:-500}
SWEEP_MS=${SWEEP_MS:-1000 667 500 400}
ALLOC_HB_MS=${ALLOC_HB_MS:-1000}
SCHED_MS=${SCHED_MS:-100}
CONTAINERS=${CONTAINERS:-3000000}
ALLOC_DURATION_S=${ALLOC_DURATION_S:-30}
ALLOC_OOB=${ALLOC_OOB:-1}
AFTER_ANSWER=${AFTER_ANSWER:-agent}
NODE_VCORES=${NODE_VCORES:-16}
NODE_MEMORY_MB=${NODE_MEMORY_MB:-65536}
PORT=${PORT:-18490}
MAX_CONN=${MAX_CONN:-15000}
BENCH_DIR=${BENCH_DIR:-/tmp/weft-heartbeat-bench}
URL=http://127.0.0.1:$PORT
RESULTS=$BENCH_DIR/results.tsv
SERVE_PID=""

say() { echo "heartbeat-bench: $*" >&2; }
die() { say "ERROR: $*"; stop_server; exit 1; }
load() { cut -d' ' -f1-3 /proc/loadavg | tr ' ' ','; }

stop_server() {
  [ -n "$SERVE_PID" ] || return 0
  kill -TERM "$SERVE_PID" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$SERVE_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$SERVE_PID" 2>/dev/null
  wait "$SERVE_PID" 2>/dev/null
  SERVE_PID=""
}
trap 'stop_server' EXIT
trap 'exit 130' INT TERM

[ -x "$WEFT" ] || die "no $WEFT (cargo build --release)"
[ -x "$GEN" ] || die "no $GEN (cargo build --release -p weft-host --example heartbeat_load)"
# One connection per agent, on both sides of loopback.
ulimit -n "$(ulimit -Hn)" || die "cannot raise the open-file limit"
[ "$(ulimit -n)" -gt $((NODES + 100)) ] || die "open-file limit $(ulimit -n) is too low for $NODES connections"
mkdir -p "$BENCH_DIR"
[ -f "$RESULTS" ] || printf 'kind\trun\tstart_utc\tload_before\tresult\n' >"$RESULTS"

# run KIND N INTERVAL_MS WINDOW_S [generator args…]
run() {
  local kind=$1 n=$2 hb=$3 window=$4; shift 4
  local dir=$BENCH_DIR/$kind-$n
  rm -rf "$dir"; mkdir -p "$dir"
  local before; before=$(load)
  local start; start=$(date -u +%H:%M:%S)
  "$WEFT" serve --no-local-agent --listen "127.0.0.1:$PORT" --data-dir "$dir/data" \
    --set "weft.http.max-connections=$MAX_CONN" --set "weft.http.max-connections-per-client=$MAX_CONN" \
    --set "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms=$hb" \
    --set "weft.scheduler.interval-ms=$SCHED_MS" \
    >"$dir/server.out" 2>"$dir/server.log" &
  SERVE_PID=$!
  for _ in $(seq 300); do grep -q listening "$dir/server.out" 2>/dev/null && break; sleep 0.1; done
  grep -q listening "$dir/server.out" || die "the server did not start: $(tail -3 "$dir/server.log")"
  say "$kind run $n ($start UTC, load $before): $NODES agents every $hb ms"
  "$GEN" --server "$URL" --nodes "$NODES" --warmup-s "$WARMUP_S" --duration-s "$window" \
    --threads "$GEN_THREADS" --server-pid "$SERVE_PID" --after-answer "$AFTER_ANSWER" "$@" >"$dir/generator.out" 2>"$dir/generator.err" \
    || die "the generator failed: $(tail -3 "$dir/generator.err")"
  stop_server
  cat "$dir/generator.out"
  local result; result=$(grep '^RESULT ' "$dir/generator.out" | cut -d' ' -f2-)
  printf '%s\t%s\t%s\t%s\t%s\n' "$kind" "$n" "$start" "$before" "$result" >>"$RESULTS"
  echo "$result" >>"$BENCH_DIR/$kind.latest"
}

summarize() { # KIND
  [ -s "$BENCH_DIR/$1.latest" ] || return 0
  python3 - "$1" "$BENCH_DIR/$1.latest" <<'EOF'
import statistics, sys
kind, path = sys.argv[1], sys.argv[2]
runs = [dict(kv.split("=", 1) for kv in line.split()) for line in open(path) if line.strip()]
def col(key):
    values = [float(r[key]) for r in runs]
    return statistics.median(values), min(values), max(values)
keys = ["heartbeats_per_s", "p50_ms", "p99_ms", "max_ms", "generator_cpu_pct", "server_cpu_pct"]
if kind == "allocations":
    keys += ["allocations_per_s", "peak_allocations_per_s"]
print(f"\n{kind}: {len(runs)} runs, {runs[0]['nodes']} agents every {runs[0]['interval_ms']} ms "
      f"(offered {runs[0]['offered_per_s']} heartbeats/s); median [min–max]")
for key in keys:
    m, lo, hi = col(key)
    print(f"  {key:24} {m:10.2f}  [{lo:.2f}–{hi:.2f}]")
errors = sum(int(r["errors"]) + int(r["non200"]) for r in runs)
print(f"  errors and non-200 answers in all runs: {errors}")
EOF
}

heartbeats() {
  rm -f "$BENCH_DIR/heartbeats.latest"
  for n in $(seq "$RUNS"); do run heartbeats "$n" "$HB_MS" "$DURATION_S"; done
  summarize heartbeats
}

sweep() {
  for hb in $SWEEP_MS; do
    rm -f "$BENCH_DIR/sweep-$hb.latest"
    for n in $(seq "$RUNS"); do run "sweep-$hb" "$n" "$hb" "$DURATION_S"; done
    summarize "sweep-$hb"
  done
}

allocations() {
  rm -f "$BENCH_DIR/allocations.latest"
  local oob=()
  [ "$ALLOC_OOB" = 1 ] && oob=(--out-of-band)
  for n in $(seq "$RUNS"); do
    run allocations "$n" "$ALLOC_HB_MS" "$ALLOC_DURATION_S" --containers "$CONTAINERS" --per-app 1000000 \
      --node-vcores "$NODE_VCORES" --node-memory-mb "$NODE_MEMORY_MB" "${oob[@]}"
  done
  summarize allocations
}

case "$MODE" in
  heartbeats) heartbeats ;;
  allocations) allocations ;;
  sweep) sweep ;;
  all) heartbeats; allocations ;;
  *) die "unknown mode $MODE (heartbeats, allocations, sweep or all)" ;;
esac
