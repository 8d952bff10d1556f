//! What a round's snapshot carries beyond sizes and shares (weft:policy
//! 0.3.0): the round's kind and partition, the partitions and racks, node
//! attributes, queue paths and decayed use, each queue's share of each
//! partition, the apps' names, types, projects, starts, deadlines, tags
//! and their users' decayed use, the asks' partitions, locality, gangs,
//! constraints and tags, and the tagged containers the round's constraints
//! count.

use std::collections::{BTreeSet, HashMap};

use crate::cluster::{Cluster, Level, Node};
use crate::policy::{
    Attribute, ConstraintScope, ExecutionType, LocalityLevel, PlacementConstraint, RoundKind,
    Snapshot,
};
use crate::resources::ResourceSeconds;

use super::{Part, millis};

/// Where a round's snapshot rows come from in the cluster.
pub(super) struct Origins<'a> {
    /// The snapshot's nodes, in its order.
    pub nodes: &'a [&'a Node],
    /// The cluster's index of each snapshot app, in its order.
    pub apps: &'a [usize],
    /// (cluster app, ask) of each snapshot ask.
    pub asks: &'a [(usize, usize)],
    /// How many of the snapshot's queues are the configured tree's (the
    /// plan follower's come after).
    pub tree_queues: usize,
}

/// Fills `snapshot`'s 0.3.0 tables and columns for a round of `part` at `now`.
pub(super) fn fill(
    cluster: &Cluster,
    now: u64,
    part: &Part,
    origins: &Origins<'_>,
    snapshot: &mut Snapshot,
) {
    let partitions = partitions(cluster, snapshot);
    let partition_of = |name: &str| partitions.get(name).copied().unwrap_or(0);
    let (kind, label) = match part {
        Part::Whole => (RoundKind::Whole, ""),
        Part::Partition(label) => (RoundKind::Partition, label.as_str()),
        // Its asks are all opportunistic; its nodes' free room is their
        // queues'. A partition's round as far as a policy can tell.
        Part::Queued(label) => (RoundKind::Partition, label.as_str()),
        Part::Lending(label) => (RoundKind::Lending, label.as_str()),
        Part::Constrained { partition, .. } => (RoundKind::Restricted, partition.as_str()),
    };
    snapshot.round.kind = kind;
    snapshot.round.partition = partition_of(label);
    let delay = cluster.queues().node_locality_delay;
    snapshot.locality_delays.node_locality_delay =
        u32::try_from(cluster.nodes().count()).map_or(delay, |nodes| delay.min(nodes));
    snapshot.locality_delays.rack_locality_additional_delay =
        cluster.queues().rack_locality_additional_delay;

    // Nodes: partition, rack, attributes.
    let mut racks: HashMap<String, u32> = HashMap::new();
    let mut rack_of = |rack: &str, snapshot: &mut Snapshot| -> u32 {
        if let Some(&index) = racks.get(rack) {
            return index;
        }
        let index = snapshot.racks.len() as u32;
        snapshot.racks.push(rack.to_string());
        racks.insert(rack.to_string(), index);
        index
    };
    snapshot.racks.clear();
    let mut node_index: HashMap<&str, u32> = HashMap::with_capacity(origins.nodes.len());
    for (n, node) in origins.nodes.iter().enumerate() {
        node_index.insert(node.id.as_str(), n as u32);
        snapshot.nodes.partition.push(partition_of(&node.partition));
        let rack = rack_of(node.rack(), snapshot);
        snapshot.nodes.rack.push(rack);
        for (key, value) in &node.agent.attributes {
            snapshot.node_attributes.node.push(n as u32);
            snapshot.node_attributes.attribute.push(Attribute {
                key: key.clone(),
                value: value.clone(),
            });
        }
    }
    if snapshot.racks.is_empty() {
        rack_of(crate::protocol::node::DEFAULT_RACK, snapshot);
    }

    queues(cluster, now, &partitions, origins, snapshot);
    apps(cluster, now, origins, snapshot);

    // Asks: partition, locality, gang, constraint, tags.
    let mut constrained_tags: BTreeSet<&str> = BTreeSet::new();
    for (k, &(app_index, ask_index)) in origins.asks.iter().enumerate() {
        let ask = &cluster.apps()[app_index].asks[ask_index];
        let asks = &mut snapshot.asks;
        asks.partition.push(partition_of(&ask.partition));
        match &ask.locality {
            Some(locality) => {
                asks.locality_level.push(match locality.level {
                    Level::NodeLocal => LocalityLevel::NodeLocal,
                    Level::RackLocal => LocalityLevel::RackLocal,
                    Level::OffSwitch => LocalityLevel::OffSwitch,
                });
                asks.relax_locality.push(locality.relax_locality);
                asks.missed_opportunities
                    .push(u32::try_from(locality.missed_opportunities).unwrap_or(u32::MAX));
                let mut preferred: Vec<u32> = locality
                    .nodes
                    .iter()
                    .filter_map(|id| node_index.get(id.as_str()).copied())
                    .collect();
                preferred.sort_unstable();
                for node in preferred {
                    snapshot.ask_nodes.ask.push(k as u32);
                    snapshot.ask_nodes.node.push(node);
                }
                for rack in &locality.racks {
                    let rack = rack_of(rack, snapshot);
                    snapshot.ask_racks.ask.push(k as u32);
                    snapshot.ask_racks.rack.push(rack);
                }
            }
            None => {
                asks.locality_level.push(LocalityLevel::OffSwitch);
                asks.relax_locality.push(true);
                asks.missed_opportunities.push(0);
            }
        }
        let asks = &mut snapshot.asks;
        asks.gang_minimum.push(
            ask.gang
                .filter(|g| !g.placed)
                .map(|g| g.minimum.min(ask.pending)),
        );
        asks.constraint.push(ask.constraint.as_ref().map(|c| {
            constrained_tags.insert(c.tag.as_str());
            PlacementConstraint {
                text: c.text.clone(),
                scope: match c.scope {
                    crate::cluster::Scope::Node => ConstraintScope::Node,
                    crate::cluster::Scope::Rack => ConstraintScope::Rack,
                },
                tag: c.tag.clone(),
                all_apps: c.all_apps,
                minimum: c.min,
                maximum: c.max,
            }
        }));
        asks.execution_type
            .push(policy_execution_type(ask.execution_type));
        for tag in &ask.allocation_tags {
            snapshot.ask_tags.ask.push(k as u32);
            snapshot.ask_tags.tag.push(tag.clone());
        }
    }
    if !constrained_tags.is_empty() {
        tag_counts(cluster, origins, &constrained_tags, snapshot);
    }
}

/// The cluster's partitions (the default first) into `snapshot`, and each
/// one's index by name.
fn partitions<'a>(cluster: &'a Cluster, snapshot: &mut Snapshot) -> HashMap<&'a str, u32> {
    snapshot.partitions.name.clear();
    snapshot.partitions.exclusive.clear();
    let mut index = HashMap::new();
    let labels = std::iter::once(("", true)).chain(cluster.node_labels().iter());
    for (i, (name, exclusive)) in labels.enumerate() {
        snapshot.partitions.name.push(name.to_string());
        snapshot.partitions.exclusive.push(exclusive);
        index.insert(name, i as u32);
    }
    index
}

/// Queue paths (set already), decayed use and each queue's partition shares.
fn queues(
    cluster: &Cluster,
    now: u64,
    partitions: &HashMap<&str, u32>,
    origins: &Origins<'_>,
    snapshot: &mut Snapshot,
) {
    let tree = cluster.queues().queues();
    let usage = cluster.decayed_usage();
    let count = snapshot.queues.parent.len();
    let mut decayed = vec![ResourceSeconds::default(); count];
    // Leaves' own, then summed up the tree (a parent comes before its
    // children, so walk backwards).
    for (q, queue) in tree.iter().enumerate().filter(|(_, q)| q.is_leaf()) {
        decayed[q] = usage.queue_at(&queue.path, now);
    }
    for q in (1..origins.tree_queues.min(count)).rev() {
        let parent = snapshot.queues.parent[q] as usize;
        let child = decayed[q];
        decayed[parent] = decayed[parent] + child;
    }
    // The plan follower's children have their leaf's.
    for q in origins.tree_queues..count {
        decayed[q] = decayed[snapshot.queues.parent[q] as usize];
    }
    let queues = &mut snapshot.queues;
    for d in &decayed {
        queues
            .decayed_memory_mb_seconds
            .push(finite(d.memory_mb_seconds));
        queues.decayed_vcore_seconds.push(finite(d.vcore_seconds));
        queues.decayed_gpu_seconds.push(finite(d.gpu_seconds));
    }
    // Shares: the default partition's are the queues' own; a label's as
    // configured, for the queues that may use it.
    let mut labelled: Vec<(u32, Vec<Option<crate::queues::Share>>)> = partitions
        .iter()
        .filter(|(name, _)| !name.is_empty())
        .map(|(name, &index)| (index, cluster.queues().partition_shares(name)))
        .collect();
    labelled.sort_by_key(|(index, _)| *index);
    let shares = &mut snapshot.partition_shares;
    for q in 0..count {
        shares.queue.push(q as u32);
        shares.partition.push(0);
        let own = q.min(tree.len().saturating_sub(1));
        let (capacity, maximum) = match q < origins.tree_queues {
            true => (tree[own].capacity, tree[own].maximum_capacity),
            false => (
                snapshot.queues.capacity[q],
                snapshot.queues.maximum_capacity[q],
            ),
        };
        shares.capacity.push(capacity);
        shares.maximum_capacity.push(maximum);
        for (index, label_shares) in &labelled {
            if let Some(Some(share)) = label_shares.get(q).filter(|_| q < origins.tree_queues) {
                shares.queue.push(q as u32);
                shares.partition.push(*index);
                shares.capacity.push(share.capacity);
                shares.maximum_capacity.push(share.maximum_capacity);
            }
        }
    }
}

/// The apps' names, types, projects, starts, deadlines, tags, and their
/// users' decayed use (each user's worked out once).
fn apps(cluster: &Cluster, now: u64, origins: &Origins<'_>, snapshot: &mut Snapshot) {
    let usage = cluster.decayed_usage();
    let mut by_user: HashMap<&str, ResourceSeconds> = HashMap::new();
    let apps = &mut snapshot.apps;
    for (a, &app_index) in origins.apps.iter().enumerate() {
        let app = &cluster.apps()[app_index];
        apps.name.push(app.name.clone());
        apps.application_type.push(app.application_type.clone());
        apps.project.push(app.project.clone());
        apps.start_time_ms.push(app.start_time_ms.map(millis));
        apps.deadline_ms.push(app.lifetime_deadline_ms.map(millis));
        let user = *by_user
            .entry(app.user.as_str())
            .or_insert_with(|| usage.user_at(&app.user, now));
        apps.user_decayed_memory_mb_seconds
            .push(finite(user.memory_mb_seconds));
        apps.user_decayed_vcore_seconds
            .push(finite(user.vcore_seconds));
        apps.user_decayed_gpu_seconds.push(finite(user.gpu_seconds));
        for tag in &app.tags {
            snapshot.app_tags.app.push(a as u32);
            snapshot.app_tags.tag.push(tag.clone());
        }
    }
}

/// The running containers on the round's nodes tagged with one of `tags`,
/// counted per (node, app, tag). Containers of apps not in the snapshot
/// (none run: an app with running containers is active) are left out.
fn tag_counts(
    cluster: &Cluster,
    origins: &Origins<'_>,
    tags: &BTreeSet<&str>,
    snapshot: &mut Snapshot,
) {
    let app_position: HashMap<&str, u32> = origins
        .apps
        .iter()
        .enumerate()
        .map(|(a, &i)| (cluster.apps()[i].id.as_str(), a as u32))
        .collect();
    for (n, node) in origins.nodes.iter().enumerate() {
        let mut counts: std::collections::BTreeMap<(u32, &str), u32> = Default::default();
        for container in node
            .containers
            .iter()
            .filter_map(|id| cluster.container(id))
        {
            let Some(&app) = app_position.get(container.app.as_str()) else {
                continue;
            };
            let Some(ask) = cluster
                .app(&container.app)
                .and_then(|a| a.asks.get(container.ask))
            else {
                continue;
            };
            for tag in ask
                .allocation_tags
                .iter()
                .filter(|t| tags.contains(t.as_str()))
            {
                *counts.entry((app, tag.as_str())).or_default() += 1;
            }
        }
        let t = &mut snapshot.tag_counts;
        for ((app, tag), count) in counts {
            t.node.push(n as u32);
            t.app.push(app);
            t.tag.push(tag.to_string());
            t.count.push(count);
        }
    }
}

/// Decayed use as the WIT promises it: finite and at least 0.
fn finite(x: f64) -> f64 {
    if x.is_finite() { x.max(0.0) } else { 0.0 }
}

/// The WIT's form of an execution type.
pub(crate) fn policy_execution_type(kind: crate::cluster::ExecutionType) -> ExecutionType {
    match kind {
        crate::cluster::ExecutionType::Guaranteed => ExecutionType::Guaranteed,
        crate::cluster::ExecutionType::Opportunistic => ExecutionType::Opportunistic,
    }
}
