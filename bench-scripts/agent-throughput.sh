#!/usr/bin/env bash
# agent-throughput.sh: containers of /bin/true launched and completed per
# second through ONE real agent, end to end (`weft app run --wait` submission
# to its return), side by side with Slurm's peer script; and the agent's own
# memory and CPU while 100 containers run.
#
#   bench-scripts/agent-throughput.sh throughput   RUNS rounds of: Weft at the defaults,
#                                                  Weft tuned, and (SLURM=1) Slurm
#   bench-scripts/agent-throughput.sh footprint    C_N containers of `sleep C_SLEEP_S`:
#                                                  the agent's RSS and CPU, default and tuned
#   bench-scripts/agent-throughput.sh all          both (default)
#
# Each Weft run is a fresh `weft serve --no-local-agent` on loopback plus one
# standalone `weft agent --resources $RESOURCES` (a large declared node, so
# all N containers may run at once on this 2-core machine: the figure is the
# agent's launch/reap path, not a core count), a 1-container warm-up app, then
#   weft app run --wait -n $N --memory 64mb --vcores 1 -- /bin/true
# timed by the client's wall clock from just before the command to its return.
# Both processes are stopped by their PIDs after each run (SIGTERM, then
# SIGKILL after 10 s); nothing else is touched.
#
# Per run it prints the client's rate (N / wall clock; note that --wait polls
# with a backoff up to 500 ms, so its return lands on a grid), the
# server-side rate (N / (the app's finishedTime - the client's t0)), the
# agent's CPU (user, sys) and its reaped children's (the containers' own
# processes), and the phases: allocation times (GET .../containers), first
# and last "container launched" in the agent's log, ends, app finished.
# Then medians and ranges per configuration, and the ratio to Slurm's median.
# Needs root for Slurm (the peer script installs and runs it) and for the
# -nocgroup experiment (unshare -m); python3 and curl.
#
# Environment (defaults in brackets):
#   WEFT [target/release/weft]   the binary (build: cargo build --release)
#   N [1000] RUNS [5]             containers per app, rounds
#   CONFIGS ["default tuned"]     Weft configurations, in this order per round: default,
#                                 tuned, hb<H>-s<S> (e.g. hb10-s1), each optionally -nocgroup
#                                 (an experiment: the agent in a mount namespace without cgroups)
#   TUNED_HB_MS [50]              tuned: yarn.resourcemanager.nodemanagers.heartbeat-interval-ms (default 1000)
#   TUNED_SCHED_MS [10]           tuned: weft.scheduler.interval-ms (default 100)
#   RESOURCES [65536mb,1000vcores] the agent's declared node
#   SLURM [1]                     1: run `EPILOG=1 ../shared/bench/peer-slurm.sh array $N` in each round
#   SLURM_SCRIPT [../shared/bench/peer-slurm.sh]
#   C_N [100] C_SLEEP_S [30] C_SAMPLE_S [20]   footprint: containers, their sleep, sampling window
#   PORT [18480]                  the server's loopback port
#   BENCH_DIR [/tmp/weft-agent-bench]  data, work and log dirs, logs, results.tsv
#   KEEP_LOGS [1]                 0: delete each run's work/log dirs after it (keeps the daemon logs)
#   AGENT_DIR_BASE []             where the agent's work and log dirs go (a fresh dir per run);
#                                 empty: the run's dir under BENCH_DIR. E.g. /dev/shm for tmpfs
set -u
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
MODE=${1:-all}
WEFT=${WEFT:-target/release/weft}
N=${N:-1000}
RUNS=${RUNS:-5}
CONFIGS=${CONFIGS:-default tuned}
TUNED_HB_MS=${TUNED_HB_MS:-50}
TUNED_SCHED_MS=${TUNED_SCHED_MS:-10}
RESOURCES=${RESOURCES:-65536mb,1000vcores}
SLURM=${SLURM:-1}
SLURM_SCRIPT=${SLURM_SCRIPT:-../shared/bench/peer-slurm.sh}
C_N=${C_N:-100}
C_SLEEP_S=${C_SLEEP_S:-30}
C_SAMPLE_S=${C_SAMPLE_S:-20}
PORT=${PORT:-18480}
BENCH_DIR=${BENCH_DIR:-/tmp/weft-agent-bench}
KEEP_LOGS=${KEEP_LOGS:-1}
AGENT_DIR_BASE=${AGENT_DIR_BASE:-}
URL=http://127.0.0.1:$PORT
HZ=$(getconf CLK_TCK)
RESULTS=$BENCH_DIR/results.tsv
SERVE_PID="" AGENT_PID="" RUN_DIR="" AGENT_DIR=""

say() { echo "agent-bench: $*" >&2; }
die() { say "ERROR: $*"; stop_stack; exit 1; }
now_ns() { date +%s%N; }
load() { cut -d' ' -f1-3 /proc/loadavg | tr ' ' ','; }
# CPU seconds (utime+stime) of PID itself, and of its waited-for children.
cpu_self() { awk -v hz="$HZ" '{sub(/^.*\) /, ""); printf "%.2f", ($12+$13)/hz}' "/proc/$1/stat" 2>/dev/null || echo 0; }
cpu_children() { awk -v hz="$HZ" '{sub(/^.*\) /, ""); printf "%.2f", ($14+$15)/hz}' "/proc/$1/stat" 2>/dev/null || echo 0; }
# "user sys children" CPU seconds of PID (children: reaped descendants, i.e. the containers' processes).
cpu_split() { awk -v hz="$HZ" '{sub(/^.*\) /, ""); printf "%.2f %.2f %.2f", $12/hz, $13/hz, ($14+$15)/hz}' "/proc/$1/stat" 2>/dev/null || echo "0 0 0"; }
status_kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status" 2>/dev/null; }
api() { curl -sf --max-time 10 "$URL$1"; }
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))" "$1"; }

# Configurations: default | tuned (TUNED_HB_MS, TUNED_SCHED_MS) | hb<H>-s<S>
# (heartbeat H ms, scheduling interval S ms); each may end in -nocgroup.
config_hb_sched() { # prints "HB SCHED"
  local base=${1%-nocgroup}
  case "$base" in
    default) echo "1000 100" ;;
    tuned) echo "$TUNED_HB_MS $TUNED_SCHED_MS" ;;
    hb*-s*) local h=${base#hb}; echo "${h%-s*} ${base#*-s}" ;;
    *) die "unknown config $1 (default, tuned or hb<ms>-s<ms>, optionally -nocgroup)" ;;
  esac
}
config_sets() {
  local hs; hs=$(config_hb_sched "$1")
  [ "${1%-nocgroup}" = default ] && return 0
  echo "--set yarn.resourcemanager.nodemanagers.heartbeat-interval-ms=${hs% *} --set weft.scheduler.interval-ms=${hs#* }"
}
config_label() {
  local suffix="" hs; hs=$(config_hb_sched "$1")
  case "$1" in *-nocgroup) suffix="+no-cgroups" ;; esac
  echo "${1%-nocgroup}(hb=${hs% *}ms,sched=${hs#* }ms)$suffix"
}
# The agent's command: as is, or (NAME-nocgroup, an experiment) in a private
# mount namespace without the cgroup v1 memory and cpu mounts and the v2
# mount, so the agent finds no cgroups and runs containers in process groups
# only. Nothing outside that namespace changes. (The mounts are unmounted
# rather than made read-only because then the agent's reason for "no
# cgroups" names the long path it could not create, and the server refuses a
# registration whose isolation text exceeds 256 bytes.)
agent_cmd() {
  case "$1" in
    *-nocgroup) echo "unshare -m --propagation private sh -c 'for m in /sys/fs/cgroup/memory /sys/fs/cgroup/cpu /sys/fs/cgroup/cpuacct /sys/fs/cgroup/unified; do mountpoint -q \$m && umount -l \$m; done; exec \"\$0\" \"\$@\"'" ;;
    *) echo "" ;;
  esac
}

stop_pid() {
  local pid=$1
  [ -n "$pid" ] && [ -d "/proc/$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 1 100); do [ -d "/proc/$pid" ] || return 0; sleep 0.1; done
  say "pid $pid did not stop within 10 s of SIGTERM; SIGKILL"
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
}
stop_stack() {
  # The agent first: on SIGTERM it kills its own containers.
  stop_pid "$AGENT_PID"; AGENT_PID=""
  stop_pid "$SERVE_PID"; SERVE_PID=""
}
trap 'stop_stack' EXIT
trap 'exit 130' INT TERM

# start_stack NAME: a fresh server and one agent, registered and idle.
start_stack() {
  local name=$1 sets
  sets=$(config_sets "$name")
  # Something else answering on the port would be measured instead of ours.
  if api /ws/v1/cluster/info >/dev/null; then say "ERROR: $URL already answers; set PORT"; exit 1; fi
  RUN_DIR=$(mktemp -d "$BENCH_DIR/run-$name-XXXX")
  if [ -n "$AGENT_DIR_BASE" ]; then AGENT_DIR=$(mktemp -d "$AGENT_DIR_BASE/weft-agent-bench-XXXX"); else AGENT_DIR=$RUN_DIR; fi
  mkdir -p "$RUN_DIR/data" "$AGENT_DIR/work" "$AGENT_DIR/logs"
  # shellcheck disable=SC2086
  "$WEFT" serve --no-local-agent --data-dir "$RUN_DIR/data" --listen "127.0.0.1:$PORT" $sets \
    >"$RUN_DIR/serve.out" 2>"$RUN_DIR/serve.log" &
  SERVE_PID=$!
  for _ in $(seq 1 300); do api /ws/v1/cluster/info >/dev/null && break; [ -d "/proc/$SERVE_PID" ] || break; sleep 0.1; done
  api /ws/v1/cluster/info >/dev/null && [ -d "/proc/$SERVE_PID" ] || die "weft serve did not answer on $URL: $(tail -5 "$RUN_DIR/serve.log")"
  local prefix; prefix=$(agent_cmd "$name")
  eval "$prefix" '"$WEFT" agent --server "$URL" --node-id bench-node --resources "$RESOURCES" \
    --work-dir "$AGENT_DIR/work" --log-dir "$AGENT_DIR/logs" \
    >"$RUN_DIR/agent.out" 2>"$RUN_DIR/agent.log" &'

  AGENT_PID=$!
  local nodes=0
  for _ in $(seq 1 100); do
    nodes=$(api /ws/v1/cluster/nodes | json 'len(d["nodes"]["node"])' 2>/dev/null || echo 0)
    [ "$nodes" = 1 ] && break
    [ -d "/proc/$AGENT_PID" ] || break
    sleep 0.1
  done
  [ "$nodes" = 1 ] || die "the agent did not register: $(tail -5 "$RUN_DIR/agent.log")"
  ISOLATION=$(api /ws/v1/cluster/nodes | json 'd["nodes"]["node"][0].get("isolation","?")')
}

run_app() { # run_app ARGS...: prints the app id (stdout of weft app run)
  "$WEFT" app run --server "$URL" "$@"
}

# throughput_run NAME ROUND
throughput_run() {
  local name=$1 round=$2 label t0 t1 id app ld0 ld1 a0 a1 r0 r1
  label=$(config_label "$name")
  start_stack "$name"
  # Warm-up (not timed): one container, so the first timed app does not pay
  # first-use costs (policy instance, connection setup, directories).
  run_app --wait -n 1 --memory 64mb --vcores 1 -- /bin/true >/dev/null 2>&1 || die "warm-up app failed: $(tail -3 "$RUN_DIR/agent.log")"
  sleep 1
  ld0=$(load); a0=$(cpu_split "$AGENT_PID"); r0=$(cpu_self "$SERVE_PID")
  t0=$(now_ns)
  id=$(run_app --wait -n "$N" --memory 64mb --vcores 1 -- /bin/true 2>"$RUN_DIR/app.err")
  local rc=$?
  t1=$(now_ns)
  sleep 0.3 # the agent reaps and forgets the last containers after the answer
  a1=$(cpu_split "$AGENT_PID"); r1=$(cpu_self "$SERVE_PID"); ld1=$(load)
  [ "$rc" = 0 ] || say "weft app run exited $rc: $(cat "$RUN_DIR/app.err")"
  api "/ws/v1/cluster/apps/$id" >"$RUN_DIR/app.json"
  api "/ws/v1/cluster/apps/$id/containers" >"$RUN_DIR/containers.json"
  stop_stack
  python3 - "$label" "$round" "$N" "$t0" "$t1" "$rc" "$ld0" "$ld1" "$a0" "$a1" "$r0" "$r1" \
    "$RUN_DIR" "$RESULTS" "$ISOLATION" <<'PY'
import json, sys, re, datetime as dt
(label, rnd, n, t0, t1, rc, ld0, ld1, a0, a1, r0, r1, run_dir, results, isolation) = sys.argv[1:]
n, t0, t1 = int(n), int(t0) / 1e9, int(t1) / 1e9
app = json.load(open(f"{run_dir}/app.json"))["app"]
cs = json.load(open(f"{run_dir}/containers.json"))["containers"]
# Field names: snake_case in older builds, camelCase in newer ones.
def field(c, snake, camel): return c.get(camel, c.get(snake))
cs = [{"start": field(c, "start_time_ms", "startTimeMs"), "finish": field(c, "finish_time_ms", "finishTimeMs"),
       "exit": field(c, "exit_status", "exitStatus")} for c in cs]
ok = sum(1 for c in cs if c["exit"] == 0)
wall = t1 - t0
srv = app["finishedTime"] / 1000 - t0 if app["finishedTime"] else float("nan")
alloc = sorted(c["start"] / 1000 - t0 for c in cs)
fin = sorted(c["finish"] / 1000 - t0 for c in cs if c["finish"])
rounds = len(set(c["start"] for c in cs))
# The agent's log: "container launched" lines (RFC 3339, UTC, microseconds).
ts = re.compile(r'^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z\s+\w+\s+(.*)$')
launched = []
for line in open(f"{run_dir}/agent.log", errors="replace"):
    m = ts.match(line)
    if m and "container launched" in m.group(2):
        s = m.group(1)[:26]
        t = dt.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=dt.timezone.utc).timestamp() - t0
        if t > 0:
            launched.append(t)
launched.sort()
def ms(x): return f"{x * 1000:.0f}"
au, asys, ach = (float(b) - float(a) for a, b in zip(a0.split(), a1.split()))
agent_cpu = au + asys
line = (f"weft[{label}] round={rnd} N={n} state={app['state']} ok={ok}/{len(cs)} "
        f"wall={wall:.3f}s rate={n / wall:.1f}/s server_makespan={srv:.3f}s server_rate={n / srv:.1f}/s "
        f"agent_cpu={agent_cpu:.2f}s(user {au:.2f} sys {asys:.2f}) containers_cpu={ach:.2f}s rm_cpu={float(r1) - float(r0):.2f}s load={ld0}->{ld1} isolation={isolation.split(':')[0]}")
print(line)
if cs:
    phases = (f"  phases (ms after submit): first alloc {ms(alloc[0])}, last alloc {ms(alloc[-1])} ({rounds} round(s)); "
              + (f"first launch {ms(launched[0])}, last launch {ms(launched[-1])} "
                 f"({len(launched)} launched, {len(launched) / max(launched[-1] - launched[0], 1e-9):.0f}/s while launching); "
                 if len(launched) > 1 else "")
              + (f"first end {ms(fin[0])}, last end {ms(fin[-1])}; " if fin else "")
              + f"app finished {ms(srv)}; --wait returned {ms(wall)}")
    print(phases)
with open(results, "a") as f:
    f.write("\t".join(map(str, ["weft", label, rnd, n, f"{wall:.3f}", f"{n / wall:.1f}", f"{srv:.3f}",
        f"{n / srv:.1f}", ok, app["state"], ld0, ld1,
        f"{alloc[0]:.3f}" if cs else "", f"{alloc[-1]:.3f}" if cs else "",
        f"{launched[0]:.3f}" if launched else "", f"{launched[-1]:.3f}" if launched else "",
        isolation, f"{agent_cpu:.2f}", f"{ach:.2f}"])) + "\n")
PY
  [ "$KEEP_LOGS" = 1 ] || rm -rf "$AGENT_DIR/work" "$AGENT_DIR/logs"
  [ "$AGENT_DIR" = "$RUN_DIR" ] || [ "$KEEP_LOGS" = 1 ] || rmdir "$AGENT_DIR"
}

slurm_run() {
  local round=$1 out
  out=$(EPILOG=1 "$SLURM_SCRIPT" array "$N" 2>"$BENCH_DIR/slurm-$round.err")
  echo "$out" | sed 's/^/  /' >&2
  local line rate span
  line=$(echo "$out" | grep -m1 'throughput=')
  rate=$(echo "$line" | sed -n 's/.*throughput=\([0-9.]*\).*/\1/p')
  span=$(echo "$line" | sed -n 's/.*makespan=\([0-9.]*\) s.*/\1/p')
  echo "slurm[epilog] round=$round N=$N makespan=${span:-?}s rate=${rate:-?}/s"
  printf 'slurm\tstock+epilog\t%s\t%s\t%s\t%s\t\t\t\t\t\t\t\t\t\t\t\n' "$round" "$N" "${span:-}" "${rate:-}" >>"$RESULTS"
}

summary() {
  python3 - "$RESULTS" <<'PY'
import sys, statistics as st
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
by = {}
for r in rows:
    if r[5]:
        by.setdefault((r[0], r[1]), []).append(r)
print("\nsummary (N per app, rate = N / wall clock from before submission to the last exit seen by the client)")
slurm = [float(r[5]) for (k, rs) in by.items() if k[0] == "slurm" for r in rs]
for (kind, label), rs in by.items():
    rates = sorted(float(r[5]) for r in rs)
    walls = sorted(float(r[4]) for r in rs)
    extra = ""
    if kind == "weft":
        srv = sorted(float(r[7]) for r in rs)
        extra = f"  server-side (app finishedTime): median {st.median(srv):.1f}/s [{srv[0]:.1f}..{srv[-1]:.1f}]"
        if slurm:
            extra += f"  vs Slurm median {st.median(slurm):.1f}/s: x{st.median(rates) / st.median(slurm):.1f}"
    print(f"{kind}[{label}] runs={len(rs)} rate median {st.median(rates):.1f}/s [{rates[0]:.1f}..{rates[-1]:.1f}]"
          f" wall median {st.median(walls):.3f}s [{walls[0]:.3f}..{walls[-1]:.3f}]{extra}")
PY
}

# footprint NAME: the agent's RSS and CPU, idle and with C_N containers running.
footprint() {
  local name=$1 label id running=0 i
  label=$(config_label "$name")
  start_stack "$name"
  run_app --wait -n 1 --memory 64mb --vcores 1 -- /bin/true >/dev/null 2>&1
  sleep 2
  local c0 c1 t0 t1 rss
  c0=$(cpu_self "$AGENT_PID"); t0=$(now_ns); sleep "$C_SAMPLE_S"; c1=$(cpu_self "$AGENT_PID"); t1=$(now_ns)
  rss=$(status_kb "$AGENT_PID" VmRSS)
  local idle_rss=$rss idle_cpu
  idle_cpu=$(awk -v a="$c0" -v b="$c1" -v t0="$t0" -v t1="$t1" 'BEGIN{printf "%.2f", (b-a)/((t1-t0)/1e9)*100}')
  echo "agent[$label] idle: VmRSS=${rss} kB CPU=${idle_cpu}% of one core over ${C_SAMPLE_S} s (threads=$(status_kb "$AGENT_PID" Threads))"
  id=$(run_app -n "$C_N" --memory 64mb --vcores 1 -- sleep "$C_SLEEP_S")
  local tsub; tsub=$(now_ns)
  for _ in $(seq 1 300); do
    running=$(api "/ws/v1/cluster/apps/$id" | json 'd["app"]["runningContainers"]' 2>/dev/null || echo 0)
    [ "$running" = "$C_N" ] && break
    sleep 0.1
  done
  local tall; tall=$(now_ns)
  [ "$running" = "$C_N" ] || say "only $running of $C_N containers running"
  # Wait until the agent has launched them all (its log; +1 for the
  # warm-up), let the burst settle, then sample once a second.
  local launched=0
  for _ in $(seq 1 600); do
    launched=$(grep -c 'container launched' "$RUN_DIR/agent.log")
    [ "$launched" -ge $((C_N + 1)) ] && break
    sleep 0.1
  done
  local tlaunched; tlaunched=$(now_ns)
  sleep 1
  local rss_max=0 rss_sum=0 samples=0
  c0=$(cpu_self "$AGENT_PID"); t0=$(now_ns)
  for i in $(seq 1 "$C_SAMPLE_S"); do
    rss=$(status_kb "$AGENT_PID" VmRSS); rss_sum=$((rss_sum + rss)); samples=$((samples + 1))
    [ "$rss" -gt "$rss_max" ] && rss_max=$rss
    sleep 1
  done
  c1=$(cpu_self "$AGENT_PID"); t1=$(now_ns)
  running=$(api "/ws/v1/cluster/apps/$id" | json 'd["app"]["runningContainers"]' 2>/dev/null || echo "?")
  local cpu_pct
  cpu_pct=$(awk -v a="$c0" -v b="$c1" -v t0="$t0" -v t1="$t1" 'BEGIN{printf "%.2f", (b-a)/((t1-t0)/1e9)*100}')
  echo "agent[$label] $C_N x sleep $C_SLEEP_S: all allocated (RM: runningContainers) $(( (tall - tsub) / 1000000 )) ms after submit, all launched (agent log) $(( (tlaunched - tsub) / 1000000 )) ms; still running at the end of sampling: $running"
  echo "agent[$label] $C_N running: VmRSS mean=$((rss_sum / samples)) kB max=${rss_max} kB VmHWM=$(status_kb "$AGENT_PID" VmHWM) kB threads=$(status_kb "$AGENT_PID" Threads) fds=$(ls "/proc/$AGENT_PID/fd" | wc -l)"
  echo "agent[$label] $C_N running: CPU=${cpu_pct}% of one core ($(awk -v a="$c0" -v b="$c1" 'BEGIN{printf "%.2f", b-a}') s user+sys over $(awk -v t0="$t0" -v t1="$t1" 'BEGIN{printf "%.1f", (t1-t0)/1e9}') s; agent pid $AGENT_PID only, not its containers)"
  echo "agent[$label] isolation: $ISOLATION"
  # footprint, label, idle VmRSS kB, idle CPU %, running VmRSS mean kB, max kB, running CPU %
  printf 'footprint\t%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "$idle_rss" "$idle_cpu" "$((rss_sum / samples))" "$rss_max" "$cpu_pct" >>"$RESULTS"
  stop_stack
  [ "$KEEP_LOGS" = 1 ] || rm -rf "$AGENT_DIR/work" "$AGENT_DIR/logs"
  [ "$AGENT_DIR" = "$RUN_DIR" ] || [ "$KEEP_LOGS" = 1 ] || rmdir "$AGENT_DIR"
}

[ -x "$WEFT" ] || die "$WEFT not found: cargo build --release"
mkdir -p "$BENCH_DIR"
: >"$RESULTS"
echo "machine: nproc=$(nproc) mem=$(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo) kernel=$(uname -r) load=$(load)"
agent_fs=${AGENT_DIR_BASE:-$BENCH_DIR}
echo "agent work/log dirs under $agent_fs: $(findmnt -n -o FSTYPE -T "$agent_fs")$( [ "$(findmnt -n -o FSTYPE -T "$agent_fs")" = ext4 ] && ! ls /proc/fs/jbd2/ 2>/dev/null | grep -q . && echo ' (no journal: each new inode skips those deleted in the last 30 s)')"
echo "weft: $WEFT ($(stat -c %y "$WEFT" | cut -d. -f1)); agent node: $RESOURCES; N=$N RUNS=$RUNS"
case "$MODE" in
  throughput | all)
    for round in $(seq 1 "$RUNS"); do
      for cfg in $CONFIGS; do throughput_run "$cfg" "$round"; done
      if [ "$SLURM" = 1 ]; then slurm_run "$round"; fi
    done
    echo "isolation: $ISOLATION"
    summary ;;
esac
case "$MODE" in
  footprint | all)
    for cfg in $CONFIGS; do footprint "$cfg"; done ;;
  throughput) ;;
  *) die "usage: $0 throughput|footprint|all" ;;
esac
echo "results: $RESULTS; per-run logs under $BENCH_DIR/run-*"
