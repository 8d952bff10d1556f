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
//! The algorithm is a plain function over plain columns ([`schedule`]) so the
//! host can benchmark it natively; the WebAssembly glue is in `component.rs`.
//! It must stay fast for 10,000 nodes and 100,000 pending containers, so it
//! gives out *turns*, not containers: once a queue, user and ask are chosen, a
//! galloping search finds how many containers they take before another queue
//! or user becomes the smallest or a maximum is reached (shares only grow, so
//! that point is unique), and those go out at once, each node filled as far
//! as it goes. Queues and users wait in min-heaps; a max tree over the nodes'
//! free room finds the first node with room, starting where the same
//! container size last found some. The result is exactly what the
//! one-container-at-a-time rule above yields (the tests check it against a
//! plain implementation of that rule).

#[cfg(target_arch = "wasm32")]
mod component;

/// The policy's settings: DRF has none. `configure` still checks its
/// parameters, so a setting meant for another policy is refused rather than
/// silently ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Drf;

impl Drf {
    /// Accepts only an empty parameter list; anything else is refused with a
    /// message naming the first key.
    pub fn from_params(params: &[(String, String)]) -> Result<Self, String> {
        match params.first() {
            None => Ok(Drf),
            Some((key, value)) => Err(format!(
                "drf has no parameters, so not {key:?} (given {key}={value})"
            )),
        }
    }
}

/// The nodes, as columns like the WIT `nodes` record (entry i is node i).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Nodes {
    pub free_memory_mb: Vec<u64>,
    pub free_vcores: Vec<u64>,
    pub free_gpus: Vec<u64>,
    pub capacity_memory_mb: Vec<u64>,
    pub capacity_vcores: Vec<u64>,
    pub capacity_gpus: Vec<u64>,
}

/// The queue tree, as columns like the WIT `queues` record (entry i is queue
/// i; queue 0 is root, a parent comes before its children). Percentages are
/// relative to the parent. DRF does not read the user-limit or ordering
/// columns, so they are not here.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Queues {
    pub parent: Vec<u32>,
    pub capacity: Vec<f64>,
    pub maximum_capacity: Vec<f64>,
    pub used_memory_mb: Vec<u64>,
    pub used_vcores: Vec<u64>,
    pub used_gpus: Vec<u64>,
}

/// The applications, as columns like the WIT `apps` record (entry i is app
/// i). DRF does not read priorities.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Apps {
    pub queue: Vec<u32>,
    pub user: Vec<u32>,
    pub submit_time_ms: Vec<i64>,
    pub used_memory_mb: Vec<u64>,
    pub used_vcores: Vec<u64>,
    pub used_gpus: Vec<u64>,
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
    /// Appends `count` containers of `ask` on `node`, adding them to the last
    /// entry when that is the same ask on the same node.
    fn push(&mut self, ask: usize, node: usize, count: u64) {
        // Indices came from u32 columns, and no ask places more than its u32
        // pending count, so everything fits back into u32.
        let (ask, node, count) = (ask as u32, node as u32, count as u32);
        if self.ask.last() == Some(&ask) && self.node.last() == Some(&node) {
            *self.count.last_mut().unwrap() += count;
        } else {
            self.ask.push(ask);
            self.node.push(node);
            self.count.push(count);
        }
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

/// Memory (MB), vcores and GPUs, in that order: a container's size, a node's
/// free room, a principal's usage or a limit.
type Res = [u64; 3];

fn res(memory_mb: u64, vcores: u64, gpus: u64) -> Res {
    [memory_mb, vcores, gpus]
}

fn covers(room: Res, size: Res) -> bool {
    room.iter().zip(&size).all(|(have, need)| have >= need)
}

/// How many containers of `size` fit in `room`. A resource the container does
/// not use never limits it, so a size of all zeros fits without bound.
fn fits(room: Res, size: Res) -> u64 {
    // checked_div is None for a zero size: that resource sets no limit.
    room.iter()
        .zip(&size)
        .filter_map(|(&have, &need)| have.checked_div(need))
        .min()
        .unwrap_or(u64::MAX)
}

/// `used` after `count` more containers of `size` (saturating: only ever
/// compared, never handed back).
fn plus(used: Res, size: Res, count: u64) -> Res {
    std::array::from_fn(|r| used[r].saturating_add(size[r].saturating_mul(count)))
}

/// `room` after `count` containers of `size` moved in; `count` never exceeds
/// `fits(room, size)`, so nothing underflows.
fn minus(room: Res, size: Res, count: u64) -> Res {
    std::array::from_fn(|r| room[r] - size[r] * count)
}

fn max(a: Res, b: Res) -> Res {
    std::array::from_fn(|r| a[r].max(b[r]))
}

/// Dominant shares against the cluster's total.
#[derive(Debug, Clone, Copy)]
struct Cluster {
    total: Res,
}

impl Cluster {
    /// The largest of `used`'s fractions of the total, over the resources
    /// the cluster has at all.
    fn dominant_share(&self, used: Res) -> f64 {
        let mut share = 0.0_f64;
        for (&used, &total) in used.iter().zip(&self.total) {
            if total > 0 {
                share = share.max(used as f64 / total as f64);
            }
        }
        share
    }
}

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

/// A maximum-capacity as a fraction of the parent's guarantee: it may be above
/// 100 % (the host's plan follower uses that), and the parent's maximum caps
/// it anyway; NaN counts as 0.
fn maximum_fraction(percent: f64) -> f64 {
    if percent.is_nan() {
        0.0
    } else {
        percent.clamp(0.0, 1e6) / 100.0
    }
}

/// A configured percentage as a fraction; out-of-range values are clamped and
/// NaN counts as 0, so a malformed snapshot can only give a queue less.
fn fraction(percent: f64) -> f64 {
    if percent.is_nan() {
        0.0
    } else {
        percent.clamp(0.0, 100.0) / 100.0
    }
}

/// The most of a resource with cluster total `total` that a queue with
/// absolute maximum `absolute` (a fraction) may use. The tiny tolerance keeps
/// a product like 0.4 × 0.6 × total from rounding down past a whole unit.
fn limit(absolute: f64, total: u64) -> u64 {
    if absolute >= 1.0 {
        return total;
    }
    let exact = absolute * total as f64;
    ((exact + exact * 1e-9).floor() as u64).min(total)
}

/// The queue tree: which queues are leaves, their guarantees and maxima, and
/// their usage as it grows during the round.
struct Tree {
    cluster: Cluster,
    parent: Vec<usize>,
    leaf: Vec<bool>,
    /// Absolute capacity: the product of capacity/100 down from root.
    guarantee: Vec<f64>,
    used: Vec<Res>,
    /// How much more of each resource the queue's absolute maximum capacity
    /// (applied to the cluster total) leaves it; 0 for resources the cluster
    /// has none of, so only containers that need none of those fit.
    spare: Vec<Res>,
    /// Whether the queue is above its maximum already in some resource the
    /// cluster has: its dominant share is, and would stay, above it.
    over: Vec<bool>,
}

impl Tree {
    /// Reads the columns up to the shortest. A queue whose parent does not
    /// come before it (or is itself such a queue) is malformed: it is no leaf
    /// and no parent, so nothing is placed under it.
    fn new(queues: &Queues, cluster: Cluster) -> Tree {
        let len = shortest(&[
            queues.parent.len(),
            queues.capacity.len(),
            queues.maximum_capacity.len(),
            queues.used_memory_mb.len(),
            queues.used_vcores.len(),
            queues.used_gpus.len(),
        ]);
        let mut valid = vec![false; len];
        let mut parent = vec![0; len];
        let mut guarantee = vec![0.0; len];
        let mut maximum = vec![0.0; len];
        let mut has_children = vec![false; len];
        for q in 0..len {
            if q == 0 {
                // Root has everything, whatever its columns say.
                (valid[0], guarantee[0], maximum[0]) = (true, 1.0, 1.0);
                continue;
            }
            let p = queues.parent[q] as usize;
            if p < q && valid[p] {
                valid[q] = true;
                parent[q] = p;
                has_children[p] = true;
                guarantee[q] = guarantee[p] * fraction(queues.capacity[q]);
                // As the host's queue tree computes it: a share of the
                // parent's guarantee, never above the parent's own maximum.
                maximum[q] =
                    (guarantee[p] * maximum_fraction(queues.maximum_capacity[q])).min(maximum[p]);
            }
        }
        let used: Vec<Res> = (0..len)
            .map(|q| {
                res(
                    queues.used_memory_mb[q],
                    queues.used_vcores[q],
                    queues.used_gpus[q],
                )
            })
            .collect();
        let limits: Vec<Res> = maximum
            .iter()
            .map(|&m| cluster.total.map(|total| limit(m, total)))
            .collect();
        Tree {
            cluster,
            leaf: (0..len).map(|q| valid[q] && !has_children[q]).collect(),
            spare: (0..len)
                .map(|q| std::array::from_fn(|r| limits[q][r].saturating_sub(used[q][r])))
                .collect(),
            over: (0..len)
                .map(|q| (0..3).any(|r| cluster.total[r] > 0 && used[q][r] > limits[q][r]))
                .collect(),
            used,
            parent,
            guarantee,
        }
    }

    fn len(&self) -> usize {
        self.parent.len()
    }

    /// The leaf queue's place in the turn order had it used `used`.
    fn key(&self, queue: usize, used: Res) -> QueueKey {
        let share = self.cluster.dominant_share(used);
        let guarantee = self.guarantee[queue];
        if guarantee > 0.0 {
            (false, Share::new(share / guarantee))
        } else {
            (true, Share::new(share))
        }
    }

    /// Whether `queue` and each of its ancestors stay within their maxima
    /// with `count` more containers of `size`.
    fn allows(&self, queue: usize, size: Res, count: u64) -> bool {
        let mut q = queue;
        loop {
            let more = plus([0; 3], size, count);
            if self.over[q] || !covers(self.spare[q], more) {
                return false;
            }
            if q == 0 {
                return true;
            }
            q = self.parent[q];
        }
    }

    /// Counts `count` containers of `size`, which `allows`, for `queue` and
    /// its ancestors.
    fn add(&mut self, queue: usize, size: Res, count: u64) {
        let mut q = queue;
        loop {
            self.used[q] = plus(self.used[q], size, count);
            self.spare[q] = minus(self.spare[q], size, count);
            if q == 0 {
                break;
            }
            q = self.parent[q];
        }
    }
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
    room: Vec<Res>,
    /// Per container shape, the node its last search found: no node before
    /// it has room, and room only shrinks, so the next search starts there.
    /// It skips the full nodes before it, where scattered leftovers (memory
    /// on one node, vcores on another) would make a search backtrack.
    from: Vec<usize>,
}

impl FreeTree {
    /// The tree over the nodes' free `room`, for `shapes` container shapes.
    fn new(room: Vec<Res>, shapes: usize) -> FreeTree {
        let len = room.len();
        let leaves = len.next_power_of_two().max(1);
        let mut tree = vec![[0; 3]; 2 * leaves];
        tree[leaves..leaves + len].copy_from_slice(&room);
        for i in (1..leaves).rev() {
            tree[i] = max(tree[2 * i], tree[2 * i + 1]);
        }
        FreeTree {
            len,
            leaves,
            room: tree,
            from: vec![0; shapes],
        }
    }

    fn get(&self, node: usize) -> Res {
        self.room[self.leaves + node]
    }

    fn set(&mut self, node: usize, room: Res) {
        let mut i = self.leaves + node;
        self.room[i] = room;
        while i > 1 {
            i /= 2;
            let above = max(self.room[2 * i], self.room[2 * i + 1]);
            if self.room[i] == above {
                // Unchanged here, so unchanged all the way up (usually
                // another node still holds the maxima).
                break;
            }
            self.room[i] = above;
        }
    }

    /// The lowest-indexed node with room for one container of `size`, whose
    /// container shape (an index into `from`) is `shape`.
    fn first_fit(&mut self, size: Res, shape: usize) -> Option<usize> {
        let found = self.search(self.from[shape], size);
        self.from[shape] = found.unwrap_or(self.len);
        found
    }

    /// The lowest-indexed node from `from` on with room for `size`. Starts at
    /// that leaf, the usual answer when a node takes several containers in a
    /// row, and climbs only as far as the next subtree with room.
    fn search(&self, from: usize, size: Res) -> Option<usize> {
        if from >= self.len {
            return None;
        }
        let mut i = self.leaves + from;
        if covers(self.room[i], size) {
            return Some(from);
        }
        loop {
            // Up to the nearest left child whose right sibling may have room…
            while i % 2 == 1 || !covers(self.room[i + 1], size) {
                i /= 2;
                if i <= 1 {
                    return None;
                }
            }
            // …and into that sibling, which covers only nodes after `from`.
            i += 1;
            if let Some(node) = self.descend(i, size) {
                return Some(node);
            }
        }
    }

    /// The leftmost node with room for `size` under entry `i`.
    fn descend(&self, i: usize, size: Res) -> Option<usize> {
        if !covers(self.room[i], size) {
            return None;
        }
        if i >= self.leaves {
            // Padding leaves are empty, but an all-zero size would still "fit" them.
            let node = i - self.leaves;
            return (node < self.len).then_some(node);
        }
        self.descend(2 * i, size)
            .or_else(|| self.descend(2 * i + 1, size))
    }
}

/// Container sizes that found no node this round. Free room only shrinks
/// during a round, so a size that found none never will, nor will any size at
/// least as large in every resource. Remembering them makes a full cluster
/// cheap: a search that fails can visit every node.
#[derive(Default)]
struct Hopeless {
    /// The smallest sizes known not to fit: none covers another.
    minimal: Vec<Res>,
}

impl Hopeless {
    /// Enough for the few container shapes real clusters run; more would
    /// make each check slower than the search it saves.
    const LIMIT: usize = 64;

    fn rules_out(&self, size: Res) -> bool {
        self.minimal.iter().any(|&known| covers(size, known))
    }

    fn remember(&mut self, size: Res) {
        self.minimal.retain(|&known| !covers(known, size));
        if self.minimal.len() < Self::LIMIT {
            self.minimal.push(size);
        }
    }
}

/// One user's pending asks in one leaf queue, and that user's usage there.
struct Principal {
    queue: usize,
    user: u32,
    used: Res,
    /// Range of the sorted ask list: by app submission, then ask index.
    next: usize,
    end: usize,
}

/// How many containers in a row the chosen queue, user and ask take: the
/// largest `c` in `1..=cap` such that `still_first(j)` — still first, and
/// room under the maxima for one more — for every `j < c` containers already
/// taken. It holds for `j = 0` (they were chosen) and, shares and usage only
/// growing, turns false at most once as `j` grows, so a search finds where.
fn turn_length(cap: u64, still_first: impl Fn(u64) -> bool) -> u64 {
    // Galloping first: turns are often short (equal users take one container
    // each in turn), and then this costs a check or two, not log(cap).
    let (mut lo, mut step) = (0, 1);
    let mut hi = loop {
        let probe = lo + step;
        if probe >= cap - 1 {
            break cap - 1;
        }
        if !still_first(probe) {
            break probe - 1;
        }
        lo = probe;
        step *= 2;
    };
    // Binary search between the last probe that held and the first that failed.
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if still_first(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo + 1
}

fn shortest(lengths: &[usize]) -> usize {
    lengths.iter().copied().min().unwrap_or(0)
}

/// One scheduling round of DRF: see the module documentation.
///
/// Columns of unequal length are read up to the shortest, so a malformed
/// snapshot yields fewer placements rather than a trap. Asks of apps that are
/// unknown or in a queue that is not a leaf are not placed. Every placement
/// fits the room left by the ones before it, no ask gets more than its
/// pending count, and no queue passes its maximum capacity; consecutive
/// containers of one ask on one node are one entry.
pub fn schedule(nodes: &Nodes, queues: &Queues, apps: &Apps, asks: &Asks) -> Placements {
    let node_count = shortest(&[
        nodes.free_memory_mb.len(),
        nodes.free_vcores.len(),
        nodes.free_gpus.len(),
        nodes.capacity_memory_mb.len(),
        nodes.capacity_vcores.len(),
        nodes.capacity_gpus.len(),
    ]);
    let mut total = [0u64; 3];
    for n in 0..node_count {
        let capacity = res(
            nodes.capacity_memory_mb[n],
            nodes.capacity_vcores[n],
            nodes.capacity_gpus[n],
        );
        total = plus(total, capacity, 1);
    }
    let cluster = Cluster { total };
    let mut tree = Tree::new(queues, cluster);

    let app_count = shortest(&[
        apps.queue.len(),
        apps.user.len(),
        apps.submit_time_ms.len(),
        apps.used_memory_mb.len(),
        apps.used_vcores.len(),
        apps.used_gpus.len(),
    ]);
    let ask_count = shortest(&[
        asks.app.len(),
        asks.pending.len(),
        asks.memory_mb.len(),
        asks.vcores.len(),
        asks.gpus.len(),
    ]);
    let leaf_of = |app: usize| -> Option<usize> {
        let queue = *apps.queue.get(app)? as usize;
        (app < app_count && queue < tree.len() && tree.leaf[queue]).then_some(queue)
    };

    // The asks that can take part, grouped by queue and user, each user's in
    // the order they are served: earliest-submitted app first, asks in order.
    let mut candidates: Vec<(usize, u32, i64, usize, usize)> = (0..ask_count)
        .filter(|&ask| asks.pending[ask] > 0)
        .filter_map(|ask| {
            let app = asks.app[ask] as usize;
            let queue = leaf_of(app)?;
            Some((queue, apps.user[app], apps.submit_time_ms[app], app, ask))
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
                    used: [0; 3],
                    next: i,
                    end: i + 1,
                });
            }
        }
    }
    // Each ask with its size, and a number per distinct size (its shape) for
    // the node search to remember where that size last found room.
    let size_of = |ask: usize| res(asks.memory_mb[ask], asks.vcores[ask], asks.gpus[ask]);
    let mut shapes: Vec<Res> = candidates.iter().map(|c| size_of(c.4)).collect();
    shapes.sort_unstable();
    shapes.dedup();
    let order: Vec<(usize, Res, usize)> = candidates
        .iter()
        .map(|&(.., ask)| {
            let size = size_of(ask);
            (ask, size, shapes.binary_search(&size).unwrap())
        })
        .collect();
    let mut free = FreeTree::new(
        (0..node_count)
            .map(|n| {
                res(
                    nodes.free_memory_mb[n],
                    nodes.free_vcores[n],
                    nodes.free_gpus[n],
                )
            })
            .collect(),
        shapes.len(),
    );
    // A user's share in a queue counts all its apps there, pending or not.
    for app in 0..app_count {
        let key = (apps.queue[app] as usize, apps.user[app]);
        // Principals are sorted by queue and user, as the candidates were.
        if let Ok(slot) = principals.binary_search_by_key(&key, |p| (p.queue, p.user)) {
            let used = res(
                apps.used_memory_mb[app],
                apps.used_vcores[app],
                apps.used_gpus[app],
            );
            principals[slot].used = plus(principals[slot].used, used, 1);
        }
    }

    // The turn order: leaf queues, and the users inside each.
    let mut users: Vec<Heap<(Share, u32, usize)>> =
        (0..tree.len()).map(|_| Heap::default()).collect();
    for (slot, p) in principals.iter().enumerate() {
        users[p.queue].push((Share::new(cluster.dominant_share(p.used)), p.user, slot));
    }
    let mut turns: Heap<(QueueKey, usize)> = Heap::default();
    for (queue, users) in users.iter().enumerate() {
        if users.peek().is_some() {
            turns.push((tree.key(queue, tree.used[queue]), queue));
        }
    }

    let mut pending: Vec<u64> = asks.pending.iter().map(|&p| u64::from(p)).collect();
    let mut hopeless = Hopeless::default();
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
            if pending[ask] > 0 && !hopeless.rules_out(size) && tree.allows(queue, size, 1) {
                if let Some(node) = free.first_fit(size, shape) {
                    chosen = Some((ask, size, shape, node));
                    break;
                }
                hopeless.remember(size);
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
        let count = turn_length(pending[ask], |j| {
            next_queue.is_none_or(|next| (tree.key(queue, plus(queue_used, size, j)), queue) < next)
                && next_user.is_none_or(|next| {
                    (
                        Share::new(cluster.dominant_share(plus(user_used, size, j))),
                        user,
                    ) < next
                })
                && tree.allows(queue, size, j + 1)
        });

        // First fit, each node filled as far as the turn goes.
        let mut left = count;
        let mut node = Some(first_node);
        while left > 0 {
            let Some(n) = node else {
                hopeless.remember(size);
                break;
            };
            let room = free.get(n);
            // The node was found with room for one; only more needs dividing.
            let here = if left == 1 {
                1
            } else {
                fits(room, size).min(left)
            };
            free.set(n, minus(room, size, here));
            placements.push(ask, n, here);
            left -= here;
            if left > 0 {
                node = free.first_fit(size, shape);
            }
        }
        let placed = count - left;
        pending[ask] -= placed;
        principal.used = plus(principal.used, size, placed);
        tree.add(queue, size, placed);

        // Both only grew: they sink to their new places.
        users[queue].replace_top((
            Share::new(cluster.dominant_share(principal.used)),
            user,
            slot,
        ));
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
