#!/usr/bin/env bash
# turnover-vs-slurm.sh: what a new user meets, beside Slurm in the same run.
# Each round runs, one after the other:
#   - bench-scripts/turnover.sh: `weft serve` at its defaults (its local agent
#     sized to this machine: 2 vcores here, so 2 containers at a time), then
#     `weft app run -n N --memory 64mb --vcores 1 --wait -- /bin/true`;
#   - ../shared/bench/peer-slurm.sh array N with EPILOG=1: one node of the
#     same 2 cores, 1 core per job (Slurm's fastest stock turnover);
#   - with YARN=1 (the default), bench-scripts/yarn-peer.sh: Apache YARN's
#     ResourceManager and one NodeManager with room for 2 containers of
#     64 MB, at its fastest setting here (YARN_CLIENT=uam: the client is its
#     own unmanaged AM, so no AM container takes a slot; node and AM
#     heartbeats every YARN_HEARTBEAT_MS=50).
# Rounds are RUNS (default 3); prints each run's rate and the medians.
#
# Each Weft run's dirs are kept until the last round: on this machine's
# ext4 without a journal, creating a file costs more the more inodes were
# freed in the last minutes (`recently_deleted`: 60 s, or 360 s while the
# inode table block is dirty), and removing a run's 10,000 files would slow
# the next run's launches (the 1,000 containers of one run free none: the
# agent keeps their logs and dirs for yarn.nodemanager.log.retain-seconds).
# A new user's first run does not follow such a deletion. GAP seconds
# (default 5) separate the runs.
#
#   bench-scripts/turnover-vs-slurm.sh [BINARY=target/release/weft]
set -euo pipefail
cd "$(dirname "$0")/.."
binary=${1:-target/release/weft}
runs=${RUNS:-3}
count=${N:-1000}
gap=${GAP:-5}
keep=$(mktemp -d /var/tmp/weft-turnover-rounds-XXXX)
trap 'rm -rf "$keep"' EXIT
port=${PORT:-18590}
weft_rates=()
slurm_rates=()
yarn_rates=()
yarn=${YARN:-1}
yarn_heartbeat=${YARN_HEARTBEAT_MS:-50}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for round in $(seq "$runs"); do
    seconds=$(KEEP_IN=$keep bench-scripts/turnover.sh "$binary" "$port" "$count" | awk '{print $2}')
    rate=$(echo "scale=1; $count / $seconds" | bc)
    weft_rates+=("$rate")
    echo "round $round: weft $count containers in $seconds s: $rate/s"
    sleep "$gap"
    line=$(EPILOG=1 ../shared/bench/peer-slurm.sh array "$count" | awk '/throughput=/ && !seen {print; seen=1}')
    rate=$(echo "$line" | grep -oE 'throughput=[0-9.]+' | cut -d= -f2)
    slurm_rates+=("${rate:-0}")
    echo "round $round: slurm: $line"
    sleep "$gap"
    if [ "$yarn" = 1 ]; then
        line=$(KEEP_IN=$keep RUNS=1 GAP=0 N=$count CLIENT=${YARN_CLIENT:-uam} HEARTBEAT_MS=$yarn_heartbeat \
            AM_HEARTBEAT_MS=$yarn_heartbeat bench-scripts/yarn-peer.sh | grep '^run ')
        rate=$(echo "$line" | grep -oE '[0-9.]+/s' | head -1 | tr -d /s)
        yarn_rates+=("${rate:-0}")
        echo "round $round: yarn: $line"
        sleep "$gap"
    fi
done
weft=$(median "${weft_rates[@]}")
slurm=$(median "${slurm_rates[@]}")
echo "median: weft $weft/s [${weft_rates[*]}], slurm $slurm/s [${slurm_rates[*]}], ratio $(echo "scale=1; $weft / $slurm" | bc)x"
if [ "$yarn" = 1 ]; then
    yarn_median=$(median "${yarn_rates[@]}")
    echo "median: yarn $yarn_median/s [${yarn_rates[*]}], weft/yarn $(echo "scale=1; $weft / $yarn_median" | bc)x"
fi
