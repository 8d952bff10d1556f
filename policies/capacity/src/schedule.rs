//! One scheduling round.
//!
//! The rules, one container at a time: from the root, at every level take
//! the most under-served child (used share ÷ guaranteed share, ties to the
//! lower index) whose subtree can take a container, down to a leaf; there take
//! the first application in the leaf's order that has a placeable ask, and
//! the first placeable ask of that application (index order). An ask is
//! placeable when one more container keeps every queue from the leaf to the
//! root within its absolute maximum, keeps the user within the user limit,
//! and some node has room; it goes on the lowest-indexed such node.
//!
//! Going one container at a time would cost a descent per container, so a
//! step places a batch: as many containers of the chosen ask on the chosen
//! node as the rules would have put there in a row, i.e. while the ask is
//! pending, the node has room, every queue on the path stays within its
//! maximum *and stays the most under-served at its level* (against the next
//! sibling still in the running), the application stays first in a fair leaf,
//! and the user stays within the limit. Each of those is monotone in the batch
//! size, so a galloping binary search finds it. Each parent ranks its
//! children in a heap and the nodes' room is in a max tree, so a step costs
//! about `depth × log(children) + log(nodes)` plus the applications skipped
//! in the leaf.
//!
//! The batches place exactly what one container at a time would while user
//! limits stay fixed during the round (minimum user limit 100 %, factor at
//! most 1: the defaults); when they grow, a batch does not look again at
//! other users its leaf skipped for their limit until the next step.
//!
//! Queues, applications and asks found unable to take anything are dropped
//! for the rest of the round: usage only grows and room only shrinks, so what
//! cannot be placed now cannot later, except what a user limit blocks, which
//! only an allocation in the same leaf can free, and such asks are kept.

use std::collections::BTreeSet;

use weft_policy::resources::EPSILON;
use weft_policy::scheduling::wit::LocalityLevel;
use weft_policy::scheduling::{
    FreeNodes, NoRoom, Placements, Snapshot, longest_run, schedule_keeping_rules,
};
use weft_policy::{Cluster, Resources};

use crate::cluster::{QueueKey, Tree, ordered, queue_key, user_limit};
use crate::ranking::Ranking;

/// How a leaf orders its applications, as a tuple compared lowest first.
/// FIFO: `(inverted priority, submit time, app)`; fair: `(used share as
/// ordered bits, submit time, app)`.
type AppKey = (u64, i64, u32);

/// One scheduling round: see the module documentation and `README.md`.
///
/// Every placement fits the room left by those before it and no ask gets
/// more than it is pending.
pub fn schedule(snapshot: &Snapshot) -> Placements {
    // What the host would refuse goes: containers against their ask's
    // constraint, gangs in part (the round run again without them, so their
    // room goes to the others). Partitions are kept by construction: a
    // round's asks are for its nodes.
    schedule_keeping_rules(snapshot, |snapshot| {
        let mut round = Round::new(snapshot);
        while let Some(choice) = round.next_choice() {
            round.place(choice);
        }
        round.placements
    })
}

/// What a step found: an ask that can take a container on `node`.
struct Choice {
    leaf: usize,
    app: usize,
    /// Position of the ask in `Round::order`.
    position: usize,
    node: usize,
    /// In a fair leaf, the application right after `app` in the leaf's order.
    next_app: Option<AppKey>,
}

enum AppState {
    /// Its ask at `position` fits on `node`.
    Place { position: usize, node: usize },
    /// Only the user limit stands in the way, for now.
    Blocked,
    /// Nothing of it can be placed this round.
    Done,
}

struct Round<'a> {
    snapshot: &'a Snapshot,
    cluster: Cluster,
    tree: Tree<'a>,
    /// Per queue: the most of each resource within its absolute maximum.
    ceiling: Vec<Resources>,
    /// Per queue: its current ordering key.
    key: Vec<QueueKey>,
    /// Per parent: its children that may still take a container, ranked.
    contenders: Ranking,
    /// True once the root can take nothing more.
    finished: bool,
    /// Per leaf: its applications that may still take a container, in order.
    apps_of: Vec<BTreeSet<AppKey>>,
    /// Per leaf: users with containers still pending (the user limit's
    /// active users).
    active_users: Vec<u64>,

    /// Per app.
    app_key: Vec<AppKey>,
    app_used: Vec<Resources>,
    app_user: Vec<usize>,
    app_submit: Vec<i64>,
    /// Per app: its asks are `order[start..end]`.
    app_asks: Vec<(usize, usize)>,

    /// Asks grouped by app, in index order within an app.
    order: Vec<usize>,
    /// Over positions in `order`: `skip[p] == p` while the ask at `p` is live,
    /// else a later position to look at (path-halving, as in union-find).
    skip: Vec<usize>,
    pending: Vec<u32>,
    size: Vec<Resources>,

    /// Per (leaf, user): used resources and containers pending.
    user_used: Vec<Resources>,
    user_pending: Vec<u64>,

    nodes: FreeNodes,
    no_room: NoRoom,
    /// The current descent: each queue below the root with its runner-up.
    path: Vec<(usize, Option<QueueKey>)>,
    /// Scratch for applications found done in a leaf.
    done_apps: Vec<AppKey>,
    placements: Placements,
}

impl<'a> Round<'a> {
    fn new(snapshot: &'a Snapshot) -> Round<'a> {
        let cluster = snapshot.nodes().cluster();
        let tree = Tree::of(snapshot.queues());
        let queue_count = tree.len();
        let node_count = snapshot.nodes().len();
        let free = FreeNodes::new(snapshot.nodes().free_rooms());

        // Every app is in a leaf: the SDK checked the snapshot.
        let apps = snapshot.apps();
        let app_count = apps.len();
        let app_used: Vec<Resources> = (0..app_count).map(|a| apps.used(a)).collect();

        // One user entry per (leaf, user) with its usage in that leaf:
        // apps sorted by (leaf, user), each run of equals one entry. (A sort,
        // not a hash map: no random seed, the same entries every time.)
        let mut by_user: Vec<(usize, u32, usize)> = (0..app_count)
            .map(|a| (apps.queue(a), apps.user[a], a))
            .collect();
        by_user.sort_unstable();
        let mut app_user = vec![usize::MAX; app_count];
        let mut user_used: Vec<Resources> = Vec::new();
        let mut user_leaf: Vec<usize> = Vec::new();
        for (i, &(leaf, user, a)) in by_user.iter().enumerate() {
            if i == 0 || (by_user[i - 1].0, by_user[i - 1].1) != (leaf, user) {
                user_used.push(Resources::ZERO);
                user_leaf.push(leaf);
            }
            let u = user_used.len() - 1;
            app_user[a] = u;
            user_used[u] = user_used[u].plus(app_used[a]);
        }
        let mut user_pending = vec![0u64; user_used.len()];

        let asks = snapshot.asks();
        let ask_count = asks.len();
        let size: Vec<Resources> = (0..ask_count).map(|k| asks.size(k)).collect();
        let mut order: Vec<usize> = (0..ask_count).filter(|&k| asks.pending[k] > 0).collect();
        // Stable and linear when asks come grouped by app already.
        order.sort_by_key(|&k| asks.app[k]);
        let mut app_asks = vec![(0, 0); app_count];
        let mut start = 0;
        while start < order.len() {
            let a = asks.app[order[start]] as usize;
            let mut end = start;
            while end < order.len() && asks.app[order[end]] as usize == a {
                user_pending[app_user[a]] += u64::from(asks.pending[order[end]]);
                end += 1;
            }
            app_asks[a] = (start, end);
            start = end;
        }
        let skip = (0..=order.len()).collect();

        let mut active_users = vec![0u64; queue_count];
        for (u, &leaf) in user_leaf.iter().enumerate() {
            if user_pending[u] > 0 {
                active_users[leaf] += 1;
            }
        }

        let mut round = Round {
            ceiling: (0..queue_count)
                .map(|q| cluster.limit(tree.maximum(q)))
                .collect(),
            key: (0..queue_count)
                .map(|q| queue_key(&cluster, tree.guarantee(q), tree.used[q], q))
                .collect(),
            contenders: Ranking::new(queue_count),
            finished: true,
            apps_of: vec![BTreeSet::new(); queue_count],
            active_users,
            app_key: vec![(0, 0, 0); app_count],
            app_used,
            app_user,
            app_submit: apps.submit_time_ms.clone(),
            app_asks,
            order,
            skip,
            pending: asks.pending.clone(),
            size,
            user_used,
            user_pending,
            nodes: free,
            no_room: NoRoom::default(),
            path: Vec::new(),
            done_apps: Vec::new(),
            placements: Placements::default(),
            snapshot,
            cluster,
            tree,
        };

        // Leaves with something pending contend, and so do their ancestors.
        let mut demand = vec![false; queue_count];
        for a in 0..app_count {
            let (start, end) = round.app_asks[a];
            if start == end {
                continue;
            }
            let leaf = apps.queue(a);
            let key = if round.tree.queues.is_fair(leaf) {
                round.fair_key(a, round.app_used[a])
            } else {
                // Higher priority first: invert it into an ascending key.
                let inverted = (i64::from(i32::MAX) - i64::from(apps.priority[a])) as u64;
                (inverted, round.app_submit[a], a as u32)
            };
            round.app_key[a] = key;
            round.apps_of[leaf].insert(key);
            demand[leaf] = true;
        }
        if node_count > 0 {
            for q in (1..queue_count).rev() {
                if demand[q] {
                    let parent = round.tree.parent(q);
                    round.contenders.insert(parent, round.key[q]);
                    demand[parent] = true;
                }
            }
            round.finished = queue_count == 0 || !demand[0];
        }
        round
    }

    fn fair_key(&self, app: usize, used: Resources) -> AppKey {
        (
            ordered(self.cluster.share(used)),
            self.app_submit[app],
            app as u32,
        )
    }

    /// Descends to the next ask to place, dropping what can take nothing.
    fn next_choice(&mut self) -> Option<Choice> {
        'descend: loop {
            if self.finished {
                return None;
            }
            self.path.clear();
            let mut q = 0;
            while !self.tree.is_leaf(q) {
                let Some(first) = self.contenders.leader(q) else {
                    self.drop_queue(q);
                    continue 'descend;
                };
                let runner_up = self.contenders.runner_up(q);
                q = first.queue();
                self.path.push((q, runner_up));
            }
            if let Some(choice) = self.choose_in_leaf(q) {
                return Some(choice);
            }
            self.drop_queue(q);
        }
    }

    /// Takes `q` out of the running, and its parent too when it was the
    /// parent's last contender.
    fn drop_queue(&mut self, mut q: usize) {
        loop {
            if q == 0 {
                self.finished = true;
                return;
            }
            let parent = self.tree.parent(q);
            self.contenders.remove(parent, q);
            if !self.contenders.is_empty(parent) {
                return;
            }
            q = parent;
        }
    }

    /// The first application of the leaf, in its order, with a placeable ask.
    fn choose_in_leaf(&mut self, leaf: usize) -> Option<Choice> {
        let mut apps = std::mem::take(&mut self.apps_of[leaf]);
        let mut done = std::mem::take(&mut self.done_apps);
        let mut found = None;
        let mut iter = apps.iter();
        while let Some(&key) = iter.next() {
            let app = key.2 as usize;
            match self.app_state(leaf, app) {
                AppState::Place { position, node } => {
                    let next_app = if self.tree.queues.is_fair(leaf) {
                        iter.next().copied()
                    } else {
                        // FIFO order is fixed: no later app overtakes this one.
                        None
                    };
                    found = Some(Choice {
                        leaf,
                        app,
                        position,
                        node,
                        next_app,
                    });
                    break;
                }
                AppState::Blocked => {}
                AppState::Done => done.push(key),
            }
        }
        for key in done.drain(..) {
            apps.remove(&key);
        }
        self.apps_of[leaf] = apps;
        self.done_apps = done;
        found
    }

    /// The live position at or after `p` in `order` (`order.len()` if none).
    fn live_from(&mut self, mut p: usize) -> usize {
        while self.skip[p] != p {
            let next = self.skip[self.skip[p]];
            self.skip[p] = next;
            p = next;
        }
        p
    }

    fn app_state(&mut self, leaf: usize, app: usize) -> AppState {
        let (start, end) = self.app_asks[app];
        let user = self.app_user[app];
        let mut blocked = false;
        let mut p = self.live_from(start);
        while p < end {
            let size = self.size[self.order[p]];
            if self.no_room.rules_out(size) || !self.within_maximum(leaf, size) {
                // Permanently: room only shrinks, usage only grows.
                self.skip[p] = p + 1;
            } else if !self.within_user_limit(leaf, user, size, 0) {
                blocked = true;
            } else if let Some(node) = self.nodes.first_fit(size) {
                match self.node_for(self.order[p], size, node) {
                    Some(node) => return AppState::Place { position: p, node },
                    // Not where it may go yet: it waits for the delay.
                    None => self.skip[p] = p + 1,
                }
            } else {
                self.no_room.remember(size);
                self.skip[p] = p + 1;
            }
            p = self.live_from(p + 1);
        }
        if blocked {
            AppState::Blocked
        } else {
            AppState::Done
        }
    }

    /// Where ask `k` goes, `first` being the first node with room for
    /// `size`: delay scheduling as YARN's Capacity Scheduler does it — its
    /// preferred nodes first, then (once the host's delay lets it go
    /// rack-local, after `node-locality-delay` missed opportunities) the
    /// nodes of its racks and of its preferred nodes' racks, then (once
    /// off-switch, after `rack-locality-additional-delay` more) any. None:
    /// nowhere at its level now.
    fn node_for(&self, k: usize, size: Resources, first: usize) -> Option<usize> {
        let snapshot = self.snapshot;
        let (preferred, racks) = (snapshot.ask_nodes(k), snapshot.ask_racks(k));
        if preferred.is_empty() && racks.is_empty() {
            return Some(first);
        }
        let fits = |n: usize| self.nodes.room(n).fits(size) >= 1;
        if let Some(&n) = preferred.iter().find(|&&n| fits(n as usize)) {
            return Some(n as usize);
        }
        let level = snapshot.asks().locality_level(k);
        if level == LocalityLevel::NodeLocal {
            return None;
        }
        let nodes = snapshot.nodes();
        let on_a_rack_of_its = |n: usize| {
            let rack = nodes.rack(n);
            racks.contains(&(rack as u32))
                || preferred.iter().any(|&p| nodes.rack(p as usize) == rack)
        };
        if let Some(n) = (0..nodes.len()).find(|&n| on_a_rack_of_its(n) && fits(n)) {
            return Some(n);
        }
        (level == LocalityLevel::OffSwitch).then_some(first)
    }

    /// Whether one more container of `size` keeps the leaf and every
    /// ancestor within its absolute maximum.
    fn within_maximum(&self, leaf: usize, size: Resources) -> bool {
        self.tree
            .path(leaf)
            .all(|q| self.ceiling[q].covers(self.tree.used[q].plus(size)))
    }

    /// How many containers of `size` fit within the absolute maximum of the
    /// leaf and of every ancestor.
    fn headroom(&self, leaf: usize, size: Resources) -> u64 {
        self.tree
            .path(leaf)
            .map(|q| self.ceiling[q].minus(self.tree.used[q]).fits(size))
            .min()
            .unwrap_or(0)
    }

    /// Whether the user may have one more container of `size` after `placed`
    /// more of the same in this step: `user used + size ≤ user limit`, or
    /// the user holds nothing in the leaf yet.
    ///
    /// The exception is YARN's: its limit is rounded up to the minimum
    /// allocation and compared with what the user holds before the
    /// container, so a limit below one container slows a user to one, never
    /// stops it. (Without it a queue whose guarantee × user-limit-factor is
    /// smaller than its users' containers would be starved for good, and
    /// reclaim would take from others for it in vain.)
    fn within_user_limit(&self, leaf: usize, user: usize, size: Resources, placed: u64) -> bool {
        if placed == 0 && self.user_used[user].is_zero() {
            return true;
        }
        let with_ask = size.times(placed + 1);
        let limit = user_limit(
            self.tree.guarantee(leaf),
            self.tree.maximum(leaf),
            self.tree.queues.minimum_user_limit(leaf),
            self.tree.user_limit_factor(leaf),
            self.cluster.share(self.tree.used[leaf].plus(with_ask)),
            self.active_users[leaf],
        );
        self.cluster.share(self.user_used[user].plus(with_ask)) <= limit + EPSILON
    }

    /// Places the batch `choice` starts and updates everything it changes.
    fn place(&mut self, choice: Choice) {
        let Choice {
            leaf,
            app,
            position,
            node,
            next_app,
        } = choice;
        let ask = self.order[position];
        let size = self.size[ask];
        let user = self.app_user[app];

        // The cheap bounds first: in a busy round the ordering often allows
        // one container only, and then the divisions below are not needed.
        let mut count = u64::from(self.pending[ask]);
        for level in 0..self.path.len() {
            let (q, runner_up) = self.path[level];
            if let Some(runner_up) = runner_up {
                let (guarantee, used) = (self.tree.guarantee(q), self.tree.used[q]);
                count = longest_run(count, |j| {
                    queue_key(&self.cluster, guarantee, used.plus(size.times(j)), q) < runner_up
                });
            }
        }
        if let Some(next_app) = next_app {
            let used = self.app_used[app];
            count = longest_run(count, |j| {
                self.fair_key(app, used.plus(size.times(j))) < next_app
            });
        }
        if count > 1 {
            count = count
                .min(self.nodes.room(node).fits(size))
                .min(self.headroom(leaf, size));
        }
        count = longest_run(count, |j| self.within_user_limit(leaf, user, size, j));
        debug_assert!(count >= 1, "a choice always takes one container");
        // At most the ask's pending count, a u32.
        let count = count as u32;
        let added = size.times(u64::from(count));

        self.nodes.set(node, self.nodes.room(node).minus(added));
        let mut q = leaf;
        loop {
            self.tree.used[q] = self.tree.used[q].plus(added);
            if q == 0 {
                break;
            }
            let parent = self.tree.parent(q);
            let key = queue_key(&self.cluster, self.tree.guarantee(q), self.tree.used[q], q);
            if key != self.key[q] {
                self.contenders.update(parent, key);
                self.key[q] = key;
            }
            q = parent;
        }
        self.app_used[app] = self.app_used[app].plus(added);
        if self.tree.queues.is_fair(leaf) {
            let key = self.fair_key(app, self.app_used[app]);
            if key != self.app_key[app] {
                self.apps_of[leaf].remove(&self.app_key[app]);
                self.apps_of[leaf].insert(key);
                self.app_key[app] = key;
            }
        }
        self.user_used[user] = self.user_used[user].plus(added);
        self.user_pending[user] -= u64::from(count);
        if self.user_pending[user] == 0 {
            self.active_users[leaf] -= 1;
        }
        self.pending[ask] -= count;
        if self.pending[ask] == 0 {
            self.skip[position] = position + 1;
        }
        self.placements.push(ask, node, count);
    }
}

#[cfg(test)]
mod tests;
