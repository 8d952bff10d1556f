//! drf's round checked against a table of cases, exact placements, the
//! rule applied one container at a time (on thousands of random clusters),
//! and the scale the host benchmarks.

use std::collections::HashMap;

use weft_policy::scheduling::{Snapshot, SnapshotBuilder, wit};

use super::*;

/// Memory, vcores, GPUs.
type Row = (u64, u64, u64);

/// One table case. Nodes start empty; `used` rows put usage on an app (and
/// so its queue, its ancestors and its user) and take the same room off the
/// nodes, lowest index first.
#[derive(Clone, Copy)]
struct Case {
    what: &'static str,
    /// Node capacities.
    nodes: &'static [Row],
    /// (parent, capacity %, maximum capacity %); entry 0 is root.
    queues: &'static [(u32, f64, f64)],
    /// (queue, user, submit time).
    apps: &'static [(u32, u32, i64)],
    /// (app, usage) before the round.
    used: &'static [(u32, Row)],
    /// (app, pending, size).
    asks: &'static [(u32, u32, Row)],
    /// Containers placed per ask.
    placed: &'static [u32],
}

const ONE_QUEUE: &[(u32, f64, f64)] = &[(0, 100.0, 100.0), (0, 100.0, 100.0)];
const HALVES: &[(u32, f64, f64)] = &[(0, 100.0, 100.0), (0, 50.0, 100.0), (0, 50.0, 100.0)];
/// root; eng 50 % (max 50 %) with dev and qa at 50 % each (max 100 %); ops 50 %.
const NESTED: &[(u32, f64, f64)] = &[
    (0, 100.0, 100.0),
    (0, 50.0, 50.0),
    (0, 50.0, 100.0),
    (1, 50.0, 100.0),
    (1, 50.0, 100.0),
];
const GB: u64 = 1024;

const BASE: Case = Case {
    what: "",
    nodes: &[],
    queues: ONE_QUEUE,
    apps: &[],
    used: &[],
    asks: &[],
    placed: &[],
};

const CASES: &[Case] = &[
    Case {
        what: "classic DRF (9 CPUs, 18 GB), two users in one queue: A 3 tasks, B 2",
        nodes: &[(18 * GB, 9, 0)],
        apps: &[(1, 0, 0), (1, 1, 0)],
        asks: &[(0, 10, (4 * GB, 1, 0)), (1, 10, (GB, 3, 0))],
        placed: &[3, 2],
        ..BASE
    },
    Case {
        what: "classic DRF, two queues of 50 %: A 3 tasks, B 2",
        nodes: &[(18 * GB, 9, 0)],
        queues: HALVES,
        apps: &[(1, 0, 0), (2, 1, 0)],
        asks: &[(0, 10, (4 * GB, 1, 0)), (1, 10, (GB, 3, 0))],
        placed: &[3, 2],
        ..BASE
    },
    Case {
        // A's tasks are 1/32 of the memory, B's 1/16 of the vcores: A gets
        // twice as many, 20 to 10, both at 5/8 dominant share; then no node
        // has 4 vcores left for B, and A takes the 2 that still fit.
        what: "memory-heavy and vcore-heavy queues reach equal dominant shares",
        nodes: &[(16 * GB, 16, 0); 4],
        queues: HALVES,
        apps: &[(1, 0, 0), (2, 1, 0)],
        asks: &[(0, 100, (2 * GB, 1, 0)), (1, 100, (GB, 4, 0))],
        placed: &[22, 10],
        ..BASE
    },
    Case {
        what: "guarantees weight the shares: 75 % and 25 % split 3 to 1",
        nodes: &[(16 * GB, 16, 0)],
        queues: &[(0, 100.0, 100.0), (0, 75.0, 100.0), (0, 25.0, 100.0)],
        apps: &[(1, 0, 0), (2, 1, 0)],
        asks: &[(0, 100, (GB, 1, 0)), (1, 100, (GB, 1, 0))],
        placed: &[12, 4],
        ..BASE
    },
    Case {
        what: "absolute capacity is the product down the tree",
        nodes: &[(16 * GB, 16, 0)],
        queues: &[
            (0, 100.0, 100.0),
            (0, 50.0, 100.0),
            (0, 50.0, 100.0),
            (1, 50.0, 100.0),
            (1, 50.0, 100.0),
        ],
        apps: &[(3, 0, 0), (4, 1, 0), (2, 2, 0)],
        asks: &[
            (0, 100, (GB, 1, 0)),
            (1, 100, (GB, 1, 0)),
            (2, 100, (GB, 1, 0)),
        ],
        placed: &[4, 4, 8],
        ..BASE
    },
    Case {
        what: "maximum capacity caps an elastic queue when the other is idle",
        nodes: &[(GB, 1, 0); 10],
        queues: &[(0, 100.0, 100.0), (0, 50.0, 60.0), (0, 50.0, 100.0)],
        apps: &[(1, 0, 0)],
        asks: &[(0, 10, (GB, 1, 0))],
        placed: &[6],
        ..BASE
    },
    Case {
        what: "maximum capacity is a dominant share: memory stops at half",
        nodes: &[(16 * GB, 16, 0)],
        queues: &[(0, 100.0, 100.0), (0, 50.0, 50.0), (0, 50.0, 100.0)],
        apps: &[(1, 0, 0)],
        asks: &[(0, 10, (4 * GB, 1, 0))],
        placed: &[2],
        ..BASE
    },
    Case {
        what: "a parent's maximum caps its children together",
        nodes: &[(GB, 1, 0); 16],
        queues: NESTED,
        apps: &[(3, 0, 0), (4, 1, 0)],
        asks: &[(0, 100, (GB, 1, 0)), (1, 100, (GB, 1, 0))],
        placed: &[4, 4],
        ..BASE
    },
    Case {
        what: "a child grows into its parent's maximum when its sibling is idle",
        nodes: &[(GB, 1, 0); 16],
        queues: NESTED,
        apps: &[(3, 0, 0)],
        asks: &[(0, 100, (GB, 1, 0))],
        placed: &[8],
        ..BASE
    },
    Case {
        what: "a queue at its maximum leaves the rest to the others",
        nodes: &[(GB, 1, 0); 16],
        queues: NESTED,
        apps: &[(3, 0, 0), (2, 1, 0)],
        used: &[(0, (8 * GB, 8, 0))],
        asks: &[(0, 100, (GB, 1, 0)), (1, 100, (GB, 1, 0))],
        placed: &[0, 8],
    },
    Case {
        what: "a queue already above its maximum gets nothing, even of another resource",
        nodes: &[(16 * GB, 16, 0)],
        queues: &[(0, 100.0, 100.0), (0, 50.0, 50.0), (0, 50.0, 100.0)],
        apps: &[(1, 0, 0)],
        used: &[(0, (12 * GB, 1, 0))],
        asks: &[(0, 10, (0, 1, 0))],
        placed: &[0],
    },
    Case {
        what: "usage before the round counts: the idle queue catches up",
        nodes: &[(16 * GB, 16, 0)],
        queues: HALVES,
        apps: &[(1, 0, 0), (2, 1, 0)],
        used: &[(0, (8 * GB, 8, 0))],
        asks: &[(0, 10, (GB, 1, 0)), (1, 10, (GB, 1, 0))],
        placed: &[0, 8],
    },
    Case {
        what: "users in a queue take turns, whoever submitted first",
        nodes: &[(8 * GB, 8, 0)],
        apps: &[(1, 0, 0), (1, 1, 1)],
        asks: &[(0, 10, (GB, 1, 0)), (1, 10, (GB, 1, 0))],
        placed: &[4, 4],
        ..BASE
    },
    Case {
        what: "a user's running containers count towards its share",
        nodes: &[(12 * GB, 12, 0)],
        apps: &[(1, 0, 0), (1, 1, 0)],
        used: &[(0, (4 * GB, 4, 0))],
        asks: &[(0, 10, (GB, 1, 0)), (1, 10, (GB, 1, 0))],
        placed: &[2, 6],
        ..BASE
    },
    Case {
        what: "a user's share counts its apps with nothing pending",
        nodes: &[(12 * GB, 12, 0)],
        apps: &[(1, 0, 0), (1, 1, 0), (1, 0, 0)],
        used: &[(2, (4 * GB, 4, 0))],
        asks: &[(0, 10, (GB, 1, 0)), (1, 10, (GB, 1, 0))],
        placed: &[2, 6],
        ..BASE
    },
    Case {
        what: "usage in another queue does not count towards a user's share there",
        nodes: &[(12 * GB, 12, 0)],
        queues: &[(0, 100.0, 100.0), (0, 100.0, 100.0), (0, 0.0, 100.0)],
        apps: &[(1, 0, 0), (1, 1, 0), (2, 0, 0)],
        used: &[(2, (4 * GB, 4, 0))],
        asks: &[(0, 10, (GB, 1, 0)), (1, 10, (GB, 1, 0))],
        placed: &[4, 4],
    },
    Case {
        what: "a user's earliest-submitted app goes first, whatever its index",
        nodes: &[(3 * GB, 3, 0)],
        apps: &[(1, 0, 200), (1, 0, 100)],
        asks: &[(0, 2, (GB, 1, 0)), (1, 2, (GB, 1, 0))],
        placed: &[1, 2],
        ..BASE
    },
    Case {
        what: "no head-of-line blocking: an ask that fits nowhere is passed over",
        nodes: &[(4 * GB, 4, 0)],
        apps: &[(1, 0, 0)],
        asks: &[(0, 1, (64 * GB, 1, 0)), (0, 5, (GB, 1, 0))],
        placed: &[0, 4],
        ..BASE
    },
    Case {
        // A's tasks are 1/8 of the GPUs, B's 1/16 of the vcores: were GPUs
        // ignored, both would be vcore-bound and split 8 to 8.
        what: "GPUs can be the dominant resource",
        nodes: &[(64 * GB, 16, 8)],
        queues: HALVES,
        apps: &[(1, 0, 0), (2, 1, 0)],
        asks: &[(0, 100, (GB, 1, 1)), (1, 100, (GB, 1, 0))],
        placed: &[6, 10],
        ..BASE
    },
    Case {
        what: "GPU asks go only where GPUs are",
        nodes: &[(16 * GB, 16, 0), (16 * GB, 16, 2)],
        apps: &[(1, 0, 0)],
        asks: &[(0, 4, (GB, 1, 1))],
        placed: &[2],
        ..BASE
    },
    Case {
        what: "a cluster without GPUs skips them in shares and places no GPU asks",
        nodes: &[(4 * GB, 4, 0)],
        apps: &[(1, 0, 0), (1, 1, 0)],
        asks: &[(0, 4, (GB, 1, 1)), (1, 4, (GB, 1, 0))],
        placed: &[0, 4],
        ..BASE
    },
    Case {
        what: "exhausted cluster places nothing",
        nodes: &[(4 * GB, 4, 0), (4 * GB, 4, 0)],
        apps: &[(1, 0, 0), (1, 1, 0)],
        used: &[(0, (8 * GB, 8, 0))],
        asks: &[(0, 3, (GB, 1, 0)), (1, 3, (256, 1, 0))],
        placed: &[0, 0],
        ..BASE
    },
    Case {
        what: "demand above the cluster fills it exactly",
        nodes: &[(4 * GB, 4, 0), (4 * GB, 4, 0)],
        apps: &[(1, 0, 0), (1, 1, 0)],
        asks: &[(0, 30, (GB, 1, 0)), (1, 30, (GB, 1, 0))],
        placed: &[4, 4],
        ..BASE
    },
    Case {
        what: "no nodes places nothing",
        apps: &[(1, 0, 0)],
        asks: &[(0, 3, (GB, 1, 0))],
        placed: &[0],
        ..BASE
    },
    Case {
        what: "a queue without a guarantee comes after the others",
        nodes: &[(4 * GB, 4, 0)],
        queues: &[(0, 100.0, 100.0), (0, 0.0, 100.0), (0, 100.0, 100.0)],
        apps: &[(1, 0, 0), (2, 1, 0)],
        asks: &[(0, 10, (GB, 1, 0)), (1, 10, (GB, 1, 0))],
        placed: &[0, 4],
        ..BASE
    },
    Case {
        what: "a queue without a guarantee gets what the others leave",
        nodes: &[(4 * GB, 4, 0)],
        queues: &[(0, 100.0, 100.0), (0, 0.0, 100.0), (0, 100.0, 100.0)],
        apps: &[(1, 0, 0), (2, 1, 0)],
        asks: &[(0, 10, (GB, 1, 0)), (1, 2, (GB, 1, 0))],
        placed: &[2, 2],
        ..BASE
    },
    Case {
        what: "asks with nothing pending are skipped",
        nodes: &[(4 * GB, 4, 0)],
        queues: &[(0, 100.0, 100.0), (0, 100.0, 100.0), (1, 100.0, 100.0)],
        apps: &[(2, 0, 0)],
        asks: &[(0, 0, (GB, 1, 0)), (0, 2, (GB, 1, 0))],
        placed: &[0, 2],
        ..BASE
    },
    Case {
        what: "root alone is the leaf",
        nodes: &[(4 * GB, 4, 0)],
        queues: &[(0, 100.0, 100.0)],
        apps: &[(0, 0, 0)],
        asks: &[(0, 2, (GB, 1, 0))],
        placed: &[2],
        ..BASE
    },
    Case {
        what: "containers of size zero take no room",
        nodes: &[(0, 0, 0)],
        apps: &[(1, 0, 0)],
        asks: &[(0, 7, (0, 0, 0))],
        placed: &[7],
        ..BASE
    },
];

/// The snapshot a case describes, as the host would send it.
fn build(case: &Case) -> wit::Snapshot {
    let mut record = wit::Snapshot::default();
    let nodes = &mut record.nodes;
    for &(memory_mb, vcores, gpus) in case.nodes {
        nodes.capacity_memory_mb.push(memory_mb);
        nodes.capacity_vcores.push(vcores);
        nodes.capacity_gpus.push(gpus);
    }
    nodes.free_memory_mb = nodes.capacity_memory_mb.clone();
    nodes.free_vcores = nodes.capacity_vcores.clone();
    nodes.free_gpus = nodes.capacity_gpus.clone();
    for &(parent, capacity, maximum) in case.queues {
        push_queue(&mut record.queues, parent, capacity, maximum);
    }
    for &(queue, user, submit) in case.apps {
        push_app(&mut record.apps, queue, user, submit);
    }
    let asks = &mut record.asks;
    for &(app, pending, (memory_mb, vcores, gpus)) in case.asks {
        asks.app.push(app);
        asks.pending.push(pending);
        asks.memory_mb.push(memory_mb);
        asks.vcores.push(vcores);
        asks.gpus.push(gpus);
    }
    for &(app, used) in case.used {
        use_room(&mut record, app as usize, used);
    }
    record
}

/// Adds a queue with YARN's defaults for the columns DRF does not read.
fn push_queue(queues: &mut wit::Queues, parent: u32, capacity: f64, maximum: f64) {
    queues.parent.push(parent);
    queues.capacity.push(capacity);
    queues.maximum_capacity.push(maximum);
    queues.minimum_user_limit_percent.push(100.0);
    queues.user_limit_factor.push(Some(1.0));
    queues.fair.push(false);
    queues.used_memory_mb.push(0);
    queues.used_vcores.push(0);
    queues.used_gpus.push(0);
}

/// Adds an app using nothing yet, priority 0.
fn push_app(apps: &mut wit::Apps, queue: u32, user: u32, submit_time_ms: i64) {
    apps.queue.push(queue);
    apps.user.push(user);
    apps.priority.push(0);
    apps.submit_time_ms.push(submit_time_ms);
    apps.used_memory_mb.push(0);
    apps.used_vcores.push(0);
    apps.used_gpus.push(0);
}

/// Puts `used` on `app`, its queue and the queue's ancestors, and takes it
/// off the nodes' free room, lowest node first, resource by resource.
fn use_room(record: &mut wit::Snapshot, app: usize, used: Row) {
    let (nodes, queues, apps) = (&mut record.nodes, &mut record.queues, &mut record.apps);
    apps.used_memory_mb[app] += used.0;
    apps.used_vcores[app] += used.1;
    apps.used_gpus[app] += used.2;
    let mut q = apps.queue[app] as usize;
    loop {
        queues.used_memory_mb[q] += used.0;
        queues.used_vcores[q] += used.1;
        queues.used_gpus[q] += used.2;
        if q == 0 {
            break;
        }
        q = queues.parent[q] as usize;
    }
    let (mut memory, mut vcores, mut gpus) = used;
    for n in 0..nodes.free_memory_mb.len() {
        let m = memory.min(nodes.free_memory_mb[n]);
        nodes.free_memory_mb[n] -= m;
        memory -= m;
        let v = vcores.min(nodes.free_vcores[n]);
        nodes.free_vcores[n] -= v;
        vcores -= v;
        let g = gpus.min(nodes.free_gpus[n]);
        nodes.free_gpus[n] -= g;
        gpus -= g;
    }
}

/// The checked snapshot of a record the tests made well-formed.
fn checked(record: wit::Snapshot) -> Snapshot {
    Snapshot::new(SnapshotBuilder::complete(record)).expect("a well-formed snapshot")
}

fn placed_per_ask(snapshot: &Snapshot, placements: &Placements) -> Vec<u32> {
    let mut placed = vec![0; snapshot.asks().len()];
    for (ask, _, count) in placements.triples() {
        placed[ask as usize] += count;
    }
    placed
}

#[test]
fn placements_match_the_table() {
    for case in CASES {
        let snapshot = checked(build(case));
        let placements = schedule(&snapshot);
        assert_valid(&snapshot, &placements);
        assert_eq!(
            placements,
            reference(&snapshot),
            "{}: differs from one container at a time",
            case.what
        );
        assert_eq!(
            placed_per_ask(&snapshot, &placements),
            case.placed,
            "{}",
            case.what
        );
    }
}

/// (what, case, expected (ask, node, count) entries)
type Exact = (&'static str, Case, &'static [(u32, u32, u32)]);

const EXACT: &[Exact] = &[
    (
        "first fit: the lowest node with room fills first",
        Case {
            nodes: &[(4 * GB, 4, 0), (4 * GB, 4, 0), (4 * GB, 4, 0)],
            apps: &[(1, 0, 0)],
            asks: &[(0, 6, (GB, 1, 0))],
            ..BASE
        },
        &[(0, 0, 4), (0, 1, 2)],
    ),
    (
        "first fit skips nodes without room in every resource",
        Case {
            nodes: &[(64 * GB, 0, 0), (GB / 2, 8, 0), (8 * GB, 8, 0)],
            apps: &[(1, 0, 0)],
            asks: &[(0, 3, (GB, 1, 0))],
            ..BASE
        },
        &[(0, 2, 3)],
    ),
    (
        "turns alternate between equal users",
        Case {
            nodes: &[(4 * GB, 4, 0)],
            apps: &[(1, 0, 0), (1, 1, 0)],
            asks: &[(0, 2, (GB, 1, 0)), (1, 2, (GB, 1, 0))],
            ..BASE
        },
        &[(0, 0, 1), (1, 0, 1), (0, 0, 1), (1, 0, 1)],
    ),
    (
        "consecutive turns of one ask on one node are one entry",
        Case {
            nodes: &[(4 * GB, 4, 0)],
            apps: &[(1, 0, 0), (1, 1, 0)],
            asks: &[(0, 4, (GB, 1, 0)), (1, 1, (8 * GB, 1, 0))],
            ..BASE
        },
        &[(0, 0, 4)],
    ),
];

#[test]
fn exact_placements() {
    for (what, case, expected) in EXACT {
        let snapshot = checked(build(case));
        let placements = schedule(&snapshot);
        assert_eq!(placements.triples(), *expected, "{what}");
        assert_eq!(placements, reference(&snapshot), "{what}");
    }
}

/// Checks the host's rules — known nodes and asks, no ask above its pending
/// count, no node above its free room — and that no queue that gained
/// containers ends above its absolute maximum.
fn assert_valid(snapshot: &Snapshot, placements: &Placements) {
    let (nodes, queues, apps, asks) = (
        snapshot.nodes(),
        snapshot.queues(),
        snapshot.apps(),
        snapshot.asks(),
    );
    let mut used = vec![Resources::ZERO; nodes.len()];
    let mut placed = vec![0u64; asks.len()];
    let mut queue_used: Vec<Resources> = (0..queues.len()).map(|q| queues.used(q)).collect();
    let mut grown = vec![false; queues.len()];
    for (ask, node, count) in placements.triples() {
        let (ask, node, count) = (ask as usize, node as usize, u64::from(count));
        assert!(count > 0, "empty placement");
        assert!(node < nodes.len(), "unknown node {node}");
        placed[ask] += count;
        let added = asks.size(ask).times(count);
        used[node] = used[node].plus(added);
        for q in queues.path(apps.queue(asks.app(ask))) {
            queue_used[q] = queue_used[q].plus(added);
            grown[q] = true;
        }
    }
    for (ask, &count) in placed.iter().enumerate() {
        assert!(
            count <= u64::from(asks.pending[ask]),
            "ask {ask} over pending"
        );
    }
    for (node, used) in used.iter().enumerate() {
        let free = nodes.free(node);
        assert!(
            free.covers(*used),
            "node {node} over-allocated: {used:?} > {free:?}"
        );
    }
    // Resources the cluster has none of are not part of shares: no limit.
    let cluster = nodes.cluster();
    for q in 1..queues.len() {
        if grown[q] {
            assert!(
                cluster
                    .limit(queues.absolute_maximum(q))
                    .covers(queue_used[q]),
                "queue {q} above its maximum: {queue_used:?} {placements:?} total {:?}",
                cluster.total()
            );
        }
    }
}

/// The rule as stated, one container at a time, scanning everything each
/// time: what `schedule` must match exactly.
fn reference(snapshot: &Snapshot) -> Placements {
    let (nodes, queues, apps, asks) = (
        snapshot.nodes(),
        snapshot.queues(),
        snapshot.apps(),
        snapshot.asks(),
    );
    let node_count = nodes.len();
    let mut free: Vec<Resources> = nodes.free_rooms().collect();
    let mut total = [0u64; 3];
    for n in 0..node_count {
        total[0] += nodes.capacity_memory_mb[n];
        total[1] += nodes.capacity_vcores[n];
        total[2] += nodes.capacity_gpus[n];
    }
    let share = |used: Resources| -> f64 {
        let used = used.to_array();
        (0..3)
            .filter(|&r| total[r] > 0)
            .map(|r| used[r] as f64 / total[r] as f64)
            .fold(0.0, f64::max)
    };
    let cluster = Cluster::new(Resources::from_array(total));

    // The tree, down from root: guarantees and maxima as the README states.
    let queue_count = queues.len();
    let mut guarantee = vec![1.0; queue_count];
    let mut maximum = vec![1.0; queue_count];
    for q in 1..queue_count {
        let p = queues.parent[q] as usize;
        guarantee[q] = guarantee[p] * (queues.capacity[q] / 100.0);
        maximum[q] = (guarantee[p] * (queues.maximum_capacity[q] / 100.0)).min(maximum[p]);
    }
    let path = |q: usize| -> Vec<usize> {
        let mut path = vec![q];
        while *path.last().unwrap() != 0 {
            path.push(queues.parent[*path.last().unwrap()] as usize);
        }
        path
    };
    let mut queue_used: Vec<Resources> = (0..queue_count).map(|q| queues.used(q)).collect();
    let mut user_used: HashMap<(usize, u32), Resources> = HashMap::new();
    for app in 0..apps.len() {
        let entry = user_used
            .entry((apps.queue[app] as usize, apps.user[app]))
            .or_insert(Resources::ZERO);
        *entry = entry.plus(apps.used(app));
    }
    let mut pending: Vec<u32> = asks.pending.clone();
    let queue_of = |ask: usize| apps.queue[asks.app[ask] as usize] as usize;

    let mut placements = Placements::default();
    loop {
        // Every ask that could take one container now, with its node.
        let placeable =
            |ask: usize, queue_used: &[Resources], free: &[Resources]| -> Option<usize> {
                if pending[ask] == 0 {
                    return None;
                }
                let size = asks.size(ask);
                for a in path(queue_of(ask)) {
                    // No limit on a resource the cluster has none of: no node
                    // has room for a container that needs some anyway.
                    let limit = cluster.limit(maximum[a]);
                    if !limit.covers(queue_used[a]) || !limit.covers(queue_used[a].plus(size)) {
                        return None;
                    }
                }
                (0..node_count).find(|&n| free[n].covers(size))
            };
        let ready: Vec<(usize, usize)> = (0..asks.len())
            .filter_map(|ask| Some((ask, placeable(ask, &queue_used, &free)?)))
            .collect();
        let queue_key = |q: usize| {
            let s = share(queue_used[q]);
            if guarantee[q] > 0.0 {
                (0, s / guarantee[q])
            } else {
                (1, s)
            }
        };
        let Some(queue) = ready
            .iter()
            .map(|&(ask, _)| queue_of(ask))
            .min_by(|&a, &b| {
                let (ka, kb) = (queue_key(a), queue_key(b));
                (ka.0, ka.1)
                    .partial_cmp(&(kb.0, kb.1))
                    .unwrap()
                    .then(a.cmp(&b))
            })
        else {
            break;
        };
        let in_queue: Vec<(usize, usize)> = ready
            .iter()
            .copied()
            .filter(|&(ask, _)| queue_of(ask) == queue)
            .collect();
        let user_share = |user: u32| {
            share(
                user_used
                    .get(&(queue, user))
                    .copied()
                    .unwrap_or(Resources::ZERO),
            )
        };
        let user = in_queue
            .iter()
            .map(|&(ask, _)| apps.user[asks.app[ask] as usize])
            .min_by(|&a, &b| {
                user_share(a)
                    .partial_cmp(&user_share(b))
                    .unwrap()
                    .then(a.cmp(&b))
            })
            .unwrap();
        let &(ask, node) = in_queue
            .iter()
            .filter(|&&(ask, _)| apps.user[asks.app[ask] as usize] == user)
            .min_by_key(|&&(ask, _)| {
                let app = asks.app[ask] as usize;
                (apps.submit_time_ms[app], app, ask)
            })
            .unwrap();

        let size = asks.size(ask);
        pending[ask] -= 1;
        free[node] = free[node].minus(size);
        for a in path(queue) {
            queue_used[a] = queue_used[a].plus(size);
        }
        let entry = user_used.entry((queue, user)).or_insert(Resources::ZERO);
        *entry = entry.plus(size);
        placements.push(ask, node, 1);
    }
    placements
}

/// A small deterministic generator, so failures reproduce.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }

    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.below(from.len() as u64) as usize]
    }
}

#[test]
fn never_over_allocates_and_matches_one_container_at_a_time() {
    let mut rng = Lcg(11);
    for round in 0..3000 {
        let mut record = wit::Snapshot::default();
        let node_count = rng.below(8) as usize;
        let nodes = &mut record.nodes;
        for _ in 0..node_count {
            // Mostly small nodes, so turns are short and nodes fill; now
            // and then big ones, so turns run long.
            let scale = rng.pick(&[1, 1, 1, 4]);
            nodes.capacity_memory_mb.push(rng.below(9) * GB * scale);
            nodes.capacity_vcores.push(rng.below(9) * scale);
            nodes.capacity_gpus.push(rng.below(3) * scale);
        }
        nodes.free_memory_mb = nodes.capacity_memory_mb.clone();
        nodes.free_vcores = nodes.capacity_vcores.clone();
        nodes.free_gpus = nodes.capacity_gpus.clone();

        // A tree of up to 6 queues, each parent before its children.
        let queue_count = 1 + rng.below(6) as usize;
        for q in 0..queue_count {
            let parent = if q == 0 {
                0
            } else {
                rng.below(q as u64) as u32
            };
            let capacity = rng.pick(&[0.0, 10.0, 25.0, 33.3, 50.0, 75.0, 100.0]);
            let maximum = rng.pick(&[capacity, capacity, 40.0, 60.0, 100.0]);
            push_queue(&mut record.queues, parent, capacity, maximum.max(capacity));
        }
        let leaves: Vec<u32> = (0..queue_count as u32)
            .filter(|&q| !record.queues.parent[1..].contains(&q))
            .collect();

        // Apps in leaves, with users numbered below the app count.
        let app_count = rng.below(7) as usize;
        for _ in 0..app_count {
            let queue = rng.pick(&leaves);
            let user = rng.below(app_count.min(3) as u64) as u32;
            let submit = rng.below(4) as i64;
            push_app(&mut record.apps, queue, user, submit);
        }
        for app in 0..app_count {
            if rng.below(2) == 0 {
                let used = (rng.below(4) * GB, rng.below(4), rng.below(2));
                use_room(&mut record, app, used);
            }
        }

        if app_count > 0 {
            let asks = &mut record.asks;
            for _ in 0..rng.below(10) {
                asks.app.push(rng.below(app_count as u64) as u32);
                asks.pending
                    .push((rng.below(9) * rng.pick(&[1, 1, 5])) as u32);
                asks.memory_mb.push(rng.below(5) * 512);
                asks.vcores.push(rng.below(4));
                asks.gpus.push(rng.below(2));
            }
        }

        let snapshot = checked(record);
        let placements = schedule(&snapshot);
        assert_valid(&snapshot, &placements);
        assert_eq!(
            placements,
            reference(&snapshot),
            "round {round}: {snapshot:?}"
        );
    }
}

#[test]
fn parameters_are_refused() {
    use weft_policy::PolicyKind;
    use weft_policy::params::configure_with;
    assert_eq!(configure_with::<Drf>(PolicyKind::Scheduling, &[]), Ok(Drf));
    let message =
        configure_with::<Drf>(PolicyKind::Scheduling, &[("node-order", "last-fit")]).unwrap_err();
    for word in ["drf", "node-order", "last-fit"] {
        assert!(message.contains(word), "{message:?} lacks {word:?}");
    }
}

/// The scale the host benchmarks: 10,000 nodes, 100,000 pending containers
/// in 10,000 asks, across a queue tree with maxima, 200 users, and container
/// shapes that are memory-heavy, vcore-heavy or GPU-bound.
fn large() -> wit::Snapshot {
    let mut record = wit::Snapshot::default();
    let node_count = 10_000;
    record.nodes = wit::Nodes {
        capacity_memory_mb: vec![64 * GB; node_count],
        capacity_vcores: vec![32; node_count],
        capacity_gpus: vec![2; node_count],
        free_memory_mb: vec![64 * GB; node_count],
        free_vcores: vec![32; node_count],
        free_gpus: vec![2; node_count],
        ..wit::Nodes::default()
    };
    // root; eng 60 (dev 50, qa 50); ops 40 (batch 70, adhoc 30 max 50)
    let tree: &[(u32, f64, f64)] = &[
        (0, 100.0, 100.0),
        (0, 60.0, 100.0),
        (0, 40.0, 100.0),
        (1, 50.0, 100.0),
        (1, 50.0, 100.0),
        (2, 70.0, 100.0),
        (2, 30.0, 50.0),
    ];
    for &(parent, capacity, maximum) in tree {
        push_queue(&mut record.queues, parent, capacity, maximum);
    }
    let leaves = [3, 4, 5, 6];
    let app_count = 2_000;
    for a in 0..app_count {
        push_app(&mut record.apps, leaves[a % 4], (a % 200) as u32, a as i64);
    }
    let shapes = [(4 * GB, 1, 0), (GB, 4, 0), (2 * GB, 1, 1), (2 * GB, 2, 0)];
    let ask_count = 10_000;
    record.asks = wit::Asks {
        app: (0..ask_count).map(|i| (i % app_count) as u32).collect(),
        pending: vec![10; ask_count],
        memory_mb: (0..ask_count).map(|i| shapes[i % 4].0).collect(),
        vcores: (0..ask_count).map(|i| shapes[i % 4].1).collect(),
        gpus: (0..ask_count).map(|i| shapes[i % 4].2).collect(),
        ..wit::Asks::default()
    };
    record
}

/// Two equal queues with equal asks: every turn is one container, the
/// slowest case for turns.
fn alternating() -> wit::Snapshot {
    let mut record = build(&Case {
        queues: HALVES,
        apps: &[(1, 0, 0), (2, 1, 0)],
        ..BASE
    });
    record.nodes = large().nodes;
    record.asks = wit::Asks {
        app: vec![0, 1],
        pending: vec![50_000, 50_000],
        memory_mb: vec![2 * GB; 2],
        vcores: vec![1; 2],
        gpus: vec![0; 2],
        ..wit::Asks::default()
    };
    record
}

/// The snapshot `weft policy bench --batch 100000` sends: 12,500 nodes of
/// 8 GB and 8 vcores, one queue, 10,000 asks of 10 1 GB, 1 vcore containers
/// from 10 users taking turns.
fn host_bench() -> wit::Snapshot {
    let (n, asks, nodes) = (100_000u32, 10_000usize, 12_500usize);
    let mut record = build(&BASE);
    record.nodes = wit::Nodes {
        free_memory_mb: vec![8 * GB; nodes],
        free_vcores: vec![8; nodes],
        free_gpus: vec![0; nodes],
        capacity_memory_mb: vec![8 * GB; nodes],
        capacity_vcores: vec![8; nodes],
        capacity_gpus: vec![0; nodes],
        ..wit::Nodes::default()
    };
    for a in 0..asks {
        push_app(&mut record.apps, 1, (a % 10) as u32, a as i64);
    }
    record.asks = wit::Asks {
        app: (0..asks as u32).collect(),
        pending: (0..asks as u32).map(|i| (n - i * 10).min(10)).collect(),
        memory_mb: vec![GB; asks],
        vcores: vec![1; asks],
        gpus: vec![0; asks],
        ..wit::Asks::default()
    };
    record
}

/// The large snapshots, by name.
fn large_cases() -> [(&'static str, Snapshot); 3] {
    [
        ("mixed", checked(large())),
        ("alternating", checked(alternating())),
        ("host bench", checked(host_bench())),
    ]
}

#[test]
fn large_cluster_stays_valid() {
    for (what, snapshot) in large_cases() {
        let placements = schedule(&snapshot);
        assert_valid(&snapshot, &placements);
        assert!(
            placements.total() > 50_000,
            "{what}: only {} placed",
            placements.total()
        );
    }
}

/// `cargo test -p drf --release -- --ignored --nocapture timing`
#[test]
#[ignore]
fn timing() {
    for (what, snapshot) in large_cases() {
        // The fastest of several runs: the least disturbed by other work.
        let mut fastest = std::time::Duration::MAX;
        let mut placements = Placements::default();
        if std::env::var("DRF_TIMING_CASE").is_ok_and(|only| only != what) {
            continue;
        }
        let runs = std::env::var("DRF_TIMING_RUNS").map_or(20, |r| r.parse().unwrap());
        for _ in 0..runs {
            let start = std::time::Instant::now();
            placements = std::hint::black_box(schedule(&snapshot));
            fastest = fastest.min(start.elapsed());
        }
        println!(
            "{what}: {} nodes, {} pending: {} placed in {} entries, {fastest:?} per round (fastest of {runs})",
            snapshot.nodes().len(),
            snapshot
                .asks()
                .pending
                .iter()
                .map(|&p| u64::from(p))
                .sum::<u64>(),
            placements.total(),
            placements.len(),
        );
    }
}
