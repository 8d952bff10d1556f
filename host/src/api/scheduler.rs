//! `GET /ws/v1/cluster/scheduler`: the queue tree as YARN's Capacity
//! Scheduler reports it — configured, absolute and used capacities, per queue
//! and, when the cluster has node labels, per partition (YARN's
//! `capacities.queueCapacitiesByPartition` and
//! `resources.resourceUsagesByPartition`).

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
    /// Its `capacity` as configured by weight (`2.5w`), its share then
    /// being `capacity`; -1 when it is configured as a percentage (YARN's).
    weight: f64,
    /// `static`, or `dynamicFlexible` for a leaf made for apps (YARN's).
    creation_method: &'static str,
    /// `flexible` where the queue makes leaves for apps
    /// (`auto-queue-creation-v2.enabled`), else `off` (YARN's).
    auto_creation_eligibility: &'static str,
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
    /// `disable_preemption` in force (its own or inherited): reclaim takes
    /// none of its apps' containers.
    preemption_disabled: bool,
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
    /// Its shares of each partition it may use (only when the cluster
    /// has node labels; "" is the default partition).
    #[serde(skip_serializing_if = "Option::is_none")]
    capacities: Option<PartitionCapacities>,
    /// What it holds and waits for in each partition it may use (only
    /// when the cluster has node labels).
    #[serde(skip_serializing_if = "Option::is_none")]
    resources: Option<PartitionResources>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(no_recursion)]
    queues: Option<QueueList>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct PartitionCapacities {
    queue_capacities_by_partition: Vec<PartitionCapacity>,
}

/// A queue's share of one partition, in percent (of its parent's share,
/// and of the partition's nodes), and how much of it is used.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct PartitionCapacity {
    partition_name: String,
    capacity: f64,
    used_capacity: f64,
    max_capacity: f64,
    absolute_capacity: f64,
    absolute_used_capacity: f64,
    absolute_max_capacity: f64,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct PartitionResources {
    resource_usages_by_partition: Vec<PartitionUsage>,
}

/// What a queue's apps hold and wait for in one partition.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct PartitionUsage {
    partition_name: String,
    used: ResourcesInfo,
    pending: ResourcesInfo,
}

/// The partitions of a labelled cluster: each one's nodes' capacity, and
/// what each active app holds and waits for in it.
struct Partitions {
    /// "" first, then each label.
    names: Vec<String>,
    capacity: Vec<Resources>,
    /// Per partition, each queue's share of it (None: it may not use it).
    shares: Vec<Vec<Option<crate::queues::Share>>>,
    /// Per partition, what each queue's apps (its subtree's) hold there.
    used: Vec<Vec<Resources>>,
    /// Per partition, what each queue's apps wait for there.
    pending: Vec<Vec<Resources>>,
}

impl Partitions {
    /// None when the cluster has no labels (one partition: the queue's
    /// own figures say it all).
    fn of(cluster: &Cluster) -> Option<Partitions> {
        if cluster.node_labels().is_empty() {
            return None;
        }
        let mut names = vec![String::new()];
        names.extend(
            cluster
                .node_labels()
                .iter()
                .map(|(name, _)| name.to_string()),
        );
        let position = |label: &str| names.iter().position(|n| n == label);
        let tree = cluster.queues().queues();
        let mut capacity = vec![Resources::ZERO; names.len()];
        let mut used = vec![vec![Resources::ZERO; tree.len()]; names.len()];
        let mut pending = used.clone();
        // Added to a queue and every queue above it.
        let add = |figures: &mut Vec<Vec<Resources>>, p: usize, leaf: usize, what: Resources| {
            let mut queue = Some(leaf);
            while let Some(q) = queue.filter(|&q| q < tree.len()) {
                figures[p][q] += what;
                queue = tree[q].parent;
            }
        };
        for node in cluster.nodes() {
            let Some(p) = position(&node.partition) else {
                continue;
            };
            capacity[p] += node.capacity;
            for container in node
                .containers
                .iter()
                .filter_map(|id| cluster.container(id))
            {
                if let Some(app) = cluster.app(&container.app) {
                    add(&mut used, p, app.queue_index, container.resources);
                }
            }
        }
        for app in cluster.active_apps().map(|i| &cluster.apps()[i]) {
            for ask in &app.asks {
                let Some(p) = position(&ask.partition) else {
                    continue;
                };
                let waiting = ask.resources.times(ask.pending).unwrap_or(Resources::ZERO);
                add(&mut pending, p, app.queue_index, waiting);
            }
        }
        let shares = names
            .iter()
            .map(|name| cluster.queues().partition_shares(name))
            .collect();
        Some(Partitions {
            names,
            capacity,
            shares,
            used,
            pending,
        })
    }

    /// The per-partition figures of the queue at `index` in the tree.
    fn of_queue(&self, index: usize) -> (PartitionCapacities, PartitionResources) {
        let mut capacities = Vec::new();
        let mut usages = Vec::new();
        for (p, name) in self.names.iter().enumerate() {
            let Some(share) = self.shares[p][index] else {
                continue; // it may not use this one
            };
            let (used, pending) = (self.used[p][index], self.pending[p][index]);
            let absolute_used = used.dominant_share(&self.capacity[p]).percent;
            capacities.push(PartitionCapacity {
                partition_name: name.clone(),
                capacity: share.capacity,
                used_capacity: if share.absolute_capacity > 0.0 {
                    absolute_used / share.absolute_capacity * 100.0
                } else {
                    0.0
                },
                max_capacity: share.maximum_capacity,
                absolute_capacity: share.absolute_capacity,
                absolute_used_capacity: absolute_used,
                absolute_max_capacity: share.absolute_maximum_capacity,
            });
            usages.push(PartitionUsage {
                partition_name: name.clone(),
                used: used.into(),
                pending: pending.into(),
            });
        }
        (
            PartitionCapacities {
                queue_capacities_by_partition: capacities,
            },
            PartitionResources {
                resource_usages_by_partition: usages,
            },
        )
    }
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
        .with(|rm: &mut ResourceManager| {
            let partitions = Partitions::of(rm.cluster());
            let view = View {
                cluster: rm.cluster(),
                partitions: partitions.as_ref(),
                dynamic: &rm.auto_created_queues().collect(),
            };
            queue_info(&view, 0)
        })
        .await?;
    info.kind = Some("capacityScheduler".into());
    Ok(Json(SchedulerResponse {
        scheduler: SchedulerInfoWrapper {
            scheduler_info: info,
        },
    }))
}

/// What the scheduler view is made from.
struct View<'a> {
    cluster: &'a Cluster,
    partitions: Option<&'a Partitions>,
    /// The leaves made for apps (auto-queue-creation-v2).
    dynamic: &'a std::collections::BTreeSet<&'a str>,
}

fn queue_info(view: &View<'_>, index: usize) -> QueueInfo {
    let (cluster, partitions) = (view.cluster, view.partitions);
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
        weight: queue.weight.unwrap_or(-1.0),
        creation_method: if view.dynamic.contains(queue.path.as_str()) {
            "dynamicFlexible"
        } else {
            "static"
        },
        auto_creation_eligibility: if queue.auto_creation.is_some() {
            "flexible"
        } else {
            "off"
        },
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
        preemption_disabled: queue.preemption_disabled,
        users: None,
        user_limit: None,
        user_limit_factor: None,
        max_applications: None,
        ordering_policy_info: None,
        capacities: None,
        resources: None,
        queues: None,
    };
    if let Some(partitions) = partitions {
        let (capacities, resources) = partitions.of_queue(index);
        info.capacities = Some(capacities);
        info.resources = Some(resources);
    }
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
            .map(|&c| queue_info(view, c))
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
