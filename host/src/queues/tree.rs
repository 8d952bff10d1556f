//! The validated queue tree: each queue's configured and absolute capacities,
//! limits, ACLs and state, with its parent and children.

use serde::Serialize;

use super::{PREFIX, QueueError, QueueProperties};

/// How a leaf queue orders its apps (YARN's `ordering-policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Ordering {
    /// By priority, then submission time (`fifo`, the default).
    Fifo,
    /// Fairly between apps (`fair`).
    Fair,
}

impl Ordering {
    /// The name as configured and reported: `fifo` or `fair`.
    pub fn as_str(self) -> &'static str {
        match self {
            Ordering::Fifo => "fifo",
            Ordering::Fair => "fair",
        }
    }
}

/// A queue's `state`, as YARN's QueueState.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum QueueState {
    /// Takes new apps (the default).
    Running,
    /// Refuses new apps.
    Stopped,
}

impl QueueState {
    /// The name as configured and reported: `RUNNING` or `STOPPED`.
    pub fn as_str(self) -> &'static str {
        match self {
            QueueState::Running => "RUNNING",
            QueueState::Stopped => "STOPPED",
        }
    }
}

/// One queue of the tree with its configured and derived figures (YARN's
/// CSQueue).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Queue {
    /// Full path, e.g. `root.engineering.development`.
    pub path: String,
    /// The last component, by which apps name a leaf queue.
    pub name: String,
    /// The parent's index in [`QueueTree::queues`]; None for root.
    #[serde(skip)]
    pub parent: Option<usize>,
    /// The children's indexes in [`QueueTree::queues`]; empty for a leaf.
    #[serde(skip)]
    pub children: Vec<usize>,
    /// Percent of the parent's capacity guaranteed (for a queue configured
    /// by weight, its weight's share of its siblings' weights).
    pub capacity: f64,
    /// Its `capacity` as a weight (YARN's `2.5w`), if it is configured so:
    /// its siblings are then too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight: Option<f64>,
    /// Percent of the parent's capacity this queue may grow to.
    pub maximum_capacity: f64,
    /// Percent of the cluster guaranteed (the product down the tree).
    pub absolute_capacity: f64,
    /// Percent of the cluster this queue may grow to.
    pub absolute_maximum_capacity: f64,
    /// `minimum-user-limit-percent`: the least share of the queue, in
    /// percent (1 to 100, default 100), a user is guaranteed when users
    /// compete.
    pub minimum_user_limit_percent: f64,
    /// `user-limit-factor`: how many times the queue's guarantee one user
    /// may hold (above 0, default 1).
    pub user_limit_factor: f64,
    /// `priority`: the queue's priority (default 0), as the scheduler API
    /// reports it.
    pub priority: i32,
    /// `ordering-policy`: how the queue orders its apps.
    pub ordering_policy: Ordering,
    /// `maximum-applications`: the most active apps the queue holds; by
    /// default its absolute capacity's share of the scheduler-wide
    /// maximum (10,000).
    pub maximum_applications: u64,
    /// `state`: whether the queue takes new apps; STOPPED also when an
    /// ancestor is (YARN's effective state).
    pub state: QueueState,
    /// `acl_submit_applications`: who may submit to the queue, in YARN's ACL
    /// syntax (default `*` for root, nobody for the others).
    pub acl_submit_applications: String,
    /// `acl_administer_queue`: who administers the queue, in YARN's ACL
    /// syntax (default `*` for root, nobody for the others).
    pub acl_administer_queue: String,
    /// `disable_preemption`: reclaim takes no container of this queue's
    /// apps (inherited: a queue without its own setting has its parent's;
    /// root's is false).
    pub preemption_disabled: bool,
    /// Set when the queue is `reservable`: the settings of its plan.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reservations: Option<ReservationSettings>,
    /// `maximum-application-lifetime`: the longest an app of this queue
    /// lives, in seconds from its submission; a longer lifetime asked for
    /// is cut to it. None when it is 0 or unset here and on every parent
    /// (a queue inherits its parent's when its own is unset or negative).
    pub maximum_application_lifetime_s: Option<u64>,
    /// `default-application-lifetime`: the lifetime of an app that asks
    /// for none, in seconds (inherited as the maximum is); never above the
    /// maximum, and the maximum itself when unset.
    pub default_application_lifetime_s: Option<u64>,
    /// Its shares of node labels and the label its apps default to
    /// (`partitions.rs`).
    pub partitions: super::partitions::QueuePartitions,
    /// Set when the queue creates leaves for apps placed in ones it lacks
    /// (`auto-queue-creation-v2.enabled`): it is a parent then, with or
    /// without children.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_creation: Option<super::auto_creation::AutoCreation>,
}

/// A reservable queue's settings, with YARN's property names.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReservationSettings {
    /// `reservation-window`: the averaging window of capacity-over-time, ms.
    pub window_ms: i64,
    /// `instantaneous-max-capacity`: percent of the queue's capacity one user
    /// may hold at any instant.
    pub instantaneous_max_capacity: f64,
    /// `average-capacity`: percent of the queue's capacity one user may hold
    /// on average over any window.
    pub average_capacity: f64,
    /// `reservation-policy`: this queue's own sharing policy (`builtin:NAME`,
    /// a file, or a YARN class name); None means the host's sharing slot.
    pub policy: Option<String>,
    /// `reservation-agent`: only the greedy agent exists; kept as configured.
    pub agent: String,
    /// `reservation-move-on-expiry`: when a reservation ends, its apps move
    /// to the queue itself (true) or are killed (false).
    pub move_on_expiry: bool,
}

/// YARN's defaults: a day's window, 100 % for both limits, move on expiry.
const DEFAULT_RESERVATION_WINDOW_MS: i64 = 86_400_000;
/// The agents Weft accepts for `reservation-agent`: its greedy agent, under
/// its own name or the YARN classes it stands in for.
const RESERVATION_AGENTS: &[&str] = &[
    "greedy",
    "org.apache.hadoop.yarn.server.resourcemanager.reservation.planning.AlignedPlannerWithGreedy",
    "org.apache.hadoop.yarn.server.resourcemanager.reservation.planning.GreedyReservationAgent",
];

impl Queue {
    /// Whether the queue has no children and creates none (apps run only
    /// in leaves).
    pub fn is_leaf(&self) -> bool {
        self.children.is_empty() && self.auto_creation.is_none()
    }

    /// The lifetime, in seconds, of an app submitted here asking for
    /// `requested` (YARN's CapacityScheduler.checkAndGetApplicationLifetime):
    /// what it asks for, cut to the queue's maximum; the queue's default
    /// when it asks for none; None for no lifetime.
    pub fn lifetime_s(&self, requested: Option<u64>) -> Option<u64> {
        match (
            requested.filter(|&s| s > 0),
            self.maximum_application_lifetime_s,
        ) {
            (Some(asked), Some(maximum)) => Some(asked.min(maximum)),
            (Some(asked), None) => Some(asked),
            (None, _) => self.default_application_lifetime_s,
        }
    }
}

/// Attributes Weft reads; the reservation ones are kept for the reservation
/// system, as are those Hadoop files commonly carry.
const QUEUE_ATTRIBUTES: &[&str] = &[
    "queues",
    "capacity",
    "maximum-capacity",
    "minimum-user-limit-percent",
    "user-limit-factor",
    "acl_submit_applications",
    "acl_administer_queue",
    "priority",
    "ordering-policy",
    "maximum-applications",
    "state",
    "maximum-am-resource-percent",
    "default-application-priority",
    "disable_preemption",
    "reservable",
    "show-reservations-as-queues",
    "reservation-window",
    "instantaneous-max-capacity",
    "average-capacity",
    "reservation-policy",
    "reservation-agent",
    "reservation-planner",
    "reservation-move-on-expiry",
    "reservation-enforcement-window",
    "maximum-application-lifetime",
    "default-application-lifetime",
    super::partitions::ACCESSIBLE,
    super::partitions::DEFAULT_EXPRESSION,
];

/// Whether `name` may name a queue: letters, digits, `_` and `-` (no
/// dots: they separate a path's parts).
pub(super) fn is_queue_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Whether `attribute` (after a queue's path) is one of a queue's own:
/// a listed one, an ordering policy's, or a node label's.
fn is_queue_attribute(attribute: &str) -> bool {
    let per_label = attribute
        .strip_prefix(super::partitions::ACCESSIBLE)
        .is_some_and(|tail| tail.starts_with('.'));
    QUEUE_ATTRIBUTES.contains(&attribute) || attribute.starts_with("ordering-policy.") || per_label
}

/// Whether a template of `auto-queue-creation-v2` may give a new leaf
/// `attribute`: a leaf's own attributes (not `queues`, nor another
/// parent's auto-creation settings), and whether it goes once idle.
fn is_template_attribute(attribute: &str) -> bool {
    (is_queue_attribute(attribute) && attribute != "queues")
        || attribute == super::auto_creation::AUTO_REMOVAL
}

/// Properties that belong to the scheduler, not a queue.
const GLOBAL_ATTRIBUTES: &[&str] = &[
    super::auto_creation::EXPIRATION,
    "maximum-applications",
    "maximum-am-resource-percent",
    "resource-calculator",
    "node-locality-delay",
    "rack-locality-additional-delay",
    "queue-mappings",
    "queue-mappings-override.enable",
    "per-node-heartbeat.maximum-offswitch-assignments",
];

const DEFAULT_MAXIMUM_APPLICATIONS: u64 = 10_000;

pub use crate::config::DEFAULT_NODE_LOCALITY_DELAY;

/// The validated queue tree: every queue, root first, and the properties it
/// was built from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueueTree {
    queues: Vec<Queue>,
    /// The properties it was built from (YARN's scheduler-conf shows them).
    #[serde(skip)]
    properties: QueueProperties,
    /// Where apps go (`queue-mappings`).
    #[serde(skip)]
    pub placement: super::placement::Mappings,
    /// Delay scheduling (YARN's `node-locality-delay`, default 40): the
    /// scheduling opportunities an ask with locality misses before it may
    /// go to a node of its racks.
    pub node_locality_delay: u32,
    /// YARN's `rack-locality-additional-delay`: more missed opportunities
    /// before it may go anywhere; None (-1, the default) for YARN's
    /// L × C / N (its locations × its containers / the cluster's nodes).
    pub rack_locality_additional_delay: Option<u32>,
}

impl QueueTree {
    /// Builds and validates the tree `properties` describe.
    pub fn from_properties(properties: &QueueProperties) -> Result<QueueTree, QueueError> {
        let mut tree = QueueTree {
            queues: Vec::new(),
            properties: properties.clone(),
            placement: Default::default(),
            node_locality_delay: DEFAULT_NODE_LOCALITY_DELAY,
            rack_locality_additional_delay: None,
        };
        let delay = |name: &str| -> Result<Option<i64>, QueueError> {
            let property = format!("{PREFIX}{name}");
            let Some(text) = properties.get(&property) else {
                return Ok(None);
            };
            let value = parse::<i64>(&property, text, "a whole number")?;
            if !(-1..=i64::from(u32::MAX)).contains(&value) {
                return Err(QueueError::BadValue {
                    property,
                    reason: format!("{value} is not -1 or a count of scheduling opportunities"),
                });
            }
            Ok(Some(value))
        };
        if let Some(value) = delay("node-locality-delay")? {
            // -1 turns delay scheduling off in YARN: no wait for a node.
            tree.node_locality_delay = u32::try_from(value).unwrap_or(0);
        }
        tree.rack_locality_additional_delay =
            delay("rack-locality-additional-delay")?.and_then(|value| u32::try_from(value).ok());
        tree.declare("root", None, properties, 0)?;
        tree.check_every_property_belongs(properties)?;
        let maximum_applications = match properties.get(&format!("{PREFIX}maximum-applications")) {
            Some(value) => parse::<u64>(
                &format!("{PREFIX}maximum-applications"),
                value,
                "a whole number",
            )?,
            None => DEFAULT_MAXIMUM_APPLICATIONS,
        };
        let weighted = tree.weighted_capacities(properties)?;
        for (index, weighted) in weighted.into_iter().enumerate() {
            tree.configure(index, properties, maximum_applications, weighted)?;
        }
        super::partitions::configure(&mut tree.queues, properties)?;
        tree.check_capacities()?;
        tree.check_unique_leaves()?;
        super::auto_creation::expiration_ms(properties)?;
        tree.placement = super::placement::Mappings::read(&tree)?;
        Ok(tree)
    }

    fn declare(
        &mut self,
        path: &str,
        parent: Option<usize>,
        properties: &QueueProperties,
        depth: usize,
    ) -> Result<usize, QueueError> {
        let name = path.rsplit('.').next().unwrap_or(path).to_string();
        let index = self.queues.len();
        // YARN's defaults (CapacitySchedulerConfiguration.getAcl): root's
        // ACLs are "*", every other queue's " " (nobody), so access is
        // opened where it is configured and nowhere else.
        let default_acl = if parent.is_none() { "*" } else { " " };
        self.queues.push(Queue {
            path: path.to_string(),
            name,
            parent,
            children: Vec::new(),
            capacity: 100.0,
            weight: None,
            maximum_capacity: 100.0,
            absolute_capacity: 100.0,
            absolute_maximum_capacity: 100.0,
            minimum_user_limit_percent: 100.0,
            user_limit_factor: 1.0,
            priority: 0,
            ordering_policy: Ordering::Fifo,
            maximum_applications: DEFAULT_MAXIMUM_APPLICATIONS,
            state: QueueState::Running,
            acl_submit_applications: default_acl.into(),
            acl_administer_queue: default_acl.into(),
            preemption_disabled: false,
            reservations: None,
            maximum_application_lifetime_s: None,
            default_application_lifetime_s: None,
            partitions: Default::default(),
            auto_creation: None,
        });
        let queues_property = format!("{PREFIX}{path}.queues");
        if properties.get(&queues_property).is_some() {
            if depth > 32 {
                return Err(QueueError::BadValue {
                    property: queues_property,
                    reason: "queues nest too deep".into(),
                });
            }
            let mut listed = std::collections::HashSet::new();
            for child in properties.children_of(path) {
                if !is_queue_name(child) {
                    return Err(QueueError::BadValue {
                        property: queues_property,
                        reason: format!(
                            "{child:?} is not a queue name (letters, digits, _ and - only)"
                        ),
                    });
                }
                let child_path = format!("{path}.{child}");
                if child_path.len() > crate::limits::MAX_QUEUE_PATH_BYTES {
                    return Err(QueueError::BadValue {
                        property: queues_property,
                        reason: format!(
                            "{child}'s path would be {} bytes; a queue's full path is at most {}",
                            child_path.len(),
                            crate::limits::MAX_QUEUE_PATH_BYTES
                        ),
                    });
                }
                if !listed.insert(child) {
                    return Err(QueueError::BadValue {
                        property: queues_property,
                        reason: format!("{child} is listed twice"),
                    });
                }
                let child_index = self.declare(&child_path, Some(index), properties, depth + 1)?;
                self.queues[index].children.push(child_index);
            }
        }
        Ok(index)
    }

    /// Every property names a declared queue and a known attribute, or is a
    /// scheduler-wide one.
    fn check_every_property_belongs(&self, properties: &QueueProperties) -> Result<(), QueueError> {
        let by_path: std::collections::HashMap<&str, &Queue> =
            self.queues.iter().map(|q| (q.path.as_str(), q)).collect();
        for (property, _) in properties.iter() {
            let Some(rest) = property.strip_prefix(PREFIX) else {
                return Err(QueueError::UnknownAttribute {
                    property: property.into(),
                });
            };
            if GLOBAL_ATTRIBUTES.contains(&rest) {
                continue;
            }
            // The longest declared queue path the property starts with:
            // each of its dotted prefixes looked up, longest first.
            let owner = rest
                .char_indices()
                .filter(|&(_, c)| c == '.')
                .map(|(at, _)| &rest[..at])
                .rev()
                .find_map(|path| by_path.get(path).copied());
            let Some(queue) = owner else {
                let queue = rest
                    .rsplit_once('.')
                    .map(|(path, _)| path)
                    .unwrap_or(rest)
                    .to_string();
                return Err(QueueError::UnknownQueue {
                    property: property.into(),
                    queue,
                });
            };
            let attribute = &rest[queue.path.len() + 1..];
            if !is_queue_attribute(attribute) && !super::auto_creation::is_attribute(attribute) {
                // `root.a.b.capacity` where b is not declared looks like an unknown attribute
                // of a; say it is an unknown queue when the tail has more than one part.
                if let Some((child, _)) = attribute.split_once('.') {
                    return Err(QueueError::UnknownQueue {
                        property: property.into(),
                        queue: format!("{}.{child}", queue.path),
                    });
                }
                return Err(QueueError::UnknownAttribute {
                    property: property.into(),
                });
            }
        }
        Ok(())
    }

    fn configure(
        &mut self,
        index: usize,
        properties: &QueueProperties,
        maximum_applications: u64,
        weighted: Option<(f64, f64)>,
    ) -> Result<(), QueueError> {
        let path = self.queues[index].path.clone();
        let key = |attribute: &str| format!("{PREFIX}{path}.{attribute}");
        let value = |attribute: &str| properties.get(&key(attribute)).map(|v| (key(attribute), v));
        let is_root = index == 0;
        self.queues[index].auto_creation =
            super::auto_creation::configure(&path, properties, is_template_attribute)?;
        let parent_preemption_disabled = self.queues[index]
            .parent
            .is_some_and(|parent| self.queues[parent].preemption_disabled);
        let parent_stopped = self.queues[index]
            .parent
            .is_some_and(|parent| self.queues[parent].state == QueueState::Stopped);
        let queue = &mut self.queues[index];

        match value("capacity") {
            Some((property, _)) if is_root => {
                return Err(QueueError::BadValue {
                    property,
                    reason: "root's capacity is always 100".into(),
                });
            }
            Some((property, text)) => match weighted {
                Some((weight, share)) => {
                    queue.weight = Some(weight);
                    queue.capacity = share;
                }
                None => queue.capacity = percent(&property, text)?,
            },
            None if !is_root => {
                return Err(QueueError::MissingCapacity {
                    property: key("capacity"),
                });
            }
            None => {}
        }
        if let Some((property, text)) = value("maximum-capacity") {
            // -1 is Hadoop's "no maximum".
            queue.maximum_capacity = if text == "-1" {
                100.0
            } else {
                percent(&property, text)?
            };
        }
        // A weight's share may be smaller: it is what the weights say.
        if !is_root && queue.weight.is_none() && queue.capacity < 1.0 {
            return Err(QueueError::BadValue {
                property: key("capacity"),
                reason: format!(
                    "{} is below 1: every queue's capacity must be 1 or more",
                    queue.capacity
                ),
            });
        }
        // A weight's share is cut to the queue's maximum (it could never
        // hold more), as a new leaf's template maximum may be below the
        // share of a parent's first few children; the rest of the
        // parent's guarantee is no child's.
        if queue.weight.is_some() {
            queue.capacity = queue.capacity.min(queue.maximum_capacity);
        }
        if queue.maximum_capacity < queue.capacity {
            return Err(QueueError::BadValue {
                property: key("maximum-capacity"),
                reason: format!(
                    "{} is below the queue's capacity {}",
                    queue.maximum_capacity, queue.capacity
                ),
            });
        }
        if let Some((property, text)) = value("minimum-user-limit-percent") {
            queue.minimum_user_limit_percent = percent(&property, text)?;
            if queue.minimum_user_limit_percent < 1.0 {
                return Err(QueueError::BadValue {
                    property,
                    reason: "must be between 1 and 100".into(),
                });
            }
        }
        if let Some((property, text)) = value("user-limit-factor") {
            queue.user_limit_factor = parse::<f64>(&property, text, "a number above 0")?;
            if !(queue.user_limit_factor > 0.0 && queue.user_limit_factor.is_finite()) {
                return Err(QueueError::BadValue {
                    property,
                    reason: format!("{text:?} must be a number above 0"),
                });
            }
        }
        if let Some((property, text)) = value("priority") {
            queue.priority = parse::<i32>(&property, text, "a whole number")?;
        }
        if let Some((property, text)) = value("ordering-policy") {
            queue.ordering_policy = match text {
                "fifo" => Ordering::Fifo,
                "fair" => Ordering::Fair,
                other => {
                    return Err(QueueError::BadValue {
                        property,
                        reason: format!("{other:?} is not fifo or fair"),
                    });
                }
            };
        }
        if let Some((property, text)) = value("state") {
            queue.state = match text {
                "RUNNING" => QueueState::Running,
                "STOPPED" => QueueState::Stopped,
                other => {
                    return Err(QueueError::BadValue {
                        property,
                        reason: format!("{other:?} is not RUNNING or STOPPED"),
                    });
                }
            };
        }
        // As YARN: below a STOPPED queue every queue is STOPPED.
        if parent_stopped {
            queue.state = QueueState::Stopped;
        }
        queue.preemption_disabled = match value("disable_preemption") {
            Some((property, text)) => parse::<bool>(&property, text, "true or false")?,
            None => parent_preemption_disabled,
        };
        if let Some((_, text)) = value("acl_submit_applications") {
            queue.acl_submit_applications = text.to_string();
        }
        if let Some((_, text)) = value("acl_administer_queue") {
            queue.acl_administer_queue = text.to_string();
        }
        queue.reservations = reservation_settings(properties, &path)?;
        if queue.reservations.is_some() && !queue.children.is_empty() {
            return Err(QueueError::BadValue {
                property: key("reservable"),
                reason: "only a leaf queue can be reservable".into(),
            });
        }
        // As YARN's QueueAppLifetimeAndLimitSettings: a maximum unset here
        // (or negative) is the parent's, 0 is none. A default unset here is
        // the parent's (as in force there) cut to this maximum if a default
        // is set on some ancestor, else this maximum; a default of none is
        // the maximum; a default set here may not exceed the maximum (root's
        // is not checked, as in YARN: apps run only in leaves).
        let parent = queue.parent;
        let maximum_lifetime =
            inherited_lifetime(properties, &path, "maximum-application-lifetime")?;
        let own_default = value("default-application-lifetime")
            .map(|(property, text)| lifetime(&property, text))
            .transpose()?
            .flatten();
        let default_lifetime = match own_default {
            Some(Some(default)) => {
                if let Some(maximum) = maximum_lifetime
                    && default > maximum
                    && parent.is_some()
                {
                    return Err(QueueError::BadValue {
                        property: key("default-application-lifetime"),
                        reason: format!(
                            "{default} s exceeds the queue's maximum-application-lifetime of {maximum} s"
                        ),
                    });
                }
                Some(default)
            }
            Some(None) => None,
            None => match parent {
                Some(parent)
                    if set_on_an_ancestor(properties, &path, "default-application-lifetime")? =>
                {
                    // YARN's min(parent's, this maximum), where no maximum
                    // (-1) makes it none.
                    self.queues[parent]
                        .default_application_lifetime_s
                        .zip(maximum_lifetime)
                        .map(|(default, maximum)| default.min(maximum))
                }
                _ => maximum_lifetime,
            },
        };
        let queue = &mut self.queues[index];
        queue.maximum_application_lifetime_s = maximum_lifetime;
        queue.default_application_lifetime_s = default_lifetime.or(maximum_lifetime);
        let queue_maximum = value("maximum-applications")
            .map(|(property, text)| parse::<u64>(&property, text, "a whole number"))
            .transpose()?;
        // Absolute figures follow from the parent's, which is configured first.
        let (parent_absolute, parent_absolute_max) = match queue.parent {
            Some(parent) => {
                let parent = &self.queues[parent];
                (parent.absolute_capacity, parent.absolute_maximum_capacity)
            }
            None => (100.0, 100.0),
        };
        let queue = &mut self.queues[index];
        queue.absolute_capacity = parent_absolute * queue.capacity / 100.0;
        // As seed 001 computes it (development's 40 % of engineering's 600 GB
        // is 240 GB): a share of the parent's guarantee, never above the
        // parent's own maximum. Hadoop's code takes the share of the parent's
        // maximum instead; docs/ARCHITECTURE.md notes the difference.
        queue.absolute_maximum_capacity =
            (parent_absolute * queue.maximum_capacity / 100.0).min(parent_absolute_max);
        // As in Hadoop: a queue's share of the scheduler-wide maximum.
        queue.maximum_applications = queue_maximum.unwrap_or_else(|| {
            (maximum_applications as f64 * queue.absolute_capacity / 100.0) as u64
        });
        Ok(())
    }

    /// Each queue's weight and the share of its parent it gives, where its
    /// `capacity` is a weight (YARN's `2.5w`): then every sibling's is (a
    /// mix of weights and percentages is refused, naming the first
    /// percentage), and each child's share is its weight over the sum of
    /// its siblings'.
    fn weighted_capacities(
        &self,
        properties: &QueueProperties,
    ) -> Result<Vec<Option<(f64, f64)>>, QueueError> {
        let mut weighted = vec![None; self.queues.len()];
        for parent in self.queues.iter().filter(|q| !q.is_leaf()) {
            let mut weights = Vec::new();
            let mut first_percentage = None;
            for &child in &parent.children {
                let property = format!("{PREFIX}{}.capacity", self.queues[child].path);
                match properties.get(&property).map(str::trim) {
                    Some(text) if text.ends_with('w') => {
                        weights.push((child, weight(&property, text)?, property));
                    }
                    _ => {
                        first_percentage.get_or_insert(property);
                    }
                }
            }
            let Some((_, _, first_weight)) = weights.first() else {
                continue;
            };
            if let Some(percentage) = first_percentage {
                return Err(QueueError::BadValue {
                    property: percentage,
                    reason: format!(
                        "the children of {} mix weights ({first_weight}) and percentages: give them all weights (2.5w) or all percentages",
                        parent.path
                    ),
                });
            }
            let sum: f64 = weights.iter().map(|(_, w, _)| w).sum();
            for (child, weight, property) in weights {
                let share = weight / sum * 100.0;
                if share < MIN_WEIGHT_SHARE {
                    return Err(QueueError::BadValue {
                        property,
                        reason: format!(
                            "{weight}w is {share:e} % of its siblings' weights ({sum}w), below the {MIN_WEIGHT_SHARE:e} % a queue may have"
                        ),
                    });
                }
                weighted[child] = Some((weight, share));
            }
        }
        Ok(weighted)
    }

    /// The reservable queues, with their settings.
    pub fn reservable(&self) -> impl Iterator<Item = (&Queue, &ReservationSettings)> {
        self.queues
            .iter()
            .filter_map(|q| Some((q, q.reservations.as_ref()?)))
    }

    fn check_capacities(&self) -> Result<(), QueueError> {
        // A parent that creates its children may have none yet; weights'
        // shares sum to 100 unless maxima cut them (then to less).
        for parent in self.queues.iter().filter(|q| {
            !q.children.is_empty() && !q.children.iter().all(|&c| self.queues[c].weight.is_some())
        }) {
            let sum: f64 = parent
                .children
                .iter()
                .map(|&c| self.queues[c].capacity)
                .sum();
            if (sum - 100.0).abs() > 1e-6 {
                let properties = parent
                    .children
                    .iter()
                    .map(|&c| {
                        format!(
                            "{PREFIX}{}.capacity={}",
                            self.queues[c].path, self.queues[c].capacity
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(QueueError::CapacitySum {
                    parent: parent.path.clone(),
                    sum,
                    properties,
                });
            }
        }
        Ok(())
    }

    fn check_unique_leaves(&self) -> Result<(), QueueError> {
        let mut seen: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
        for leaf in self.queues.iter().filter(|q| q.is_leaf()) {
            if let Some(first) = seen.insert(&leaf.name, &leaf.path) {
                return Err(QueueError::DuplicateLeaf {
                    name: leaf.name.clone(),
                    first: first.into(),
                    second: leaf.path.clone(),
                });
            }
        }
        Ok(())
    }

    /// The `yarn.scheduler.capacity.*` properties it was built from.
    pub fn properties(&self) -> &QueueProperties {
        &self.properties
    }

    /// Every queue; index 0 is root, parents come before their children.
    pub fn queues(&self) -> &[Queue] {
        &self.queues
    }

    /// The leaf queue apps name as `name` (or by its full path).
    pub fn leaf(&self, name: &str) -> Option<usize> {
        self.queues
            .iter()
            .position(|q| q.is_leaf() && (q.name == name || q.path == name))
    }

    /// Every queue's share of partition `label` ("" the default one), None
    /// where a queue may not use it (`partitions.rs`).
    pub fn partition_shares(&self, label: &str) -> Vec<Option<super::partitions::Share>> {
        super::partitions::shares_of(&self.queues, label)
    }

    /// The properties that name node label `label`.
    pub fn properties_naming_label(&self, label: &str) -> Vec<String> {
        super::partitions::properties_naming(&self.queues, label)
    }

    /// Leaf queue names, for error messages.
    pub fn leaf_names(&self) -> Vec<&str> {
        self.queues
            .iter()
            .filter(|q| q.is_leaf())
            .map(|q| q.name.as_str())
            .collect()
    }
}

pub(super) fn percent(property: &str, text: &str) -> Result<f64, QueueError> {
    let reason = || {
        if text.contains('[') {
            format!(
                "{text:?}: only percentages and weights (2.5w) are supported, not absolute resources"
            )
        } else {
            format!("{text:?} must be a percentage between 0 and 100")
        }
    };
    match text.parse::<f64>() {
        Ok(value) if (0.0..=100.0).contains(&value) => Ok(value),
        _ => Err(QueueError::BadValue {
            property: property.into(),
            reason: reason(),
        }),
    }
}

/// The heaviest weight a queue may have.
const MAX_WEIGHT: f64 = 1e6;
/// The least share of its parent, in percent, a weight may give a queue:
/// below it, figures derived from the share (a maximum as a multiple of
/// the guarantee) leave the range of numbers.
const MIN_WEIGHT_SHARE: f64 = 1e-6;

/// `text` as a weight (`2.5w`): above 0, at most [`MAX_WEIGHT`].
fn weight(property: &str, text: &str) -> Result<f64, QueueError> {
    match text.strip_suffix('w').map(|n| n.trim().parse::<f64>()) {
        Some(Ok(value)) if value > 0.0 && value <= MAX_WEIGHT => Ok(value),
        _ => Err(QueueError::BadValue {
            property: property.into(),
            reason: format!("{text:?} must be a weight above 0 and at most {MAX_WEIGHT} (2.5w)"),
        }),
    }
}

/// A lifetime `attribute` of the queue at `path`, in seconds, as YARN's
/// AbstractCSQueue inherits it: the queue's own when set to 0 or more (0
/// means none), else its parent's, and so on up to root.
fn inherited_lifetime(
    properties: &QueueProperties,
    path: &str,
    attribute: &str,
) -> Result<Option<u64>, QueueError> {
    let mut path = Some(path);
    while let Some(queue) = path {
        let property = format!("{PREFIX}{queue}.{attribute}");
        if let Some(text) = properties.get(&property)
            && let Some(own) = lifetime(&property, text)?
        {
            return Ok(own);
        }
        path = queue.rsplit_once('.').map(|(parent, _)| parent);
    }
    Ok(None)
}

/// Whether some ancestor of the queue at `path` sets `attribute` (to 0 or
/// more: negative counts as unset).
fn set_on_an_ancestor(
    properties: &QueueProperties,
    path: &str,
    attribute: &str,
) -> Result<bool, QueueError> {
    let mut ancestor = path.rsplit_once('.').map(|(parent, _)| parent);
    while let Some(queue) = ancestor {
        let property = format!("{PREFIX}{queue}.{attribute}");
        if let Some(text) = properties.get(&property)
            && lifetime(&property, text)?.is_some()
        {
            return Ok(true);
        }
        ancestor = queue.rsplit_once('.').map(|(parent, _)| parent);
    }
    Ok(false)
}

/// A lifetime property in seconds: None when negative (inherit), Some(None)
/// for 0 (no lifetime), Some(Some(s)) up to
/// [`crate::limits::MAX_APP_LIFETIME_S`].
fn lifetime(property: &str, text: &str) -> Result<Option<Option<u64>>, QueueError> {
    // i128: a number too large for i64 is told as above the bound.
    const MAX: i128 = crate::limits::MAX_APP_LIFETIME_S as i128;
    match parse::<i128>(property, text, "a whole number of seconds")? {
        ..0 => Ok(None),
        0 => Ok(Some(None)),
        seconds @ 1..=MAX => Ok(Some(Some(seconds as u64))),
        seconds => Err(QueueError::BadValue {
            property: property.into(),
            reason: format!("{seconds} s is above the most Weft takes, {MAX} s (10 years)"),
        }),
    }
}

fn parse<T: std::str::FromStr>(
    property: &str,
    text: &str,
    expected: &str,
) -> Result<T, QueueError> {
    text.parse().map_err(|_| QueueError::BadValue {
        property: property.into(),
        reason: format!("{text:?} must be {expected}"),
    })
}

/// The plan settings of the queue at `path`, or None when it is not `reservable`.
fn reservation_settings(
    properties: &QueueProperties,
    path: &str,
) -> Result<Option<ReservationSettings>, QueueError> {
    let value = |attribute: &str| {
        let property = format!("{PREFIX}{path}.{attribute}");
        properties.get(&property).map(|text| (property, text))
    };
    let reservable = match value("reservable") {
        Some((property, text)) => parse::<bool>(&property, text, "true or false")?,
        None => false,
    };
    if !reservable {
        return Ok(None);
    }
    let mut settings = ReservationSettings {
        window_ms: DEFAULT_RESERVATION_WINDOW_MS,
        instantaneous_max_capacity: 100.0,
        average_capacity: 100.0,
        policy: None,
        agent: RESERVATION_AGENTS[0].into(),
        move_on_expiry: true,
    };
    if let Some((property, text)) = value("reservation-window") {
        settings.window_ms = parse::<i64>(&property, text, "a whole number of ms")?;
        if settings.window_ms <= 0 {
            return Err(QueueError::BadValue {
                property,
                reason: format!("{text} must be above 0 ms"),
            });
        }
    }
    if let Some((property, text)) = value("instantaneous-max-capacity") {
        settings.instantaneous_max_capacity = percent(&property, text)?;
    }
    if let Some((property, text)) = value("average-capacity") {
        settings.average_capacity = percent(&property, text)?;
    }
    if let Some((_, text)) = value("reservation-policy") {
        settings.policy = Some(text.to_string());
    }
    if let Some((property, text)) = value("reservation-agent") {
        if !RESERVATION_AGENTS.contains(&text) {
            return Err(QueueError::BadValue {
                property,
                reason: format!(
                    "{text:?} is not an agent Weft has; it has the greedy agent ({})",
                    RESERVATION_AGENTS.join(", ")
                ),
            });
        }
        settings.agent = text.to_string();
    }
    if let Some((property, text)) = value("reservation-move-on-expiry") {
        settings.move_on_expiry = parse::<bool>(&property, text, "true or false")?;
    }
    Ok(Some(settings))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn properties(pairs: &[(&str, &str)]) -> QueueProperties {
        let mut properties = QueueProperties::default();
        for (name, value) in pairs {
            properties.set(&format!("{PREFIX}{name}"), value);
        }
        properties
    }

    /// Seed 001's example: engineering 60 (development 20, qa 80), support 10, marketing 30.
    fn seed_001() -> Vec<(&'static str, &'static str)> {
        vec![
            ("root.queues", "engineering,support,marketing"),
            ("root.engineering.capacity", "60"),
            ("root.support.capacity", "10"),
            ("root.marketing.capacity", "30"),
            ("root.engineering.queues", "development,qa"),
            ("root.engineering.development.capacity", "20"),
            ("root.engineering.qa.capacity", "80"),
            ("root.engineering.development.maximum-capacity", "40"),
        ]
    }

    #[test]
    fn a_queue_path_longer_than_its_bound_is_refused_naming_the_queue() {
        let long = "q".repeat(600);
        let mut properties = QueueProperties::default();
        properties.set(&format!("{PREFIX}root.queues"), &long);
        properties.set(&format!("{PREFIX}root.{long}.queues"), &long);
        let refused = QueueTree::from_properties(&properties).unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("a queue's full path is at most 1024"),
            "{refused}"
        );
    }

    #[test]
    fn lifetimes_inherit_as_yarn_and_cut_what_an_app_asks_for() {
        let mut pairs = seed_001();
        pairs.push(("root.maximum-application-lifetime", "3600"));
        pairs.push(("root.default-application-lifetime", "600"));
        // development: its own maximum below root's default, which it inherits cut.
        pairs.push((
            "root.engineering.development.maximum-application-lifetime",
            "300",
        ));
        // qa: no maximum at all (0), its own default.
        pairs.push(("root.engineering.qa.maximum-application-lifetime", "0"));
        pairs.push(("root.engineering.qa.default-application-lifetime", "30"));
        // marketing: negative inherits root's.
        pairs.push(("root.marketing.maximum-application-lifetime", "-1"));
        let tree = QueueTree::from_properties(&properties(&pairs)).unwrap();
        let queue = |name: &str| &tree.queues()[tree.leaf(name).unwrap()];
        let lifetimes = |name: &str| {
            let q = queue(name);
            (
                q.maximum_application_lifetime_s,
                q.default_application_lifetime_s,
            )
        };
        assert_eq!(lifetimes("development"), (Some(300), Some(300)));
        assert_eq!(lifetimes("qa"), (None, Some(30)));
        assert_eq!(lifetimes("marketing"), (Some(3600), Some(600)));
        assert_eq!(lifetimes("support"), (Some(3600), Some(600)));
        // engineering inherits root's default cut to its maximum; its
        // children inherit that (YARN's min of the parent's in force).
        let engineering = tree
            .queues()
            .iter()
            .find(|q| q.name == "engineering")
            .unwrap();
        assert_eq!(
            (
                engineering.maximum_application_lifetime_s,
                engineering.default_application_lifetime_s
            ),
            (Some(3600), Some(600))
        );
        // What an app asks for, cut to the maximum; the default without.
        assert_eq!(queue("development").lifetime_s(Some(1000)), Some(300));
        assert_eq!(queue("development").lifetime_s(Some(10)), Some(10));
        assert_eq!(queue("support").lifetime_s(None), Some(600));
        assert_eq!(queue("qa").lifetime_s(Some(100_000)), Some(100_000));
        assert_eq!(queue("qa").lifetime_s(None), Some(30));
        // A maximum alone is the default too; nothing set, no lifetime.
        let mut only_maximum = QueueProperties::defaults();
        only_maximum.set(
            &format!("{PREFIX}root.default.maximum-application-lifetime"),
            "90",
        );
        let tree = QueueTree::from_properties(&only_maximum).unwrap();
        let default = &tree.queues()[tree.leaf("default").unwrap()];
        assert_eq!(default.lifetime_s(None), Some(90));
        let tree = QueueTree::from_properties(&QueueProperties::defaults()).unwrap();
        let default = &tree.queues()[tree.leaf("default").unwrap()];
        assert_eq!(default.lifetime_s(None), None);
        assert_eq!(default.lifetime_s(Some(5)), Some(5));
        // A default on root alone gives a leaf with no maximum none (YARN's
        // min(600, -1)).
        let mut only_root_default = QueueProperties::defaults();
        only_root_default.set(&format!("{PREFIX}root.default-application-lifetime"), "600");
        let tree = QueueTree::from_properties(&only_root_default).unwrap();
        assert_eq!(
            tree.queues()[tree.leaf("default").unwrap()].lifetime_s(None),
            None
        );
        // The parent's default in force (cut to its maximum), not the
        // ancestor's as written: 300, not 600.
        let mut pairs = vec![
            ("root.queues", "a"),
            ("root.a.capacity", "100"),
            ("root.a.queues", "x"),
            ("root.a.x.capacity", "100"),
            ("root.default-application-lifetime", "600"),
            ("root.maximum-application-lifetime", "3600"),
            ("root.a.maximum-application-lifetime", "300"),
            ("root.a.x.maximum-application-lifetime", "1000"),
        ];
        let tree = QueueTree::from_properties(&properties(&pairs)).unwrap();
        assert_eq!(
            tree.queues()[tree.leaf("x").unwrap()].lifetime_s(None),
            Some(300)
        );
        // Beyond i64 is told as above the bound.
        pairs.push((
            "root.a.x.default-application-lifetime",
            "9223372036854775808",
        ));
        let error = QueueTree::from_properties(&properties(&pairs)).unwrap_err();
        assert!(error.to_string().contains("10 years"), "{error}");
    }

    #[test]
    fn reservable_queues_have_yarn_defaults_and_their_settings() {
        let mut pairs = seed_001();
        pairs.push(("root.support.reservable", "true"));
        pairs.push(("root.marketing.reservable", "true"));
        pairs.push(("root.marketing.reservation-window", "3600000"));
        pairs.push(("root.marketing.instantaneous-max-capacity", "50"));
        pairs.push(("root.marketing.average-capacity", "25.5"));
        pairs.push(("root.marketing.reservation-move-on-expiry", "false"));
        pairs.push(("root.marketing.reservation-policy", "builtin:no-overcommit"));
        let tree = QueueTree::from_properties(&properties(&pairs)).unwrap();
        let reservable: Vec<_> = tree
            .reservable()
            .map(|(q, s)| (q.path.as_str(), s))
            .collect();
        assert_eq!(reservable.len(), 2);
        let (support, marketing) = (reservable[0].1, reservable[1].1);
        assert_eq!(reservable[0].0, "root.support");
        assert_eq!(support.window_ms, 86_400_000);
        assert_eq!(support.instantaneous_max_capacity, 100.0);
        assert_eq!(support.average_capacity, 100.0);
        assert!(support.move_on_expiry && support.policy.is_none());
        assert_eq!(marketing.window_ms, 3_600_000);
        assert_eq!(marketing.instantaneous_max_capacity, 50.0);
        assert_eq!(marketing.average_capacity, 25.5);
        assert!(!marketing.move_on_expiry);
        assert_eq!(marketing.policy.as_deref(), Some("builtin:no-overcommit"));
        assert!(
            tree.queues()[tree.leaf("qa").unwrap()]
                .reservations
                .is_none()
        );
    }

    #[test]
    fn bad_reservation_settings_name_the_property() {
        for (name, value, expected) in [
            ("root.engineering.reservable", "true", "only a leaf queue"),
            ("root.support.reservable", "yes", "true or false"),
            ("root.support.reservation-window", "0", "above 0"),
            ("root.support.average-capacity", "101", "between 0 and 100"),
            ("root.support.reservation-agent", "clever", "greedy"),
        ] {
            let mut pairs = seed_001();
            pairs.push(("root.support.reservable", "true"));
            pairs.push((name, value));
            let error = QueueTree::from_properties(&properties(&pairs))
                .unwrap_err()
                .to_string();
            assert!(error.contains(name), "{name}: {error}");
            assert!(error.contains(expected), "{name}: {error}");
        }
    }

    #[test]
    fn below_a_stopped_queue_every_queue_is_stopped() {
        let tree = QueueTree::from_properties(&properties(&[
            ("root.queues", "a,b"),
            ("root.a.capacity", "50"),
            ("root.a.state", "STOPPED"),
            ("root.a.queues", "x"),
            ("root.a.x.capacity", "100"),
            ("root.a.x.state", "RUNNING"),
            ("root.b.capacity", "50"),
        ]))
        .unwrap();
        let state = |name: &str| tree.queues().iter().find(|q| q.name == name).unwrap().state;
        assert_eq!(state("x"), QueueState::Stopped);
        assert_eq!(state("b"), QueueState::Running);
    }

    #[test]
    fn weights_give_each_child_its_share_of_the_siblings_weights() {
        let tree = QueueTree::from_properties(&properties(&[
            ("root.queues", "a,b"),
            ("root.a.capacity", "3w"),
            ("root.a.queues", "x,y"),
            ("root.a.x.capacity", "1w"),
            ("root.a.y.capacity", "999w"),
            ("root.b.capacity", "1w"),
            ("root.b.maximum-capacity", "50"),
        ]))
        .unwrap();
        let queue = |name: &str| {
            tree.queues()
                .iter()
                .find(|q| q.name == name)
                .unwrap()
                .clone()
        };
        assert_eq!(queue("a").capacity, 75.0);
        assert_eq!(queue("a").weight, Some(3.0));
        assert_eq!(queue("b").capacity, 25.0);
        assert!((queue("x").absolute_capacity - 0.075).abs() < 1e-9);
        assert!((queue("y").absolute_capacity - 74.925).abs() < 1e-9);
        assert_eq!(queue("root").weight, None);

        let refused = |pairs: &[(&str, &str)]| {
            QueueTree::from_properties(&properties(pairs))
                .unwrap_err()
                .to_string()
        };
        let mixed = refused(&[
            ("root.queues", "a,b"),
            ("root.a.capacity", "1w"),
            ("root.b.capacity", "50"),
        ]);
        assert!(
            mixed.contains("root.b.capacity") && mixed.contains("mix weights"),
            "{mixed}"
        );
        let tiny = refused(&[
            ("root.queues", "a,b"),
            ("root.a.capacity", "1e-307w"),
            ("root.b.capacity", "1w"),
        ]);
        assert!(tiny.contains("below the"), "{tiny}");
        for bad in ["0w", "-1w", "w", "2ww", "1e7w", "NaNw"] {
            let error = refused(&[("root.queues", "a"), ("root.a.capacity", bad)]);
            assert!(error.contains("must be a weight"), "{bad}: {error}");
        }
        // A maximum below the weight's share cuts the share: b could
        // never hold more; the rest of root's guarantee is no child's.
        let cut = QueueTree::from_properties(&properties(&[
            ("root.queues", "a,b"),
            ("root.a.capacity", "1w"),
            ("root.b.capacity", "1w"),
            ("root.b.maximum-capacity", "40"),
        ]))
        .unwrap();
        let shares: Vec<f64> = cut.queues()[1..].iter().map(|q| q.capacity).collect();
        assert_eq!(shares, [50.0, 40.0]);
    }

    #[test]
    fn the_default_tree_is_root_default_at_100() {
        let tree = QueueTree::from_properties(&QueueProperties::defaults()).unwrap();
        let default = &tree.queues()[tree.leaf("default").unwrap()];
        assert_eq!(
            (default.path.as_str(), default.absolute_capacity),
            ("root.default", 100.0)
        );
    }

    #[test]
    fn seed_001_absolute_capacities() {
        let tree = QueueTree::from_properties(&properties(&seed_001())).unwrap();
        let development = &tree.queues()[tree.leaf("development").unwrap()];
        // 60 % × 20 % = 12 % of 1000 GB = 120 GB; its maximum 60 % × 40 % = 24 %.
        assert!((development.absolute_capacity - 12.0).abs() < 1e-9);
        assert!((development.absolute_maximum_capacity - 24.0).abs() < 1e-9);
        let qa = &tree.queues()[tree.leaf("root.engineering.qa").unwrap()];
        assert!((qa.absolute_capacity - 48.0).abs() < 1e-9);
        assert_eq!(
            tree.leaf_names(),
            vec!["development", "qa", "support", "marketing"]
        );
    }

    #[test]
    fn bad_configurations_name_the_property() {
        let with = |change: &[(&'static str, &'static str)]| {
            let mut pairs = seed_001();
            pairs.extend_from_slice(change);
            QueueTree::from_properties(&properties(&pairs))
                .unwrap_err()
                .to_string()
        };
        let cases: [(&[(&str, &str)], &str); 13] = [
            (&[("root.support.capacity", "20")], "sum to 110"),
            (
                &[
                    ("root.engineering.qa.capacity", "0.5"),
                    ("root.engineering.development.capacity", "99.5"),
                    ("root.engineering.development.maximum-capacity", "100"),
                ],
                "below 1",
            ),
            (
                &[("root.engineering.development.maximum-capacity", "10")],
                "root.engineering.development.maximum-capacity",
            ),
            (
                &[("root.engineering.dev.capacity", "10")],
                "no queue \"root.engineering.dev\"",
            ),
            (
                &[("root.support.colour", "blue")],
                "root.support.colour: unknown property",
            ),
            (
                &[("root.support.ordering-policy", "random")],
                "fifo or fair",
            ),
            (
                &[("root.support.capacity", "[memory=1024,vcores=1]")],
                "only percentages",
            ),
            (&[("root.support.user-limit-factor", "0")], "above 0"),
            (&[("root.support.state", "PAUSED")], "RUNNING or STOPPED"),
            (
                &[("root.support.maximum-application-lifetime", "soon")],
                "whole number of seconds",
            ),
            (
                &[("root.support.default-application-lifetime", "315360001")],
                "10 years",
            ),
            (
                &[
                    ("root.support.maximum-application-lifetime", "60"),
                    ("root.support.default-application-lifetime", "61"),
                ],
                "exceeds the queue's maximum-application-lifetime of 60 s",
            ),
            (
                &[
                    ("root.marketing.queues", "qa"),
                    ("root.marketing.qa.capacity", "100"),
                ],
                "used by two leaf queues",
            ),
        ];
        for (change, expected) in cases {
            let error = with(change);
            assert!(error.contains(expected), "{change:?}: {error}");
        }
        let missing = QueueTree::from_properties(&properties(&[
            ("root.queues", "a,b"),
            ("root.a.capacity", "100"),
        ]))
        .unwrap_err();
        assert!(
            missing
                .to_string()
                .contains("yarn.scheduler.capacity.root.b.capacity is missing"),
            "{missing}"
        );
    }

    #[test]
    fn hadoop_capacity_scheduler_xml_imports() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/data/sls/capacity-scheduler.xml");
        let properties = QueueProperties::from_file(&path).unwrap();
        let tree = QueueTree::from_properties(&properties).unwrap();
        assert_eq!(
            tree.leaf_names(),
            vec!["sls_queue_1", "sls_queue_2", "sls_queue_3"]
        );
        assert_eq!(
            tree.queues()[tree.leaf("sls_queue_3").unwrap()].absolute_capacity,
            50.0
        );
    }
}
