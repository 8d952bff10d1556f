//! What of the cluster a restart keeps, and how it comes back: the records
//! the store holds for apps (with their asks), containers (running ones with
//! their node, ended ones for their app's history) and agents' nodes; the
//! changes since the last commit ([`Changes`], noted by every change the
//! cluster makes once tracking is on); and [`Cluster::restore`], which puts
//! stored records back through the same bookkeeping as a live cluster.
//!
//! Derived figures (an app's used resources and running count, a node's
//! allocation) are not stored: they are recomputed from the running
//! containers, so they cannot disagree.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::decayed_usage::DecayedUsage;
use super::model::EndCause;
use super::node::AgentInfo;
use super::{App, AppState, Ask, Cluster, Container, ContainerRecord, Launch, Node, NodeKind};
use crate::protocol::node::ContainerCommand;
use crate::resources::ResourceSeconds;
use crate::resources::Resources;
use crate::store::Batch;

/// What changed since the store last took the changes: ids to write again
/// (or delete, if they are gone by then).
#[derive(Debug, Default)]
pub struct Changes {
    apps: BTreeSet<String>,
    /// Apps let go by the retention: deleted with their containers.
    dropped_apps: BTreeSet<String>,
    /// Containers started or ended: id → (app, number).
    containers: foldhash::HashMap<String, (String, u64)>,
    /// Container records an app let go of (beyond its newest 10,000).
    dropped_containers: foldhash::HashSet<String>,
    nodes: BTreeSet<String>,
    /// Node ids whose owner changed (claimed or released).
    owners: BTreeSet<String>,
    totals: bool,
    /// The fading use of users and queues, to store (`decayed_usage.rs`).
    decayed_usage: bool,
    /// The node labels and what is set on nodes (`labels.rs`).
    labels: bool,
    /// The administrators' decommissions (`node.rs`).
    decommissions: bool,
}

impl Changes {
    /// Whether nothing changed since the store last took the changes.
    pub fn is_empty(&self) -> bool {
        self.apps.is_empty()
            && self.dropped_apps.is_empty()
            && self.containers.is_empty()
            && self.dropped_containers.is_empty()
            && self.nodes.is_empty()
            && self.owners.is_empty()
            && !self.totals
            && !self.decayed_usage
            && !self.labels
            && !self.decommissions
    }
}

/// Notes on `changes` (if tracked) that app `id` changed.
pub(super) fn app_changed(changes: &mut Option<Changes>, id: &str) {
    if let Some(changes) = changes {
        changes.apps.insert(id.to_string());
    }
}

pub(super) fn app_dropped(changes: &mut Option<Changes>, id: &str) {
    if let Some(changes) = changes {
        changes.apps.remove(id);
        changes.containers.retain(|_, (app, _)| app != id);
        changes.dropped_apps.insert(id.to_string());
        changes.totals = true;
    }
}

pub(super) fn container_changed(changes: &mut Option<Changes>, id: &str, app: &str, seq: u64) {
    if let Some(changes) = changes {
        changes
            .containers
            .insert(id.to_string(), (app.to_string(), seq));
        changes.apps.insert(app.to_string());
    }
}

pub(super) fn container_dropped(changes: &mut Option<Changes>, id: &str) {
    if let Some(changes) = changes {
        changes.containers.remove(id);
        changes.dropped_containers.insert(id.to_string());
    }
}

pub(super) fn node_changed(changes: &mut Option<Changes>, id: &str) {
    if let Some(changes) = changes {
        changes.nodes.insert(id.to_string());
    }
}

/// Notes on `changes` (if tracked) that node id `id` changed hands.
pub(super) fn owner_changed(changes: &mut Option<Changes>, id: &str) {
    if let Some(changes) = changes {
        changes.owners.insert(id.to_string());
    }
}

pub(super) fn totals_changed(changes: &mut Option<Changes>) {
    if let Some(changes) = changes {
        changes.totals = true;
    }
}

pub(super) fn decayed_usage_changed(changes: &mut Option<Changes>) {
    if let Some(changes) = changes {
        changes.decayed_usage = true;
    }
}

pub(super) fn labels_changed(changes: &mut Option<Changes>) {
    if let Some(changes) = changes {
        changes.labels = true;
    }
}

/// The setting that keeps the node labels and what is set on nodes.
const LABELS_SETTING: &str = "cluster.node-labels";
/// The setting that keeps the administrators' decommissions, by node id.
const DECOMMISSIONS_SETTING: &str = "cluster.decommissions";

/// Notes on `changes` (if tracked) that the decommissions changed.
pub(super) fn decommissions_changed(changes: &mut Option<Changes>) {
    if let Some(changes) = changes {
        changes.decommissions = true;
    }
}

/// The setting that keeps the fading use of users and queues.
const DECAYED_USAGE_SETTING: &str = "scheduler.decayed-usage";

/// The setting that keeps the apps ever ended, by how (beyond retention).
const TOTALS_SETTING: &str = "cluster.app-totals";

/// An app as stored: everything but what its containers determine.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct StoredApp {
    pub id: String,
    pub name: String,
    pub queue: String,
    pub submitter: String,
    pub user: String,
    pub project: String,
    pub priority: i32,
    pub state: AppState,
    pub submit_time_ms: u64,
    pub start_time_ms: Option<u64>,
    pub finish_time_ms: Option<u64>,
    pub asks: Vec<StoredAsk>,
    pub finished_containers: u32,
    pub failed_containers: u32,
    pub diagnostics: String,
    pub exit_status: Option<i32>,
    pub credits: f64,
    pub preempted_containers: u32,
    pub lost_containers: u32,
    pub reservation_id: Option<String>,
    /// Added after the first stored format: absent in older rows.
    #[serde(default = "default_application_type")]
    pub application_type: String,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub usage: ResourceSeconds,
    /// Its running containers' use since then is counted at the next
    /// change, downtime included: they ran on (work-preserving restart).
    #[serde(default)]
    pub usage_counted_ms: u64,
    /// Absent in older rows: then its containers' ends counted (at least).
    #[serde(default)]
    pub containers_run: u32,
    /// When its lifetime ends; absent in older rows and for apps without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifetime_deadline_ms: Option<u64>,
    /// Its node label expression as submitted; absent in older rows.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub node_label_expression: String,
    /// A YARN application master's attempts that ended through no fault
    /// of their own (not counted against its maximum); absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub uncounted_attempts: u32,
}

fn is_zero(count: &u32) -> bool {
    *count == 0
}

fn default_application_type() -> String {
    super::app::DEFAULT_APPLICATION_TYPE.into()
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct StoredAsk {
    pub resources: Resources,
    pub duration_ms: Option<u64>,
    pub command: Option<ContainerCommand>,
    pub env: BTreeMap<String, String>,
    /// A YARN client's launch context; absent in older rows and for
    /// Weft's own asks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub yarn: Option<crate::protocol::node::YarnLaunch>,
    pub count: u32,
    pub pending: u32,
    pub max_attempts: u32,
    pub retries: Vec<u32>,
    /// Absent in older rows and for asks that are no gang.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gang: Option<super::Gang>,
    /// The partition it runs in; absent in older rows (the default one).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub partition: String,
    /// Absent in older rows and for asks without them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allocation_tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraint: Option<super::PlacementConstraint>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locality: Option<super::Locality>,
    /// Absent in older rows and for guaranteed asks.
    #[serde(default, skip_serializing_if = "super::ExecutionType::is_guaranteed")]
    pub execution_type: super::ExecutionType,
}

/// A container as stored: where it runs (or ran) and, once ended, how.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct StoredContainerRecord {
    pub id: String,
    pub app: String,
    pub ask: usize,
    pub node: String,
    pub resources: Resources,
    pub start_time_ms: u64,
    pub duration_ms: u64,
    pub attempt: u32,
    pub seq: u64,
    pub finish_time_ms: Option<u64>,
    pub exit_status: Option<i32>,
    #[serde(default)]
    pub diagnostics: String,
    /// When it started to run (see [`Container::launched_ms`]); none in a
    /// record that does not say (then the quota's charged-until time tells).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launched_ms: Option<u64>,
}

/// An agent's node as stored; it comes back waiting for the agent to
/// register again.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct StoredNode {
    pub id: String,
    pub capacity: Resources,
    pub owner: String,
    pub isolation: String,
    pub http_address: String,
    pub logs_secret: String,
    /// Absent in older rows (the default rack, no attributes).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub rack: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: BTreeMap<String, String>,
    /// The label its agent named; absent in older rows (none).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub label: String,
    /// What its health checks found wrong when last heard from; absent
    /// while healthy (and in older rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unhealthy: Option<String>,
}

/// What a restore put back, and what it could not.
#[derive(Debug, Default)]
pub struct Restored {
    /// App records read back, ended apps included (before the retention
    /// lets the oldest of those go).
    pub apps: usize,
    /// Running containers put back, those that then ended at once
    /// included (see `ended`).
    pub running: usize,
    /// The agents' nodes put back, waiting for their agents.
    pub nodes: Vec<String>,
    /// Running containers that ended at once: their node is gone (lost,
    /// ABORTED, asked for again) or their app's queue is (the app is
    /// killed). Charged up to where the stored state had them (see
    /// `rm/recovery.rs`).
    pub ended: Vec<Container>,
}

impl StoredApp {
    fn of(app: &App) -> StoredApp {
        StoredApp {
            id: app.id.clone(),
            name: app.name.clone(),
            queue: app.queue.clone(),
            submitter: app.submitter.clone(),
            user: app.user.clone(),
            project: app.project.clone(),
            priority: app.priority,
            state: app.state,
            submit_time_ms: app.submit_time_ms,
            start_time_ms: app.start_time_ms,
            finish_time_ms: app.finish_time_ms,
            asks: app
                .asks
                .iter()
                .map(|ask| StoredAsk {
                    resources: ask.resources,
                    duration_ms: ask.duration_ms,
                    command: ask.launch.command.clone(),
                    env: ask.launch.env.clone(),
                    yarn: ask.launch.yarn.clone(),
                    count: ask.count,
                    pending: ask.pending,
                    max_attempts: ask.max_attempts,
                    retries: ask.retries.clone(),
                    gang: ask.gang,
                    partition: ask.partition.clone(),
                    allocation_tags: ask.allocation_tags.clone(),
                    constraint: ask.constraint.clone(),
                    locality: ask.locality.clone(),
                    execution_type: ask.execution_type,
                })
                .collect(),
            finished_containers: app.finished_containers,
            failed_containers: app.failed_containers,
            diagnostics: app.diagnostics.clone(),
            exit_status: app.exit_status,
            credits: app.credits,
            preempted_containers: app.preempted_containers,
            lost_containers: app.lost_containers,
            containers_run: app.containers_run,
            reservation_id: app.reservation_id.clone(),
            application_type: app.application_type.clone(),
            tags: app.tags.clone(),
            usage: app.usage,
            usage_counted_ms: app.usage_counted_ms,
            lifetime_deadline_ms: app.lifetime_deadline_ms,
            node_label_expression: app.node_label_expression.clone(),
            uncounted_attempts: app.master.as_ref().map_or(0, |m| m.uncounted_attempts),
        }
    }

    fn into_app(self, queue_index: usize) -> App {
        let mut app = App {
            id: self.id,
            name: self.name,
            queue: self.queue,
            queue_index,
            submitter: self.submitter,
            user: self.user,
            project: self.project,
            priority: self.priority,
            state: self.state,
            submit_time_ms: self.submit_time_ms,
            start_time_ms: self.start_time_ms,
            finish_time_ms: self.finish_time_ms,
            asks: self
                .asks
                .into_iter()
                .map(|ask| Ask {
                    resources: ask.resources,
                    duration_ms: ask.duration_ms,
                    launch: Arc::new(Launch {
                        command: ask.command,
                        env: ask.env,
                        yarn: ask.yarn,
                    }),
                    count: ask.count,
                    pending: ask.pending,
                    max_attempts: ask.max_attempts,
                    retries: ask.retries,
                    gang: ask.gang,
                    partition: ask.partition,
                    allocation_tags: ask.allocation_tags,
                    constraint: ask.constraint,
                    locality: ask.locality,
                    // A master's blacklist is not kept: its session does
                    // not outlive the server.
                    avoid: Arc::default(),
                    execution_type: ask.execution_type,
                })
                .collect(),
            used: Resources::ZERO,
            running_containers: 0,
            finished_containers: self.finished_containers,
            failed_containers: self.failed_containers,
            diagnostics: self.diagnostics,
            exit_status: self.exit_status,
            credits: self.credits,
            containers: Default::default(),
            preempted_containers: self.preempted_containers,
            lost_containers: self.lost_containers,
            containers_run: self.containers_run.max(
                self.finished_containers
                    .saturating_add(self.failed_containers)
                    .saturating_add(self.preempted_containers)
                    .saturating_add(self.lost_containers),
            ),
            reservation_id: self.reservation_id,
            application_type: self.application_type,
            tags: self.tags,
            usage: self.usage,
            // Rows from before usage was counted start counting when their
            // app was submitted.
            usage_counted_ms: self.usage_counted_ms.max(self.submit_time_ms),
            lifetime_deadline_ms: self.lifetime_deadline_ms,
            node_label_expression: self.node_label_expression,
            master: None,
        };
        // Its master's session is not kept (its tokens were of the last
        // run's key): it is a master's app again, its asks as the master
        // last left them, and what it hears starts afresh.
        if app.asks.first().is_some_and(|ask| {
            ask.launch
                .yarn
                .as_ref()
                .is_some_and(|yarn| yarn.application_master)
        }) {
            let mut master = Box::<super::master::Master>::default();
            master.uncounted_attempts = self.uncounted_attempts;
            app.master = Some(master);
        }
        app
    }
}

impl StoredContainerRecord {
    fn running(container: &Container) -> StoredContainerRecord {
        StoredContainerRecord {
            id: container.id.clone(),
            app: container.app.clone(),
            ask: container.ask,
            node: container.node.clone(),
            resources: container.resources,
            start_time_ms: container.start_time_ms,
            duration_ms: container.duration_ms,
            attempt: container.attempt,
            seq: container.seq,
            finish_time_ms: None,
            exit_status: None,
            diagnostics: String::new(),
            launched_ms: container.launched_ms,
        }
    }

    fn ended(app: &App, record: &ContainerRecord) -> StoredContainerRecord {
        StoredContainerRecord {
            id: record.id.clone(),
            app: app.id.clone(),
            ask: 0,
            node: record.node.clone(),
            resources: Resources::ZERO,
            start_time_ms: record.start_time_ms,
            duration_ms: 0,
            attempt: record.attempt,
            seq: record.seq,
            finish_time_ms: record.finish_time_ms,
            exit_status: record.exit_status,
            diagnostics: record.diagnostics.clone(),
            launched_ms: None,
        }
    }

    fn container(&self) -> Container {
        Container {
            id: self.id.clone(),
            app: self.app.clone(),
            ask: self.ask,
            node: self.node.clone(),
            resources: self.resources,
            start_time_ms: self.start_time_ms,
            duration_ms: self.duration_ms,
            attempt: self.attempt,
            seq: self.seq,
            launched_ms: self.launched_ms,
            exit_status: None,
            ended_ms: None,
        }
    }

    fn record(&self) -> ContainerRecord {
        ContainerRecord {
            seq: self.seq,
            id: self.id.clone(),
            node: self.node.clone(),
            attempt: self.attempt,
            start_time_ms: self.start_time_ms,
            finish_time_ms: self.finish_time_ms,
            exit_status: self.exit_status,
            diagnostics: self.diagnostics.clone(),
        }
    }
}

fn json(value: &impl Serialize) -> String {
    serde_json::to_string(value).expect("stored records serialize")
}

/// Everything the store holds of a cluster, as read back.
#[derive(Debug, Default)]
pub struct StoredCluster {
    /// (number, record), in submission order.
    pub apps: Vec<(u64, String)>,
    /// (record, running).
    pub containers: Vec<(String, bool)>,
    /// Agents' nodes, one record each.
    pub nodes: Vec<String>,
    /// (node id, owner).
    pub node_owners: Vec<(String, String)>,
    /// The totals setting, if stored.
    pub totals: Option<String>,
    /// The fading use of users and queues, if stored.
    pub decayed_usage: Option<String>,
    /// The node labels and what is set on nodes, if stored.
    pub labels: Option<String>,
    /// The administrators' decommissions, by node id, if stored.
    pub decommissions: Option<String>,
}

/// A stored record that does not parse.
#[derive(Debug, thiserror::Error)]
#[error("a stored {what} does not parse: {why}")]
pub struct RestoreError {
    what: &'static str,
    why: String,
}

fn parse<T: for<'de> Deserialize<'de>>(what: &'static str, text: &str) -> Result<T, RestoreError> {
    serde_json::from_str(text).map_err(|e| RestoreError {
        what,
        why: e.to_string(),
    })
}

impl Cluster {
    /// From now on every change is noted for the store.
    pub fn track_changes(&mut self) {
        self.changes.get_or_insert_with(Changes::default);
    }

    /// Adds every change since the last call to `batch`, as the records
    /// are now (nothing if changes are not tracked).
    pub fn take_changes(&mut self, batch: &mut Batch) {
        let Some(changes) = self.changes.as_mut().map(std::mem::take) else {
            return;
        };
        for id in &changes.dropped_apps {
            batch.delete_app(id);
        }
        for id in &changes.apps {
            if let Some(&number) = self.app_index.get(id) {
                batch.put_app(id, number as u64, json(&StoredApp::of(&self.apps[number])));
            }
        }
        for id in &changes.dropped_containers {
            batch.delete_container(id);
        }
        for (id, (app_id, seq)) in &changes.containers {
            if let Some(container) = self.containers.get(id) {
                let record = StoredContainerRecord::running(container);
                batch.put_container(id, app_id, container.seq, true, json(&record));
            } else if let Some(app) = self.app(app_id)
                // Records are in creation order: found by number.
                && let Ok(at) = app.containers.binary_search_by_key(seq, |r| r.seq)
            {
                let record = &app.containers[at];
                let record = StoredContainerRecord::ended(app, record);
                batch.put_container(id, app_id, record.seq, false, json(&record));
            }
        }
        for id in &changes.nodes {
            match self.nodes.get(id) {
                Some(node) if node.kind == NodeKind::Remote => batch.put_node(
                    id,
                    json(&StoredNode {
                        id: id.clone(),
                        capacity: node.capacity,
                        owner: node.owner.clone(),
                        isolation: node.agent.isolation.clone(),
                        http_address: node.agent.http_address.clone(),
                        logs_secret: node.agent.logs_secret.clone(),
                        rack: node.agent.rack.clone(),
                        attributes: node.agent.attributes.clone(),
                        label: node.agent.label.clone(),
                        unhealthy: node.unhealthy.clone(),
                    }),
                ),
                _ => batch.delete_node(id),
            }
        }
        for id in &changes.owners {
            match self.node_owners.get(id) {
                Some(owner) => batch.put_node_owner(id, owner),
                None => batch.delete_node_owner(id),
            }
        }
        if changes.decayed_usage {
            batch.set_setting(DECAYED_USAGE_SETTING, &json(&self.decayed));
        }
        if changes.labels {
            batch.set_setting(LABELS_SETTING, &json(&self.labels));
        }
        if changes.decommissions {
            batch.set_setting(DECOMMISSIONS_SETTING, &json(&self.decommissions));
        }
        if changes.totals {
            let totals = [self.finished_total, self.failed_total, self.killed_total];
            batch.set_setting(TOTALS_SETTING, &json(&totals));
        }
    }

    /// The fading use as stored (its half-life the one configured now),
    /// and what the running containers hold from the stored update on.
    fn restore_decayed_usage(&mut self, stored: Option<&str>) -> Result<(), RestoreError> {
        if let Some(stored) = stored {
            let mut usage: DecayedUsage = parse("decayed usage", stored)?;
            usage.half_life_ms = self.decayed.half_life_ms;
            self.decayed = usage;
        }
        let mut running: Vec<(u64, &str, &str, Resources)> = self
            .containers
            .values()
            .filter_map(|c| {
                let app = &self.apps[*self.app_index.get(&c.app)?];
                let queue = self.queues.queues().get(app.queue_index)?;
                Some((
                    c.start_time_ms,
                    queue.path.as_str(),
                    app.user.as_str(),
                    c.resources,
                ))
            })
            .collect();
        running.sort_by_key(|&(start, ..)| start);
        let mut decayed = std::mem::take(&mut self.decayed);
        for (start, queue, user, resources) in running {
            decayed.resume(queue, user, resources, start);
        }
        self.decayed = decayed;
        Ok(())
    }

    /// The name of the setting [`StoredCluster::decayed_usage`] is read from.
    pub fn decayed_usage_setting() -> &'static str {
        DECAYED_USAGE_SETTING
    }

    /// The name of the setting [`StoredCluster::labels`] is read from.
    pub fn labels_setting() -> &'static str {
        LABELS_SETTING
    }

    /// The name of the setting [`StoredCluster::decommissions`] is read
    /// from.
    pub fn decommissions_setting() -> &'static str {
        DECOMMISSIONS_SETTING
    }

    /// The name of the setting [`StoredCluster::totals`] is read from.
    pub fn totals_setting() -> &'static str {
        TOTALS_SETTING
    }

    /// Puts back what the store held, at `now`, into a cluster with no apps
    /// yet (simulated nodes may be registered): agents' nodes wait for
    /// their agents (the expiry interval counts from `now`), apps keep
    /// their numbers, running containers hold their nodes' and apps'
    /// resources again. A running container whose node is gone is lost
    /// (returned, to be charged). An app whose queue the configuration no
    /// longer has goes on in it all the same until it ends (it cannot get
    /// new containers), as YARN keeps it.
    pub fn restore(&mut self, stored: StoredCluster, now: u64) -> Result<Restored, RestoreError> {
        let mut restored = Restored::default();
        self.node_owners.extend(stored.node_owners.iter().cloned());
        if let Some(labels) = &stored.labels {
            self.restore_labels(parse("node labels", labels)?);
        }
        if let Some(decommissions) = &stored.decommissions {
            self.decommissions = parse("decommissions", decommissions)?;
            // Nodes registered before the restore (simulated ones) take
            // theirs now; an id no longer registered nor owned (a smaller
            // --sim-nodes) lets its entry go.
            let owners = &self.node_owners;
            let nodes = &self.nodes;
            self.decommissions
                .retain(|id, _| nodes.contains_key(id) || owners.contains_key(id));
            for (id, decommission) in &self.decommissions {
                if let Some(node) = self.nodes.get_mut(id) {
                    node.decommission = Some(*decommission);
                }
            }
        }
        for record in &stored.nodes {
            let node: StoredNode = parse("node", record)?;
            if self.nodes.contains_key(&node.id) {
                continue;
            }
            // Stored before owners had a table of their own.
            if !self.node_owners.contains_key(&node.id) {
                self.node_owners.insert(node.id.clone(), node.owner.clone());
                owner_changed(&mut self.changes, &node.id);
            }
            let mut live = Node::new(
                node.id.clone(),
                NodeKind::Remote,
                node.capacity,
                node.owner,
                now,
            );
            live.agent = AgentInfo {
                isolation: node.isolation,
                http_address: node.http_address,
                logs_secret: node.logs_secret,
                rack: node.rack,
                attributes: node.attributes,
                label: node.label.clone(),
                // Given again when its agent registers.
                nm_address: String::new(),
            };
            live.partition = self.partition_of(&node.id, &node.label);
            live.unheard_since_restore = true;
            // Unhealthy until its agent says otherwise.
            live.unhealthy = node.unhealthy;
            live.decommission = self.decommissions.get(&live.id).copied();
            restored.nodes.push(node.id.clone());
            self.nodes.insert(node.id, live);
        }
        let mut ended_apps = Vec::new();
        let mut orphans = Vec::new();
        for (number, record) in &stored.apps {
            let app: StoredApp = parse("app", record)?;
            let number = usize::try_from(*number).map_err(|_| RestoreError {
                what: "app number",
                why: format!("{number} is out of range"),
            })?;
            // A queue no longer configured (YARN-2308): the app is killed
            // once its containers are back, so they are charged and stopped.
            let queue_index = match self.queues.leaf(&app.queue) {
                Some(leaf) => leaf,
                None => {
                    if !app.state.has_ended() {
                        orphans.push((number, app.queue.clone()));
                    }
                    self.queues
                        .queues()
                        .iter()
                        .position(|q| q.is_leaf())
                        .unwrap_or(0)
                }
            };
            let app = app.into_app(queue_index);
            if app.state.has_ended() {
                ended_apps.push((app.finish_time_ms.unwrap_or(0), number));
            } else {
                self.active.insert(number);
            }
            self.app_index.insert(app.id.clone(), number);
            self.apps.restore(number, app);
            restored.apps += 1;
        }
        self.count_active_apps();
        self.index_lifetimes();
        self.index_gangs();
        let mut records: Vec<StoredContainerRecord> = Vec::with_capacity(stored.containers.len());
        let mut running = Vec::new();
        for (record, is_running) in &stored.containers {
            let record: StoredContainerRecord = parse("container", record)?;
            self.next_container = self.next_container.max(record.seq.saturating_add(1));
            if *is_running {
                running.push(record.id.clone());
            }
            records.push(record);
        }
        records.sort_by_key(|r| r.seq);
        let mut missing_node = Vec::new();
        for record in &records {
            let Some(&number) = self.app_index.get(&record.app) else {
                continue;
            };
            let app = &mut self.apps[number];
            app.containers.push_back(record.record());
            if record.finish_time_ms.is_some() {
                continue;
            }
            let container = record.container();
            app.used += container.resources;
            app.running_containers += 1;
            match self.nodes.get_mut(&container.node) {
                Some(node) => {
                    node.allocated += container.resources;
                    node.containers.insert(container.id.clone());
                    node.launched.insert(container.id.clone());
                    if node.kind == NodeKind::Simulated {
                        let end = container
                            .start_time_ms
                            .saturating_add(container.duration_ms);
                        self.simulated_ends
                            .push(std::cmp::Reverse((end, container.id.clone())));
                    }
                }
                None => missing_node.push(container.id.clone()),
            }
            self.containers.insert(container.id.clone(), container);
            restored.running += 1;
        }
        for number in self.active.iter().copied().collect::<Vec<_>>() {
            let app = &self.apps[number];
            if app.containers.len() > super::app::MAX_CONTAINER_RECORDS {
                let extra = app.containers.len() - super::app::MAX_CONTAINER_RECORDS;
                self.apps[number].containers.drain(..extra);
            }
        }
        self.restore_decayed_usage(stored.decayed_usage.as_deref())?;
        if let Some(totals) = &stored.totals {
            let [finished, failed, killed]: [usize; 3] = parse("totals", totals)?;
            self.finished_total = finished;
            self.failed_total = failed;
            self.killed_total = killed;
        }
        ended_apps.sort();
        for (_, number) in ended_apps {
            for dropped in self.apps.ended(number) {
                self.app_index.remove(&dropped.id);
                app_dropped(&mut self.changes, &dropped.id);
            }
        }
        for id in missing_node {
            tracing::warn!(container = %id, "a stored running container's node is gone: lost (ABORTED)");
            restored
                .ended
                .extend(self.end_container(&id, now, EndCause::Lost));
        }
        for (number, queue) in orphans {
            let why = format!("its queue {queue} is no longer configured");
            restored
                .ended
                .extend(self.end_app(number, AppState::Killed, &why, now));
        }
        Ok(restored)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{AskSpec, NodeState, Placement, SubmitApp};
    use crate::queues::{QueueProperties, QueueTree};
    use crate::store::Store;

    fn tracked_cluster() -> Cluster {
        let mut cluster = Cluster::new(
            7,
            QueueTree::from_properties(&QueueProperties::defaults()).unwrap(),
        );
        cluster.track_changes();
        cluster.set_epoch(3);
        cluster
    }

    fn submit(cluster: &mut Cluster, user: &str, asks: Vec<AskSpec>) -> usize {
        let request = SubmitApp {
            name: format!("{user}'s"),
            priority: 2,
            lifetime_s: Some(3_600),
            ..SubmitApp::new(user, "default", "demo", asks)
        };
        let id = cluster.submit(request, "host-1", 10).unwrap().id.clone();
        cluster.app_index(&id).unwrap()
    }

    /// Everything of a cluster a restart must bring back, as comparable text.
    fn picture(cluster: &Cluster) -> String {
        let apps: Vec<_> = cluster
            .apps()
            .iter()
            .map(|app| {
                let asks: Vec<_> = app
                    .asks
                    .iter()
                    .map(|a| (a.retries.clone(), a.launch.clone()))
                    .collect();
                (
                    serde_json::to_value(app).unwrap(),
                    app.containers.clone(),
                    asks,
                )
            })
            .collect();
        let nodes: Vec<_> = cluster
            .nodes()
            .map(|n| {
                (
                    n.id.clone(),
                    n.capacity,
                    n.allocated,
                    n.containers.clone(),
                    n.agent.clone(),
                    n.partition.clone(),
                )
            })
            .collect();
        let mut containers: Vec<_> = cluster.containers().cloned().collect();
        containers.sort_by_key(|c| c.seq);
        format!(
            "{apps:?}\n{nodes:?}\n{containers:?}\n{:?}\n{:?}",
            cluster.app_totals(),
            cluster.node_labels()
        )
    }

    fn stored(store: &Store) -> StoredCluster {
        StoredCluster {
            apps: store.apps().unwrap(),
            containers: store
                .containers()
                .unwrap()
                .into_iter()
                .map(|c| (c.record, c.running))
                .collect(),
            nodes: store.nodes().unwrap(),
            node_owners: store.node_owners().unwrap(),
            totals: store.settings().unwrap().get(TOTALS_SETTING).cloned(),
            decayed_usage: store
                .settings()
                .unwrap()
                .get(DECAYED_USAGE_SETTING)
                .cloned(),
            labels: store.settings().unwrap().get(LABELS_SETTING).cloned(),
            decommissions: store
                .settings()
                .unwrap()
                .get(DECOMMISSIONS_SETTING)
                .cloned(),
        }
    }

    #[test]
    fn a_node_id_stays_its_owners_when_lost_and_restarted_until_released() {
        let mut cluster = tracked_cluster();
        let store = Store::in_memory();
        cluster
            .register_agent(
                "n1",
                Resources::new(8192, 8, 0),
                "ops",
                AgentInfo::default(),
                Some(&[]),
                5,
            )
            .unwrap();
        cluster.expire_nodes(100, 100);
        assert!(cluster.node("n1").is_none(), "lost");
        assert_eq!(cluster.node_owner("n1"), Some("ops"));
        let mut batch = Batch::default();
        cluster.take_changes(&mut batch);
        store.commit(&batch).unwrap();

        let mut restored = tracked_cluster();
        restored.restore(stored(&store), 200).unwrap();
        assert_eq!(
            restored.node_owner("n1"),
            Some("ops"),
            "kept across a restart"
        );
        let (owner, lost) = restored.release_node("n1", 210).unwrap();
        assert_eq!((owner.as_deref(), lost.len()), (Some("ops"), 0));
        assert_eq!(restored.node_owner("n1"), None);
        assert!(matches!(
            restored.release_node("never", 210),
            Err(crate::cluster::ClusterError::UnknownNode(_))
        ));
        let mut batch = Batch::default();
        restored.take_changes(&mut batch);
        store.commit(&batch).unwrap();
        assert!(
            store.node_owners().unwrap().is_empty(),
            "released in the store"
        );

        // Owned ids are bounded: past the bound a new id is refused.
        for i in 0..crate::limits::MAX_NODES {
            restored.node_owners.insert(format!("x{i}"), "ops".into());
        }
        let refused = restored.register_agent(
            "one-too-many",
            Resources::new(1024, 1, 0),
            "ops",
            AgentInfo::default(),
            None,
            300,
        );
        assert!(matches!(
            refused,
            Err(crate::cluster::ClusterError::TooManyOwnedNodes(_))
        ));
    }

    #[test]
    fn an_unhealthy_node_comes_back_unhealthy_until_its_agent_says_otherwise() {
        use crate::protocol::node::NodeHealth;
        let mut cluster = tracked_cluster();
        let store = Store::in_memory();
        for id in ["sick", "well"] {
            cluster
                .register_agent(
                    id,
                    Resources::new(4096, 4, 0),
                    "ops",
                    AgentInfo::default(),
                    Some(&[]),
                    5,
                )
                .unwrap();
        }
        let sick = NodeHealth {
            healthy: false,
            report: "log-dirs /l is bad".into(),
        };
        cluster.set_node_health("sick", Some(&sick));
        let mut batch = Batch::default();
        cluster.take_changes(&mut batch);
        store.commit(&batch).unwrap();

        let mut restored = tracked_cluster();
        restored.restore(stored(&store), 200).unwrap();
        let node = restored.node("sick").unwrap();
        assert_eq!(node.unhealthy.as_deref(), Some("log-dirs /l is bad"));
        assert_eq!(node.free(), Resources::ZERO);
        assert_eq!(restored.capacity(), Resources::new(4096, 4, 0));
        assert_eq!(restored.node("well").unwrap().unhealthy, None);
    }

    #[test]
    fn a_masters_uncounted_attempts_and_a_simulated_nodes_decommission_outlast_a_restart() {
        let mut cluster = tracked_cluster();
        let store = Store::in_memory();
        let sim = |cluster: &mut Cluster| {
            cluster
                .register_node(
                    "sim-1",
                    NodeKind::Simulated,
                    Resources::new(4096, 4, 0),
                    "",
                    0,
                )
                .unwrap();
        };
        sim(&mut cluster);
        let mut am = AskSpec::sized(1, 1024, 1, 0, 1000);
        am.yarn = Some(crate::protocol::node::YarnLaunch {
            application_master: true,
            ..Default::default()
        });
        let id = cluster
            .submit(SubmitApp::new("alice", "default", "p", vec![am]), "t", 0)
            .unwrap()
            .id
            .clone();
        let index = cluster.app_index(&id).unwrap();
        cluster.apps[index]
            .master
            .as_mut()
            .unwrap()
            .uncounted_attempts = 2;
        app_changed(&mut cluster.changes, &id);
        cluster.decommission_node("sim-1", 9_000, 10).unwrap();
        let mut batch = Batch::default();
        cluster.take_changes(&mut batch);
        store.commit(&batch).unwrap();

        let mut restored = tracked_cluster();
        // Simulated nodes are registered before the restore, as serve does.
        sim(&mut restored);
        restored.restore(stored(&store), 200).unwrap();
        let index = restored.app_index(&id).unwrap();
        assert_eq!(
            restored.apps()[index]
                .master
                .as_ref()
                .unwrap()
                .uncounted_attempts,
            2
        );
        assert_eq!(
            restored.node("sim-1").unwrap().state(),
            NodeState::Decommissioned
        );
    }

    #[test]
    fn a_decommission_outlasts_its_nodes_loss_and_a_restart() {
        let mut cluster = tracked_cluster();
        let store = Store::in_memory();
        let register = |cluster: &mut Cluster, now| {
            cluster
                .register_agent(
                    "n1",
                    Resources::new(4096, 4, 0),
                    "ops",
                    AgentInfo::default(),
                    None,
                    now,
                )
                .unwrap();
        };
        register(&mut cluster, 5);
        cluster.expire_nodes(100, 100);
        assert!(cluster.node("n1").is_none(), "lost");
        // Lost, its id can be decommissioned; an id never seen cannot.
        cluster.decommission_node("n1", 9_000, 110).unwrap();
        assert!(cluster.decommission_node("never", 9_000, 110).is_err());
        let mut batch = Batch::default();
        cluster.take_changes(&mut batch);
        store.commit(&batch).unwrap();

        let mut restored = tracked_cluster();
        restored.restore(stored(&store), 200).unwrap();
        register(&mut restored, 210);
        let node = restored.node("n1").unwrap();
        assert_eq!(node.state(), NodeState::Decommissioned);
        assert_eq!(node.free(), Resources::ZERO);
        assert_eq!(
            restored
                .decommission_of("n1")
                .map(|d| (d.since_ms, d.deadline_ms)),
            Some((110, 9_000))
        );
        assert!(restored.recommission_node("n1").unwrap());
        assert_eq!(restored.node("n1").unwrap().state(), NodeState::Running);
    }

    #[test]
    fn what_the_store_keeps_restores_the_same_cluster() {
        let mut cluster = tracked_cluster();
        let store = Store::in_memory();
        cluster
            .add_node_labels(&[("gpu".into(), true), ("spare".into(), false)])
            .unwrap();
        cluster
            .register_agent(
                "n1",
                Resources::new(8192, 8, 1),
                "agents",
                AgentInfo {
                    isolation: "cgroup v1".into(),
                    http_address: "http://n1:8042".into(),
                    logs_secret: "s3cret".into(),
                    rack: "/dc1/rack7".into(),
                    attributes: [("gpu-model".to_string(), "a100".to_string())].into(),
                    label: "gpu".into(),
                    nm_address: String::new(),
                },
                Some(&[]),
                5,
            )
            .unwrap();
        // An administrator's label wins over the agent's, also at restore:
        // non-exclusive, its idle room runs the asks below.
        cluster
            .replace_node_labels(&[("n1".into(), Some("spare".into()))])
            .unwrap();
        let mut ask = AskSpec::sized(4, 1024, 1, 0, 60_000);
        ask.max_attempts = 3;
        ask.command = Some(ContainerCommand::Shell("sleep 60".into()));
        ask.env.insert("A".into(), "1".into());
        let running = submit(
            &mut cluster,
            "alice",
            vec![ask, AskSpec::sized(2, 2048, 2, 1, 1000)],
        );
        let done = submit(
            &mut cluster,
            "bob",
            vec![AskSpec::sized(1, 512, 1, 0, 1000)],
        );
        let _pending = submit(
            &mut cluster,
            "carol",
            vec![AskSpec::sized(100, 1024, 1, 0, 1000)],
        );
        let allocated = cluster
            .allocate(
                &[
                    Placement {
                        app: running,
                        ask: 0,
                        node: 0,
                        count: 3,
                    },
                    Placement {
                        app: running,
                        ask: 1,
                        node: 0,
                        count: 1,
                    },
                    Placement {
                        app: done,
                        ask: 0,
                        node: 0,
                        count: 1,
                    },
                ],
                20,
            )
            .unwrap();
        // One fails (and is asked for again), one succeeds (its app ends).
        let failed = &allocated[0].container.id;
        cluster.end_container(
            failed,
            30,
            EndCause::Failed {
                exit_status: 3,
                diagnostics: "boom".into(),
            },
        );
        cluster.end_container(&allocated[4].container.id, 31, EndCause::Succeeded);
        cluster.add_app_credits(&cluster.apps()[running].id.clone(), 12.5);
        let mut batch = Batch::default();
        cluster.take_changes(&mut batch);
        store.commit(&batch).unwrap();

        let mut restored = Cluster::new(
            7,
            QueueTree::from_properties(&QueueProperties::defaults()).unwrap(),
        );
        let outcome = restored.restore(stored(&store), 40).unwrap();
        assert_eq!(outcome.apps, 3);
        assert_eq!(outcome.running, 3);
        assert_eq!(outcome.nodes, ["n1"]);
        assert!(outcome.ended.is_empty());
        assert_eq!(picture(&restored), picture(&cluster));

        // A later change is written the same way, and a second restore of
        // the newer store agrees with the cluster again.
        restored.track_changes();
        restored.set_epoch(4);
        let next = restored
            .allocate(
                &[Placement {
                    app: running,
                    ask: 0,
                    node: 0,
                    count: 1,
                }],
                50,
            )
            .unwrap();
        assert!(
            next[0].container.id.starts_with("container_e4_7_"),
            "{}",
            next[0].container.id
        );
        let mut batch = Batch::default();
        restored.take_changes(&mut batch);
        store.commit(&batch).unwrap();
        let mut again = Cluster::new(
            9,
            QueueTree::from_properties(&QueueProperties::defaults()).unwrap(),
        );
        again.restore(stored(&store), 60).unwrap();
        assert_eq!(picture(&again), picture(&restored));
        // Lifetimes come back (in the picture), and end when they did.
        let active = again.active_apps().count();
        assert!(active > 0);
        assert!(again.apps_past_lifetime(3_600_009).is_empty());
        assert_eq!(again.apps_past_lifetime(3_600_010).len(), active);
    }

    #[test]
    fn a_running_container_whose_node_is_gone_is_lost_at_restore() {
        let mut cluster = tracked_cluster();
        let store = Store::in_memory();
        cluster
            .register_node(
                "sim-1",
                NodeKind::Simulated,
                Resources::new(4096, 4, 0),
                "weft",
                0,
            )
            .unwrap();
        let app = submit(
            &mut cluster,
            "alice",
            vec![AskSpec::sized(1, 1024, 1, 0, 60_000)],
        );
        cluster
            .allocate(
                &[Placement {
                    app,
                    ask: 0,
                    node: 0,
                    count: 1,
                }],
                1,
            )
            .unwrap();
        let mut batch = Batch::default();
        cluster.take_changes(&mut batch);
        store.commit(&batch).unwrap();
        // Restarted without that simulated node.
        let mut restored = Cluster::new(
            8,
            QueueTree::from_properties(&QueueProperties::defaults()).unwrap(),
        );
        let outcome = restored.restore(stored(&store), 100).unwrap();
        assert_eq!(outcome.ended.len(), 1);
        let app = &restored.apps()[app];
        assert_eq!(app.lost_containers, 1);
        assert_eq!(app.pending_containers(), 1, "asked for again");
        assert_eq!(app.containers[0].exit_status, Some(-100));
    }
}
