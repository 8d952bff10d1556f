//! Why a pending app waits, and where it stands in its queue — as data for
//! the API and the simulator (seed 002 §10.3), from what the host can see:
//! node sizes, queue limits and free resources.

use crate::cluster::{Cluster, NodeState};
use crate::resources::Resources;

/// A pending app's diagnosis.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Diagnosis {
    /// Why it waits, for people: an ask no node can fit, a queue at its
    /// maximum capacity or a user at the user limit (each naming the
    /// limiting resource and its figures), or waiting for resources.
    pub reason: String,
    /// 1 for the app its queue serves next (priority, then submission).
    pub position_in_queue: usize,
}

/// Every queue's use, its descendants' included.
pub fn queue_usage(cluster: &Cluster) -> Vec<Resources> {
    let tree = cluster.queues().queues();
    let mut used = vec![Resources::ZERO; tree.len()];
    for app in cluster.active_apps().map(|i| &cluster.apps()[i]) {
        let mut queue = Some(app.queue_index);
        while let Some(q) = queue {
            used[q] += app.used;
            queue = tree[q].parent;
        }
    }
    used
}

/// Why app `app_index` waits, or None if nothing of it is pending.
pub fn diagnose(cluster: &Cluster, app_index: usize, usage: &[Resources]) -> Option<Diagnosis> {
    let app = &cluster.apps()[app_index];
    if app.pending_containers() == 0 {
        return None;
    }
    let capacity = cluster.capacity();
    let tree = cluster.queues().queues();
    // The largest node an ask for `partition` may run on, and how many.
    let largest_for = |partition: &str| {
        let nodes = cluster
            .nodes()
            .filter(|n| cluster.may_run_on(partition, &n.partition));
        nodes.fold((Resources::ZERO, 0), |(most, count), n| {
            let most = Resources {
                memory_mb: most.memory_mb.max(n.capacity.memory_mb),
                vcores: most.vcores.max(n.capacity.vcores),
                gpus: most.gpus.max(n.capacity.gpus),
            };
            (most, count + 1)
        })
    };
    let share = |used: &Resources| used.dominant_share(&capacity).percent;
    let pending: Vec<&crate::cluster::Ask> = app.asks.iter().filter(|a| a.pending > 0).collect();
    let unfit = pending.iter().find_map(|ask| {
        let (largest, nodes) = largest_for(&ask.partition);
        (!ask.resources.fits_in(&largest)).then_some((ask, largest, nodes))
    });
    let labelled = pending.iter().find(|a| !a.partition.is_empty());
    // A constrained ask no node of its partition may take now.
    let blocked = app.asks.iter().enumerate().find_map(|(i, ask)| {
        let constraint = ask.constraint.as_ref().filter(|_| ask.pending > 0)?;
        let counts = cluster.tag_counts(app_index, i)?;
        let mut nodes = cluster.nodes().filter(|n| n.partition == ask.partition);
        (!nodes.any(|n| counts.allows(n))).then_some(constraint)
    });
    let reason = if let Some((ask, largest, nodes)) = unfit {
        match (ask.partition.as_str(), nodes) {
            ("", _) => format!(
                "no node can fit the ask {}: the largest node offers {largest}",
                ask.resources
            ),
            (label, 0) => format!(
                "no node is in partition {label:?}: its asks wait for one (weft agent --labels {label}, or POST /ws/v1/cluster/nodes/{{id}}/replace-labels?labels={label})"
            ),
            (label, _) => format!(
                "no node of partition {label:?} can fit the ask {}: the largest offers {largest}",
                ask.resources
            ),
        }
    } else if let Some(constraint) = blocked {
        format!(
            "no node satisfies its placement constraint {constraint} now: it waits for containers to end or nodes to join"
        )
    } else if let Some(locality) = pending
        .iter()
        .filter_map(|a| a.locality.as_ref())
        .find(|l| l.level != crate::cluster::Level::OffSwitch)
    {
        let places: Vec<&str> = locality
            .nodes
            .iter()
            .chain(&locality.racks)
            .map(String::as_str)
            .collect();
        let next = match (locality.level, locality.relax_locality) {
            (crate::cluster::Level::NodeLocal, _) => "before it may go to their racks",
            (_, true) => "before it may go anywhere",
            (_, false) => "and keeps to them (it does not relax locality)",
        };
        // As the count: the node delay at most the cluster's nodes.
        let (configured, nodes) = (
            cluster.queues().node_locality_delay,
            cluster.nodes().count(),
        );
        let delay = if configured as usize > nodes {
            format!("node-locality-delay {configured}, capped at this cluster's {nodes} nodes")
        } else {
            format!("node-locality-delay {configured}")
        };
        format!(
            "waiting for a {} place on {}: {} scheduling opportunities missed ({delay}; each node offers one a heartbeat interval) {next}",
            if locality.level == crate::cluster::Level::NodeLocal
                || locality.racks.is_empty() && !locality.relax_locality
            {
                "node-local"
            } else {
                "rack-local"
            },
            places.join(", "),
            locality.missed_opportunities,
        )
    } else if let Some(ask) = labelled {
        let label = ask.partition.as_str();
        let shares = cluster.queues().partition_shares(label);
        let share = shares[app.queue_index];
        let (room, free) = cluster
            .nodes()
            .filter(|n| n.partition == label)
            .fold((Resources::ZERO, Resources::ZERO), |(room, free), n| {
                (room + n.usable_capacity(), free + n.free())
            });
        match share {
            Some(share) if share.absolute_capacity <= 0.0 => format!(
                "queue {} is guaranteed none of partition {label:?} (its accessible-node-labels.{label}.capacity is 0), so its users may hold none of it ({room} in all, {free} free)",
                tree[app.queue_index].path
            ),
            _ => format!(
                "waiting for resources in partition {label:?}: {free} free of {room}; queue {} is guaranteed {:.1}% of it, at most {:.1}%",
                tree[app.queue_index].path,
                share.map_or(0.0, |s| s.absolute_capacity),
                share.map_or(0.0, |s| s.absolute_maximum_capacity)
            ),
        }
    } else if let Some(full) = ancestors(cluster, app.queue_index)
        .find(|&q| share(&usage[q]) + 1e-9 >= tree[q].absolute_maximum_capacity)
    {
        let dominant = usage[full].dominant_share(&capacity);
        format!(
            "queue {} is at its maximum capacity by {}: {} used, {:.1}% of the cluster, its maximum {:.1}%",
            tree[full].path,
            dominant.resource,
            dominant,
            dominant.percent,
            tree[full].absolute_maximum_capacity
        )
    } else if let Some(limit) = user_limit_reached(cluster, app_index, usage) {
        limit
    } else if let Some(gang) = app
        .asks
        .iter()
        .filter(|a| a.pending > 0)
        .find_map(|a| a.gang.filter(|g| !g.placed).map(|g| (a, g)))
    {
        let (ask, gang) = gang;
        let queue = &tree[app.queue_index];
        let whole = ask.resources.saturating_times(gang.minimum);
        let most = whole.dominant_share(&capacity).percent;
        if most > queue.absolute_maximum_capacity + 1e-9 {
            format!(
                "its gang of at least {} × {} ({whole}, {most:.1}% of the cluster) is more than queue {} may ever hold ({:.1}%): it waits for the cluster to grow, or for its timeout",
                gang.minimum, ask.resources, queue.path, queue.absolute_maximum_capacity
            )
        } else {
            format!(
                "waiting to place its gang of at least {} × {} whole (all or nothing): {} free in the cluster",
                gang.minimum,
                ask.resources,
                cluster.free(),
            )
        }
    } else {
        let queue = &tree[app.queue_index];
        let dominant = usage[app.queue_index].dominant_share(&capacity);
        format!(
            "waiting for resources: {} free in the cluster; queue {} uses {:.1}% of it ({}; guaranteed {:.1}%, maximum {:.1}%)",
            cluster.free(),
            queue.path,
            dominant.percent,
            dominant,
            queue.absolute_capacity,
            queue.absolute_maximum_capacity,
        )
    };
    // Whatever the reason, nodes that take nothing new are part of it.
    let reason = reason + &unusable_nodes(cluster);
    let ahead = cluster
        .active_apps()
        .map(|i| &cluster.apps()[i])
        .filter(|other| other.queue_index == app.queue_index && other.pending_containers() > 0)
        .filter(|other| {
            // Higher priority first (Reverse: negating i32::MIN overflows).
            (
                std::cmp::Reverse(other.priority),
                other.submit_time_ms,
                &other.id,
            ) < (std::cmp::Reverse(app.priority), app.submit_time_ms, &app.id)
        })
        .count();
    Some(Diagnosis {
        reason,
        position_in_queue: ahead + 1,
    })
}

/// "; N nodes … take no new containers" when some are unhealthy or
/// decommissioned (they offer nothing), else "".
fn unusable_nodes(cluster: &Cluster) -> String {
    // One pass over the nodes: the unhealthy (the first of them kept) and
    // the decommissioned.
    let (mut unhealthy, mut decommissioned, mut first_unhealthy) = (0, 0, None);
    for node in cluster.nodes() {
        match node.state() {
            NodeState::Unhealthy => {
                unhealthy += 1;
                first_unhealthy.get_or_insert(node);
            }
            NodeState::Decommissioning | NodeState::Decommissioned => decommissioned += 1,
            NodeState::Running | NodeState::Lost => {}
        }
    }
    let mut said = String::new();
    for (count, what) in [(unhealthy, "unhealthy"), (decommissioned, "decommissioned")] {
        match count {
            0 => {}
            1 => said.push_str(&format!("; 1 node is {what} and takes no new containers")),
            n => said.push_str(&format!(
                "; {n} nodes are {what} and take no new containers"
            )),
        }
    }
    // The one unhealthy node of a small cluster (a new user's local
    // agent on a full disk): why, in its agent's words.
    if unhealthy == 1
        && let Some(node) = first_unhealthy
    {
        said.push_str(&format!(
            " ({}: {})",
            node.id,
            node.unhealthy.as_deref().unwrap_or_default()
        ));
    }
    said
}

/// The user limit as Hadoop 3 computes it (and the `capacity` policy
/// enforces it), in percent of the cluster: with `current` the larger of the
/// queue's guarantee and its use plus one more container, each active user
/// may have the larger of current ÷ active users and current ×
/// minimum-user-limit-percent, but never more than guarantee ×
/// user-limit-factor nor the queue's maximum; a user who holds nothing in
/// the queue may always have one container (YARN checks what the user holds
/// before the container). Some(reason) if the app's user is at it.
fn user_limit_reached(cluster: &Cluster, app_index: usize, usage: &[Resources]) -> Option<String> {
    let app = &cluster.apps()[app_index];
    let queue = &cluster.queues().queues()[app.queue_index];
    let capacity = cluster.capacity();
    let share = |used: &Resources| used.dominant_share(&capacity).percent;
    let ask = app.asks.iter().find(|a| a.pending > 0)?;
    let in_queue = || {
        cluster
            .active_apps()
            .map(|i| &cluster.apps()[i])
            .filter(|a| a.queue_index == app.queue_index)
    };
    let active_users: std::collections::BTreeSet<&str> = in_queue()
        .filter(|a| a.pending_containers() > 0)
        .map(|a| a.user.as_str())
        .collect();
    let user_used = in_queue()
        .filter(|a| a.user == app.user)
        .fold(Resources::ZERO, |sum, a| sum + a.used);
    // Shares of sums, as the policy reckons them.
    let limit = user_limit(
        queue,
        queue.absolute_capacity,
        queue.absolute_maximum_capacity,
        share(&(usage[app.queue_index] + ask.resources)),
        active_users.len(),
    );
    let used = share(&user_used);
    (!user_used.is_zero() && share(&(user_used + ask.resources)) > limit + 1e-9).then(|| {
        format!(
            "user {} reached the user limit of queue {}: uses {used:.1}% of the cluster by {} ({}), limit {limit:.1}% \
             ({} active users, minimum-user-limit-percent {}, user-limit-factor {})",
            app.user,
            queue.path,
            user_used.dominant_share(&capacity).resource,
            user_used.dominant_share(&capacity),
            active_users.len(),
            queue.minimum_user_limit_percent,
            queue.user_limit_factor
        )
    })
}

/// The user limit of `queue` in percent of the cluster (or of a partition:
/// `guarantee` and `maximum` are the queue's share of it), for a container
/// that would bring the queue's use to `queue_used_with_ask` percent, with
/// `active_users` users waiting in it (Hadoop 3's formula, as the
/// `capacity` policy computes it).
pub(super) fn user_limit(
    queue: &crate::queues::Queue,
    guarantee: f64,
    maximum: f64,
    queue_used_with_ask: f64,
    active_users: usize,
) -> f64 {
    let current = guarantee.max(queue_used_with_ask);
    (current / active_users.max(1) as f64)
        .max(current * queue.minimum_user_limit_percent / 100.0)
        .min(guarantee * queue.user_limit_factor)
        .min(maximum)
}

/// `queue` and its ancestors up to root.
fn ancestors(cluster: &Cluster, queue: usize) -> impl Iterator<Item = usize> + '_ {
    let tree = cluster.queues().queues();
    std::iter::successors(Some(queue), move |&q| tree[q].parent)
}
