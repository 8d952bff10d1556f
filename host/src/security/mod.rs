//! Who is asking (authentication), and what they may do (authorization).
//!
//! Authentication has Hadoop's two-mode shape (`weft.security.authentication`):
//! `simple` takes the caller's word — the `X-Weft-User` header, else
//! `weft.security.default-user` — and is for development; `token` takes a
//! bearer token from the tokens file (`tokens.rs`) and ignores the header.
//!
//! Authorization is YARN's ACLs (`acl.rs`) with groups from the users file
//! (`directory.rs`): submission by a queue's or an ancestor's submit or
//! administer ACL; queue and policy changes by `yarn.admin.acl`; node
//! registration and heartbeats by `weft.security.node-acl`; charging a
//! project by the projects file (`projects.rs`), when there is one.

mod acl;
mod directory;
pub mod issued;
mod projects;
pub mod tokens;
pub mod yarn_tokens;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

pub use acl::AccessControlList;
pub use directory::Directory;
pub use projects::Projects;
pub use tokens::{TokenVerifier, TokensFile};

use crate::config::{Authentication, SecuritySettings};
use crate::queues::QueueTree;

/// The header that names the caller in simple mode.
pub const USER_HEADER: &str = "x-weft-user";

/// An authenticated caller and the groups the users file gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The user name, as authenticated (a token's user, or the simple-mode
    /// header or default user).
    pub user: String,
    /// The user's groups from the users file; empty when it lists none.
    pub groups: BTreeSet<String>,
}

/// Why a request's caller could not be established.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// Token mode, and no bearer token was sent.
    #[error(
        "authentication required: send Authorization: Bearer TOKEN (an administrator makes one with `weft token create USER`)"
    )]
    Missing,
    /// A bearer token the tokens file does not hold.
    #[error("the bearer token is not known (revoked, or never created on this server)")]
    Unknown,
    /// Credentials that cannot be read: a scheme other than Bearer, or a
    /// user name out of bounds; the reason.
    #[error("malformed credentials: {0}")]
    Malformed(String),
}

/// Establishes who a request comes from.
#[derive(Debug)]
pub enum Authenticator {
    /// `simple`: the `X-Weft-User` header is believed; without it the caller
    /// is `default_user`.
    Simple {
        /// `weft.security.default-user`.
        default_user: String,
    },
    /// `token`: a bearer token the verifier knows.
    Token(Arc<TokenVerifier>),
}

impl Authenticator {
    /// The authenticator `settings` ask for; in token mode the tokens file is
    /// `weft.security.tokens-file`, else DATA_DIR/tokens.toml.
    pub fn from_settings(
        settings: &SecuritySettings,
        data_dir: &Path,
    ) -> Result<Authenticator, String> {
        Ok(match settings.authentication {
            Authentication::Simple => Authenticator::Simple {
                default_user: settings.default_user.clone(),
            },
            Authentication::Token => {
                let path = settings
                    .tokens_file
                    .clone()
                    .unwrap_or_else(|| data_dir.join("tokens.toml"));
                Authenticator::Token(Arc::new(TokenVerifier::open(path)?))
            }
        })
    }

    /// The tokens file's view, in token mode.
    pub fn token_verifier(&self) -> Option<Arc<TokenVerifier>> {
        match self {
            Authenticator::Simple { .. } => None,
            Authenticator::Token(verifier) => Some(verifier.clone()),
        }
    }

    /// Which mode this is (`weft.security.authentication`).
    pub fn mode(&self) -> Authentication {
        match self {
            Authenticator::Simple { .. } => Authentication::Simple,
            Authenticator::Token(_) => Authentication::Token,
        }
    }

    /// The caller's user name, from the `X-Weft-User` header (simple mode)
    /// or the `Authorization` header (token mode).
    pub fn authenticate(
        &self,
        user_header: Option<&str>,
        authorization: Option<&str>,
    ) -> Result<String, AuthError> {
        match self {
            Authenticator::Simple { default_user } => {
                let Some(user) = user_header.map(str::trim).filter(|u| !u.is_empty()) else {
                    return Ok(default_user.clone());
                };
                crate::limits::name(USER_HEADER, user)
                    .map_err(|e| AuthError::Malformed(e.to_string()))?;
                Ok(user.to_string())
            }
            Authenticator::Token(verifier) => {
                let header = authorization.ok_or(AuthError::Missing)?.trim();
                let (scheme, token) = header.split_once(' ').unwrap_or((header, ""));
                if !scheme.eq_ignore_ascii_case("bearer") {
                    return Err(AuthError::Malformed(format!(
                        "the Authorization scheme is {scheme:?}; Weft takes Bearer"
                    )));
                }
                let token = token.trim();
                if token.is_empty() {
                    return Err(AuthError::Missing);
                }
                verifier.user_of(token).ok_or(AuthError::Unknown)
            }
        }
    }
}

/// Everything authorization decisions need.
#[derive(Debug, Clone)]
pub struct Security {
    directory: Directory,
    /// `yarn.admin.acl`: who administers the cluster (queues, policies).
    admins: AccessControlList,
    /// `weft.security.node-acl`: who may register nodes and heartbeat.
    nodes: AccessControlList,
    /// Who may charge which project; `None`: anyone, any project.
    projects: Option<Projects>,
}

impl Default for Security {
    /// Everyone may do everything: simple mode's defaults.
    fn default() -> Self {
        Security {
            directory: Directory::default(),
            admins: AccessControlList::parse("*"),
            nodes: AccessControlList::parse("*"),
            projects: None,
        }
    }
}

impl Security {
    /// Authorization from `yarn.admin.acl` and the `weft.security.*` settings.
    /// In token mode an ACL not set means the user running the server.
    pub fn from_settings(settings: &SecuritySettings) -> Result<Security, String> {
        let directory = match &settings.users_file {
            Some(path) => Directory::from_file(path)?,
            None => Directory::default(),
        };
        let projects = settings
            .projects_file
            .as_deref()
            .map(Projects::from_file)
            .transpose()?;
        let acl = |configured: &Option<String>| match configured {
            Some(text) => AccessControlList::parse(text),
            None => AccessControlList::parse(&service_user()),
        };
        Ok(Security {
            directory,
            admins: acl(&settings.admin_acl),
            nodes: acl(&settings.node_acl),
            projects,
        })
    }

    /// A security model with the given parts (tests).
    pub fn new(
        directory: Directory,
        admins: AccessControlList,
        nodes: AccessControlList,
        projects: Option<Projects>,
    ) -> Security {
        Security {
            directory,
            admins,
            nodes,
            projects,
        }
    }

    /// `user` as a caller, with their groups.
    pub fn caller(&self, user: &str) -> Caller {
        Caller {
            user: user.to_string(),
            groups: self.directory.groups_of(user),
        }
    }

    /// `user`'s groups in the users file's order, the primary first (for
    /// `queue-mappings`).
    pub fn ordered_groups_of(&self, user: &str) -> &[String] {
        self.directory.ordered_groups_of(user)
    }

    /// Whether the caller is in `yarn.admin.acl`.
    pub fn is_admin(&self, caller: &Caller) -> bool {
        self.admins.allows(&caller.user, &caller.groups)
    }

    /// Whether everyone administers the cluster (`yarn.admin.acl = *`).
    pub fn everyone_is_admin(&self) -> bool {
        self.admins.is_open_to_everyone()
    }

    /// Only administrators change queues or policies.
    pub fn check_admin(&self, caller: &Caller, action: &str) -> Result<(), String> {
        if self.is_admin(caller) {
            Ok(())
        } else {
            Err(format!(
                "user {} may not {action}: only administrators (yarn.admin.acl) may",
                caller.user
            ))
        }
    }

    /// Only callers in `weft.security.node-acl` register nodes and heartbeat.
    pub fn check_node(&self, caller: &Caller, action: &str) -> Result<(), String> {
        if self.nodes.allows(&caller.user, &caller.groups) {
            Ok(())
        } else {
            Err(format!(
                "user {} may not {action}: only node managers (weft.security.node-acl) may",
                caller.user
            ))
        }
    }

    /// Whether `project` may be charged at all: listed in the projects
    /// file, or any project when there is none.
    pub fn project_exists(&self, project: &str) -> bool {
        self.projects
            .as_ref()
            .is_none_or(|projects| projects.lists(project))
    }

    /// With a projects file, an app may be charged only to a project its
    /// submitter belongs to.
    pub fn check_project(&self, caller: &Caller, project: &str) -> Result<(), String> {
        let Some(projects) = &self.projects else {
            return Ok(());
        };
        if projects.allows(project, &caller.user, &caller.groups) {
            return Ok(());
        }
        let own = projects.of(&caller.user, &caller.groups);
        Err(format!(
            "user {} may not charge project {project:?}: it is not a member (weft.security.projects-file); its projects are [{}]",
            caller.user,
            own.join(", ")
        ))
    }

    /// Whether `caller` may `action` (kill, change, read the logs of) an app
    /// of `owner` in `leaf`, as YARN: its user, an administrator of its
    /// queue (the administer ACL of the queue or an ancestor), or a cluster
    /// administrator.
    pub fn check_app_owner(
        &self,
        caller: &Caller,
        owner: &str,
        tree: &QueueTree,
        leaf: usize,
        action: &str,
    ) -> Result<(), String> {
        if caller.user == owner || self.is_admin(caller) {
            return Ok(());
        }
        let queues = tree.queues();
        let mut current = Some(leaf);
        while let Some(queue) = current.and_then(|index| queues.get(index)) {
            if AccessControlList::parse(&queue.acl_administer_queue)
                .allows(&caller.user, &caller.groups)
            {
                return Ok(());
            }
            current = queue.parent;
        }
        let path = queues.get(leaf).map_or("its queue", |q| q.path.as_str());
        Err(format!(
            "user {} may not {action} an application of {owner}: only its user, an administrator of {path} (acl_administer_queue) or of the cluster may",
            caller.user
        ))
    }

    /// What the caller may do in queue `index` (YARN's getQueueUserAcls):
    /// submit (its or an ancestor's submit or administer ACL allows them)
    /// and administer (its or an ancestor's administer ACL, or the cluster's).
    pub fn queue_rights(&self, caller: &Caller, tree: &QueueTree, index: usize) -> (bool, bool) {
        let submit = self.check_submit(caller, tree, index).is_ok();
        let queues = tree.queues();
        let mut administer = self.is_admin(caller);
        let mut current = Some(index);
        while let (false, Some(at)) = (administer, current) {
            administer = AccessControlList::parse(&queues[at].acl_administer_queue)
                .allows(&caller.user, &caller.groups);
            current = queues[at].parent;
        }
        (submit, administer)
    }

    /// As YARN: a user may submit to a leaf queue if its submit or administer
    /// ACL, or that of any ancestor, lets them.
    pub fn check_submit(
        &self,
        caller: &Caller,
        tree: &QueueTree,
        leaf: usize,
    ) -> Result<(), String> {
        let (user, groups) = (&caller.user, &caller.groups);
        let queues = tree.queues();
        let mut current = Some(leaf);
        while let Some(index) = current {
            let queue = &queues[index];
            let submit = AccessControlList::parse(&queue.acl_submit_applications);
            let administer = AccessControlList::parse(&queue.acl_administer_queue);
            if submit.allows(user, groups) || administer.allows(user, groups) {
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

/// The user this process runs as: in token mode, the administrator and node
/// manager when the ACLs are not set (as Hadoop admits the daemon's user).
pub fn service_user() -> String {
    let uid = nix::unistd::Uid::current();
    match nix::unistd::User::from_uid(uid) {
        Ok(Some(user)) => user.name,
        _ => uid.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

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

    fn security() -> Security {
        Security::new(
            Directory::with_groups(BTreeMap::from([
                ("root-user".into(), groups(&["admins"])),
                ("carol".into(), groups(&["bio"])),
            ])),
            AccessControlList::parse(" admins"),
            AccessControlList::parse("nm"),
            Some(Projects::from_lists(BTreeMap::from([
                ("genomics".into(), vec!["alice".into(), "@bio".into()]),
                ("web".into(), vec!["bob".into()]),
            ]))),
        )
    }

    #[test]
    fn submission_is_allowed_by_the_queue_or_an_ancestor() {
        let mut properties = QueueProperties::default();
        // YARN's defaults: root's ACLs are "*", every other queue's " ".
        // So closing root and opening a leaf is all it takes.
        for (name, value) in [
            ("root.queues", "a,b"),
            ("root.acl_submit_applications", " "),
            ("root.acl_administer_queue", " admins"),
            ("root.a.capacity", "50"),
            ("root.a.acl_submit_applications", "alice"),
            ("root.b.capacity", "50"),
        ] {
            properties.set(&format!("{PREFIX}{name}"), value);
        }
        let tree = QueueTree::from_properties(&properties).unwrap();
        let security = security();
        let (a, b) = (tree.leaf("a").unwrap(), tree.leaf("b").unwrap());
        let (alice, root_user) = (security.caller("alice"), security.caller("root-user"));
        assert!(security.check_submit(&alice, &tree, a).is_ok());
        assert!(
            security
                .check_submit(&alice, &tree, b)
                .unwrap_err()
                .contains("may not submit to root.b")
        );
        assert!(
            security.check_submit(&root_user, &tree, b).is_ok(),
            "root's administer ACL covers b"
        );
        assert!(security.check_admin(&alice, "load a policy").is_err());
        assert!(security.check_admin(&root_user, "load a policy").is_ok());
    }

    #[test]
    fn with_no_acls_configured_everyone_submits_through_root() {
        let tree = QueueTree::from_properties(&QueueProperties::defaults()).unwrap();
        let leaf = tree.leaf("default").unwrap();
        assert_eq!(tree.queues()[leaf].acl_submit_applications, " ");
        assert!(
            Security::default()
                .check_submit(&Security::default().caller("anyone"), &tree, leaf)
                .is_ok()
        );
    }

    #[test]
    fn nodes_and_projects_need_membership() {
        let security = security();
        assert!(
            security
                .check_node(&security.caller("nm"), "register a node")
                .is_ok()
        );
        let refused = security
            .check_node(&security.caller("alice"), "register a node")
            .unwrap_err();
        assert!(refused.contains("weft.security.node-acl"), "{refused}");
        let carol = security.caller("carol");
        assert!(
            security.check_project(&carol, "genomics").is_ok(),
            "by @bio"
        );
        let refused = security.check_project(&carol, "web").unwrap_err();
        assert!(
            refused.contains("\"web\"") && refused.contains("[genomics]"),
            "{refused}"
        );
        assert!(
            Security::default()
                .check_project(&carol, "anything")
                .is_ok(),
            "no projects file: any project"
        );
    }

    #[test]
    fn simple_mode_takes_the_header_and_token_mode_ignores_it() {
        let simple = Authenticator::Simple {
            default_user: "anonymous".into(),
        };
        assert_eq!(simple.authenticate(None, None).unwrap(), "anonymous");
        assert_eq!(simple.authenticate(Some(" bob "), None).unwrap(), "bob");
        assert!(matches!(
            simple.authenticate(Some(&"x".repeat(300)), None),
            Err(AuthError::Malformed(_))
        ));

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.toml");
        let token = TokensFile::update(&path, |file| file.create("alice")).unwrap();
        let tokens = Authenticator::Token(Arc::new(TokenVerifier::open(path).unwrap()));
        let bearer = format!("Bearer {token}");
        assert_eq!(
            tokens.authenticate(Some("root"), Some(&bearer)).unwrap(),
            "alice",
            "the header cannot change who the caller is"
        );
        assert_eq!(
            tokens.authenticate(Some("root"), None),
            Err(AuthError::Missing)
        );
        assert_eq!(
            tokens.authenticate(None, Some("Bearer weft_nope")),
            Err(AuthError::Unknown)
        );
        assert!(matches!(
            tokens.authenticate(None, Some(&format!("Basic {token}"))),
            Err(AuthError::Malformed(_))
        ));
    }
}
