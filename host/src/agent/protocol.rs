//! What the resource manager and a node agent say to each other: the launch
//! orders of a heartbeat's answer and the container ends the agent reports.
//! Shared by the server (`rm/`, `api/`) and the agent (`agent/`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The command a container runs: an argv (the first word looked up on
/// PATH) or one line for `/bin/sh -c`, as YARN's distributed shell takes
/// `shell_command`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ContainerCommand {
    Argv(Vec<String>),
    Shell(String),
}

/// An order to launch one container, as the heartbeat's answer carries it
/// (again in every answer until the agent reports the container running
/// or ended, so a lost answer loses nothing; launching is idempotent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LaunchOrder {
    pub container_id: String,
    pub app_id: String,
    /// The app's user (WEFT_USER; the Unix user with run-as = submitter).
    pub user: String,
    pub command: ContainerCommand,
    /// The ask's variables; the agent's own (CONTAINER_ID, APP_ID, …) win.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub memory_mb: u64,
    pub vcores: u32,
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
