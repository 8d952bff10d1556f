//! The Capacity Scheduler's queue tree, configured with YARN's property names
//! (`yarn.scheduler.capacity.<queue-path>.<attribute>`), from Weft's TOML
//! config or a Hadoop `capacity-scheduler.xml`, and validated as the Capacity
//! Scheduler documentation states: at every level the children's capacities
//! sum to 100, each is at least 1, and maximum-capacity is at least capacity.

mod properties;
mod tree;

pub use properties::{PREFIX, QueueProperties};
pub use tree::{Ordering, Queue, QueueState, QueueTree, ReservationSettings};

use std::collections::BTreeMap;
use std::path::Path;

/// The queue tree in force: the `--queues` file's properties (or, when
/// nothing declares `root.queues`, the default root.default at 100 %)
/// overlaid with `overrides` (the config file's and `--set`'s).
pub fn load(
    queues_file: Option<&Path>,
    overrides: &BTreeMap<String, String>,
) -> Result<QueueTree, QueueError> {
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
    QueueTree::from_properties(&properties)
}

/// Why a queue configuration was refused. Every message names the property.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum QueueError {
    #[error("{property}: unknown property (not a queue attribute Weft knows)")]
    UnknownAttribute { property: String },
    #[error("{property}: no queue {queue:?} is declared (declare it in its parent's .queues)")]
    UnknownQueue { property: String, queue: String },
    #[error("{property}: {reason}")]
    BadValue { property: String, reason: String },
    #[error("{property} is missing: every queue below root needs a capacity")]
    MissingCapacity { property: String },
    #[error("the capacities of the children of {parent} sum to {sum}, not 100 ({properties})")]
    CapacitySum {
        parent: String,
        sum: f64,
        properties: String,
    },
    #[error(
        "queue name {name:?} is used by two leaf queues ({first} and {second}); leaf names must be unique"
    )]
    DuplicateLeaf {
        name: String,
        first: String,
        second: String,
    },
    #[error("cannot read queue configuration {path}: {reason}")]
    File { path: String, reason: String },
}
