//! YARN's scheduler configuration mutations (`PUT /ws/v1/cluster/scheduler-conf`,
//! `yarn schedulerconf`): queues added, updated and removed and global
//! properties changed, turned into property changes on the configuration in
//! force — in YARN's order (removals, additions, updates, globals) — and
//! the overlay of changes kept across refreshes and restarts.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{PREFIX, QueueProperties, QueueState, QueueTree};
use crate::limits::{self, OutOfBounds};

/// Property changes one request may make in all (queues added, updated or
/// removed, their parameters and the global updates).
pub const MAX_CHANGES_PER_UPDATE: usize = 1000;
/// Bytes in a changed property's full name.
pub const MAX_PROPERTY_NAME_BYTES: usize = 2048;
/// Bytes in a changed property's value (an ACL of many users fits).
pub const MAX_PROPERTY_VALUE_BYTES: usize = 16 << 10;
/// Bytes of names and values the overlay of changes may hold in all after
/// a change by a queue administrator; an administrator's change may take it
/// to four times that, so a queue administrator cannot fill it for good.
pub const MAX_OVERLAY_BYTES: usize = 1 << 20;

/// One request's changes (YARN's SchedConfUpdateInfo), as the caller sent
/// them. A parameter or global without a value unsets the property.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConfUpdate {
    /// Queues to add, each by its full path with its own properties.
    pub add: Vec<QueueParams>,
    /// Queues whose properties change.
    pub update: Vec<QueueParams>,
    /// Queues to remove (each STOPPED first), by full path.
    pub remove: Vec<String>,
    /// Properties by full name (`yarn.scheduler.capacity.…`).
    pub global: Vec<(String, Option<String>)>,
}

/// A queue's path and its parameters, by their names below the queue
/// (`capacity` for `yarn.scheduler.capacity.<path>.capacity`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueueParams {
    /// The queue's full path (`root.a.b`).
    pub queue: String,
    /// Its parameters; None or an empty value unsets one.
    pub params: Vec<(String, Option<String>)>,
}

/// Why a request was refused; nothing changed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MutationError {
    /// A field out of its bounds.
    #[error(transparent)]
    Bounds(#[from] OutOfBounds),
    /// A change that cannot be made to the configuration in force.
    #[error("{0}")]
    Refused(String),
    /// The configuration the changes give is not a valid queue tree.
    #[error("the changed configuration is refused: {0}")]
    Invalid(#[from] super::QueueError),
}

/// The changes made through the API since the last format, on top of the
/// queue configuration the server reads (its files and settings): each
/// property's value, or None where a change unset it. Later changes of a
/// property replace earlier ones.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfOverlay {
    /// YARN's versionID, as its stores count it: 1 for the configuration
    /// the store starts with, one more for each change applied and for
    /// each format; it never goes back.
    pub version: u64,
    /// Property → its value, or None for unset.
    pub changes: BTreeMap<String, Option<String>>,
}

impl Default for ConfOverlay {
    /// No changes, at YARN's first version.
    fn default() -> ConfOverlay {
        ConfOverlay {
            version: 1,
            changes: BTreeMap::new(),
        }
    }
}

impl ConfOverlay {
    /// Drops every change (YARN's format, which counts as a version).
    pub fn format(&mut self) {
        self.changes.clear();
        self.version = self.version.saturating_add(1);
    }

    /// `base` with these changes on top.
    pub fn apply_to(&self, base: &QueueProperties) -> QueueProperties {
        let mut properties = base.clone();
        apply_changes(&mut properties, &self.changes);
        properties
    }

    /// Takes `changes` on top of the ones kept, less unsets of properties
    /// `base` (the queue file's, as last read) does not have (a queue
    /// added and removed again leaves nothing behind); refused (and
    /// nothing kept) if the overlay would grow beyond `limit` bytes. A
    /// value equal to the file's is kept: the file may change before it is
    /// read again.
    pub fn record(
        &mut self,
        changes: &BTreeMap<String, Option<String>>,
        base: &QueueProperties,
        limit: usize,
    ) -> Result<(), MutationError> {
        let mut merged = self.changes.clone();
        merged.extend(changes.iter().map(|(k, v)| (k.clone(), v.clone())));
        merged.retain(|name, value| value.is_some() || base.get(name).is_some());
        let size = |changes: &BTreeMap<String, Option<String>>| -> usize {
            changes
                .iter()
                .map(|(k, v)| k.len() + v.as_ref().map_or(0, String::len))
                .sum()
        };
        let bytes = size(&merged);
        // A change that does not grow the overlay is taken whatever its
        // size (a queue administrator may stop their queue after an
        // administrator filled it).
        if bytes > limit && bytes > size(&self.changes) {
            return Err(MutationError::Refused(format!(
                "the scheduler configuration changes kept would take {bytes} bytes, more than the {limit} allowed: put them in the queue file and format the changes (GET /ws/v1/cluster/scheduler-conf/format)"
            )));
        }
        self.changes = merged;
        self.version = self.version.saturating_add(1);
        Ok(())
    }
}

fn apply_changes(properties: &mut QueueProperties, changes: &BTreeMap<String, Option<String>>) {
    for (name, value) in changes {
        match value {
            Some(value) => properties.set(name, value),
            None => properties.remove(name),
        }
    }
}

/// What a request makes of the configuration in force.
#[derive(Debug)]
pub struct Proposal {
    /// The property changes, for the overlay.
    pub changes: BTreeMap<String, Option<String>>,
    /// The tree the changed configuration describes, validated.
    pub tree: QueueTree,
}

/// The changes `update` makes to `current` (the tree in force), checked:
/// within bounds, each removed queue STOPPED (itself or an ancestor, as
/// YARN requires), each added one new, and the result a valid tree. The
/// apps in the queues are not looked at here (the cluster refuses a tree
/// that loses a queue an app is in).
pub fn propose(current: &QueueTree, update: &ConfUpdate) -> Result<Proposal, MutationError> {
    check_bounds(update)?;
    let mut properties = current.properties().clone();
    let mut changes = BTreeMap::new();
    // Each change is kept as the properties hold it (trimmed as a file's).
    let mut change = |properties: &mut QueueProperties, name: String, value: Option<String>| {
        match &value {
            Some(value) => properties.set(&name, value),
            None => properties.remove(&name),
        }
        let held = properties.get(&name).map(str::to_string);
        changes.insert(name, held);
    };
    for path in &update.remove {
        let (parent, name) = split_path("remove-queue", path)?;
        let siblings = children(&properties, parent);
        if !siblings.iter().any(|s| s == name) {
            return Err(MutationError::Refused(format!(
                "remove-queue: queue {path} not found"
            )));
        }
        let rest: Vec<&str> = siblings
            .iter()
            .map(String::as_str)
            .filter(|s| *s != name)
            .collect();
        if rest.is_empty() {
            change(&mut properties, format!("{PREFIX}{parent}.queues"), None);
            change(
                &mut properties,
                format!("{PREFIX}{parent}.ordering-policy"),
                None,
            );
        } else {
            change(
                &mut properties,
                format!("{PREFIX}{parent}.queues"),
                Some(rest.join(",")),
            );
        }
        let own = format!("{PREFIX}{path}.");
        let under: Vec<String> = properties
            .iter()
            .filter(|(key, _)| key.starts_with(&own))
            .map(|(key, _)| key.to_string())
            .collect();
        for key in under {
            change(&mut properties, key, None);
        }
    }
    for queue in &update.add {
        let (parent, name) = split_path("add-queue", &queue.queue)?;
        let mut siblings = children(&properties, parent);
        if siblings.iter().any(|s| s == name) {
            return Err(MutationError::Refused(format!(
                "add-queue: queue {} exists already",
                queue.queue
            )));
        }
        if siblings.is_empty() {
            // A leaf becoming a parent: a leaf's ordering of apps means
            // nothing to a parent.
            change(
                &mut properties,
                format!("{PREFIX}{parent}.ordering-policy"),
                None,
            );
        }
        siblings.push(name.to_string());
        change(
            &mut properties,
            format!("{PREFIX}{parent}.queues"),
            Some(siblings.join(",")),
        );
        set_params(&mut properties, queue, &mut change);
    }
    for queue in &update.update {
        limits::queue_path("update-queue.queue-name", &queue.queue)?;
        set_params(&mut properties, queue, &mut change);
    }
    for (name, value) in &update.global {
        if !name.starts_with(PREFIX) {
            return Err(MutationError::Refused(format!(
                "global-updates: {name} is not a queue property (only {PREFIX}… may change here; the others are the server's settings)"
            )));
        }
        change(&mut properties, name.clone(), value.clone());
    }
    if changes.is_empty() {
        return Err(MutationError::Refused(
            "the request changes nothing: name a queue to add, update or remove, or a global property".into(),
        ));
    }
    let tree = QueueTree::from_properties(&properties)?;
    // However a queue leaves the tree (remove-queue, or its parent's
    // `queues` changed), it must be STOPPED first.
    for queue in current.queues() {
        if !tree.queues().iter().any(|q| q.path == queue.path) {
            check_stopped(queue)?;
        }
    }
    Ok(Proposal { changes, tree })
}

/// Sets (or, for a missing or empty value, unsets) each of `queue`'s
/// parameters.
fn set_params(
    properties: &mut QueueProperties,
    queue: &QueueParams,
    change: &mut impl FnMut(&mut QueueProperties, String, Option<String>),
) {
    for (key, value) in &queue.params {
        // Only an empty value unsets, as YARN's: an ACL of " " means nobody,
        // and unset it would be root's `*`.
        let value = value.clone().filter(|v| !v.is_empty());
        change(properties, format!("{PREFIX}{}.{key}", queue.queue), value);
    }
}

/// A queue's children as its parent's `queues` property lists them.
fn children(properties: &QueueProperties, parent: &str) -> Vec<String> {
    properties
        .children_of(parent)
        .into_iter()
        .map(str::to_string)
        .collect()
}

/// `root.a.b` as (`root.a`, `b`); root itself and paths without a parent
/// refused.
fn split_path<'a>(field: &str, path: &'a str) -> Result<(&'a str, &'a str), MutationError> {
    limits::queue_path(format!("{field}.queue-name"), path)?;
    match path.rsplit_once('.') {
        Some((parent, name)) if !parent.is_empty() && !name.is_empty() => Ok((parent, name)),
        _ => Err(MutationError::Refused(format!(
            "{field}: {path:?} is not a queue below root (a full path such as root.a)"
        ))),
    }
}

/// A queue leaves the tree only once it is STOPPED, by its own state or an
/// ancestor's (YARN's rule: its apps drain first).
fn check_stopped(queue: &super::Queue) -> Result<(), MutationError> {
    if queue.state == QueueState::Stopped {
        return Ok(());
    }
    let path = &queue.path;
    Err(MutationError::Refused(format!(
        "queue {path} is RUNNING and would leave the tree; stop it first (update-queue {path} with state=STOPPED), then remove it once its apps have ended"
    )))
}

fn check_bounds(update: &ConfUpdate) -> Result<(), MutationError> {
    let params =
        |queues: &[QueueParams]| -> usize { queues.iter().map(|q| 1 + q.params.len()).sum() };
    let changes =
        params(&update.add) + params(&update.update) + update.remove.len() + update.global.len();
    limits::at_most("scheduler-conf changes", changes, MAX_CHANGES_PER_UPDATE)?;
    let all_params = update
        .add
        .iter()
        .chain(&update.update)
        .flat_map(|q| q.params.iter().map(move |(k, v)| (q, k, v)));
    for (queue, key, value) in all_params {
        if key.trim().is_empty() || key.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(MutationError::Refused(format!(
                "params of {}: the key {key:?} is not a property name (no spaces or control characters, not empty)",
                queue.queue
            )));
        }
        let name = format!("{PREFIX}{}.{key}", queue.queue);
        check_property(&name, value.as_deref())?;
    }
    for (name, value) in &update.global {
        if name.is_empty() || name.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(MutationError::Refused(format!(
                "global-updates: {name:?} is not a property name (no spaces or control characters, not empty)"
            )));
        }
        check_property(name, value.as_deref())?;
    }
    let paths = update
        .add
        .iter()
        .chain(&update.update)
        .map(|q| q.queue.as_str())
        .chain(update.remove.iter().map(String::as_str));
    for path in paths {
        if path.chars().any(char::is_whitespace) {
            return Err(MutationError::Refused(format!(
                "{path:?} is not a queue path (no spaces)"
            )));
        }
    }
    Ok(())
}

/// The attribute naming a reservable queue's own sharing policy: through
/// the API only a policy Weft bundles (a file path would be read by the
/// server, on its event loop).
pub const POLICY_ATTRIBUTE: &str = "reservation-policy";

fn check_property(name: &str, value: Option<&str>) -> Result<(), MutationError> {
    if let Some(value) = value
        && name.ends_with(&format!(".{POLICY_ATTRIBUTE}"))
        && !(value.trim().starts_with("builtin:")
            || value.trim().ends_with(".CapacityOverTimePolicy")
            || value.trim().ends_with(".NoOverCommitPolicy"))
    {
        return Err(MutationError::Refused(format!(
            "{name}: through the API only a bundled policy (builtin:NAME, or YARN's CapacityOverTimePolicy or NoOverCommitPolicy), not {value:?}; name a file in the queue file instead"
        )));
    }
    if name.len() > MAX_PROPERTY_NAME_BYTES {
        return Err(OutOfBounds {
            field: "a property name".into(),
            value: limits::cut(name, 64),
            rule: format!("but may be at most {MAX_PROPERTY_NAME_BYTES} bytes long"),
        }
        .into());
    }
    if let Some(value) = value
        && value.len() > MAX_PROPERTY_VALUE_BYTES
    {
        return Err(OutOfBounds {
            field: name.into(),
            value: format!("{} bytes", value.len()),
            rule: format!("but may be at most {MAX_PROPERTY_VALUE_BYTES} bytes long"),
        }
        .into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(pairs: &[(&str, &str)]) -> QueueTree {
        let mut properties = QueueProperties::default();
        for (name, value) in pairs {
            properties.set(&format!("{PREFIX}{name}"), value);
        }
        QueueTree::from_properties(&properties).unwrap()
    }

    fn two_leaves() -> QueueTree {
        tree(&[
            ("root.queues", "a,b"),
            ("root.a.capacity", "60"),
            ("root.b.capacity", "40"),
        ])
    }

    fn params(queue: &str, pairs: &[(&str, Option<&str>)]) -> QueueParams {
        QueueParams {
            queue: queue.into(),
            params: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.map(str::to_string)))
                .collect(),
        }
    }

    fn value(tree: &QueueTree, name: &str) -> Option<String> {
        tree.properties()
            .get(&format!("{PREFIX}{name}"))
            .map(str::to_string)
    }

    #[test]
    fn an_added_queue_joins_its_parent_and_takes_its_params() {
        let update = ConfUpdate {
            add: vec![params("root.c", &[("capacity", Some("10"))])],
            update: vec![params("root.b", &[("capacity", Some("30"))])],
            ..ConfUpdate::default()
        };
        let proposal = propose(&two_leaves(), &update).unwrap();
        assert_eq!(value(&proposal.tree, "root.queues").unwrap(), "a,b,c");
        assert_eq!(value(&proposal.tree, "root.c.capacity").unwrap(), "10");
        assert_eq!(
            proposal.tree.leaf_names(),
            vec!["a", "b", "c"],
            "{proposal:?}"
        );
        assert_eq!(
            proposal.changes.get(&format!("{PREFIX}root.b.capacity")),
            Some(&Some("30".to_string()))
        );
    }

    #[test]
    fn a_leaf_becoming_a_parent_loses_its_ordering_policy() {
        let current = tree(&[
            ("root.queues", "a,b"),
            ("root.a.capacity", "60"),
            ("root.a.ordering-policy", "fair"),
            ("root.b.capacity", "40"),
        ]);
        let update = ConfUpdate {
            add: vec![params("root.a.x", &[("capacity", Some("100"))])],
            ..ConfUpdate::default()
        };
        let proposal = propose(&current, &update).unwrap();
        assert_eq!(value(&proposal.tree, "root.a.ordering-policy"), None);
        assert_eq!(proposal.tree.leaf_names(), vec!["x", "b"]);
    }

    #[test]
    fn a_queue_is_removed_only_when_stopped_with_all_its_properties() {
        let update = ConfUpdate {
            remove: vec!["root.b".into()],
            update: vec![params("root.a", &[("capacity", Some("100"))])],
            ..ConfUpdate::default()
        };
        let refused = propose(&two_leaves(), &update).unwrap_err();
        assert!(refused.to_string().contains("is RUNNING"), "{refused}");

        let stopped = tree(&[
            ("root.queues", "a,b"),
            ("root.a.capacity", "60"),
            ("root.b.capacity", "40"),
            ("root.b.state", "STOPPED"),
            ("root.b.maximum-capacity", "50"),
        ]);
        let proposal = propose(&stopped, &update).unwrap();
        assert_eq!(value(&proposal.tree, "root.queues").unwrap(), "a");
        assert!(
            proposal
                .tree
                .properties()
                .iter()
                .all(|(k, _)| !k.contains("root.b.")),
            "{proposal:?}"
        );
        assert_eq!(
            proposal
                .changes
                .get(&format!("{PREFIX}root.b.maximum-capacity")),
            Some(&None)
        );
    }

    #[test]
    fn a_stopped_parent_lets_its_children_go() {
        let current = tree(&[
            ("root.queues", "a,b"),
            ("root.a.capacity", "60"),
            ("root.a.state", "STOPPED"),
            ("root.a.queues", "x,y"),
            ("root.a.x.capacity", "50"),
            ("root.a.y.capacity", "50"),
            ("root.b.capacity", "40"),
        ]);
        let update = ConfUpdate {
            remove: vec!["root.a.y".into()],
            update: vec![params("root.a.x", &[("capacity", Some("100"))])],
            ..ConfUpdate::default()
        };
        let proposal = propose(&current, &update).unwrap();
        assert_eq!(value(&proposal.tree, "root.a.queues").unwrap(), "x");
        // The last child gone, the parent is a leaf again.
        let update = ConfUpdate {
            remove: vec!["root.a.x".into(), "root.a.y".into()],
            ..ConfUpdate::default()
        };
        let proposal = propose(&current, &update).unwrap();
        assert_eq!(value(&proposal.tree, "root.a.queues"), None);
        assert_eq!(proposal.tree.leaf_names(), vec!["a", "b"]);
    }

    #[test]
    fn bad_changes_are_refused_naming_what_is_wrong() {
        let current = two_leaves();
        let refused = |update: ConfUpdate| propose(&current, &update).unwrap_err().to_string();
        let add = |p: QueueParams| ConfUpdate {
            add: vec![p],
            ..ConfUpdate::default()
        };
        assert!(refused(add(params("root.a", &[]))).contains("exists already"));
        assert!(refused(add(params("root", &[]))).contains("not a queue below root"));
        assert!(refused(add(params("root.c", &[("capacity", Some("10"))]))).contains("sum to 110"));
        assert!(
            refused(add(params("root.c", &[("capcity", Some("0"))]))).contains("capcity"),
            "a typo names the property"
        );
        assert!(refused(add(params("root.c", &[("bad key", Some("1"))]))).contains("bad key"));
        assert!(
            refused(ConfUpdate {
                remove: vec!["root.zz".into()],
                ..ConfUpdate::default()
            })
            .contains("not found")
        );
        assert!(
            refused(ConfUpdate {
                global: vec![("yarn.resourcemanager.address".into(), Some("x".into()))],
                ..ConfUpdate::default()
            })
            .contains("not a queue property")
        );
        // A trailing space would slip past the checks of a name.
        assert!(
            refused(ConfUpdate {
                global: vec![(
                    format!("{PREFIX}root.a.reservation-policy "),
                    Some("/dev/zero".into())
                )],
                ..ConfUpdate::default()
            })
            .contains("not a property name")
        );
        assert!(refused(add(params("root.c ", &[("capacity", Some("1"))]))).contains("no spaces"));
        let many = ConfUpdate {
            global: (0..=MAX_CHANGES_PER_UPDATE)
                .map(|i| (format!("{PREFIX}root.a.x{i}"), None))
                .collect(),
            ..ConfUpdate::default()
        };
        assert!(refused(many).contains("scheduler-conf changes"));
        let long = add(params(
            "root.c",
            &[(
                "acl_submit_applications",
                Some(&"u,".repeat(MAX_PROPERTY_VALUE_BYTES)),
            )],
        ));
        assert!(refused(long).contains("at most"));
    }

    #[test]
    fn a_blank_acl_is_nobody_not_unset() {
        let update = ConfUpdate {
            update: vec![params("root.a", &[("acl_submit_applications", Some(" "))])],
            ..ConfUpdate::default()
        };
        let proposal = propose(&two_leaves(), &update).unwrap();
        assert_eq!(
            value(&proposal.tree, "root.a.acl_submit_applications").as_deref(),
            Some(" ")
        );
        assert_eq!(proposal.tree.queues()[1].acl_submit_applications, " ");
    }

    #[test]
    fn a_running_queue_cannot_leave_by_its_parents_list_either() {
        let update = ConfUpdate {
            update: vec![
                params("root", &[("queues", Some("a"))]),
                params("root.a", &[("capacity", Some("100"))]),
            ],
            global: vec![(format!("{PREFIX}root.b.capacity"), None)],
            ..ConfUpdate::default()
        };
        let refused = propose(&two_leaves(), &update).unwrap_err().to_string();
        assert!(refused.contains("root.b is RUNNING"), "{refused}");
    }

    #[test]
    fn nothing_to_change_and_a_policy_file_are_refused() {
        let refused = |update: ConfUpdate| propose(&two_leaves(), &update).unwrap_err().to_string();
        assert!(refused(ConfUpdate::default()).contains("changes nothing"));
        assert!(
            refused(ConfUpdate {
                update: vec![params("root.zz", &[])],
                ..ConfUpdate::default()
            })
            .contains("changes nothing")
        );
        let policy = |value: &str| ConfUpdate {
            update: vec![params(
                "root.a",
                &[
                    ("reservable", Some("true")),
                    ("reservation-policy", Some(value)),
                ],
            )],
            ..ConfUpdate::default()
        };
        assert!(refused(policy("/dev/zero")).contains("only a bundled policy"));
        assert!(propose(&two_leaves(), &policy("builtin:no-overcommit")).is_ok());
        assert!(
            propose(
                &two_leaves(),
                &policy("org.apache.hadoop.yarn.server.resourcemanager.reservation.CapacityOverTimePolicy")
            )
            .is_ok()
        );
    }

    #[test]
    fn the_overlay_applies_later_changes_over_earlier_and_is_bounded() {
        let mut overlay = ConfOverlay::default();
        let base = two_leaves().properties().clone();
        let name = format!("{PREFIX}root.b.capacity");
        let limit = MAX_OVERLAY_BYTES;
        overlay
            .record(
                &BTreeMap::from([(name.clone(), Some("30".to_string()))]),
                &base,
                limit,
            )
            .unwrap();
        overlay
            .record(&BTreeMap::from([(name.clone(), None)]), &base, limit)
            .unwrap();
        assert_eq!(overlay.version, 3);
        let applied = overlay.apply_to(&base);
        assert_eq!(applied.get(&name), None);

        // A queue added and removed again leaves nothing behind; a value
        // back at the file's is kept (the file may change before it is
        // read again).
        let added = format!("{PREFIX}root.c.capacity");
        overlay
            .record(
                &BTreeMap::from([(added.clone(), Some("1".into()))]),
                &base,
                limit,
            )
            .unwrap();
        overlay
            .record(
                &BTreeMap::from([(added, None), (name.clone(), Some("50".into()))]),
                &base,
                limit,
            )
            .unwrap();
        assert_eq!(
            overlay.changes,
            BTreeMap::from([(name.clone(), Some("50".to_string()))])
        );

        let huge: BTreeMap<String, Option<String>> = (0..200)
            .map(|i| (format!("{PREFIX}k{i}"), Some("v".repeat(8 << 10))))
            .collect();
        let before = overlay.clone();
        assert!(overlay.record(&huge, &base, limit).is_err());
        assert_eq!(overlay, before, "nothing kept on a refusal");
        overlay.record(&huge, &base, 4 * limit).unwrap();
        // Full, a change that does not grow it is still taken.
        overlay
            .record(&BTreeMap::from([(name, Some("60".into()))]), &base, limit)
            .unwrap();
    }
}
