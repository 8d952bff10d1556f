//! `GET /ws/v1/cluster/scheduler`: the queue tree as YARN's Capacity
//! Scheduler reports it — configured, absolute and used capacities, per queue.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;

use super::openapi::RemoteException;
use super::{ApiError, ApiState};
use crate::cluster::Cluster;
use crate::resources::Resources;
use crate::rm::ResourceManager;

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct SchedulerResponse {
    scheduler: SchedulerInfoWrapper,
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct SchedulerInfoWrapper {
    #[serde(rename = "schedulerInfo")]
    scheduler_info: QueueInfo,
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct ResourcesInfo {
    memory: u64,
    #[serde(rename = "vCores")]
    vcores: u32,
    gpus: u32,
}

impl From<Resources> for ResourcesInfo {
    fn from(r: Resources) -> ResourcesInfo {
        ResourcesInfo {
            memory: r.memory_mb,
            vcores: r.vcores,
            gpus: r.gpus,
        }
    }
}

/// A queue as YARN's Capacity Scheduler reports it; the leaf-only fields are
/// absent on parents, which carry their children in `queues`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct QueueInfo {
    /// capacityScheduler (root), capacitySchedulerLeafQueueInfo, or absent.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    queue_name: String,
    queue_path: String,
    state: String,
    capacity: f64,
    max_capacity: f64,
    absolute_capacity: f64,
    absolute_max_capacity: f64,
    used_capacity: f64,
    absolute_used_capacity: f64,
    /// The resource its use is measured by (the one it uses the most of,
    /// as a share of the cluster): memory, vcores or GPUs; absent when it
    /// uses nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    dominant_resource: Option<String>,
    num_applications: u64,
    resources_used: ResourcesInfo,
    pending_resources: ResourcesInfo,
    priority: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    users: Option<UserList>,
    #[serde(skip_serializing_if = "Option::is_none")]
    user_limit: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    user_limit_factor: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_applications: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ordering_policy_info: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(no_recursion)]
    queues: Option<QueueList>,
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct QueueList {
    #[schema(no_recursion)]
    queue: Vec<QueueInfo>,
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct UserList {
    user: Vec<UserInfo>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct UserInfo {
    username: String,
    resources_used: ResourcesInfo,
    num_active_applications: u32,
    num_pending_applications: u32,
}

/// The queue tree: configured, absolute and used capacities, per queue.
#[utoipa::path(get, path = "/ws/v1/cluster/scheduler", tag = "cluster",
    responses((status = 200, body = SchedulerResponse), (status = 401, body = RemoteException)))]
pub(super) async fn scheduler(
    State(state): State<ApiState>,
) -> Result<Json<SchedulerResponse>, ApiError> {
    let mut info = state
        .rm
        .with(|rm: &mut ResourceManager| queue_info(rm.cluster(), 0))
        .await?;
    info.kind = Some("capacityScheduler".into());
    Ok(Json(SchedulerResponse {
        scheduler: SchedulerInfoWrapper {
            scheduler_info: info,
        },
    }))
}

fn queue_info(cluster: &Cluster, index: usize) -> QueueInfo {
    let queue = &cluster.queues().queues()[index];
    let mut used = Resources::ZERO;
    let mut pending = Resources::ZERO;
    let mut applications = 0;
    for app in cluster.active_apps().map(|i| &cluster.apps()[i]) {
        if is_within(cluster, app.queue_index, index) {
            used += app.used;
            pending += app.pending_resources();
            applications += 1;
        }
    }
    let dominant = used.dominant_share(&cluster.capacity());
    let absolute_used = dominant.percent;
    let used_capacity = if queue.absolute_capacity > 0.0 {
        absolute_used / queue.absolute_capacity * 100.0
    } else {
        0.0
    };
    let mut info = QueueInfo {
        kind: None,
        queue_name: queue.name.clone(),
        queue_path: queue.path.clone(),
        state: queue.state.as_str().into(),
        capacity: queue.capacity,
        max_capacity: queue.maximum_capacity,
        absolute_capacity: queue.absolute_capacity,
        absolute_max_capacity: queue.absolute_maximum_capacity,
        used_capacity,
        absolute_used_capacity: absolute_used,
        dominant_resource: (absolute_used > 0.0).then(|| dominant.resource.to_string()),
        num_applications: applications,
        resources_used: used.into(),
        pending_resources: pending.into(),
        priority: queue.priority,
        users: None,
        user_limit: None,
        user_limit_factor: None,
        max_applications: None,
        ordering_policy_info: None,
        queues: None,
    };
    if queue.is_leaf() {
        let mut users: BTreeMap<&str, (Resources, u32, u32)> = BTreeMap::new();
        for app in cluster
            .active_apps()
            .map(|i| &cluster.apps()[i])
            .filter(|a| a.queue_index == index)
        {
            let user = users
                .entry(app.user.as_str())
                .or_insert((Resources::ZERO, 0, 0));
            user.0 += app.used;
            if app.pending_containers() > 0 {
                user.2 += 1
            } else {
                user.1 += 1
            }
        }
        let users = users
            .into_iter()
            .map(|(name, (used, active, pending))| UserInfo {
                username: name.to_string(),
                resources_used: used.into(),
                num_active_applications: active,
                num_pending_applications: pending,
            })
            .collect();
        info.users = Some(UserList { user: users });
        info.kind = Some("capacitySchedulerLeafQueueInfo".into());
        info.user_limit = Some(queue.minimum_user_limit_percent);
        info.user_limit_factor = Some(queue.user_limit_factor);
        info.max_applications = Some(queue.maximum_applications);
        info.ordering_policy_info = Some(queue.ordering_policy.as_str().into());
    } else {
        let children = queue
            .children
            .iter()
            .map(|&c| queue_info(cluster, c))
            .collect();
        info.queues = Some(QueueList { queue: children });
    }
    info
}

/// Whether queue `queue` is `ancestor` or below it.
fn is_within(cluster: &Cluster, queue: usize, ancestor: usize) -> bool {
    let tree = cluster.queues().queues();
    let mut current = Some(queue);
    while let Some(q) = current {
        if q == ancestor {
            return true;
        }
        current = tree[q].parent;
    }
    false
}
