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
            // The plans first: they refuse a tree that would lose a
            // reservation; if the cluster then refuses, they go back.
            let old = rm.cluster.queues().clone();
            let policies = rm.policies.clone();
            rm.reservations
                .replace_queues(&tree, &policies)
                .map_err(|e| e.to_string())?;
            if let Err(error) = rm.cluster.replace_queues(tree) {
                rm.reservations
                    .replace_queues(&old, &policies)
                    .expect("the plans held these reservations under the old tree");
                return Err(error.to_string());
            }
            Ok(())
        })
        .await?
        .map_err(|e| {
            ApiError::bad_request(format!("queues not refreshed, the current ones stay: {e}"))
        })?;
    tracing::info!(caller, ?leaves, "queues refreshed");
    Ok(Json(json!({ "refreshed": true, "leaf_queues": leaves })))
}
