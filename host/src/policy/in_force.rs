//! The policies in force, as the store keeps them: per kind, the slot's
//! saved versions (standbys, then the active one) under `policy.KIND`, and
//! what `weft.policy.KIND` said at the last start under
//! `policy.KIND.configured`. The one place those keys are built, written
//! and read.

use std::collections::BTreeMap;

use super::{PolicyKind, SavedVersion};
use crate::store::Batch;

/// The setting a slot's saved versions are kept under.
fn versions_key(kind: PolicyKind) -> String {
    format!("policy.{kind}")
}

/// The setting that keeps what `weft.policy.KIND` said at the last start.
fn configured_key(kind: PolicyKind) -> String {
    format!("policy.{kind}.configured")
}

/// The versions of `kind` kept in `stored` (the store's settings); none if
/// none are kept or the record does not read.
pub fn saved_versions(stored: &BTreeMap<String, String>, kind: PolicyKind) -> Vec<SavedVersion> {
    stored
        .get(&versions_key(kind))
        .and_then(|json| serde_json::from_str(json).ok())
        .unwrap_or_default()
}

/// What `weft.policy.KIND` said at the last start, if it was kept.
pub fn configured_at_last_start(
    stored: &BTreeMap<String, String>,
    kind: PolicyKind,
) -> Option<&String> {
    stored.get(&configured_key(kind))
}

/// Adds the versions of `kind` to `batch`.
pub fn save_versions(batch: &mut Batch, kind: PolicyKind, versions: &[SavedVersion]) {
    let json = serde_json::to_string(versions).expect("saved versions serialize");
    batch.set_setting(&versions_key(kind), &json);
}

/// Adds what `weft.policy.KIND` says now to `batch`.
pub fn save_configured(batch: &mut Batch, kind: PolicyKind, configured: &str) {
    batch.set_setting(&configured_key(kind), configured);
}
