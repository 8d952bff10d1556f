#!/usr/bin/env bash
# durability.sh: what durability costs and how fast state comes back, through
# the release `weft serve` (host/examples/durability_load.rs drives it).
#
#   bench-scripts/durability.sh submit    durable submissions/s, SQLite and PostgreSQL 15 side by side
#   bench-scripts/durability.sh failover  kill -9 of the active of two servers on one PostgreSQL:
#                                         time until the standby is ACTIVE and accepts a submission
#   bench-scripts/durability.sh restart   kill -9 and restart of a SQLite server holding
#                                         RUNNING containers and PENDING more; time to the first
#                                         answer with the state back
#   bench-scripts/durability.sh all       the three, in that order (default)
#
# submit: for each of RUNS rounds, for each concurrency in CONCURRENCY, a fresh
# server on SQLite (DATA dir under BENCH_DIR, i.e. the real disk) and then a
# fresh server on a fresh PostgreSQL 15 (fsync on; its cluster under $TMPDIR
# or /tmp), each with --no-local-agent and no nodes, so submissions are all
# that happens. The generator POSTs {"project":"p","asks":[{"count":1,
# "memory_mb":256,"vcores":1,"duration_ms":1000}]} from C threads (one
# keep-alive connection each) for WARMUP_S + DURATION_S and counts 202s and
# their latency in the last DURATION_S. A 202 is sent only once the app is
# committed (the event loop commits what is queued together, at most 64
# commands per commit), so concurrency matters. Every app stays pending, so
# the queue's maximum-applications (default 10,000) is raised to MAX_APPS.
# Per run the generator also prints the 202s of every second since its start:
# the rate falls as pending apps pile up (see BENCHMARKS.md).
#
# failover: one PostgreSQL 15 (fsync on) per lease; two servers on it with
# --set weft.store.url=URL --set weft.ha.lease-ms=L (for each L in LEASES).
# FAILOVER_RUNS times: wait until one is ACTIVE and the other STANDBY, wait
# SETTLE_S plus a random part of a lease (a random phase against the renewals),
# kill -9 the active (the generator sends the signal and starts its clock),
# poll the standby's GET /ws/v1/cluster/info every 5 ms until haState is
# ACTIVE, then POST a submission until one is accepted; restart
# the killed one (it becomes the next standby). With PENDING_APPS > 0 the
# database first gets that many pending apps.
#
# restart: a SQLite server with --sim-nodes SIM_NODES gets R_APPS apps of
# R_COUNT containers (R_DURATION_MS each, so they keep running); the script
# waits until RUNNING run and PENDING pend, then R_RUNS times: kill -9, start
# the same command again, and time from the start (date +%s%N just before
# the exec) to the first 200 of GET /ws/v1/cluster/apps?limit=1 naming the
# newest app; then it reads /ws/v1/cluster/metrics (containers allocated and
# pending must be the same as before) and the server's "recovered the state
# the store holds" log line. PERF=1 runs the restarted server under
# `perf record -g` (perf.data in the run's dir).
#
# Everything this script starts it stops by its PID (SIGTERM, then SIGKILL
# after 10 s; PostgreSQL through its generator, which stops and removes the
# cluster on SIGTERM). Results: BENCH_DIR/results.tsv and each run's dir.
#
# Environment (defaults in brackets):
#   WEFT [target/release/weft]  GEN [target/release/examples/durability_load]
#     (build: cargo build --release && cargo build --release -p weft-host --example durability_load)
#   BENCH_DIR [/tmp/weft-durability-bench]  PORT [18500] (uses PORT..PORT+2)
#   RUNS [3]  CONCURRENCY ["1 8 64"]  WARMUP_S [2]  DURATION_S [10]
#   BACKENDS ["sqlite postgres"]  (also: postgres-nofsync, a PostgreSQL with fsync and
#                                  synchronous_commit off, to see what the flush costs)
#   MAX_APPS [1000000]
#   SUBMIT_SERVE_ARGS [""]  more `weft serve` arguments for submit, e.g. "--sim-nodes 20x1048576mb,4096vcores"
#   FILL_APPS [0]          submit: that many apps are submitted (and stay pending) before the
#                          generator starts, so the rate is measured beside that many pending apps
#   SUBMIT_APP_DURATION_MS [1000]  each submitted container's duration (with SUBMIT_SERVE_ARGS
#                          giving nodes and a short duration, apps end and leave the active set)
#   LEASES ["6000 1500"]  FAILOVER_RUNS [5]  SETTLE_S [3]  PENDING_APPS [0]
#   SIM_NODES [100x25600mb,100vcores]  R_APPS [110]  R_COUNT [1000]  R_DURATION_MS [2592000000]
#   RUNNING [10000]  PENDING [100000]  R_RUNS [3]  R_FILL_CONCURRENCY [32]  PERF [0]
set -u
cd "$(dirname "$0")/.." || exit 1
MODE=${1:-all}
WEFT=${WEFT:-target/release/weft}
GEN=${GEN:-target/release/examples/durability_load}
BENCH_DIR=${BENCH_DIR:-/tmp/weft-durability-bench}
PORT=${PORT:-18500}
RUNS=${RUNS:-3}
CONCURRENCY=${CONCURRENCY:-1 8 64}
WARMUP_S=${WARMUP_S:-2}
DURATION_S=${DURATION_S:-10}
BACKENDS=${BACKENDS:-sqlite postgres}
MAX_APPS=${MAX_APPS:-1000000}
SUBMIT_SERVE_ARGS=${SUBMIT_SERVE_ARGS:-}
FILL_APPS=${FILL_APPS:-0}
SUBMIT_APP_DURATION_MS=${SUBMIT_APP_DURATION_MS:-1000}
LEASES=${LEASES:-6000 1500}
FAILOVER_RUNS=${FAILOVER_RUNS:-5}
SETTLE_S=${SETTLE_S:-3}
PENDING_APPS=${PENDING_APPS:-0}
SIM_NODES=${SIM_NODES:-100x25600mb,100vcores}
R_APPS=${R_APPS:-110}
R_COUNT=${R_COUNT:-1000}
R_DURATION_MS=${R_DURATION_MS:-2592000000}
RUNNING=${RUNNING:-10000}
PENDING=${PENDING:-100000}
R_RUNS=${R_RUNS:-3}
R_FILL_CONCURRENCY=${R_FILL_CONCURRENCY:-32}
PERF=${PERF:-0}
RESULTS=$BENCH_DIR/results.tsv
CAP="yarn.scheduler.capacity.maximum-applications=$MAX_APPS"

# pid -> what, of everything started here and not yet stopped
declare -A STARTED=()

say() { echo "durability-bench: $*" >&2; }
die() { say "ERROR: $*"; stop_all; exit 1; }
load() { cut -d' ' -f1-3 /proc/loadavg | tr ' ' ','; }
ms_now() { echo $(($(date +%s%N) / 1000000)); }

# stop PID: SIGTERM, then SIGKILL after 10 s; reaps it.
stop() {
  local pid=$1
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  unset "STARTED[$pid]"
}
# kill9 PID: the crash under test; reaps it.
kill9() {
  kill -KILL "$1" 2>/dev/null
  wait "$1" 2>/dev/null
  unset "STARTED[$1]"
}
stop_all() {
  local pid
  # Servers first, PostgreSQL (its generator) last.
  for pid in "${!STARTED[@]}"; do [ "${STARTED[$pid]}" = postgres ] || stop "$pid"; done
  for pid in "${!STARTED[@]}"; do stop "$pid"; done
}
trap 'stop_all' EXIT
trap 'exit 130' INT TERM

[ -x "$WEFT" ] || die "no $WEFT (cargo build --release)"
[ -x "$GEN" ] || die "no $GEN (cargo build --release -p weft-host --example durability_load)"
mkdir -p "$BENCH_DIR"
[ -f "$RESULTS" ] || printf 'mode\tstart_utc\tload_before\tresult\n' >"$RESULTS"
# record MODE START_UTC LOAD_BEFORE RESULT
record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$RESULTS"; }

# start_postgres DIR [--no-fsync]: a fresh PostgreSQL 15 (fsync on unless
# --no-fsync); sets PG_PID and PG_URL.
start_postgres() {
  local dir=$1; shift
  "$GEN" postgres "$@" >"$dir/postgres.out" 2>"$dir/postgres.err" &
  PG_PID=$!
  STARTED[$PG_PID]=postgres
  for _ in $(seq 600); do grep -q '^url=' "$dir/postgres.out" 2>/dev/null && break; sleep 0.1; done
  grep -q '^url=' "$dir/postgres.out" || die "PostgreSQL did not start: $(tail -3 "$dir/postgres.err")"
  PG_URL=$(sed -n 's/^url=\([^ ]*\).*/\1/p' "$dir/postgres.out")
  say "PostgreSQL: $(cat "$dir/postgres.out")"
}

# start_server NAME PORT DIR [serve args…]: sets SERVER_PID; waits until it listens.
start_server() {
  local name=$1 port=$2 dir=$3; shift 3
  mkdir -p "$dir"
  "$WEFT" serve --no-local-agent --listen "127.0.0.1:$port" --data-dir "$dir/data" --set "$CAP" "$@" \
    >"$dir/$name.out" 2>"$dir/$name.log" &
  SERVER_PID=$!
  STARTED[$SERVER_PID]=server
  for _ in $(seq 600); do grep -q listening "$dir/$name.out" 2>/dev/null && break; sleep 0.05; done
  grep -q listening "$dir/$name.out" || die "$name did not start: $(tail -3 "$dir/$name.log")"
}

ha_state() { # PORT -> ACTIVE, STANDBY or nothing
  curl -s -m 2 "http://127.0.0.1:$1/ws/v1/cluster/info" | jq -r '.clusterInfo.haState // empty' 2>/dev/null
}
wait_state() { # PORT STATE
  for _ in $(seq 600); do [ "$(ha_state "$1")" = "$2" ] && return 0; sleep 0.05; done
  die "127.0.0.1:$1 never became $2"
}

# ------------------------------------------------------------------ submit

submit() {
  rm -f "$BENCH_DIR/submit.latest"
  local run c backend dir before url
  for run in $(seq "$RUNS"); do
    for c in $CONCURRENCY; do
      for backend in $BACKENDS; do
        dir=$BENCH_DIR/submit-$backend-c$c-$run
        rm -rf "$dir"; mkdir -p "$dir"
        before=$(load)
        local start; start=$(date -u +%H:%M:%S)
        local store_args=()
        case "$backend" in
          sqlite) ;;
          postgres) start_postgres "$dir" ;;
          postgres-nofsync) start_postgres "$dir" --no-fsync ;;
          *) die "unknown backend $backend (sqlite, postgres, postgres-nofsync)" ;;
        esac
        [ "$backend" = sqlite ] || store_args=(--set "weft.store.url=$PG_URL")
        # shellcheck disable=SC2086  # SUBMIT_SERVE_ARGS is split on purpose
        start_server server "$PORT" "$dir" "${store_args[@]}" $SUBMIT_SERVE_ARGS
        [ "$backend" = sqlite ] || wait_state "$PORT" ACTIVE
        if [ "$FILL_APPS" -gt 0 ]; then
          "$GEN" fill --server "http://127.0.0.1:$PORT" --apps "$FILL_APPS" --concurrency 32 \
            >"$dir/fill.out" 2>"$dir/fill.err" || die "the fill failed: $(tail -3 "$dir/fill.err")"
          say "filled: $(tail -1 "$dir/fill.out")"
        fi
        say "submit run $run, $backend, concurrency $c, $FILL_APPS apps pending before ($start UTC, load $before)"
        "$GEN" submit --server "http://127.0.0.1:$PORT" --concurrency "$c" --warmup-s "$WARMUP_S" \
          --duration-s "$DURATION_S" --server-pid "$SERVER_PID" --label "$backend" --duration-ms "$SUBMIT_APP_DURATION_MS" \
          >"$dir/generator.out" 2>"$dir/generator.err" || die "the generator failed: $(tail -3 "$dir/generator.err")"
        stop "$SERVER_PID"
        [ "$backend" = sqlite ] || stop "$PG_PID"
        cat "$dir/generator.out"
        local result; result=$(grep '^RESULT ' "$dir/generator.out" | cut -d' ' -f2-)
        record submit "$start" "$before" "run=$run load_after=$(load) $result"
        echo "run=$run $result" >>"$BENCH_DIR/submit.latest"
      done
    done
  done
  python3 - "$BENCH_DIR/submit.latest" <<'EOF'
import statistics, sys
runs = [dict(kv.split("=", 1) for kv in line.split()) for line in open(sys.argv[1]) if line.strip()]
groups = {}
for r in runs:
    groups.setdefault((int(r["concurrency"]), r["label"]), []).append(r)
print("\nsubmissions: median [min–max] over runs")
print(f"{'conc':>5} {'store':9} {'runs':>4} {'acked/s':>24} {'p50 ms':>22} {'p99 ms':>22} {'per commit':>10} {'non-202':>8} {'errors':>6}")
for (c, label), rs in sorted(groups.items()):
    def col(k):
        v = [float(r[k]) for r in rs]
        return f"{statistics.median(v):8.2f} [{min(v):.2f}–{max(v):.2f}]"
    pc = statistics.median(float(r["per_commit"]) for r in rs)
    print(f"{c:>5} {label:9} {len(rs):>4} {col('acked_per_s'):>24} {col('p50_ms'):>22} {col('p99_ms'):>22} {pc:>10.2f} "
          f"{sum(int(r['non202']) for r in rs):>8} {sum(int(r['errors']) for r in rs):>6}")
EOF
}

# ------------------------------------------------------------------ failover

# log_ms LOG PATTERN: the ms since the epoch of the first log line matching PATTERN.
log_ms() {
  grep -m1 -- "$2" "$1" 2>/dev/null | sed 's/\x1b\[[0-9;]*m//g' | awk '{print $1}' |
    python3 -c 'import sys,datetime; t=sys.stdin.read().strip(); print(int(datetime.datetime.fromisoformat(t.replace("Z","+00:00")).timestamp()*1000) if t else "")' 2>/dev/null
}

failover() {
  local lease run dir before
  for lease in $LEASES; do
    dir=$BENCH_DIR/failover-$lease-p$PENDING_APPS
    rm -rf "$dir"; mkdir -p "$dir"
    rm -f "$BENCH_DIR/failover-$lease-p$PENDING_APPS.latest"
    start_postgres "$dir"
    local args=(--set "weft.store.url=$PG_URL" --set "weft.ha.lease-ms=$lease")
    # Two servers; A is started first and becomes active.
    local ports=($((PORT + 1)) $((PORT + 2))) pids=() logs=() gen=0
    start_server "server-$gen-a" "${ports[0]}" "$dir/a" "${args[@]}"; pids[0]=$SERVER_PID
    logs[0]=$dir/a/server-$gen-a.log
    wait_state "${ports[0]}" ACTIVE
    start_server "server-$gen-b" "${ports[1]}" "$dir/b" "${args[@]}"; pids[1]=$SERVER_PID
    logs[1]=$dir/b/server-$gen-b.log
    wait_state "${ports[1]}" STANDBY
    local active=0
    if [ "$PENDING_APPS" -gt 0 ]; then
      "$GEN" fill --server "http://127.0.0.1:${ports[0]}" --apps "$PENDING_APPS" --concurrency 32 \
        >"$dir/fill.out" 2>&1 || die "fill failed: $(tail -3 "$dir/fill.out")"
      say "$(head -1 "$dir/fill.out")"
    fi
    for run in $(seq "$FAILOVER_RUNS"); do
      local standby=$((1 - active))
      # A random phase against the lease's renewals and the standby's polls.
      sleep "$(python3 -c "import random; print(round($SETTLE_S + random.random() * $lease / 1000, 3))")"
      before=$(load)
      local start; start=$(date -u +%H:%M:%S)
      say "failover lease $lease ms, run $run ($start UTC, load $before): kill -9 of 127.0.0.1:${ports[$active]}"
      "$GEN" failover --kill-pid "${pids[$active]}" --active "http://127.0.0.1:${ports[$active]}" \
        --standby "http://127.0.0.1:${ports[$standby]}" >"$dir/run-$run.out" 2>&1 \
        || die "failover run $run failed: $(tail -3 "$dir/run-$run.out")"
      kill9 "${pids[$active]}"
      cat "$dir/run-$run.out"
      local result; result=$(grep '^RESULT ' "$dir/run-$run.out" | cut -d' ' -f2-)
      # The standby's own view: when it was elected and when its state was back.
      local log=${logs[$standby]}
      local killed_ms; killed_ms=$(( $(echo "$result" | sed 's/.*killed_ns=\([0-9]*\).*/\1/') / 1000000 ))
      local elected recovered
      elected=$(log_ms "$log" "elected: taking over")
      recovered=$(log_ms "$log" "recovered the state the store holds")
      local extra="elected_ms=$(( ${elected:-0} - killed_ms )) recovered_ms=$(( ${recovered:-0} - killed_ms ))"
      echo "  standby's log: elected $(( ${elected:-0} - killed_ms )) ms after the kill, state recovered $(( ${recovered:-0} - killed_ms )) ms after"
      record failover "$start" "$before" "lease_ms=$lease pending_apps=$PENDING_APPS run=$run $result $extra"
      echo "lease_ms=$lease run=$run $result $extra" >>"$BENCH_DIR/failover-$lease-p$PENDING_APPS.latest"
      # The killed one comes back as the next standby.
      gen=$((gen + 1))
      local side; side=$([ $active = 0 ] && echo a || echo b)
      start_server "server-$gen-$side" "${ports[$active]}" "$dir/$side" "${args[@]}"; pids[$active]=$SERVER_PID
      logs[$active]=$dir/$side/server-$gen-$side.log
      wait_state "${ports[$active]}" STANDBY
      active=$standby
    done
    stop "${pids[0]}"; stop "${pids[1]}"
    stop "$PG_PID"
    python3 - "$BENCH_DIR/failover-$lease-p$PENDING_APPS.latest" "$lease" <<'EOF'
import statistics, sys
runs = [dict(kv.split("=", 1) for kv in line.split()) for line in open(sys.argv[1]) if line.strip()]
lease = int(sys.argv[2])
target = lease + lease // 3
print(f"\nfailover, lease {lease} ms ({len(runs)} runs); target: under {target} ms (lease + lease/3)" + (" and 10,000 ms" if lease == 6000 else ""))
for key in ["elected_ms", "recovered_ms", "active_ms", "accepted_ms"]:
    v = [float(r[key]) for r in runs]
    print(f"  {key:14} median {statistics.median(v):8.0f}  max {max(v):8.0f}  min {min(v):8.0f}  all {' '.join(f'{x:.0f}' for x in v)}")
EOF
  done
}

# ------------------------------------------------------------------ restart

restart() {
  local dir=$BENCH_DIR/restart
  rm -rf "$dir"; mkdir -p "$dir"
  rm -f "$BENCH_DIR/restart.latest"
  local url=http://127.0.0.1:$PORT
  local serve=(serve --no-local-agent --listen "127.0.0.1:$PORT" --data-dir "$dir/data" --set "$CAP" --sim-nodes "$SIM_NODES")
  "$WEFT" "${serve[@]}" >"$dir/server-0.out" 2>"$dir/server-0.log" &
  local pid=$!; STARTED[$pid]=server
  for _ in $(seq 600); do grep -q listening "$dir/server-0.out" 2>/dev/null && break; sleep 0.05; done
  local t0; t0=$(date +%s)
  say "restart: filling ($R_APPS apps of $R_COUNT containers, load $(load))"
  "$GEN" fill --server "$url" --apps "$R_APPS" --count "$R_COUNT" --duration-ms "$R_DURATION_MS" \
    --concurrency "$R_FILL_CONCURRENCY" >"$dir/fill.out" 2>&1 || die "fill failed: $(tail -3 "$dir/fill.out")"
  cat "$dir/fill.out"
  local newest; newest=$(sed -n 's/^RESULT .*newest=\([^ ]*\).*/\1/p' "$dir/fill.out")
  "$GEN" wait --server "$url" --running "$RUNNING" --pending "$PENDING" --apps "$R_APPS" || die "the state was not reached"
  say "state built in $(( $(date +%s) - t0 )) s; database: $(du -sh "$dir/data" | cut -f1)"
  ls -la "$dir/data" >&2
  local run
  for run in $(seq "$R_RUNS"); do
    sleep 2
    kill9 "$pid"
    local before; before=$(load)
    local start; start=$(date -u +%H:%M:%S)
    say "restart run $run ($start UTC, load $before)"
    local since; since=$(date +%s%N)
    if [ "$PERF" = 1 ]; then
      perf record -F 999 -g -o "$dir/perf-$run.data" -- "$WEFT" "${serve[@]}" >"$dir/server-$run.out" 2>"$dir/server-$run.log" &
      local perf_pid=$!; STARTED[$perf_pid]=perf
      for _ in $(seq 1000); do pid=$(cat "/proc/$perf_pid/task/$perf_pid/children" 2>/dev/null | awk '{print $1}'); [ -n "$pid" ] && break; sleep 0.01; done
      [ -n "$pid" ] || die "perf did not start the server"
    else
      "$WEFT" "${serve[@]}" >"$dir/server-$run.out" 2>"$dir/server-$run.log" &
      pid=$!
    fi
    STARTED[$pid]=server
    "$GEN" probe --server "$url" --since-ns "$since" --pid "$pid" --expect-app "$newest" >"$dir/probe-$run.out" 2>&1 \
      || die "probe failed: $(cat "$dir/probe-$run.out") $(tail -3 "$dir/server-$run.log")"
    cat "$dir/probe-$run.out"
    local line; line=$(grep -m1 "recovered the state the store holds" "$dir/server-$run.log" | sed 's/\x1b\[[0-9;]*m//g')
    echo "  log: $line"
    local since_ms=$((since / 1000000))
    local listening recovered elected
    recovered=$(log_ms "$dir/server-$run.log" "recovered the state the store holds")
    listening=$(log_ms "$dir/server-$run.log" "weft serving")
    echo "  from the start: state recovered (log) $(( ${recovered:-0} - since_ms )) ms, serving (log) $(( ${listening:-0} - since_ms )) ms"
    local result; result=$(grep '^RESULT ' "$dir/probe-$run.out" | cut -d' ' -f2-)
    record restart "$start" "$before" "run=$run $result recovered_log_ms=$(( ${recovered:-0} - since_ms )) serving_log_ms=$(( ${listening:-0} - since_ms ))"
    echo "run=$run $result recovered_log_ms=$(( ${recovered:-0} - since_ms ))" >>"$BENCH_DIR/restart.latest"
    # The same containers back on the same simulated nodes.
    "$GEN" wait --server "$url" --running "$RUNNING" --pending "$PENDING" --timeout-s 30 || say "WARNING: the state after restart differs"
    if [ "$PERF" = 1 ]; then kill9 "$pid"; wait "$perf_pid" 2>/dev/null; unset "STARTED[$perf_pid]"; pid=""; break; fi
  done
  [ -n "$pid" ] && stop "$pid"
  python3 - "$BENCH_DIR/restart.latest" <<'EOF'
import statistics, sys
runs = [dict(kv.split("=", 1) for kv in line.split()) for line in open(sys.argv[1]) if line.strip()]
print(f"\nrestart ({len(runs)} runs); target under 5,000 ms")
for key in ["restart_ms", "first_connect_ms", "recovered_log_ms"]:
    v = [float(r[key]) for r in runs]
    print(f"  {key:18} median {statistics.median(v):8.0f}  [{min(v):.0f}–{max(v):.0f}]")
EOF
}

case "$MODE" in
  submit) submit ;;
  failover) failover ;;
  restart) restart ;;
  all) submit; failover; restart ;;
  *) die "unknown mode $MODE (submit, failover, restart or all)" ;;
esac
