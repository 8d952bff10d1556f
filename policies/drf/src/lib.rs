//! `drf`: Dominant Resource Fairness (Ghodsi et al., NSDI 2011) across leaf
//! queues and, within a queue, across users.
//!
//! A principal's *dominant share* is the largest of its used memory, vcores
//! and GPUs, each as a fraction of the cluster's total (the sum of the nodes'
//! capacities; a resource the cluster has none of is skipped). Every
//! scheduling round DRF hands out the free room one container at a time:
//!
//! 1. among the leaf queues with a pending ask that can still be placed, the
//!    one with the smallest dominant share *weighted by its guarantee*
//!    (dominant share ÷ absolute capacity; ties go to the lower index) takes
//!    the turn; queues with no guarantee come after all others;
//! 2. inside it, the user with the smallest dominant share (from the usage of
//!    that user's apps in that queue; ties go to the lower user index);
//! 3. that user's earliest-submitted app with a placeable ask, its asks in
//!    index order, gets one container on the lowest-indexed node with room
//!    (first fit).
//!
//! Usage is updated after each container and the turn is chosen again, until
//! nothing more fits. A queue never goes above its absolute maximum capacity,
//! nor do any of its ancestors: a container is placed only if afterwards every
//! resource of every queue on the way to the root is within its maximum, i.e.
//! the dominant share stays at or below it. An ask that cannot be placed
//! (no node has room, or a maximum is reached) is passed over, not waited for:
//! free room only shrinks and usage only grows during a round, so it would
//! never fit later in the round either.
//!
//! The algorithm is a plain function over the SDK's checked snapshot
//! ([`schedule`]) so the host can benchmark it natively; the WebAssembly glue
//! is the `export_scheduling!` line. It must stay fast for 10,000 nodes and
//! 100,000 pending containers, so it
//! gives out *turns*, not containers: once a queue, user and ask are chosen, a
//! galloping search finds how many containers they take before another queue
//! or user becomes the smallest or a maximum is reached (shares only grow, so
//! that point is unique), and those go out at once, each node filled as far
//! as it goes. Queues and users wait in min-heaps; the SDK's max tree over
//! the nodes' free room (`FreeNodes`) finds the first node with room,
//! starting where the same container size last found some. The result is exactly what the
//! one-container-at-a-time rule above yields (the tests check it against a
//! plain implementation of that rule).

use weft_policy::scheduling::{FreeNodes, NoRoom, Placements, Queues, Snapshot, longest_run};
use weft_policy::{Cluster, Params, Policy, Resources, SchedulingPolicy};

/// The policy: DRF has no settings. `configure` still checks its
/// parameters (through the SDK), so a setting meant for another policy is
/// refused rather than silently ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Drf;

impl Policy for Drf {
    const NAME: &'static str = env!("CARGO_PKG_NAME");
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    /// Asks for no key, so the SDK refuses any given.
    fn configure(_params: &Params) -> Result<Self, String> {
        Ok(Drf)
    }
}

impl SchedulingPolicy for Drf {
    fn schedule(&mut self, snapshot: &Snapshot) -> Placements {
        // What the host would refuse goes: placements off an ask's
        // partition, containers against its constraint, gangs in part (the
        // round run again without them).
        weft_policy::scheduling::schedule_keeping_rules(snapshot, schedule)
    }

    // `preempt` is left to its default: DRF here only shares out free room;
    // it never takes containers back.
}

weft_policy::export_scheduling!(Drf);

/// A share kept as its IEEE bits. Shares are never negative (nor -0.0) and
/// never NaN, and for such numbers the bits order like the numbers: the turn
/// order compares integers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Share(u64);

impl Share {
    fn new(share: f64) -> Share {
        debug_assert!(share.is_sign_positive() && !share.is_nan(), "{share}");
        Share(share.to_bits())
    }
}

/// A leaf queue's place in the turn order: queues with a guarantee first, by
/// dominant share ÷ absolute capacity; then those with none, by dominant share.
type QueueKey = (bool, Share);

/// The queue tree's state during the round: usage as it grows, and how much
/// more each queue's absolute maximum leaves it.
struct Tree<'a> {
    queues: &'a Queues,
    cluster: Cluster,
    used: Vec<Resources>,
    /// How much more of each resource the queue's absolute maximum capacity
    /// (applied to the cluster total) leaves it; no bound on a resource the
    /// cluster has none of, which no node can give anyway.
    spare: Vec<Resources>,
    /// Whether the queue is above its maximum already in some resource the
    /// cluster has: its dominant share is, and would stay, above it.
    over: Vec<bool>,
}

impl<'a> Tree<'a> {
    fn new(queues: &'a Queues, cluster: Cluster) -> Tree<'a> {
        let used: Vec<Resources> = (0..queues.len()).map(|q| queues.used(q)).collect();
        let limits: Vec<Resources> = (0..queues.len())
            .map(|q| cluster.limit(queues.absolute_maximum(q)))
            .collect();
        Tree {
            queues,
            cluster,
            spare: (0..queues.len())
                .map(|q| limits[q].minus(used[q]))
                .collect(),
            over: (0..queues.len())
                .map(|q| !limits[q].covers(used[q]))
                .collect(),
            used,
        }
    }

    /// The leaf queue's place in the turn order had it used `used`.
    fn key(&self, queue: usize, used: Resources) -> QueueKey {
        let share = self.cluster.share(used);
        let guarantee = self.queues.absolute_capacity(queue);
        if guarantee > 0.0 {
            (false, Share::new(share / guarantee))
        } else {
            (true, Share::new(share))
        }
    }

    /// Whether `queue` and each of its ancestors stay within their maxima
    /// with `count` more containers of `size`.
    fn allows(&self, queue: usize, size: Resources, count: u64) -> bool {
        let more = size.times(count);
        self.queues
            .path(queue)
            .all(|q| !self.over[q] && self.spare[q].covers(more))
    }

    /// Counts `count` containers of `size`, which `allows`, for `queue` and
    /// its ancestors.
    fn add(&mut self, queue: usize, size: Resources, count: u64) {
        let more = size.times(count);
        let mut q = queue;
        loop {
            self.used[q] = self.used[q].plus(more);
            self.spare[q] = self.spare[q].minus(more);
            if q == 0 {
                break;
            }
            q = self.queues.parent(q);
        }
    }
}

/// The first node from where the same container shape last found room:
/// no node before it has room, and room only shrinks during a round, so a
/// search from there skips the full nodes (where scattered leftovers, memory
/// on one node and vcores on another, would make a search backtrack).
fn first_fit(free: &FreeNodes, from: &mut [usize], size: Resources, shape: usize) -> Option<usize> {
    let found = free.first_fit_from(from[shape], size);
    from[shape] = found.unwrap_or(free.len());
    found
}

/// One user's pending asks in one leaf queue, and that user's usage there.
struct Principal {
    queue: usize,
    user: u32,
    used: Resources,
    /// Range of the sorted ask list: by app submission, then ask index.
    next: usize,
    end: usize,
}

/// One scheduling round of DRF: see the module documentation.
///
/// Every placement fits the room left by the ones before it, no ask gets
/// more than its pending count, and no queue passes its maximum capacity;
/// consecutive containers of one ask on one node are one entry.
pub fn schedule(snapshot: &Snapshot) -> Placements {
    let (nodes, apps, asks) = (snapshot.nodes(), snapshot.apps(), snapshot.asks());
    let cluster = nodes.cluster();
    let mut tree = Tree::new(snapshot.queues(), cluster);

    // The asks that can take part, grouped by queue and user, each user's in
    // the order they are served: earliest-submitted app first, asks in order.
    // (Every app is in a leaf: the SDK checked the snapshot.)
    let mut candidates: Vec<(usize, u32, i64, usize, usize)> = (0..asks.len())
        .filter(|&ask| asks.pending[ask] > 0)
        .map(|ask| {
            let app = asks.app(ask);
            (
                apps.queue(app),
                apps.user[app],
                apps.submit_time_ms[app],
                app,
                ask,
            )
        })
        .collect();
    candidates.sort_unstable();
    // (No hash maps: std's would seed itself from WASI's random source.)
    let mut principals: Vec<Principal> = Vec::new();
    for (i, &(queue, user, ..)) in candidates.iter().enumerate() {
        match principals.last_mut() {
            Some(last) if (last.queue, last.user) == (queue, user) => last.end = i + 1,
            _ => {
                principals.push(Principal {
                    queue,
                    user,
                    used: Resources::ZERO,
                    next: i,
                    end: i + 1,
                });
            }
        }
    }
    // Each ask with its size, and a number per distinct size (its shape) for
    // the node search to remember where that size last found room.
    let mut shapes: Vec<Resources> = candidates.iter().map(|c| asks.size(c.4)).collect();
    shapes.sort_unstable();
    shapes.dedup();
    let order: Vec<(usize, Resources, usize)> = candidates
        .iter()
        .map(|&(.., ask)| {
            let size = asks.size(ask);
            // Every candidate's size is among the shapes.
            let shape = shapes.binary_search(&size).unwrap_or(0);
            (ask, size, shape)
        })
        .collect();
    let mut free = FreeNodes::new(nodes.free_rooms());
    let mut from = vec![0; shapes.len()];
    // A user's share in a queue counts all its apps there, pending or not.
    for app in 0..apps.len() {
        let key = (apps.queue(app), apps.user[app]);
        // Principals are sorted by queue and user, as the candidates were.
        if let Ok(slot) = principals.binary_search_by_key(&key, |p| (p.queue, p.user)) {
            principals[slot].used = principals[slot].used.plus(apps.used(app));
        }
    }

    // The turn order: leaf queues, and the users inside each.
    let mut users: Vec<Heap<(Share, u32, usize)>> =
        (0..tree.queues.len()).map(|_| Heap::default()).collect();
    for (slot, p) in principals.iter().enumerate() {
        users[p.queue].push((Share::new(cluster.share(p.used)), p.user, slot));
    }
    let mut turns: Heap<(QueueKey, usize)> = Heap::default();
    for (queue, users) in users.iter().enumerate() {
        if users.peek().is_some() {
            turns.push((tree.key(queue, tree.used[queue]), queue));
        }
    }

    let mut pending: Vec<u64> = asks.pending.iter().map(|&p| u64::from(p)).collect();
    let mut no_room = NoRoom::default();
    let mut placements = Placements::default();
    while let Some(&(_, queue)) = turns.peek() {
        let Some(&(_, user, slot)) = users[queue].peek() else {
            turns.pop();
            continue;
        };
        // The user's first ask that can take a container now; the ones
        // before it never will this round.
        let principal = &mut principals[slot];
        let mut chosen = None;
        while principal.next < principal.end {
            let (ask, size, shape) = order[principal.next];
            if pending[ask] > 0 && !no_room.rules_out(size) && tree.allows(queue, size, 1) {
                if let Some(node) = first_fit(&free, &mut from, size, shape) {
                    chosen = Some((ask, size, shape, node));
                    break;
                }
                no_room.remember(size);
            }
            principal.next += 1;
        }
        let Some((ask, size, shape, first_node)) = chosen else {
            // Nothing of this user fits any more: it leaves the turn order,
            // and so does the queue once no user is left.
            users[queue].pop();
            if users[queue].peek().is_none() {
                turns.pop();
            }
            continue;
        };

        // How long the turn lasts: while the maxima allow, this queue is
        // still the first queue and this user the first user in it.
        let next_queue = turns.runner_up().copied();
        let next_user = users[queue]
            .runner_up()
            .map(|&(share, user, _)| (share, user));
        let (queue_used, user_used) = (tree.used[queue], principal.used);
        let count = longest_run(pending[ask], |j| {
            let taken = size.times(j);
            next_queue.is_none_or(|next| (tree.key(queue, queue_used.plus(taken)), queue) < next)
                && next_user.is_none_or(|next| {
                    (Share::new(cluster.share(user_used.plus(taken))), user) < next
                })
                && tree.allows(queue, size, j + 1)
        });

        // First fit, each node filled as far as the turn goes.
        let mut left = count;
        let mut node = Some(first_node);
        while left > 0 {
            let Some(n) = node else {
                no_room.remember(size);
                break;
            };
            // The node was found with room for one; only more needs dividing.
            let here = if left == 1 {
                1
            } else {
                free.room(n).fits(size).min(left)
            };
            free.take(n, size, here);
            // At most the ask's pending count, a u32.
            placements.push(ask, n, here as u32);
            left -= here;
            if left > 0 {
                node = first_fit(&free, &mut from, size, shape);
            }
        }
        let placed = count - left;
        pending[ask] -= placed;
        principal.used = principal.used.plus(size.times(placed));
        tree.add(queue, size, placed);

        // Both only grew: they sink to their new places.
        users[queue].replace_top((Share::new(cluster.share(principal.used)), user, slot));
        turns.replace_top((tree.key(queue, tree.used[queue]), queue));
    }
    placements
}

/// A binary min-heap that changes only at the top, which is all the turn
/// order needs: the first queue or user takes its turn, its share grows, and
/// it sinks to its new place (or leaves).
struct Heap<T> {
    items: Vec<T>,
}

impl<T> Default for Heap<T> {
    fn default() -> Self {
        Heap { items: Vec::new() }
    }
}

impl<T: Ord> Heap<T> {
    fn peek(&self) -> Option<&T> {
        self.items.first()
    }

    /// The second smallest: the smaller child of the top.
    fn runner_up(&self) -> Option<&T> {
        match (self.items.get(1), self.items.get(2)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, _) => a,
        }
    }

    fn push(&mut self, item: T) {
        self.items.push(item);
        let mut i = self.items.len() - 1;
        while i > 0 && self.items[i] < self.items[(i - 1) / 2] {
            self.items.swap(i, (i - 1) / 2);
            i = (i - 1) / 2;
        }
    }

    fn pop(&mut self) {
        if let Some(last) = self.items.pop()
            && !self.items.is_empty()
        {
            self.replace_top(last);
        }
    }

    /// Replaces the top with `item`, which is no smaller, and sifts it down.
    fn replace_top(&mut self, item: T) {
        self.items[0] = item;
        let len = self.items.len();
        let mut i = 0;
        loop {
            let (left, right) = (2 * i + 1, 2 * i + 2);
            let mut least = i;
            if left < len && self.items[left] < self.items[least] {
                least = left;
            }
            if right < len && self.items[right] < self.items[least] {
                least = right;
            }
            if least == i {
                return;
            }
            self.items.swap(i, least);
            i = least;
        }
    }
}

#[cfg(test)]
mod tests;
