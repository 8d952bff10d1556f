use std::collections::HashMap;

use super::*;

/// Memory, vcores, GPUs.
type Row = (u64, u64, u64);

/// What `schedule` reads.
type Snapshot = (Nodes, Queues, Apps, Asks);

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
        // The host never sends NaN; a policy reading one gives the queue
        // nothing rather than everything (capacity reads it the same way).
        what: "a NaN maximum-capacity lets the queue grow to nothing",
        nodes: &[(100 * GB, 100, 0)],
        queues: &[(0, 100.0, 100.0), (0, 50.0, f64::NAN), (0, 50.0, 100.0)],
        apps: &[(1, 0, 0), (2, 1, 0)],
        asks: &[(0, 10, (GB, 1, 0)), (1, 10, (GB, 1, 0))],
        placed: &[0, 10],
        ..BASE
    },
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
        what: "asks of unknown apps, of apps in parent queues, and with nothing pending are skipped",
        nodes: &[(4 * GB, 4, 0)],
        queues: &[(0, 100.0, 100.0), (0, 100.0, 100.0), (1, 100.0, 100.0)],
        apps: &[(1, 0, 0), (2, 0, 0), (9, 0, 0)],
        asks: &[
            (0, 1, (GB, 1, 0)),
            (7, 1, (GB, 1, 0)),
            (2, 1, (GB, 1, 0)),
            (1, 0, (GB, 1, 0)),
            (1, 2, (GB, 1, 0)),
        ],
        placed: &[0, 0, 0, 0, 2],
        ..BASE
    },
    Case {
        what: "a queue whose parent comes after it is malformed and gets nothing",
        nodes: &[(4 * GB, 4, 0)],
        queues: &[(0, 100.0, 100.0), (2, 50.0, 100.0), (0, 50.0, 100.0)],
        apps: &[(1, 0, 0), (2, 1, 0)],
        asks: &[(0, 2, (GB, 1, 0)), (1, 2, (GB, 1, 0))],
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

/// The snapshot a case describes.
fn build(case: &Case) -> Snapshot {
    let mut nodes = Nodes::default();
    for &(memory_mb, vcores, gpus) in case.nodes {
        nodes.capacity_memory_mb.push(memory_mb);
        nodes.capacity_vcores.push(vcores);
        nodes.capacity_gpus.push(gpus);
    }
    nodes.free_memory_mb = nodes.capacity_memory_mb.clone();
    nodes.free_vcores = nodes.capacity_vcores.clone();
    nodes.free_gpus = nodes.capacity_gpus.clone();
    let n = case.queues.len();
    let queues = Queues {
        parent: case.queues.iter().map(|q| q.0).collect(),
        capacity: case.queues.iter().map(|q| q.1).collect(),
        maximum_capacity: case.queues.iter().map(|q| q.2).collect(),
        used_memory_mb: vec![0; n],
        used_vcores: vec![0; n],
        used_gpus: vec![0; n],
    };
    let n = case.apps.len();
    let mut apps = Apps {
        queue: case.apps.iter().map(|a| a.0).collect(),
        user: case.apps.iter().map(|a| a.1).collect(),
        submit_time_ms: case.apps.iter().map(|a| a.2).collect(),
        used_memory_mb: vec![0; n],
        used_vcores: vec![0; n],
        used_gpus: vec![0; n],
    };
    let asks = Asks {
        app: case.asks.iter().map(|a| a.0).collect(),
        pending: case.asks.iter().map(|a| a.1).collect(),
        memory_mb: case.asks.iter().map(|a| a.2.0).collect(),
        vcores: case.asks.iter().map(|a| a.2.1).collect(),
        gpus: case.asks.iter().map(|a| a.2.2).collect(),
    };
    let mut queues = queues;
    for &(app, (memory_mb, vcores, gpus)) in case.used {
        use_room(
            &mut nodes,
            &mut queues,
            &mut apps,
            app as usize,
            (memory_mb, vcores, gpus),
        );
    }
    (nodes, queues, apps, asks)
}

/// Puts `used` on `app`, its queue and the queue's ancestors, and takes it
/// off the nodes' free room, lowest node first, resource by resource.
fn use_room(nodes: &mut Nodes, queues: &mut Queues, apps: &mut Apps, app: usize, used: Row) {
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

fn placed_per_ask(asks: &Asks, placements: &Placements) -> Vec<u32> {
    let mut placed = vec![0; asks.pending.len()];
    for (ask, _, count) in placements.triples() {
        placed[ask as usize] += count;
    }
    placed
}

#[test]
fn placements_match_the_table() {
    for case in CASES {
        let (nodes, queues, apps, asks) = build(case);
        let placements = schedule(&nodes, &queues, &apps, &asks);
        assert_valid(&nodes, &queues, &apps, &asks, &placements);
        assert_eq!(
            placements,
            reference(&nodes, &queues, &apps, &asks),
            "{}: differs from one container at a time",
            case.what
        );
        assert_eq!(
            placed_per_ask(&asks, &placements),
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
        let (nodes, queues, apps, asks) = build(case);
        let placements = schedule(&nodes, &queues, &apps, &asks);
        assert_eq!(placements.triples(), *expected, "{what}");
        assert_eq!(
            placements,
            reference(&nodes, &queues, &apps, &asks),
            "{what}"
        );
    }
}

/// Checks the host's rules — known nodes and asks, no ask above its pending
/// count, no node above its free room — and that no queue that gained
/// containers ends above its absolute maximum.
fn assert_valid(nodes: &Nodes, queues: &Queues, apps: &Apps, asks: &Asks, placements: &Placements) {
    let node_count = nodes.free_memory_mb.len();
    let mut used = vec![[0u64; 3]; node_count];
    let mut placed = vec![0u64; asks.pending.len()];
    let mut queue_used: Vec<Res> = (0..queues.parent.len())
        .map(|q| {
            res(
                queues.used_memory_mb[q],
                queues.used_vcores[q],
                queues.used_gpus[q],
            )
        })
        .collect();
    let mut grown = vec![false; queues.parent.len()];
    for (ask, node, count) in placements.triples() {
        let (ask, node, count) = (ask as usize, node as usize, u64::from(count));
        assert!(count > 0, "empty placement");
        assert!(node < node_count, "unknown node {node}");
        placed[ask] += count;
        let size = res(asks.memory_mb[ask], asks.vcores[ask], asks.gpus[ask]);
        used[node] = plus(used[node], size, count);
        let mut q = apps.queue[asks.app[ask] as usize] as usize;
        loop {
            queue_used[q] = plus(queue_used[q], size, count);
            grown[q] = true;
            if q == 0 {
                break;
            }
            q = queues.parent[q] as usize;
        }
    }
    for (ask, &count) in placed.iter().enumerate() {
        assert!(
            count <= u64::from(asks.pending[ask]),
            "ask {ask} over pending"
        );
    }
    for (node, used) in used.iter().enumerate() {
        let free = res(
            nodes.free_memory_mb[node],
            nodes.free_vcores[node],
            nodes.free_gpus[node],
        );
        assert!(
            covers(free, *used),
            "node {node} over-allocated: {used:?} > {free:?}"
        );
    }
    let total = (0..node_count).fold([0; 3], |total, n| {
        plus(
            total,
            res(
                nodes.capacity_memory_mb[n],
                nodes.capacity_vcores[n],
                nodes.capacity_gpus[n],
            ),
            1,
        )
    });
    let mut maximum = vec![1.0; queues.parent.len()];
    let mut guarantee = vec![1.0; queues.parent.len()];
    for q in 1..queues.parent.len() {
        let p = queues.parent[q] as usize;
        guarantee[q] = guarantee[p] * fraction(queues.capacity[q]);
        maximum[q] = (guarantee[p] * fraction(queues.maximum_capacity[q])).min(maximum[p]);
        if grown[q] {
            // Resources the cluster has none of are not part of shares.
            for r in (0..3).filter(|&r| total[r] > 0) {
                assert!(
                    queue_used[q][r] <= limit(maximum[q], total[r]),
                    "queue {q} above its maximum in resource {r}: {queue_used:?} {placements:?} {queues:?} total {total:?}"
                );
            }
        }
    }
}

/// The rule as stated, one container at a time, scanning everything each
/// time: what `schedule` must match exactly.
fn reference(nodes: &Nodes, queues: &Queues, apps: &Apps, asks: &Asks) -> Placements {
    let node_count = nodes.free_memory_mb.len();
    let mut free: Vec<Res> = (0..node_count)
        .map(|n| {
            res(
                nodes.free_memory_mb[n],
                nodes.free_vcores[n],
                nodes.free_gpus[n],
            )
        })
        .collect();
    let mut total = [0u64; 3];
    for n in 0..node_count {
        total[0] += nodes.capacity_memory_mb[n];
        total[1] += nodes.capacity_vcores[n];
        total[2] += nodes.capacity_gpus[n];
    }
    let share = |used: Res| -> f64 {
        (0..3)
            .filter(|&r| total[r] > 0)
            .map(|r| used[r] as f64 / total[r] as f64)
            .fold(0.0, f64::max)
    };

    // The tree: queues whose parent comes before them, down from root.
    let queue_count = queues.parent.len();
    let mut valid = vec![false; queue_count];
    let mut guarantee = vec![0.0; queue_count];
    let mut maximum = vec![0.0; queue_count];
    for q in 0..queue_count {
        let p = queues.parent[q] as usize;
        if q == 0 {
            (valid[q], guarantee[q], maximum[q]) = (true, 1.0, 1.0);
        } else if p < q && valid[p] {
            valid[q] = true;
            guarantee[q] = guarantee[p] * fraction(queues.capacity[q]);
            maximum[q] = (guarantee[p] * fraction(queues.maximum_capacity[q])).min(maximum[p]);
        }
    }
    let leaf: Vec<bool> = (0..queue_count)
        .map(|q| valid[q] && !(1..queue_count).any(|c| valid[c] && queues.parent[c] as usize == q))
        .collect();
    let path = |q: usize| -> Vec<usize> {
        let mut path = vec![q];
        while *path.last().unwrap() != 0 {
            path.push(queues.parent[*path.last().unwrap()] as usize);
        }
        path
    };
    let mut queue_used: Vec<Res> = (0..queue_count)
        .map(|q| {
            res(
                queues.used_memory_mb[q],
                queues.used_vcores[q],
                queues.used_gpus[q],
            )
        })
        .collect();
    let app_count = apps.queue.len();
    let mut user_used: HashMap<(usize, u32), Res> = HashMap::new();
    for app in 0..app_count {
        let used = res(
            apps.used_memory_mb[app],
            apps.used_vcores[app],
            apps.used_gpus[app],
        );
        let entry = user_used
            .entry((apps.queue[app] as usize, apps.user[app]))
            .or_insert([0; 3]);
        *entry = plus(*entry, used, 1);
    }
    let mut pending: Vec<u32> = asks.pending.clone();
    let queue_of = |ask: usize| -> Option<usize> {
        let app = asks.app[ask] as usize;
        let q = *apps.queue.get(app)? as usize;
        (q < queue_count && leaf[q]).then_some(q)
    };
    let size_of = |ask: usize| res(asks.memory_mb[ask], asks.vcores[ask], asks.gpus[ask]);

    let mut placements = Placements::default();
    loop {
        // Every ask that could take one container now, with its node.
        let placeable = |ask: usize, queue_used: &[Res], free: &[Res]| -> Option<usize> {
            let q = queue_of(ask)?;
            if pending[ask] == 0 {
                return None;
            }
            let size = size_of(ask);
            for a in path(q) {
                let after = plus(queue_used[a], size, 1);
                for r in 0..3 {
                    let lim = limit(maximum[a], total[r]);
                    // A resource the cluster has none of counts only if
                    // the container needs some (then nothing fits anyway).
                    let counts = total[r] > 0 || size[r] > 0;
                    if counts && (queue_used[a][r] > lim || after[r] > lim) {
                        return None;
                    }
                }
            }
            (0..node_count).find(|&n| covers(free[n], size))
        };
        let ready: Vec<(usize, usize)> = (0..asks.pending.len())
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
            .map(|&(ask, _)| queue_of(ask).unwrap())
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
            .filter(|&(ask, _)| queue_of(ask) == Some(queue))
            .collect();
        let user_share =
            |user: u32| share(user_used.get(&(queue, user)).copied().unwrap_or([0; 3]));
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

        let size = size_of(ask);
        pending[ask] -= 1;
        free[node] = minus(free[node], size, 1);
        for a in path(queue) {
            queue_used[a] = plus(queue_used[a], size, 1);
        }
        let entry = user_used.entry((queue, user)).or_insert([0; 3]);
        *entry = plus(*entry, size, 1);
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
        let node_count = rng.below(8) as usize;
        let mut nodes = Nodes::default();
        for _ in 0..node_count {
            // Mostly small nodes, so turns are short and nodes fill; now
            // and then big ones, so turns run long.
            let scale = rng.pick(&[1, 1, 1, 4]);
            let capacity = (
                rng.below(9) * GB * scale,
                rng.below(9) * scale,
                rng.below(3) * scale,
            );
            nodes.capacity_memory_mb.push(capacity.0);
            nodes.capacity_vcores.push(capacity.1);
            nodes.capacity_gpus.push(capacity.2);
        }
        nodes.free_memory_mb = nodes.capacity_memory_mb.clone();
        nodes.free_vcores = nodes.capacity_vcores.clone();
        nodes.free_gpus = nodes.capacity_gpus.clone();

        let queue_count = 1 + rng.below(6) as usize;
        let mut queues = Queues::default();
        for q in 0..queue_count {
            // Now and then a parent that does not come first: malformed.
            let parent = if q == 0 {
                0
            } else if rng.below(20) == 0 {
                q as u32
            } else {
                rng.below(q as u64) as u32
            };
            let capacity = rng.pick(&[0.0, 10.0, 25.0, 33.3, 50.0, 75.0, 100.0]);
            let maximum = rng.pick(&[capacity, capacity, 40.0, 60.0, 100.0]);
            queues.parent.push(parent);
            queues.capacity.push(capacity);
            queues.maximum_capacity.push(maximum.max(capacity));
        }
        queues.used_memory_mb = vec![0; queue_count];
        queues.used_vcores = vec![0; queue_count];
        queues.used_gpus = vec![0; queue_count];

        let app_count = rng.below(7) as usize;
        let mut apps = Apps::default();
        for _ in 0..app_count {
            apps.queue.push(rng.below(queue_count as u64) as u32);
            apps.user.push(rng.below(3) as u32);
            apps.submit_time_ms.push(rng.below(4) as i64);
        }
        apps.used_memory_mb = vec![0; app_count];
        apps.used_vcores = vec![0; app_count];
        apps.used_gpus = vec![0; app_count];
        for app in 0..app_count {
            // Running containers only in well-formed queues, so the usage
            // adds up along a real path to root.
            let q = apps.queue[app] as usize;
            let mut well_formed = true;
            let mut a = q;
            while a != 0 {
                let p = queues.parent[a] as usize;
                well_formed &= p < a;
                if p >= a {
                    break;
                }
                a = p;
            }
            if well_formed && rng.below(2) == 0 {
                let used = (rng.below(4) * GB, rng.below(4), rng.below(2));
                use_room(&mut nodes, &mut queues, &mut apps, app, used);
            }
        }

        let mut asks = Asks::default();
        for _ in 0..rng.below(10) {
            asks.app.push(rng.below(app_count as u64 + 1) as u32);
            asks.pending
                .push((rng.below(9) * rng.pick(&[1, 1, 5])) as u32);
            asks.memory_mb.push(rng.below(5) * 512);
            asks.vcores.push(rng.below(4));
            asks.gpus.push(rng.below(2));
        }

        let placements = schedule(&nodes, &queues, &apps, &asks);
        assert_valid(&nodes, &queues, &apps, &asks, &placements);
        assert_eq!(
            placements,
            reference(&nodes, &queues, &apps, &asks),
            "round {round}: {nodes:?} {queues:?} {apps:?} {asks:?}"
        );
    }
}

#[test]
fn ragged_columns_are_read_to_the_shortest() {
    let (mut nodes, queues, mut apps, mut asks) = build(&Case {
        nodes: &[(4 * GB, 4, 0), (4 * GB, 4, 0)],
        apps: &[(1, 0, 0), (1, 1, 0)],
        asks: &[(0, 1, (GB, 1, 0)), (1, 1, (GB, 1, 0)), (0, 1, (GB, 1, 0))],
        ..BASE
    });
    nodes.capacity_gpus.pop();
    apps.used_vcores.pop();
    asks.gpus.pop();
    let placements = schedule(&nodes, &queues, &apps, &asks);
    assert_eq!(placements.triples(), [(0, 0, 1)]);
}

#[test]
fn parameters_are_refused() {
    assert_eq!(Drf::from_params(&[]), Ok(Drf));
    let message = Drf::from_params(&[("node-order".into(), "last-fit".into())]).unwrap_err();
    for word in ["drf", "node-order", "last-fit"] {
        assert!(message.contains(word), "{message:?} lacks {word:?}");
    }
}

/// The scale the host benchmarks: 10,000 nodes, 100,000 pending containers
/// in 10,000 asks, across a queue tree with maxima, 200 users, and container
/// shapes that are memory-heavy, vcore-heavy or GPU-bound.
fn large() -> Snapshot {
    let node_count = 10_000;
    let mut nodes = Nodes {
        capacity_memory_mb: vec![64 * GB; node_count],
        capacity_vcores: vec![32; node_count],
        capacity_gpus: vec![2; node_count],
        ..Nodes::default()
    };
    nodes.free_memory_mb = nodes.capacity_memory_mb.clone();
    nodes.free_vcores = nodes.capacity_vcores.clone();
    nodes.free_gpus = nodes.capacity_gpus.clone();
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
    let leaves = [3, 4, 5, 6];
    let app_count = 2_000;
    let queues = Queues {
        parent: tree.iter().map(|q| q.0).collect(),
        capacity: tree.iter().map(|q| q.1).collect(),
        maximum_capacity: tree.iter().map(|q| q.2).collect(),
        used_memory_mb: vec![0; tree.len()],
        used_vcores: vec![0; tree.len()],
        used_gpus: vec![0; tree.len()],
    };
    let apps = Apps {
        queue: (0..app_count).map(|a| leaves[a % 4]).collect(),
        user: (0..app_count).map(|a| (a % 200) as u32).collect(),
        submit_time_ms: (0..app_count as i64).collect(),
        used_memory_mb: vec![0; app_count],
        used_vcores: vec![0; app_count],
        used_gpus: vec![0; app_count],
    };
    let shapes = [(4 * GB, 1, 0), (GB, 4, 0), (2 * GB, 1, 1), (2 * GB, 2, 0)];
    let ask_count = 10_000;
    let asks = Asks {
        app: (0..ask_count).map(|i| (i % app_count) as u32).collect(),
        pending: vec![10; ask_count],
        memory_mb: (0..ask_count).map(|i| shapes[i % 4].0).collect(),
        vcores: (0..ask_count).map(|i| shapes[i % 4].1).collect(),
        gpus: (0..ask_count).map(|i| shapes[i % 4].2).collect(),
    };
    (nodes, queues, apps, asks)
}

/// Two equal queues with equal asks: every turn is one container, the
/// slowest case for turns.
fn alternating() -> Snapshot {
    let (nodes, ..) = large();
    let (_, queues, apps, _) = build(&Case {
        queues: HALVES,
        apps: &[(1, 0, 0), (2, 1, 0)],
        ..BASE
    });
    let asks = Asks {
        app: vec![0, 1],
        pending: vec![50_000, 50_000],
        memory_mb: vec![2 * GB; 2],
        vcores: vec![1; 2],
        gpus: vec![0; 2],
    };
    (nodes, queues, apps, asks)
}

/// The snapshot `weft policy bench --batch 100000` sends: 12,500 nodes of
/// 8 GB and 8 vcores, one queue, 10,000 asks of 10 1 GB, 1 vcore containers
/// from 10 users taking turns.
fn host_bench() -> Snapshot {
    let (n, asks, nodes) = (100_000u32, 10_000usize, 12_500usize);
    let nodes = Nodes {
        free_memory_mb: vec![8 * GB; nodes],
        free_vcores: vec![8; nodes],
        free_gpus: vec![0; nodes],
        capacity_memory_mb: vec![8 * GB; nodes],
        capacity_vcores: vec![8; nodes],
        capacity_gpus: vec![0; nodes],
    };
    let (_, queues, ..) = build(&BASE);
    let apps = Apps {
        queue: vec![1; asks],
        user: (0..asks as u32).map(|i| i % 10).collect(),
        submit_time_ms: (0..asks as i64).collect(),
        used_memory_mb: vec![0; asks],
        used_vcores: vec![0; asks],
        used_gpus: vec![0; asks],
    };
    let asks = Asks {
        app: (0..asks as u32).collect(),
        pending: (0..asks as u32).map(|i| (n - i * 10).min(10)).collect(),
        memory_mb: vec![GB; asks],
        vcores: vec![1; asks],
        gpus: vec![0; asks],
    };
    (nodes, queues, apps, asks)
}

/// The large snapshots, by name.
fn large_cases() -> [(&'static str, Snapshot); 3] {
    [
        ("mixed", large()),
        ("alternating", alternating()),
        ("host bench", host_bench()),
    ]
}

#[test]
fn large_cluster_stays_valid() {
    for (what, (nodes, queues, apps, asks)) in large_cases() {
        let placements = schedule(&nodes, &queues, &apps, &asks);
        assert_valid(&nodes, &queues, &apps, &asks, &placements);
        let placed: u64 = placements.count.iter().map(|&c| u64::from(c)).sum();
        assert!(placed > 50_000, "{what}: only {placed} placed");
    }
}

/// `cargo test -p drf --release -- --ignored --nocapture timing`
#[test]
#[ignore]
fn timing() {
    for (what, (nodes, queues, apps, asks)) in large_cases() {
        // The fastest of several runs: the least disturbed by other work.
        let mut fastest = std::time::Duration::MAX;
        let mut placements = Placements::default();
        if std::env::var("DRF_TIMING_CASE").is_ok_and(|only| only != what) {
            continue;
        }
        let runs = std::env::var("DRF_TIMING_RUNS").map_or(20, |r| r.parse().unwrap());
        for _ in 0..runs {
            let start = std::time::Instant::now();
            placements = std::hint::black_box(schedule(&nodes, &queues, &apps, &asks));
            fastest = fastest.min(start.elapsed());
        }
        let placed: u64 = placements.count.iter().map(|&c| u64::from(c)).sum();
        println!(
            "{what}: {} nodes, {} pending: {placed} placed in {} entries, {fastest:?} per round (fastest of {runs})",
            nodes.free_memory_mb.len(),
            asks.pending.iter().map(|&p| u64::from(p)).sum::<u64>(),
            placements.ask.len(),
        );
    }
}
