//! The node protocol: everything the resource manager and a node agent say to
//! each other (YARN's ResourceTracker records) — a registration and its
//! answer, a heartbeat and its orders (launches, kills, acknowledged ends),
//! the container ends an agent reports — and the ResourceTracker an agent
//! reaches the server through. Shared by the server (`rm/`, `api/`) and the
//! agent (`agent/`), which import nothing else of each other.

use std::collections::BTreeMap;

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
                KILLED_EXCEEDED_VMEM | KILLED_EXCEEDED_PMEM | KILLED_BY_APPMASTER
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
}

/// The rack of a node that names none (YARN's `/default-rack`).
pub const DEFAULT_RACK: &str = "/default-rack";

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
    /// The `response_id` of the last answer received (0 after registering):
    /// the same heartbeat sent twice gets the same answer.
    #[serde(default)]
    pub response_id: Option<u64>,
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
