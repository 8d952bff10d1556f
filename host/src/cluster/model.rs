//! The whole cluster and every state change it goes through: nodes register
//! and heartbeat, apps are submitted, placements become containers, and
//! containers finish. Each change returns what happened, so the caller (the
//! event loop) can charge for it.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};
use std::sync::Arc;

use foldhash::HashMapExt;

use serde::Serialize;

use super::AccountingRecord;
use super::active::ActiveCounts;
use super::deadlines::Deadlines;
use super::decayed_usage::DecayedUsage;
use super::durable::{self, Changes};
use super::table::AppTable;
use super::{App, AppState, Ask, Node, NodeCounts, NodeKind, NodeState, SubmitApp};
use crate::config::DEFAULT_HEARTBEAT_INTERVAL_MS;
use crate::protocol::node::exit_status;
use crate::queues::{QueueState, QueueTree};
use crate::resources::Resources;
use crate::security::yarn_tokens::TokenKeys;

/// A running container.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Container {
    /// YARN's container id (`container_…`, with the epoch once there is
    /// one).
    pub id: String,
    /// Its app's id.
    pub app: String,
    /// Which of the app's asks it serves.
    pub ask: usize,
    /// The id of the node it was allocated on.
    pub node: String,
    /// What it holds: its ask's size.
    pub resources: Resources,
    /// When it was allocated, in ms since the epoch.
    pub start_time_ms: u64,
    /// How long it runs on a simulated node.
    pub duration_ms: u64,
    /// 1 for the first run of its slot, 2 for the run after one failure, …
    pub attempt: u32,
    /// Its number in the cluster (the id's last part): containers are
    /// numbered in the order they are created.
    #[serde(skip)]
    pub seq: u64,
    /// When it started to run, as far as the cluster knows: at once on a
    /// simulated node; on an agent's, when the agent first reports it
    /// running (or reports how it ended). Containers are charged from
    /// then; one that never ran is charged nothing.
    #[serde(skip)]
    pub launched_ms: Option<u64>,
    /// How it ended (YARN's ContainerExitStatus), once it has.
    #[serde(skip)]
    pub exit_status: Option<i32>,
    /// When it ended, once it has: for a lost one, when it was last known
    /// to run.
    #[serde(skip)]
    pub ended_ms: Option<u64>,
}

impl Container {
    /// Whether the minimum runtime (`yarn.resourcemanager.quota.min.runtime`)
    /// is charged for it: only when its own work ended it — its process
    /// exited, was killed for its memory, or its app was killed or failed
    /// — never when the system did (lost, preempted, refused at launch).
    pub fn ended_by_its_work(&self) -> bool {
        self.exit_status.is_some_and(exit_status::ended_by_its_work)
    }
}

/// `count` containers of ask `ask` of app `app` (indices into the cluster's
/// app list and that app's asks) on node `node`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// The app's submission number (its index in the cluster's app table).
    pub app: usize,
    /// The index of the ask among the app's asks.
    pub ask: usize,
    /// The node's index among the registered nodes, in id order.
    pub node: usize,
    /// How many containers to create.
    pub count: u32,
}

/// A container the cluster just created, with who pays for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allocation {
    /// The container, as created.
    pub container: Container,
    /// The project its app charges.
    pub project: String,
    /// The user its app runs as.
    pub user: String,
}

/// Why the cluster refused a change; it changed nothing. The resource
/// manager maps each onto a kind of refusal (`rm/requests.rs`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClusterError {
    /// No node has this id (for a release: nor did one ever register under
    /// it, nor is one lost).
    #[error("unknown node {0:?}; register it first")]
    UnknownNode(String),
    /// A node registered with no memory or no vcores.
    #[error("node capacity must be more than zero in memory and vcores, got {0}")]
    EmptyNode(Resources),
    /// The submission names no leaf queue of the tree.
    #[error("unknown queue {queue:?}; the leaf queues are: {leaves}")]
    UnknownQueue {
        /// The queue the submission named.
        queue: String,
        /// The leaf queues' names, comma-separated.
        leaves: String,
    },
    /// The submission's leaf queue (its path given) is STOPPED.
    #[error("queue {0} is STOPPED and accepts no new applications")]
    QueueStopped(String),
    /// A submission or a new queue tree refused for what it says: an
    /// application id new-application did not give, or a tree without the
    /// leaf queue of an active app.
    #[error("{0}")]
    BadSubmission(String),
    /// Placements that do not fit the cluster as it is now: no such node,
    /// app or ask, or more than is pending or free.
    #[error("placement refused: {0}")]
    BadPlacement(String),
    /// A value beyond its documented bound (`limits.rs`).
    #[error(transparent)]
    OutOfBounds(#[from] crate::limits::OutOfBounds),
    /// The leaf queue has its maximum-applications active already.
    #[error(
        "queue {queue} has {active} applications, its maximum-applications; wait for some to finish"
    )]
    QueueFull {
        /// The queue's path.
        queue: String,
        /// Its active apps.
        active: u64,
    },
    /// The user has as many active apps in the queue as one user may
    /// (YARN's maxApplicationsPerUser).
    #[error(
        "user {user} has {active} applications in queue {queue}, the most one user may (maximum-applications × minimum-user-limit-percent × user-limit-factor = {maximum})"
    )]
    UserFull {
        /// The user the app would run as.
        user: String,
        /// The queue's path.
        queue: String,
        /// The user's active apps in the queue.
        active: u64,
        /// The most one user may have there.
        maximum: u64,
    },
    /// A new agent node id, refused because [`crate::limits::MAX_NODES`]
    /// ids (the number given) are owned already.
    #[error(
        "{0} node ids are owned already, the most there may be; an administrator releases unused ones (weft node release ID)"
    )]
    TooManyOwnedNodes(usize),
    /// A label expression naming a label the cluster does not have (the
    /// field and the label given).
    #[error("{field}: no node label {label:?} exists (the cluster's labels: {known})")]
    UnknownLabel {
        /// The field that names it.
        field: String,
        /// The label.
        label: String,
        /// The cluster's labels, comma-separated.
        known: String,
    },
    /// A label expression naming a label the app's queue may not use
    /// (YARN's accessible-node-labels).
    #[error("{field}: queue {queue} may not use node label {label:?} (its accessible-node-labels)")]
    LabelNotAccessible {
        /// The field that names it.
        field: String,
        /// The queue's path.
        queue: String,
        /// The label.
        label: String,
    },
    /// A move of an app to another queue that its state or its queue's
    /// rules refuse (a reservation's app, a lifetime the target would end).
    #[error("{0}")]
    CannotMove(String),
    /// A release of one of this server's simulated nodes (its id given),
    /// which no caller owns.
    #[error("node {0} is a simulated node of this server, which no caller owns")]
    SimulatedNode(String),
}

/// Why a running container ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndCause {
    /// It ran to its end and exited 0 (or ran its duration on a simulated node).
    Succeeded,
    /// It exited non-zero (or was killed for its memory, or could not be
    /// launched): asked for again while its ask's `max_attempts` allows,
    /// else its app fails.
    Failed {
        /// Its process's exit code, or one of YARN's ContainerExitStatus
        /// values (negative).
        exit_status: i32,
        /// Why, in its agent's words; may be empty.
        diagnostics: String,
    },
    /// Its app was killed or failed (YARN's −105); an agent is told to kill it.
    Killed,
    /// Reclaim took it back (−102); its app asks for it again, and an agent
    /// is told to kill it.
    Preempted,
    /// Its node was lost or restarted, or no longer runs it (YARN's
    /// ABORTED, −100); its app asks for it again.
    Lost,
    /// Its application master released it (ABORTED, −100); an agent is
    /// told to kill it.
    Released,
    /// Its node's decommission ran out of time (ABORTED, −100): an agent
    /// is told to kill it, and its app asks for it again.
    Decommissioned,
}

impl EndCause {
    /// The cause an agent's report of a container's exit status means.
    pub fn from_exit(exit_status: i32, diagnostics: &str) -> EndCause {
        use crate::protocol::node::exit_status::*;
        match exit_status {
            0 => EndCause::Succeeded,
            ABORTED => EndCause::Lost,
            PREEMPTED => EndCause::Preempted,
            _ => EndCause::Failed {
                exit_status,
                diagnostics: diagnostics.to_string(),
            },
        }
    }

    /// YARN's ContainerExitStatus for it.
    pub fn exit_status(&self) -> i32 {
        use crate::protocol::node::exit_status::*;
        match self {
            EndCause::Succeeded => 0,
            EndCause::Failed { exit_status, .. } => *exit_status,
            EndCause::Killed => KILLED_BY_APPMASTER,
            EndCause::Preempted => PREEMPTED,
            EndCause::Lost | EndCause::Released | EndCause::Decommissioned => ABORTED,
        }
    }
}

/// The whole cluster: its queue tree, nodes, apps (with their asks) and
/// running containers, and the node ids agents own. The event loop owns
/// it; each change is given its time (ms since the epoch) and returns what
/// happened, so the caller can charge for it.
#[derive(Debug)]
pub struct Cluster {
    /// Identifies this cluster's run in app and container ids, as YARN does.
    pub(super) cluster_timestamp: u64,
    pub(super) queues: QueueTree,
    pub(super) nodes: BTreeMap<String, Node>,
    pub(super) apps: AppTable,
    pub(super) app_index: foldhash::HashMap<String, usize>,
    /// Apps ever ended, by how (they outlive the table's retention).
    pub(super) finished_total: usize,
    pub(super) failed_total: usize,
    pub(super) killed_total: usize,
    /// Apps not finished, in submission order.
    pub(super) active: BTreeSet<usize>,
    /// How many of them each leaf, and each user in it, has.
    pub(super) active_counts: ActiveCounts,
    /// When those with a lifetime must end, by app number.
    pub(super) lifetimes: Deadlines<usize>,
    /// When their gangs not yet placed whole time out, by (app number,
    /// ask index).
    pub(super) gang_deadlines: Deadlines<(usize, usize)>,
    /// What each user and leaf queue held, fading with time.
    pub(super) decayed: DecayedUsage,
    /// The node labels, and which node has which (`labels.rs`).
    pub(super) labels: super::NodeLabels,
    /// Where the next pass starts among the asks placed in rounds of their
    /// own (constrained or located), so each gets its turn.
    restricted_turn: usize,
    pub(super) containers: foldhash::HashMap<String, Container>,
    /// When containers on simulated nodes end: (end ms, container id).
    pub(super) simulated_ends: BinaryHeap<Reverse<(u64, String)>>,
    pub(super) next_container: u64,
    /// Apps a container's last allowed failure fails, with why; the caller
    /// that ended the container ends them (see `fail_apps`).
    pub(super) failing: Vec<(usize, String)>,
    /// What changed since the store last took it; `None` until tracking
    /// is turned on (`durable.rs`), and in simulations.
    pub(super) changes: Option<Changes>,
    /// The resource manager's epoch, in container ids (YARN's `_e17_`):
    /// a restarted or failed-over server never reissues an id.
    pub(super) epoch: u64,
    /// Nodes lost by silence and not registered since, as YARN lists them
    /// (state LOST): the most recent [`LOST_NODES_KEPT`], in memory only.
    pub(super) lost_nodes: BTreeMap<String, LostNode>,
    /// Who registered each agent node id first: theirs (and only theirs
    /// to register or heartbeat for) until an administrator releases it,
    /// also while the node is lost, and across restarts.
    /// (foldhash, seeded per map, resists chosen keys less than SipHash;
    /// node ids come only from callers `node-acl` admits.)
    pub(super) node_owners: foldhash::HashMap<String, String>,
    /// Administrators' decommissions, by node id: kept apart from the
    /// nodes (each registered one holds a copy), so that one outlasts its
    /// node's loss, and across restarts, until a recommission or a release
    /// of the id.
    pub(super) decommissions: BTreeMap<String, super::node::Decommission>,
    /// Containers reclaim has chosen and not yet killed, by id (YARN's
    /// preemption candidates; in memory only, as YARN's). Their masters
    /// are told at the next allocate ([`Cluster::take_preemption_marks_of`]).
    pub(super) preemption_marks: BTreeMap<String, super::preemption_marks::PreemptionMark>,
    /// The accounting records of apps ended since
    /// [`Cluster::take_ended_apps`]: made as each ends, before the table
    /// may let it go.
    pub(super) ended_apps: Vec<AccountingRecord>,
    /// The key of the tokens YARN's application masters carry (none if the
    /// machine gave no randomness: then no master can register).
    pub(super) token_keys: Option<Arc<TokenKeys>>,
    /// How many opportunistic containers may wait at one agent's node
    /// (`yarn.nodemanager.opportunistic-containers-max-queue-length`);
    /// 0: none, they are placed only on free room.
    pub(super) opportunistic_queue: usize,
    /// How often each node offers itself to waiting asks, in ms
    /// (`yarn.resourcemanager.nodemanagers.heartbeat-interval-ms`): delay
    /// scheduling counts a node's missed opportunity once per interval
    /// waited, as YARN counts one per NodeManager heartbeat.
    pub(super) heartbeat_interval_ms: u64,
    /// How many times an ask's locality level has moved on with time, ever
    /// (`simulate` takes a move for a change of the cluster).
    pub(super) locality_moves: u64,
}

/// `weft.scheduler.usage.half-life-ms` unless set: 7 days (Slurm's
/// PriorityDecayHalfLife).
pub(super) const DEFAULT_USAGE_HALF_LIFE_MS: u64 = 7 * 24 * 3600 * 1000;

/// How many lost nodes the cluster remembers for the nodes listing.
pub const LOST_NODES_KEPT: usize = 1_000;

/// A node lost by silence: what it was when it went.
#[derive(Debug, Clone)]
pub struct LostNode {
    /// The node as it was, with no containers and nothing allocated.
    pub node: Node,
    /// When it was lost, in ms since the epoch.
    pub lost_at_ms: u64,
}

impl Cluster {
    /// An empty cluster of `queues`: no node, no app. `cluster_timestamp`
    /// (the resource manager's start, in ms since the epoch) goes into
    /// every app and container id, as YARN's does; every ended app is kept
    /// until [`Cluster::keep_ended_apps`] says otherwise.
    pub fn new(cluster_timestamp: u64, queues: QueueTree) -> Cluster {
        Cluster {
            cluster_timestamp,
            queues,
            nodes: BTreeMap::new(),
            apps: AppTable::new(usize::MAX),
            app_index: foldhash::HashMap::new(),
            finished_total: 0,
            failed_total: 0,
            killed_total: 0,
            active: BTreeSet::new(),
            active_counts: ActiveCounts::default(),
            lifetimes: Deadlines::default(),
            gang_deadlines: Deadlines::default(),
            decayed: DecayedUsage::new(DEFAULT_USAGE_HALF_LIFE_MS),
            labels: Default::default(),
            restricted_turn: 0,
            containers: foldhash::HashMap::new(),
            simulated_ends: BinaryHeap::new(),
            next_container: 1,
            failing: Vec::new(),
            changes: None,
            epoch: 0,
            lost_nodes: BTreeMap::new(),
            node_owners: foldhash::HashMap::new(),
            decommissions: BTreeMap::new(),
            preemption_marks: BTreeMap::new(),
            ended_apps: Vec::new(),
            opportunistic_queue: 0,
            heartbeat_interval_ms: DEFAULT_HEARTBEAT_INTERVAL_MS,
            locality_moves: 0,
            token_keys: match TokenKeys::random() {
                Ok(keys) => Some(Arc::new(keys)),
                Err(error) => {
                    tracing::error!(%error, "YARN application masters cannot be given tokens");
                    None
                }
            },
        }
    }

    /// How often nodes heartbeat, in ms, from now on: the pace at which
    /// asks with locality miss opportunities (at least 1).
    pub fn set_heartbeat_interval(&mut self, interval_ms: u64) {
        self.heartbeat_interval_ms = interval_ms.max(1);
    }

    /// How many opportunistic containers may wait at one agent's node
    /// from now on (0: none may).
    pub fn set_opportunistic_queue(&mut self, length: usize) {
        self.opportunistic_queue = length;
    }

    /// How many opportunistic containers may wait at one agent's node.
    pub fn opportunistic_queue(&self) -> usize {
        self.opportunistic_queue
    }

    /// The opportunistic containers placed on `node` that its agent has
    /// not reported running: those waiting in its queue (or on their way
    /// to it).
    pub fn waiting_opportunistic(&self, node: &Node) -> usize {
        node.containers
            .iter()
            .filter(|id| !node.launched.contains(*id))
            .filter(|id| {
                self.containers
                    .get(*id)
                    .and_then(|c| Some((self.app(&c.app)?, c.ask)))
                    .and_then(|(app, ask)| app.asks.get(ask))
                    .is_some_and(|ask| ask.execution_type == super::ExecutionType::Opportunistic)
            })
            .count()
    }

    /// The opportunistic containers waiting in agents' queues: placed on an
    /// agent's node, reported queued by it, not running.
    pub fn waiting_containers(&self) -> impl Iterator<Item = &Container> {
        self.nodes
            .values()
            .flat_map(|node| node.queued.iter())
            .filter_map(|id| self.containers.get(id))
    }

    /// Takes back every container waiting in an agent's queue, but those of
    /// a queue with `disable_preemption` (PREEMPTED:
    /// asked for again, no attempt counted, nothing charged — none ran),
    /// so the room they were promised goes to starved queues first; their
    /// agents are ordered to drop them. Returns them.
    pub fn dequeue_waiting(&mut self, now: u64) -> Vec<Container> {
        // Not those of a queue with disable_preemption: reclaim takes
        // nothing of theirs.
        let spared = |app: Option<&App>| {
            app.and_then(|app| self.queues.queues().get(app.queue_index))
                .is_some_and(|queue| queue.preemption_disabled)
        };
        let waiting: Vec<String> = self
            .waiting_containers()
            .filter(|c| !spared(self.app(&c.app)))
            .map(|c| c.id.clone())
            .collect();
        waiting
            .iter()
            .filter_map(|id| self.end_container(id, now, EndCause::Preempted))
            .collect()
    }

    /// What `node` offers opportunistic containers to queue
    /// ([`Node::queue_room`]).
    pub fn queue_room_of(&self, node: &Node) -> Resources {
        if self.opportunistic_queue == 0 {
            return Resources::ZERO;
        }
        node.queue_room(self.waiting_opportunistic(node), self.opportunistic_queue)
    }

    /// Issues YARN's tokens under `keys` from now on.
    pub fn set_token_keys(&mut self, keys: Arc<TokenKeys>) {
        self.token_keys = Some(keys);
    }

    /// The key of YARN's tokens, if there is one.
    pub fn token_keys(&self) -> Option<&Arc<TokenKeys>> {
        self.token_keys.as_ref()
    }

    /// Who owns agent node id `id`, if anyone.
    pub fn node_owner(&self, id: &str) -> Option<&str> {
        self.node_owners.get(id).map(String::as_str)
    }

    /// Makes `owner` the owner of agent node id `id`, if nobody is; a new
    /// id is refused once [`crate::limits::MAX_NODES`] ids are owned.
    pub(super) fn claim_node(&mut self, id: &str, owner: &str) -> Result<(), ClusterError> {
        if self.node_owners.contains_key(id) {
            return Ok(());
        }
        if self.node_owners.len() >= crate::limits::MAX_NODES {
            return Err(ClusterError::TooManyOwnedNodes(crate::limits::MAX_NODES));
        }
        self.node_owners.insert(id.to_string(), owner.to_string());
        durable::owner_changed(&mut self.changes, id);
        Ok(())
    }

    /// Frees agent node id `id` for whoever registers it next (an
    /// administrator's act): a registered node is lost now (its containers
    /// ABORTED and asked for again, returned to be charged), a lost one
    /// forgotten. Returns who owned it.
    pub fn release_node(
        &mut self,
        id: &str,
        now: u64,
    ) -> Result<(Option<String>, Vec<Container>), ClusterError> {
        if self
            .nodes
            .get(id)
            .is_some_and(|node| node.kind == NodeKind::Simulated)
        {
            return Err(ClusterError::SimulatedNode(id.into()));
        }
        if !self.nodes.contains_key(id)
            && !self.node_owners.contains_key(id)
            && !self.lost_nodes.contains_key(id)
        {
            return Err(ClusterError::UnknownNode(id.into()));
        }
        let owner = self.node_owners.remove(id);
        durable::owner_changed(&mut self.changes, id);
        let lost = self.lose_node(id, now);
        self.lost_nodes.remove(id);
        // Forgotten, the id's label goes too: its next registrant starts
        // where its agent says; and so does a decommission.
        self.forget_node_label(id);
        if self.decommissions.remove(id).is_some() {
            durable::decommissions_changed(&mut self.changes);
        }
        Ok((owner, lost))
    }

    /// Sets the epoch new container ids carry (0: none, as YARN's ids
    /// before any restart).
    pub fn set_epoch(&mut self, epoch: u64) {
        self.epoch = epoch;
    }

    /// The epoch new container ids carry (0: none).
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The queue tree apps are submitted into.
    pub fn queues(&self) -> &QueueTree {
        &self.queues
    }

    /// Keeps only the `count` most recently ended apps (YARN's
    /// `yarn.resourcemanager.max-completed-applications`); all by default.
    pub fn keep_ended_apps(&mut self, count: usize) {
        let mut table = AppTable::new(count);
        std::mem::swap(&mut table, &mut self.apps);
        // Only called on a new cluster: nothing to move.
        debug_assert!(table.is_empty(), "set the retention before any app");
    }

    /// Apps ever submitted, finished and killed (beyond what is kept);
    /// failed apps count as killed here (see [`Cluster::failed_total`]).
    /// Submitted are those running or waiting and those ended: an id only
    /// handed out (new-application) and never submitted under is none.
    pub fn app_totals(&self) -> (usize, usize, usize) {
        let ended = self.finished_total + self.killed_total + self.failed_total;
        (
            self.active.len() + ended,
            self.finished_total,
            self.killed_total + self.failed_total,
        )
    }

    /// Apps ever failed.
    pub fn failed_total(&self) -> usize {
        self.failed_total
    }

    /// App `index` ended: counted, and the oldest ended apps beyond the
    /// retention are let go.
    pub(super) fn app_ended(&mut self, index: usize) {
        if self.active.remove(&index)
            && let Some(app) = self.apps.get(index)
        {
            self.active_counts.remove(app.queue_index, &app.user);
            self.lifetimes.remove(app.lifetime_deadline_ms, index);
            super::gang::remove_gangs(&mut self.gang_deadlines, index, app);
        }
        if let Some(app) = self.apps.get(index) {
            self.ended_apps.push(AccountingRecord::of(app));
        }
        match self.apps.get(index).map(|a| a.state) {
            Some(AppState::Finished) => self.finished_total += 1,
            Some(AppState::Failed) => self.failed_total += 1,
            Some(AppState::Killed) => self.killed_total += 1,
            _ => {}
        }
        for dropped in self.apps.ended(index) {
            self.app_index.remove(&dropped.id);
            durable::app_dropped(&mut self.changes, &dropped.id);
        }
        durable::totals_changed(&mut self.changes);
    }

    /// The accounting records of the apps ended since the last call.
    pub fn take_ended_apps(&mut self) -> Vec<AccountingRecord> {
        std::mem::take(&mut self.ended_apps)
    }

    /// refreshQueues: takes a new tree. Refused, changing nothing, if an app
    /// still running or pending names a leaf queue the new tree lacks.
    pub fn replace_queues(&mut self, queues: QueueTree, now: u64) -> Result<(), ClusterError> {
        let mut moved = Vec::new();
        for &index in &self.active {
            let app = &self.apps[index];
            let leaf = queues.leaf(&app.queue).ok_or_else(|| {
                ClusterError::BadSubmission(format!(
                    "queue {} still has application {} and is not a leaf queue of the new configuration",
                    app.queue, app.id
                ))
            })?;
            // An ask waiting for a label its queue may no longer use would
            // wait for ever.
            let partitions = &queues.queues()[leaf].partitions;
            if let Some(ask) = app
                .asks
                .iter()
                .find(|a| a.pending > 0 && !partitions.may_use(&a.partition))
            {
                return Err(ClusterError::BadSubmission(format!(
                    "application {} waits for node label {:?}, which queue {} may no longer use in the new configuration (its accessible-node-labels)",
                    app.id, ask.partition, app.queue
                )));
            }
            moved.push((index, leaf));
        }
        for (index, leaf) in moved {
            let app = &mut self.apps[index];
            // What its running containers hold fades under its new path
            // from now on (a leaf may move to another parent).
            let (old, new) = (
                &self.queues.queues()[app.queue_index].path,
                &queues.queues()[leaf].path,
            );
            if old != new {
                self.decayed.move_held(old, new, app.used, now);
            }
            app.queue_index = leaf;
        }
        self.queues = queues;
        self.count_active_apps();
        Ok(())
    }

    /// The active apps of each leaf and user, counted by a walk over them.
    fn walk_active_counts(&self) -> ActiveCounts {
        let mut counts = ActiveCounts::default();
        for &index in &self.active {
            let app = &self.apps[index];
            counts.add(app.queue_index, &app.user);
        }
        counts
    }

    /// Counts the active apps of each leaf and user again (after their
    /// queue indices changed, or a restore).
    pub(super) fn count_active_apps(&mut self) {
        self.active_counts = self.walk_active_counts();
    }

    /// The timestamp in this cluster's app and container ids (YARN's
    /// cluster timestamp: when the resource manager started, in ms since
    /// the epoch).
    pub fn cluster_timestamp(&self) -> u64 {
        self.cluster_timestamp
    }

    /// Adds a node, or re-registers one: the node restarted, so the
    /// containers it had are lost (and asked for again by their apps).
    /// Returns the containers that ended that way. `owner` is the caller
    /// that registered it.
    pub fn register_node(
        &mut self,
        id: &str,
        kind: NodeKind,
        capacity: Resources,
        owner: &str,
        now: u64,
    ) -> Result<Vec<Container>, ClusterError> {
        self.check_capacity(id, capacity)?;
        if !self.nodes.contains_key(id) {
            crate::limits::at_most(
                "the cluster's nodes",
                self.nodes.len() + 1,
                crate::limits::MAX_NODES,
            )?;
        }
        let lost = self.lose_node(id, now);
        if self.lost_nodes.remove(id).is_some() {
            // Back from LOST: YARN's NODE_USABLE to every running master.
            self.tell_masters_node_changed(id);
        }
        let mut node = Node::new(id.to_string(), kind, capacity, owner.to_string(), now);
        node.partition = self.partition_of(id, "");
        node.decommission = self.decommissions.get(id).copied();
        self.nodes.insert(id.to_string(), node);
        durable::node_changed(&mut self.changes, id);
        Ok(lost)
    }

    /// The node `id`, if registered.
    pub fn node(&self, id: &str) -> Option<&Node> {
        self.nodes.get(id)
    }

    /// Removes a node: its containers are lost (ABORTED, exit status −100)
    /// and their apps ask for them again. Each ends when it was last known
    /// to run: its node's last heartbeat (not later than `now`), so a
    /// silent node's containers are not charged for its silence.
    pub fn lose_node(&mut self, id: &str, now: u64) -> Vec<Container> {
        let Some(node) = self.nodes.get(id) else {
            return Vec::new();
        };
        let ids: Vec<String> = node.containers.iter().cloned().collect();
        let seen = match node.kind {
            NodeKind::Remote => node.last_heartbeat_ms.min(now),
            NodeKind::Simulated => now,
        };
        let lost: Vec<Container> = ids
            .iter()
            .filter_map(|c| self.lose_container(c, seen, now))
            .collect();
        for container in &lost {
            tracing::warn!(container = %container.id, app = %container.app, node = %id, exit_status = -100, "container lost with its node (ABORTED); its app asks for it again");
        }
        self.nodes.remove(id);
        durable::node_changed(&mut self.changes, id);
        lost
    }

    /// Remote nodes silent since before `deadline` are lost, with their
    /// containers (asked for again).
    pub fn expire_nodes(&mut self, deadline: u64, now: u64) -> Vec<Container> {
        // A decommissioned node with nothing on it stays DECOMMISSIONED
        // when its agent stops (as YARN's, whose NodeManager shuts down).
        let silent: Vec<String> = self
            .nodes
            .values()
            .filter(|n| n.kind == NodeKind::Remote && n.last_heartbeat_ms < deadline)
            .filter(|n| n.state() != NodeState::Decommissioned)
            .map(|n| n.id.clone())
            .collect();
        silent
            .iter()
            .flat_map(|id| {
                tracing::warn!(node = %id, "node lost: no heartbeat within the expiry interval");
                self.remember_lost(id, now);
                // YARN's NODE_UNUSABLE to every running master.
                self.tell_masters_node_changed(id);
                self.lose_node(id, now)
            })
            .collect()
    }

    /// Keeps what node `id` was as it is lost, forgetting the longest lost
    /// beyond [`LOST_NODES_KEPT`].
    fn remember_lost(&mut self, id: &str, now: u64) {
        let Some(node) = self.nodes.get(id) else {
            return;
        };
        let mut node = node.clone();
        node.containers.clear();
        node.allocated = Default::default();
        self.lost_nodes.insert(
            id.to_string(),
            LostNode {
                node,
                lost_at_ms: now,
            },
        );
        while self.lost_nodes.len() > LOST_NODES_KEPT {
            let oldest = self
                .lost_nodes
                .iter()
                .min_by_key(|(_, lost)| lost.lost_at_ms)
                .map(|(id, _)| id.clone());
            match oldest {
                Some(id) => self.lost_nodes.remove(&id),
                None => break,
            };
        }
    }

    /// Nodes lost by silence and not registered since (the most recent).
    pub fn lost_nodes(&self) -> impl Iterator<Item = &LostNode> {
        self.lost_nodes.values()
    }

    /// Node `id`, if it is among the nodes lost lately.
    pub fn lost_node(&self, id: &str) -> Option<&LostNode> {
        self.lost_nodes.get(id)
    }

    /// Adds `credits` to what app `id` has been charged (an app no longer
    /// kept is not counted).
    pub fn add_app_credits(&mut self, id: &str, credits: f64) {
        if let Some(&index) = self.app_index.get(id)
            && let Some(app) = self.apps.get_mut(index)
        {
            app.credits += credits;
            durable::app_changed(&mut self.changes, id);
        }
    }

    /// YARN's id of app number `number`.
    fn app_id(&self, number: usize) -> String {
        format!("application_{}_{:04}", self.cluster_timestamp, number + 1)
    }

    /// A new app id, for an app submitted later under it (YARN's
    /// new-application); the caller guards who may use it.
    pub fn new_app_id(&mut self) -> String {
        let number = self.apps.reserve();
        self.app_id(number)
    }

    /// The number of an id [`Cluster::new_app_id`] gave out and no app has.
    fn reserved_number(&self, id: &str) -> Option<usize> {
        let rest = id.strip_prefix("application_")?;
        let (timestamp, seq) = rest.split_once('_')?;
        let number = seq.parse::<usize>().ok()?.checked_sub(1)?;
        (timestamp.parse() == Ok(self.cluster_timestamp)
            && number < self.apps.next_number()
            && self.apps.get(number).is_none()
            && !self.app_index.contains_key(id)
            && self.app_id(number) == id)
            .then_some(number)
    }

    /// Accepts an app into its leaf queue. `submitter` is the host it came
    /// from, kept for the log lines of its state changes.
    pub fn submit(
        &mut self,
        request: SubmitApp,
        submitter: &str,
        now: u64,
    ) -> Result<&App, ClusterError> {
        let queue_index = self.open_leaf(&request.queue)?;
        let queue = &self.queues.queues()[queue_index];
        let queue_name = queue.name.clone();
        request.check()?;
        let lifetime_deadline_ms = queue
            .lifetime_s(request.lifetime_s)
            .map(|seconds| now.saturating_add(seconds.saturating_mul(1000)));
        let app_expression = request
            .node_label_expression
            .as_deref()
            .map(str::trim)
            .unwrap_or(&queue.partitions.default_label_expression);
        // The app's own expression, checked even when every ask names its
        // own: a YARN master's later asks run in it (`master.rs`).
        if let Some(label) = request.node_label_expression.as_deref() {
            self.check_label(queue_index, "node_label_expression", label.trim())?;
        }
        let mut partitions = Vec::with_capacity(request.asks.len());
        for (i, ask) in request.asks.iter().enumerate() {
            let (field, label) = match ask.node_label_expression.as_deref() {
                Some(label) => (format!("asks[{i}].node_label_expression"), label.trim()),
                None if request.node_label_expression.is_some() => {
                    ("node_label_expression".to_string(), app_expression)
                }
                None => (
                    format!("queue {}'s default-node-label-expression", queue.path),
                    app_expression,
                ),
            };
            self.check_label(queue_index, &field, label)?;
            // Reservations hold the default partition only.
            if request.reservation_id.is_some() && !label.is_empty() {
                return Err(ClusterError::BadSubmission(format!(
                    "{field}: an app in a reservation runs in the default partition; node label {label:?} cannot be reserved"
                )));
            }
            partitions.push(label.to_string());
        }
        self.check_room_for_app(queue_index, &request.user)?;
        let (number, id) = match &request.application_id {
            Some(id) => {
                let number = self.reserved_number(id).ok_or_else(|| {
                    ClusterError::BadSubmission(format!(
                        "application id {id:?} was not given by new-application of this cluster"
                    ))
                })?;
                (Some(number), id.clone())
            }
            None => (None, self.app_id(self.apps.next_number())),
        };
        let (application_type, tags) = (request.normal_application_type(), request.normal_tags());
        let app = App {
            id: id.clone(),
            name: request.name,
            queue: queue_name,
            queue_index,
            submitter: submitter.to_string(),
            user: request.user,
            project: request.project,
            priority: request.priority,
            state: AppState::Accepted,
            submit_time_ms: now,
            start_time_ms: None,
            finish_time_ms: None,
            asks: request
                .asks
                .iter()
                .zip(partitions)
                .map(|(a, partition)| Ask::from_spec(a, partition, now))
                .collect(),
            used: Resources::ZERO,
            running_containers: 0,
            finished_containers: 0,
            failed_containers: 0,
            diagnostics: String::new(),
            exit_status: None,
            containers: Default::default(),
            credits: 0.0,
            preempted_containers: 0,
            lost_containers: 0,
            containers_run: 0,
            reservation_id: request.reservation_id,
            application_type,
            tags,
            usage: Default::default(),
            usage_counted_ms: now,
            lifetime_deadline_ms,
            node_label_expression: request
                .node_label_expression
                .map(|e| e.trim().to_string())
                .unwrap_or_default(),
            // A YARN client's application master: its first ask.
            master: request
                .asks
                .first()
                .and_then(|ask| ask.yarn.as_ref())
                .filter(|yarn| yarn.application_master)
                .map(|_| Box::default()),
        };
        let number = match number {
            Some(number) => {
                self.apps.push_reserved(number, app);
                number
            }
            None => self.apps.push(app),
        };
        durable::app_changed(&mut self.changes, &id);
        self.app_index.insert(id, number);
        self.active.insert(number);
        let app = &self.apps[number];
        self.active_counts.add(app.queue_index, &app.user);
        self.lifetimes.insert(app.lifetime_deadline_ms, number);
        super::gang::add_gangs(&mut self.gang_deadlines, number, app);
        Ok(app)
    }

    /// The leaf queue named `name` (its name or path), if it takes apps:
    /// not STOPPED.
    pub(super) fn open_leaf(&self, name: &str) -> Result<usize, ClusterError> {
        let leaf = self
            .queues
            .leaf(name)
            .ok_or_else(|| ClusterError::UnknownQueue {
                queue: name.to_string(),
                leaves: self.queues.leaf_names().join(", "),
            })?;
        let queue = &self.queues.queues()[leaf];
        if queue.state == QueueState::Stopped {
            return Err(ClusterError::QueueStopped(queue.path.clone()));
        }
        Ok(leaf)
    }

    /// Refuses one more active app of `user` in leaf `leaf` beyond its
    /// maximum-applications or the user's share of them.
    pub(super) fn check_room_for_app(&self, leaf: usize, user: &str) -> Result<(), ClusterError> {
        let queue = &self.queues.queues()[leaf];
        let active = self.active_counts.of_queue(leaf);
        if active >= queue.maximum_applications {
            return Err(ClusterError::QueueFull {
                queue: queue.path.clone(),
                active,
            });
        }
        // YARN's per-user share of it (LeafQueue's maxApplicationsPerUser):
        // maximum-applications × minimum-user-limit-percent × user-limit-factor.
        let per_user = (queue.maximum_applications as f64 * queue.minimum_user_limit_percent
            / 100.0
            * queue.user_limit_factor)
            .clamp(1.0, queue.maximum_applications.max(1) as f64) as u64;
        let of_user = self.active_counts.of_user(leaf, user);
        if of_user >= per_user {
            return Err(ClusterError::UserFull {
                user: user.to_string(),
                queue: queue.path.clone(),
                active: of_user,
                maximum: per_user,
            });
        }
        Ok(())
    }

    /// Refuses a label (named by `field`) the cluster lacks or leaf
    /// `queue_index` may not use; "" (the default partition) is always fine.
    pub(super) fn check_label(
        &self,
        queue_index: usize,
        field: &str,
        label: &str,
    ) -> Result<(), ClusterError> {
        if label.is_empty() {
            return Ok(());
        }
        if self.labels.exclusive(label).is_none() {
            let known: Vec<&str> = self.labels.iter().map(|(name, _)| name).collect();
            return Err(ClusterError::UnknownLabel {
                field: field.into(),
                label: label.into(),
                known: if known.is_empty() {
                    "none".into()
                } else {
                    known.join(", ")
                },
            });
        }
        let queue = &self.queues.queues()[queue_index];
        if !queue.partitions.may_use(label) {
            return Err(ClusterError::LabelNotAccessible {
                field: field.into(),
                queue: queue.path.clone(),
                label: label.into(),
            });
        }
        Ok(())
    }

    /// Creates the containers of `placements`, which the scheduler has checked
    /// against a snapshot of this state; checked again here all the same, all
    /// before any is created, so a bad list changes nothing.
    pub fn allocate(
        &mut self,
        placements: &[Placement],
        now: u64,
    ) -> Result<Vec<Allocation>, ClusterError> {
        self.allocate_on(placements, now, false)
    }

    /// `placements` cut, container by container in their order, to the
    /// places left in each node's queue (a policy sees the room a queue
    /// has left, not how many containers it may still hold).
    pub fn within_queue_places(&self, mut placements: Vec<Placement>) -> Vec<Placement> {
        let positions: std::collections::BTreeSet<usize> =
            placements.iter().map(|p| p.node).collect();
        let mut left: HashMap<usize, usize> = self
            .nodes
            .values()
            .enumerate()
            .filter(|(position, _)| positions.contains(position))
            .map(|(position, node)| {
                let waiting = self.waiting_opportunistic(node);
                (position, self.opportunistic_queue.saturating_sub(waiting))
            })
            .collect();
        for placement in &mut placements {
            let places = left.entry(placement.node).or_default();
            let count = (placement.count as usize).min(*places);
            *places -= count;
            placement.count = count as u32;
        }
        placements.retain(|p| p.count > 0);
        placements
    }

    /// As [`Cluster::allocate`], into the queues of the nodes' agents:
    /// each placement must be of an opportunistic ask, and fit in its
    /// node's [`Cluster::queue_room_of`] with the node's queue not full.
    pub fn allocate_queued(
        &mut self,
        placements: &[Placement],
        now: u64,
    ) -> Result<Vec<Allocation>, ClusterError> {
        self.allocate_on(placements, now, true)
    }

    fn allocate_on(
        &mut self,
        placements: &[Placement],
        now: u64,
        queued: bool,
    ) -> Result<Vec<Allocation>, ClusterError> {
        let total = |list: &[Placement]| list.iter().map(|p| u64::from(p.count)).sum::<u64>();
        if self.any_constrained(placements)
            && total(&self.within_constraints(placements.to_vec())) != total(placements)
        {
            return Err(ClusterError::BadPlacement(
                "a placement breaks its ask's placement constraint".into(),
            ));
        }
        let node_ids = self.ids_of_nodes(placements.iter().map(|p| p.node));
        let mut free: HashMap<usize, Resources> = HashMap::new();
        let mut pending: HashMap<(usize, usize), u32> = HashMap::new();
        // Queue slots left per node, for queued placements.
        let mut slots: HashMap<usize, usize> = HashMap::new();
        for placement in placements {
            let node_id = node_ids
                .get(&placement.node)
                .ok_or_else(|| ClusterError::BadPlacement(format!("no node {}", placement.node)))?;
            let app = self
                .apps
                .get(placement.app)
                .ok_or_else(|| ClusterError::BadPlacement(format!("no app {}", placement.app)))?;
            let ask = app.asks.get(placement.ask).ok_or_else(|| {
                ClusterError::BadPlacement(format!("app {} has no ask {}", app.id, placement.ask))
            })?;
            let node = &self.nodes[node_id];
            if ask.avoids(node) {
                return Err(ClusterError::BadPlacement(format!(
                    "{} of {} may not go to node {node_id}: its master blacklisted it",
                    ask.resources, app.id
                )));
            }
            if !self.may_run_on(&ask.partition, &node.partition) {
                return Err(ClusterError::BadPlacement(format!(
                    "{} of {} asks for partition {:?}: node {node_id} is in {:?}",
                    ask.resources, app.id, ask.partition, node.partition
                )));
            }
            if queued {
                if ask.execution_type != super::ExecutionType::Opportunistic {
                    return Err(ClusterError::BadPlacement(format!(
                        "{} of {} is guaranteed: it cannot wait in node {node_id}'s queue",
                        ask.resources, app.id
                    )));
                }
                let left = slots.entry(placement.node).or_insert_with(|| {
                    self.opportunistic_queue
                        .saturating_sub(self.waiting_opportunistic(node))
                });
                if (placement.count as usize) > *left {
                    return Err(ClusterError::BadPlacement(format!(
                        "{} × {} of {} does not fit in node {node_id}'s queue: {left} of {} places left",
                        placement.count, ask.resources, app.id, self.opportunistic_queue
                    )));
                }
                *left -= placement.count as usize;
            }
            let node_free = free.entry(placement.node).or_insert_with(|| {
                if queued {
                    self.queue_room_of(node)
                } else {
                    node.free()
                }
            });
            let ask_pending = pending
                .entry((placement.app, placement.ask))
                .or_insert(ask.pending);
            match ask.resources.times(placement.count) {
                Some(total) if placement.count <= *ask_pending && total.fits_in(node_free) => {
                    *node_free -= total;
                    *ask_pending -= placement.count;
                }
                _ => {
                    return Err(ClusterError::BadPlacement(format!(
                        "{} × {} of {} does not fit: node {node_id} has {node_free} free, the ask {} pending",
                        placement.count, ask.resources, app.id, ask_pending
                    )));
                }
            }
        }
        let mut allocations = Vec::new();
        for placement in placements {
            for _ in 0..placement.count {
                allocations.push(self.create_container(placement, &node_ids[&placement.node], now));
            }
        }
        Ok(allocations)
    }

    /// The ids of the nodes at these positions (in id order, as a snapshot
    /// numbers them), copied only for the nodes named: a round that places
    /// a few containers copies a few ids, not every node's.
    fn ids_of_nodes(&self, positions: impl Iterator<Item = usize>) -> HashMap<usize, String> {
        let mut wanted: Vec<usize> = positions.collect();
        wanted.sort_unstable();
        wanted.dedup();
        let mut ids = HashMap::with_capacity(wanted.len());
        let mut wanted = wanted.into_iter().peekable();
        for (position, id) in self.nodes.keys().enumerate() {
            let Some(&next) = wanted.peek() else {
                break;
            };
            if next == position {
                ids.insert(position, id.clone());
                wanted.next();
            }
        }
        ids
    }

    fn create_container(&mut self, placement: &Placement, node_id: &str, now: u64) -> Allocation {
        let local = match (
            &self.apps[placement.app].asks[placement.ask].locality,
            self.nodes.get(node_id),
        ) {
            (Some(locality), Some(node)) => locality.is_local(node, &self.nodes),
            _ => false,
        };
        let app = &mut self.apps[placement.app];
        let ask = &mut app.asks[placement.ask];
        // A failed container's slot asked for again runs as its next attempt.
        let attempt = ask.retries.pop().unwrap_or(1);
        ask.pending -= 1;
        // An application master's app: its containers carry the master's
        // attempt, as YARN's ids do.
        let id_attempt = match &app.master {
            Some(master) if placement.ask != 0 => master.attempt,
            Some(_) => attempt,
            None => 1,
        };
        // Its gang is placed whole: the round's gang check kept this
        // placement only with the rest of its minimum.
        if let Some(gang) = &mut ask.gang {
            gang.placed = true;
        }
        // Placed on one of its places: delay scheduling starts again
        // (YARN's resetSchedulingOpportunities, not after an off-switch
        // placement).
        if let Some(locality) = &mut ask.locality
            && local
        {
            locality.reset();
        }
        let (resources, duration_ms) = (ask.resources, ask.simulated_duration_ms());
        let app_seq = placement.app + 1;
        let seq = self.next_container;
        // YARN's form: the epoch only once there is one.
        let id = match self.epoch {
            0 => format!(
                "container_{}_{app_seq:04}_{id_attempt:02}_{seq:06}",
                self.cluster_timestamp
            ),
            epoch => format!(
                "container_e{epoch}_{}_{app_seq:04}_{id_attempt:02}_{seq:06}",
                self.cluster_timestamp
            ),
        };
        if let Some(master) = &mut app.master {
            if placement.ask == 0 {
                master.start_attempt(attempt, id.clone());
            } else {
                master.allocated(id.clone());
            }
        }
        self.next_container += 1;
        app.hold(resources, now);
        let queue = &self.queues.queues()[app.queue_index].path;
        self.decayed.hold(queue, &app.user, resources, now);
        app.running_containers += 1;
        app.containers_run = app.containers_run.saturating_add(1);
        if app.state == AppState::Accepted {
            app.state = AppState::Running;
            app.start_time_ms = Some(now);
            tracing::info!(app = %app.id, from = "ACCEPTED", to = "RUNNING", cause = "first container allocated", queue = %app.queue, user = %app.user, submitter = %app.submitter, "application state changed");
        }
        let node = self.nodes.get_mut(node_id).expect("checked by the caller");
        let node_kind = node.kind;
        node.allocated += resources;
        node.containers.insert(id.clone());
        // A remote node is told to launch it in every heartbeat answer until
        // it reports the container running (see agent_link.rs); a simulated
        // one ends it after its duration.
        if node.kind == NodeKind::Simulated {
            // Saturating: a bounded time plus a bounded duration cannot
            // overflow (limits.rs), and a saturated end would only mean "never".
            // Containers that ended early (killed, preempted, lost) leave
            // their end behind; drop those once they outnumber the living.
            if self.simulated_ends.len() > 2 * self.containers.len() + 1024 {
                let containers = &self.containers;
                self.simulated_ends
                    .retain(|Reverse((_, id))| containers.contains_key(id));
            }
            self.simulated_ends
                .push(Reverse((now.saturating_add(duration_ms), id.clone())));
        }
        if app.containers.len() >= super::app::MAX_CONTAINER_RECORDS
            && let Some(oldest) = app.containers.pop_front()
        {
            durable::container_dropped(&mut self.changes, &oldest.id);
        }
        durable::container_changed(&mut self.changes, &id, &app.id, seq);
        app.containers.push_back(super::ContainerRecord {
            seq,
            id: id.clone(),
            node: node_id.to_string(),
            attempt,
            start_time_ms: now,
            finish_time_ms: None,
            exit_status: None,
            diagnostics: String::new(),
        });
        let container = Container {
            id: id.clone(),
            app: app.id.clone(),
            ask: placement.ask,
            node: node_id.to_string(),
            resources,
            start_time_ms: now,
            duration_ms,
            attempt,
            seq,
            // A simulated node runs it at once; an agent reports it.
            launched_ms: (node_kind == NodeKind::Simulated).then_some(now),
            exit_status: None,
            ended_ms: None,
        };
        self.containers.insert(id, container.clone());
        Allocation {
            container,
            project: app.project.clone(),
            user: app.user.clone(),
        }
    }

    /// Containers on simulated nodes whose duration is up by `now` end; each
    /// is returned with the time it ended.
    pub fn finish_simulated(&mut self, now: u64) -> Vec<(Container, u64)> {
        let mut ended = Vec::new();
        while let Some(Reverse((end, _))) = self.simulated_ends.peek()
            && *end <= now
        {
            let Reverse((end, id)) = self.simulated_ends.pop().expect("peeked");
            if let Some(container) = self.finish_container(&id, end) {
                ended.push((container, end));
            }
        }
        ended
    }

    /// Fails an active app for `cause` (a gang not placed in time): as
    /// [`Cluster::kill_app`], but FAILED.
    pub fn fail_app(&mut self, index: usize, cause: &str, now: u64) -> Vec<Container> {
        self.end_app(index, AppState::Failed, cause, now)
    }

    /// Kills an active app: its pending containers are dropped and its
    /// running ones end now (returned, to be charged; agents are told to
    /// kill theirs). `cause` is logged and kept as its diagnostics.
    pub fn kill_app(&mut self, index: usize, cause: &str, now: u64) -> Vec<Container> {
        self.end_app(index, AppState::Killed, cause, now)
    }

    /// Ends an active app as `state` (KILLED or FAILED), with the same
    /// effects as [`Cluster::kill_app`].
    pub(super) fn end_app(
        &mut self,
        index: usize,
        state: AppState,
        cause: &str,
        now: u64,
    ) -> Vec<Container> {
        let Some(app) = self.apps.get_mut(index) else {
            return Vec::new();
        };
        if app.state.has_ended() {
            return Vec::new();
        }
        for ask in &mut app.asks {
            ask.pending = 0;
            ask.retries.clear();
        }
        tracing::info!(app = %app.id, from = app.state.as_str(), to = state.as_str(), cause, queue = %app.queue, user = %app.user, submitter = %app.submitter, "application state changed");
        durable::app_changed(&mut self.changes, &app.id);
        app.state = state;
        app.finish_time_ms = Some(now);
        app.diagnostics = cause.to_string();
        let app_id = app.id.clone();
        let ids: Vec<String> = self
            .containers
            .values()
            .filter(|c| c.app == app_id)
            .map(|c| c.id.clone())
            .collect();
        let ended = ids
            .iter()
            .filter_map(|c| self.end_container(c, now, EndCause::Killed))
            .collect();
        self.app_ended(index);
        ended
    }

    /// Fails the apps whose containers used up their attempts since the
    /// last call; returns their other containers, which end now.
    pub(super) fn fail_apps(&mut self, now: u64) -> Vec<Container> {
        let failing = std::mem::take(&mut self.failing);
        failing
            .into_iter()
            .flat_map(|(index, why)| self.end_app(index, AppState::Failed, &why, now))
            .collect()
    }

    /// Takes an app out of its reservation: it goes on in its queue as any
    /// other app (reservation-move-on-expiry).
    pub fn leave_reservation(&mut self, index: usize) {
        if let Some(app) = self.apps.get_mut(index)
            && let Some(reservation) = app.reservation_id.take()
        {
            durable::app_changed(&mut self.changes, &app.id);
            tracing::info!(app = %app.id, reservation = %reservation, queue = %app.queue, "reservation ended; the app moves to its queue");
        }
    }

    /// Loses a container (ABORTED) last known to run at `seen`: it ends
    /// then, or at its start if that is later, never after `now`.
    pub(super) fn lose_container(&mut self, id: &str, seen: u64, now: u64) -> Option<Container> {
        let container = self.containers.get(id)?;
        let started = container.launched_ms.unwrap_or(container.start_time_ms);
        self.end_container(id, seen.max(started).min(now), EndCause::Lost)
    }

    /// Preempts a container: it ends now, and its app asks for it again.
    pub fn preempt(&mut self, id: &str, now: u64) -> Option<Container> {
        self.end_container(id, now, EndCause::Preempted)
    }

    /// A container that ran to its end (no-op if it already ended).
    fn finish_container(&mut self, id: &str, now: u64) -> Option<Container> {
        self.end_container(id, now, EndCause::Succeeded)
    }

    /// Ends a container (no-op if it already ended): its node and app let
    /// go of it; a remote node is told to kill it if the cluster ended it
    /// (killed, preempted); its app asks for it again if it was preempted,
    /// lost, or failed with attempts left; an app whose last container
    /// ended finishes, and one whose container failed its last attempt is
    /// queued to fail (`fail_apps`).
    pub(super) fn end_container(
        &mut self,
        id: &str,
        now: u64,
        cause: EndCause,
    ) -> Option<Container> {
        let mut container = self.containers.remove(id)?;
        self.preemption_marks.remove(id);
        container.exit_status = Some(cause.exit_status());
        container.ended_ms = Some(now);
        durable::container_changed(&mut self.changes, id, &container.app, container.seq);
        if let Some(node) = self.nodes.get_mut(&container.node) {
            node.allocated -= container.resources;
            node.containers.remove(id);
            node.launched.remove(id);
            node.queued.remove(id);
            if node.kind == NodeKind::Remote
                && matches!(
                    cause,
                    EndCause::Killed
                        | EndCause::Preempted
                        | EndCause::Released
                        | EndCause::Decommissioned
                )
            {
                node.to_kill.insert(id.to_string(), cause.exit_status());
            }
        }
        let Some(&index) = self.app_index.get(&container.app) else {
            return Some(container);
        };
        let app = &mut self.apps[index];
        app.release(container.resources, container.start_time_ms, now);
        if let Some(queue) = self.queues.queues().get(app.queue_index) {
            self.decayed
                .release(&queue.path, &app.user, container.resources, now);
        }
        app.running_containers = app.running_containers.saturating_sub(1);
        // Records are in creation order: found by number, not by a walk.
        if let Ok(at) = app
            .containers
            .binary_search_by_key(&container.seq, |r| r.seq)
        {
            let record = &mut app.containers[at];
            record.finish_time_ms = Some(now);
            record.exit_status = Some(cause.exit_status());
            if let EndCause::Failed { diagnostics, .. } = &cause {
                record.diagnostics = diagnostics.clone();
            }
        }
        let active = !app.state.has_ended();
        if app.master.is_some() {
            self.end_master_container(index, &container, &cause, now);
            return Some(container);
        }
        let ask_again = match &cause {
            EndCause::Succeeded => {
                app.finished_containers += 1;
                false
            }
            EndCause::Killed | EndCause::Released => false,
            EndCause::Preempted => {
                app.preempted_containers += 1;
                true
            }
            EndCause::Lost | EndCause::Decommissioned => {
                app.lost_containers += 1;
                true
            }
            EndCause::Failed {
                exit_status,
                diagnostics,
            } => {
                app.failed_containers += 1;
                let max_attempts = app.asks.get(container.ask).map_or(1, |a| a.max_attempts);
                tracing::info!(container = %container.id, app = %app.id, exit_status, attempt = container.attempt, max_attempts, "container failed");
                if container.attempt < max_attempts {
                    if active && let Some(ask) = app.asks.get_mut(container.ask) {
                        ask.retries.push(container.attempt + 1);
                    }
                    true
                } else {
                    if active {
                        app.exit_status = Some(*exit_status);
                        // The agent's words begin "exited with status N"
                        // too: said once.
                        let said = format!("exited with status {exit_status}");
                        let detail = diagnostics.strip_prefix(&said).unwrap_or(diagnostics);
                        let detail = match detail {
                            "" => String::new(),
                            rest if rest.starts_with(';') => rest.to_string(),
                            rest => format!(": {rest}"),
                        };
                        let why = format!(
                            "container {} {said} on its attempt {} of {max_attempts}{detail}",
                            container.id, container.attempt
                        );
                        self.failing.push((index, why));
                    }
                    return Some(container);
                }
            }
        };
        let app = &mut self.apps[index];
        if ask_again
            && active
            && let Some(ask) = app.asks.get_mut(container.ask)
        {
            ask.pending = ask.pending.saturating_add(1);
        }
        if app.is_done() && active {
            app.state = AppState::Finished;
            app.finish_time_ms = Some(now);
            tracing::info!(app = %app.id, from = "RUNNING", to = "FINISHED", cause = "all its containers finished", queue = %app.queue, user = %app.user, submitter = %app.submitter, "application state changed");
            self.app_ended(index);
        }
        Some(container)
    }

    /// The registered nodes, in id order.
    pub fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.nodes.values()
    }

    /// How many nodes are in each state, in one pass.
    pub fn node_counts(&self) -> NodeCounts {
        let mut counts = NodeCounts {
            registered: self.nodes.len(),
            lost: self.lost_nodes.len(),
            ..NodeCounts::default()
        };
        for node in self.nodes.values() {
            match node.state() {
                NodeState::Running => counts.running += 1,
                NodeState::Unhealthy => counts.unhealthy += 1,
                NodeState::Decommissioning => counts.decommissioning += 1,
                NodeState::Decommissioned => counts.decommissioned += 1,
                NodeState::Lost => {}
            }
        }
        counts
    }

    /// The apps kept: every active one and the most recently ended ones.
    pub fn apps(&self) -> &AppTable {
        &self.apps
    }

    /// The submission number of app `id`, if it is kept.
    pub fn app_index(&self, id: &str) -> Option<usize> {
        self.app_index.get(id).copied()
    }

    /// App `id`, if it is kept.
    pub fn app(&self, id: &str) -> Option<&App> {
        self.app_index.get(id).map(|&i| &self.apps[i])
    }

    /// Sets the priority of the app numbered `index` (kept for the next
    /// round: nothing is indexed by priority).
    pub fn set_priority(&mut self, index: usize, priority: i32) {
        let app = &mut self.apps[index];
        if app.priority != priority {
            app.priority = priority;
            durable::app_changed(&mut self.changes, &app.id);
        }
    }

    /// Cuts the priority of every app not finished to `highest`, as YARN
    /// checks a recovered app's priority against the cluster's highest
    /// (which may have been lowered since it was submitted) as a new
    /// one's. Returns the ids of the apps cut.
    pub fn cap_priorities(&mut self, highest: i32) -> Vec<String> {
        let mut cut = Vec::new();
        for &index in &self.active {
            let app = &mut self.apps[index];
            if app.priority > highest {
                app.priority = highest;
                durable::app_changed(&mut self.changes, &app.id);
                cut.push(app.id.clone());
            }
        }
        cut
    }

    /// Indices of the apps not finished, in submission order.
    pub fn active_apps(&self) -> impl Iterator<Item = usize> + '_ {
        self.active.iter().copied()
    }

    /// Container `id`, if it runs (an ended one is only in its app's
    /// records).
    pub fn container(&self, id: &str) -> Option<&Container> {
        self.containers.get(id)
    }

    /// The running containers, in no particular order.
    pub fn containers(&self) -> impl Iterator<Item = &Container> {
        self.containers.values()
    }

    /// What the registered nodes offer together (unhealthy ones nothing).
    pub fn capacity(&self) -> Resources {
        self.nodes
            .values()
            .fold(Resources::ZERO, |sum, n| sum + n.usable_capacity())
    }

    /// Where the next pass starts among the asks placed in rounds of
    /// their own (see `scheduler::Part`).
    pub fn restricted_turn(&self) -> usize {
        self.restricted_turn
    }

    /// Sets where the next pass starts among them.
    pub fn set_restricted_turn(&mut self, turn: usize) {
        self.restricted_turn = turn;
    }

    /// What the nodes of partition `label` ("" the default one) offer in
    /// all (unhealthy ones nothing).
    pub fn partition_capacity(&self, label: &str) -> Resources {
        self.nodes
            .values()
            .filter(|n| n.partition == label)
            .fold(Resources::ZERO, |sum, n| sum + n.usable_capacity())
    }

    /// What the nodes offer new containers now, together ([`Node::free`]).
    pub fn free(&self) -> Resources {
        self.nodes
            .values()
            .fold(Resources::ZERO, |sum, n| sum + n.free())
    }

    /// What the running containers hold together.
    pub fn allocated(&self) -> Resources {
        self.nodes
            .values()
            .fold(Resources::ZERO, |sum, n| sum + n.allocated)
    }

    /// Resources the active apps ask for and have not been allocated.
    pub fn pending(&self) -> Resources {
        self.active.iter().fold(Resources::ZERO, |sum, &i| {
            sum + self.apps[i].pending_resources()
        })
    }

    /// Whether any active app waits for a container.
    pub fn has_pending(&self) -> bool {
        self.active
            .iter()
            .any(|&i| self.apps[i].pending_containers() > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{AgentReport, AskSpec};
    use crate::queues::QueueProperties;

    fn test_cluster() -> Cluster {
        Cluster::new(
            1,
            QueueTree::from_properties(&QueueProperties::defaults()).unwrap(),
        )
    }

    /// An app of `count` containers of 1 GB, 1 vcore, for `duration_ms`.
    fn request(queue: &str, user: &str, count: u32, duration_ms: u64) -> SubmitApp {
        SubmitApp {
            name: "t".into(),
            ..SubmitApp::new(
                user,
                queue,
                "demo",
                vec![AskSpec::sized(count, 1024, 1, 0, duration_ms)],
            )
        }
    }

    fn submit(cluster: &mut Cluster, count: u32, duration_ms: u64) -> usize {
        let request = request("default", "alice", count, duration_ms);
        let id = cluster.submit(request, "test", 0).unwrap().id.clone();
        cluster.app_index(&id).unwrap()
    }

    /// The counts a submission checks equal a walk over the active apps
    /// after submissions, kills, a queue refresh that renumbers the leaves,
    /// and the limits they enforce.
    #[test]
    fn active_counts_match_a_walk_as_apps_come_and_go() {
        let tree = |queues: &str| {
            let mut properties = QueueProperties::default();
            properties.set("yarn.scheduler.capacity.root.queues", queues);
            for queue in queues.split(',') {
                let capacity = format!("yarn.scheduler.capacity.root.{queue}.capacity");
                properties.set(&capacity, &(100 / queues.split(',').count()).to_string());
                let most = format!("yarn.scheduler.capacity.root.{queue}.maximum-applications");
                properties.set(&most, "6");
            }
            QueueTree::from_properties(&properties).unwrap()
        };
        let mut cluster = Cluster::new(1, tree("a,b"));
        let walked = |cluster: &Cluster| cluster.walk_active_counts();
        let submit_as = |cluster: &mut Cluster, queue: &str, user: &str| {
            cluster
                .submit(request(queue, user, 1, 1000), "test", 0)
                .map(|app| app.id.clone())
                .map_err(|e| e.to_string())
        };
        let mut ids = Vec::new();
        for (queue, user) in [
            ("a", "u1"),
            ("a", "u2"),
            ("b", "u1"),
            ("a", "u1"),
            ("b", "u2"),
        ] {
            ids.push(submit_as(&mut cluster, queue, user).unwrap());
            assert_eq!(cluster.active_counts, walked(&cluster));
        }
        let first = cluster.app_index(&ids[0]).unwrap();
        cluster.kill_app(first, "test", 1);
        assert_eq!(cluster.active_counts, walked(&cluster));
        assert_eq!(
            cluster
                .active_counts
                .of_queue(cluster.queues.leaf("a").unwrap()),
            2
        );
        // The leaves are renumbered: c comes first, then b, a.
        cluster.replace_queues(tree("c,b,a,d"), 0).unwrap();
        assert_eq!(cluster.active_counts, walked(&cluster));
        let a = cluster.queues.leaf("a").unwrap();
        assert_eq!(
            (
                cluster.active_counts.of_queue(a),
                cluster.active_counts.of_user(a, "u1")
            ),
            (2, 1)
        );
        // maximum-applications 6 in a, its per-user share 6 × 100 % × 1 = 6.
        for _ in 0..4 {
            submit_as(&mut cluster, "a", "u3").unwrap();
        }
        let full = submit_as(&mut cluster, "a", "u3").unwrap_err();
        assert!(full.contains("6"), "{full}");
        assert_eq!(cluster.active_counts, walked(&cluster));
    }

    #[test]
    fn simulated_containers_run_their_duration_then_the_app_finishes() {
        let mut cluster = test_cluster();
        cluster
            .register_node(
                "n1",
                NodeKind::Simulated,
                Resources::new(4096, 4, 0),
                "test",
                0,
            )
            .unwrap();
        let app = submit(&mut cluster, 2, 1000);
        let allocated = cluster
            .allocate(
                &[Placement {
                    app,
                    ask: 0,
                    node: 0,
                    count: 2,
                }],
                100,
            )
            .unwrap();
        assert_eq!(allocated.len(), 2);
        assert_eq!(cluster.apps()[app].state, AppState::Running);
        assert!(cluster.finish_simulated(1099).is_empty());
        let ended = cluster.finish_simulated(5000);
        assert_eq!(
            ended.iter().map(|(_, at)| *at).collect::<Vec<_>>(),
            vec![1100, 1100]
        );
        assert_eq!(cluster.apps()[app].state, AppState::Finished);
        assert_eq!(cluster.allocated(), Resources::ZERO);
    }

    #[test]
    fn an_apps_resource_seconds_count_each_container_from_start_to_end() {
        let mut cluster = test_cluster();
        let index = submit(&mut cluster, 2, 1000);
        let app = &mut cluster.apps[index];
        let small = Resources::new(1024, 1, 0);
        let large = Resources::new(2048, 2, 1);
        app.hold(small, 0);
        app.hold(large, 1_000);
        // The small one ended at 500, reported only now: what was counted
        // past its end is taken back.
        app.release(small, 0, 500);
        assert_eq!(app.usage_at(2_000).memory_mb_seconds, 512.0 + 2048.0);
        app.release(large, 1_000, 3_000);
        let used = app.usage_at(10_000);
        assert_eq!(used.memory_mb_seconds, 512.0 + 4096.0);
        assert_eq!(used.vcore_seconds, 0.5 + 4.0);
        assert_eq!(used.gpu_seconds, 2.0);

        // The clock stepped back: each container still counts from its
        // start to its end.
        let before = app.usage_at(10_000).memory_mb_seconds;
        app.hold(small, 20_000);
        app.hold(large, 19_000);
        app.release(large, 19_000, 19_500);
        app.release(small, 20_000, 21_000);
        let counted = app.usage_at(30_000).memory_mb_seconds - before;
        assert_eq!(counted, 2048.0 * 0.5 + 1024.0);
    }

    #[test]
    fn placements_that_do_not_fit_are_refused_whole() {
        let mut cluster = test_cluster();
        cluster
            .register_node(
                "n1",
                NodeKind::Simulated,
                Resources::new(2048, 2, 0),
                "test",
                0,
            )
            .unwrap();
        let app = submit(&mut cluster, 5, 1000);
        let cases = [
            Placement {
                app,
                ask: 0,
                node: 0,
                count: 3,
            }, // over the node
            Placement {
                app,
                ask: 0,
                node: 1,
                count: 1,
            }, // no such node
            Placement {
                app,
                ask: 1,
                node: 0,
                count: 1,
            }, // no such ask
            Placement {
                app: 9,
                ask: 0,
                node: 0,
                count: 1,
            }, // no such app
        ];
        for placement in cases {
            assert!(cluster.allocate(&[placement], 0).is_err(), "{placement:?}");
        }
        // Each fits alone, not together: nothing is created.
        let half = Placement {
            app,
            ask: 0,
            node: 0,
            count: 2,
        };
        assert!(cluster.allocate(&[half, half], 0).is_err());
        assert_eq!(cluster.allocated(), Resources::ZERO);
        assert_eq!(cluster.apps()[app].pending_containers(), 5);
    }

    #[test]
    fn remote_heartbeats_deliver_and_finish() {
        let mut cluster = test_cluster();
        cluster
            .register_node(
                "n1",
                NodeKind::Remote,
                Resources::new(4096, 4, 0),
                "test",
                0,
            )
            .unwrap();
        let app = submit(&mut cluster, 1, 1000);
        let allocated = cluster
            .allocate(
                &[Placement {
                    app,
                    ask: 0,
                    node: 0,
                    count: 1,
                }],
                10,
            )
            .unwrap();
        let id = allocated[0].container.id.clone();
        let beat = |cluster: &mut Cluster, finished: &[String], now| {
            let report = AgentReport {
                finished,
                ..Default::default()
            };
            cluster.agent_heartbeat("n1", report, now)
        };
        let outcome = beat(&mut cluster, &[], 20).unwrap();
        assert!(outcome.ended.is_empty());
        assert_eq!(outcome.orders.launch[0].container_id, id);
        let outcome = beat(&mut cluster, std::slice::from_ref(&id), 30).unwrap();
        assert_eq!(outcome.ended.len(), 1);
        assert!(outcome.orders.launch.is_empty());
        assert!(matches!(
            cluster.agent_heartbeat("n2", AgentReport::default(), 0),
            Err(ClusterError::UnknownNode(_))
        ));
    }

    #[test]
    fn a_killed_app_ends_its_containers_and_drops_what_is_pending() {
        let mut cluster = test_cluster();
        cluster
            .register_node(
                "n1",
                NodeKind::Simulated,
                Resources::new(4096, 4, 0),
                "test",
                0,
            )
            .unwrap();
        let app = submit(&mut cluster, 6, 60_000);
        let placement = Placement {
            app,
            ask: 0,
            node: 0,
            count: 4,
        };
        cluster.allocate(&[placement], 0).unwrap();
        let ended = cluster.kill_app(app, "its reservation expired", 5_000);
        assert_eq!(ended.len(), 4);
        let killed = &cluster.apps()[app];
        assert_eq!(killed.state, AppState::Killed);
        assert_eq!(killed.pending_containers(), 0);
        assert_eq!(killed.finish_time_ms, Some(5_000));
        assert_eq!(cluster.allocated(), Resources::ZERO);
        assert!(!cluster.has_pending());
        assert!(cluster.kill_app(app, "again", 6_000).is_empty());
    }

    #[test]
    fn ended_apps_beyond_the_retention_are_let_go_and_counted() {
        let mut cluster = test_cluster();
        cluster.keep_ended_apps(0);
        cluster
            .register_node(
                "n1",
                NodeKind::Simulated,
                Resources::new(4096, 4, 0),
                "test",
                0,
            )
            .unwrap();
        let killed = submit(&mut cluster, 2, 1000);
        let finished = submit(&mut cluster, 1, 1000);
        assert!(cluster.kill_app(killed, "test", 10).is_empty());
        let placement = Placement {
            app: finished,
            ask: 0,
            node: 0,
            count: 1,
        };
        cluster.allocate(&[placement], 20).unwrap();
        cluster.finish_simulated(5000);
        assert!(cluster.apps().is_empty(), "nothing ended is kept");
        assert_eq!(cluster.app_index("application_1_0001"), None);
        assert_eq!(cluster.app_totals(), (2, 1, 1));
        // Ids are never reused.
        let next = submit(&mut cluster, 1, 1000);
        assert_eq!(cluster.apps()[next].id, "application_1_0003");
        // An id handed out and never submitted under is no submission.
        cluster.new_app_id();
        assert_eq!(cluster.app_totals(), (3, 1, 1));
    }

    #[test]
    fn killed_containers_of_simulated_nodes_leave_nothing_behind() {
        let mut cluster = test_cluster();
        cluster
            .register_node(
                "n1",
                NodeKind::Simulated,
                Resources::new(4096, 4, 0),
                "test",
                0,
            )
            .unwrap();
        for round in 0..2_000 {
            let app = submit(&mut cluster, 4, 60_000);
            let placement = Placement {
                app,
                ask: 0,
                node: 0,
                count: 4,
            };
            cluster.allocate(&[placement], round).unwrap();
            cluster.kill_app(app, "test", round);
        }
        assert!(
            cluster.nodes["n1"].to_kill.is_empty(),
            "simulated nodes get no orders"
        );
        assert!(
            cluster.simulated_ends.len() <= 1024 + 4,
            "{} ends kept for no container",
            cluster.simulated_ends.len()
        );
    }

    #[test]
    fn bad_submissions_are_refused() {
        let mut cluster = test_cluster();
        let mut request = SubmitApp {
            name: "t".into(),
            ..SubmitApp::new("a", "nope", "p", vec![])
        };
        assert!(matches!(
            cluster.submit(request.clone(), "test", 0),
            Err(ClusterError::UnknownQueue { .. })
        ));
        request.queue = "default".into();
        assert!(cluster.submit(request.clone(), "test", 0).is_err());
        request.asks = vec![AskSpec::sized(1, 0, 1, 0, 1)];
        assert!(cluster.submit(request, "test", 0).is_err());
        assert!(cluster.apps().is_empty());
    }
}
