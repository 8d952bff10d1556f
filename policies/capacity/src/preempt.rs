//! Reclaiming guarantees (seed 002 §1.5–1.6): capacity lent to queues above
//! their guarantee is taken back for queues below theirs that want it.

use weft_policy::Resources;
use weft_policy::resources::EPSILON;
use weft_policy::scheduling::{Containers, Snapshot};

use crate::cluster::{Tree, queue_key};

/// The containers to preempt, as indices into `running`, youngest first.
///
/// Every leaf queue below its guarantee (dominant share) with pending asks is
/// owed `min(pending demand, guarantee − used)` in each resource. Owed leaves
/// are served most under-served first. Victims are running containers of apps
/// in leaf queues above their guarantee when the call begins, youngest first (largest start time, ties
/// to the higher index). A container goes to the first owed leaf it helps (it
/// frees a resource still owed there) for which taking it leaves its own queue
/// and every ancestor below the one it shares with that leaf at or above its
/// guarantee: a move inside a parent leaves the parent's usage as it is. The
/// usage of the queues on both sides is updated as victims are chosen, and it
/// stops when nothing more is owed. Nothing is owed, and no container
/// preempted, when every leaf with demand has its guarantee.
///
/// Cost: sorting the containers, then per container its path to the root and
/// a few `log(queues)` searches for the leaf to give it to.
pub fn preempt(snapshot: &Snapshot, running: &Containers) -> Vec<u32> {
    let cluster = snapshot.nodes().cluster();
    let mut tree = Tree::of(snapshot.queues());
    // Every app is in a leaf: the SDK checked the snapshot.
    let apps = snapshot.apps();

    let asks = snapshot.asks();
    let mut demand = vec![Resources::ZERO; tree.len()];
    for k in 0..asks.len() {
        let leaf = apps.queue(asks.app(k));
        demand[leaf] = demand[leaf].plus(asks.size(k).times(u64::from(asks.pending[k])));
    }

    // Leaves owed something, most under-served first; `owed[rank]`.
    let mut starved: Vec<usize> = (0..tree.len())
        .filter(|&q| tree.is_leaf(q) && !demand[q].is_zero())
        .filter(|&q| cluster.share(tree.used[q]) + EPSILON < tree.guarantee(q))
        .collect();
    let owed_by = |q: usize| demand[q].min(cluster.amount(tree.guarantee(q)).minus(tree.used[q]));
    starved.retain(|&q| !owed_by(q).is_zero());
    if starved.is_empty() {
        return Vec::new();
    }
    starved.sort_by_key(|&q| queue_key(&cluster, tree.guarantee(q), tree.used[q], q));
    let mut owed: Vec<Resources> = starved.iter().map(|&q| owed_by(q)).collect();

    // Per resource, the most under-served leaf still owed some of it, by
    // position in a depth-first order of the tree, so that a subtree is a range.
    let (first, last) = subtree_ranges(&tree);
    let mut wanting: [RankTree; 3] = std::array::from_fn(|_| RankTree::new(tree.len()));
    for (rank, &q) in starved.iter().enumerate() {
        for (i, wants) in wanting.iter_mut().enumerate() {
            if owed[rank].to_array()[i] > 0 {
                wants.set(first[q], rank as u32);
            }
        }
    }
    let mut still_owed = starved.len();

    let size = |c: usize| running.size(c);
    // Only queues above their guarantee when the call began give anything.
    let above: Vec<bool> = (0..tree.len())
        .map(|q| cluster.share(tree.used[q]) > tree.guarantee(q) + EPSILON)
        .collect();
    let mut candidates: Vec<(usize, usize)> = (0..running.len())
        .filter(|&c| !size(c).is_zero())
        .map(|c| (c, apps.queue(running.app(c))))
        .filter(|&(_, leaf)| above[leaf])
        .collect();
    // Youngest first: latest start, ties to the higher index.
    candidates.sort_unstable_by_key(|&(c, _)| std::cmp::Reverse((running.start_time_ms[c], c)));

    let mut victims = Vec::new();
    for (c, leaf) in candidates {
        if still_owed == 0 {
            break;
        }
        let size = size(c);
        // The lowest queue on the path that would fall below its guarantee
        // without the container: it may only go to a leaf under that queue
        // (so that queue is shared and keeps its usage). The root always
        // shares; its own queue must not fall.
        let keeps =
            |q: usize| cluster.share(tree.used[q].minus(size)) + EPSILON >= tree.guarantee(q);
        let Some(bound) = tree.path(leaf).find(|&q| q == 0 || !keeps(q)) else {
            continue;
        };
        if bound == leaf {
            continue;
        }
        let rank = (0..3)
            .filter(|&i| size.to_array()[i] > 0)
            .filter_map(|i| wanting[i].min(first[bound], last[bound]))
            .min();
        let Some(rank) = rank else { continue };
        let rank = rank as usize;
        let to = starved[rank];
        let mut q = leaf;
        while !tree.queues.is_ancestor_or_self(q, to) {
            tree.used[q] = tree.used[q].minus(size);
            q = tree.parent(q);
        }
        let mut q = to;
        while !tree.queues.is_ancestor_or_self(q, leaf) {
            tree.used[q] = tree.used[q].plus(size);
            q = tree.parent(q);
        }
        let before = owed[rank];
        owed[rank] = before.minus(size);
        for (i, wants) in wanting.iter_mut().enumerate() {
            if before.to_array()[i] > 0 && owed[rank].to_array()[i] == 0 {
                wants.clear(first[to]);
            }
        }
        if owed[rank].is_zero() {
            still_owed -= 1;
        }
        victims.push(c as u32);
    }
    victims
}

/// Positions of the queues in a depth-first order of the tree, and for each
/// queue the last position of its subtree: the subtree of `q` is
/// `first[q]..=last[q]`.
fn subtree_ranges(tree: &Tree) -> (Vec<usize>, Vec<usize>) {
    let n = tree.len();
    let mut children = vec![Vec::new(); n];
    for q in 1..n {
        children[tree.parent(q)].push(q);
    }
    let (mut first, mut last) = (vec![0; n], vec![0; n]);
    if n == 0 {
        return (first, last);
    }
    // The root is at 0; (queue, children visited so far).
    let mut next: usize = 1;
    let mut stack = vec![(0usize, 0usize)];
    while let Some(&mut (q, ref mut visited)) = stack.last_mut() {
        if let Some(&child) = children[q].get(*visited) {
            *visited += 1;
            first[child] = next;
            next += 1;
            stack.push((child, 0));
        } else {
            last[q] = next - 1;
            stack.pop();
        }
    }
    (first, last)
}

/// The least rank set in a range of positions: a min segment tree.
struct RankTree {
    width: usize,
    min: Vec<u32>,
}

impl RankTree {
    const NONE: u32 = u32::MAX;

    fn new(positions: usize) -> RankTree {
        let width = positions.next_power_of_two();
        RankTree {
            width,
            min: vec![Self::NONE; 2 * width],
        }
    }

    fn update(&mut self, position: usize, rank: u32) {
        let mut i = self.width + position;
        self.min[i] = rank;
        while i > 1 {
            i /= 2;
            self.min[i] = self.min[2 * i].min(self.min[2 * i + 1]);
        }
    }

    fn set(&mut self, position: usize, rank: u32) {
        self.update(position, rank);
    }

    fn clear(&mut self, position: usize) {
        self.update(position, Self::NONE);
    }

    /// The least rank at positions `from..=to`, if any.
    fn min(&self, from: usize, to: usize) -> Option<u32> {
        let (mut lo, mut hi) = (self.width + from, self.width + to + 1);
        let mut best = Self::NONE;
        while lo < hi {
            if lo % 2 == 1 {
                best = best.min(self.min[lo]);
                lo += 1;
            }
            if hi % 2 == 1 {
                hi -= 1;
                best = best.min(self.min[hi]);
            }
            lo /= 2;
            hi /= 2;
        }
        (best != Self::NONE).then_some(best)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use weft_policy::Cluster;
    use weft_policy::scheduling::wit;

    /// A running container: `(app, memory MB, vcores, gpus, start time)`.
    type Running = (u32, u64, u64, u64, i64);

    /// The containers of `rows`, all on node 0, checked against `snapshot`.
    fn containers(snapshot: &Snapshot, rows: &[Running]) -> Containers {
        let record = wit::Containers {
            app: rows.iter().map(|r| r.0).collect(),
            node: vec![0; rows.len()],
            memory_mb: rows.iter().map(|r| r.1).collect(),
            vcores: rows.iter().map(|r| r.2).collect(),
            gpus: rows.iter().map(|r| r.3).collect(),
            start_time_ms: rows.iter().map(|r| r.4).collect(),
            execution_type: vec![wit::ExecutionType::Guaranteed; rows.len()],
            ..wit::Containers::default()
        };
        Containers::new(record, snapshot).expect("well-formed containers")
    }

    /// `count` containers of 10 GB and 10 vcores for `app`, started at `starts`.
    const fn tens(app: u32, start: i64) -> Running {
        (app, 10 * GB, 10, 0, start)
    }

    struct Case {
        what: &'static str,
        nodes: &'static [NodeRow],
        queues: &'static [Q],
        apps: &'static [A],
        asks: &'static [AskRow],
        running: &'static [Running],
        victims: &'static [u32],
    }

    const NODE: &[NodeRow] = &[((0, 0, 0), (100 * GB, 100, 0))];
    const ROOT: Q = queue(0, 100.0, 100.0);
    /// A (1) and B (2) with half the cluster each, A using 80 and B 10 (GB
    /// and vcores), in containers of 10; B's app (1) asks for `pending` more.
    const A_OVER_B_UNDER: [Q; 3] = [
        ROOT.used(90 * GB, 90, 0),
        queue(0, 50.0, 100.0).used(80 * GB, 80, 0),
        queue(0, 50.0, 100.0).used(10 * GB, 10, 0),
    ];
    const A_AND_B: &[A] = &[app(1, 0), app(2, 1)];
    const A_RUNNING: &[Running] = &[
        tens(0, 5),
        tens(0, 3),
        tens(0, 8),
        tens(0, 1),
        tens(0, 7),
        tens(0, 2),
        tens(0, 6),
        tens(0, 4),
        tens(1, 9),
    ];

    const CASES: &[Case] = &[
        Case {
            what: "the youngest containers of the queue above its guarantee",
            nodes: NODE,
            queues: &A_OVER_B_UNDER,
            apps: A_AND_B,
            asks: &[(1, 3, 10 * GB, 10, 0)],
            running: A_RUNNING,
            // Started at 8, 7 and 6; B's own (start 9) is never a victim.
            victims: &[2, 4, 6],
        },
        Case {
            what: "never below the guarantee: A gives 30 of the 40 B is short",
            nodes: NODE,
            queues: &A_OVER_B_UNDER,
            apps: A_AND_B,
            asks: &[(1, 6, 10 * GB, 10, 0)],
            running: A_RUNNING,
            victims: &[2, 4, 6],
        },
        Case {
            what: "owed is at most the demand",
            nodes: NODE,
            queues: &A_OVER_B_UNDER,
            apps: A_AND_B,
            asks: &[(1, 1, 5 * GB, 5, 0)],
            running: A_RUNNING,
            victims: &[2],
        },
        Case {
            what: "nothing is owed to a queue without demand",
            nodes: NODE,
            queues: &A_OVER_B_UNDER,
            apps: A_AND_B,
            asks: &[(1, 0, 10 * GB, 10, 0)],
            running: A_RUNNING,
            victims: &[],
        },
        Case {
            what: "nothing is owed to a queue at its guarantee",
            nodes: NODE,
            queues: &[
                ROOT.used(100 * GB, 100, 0),
                queue(0, 50.0, 100.0).used(50 * GB, 50, 0),
                queue(0, 50.0, 100.0).used(50 * GB, 50, 0),
            ],
            apps: A_AND_B,
            asks: &[(1, 3, 10 * GB, 10, 0)],
            running: &[tens(0, 5), tens(0, 6), tens(0, 7), tens(0, 8), tens(0, 9)],
            victims: &[],
        },
        Case {
            what: "a container that would take its queue below guarantee is passed over",
            // A at 60: its youngest (20 GB) would leave 40; the next (10)
            // leaves 50, and then A has nothing more to give.
            nodes: NODE,
            queues: &[
                ROOT.used(70 * GB, 70, 0),
                queue(0, 50.0, 100.0).used(60 * GB, 60, 0),
                queue(0, 50.0, 100.0).used(10 * GB, 10, 0),
            ],
            apps: A_AND_B,
            asks: &[(1, 2, 10 * GB, 10, 0)],
            running: &[
                (0, 20 * GB, 20, 0, 9),
                tens(0, 4),
                tens(0, 5),
                tens(0, 3),
                (0, 10 * GB, 10, 0, 2),
            ],
            victims: &[2],
        },
        Case {
            what: "inside a parent below its guarantee, a sibling above gives back",
            // P (1) [P1 (3), P2 (4)] and Q (2) at its guarantee. P is at 40 of
            // 50, but P2 holds 35 of its 25 and P1 5 of 25: P2 gives 10.
            nodes: NODE,
            queues: &[
                ROOT.used(90 * GB, 90, 0),
                queue(0, 50.0, 100.0).used(40 * GB, 40, 0),
                queue(0, 50.0, 100.0).used(50 * GB, 50, 0),
                queue(1, 50.0, 100.0).used(5 * GB, 5, 0),
                queue(1, 50.0, 100.0).used(35 * GB, 35, 0),
            ],
            apps: &[app(3, 0), app(4, 1), app(2, 2)],
            asks: &[(0, 4, 5 * GB, 5, 0)],
            running: &[
                (1, 5 * GB, 5, 0, 1),
                (1, 5 * GB, 5, 0, 2),
                (2, 5 * GB, 5, 0, 9),
                (1, 5 * GB, 5, 0, 3),
                (1, 5 * GB, 5, 0, 4),
            ],
            victims: &[4, 3],
        },
        Case {
            what: "queues elsewhere keep an ancestor's guarantee",
            // Q (2) [Q1 (3), Q2 (4)]: Q2 is above its guarantee but Q at it,
            // so Q2 gives nothing to P; A (1) at 60 gives 10.
            nodes: NODE,
            queues: &[
                ROOT.used(90 * GB, 90, 0),
                queue(0, 20.0, 100.0).used(10 * GB, 10, 0),
                queue(0, 40.0, 100.0).used(40 * GB, 40, 0),
                queue(2, 50.0, 100.0).used(10 * GB, 10, 0),
                queue(2, 50.0, 100.0).used(30 * GB, 30, 0),
                queue(0, 40.0, 100.0).used(40 * GB, 40, 0),
            ],
            apps: &[app(1, 0), app(4, 1), app(5, 2)],
            asks: &[(0, 5, 10 * GB, 10, 0)],
            running: &[tens(1, 9), tens(1, 8), tens(2, 1), tens(2, 2)],
            victims: &[],
        },
        Case {
            what: "a container that frees nothing still owed is not taken",
            // B is owed 2 GB, 2 vcores and 2 GPUs: A's youngest frees the
            // memory and vcores, the next frees only those, the GPU one the rest.
            nodes: &[((0, 0, 0), (100 * GB, 100, 4))],
            queues: &[
                ROOT.used(90 * GB, 90, 2),
                queue(0, 50.0, 100.0).used(80 * GB, 80, 2),
                queue(0, 50.0, 100.0).used(10 * GB, 10, 0),
            ],
            apps: A_AND_B,
            asks: &[(1, 2, GB, 1, 1)],
            running: &[tens(0, 9), tens(0, 8), (0, GB, 1, 2, 1)],
            victims: &[0, 2],
        },
    ];

    #[test]
    fn victims_match_the_table() {
        for case in CASES {
            let snapshot = snapshot(case.nodes, case.queues, case.apps, case.asks);
            let victims = preempt(&snapshot, &containers(&snapshot, case.running));
            assert_eq!(victims, case.victims, "{}", case.what);
        }
    }

    #[test]
    fn priorities_never_preempt_inside_a_queue() {
        // One queue at its whole-cluster guarantee; a high-priority app
        // waits, but running containers of the low-priority one stay.
        let snapshot = snapshot(
            NODE,
            &[
                ROOT.used(100 * GB, 100, 0),
                queue(0, 100.0, 100.0).used(100 * GB, 100, 0),
            ],
            &[app(1, 0).priority(0), app(1, 1).priority(9)],
            &[(1, 5, 10 * GB, 10, 0)],
        );
        let running = containers(&snapshot, &[tens(0, 1), tens(0, 2)]);
        assert_eq!(preempt(&snapshot, &running), [] as [u32; 0]);
    }

    /// The rule read literally: for each container, youngest first, scan
    /// the owed leaves in order and check the queues it leaves one by one.
    fn plain(snapshot: &Snapshot, running: &Containers) -> Vec<u32> {
        let cluster: Cluster = snapshot.nodes().cluster();
        let mut tree = Tree::of(snapshot.queues());
        let (apps, asks) = (snapshot.apps(), snapshot.asks());
        let mut demand = vec![Resources::ZERO; tree.len()];
        for k in 0..asks.len() {
            let q = apps.queue(asks.app(k));
            demand[q] = demand[q].plus(asks.size(k).times(u64::from(asks.pending[k])));
        }
        let mut owed: Vec<(usize, Resources)> = (0..tree.len())
            .filter(|&q| {
                tree.is_leaf(q) && cluster.share(tree.used[q]) + EPSILON < tree.guarantee(q)
            })
            .map(|q| {
                let owed = demand[q].min(cluster.amount(tree.guarantee(q)).minus(tree.used[q]));
                (q, owed)
            })
            .filter(|(_, owed)| !owed.is_zero())
            .collect();
        owed.sort_by_key(|&(q, _)| queue_key(&cluster, tree.guarantee(q), tree.used[q], q));
        let mut order: Vec<usize> = (0..running.app.len()).collect();
        order.sort_by_key(|&c| std::cmp::Reverse((running.start_time_ms[c], c)));
        let lost_by = |tree: &Tree, from: usize, to: usize| -> Vec<usize> {
            tree.path(from)
                .take_while(|&q| !tree.queues.is_ancestor_or_self(q, to))
                .collect()
        };
        let above: Vec<bool> = (0..tree.len())
            .map(|q| cluster.share(tree.used[q]) > tree.guarantee(q) + EPSILON)
            .collect();
        let mut victims = Vec::new();
        for c in order {
            let leaf = apps.queue(running.app(c));
            if !above[leaf] {
                continue;
            }
            let size = running.size(c);
            if size.is_zero() {
                continue;
            }
            let keeps = |tree: &Tree, q: usize| {
                cluster.share(tree.used[q].minus(size)) + EPSILON >= tree.guarantee(q)
            };
            let Some(i) = owed.iter().position(|&(to, left)| {
                to != leaf
                    && (0..3).any(|r| left.to_array()[r] > 0 && size.to_array()[r] > 0)
                    && lost_by(&tree, leaf, to).iter().all(|&q| keeps(&tree, q))
            }) else {
                continue;
            };
            let to = owed[i].0;
            for q in lost_by(&tree, leaf, to) {
                tree.used[q] = tree.used[q].minus(size);
            }
            for q in lost_by(&tree, to, leaf) {
                tree.used[q] = tree.used[q].plus(size);
            }
            owed[i].1 = owed[i].1.minus(size);
            if owed[i].1.is_zero() {
                owed.remove(i);
            }
            victims.push(c as u32);
        }
        victims
    }

    #[test]
    fn victims_match_the_plain_rule_on_random_clusters() {
        let mut rng = Lcg(3);
        let mut taken = 0;
        for round in 0..2000 {
            // Two levels of queues; leaves hold running containers whose
            // sizes make up their usage (and their ancestors').
            let mut queues = vec![ROOT];
            for _ in 0..1 + rng.below(3) {
                queues.push(queue(0, 0.0, 100.0));
            }
            let parents = queues.len();
            for p in 1..parents {
                for _ in 0..rng.below(4) {
                    queues.push(queue(p as u32, 0.0, 100.0));
                }
            }
            // Capacities that sum to 100 under each parent.
            for p in 0..parents {
                let children: Vec<usize> = (1..queues.len())
                    .filter(|&q| queues[q].parent as usize == p)
                    .collect();
                let mut left = 100.0f64;
                for (i, &q) in children.iter().enumerate() {
                    let share = if i + 1 == children.len() {
                        left
                    } else {
                        rng.below(left as u64 + 1) as f64
                    };
                    left -= share;
                    queues[q].capacity = share;
                }
            }
            let leaves: Vec<u32> = (0..queues.len() as u32)
                .filter(|&q| !queues.iter().skip(1).any(|c| c.parent == q))
                .collect();
            // One app, and one user, per leaf.
            let apps: Vec<A> = (0..leaves.len())
                .map(|i| app(leaves[i], i as u32))
                .collect();
            let mut rows = Vec::new();
            for _ in 0..rng.below(30) {
                let a = rng.below(apps.len() as u64) as u32;
                let row = (
                    a,
                    (1 + rng.below(8)) * GB,
                    rng.below(5),
                    u64::from(rng.below(5) == 0),
                    rng.below(20) as i64,
                );
                let empty = snapshot(NODE, &queues, &[], &[]);
                let tree = Tree::of(empty.queues());
                for q in tree.path(apps[a as usize].queue as usize) {
                    queues[q].used.0 += row.1;
                    queues[q].used.1 += row.2;
                    queues[q].used.2 += row.3;
                }
                rows.push(row);
            }
            let asks: Vec<AskRow> = (0..rng.below(6))
                .map(|_| {
                    (
                        rng.below(apps.len() as u64) as u32,
                        rng.below(4) as u32,
                        (1 + rng.below(8)) * GB,
                        rng.below(5),
                        u64::from(rng.below(5) == 0),
                    )
                })
                .collect();
            let nodes = [((0, 0, 0), (64 * GB, 48, 2))];
            let snapshot = snapshot(&nodes, &queues, &apps, &asks);
            let running = containers(&snapshot, &rows);
            let victims = preempt(&snapshot, &running);
            assert_eq!(
                victims,
                plain(&snapshot, &running),
                "round {round}: {rows:?}"
            );
            taken += victims.len();
        }
        assert!(
            taken > 500,
            "the random clusters preempt too rarely: {taken}"
        );
    }

    #[test]
    fn subtrees_are_ranges_and_ranks_are_found_in_them() {
        // 0 [1 [3, 4 [6]], 2 [5]]
        let snapshot = snapshot(
            NODE,
            &[
                ROOT,
                queue(0, 50.0, 100.0),
                queue(0, 50.0, 100.0),
                queue(1, 50.0, 100.0),
                queue(1, 50.0, 100.0),
                queue(2, 100.0, 100.0),
                queue(4, 100.0, 100.0),
            ],
            &[],
            &[],
        );
        let tree = Tree::of(snapshot.queues());
        let (first, last) = subtree_ranges(&tree);
        assert_eq!(first, [0, 1, 5, 2, 3, 6, 4]);
        assert_eq!(last, [6, 4, 6, 2, 4, 6, 4]);
        let mut ranks = RankTree::new(7);
        ranks.set(first[6], 3);
        ranks.set(first[5], 1);
        ranks.set(first[3], 2);
        // (subtree, least rank)
        let cases = [
            (0, Some(1)),
            (1, Some(2)),
            (4, Some(3)),
            (2, Some(1)),
            (3, Some(2)),
        ];
        for (q, rank) in cases {
            assert_eq!(ranks.min(first[q], last[q]), rank, "{q}");
        }
        ranks.clear(first[3]);
        assert_eq!(ranks.min(first[1], last[1]), Some(3));
        ranks.clear(first[6]);
        assert_eq!(ranks.min(first[1], last[1]), None);
    }
}
