use std::collections::BTreeMap;

use super::*;
use crate::cluster::user_limit;
use crate::testing::*;
use weft_policy::scheduling::SnapshotBuilder;

/// A table row: a cluster, the containers each app should get.
struct Case {
    what: &'static str,
    nodes: &'static [NodeRow],
    queues: &'static [Q],
    apps: &'static [A],
    asks: &'static [AskRow],
    per_app: &'static [u64],
}

/// A node of 100 GB and 100 vcores, all free: 100 of the 1 GB, 1 vcore
/// containers most rows ask for.
const HUNDRED: &[NodeRow] = &[((100 * GB, 100, 0), (100 * GB, 100, 0))];
/// The same node with room for 120 such containers.
const HUNDRED_TWENTY: &[NodeRow] = &[((120 * GB, 120, 0), (120 * GB, 120, 0))];
const ROOT: Q = queue(0, 100.0, 100.0);

/// `pending` containers of 1 GB and 1 vcore for `app`.
const fn small(app: u32, pending: u32) -> AskRow {
    (app, pending, GB, 1, 0)
}

const CASES: &[Case] = &[
    Case {
        what: "the most under-served queue first, ties to the lower index",
        // A at 60 % of its guarantee, B at 20 %: B catches up (20), then
        // they alternate, A first on ties.
        nodes: &[((24 * GB, 24, 0), (100 * GB, 100, 0))],
        queues: &[
            ROOT.used(40 * GB, 40, 0),
            queue(0, 50.0, 100.0).used(30 * GB, 30, 0),
            queue(0, 50.0, 100.0).used(10 * GB, 10, 0),
        ],
        apps: &[app(1, 0), app(2, 1)],
        asks: &[small(0, 100), small(1, 100)],
        per_app: &[2, 22],
    },
    Case {
        what: "the most under-served queue at every level",
        // X (1) at 0.4, Y (2) at 0.2; inside X, X1 (3) at 0 and X2 (4) at
        // 0.8: Y catches up to X, then X1 and Y alternate; X2 never leads.
        nodes: &[((30 * GB, 30, 0), (100 * GB, 100, 0))],
        queues: &[
            ROOT.used(30 * GB, 30, 0),
            queue(0, 50.0, 100.0).used(20 * GB, 20, 0),
            queue(0, 50.0, 100.0).used(10 * GB, 10, 0),
            queue(1, 50.0, 100.0),
            queue(1, 50.0, 100.0).used(20 * GB, 20, 0),
        ],
        apps: &[app(3, 0), app(4, 1), app(2, 2)],
        asks: &[small(0, 100), small(1, 100), small(2, 100)],
        per_app: &[10, 0, 20],
    },
    Case {
        what: "elastic up to the maximum while the others are idle",
        nodes: HUNDRED,
        queues: &[ROOT, queue(0, 50.0, 70.0).ulf(2.0), queue(0, 50.0, 100.0)],
        apps: &[app(1, 0)],
        asks: &[small(0, 1000)],
        per_app: &[70],
    },
    Case {
        what: "maximum 100: an idle cluster is all one queue's",
        nodes: HUNDRED,
        queues: &[ROOT, queue(0, 50.0, 100.0).ulf(2.0), queue(0, 50.0, 100.0)],
        apps: &[app(1, 0)],
        asks: &[small(0, 1000)],
        per_app: &[100],
    },
    Case {
        what: "an ancestor's maximum binds its children",
        // P (1) may reach 60 and holds 30 in C2 (4): C1 (3), whose own
        // maximum is 50, gets 30.
        nodes: &[((70 * GB, 70, 0), (100 * GB, 100, 0))],
        queues: &[
            ROOT.used(30 * GB, 30, 0),
            queue(0, 50.0, 60.0).used(30 * GB, 30, 0),
            queue(0, 50.0, 100.0),
            queue(1, 50.0, 100.0).ulf(10.0),
            queue(1, 50.0, 100.0).used(30 * GB, 30, 0),
        ],
        apps: &[app(3, 0)],
        asks: &[small(0, 1000)],
        per_app: &[30],
    },
    Case {
        what: "priorities first inside a queue",
        nodes: &[((10 * GB, 10, 0), (100 * GB, 100, 0))],
        queues: &[ROOT, queue(0, 100.0, 100.0)],
        apps: &[
            app(1, 0).priority(1).at(1),
            app(1, 1).priority(5).at(2),
            app(1, 2).priority(5).at(3),
        ],
        asks: &[small(0, 8), small(1, 8), small(2, 8)],
        per_app: &[0, 8, 2],
    },
    Case {
        what: "then earlier submission, then the lower index",
        nodes: &[((10 * GB, 10, 0), (100 * GB, 100, 0))],
        queues: &[ROOT, queue(0, 100.0, 100.0)],
        apps: &[app(1, 0).at(5), app(1, 1).at(3), app(1, 2).at(3)],
        asks: &[small(0, 6), small(1, 6), small(2, 6)],
        per_app: &[0, 6, 4],
    },
    Case {
        what: "fair: two apps share the queue",
        nodes: &[((10 * GB, 10, 0), (100 * GB, 100, 0))],
        queues: &[ROOT, queue(0, 100.0, 100.0).fair()],
        apps: &[app(1, 0), app(1, 0)],
        asks: &[small(0, 10), small(1, 10)],
        per_app: &[5, 5],
    },
    Case {
        what: "fair: the least used app catches up, then they alternate",
        nodes: &[((10 * GB, 10, 0), (100 * GB, 100, 0))],
        queues: &[
            ROOT.used(6 * GB, 6, 0),
            queue(0, 100.0, 100.0).fair().used(6 * GB, 6, 0),
        ],
        apps: &[app(1, 0).used(6 * GB, 6, 0), app(1, 0)],
        asks: &[small(0, 10), small(1, 10)],
        per_app: &[2, 8],
    },
    Case {
        what: "FIFO: the same apps, the first takes all",
        nodes: &[((10 * GB, 10, 0), (100 * GB, 100, 0))],
        queues: &[
            ROOT.used(6 * GB, 6, 0),
            queue(0, 100.0, 100.0).used(6 * GB, 6, 0),
        ],
        apps: &[app(1, 0).used(6 * GB, 6, 0), app(1, 0)],
        asks: &[small(0, 10), small(1, 10)],
        per_app: &[10, 0],
    },
    Case {
        what: "user-limit-factor 1 holds each user to the queue's guarantee",
        nodes: HUNDRED,
        queues: &[ROOT, queue(0, 50.0, 100.0), queue(0, 50.0, 100.0)],
        apps: &[app(1, 0), app(1, 1), app(1, 2)],
        asks: &[small(0, 100), small(1, 100), small(2, 100)],
        per_app: &[50, 50, 0],
    },
    Case {
        what: "minimum user limit 25 %, 2 users: 50 % each",
        nodes: HUNDRED_TWENTY,
        queues: &[ROOT, queue(0, 100.0, 100.0).mulp(25.0)],
        apps: &[app(1, 0), app(1, 1)],
        asks: &[small(0, 200), small(1, 200)],
        per_app: &[60, 60],
    },
    Case {
        what: "minimum user limit 25 %, 3 users: 33 % each",
        nodes: HUNDRED_TWENTY,
        queues: &[ROOT, queue(0, 100.0, 100.0).mulp(25.0)],
        apps: &[app(1, 0), app(1, 1), app(1, 2)],
        asks: &[small(0, 200), small(1, 200), small(2, 200)],
        per_app: &[40, 40, 40],
    },
    Case {
        what: "minimum user limit 25 %, 5 users: 25 % each, the fifth waits",
        nodes: HUNDRED_TWENTY,
        queues: &[ROOT, queue(0, 100.0, 100.0).mulp(25.0)],
        apps: &[app(1, 0), app(1, 1), app(1, 2), app(1, 3), app(1, 4)],
        asks: &[
            small(0, 200),
            small(1, 200),
            small(2, 200),
            small(3, 200),
            small(4, 200),
        ],
        per_app: &[30, 30, 30, 30, 0],
    },
    Case {
        what: "only users with pending asks are active",
        nodes: HUNDRED,
        queues: &[ROOT, queue(0, 100.0, 100.0).mulp(50.0)],
        apps: &[app(1, 0), app(1, 1)],
        asks: &[small(0, 200)],
        per_app: &[100, 0],
    },
    Case {
        what: "a user whose asks are all placed stops being active",
        nodes: HUNDRED,
        queues: &[ROOT, queue(0, 100.0, 100.0).mulp(25.0)],
        apps: &[app(1, 0), app(1, 1)],
        asks: &[small(0, 10), small(1, 200)],
        per_app: &[10, 90],
    },
    Case {
        what: "user-limit-factor 2: a lone user grows to the queue's maximum",
        nodes: HUNDRED,
        queues: &[
            ROOT,
            queue(0, 50.0, 100.0).ulf(2.0).mulp(50.0),
            queue(0, 50.0, 100.0),
        ],
        apps: &[app(1, 0)],
        asks: &[small(0, 200)],
        per_app: &[100],
    },
    Case {
        what: "user-limit-factor 2, two users: user used + ask stays within current / 2",
        nodes: HUNDRED,
        queues: &[
            ROOT,
            queue(0, 50.0, 100.0).ulf(2.0).mulp(50.0),
            queue(0, 50.0, 100.0),
        ],
        apps: &[app(1, 0), app(1, 1)],
        asks: &[small(0, 200), small(1, 200)],
        per_app: &[25, 25],
    },
    Case {
        what: "multi-resource: a vcore-heavy queue is held by its vcores",
        // 4 of 120 vcores a container: 15 make A's 50 %; B's 1 GB, 1 vcore
        // containers are 1 % each (memory dominates): 50.
        nodes: &[((100 * GB, 120, 0), (100 * GB, 120, 0))],
        queues: &[ROOT, queue(0, 50.0, 100.0), queue(0, 50.0, 100.0)],
        apps: &[app(1, 0), app(2, 1)],
        asks: &[(0, 100, GB, 4, 0), small(1, 100)],
        per_app: &[15, 50],
    },
    Case {
        what: "multi-resource: queues are ordered by dominant share",
        // A uses no memory but a third of the vcores (0.67 of its
        // guarantee); B 30 % of the memory (0.6): B is more under-served.
        nodes: &[((3 * GB, 80, 0), (100 * GB, 120, 0))],
        queues: &[
            ROOT.used(30 * GB, 40, 0),
            queue(0, 50.0, 100.0).used(0, 40, 0),
            queue(0, 50.0, 100.0).used(30 * GB, 0, 0),
        ],
        apps: &[app(1, 0), app(2, 1)],
        asks: &[small(0, 100), small(1, 100)],
        per_app: &[0, 3],
    },
    Case {
        what: "an ask no node can hold does not block the next",
        nodes: HUNDRED,
        queues: &[ROOT, queue(0, 100.0, 100.0)],
        apps: &[app(1, 0), app(1, 1)],
        asks: &[(0, 1, 200 * GB, 1, 0), small(0, 2), small(1, 3)],
        per_app: &[2, 3],
    },
    Case {
        what: "never more than pending",
        nodes: HUNDRED,
        queues: &[ROOT, queue(0, 100.0, 100.0)],
        apps: &[app(1, 0)],
        asks: &[small(0, 3), small(0, 0)],
        per_app: &[3],
    },
    Case {
        what: "gpu asks go where the gpus are",
        nodes: &[
            ((100 * GB, 100, 0), (100 * GB, 100, 0)),
            ((100 * GB, 100, 2), (100 * GB, 100, 2)),
        ],
        queues: &[ROOT, queue(0, 100.0, 100.0)],
        apps: &[app(1, 0)],
        asks: &[(0, 5, GB, 1, 1)],
        per_app: &[2],
    },
    Case {
        what: "no gpus in the cluster: gpu asks wait, the rest is served",
        nodes: HUNDRED,
        queues: &[ROOT, queue(0, 100.0, 100.0)],
        apps: &[app(1, 0)],
        asks: &[(0, 3, GB, 1, 1), small(0, 3)],
        per_app: &[3],
    },
    Case {
        what: "a queue without a guarantee gives each of its users one container, as YARN",
        nodes: HUNDRED,
        queues: &[ROOT, queue(0, 100.0, 100.0), queue(0, 0.0, 100.0)],
        apps: &[app(2, 0), app(2, 0), app(2, 1)],
        asks: &[small(0, 5), small(1, 5), small(2, 5)],
        per_app: &[1, 0, 1],
    },
    Case {
        what: "a user limit below one container lets a user with nothing have one",
        // A 2-vcore node, C guaranteed 30 % with factor 1: 0.6 vcores a user.
        nodes: &[((2 * GB, 2, 0), (2 * GB, 2, 0))],
        queues: &[ROOT, queue(0, 70.0, 100.0), queue(0, 30.0, 100.0)],
        apps: &[app(2, 0)],
        asks: &[small(0, 2)],
        per_app: &[1],
    },
    Case {
        what: "a full cluster places nothing",
        nodes: &[((0, 0, 0), (100 * GB, 100, 0))],
        queues: &[ROOT, queue(0, 100.0, 100.0)],
        apps: &[app(1, 0)],
        asks: &[small(0, 5)],
        per_app: &[0],
    },
    Case {
        what: "the root alone is the leaf",
        nodes: HUNDRED,
        queues: &[ROOT],
        apps: &[app(0, 0)],
        asks: &[small(0, 5)],
        per_app: &[5],
    },
    Case {
        what: "no nodes places nothing",
        nodes: &[],
        queues: &[ROOT],
        apps: &[app(0, 0)],
        asks: &[small(0, 5)],
        per_app: &[0],
    },
    Case {
        what: "no queues (so no apps) places nothing",
        nodes: HUNDRED,
        queues: &[],
        apps: &[],
        asks: &[],
        per_app: &[],
    },
];

#[test]
fn containers_per_app_match_the_table() {
    for case in CASES {
        let snapshot = snapshot(case.nodes, case.queues, case.apps, case.asks);
        let placements = schedule(&snapshot);
        assert_valid(&snapshot, &placements);
        assert_eq!(
            per_app(&snapshot, &placements),
            case.per_app,
            "{}",
            case.what
        );
    }
}

#[test]
fn placements_fill_the_lowest_nodes_first_and_coalesce() {
    let nodes = [((4 * GB, 4, 0), (4 * GB, 4, 0)); 3];
    let queues = [ROOT, queue(0, 50.0, 100.0), queue(0, 50.0, 100.0)];
    let apps = [app(1, 0), app(2, 1)];
    let asks = [small(0, 3), (1, 4, 2 * GB, 1, 0)];
    let snapshot = snapshot(&nodes, &queues, &apps, &asks);
    let placements = schedule(&snapshot);
    // A's containers add 1/6 to its ratio, B's 1/3; ties go to A (lower
    // index). First fit on nodes of 4 GB; B stops at 3 containers, its
    // user's limit (the guarantee, 6 GB).
    assert_eq!(
        placements.triples(),
        [
            (0, 0, 1), // A 1/6
            (1, 0, 1), // B 1/3
            (0, 0, 1), // A 1/3, ties B: A
            (0, 1, 1), // A 1/2, node 0 full
            (1, 1, 1), // B 2/3
            (1, 2, 1), // B 1
        ]
    );
}

/// The cluster of seed 001: 100 nodes of 10 GB (and 16 vcores, so memory
/// dominates), root.engineering 60 (development 20, qa 80), support 10 and
/// marketing 30, with support and marketing using their 100 and 300 GB.
/// Apps ask for 1 GB containers. Queue indices: 0 root, 1 engineering,
/// 2 support, 3 marketing, 4 development, 5 qa.
fn seed_001(development_maximum: f64, apps: &[A], asks: &[AskRow]) -> Snapshot {
    let node = (10 * GB, 16, 0);
    let mut nodes = vec![((0, 0, 0), node); 40];
    nodes.extend(empty_nodes(60, node));
    let queues = [
        ROOT.used(400 * GB, 400, 0),
        queue(0, 60.0, 100.0),
        queue(0, 10.0, 100.0).used(100 * GB, 100, 0),
        queue(0, 30.0, 100.0).used(300 * GB, 300, 0),
        queue(1, 20.0, development_maximum),
        queue(1, 80.0, 100.0),
    ];
    snapshot(&nodes, &queues, apps, asks)
}

/// Adds apps and asks to a snapshot, as new submissions between rounds.
fn submit(snapshot: &Snapshot, apps: &[A], asks: &[AskRow]) -> Snapshot {
    let mut next = snapshot.to_record();
    for a in apps {
        next.apps.queue.push(a.queue);
        next.apps.user.push(a.user);
        next.apps.priority.push(a.priority);
        next.apps.submit_time_ms.push(a.submit);
        next.apps.used_memory_mb.push(a.used.0);
        next.apps.used_vcores.push(a.used.1);
        next.apps.used_gpus.push(a.used.2);
    }
    for &(app, pending, memory_mb, vcores, gpus) in asks {
        next.asks.app.push(app);
        next.asks.pending.push(pending);
        next.asks.memory_mb.push(memory_mb);
        next.asks.vcores.push(vcores);
        next.asks.gpus.push(gpus);
    }
    Snapshot::new(SnapshotBuilder::complete(next)).expect("a well-formed snapshot")
}

/// Gigabytes used per queue.
fn queue_gb(snapshot: &Snapshot) -> Vec<u64> {
    snapshot
        .queues()
        .used_memory_mb
        .iter()
        .map(|m| m / GB)
        .collect()
}

/// Seed 001's timeline, one scheduling round per event.
fn seed_001_timeline(development_maximum: f64) -> [(Vec<u64>, Vec<u64>); 3] {
    const DEVELOPMENT: u32 = 4;
    const QA: u32 = 5;
    // Sid (0) and Hitesh (1) submit big elastic apps to development.
    let first = seed_001(
        development_maximum,
        &[app(DEVELOPMENT, 0).at(1), app(DEVELOPMENT, 1).at(2)],
        &[small(0, 1000), small(1, 1000)],
    );
    let placements = schedule(&first);
    assert_valid(&first, &placements);
    let after_first = apply(&first, &placements);
    let first_round = (per_app(&first, &placements), queue_gb(&after_first));

    // Jian (2), Zhijie (3) and Xuan (4) submit more.
    let second = submit(
        &after_first,
        &[
            app(DEVELOPMENT, 2).at(3),
            app(DEVELOPMENT, 3).at(4),
            app(DEVELOPMENT, 4).at(5),
        ],
        &[small(2, 1000), small(3, 1000), small(4, 1000)],
    );
    let placements = schedule(&second);
    assert_valid(&second, &placements);
    let after_second = apply(&second, &placements);
    let second_round = (per_app(&second, &placements), queue_gb(&after_second));

    // Gupta (5) submits to qa.
    let third = submit(&after_second, &[app(QA, 5).at(6)], &[small(5, 1000)]);
    let placements = schedule(&third);
    assert_valid(&third, &placements);
    let after_third = apply(&third, &placements);
    let third_round = (per_app(&third, &placements), queue_gb(&after_third));
    [first_round, second_round, third_round]
}

#[test]
fn seed_001_worked_example() {
    let [first, second, third] = seed_001_timeline(100.0);
    // Development's guarantee is 120 GB; user-limit-factor 1 holds each user
    // to it, but elasticity lets the queue take 240 GB for two users.
    assert_eq!(first.0, [120, 120], "sid and hitesh");
    assert_eq!(first.1, [640, 240, 100, 300, 240, 0], "queues (GB)");
    // Five users take 600 GB, all of engineering's: the cluster is full.
    assert_eq!(second.0, [0, 0, 120, 120, 120], "jian, zhijie, xuan");
    assert_eq!(second.1, [1000, 600, 100, 300, 600, 0], "queues (GB)");
    // Gupta's app in qa waits: no free resources.
    assert_eq!(third.0, [0, 0, 0, 0, 0, 0], "gupta waits");
    assert_eq!(third.1, [1000, 600, 100, 300, 600, 0], "queues (GB)");
}

#[test]
fn seed_001_with_development_maximum_40() {
    let [first, second, third] = seed_001_timeline(40.0);
    // 40 % of engineering's 600 GB: development never passes 240 GB.
    assert_eq!(first.0, [120, 120], "sid and hitesh");
    assert_eq!(first.1[4], 240);
    assert_eq!(second.0, [0, 0, 0, 0, 0], "the newcomers wait");
    assert_eq!(second.1[4], 240);
    // So Gupta's app in qa gets the 360 GB left.
    assert_eq!(third.0, [0, 0, 0, 0, 0, 360], "gupta");
    assert_eq!(third.1, [1000, 600, 100, 300, 240, 360], "queues (GB)");
}

/// The rules applied literally, one container at a time, with plain scans:
/// the specification the batched round must reproduce.
fn one_at_a_time(snapshot: &Snapshot) -> BTreeMap<(u32, u32), u64> {
    let cluster = snapshot.nodes().cluster();
    let mut tree = Tree::of(snapshot.queues());
    let (apps, asks) = (snapshot.apps(), snapshot.asks());
    let mut free: Vec<Resources> = snapshot.nodes().free_rooms().collect();
    let mut pending = asks.pending.clone();
    let mut app_used: Vec<Resources> = (0..apps.len()).map(|a| apps.used(a)).collect();
    let size = |k: usize| asks.size(k);
    let mut placed = BTreeMap::new();
    loop {
        // Leaf → apps of the leaf (index order, re-sorted each time).
        let user_used = |leaf: usize, user: u32, app_used: &[Resources]| {
            (0..apps.len())
                .filter(|&a| apps.queue(a) == leaf && apps.user[a] == user)
                .fold(Resources::ZERO, |sum, a| sum.plus(app_used[a]))
        };
        let active = |leaf: usize, pending: &[u32]| {
            let mut users: Vec<u32> = (0..asks.app.len())
                .filter(|&k| pending[k] > 0 && apps.queue(asks.app(k)) == leaf)
                .map(|k| apps.user[asks.app[k] as usize])
                .collect();
            users.sort();
            users.dedup();
            users.len() as u64
        };
        let try_leaf = |leaf: usize,
                        tree: &Tree,
                        free: &[Resources],
                        pending: &[u32],
                        app_used: &[Resources]| {
            let mut order: Vec<usize> =
                (0..apps.len()).filter(|&a| apps.queue(a) == leaf).collect();
            if tree.queues.is_fair(leaf) {
                order.sort_by(|&a, &b| {
                    let (sa, sb) = (cluster.share(app_used[a]), cluster.share(app_used[b]));
                    sa.total_cmp(&sb)
                        .then(apps.submit_time_ms[a].cmp(&apps.submit_time_ms[b]))
                        .then(a.cmp(&b))
                });
            } else {
                order.sort_by_key(|&a| {
                    (
                        std::cmp::Reverse(apps.priority[a]),
                        apps.submit_time_ms[a],
                        a,
                    )
                });
            }
            for a in order {
                for k in (0..asks.app.len()).filter(|&k| asks.app[k] as usize == a) {
                    let r = size(k);
                    if pending[k] == 0 {
                        continue;
                    }
                    let within_maximum = tree
                        .path(leaf)
                        .all(|q| cluster.limit(tree.maximum(q)).covers(tree.used[q].plus(r)));
                    let limit = user_limit(
                        tree.guarantee(leaf),
                        tree.maximum(leaf),
                        tree.queues.minimum_user_limit(leaf),
                        tree.user_limit_factor(leaf),
                        cluster.share(tree.used[leaf].plus(r)),
                        active(leaf, pending),
                    );
                    let held = user_used(leaf, apps.user[a], app_used);
                    let within_user_limit =
                        held.is_zero() || cluster.share(held.plus(r)) <= limit + EPSILON;
                    let node = free.iter().position(|f| f.covers(r));
                    if let (true, true, Some(node)) = (within_maximum, within_user_limit, node) {
                        return Some((a, k, node));
                    }
                }
            }
            None
        };
        // Depth first, children most under-served first.
        fn descend(
            q: usize,
            tree: &Tree,
            cluster: &Cluster,
            try_leaf: &dyn Fn(usize) -> Option<(usize, usize, usize)>,
        ) -> Option<(usize, usize, usize, usize)> {
            if tree.is_leaf(q) {
                return try_leaf(q).map(|(a, k, n)| (q, a, k, n));
            }
            let mut children: Vec<usize> =
                (1..tree.len()).filter(|&c| tree.parent(c) == q).collect();
            children.sort_by_key(|&c| queue_key(cluster, tree.guarantee(c), tree.used[c], c));
            children
                .into_iter()
                .find_map(|c| descend(c, tree, cluster, try_leaf))
        }
        if tree.len() == 0 || free.is_empty() {
            break;
        }
        let found = descend(0, &tree, &cluster, &|leaf| {
            try_leaf(leaf, &tree, &free, &pending, &app_used)
        });
        let Some((leaf, a, k, node)) = found else {
            break;
        };
        let r = size(k);
        free[node] = free[node].minus(r);
        for q in tree.path(leaf).collect::<Vec<_>>() {
            tree.used[q] = tree.used[q].plus(r);
        }
        app_used[a] = app_used[a].plus(r);
        pending[k] -= 1;
        *placed.entry((k as u32, node as u32)).or_insert(0) += 1;
    }
    placed
}

fn totals(placements: &Placements) -> BTreeMap<(u32, u32), u64> {
    let mut totals = BTreeMap::new();
    for (ask, node, count) in placements.triples() {
        *totals.entry((ask, node)).or_insert(0) += u64::from(count);
    }
    totals
}

/// A random cluster: up to 3 levels of queues, mixed node and container
/// shapes, priorities, submit times, fair and FIFO leaves. With
/// `fixed_user_limits` every user limit is the same whatever happens in the
/// round (minimum user limit 100 %, factor at most 1).
fn random_snapshot(rng: &mut Lcg, fixed_user_limits: bool) -> Snapshot {
    let node_count = 1 + rng.below(12) as usize;
    let nodes: Vec<NodeRow> = (0..node_count)
        .map(|_| {
            let capacity = ((2 + rng.below(7)) * GB, 2 + rng.below(7), rng.below(3));
            let free = (
                capacity.0 - rng.below(3) * GB,
                capacity.1 - rng.below(2),
                capacity.2 - rng.below(capacity.2 + 1),
            );
            (free, capacity)
        })
        .collect();
    // Capacities of siblings sum to 100, maxima at least the capacity.
    let mut queues = vec![ROOT];
    let mut frontier = vec![0u32];
    for _ in 0..2 {
        let mut next = Vec::new();
        for &parent in &frontier {
            let children = rng.below(4) as usize;
            let mut left = 100.0f64;
            for c in 0..children {
                let capacity = if c + 1 == children {
                    left
                } else {
                    let share = (rng.below(left as u64 + 1)) as f64;
                    left -= share;
                    share
                };
                let maximum = (capacity + rng.below(101) as f64).min(100.0);
                let mut q = queue(parent, capacity, maximum);
                if rng.below(2) == 0 {
                    q = q.fair();
                }
                q = if fixed_user_limits {
                    q.ulf([0.5, 1.0][rng.below(2) as usize])
                } else {
                    q.mulp([25.0, 50.0, 100.0][rng.below(3) as usize])
                        .ulf([0.5, 1.0, 2.0, 10.0][rng.below(4) as usize])
                };
                next.push(queues.len() as u32);
                queues.push(q);
            }
        }
        frontier = next;
    }
    // Apps in leaves, users numbered below the number of apps, asks of
    // those apps: what the SDK accepts.
    let leaves: Vec<u32> = (0..queues.len() as u32)
        .filter(|&q| !queues[1..].iter().any(|c| c.parent == q))
        .collect();
    let app_count = rng.below(10) as usize;
    let apps: Vec<A> = (0..app_count)
        .map(|_| {
            let queue = leaves[rng.below(leaves.len() as u64) as usize];
            app(queue, rng.below(app_count.min(4) as u64) as u32)
                .priority(rng.below(3) as i32)
                .at(rng.below(4) as i64)
        })
        .collect();
    let ask_count = if app_count == 0 { 0 } else { rng.below(14) };
    let asks: Vec<AskRow> = (0..ask_count)
        .map(|_| {
            (
                rng.below(app_count as u64) as u32,
                rng.below(12) as u32,
                (1 + rng.below(3)) * GB / 2,
                rng.below(3),
                u64::from(rng.below(4) == 0),
            )
        })
        .collect();
    let mut snapshot = snapshot(&nodes, &queues, &apps, &asks);
    // Some usage already, consistent up the tree: place a random prefix of
    // a first round.
    let warmup = schedule(&snapshot);
    let keep = rng.below(warmup.ask.len() as u64 + 1) as usize;
    let warmup = Placements {
        ask: warmup.ask[..keep].to_vec(),
        node: warmup.node[..keep].to_vec(),
        count: warmup.count[..keep].to_vec(),
    };
    snapshot = apply(&snapshot, &warmup);
    snapshot
}

#[test]
fn batches_place_what_one_container_at_a_time_would() {
    let mut rng = Lcg(11);
    for round in 0..1500 {
        let snapshot = random_snapshot(&mut rng, true);
        let placements = schedule(&snapshot);
        assert_valid(&snapshot, &placements);
        assert_eq!(
            totals(&placements),
            one_at_a_time(&snapshot),
            "round {round}: {snapshot:#?}"
        );
    }
}

#[test]
fn random_rounds_stay_valid_with_any_user_limits() {
    let mut rng = Lcg(5);
    for _ in 0..1500 {
        let snapshot = random_snapshot(&mut rng, false);
        let placements = schedule(&snapshot);
        assert_valid(&snapshot, &placements);
        // Whatever the batches, a round leaves nothing a single container
        // more could take.
        let after = apply(&snapshot, &placements);
        assert!(
            one_at_a_time(&after).is_empty(),
            "something was left: {after:#?}"
        );
    }
}

/// A cluster of the benchmark's shape, smaller: `nodes` nodes of 64 GB and
/// 32 vcores, `parents × leaves_per_parent` leaf queues of equal shares, an
/// app of `apps_per_leaf` per leaf, each asking for `per_app` containers.
pub(crate) fn big_cluster(
    nodes: usize,
    parents: usize,
    leaves_per_parent: usize,
    apps_per_leaf: usize,
    per_app: u32,
) -> Snapshot {
    let node_rows = empty_nodes(nodes, (64 * GB, 32, 0));
    let mut queues = vec![ROOT];
    let mut leaves = Vec::new();
    for p in 0..parents {
        queues.push(queue(0, 100.0 / parents as f64, 100.0));
        let parent = queues.len() as u32 - 1;
        for _ in 0..leaves_per_parent {
            leaves.push(queues.len() as u32);
            queues.push(queue(parent, 100.0 / leaves_per_parent as f64, 100.0).ulf(10.0));
        }
        if p % 2 == 1 {
            let last = queues.len() - 1;
            queues[last] = queues[last].fair();
        }
    }
    let mut apps = Vec::new();
    let mut asks = Vec::new();
    for (i, &leaf) in leaves.iter().enumerate() {
        for j in 0..apps_per_leaf {
            let a = apps.len() as u32;
            apps.push(app(leaf, (i * apps_per_leaf + j) as u32 % 97).at(i64::from(a)));
            let vcores = 1 + u64::from(a % 2);
            asks.push((a, per_app, 2 * GB, vcores, 0));
        }
    }
    snapshot(&node_rows, &queues, &apps, &asks)
}

#[test]
fn a_large_round_places_everything_it_has_room_for() {
    // 2,000 nodes, 200 leaves, 20,000 containers: room for all.
    let snapshot = big_cluster(2000, 10, 20, 5, 20);
    let placements = schedule(&snapshot);
    assert_valid(&snapshot, &placements);
    assert_eq!(placements.total(), 20_000);
}

/// Delay scheduling: an ask with a preferred node goes there while it is
/// node-local, waits while that node is full, then takes its node's rack,
/// then anywhere, as the host's level lets it.
#[test]
fn an_ask_with_locality_goes_node_local_then_rack_local_then_anywhere() {
    use weft_policy::scheduling::wit::{AskNodes, LocalityLevel};
    let gb = weft_policy::Resources::new(GB, 1, 0);
    // Nodes 0 and 2 on rack 0, node 1 on rack 1; the ask prefers node 2.
    let round = |free_on_preferred: u64, level: LocalityLevel| {
        let mut record = SnapshotBuilder::new()
            .node(gb.times(4), gb.times(4))
            .node(gb.times(4), gb.times(4))
            .node(gb.times(free_on_preferred), gb.times(4))
            .queue(0, 100.0, 100.0)
            .app(0, 0)
            .ask(0, 1, gb)
            .record();
        record.racks = vec!["/r0".into(), "/r1".into()];
        record.nodes.rack = vec![1, 0, 0];
        record.ask_nodes = AskNodes {
            ask: vec![0],
            node: vec![2],
        };
        record.asks.locality_level[0] = level;
        let snapshot = Snapshot::new(record).unwrap();
        schedule(&snapshot).triples()
    };
    assert_eq!(round(4, LocalityLevel::NodeLocal), [(0, 2, 1)], "its node");
    assert!(round(0, LocalityLevel::NodeLocal).is_empty(), "it waits");
    assert_eq!(round(0, LocalityLevel::RackLocal), [(0, 1, 1)], "its rack");
    assert_eq!(
        round(0, LocalityLevel::OffSwitch),
        [(0, 1, 1)],
        "its rack first"
    );
}
