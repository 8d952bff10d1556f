//! What both `schedule` and `preempt` need: resource vectors, dominant
//! shares of the cluster, the queue tree with its absolute capacities, and
//! the user-limit formula.

use crate::{Nodes, Queues};

/// Memory (MB), vcores and GPUs, wide enough for cluster totals. Arithmetic
/// saturates: a malformed snapshot gives odd numbers, never a trap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(crate) struct Res(pub [u64; 3]);

impl Res {
    pub const ZERO: Res = Res([0; 3]);

    pub fn new(memory_mb: u64, vcores: u64, gpus: u64) -> Res {
        Res([memory_mb, vcores, gpus])
    }

    /// Whether `self` is at least `other` in every resource.
    pub fn covers(self, other: Res) -> bool {
        (0..3).all(|i| self.0[i] >= other.0[i])
    }

    pub fn plus(self, other: Res) -> Res {
        Res(std::array::from_fn(|i| {
            self.0[i].saturating_add(other.0[i])
        }))
    }

    pub fn minus(self, other: Res) -> Res {
        Res(std::array::from_fn(|i| {
            self.0[i].saturating_sub(other.0[i])
        }))
    }

    pub fn times(self, count: u64) -> Res {
        Res(self.0.map(|x| saturating_times(x, count)))
    }

    pub fn max(self, other: Res) -> Res {
        Res(std::array::from_fn(|i| self.0[i].max(other.0[i])))
    }

    pub fn min(self, other: Res) -> Res {
        Res(std::array::from_fn(|i| self.0[i].min(other.0[i])))
    }

    pub fn is_zero(self) -> bool {
        self == Res::ZERO
    }

    /// How many containers of `size` fit in `self`. A resource the container
    /// does not use sets no bound, so an all-zero size fits `u64::MAX` times.
    pub fn fits(self, size: Res) -> u64 {
        (0..3)
            .filter_map(|i| self.0[i].checked_div(size.0[i]))
            .min()
            .unwrap_or(u64::MAX)
    }
}

/// Slack for comparing shares computed in floating point: one part in 10^12
/// of the cluster, far below one megabyte of a 10,000-node cluster's memory.
pub(crate) const EPSILON: f64 = 1e-12;

/// The cluster's total resources, the denominators of every share.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Cluster {
    pub total: Res,
    /// `1 / total` per resource, 0 for a resource the cluster has none of:
    /// shares are computed often, and a product is cheaper than a quotient.
    inverse: [f64; 3],
}

impl Cluster {
    /// The sum of the nodes' capacities (columns read to the shortest).
    pub fn of(nodes: &Nodes) -> Cluster {
        let total = nodes
            .capacity_memory_mb
            .iter()
            .zip(&nodes.capacity_vcores)
            .zip(&nodes.capacity_gpus)
            .fold(Res::ZERO, |sum, ((&memory, &vcores), &gpus)| {
                sum.plus(Res::new(memory, vcores, gpus))
            });
        Cluster::with_total(total)
    }

    pub fn with_total(total: Res) -> Cluster {
        let inverse = total.0.map(|t| if t == 0 { 0.0 } else { 1.0 / t as f64 });
        Cluster { total, inverse }
    }

    /// The dominant share of `amount`: the largest fraction of the cluster it
    /// takes in any resource. A resource the cluster has none of is ignored.
    pub fn share(&self, amount: Res) -> f64 {
        let [m, v, g] = amount.0;
        larger(
            larger(m as f64 * self.inverse[0], v as f64 * self.inverse[1]),
            g as f64 * self.inverse[2],
        )
    }

    /// The most of each resource whose dominant share stays within
    /// `fraction`: `floor(fraction × total)`, and no bound on a resource the
    /// cluster has none of (it is ignored by shares). `amount ≤ limit` in
    /// every resource exactly when `share(amount) ≤ fraction`.
    pub fn limit(&self, fraction: f64) -> Res {
        Res(self.total.0.map(|total| {
            if total == 0 {
                u64::MAX
            } else {
                let exact = fraction.max(0.0) * total as f64;
                // `as` saturates; the slack absorbs rounding in `fraction`.
                (exact + exact * EPSILON).floor() as u64
            }
        }))
    }

    /// `floor(fraction × total)` in every resource: how much of it a
    /// guaranteed share stands for (zero of a resource the cluster lacks).
    pub fn amount(&self, fraction: f64) -> Res {
        Res(self.total.0.map(|total| {
            let exact = fraction.max(0.0) * total as f64;
            (exact + exact * EPSILON).floor() as u64
        }))
    }
}

/// A percentage from the snapshot as a fraction in 0..=1; out of range values
/// are clamped and NaN reads as `default` percent.
fn fraction(percent: f64, default: f64) -> f64 {
    if percent.is_nan() {
        default / 100.0
    } else {
        percent.clamp(0.0, 100.0) / 100.0
    }
}

/// A maximum-capacity as a fraction of the parent's guarantee. It may be
/// above 100 % (the host's plan follower gives a reservable queue's default
/// child its queue's own maximum that way); the parent's maximum caps it
/// anyway. NaN (which the host never sends) reads as 0, as in drf: a
/// malformed snapshot can only give a queue less.
fn maximum_fraction(percent: f64) -> f64 {
    if percent.is_nan() {
        0.0
    } else {
        percent.clamp(0.0, 1e6) / 100.0
    }
}

/// The queue tree with what follows from it: validity, leaves and absolute
/// shares of the cluster.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Tree {
    /// Parent of each queue; the root's is 0 (itself).
    pub parent: Vec<usize>,
    /// Reachable from the root through parents listed before their children.
    /// Queues that are not are ignored, with their apps.
    pub valid: Vec<bool>,
    /// Valid and without valid children.
    pub leaf: Vec<bool>,
    /// Depth below the root (root 0).
    pub depth: Vec<u32>,
    /// `absolute_capacity` as a fraction of the cluster.
    pub guarantee: Vec<f64>,
    /// `absolute_maximum` as a fraction of the cluster.
    pub maximum: Vec<f64>,
    /// minimum-user-limit-percent as a fraction.
    pub minimum_user_limit: Vec<f64>,
    /// user-limit-factor (non-negative; NaN reads as 1; infinite when the
    /// queue has none, so a user may take the whole queue).
    pub user_limit_factor: Vec<f64>,
    pub fair: Vec<bool>,
    pub used: Vec<Res>,
}

impl Tree {
    pub fn of(queues: &Queues) -> Tree {
        let count = [
            queues.parent.len(),
            queues.capacity.len(),
            queues.maximum_capacity.len(),
            queues.minimum_user_limit_percent.len(),
            queues.user_limit_factor.len(),
            queues.fair.len(),
            queues.used_memory_mb.len(),
            queues.used_vcores.len(),
            queues.used_gpus.len(),
        ]
        .into_iter()
        .min()
        .unwrap_or(0);
        let mut tree = Tree {
            parent: vec![0; count],
            valid: vec![false; count],
            leaf: vec![false; count],
            depth: vec![0; count],
            guarantee: vec![0.0; count],
            maximum: vec![0.0; count],
            minimum_user_limit: vec![1.0; count],
            user_limit_factor: vec![1.0; count],
            fair: queues.fair[..count].to_vec(),
            used: (0..count)
                .map(|q| {
                    Res::new(
                        queues.used_memory_mb[q],
                        queues.used_vcores[q],
                        queues.used_gpus[q],
                    )
                })
                .collect(),
        };
        for q in 0..count {
            tree.minimum_user_limit[q] = fraction(queues.minimum_user_limit_percent[q], 100.0);
            tree.user_limit_factor[q] = match queues.user_limit_factor[q] {
                None => f64::INFINITY,
                Some(factor) if factor.is_nan() => 1.0,
                Some(factor) => factor.max(0.0),
            };
            if q == 0 {
                // The root owns the cluster: 100 % guaranteed, 100 % maximum.
                tree.valid[0] = true;
                tree.guarantee[0] = 1.0;
                tree.maximum[0] = 1.0;
                continue;
            }
            let parent = queues.parent[q] as usize;
            if parent >= q || !tree.valid[parent] {
                continue;
            }
            tree.parent[q] = parent;
            tree.valid[q] = true;
            tree.depth[q] = tree.depth[parent] + 1;
            // The host's rule (host/src/queues/tree.rs), as seed 001 computes
            // it: a share of the parent's *guarantee*, capped by the parent's
            // own maximum.
            let parent_guarantee = tree.guarantee[parent];
            tree.guarantee[q] = parent_guarantee * fraction(queues.capacity[q], 0.0);
            tree.maximum[q] = (parent_guarantee * maximum_fraction(queues.maximum_capacity[q]))
                .min(tree.maximum[parent]);
        }
        for q in 0..count {
            tree.leaf[q] = tree.valid[q];
        }
        for q in 1..count {
            if tree.valid[q] {
                tree.leaf[tree.parent[q]] = false;
            }
        }
        tree
    }

    pub fn len(&self) -> usize {
        self.parent.len()
    }

    /// `q` and its ancestors up to the root, `q` first.
    pub fn path(&self, q: usize) -> impl Iterator<Item = usize> + '_ {
        let mut next = Some(q);
        std::iter::from_fn(move || {
            let q = next?;
            next = (q != 0).then(|| self.parent[q]);
            Some(q)
        })
    }

    /// Whether `a` is `q` or one of its ancestors.
    pub fn is_ancestor_or_self(&self, a: usize, q: usize) -> bool {
        let mut q = q;
        while self.depth[q] > self.depth[a] {
            q = self.parent[q];
        }
        q == a
    }
}

/// How queues are ordered at each level: by `used share ÷ guaranteed share`,
/// lowest (most under-served) first, ties to the lower index. Queues with no
/// guarantee come after all that have one, among themselves by used share.
/// Compared as a tuple: `(class, ratio as ordered bits, queue index)`.
pub(crate) type QueueKey = (u8, u64, u32);

/// `x × count`, at most `u64::MAX`. In WebAssembly `u64::saturating_mul`
/// is a call to a 128-bit multiply; operands below 2³² (every real size and
/// count) cannot overflow, so they take one plain multiply.
fn saturating_times(x: u64, count: u64) -> u64 {
    if (x | count) >> 32 == 0 {
        x * count
    } else {
        x.saturating_mul(count)
    }
}

pub(crate) fn queue_key(cluster: &Cluster, guarantee: f64, used: Res, queue: usize) -> QueueKey {
    let share = cluster.share(used);
    if guarantee > 0.0 {
        (0, ordered(share / guarantee), queue as u32)
    } else {
        (1, ordered(share), queue as u32)
    }
}

/// A non-negative float as bits that sort like it (NaN as infinity).
pub(crate) fn ordered(x: f64) -> u64 {
    if x.is_nan() {
        f64::INFINITY.to_bits()
    } else if x > 0.0 {
        x.to_bits()
    } else {
        0
    }
}

/// The user limit of a leaf queue as a share of the cluster (Hadoop 3, seed
/// 002 §4.1), for a user asking for a container that would bring the queue's
/// usage to `queue_used_with_ask` (a share):
///
/// ```text
/// current    = max(guarantee, queue used + ask)
/// user_limit = max(current / active_users, current × minimum_user_limit)
///              capped at guarantee × user_limit_factor and at maximum
/// ```
///
/// `active_users` counts the users with pending asks in the queue, at least 1.
pub(crate) fn user_limit(
    guarantee: f64,
    maximum: f64,
    minimum_user_limit: f64,
    user_limit_factor: f64,
    queue_used_with_ask: f64,
    active_users: u64,
) -> f64 {
    let current = larger(guarantee, queue_used_with_ask);
    let active = active_users.max(1) as f64;
    let limit = larger(current / active, current * minimum_user_limit);
    // No factor (infinite) sets no cap; the product would be NaN for a queue
    // without a guarantee.
    let factor_cap = if user_limit_factor.is_finite() {
        guarantee * user_limit_factor
    } else {
        f64::INFINITY
    };
    smaller(smaller(limit, factor_cap), maximum)
}

/// The larger of two shares that are never NaN. A compare-and-select: the
/// NaN-aware `f64::max` compiles to an out-of-line call in WebAssembly, on
/// the hottest path of a round (see BENCHMARKS.md).
fn larger(a: f64, b: f64) -> f64 {
    if a > b { a } else { b }
}

/// The smaller of two shares that are never NaN; see [`larger`].
fn smaller(a: f64, b: f64) -> f64 {
    if a < b { a } else { b }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_fit_and_saturate() {
        let room = Res::new(4096, 3, 1);
        // (size, how many fit)
        let cases = [
            (Res::new(1024, 1, 0), 3),
            (Res::new(2048, 1, 0), 2),
            (Res::new(1024, 1, 1), 1),
            (Res::new(1024, 1, 2), 0),
            (Res::new(0, 0, 0), u64::MAX),
            (Res::new(0, 2, 0), 1),
        ];
        for (size, fits) in cases {
            assert_eq!(room.fits(size), fits, "{size:?}");
        }
        assert_eq!(
            Res::new(1, 1, 1).minus(Res::new(2, 0, 1)),
            Res::new(0, 1, 0)
        );
        assert_eq!(Res([u64::MAX, 1, 0]).times(2), Res([u64::MAX, 2, 0]));
    }

    #[test]
    fn dominant_share_ignores_resources_the_cluster_lacks() {
        let cluster = Cluster::with_total(Res::new(1000, 10, 0));
        // (amount, dominant share)
        let cases = [
            (Res::new(100, 1, 0), 0.1),
            (Res::new(100, 5, 0), 0.5),
            (Res::new(900, 5, 7), 0.9),
            (Res::ZERO, 0.0),
        ];
        for (amount, share) in cases {
            let got = cluster.share(amount);
            assert!((got - share).abs() < 1e-15, "{amount:?}: {got}");
        }
        assert_eq!(cluster.limit(0.24).0, [240, 2, u64::MAX]);
        assert_eq!(cluster.amount(0.24).0, [240, 2, 0]);
    }

    /// Queues from `(parent, capacity, maximum-capacity)` rows.
    fn tree(rows: &[(u32, f64, f64)]) -> Tree {
        let n = rows.len();
        Tree::of(&Queues {
            parent: rows.iter().map(|r| r.0).collect(),
            capacity: rows.iter().map(|r| r.1).collect(),
            maximum_capacity: rows.iter().map(|r| r.2).collect(),
            minimum_user_limit_percent: vec![100.0; n],
            user_limit_factor: vec![Some(1.0); n],
            fair: vec![false; n],
            used_memory_mb: vec![0; n],
            used_vcores: vec![0; n],
            used_gpus: vec![0; n],
        })
    }

    #[test]
    fn absolute_capacities_follow_the_hosts_rule() {
        // Seed 001: engineering 60 (development 20, qa 80), support 10,
        // marketing 30; development's maximum 40 of engineering's 60 = 24.
        let t = tree(&[
            (0, 100.0, 100.0), // 0 root
            (0, 60.0, 100.0),  // 1 engineering
            (0, 10.0, 100.0),  // 2 support
            (0, 30.0, 100.0),  // 3 marketing
            (1, 20.0, 40.0),   // 4 development
            (1, 80.0, 100.0),  // 5 qa
            (3, 50.0, 100.0),  // 6 marketing.a
            (6, 10.0, 100.0),  // 7 marketing.a.x
        ]);
        // (queue, absolute capacity %, absolute maximum %, leaf?)
        let expected = [
            (0, 100.0, 100.0, false),
            (1, 60.0, 100.0, false),
            (2, 10.0, 100.0, true),
            (3, 30.0, 100.0, false),
            (4, 12.0, 24.0, true),
            (5, 48.0, 60.0, true),
            (6, 15.0, 30.0, false),
            (7, 1.5, 15.0, true),
        ];
        for (q, capacity, maximum, leaf) in expected {
            assert!(
                (t.guarantee[q] * 100.0 - capacity).abs() < 1e-9,
                "{q}: {}",
                t.guarantee[q]
            );
            assert!(
                (t.maximum[q] * 100.0 - maximum).abs() < 1e-9,
                "{q}: {}",
                t.maximum[q]
            );
            assert_eq!(t.leaf[q], leaf, "{q}");
        }
        assert_eq!(t.path(7).collect::<Vec<_>>(), [7, 6, 3, 0]);
        assert!(t.is_ancestor_or_self(3, 7));
        assert!(t.is_ancestor_or_self(7, 7));
        assert!(!t.is_ancestor_or_self(1, 7));
    }

    #[test]
    fn a_parents_maximum_caps_its_children() {
        let t = tree(&[(0, 100.0, 100.0), (0, 60.0, 50.0), (1, 100.0, 100.0)]);
        assert!((t.maximum[1] - 0.5).abs() < 1e-12);
        assert!((t.maximum[2] - 0.5).abs() < 1e-12);
    }

    #[test]
    fn queues_out_of_order_are_ignored() {
        // Queue 1 names a later parent; queue 3 names the invalid queue 1.
        let t = tree(&[
            (0, 100.0, 100.0),
            (2, 50.0, 100.0),
            (0, 100.0, 100.0),
            (1, 100.0, 100.0),
        ]);
        assert_eq!(t.valid, [true, false, true, false]);
        assert_eq!(t.leaf, [false, false, true, false]);
    }

    #[test]
    fn user_limit_with_minimum_user_limit_percent_25() {
        // Seed 002 §4.1: with UL-MIN 25, 2, 3, 4 and 5 active users are each
        // limited to 50 %, 33 %, 25 % and 25 % of the queue. A queue of the
        // whole cluster, empty, a user-limit-factor that does not bind.
        // (active users, limit)
        let cases = [
            (0, 1.0),
            (1, 1.0),
            (2, 0.5),
            (3, 1.0 / 3.0),
            (4, 0.25),
            (5, 0.25),
            (40, 0.25),
        ];
        for (active, limit) in cases {
            let got = user_limit(1.0, 1.0, 0.25, 100.0, 0.001, active);
            assert!((got - limit).abs() < 1e-12, "{active} users: {got}");
        }
    }

    #[test]
    fn user_limit_caps_and_current_capacity() {
        // (guarantee, maximum, minimum user limit, factor, queue used + ask, active, limit)
        let cases = [
            // Seed 001: development (12 %), factor 1: each user 12 %.
            (0.12, 0.6, 1.0, 1.0, 0.3, 2, 0.12),
            // Factor 2 lets a lone user reach twice the guarantee...
            (0.12, 0.6, 1.0, 2.0, 0.3, 1, 0.24),
            // ...while the queue's usage is there to justify it,
            (0.12, 0.6, 1.0, 2.0, 0.2, 1, 0.2),
            // but never past the queue's absolute maximum.
            (0.12, 0.2, 1.0, 5.0, 0.5, 1, 0.2),
            // Above the guarantee `current` is the usage: 3 users of 0.3.
            (0.1, 1.0, 0.25, 10.0, 0.3, 3, 0.1),
            // A queue without a guarantee gives its users nothing.
            (0.0, 0.5, 1.0, 1.0, 0.1, 1, 0.0),
            // No user-limit-factor: a lone user may take the queue, up to its
            // maximum, even a queue without a guarantee.
            (0.12, 0.6, 1.0, f64::INFINITY, 0.3, 1, 0.3),
            (0.12, 0.2, 1.0, f64::INFINITY, 0.3, 1, 0.2),
            (0.0, 0.5, 1.0, f64::INFINITY, 0.1, 1, 0.1),
        ];
        for (guarantee, maximum, mulp, factor, used, active, limit) in cases {
            let got = user_limit(guarantee, maximum, mulp, factor, used, active);
            assert!(
                (got - limit).abs() < 1e-12,
                "{guarantee} {maximum} {mulp} {factor} {used} {active}: {got}"
            );
        }
    }

    #[test]
    fn queue_keys_sort_most_under_served_first() {
        let cluster = Cluster::with_total(Res::new(100, 100, 0));
        let mut keys = [
            queue_key(&cluster, 0.5, Res::new(30, 0, 0), 1), // 0.6
            queue_key(&cluster, 0.1, Res::new(5, 0, 0), 2),  // 0.5
            queue_key(&cluster, 0.0, Res::new(0, 0, 0), 3),  // no guarantee
            queue_key(&cluster, 0.2, Res::new(0, 14, 0), 4), // 0.7, vcores
            queue_key(&cluster, 0.4, Res::ZERO, 5),          // 0
        ];
        keys.sort();
        let order: Vec<u32> = keys.iter().map(|k| k.2).collect();
        assert_eq!(order, [5, 2, 1, 4, 3]);
    }
}
