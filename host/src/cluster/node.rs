//! A node: where containers run, with a capacity and what is allocated on it.

use std::collections::BTreeSet;

use serde::Serialize;

use super::Resources;

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
    /// Containers allocated since the last heartbeat, to hand over at the next.
    #[serde(skip)]
    pub undelivered: Vec<String>,
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
            undelivered: Vec::new(),
        }
    }

    pub fn free(&self) -> Resources {
        self.capacity.saturating_sub(&self.allocated)
    }
}
