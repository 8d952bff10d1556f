//! The policy runtime: loading WebAssembly policies, checking them, calling
//! them under limits, and swapping versions while the host runs.
//!
//! Data flow: `load` (compile → type-check against the world → instantiate →
//! configure → self-check) produces a [`PolicyVersion`]; a [`PolicySlot`] per
//! kind publishes it atomically, keeps the history, falls back to the last
//! good version when a call fails and rolls a failing version back by itself.

mod bindings;
mod cache;
mod engine;
mod events;
mod load;
mod output;
mod registry;
mod slot;
mod stats;
pub mod validate;
mod version;
pub mod watch;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use bindings::{
    Admission, Apps, Asks, Containers, Nodes, Placements, PlanSettings, PolicyInfo,
    PriceMultiplicators, Queues, Rejection, SharingResources, Snapshot, Timeline, Usage,
    Utilization,
};
pub use cache::{CacheError, CompileCache};
pub use engine::{CallLimits, PolicyEngine};
pub use load::{LoadError, inspect, prepare};
pub use registry::{PolicySource, builtin, builtin_names};
pub use slot::{HistoryEntry, PolicySlot, STANDBY_KEPT, SavedVersion, SlotStatus, VersionState};
pub use stats::{CallCost, CallStats, CompileCounts};
pub use version::{PolicyVersion, VersionInfo};

/// The kinds of policy, one WIT world each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum PolicyKind {
    Scheduling,
    Pricing,
    Sharing,
}

impl PolicyKind {
    pub const ALL: [PolicyKind; 3] = [
        PolicyKind::Scheduling,
        PolicyKind::Pricing,
        PolicyKind::Sharing,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PolicyKind::Scheduling => "scheduling",
            PolicyKind::Pricing => "pricing",
            PolicyKind::Sharing => "sharing",
        }
    }
}

impl fmt::Display for PolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PolicyKind {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "scheduling" => Ok(PolicyKind::Scheduling),
            "pricing" => Ok(PolicyKind::Pricing),
            "sharing" => Ok(PolicyKind::Sharing),
            other => Err(format!(
                "unknown policy kind {other:?}; expected scheduling, pricing or sharing"
            )),
        }
    }
}

/// Why one policy call failed. Any of these makes the host fall back to the
/// last good version for that call.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CallError {
    #[error("timed out (epoch deadline reached)")]
    Timeout,
    #[error("exceeded its memory limit: {0}")]
    MemoryLimit(String),
    #[error("trapped: {0}")]
    Trap(String),
    #[error("returned invalid output: {0}")]
    InvalidOutput(String),
    #[error("refused its parameters: {0}")]
    Refused(String),
    #[error("no {0} policy is loaded")]
    NoPolicy(PolicyKind),
}

impl CallError {
    pub(super) fn from_wasmtime(error: wasmtime::Error) -> CallError {
        if let Some(trap) = error.downcast_ref::<wasmtime::Trap>() {
            return match trap {
                wasmtime::Trap::Interrupt => CallError::Timeout,
                // The guest's own panic message went to its stderr, in the log.
                trap => CallError::Trap(trap.to_string()),
            };
        }
        // One line: the root cause, without the wasm backtrace.
        let text = error.root_cause().to_string().replace('\n', " ");
        if text.contains("forcing trap when growing memory") {
            return CallError::MemoryLimit(text);
        }
        CallError::Trap(text)
    }

    /// A short label for metrics.
    pub fn reason(&self) -> &'static str {
        match self {
            CallError::Timeout => "timeout",
            CallError::MemoryLimit(_) => "memory",
            CallError::Trap(_) => "trap",
            CallError::InvalidOutput(_) => "invalid-output",
            CallError::Refused(_) => "refused",
            CallError::NoPolicy(_) => "no-policy",
        }
    }
}

/// The slots of every kind, sharing one engine. What the host holds.
#[derive(Debug)]
pub struct PolicyRuntime {
    engine: PolicyEngine,
    pricing: PolicySlot,
    scheduling: PolicySlot,
    sharing: PolicySlot,
    max_failures: u32,
    /// Parameters every pricing policy receives before the operator's own.
    pricing_defaults: Vec<(String, String)>,
    /// Where loaded components are kept by sha256, so the versions in force
    /// come back after a restart or failover (`serve` sets it).
    store: std::sync::OnceLock<crate::store::Store>,
}

impl PolicyRuntime {
    pub fn new(
        engine: PolicyEngine,
        pricing_defaults: Vec<(String, String)>,
        max_failures: u32,
    ) -> PolicyRuntime {
        PolicyRuntime {
            engine,
            pricing: PolicySlot::new(PolicyKind::Pricing, max_failures),
            scheduling: PolicySlot::new(PolicyKind::Scheduling, max_failures),
            sharing: PolicySlot::new(PolicyKind::Sharing, max_failures),
            max_failures,
            pricing_defaults,
            store: std::sync::OnceLock::new(),
        }
    }

    /// Compiles what this server would put in force from `store` and the
    /// configured `sources` (the stored versions of each kind, then the
    /// configured ones), without loading any: a standby does it while it
    /// waits, so that taking over does not wait for the compiler. Failures
    /// are left for the load to report.
    pub fn warm(&self, store: &crate::store::Store, sources: &[&str]) {
        let stored = store.settings().unwrap_or_default();
        let mut blobs = Vec::new();
        for kind in PolicyKind::ALL {
            let saved: Vec<SavedVersion> = stored
                .get(&format!("policy.{kind}"))
                .and_then(|json| serde_json::from_str(json).ok())
                .unwrap_or_default();
            for version in saved.iter().rev() {
                if let Ok(Some(bytes)) = store.policy_blob(&version.sha256) {
                    blobs.push(bytes);
                }
            }
        }
        for source in sources {
            if let Ok(bytes) = PolicySource::parse(source).read() {
                blobs.push(bytes);
            }
        }
        for bytes in blobs.iter().take(8) {
            let _ = self.engine.compile(bytes);
        }
    }

    /// From now on every loaded component's bytes are written to `store`
    /// before the version is published (a load the store refuses fails).
    pub fn keep_in(&self, store: crate::store::Store) {
        let _ = self.store.set(store);
    }

    /// Publishes again the versions `saved` lists for `kind` (standbys,
    /// then the active one), from the components the store keeps, with
    /// the parameters they had. Returns how many.
    pub fn restore(&self, kind: PolicyKind, saved: &[SavedVersion]) -> Result<usize, String> {
        let store = self
            .store
            .get()
            .ok_or("no store to restore policies from")?;
        for version in saved {
            let bytes = store
                .policy_blob(&version.sha256)
                .map_err(|e| e.to_string())?
                .ok_or_else(|| {
                    format!(
                        "the store has no component with sha256 {} ({} policy {})",
                        version.sha256, kind, version.source
                    )
                })?;
            let sha256 = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&bytes));
            if sha256 != version.sha256 {
                return Err(format!(
                    "the stored component {} has sha256 {sha256}: it is damaged",
                    version.sha256
                ));
            }
            let prepared = prepare(
                &self.engine,
                kind,
                &version.source,
                &bytes,
                version.params.clone(),
            )
            .map_err(|e| {
                format!(
                    "the stored {kind} policy {} no longer loads: {e}",
                    version.source
                )
            })?;
            self.slot(kind).publish(prepared);
        }
        Ok(saved.len())
    }

    /// A runtime with the limits, failure budget and pricing parameters of
    /// `settings`, whose guests read `clock`, and no policy loaded yet.
    pub fn from_settings(
        settings: &crate::config::Settings,
        clock: Arc<dyn crate::sim::Clock>,
    ) -> anyhow::Result<PolicyRuntime> {
        let engine = PolicyEngine::from_settings(&settings.policies, clock)?;
        let runtime = PolicyRuntime::new(
            engine,
            settings.pricing_params.clone(),
            settings.policies.max_consecutive_failures,
        );
        for kind in PolicyKind::ALL {
            runtime
                .slot(kind)
                .limit_standby_memory(settings.policies.standby_memory_bytes);
        }
        Ok(runtime)
    }

    pub fn engine(&self) -> &PolicyEngine {
        &self.engine
    }

    /// Failed calls in a row before a version rolls itself back.
    pub fn max_failures(&self) -> u32 {
        self.max_failures
    }

    pub fn slot(&self, kind: PolicyKind) -> &PolicySlot {
        match kind {
            PolicyKind::Pricing => &self.pricing,
            PolicyKind::Scheduling => &self.scheduling,
            PolicyKind::Sharing => &self.sharing,
        }
    }

    /// The full load: read, prepare and check the component, then publish it
    /// as the active version of `kind`. On any error the active version stays.
    pub fn load(
        &self,
        kind: PolicyKind,
        source: &PolicySource,
        params: &[(String, String)],
    ) -> Result<Arc<PolicyVersion>, LoadError> {
        let bytes = source.read().map_err(LoadError::Source)?;
        self.load_bytes(kind, &source.to_string(), &bytes, params)
    }

    /// As [`load`](Self::load), for a component already in memory (an upload).
    pub fn load_bytes(
        &self,
        kind: PolicyKind,
        source: &str,
        bytes: &[u8],
        params: &[(String, String)],
    ) -> Result<Arc<PolicyVersion>, LoadError> {
        let mut all_params = match kind {
            PolicyKind::Pricing => self.pricing_defaults.clone(),
            PolicyKind::Scheduling | PolicyKind::Sharing => Vec::new(),
        };
        all_params.extend_from_slice(params);
        let result = prepare(&self.engine, kind, source, bytes, all_params).and_then(|version| {
            if let Some(store) = self.store.get() {
                let mut batch = crate::store::Batch::default();
                batch.put_policy_blob(&version.info.sha256, bytes.to_vec());
                store
                    .commit(&batch)
                    .map_err(|e| LoadError::Store(e.to_string()))?;
            }
            Ok(version)
        });
        events::PolicyEvent::loaded(kind, source, &result).emit();
        let version = result?;
        self.slot(kind).publish(version.clone());
        Ok(version)
    }
}
