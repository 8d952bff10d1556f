#!/usr/bin/env bash
# yarn-peer.sh: Apache YARN itself on this machine, running the workload of
# turnover.sh (N short containers of /bin/true, 1 vcore and 64 MB each, two
# at a time), so Weft can be compared with YARN in the same run.
#
# Per run: a fresh ResourceManager and one NodeManager, each its own JVM
# (their stock main classes; Hadoop jars from Maven Central, HADOOP_VERSION,
# default 3.4.2: 3.4.0 and 3.4.1 of the distributedshell artifact are not
# served here), on loopback only, with a generated conf dir; then a client
# submits one application of N containers:
#   CLIENT=ds (default): the stock DistributedShell,
#     Client -shell_command /bin/true -num_containers N -container_memory 64
#            -container_vcores 1 -master_memory AM_MEMORY (512)
#     Its AM runs in a container of its own and heartbeats to the RM every
#     1000 ms (hard-coded in its ApplicationMaster).
#   CLIENT=uam: a 100-line Java client (below, compiled once with javac) that
#     submits the application and is its own unmanaged AM, as YARN's
#     UnmanagedAMLauncher does, in one JVM: no AM container, AM heartbeat
#     AM_HEARTBEAT_MS (default 1000, as DistributedShell and MapReduce), so
#     the AM's pace can be taken out of the figure. The nearest to
#     `weft app run -n N --wait`, whose server does the AM's work.
# Measured (from the daemons' own logs, one clock):
#   makespan = the RM accepting the submission -> the NM seeing the last of the
#              N task containers exit (RUNNING -> EXITED_WITH_SUCCESS)
#   rate     = N / makespan   (the figure to set beside turnover.sh's)
# Also printed: when the first task container ran (for ds: after the AM's
# container, JVM start and registration), the rate from that first task to
# the last exit, and the client's wall clock (its own JVM start to its
# return). Each run checks that exactly N task containers exited with success.
#
# Slots: Weft's local agent has 2 vcores, so 2 containers at a time.
#   ds: the AM needs a container, so the NM declares the AM's share plus
#       exactly two tasks: <memory: AM_MEMORY + 2 x 64, vCores: 1 + 2>. The
#       stock CapacityScheduler counts memory only (DefaultResourceCalculator),
#       so at most 2 task containers run beside the AM. The AM's JVM shares
#       the same 2 cores.
#   uam: the NM declares <memory: 2 x 64, vCores: 2>, as Weft's agent; the
#       client-AM is a process outside YARN's slots, as Weft's server is.
# At YARN's defaults the CapacityScheduler gives at most one container per
# node heartbeat to requests without locality (maximum-offswitch-assignments
# = 1), the NM heartbeats every HEARTBEAT_MS (yarn-default 1000; out of band
# too when a container ends), and the AM learns of a new container only at
# its next heartbeat: with 0.1-0.3 s containers YARN then runs about one
# container at a time. HEARTBEAT_MS=50 AM_HEARTBEAT_MS=50 CLIENT=uam is the
# tuned setting, as Weft's tuned rows (heartbeat 50 ms).
#
# Config beyond Hadoop's defaults, all needed to run here: loopback addresses
# (free ports), fs.defaultFS=file:/// (the ds client stages the AM jar and the
# command under a temp HOME), scheduler minimum allocation 64 MB, vmem check
# off (a JVM AM's virtual size is many times its 512 MB), one queue at 100%
# (maximum-am-resource-percent 1.0: one app). Logs at INFO, as stock.
#
# Runs are RUNS (default 3), GAP seconds apart (default 5); prints each run and
# the median rate. Each run's dirs stay until the end (as turnover-vs-slurm.sh
# does: on this machine's ext4, deletions slow later file creation). Daemons
# are stopped by their PIDs (TERM, then KILL after 20 s); a process still
# running with its cwd inside the script's temp dir (a container) is killed by
# its PID too.
#
#   bench-scripts/yarn-peer.sh                         # RUNS=3 N=1000, ds, defaults
#   N=20 RUNS=1 bench-scripts/yarn-peer.sh             # smoke
#   CLIENT=uam HEARTBEAT_MS=50 AM_HEARTBEAT_MS=50 bench-scripts/yarn-peer.sh
#   KEEP=1 ...                                         # keep the logs, print where
#   KEEP_IN=DIR ...                                    # run dirs under DIR, left to the caller
#
# Needs java (17), mvn, python3, bc; javac for CLIENT=uam. Jars are fetched
# once with Maven (about 80 MB) into ${YARN_PEER_DIR:-~/.cache/weft-yarn-peer}.
set -euo pipefail
version=${HADOOP_VERSION:-3.4.2}
cache=${YARN_PEER_DIR:-$HOME/.cache/weft-yarn-peer}
runs=${RUNS:-3}
count=${N:-1000}
gap=${GAP:-5}
heartbeat=${HEARTBEAT_MS:-1000}
am_memory=${AM_MEMORY:-512}
am_heartbeat=${AM_HEARTBEAT_MS:-1000}
client=${CLIENT:-ds}
task_memory=64
slots=2
case $client in
    ds) nm_memory=$((am_memory + slots * task_memory)) nm_vcores=$((1 + slots)) ;;
    uam) nm_memory=$((slots * task_memory)) nm_vcores=$slots ;;
    *) echo "CLIENT is ds or uam" >&2; exit 2 ;;
esac
java_home=${JAVA_HOME:-$(readlink -f "$(command -v java)" | sed 's:/bin/java$::')}
java=$java_home/bin/java

# --- jars ------------------------------------------------------------------
lib=$cache/lib-$version
pom=$(cat <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>weft.bench</groupId>
  <artifactId>yarn-peer</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
$(for a in hadoop-common hadoop-yarn-server-resourcemanager hadoop-yarn-server-nodemanager \
        hadoop-yarn-server-timelineservice hadoop-yarn-applications-distributedshell; do
    echo "    <dependency><groupId>org.apache.hadoop</groupId><artifactId>$a</artifactId><version>$version</version></dependency>"
done)
  </dependencies>
</project>
EOF
)
# The RM's web app (always started) needs the timelineservice classes, as in
# Hadoop's own share/hadoop/yarn.
if [ "$(cat "$lib/.pom" 2>/dev/null)" != "$pom" ]; then
    echo "fetching Hadoop $version jars into $lib (Maven)..." >&2
    mkdir -p "$cache/pom-$version"
    echo "$pom" >"$cache/pom-$version/pom.xml"
    rm -rf "$lib"
    mvn -q -B -f "$cache/pom-$version/pom.xml" dependency:copy-dependencies \
        -DincludeScope=runtime -DoutputDirectory="$lib" >"$cache/mvn.log" 2>&1 \
        || { cat "$cache/mvn.log" >&2; exit 1; }
    echo "$pom" >"$lib/.pom"
fi
ds_jar=$lib/hadoop-yarn-applications-distributedshell-$version.jar
[ -f "$ds_jar" ] || { echo "missing $ds_jar" >&2; exit 1; }

# CLIENT=uam: a client that submits the application and is its unmanaged AM
# (YARN's UnmanagedAMLauncher pattern, in one JVM): it asks for N containers
# at once, heartbeats to the RM every AM_HEARTBEAT_MS, starts each container
# it is given on the NM (NMClient) and returns when N have completed.
uam_dir=$cache/uam-$version
if [ "$client" = uam ]; then
    mkdir -p "$uam_dir"
    cat >"$uam_dir/WeftYarnPeer.java.new" <<'EOF'
import java.util.Collections;
import java.util.HashSet;
import java.util.Set;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.yarn.api.ApplicationConstants;
import org.apache.hadoop.yarn.api.protocolrecords.AllocateResponse;
import org.apache.hadoop.yarn.api.records.*;
import org.apache.hadoop.yarn.client.ClientRMProxy;
import org.apache.hadoop.yarn.client.api.AMRMClient;
import org.apache.hadoop.yarn.client.api.AMRMClient.ContainerRequest;
import org.apache.hadoop.yarn.client.api.NMClient;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.security.AMRMTokenIdentifier;
import org.apache.hadoop.yarn.util.Records;

/** Submits one application and is its unmanaged AM: N containers of CMD. */
public class WeftYarnPeer {
  public static void main(String[] args) throws Exception {
    int n = Integer.parseInt(args[0]);
    int memory = Integer.parseInt(args[1]);
    int heartbeatMs = Integer.parseInt(args[2]);
    String command = args[3];
    YarnConfiguration conf = new YarnConfiguration();
    YarnClient yarn = YarnClient.createYarnClient();
    yarn.init(conf);
    yarn.start();
    ApplicationSubmissionContext app =
        yarn.createApplication().getApplicationSubmissionContext();
    ApplicationId id = app.getApplicationId();
    app.setApplicationName("weft-yarn-peer");
    app.setQueue("default");
    app.setAMContainerSpec(Records.newRecord(ContainerLaunchContext.class));
    app.setUnmanagedAM(true);
    yarn.submitApplication(app);
    while (true) {
      ApplicationReport report = yarn.getApplicationReport(id);
      ApplicationAttemptId attempt = report.getCurrentApplicationAttemptId();
      if (report.getYarnApplicationState() != YarnApplicationState.NEW
          && report.getYarnApplicationState() != YarnApplicationState.NEW_SAVING
          && report.getYarnApplicationState() != YarnApplicationState.SUBMITTED
          && attempt != null
          && yarn.getApplicationAttemptReport(attempt).getYarnApplicationAttemptState()
              == YarnApplicationAttemptState.LAUNCHED) {
        break;
      }
      Thread.sleep(10);
    }
    Token<AMRMTokenIdentifier> token = yarn.getAMRMToken(id);
    token.setService(ClientRMProxy.getAMRMTokenService(conf));
    UserGroupInformation.getCurrentUser().addToken(token);

    AMRMClient<ContainerRequest> rm = AMRMClient.createAMRMClient();
    rm.init(conf);
    rm.start();
    rm.registerApplicationMaster("", 0, "");
    NMClient nm = NMClient.createNMClient();
    nm.init(conf);
    nm.start();
    nm.cleanupRunningContainersOnStop(false);
    Resource resource = Resource.newInstance(memory, 1);
    Priority priority = Priority.newInstance(0);
    for (int i = 0; i < n; i++) {
      rm.addContainerRequest(new ContainerRequest(resource, null, null, priority));
    }
    String line = command + " 1>" + ApplicationConstants.LOG_DIR_EXPANSION_VAR
        + "/stdout 2>" + ApplicationConstants.LOG_DIR_EXPANSION_VAR + "/stderr";
    Set<ContainerId> started = new HashSet<>();
    int done = 0, failed = 0;
    while (done < n) {
      AllocateResponse response = rm.allocate((float) done / n);
      for (Container c : response.getAllocatedContainers()) {
        if (started.size() + done == n) { // more than asked for: give it back
          rm.releaseAssignedContainer(c.getId());
          continue;
        }
        rm.removeContainerRequest(new ContainerRequest(resource, null, null, priority));
        nm.startContainer(c, ContainerLaunchContext.newInstance(
            null, null, Collections.singletonList(line), null, null, null));
        started.add(c.getId());
      }
      for (ContainerStatus s : response.getCompletedContainersStatuses()) {
        if (!started.remove(s.getContainerId())) {
          continue; // one given back
        }
        done++;
        if (s.getExitStatus() != 0) {
          failed++;
          System.err.println(s.getContainerId() + " exited " + s.getExitStatus()
              + ": " + s.getDiagnostics());
        }
      }
      if (done < n) {
        Thread.sleep(heartbeatMs);
      }
    }
    rm.unregisterApplicationMaster(failed == 0 ? FinalApplicationStatus.SUCCEEDED
        : FinalApplicationStatus.FAILED, failed + " failed", "");
    nm.stop();
    rm.stop();
    yarn.stop();
    System.out.println("containers=" + n + " failed=" + failed);
    System.exit(failed == 0 ? 0 : 1);
  }
}
EOF
    if ! cmp -s "$uam_dir/WeftYarnPeer.java.new" "$uam_dir/WeftYarnPeer.java" \
        || [ ! -f "$uam_dir/WeftYarnPeer.class" ]; then
        [ -x "$java_home/bin/javac" ] || { echo "CLIENT=uam needs javac (a JDK)" >&2; exit 1; }
        mv "$uam_dir/WeftYarnPeer.java.new" "$uam_dir/WeftYarnPeer.java"
        "$java_home/bin/javac" -nowarn -cp "$lib/*" -d "$uam_dir" "$uam_dir/WeftYarnPeer.java"
    fi
    rm -f "$uam_dir/WeftYarnPeer.java.new"
fi

# The JVM options Hadoop's launch scripts add on Java 17.
jvm_opts=(-Xmx1g -Duser.timezone=UTC
    --add-opens=java.base/java.lang=ALL-UNNAMED
    --add-opens=java.base/java.lang.reflect=ALL-UNNAMED
    --add-opens=java.base/java.net=ALL-UNNAMED
    --add-opens=java.base/java.io=ALL-UNNAMED
    --add-opens=java.base/java.nio=ALL-UNNAMED
    --add-opens=java.base/java.util=ALL-UNNAMED
    --add-opens=java.base/java.util.concurrent=ALL-UNNAMED
    --add-opens=java.base/sun.nio.ch=ALL-UNNAMED
    --add-exports=java.base/sun.net.dns=ALL-UNNAMED
    --add-exports=java.base/sun.net.util=ALL-UNNAMED)

# KEEP_IN=DIR: the run dirs go under DIR and are left for the caller to
# remove (turnover-vs-slurm.sh removes them after its last round).
keep=$(mktemp -d "${KEEP_IN:-/var/tmp}/weft-yarn-peer-XXXX")
pids=()
stop_daemons() {
    local pid
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do
        for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    pids=()
    # Containers the NM left behind: processes whose cwd is under our dir.
    local p cwd
    for p in /proc/[0-9]*; do
        cwd=$(readlink "$p/cwd" 2>/dev/null) || continue
        case $cwd in "$keep"/*) kill -KILL "${p#/proc/}" 2>/dev/null || true ;; esac
    done
}
cleanup() {
    stop_daemons
    if [ -n "${KEEP:-}" ]; then echo "kept $keep" >&2; elif [ -z "${KEEP_IN:-}" ]; then rm -rf "$keep"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_ports() { # N free loopback ports
    python3 -c '
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))' "$1"
}

prop() { echo "  <property><name>$1</name><value>$2</value></property>"; }

write_conf() { # DIR
    local dir=$1 conf=$1/conf
    local p
    read -r -a p <<<"$(free_ports 8)"
    mkdir -p "$conf" "$dir/home" "$dir/tmp" "$dir/nm-local" "$dir/nm-logs"
    {
        echo '<?xml version="1.0"?><configuration>'
        prop fs.defaultFS file:///
        prop hadoop.tmp.dir "$dir/tmp"
        echo '</configuration>'
    } >"$conf/core-site.xml"
    {
        echo '<?xml version="1.0"?><configuration>'
        prop yarn.resourcemanager.hostname 127.0.0.1
        prop yarn.resourcemanager.address "127.0.0.1:${p[0]}"
        prop yarn.resourcemanager.scheduler.address "127.0.0.1:${p[1]}"
        prop yarn.resourcemanager.resource-tracker.address "127.0.0.1:${p[2]}"
        prop yarn.resourcemanager.admin.address "127.0.0.1:${p[3]}"
        prop yarn.resourcemanager.webapp.address "127.0.0.1:${p[4]}"
        prop yarn.nodemanager.hostname 127.0.0.1
        prop yarn.nodemanager.address "127.0.0.1:${p[5]}"
        prop yarn.nodemanager.localizer.address "127.0.0.1:${p[6]}"
        prop yarn.nodemanager.webapp.address "127.0.0.1:${p[7]}"
        prop yarn.resourcemanager.nodemanagers.heartbeat-interval-ms "$heartbeat"
        prop yarn.scheduler.minimum-allocation-mb "$task_memory"
        prop yarn.nodemanager.resource.memory-mb "$nm_memory"
        prop yarn.nodemanager.resource.cpu-vcores "$nm_vcores"
        prop yarn.nodemanager.container-executor.class \
            org.apache.hadoop.yarn.server.nodemanager.DefaultContainerExecutor
        prop yarn.nodemanager.vmem-check-enabled false
        prop yarn.nodemanager.local-dirs "$dir/nm-local"
        prop yarn.nodemanager.log-dirs "$dir/nm-logs"
        # The NM deletes an app's dirs after it ends; keeping them for the
        # caller to remove spares the next benchmark ext4's slow inode
        # creation after many deletions (see turnover-vs-slurm.sh). It does
        # not change the figure: the deletion comes after the last exit.
        prop yarn.nodemanager.delete.debug-delay-sec 3600
        # The NM's disk checker marks the node UNHEALTHY when its disk is
        # over 90 % full (and the RM then places nothing: the run hangs).
        # Weft and Slurm run on the same disk without such a check, and a
        # 1,000-container run writes a few MB, so the check is off here.
        prop yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage 100
        prop yarn.nodemanager.disk-health-checker.min-free-space-per-disk-mb 0
        prop yarn.application.classpath "$conf,$lib/*"
        echo '</configuration>'
    } >"$conf/yarn-site.xml"
    {
        echo '<?xml version="1.0"?><configuration>'
        prop yarn.scheduler.capacity.root.queues default
        prop yarn.scheduler.capacity.root.default.capacity 100
        prop yarn.scheduler.capacity.root.default.maximum-capacity 100
        prop yarn.scheduler.capacity.maximum-am-resource-percent 1.0
        echo '</configuration>'
    } >"$conf/capacity-scheduler.xml"
    # Hadoop's stock layout, to a file per daemon.
    cat >"$conf/log4j.properties" <<'EOF'
log4j.rootLogger=INFO,F
log4j.appender.F=org.apache.log4j.FileAppender
log4j.appender.F.File=${yarn.log.file}
log4j.appender.F.layout=org.apache.log4j.PatternLayout
log4j.appender.F.layout.ConversionPattern=%d{ISO8601} %p %c: %m%n
EOF
}

start_daemon() { # DIR NAME MAINCLASS
    local dir=$1 name=$2 class=$3
    (cd "$dir" && exec env JAVA_HOME="$java_home" HADOOP_CONF_DIR="$dir/conf" \
        "$java" "${jvm_opts[@]}" -Dyarn.log.file="$dir/$name.log" \
        -Dlog4j.configuration="file:$dir/conf/log4j.properties" \
        -Dhadoop.log.dir="$dir" -Duser.home="$dir/home" \
        -cp "$dir/conf:$lib/*" "$class" >"$dir/$name.out" 2>&1) &
    pids+=($!)
}

# From the daemons' logs (log4j ISO8601 stamps, UTC): prints "makespan
# first_start exits most_at_once" in seconds from the RM's acceptance of the
# submission; container ..._000001 is skipped for ds (the AM's).
measure() { # RM_LOG NM_LOG SKIP_AM
    python3 - "$@" <<'EOF'
import datetime, re, sys
rm_log, nm_log, skip_am = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
stamp = lambda line: datetime.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")
submitted = next(stamp(l) for l in open(rm_log) if "submitted by user" in l)
events = []
for line in open(nm_log):
    m = re.search(r"Container container_\d+_\d+_\d+_(\d+) transitioned from (\S+) to (\S+)", line)
    if not m or (skip_am and int(m.group(1)) == 1):
        continue
    if m.group(3) == "RUNNING":
        events.append((stamp(line), 1))
    elif m.group(2) == "RUNNING":
        events.append((stamp(line), -1 if m.group(3) == "EXITED_WITH_SUCCESS" else -1000000))
events.sort(key=lambda e: e[0])
exits = sum(1 for _, d in events if d == -1)
if len(events) != 2 * exits:
    exits = -1  # a task that did not exit with success
now = most = 0
for _, d in events:
    now += max(d, -1)
    most = max(most, now)
seconds = lambda t: "%.3f" % (t - submitted).total_seconds()
print(seconds(events[-1][0]), seconds(events[0][0]), exits, most)
EOF
}

fail() { echo "$*" >&2; KEEP=1; exit 1; }

one_run() { # DIR -> writes "makespan first_start most_at_once client_wall" to DIR/result
    local dir=$1
    write_conf "$dir"
    start_daemon "$dir" rm org.apache.hadoop.yarn.server.resourcemanager.ResourceManager
    start_daemon "$dir" nm org.apache.hadoop.yarn.server.nodemanager.NodeManager
    # Wait for the NM to register and the RM to see it running.
    local ok=
    for _ in $(seq 600); do
        if grep -q "NodeManager from node .* registered" "$dir/rm.log" 2>/dev/null \
            && grep -q "Registered with ResourceManager" "$dir/nm.log" 2>/dev/null; then
            ok=1; break
        fi
        for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null || fail "a daemon died: see $dir"; done
        sleep 0.1
    done
    [ -n "$ok" ] || fail "the NM did not register in 60 s: see $dir"
    sleep 2 # the node's first heartbeats; the scheduler adds it
    # An unhealthy node gets no containers: the client would wait for ever.
    ! grep -q "Node Transitioned from .* to UNHEALTHY" "$dir/rm.log" \
        || fail "the NM is UNHEALTHY (its health report is in nm.log): see $dir"
    local client_cmd classpath=$dir/conf:$lib/*
    if [ "$client" = ds ]; then
        client_cmd=(org.apache.hadoop.yarn.applications.distributedshell.Client
            -jar "$ds_jar" -shell_command /bin/true -num_containers "$count"
            -container_memory "$task_memory" -container_vcores 1
            -master_memory "$am_memory" -master_vcores 1 -timeout 86400000)
    else
        classpath=$classpath:$uam_dir
        client_cmd=(WeftYarnPeer "$count" "$task_memory" "$am_heartbeat" /bin/true)
    fi
    local start end
    start=$(date +%s.%N)
    (cd "$dir" && env JAVA_HOME="$java_home" HADOOP_CONF_DIR="$dir/conf" \
        "$java" "${jvm_opts[@]}" -Dyarn.log.file="$dir/client.log" \
        -Dlog4j.configuration="file:$dir/conf/log4j.properties" -Duser.home="$dir/home" \
        -cp "$classpath" "${client_cmd[@]}" >"$dir/client.out" 2>&1) \
        || fail "the client failed: see $dir/client.out and client.log"
    end=$(date +%s.%N)
    if [ "$client" = ds ]; then
        grep -q "Application completed successfully" "$dir/client.log" \
            || fail "the application did not succeed: see $dir"
    else
        grep -q "failed=0" "$dir/client.out" || fail "the application did not succeed: see $dir"
    fi
    local makespan first exits most
    read -r makespan first exits most < <(measure "$dir/rm.log" "$dir/nm.log" \
        "$([ "$client" = ds ] && echo 1 || echo 0)")
    [ "$exits" -eq "$count" ] || fail "expected $count task exits with success, the NM log has $exits: see $dir"
    stop_daemons
    echo "$makespan $first $most $(echo "$end - $start" | bc)" >"$dir/result"
}

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

if [ "$client" = ds ]; then
    what="DistributedShell (its AM in a $am_memory MB container beside the $slots slots, AM heartbeat 1000 ms)"
else
    what="a client that is its own unmanaged AM (no AM container; AM heartbeat $am_heartbeat ms)"
fi
echo "YARN $version, RM + 1 NM (CapacityScheduler, NM <memory:$nm_memory, vCores:$nm_vcores>," \
    "NM heartbeat $heartbeat ms); $what: $count x /bin/true, 1 vcore 64 MB each, $slots at a time"
rates=()
for run in $(seq "$runs"); do
    [ "$run" -eq 1 ] || sleep "$gap"
    dir="$keep/run$run"
    mkdir -p "$dir"
    one_run "$dir"
    read -r makespan first most wall <"$dir/result"
    rate=$(printf '%.1f' "$(echo "scale=3; $count / $makespan" | bc)")
    steady=$(printf '%.1f' "$(echo "scale=3; $count / ($makespan - $first)" | bc)")
    rates+=("$rate")
    echo "run $run: $count containers, submit -> last exit $makespan s: $rate/s" \
        "(first task ran at +$first s; first task -> last exit $steady/s; at most $most running at once; client wall $(printf '%.2f' "$wall") s)"
done
echo "median: yarn $(median "${rates[@]}")/s [${rates[*]}]"
