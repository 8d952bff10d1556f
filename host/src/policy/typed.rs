//! Each kind's slot typed by its world: the only calls the host makes on a
//! policy, each answer checked against the world's contract before it is
//! returned, so no caller can forget a check.

use std::ops::Deref;

use super::bindings::{
    Admission, Containers, Market, Placements, PlanSettings, PriceMultiplicators, QuoteRequest,
    Rejection, Snapshot, Timeline, Usage,
};
use super::shadow::{Job, ShadowSlot};
use super::{CallError, PolicyKind, PolicySlot, validate};

/// Turns a failed check into a failed call: an invalid answer is treated
/// exactly as a trap (fallback, failure counting, rollback).
fn checked<T>(check: Result<(), validate::InvalidOutput>, value: T) -> Result<T, CallError> {
    check.map(|()| value).map_err(CallError::from)
}

/// The pricing slot: multiplicators and charges.
#[derive(Debug)]
pub struct PricingSlot(PolicySlot, ShadowSlot);

impl PricingSlot {
    /// An empty pricing slot with no shadow, whose versions roll back after
    /// `max_failures` failed calls in a row.
    pub fn new(max_failures: u32) -> PricingSlot {
        PricingSlot(
            PolicySlot::new(PolicyKind::Pricing, max_failures),
            ShadowSlot::default(),
        )
    }

    /// Finite multiplicators, each at least 0. A shadow gets the same step.
    pub fn multiplicators(&self, market: &Market) -> Result<PriceMultiplicators, CallError> {
        let multiplicators = self.0.call(|version| {
            let multiplicators = version.multiplicators(market)?;
            checked(validate::multiplicators(&multiplicators), multiplicators)
        })?;
        self.1.offer(|| Job::Multiplicators {
            market: Box::new(market.clone()),
            active: multiplicators,
        });
        Ok(multiplicators)
    }

    /// A finite quote of at least 0 for `request`, which a tenant chose: a
    /// failure is not counted toward a rollback (see
    /// [`PolicySlot::call_for_tenant`]).
    pub fn quote(
        &self,
        request: &QuoteRequest,
        multiplicators: PriceMultiplicators,
    ) -> Result<f64, CallError> {
        self.0.call_for_tenant(|version| {
            let credits = version.quote(request, multiplicators)?;
            checked(validate::quote(credits), credits)
        })
    }

    /// Hands a charge the active version made to the shadow, if one runs:
    /// `rows[i]` is usage row i's project and how many containers it
    /// stands for, `active[i]` its charge per container.
    pub fn shadow_charge(
        &self,
        usage: Usage,
        multiplicators: PriceMultiplicators,
        active: Vec<f64>,
        rows: Vec<(std::sync::Arc<str>, u32)>,
    ) {
        self.1.offer(|| Job::Charge {
            usage,
            multiplicators,
            active,
            rows,
        });
    }

    /// One finite charge of at least 0 per row of `usage`.
    pub fn charge(
        &self,
        usage: &Usage,
        multiplicators: PriceMultiplicators,
    ) -> Result<Vec<f64>, CallError> {
        self.0.call(|version| {
            let charges = version.charge(usage, multiplicators)?;
            checked(validate::charges(&charges, usage.seconds.len()), charges)
        })
    }
}

/// The scheduling slot: placements and preemption victims.
#[derive(Debug)]
pub struct SchedulingSlot(PolicySlot, ShadowSlot);

impl SchedulingSlot {
    /// An empty scheduling slot with no shadow, whose versions roll back after
    /// `max_failures` failed calls in a row.
    pub fn new(max_failures: u32) -> SchedulingSlot {
        SchedulingSlot(
            PolicySlot::new(PolicyKind::Scheduling, max_failures),
            ShadowSlot::default(),
        )
    }

    /// Placements that fit `snapshot`: existing nodes and asks, no more than
    /// each ask's pending count, no node over-allocated. A shadow gets the
    /// same round.
    pub fn schedule(&self, snapshot: &Snapshot) -> Result<Placements, CallError> {
        let placements = self.0.call(|version| {
            let placements = version.schedule(snapshot)?;
            checked(validate::placements(snapshot, &placements), placements)
        })?;
        self.1.offer(|| Job::Schedule {
            snapshot: Box::new(snapshot.clone()),
            active: placements.clone(),
        });
        Ok(placements)
    }

    /// Distinct indices into `running`.
    pub fn preempt(
        &self,
        snapshot: &Snapshot,
        running: &Containers,
    ) -> Result<Vec<u32>, CallError> {
        self.0.call(|version| {
            let victims = version.preempt(snapshot, running)?;
            checked(validate::victims(&victims, running.app.len()), victims)
        })
    }
}

/// A sharing slot: the runtime's own, or a queue's `reservation-policy`.
#[derive(Debug)]
pub struct SharingSlot(PolicySlot, ShadowSlot);

impl SharingSlot {
    /// An empty sharing slot with no shadow, whose versions roll back after
    /// `max_failures` failed calls in a row.
    pub fn new(max_failures: u32) -> SharingSlot {
        SharingSlot(
            PolicySlot::new(PolicyKind::Sharing, max_failures),
            ShadowSlot::default(),
        )
    }

    /// A window of at least 0 ms.
    pub fn window(&self, settings: &PlanSettings) -> Result<i64, CallError> {
        self.0.call(|version| {
            let window = version.window(settings)?;
            checked(validate::window(window), window)
        })
    }

    /// Accepted or refused: both are answers. A shadow gets the same
    /// admission.
    pub fn validate(&self, admission: &Admission) -> Result<Result<(), Rejection>, CallError> {
        let answer = self.0.call(|version| version.validate(admission))?;
        self.1.offer(|| Job::Validate {
            admission: Box::new(admission.clone()),
            active: answer.clone(),
        });
        Ok(answer)
    }

    /// A well-formed timeline: columns of one length, times increasing.
    pub fn available(&self, admission: &Admission) -> Result<Timeline, CallError> {
        self.0.call(|version| {
            let available = version.available(admission)?;
            checked(validate::timeline(&available), available)
        })
    }
}

// What every slot shares (publish, rollback, status, history) stays on
// `PolicySlot`, reached through these; each has a shadow.
macro_rules! kind_slot_derefs {
    ($($slot:ty),*) => {$(
        impl Deref for $slot {
            type Target = PolicySlot;
            fn deref(&self) -> &PolicySlot {
                &self.0
            }
        }

        impl $slot {
            /// The candidate running beside the active version, if any.
            pub fn shadow(&self) -> &ShadowSlot {
                &self.1
            }
        }
    )*};
}
kind_slot_derefs!(PricingSlot, SchedulingSlot, SharingSlot);
