//! The node labels use cases (YARN's add-node-labels, remove-node-labels,
//! replace-labels): administrators only; each checked in full and applied
//! whole or refused, then a round may place what the change made room for.

use super::ResourceManager;
use super::requests::RequestError;
use crate::cluster::LabelError;
use crate::limits;
use crate::security::Caller;

impl From<LabelError> for RequestError {
    fn from(error: LabelError) -> RequestError {
        match error {
            LabelError::Unknown(_) | LabelError::UnknownNode(_) => {
                RequestError::Unknown(error.to_string())
            }
            LabelError::InUse { .. } | LabelError::Exists { .. } => {
                RequestError::Conflict(error.to_string())
            }
            LabelError::OutOfBounds(_) => RequestError::Invalid(error.to_string()),
        }
    }
}

impl ResourceManager {
    /// Adds node labels (name, exclusive).
    pub fn add_node_labels(
        &mut self,
        caller: &Caller,
        labels: &[(String, bool)],
    ) -> Result<(), RequestError> {
        self.security
            .check_admin(caller, "add node labels")
            .map_err(RequestError::NotAllowed)?;
        limits::at_most("nodeLabelInfo", labels.len(), limits::MAX_NODE_LABELS)?;
        self.cluster.add_node_labels(labels)?;
        tracing::info!(labels = ?labels, by = %caller.user, "node labels added");
        Ok(())
    }

    /// Removes node labels no node, queue or active app holds.
    pub fn remove_node_labels(
        &mut self,
        caller: &Caller,
        names: &[String],
    ) -> Result<(), RequestError> {
        self.security
            .check_admin(caller, "remove node labels")
            .map_err(RequestError::NotAllowed)?;
        limits::at_most("labels", names.len(), limits::MAX_NODE_LABELS)?;
        for name in names {
            limits::node_label("labels", name)?;
        }
        self.cluster.remove_node_labels(names)?;
        tracing::info!(labels = ?names, by = %caller.user, "node labels removed");
        Ok(())
    }

    /// Sets nodes' labels (None: back to the default partition); what the
    /// change frees up for pending asks is placed at once.
    pub fn replace_node_labels(
        &mut self,
        caller: &Caller,
        mapping: &[(String, Option<String>)],
    ) -> Result<(), RequestError> {
        self.security
            .check_admin(caller, "set the labels of nodes")
            .map_err(RequestError::NotAllowed)?;
        for (node, label) in mapping {
            limits::name("nodeId", node)?;
            if let Some(label) = label {
                limits::node_label("nodeLabels", label)?;
            }
        }
        self.cluster.replace_node_labels(mapping)?;
        tracing::info!(mapping = ?mapping, by = %caller.user, "node labels set on nodes");
        self.schedule_on_freed_resources();
        Ok(())
    }

    /// A simulation's labels, as its operator sets them up before any app
    /// arrives: `labels` added, then `nodes` (simulated ones) set.
    pub fn set_up_node_labels(
        &mut self,
        labels: &[(String, bool)],
        nodes: &[(String, Option<String>)],
    ) -> Result<(), LabelError> {
        self.cluster.add_node_labels(labels)?;
        self.cluster.replace_node_labels(nodes)
    }

    /// The label an agent's registration names, checked: at most one, and
    /// one the cluster has.
    pub(super) fn agent_label(&self, labels: &[String]) -> Result<String, RequestError> {
        limits::at_most("labels", labels.len(), 1)?;
        let Some(label) = labels.first() else {
            return Ok(String::new());
        };
        limits::node_label("labels[0]", label)?;
        if self.cluster.node_labels().exclusive(label).is_none() {
            return Err(RequestError::Invalid(format!(
                "labels[0]: {}",
                LabelError::Unknown(label.clone())
            )));
        }
        Ok(label.clone())
    }
}
