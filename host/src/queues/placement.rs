//! Where an app goes: YARN's legacy `queue-mappings` (`u:user:queue`,
//! `g:group:queue`, with `%user`, `%primary_group` and `%secondary_group`),
//! read with the queue tree and applied at submission, and whether a queue
//! an app names may be made for it (a parent's auto-creation).

use super::{PREFIX, QueueError, QueueTree};

/// `yarn.scheduler.capacity.queue-mappings`.
pub const MAPPINGS: &str = "queue-mappings";
/// `yarn.scheduler.capacity.queue-mappings-override.enable`.
pub const OVERRIDE: &str = "queue-mappings-override.enable";
/// The most mappings read.
pub const MAX_MAPPINGS: usize = 1000;

/// What a mapping matches.
#[derive(Debug, Clone, PartialEq)]
enum Source {
    /// `u:%user`: every user.
    AnyUser,
    /// `u:name`.
    User(String),
    /// `g:name`: a member of the group.
    Group(String),
}

/// One part of a mapping's target path.
#[derive(Debug, Clone, PartialEq)]
enum Part {
    Name(String),
    User,
    PrimaryGroup,
    SecondaryGroup,
}

/// One mapping: who it matches and where it puts them.
#[derive(Debug, Clone, PartialEq)]
struct Mapping {
    source: Source,
    target: Vec<Part>,
}

/// The mappings in force, in order, and whether they override the queue an
/// app names.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Mappings {
    mappings: Vec<Mapping>,
    override_named: bool,
}

/// Where the mappings put an app.
#[derive(Debug, Clone, PartialEq)]
pub enum Placed {
    /// No mapping applies: the queue the app names.
    AsNamed,
    /// This queue (a full path): a leaf, or one its parent may create.
    Queue(String),
    /// The matching mapping gave no queue an app can go to, nor is there
    /// a `root.default` (YARN's words).
    Rejected,
}

impl Mappings {
    /// Reads the mappings of `tree`'s properties, checking each: its form,
    /// and that a target without variables is a leaf or may be made.
    pub(super) fn read(tree: &QueueTree) -> Result<Mappings, QueueError> {
        let properties = tree.properties();
        let override_key = format!("{PREFIX}{OVERRIDE}");
        let override_named = match properties.get(&override_key).map(str::trim) {
            None | Some("false") => false,
            Some("true") => true,
            Some(other) => {
                return Err(QueueError::BadValue {
                    property: override_key,
                    reason: format!("{other:?} is not true or false"),
                });
            }
        };
        let key = format!("{PREFIX}{MAPPINGS}");
        let Some(text) = properties.get(&key) else {
            return Ok(Mappings {
                mappings: Vec::new(),
                override_named,
            });
        };
        let bad = |reason: String| QueueError::BadValue {
            property: key.clone(),
            reason,
        };
        let entries: Vec<&str> = text
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .collect();
        if entries.len() > MAX_MAPPINGS {
            return Err(bad(format!(
                "{} mappings; at most {MAX_MAPPINGS}",
                entries.len()
            )));
        }
        let mut mappings = Vec::with_capacity(entries.len());
        for entry in entries {
            let mapping = parse(entry).map_err(|reason| bad(format!("{entry:?}: {reason}")))?;
            // A fixed target is checked now, as YARN checks it at a load.
            if let Some(path) = fixed(&mapping.target)
                && tree.resolve(&path).is_none()
            {
                return Err(bad(format!(
                    "{entry:?}: queue {path} is not a leaf, and no parent would create it"
                )));
            }
            mappings.push(mapping);
        }
        Ok(Mappings {
            mappings,
            override_named,
        })
    }

    /// Where app of `user` (in `groups`, the primary first) naming queue
    /// `named` goes in `tree`: the mappings apply when it names none or
    /// `default`, or always with the override; the first mapping that
    /// matches decides (YARN's order); a target that is no leaf and cannot
    /// be made sends the app to `root.default`.
    pub fn place(&self, tree: &QueueTree, user: &str, groups: &[String], named: &str) -> Placed {
        let named = named.trim();
        if self.mappings.is_empty()
            || !(self.override_named || named.is_empty() || named == "default")
        {
            return Placed::AsNamed;
        }
        let Some(mapping) = self.mappings.iter().find(|m| match &m.source {
            Source::AnyUser => true,
            Source::User(name) => name == user,
            Source::Group(group) => groups.iter().any(|g| g == group),
        }) else {
            return Placed::AsNamed;
        };
        let target = substitute(&mapping.target, tree, user, groups);
        if let Some(path) = target.as_deref().and_then(|t| tree.resolve(t)) {
            return Placed::Queue(path);
        }
        match tree.leaf("root.default") {
            Some(_) => Placed::Queue("root.default".into()),
            None => Placed::Rejected,
        }
    }
}

/// `u:source:target` or `g:source:target`.
fn parse(entry: &str) -> Result<Mapping, String> {
    let mut fields = entry.split(':').map(str::trim);
    let (Some(kind), Some(source), Some(target), None) =
        (fields.next(), fields.next(), fields.next(), fields.next())
    else {
        return Err("a mapping is u:user:queue or g:group:queue".into());
    };
    let source = match (kind, source) {
        (_, "") => return Err("the user or group is empty".into()),
        ("u", "%user") => Source::AnyUser,
        ("u", name) if !name.starts_with('%') => Source::User(name.into()),
        ("g", name) if !name.starts_with('%') => Source::Group(name.into()),
        ("u" | "g", name) => return Err(format!("{name} is no user or group to match")),
        (other, _) => return Err(format!("{other:?} is not u (a user) or g (a group)")),
    };
    let mut parts = Vec::new();
    for part in target.split('.') {
        parts.push(match part {
            "%user" => Part::User,
            "%primary_group" => Part::PrimaryGroup,
            "%secondary_group" => Part::SecondaryGroup,
            "" => return Err("the queue has an empty part".into()),
            name if super::tree::is_queue_name(name) => Part::Name(name.into()),
            name => {
                return Err(format!(
                    "{name:?} is neither a queue name (letters, digits, _ and -) nor %user, %primary_group or %secondary_group"
                ));
            }
        });
    }
    Ok(Mapping {
        source,
        target: parts,
    })
}

/// The target, when it has no variables.
fn fixed(target: &[Part]) -> Option<String> {
    let names: Option<Vec<&str>> = target
        .iter()
        .map(|p| match p {
            Part::Name(name) => Some(name.as_str()),
            _ => None,
        })
        .collect();
    Some(names?.join("."))
}

/// The target with its variables given: names cleaned as YARN cleans them
/// (`.` → `_dot_`); `%secondary_group` is the first of the user's other
/// groups that names a queue. None when a variable has no value.
fn substitute(target: &[Part], tree: &QueueTree, user: &str, groups: &[String]) -> Option<String> {
    let clean = |name: &str| name.replace('.', "_dot_");
    let mut parts = Vec::with_capacity(target.len());
    for part in target {
        parts.push(match part {
            Part::Name(name) => name.clone(),
            Part::User => clean(user),
            Part::PrimaryGroup => clean(groups.first()?),
            Part::SecondaryGroup => groups
                .iter()
                .skip(1)
                .map(|g| clean(g))
                .find(|g| tree.queues().iter().any(|q| &q.name == g))?,
        });
    }
    Some(parts.join("."))
}

impl QueueTree {
    /// The full path of the leaf `target` names (a leaf's name, or a path
    /// whose first part may be a queue's name), or of the leaf a parent
    /// there would create; None if neither.
    pub fn resolve(&self, target: &str) -> Option<String> {
        let (first, rest) = match target.split_once('.') {
            Some((first, rest)) => (first, Some(rest)),
            None => (target, None),
        };
        let Some(rest) = rest else {
            return self.leaf(target).map(|i| self.queues()[i].path.clone());
        };
        // The first part: root, or the one queue of that name.
        let start = if first == "root" {
            "root".to_string()
        } else {
            let mut named = self.queues().iter().filter(|q| q.name == first);
            match (named.next(), named.next()) {
                (Some(queue), None) => queue.path.clone(),
                _ => return None,
            }
        };
        let path = format!("{start}.{rest}");
        if let Some(index) = self.queues().iter().position(|q| q.path == path) {
            return self.queues()[index].is_leaf().then_some(path);
        }
        let (parent, name) = path.rsplit_once('.')?;
        let creates = self
            .queues()
            .iter()
            .any(|q| q.path == parent && q.auto_creation.is_some());
        (creates && super::auto_creation::may_be_named(self, name)).then_some(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queues::QueueProperties;

    fn tree(mappings: &str, extra: &[(&str, &str)]) -> Result<QueueTree, QueueError> {
        let mut properties = QueueProperties::default();
        for (name, value) in [
            ("root.queues", "default,users,eng"),
            ("root.default.capacity", "40"),
            ("root.users.capacity", "40"),
            ("root.users.auto-queue-creation-v2.enabled", "true"),
            ("root.eng.capacity", "20"),
            ("root.eng.queues", "build,ci"),
            ("root.eng.build.capacity", "50"),
            ("root.eng.ci.capacity", "50"),
            ("queue-mappings", mappings),
        ]
        .iter()
        .chain(extra)
        {
            properties.set(&format!("{PREFIX}{name}"), value);
        }
        QueueTree::from_properties(&properties)
    }

    fn groups(names: &[&str]) -> Vec<String> {
        names.iter().map(|g| g.to_string()).collect()
    }

    #[test]
    fn the_first_matching_mapping_decides_with_its_variables_given() {
        let tree = tree(
            "u:carol:ci, g:builders:build, u:dave:%primary_group, u:erin:%secondary_group, u:%user:users.%user",
            &[],
        )
        .unwrap();
        let place = |user: &str, g: &[&str], named: &str| {
            tree.placement.place(&tree, user, &groups(g), named)
        };
        let queue = |path: &str| Placed::Queue(path.into());
        assert_eq!(place("carol", &["builders"], ""), queue("root.eng.ci"));
        assert_eq!(
            place("bob", &["x", "builders"], "default"),
            queue("root.eng.build")
        );
        // Not naming default: as named (no override).
        assert_eq!(place("bob", &["builders"], "ci"), Placed::AsNamed);
        assert_eq!(place("dave", &["build"], ""), queue("root.eng.build"));
        // A primary group naming no queue: root.default, not the next mapping.
        assert_eq!(place("dave", &["nothing"], ""), queue("root.default"));
        assert_eq!(
            place("erin", &["x", "nothing", "ci"], ""),
            queue("root.eng.ci")
        );
        // users.%user: the first part is a queue's name; the leaf is made.
        assert_eq!(place("alice", &[], ""), queue("root.users.alice"));
        assert_eq!(place("a.b", &[], ""), queue("root.users.a_dot_b"));
        // A user whose name no queue may have, or a queue's name: default.
        assert_eq!(place("a b", &[], ""), queue("root.default"));
        assert_eq!(place("eng", &[], ""), queue("root.default"));
    }

    #[test]
    fn the_override_applies_mappings_to_every_app() {
        let tree = tree("u:%user:ci", &[("queue-mappings-override.enable", "true")]).unwrap();
        assert_eq!(
            tree.placement.place(&tree, "alice", &[], "build"),
            Placed::Queue("root.eng.ci".into())
        );
    }

    #[test]
    fn mappings_of_bad_form_or_to_no_queue_are_refused_naming_the_property() {
        for (mappings, expected) in [
            ("x:alice:ci", "not u"),
            ("u:alice", "u:user:queue"),
            ("u::ci", "empty"),
            ("u:alice:eng.", "empty part"),
            ("u:alice:%group", "neither a queue name"),
            ("u:alice:eng", "not a leaf"),
            ("u:alice:nowhere", "not a leaf"),
            ("u:alice:root.eng.new", "no parent would create it"),
            ("g:%user:ci", "no user or group"),
        ] {
            let error = tree(mappings, &[]).unwrap_err().to_string();
            assert!(
                error.contains("queue-mappings") && error.contains(expected),
                "{mappings}: {error}"
            );
        }
        let many = vec!["u:a:ci"; MAX_MAPPINGS + 1].join(",");
        assert!(tree(&many, &[]).is_err());
    }

    #[test]
    fn without_root_default_a_failed_mapping_rejects_the_app() {
        let mut properties = QueueProperties::default();
        for (name, value) in [
            ("root.queues", "ci"),
            ("root.ci.capacity", "100"),
            ("queue-mappings", "u:%user:%primary_group"),
        ] {
            properties.set(&format!("{PREFIX}{name}"), value);
        }
        let tree = QueueTree::from_properties(&properties).unwrap();
        assert_eq!(
            tree.placement.place(&tree, "a", &groups(&["x"]), ""),
            Placed::Rejected
        );
        assert_eq!(
            tree.placement.place(&tree, "a", &groups(&["ci"]), ""),
            Placed::Queue("root.ci".into())
        );
    }
}
