//! The policy runtime: loading WebAssembly policies, checking them, calling
//! them under limits, and swapping versions while the host runs.
//!
//! Data flow: `load` (compile → type-check against the world → instantiate →
//! configure → self-check) produces a [`PolicyVersion`]; a [`PolicySlot`] per
//! kind publishes it atomically, keeps the history, falls back to the last
//! good version when a call fails and rolls a failing version back by itself.

mod bindings;
mod cache;
mod compat;
pub mod contract;
mod engine;
mod events;
pub mod in_force;
mod load;
mod output;
mod records;
mod registry;
mod shadow;
mod slot;
mod stats;
mod typed;
pub mod validate;
mod version;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use bindings::{
    Admission, AppTags, Apps, AskNodes, AskRacks, AskTags, Asks, Attribute, ChargeContext,
    ConstraintScope, ContainerTags, Containers, ExecutionType, LocalityDelays, LocalityLevel,
    Market, NodeAttributes, Nodes, PartitionLoad, PartitionShares, Partitions, PlacementConstraint,
    Placements, PlanContext, PlanSettings, PolicyInfo, PriceMultiplicators, QueueLoad, Queues,
    QuoteRequest, Rejection, Round, RoundKind, SharingResources, Snapshot, TagCounts, Timeline,
    Usage, Utilization,
};
pub use cache::{CacheError, CompileCache};
pub use engine::{CompiledComponent, PolicyEngine};
pub use load::{
    LoadError, WIT_VERSION, compile, inspect, prepare, prepare_compiled, sample_market,
};
pub use records::UsageRow;
pub use registry::{PolicySource, builtin, builtin_names};
pub use shadow::{
    PricingComparison, ProjectCredits, SchedulingComparison, Shadow, ShadowReport, ShadowSlot,
    SharingComparison,
};
pub use slot::{HistoryEntry, PolicySlot, STANDBY_KEPT, SavedVersion, SlotStatus, VersionState};
pub use stats::{CallCost, CallStats, CompileCounts};
pub use typed::{PricingSlot, SchedulingSlot, SharingSlot};
pub use version::{PolicyVersion, VersionInfo};

/// The kinds of policy, one WIT world each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum PolicyKind {
    /// Places containers on nodes and chooses what to preempt (world
    /// `scheduling`; YARN's scheduler).
    Scheduling,
    /// Sets the price multiplicators and charges usage in credits (world
    /// `pricing`; HopsYARN's quota pricing).
    Pricing,
    /// Admits or rejects reservations against the plan (world `sharing`;
    /// YARN's reservation `SharingPolicy`).
    Sharing,
}

impl PolicyKind {
    /// Every kind, in the order the host walks them.
    pub const ALL: [PolicyKind; 3] = [
        PolicyKind::Scheduling,
        PolicyKind::Pricing,
        PolicyKind::Sharing,
    ];

    /// The kind's lowercase name (`scheduling`, `pricing`, `sharing`), as
    /// the API, the CLI, metrics labels and the store spell it.
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
    type Err = UnknownPolicyKind;
    fn from_str(text: &str) -> Result<Self, UnknownPolicyKind> {
        match text {
            "scheduling" => Ok(PolicyKind::Scheduling),
            "pricing" => Ok(PolicyKind::Pricing),
            "sharing" => Ok(PolicyKind::Sharing),
            other => Err(UnknownPolicyKind(other.to_string())),
        }
    }
}

/// A policy kind's name that is none of the three.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown policy kind {0:?}; expected scheduling, pricing or sharing")]
pub struct UnknownPolicyKind(pub String);

/// No shadow of the kind runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("no {0} shadow is running")]
pub struct NoShadow(pub PolicyKind);

/// Why the versions kept in the store cannot be put back.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    /// The runtime was given no store ([`PolicyRuntime::keep_in`] was not
    /// called).
    #[error("no store to restore policies from")]
    NoStore,
    /// The store could not be read.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// The store lists a version whose component bytes it does not hold.
    #[error("the store has no component with sha256 {sha256} ({kind} policy {policy})")]
    Missing {
        /// The missing component's sha256, in hex.
        sha256: String,
        /// The kind the version was loaded as.
        kind: PolicyKind,
        /// The source the version was loaded from (`builtin:NAME`, a path…).
        policy: String,
    },
    /// The stored component no longer compiles, type-checks or configures
    /// on this host (for example after an upgrade of the WIT contract).
    #[error("the stored {kind} policy {policy} no longer loads: {error}")]
    NoLongerLoads {
        /// The kind the version was loaded as.
        kind: PolicyKind,
        /// The source the version was loaded from.
        policy: String,
        /// Why the load failed.
        error: LoadError,
    },
    /// The stored bytes do not hash to the sha256 they are kept under.
    #[error("the stored component {stored} has sha256 {actual}: it is damaged")]
    Damaged {
        /// The sha256 the version was saved with, in hex.
        stored: String,
        /// The sha256 of the bytes read back, in hex.
        actual: String,
    },
}

/// Why one policy call failed. Any of these makes the host fall back to the
/// last good version for that call.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CallError {
    /// The call ran past `weft.policy.call-timeout-ms` and was interrupted at
    /// the epoch deadline.
    #[error("timed out (epoch deadline reached)")]
    Timeout,
    /// The guest tried to grow its linear memory beyond
    /// `weft.policy.memory-limit-mb`; holds wasmtime's message.
    #[error("exceeded its memory limit: {0}")]
    MemoryLimit(String),
    /// The guest trapped (a panic, an unreachable, any other wasmtime
    /// error); holds the root cause on one line.
    #[error("trapped: {0}")]
    Trap(String),
    /// The guest answered, but [`validate`] refused the answer; holds why.
    #[error("returned invalid output: {0}")]
    InvalidOutput(String),
    /// The guest's `configure` refused its parameters; holds its message.
    #[error("refused its parameters: {0}")]
    Refused(String),
    /// No version of the kind is loaded, so there is nothing to call.
    #[error("no {0} policy is loaded")]
    NoPolicy(PolicyKind),
    /// Every instance of wasmtime's pooling allocator
    /// (`weft.policy.instance-pool`) is in use; holds wasmtime's message.
    #[error(
        "cannot be instantiated: {0}; every instance of the pool is in use (raise weft.policy.instance-pool, or retire versions)"
    )]
    InstancePoolFull(String),
}

impl From<validate::InvalidOutput> for CallError {
    fn from(invalid: validate::InvalidOutput) -> CallError {
        CallError::InvalidOutput(invalid.0)
    }
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
        if let Some(full) = error.downcast_ref::<wasmtime::PoolConcurrencyLimitError>() {
            return CallError::InstancePoolFull(full.to_string());
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
            CallError::InstancePoolFull(_) => "instance-pool",
        }
    }
}

/// The slots of every kind, sharing one engine. What the host holds.
#[derive(Debug)]
pub struct PolicyRuntime {
    engine: PolicyEngine,
    pricing: PricingSlot,
    scheduling: SchedulingSlot,
    sharing: SharingSlot,
    max_failures: u32,
    /// Parameters every pricing policy receives before the operator's own.
    pricing_defaults: Vec<(String, String)>,
    /// Where loaded components are kept by sha256, so the versions in force
    /// come back after a restart or failover (`serve` sets it).
    store: std::sync::OnceLock<crate::store::Store>,
    /// The reservable queues' own sharing policies (their
    /// `reservation-policy`), by queue path.
    queue_sharing: std::sync::Mutex<std::collections::BTreeMap<String, QueueSharing>>,
}

/// A reservable queue's own sharing policy: its slot, and the source the
/// queue's `reservation-policy` named when the slot was made.
#[derive(Debug, Clone)]
pub struct QueueSharing {
    /// The source the queue's `reservation-policy` named, as
    /// [`PolicySource`] prints it.
    pub configured: String,
    /// The slot that serves the queue's sharing calls.
    pub slot: Arc<SharingSlot>,
}

impl PolicyRuntime {
    /// A runtime on `engine` with empty slots, whose versions roll back
    /// after `max_failures` failed calls in a row and whose pricing
    /// policies get `pricing_defaults` before the operator's parameters.
    pub fn new(
        engine: PolicyEngine,
        pricing_defaults: Vec<(String, String)>,
        max_failures: u32,
    ) -> PolicyRuntime {
        PolicyRuntime {
            engine,
            pricing: PricingSlot::new(max_failures),
            scheduling: SchedulingSlot::new(max_failures),
            sharing: SharingSlot::new(max_failures),
            max_failures,
            pricing_defaults,
            store: std::sync::OnceLock::new(),
            queue_sharing: Default::default(),
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
            for version in in_force::saved_versions(&stored, kind).iter().rev() {
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
    pub fn restore(&self, kind: PolicyKind, saved: &[SavedVersion]) -> Result<usize, RestoreError> {
        let store = self.store.get().ok_or(RestoreError::NoStore)?;
        for version in saved {
            let bytes =
                store
                    .policy_blob(&version.sha256)?
                    .ok_or_else(|| RestoreError::Missing {
                        sha256: version.sha256.clone(),
                        kind,
                        policy: version.source.clone(),
                    })?;
            let no_longer_loads = |error: LoadError| RestoreError::NoLongerLoads {
                kind,
                policy: version.source.clone(),
                error,
            };
            let compiled = compile(&self.engine, &bytes).map_err(no_longer_loads)?;
            let sha256 = hex::encode(compiled.sha256);
            if sha256 != version.sha256 {
                return Err(RestoreError::Damaged {
                    stored: version.sha256.clone(),
                    actual: sha256,
                });
            }
            let prepared = prepare_compiled(
                &self.engine,
                kind,
                &version.source,
                &compiled,
                version.params.clone(),
            )
            .map_err(no_longer_loads)?;
            self.slot(kind).publish(prepared);
        }
        Ok(saved.len())
    }

    /// A runtime with the limits, failure budget and pricing parameters of
    /// `settings`, whose guests read `clock`, and no policy loaded yet.
    pub fn from_settings(
        settings: &crate::config::Settings,
        clock: Arc<dyn crate::clock::Clock>,
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

    /// The engine every slot compiles and runs on.
    pub fn engine(&self) -> &PolicyEngine {
        &self.engine
    }

    /// Failed calls in a row before a version rolls itself back.
    pub fn max_failures(&self) -> u32 {
        self.max_failures
    }

    /// What every kind's slot shares: publication, rollback, history.
    pub fn slot(&self, kind: PolicyKind) -> &PolicySlot {
        match kind {
            PolicyKind::Pricing => &self.pricing,
            PolicyKind::Scheduling => &self.scheduling,
            PolicyKind::Sharing => &self.sharing,
        }
    }

    /// The pricing slot, typed by its world.
    pub fn pricing(&self) -> &PricingSlot {
        &self.pricing
    }

    /// The scheduling slot, typed by its world.
    pub fn scheduling(&self) -> &SchedulingSlot {
        &self.scheduling
    }

    /// The sharing slot every queue without a sharing policy of its own
    /// uses, typed by its world.
    pub fn sharing(&self) -> &SharingSlot {
        &self.sharing
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
        let result = self.prepare_kept(kind, source, bytes, params);
        events::PolicyEvent::loaded(kind, source, &result).emit();
        let version = result?;
        self.slot(kind).publish(version.clone());
        Ok(version)
    }

    /// Prepares `bytes` as a version of `kind` (pricing policies get the
    /// standard parameters before `params`) and keeps the component in the
    /// store, if there is one, so it can be put back after a restart.
    fn prepare_kept(
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
        let version = prepare(&self.engine, kind, source, bytes, all_params)?;
        if let Some(store) = self.store.get() {
            let mut batch = crate::store::Batch::default();
            batch.put_policy_blob(&version.info.sha256, bytes.to_vec());
            store
                .commit(&batch)
                .map_err(|e| LoadError::Store(e.to_string()))?;
        }
        Ok(version)
    }

    /// The slot for `queue`'s own sharing policy, `source`: the slot that
    /// serves it now if the queue's configuration named the same source
    /// before (keeping its history and any version loaded into it since),
    /// else a new slot with `source` loaded. Nothing is installed until
    /// [`set_queue_sharing`](Self::set_queue_sharing).
    pub fn queue_sharing_slot(
        &self,
        queue: &str,
        source: &PolicySource,
    ) -> Result<QueueSharing, LoadError> {
        let configured = source.to_string();
        let serving = self.queue_sharing.lock().unwrap().get(queue).cloned();
        if let Some(serving) = serving.filter(|s| s.configured == configured) {
            return Ok(serving);
        }
        let bytes = source.read().map_err(LoadError::Source)?;
        let result = self.prepare_kept(PolicyKind::Sharing, &configured, &bytes, &[]);
        events::PolicyEvent::loaded(PolicyKind::Sharing, &configured, &result).emit();
        let slot = SharingSlot::new(self.max_failures);
        slot.limit_standby_memory(self.sharing.standby_memory_limit());
        slot.publish(result?);
        Ok(QueueSharing {
            configured,
            slot: Arc::new(slot),
        })
    }

    /// Installs the queues' own sharing policies of a queue configuration;
    /// those it no longer names are dropped.
    pub fn set_queue_sharing(&self, queues: std::collections::BTreeMap<String, QueueSharing>) {
        *self.queue_sharing.lock().unwrap() = queues;
    }

    /// The own sharing policy of the queue at `path`, if it has one.
    pub fn queue_sharing(&self, path: &str) -> Option<Arc<SharingSlot>> {
        let queues = self.queue_sharing.lock().unwrap();
        queues.get(path).map(|q| q.slot.clone())
    }

    /// Every queue's own sharing policy: active version and history.
    pub fn queue_sharing_status(&self) -> Vec<(String, SlotStatus)> {
        let queues = self.queue_sharing.lock().unwrap();
        queues
            .iter()
            .map(|(path, q)| (path.clone(), q.slot.status()))
            .collect()
    }

    /// Loads `bytes` as the active version of the queue `path`'s own
    /// sharing policy (a hot swap, as for the runtime's own slots).
    pub fn load_queue_sharing(
        &self,
        path: &str,
        source: &str,
        bytes: &[u8],
        params: &[(String, String)],
    ) -> Result<Arc<PolicyVersion>, LoadError> {
        let slot = self.queue_sharing(path).ok_or_else(|| {
            LoadError::Source(format!(
                "queue {path} has no sharing policy of its own (no reservation-policy); leave the queue out to load the one every other queue uses"
            ))
        })?;
        let result = self.prepare_kept(PolicyKind::Sharing, source, bytes, params);
        events::PolicyEvent::loaded(PolicyKind::Sharing, source, &result).emit();
        let version = result?;
        slot.publish(version.clone());
        Ok(version)
    }

    /// The candidate running beside `kind`'s active version, if any.
    pub fn shadow(&self, kind: PolicyKind) -> &ShadowSlot {
        match kind {
            PolicyKind::Pricing => self.pricing.shadow(),
            PolicyKind::Scheduling => self.scheduling.shadow(),
            PolicyKind::Sharing => self.sharing.shadow(),
        }
    }

    /// Loads `bytes` as a shadow of `kind`: it answers the same live calls
    /// as the active version, its answers compared and never applied. It
    /// replaces a shadow already running. A shadow is not kept across a
    /// restart; what it becomes by [`promote`](Self::promote) is.
    pub fn load_shadow(
        &self,
        kind: PolicyKind,
        source: &str,
        bytes: &[u8],
        params: &[(String, String)],
    ) -> Result<Arc<PolicyVersion>, LoadError> {
        if self.slot(kind).active().is_none() {
            return Err(LoadError::Source(format!(
                "no {kind} policy is active, so there is nothing to compare a shadow with; load it as the active one"
            )));
        }
        let result = self.prepare_kept(kind, source, bytes, params);
        events::PolicyEvent::shadow_loaded(kind, source, &result).emit();
        let version = result?;
        let shadow = Shadow::start(version.clone())
            .map_err(|e| LoadError::Source(format!("cannot start the shadow's thread: {e}")))?;
        self.shadow(kind).set(shadow);
        Ok(version)
    }

    /// Makes `kind`'s shadow the active version, through the same atomic
    /// publication as a load: calls already running finish on the old one,
    /// the next call is answered by the new one, and the old one stays as
    /// the fallback. Returns the shadow's last report.
    pub fn promote(&self, kind: PolicyKind) -> Result<ShadowReport, NoShadow> {
        let shadow = self.take_shadow(kind)?;
        self.slot(kind).publish(shadow.version().clone());
        let report = shadow.report();
        tracing::info!(%kind, policy = %report.shadow.name, "shadow policy promoted to active");
        Ok(report)
    }

    /// Stops `kind`'s shadow. Returns its last report.
    pub fn stop_shadow(&self, kind: PolicyKind) -> Result<ShadowReport, NoShadow> {
        let report = self.take_shadow(kind)?.report();
        tracing::info!(%kind, policy = %report.shadow.name, "shadow policy stopped");
        Ok(report)
    }

    fn take_shadow(&self, kind: PolicyKind) -> Result<Arc<Shadow>, NoShadow> {
        self.shadow(kind).take().ok_or(NoShadow(kind))
    }
}
