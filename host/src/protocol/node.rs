//! The node protocol: everything the resource manager and a node agent say to
//! each other (YARN's ResourceTracker records) — a registration and its
//! answer, a heartbeat and its orders (launches, kills, acknowledged ends),
//! the container ends an agent reports — and the ResourceTracker an agent
//! reaches the server through. Shared by the server (`rm/`, `api/`) and the
//! agent (`agent/`), which import nothing else of each other.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The command a container runs: an argv (the first word looked up on
/// PATH) or one line for `/bin/sh -c`, as YARN's distributed shell takes
/// `shell_command`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ContainerCommand {
    /// The program and its arguments, exec'd with no shell (`{"argv": […]}`).
    Argv(Vec<String>),
    /// One line run by `/bin/sh -c` (`{"shell": "…"}`).
    Shell(String),
}

/// An order to launch one container, as the heartbeat's answer carries it
/// (again in every answer until the agent reports the container running
/// or ended, so a lost answer loses nothing; launching is idempotent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LaunchOrder {
    /// The container's id, in YARN's form (CONTAINER_ID).
    pub container_id: String,
    /// The id of the container's app (APP_ID).
    pub app_id: String,
    /// The app's user (WEFT_USER; the Unix user with run-as = submitter).
    pub user: String,
    /// What the container runs: its ask's command, or `sleep` for an ask
    /// with none.
    pub command: ContainerCommand,
    /// The ask's variables; the agent's own (CONTAINER_ID, APP_ID, …) win.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Memory the container holds, in MB (its memory limit, where the agent
    /// has cgroups).
    pub memory_mb: u64,
    /// Vcores the container holds (its CPU weight, where the agent has
    /// cgroups).
    pub vcores: u32,
    /// GPUs the container holds (0 when absent).
    #[serde(default)]
    pub gpus: u32,
    /// Set for a container a YARN client described (a ContainerLaunchContext):
    /// the agent localizes its resources, writes its tokens and runs
    /// `command` (its Shell line) as YARN's launch script does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub yarn: Option<YarnLaunch>,
    /// Set for a container its YARN application master starts (over the
    /// agent's ContainerManagementProtocol): the application attempt
    /// (`appattempt_…`) it is held for. The agent holds its room, reports
    /// it running, and starts it with the launch context the master sends;
    /// `command` is not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_for: Option<String>,
    /// An opportunistic container (YARN's ExecutionType OPPORTUNISTIC):
    /// the agent queues it, and starts it when what it runs leaves room
    /// for it within the resources it declared (reporting it `queued`
    /// until then). A guaranteed one (the default) starts at once.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub opportunistic: bool,
}

/// What a YARN ContainerLaunchContext adds to a launch: the files it needs
/// and the credentials it carries. Its commands are the order's Shell line
/// and its environment the order's `env`, both unexpanded (YARN's `{{X}}`,
/// `<CPS>` and `<LOG_DIR>` are expanded on the node).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct YarnLaunch {
    /// Files and archives to place in the container's directory, under
    /// their keys.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub local_resources: Vec<LocalResource>,
    /// The container's credentials in Hadoop's token-storage form (HDTS),
    /// hex-encoded, written to `container_tokens`
    /// (HADOOP_TOKEN_FILE_LOCATION).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tokens_hex: String,
    /// Whether it is the app's application master (which YARN gives
    /// APPLICATION_WEB_PROXY_BASE and APP_SUBMIT_TIME_ENV).
    #[serde(default)]
    pub application_master: bool,
    /// When the app was submitted, in ms since the epoch (filled in with
    /// the launch order).
    #[serde(default)]
    pub submit_time_ms: u64,
    /// For an application master: the password of its AMRMToken (hex),
    /// for the attempt its container id names; the agent adds the token to
    /// its credentials (filled in with the launch order).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub amrm_password_hex: String,
    /// The node's ContainerManagementProtocol address (`host:port`) and
    /// web port, for NM_HOST, NM_PORT and NM_HTTP_PORT (filled in by the
    /// agent).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub node_manager_address: String,
    /// The node's web port, for NM_HTTP_PORT (filled in by the agent).
    #[serde(default)]
    pub node_http_port: u16,
}

/// One of a YARN container's local resources: a file on the node's file
/// system (YARN's `file:` URL), copied or unpacked into the container's
/// directory under `key`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LocalResource {
    /// Where it goes in the container's directory: a relative path of
    /// normal components (e.g. `__spark_conf__`, `__pyfiles__/x.py`).
    pub key: String,
    /// The absolute path of the source file.
    pub path: String,
    /// Copied as it is, or unpacked.
    pub kind: LocalResourceKind,
    /// Its size in bytes, as the client saw it (YARN does not check it;
    /// neither does Weft: the copy is bounded by the container's budget).
    pub size: u64,
    /// Its modification time in ms since the epoch, as the client saw it (a
    /// changed file is refused, as YARN refuses it).
    pub timestamp_ms: i64,
    /// For a PATTERN resource: the regular expression its jar's entries to
    /// unpack must match whole (YARN's; `.*` when none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
}

/// YARN's LocalResourceType, as far as Weft localizes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LocalResourceKind {
    /// Copied as it is.
    File,
    /// Unpacked into a directory by its extension (`.zip`, `.jar`, `.tar`,
    /// `.tar.gz`, `.tgz`); anything else copied as it is.
    Archive,
    /// A jar's entries matching its pattern unpacked into a directory, the
    /// jar itself kept in it under the directory's name (YARN's PATTERN);
    /// other archives unpacked whole and other files copied, as YARN does.
    Pattern,
}

/// The longest PATTERN a local resource may have, in bytes.
pub const MAX_PATTERN_BYTES: usize = 4096;
/// The most PATTERN bytes one launch may have in all.
pub const MAX_LAUNCH_PATTERN_BYTES: usize = 64 << 10;
/// The most memory a PATTERN's compiled form may take: compiling stops
/// there, so a pattern costs little to refuse.
const MAX_PATTERN_PROGRAM_BYTES: usize = 256 << 10;

/// The most local resources one container may have.
pub const MAX_LOCAL_RESOURCES: usize = 1000;
/// The longest key or source path of a local resource, in bytes.
pub const MAX_LOCAL_RESOURCE_PATH_BYTES: usize = 4096;
/// The most credential bytes a container may carry.
pub const MAX_TOKENS_BYTES: usize = 1 << 20;

impl LaunchOrder {
    /// What its command, environment and launch context hold, in bytes
    /// (their JSON is at most six times this, plus its frame).
    pub fn launch_bytes(&self) -> usize {
        launch_bytes(&self.command, &self.env, self.yarn.as_ref())
    }
}

/// The bytes of a launch's command, environment and YARN launch context
/// (see [`crate::limits::MAX_LAUNCH_BYTES`]).
pub fn launch_bytes(
    command: &ContainerCommand,
    env: &BTreeMap<String, String>,
    yarn: Option<&YarnLaunch>,
) -> usize {
    let command = match command {
        ContainerCommand::Argv(argv) => argv.iter().map(|a| a.len() + 1).sum(),
        ContainerCommand::Shell(line) => line.len(),
    };
    let env: usize = env.iter().map(|(k, v)| k.len() + v.len() + 2).sum();
    let yarn = yarn.map_or(0, |yarn| {
        yarn.tokens_hex.len()
            + yarn
                .local_resources
                .iter()
                .map(|r| {
                    r.key.len() + r.path.len() + r.pattern.as_ref().map_or(0, String::len) + 64
                })
                .sum::<usize>()
    });
    command + env + yarn
}

impl YarnLaunch {
    /// Checks what the client sent, naming the field and the limit: the
    /// number of resources, each key a relative path of normal components
    /// that no other key is a prefix of, each source an absolute path, the
    /// tokens' size.
    pub fn check(&self) -> Result<(), String> {
        if self.local_resources.len() > MAX_LOCAL_RESOURCES {
            return Err(format!(
                "local resources: {} of them, at most {MAX_LOCAL_RESOURCES}",
                self.local_resources.len()
            ));
        }
        let patterns: usize = self
            .local_resources
            .iter()
            .filter_map(|r| r.pattern.as_ref().map(String::len))
            .sum();
        if patterns > MAX_LAUNCH_PATTERN_BYTES {
            return Err(format!(
                "local resources: their patterns hold {patterns} bytes, at most {MAX_LAUNCH_PATTERN_BYTES}"
            ));
        }
        let mut keys = std::collections::BTreeSet::new();
        for resource in &self.local_resources {
            resource.check()?;
            if !keys.insert(resource.key.as_str()) {
                return Err(format!(
                    "local resources: key {:?} is given twice",
                    resource.key
                ));
            }
        }
        // A key inside another's directory would be placed through it.
        for key in &keys {
            let mut prefix = String::new();
            for component in key.split('/') {
                if !prefix.is_empty() && keys.contains(prefix.as_str()) {
                    return Err(format!(
                        "local resources: key {key:?} is inside key {prefix:?}"
                    ));
                }
                if !prefix.is_empty() {
                    prefix.push('/');
                }
                prefix.push_str(component);
            }
        }
        if self.tokens_hex.len() > MAX_TOKENS_BYTES * 2 {
            return Err(format!(
                "tokens: {} bytes, at most {MAX_TOKENS_BYTES}",
                self.tokens_hex.len() / 2
            ));
        }
        hex_bytes(&self.tokens_hex).map(|_| ())
    }

    /// The tokens' bytes.
    pub fn tokens(&self) -> Result<Vec<u8>, String> {
        hex_bytes(&self.tokens_hex)
    }
}

fn hex_bytes(text: &str) -> Result<Vec<u8>, String> {
    hex::decode(text).map_err(|e| format!("tokens: not hex: {e}"))
}

impl LocalResource {
    /// Its PATTERN as a matcher of whole entry names (`.*` when none).
    /// Classes are ASCII, as Java's are by default (`\w` is
    /// `[A-Za-z0-9_]`), which also keeps compiling cheap. Compiling is
    /// work: the event loop never does it (the RPC edge checks a
    /// submission's patterns, the agent compiles them to unpack).
    pub fn unpack_pattern(&self) -> Result<regex::bytes::Regex, String> {
        let pattern = self.pattern.as_deref().unwrap_or(".*");
        // Java's Matcher.matches(): the whole name.
        regex::bytes::RegexBuilder::new(&format!("^(?:{pattern})$"))
            .unicode(false)
            .size_limit(MAX_PATTERN_PROGRAM_BYTES)
            .build()
            .map_err(|e| {
                format!(
                    "local resource {:?}: its pattern is not one Weft takes: {e}",
                    self.key
                )
            })
    }

    /// Checks its key and path (see [`YarnLaunch::check`]).
    pub fn check(&self) -> Result<(), String> {
        let key = &self.key;
        let normal = |c: &str| !c.is_empty() && c != "." && c != "..";
        if key.is_empty()
            || key.len() > MAX_LOCAL_RESOURCE_PATH_BYTES
            || key.starts_with('/')
            || key.contains('\0')
            || !key.split('/').all(normal)
        {
            return Err(format!(
                "local resource key {:?} is not a relative path of 1 to {MAX_LOCAL_RESOURCE_PATH_BYTES} bytes without '.', '..' or empty components",
                key.chars().take(64).collect::<String>()
            ));
        }
        // YARN's own names in the container's directory are not a
        // resource's to take.
        let first = key.split('/').next().unwrap_or_default();
        // What the launch itself writes there (agent/yarn_launch.rs).
        if [
            "container_tokens",
            "launch_container.sh",
            "tmp",
            ".weft-launch.json",
        ]
        .contains(&first)
        {
            return Err(format!("local resource key {key:?} is reserved"));
        }
        if !self.path.starts_with('/')
            || self.path.len() > MAX_LOCAL_RESOURCE_PATH_BYTES
            || self.path.contains('\0')
        {
            return Err(format!(
                "local resource {key:?}: its path must be absolute, at most {MAX_LOCAL_RESOURCE_PATH_BYTES} bytes"
            ));
        }
        match &self.pattern {
            Some(_) if self.kind != LocalResourceKind::Pattern => {
                return Err(format!(
                    "local resource {key:?}: only a PATTERN resource has a pattern"
                ));
            }
            Some(pattern)
                if pattern.len() > MAX_PATTERN_BYTES || pattern.chars().any(char::is_control) =>
            {
                return Err(format!(
                    "local resource {key:?}: its pattern must be at most {MAX_PATTERN_BYTES} bytes without control characters"
                ));
            }
            _ => {}
        }
        Ok(())
    }
}

/// YARN's ContainerExitStatus values Weft uses (a process's own exit code
/// is reported as it is, ≥ 0).
pub mod exit_status {
    /// The container's node was lost, or it was released.
    pub const ABORTED: i32 = -100;
    /// Taken back by reclaim.
    pub const PREEMPTED: i32 = -102;
    /// Killed for using more virtual memory than allowed.
    pub const KILLED_EXCEEDED_VMEM: i32 = -103;
    /// Killed by the kernel for using more memory than it asked for.
    pub const KILLED_EXCEEDED_PMEM: i32 = -104;
    /// Killed on request (its app was killed).
    pub const KILLED_BY_APPMASTER: i32 = -105;
    /// Killed by the resource manager (e.g. the node does not run it).
    pub const KILLED_BY_RESOURCEMANAGER: i32 = -106;
    /// Killed by its agent for logs beyond the container log monitor's
    /// limit (`yarn.nodemanager.container-log-monitor.*`).
    pub const KILLED_FOR_EXCESS_LOGS: i32 = -109;
    /// Could not be launched at all (a refused user, an unwritable dir).
    pub const INVALID: i32 = -1000;

    /// Whether an agent may report `status`: a process's own (0 to 255)
    /// or one of YARN's ContainerExitStatus values.
    pub fn is_valid(status: i32) -> bool {
        (0..=255).contains(&status) || (-109..=-100).contains(&status) || status == INVALID
    }

    /// Whether `status` says the container's own work ended it — its
    /// process exited, it outgrew its memory, its app was killed or
    /// failed — rather than the system (a lost or re-registered node,
    /// preemption, a launch refused, a stale container killed).
    pub fn ended_by_its_work(status: i32) -> bool {
        status >= 0
            || matches!(
                status,
                KILLED_EXCEEDED_VMEM
                    | KILLED_EXCEEDED_PMEM
                    | KILLED_BY_APPMASTER
                    | KILLED_FOR_EXCESS_LOGS
            )
    }
}

/// A container that ended on an agent, reported in every heartbeat until
/// the server acknowledges it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ContainerEnd {
    /// The id of the container that ended.
    pub container_id: String,
    /// The process's exit code (≥ 0, 128 + signal when a signal ended
    /// it), or one of [`exit_status`].
    pub exit_status: i32,
    /// Why it ended, for people: the stderr tail on failure, the signal,
    /// "killed for exceeding its memory limit of … MB", ….
    #[serde(default)]
    pub diagnostics: String,
    /// When it ended, by the agent's clock (ms since the epoch).
    pub finished_ms: u64,
    /// When its process started, by the agent's clock; none if it never
    /// ran (it could not be launched). A container that ended before any
    /// heartbeat listed it running is charged from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_ms: Option<u64>,
}

/// A node's registration: who it is and what it offers; an agent also
/// says what it runs (after a restart), how it isolates containers and
/// where it serves their logs.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterNode {
    /// Unique per node, e.g. `host:port` as YARN's NodeId; at most 256 bytes.
    #[schema(min_length = 1, max_length = 256, pattern = r"\S")]
    pub node_id: String,
    /// 1 MB to 1 PiB.
    #[schema(minimum = 1, maximum = 1_073_741_824_u64)]
    pub memory_mb: u64,
    /// 1 to 4096.
    #[schema(minimum = 1, maximum = 4096)]
    pub vcores: u32,
    /// 0 to 1024.
    #[serde(default)]
    #[schema(minimum = 0, maximum = 1024)]
    pub gpus: u32,
    /// The containers the agent runs now (at most 100,000): given, a known
    /// node keeps them (work-preserving); absent, a known node's
    /// containers are lost.
    #[serde(default)]
    #[schema(max_items = 100_000)]
    pub running: Option<Vec<String>>,
    /// How the agent isolates containers (at most 256 bytes).
    #[serde(default)]
    #[schema(max_length = 256)]
    pub isolation: Option<String>,
    /// Where the agent serves container logs: `http://host:port`.
    #[serde(default)]
    #[schema(max_length = 256)]
    pub http_address: Option<String>,
    /// The bearer secret the agent wants for its logs (at most 256 bytes).
    #[serde(default)]
    #[schema(max_length = 256)]
    pub logs_secret: Option<String>,
    /// Its rack (YARN's network location): `/` then at most 8 levels of
    /// `[A-Za-z0-9._-]`, at most 256 bytes; [`DEFAULT_RACK`] when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 256)]
    pub rack: Option<String>,
    /// Its attributes (YARN's node attributes), key to value, at most 64:
    /// a key `name` or `nm.yarn.io/name` (YARN's NodeManager prefix, which a
    /// name without one is given; `rm.yarn.io` is the resource manager's
    /// and refused), a value empty or one word (`[A-Za-z0-9._-]`, each
    /// starting with a letter or digit), each at most 255 bytes with the
    /// prefix; e.g. `gpu-model` = `a100`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: BTreeMap<String, String>,
    /// Its node label (YARN's partition, as a NodeManager reports it with
    /// distributed labels): at most one, a label the cluster has; none for
    /// the default partition. An administrator's replace-labels overrides it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(max_items = 1)]
    pub labels: Vec<String>,
    /// Where the agent serves YARN's ContainerManagementProtocol:
    /// `host:port` (YARN's NodeId), at most 256 bytes; none when it does
    /// not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 256)]
    pub nm_address: Option<String>,
    /// What its health checks found at start; none for a healthy node (or
    /// an agent that does not check).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<NodeHealth>,
}

/// The rack of a node that names none (YARN's `/default-rack`).
pub const DEFAULT_RACK: &str = "/default-rack";

/// What a node's health checks found (YARN's NodeHealthStatus): a node
/// that is not healthy gets no new containers, and those it runs go on.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeHealth {
    /// Whether every check passed.
    pub healthy: bool,
    /// What failed (YARN's health report), at most 2,048 bytes; "" when
    /// healthy.
    #[serde(default)]
    #[schema(max_length = 2048)]
    pub report: String,
}

/// A node's heartbeat: what ended (and, from an agent, what runs and the
/// number of the last answer it got).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Heartbeat {
    /// Containers that ended with status 0 since the last heartbeat (at
    /// most 100,000); ids not running on the node are ignored.
    #[serde(default)]
    #[schema(max_items = 100_000)]
    pub finished: Vec<String>,
    /// Containers that ended, with how (at most 100,000), resent until
    /// acknowledged.
    #[serde(default)]
    #[schema(max_items = 100_000)]
    pub ended: Vec<ContainerEnd>,
    /// Every container the agent runs now (at most 100,000).
    #[serde(default)]
    #[schema(max_items = 100_000)]
    pub running: Option<Vec<String>>,
    /// Opportunistic containers it holds in its queue, not yet started (at
    /// most 100,000): their launch orders are not repeated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(max_items = 100_000)]
    pub queued: Vec<String>,
    /// The `response_id` of the last answer received (0 after registering):
    /// the same heartbeat sent twice gets the same answer.
    #[serde(default)]
    pub response_id: Option<u64>,
    /// What its health checks found; none: as the heartbeat before said
    /// (healthy, for an agent that does not check).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<NodeHealth>,
}

/// What a registration answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RegisteredNode {
    /// The node id registered, as the request gave it.
    #[serde(default)]
    #[schema(required = true)]
    pub node_id: String,
    /// How often the node should heartbeat.
    pub heartbeat_interval_ms: u64,
    /// Containers the node runs that it should not: kill them.
    #[serde(default)]
    #[schema(required = true)]
    pub kill: Vec<KillOrder>,
    /// The resource manager's epoch: orders of an older one are ignored
    /// (0 from a server that does not say).
    #[serde(default)]
    #[schema(required = true)]
    pub epoch: u64,
    /// The node's key for the tokens YARN's application masters bring it
    /// (NMTokens, container tokens), hex; empty from a server that gives
    /// none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub yarn_token_key: String,
    /// How long the node may be silent before the server takes it for
    /// lost, in ms (`yarn.nm.liveness-monitor.expiry-interval-ms`); 0 from
    /// a server that does not say. An agent out of touch for half of it
    /// starts no waiting container.
    #[serde(default)]
    pub expiry_interval_ms: u64,
}

/// Whether the agent goes on or must register again (YARN's NodeAction).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum NodeAction {
    /// Carry out the answer's orders and heartbeat on.
    Normal,
    /// The heartbeat's number is off: register again, listing what runs.
    Resync,
}

/// An order to kill a container, and the exit status to report for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct KillOrder {
    /// The container to kill.
    pub container_id: String,
    /// The status its end is reported with, one of [`exit_status`]: e.g.
    /// KILLED_BY_APPMASTER (−105) for a killed app's container,
    /// KILLED_BY_RESOURCEMANAGER (−106) for one the node should not run.
    pub exit_status: i32,
}

/// A heartbeat's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct NodeOrders {
    /// This answer's number: the next heartbeat sends it back.
    pub response_id: u64,
    /// Go on, or register again ([`NodeAction::Resync`]).
    pub action: NodeAction,
    /// Containers to launch (again in every answer until reported running).
    #[serde(rename = "allocations")]
    pub launch: Vec<LaunchOrder>,
    /// Containers to kill (again until no longer reported running).
    pub kill: Vec<KillOrder>,
    /// Reported ends taken: the agent stops resending them.
    pub acknowledged: Vec<String>,
    /// How many reported ends were of containers running on the node.
    pub finished_accepted: usize,
    /// The epoch of the resource manager that answered (the fencing token):
    /// an agent ignores orders from an epoch older than one it has seen, so
    /// a former active that lost its lease cannot order it about.
    #[serde(default)]
    pub epoch: u64,
}

impl NodeOrders {
    /// Nothing to do but register again.
    pub fn resync(response_id: u64, epoch: u64) -> NodeOrders {
        NodeOrders {
            epoch,
            response_id,
            action: NodeAction::Resync,
            launch: Vec::new(),
            kill: Vec::new(),
            acknowledged: Vec::new(),
            finished_accepted: 0,
        }
    }
}

/// How much sooner than the interval an agent may send its next heartbeat,
/// in percent.
pub const HEARTBEAT_JITTER_PERCENT: u32 = 10;

/// How long an agent waits before it tries a server that gave no answer
/// (or refused the heartbeat) again, less the spread of
/// [`heartbeat_wait`].
pub const HEARTBEAT_RETRY: Duration = Duration::from_millis(500);

/// How long an agent waits after an answer before its next heartbeat: the
/// `interval` the server gives, less up to [`HEARTBEAT_JITTER_PERCENT`] of
/// it, as far into that range as `draw` (a random number) says. Without
/// it, agents a server answers together — after a pause, a long round or
/// a failover — send together again an interval later, and every interval
/// after, for good. Never later than the interval, so a node is never
/// late by it for the server's expiry; on average 5 % sooner.
pub fn heartbeat_wait(interval: Duration, draw: u64) -> Duration {
    // At most u64::MAX ns (584 years), so the products below fit in u128.
    let nanos = interval.as_nanos().min(u128::from(u64::MAX));
    let range = nanos * u128::from(HEARTBEAT_JITTER_PERCENT) / 100;
    // `draw` as a fraction of 2^64 of the range.
    let sooner = (range * u128::from(draw)) >> 64;
    Duration::from_nanos(u64::try_from(nanos - sooner).unwrap_or(u64::MAX))
}

/// How long an agent waits before its next heartbeat after an answer that
/// took longer than the `interval`, or the first answer after failed tries
/// — when many agents were likely answered at once, by a server that
/// paused or came back: anywhere in the interval, as far as `draw` says,
/// so that such a crowd spreads over the interval in one heartbeat.
pub fn heartbeat_wait_after_a_stall(interval: Duration, draw: u64) -> Duration {
    let nanos = interval.as_nanos().min(u128::from(u64::MAX));
    let wait = (nanos * u128::from(draw)) >> 64;
    Duration::from_nanos(u64::try_from(wait).unwrap_or(u64::MAX))
}

/// The longest an agent's wait for orders is held open, in ms
/// (`GET /ws/v1/cluster/nodes/{id}/orders-waiting?wait_ms=`).
pub const MAX_ORDERS_WAIT_MS: u64 = 30_000;

/// The answer to an agent's wait for orders: whether containers were
/// placed on its node since its last answer (then it heartbeats at once
/// for them), or the wait ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct OrdersWaiting {
    /// Placements wait for the node's next heartbeat.
    pub orders_waiting: bool,
}

/// Why a request to the tracker got no answer to act on.
#[derive(Debug, thiserror::Error)]
pub enum TrackerError {
    /// The server does not know the node (lost, or restarted): register again.
    #[error("the server does not know this node: {0}")]
    UnknownNode(String),
    /// The server could not be reached or failed; try again later.
    #[error("{0}")]
    Unavailable(String),
    /// A server answered from an epoch older than one the agent has seen
    /// (a former active): its answer was ignored; try the next server.
    #[error("{0}")]
    Stale(String),
    /// The server refused the request (rights, bounds): retrying the same
    /// will not help.
    #[error("the server refused: {0}")]
    Refused(String),
}

/// How an agent reaches the resource manager (YARN's ResourceTracker): over
/// HTTP for `weft agent` (`agent/tracker.rs`), in process for `weft serve`'s
/// local agent (`rm/local_tracker.rs`).
pub trait ResourceTracker: Send {
    /// Registers the node (again, after a restart or a resync) and gives back
    /// the server's answer.
    fn register(&mut self, request: &RegisterNode) -> Result<RegisteredNode, TrackerError>;
    /// Sends the heartbeat of the node `node` and gives back its orders.
    fn heartbeat(&mut self, node: &str, beat: &Heartbeat) -> Result<NodeOrders, TrackerError>;

    /// Which server gave the last answer, when there is a choice of
    /// servers (none in process).
    fn server(&self) -> Option<String> {
        None
    }

    /// Moves on from the server that gave the last answer (a former
    /// active's, of an old epoch): the next request goes to the next one.
    fn pass_over(&mut self) {}

    /// Whether the server placed containers on this node since the last
    /// call, so the next heartbeat should not wait for its interval (in
    /// process a flag the server sets; over HTTP a wait kept open beside
    /// the heartbeats).
    fn orders_waiting(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heartbeat_waits_spread_over_the_tenth_of_the_interval_before_it() {
        let second = Duration::from_secs(1);
        assert_eq!(heartbeat_wait(second, 0), second);
        assert_eq!(heartbeat_wait(second, 1 << 63), Duration::from_millis(950));
        assert!(heartbeat_wait(second, u64::MAX) > Duration::from_millis(900));
        assert!(heartbeat_wait(second, u64::MAX) < Duration::from_millis(901));
        // Draws spread evenly: a tenth of them in each tenth of the range.
        let mut tenths = [0u32; 10];
        let mut state = 7u64;
        for _ in 0..10_000 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let sooner = 1_000_000 - heartbeat_wait(second, state).as_micros();
            tenths[((sooner / 10_000) as usize).min(9)] += 1;
        }
        assert!(
            tenths.iter().all(|&n| (800..1200).contains(&n)),
            "{tenths:?}"
        );
        // After a stall, anywhere in the interval.
        assert_eq!(heartbeat_wait_after_a_stall(second, 0), Duration::ZERO);
        assert_eq!(
            heartbeat_wait_after_a_stall(second, 1 << 63),
            Duration::from_millis(500)
        );
        assert!(heartbeat_wait_after_a_stall(second, u64::MAX) < second);
        // No overflow at the extremes.
        assert_eq!(
            heartbeat_wait_after_a_stall(Duration::MAX, u64::MAX),
            Duration::from_nanos(u64::MAX - 1)
        );
        assert_eq!(heartbeat_wait(Duration::ZERO, u64::MAX), Duration::ZERO);
        assert!(heartbeat_wait(Duration::MAX, 0) == Duration::from_nanos(u64::MAX));
    }
}
