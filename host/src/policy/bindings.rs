//! The one place `bindgen!` runs: host-side bindings for each policy world,
//! of the WIT this host speaks (`wit/`, weft:policy@0.3.0) and of the one
//! before it (`host/wit-0.2.0/`, which `compat.rs` adapts to), and the `host`
//! interface every policy imports. Only the names the rest of the host needs
//! are re-exported.

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
    /// weft:policy@0.2.0, frozen: components built for it still load.
    pub(in crate::policy) mod v0_2 {
        pub(in crate::policy) mod pricing {
            wasmtime::component::bindgen!({
                world: "pricing-policy",
                path: "wit-0.2.0",
            });
        }
        pub(in crate::policy) mod scheduling {
            wasmtime::component::bindgen!({
                world: "scheduling-policy",
                path: "wit-0.2.0",
                with: {
                    "weft:policy/types": super::pricing::weft::policy::types,
                    "weft:policy/host": super::pricing::weft::policy::host,
                },
            });
        }
        pub(in crate::policy) mod sharing {
            wasmtime::component::bindgen!({
                world: "sharing-policy",
                path: "wit-0.2.0",
                with: {
                    "weft:policy/types": super::pricing::weft::policy::types,
                    "weft:policy/host": super::pricing::weft::policy::host,
                },
            });
        }
    }
}

pub(super) use generated::v0_2;

pub use generated::pricing::exports::weft::policy::pricing::{
    ChargeContext, Market, PartitionLoad, PriceMultiplicators, QueueLoad, QuoteRequest, Usage,
    Utilization,
};
pub(super) use generated::pricing::weft::policy::types::PolicyKind as WitPolicyKind;
pub use generated::pricing::weft::policy::types::{
    Attribute, ExecutionType, PolicyInfo, Resources as SharingResources,
};
pub(super) use generated::pricing::{PricingPolicy, PricingPolicyPre};
pub use generated::scheduling::exports::weft::policy::scheduling::{
    AppTags, Apps, AskNodes, AskRacks, AskTags, Asks, ConstraintScope, ContainerTags, Containers,
    LocalityDelays, LocalityLevel, NodeAttributes, Nodes, PartitionShares, Partitions,
    PlacementConstraint, Placements, Queues, Round, RoundKind, Snapshot, TagCounts,
};
pub(super) use generated::scheduling::{SchedulingPolicy, SchedulingPolicyPre};
pub use generated::sharing::exports::weft::policy::sharing::{
    Admission, PlanContext, PlanSettings, Rejection, Timeline,
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

impl v0_2::pricing::weft::policy::host::Host for GuestState {
    fn log(&mut self, level: v0_2::pricing::weft::policy::host::Level, message: String) {
        use v0_2::pricing::weft::policy::host::Level as Old;
        let level = match level {
            Old::Trace => Level::Trace,
            Old::Debug => Level::Debug,
            Old::Info => Level::Info,
            Old::Warn => Level::Warn,
            Old::Error => Level::Error,
        };
        Host::log(self, level, message);
    }
}

impl v0_2::pricing::weft::policy::types::Host for GuestState {}

/// Adds the `host` and `types` imports of both worlds to `linker`.
pub(super) fn add_host_imports(
    linker: &mut wasmtime::component::Linker<GuestState>,
) -> wasmtime::Result<()> {
    // The worlds of one version import the same interfaces, so one world's
    // add_to_linker covers them all; each version has its own.
    generated::pricing::PricingPolicy::add_to_linker::<_, HasSelf<_>>(linker, |state| state)?;
    v0_2::pricing::PricingPolicy::add_to_linker::<_, HasSelf<_>>(linker, |state| state)
}
