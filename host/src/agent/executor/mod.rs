//! The node agent's container executor: runs each launch order as a real
//! process, kills it on request, and says how it ended — YARN's
//! DefaultContainerExecutor and ContainerLaunch, with cgroups when the
//! machine offers them (see [`super::cgroups`]).
//!
//! A container is its command under a monitor ([`super::monitor`]) in a
//! session of its own (pid = pgid = sid, the monitor's pid), stdin from
//! /dev/null, stdout and stderr appended to its log files, in its own
//! cgroup when cgroups are usable. The monitor waits for the command, then
//! records its exit status in a file atomically, so an agent that was down
//! when the container ended still learns the status.
//!
//! Files, all per container id:
//! - `work_dir/.weft/containers/<cid>/`: the agent's private state —
//!   `record`, one JSON line appended per fact: the launch order, the pid
//!   (pid, /proc start time, start wall time), a kill requested (and with
//!   which status), the end as reported; it becomes `acknowledged` once
//!   the server has the end (older agents kept `order.json`, `pid`,
//!   `kill` and `end.json`, still read); and `exitcode`, written by the
//!   monitor through a descriptor the agent opened (nobody else can write
//!   the dir, so no user can make the agent signal someone else's pid);
//! - `work_dir/apps/<app>/<cid>/`: the container's working directory;
//! - `log_dir/<app>/<cid>/{stdout,stderr}`: its output.
//!
//! When a container's main process ends, whatever it left behind in its
//! process group or cgroup is killed: a container's resources end with it.
//!
//! Nothing here blocks for long: [`Executor::poll`] reaps and escalates
//! kills without sleeping. Nothing from outside (orders, files in the work
//! dir, /proc) can make it panic: a bad order becomes an ended container
//! with a diagnostic, a bad file a log line.
//!
//! Restart: an agent killed with -9 and started again on the same work dir
//! finds its containers in `.weft/containers` ([`Executor::open`]): ended
//! ones are reported again, live ones (same pid *and* /proc start time, so
//! a recycled pid is never mistaken for one) are adopted and watched.
//!
//! This file holds the executor's types and its public operations; the
//! rest, one job each: `checks.rs` (a launch order's bounds),
//! `launch.rs` (directories, identity, environment, mounts, spawning),
//! `lifecycle.rs` (the container state machine: kill, reap, conclude),
//! `records.rs` (the on-disk records and recovery), `process.rs` (/proc
//! and waitpid).

use std::collections::BTreeMap;
use std::ffi::{CString, OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid, waitpid};
use nix::unistd::{Gid, Pid, Uid, User};
use serde::{Deserialize, Serialize};

use super::cgroups::{Cgroups, ContainerCgroup};
use super::removal::Remover;
use super::spawner::Spawner;
use super::{monitor, syscall_filter, untrusted};
use crate::protocol::node::{ContainerCommand, ContainerEnd, LaunchOrder, exit_status};

mod checks;
mod launch;
mod lifecycle;
mod process;
mod records;
#[cfg(test)]
mod tests;

use checks::*;
pub use launch::switch_identity;
use launch::*;
use process::*;
pub(crate) use records::now_ms;
use records::*;

/// `yarn.nodemanager.sleep-delay-before-sigkill.ms`.
pub const DEFAULT_KILL_GRACE: Duration = Duration::from_millis(250);
/// `yarn.nodemanager.container.stderr.tail.bytes`.
pub const DEFAULT_STDERR_TAIL_BYTES: usize = 4096;
/// `yarn.nodemanager.container-executor.exit-code-file.timeout-ms`: how long
/// an adopted container's exit code may take to appear after its process.
const EXIT_CODE_FILE_TIMEOUT: Duration = Duration::from_secs(2);

/// The longest one [`Executor::tidy`] spends removing cgroups.
const TIDY_BUDGET: Duration = Duration::from_millis(5);

/// How long a cgroup whose removal failed waits before it is tried again
/// (a stuck one is not tried in every turn of the loop).
const CGROUP_RETRY: Duration = Duration::from_secs(2);

/// How the executor is set up (`weft agent`'s flags).
#[derive(Debug, Clone)]
pub struct ExecutorConfig {
    /// Containers' working dirs and the agent's private state.
    pub work_dir: PathBuf,
    /// Containers' stdout and stderr.
    pub log_dir: PathBuf,
    /// Who containers run as (`weft.agent.run-as`).
    pub run_as: RunAs,
    /// SIGTERM → SIGKILL delay ([`DEFAULT_KILL_GRACE`]).
    pub kill_grace: Duration,
    /// How much of stderr a failed container's diagnostics carry
    /// ([`DEFAULT_STDERR_TAIL_BYTES`]).
    pub stderr_tail_bytes: usize,
    /// The agent's parent cgroup directory name, e.g. "weft-agent-node1".
    pub cgroup_name: String,
    /// Processes and threads one container may have (0: no limit), where
    /// the pids controller is usable.
    pub pids_limit: u64,
    /// Whether containers run under the system call filter
    /// (`weft.agent.syscall-filter`), where the agent can install it.
    pub syscall_filter: bool,
    /// Whether each container gets a network namespace of its own with
    /// only a loopback (`weft.agent.container-network = none`); the
    /// executor refuses to open where it cannot make one.
    pub own_network: bool,
    /// The container log monitor's limit: bytes a container's log dir may
    /// take on disk before it is killed (KILLED_FOR_EXCESS_LOGS); 0: none.
    pub log_limit_bytes: u64,
    /// How often the container log monitor measures.
    pub log_check_interval: Duration,
    /// The node's declared memory, in MB (0: no cap): what all its
    /// containers together may hold, their parent cgroup's limit. Memory a
    /// container leaves behind (a tmpfs or memfd another process keeps
    /// open) stays charged there, so it can never take more of the host.
    pub memory_mb: u64,
}

/// Which Unix user a container runs as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunAs {
    /// The agent's own user (YARN's DefaultContainerExecutor).
    Agent,
    /// The order's user, as container-executor.cfg's `banned.users` and
    /// `min.user.id` allow (the agent must be root).
    Submitter {
        /// Users no container may run as (`weft.agent.banned-users`).
        banned_users: Vec<String>,
        /// The lowest uid a container may run as (`weft.agent.min-user-id`).
        min_user_id: u32,
    },
    /// One unprivileged user for every container, whoever submitted it
    /// (the agent must be root): YARN's non-secure `local-user`.
    LocalUser {
        /// The user every container runs as
        /// (`yarn.nodemanager.linux-container-executor.nonsecure-mode.local-user`).
        user: String,
        /// Users no container may run as (`weft.agent.banned-users`); checked
        /// against `user` at start.
        banned_users: Vec<String>,
        /// The lowest uid a container may run as (`weft.agent.min-user-id`).
        min_user_id: u32,
    },
}

pub use super::logs::LogStream;

/// A container running now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningContainer {
    /// The container's id, as its launch order gave it.
    pub container_id: String,
    /// Its process (and process group, and session) id.
    pub pid: u32,
    /// When it started, ms since the epoch.
    pub started_ms: u64,
}

/// Why the executor cannot start.
#[derive(Debug, thiserror::Error)]
pub enum ExecutorError {
    /// The OS's reason is the source (anyhow prints it after the message).
    #[error("the {role} {path} is not usable")]
    Dir {
        /// Which directory it is, e.g. "work dir" or "log dir".
        role: &'static str,
        /// Where it is.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// Containers were to have no network, and cannot have one of their own.
    #[error(
        "weft.agent.container-network = none needs a network namespace for each container, which this agent cannot make: {reason}"
    )]
    NoOwnNetwork {
        /// Why not.
        reason: String,
    },
}

/// The most entries the container log monitor counts in one container's
/// log dir: more is killed as too many (a log dir holds a few files).
pub const MAX_LOG_ENTRIES: usize = 1000;

/// Runs containers on this node; see the module docs.
pub struct Executor {
    settings: Settings,
    containers: BTreeMap<String, Tracked>,
    /// Ends detected and not yet returned by [`Executor::poll`].
    unreported: Vec<ContainerEnd>,
    /// Cgroups of ended containers that still held processes when they
    /// ended; emptied and removed by later polls.
    cgroups_to_remove: Vec<ContainerCgroup>,
    /// Cgroups whose removal failed (a process stuck in the kernel, a dir a
    /// container made inside its own), each with when to try it again.
    cgroups_to_retry: Vec<(ContainerCgroup, Instant)>,
    /// Dirs of old containers being removed.
    remover: Remover,
    /// When the container log monitor measures next.
    next_log_check: Instant,
    /// The helper process monitors are forked from, if started
    /// ([`Executor::fork_from_helper`]); else the agent forks them.
    spawner: Option<Spawner>,
}

/// The file in a container's record saying its end was acknowledged, and
/// when (its retention counts from then).
const ACKNOWLEDGED: &str = "acknowledged";

/// Records in a container's private `dir` that its end was acknowledged,
/// and when (the file's time): its record ([`records::RECORD`], or an
/// older agent's `end.json`) becomes [`ACKNOWLEDGED`] and is stamped now.
/// A rename, not a new file: allocating inodes is most of what a short
/// container costs the agent on ext4 (BENCHMARKS.md). Without either (a
/// write failed) a new file says it.
fn mark_acknowledged(dir: &Path) -> io::Result<()> {
    let marker = dir.join(ACKNOWLEDGED);
    for record in [records::RECORD, "end.json"] {
        match fs::rename(dir.join(record), &marker) {
            Ok(()) => {
                return OpenOptions::new()
                    .write(true)
                    .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK).bits())
                    .open(&marker)?
                    .set_modified(SystemTime::now());
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(error),
        }
    }
    write_json_atomically(&marker, &now_ms())
}

/// What does not change after [`Executor::open`].
struct Settings {
    config: ExecutorConfig,
    layout: Layout,
    cgroups: Result<Cgroups, String>,
    /// Whether containers get their own /dev/shm and /tmp (see
    /// [`monitor::PrivateMounts`]): if so, the agent's dirs beneath either
    /// mount point, to be bound back in each container's view; if not, why.
    private_mounts: Result<Vec<PathBuf>, String>,
    /// Whether containers run under [`crate::agent::syscall_filter`]; if
    /// not, why.
    syscall_filter: Result<(), String>,
    /// USER and LOGNAME for containers run as the agent's user.
    agent_user: String,
}

enum Tracked {
    Running(Box<ContainerProcess>),
    /// Ended and not yet forgotten: its end has been (or will be) reported.
    Ended,
}

/// A running container's process, spawned by this agent or adopted from
/// an earlier one.
struct ContainerProcess {
    container_id: String,
    app_id: String,
    /// What its launch order gave it (its memory is its limit).
    resources: crate::resources::Resources,
    pid: u32,
    /// /proc/<pid>/stat field 22, which tells this process from a later one
    /// with a recycled pid.
    start_ticks: u64,
    started_ms: u64,
    /// Our child (its monitor was forked by this agent), so reaped with
    /// waitpid; `false` when adopted, so watched through /proc.
    ours: bool,
    cgroup: Option<ContainerCgroup>,
    kill: Option<KillState>,
    /// When its main process was first seen gone.
    ended_at: Option<Instant>,
    /// A pidfd of our monitor, readable once it has ended: the agent's
    /// loop sleeps on these, so an end is seen at once, not at its next
    /// look. None when adopted, or when the kernel has no pidfds.
    end_signal: Option<std::os::fd::OwnedFd>,
    /// Its monitor's set-up, until it has said how it went (none when
    /// adopted).
    setting_up: Option<monitor::SettingUp>,
    /// Why its monitor could not start the command: its end says so.
    set_up_failure: Option<String>,
}

struct KillState {
    record: KillRecord,
    requested_at: Instant,
    /// SIGKILL sent (the grace is over).
    escalated: bool,
    /// The main process ended before the grace was over.
    ended_within_grace: bool,
    /// The TERM waits for the monitor's set-up to end (until then there is
    /// no command to send it to); sent by a later poll.
    term_pending: bool,
}

/// `kill` file: a kill was requested, so the end reports this status even
/// across an agent restart.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct KillRecord {
    exit_status: i32,
    /// SIGKILL right away (the agent is stopping), no grace.
    immediate: bool,
}

/// `pid` file.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct PidRecord {
    pid: u32,
    start_ticks: u64,
    started_ms: u64,
}

/// Where a container's files are.
struct Layout {
    work_dir: PathBuf,
    log_dir: PathBuf,
    /// `work_dir/.weft/containers`.
    private_root: PathBuf,
}

impl Layout {
    fn private_dir(&self, container_id: &str) -> PathBuf {
        self.private_root.join(container_id)
    }
    /// Reads the agent's record `name` of a container (see [`read_state`]).
    fn read_state<T: for<'de> Deserialize<'de>>(
        &self,
        container_id: &str,
        name: &str,
    ) -> Option<T> {
        read_state(&self.private_root, &Path::new(container_id).join(name))
    }
    /// The exit code file beneath [`Layout::private_root`]: the agent's,
    /// written by the container's monitor through a descriptor (read as a
    /// tenant's file all the same: under run-as = agent a container is the
    /// agent's user).
    fn exit_code_file(container_id: &str) -> PathBuf {
        Path::new(container_id).join("exitcode")
    }
    fn container_work_dir(&self, app_id: &str, container_id: &str) -> PathBuf {
        self.work_dir.join("apps").join(app_id).join(container_id)
    }
    fn container_log_dir(&self, app_id: &str, container_id: &str) -> PathBuf {
        self.log_dir.join(app_id).join(container_id)
    }
}

/// The names in `dir` (none if it cannot be read).
fn read_dir_names(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The Unix identity a container runs as.
pub struct Identity {
    name: String,
    home: PathBuf,
    /// uid, gid and supplementary groups to switch to; `None`: stay the agent.
    switch_to: Option<(Uid, Gid, Vec<Gid>)>,
}

impl Identity {
    /// The uid it switches to, if it is not the agent's.
    pub fn uid(&self) -> Option<u32> {
        self.switch_to.as_ref().map(|(uid, _, _)| uid.as_raw())
    }
}

/// How a container's main process ended, as far as is known.
#[derive(Debug, Clone, Copy)]
enum Outcome {
    /// An exit code: the exit-code file's, or the wait status's.
    Code(i32),
    /// Ended by a signal before the monitor could record anything.
    Signal(i32),
    /// Not our child and no exit-code file.
    Unknown,
}

impl Executor {
    /// Creates and checks the dirs (a dir that cannot be used is an error
    /// naming it), detects cgroups, and recovers the containers an earlier
    /// agent left on this work dir (see the module docs).
    pub fn open(config: ExecutorConfig) -> Result<Executor, ExecutorError> {
        let work_dir = prepare_dir("work dir", &config.work_dir)?;
        let log_dir = prepare_dir("log dir", &config.log_dir)?;
        let private_root = work_dir.join(".weft").join("containers");
        fs::create_dir_all(&private_root)
            .and_then(|()| {
                // The agent's alone: containers write nothing here (their
                // monitors write exit codes through descriptors).
                fs::set_permissions(work_dir.join(".weft"), fs::Permissions::from_mode(0o700))?;
                fs::set_permissions(&private_root, fs::Permissions::from_mode(0o700))
            })
            .map_err(|source| ExecutorError::Dir {
                role: "state dir",
                path: private_root.clone(),
                source,
            })?;
        if config.run_as != RunAs::Agent {
            warn_unless_traversable(&work_dir);
            warn_unless_traversable(&log_dir);
        }
        let mut cgroups = Cgroups::detect(&config.cgroup_name);
        let private_mounts = plan_private_mounts(&[&work_dir, &log_dir], config.own_network);
        match &private_mounts {
            // Asked for no network: never run containers with the node's.
            Err(reason) if config.own_network => {
                return Err(ExecutorError::NoOwnNetwork {
                    reason: reason.clone(),
                });
            }
            Err(reason) => {
                tracing::warn!(%reason, "containers share this machine's /dev/shm and /tmp")
            }
            Ok(_) => {}
        }
        match &mut cgroups {
            Ok(cgroups) => {
                tracing::info!(isolation = %cgroups.describe(), "container isolation");
                if let Err(error) = cgroups.limit_all_containers(config.memory_mb) {
                    tracing::warn!(%error, "containers together are not capped at the node's memory");
                }
            }
            Err(reason) => {
                tracing::warn!(%reason, "cgroups unusable; containers run in process groups only")
            }
        }
        let syscall_filter = plan_syscall_filter(config.syscall_filter);
        if let Err(reason) = &syscall_filter {
            tracing::warn!(%reason, "containers run without a system call filter");
        }
        if config.run_as == RunAs::Agent && nix::unistd::geteuid().is_root() {
            tracing::warn!(
                "containers run as root (weft.agent.run-as = agent): no namespace, filter or network setting is a boundary to this host; use local-user or submitter"
            );
        }
        let agent_user = match User::from_uid(Uid::current()) {
            Ok(Some(user)) => user.name,
            _ => Uid::current().to_string(),
        };
        let mut executor = Executor {
            settings: Settings {
                config,
                layout: Layout {
                    work_dir,
                    log_dir,
                    private_root,
                },
                cgroups,
                private_mounts,
                syscall_filter,
                agent_user,
            },
            containers: BTreeMap::new(),
            unreported: Vec::new(),
            cgroups_to_remove: Vec::new(),
            cgroups_to_retry: Vec::new(),
            remover: Remover::default(),
            next_log_check: Instant::now(),
            spawner: None,
        };
        executor.recover()?;
        Ok(executor)
    }

    /// From now on, forks containers' monitors from a small helper process
    /// (see [`super::spawner`]), which makes a launch cheaper the more
    /// memory this process has; if the helper cannot start, says so and
    /// goes on forking them itself.
    pub fn fork_from_helper(&mut self) {
        match Spawner::start() {
            Ok(spawner) => self.spawner = Some(spawner),
            Err(error) => {
                tracing::warn!(%error, "cannot start the monitor spawner; the agent forks containers' monitors itself")
            }
        }
    }

    /// What isolation containers get, for people and the node report.
    pub fn isolation(&self) -> String {
        let processes = match &self.settings.cgroups {
            Ok(cgroups) => cgroups.describe(),
            Err(reason) => format!("process groups only: {reason}"),
        };
        let mounts = match &self.settings.private_mounts {
            Ok(_) => "private /dev/shm and /tmp, own pid and IPC namespaces".to_owned(),
            Err(reason) => format!("/dev/shm and /tmp shared: {reason}"),
        };
        let network = match self.settings.config.own_network {
            true => "network: a loopback of its own",
            false => "network: the node's",
        };
        let calls = match &self.settings.syscall_filter {
            Ok(()) => "system calls filtered (no namespaces, mounts, keyrings, bpf)".to_owned(),
            Err(reason) => format!("no system call filter: {reason}"),
        };
        // Root is the host's own whatever else holds (it owns /proc/sys
        // and the host's files): said early, so a cut never drops it.
        let root =
            match self.settings.config.run_as == RunAs::Agent && nix::unistd::geteuid().is_root() {
                true => "containers run as root (run-as = agent), no boundary to the host; ",
                false => "",
            };
        format!("{processes}; {root}{mounts}; {network}; {calls}")
    }

    /// Whether each container gets its own /dev/shm and /tmp.
    pub fn has_private_mounts(&self) -> bool {
        self.settings.private_mounts.is_ok()
    }

    /// Whether containers get cgroups (memory and CPU limits, kill-all).
    pub fn has_cgroups(&self) -> bool {
        self.settings.cgroups.is_ok()
    }

    /// Launches a container. Idempotent: a container id already known
    /// (running, or ended and not forgotten) is a no-op. A container that
    /// cannot be launched becomes an ended container (INVALID) with a
    /// diagnostic, reported by [`Executor::poll`].
    pub fn launch(&mut self, order: &LaunchOrder) {
        let container_id = &order.container_id;
        if self.containers.contains_key(container_id) {
            return;
        }
        let started = self.settings.start(order, self.spawner.as_mut());
        if self.spawner.as_ref().is_some_and(Spawner::is_broken) {
            tracing::warn!(
                "the monitor spawner stopped answering; the agent forks containers' monitors itself"
            );
            self.spawner = None;
        }
        match started {
            Ok(process) => {
                tracing::info!(container = %container_id, pid = process.pid, "container launched");
                self.containers
                    .insert(container_id.clone(), Tracked::Running(Box::new(process)));
            }
            Err(diagnostics) => {
                tracing::warn!(container = %shorten(container_id), %diagnostics, "container not launched");
                let end = ContainerEnd {
                    container_id: container_id.clone(),
                    exit_status: exit_status::INVALID,
                    diagnostics,
                    finished_ms: now_ms(),
                    started_ms: None,
                };
                self.record_end(end);
            }
        }
    }

    /// SIGTERM to the container's process group now, SIGKILL to the group
    /// and everything in its cgroup once the kill grace has passed (by a
    /// later [`Executor::poll`]). Its end reports `exit_status`. A second
    /// kill keeps the first one's status. Unknown or ended: no-op.
    pub fn kill(&mut self, container_id: &str, exit_status: i32) {
        let Some(Tracked::Running(process)) = self.containers.get_mut(container_id) else {
            return;
        };
        if process.kill.is_some() {
            return;
        }
        let record = KillRecord {
            exit_status,
            immediate: false,
        };
        self.settings.start_kill(process, record, Instant::now());
    }

    /// Reaps, escalates kills past their grace, detects ends; returns the
    /// containers that ended since the last call (each once per agent
    /// process; after a restart, recovered ends are returned again).
    pub fn poll(&mut self) -> Vec<ContainerEnd> {
        let ended = self.poll_ends();
        self.remove_cgroups(None);
        self.remover.poll();
        self.check_log_sizes(Instant::now());
        ended
    }

    /// The container log monitor (YARN's): once an interval, kills every
    /// running container whose log dir takes more than the limit on disk,
    /// or holds more than [`MAX_LOG_ENTRIES`] entries (or dirs nested past
    /// what is walked), with KILLED_FOR_EXCESS_LOGS, so no container fills
    /// the node's disk through its logs. A walk is bounded, so a check
    /// costs at most that many `stat`s a container. (Called by
    /// [`Executor::poll`] and by the agent's loop, which uses the parts of
    /// a poll apart.)
    pub fn check_log_sizes(&mut self, now: Instant) {
        let limit = self.settings.config.log_limit_bytes;
        if limit == 0 || now < self.next_log_check {
            return;
        }
        self.next_log_check = now + self.settings.config.log_check_interval;
        let mut over = Vec::new();
        for (container_id, tracked) in &self.containers {
            let Tracked::Running(process) = tracked else {
                continue;
            };
            // Being killed, or ended and waiting for its exit code.
            if process.kill.is_some() || process.ended_at.is_some() {
                continue;
            }
            let relative = Path::new(&process.app_id).join(&process.container_id);
            match untrusted::disk_usage(&self.settings.layout.log_dir, &relative, MAX_LOG_ENTRIES) {
                Ok(usage) if !usage.complete || usage.bytes > limit => {
                    tracing::warn!(
                        container = %container_id,
                        bytes = usage.bytes,
                        entries = usage.entries,
                        limit,
                        "killing a container for its logs (the container log monitor)"
                    );
                    over.push(container_id.clone());
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(container = %container_id, %error, "cannot measure a container's logs")
                }
            }
        }
        for container_id in over {
            self.kill(&container_id, exit_status::KILLED_FOR_EXCESS_LOGS);
        }
    }

    /// [`Executor::poll`] without its tidying: the ends, found as soon as
    /// possible, for a caller that reports them before it calls
    /// [`Executor::tidy`].
    pub fn poll_ends(&mut self) -> Vec<ContainerEnd> {
        self.advance(Instant::now());
        std::mem::take(&mut self.unreported)
    }

    /// Removes what ended containers leave behind: their cgroups (for at
    /// most [`TIDY_BUDGET`]: three rmdirs a container, and a thousand
    /// ended at once would hold the loop for a sixth of a second), and the
    /// dirs being removed in the background. Whether cgroups are left for
    /// the next call because the budget ran out before trying them (those
    /// that failed are tried again [`CGROUP_RETRY`] later).
    pub fn tidy(&mut self) -> bool {
        let cut_short = self.remove_cgroups(Some(TIDY_BUDGET));
        self.remover.poll();
        cut_short
    }

    /// Sleeps until a running container's main process ends, or for at
    /// most `timeout`; whether it woke because one did. What ends is then
    /// found by [`Executor::poll`]; the containers it cannot wait on this
    /// way (adopted, in a kill's grace, or without a pidfd) are found by the
    /// poll after `timeout`.
    pub fn wait_for_an_end(&self, timeout: Duration) -> bool {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        let mut watched: Vec<PollFd<'_>> = self
            .containers
            .values()
            .filter_map(|tracked| match tracked {
                Tracked::Running(process) if process.ended_at.is_none() => {
                    process.end_signal.as_ref()
                }
                _ => None,
            })
            .map(|fd| PollFd::new(fd, PollFlags::IN))
            .collect();
        if watched.is_empty() {
            std::thread::sleep(timeout);
            return false;
        }
        let until = Timespec::try_from(timeout).unwrap_or(Timespec {
            tv_sec: 1,
            tv_nsec: 0,
        });
        match poll(&mut watched, Some(&until)) {
            Ok(ready) => ready > 0,
            // EINTR, or worse: the loop looks again after the timeout.
            Err(_) => {
                std::thread::sleep(timeout);
                false
            }
        }
    }

    /// Containers whose monitors are still setting up: launched, their
    /// commands not yet started (not in [`Executor::running`]).
    pub fn starting(&self) -> Vec<String> {
        self.containers
            .iter()
            .filter_map(|(id, tracked)| match tracked {
                Tracked::Running(process) if process.setting_up.is_some() => Some(id.clone()),
                _ => None,
            })
            .collect()
    }

    /// Whether it runs, ran or was told to launch container `id` (and has
    /// not forgotten it).
    pub fn knows(&self, id: &str) -> bool {
        self.containers.contains_key(id)
    }

    /// What the containers it runs (or sets up) hold together, as their
    /// launch orders gave it.
    pub fn in_use(&self) -> crate::resources::Resources {
        self.containers
            .values()
            .fold(
                crate::resources::Resources::ZERO,
                |sum, tracked| match tracked {
                    Tracked::Running(process) => sum + process.resources,
                    Tracked::Ended => sum,
                },
            )
    }

    /// Containers running now (their commands started).
    pub fn running(&self) -> Vec<RunningContainer> {
        self.containers
            .values()
            .filter_map(|tracked| match tracked {
                // Not yet: its command has not started.
                Tracked::Running(process) if process.setting_up.is_some() => None,
                Tracked::Running(process) => Some(RunningContainer {
                    container_id: process.container_id.clone(),
                    pid: process.pid,
                    started_ms: process.started_ms,
                }),
                Tracked::Ended => None,
            })
            .collect()
    }

    /// The server acknowledged this container's end: drops its private
    /// state (its logs and work dir stay). A running container is not
    /// forgotten.
    pub fn forget(&mut self, container_id: &str) {
        match self.containers.get(container_id) {
            Some(Tracked::Ended) => {}
            Some(Tracked::Running(_)) => {
                tracing::warn!(container = %container_id, "not forgetting a running container");
                return;
            }
            None => return,
        }
        self.containers.remove(container_id);
        self.unreported
            .retain(|end| end.container_id != container_id);
        if check_id("container id", container_id).is_ok() {
            // The agent's own record of when: the retention of its logs and
            // working dir counts from here (not from their times, which
            // the container can set).
            let dir = self.settings.layout.private_dir(container_id);
            if let Err(error) = mark_acknowledged(&dir) {
                tracing::warn!(dir = %dir.display(), %error, "cannot record that a container's end was acknowledged");
            }
        }
    }

    /// Removes the log and working dirs (and the agent's record) of
    /// containers whose end was acknowledged more than `retain` ago (YARN's
    /// `yarn.nodemanager.log.retain-seconds`), as the agent recorded it;
    /// and log dirs no record speaks for (an older agent's) last written
    /// more than `retain` ago. Trees go in the background
    /// ([`super::removal`]). Returns how many containers' dirs go.
    pub fn sweep(&mut self, retain: Duration) -> usize {
        let Some(cutoff) = SystemTime::now().checked_sub(retain) else {
            return 0;
        };
        let mut removed = 0;
        let layout = &self.settings.layout;
        for container in read_dir_names(&layout.private_root) {
            if self.containers.contains_key(&container)
                || check_id("container id", &container).is_err()
            {
                continue;
            }
            let private_dir = layout.private_dir(&container);
            let acknowledged = fs::symlink_metadata(private_dir.join(ACKNOWLEDGED))
                .and_then(|m| m.modified())
                .ok();
            if acknowledged.is_none_or(|at| at > cutoff) {
                continue;
            }
            let app = Record::read(layout, &container, ACKNOWLEDGED)
                .order
                .map(|order| order.app_id)
                .filter(|app| check_id("app id", app).is_ok());
            if let Some(app) = app {
                self.remover
                    .remove(layout.container_log_dir(&app, &container));
                self.remover
                    .remove(layout.container_work_dir(&app, &container));
            }
            self.remover.remove(private_dir);
            removed += 1;
        }
        for app in read_dir_names(&layout.log_dir) {
            let app_dir = layout.log_dir.join(&app);
            for container in read_dir_names(&app_dir) {
                if self.containers.contains_key(&container)
                    || check_id("container id", &container).is_err()
                    || check_id("app id", &app).is_err()
                    || layout.private_dir(&container).exists()
                {
                    continue;
                }
                let log_dir = layout.container_log_dir(&app, &container);
                let last_written = [
                    log_dir.clone(),
                    log_dir.join("stdout"),
                    log_dir.join("stderr"),
                ]
                .iter()
                // Not followed: a link to a busy file must not keep logs forever.
                .filter_map(|path| fs::symlink_metadata(path).and_then(|m| m.modified()).ok())
                .max();
                if last_written.is_none_or(|at| at > cutoff) {
                    continue;
                }
                self.remover.remove(log_dir);
                self.remover
                    .remove(layout.container_work_dir(&app, &container));
                removed += 1;
            }
            // An app's dirs go once they hold no container (fails while not empty).
            let _ = fs::remove_dir(&app_dir);
            let _ = fs::remove_dir(layout.work_dir.join("apps").join(&app));
        }
        removed
    }

    /// A container's stdout or stderr, if the container is or was on this
    /// work dir (also after [`Executor::forget`]). Ids that are not plain
    /// names give `None`, so no path can leave the log dir.
    pub fn log_path(&self, app_id: &str, container_id: &str, stream: LogStream) -> Option<PathBuf> {
        let path =
            self.settings
                .layout
                .log_dir
                .join(super::logs::log_file(app_id, container_id, stream)?);
        path.parent().is_some_and(Path::is_dir).then_some(path)
    }

    /// SIGKILLs every running container (groups and cgroups) and waits up
    /// to a second for them to end; their ends (ABORTED) are returned by
    /// the next [`Executor::poll`]. For tests and `--kill-on-exit`.
    pub fn kill_all_now(&mut self) {
        let now = Instant::now();
        for tracked in self.containers.values_mut() {
            if let Tracked::Running(process) = tracked {
                let record = match process.kill {
                    Some(KillState { record, .. }) => KillRecord {
                        immediate: true,
                        ..record
                    },
                    None => KillRecord {
                        exit_status: exit_status::ABORTED,
                        immediate: true,
                    },
                };
                process.kill = None;
                self.settings.start_kill(process, record, now);
            }
        }
        let deadline = now + Duration::from_secs(1);
        loop {
            self.advance(Instant::now());
            self.remove_cgroups(None);
            let running = self
                .containers
                .values()
                .any(|t| matches!(t, Tracked::Running(_)));
            let removed = self.cgroups_to_remove.is_empty() && self.cgroups_to_retry.is_empty();
            if (!running && removed) || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Executor {
    /// Leaves containers running (a restarted agent adopts them). Only
    /// finishes removing the cgroups of ended containers (waiting briefly
    /// for their last processes to exit) and the agent's parent cgroups if
    /// they are empty.
    fn drop(&mut self) {
        let deadline = Instant::now() + Duration::from_millis(250);
        let retried = std::mem::take(&mut self.cgroups_to_retry);
        self.cgroups_to_remove
            .extend(retried.into_iter().map(|(cgroup, _)| cgroup));
        loop {
            self.cgroups_to_remove.retain(|cgroup| {
                cgroup.kill_all();
                cgroup.remove().is_err()
            });
            if self.cgroups_to_remove.is_empty() || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        if let Ok(cgroups) = &self.settings.cgroups {
            cgroups.remove_parents_if_empty();
        }
    }
}
