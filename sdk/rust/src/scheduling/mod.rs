//! Scheduling policies (`scheduling-policy` world): [`SchedulingPolicy`],
//! the checked views of a round's [`Snapshot`], the [`Placements`] it
//! answers with, the helpers the bundled schedulers share ([`FreeNodes`],
//! [`NoRoom`], [`longest_run`]), a [`SnapshotBuilder`] for native tests, and
//! [`export_scheduling!`](crate::export_scheduling).

mod builder;
mod context;
mod free_nodes;
mod placements;
mod rules;
mod runs;
mod snapshot;

pub use builder::SnapshotBuilder;
pub use context::Groups;
pub use free_nodes::{FreeNodes, NoRoom};
pub use rules::{keep_rules, partial_gangs, schedule_keeping_rules};
pub use runs::longest_run;
pub use snapshot::{Apps, Asks, Containers, Nodes, Queues, ResourceSeconds, Snapshot};

use crate::Policy;

/// The WIT records of `weft:policy/scheduling`, as the host sends them.
/// Tests build these and check them into views with `Snapshot::new`.
pub mod wit {
    pub use crate::bindings::pricing::weft::policy::types::{Attribute, ExecutionType};
    pub use crate::bindings::scheduling::exports::weft::policy::scheduling::{
        AppTags, Apps, AskNodes, AskRacks, AskTags, Asks, ConstraintScope, ContainerTags,
        Containers, LocalityDelays, LocalityLevel, NodeAttributes, Nodes, PartitionShares,
        Partitions, PlacementConstraint, Placements, Queues, Round, RoundKind, Snapshot, TagCounts,
    };
}

/// What `schedule` answers: `count` containers of ask `ask` on node `node`,
/// as columns. Build it with `push`.
pub type Placements = wit::Placements;

/// A scheduling policy.
pub trait SchedulingPolicy: Policy {
    /// One scheduling round: which pending containers go where. The host
    /// applies the placements in order, or refuses them all if any names a
    /// node or ask that does not exist, places more than an ask's pending
    /// count, or over-allocates a node; it then refuses a placement outside
    /// the ask's partition or against its constraint, and keeps none of a
    /// gang placed below its minimum. Equal snapshots must give equal
    /// placements.
    fn schedule(&mut self, snapshot: &Snapshot) -> Placements;

    /// Which of the `running` containers to take back for starved queues:
    /// indices into `running`, each at most once. By default none: a policy
    /// that never preempts.
    fn preempt(&mut self, snapshot: &Snapshot, running: &Containers) -> Vec<u32> {
        let _ = (snapshot, running);
        Vec::new()
    }
}

/// Exports a type implementing [`SchedulingPolicy`] as the component's
/// `scheduling-policy` world: `weft_policy::export_scheduling!(MyScheduler);`
/// at the top level of the crate (a `cdylib`). It does nothing outside
/// WebAssembly, so the same crate builds and tests natively.
#[macro_export]
macro_rules! export_scheduling {
    ($policy:ty) => {
        #[cfg(target_arch = "wasm32")]
        #[allow(unsafe_code, reason = "the exports wit-bindgen generates")]
        const _: () = {
            static POLICY: $crate::glue::Slot<$policy> = $crate::glue::Slot::new();

            struct Component;

            impl $crate::bindings::scheduling::Guest for Component {
                fn describe() -> $crate::types::PolicyInfo {
                    $crate::glue::describe::<$policy>($crate::types::PolicyKind::Scheduling)
                }

                fn configure(
                    params: $crate::types::Params,
                ) -> ::core::result::Result<(), ::std::string::String> {
                    $crate::glue::configure(
                        &POLICY,
                        $crate::types::PolicyKind::Scheduling,
                        params,
                    )
                }
            }

            impl $crate::bindings::scheduling::exports::weft::policy::scheduling::Guest
                for Component
            {
                fn schedule(
                    snapshot: $crate::scheduling::wit::Snapshot,
                ) -> $crate::scheduling::wit::Placements {
                    $crate::glue::schedule(&POLICY, snapshot)
                }

                fn preempt(
                    snapshot: $crate::scheduling::wit::Snapshot,
                    running: $crate::scheduling::wit::Containers,
                ) -> ::std::vec::Vec<u32> {
                    $crate::glue::preempt(&POLICY, snapshot, running)
                }
            }

            $crate::bindings::scheduling::export_scheduling_world!(
                Component with_types_in $crate::bindings::scheduling
            );
        };
    };
}
