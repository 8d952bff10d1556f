//! Policy endpoints: list, show, load (upload or builtin), rollback, and
//! shadow mode (load a candidate beside the active one, compare, promote,
//! stop). Everything but reading is for administrators only.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::{FromRequest, State};

use super::extract::{ApiPath, ApiQuery, RawBody};
use super::openapi::RemoteException;
use super::{ApiError, ApiState};
use crate::policy::{LoadError, PolicyKind, PolicySource, ShadowReport, SlotStatus};
use crate::rm::policy_load::{Component, LoadRight, PolicyLoad, Target};
use crate::security::Caller;

fn kind(text: &str) -> Result<PolicyKind, ApiError> {
    text.parse().map_err(ApiError::not_found)
}

/// Every kind's active version and history, and each reservable queue's
/// own sharing policy as `sharing:QUEUE`.
#[utoipa::path(get, path = "/ws/v1/policies", tag = "policies",
    responses((status = 200, body = BTreeMap<String, SlotStatus>),
        (status = 401, body = RemoteException)))]
pub(super) async fn list(State(state): State<ApiState>) -> Json<BTreeMap<String, SlotStatus>> {
    let kinds = PolicyKind::ALL
        .iter()
        .map(|k| (k.as_str().to_string(), state.policies.slot(*k).status()));
    let queues = state
        .policies
        .queue_sharing_status()
        .into_iter()
        .map(|(queue, status)| (format!("sharing:{queue}"), status));
    Json(kinds.chain(queues).collect())
}

/// One kind's active version and history.
#[utoipa::path(get, path = "/ws/v1/policies/{kind}", tag = "policies",
    params(("kind" = String, Path, description = "scheduling, pricing or sharing")),
    responses((status = 200, body = SlotStatus), (status = 401, body = RemoteException),
        (status = 404, body = RemoteException)))]
pub(super) async fn show(
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
        ("builtin" = Option<String>, Query, description = "a bundled policy's name, instead of a body"),
        ("queue" = Option<String>, Query, description = "sharing only: load into this reservable queue's own policy")),
    request_body(content = Vec<u8>, content_type = "application/octet-stream",
        description = "a WebAssembly component (at most 64 MB); any content type"),
    responses((status = 200, body = SlotStatus), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 403, body = RemoteException),
        (status = 404, body = RemoteException), (status = 413, body = RemoteException)))]
pub(super) async fn load(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(kind_name): ApiPath<String>,
    ApiQuery(query): ApiQuery<Vec<(String, String)>>,
    request: axum::extract::Request,
) -> Result<Json<SlotStatus>, ApiError> {
    let kind = kind(&kind_name)?;
    let (queue, query) = queue_of(kind, query)?;
    let target = match &queue {
        Some(queue) => Target::Queue(queue.clone()),
        None => Target::Active,
    };
    load_component(&state, &caller, kind, query, request, target).await?;
    // Answered once the event loop's next commit has saved the slot's
    // versions: a restart or failover keeps this one in force.
    state.rm.with(|_| ()).await?;
    match queue {
        Some(queue) => queue_status(&state, &queue).map(Json),
        None => Ok(Json(state.policies.slot(kind).status())),
    }
}

/// A load's query pairs: the policy's parameters, and the reserved keys.
type Query = Vec<(String, String)>;

/// `?queue=PATH` names a reservable queue's own sharing policy; it is no
/// parameter for the policy.
fn queue_of(kind: PolicyKind, query: Query) -> Result<(Option<String>, Query), ApiError> {
    let (queues, rest): (Vec<_>, Vec<_>) = query.into_iter().partition(|(k, _)| k == "queue");
    match (kind, queues.into_iter().next()) {
        (_, None) => Ok((None, rest)),
        (PolicyKind::Sharing, Some((_, queue))) => Ok((Some(queue), rest)),
        (kind, Some(_)) => Err(ApiError::bad_request(format!(
            "?queue= names a queue's own sharing policy; a {kind} policy is not per queue"
        ))),
    }
}

fn queue_status(state: &ApiState, queue: &str) -> Result<SlotStatus, ApiError> {
    state
        .policies
        .queue_sharing(queue)
        .map(|slot| slot.status())
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "queue {queue} has no sharing policy of its own (no reservation-policy)"
            ))
        })
}

/// The checks and the load both `load` and `load_shadow` do: the caller's
/// right first, then the body (a caller without the right does not get to
/// make the server hold 64 MB), then one compile at a time on a blocking
/// thread.
async fn load_component(
    state: &ApiState,
    caller: &Caller,
    kind: PolicyKind,
    query: Vec<(String, String)>,
    request: axum::extract::Request,
    target: Target,
) -> Result<(), ApiError> {
    let right =
        LoadRight::check(&state.security, caller, kind, &target).map_err(ApiError::forbidden)?;
    // A standby puts policies in force when it becomes active, from the
    // store: it loads nothing itself.
    state.rm.check_active()?;
    let RawBody(body) = RawBody::from_request(request, state).await?;
    tracing::info!(%kind, caller = %caller.user, ?target, "policy load requested");
    let mut builtin = None;
    let mut params = Vec::new();
    for (key, value) in query {
        if key == "builtin" {
            builtin = Some(value);
        } else {
            params.push((key, value));
        }
    }
    let _one_at_a_time = state.policy_loads.lock().await;
    let runtime = state.policies.clone();
    let stays = match target {
        Target::Active | Target::Queue(_) => "the active version stays",
        Target::Shadow => "the active version and any shadow stay",
    };
    let loaded = tokio::task::spawn_blocking(move || {
        let component = match builtin {
            Some(_) if !body.is_empty() => {
                return Err(LoadError::Source(
                    "give either ?builtin=NAME or a component body, not both".into(),
                ));
            }
            Some(name) => Component::Source(PolicySource::Builtin(name)),
            None if body.is_empty() => {
                return Err(LoadError::Source(
                    "no policy given: send the .wasm component as the request body, or ?builtin=NAME"
                        .into(),
                ));
            }
            None => Component::Upload(body.to_vec()),
        };
        let load = PolicyLoad {
            kind,
            component,
            params,
            target,
        };
        load.run(&runtime, right)
    })
    .await
    .map_err(|e| ApiError::internal(format!("the load task failed: {e}")))?;
    loaded.map_err(|e| match e {
        LoadError::Store(_) => ApiError::unavailable(format!("policy not loaded, {stays}: {e}")),
        e => ApiError::bad_request(format!("policy not loaded, {stays}: {e}")),
    })?;
    Ok(())
}

/// Loads a candidate to run beside the active version (shadow mode): it
/// answers the same live calls, its answers compared and never applied.
/// Body and query as for loading an active version. Administrators only.
#[utoipa::path(put, path = "/ws/v1/policies/{kind}/shadow", tag = "policies",
    params(("kind" = String, Path, description = "scheduling, pricing or sharing"),
        ("builtin" = Option<String>, Query, description = "a bundled policy's name, instead of a body")),
    request_body(content = Vec<u8>, content_type = "application/octet-stream",
        description = "a WebAssembly component (at most 64 MB); any content type"),
    responses((status = 200, body = ShadowReport), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 403, body = RemoteException),
        (status = 404, body = RemoteException), (status = 413, body = RemoteException)))]
pub(super) async fn load_shadow(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(kind_name): ApiPath<String>,
    ApiQuery(query): ApiQuery<Vec<(String, String)>>,
    request: axum::extract::Request,
) -> Result<Json<ShadowReport>, ApiError> {
    let kind = kind(&kind_name)?;
    let (queue, query) = queue_of(kind, query)?;
    if queue.is_some() {
        return Err(ApiError::bad_request(
            "a queue's own sharing policy runs no shadow; shadow the runtime's",
        ));
    }
    load_component(&state, &caller, kind, query, request, Target::Shadow).await?;
    shadow_report(&state, kind).map(Json)
}

fn shadow_report(state: &ApiState, kind: PolicyKind) -> Result<ShadowReport, ApiError> {
    state
        .policies
        .shadow(kind)
        .get()
        .map(|shadow| shadow.report())
        .ok_or_else(|| ApiError::not_found(format!("no {kind} shadow policy is running")))
}

/// What the shadow of `kind` found so far: per project, the credits it
/// would have charged and the difference (pricing); rounds placed
/// differently (scheduling); decisions that flip (sharing); its failures,
/// dropped calls and latency.
#[utoipa::path(get, path = "/ws/v1/policies/{kind}/shadow", tag = "policies",
    params(("kind" = String, Path, description = "scheduling, pricing or sharing")),
    responses((status = 200, body = ShadowReport), (status = 401, body = RemoteException),
        (status = 404, body = RemoteException)))]
pub(super) async fn show_shadow(
    State(state): State<ApiState>,
    ApiPath(kind_name): ApiPath<String>,
) -> Result<Json<ShadowReport>, ApiError> {
    shadow_report(&state, kind(&kind_name)?).map(Json)
}

/// Stops the shadow of `kind`; answers its last report. Administrators only.
#[utoipa::path(delete, path = "/ws/v1/policies/{kind}/shadow", tag = "policies",
    params(("kind" = String, Path, description = "scheduling, pricing or sharing")),
    responses((status = 200, body = ShadowReport), (status = 401, body = RemoteException),
        (status = 403, body = RemoteException), (status = 404, body = RemoteException)))]
pub(super) async fn stop_shadow(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(kind_name): ApiPath<String>,
) -> Result<Json<ShadowReport>, ApiError> {
    let kind = kind(&kind_name)?;
    state
        .security
        .check_admin(&caller, &format!("stop the {kind} shadow policy"))
        .map_err(ApiError::forbidden)?;
    let report = state
        .policies
        .stop_shadow(kind)
        .map_err(ApiError::not_found)?;
    Ok(Json(report))
}

/// Makes the shadow of `kind` the active version, by the same atomic
/// publication as a load (no call fails over it; the old version stays as
/// the fallback). Administrators only.
#[utoipa::path(post, path = "/ws/v1/policies/{kind}/shadow/promote", tag = "policies",
    params(("kind" = String, Path, description = "scheduling, pricing or sharing")),
    responses((status = 200, body = SlotStatus), (status = 401, body = RemoteException),
        (status = 403, body = RemoteException), (status = 404, body = RemoteException)))]
pub(super) async fn promote_shadow(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(kind_name): ApiPath<String>,
) -> Result<Json<SlotStatus>, ApiError> {
    let kind = kind(&kind_name)?;
    state
        .security
        .check_admin(&caller, &format!("promote the {kind} shadow policy"))
        .map_err(ApiError::forbidden)?;
    state.rm.check_active()?;
    state.policies.promote(kind).map_err(ApiError::not_found)?;
    tracing::info!(%kind, caller = %caller.user, "shadow policy promoted by the operator");
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
pub(super) async fn rollback(
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
