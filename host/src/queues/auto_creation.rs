//! Flexible auto-created queues (YARN's `auto-queue-creation-v2`): a parent
//! that allows it gets a leaf the first time an app is placed in one it
//! lacks, made from the parent's templates with weight `1w`. This module
//! reads a parent's settings and turns the dynamic leaves into queue
//! properties; the resource manager keeps which leaves were made so.

use std::collections::BTreeMap;

use super::{PREFIX, QueueError, QueueProperties, QueueTree};

/// `<parent>.auto-queue-creation-v2.enabled`.
pub const ENABLED: &str = "auto-queue-creation-v2.enabled";
/// `<parent>.auto-queue-creation-v2.max-queues`: children at most.
pub const MAX_QUEUES: &str = "auto-queue-creation-v2.max-queues";
/// `<parent>.auto-queue-creation-v2.template.<attribute>`.
pub const TEMPLATE: &str = "auto-queue-creation-v2.template.";
/// `<parent>.auto-queue-creation-v2.leaf-template.<attribute>` (over
/// `template.` for a leaf).
pub const LEAF_TEMPLATE: &str = "auto-queue-creation-v2.leaf-template.";
/// `<dynamic queue>.auto-queue-creation-v2.queue-auto-removal.enable`
/// (set through a template): whether the leaf goes once idle.
pub const AUTO_REMOVAL: &str = "auto-queue-creation-v2.queue-auto-removal.enable";
/// The scheduler-wide `auto-queue-creation-v2.queue-expiration-time`:
/// seconds a dynamic leaf stays without apps before it goes.
pub const EXPIRATION: &str = "auto-queue-creation-v2.queue-expiration-time";

/// YARN's default `max-queues`.
pub const DEFAULT_MAX_QUEUES: usize = 1000;
/// The most `max-queues` may be.
pub const MAX_MAX_QUEUES: usize = 10_000;
/// YARN's default expiration time, in seconds.
pub const DEFAULT_EXPIRATION_S: u64 = 300;
/// The longest expiration time: a year.
const MAX_EXPIRATION_S: u64 = 366 * 24 * 3600;
/// The longest dynamic leaf name, in bytes.
pub const MAX_NAME_BYTES: usize = 128;

/// A parent's auto-creation settings.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AutoCreation {
    /// Children (static and dynamic) at most.
    pub max_queues: usize,
    /// What a new leaf is given: attribute → value (a `leaf-template.`
    /// entry over a `template.` one).
    pub template: BTreeMap<String, String>,
}

/// Whether `attribute` (of a queue, after its path) is one of the
/// auto-creation ones.
pub(super) fn is_attribute(attribute: &str) -> bool {
    [ENABLED, MAX_QUEUES, AUTO_REMOVAL].contains(&attribute)
        || attribute
            .strip_prefix(TEMPLATE)
            .is_some_and(|a| !a.is_empty())
        || attribute
            .strip_prefix(LEAF_TEMPLATE)
            .is_some_and(|a| !a.is_empty())
}

/// The auto-creation settings of the queue at `path`, if it allows it;
/// `is_template_attribute` says which attributes a template may set.
pub(super) fn configure(
    path: &str,
    properties: &QueueProperties,
    is_template_attribute: impl Fn(&str) -> bool,
) -> Result<Option<AutoCreation>, QueueError> {
    let key = |attribute: &str| format!("{PREFIX}{path}.{attribute}");
    let enabled = match properties.get(&key(ENABLED)).map(str::trim) {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(QueueError::BadValue {
                property: key(ENABLED),
                reason: format!("{other:?} is not true or false"),
            });
        }
    };
    let max_queues = match properties.get(&key(MAX_QUEUES)) {
        None => DEFAULT_MAX_QUEUES,
        Some(text) => text
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_MAX_QUEUES).contains(n))
            .ok_or_else(|| QueueError::BadValue {
                property: key(MAX_QUEUES),
                reason: format!("{text:?} is not a whole number from 1 to {MAX_MAX_QUEUES}"),
            })?,
    };
    let mut template = BTreeMap::new();
    for prefix in [TEMPLATE, LEAF_TEMPLATE] {
        let start = key(prefix);
        for (name, value) in properties.with_prefix(&start) {
            let Some(attribute) = name.strip_prefix(&start) else {
                continue;
            };
            if !is_template_attribute(attribute) {
                return Err(QueueError::BadValue {
                    property: name.into(),
                    reason: format!(
                        "{attribute:?} is not a queue attribute a new leaf may be given"
                    ),
                });
            }
            template.insert(attribute.to_string(), value.to_string());
        }
    }
    if !enabled {
        return Ok(None);
    }
    Ok(Some(AutoCreation {
        max_queues,
        template,
    }))
}

/// The scheduler-wide expiration time, in ms.
pub fn expiration_ms(properties: &QueueProperties) -> Result<u64, QueueError> {
    let property = format!("{PREFIX}{EXPIRATION}");
    let Some(text) = properties.get(&property) else {
        return Ok(DEFAULT_EXPIRATION_S * 1000);
    };
    text.trim()
        .parse::<u64>()
        .ok()
        .filter(|s| (1..=MAX_EXPIRATION_S).contains(s))
        .map(|s| s * 1000)
        .ok_or_else(|| QueueError::BadValue {
            property,
            reason: format!(
                "{text:?} is not a whole number of seconds from 1 to {MAX_EXPIRATION_S}"
            ),
        })
}

/// Whether dynamic leaf `path` goes once idle (its
/// `queue-auto-removal.enable`, from a template; true by default).
pub fn removable(properties: &QueueProperties, path: &str) -> bool {
    properties
        .get(&format!("{PREFIX}{path}.{AUTO_REMOVAL}"))
        .is_none_or(|v| v.trim() != "false")
}

/// Why a leaf could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CreationError {
    /// No parent there allows auto-creation.
    #[error(
        "queue {path} does not exist, and {parent} does not create queues (auto-queue-creation-v2.enabled)"
    )]
    NotAllowed {
        /// The leaf asked for.
        path: String,
        /// Its parent's path.
        parent: String,
    },
    /// The name is no queue name.
    #[error("cannot auto create queue {path}: {reason}")]
    BadName {
        /// The leaf asked for.
        path: String,
        /// Why.
        reason: String,
    },
    /// The parent holds `max-queues` children already (YARN's text).
    #[error(
        "Cannot auto create queue {path}. Max Child Queue limit exceeded which is configured as: {max} and number of child queues is: {count}"
    )]
    TooMany {
        /// The leaf asked for.
        path: String,
        /// The parent's `max-queues`.
        max: usize,
        /// Its children now.
        count: usize,
    },
    /// The parent's children are not all weighted (YARN's legacy queue
    /// mode, its default: a new leaf is `1w`).
    #[error(
        "Trying to create new queue={path} but not all the queues under parent={parent} are using weight-based capacity"
    )]
    NotWeights {
        /// The leaf asked for.
        path: String,
        /// Its parent's path.
        parent: String,
    },
}

impl CreationError {
    /// The leaf it is about.
    pub fn path(&self) -> &str {
        match self {
            CreationError::NotAllowed { path, .. }
            | CreationError::BadName { path, .. }
            | CreationError::TooMany { path, .. }
            | CreationError::NotWeights { path, .. } => path,
        }
    }
}

/// Whether leaves are made new (`max-queues` holds) or again, over a
/// refresh or restart (those made before stay, whatever the limit is now,
/// as YARN's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Made {
    /// For an app now.
    New,
    /// Made before.
    Again,
}

/// `properties` (those of `tree`) with dynamic leaves `paths` added: each
/// appended to its parent's `queues`, given the parent's template and
/// weight `1w` unless the template gives a capacity. Each must be new,
/// named as no queue of `tree` is, under a parent of `tree` that allows
/// it and (when `made` is new) has room.
pub fn with_leaves<'a>(
    tree: &QueueTree,
    paths: impl IntoIterator<Item = &'a str>,
    made: Made,
) -> Result<QueueProperties, CreationError> {
    let mut properties = tree.properties().clone();
    let mut added: BTreeMap<usize, usize> = BTreeMap::new();
    let mut names: std::collections::HashSet<&str> =
        tree.queues().iter().map(|q| q.name.as_str()).collect();
    for path in paths {
        let (parent_path, name) = path.rsplit_once('.').unwrap_or(("", path));
        check_name(path, name)?;
        // A queue's name (a parent's, root's, a leaf's elsewhere) is taken:
        // apps and mappings find queues by name.
        if !names.insert(name) {
            return Err(CreationError::BadName {
                path: path.into(),
                reason: format!("{name} is the name of a queue already"),
            });
        }
        let not_allowed = || CreationError::NotAllowed {
            path: path.into(),
            parent: parent_path.into(),
        };
        let index = tree
            .queues()
            .iter()
            .position(|q| q.path == parent_path)
            .ok_or_else(not_allowed)?;
        let parent = &tree.queues()[index];
        let auto = parent.auto_creation.as_ref().ok_or_else(not_allowed)?;
        let count = parent.children.len() + added.get(&index).copied().unwrap_or(0);
        if made == Made::New && count >= auto.max_queues {
            return Err(CreationError::TooMany {
                path: path.into(),
                max: auto.max_queues,
                count,
            });
        }
        if parent
            .children
            .iter()
            .any(|&c| tree.queues()[c].weight.is_none())
        {
            return Err(CreationError::NotWeights {
                path: path.into(),
                parent: parent_path.into(),
            });
        }
        *added.entry(index).or_default() += 1;
        let queues_key = format!("{PREFIX}{parent_path}.queues");
        let listed = match properties.get(&queues_key).map(str::trim) {
            Some(list) if !list.is_empty() => format!("{list},{name}"),
            _ => name.to_string(),
        };
        properties.set(&queues_key, &listed);
        properties.set(&format!("{PREFIX}{path}.capacity"), "1w");
        for (attribute, value) in &auto.template {
            properties.set(&format!("{PREFIX}{path}.{attribute}"), value);
        }
    }
    Ok(properties)
}

/// `properties` without dynamic leaf `path`: out of its parent's `queues`,
/// and every property under it gone.
pub fn without_leaf(properties: &QueueProperties, path: &str) -> QueueProperties {
    let (parent_path, name) = path.rsplit_once('.').unwrap_or(("", path));
    let mut kept = QueueProperties::default();
    let own = format!("{PREFIX}{path}.");
    for (key, value) in properties.iter() {
        if !key.starts_with(&own) {
            kept.set(key, value);
        }
    }
    let queues_key = format!("{PREFIX}{parent_path}.queues");
    if let Some(list) = properties.get(&queues_key) {
        let rest: Vec<&str> = list
            .split(',')
            .map(str::trim)
            .filter(|child| !child.is_empty() && *child != name)
            .collect();
        kept.set(&queues_key, &rest.join(","));
    }
    kept
}

/// Whether a leaf named `name` could be made in `tree` (a name no queue
/// there has, of letters, digits, `_` and `-`, at most
/// [`MAX_NAME_BYTES`]).
pub fn may_be_named(tree: &QueueTree, name: &str) -> bool {
    check_name(name, name).is_ok() && !tree.queues().iter().any(|q| q.name == name)
}

/// A dynamic leaf's name: as a configured queue's (letters, digits, `_`
/// and `-`), at most [`MAX_NAME_BYTES`].
fn check_name(path: &str, name: &str) -> Result<(), CreationError> {
    let bad = |reason: String| CreationError::BadName {
        path: path.into(),
        reason,
    };
    if name.is_empty() {
        return Err(bad("the queue name is empty".into()));
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(bad(format!(
            "the queue name is {} bytes, at most {MAX_NAME_BYTES}",
            name.len()
        )));
    }
    if !super::tree::is_queue_name(name) {
        return Err(bad(format!(
            "{name:?} is not a queue name (letters, digits, _ and - only)"
        )));
    }
    Ok(())
}

/// Each parent's templates give a new leaf a valid configuration (checked
/// where the configuration is read, not first when an app needs a leaf:
/// a template no leaf can have would also keep those made before from
/// being made again).
pub fn check_templates(tree: &QueueTree) -> Result<(), QueueError> {
    const PROBE: &str = "weft-template-check";
    for parent in tree.queues().iter().filter(|q| q.auto_creation.is_some()) {
        let path = format!("{}.{PROBE}", parent.path);
        // A queue of that name already: the templates are checked when
        // leaves are made.
        let Ok(properties) = with_leaves(tree, [path.as_str()], Made::Again) else {
            continue;
        };
        if let Err(error) = QueueTree::from_properties(&properties) {
            return Err(QueueError::BadValue {
                property: format!("{}{}.{}*", PREFIX, parent.path, TEMPLATE),
                reason: format!(
                    "a new leaf would be refused: {}",
                    error
                        .to_string()
                        .replace(&path, &format!("{}.<new leaf>", parent.path))
                ),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(extra: &[(&str, &str)]) -> QueueTree {
        let mut properties = QueueProperties::default();
        for (name, value) in [
            ("root.queues", "default,users"),
            ("root.default.capacity", "50"),
            ("root.users.capacity", "50"),
            ("root.users.auto-queue-creation-v2.enabled", "true"),
            ("root.users.auto-queue-creation-v2.max-queues", "2"),
            (
                "root.users.auto-queue-creation-v2.template.maximum-capacity",
                "40",
            ),
            (
                "root.users.auto-queue-creation-v2.leaf-template.maximum-capacity",
                "30",
            ),
        ]
        .iter()
        .chain(extra)
        {
            properties.set(&format!("{PREFIX}{name}"), value);
        }
        QueueTree::from_properties(&properties).unwrap()
    }

    #[test]
    fn a_parent_without_children_takes_weighted_leaves_from_its_templates_up_to_its_limit() {
        let tree = tree(&[]);
        let users = tree
            .queues()
            .iter()
            .find(|q| q.path == "root.users")
            .unwrap();
        assert!(!users.is_leaf(), "a parent that creates is no leaf");
        assert_eq!(tree.leaf("users"), None);
        let properties =
            with_leaves(&tree, ["root.users.alice", "root.users.bob"], Made::New).unwrap();
        let grown = QueueTree::from_properties(&properties).unwrap();
        let alice = &grown.queues()[grown.leaf("root.users.alice").unwrap()];
        assert_eq!(alice.weight, Some(1.0));
        assert_eq!(alice.maximum_capacity, 30.0, "the leaf template wins");
        // Its share cut to its maximum: it could never hold more.
        assert_eq!(alice.capacity, 30.0);
        assert_eq!(
            with_leaves(&grown, ["root.users.carol"], Made::New).unwrap_err(),
            CreationError::TooMany {
                path: "root.users.carol".into(),
                max: 2,
                count: 2
            }
        );
        // Made again (a restart, a refresh), a lowered limit keeps them.
        let again = ["root.users.a", "root.users.b", "root.users.c"];
        assert!(with_leaves(&tree, again, Made::Again).is_ok());
        // Gone again: nothing of it left.
        let fewer = without_leaf(&properties, "root.users.alice");
        assert!(!fewer.iter().any(|(k, _)| k.contains("alice")));
        let fewer = QueueTree::from_properties(&fewer).unwrap();
        assert_eq!(fewer.leaf("alice"), None);
        assert!(fewer.leaf("bob").is_some());
        // The last one gone: a parent without children, still no leaf.
        let alone = without_leaf(fewer.properties(), "root.users.bob");
        let alone = QueueTree::from_properties(&alone).unwrap();
        let users = alone.queues().iter().find(|q| q.path == "root.users");
        assert!(users.is_some_and(|q| q.children.is_empty() && !q.is_leaf()));
    }

    #[test]
    fn what_a_parent_cannot_hold_is_refused_by_name() {
        let tree = tree(&[]);
        for (path, expected) in [
            ("root.default.x", "root.default does not create queues"),
            ("root.nowhere.x", "root.nowhere does not create queues"),
            ("root.users.a b", "not a queue name"),
            ("root.users.", "the queue name is empty"),
            ("root.users.users", "the name of a queue already"),
            ("root.users.root", "the name of a queue already"),
            ("root.users.default", "the name of a queue already"),
        ] {
            let error = with_leaves(&tree, [path], Made::New)
                .unwrap_err()
                .to_string();
            assert!(error.contains(expected), "{path}: {error}");
        }
        let long = format!("root.users.{}", "x".repeat(MAX_NAME_BYTES + 1));
        assert!(matches!(
            with_leaves(&tree, [long.as_str()], Made::New),
            Err(CreationError::BadName { .. })
        ));
        // Percentages among the children: a 1w leaf would mix.
        let mixed = tree_with_static_percent();
        assert!(matches!(
            with_leaves(&mixed, ["root.users.alice"], Made::New),
            Err(CreationError::NotWeights { .. })
        ));
    }

    fn tree_with_static_percent() -> QueueTree {
        tree(&[
            ("root.users.queues", "ops"),
            ("root.users.ops.capacity", "100"),
        ])
    }

    #[test]
    fn a_template_no_leaf_can_have_is_refused_where_it_is_read() {
        let bad = tree(&[(
            "root.users.auto-queue-creation-v2.leaf-template.user-limit-factor",
            "-1",
        )]);
        let error = check_templates(&bad).unwrap_err().to_string();
        assert!(
            error.contains("root.users.auto-queue-creation-v2.template.")
                && error.contains("root.users.<new leaf>.user-limit-factor"),
            "{error}"
        );
        assert_eq!(check_templates(&tree(&[])), Ok(()));
    }

    #[test]
    fn settings_out_of_bounds_are_refused_naming_the_property() {
        for (attribute, value) in [("max-queues", "0"), ("template.queues", "x")] {
            let mut properties = tree(&[]).properties().clone();
            let name = format!("{PREFIX}root.users.auto-queue-creation-v2.{attribute}");
            properties.set(&name, value);
            let error = QueueTree::from_properties(&properties)
                .unwrap_err()
                .to_string();
            assert!(error.contains(&name), "{error}");
        }
        let mut properties = tree(&[]).properties().clone();
        properties.set(&format!("{PREFIX}{EXPIRATION}"), "0");
        assert!(expiration_ms(&properties).is_err());
        properties.set(&format!("{PREFIX}{EXPIRATION}"), "60");
        assert_eq!(expiration_ms(&properties), Ok(60_000));
    }
}
