//! YARN's ContainerManagementProtocol on an agent (the NodeManager's RPC
//! port): an application master starts, stops and watches the containers
//! the resource manager allocated to it here. It authenticates with the
//! NMToken it was given for this node (SASL DIGEST-MD5 under the node's
//! key), and each start carries the container's token, checked under the
//! same key: a master can start only a container held here for its own
//! attempt, and stop or watch only its app's containers.
//!
//! The agent's loop owns the containers; this side only checks calls and
//! leaves starts and stops for the loop (`Shared`), which it carries out
//! within a poll.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use futures_util::future::BoxFuture;
use prost::Message;

use crate::protocol::node::{ContainerCommand, LaunchOrder, exit_status};
use crate::security::yarn_tokens::{NodeTokenKey, same_password};
use crate::yarn_rpc::client_protocol::{environment, launch_context};
use crate::yarn_rpc::connection::Call;
use crate::yarn_rpc::error::{RpcError, class};
use crate::yarn_rpc::messages::calls::{
    CONTAINER_MANAGEMENT_PROTOCOL, CONTAINER_MANAGEMENT_PROTOCOL_METHODS,
    ContainerExceptionMapProto, GetContainerStatusesRequestProto,
    GetContainerStatusesResponseProto, StartContainerRequestProto, StartContainersRequestProto,
    StartContainersResponseProto, StopContainersRequestProto, StopContainersResponseProto,
};
use crate::yarn_rpc::messages::records::{
    ContainerIdProto, ContainerStateProto, ContainerStatusProto, SerializedExceptionProto,
};
use crate::yarn_rpc::messages::tokens::{ContainerTokenIdentifierProto, NMTokenIdentifierProto};
use crate::yarn_rpc::reports;
use crate::yarn_rpc::sasl::TokenPasswords;
use crate::yarn_rpc::server::Protocols;

/// The protocol's name, as masters give it in every call.
pub const PROTOCOL: &str = CONTAINER_MANAGEMENT_PROTOCOL;

/// The most containers one call may name.
const MAX_PER_CALL: usize = 1000;
/// How long a container is held for a master that does not start it
/// (YARN's `yarn.resourcemanager.rm.container-allocation.expiry-interval-ms`,
/// which its container tokens last too).
pub const HELD_EXPIRY: std::time::Duration = std::time::Duration::from_secs(600);
/// The most ended containers whose status is kept for masters.
const MAX_ENDED: usize = 10_000;

/// Where a container stands, as a master is told.
#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// Held for its master, not yet started.
    Held,
    /// Started.
    Running,
    /// Ended, with YARN's exit status and why.
    Complete(i32, String),
}

/// What the agent's loop and its ContainerManagementProtocol share.
#[derive(Debug, Default)]
pub struct Shared {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// The node's token key, from its registration.
    key: Option<NodeTokenKey>,
    /// Containers held for their masters: their orders, and since when.
    held: BTreeMap<String, (LaunchOrder, std::time::Instant)>,
    /// Orders started by masters, for the loop to launch.
    starts: Vec<LaunchOrder>,
    /// Containers masters stopped, for the loop to kill.
    stops: Vec<String>,
    /// What masters are told of containers started or ended here.
    states: BTreeMap<String, State>,
    /// Ended containers in the order they ended (the oldest go first).
    ended: std::collections::VecDeque<String>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic elsewhere leaves plain data behind: still usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The node's key, from the registration's answer (none: masters are
    /// refused).
    pub fn set_key(&self, key: Option<NodeTokenKey>) {
        self.lock().key = key;
    }

    /// Holds container `order` for its master (idempotent).
    pub fn hold(&self, order: &LaunchOrder) {
        let mut inner = self.lock();
        if inner.states.contains_key(&order.container_id) {
            return;
        }
        inner.held.insert(
            order.container_id.clone(),
            (order.clone(), std::time::Instant::now()),
        );
        inner.states.insert(order.container_id.clone(), State::Held);
    }

    /// Lets go of a held container; whether it was held.
    pub fn release(&self, container_id: &str) -> bool {
        self.lock().held.remove(container_id).is_some()
    }

    /// Containers held, not yet started.
    pub fn held(&self) -> Vec<String> {
        self.lock().held.keys().cloned().collect()
    }

    /// What the containers held for masters hold together.
    pub fn held_resources(&self) -> crate::resources::Resources {
        self.lock()
            .held
            .values()
            .fold(crate::resources::Resources::ZERO, |sum, (order, _)| {
                sum + crate::resources::Resources::new(order.memory_mb, order.vcores, order.gpus)
            })
    }

    /// Containers held longer than [`HELD_EXPIRY`] without their master
    /// starting them (YARN's container allocation expiry): to be let go.
    pub fn expired(&self) -> Vec<String> {
        self.lock()
            .held
            .iter()
            .filter(|(_, (_, since))| since.elapsed() > HELD_EXPIRY)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Whether a master started container `container_id` (and it has not
    /// ended): still starting, it is reported running, as it was while held.
    pub fn started(&self, container_id: &str) -> bool {
        self.lock().states.get(container_id) == Some(&State::Running)
    }

    /// What masters started and stopped since the last call.
    pub fn take(&self) -> (Vec<LaunchOrder>, Vec<String>) {
        let mut inner = self.lock();
        (
            std::mem::take(&mut inner.starts),
            std::mem::take(&mut inner.stops),
        )
    }

    /// A container ended: masters are told so.
    pub fn ended(&self, container_id: &str, exit_status: i32, diagnostics: &str) {
        let mut inner = self.lock();
        let Some(state) = inner.states.get_mut(container_id) else {
            return;
        };
        if matches!(state, State::Complete(..)) {
            return;
        }
        *state = State::Complete(exit_status, crate::limits::cut(diagnostics, 4096));
        inner.held.remove(container_id);
        inner.ended.push_back(container_id.to_string());
        while inner.ended.len() > MAX_ENDED {
            if let Some(old) = inner.ended.pop_front() {
                inner.states.remove(&old);
            }
        }
    }
}

/// The attempt (`appattempt_…`) and app an NMToken's identifier names.
fn nm_attempt(identifier: &[u8]) -> Result<(String, String), String> {
    let token = NMTokenIdentifierProto::decode(identifier)
        .map_err(|e| format!("the NMToken's identifier cannot be decoded: {e}"))?;
    let (app, attempt) = reports::attempt_id_text(token.app_attempt_id.as_ref())
        .ok_or_else(|| "the NMToken names no application attempt".to_string())?;
    Ok((crate::cluster::attempt_id(&app, attempt), app))
}

/// The NMTokens of this node: checked by its port's SASL.
#[derive(Debug, Clone)]
pub struct NmPasswords {
    shared: Arc<Shared>,
}

impl TokenPasswords for NmPasswords {
    fn password(&self, identifier: &[u8]) -> Result<(Vec<u8>, Arc<str>), String> {
        let (attempt, _) = nm_attempt(identifier)?;
        let inner = self.shared.lock();
        let key = inner
            .key
            .as_ref()
            .ok_or("this node has no token key yet (it has not registered)")?;
        Ok((key.nm_password(identifier), Arc::from(attempt)))
    }
}

/// ContainerManagementProtocol over the agent's shared state.
#[derive(Debug, Clone)]
pub struct NodeManager {
    shared: Arc<Shared>,
}

impl NodeManager {
    /// The protocol, and the passwords its port checks, over `shared`.
    pub fn new(shared: Arc<Shared>) -> (NodeManager, NmPasswords) {
        (
            NodeManager {
                shared: shared.clone(),
            },
            NmPasswords { shared },
        )
    }
}

impl Protocols for NodeManager {
    fn serve(&self, call: Call) -> BoxFuture<'static, Result<Vec<u8>, RpcError>> {
        let result = self.dispatch(&call);
        Box::pin(async move { result })
    }

    fn only_reads(&self, method: &str) -> bool {
        method == "getContainerStatuses"
    }
}

/// A failure of one container of a call, as Hadoop's client rebuilds it.
fn failure(id: Option<ContainerIdProto>, message: String) -> ContainerExceptionMapProto {
    ContainerExceptionMapProto {
        container_id: id,
        exception: Some(SerializedExceptionProto {
            message: Some(message),
            trace: Some(String::new()),
            class_name: Some(class::YARN.into()),
            cause: None,
        }),
    }
}

fn too_many(method: &str, count: usize) -> Result<(), RpcError> {
    if count > MAX_PER_CALL {
        return Err(RpcError::yarn(format!(
            "{method}: {count} containers in one call; at most {MAX_PER_CALL}"
        )));
    }
    Ok(())
}

impl NodeManager {
    fn dispatch(&self, call: &Call) -> Result<Vec<u8>, RpcError> {
        if call.protocol != PROTOCOL {
            return Err(RpcError::no_such_protocol(&call.protocol));
        }
        let (attempt, app) = call.token("NMToken", nm_attempt)?;
        let method = call.method.as_str();
        match method {
            "startContainers" => {
                let request: StartContainersRequestProto = call.decode()?;
                too_many(method, request.start_container_request.len())?;
                let mut response = StartContainersResponseProto::default();
                for start in request.start_container_request {
                    let id = start
                        .container_token
                        .as_ref()
                        .and_then(|t| ContainerTokenIdentifierProto::decode(&t.identifier[..]).ok())
                        .and_then(|t| t.container_id);
                    match self.start(&attempt, start) {
                        Ok(started) => response.succeeded_requests.push(started),
                        Err(why) => response.failed_requests.push(failure(id, why)),
                    }
                }
                Ok(response.encode_to_vec())
            }
            "stopContainers" => {
                let request: StopContainersRequestProto = call.decode()?;
                too_many(method, request.container_id.len())?;
                let mut response = StopContainersResponseProto::default();
                for id in request.container_id {
                    match self.stop(&app, &id) {
                        Ok(()) => response.succeeded_requests.push(id),
                        Err(why) => response.failed_requests.push(failure(Some(id), why)),
                    }
                }
                Ok(response.encode_to_vec())
            }
            "getContainerStatuses" => {
                let request: GetContainerStatusesRequestProto = call.decode()?;
                too_many(method, request.container_id.len())?;
                let mut response = GetContainerStatusesResponseProto::default();
                let inner = self.shared.lock();
                for id in request.container_id {
                    let state = reports::container_id_text(&id)
                        .filter(|text| of_app(text, &app))
                        .and_then(|text| inner.states.get(&text).cloned());
                    let Some(state) = state else {
                        response.failed_requests.push(failure(
                            Some(id),
                            "Container is not known to this node, or not of your application"
                                .into(),
                        ));
                        continue;
                    };
                    let (state, exit_status, diagnostics) = match state {
                        State::Held => (
                            ContainerStateProto::CNew,
                            exit_status::INVALID,
                            String::new(),
                        ),
                        State::Running => (
                            ContainerStateProto::CRunning,
                            exit_status::INVALID,
                            String::new(),
                        ),
                        State::Complete(exit, why) => (ContainerStateProto::CComplete, exit, why),
                    };
                    response.status.push(ContainerStatusProto {
                        container_id: Some(id),
                        state: Some(state as i32),
                        diagnostics: Some(diagnostics),
                        exit_status: Some(exit_status),
                        ..Default::default()
                    });
                }
                Ok(response.encode_to_vec())
            }
            other if CONTAINER_MANAGEMENT_PROTOCOL_METHODS.contains(&other) => {
                Err(RpcError::unsupported(PROTOCOL, other))
            }
            other => Err(RpcError::no_such_method(PROTOCOL, other)),
        }
    }

    /// One start: the container's token checked, the container held here
    /// for `attempt`, its launch context read; left for the loop.
    fn start(
        &self,
        attempt: &str,
        start: StartContainerRequestProto,
    ) -> Result<ContainerIdProto, String> {
        let token = start
            .container_token
            .ok_or("the request carries no container token")?;
        let identifier = ContainerTokenIdentifierProto::decode(&token.identifier[..])
            .map_err(|e| format!("the container token cannot be decoded: {e}"))?;
        let id_record = identifier
            .container_id
            .ok_or("the container token names no container")?;
        let container = reports::container_id_text(&id_record)
            .ok_or("the container token's container id is not one this cluster gives")?;
        let context = start
            .container_launch_context
            .ok_or("the request carries no container launch context")?;
        let command_line = context.command.join(" ");
        let env = environment(&context);
        let yarn = launch_context(&context, false).map_err(|e| e.to_string())?;
        yarn.check()?;
        let mut inner = self.shared.lock();
        let key = inner
            .key
            .as_ref()
            .ok_or("this node has not registered yet")?;
        if !same_password(&token.password, &key.container_password(&token.identifier)) {
            return Err(format!(
                "Unauthorized request to start container {container}: its token was not issued for it by this cluster"
            ));
        }
        let now = i64::try_from(super::executor::now_ms()).unwrap_or(i64::MAX);
        if identifier
            .expiry_time_stamp
            .is_none_or(|expiry| expiry < now)
        {
            return Err(format!(
                "This token is expired: container {container}'s token expired before its start"
            ));
        }
        let Some((held, _)) = inner.held.get(&container) else {
            return Err(match inner.states.get(&container) {
                Some(_) => format!("Container {container} has already been started"),
                None => format!("Container {container} is not allocated to this node"),
            });
        };
        if held.held_for.as_deref() != Some(attempt) {
            return Err(format!(
                "Unauthorized request to start container {container}: it is not held for {attempt}"
            ));
        }
        let order = LaunchOrder {
            command: ContainerCommand::Shell(command_line),
            env,
            yarn: Some(yarn),
            held_for: None,
            ..held.clone()
        };
        let bytes = order.launch_bytes();
        if bytes > crate::limits::MAX_LAUNCH_BYTES {
            return Err(format!(
                "the container launch context holds {bytes} bytes; at most {} (command, environment, resources and tokens together)",
                crate::limits::MAX_LAUNCH_BYTES
            ));
        }
        inner.held.remove(&container);
        inner.states.insert(container.clone(), State::Running);
        inner.starts.push(order);
        tracing::info!(container = %container, attempt, "container started by its application master");
        Ok(id_record)
    }

    /// One stop: a container of the master's app, held or running here.
    fn stop(&self, app: &str, id: &ContainerIdProto) -> Result<(), String> {
        let container = reports::container_id_text(id)
            .filter(|text| of_app(text, app))
            .ok_or("Container is not of your application")?;
        let mut inner = self.shared.lock();
        match inner.states.get(&container) {
            None => Err(format!("Container {container} is not known to this node")),
            // Stopping an ended container is fine (YARN's NM says so too).
            Some(State::Complete(..)) => Ok(()),
            Some(_) => {
                inner.stops.push(container);
                Ok(())
            }
        }
    }
}

/// Whether container id text `container` is of app `app`
/// (`application_T_N` → `container_[eE_]T_N_…`).
fn of_app(container: &str, app: &str) -> bool {
    let Some(app_part) = app.strip_prefix("application_") else {
        return false;
    };
    let Some(rest) = container.strip_prefix("container_") else {
        return false;
    };
    let rest = match rest.strip_prefix('e') {
        Some(tail) => tail.split_once('_').map_or("", |(_, t)| t),
        None => rest,
    };
    rest.strip_prefix(app_part)
        .is_some_and(|tail| tail.starts_with('_'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containers_are_matched_to_their_apps_exactly() {
        assert!(of_app("container_17_0003_01_000002", "application_17_0003"));
        assert!(of_app(
            "container_e4_17_0003_02_000002",
            "application_17_0003"
        ));
        assert!(!of_app(
            "container_17_00031_01_000002",
            "application_17_0003"
        ));
        assert!(!of_app(
            "container_17_0004_01_000002",
            "application_17_0003"
        ));
        assert!(!of_app("container_17_0003_01_000002", "bogus"));
    }
}
