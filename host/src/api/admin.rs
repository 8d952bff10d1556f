//! Administration: refreshQueues.

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use serde_json::{Value, json};

use super::{ApiError, ApiState};
use crate::rm::ResourceManager;

/// `POST /ws/v1/admin/refresh-queues`: reads the queue configuration again
/// and applies it with no restart. Running apps keep running; a bad
/// configuration is refused with the reason and changes nothing.
pub async fn refresh_queues(
    State(state): State<ApiState>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    let caller = state.require_admin(&headers, "refresh the queues")?;
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
        .with(move |rm: &mut ResourceManager| {
            // The plans are prepared first (they refuse a tree that would lose
            // a reservation, or a queue policy that does not load), applied
            // only once the cluster has taken the tree. A queue naming its own
            // sharing policy is compiled here, on the loop: rare, and a
            // refresh must see the reservations as they are.
            let prepared = rm
                .reservations
                .prepare_queues(&tree, &rm.policies.clone())
                .map_err(|e| e.to_string())?;
            rm.cluster.replace_queues(tree).map_err(|e| e.to_string())?;
            rm.reservations.apply_queues(prepared);
            Ok::<_, String>(())
        })
        .await?
        .map_err(|e| {
            ApiError::bad_request(format!("queues not refreshed, the current ones stay: {e}"))
        })?;
    tracing::info!(caller, ?leaves, "queues refreshed");
    Ok(Json(json!({ "refreshed": true, "leaf_queues": leaves })))
}
