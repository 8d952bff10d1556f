//! How an agent reaches the resource manager's ResourceTracker: over HTTP
//! (`weft agent`), or in-process through the event loop (the local agent of
//! `weft serve`), with the same requests and answers either way.

use std::time::Duration;

use serde::Deserialize;

use crate::client::Client;
use crate::cluster::{KillOrder, NodeOrders};
use crate::rm::RmHandle;
use crate::rm::requests::{Heartbeat, RegisterNode, RequestError};
use crate::security::Caller;

/// What a registration answers.
#[derive(Debug, Clone, Deserialize)]
pub struct Registration {
    pub heartbeat_interval_ms: u64,
    #[serde(default)]
    pub kill: Vec<KillOrder>,
    /// The answering resource manager's epoch (its fencing token; 0 from
    /// a server that does not say).
    #[serde(default)]
    pub epoch: u64,
}

/// Why a request to the tracker got no answer to act on.
#[derive(Debug, thiserror::Error)]
pub enum TrackerError {
    /// The server does not know the node (lost, or restarted): register again.
    #[error("the server does not know this node: {0}")]
    UnknownNode(String),
    /// The server could not be reached or failed; try again later.
    #[error("{0}")]
    Unavailable(String),
    /// A server answered from an epoch older than one the agent has seen
    /// (a former active): its answer was ignored; try the next server.
    #[error("{0}")]
    Stale(String),
    /// The server refused the request (rights, bounds): retrying the same
    /// will not help.
    #[error("the server refused: {0}")]
    Refused(String),
}

pub trait ResourceTracker: Send {
    fn register(&mut self, request: &RegisterNode) -> Result<Registration, TrackerError>;
    fn heartbeat(&mut self, node: &str, beat: &Heartbeat) -> Result<NodeOrders, TrackerError>;

    /// Which server gave the last answer, when there is a choice of
    /// servers (none in process).
    fn server(&self) -> Option<String> {
        None
    }

    /// Moves on from the server that gave the last answer (a former
    /// active's, of an old epoch): the next request goes to the next one.
    fn pass_over(&mut self) {}
}

/// Over HTTP, to one server of a list: each request goes to the one that
/// answered last, and on to the others (each once) while it cannot be
/// reached or is a standby; the agent's loop tries again on its schedule.
pub struct HttpTracker {
    pub client: Client,
}

impl HttpTracker {
    fn post<T: for<'de> Deserialize<'de>>(
        &self,
        path: &str,
        body: &impl serde::Serialize,
    ) -> Result<T, TrackerError> {
        let body = serde_json::to_value(body).map_err(|e| TrackerError::Refused(e.to_string()))?;
        let response = self
            .client
            .post_json_once(path, &body)
            .map_err(|e| TrackerError::Unavailable(format!("{e:#}")))?;
        let status = response.status().as_u16();
        let answer = self.client.answer(path, response);
        match (status, answer) {
            (200..=299, Ok(value)) => serde_json::from_value(value)
                .map_err(|e| TrackerError::Unavailable(format!("{path} answered {e}"))),
            (404, Err(e)) => Err(TrackerError::UnknownNode(format!("{e:#}"))),
            (500.., Err(e)) | (408 | 429, Err(e)) => {
                Err(TrackerError::Unavailable(format!("{e:#}")))
            }
            (_, Err(e)) => Err(TrackerError::Refused(format!("{e:#}"))),
            (_, Ok(value)) => Err(TrackerError::Unavailable(format!(
                "{path} answered {value}"
            ))),
        }
    }
}

impl ResourceTracker for HttpTracker {
    fn register(&mut self, request: &RegisterNode) -> Result<Registration, TrackerError> {
        self.post("/ws/v1/cluster/nodes/register", request)
    }

    fn heartbeat(&mut self, node: &str, beat: &Heartbeat) -> Result<NodeOrders, TrackerError> {
        let path = format!(
            "/ws/v1/cluster/nodes/{}/heartbeat",
            crate::client::encode(node)
        );
        self.post(&path, beat)
    }

    fn server(&self) -> Option<String> {
        Some(self.client.current_server().to_string())
    }

    fn pass_over(&mut self) {
        let server = self.client.current_server().to_string();
        self.client.pass_over(&server);
    }
}

/// In the server's own process: commands to its event loop, as `caller`
/// (the user running the server).
pub struct LocalTracker {
    pub rm: RmHandle,
    pub runtime: tokio::runtime::Handle,
    pub caller: Caller,
    pub heartbeat_interval: Duration,
}

impl LocalTracker {
    fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut crate::rm::ResourceManager, &Caller) -> Result<T, RequestError>
        + Send
        + 'static,
    ) -> Result<T, TrackerError> {
        let caller = self.caller.clone();
        let answer = self
            .runtime
            .block_on(self.rm.with(move |rm| f(rm, &caller)))
            .map_err(|e| TrackerError::Unavailable(e.to_string()))?;
        answer.map_err(|e| match e {
            RequestError::Unknown(m) => TrackerError::UnknownNode(m),
            other => TrackerError::Refused(other.to_string()),
        })
    }
}

impl ResourceTracker for LocalTracker {
    fn register(&mut self, request: &RegisterNode) -> Result<Registration, TrackerError> {
        let request = request.clone();
        let registered = self.call(move |rm, caller| rm.register_node(caller, &request))?;
        Ok(Registration {
            heartbeat_interval_ms: self.heartbeat_interval.as_millis() as u64,
            kill: registered.kill,
            epoch: registered.epoch,
        })
    }

    fn heartbeat(&mut self, node: &str, beat: &Heartbeat) -> Result<NodeOrders, TrackerError> {
        let (node, beat) = (node.to_string(), beat.clone());
        self.call(move |rm, caller| rm.node_heartbeat(caller, &node, &beat))
    }
}
