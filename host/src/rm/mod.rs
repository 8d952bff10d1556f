//! The resource manager's event loop: one task owns the cluster and the quota
//! service and applies, in order, every command (node registration and
//! heartbeats, app submissions, queries from the API) and every timer
//! (scheduling round, QUOTA_COMPUTE, the multiplicator step). Nothing else
//! touches that state, so there are no locks on it.
//!
//! Policies are reached through the shared [`PolicyRuntime`]; loading one
//! happens outside the loop and only its publication is seen here.

pub mod application_masters;
pub mod assemble;
pub mod auto_queues;
pub mod budget;
pub mod charging;
pub mod excluded_nodes;
mod labels;
pub mod local_tracker;
pub mod notices;
pub mod policy_load;
pub mod policy_watch;
pub mod recovery;
pub mod requests;
pub mod scheduler_conf;
pub mod sim_nodes;
pub mod timers;
mod writer;
pub mod yarn_submission;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use crate::accounting::Accounting;
use crate::clock::Clock;
use crate::cluster::{
    Allocation, AppState, Cluster, ClusterError, Container, GangTimeout, NodeKind, Placement,
};
use crate::config::Settings;
use crate::metrics::{StateLabels, metrics};
use crate::policy::{PolicyKind, PolicyRuntime, Utilization, in_force};
use crate::queues::QueueTree;
use crate::quota::events::QuotaEvent;
use crate::quota::{ChargedContainer, EventLog, QuotaService, event_log};
use crate::resources::Resources;
use crate::scheduler;
use crate::scheduler::reclaim::{self, Starvation};
use crate::security::Security;
use crate::store::{Batch, Store, StoreError};

use crate::reservation::follower;
use crate::reservation::service::{ReservationError, ReservationService};
use notices::{AppEndWaits, PlacementNotice};
use timers::{Timer, Timers};

/// The owner of simulated nodes: no caller can heartbeat for them.
pub const SIMULATED_OWNER: &str = "weft (simulated)";

/// The state the loop owns.
pub struct ResourceManager {
    cluster: Cluster,
    quota: QuotaService,
    reservations: ReservationService,
    policies: Arc<PolicyRuntime>,
    /// Who may do what: checked by every request (see `requests.rs`).
    security: Arc<Security>,
    clock: Arc<dyn Clock>,
    started_ms: u64,
    /// App ids new-application handed out and not yet submitted.
    app_ids: crate::security::issued::IssuedIds,
    node_expiry_ms: u64,
    /// How long a decommission waits for a node's containers when the
    /// administrator names no timeout.
    decommission_timeout_ms: u64,
    /// `yarn.resourcemanager.nodes.exclude-path`, read at each refresh of
    /// the nodes (`excluded_nodes.rs`).
    nodes_exclude_path: Option<std::path::PathBuf>,
    /// The hosts it listed when last read (at the start or a refresh): a
    /// node registering under one is decommissioned.
    excluded_hosts: std::collections::BTreeSet<String>,
    /// `yarn.scheduler.maximum-allocation-*` (0: the largest node's).
    maximum_allocation: Resources,
    /// `yarn.cluster.max-application-priority`.
    max_application_priority: i32,
    /// When the last scheduling round ended and how long it took (real
    /// time): bounds the rounds heartbeats bring forward.
    last_round: Option<(std::time::Instant, Duration)>,
    /// An app was submitted since the last round: `serve`'s loop brings the
    /// next round forward ([`ResourceManager::early_round_due`]).
    submitted_since_round: bool,
    /// Reclaim's switch and patience, and who is starved since when.
    reclaim_after_ms: Option<u64>,
    /// How much one reclaim takes back, or whether it only says
    /// (`observe_only`).
    reclaim_limits: reclaim::ReclaimLimits,
    /// `…preemption.monitoring_interval`: ms before the next reclaim when
    /// the cap cut one short.
    reclaim_interval_ms: u64,
    starvation: Starvation,
    /// Where every change is written after each event (`commit`); `None`:
    /// nothing is (simulation, tests of the loop alone).
    store: Option<Store>,
    /// Writes a failed commit left: tried again, before the next ones.
    unsaved: Batch,
    /// After recovery, allocation waits for the nodes to come back.
    scheduling_wait: Option<recovery::SchedulingWait>,
    /// Containers a recovery found on agents' nodes, charged again only
    /// once their agent comes back saying it runs them: one it no longer
    /// has is charged nothing for the time the server was down.
    awaiting_agents: HashMap<String, ChargedContainer>,
    /// Each policy slot's generation when its versions were last saved.
    saved_policies: [Option<u64>; 3],
    /// The queue tree changed (refreshQueues, recovery): the next commit
    /// saves the configuration in force.
    queues_changed: bool,
    /// Queue changes made through the API, kept on top of the queue file.
    scheduler_conf: scheduler_conf::SchedulerConf,
    /// The leaves made for apps (`auto-queue-creation-v2`).
    auto_queues: auto_queues::AutoQueues,
    /// Where the quota service's events are recorded for `weft replay`
    /// (`weft.quota.event-log`), if anywhere.
    event_log: Option<EventLog>,
    /// Ended apps' records (`weft.accounting.enabled`), kept only with a store.
    accounting: Accounting,
    /// The last grant's number, once read from the store.
    last_grant: Option<u64>,
    /// Agents told at once when containers are placed on their node, so
    /// the launch does not wait for their next heartbeat: by node id, for
    /// the local agent and remote agents that wait for orders.
    placement_notices: foldhash::HashMap<String, Arc<PlacementNotice>>,
    /// Clients waiting for their app's end, told the moment it ends.
    app_end_waits: AppEndWaits,
}

impl std::fmt::Debug for ResourceManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceManager").finish_non_exhaustive()
    }
}

/// A command runs on the loop's state and returns its answer, which is
/// sent once the event's changes are committed (or their commit failed).
type Command = Box<dyn FnOnce(&mut ResourceManager) -> Reply + Send>;
type Reply = Box<dyn FnOnce(Result<(), String>) + Send>;

/// After a round, the pause before a heartbeat may bring the next one
/// forward, in multiples of the round's own duration.
const EARLY_ROUND_PAUSE: u32 = 4;

/// How many queued commands one commit may cover (group commit): their
/// answers wait for it, so it is kept small.
const MAX_COMMANDS_PER_COMMIT: usize = 64;

/// Accounting is switched off (`weft.accounting.enabled = false`).
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("accounting is off (weft.accounting.enabled = false)")]
pub struct AccountingOff;

/// How the API reaches the loop. Cheap to clone; clones share where they
/// lead, which changes when the server becomes active or steps down to
/// standby (`ha/`).
#[derive(Clone, Debug)]
pub struct RmHandle {
    link: Arc<std::sync::RwLock<Link>>,
}

#[derive(Clone, Debug)]
enum Link {
    /// To the running loop of the active resource manager.
    Active(mpsc::Sender<Command>),
    /// A standby: no loop; the active server's name, if known.
    Standby(Option<String>),
}

/// Why a command got no answer.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The loop stopped before it took the command or answered it.
    #[error("the resource manager is shutting down")]
    ShuttingDown,
    /// A bug: the command panicked. Its effects may be half applied; the
    /// loop goes on, and a log line and `weft_event_loop_panics_total` say so.
    #[error("the resource manager failed on this request (an internal error, logged): {0}")]
    Panicked(String),
    /// Done in memory, but the store refused the commit: it may or may not
    /// survive a restart (it is written with the next commit that succeeds).
    #[error("the store did not take this change (it may yet be kept; try again): {0}")]
    NotDurable(String),
    /// This server is a standby: another one (named, if known) is active.
    #[error("{}", standby_message(.0.as_deref()))]
    Standby(Option<String>),
}

/// What a standby answers: which server is active, for clients to go to.
fn standby_message(active: Option<&str>) -> String {
    match active {
        Some(active) => format!("this resource manager is STANDBY; the active one is {active}"),
        None => {
            "this resource manager is STANDBY; no server is active yet (an election is under way)"
                .into()
        }
    }
}

impl RmHandle {
    /// A handle of a standby server (no loop yet).
    pub fn standby(active: Option<String>) -> RmHandle {
        RmHandle {
            link: Arc::new(std::sync::RwLock::new(Link::Standby(active))),
        }
    }

    fn link(&self) -> Link {
        self.link
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    fn set_link(&self, link: Link) {
        *self
            .link
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = link;
    }

    /// From now on this handle (and its clones) lead to `active`'s loop.
    pub fn lead_to(&self, active: &RmHandle) {
        self.set_link(active.link());
    }

    /// From now on this handle answers as a standby naming `active`.
    pub fn stand_by(&self, active: Option<String>) {
        self.set_link(Link::Standby(active));
    }

    /// Whether it leads to an active resource manager.
    pub fn is_active(&self) -> bool {
        matches!(self.link(), Link::Active(_))
    }

    /// Refuses with [`CommandError::Standby`] on a standby.
    pub fn check_active(&self) -> Result<(), CommandError> {
        match self.link() {
            Link::Active(_) => Ok(()),
            Link::Standby(active) => Err(CommandError::Standby(active)),
        }
    }

    /// The active server's name, on a standby that knows it.
    pub fn active_elsewhere(&self) -> Option<String> {
        match self.link() {
            Link::Standby(active) => active,
            Link::Active(_) => None,
        }
    }

    /// Runs `f` on the loop's state, between two events, and returns its result.
    pub async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut ResourceManager) -> T + Send + 'static,
    ) -> Result<T, CommandError> {
        let (reply, answer) = oneshot::channel();
        let command: Command = Box::new(move |rm| {
            let result = guarded("command", || f(rm));
            Box::new(move |committed: Result<(), String>| {
                let _ =
                    reply.send(result.and_then(|value| {
                        committed.map(|()| value).map_err(CommandError::NotDurable)
                    }));
            })
        });
        let commands = match self.link() {
            Link::Active(commands) => commands,
            Link::Standby(active) => return Err(CommandError::Standby(active)),
        };
        commands
            .send(command)
            .await
            .map_err(|_| CommandError::ShuttingDown)?;
        answer.await.map_err(|_| CommandError::ShuttingDown)?
    }
}

/// Runs `f`, turning a panic into an error that is logged and counted, so
/// a bug in one command or timer cannot stop the loop.
fn guarded<T>(what: &str, f: impl FnOnce() -> T) -> Result<T, CommandError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic with no message".into());
        tracing::error!(what, %message, "the event loop caught a panic; it goes on");
        metrics()
            .event_loop_panics
            .get_or_create(&crate::metrics::WhatLabels {
                what: what.to_string(),
            })
            .inc();
        CommandError::Panicked(message)
    })
}

/// Why an event's changes are not in the store.
#[derive(Debug, Clone)]
enum CommitFailure {
    /// Another server holds the lease: this one must write nothing more.
    Fenced(String),
    Failed(String),
}

impl std::fmt::Display for CommitFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CommitFailure::Fenced(why) | CommitFailure::Failed(why) => f.write_str(why),
        }
    }
}

/// Commits the event's changes (a panic while gathering them is a failure).
fn commit(rm: &mut ResourceManager) -> Result<(), CommitFailure> {
    match guarded("commit", || rm.commit()) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) if error.is_fenced() => Err(CommitFailure::Fenced(error.to_string())),
        Ok(Err(error)) => Err(CommitFailure::Failed(error.to_string())),
        Err(panicked) => Err(CommitFailure::Failed(panicked.to_string())),
    }
}

/// The timers of the loop.
#[derive(Debug, Clone, Copy)]
pub struct Intervals {
    /// Between scheduling rounds (`weft.scheduler.interval-ms`).
    pub scheduling: Duration,
    /// Between QUOTA_COMPUTEs (`yarn.resourcemanager.quota.scheduling.period`).
    pub quota_compute: Duration,
    /// Between multiplicator steps
    /// (`yarn.resourcemanager.quota.multiplicator.interval`).
    pub multiplicator: Duration,
}

impl ResourceManager {
    /// The resource manager over `queues`, its reservations restored from
    /// `reservation_store`.
    fn new(
        settings: &Settings,
        queues: QueueTree,
        quota: QuotaService,
        reservation_store: Store,
        policies: Arc<PolicyRuntime>,
        security: Arc<Security>,
        clock: Arc<dyn Clock>,
    ) -> Result<ResourceManager, ReservationError> {
        let now = clock.now_ms();
        let reservations =
            ReservationService::open(settings, &queues, reservation_store, &policies, now)?;
        let base_queue_properties = queues.properties().clone();
        let mut cluster = Cluster::new(now, queues);
        cluster.keep_ended_apps(settings.max_completed_applications);
        cluster.set_usage_half_life(settings.scheduler.usage_half_life_ms);
        cluster.set_opportunistic_queue(settings.scheduler.opportunistic_queue_length);
        cluster.set_heartbeat_interval(settings.nodes.heartbeat_interval_ms);
        Ok(ResourceManager {
            cluster,
            quota,
            reservations,
            policies,
            security,
            clock,
            started_ms: now,
            app_ids: Default::default(),
            reclaim_after_ms: settings.scheduler.reclaim_after_ms,
            reclaim_limits: reclaim::ReclaimLimits {
                per_round: settings.scheduler.reclaim_per_round,
                observe_only: settings.scheduler.reclaim_observe_only,
                wait_before_kill_ms: settings.scheduler.reclaim_wait_before_kill_ms,
                ignored_over_capacity: settings.scheduler.reclaim_ignored_over_capacity,
                natural_termination: settings.scheduler.reclaim_natural_termination,
            },
            reclaim_interval_ms: settings.scheduler.reclaim_interval_ms,
            starvation: Starvation::default(),
            node_expiry_ms: settings.nodes.expiry_interval_ms,
            decommission_timeout_ms: settings.nodes.decommission_timeout_ms,
            nodes_exclude_path: settings.nodes_exclude_path.clone(),
            excluded_hosts: Default::default(),
            maximum_allocation: settings.scheduler.maximum_allocation,
            max_application_priority: settings.scheduler.max_application_priority,
            last_round: None,
            submitted_since_round: false,
            store: None,
            unsaved: Batch::default(),
            scheduling_wait: None,
            awaiting_agents: HashMap::new(),
            saved_policies: [None; 3],
            queues_changed: false,
            auto_queues: Default::default(),
            scheduler_conf: scheduler_conf::SchedulerConf::new(
                settings.scheduler_conf,
                base_queue_properties,
            ),
            event_log: None,
            accounting: Accounting::new(settings.accounting_enabled),
            last_grant: None,
            placement_notices: HashMap::default(),
            app_end_waits: AppEndWaits::default(),
        })
    }

    /// Records every quota event from now on in `log` (before `recover`,
    /// so the log has the recovery).
    fn record_quota_events(&mut self, log: EventLog) {
        self.event_log = Some(log);
    }

    /// Records `event`, given to the quota service at `t`, if events are recorded.
    fn record_quota_event(&mut self, t: u64, event: impl FnOnce() -> QuotaEvent) {
        if let Some(log) = &mut self.event_log {
            log.record(t, event());
        }
    }

    /// Adds each policy slot's versions to the next commit if a load or
    /// rollback moved them (see `policy/in_force.rs`).
    fn save_policies(&mut self) {
        for (i, kind) in PolicyKind::ALL.into_iter().enumerate() {
            let slot = self.policies.slot(kind);
            let generation = slot.generation();
            if self.saved_policies[i] == Some(generation) {
                continue;
            }
            self.saved_policies[i] = Some(generation);
            let saved = slot.saved_versions();
            if !saved.is_empty() {
                in_force::save_versions(&mut self.unsaved, kind, &saved);
            }
        }
    }

    /// Commits to the store ([`ResourceManager::commit_to_store`]), then
    /// writes the quota events recorded since: the event log never holds
    /// what the store may still lose.
    pub fn commit(&mut self) -> Result<(), StoreError> {
        let committed = self.commit_to_store();
        if committed.is_ok()
            && let Some(log) = &mut self.event_log
        {
            log.write_committed();
        }
        committed
    }

    /// Writes every change since the last commit — the cluster's, then the
    /// quota service's — in one transaction. A failed commit keeps its
    /// writes and they go first in the next one (each write is the row's
    /// value as it is, so writing one again is harmless). A fenced commit
    /// means another server is active: this one must stop.
    fn commit_to_store(&mut self) -> Result<(), StoreError> {
        if self.store.is_none() {
            return Ok(());
        }
        self.gather_unsaved();
        let store = self.store.as_ref().expect("checked above");
        if self.unsaved.is_empty() {
            return Ok(());
        }
        let started = std::time::Instant::now();
        let writes = self.unsaved.len();
        let result = store.commit(&self.unsaved);
        metrics()
            .store_commit_seconds
            .observe(started.elapsed().as_secs_f64());
        match &result {
            Ok(()) => self.unsaved = Batch::default(),
            Err(error) => {
                metrics().store_commit_failures.inc();
                tracing::error!(%error, writes, "the store refused a commit; its writes are kept for the next");
            }
        }
        result
    }

    /// Adds every change since the last commit — the cluster's, then the
    /// quota service's — to the unsaved writes.
    fn gather_unsaved(&mut self) {
        self.save_policies();
        if std::mem::take(&mut self.queues_changed) {
            let json = serde_json::to_string(self.cluster.queues()).expect("queues serialize");
            self.unsaved.set_setting(recovery::QUEUES_SETTING, &json);
        }
        if let Some(json) = self.scheduler_conf.take_unsaved() {
            self.unsaved
                .set_setting(scheduler_conf::OVERLAY_SETTING, &json);
        }
        if let Some(json) = self.auto_queues.take_unsaved() {
            self.unsaved
                .set_setting(auto_queues::AUTO_CREATED_SETTING, &json);
        }
        self.cluster.take_changes(&mut self.unsaved);
        self.quota.take_changes(&mut self.unsaved);
        self.accounting.take_changes(&mut self.unsaved);
    }

    /// The changes since the last commit, for the store's writer.
    fn take_unsaved(&mut self) -> Batch {
        self.gather_unsaved();
        std::mem::take(&mut self.unsaved)
    }

    /// A writer for the store on a thread of its own, when commits may be
    /// pipelined: there is a store, and no quota event log (whose lines
    /// are written only once the loop knows their commit held).
    fn start_writer(&self) -> Option<std::io::Result<writer::Writer>> {
        match (&self.store, &self.event_log) {
            (Some(store), None) => Some(writer::Writer::start(store.clone())),
            _ => None,
        }
    }

    /// The time by the resource manager's clock, in ms since the epoch
    /// (wall time in serve, virtual in simulate).
    pub fn now(&self) -> u64 {
        self.clock.now_ms()
    }

    /// What callers read; they change it only through the use cases
    /// (`requests.rs`) and the timers.
    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    /// The quota service (ledger, owed usage, multiplicators, budgets), to
    /// read.
    pub fn quota(&self) -> &QuotaService {
        &self.quota
    }

    /// Where accounting records are read from: `Err` when accounting is
    /// off; `None` when nothing is stored (tests of the loop alone), so
    /// there are no records.
    pub fn accounting_store(&self) -> Result<Option<Store>, AccountingOff> {
        if !self.accounting.is_enabled() {
            return Err(AccountingOff);
        }
        Ok(self.store.clone())
    }

    /// The store, if there is one (reads off the loop use a clone).
    pub fn store(&self) -> Option<&Store> {
        self.store.as_ref()
    }

    /// The reservation system and its plans, to read.
    pub fn reservations(&self) -> &ReservationService {
        &self.reservations
    }

    /// Who may do what: the ACLs, the users and projects files.
    pub fn security(&self) -> &Security {
        &self.security
    }

    /// When this resource manager started (ms since the epoch).
    pub fn started_ms(&self) -> u64 {
        self.started_ms
    }

    /// Fires one timer.
    pub fn fire(&mut self, timer: Timer) {
        match timer {
            Timer::SchedulingRound => self.scheduling_round(),
            Timer::MultiplicatorStep => self.multiplicator_step(),
            Timer::QuotaCompute => self.quota_compute(),
        }
    }

    /// Adds `count` simulated nodes of `capacity`.
    fn add_simulated_nodes(&mut self, count: u32, capacity: Resources) {
        for i in 1..=count {
            self.add_simulated_node(&format!("sim-{i:04}:8041"), capacity)
                .expect("capacity checked by the spec parser");
        }
    }

    /// Adds simulated node `id` of `capacity`: its containers run their
    /// duration, and no caller may heartbeat for it.
    pub fn add_simulated_node(
        &mut self,
        id: &str,
        capacity: Resources,
    ) -> Result<(), ClusterError> {
        let now = self.now();
        self.cluster
            .register_node(id, NodeKind::Simulated, capacity, SIMULATED_OWNER, now)
            .map(|_| ())
    }

    /// Puts simulated node `id` on `rack` ("" the default one) with
    /// `attributes` (checked by the caller), as an agent registers them.
    pub fn place_simulated_node(
        &mut self,
        id: &str,
        rack: String,
        attributes: std::collections::BTreeMap<String, String>,
    ) {
        self.cluster.describe_node(id, rack, attributes);
    }

    /// The plan follower's step before a round (`reservation/follower.rs`):
    /// apps of reservations that have ended move on or are killed (their
    /// containers charged up to now); returns the reservations active now.
    fn active_reservations(&mut self, now: u64) -> Vec<scheduler::ActiveReservation> {
        if !self.reservations.has_plans() {
            return Vec::new();
        }
        let (active, ended) = follower::follow(self.reservations.system(), &mut self.cluster, now);
        self.containers_finished(&ended, now);
        active
    }

    /// YARN's RMAppLifetimeMonitor, before a round: apps past their
    /// lifetime are killed, saying so, their containers charged up to now
    /// (so none is placed for them in the round).
    fn end_lifetimes(&mut self, now: u64) {
        for index in self.cluster.apps_past_lifetime(now) {
            let ended = self.cluster.kill_app(index, Cluster::LIFETIME_ENDED, now);
            self.containers_finished(&ended, now);
        }
    }

    /// Gangs still not placed whole at their deadline: their app fails,
    /// saying why, or they place as they can from now on, as each says.
    fn end_gang_waits(&mut self, now: u64) {
        for (index, ask, gang) in self.cluster.gangs_past_deadline(now) {
            // An earlier gang of the same app may have failed it just now
            // (and the retention let it go).
            let Some(app) = self.cluster.apps().get(index) else {
                continue;
            };
            if app.state.has_ended() {
                continue;
            }
            let app_id = app.id.clone();
            match gang.on_timeout {
                GangTimeout::Fail => {
                    let cause = format!(
                        "its gang (ask {ask}) of at least {} containers could not be placed whole in time",
                        gang.minimum
                    );
                    let ended = self.cluster.fail_app(index, &cause, now);
                    self.containers_finished(&ended, now);
                }
                GangTimeout::Place => {
                    tracing::info!(app = %app_id, ask, minimum = gang.minimum, "gang not placed whole in time; its containers place as they can");
                    self.cluster.release_gang(index, ask);
                }
            }
        }
    }

    /// Whether the reservation a submission names (if any) is in the plan of
    /// its queue; the reason if not.
    fn check_app_reservation(
        &self,
        request: &crate::cluster::SubmitApp,
    ) -> Result<(), crate::reservation::service::NotInPlan> {
        let queues = self.cluster.queues();
        match (&request.reservation_id, queues.leaf(&request.queue)) {
            (Some(id), Some(leaf)) => self
                .reservations
                .check_app_reservation(id, &queues.queues()[leaf].path),
            _ => Ok(()),
        }
    }

    /// Why pending app `index` waits (see `scheduler::diagnostics`), or that
    /// its project's budget is exhausted, or its reservation has not started.
    pub fn diagnose(
        &self,
        index: usize,
        usage: &[Resources],
    ) -> Option<scheduler::diagnostics::Diagnosis> {
        let mut diagnosis = scheduler::diagnostics::diagnose(&self.cluster, index, usage)?;
        let app = &self.cluster.apps()[index];
        if let Some(reason) = self.budget_reason(&app.project) {
            diagnosis.reason = reason;
        } else if let Some(reason) = app
            .reservation_id
            .as_deref()
            .and_then(|id| follower::not_started(self.reservations.system(), id, self.now()))
        {
            diagnosis.reason = reason;
        }
        Some(diagnosis)
    }

    /// A round now, because an agent's heartbeat freed resources while
    /// apps wait, as YARN's scheduler allocates on NODE_UPDATE: the
    /// heartbeat's answer then already carries the next launches, and a
    /// node's slots turn over as fast as its containers end, not once per
    /// heartbeat interval. Bounded by what rounds cost, not by a fixed
    /// rate: a round is brought forward only once [`EARLY_ROUND_PAUSE`]
    /// times the last round's duration has passed since it ended, so
    /// however many heartbeats free room, rounds take at most a fifth of
    /// the loop's time beyond the scheduling interval's own.
    pub(crate) fn schedule_on_freed_resources(&mut self) {
        if self.round_too_soon() || !self.cluster.has_pending() {
            return;
        }
        self.scheduling_round();
    }

    /// Whether it is too soon after the last round to bring the next one
    /// forward (see [`EARLY_ROUND_PAUSE`]).
    fn round_too_soon(&self) -> bool {
        self.early_rounds_from()
            .is_none_or(|from| std::time::Instant::now() < from)
    }

    /// From when a round may be brought forward: now if none ran yet, else
    /// [`EARLY_ROUND_PAUSE`] times the last round's duration after it
    /// ended (None: a duration too long to add, so never).
    fn early_rounds_from(&self) -> Option<std::time::Instant> {
        match self.last_round {
            Some((ended, took)) => took
                .checked_mul(EARLY_ROUND_PAUSE)
                .and_then(|pause| ended.checked_add(pause)),
            None => Some(std::time::Instant::now()),
        }
    }

    /// When `serve`'s loop should run the next round, sooner than the
    /// scheduling interval: if an app was submitted since the last round,
    /// as soon as the bound heartbeats keep allows (now, or once
    /// [`EARLY_ROUND_PAUSE`] times the last round's duration has passed
    /// since it ended). A short app on a quiet cluster then starts in
    /// milliseconds, not on the interval's next tick (up to
    /// `weft.scheduler.interval-ms`, 100 ms by default), and the
    /// submission's answer does not wait for the round. The loop asks
    /// after each turn and runs it with [`ResourceManager::early_round`];
    /// `simulate` and `replay` keep the interval.
    pub fn early_round_due(&self) -> Option<std::time::Instant> {
        if !self.submitted_since_round {
            return None;
        }
        self.early_rounds_from()
    }

    /// The round [`ResourceManager::early_round_due`] asked for, checked
    /// again when it comes: not if a round since has seen the submissions
    /// (a heartbeat's), nor before the bound allows (the submissions then
    /// keep asking).
    pub fn early_round(&mut self) {
        if self.submitted_since_round && !self.round_too_soon() {
            self.scheduling_round();
        }
    }

    /// A scheduling round: simulated containers that are done end, then the
    /// scheduling policy places what is pending (and, with reclaim on,
    /// takes back capacity for starved queues).
    fn scheduling_round(&mut self) {
        self.submitted_since_round = false;
        let started = std::time::Instant::now();
        self.place_pending();
        self.last_round = Some((std::time::Instant::now(), started.elapsed()));
    }

    /// The work of a scheduling round.
    fn place_pending(&mut self) {
        let now = self.now();
        let ended = self.cluster.finish_simulated(now);
        for (container, at) in ended {
            self.container_finished(&container, at);
        }
        // Lifetimes end whether or not nodes are still awaited after a
        // restart (YARN's lifetime monitor is not the scheduler's), and so
        // do decommissions.
        self.end_lifetimes(now);
        let decommissioned = self.cluster.end_decommissions(now);
        self.containers_finished(&decommissioned, now);
        if self.awaiting_nodes(now) {
            // Nodes not yet back offer nothing to asks waiting out a
            // locality delay.
            self.cluster.pause_locality_counts(now);
            return;
        }
        self.end_gang_waits(now);
        self.remove_idle_auto_created(now);
        let reservations = self.active_reservations(now);
        let held = self.held_projects();
        let trim_rounds = self.budgets_trim_rounds();
        let (quota, pricing) = (&mut self.quota, self.policies.pricing());
        // One pass may be several rounds (partitions, constrained asks):
        // each round's check counts what the rounds before it admitted.
        let mut admitted: Vec<Placement> = Vec::new();
        let mut afford = |cluster: &Cluster, placements: Vec<Placement>| {
            let now_admitted =
                Self::affordable(quota, pricing, cluster, placements, &admitted, now);
            admitted.extend_from_slice(&now_admitted);
            now_admitted
        };
        let admit: Option<scheduler::Admit<'_>> = trim_rounds.then_some(&mut afford);
        // Nothing queues at agents while a queue is starved (as of the
        // last pass): the room it would be promised is the starved one's.
        let queueing = self.reclaim_after_ms.is_none() || !self.starvation.any();
        match scheduler::schedule(
            &mut self.cluster,
            self.policies.scheduling(),
            &reservations,
            &held,
            admit,
            now,
            queueing,
        ) {
            Ok(allocations) => self.containers_allocated(&allocations, now),
            Err(error) => {
                tracing::warn!(%error, "scheduling round skipped; pending apps wait for the next")
            }
        }
        let reclaim_due = self.reclaim_after_ms.is_some_and(|after_ms| {
            self.starvation
                .update(&self.cluster, &reservations, &held, now, after_ms)
        });
        if !reclaim_due {
            reclaim::drop_stale_marks(&mut self.cluster, now, self.reclaim_limits);
        }
        if let Some(after_ms) = self.reclaim_after_ms
            && reclaim_due
        {
            let observe_only = self.reclaim_limits.observe_only;
            // What waits in agents' queues goes first: it ran nowhere, and
            // the room promised to it is what a starved queue needs.
            if !observe_only {
                let dequeued = self.cluster.dequeue_waiting(now);
                if !dequeued.is_empty() {
                    tracing::info!(
                        containers = dequeued.len(),
                        "took back opportunistic containers waiting at agents for starved queues"
                    );
                    self.containers_finished(&dequeued, now);
                }
            }
            match reclaim::reclaim(
                &mut self.cluster,
                self.policies.scheduling(),
                &reservations,
                &held,
                now,
                self.reclaim_limits,
            ) {
                Ok(reclaimed) if observe_only && reclaimed.containers.is_empty() => {}
                Ok(reclaimed) if observe_only => {
                    let observed = reclaimed.containers;
                    let ids: Vec<&str> = observed.iter().take(20).map(|c| c.id.as_str()).collect();
                    tracing::info!(
                        containers = observed.len(),
                        capped = reclaimed.capped,
                        first = ?ids,
                        "reclaim would take these containers back for starved queues; none taken (observe_only)"
                    );
                    metrics().reclaim_observed.inc_by(observed.len() as u64);
                    // As after a reclaim: said again after a whole patience.
                    self.starvation.reclaimed(now);
                }
                Ok(reclaimed) => {
                    let preempted = reclaimed.containers;
                    if reclaimed.marked > 0 {
                        tracing::info!(
                            containers = reclaimed.marked,
                            wait_ms = self.reclaim_limits.wait_before_kill_ms,
                            "marked containers for preemption for starved queues; their masters are told, and each is killed if still chosen after the wait"
                        );
                        metrics().reclaim_marked.inc_by(reclaimed.marked as u64);
                    }
                    if !preempted.is_empty() {
                        tracing::info!(
                            containers = preempted.len(),
                            capped = reclaimed.capped,
                            "reclaimed capacity for starved queues"
                        );
                        metrics().reclaim_preemptions.inc_by(preempted.len() as u64);
                        self.containers_finished(&preempted, now);
                    }
                    if preempted.is_empty() || reclaimed.capped || reclaimed.waiting {
                        // The rest, the kills due, or (nothing taken: the
                        // victims in a dead zone, or none chosen) another
                        // look, a monitoring interval on if still starved,
                        // not at every round.
                        self.starvation
                            .reclaimed_in_part(now, after_ms, self.reclaim_interval_ms);
                    } else {
                        self.starvation.reclaimed(now);
                    }
                }
                Err(error) => tracing::warn!(%error, "reclaim skipped"),
            }
        }
    }

    /// App `id`'s state and, if it has not ended, something to wait on for
    /// its end (none while too many apps are waited on: the caller looks
    /// again later); none if there is no such app.
    pub fn app_end_wait(
        &mut self,
        id: &str,
    ) -> Option<(AppState, Option<tokio::sync::watch::Receiver<bool>>)> {
        let state = self.cluster.app(id)?.state;
        let wait = if state.has_ended() {
            None
        } else {
            self.app_end_waits.wait_for(id)
        };
        Some((state, wait))
    }

    /// The notice of placements on node `node`, from now on told of each
    /// (made when an agent registers the node).
    pub fn placement_notice(&mut self, node: &str) -> Arc<PlacementNotice> {
        if let Some(notice) = self.placement_notices.get(node) {
            return notice.clone();
        }
        let notice = Arc::new(PlacementNotice::default());
        self.placement_notices
            .insert(node.to_string(), notice.clone());
        notice
    }

    /// Containers placed: those that run at once (on simulated nodes) are
    /// charged from now; an agent's from when it reports them running.
    fn containers_allocated(&mut self, allocations: &[Allocation], now: u64) {
        for allocation in allocations {
            let c = &allocation.container;
            tracing::debug!(container = %c.id, app = %c.app, node = %c.node, "container allocated");
            if let Some(notice) = self.placement_notices.get(&c.node) {
                notice.placed();
            }
            if let Some(started) = c.launched_ms {
                self.start_charging(c, started, now);
            }
        }
        metrics()
            .containers_allocated
            .inc_by(allocations.len() as u64);
    }

    /// Containers an agent reported running for the first time: charged
    /// from then on (CONTAINER_START).
    pub(crate) fn containers_launched(&mut self, ids: &[String], now: u64) {
        for id in ids {
            // Charged already (restored by a recovery from an older record).
            if self.quota.charged_until(id).is_some() {
                continue;
            }
            let Some(container) = self.cluster.container(id).cloned() else {
                continue;
            };
            let started = container.launched_ms.unwrap_or(now);
            self.start_charging(&container, started, now);
        }
    }

    /// CONTAINER_START for `container`, which started at `started`.
    fn start_charging(&mut self, container: &Container, started: u64, now: u64) {
        let c = container;
        let Some(app) = self.cluster.app(&c.app) else {
            return;
        };
        let execution_type = app.asks.get(c.ask).map(|a| a.execution_type);
        let context = charging::charge_context(
            &self.cluster,
            app,
            self.cluster.node(&c.node),
            execution_type.unwrap_or_default(),
        );
        match self
            .quota
            .start(&c.id, context.clone(), c.resources, started)
        {
            Ok(()) => self.record_quota_event(now, || {
                event_log::start(
                    &c.id,
                    context,
                    c.resources,
                    (started != now).then_some(started),
                )
            }),
            Err(error) => tracing::error!(%error, "quota could not start charging a container"),
        }
    }

    /// Containers lost with their node: charged up to when they were last
    /// known to run (their apps ask for them again; see `Cluster::lose_node`).
    fn containers_lost(&mut self, containers: &[Container], now: u64) {
        metrics().containers_lost.inc_by(containers.len() as u64);
        for container in containers {
            self.container_finished(container, container.ended_ms.unwrap_or(now));
        }
    }

    /// CONTAINER_FINISH for each of `containers`, ended at `now` (killed,
    /// preempted, or reported ended): see [`Self::container_finished`].
    fn containers_finished(&mut self, containers: &[Container], now: u64) {
        for container in containers {
            self.container_finished(container, now);
        }
    }

    /// CONTAINER_FINISH: a container that ran is charged up to `at` — at
    /// least its minimum runtime if its own work ended it; one that never
    /// ran is charged nothing.
    fn container_finished(&mut self, container: &Container, at: u64) {
        tracing::debug!(container = %container.id, app = %container.app, exit_status = ?container.exit_status, "container finished");
        // A recovery's, whose agent never said it ran on: charged up to
        // where the store had it, no more.
        if self.awaiting_agents.remove(&container.id).is_some() {
            return;
        }
        let Some(started) = container.launched_ms else {
            return;
        };
        // It ran and ended before anything charged it (a short container
        // whose end came before any heartbeat listed it running).
        if self.quota.settings().enabled && self.quota.charged_until(&container.id).is_none() {
            self.start_charging(container, started, at);
        }
        let minimum = container.ended_by_its_work();
        match self.quota.finish(&container.id, at, minimum) {
            Ok(()) => self.record_quota_event(at, || QuotaEvent::Finish {
                container: container.id.clone(),
                ended_ms: None,
                exit_status: container.exit_status,
            }),
            Err(error) => tracing::error!(%error, "quota could not finish charging a container"),
        }
    }

    /// QUOTA_COMPUTE, and the housekeeping that need not run every round:
    /// losing silent nodes, forgetting long-ended reservations and
    /// refreshing the gauges.
    pub fn quota_compute(&mut self) {
        let now = self.now();
        let lost = self
            .cluster
            .expire_nodes(now.saturating_sub(self.node_expiry_ms), now);
        self.containers_lost(&lost, now);
        self.quota.compute(now);
        self.record_quota_event(now, || QuotaEvent::Compute);
        self.flush_quota();
        self.quota.sample_burn(now);
        self.cluster.save_decayed_usage(now, false);
        let sharing = self.policies.sharing();
        if sharing.active().is_some() {
            self.reservations.forget_ended(sharing, now);
        }
        self.update_gauges();
    }

    /// The PriceMultiplicatorService step, from the cluster's load: its
    /// utilization (allocated plus pending over capacity) and each
    /// partition's and leaf queue's.
    pub fn multiplicator_step(&mut self) {
        // What is owed so far is priced at the multiplicators it was owed
        // under: a turn that ran a scheduling round before this step would
        // otherwise charge the round's starts and finishes at the new ones,
        // which `weft replay` (pricing each line's usage before the next
        // step) could not reproduce.
        self.flush_quota();
        let now = self.now();
        let market = charging::market(&self.cluster, now);
        let Utilization {
            memory,
            vcores,
            gpus,
        } = market.utilization;
        self.record_quota_event(now, || QuotaEvent::MultiplicatorStep {
            memory,
            vcores,
            gpus,
            partitions: market.partitions.clone(),
            queues: market.queues.clone(),
        });
        let pricing = self.policies.pricing();
        match self.quota.update_multiplicators(pricing, market) {
            Ok(m) => tracing::debug!(
                general = m.general,
                gpu = m.gpu,
                memory,
                vcores,
                gpus,
                "price multiplicators updated"
            ),
            Err(error) => tracing::warn!(%error, "price multiplicators kept from the last step"),
        }
    }

    /// Charges everything owed, if anything is; under stop-running, stops
    /// the work of projects left with no credits (and charges it to its
    /// end); hands ended apps' records to accounting, final once nothing is
    /// owed.
    pub fn flush_quota(&mut self) {
        self.take_ended_apps();
        if self.charge_owed() && self.stop_exhausted_projects() {
            self.take_ended_apps();
            self.charge_owed();
        }
        if !self.quota.has_owed() {
            self.accounting.nothing_owed();
        }
    }

    /// Ended apps' records go to accounting (only a server with a store
    /// keeps them: a simulation has nowhere to).
    fn take_ended_apps(&mut self) {
        let ended = self.cluster.take_ended_apps();
        if !self.app_end_waits.is_empty() {
            for record in &ended {
                self.app_end_waits.ended(&record.app_id);
            }
        }
        if self.store.is_some() {
            for record in ended {
                self.accounting.app_ended(record);
            }
        }
    }

    /// Prices what is owed; whether anything was.
    fn charge_owed(&mut self) -> bool {
        if !self.quota.has_owed() {
            return false;
        }
        if let Err(error) = self.quota.flush(self.policies.pricing()) {
            tracing::warn!(%error, "charges kept owed until the next flush");
        }
        for (app, credits) in self.quota.take_app_credits() {
            self.cluster.add_app_credits(&app, credits);
            self.accounting.charged(&app, credits);
        }
        let now = self.now();
        self.quota.sample_charged_burn(now);
        true
    }

    /// A clean stop: every running container is charged up to now.
    pub fn shutdown(&mut self) {
        self.quota_compute();
        let now = self.now();
        self.cluster.save_decayed_usage(now, true);
        tracing::info!(
            running = self.quota.running_containers(),
            "quota charged up to the stop"
        );
    }

    /// Sets the app and container gauges from the cluster (on every
    /// QUOTA_COMPUTE, and before every scrape of /metrics).
    pub fn update_gauges(&self) {
        let m = metrics();
        let (_, finished, killed) = self.cluster.app_totals();
        let (mut accepted, mut running) = (0, 0);
        for index in self.cluster.active_apps() {
            match self.cluster.apps()[index].state {
                AppState::Accepted => accepted += 1,
                _ => running += 1,
            }
        }
        for (state, count) in [
            (AppState::Accepted, accepted),
            (AppState::Running, running),
            (AppState::Finished, finished),
            (AppState::Killed, killed),
        ] {
            m.apps
                .get_or_create(&StateLabels {
                    state: state.as_str().to_string(),
                })
                .set(count as i64);
        }
        m.containers_running
            .set(self.cluster.containers().count() as i64);
        self.update_budget_gauges();
    }
}

/// Starts the loop on a thread of its own — policy calls, SQLite writes and
/// compiles block it, and must not block the HTTP server's workers. It
/// stops when `stop` resolves, after a clean quota stop; the returned
/// thread ends then.
pub fn spawn(
    mut rm: ResourceManager,
    intervals: Intervals,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<(RmHandle, std::thread::JoinHandle<()>)> {
    let (commands, mut inbox) = mpsc::channel::<Command>(1024);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    let thread = std::thread::Builder::new()
        .name("weft-rm".into())
        .spawn(move || {
            runtime.block_on(async move {
                // Timers count ms from the loop's start on tokio's monotonic
                // clock; their order is `Timer::ORDER`, as in simulate.
                let start = tokio::time::Instant::now();
                let ms = |d: Duration| d.as_millis().min(u128::from(u64::MAX)) as u64;
                let mut timers = Timers::new(
                    0,
                    ms(intervals.scheduling),
                    ms(intervals.multiplicator),
                    ms(intervals.quota_compute),
                );
                tokio::pin!(stop);
                let mut replies: Vec<Reply> = Vec::new();
                let writer = match rm.start_writer() {
                    Some(Ok(writer)) => Some(writer),
                    Some(Err(error)) => {
                        tracing::warn!(%error, "cannot start the store's writer; commits are made on the loop");
                        None
                    }
                    None => None,
                };
                // Whether the round's timer was brought forward for a
                // submission (its firing is then `early_round`).
                let mut brought_forward = false;
                loop {
                    if let Some(due) = rm.early_round_due() {
                        // Rounded up: a firing before the bound allows
                        // would find it too soon.
                        let due = due.saturating_duration_since(start.into_std());
                        let due_ms = ms(due + Duration::from_micros(999));
                        brought_forward |= timers.scheduling.bring_forward(due_ms);
                    }
                    let next = start + Duration::from_millis(timers.next_due());
                    // Biased: a stop first, then due timers (a flood of
                    // requests must not starve scheduling and charging).
                    tokio::select! {
                        biased;
                        () = &mut stop => break,
                        () = tokio::time::sleep_until(next) => {
                            for timer in timers.fire(ms(start.elapsed())) {
                                if timer == Timer::SchedulingRound
                                    && std::mem::take(&mut brought_forward)
                                {
                                    let _ = guarded(timer.as_str(), || rm.early_round());
                                    continue;
                                }
                                let _ = guarded(timer.as_str(), || rm.fire(timer));
                            }
                        }
                        command = inbox.recv() => match command {
                            Some(command) => {
                                replies.push(command(&mut rm));
                                // Commands already queued share the commit.
                                while replies.len() < MAX_COMMANDS_PER_COMMIT
                                    && let Ok(command) = inbox.try_recv()
                                {
                                    replies.push(command(&mut rm));
                                }
                            }
                            None => break,
                        },
                    }
                    let _ = guarded("flush", || rm.flush_quota());
                    if let Some(writer) = &writer {
                        // The writer answers once the writes are durable;
                        // with more commands waiting, the loop goes on
                        // with them meanwhile.
                        let replies = std::mem::take(&mut replies);
                        match guarded("commit", || rm.take_unsaved()) {
                            Ok(writes) => writer.write(
                                writer::Turn { writes, replies },
                                !inbox.is_empty(),
                            ),
                            // What was gathered stays unsaved for the next
                            // turn; these commands are not known durable.
                            Err(panicked) => {
                                for reply in replies {
                                    reply(Err(panicked.to_string()));
                                }
                            }
                        }
                        if writer.is_fenced() {
                            break;
                        }
                        continue;
                    }
                    let committed = commit(&mut rm);
                    for reply in replies.drain(..) {
                        reply(committed.clone().map_err(|e| e.to_string()));
                    }
                    if let Err(CommitFailure::Fenced(why)) = committed {
                        tracing::error!(%why, "another server is active: this one stops writing and stops");
                        break;
                    }
                }
                if let Some(writer) = writer {
                    // Writes a failed commit kept go first in the last one.
                    let mut kept = writer.finish();
                    kept.append(std::mem::take(&mut rm.unsaved));
                    rm.unsaved = kept;
                }
                let _ = guarded("shutdown", || rm.shutdown());
                let _ = commit(&mut rm);
            })
        })?;
    let handle = RmHandle {
        link: Arc::new(std::sync::RwLock::new(Link::Active(commands))),
    };
    Ok((handle, thread))
}
