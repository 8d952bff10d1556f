//! What a guest writes — its stdout, its stderr and its `host::log` lines —
//! sent line by line into tracing and kept, the last few lines per store, so
//! a failed call can say what the guest wrote before it failed (a Python
//! traceback, a Rust panic message).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

use super::CallError;

/// The most lines kept per store.
const KEPT_LINES: usize = 32;
/// The most bytes of one line kept (a longer line is cut, and a partial line
/// this long is taken as a whole one).
const LINE_BYTES: usize = 1024;
/// The most bytes of all kept lines together.
const KEPT_BYTES: usize = 8 << 10;

/// One store's recent output. Shared: the store's WASI streams write into
/// it, its `host::log` import too, and a failed call reads it.
#[derive(Debug, Clone)]
pub(super) struct GuestOutputTail(Arc<Mutex<Tail>>);

#[derive(Debug)]
struct Tail {
    policy: Arc<str>,
    /// Whole lines, oldest first, each prefixed with where it came from.
    lines: VecDeque<String>,
    bytes: usize,
    /// What stdout and stderr wrote since their last line break.
    partial_stdout: String,
    partial_stderr: String,
}

impl GuestOutputTail {
    pub(super) fn new(policy: Arc<str>) -> GuestOutputTail {
        GuestOutputTail(Arc::new(Mutex::new(Tail {
            policy,
            lines: VecDeque::new(),
            bytes: 0,
            partial_stdout: String::new(),
            partial_stderr: String::new(),
        })))
    }

    /// The writer of the guest's stdout or stderr (`stream` names which).
    pub(super) fn stream(&self, stream: Stream) -> GuestStream {
        GuestStream {
            tail: self.clone(),
            stream,
        }
    }

    /// Keeps a `host::log` message, one entry per line of it. Tracing has
    /// it already (the import logs it at its level).
    pub(super) fn log(&self, level: impl std::fmt::Debug, message: &str) {
        // The bindings' enums print as `Level::Warn`.
        let level = format!("{level:?}");
        let level = level.rsplit("::").next().unwrap_or_default();
        let source = format!("log {}", level.to_lowercase());
        let mut tail = self.lock();
        for line in message.lines().filter(|line| !line.trim().is_empty()) {
            tail.keep(&source, line);
        }
    }

    /// The kept lines, oldest first, with what the streams wrote since
    /// their last line break.
    pub(super) fn recent(&self) -> Vec<String> {
        let tail = self.lock();
        let mut lines: Vec<String> = tail.lines.iter().cloned().collect();
        for (stream, partial) in [
            (Stream::Stdout, &tail.partial_stdout),
            (Stream::Stderr, &tail.partial_stderr),
        ] {
            if !partial.trim().is_empty() {
                lines.push(format!("[{}] {partial}", stream.name()));
            }
        }
        lines
    }

    /// `error`, telling what the guest wrote lately if it trapped or ran out
    /// of memory (a timeout or a refusal says enough by itself).
    pub(super) fn attach_to(&self, error: CallError) -> CallError {
        let lines = self.recent();
        if lines.is_empty() {
            return error;
        }
        let told = |message: String| {
            format!(
                "{message}\nwhat the guest wrote last ({} lines):\n  {}",
                lines.len(),
                lines.join("\n  ")
            )
        };
        match error {
            CallError::Trap(message) => CallError::Trap(told(message)),
            CallError::MemoryLimit(message) => CallError::MemoryLimit(told(message)),
            other => other,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Tail> {
        // A panic elsewhere while holding it leaves lines, nothing to repair.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Tail {
    /// Adds what `stream` wrote: whole lines are traced and kept, the rest
    /// waits for its line break (or until it is a line's length).
    fn write(&mut self, stream: Stream, text: &str) {
        let mut partial = std::mem::take(self.partial(stream));
        for piece in text.split_inclusive('\n') {
            let ended = piece.ends_with('\n');
            push_bounded(&mut partial, piece.trim_end_matches(['\n', '\r']));
            if ended || partial.len() >= LINE_BYTES {
                self.line(stream, &partial);
                partial.clear();
            }
        }
        *self.partial(stream) = partial;
    }

    fn partial(&mut self, stream: Stream) -> &mut String {
        match stream {
            Stream::Stdout => &mut self.partial_stdout,
            Stream::Stderr => &mut self.partial_stderr,
        }
    }

    fn line(&mut self, stream: Stream, line: &str) {
        if line.trim().is_empty() {
            return;
        }
        tracing::info!(target: "weft::policy::guest", policy = &*self.policy, stream = stream.name(), "{line}");
        self.keep(&format!("[{}]", stream.name()), line);
    }

    fn keep(&mut self, source: &str, line: &str) {
        let mut kept = String::with_capacity(source.len() + 1 + line.len().min(LINE_BYTES));
        kept.push_str(source);
        kept.push(' ');
        push_bounded(&mut kept, line);
        self.bytes += kept.len();
        self.lines.push_back(kept);
        while self.lines.len() > KEPT_LINES || self.bytes > KEPT_BYTES {
            let Some(oldest) = self.lines.pop_front() else {
                break;
            };
            self.bytes -= oldest.len();
        }
    }
}

impl Drop for Tail {
    /// A last line without a line break still reaches the log.
    fn drop(&mut self) {
        for stream in [Stream::Stdout, Stream::Stderr] {
            let partial = std::mem::take(self.partial(stream));
            if !partial.trim().is_empty() {
                tracing::info!(target: "weft::policy::guest", policy = &*self.policy, stream = stream.name(), "{partial}");
            }
        }
    }
}

/// Appends as much of `text` to `line` as keeps it within [`LINE_BYTES`],
/// cut at a character boundary.
fn push_bounded(line: &mut String, text: &str) {
    let room = LINE_BYTES.saturating_sub(line.len());
    let mut end = text.len().min(room);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    line.push_str(&text[..end]);
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    fn name(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }
}

/// A guest's stdout or stderr.
#[derive(Clone)]
pub(super) struct GuestStream {
    tail: GuestOutputTail,
    stream: Stream,
}

impl IsTerminal for GuestStream {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for GuestStream {
    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl tokio::io::AsyncWrite for GuestStream {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.tail
            .lock()
            .write(self.stream, &String::from_utf8_lossy(buf));
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tail() -> GuestOutputTail {
        GuestOutputTail::new("test".into())
    }

    fn write(tail: &GuestOutputTail, stream: Stream, text: &str) {
        tail.lock().write(stream, text);
    }

    #[test]
    fn lines_are_joined_across_writes_and_kept_with_their_stream() {
        let tail = tail();
        write(
            &tail,
            Stream::Stderr,
            "Traceback (most recent call last):\n  File",
        );
        write(&tail, Stream::Stderr, " \"app.py\", line 3\n");
        write(&tail, Stream::Stdout, "no line break yet");
        #[derive(Debug)]
        enum Level {
            Warn,
        }
        tail.log(Level::Warn, "two\nlines");
        assert_eq!(
            tail.recent(),
            [
                "[stderr] Traceback (most recent call last):",
                "[stderr]   File \"app.py\", line 3",
                "log warn two",
                "log warn lines",
                "[stdout] no line break yet",
            ]
        );
    }

    #[test]
    fn the_tail_is_bounded_in_lines_line_length_and_bytes() {
        let tail = tail();
        for i in 0..100 {
            write(&tail, Stream::Stdout, &format!("line {i}\n"));
        }
        let recent = tail.recent();
        assert_eq!(recent.len(), KEPT_LINES);
        assert_eq!(recent.last().unwrap(), "[stdout] line 99");

        let tail = self::tail();
        // One endless line without a break, in many writes.
        for _ in 0..100 {
            write(&tail, Stream::Stderr, &"é".repeat(300));
        }
        let recent = tail.recent();
        assert!(recent.iter().all(|line| line.len() <= LINE_BYTES + 16));
        let total: usize = recent.iter().map(String::len).sum();
        assert!(total <= KEPT_BYTES + LINE_BYTES + 16, "{total}");
    }

    #[test]
    fn a_trap_tells_what_the_guest_wrote() {
        let tail = tail();
        let bare = CallError::Trap("wasm trap: wasm `unreachable` instruction executed".into());
        assert_eq!(
            tail.attach_to(bare.clone()),
            bare,
            "nothing written, nothing added"
        );
        write(
            &tail,
            Stream::Stderr,
            "ZeroDivisionError: division by zero\n",
        );
        let CallError::Trap(message) = tail.attach_to(bare) else {
            panic!("still a trap");
        };
        assert!(
            message.ends_with("(1 lines):\n  [stderr] ZeroDivisionError: division by zero"),
            "{message}"
        );
        assert_eq!(tail.attach_to(CallError::Timeout), CallError::Timeout);
    }
}
