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
//!   `order.json` (the launch order), `pid` (pid, /proc start time, start
//!   wall time), `kill` (a kill was requested, and with which status),
//!   `end.json` (the end as reported), and `exit/exitcode`, written by the
//!   monitor (`exit/` belongs to the container's user, who cannot touch
//!   the rest, so no user can make the agent signal someone else's pid);
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
use super::{monitor, untrusted};
use crate::protocol::node::{ContainerCommand, ContainerEnd, LaunchOrder, exit_status};

/// `yarn.nodemanager.sleep-delay-before-sigkill.ms`.
pub const DEFAULT_KILL_GRACE: Duration = Duration::from_millis(250);
/// `yarn.nodemanager.container.stderr.tail.bytes`.
pub const DEFAULT_STDERR_TAIL_BYTES: usize = 4096;
/// `yarn.nodemanager.container-executor.exit-code-file.timeout-ms`: how long
/// an adopted container's exit code may take to appear after its process.
const EXIT_CODE_FILE_TIMEOUT: Duration = Duration::from_secs(2);

/// Bounds on a launch order (the server checks too; the agent must never
/// trust it).
const MAX_ID_BYTES: usize = 256;
const MAX_USER_BYTES: usize = 256;
const MAX_ENV_VARS: usize = 1000;
const MAX_ENV_KEY_BYTES: usize = 256;
const MAX_ENV_VALUE_BYTES: usize = 64 * 1024;
const MAX_ARGS: usize = 4096;
const MAX_COMMAND_BYTES: usize = 1024 * 1024;

/// How the executor is set up (`weft agent`'s flags).
#[derive(Debug, Clone)]
pub struct ExecutorConfig {
    /// Containers' working dirs and the agent's private state.
    pub work_dir: PathBuf,
    /// Containers' stdout and stderr.
    pub log_dir: PathBuf,
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
}

/// Which Unix user a container runs as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunAs {
    /// The agent's own user (YARN's DefaultContainerExecutor).
    Agent,
    /// The order's user, as container-executor.cfg's `banned.users` and
    /// `min.user.id` allow (the agent must be root).
    Submitter {
        banned_users: Vec<String>,
        min_user_id: u32,
    },
    /// One unprivileged user for every container, whoever submitted it
    /// (the agent must be root): YARN's non-secure `local-user`.
    LocalUser {
        user: String,
        banned_users: Vec<String>,
        min_user_id: u32,
    },
}

pub use super::logs::LogStream;

/// A container running now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningContainer {
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
        role: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// Runs containers on this node; see the module docs.
pub struct Executor {
    settings: Settings,
    containers: BTreeMap<String, Tracked>,
    /// Ends detected and not yet returned by [`Executor::poll`].
    unreported: Vec<ContainerEnd>,
    /// Cgroups of ended containers that still held processes when they
    /// ended; emptied and removed by later polls.
    cgroups_to_remove: Vec<ContainerCgroup>,
    /// Dirs of old containers being removed.
    remover: Remover,
}

/// The file in a container's record saying its end was acknowledged, and
/// when (its retention counts from then).
const ACKNOWLEDGED: &str = "acknowledged";

/// What does not change after [`Executor::open`].
struct Settings {
    config: ExecutorConfig,
    layout: Layout,
    cgroups: Result<Cgroups, String>,
    /// Whether containers get their own /dev/shm and /tmp (see
    /// [`monitor::PrivateMounts`]): if so, the agent's dirs beneath either
    /// mount point, to be bound back in each container's view; if not, why.
    private_mounts: Result<Vec<PathBuf>, String>,
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
    memory_mb: u64,
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
}

struct KillState {
    record: KillRecord,
    requested_at: Instant,
    /// SIGKILL sent (the grace is over).
    escalated: bool,
    /// The main process ended before the grace was over.
    ended_within_grace: bool,
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
        let cgroups = Cgroups::detect(&config.cgroup_name);
        let private_mounts = plan_private_mounts(&[&work_dir, &log_dir]);
        if let Err(reason) = &private_mounts {
            tracing::warn!(%reason, "containers share this machine's /dev/shm and /tmp");
        }
        match &cgroups {
            Ok(cgroups) => tracing::info!(isolation = %cgroups.describe(), "container isolation"),
            Err(reason) => {
                tracing::warn!(%reason, "cgroups unusable; containers run in process groups only")
            }
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
                agent_user,
            },
            containers: BTreeMap::new(),
            unreported: Vec::new(),
            cgroups_to_remove: Vec::new(),
            remover: Remover::default(),
        };
        executor.recover()?;
        Ok(executor)
    }

    /// What isolation containers get, for people and the node report.
    pub fn isolation(&self) -> String {
        let processes = match &self.settings.cgroups {
            Ok(cgroups) => cgroups.describe(),
            Err(reason) => format!("process groups only: {reason}"),
        };
        match &self.settings.private_mounts {
            Ok(_) => format!("{processes}; private /dev/shm and /tmp, own pid and IPC namespaces"),
            Err(reason) => format!("{processes}; /dev/shm and /tmp shared: {reason}"),
        }
    }

    /// Whether each container gets its own /dev/shm and /tmp.
    pub fn has_private_mounts(&self) -> bool {
        self.settings.private_mounts.is_ok()
    }

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
        match self.settings.start(order) {
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
        self.advance(Instant::now());
        self.remover.poll();
        std::mem::take(&mut self.unreported)
    }

    /// Containers running now.
    pub fn running(&self) -> Vec<RunningContainer> {
        self.containers
            .values()
            .filter_map(|tracked| match tracked {
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
            let marker = self
                .settings
                .layout
                .private_dir(container_id)
                .join(ACKNOWLEDGED);
            if let Err(error) = write_json_atomically(&marker, &now_ms()) {
                tracing::warn!(file = %marker.display(), %error, "cannot record that a container's end was acknowledged");
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
            let app = layout
                .read_state::<LaunchOrder>(&container, "order.json")
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
            let running = self
                .containers
                .values()
                .any(|t| matches!(t, Tracked::Running(_)));
            if (!running && self.cgroups_to_remove.is_empty()) || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// One round of what [`Executor::poll`] does, keeping the ends.
    fn advance(&mut self, now: Instant) {
        let mut ended = Vec::new();
        for tracked in self.containers.values_mut() {
            if let Tracked::Running(process) = tracked
                && let Some(end) = self
                    .settings
                    .step(process, now, &mut self.cgroups_to_remove)
            {
                ended.push(end);
            }
        }
        for end in ended {
            tracing::info!(
                container = %end.container_id,
                exit_status = end.exit_status,
                diagnostics = %end.diagnostics,
                "container ended"
            );
            self.record_end(end);
        }
        self.cgroups_to_remove.retain(|cgroup| {
            cgroup.kill_all();
            cgroup.remove().is_err()
        });
    }

    /// Marks a container ended, persists its end (so a restarted agent
    /// reports the same) and queues it for the next poll.
    fn record_end(&mut self, end: ContainerEnd) {
        if check_id("container id", &end.container_id).is_ok() {
            let dir = self.settings.layout.private_dir(&end.container_id);
            if dir.is_dir()
                && let Err(error) = write_json_atomically(&dir.join("end.json"), &end)
            {
                tracing::warn!(dir = %dir.display(), %error, "cannot record a container's end");
            }
        }
        self.containers
            .insert(end.container_id.clone(), Tracked::Ended);
        self.unreported.push(end);
    }

    /// Reads `.weft/containers/*` (see the module docs).
    fn recover(&mut self) -> Result<(), ExecutorError> {
        let root = self.settings.layout.private_root.clone();
        let entries = fs::read_dir(&root).map_err(|source| ExecutorError::Dir {
            role: "state dir",
            path: root.clone(),
            source,
        })?;
        let mut ids: Vec<String> = entries
            .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
            .collect();
        ids.sort();
        for container_id in ids {
            if let Err(reason) = check_id("container id", &container_id) {
                tracing::warn!(dir = %root.display(), %reason, "ignoring a stray entry in the state dir");
                continue;
            }
            self.recover_one(container_id);
        }
        self.remove_orphan_cgroups();
        Ok(())
    }

    /// Kills and removes container cgroups under the agent's parent that
    /// belong to no running container: leftovers of containers whose state
    /// is gone, whose processes nobody would ever stop or account for.
    fn remove_orphan_cgroups(&mut self) {
        let Ok(cgroups) = &self.settings.cgroups else {
            return;
        };
        for name in cgroups.container_names() {
            if matches!(self.containers.get(&name), Some(Tracked::Running(_))) {
                continue;
            }
            let cgroup = cgroups.container(&name);
            let killed = cgroup.kill_all();
            if killed > 0 {
                tracing::warn!(cgroup = %name, processes = killed, "killed the processes of a cgroup that belongs to no container");
            }
            if cgroup.remove().is_err() {
                self.cgroups_to_remove.push(cgroup);
            }
        }
    }

    fn recover_one(&mut self, container_id: String) {
        let layout = &self.settings.layout;
        // Ended, reported and acknowledged: only its dirs are left, for the
        // sweep.
        if layout
            .private_dir(&container_id)
            .join(ACKNOWLEDGED)
            .exists()
        {
            return;
        }
        if let Some(end) = layout
            .read_state::<ContainerEnd>(&container_id, "end.json")
            .filter(|end| end.container_id == container_id)
        {
            self.containers.insert(container_id, Tracked::Ended);
            self.unreported.push(end);
            return;
        }
        let order = layout
            .read_state::<LaunchOrder>(&container_id, "order.json")
            .filter(|order| {
                order.container_id == container_id && check_id("app id", &order.app_id).is_ok()
            });
        let Some(order) = order else {
            // Whatever it runs cannot be watched without its order: stop it.
            if let Some(pid) = layout.read_state::<PidRecord>(&container_id, "pid")
                && let Ok(pgid) = i32::try_from(pid.pid)
                && pgid > 1
                && read_proc_stat(pid.pid).is_some_and(|stat| stat.start_ticks == pid.start_ticks)
            {
                let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
            }
            self.settings
                .clean_cgroup(&container_id, &mut self.cgroups_to_remove);
            self.record_end(ContainerEnd {
                container_id,
                exit_status: exit_status::ABORTED,
                diagnostics: "its launch record is missing or unreadable after an agent restart"
                    .to_owned(),
                finished_ms: now_ms(),
                started_ms: None,
            });
            return;
        };
        let kill = layout.read_state::<KillRecord>(&container_id, "kill");
        let pid = layout.read_state::<PidRecord>(&container_id, "pid");
        let cgroup = match &self.settings.cgroups {
            Ok(cgroups) => cgroups.existing(&container_id),
            Err(_) => None,
        };
        let mut process = ContainerProcess {
            container_id: container_id.clone(),
            app_id: order.app_id.clone(),
            memory_mb: order.memory_mb,
            pid: pid.map_or(0, |pid| pid.pid),
            start_ticks: pid.map_or(0, |pid| pid.start_ticks),
            started_ms: pid.map_or(0, |pid| pid.started_ms),
            ours: false,
            cgroup,
            kill: None,
            ended_at: None,
        };
        let alive = pid.is_some() && matches!(process.leader(), Leader::Alive);
        if alive {
            tracing::info!(container = %container_id, pid = process.pid, "adopted a running container");
            if let Some(record) = kill {
                // The earlier agent was killing it: go on, with a fresh grace.
                self.settings
                    .start_kill(&mut process, record, Instant::now());
            }
            self.containers
                .insert(container_id, Tracked::Running(Box::new(process)));
            return;
        }
        let outcome = match read_exit_code(&self.settings.layout, &container_id) {
            Some(code) => Outcome::Code(code),
            None => Outcome::Unknown,
        };
        let unknown_reason = if pid.is_some() {
            "the container's process ended while the agent was down and left no exit code"
        } else {
            "the agent stopped before it recorded the container's process, which left no exit code"
        };
        let killed = kill.map(|record| KillState {
            record,
            requested_at: Instant::now(),
            escalated: false,
            ended_within_grace: false,
        });
        process.kill = killed;
        let end = self.settings.conclude(
            &mut process,
            outcome,
            unknown_reason,
            &mut self.cgroups_to_remove,
        );
        self.record_end(end);
    }
}

impl Drop for Executor {
    /// Leaves containers running (a restarted agent adopts them). Only
    /// finishes removing the cgroups of ended containers (waiting briefly
    /// for their last processes to exit) and the agent's parent cgroups if
    /// they are empty.
    fn drop(&mut self) {
        let deadline = Instant::now() + Duration::from_millis(250);
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

/// Whether a container's main process is still there.
enum Leader {
    Alive,
    /// Ended. `pinned`: it is still a zombie, so its pid (the group's id)
    /// cannot be reused yet and signalling the group is safe.
    Ended {
        pinned: bool,
    },
}

impl ContainerProcess {
    fn leader(&self) -> Leader {
        if self.ours {
            let Ok(pid) = i32::try_from(self.pid) else {
                return Leader::Ended { pinned: false };
            };
            // WNOWAIT: look without reaping, so the zombie keeps the group
            // id reserved until the group has been SIGKILLed.
            let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
            return match waitid(Id::Pid(Pid::from_raw(pid)), flags) {
                Ok(WaitStatus::StillAlive) => Leader::Alive,
                Ok(_) => Leader::Ended { pinned: true },
                Err(Errno::EINTR) => Leader::Alive,
                Err(_) => Leader::Ended { pinned: false },
            };
        }
        match read_proc_stat(self.pid) {
            Some(stat) if stat.start_ticks == self.start_ticks => {
                if matches!(stat.state, 'Z' | 'X') {
                    Leader::Ended { pinned: true }
                } else {
                    Leader::Alive
                }
            }
            _ => Leader::Ended { pinned: false },
        }
    }

    /// Signals the process group, but only while its id is certainly ours.
    fn signal_group(&self, signal: Signal) {
        let safe = match self.leader() {
            Leader::Alive | Leader::Ended { pinned: true } => true,
            Leader::Ended { pinned: false } => false,
        };
        if let Ok(pgid) = i32::try_from(self.pid)
            && pgid > 1
            && safe
        {
            let _ = killpg(Pid::from_raw(pgid), signal);
        }
    }

    /// Whether a process of the container's group or cgroup is still alive.
    fn anything_left(&self) -> bool {
        self.cgroup
            .as_ref()
            .is_some_and(|cgroup| !cgroup.pids().is_empty())
            || group_has_live_members(self.pid)
    }

    /// SIGKILL to the group and everything in the cgroup.
    fn kill_everything(&self) {
        self.signal_group(Signal::SIGKILL);
        if let Some(cgroup) = &self.cgroup {
            cgroup.kill_all();
        }
    }
}

impl Settings {
    /// Records a kill (in memory and on disk) and sends the first signal.
    fn start_kill(&self, process: &mut ContainerProcess, record: KillRecord, now: Instant) {
        let path = self.layout.private_dir(&process.container_id).join("kill");
        if let Err(error) = write_json_atomically(&path, &record) {
            tracing::warn!(file = %path.display(), %error, "cannot record a kill");
        }
        let immediate = record.immediate || self.config.kill_grace.is_zero();
        process.kill = Some(KillState {
            record,
            requested_at: now,
            escalated: immediate,
            ended_within_grace: false,
        });
        if !record.immediate {
            process.signal_group(Signal::SIGTERM);
        }
        if immediate {
            process.kill_everything();
        }
    }

    /// Advances one running container: escalates its kill, and when its
    /// main process has ended (and any grace or exit-code wait is over),
    /// concludes it.
    fn step(
        &self,
        process: &mut ContainerProcess,
        now: Instant,
        cgroups_to_remove: &mut Vec<ContainerCgroup>,
    ) -> Option<ContainerEnd> {
        let leader = process.leader();
        let ended = matches!(leader, Leader::Ended { .. });
        if ended && process.ended_at.is_none() {
            process.ended_at = Some(now);
        }
        let grace = self.config.kill_grace;
        let (escalate, keep_killing) = match &process.kill {
            Some(kill) => (
                !kill.escalated && now.duration_since(kill.requested_at) >= grace,
                // Still there after SIGKILL (forking, or in the kernel):
                // keep at it, it is cheap.
                kill.escalated && !ended,
            ),
            None => (false, false),
        };
        if escalate {
            let ended_within_grace = ended && !process.anything_left();
            if let Some(kill) = &mut process.kill {
                kill.escalated = true;
                kill.ended_within_grace = ended_within_grace;
            }
        }
        if escalate || keep_killing {
            process.kill_everything();
        }
        if !ended {
            return None;
        }
        let outcome = if process.ours {
            None
        } else {
            read_exit_code(&self.layout, &process.container_id).map(Outcome::Code)
        };
        match &process.kill {
            // The rest of the group gets the whole grace to clean up.
            Some(kill) if !kill.escalated => return None,
            Some(_) => {}
            None if !process.ours
                && outcome.is_none()
                && now.duration_since(process.ended_at.unwrap_or(now)) < EXIT_CODE_FILE_TIMEOUT =>
            {
                return None;
            }
            None => {}
        }
        let outcome = match outcome {
            Some(outcome) => outcome,
            None => self.reap(process),
        };
        let unknown_reason =
            "the container's process (adopted after an agent restart) ended and left no exit code";
        Some(self.conclude(process, outcome, unknown_reason, cgroups_to_remove))
    }

    /// Our child's outcome: the exit-code file's, else its wait status.
    /// Kills what is left of its group first, while the zombie still pins
    /// the group id, then reaps it.
    fn reap(&self, process: &mut ContainerProcess) -> Outcome {
        process.signal_group(Signal::SIGKILL);
        let status = if process.ours {
            reap_child(process.pid).unwrap_or_else(|error| {
                tracing::warn!(container = %process.container_id, %error, "cannot reap a container's process");
                None
            })
        } else {
            None
        };
        if let Some(code) = read_exit_code(&self.layout, &process.container_id) {
            return Outcome::Code(code);
        }
        match status {
            Some(WaitStatus::Exited(_, code)) => Outcome::Code(code),
            Some(WaitStatus::Signaled(_, signal, _)) => Outcome::Signal(signal as i32),
            _ => Outcome::Unknown,
        }
    }

    /// Builds the end of a container whose main process is gone, and
    /// cleans up: what is left of its group and cgroup is killed, its
    /// cgroup removed (or queued for removal).
    fn conclude(
        &self,
        process: &mut ContainerProcess,
        outcome: Outcome,
        unknown_reason: &str,
        cgroups_to_remove: &mut Vec<ContainerCgroup>,
    ) -> ContainerEnd {
        process.signal_group(Signal::SIGKILL);
        let ended_by_sigkill = match outcome {
            Outcome::Code(code) => code == 128 + Signal::SIGKILL as i32,
            Outcome::Signal(signal) => signal == Signal::SIGKILL as i32,
            Outcome::Unknown => true,
        };
        let memory_killed = process
            .cgroup
            .as_ref()
            .is_some_and(|cgroup| cgroup.memory_killed(ended_by_sigkill));
        if let Some(cgroup) = process.cgroup.take() {
            cgroup.kill_all();
            if cgroup.remove().is_err() {
                cgroups_to_remove.push(cgroup);
            }
        } else {
            self.clean_cgroup(&process.container_id, cgroups_to_remove);
        }
        let stderr_tail = || {
            let stderr = Path::new(&process.app_id)
                .join(&process.container_id)
                .join("stderr");
            describe_stderr_tail(&self.layout.log_dir, &stderr, self.config.stderr_tail_bytes)
        };
        let (exit_status, diagnostics) = if let Some(kill) = &process.kill {
            let how = if kill.record.immediate {
                "killed: SIGKILL (the agent is stopping)".to_owned()
            } else if kill.ended_within_grace {
                format!(
                    "killed: SIGTERM; it ended within the {} ms grace",
                    self.config.kill_grace.as_millis()
                )
            } else if !kill.escalated {
                // Recovered: it ended while the agent was down.
                "killed: SIGTERM; it ended before SIGKILL was due".to_owned()
            } else {
                format!(
                    "killed: SIGTERM, then SIGKILL after {} ms",
                    self.config.kill_grace.as_millis()
                )
            };
            (kill.record.exit_status, how)
        } else {
            match outcome {
                // A child may have been killed for memory, but the command
                // itself succeeded.
                Outcome::Code(0) => (0, String::new()),
                _ if memory_killed => (
                    exit_status::KILLED_EXCEEDED_PMEM,
                    format!(
                        "killed for exceeding its memory limit of {} MB{}",
                        process.memory_mb,
                        stderr_tail()
                    ),
                ),
                Outcome::Code(code) => {
                    (code, format!("exited with status {code}{}", stderr_tail()))
                }
                Outcome::Signal(signal) => (
                    128 + signal,
                    format!(
                        "ended by signal {} (status {}){}",
                        signal_name(signal),
                        128 + signal,
                        stderr_tail()
                    ),
                ),
                Outcome::Unknown => (
                    exit_status::ABORTED,
                    format!("{unknown_reason}{}", stderr_tail()),
                ),
            }
        };
        ContainerEnd {
            container_id: process.container_id.clone(),
            exit_status,
            diagnostics,
            finished_ms: ended_at(&self.layout, &process.container_id),
            // 0: recovered without the record of its start.
            started_ms: (process.started_ms > 0).then_some(process.started_ms),
        }
    }

    /// Kills and removes a container's cgroup found by path (an earlier
    /// agent's), if there is one.
    fn clean_cgroup(&self, container_id: &str, cgroups_to_remove: &mut Vec<ContainerCgroup>) {
        if let Ok(cgroups) = &self.cgroups
            && let Some(cgroup) = cgroups.existing(container_id)
        {
            cgroup.kill_all();
            if cgroup.remove().is_err() {
                cgroups_to_remove.push(cgroup);
            }
        }
    }

    /// Checks an order, prepares the container's dirs and cgroup, and
    /// spawns it. `Err` is the diagnostic of a container that cannot run.
    fn start(&self, order: &LaunchOrder) -> Result<ContainerProcess, String> {
        check_id("container id", &order.container_id)?;
        check_id("app id", &order.app_id)?;
        let container_id = order.container_id.as_str();
        let layout = &self.layout;
        let private_dir = layout.private_dir(container_id);
        if layout
            .container_log_dir(&order.app_id, container_id)
            .exists()
        {
            // Its end was acknowledged and forgotten: a container id runs
            // at most once on a node.
            return Err(format!(
                "container {container_id} already ran on this node; a container id is launched at most once"
            ));
        }
        // From here on the end of a refused order is recorded in this dir.
        fs::DirBuilder::new()
            .mode(0o700)
            .create(&private_dir)
            .map_err(|error| format!("cannot create {}: {error}", private_dir.display()))?;
        check_user(&order.user)?;
        check_command(&order.command)?;
        check_env(&order.env)?;
        let container_work_dir = layout.container_work_dir(&order.app_id, container_id);
        let identity = self.identity_for(&order.user, &container_work_dir)?;
        write_json_atomically(&private_dir.join("order.json"), order).map_err(|error| {
            format!(
                "cannot record the launch order in {}: {error}",
                private_dir.display()
            )
        })?;

        let owner = identity
            .switch_to
            .as_ref()
            .map(|(uid, gid, _)| (*uid, *gid));
        let exit_path = private_dir.join("exitcode");
        let exit_file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&exit_path)
            .map_err(|error| format!("cannot create {}: {error}", exit_path.display()))?;
        let container_log_dir = layout.container_log_dir(&order.app_id, container_id);
        // The user's alone (not their group's: users who share a primary
        // group must not read each other's work or logs).
        make_owned_dir(&container_work_dir, 0o700, owner)?;
        // The logs are made in the dir while it is still the agent's, and
        // given away by handle: once the dir is the user's, another of
        // their containers could put a link where a path points.
        make_owned_dir(&container_log_dir, 0o700, None)?;
        let stdout = open_log(&container_log_dir.join("stdout"), owner)?;
        let stderr = open_log(&container_log_dir.join("stderr"), owner)?;
        chown(&container_log_dir, owner)?;

        let cgroup = match &self.cgroups {
            Ok(cgroups) => Some(
                cgroups
                    .create(
                        container_id,
                        order.memory_mb,
                        order.vcores,
                        self.config.pids_limit,
                    )
                    .map_err(|error| format!("cannot set up its cgroup: {error}"))?,
            ),
            Err(_) => None,
        };
        let join_files = match &cgroup {
            Some(cgroup) => cgroup.open_join_files().map_err(|error| {
                let _ = cgroup.remove();
                format!("cannot set up its cgroup: {error}")
            })?,
            None => Vec::new(),
        };

        let argv = match &order.command {
            ContainerCommand::Argv(argv) => argv.clone(),
            ContainerCommand::Shell(line) => {
                vec!["/bin/sh".to_owned(), "-c".to_owned(), line.clone()]
            }
        };
        let env = self.container_env(order, &identity, &container_work_dir, &container_log_dir);
        let private_mounts = match &self.private_mounts {
            Ok(keep) => Some(monitor::PrivateMounts {
                size_mb: order.memory_mb,
                keep: keep
                    .iter()
                    .map(|dir| {
                        nix::fcntl::open(
                            dir.as_path(),
                            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
                            nix::sys::stat::Mode::empty(),
                        )
                        .map(|fd| (fd, dir.clone()))
                        .map_err(|errno| format!("cannot open {}: {errno}", dir.display()))
                    })
                    .collect::<Result<_, _>>()?,
            }),
            Err(_) => None,
        };
        let launch = monitor::Launch {
            argv: &argv,
            env,
            work_dir: &container_work_dir,
            stdout,
            stderr,
            join_files,
            switch_to: identity.switch_to,
            exit_file,
            private_mounts,
        };
        let started_ms = now_ms();
        let pid = monitor::spawn(launch).map_err(|error| {
            if let Some(cgroup) = &cgroup {
                let _ = cgroup.remove();
            }
            format!("cannot start the process: {error}")
        })?;
        // Right after spawn the child exists (at worst as a zombie, which
        // nobody but us can reap), so its start time is readable.
        let start_ticks = read_proc_stat(pid).map_or(0, |stat| stat.start_ticks);
        let record = PidRecord {
            pid,
            start_ticks,
            started_ms,
        };
        if let Err(error) = write_json_atomically(&private_dir.join("pid"), &record) {
            tracing::warn!(container = %container_id, %error, "cannot record the pid; a restarted agent will not find this container");
        }
        Ok(ContainerProcess {
            container_id: container_id.to_owned(),
            app_id: order.app_id.clone(),
            memory_mb: order.memory_mb,
            pid,
            start_ticks,
            started_ms,
            ours: true,
            cgroup,
            kill: None,
            ended_at: None,
        })
    }

    /// The user a container of `user` runs as, or why it may not run.
    /// `work_dir` is the container's, the home of a shared local user.
    fn identity_for(&self, user: &str, work_dir: &Path) -> Result<Identity, String> {
        match &self.config.run_as {
            RunAs::Agent => Ok(Identity {
                name: self.agent_user.clone(),
                home: std::env::var_os("HOME")
                    .map_or_else(|| self.layout.work_dir.clone(), PathBuf::from),
                switch_to: None,
            }),
            RunAs::Submitter {
                banned_users,
                min_user_id,
            } => switch_identity(user, banned_users, *min_user_id),
            RunAs::LocalUser {
                user: local,
                banned_users,
                min_user_id,
            } => {
                // Its home is shared by every container (often /nonexistent).
                let identity = switch_identity(local, banned_users, *min_user_id)?;
                Ok(Identity {
                    home: work_dir.to_owned(),
                    ..identity
                })
            }
        }
    }

    /// The container's environment: a few of the agent's variables, then
    /// the order's, then the agent's own (these win), as YARN's sanitizeEnv.
    fn container_env(
        &self,
        order: &LaunchOrder,
        identity: &Identity,
        work_dir: &Path,
        log_dir: &Path,
    ) -> BTreeMap<OsString, OsString> {
        let mut env = BTreeMap::new();
        env.insert(
            "PATH".into(),
            std::env::var_os("PATH").unwrap_or_else(|| monitor::DEFAULT_PATH.into()),
        );
        for inherited in ["LANG", "TZ"] {
            if let Some(value) = std::env::var_os(inherited) {
                env.insert(inherited.into(), value);
            }
        }
        env.insert("HOME".into(), identity.home.clone().into_os_string());
        for (key, value) in &order.env {
            env.insert(key.into(), value.into());
        }
        let own: [(&str, &OsStr); 8] = [
            ("CONTAINER_ID", order.container_id.as_ref()),
            ("APP_ID", order.app_id.as_ref()),
            ("WEFT_USER", order.user.as_ref()),
            ("USER", identity.name.as_ref()),
            ("LOGNAME", identity.name.as_ref()),
            ("PWD", work_dir.as_os_str()),
            ("LOG_DIRS", log_dir.as_os_str()),
            ("LOCAL_DIRS", work_dir.as_os_str()),
        ];
        for (key, value) in own {
            env.insert(key.into(), value.to_owned());
        }
        env
    }
}

/// The account `user` runs as, if container-executor.cfg's rules allow it:
/// not banned, not below the minimum uid, existing on this node.
pub fn switch_identity(
    user: &str,
    banned_users: &[String],
    min_user_id: u32,
) -> Result<Identity, String> {
    if banned_users.iter().any(|banned| banned == user) {
        return Err(format!(
            "user {user} is banned from running containers on this node"
        ));
    }
    let account = match User::from_name(user) {
        Ok(Some(account)) => account,
        Ok(None) => return Err(format!("user {user} does not exist on this node")),
        Err(error) => return Err(format!("cannot look up user {user}: {error}")),
    };
    if account.uid.as_raw() < min_user_id {
        return Err(format!(
            "user {user} has uid {}, below this node's minimum {min_user_id}",
            account.uid
        ));
    }
    let name = CString::new(user).map_err(|_| format!("user {user:?} contains a NUL byte"))?;
    let groups = nix::unistd::getgrouplist(&name, account.gid)
        .map_err(|error| format!("cannot look up the groups of user {user}: {error}"))?;
    Ok(Identity {
        name: account.name,
        home: account.dir,
        switch_to: Some((account.uid, account.gid, groups)),
    })
}

/// Creates `path` (and parents) and checks it can be written, returning
/// its absolute form (containers run elsewhere, so relative paths won't do).
fn prepare_dir(role: &'static str, path: &Path) -> Result<PathBuf, ExecutorError> {
    let fail = |source| ExecutorError::Dir {
        role,
        path: path.to_owned(),
        source,
    };
    fs::create_dir_all(path).map_err(fail)?;
    let path = fs::canonicalize(path).map_err(fail)?;
    let probe = path.join(format!(".weft-write-probe-{}", std::process::id()));
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&probe)
        .map_err(fail)?;
    fs::remove_file(&probe).map_err(fail)?;
    Ok(path)
}

/// Whether containers can have their own /dev/shm and /tmp here (root, and
/// mount namespaces that work: see [`monitor::probe_private_mounts`]); if
/// so, which of `dirs` lie beneath either and must be bound back into each
/// container's view.
fn plan_private_mounts(dirs: &[&Path]) -> Result<Vec<PathBuf>, String> {
    if !nix::unistd::geteuid().is_root() {
        return Err("mount namespaces need the agent to run as root".into());
    }
    monitor::probe_private_mounts()?;
    let points: Vec<PathBuf> = monitor::PRIVATE_MOUNT_POINTS
        .iter()
        .map(|point| fs::canonicalize(point).unwrap_or_else(|_| PathBuf::from(point)))
        .collect();
    let mut keep = Vec::new();
    for dir in dirs {
        for (point, canonical) in monitor::PRIVATE_MOUNT_POINTS.iter().zip(&points) {
            // Written under the mount point's own name, which the
            // container's namespace mounts over.
            if let Ok(below) = dir.strip_prefix(canonical) {
                if below.as_os_str().is_empty() {
                    return Err(format!(
                        "the agent's dir {} is {point} itself",
                        dir.display()
                    ));
                }
                keep.push(Path::new(point).join(below));
            }
        }
    }
    Ok(keep)
}

/// Containers run as other users enter their working and log dirs below
/// the agent's, so every directory above must let others pass (o+x);
/// without, they cannot start.
fn warn_unless_traversable(dir: &Path) {
    for ancestor in dir.ancestors() {
        if let Ok(metadata) = fs::metadata(ancestor)
            && metadata.permissions().mode() & 0o001 == 0
        {
            tracing::warn!(
                dir = %ancestor.display(),
                "other users cannot traverse this directory, so containers run as other users cannot enter their dirs below it"
            );
            return;
        }
    }
}

/// Creates `dir` (its parents with the usual modes) with `mode`, owned by
/// `owner` when the container runs as another user.
fn make_owned_dir(dir: &Path, mode: u32, owner: Option<(Uid, Gid)>) -> Result<(), String> {
    let fail = |error: io::Error| format!("cannot create {}: {error}", dir.display());
    if let Some(parent) = dir.parent() {
        fs::create_dir_all(parent).map_err(fail)?;
    }
    match fs::DirBuilder::new().mode(mode).create(dir) {
        Ok(()) => {}
        // Only a real directory, never a link to one (chown would follow it).
        Err(error)
            if error.kind() == io::ErrorKind::AlreadyExists
                && fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) => {}
        Err(error) => return Err(fail(error)),
    }
    chown(dir, owner)
}

/// A new log file (never an existing one, nor through a link), given to
/// `owner` by its handle.
fn open_log(path: &Path, owner: Option<(Uid, Gid)>) -> Result<File, String> {
    let file = OpenOptions::new()
        .append(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|error| format!("cannot open {}: {error}", path.display()))?;
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::fchown(&file, Some(uid.as_raw()), Some(gid.as_raw()))
            .map_err(|error| format!("cannot give {} to uid {uid}: {error}", path.display()))?;
    }
    Ok(file)
}

fn chown(path: &Path, owner: Option<(Uid, Gid)>) -> Result<(), String> {
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::chown(path, Some(uid.as_raw()), Some(gid.as_raw()))
            .map_err(|error| format!("cannot give {} to uid {uid}: {error}", path.display()))?;
    }
    Ok(())
}

/// Ids become path components: `[A-Za-z0-9_.-]+`, at most 256 bytes, not
/// `.` or `..`.
fn check_id(field: &str, id: &str) -> Result<(), String> {
    if !super::logs::is_safe_id(id) {
        return Err(format!(
            "{field} {:?} is not valid: 1 to {MAX_ID_BYTES} bytes of [A-Za-z0-9_.-], not . or ..",
            shorten(id)
        ));
    }
    Ok(())
}

fn check_user(user: &str) -> Result<(), String> {
    if user.is_empty() || user.len() > MAX_USER_BYTES || user.contains('\0') {
        return Err(format!(
            "user {:?} is not valid: 1 to {MAX_USER_BYTES} bytes, no NUL",
            shorten(user)
        ));
    }
    Ok(())
}

fn check_command(command: &ContainerCommand) -> Result<(), String> {
    match command {
        ContainerCommand::Argv(argv) => {
            if argv.is_empty() || argv.len() > MAX_ARGS {
                return Err(format!(
                    "command: argv has {} arguments, must have 1 to {MAX_ARGS}",
                    argv.len()
                ));
            }
            if let Some(index) = argv.iter().position(|arg| arg.contains('\0')) {
                return Err(format!("command: argument {index} contains a NUL byte"));
            }
            let total: usize = argv.iter().map(String::len).sum();
            if total > MAX_COMMAND_BYTES {
                return Err(format!(
                    "command: argv is {total} bytes, at most {MAX_COMMAND_BYTES}"
                ));
            }
        }
        ContainerCommand::Shell(line) => {
            if line.trim().is_empty() {
                return Err("command: the shell line is empty".to_owned());
            }
            if line.contains('\0') {
                return Err("command: the shell line contains a NUL byte".to_owned());
            }
            if line.len() > MAX_COMMAND_BYTES {
                return Err(format!(
                    "command: the shell line is {} bytes, at most {MAX_COMMAND_BYTES}",
                    line.len()
                ));
            }
        }
    }
    Ok(())
}

fn check_env(env: &BTreeMap<String, String>) -> Result<(), String> {
    if env.len() > MAX_ENV_VARS {
        return Err(format!(
            "env: {} variables, at most {MAX_ENV_VARS}",
            env.len()
        ));
    }
    for (key, value) in env {
        let mut bytes = key.bytes();
        let well_formed = bytes
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !well_formed || key.len() > MAX_ENV_KEY_BYTES {
            return Err(format!(
                "env: key {:?} is not a variable name ([A-Za-z_][A-Za-z0-9_]*, at most {MAX_ENV_KEY_BYTES} bytes)",
                shorten(key)
            ));
        }
        if value.len() > MAX_ENV_VALUE_BYTES {
            return Err(format!(
                "env: the value of {key} is {} bytes, at most {MAX_ENV_VALUE_BYTES}",
                value.len()
            ));
        }
        if value.contains('\0') {
            return Err(format!("env: the value of {key} contains a NUL byte"));
        }
    }
    Ok(())
}

/// At most 64 characters of something from outside, for messages.
fn shorten(text: &str) -> String {
    match text.char_indices().nth(64) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// "; last N bytes of stderr:\n…", or "" when stderr is empty or gone. The
/// file is the container's: one it replaced with a link, a FIFO or a
/// device is not read, and the diagnostics say so.
fn describe_stderr_tail(log_dir: &Path, stderr: &Path, max_bytes: usize) -> String {
    let max = u64::try_from(max_bytes).unwrap_or(u64::MAX);
    match untrusted::read_tail(log_dir, stderr, max) {
        Ok(tail) if !tail.is_empty() => {
            format!(
                "; last {} bytes of stderr:\n{}",
                tail.len(),
                trim_partial_char(&tail)
            )
        }
        Err(error) if error.kind() == io::ErrorKind::InvalidInput => {
            "; its stderr is no longer a regular file: not read".to_owned()
        }
        _ => String::new(),
    }
}

/// The tail as text, without the broken pieces of a character cut at its
/// start.
fn trim_partial_char(tail: &[u8]) -> String {
    let skip = tail
        .iter()
        .take(3)
        .take_while(|b| (**b & 0b1100_0000) == 0b1000_0000)
        .count();
    String::from_utf8_lossy(&tail[skip..]).into_owned()
}

fn signal_name(signal: i32) -> String {
    Signal::try_from(signal).map_or_else(
        |_| format!("signal {signal}"),
        |signal| signal.as_str().to_owned(),
    )
}

/// Reaps our child if it has ended (`None` while it runs).
fn reap_child(pid: u32) -> nix::Result<Option<WaitStatus>> {
    let pid = i32::try_from(pid).map_err(|_| Errno::ESRCH)?;
    match waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG))? {
        WaitStatus::StillAlive => Ok(None),
        status => Ok(Some(status)),
    }
}

/// When the container's process ended: the time its monitor wrote the exit
/// code (the agent may learn of it much later: it was stopped, or down),
/// else now. Never later than now.
fn ended_at(layout: &Layout, container_id: &str) -> u64 {
    let now = now_ms();
    read_exit(layout, container_id).map_or(now, |(_, written_ms)| written_ms.min(now))
}

/// The status the monitor wrote, if it did. The file is the container
/// user's, so only a shell status (0..=255) counts: a negative number
/// must not pass for one of Weft's own statuses. A few bytes are read, of
/// a regular file only.
fn read_exit_code(layout: &Layout, container_id: &str) -> Option<i32> {
    read_exit(layout, container_id).map(|(code, _)| code)
}

/// The code the monitor wrote (it ends in a newline once whole) and when.
fn read_exit(layout: &Layout, container_id: &str) -> Option<(i32, u64)> {
    let path = Layout::exit_code_file(container_id);
    let opened = untrusted::open_regular(&layout.private_root, &path).ok()?;
    let written_ms = opened.modified_ms;
    let bytes = untrusted::read_range(opened.file, 0, 16).ok()?;
    let text = std::str::from_utf8(&bytes).ok()?.strip_suffix('\n')?;
    let code: u8 = text.parse().ok()?;
    Some((i32::from(code), written_ms))
}

/// The few fields of /proc/<pid>/stat the executor needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ProcStat {
    state: char,
    process_group: u32,
    start_ticks: u64,
}

fn read_proc_stat(pid: u32) -> Option<ProcStat> {
    if pid == 0 {
        return None;
    }
    let bytes = fs::read(format!("/proc/{pid}/stat")).ok()?;
    parse_proc_stat(&String::from_utf8_lossy(&bytes))
}

/// The command name (field 2) may hold spaces and parentheses, so fields
/// are counted after its last ')': field 3 (state), 5 (process group), 22
/// (start time in clock ticks since boot).
fn parse_proc_stat(text: &str) -> Option<ProcStat> {
    let after_name = &text[text.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let process_group = fields.nth(1)?.parse().ok()?;
    let start_ticks = fields.nth(16)?.parse().ok()?;
    Some(ProcStat {
        state,
        process_group,
        start_ticks,
    })
}

/// Whether a live (not zombie) process is in process group `pgid`: one
/// pass over /proc, done once per kill, for the diagnostic.
fn group_has_live_members(pgid: u32) -> bool {
    let Ok(entries) = fs::read_dir("/proc") else {
        return false;
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(read_proc_stat)
        .any(|stat| stat.process_group == pgid && !matches!(stat.state, 'Z' | 'X'))
}

/// The most an agent's record of a container may hold: an order carries up
/// to 1 MiB of command and 1,000 variables of up to 64 KiB.
const MAX_STATE_BYTES: u64 = 80 << 20;

/// One of the agent's records beneath `root`, read as a file a container
/// could have touched (a container run as the agent's own user can):
/// not through a link, not from a FIFO, at most [`MAX_STATE_BYTES`].
fn read_state<T: for<'de> Deserialize<'de>>(root: &Path, relative: &Path) -> Option<T> {
    let path = root.join(relative);
    let bytes = match untrusted::read_at_most(root, relative, MAX_STATE_BYTES) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return None,
        Err(error) => {
            tracing::warn!(file = %path.display(), %error, "cannot read agent state");
            return None;
        }
    };
    match serde_json::from_slice(&bytes) {
        Ok(value) => Some(value),
        Err(error) => {
            tracing::warn!(file = %path.display(), %error, "ignoring unreadable agent state");
            None
        }
    }
}

/// Temp file + rename, so a reader (a restarted agent) sees the whole
/// file or none. No fsync: this guards against the agent dying, not the
/// machine (which takes the containers with it).
fn write_json_atomically<T: Serialize>(path: &Path, value: &T) -> io::Result<()> {
    let bytes = serde_json::to_vec(value).map_err(io::Error::other)?;
    let mut temp_name = path.file_name().unwrap_or_default().to_owned();
    temp_name.push(".tmp");
    let temp = path.with_file_name(temp_name);
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temp)?;
    file.write_all(&bytes)?;
    drop(file);
    fs::rename(&temp, path)
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// A test's own work and log dirs, and a cgroup name no other test uses.
    struct Bench {
        dir: tempfile::TempDir,
    }

    impl Bench {
        fn new() -> Bench {
            Bench {
                dir: tempfile::tempdir().expect("tempdir"),
            }
        }

        fn config(&self, run_as: RunAs) -> ExecutorConfig {
            let unique = self
                .dir
                .path()
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .replace(|c: char| !c.is_ascii_alphanumeric(), "");
            ExecutorConfig {
                work_dir: self.dir.path().join("work"),
                log_dir: self.dir.path().join("logs"),
                run_as,
                kill_grace: DEFAULT_KILL_GRACE,
                stderr_tail_bytes: DEFAULT_STDERR_TAIL_BYTES,
                cgroup_name: format!("weft-test-{}-{unique}", std::process::id()),
                pids_limit: 512,
            }
        }

        fn open(&self) -> Executor {
            Executor::open(self.config(RunAs::Agent)).expect("open")
        }
    }

    fn order(container_id: &str, command: ContainerCommand) -> LaunchOrder {
        LaunchOrder {
            container_id: container_id.to_owned(),
            app_id: "app_1".to_owned(),
            user: "alice".to_owned(),
            command,
            env: BTreeMap::new(),
            memory_mb: 128,
            vcores: 1,
            gpus: 0,
        }
    }

    fn shell(line: &str) -> ContainerCommand {
        ContainerCommand::Shell(line.to_owned())
    }

    /// Polls until all of `container_ids` have ended (panics after `within`).
    fn wait_for_ends(
        executor: &mut Executor,
        container_ids: &[&str],
        within: Duration,
    ) -> BTreeMap<String, ContainerEnd> {
        let deadline = Instant::now() + within;
        let mut ends = BTreeMap::new();
        loop {
            for end in executor.poll() {
                assert!(
                    ends.insert(end.container_id.clone(), end).is_none(),
                    "an end reported twice"
                );
            }
            if container_ids.iter().all(|id| ends.contains_key(*id)) {
                return ends;
            }
            assert!(
                Instant::now() < deadline,
                "{container_ids:?} did not end within {within:?}; ended: {ends:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn wait_for_end(executor: &mut Executor, container_id: &str, within: Duration) -> ContainerEnd {
        let mut ends = wait_for_ends(executor, &[container_id], within);
        ends.remove(container_id).expect("ended")
    }

    fn wait_until(within: Duration, mut condition: impl FnMut() -> bool) -> bool {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if condition() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        condition()
    }

    fn is_alive(pid: u32) -> bool {
        read_proc_stat(pid).is_some_and(|stat| !matches!(stat.state, 'Z' | 'X'))
    }

    /// The host's pid of the process a container knows as `inner` (what
    /// `$!` said inside it): in a pid namespace of its own, the process of
    /// that namespace (the one of the leader's child) whose last `NSpid`
    /// is `inner`; without one, `inner` itself.
    fn host_pid(leader: u32, inner: u32) -> u32 {
        let namespace = |pid: u32| fs::read_link(format!("/proc/{pid}/ns/pid")).ok();
        let pids: Vec<u32> = fs::read_dir("/proc")
            .expect("/proc")
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect();
        let parent = |pid: u32| -> Option<u32> {
            let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            stat[stat.rfind(')')? + 1..]
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()
        };
        let Some(own) = pids
            .iter()
            .find(|pid| parent(**pid) == Some(leader))
            .and_then(|first| namespace(*first))
            .filter(|own| Some(own) != namespace(leader).as_ref())
        else {
            return inner;
        };
        pids.into_iter()
            .find(|pid| {
                namespace(*pid).as_ref() == Some(&own)
                    && fs::read_to_string(format!("/proc/{pid}/status"))
                        .ok()
                        .and_then(|status| {
                            let line = status.lines().find(|l| l.starts_with("NSpid:"))?;
                            line.split_whitespace().last()?.parse::<u32>().ok()
                        })
                        == Some(inner)
            })
            .expect("the container's process")
    }

    #[test]
    fn runs_a_command_with_its_environment_and_reports_success() {
        let bench = Bench::new();
        let mut executor = bench.open();
        let mut launch = order(
            "c_ok",
            shell(
                "echo hello; echo \"$CONTAINER_ID $APP_ID $WEFT_USER $PWD $LOG_DIRS $LOCAL_DIRS $MINE\"",
            ),
        );
        launch.env.insert("MINE".to_owned(), "mine".to_owned());
        launch
            .env
            .insert("CONTAINER_ID".to_owned(), "forged".to_owned());
        executor.launch(&launch);
        executor.launch(&launch); // idempotent
        assert_eq!(executor.running().len(), 1);
        let end = wait_for_end(&mut executor, "c_ok", Duration::from_secs(3));
        assert_eq!((end.exit_status, end.diagnostics.as_str()), (0, ""));
        assert!(executor.running().is_empty());

        let stdout = executor
            .log_path("app_1", "c_ok", LogStream::Stdout)
            .expect("stdout path");
        let text = fs::read_to_string(stdout).expect("stdout");
        let work = executor.settings.layout.container_work_dir("app_1", "c_ok");
        let logs = executor.settings.layout.container_log_dir("app_1", "c_ok");
        let expected = format!(
            "hello\nc_ok app_1 alice {} {} {} mine\n",
            work.display(),
            logs.display(),
            work.display()
        );
        assert_eq!(text, expected);
        assert_eq!(read_exit_code(&executor.settings.layout, "c_ok"), Some(0));

        // Reported once; forgetting keeps the logs, and the id cannot run again.
        assert!(executor.poll().is_empty());
        executor.forget("c_ok");
        let record = executor.settings.layout.private_dir("c_ok");
        assert!(
            record.join(ACKNOWLEDGED).exists(),
            "its retention counts from now"
        );
        // An agent started again on these dirs does not report it again.
        assert!(
            Executor::open(bench.config(RunAs::Agent))
                .expect("open")
                .poll()
                .iter()
                .all(|end| end.container_id != "c_ok")
        );
        assert!(
            executor
                .log_path("app_1", "c_ok", LogStream::Stderr)
                .is_some()
        );
        executor.launch(&launch);
        let again = wait_for_end(&mut executor, "c_ok", Duration::from_secs(1));
        assert_eq!(again.exit_status, exit_status::INVALID);
        assert!(
            again.diagnostics.contains("already ran"),
            "{}",
            again.diagnostics
        );
    }

    #[test]
    fn sweeping_removes_only_old_forgotten_containers_dirs() {
        let bench = Bench::new();
        let mut executor = bench.open();
        executor.launch(&order("c_old", shell("echo old")));
        executor.launch(&order("c_kept", shell("echo kept")));
        let _ = wait_for_ends(&mut executor, &["c_old", "c_kept"], Duration::from_secs(3));
        executor.forget("c_old");
        let long_ago = SystemTime::now() - Duration::from_secs(3600);
        let far_ahead = SystemTime::now() + Duration::from_secs(3600 * 24 * 365);
        let layout = &executor.settings.layout;
        // Retention counts from the agent's record of the acknowledgement,
        // not from the logs' times (a container sets those as it likes).
        fs::File::open(layout.private_dir("c_old").join(ACKNOWLEDGED))
            .unwrap()
            .set_modified(long_ago)
            .unwrap();
        for container in ["c_old", "c_kept"] {
            let dir = layout.container_log_dir("app_1", container);
            for path in [dir.join("stdout"), dir.join("stderr"), dir.clone()] {
                fs::File::open(&path)
                    .unwrap()
                    .set_modified(far_ahead)
                    .unwrap();
            }
        }
        let (old_logs, old_work, old_private) = (
            layout.container_log_dir("app_1", "c_old"),
            layout.container_work_dir("app_1", "c_old"),
            layout.private_dir("c_old"),
        );
        assert!(old_logs.exists() && old_work.exists());
        assert_eq!(
            executor.sweep(Duration::from_secs(7200)),
            0,
            "not old enough"
        );
        assert_eq!(executor.sweep(Duration::from_secs(60)), 1);
        // Removal is asynchronous, the private directory last.
        assert!(wait_until(Duration::from_secs(10), || {
            executor.poll();
            !old_logs.exists() && !old_work.exists() && !old_private.exists()
        }));
        assert!(
            executor
                .log_path("app_1", "c_kept", LogStream::Stdout)
                .is_some(),
            "a container not forgotten keeps its logs"
        );
    }

    #[test]
    fn a_missing_command_and_a_failing_one_report_status_and_stderr() {
        let bench = Bench::new();
        let mut executor = bench.open();
        executor.launch(&order(
            "c_missing",
            ContainerCommand::Argv(vec!["weft-no-such-command-xyz".to_owned()]),
        ));
        executor.launch(&order("c_fail", shell("echo oops >&2; exit 3")));
        // An argv is exec'd, never run by a shell: `exit` is no program.
        executor.launch(&order(
            "c_exit_argv",
            ContainerCommand::Argv(vec!["exit".to_owned(), "4".to_owned()]),
        ));
        executor.launch(&order("c_exit_line", shell("exit 4")));
        let ends = wait_for_ends(
            &mut executor,
            &["c_missing", "c_fail", "c_exit_argv", "c_exit_line"],
            Duration::from_secs(3),
        );
        let missing = &ends["c_missing"];
        assert_eq!(missing.exit_status, 127);
        assert!(
            missing.diagnostics.starts_with("exited with status 127"),
            "{}",
            missing.diagnostics
        );
        assert!(
            missing.diagnostics.contains("not found"),
            "{}",
            missing.diagnostics
        );
        let failed = &ends["c_fail"];
        assert_eq!(failed.exit_status, 3);
        assert_eq!(
            failed.diagnostics,
            "exited with status 3; last 5 bytes of stderr:\noops\n"
        );
        let argv = &ends["c_exit_argv"];
        assert_eq!(argv.exit_status, 127, "{}", argv.diagnostics);
        assert!(
            argv.diagnostics.contains("weft: exit: not found"),
            "{}",
            argv.diagnostics
        );
        assert_eq!(ends["c_exit_line"].exit_status, 4);
    }

    #[test]
    fn kill_ends_the_whole_group_and_the_cgroup() {
        let bench = Bench::new();
        let mut executor = bench.open();
        executor.launch(&order(
            "c_stubborn",
            shell("trap '' TERM; setsid sleep 100 & echo $!; sleep 100 & echo $!; wait"),
        ));
        let stdout = executor
            .log_path("app_1", "c_stubborn", LogStream::Stdout)
            .expect("path");
        let mut pids: Vec<u32> = Vec::new();
        assert!(wait_until(Duration::from_secs(2), || {
            pids = fs::read_to_string(&stdout)
                .unwrap_or_default()
                .lines()
                .filter_map(|l| l.parse().ok())
                .collect();
            pids.len() == 2
        }));
        let leader = executor.running()[0].pid;
        let (escaped, in_group) = (host_pid(leader, pids[0]), host_pid(leader, pids[1]));
        let started = Instant::now();
        executor.kill("c_stubborn", exit_status::KILLED_BY_APPMASTER);
        executor.kill("c_stubborn", exit_status::PREEMPTED); // the first kill's status stands
        let end = wait_for_end(&mut executor, "c_stubborn", Duration::from_secs(3));
        assert!(started.elapsed() >= DEFAULT_KILL_GRACE);
        assert_eq!(end.exit_status, exit_status::KILLED_BY_APPMASTER);
        assert_eq!(
            end.diagnostics,
            "killed: SIGTERM, then SIGKILL after 250 ms"
        );
        assert!(wait_until(Duration::from_secs(2), || !is_alive(leader)
            && !is_alive(in_group)));
        if executor.has_cgroups() {
            assert!(
                wait_until(Duration::from_secs(2), || !is_alive(escaped)),
                "the setsid child escaped the cgroup"
            );
        } else {
            eprintln!(
                "note: no cgroups ({}); the setsid child escapes, killing it",
                executor.isolation()
            );
            let _ = nix::sys::signal::kill(Pid::from_raw(escaped as i32), Signal::SIGKILL);
        }
        // Unknown and ended containers: no-ops.
        executor.kill("c_stubborn", exit_status::PREEMPTED);
        executor.kill("nobody", exit_status::PREEMPTED);
        assert!(executor.poll().is_empty());
    }

    #[test]
    fn a_container_over_its_memory_limit_ends_killed_for_memory() {
        let bench = Bench::new();
        let mut executor = bench.open();
        if !executor.has_cgroups() {
            eprintln!(
                "note: skipping the memory limit test: {}",
                executor.isolation()
            );
            return;
        }
        let mut launch = order("c_hog", shell("head -c 300M /dev/zero | tail"));
        launch.memory_mb = 64;
        executor.launch(&launch);
        // Usually ~0.15 s; when the victim does not exit at once, the
        // kernel's oom_reaper frees it after its 2 s delay.
        let end = wait_for_end(&mut executor, "c_hog", Duration::from_secs(5));
        assert_eq!(
            end.exit_status,
            exit_status::KILLED_EXCEEDED_PMEM,
            "{}",
            end.diagnostics
        );
        assert!(
            end.diagnostics
                .starts_with("killed for exceeding its memory limit of 64 MB"),
            "{}",
            end.diagnostics
        );
        let cgroups = executor.settings.cgroups.clone().expect("cgroups");
        assert!(wait_until(Duration::from_secs(1), || {
            executor.poll();
            cgroups.existing("c_hog").is_none()
        }));
    }

    #[test]
    fn a_restarted_agent_adopts_running_containers_and_reports_ends() {
        let bench = Bench::new();
        let mut first = bench.open();
        first.launch(&order("c_later", shell("sleep 0.5; exit 5")));
        first.launch(&order("c_quick", shell("exit 6")));
        first.launch(&order("c_kill_before", shell("sleep 100")));
        first.launch(&order("c_kill_after", shell("sleep 100")));
        let pids: BTreeMap<String, u32> = first
            .running()
            .into_iter()
            .map(|r| (r.container_id, r.pid))
            .collect();
        first.kill("c_kill_before", exit_status::KILLED_BY_RESOURCEMANAGER);
        // Ended, unreaped, before the restart (the test process is their parent).
        for id in ["c_quick", "c_kill_before"] {
            assert!(
                wait_until(Duration::from_secs(2), || !is_alive(pids[id])),
                "{id}"
            );
        }
        drop(first); // as if the agent were killed with -9: nothing killed, nothing reaped

        let mut second = bench.open();
        let running: Vec<String> = second
            .running()
            .into_iter()
            .map(|r| r.container_id)
            .collect();
        assert_eq!(running, ["c_kill_after", "c_later"]);
        assert_eq!(second.running()[0].pid, pids["c_kill_after"]);
        let mut recovered = second.poll();
        recovered.sort_by(|a, b| a.container_id.cmp(&b.container_id));
        let statuses: Vec<(&str, i32)> = recovered
            .iter()
            .map(|e| (e.container_id.as_str(), e.exit_status))
            .collect();
        assert_eq!(
            statuses,
            [
                ("c_kill_before", exit_status::KILLED_BY_RESOURCEMANAGER),
                ("c_quick", 6)
            ]
        );

        second.kill("c_kill_after", exit_status::KILLED_BY_APPMASTER);
        let ends = wait_for_ends(
            &mut second,
            &["c_kill_after", "c_later"],
            Duration::from_secs(3),
        );
        let killed = &ends["c_kill_after"];
        assert_eq!(killed.exit_status, exit_status::KILLED_BY_APPMASTER);
        let later = &ends["c_later"];
        assert_eq!(later.exit_status, 5);
        assert!(
            later.diagnostics.starts_with("exited with status 5"),
            "{}",
            later.diagnostics
        );
        drop(second);

        // A third agent reports the same ends again, until they are forgotten.
        let mut third = bench.open();
        let mut ends = third.poll();
        ends.sort_by(|a, b| a.container_id.cmp(&b.container_id));
        let statuses: Vec<(&str, i32)> = ends
            .iter()
            .map(|e| (e.container_id.as_str(), e.exit_status))
            .collect();
        assert_eq!(
            statuses,
            [
                ("c_kill_after", exit_status::KILLED_BY_APPMASTER),
                ("c_kill_before", exit_status::KILLED_BY_RESOURCEMANAGER),
                ("c_later", 5),
                ("c_quick", 6)
            ]
        );
        for id in pids.keys() {
            third.forget(id);
        }
        drop(third);
        assert!(bench.open().poll().is_empty());

        // The first agent's children are this test's zombies now: reap them.
        for pid in pids.values() {
            let _ = nix::sys::wait::waitpid(Pid::from_raw(*pid as i32), None);
        }
    }

    #[test]
    fn a_process_gone_without_exit_code_is_aborted() {
        let bench = Bench::new();
        let mut first = bench.open();
        first.launch(&order("c_lost", shell("sleep 100")));
        let pid = first.running()[0].pid;
        drop(first);
        // Killed while "the agent was down": the monitor leaves no exit code.
        let _ = killpg(Pid::from_raw(pid as i32), Signal::SIGKILL);
        let _ = nix::sys::wait::waitpid(Pid::from_raw(pid as i32), None);
        let mut second = bench.open();
        assert!(second.running().is_empty());
        let end = wait_for_end(&mut second, "c_lost", Duration::from_millis(100));
        assert_eq!(end.exit_status, exit_status::ABORTED);
        assert!(
            end.diagnostics.starts_with(
                "the container's process ended while the agent was down and left no exit code"
            ),
            "{}",
            end.diagnostics
        );
    }

    #[test]
    fn refused_users_and_bad_orders_end_invalid_without_panicking() {
        let bench = Bench::new();
        let run_as = RunAs::Submitter {
            banned_users: vec!["mallory".to_owned()],
            min_user_id: 1000,
        };
        let mut executor = Executor::open(bench.config(run_as)).expect("open");
        let as_user = |id: &str, user: &str| LaunchOrder {
            user: user.to_owned(),
            ..order(id, shell("true"))
        };
        executor.launch(&as_user("c_root", "root"));
        executor.launch(&as_user("c_banned", "mallory"));
        executor.launch(&as_user("c_unknown", "weft-no-such-user"));
        let mut bad_key = order("c_bad_key", shell("true"));
        bad_key.env.insert("1X".to_owned(), "v".to_owned());
        executor.launch(&bad_key);
        let mut bad_value = order("c_bad_value", shell("true"));
        bad_value.env.insert("X".to_owned(), "a\0b".to_owned());
        executor.launch(&bad_value);
        executor.launch(&order("../escape", shell("true")));
        executor.launch(&LaunchOrder {
            app_id: "..".to_owned(),
            ..order("c_bad_app", shell("true"))
        });
        executor.launch(&order("c_empty_argv", ContainerCommand::Argv(Vec::new())));
        executor.launch(&order(
            "c_nul_arg",
            ContainerCommand::Argv(vec!["a\0".to_owned()]),
        ));

        let ends: BTreeMap<String, ContainerEnd> = executor
            .poll()
            .into_iter()
            .map(|end| (end.container_id.clone(), end))
            .collect();
        let expect = [
            ("c_root", "uid 0, below this node's minimum 1000"),
            ("c_banned", "user mallory is banned"),
            ("c_unknown", "does not exist"),
            ("c_bad_key", "env: key \"1X\""),
            ("c_bad_value", "env: the value of X contains a NUL"),
            ("../escape", "container id \"../escape\" is not valid"),
            ("c_bad_app", "app id \"..\" is not valid"),
            ("c_empty_argv", "command: argv has 0 arguments"),
            ("c_nul_arg", "command: argument 0 contains a NUL"),
        ];
        assert_eq!(ends.len(), expect.len());
        for (id, text) in expect {
            let end = &ends[id];
            assert_eq!(end.exit_status, exit_status::INVALID, "{id}");
            assert!(end.diagnostics.contains(text), "{id}: {}", end.diagnostics);
        }
        assert!(!bench.dir.path().join("escape").exists());
        assert!(executor.running().is_empty());
        assert_eq!(executor.log_path("..", "c", LogStream::Stdout), None);
        assert_eq!(executor.log_path("app_1", "../c", LogStream::Stdout), None);
        // Known: a second order is a no-op; forgetting an invalid id is harmless.
        executor.launch(&order("../escape", shell("true")));
        assert!(executor.poll().is_empty());
        executor.forget("../escape");
    }

    #[test]
    fn runs_as_the_submitter_when_told_to() {
        if !Uid::effective().is_root() || !matches!(User::from_name("nobody"), Ok(Some(_))) {
            eprintln!("note: skipping the run-as test: needs root and a user nobody");
            return;
        }
        let bench = Bench::new();
        // The tempdir is 0700: let the container's user reach its dirs.
        fs::set_permissions(bench.dir.path(), fs::Permissions::from_mode(0o755)).expect("chmod");
        let run_as = RunAs::Submitter {
            banned_users: Vec::new(),
            min_user_id: 1000,
        };
        let mut executor = Executor::open(bench.config(run_as)).expect("open");
        let launch = LaunchOrder {
            user: "nobody".to_owned(),
            ..order(
                "c_nobody",
                shell("id -u; id -g; echo \"$USER $LOGNAME $WEFT_USER\"; touch made"),
            )
        };
        executor.launch(&launch);
        let end = wait_for_end(&mut executor, "c_nobody", Duration::from_secs(3));
        assert_eq!((end.exit_status, end.diagnostics.as_str()), (0, ""));
        let stdout = executor
            .log_path("app_1", "c_nobody", LogStream::Stdout)
            .expect("path");
        let account = User::from_name("nobody").expect("lookup").expect("nobody");
        assert_eq!(
            fs::read_to_string(stdout).expect("stdout"),
            format!("{}\n{}\nnobody nobody nobody\n", account.uid, account.gid)
        );
        let made = executor
            .settings
            .layout
            .container_work_dir("app_1", "c_nobody")
            .join("made");
        assert_eq!(
            std::os::unix::fs::MetadataExt::uid(&fs::metadata(made).expect("made")),
            account.uid.as_raw()
        );
        // Its alone, not its group's (users may share a primary group).
        let layout = &executor.settings.layout;
        let mode = |path: PathBuf| fs::metadata(path).expect("exists").permissions().mode() & 0o777;
        assert_eq!(mode(layout.container_work_dir("app_1", "c_nobody")), 0o700);
        assert_eq!(mode(layout.container_log_dir("app_1", "c_nobody")), 0o700);
        assert_eq!(
            mode(layout.container_log_dir("app_1", "c_nobody").join("stdout")),
            0o600
        );
        // The monitor, as nobody, recorded the exit code in root's file.
        assert_eq!(
            read_exit_code(&executor.settings.layout, "c_nobody"),
            Some(0)
        );
        let record = executor
            .settings
            .layout
            .private_dir("c_nobody")
            .join("exitcode");
        assert_eq!(
            std::os::unix::fs::MetadataExt::uid(&fs::metadata(record).expect("record")),
            0
        );
    }

    #[test]
    fn a_containers_dev_shm_and_tmp_are_its_own_and_go_with_it() {
        let bench = Bench::new();
        let mut executor = bench.open();
        if !executor.has_private_mounts() {
            eprintln!(
                "note: no mount namespaces here ({}); skipped",
                executor.isolation()
            );
            return;
        }
        assert!(executor.isolation().contains("private /dev/shm and /tmp"));
        let name = format!("weft-test-{}", std::process::id());
        // The work dir is beneath /tmp here (a tempdir): it stays reachable.
        executor.launch(&order(
            "c_private",
            shell(&format!(
                "echo left > /dev/shm/{name} && echo left > /tmp/{name} && \
                 test -d \"$PWD\" && test -d \"$LOG_DIRS\" && ls -A /dev/shm | wc -l && \
                 grep -c ' /tmp tmpfs .*size=131072k' /proc/self/mounts && \
                 echo $$ && ls /proc | grep -c '^[0-9][0-9]*$' && tr -d '\\0' < /proc/1/cmdline && echo"
            )),
        ));
        let end = wait_for_end(&mut executor, "c_private", Duration::from_secs(10));
        assert_eq!((end.exit_status, end.diagnostics.as_str()), (0, ""));
        let stdout = executor
            .log_path("app_1", "c_private", LogStream::Stdout)
            .expect("path");
        // It saw only its own file in /dev/shm, a tmpfs of its memory
        // limit (128 MB) on /tmp, and only its own processes: the shell is
        // the second of its pid namespace (after the monitor's runner), and
        // /proc lists the two and `ls` (a pipe's `grep` may be there too).
        let seen = fs::read_to_string(stdout).expect("stdout");
        let lines: Vec<&str> = seen.lines().collect();
        assert_eq!(&lines[..3], ["1", "1", "2"], "{seen}");
        let processes: u32 = lines[3].parse().expect("a count");
        assert!((3..=4).contains(&processes), "{seen}");
        // Its first process shows nothing of the agent's command line.
        assert_eq!(lines[4], "weft-monitor", "{seen}");
        for dir in ["/dev/shm", "/tmp"] {
            assert!(
                !Path::new(dir).join(&name).exists(),
                "{dir}/{name} outlived it"
            );
        }
    }

    #[test]
    fn a_containers_system_v_shared_memory_goes_with_it() {
        let bench = Bench::new();
        let mut executor = bench.open();
        if !executor.has_private_mounts() || Command::new("ipcmk").arg("-V").output().is_err() {
            eprintln!("note: no namespaces or no ipcmk here; skipped");
            return;
        }
        executor.launch(&order("c_ipc", shell("ipcmk -M 65536 | grep -o '[0-9]*$'")));
        let end = wait_for_end(&mut executor, "c_ipc", Duration::from_secs(10));
        assert_eq!(end.exit_status, 0, "{}", end.diagnostics);
        let stdout = executor
            .log_path("app_1", "c_ipc", LogStream::Stdout)
            .expect("path");
        let id = fs::read_to_string(stdout)
            .expect("stdout")
            .trim()
            .to_string();
        let host = Command::new("ipcs").arg("-m").output().expect("ipcs");
        let listed = String::from_utf8_lossy(&host.stdout);
        assert!(
            !listed.split_whitespace().any(|word| word == id),
            "its segment {id} is in the host's: {listed}"
        );
    }

    #[test]
    fn a_container_has_at_most_its_pids_limit_of_processes() {
        let bench = Bench::new();
        let mut executor = bench.open();
        if !executor.isolation().contains("pids") {
            eprintln!(
                "note: no pids controller here ({}); skipped",
                executor.isolation()
            );
            return;
        }
        // 600 sleepers asked for, 512 allowed (the shell is one of them).
        executor.launch(&order(
            "c_forks",
            shell("n=0; for i in $(seq 600); do sleep 30 & n=$((n+1)); done 2>/dev/null; echo started"),
        ));
        let end = wait_for_end(&mut executor, "c_forks", Duration::from_secs(30));
        let stderr_or_status = format!("{} {}", end.exit_status, end.diagnostics);
        assert_ne!(
            end.exit_status, 0,
            "600 processes started: {stderr_or_status}"
        );
    }

    #[test]
    fn logs_a_container_replaced_with_links_or_fifos_are_not_read() {
        let bench = Bench::new();
        let mut executor = bench.open();
        let secret = bench.dir.path().join("secret");
        fs::write(&secret, "the host's secret").expect("secret");
        executor.launch(&order(
            "c_link",
            shell(&format!(
                "echo out; rm stderr_link 2>/dev/null; cd \"$LOG_DIRS\" && rm stderr && ln -s {} stderr && exit 3",
                secret.display()
            )),
        ));
        let end = wait_for_end(&mut executor, "c_link", Duration::from_secs(3));
        assert_eq!(end.exit_status, 3);
        assert!(!end.diagnostics.contains("secret"), "{}", end.diagnostics);
        assert!(
            end.diagnostics.contains("no longer a regular file"),
            "{}",
            end.diagnostics
        );

        executor.launch(&order(
            "c_fifo",
            shell("cd \"$LOG_DIRS\" && rm stderr && mkfifo stderr && exit 4"),
        ));
        // Without O_NONBLOCK this would hang the agent: nobody writes.
        let end = wait_for_end(&mut executor, "c_fifo", Duration::from_secs(3));
        assert_eq!(end.exit_status, 4);
        assert!(
            end.diagnostics.contains("no longer a regular file"),
            "{}",
            end.diagnostics
        );
    }

    #[test]
    fn without_cgroups_containers_still_run_and_die_as_process_groups() {
        let bench = Bench::new();
        let mut config = bench.config(RunAs::Agent);
        config.cgroup_name = "not/a/name".to_owned();
        let mut executor = Executor::open(config).expect("open");
        assert!(!executor.has_cgroups());
        assert!(
            executor
                .isolation()
                .starts_with("process groups only: the cgroup name"),
            "{}",
            executor.isolation()
        );
        executor.launch(&order(
            "c_group",
            shell("trap '' TERM; sleep 100 & echo $!; wait"),
        ));
        let stdout = executor
            .log_path("app_1", "c_group", LogStream::Stdout)
            .expect("path");
        let mut child = None;
        assert!(wait_until(Duration::from_secs(2), || {
            child = fs::read_to_string(&stdout)
                .ok()
                .and_then(|text| text.trim().parse::<u32>().ok());
            child.is_some()
        }));
        let child = host_pid(executor.running()[0].pid, child.expect("child pid"));
        executor.kill("c_group", exit_status::PREEMPTED);
        let end = wait_for_end(&mut executor, "c_group", Duration::from_secs(3));
        assert_eq!(end.exit_status, exit_status::PREEMPTED);
        assert_eq!(
            end.diagnostics,
            "killed: SIGTERM, then SIGKILL after 250 ms"
        );
        assert!(wait_until(Duration::from_secs(2), || !is_alive(child)));
    }

    #[test]
    fn an_unusable_work_dir_is_an_error_naming_it() {
        let bench = Bench::new();
        let file = bench.dir.path().join("file");
        fs::write(&file, "").expect("file");
        let mut config = bench.config(RunAs::Agent);
        config.work_dir = file.join("sub");
        let message = Executor::open(config).err().expect("refused").to_string();
        assert!(
            message.starts_with(&format!(
                "the work dir {} is not usable",
                file.join("sub").display()
            )),
            "{message}"
        );
    }

    #[test]
    fn kill_all_now_ends_everything_at_once() {
        let bench = Bench::new();
        let mut executor = bench.open();
        executor.launch(&order("c_a", shell("trap '' TERM; sleep 100")));
        executor.launch(&order(
            "c_b",
            ContainerCommand::Argv(vec!["sleep".to_owned(), "100".to_owned()]),
        ));
        let pids: Vec<u32> = executor.running().iter().map(|r| r.pid).collect();
        executor.kill_all_now();
        assert!(executor.running().is_empty());
        let ends = executor.poll();
        assert_eq!(ends.len(), 2);
        assert!(
            ends.iter()
                .all(|end| end.exit_status == exit_status::ABORTED)
        );
        assert!(pids.iter().all(|pid| !is_alive(*pid)));
    }

    #[test]
    fn parses_proc_stat_and_tails() {
        let stat = "42 (a b) c) S 1 42 42 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 123456 1000 1 18446744073709551615";
        assert_eq!(
            parse_proc_stat(stat),
            Some(ProcStat {
                state: 'S',
                process_group: 42,
                start_ticks: 123_456
            })
        );
        assert_eq!(parse_proc_stat("42 (x"), None);
        assert_eq!(trim_partial_char(&[0x80, 0xa9, b'a']), "a");
        assert_eq!(trim_partial_char("é".as_bytes()), "é");
        assert!(check_id("id", &"a".repeat(257)).is_err());
        assert!(check_id("id", "container_1.2-x").is_ok());
        let root = tempfile::tempdir().expect("tempdir");
        let layout = Layout {
            work_dir: root.path().to_owned(),
            log_dir: root.path().to_owned(),
            private_root: root.path().to_owned(),
        };
        fs::create_dir_all(layout.private_dir("c")).expect("state dir");
        let exit_code = layout.private_dir("c").join("exitcode");
        for (text, code) in [
            ("3\n", Some(3)),
            ("3", None),
            ("", None),
            ("-105\n", None),
            ("256\n", None),
            ("x\n", None),
            ("7".repeat(1 << 20).as_str(), None),
        ] {
            fs::write(&exit_code, text).expect("write");
            assert_eq!(read_exit_code(&layout, "c"), code, "{text:?}");
        }
        // Under run-as = agent a container could put something there
        // instead of a code: not followed, and a FIFO does not block.
        fs::remove_file(&exit_code).expect("remove");
        std::os::unix::fs::symlink("/etc/hostname", &exit_code).expect("link");
        assert_eq!(read_exit_code(&layout, "c"), None);
        fs::remove_file(&exit_code).expect("remove");
        nix::unistd::mkfifo(&exit_code, nix::sys::stat::Mode::from_bits_truncate(0o600))
            .expect("fifo");
        assert_eq!(read_exit_code(&layout, "c"), None);
        assert!(ended_at(&layout, "c") <= now_ms());
    }
}
