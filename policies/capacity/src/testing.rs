//! Builders and checks the tests of every module share.

use weft_policy::Resources;
use weft_policy::scheduling::{Placements, Snapshot, SnapshotBuilder, wit};

/// One gigabyte, the container size of most tests.
pub(crate) const GB: u64 = 1024;

/// A node: `(free, capacity)`, each `(memory MB, vcores, gpus)`.
pub(crate) type NodeRow = ((u64, u64, u64), (u64, u64, u64));

/// `count` nodes of `capacity`, all free.
pub(crate) fn empty_nodes(count: usize, capacity: (u64, u64, u64)) -> Vec<NodeRow> {
    vec![(capacity, capacity); count]
}

/// A queue row; build with [`queue`] and the methods below.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Q {
    pub parent: u32,
    pub capacity: f64,
    pub maximum: f64,
    pub mulp: f64,
    pub ulf: Option<f64>,
    pub fair: bool,
    pub used: (u64, u64, u64),
}

/// A FIFO queue under `parent` with YARN's defaults: minimum user limit
/// 100 %, user-limit-factor 1, nothing used.
pub(crate) const fn queue(parent: u32, capacity: f64, maximum: f64) -> Q {
    Q {
        parent,
        capacity,
        maximum,
        mulp: 100.0,
        ulf: Some(1.0),
        fair: false,
        used: (0, 0, 0),
    }
}

impl Q {
    pub(crate) const fn fair(self) -> Q {
        Q { fair: true, ..self }
    }
    pub(crate) const fn mulp(self, mulp: f64) -> Q {
        Q { mulp, ..self }
    }
    pub(crate) const fn ulf(self, ulf: f64) -> Q {
        Q {
            ulf: Some(ulf),
            ..self
        }
    }
    pub(crate) const fn used(self, memory_mb: u64, vcores: u64, gpus: u64) -> Q {
        Q {
            used: (memory_mb, vcores, gpus),
            ..self
        }
    }
}

/// An application row; build with [`app`] and the methods below.
#[derive(Debug, Clone, Copy)]
pub(crate) struct A {
    pub queue: u32,
    pub user: u32,
    pub priority: i32,
    pub submit: i64,
    pub used: (u64, u64, u64),
}

/// An app of `user` in `queue`, priority 0, submitted at 0, using nothing.
pub(crate) const fn app(queue: u32, user: u32) -> A {
    A {
        queue,
        user,
        priority: 0,
        submit: 0,
        used: (0, 0, 0),
    }
}

impl A {
    pub(crate) const fn priority(self, priority: i32) -> A {
        A { priority, ..self }
    }
    pub(crate) const fn at(self, submit: i64) -> A {
        A { submit, ..self }
    }
    pub(crate) const fn used(self, memory_mb: u64, vcores: u64, gpus: u64) -> A {
        A {
            used: (memory_mb, vcores, gpus),
            ..self
        }
    }
}

/// An ask: `(app, pending, memory MB, vcores, gpus)`.
pub(crate) type AskRow = (u32, u32, u64, u64, u64);

/// The checked snapshot of these rows.
pub(crate) fn snapshot(nodes: &[NodeRow], queues: &[Q], apps: &[A], asks: &[AskRow]) -> Snapshot {
    Snapshot::new(SnapshotBuilder::complete(record(nodes, queues, apps, asks)))
        .expect("a well-formed snapshot")
}

/// The record of these rows, as the host would send it.
pub(crate) fn record(
    nodes: &[NodeRow],
    queues: &[Q],
    apps: &[A],
    asks: &[AskRow],
) -> wit::Snapshot {
    wit::Snapshot {
        now_ms: 0,
        nodes: wit::Nodes {
            free_memory_mb: nodes.iter().map(|n| n.0.0).collect(),
            free_vcores: nodes.iter().map(|n| n.0.1).collect(),
            free_gpus: nodes.iter().map(|n| n.0.2).collect(),
            capacity_memory_mb: nodes.iter().map(|n| n.1.0).collect(),
            capacity_vcores: nodes.iter().map(|n| n.1.1).collect(),
            capacity_gpus: nodes.iter().map(|n| n.1.2).collect(),
            ..wit::Nodes::default()
        },
        queues: wit::Queues {
            parent: queues.iter().map(|q| q.parent).collect(),
            capacity: queues.iter().map(|q| q.capacity).collect(),
            maximum_capacity: queues.iter().map(|q| q.maximum).collect(),
            minimum_user_limit_percent: queues.iter().map(|q| q.mulp).collect(),
            user_limit_factor: queues.iter().map(|q| q.ulf).collect(),
            fair: queues.iter().map(|q| q.fair).collect(),
            used_memory_mb: queues.iter().map(|q| q.used.0).collect(),
            used_vcores: queues.iter().map(|q| q.used.1).collect(),
            used_gpus: queues.iter().map(|q| q.used.2).collect(),
            ..wit::Queues::default()
        },
        apps: wit::Apps {
            queue: apps.iter().map(|a| a.queue).collect(),
            user: apps.iter().map(|a| a.user).collect(),
            priority: apps.iter().map(|a| a.priority).collect(),
            submit_time_ms: apps.iter().map(|a| a.submit).collect(),
            used_memory_mb: apps.iter().map(|a| a.used.0).collect(),
            used_vcores: apps.iter().map(|a| a.used.1).collect(),
            used_gpus: apps.iter().map(|a| a.used.2).collect(),
            ..wit::Apps::default()
        },
        asks: wit::Asks {
            app: asks.iter().map(|a| a.0).collect(),
            pending: asks.iter().map(|a| a.1).collect(),
            memory_mb: asks.iter().map(|a| a.2).collect(),
            vcores: asks.iter().map(|a| a.3).collect(),
            gpus: asks.iter().map(|a| a.4).collect(),
            ..wit::Asks::default()
        },
        ..wit::Snapshot::default()
    }
}

/// Containers placed per app.
pub(crate) fn per_app(snapshot: &Snapshot, placements: &Placements) -> Vec<u64> {
    let mut placed = vec![0u64; snapshot.apps().len()];
    for (ask, _, count) in placements.triples() {
        placed[snapshot.asks().app(ask as usize)] += u64::from(count);
    }
    placed
}

/// The snapshot of the next round: the placements allocated (node room,
/// usage of the queues up the tree and of the apps, pending counts).
pub(crate) fn apply(snapshot: &Snapshot, placements: &Placements) -> Snapshot {
    let mut next = snapshot.to_record();
    let (apps, asks) = (snapshot.apps(), snapshot.asks());
    for (ask, node, count) in placements.triples() {
        let (ask, node) = (ask as usize, node as usize);
        let [memory, vcores, gpus] = asks.size(ask).times(u64::from(count)).to_array();
        let nodes = &mut next.nodes;
        nodes.free_memory_mb[node] -= memory;
        nodes.free_vcores[node] -= vcores;
        nodes.free_gpus[node] -= gpus;
        let app = asks.app(ask);
        next.apps.used_memory_mb[app] += memory;
        next.apps.used_vcores[app] += vcores;
        next.apps.used_gpus[app] += gpus;
        next.asks.pending[ask] -= count;
        for q in snapshot.queues().path(apps.queue(app)) {
            next.queues.used_memory_mb[q] += memory;
            next.queues.used_vcores[q] += vcores;
            next.queues.used_gpus[q] += gpus;
        }
    }
    Snapshot::new(next).expect("the next round is well formed")
}

/// The host's checks (known nodes and asks, no ask above its pending count,
/// no node above its free room) and the policy's: no queue whose usage grew
/// ends above its absolute maximum.
pub(crate) fn assert_valid(snapshot: &Snapshot, placements: &Placements) {
    let (nodes, asks) = (snapshot.nodes(), snapshot.asks());
    let mut on_node = vec![Resources::ZERO; nodes.len()];
    let mut placed = vec![0u64; asks.len()];
    for (ask, node, count) in placements.triples() {
        let (ask, node) = (ask as usize, node as usize);
        assert!(count > 0, "empty placement");
        assert!(ask < asks.len(), "unknown ask {ask}");
        assert!(node < on_node.len(), "unknown node {node}");
        placed[ask] += u64::from(count);
        on_node[node] = on_node[node].plus(asks.size(ask).times(u64::from(count)));
    }
    for (ask, &count) in placed.iter().enumerate() {
        assert!(
            count <= u64::from(asks.pending[ask]),
            "ask {ask}: {count} placed, {} pending",
            asks.pending[ask]
        );
    }
    for (node, used) in on_node.iter().enumerate() {
        let free = nodes.free(node);
        assert!(free.covers(*used), "node {node}: {used:?} in {free:?}");
    }
    let queues = snapshot.queues();
    let after = apply(snapshot, placements);
    let cluster = nodes.cluster();
    for q in 0..queues.len() {
        let (before, now) = (queues.used(q), after.queues().used(q));
        if now != before {
            assert!(
                cluster.limit(queues.absolute_maximum(q)).covers(now),
                "queue {q} grew to {now:?}, past its maximum {}",
                queues.absolute_maximum(q)
            );
        }
    }
}

/// A small deterministic generator, so failures reproduce.
pub(crate) struct Lcg(pub u64);

impl Lcg {
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n.max(1)
    }
}
