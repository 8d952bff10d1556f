//! Policy endpoints: list, load (upload or builtin), rollback.

use std::collections::BTreeMap;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use serde_json::{Value, json};

use super::{ApiError, ApiState};
use crate::policy::{LoadError, PolicyKind, PolicySource};

fn kind(text: &str) -> Result<PolicyKind, ApiError> {
    text.parse().map_err(ApiError::not_found)
}

pub async fn list(State(state): State<ApiState>) -> Json<Value> {
    let slots: BTreeMap<&str, _> = PolicyKind::ALL
        .iter()
        .map(|k| (k.as_str(), state.policies.slot(*k).status()))
        .collect();
    Json(json!(slots))
}

pub async fn show(
    State(state): State<ApiState>,
    Path(kind_name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(json!(state.policies.slot(kind(&kind_name)?).status())))
}

/// `PUT /ws/v1/policies/{kind}` with the component as the body, or
/// `?builtin=NAME`; every other query pair is a parameter for `configure`.
pub async fn load(
    State(state): State<ApiState>,
    headers: HeaderMap,
    Path(kind_name): Path<String>,
    Query(query): Query<Vec<(String, String)>>,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let kind = kind(&kind_name)?;
    let caller = state.require_admin(&headers, &format!("load a {kind} policy"))?;
    tracing::info!(%kind, caller, "policy load requested");
    let mut builtin = None;
    let mut params = Vec::new();
    for (key, value) in query {
        if key == "builtin" {
            builtin = Some(value);
        } else {
            params.push((key, value));
        }
    }
    let runtime = state.policies.clone();
    let loaded = tokio::task::spawn_blocking(move || match builtin {
        Some(name) => {
            if !body.is_empty() {
                return Err(LoadError::Source(
                    "give either ?builtin=NAME or a component body, not both".into(),
                ));
            }
            runtime.load(kind, &PolicySource::Builtin(name), &params)
        }
        None if body.is_empty() => Err(LoadError::Source(
            "no policy given: send the .wasm component as the request body, or ?builtin=NAME"
                .into(),
        )),
        None => runtime.load_bytes(kind, "upload", &body, &params),
    })
    .await
    .map_err(|e| ApiError::internal(format!("the load task failed: {e}")))?;
    loaded.map_err(|e| {
        ApiError::bad_request(format!("policy not loaded, the active version stays: {e}"))
    })?;
    Ok(Json(json!(state.policies.slot(kind).status())))
}

pub async fn rollback(
    State(state): State<ApiState>,
    Path(kind_name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let kind = kind(&kind_name)?;
    let slot = state.policies.slot(kind);
    slot.rollback("rolled back by the operator")
        .map_err(ApiError::conflict)?;
    Ok(Json(json!(slot.status())))
}
