//! The one place `bindgen!` runs: host-side bindings for each policy world,
//! and the `host` interface every policy imports. Only the names the rest of
//! the host needs are re-exported.

use wasmtime::component::HasSelf;

use super::engine::GuestState;

#[allow(
    missing_docs,
    reason = "bindgen! turns the WIT's `///` comments into docs, and many record fields in wit/*.wit have none; items the macro generates cannot be given doc comments here"
)]
mod generated {
    pub(super) mod pricing {
        // Equality and JSON for every WIT type: `weft policy test` reads
        // example cases and compares answers, shadow mode compares two
        // versions' answers.
        wasmtime::component::bindgen!({
            world: "pricing-policy",
            path: "../wit",
            additional_derives: [PartialEq, serde::Serialize, serde::Deserialize],
        });
    }
    pub(super) mod scheduling {
        // Reuse the shared interfaces so both worlds have one `PolicyInfo`, one `Host`.
        wasmtime::component::bindgen!({
            world: "scheduling-policy",
            path: "../wit",
            additional_derives: [PartialEq, serde::Serialize, serde::Deserialize],
            with: {
                "weft:policy/types": super::pricing::weft::policy::types,
                "weft:policy/host": super::pricing::weft::policy::host,
            },
        });
    }
    pub(super) mod sharing {
        wasmtime::component::bindgen!({
            world: "sharing-policy",
            path: "../wit",
            additional_derives: [PartialEq, serde::Serialize, serde::Deserialize],
            with: {
                "weft:policy/types": super::pricing::weft::policy::types,
                "weft:policy/host": super::pricing::weft::policy::host,
            },
        });
    }
}

pub use generated::pricing::exports::weft::policy::pricing::{
    PriceMultiplicators, Usage, Utilization,
};
pub(super) use generated::pricing::weft::policy::types::PolicyKind as WitPolicyKind;
pub use generated::pricing::weft::policy::types::{PolicyInfo, Resources as SharingResources};
pub(super) use generated::pricing::{PricingPolicy, PricingPolicyPre};
pub use generated::scheduling::exports::weft::policy::scheduling::{
    Apps, Asks, Containers, Nodes, Placements, Queues, Snapshot,
};
pub(super) use generated::scheduling::{SchedulingPolicy, SchedulingPolicyPre};
pub use generated::sharing::exports::weft::policy::sharing::{
    Admission, PlanSettings, Rejection, Timeline,
};
pub(super) use generated::sharing::{SharingPolicy, SharingPolicyPre};

use generated::pricing::weft::policy::host::{Host, Level};

impl Host for GuestState {
    fn log(&mut self, level: Level, message: String) {
        self.capture_log(level, &message);
        let policy = &*self.policy_name;
        match level {
            Level::Trace => tracing::trace!(target: "weft::policy::guest", policy, "{message}"),
            Level::Debug => tracing::debug!(target: "weft::policy::guest", policy, "{message}"),
            Level::Info => tracing::info!(target: "weft::policy::guest", policy, "{message}"),
            Level::Warn => tracing::warn!(target: "weft::policy::guest", policy, "{message}"),
            Level::Error => tracing::error!(target: "weft::policy::guest", policy, "{message}"),
        }
    }
}

impl generated::pricing::weft::policy::types::Host for GuestState {}

/// Adds the `host` and `types` imports of both worlds to `linker`.
pub(super) fn add_host_imports(
    linker: &mut wasmtime::component::Linker<GuestState>,
) -> wasmtime::Result<()> {
    // The two worlds import the same interfaces, so one world's
    // add_to_linker covers both.
    generated::pricing::PricingPolicy::add_to_linker::<_, HasSelf<_>>(linker, |state| state)
}
