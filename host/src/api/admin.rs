//! Administration: refreshQueues.

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;

use super::openapi::RemoteException;
use super::{ApiError, ApiState};
use crate::rm::ResourceManager;
use crate::security::Caller;

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct Refreshed {
    refreshed: bool,
    leaf_queues: Vec<String>,
}

/// Reads the queue configuration again and applies it with no restart
/// (administrators only). Running apps keep running; a bad configuration is
/// refused with the reason and changes nothing.
#[utoipa::path(post, path = "/ws/v1/admin/refresh-queues", tag = "admin",
    responses((status = 200, body = Refreshed), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 403, body = RemoteException)))]
pub(super) async fn refresh_queues(
    State(state): State<ApiState>,
    caller: Caller,
) -> Result<Json<Refreshed>, ApiError> {
    state
        .security
        .check_admin(&caller, "refresh the queues")
        .map_err(ApiError::forbidden)?;
    let reload = state.reload_queues.clone();
    let tree = tokio::task::spawn_blocking(move || reload())
        .await
        .map_err(|e| ApiError::internal(format!("the reload task failed: {e}")))?
        .map_err(|e| {
            ApiError::bad_request(format!("queues not refreshed, the current ones stay: {e}"))
        })?;
    let leaves: Vec<String> = tree.leaf_names().iter().map(|s| s.to_string()).collect();
    state
        .rm
        .with(move |rm: &mut ResourceManager| rm.refresh_queues(tree))
        .await?
        .map_err(|e| {
            ApiError::bad_request(format!("queues not refreshed, the current ones stay: {e}"))
        })?;
    tracing::info!(caller = %caller.user, ?leaves, "queues refreshed");
    Ok(Json(Refreshed {
        refreshed: true,
        leaf_queues: leaves,
    }))
}
