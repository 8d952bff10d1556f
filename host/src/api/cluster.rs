//! Cluster, node and application endpoints.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{ApiError, ApiState};
use crate::cluster::{App, AppState, ClusterError, Container, NodeKind, Resources, SubmitApp};
use crate::rm::ResourceManager;
use crate::scheduler::diagnostics;

pub async fn info(State(state): State<ApiState>) -> Result<Json<Value>, ApiError> {
    let started = state
        .rm
        .with(|rm: &mut ResourceManager| (rm.cluster.cluster_timestamp(), rm.started_ms))
        .await?;
    Ok(Json(json!({
        "clusterInfo": {
            "id": started.0,
            "startedOn": started.1,
            "state": "STARTED",
            "haState": "ACTIVE",
            "resourceManagerVersion": env!("CARGO_PKG_VERSION"),
            "weft": true,
        }
    })))
}

pub async fn cluster_metrics(State(state): State<ApiState>) -> Result<Json<Value>, ApiError> {
    let body = state
        .rm
        .with(|rm: &mut ResourceManager| {
            let c = &rm.cluster;
            let count = |s: AppState| c.apps().iter().filter(|a| a.state == s).count();
            let (capacity, allocated) = (c.capacity(), c.allocated());
            json!({
                "clusterMetrics": {
                    "appsSubmitted": c.apps().len(),
                    "appsPending": count(AppState::Accepted),
                    "appsRunning": count(AppState::Running),
                    "appsCompleted": count(AppState::Finished),
                    "appsKilled": count(AppState::Killed),
                    "containersAllocated": c.containers().count(),
                    "containersPending": c.active_apps().map(|i| c.apps()[i].pending_containers()).sum::<u64>(),
                    "totalMB": capacity.memory_mb,
                    "allocatedMB": allocated.memory_mb,
                    "availableMB": capacity.memory_mb - allocated.memory_mb,
                    "totalVirtualCores": capacity.vcores,
                    "allocatedVirtualCores": allocated.vcores,
                    "availableVirtualCores": capacity.vcores - allocated.vcores,
                    "totalGPUs": capacity.gpus,
                    "allocatedGPUs": allocated.gpus,
                    "totalNodes": c.nodes().count(),
                }
            })
        })
        .await?;
    Ok(Json(body))
}

pub async fn nodes(State(state): State<ApiState>) -> Result<Json<Value>, ApiError> {
    let nodes = state
        .rm
        .with(|rm: &mut ResourceManager| {
            rm.cluster
                .nodes()
                .map(|n| {
                    let free = n.free();
                    json!({
                        "id": n.id,
                        "kind": n.kind,
                        "state": "RUNNING",
                        "lastHealthUpdate": n.last_heartbeat_ms,
                        "numContainers": n.containers.len(),
                        "usedMemoryMB": n.allocated.memory_mb,
                        "availMemoryMB": free.memory_mb,
                        "usedVirtualCores": n.allocated.vcores,
                        "availableVirtualCores": free.vcores,
                        "usedGPUs": n.allocated.gpus,
                        "availableGPUs": free.gpus,
                    })
                })
                .collect::<Vec<_>>()
        })
        .await?;
    Ok(Json(json!({ "nodes": { "node": nodes } })))
}

/// A node's registration: who it is and what it offers.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RegisterNode {
    pub node_id: String,
    pub memory_mb: u64,
    pub vcores: u32,
    #[serde(default)]
    pub gpus: u32,
}

pub async fn register_node(
    State(state): State<ApiState>,
    Json(request): Json<RegisterNode>,
) -> Result<Json<Value>, ApiError> {
    if request.node_id.trim().is_empty() {
        return Err(ApiError::bad_request("node_id must not be empty"));
    }
    let id = request.node_id.clone();
    let capacity = Resources::new(request.memory_mb, request.vcores, request.gpus);
    state
        .rm
        .with(move |rm: &mut ResourceManager| {
            let now = rm.now();
            let lost = rm
                .cluster
                .register_node(&id, NodeKind::Remote, capacity, now)?;
            rm.containers_finished(&lost, now);
            tracing::info!(node = %id, %capacity, "node registered");
            Ok::<_, ClusterError>(())
        })
        .await?
        .map_err(ApiError::bad_request)?;
    Ok(Json(
        json!({ "node_id": request.node_id, "heartbeat_interval_ms": state.heartbeat_interval_ms }),
    ))
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Heartbeat {
    /// Containers that ended on the node since its last heartbeat.
    #[serde(default)]
    pub finished: Vec<String>,
}

pub async fn heartbeat(
    State(state): State<ApiState>,
    Path(id): Path<String>,
    Json(request): Json<Heartbeat>,
) -> Result<Json<Value>, ApiError> {
    let (ended, new) = state
        .rm
        .with(move |rm: &mut ResourceManager| {
            let now = rm.now();
            let (ended, new) = rm.cluster.heartbeat(&id, &request.finished, now)?;
            rm.containers_finished(&ended, now);
            Ok::<_, ClusterError>((ended.len(), new))
        })
        .await?
        .map_err(|e| match e {
            ClusterError::UnknownNode(_) => ApiError::not_found(e),
            other => ApiError::bad_request(other),
        })?;
    let allocations: Vec<Value> = new.iter().map(container_json).collect();
    Ok(Json(
        json!({ "finished_accepted": ended, "allocations": allocations }),
    ))
}

fn container_json(c: &Container) -> Value {
    json!({
        "container_id": c.id,
        "app_id": c.app,
        "memory_mb": c.resources.memory_mb,
        "vcores": c.resources.vcores,
        "gpus": c.resources.gpus,
        "duration_ms": c.duration_ms,
        "start_time_ms": c.start_time_ms,
    })
}

pub async fn submit_app(
    State(state): State<ApiState>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let request: SubmitApp = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request(format!("invalid application: {e}")))?;
    let submitter = headers
        .get("x-forwarded-for")
        .or_else(|| headers.get("host"))
        .and_then(|v| v.to_str().ok())
        .unwrap_or("unknown")
        .to_string();
    let caller = state.caller(&headers);
    let security = state.security.clone();
    let app = state
        .rm
        .with(move |rm: &mut ResourceManager| {
            let now = rm.now();
            if let Some(leaf) = rm.cluster.queues().leaf(&request.queue) {
                security.check_submit(&caller, rm.cluster.queues(), leaf).map_err(ApiError::forbidden)?;
            }
            if caller != request.user {
                security
                    .check_admin(&caller, &format!("submit on behalf of {}", request.user))
                    .map_err(ApiError::forbidden)?;
            }
            rm.check_app_reservation(&request).map_err(ApiError::bad_request)?;
            let app = rm.cluster.submit(request, &submitter, now).map_err(ApiError::bad_request)?.clone();
            tracing::info!(app = %app.id, queue = %app.queue, user = %app.user, project = %app.project, submitter, "application submitted and accepted");
            Ok::<_, ApiError>(app)
        })
        .await??;
    Ok((StatusCode::ACCEPTED, Json(json!({ "app": app_json(&app) }))))
}

pub async fn apps(State(state): State<ApiState>) -> Result<Json<Value>, ApiError> {
    let apps = state
        .rm
        .with(|rm: &mut ResourceManager| rm.cluster.apps().iter().map(app_json).collect::<Vec<_>>())
        .await?;
    Ok(Json(json!({ "apps": { "app": apps } })))
}

pub async fn app(
    State(state): State<ApiState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let wanted = id.clone();
    let app = state
        .rm
        .with(move |rm: &mut ResourceManager| {
            let index = rm.cluster.app_index(&wanted)?;
            let mut body = app_json(&rm.cluster.apps()[index]);
            // A pending app says why it waits and where it stands (seed 002 §10.3).
            let usage = diagnostics::queue_usage(&rm.cluster);
            if let Some(diagnosis) = rm.diagnose(index, &usage) {
                body["diagnostics"] = json!(diagnosis.reason);
                body["positionInQueue"] = json!(diagnosis.position_in_queue);
            }
            Some(body)
        })
        .await?;
    let app = app.ok_or_else(|| ApiError::not_found(format!("application {id} not found")))?;
    Ok(Json(json!({ "app": app })))
}

/// An app in YARN's field names, plus what Weft adds (project, asks).
fn app_json(app: &App) -> Value {
    let final_status = match app.state {
        AppState::Finished => "SUCCEEDED",
        AppState::Killed => "KILLED",
        _ => "UNDEFINED",
    };
    json!({
        "id": app.id,
        "name": app.name,
        "queue": app.queue,
        "user": app.user,
        "project": app.project,
        "priority": app.priority,
        "state": app.state,
        "finalStatus": final_status,
        "submittedTime": app.submit_time_ms,
        "startedTime": app.start_time_ms.unwrap_or(0),
        "finishedTime": app.finish_time_ms.unwrap_or(0),
        "allocatedMB": app.used.memory_mb,
        "allocatedVCores": app.used.vcores,
        "allocatedGPUs": app.used.gpus,
        "runningContainers": app.running_containers,
        "finishedContainers": app.finished_containers,
        "preemptedContainers": app.preempted_containers,
        "pendingContainers": app.pending_containers(),
        "asks": app.asks,
    })
}
