//! Building a snapshot row by row, for native tests of a scheduling policy:
//! what the host would send, without a host.

use crate::malformed::Malformed;
use crate::resources::Resources;

use super::snapshot::Snapshot;
use super::wit;

/// A snapshot built row by row. Queues default to YARN's settings (FIFO
/// order, minimum user limit 100 %, user-limit-factor 1); apps are
/// submitted in the order added, at 0, 1, 2… ms, with priority 0; nothing is
/// used yet. [`SnapshotBuilder::build`] checks the result like the glue
/// checks the host's.
#[derive(Debug, Clone, Default)]
pub struct SnapshotBuilder {
    record: wit::Snapshot,
}

impl SnapshotBuilder {
    /// An empty snapshot: no nodes, no queues, no apps, no asks.
    pub fn new() -> SnapshotBuilder {
        SnapshotBuilder::default()
    }

    /// Adds a node with `free` room out of `capacity`.
    pub fn node(mut self, free: Resources, capacity: Resources) -> SnapshotBuilder {
        let nodes = &mut self.record.nodes;
        nodes.free_memory_mb.push(free.memory_mb);
        nodes.free_vcores.push(free.vcores);
        nodes.free_gpus.push(free.gpus);
        nodes.capacity_memory_mb.push(capacity.memory_mb);
        nodes.capacity_vcores.push(capacity.vcores);
        nodes.capacity_gpus.push(capacity.gpus);
        self
    }

    /// Adds a queue under `parent` (the first queue added is the root, its
    /// own parent 0) with `capacity` and `maximum_capacity` percent of the
    /// parent's guarantee.
    pub fn queue(mut self, parent: u32, capacity: f64, maximum_capacity: f64) -> SnapshotBuilder {
        let queues = &mut self.record.queues;
        queues.parent.push(parent);
        queues.capacity.push(capacity);
        queues.maximum_capacity.push(maximum_capacity);
        queues.minimum_user_limit_percent.push(100.0);
        queues.user_limit_factor.push(Some(1.0));
        queues.fair.push(false);
        queues.used_memory_mb.push(0);
        queues.used_vcores.push(0);
        queues.used_gpus.push(0);
        self
    }

    /// Adds an app of `user` in leaf queue `queue`.
    pub fn app(mut self, queue: u32, user: u32) -> SnapshotBuilder {
        let apps = &mut self.record.apps;
        apps.submit_time_ms.push(apps.queue.len() as i64);
        apps.queue.push(queue);
        apps.user.push(user);
        apps.priority.push(0);
        apps.used_memory_mb.push(0);
        apps.used_vcores.push(0);
        apps.used_gpus.push(0);
        self
    }

    /// Adds an ask of app `app` for `pending` containers of `size`.
    pub fn ask(mut self, app: u32, pending: u32, size: Resources) -> SnapshotBuilder {
        let asks = &mut self.record.asks;
        asks.app.push(app);
        asks.pending.push(pending);
        asks.memory_mb.push(size.memory_mb);
        asks.vcores.push(size.vcores);
        asks.gpus.push(size.gpus);
        self
    }

    /// The record as built, to change further before checking it.
    pub fn record(self) -> wit::Snapshot {
        self.record
    }

    /// The checked snapshot.
    pub fn build(self) -> Result<Snapshot, Malformed> {
        Snapshot::new(self.record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_land_in_their_columns() {
        let gb = Resources::new(1024, 1, 0);
        let snapshot = SnapshotBuilder::new()
            .node(gb, gb.times(4))
            .queue(0, 100.0, 100.0)
            .queue(0, 100.0, 100.0)
            .app(1, 0)
            .app(1, 1)
            .ask(1, 3, gb)
            .build()
            .unwrap();
        assert_eq!(snapshot.nodes().capacity(0), Resources::new(4096, 4, 0));
        assert!(snapshot.queues().is_leaf(1));
        assert_eq!(snapshot.apps().submit_time_ms, [0, 1]);
        assert_eq!(snapshot.asks().pending, [3]);
        // The checks apply: an app in the root, which has a child, is refused.
        let refused = SnapshotBuilder::new()
            .queue(0, 100.0, 100.0)
            .queue(0, 100.0, 100.0)
            .app(0, 0)
            .build();
        assert!(refused.is_err());
        assert_eq!(SnapshotBuilder::new().record(), wit::Snapshot::default());
    }
}
