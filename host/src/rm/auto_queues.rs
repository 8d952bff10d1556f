//! Where a submitted app goes (`queue-mappings`) and the leaves made for
//! apps (YARN's flexible auto-created queues): made at submission when a
//! parent allows it, taken back if the submission is refused, kept in the
//! store and made again over refreshes, formats, restarts and failovers,
//! and removed once idle for `auto-queue-creation-v2.queue-expiration-time`.

use std::collections::{BTreeMap, BTreeSet};

use crate::cluster::SubmitApp;
use crate::queues::auto_creation::{self, Made};
use crate::queues::placement::Placed;
use crate::queues::{QueueError, QueueProperties, QueueTree};
use crate::security::AccessControlList;
use crate::security::Caller;

use super::ResourceManager;
use super::requests::RequestError;

/// The setting that keeps the dynamic leaves' paths (a JSON list).
pub const AUTO_CREATED_SETTING: &str = "queues.auto-created";

/// How often idle dynamic leaves are looked for, ms.
const REMOVAL_CHECK_MS: u64 = 1000;

/// The leaves made for apps, as the loop keeps them.
#[derive(Debug, Default)]
pub(super) struct AutoQueues {
    /// Path → when an app was last placed there (ms; the recovery's time
    /// for those made before a restart).
    created: BTreeMap<String, u64>,
    /// The set changed since the last commit.
    unsaved: bool,
    /// When idle leaves are next looked for.
    next_check_ms: u64,
}

impl AutoQueues {
    /// The paths to write with the next commit, if they changed.
    pub(super) fn take_unsaved(&mut self) -> Option<String> {
        if !std::mem::take(&mut self.unsaved) {
            return None;
        }
        let paths: Vec<&String> = self.created.keys().collect();
        Some(serde_json::to_string(&paths).expect("paths serialize"))
    }

    /// The dynamic leaves' paths.
    pub(super) fn paths(&self) -> impl Iterator<Item = &str> {
        self.created.keys().map(String::as_str)
    }

    /// `paths` are dynamic leaves no more.
    pub(super) fn forget(&mut self, paths: &[String]) {
        for path in paths {
            self.unsaved |= self.created.remove(path).is_some();
        }
    }
}

impl ResourceManager {
    /// The paths of the leaves made for apps.
    pub fn auto_created_queues(&self) -> impl Iterator<Item = &str> {
        self.auto_queues.paths()
    }

    /// Puts `request` in the queue the mappings give (its user's and
    /// groups'), and makes that leaf if it is missing and its parent
    /// creates leaves. Returns the tree before, when a leaf was made, so a
    /// refused submission can take it back.
    pub(super) fn place_submission(
        &mut self,
        caller: &Caller,
        request: &mut SubmitApp,
    ) -> Result<Option<(String, QueueTree)>, RequestError> {
        // An app naming no user is its caller's (as `check_submission` has it).
        if request.user.is_empty() {
            request.user = caller.user.clone();
        }
        let user = request.user.clone();
        let groups = self.security.ordered_groups_of(&user);
        let tree = self.cluster.queues();
        match tree.placement.place(tree, &user, groups, &request.queue) {
            Placed::AsNamed => {}
            Placed::Queue(path) => {
                tracing::debug!(%user, named = %request.queue, queue = %path, "placed by queue-mappings");
                request.queue = path;
            }
            Placed::Rejected => {
                return Err(RequestError::Invalid(format!(
                    "Application submission have been rejected by a mapping rule: no queue for user {user} (queue-mappings), and no root.default"
                )));
            }
        }
        // A full path naming no leaf: made if its parent creates leaves.
        if !request.queue.contains('.') || tree.leaf(&request.queue).is_some() {
            return Ok(None);
        }
        let path = tree
            .resolve(&request.queue)
            .unwrap_or_else(|| request.queue.clone());
        if tree.leaf(&path).is_some() {
            request.queue = path;
            return Ok(None);
        }
        let Some(parent) = path.rsplit_once('.').and_then(|(parent, _)| {
            tree.queues()
                .iter()
                .position(|q| q.path == parent && q.auto_creation.is_some())
        }) else {
            return Ok(None); // an unknown queue, refused as such
        };
        // What the app would be refused for anyway, before anything is
        // made for it: its bounds, and who may submit there (the parent's
        // ACLs or the template's).
        request.check()?;
        self.check_maximum_allocation(request)?;
        let template_allows = tree.queues()[parent]
            .auto_creation
            .as_ref()
            .is_some_and(|auto| {
                ["acl_submit_applications", "acl_administer_queue"]
                    .iter()
                    .filter_map(|acl| auto.template.get(*acl))
                    .any(|acl| AccessControlList::parse(acl).allows(&caller.user, &caller.groups))
            });
        if !template_allows {
            self.security
                .check_submit(caller, tree, parent)
                .map_err(RequestError::NotAllowed)?;
        }
        let before = tree.clone();
        let now = self.now();
        let grown = auto_creation::with_leaves(&before, [path.as_str()], Made::New)
            .map_err(|e| RequestError::Invalid(e.to_string()))?;
        let grown = QueueTree::from_properties(&grown).map_err(|e| {
            RequestError::Invalid(format!(
                "cannot auto create queue {path} from its parent's templates: {e}"
            ))
        })?;
        self.put_queues_in_force(grown)
            .map_err(|e| RequestError::Invalid(format!("cannot auto create queue {path}: {e}")))?;
        self.auto_queues.created.insert(path.clone(), now);
        self.auto_queues.unsaved = true;
        tracing::info!(queue = %path, %user, "queue auto-created for an app");
        request.queue = path.clone();
        Ok(Some((path, before)))
    }

    /// A submission into a leaf made for it was refused: the leaf goes
    /// again (nothing of a refused submission stays).
    pub(super) fn take_back_created(&mut self, path: &str, before: QueueTree) {
        self.auto_queues.created.remove(path);
        self.auto_queues.unsaved = true;
        if let Err(error) = self.put_queues_in_force(before) {
            tracing::error!(queue = %path, %error, "a queue made for a refused submission could not be taken back; it goes once idle");
            self.auto_queues
                .created
                .insert(path.to_string(), self.now());
        }
    }

    /// An app was placed in `path`: if it is a dynamic leaf, it is in use
    /// now.
    pub(super) fn dynamic_queue_used(&mut self, path: &str) {
        let now = self.now();
        if let Some(last) = self.auto_queues.created.get_mut(path) {
            *last = now;
        }
    }

    /// The tree `properties` (the files' and settings', with the API's
    /// changes) give, with the dynamic leaves made again where their
    /// parents still make them; and the leaves kept (a leaf the
    /// properties now declare is static from then on; one whose parent no
    /// longer makes leaves is dropped, and the tree refused if it still
    /// has apps, as for any queue that leaves).
    pub(super) fn with_auto_created(
        &self,
        properties: &QueueProperties,
    ) -> Result<(QueueTree, BTreeMap<String, u64>), QueueError> {
        let queues = self.cluster.queues().queues();
        let busy: BTreeSet<String> = self
            .cluster
            .active_apps()
            .map(|i| queues[self.cluster.apps()[i].queue_index].name.clone())
            .collect();
        self.with_auto_created_beside(properties, &busy)
    }

    /// [`with_auto_created`](Self::with_auto_created), with apps running
    /// in the queues named `busy` (by leaf name, as apps name them).
    fn with_auto_created_beside(
        &self,
        properties: &QueueProperties,
        busy: &BTreeSet<String>,
    ) -> Result<(QueueTree, BTreeMap<String, u64>), QueueError> {
        let tree = QueueTree::from_properties(properties)?;
        auto_creation::check_templates(&tree)?;
        // A made leaf with apps whose name a configured queue elsewhere now
        // has: its apps would move into that queue by name.
        for path in self.auto_queues.created.keys() {
            let name = path.rsplit('.').next().unwrap_or(path);
            if let Some(taken) = tree
                .queues()
                .iter()
                .find(|q| q.name == name && &q.path != path)
                && busy.contains(name)
            {
                return Err(QueueError::BadValue {
                    property: format!("{}{}", crate::queues::PREFIX, taken.path),
                    reason: format!(
                        "it is named as auto-created queue {path}, which still has apps (queues are found by name): end them first"
                    ),
                });
            }
        }
        // Declared now: static from then on.
        let mut kept: BTreeMap<String, u64> = self
            .auto_queues
            .created
            .iter()
            .filter(|(path, _)| !tree.queues().iter().any(|q| &q.path == *path))
            .map(|(path, &last)| (path.clone(), last))
            .collect();
        loop {
            if kept.is_empty() {
                return Ok((tree, kept));
            }
            match auto_creation::with_leaves(&tree, kept.keys().map(String::as_str), Made::Again) {
                Ok(properties) => return Ok((QueueTree::from_properties(&properties)?, kept)),
                Err(error) => {
                    let path = error.path().to_string();
                    tracing::warn!(queue = %path, %error, "an auto-created queue is no longer made by its parent");
                    kept.remove(&path);
                }
            }
        }
    }

    /// Keeps `kept` as the dynamic leaves (after a tree from
    /// [`with_auto_created`](Self::with_auto_created) is in force).
    pub(super) fn keep_auto_created(&mut self, kept: BTreeMap<String, u64>) {
        if kept != self.auto_queues.created {
            self.auto_queues.created = kept;
            self.auto_queues.unsaved = true;
        }
    }

    /// At a start or failover, after the API's changes and before apps are
    /// put back: the dynamic leaves the store keeps (among its `stored`
    /// settings), made again (their idle time counted from now). One its
    /// parent no longer makes is dropped, and so are its apps at recovery
    /// (as YARN's, which cannot make it again either); a configuration that
    /// cannot make them at all (a template no leaf can have), or that names
    /// a queue elsewhere as one the stored apps (`in_use`, by name) still
    /// run in, stops the start rather than end or move their apps.
    pub(super) fn recover_auto_created(
        &mut self,
        stored: &BTreeMap<String, String>,
        in_use: &BTreeSet<String>,
    ) -> Result<(), String> {
        let Some(json) = stored.get(AUTO_CREATED_SETTING) else {
            return Ok(());
        };
        let paths: Vec<String> = serde_json::from_str(json).unwrap_or_else(|error| {
            tracing::error!(%error, "the stored auto-created queues are not readable; none is made again");
            Vec::new()
        });
        let now = self.now();
        self.auto_queues.created = paths.into_iter().map(|p| (p, now)).collect();
        self.auto_queues.unsaved = true;
        let properties = self.cluster.queues().properties().clone();
        let (tree, kept) = self.with_auto_created_beside(&properties, in_use).map_err(|e| {
            format!(
                "the {} auto-created queues cannot be made again: {e}; correct the queue configuration (or turn its parent's auto-queue-creation-v2.enabled off to drop them and their apps)",
                self.auto_queues.created.len()
            )
        })?;
        self.put_queues_in_force(tree)
            .map_err(|e| format!("the auto-created queues cannot be made again: {e}"))?;
        self.keep_auto_created(kept);
        Ok(())
    }

    /// Removes the dynamic leaves without apps whose last app came longer
    /// ago than the expiration time (and whose template did not turn
    /// removal off). Looked at once a second at most.
    pub(super) fn remove_idle_auto_created(&mut self, now: u64) {
        if self.auto_queues.created.is_empty() || now < self.auto_queues.next_check_ms {
            return;
        }
        self.auto_queues.next_check_ms = now.saturating_add(REMOVAL_CHECK_MS);
        let tree = self.cluster.queues();
        let Ok(expiration_ms) = auto_creation::expiration_ms(tree.properties()) else {
            return;
        };
        let busy: BTreeSet<usize> = self
            .cluster
            .active_apps()
            .map(|i| self.cluster.apps()[i].queue_index)
            .collect();
        let idle: Vec<String> = self
            .auto_queues
            .created
            .iter()
            .filter(|(path, last)| {
                now.saturating_sub(**last) >= expiration_ms
                    && auto_creation::removable(tree.properties(), path)
                    && tree.leaf(path).is_some_and(|leaf| !busy.contains(&leaf))
            })
            .map(|(path, _)| path.clone())
            .collect();
        if idle.is_empty() {
            return;
        }
        if self.remove_auto_created(&idle).is_ok() {
            return;
        }
        // One of them holds the others up (a reservation in it): each
        // alone, and one that cannot go waits another expiration time.
        for path in idle {
            if let Err(error) = self.remove_auto_created(std::slice::from_ref(&path)) {
                tracing::info!(queue = %path, %error, "an idle auto-created queue stays; tried again after the expiration time");
                if let Some(last) = self.auto_queues.created.get_mut(&path) {
                    *last = now;
                }
            }
        }
    }

    /// Takes dynamic leaves `paths` out of the queues, all or none.
    fn remove_auto_created(&mut self, paths: &[String]) -> Result<(), String> {
        let mut properties = self.cluster.queues().properties().clone();
        for path in paths {
            properties = auto_creation::without_leaf(&properties, path);
        }
        let tree = QueueTree::from_properties(&properties).map_err(|e| e.to_string())?;
        self.put_queues_in_force(tree).map_err(|e| e.to_string())?;
        for path in paths {
            self.auto_queues.created.remove(path);
        }
        self.auto_queues.unsaved = true;
        tracing::info!(queues = ?paths, "idle auto-created queues removed");
        Ok(())
    }
}
