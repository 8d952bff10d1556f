//! Building a snapshot row by row, for native tests of a scheduling policy:
//! what the host would send, without a host.

use crate::malformed::Malformed;
use crate::resources::Resources;

use super::snapshot::Snapshot;
use super::wit;

/// A snapshot built row by row: a round of the whole cluster, with the
/// default partition alone and one rack, `/default-rack`, where every node
/// is. Queues default to YARN's settings (FIFO order, minimum user limit
/// 100 %, user-limit-factor 1) and are named `root`, `root.q1`…; apps are
/// submitted in the order added, at 0, 1, 2… ms, with priority 0, of type
/// `weft` in project `default`; asks are for the default partition, with no
/// locality, gang or constraint; nothing is used yet, and no use has decayed.
/// [`SnapshotBuilder::build`] checks the result like the glue checks the
/// host's.
#[derive(Debug, Clone)]
pub struct SnapshotBuilder {
    record: wit::Snapshot,
}

impl Default for SnapshotBuilder {
    fn default() -> Self {
        SnapshotBuilder::new()
    }
}

impl SnapshotBuilder {
    /// An empty snapshot: no nodes, no queues, no apps, no asks.
    pub fn new() -> SnapshotBuilder {
        let mut record = wit::Snapshot::default();
        record.partitions.name.push(String::new());
        record.partitions.exclusive.push(true);
        record.racks.push("/default-rack".into());
        record.locality_delays.node_locality_delay = 40;
        SnapshotBuilder { record }
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
        nodes.partition.push(0);
        nodes.rack.push(0);
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
        let path = match queues.path.get(parent as usize) {
            None => "root".to_string(),
            Some(parent) => format!("{parent}.q{}", queues.path.len()),
        };
        queues.path.push(path);
        queues.decayed_memory_mb_seconds.push(0.0);
        queues.decayed_vcore_seconds.push(0.0);
        queues.decayed_gpu_seconds.push(0.0);
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
        apps.name.push(String::new());
        apps.application_type.push("weft".into());
        apps.project.push("default".into());
        apps.start_time_ms.push(None);
        apps.deadline_ms.push(None);
        apps.user_decayed_memory_mb_seconds.push(0.0);
        apps.user_decayed_vcore_seconds.push(0.0);
        apps.user_decayed_gpu_seconds.push(0.0);
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
        asks.partition.push(0);
        asks.locality_level.push(wit::LocalityLevel::OffSwitch);
        asks.relax_locality.push(true);
        asks.missed_opportunities.push(0);
        asks.gang_minimum.push(None);
        asks.constraint.push(None);
        asks.execution_type.push(wit::ExecutionType::Guaranteed);
        self
    }

    /// `record` with the columns new in weft:policy@0.3.0 filled where
    /// they are missing, as the builder fills them (for tests that build
    /// the older columns by hand): the default partition and rack, every
    /// node, queue, app and ask as [`SnapshotBuilder`] adds them.
    pub fn complete(mut record: wit::Snapshot) -> wit::Snapshot {
        if record.partitions.name.is_empty() {
            record.partitions.name.push(String::new());
            record.partitions.exclusive.push(true);
        }
        if record.racks.is_empty() {
            record.racks.push("/default-rack".into());
        }
        let nodes = &mut record.nodes;
        let n = nodes.free_memory_mb.len();
        nodes.partition.resize(n, 0);
        nodes.rack.resize(n, 0);
        let queues = &mut record.queues;
        for q in queues.path.len()..queues.parent.len() {
            let path = match q {
                0 => "root".to_string(),
                _ => format!("{}.q{q}", queues.path[queues.parent[q] as usize]),
            };
            queues.path.push(path);
        }
        let q = queues.parent.len();
        queues.decayed_memory_mb_seconds.resize(q, 0.0);
        queues.decayed_vcore_seconds.resize(q, 0.0);
        queues.decayed_gpu_seconds.resize(q, 0.0);
        let apps = &mut record.apps;
        let a = apps.queue.len();
        apps.name.resize(a, String::new());
        apps.application_type.resize(a, "weft".into());
        apps.project.resize(a, "default".into());
        apps.start_time_ms.resize(a, None);
        apps.deadline_ms.resize(a, None);
        apps.user_decayed_memory_mb_seconds.resize(a, 0.0);
        apps.user_decayed_vcore_seconds.resize(a, 0.0);
        apps.user_decayed_gpu_seconds.resize(a, 0.0);
        let asks = &mut record.asks;
        let k = asks.app.len();
        asks.partition.resize(k, 0);
        asks.locality_level.resize(k, wit::LocalityLevel::OffSwitch);
        asks.relax_locality.resize(k, true);
        asks.missed_opportunities.resize(k, 0);
        asks.gang_minimum.resize(k, None);
        asks.constraint.resize(k, None);
        asks.execution_type
            .resize(k, wit::ExecutionType::Guaranteed);
        record
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
        let empty = SnapshotBuilder::new().build().unwrap();
        assert_eq!(empty.partitions().name, [""]);
        assert_eq!(empty.racks(), ["/default-rack"]);
    }
}
