//! fifo's scheduling, checked against a table of cases, against a plain
//! scan on random clusters, and at the size the host benchmarks. (Its
//! library is the Rust scheduling template's lib.rs, whose own tests are
//! the short tutorial ones.)

use fifo::{Fifo, NodeOrder};
use weft_policy::scheduling::{Placements, Snapshot, SnapshotBuilder};
use weft_policy::{Resources, SchedulingPolicy};

/// A snapshot of nodes with `(free memory, free vcores, free gpus)` rows
/// (all of their capacity free) and asks of `(app, pending, memory, vcores,
/// gpus)` rows; the apps the asks name are in one queue.
fn snapshot(nodes: &[(u64, u64, u64)], asks: &[(u32, u32, u64, u64, u64)]) -> Snapshot {
    let mut builder = SnapshotBuilder::new().queue(0, 100.0, 100.0);
    for &(memory_mb, vcores, gpus) in nodes {
        let room = Resources::new(memory_mb, vcores, gpus);
        builder = builder.node(room, room);
    }
    let apps = asks.iter().map(|a| a.0 + 1).max().unwrap_or(0);
    for _ in 0..apps {
        builder = builder.app(0, 0);
    }
    for &(app, pending, memory_mb, vcores, gpus) in asks {
        builder = builder.ask(app, pending, Resources::new(memory_mb, vcores, gpus));
    }
    builder.build().expect("a well-formed snapshot")
}

fn schedule(snapshot: &Snapshot, node_order: NodeOrder) -> Placements {
    Fifo { node_order }.schedule(snapshot)
}

use NodeOrder::{FirstFit, LastFit};

type Case = (
    &'static str,
    &'static [(u64, u64, u64)],
    &'static [(u32, u32, u64, u64, u64)],
    NodeOrder,
    &'static [(u32, u32, u32)],
);

/// (what, nodes, asks, order, expected (ask, node, count))
const CASES: &[Case] = &[
    (
        "first fit fills the lowest node first",
        &[(4096, 4, 0), (4096, 4, 0), (4096, 4, 0)],
        &[(0, 6, 1024, 1, 0)],
        FirstFit,
        &[(0, 0, 4), (0, 1, 2)],
    ),
    (
        "last fit fills the highest node first",
        &[(4096, 4, 0), (4096, 4, 0), (4096, 4, 0)],
        &[(0, 6, 1024, 1, 0)],
        LastFit,
        &[(0, 2, 4), (0, 1, 2)],
    ),
    (
        "first fit skips a node too small",
        &[(512, 8, 0), (2048, 8, 0)],
        &[(0, 1, 1024, 1, 0)],
        FirstFit,
        &[(0, 1, 1)],
    ),
    (
        "multi-resource: a node needs room in every resource",
        &[(65536, 0, 0), (65536, 1, 0), (1024, 8, 0), (8192, 8, 0)],
        &[(0, 4, 2048, 1, 0)],
        FirstFit,
        &[(0, 1, 1), (0, 3, 3)],
    ),
    (
        "vcores limit a node with plenty of memory",
        &[(65536, 2, 0), (65536, 8, 0)],
        &[(0, 5, 1024, 1, 0)],
        FirstFit,
        &[(0, 0, 2), (0, 1, 3)],
    ),
    (
        "gpu asks go only where gpus are",
        &[(16384, 16, 0), (16384, 16, 1), (16384, 16, 4)],
        &[(0, 3, 1024, 1, 2)],
        FirstFit,
        &[(0, 2, 2)],
    ),
    (
        "gpu-less asks may use gpu nodes",
        &[(16384, 16, 4)],
        &[(0, 2, 1024, 1, 0), (1, 2, 1024, 1, 2)],
        FirstFit,
        &[(0, 0, 2), (1, 0, 2)],
    ),
    (
        "apps are served in submission order, asks of one app in order",
        &[(4096, 4, 0)],
        &[
            (2, 4, 1024, 1, 0),
            (0, 2, 1024, 1, 0),
            (1, 4, 1024, 1, 0),
            (0, 1, 1024, 1, 0),
        ],
        FirstFit,
        &[(1, 0, 2), (3, 0, 1), (2, 0, 1)],
    ),
    (
        "no head-of-line blocking: a later app uses what is left",
        &[(4096, 4, 0)],
        &[(0, 1, 8192, 1, 0), (1, 2, 1024, 1, 0)],
        FirstFit,
        &[(1, 0, 2)],
    ),
    (
        "a partly placed ask leaves the rest pending",
        &[(2048, 2, 0), (1024, 1, 0)],
        &[(0, 5, 1024, 1, 0), (1, 1, 1024, 1, 0)],
        FirstFit,
        &[(0, 0, 2), (0, 1, 1)],
    ),
    (
        "exhausted cluster places nothing",
        &[(0, 0, 0), (512, 0, 0)],
        &[(0, 3, 1024, 1, 0), (1, 1, 256, 1, 0)],
        FirstFit,
        &[],
    ),
    (
        "no nodes places nothing",
        &[],
        &[(0, 3, 1024, 1, 0)],
        LastFit,
        &[],
    ),
    (
        "no asks places nothing",
        &[(4096, 4, 0)],
        &[],
        FirstFit,
        &[],
    ),
    (
        "asks with nothing pending are skipped",
        &[(4096, 4, 0)],
        &[(0, 0, 1024, 1, 0), (1, 1, 1024, 1, 0)],
        FirstFit,
        &[(1, 0, 1)],
    ),
    (
        "an all-zero size fits without bound on the preferred node",
        &[(0, 0, 0), (0, 0, 0), (0, 0, 0)],
        &[(0, 7, 0, 0, 0)],
        LastFit,
        &[(0, 2, 7)],
    ),
    (
        "last fit on a node count that is not a power of two",
        &[
            (1024, 1, 0),
            (1024, 1, 0),
            (1024, 1, 0),
            (1024, 1, 0),
            (1024, 1, 0),
        ],
        &[(0, 2, 1024, 1, 0)],
        LastFit,
        &[(0, 4, 1), (0, 3, 1)],
    ),
];

#[test]
fn placements_match_the_table() {
    for &(what, node_rows, ask_rows, order, expected) in CASES {
        let placements = schedule(&snapshot(node_rows, ask_rows), order);
        assert_eq!(placements.triples(), expected, "{what}");
    }
}

/// Checks the host's rules: known nodes and asks, no ask above its
/// pending count, no node above its free room.
fn assert_valid(snapshot: &Snapshot, placements: &Placements) {
    let (nodes, asks) = (snapshot.nodes(), snapshot.asks());
    let mut used = vec![Resources::ZERO; nodes.len()];
    let mut placed = vec![0u64; asks.len()];
    for (ask, node, count) in placements.triples() {
        let (ask, node, count) = (ask as usize, node as usize, u64::from(count));
        assert!(count > 0, "empty placement");
        placed[ask] += count;
        used[node] = used[node].plus(asks.size(ask).times(count));
    }
    for (ask, &count) in placed.iter().enumerate() {
        assert!(
            count <= u64::from(asks.pending[ask]),
            "ask {ask} over pending"
        );
    }
    for (node, &used) in used.iter().enumerate() {
        assert!(
            nodes.free(node).covers(used),
            "node {node} over-allocated: {used:?}"
        );
    }
}

/// The obvious O(asks × nodes) version, to check the tree against.
fn reference(snapshot: &Snapshot, order: NodeOrder) -> Placements {
    let asks = snapshot.asks();
    let mut free: Vec<Resources> = snapshot.nodes().free_rooms().collect();
    let mut queue: Vec<usize> = (0..asks.len()).collect();
    queue.sort_by_key(|&k| asks.app(k));
    let mut placements = Placements::default();
    for ask in queue {
        let size = asks.size(ask);
        let mut pending = asks.pending[ask];
        let scan: Vec<usize> = match order {
            FirstFit => (0..free.len()).collect(),
            LastFit => (0..free.len()).rev().collect(),
        };
        for node in scan {
            let count = free[node].fits(size).min(u64::from(pending));
            if count > 0 {
                free[node] = free[node].minus(size.times(count));
                placements.push(ask, node, count as u32);
                pending -= count as u32;
            }
        }
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
}

#[test]
fn never_over_allocates_and_matches_a_plain_scan() {
    let mut rng = Lcg(7);
    for round in 0..300 {
        let node_count = rng.below(40) as usize;
        let rows: Vec<_> = (0..node_count)
            .map(|_| (rng.below(9) * 1024, rng.below(9), rng.below(3)))
            .collect();
        let ask_rows: Vec<_> = (0..rng.below(12))
            .map(|_| {
                let app = rng.below(5) as u32;
                let pending = rng.below(20) as u32;
                (
                    app,
                    pending,
                    (rng.below(4)) * 512,
                    rng.below(3),
                    rng.below(2),
                )
            })
            .collect();
        let snapshot = snapshot(&rows, &ask_rows);
        for order in [FirstFit, LastFit] {
            let placements = schedule(&snapshot, order);
            assert_valid(&snapshot, &placements);
            assert_eq!(
                placements,
                reference(&snapshot, order),
                "round {round} {order:?}"
            );
        }
    }
}

#[test]
fn large_cluster_stays_valid() {
    // 10,000 nodes and 100,000 pending containers, the size the host
    // benchmarks; here only checked for validity and full use.
    let node_rows = vec![(65536, 32, 2); 10_000];
    let ask_rows: Vec<_> = (0..10_000)
        .map(|i| (i, 10, 2048, 1 + u64::from(i % 2), u64::from(i % 10 == 0)))
        .collect();
    let snapshot = snapshot(&node_rows, &ask_rows);
    for order in [FirstFit, LastFit] {
        let placements = schedule(&snapshot, order);
        assert_valid(&snapshot, &placements);
        assert_eq!(
            placements.total(),
            100_000,
            "{order:?}: the cluster has room for all"
        );
    }
}

#[test]
fn parameters_choose_the_node_order() {
    use weft_policy::PolicyKind;
    use weft_policy::params::configure_with;
    // (params, node order, or the words the refusal must contain)
    type Expected = Result<NodeOrder, &'static [&'static str]>;
    let cases: [(&[(&str, &str)], Expected); 6] = [
        (&[], Ok(FirstFit)),
        (&[("node-order", "first-fit")], Ok(FirstFit)),
        (&[("node-order", "last-fit")], Ok(LastFit)),
        (
            &[("node-order", "last-fit"), ("node-order", "first-fit")],
            Ok(FirstFit),
        ),
        (
            &[("node-order", "best-fit")],
            Err(&["node-order", "best-fit"]),
        ),
        (&[("priority", "on")], Err(&["priority", "on"])),
    ];
    for (pairs, expected) in cases {
        match (
            configure_with::<Fifo>(PolicyKind::Scheduling, pairs),
            expected,
        ) {
            (Ok(fifo), Ok(order)) => assert_eq!(fifo.node_order, order, "{pairs:?}"),
            (Err(message), Err(words)) => {
                for word in words {
                    assert!(
                        message.contains(word),
                        "{pairs:?}: {message:?} lacks {word:?}"
                    );
                }
            }
            (got, want) => panic!("{pairs:?}: got {got:?}, want {want:?}"),
        }
    }
}

/// One round at the host bench's size, fastest of 20:
/// `cargo test -p fifo --release --test schedule -- --ignored --nocapture timing`
#[test]
#[ignore]
fn timing() {
    let node_rows = vec![(65536, 32, 2); 10_000];
    let ask_rows: Vec<_> = (0..10_000)
        .map(|i| (i, 10, 2048, 1 + u64::from(i % 2), u64::from(i % 10 == 0)))
        .collect();
    let snapshot = snapshot(&node_rows, &ask_rows);
    for order in [FirstFit, LastFit] {
        let mut fastest = std::time::Duration::MAX;
        let mut entries = 0;
        for _ in 0..20 {
            let start = std::time::Instant::now();
            entries = schedule(&snapshot, order).len();
            fastest = fastest.min(start.elapsed());
        }
        println!("{order:?}: {entries} entries, {fastest:?} per round (fastest of 20)");
    }
}
