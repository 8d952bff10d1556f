//! `capacity`: YARN Capacity Scheduler semantics as a Weft scheduling policy.
//!
//! Queues form a tree; each owns a guaranteed share of the cluster
//! (`absolute_capacity`) and may grow elastically up to a limit
//! (`absolute_maximum`) while others leave room idle. Sizes are compared by
//! their *dominant share*: the largest, over memory, vcores and GPUs, of the
//! amount divided by the cluster's total of that resource.
//!
//! Each round ([`schedule`]) repeatedly descends from the root to the most
//! under-served queue at every level (used share ÷ guaranteed share, lowest
//! first, ties to the lower index) until a leaf that can take a container,
//! picks an application there (FIFO by priority then submission, or fair by
//! least used share), skips users at their user limit, and places a container
//! of the application's first placeable ask on the first node with room. It
//! never lets a queue pass its absolute maximum. [`preempt`] reclaims
//! guarantees: it picks the youngest containers of queues above their
//! guarantee for leaf queues below theirs that have pending demand.
//!
//! The rules are in `README.md`. Everything here is plain Rust over plain
//! columns, so the host can benchmark it natively; the WebAssembly glue is in
//! `component.rs`. Rounds never go container by container when they need not:
//! each step places the largest batch of one ask on one node that the
//! one-container-at-a-time rules would have placed there in a row, found by
//! binary search, so a step costs about `depth × log(children) + log(nodes)`.

#[cfg(target_arch = "wasm32")]
mod component;

mod cluster;
mod nodes;
mod preempt;
mod ranking;
mod schedule;
#[cfg(test)]
mod testing;

pub use preempt::preempt;
pub use schedule::schedule;

/// The policy's settings. The Capacity Scheduler takes everything it needs
/// from the queue tree in the snapshot, so there are none; `configure` still
/// refuses unknown keys so that a typo is reported, not ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Capacity;

impl Capacity {
    /// Builds the settings from `key=value` parameters: any key is refused,
    /// with a message naming it.
    pub fn from_params(params: &[(String, String)]) -> Result<Self, String> {
        match params.first() {
            None => Ok(Capacity),
            Some((key, value)) => Err(format!(
                "capacity has no parameter {key:?} (given {key}={value}); \
                 queues, capacities and user limits come from the queue configuration"
            )),
        }
    }
}

/// Nodes that can take containers, as columns like the WIT `nodes` record
/// (entry i of each list is node i).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Nodes {
    pub free_memory_mb: Vec<u64>,
    pub free_vcores: Vec<u64>,
    pub free_gpus: Vec<u64>,
    pub capacity_memory_mb: Vec<u64>,
    pub capacity_vcores: Vec<u64>,
    pub capacity_gpus: Vec<u64>,
}

/// The queue tree, as columns like the WIT `queues` record. Queue 0 is the
/// root, whose `parent` is itself; a parent comes before its children.
/// Percentages are relative to the parent, as in YARN's configuration.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Queues {
    pub parent: Vec<u32>,
    pub capacity: Vec<f64>,
    pub maximum_capacity: Vec<f64>,
    pub minimum_user_limit_percent: Vec<f64>,
    pub user_limit_factor: Vec<Option<f64>>,
    pub fair: Vec<bool>,
    pub used_memory_mb: Vec<u64>,
    pub used_vcores: Vec<u64>,
    pub used_gpus: Vec<u64>,
}

/// Applications, as columns like the WIT `apps` record.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Apps {
    pub queue: Vec<u32>,
    pub user: Vec<u32>,
    pub priority: Vec<i32>,
    pub submit_time_ms: Vec<i64>,
    pub used_memory_mb: Vec<u64>,
    pub used_vcores: Vec<u64>,
    pub used_gpus: Vec<u64>,
}

/// Outstanding asks, as columns like the WIT `asks` record: `pending`
/// containers of one size for app `app`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Asks {
    pub app: Vec<u32>,
    pub pending: Vec<u32>,
    pub memory_mb: Vec<u64>,
    pub vcores: Vec<u64>,
    pub gpus: Vec<u64>,
}

/// Running containers, as columns like the WIT `containers` record.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Containers {
    pub app: Vec<u32>,
    pub node: Vec<u32>,
    pub memory_mb: Vec<u64>,
    pub vcores: Vec<u64>,
    pub gpus: Vec<u64>,
    pub start_time_ms: Vec<i64>,
}

/// Everything a round sees, like the WIT `snapshot` record.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Snapshot {
    pub now_ms: i64,
    pub nodes: Nodes,
    pub queues: Queues,
    pub apps: Apps,
    pub asks: Asks,
}

/// The result, as columns like the WIT `placements` record: `count`
/// containers of ask `ask` on node `node`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Placements {
    pub ask: Vec<u32>,
    pub node: Vec<u32>,
    pub count: Vec<u32>,
}

impl Placements {
    /// Appends `count` containers of `ask` on `node`, folding them into the
    /// last entry when it is the same ask on the same node.
    fn push(&mut self, ask: usize, node: usize, count: u32) {
        // Indices came from u32 columns, so they fit back into u32.
        let (ask, node) = (ask as u32, node as u32);
        if self.ask.last() == Some(&ask)
            && self.node.last() == Some(&node)
            && let Some(last) = self.count.last_mut()
        {
            *last += count;
            return;
        }
        self.ask.push(ask);
        self.node.push(node);
        self.count.push(count);
    }

    /// The entries as `(ask, node, count)` triples, for tests and logs.
    pub fn triples(&self) -> Vec<(u32, u32, u32)> {
        self.ask
            .iter()
            .zip(&self.node)
            .zip(&self.count)
            .map(|((&ask, &node), &count)| (ask, node, count))
            .collect()
    }

    /// How many containers the placements hold in all.
    pub fn total(&self) -> u64 {
        self.count.iter().map(|&c| u64::from(c)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_refused_by_name() {
        assert_eq!(Capacity::from_params(&[]), Ok(Capacity));
        let refused = Capacity::from_params(&[("node-order".into(), "last-fit".into())]);
        let message = refused.unwrap_err();
        for word in ["capacity", "node-order", "last-fit"] {
            assert!(message.contains(word), "{message:?} lacks {word:?}");
        }
    }

    #[test]
    fn consecutive_placements_of_one_ask_on_one_node_coalesce() {
        let mut placements = Placements::default();
        // (ask, node, count) pushed in order
        for (ask, node, count) in [(0, 1, 2), (0, 1, 3), (0, 2, 1), (1, 2, 1), (0, 2, 4)] {
            placements.push(ask, node, count);
        }
        assert_eq!(
            placements.triples(),
            [(0, 1, 5), (0, 2, 1), (1, 2, 1), (0, 2, 4)]
        );
        assert_eq!(placements.total(), 11);
    }
}
