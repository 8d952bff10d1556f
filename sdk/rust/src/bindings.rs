//! The `weft:policy` bindings, generated once for the three worlds. Policy
//! crates never run `generate!` themselves: they implement this crate's
//! traits and export them with `export_pricing!`, `export_scheduling!` or
//! `export_sharing!`, which use the export macros generated here.
//!
//! `weft:policy/types` and `weft:policy/host` are generated with the pricing
//! world and shared by the other two (`with`), so one `Resources` or `Level`
//! serves all three. The records get `Default` and `PartialEq`, so tests can
//! build the inputs the host would send.

#![allow(unsafe_code, reason = "the code wit-bindgen generates")]

/// The `pricing-policy` world.
pub mod pricing {
    wit_bindgen::generate!({
        world: "pricing-policy",
        path: "../../wit",
        pub_export_macro: true,
        export_macro_name: "export_pricing_world",
        default_bindings_module: "weft_policy::bindings::pricing",
        additional_derives: [PartialEq],
        additional_type_attributes: {
            "weft:policy/types@0.3.0/resources": [#[derive(Default, Eq, Hash, PartialOrd, Ord)]],
            "weft:policy/pricing@0.3.0/usage": [#[derive(Default)]],
            "weft:policy/pricing@0.3.0/charge-context": [#[derive(Default)]],
            "weft:policy/pricing@0.3.0/utilization": [#[derive(Default)]],
            "weft:policy/pricing@0.3.0/price-multiplicators": [#[derive(Default)]],
            "weft:policy/pricing@0.3.0/market": [#[derive(Default)]],
            "weft:policy/pricing@0.3.0/partition-load": [#[derive(Default)]],
            "weft:policy/pricing@0.3.0/queue-load": [#[derive(Default)]],
            "weft:policy/pricing@0.3.0/quote-request": [#[derive(Default)]],
        },
    });
}

/// The `scheduling-policy` world.
pub mod scheduling {
    wit_bindgen::generate!({
        world: "scheduling-policy",
        path: "../../wit",
        pub_export_macro: true,
        export_macro_name: "export_scheduling_world",
        default_bindings_module: "weft_policy::bindings::scheduling",
        additional_derives: [PartialEq],
        additional_type_attributes: {
            "weft:policy/scheduling@0.3.0/nodes": [#[derive(Default)]],
            "weft:policy/scheduling@0.3.0/queues": [#[derive(Default)]],
            "weft:policy/scheduling@0.3.0/apps": [#[derive(Default)]],
            "weft:policy/scheduling@0.3.0/asks": [#[derive(Default)]],
            "weft:policy/scheduling@0.3.0/containers": [#[derive(Default)]],
            "weft:policy/scheduling@0.3.0/snapshot": [#[derive(Default)]],
            "weft:policy/scheduling@0.3.0/placements": [#[derive(Default)]],
            "weft:policy/scheduling@0.3.0/partitions": [#[derive(Default)]],
            "weft:policy/scheduling@0.3.0/node-attributes": [#[derive(Default)]],
            "weft:policy/scheduling@0.3.0/partition-shares": [#[derive(Default)]],
            "weft:policy/scheduling@0.3.0/app-tags": [#[derive(Default)]],
            "weft:policy/scheduling@0.3.0/ask-nodes": [#[derive(Default)]],
            "weft:policy/scheduling@0.3.0/ask-racks": [#[derive(Default)]],
            "weft:policy/scheduling@0.3.0/ask-tags": [#[derive(Default)]],
            "weft:policy/scheduling@0.3.0/tag-counts": [#[derive(Default)]],
            "weft:policy/scheduling@0.3.0/container-tags": [#[derive(Default)]],
            "weft:policy/scheduling@0.3.0/locality-delays": [#[derive(Default)]],
            "weft:policy/scheduling@0.3.0/round": [#[derive(Default)]],
        },
        with: {
            "weft:policy/types@0.3.0": crate::bindings::pricing::weft::policy::types,
            "weft:policy/host@0.3.0": crate::bindings::pricing::weft::policy::host,
        },
    });
}

/// The `sharing-policy` world.
pub mod sharing {
    wit_bindgen::generate!({
        world: "sharing-policy",
        path: "../../wit",
        pub_export_macro: true,
        export_macro_name: "export_sharing_world",
        default_bindings_module: "weft_policy::bindings::sharing",
        additional_derives: [PartialEq],
        additional_type_attributes: {
            "weft:policy/sharing@0.3.0/timeline": [#[derive(Default, Eq)]],
            "weft:policy/sharing@0.3.0/plan-settings": [#[derive(Default)]],
            "weft:policy/sharing@0.3.0/admission": [#[derive(Default)]],
            "weft:policy/sharing@0.3.0/plan-context": [#[derive(Default)]],
        },
        with: {
            "weft:policy/types@0.3.0": crate::bindings::pricing::weft::policy::types,
            "weft:policy/host@0.3.0": crate::bindings::pricing::weft::policy::host,
        },
    });
}

// Defaults for the WIT's enums, so the records holding them can derive
// `Default` for tests: the value a host sends when nothing says otherwise.
impl Default for pricing::weft::policy::types::ExecutionType {
    fn default() -> Self {
        Self::Guaranteed
    }
}

impl Default for scheduling::exports::weft::policy::scheduling::LocalityLevel {
    fn default() -> Self {
        Self::OffSwitch
    }
}

impl Default for scheduling::exports::weft::policy::scheduling::RoundKind {
    fn default() -> Self {
        Self::Whole
    }
}

impl Default for scheduling::exports::weft::policy::scheduling::ConstraintScope {
    fn default() -> Self {
        Self::Node
    }
}
