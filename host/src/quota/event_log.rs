//! The quota event log (`weft.quota.event-log`): every event the resource
//! manager gives the quota service, appended to a file as one JSON line in
//! `weft replay`'s format (docs/replay-events.md), so replaying the file
//! charges what the server charged.
//!
//! Lines wait in memory and are written once the store has committed the
//! event-loop turn they belong to ([`EventLog::write_committed`]): one write
//! a turn, no fsync, and the log never holds an event the store lost. If
//! commits keep failing, lines are written anyway once
//! [`MAX_UNWRITTEN_BYTES`] wait, so memory stays bounded.
//!
//! The file never grows past `weft.quota.event-log-max-mb`: the line that
//! would cross it, and every one after, is not logged, with one warning; a
//! replay of the file charges up to its last line. Nothing is ever
//! truncated: a restart appends (after a newline, if the file ends in a
//! partial line). `t` never goes back, not even across restarts (the last
//! line's `t` is read at open): a line the server dated earlier (a clock
//! stepped back, a container that ended before the server heard of it) is
//! dated at the previous line's `t`, and a finish keeps its own time in
//! `ended_ms`.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::ChargedContainer;
use super::events::{EventLine, LoggedContext, QuotaEvent};
use crate::policy::ChargeContext;
use crate::resources::Resources;

/// The property naming the file.
pub const PATH_PROPERTY: &str = "weft.quota.event-log";
/// The property bounding its size.
pub const MAX_MB_PROPERTY: &str = "weft.quota.event-log-max-mb";

/// Lines waiting for a commit beyond this many bytes are written without
/// waiting: a store refusing commits for long must not grow memory.
pub const MAX_UNWRITTEN_BYTES: usize = 8 << 20;

/// How much of the file's end is read at open to find the last line's `t`:
/// many times the longest line (four 256-byte names and some numbers).
const TAIL_BYTES: u64 = 16 << 10;

/// The quota event log cannot be opened for appending: which file, and why
/// (it stops `weft serve` at start).
#[derive(Debug, thiserror::Error)]
#[error("cannot open the quota event log {path} ({PATH_PROPERTY}): {reason}")]
pub struct EventLogError {
    path: String,
    reason: String,
}

/// The log of one server, open for appending.
#[derive(Debug)]
pub struct EventLog {
    path: PathBuf,
    file: File,
    /// Lines recorded and not yet written, whole lines only.
    unwritten: Vec<u8>,
    /// Bytes in the file plus those waiting: never above `max_bytes`.
    bytes: u64,
    max_bytes: u64,
    /// The last line's `t`: no line is dated before it.
    last_t: u64,
    /// No more lines are recorded: the size limit was reached or a write failed.
    stopped: bool,
}

impl EventLog {
    /// Opens the log `weft.quota.event-log` names, if it names one.
    pub fn open_configured(
        settings: &crate::config::QuotaEventLogSettings,
    ) -> Result<Option<EventLog>, EventLogError> {
        settings
            .path
            .as_deref()
            .map(|path| EventLog::open(path, settings.max_bytes))
            .transpose()
    }

    /// Opens (or creates) `path` to append to, at most `max_bytes` long.
    pub fn open(path: &Path, max_bytes: u64) -> Result<EventLog, EventLogError> {
        let refuse = |reason: String| EventLogError {
            path: path.display().to_string(),
            reason,
        };
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(path)
            .map_err(|e| refuse(e.to_string()))?;
        let metadata = file.metadata().map_err(|e| refuse(e.to_string()))?;
        if !metadata.is_file() {
            return Err(refuse("it is not a regular file".into()));
        }
        let tail = read_tail(&mut file, metadata.len())
            .map_err(|e| refuse(format!("cannot read its end: {e}")))?;
        let mut log = EventLog {
            path: path.to_path_buf(),
            file,
            unwritten: Vec::new(),
            bytes: metadata.len(),
            max_bytes,
            last_t: last_t(&tail),
            stopped: false,
        };
        if tail.last().is_some_and(|byte| *byte != b'\n') {
            tracing::warn!(
                path = %log.path.display(),
                "the quota event log ends in a partial line (a write was cut short); new lines start on the next line, and replay refuses the partial one until it is deleted"
            );
            log.file
                .write_all(b"\n")
                .map_err(|e| refuse(format!("cannot end its partial last line: {e}")))?;
            log.bytes += 1;
        }
        if log.bytes >= max_bytes {
            log.stop(&format!(
                "it is already {} bytes, {MAX_MB_PROPERTY} allows {max_bytes}",
                log.bytes
            ));
        }
        Ok(log)
    }

    /// Records `event`, which the quota service was given at `t`, to be
    /// written with its turn's commit.
    pub fn record(&mut self, t: u64, event: QuotaEvent) {
        if self.stopped {
            return;
        }
        let mut line = EventLine {
            t: t.max(self.last_t),
            event,
        };
        // The clock stepped back: the line keeps its own time aside.
        match &mut line.event {
            QuotaEvent::Finish { ended_ms, .. } if t < line.t && ended_ms.is_none() => {
                *ended_ms = Some(t);
            }
            QuotaEvent::Start { started_ms, .. } if t < line.t && started_ms.is_none() => {
                *started_ms = Some(t);
            }
            _ => {}
        }
        let before = self.unwritten.len();
        if let Err(error) = serde_json::to_writer(&mut self.unwritten, &line) {
            self.unwritten.truncate(before);
            tracing::error!(%error, "a quota event cannot be written as JSON; it is left out of the event log");
            return;
        }
        self.unwritten.push(b'\n');
        let length = (self.unwritten.len() - before) as u64;
        if self.bytes.saturating_add(length) > self.max_bytes {
            self.unwritten.truncate(before);
            self.stop(&format!(
                "it reached {MAX_MB_PROPERTY} ({} bytes)",
                self.max_bytes
            ));
            return;
        }
        self.bytes += length;
        self.last_t = line.t;
        if self.unwritten.len() > MAX_UNWRITTEN_BYTES {
            self.write_committed();
        }
    }

    /// Writes the lines recorded so far: the store has committed them. A
    /// failed write stops the log (what the write left is not known).
    pub fn write_committed(&mut self) {
        if self.unwritten.is_empty() {
            return;
        }
        let written = self.file.write_all(&self.unwritten);
        self.unwritten.clear();
        if let Err(error) = written {
            tracing::error!(path = %self.path.display(), %error, "cannot write the quota event log");
            self.stop("a write failed");
        }
    }

    /// Whether events are still logged.
    pub fn is_logging(&self) -> bool {
        !self.stopped
    }

    fn stop(&mut self, why: &str) {
        self.stopped = true;
        tracing::warn!(
            path = %self.path.display(),
            why,
            "the quota event log stops here: no more events are logged until the server starts again with room in it (move the file away; the new one starts with a recovery and replays on its own)"
        );
    }
}

/// The line of a container a recovery found running: charged up to the
/// later of its own charged-until time and the last QUOTA_COMPUTE
/// (`last_compute_ms`), as the quota service charges it on.
pub fn running(container: &ChargedContainer, charged_until_ms: u64) -> QuotaEvent {
    let context = &container.context;
    QuotaEvent::Running {
        container: container.id.clone(),
        app: context.app.clone(),
        project: context.project.clone(),
        user: context.user.clone(),
        memory_mb: container.resources.memory_mb,
        vcores: container.resources.vcores,
        gpus: container.resources.gpus,
        started_ms: container.started_ms,
        charged_until_ms,
        context: LoggedContext::of(context),
    }
}

/// The line of a container charged from now (or from `started_ms`, if it
/// started before the server learnt of it), in `context`.
pub fn start(
    container: &str,
    context: ChargeContext,
    resources: Resources,
    started_ms: Option<u64>,
) -> QuotaEvent {
    QuotaEvent::Start {
        container: container.into(),
        context: LoggedContext::of(&context),
        app: context.app,
        project: context.project,
        user: context.user,
        memory_mb: resources.memory_mb,
        vcores: resources.vcores,
        gpus: resources.gpus,
        started_ms,
    }
}

/// The last `TAIL_BYTES` of `file`, `size` bytes long.
fn read_tail(file: &mut File, size: u64) -> std::io::Result<Vec<u8>> {
    file.seek(SeekFrom::Start(size.saturating_sub(TAIL_BYTES)))?;
    let mut tail = Vec::new();
    file.take(TAIL_BYTES).read_to_end(&mut tail)?;
    Ok(tail)
}

/// The `t` of the last whole line in `tail` that has one; 0 if none does.
fn last_t(tail: &[u8]) -> u64 {
    #[derive(Deserialize)]
    struct Dated {
        t: u64,
    }
    let whole = match tail.iter().rposition(|byte| *byte == b'\n') {
        Some(end) => &tail[..end],
        None => return 0,
    };
    whole
        .split(|byte| *byte == b'\n')
        .rev()
        .find_map(|line| serde_json::from_slice::<Dated>(line).ok())
        .map_or(0, |dated| dated.t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quota::events;

    fn start(container: &str) -> QuotaEvent {
        QuotaEvent::Start {
            container: container.into(),
            app: "a".into(),
            project: "P".into(),
            user: "u".into(),
            memory_mb: 1024,
            vcores: 1,
            gpus: 0,
            started_ms: None,
            context: Default::default(),
        }
    }

    fn finish(container: &str) -> QuotaEvent {
        QuotaEvent::Finish {
            container: container.into(),
            ended_ms: None,
            exit_status: None,
        }
    }

    fn read(path: &Path) -> String {
        std::fs::read_to_string(path).unwrap()
    }

    #[test]
    fn lines_are_written_only_once_committed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut log = EventLog::open(&path, 1 << 20).unwrap();
        log.record(1_000, start("c"));
        log.record(2_000, QuotaEvent::Compute);
        assert_eq!(read(&path), "", "written before the commit");
        log.write_committed();
        let text = read(&path);
        assert_eq!(text.lines().count(), 2, "{text}");
        let lines = events::parse(&text).unwrap();
        assert_eq!(lines[0].t, 1_000);
        assert_eq!(lines[0].event, start("c"));
        assert_eq!(lines[1].event, QuotaEvent::Compute);
    }

    #[test]
    fn a_restart_appends_and_keeps_time_moving_forward() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut log = EventLog::open(&path, 1 << 20).unwrap();
        log.record(5_000, start("c"));
        log.write_committed();
        drop(log);

        let mut log = EventLog::open(&path, 1 << 20).unwrap();
        // The clock stepped back across the restart: the finish keeps its
        // time in ended_ms, dated at the last line's t.
        log.record(4_000, finish("c"));
        log.record(6_000, QuotaEvent::Compute);
        log.write_committed();
        let lines = events::parse(&read(&path)).unwrap();
        let times: Vec<u64> = lines.iter().map(|l| l.t).collect();
        assert_eq!(times, [5_000, 5_000, 6_000]);
        assert_eq!(
            lines[1].event,
            QuotaEvent::Finish {
                container: "c".into(),
                ended_ms: Some(4_000),
                exit_status: None,
            }
        );
    }

    #[test]
    fn the_log_stops_at_its_size_limit_and_stays_stopped_after_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let one_line = {
            let mut probe = EventLog::open(&dir.path().join("probe"), 1 << 20).unwrap();
            probe.record(1_000, QuotaEvent::Compute);
            probe.bytes
        };
        // Room for two compute lines and a little more.
        let max = 2 * one_line + one_line / 2;
        let mut log = EventLog::open(&path, max).unwrap();
        for t in [1_000, 2_000, 3_000, 4_000] {
            log.record(t, QuotaEvent::Compute);
        }
        assert!(!log.is_logging());
        log.write_committed();
        let text = read(&path);
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(text.len() as u64 <= max);
        // The lines it kept are whole and replay.
        assert_eq!(events::parse(&text).unwrap().len(), 2);
        drop(log);

        // Full at the next start: nothing more is logged.
        let mut log = EventLog::open(&path, 2 * one_line).unwrap();
        assert!(!log.is_logging());
        log.record(5_000, QuotaEvent::Compute);
        log.write_committed();
        assert_eq!(read(&path), text);
    }

    #[test]
    fn a_partial_last_line_is_ended_not_extended() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        std::fs::write(
            &path,
            "{\"t\": 7000, \"event\": \"compute\"}\n{\"t\": 8000, \"ev",
        )
        .unwrap();
        let mut log = EventLog::open(&path, 1 << 20).unwrap();
        assert_eq!(log.last_t, 7_000, "the last whole line's t");
        log.record(9_000, QuotaEvent::Compute);
        log.write_committed();
        let text = read(&path);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(lines[1], "{\"t\": 8000, \"ev");
        assert_eq!(lines[2], r#"{"t":9000,"event":"compute"}"#);
        let refused = events::parse(&text).unwrap_err().to_string();
        assert!(refused.starts_with("line 2: "), "{refused}");
    }

    #[test]
    fn waiting_lines_are_written_once_they_pass_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut log = EventLog::open(&path, 1 << 30).unwrap();
        let mut t = 0;
        while log.unwritten.len() <= MAX_UNWRITTEN_BYTES / 2 {
            t += 1;
            log.record(t, start(&format!("c{t}")));
        }
        assert_eq!(read(&path), "", "no commit, not yet past the bound");
        while std::fs::metadata(&path).unwrap().len() == 0 {
            t += 1;
            log.record(t, start(&format!("c{t}")));
            assert!(log.unwritten.len() <= MAX_UNWRITTEN_BYTES + 1024);
        }
        assert!(log.unwritten.is_empty());
        assert_eq!(events::parse(&read(&path)).unwrap().len() as u64, t);
    }

    #[test]
    fn a_path_that_cannot_be_opened_is_refused_naming_the_property() {
        let dir = tempfile::tempdir().unwrap();
        for path in [
            dir.path().join("no-such-dir").join("events.jsonl"),
            dir.path().to_path_buf(),
        ] {
            let message = EventLog::open(&path, 1 << 20).unwrap_err().to_string();
            assert!(message.contains(PATH_PROPERTY), "{message}");
            assert!(message.contains(&path.display().to_string()), "{message}");
        }
    }
}
