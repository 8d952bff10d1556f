//! What both `schedule` and `preempt` need beyond the SDK's views: the
//! queues' usage as a call changes it, the order queues are served in, and
//! the user-limit formula.

use weft_policy::resources::{larger, smaller};
use weft_policy::scheduling::Queues;
use weft_policy::{Cluster, Resources};

/// The queue tree during a call: the checked view (parents, leaves, absolute
/// capacities and maxima, user-limit settings) and each queue's usage as
/// placements or preemptions change it.
#[derive(Debug, Clone)]
pub(crate) struct Tree<'a> {
    pub queues: &'a Queues,
    pub used: Vec<Resources>,
}

impl<'a> Tree<'a> {
    pub(crate) fn of(queues: &'a Queues) -> Tree<'a> {
        Tree {
            queues,
            used: (0..queues.len()).map(|q| queues.used(q)).collect(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.queues.len()
    }

    pub(crate) fn parent(&self, q: usize) -> usize {
        self.queues.parent(q)
    }

    pub(crate) fn is_leaf(&self, q: usize) -> bool {
        self.queues.is_leaf(q)
    }

    /// `absolute_capacity` as a fraction of the cluster.
    pub(crate) fn guarantee(&self, q: usize) -> f64 {
        self.queues.absolute_capacity(q)
    }

    /// `absolute_maximum` as a fraction of the cluster.
    pub(crate) fn maximum(&self, q: usize) -> f64 {
        self.queues.absolute_maximum(q)
    }

    /// user-limit-factor, infinite when the queue has none: a user may then
    /// take the whole queue, up to its maximum.
    pub(crate) fn user_limit_factor(&self, q: usize) -> f64 {
        self.queues.user_limit_factor(q).unwrap_or(f64::INFINITY)
    }

    /// `q` and its ancestors up to the root, `q` first.
    pub(crate) fn path(&self, q: usize) -> impl Iterator<Item = usize> + 'a {
        self.queues.path(q)
    }
}

/// How queues are ordered at each level: by `used share ÷ guaranteed share`,
/// lowest (most under-served) first, ties to the lower index. Queues with no
/// guarantee come after all that have one, among themselves by used share.
/// Compared as `(class, ratio as ordered bits, queue index)`, packed into
/// one integer: a comparison is two word compares rather than three fields'
/// (it is the inner loop of every ranking's sift, and in WebAssembly a tuple
/// of mixed widths also went through the shadow stack).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct QueueKey(u128);

impl QueueKey {
    pub(crate) fn new(class: u8, ratio_bits: u64, queue: u32) -> QueueKey {
        QueueKey((u128::from(class) << 96) | (u128::from(ratio_bits) << 32) | u128::from(queue))
    }

    /// The queue this key ranks.
    pub(crate) fn queue(self) -> usize {
        self.0 as u32 as usize
    }
}

pub(crate) fn queue_key(
    cluster: &Cluster,
    guarantee: f64,
    used: Resources,
    queue: usize,
) -> QueueKey {
    let share = cluster.share(used);
    if guarantee > 0.0 {
        QueueKey::new(0, ordered(share / guarantee), queue as u32)
    } else {
        QueueKey::new(1, ordered(share), queue as u32)
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
/// `active_users` counts the users with pending asks in the queue, at least
/// 1. An infinite `user_limit_factor` (the queue has none) sets no cap.
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
    // The product would be NaN for a queue without a guarantee.
    let factor_cap = if user_limit_factor.is_finite() {
        guarantee * user_limit_factor
    } else {
        f64::INFINITY
    };
    smaller(smaller(limit, factor_cap), maximum)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let cluster = Cluster::new(Resources::new(100, 100, 0));
        let mut keys = [
            queue_key(&cluster, 0.5, Resources::new(30, 0, 0), 1), // 0.6
            queue_key(&cluster, 0.1, Resources::new(5, 0, 0), 2),  // 0.5
            queue_key(&cluster, 0.0, Resources::new(0, 0, 0), 3),  // no guarantee
            queue_key(&cluster, 0.2, Resources::new(0, 14, 0), 4), // 0.7, vcores
            queue_key(&cluster, 0.4, Resources::ZERO, 5),          // 0
        ];
        keys.sort();
        let order: Vec<usize> = keys.iter().map(|k| k.queue()).collect();
        assert_eq!(order, [5, 2, 1, 4, 3]);
    }
}
