//! Cluster, node and application endpoints, in YARN's shapes.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::extract::{ApiPath, ApiQuery, ClientAddr, JsonBody, RawBody, decode_json};
use super::openapi::RemoteException;
use super::{ApiError, ApiState};
use crate::cluster::{
    App, AppFilter, AppState, Ask, KillOrder, NodeKind, NodeOrders, OTHER_YARN_APP_STATES,
    SubmitApp,
};
use crate::limits::{DEFAULT_APPS_PAGE, MAX_APPS_PAGE};
use crate::rm::ResourceManager;
use crate::rm::requests::{Heartbeat, RegisterNode};
use crate::scheduler::diagnostics;
use crate::security::Caller;

#[derive(Debug, Serialize, ToSchema)]
pub struct ClusterInfoResponse {
    #[serde(rename = "clusterInfo")]
    cluster_info: ClusterInfo,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterInfo {
    /// The cluster timestamp, which app and container ids carry.
    id: u64,
    started_on: u64,
    state: String,
    /// ACTIVE or STANDBY.
    ha_state: String,
    /// On a standby, the active server, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    active_server: Option<String>,
    /// The active resource manager's epoch (its fencing token; container
    /// ids carry it); 0 on a standby.
    epoch: u64,
    resource_manager_version: String,
    weft: bool,
}

async fn cluster_info_of(state: &ApiState) -> Result<Json<ClusterInfoResponse>, ApiError> {
    let active = state
        .rm
        .with(|rm: &mut ResourceManager| {
            (
                rm.cluster().cluster_timestamp(),
                rm.started_ms(),
                rm.cluster().epoch(),
            )
        })
        .await;
    // A standby answers too: load balancers and clients ask it who it is.
    let (id, started_on, epoch, ha_state) = match active {
        Ok((id, started_on, epoch)) => (id, started_on, epoch, "ACTIVE"),
        Err(crate::rm::CommandError::Standby(_)) => (0, 0, 0, "STANDBY"),
        Err(other) => return Err(other.into()),
    };
    Ok(Json(ClusterInfoResponse {
        cluster_info: ClusterInfo {
            id,
            started_on,
            state: "STARTED".into(),
            ha_state: ha_state.into(),
            active_server: state.rm.active_elsewhere(),
            epoch,
            resource_manager_version: env!("CARGO_PKG_VERSION").into(),
            weft: true,
        },
    }))
}

/// YARN's check for load balancers: 200 on the active server, 405 on a
/// standby.
#[utoipa::path(get, path = "/isActive", tag = "cluster",
    responses((status = 200, description = "this server is active", body = String, content_type = "text/plain"),
        (status = 405, description = "this server is a standby", body = String, content_type = "text/plain")))]
pub async fn is_active(State(state): State<ApiState>) -> (StatusCode, &'static str) {
    if state.rm.is_active() {
        (StatusCode::OK, "Active")
    } else {
        (StatusCode::METHOD_NOT_ALLOWED, "Standby")
    }
}

/// The cluster's identity and state (YARN clients probe this first).
#[utoipa::path(get, path = "/ws/v1/cluster", tag = "cluster",
    responses((status = 200, body = ClusterInfoResponse), (status = 401, body = RemoteException)))]
pub async fn info(State(state): State<ApiState>) -> Result<Json<ClusterInfoResponse>, ApiError> {
    cluster_info_of(&state).await
}

/// The same as GET /ws/v1/cluster.
#[utoipa::path(get, path = "/ws/v1/cluster/info", tag = "cluster",
    responses((status = 200, body = ClusterInfoResponse), (status = 401, body = RemoteException)))]
pub async fn cluster_info(
    State(state): State<ApiState>,
) -> Result<Json<ClusterInfoResponse>, ApiError> {
    cluster_info_of(&state).await
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ClusterMetricsResponse {
    #[serde(rename = "clusterMetrics")]
    cluster_metrics: ClusterMetrics,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterMetrics {
    apps_submitted: usize,
    apps_pending: usize,
    apps_running: usize,
    apps_completed: usize,
    apps_killed: usize,
    containers_allocated: usize,
    containers_pending: u64,
    #[serde(rename = "totalMB")]
    total_mb: u64,
    #[serde(rename = "allocatedMB")]
    allocated_mb: u64,
    #[serde(rename = "availableMB")]
    available_mb: u64,
    total_virtual_cores: u32,
    allocated_virtual_cores: u32,
    available_virtual_cores: u32,
    #[serde(rename = "totalGPUs")]
    total_gpus: u32,
    #[serde(rename = "allocatedGPUs")]
    allocated_gpus: u32,
    total_nodes: usize,
}

/// YARN's cluster metrics: apps, containers and resources.
#[utoipa::path(get, path = "/ws/v1/cluster/metrics", tag = "cluster",
    responses((status = 200, body = ClusterMetricsResponse), (status = 401, body = RemoteException)))]
pub async fn cluster_metrics(
    State(state): State<ApiState>,
) -> Result<Json<ClusterMetricsResponse>, ApiError> {
    let metrics = state
        .rm
        .with(|rm: &mut ResourceManager| {
            let c = rm.cluster();
            // Active apps by state; ended ones by the cluster's totals, as
            // the table keeps only the most recent.
            let active = |s: AppState| c.active_apps().filter(|&i| c.apps()[i].state == s).count();
            let (submitted, finished, killed) = c.app_totals();
            let (capacity, allocated) = (c.capacity(), c.allocated());
            let available = capacity.saturating_sub(&allocated);
            ClusterMetrics {
                apps_submitted: submitted,
                apps_pending: active(AppState::Accepted),
                apps_running: active(AppState::Running),
                apps_completed: finished,
                apps_killed: killed,
                containers_allocated: c.containers().count(),
                containers_pending: c
                    .active_apps()
                    .map(|i| c.apps()[i].pending_containers())
                    .fold(0u64, u64::saturating_add),
                total_mb: capacity.memory_mb,
                allocated_mb: allocated.memory_mb,
                available_mb: available.memory_mb,
                total_virtual_cores: capacity.vcores,
                allocated_virtual_cores: allocated.vcores,
                available_virtual_cores: available.vcores,
                total_gpus: capacity.gpus,
                allocated_gpus: allocated.gpus,
                total_nodes: c.nodes().count(),
            }
        })
        .await?;
    Ok(Json(ClusterMetricsResponse {
        cluster_metrics: metrics,
    }))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct NodesResponse {
    nodes: NodeList,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct NodeList {
    node: Vec<NodeInfo>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeInfo {
    id: String,
    kind: NodeKind,
    state: String,
    /// Who registered it.
    owner: String,
    last_health_update: u64,
    num_containers: usize,
    #[serde(rename = "usedMemoryMB")]
    used_memory_mb: u64,
    #[serde(rename = "availMemoryMB")]
    avail_memory_mb: u64,
    used_virtual_cores: u32,
    available_virtual_cores: u32,
    #[serde(rename = "usedGPUs")]
    used_gpus: u32,
    #[serde(rename = "availableGPUs")]
    available_gpus: u32,
    /// How an agent isolates its containers ("cgroup v1 (memory, cpu)",
    /// "process groups only: …"); absent for simulated nodes.
    #[serde(skip_serializing_if = "String::is_empty")]
    isolation: String,
    /// Where the agent serves container logs.
    #[serde(skip_serializing_if = "String::is_empty")]
    http_address: String,
}

/// YARN's node states; Weft's registered nodes are all RUNNING (a lost
/// node is removed, its containers asked for again).
const NODE_STATES: &[&str] = &[
    "NEW",
    "RUNNING",
    "UNHEALTHY",
    "DECOMMISSIONED",
    "LOST",
    "REBOOTED",
    "SHUTDOWN",
    "DECOMMISSIONING",
];

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct NodesQuery {
    /// Comma-separated YARN node states, e.g. `RUNNING,LOST`.
    states: Option<String>,
}

/// The registered nodes, allocated against capacity.
#[utoipa::path(get, path = "/ws/v1/cluster/nodes", tag = "cluster", params(NodesQuery),
    responses((status = 200, body = NodesResponse), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException)))]
pub async fn nodes(
    State(state): State<ApiState>,
    ApiQuery(query): ApiQuery<NodesQuery>,
) -> Result<Json<NodesResponse>, ApiError> {
    let wanted = parse_states(query.states.as_deref(), NODE_STATES, "node")?;
    let running = wanted
        .as_ref()
        .is_none_or(|w| w.iter().any(|s| s == "RUNNING"));
    let nodes = state
        .rm
        .with(move |rm: &mut ResourceManager| {
            if !running {
                return Vec::new();
            }
            rm.cluster()
                .nodes()
                .map(|n| {
                    let free = n.free();
                    NodeInfo {
                        id: n.id.clone(),
                        kind: n.kind,
                        state: "RUNNING".into(),
                        owner: n.owner.clone(),
                        last_health_update: n.last_heartbeat_ms,
                        num_containers: n.containers.len(),
                        used_memory_mb: n.allocated.memory_mb,
                        avail_memory_mb: free.memory_mb,
                        used_virtual_cores: n.allocated.vcores,
                        available_virtual_cores: free.vcores,
                        used_gpus: n.allocated.gpus,
                        available_gpus: free.gpus,
                        isolation: n.agent.isolation.clone(),
                        http_address: n.agent.http_address.clone(),
                    }
                })
                .collect()
        })
        .await?;
    Ok(Json(NodesResponse {
        nodes: NodeList { node: nodes },
    }))
}

/// A comma-separated list of state names, each one of `known` (any case).
fn parse_states(
    text: Option<&str>,
    known: &[&str],
    what: &str,
) -> Result<Option<Vec<String>>, ApiError> {
    let Some(text) = text else {
        return Ok(None);
    };
    let mut states = Vec::new();
    for state in text.split(',').map(|s| s.trim().to_ascii_uppercase()) {
        if !known.contains(&state.as_str()) {
            return Err(ApiError::bad_request(format!(
                "invalid {what} state {state:?} in states; expected some of {}",
                known.join(", ")
            )));
        }
        states.push(state);
    }
    Ok(Some(states))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RegisteredNode {
    node_id: String,
    /// How often the node should heartbeat.
    heartbeat_interval_ms: u64,
    /// Containers the node runs that it should not: kill them.
    kill: Vec<KillOrder>,
    /// The resource manager's epoch: orders of an older one are ignored.
    epoch: u64,
}

/// Registers a node (an agent), or registers it again after a restart:
/// with `running` listed it keeps those containers, else its containers
/// are lost (ABORTED, −100) and asked for again. Only callers in
/// `weft.security.node-acl`, and for a known node id only its first
/// registrant.
#[utoipa::path(post, path = "/ws/v1/cluster/nodes/register", tag = "nodes",
    request_body = RegisterNode,
    responses((status = 200, body = RegisteredNode), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 403, body = RemoteException),
        (status = 409, body = RemoteException), (status = 413, body = RemoteException)))]
pub async fn register_node(
    State(state): State<ApiState>,
    caller: Caller,
    JsonBody(request): JsonBody<RegisterNode>,
) -> Result<Json<RegisteredNode>, ApiError> {
    let node_id = request.node_id.clone();
    let registered = state
        .rm
        .with(move |rm: &mut ResourceManager| rm.register_node(&caller, &request))
        .await??;
    Ok(Json(RegisteredNode {
        node_id,
        heartbeat_interval_ms: state.heartbeat_interval_ms,
        kill: registered.kill,
        epoch: registered.epoch,
    }))
}

/// A node's heartbeat, from the caller that registered it: YARN's
/// numbered protocol (see docs/agents.md).
#[utoipa::path(post, path = "/ws/v1/cluster/nodes/{id}/heartbeat", tag = "nodes",
    params(("id" = String, Path, description = "The node id")),
    request_body = Heartbeat,
    responses((status = 200, body = NodeOrders), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 403, body = RemoteException),
        (status = 404, body = RemoteException), (status = 409, body = RemoteException),
        (status = 413, body = RemoteException)))]
pub async fn heartbeat(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    JsonBody(request): JsonBody<Heartbeat>,
) -> Result<Json<NodeOrders>, ApiError> {
    let orders = state
        .rm
        .with(move |rm: &mut ResourceManager| rm.node_heartbeat(&caller, &id, &request))
        .await??;
    Ok(Json(orders))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AppResponse {
    app: AppInfo,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AppsResponse {
    apps: AppList,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AppList {
    app: Vec<AppInfo>,
}

/// An app in YARN's field names, plus what Weft adds (project, asks, lost
/// containers).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppInfo {
    id: String,
    name: String,
    queue: String,
    user: String,
    project: String,
    priority: i32,
    state: AppState,
    final_status: String,
    submitted_time: u64,
    started_time: u64,
    finished_time: u64,
    #[serde(rename = "allocatedMB")]
    allocated_mb: u64,
    #[serde(rename = "allocatedVCores")]
    allocated_vcores: u32,
    #[serde(rename = "allocatedGPUs")]
    allocated_gpus: u32,
    running_containers: u32,
    finished_containers: u32,
    preempted_containers: u32,
    lost_containers: u32,
    /// Containers that exited non-zero (retried while their ask allows).
    failed_containers: u32,
    /// The exit status of the container whose failure failed the app.
    #[serde(skip_serializing_if = "Option::is_none")]
    exit_status: Option<i32>,
    /// Credits charged for its containers so far.
    credits: f64,
    pending_containers: u64,
    asks: Vec<Ask>,
    /// Why it failed or was killed; why a pending app waits (GET …/apps/{id} only).
    #[serde(skip_serializing_if = "Option::is_none")]
    diagnostics: Option<String>,
    /// 1 for the app its queue serves next (GET …/apps/{id} only).
    #[serde(skip_serializing_if = "Option::is_none")]
    position_in_queue: Option<usize>,
}

impl From<&App> for AppInfo {
    fn from(app: &App) -> AppInfo {
        AppInfo {
            id: app.id.clone(),
            name: app.name.clone(),
            queue: app.queue.clone(),
            user: app.user.clone(),
            project: app.project.clone(),
            priority: app.priority,
            state: app.state,
            final_status: app.state.final_status().into(),
            submitted_time: app.submit_time_ms,
            started_time: app.start_time_ms.unwrap_or(0),
            finished_time: app.finish_time_ms.unwrap_or(0),
            allocated_mb: app.used.memory_mb,
            allocated_vcores: app.used.vcores,
            allocated_gpus: app.used.gpus,
            running_containers: app.running_containers,
            finished_containers: app.finished_containers,
            preempted_containers: app.preempted_containers,
            lost_containers: app.lost_containers,
            failed_containers: app.failed_containers,
            exit_status: app.exit_status,
            credits: app.credits,
            pending_containers: app.pending_containers(),
            asks: app.asks.clone(),
            diagnostics: (!app.diagnostics.is_empty()).then(|| app.diagnostics.clone()),
            position_in_queue: None,
        }
    }
}

/// Submits an app. 202 once it is accepted into its queue.
#[utoipa::path(post, path = "/ws/v1/cluster/apps", tag = "apps",
    request_body = super::yarn_apps::SubmitBody,
    responses((status = 202, body = AppResponse), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 403, body = RemoteException),
        (status = 409, body = RemoteException), (status = 413, body = RemoteException)))]
pub async fn submit_app(
    State(state): State<ApiState>,
    caller: Caller,
    ClientAddr(submitter): ClientAddr,
    RawBody(body): RawBody,
) -> Result<(StatusCode, Json<AppResponse>), ApiError> {
    // Weft's own shape, or YARN's ApplicationSubmissionContext.
    let request: SubmitApp = if super::yarn_apps::is_yarn_shape(&body) {
        decode_json::<super::yarn_apps::YarnSubmission>(&body)?.into_submission()
    } else {
        decode_json(&body)?
    };
    let app = state
        .rm
        .with(move |rm: &mut ResourceManager| {
            rm.submit_app(&caller, request, &submitter)
                .map(|app| AppInfo::from(&app))
        })
        .await??;
    Ok((StatusCode::ACCEPTED, Json(AppResponse { app })))
}

/// YARN's filters for the app listing. Unknown parameters (such as the
/// `user.name` Hadoop's clients add) are ignored, as YARN does.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct AppsQuery {
    /// Comma-separated YARN application states, e.g. `RUNNING,ACCEPTED`.
    states: Option<String>,
    /// One state (YARN's older parameter).
    state: Option<String>,
    queue: Option<String>,
    user: Option<String>,
    /// At most this many apps, the newest (1 to 1,000; default 1,000).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u64>,
    started_time_begin: Option<u64>,
    started_time_end: Option<u64>,
    finished_time_begin: Option<u64>,
    finished_time_end: Option<u64>,
}

impl AppsQuery {
    fn filter(self) -> Result<AppFilter, ApiError> {
        let known: Vec<&str> = ["ACCEPTED", "RUNNING", "FINISHED", "FAILED", "KILLED"]
            .into_iter()
            .chain(OTHER_YARN_APP_STATES.iter().copied())
            .collect();
        let names = match (self.states, self.state) {
            (Some(states), _) => Some(states),
            (None, state) => state,
        };
        let states = parse_states(names.as_deref(), &known, "application")?.map(|names| {
            names
                .iter()
                .filter_map(|name| name.parse::<AppState>().ok())
                .collect()
        });
        let limit = match self.limit {
            None => DEFAULT_APPS_PAGE,
            Some(limit) => crate::limits::within("limit", limit, 1, MAX_APPS_PAGE as u64)
                .map_err(ApiError::bad_request)? as usize,
        };
        let window = |name: &str, begin: Option<u64>, end: Option<u64>| {
            if let (Some(b), Some(e)) = (begin, end)
                && b > e
            {
                return Err(ApiError::bad_request(format!(
                    "{name}TimeEnd ({e}) must be at least {name}TimeBegin ({b})"
                )));
            }
            Ok((begin, end))
        };
        Ok(AppFilter {
            states,
            queue: self.queue,
            user: self.user,
            started: window("started", self.started_time_begin, self.started_time_end)?,
            finished: window("finished", self.finished_time_begin, self.finished_time_end)?,
            limit,
        })
    }
}

/// Apps, filtered as YARN filters them; at most `limit` (the newest).
#[utoipa::path(get, path = "/ws/v1/cluster/apps", tag = "apps", params(AppsQuery),
    responses((status = 200, body = AppsResponse), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException)))]
pub async fn apps(
    State(state): State<ApiState>,
    ApiQuery(query): ApiQuery<AppsQuery>,
) -> Result<Json<AppsResponse>, ApiError> {
    let filter = query.filter()?;
    let apps = state
        .rm
        .with(move |rm: &mut ResourceManager| {
            filter
                .select(rm.cluster().apps())
                .into_iter()
                .map(AppInfo::from)
                .collect()
        })
        .await?;
    Ok(Json(AppsResponse {
        apps: AppList { app: apps },
    }))
}

/// One app; a pending one says why it waits and where it stands.
#[utoipa::path(get, path = "/ws/v1/cluster/apps/{id}", tag = "apps",
    params(("id" = String, Path, description = "The application id")),
    responses((status = 200, body = AppResponse), (status = 401, body = RemoteException),
        (status = 404, body = RemoteException)))]
pub async fn app(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<AppResponse>, ApiError> {
    let wanted = id.clone();
    let app = state
        .rm
        .with(move |rm: &mut ResourceManager| {
            let index = rm.cluster().app_index(&wanted)?;
            let mut info = AppInfo::from(&rm.cluster().apps()[index]);
            // A pending app says why it waits and where it stands (seed 002 §10.3).
            let usage = diagnostics::queue_usage(rm.cluster());
            if let Some(diagnosis) = rm.diagnose(index, &usage) {
                info.diagnostics = Some(diagnosis.reason);
                info.position_in_queue = Some(diagnosis.position_in_queue);
            }
            Some(info)
        })
        .await?;
    let app = app.ok_or_else(|| ApiError::not_found(format!("application {id} not found")))?;
    Ok(Json(AppResponse { app }))
}

/// YARN's app-state resource: `{"state": "RUNNING"}`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AppStateBody {
    state: String,
}

/// An app's state.
#[utoipa::path(get, path = "/ws/v1/cluster/apps/{id}/state", tag = "apps",
    params(("id" = String, Path, description = "The application id")),
    responses((status = 200, body = AppStateBody), (status = 401, body = RemoteException),
        (status = 404, body = RemoteException)))]
pub async fn app_state(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<AppStateBody>, ApiError> {
    let wanted = id.clone();
    let found = state
        .rm
        .with(move |rm: &mut ResourceManager| rm.cluster().app(&wanted).map(|a| a.state))
        .await?
        .ok_or_else(|| ApiError::not_found(format!("application {id} not found")))?;
    Ok(Json(AppStateBody {
        state: found.as_str().into(),
    }))
}

/// Kills an app, as YARN's `PUT …/state {"state": "KILLED"}`: its user, an
/// administrator of its queue or of the cluster. Pending containers are
/// dropped; running ones end now and are charged up to now.
#[utoipa::path(put, path = "/ws/v1/cluster/apps/{id}/state", tag = "apps",
    params(("id" = String, Path, description = "The application id")),
    request_body = AppStateBody,
    responses((status = 200, body = AppStateBody), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 403, body = RemoteException),
        (status = 404, body = RemoteException), (status = 413, body = RemoteException)))]
pub async fn kill_app(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    JsonBody(wanted): JsonBody<AppStateBody>,
) -> Result<Json<AppStateBody>, ApiError> {
    if !wanted.state.eq_ignore_ascii_case("KILLED") {
        return Err(ApiError::bad_request(format!(
            "an app's state can only be set to KILLED, not {:?}",
            wanted.state
        )));
    }
    let now = state
        .rm
        .with(move |rm: &mut ResourceManager| rm.kill_app(&caller, &id))
        .await??;
    Ok(Json(AppStateBody {
        state: now.as_str().into(),
    }))
}
