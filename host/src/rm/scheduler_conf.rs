//! Queue changes made through the API (YARN's mutable scheduler
//! configuration): who may make them, applying them as a refresh of the
//! queues does, and the overlay of changes kept on top of the queue file —
//! in the store (`leveldb`, `zk`, `fs`) or only in this server (`memory`).

use std::collections::BTreeMap;

use crate::config::{ConfStore, SchedulerConfSettings};
use crate::queues::mutation::{self, ConfOverlay, ConfUpdate, MutationError};
use crate::queues::{QueueProperties, QueueTree};
use crate::security::Caller;
use crate::store::Store;

use super::ResourceManager;
use super::requests::RefreshError;

/// The setting that keeps the overlay (JSON of [`ConfOverlay`]).
pub const OVERLAY_SETTING: &str = "queues.api-changes";

/// The scheduler configuration's changes, as the loop keeps them.
#[derive(Debug)]
pub(super) struct SchedulerConf {
    settings: SchedulerConfSettings,
    /// The queue properties the server's files and settings give, as last
    /// read (at the start, a refresh or a format).
    base: QueueProperties,
    overlay: ConfOverlay,
    /// The overlay changed since the last commit.
    unsaved: bool,
}

impl SchedulerConf {
    /// Over `base`, the queue properties the files and settings give.
    pub(super) fn new(settings: SchedulerConfSettings, base: QueueProperties) -> SchedulerConf {
        SchedulerConf {
            settings,
            base,
            overlay: ConfOverlay::default(),
            unsaved: false,
        }
    }

    /// The overlay to write with the next commit, if it changed and is
    /// kept in the store.
    pub(super) fn take_unsaved(&mut self) -> Option<String> {
        if !std::mem::take(&mut self.unsaved) || self.settings.store != ConfStore::Store {
            return None;
        }
        Some(serde_json::to_string(&self.overlay).expect("the overlay serializes"))
    }
}

/// Why a change of the scheduler configuration was refused; nothing changed.
#[derive(Debug, thiserror::Error)]
pub enum ConfChangeError {
    /// The configuration is the file's (`store.class = file`).
    #[error(
        "the scheduler configuration is not changed through the API here: yarn.scheduler.configuration.store.class is file (set memory, or leveldb, zk or fs to keep changes in the store)"
    )]
    NotMutable,
    /// The caller may not change what the request changes.
    #[error("{0}")]
    Forbidden(String),
    /// The request, or the configuration it gives, is refused.
    #[error(transparent)]
    Mutation(#[from] MutationError),
    /// The cluster or the reservations refuse the tree.
    #[error(transparent)]
    Refresh(#[from] RefreshError),
}

impl ConfChangeError {
    /// What kind of refusal this is.
    pub fn kind(&self) -> crate::refusal::Refusal {
        use crate::refusal::Refusal;
        match self {
            ConfChangeError::Forbidden(_) => Refusal::NotAllowed,
            ConfChangeError::NotMutable
            | ConfChangeError::Mutation(_)
            | ConfChangeError::Refresh(_) => Refusal::Invalid,
        }
    }
}

/// Why the changes kept in the store do not apply at a start or failover.
#[derive(Debug, thiserror::Error)]
#[error(
    "the scheduler configuration changes made through the API (version {version}) do not apply to this server's queue configuration: {reason}; correct the queue file, or drop the changes (weft serve --format-conf-store, with the servers stopped)"
)]
pub struct OverlayError {
    version: u64,
    reason: String,
}

/// Drops the changes `store` keeps (a format: the version counts on, so
/// none is given twice), for `weft serve --format-conf-store`. Returns the
/// new version.
pub fn format_stored(store: &Store) -> Result<u64, crate::store::StoreError> {
    let mut overlay: ConfOverlay = store
        .settings()?
        .get(OVERLAY_SETTING)
        .and_then(|json| serde_json::from_str(json).ok())
        .unwrap_or_default();
    overlay.format();
    let mut batch = crate::store::Batch::default();
    batch.set_setting(
        OVERLAY_SETTING,
        &serde_json::to_string(&overlay).expect("the overlay serializes"),
    );
    store.commit(&batch)?;
    Ok(overlay.version)
}

impl ResourceManager {
    /// The version of the scheduler configuration: changes applied through
    /// the API (YARN's versionID).
    pub fn scheduler_conf_version(&self) -> Result<u64, ConfChangeError> {
        self.check_mutable()?;
        Ok(self.scheduler_conf.overlay.version)
    }

    /// Applies `update` (YARN's PUT scheduler-conf) for `caller`: the
    /// changes are checked, the tree they give is put in force as a refresh
    /// of the queues would, and they are kept on top of the queue file.
    /// Returns the new version.
    pub fn change_scheduler_conf(
        &mut self,
        caller: &Caller,
        update: &ConfUpdate,
    ) -> Result<u64, ConfChangeError> {
        let (proposal, kept) = self.propose_scheduler_conf(caller, update)?;
        let mut overlay = self.scheduler_conf.overlay.clone();
        let limit = if self.security.is_admin(caller) {
            4 * mutation::MAX_OVERLAY_BYTES
        } else {
            mutation::MAX_OVERLAY_BYTES
        };
        overlay.record(&proposal.changes, &self.scheduler_conf.base, limit)?;
        self.put_queues_in_force(proposal.tree)?;
        self.keep_auto_created(kept);
        self.scheduler_conf.overlay = overlay;
        self.scheduler_conf.unsaved = true;
        Ok(self.scheduler_conf.overlay.version)
    }

    /// The configuration `update` would give (YARN's validate), checked as
    /// [`change_scheduler_conf`](Self::change_scheduler_conf) checks it but
    /// not applied; the apps in the queues are not looked at.
    pub fn validate_scheduler_conf(
        &self,
        caller: &Caller,
        update: &ConfUpdate,
    ) -> Result<QueueTree, ConfChangeError> {
        Ok(self.propose_scheduler_conf(caller, update)?.0.tree)
    }

    /// The change `update` makes to the configured queues (the file's with
    /// the API's changes: a leaf made for apps is no change's to touch),
    /// its tree with the leaves made for apps made again on it, and those
    /// kept.
    fn propose_scheduler_conf(
        &self,
        caller: &Caller,
        update: &ConfUpdate,
    ) -> Result<(mutation::Proposal, BTreeMap<String, u64>), ConfChangeError> {
        self.check_mutable()?;
        let configured = self
            .scheduler_conf
            .overlay
            .apply_to(&self.scheduler_conf.base);
        let configured = QueueTree::from_properties(&configured).map_err(MutationError::from)?;
        self.check_may_change(caller, update, &configured)?;
        let mut proposal = mutation::propose(&configured, update)?;
        let (tree, kept) = self
            .with_auto_created(proposal.tree.properties())
            .map_err(MutationError::from)?;
        proposal.tree = tree;
        Ok((proposal, kept))
    }

    /// Drops every change made through the API (YARN's format): the queue
    /// configuration `base` (the file's, read again by the caller) alone is
    /// put in force. Administrators only.
    pub fn format_scheduler_conf(
        &mut self,
        caller: &Caller,
        base: QueueProperties,
    ) -> Result<(), ConfChangeError> {
        self.check_mutable()?;
        self.security
            .check_admin(caller, "format the scheduler configuration")
            .map_err(ConfChangeError::Forbidden)?;
        let (tree, kept) = self.with_auto_created(&base).map_err(MutationError::from)?;
        self.put_queues_in_force(tree)?;
        self.keep_auto_created(kept);
        self.scheduler_conf.base = base;
        self.scheduler_conf.overlay.format();
        self.scheduler_conf.unsaved = true;
        Ok(())
    }

    /// refreshQueues: puts in force the queue configuration `base` (the
    /// file's and settings', read again by the caller, an administrator)
    /// with the changes made through the API on top.
    pub fn refresh_queues(&mut self, base: QueueProperties) -> Result<(), RefreshError> {
        let properties = self.scheduler_conf.overlay.apply_to(&base);
        let (tree, kept) = self.with_auto_created(&properties).map_err(|e| {
            RefreshError::Queues(if self.scheduler_conf.overlay.changes.is_empty() {
                e.to_string()
            } else {
                format!(
                    "{e} (with the {} changes made through the API, version {}, on top)",
                    self.scheduler_conf.overlay.changes.len(),
                    self.scheduler_conf.overlay.version
                )
            })
        })?;
        self.put_queues_in_force(tree)?;
        self.keep_auto_created(kept);
        self.scheduler_conf.base = base;
        Ok(())
    }

    /// At a start or failover (before anything is restored into the
    /// queues): the changes the store keeps (among its `stored` settings),
    /// put on top of the queue tree this server read. Kept only where the
    /// store keeps them.
    pub(super) fn recover_scheduler_conf(
        &mut self,
        stored: &std::collections::BTreeMap<String, String>,
    ) -> Result<(), OverlayError> {
        let Some(json) = stored.get(OVERLAY_SETTING) else {
            return Ok(());
        };
        let overlay: ConfOverlay = serde_json::from_str(json).map_err(|e| OverlayError {
            version: 0,
            reason: format!("the stored changes are not readable: {e}"),
        })?;
        if self.scheduler_conf.settings.store != ConfStore::Store {
            if !overlay.changes.is_empty() {
                tracing::error!(
                    changes = overlay.changes.len(),
                    version = overlay.version,
                    "the store keeps queue changes made through the API, but yarn.scheduler.configuration.store.class is not leveldb, zk or fs: they are not applied (apps in queues only they add are killed at recovery); set it back to keep them, or weft serve --format-conf-store to drop them"
                );
            }
            // Versions go on from the store's.
            self.scheduler_conf.overlay.version = overlay.version;
            return Ok(());
        }
        let failed = |reason: String| OverlayError {
            version: overlay.version,
            reason,
        };
        if !overlay.changes.is_empty() {
            let properties = overlay.apply_to(self.cluster.queues().properties());
            let tree =
                QueueTree::from_properties(&properties).map_err(|e| failed(e.to_string()))?;
            self.put_queues_in_force(tree)
                .map_err(|e| failed(e.to_string()))?;
        }
        self.scheduler_conf.overlay = overlay;
        Ok(())
    }

    fn check_mutable(&self) -> Result<(), ConfChangeError> {
        match self.scheduler_conf.settings.store {
            ConfStore::File => Err(ConfChangeError::NotMutable),
            ConfStore::Memory | ConfStore::Store => Ok(()),
        }
    }

    /// YARN's mutation ACL policies: administrators; with the queue-admin
    /// policy also whoever administers every queue changed (for a queue not
    /// there yet in the `configured` queues, its nearest ancestor that is:
    /// a leaf made for apps is not one), global updates excepted.
    fn check_may_change(
        &self,
        caller: &Caller,
        update: &ConfUpdate,
        configured: &QueueTree,
    ) -> Result<(), ConfChangeError> {
        if self.security.is_admin(caller) {
            return Ok(());
        }
        let only_admins = || {
            ConfChangeError::Forbidden(format!(
                "user {} may not change the scheduler configuration: only administrators (yarn.admin.acl) may{}",
                caller.user,
                if self.scheduler_conf.settings.queue_admins_may_change {
                    " change global properties or a queue's reservation-policy"
                } else {
                    ""
                }
            ))
        };
        // A queue's own sharing policy is code the server runs: loading
        // one is the administrators' (as POST /ws/v1/policies is).
        let names_policy = update.add.iter().chain(&update.update).any(|q| {
            q.params
                .iter()
                .any(|(key, _)| key.ends_with(mutation::POLICY_ATTRIBUTE))
        });
        if !self.scheduler_conf.settings.queue_admins_may_change
            || !update.global.is_empty()
            || names_policy
        {
            return Err(only_admins());
        }
        let tree = configured;
        // A queue's capacity is its share of its parent, taken from its
        // siblings (by weight, without their say): its parent's to give.
        let share_of_parent =
            |q: &mutation::QueueParams| q.params.iter().any(|(key, _)| key == "capacity");
        // (the queue changed, the queue whose administrators may change it)
        let changed = update
            .add
            .iter()
            .map(|q| (q.queue.as_str(), q.queue.as_str()))
            .chain(update.update.iter().map(|q| {
                let decides = match q.queue.rsplit_once('.') {
                    Some((parent, _)) if share_of_parent(q) => parent,
                    _ => q.queue.as_str(),
                };
                (q.queue.as_str(), decides)
            }))
            .chain(update.remove.iter().map(|p| (p.as_str(), p.as_str())));
        for (path, decides) in changed {
            let mut at = decides;
            let index = loop {
                if let Some(index) = tree.queues().iter().position(|q| q.path == at) {
                    break index;
                }
                match at.rsplit_once('.') {
                    Some((parent, _)) => at = parent,
                    None => return Err(only_admins()),
                }
            };
            if !self.security.queue_rights(caller, tree, index).1 {
                let capacity = if decides == path {
                    ""
                } else {
                    " (its capacity is a share of its parent's, taken from its siblings)"
                };
                return Err(ConfChangeError::Forbidden(format!(
                    "user {} may not change queue {path}{capacity}: only administrators of {at} (acl_administer_queue) or of the cluster may",
                    caller.user
                )));
            }
        }
        Ok(())
    }
}
