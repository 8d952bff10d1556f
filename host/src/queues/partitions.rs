//! Queues' shares of node labels (YARN's partitions), with YARN's property
//! names: the labels a queue may use (`accessible-node-labels`, `*` for
//! all, inherited from the parent when unset, root's `*`), its capacity and
//! maximum of each (`accessible-node-labels.<label>.capacity`, default 0,
//! and `.maximum-capacity`, default 100, percent of the parent's share of
//! that label), and the label its apps get when they name none
//! (`default-node-label-expression`, inherited). The default partition
//! ("") is the queue's plain `capacity` and `maximum-capacity`.
//!
//! Labels named here need not exist in the cluster yet (labels are added at
//! run time, as in YARN); one that does not holds nothing.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::tree::Queue;
use super::{PREFIX, QueueError, QueueProperties};

/// What a queue may use of the labels, and the label its apps default to.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct QueuePartitions {
    /// The labels it may use; None for every label (`*`).
    pub accessible: Option<BTreeSet<String>>,
    /// Its configured shares of labels, by label (only labels it may use).
    pub shares: BTreeMap<String, Share>,
    /// The label an app or ask naming none runs in; "" for the default
    /// partition.
    pub default_label_expression: String,
}

/// A queue's share of one partition, as percentages: of its parent's share
/// (`capacity`, `maximum_capacity`) and of the whole partition (absolute).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Share {
    /// Guaranteed, percent of the parent's.
    pub capacity: f64,
    /// At most, percent of the parent's.
    pub maximum_capacity: f64,
    /// Guaranteed, percent of the partition.
    pub absolute_capacity: f64,
    /// At most, percent of the partition.
    pub absolute_maximum_capacity: f64,
}

/// A label's share when a queue that may use it configures none (YARN's
/// defaults: capacity 0, maximum 100).
const UNCONFIGURED: (f64, f64) = (0.0, 100.0);

/// The attribute under which per-label properties go.
pub(super) const ACCESSIBLE: &str = "accessible-node-labels";
/// The attribute naming the label apps default to.
pub(super) const DEFAULT_EXPRESSION: &str = "default-node-label-expression";

impl QueuePartitions {
    /// Whether the queue may use `label` ("" always).
    pub fn may_use(&self, label: &str) -> bool {
        label.is_empty()
            || self
                .accessible
                .as_ref()
                .is_none_or(|labels| labels.contains(label))
    }
}

/// Reads every queue's partition properties (after their capacities are
/// configured: parents before children), then checks that at every level
/// the children's capacities of a label sum to 100 where any is set.
pub(super) fn configure(
    queues: &mut [Queue],
    properties: &QueueProperties,
) -> Result<(), QueueError> {
    for index in 0..queues.len() {
        let parent = queues[index].parent.map(|p| queues[p].partitions.clone());
        let partitions = read(&queues[index].path, parent.as_ref(), properties)?;
        queues[index].partitions = partitions;
    }
    check_sums(queues)
}

fn read(
    path: &str,
    parent: Option<&QueuePartitions>,
    properties: &QueueProperties,
) -> Result<QueuePartitions, QueueError> {
    let key = |attribute: &str| format!("{PREFIX}{path}.{attribute}");
    let bad = |property: String, reason: String| QueueError::BadValue { property, reason };
    let accessible = match properties.get(&key(ACCESSIBLE)) {
        None => parent.and_then(|p| p.accessible.clone()),
        Some(text) if text.trim() == "*" => {
            if parent.is_some_and(|p| p.accessible.is_some()) {
                return Err(bad(
                    key(ACCESSIBLE),
                    "\"*\" (every label) is more than the parent queue may use; name the labels"
                        .into(),
                ));
            }
            None
        }
        Some(text) => {
            let mut labels = BTreeSet::new();
            for label in text.split(',').map(str::trim).filter(|l| !l.is_empty()) {
                crate::limits::node_label(key(ACCESSIBLE), label)
                    .map_err(|e| bad(key(ACCESSIBLE), e.to_string()))?;
                labels.insert(label.to_string());
            }
            crate::limits::at_most(
                key(ACCESSIBLE),
                labels.len(),
                crate::limits::MAX_NODE_LABELS,
            )
            .map_err(|e| bad(key(ACCESSIBLE), e.to_string()))?;
            Some(labels)
        }
    };
    if let (Some(parent), Some(labels)) = (parent, &accessible)
        && let Some(label) = labels.iter().find(|l| !parent.may_use(l))
    {
        return Err(bad(
            key(ACCESSIBLE),
            format!("label {label:?} is not accessible to the parent queue, so not to this one"),
        ));
    }
    let mut partitions = QueuePartitions {
        accessible,
        shares: BTreeMap::new(),
        default_label_expression: String::new(),
    };
    // Per-label properties: `accessible-node-labels.<label>.<attribute>`.
    let prefix = format!("{}.", key(ACCESSIBLE));
    let mut configured: BTreeMap<String, (Option<f64>, Option<f64>)> = BTreeMap::new();
    for (property, text) in properties.with_prefix(&prefix) {
        let Some(rest) = property.strip_prefix(&prefix) else {
            continue;
        };
        let (label, attribute) = rest.rsplit_once('.').unwrap_or((rest, ""));
        crate::limits::node_label(property, label)
            .map_err(|e| bad(property.into(), e.to_string()))?;
        let value = || super::tree::percent(property, text);
        let entry = configured.entry(label.to_string()).or_default();
        match attribute {
            "capacity" => entry.0 = Some(value()?),
            "maximum-capacity" if text.trim() == "-1" => entry.1 = Some(100.0),
            "maximum-capacity" => entry.1 = Some(value()?),
            _ => {
                return Err(QueueError::UnknownAttribute {
                    property: property.into(),
                });
            }
        }
        if !partitions.may_use(label) {
            return Err(bad(
                property.into(),
                format!("the queue may not use label {label:?} (add it to {ACCESSIBLE})"),
            ));
        }
    }
    let is_root = parent.is_none();
    for (label, (capacity, maximum)) in configured {
        let capacity = capacity.unwrap_or(UNCONFIGURED.0);
        let maximum = maximum.unwrap_or(UNCONFIGURED.1);
        if is_root && (capacity != 100.0 || maximum != 100.0) {
            return Err(bad(
                format!("{prefix}{label}.capacity"),
                "root holds all of every label: its capacity and maximum-capacity of a label are 100".into(),
            ));
        }
        if maximum < capacity {
            return Err(bad(
                format!("{prefix}{label}.maximum-capacity"),
                format!("{maximum} is below the queue's capacity {capacity} of label {label:?}"),
            ));
        }
        partitions.shares.insert(
            label,
            Share {
                capacity,
                maximum_capacity: maximum,
                absolute_capacity: 0.0,
                absolute_maximum_capacity: 0.0,
            },
        );
    }
    partitions.default_label_expression = match properties.get(&key(DEFAULT_EXPRESSION)) {
        Some(text) => {
            let label = crate::limits::node_label_expression(key(DEFAULT_EXPRESSION), text)
                .map_err(|e| bad(key(DEFAULT_EXPRESSION), e.to_string()))?;
            if !partitions.may_use(&label) {
                return Err(bad(
                    key(DEFAULT_EXPRESSION),
                    format!("the queue may not use label {label:?} (add it to {ACCESSIBLE})"),
                ));
            }
            label
        }
        None => parent
            .map(|p| p.default_label_expression.clone())
            .filter(|label| partitions.may_use(label))
            .unwrap_or_default(),
    };
    Ok(partitions)
}

/// At every level, as YARN checks each partition: where the parent holds
/// some of a label (root holds all of every label a child names), its
/// children's capacities of it sum to 100; where it holds none, to 0.
fn check_sums(queues: &[Queue]) -> Result<(), QueueError> {
    // A parent that creates its children may have none yet.
    for parent in queues.iter().filter(|q| !q.children.is_empty()) {
        let mut sums: BTreeMap<&str, f64> = BTreeMap::new();
        for &child in &parent.children {
            for (label, share) in &queues[child].partitions.shares {
                *sums.entry(label).or_default() += share.capacity;
            }
        }
        if parent.parent.is_some() {
            for label in parent.partitions.shares.keys() {
                sums.entry(label).or_default();
            }
        }
        for (label, sum) in sums {
            let held = match parent.parent {
                None => 100.0,
                Some(_) => parent
                    .partitions
                    .shares
                    .get(label)
                    .map_or(0.0, |s| s.capacity),
            };
            let expected = if held > 0.0 { 100.0 } else { 0.0 };
            if (sum - expected).abs() > 1e-6 {
                let properties = parent
                    .children
                    .iter()
                    .filter_map(|&c| {
                        let share = queues[c].partitions.shares.get(label)?;
                        Some(format!(
                            "{PREFIX}{}.{ACCESSIBLE}.{label}.capacity={}",
                            queues[c].path, share.capacity
                        ))
                    })
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(QueueError::LabelCapacitySum {
                    parent: parent.path.clone(),
                    label: label.into(),
                    held,
                    sum,
                    expected,
                    properties: if properties.is_empty() {
                        "none is set".into()
                    } else {
                        properties
                    },
                });
            }
        }
    }
    Ok(())
}

/// Every queue's share of `label` (root first, parents before children),
/// None for a queue that may not use it; "" is the default partition (the
/// queues' own capacities).
pub(super) fn shares_of(queues: &[Queue], label: &str) -> Vec<Option<Share>> {
    let mut shares: Vec<Option<Share>> = Vec::with_capacity(queues.len());
    for queue in queues {
        let own = if label.is_empty() {
            Some((queue.capacity, queue.maximum_capacity))
        } else if queue.partitions.may_use(label) {
            let configured = queue.partitions.shares.get(label);
            Some(configured.map_or(UNCONFIGURED, |s| (s.capacity, s.maximum_capacity)))
        } else {
            None
        };
        let share = own.and_then(|(capacity, maximum)| {
            let (parent_absolute, parent_maximum) = match queue.parent {
                None => (100.0, 100.0),
                Some(parent) => {
                    let parent = shares[parent]?;
                    (parent.absolute_capacity, parent.absolute_maximum_capacity)
                }
            };
            let (capacity, maximum) = if queue.parent.is_none() {
                (100.0, 100.0)
            } else {
                (capacity, maximum)
            };
            Some(Share {
                capacity,
                maximum_capacity: maximum,
                absolute_capacity: parent_absolute * capacity / 100.0,
                // As the default partition's (tree.rs): a share of the
                // parent's guarantee, never above the parent's maximum.
                absolute_maximum_capacity: (parent_absolute * maximum / 100.0).min(parent_maximum),
            })
        });
        shares.push(share);
    }
    shares
}

/// The properties of `queues` that name `label`, for a refusal to remove it.
pub(super) fn properties_naming(queues: &[Queue], label: &str) -> Vec<String> {
    let mut named = Vec::new();
    for queue in queues {
        let partitions = &queue.partitions;
        let explicit = partitions
            .accessible
            .as_ref()
            .is_some_and(|labels| labels.contains(label));
        // Inherited lists name it only where they are set.
        let parent_has = queue.parent.is_some_and(|p| {
            queues[p]
                .partitions
                .accessible
                .as_ref()
                .is_some_and(|labels| labels.contains(label))
        });
        if explicit && !parent_has {
            named.push(format!("{PREFIX}{}.{ACCESSIBLE}", queue.path));
        }
        if partitions.shares.contains_key(label) {
            named.push(format!("{PREFIX}{}.{ACCESSIBLE}.{label}.*", queue.path));
        }
        if partitions.default_label_expression == label
            && queue
                .parent
                .is_none_or(|p| queues[p].partitions.default_label_expression != label)
        {
            named.push(format!("{PREFIX}{}.{DEFAULT_EXPRESSION}", queue.path));
        }
    }
    named
}

#[cfg(test)]
mod tests {
    use super::super::{QueueProperties, QueueTree};

    fn tree(pairs: &[(&str, &str)]) -> Result<QueueTree, super::QueueError> {
        let mut properties = QueueProperties::default();
        for (name, value) in pairs {
            properties.set(&format!("yarn.scheduler.capacity.{name}"), value);
        }
        QueueTree::from_properties(&properties)
    }

    const TWO: [(&str, &str); 3] = [
        ("root.queues", "eng,ops"),
        ("root.eng.capacity", "60"),
        ("root.ops.capacity", "40"),
    ];

    #[test]
    fn shares_of_a_label_inherit_access_and_default_as_yarn() {
        let mut pairs = TWO.to_vec();
        pairs.extend([
            ("root.eng.accessible-node-labels", "gpu"),
            ("root.eng.accessible-node-labels.gpu.capacity", "100"),
            ("root.eng.default-node-label-expression", "gpu"),
            ("root.eng.queues", "ml,web"),
            ("root.eng.ml.capacity", "50"),
            ("root.eng.web.capacity", "50"),
            ("root.eng.ml.accessible-node-labels.gpu.capacity", "75"),
            (
                "root.eng.ml.accessible-node-labels.gpu.maximum-capacity",
                "90",
            ),
            ("root.eng.web.accessible-node-labels.gpu.capacity", "25"),
            ("root.ops.accessible-node-labels", " "),
        ]);
        let tree = tree(&pairs).unwrap();
        let gpu = tree.partition_shares("gpu");
        let at = |path: &str| tree.queues().iter().position(|q| q.path == path).unwrap();
        assert_eq!(gpu[0].unwrap().absolute_capacity, 100.0);
        assert_eq!(gpu[at("root.eng")].unwrap().absolute_capacity, 100.0);
        let ml = gpu[at("root.eng.ml")].unwrap();
        assert_eq!(
            (ml.absolute_capacity, ml.absolute_maximum_capacity),
            (75.0, 90.0)
        );
        assert!(gpu[at("root.ops")].is_none(), "ops may use no label");
        // ml inherits eng's list and default label.
        let ml = &tree.queues()[at("root.eng.ml")];
        assert!(ml.partitions.may_use("gpu") && !ml.partitions.may_use("ssd"));
        assert_eq!(ml.partitions.default_label_expression, "gpu");
        // The default partition's shares are the queues' own.
        let plain = tree.partition_shares("");
        assert_eq!(plain[at("root.eng.ml")].unwrap().absolute_capacity, 30.0);
        // Root's "*": a queue that configures nothing may use any label,
        // with none of it guaranteed (YARN's capacity 0, maximum 100).
        let tree = super::super::QueueTree::from_properties(&{
            let mut p = QueueProperties::default();
            for (name, value) in TWO {
                p.set(&format!("yarn.scheduler.capacity.{name}"), value);
            }
            p
        })
        .unwrap();
        let ssd = tree.partition_shares("ssd")[1].unwrap();
        assert_eq!(
            (ssd.absolute_capacity, ssd.absolute_maximum_capacity),
            (0.0, 100.0)
        );
    }

    #[test]
    fn bad_label_properties_are_refused_naming_the_property() {
        let refused = |extra: &[(&str, &str)], names: &str| {
            let mut pairs = TWO.to_vec();
            pairs.extend_from_slice(extra);
            let error = tree(&pairs).unwrap_err().to_string();
            assert!(error.contains(names), "{error:?} should name {names:?}");
        };
        refused(
            &[("root.eng.accessible-node-labels.gpu.capacity", "60")],
            "label \"gpu\" of the children of root sum to 60, not 100",
        );
        refused(
            &[
                ("root.eng.accessible-node-labels", "ssd"),
                ("root.eng.accessible-node-labels.gpu.capacity", "100"),
            ],
            "root.eng.accessible-node-labels.gpu.capacity: the queue may not use label \"gpu\"",
        );
        refused(
            &[
                ("root.eng.accessible-node-labels", "ssd"),
                ("root.eng.queues", "ml"),
                ("root.eng.ml.capacity", "100"),
                ("root.eng.ml.accessible-node-labels", "gpu"),
            ],
            "root.eng.ml.accessible-node-labels: label \"gpu\" is not accessible to the parent",
        );
        refused(
            &[
                ("root.eng.accessible-node-labels", ""),
                ("root.eng.default-node-label-expression", "gpu"),
            ],
            "root.eng.default-node-label-expression: the queue may not use label \"gpu\"",
        );
        refused(
            &[("root.eng.default-node-label-expression", "gpu && ssd")],
            "&& and || are not supported",
        );
        refused(
            &[("root.eng.accessible-node-labels", "-x")],
            "node label is 1 to 255",
        );
        refused(
            &[("root.eng.accessible-node-labels.gpu.weight", "3")],
            "root.eng.accessible-node-labels.gpu.weight: unknown property",
        );
        refused(
            &[
                ("root.eng.accessible-node-labels.gpu.capacity", "100"),
                ("root.eng.accessible-node-labels.gpu.maximum-capacity", "50"),
            ],
            "50 is below the queue's capacity 100",
        );
        refused(
            &[("root.accessible-node-labels.gpu.capacity", "50")],
            "root holds all of every label",
        );
        refused(
            &[
                ("root.eng.accessible-node-labels", "gpu"),
                ("root.eng.queues", "ml"),
                ("root.eng.ml.capacity", "100"),
                ("root.eng.ml.accessible-node-labels", "*"),
            ],
            "root.eng.ml.accessible-node-labels: \"*\" (every label) is more than the parent",
        );
        // eng holds all of gpu, but none of its children has any of it.
        refused(
            &[
                ("root.eng.accessible-node-labels.gpu.capacity", "100"),
                ("root.eng.queues", "ml"),
                ("root.eng.ml.capacity", "100"),
            ],
            "label \"gpu\" of the children of root.eng sum to 0, not 100",
        );
        // ops holds none of gpu, but its child claims all of it.
        refused(
            &[
                ("root.eng.accessible-node-labels.gpu.capacity", "100"),
                ("root.eng.queues", "ml"),
                ("root.eng.ml.capacity", "100"),
                ("root.eng.ml.accessible-node-labels.gpu.capacity", "100"),
                ("root.ops.queues", "x"),
                ("root.ops.x.capacity", "100"),
                ("root.ops.x.accessible-node-labels.gpu.capacity", "100"),
            ],
            "label \"gpu\" of the children of root.ops sum to 100, not 0",
        );
    }
}
