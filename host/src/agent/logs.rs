//! The agent's log server (YARN's NodeManager web app, logs only): a
//! container's stdout or stderr, whole or a byte range or its tail, to
//! whoever shows the secret the agent gave the resource manager at
//! registration. The resource manager proxies it to the app's owner.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

/// The most one request returns; a client reads on from where it stopped.
pub const MAX_LOG_CHUNK: u64 = 4 << 20;

/// The header that says how long the whole file is.
pub const LOG_SIZE_HEADER: &str = "x-weft-log-size";

/// Which of a container's logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogStream {
    Stdout,
    Stderr,
}

impl LogStream {
    pub fn parse(name: &str) -> Option<LogStream> {
        match name {
            "stdout" => Some(LogStream::Stdout),
            "stderr" => Some(LogStream::Stderr),
            _ => None,
        }
    }

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

/// Where a container's log is: `log_dir/<app>/<container>/<stream>`.
pub fn log_file(log_dir: &Path, app: &str, container: &str, stream: LogStream) -> Option<PathBuf> {
    (is_safe_id(app) && is_safe_id(container))
        .then(|| log_dir.join(app).join(container).join(stream.file_name()))
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

/// Reads `range` of the file at `path`: the bytes and the file's size.
pub fn read_range(path: &Path, range: LogRange) -> std::io::Result<(Vec<u8>, u64)> {
    let mut file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    let (start, length) = match range.tail {
        Some(tail) => {
            let tail = tail.min(MAX_LOG_CHUNK);
            (size.saturating_sub(tail), tail)
        }
        None => (
            range.offset.unwrap_or(0).min(size),
            range.length.unwrap_or(MAX_LOG_CHUNK).min(MAX_LOG_CHUNK),
        ),
    };
    file.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::new();
    file.take(length).read_to_end(&mut bytes)?;
    Ok((bytes, size))
}

struct LogServer {
    log_dir: PathBuf,
    secret: String,
}

/// The log server's routes: GET /logs/{app}/{container}/{stdout|stderr}.
pub fn router(log_dir: PathBuf, secret: String) -> axum::Router {
    axum::Router::new()
        .route(
            "/logs/{app}/{container}/{stream}",
            axum::routing::get(serve_log),
        )
        .with_state(Arc::new(LogServer { log_dir, secret }))
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
    let Some(path) = log_file(&server.log_dir, &app, &container, stream) else {
        return (StatusCode::BAD_REQUEST, "not a container's id").into_response();
    };
    match tokio::task::spawn_blocking(move || read_range(&path, range)).await {
        Ok(Ok((bytes, size))) => {
            let mut response = bytes.into_response();
            let headers = response.headers_mut();
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            headers.insert(LOG_SIZE_HEADER, HeaderValue::from(size));
            response
        }
        Ok(Err(error)) if error.kind() == std::io::ErrorKind::NotFound => {
            (StatusCode::NOT_FOUND, "no such log on this node").into_response()
        }
        Ok(Err(error)) => (StatusCode::INTERNAL_SERVER_ERROR, error.to_string()).into_response(),
        Err(error) => (StatusCode::INTERNAL_SERVER_ERROR, error.to_string()).into_response(),
    }
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
        let path = log_file(
            Path::new("/l"),
            "application_1_0001",
            "c.1",
            LogStream::Stderr,
        );
        assert_eq!(path.unwrap(), Path::new("/l/application_1_0001/c.1/stderr"));
    }

    #[test]
    fn ranges_and_tails() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stdout");
        std::fs::write(&path, b"0123456789").unwrap();
        let read = |range| read_range(&path, range).unwrap();
        assert_eq!(read(LogRange::default()), (b"0123456789".to_vec(), 10));
        let tail = LogRange {
            tail: Some(3),
            ..Default::default()
        };
        assert_eq!(read(tail).0, b"789");
        let middle = LogRange {
            offset: Some(2),
            length: Some(3),
            tail: None,
        };
        assert_eq!(read(middle).0, b"234");
        let past = LogRange {
            offset: Some(50),
            length: Some(3),
            tail: None,
        };
        assert_eq!(read(past).0, b"");
    }
}
