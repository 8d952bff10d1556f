//! A node: where containers run, with a capacity and what is allocated on it.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

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

#[derive(Debug, Clone, Serialize)]
pub struct Node {
    pub id: String,
    pub kind: NodeKind,
    pub capacity: Resources,
    pub allocated: Resources,
    /// Ids of the containers running here.
    pub containers: BTreeSet<String>,
    pub last_heartbeat_ms: u64,
    /// Who registered it: only they may heartbeat for it or register it again.
    pub owner: String,
    /// What a remote node's agent says of itself (isolation, address).
    pub agent: AgentInfo,
    /// Its containers the agent has reported running; the others are
    /// ordered launched in every heartbeat answer until it does.
    #[serde(skip)]
    pub launched: BTreeSet<String>,
    /// Containers the cluster ended that the agent may still run, with the
    /// exit status to report: ordered killed until the agent stops
    /// reporting them running.
    #[serde(skip)]
    pub to_kill: BTreeMap<String, i32>,
    /// The heartbeat protocol's number of the last answer, and that answer,
    /// sent again if the agent says it did not get it.
    #[serde(skip)]
    pub response_id: u64,
    #[serde(skip)]
    pub last_answer: Option<crate::protocol::node::NodeOrders>,
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
}

impl Node {
    pub fn new(id: String, kind: NodeKind, capacity: Resources, owner: String, now: u64) -> Node {
        Node {
            id,
            kind,
            capacity,
            allocated: Resources::ZERO,
            containers: BTreeSet::new(),
            last_heartbeat_ms: now,
            owner,
            agent: AgentInfo::default(),
            launched: BTreeSet::new(),
            to_kill: BTreeMap::new(),
            response_id: 0,
            last_answer: None,
        }
    }

    pub fn free(&self) -> Resources {
        self.capacity.saturating_sub(&self.allocated)
    }
}
