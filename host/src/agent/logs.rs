//! The agent's log server (YARN's NodeManager web app, logs only): a
//! container's stdout or stderr, whole or a byte range or its tail, to
//! whoever shows the secret the agent gave the resource manager at
//! registration. The resource manager proxies it to the app's owner.
//!
//! A log is the container's file: opened without following links or
//! blocking, refused unless regular ([`super::untrusted`]), sent in pieces
//! with a deadline on each, and only a few read at once.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::untrusted;
use crate::limits::MAX_LOG_CHUNK;

/// The header that says how long the whole file is.
pub const LOG_SIZE_HEADER: &str = "x-weft-log-size";

/// Which of a container's logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogStream {
    /// What the container wrote to its standard output.
    Stdout,
    /// What the container wrote to its standard error.
    Stderr,
}

impl LogStream {
    /// The stream a path or query names, `stdout` or `stderr`; None for
    /// anything else.
    pub fn parse(name: &str) -> Option<LogStream> {
        match name {
            "stdout" => Some(LogStream::Stdout),
            "stderr" => Some(LogStream::Stderr),
            _ => None,
        }
    }

    /// Its file's name in the container's log dir: `stdout` or `stderr`.
    pub fn file_name(self) -> &'static str {
        match self {
            LogStream::Stdout => "stdout",
            LogStream::Stderr => "stderr",
        }
    }
}

/// Whether `id` may name a directory: `[A-Za-z0-9_.-]+`, not `.`/`..`,
/// at most 256 bytes — so no id can reach outside the log dir.
pub fn is_safe_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= crate::limits::MAX_NAME_BYTES
        && id != "."
        && id != ".."
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// Where a container's log is beneath the log dir: `<app>/<container>/<stream>`.
pub fn log_file(app: &str, container: &str, stream: LogStream) -> Option<PathBuf> {
    (is_safe_id(app) && is_safe_id(container))
        .then(|| Path::new(app).join(container).join(stream.file_name()))
}

/// A byte range of a log: from `offset`, at most `length` bytes; or its
/// last `tail` bytes.
#[derive(Debug, Clone, Copy, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct LogRange {
    /// Where to start reading (bytes).
    pub offset: Option<u64>,
    /// How many bytes at most (4 MiB at most per request).
    pub length: Option<u64>,
    /// Read the last this many bytes instead.
    pub tail: Option<u64>,
}

impl LogRange {
    /// Where to start and how much to read, at most [`MAX_LOG_CHUNK`], of
    /// a file of `size` bytes.
    fn within(self, size: u64) -> (u64, u64) {
        match self.tail {
            Some(tail) => {
                let tail = tail.min(MAX_LOG_CHUNK);
                (size.saturating_sub(tail), tail)
            }
            None => (
                self.offset.unwrap_or(0).min(size),
                self.length.unwrap_or(MAX_LOG_CHUNK).min(MAX_LOG_CHUNK),
            ),
        }
    }
}

/// Log reads at once: each holds a thread of the blocking pool (which the
/// local agent shares with the server) until its file is read, so only a
/// few may, and the rest wait (up to [`READ_DEADLINE`]).
const MAX_READS: usize = 8;
/// How long one piece of a log may take to read, or a request to get its
/// turn; past it the request ends (a read that hangs keeps its turn, so
/// hung reads never take more than [`MAX_READS`] threads).
const READ_DEADLINE: Duration = Duration::from_secs(10);
/// A log is sent in pieces of this size, each read when the client has
/// taken the one before.
const PIECE: u64 = 64 << 10;

struct LogServer {
    log_dir: PathBuf,
    secret: String,
    reads: Arc<Semaphore>,
}

/// The log server's routes: GET /logs/{app}/{container}/{stdout|stderr}.
pub fn router(log_dir: PathBuf, secret: String) -> axum::Router {
    axum::Router::new()
        .route(
            "/logs/{app}/{container}/{stream}",
            axum::routing::get(serve_log),
        )
        .with_state(Arc::new(LogServer {
            log_dir,
            secret,
            reads: Arc::new(Semaphore::new(MAX_READS)),
        }))
}

async fn serve_log(
    State(server): State<Arc<LogServer>>,
    headers: HeaderMap,
    UrlPath((app, container, stream)): UrlPath<(String, String, String)>,
    Query(range): Query<LogRange>,
) -> Response {
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    // Compared as hashes, so the time taken says nothing about the secret.
    let hash = crate::security::tokens::hash;
    if server.secret.is_empty() || hash(presented) != hash(&server.secret) {
        return (StatusCode::UNAUTHORIZED, "a log needs the agent's secret").into_response();
    }
    let Some(stream) = LogStream::parse(&stream) else {
        return (StatusCode::NOT_FOUND, "a log is stdout or stderr").into_response();
    };
    let Some(relative) = log_file(&app, &container, stream) else {
        return (StatusCode::BAD_REQUEST, "not a container's id").into_response();
    };
    let Ok(Ok(permit)) =
        tokio::time::timeout(READ_DEADLINE, server.reads.clone().acquire_owned()).await
    else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "this node is reading other logs; try again",
        )
            .into_response();
    };
    let log_dir = server.log_dir.clone();
    let opened = tokio::task::spawn_blocking(move || {
        let opened = untrusted::open_regular(&log_dir, &relative)?;
        let (start, length) = range.within(opened.len);
        let mut file = opened.file;
        file.seek(SeekFrom::Start(start))?;
        Ok::<_, io::Error>((file, opened.len, length, permit))
    });
    let (file, size, length, permit) = match tokio::time::timeout(READ_DEADLINE, opened).await {
        Ok(Ok(Ok(opened))) => opened,
        Ok(Ok(Err(error))) if error.kind() == io::ErrorKind::NotFound => {
            return (StatusCode::NOT_FOUND, "no such log on this node").into_response();
        }
        // A link, a FIFO, a device: the container put it there.
        Ok(Ok(Err(error))) if error.kind() == io::ErrorKind::InvalidInput => {
            return (StatusCode::FORBIDDEN, error.to_string()).into_response();
        }
        Ok(Ok(Err(error))) => {
            return (StatusCode::INTERNAL_SERVER_ERROR, error.to_string()).into_response();
        }
        Ok(Err(error)) => {
            return (StatusCode::INTERNAL_SERVER_ERROR, error.to_string()).into_response();
        }
        Err(_) => {
            return (StatusCode::GATEWAY_TIMEOUT, "the log did not open in time").into_response();
        }
    };
    let body = axum::body::Body::from_stream(pieces(file, length, permit));
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(LOG_SIZE_HEADER, HeaderValue::from(size));
    response
}

/// `length` bytes at most of `file` from where it stands, a [`PIECE`] at a
/// time, each read on the blocking pool within [`READ_DEADLINE`] while
/// `permit` is held (by the read itself, so a read that hangs keeps it).
fn pieces(
    file: File,
    length: u64,
    permit: OwnedSemaphorePermit,
) -> impl futures_util::Stream<Item = io::Result<bytes::Bytes>> {
    futures_util::stream::unfold(Some((file, length, permit)), |state| async move {
        let (mut file, left, permit) = state?;
        if left == 0 {
            return None;
        }
        let read = tokio::task::spawn_blocking(move || {
            let mut piece = Vec::new();
            let result = (&mut file).take(left.min(PIECE)).read_to_end(&mut piece);
            (result.map(|_| piece), file, permit)
        });
        match tokio::time::timeout(READ_DEADLINE, read).await {
            Ok(Ok((Ok(piece), file, permit))) => {
                if piece.is_empty() {
                    return None;
                }
                let left = left - piece.len() as u64;
                Some((Ok(bytes::Bytes::from(piece)), Some((file, left, permit))))
            }
            Ok(Ok((Err(error), _, _))) => Some((Err(error), None)),
            Ok(Err(error)) => Some((Err(io::Error::other(error)), None)),
            Err(_) => Some((
                Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "a piece of the log did not read in time",
                )),
                None,
            )),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_cannot_leave_the_log_dir() {
        for bad in ["", ".", "..", "a/b", "../x", "a\0b", "x y"] {
            assert!(!is_safe_id(bad), "{bad:?}");
        }
        assert!(is_safe_id("container_1_0001_01_000001"));
        let path = log_file("application_1_0001", "c.1", LogStream::Stderr);
        assert_eq!(path.unwrap(), Path::new("application_1_0001/c.1/stderr"));
        assert_eq!(log_file("..", "c", LogStream::Stdout), None);
    }

    #[test]
    fn ranges_and_tails() {
        let whole = LogRange::default();
        assert_eq!(whole.within(10), (0, MAX_LOG_CHUNK));
        let tail = LogRange {
            tail: Some(3),
            ..Default::default()
        };
        assert_eq!(tail.within(10), (7, 3));
        assert_eq!(tail.within(2), (0, 3));
        let middle = LogRange {
            offset: Some(2),
            length: Some(3),
            tail: None,
        };
        assert_eq!(middle.within(10), (2, 3));
        let past = LogRange {
            offset: Some(50),
            length: Some(u64::MAX),
            tail: None,
        };
        assert_eq!(past.within(10), (10, MAX_LOG_CHUNK));
    }
}
