//! What callers ask of the resource manager — submit an app, register a
//! node, heartbeat — checked (bounds first, then the caller's rights) and
//! applied in one place, so the API, `simulate` and the tests drive the
//! same code. A refusal changes nothing.

use super::ResourceManager;
use crate::cluster::{
    AgentInfo, AgentReport, App, AppState, ClusterError, LifetimeRefusal, NodeKind, NodeState,
    SubmitApp, TakenReport,
};
use crate::limits;
use crate::protocol::node::{ContainerEnd, Heartbeat, NodeHealth, RegisterNode, exit_status};
use crate::protocol::node::{KillOrder, NodeOrders};
use crate::refusal::Refusal;
use crate::reservation::definition::{
    ReservationDeleteRequest, ReservationSubmissionRequest, ReservationUpdateRequest,
};
use crate::reservation::service::ReservationError;
use crate::reservation::system::Accepted;
use crate::resources::Resources;
use crate::security::Caller;

/// Why a request was refused: one variant per kind of [`Refusal`] the
/// checks here give, with the message for the caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// Malformed, out of bounds or impossible as asked.
    #[error("{0}")]
    Invalid(String),
    /// The caller may not do it.
    #[error("{0}")]
    NotAllowed(String),
    /// It names something there is none of.
    #[error("{0}")]
    Unknown(String),
    /// It clashes with what is there now.
    #[error("{0}")]
    Conflict(String),
    /// Its project has no credits left (`weft.quota.budget.enforce`): not
    /// allowed, as things stand.
    #[error("{0}")]
    OverBudget(String),
    /// Not the caller's doing: the policy it needs failed.
    #[error("{0}")]
    Unavailable(String),
}

impl RequestError {
    /// The kind of refusal it is, which the API maps onto a status (an
    /// over-budget refusal is not allowed, 403).
    pub fn kind(&self) -> Refusal {
        match self {
            RequestError::Invalid(_) => Refusal::Invalid,
            RequestError::NotAllowed(_) | RequestError::OverBudget(_) => Refusal::NotAllowed,
            RequestError::Unknown(_) => Refusal::Unknown,
            RequestError::Conflict(_) => Refusal::Conflict,
            RequestError::Unavailable(_) => Refusal::Fault,
        }
    }
}

impl From<ClusterError> for RequestError {
    fn from(error: ClusterError) -> RequestError {
        match error {
            ClusterError::UnknownNode(_) => RequestError::Unknown(error.to_string()),
            ClusterError::QueueFull { .. }
            | ClusterError::UserFull { .. }
            | ClusterError::TooManyOwnedNodes(_)
            | ClusterError::SimulatedNode(_) => RequestError::Conflict(error.to_string()),
            other => RequestError::Invalid(other.to_string()),
        }
    }
}

impl From<limits::OutOfBounds> for RequestError {
    fn from(error: limits::OutOfBounds) -> RequestError {
        RequestError::Invalid(error.to_string())
    }
}

/// What a registration gets back: orders to kill what the node runs that
/// it should not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registered {
    /// Orders to kill what the agent runs that its node does not hold
    /// (KILLED_BY_RESOURCEMANAGER), and any kill still pending.
    pub kill: Vec<KillOrder>,
    /// The answering resource manager's epoch (see `NodeOrders::epoch`).
    pub epoch: u64,
    /// The node's key for YARN's NMTokens and container tokens (hex).
    pub yarn_token_key: String,
    /// How long a node may be silent before it is lost, in ms.
    pub expiry_interval_ms: u64,
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
        mut request: SubmitApp,
        submitter: &str,
    ) -> Result<App, RequestError> {
        let created = self.place_submission(caller, &mut request)?;
        let submitted = self.submit_placed(caller, request, submitter);
        match (&submitted, created) {
            (Err(_), Some((path, before))) => self.take_back_created(&path, before),
            (Ok(app), _) => {
                let path = self.cluster.queues().queues()[app.queue_index].path.clone();
                self.dynamic_queue_used(&path);
            }
            (Err(_), None) => {}
        }
        submitted
    }

    /// [`submit_app`](Self::submit_app) once the app's queue is known.
    fn submit_placed(
        &mut self,
        caller: &Caller,
        mut request: SubmitApp,
        submitter: &str,
    ) -> Result<App, RequestError> {
        let user = self.check_submission(caller, &mut request)?;
        // An id from new-application is the caller's to use, once.
        if let Some(id) = &request.application_id {
            match self.app_ids.owner(id) {
                Some(owner) if owner == caller.user => {}
                Some(owner) => {
                    return Err(RequestError::NotAllowed(format!(
                        "application id {id} was given to {owner}; only they may submit under it"
                    )));
                }
                // Submitted before (its answer lost, or a client retrying
                // across a restart): the same app again, as YARN answers
                // "an earlier submitted application".
                None if self.cluster.app(id).is_some() => {
                    let app = self.cluster.app(id).expect("checked in the guard");
                    let same_queue =
                        self.cluster.queues().leaf(&request.queue) == Some(app.queue_index);
                    if app.user == user.user && same_queue {
                        return Ok(app.clone());
                    }
                    return Err(RequestError::Conflict(format!(
                        "application {id} was submitted already, by {} to queue {}",
                        app.user, app.queue
                    )));
                }
                None => {
                    return Err(RequestError::Invalid(format!(
                        "application id {id} was not given by new-application (or was let go: a user holds at most {} unused ids)",
                        crate::security::issued::IssuedIds::PER_USER
                    )));
                }
            }
        }
        self.check_budget(&request.project)?;
        if let Some(leaf) = self.cluster.queues().leaf(&request.queue) {
            self.check_quote(&request, leaf)?;
        }
        let now = self.now();
        let app = self.cluster.submit(request, submitter, now)?.clone();
        self.app_ids.submitted(&app.id);
        self.submitted_since_round = true;
        tracing::info!(app = %app.id, queue = %app.queue, user = %app.user, project = %app.project, caller = %caller.user, submitter, "application submitted and accepted");
        Ok(app)
    }

    /// What a submission of `request` by `caller` must pass before anything
    /// changes (a quote passes the same): in bounds, within the largest
    /// node, allowed by the queue's ACLs, on behalf of another user only
    /// for an administrator, charged only to a project the app's user
    /// belongs to, and in its reservation's plan, which is its user's, if
    /// it names one. An app naming no user is the caller's. Returns the
    /// app's user.
    pub(crate) fn check_submission(
        &self,
        caller: &Caller,
        request: &mut SubmitApp,
    ) -> Result<Caller, RequestError> {
        if request.user.is_empty() {
            request.user = caller.user.clone();
        }
        request.check()?;
        self.check_maximum_allocation(request)?;
        // As YARN's scheduler: a priority above the cluster's highest is
        // cut to it, so no tenant is served ahead of others by asking.
        request.priority = request.priority.min(self.max_application_priority);
        let security = &self.security;
        if let Some(leaf) = self.cluster.queues().leaf(&request.queue) {
            security
                .check_submit(caller, self.cluster.queues(), leaf)
                .map_err(RequestError::NotAllowed)?;
        }
        let user = if caller.user == request.user {
            caller.clone()
        } else {
            security
                .check_admin(caller, &format!("submit on behalf of {}", request.user))
                .map_err(RequestError::NotAllowed)?;
            security.caller(&request.user)
        };
        security
            .check_project(&user, &request.project)
            .map_err(RequestError::NotAllowed)?;
        self.check_app_reservation(request)
            .map_err(|e| RequestError::Invalid(e.to_string()))?;
        // A reservation's capacity is its owner's: only their apps (or an
        // administrator's submission) run in it.
        if let Some(id) = &request.reservation_id
            && let Some(owner) = self.reservations.owner(id)
            && owner != user.user
            && !security.is_admin(caller)
        {
            return Err(RequestError::NotAllowed(format!(
                "reservation {id} belongs to {owner}; only their apps run in it"
            )));
        }
        Ok(user)
    }

    /// Registers a node for `caller`, who must be in the node ACL. A node id
    /// belongs to whoever registered it first: only they may register it
    /// again — a restarted agent listing what it still runs keeps it; else
    /// its containers are lost, charged up to now and asked for again.
    pub fn register_node(
        &mut self,
        caller: &Caller,
        request: &RegisterNode,
    ) -> Result<Registered, RequestError> {
        self.security
            .check_node(caller, "register a node")
            .map_err(RequestError::NotAllowed)?;
        limits::name("node_id", &request.node_id)?;
        let running = request.running.as_deref();
        check_ids("running", running.unwrap_or_default())?;
        check_health(request.health.as_ref())?;
        let agent = AgentInfo {
            isolation: bounded_text("isolation", request.isolation.as_deref())?,
            http_address: check_http_address(request.http_address.as_deref())?,
            logs_secret: check_secret(request.logs_secret.as_deref())?,
            rack: match &request.rack {
                Some(rack) => {
                    limits::rack("rack", rack)?;
                    rack.clone()
                }
                None => String::new(),
            },
            attributes: limits::node_attributes("attributes", request.attributes.iter())?,
            label: self.agent_label(&request.labels)?,
            nm_address: check_nm_address(request.nm_address.as_deref())?,
        };
        if let Some(node) = self.cluster.node(&request.node_id) {
            check_owner(caller, node, "register it again")?;
        }
        // Lost (expired, or before a restart), it is still its owner's.
        if let Some(owner) = self.cluster.node_owner(&request.node_id)
            && owner != caller.user
        {
            return Err(RequestError::NotAllowed(format!(
                "node {} belongs to {owner}, who registered it first; only they may register it until an administrator releases it (weft node release)",
                request.node_id
            )));
        }
        let capacity = Resources::new(request.memory_mb, request.vcores, request.gpus);
        let now = self.now();
        let registered = self.cluster.register_agent(
            &request.node_id,
            capacity,
            &caller.user,
            agent,
            running,
            now,
        )?;
        // From now on each placement on the node is noticed, whether or
        // not its agent waits yet (a recovery places work on nodes as they
        // come back, before their agents ask).
        self.placement_notice(&request.node_id);
        let (lost, kill) = (registered.lost, registered.kill);
        self.containers_lost(&lost, now);
        self.cluster
            .set_node_health(&request.node_id, request.health.as_ref());
        self.agent_is_back(&request.node_id, now);
        self.node_back(&request.node_id);
        self.decommission_if_excluded(&request.node_id, now);
        tracing::info!(node = %request.node_id, %capacity, owner = %caller.user, lost = lost.len(), kept = running.map_or(0, |r| r.len()), "node registered");
        Ok(Registered {
            kill,
            epoch: self.cluster.epoch(),
            yarn_token_key: self
                .cluster
                .token_keys()
                .map(|keys| keys.node_key(&request.node_id).to_hex())
                .unwrap_or_default(),
            expiry_interval_ms: self.node_expiry_ms,
        })
    }

    /// Frees node id `id` for whoever registers it next (administrators
    /// only): a registered node is lost now, its containers ABORTED,
    /// charged up to its last heartbeat and asked for again.
    pub fn release_node(
        &mut self,
        caller: &Caller,
        id: &str,
    ) -> Result<NodeReleased, RequestError> {
        self.security
            .check_admin(caller, "release a node id")
            .map_err(RequestError::NotAllowed)?;
        limits::name("node_id", id)?;
        let now = self.now();
        let (owner, lost) = self.cluster.release_node(id, now)?;
        self.containers_lost(&lost, now);
        // A recovery waits for it no longer.
        self.node_back(id);
        // Its next registrant, whoever it is, starts with a notice of its own.
        self.placement_notices.remove(id);
        tracing::warn!(node = %id, owner = owner.as_deref().unwrap_or(""), lost = lost.len(), by = %caller.user, "node id released");
        Ok(NodeReleased {
            node_id: id.to_string(),
            owner,
            lost_containers: lost.len(),
        })
    }

    /// Decommissions node `id` (administrators only; YARN's graceful
    /// decommission): it takes no new containers from now, and what still
    /// runs on it after `timeout_s` (the setting's when none) is killed,
    /// ABORTED and asked for again; 0 kills it now. Its agent goes on
    /// heartbeating, so the node can be recommissioned.
    pub fn decommission_node(
        &mut self,
        caller: &Caller,
        id: &str,
        timeout_s: Option<u64>,
    ) -> Result<NodeDecommissioned, RequestError> {
        self.security
            .check_admin(caller, "decommission a node")
            .map_err(RequestError::NotAllowed)?;
        limits::name("node_id", id)?;
        if let Some(timeout) = timeout_s {
            limits::within("timeout", timeout, 0, limits::MAX_DECOMMISSION_TIMEOUT_S)?;
        }
        let timeout_ms = timeout_s.map_or(self.decommission_timeout_ms, |s| s.saturating_mul(1000));
        let now = self.now();
        let deadline_ms = now.saturating_add(timeout_ms);
        let taken_back = self.cluster.decommission_node(id, deadline_ms, now)?;
        let killed = self.finish_decommissioning(&taken_back, now);
        tracing::warn!(node = %id, timeout_ms, by = %caller.user, killed, "node decommissioning: it takes no new containers");
        Ok(self.decommission_standing(id, deadline_ms))
    }

    /// Ends node `id`'s decommission (administrators only): it takes
    /// containers again, at once.
    pub fn recommission_node(
        &mut self,
        caller: &Caller,
        id: &str,
    ) -> Result<NodeDecommissioned, RequestError> {
        self.security
            .check_admin(caller, "recommission a node")
            .map_err(RequestError::NotAllowed)?;
        limits::name("node_id", id)?;
        if self.cluster.recommission_node(id)? {
            tracing::info!(node = %id, by = %caller.user, "node recommissioned: it takes containers again");
            self.schedule_on_freed_resources();
        }
        Ok(self.decommission_standing(id, 0))
    }

    /// Where node `id` stands after a decommission of `deadline_ms` (0: a
    /// recommission); a lost one, as LOST.
    fn decommission_standing(&self, id: &str, deadline_ms: u64) -> NodeDecommissioned {
        let node = self.cluster.node(id);
        NodeDecommissioned {
            node_id: id.to_string(),
            state: node
                .map_or(NodeState::Lost, |node| node.state())
                .as_str()
                .to_string(),
            deadline_ms,
            running_containers: node.map_or(0, |node| node.containers.len()),
        }
    }

    /// A heartbeat from the owner of node `id`; what ended is charged up to
    /// when it ended.
    pub fn node_heartbeat(
        &mut self,
        caller: &Caller,
        id: &str,
        heartbeat: &Heartbeat,
    ) -> Result<std::sync::Arc<NodeOrders>, RequestError> {
        self.security
            .check_node(caller, "send a node heartbeat")
            .map_err(RequestError::NotAllowed)?;
        check_ids("finished", &heartbeat.finished)?;
        check_ids("running", heartbeat.running.as_deref().unwrap_or_default())?;
        check_ids("queued", &heartbeat.queued)?;
        check_health(heartbeat.health.as_ref())?;
        limits::at_most(
            "ended",
            heartbeat.ended.len(),
            limits::MAX_FINISHED_PER_HEARTBEAT,
        )?;
        let ended: Vec<ContainerEnd> = heartbeat
            .ended
            .iter()
            .enumerate()
            .map(|(i, end)| {
                // The field's name is written out only if it is refused.
                limits::name(format_args!("ended[{i}].container_id"), &end.container_id)?;
                if !exit_status::is_valid(end.exit_status) {
                    return Err(limits::OutOfBounds {
                        field: format!("ended[{i}].exit_status"),
                        value: end.exit_status.to_string(),
                        rule: "but it must be a process's own status (0 to 255) or one of YARN's ContainerExitStatus values (-100 to -109, -1000)".into(),
                    });
                }
                Ok(ContainerEnd {
                    container_id: end.container_id.clone(),
                    exit_status: end.exit_status,
                    diagnostics: limits::cut(&end.diagnostics, limits::MAX_DIAGNOSTICS_BYTES),
                    finished_ms: end.finished_ms,
                    started_ms: end.started_ms,
                })
            })
            .collect::<Result<_, limits::OutOfBounds>>()?;
        let node = self
            .cluster
            .node(id)
            .ok_or_else(|| ClusterError::UnknownNode(id.into()))?;
        check_owner(caller, node, "send its heartbeats")?;
        let now = self.now();
        let report = AgentReport {
            response_id: heartbeat.response_id,
            running: heartbeat.running.as_deref(),
            ended: &ended,
            finished: &heartbeat.finished,
            queued: &heartbeat.queued,
        };
        let taken = self.cluster.take_agent_report(id, report, now)?;
        let new_answer = matches!(taken, TakenReport::New { .. });
        // A repeated heartbeat changes nothing, its health included.
        let healthy_again = new_answer
            && heartbeat
                .health
                .as_ref()
                .is_some_and(|health| self.cluster.set_node_health(id, Some(health)));
        self.containers_launched(taken.launched(), now);
        for (container, at) in taken.ended() {
            self.container_finished(container, *at);
        }
        if !taken.ended().is_empty() || healthy_again {
            self.schedule_on_freed_resources();
        }
        let orders = self.cluster.answer_agent(id, taken).orders;
        // A new answer carries every placement so far (a repeated one is
        // the answer before, which may not).
        if new_answer && let Some(notice) = self.placement_notices.get(id) {
            notice.answered();
        }
        Ok(orders)
    }

    /// The notice of placements on node `id`, for its owner to wait on
    /// (`GET /ws/v1/cluster/nodes/{id}/orders-waiting`).
    pub fn node_placement_notice(
        &mut self,
        caller: &Caller,
        id: &str,
    ) -> Result<std::sync::Arc<super::PlacementNotice>, RequestError> {
        self.security
            .check_node(caller, "wait for a node's orders")
            .map_err(RequestError::NotAllowed)?;
        limits::name("node_id", id)?;
        let node = self
            .cluster
            .node(id)
            .ok_or_else(|| ClusterError::UnknownNode(id.into()))?;
        check_owner(caller, node, "wait for its orders")?;
        Ok(self.placement_notice(id))
    }
}

/// Container ids within bounds, at most 100,000 of them. Each heartbeat
/// lists every container its node runs, so an id's field name
/// (`running[17]`) is written out only for the one refused, not formatted
/// for every id of every heartbeat.
fn check_ids(field: &str, ids: &[String]) -> Result<(), limits::OutOfBounds> {
    limits::at_most(field, ids.len(), limits::MAX_FINISHED_PER_HEARTBEAT)?;
    for (i, id) in ids.iter().enumerate() {
        limits::name(format_args!("{field}[{i}]"), id)?;
    }
    Ok(())
}

/// A node's health as its agent reports it: a report of at most
/// [`limits::MAX_HEALTH_REPORT_BYTES`] (an agent cuts its own) and no
/// control characters (it goes into the server's log and onto terminals).
fn check_health(health: Option<&NodeHealth>) -> Result<(), limits::OutOfBounds> {
    let Some(health) = health else {
        return Ok(());
    };
    let report = &health.report;
    let rule = if report.len() > limits::MAX_HEALTH_REPORT_BYTES {
        format!(
            "but may hold at most {} bytes",
            limits::MAX_HEALTH_REPORT_BYTES
        )
    } else if report.chars().any(char::is_control) {
        "but must hold no control characters (newlines, escapes)".to_string()
    } else {
        return Ok(());
    };
    Err(limits::OutOfBounds {
        field: "health.report".into(),
        value: format!("{} bytes", report.len()),
        rule,
    })
}

/// Free text an agent gives of itself, at most 256 bytes.
fn bounded_text(field: &str, text: Option<&str>) -> Result<String, limits::OutOfBounds> {
    let text = text.unwrap_or_default();
    limits::at_most(
        format!("{field} (bytes)"),
        text.len(),
        limits::MAX_NAME_BYTES,
    )?;
    Ok(text.to_string())
}

/// An agent's log secret: at most 256 visible ASCII characters (it goes
/// into a header).
fn check_secret(secret: Option<&str>) -> Result<String, limits::OutOfBounds> {
    let secret = bounded_text("logs_secret", secret)?;
    if !secret.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(limits::OutOfBounds {
            field: "logs_secret".into(),
            value: "the secret".into(),
            rule: "but it may hold only visible ASCII characters".into(),
        });
    }
    Ok(secret)
}

/// An agent's log address: `http://host:port` (or https), nothing more —
/// the server only ever adds its own fixed paths to it.
fn check_http_address(address: Option<&str>) -> Result<String, limits::OutOfBounds> {
    let address = bounded_text("http_address", address)?;
    if address.is_empty() {
        return Ok(address);
    }
    // Scheme, host and port only: no user, path, query or fragment, so the
    // URL the server builds from it can only be the agent's own log route.
    let authority = address
        .strip_prefix("http://")
        .or_else(|| address.strip_prefix("https://"))
        .unwrap_or_default()
        .trim_end_matches('/');
    let valid = !authority.is_empty()
        && authority
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'))
        && ureq::http::Uri::try_from(address.as_str()).is_ok();
    if !valid {
        return Err(limits::OutOfBounds {
            field: "http_address".into(),
            value: format!("{address:?}"),
            rule: "but it must be http://host:port or https://host:port, with no path".into(),
        });
    }
    Ok(address.trim_end_matches('/').to_string())
}

/// An agent's ContainerManagementProtocol address: `host:port`, the host
/// of letters, digits, `.` and `-` (or an IPv6 address in brackets), the
/// port 1 to 65535 — it becomes YARN's NodeId, which a master splits on
/// its last `:`.
fn check_nm_address(address: Option<&str>) -> Result<String, limits::OutOfBounds> {
    let address = bounded_text("nm_address", address)?;
    if address.is_empty() {
        return Ok(address);
    }
    let valid = address.rsplit_once(':').is_some_and(|(host, port)| {
        !host.is_empty()
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'))
            && port.parse::<u16>().is_ok_and(|p| p > 0)
    });
    if !valid {
        return Err(limits::OutOfBounds {
            field: "nm_address".into(),
            value: format!("{address:?}"),
            rule: "but it must be host:port".into(),
        });
    }
    Ok(address)
}

/// An app someone asked to change (see [`ResourceManager::app_to_change`]).
enum ToChange<'a> {
    /// Active, and the caller may change it: its number.
    Active(usize),
    /// It has ended: a change changes nothing.
    Ended(&'a App),
}

impl ResourceManager {
    /// App `id` for `caller` to `action` (kill, change the lifetime or
    /// priority of), only for its user or an administrator of its queue or
    /// of the cluster (as YARN, which checks before it looks at the app's
    /// state): an app that has ended is left as it is.
    fn app_to_change(
        &self,
        caller: &Caller,
        id: &str,
        action: &str,
    ) -> Result<ToChange<'_>, RequestError> {
        let index = self.app_number(id)?;
        let app = self.owned_app_at(caller, index, action)?;
        if app.state.has_ended() {
            return Ok(ToChange::Ended(app));
        }
        Ok(ToChange::Active(index))
    }

    /// Kills app `id` for `caller` (its user, a queue or cluster
    /// administrator): what is pending is dropped, what runs ends now and is
    /// charged up to now. An app already ended stays as it is. Returns its
    /// state.
    pub fn kill_app(&mut self, caller: &Caller, id: &str) -> Result<AppState, RequestError> {
        let index = match self.app_to_change(caller, id, "kill")? {
            ToChange::Ended(app) => return Ok(app.state),
            ToChange::Active(index) => index,
        };
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

impl ResourceManager {
    /// Sets app `id`'s lifetime to end at `expiry_ms` for `caller` (its
    /// user, a queue or cluster administrator; YARN's
    /// updateApplicationTimeouts): cut to its queue's
    /// `maximum-application-lifetime` from its submission, refused for a
    /// time not in the future; an app that has ended keeps its own (as in
    /// YARN). Returns the app's deadline now.
    pub fn update_lifetime(
        &mut self,
        caller: &Caller,
        id: &str,
        expiry_ms: u64,
    ) -> Result<Option<u64>, RequestError> {
        let index = match self.app_to_change(caller, id, "change the lifetime of")? {
            ToChange::Ended(app) => return Ok(app.lifetime_deadline_ms),
            ToChange::Active(index) => index,
        };
        let now = self.now();
        let deadline = self
            .cluster
            .set_lifetime_deadline(index, expiry_ms, now)
            .map_err(|refusal| match refusal {
                LifetimeRefusal::NotInFuture { .. } => RequestError::Invalid(refusal.to_string()),
                LifetimeRefusal::NoSuchApp(_) => RequestError::Unknown(refusal.to_string()),
            })?;
        tracing::info!(app = id, deadline_ms = ?deadline, by = %caller.user, "application lifetime changed");
        Ok(deadline)
    }
}

impl ResourceManager {
    /// Sets app `id`'s priority for `caller` (its user, a queue or cluster
    /// administrator; YARN's updateApplicationPriority), cut to
    /// `yarn.cluster.max-application-priority` as at submission. An app
    /// that has ended keeps its own, as in YARN. Returns the priority now.
    pub fn update_priority(
        &mut self,
        caller: &Caller,
        id: &str,
        priority: i32,
    ) -> Result<i32, RequestError> {
        let index = match self.app_to_change(caller, id, "change the priority of")? {
            ToChange::Ended(app) => return Ok(app.priority),
            ToChange::Active(index) => index,
        };
        let priority = priority.min(self.max_application_priority);
        self.cluster.set_priority(index, priority);
        tracing::info!(app = id, priority, by = %caller.user, "application priority changed");
        Ok(priority)
    }
}

impl ResourceManager {
    /// Moves app `id` to leaf queue `queue` for `caller` (YARN's
    /// moveApplicationAcrossQueues): the caller may change the app (its
    /// user, an administrator of its queue or of the cluster) and may
    /// submit to or administer the target; the target's own rules are the
    /// cluster's (`Cluster::move_app`). An app that has ended is not moved.
    /// Returns the app's queue now.
    pub fn move_app(
        &mut self,
        caller: &Caller,
        id: &str,
        queue: &str,
    ) -> Result<String, RequestError> {
        limits::name("queue", queue)?;
        let index = match self.app_to_change(caller, id, "move")? {
            ToChange::Ended(app) => {
                return Err(RequestError::Conflict(format!(
                    "application {id} is {} and cannot be moved",
                    app.state.as_str()
                )));
            }
            ToChange::Active(index) => index,
        };
        let queues = self.cluster.queues();
        let current = self.cluster.apps()[index].queue_index;
        // Its own queue again is no move: nothing to allow.
        if let Some(leaf) = queues.leaf(queue)
            && leaf != current
            && !self.security.is_admin(caller)
        {
            self.security
                .check_submit(caller, queues, leaf)
                .map_err(|refusal| {
                    RequestError::NotAllowed(format!("cannot move {id}: {refusal}"))
                })?;
        }
        let from = self.cluster.apps()[index].queue.clone();
        let moved = self.cluster.move_app(index, queue, self.now())?;
        if moved != from {
            tracing::info!(app = id, from = %from, to = %moved, by = %caller.user, "application moved to another queue");
            // What it waits for may fit in its new queue: as a submission,
            // the next round comes early.
            self.submitted_since_round = true;
        }
        Ok(moved)
    }
}

/// Why refreshQueues refused a tree; nothing changed.
#[derive(Debug, thiserror::Error)]
pub enum RefreshError {
    /// The queue configuration is not a valid tree.
    #[error("{0}")]
    Queues(String),
    /// A reservation would be lost, or a queue's own policy does not load.
    #[error(transparent)]
    Reservations(#[from] ReservationError),
    /// An app running or pending names a leaf the tree lacks.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
}

impl ResourceManager {
    /// Puts the queue tree `tree` in force (a refresh, a change through the
    /// API, a format). The plans are prepared first (they refuse a tree
    /// that would lose a reservation, or a queue policy that does not
    /// load) and applied only once the cluster has taken the tree, so a
    /// refusal changes nothing. A queue naming its own sharing policy is
    /// compiled here, on the loop: rare, and a refresh must see the
    /// reservations as they are.
    pub(super) fn put_queues_in_force(
        &mut self,
        tree: crate::queues::QueueTree,
    ) -> Result<(), RefreshError> {
        let prepared = self
            .reservations
            .prepare_queues(&tree, &self.policies.clone())?;
        self.cluster.replace_queues(tree, self.now())?;
        self.reservations.apply_queues(prepared, &self.policies);
        self.queues_changed = true;
        // A dynamic leaf a change took out (a scheduler-conf removal) is
        // no longer one.
        let tree = self.cluster.queues();
        let gone: Vec<String> = self
            .auto_queues
            .paths()
            .filter(|path| tree.leaf(path).is_none())
            .map(str::to_string)
            .collect();
        self.auto_queues.forget(&gone);
        Ok(())
    }

    /// After decommissions: what they took back (`taken`) is finished, and
    /// so is what runs on nodes whose deadline has come (at once for an
    /// immediate one). Returns how many of the latter were killed.
    pub(super) fn finish_decommissioning(
        &mut self,
        taken: &[crate::cluster::Container],
        now: u64,
    ) -> usize {
        self.containers_finished(taken, now);
        let killed = self.cluster.end_decommissions(now);
        self.containers_finished(&killed, now);
        killed.len()
    }

    /// YARN's new-application: an id for `caller` to submit an app under,
    /// and the largest container a node here could hold.
    pub fn new_application(&mut self, caller: &Caller) -> (String, Resources) {
        let id = self.cluster.new_app_id();
        self.app_ids.record(id.clone(), &caller.user);
        (id, self.maximum_allocation().0)
    }

    /// The largest container an ask may ask for, and for each of memory,
    /// vcores and GPUs whether it is the setting (else the largest
    /// registered node's, YARN's maximum-allocation defaulting to what the
    /// cluster can hold).
    pub fn maximum_allocation(&self) -> (Resources, [bool; 3]) {
        let largest = self
            .cluster
            .nodes()
            .map(|n| n.capacity)
            .fold(Resources::ZERO, |a, b| {
                Resources::new(
                    a.memory_mb.max(b.memory_mb),
                    a.vcores.max(b.vcores),
                    a.gpus.max(b.gpus),
                )
            });
        let set = self.maximum_allocation;
        (
            Resources::new(
                if set.memory_mb > 0 {
                    set.memory_mb
                } else {
                    largest.memory_mb
                },
                if set.vcores > 0 {
                    set.vcores
                } else {
                    largest.vcores
                },
                if set.gpus > 0 { set.gpus } else { largest.gpus },
            ),
            [set.memory_mb > 0, set.vcores > 0, set.gpus > 0],
        )
    }

    /// Refuses an ask bigger than any container may be (YARN's
    /// InvalidResourceRequestException), rather than let it wait forever.
    /// With no node registered yet and nothing set, there is no maximum.
    pub(super) fn check_maximum_allocation(
        &self,
        request: &crate::cluster::SubmitApp,
    ) -> Result<(), RequestError> {
        let (maximum, configured) = self.maximum_allocation();
        let any_node = self.cluster.nodes().next().is_some();
        for (index, ask) in request.asks.iter().enumerate() {
            let wanted = Resources::new(ask.memory_mb, ask.vcores, ask.gpus);
            let checks = [
                (
                    wanted.memory_mb,
                    maximum.memory_mb,
                    "MB of memory",
                    "yarn.scheduler.maximum-allocation-mb",
                    configured[0],
                ),
                (
                    u64::from(wanted.vcores),
                    u64::from(maximum.vcores),
                    "vcores",
                    "yarn.scheduler.maximum-allocation-vcores",
                    configured[1],
                ),
                (
                    u64::from(wanted.gpus),
                    u64::from(maximum.gpus),
                    "GPUs",
                    "yarn.resource-types.yarn.io/gpu.maximum-allocation",
                    configured[2],
                ),
            ];
            for (asked, most, unit, setting, set) in checks {
                if (set || any_node) && asked > most {
                    let whose = if set { "" } else { " (the largest node's)" };
                    return Err(RequestError::Invalid(format!(
                        "asks[{index}] asks for {asked} {unit} per container, more than {setting} allows: {most} {unit}{whose}; no container that big can run here"
                    )));
                }
            }
        }
        Ok(())
    }
}

/// Where a container's log is served, for the one request that reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLocation {
    /// The agent's `http://host:port`, and the secret it wants.
    pub http_address: String,
    /// The bearer secret the agent gave at registration for its logs.
    pub secret: String,
    /// The container's app, whose id the agent's log path starts with.
    pub app_id: String,
}

impl ResourceManager {
    /// The number of app `id` (kept, active or ended), or why not.
    fn app_number(&self, id: &str) -> Result<usize, RequestError> {
        self.cluster
            .app_index(id)
            .ok_or_else(|| RequestError::Unknown(format!("application {id} not found")))
    }

    /// App `id` for `caller`, who must be its user or an administrator of
    /// its queue or of the cluster, to `action` it.
    fn owned_app(&self, caller: &Caller, id: &str, action: &str) -> Result<&App, RequestError> {
        self.owned_app_at(caller, self.app_number(id)?, action)
    }

    /// The same for the app numbered `index`.
    fn owned_app_at(
        &self,
        caller: &Caller,
        index: usize,
        action: &str,
    ) -> Result<&App, RequestError> {
        let app = &self.cluster.apps()[index];
        // Only active apps follow a refresh of the queues: an ended app's
        // queue is found by name, and if it is gone, root's administrators
        // (who administered it too) may.
        let leaf = if app.state.has_ended() {
            self.cluster.queues().leaf(&app.queue).unwrap_or(0)
        } else {
            app.queue_index
        };
        self.security
            .check_app_owner(caller, &app.user, self.cluster.queues(), leaf, action)
            .map_err(RequestError::NotAllowed)?;
        Ok(app)
    }

    /// The containers app `id` ran and runs (the newest 10,000), for its
    /// user and administrators.
    pub fn app_containers(
        &self,
        caller: &Caller,
        id: &str,
    ) -> Result<Vec<crate::cluster::ContainerRecord>, RequestError> {
        let app = self.owned_app(caller, id, "list the containers of")?;
        Ok(app.containers.iter().cloned().collect())
    }

    /// Where the log of container `container` of app `app` is served, for
    /// the app's user and administrators; its node must still be registered
    /// and run an agent that serves logs.
    pub fn container_log(
        &self,
        caller: &Caller,
        app: &str,
        container: &str,
    ) -> Result<LogLocation, RequestError> {
        let found = self.owned_app(caller, app, "read the logs of")?;
        let record = found
            .containers
            .iter()
            .rev()
            .find(|r| r.id == container)
            .ok_or_else(|| {
                RequestError::Unknown(format!("application {app} has no container {container}"))
            })?;
        let node = self.cluster.node(&record.node).ok_or_else(|| {
            RequestError::Unknown(format!(
                "container {container} ran on node {}, which is no longer registered; its logs are there",
                record.node
            ))
        })?;
        if node.agent.http_address.is_empty() {
            return Err(RequestError::Unknown(format!(
                "container {container} ran on node {}, which serves no logs (a simulated node or a client without an agent)",
                record.node
            )));
        }
        Ok(LogLocation {
            http_address: node.agent.http_address.clone(),
            secret: node.agent.logs_secret.clone(),
            app_id: found.id.clone(),
        })
    }
}

/// A node decommissioned or recommissioned: where it stands.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct NodeDecommissioned {
    /// The node id.
    pub node_id: String,
    /// Its state now: DECOMMISSIONING (containers still run),
    /// DECOMMISSIONED (none does), or after a recommission RUNNING or
    /// UNHEALTHY.
    pub state: String,
    /// When what still runs on it is killed, in ms since the epoch (0
    /// after a recommission).
    pub deadline_ms: u64,
    /// Containers still running on it.
    pub running_containers: usize,
}

/// A node id released: who owned it and how many containers it lost.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct NodeReleased {
    /// The node id released.
    pub node_id: String,
    /// Who owned it (none: nobody did any more).
    pub owner: Option<String>,
    /// Containers it ran, now lost (ABORTED) and asked for again.
    pub lost_containers: usize,
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
        return Err(RequestError::NotAllowed(format!(
            "node {} was registered by {}; only they may {action}",
            node.id, node.owner
        )));
    }
    Ok(())
}

/// The reservation API's use cases: YARN's submit, update and delete, with
/// the caller's right to its queue and ownership of what it changes.
impl ResourceManager {
    /// YARN's new-reservation: an id held for `caller` until they submit.
    pub fn new_reservation(
        &mut self,
        caller: &Caller,
    ) -> Result<crate::reservation::ReservationId, ReservationError> {
        self.reservations.new_reservation(&caller.user)
    }

    /// Submitting a reservation takes the right to submit to its queue.
    pub fn submit_reservation(
        &mut self,
        caller: &Caller,
        request: &ReservationSubmissionRequest,
    ) -> Result<Accepted, ReservationRequestError> {
        if let Some(leaf) = self.cluster.queues().leaf(&request.queue) {
            self.security
                .check_submit(caller, self.cluster.queues(), leaf)
                .map_err(RequestError::NotAllowed)?;
        }
        self.reservations.refresh_capacities(&self.cluster);
        let now = self.now();
        let sharing = self.policies.sharing();
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
        let sharing = self.policies.sharing();
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
/// reservation system (with its own kind of refusal).
#[derive(Debug, thiserror::Error)]
pub enum ReservationRequestError {
    /// Refused by the caller's rights: no right to submit to the
    /// reservation's queue.
    #[error(transparent)]
    Request(#[from] RequestError),
    /// Refused by the reservation system (off, the plan or sharing policy,
    /// ownership, the store).
    #[error(transparent)]
    Reservation(#[from] ReservationError),
}

impl ReservationRequestError {
    /// The kind of refusal it is: the one its error names.
    pub fn kind(&self) -> Refusal {
        match self {
            ReservationRequestError::Request(error) => error.kind(),
            ReservationRequestError::Reservation(error) => error.kind(),
        }
    }
}
