//! The Capacity Scheduler's queue tree, configured with YARN's property names
//! (`yarn.scheduler.capacity.<queue-path>.<attribute>`), from Weft's TOML
//! config or a Hadoop `capacity-scheduler.xml`, and validated as the Capacity
//! Scheduler documentation states: at every level the children's capacities
//! sum to 100, each is at least 1, and maximum-capacity is at least capacity.

pub mod auto_creation;
pub mod mutation;
mod partitions;
pub mod placement;
mod properties;
mod tree;

pub use partitions::{QueuePartitions, Share};
pub use properties::{PREFIX, QueueProperties};
pub use tree::{
    DEFAULT_NODE_LOCALITY_DELAY, Ordering, Queue, QueueState, QueueTree, ReservationSettings,
};

use std::collections::BTreeMap;
use std::path::Path;

/// The queue tree the configuration describes: see [`load_properties`].
pub fn load(
    queues_file: Option<&Path>,
    overrides: &BTreeMap<String, String>,
) -> Result<QueueTree, QueueError> {
    let tree = QueueTree::from_properties(&load_properties(queues_file, overrides)?)?;
    auto_creation::check_templates(&tree)?;
    Ok(tree)
}

/// The queue properties the configuration gives: the `--queues` file's
/// (or, when nothing declares `root.queues`, the default root.default at
/// 100 %) overlaid with `overrides` (the config file's and `--set`'s).
pub fn load_properties(
    queues_file: Option<&Path>,
    overrides: &BTreeMap<String, String>,
) -> Result<QueueProperties, QueueError> {
    let mut properties = match queues_file {
        Some(path) => QueueProperties::from_file(path)?,
        None => QueueProperties::default(),
    };
    for (name, value) in overrides {
        properties.set(name, value);
    }
    if properties.get(&format!("{PREFIX}root.queues")).is_none() {
        let mut defaults = QueueProperties::defaults();
        defaults.extend(&properties);
        properties = defaults;
    }
    Ok(properties)
}

/// Why a queue configuration was refused. Every message names the property.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum QueueError {
    /// A property that is no queue attribute Weft knows, or (in a file)
    /// not under `yarn.scheduler.capacity.` at all.
    #[error("{property}: unknown property (not a queue attribute Weft knows)")]
    UnknownAttribute {
        /// The property's full name.
        property: String,
    },
    /// A property of a queue that no parent's `.queues` declares.
    #[error("{property}: no queue {queue:?} is declared (declare it in its parent's .queues)")]
    UnknownQueue {
        /// The property's full name.
        property: String,
        /// The undeclared queue's path.
        queue: String,
    },
    /// A property whose value is refused (not a number, out of range, a
    /// bad queue name, …).
    #[error("{property}: {reason}")]
    BadValue {
        /// The property's full name.
        property: String,
        /// What is wrong with its value.
        reason: String,
    },
    /// A queue below root with no `capacity`.
    #[error("{property} is missing: every queue below root needs a capacity")]
    MissingCapacity {
        /// The missing `….capacity` property's full name.
        property: String,
    },
    /// Children's capacities that do not sum to 100.
    #[error("the capacities of the children of {parent} sum to {sum}, not 100 ({properties})")]
    CapacitySum {
        /// The parent queue's path.
        parent: String,
        /// What the children's capacities sum to, in percent.
        sum: f64,
        /// Each child's capacity property as `name=value`, comma-separated.
        properties: String,
    },
    /// Children's capacities of a node label that do not sum to what their
    /// parent holds of it (100 where it holds some, else 0).
    #[error(
        "the capacities of label {label:?} of the children of {parent} sum to {sum}, not {expected} (the parent holds {held}% of it; {properties})"
    )]
    LabelCapacitySum {
        /// The parent queue's path.
        parent: String,
        /// The label.
        label: String,
        /// The parent's capacity of it, in percent.
        held: f64,
        /// What the children's capacities of it sum to.
        sum: f64,
        /// What they must sum to: 100 or 0.
        expected: f64,
        /// Each child's capacity property of it as `name=value`.
        properties: String,
    },
    /// Two leaf queues with one name (apps name a leaf by its name alone).
    #[error(
        "queue name {name:?} is used by two leaf queues ({first} and {second}); leaf names must be unique"
    )]
    DuplicateLeaf {
        /// The name both leaves have.
        name: String,
        /// The first leaf's path.
        first: String,
        /// The second leaf's path.
        second: String,
    },
    /// A queue configuration file that cannot be read or parsed.
    #[error("cannot read queue configuration {path}: {reason}")]
    File {
        /// The file's path.
        path: String,
        /// Why it cannot be read.
        reason: String,
    },
}
