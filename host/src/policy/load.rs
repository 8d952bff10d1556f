//! Turning bytes into a checked, configured [`PolicyVersion`]: compile →
//! type-check against the world → instantiate → configure → self-check.
//! Nothing here publishes; a failure at any step leaves the host untouched.

use std::sync::Arc;

use wasmtime::component::Component;

use super::bindings::{
    Admission, Apps, Asks, ChargeContext, Market, Nodes, PlanContext, PlanSettings, PolicyInfo,
    PriceMultiplicators, PricingPolicyPre, Queues, QuoteRequest, SchedulingPolicyPre,
    SharingPolicyPre, SharingResources, Snapshot, Timeline, Usage, Utilization, WitPolicyKind,
};
use super::engine::{CompiledComponent, PolicyEngine, call_seed};
use super::version::{Prepared, VersionInfo, now_ms};
use super::{CallError, PolicyKind, PolicyVersion, validate};

/// Why a load was refused. Each message says what was wrong with the file.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The component could not be had (no such builtin, an unreadable file,
    /// a request naming none or two), or the load had nowhere to go (no
    /// active version to shadow, a queue with no sharing policy of its
    /// own); holds the whole message.
    #[error("{0}")]
    Source(String),
    /// The bytes do not start with the `\0asm` magic.
    #[error("not a WebAssembly file (it does not start with the \\0asm header)")]
    NotWasm,
    /// The bytes are a core module (layer 0), not a component.
    #[error("a core WebAssembly module, not a component; build the policy for wasm32-wasip2")]
    CoreModule,
    /// wasmtime could not compile the component, or (in [`inspect`]) it
    /// implements none of the three worlds; holds the error and its causes.
    #[error("the component does not compile: {0}")]
    Compile(String),
    /// The component imports or exports `weft:policy` at a version this
    /// host does not speak (see [`WIT_VERSION`]).
    #[error(
        "the component was built for weft:policy@{built_for}, but this Weft speaks weft:policy@{WIT_VERSION} (and loads components built for {}); rebuild it against this version's WIT (`weft policy new` writes it)",
        super::compat::VERSION
    )]
    IncompatibleWit {
        /// The `weft:policy` version the component names that this host does
        /// not speak (the lowest, if several).
        built_for: String,
    },
    /// The component does not type-check against the world of the kind it
    /// was loaded as.
    #[error(
        "not a {kind} policy (the component does not implement the {kind}-policy world): {detail}"
    )]
    WrongWorld {
        /// The kind it was loaded as.
        kind: PolicyKind,
        /// wasmtime's type-check error, with its causes.
        detail: String,
    },
    /// The component's `describe` names another kind than the one it was
    /// loaded as.
    #[error("the component says it is a {declared:?} policy, but was loaded as {kind}")]
    WrongKind {
        /// The kind it was loaded as.
        kind: PolicyKind,
        /// The kind its `describe` returned.
        declared: String,
    },
    /// The policy's `configure` refused its parameters; holds its message.
    #[error("the policy refused its parameters: {0}")]
    Configure(String),
    /// `describe`, instantiation or the call on a sample input failed, or
    /// the answer was invalid.
    #[error("the policy failed its self-check: {0}")]
    SelfCheck(CallError),
    /// No instance could be made for the policy: the pooling allocator
    /// (`weft.policy.instance-pool`) is full. Not the policy's fault.
    #[error("the policy {0}")]
    NoInstance(CallError),
    /// Writing the component's bytes to the store failed; holds the
    /// store's error.
    #[error("the store did not keep the component, so it is not loaded: {0}")]
    Store(String),
}

impl LoadError {
    /// A call made while loading failed: the policy's fault, unless no
    /// instance could be made for it.
    fn failed(error: CallError) -> LoadError {
        match error {
            full @ CallError::InstancePoolFull(_) => LoadError::NoInstance(full),
            other => LoadError::SelfCheck(other),
        }
    }
}

/// Compiles, checks and configures `bytes` as a policy of `kind`.
pub fn prepare(
    engine: &PolicyEngine,
    kind: PolicyKind,
    source: &str,
    bytes: &[u8],
    params: Vec<(String, String)>,
) -> Result<Arc<PolicyVersion>, LoadError> {
    let compiled = compile(engine, bytes)?;
    prepare_compiled(engine, kind, source, &compiled, params)
}

/// Checks and configures `compiled` as a policy of `kind`: [`prepare`] for
/// a component already compiled (and hashed).
pub fn prepare_compiled(
    engine: &PolicyEngine,
    kind: PolicyKind,
    source: &str,
    compiled: &CompiledComponent,
    params: Vec<(String, String)>,
) -> Result<Arc<PolicyVersion>, LoadError> {
    let adapted = check_wit_version(engine, &compiled.component)?;
    let prepared = type_check(engine, kind, &compiled.component, adapted)?;
    let sha256 = compiled.sha256;
    let mut first = [0u8; 8];
    first.copy_from_slice(&sha256[..8]);
    let code_seed = u64::from_le_bytes(first);
    let described = describe(engine, &prepared, source, code_seed)?;
    let declared = match described.kind {
        WitPolicyKind::Scheduling => "scheduling",
        WitPolicyKind::Pricing => "pricing",
        WitPolicyKind::Sharing => "sharing",
    };
    if declared != kind.as_str() {
        return Err(LoadError::WrongKind {
            kind,
            declared: declared.into(),
        });
    }
    let info = VersionInfo {
        kind,
        name: described.name,
        version: described.version,
        source: source.to_string(),
        sha256: hex::encode(sha256),
        params,
        loaded_at_ms: now_ms(),
    };
    let version =
        PolicyVersion::new(engine, prepared, info, code_seed).map_err(|error| match error {
            CallError::Refused(message) => LoadError::Configure(message),
            other => LoadError::failed(other),
        })?;
    self_check(&version).map_err(LoadError::failed)?;
    Ok(version)
}

/// Finds which world `bytes` implements and prepares it as a load would,
/// pricing policies receiving `pricing_defaults` before `params` (what
/// `weft policy check` does).
pub fn inspect(
    engine: &PolicyEngine,
    source: &str,
    bytes: &[u8],
    pricing_defaults: &[(String, String)],
    params: &[(String, String)],
) -> Result<Arc<PolicyVersion>, LoadError> {
    let compiled = compile(engine, bytes)?;
    let adapted = check_wit_version(engine, &compiled.component)?;
    let kind = PolicyKind::ALL
        .into_iter()
        .find(|kind| type_check(engine, *kind, &compiled.component, adapted).is_ok())
        .ok_or_else(|| {
            LoadError::Compile("the component implements no Weft policy world (scheduling-policy, pricing-policy or sharing-policy)".into())
        })?;
    let mut all = match kind {
        PolicyKind::Pricing => pricing_defaults.to_vec(),
        PolicyKind::Scheduling | PolicyKind::Sharing => Vec::new(),
    };
    all.extend_from_slice(params);
    prepare_compiled(engine, kind, source, &compiled, all)
}

/// `bytes` compiled, once they look like a component.
pub fn compile(engine: &PolicyEngine, bytes: &[u8]) -> Result<CompiledComponent, LoadError> {
    // The preamble is magic (4 bytes) then version and layer: layer 0 is a
    // core module, layer 1 a component.
    if bytes.len() < 8 || &bytes[..4] != b"\0asm" {
        return Err(LoadError::NotWasm);
    }
    if bytes[6..8] == [0, 0] {
        return Err(LoadError::CoreModule);
    }
    engine
        .compile(bytes)
        .map_err(|e| LoadError::Compile(format!("{e:#}")))
}

/// The version of the `weft:policy` WIT package this host implements
/// (wit/*.wit). Components built for 0.2.0 load too, adapted
/// (`compat.rs`); those built for any other 0.x minor version (or another
/// major version) are refused.
pub const WIT_VERSION: &str = "0.3.0";

/// Refuses a component whose `weft:policy` imports or exports are of a
/// version this host does not speak, saying which, rather than leaving the
/// linker's "no import named …" to explain it. Returns whether it was built
/// for 0.2.0 (to be adapted).
fn check_wit_version(engine: &PolicyEngine, component: &Component) -> Result<bool, LoadError> {
    let ty = component.component_type();
    let engine = engine.engine();
    let names: Vec<&str> = ty
        .imports(engine)
        .map(|(name, _)| name)
        .chain(ty.exports(engine).map(|(name, _)| name))
        .collect();
    let versions: std::collections::BTreeSet<&str> = names
        .iter()
        .filter_map(|name| name.strip_prefix("weft:policy/")?.split_once('@'))
        .map(|(_, version)| version)
        .collect();
    if let Some(other) = versions
        .iter()
        .find(|v| !compatible(v, WIT_VERSION) && !compatible(v, super::compat::VERSION))
    {
        return Err(LoadError::IncompatibleWit {
            built_for: other.to_string(),
        });
    }
    let old = versions
        .iter()
        .any(|v| compatible(v, super::compat::VERSION));
    let current = versions.iter().any(|v| compatible(v, WIT_VERSION));
    if old && current {
        return Err(LoadError::Compile(format!(
            "the component names both weft:policy@{} and @{WIT_VERSION}; build it against one",
            super::compat::VERSION
        )));
    }
    Ok(old)
}

/// Semver compatibility as the component model applies it: the same major
/// version, and for 0.x the same minor.
fn compatible(version: &str, ours: &str) -> bool {
    let parts = |v: &str| -> Option<(u64, u64)> {
        let mut numbers = v.split(['.', '-', '+']).map(str::parse::<u64>);
        Some((numbers.next()?.ok()?, numbers.next()?.ok()?))
    };
    match (parts(version), parts(ours)) {
        (Some((0, minor)), Some((0, ours))) => minor == ours,
        (Some((major, _)), Some((ours, _))) => major == ours,
        _ => false,
    }
}

/// The component pre-linked for `kind`'s world, of this host's WIT or
/// (`adapted`) of 0.2.0.
fn type_check(
    engine: &PolicyEngine,
    kind: PolicyKind,
    component: &Component,
    adapted: bool,
) -> Result<Prepared, LoadError> {
    let wrong_world = |e: wasmtime::Error| LoadError::WrongWorld {
        kind,
        detail: format!("{e:#}"),
    };
    let instance_pre = engine
        .linker()
        .instantiate_pre(component)
        .map_err(wrong_world)?;
    use super::bindings::v0_2;
    if adapted {
        return match kind {
            PolicyKind::Pricing => v0_2::pricing::PricingPolicyPre::new(instance_pre)
                .map(Prepared::OldPricing)
                .map_err(wrong_world),
            PolicyKind::Scheduling => v0_2::scheduling::SchedulingPolicyPre::new(instance_pre)
                .map(Prepared::OldScheduling)
                .map_err(wrong_world),
            PolicyKind::Sharing => v0_2::sharing::SharingPolicyPre::new(instance_pre)
                .map(Prepared::OldSharing)
                .map_err(wrong_world),
        };
    }
    match kind {
        PolicyKind::Pricing => PricingPolicyPre::new(instance_pre)
            .map(Prepared::Pricing)
            .map_err(wrong_world),
        PolicyKind::Scheduling => SchedulingPolicyPre::new(instance_pre)
            .map(Prepared::Scheduling)
            .map_err(wrong_world),
        PolicyKind::Sharing => SharingPolicyPre::new(instance_pre)
            .map(Prepared::Sharing)
            .map_err(wrong_world),
    }
}

/// `describe` on a throwaway instance, before the version exists, so its
/// name is known for logging from the first configured instance on. Its
/// randomness is seeded as a call numbered `u64::MAX`, which the version's
/// own calls never reach.
fn describe(
    engine: &PolicyEngine,
    prepared: &Prepared,
    source: &str,
    code_seed: u64,
) -> Result<PolicyInfo, LoadError> {
    let mut store = engine.new_store(source.into());
    engine.begin_call(&mut store, call_seed(code_seed, u64::MAX));
    let described = match prepared {
        Prepared::Pricing(pre) => pre
            .instantiate(&mut store)
            .and_then(|p| p.call_describe(&mut store)),
        Prepared::Scheduling(pre) => pre
            .instantiate(&mut store)
            .and_then(|p| p.call_describe(&mut store)),
        Prepared::Sharing(pre) => pre
            .instantiate(&mut store)
            .and_then(|p| p.call_describe(&mut store)),
        Prepared::OldPricing(pre) => pre
            .instantiate(&mut store)
            .and_then(|p| p.call_describe(&mut store))
            .map(super::compat::policy_info),
        Prepared::OldScheduling(pre) => pre
            .instantiate(&mut store)
            .and_then(|p| p.call_describe(&mut store))
            .map(super::compat::policy_info),
        Prepared::OldSharing(pre) => pre
            .instantiate(&mut store)
            .and_then(|p| p.call_describe(&mut store))
            .map(super::compat::policy_info),
    };
    described.map_err(|e| LoadError::failed(super::engine::call_failed(&store, e)))
}

/// One call on a small sample input, its output checked as every later
/// call's will be.
fn self_check(version: &PolicyVersion) -> Result<(), CallError> {
    match version.info.kind {
        PolicyKind::Pricing => {
            let multiplicators = version.multiplicators(&sample_market())?;
            validate::multiplicators(&multiplicators).map_err(CallError::from)?;
            let usage = Usage::of_columns(
                vec![10.0, 1.0, 0.0],
                vec![1024, 8192, 512],
                vec![1, 4, 1],
                vec![0, 1, 0],
            );
            let charges = version.charge(&usage, multiplicators)?;
            validate::charges(&charges, usage.seconds.len()).map_err(CallError::from)?;
            let quote = version.quote(&sample_quote(), multiplicators)?;
            validate::quote(quote).map_err(CallError::from)
        }
        PolicyKind::Scheduling => {
            let snapshot = sample_snapshot();
            let placements = version.schedule(&snapshot)?;
            validate::placements(&snapshot, &placements).map_err(CallError::from)
        }
        PolicyKind::Sharing => {
            let admission = sample_admission();
            let window = version.window(&admission.settings)?;
            validate::window(window).map_err(CallError::from)?;
            // Accepting or refusing are both answers; only a failed call is not.
            let _accepted_or_refused = version.validate(&admission)?;
            let available = version.available(&Admission {
                candidate: validate::empty_timeline(),
                ..admission
            })?;
            validate::timeline(&available).map_err(CallError::from)
        }
    }
}

/// A half-busy cluster of one partition and one queue, after flat prices.
pub fn sample_market() -> Market {
    Market {
        now_ms: 0,
        utilization: Utilization {
            memory: 0.5,
            vcores: 0.25,
            gpus: 1.0,
        },
        partitions: vec![],
        queues: vec![],
        last: PriceMultiplicators {
            general: 1.0,
            gpu: 1.0,
        },
    }
}

/// Two containers of 1 GB and 1 vcore for a minute.
pub(crate) fn sample_quote() -> QuoteRequest {
    QuoteRequest {
        context: ChargeContext::anonymous(),
        memory_mb: 1024,
        vcores: 1,
        gpus: 0,
        containers: 2,
        start_ms: 0,
        duration_ms: 60_000,
    }
}

/// A 10 GB queue; the user holds 2 GB over [0, 60 s) and asks for 4 GB over [30 s, 90 s).
pub(crate) fn sample_admission() -> Admission {
    let block = |start: i64, end: i64, memory_mb: u64, vcores: u64| Timeline {
        at_ms: vec![start, end],
        memory_mb: vec![memory_mb, 0],
        vcores: vec![vcores, 0],
        gpus: vec![0, 0],
    };
    Admission {
        settings: PlanSettings {
            queue: "root.sample".into(),
            capacity: SharingResources {
                memory_mb: 10_240,
                vcores: 10,
                gpus: 0,
            },
            reservation_window_ms: 60_000,
            instantaneous_max_capacity: 100.0,
            average_capacity: 100.0,
        },
        user: "sample".into(),
        reservation_id: "reservation_0_0001".into(),
        from_ms: -60_000,
        to_ms: 150_000,
        candidate: block(30_000, 90_000, 4096, 4),
        user_committed: block(0, 60_000, 2048, 2),
        plan_committed: block(0, 60_000, 2048, 2),
        context: PlanContext {
            now_ms: 0,
            reservation_name: "sample".into(),
            recurring: false,
            reservations: 1,
            user_reservations: 1,
            users: 1,
        },
    }
}

/// Two nodes, one queue, one app asking for three containers.
pub(crate) fn sample_snapshot() -> Snapshot {
    Snapshot::of_columns(
        0,
        Nodes {
            free_memory_mb: vec![4096, 2048],
            free_vcores: vec![4, 2],
            free_gpus: vec![0, 1],
            capacity_memory_mb: vec![4096, 4096],
            capacity_vcores: vec![4, 4],
            capacity_gpus: vec![0, 1],
            ..Nodes::empty()
        },
        Queues {
            parent: vec![0],
            capacity: vec![100.0],
            maximum_capacity: vec![100.0],
            minimum_user_limit_percent: vec![100.0],
            user_limit_factor: vec![Some(1.0)],
            fair: vec![false],
            used_memory_mb: vec![2048],
            used_vcores: vec![2],
            used_gpus: vec![0],
            ..Queues::empty()
        },
        Apps {
            queue: vec![0],
            user: vec![0],
            priority: vec![0],
            submit_time_ms: vec![0],
            used_memory_mb: vec![0],
            used_vcores: vec![0],
            used_gpus: vec![0],
            ..Apps::empty()
        },
        Asks {
            app: vec![0],
            pending: vec![3],
            memory_mb: vec![1024],
            vcores: vec![1],
            gpus: vec![0],
            ..Asks::empty()
        },
    )
}
