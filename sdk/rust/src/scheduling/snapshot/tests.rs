//! Tests of the scheduling views: what they accept, what they refuse and
//! what they work out from the queue tree.

use super::*;

/// Queues from `(parent, capacity, maximum-capacity)` rows, with YARN's
/// defaults for the rest.
fn queues(rows: &[(u32, f64, f64)]) -> wit::Queues {
    let n = rows.len();
    wit::Queues {
        parent: rows.iter().map(|r| r.0).collect(),
        capacity: rows.iter().map(|r| r.1).collect(),
        maximum_capacity: rows.iter().map(|r| r.2).collect(),
        minimum_user_limit_percent: vec![100.0; n],
        user_limit_factor: vec![Some(1.0); n],
        fair: vec![false; n],
        used_memory_mb: vec![0; n],
        used_vcores: vec![0; n],
        used_gpus: vec![0; n],
        path: (0..n).map(|q| format!("root.q{q}")).collect(),
        decayed_memory_mb_seconds: vec![0.0; n],
        decayed_vcore_seconds: vec![0.0; n],
        decayed_gpu_seconds: vec![0.0; n],
    }
}

/// A root with two leaves (1 and 2), one app in each, two nodes, one ask.
fn small() -> wit::Snapshot {
    wit::Snapshot {
        now_ms: 1_700_000_000_000,
        nodes: wit::Nodes {
            free_memory_mb: vec![1024, 4096],
            free_vcores: vec![1, 4],
            free_gpus: vec![0, 1],
            capacity_memory_mb: vec![4096, 4096],
            capacity_vcores: vec![4, 4],
            capacity_gpus: vec![0, 1],
            partition: vec![0, 1],
            rack: vec![0, 0],
        },
        queues: queues(&[(0, 100.0, 100.0), (0, 40.0, 100.0), (0, 60.0, 80.0)]),
        apps: wit::Apps {
            queue: vec![1, 2],
            user: vec![0, 1],
            priority: vec![0, 5],
            submit_time_ms: vec![10, 20],
            used_memory_mb: vec![3072, 0],
            used_vcores: vec![3, 0],
            used_gpus: vec![0, 0],
            name: vec!["a".into(), "b".into()],
            application_type: vec!["weft".into(); 2],
            project: vec!["default".into(), "ml".into()],
            start_time_ms: vec![Some(15), None],
            deadline_ms: vec![None, Some(1_700_000_600_000)],
            user_decayed_memory_mb_seconds: vec![0.0, 10.0],
            user_decayed_vcore_seconds: vec![0.0, 1.0],
            user_decayed_gpu_seconds: vec![0.0; 2],
        },
        asks: wit::Asks {
            app: vec![1],
            pending: vec![2],
            memory_mb: vec![1024],
            vcores: vec![1],
            gpus: vec![1],
            partition: vec![1],
            locality_level: vec![wit::LocalityLevel::NodeLocal],
            relax_locality: vec![true],
            missed_opportunities: vec![3],
            gang_minimum: vec![Some(2)],
            constraint: vec![None],
            execution_type: vec![wit::ExecutionType::Guaranteed],
        },
        partitions: wit::Partitions {
            name: vec!["".into(), "gpu".into()],
            exclusive: vec![true, false],
        },
        racks: vec!["/default-rack".into()],
        app_tags: wit::AppTags {
            app: vec![0, 1, 1],
            tag: vec!["x".into(), "y".into(), "z".into()],
        },
        ask_nodes: wit::AskNodes {
            ask: vec![0],
            node: vec![1],
        },
        ..wit::Snapshot::default()
    }
}

fn refusal(snapshot: wit::Snapshot) -> String {
    Snapshot::new(snapshot).unwrap_err().to_string()
}

#[test]
fn a_well_formed_snapshot_reads_back() {
    let snapshot = Snapshot::new(small()).unwrap();
    assert_eq!(snapshot.now_ms(), 1_700_000_000_000);
    let nodes = snapshot.nodes();
    assert_eq!(nodes.len(), 2);
    assert_eq!(nodes.free(1), Resources::new(4096, 4, 1));
    assert_eq!(nodes.capacity(0), Resources::new(4096, 4, 0));
    assert_eq!(nodes.free_rooms().count(), 2);
    assert_eq!(nodes.cluster().total(), Resources::new(8192, 8, 1));
    assert_eq!(nodes.free_memory_mb, [1024, 4096]);
    let apps = snapshot.apps();
    assert_eq!((apps.queue(1), apps.user(1)), (2, 1));
    assert_eq!(apps.used(0), Resources::new(3072, 3, 0));
    let asks = snapshot.asks();
    assert_eq!((asks.len(), asks.app(0)), (1, 1));
    assert_eq!(asks.size(0), Resources::new(1024, 1, 1));
    assert_eq!(snapshot.queues().user_limit_factor(1), Some(1.0));
    assert_eq!(snapshot.queues().minimum_user_limit(1), 1.0);
    assert!(!snapshot.queues().is_fair(1));
    assert_eq!(snapshot.to_record(), small());
}

#[test]
fn columns_of_different_lengths_are_refused() {
    let mut nodes = small();
    nodes.nodes.capacity_gpus.pop();
    let mut queues = small();
    queues.queues.fair.push(true);
    let mut apps = small();
    apps.apps.priority.clear();
    let mut asks = small();
    asks.asks.memory_mb.push(1);
    // (snapshot, message)
    let cases = [
        (
            nodes,
            "nodes: its columns differ in length (2 free-memory-mb, 2 free-vcores, 2 free-gpus, \
             2 capacity-memory-mb, 2 capacity-vcores, 1 capacity-gpus, 2 partition, 2 rack)",
        ),
        (
            queues,
            "queues: its columns differ in length (3 parent, 3 capacity, 3 maximum-capacity, \
             3 minimum-user-limit-percent, 3 user-limit-factor, 4 fair, 3 used-memory-mb, \
             3 used-vcores, 3 used-gpus, 3 path, 3 decayed-memory-mb-seconds, \
             3 decayed-vcore-seconds, 3 decayed-gpu-seconds)",
        ),
        (
            apps,
            "apps: its columns differ in length (2 queue, 2 user, 0 priority, 2 submit-time-ms, \
             2 used-memory-mb, 2 used-vcores, 2 used-gpus, 2 name, 2 application-type, \
             2 project, 2 start-time-ms, 2 deadline-ms, 2 user-decayed-memory-mb-seconds, \
             2 user-decayed-vcore-seconds, 2 user-decayed-gpu-seconds)",
        ),
        (
            asks,
            "asks: its columns differ in length (1 app, 1 pending, 2 memory-mb, 1 vcores, 1 gpus, \
             1 partition, 1 locality-level, 1 relax-locality, 1 missed-opportunities, \
             1 gang-minimum, 1 constraint, 1 execution-type)",
        ),
    ];
    for (snapshot, message) in cases {
        assert_eq!(refusal(snapshot), message);
    }
}

#[test]
fn numbers_out_of_range_are_refused() {
    let with = |change: fn(&mut wit::Queues)| {
        let mut snapshot = small();
        change(&mut snapshot.queues);
        snapshot
    };
    // (snapshot, message)
    let cases = [
        (
            with(|q| q.capacity[1] = f64::NAN),
            "queues: capacity[1] is NaN; it must be from 0 to 100",
        ),
        (
            with(|q| q.capacity[2] = 100.5),
            "queues: capacity[2] is 100.5; it must be from 0 to 100",
        ),
        (
            with(|q| q.maximum_capacity[1] = f64::NAN),
            "queues: maximum-capacity[1] is NaN; it must be finite and at least 0",
        ),
        (
            with(|q| q.maximum_capacity[2] = f64::INFINITY),
            "queues: maximum-capacity[2] is inf; it must be finite and at least 0",
        ),
        (
            with(|q| q.minimum_user_limit_percent[0] = -1.0),
            "queues: minimum-user-limit-percent[0] is -1; it must be from 0 to 100",
        ),
        (
            with(|q| q.user_limit_factor[2] = Some(f64::NAN)),
            "queues: user-limit-factor[2] is Some(NaN); it must be none or finite and at least 0",
        ),
        (
            with(|q| q.user_limit_factor[1] = Some(-2.0)),
            "queues: user-limit-factor[1] is Some(-2.0); it must be none or finite and at least 0",
        ),
    ];
    for (snapshot, message) in cases {
        assert_eq!(refusal(snapshot), message);
    }
    // No user-limit-factor is a meaning, not an error: no user limit.
    let mut unlimited = small();
    unlimited.queues.user_limit_factor[1] = None;
    let snapshot = Snapshot::new(unlimited).unwrap();
    assert_eq!(snapshot.queues().user_limit_factor(1), None);
    // A maximum may be above 100 % of the parent's guarantee.
    let mut above = small();
    above.queues.maximum_capacity[1] = 250.0;
    assert!(Snapshot::new(above).is_ok());
}

#[test]
fn indices_out_of_range_are_refused() {
    let mut app_queue = small();
    app_queue.apps.queue[1] = 3;
    let mut not_leaf = small();
    not_leaf.apps.queue[0] = 0;
    let mut user = small();
    user.apps.user[0] = 2;
    let mut ask_app = small();
    ask_app.asks.app[0] = 2;
    let mut free = small();
    free.nodes.free_gpus[0] = 1;
    // (snapshot, message)
    let cases = [
        (app_queue, "apps: queue[1] is 3, but there are 3 queues"),
        (not_leaf, "apps: queue[0] is 0, which is not a leaf"),
        (user, "apps: user[0] is 2, but there are 2 apps"),
        (ask_app, "asks: app[0] is 2, but there are 2 apps"),
        (
            free,
            "nodes: node 0 has more free (1024 MB, 1 vcores, 1 GPUs) than its capacity \
             (4096 MB, 4 vcores, 0 GPUs)",
        ),
    ];
    for (snapshot, message) in cases {
        assert_eq!(refusal(snapshot), message);
    }
}

#[test]
fn running_containers_must_name_known_apps_and_nodes() {
    let snapshot = Snapshot::new(small()).unwrap();
    let running = |app: u32, node: u32| wit::Containers {
        app: vec![app],
        node: vec![node],
        memory_mb: vec![1024],
        vcores: vec![1],
        gpus: vec![0],
        start_time_ms: vec![5],
        execution_type: vec![wit::ExecutionType::Guaranteed],
        tags: wit::ContainerTags {
            container: vec![0],
            tag: vec!["zk".into()],
        },
    };
    let fine = Containers::new(running(1, 1), &snapshot).unwrap();
    assert_eq!((fine.app(0), fine.node(0)), (1, 1));
    assert_eq!(fine.size(0), Resources::new(1024, 1, 0));
    assert_eq!(fine.start_time_ms, [5]);
    assert_eq!(
        Containers::new(running(2, 0), &snapshot)
            .unwrap_err()
            .message(),
        "containers: app[0] is 2, but there are 2 apps"
    );
    assert_eq!(
        Containers::new(running(0, 9), &snapshot)
            .unwrap_err()
            .message(),
        "containers: node[0] is 9, but there are 2 nodes"
    );
    let mut ragged = running(0, 0);
    ragged.start_time_ms.clear();
    assert!(Containers::new(ragged, &snapshot).is_err());
}

#[test]
fn a_parent_comes_before_its_children() {
    /// Queue rows, and the refusal.
    type Case = (&'static [(u32, f64, f64)], &'static str);
    let cases: [Case; 3] = [
        (
            &[(1, 100.0, 100.0), (0, 100.0, 100.0)],
            "queues: queue 0 is the root, so its parent must be 0, not 1",
        ),
        (
            &[(0, 100.0, 100.0), (2, 50.0, 100.0), (0, 50.0, 100.0)],
            "queues: parent[1] is 2; a parent must come before its children",
        ),
        (
            &[(0, 100.0, 100.0), (1, 50.0, 100.0)],
            "queues: parent[1] is 1; a parent must come before its children",
        ),
    ];
    for (rows, message) in cases {
        assert_eq!(
            Queues::new(queues(rows)).unwrap_err().message(),
            message,
            "{rows:?}"
        );
    }
    assert!(Queues::new(wit::Queues::default()).unwrap().is_empty());
}

#[test]
fn absolute_capacities_follow_the_hosts_rule() {
    // Seed 001: engineering 60 (development 20, qa 80), support 10,
    // marketing 30; development's maximum 40 of engineering's 60 = 24.
    let tree = Queues::new(queues(&[
        (0, 100.0, 100.0), // 0 root
        (0, 60.0, 100.0),  // 1 engineering
        (0, 10.0, 100.0),  // 2 support
        (0, 30.0, 100.0),  // 3 marketing
        (1, 20.0, 40.0),   // 4 development
        (1, 80.0, 100.0),  // 5 qa
        (3, 50.0, 100.0),  // 6 marketing.a
        (6, 10.0, 100.0),  // 7 marketing.a.x
        (0, 0.0, 50.0),    // 8 a parent's maximum caps a child's: 0.5 of 1
    ]))
    .unwrap();
    // (queue, absolute capacity %, absolute maximum %, leaf?, depth)
    let expected = [
        (0, 100.0, 100.0, false, 0),
        (1, 60.0, 100.0, false, 1),
        (2, 10.0, 100.0, true, 1),
        (3, 30.0, 100.0, false, 1),
        (4, 12.0, 24.0, true, 2),
        (5, 48.0, 60.0, true, 2),
        (6, 15.0, 30.0, false, 2),
        (7, 1.5, 15.0, true, 3),
        (8, 0.0, 50.0, true, 1),
    ];
    for (q, capacity, maximum, leaf, depth) in expected {
        let close = |a: f64, b: f64| (a * 100.0 - b).abs() < 1e-9;
        assert!(close(tree.absolute_capacity(q), capacity), "{q}");
        assert!(close(tree.absolute_maximum(q), maximum), "{q}");
        assert_eq!(tree.is_leaf(q), leaf, "{q}");
        assert_eq!(tree.depth(q), depth, "{q}");
    }
    assert_eq!(tree.path(7).collect::<Vec<_>>(), [7, 6, 3, 0]);
    assert_eq!(tree.parent(7), 6);
    assert!(tree.is_ancestor_or_self(3, 7));
    assert!(tree.is_ancestor_or_self(7, 7));
    assert!(!tree.is_ancestor_or_self(1, 7));
    assert_eq!(tree.used(4), Resources::ZERO);
}

#[test]
fn the_round_context_reads_back_and_bad_tables_are_refused() {
    let snapshot = Snapshot::new(small()).unwrap();
    assert_eq!(snapshot.partitions().name, ["", "gpu"]);
    assert_eq!(snapshot.nodes().partition(1), 1);
    assert_eq!(snapshot.app_tags(0), ["x"]);
    assert_eq!(snapshot.app_tags(1), ["y", "z"]);
    assert_eq!(snapshot.ask_nodes(0), [1]);
    assert!(snapshot.ask_racks(0).is_empty());
    assert_eq!(snapshot.asks().gang_minimum(0), Some(2));
    assert_eq!(snapshot.apps().user_decayed(1).memory_mb_seconds, 10.0);
    assert_eq!(snapshot.queues().name(2), "root.q2");

    let refuse = |change: fn(&mut wit::Snapshot)| {
        let mut record = small();
        change(&mut record);
        refusal(record)
    };
    /// A change to a well-formed snapshot, and its refusal.
    type Case = (fn(&mut wit::Snapshot), &'static str);
    let cases: [Case; 6] = [
        (
            |s| s.nodes.partition[0] = 2,
            "nodes: partition[0] is 2, but there are 2 partitions",
        ),
        (
            |s| s.partitions.name[0] = "gpu".into(),
            "partitions: entry 0 must be the default partition, named \"\"",
        ),
        (
            |s| s.app_tags.app = vec![1, 0, 1],
            "app-tags: row 1 names app 0 after app 1; rows must be in app order",
        ),
        (
            |s| s.ask_nodes.node[0] = 9,
            "ask-nodes: node[0] is 9, but there are 2 nodes",
        ),
        (
            |s| s.asks.gang_minimum[0] = Some(3),
            "asks: gang-minimum[0] is Some(3), but it must be 1 to the ask's pending 2",
        ),
        (
            |s| s.apps.user_decayed_vcore_seconds[1] = f64::NAN,
            "apps: user-decayed-vcore-seconds[1] is NaN; it must be finite and at least 0",
        ),
    ];
    for (change, message) in cases {
        assert_eq!(refuse(change), message);
    }
}
