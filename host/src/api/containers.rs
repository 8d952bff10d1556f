//! An app's containers and their logs: where each ran and how it ended, and
//! its stdout or stderr, fetched from the agent of its node for the app's
//! user and administrators (YARN's `yarn logs`).

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use super::extract::{ApiPath, ApiQuery};
use super::openapi::RemoteException;
use super::{ApiError, ApiState};
use crate::agent::logs::{LOG_SIZE_HEADER, LogRange, LogStream};
use crate::cluster::ContainerRecord;
use crate::limits::MAX_LOG_CHUNK;
use crate::rm::ResourceManager;
use crate::security::Caller;

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct ContainersResponse {
    containers: Vec<ContainerRecord>,
}

/// The containers of an app, newest last (at most 10,000).
#[utoipa::path(get, path = "/ws/v1/cluster/apps/{id}/containers", tag = "apps",
    params(("id" = String, Path, description = "The application id")),
    responses((status = 200, body = ContainersResponse), (status = 401, body = RemoteException),
        (status = 403, body = RemoteException), (status = 404, body = RemoteException)))]
pub(super) async fn containers(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<ContainersResponse>, ApiError> {
    let containers = state
        .rm
        .with(move |rm: &mut ResourceManager| rm.app_containers(&caller, &id))
        .await??;
    Ok(Json(ContainersResponse { containers }))
}

/// A container's stdout or stderr: whole (4 MiB at most per request), a
/// byte range (`offset`, `length`) or its `tail`; the header
/// `X-Weft-Log-Size` gives the file's whole length, to read on from.
#[utoipa::path(get, path = "/ws/v1/cluster/apps/{id}/containers/{container}/logs/{stream}",
    tag = "apps",
    params(("id" = String, Path, description = "The application id"),
        ("container" = String, Path, description = "The container id"),
        ("stream" = String, Path, description = "stdout or stderr"), LogRange),
    responses((status = 200, body = String, content_type = "text/plain"),
        (status = 400, body = RemoteException), (status = 401, body = RemoteException),
        (status = 403, body = RemoteException), (status = 404, body = RemoteException),
        (status = 502, body = RemoteException)))]
pub(super) async fn log(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath((app, container, stream)): ApiPath<(String, String, String)>,
    ApiQuery(range): ApiQuery<LogRange>,
) -> Result<Response, ApiError> {
    let stream = LogStream::parse(&stream).ok_or_else(|| {
        ApiError::not_found(format!("no log {stream:?}: a log is stdout or stderr"))
    })?;
    for (field, value) in [
        ("offset", range.offset),
        ("length", range.length),
        ("tail", range.tail),
    ] {
        if value.is_some_and(|v| v > crate::limits::MAX_TIME_MS) {
            return Err(ApiError::bad_request(format!("{field} is too large")));
        }
    }
    let wanted = container.clone();
    let location = state
        .rm
        .with(move |rm: &mut ResourceManager| rm.container_log(&caller, &app, &wanted))
        .await??;
    let mut url = format!(
        "{}/logs/{}/{}/{}",
        location.http_address,
        location.app_id,
        container,
        stream.file_name()
    );
    let mut query = Vec::new();
    if let Some(tail) = range.tail {
        query.push(format!("tail={}", tail.min(MAX_LOG_CHUNK)));
    }
    if let Some(offset) = range.offset {
        query.push(format!("offset={offset}"));
    }
    if let Some(length) = range.length {
        query.push(format!("length={}", length.min(MAX_LOG_CHUNK)));
    }
    if !query.is_empty() {
        url = format!("{url}?{}", query.join("&"));
    }
    // The agent's answer is read off the runtime's workers (a blocking
    // client), a few at once: a slow or hostile agent holds a thread of the
    // blocking pool (shared with accounting, policy loads, the local
    // agent's log reads) for up to the client's timeout, never many.
    let permit = tokio::time::timeout(FETCH_WAIT, LOG_FETCHES.acquire())
        .await
        .map_err(|_| {
            ApiError::unavailable(format!(
                "{MAX_LOG_FETCHES} logs are being fetched from agents; try again"
            ))
        })?
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let fetched = tokio::task::spawn_blocking(move || {
        let fetched = fetch_log(&url, &location.secret);
        drop(permit);
        fetched
    })
    .await
    .map_err(|e| ApiError::internal(e.to_string()))??;
    let mut response = fetched.bytes.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(LOG_SIZE_HEADER, HeaderValue::from(fetched.size));
    Ok(response)
}

/// Log fetches from agents at once, and how long one waits for its turn.
const MAX_LOG_FETCHES: usize = 16;
const FETCH_WAIT: std::time::Duration = std::time::Duration::from_secs(10);
static LOG_FETCHES: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(MAX_LOG_FETCHES);

struct FetchedLog {
    bytes: Vec<u8>,
    size: u64,
}

fn fetch_log(url: &str, secret: &str) -> Result<FetchedLog, ApiError> {
    // One client for every log fetch (it keeps connections to agents).
    static AGENTS: std::sync::OnceLock<ureq::Agent> = std::sync::OnceLock::new();
    let agent = AGENTS.get_or_init(|| {
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(std::time::Duration::from_secs(10)))
            // The agent's own route answers; a redirect would make the server
            // fetch whatever the node's registrant points it at.
            .max_redirects(0)
            .build()
            .into()
    });
    let mut response = agent
        .get(url)
        .header("authorization", format!("Bearer {secret}"))
        .call()
        .map_err(|e| bad_gateway(format!("the node's agent did not answer: {e}")))?;
    let status = response.status();
    let size = response
        .headers()
        .get(LOG_SIZE_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let bytes = response
        .body_mut()
        .with_config()
        .limit(MAX_LOG_CHUNK + 1)
        .read_to_vec()
        .map_err(|e| bad_gateway(format!("the node's agent sent an unreadable log: {e}")))?;
    match status.as_u16() {
        200 => Ok(FetchedLog { bytes, size }),
        404 => Err(ApiError::not_found(
            "the node has no such log (not written yet, or removed from it)",
        )),
        // The container put something other than its log there.
        403 => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            format!(
                "the node's agent does not serve this log: {}",
                String::from_utf8_lossy(&bytes)
            ),
        )),
        other => Err(bad_gateway(format!(
            "the node's agent answered {other}: {}",
            String::from_utf8_lossy(&bytes)
        ))),
    }
}

fn bad_gateway(message: String) -> ApiError {
    ApiError::new(StatusCode::BAD_GATEWAY, message)
}
