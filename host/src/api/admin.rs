//! Administration: refreshQueues and refreshNodes.

use std::collections::BTreeSet;
use std::path::Path;

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::extract::ApiQuery;
use super::openapi::RemoteException;
use super::{ApiError, ApiState};
use crate::rm::ResourceManager;
use crate::rm::excluded_nodes::read_exclude_file;
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
    let properties = reload_queue_properties(&state).await?.map_err(|e| {
        ApiError::bad_request(format!("queues not refreshed, the current ones stay: {e}"))
    })?;
    let leaves = state
        .rm
        .with(move |rm: &mut ResourceManager| {
            rm.refresh_queues(properties)?;
            let leaves = rm.cluster().queues().leaf_names();
            Ok::<_, crate::rm::requests::RefreshError>(
                leaves.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            )
        })
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

/// The queue properties of the configuration as it is now (its files read
/// off the loop).
pub(super) async fn reload_queue_properties(
    state: &ApiState,
) -> Result<Result<crate::queues::QueueProperties, String>, ApiError> {
    let reload = state.reload_queues.clone();
    tokio::task::spawn_blocking(move || reload())
        .await
        .map_err(|e| ApiError::internal(format!("the reload task failed: {e}")))
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct RefreshNodesQuery {
    /// Decommission gracefully (YARN's `-refreshNodes -g`): what runs on a
    /// listed node goes on until the timeout. Without it, at once.
    #[serde(default)]
    graceful: bool,
    /// With `graceful`, seconds its containers may still run (at most a
    /// year); `yarn.resourcemanager.nodemanager-graceful-decommission-timeout-secs`
    /// (3600) when left out.
    timeout: Option<u64>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct NodesRefreshed {
    /// Node ids decommissioned by this refresh.
    decommissioned: Vec<String>,
    /// Node ids an earlier refresh decommissioned that the file no longer
    /// lists, which take containers again.
    recommissioned: Vec<String>,
    /// Names in the file that matched no node (the first 100).
    unmatched: Vec<String>,
    /// How many names matched no node.
    unmatched_count: usize,
}

/// Reads the exclude file (`yarn.resourcemanager.nodes.exclude-path`) again
/// (administrators only; YARN's refreshNodes): the nodes it lists (by node
/// id or host) are decommissioned, at once or with `graceful` after the
/// timeout; those an earlier refresh decommissioned that it no longer lists
/// are recommissioned. Decommissions made through the nodes API stay. A
/// file refused (unreadable, too large, a bad name) changes nothing.
#[utoipa::path(post, path = "/ws/v1/admin/refresh-nodes", tag = "admin",
    params(RefreshNodesQuery),
    responses((status = 200, body = NodesRefreshed), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 403, body = RemoteException)))]
pub(super) async fn refresh_nodes(
    State(state): State<ApiState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<RefreshNodesQuery>,
) -> Result<Json<NodesRefreshed>, ApiError> {
    // Checked before the file is read: only administrators make the
    // server read it.
    state
        .security
        .check_admin(&caller, "refresh the nodes")
        .map_err(ApiError::forbidden)?;
    let path = state
        .rm
        .with(|rm: &mut ResourceManager| rm.nodes_exclude_path().map(Path::to_path_buf))
        .await?;
    // Read off the event loop: a slow disk or mount holds up this request
    // only.
    let excluded = match path {
        Some(path) => tokio::task::spawn_blocking(move || read_exclude_file(&path))
            .await
            .map_err(|e| ApiError::internal(format!("the read task failed: {e}")))?
            .map_err(|e| ApiError::bad_request(format!("nodes not refreshed: {e}")))?,
        None => BTreeSet::new(),
    };
    let refresh = state
        .rm
        .with(move |rm: &mut ResourceManager| {
            rm.refresh_nodes(&caller, &excluded, query.graceful, query.timeout)
        })
        .await??;
    let unmatched_count = refresh.unmatched.len();
    Ok(Json(NodesRefreshed {
        decommissioned: refresh.decommissioned,
        recommissioned: refresh.recommissioned,
        unmatched: refresh.unmatched.into_iter().take(100).collect(),
        unmatched_count,
    }))
}
