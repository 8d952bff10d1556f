//! Loading a policy: one use case for every way one arrives — an
//! administrator's request to the API (an upload or a bundled policy), the
//! watched directory, `weft serve`'s start-up (the policies kept in force,
//! or the configured ones) and a simulation's scenario. A caller's right is
//! checked before the component is even read; the operator's own
//! configuration needs none.

use anyhow::Context;

use crate::config::Settings;
use crate::policy::{LoadError, PolicyKind, PolicyRuntime, PolicySource, in_force};
use crate::security::{Caller, Security};
use crate::store::{Batch, Store};

/// The component to load.
#[derive(Debug, Clone)]
pub enum Component {
    /// A bundled policy or a file, read when loaded.
    Source(PolicySource),
    /// A component's bytes, uploaded.
    Upload(Vec<u8>),
}

/// Where a load puts the version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The active version of its kind (the one before stays as a standby).
    Active,
    /// A candidate beside the active version, compared and never applied.
    Shadow,
    /// A reservable queue's own sharing policy, by path.
    Queue(String),
}

/// One load: what, of which kind, with which parameters, where.
#[derive(Debug, Clone)]
pub struct PolicyLoad {
    /// Which slot's world it must export: pricing, scheduling or sharing.
    pub kind: PolicyKind,
    /// The component: a source to read, or uploaded bytes.
    pub component: Component,
    /// The parameters its `configure` receives.
    pub params: Vec<(String, String)>,
    /// Where the version goes: active, shadow, or a queue's own.
    pub target: Target,
}

/// The right to load a policy: an administrator's, checked, or the
/// operator's own configuration.
#[derive(Debug)]
pub struct LoadRight(());

impl LoadRight {
    /// The operator's: the configured policies, the watched directory, a
    /// scenario.
    pub fn operator() -> LoadRight {
        LoadRight(())
    }

    /// `caller`'s, if they administer the cluster; else why not.
    pub fn check(
        security: &Security,
        caller: &Caller,
        kind: PolicyKind,
        target: &Target,
    ) -> Result<LoadRight, String> {
        let what = match target {
            Target::Active => format!("load a {kind} policy"),
            Target::Shadow => format!("load a {kind} shadow policy"),
            Target::Queue(queue) => format!("load queue {queue}'s sharing policy"),
        };
        security.check_admin(caller, &what)?;
        Ok(LoadRight(()))
    }
}

impl PolicyLoad {
    /// Loads as the right allows: reads the component, prepares and checks
    /// it, and publishes it where the target says. On any error what was
    /// in force stays.
    pub fn run(self, runtime: &PolicyRuntime, _right: LoadRight) -> Result<(), LoadError> {
        let PolicyLoad {
            kind,
            component,
            params,
            target,
        } = self;
        let (source, bytes) = match component {
            Component::Source(source) => {
                let bytes = source.read().map_err(LoadError::Source)?;
                (source.to_string(), bytes)
            }
            Component::Upload(bytes) => ("upload".to_string(), bytes),
        };
        match target {
            Target::Active => runtime.load_bytes(kind, &source, &bytes, &params),
            Target::Shadow => runtime.load_shadow(kind, &source, &bytes, &params),
            Target::Queue(queue) => runtime.load_queue_sharing(&queue, &source, &bytes, &params),
        }
        .map(|_| ())
    }
}

/// Puts the policies in force on `runtime`: those the store kept from before
/// a restart or failover (loaded at runtime, with their standbys), unless
/// `weft.policy.KIND` changed since the last start or nothing was kept —
/// then the configured one is loaded (on top of any kept, which stay as
/// standbys). Every loaded component is kept in `store` from now on.
pub fn put_policies_in_force(
    runtime: &PolicyRuntime,
    settings: &Settings,
    store: &Store,
) -> anyhow::Result<()> {
    runtime.keep_in(store.clone());
    let stored = store.settings()?;
    let configured = &settings.policies;
    let mut remembered = Batch::default();
    for (kind, text, key) in [
        (
            PolicyKind::Scheduling,
            &configured.scheduling,
            "weft.policy.scheduling",
        ),
        (
            PolicyKind::Pricing,
            &configured.pricing,
            "weft.policy.pricing",
        ),
        (
            PolicyKind::Sharing,
            &configured.sharing,
            "weft.policy.sharing",
        ),
    ] {
        let saved = in_force::saved_versions(&stored, kind);
        let slot = runtime.slot(kind);
        let in_force = slot.saved_versions();
        let restored = if !saved.is_empty() && saved.last() == in_force.last() {
            // Already in force here (this server was active before).
            saved.len()
        } else {
            match runtime.restore(kind, &saved) {
                Ok(count) => count,
                Err(why) => {
                    tracing::error!(%kind, %why, "the policy in force before the restart cannot be put back; loading the configured one");
                    0
                }
            }
        };
        let unchanged = in_force::configured_at_last_start(&stored, kind) == Some(text);
        if restored > 0 && unchanged {
            let active = slot.status().active;
            tracing::info!(%kind, versions = restored, active = ?active.map(|a| a.info.source), "the policies in force before the restart are in force again");
        } else {
            let source = PolicySource::parse(text);
            let load = PolicyLoad {
                kind,
                component: Component::Source(source.clone()),
                params: Vec::new(),
                target: Target::Active,
            };
            load.run(runtime, LoadRight::operator())
                .with_context(|| format!("cannot load the {kind} policy {source} ({key})"))?;
        }
        in_force::save_configured(&mut remembered, kind, text);
    }
    store
        .commit(&remembered)
        .context("cannot remember the configured policies")?;
    Ok(())
}
