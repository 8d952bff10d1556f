//! Reservations, as YARN's reservation system has them: definitions, the
//! plan of each reservable queue as run-length-encoded timelines, the greedy
//! placement agent, and admission by the WASM sharing policy.
//!
//! Data flow: a [`ReservationDefinition`] (YARN's REST JSON) is validated
//! into a [`Contract`]; the [`agent`] places it in the queue's [`Plan`] as an
//! [`RleTimeline`] within what the plan has free and the policy's `available`
//! offers, then asks the policy's `validate`; the [`ReservationSystem`]
//! commits it and answers YARN's reservation API.

pub mod agent;
pub mod definition;
pub mod follower;
pub mod plan;
pub mod rle;
pub mod service;
pub mod system;
#[cfg(test)]
mod testing;

pub use agent::{AgentError, Placement, PlacementRequest, Shortfall};
pub use definition::{
    Contract, DefinitionError, Interpreter, ReservationDefinition, ReservationId,
    ReservationListInfo,
};
pub use follower::ActiveReservation;
pub use plan::{Plan, PlanConfig, PlanError, Reservation};
pub use rle::{Amount, RleTimeline};
pub use system::{Caller, ListQuery, ReservationSystem, SystemConfig, SystemError};

use crate::policy::{Admission, CallError, PlanSettings, Rejection, SharingSlot, Timeline};

/// The sharing policy as the reservation system calls it: the active WASM
/// version through its slot in the host, a native double in unit tests.
pub trait Sharing {
    /// How far before and after a reservation the policy looks, in ms.
    fn window(&self, settings: &PlanSettings) -> Result<i64, CallError>;
    /// Accept the candidate in `admission`, or refuse it with the reason.
    fn validate(&self, admission: &Admission) -> Result<Result<(), Rejection>, CallError>;
    /// What the user could still be given at each instant of the admission's range.
    fn available(&self, admission: &Admission) -> Result<Timeline, CallError>;
}

impl Sharing for SharingSlot {
    fn window(&self, settings: &PlanSettings) -> Result<i64, CallError> {
        SharingSlot::window(self, settings)
    }

    fn validate(&self, admission: &Admission) -> Result<Result<(), Rejection>, CallError> {
        SharingSlot::validate(self, admission)
    }

    fn available(&self, admission: &Admission) -> Result<Timeline, CallError> {
        SharingSlot::available(self, admission)
    }
}
