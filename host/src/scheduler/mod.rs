//! One scheduling round: a columnar snapshot of the cluster goes to the
//! scheduling policy in one call; the placements that come back are checked
//! against that snapshot, then applied to the cluster.

pub mod diagnostics;
pub mod reclaim;

use std::collections::HashMap;

use crate::cluster::{Allocation, Cluster, ClusterError, Placement};
use crate::policy::{
    Apps, Asks, CallError, Nodes, Placements, PolicySlot, Queues, Snapshot, validate,
};
use crate::queues::Ordering;

#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    #[error("the scheduling policy failed: {0}")]
    Policy(#[from] CallError),
    #[error(transparent)]
    Cluster(#[from] ClusterError),
}

/// A snapshot and how its ask and app indices map back to the cluster.
#[derive(Debug)]
pub struct Round {
    pub snapshot: Snapshot,
    asks: Vec<(usize, usize)>,
    /// Cluster app index → snapshot app index.
    apps: HashMap<usize, u32>,
}

impl Round {
    /// Snapshots the nodes and every app with something pending.
    pub fn new(cluster: &Cluster, now: u64) -> Round {
        let mut nodes = Nodes {
            free_memory_mb: vec![],
            free_vcores: vec![],
            free_gpus: vec![],
            capacity_memory_mb: vec![],
            capacity_vcores: vec![],
            capacity_gpus: vec![],
        };
        for node in cluster.nodes() {
            let free = node.free();
            nodes.free_memory_mb.push(free.memory_mb);
            nodes.free_vcores.push(free.vcores);
            nodes.free_gpus.push(free.gpus);
            nodes.capacity_memory_mb.push(node.capacity.memory_mb);
            nodes.capacity_vcores.push(node.capacity.vcores);
            nodes.capacity_gpus.push(node.capacity.gpus);
        }
        let tree = cluster.queues().queues();
        let mut queues = Queues {
            parent: tree.iter().map(|q| q.parent.unwrap_or(0) as u32).collect(),
            capacity: tree.iter().map(|q| q.capacity as f32).collect(),
            maximum_capacity: tree.iter().map(|q| q.maximum_capacity as f32).collect(),
            minimum_user_limit_percent: tree
                .iter()
                .map(|q| q.minimum_user_limit_percent as f32)
                .collect(),
            user_limit_factor: tree.iter().map(|q| q.user_limit_factor as f32).collect(),
            fair: tree
                .iter()
                .map(|q| q.ordering_policy == Ordering::Fair)
                .collect(),
            used_memory_mb: vec![0; tree.len()],
            used_vcores: vec![0; tree.len()],
            used_gpus: vec![0; tree.len()],
        };
        // A queue's use is its apps' plus, for a parent, its children's.
        for app_index in cluster.active_apps() {
            let app = &cluster.apps()[app_index];
            let mut queue = Some(app.queue_index);
            while let Some(q) = queue {
                queues.used_memory_mb[q] += app.used.memory_mb;
                queues.used_vcores[q] += app.used.vcores;
                queues.used_gpus[q] += app.used.gpus;
                queue = tree[q].parent;
            }
        }
        let mut apps = Apps {
            queue: vec![],
            user: vec![],
            priority: vec![],
            submit_time_ms: vec![],
            used_memory_mb: vec![],
            used_vcores: vec![],
            used_gpus: vec![],
        };
        let mut asks = Asks {
            app: vec![],
            pending: vec![],
            memory_mb: vec![],
            vcores: vec![],
            gpus: vec![],
        };
        let mut ask_origin = Vec::new();
        let mut app_positions = HashMap::new();
        let mut users: HashMap<&str, u32> = HashMap::new();
        for app_index in cluster.active_apps() {
            // Every active app, pending or not: its use counts toward its
            // user's and it may hold containers to reclaim.
            let app = &cluster.apps()[app_index];
            let snapshot_index = apps.queue.len() as u32;
            app_positions.insert(app_index, snapshot_index);
            let next_user = users.len() as u32;
            apps.queue.push(app.queue_index as u32);
            apps.user
                .push(*users.entry(app.user.as_str()).or_insert(next_user));
            apps.priority.push(app.priority);
            apps.submit_time_ms.push(app.submit_time_ms);
            apps.used_memory_mb.push(app.used.memory_mb);
            apps.used_vcores.push(app.used.vcores);
            apps.used_gpus.push(app.used.gpus);
            for (ask_index, ask) in app.asks.iter().enumerate().filter(|(_, a)| a.pending > 0) {
                asks.app.push(snapshot_index);
                asks.pending.push(ask.pending);
                asks.memory_mb.push(ask.resources.memory_mb);
                asks.vcores.push(ask.resources.vcores);
                asks.gpus.push(ask.resources.gpus);
                ask_origin.push((app_index, ask_index));
            }
        }
        Round {
            snapshot: Snapshot {
                now_ms: now,
                nodes,
                queues,
                apps,
                asks,
            },
            asks: ask_origin,
            apps: app_positions,
        }
    }

    /// Where cluster app `app_index` is in the snapshot, if it is.
    pub fn app_position(&self, app_index: usize) -> Option<u32> {
        self.apps.get(&app_index).copied()
    }

    /// The policy's placements, in the cluster's terms.
    pub fn placements(&self, placements: &Placements) -> Vec<Placement> {
        (0..placements.ask.len())
            .map(|i| {
                let (app, ask) = self.asks[placements.ask[i] as usize];
                Placement {
                    app,
                    ask,
                    node: placements.node[i] as usize,
                    count: placements.count[i],
                }
            })
            .collect()
    }
}

/// Asks `policy` where pending containers go, checks its answer, and
/// allocates. Does nothing (and calls nothing) when nothing is pending.
pub fn schedule(
    cluster: &mut Cluster,
    policy: &PolicySlot,
    now: u64,
) -> Result<Vec<Allocation>, ScheduleError> {
    if !cluster.has_pending() || cluster.nodes().next().is_none() {
        return Ok(Vec::new());
    }
    let round = Round::new(cluster, now);
    let placements = policy.call(|version| {
        let placements = version.schedule(&round.snapshot)?;
        validate::placements(&round.snapshot, &placements).map_err(CallError::InvalidOutput)?;
        Ok(placements)
    })?;
    Ok(cluster.allocate(&round.placements(&placements), now)?)
}
