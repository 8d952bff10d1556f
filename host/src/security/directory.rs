//! The users file (`weft.security.users-file`): which groups each user is in.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The users file: each user's groups, in the file's order (the first is
/// the user's primary group, as Hadoop's group mapping lists it first).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Directory {
    groups: BTreeMap<String, Vec<String>>,
}

impl Directory {
    /// Reads a TOML file of `[users]` → `NAME = ["group", …]`.
    pub fn from_file(path: &Path) -> Result<Directory, String> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct File {
            #[serde(default)]
            users: BTreeMap<String, Vec<String>>,
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read users file {}: {e}", path.display()))?;
        let file: File =
            toml::from_str(&text).map_err(|e| format!("users file {}: {e}", path.display()))?;
        let groups = file
            .users
            .into_iter()
            .map(|(user, listed)| {
                let mut seen = BTreeSet::new();
                let groups = listed
                    .into_iter()
                    .filter(|g| seen.insert(g.clone()))
                    .collect();
                (user, groups)
            })
            .collect();
        Ok(Directory { groups })
    }

    /// The groups the file lists for `user`; none if it does not list them.
    pub fn groups_of(&self, user: &str) -> BTreeSet<String> {
        self.groups
            .get(user)
            .map(|groups| groups.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The groups the file lists for `user`, in its order: the primary
    /// group first.
    pub fn ordered_groups_of(&self, user: &str) -> &[String] {
        self.groups.get(user).map_or(&[], Vec::as_slice)
    }
}

impl Directory {
    /// A directory of the given users and their groups (tests, simulate).
    pub fn with_groups(groups: BTreeMap<String, BTreeSet<String>>) -> Directory {
        let groups = groups
            .into_iter()
            .map(|(user, set)| (user, set.into_iter().collect()))
            .collect();
        Directory { groups }
    }
}
