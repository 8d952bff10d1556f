//! One scheduling round: a columnar snapshot of the cluster goes to the
//! scheduling policy in one call; the placements that come back are checked
//! against that snapshot, then applied to the cluster.
//!
//! The plan follower lives here too, as YARN's does it: in the snapshot, a
//! reservable leaf with active reservations that have apps becomes a parent
//! with one child per such reservation — guaranteed, and capped at, what the
//! reservation holds now — and a default child for its other apps with the
//! rest, which may still grow to the queue's own maximum and whose users keep
//! the queue's user limit. Apps of a reservation go in its child, so the
//! policy serves them ahead of the queue's other apps; apps of a reservation
//! not yet started ask for nothing.
//!
//! Node labels (YARN's partitions, `cluster/labels.rs`): a cluster with
//! labels is scheduled one partition at a time — each round's snapshot has
//! only that partition's nodes, the queues' shares of it (a queue that may
//! not use it has none), what apps hold there, and the asks for it — then
//! each non-exclusive label lends its idle room to the asks for the default
//! partition (YARN's "ignore exclusivity" allocation), shared out as the
//! default partition is — each queue's own capacity and maximum, of the
//! lent nodes — but with no user limit below the queue's maximum.
//! Reservations hold the default partition only.
//!
//! Placement constraints (`cluster/constraints.rs`) and locality
//! (`cluster/locality.rs`): an ask with a constraint, or with locality not
//! yet relaxed to anywhere, is left out of those rounds and placed in a
//! round of its own, whose snapshot holds its partition with room only on
//! the nodes its constraint and its locality's level allow now (so its
//! queue's limits are of the whole partition; before the pass, asks with
//! locality still waiting count the opportunities missed since they were
//! last counted, so the pass uses the level their wait allows); what the
//! policy places there is cut, container by container, to
//! what the constraint allows (each placed container counting), and
//! `Cluster::allocate` checks it again. At most
//! [`MAX_CONSTRAINED_ROUNDS`] such rounds a pass, the asks taking turns
//! across passes.

mod context;
pub mod diagnostics;
pub mod reclaim;

use std::collections::HashMap;

use crate::cluster::{Allocation, Cluster, ClusterError, Placement};
use crate::policy::{
    Apps, Asks, CallError, Containers, Nodes, Placements, Queues, SchedulingSlot, Snapshot,
};
use crate::queues::Ordering;
pub use crate::reservation::ActiveReservation;
pub(crate) use context::policy_execution_type;

/// The scheduling policy as a round calls it: the runtime's
/// [`SchedulingSlot`] (WASM, with fallback, every answer checked against the
/// snapshot), or a native double in tests.
pub trait Scheduling {
    /// Where pending containers go.
    fn schedule(&self, snapshot: &Snapshot) -> Result<Placements, CallError>;
    /// Which of `running` to take back.
    fn preempt(&self, snapshot: &Snapshot, running: &Containers) -> Result<Vec<u32>, CallError>;
}

impl Scheduling for SchedulingSlot {
    fn schedule(&self, snapshot: &Snapshot) -> Result<Placements, CallError> {
        SchedulingSlot::schedule(self, snapshot)
    }

    fn preempt(&self, snapshot: &Snapshot, running: &Containers) -> Result<Vec<u32>, CallError> {
        SchedulingSlot::preempt(self, snapshot, running)
    }
}

/// Why a scheduling round placed nothing.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    /// The policy's `schedule` call failed, or its answer was refused.
    #[error("the scheduling policy failed: {0}")]
    Policy(#[from] CallError),
    /// The cluster refused to allocate the placements.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
}

/// Projects whose pending containers are not placed now — their credits
/// ran out (`weft.quota.budget.enforce`): their apps' asks stay out of the
/// snapshot, and their waiting is no demand to reclaim for.
pub type HeldProjects = std::collections::HashSet<String>;

/// What one round schedules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Every node and every ask: the cluster has no labels.
    Whole,
    /// The nodes of one partition ("" the default one), and the asks for it.
    Partition(String),
    /// The nodes of a non-exclusive label, and the asks for the default
    /// partition, which may borrow its idle room.
    Lending(String),
    /// The opportunistic asks for one partition ("" the default one) still
    /// pending after its other rounds, and its agents' nodes with the room
    /// their queues have left ([`crate::cluster::Node::queue_room`]).
    Queued(String),
    /// One ask with a placement constraint (app, ask), in its partition,
    /// and the nodes (positions in the cluster, ascending) it may use now.
    Constrained {
        /// Its app's index in the cluster.
        app: usize,
        /// The ask's index in the app.
        ask: usize,
        /// Its partition.
        partition: String,
        /// Where it may go now.
        nodes: Vec<usize>,
    },
}

impl Part {
    /// The rounds a scheduling pass makes, in order: the whole cluster when
    /// it has no labels; else the default partition, each label, then each
    /// non-exclusive label lending (its own asks first, as YARN serves them).
    /// Partitions without nodes, or without asks for them, get no round
    /// (nor does lending without asks for the default partition).
    pub fn all(cluster: &Cluster) -> Vec<Part> {
        let labels = cluster.node_labels();
        if labels.is_empty() {
            return vec![Part::Whole];
        }
        let with_nodes: std::collections::HashSet<&str> =
            cluster.nodes().map(|n| n.partition.as_str()).collect();
        let mut asked: std::collections::HashSet<&str> = std::collections::HashSet::new();
        for app in cluster.active_apps().map(|i| &cluster.apps()[i]) {
            for ask in app.asks.iter().filter(|a| a.pending > 0 && !restricted(a)) {
                asked.insert(&ask.partition);
            }
        }
        let mut parts = Vec::new();
        if asked.contains("") && with_nodes.contains("") {
            parts.push(Part::Partition(String::new()));
        }
        for (label, _) in labels.iter() {
            if asked.contains(label) && with_nodes.contains(label) {
                parts.push(Part::Partition(label.into()));
            }
        }
        if asked.contains("") {
            for (label, exclusive) in labels.iter() {
                if !exclusive && with_nodes.contains(label) {
                    parts.push(Part::Lending(label.into()));
                }
            }
        }
        parts
    }

    /// The queueing rounds: one per partition with nodes and opportunistic
    /// asks pending, when agents' nodes may queue at all.
    fn queued(cluster: &Cluster) -> Vec<Part> {
        if cluster.opportunistic_queue() == 0 {
            return Vec::new();
        }
        let mut asked: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
        for app in cluster.active_apps().map(|i| &cluster.apps()[i]) {
            for ask in app
                .asks
                .iter()
                .filter(|a| a.pending > 0 && queues_at_agents(a))
            {
                asked.insert(&ask.partition);
            }
        }
        if asked.is_empty() {
            return Vec::new(); // the common case: no look at the nodes
        }
        let with_nodes: std::collections::HashSet<&str> = cluster
            .nodes()
            .filter(|n| n.kind == crate::cluster::NodeKind::Remote)
            .map(|n| n.partition.as_str())
            .collect();
        asked
            .into_iter()
            .filter(|label| with_nodes.contains(label))
            .map(|label| Part::Queued(label.to_string()))
            .collect()
    }

    /// The rounds of the asks with placement constraints (see the module
    /// documentation), at most [`MAX_CONSTRAINED_ROUNDS`]; the projects in
    /// `held` wait.
    fn constrained(cluster: &mut Cluster, held: &HeldProjects) -> Vec<Part> {
        let mut candidates = Vec::new();
        for app_index in cluster.active_apps() {
            let app = &cluster.apps()[app_index];
            if held.contains(&app.project) {
                continue;
            }
            for (ask_index, ask) in app.asks.iter().enumerate() {
                if ask.pending > 0 && restricted(ask) {
                    candidates.push((app_index, ask_index));
                }
            }
        }
        if candidates.is_empty() {
            return Vec::new();
        }
        // Taken in turn from where the last pass stopped, so a few asks
        // that never place cannot keep the others' turns; at most
        // MAX_RESTRICTED_EXAMINED looked at a pass (each costs a walk of
        // the containers).
        let start = cluster.restricted_turn() % candidates.len();
        let mut parts = Vec::new();
        let mut examined = 0;
        while examined < candidates.len().min(MAX_RESTRICTED_EXAMINED)
            && parts.len() < MAX_CONSTRAINED_ROUNDS
        {
            let (app_index, ask_index) = candidates[(start + examined) % candidates.len()];
            examined += 1;
            let Some(nodes) = cluster.restricted_nodes(app_index, ask_index) else {
                continue;
            };
            if nodes.is_empty() {
                continue; // nowhere now: its reason says so
            }
            let partition = cluster.apps()[app_index].asks[ask_index].partition.clone();
            parts.push(Part::Constrained {
                app: app_index,
                ask: ask_index,
                partition,
                nodes,
            });
        }
        cluster.set_restricted_turn(start + examined);
        parts
    }

    /// Whether the node at `position` may take containers in this part
    /// (it is in the snapshot with no room otherwise).
    fn offers(&self, position: usize) -> bool {
        match self {
            Part::Constrained { nodes, .. } => nodes.binary_search(&position).is_ok(),
            _ => true,
        }
    }

    /// Whether a node in `partition` is in this part.
    fn has_node(&self, partition: &str) -> bool {
        match self {
            Part::Whole => true,
            Part::Partition(label) | Part::Lending(label) | Part::Queued(label) => {
                label == partition
            }
            // Its whole partition, so its queue's use and limits are of
            // all of it; the nodes it may not use show no room.
            Part::Constrained {
                partition: label, ..
            } => label == partition,
        }
    }

    /// Whether app `app`'s ask `index` is scheduled in this part.
    fn has_ask(&self, app: usize, index: usize, ask: &crate::cluster::Ask) -> bool {
        if let Part::Constrained { app: a, ask: i, .. } = self {
            return (*a, *i) == (app, index);
        }
        // Constrained asks have rounds of their own.
        !restricted(ask)
            && match self {
                Part::Whole => true,
                Part::Partition(label) => *label == ask.partition,
                Part::Lending(_) => ask.partition.is_empty(),
                Part::Queued(label) => *label == ask.partition && queues_at_agents(ask),
                Part::Constrained { .. } => false,
            }
    }

    /// The partition whose queue shares apply, and whether it is lent.
    fn shares(&self) -> Option<(&str, bool)> {
        match self {
            Part::Whole => None,
            Part::Partition(label) | Part::Queued(label) => Some((label, false)),
            Part::Lending(label) => Some((label, true)),
            Part::Constrained { partition, .. } => Some((partition, false)),
        }
    }

    /// Whether the plan follower's reservations apply (the default partition).
    fn has_reservations(&self) -> bool {
        self.shares()
            .is_none_or(|(label, lending)| label.is_empty() && !lending)
    }
}

/// A snapshot and how its ask and app indices map back to the cluster.
#[derive(Debug)]
pub struct Round {
    /// What the scheduling policy is given: nodes, queues (with the plan
    /// follower's children), apps and asks, as columns.
    pub snapshot: Snapshot,
    asks: Vec<(usize, usize)>,
    /// Cluster app index → snapshot app index.
    apps: HashMap<usize, u32>,
    /// Snapshot node index → the node's position in the cluster; None
    /// when the snapshot has every node (the same positions).
    nodes: Option<Vec<usize>>,
}

impl Round {
    /// Snapshots the nodes and every active app; `reservations` are those
    /// active now (see the module documentation); the asks of `held`
    /// projects' apps are left out.
    pub fn new(
        cluster: &Cluster,
        now: u64,
        reservations: &[ActiveReservation],
        held: &HeldProjects,
    ) -> Round {
        Round::of_part(cluster, now, reservations, held, &Part::Whole)
    }

    /// As [`Round::new`], of `part` of the cluster (see the module
    /// documentation).
    pub fn of_part(
        cluster: &Cluster,
        now: u64,
        reservations: &[ActiveReservation],
        held: &HeldProjects,
        part: &Part,
    ) -> Round {
        let reservations = if part.has_reservations() {
            reservations
        } else {
            &[]
        };
        let mut nodes = Nodes::empty();
        let whole = *part == Part::Whole;
        let queueing = matches!(part, Part::Queued(_));
        let mut node_positions = Vec::new();
        let mut round_nodes = Vec::new();
        for (position, node) in cluster.nodes().enumerate() {
            if !whole {
                if !part.has_node(&node.partition) {
                    continue;
                }
                node_positions.push(position);
            }
            round_nodes.push(node);
            let free = if let Part::Queued(_) = part {
                cluster.queue_room_of(node)
            } else if part.offers(position) {
                node.free()
            } else {
                crate::resources::Resources::ZERO
            };
            nodes.free_memory_mb.push(free.memory_mb);
            nodes.free_vcores.push(free.vcores.into());
            nodes.free_gpus.push(free.gpus.into());
            // A queueing round's nodes hold their capacity running and as
            // much again waiting (see `for_queueing`).
            let capacity = if queueing {
                node.usable_capacity() + node.usable_capacity()
            } else {
                node.usable_capacity()
            };
            nodes.capacity_memory_mb.push(capacity.memory_mb);
            nodes.capacity_vcores.push(capacity.vcores.into());
            nodes.capacity_gpus.push(capacity.gpus.into());
        }
        let tree = cluster.queues().queues();
        let mut queues = Queues {
            path: tree.iter().map(|q| q.path.clone()).collect(),
            parent: tree.iter().map(|q| q.parent.unwrap_or(0) as u32).collect(),
            capacity: tree.iter().map(|q| q.capacity).collect(),
            maximum_capacity: tree.iter().map(|q| q.maximum_capacity).collect(),
            minimum_user_limit_percent: tree.iter().map(|q| q.minimum_user_limit_percent).collect(),
            user_limit_factor: tree.iter().map(|q| Some(q.user_limit_factor)).collect(),
            fair: tree
                .iter()
                .map(|q| q.ordering_policy == Ordering::Fair)
                .collect(),
            used_memory_mb: vec![],
            used_vcores: vec![],
            used_gpus: vec![],
            ..Queues::empty()
        };
        partition_shares(cluster, part, &mut queues);
        if queueing {
            for_queueing(&mut queues);
        }
        // What each app holds in this part: all it holds, unless the
        // cluster is partitioned.
        let used_here = (!whole).then(|| used_on(cluster, &node_positions));
        let used_of = |app_index: usize, app: &crate::cluster::App| match &used_here {
            None => app.used,
            Some(used) => used.get(&app_index).copied().unwrap_or_default(),
        };
        let plan_queues = PlanQueues::add(cluster, reservations, &mut queues);
        let queue_count = queues.parent.len();
        queues.used_memory_mb = vec![0; queue_count];
        queues.used_vcores = vec![0; queue_count];
        queues.used_gpus = vec![0; queue_count];
        // A queue's use is its apps' plus, for a parent, its children's.
        for app_index in cluster.active_apps() {
            let app = &cluster.apps()[app_index];
            let used = used_of(app_index, app);
            let mut queue = plan_queues.queue_of(app).0;
            loop {
                queues.used_memory_mb[queue] += used.memory_mb;
                queues.used_vcores[queue] += u64::from(used.vcores);
                queues.used_gpus[queue] += u64::from(used.gpus);
                if queue == 0 {
                    break;
                }
                queue = queues.parent[queue] as usize;
            }
        }
        let mut apps = Apps::empty();
        let mut asks = Asks::empty();
        let mut app_origin = Vec::new();
        let mut ask_origin = Vec::new();
        let mut app_positions = HashMap::new();
        let mut users: HashMap<&str, u32> = HashMap::new();
        for app_index in cluster.active_apps() {
            // Every active app, pending or not: its use counts toward its
            // user's and it may hold containers to reclaim.
            let app = &cluster.apps()[app_index];
            let (queue, may_ask) = plan_queues.queue_of(app);
            let may_ask = may_ask && !held.contains(&app.project);
            let snapshot_index = apps.queue.len() as u32;
            app_positions.insert(app_index, snapshot_index);
            app_origin.push(app_index);
            let next_user = users.len() as u32;
            apps.queue.push(queue as u32);
            apps.user
                .push(*users.entry(app.user.as_str()).or_insert(next_user));
            apps.priority.push(app.priority);
            apps.submit_time_ms.push(millis(app.submit_time_ms));
            let used = used_of(app_index, app);
            apps.used_memory_mb.push(used.memory_mb);
            apps.used_vcores.push(used.vcores.into());
            apps.used_gpus.push(used.gpus.into());
            let asks_now = app.asks.iter().enumerate().filter(|_| may_ask);
            let asks_now = asks_now.filter(|(i, a)| part.has_ask(app_index, *i, a));
            for (ask_index, ask) in asks_now.filter(|(_, a)| a.pending > 0) {
                asks.app.push(snapshot_index);
                asks.pending.push(ask.pending);
                asks.memory_mb.push(ask.resources.memory_mb);
                asks.vcores.push(ask.resources.vcores.into());
                asks.gpus.push(ask.resources.gpus.into());
                ask_origin.push((app_index, ask_index));
            }
        }
        let mut snapshot = Snapshot::with_tables_empty(millis(now), nodes, queues, apps, asks);
        let origins = context::Origins {
            nodes: &round_nodes,
            apps: &app_origin,
            asks: &ask_origin,
            tree_queues: tree.len(),
        };
        context::fill(cluster, now, part, &origins, &mut snapshot);
        Round {
            snapshot,
            asks: ask_origin,
            apps: app_positions,
            nodes: (!whole).then_some(node_positions),
        }
    }

    /// Where snapshot node `index` is in the cluster's node order.
    pub fn node_position(&self, index: u32) -> usize {
        match &self.nodes {
            None => index as usize,
            Some(positions) => positions.get(index as usize).copied().unwrap_or(usize::MAX),
        }
    }

    /// Leaves the asks of `left_out` (cluster app, ask) out of the snapshot,
    /// for a pass again without gangs the last pass placed in part.
    fn leave_out(&mut self, left_out: &std::collections::HashSet<(usize, usize)>) {
        let keep: Vec<bool> = self.asks.iter().map(|o| !left_out.contains(o)).collect();
        fn retain<T>(column: &mut Vec<T>, keep: &[bool]) {
            let mut flags = keep.iter();
            column.retain(|_| *flags.next().unwrap_or(&true));
        }
        let asks = &mut self.snapshot.asks;
        retain(&mut asks.app, &keep);
        retain(&mut asks.pending, &keep);
        retain(&mut asks.memory_mb, &keep);
        retain(&mut asks.vcores, &keep);
        retain(&mut asks.gpus, &keep);
        retain(&mut self.asks, &keep);
    }

    /// Where cluster app `app_index` is in the snapshot, if it is.
    pub fn app_position(&self, app_index: usize) -> Option<u32> {
        self.apps.get(&app_index).copied()
    }

    /// The policy's placements, in the cluster's terms.
    pub fn placements(&self, placements: &Placements) -> Vec<Placement> {
        (0..placements.ask.len())
            .map(|i| {
                let (app, ask) = self.asks[placements.ask[i] as usize];
                Placement {
                    app,
                    ask,
                    node: self.node_position(placements.node[i]),
                    count: placements.count[i],
                }
            })
            .collect()
    }
}

/// Sets the queues' shares to those of `part`'s partition (the default
/// partition's are the tree's own). A queue that may not use a label has no
/// share of it. Lent room is shared as the default partition is (the tree's
/// own shares, which nest), with no user limit below a queue's maximum.
fn partition_shares(cluster: &Cluster, part: &Part, queues: &mut Queues) {
    let label = match part.shares() {
        None | Some(("", false)) => return,
        Some((_, true)) => {
            for factor in &mut queues.user_limit_factor {
                *factor = None;
            }
            return;
        }
        Some((label, false)) => label,
    };
    let shares = cluster.queues().partition_shares(label);
    for (queue, share) in shares.iter().enumerate() {
        let (capacity, maximum) = share.map_or((0.0, 0.0), |s| (s.capacity, s.maximum_capacity));
        queues.capacity[queue] = capacity;
        queues.maximum_capacity[queue] = maximum;
    }
}

/// A queueing round's queue shares: its nodes show twice their capacity
/// (what runs, and as much again waiting in their agents' queues), so the
/// root's children get half their shares of it — every queue's guarantee
/// and maximum stay the same amounts, held by what runs and what waits
/// together, and only the root may hold more than the cluster, as far as
/// the agents' queues go.
fn for_queueing(queues: &mut Queues) {
    for queue in 1..queues.parent.len() {
        if queues.parent[queue] == 0 {
            queues.capacity[queue] /= 2.0;
            queues.maximum_capacity[queue] /= 2.0;
        }
    }
}

/// What each active app (by cluster index) holds on the nodes at
/// `positions` (in the cluster's node order, ascending).
fn used_on(cluster: &Cluster, positions: &[usize]) -> HashMap<usize, crate::resources::Resources> {
    let mut used: HashMap<usize, crate::resources::Resources> = HashMap::new();
    let mut wanted = positions.iter().peekable();
    for (position, node) in cluster.nodes().enumerate() {
        if wanted.peek() != Some(&&position) {
            continue;
        }
        wanted.next();
        for container in node
            .containers
            .iter()
            .filter_map(|id| cluster.container(id))
        {
            if let Some(app) = cluster.app_index(&container.app) {
                *used.entry(app).or_default() += container.resources;
            }
        }
    }
    used
}

/// The queues the plan follower adds to a snapshot, and which apps go in them.
struct PlanQueues<'a> {
    /// (reservable leaf, reservation id) → its child queue.
    reservation_queue: HashMap<(usize, &'a str), usize>,
    /// Reservable leaf with active reservations → its default child.
    default_queue: HashMap<usize, usize>,
}

impl<'a> PlanQueues<'a> {
    /// Appends the children of every reservable leaf with active
    /// reservations that have apps in them. A reservation with no app holds
    /// nothing back: its share stays with the queue's other apps.
    fn add(
        cluster: &Cluster,
        reservations: &'a [ActiveReservation],
        queues: &mut Queues,
    ) -> PlanQueues<'a> {
        let mut plan = PlanQueues {
            reservation_queue: HashMap::new(),
            default_queue: HashMap::new(),
        };
        if reservations.is_empty() {
            return plan; // the common case: the configured tree as it is
        }
        let tree = cluster.queues().queues();
        // Reservations hold the default partition (all of a cluster without labels).
        let total = cluster.partition_capacity("");
        let in_use: std::collections::HashSet<(usize, &str)> = cluster
            .active_apps()
            .filter_map(|i| {
                let app = &cluster.apps()[i];
                Some((app.queue_index, app.reservation_id.as_deref()?))
            })
            .collect();
        let push = |queues: &mut Queues,
                    leaf: usize,
                    name: &str,
                    capacity: f64,
                    maximum: f64,
                    factor: Option<f64>| {
            queues.path.push(format!("{}.{name}", tree[leaf].path));
            queues.parent.push(leaf as u32);
            queues.capacity.push(capacity);
            queues.maximum_capacity.push(maximum);
            queues
                .minimum_user_limit_percent
                .push(tree[leaf].minimum_user_limit_percent);
            queues.user_limit_factor.push(factor);
            queues
                .fair
                .push(tree[leaf].ordering_policy == Ordering::Fair);
            queues.parent.len() - 1
        };
        let mut reserved_share: HashMap<usize, f64> = HashMap::new();
        for reservation in reservations {
            let leaf = reservation.queue_index;
            let used = in_use.contains(&(leaf, reservation.id.as_str()));
            if leaf >= tree.len() || !tree[leaf].is_leaf() || !used {
                continue;
            }
            // Percent of the leaf's guarantee, by the dominant resource;
            // guaranteed and capped: a reservation's apps get what it holds.
            let guaranteed = tree[leaf].absolute_capacity / 100.0;
            let (memory, vcores, gpus) = reservation.reserved.fractions_of(&total);
            let share = (memory.max(vcores).max(gpus) / guaranteed * 100.0).min(100.0);
            let factor = Some(tree[leaf].user_limit_factor);
            let queue = push(queues, leaf, &reservation.id, share, share, factor);
            plan.reservation_queue
                .insert((leaf, reservation.id.as_str()), queue);
            *reserved_share.entry(leaf).or_insert(0.0) += share;
        }
        let mut leaves: Vec<_> = reserved_share.into_iter().collect();
        leaves.sort_by_key(|(leaf, _)| *leaf);
        for (leaf, reserved) in leaves {
            let queue = &tree[leaf];
            let share = (100.0 - reserved).max(0.0);
            // The default child grows as far as the queue itself may (its
            // maximum, as a share of the queue's guarantee), and its users
            // keep the queue's user limit: the limit is a multiple of the
            // guarantee, so the factor grows as the child's share shrinks.
            // Finite however small the guarantee (a policy refuses inf).
            let maximum = (100.0 * queue.absolute_maximum_capacity
                / queue.absolute_capacity.max(f64::MIN_POSITIVE))
            .min(MAX_SHARE_OF_GUARANTEE);
            // With no share left, the limit as a multiple of nothing is no
            // limit at all: the child's users are bounded by its maximum.
            let factor = (share > 0.0)
                .then(|| (queue.user_limit_factor * 100.0 / share).min(MAX_SHARE_OF_GUARANTEE));
            let default = push(queues, leaf, "default", share, maximum, factor);
            plan.default_queue.insert(leaf, default);
        }
        plan
    }

    /// The snapshot queue of `app`, and whether it may ask for containers
    /// now (not while its reservation has yet to start).
    fn queue_of(&self, app: &crate::cluster::App) -> (usize, bool) {
        let leaf = app.queue_index;
        if let Some(id) = &app.reservation_id {
            if let Some(&queue) = self.reservation_queue.get(&(leaf, id.as_str())) {
                return (queue, true);
            }
            return (
                self.default_queue.get(&leaf).copied().unwrap_or(leaf),
                false,
            );
        }
        (self.default_queue.get(&leaf).copied().unwrap_or(leaf), true)
    }
}

/// A host time in ms as the WIT's `s64` milliseconds (saturating: the host
/// clock stays far below 2^63 ms).
pub(crate) fn millis(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

/// What may trim a round's placements before they are applied (budgets:
/// no project is given more than it can pay for). It may only lower counts.
pub type Admit<'a> = &'a mut dyn FnMut(&Cluster, Vec<Placement>) -> Vec<Placement>;

/// Asks `policy` where pending containers go (but those of `held`
/// projects), lets `admit` trim the answer, and allocates; opportunistic
/// asks left over wait at agents only with `queueing` (not while a queue
/// is starved: the room they would take is its). Does nothing (and calls
/// nothing) when nothing is pending.
pub fn schedule(
    cluster: &mut Cluster,
    policy: &dyn Scheduling,
    reservations: &[ActiveReservation],
    held: &HeldProjects,
    admit: Option<Admit<'_>>,
    now: u64,
    queueing: bool,
) -> Result<Vec<Allocation>, ScheduleError> {
    if !cluster.has_pending() {
        return Ok(Vec::new());
    }
    if cluster.nodes().next().is_none() {
        // No node heartbeats: no ask misses an opportunity.
        cluster.pause_locality_counts(now);
        return Ok(Vec::new());
    }
    // Asks waiting out a locality delay go as far as the time waited
    // allows, this pass.
    cluster.count_missed_opportunities(now);
    let mut admit = admit;
    let mut allocations = Vec::new();
    // Constrained asks go after the others, against what those placed.
    let mut parts = Part::all(cluster);
    let mut constrained_added = false;
    let mut next = 0;
    loop {
        if next == parts.len() && !constrained_added {
            constrained_added = true;
            parts.extend(Part::constrained(cluster, held));
            // Opportunistic asks left over queue at agents, last: the
            // room free now went to every ask first.
            if queueing {
                parts.extend(Part::queued(cluster));
            }
        }
        let Some(part) = parts.get(next) else {
            break;
        };
        next += 1;
        let admit: Option<Admit<'_>> = match admit.as_mut() {
            Some(admit) => Some(&mut **admit),
            None => None,
        };
        match schedule_part(cluster, policy, reservations, held, admit, now, part) {
            Ok(placed) => allocations.extend(placed),
            // What earlier rounds allocated stands (and is charged): the
            // failed round's asks wait for the next pass, as do the rest.
            Err(error) if !allocations.is_empty() => {
                tracing::warn!(%error, "a scheduling round failed; the pass ends with what earlier rounds placed");
                break;
            }
            Err(error) => return Err(error),
        }
    }
    Ok(allocations)
}

/// Whether `ask` is placed in a round of its own (a placement constraint,
/// or locality not yet relaxed to anywhere).
fn restricted(ask: &crate::cluster::Ask) -> bool {
    ask.constraint.is_some()
        || !ask.avoid.is_empty()
        || ask
            .locality
            .as_ref()
            .is_some_and(|l| l.level != crate::cluster::Level::OffSwitch)
}

/// Whether `ask` may wait in an agent's queue: opportunistic, placed in
/// the common rounds (a constrained or located ask is placed in a round
/// of its own, on room free now), and no gang still to place whole (its
/// members, waiting, would start one by one).
fn queues_at_agents(ask: &crate::cluster::Ask) -> bool {
    ask.execution_type == crate::cluster::ExecutionType::Opportunistic
        && !restricted(ask)
        && ask.gang.is_none_or(|gang| gang.placed)
}

/// The round of `part`, if it has asks and nodes.
fn schedule_part(
    cluster: &mut Cluster,
    policy: &dyn Scheduling,
    reservations: &[ActiveReservation],
    held: &HeldProjects,
    admit: Option<Admit<'_>>,
    now: u64,
    part: &Part,
) -> Result<Vec<Allocation>, ScheduleError> {
    let round = Round::of_part(cluster, now, reservations, held, part);
    if round.snapshot.asks.app.is_empty() || round.snapshot.nodes.free_memory_mb.is_empty() {
        return Ok(Vec::new()); // nothing asked for here (or all that is, is held), or no node
    }
    let queued = matches!(part, Part::Queued(_));
    schedule_round(cluster, policy, round, admit, now, queued)
}

/// One round of [`schedule`]: asks `policy` about `round`, again while
/// gangs are placed in part, and allocates what it places.
fn schedule_round(
    cluster: &mut Cluster,
    policy: &dyn Scheduling,
    mut round: Round,
    mut admit: Option<Admit<'_>>,
    now: u64,
    queued: bool,
) -> Result<Vec<Allocation>, ScheduleError> {
    let mut left_out = std::collections::HashSet::new();
    let mut alone: Option<(usize, usize)> = None;
    let mut pass = 1;
    loop {
        let placements = policy.schedule(&round.snapshot)?;
        // What breaks a placement constraint is cut, container by container,
        // and in a queueing round what the nodes' queues cannot hold.
        let mut placements = cluster.within_constraints(round.placements(&placements));
        if queued {
            placements = cluster.within_queue_places(placements);
        }
        if let Some(admit) = admit.as_mut() {
            let wanted: Vec<(usize, usize, usize, u32)> = placements
                .iter()
                .map(|p| (p.app, p.ask, p.node, p.count))
                .collect();
            placements = admit(cluster, placements);
            // Only fewer: never a placement the policy did not make.
            debug_assert!(placements.iter().all(|p| {
                wanted
                    .iter()
                    .any(|w| (w.0, w.1, w.2) == (p.app, p.ask, p.node) && p.count <= w.3)
            }));
        }
        // Gangs are placed whole or not at all, however the policy placed
        // them. One placed in part would waste what the policy gave it, and
        // two could split the room between them round after round: the
        // round is asked again with the first of them alone in play, then
        // without it, so the room goes to what can use it.
        let partial = cluster.gangs_in_part(&placements);
        if partial.is_empty() || pass == MAX_GANG_PASSES {
            let placements = crate::cluster::without_gangs(placements, &partial);
            return Ok(if queued {
                cluster.allocate_queued(&placements, now)?
            } else {
                cluster.allocate(&placements, now)?
            });
        }
        let first = partial[0];
        let keep_first = alone != Some(first);
        left_out.extend(partial.into_iter().filter(|g| !(keep_first && *g == first)));
        alone = keep_first.then_some(first);
        round.leave_out(&left_out);
        pass += 1;
    }
}

/// The most rounds of asks with placement constraints one pass makes (one
/// policy call or more each).
pub const MAX_CONSTRAINED_ROUNDS: usize = 8;

/// The most constrained or located asks one pass looks at.
const MAX_RESTRICTED_EXAMINED: usize = 64;

/// How often one round asks the policy at most when gangs are placed in
/// part (see [`schedule`]).
const MAX_GANG_PASSES: usize = 4;

/// The largest maximum (as a percentage of a queue's guarantee) and user
/// limit factor a reservation's default child is given: a tiny guarantee
/// or share would make them infinite, which policies refuse.
const MAX_SHARE_OF_GUARANTEE: f64 = 1e12;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{AskSpec, NodeKind, Placement, SubmitApp};
    use crate::queues::{QueueProperties, QueueTree};
    use crate::resources::Resources;

    /// The tree of `yarn.scheduler.capacity.` properties `pairs`.
    fn tree(pairs: &[(&str, &str)]) -> QueueTree {
        let mut properties = QueueProperties::default();
        for (name, value) in pairs {
            properties.set(&format!("yarn.scheduler.capacity.{name}"), value);
        }
        QueueTree::from_properties(&properties).unwrap()
    }

    /// 100 GB; root.a 40 %, root.plan 60 % and reservable.
    fn cluster() -> Cluster {
        let queues = tree(&[
            ("root.queues", "a,plan"),
            ("root.a.capacity", "40"),
            ("root.plan.capacity", "60"),
            ("root.plan.reservable", "true"),
        ]);
        let mut cluster = Cluster::new(1, queues);
        cluster
            .register_node(
                "n",
                NodeKind::Simulated,
                Resources::new(102_400, 100, 0),
                "test",
                0,
            )
            .unwrap();
        cluster
    }

    fn submit(cluster: &mut Cluster, user: &str, reservation: Option<&str>) {
        let request = SubmitApp {
            name: user.into(),
            reservation_id: reservation.map(String::from),
            ..SubmitApp::new(
                user,
                "plan",
                "p",
                vec![AskSpec::sized(10, 1024, 1, 0, 1000)],
            )
        };
        cluster.submit(request, "test", 0).unwrap();
    }

    #[test]
    fn an_active_reservation_is_a_child_queue_of_its_plan_queue() {
        let mut cluster = cluster();
        submit(&mut cluster, "alice", Some("r1"));
        submit(&mut cluster, "bob", None);
        submit(&mut cluster, "carol", Some("r-later"));
        // r1 holds 15 GB of the plan's 60 GB: 25 %.
        let plan_queue = cluster.queues().leaf("plan").unwrap();
        let active = [
            ActiveReservation {
                queue_index: plan_queue,
                id: "r1".into(),
                reserved: Resources::new(15_360, 10, 0),
            },
            // Active, but no app runs in it: it holds nothing back.
            ActiveReservation {
                queue_index: plan_queue,
                id: "idle".into(),
                reserved: Resources::new(30_720, 10, 0),
            },
        ];
        let round = Round::new(&cluster, 0, &active, &HeldProjects::new());
        let queues = &round.snapshot.queues;
        let plan = cluster.queues().leaf("plan").unwrap() as u32;
        assert_eq!(queues.parent.len(), 5, "root, a, plan, r1, plan's default");
        assert_eq!(&queues.parent[3..], &[plan, plan]);
        assert!((queues.capacity[3] - 25.0).abs() < 1e-4);
        assert!((queues.maximum_capacity[3] - 25.0).abs() < 1e-4);
        assert!((queues.capacity[4] - 75.0).abs() < 1e-4);
        // The default child may grow to the plan queue's own maximum (100 %
        // of the cluster, 100/60 of the queue's guarantee), and its users
        // keep the queue's user limit (factor 1 of 60 % is 4/3 of 45 %).
        assert!((queues.maximum_capacity[4] - 100.0 / 0.6).abs() < 1e-3);
        assert!((queues.user_limit_factor[4].unwrap() - 4.0 / 3.0).abs() < 1e-4);
        assert_eq!(queues.user_limit_factor[3], Some(1.0));
        assert_eq!(round.snapshot.apps.queue, [3, 4, 4]);
        // carol's reservation has not started: she asks for nothing yet.
        assert_eq!(round.snapshot.asks.app, [0, 1]);
    }

    /// Places every ask's containers on the first nodes with room, in
    /// order; knows nothing of labels (the host's snapshot does).
    struct Greedy;

    impl Scheduling for Greedy {
        fn schedule(&self, snapshot: &Snapshot) -> Result<Placements, CallError> {
            let nodes = &snapshot.nodes;
            let mut free: Vec<(u64, u64)> = (0..nodes.free_memory_mb.len())
                .map(|n| (nodes.free_memory_mb[n], nodes.free_vcores[n]))
                .collect();
            let mut placements = Placements {
                ask: vec![],
                node: vec![],
                count: vec![],
            };
            let asks = &snapshot.asks;
            for ask in 0..asks.app.len() {
                let mut left = asks.pending[ask];
                for (node, room) in free.iter_mut().enumerate() {
                    let mut count = 0;
                    while left > 0 && room.0 >= asks.memory_mb[ask] && room.1 >= asks.vcores[ask] {
                        room.0 -= asks.memory_mb[ask];
                        room.1 -= asks.vcores[ask];
                        left -= 1;
                        count += 1;
                    }
                    if count > 0 {
                        placements.ask.push(ask as u32);
                        placements.node.push(node as u32);
                        placements.count.push(count);
                    }
                }
            }
            Ok(placements)
        }

        fn preempt(&self, _: &Snapshot, _: &Containers) -> Result<Vec<u32>, CallError> {
            Ok(Vec::new())
        }
    }

    #[test]
    fn a_labelled_cluster_is_scheduled_one_partition_at_a_time() {
        let queues = tree(&[
            ("root.queues", "ml,web"),
            ("root.ml.capacity", "50"),
            ("root.web.capacity", "50"),
            ("root.ml.accessible-node-labels", "gpu,spare"),
            ("root.ml.accessible-node-labels.gpu.capacity", "100"),
            ("root.ml.accessible-node-labels.spare.capacity", "100"),
            ("root.web.accessible-node-labels", ""),
        ]);
        let mut cluster = Cluster::new(1, queues);
        for id in ["a-plain", "b-gpu", "c-spare"] {
            let size = Resources::new(4096, 4, 0);
            cluster
                .register_node(id, NodeKind::Simulated, size, "t", 0)
                .unwrap();
        }
        cluster
            .add_node_labels(&[("gpu".into(), true), ("spare".into(), false)])
            .unwrap();
        cluster
            .replace_node_labels(&[
                ("b-gpu".into(), Some("gpu".into())),
                ("c-spare".into(), Some("spare".into())),
            ])
            .unwrap();
        let submit = |cluster: &mut Cluster, queue: &str, label: Option<&str>, count: u32| {
            let request = SubmitApp {
                node_label_expression: label.map(String::from),
                ..SubmitApp::new(
                    "u",
                    queue,
                    "p",
                    vec![AskSpec::sized(count, 1024, 1, 0, 1000)],
                )
            };
            cluster.submit(request, "test", 0).map(|app| app.id.clone())
        };
        // web may use no label; a label the cluster lacks is named.
        let refused = submit(&mut cluster, "web", Some("gpu"), 1).unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("queue root.web may not use node label \"gpu\""),
            "{refused}"
        );
        let refused = submit(&mut cluster, "ml", Some("tpu"), 1).unwrap_err();
        assert!(
            refused.to_string().contains("no node label \"tpu\" exists"),
            "{refused}"
        );
        let gpu = submit(&mut cluster, "ml", Some("gpu"), 6).unwrap();
        // Eight for the default partition: four on its node, four lent by spare.
        let plain = submit(&mut cluster, "web", None, 10).unwrap();
        let placed = schedule(
            &mut cluster,
            &Greedy,
            &[],
            &HeldProjects::new(),
            None,
            0,
            true,
        )
        .unwrap();
        let on = |app: &str| {
            let mut nodes: Vec<&str> = placed
                .iter()
                .filter(|a| a.container.app == app)
                .map(|a| a.container.node.as_str())
                .collect();
            nodes.dedup();
            nodes
        };
        assert_eq!(
            on(&gpu),
            ["b-gpu"],
            "only the gpu partition, however much is free elsewhere"
        );
        assert_eq!(
            on(&plain),
            ["a-plain", "c-spare"],
            "its own nodes, then spare's idle room"
        );
        assert_eq!(placed.len(), 4 + 4 + 4);
        // The host refuses a placement across partitions, whoever makes it.
        let gpu_index = cluster.app_index(&gpu).unwrap();
        let across = cluster.allocate(
            &[Placement {
                app: gpu_index,
                ask: 0,
                node: 0,
                count: 1,
            }],
            0,
        );
        assert!(
            matches!(across, Err(ClusterError::BadPlacement(_))),
            "{across:?}"
        );
    }

    #[test]
    fn a_partitions_round_tells_the_policy_its_partition_nodes_shares_and_asks() {
        let queues = tree(&[
            ("root.queues", "ml,web"),
            ("root.ml.capacity", "50"),
            ("root.web.capacity", "50"),
            ("root.ml.accessible-node-labels", "gpu"),
            ("root.ml.accessible-node-labels.gpu.capacity", "100"),
        ]);
        let mut cluster = Cluster::new(1, queues);
        for id in ["a-plain", "b-gpu"] {
            let size = Resources::new(4096, 4, 0);
            cluster
                .register_node(id, NodeKind::Simulated, size, "t", 0)
                .unwrap();
        }
        cluster.add_node_labels(&[("gpu".into(), true)]).unwrap();
        cluster
            .replace_node_labels(&[("b-gpu".into(), Some("gpu".into()))])
            .unwrap();
        cluster.describe_node(
            "b-gpu",
            "/dc1/rack2".into(),
            [("nm.yarn.io/gpu-model".to_string(), "a100".to_string())].into(),
        );
        let request = SubmitApp {
            node_label_expression: Some("gpu".into()),
            tags: vec!["nightly".into()],
            application_type: Some("SPARK".into()),
            ..SubmitApp::new("u", "ml", "p", vec![AskSpec::sized(2, 1024, 1, 0, 1000)])
        };
        cluster.submit(request, "test", 0).unwrap();
        let part = Part::Partition("gpu".into());
        let round = Round::of_part(&cluster, 5, &[], &HeldProjects::new(), &part);
        let s = &round.snapshot;
        assert_eq!(s.round.kind, crate::policy::RoundKind::Partition);
        assert_eq!(s.partitions.name, ["", "gpu"]);
        assert_eq!(s.round.partition, 1);
        assert_eq!(s.nodes.partition, [1], "only the gpu node");
        assert_eq!(s.racks[s.nodes.rack[0] as usize], "/dc1/rack2");
        assert_eq!(s.node_attributes.attribute[0].value, "a100");
        assert_eq!(s.queues.path, ["root", "root.ml", "root.web"]);
        // ml's share of gpu is all of it; web may use it (root's `*`,
        // inherited) with no capacity.
        let gpu_rows: Vec<(u32, f64)> = (0..s.partition_shares.queue.len())
            .filter(|&r| s.partition_shares.partition[r] == 1)
            .map(|r| (s.partition_shares.queue[r], s.partition_shares.capacity[r]))
            .collect();
        assert_eq!(gpu_rows, [(0, 100.0), (1, 100.0), (2, 0.0)]);
        assert_eq!(s.apps.application_type, ["SPARK"]);
        assert_eq!(s.app_tags.tag, ["nightly"]);
        assert_eq!(s.asks.partition, [1]);
        assert_eq!(
            s.asks.locality_level,
            [crate::policy::LocalityLevel::OffSwitch]
        );
        assert_eq!(s.asks.gang_minimum, [None]);
    }

    #[test]
    fn without_active_reservations_the_tree_is_unchanged() {
        let mut cluster = cluster();
        submit(&mut cluster, "bob", None);
        let round = Round::new(&cluster, 0, &[], &HeldProjects::new());
        assert_eq!(round.snapshot.queues.parent.len(), 3);
        assert_eq!(round.snapshot.apps.queue, [2]);
    }

    #[test]
    fn time_with_no_nodes_at_all_counts_nothing_toward_a_locality_delay() {
        // b cannot hold the ask: it waits out its delay for b's rack.
        let nodes = [("a", 4096), ("b", 512)];
        let mut cluster = crate::cluster::waiting_for_b(
            &QueueProperties::defaults(),
            NodeKind::Simulated,
            &nodes,
            1024,
        );
        let pass = |cluster: &mut Cluster, now: u64| {
            schedule(cluster, &Greedy, &[], &HeldProjects::new(), None, now, true).unwrap()
        };
        assert!(pass(&mut cluster, 0).is_empty(), "its count starts");
        for (id, _) in nodes {
            cluster.lose_node(id, 100);
        }
        // A minute with no node: passes find none.
        assert!(pass(&mut cluster, 60_000).is_empty());
        for (id, memory_mb) in nodes {
            let size = Resources::new(memory_mb, 4, 0);
            cluster
                .register_node(id, NodeKind::Simulated, size, "t", 60_000)
                .unwrap();
        }
        // Half a second of two nodes is one opportunity, of the two the
        // (capped) node delay asks: still b only.
        assert!(pass(&mut cluster, 60_500).is_empty());
        let locality = cluster.apps()[0].asks[0].locality.as_ref().unwrap();
        assert_eq!(locality.missed_opportunities, 1);
        assert_eq!(locality.level, crate::cluster::Level::NodeLocal);
        assert_eq!(pass(&mut cluster, 61_000).len(), 1, "then anywhere: a");
    }
}
