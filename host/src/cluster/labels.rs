//! Node labels, YARN's partitions: the cluster's labels, each exclusive or
//! not, and the one label each node is in. A node without one is in the
//! default partition (""), as in YARN. A node's agent may name its label
//! (`weft agent --labels`); an administrator's replace-labels overrides
//! that, also when the agent registers again, as YARN's centralized labels.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Cluster, durable};
use crate::limits;

/// The cluster's labels and what administrators set on nodes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeLabels {
    /// Label → whether it is exclusive (only asks for it run on its nodes)
    /// or lends its idle room to asks for the default partition.
    labels: BTreeMap<String, bool>,
    /// Node id → the label an administrator set on it ("" for none).
    assigned: BTreeMap<String, String>,
}

impl NodeLabels {
    /// Every label with whether it is exclusive, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, bool)> {
        self.labels
            .iter()
            .map(|(name, &exclusive)| (name.as_str(), exclusive))
    }

    /// Whether there are none (the cluster is one partition).
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Whether `label` is a label of the cluster, and if so, exclusive.
    pub fn exclusive(&self, label: &str) -> Option<bool> {
        self.labels.get(label).copied()
    }

    /// The label an administrator set on node `id`, if any did.
    pub fn assigned(&self, id: &str) -> Option<&str> {
        self.assigned.get(id).map(String::as_str)
    }
}

/// Why a change of labels was refused; nothing of it was applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabelError {
    /// A name or list out of bounds, or a label asked for twice or with
    /// two exclusivities.
    #[error(transparent)]
    OutOfBounds(#[from] limits::OutOfBounds),
    /// A label the cluster does not have.
    #[error(
        "no node label {0:?} exists; add it first (POST /ws/v1/cluster/add-node-labels, weft label add)"
    )]
    Unknown(String),
    /// A label that exists with the other exclusivity.
    #[error("node label {label:?} exists already as {}; remove it first to change that", if *.exclusive { "exclusive" } else { "non-exclusive" })]
    Exists {
        /// The label.
        label: String,
        /// Whether it is exclusive now.
        exclusive: bool,
    },
    /// A label still held by nodes, queues or apps.
    #[error("node label {label:?} is in use: {uses}")]
    InUse {
        /// The label.
        label: String,
        /// Who holds it: nodes, queues (their properties) and apps.
        uses: String,
    },
    /// A node id no node has (nor a lost one).
    #[error("unknown node {0:?}")]
    UnknownNode(String),
}

impl Cluster {
    /// The cluster's labels.
    pub fn node_labels(&self) -> &NodeLabels {
        &self.labels
    }

    /// Adds labels (name, exclusive), all or none; one there already with
    /// the same exclusivity is left as it is.
    pub fn add_node_labels(&mut self, labels: &[(String, bool)]) -> Result<(), LabelError> {
        let mut added = self.labels.labels.clone();
        let mut named = std::collections::BTreeSet::new();
        for (i, (name, exclusive)) in labels.iter().enumerate() {
            limits::node_label(format!("nodeLabelInfo[{i}].name"), name)?;
            if !named.insert(name) {
                return Err(limits::OutOfBounds {
                    field: format!("nodeLabelInfo[{i}].name"),
                    value: format!("{name:?}"),
                    rule: "but the body names it twice".into(),
                }
                .into());
            }
            match added.get(name) {
                Some(&was) if was != *exclusive => {
                    return Err(LabelError::Exists {
                        label: name.clone(),
                        exclusive: was,
                    });
                }
                _ => {
                    added.insert(name.clone(), *exclusive);
                }
            }
        }
        limits::at_most(
            "the cluster's node labels",
            added.len(),
            limits::MAX_NODE_LABELS,
        )?;
        if added != self.labels.labels {
            self.labels.labels = added;
            durable::labels_changed(&mut self.changes);
        }
        Ok(())
    }

    /// Removes labels, all or none: each must exist, and none may be held
    /// by a node (set on it or named by its agent), a queue's properties
    /// or an active app's asks — the refusal names who holds it.
    pub fn remove_node_labels(&mut self, names: &[String]) -> Result<(), LabelError> {
        for name in names {
            if !self.labels.labels.contains_key(name) {
                return Err(LabelError::Unknown(name.clone()));
            }
            let uses = self.label_uses(name);
            if !uses.is_empty() {
                return Err(LabelError::InUse {
                    label: name.clone(),
                    uses: uses.join("; "),
                });
            }
        }
        for name in names {
            self.labels.labels.remove(name);
        }
        if !names.is_empty() {
            durable::labels_changed(&mut self.changes);
        }
        Ok(())
    }

    /// Who holds `label`, at most a few of each kind, for a refusal.
    fn label_uses(&self, label: &str) -> Vec<String> {
        const SHOWN: usize = 5;
        fn listed(kind: &str, mut names: Vec<String>) -> Option<String> {
            if names.is_empty() {
                return None;
            }
            let more = names.len().saturating_sub(SHOWN);
            names.truncate(SHOWN);
            let tail = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            Some(format!("{kind} {}{tail}", names.join(", ")))
        }
        let nodes = self
            .nodes
            .values()
            .filter(|n| n.partition == label || n.agent.label == label)
            .map(|n| n.id.clone())
            .chain(
                self.labels
                    .assigned
                    .iter()
                    .filter(|(id, l)| *l == label && !self.nodes.contains_key(*id))
                    .map(|(id, _)| id.clone()),
            )
            .collect();
        let queues = self.queues.properties_naming_label(label);
        let apps = self
            .active
            .iter()
            .map(|&i| &self.apps[i])
            .filter(|app| app.asks.iter().any(|ask| ask.partition == label))
            .map(|app| app.id.clone())
            .collect();
        [
            listed("nodes", nodes),
            listed("queue properties", queues),
            listed("apps", apps),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// Sets each node's label (None: no label, the default partition), all
    /// or none. Every node must be registered or lost, every label the
    /// cluster's. Containers running on a node go on; what they hold counts
    /// in its new partition from now on, as in YARN.
    pub fn replace_node_labels(
        &mut self,
        mapping: &[(String, Option<String>)],
    ) -> Result<(), LabelError> {
        limits::at_most("nodeToLabels", mapping.len(), limits::MAX_NODES)?;
        for (node, label) in mapping {
            let known = self.nodes.contains_key(node)
                || self.lost_nodes.contains_key(node)
                || self.labels.assigned.contains_key(node);
            if !known {
                return Err(LabelError::UnknownNode(node.clone()));
            }
            if let Some(label) = label
                && !self.labels.labels.contains_key(label)
            {
                return Err(LabelError::Unknown(label.clone()));
            }
        }
        for (node, label) in mapping {
            let label = label.clone().unwrap_or_default();
            if let Some(live) = self.nodes.get_mut(node) {
                live.partition = label.clone();
            }
            self.labels.assigned.insert(node.clone(), label);
        }
        if !mapping.is_empty() {
            durable::labels_changed(&mut self.changes);
        }
        Ok(())
    }

    /// Drops what an administrator set on node `id` (its id is released).
    pub(super) fn forget_node_label(&mut self, id: &str) {
        if self.labels.assigned.remove(id).is_some() {
            durable::labels_changed(&mut self.changes);
        }
    }

    /// The partition node `id` is in now that it registers (its agent
    /// naming `declared`): an administrator's label if one was set, else
    /// the declared one.
    pub(super) fn partition_of(&self, id: &str, declared: &str) -> String {
        self.labels.assigned(id).unwrap_or(declared).to_string()
    }

    /// Puts back the stored labels (`durable.rs`).
    pub(super) fn restore_labels(&mut self, labels: NodeLabels) {
        self.labels = labels;
        for node in self.nodes.values_mut() {
            if let Some(label) = self.labels.assigned.get(&node.id) {
                node.partition = label.clone();
            }
        }
    }

    /// Whether an ask for `partition` may run on a node in `node_partition`:
    /// the same one, or the default partition on a non-exclusive label's
    /// idle room.
    pub fn may_run_on(&self, partition: &str, node_partition: &str) -> bool {
        partition == node_partition
            || (partition.is_empty() && self.labels.exclusive(node_partition) == Some(false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::NodeKind;
    use crate::queues::QueueTree;
    use crate::resources::Resources;

    fn cluster() -> Cluster {
        let mut cluster = Cluster::new(
            1,
            QueueTree::from_properties(&crate::queues::QueueProperties::defaults()).unwrap(),
        );
        for id in ["n1", "n2"] {
            cluster
                .register_node(id, NodeKind::Simulated, Resources::new(1024, 1, 0), "t", 0)
                .unwrap();
        }
        cluster
    }

    #[test]
    fn labels_are_added_set_and_removed_all_or_nothing() {
        let mut cluster = cluster();
        cluster
            .add_node_labels(&[("gpu".into(), true), ("spare".into(), false)])
            .unwrap();
        // Again, the same: nothing changes; the other exclusivity: refused.
        cluster.add_node_labels(&[("gpu".into(), true)]).unwrap();
        let error = cluster
            .add_node_labels(&[("x".into(), true), ("gpu".into(), false)])
            .unwrap_err();
        assert!(matches!(error, LabelError::Exists { .. }), "{error}");
        assert_eq!(
            cluster.node_labels().exclusive("x"),
            None,
            "nothing half-added"
        );
        let error = cluster
            .add_node_labels(&[("-bad".into(), true)])
            .unwrap_err();
        assert!(
            error.to_string().contains("nodeLabelInfo[0].name"),
            "{error}"
        );

        // A node of an unknown label, or an unknown node: nothing set.
        let error = cluster
            .replace_node_labels(&[
                ("n1".into(), Some("gpu".into())),
                ("n2".into(), Some("nope".into())),
            ])
            .unwrap_err();
        assert_eq!(error, LabelError::Unknown("nope".into()));
        assert_eq!(cluster.node("n1").unwrap().partition, "");
        let error = cluster
            .replace_node_labels(&[("n9".into(), None)])
            .unwrap_err();
        assert_eq!(error, LabelError::UnknownNode("n9".into()));

        cluster
            .replace_node_labels(&[("n1".into(), Some("gpu".into()))])
            .unwrap();
        assert_eq!(cluster.node("n1").unwrap().partition, "gpu");
        // In use by n1: refused, naming it; spare goes with it: kept too.
        let error = cluster
            .remove_node_labels(&["spare".into(), "gpu".into()])
            .unwrap_err();
        assert!(error.to_string().contains("nodes n1"), "{error}");
        assert_eq!(cluster.node_labels().exclusive("spare"), Some(false));
        cluster.replace_node_labels(&[("n1".into(), None)]).unwrap();
        cluster
            .remove_node_labels(&["spare".into(), "gpu".into()])
            .unwrap();
        assert!(cluster.node_labels().is_empty());
    }

    #[test]
    fn a_refresh_that_strands_a_waiting_ask_and_a_labelled_reservation_app_are_refused() {
        let queues = |labels: &str| {
            let mut properties = crate::queues::QueueProperties::defaults();
            properties.set(
                "yarn.scheduler.capacity.root.default.accessible-node-labels",
                labels,
            );
            QueueTree::from_properties(&properties).unwrap()
        };
        let mut cluster = Cluster::new(1, queues("gpu"));
        cluster.add_node_labels(&[("gpu".into(), true)]).unwrap();
        let ask = crate::cluster::AskSpec::sized(1, 1024, 1, 0, 1000);
        let request = crate::cluster::SubmitApp {
            node_label_expression: Some("gpu".into()),
            ..crate::cluster::SubmitApp::new("u", "default", "p", vec![ask])
        };
        let in_reservation = crate::cluster::SubmitApp {
            reservation_id: Some("r".into()),
            ..request.clone()
        };
        let refused = cluster.submit(in_reservation, "t", 0).unwrap_err();
        assert!(
            refused.to_string().contains("cannot be reserved"),
            "{refused}"
        );
        cluster.submit(request, "t", 0).unwrap();
        let refused = cluster.replace_queues(queues(" "), 0).unwrap_err();
        assert!(
            refused.to_string().contains("may no longer use"),
            "{refused}"
        );
        assert!(
            cluster.queues().queues()[1].partitions.may_use("gpu"),
            "kept"
        );
    }

    #[test]
    fn default_asks_borrow_only_non_exclusive_room() {
        let mut cluster = cluster();
        cluster
            .add_node_labels(&[("gpu".into(), true), ("spare".into(), false)])
            .unwrap();
        assert!(cluster.may_run_on("", ""));
        assert!(cluster.may_run_on("", "spare"));
        assert!(!cluster.may_run_on("", "gpu"));
        assert!(cluster.may_run_on("gpu", "gpu"));
        assert!(!cluster.may_run_on("gpu", ""));
        assert!(!cluster.may_run_on("spare", ""));
    }
}
