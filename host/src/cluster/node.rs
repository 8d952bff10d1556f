//! A node: where containers run, with a capacity and what is allocated on
//! it, and whether it takes new ones (its agent's health checks, an
//! administrator's decommission).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::model::EndCause;
use super::{ClusterError, Container};
use crate::protocol::node::NodeHealth;
use crate::resources::Resources;

/// How a node learns of its containers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum NodeKind {
    /// Registered over HTTP; reports finished containers in its heartbeats.
    Remote,
    /// Built into `weft serve --sim-nodes`; its containers run for the
    /// duration their app declared.
    Simulated,
}

/// A node's state, as YARN names it (its `NodeState`). Weft's registered
/// nodes are in one of the first four; nodes lost by silence are LOST
/// until they register again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeState {
    /// Takes containers.
    Running,
    /// Its agent's health checks fail: no new containers.
    Unhealthy,
    /// An administrator's decommission waits for its containers.
    Decommissioning,
    /// Decommissioned, and nothing runs on it.
    Decommissioned,
    /// Silent past the expiry interval (kept apart, as [`super::LostNode`]).
    Lost,
}

impl NodeState {
    /// YARN's name for it (REST, the CLI, diagnostics).
    pub const fn as_str(self) -> &'static str {
        match self {
            NodeState::Running => "RUNNING",
            NodeState::Unhealthy => "UNHEALTHY",
            NodeState::Decommissioning => "DECOMMISSIONING",
            NodeState::Decommissioned => "DECOMMISSIONED",
            NodeState::Lost => "LOST",
        }
    }
}

/// How many nodes are in each state (the cluster's metrics).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeCounts {
    /// Registered nodes, in every state.
    pub registered: usize,
    /// RUNNING (YARN's active nodes).
    pub running: usize,
    /// UNHEALTHY.
    pub unhealthy: usize,
    /// DECOMMISSIONING.
    pub decommissioning: usize,
    /// DECOMMISSIONED.
    pub decommissioned: usize,
    /// LOST lately (up to [`super::LOST_NODES_KEPT`]).
    pub lost: usize,
}

/// A registered node (YARN's RMNode): what it offers, what its containers
/// hold, and for an agent's node where the heartbeat protocol stands.
#[derive(Debug, Clone, Serialize)]
pub struct Node {
    /// The id its agent registers it under, or a simulated node's name.
    pub id: String,
    /// Whether an agent runs its containers or they are simulated.
    pub kind: NodeKind,
    /// What it offers in all.
    pub capacity: Resources,
    /// What its running containers hold, together.
    pub allocated: Resources,
    /// Ids of the containers running here.
    pub containers: BTreeSet<String>,
    /// When it last registered or heartbeated, in ms since the epoch: a
    /// remote node silent past the expiry interval is lost.
    pub last_heartbeat_ms: u64,
    /// Restored from the store and not yet heard from by this server (its
    /// `last_heartbeat_ms` is the restore's, so that it has the expiry
    /// interval to come back): it offers asks waiting out a locality
    /// delay nothing until its agent registers.
    #[serde(skip)]
    pub unheard_since_restore: bool,
    /// Who registered it: only they may heartbeat for it or register it again.
    pub owner: String,
    /// What its agent's health checks found wrong (YARN's health report),
    /// or none while it is healthy: an unhealthy node is offered to no
    /// new container ([`Node::free`]), and what it runs goes on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unhealthy: Option<String>,
    /// An administrator's decommission of it (YARN's graceful
    /// decommission), under way or done: it is offered to no new
    /// container, and what it runs goes on until the deadline. A copy of
    /// the cluster's entry for its id (`Cluster::decommissions`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decommission: Option<Decommission>,
    /// What a remote node's agent says of itself (isolation, address).
    pub agent: AgentInfo,
    /// The node label (partition) it is in: an administrator's, else its
    /// agent's; "" for the default partition (`labels.rs`).
    pub partition: String,
    /// Its containers the agent has reported running; the others are
    /// ordered launched in every heartbeat answer until it does.
    #[serde(skip)]
    pub launched: BTreeSet<String>,
    /// Its opportunistic containers the agent reported holding in its
    /// queue (not yet started): their launch orders are not repeated.
    #[serde(skip)]
    pub queued: BTreeSet<String>,
    /// Containers the cluster ended that the agent may still run, with the
    /// exit status to report: ordered killed until the agent stops
    /// reporting them running.
    #[serde(skip)]
    pub to_kill: BTreeMap<String, i32>,
    /// The heartbeat protocol's number of the last answer, and that answer,
    /// sent again if the agent says it did not get it.
    #[serde(skip)]
    pub response_id: u64,
    /// The answer numbered `response_id`, kept for an agent that numbers
    /// its heartbeats; none before the first such answer.
    #[serde(skip)]
    pub last_answer: Option<std::sync::Arc<crate::protocol::node::NodeOrders>>,
}

/// A node's decommission: since when, and until when its containers may
/// run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Decommission {
    /// When it began, in ms since the epoch.
    pub since_ms: u64,
    /// When what still runs on it is killed (ABORTED, asked for again).
    pub deadline_ms: u64,
    /// Made by a refresh of the nodes from the exclude file
    /// (`yarn.resourcemanager.nodes.exclude-path`): a later refresh ends it
    /// once the file no longer lists the node. One made through the API
    /// stands until a recommission.
    #[serde(default)]
    pub listed: bool,
}

/// What a refresh of the nodes from the exclude file did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExcludedRefresh {
    /// Node ids decommissioned now.
    pub decommissioned: Vec<String>,
    /// Node ids whose earlier refresh's decommission ended.
    pub recommissioned: Vec<String>,
    /// Names of the file that matched no node (a typo, a node not yet
    /// registered).
    pub unmatched: Vec<String>,
    /// Opportunistic containers taken back from the decommissioned nodes'
    /// queues (ABORTED, asked for again).
    pub taken_back: Vec<Container>,
}

/// What an agent tells of itself at registration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AgentInfo {
    /// How its containers are isolated, e.g. "cgroup v1 (memory, cpu)" or
    /// "process groups only: …".
    #[serde(skip_serializing_if = "String::is_empty")]
    pub isolation: String,
    /// Where it serves container logs (`http://host:port`), if it does.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub http_address: String,
    /// The secret the server shows to fetch its logs; never shown.
    #[serde(skip)]
    pub logs_secret: String,
    /// Its rack, as registered; empty for YARN's default one (see
    /// [`Node::rack`]).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub rack: String,
    /// Its attributes (YARN's node attributes), as registered.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: BTreeMap<String, String>,
    /// The node label it named (`weft agent --labels`); empty for none.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub label: String,
    /// Where it serves YARN's ContainerManagementProtocol (`host:port`,
    /// YARN's NodeId); empty when it does not.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub nm_address: String,
}

impl Node {
    /// Its agent's web address as YARN's nodeHttpAddress: `host:port`, no
    /// scheme (clients put one before it); empty when it serves none.
    pub fn http_host_port(&self) -> String {
        let address = &self.agent.http_address;
        address
            .split_once("://")
            .map_or(address.as_str(), |(_, rest)| rest)
            .trim_end_matches('/')
            .to_string()
    }

    /// Its host as REST's `nodeHostName` shows it: its agent's web
    /// address's, else its id's, without scheme, path or port.
    pub fn host_name(&self) -> &str {
        let text = if self.agent.http_address.is_empty() {
            &self.id
        } else {
            &self.agent.http_address
        };
        let authority = text.rsplit("://").next().unwrap_or(text);
        let authority = authority.split('/').next().unwrap_or(authority);
        authority
            .rsplit_once(':')
            .map_or(authority, |(host, _)| host)
    }

    /// The names an exclude file may list it by: its id, its NodeId's
    /// host and its web address's host.
    pub fn names(&self) -> [&str; 3] {
        [self.id.as_str(), self.yarn_host(), self.host_name()]
    }

    /// The host YARN's masters name it by: its NodeId's (the agent's
    /// ContainerManagementProtocol address), else its id's, without the
    /// port.
    pub fn yarn_host(&self) -> &str {
        let named = if self.agent.nm_address.is_empty() {
            &self.id
        } else {
            &self.agent.nm_address
        };
        named
            .rsplit_once(':')
            .map_or(named.as_str(), |(host, _)| host)
    }

    /// Its YARN node state: DECOMMISSIONING while an administrator's
    /// decommission waits for its containers, DECOMMISSIONED once none
    /// runs; else UNHEALTHY while its agent's health checks fail; else
    /// RUNNING (nodes lost lately are kept apart, as LOST).
    pub fn state(&self) -> NodeState {
        match (&self.decommission, &self.unhealthy) {
            (Some(_), _) if self.containers.is_empty() => NodeState::Decommissioned,
            (Some(_), _) => NodeState::Decommissioning,
            (None, Some(_)) => NodeState::Unhealthy,
            (None, None) => NodeState::Running,
        }
    }

    /// Whether it takes new containers: not while it is unhealthy or
    /// decommissioned.
    pub fn takes_containers(&self) -> bool {
        self.unhealthy.is_none() && self.decommission.is_none()
    }

    /// Its rack: the one its agent registered, else YARN's `/default-rack`.
    pub fn rack(&self) -> &str {
        if self.agent.rack.is_empty() {
            crate::protocol::node::DEFAULT_RACK
        } else {
            &self.agent.rack
        }
    }

    /// A node of `kind` offering `capacity`, registered by `owner` at `now`
    /// (ms since the epoch, its first heartbeat), with nothing allocated.
    pub fn new(id: String, kind: NodeKind, capacity: Resources, owner: String, now: u64) -> Node {
        Node {
            id,
            kind,
            capacity,
            allocated: Resources::ZERO,
            containers: BTreeSet::new(),
            last_heartbeat_ms: now,
            unheard_since_restore: false,
            owner,
            unhealthy: None,
            decommission: None,
            agent: AgentInfo::default(),
            partition: String::new(),
            launched: BTreeSet::new(),
            queued: BTreeSet::new(),
            to_kill: BTreeMap::new(),
            response_id: 0,
            last_answer: None,
        }
    }

    /// What it counts for in the cluster's and its partition's capacity,
    /// and in the scheduling policy's view of it: its capacity; while it
    /// takes no containers, only what its containers hold (its idle room
    /// is no one's, and what runs there is still its queues' use, as YARN
    /// shrinks a decommissioning node to what it has allocated).
    pub fn usable_capacity(&self) -> Resources {
        if self.takes_containers() {
            self.capacity
        } else {
            self.capacity.min(&self.allocated)
        }
    }

    /// What is left to allocate: its capacity less what is allocated
    /// (nothing while opportunistic containers wait in its queue beyond
    /// it, or while it takes no containers).
    pub fn free(&self) -> Resources {
        if !self.takes_containers() {
            return Resources::ZERO;
        }
        self.capacity.saturating_sub(&self.allocated)
    }

    /// What opportunistic containers may still be queued here, given that
    /// `waiting` of them are (placed, not yet running) and `max_queue`
    /// may be: nothing at the most, else its capacity less what is
    /// allocated beyond it — so all that is placed on it is at most twice
    /// its capacity, and no more than a capacity's worth ever waits.
    pub fn queue_room(&self, waiting: usize, max_queue: usize) -> Resources {
        if self.kind != NodeKind::Remote || waiting >= max_queue || !self.takes_containers() {
            return Resources::ZERO;
        }
        let beyond = self.allocated.saturating_sub(&self.capacity);
        self.capacity.saturating_sub(&beyond)
    }
}

impl super::Cluster {
    /// Takes what node `id`'s agent says of its health (none: healthy, as
    /// an agent that does not check); says so in the log when it changes.
    /// Whether it became healthy again (its room is offered once more).
    pub fn set_node_health(&mut self, id: &str, health: Option<&NodeHealth>) -> bool {
        let Some(node) = self.nodes.get_mut(id) else {
            return false;
        };
        let unhealthy = health.filter(|health| !health.healthy).map(|health| {
            if health.report.is_empty() {
                "unhealthy (its agent gave no report)".to_string()
            } else {
                health.report.clone()
            }
        });
        if node.unhealthy == unhealthy {
            return false;
        }
        let was_unhealthy = node.unhealthy.is_some();
        match &unhealthy {
            Some(report) => {
                tracing::warn!(node = %id, %report, "node unhealthy: it gets no new containers until its agent reports it healthy")
            }
            None => tracing::info!(node = %id, "node healthy again"),
        }
        let healthy_again = was_unhealthy && unhealthy.is_none();
        node.unhealthy = unhealthy;
        // Kept, so that a restart does not offer its room before its agent
        // is heard from again.
        super::durable::node_changed(&mut self.changes, id);
        self.tell_masters_node_changed(id);
        healthy_again
    }

    /// Decommissions node `id` (YARN's graceful decommission), registered
    /// or lost (an id someone owns): it takes no new containers from now,
    /// and what it runs at `deadline_ms` is killed then; what waits in its
    /// agent's queue is taken back now (returned, charged nothing as it
    /// never ran). Again on a node being decommissioned, the deadline is
    /// the new one.
    pub fn decommission_node(
        &mut self,
        id: &str,
        deadline_ms: u64,
        now: u64,
    ) -> Result<Vec<Container>, ClusterError> {
        self.decommission(id, deadline_ms, false, now)
    }

    /// Decommissions node `id` at once as the exclude file asks (see
    /// [`Decommission::listed`]).
    pub fn decommission_listed(
        &mut self,
        id: &str,
        now: u64,
    ) -> Result<Vec<Container>, ClusterError> {
        self.decommission(id, now, true, now)
    }

    /// Decommissions node `id` until `deadline_ms`, `listed` if the exclude
    /// file asked (see [`Decommission::listed`]).
    fn decommission(
        &mut self,
        id: &str,
        deadline_ms: u64,
        listed: bool,
        now: u64,
    ) -> Result<Vec<Container>, ClusterError> {
        if !self.nodes.contains_key(id) && !self.node_owners.contains_key(id) {
            return Err(ClusterError::UnknownNode(id.into()));
        }
        let decommission = Decommission {
            since_ms: self.decommissions.get(id).map_or(now, |d| d.since_ms),
            deadline_ms,
            listed,
        };
        self.decommissions.insert(id.to_string(), decommission);
        super::durable::decommissions_changed(&mut self.changes);
        let Some(node) = self.nodes.get_mut(id) else {
            return Ok(Vec::new());
        };
        node.decommission = Some(decommission);
        // Opportunistic containers waiting in its agent's queue would start
        // there: taken back now (ABORTED, asked for again elsewhere).
        let queued: Vec<String> = node.queued.iter().cloned().collect();
        // Told again with a new deadline (its seconds left change).
        self.tell_masters_node_changed(id);
        let taken_back = queued
            .iter()
            .filter_map(|container| self.end_container(container, now, EndCause::Decommissioned))
            .collect();
        Ok(taken_back)
    }

    /// Ends node `id`'s decommission (registered or lost): it takes
    /// containers again. Whether one was under way or done.
    pub fn recommission_node(&mut self, id: &str) -> Result<bool, ClusterError> {
        if !self.nodes.contains_key(id) && !self.node_owners.contains_key(id) {
            return Err(ClusterError::UnknownNode(id.into()));
        }
        let was = self.decommissions.remove(id).is_some();
        if !was {
            return Ok(false);
        }
        super::durable::decommissions_changed(&mut self.changes);
        if let Some(node) = self.nodes.get_mut(id) {
            node.decommission = None;
            self.tell_masters_node_changed(id);
        }
        Ok(true)
    }

    /// YARN's refreshNodes against the exclude file's `excluded` hosts:
    /// every node named there — by its id, the host of its YARN NodeId or
    /// the host of its web address — and not being decommissioned already
    /// is decommissioned until `deadline_ms`; every decommission an earlier
    /// refresh made whose node the file no longer names ends, if the node's
    /// hosts are known now (registered and heard from since a restart, or
    /// lost lately: a restored node's agent has yet to say them).
    /// Decommissions made through the API are left as they are. What it
    /// did, the names that matched no node, and the containers taken back
    /// from agents' queues.
    pub fn refresh_excluded(
        &mut self,
        excluded: &BTreeSet<String>,
        deadline_ms: u64,
        now: u64,
    ) -> ExcludedRefresh {
        let mut matched: BTreeSet<&str> = BTreeSet::new();
        let mut named = |node: &Node| {
            let hits: Vec<&str> = node
                .names()
                .iter()
                .filter_map(|name| excluded.get(*name).map(String::as_str))
                .collect();
            matched.extend(hits.iter().copied());
            !hits.is_empty()
        };
        let mut listed: BTreeSet<String> = BTreeSet::new();
        // Nodes whose hosts are known now: a decommission the file no
        // longer names may end only for them.
        let mut known: BTreeSet<String> = BTreeSet::new();
        for node in self.nodes.values() {
            if named(node) {
                listed.insert(node.id.clone());
            }
            if node.kind == NodeKind::Simulated || !node.unheard_since_restore {
                known.insert(node.id.clone());
            }
        }
        for lost in self.lost_nodes.values() {
            if named(&lost.node) {
                listed.insert(lost.node.id.clone());
            }
            known.insert(lost.node.id.clone());
        }
        for id in self.node_owners.keys() {
            if let Some(name) = excluded.get(id.as_str()) {
                matched.insert(name);
                listed.insert(id.clone());
            }
        }
        let mut refresh = ExcludedRefresh {
            unmatched: excluded
                .iter()
                .filter(|name| !matched.contains(name.as_str()))
                .cloned()
                .collect(),
            ..ExcludedRefresh::default()
        };
        for id in &listed {
            if self.decommissions.contains_key(id) {
                continue;
            }
            if let Ok(taken) = self.decommission(id, deadline_ms, true, now) {
                refresh.taken_back.extend(taken);
                refresh.decommissioned.push(id.clone());
            }
        }
        let unlisted: Vec<String> = self
            .decommissions
            .iter()
            .filter(|(id, decommission)| {
                decommission.listed && !listed.contains(*id) && known.contains(*id)
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in unlisted {
            if self.recommission_node(&id).unwrap_or(false) {
                refresh.recommissioned.push(id);
            }
        }
        refresh
    }

    /// The decommission of node id `id`, registered or not.
    pub fn decommission_of(&self, id: &str) -> Option<Decommission> {
        self.decommissions.get(id).copied()
    }

    /// Kills what still runs on nodes whose decommission's deadline is
    /// past at `now` (ABORTED; their apps ask for them again); returns
    /// them, to be charged.
    pub fn end_decommissions(&mut self, now: u64) -> Vec<Container> {
        // The decommissions, not every node: this runs every round.
        let due: Vec<String> = self
            .decommissions
            .iter()
            .filter(|(_, decommission)| decommission.deadline_ms <= now)
            .filter_map(|(id, _)| self.nodes.get(id))
            .flat_map(|node| node.containers.iter().cloned())
            .collect();
        let killed: Vec<Container> = due
            .iter()
            .filter_map(|id| self.end_container(id, now, EndCause::Decommissioned))
            .collect();
        for container in &killed {
            tracing::warn!(container = %container.id, app = %container.app, node = %container.node, "container killed: its node's decommission ran out of time (ABORTED, asked for again)");
        }
        killed
    }

    /// Gives node `id` (if there is one) `rack` ("" YARN's default) and
    /// `attributes`, as its agent's registration does: for simulated nodes,
    /// which have no agent. Checked by the caller.
    pub fn describe_node(&mut self, id: &str, rack: String, attributes: BTreeMap<String, String>) {
        if let Some(node) = self.nodes.get_mut(id) {
            node.agent.rack = rack;
            node.agent.attributes = attributes;
        }
    }
}
