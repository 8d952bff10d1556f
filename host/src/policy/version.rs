//! One loaded version of a policy: its identity, its pre-linked component,
//! and a warm instance reused across calls (dropped and rebuilt after a trap,
//! since a trapped instance's state cannot be trusted).

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use serde::Serialize;
use wasmtime::Store;

use super::bindings::{
    Admission, Containers, Market, Placements, PlanSettings, PriceMultiplicators, PricingPolicy,
    PricingPolicyPre, QuoteRequest, Rejection, SchedulingPolicy, SchedulingPolicyPre,
    SharingPolicy, SharingPolicyPre, Snapshot, Timeline, Usage, v0_2,
};
use super::compat;
use super::engine::{GuestState, PolicyEngine, call_failed, call_seed, code_bytes};
use super::{CallError, PolicyKind};

/// What identifies a loaded version, as shown in the history and the API.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct VersionInfo {
    /// The kind it was loaded as (its `describe` agrees).
    pub kind: PolicyKind,
    /// The policy's own name, from `describe`.
    pub name: String,
    /// The policy's own version string, from `describe` (free text).
    pub version: String,
    /// Where it came from: `builtin:NAME`, a file path, or `upload`.
    pub source: String,
    /// The sha256 of the component's bytes, in hex: what identifies the
    /// code, and the key the store keeps it under.
    pub sha256: String,
    /// The parameters `configure` accepted, as [name, value] pairs.
    #[schema(value_type = Vec<Vec<String>>)]
    pub params: Vec<(String, String)>,
    /// When it was loaded, in milliseconds since the Unix epoch (the wall
    /// clock, also under `replay` and `simulate`).
    pub loaded_at_ms: u64,
}

/// The pre-linked component for one world, of this host's WIT or of
/// 0.2.0 (`Old*`, called through `compat.rs`).
pub(super) enum Prepared {
    Pricing(PricingPolicyPre<GuestState>),
    Scheduling(SchedulingPolicyPre<GuestState>),
    Sharing(SharingPolicyPre<GuestState>),
    OldPricing(v0_2::pricing::PricingPolicyPre<GuestState>),
    OldScheduling(v0_2::scheduling::SchedulingPolicyPre<GuestState>),
    OldSharing(v0_2::sharing::SharingPolicyPre<GuestState>),
}

impl Prepared {
    /// The weft:policy version the component was built for.
    pub(super) fn wit_version(&self) -> &'static str {
        match self {
            Prepared::Pricing(_) | Prepared::Scheduling(_) | Prepared::Sharing(_) => {
                super::WIT_VERSION
            }
            Prepared::OldPricing(_) | Prepared::OldScheduling(_) | Prepared::OldSharing(_) => {
                compat::VERSION
            }
        }
    }

    fn component(&self) -> &wasmtime::component::Component {
        match self {
            Prepared::Pricing(pre) => pre.instance_pre().component(),
            Prepared::Scheduling(pre) => pre.instance_pre().component(),
            Prepared::Sharing(pre) => pre.instance_pre().component(),
            Prepared::OldPricing(pre) => pre.instance_pre().component(),
            Prepared::OldScheduling(pre) => pre.instance_pre().component(),
            Prepared::OldSharing(pre) => pre.instance_pre().component(),
        }
    }
}

enum Bindings {
    Pricing(PricingPolicy),
    Scheduling(SchedulingPolicy),
    Sharing(SharingPolicy),
    OldPricing(v0_2::pricing::PricingPolicy),
    OldScheduling(v0_2::scheduling::SchedulingPolicy),
    OldSharing(v0_2::sharing::SharingPolicy),
}

struct Warm {
    store: Store<GuestState>,
    bindings: Bindings,
}

/// One loaded, configured version of a policy, with a warm instance reused
/// across calls. Its call methods return the guest's answer unchecked: the
/// host calls it through the typed slots, which check every answer.
pub struct PolicyVersion {
    /// What identifies it.
    pub info: VersionInfo,
    prepared: Prepared,
    engine: PolicyEngine,
    warm: Mutex<Option<Warm>>,
    consecutive_failures: AtomicU32,
    /// The first bytes of the sha256, which seed every call's randomness.
    code_seed: u64,
    /// Calls begun so far (instantiations included): with `code_seed`, the
    /// seed of the next call, the same in every replay of the same calls.
    calls: AtomicU64,
}

impl std::fmt::Debug for PolicyVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyVersion")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl PolicyVersion {
    /// Instantiates and configures the component once, which is the load's
    /// check that `configure` accepts `params`; the instance is kept warm.
    pub(super) fn new(
        engine: &PolicyEngine,
        prepared: Prepared,
        info: VersionInfo,
        code_seed: u64,
    ) -> Result<Arc<PolicyVersion>, CallError> {
        let version = PolicyVersion {
            info,
            prepared,
            engine: engine.clone(),
            warm: Mutex::new(None),
            consecutive_failures: AtomicU32::new(0),
            code_seed,
            calls: AtomicU64::new(0),
        };
        let warm = version.instantiate()?;
        *version.warm.lock().unwrap() = Some(warm);
        Ok(Arc::new(version))
    }

    /// A fresh instance, configured with this version's parameters. Public for
    /// benchmarks of instantiation cost.
    pub fn instantiate_fresh(&self) -> Result<(), CallError> {
        self.instantiate().map(drop)
    }

    fn instantiate(&self) -> Result<Warm, CallError> {
        let mut store = self.engine.new_store(self.info.name.as_str().into());
        self.begin_call(&mut store);
        let params = &self.info.params;
        // Each world's bindings are their own type: the same two calls on each.
        macro_rules! instantiate {
            ($pre:expr, $variant:ident) => {{
                let bindings = $pre
                    .instantiate(&mut store)
                    .map_err(|e| call_failed(&store, e))?;
                let configured = bindings
                    .call_configure(&mut store, params)
                    .map_err(|e| call_failed(&store, e))?;
                (Bindings::$variant(bindings), configured)
            }};
        }
        let (bindings, configured) = match &self.prepared {
            Prepared::Pricing(pre) => instantiate!(pre, Pricing),
            Prepared::Scheduling(pre) => instantiate!(pre, Scheduling),
            Prepared::Sharing(pre) => instantiate!(pre, Sharing),
            Prepared::OldPricing(pre) => instantiate!(pre, OldPricing),
            Prepared::OldScheduling(pre) => instantiate!(pre, OldScheduling),
            Prepared::OldSharing(pre) => instantiate!(pre, OldSharing),
        };
        configured.map_err(CallError::Refused)?;
        Ok(Warm { store, bindings })
    }

    /// Runs `call` on the warm instance under the per-call deadline.
    fn with_instance<R>(
        &self,
        call: impl FnOnce(&mut Store<GuestState>, &Bindings) -> wasmtime::Result<R>,
    ) -> Result<R, CallError> {
        let mut warm = self
            .warm
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if warm.is_none() {
            *warm = Some(self.instantiate()?);
        }
        let instance = warm.as_mut().expect("instantiated above");
        self.begin_call(&mut instance.store);
        match call(&mut instance.store, &instance.bindings) {
            Ok(result) => Ok(result),
            Err(error) => {
                let error = call_failed(&instance.store, error);
                *warm = None;
                Err(error)
            }
        }
    }

    /// Arms the deadline, freezes the clocks and seeds the randomness of the
    /// next call on `store`.
    fn begin_call(&self, store: &mut Store<GuestState>) {
        let call = self.calls.fetch_add(1, Ordering::Relaxed);
        self.engine
            .begin_call(store, call_seed(self.code_seed, call));
    }

    fn wrong_world(&self) -> wasmtime::Error {
        wasmtime::Error::msg(format!(
            "{} is not a {} policy",
            self.info.name, self.info.kind
        ))
    }

    /// Calls the pricing world's `multiplicators` with the cluster's load
    /// (`market`; a 0.2.0 policy sees its utilization only).
    pub fn multiplicators(&self, market: &Market) -> Result<PriceMultiplicators, CallError> {
        self.with_instance(|store, bindings| match bindings {
            Bindings::Pricing(p) => p.weft_policy_pricing().call_multiplicators(store, market),
            Bindings::OldPricing(p) => p
                .weft_policy_pricing()
                .call_multiplicators(store, compat::utilization(market))
                .map(compat::multiplicators_from_old),
            _ => Err(self.wrong_world()),
        })
    }

    /// Calls the pricing world's `charge`: one charge in credits per row of
    /// `usage`, priced with `multiplicators`.
    pub fn charge(
        &self,
        usage: &Usage,
        multiplicators: PriceMultiplicators,
    ) -> Result<Vec<f64>, CallError> {
        self.with_instance(|store, bindings| match bindings {
            Bindings::Pricing(p) => {
                p.weft_policy_pricing()
                    .call_charge(store, usage, multiplicators)
            }
            Bindings::OldPricing(p) => p.weft_policy_pricing().call_charge(
                store,
                &compat::usage(usage),
                compat::multiplicators_to_old(multiplicators),
            ),
            _ => Err(self.wrong_world()),
        })
    }

    /// Calls the pricing world's `quote`: what `request` would cost, all its
    /// containers together. A 0.2.0 policy prices one container's row with
    /// `charge`, times the containers.
    pub fn quote(
        &self,
        request: &QuoteRequest,
        multiplicators: PriceMultiplicators,
    ) -> Result<f64, CallError> {
        self.with_instance(|store, bindings| match bindings {
            Bindings::Pricing(p) => {
                p.weft_policy_pricing()
                    .call_quote(store, request, multiplicators)
            }
            Bindings::OldPricing(p) => p
                .weft_policy_pricing()
                .call_charge(
                    store,
                    &compat::quote_row(request),
                    compat::multiplicators_to_old(multiplicators),
                )
                .and_then(|prices| match prices.as_slice() {
                    [one] => Ok(one * f64::from(request.containers)),
                    _ => Err(wasmtime::Error::msg(format!(
                        "charge returned {} prices for the one row of a quote",
                        prices.len()
                    ))),
                }),
            _ => Err(self.wrong_world()),
        })
    }

    /// Calls the scheduling world's `schedule` on one round's `snapshot`.
    pub fn schedule(&self, snapshot: &Snapshot) -> Result<Placements, CallError> {
        self.with_instance(|store, bindings| match bindings {
            Bindings::Scheduling(s) => s.weft_policy_scheduling().call_schedule(store, snapshot),
            Bindings::OldScheduling(s) => s
                .weft_policy_scheduling()
                .call_schedule(store, &compat::snapshot(snapshot))
                .map(compat::placements),
            _ => Err(self.wrong_world()),
        })
    }

    /// Calls the scheduling world's `preempt`: indices into `running` of the
    /// containers to preempt.
    pub fn preempt(
        &self,
        snapshot: &Snapshot,
        running: &Containers,
    ) -> Result<Vec<u32>, CallError> {
        self.with_instance(|store, bindings| match bindings {
            Bindings::Scheduling(s) => s
                .weft_policy_scheduling()
                .call_preempt(store, snapshot, running),
            Bindings::OldScheduling(s) => s.weft_policy_scheduling().call_preempt(
                store,
                &compat::snapshot(snapshot),
                &compat::containers(running),
            ),
            _ => Err(self.wrong_world()),
        })
    }

    /// Calls the sharing world's `window`: how far before and after a
    /// reservation the policy looks, in ms.
    pub fn window(&self, settings: &PlanSettings) -> Result<i64, CallError> {
        self.with_instance(|store, bindings| match bindings {
            Bindings::Sharing(s) => s.weft_policy_sharing().call_window(store, settings),
            Bindings::OldSharing(s) => s
                .weft_policy_sharing()
                .call_window(store, &compat::plan_settings(settings)),
            _ => Err(self.wrong_world()),
        })
    }

    /// Calls the sharing world's `validate`: accept the admission's
    /// candidate, or refuse it with the reason.
    pub fn validate(&self, admission: &Admission) -> Result<Result<(), Rejection>, CallError> {
        self.with_instance(|store, bindings| match bindings {
            Bindings::Sharing(s) => s.weft_policy_sharing().call_validate(store, admission),
            Bindings::OldSharing(s) => s
                .weft_policy_sharing()
                .call_validate(store, &compat::admission(admission))
                .map(|answer| answer.map_err(compat::rejection)),
            _ => Err(self.wrong_world()),
        })
    }

    /// Calls the sharing world's `available`: what the user could still be
    /// given at each instant of the admission's range.
    pub fn available(&self, admission: &Admission) -> Result<Timeline, CallError> {
        self.with_instance(|store, bindings| match bindings {
            Bindings::Sharing(s) => s.weft_policy_sharing().call_available(store, admission),
            Bindings::OldSharing(s) => s
                .weft_policy_sharing()
                .call_available(store, &compat::admission(admission))
                .map(compat::timeline_from_old),
            _ => Err(self.wrong_world()),
        })
    }

    /// The weft:policy version the component was built for (this host's,
    /// or 0.2.0, adapted).
    pub fn wit_version(&self) -> &'static str {
        self.prepared.wit_version()
    }

    /// Bytes of compiled code this version holds (shared with every other
    /// version of the same component).
    pub fn code_bytes(&self) -> usize {
        code_bytes(self.prepared.component())
    }

    /// Counts a failed call; returns how many calls in a row have failed.
    pub(super) fn record_failure(&self) -> u32 {
        self.consecutive_failures.fetch_add(1, Ordering::Relaxed) + 1
    }

    pub(super) fn record_success(&self) {
        self.consecutive_failures.store(0, Ordering::Relaxed);
    }
}

pub(super) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
