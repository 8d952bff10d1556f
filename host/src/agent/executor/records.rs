//! The agent's on-disk records of its containers (order, pid, kill, end,
//! the monitor's exit code), read as files a container could have touched,
//! and the recovery of an earlier agent's containers from them.

use super::*;

impl Executor {
    /// Reads `.weft/containers/*` (see the module docs).
    pub(super) fn recover(&mut self) -> Result<(), ExecutorError> {
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
    pub(super) fn remove_orphan_cgroups(&mut self) {
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

    pub(super) fn recover_one(&mut self, container_id: String) {
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
        let record = Record::read(layout, &container_id, RECORD);
        if let Some(end) = record.end.filter(|end| end.container_id == container_id) {
            self.containers.insert(container_id, Tracked::Ended);
            self.unreported.push(end);
            return;
        }
        let order = record.order.filter(|order| {
            order.container_id == container_id && check_id("app id", &order.app_id).is_ok()
        });
        let (kill, pid) = (record.kill, record.pid);
        let Some(order) = order else {
            // Whatever it runs cannot be watched without its order: stop it.
            if let Some(pid) = pid
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
        let cgroup = match &self.settings.cgroups {
            Ok(cgroups) => cgroups.existing(&container_id),
            Err(_) => None,
        };
        let mut process = ContainerProcess {
            container_id: container_id.clone(),
            app_id: order.app_id.clone(),
            resources: super::launch::order_resources(&order),
            pid: pid.map_or(0, |pid| pid.pid),
            start_ticks: pid.map_or(0, |pid| pid.start_ticks),
            started_ms: pid.map_or(0, |pid| pid.started_ms),
            ours: false,
            cgroup,
            kill: None,
            ended_at: None,
            end_signal: None,
            setting_up: None,
            set_up_failure: None,
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
            term_pending: false,
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

/// When the container's process ended: the time its monitor wrote the exit
/// code (the agent may learn of it much later: it was stopped, or down),
/// else now. Never later than now.
pub(super) fn ended_at(layout: &Layout, container_id: &str) -> u64 {
    let now = now_ms();
    read_exit(layout, container_id).map_or(now, |(_, written_ms)| written_ms.min(now))
}

/// The status the monitor wrote, if it did. The file is the container
/// user's, so only a shell status (0..=255) counts: a negative number
/// must not pass for one of Weft's own statuses. A few bytes are read, of
/// a regular file only.
pub(super) fn read_exit_code(layout: &Layout, container_id: &str) -> Option<i32> {
    read_exit(layout, container_id).map(|(code, _)| code)
}

/// The code the monitor wrote (it ends in a newline once whole) and when.
pub(super) fn read_exit(layout: &Layout, container_id: &str) -> Option<(i32, u64)> {
    let path = Layout::exit_code_file(container_id);
    let opened = untrusted::open_regular(&layout.private_root, &path).ok()?;
    let written_ms = opened.modified_ms;
    let bytes = untrusted::read_range(opened.file, 0, 16).ok()?;
    let text = std::str::from_utf8(&bytes).ok()?.strip_suffix('\n')?;
    let code: u8 = text.parse().ok()?;
    Some((i32::from(code), written_ms))
}

/// The most an agent's record of a container may hold: an order carries up
/// to 1 MiB of command and 1,000 variables of up to 64 KiB.
pub(super) const MAX_STATE_BYTES: u64 = 80 << 20;

/// One of the agent's records beneath `root`, read as a file a container
/// could have touched (a container run as the agent's own user can):
/// not through a link, not from a FIFO, at most [`MAX_STATE_BYTES`].
pub(super) fn read_state<T: for<'de> Deserialize<'de>>(root: &Path, relative: &Path) -> Option<T> {
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

/// The file in a container's private dir that records it: one JSON line
/// per fact, appended as it happens — `{"order": …}` before the process
/// is spawned, then `{"pid": …}`, any `{"kill": …}` and `{"end": …}`.
/// Appends, not a file each: every new file is an inode, and allocating
/// inodes is most of what a short container costs the agent on ext4
/// (BENCHMARKS.md). A line is whole once its newline is written; a torn
/// last line (the agent died writing it) is not read.
pub(super) const RECORD: &str = "record";

/// What a container's record says (the last of each kind; the first order).
#[derive(Debug, Default)]
pub(super) struct Record {
    pub(super) order: Option<LaunchOrder>,
    pub(super) pid: Option<PidRecord>,
    pub(super) kill: Option<KillRecord>,
    pub(super) end: Option<ContainerEnd>,
}

/// One line of a [`RECORD`].
#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum RecordLine {
    Order(Box<LaunchOrder>),
    Pid(PidRecord),
    Kill(KillRecord),
    End(ContainerEnd),
}

impl Record {
    /// Reads the record file `name` ([`RECORD`], or [`ACKNOWLEDGED`] once
    /// renamed) of `container_id`, with what an older agent kept in files of
    /// their own (`order.json`, `pid`, `kill`, `end.json`) for whatever it
    /// lacks. Read as a file a container could have touched (see
    /// [`read_state`]).
    pub(super) fn read(layout: &Layout, container_id: &str, name: &str) -> Record {
        let mut record = Record::default();
        let relative = Path::new(container_id).join(name);
        match untrusted::read_at_most(&layout.private_root, &relative, MAX_STATE_BYTES) {
            Ok(bytes) => {
                record.take_lines(&bytes, container_id, &layout.private_root.join(&relative))
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => {
                tracing::warn!(file = %layout.private_root.join(&relative).display(), %error, "cannot read agent state");
            }
        }
        if record.order.is_none() {
            record.order = layout.read_state(container_id, "order.json");
        }
        if record.pid.is_none() {
            record.pid = layout.read_state(container_id, "pid");
        }
        if record.kill.is_none() {
            record.kill = layout.read_state(container_id, "kill");
        }
        if record.end.is_none() && name == RECORD {
            record.end = layout.read_state(container_id, "end.json");
        }
        record
    }

    fn take_lines(&mut self, bytes: &[u8], container_id: &str, path: &Path) {
        // Whole lines only: what follows the last newline is torn.
        let whole = bytes
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(&bytes[..0], |last| &bytes[..last]);
        let lines = whole.split(|&b| b == b'\n').filter(|line| !line.is_empty());
        // At most MAX_STATE_BYTES were read: the lines are bounded too.
        let mut warned = false;
        for line in lines {
            match serde_json::from_slice::<RecordLine>(line) {
                Ok(RecordLine::Order(order)) => {
                    self.order.get_or_insert(*order);
                }
                Ok(RecordLine::Pid(pid)) => self.pid = Some(pid),
                Ok(RecordLine::Kill(kill)) => self.kill = Some(kill),
                // Another container's end must not hide this one's.
                Ok(RecordLine::End(end)) if end.container_id == container_id => {
                    self.end = Some(end);
                }
                Ok(RecordLine::End(_)) => {}
                // Said once a record: the rest of the file is no better.
                Err(error) if !warned => {
                    warned = true;
                    tracing::warn!(file = %path.display(), %error, "ignoring unreadable lines of agent state");
                }
                Err(_) => {}
            }
        }
    }
}

/// Appends `{"<kind>": value}` and a newline to the [`RECORD`] in a
/// container's private `dir`, making the file if it is not there (never
/// through a link), in one write.
pub(super) fn append_record<T: Serialize>(dir: &Path, kind: &str, value: &T) -> io::Result<()> {
    let mut line = Vec::with_capacity(256);
    line.extend_from_slice(b"{\"");
    line.extend_from_slice(kind.as_bytes());
    line.extend_from_slice(b"\":");
    serde_json::to_writer(&mut line, value).map_err(io::Error::other)?;
    line.extend_from_slice(b"}\n");
    // Never blocking on a FIFO, never writing anything but a regular file.
    let mut file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(dir.join(RECORD))?;
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(io::Error::other("the record is not a regular file"));
    }
    // After a torn line (the agent died writing it, or the disk was full)
    // a newline first, so this line is whole and read (an empty line is
    // skipped).
    if let Some(end) = metadata.len().checked_sub(1) {
        let mut last = [0u8; 1];
        let read = std::os::unix::fs::FileExt::read_at(&file, &mut last, end);
        if !matches!(read, Ok(1)) || last[0] != b'\n' {
            line.insert(0, b'\n');
        }
    }
    file.write_all(&line)
}

/// Temp file + rename, so a reader (a restarted agent) sees the whole
/// file or none. No fsync: this guards against the agent dying, not the
/// machine (which takes the containers with it).
pub(super) fn write_json_atomically<T: Serialize>(path: &Path, value: &T) -> io::Result<()> {
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

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
        })
}
