//! `GET /ws/v1/cluster/scheduler`: the queue tree as YARN's Capacity
//! Scheduler reports it — configured, absolute and used capacities, per queue.

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use super::{ApiError, ApiState};
use crate::cluster::{Cluster, Resources};
use crate::rm::ResourceManager;

pub async fn scheduler(State(state): State<ApiState>) -> Result<Json<Value>, ApiError> {
    let info = state
        .rm
        .with(|rm: &mut ResourceManager| queue_json(&rm.cluster, 0))
        .await?;
    let mut info = info;
    info["type"] = json!("capacityScheduler");
    Ok(Json(json!({ "scheduler": { "schedulerInfo": info } })))
}

/// Percent of `total` that `used` is, by its dominant resource.
fn dominant_percent(used: &Resources, total: &Resources) -> f64 {
    let (memory, vcores, gpus) = used.fractions_of(total);
    memory.max(vcores).max(gpus) * 100.0
}

fn queue_json(cluster: &Cluster, index: usize) -> Value {
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
    let absolute_used = dominant_percent(&used, &cluster.capacity());
    let used_capacity = if queue.absolute_capacity > 0.0 {
        absolute_used / queue.absolute_capacity * 100.0
    } else {
        0.0
    };
    let mut body = json!({
        "queueName": queue.name,
        "queuePath": queue.path,
        "state": queue.state,
        "capacity": queue.capacity,
        "maxCapacity": queue.maximum_capacity,
        "absoluteCapacity": queue.absolute_capacity,
        "absoluteMaxCapacity": queue.absolute_maximum_capacity,
        "usedCapacity": used_capacity,
        "absoluteUsedCapacity": absolute_used,
        "numApplications": applications,
        "resourcesUsed": { "memory": used.memory_mb, "vCores": used.vcores, "gpus": used.gpus },
        "pendingResources": { "memory": pending.memory_mb, "vCores": pending.vcores, "gpus": pending.gpus },
        "priority": queue.priority,
    });
    if queue.is_leaf() {
        let mut users: std::collections::BTreeMap<&str, (Resources, u32, u32)> =
            std::collections::BTreeMap::new();
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
        let users: Vec<Value> = users
            .into_iter()
            .map(|(name, (used, active, pending))| {
                json!({
                    "username": name,
                    "resourcesUsed": { "memory": used.memory_mb, "vCores": used.vcores, "gpus": used.gpus },
                    "numActiveApplications": active,
                    "numPendingApplications": pending,
                })
            })
            .collect();
        body["users"] = json!({ "user": users });
        body["type"] = json!("capacitySchedulerLeafQueueInfo");
        body["userLimit"] = json!(queue.minimum_user_limit_percent);
        body["userLimitFactor"] = json!(queue.user_limit_factor);
        body["maxApplications"] = json!(queue.maximum_applications);
        body["orderingPolicyInfo"] = json!(queue.ordering_policy);
    } else {
        let children: Vec<Value> = queue
            .children
            .iter()
            .map(|&c| queue_json(cluster, c))
            .collect();
        body["queues"] = json!({ "queue": children });
    }
    body
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
