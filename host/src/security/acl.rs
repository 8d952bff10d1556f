//! YARN's access control lists: `"user1,user2 group1,group2"`, `*` for
//! everyone, a blank for nobody.

use std::collections::BTreeSet;

/// A parsed access control list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessControlList {
    everyone: bool,
    users: BTreeSet<String>,
    groups: BTreeSet<String>,
}

impl AccessControlList {
    /// Parses YARN's ACL syntax: `*` is everyone; else comma-separated users,
    /// then after the first space comma-separated groups (a blank or empty
    /// list is nobody). Never fails: empty names are skipped.
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

    /// Whether the list lets in `user`, a member of `groups`: everyone, the
    /// user named, or one of their groups named.
    pub fn allows(&self, user: &str, groups: &BTreeSet<String>) -> bool {
        self.everyone || self.users.contains(user) || !self.groups.is_disjoint(groups)
    }
}

impl AccessControlList {
    /// Whether the list is `*`: open to every user.
    pub fn is_open_to_everyone(&self) -> bool {
        self.everyone
    }
}
