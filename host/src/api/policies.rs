//! Policy endpoints: list, show, load (upload or builtin), rollback. Loads
//! and rollbacks are for administrators only.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::{FromRequest, State};

use super::extract::{ApiPath, ApiQuery, RawBody};
use super::openapi::RemoteException;
use super::{ApiError, ApiState};
use crate::policy::{LoadError, PolicyKind, PolicySource, SlotStatus};
use crate::security::Caller;

fn kind(text: &str) -> Result<PolicyKind, ApiError> {
    text.parse().map_err(ApiError::not_found)
}

/// Every kind's active version and history.
#[utoipa::path(get, path = "/ws/v1/policies", tag = "policies",
    responses((status = 200, body = BTreeMap<String, SlotStatus>),
        (status = 401, body = RemoteException)))]
pub async fn list(State(state): State<ApiState>) -> Json<BTreeMap<String, SlotStatus>> {
    Json(
        PolicyKind::ALL
            .iter()
            .map(|k| (k.as_str().to_string(), state.policies.slot(*k).status()))
            .collect(),
    )
}

/// One kind's active version and history.
#[utoipa::path(get, path = "/ws/v1/policies/{kind}", tag = "policies",
    params(("kind" = String, Path, description = "scheduling, pricing or sharing")),
    responses((status = 200, body = SlotStatus), (status = 401, body = RemoteException),
        (status = 404, body = RemoteException)))]
pub async fn show(
    State(state): State<ApiState>,
    ApiPath(kind_name): ApiPath<String>,
) -> Result<Json<SlotStatus>, ApiError> {
    Ok(Json(state.policies.slot(kind(&kind_name)?).status()))
}

/// Loads a policy: the component as the body, or `?builtin=NAME`; every
/// other query pair is a parameter for its `configure`. It becomes active
/// once it has passed every check; otherwise the active version stays.
#[utoipa::path(put, path = "/ws/v1/policies/{kind}", tag = "policies",
    params(("kind" = String, Path, description = "scheduling, pricing or sharing"),
        ("builtin" = Option<String>, Query, description = "a bundled policy's name, instead of a body")),
    request_body(content = Vec<u8>, content_type = "application/octet-stream",
        description = "a WebAssembly component (at most 64 MB); any content type"),
    responses((status = 200, body = SlotStatus), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 403, body = RemoteException),
        (status = 404, body = RemoteException), (status = 413, body = RemoteException)))]
pub async fn load(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(kind_name): ApiPath<String>,
    ApiQuery(query): ApiQuery<Vec<(String, String)>>,
    request: axum::extract::Request,
) -> Result<Json<SlotStatus>, ApiError> {
    // The right first, then the body: a caller without it does not get to
    // make the server hold 64 MB.
    let kind = kind(&kind_name)?;
    state
        .security
        .check_admin(&caller, &format!("load a {kind} policy"))
        .map_err(ApiError::forbidden)?;
    // A standby puts policies in force when it becomes active, from the
    // store: it loads nothing itself.
    state.rm.check_active()?;
    let RawBody(body) = RawBody::from_request(request, &state).await?;
    tracing::info!(%kind, caller = %caller.user, "policy load requested");
    let mut builtin = None;
    let mut params = Vec::new();
    for (key, value) in query {
        if key == "builtin" {
            builtin = Some(value);
        } else {
            params.push((key, value));
        }
    }
    // One load at a time: each compiles for seconds on a blocking thread.
    let _one_at_a_time = state.policy_loads.lock().await;
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
    loaded.map_err(|e| match e {
        LoadError::Store(_) => {
            ApiError::unavailable(format!("policy not loaded, the active version stays: {e}"))
        }
        e => ApiError::bad_request(format!("policy not loaded, the active version stays: {e}")),
    })?;
    // Answered once the event loop's next commit has saved the slot's
    // versions: a restart or failover keeps this one in force.
    state.rm.with(|_| ()).await?;
    Ok(Json(state.policies.slot(kind).status()))
}

/// Rolls the active version back to the newest good one before it
/// (administrators only).
#[utoipa::path(post, path = "/ws/v1/policies/{kind}/rollback", tag = "policies",
    params(("kind" = String, Path, description = "scheduling, pricing or sharing")),
    responses((status = 200, body = SlotStatus), (status = 401, body = RemoteException),
        (status = 403, body = RemoteException), (status = 404, body = RemoteException),
        (status = 409, body = RemoteException)))]
pub async fn rollback(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(kind_name): ApiPath<String>,
) -> Result<Json<SlotStatus>, ApiError> {
    let kind = kind(&kind_name)?;
    state
        .security
        .check_admin(&caller, &format!("roll back the {kind} policy"))
        .map_err(ApiError::forbidden)?;
    state.rm.check_active()?;
    let slot = state.policies.slot(kind);
    slot.rollback("rolled back by the operator")
        .map_err(ApiError::conflict)?;
    tracing::info!(%kind, caller = %caller.user, "policy rolled back by the operator");
    state.rm.with(|_| ()).await?;
    Ok(Json(slot.status()))
}
