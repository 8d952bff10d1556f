//! `capacity`: YARN Capacity Scheduler semantics as a Weft scheduling policy.
//!
//! Queues form a tree; each owns a guaranteed share of the cluster
//! (`absolute_capacity`) and may grow elastically up to a limit
//! (`absolute_maximum`) while others leave room idle. Sizes are compared by
//! their *dominant share*: the largest, over memory, vcores and GPUs, of the
//! amount divided by the cluster's total of that resource.
//!
//! Each round ([`schedule`]) repeatedly descends from the root to the most
//! under-served queue at every level (used share ÷ guaranteed share, lowest
//! first, ties to the lower index) until a leaf that can take a container,
//! picks an application there (FIFO by priority then submission, or fair by
//! least used share), skips users at their user limit, and places a container
//! of the application's first placeable ask on the first node with room. It
//! never lets a queue pass its absolute maximum. [`preempt`] reclaims
//! guarantees: it picks the youngest containers of queues above their
//! guarantee for leaf queues below theirs that have pending demand.
//!
//! The rules are in `README.md`. Everything here is plain Rust over the
//! SDK's checked snapshot, so the host can benchmark it natively; the
//! WebAssembly glue is the `export_scheduling!` line. Rounds never go
//! container by container when they need not:
//! each step places the largest batch of one ask on one node that the
//! one-container-at-a-time rules would have placed there in a row, found by
//! binary search, so a step costs about `depth × log(children) + log(nodes)`.

mod cluster;
mod preempt;
mod ranking;
mod schedule;
#[cfg(test)]
mod testing;

pub use preempt::preempt;
pub use schedule::schedule;

use weft_policy::scheduling::{Containers, Placements, Snapshot};
use weft_policy::{Params, Policy, SchedulingPolicy};

/// The policy. The Capacity Scheduler takes everything it needs from the
/// queue tree in the snapshot, so it has no settings; `configure` asks for
/// no key, so the SDK refuses any given (a typo is reported, not ignored):
/// queues, capacities and user limits come from the queue configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Capacity;

impl Policy for Capacity {
    const NAME: &'static str = env!("CARGO_PKG_NAME");
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn configure(_params: &Params) -> Result<Self, String> {
        Ok(Capacity)
    }
}

impl SchedulingPolicy for Capacity {
    fn schedule(&mut self, snapshot: &Snapshot) -> Placements {
        schedule(snapshot)
    }

    fn preempt(&mut self, snapshot: &Snapshot, running: &Containers) -> Vec<u32> {
        preempt(snapshot, running)
    }
}

weft_policy::export_scheduling!(Capacity);

#[cfg(test)]
mod tests {
    use super::*;
    use weft_policy::PolicyKind;
    use weft_policy::params::configure_with;

    #[test]
    fn parameters_are_refused_by_name() {
        assert_eq!(
            configure_with::<Capacity>(PolicyKind::Scheduling, &[]),
            Ok(Capacity)
        );
        let refused =
            configure_with::<Capacity>(PolicyKind::Scheduling, &[("node-order", "last-fit")]);
        let message = refused.unwrap_err();
        for word in ["capacity", "node-order", "last-fit"] {
            assert!(message.contains(word), "{message:?} lacks {word:?}");
        }
    }
}
