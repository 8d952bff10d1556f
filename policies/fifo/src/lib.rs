//! `fifo`: first come, first served, the simplest scheduling policy Weft has.
//!
//! Every scheduling round the host passes a snapshot of the cluster and gets
//! placements back: `count` containers of ask `ask` on node `node`. FIFO
//! serves applications in submission order (the order of the snapshot's apps,
//! so ascending app index) and, within an application, its asks in order. Each
//! ask gets as many of its pending containers as fit, node by node: first fit
//! (lowest node index with room in memory, vcores and GPUs) by default, or
//! last fit (highest index first) with `node-order=last-fit`.
//!
//! There is no head-of-line blocking: an ask that does not fit entirely takes
//! what fits and later applications still use the room that is left, so one
//! huge request cannot idle the cluster. Priorities and queues are ignored;
//! the Capacity Scheduler policy will honour them. FIFO never preempts.
//!
//! The algorithm is a plain function over plain columns ([`schedule`]) so the
//! host can benchmark it natively. It must stay fast for 10,000 nodes and
//! 100,000 pending containers, so it never goes container by container: each
//! step puts `min(pending, fits on the node)` containers on one node, and a
//! max tree over the nodes' free resources finds the next node with room in
//! about `log(nodes)` instead of scanning them all; once the cluster is full,
//! sizes already known not to fit are skipped without a search. The
//! WebAssembly glue is in `component.rs`.

#[cfg(target_arch = "wasm32")]
mod component;

/// Which end of the node list to fill first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NodeOrder {
    /// Lowest node index with room first.
    #[default]
    FirstFit,
    /// Highest node index with room first.
    LastFit,
}

/// The policy's settings, filled in by `configure`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Fifo {
    /// `node-order`: `first-fit` (default) or `last-fit`.
    pub node_order: NodeOrder,
}

impl Fifo {
    /// Builds the settings from `key=value` parameters, starting from the
    /// defaults. Unknown keys and values are refused with a message naming
    /// them, so a typo never silently schedules differently.
    pub fn from_params(params: &[(String, String)]) -> Result<Self, String> {
        let mut fifo = Fifo::default();
        for (key, value) in params {
            match (key.as_str(), value.trim()) {
                ("node-order", "first-fit") => fifo.node_order = NodeOrder::FirstFit,
                ("node-order", "last-fit") => fifo.node_order = NodeOrder::LastFit,
                ("node-order", _) => {
                    return Err(format!(
                        "fifo: node-order must be first-fit or last-fit, not {value:?}"
                    ));
                }
                _ => {
                    return Err(format!(
                        "fifo has no parameter {key:?} (given {key}={value})"
                    ));
                }
            }
        }
        Ok(fifo)
    }
}

/// The nodes' free resources, as columns like the WIT `nodes` record (entry i
/// is node i). FIFO needs nothing else about a node.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Nodes {
    pub free_memory_mb: Vec<u64>,
    pub free_vcores: Vec<u64>,
    pub free_gpus: Vec<u64>,
}

/// Outstanding asks, as columns like the WIT `asks` record (entry i is ask
/// i): `pending` containers of one size for app `app`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Asks {
    pub app: Vec<u32>,
    pub pending: Vec<u32>,
    pub memory_mb: Vec<u64>,
    pub vcores: Vec<u64>,
    pub gpus: Vec<u64>,
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
    fn push(&mut self, ask: usize, node: usize, count: u32) {
        // Indices came from u32 columns, so they fit back into u32.
        self.ask.push(ask as u32);
        self.node.push(node as u32);
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
}

/// One container's size, or a node's free room.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Resources {
    memory_mb: u64,
    vcores: u64,
    gpus: u64,
}

impl Resources {
    fn covers(self, size: Resources) -> bool {
        self.memory_mb >= size.memory_mb && self.vcores >= size.vcores && self.gpus >= size.gpus
    }

    /// How many containers of `size` fit in this room. A resource the
    /// container does not use never limits it, so a size of all zeros fits
    /// without bound.
    fn fits(self, size: Resources) -> u64 {
        // checked_div is None for a zero size: that resource sets no limit.
        [
            self.memory_mb.checked_div(size.memory_mb),
            self.vcores.checked_div(size.vcores),
            self.gpus.checked_div(size.gpus),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(u64::MAX)
    }

    /// This room after `count` containers of `size` moved in; `count` never
    /// exceeds `fits(size)`, so nothing underflows.
    fn minus(self, size: Resources, count: u32) -> Resources {
        Resources {
            memory_mb: self.memory_mb - size.memory_mb * u64::from(count),
            vcores: self.vcores - size.vcores * u64::from(count),
            gpus: self.gpus - size.gpus * u64::from(count),
        }
    }

    fn max(self, other: Resources) -> Resources {
        Resources {
            memory_mb: self.memory_mb.max(other.memory_mb),
            vcores: self.vcores.max(other.vcores),
            gpus: self.gpus.max(other.gpus),
        }
    }

    const ZERO: Resources = Resources {
        memory_mb: 0,
        vcores: 0,
        gpus: 0,
    };
}

/// The nodes' free room in a binary tree whose inner entries hold the
/// per-resource maximum of their subtree. A subtree whose maxima cannot hold
/// a container holds no node that can, so a search skips it whole. (The
/// maxima may come from different nodes, so a subtree that passes can still
/// disappoint; the search then backtracks. Clusters of a few node shapes,
/// the usual case, rarely make it.)
struct FreeTree {
    /// Node count; leaves at and beyond it are padding.
    len: usize,
    /// Leaf count, a power of two; entry 1 is the root, leaves start here.
    leaves: usize,
    room: Vec<Resources>,
}

impl FreeTree {
    fn new(room: impl ExactSizeIterator<Item = Resources>) -> FreeTree {
        let len = room.len();
        let leaves = len.next_power_of_two().max(1);
        let mut tree = vec![Resources::ZERO; 2 * leaves];
        for (i, r) in room.enumerate() {
            tree[leaves + i] = r;
        }
        for i in (1..leaves).rev() {
            tree[i] = tree[2 * i].max(tree[2 * i + 1]);
        }
        FreeTree {
            len,
            leaves,
            room: tree,
        }
    }

    fn get(&self, node: usize) -> Resources {
        self.room[self.leaves + node]
    }

    fn set(&mut self, node: usize, room: Resources) {
        let mut i = self.leaves + node;
        self.room[i] = room;
        while i > 1 {
            i /= 2;
            self.room[i] = self.room[2 * i].max(self.room[2 * i + 1]);
        }
    }

    /// The node with room for one container of `size` that `order` prefers.
    fn find(&self, size: Resources, order: NodeOrder) -> Option<usize> {
        self.descend(1, 0, self.leaves, size, order)
    }

    /// Searches entry `i`, which covers nodes `lo..hi`.
    fn descend(
        &self,
        i: usize,
        lo: usize,
        hi: usize,
        size: Resources,
        order: NodeOrder,
    ) -> Option<usize> {
        // Padding leaves are empty, but an all-zero size would still "fit" them.
        if lo >= self.len || !self.room[i].covers(size) {
            return None;
        }
        if hi - lo == 1 {
            return Some(lo);
        }
        let mid = lo + (hi - lo) / 2;
        let (left, right) = ((2 * i, lo, mid), (2 * i + 1, mid, hi));
        let (first, second) = match order {
            NodeOrder::FirstFit => (left, right),
            NodeOrder::LastFit => (right, left),
        };
        self.descend(first.0, first.1, first.2, size, order)
            .or_else(|| self.descend(second.0, second.1, second.2, size, order))
    }
}

/// Container sizes that found no node this round. Free room only shrinks
/// during a round, so a size that found none never will, nor will any size at
/// least as large in every resource. Remembering them makes a full cluster
/// cheap: without it each of thousands of asks that no longer fit would pay
/// a search, and a search that fails can visit every node.
#[derive(Default)]
struct Hopeless {
    /// The smallest sizes known not to fit: none covers another.
    minimal: Vec<Resources>,
}

impl Hopeless {
    /// Enough for the few container shapes real clusters run; more would
    /// make each check slower than the search it saves.
    const LIMIT: usize = 64;

    fn rules_out(&self, size: Resources) -> bool {
        self.minimal.iter().any(|&known| size.covers(known))
    }

    fn remember(&mut self, size: Resources) {
        self.minimal.retain(|&known| !known.covers(size));
        if self.minimal.len() < Self::LIMIT {
            self.minimal.push(size);
        }
    }
}

/// One scheduling round of FIFO: see the module documentation.
///
/// Columns of unequal length are read up to the shortest, so a malformed
/// snapshot yields fewer placements rather than a trap. Every placement fits
/// the room left by the ones before it and no ask gets more than its pending
/// count; each (ask, node) pair appears at most once.
pub fn schedule(nodes: &Nodes, asks: &Asks, order: NodeOrder) -> Placements {
    let room = nodes
        .free_memory_mb
        .iter()
        .zip(&nodes.free_vcores)
        .zip(&nodes.free_gpus)
        .map(|((&memory_mb, &vcores), &gpus)| Resources {
            memory_mb,
            vcores,
            gpus,
        });
    let mut free = FreeTree::new(room);

    let ask_count = [
        asks.app.len(),
        asks.pending.len(),
        asks.memory_mb.len(),
        asks.vcores.len(),
        asks.gpus.len(),
    ]
    .into_iter()
    .min()
    .unwrap_or(0);
    // Submission order is app order; the sort is stable, so each app's asks
    // keep their own order, and it is linear when asks come grouped already.
    let mut queue: Vec<usize> = (0..ask_count).filter(|&i| asks.pending[i] > 0).collect();
    queue.sort_by_key(|&i| asks.app[i]);

    let mut hopeless = Hopeless::default();
    let mut placements = Placements::default();
    for ask in queue {
        let size = Resources {
            memory_mb: asks.memory_mb[ask],
            vcores: asks.vcores[ask],
            gpus: asks.gpus[ask],
        };
        if hopeless.rules_out(size) {
            continue;
        }
        let mut pending = asks.pending[ask];
        while pending > 0 {
            let Some(node) = free.find(size, order) else {
                hopeless.remember(size);
                break;
            };
            let room = free.get(node);
            // Fill the node as far as this ask can: afterwards either the ask
            // is done or the node no longer fits it, so an (ask, node) pair
            // never repeats and the loop runs at most once per node.
            let count = room.fits(size).min(u64::from(pending)) as u32;
            free.set(node, room.minus(size, count));
            placements.push(ask, node, count);
            pending -= count;
        }
    }
    placements
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nodes from `(free memory, free vcores, free gpus)` rows.
    fn nodes(rows: &[(u64, u64, u64)]) -> Nodes {
        Nodes {
            free_memory_mb: rows.iter().map(|r| r.0).collect(),
            free_vcores: rows.iter().map(|r| r.1).collect(),
            free_gpus: rows.iter().map(|r| r.2).collect(),
        }
    }

    /// Asks from `(app, pending, memory, vcores, gpus)` rows.
    fn asks(rows: &[(u32, u32, u64, u64, u64)]) -> Asks {
        Asks {
            app: rows.iter().map(|r| r.0).collect(),
            pending: rows.iter().map(|r| r.1).collect(),
            memory_mb: rows.iter().map(|r| r.2).collect(),
            vcores: rows.iter().map(|r| r.3).collect(),
            gpus: rows.iter().map(|r| r.4).collect(),
        }
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
            let placements = schedule(&nodes(node_rows), &asks(ask_rows), order);
            assert_eq!(placements.triples(), expected, "{what}");
        }
    }

    /// Checks the host's rules: known nodes and asks, no ask above its
    /// pending count, no node above its free room.
    fn assert_valid(nodes: &Nodes, asks: &Asks, placements: &Placements) {
        let mut used = vec![(0u64, 0u64, 0u64); nodes.free_memory_mb.len()];
        let mut placed = vec![0u64; asks.pending.len()];
        for (ask, node, count) in placements.triples() {
            let (ask, node, count) = (ask as usize, node as usize, u64::from(count));
            assert!(count > 0, "empty placement");
            placed[ask] += count;
            used[node].0 += asks.memory_mb[ask] * count;
            used[node].1 += asks.vcores[ask] * count;
            used[node].2 += asks.gpus[ask] * count;
        }
        for (ask, &count) in placed.iter().enumerate() {
            assert!(
                count <= u64::from(asks.pending[ask]),
                "ask {ask} over pending"
            );
        }
        for (node, &(memory, vcores, gpus)) in used.iter().enumerate() {
            assert!(
                memory <= nodes.free_memory_mb[node],
                "node {node} memory over-allocated"
            );
            assert!(
                vcores <= nodes.free_vcores[node],
                "node {node} vcores over-allocated"
            );
            assert!(
                gpus <= nodes.free_gpus[node],
                "node {node} gpus over-allocated"
            );
        }
    }

    /// The obvious O(asks × nodes) version, to check the tree against.
    fn reference(nodes: &Nodes, asks: &Asks, order: NodeOrder) -> Placements {
        let mut free: Vec<Resources> = (0..nodes.free_memory_mb.len())
            .map(|i| Resources {
                memory_mb: nodes.free_memory_mb[i],
                vcores: nodes.free_vcores[i],
                gpus: nodes.free_gpus[i],
            })
            .collect();
        let mut queue: Vec<usize> = (0..asks.app.len()).collect();
        queue.sort_by_key(|&i| asks.app[i]);
        let mut placements = Placements::default();
        for ask in queue {
            let size = Resources {
                memory_mb: asks.memory_mb[ask],
                vcores: asks.vcores[ask],
                gpus: asks.gpus[ask],
            };
            let mut pending = asks.pending[ask];
            let scan: Vec<usize> = match order {
                FirstFit => (0..free.len()).collect(),
                LastFit => (0..free.len()).rev().collect(),
            };
            for node in scan {
                let count = free[node].fits(size).min(u64::from(pending)) as u32;
                if count > 0 {
                    free[node] = free[node].minus(size, count);
                    placements.push(ask, node, count);
                    pending -= count;
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
            let (nodes, asks) = (nodes(&rows), asks(&ask_rows));
            for order in [FirstFit, LastFit] {
                let placements = schedule(&nodes, &asks, order);
                assert_valid(&nodes, &asks, &placements);
                assert_eq!(
                    placements,
                    reference(&nodes, &asks, order),
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
        let (nodes, asks) = (nodes(&node_rows), asks(&ask_rows));
        for order in [FirstFit, LastFit] {
            let placements = schedule(&nodes, &asks, order);
            assert_valid(&nodes, &asks, &placements);
            let placed: u64 = placements.count.iter().map(|&c| u64::from(c)).sum();
            assert_eq!(placed, 100_000, "{order:?}: the cluster has room for all");
        }
    }

    #[test]
    fn sizes_that_found_no_node_rule_out_larger_ones() {
        let size = |memory_mb, vcores, gpus| Resources {
            memory_mb,
            vcores,
            gpus,
        };
        let mut hopeless = Hopeless::default();
        hopeless.remember(size(4096, 2, 0));
        hopeless.remember(size(1024, 8, 0));
        // (size, ruled out?)
        let cases = [
            (size(4096, 2, 0), true),  // the same size
            (size(8192, 2, 1), true),  // larger in every resource
            (size(2048, 8, 0), true),  // covers the second
            (size(2048, 2, 0), false), // smaller memory than the first, fewer vcores than the second
            (size(4096, 1, 0), false),
        ];
        for (size, ruled_out) in cases {
            assert_eq!(hopeless.rules_out(size), ruled_out, "{size:?}");
        }
        // A smaller failure replaces the ones it covers.
        hopeless.remember(size(1024, 1, 0));
        assert_eq!(hopeless.minimal, [size(1024, 1, 0)]);
    }

    #[test]
    fn ragged_columns_are_read_to_the_shortest() {
        let mut asks = asks(&[(0, 1, 1024, 1, 0), (0, 1, 1024, 1, 0)]);
        asks.gpus.pop();
        let mut nodes = nodes(&[(4096, 4, 0), (4096, 4, 0)]);
        nodes.free_vcores.pop();
        assert_eq!(schedule(&nodes, &asks, FirstFit).triples(), [(0, 0, 1)]);
    }

    #[test]
    fn parameters_choose_the_node_order() {
        let params = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
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
            match (Fifo::from_params(&params(pairs)), expected) {
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
}
