//! The users file (`weft.security.users-file`): which groups each user is in.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

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

    /// The groups the file lists for `user`; none if it does not list them.
    pub fn groups_of(&self, user: &str) -> BTreeSet<String> {
        self.groups.get(user).cloned().unwrap_or_default()
    }
}

impl Directory {
    /// A directory of the given users and their groups (tests, simulate).
    pub fn with_groups(groups: BTreeMap<String, BTreeSet<String>>) -> Directory {
        Directory { groups }
    }
}
