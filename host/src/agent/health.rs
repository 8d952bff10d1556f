//! The node's health checks (YARN's NodeHealthCheckerService): the disk
//! checker on the agent's work and log dirs and, if the operator sets one,
//! a health script. Each runs on a thread of its own, so a disk that
//! hangs or a slow script never holds the heartbeats (or the other check)
//! up; what they found last goes to the server with every heartbeat, and a
//! node that is not healthy gets no new containers.

use std::io::Read;
use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use super::AgentDirs;
use crate::config::{DiskCheckSettings, HealthScriptSettings, HealthSettings};
use crate::limits::{MAX_HEALTH_REPORT_BYTES, cut};
use crate::protocol::node::NodeHealth;

/// How long the agent's start waits for the checks' first round, so that
/// its registration carries what they found (a script still running then
/// is reported by a heartbeat later).
const FIRST_ROUND_WAIT: Duration = Duration::from_secs(5);
/// The longest the checks' thread sleeps before it looks whether the agent
/// stops.
const NAP: Duration = Duration::from_millis(100);
/// How often a running script is looked at: its output read, whether it
/// ended, whether it is past its timeout.
const SCRIPT_POLL: Duration = Duration::from_millis(20);
/// At most this much of a script's output is read between two looks at
/// its deadline (a script that writes without end is still timed out).
const READ_PER_POLL: usize = 1 << 20;
/// What of one output line is looked at: its start says whether it is an
/// ERROR line, and a report holds no more.
const MAX_LINE_BYTES: usize = MAX_HEALTH_REPORT_BYTES;

/// The agent's side of the checks: what they found last, read by its loop.
pub struct HealthChecker {
    /// Shared with the checks' thread; none without checks.
    shared: Option<Arc<Shared>>,
    /// The generation of what the loop saw last.
    seen: u64,
}

/// What the checks' threads publish.
struct Shared {
    /// What each check found wrong last: the disks', the script's.
    problems: Mutex<Problems>,
    /// Goes up by one whenever the health they make changes.
    generation: AtomicU64,
    /// Checks that have had their first round.
    first_rounds: AtomicU64,
    /// Set when the agent stops (its checker is dropped).
    stop: AtomicBool,
}

/// What the checks found wrong last, and the health that makes.
#[derive(Debug, Default)]
struct Problems {
    disk: Option<String>,
    script: Option<String>,
    health: Option<NodeHealth>,
}

/// Which check found a problem.
#[derive(Debug, Clone, Copy)]
enum Check {
    Disk,
    Script,
}

impl HealthChecker {
    /// No checks: the agent reports no health (the server takes it as
    /// healthy).
    pub fn none() -> HealthChecker {
        HealthChecker {
            shared: None,
            seen: 0,
        }
    }

    /// Starts the checks `settings` ask for on `dirs`, each on a thread of
    /// its own, and waits up to [`FIRST_ROUND_WAIT`] for their first round.
    /// A health script that is not an executable file, or named by a
    /// relative path, is refused, so a misconfigured node stops at start
    /// rather than run unhealthy.
    pub fn start(dirs: &AgentDirs, settings: &HealthSettings) -> anyhow::Result<HealthChecker> {
        if settings.disk.is_none() && settings.script.is_none() {
            return Ok(HealthChecker::none());
        }
        if let Some(script) = &settings.script {
            check_executable(&script.path)?;
        }
        let shared = Arc::new(Shared {
            problems: Mutex::new(Problems::default()),
            generation: AtomicU64::new(0),
            first_rounds: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let mut checks = 0;
        if let Some(disk) = settings.disk.clone() {
            let dirs = vec![
                ("local-dirs", dirs.work_dir.clone()),
                ("log-dirs", dirs.log_dir.clone()),
            ];
            let shared = shared.clone();
            spawn_check("weft-health-disks", move || {
                check_disks(&dirs, &disk, &shared)
            })?;
            checks += 1;
        }
        if let Some(script) = settings.script.clone() {
            let shared = shared.clone();
            spawn_check("weft-health-script", move || {
                check_with_script(&script, &shared)
            })?;
            checks += 1;
        }
        let give_up = Instant::now() + FIRST_ROUND_WAIT;
        while shared.first_rounds.load(Ordering::Acquire) < checks && Instant::now() < give_up {
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(HealthChecker {
            shared: Some(shared),
            seen: 0,
        })
    }

    /// What the checks found last, for the server; none without checks.
    pub fn health(&self) -> Option<NodeHealth> {
        let shared = self.shared.as_ref()?;
        let problems = shared.problems.lock().unwrap_or_else(|e| e.into_inner());
        Some(
            problems
                .health
                .clone()
                .unwrap_or_else(|| health_of(&problems)),
        )
    }

    /// Whether what the checks found changed since the last call.
    pub fn changed(&mut self) -> bool {
        let Some(shared) = &self.shared else {
            return false;
        };
        let generation = shared.generation.load(Ordering::Acquire);
        let changed = generation != self.seen;
        self.seen = generation;
        changed
    }
}

impl Drop for HealthChecker {
    fn drop(&mut self) {
        if let Some(shared) = &self.shared {
            shared.stop.store(true, Ordering::Relaxed);
        }
    }
}

/// Refuses a health script named by a relative path (found through PATH,
/// it need not be the file checked) or that is not an executable file.
fn check_executable(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let what = "yarn.nodemanager.health-checker.script.path";
    if !path.is_absolute() {
        bail!("{what}: {} is not an absolute path", path.display());
    }
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() && meta.permissions().mode() & 0o111 != 0 => Ok(()),
        Ok(_) => bail!("{what}: {} is not an executable file", path.display()),
        Err(error) => bail!("{what}: {}: {error}", path.display()),
    }
}

fn spawn_check(name: &str, check: impl FnOnce() + Send + 'static) -> anyhow::Result<()> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(check)
        .map(drop)
        .context("cannot start a thread of the node's health checks")
}

/// The disk checker's thread: every interval, until the agent stops.
fn check_disks(dirs: &[(&str, PathBuf)], settings: &DiskCheckSettings, shared: &Shared) {
    let mut first = true;
    while !shared.stop.load(Ordering::Relaxed) {
        let next = Instant::now() + settings.interval;
        publish(shared, Check::Disk, disk_problems(dirs, settings), first);
        first = false;
        nap_until(next, shared);
    }
}

/// The health script's thread: a run every interval (from the start of
/// one to the next), until the agent stops.
fn check_with_script(settings: &HealthScriptSettings, shared: &Shared) {
    let mut first = true;
    while !shared.stop.load(Ordering::Relaxed) {
        let next = Instant::now() + settings.interval;
        match run_script(settings, &shared.stop) {
            Some(outcome) => publish(shared, Check::Script, outcome, first),
            None => return,
        }
        first = false;
        nap_until(next, shared);
    }
}

/// Sleeps until `next`, looking every [`NAP`] whether the agent stops.
fn nap_until(next: Instant, shared: &Shared) {
    while !shared.stop.load(Ordering::Relaxed) {
        let left = next.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(NAP));
    }
}

/// Takes what `check` found and publishes the health it makes if that
/// changed, saying so in the log; counts the `first` round of a check.
fn publish(shared: &Shared, check: Check, problem: Option<String>, first: bool) {
    let mut problems = shared.problems.lock().unwrap_or_else(|e| e.into_inner());
    match check {
        Check::Disk => problems.disk = problem,
        Check::Script => problems.script = problem,
    }
    let health = health_of(&problems);
    if problems.health.as_ref() != Some(&health) {
        let was_healthy = problems.health.as_ref().is_none_or(|h| h.healthy);
        if !health.healthy {
            tracing::warn!(report = %health.report, "this node is unhealthy: it gets no new containers until its checks pass");
        } else if !was_healthy {
            tracing::info!("this node is healthy again");
        }
        problems.health = Some(health);
        shared.generation.fetch_add(1, Ordering::Release);
    }
    drop(problems);
    if first {
        shared.first_rounds.fetch_add(1, Ordering::AcqRel);
    }
}

/// The health the checks' problems make: the problems, one after the
/// other, in a report of at most [`MAX_HEALTH_REPORT_BYTES`] and no
/// control characters (the server refuses either).
fn health_of(problems: &Problems) -> NodeHealth {
    let found: Vec<&str> = [problems.disk.as_deref(), problems.script.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    let report: String = found
        .join("; ")
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    NodeHealth {
        healthy: found.is_empty(),
        report: cut(&report, MAX_HEALTH_REPORT_BYTES),
    }
}

/// What is wrong with the disks of `dirs`, if anything: each dir whose
/// disk is too full or cannot be measured, in YARN's words for its kind.
fn disk_problems(dirs: &[(&str, PathBuf)], settings: &DiskCheckSettings) -> Option<String> {
    let bad: Vec<String> = dirs
        .iter()
        .filter_map(|(kind, dir)| {
            let why = match DiskSpace::of(dir) {
                Ok(space) => space.too_full(settings)?,
                Err(error) => format!("cannot be measured: {error}"),
            };
            Some(format!("{kind} {} is bad: {why}", dir.display()))
        })
        .collect();
    (!bad.is_empty()).then(|| bad.join("; "))
}

/// How full a dir's file system is.
#[derive(Debug, Clone, Copy, PartialEq)]
struct DiskSpace {
    /// What is not free for use, in percent of the whole (YARN's measure:
    /// the blocks kept for root count as used, where `df` leaves them out).
    used_percent: f64,
    /// What is free for use, in MB.
    free_mb: u64,
}

impl DiskSpace {
    fn of(dir: &Path) -> nix::Result<DiskSpace> {
        let stat = nix::sys::statvfs::statvfs(dir)?;
        let unit = match u128::from(stat.fragment_size()) {
            0 => u128::from(stat.block_size()),
            size => size,
        };
        Ok(DiskSpace::from_blocks(
            u128::from(stat.blocks()) * unit,
            u128::from(stat.blocks_available()) * unit,
        ))
    }

    /// From the file system's size and what is free for use, in bytes.
    fn from_blocks(total: u128, available: u128) -> DiskSpace {
        let available = available.min(total);
        DiskSpace {
            used_percent: if total == 0 {
                100.0
            } else {
                (total - available) as f64 * 100.0 / total as f64
            },
            free_mb: u64::try_from(available >> 20).unwrap_or(u64::MAX),
        }
    }

    /// Why it is too full, if it is.
    fn too_full(&self, settings: &DiskCheckSettings) -> Option<String> {
        if self.used_percent > settings.max_used_percent {
            Some(format!(
                "{:.1}% used, above the threshold of {:.1}%",
                self.used_percent, settings.max_used_percent
            ))
        } else if self.free_mb < settings.min_free_mb {
            Some(format!(
                "{} MB free, below the minimum of {} MB",
                self.free_mb, settings.min_free_mb
            ))
        } else {
            None
        }
    }
}

/// Runs the health script once, in a process group of its own, reading
/// all its output for ERROR lines as it comes. YARN's rules: a line
/// starting with ERROR is a problem, and so are running past the timeout
/// and not starting; the exit status is not. The problem found (none for a
/// healthy node), or none at all if the agent stopped meanwhile.
fn run_script(settings: &HealthScriptSettings, stop: &AtomicBool) -> Option<Option<String>> {
    let started = Instant::now();
    let mut child = match Command::new(&settings.path)
        .args(&settings.args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
    {
        Ok(child) => child,
        Err(error) => {
            return Some(Some(format!(
                "the health script {} cannot run: {error}",
                settings.path.display()
            )));
        }
    };
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    // Its group goes with it, anything it left behind too: killed while
    // its own pid, not yet reaped, still names the group, so the kill
    // reaches nothing else.
    let kill_group_and_reap = |child: &mut std::process::Child| {
        let _ = nix::sys::signal::killpg(pid, nix::sys::signal::Signal::SIGKILL);
        let _ = child.wait();
    };
    let mut output = child.stdout.take().map(Output::new);
    let mut errors = ErrorLines::default();
    loop {
        match &mut output {
            Some(out) => {
                out.wait(SCRIPT_POLL);
                if out.read_into(&mut errors) {
                    // Closed: whatever else happens, it says no more.
                    output = None;
                }
            }
            None => std::thread::sleep(SCRIPT_POLL),
        }
        if ended(pid) {
            kill_group_and_reap(&mut child);
            // What it wrote before it ended; a process that escaped its
            // group may hold the pipe open, and is not waited for.
            if let Some(out) = &mut output {
                out.read_into(&mut errors);
            }
            return Some(errors.report());
        }
        if stop.load(Ordering::Relaxed) {
            kill_group_and_reap(&mut child);
            return None;
        }
        if started.elapsed() >= settings.timeout {
            kill_group_and_reap(&mut child);
            return Some(Some(format!(
                "the health script timed out after {} ms",
                settings.timeout.as_millis()
            )));
        }
    }
}

/// Whether process `pid`, a child, ended (without reaping it).
fn ended(pid: nix::unistd::Pid) -> bool {
    use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT | WaitPidFlag::WNOHANG;
    !matches!(waitid(Id::Pid(pid), flags), Ok(WaitStatus::StillAlive))
}

/// A script's output pipe, read without blocking.
struct Output {
    pipe: ChildStdout,
}

impl Output {
    fn new(pipe: ChildStdout) -> Output {
        use nix::fcntl::{FcntlArg, OFlag, fcntl};
        let flags = fcntl(pipe.as_fd(), FcntlArg::F_GETFL)
            .map_or(OFlag::empty(), OFlag::from_bits_truncate);
        let _ = fcntl(pipe.as_fd(), FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK));
        Output { pipe }
    }

    /// Waits until there is output, or the pipe closes, or `timeout`.
    fn wait(&self, timeout: Duration) {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        let mut fds = [PollFd::new(&self.pipe, PollFlags::IN)];
        let until = Timespec::try_from(timeout).unwrap_or(Timespec {
            tv_sec: 0,
            tv_nsec: 20_000_000,
        });
        let _ = poll(&mut fds, Some(&until));
    }

    /// Reads what there is (at most [`READ_PER_POLL`]) into `errors`;
    /// whether the pipe is closed (or failed).
    fn read_into(&mut self, errors: &mut ErrorLines) -> bool {
        let mut buffer = [0u8; 16 << 10];
        let mut read = 0;
        while read < READ_PER_POLL {
            match self.pipe.read(&mut buffer) {
                Ok(0) => return true,
                Ok(n) => {
                    errors.feed(&buffer[..n]);
                    read += n;
                }
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => return false,
                Err(_) => return true,
            }
        }
        false
    }
}

/// The ERROR lines of a script's output, gathered as it comes, up to what
/// a report holds.
#[derive(Debug, Default)]
struct ErrorLines {
    /// The lines kept, together at most [`MAX_HEALTH_REPORT_BYTES`].
    kept: Vec<String>,
    kept_bytes: usize,
    /// The start of the line being read (at most [`MAX_LINE_BYTES`]).
    line: Vec<u8>,
}

impl ErrorLines {
    fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let (part, rest, ends) = match bytes.iter().position(|&b| b == b'\n') {
                Some(at) => (&bytes[..at], &bytes[at + 1..], true),
                None => (bytes, &[][..], false),
            };
            let room = MAX_LINE_BYTES.saturating_sub(self.line.len());
            self.line.extend_from_slice(&part[..part.len().min(room)]);
            if ends {
                self.end_line();
            }
            bytes = rest;
        }
    }

    fn end_line(&mut self) {
        if self.line.starts_with(b"ERROR") && self.kept_bytes < MAX_HEALTH_REPORT_BYTES {
            let line = String::from_utf8_lossy(&self.line).trim_end().to_string();
            self.kept_bytes += line.len();
            self.kept.push(line);
        }
        self.line.clear();
    }

    /// The report, if there were ERROR lines (the last line counts without
    /// its newline).
    fn report(mut self) -> Option<String> {
        self.end_line();
        (!self.kept.is_empty())
            .then(|| format!("the health script says: {}", self.kept.join(" / ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk(max_used_percent: f64, min_free_mb: u64) -> DiskCheckSettings {
        DiskCheckSettings {
            interval: Duration::from_secs(1),
            max_used_percent,
            min_free_mb,
        }
    }

    #[test]
    fn a_disk_is_too_full_past_the_percentage_or_below_the_free_space() {
        let gib = 1u128 << 30;
        // 100 GiB, 5 GiB free for use: 95 % used.
        let space = DiskSpace::from_blocks(100 * gib, 5 * gib);
        assert_eq!(space.free_mb, 5 * 1024);
        assert_eq!(
            space.too_full(&disk(90.0, 0)).as_deref(),
            Some("95.0% used, above the threshold of 90.0%")
        );
        assert_eq!(space.too_full(&disk(95.0, 0)), None);
        assert_eq!(
            space.too_full(&disk(100.0, 6 * 1024)).as_deref(),
            Some("5120 MB free, below the minimum of 6144 MB")
        );
        // A file system that says it has no size, or more free than its
        // size, is taken as full, not divided by.
        assert_eq!(DiskSpace::from_blocks(0, 0).used_percent, 100.0);
        assert_eq!(DiskSpace::from_blocks(gib, 2 * gib).used_percent, 0.0);
    }

    #[test]
    fn a_real_dir_is_measured_and_a_missing_one_is_bad() {
        let dir = tempfile::tempdir().unwrap();
        let dirs = vec![("local-dirs", dir.path().to_path_buf())];
        assert_eq!(disk_problems(&dirs, &disk(100.0, 0)), None);
        let full = disk_problems(&dirs, &disk(100.0, u64::MAX)).unwrap();
        assert!(
            full.starts_with(&format!("local-dirs {} is bad: ", dir.path().display())),
            "{full}"
        );
        let gone = vec![("log-dirs", dir.path().join("missing"))];
        let bad = disk_problems(&gone, &disk(100.0, 0)).unwrap();
        assert!(bad.contains("cannot be measured"), "{bad}");
    }

    #[test]
    fn only_lines_starting_with_error_count_wherever_they_come() {
        let lines = |chunks: &[&[u8]]| {
            let mut errors = ErrorLines::default();
            for chunk in chunks {
                errors.feed(chunk);
            }
            errors.report()
        };
        assert_eq!(lines(&[b"all good\nwarning: ERROR later\n"]), None);
        // Split across reads, and the last line without its newline.
        assert_eq!(
            lines(&[b"ok\nERR", b"OR disk /data failed\nERROR: fan\r"]).as_deref(),
            Some("the health script says: ERROR disk /data failed / ERROR: fan")
        );
        // After megabytes of other output, and in a line far too long to
        // keep whole.
        let noise = vec![b'x'; 3 << 20];
        let long = [b"ERROR ".as_slice(), &vec![b'y'; 100_000], b"\n"].concat();
        let report = lines(&[&noise, b"\n", &long]).unwrap();
        assert!(
            report.starts_with("the health script says: ERROR yyy"),
            "{}",
            &report[..40]
        );
        assert!(report.len() < 2 * MAX_HEALTH_REPORT_BYTES);
    }

    #[test]
    fn a_report_has_no_control_characters_and_is_cut_to_what_the_server_takes() {
        let problems = Problems {
            disk: Some("local-dirs /a\nb is bad".into()),
            script: Some(format!("ERROR \u{1b}[31m{}", "z".repeat(5000))),
            health: None,
        };
        let health = health_of(&problems);
        assert!(!health.healthy);
        assert!(
            health
                .report
                .starts_with("local-dirs /a b is bad; ERROR  [31mzzz"),
            "{}",
            &health.report[..40]
        );
        assert_eq!(health.report.len(), MAX_HEALTH_REPORT_BYTES);
    }

    fn script(dir: &Path, body: &str, timeout_ms: u64) -> HealthScriptSettings {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("check.sh");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        HealthScriptSettings {
            path,
            args: vec!["an-arg".into()],
            interval: Duration::from_millis(50),
            timeout: Duration::from_millis(timeout_ms),
        }
    }

    fn checker_with(dir: &Path, script: HealthScriptSettings) -> HealthChecker {
        let dirs = AgentDirs {
            work_dir: dir.to_path_buf(),
            log_dir: dir.to_path_buf(),
        };
        HealthChecker::start(
            &dirs,
            &HealthSettings {
                disk: None,
                script: Some(script),
            },
        )
        .unwrap()
    }

    /// Looks at `checker` until `done` holds of its health, for at most 10 s.
    fn until(checker: &HealthChecker, done: impl Fn(&NodeHealth) -> bool) -> NodeHealth {
        let give_up = Instant::now() + Duration::from_secs(10);
        loop {
            let health = checker.health().unwrap();
            if done(&health) || Instant::now() > give_up {
                return health;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn a_script_reports_errors_at_start_and_then_health_again() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        std::fs::write(&state, "ERROR the disk is failing\n").unwrap();
        let body = format!("echo \"checked $1\"; cat {}; exit 3", state.display());
        let mut checker = checker_with(dir.path(), script(dir.path(), &body, 5_000));
        // The first round is in before the start returns.
        let health = checker.health().unwrap();
        assert_eq!(
            health.report,
            "the health script says: ERROR the disk is failing"
        );
        assert!(checker.changed());
        assert!(!checker.changed());
        // Its exit status (3) does not count; no ERROR line is healthy.
        std::fs::write(&state, "fine\n").unwrap();
        assert!(until(&checker, |h| h.healthy).healthy);
        assert!(checker.changed());
    }

    #[test]
    fn a_slow_script_does_not_hold_the_disk_check_up() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let body = format!("echo $$ > {}; exec sleep 60", pid_file.display());
        let dirs = AgentDirs {
            work_dir: dir.path().to_path_buf(),
            log_dir: dir.path().to_path_buf(),
        };
        let settings = HealthSettings {
            disk: Some(disk(100.0, u64::MAX)),
            script: Some(script(dir.path(), &body, 120_000)),
        };
        // The start gives up waiting for the script's first round; the
        // disks' is in.
        let checker = HealthChecker::start(&dirs, &settings).unwrap();
        let health = checker.health().unwrap();
        assert!(
            health.report.starts_with("local-dirs "),
            "{}",
            health.report
        );
        // Stopping the agent ends the run, its process with it.
        let script_pid = read_pid(&pid_file);
        drop(checker);
        wait_gone(script_pid);
    }

    /// Whether process `pid` is gone (or a zombie).
    fn gone(pid: i32) -> bool {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .chars()
            .next();
        stat.is_empty() || state == Some('Z')
    }

    fn wait_gone(pid: i32) {
        let give_up = Instant::now() + Duration::from_secs(10);
        while !gone(pid) {
            assert!(Instant::now() < give_up, "process {pid} still runs");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn read_pid(path: &Path) -> i32 {
        let give_up = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(pid) = std::fs::read_to_string(path)
                .unwrap_or_default()
                .trim()
                .parse()
            {
                return pid;
            }
            assert!(Instant::now() < give_up, "no pid in {}", path.display());
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn a_script_past_its_timeout_is_killed_with_what_it_started() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        // A child of its own that would outlive it, holding the output.
        let body = format!("sleep 600 & echo $! > {}; wait", pid_file.display());
        let checker = checker_with(dir.path(), script(dir.path(), &body, 300));
        let health = until(&checker, |h| !h.healthy);
        assert_eq!(health.report, "the health script timed out after 300 ms");
        wait_gone(read_pid(&pid_file));
    }

    /// Kills, when dropped, every process whose pid is a line of a file:
    /// what a test's scripts started outside their process group, gone
    /// whether the test passes or fails.
    struct KillListed(PathBuf);

    impl Drop for KillListed {
        fn drop(&mut self) {
            let listed = std::fs::read_to_string(&self.0).unwrap_or_default();
            for pid in listed.lines().filter_map(|line| line.trim().parse().ok()) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
    }

    #[test]
    fn a_script_that_leaves_a_daemon_holding_its_output_is_judged_on_what_it_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("daemons");
        let _daemons = KillListed(pid_file.clone());
        // Each run leaves a daemon out of its group (setsid) that keeps
        // stdout open: the run ends with the script, its ERROR line
        // counts, and nothing piles up run after run.
        let body = format!(
            "setsid sleep 600 & echo $! >> {}; echo 'ERROR from the script'",
            pid_file.display()
        );
        let checker = checker_with(dir.path(), script(dir.path(), &body, 5_000));
        let health = until(&checker, |h| !h.healthy);
        assert_eq!(
            health.report,
            "the health script says: ERROR from the script"
        );
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(
            checker.health().unwrap().report,
            "the health script says: ERROR from the script",
            "later runs are judged the same"
        );
        // The checker's thread is not joined: let a run in flight end (and
        // list its daemon) before the guard kills what is listed.
        drop(checker);
        std::thread::sleep(Duration::from_millis(200));
    }

    #[test]
    fn a_script_that_is_relative_or_not_executable_is_refused_and_one_that_cannot_run_is_unhealthy()
    {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let mut settings = script(dir.path(), "true", 1_000);
        let dirs = AgentDirs {
            work_dir: dir.path().to_path_buf(),
            log_dir: dir.path().to_path_buf(),
        };
        let health = |script| HealthSettings {
            disk: None,
            script: Some(script),
        };
        let refusal = |settings: &HealthScriptSettings| {
            HealthChecker::start(&dirs, &health(settings.clone()))
                .err()
                .unwrap()
                .to_string()
        };
        let relative = HealthScriptSettings {
            path: PathBuf::from("check.sh"),
            ..settings.clone()
        };
        assert!(refusal(&relative).contains("is not an absolute path"));
        std::fs::set_permissions(&settings.path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(refusal(&settings).contains("is not an executable file"));
        // Executable, but its interpreter is missing: it cannot run.
        std::fs::write(&settings.path, "#!/nonexistent/shell\n").unwrap();
        std::fs::set_permissions(&settings.path, std::fs::Permissions::from_mode(0o755)).unwrap();
        settings.interval = Duration::from_secs(60);
        let checker = HealthChecker::start(&dirs, &health(settings)).unwrap();
        let health = checker.health().unwrap();
        assert!(!health.healthy);
        assert!(health.report.contains("cannot run"), "{}", health.report);
    }
}
