//! Cluster, node and application endpoints, in YARN's shapes.

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::extract::{ApiPath, ApiQuery, ClientAddr, JsonBody, RawBody, decode_json};
use super::openapi::RemoteException;
use super::yarn_reads::{AppPriority, AppQueue};
use super::{ApiError, ApiState};
use crate::cluster::{
    App, AppFilter, AppState, Ask, Node, NodeKind, NodeState, OTHER_YARN_APP_STATES, SubmitApp,
};
use crate::limits::{DEFAULT_APPS_PAGE, MAX_APPS_PAGE};
use crate::protocol::node::{
    Heartbeat, MAX_ORDERS_WAIT_MS, NodeOrders, OrdersWaiting, RegisterNode, RegisteredNode,
};
use crate::rm::requests::{NodeDecommissioned, NodeReleased};
use crate::rm::{ResourceManager, notices};
use crate::scheduler::diagnostics;
use crate::security::Caller;

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct ClusterInfoResponse {
    #[serde(rename = "clusterInfo")]
    cluster_info: ClusterInfo,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct ClusterInfo {
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
pub(super) async fn is_active(State(state): State<ApiState>) -> (StatusCode, &'static str) {
    if state.rm.is_active() {
        (StatusCode::OK, "Active")
    } else {
        (StatusCode::METHOD_NOT_ALLOWED, "Standby")
    }
}

/// The cluster's identity and state (YARN clients probe this first).
#[utoipa::path(get, path = "/ws/v1/cluster", tag = "cluster",
    responses((status = 200, body = ClusterInfoResponse), (status = 401, body = RemoteException)))]
pub(super) async fn info(
    State(state): State<ApiState>,
) -> Result<Json<ClusterInfoResponse>, ApiError> {
    cluster_info_of(&state).await
}

/// The same as GET /ws/v1/cluster.
#[utoipa::path(get, path = "/ws/v1/cluster/info", tag = "cluster",
    responses((status = 200, body = ClusterInfoResponse), (status = 401, body = RemoteException)))]
pub(super) async fn cluster_info(
    State(state): State<ApiState>,
) -> Result<Json<ClusterInfoResponse>, ApiError> {
    cluster_info_of(&state).await
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct ClusterMetricsResponse {
    #[serde(rename = "clusterMetrics")]
    cluster_metrics: ClusterMetrics,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct ClusterMetrics {
    apps_submitted: usize,
    apps_pending: usize,
    apps_running: usize,
    /// Apps that finished (YARN counts failed and killed apps apart).
    apps_completed: usize,
    apps_failed: usize,
    apps_killed: usize,
    containers_allocated: usize,
    containers_pending: u64,
    /// Weft does not reserve containers on nodes: always 0.
    containers_reserved: usize,
    #[serde(rename = "reservedMB")]
    reserved_mb: u64,
    reserved_virtual_cores: u32,
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
    /// Registered nodes and lost ones remembered (YARN's sum of every state).
    total_nodes: usize,
    active_nodes: usize,
    /// Nodes lost by silence and not registered since (the most recent
    /// 1,000, since this server started).
    lost_nodes: usize,
    /// Registered nodes whose health checks fail (not among the active).
    unhealthy_nodes: usize,
    /// Nodes being decommissioned, containers still running on them.
    decommissioning_nodes: usize,
    /// Nodes decommissioned, nothing running on them (still registered).
    decommissioned_nodes: usize,
    /// Weft has no reboots or shutdowns of nodes: these are 0.
    rebooted_nodes: usize,
    shutdown_nodes: usize,
}

/// YARN's cluster metrics: apps, containers and resources.
#[utoipa::path(get, path = "/ws/v1/cluster/metrics", tag = "cluster",
    responses((status = 200, body = ClusterMetricsResponse), (status = 401, body = RemoteException)))]
pub(super) async fn cluster_metrics(
    State(state): State<ApiState>,
) -> Result<Json<ClusterMetricsResponse>, ApiError> {
    let metrics = state
        .rm
        .with(|rm: &mut ResourceManager| {
            let c = rm.cluster();
            // Active apps by state; ended ones by the cluster's totals, as
            // the table keeps only the most recent.
            let active = |s: AppState| c.active_apps().filter(|&i| c.apps()[i].state == s).count();
            let (submitted, finished, killed_or_failed) = c.app_totals();
            let failed = c.failed_total();
            let (capacity, allocated) = (c.capacity(), c.allocated());
            let available = c.free();
            let nodes = c.node_counts();
            ClusterMetrics {
                apps_submitted: submitted,
                apps_pending: active(AppState::Accepted),
                apps_running: active(AppState::Running),
                apps_completed: finished,
                apps_failed: failed,
                apps_killed: killed_or_failed.saturating_sub(failed),
                containers_allocated: c.containers().count(),
                containers_reserved: 0,
                reserved_mb: 0,
                reserved_virtual_cores: 0,
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
                total_nodes: nodes.registered.saturating_add(nodes.lost),
                active_nodes: nodes.running,
                lost_nodes: nodes.lost,
                unhealthy_nodes: nodes.unhealthy,
                decommissioning_nodes: nodes.decommissioning,
                decommissioned_nodes: nodes.decommissioned,
                rebooted_nodes: 0,
                shutdown_nodes: 0,
            }
        })
        .await?;
    Ok(Json(ClusterMetricsResponse {
        cluster_metrics: metrics,
    }))
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct NodesResponse {
    nodes: NodeList,
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct NodeList {
    node: Vec<NodeInfo>,
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct NodeResponse {
    node: NodeInfo,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct NodeInfo {
    id: String,
    /// Its rack (YARN's network location): `/default-rack` unless its
    /// agent registered one.
    rack: String,
    /// Its node label (YARN's partition): none, or one.
    node_labels: Vec<String>,
    kind: NodeKind,
    /// RUNNING; UNHEALTHY while its health checks fail, DECOMMISSIONING
    /// and then DECOMMISSIONED once an administrator decommissions it (it
    /// gets no new containers); LOST for a node that stopped heartbeating.
    state: String,
    /// The host part of the agent's log address, else of the node id.
    node_host_name: String,
    /// Where the agent serves container logs ("" for a lost or simulated node).
    #[serde(rename = "nodeHTTPAddress")]
    node_http_address: String,
    /// Who registered it.
    owner: String,
    last_health_update: u64,
    /// What its agent's health checks found wrong (the disk checker, the
    /// health script); "" while it is healthy.
    health_report: String,
    /// While it is decommissioned: when what still runs on it is killed,
    /// in ms since the epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    decommission_deadline_ms: Option<u64>,
    /// This server's version (agents do not report theirs).
    version: String,
    num_containers: usize,
    /// Opportunistic containers its agent holds queued, waiting for room
    /// (YARN's numQueuedContainers); while they wait, `used*` may exceed
    /// the node's capacity (by at most the capacity).
    num_queued_containers: usize,
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
    /// Where the agent serves container logs (as `nodeHTTPAddress`).
    #[serde(skip_serializing_if = "String::is_empty")]
    http_address: String,
    /// Its attributes, as YARN reports node attributes.
    node_attributes_info: NodeAttributesInfo,
}

/// YARN's `nodeAttributesInfo`: `{"nodeAttributeInfo": [...]}`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct NodeAttributesInfo {
    node_attribute_info: Vec<NodeAttributeInfo>,
}

/// One node attribute as YARN reports it: its prefix (an agent's are
/// `nm.yarn.io`, the node manager's), name, type (always STRING) and value.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct NodeAttributeInfo {
    prefix: String,
    name: String,
    #[serde(rename = "type")]
    kind: &'static str,
    value: String,
}

impl NodeAttributesInfo {
    fn of(attributes: &std::collections::BTreeMap<String, String>) -> NodeAttributesInfo {
        NodeAttributesInfo {
            node_attribute_info: attributes
                .iter()
                .map(|(key, value)| {
                    let (prefix, name) = key
                        .split_once('/')
                        .unwrap_or((crate::limits::AGENT_ATTRIBUTE_PREFIX, key));
                    NodeAttributeInfo {
                        prefix: prefix.into(),
                        name: name.into(),
                        kind: "STRING",
                        value: value.clone(),
                    }
                })
                .collect(),
        }
    }
}

impl NodeInfo {
    fn new(n: &Node, state: NodeState) -> NodeInfo {
        let free = n.free();
        // Registered and heard from (healthy or not), not lost.
        let running = state != NodeState::Lost;
        let address = if running {
            n.agent.http_address.clone()
        } else {
            String::new()
        };
        let host_port = if running {
            n.http_host_port()
        } else {
            String::new()
        };
        let node_host_name = n.host_name().to_string();
        NodeInfo {
            id: n.id.clone(),
            rack: n.rack().into(),
            node_labels: if n.partition.is_empty() {
                Vec::new()
            } else {
                vec![n.partition.clone()]
            },
            kind: n.kind,
            state: state.as_str().into(),
            node_host_name,
            node_http_address: host_port,
            owner: n.owner.clone(),
            last_health_update: n.last_heartbeat_ms,
            health_report: n.unhealthy.clone().unwrap_or_default(),
            decommission_deadline_ms: n.decommission.map(|d| d.deadline_ms),
            version: env!("CARGO_PKG_VERSION").into(),
            num_containers: n.containers.len(),
            num_queued_containers: n.queued.len(),
            used_memory_mb: n.allocated.memory_mb,
            avail_memory_mb: if running { free.memory_mb } else { 0 },
            used_virtual_cores: n.allocated.vcores,
            available_virtual_cores: if running { free.vcores } else { 0 },
            used_gpus: n.allocated.gpus,
            available_gpus: if running { free.gpus } else { 0 },
            isolation: n.agent.isolation.clone(),
            http_address: address,
            node_attributes_info: NodeAttributesInfo::of(&n.agent.attributes),
        }
    }
}

/// YARN's node states; Weft's registered nodes are RUNNING (UNHEALTHY
/// while their health checks fail, DECOMMISSIONING or DECOMMISSIONED
/// when decommissioned), and the ones lost by silence LOST until they
/// register again.
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

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct NodesQuery {
    /// Comma-separated YARN node states, e.g. `RUNNING,LOST`.
    states: Option<String>,
}

/// The registered nodes, allocated against capacity, and the nodes lost
/// lately (state LOST).
#[utoipa::path(get, path = "/ws/v1/cluster/nodes", tag = "cluster", params(NodesQuery),
    responses((status = 200, body = NodesResponse), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException)))]
pub(super) async fn nodes(
    State(state): State<ApiState>,
    ApiQuery(query): ApiQuery<NodesQuery>,
) -> Result<Json<NodesResponse>, ApiError> {
    let wanted = parse_states(query.states.as_deref(), NODE_STATES, "node")?;
    let wants = move |state: NodeState| {
        wanted
            .as_ref()
            .is_none_or(|w| w.iter().any(|s| s == state.as_str()))
    };
    let nodes = state
        .rm
        .with(move |rm: &mut ResourceManager| {
            let c = rm.cluster();
            let running = c
                .nodes()
                .filter(|n| wants(n.state()))
                .map(|n| NodeInfo::new(n, n.state()));
            let lost = c
                .lost_nodes()
                .filter(|_| wants(NodeState::Lost))
                .map(|lost| NodeInfo::new(&lost.node, NodeState::Lost));
            running.chain(lost).collect()
        })
        .await?;
    Ok(Json(NodesResponse {
        nodes: NodeList { node: nodes },
    }))
}

/// One node, registered (RUNNING, UNHEALTHY, DECOMMISSIONING or
/// DECOMMISSIONED) or lost lately (LOST).
#[utoipa::path(get, path = "/ws/v1/cluster/nodes/{id}", tag = "cluster",
    params(("id" = String, Path, description = "The node id")),
    responses((status = 200, body = NodeResponse), (status = 401, body = RemoteException),
        (status = 404, body = RemoteException)))]
pub(super) async fn node(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<NodeResponse>, ApiError> {
    let wanted = id.clone();
    let node = state
        .rm
        .with(move |rm: &mut ResourceManager| {
            let c = rm.cluster();
            c.node(&wanted)
                .map(|n| NodeInfo::new(n, n.state()))
                .or_else(|| {
                    c.lost_node(&wanted)
                        .map(|lost| NodeInfo::new(&lost.node, NodeState::Lost))
                })
        })
        .await?
        .ok_or_else(|| ApiError::not_found(format!("node {id} not found")))?;
    Ok(Json(NodeResponse { node }))
}

/// A comma-separated list of state names, each one of `known` (any case).
/// Empty items are skipped, as YARN does, and repeats count once (so the
/// list is never longer than `known`); no item at all is no filter.
pub(super) fn parse_states(
    text: Option<&str>,
    known: &[&str],
    what: &str,
) -> Result<Option<Vec<String>>, ApiError> {
    let Some(text) = text else {
        return Ok(None);
    };
    let mut states: Vec<String> = Vec::new();
    for state in comma_list(text).map(|s| s.to_ascii_uppercase()) {
        if !known.contains(&state.as_str()) {
            return Err(ApiError::bad_request(format!(
                "invalid {what} state {state:?} in states; expected some of {}",
                known.join(", ")
            )));
        }
        if !states.contains(&state) {
            states.push(state);
        }
    }
    Ok((!states.is_empty()).then_some(states))
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
pub(super) async fn register_node(
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
        yarn_token_key: registered.yarn_token_key,
        expiry_interval_ms: registered.expiry_interval_ms,
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
pub(super) async fn heartbeat(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    JsonBody(request): JsonBody<Heartbeat>,
) -> Result<Json<std::sync::Arc<NodeOrders>>, ApiError> {
    let orders = state
        .rm
        .with(move |rm: &mut ResourceManager| rm.node_heartbeat(&caller, &id, &request))
        .await??;
    Ok(Json(orders))
}

/// A request's `wait_ms` as a wait: none when absent, refused above
/// [`MAX_ORDERS_WAIT_MS`] (naming the field and the limit), and cut to what
/// the server's idle timeout allows.
fn bounded_wait(wait_ms: Option<u64>, state: &ApiState) -> Result<Duration, ApiError> {
    let wait_ms = wait_ms.unwrap_or(0);
    if wait_ms > MAX_ORDERS_WAIT_MS {
        return Err(ApiError::bad_request(format!(
            "wait_ms is {wait_ms}, but may be at most {MAX_ORDERS_WAIT_MS}"
        )));
    }
    Ok(Duration::from_millis(wait_ms).min(state.longest_wait))
}

/// Resolves when the server stops: a request that waits ends then rather
/// than hold the stop up. (A server that cannot stop, its sender gone,
/// never resolves it.)
fn server_stops(state: &ApiState) -> impl std::future::Future<Output = ()> + use<> {
    let mut stopping = state.stopping.clone();
    async move {
        if stopping.wait_for(|stop| *stop).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct OrdersWaitQuery {
    /// How long to wait for placements, in ms (0, the default, answers at
    /// once; at most 30000, and less than `weft.http.idle-timeout-ms`).
    #[param(maximum = 30000)]
    wait_ms: Option<u64>,
}

/// Waits up to `wait_ms` for containers to be placed on node `id` and
/// says whether any wait for its next heartbeat, so its agent need not
/// wait for its interval to launch them (the orders come in the
/// heartbeat's answer). From the caller that registered it; one wait per
/// node at a time; a stopping server ends it.
#[utoipa::path(get, path = "/ws/v1/cluster/nodes/{id}/orders-waiting", tag = "nodes",
    params(("id" = String, Path, description = "The node id"), OrdersWaitQuery),
    responses((status = 200, body = OrdersWaiting), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 403, body = RemoteException),
        (status = 404, body = RemoteException), (status = 409, body = RemoteException)))]
pub(super) async fn orders_waiting(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(query): ApiQuery<OrdersWaitQuery>,
) -> Result<Json<OrdersWaiting>, ApiError> {
    let wait = bounded_wait(query.wait_ms, &state)?;
    let notice = state
        .rm
        .with(move |rm: &mut ResourceManager| rm.node_placement_notice(&caller, &id))
        .await??;
    let stopped = server_stops(&state);
    let waited = tokio::select! {
        waited = notice.wait(wait) => waited,
        () = stopped => Ok(false),
    };
    let orders_waiting = waited.map_err(ApiError::conflict)?;
    Ok(Json(OrdersWaiting { orders_waiting }))
}

/// Frees a node id for whoever registers it next (administrators only).
/// A node id belongs to whoever registered it first, also while it is
/// lost; releasing a registered node loses it now: its containers end
/// (ABORTED, −100), charged up to its last heartbeat, and are asked for
/// again.
#[utoipa::path(post, path = "/ws/v1/cluster/nodes/{id}/release", tag = "nodes",
    params(("id" = String, Path, description = "The node id")),
    responses((status = 200, body = NodeReleased), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 403, body = RemoteException),
        (status = 404, body = RemoteException), (status = 409, body = RemoteException)))]
pub(super) async fn release_node(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<NodeReleased>, ApiError> {
    let released = state
        .rm
        .with(move |rm: &mut ResourceManager| rm.release_node(&caller, &id))
        .await??;
    Ok(Json(released))
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct DecommissionQuery {
    /// Seconds its containers may still run before they are killed (0: at
    /// once, at most a year); `yarn.resourcemanager.nodemanager-graceful-decommission-timeout-secs`
    /// (3600) when left out.
    timeout: Option<u64>,
}

/// Decommissions a node (administrators only; YARN's graceful
/// decommission): it takes no new containers from now (DECOMMISSIONING),
/// what it runs goes on until the timeout and is then killed (ABORTED,
/// −100, asked for again), and once nothing runs it is DECOMMISSIONED.
/// Its agent goes on heartbeating; the decommission outlasts its restarts,
/// the server's and the node's loss (a lost node's id may be
/// decommissioned), until a recommission or a release of the id. Asked
/// again, the new timeout holds.
#[utoipa::path(post, path = "/ws/v1/cluster/nodes/{id}/decommission", tag = "nodes",
    params(("id" = String, Path, description = "The node id"), DecommissionQuery),
    responses((status = 200, body = NodeDecommissioned), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 403, body = RemoteException),
        (status = 404, body = RemoteException)))]
pub(super) async fn decommission_node(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(query): ApiQuery<DecommissionQuery>,
) -> Result<Json<NodeDecommissioned>, ApiError> {
    let answer = state
        .rm
        .with(move |rm: &mut ResourceManager| rm.decommission_node(&caller, &id, query.timeout))
        .await??;
    Ok(Json(answer))
}

/// Ends a node's decommission (administrators only): it takes containers
/// again at once (RUNNING, or UNHEALTHY if its checks fail).
#[utoipa::path(post, path = "/ws/v1/cluster/nodes/{id}/recommission", tag = "nodes",
    params(("id" = String, Path, description = "The node id")),
    responses((status = 200, body = NodeDecommissioned), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 403, body = RemoteException),
        (status = 404, body = RemoteException)))]
pub(super) async fn recommission_node(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<NodeDecommissioned>, ApiError> {
    let answer = state
        .rm
        .with(move |rm: &mut ResourceManager| rm.recommission_node(&caller, &id))
        .await??;
    Ok(Json(answer))
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct AppResponse {
    app: AppInfo,
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct AppsResponse {
    apps: AppList,
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct AppList {
    app: Vec<AppInfo>,
}

/// An app in YARN's field names, plus what Weft adds (project, asks, lost
/// containers).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct AppInfo {
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
    /// YARN's progress, 0 to 100 (`App::progress`): the share of its containers that ended
    /// (100 once the app has ended).
    progress: f64,
    /// Milliseconds from its start to its end, or to now (0 before it starts).
    elapsed_time: u64,
    application_type: String,
    /// Its tags, comma-separated (as YARN reports them).
    application_tags: String,
    /// YARN's trackingUI: UNASSIGNED before the app starts, History once it
    /// ended, else ApplicationMaster.
    #[serde(rename = "trackingUI")]
    tracking_ui: &'static str,
    /// The cluster timestamp its id carries.
    cluster_id: u64,
    /// MB-seconds and vcore-seconds its containers held (YARN's figures),
    /// and GPU-seconds, up to now.
    memory_seconds: u64,
    vcore_seconds: u64,
    #[serde(rename = "gpuSeconds")]
    gpu_seconds: u64,
    /// YARN's timeouts: the app's LIFETIME (`UNLIMITED` without one).
    timeouts: super::app_timeouts::AppTimeoutList,
    /// The node label it was submitted with (YARN's
    /// appNodeLabelExpression); absent when it named none.
    #[serde(skip_serializing_if = "Option::is_none")]
    app_node_label_expression: Option<String>,
}

impl AppInfo {
    /// `app` as its reports show it at `now`, in a cluster started at
    /// `cluster_id`.
    fn new(app: &App, now: u64, cluster_id: u64) -> AppInfo {
        let ended = app.finish_time_ms.is_some();
        let progress = 100.0 * app.progress();
        let elapsed_time = match app.start_time_ms {
            Some(start) => app.finish_time_ms.unwrap_or(now).saturating_sub(start),
            None => 0,
        };
        let [memory_seconds, vcore_seconds, gpu_seconds] =
            app.usage_at(app.finish_time_ms.unwrap_or(now)).whole();
        AppInfo {
            progress,
            elapsed_time,
            application_type: app.application_type.clone(),
            application_tags: app.tags.join(","),
            tracking_ui: match (app.start_time_ms, ended) {
                (_, true) => "History",
                (None, false) => "UNASSIGNED",
                (Some(_), false) => "ApplicationMaster",
            },
            cluster_id,
            memory_seconds,
            vcore_seconds,
            gpu_seconds,
            id: app.id.clone(),
            name: app.name.clone(),
            queue: app.queue.clone(),
            user: app.user.clone(),
            project: app.project.clone(),
            priority: app.priority,
            state: app.state,
            final_status: app.final_status().into(),
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
            timeouts: super::app_timeouts::AppTimeoutList::of(app, now),
            app_node_label_expression: (!app.node_label_expression.is_empty())
                .then(|| app.node_label_expression.clone()),
        }
    }
}

/// Submits an app. 202 once it is accepted into its queue.
#[utoipa::path(post, path = "/ws/v1/cluster/apps", tag = "apps",
    request_body = super::yarn_apps::SubmitBody,
    responses((status = 202, body = AppResponse), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 403, body = RemoteException),
        (status = 409, body = RemoteException), (status = 413, body = RemoteException)))]
pub(super) async fn submit_app(
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
                .map(|app| AppInfo::new(&app, rm.now(), rm.cluster().cluster_timestamp()))
        })
        .await??;
    Ok((StatusCode::ACCEPTED, Json(AppResponse { app })))
}

/// YARN's filters for the app listing. Unknown parameters (such as the
/// `user.name` Hadoop's clients add) are ignored, as YARN does.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub(super) struct AppsQuery {
    /// Comma-separated YARN application states, e.g. `RUNNING,ACCEPTED`.
    states: Option<String>,
    /// One state (YARN's older parameter).
    state: Option<String>,
    /// UNDEFINED (not ended), SUCCEEDED, FAILED or KILLED.
    final_status: Option<String>,
    queue: Option<String>,
    user: Option<String>,
    /// The app's name, exactly.
    name: Option<String>,
    /// Comma-separated application types (any case), e.g. `MAPREDUCE,YARN`.
    application_types: Option<String>,
    /// Comma-separated tags: apps with any of them.
    application_tags: Option<String>,
    /// Fields YARN may leave out (resourceRequests, timeouts, …): accepted
    /// and checked; Weft's reports are small and always whole.
    de_selects: Option<String>,
    /// At most this many apps, the newest (1 to 1,000; default 1,000).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u64>,
    started_time_begin: Option<u64>,
    started_time_end: Option<u64>,
    finished_time_begin: Option<u64>,
    finished_time_end: Option<u64>,
}

impl AppsQuery {
    /// The newest `limit` apps, unfiltered.
    pub(super) fn newest(limit: u64) -> AppsQuery {
        AppsQuery {
            limit: Some(limit),
            ..AppsQuery::default()
        }
    }
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
        let final_status = match self.final_status {
            None => None,
            Some(status) => {
                let upper = status.trim().to_ascii_uppercase();
                if !FINAL_STATUSES.contains(&upper.as_str()) {
                    return Err(ApiError::bad_request(format!(
                        "invalid finalStatus {status:?}; expected one of {}",
                        FINAL_STATUSES.join(", ")
                    )));
                }
                Some(upper)
            }
        };
        if let Some(fields) = &self.de_selects {
            for field in comma_list(fields) {
                if !DE_SELECTS.iter().any(|f| f.eq_ignore_ascii_case(&field)) {
                    return Err(ApiError::bad_request(format!(
                        "invalid deSelects field {field:?}; expected some of {}",
                        DE_SELECTS.join(", ")
                    )));
                }
            }
        }
        // An empty list is no filter (YARN skips empty items).
        let lowered = |list: Option<String>| {
            list.map(|l| {
                comma_list(&l)
                    .map(|s| s.to_lowercase())
                    .collect::<std::collections::BTreeSet<_>>()
            })
            .filter(|items| !items.is_empty())
        };
        Ok(AppFilter {
            states,
            final_status,
            queue: self.queue,
            user: self.user,
            name: self.name,
            types: lowered(self.application_types),
            tags: lowered(self.application_tags),
            started: window("started", self.started_time_begin, self.started_time_end)?,
            finished: window("finished", self.finished_time_begin, self.finished_time_end)?,
            limit,
        })
    }
}

/// YARN's final application statuses.
const FINAL_STATUSES: &[&str] = &["UNDEFINED", "SUCCEEDED", "FAILED", "KILLED"];

/// The fields YARN's `deSelects` may name.
const DE_SELECTS: &[&str] = &[
    "resourceRequests",
    "amNodeLabelExpression",
    "appNodeLabelExpression",
    "resourceInfo",
    "timeouts",
];

/// The non-empty items of a comma-separated parameter, trimmed.
pub(super) fn comma_list(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(String::from)
}

/// Apps, filtered as YARN filters them; at most `limit` (the newest).
#[utoipa::path(get, path = "/ws/v1/cluster/apps", tag = "apps", params(AppsQuery),
    responses((status = 200, body = AppsResponse), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException)))]
pub(super) async fn apps(
    State(state): State<ApiState>,
    ApiQuery(query): ApiQuery<AppsQuery>,
) -> Result<Json<AppsResponse>, ApiError> {
    let filter = query.filter()?;
    let apps = state
        .rm
        .with(move |rm: &mut ResourceManager| {
            let (now, cluster_id) = (rm.now(), rm.cluster().cluster_timestamp());
            filter
                .select(rm.cluster().apps())
                .into_iter()
                .map(|app| AppInfo::new(app, now, cluster_id))
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
pub(super) async fn app(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<AppResponse>, ApiError> {
    let wanted = id.clone();
    let app = state
        .rm
        .with(move |rm: &mut ResourceManager| {
            let index = rm.cluster().app_index(&wanted)?;
            let (now, cluster_id) = (rm.now(), rm.cluster().cluster_timestamp());
            let mut info = AppInfo::new(&rm.cluster().apps()[index], now, cluster_id);
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
pub(super) struct AppStateBody {
    state: String,
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct AppStateQuery {
    /// Weft's addition: wait up to this many ms for the app to end before
    /// answering (0, the default, answers at once, as YARN; at most 30000,
    /// and less than `weft.http.idle-timeout-ms`).
    #[param(maximum = 30000)]
    wait_ms: Option<u64>,
}

/// An app's state; with `wait_ms`, answered when the app ends (FINISHED,
/// FAILED or KILLED) or the wait runs out, whichever is first, so a client
/// following an app learns of its end at once without polling.
#[utoipa::path(get, path = "/ws/v1/cluster/apps/{id}/state", tag = "apps",
    params(("id" = String, Path, description = "The application id"), AppStateQuery),
    responses((status = 200, body = AppStateBody), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 404, body = RemoteException)))]
pub(super) async fn app_state(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(query): ApiQuery<AppStateQuery>,
) -> Result<Json<AppStateBody>, ApiError> {
    let mut wait = bounded_wait(query.wait_ms, &state)?;
    // A place among the requests that wait, held to the answer; with none
    // free (weft.http.max-waiting-requests), the wait is only a look.
    let place = if wait.is_zero() {
        None
    } else {
        state.waiting_places.clone().try_acquire_owned().ok()
    };
    if place.is_none() {
        wait = Duration::ZERO;
    }
    let read = |wait: bool| {
        let (handle, wanted) = (state.rm.clone(), id.clone());
        async move {
            handle
                .with(move |rm: &mut ResourceManager| {
                    if wait {
                        rm.app_end_wait(&wanted)
                    } else {
                        rm.cluster().app(&wanted).map(|a| (a.state, None))
                    }
                })
                .await
        }
    };
    let not_found = || ApiError::not_found(format!("application {id} not found"));
    let (found, end) = read(!wait.is_zero()).await?.ok_or_else(not_found)?;
    let found = match end {
        None => found,
        Some(end) => {
            let stopped = server_stops(&state);
            tokio::select! {
                _ = notices::app_ended(end, wait) => {}
                () = stopped => {}
            }
            read(false).await?.ok_or_else(not_found)?.0
        }
    };
    Ok(Json(AppStateBody {
        state: found.as_str().into(),
    }))
}

/// Changes an app's priority (YARN's `PUT …/priority`): its user, an
/// administrator of its queue or of the cluster. A priority above
/// `yarn.cluster.max-application-priority` is cut to it, as at submission;
/// an app that has ended keeps its own. Answers the priority now.
#[utoipa::path(put, path = "/ws/v1/cluster/apps/{id}/priority", tag = "apps",
    params(("id" = String, Path, description = "The application id")),
    request_body = AppPriority,
    responses((status = 200, body = AppPriority), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 403, body = RemoteException),
        (status = 404, body = RemoteException), (status = 413, body = RemoteException)))]
pub(super) async fn update_app_priority(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    JsonBody(wanted): JsonBody<AppPriority>,
) -> Result<Json<AppPriority>, ApiError> {
    let priority = state
        .rm
        .with(move |rm: &mut ResourceManager| rm.update_priority(&caller, &id, wanted.priority))
        .await??;
    Ok(Json(AppPriority { priority }))
}

/// Moves an app to another leaf queue (YARN's `PUT …/queue`): its user,
/// an administrator of its queue or of the cluster, who may also submit to
/// the target. The target must take it (not STOPPED, room for one more app
/// of its user, the app's node labels); an app in a reservation, or one
/// that has ended, stays. Answers the app's queue now.
#[utoipa::path(put, path = "/ws/v1/cluster/apps/{id}/queue", tag = "apps",
    params(("id" = String, Path, description = "The application id")),
    request_body = AppQueue,
    responses((status = 200, body = AppQueue), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 403, body = RemoteException),
        (status = 404, body = RemoteException), (status = 409, body = RemoteException),
        (status = 413, body = RemoteException)))]
pub(super) async fn move_app(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    JsonBody(wanted): JsonBody<AppQueue>,
) -> Result<Json<AppQueue>, ApiError> {
    let queue = state
        .rm
        .with(move |rm: &mut ResourceManager| rm.move_app(&caller, &id, &wanted.queue))
        .await??;
    Ok(Json(AppQueue { queue }))
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
pub(super) async fn kill_app(
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
