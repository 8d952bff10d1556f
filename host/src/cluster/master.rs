//! An app's application master as the cluster holds it (YARN's
//! RMAppAttempt, in part): which attempt runs, whether it registered and
//! how it finished, the asks it makes as it runs (YARN's absolute
//! outstanding counts, one ask of the app per priority, request id and
//! size), and what it is yet to be told — containers allocated to it once
//! their node holds them, containers that ended, nodes it has no NMToken
//! for. The master decides about its own containers: one that fails is
//! reported to it, never asked for again or counted against the app.
//!
//! The app's first ask is its master's container; the app ends when that
//! container does: FINISHED with the master's final status once it
//! unregistered, else (it registered and then died, or it failed) the
//! attempt fails and, while attempts are left, the next one starts with
//! none of the last one's containers.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::{App, AppState, Ask, Cluster, Container, ContainerRecord, EndCause, Launch, Locality};
use crate::resources::Resources;

/// The most distinct asks (priority, request id, size) one master may hold.
pub const MAX_MASTER_ASKS: usize = 100;
/// The most containers one master ask may have outstanding.
pub const MAX_MASTER_ASK_CONTAINERS: u32 = 100_000;
/// The most completed containers kept for a master that does not ask
/// (the oldest go first).
const MAX_UNREPORTED: usize = 100_000;
/// The most hosts and racks a master's blacklist holds.
pub const MAX_BLACKLIST: usize = 1_000;

/// The final status a master unregisters with (YARN's
/// FinalApplicationStatus).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinalStatus {
    /// The master says nothing (UNDEFINED).
    Undefined,
    /// SUCCEEDED.
    Succeeded,
    /// FAILED.
    Failed,
    /// KILLED.
    Killed,
}

impl FinalStatus {
    /// YARN's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            FinalStatus::Undefined => "UNDEFINED",
            FinalStatus::Succeeded => "SUCCEEDED",
            FinalStatus::Failed => "FAILED",
            FinalStatus::Killed => "KILLED",
        }
    }
}

/// What a master said when it unregistered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MasterFinish {
    /// Its final status.
    pub final_status: FinalStatus,
    /// Its diagnostics.
    pub diagnostics: String,
}

/// One of its asks' key: YARN's (priority, allocation request id,
/// capability).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct MasterAskKey {
    /// YARN's priority of the ask (Spark's resource profile id); echoed in
    /// each container.
    pub priority: i32,
    /// YARN's allocation request id.
    pub allocation_request_id: i64,
    /// Memory in MB, vcores, GPUs of each container.
    pub size: (u64, u32, u32),
}

impl MasterAskKey {
    /// The size of its containers.
    pub fn resources(&self) -> Resources {
        Resources::new(self.size.0, self.size.1, self.size.2)
    }
}

/// A container that ended, as its master is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completed {
    /// The container.
    pub id: String,
    /// YARN's ContainerExitStatus.
    pub exit_status: i32,
    /// Why, in its agent's words.
    pub diagnostics: String,
}

/// The master of an app, and what it is yet to be told.
#[derive(Debug, Clone, Default)]
pub struct Master {
    /// The attempt running (1, 2, …; 0 before its first container).
    pub attempt: u32,
    /// Its container, while it runs.
    pub container: Option<String>,
    /// Whether this attempt registered.
    pub registered: bool,
    /// What it said when it unregistered.
    pub finished: Option<MasterFinish>,
    /// Where it said it is (host, RPC port, tracking URL).
    pub host: String,
    /// Its RPC port (-1 for none).
    pub rpc_port: i32,
    /// Its tracking URL.
    pub tracking_url: String,
    /// Its asks, by key: the index of each among the app's asks.
    pub asks: BTreeMap<MasterAskKey, usize>,
    /// Containers allocated to it not yet reported.
    allocated: Vec<String>,
    /// Containers of it that ended, not yet reported.
    completed: Vec<Completed>,
    /// Nodes it has been given an NMToken for in this attempt.
    nodes_told: BTreeSet<String>,
    /// Nodes whose state changed (unhealthy, decommissioning, usable
    /// again) since its last allocate: YARN's updated nodes (at most one
    /// entry a node).
    nodes_changed: BTreeSet<String>,
    /// Hosts and racks its containers must not go to (its blacklist).
    blacklist: BTreeSet<String>,
    /// How far it says it got, 0 to 1 (its last allocate's).
    pub progress: f32,
    /// Attempts of the app that ended through no fault of their own (their
    /// container lost with its node, preempted, or killed by a node's
    /// decommission): not counted against its maximum, as YARN does not.
    pub(super) uncounted_attempts: u32,
}

/// An allocate's change to its master's blacklist: hosts (as its NodeIds
/// name them) and racks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BlacklistChange {
    /// Places added.
    pub additions: Vec<String>,
    /// Places removed (after the additions, as YARN applies them).
    pub removals: Vec<String>,
}

/// Why a master's call is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MasterError {
    /// The app is not known (or not a YARN application master's).
    #[error("application {0} is not an application master's app of this cluster")]
    NoSuchApp(String),
    /// The attempt is not the one running.
    #[error("application attempt {attempt} of {app} is not its current attempt")]
    NotCurrentAttempt {
        /// The app.
        app: String,
        /// The attempt named.
        attempt: u32,
    },
    /// The attempt has not registered.
    #[error("application master of {0} has not registered")]
    NotRegistered(String),
    /// An ask out of bounds.
    #[error("{0}")]
    BadAsk(String),
    /// The attempt has unregistered: it may ask for nothing more.
    #[error("application master of {0} has unregistered; it may not register or allocate again")]
    Unregistered(String),
}

/// An ask of a master's allocate: containers outstanding for its key (the
/// absolute number, replacing the last).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MasterAsk {
    /// Its key.
    pub key: MasterAskKey,
    /// Containers outstanding.
    pub count: u32,
    /// Where it would rather run: YARN's host and rack entries of the key
    /// (hosts as its NodeIds name them), and its `*` entry's relaxLocality.
    pub places: MasterPlaces,
}

/// The places one master ask names (none: anywhere).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MasterPlaces {
    /// Hosts, as the master's NodeIds name them.
    pub hosts: Vec<String>,
    /// Racks, e.g. `/default-rack`.
    pub racks: Vec<String>,
    /// Whether it may go elsewhere once the delays have passed.
    pub relax_locality: bool,
}

/// What an allocate tells its master.
#[derive(Debug, Clone, Default)]
pub struct MasterNews {
    /// Containers allocated, their node holding them.
    pub allocated: Vec<(Container, MasterAskKey)>,
    /// Containers that ended.
    pub completed: Vec<Completed>,
    /// Nodes of `allocated` it was given no NMToken for yet.
    pub new_nodes: Vec<String>,
    /// Nodes whose state changed since its last allocate (YARN's
    /// `updated_nodes`: a Spark master decommissions its executors on a
    /// node being decommissioned).
    pub updated_nodes: Vec<String>,
    /// Its containers marked for preemption since its last allocate, with
    /// their sizes (YARN's PreemptionMessage: give them back, or they are
    /// killed after `max_wait_before_kill`).
    pub marked_for_preemption: Vec<(String, Resources)>,
    /// Containers of the app running or pending.
    pub outstanding: u64,
}

/// YARN's id of attempt `attempt` of app `app_id` (`application_T_N` →
/// `appattempt_T_N_00000A`).
pub fn attempt_id(app_id: &str, attempt: u32) -> String {
    let rest = app_id.strip_prefix("application_").unwrap_or(app_id);
    format!("appattempt_{rest}_{attempt:06}")
}

/// An app's current attempt, as YARN's attempt reports give it: a YARN
/// master's attempt (1 before its first starts), else the one attempt a
/// Weft app has, as long as the app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptView<'a> {
    /// Its number (1, 2, …).
    pub number: u32,
    /// `appattempt_…`.
    pub id: String,
    /// YARN's YarnApplicationAttemptState name (SCHEDULED, LAUNCHED,
    /// RUNNING, FINISHED, FAILED, KILLED).
    pub state: &'static str,
    /// Its master's container, else the app's first; none before one.
    pub am_container: Option<&'a ContainerRecord>,
    /// Where its master said it is ("" and -1 for none).
    pub host: &'a str,
    /// Its master's RPC port, -1 for none.
    pub rpc_port: i32,
    /// Its master's tracking URL.
    pub tracking_url: &'a str,
}

impl App {
    /// The attempt running now, or the last one.
    pub fn current_attempt(&self) -> AttemptView<'_> {
        let master = self.master.as_deref();
        let number = master.map_or(1, |m| m.attempt.max(1));
        let am_container = match master.and_then(|m| m.container.as_deref()) {
            Some(id) => self.containers.iter().rev().find(|r| r.id == id),
            None => self.containers.front(),
        };
        let state = match self.state {
            AppState::Accepted => "SCHEDULED",
            AppState::Running if master.is_some_and(|m| !m.registered) => "LAUNCHED",
            AppState::Running => "RUNNING",
            AppState::Finished => "FINISHED",
            AppState::Failed => "FAILED",
            AppState::Killed => "KILLED",
        };
        AttemptView {
            number,
            id: attempt_id(&self.id, number),
            state,
            am_container,
            host: master.map_or("", |m| m.host.as_str()),
            rpc_port: master.map_or(-1, |m| m.rpc_port),
            tracking_url: master.map_or("", |m| m.tracking_url.as_str()),
        }
    }
}

impl Master {
    /// A new attempt `attempt` starts in `container`: nothing of the last
    /// one is told.
    pub(super) fn start_attempt(&mut self, attempt: u32, container: String) {
        *self = Master {
            attempt,
            container: Some(container),
            uncounted_attempts: self.uncounted_attempts,
            ..Master::default()
        };
    }

    /// A container of its ended.
    pub(super) fn completed(&mut self, completed: Completed) {
        self.allocated.retain(|id| *id != completed.id);
        if self.completed.len() >= MAX_UNREPORTED {
            self.completed.remove(0);
        }
        self.completed.push(completed);
    }

    /// A container was allocated to it.
    pub(super) fn allocated(&mut self, id: String) {
        self.allocated.push(id);
    }
}

impl Cluster {
    /// Node `id` became unusable or usable again (its health, a
    /// decommission): every running master hears of it at its next
    /// allocate, as YARN's NodesListManager tells every app.
    pub(super) fn tell_masters_node_changed(&mut self, id: &str) {
        for &index in &self.active {
            if let Some(master) = self.apps[index].master.as_mut() {
                master.nodes_changed.insert(id.to_string());
            }
        }
    }

    /// The master of app `app_id` in attempt `attempt`, if that is the one
    /// running.
    fn master_of(&mut self, app_id: &str, attempt: u32) -> Result<usize, MasterError> {
        let index = self
            .app_index(app_id)
            .ok_or_else(|| MasterError::NoSuchApp(app_id.into()))?;
        let app = &self.apps[index];
        let master = app
            .master
            .as_ref()
            .filter(|_| !app.state.has_ended())
            .ok_or_else(|| MasterError::NoSuchApp(app_id.into()))?;
        if master.attempt != attempt || master.container.is_none() {
            return Err(MasterError::NotCurrentAttempt {
                app: app_id.into(),
                attempt,
            });
        }
        Ok(index)
    }

    /// registerApplicationMaster: attempt `attempt` of `app_id` says where it
    /// is. Again (a client that lost its registration) is fine.
    pub fn register_master(
        &mut self,
        app_id: &str,
        attempt: u32,
        host: String,
        rpc_port: i32,
        tracking_url: String,
    ) -> Result<(), MasterError> {
        let index = self.master_of(app_id, attempt)?;
        let app = &mut self.apps[index];
        let master = app.master.as_mut().expect("checked by master_of");
        if master.finished.is_some() {
            return Err(MasterError::Unregistered(app_id.into()));
        }
        if !master.registered {
            tracing::info!(app = %app.id, attempt, host = %host, "application master registered");
        }
        master.registered = true;
        master.host = host;
        master.rpc_port = rpc_port;
        master.tracking_url = tracking_url;
        super::durable::app_changed(&mut self.changes, app_id);
        Ok(())
    }

    /// allocate: the master's asks replace its last ones (by key), the
    /// containers it releases end, and it is told what is new. The asks
    /// are checked whole before anything changes.
    pub fn master_allocate(
        &mut self,
        app_id: &str,
        attempt: u32,
        asks: &[MasterAsk],
        releases: &[String],
        blacklist: &BlacklistChange,
        now: u64,
    ) -> Result<(MasterNews, Vec<Container>), MasterError> {
        let index = self.master_of(app_id, attempt)?;
        let app = &self.apps[index];
        let master = app.master.as_ref().expect("checked by master_of");
        if master.finished.is_some() {
            return Err(MasterError::Unregistered(app_id.into()));
        }
        if !master.registered {
            return Err(MasterError::NotRegistered(app_id.into()));
        }
        let new_keys: BTreeSet<MasterAskKey> = asks
            .iter()
            .map(|a| a.key)
            .filter(|k| !master.asks.contains_key(k))
            .collect();
        if master.asks.len() + new_keys.len() > MAX_MASTER_ASKS {
            return Err(MasterError::BadAsk(format!(
                "ask: at most {MAX_MASTER_ASKS} distinct (priority, allocation request id, capability) asks per application master"
            )));
        }
        for ask in asks {
            if ask.count > MAX_MASTER_ASK_CONTAINERS {
                return Err(MasterError::BadAsk(format!(
                    "ask.num_containers: {} is more than the {MAX_MASTER_ASK_CONTAINERS} one ask may have outstanding",
                    ask.count
                )));
            }
            let size = ask.key.resources();
            // As every ask's (SubmitApp::check): what a container holds is
            // what it is limited to and charged for.
            if size.memory_mb == 0 || size.vcores == 0 {
                return Err(MasterError::BadAsk(format!(
                    "ask.capability: {size}; a container needs at least 1 MB and 1 vcore"
                )));
            }
        }
        let mut avoid = master.blacklist.clone();
        avoid.extend(blacklist.additions.iter().cloned());
        for place in &blacklist.removals {
            avoid.remove(place);
        }
        for place in &blacklist.additions {
            crate::limits::name("blacklist_additions", place)
                .map_err(|e| MasterError::BadAsk(e.to_string()))?;
        }
        if avoid.len() > MAX_BLACKLIST {
            return Err(MasterError::BadAsk(format!(
                "blacklist_additions: the blacklist would hold {} hosts and racks, more than {MAX_BLACKLIST}",
                avoid.len()
            )));
        }
        let avoided = Arc::new(avoid.clone());
        // Executors run where the app was put: its label, else the default.
        let partition = app.node_label_expression.clone();
        let localities: Vec<Option<Locality>> = asks
            .iter()
            .map(|ask| self.locality_of(&ask.places))
            .collect();
        let app = &mut self.apps[index];
        for (ask, locality) in asks.iter().zip(localities) {
            let master = app.master.as_mut().expect("checked by master_of");
            let at = match master.asks.get(&ask.key) {
                Some(&at) => at,
                None => {
                    let at = app.asks.len();
                    master.asks.insert(ask.key, at);
                    app.asks.push(Ask {
                        resources: ask.key.resources(),
                        duration_ms: None,
                        launch: Arc::new(Launch::default()),
                        count: 0,
                        pending: 0,
                        // The master asks again for what it wants.
                        max_attempts: 1,
                        retries: Vec::new(),
                        gang: None,
                        partition: partition.clone(),
                        allocation_tags: Vec::new(),
                        constraint: None,
                        locality: None,
                        avoid: avoided.clone(),
                        // A master starts its containers itself, on room
                        // held for it: never queued at an agent.
                        execution_type: super::ExecutionType::Guaranteed,
                    });
                    at
                }
            };
            let held = &mut app.asks[at];
            held.count = held
                .count
                .saturating_sub(held.pending)
                .saturating_add(ask.count);
            held.pending = ask.count;
            // Delay scheduling goes on counting while the places stay.
            let same = |a: &Locality, b: &Locality| {
                a.nodes == b.nodes && a.racks == b.racks && a.relax_locality == b.relax_locality
            };
            match (&held.locality, &locality) {
                (Some(now), Some(asked)) if same(now, asked) => {}
                _ => held.locality = locality,
            }
            if held.pending == 0 {
                // Nothing asked: no wait to count until it asks again (YARN
                // offers no opportunity to a key with nothing outstanding).
                if let Some(locality) = held.locality.as_mut() {
                    locality.counted_at_ms = None;
                }
            }
        }
        let master = app.master.as_mut().expect("checked by master_of");
        if master.blacklist != avoid {
            master.blacklist = avoid;
            for &at in master.asks.values() {
                app.asks[at].avoid = avoided.clone();
            }
        }
        super::durable::app_changed(&mut self.changes, app_id);
        let mine: Vec<&String> = releases
            .iter()
            .filter(|id| {
                self.containers
                    .get(id.as_str())
                    .is_some_and(|c| c.app == app_id && c.ask != 0)
            })
            .collect();
        let released: Vec<Container> = mine
            .into_iter()
            .filter_map(|id| self.end_container(id, now, EndCause::Released))
            .collect();
        let marked_for_preemption = self.take_preemption_marks_of(app_id);
        let app = &mut self.apps[index];
        let master = app.master.as_mut().expect("checked by master_of");
        let mut news = MasterNews {
            marked_for_preemption,
            completed: std::mem::take(&mut master.completed),
            updated_nodes: std::mem::take(&mut master.nodes_changed)
                .into_iter()
                .collect(),
            ..MasterNews::default()
        };
        // Told once its node holds it, so the master's start finds it there.
        let mut waiting = Vec::new();
        for id in std::mem::take(&mut master.allocated) {
            let Some(container) = self.containers.get(&id) else {
                continue;
            };
            let held = self
                .nodes
                .get(&container.node)
                .is_some_and(|n| n.launched.contains(&id) || n.kind == super::NodeKind::Simulated);
            if !held {
                waiting.push(id);
                continue;
            }
            let key = master
                .asks
                .iter()
                .find(|(_, at)| **at == container.ask)
                .map(|(k, _)| *k);
            if let Some(key) = key {
                if master.nodes_told.insert(container.node.clone()) {
                    news.new_nodes.push(container.node.clone());
                }
                news.allocated.push((container.clone(), key));
            }
        }
        master.allocated = waiting;
        news.outstanding = u64::from(app.running_containers) + app.pending_containers();
        Ok((news, released))
    }

    /// The progress attempt `attempt` of `app_id` reported with an
    /// allocate, as YARN takes it: NaN or below 0 is 0, above 1 is 1.
    pub fn master_progress(&mut self, app_id: &str, attempt: u32, progress: f32) {
        let Ok(index) = self.master_of(app_id, attempt) else {
            return;
        };
        if let Some(master) = self.apps[index].master.as_mut() {
            master.progress = if progress.is_nan() {
                0.0
            } else {
                progress.clamp(0.0, 1.0)
            };
        }
    }

    /// The places a master names, as the cluster's: each host is the nodes
    /// whose NodeId (or id) names it; none when it names no place this
    /// cluster has (YARN's ANY).
    fn locality_of(&self, places: &MasterPlaces) -> Option<Locality> {
        let nodes: Vec<String> = self
            .nodes
            .values()
            .filter(|node| {
                places
                    .hosts
                    .iter()
                    .any(|host| *host == node.id || host == node.yarn_host())
            })
            .map(|node| node.id.clone())
            .take(super::locality::MAX_PLACES)
            .collect();
        let racks: Vec<String> = places
            .racks
            .iter()
            .take(super::locality::MAX_PLACES)
            .cloned()
            .collect();
        if nodes.is_empty() && racks.is_empty() {
            return None;
        }
        Some(Locality::from_spec(&super::LocalitySpec {
            nodes,
            racks,
            relax_locality: places.relax_locality,
        }))
    }

    /// finishApplicationMaster: the master says how the app ended; its other
    /// containers end now (returned, to be charged) and nothing more is
    /// placed for it. The app ends when the master's container exits.
    pub fn finish_master(
        &mut self,
        app_id: &str,
        attempt: u32,
        finish: MasterFinish,
        now: u64,
    ) -> Result<Vec<Container>, MasterError> {
        let index = self.master_of(app_id, attempt)?;
        let app = &mut self.apps[index];
        let master = app.master.as_mut().expect("checked by master_of");
        if !master.registered {
            return Err(MasterError::NotRegistered(app_id.into()));
        }
        if master.finished.is_some() {
            // Again (a client that lost the answer): nothing more to do.
            return Ok(Vec::new());
        }
        tracing::info!(app = %app.id, attempt, final_status = finish.final_status.as_str(), "application master unregistered");
        master.finished = Some(finish);
        for ask in app.asks.iter_mut().skip(1) {
            ask.count = ask.count.saturating_sub(ask.pending);
            ask.pending = 0;
        }
        super::durable::app_changed(&mut self.changes, app_id);
        Ok(self.end_other_containers(index, now))
    }

    /// Ends every container of app `index` but its master's (an attempt
    /// that finished or failed), and drops what its master asked for.
    pub(super) fn end_other_containers(&mut self, index: usize, now: u64) -> Vec<Container> {
        let app = &mut self.apps[index];
        for ask in app.asks.iter_mut().skip(1) {
            ask.count = ask.count.saturating_sub(ask.pending);
            ask.pending = 0;
        }
        let app_id = app.id.clone();
        let ids: Vec<String> = self
            .containers
            .values()
            .filter(|c| c.app == app_id && c.ask != 0)
            .map(|c| c.id.clone())
            .collect();
        ids.iter()
            .filter_map(|id| self.end_container(id, now, EndCause::Killed))
            .collect()
    }
}

impl Cluster {
    /// A container of an application master's app ended (`end_container`
    /// has let its node and app go of it): one of the master's is told to
    /// the master; the master's own ends the attempt — the app finishes
    /// as the master said, or the next attempt starts, or the app fails.
    pub(super) fn end_master_container(
        &mut self,
        index: usize,
        container: &Container,
        cause: &EndCause,
        now: u64,
    ) {
        use super::AppState;
        let app = &mut self.apps[index];
        let active = !app.state.has_ended();
        let exit_status = cause.exit_status();
        let diagnostics = match cause {
            EndCause::Failed { diagnostics, .. } => diagnostics.clone(),
            EndCause::Released => "Container released by the application master".into(),
            EndCause::Preempted => "Container preempted by the scheduler".into(),
            EndCause::Lost => "Container lost with its node".into(),
            EndCause::Decommissioned => {
                "Container killed: its node's decommission ran out of time".into()
            }
            EndCause::Killed => "Container killed".into(),
            EndCause::Succeeded => String::new(),
        };
        match cause {
            EndCause::Succeeded => app.finished_containers += 1,
            EndCause::Failed { .. } => app.failed_containers += 1,
            EndCause::Preempted => app.preempted_containers += 1,
            EndCause::Lost | EndCause::Decommissioned => app.lost_containers += 1,
            EndCause::Killed | EndCause::Released => {}
        }
        let master = app.master.as_mut().expect("an application master's app");
        if container.ask != 0 {
            if active {
                master.completed(Completed {
                    id: container.id.clone(),
                    exit_status,
                    diagnostics,
                });
            }
            return;
        }
        master.container = None;
        if !active {
            return;
        }
        let finished = master.finished.clone();
        let registered = master.registered;
        let attempt = container.attempt;
        let max_attempts = app.asks.first().map_or(1, |a| a.max_attempts);
        // YARN's rule: an attempt whose container was lost, preempted or
        // killed for its node's decommission does not count (but no app
        // has more than MAX_ATTEMPTS in all).
        if matches!(
            cause,
            EndCause::Lost | EndCause::Preempted | EndCause::Decommissioned
        ) {
            master.uncounted_attempts = master.uncounted_attempts.saturating_add(1);
        }
        let counted = attempt.saturating_sub(master.uncounted_attempts);
        let another = counted < max_attempts && attempt < crate::limits::MAX_ATTEMPTS;
        // Unregistered, or never registered and exited 0 (a plain command
        // run as a YARN app): the app finishes.
        if finished.is_some() || (!registered && *cause == EndCause::Succeeded) {
            self.end_other_containers(index, now);
            let app = &mut self.apps[index];
            app.state = AppState::Finished;
            app.finish_time_ms = Some(now);
            if let Some(finish) = finished {
                app.diagnostics = finish.diagnostics;
            }
            tracing::info!(app = %app.id, from = "RUNNING", to = "FINISHED", final_status = app.final_status(), cause = "its application master ended", queue = %app.queue, user = %app.user, submitter = %app.submitter, "application state changed");
            super::durable::app_changed(&mut self.changes, &app.id);
            self.app_ended(index);
            return;
        }
        self.end_other_containers(index, now);
        let app = &mut self.apps[index];
        let why = if *cause == EndCause::Succeeded {
            format!(
                "application master container {} exited without unregistering",
                container.id
            )
        } else {
            format!(
                "application master container {} exited with status {exit_status}{}",
                container.id,
                if diagnostics.is_empty() {
                    String::new()
                } else {
                    format!(": {diagnostics}")
                }
            )
        };
        if another {
            tracing::info!(app = %app.id, attempt, counted, max_attempts, %why, "application attempt failed; starting the next");
            app.diagnostics =
                format!("attempt {attempt} failed ({counted} of {max_attempts} counted): {why}");
            let ask = &mut app.asks[0];
            ask.retries.push(attempt + 1);
            ask.pending = ask.pending.saturating_add(1);
            super::durable::app_changed(&mut self.changes, &app.id);
        } else {
            app.exit_status = Some(exit_status);
            self.failing.push((
                index,
                format!(
                    "application attempt {attempt} failed ({counted} of {max_attempts} counted): {why}"
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{AppState, AskSpec, NodeKind, Placement, SubmitApp};
    use crate::protocol::node::YarnLaunch;
    use crate::queues::{QueueProperties, QueueTree};

    /// A cluster of one agent's node with an application master's app
    /// submitted (two attempts allowed) and its master placed.
    fn with_master() -> (Cluster, usize, String) {
        let mut cluster = Cluster::new(
            1,
            QueueTree::from_properties(&QueueProperties::defaults()).unwrap(),
        );
        cluster
            .register_node("n1", NodeKind::Remote, Resources::new(8192, 8, 0), "t", 0)
            .unwrap();
        let mut am = AskSpec::sized(1, 1024, 1, 0, 1000);
        am.max_attempts = 2;
        am.yarn = Some(YarnLaunch {
            application_master: true,
            ..Default::default()
        });
        let id = cluster
            .submit(SubmitApp::new("alice", "default", "demo", vec![am]), "t", 0)
            .unwrap()
            .id
            .clone();
        let app = cluster.app_index(&id).unwrap();
        place(&mut cluster, app, 0, 1);
        (cluster, app, id)
    }

    fn place(cluster: &mut Cluster, app: usize, ask: usize, count: u32) -> Vec<String> {
        let placed = cluster
            .allocate(
                &[Placement {
                    app,
                    ask,
                    node: 0,
                    count,
                }],
                10,
            )
            .unwrap();
        placed.into_iter().map(|a| a.container.id).collect()
    }

    /// The container app `app`'s master runs in.
    fn master_container(cluster: &Cluster, app: usize) -> String {
        let master = cluster.apps()[app].master.as_ref().unwrap();
        master.container.clone().unwrap()
    }

    /// An allocate of attempt 1 of `id` that leaves its blacklist as it is.
    fn allocate(
        cluster: &mut Cluster,
        id: &str,
        asks: &[MasterAsk],
        releases: &[String],
        now: u64,
    ) -> Result<(MasterNews, Vec<Container>), MasterError> {
        cluster.master_allocate(id, 1, asks, releases, &BlacklistChange::default(), now)
    }

    fn executors(count: u32) -> MasterAsk {
        MasterAsk {
            key: MasterAskKey {
                priority: 0,
                allocation_request_id: 0,
                size: (1024, 1, 0),
            },
            count,
            places: MasterPlaces::default(),
        }
    }

    #[test]
    fn a_master_hears_once_of_each_node_that_became_unusable_or_usable() {
        use crate::protocol::node::NodeHealth;
        let (mut cluster, _, id) = with_master();
        cluster
            .register_master(&id, 1, "h".into(), 7077, String::new())
            .unwrap();
        let (news, _) = allocate(&mut cluster, &id, &[], &[], 20).unwrap();
        assert!(news.updated_nodes.is_empty());
        cluster.decommission_node("n1", 60_000, 30).unwrap();
        // Again with a new deadline: not news.
        cluster.decommission_node("n1", 90_000, 31).unwrap();
        let (news, _) = allocate(&mut cluster, &id, &[], &[], 40).unwrap();
        assert_eq!(news.updated_nodes, ["n1"]);
        let (news, _) = allocate(&mut cluster, &id, &[], &[], 50).unwrap();
        assert!(news.updated_nodes.is_empty(), "told once");
        cluster.recommission_node("n1").unwrap();
        let sick = NodeHealth {
            healthy: false,
            report: "bad disk".into(),
        };
        cluster.set_node_health("n1", Some(&sick));
        let (news, _) = allocate(&mut cluster, &id, &[], &[], 60).unwrap();
        assert_eq!(news.updated_nodes, ["n1"], "one entry a node");
    }

    #[test]
    fn a_master_hears_once_of_each_container_marked_for_preemption() {
        let (mut cluster, app, id) = with_master();
        cluster
            .register_master(&id, 1, "h".into(), 7077, String::new())
            .unwrap();
        allocate(&mut cluster, &id, &[executors(2)], &[], 20).unwrap();
        let placed = place(&mut cluster, app, 1, 2);
        let am = master_container(&cluster, app);
        cluster.mark_for_preemption(&placed[1], 30);
        cluster.mark_for_preemption(&am, 30);
        let (news, _) = allocate(&mut cluster, &id, &[], &[], 40).unwrap();
        // In id order: the master's container (…_000001) first.
        let expected = [
            (am.clone(), cluster.container(&am).unwrap().resources),
            (placed[1].clone(), Resources::new(1024, 1, 0)),
        ];
        assert_eq!(news.marked_for_preemption, expected);
        let (news, _) = allocate(&mut cluster, &id, &[], &[], 50).unwrap();
        assert!(news.marked_for_preemption.is_empty(), "told once");
        // Given back by the master: the mark goes with the container.
        allocate(&mut cluster, &id, &[], &[placed[1].clone()], 60).unwrap();
        assert_eq!(cluster.preemption_mark(&placed[1]), None);
        assert_eq!(cluster.preemption_mark(&am), Some(30));
    }

    #[test]
    fn a_master_hears_of_a_node_lost_by_silence_and_of_its_return() {
        let (mut cluster, _, id) = with_master();
        cluster
            .register_master(&id, 1, "h".into(), 7077, String::new())
            .unwrap();
        cluster
            .register_node("n2", NodeKind::Remote, Resources::new(8192, 8, 0), "t", 0)
            .unwrap();
        // n1, where the master runs, is heard from; n2 falls silent.
        cluster.nodes.get_mut("n1").unwrap().last_heartbeat_ms = 1_000;
        assert!(cluster.expire_nodes(500, 1_000).is_empty());
        assert!(cluster.node("n2").is_none() && cluster.lost_node("n2").is_some());
        let (news, _) = allocate(&mut cluster, &id, &[], &[], 1_010).unwrap();
        assert_eq!(news.updated_nodes, ["n2"], "YARN's NODE_UNUSABLE");
        cluster
            .register_node(
                "n2",
                NodeKind::Remote,
                Resources::new(8192, 8, 0),
                "t",
                1_020,
            )
            .unwrap();
        let (news, _) = allocate(&mut cluster, &id, &[], &[], 1_030).unwrap();
        assert_eq!(news.updated_nodes, ["n2"], "YARN's NODE_USABLE");
        // A new node never lost is no news.
        cluster
            .register_node(
                "n3",
                NodeKind::Remote,
                Resources::new(8192, 8, 0),
                "t",
                1_040,
            )
            .unwrap();
        let (news, _) = allocate(&mut cluster, &id, &[], &[], 1_050).unwrap();
        assert!(news.updated_nodes.is_empty());
    }

    #[test]
    fn a_master_asks_is_told_what_its_node_holds_and_finishes_its_app() {
        let (mut cluster, app, id) = with_master();
        let am = master_container(&cluster, app);
        assert!(am.contains("_01_"), "{am}");
        assert_eq!(
            allocate(&mut cluster, &id, &[], &[], 20).unwrap_err(),
            MasterError::NotRegistered(id.clone())
        );
        assert!(matches!(
            cluster.register_master(&id, 2, "h".into(), 1, String::new()),
            Err(MasterError::NotCurrentAttempt { .. })
        ));
        cluster
            .register_master(&id, 1, "h".into(), 7077, String::new())
            .unwrap();
        let (news, _) = allocate(&mut cluster, &id, &[executors(2)], &[], 20).unwrap();
        assert!(news.allocated.is_empty());
        assert_eq!(cluster.apps()[app].pending_containers(), 2);
        // Absolute, as YARN's: asking 3 now means 3 outstanding, not 5.
        allocate(&mut cluster, &id, &[executors(3)], &[], 20).unwrap();
        assert_eq!(cluster.apps()[app].pending_containers(), 3);
        let placed = place(&mut cluster, app, 1, 2);
        // Not told until its node holds them.
        let (news, _) = allocate(&mut cluster, &id, &[], &[], 30).unwrap();
        assert!(news.allocated.is_empty());
        let node = cluster.nodes.get_mut("n1").unwrap();
        node.launched.extend(placed.iter().cloned());
        let (news, _) = allocate(&mut cluster, &id, &[], &[], 30).unwrap();
        assert_eq!(news.allocated.len(), 2);
        assert_eq!(news.new_nodes, ["n1"]);
        assert_eq!(news.allocated[0].1.priority, 0);
        // A release ends it and is told as ABORTED; another app's container
        // or the master's own cannot be released.
        let (news, released) =
            allocate(&mut cluster, &id, &[], &[placed[0].clone(), am.clone()], 40).unwrap();
        assert_eq!(released.len(), 1);
        assert_eq!(news.completed.len(), 1);
        assert_eq!(
            news.completed[0].exit_status,
            crate::protocol::node::exit_status::ABORTED
        );
        assert!(news.new_nodes.is_empty());
        // A failed executor is told, not asked for again, and fails nothing.
        cluster.end_container(
            &placed[1],
            60,
            EndCause::Failed {
                exit_status: 1,
                diagnostics: "boom".into(),
            },
        );
        assert_eq!(cluster.apps()[app].state, AppState::Running);
        let (news, _) = allocate(&mut cluster, &id, &[], &[], 70).unwrap();
        assert_eq!(news.completed[0].exit_status, 1);
        let ended = cluster
            .finish_master(
                &id,
                1,
                MasterFinish {
                    final_status: FinalStatus::Failed,
                    diagnostics: "job failed".into(),
                },
                80,
            )
            .unwrap();
        assert!(ended.is_empty());
        assert_eq!(cluster.apps()[app].pending_containers(), 0);
        // Unregistered, it neither registers nor asks again.
        assert_eq!(
            cluster.register_master(&id, 1, "h".into(), 1, String::new()),
            Err(MasterError::Unregistered(id.clone()))
        );
        assert!(matches!(
            allocate(&mut cluster, &id, &[executors(1)], &[], 85),
            Err(MasterError::Unregistered(_))
        ));
        cluster.end_container(&am, 90, EndCause::Succeeded);
        let app = &cluster.apps()[app];
        assert_eq!(app.state, AppState::Finished);
        assert_eq!(app.final_status(), "FAILED");
        assert_eq!(app.diagnostics, "job failed");
    }

    #[test]
    fn a_master_that_dies_after_registering_starts_the_next_attempt_then_fails_the_app() {
        let (mut cluster, app, id) = with_master();
        let finish = MasterFinish {
            final_status: FinalStatus::Succeeded,
            diagnostics: String::new(),
        };
        assert_eq!(
            cluster.finish_master(&id, 1, finish, 15).unwrap_err(),
            MasterError::NotRegistered(id.clone()),
            "no finish before a registration"
        );
        cluster
            .register_master(&id, 1, "h".into(), -1, String::new())
            .unwrap();
        allocate(&mut cluster, &id, &[executors(2)], &[], 20).unwrap();
        let executor = place(&mut cluster, app, 1, 1);
        let am = master_container(&cluster, app);
        // Exited 0 without unregistering: the attempt failed.
        cluster.end_container(&am, 30, EndCause::Succeeded);
        assert!(
            cluster.container(&executor[0]).is_none(),
            "the attempt's containers end"
        );
        assert_eq!(
            cluster.apps()[app].pending_containers(),
            1,
            "only the next master"
        );
        assert!(matches!(
            allocate(&mut cluster, &id, &[], &[], 40),
            Err(MasterError::NotCurrentAttempt { .. })
        ));
        let next = place(&mut cluster, app, 0, 1);
        assert!(next[0].contains("_02_"), "{}", next[0]);
        assert_eq!(cluster.apps()[app].master.as_ref().unwrap().attempt, 2);
        cluster
            .register_master(&id, 2, "h".into(), -1, String::new())
            .unwrap();
        cluster.end_container(
            &next[0],
            50,
            EndCause::Failed {
                exit_status: 13,
                diagnostics: String::new(),
            },
        );
        cluster.fail_apps(60);
        let app = &cluster.apps()[app];
        assert_eq!(app.state, AppState::Failed);
        assert!(
            app.diagnostics
                .contains("attempt 2 failed (2 of 2 counted)"),
            "{}",
            app.diagnostics
        );
    }

    #[test]
    fn an_attempt_lost_preempted_or_decommissioned_does_not_count() {
        let (mut cluster, app, _) = with_master();
        // Attempt 1 killed by its node's decommission, attempt 2 preempted,
        // attempt 3 lost: none counts, so two more may fail.
        let failed = || EndCause::Failed {
            exit_status: 1,
            diagnostics: String::new(),
        };
        let ends = [
            EndCause::Decommissioned,
            EndCause::Preempted,
            EndCause::Lost,
            failed(),
        ];
        for (at, cause) in ends.into_iter().enumerate() {
            let am = master_container(&cluster, app);
            cluster.end_container(&am, 10 * at as u64 + 20, cause);
            assert!(!cluster.apps()[app].state.has_ended(), "{am}");
            place(&mut cluster, app, 0, 1);
        }
        assert_eq!(cluster.apps()[app].master.as_ref().unwrap().attempt, 5);
        let am = master_container(&cluster, app);
        cluster.end_container(&am, 90, failed());
        cluster.fail_apps(100);
        let app = &cluster.apps()[app];
        assert_eq!(app.state, AppState::Failed);
        assert!(
            app.diagnostics
                .contains("attempt 5 failed (2 of 2 counted)"),
            "{}",
            app.diagnostics
        );
    }

    #[test]
    fn asks_out_of_bounds_are_refused_whole() {
        let (mut cluster, app, id) = with_master();
        cluster
            .register_master(&id, 1, "h".into(), -1, String::new())
            .unwrap();
        let too_many: Vec<MasterAsk> = (0..=MAX_MASTER_ASKS as i32)
            .map(|priority| MasterAsk {
                key: MasterAskKey {
                    priority,
                    ..executors(1).key
                },
                count: 1,
                places: MasterPlaces::default(),
            })
            .collect();
        assert!(matches!(
            allocate(&mut cluster, &id, &too_many, &[], 20),
            Err(MasterError::BadAsk(_))
        ));
        let no_cores = MasterAsk {
            key: MasterAskKey {
                size: (1024, 0, 0),
                ..executors(1).key
            },
            ..executors(1)
        };
        let no_memory = MasterAsk {
            key: MasterAskKey {
                size: (0, 1, 0),
                ..executors(1).key
            },
            ..executors(1)
        };
        assert!(allocate(&mut cluster, &id, &[no_cores], &[], 20).is_err());
        assert!(allocate(&mut cluster, &id, &[no_memory], &[], 20).is_err());
        let huge = MasterAsk {
            count: MAX_MASTER_ASK_CONTAINERS + 1,
            ..executors(1)
        };
        assert!(allocate(&mut cluster, &id, &[executors(1), huge], &[], 20).is_err());
        assert_eq!(cluster.apps()[app].asks.len(), 1, "nothing was added");
        assert_eq!(
            attempt_id("application_17_0003", 2),
            "appattempt_17_0003_000002"
        );
    }

    #[test]
    fn the_places_a_master_names_become_its_asks_locality() {
        let (mut cluster, app, id) = with_master();
        cluster
            .register_master(&id, 1, "h".into(), -1, String::new())
            .unwrap();
        let near = |hosts: &[&str], relax: bool| MasterAsk {
            places: MasterPlaces {
                hosts: hosts.iter().map(|h| h.to_string()).collect(),
                racks: Vec::new(),
                relax_locality: relax,
            },
            ..executors(2)
        };
        allocate(
            &mut cluster,
            &id,
            &[near(&["n1", "elsewhere"], false)],
            &[],
            20,
        )
        .unwrap();
        let locality = cluster.apps()[app].asks[1].locality.clone().unwrap();
        assert_eq!(locality.nodes.iter().collect::<Vec<_>>(), ["n1"]);
        assert!(!locality.relax_locality);
        // The same places again: delay scheduling's count goes on.
        cluster.apps[app].asks[1]
            .locality
            .as_mut()
            .unwrap()
            .missed_opportunities = 3;
        allocate(&mut cluster, &id, &[near(&["n1"], false)], &[], 30).unwrap();
        let kept = cluster.apps()[app].asks[1].locality.as_ref().unwrap();
        assert_eq!(kept.missed_opportunities, 3);
        // Counted, then asked for none: the time until it asks again is
        // no wait (the count itself stays).
        cluster.count_missed_opportunities(30);
        assert_eq!(
            cluster.apps()[app].asks[1]
                .locality
                .as_ref()
                .unwrap()
                .counted_at_ms,
            Some(30)
        );
        let none = MasterAsk {
            count: 0,
            ..near(&["n1"], false)
        };
        allocate(&mut cluster, &id, &[none], &[], 35).unwrap();
        allocate(&mut cluster, &id, &[near(&["n1"], false)], &[], 600_000).unwrap();
        let again = cluster.apps()[app].asks[1].locality.as_ref().unwrap();
        assert_eq!((again.missed_opportunities, again.counted_at_ms), (3, None));
        // Only unknown hosts: anywhere.
        allocate(&mut cluster, &id, &[near(&["elsewhere"], true)], &[], 40).unwrap();
        assert!(cluster.apps()[app].asks[1].locality.is_none());
    }

    #[test]
    fn a_blacklisted_node_takes_none_of_the_masters_containers() {
        let (mut cluster, app, id) = with_master();
        cluster
            .register_node("n2", NodeKind::Remote, Resources::new(8192, 8, 0), "t", 0)
            .unwrap();
        cluster
            .register_master(&id, 1, "h".into(), -1, String::new())
            .unwrap();
        let blacklist = |additions: &[&str], removals: &[&str]| BlacklistChange {
            additions: additions.iter().map(|p| p.to_string()).collect(),
            removals: removals.iter().map(|p| p.to_string()).collect(),
        };
        cluster
            .master_allocate(&id, 1, &[executors(2)], &[], &blacklist(&["n1"], &[]), 20)
            .unwrap();
        assert!(cluster.apps()[app].asks[1].avoid.contains("n1"));
        assert_eq!(cluster.restricted_nodes(app, 1), Some(vec![1]), "n2 only");
        let refused = cluster.allocate(
            &[Placement {
                app,
                ask: 1,
                node: 0,
                count: 1,
            }],
            25,
        );
        assert!(
            matches!(refused, Err(crate::cluster::ClusterError::BadPlacement(_))),
            "{refused:?}"
        );
        // A rack takes its nodes away; a removal gives them back.
        cluster
            .master_allocate(
                &id,
                1,
                &[],
                &[],
                &blacklist(&["/default-rack"], &["n1"]),
                30,
            )
            .unwrap();
        assert_eq!(cluster.restricted_nodes(app, 1), Some(vec![]));
        cluster
            .master_allocate(&id, 1, &[], &[], &blacklist(&[], &["/default-rack"]), 40)
            .unwrap();
        assert_eq!(
            cluster.restricted_nodes(app, 1),
            None,
            "in the common rounds again"
        );
        // Bounds: a whole refusal changes nothing.
        let too_many: Vec<String> = (0..=MAX_BLACKLIST).map(|i| format!("h{i}")).collect();
        let too_many: Vec<&str> = too_many.iter().map(String::as_str).collect();
        assert!(
            cluster
                .master_allocate(&id, 1, &[executors(5)], &[], &blacklist(&too_many, &[]), 50)
                .is_err()
        );
        assert!(
            cluster
                .master_allocate(&id, 1, &[executors(5)], &[], &blacklist(&[""], &[]), 50)
                .is_err()
        );
        assert_eq!(cluster.apps()[app].asks[1].pending, 2, "nothing applied");
        assert!(cluster.apps()[app].asks[1].avoid.is_empty());
    }

    #[test]
    fn a_registered_masters_progress_is_its_apps_as_yarn_bounds_it() {
        let (mut cluster, app, id) = with_master();
        cluster.master_progress(&id, 1, 0.5);
        assert_eq!(cluster.apps()[app].progress(), 0.0, "not registered yet");
        cluster
            .register_master(&id, 1, "h".into(), -1, String::new())
            .unwrap();
        for (said, taken) in [(0.25, 0.25), (f32::NAN, 0.0), (-3.0, 0.0), (7.0, 1.0)] {
            cluster.master_progress(&id, 1, said);
            assert_eq!(cluster.apps()[app].progress(), taken, "{said}");
        }
        // Another attempt's word is not taken.
        cluster.master_progress(&id, 2, 0.75);
        assert_eq!(cluster.apps()[app].progress(), 1.0);
    }
}
