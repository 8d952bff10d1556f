//! Who is asking, and what they may do. Until authentication exists the
//! caller's identity is the `X-Weft-User` request header (the CLI's `--user`),
//! or `weft.security.default-user` when there is none; groups come from the
//! users file (`weft.security.users-file`). Access is decided by YARN-style
//! ACLs: `"user1,user2 group1,group2"`, `*` for everyone, a blank for nobody.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::queues::QueueTree;

/// The header that names the caller.
pub const USER_HEADER: &str = "x-weft-user";

/// A parsed access control list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessControlList {
    everyone: bool,
    users: BTreeSet<String>,
    groups: BTreeSet<String>,
}

impl AccessControlList {
    pub fn parse(text: &str) -> AccessControlList {
        if text.trim() == "*" {
            return AccessControlList {
                everyone: true,
                users: BTreeSet::new(),
                groups: BTreeSet::new(),
            };
        }
        // "users groups": the first space separates the two lists.
        let (users, groups) = text.split_once(' ').unwrap_or((text, ""));
        let names = |list: &str| {
            list.split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(String::from)
                .collect()
        };
        AccessControlList {
            everyone: false,
            users: names(users),
            groups: names(groups),
        }
    }

    pub fn allows(&self, user: &str, groups: &BTreeSet<String>) -> bool {
        self.everyone || self.users.contains(user) || !self.groups.is_disjoint(groups)
    }
}

/// The users file: each user's groups.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Directory {
    groups: BTreeMap<String, BTreeSet<String>>,
}

impl Directory {
    /// Reads a TOML file of `[users]` → `NAME = ["group", …]`.
    pub fn from_file(path: &Path) -> Result<Directory, String> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct File {
            #[serde(default)]
            users: BTreeMap<String, BTreeSet<String>>,
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read users file {}: {e}", path.display()))?;
        let file: File =
            toml::from_str(&text).map_err(|e| format!("users file {}: {e}", path.display()))?;
        Ok(Directory { groups: file.users })
    }

    pub fn groups_of(&self, user: &str) -> BTreeSet<String> {
        self.groups.get(user).cloned().unwrap_or_default()
    }
}

/// Everything access decisions need.
#[derive(Debug, Clone)]
pub struct Security {
    pub directory: Directory,
    pub default_user: String,
    /// `yarn.admin.acl`: who administers the cluster (queues, policies).
    pub admins: AccessControlList,
}

impl Security {
    /// Access control from `yarn.admin.acl` and the `weft.security.*` settings.
    pub fn from_settings(settings: &crate::config::SecuritySettings) -> Result<Security, String> {
        let directory = match &settings.users_file {
            Some(path) => Directory::from_file(path)?,
            None => Directory::default(),
        };
        Ok(Security {
            directory,
            default_user: settings.default_user.clone(),
            admins: AccessControlList::parse(settings.admin_acl.as_deref().unwrap_or("*")),
        })
    }

    /// The caller: the header's user, or the default one.
    pub fn caller(&self, header: Option<&str>) -> String {
        header
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .unwrap_or(&self.default_user)
            .to_string()
    }

    /// Whether `user` is in `yarn.admin.acl`.
    pub fn is_admin(&self, user: &str) -> bool {
        self.admins.allows(user, &self.directory.groups_of(user))
    }

    /// Only administrators change queues or policies.
    pub fn check_admin(&self, user: &str, action: &str) -> Result<(), String> {
        if self.is_admin(user) {
            Ok(())
        } else {
            Err(format!(
                "user {user} may not {action}: only administrators (yarn.admin.acl) may"
            ))
        }
    }

    /// As YARN: a user may submit to a leaf queue if its submit or administer
    /// ACL, or that of any ancestor, lets them.
    pub fn check_submit(&self, user: &str, tree: &QueueTree, leaf: usize) -> Result<(), String> {
        let groups = self.directory.groups_of(user);
        let queues = tree.queues();
        let mut current = Some(leaf);
        while let Some(index) = current {
            let queue = &queues[index];
            let submit = AccessControlList::parse(&queue.acl_submit_applications);
            let administer = AccessControlList::parse(&queue.acl_administer_queue);
            if submit.allows(user, &groups) || administer.allows(user, &groups) {
                return Ok(());
            }
            current = queue.parent;
        }
        let queue = &queues[leaf];
        Err(format!(
            "user {user} may not submit to {}: acl_submit_applications is {:?} and no ancestor queue allows it",
            queue.path, queue.acl_submit_applications
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queues::{PREFIX, QueueProperties};

    fn groups(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn acls_parse_as_yarn_writes_them() {
        let cases = [
            ("*", "anyone", &[][..], true),
            ("alice,bob", "bob", &[], true),
            ("alice,bob", "carol", &[], false),
            ("alice admins,ops", "carol", &["ops"], true),
            (" admins", "alice", &[], false),
            (" ", "alice", &["admins"], false),
            ("", "alice", &[], false),
        ];
        for (acl, user, member_of, allowed) in cases {
            assert_eq!(
                AccessControlList::parse(acl).allows(user, &groups(member_of)),
                allowed,
                "{acl:?} {user}"
            );
        }
    }

    #[test]
    fn submission_is_allowed_by_the_queue_or_an_ancestor() {
        let mut properties = QueueProperties::default();
        for (name, value) in [
            ("root.queues", "a,b"),
            ("root.acl_submit_applications", " "),
            ("root.acl_administer_queue", " admins"),
            ("root.a.capacity", "50"),
            ("root.a.acl_submit_applications", "alice"),
            ("root.b.capacity", "50"),
            ("root.b.acl_submit_applications", " "),
            // Unset ACLs are "*", as in YARN: close them to mean anything.
            ("root.a.acl_administer_queue", " "),
            ("root.b.acl_administer_queue", " "),
        ] {
            properties.set(&format!("{PREFIX}{name}"), value);
        }
        let tree = QueueTree::from_properties(&properties).unwrap();
        let security = Security {
            directory: Directory {
                groups: BTreeMap::from([("root-user".into(), groups(&["admins"]))]),
            },
            default_user: "anonymous".into(),
            admins: AccessControlList::parse(" admins"),
        };
        let (a, b) = (tree.leaf("a").unwrap(), tree.leaf("b").unwrap());
        assert!(security.check_submit("alice", &tree, a).is_ok());
        assert!(
            security
                .check_submit("alice", &tree, b)
                .unwrap_err()
                .contains("may not submit to root.b")
        );
        assert!(
            security.check_submit("root-user", &tree, b).is_ok(),
            "root's administer ACL covers b"
        );
        assert!(security.check_admin("alice", "load a policy").is_err());
        assert!(security.check_admin("root-user", "load a policy").is_ok());
        assert_eq!(security.caller(None), "anonymous");
        assert_eq!(security.caller(Some("bob")), "bob");
    }
}
