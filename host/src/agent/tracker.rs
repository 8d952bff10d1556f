//! How `weft agent` reaches the resource manager's ResourceTracker: over
//! HTTP. (The local agent of `weft serve` reaches it in process:
//! `rm/local_tracker.rs`.)

use serde::Deserialize;

use crate::client::Client;
use crate::protocol::node::{
    Heartbeat, NodeOrders, RegisterNode, RegisteredNode, ResourceTracker, TrackerError,
};

/// Over HTTP, to one server of a list: each request goes to the one that
/// answered last, and on to the others (each once) while it cannot be
/// reached or is a standby; the agent's loop tries again on its schedule.
pub struct HttpTracker {
    /// The client of the servers `--server` lists, as the agent's user.
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
    fn register(&mut self, request: &RegisterNode) -> Result<RegisteredNode, TrackerError> {
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
