//! Checked views of a scheduling snapshot: the host's records, moved in
//! without a copy and checked once against what the WIT documents, with
//! typed accessors and what follows from the queue tree (leaves, depths,
//! absolute capacities).
//!
//! Each view derefs to its record, so a hot loop can read a column as a
//! slice (`nodes.free_memory_mb`). The checks: every record's columns have
//! one length (at most 2^32 − 1 rows, so indices fit the WIT's `u32`);
//! every index points into the list it names; `free-*` is at most
//! `capacity-*`; the queue tree lists a parent before its children with
//! queue 0 the root; percentages are finite and in range; an app's queue is
//! a leaf; user numbers are below the number of apps; decayed use is finite
//! and at least 0; a gang's minimum is 1 to its ask's pending count; sparse
//! tables are in item order (see `context.rs`).

use std::ops::Deref;

use crate::malformed::{Malformed, same_lengths};
use crate::resources::{Cluster, Resources};

use super::context::{Groups, amounts, check_partitions, pairs};
use super::wit;

/// The nodes that can take containers.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Nodes(wit::Nodes);

/// The queue tree, with each queue's absolute capacity and maximum.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Queues {
    record: wit::Queues,
    leaf: Vec<bool>,
    depth: Vec<u32>,
    absolute_capacity: Vec<f64>,
    absolute_maximum: Vec<f64>,
}

/// Running and pending applications, in submission order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Apps(wit::Apps);

/// Outstanding asks: `pending` containers of one size for an app.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Asks(wit::Asks);

/// Running containers, the candidates for preemption.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Containers {
    record: wit::Containers,
    tags: Groups,
}

/// Everything a scheduling round sees, checked.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Snapshot {
    now_ms: i64,
    round: wit::Round,
    partitions: wit::Partitions,
    racks: Vec<String>,
    nodes: Nodes,
    node_attributes: (wit::NodeAttributes, Groups),
    queues: Queues,
    partition_shares: (wit::PartitionShares, Groups),
    apps: Apps,
    app_tags: (wit::AppTags, Groups),
    asks: Asks,
    ask_nodes: (wit::AskNodes, Groups),
    ask_racks: (wit::AskRacks, Groups),
    ask_tags: (wit::AskTags, Groups),
    tag_counts: (wit::TagCounts, Groups),
    locality_delays: wit::LocalityDelays,
}

/// Resource-seconds (decayed use): MB × s, vcores × s, GPUs × s.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ResourceSeconds {
    pub memory_mb_seconds: f64,
    pub vcore_seconds: f64,
    pub gpu_seconds: f64,
}

/// Checks a record's row count: one length, at most `u32::MAX` rows.
fn rows(record: &str, columns: &[(&str, usize)]) -> Result<usize, Malformed> {
    let rows = same_lengths(record, columns)?;
    if rows > u32::MAX as usize {
        return Err(Malformed::new(format!(
            "{record}: {rows} rows, more than a WIT list holds"
        )));
    }
    Ok(rows)
}

/// Checks `column[i] < bound` for every i: an index into a list of `bound`.
fn indices(
    record: &str,
    name: &str,
    column: &[u32],
    bound: usize,
    of: &str,
) -> Result<(), Malformed> {
    match column.iter().position(|&i| i as usize >= bound) {
        None => Ok(()),
        Some(i) => Err(Malformed::new(format!(
            "{record}: {name}[{i}] is {}, but there are {bound} {of}",
            column[i]
        ))),
    }
}

/// Checks a percentage column: finite, and within `range` when one is given.
fn percentages(name: &str, column: &[f64], at_most: Option<f64>) -> Result<(), Malformed> {
    let valid = |x: f64| x.is_finite() && x >= 0.0 && at_most.is_none_or(|most| x <= most);
    match column.iter().position(|&x| !valid(x)) {
        None => Ok(()),
        Some(q) => {
            let range = match at_most {
                Some(most) => format!("from 0 to {most}"),
                None => "finite and at least 0".to_string(),
            };
            Err(Malformed::new(format!(
                "queues: {name}[{q}] is {}; it must be {range}",
                column[q]
            )))
        }
    }
}

impl Nodes {
    /// Checks the nodes record.
    pub fn new(record: wit::Nodes) -> Result<Nodes, Malformed> {
        let count = rows(
            "nodes",
            &[
                ("free-memory-mb", record.free_memory_mb.len()),
                ("free-vcores", record.free_vcores.len()),
                ("free-gpus", record.free_gpus.len()),
                ("capacity-memory-mb", record.capacity_memory_mb.len()),
                ("capacity-vcores", record.capacity_vcores.len()),
                ("capacity-gpus", record.capacity_gpus.len()),
                ("partition", record.partition.len()),
                ("rack", record.rack.len()),
            ],
        )?;
        let nodes = Nodes(record);
        for n in 0..count {
            let (free, capacity) = (nodes.free(n), nodes.capacity(n));
            if !capacity.covers(free) {
                return Err(Malformed::new(format!(
                    "nodes: node {n} has more free ({}) than its capacity ({})",
                    show(free),
                    show(capacity)
                )));
            }
        }
        Ok(nodes)
    }

    /// The number of nodes.
    pub fn len(&self) -> usize {
        self.0.free_memory_mb.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Node `n`'s free room.
    #[inline]
    pub fn free(&self, n: usize) -> Resources {
        Resources::new(
            self.0.free_memory_mb[n],
            self.0.free_vcores[n],
            self.0.free_gpus[n],
        )
    }

    /// Node `n`'s capacity.
    #[inline]
    pub fn capacity(&self, n: usize) -> Resources {
        Resources::new(
            self.0.capacity_memory_mb[n],
            self.0.capacity_vcores[n],
            self.0.capacity_gpus[n],
        )
    }

    /// Node `n`'s partition: an index into [`Snapshot::partitions`].
    #[inline]
    pub fn partition(&self, n: usize) -> usize {
        self.0.partition[n] as usize
    }

    /// Node `n`'s rack: an index into [`Snapshot::racks`].
    #[inline]
    pub fn rack(&self, n: usize) -> usize {
        self.0.rack[n] as usize
    }

    /// Every node's free room, in node order.
    pub fn free_rooms(&self) -> impl ExactSizeIterator<Item = Resources> + '_ {
        (0..self.len()).map(|n| self.free(n))
    }

    /// The cluster: the sum of the nodes' capacities (saturating).
    pub fn cluster(&self) -> Cluster {
        let total = (0..self.len()).fold(Resources::ZERO, |sum, n| sum.plus(self.capacity(n)));
        Cluster::new(total)
    }
}

impl Queues {
    /// Checks the queues record and works out the tree.
    pub fn new(record: wit::Queues) -> Result<Queues, Malformed> {
        let count = rows(
            "queues",
            &[
                ("parent", record.parent.len()),
                ("capacity", record.capacity.len()),
                ("maximum-capacity", record.maximum_capacity.len()),
                (
                    "minimum-user-limit-percent",
                    record.minimum_user_limit_percent.len(),
                ),
                ("user-limit-factor", record.user_limit_factor.len()),
                ("fair", record.fair.len()),
                ("used-memory-mb", record.used_memory_mb.len()),
                ("used-vcores", record.used_vcores.len()),
                ("used-gpus", record.used_gpus.len()),
                ("path", record.path.len()),
                (
                    "decayed-memory-mb-seconds",
                    record.decayed_memory_mb_seconds.len(),
                ),
                ("decayed-vcore-seconds", record.decayed_vcore_seconds.len()),
                ("decayed-gpu-seconds", record.decayed_gpu_seconds.len()),
            ],
        )?;
        amounts(
            "queues",
            "decayed-memory-mb-seconds",
            &record.decayed_memory_mb_seconds,
        )?;
        amounts(
            "queues",
            "decayed-vcore-seconds",
            &record.decayed_vcore_seconds,
        )?;
        amounts("queues", "decayed-gpu-seconds", &record.decayed_gpu_seconds)?;
        percentages("capacity", &record.capacity, Some(100.0))?;
        percentages("maximum-capacity", &record.maximum_capacity, None)?;
        percentages(
            "minimum-user-limit-percent",
            &record.minimum_user_limit_percent,
            Some(100.0),
        )?;
        if let Some(q) = record
            .user_limit_factor
            .iter()
            .position(|f| f.is_some_and(|f| !(f.is_finite() && f >= 0.0)))
        {
            return Err(Malformed::new(format!(
                "queues: user-limit-factor[{q}] is {:?}; it must be none or finite and at least 0",
                record.user_limit_factor[q]
            )));
        }

        let mut leaf = vec![true; count];
        let mut depth = vec![0; count];
        let mut absolute_capacity = vec![1.0; count];
        let mut absolute_maximum = vec![1.0; count];
        for q in 0..count {
            let parent = record.parent[q] as usize;
            if q == 0 {
                if parent != 0 {
                    return Err(Malformed::new(format!(
                        "queues: queue 0 is the root, so its parent must be 0, not {parent}"
                    )));
                }
                // The root owns the cluster: 100 % guaranteed, 100 % maximum.
                continue;
            }
            if parent >= q {
                return Err(Malformed::new(format!(
                    "queues: parent[{q}] is {parent}; a parent must come before its children"
                )));
            }
            leaf[parent] = false;
            depth[q] = depth[parent] + 1;
            // The host's rule (host/src/queues/tree.rs): a share of the
            // parent's guarantee, never above the parent's own maximum.
            let parent_guarantee = absolute_capacity[parent];
            absolute_capacity[q] = parent_guarantee * (record.capacity[q] / 100.0);
            absolute_maximum[q] = (parent_guarantee * (record.maximum_capacity[q] / 100.0))
                .min(absolute_maximum[parent]);
        }
        Ok(Queues {
            record,
            leaf,
            depth,
            absolute_capacity,
            absolute_maximum,
        })
    }

    /// The number of queues.
    pub fn len(&self) -> usize {
        self.leaf.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Queue `q`'s parent (the root's is itself, 0).
    #[inline]
    pub fn parent(&self, q: usize) -> usize {
        self.record.parent[q] as usize
    }

    /// Whether queue `q` has no children.
    #[inline]
    pub fn is_leaf(&self, q: usize) -> bool {
        self.leaf[q]
    }

    /// Queue `q`'s depth below the root (the root's is 0).
    #[inline]
    pub fn depth(&self, q: usize) -> u32 {
        self.depth[q]
    }

    /// Queue `q`'s guarantee as a fraction of the cluster: the product of
    /// `capacity / 100` from the root down.
    #[inline]
    pub fn absolute_capacity(&self, q: usize) -> f64 {
        self.absolute_capacity[q]
    }

    /// The most queue `q` may grow to, as a fraction of the cluster: its
    /// `maximum-capacity` of its parent's guarantee, capped by the parent's
    /// own absolute maximum.
    #[inline]
    pub fn absolute_maximum(&self, q: usize) -> f64 {
        self.absolute_maximum[q]
    }

    /// `minimum-user-limit-percent` of queue `q` as a fraction (0..=1).
    #[inline]
    pub fn minimum_user_limit(&self, q: usize) -> f64 {
        self.record.minimum_user_limit_percent[q] / 100.0
    }

    /// `user-limit-factor` of queue `q`: `None` when a user may take the
    /// whole queue, up to its maximum.
    #[inline]
    pub fn user_limit_factor(&self, q: usize) -> Option<f64> {
        self.record.user_limit_factor[q]
    }

    /// Whether queue `q` orders its apps fairly (else FIFO).
    #[inline]
    pub fn is_fair(&self, q: usize) -> bool {
        self.record.fair[q]
    }

    /// What queue `q` uses (its children's included).
    #[inline]
    pub fn used(&self, q: usize) -> Resources {
        Resources::new(
            self.record.used_memory_mb[q],
            self.record.used_vcores[q],
            self.record.used_gpus[q],
        )
    }

    /// Queue `q`'s full path (`root.a.b`).
    #[inline]
    pub fn name(&self, q: usize) -> &str {
        &self.record.path[q]
    }

    /// Queue `q`'s decayed use, as of the round.
    #[inline]
    pub fn decayed(&self, q: usize) -> ResourceSeconds {
        ResourceSeconds {
            memory_mb_seconds: self.record.decayed_memory_mb_seconds[q],
            vcore_seconds: self.record.decayed_vcore_seconds[q],
            gpu_seconds: self.record.decayed_gpu_seconds[q],
        }
    }

    /// `q` and its ancestors up to the root, `q` first.
    #[inline]
    pub fn path(&self, q: usize) -> impl Iterator<Item = usize> + '_ {
        let mut next = Some(q);
        std::iter::from_fn(move || {
            let q = next?;
            next = (q != 0).then(|| self.parent(q));
            Some(q)
        })
    }

    /// Whether `a` is `q` or one of its ancestors.
    pub fn is_ancestor_or_self(&self, a: usize, q: usize) -> bool {
        let mut q = q;
        while self.depth[q] > self.depth[a] {
            q = self.parent(q);
        }
        q == a
    }
}

impl Apps {
    /// Checks the apps record against the checked `queues`.
    pub fn new(record: wit::Apps, queues: &Queues) -> Result<Apps, Malformed> {
        let count = rows(
            "apps",
            &[
                ("queue", record.queue.len()),
                ("user", record.user.len()),
                ("priority", record.priority.len()),
                ("submit-time-ms", record.submit_time_ms.len()),
                ("used-memory-mb", record.used_memory_mb.len()),
                ("used-vcores", record.used_vcores.len()),
                ("used-gpus", record.used_gpus.len()),
                ("name", record.name.len()),
                ("application-type", record.application_type.len()),
                ("project", record.project.len()),
                ("start-time-ms", record.start_time_ms.len()),
                ("deadline-ms", record.deadline_ms.len()),
                (
                    "user-decayed-memory-mb-seconds",
                    record.user_decayed_memory_mb_seconds.len(),
                ),
                (
                    "user-decayed-vcore-seconds",
                    record.user_decayed_vcore_seconds.len(),
                ),
                (
                    "user-decayed-gpu-seconds",
                    record.user_decayed_gpu_seconds.len(),
                ),
            ],
        )?;
        amounts(
            "apps",
            "user-decayed-memory-mb-seconds",
            &record.user_decayed_memory_mb_seconds,
        )?;
        amounts(
            "apps",
            "user-decayed-vcore-seconds",
            &record.user_decayed_vcore_seconds,
        )?;
        amounts(
            "apps",
            "user-decayed-gpu-seconds",
            &record.user_decayed_gpu_seconds,
        )?;
        indices("apps", "queue", &record.queue, queues.len(), "queues")?;
        if let Some(a) = record
            .queue
            .iter()
            .position(|&q| !queues.is_leaf(q as usize))
        {
            return Err(Malformed::new(format!(
                "apps: queue[{a}] is {}, which is not a leaf",
                record.queue[a]
            )));
        }
        // Users are numbered from 0 without gaps, so each is below the
        // number of apps; a policy may index a per-user list by them.
        indices("apps", "user", &record.user, count, "apps")?;
        Ok(Apps(record))
    }

    /// The number of apps.
    pub fn len(&self) -> usize {
        self.0.queue.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// App `a`'s queue, always a leaf.
    #[inline]
    pub fn queue(&self, a: usize) -> usize {
        self.0.queue[a] as usize
    }

    /// App `a`'s user, below [`Apps::len`].
    #[inline]
    pub fn user(&self, a: usize) -> usize {
        self.0.user[a] as usize
    }

    /// What app `a` uses.
    #[inline]
    pub fn used(&self, a: usize) -> Resources {
        Resources::new(
            self.0.used_memory_mb[a],
            self.0.used_vcores[a],
            self.0.used_gpus[a],
        )
    }

    /// App `a`'s user's decayed use, as of the round.
    #[inline]
    pub fn user_decayed(&self, a: usize) -> ResourceSeconds {
        ResourceSeconds {
            memory_mb_seconds: self.0.user_decayed_memory_mb_seconds[a],
            vcore_seconds: self.0.user_decayed_vcore_seconds[a],
            gpu_seconds: self.0.user_decayed_gpu_seconds[a],
        }
    }
}

impl Asks {
    /// Checks the asks record against the number of apps.
    pub fn new(record: wit::Asks, apps: &Apps) -> Result<Asks, Malformed> {
        rows(
            "asks",
            &[
                ("app", record.app.len()),
                ("pending", record.pending.len()),
                ("memory-mb", record.memory_mb.len()),
                ("vcores", record.vcores.len()),
                ("gpus", record.gpus.len()),
                ("partition", record.partition.len()),
                ("locality-level", record.locality_level.len()),
                ("relax-locality", record.relax_locality.len()),
                ("missed-opportunities", record.missed_opportunities.len()),
                ("gang-minimum", record.gang_minimum.len()),
                ("constraint", record.constraint.len()),
                ("execution-type", record.execution_type.len()),
            ],
        )?;
        indices("asks", "app", &record.app, apps.len(), "apps")?;
        let gangs = record.gang_minimum.iter().zip(&record.pending);
        if let Some(k) = gangs
            .clone()
            .position(|(g, p)| g.is_some_and(|g| g == 0 || g > *p))
        {
            return Err(Malformed::new(format!(
                "asks: gang-minimum[{k}] is {:?}, but it must be 1 to the ask's pending {}",
                record.gang_minimum[k], record.pending[k]
            )));
        }
        Ok(Asks(record))
    }

    /// The number of asks.
    pub fn len(&self) -> usize {
        self.0.app.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Ask `k`'s app.
    #[inline]
    pub fn app(&self, k: usize) -> usize {
        self.0.app[k] as usize
    }

    /// The size of one container of ask `k`.
    #[inline]
    pub fn size(&self, k: usize) -> Resources {
        Resources::new(self.0.memory_mb[k], self.0.vcores[k], self.0.gpus[k])
    }

    /// Ask `k`'s partition: an index into [`Snapshot::partitions`].
    #[inline]
    pub fn partition(&self, k: usize) -> usize {
        self.0.partition[k] as usize
    }

    /// How far from its preferred places ask `k` may go now.
    #[inline]
    pub fn locality_level(&self, k: usize) -> wit::LocalityLevel {
        self.0.locality_level[k]
    }

    /// Ask `k`'s gang minimum, if it must be placed all together.
    #[inline]
    pub fn gang_minimum(&self, k: usize) -> Option<u32> {
        self.0.gang_minimum[k]
    }

    /// Ask `k`'s placement constraint, if any.
    #[inline]
    pub fn constraint(&self, k: usize) -> Option<&wit::PlacementConstraint> {
        self.0.constraint[k].as_ref()
    }
}

impl Containers {
    /// Checks the running containers against the checked `snapshot`.
    pub fn new(record: wit::Containers, snapshot: &Snapshot) -> Result<Containers, Malformed> {
        let count = rows(
            "containers",
            &[
                ("app", record.app.len()),
                ("node", record.node.len()),
                ("memory-mb", record.memory_mb.len()),
                ("vcores", record.vcores.len()),
                ("gpus", record.gpus.len()),
                ("start-time-ms", record.start_time_ms.len()),
                ("execution-type", record.execution_type.len()),
            ],
        )?;
        indices(
            "containers",
            "app",
            &record.app,
            snapshot.apps.len(),
            "apps",
        )?;
        indices(
            "containers",
            "node",
            &record.node,
            snapshot.nodes.len(),
            "nodes",
        )?;
        let t = &record.tags;
        pairs(
            "container-tags",
            ("container", t.container.len()),
            ("tag", t.tag.len()),
        )?;
        let tags = Groups::new("container-tags", &t.container, count, "container")?;
        Ok(Containers { record, tags })
    }

    /// The number of containers.
    pub fn len(&self) -> usize {
        self.record.app.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Container `c`'s app.
    #[inline]
    pub fn app(&self, c: usize) -> usize {
        self.record.app[c] as usize
    }

    /// Container `c`'s node.
    #[inline]
    pub fn node(&self, c: usize) -> usize {
        self.record.node[c] as usize
    }

    /// Container `c`'s size.
    #[inline]
    pub fn size(&self, c: usize) -> Resources {
        Resources::new(
            self.record.memory_mb[c],
            self.record.vcores[c],
            self.record.gpus[c],
        )
    }

    /// Container `c`'s allocation tags.
    pub fn tags(&self, c: usize) -> &[String] {
        &self.record.tags.tag[self.tags.rows(c)]
    }
}

impl Snapshot {
    /// Checks the snapshot the host sent.
    pub fn new(record: wit::Snapshot) -> Result<Snapshot, Malformed> {
        let wit::Snapshot {
            now_ms,
            round,
            partitions,
            racks,
            nodes,
            node_attributes,
            queues,
            partition_shares,
            apps,
            app_tags,
            asks,
            ask_nodes,
            ask_racks,
            ask_tags,
            tag_counts,
            locality_delays,
        } = record;
        check_partitions(&partitions)?;
        let partition_count = partitions.name.len();
        if round.partition as usize >= partition_count {
            return Err(Malformed::new(format!(
                "round: partition is {}, but there are {partition_count} partitions",
                round.partition
            )));
        }
        let nodes = Nodes::new(nodes)?;
        indices(
            "nodes",
            "partition",
            &nodes.partition,
            partition_count,
            "partitions",
        )?;
        indices("nodes", "rack", &nodes.rack, racks.len(), "racks")?;
        let queues = Queues::new(queues)?;
        let apps = Apps::new(apps, &queues)?;
        let asks = Asks::new(asks, &apps)?;
        indices(
            "asks",
            "partition",
            &asks.partition,
            partition_count,
            "partitions",
        )?;

        let a = &node_attributes;
        pairs(
            "node-attributes",
            ("node", a.node.len()),
            ("attribute", a.attribute.len()),
        )?;
        let attributes_of = Groups::new("node-attributes", &a.node, nodes.len(), "node")?;
        let s = &partition_shares;
        rows(
            "partition-shares",
            &[
                ("queue", s.queue.len()),
                ("partition", s.partition.len()),
                ("capacity", s.capacity.len()),
                ("maximum-capacity", s.maximum_capacity.len()),
            ],
        )?;
        indices(
            "partition-shares",
            "partition",
            &s.partition,
            partition_count,
            "partitions",
        )?;
        percentages("capacity", &s.capacity, Some(100.0))?;
        percentages("maximum-capacity", &s.maximum_capacity, None)?;
        let shares_of = Groups::new("partition-shares", &s.queue, queues.len(), "queue")?;
        pairs(
            "app-tags",
            ("app", app_tags.app.len()),
            ("tag", app_tags.tag.len()),
        )?;
        let tags_of_apps = Groups::new("app-tags", &app_tags.app, apps.len(), "app")?;
        pairs(
            "ask-nodes",
            ("ask", ask_nodes.ask.len()),
            ("node", ask_nodes.node.len()),
        )?;
        indices("ask-nodes", "node", &ask_nodes.node, nodes.len(), "nodes")?;
        let nodes_of_asks = Groups::new("ask-nodes", &ask_nodes.ask, asks.len(), "ask")?;
        pairs(
            "ask-racks",
            ("ask", ask_racks.ask.len()),
            ("rack", ask_racks.rack.len()),
        )?;
        indices("ask-racks", "rack", &ask_racks.rack, racks.len(), "racks")?;
        let racks_of_asks = Groups::new("ask-racks", &ask_racks.ask, asks.len(), "ask")?;
        pairs(
            "ask-tags",
            ("ask", ask_tags.ask.len()),
            ("tag", ask_tags.tag.len()),
        )?;
        let tags_of_asks = Groups::new("ask-tags", &ask_tags.ask, asks.len(), "ask")?;
        let t = &tag_counts;
        rows(
            "tag-counts",
            &[
                ("node", t.node.len()),
                ("app", t.app.len()),
                ("tag", t.tag.len()),
                ("count", t.count.len()),
            ],
        )?;
        indices("tag-counts", "app", &t.app, apps.len(), "apps")?;
        let counts_of_nodes = Groups::new("tag-counts", &t.node, nodes.len(), "node")?;
        Ok(Snapshot {
            now_ms,
            round,
            partitions,
            racks,
            nodes,
            node_attributes: (node_attributes, attributes_of),
            queues,
            partition_shares: (partition_shares, shares_of),
            apps,
            app_tags: (app_tags, tags_of_apps),
            asks,
            ask_nodes: (ask_nodes, nodes_of_asks),
            ask_racks: (ask_racks, racks_of_asks),
            ask_tags: (ask_tags, tags_of_asks),
            tag_counts: (tag_counts, counts_of_nodes),
            locality_delays,
        })
    }

    /// A copy of the record, for a test to change and check again (say,
    /// the next round after some placements).
    pub fn to_record(&self) -> wit::Snapshot {
        wit::Snapshot {
            now_ms: self.now_ms,
            round: self.round,
            partitions: self.partitions.clone(),
            racks: self.racks.clone(),
            nodes: self.nodes.0.clone(),
            node_attributes: self.node_attributes.0.clone(),
            queues: self.queues.record.clone(),
            partition_shares: self.partition_shares.0.clone(),
            apps: self.apps.0.clone(),
            app_tags: self.app_tags.0.clone(),
            asks: self.asks.0.clone(),
            ask_nodes: self.ask_nodes.0.clone(),
            ask_racks: self.ask_racks.0.clone(),
            ask_tags: self.ask_tags.0.clone(),
            tag_counts: self.tag_counts.0.clone(),
            locality_delays: self.locality_delays,
        }
    }

    /// When the round runs, in ms.
    pub fn now_ms(&self) -> i64 {
        self.now_ms
    }

    /// What kind of round this is, and whose partition's nodes it holds.
    pub fn round(&self) -> wit::Round {
        self.round
    }

    /// The cluster's partitions (entry 0 the default, named "").
    pub fn partitions(&self) -> &wit::Partitions {
        &self.partitions
    }

    /// The rack paths nodes and asks name by index.
    pub fn racks(&self) -> &[String] {
        &self.racks
    }

    /// The nodes.
    pub fn nodes(&self) -> &Nodes {
        &self.nodes
    }

    /// Node `n`'s attributes.
    pub fn node_attributes(&self, n: usize) -> &[wit::Attribute] {
        &self.node_attributes.0.attribute[self.node_attributes.1.rows(n)]
    }

    /// The queue tree.
    pub fn queues(&self) -> &Queues {
        &self.queues
    }

    /// Queue `q`'s shares of the partitions it may use, as (partition,
    /// capacity, maximum-capacity), percentages of its parent's.
    pub fn partition_shares(&self, q: usize) -> impl Iterator<Item = (usize, f64, f64)> + '_ {
        let s = &self.partition_shares.0;
        self.partition_shares.1.rows(q).map(move |r| {
            (
                s.partition[r] as usize,
                s.capacity[r],
                s.maximum_capacity[r],
            )
        })
    }

    /// The apps.
    pub fn apps(&self) -> &Apps {
        &self.apps
    }

    /// App `a`'s tags.
    pub fn app_tags(&self, a: usize) -> &[String] {
        &self.app_tags.0.tag[self.app_tags.1.rows(a)]
    }

    /// The asks.
    pub fn asks(&self) -> &Asks {
        &self.asks
    }

    /// Ask `k`'s preferred nodes (indices into the nodes).
    pub fn ask_nodes(&self, k: usize) -> &[u32] {
        &self.ask_nodes.0.node[self.ask_nodes.1.rows(k)]
    }

    /// Ask `k`'s preferred racks (indices into [`Snapshot::racks`]).
    pub fn ask_racks(&self, k: usize) -> &[u32] {
        &self.ask_racks.0.rack[self.ask_racks.1.rows(k)]
    }

    /// The allocation tags ask `k`'s containers will carry.
    pub fn ask_tags(&self, k: usize) -> &[String] {
        &self.ask_tags.0.tag[self.ask_tags.1.rows(k)]
    }

    /// The tagged containers running on node `n`, as (app, tag, count).
    pub fn tag_counts(&self, n: usize) -> impl Iterator<Item = (usize, &str, u32)> + '_ {
        let t = &self.tag_counts.0;
        self.tag_counts
            .1
            .rows(n)
            .map(move |r| (t.app[r] as usize, t.tag[r].as_str(), t.count[r]))
    }

    /// The delays of delay scheduling.
    pub fn locality_delays(&self) -> wit::LocalityDelays {
        self.locality_delays
    }
}

/// `4096 MB, 2 vcores, 0 GPUs`.
fn show(r: Resources) -> String {
    format!("{} MB, {} vcores, {} GPUs", r.memory_mb, r.vcores, r.gpus)
}

macro_rules! deref_to_record {
    ($($view:ident),*) => {$(
        impl Deref for $view {
            type Target = wit::$view;

            /// The checked record: read its columns directly.
            fn deref(&self) -> &wit::$view {
                &self.0
            }
        }
    )*};
}

deref_to_record!(Nodes, Apps, Asks);

impl Deref for Containers {
    type Target = wit::Containers;

    /// The checked record: read its columns directly.
    fn deref(&self) -> &wit::Containers {
        &self.record
    }
}

impl Deref for Queues {
    type Target = wit::Queues;

    /// The checked record: read its columns directly.
    fn deref(&self) -> &wit::Queues {
        &self.record
    }
}

#[cfg(test)]
mod tests;
