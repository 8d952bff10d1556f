//! The projects file (`weft.security.projects-file`): who may charge each
//! project. An app is charged to the project it names, so without this any
//! user could spend any project's credits.
//!
//! ```toml
//! [projects]
//! genomics = ["alice", "bob", "@bio"]   # users, and @groups of the users file
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The projects file: each project's members, users and groups.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Projects {
    members: BTreeMap<String, Members>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Members {
    users: BTreeSet<String>,
    groups: BTreeSet<String>,
}

impl Projects {
    /// Reads a TOML file of `[projects]` → `NAME = ["user", "@group", …]`;
    /// the reason if it cannot be read or parsed.
    pub fn from_file(path: &Path) -> Result<Projects, String> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct File {
            #[serde(default)]
            projects: BTreeMap<String, Vec<String>>,
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read projects file {}: {e}", path.display()))?;
        let file: File =
            toml::from_str(&text).map_err(|e| format!("projects file {}: {e}", path.display()))?;
        Ok(Projects::from_lists(file.projects))
    }

    /// Projects from `NAME → ["user", "@group", …]`.
    pub fn from_lists(lists: BTreeMap<String, Vec<String>>) -> Projects {
        let members = lists
            .into_iter()
            .map(|(project, names)| {
                let mut members = Members::default();
                for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
                    match name.strip_prefix('@') {
                        Some(group) => members.groups.insert(group.to_string()),
                        None => members.users.insert(name.to_string()),
                    };
                }
                (project, members)
            })
            .collect();
        Projects { members }
    }

    /// Whether `user` (in `groups`) may charge `project`; a project the
    /// file does not list has no members.
    pub fn allows(&self, project: &str, user: &str, groups: &BTreeSet<String>) -> bool {
        self.members.get(project).is_some_and(|members| {
            members.users.contains(user) || !members.groups.is_disjoint(groups)
        })
    }

    /// Whether the file lists `project`.
    pub fn lists(&self, project: &str) -> bool {
        self.members.contains_key(project)
    }

    /// The projects `user` may charge, for the refusal's message.
    pub fn of(&self, user: &str, groups: &BTreeSet<String>) -> Vec<&str> {
        self.members
            .keys()
            .filter(|project| self.allows(project, user, groups))
            .map(String::as_str)
            .collect()
    }
}
