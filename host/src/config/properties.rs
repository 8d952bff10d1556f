//! Properties by name, as an operator writes them: every property Weft knows
//! with its type, bounds, default and meaning; defaults overlaid by a TOML
//! config file and `--set KEY=VALUE` overrides, each checked as it is set.
//!
//! A config file may nest keys as TOML tables or write them dotted and quoted;
//! both flatten to the same property name. An unknown property or a value of
//! the wrong type or out of bounds is refused with the property's name.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::limits;

/// What values a property takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    /// `true` or `false`.
    Flag,
    /// A whole number (milliseconds, megabytes, counts) in `min..=max`.
    Whole {
        /// The smallest value allowed.
        min: u64,
        /// The largest value allowed.
        max: u64,
    },
    /// A finite number from 0 to `max`.
    Number {
        /// The largest value allowed.
        max: u64,
    },
    /// One of the listed words.
    Choice(&'static [&'static str]),
    /// Any text, kept as given (not trimmed).
    Text,
}

impl ValueType {
    fn expected(&self) -> String {
        match self {
            ValueType::Flag => "true or false".into(),
            ValueType::Whole { min, max } => format!("a whole number from {min} to {max}"),
            ValueType::Number { max } => format!("a number from 0 to {max}"),
            ValueType::Choice(words) => format!("one of {}", words.join(", ")),
            ValueType::Text => "text".into(),
        }
    }
}

const DAY_MS: u64 = 86_400_000;
const PRICE: ValueType = ValueType::Number { max: 1_000_000_000 };

/// Every property Weft knows: (name, type, default, meaning).
pub const PROPERTIES: &[(&str, ValueType, &str, &str)] = &[
    (
        "yarn.resourcemanager.quota.enabled",
        ValueType::Flag,
        "true",
        "charge projects for container usage (HopsYARN's default is false)",
    ),
    (
        "yarn.resourcemanager.quota.price.base.general",
        PRICE,
        "1",
        "credits per second for one unit of CPU or memory",
    ),
    (
        "yarn.resourcemanager.quota.price.base.gpu",
        PRICE,
        "1",
        "credits per second for one GPU unit",
    ),
    (
        "yarn.resourcemanager.quota.min.runtime",
        ValueType::Whole {
            min: 0,
            max: limits::MAX_DURATION_MS,
        },
        "10000",
        "ms a container is charged for at least",
    ),
    (
        "yarn.resourcemanager.quota.scheduling.period",
        ValueType::Whole {
            min: 1,
            max: DAY_MS,
        },
        "10000",
        "ms between two QUOTA_COMPUTE events",
    ),
    (
        "yarn.resourcemanager.quota.variable.price.enabled",
        ValueType::Flag,
        "false",
        "let the multiplicators follow cluster utilization",
    ),
    (
        "yarn.resourcemanager.quota.multiplicator.interval",
        ValueType::Whole {
            min: 1,
            max: DAY_MS,
        },
        "10000",
        "ms between two multiplicator computations",
    ),
    (
        "yarn.resourcemanager.quota.multiplicator.threshold.general",
        PRICE,
        "0.2",
        "utilization (0..1) above which CPU/memory prices rise",
    ),
    (
        "yarn.resourcemanager.quota.multiplicator.threshold.gpu",
        PRICE,
        "0.2",
        "utilization (0..1) above which GPU prices rise",
    ),
    (
        "yarn.resourcemanager.quota.multiplicator.increment.general",
        PRICE,
        "1",
        "price increase per unit of utilization above the threshold",
    ),
    (
        "yarn.resourcemanager.quota.multiplicator.increment.gpu",
        PRICE,
        "1",
        "GPU price increase per unit of utilization above the threshold",
    ),
    (
        "yarn.resourcemanager.quota.minimum.charged.mb",
        ValueType::Whole {
            min: 1,
            max: limits::MAX_MEMORY_MB,
        },
        "1024",
        "MB of memory that make one charged unit",
    ),
    (
        "yarn.resourcemanager.quota.minimum.charged.gpu",
        ValueType::Whole {
            min: 1,
            max: limits::MAX_GPUS as u64,
        },
        "1",
        "GPUs that make one charged unit",
    ),
    (
        "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms",
        ValueType::Whole {
            min: 10,
            max: 3_600_000,
        },
        "1000",
        "ms between two heartbeats of a node, told to nodes at registration",
    ),
    (
        "yarn.nodemanager.sleep-delay-before-sigkill.ms",
        ValueType::Whole {
            min: 0,
            max: 600_000,
        },
        "250",
        "ms an agent waits between SIGTERM and SIGKILL when it kills a container",
    ),
    (
        "yarn.nodemanager.container.stderr.tail.bytes",
        ValueType::Whole {
            min: 0,
            max: 1 << 20,
        },
        "4096",
        "bytes of a failed container's stderr its diagnostics carry",
    ),
    (
        "yarn.nodemanager.log.retain-seconds",
        ValueType::Whole {
            min: 0,
            max: 365 * 24 * 3600,
        },
        "10800",
        "seconds an agent keeps a container's logs and working dir after the container ended (and its end was acknowledged)",
    ),
    (
        "yarn.nodemanager.resource.system-reserved-memory-mb",
        ValueType::Whole {
            min: 0,
            max: 1 << 30,
        },
        "1024",
        "MB of the machine an agent keeps for the system when it sizes itself (at most half the machine)",
    ),
    (
        "weft.agent.run-as",
        ValueType::Choice(&["agent", "submitter", "local-user"]),
        "agent",
        "who containers run as: the agent's own user (YARN's DefaultContainerExecutor; refused in token mode for the local agent, and for an agent running as root), the submitting user (token authentication and a root agent only), or one unprivileged user for every container (local-user; a root agent only)",
    ),
    (
        "yarn.nodemanager.linux-container-executor.nonsecure-mode.local-user",
        ValueType::Text,
        "nobody",
        "the user every container runs as with weft.agent.run-as = local-user (better one of its own than nobody: a container can reach any process of its user through /proc)",
    ),
    (
        "weft.agent.pids-limit",
        ValueType::Whole {
            min: 0,
            max: 4_194_304,
        },
        "4096",
        "processes and threads one container may have at once (the pids cgroup controller, where usable; 0: no limit), so no container takes every pid of its machine",
    ),
    (
        "yarn.nodemanager.container-log-monitor.enable",
        ValueType::Flag,
        "true",
        "an agent kills a container whose log dir grows past the limits below (KILLED_FOR_EXCESS_LOGS, -109), so no runaway logger fills the node's disk (YARN's default is false)",
    ),
    (
        "yarn.nodemanager.container-log-monitor.interval-ms",
        ValueType::Whole {
            min: 100,
            max: 3_600_000,
        },
        "10000",
        "how often an agent measures its containers' log dirs, in ms (YARN's default is 60000)",
    ),
    (
        "yarn.nodemanager.container-log-monitor.dir-size-limit-bytes",
        ValueType::Whole {
            min: 1,
            max: 1 << 50,
        },
        "1000000000",
        "the disk space one container's log dir may take (as du counts it), or hold more than 1,000 files or 32 levels of dirs",
    ),
    (
        "yarn.nodemanager.container-log-monitor.total-size-limit-bytes",
        ValueType::Whole {
            min: 1,
            max: 1 << 50,
        },
        "10000000000",
        "the disk space all of one container's logs may take (a Weft container has one log dir, so the smaller of this and the dir limit holds)",
    ),
    (
        "weft.agent.container-network",
        ValueType::Choice(&["host", "none"]),
        "host",
        "the network containers get: the node's own (host, as YARN's default runtime: a container reaches every service of the node, its loopback included), or none: a network namespace of its own with only a loopback, and a /run and /var/tmp of its own, so it reaches no service of the node (on a port or a socket in /run) and no other container (for batch work that needs no network: YARN applications, such as Spark, need host and are refused). none needs a root agent that can make namespaces, and the agent refuses to start without",
    ),
    (
        "yarn.nodemanager.disk-health-checker.enable",
        ValueType::Flag,
        "true",
        "an agent checks the disks of its work and log dirs, and reports its node unhealthy while one is too full: an unhealthy node gets no new containers (those it runs go on)",
    ),
    (
        "yarn.nodemanager.disk-health-checker.interval-ms",
        ValueType::Whole {
            min: 100,
            max: 86_400_000,
        },
        "120000",
        "how often an agent checks its disks, in ms",
    ),
    (
        "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage",
        ValueType::Number { max: 100 },
        "90.0",
        "a dir's disk is too full when more than this percentage of it is not free for use (YARN's measure: the blocks kept for root count as used, which df's Use% leaves out)",
    ),
    (
        "yarn.nodemanager.disk-health-checker.min-free-space-per-disk-mb",
        ValueType::Whole {
            min: 0,
            max: 1 << 40,
        },
        "0",
        "a dir's disk is too full when less than this many MB are free for use",
    ),
    (
        "yarn.nodemanager.health-checker.script.path",
        ValueType::Text,
        "",
        "an executable (an absolute path) an agent runs every yarn.nodemanager.health-checker.interval-ms, as its own user: a line of its output starting with ERROR reports the node unhealthy (with those lines as the report), as does not ending within the timeout or not starting; its exit status does not count (YARN's rule); empty: none",
    ),
    (
        "yarn.nodemanager.health-checker.script.opts",
        ValueType::Text,
        "",
        "the health script's arguments, split at white space",
    ),
    (
        "yarn.nodemanager.health-checker.interval-ms",
        ValueType::Whole {
            min: 100,
            max: 86_400_000,
        },
        "600000",
        "how often an agent runs its health script, in ms (from the start of one run to the next)",
    ),
    (
        "yarn.nodemanager.health-checker.timeout-ms",
        ValueType::Whole {
            min: 100,
            max: 86_400_000,
        },
        "1200000",
        "how long a health script may run, in ms: one still running then is killed (its process group) and the node reported unhealthy",
    ),
    (
        "weft.agent.syscall-filter",
        ValueType::Flag,
        "true",
        "run containers under a seccomp filter that refuses system calls batch work has no need of and that widen what the kernel exposes to a tenant: creating or entering namespaces (user namespaces above all), mounts, keyrings, BPF, perf events, userfaultfd, io_uring, kernel modules (where the agent runs as root; false for containers that must make namespaces of their own, such as nested sandboxes)",
    ),
    (
        "weft.agent.banned-users",
        ValueType::Text,
        "hdfs,yarn,mapred,bin",
        "users containers never run as with run-as = submitter (container-executor.cfg's banned.users)",
    ),
    (
        "weft.agent.min-user-id",
        ValueType::Whole {
            min: 0,
            max: u32::MAX as u64,
        },
        "1000",
        "the lowest uid containers run as with run-as = submitter (container-executor.cfg's min.user.id)",
    ),
    (
        "yarn.resourcemanager.nodemanager-graceful-decommission-timeout-secs",
        ValueType::Whole {
            min: 0,
            max: 365 * 24 * 3600,
        },
        "3600",
        "how long a node being decommissioned (weft node decommission) waits for its containers to end before they are killed, in seconds, when the administrator names no timeout",
    ),
    (
        "yarn.scheduler.configuration.store.class",
        ValueType::Choice(&["file", "memory", "leveldb", "zk", "fs"]),
        "file",
        "where queue changes made through the API (PUT /ws/v1/cluster/scheduler-conf, weft queue conf) are kept: file refuses them (the queue file and settings are the configuration); memory keeps them in the server until it stops; leveldb, zk and fs all keep them in Weft's store (SQLite or PostgreSQL), over restarts and failovers, on top of the queue file",
    ),
    (
        "yarn.scheduler.configuration.mutation.acl-policy.class",
        ValueType::Choice(&[
            "org.apache.hadoop.yarn.server.resourcemanager.scheduler.DefaultConfigurationMutationACLPolicy",
            "org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.conf.QueueAdminConfigurationMutationACLPolicy",
        ]),
        "org.apache.hadoop.yarn.server.resourcemanager.scheduler.DefaultConfigurationMutationACLPolicy",
        "who may change the queues through the API: administrators (yarn.admin.acl; the default), or with QueueAdminConfigurationMutationACLPolicy also the administrators of each queue changed (of the nearest queue that exists for one added; global updates stay the administrators')",
    ),
    (
        "yarn.resourcemanager.nodes.exclude-path",
        ValueType::Text,
        "",
        "a file (an absolute path) of hosts to decommission, as YARN's: names or node ids separated by white space, # to the end of a line a comment; read at each refresh of the nodes (POST /ws/v1/admin/refresh-nodes, weft node refresh); empty: none",
    ),
    (
        "yarn.nm.liveness-monitor.expiry-interval-ms",
        ValueType::Whole {
            min: 1,
            max: 7 * DAY_MS,
        },
        "600000",
        "ms without a heartbeat after which a node is lost",
    ),
    (
        "yarn.resourcemanager.max-completed-applications",
        ValueType::Whole {
            min: 0,
            max: 10_000_000,
        },
        "1000",
        "ended apps kept for the API (the most recent ones); older ones are forgotten",
    ),
    (
        "weft.security.authentication",
        ValueType::Choice(&["simple", "token"]),
        "simple",
        "simple: the caller is whoever X-Weft-User names (development); token: a bearer token from the tokens file",
    ),
    (
        "yarn.admin.acl",
        ValueType::Text,
        "*",
        "who administers the cluster: queues, policies (YARN ACL syntax); in token mode, when not set, the user running weft serve",
    ),
    (
        "weft.security.node-acl",
        ValueType::Text,
        "*",
        "who may register nodes and heartbeat (YARN ACL syntax); in token mode, when not set, the user running weft serve",
    ),
    (
        "weft.security.default-user",
        ValueType::Text,
        "anonymous",
        "simple mode: the caller of a request without an X-Weft-User header",
    ),
    (
        "weft.security.users-file",
        ValueType::Text,
        "",
        "a TOML file of [users] NAME = [\"group\", …] (empty: no groups)",
    ),
    (
        "weft.security.tokens-file",
        ValueType::Text,
        "",
        "token mode: the file of token hashes `weft token create` writes (empty: DATA_DIR/tokens.toml)",
    ),
    (
        "weft.security.projects-file",
        ValueType::Text,
        "",
        "a TOML file of [projects] NAME = [\"user\", \"@group\", …]: who may charge each project (empty: anyone, any project)",
    ),
    (
        "weft.yarn-rpc.enabled",
        ValueType::Flag,
        "true",
        "serve YARN's own RPC protocols (Hadoop IPC) for existing YARN clients such as spark-submit",
    ),
    (
        "yarn.resourcemanager.address",
        ValueType::Text,
        "",
        "where YARN clients submit over RPC, host:port (empty: the HTTP API's address with port 8032 when it is on 8088, else any free port)",
    ),
    (
        "yarn.resourcemanager.scheduler.address",
        ValueType::Text,
        "",
        "where YARN application masters ask for containers over RPC, host:port (empty: the HTTP API's address with port 8030 when it is on 8088, else any free port)",
    ),
    (
        "yarn.nodemanager.address",
        ValueType::Text,
        "",
        "where an agent serves YARN's ContainerManagementProtocol to application masters, host:port (empty: the local agent on 127.0.0.1, a `weft agent` on its --listen address's host, any free port)",
    ),
    (
        "weft.http.tls.cert-file",
        ValueType::Text,
        "",
        "a PEM certificate chain: with the key file, the API is served over TLS (empty: plain HTTP)",
    ),
    (
        "weft.http.tls.key-file",
        ValueType::Text,
        "",
        "the PEM private key of the certificate",
    ),
    (
        "weft.http.idle-timeout-ms",
        ValueType::Whole {
            min: 100,
            max: 3_600_000,
        },
        "60000",
        "ms a connection may make no progress (idle, or stalled mid-request) before it is closed",
    ),
    (
        "weft.http.event-stream-lifetime-ms",
        ValueType::Whole {
            min: 1_000,
            max: 86_400_000,
        },
        "600000",
        "ms one stream of GET /ws/v1/events lasts before the server ends it (the web UI opens the next), so no stream outlives its caller's right to it for long",
    ),
    (
        "weft.http.max-connections",
        ValueType::Whole {
            min: 0,
            max: 100_000,
        },
        "0",
        "connections open at once; more are closed at once (0: half the process's file-descriptor limit)",
    ),
    (
        "weft.http.max-connections-per-client",
        ValueType::Whole {
            min: 1,
            max: 100_000,
        },
        "256",
        "connections one client address may hold open at once; more from it are closed at once",
    ),
    (
        "weft.http.max-waiting-requests",
        ValueType::Whole {
            min: 0,
            max: 1_000_000,
        },
        "4096",
        "requests that may wait at once for an app's end (GET …/apps/{id}/state?wait_ms=); beyond it a wait answers at once with the state now",
    ),
    (
        "yarn.resourcemanager.reservation-system.enable",
        ValueType::Flag,
        "true",
        "accept reservations in reservable queues (YARN's default is false)",
    ),
    (
        "yarn.resourcemanager.reservation-system.max-periodicity",
        ValueType::Whole {
            min: 1,
            max: 366 * DAY_MS,
        },
        "86400000",
        "ms; the period of every recurring reservation must divide it",
    ),
    (
        "yarn.resourcemanager.reservation-system.planfollower.time-step",
        ValueType::Whole {
            min: 1,
            max: DAY_MS,
        },
        "1000",
        "ms; the plan's time step: reservations are placed on multiples of it",
    ),
    (
        "yarn.resourcemanager.scheduler.monitor.enable",
        ValueType::Flag,
        "false",
        "reclaim: preempt containers of queues above their guarantee for starved ones",
    ),
    (
        "yarn.resourcemanager.monitor.capacity.preemption.total_preemption_per_round",
        ValueType::Number { max: 1 },
        "0.1",
        "reclaim: the most of the cluster's resources one reclaim takes back, as a fraction (at least one container), containers marked and waiting for their kill included; what the policy chose beyond it waits for the next, monitoring_interval later",
    ),
    (
        "yarn.resourcemanager.monitor.capacity.preemption.monitoring_interval",
        ValueType::Whole {
            min: 1,
            max: DAY_MS,
        },
        "3000",
        "ms after a reclaim cut short (by total_preemption_per_round or natural_termination_factor), or with containers marked and waiting for their kill, before the next",
    ),
    (
        "yarn.resourcemanager.monitor.capacity.preemption.max_wait_before_kill",
        ValueType::Whole {
            min: 0,
            max: DAY_MS,
        },
        "15000",
        "ms a container reclaim chose is marked (its application master told) before it is killed, if still chosen; 0 kills at once",
    ),
    (
        "yarn.resourcemanager.monitor.capacity.preemption.max_ignored_over_capacity",
        ValueType::Number { max: 100 },
        "0",
        "reclaim: a queue is taken from only when it holds more than its guarantee times 1 plus this (a dead zone above the guarantee; YARN's default 0.1 would leave a starved queue short of its guarantee by up to a tenth of the others')",
    ),
    (
        "yarn.resourcemanager.monitor.capacity.preemption.natural_termination_factor",
        ValueType::Number { max: 1 },
        "1",
        "reclaim: of what the policy chose in a queue, the share one reclaim takes (at least one container; 0 takes none); the rest waits for containers to end or the next reclaim, monitoring_interval later (YARN's default 0.2 makes a starved queue wait several waits for its guarantee)",
    ),
    (
        "yarn.resourcemanager.monitor.capacity.preemption.observe_only",
        ValueType::Flag,
        "false",
        "reclaim: choose victims and log them, preempting none",
    ),
    (
        "weft.reclaim.starvation-ms",
        ValueType::Whole {
            min: 0,
            max: DAY_MS,
        },
        "15000",
        "ms a queue below its guarantee waits with unmet demand before reclaim starts",
    ),
    (
        "weft.quota.default-credits",
        PRICE,
        "0",
        "credits a project starts with",
    ),
    (
        "weft.quota.budget.enforce",
        ValueType::Choice(&["off", "refuse-new", "stop-running"]),
        "off",
        "what a project with no credits left may do: off (run on, into debt); refuse-new (no new apps, its pending containers wait for a grant); stop-running (also its running containers are preempted, charged to their end)",
    ),
    (
        "weft.quota.budget.warn-credits",
        PRICE,
        "100",
        "a project with fewer credits left than this is shown as low (web UI, `weft quota list`, weft_project_budget_low in /metrics)",
    ),
    (
        "weft.accounting.enabled",
        ValueType::Flag,
        "true",
        "keep one accounting record per ended app (GET /ws/v1/accounting, `weft accounting export`); false: none are kept",
    ),
    (
        "weft.quota.event-log",
        ValueType::Text,
        "",
        "a file every quota event is appended to, one JSON line each, in `weft replay`'s format (docs/replay-events.md); empty: off",
    ),
    (
        "weft.quota.event-log-max-mb",
        ValueType::Whole {
            min: 1,
            max: crate::limits::MAX_LOG_BYTES >> 20,
        },
        "1024",
        "MB the quota event log may grow to (replay reads at most 1024); at the limit no more events are logged, with a warning, until the file is moved away and the server restarted",
    ),
    (
        "yarn.nodemanager.opportunistic-containers-max-queue-length",
        ValueType::Whole {
            min: 0,
            max: limits::MAX_OPPORTUNISTIC_QUEUE as u64,
        },
        "16",
        "opportunistic containers (asks with execution_type opportunistic) that may wait at one agent's node for room its running containers hold; each starts there the moment room frees, and what is placed on a node stays within twice its capacity. 0 (YARN's default): none wait, they are placed on free room only",
    ),
    (
        "yarn.cluster.max-application-priority",
        ValueType::Whole {
            min: 0,
            max: i32::MAX as u64,
        },
        "0",
        "the highest priority an app may have; a higher one asked at submission is cut to it, as YARN does (0, YARN's default: no app is served ahead of earlier ones by asking)",
    ),
    (
        "yarn.scheduler.maximum-allocation-mb",
        ValueType::Whole {
            min: 0,
            max: limits::MAX_MEMORY_MB,
        },
        "0",
        "the most memory (MB) one container may ask for; an ask above it is refused at submission (0: the largest registered node's)",
    ),
    (
        "yarn.scheduler.maximum-allocation-vcores",
        ValueType::Whole {
            min: 0,
            max: limits::MAX_VCORES as u64,
        },
        "0",
        "the most vcores one container may ask for; an ask above it is refused at submission (0: the largest registered node's)",
    ),
    (
        "yarn.resource-types.yarn.io/gpu.maximum-allocation",
        ValueType::Whole {
            min: 0,
            max: limits::MAX_GPUS as u64,
        },
        "0",
        "the most GPUs one container may ask for; an ask above it is refused at submission (0: the largest registered node's)",
    ),
    (
        "weft.scheduler.interval-ms",
        ValueType::Whole {
            min: 1,
            max: 60_000,
        },
        "100",
        "ms between two scheduling rounds",
    ),
    (
        "weft.scheduler.usage.half-life-ms",
        ValueType::Whole {
            min: 0,
            max: 315_360_000_000,
        },
        "604800000",
        "each user's and queue's use fades by half in this time (7 days, as Slurm's PriorityDecayHalfLife; 0: it does not fade); GET /ws/v1/cluster/usage shows it",
    ),
    (
        "weft.policy.scheduling",
        ValueType::Text,
        "builtin:capacity",
        "the scheduling policy loaded at start",
    ),
    (
        "weft.policy.pricing",
        ValueType::Text,
        "builtin:hops-pricing",
        "the pricing policy loaded at start",
    ),
    (
        "weft.policy.sharing",
        ValueType::Text,
        "builtin:capacity-over-time",
        "the reservation sharing policy loaded at start",
    ),
    (
        "weft.policy.call-timeout-ms",
        ValueType::Whole {
            min: 1,
            max: 60_000,
        },
        "500",
        "ms one policy call may take before it is interrupted",
    ),
    (
        "weft.policy.memory-limit-mb",
        ValueType::Whole { min: 1, max: 4096 },
        "256",
        "MB of linear memory one policy instance may use",
    ),
    (
        "weft.policy.max-consecutive-failures",
        ValueType::Whole {
            min: 1,
            max: u32::MAX as u64,
        },
        "3",
        "failed calls in a row after which a new version is rolled back",
    ),
    (
        "weft.policy.watch-dir",
        ValueType::Text,
        "",
        "a directory whose NAME.KIND.wasm files are loaded when written (empty: off)",
    ),
    (
        "weft.policy.compile-cache-mb",
        ValueType::Whole {
            min: 0,
            max: 1 << 20,
        },
        "512",
        "MB of compiled policy code kept on disk so a restart or second load skips the compiler (0: off)",
    ),
    (
        "weft.policy.compile-cache-dir",
        ValueType::Text,
        "",
        "where compiled policy code is kept; empty: DATA_DIR/compiled for serve, $XDG_CACHE_HOME/weft/compiled (or ~/.cache/weft/compiled) for the other commands",
    ),
    (
        "weft.policy.standby-memory-mb",
        ValueType::Whole {
            min: 0,
            max: 1 << 20,
        },
        "512",
        "MB of compiled code the standby versions of one kind may hold; older standbys beyond it are retired",
    ),
    (
        "weft.policy.instance-pool",
        // Each pooled instance reserves 4 GiB of address space (not memory).
        ValueType::Whole { min: 0, max: 4096 },
        "256",
        "policy instances allocated from a pool made at start, so instantiating takes microseconds; a load beyond it is refused (0: allocate on demand)",
    ),
    (
        "weft.store.url",
        ValueType::Text,
        "",
        "postgres://user@host:port/db to keep state in PostgreSQL (shared by an active and standby servers); empty: SQLite in the data directory",
    ),
    (
        "weft.ha.lease-ms",
        ValueType::Whole {
            min: 300,
            max: DAY_MS,
        },
        "6000",
        "with PostgreSQL: how long the active server's lease lasts; it renews every third of it, standbys poll every third, and a standby takes over at most a lease plus a poll after the active's last renewal",
    ),
    (
        "yarn.resourcemanager.work-preserving-recovery.scheduling-wait-ms",
        ValueType::Whole {
            min: 0,
            max: DAY_MS,
        },
        "10000",
        "ms after a restart or failover during which nothing new is allocated, unless every known node is back sooner",
    ),
];

/// Why the settings cannot be loaded: a property, a value, an override or the
/// config file refused, each named.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ConfigError {
    /// A property Weft does not know, by the name given.
    #[error("unknown property {0:?} (see `weft config` for the known ones)")]
    Unknown(String),
    /// A value not of its property's type, or out of its bounds.
    #[error("property {key} must be {expected}, not {value:?}")]
    BadValue {
        /// The property.
        key: String,
        /// What its values must be, e.g. "a whole number from 1 to 60000".
        expected: String,
        /// The value given.
        value: String,
    },
    /// A `--set` argument that is not `KEY=VALUE`, as given.
    #[error("--set takes KEY=VALUE, not {0:?}")]
    BadOverride(String),
    /// The config file cannot be read, or is not TOML.
    #[error("cannot read config file {path}: {reason}")]
    File {
        /// The file, as given.
        path: String,
        /// The I/O or TOML error.
        reason: String,
    },
    /// Properties each valid but not together (a TLS certificate without its
    /// key), and why.
    #[error("{0}")]
    Inconsistent(String),
}

/// The prefix of the Capacity Scheduler's properties, which configure the
/// queue tree.
pub const CAPACITY_PREFIX: &str = "yarn.scheduler.capacity.";

/// Every property's value: defaults overlaid by the file and `--set`s.
#[derive(Debug, Clone, PartialEq)]
pub struct Properties {
    values: BTreeMap<&'static str, String>,
    /// The properties given in the file or by `--set`, not defaulted.
    given: BTreeSet<&'static str>,
    /// `yarn.scheduler.capacity.*` properties, by trimmed name, values as
    /// given: `queues/` checks them when it builds the queue tree.
    pub(crate) queue_properties: BTreeMap<String, String>,
}

impl Default for Properties {
    fn default() -> Self {
        Properties {
            values: PROPERTIES
                .iter()
                .map(|(key, _, default, _)| (*key, default.to_string()))
                .collect(),
            given: BTreeSet::new(),
            queue_properties: BTreeMap::new(),
        }
    }
}

impl Properties {
    /// Defaults, then `file` if given, then each `KEY=VALUE` override.
    pub fn load(file: Option<&Path>, overrides: &[String]) -> Result<Properties, ConfigError> {
        let mut properties = Properties::default();
        if let Some(path) = file {
            properties.apply_file(path)?;
        }
        for assignment in overrides {
            let (key, value) = assignment
                .split_once('=')
                .ok_or_else(|| ConfigError::BadOverride(assignment.clone()))?;
            // Values as given: a leading space means something in an ACL.
            properties.set(key.trim(), value)?;
        }
        Ok(properties)
    }

    fn apply_file(&mut self, path: &Path) -> Result<(), ConfigError> {
        let file_error = |reason: String| ConfigError::File {
            path: path.display().to_string(),
            reason,
        };
        let text = std::fs::read_to_string(path).map_err(|e| file_error(e.to_string()))?;
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| file_error(e.to_string()))?;
        let mut flat = Vec::new();
        flatten("", &toml::Value::Table(table), &mut flat);
        for (key, value) in flat {
            self.set(&key, &value)?;
        }
        Ok(())
    }

    /// Sets one property, checking its name and its value's type and bounds.
    /// Text values are kept as given; the others are trimmed.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), ConfigError> {
        if key.starts_with(CAPACITY_PREFIX) {
            let name = key.trim().to_string();
            self.queue_properties.insert(name, value.to_string());
            return Ok(());
        }
        let (name, value_type, ..) = PROPERTIES
            .iter()
            .find(|(name, ..)| *name == key)
            .ok_or_else(|| ConfigError::Unknown(key.into()))?;
        let value = if *value_type == ValueType::Text {
            value
        } else {
            value.trim()
        };
        let valid = match value_type {
            ValueType::Flag => value.parse::<bool>().is_ok(),
            ValueType::Whole { min, max } => value
                .parse::<u64>()
                .is_ok_and(|number| (*min..=*max).contains(&number)),
            ValueType::Number { max } => value
                .parse::<f64>()
                .is_ok_and(|number| number.is_finite() && (0.0..=*max as f64).contains(&number)),
            ValueType::Choice(words) => words.contains(&value),
            ValueType::Text => true,
        };
        if !valid {
            return Err(ConfigError::BadValue {
                key: key.into(),
                expected: value_type.expected(),
                value: value.into(),
            });
        }
        self.values.insert(name, value.to_string());
        self.given.insert(name);
        Ok(())
    }

    /// The value of a known property; an unknown name is an error (a typo in
    /// Weft's own code, caught by the tests of `Settings`).
    pub(crate) fn value(&self, key: &str) -> Result<&str, ConfigError> {
        self.values
            .get(key)
            .map(String::as_str)
            .ok_or_else(|| ConfigError::Unknown(key.into()))
    }

    /// Whether the file or a `--set` gave the property (else it has its default).
    pub(crate) fn is_given(&self, key: &str) -> bool {
        self.given.contains(key)
    }

    /// Every property and its value, for `weft config`.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &str)> {
        self.values
            .iter()
            .map(|(key, value)| (*key, value.as_str()))
    }
}

pub(crate) fn flatten(prefix: &str, value: &toml::Value, out: &mut Vec<(String, String)>) {
    match value {
        toml::Value::Table(table) => {
            for (key, value) in table {
                let key = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                flatten(&key, value, out);
            }
        }
        toml::Value::String(text) => out.push((prefix.to_string(), text.clone())),
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_then_overrides() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("weft.toml");
        std::fs::write(
            &path,
            "\"weft.scheduler.interval-ms\" = 50\n\n[yarn.resourcemanager.quota]\nmin.runtime = 5000\n\"price.base.gpu\" = 3.5\n",
        )
        .unwrap();
        let properties = Properties::load(
            Some(&path),
            &["yarn.resourcemanager.quota.price.base.gpu=4".into()],
        )
        .unwrap();
        assert_eq!(
            properties.value("yarn.resourcemanager.quota.min.runtime"),
            Ok("5000")
        );
        assert_eq!(
            properties.value("yarn.resourcemanager.quota.price.base.gpu"),
            Ok("4")
        );
        assert_eq!(properties.value("weft.scheduler.interval-ms"), Ok("50"));
        assert!(properties.is_given("weft.scheduler.interval-ms"));
        assert!(!properties.is_given("yarn.admin.acl"));
    }

    #[test]
    fn bad_settings_name_the_property_and_the_bounds() {
        let cases: [(&str, &str); 10] = [
            ("yarn.resourcemanager.quota.nope=1", "unknown property"),
            ("yarn.resourcemanager.quota.enabled=yes", "true or false"),
            ("yarn.resourcemanager.quota.min.runtime=1.5", "whole number"),
            (
                "yarn.resourcemanager.quota.price.base.general=-2",
                "a number from 0",
            ),
            (
                "yarn.resourcemanager.quota.price.base.general=NaN",
                "a number from 0",
            ),
            (
                "yarn.resourcemanager.quota.minimum.charged.mb=0",
                "from 1 to",
            ),
            (
                "weft.scheduler.interval-ms=18446744073709551615",
                "to 60000",
            ),
            // Agents wait at least 10 ms between heartbeats.
            (
                "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms=9",
                "from 10 to",
            ),
            ("weft.security.authentication=kerberos", "simple, token"),
            ("no-equals-sign", "KEY=VALUE"),
        ];
        for (assignment, expected) in cases {
            let error = Properties::load(None, &[assignment.into()]).unwrap_err();
            let message = error.to_string();
            assert!(message.contains(expected), "{assignment}: {message}");
            if let Some((key, _)) = assignment.split_once('=')
                && !message.contains("unknown")
            {
                assert!(message.contains(key), "{assignment}: {message}");
            }
        }
    }
}
