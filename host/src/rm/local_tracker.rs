//! The ResourceTracker of the local agent of `weft serve`: the node
//! protocol's requests as commands to the event loop, with the same answers
//! as over HTTP.

use std::sync::Arc;
use std::time::Duration;

use super::requests::RequestError;
use super::{PlacementNotice, ResourceManager, RmHandle};
use crate::protocol::node::{
    Heartbeat, NodeOrders, RegisterNode, RegisteredNode, ResourceTracker, TrackerError,
};
use crate::security::Caller;

/// In the server's own process: commands to its event loop, as `caller`
/// (the user running the server).
pub struct LocalTracker {
    /// The handle to the event loop the requests go to.
    pub rm: RmHandle,
    /// The runtime the agent's thread blocks on to await the loop's answers.
    pub runtime: tokio::runtime::Handle,
    /// Who the requests come from (registration and heartbeats are checked
    /// against `weft.security.node-acl`).
    pub caller: Caller,
    /// How often the agent should heartbeat: the registration's answer
    /// (`yarn.resourcemanager.nodemanagers.heartbeat-interval-ms`).
    pub heartbeat_interval: Duration,
    /// Set by the event loop when it places containers on this node (from
    /// the last registration on).
    pub placed: Option<Arc<PlacementNotice>>,
}

impl LocalTracker {
    fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut ResourceManager, &Caller) -> Result<T, RequestError> + Send + 'static,
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
    fn register(&mut self, request: &RegisterNode) -> Result<RegisteredNode, TrackerError> {
        let request = request.clone();
        let request_node_id = request.node_id.clone();
        let (registered, notice) = self.call(move |rm, caller| {
            let registered = rm.register_node(caller, &request)?;
            Ok((registered, rm.placement_notice(&request.node_id)))
        })?;
        self.placed = Some(notice);
        Ok(RegisteredNode {
            node_id: request_node_id,
            heartbeat_interval_ms: self.heartbeat_interval.as_millis() as u64,
            kill: registered.kill,
            epoch: registered.epoch,
            yarn_token_key: registered.yarn_token_key,
            expiry_interval_ms: registered.expiry_interval_ms,
        })
    }

    fn heartbeat(&mut self, node: &str, beat: &Heartbeat) -> Result<NodeOrders, TrackerError> {
        let (node, beat) = (node.to_string(), beat.clone());
        self.call(move |rm, caller| rm.node_heartbeat(caller, &node, &beat))
            .map(Arc::unwrap_or_clone)
    }

    fn orders_waiting(&self) -> bool {
        self.placed.as_ref().is_some_and(|notice| notice.take())
    }
}
