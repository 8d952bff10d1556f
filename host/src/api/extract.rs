//! Extractors that refuse in the API's own error shape: a JSON body (400
//! naming what is wrong, 413 over the route's limit), query strings and
//! path parameters (400), the authenticated caller, and the client's address.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use super::ApiError;
use crate::security::Caller;

/// A JSON body of type `T`, whatever the content type says.
#[derive(Debug)]
pub(super) struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let RawBody(bytes) = RawBody::from_request(request, state).await?;
        decode_json(&bytes).map(JsonBody)
    }
}

/// `bytes` as JSON of type `T`; a refusal names the field's path:
/// `asks[0].duration_ms: invalid value …`. Every body the API takes is one
/// object and nothing after it. Anything else is refused here: serde would
/// read an array's elements as the struct's fields in order (`[3]` as
/// `{"priority": 3}`), and stop reading after the first value. (Inside the
/// object serde still takes an array for a nested struct, field by field:
/// the same fields, checked the same way.)
pub(super) fn decode_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let first = bytes.iter().find(|byte| !b" \t\n\r".contains(byte));
    if first.is_some_and(|&byte| byte != b'{') {
        return Err(ApiError::bad_request(
            "invalid request body: expected a JSON object",
        ));
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        match path.as_str() {
            "." | "" => ApiError::bad_request(format!("invalid request body: {inner}")),
            _ => ApiError::bad_request(format!("invalid request body: {path}: {inner}")),
        }
    })?;
    deserializer.end().map_err(|e| {
        ApiError::bad_request(format!("invalid request body: after the object: {e}"))
    })?;
    Ok(value)
}

/// A query string of type `T`.
#[derive(Debug)]
pub(super) struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Query(query)| ApiQuery(query))
            .map_err(|e| ApiError::bad_request(format!("invalid query: {}", e.body_text())))
    }
}

/// Path parameters of type `T`.
#[derive(Debug)]
pub(super) struct ApiPath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Path(path)| ApiPath(path))
            .map_err(|e| ApiError::bad_request(format!("invalid path: {}", e.body_text())))
    }
}

/// The caller `auth::admit` established for this request (`gate.rs`).
impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        parts
            .extensions
            .get::<Caller>()
            .cloned()
            .ok_or_else(|| ApiError::internal("the request was not authenticated (a bug)"))
    }
}

/// The client's address as the server saw the connection (not a header a
/// client could set), for the log's "submitting host" (seed 002 §10.4).
#[derive(Debug, Clone)]
pub(super) struct ClientAddr(pub String);

impl<S: Send + Sync> FromRequestParts<S> for ClientAddr {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let address = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(address)| address.ip().to_string())
            .unwrap_or_else(|| "unknown".into());
        Ok(ClientAddr(address))
    }
}

/// How long a body may take to arrive: 10 s, and 1 s for every 64 KiB it
/// declares (1 MB when it declares nothing). A client trickling a byte at a
/// time cannot hold its connection and the buffer for ever.
fn body_deadline(headers: &axum::http::HeaderMap) -> std::time::Duration {
    let declared = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|text| text.trim().parse::<u64>().ok())
        .unwrap_or(crate::limits::MAX_BODY_BYTES as u64)
        .min(crate::limits::MAX_POLICY_BODY_BYTES as u64);
    std::time::Duration::from_secs(10 + declared / 65_536)
}

/// A raw body (a policy upload), refused with 413 over the route's limit
/// and 408 when it arrives too slowly.
#[derive(Debug)]
pub(super) struct RawBody(pub axum::body::Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        refuse_oversized(&request)?;
        let deadline = body_deadline(request.headers());
        let read = axum::body::Bytes::from_request(request, state);
        tokio::time::timeout(deadline, read)
            .await
            .map_err(|_| {
                ApiError::new(
                    axum::http::StatusCode::REQUEST_TIMEOUT,
                    format!(
                        "the body did not arrive within {} s (at least 64 KiB/s after the first 10 s)",
                        deadline.as_secs()
                    ),
                )
            })?
            .map(RawBody)
            .map_err(|rejection| {
                ApiError::new(
                    rejection.status(),
                    format!(
                        "cannot read the request body: {} (bodies are limited per route; see docs/security.md)",
                        rejection.body_text()
                    ),
                )
            })
    }
}

/// The most bytes a route's body may hold (set per route in `mod.rs`).
#[derive(Debug, Clone, Copy)]
pub(super) struct RouteBodyLimit(pub usize);

/// Refuses a request whose Content-Length is above its route's limit (a
/// route not given one: the smallest, `MAX_BODY_BYTES`) with 413, before a
/// byte of its body is read.
fn refuse_oversized(request: &Request) -> Result<(), ApiError> {
    let RouteBodyLimit(limit) = request
        .extensions()
        .get::<RouteBodyLimit>()
        .copied()
        .unwrap_or(RouteBodyLimit(crate::limits::MAX_BODY_BYTES));
    let declared = request
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|text| text.trim().parse::<u64>().ok());
    match declared {
        Some(length) if length > limit as u64 => {
            crate::metrics::metrics()
                .requests_refused
                .get_or_create(&crate::metrics::WhatLabels {
                    what: "body too large".into(),
                })
                .inc();
            Err(ApiError::new(
                axum::http::StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "the body is {length} bytes; this route takes at most {limit} (bodies are limited per route; see docs/security.md)"
                ),
            ))
        }
        _ => Ok(()),
    }
}
