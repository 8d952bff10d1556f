//! What callers ask of the resource manager — submit an app, register a
//! node, heartbeat — checked (bounds first, then the caller's rights) and
//! applied in one place, so the API, `simulate` and the tests drive the
//! same code. A refusal changes nothing.

use serde::{Deserialize, Serialize};

use super::ResourceManager;
use super::reservations::ReservationError;
use crate::cluster::{App, AppState, ClusterError, Container, NodeKind, Resources, SubmitApp};
use crate::limits;
use crate::policy::PolicyKind;
use crate::reservation::definition::{
    ReservationDeleteRequest, ReservationSubmissionRequest, ReservationUpdateRequest,
};
use crate::reservation::system::Accepted;
use crate::security::Caller;

/// Why a request was refused, by the HTTP status it maps to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
}

impl RequestError {
    pub fn status(&self) -> u16 {
        match self {
            RequestError::BadRequest(_) => 400,
            RequestError::Forbidden(_) => 403,
            RequestError::NotFound(_) => 404,
            RequestError::Conflict(_) => 409,
        }
    }
}

impl From<ClusterError> for RequestError {
    fn from(error: ClusterError) -> RequestError {
        match error {
            ClusterError::UnknownNode(_) => RequestError::NotFound(error.to_string()),
            ClusterError::QueueFull { .. } | ClusterError::UserFull { .. } => {
                RequestError::Conflict(error.to_string())
            }
            other => RequestError::BadRequest(other.to_string()),
        }
    }
}

impl From<limits::OutOfBounds> for RequestError {
    fn from(error: limits::OutOfBounds) -> RequestError {
        RequestError::BadRequest(error.to_string())
    }
}

/// A node's registration: who it is and what it offers.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterNode {
    /// Unique per node, e.g. `host:port` as YARN's NodeId; at most 256 bytes.
    #[schema(min_length = 1, max_length = 256, pattern = r"\S")]
    pub node_id: String,
    /// 1 MB to 1 PiB.
    #[schema(minimum = 1, maximum = 1_073_741_824_u64)]
    pub memory_mb: u64,
    /// 1 to 4096.
    #[schema(minimum = 1, maximum = 4096)]
    pub vcores: u32,
    /// 0 to 1024.
    #[serde(default)]
    #[schema(minimum = 0, maximum = 1024)]
    pub gpus: u32,
}

/// A node's heartbeat.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Heartbeat {
    /// Containers that ended on the node since its last heartbeat (at most
    /// 100,000); ids not running on it are ignored.
    #[serde(default)]
    #[schema(max_items = 100_000)]
    pub finished: Vec<String>,
}

/// What a heartbeat gets back: how many finished containers were taken,
/// and the containers allocated to the node since its last heartbeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatAnswer {
    pub finished_accepted: usize,
    pub allocations: Vec<Container>,
}

impl ResourceManager {
    /// Accepts an app into its leaf queue for `caller`: in bounds, allowed by
    /// the queue's ACLs, on behalf of another user only for an
    /// administrator, charged only to a project the app's user belongs to
    /// (with a projects file), and in its reservation's plan if it names
    /// one. `submitter` is the client's address, for the log.
    pub fn submit_app(
        &mut self,
        caller: &Caller,
        request: SubmitApp,
        submitter: &str,
    ) -> Result<App, RequestError> {
        request.check()?;
        let security = self.security.clone();
        if let Some(leaf) = self.cluster.queues().leaf(&request.queue) {
            security
                .check_submit(caller, self.cluster.queues(), leaf)
                .map_err(RequestError::Forbidden)?;
        }
        let user = if caller.user == request.user {
            caller.clone()
        } else {
            security
                .check_admin(caller, &format!("submit on behalf of {}", request.user))
                .map_err(RequestError::Forbidden)?;
            security.caller(&request.user)
        };
        security
            .check_project(&user, &request.project)
            .map_err(RequestError::Forbidden)?;
        self.check_app_reservation(&request)
            .map_err(RequestError::BadRequest)?;
        // A reservation's capacity is its owner's: only their apps (or an
        // administrator's submission) run in it.
        if let Some(id) = &request.reservation_id
            && let Some(owner) = self.reservations.owner(id)
            && owner != user.user
            && !security.is_admin(caller)
        {
            return Err(RequestError::Forbidden(format!(
                "reservation {id} belongs to {owner}; only their apps run in it"
            )));
        }
        let now = self.now();
        let app = self.cluster.submit(request, submitter, now)?.clone();
        tracing::info!(app = %app.id, queue = %app.queue, user = %app.user, project = %app.project, caller = %caller.user, submitter, "application submitted and accepted");
        Ok(app)
    }

    /// Registers a node for `caller`, who must be in the node ACL. A node id
    /// belongs to whoever registered it first: only they may register it
    /// again (a restart: its containers are lost, charged up to now and
    /// asked for again).
    pub fn register_node(
        &mut self,
        caller: &Caller,
        request: &RegisterNode,
    ) -> Result<(), RequestError> {
        self.security
            .check_node(caller, "register a node")
            .map_err(RequestError::Forbidden)?;
        limits::name("node_id", &request.node_id)?;
        if let Some(node) = self.cluster.node(&request.node_id) {
            check_owner(caller, node, "register it again")?;
        }
        let capacity = Resources::new(request.memory_mb, request.vcores, request.gpus);
        let now = self.now();
        let lost = self.cluster.register_node(
            &request.node_id,
            NodeKind::Remote,
            capacity,
            &caller.user,
            now,
        )?;
        self.containers_lost(&lost, now);
        tracing::info!(node = %request.node_id, %capacity, owner = %caller.user, lost = lost.len(), "node registered");
        Ok(())
    }

    /// A heartbeat from the owner of node `id`.
    pub fn node_heartbeat(
        &mut self,
        caller: &Caller,
        id: &str,
        heartbeat: &Heartbeat,
    ) -> Result<HeartbeatAnswer, RequestError> {
        self.security
            .check_node(caller, "send a node heartbeat")
            .map_err(RequestError::Forbidden)?;
        limits::at_most(
            "finished",
            heartbeat.finished.len(),
            limits::MAX_FINISHED_PER_HEARTBEAT,
        )?;
        let node = self
            .cluster
            .node(id)
            .ok_or_else(|| ClusterError::UnknownNode(id.into()))?;
        check_owner(caller, node, "send its heartbeats")?;
        let now = self.now();
        let (ended, allocations) = self.cluster.heartbeat(id, &heartbeat.finished, now)?;
        self.containers_finished(&ended, now);
        Ok(HeartbeatAnswer {
            finished_accepted: ended.len(),
            allocations,
        })
    }
}

impl ResourceManager {
    /// Kills app `id` for `caller` (its user, a queue or cluster
    /// administrator): what is pending is dropped, what runs ends now and is
    /// charged up to now. An app already ended stays as it is. Returns its
    /// state.
    pub fn kill_app(&mut self, caller: &Caller, id: &str) -> Result<AppState, RequestError> {
        let index = self
            .cluster
            .app_index(id)
            .ok_or_else(|| RequestError::NotFound(format!("application {id} not found")))?;
        let app = &self.cluster.apps()[index];
        // Killing an app that has ended changes nothing (and its queue may
        // be gone since: only active apps follow a refresh of the queues).
        if matches!(app.state, AppState::Finished | AppState::Killed) {
            return Ok(app.state);
        }
        self.security
            .check_kill(caller, &app.user, self.cluster.queues(), app.queue_index)
            .map_err(RequestError::Forbidden)?;
        let now = self.now();
        let cause = format!("killed by {}", caller.user);
        let ended = self.cluster.kill_app(index, &cause, now);
        self.containers_finished(&ended, now);
        // With a retention of 0 the killed app is already let go.
        Ok(self
            .cluster
            .apps()
            .get(index)
            .map_or(AppState::Killed, |app| app.state))
    }
}

/// Only the caller that registered a node acts for it; simulated nodes
/// belong to no caller.
fn check_owner(
    caller: &Caller,
    node: &crate::cluster::Node,
    action: &str,
) -> Result<(), RequestError> {
    if node.kind == NodeKind::Simulated {
        return Err(RequestError::Conflict(format!(
            "node {} is a simulated node of this server; no caller may {action}",
            node.id
        )));
    }
    if node.owner != caller.user {
        return Err(RequestError::Forbidden(format!(
            "node {} was registered by {}; only they may {action}",
            node.id, node.owner
        )));
    }
    Ok(())
}

/// The reservation API's use cases: YARN's submit, update and delete, with
/// the caller's right to its queue and ownership of what it changes.
impl ResourceManager {
    /// Submitting a reservation takes the right to submit to its queue.
    pub fn submit_reservation(
        &mut self,
        caller: &Caller,
        request: &ReservationSubmissionRequest,
    ) -> Result<Accepted, ReservationRequestError> {
        if let Some(leaf) = self.cluster.queues().leaf(&request.queue) {
            self.security
                .check_submit(caller, self.cluster.queues(), leaf)
                .map_err(RequestError::Forbidden)?;
        }
        self.reservations.refresh_capacities(&self.cluster);
        let now = self.now();
        let sharing = self.policies.slot(PolicyKind::Sharing);
        let accepted = self
            .reservations
            .submit(sharing, request, &caller.user, now)?;
        tracing::info!(reservation = %accepted.reservation_id, queue = %accepted.queue, user = %caller.user, "reservation accepted");
        Ok(accepted)
    }

    /// Only the reservation's owner or an administrator may update it.
    pub fn update_reservation(
        &mut self,
        caller: &Caller,
        request: &ReservationUpdateRequest,
    ) -> Result<Accepted, ReservationRequestError> {
        self.reservations.refresh_capacities(&self.cluster);
        let now = self.now();
        let owner = self.reservation_caller(caller);
        let sharing = self.policies.slot(PolicyKind::Sharing);
        let accepted = self.reservations.update(sharing, request, &owner, now)?;
        tracing::info!(reservation = %accepted.reservation_id, user = %caller.user, "reservation updated");
        Ok(accepted)
    }

    /// Only the reservation's owner or an administrator may delete it.
    pub fn delete_reservation(
        &mut self,
        caller: &Caller,
        request: &ReservationDeleteRequest,
    ) -> Result<(), ReservationRequestError> {
        let owner = self.reservation_caller(caller);
        let removed = self.reservations.delete(request, &owner)?;
        tracing::info!(reservation = %removed.id, user = %caller.user, "reservation deleted");
        Ok(())
    }

    fn reservation_caller<'a>(&self, caller: &'a Caller) -> crate::reservation::Caller<'a> {
        crate::reservation::Caller {
            user: &caller.user,
            is_admin: self.security.is_admin(caller),
        }
    }
}

/// A reservation request refused: by the caller's rights, or by the
/// reservation system (with its own status).
#[derive(Debug, thiserror::Error)]
pub enum ReservationRequestError {
    #[error(transparent)]
    Request(#[from] RequestError),
    #[error(transparent)]
    Reservation(#[from] ReservationError),
}

impl ReservationRequestError {
    pub fn status(&self) -> u16 {
        match self {
            ReservationRequestError::Request(error) => error.status(),
            ReservationRequestError::Reservation(error) => error.status(),
        }
    }
}
