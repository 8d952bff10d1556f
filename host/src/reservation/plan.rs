//! The plan of one reservable queue: its settings, the reservations accepted
//! into it, and what they commit over time — in total and per user — kept as
//! run-length-encoded timelines so that an admission's timelines are cheap cuts.
//!
//! One-off reservations are summed into the plan's totals as they come and go.
//! Recurring ones repeat every period from their first occurrence, forever, so
//! they are kept apart and unrolled only into the range a query asks for.
//!
//! A plan persists as its settings and, per reservation, its definition and
//! allocation intervals; the timelines are rebuilt on load.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use super::definition::{DefinitionError, ReservationDefinition, ReservationId};
use super::rle::{Amount, FOREVER, RleError, RleTimeline};
use crate::policy::{Admission, PlanContext, PlanSettings, Timeline};
use crate::resources::Resources;

/// YARN's default `reservation-window` for a reservable queue
/// (ReservationSchedulerConfiguration): a one-day averaging window.
pub const DEFAULT_RESERVATION_WINDOW_MS: i64 = 86_400_000;
/// YARN's default plan-follower time step (ReservationSchedulerConfiguration):
/// one second.
pub const DEFAULT_PLAN_STEP_MS: i64 = 1_000;

/// A reservable queue's settings, as the queue tree gives them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanConfig {
    /// The queue's path, e.g. `root.dedicated`.
    pub queue: String,
    /// The queue's guaranteed capacity: the most the plan may hold at any instant.
    pub capacity: Resources,
    /// `reservation-window`: the sharing policy's averaging window.
    pub reservation_window_ms: i64,
    /// `instantaneous-max-capacity`, % of `capacity` one user may hold at any instant.
    pub instantaneous_max_capacity: f64,
    /// `average-capacity`, % of `capacity` one user may hold on average over the window.
    pub average_capacity: f64,
    /// `reservation-move-on-expiry`: whether apps of an expired reservation
    /// move to the queue's default (for the plan follower; the plan keeps it).
    pub move_on_expiry: bool,
    /// The plan's time step: placements start and end on multiples of it.
    pub step_ms: i64,
}

impl PlanConfig {
    /// A plan for `queue` with YARN's defaults: a one-day window, the
    /// instantaneous and average limits at 100 % (YARN's multiplier 1), apps
    /// moved on expiry, one-second steps.
    pub fn new(queue: impl Into<String>, capacity: Resources) -> PlanConfig {
        PlanConfig {
            queue: queue.into(),
            capacity,
            reservation_window_ms: DEFAULT_RESERVATION_WINDOW_MS,
            instantaneous_max_capacity: 100.0,
            average_capacity: 100.0,
            move_on_expiry: true,
            step_ms: DEFAULT_PLAN_STEP_MS,
        }
    }

    /// The WIT record the sharing policy sees.
    pub fn to_wit(&self) -> PlanSettings {
        PlanSettings {
            queue: self.queue.clone(),
            capacity: crate::policy::SharingResources {
                memory_mb: self.capacity.memory_mb,
                vcores: u64::from(self.capacity.vcores),
                gpus: u64::from(self.capacity.gpus),
            },
            reservation_window_ms: self.reservation_window_ms,
            instantaneous_max_capacity: self.instantaneous_max_capacity,
            average_capacity: self.average_capacity,
        }
    }

    fn check(&self) -> Result<(), PlanError> {
        let bad = |reason: String| {
            Err(PlanError::BadConfig {
                queue: self.queue.clone(),
                reason,
            })
        };
        if self.queue.is_empty() {
            return bad("the queue path is empty".into());
        }
        if self.step_ms <= 0 {
            return bad(format!(
                "the plan step must be > 0 ms, got {}",
                self.step_ms
            ));
        }
        if self.reservation_window_ms < 0 {
            return bad(format!(
                "reservation-window must be ≥ 0 ms, got {}",
                self.reservation_window_ms
            ));
        }
        for (name, value) in [
            (
                "instantaneous-max-capacity",
                self.instantaneous_max_capacity,
            ),
            ("average-capacity", self.average_capacity),
        ] {
            if !(0.0..=100.0).contains(&value) {
                return bad(format!(
                    "{name} must be a percentage in 0..=100, got {value}"
                ));
            }
        }
        Ok(())
    }
}

/// One interval of a reservation's allocation: `resources` held over
/// [`start_ms`, `end_ms`). For a recurring reservation, its first occurrence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Allocation {
    /// When the interval starts, in ms since the epoch.
    pub start_ms: i64,
    /// When it ends (exclusive), in ms since the epoch.
    pub end_ms: i64,
    /// What the reservation holds throughout it.
    pub resources: Resources,
}

/// What a sharing policy is told of the reservation a decision is about,
/// beyond its user and allocation.
#[derive(Debug, Clone, Copy, Default)]
pub struct Terms<'a> {
    /// When the decision is made, in ms.
    pub now_ms: i64,
    /// The reservation's name as submitted.
    pub name: &'a str,
    /// Whether it recurs.
    pub recurring: bool,
}

/// A reservation accepted into a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "StoredReservation", into = "StoredReservation")]
pub struct Reservation {
    /// The reservation's id, handed out by new-reservation.
    pub id: ReservationId,
    /// Who owns it: the user it was submitted by.
    pub user: String,
    /// The definition as accepted (normalized).
    pub definition: ReservationDefinition,
    /// When it was last accepted (submitted or updated), in ms since the
    /// epoch.
    pub acceptance_time_ms: i64,
    period_ms: Option<i64>,
    allocation: RleTimeline,
    allocations: Vec<Allocation>,
}

/// What a reservation persists as: the allocation as intervals, the period in its definition.
#[derive(Serialize, Deserialize)]
struct StoredReservation {
    id: ReservationId,
    user: String,
    definition: ReservationDefinition,
    acceptance_time_ms: i64,
    allocations: Vec<Allocation>,
}

impl From<Reservation> for StoredReservation {
    fn from(reservation: Reservation) -> StoredReservation {
        StoredReservation {
            id: reservation.id,
            user: reservation.user,
            definition: reservation.definition,
            acceptance_time_ms: reservation.acceptance_time_ms,
            allocations: reservation.allocations,
        }
    }
}

impl TryFrom<StoredReservation> for Reservation {
    type Error = PlanError;
    fn try_from(stored: StoredReservation) -> Result<Reservation, PlanError> {
        let period_ms = stored.definition.recurrence_period_ms().map_err(|source| {
            PlanError::StoredDefinition {
                id: stored.id,
                source,
            }
        })?;
        let allocation = RleTimeline::from_blocks(
            stored
                .allocations
                .iter()
                .map(|a| (a.start_ms, a.end_ms, Amount::from_resources(&a.resources))),
        );
        Reservation::new(
            stored.id,
            stored.user,
            stored.definition,
            period_ms,
            allocation,
            stored.acceptance_time_ms,
        )
    }
}

impl Reservation {
    /// A reservation holding `allocation` (for a recurring one, its first
    /// occurrence, repeated every `period_ms`). The allocation must be
    /// non-negative and end; a period must be positive and at least as long
    /// as the allocation, so that occurrences never overlap.
    pub fn new(
        id: ReservationId,
        user: String,
        definition: ReservationDefinition,
        period_ms: Option<i64>,
        allocation: RleTimeline,
        acceptance_time_ms: i64,
    ) -> Result<Reservation, PlanError> {
        let bad = |reason: String| Err(PlanError::BadAllocation { id, reason });
        if let Some((at_ms, amount)) = allocation.first_negative() {
            return bad(format!("is negative at {at_ms} ms ({amount})"));
        }
        let span = allocation.span();
        if let Some((since_ms, FOREVER)) = span {
            return bad(format!(
                "never ends (it holds resources from {since_ms} ms on)"
            ));
        }
        if let Some(period_ms) = period_ms {
            let length = span.map_or(0, |(start, end)| end - start);
            if period_ms <= 0 || length > period_ms {
                return bad(format!(
                    "spans {length} ms, longer than its period {period_ms} ms"
                ));
            }
        }
        let mut allocations = Vec::new();
        for (start_ms, end_ms, amount) in allocation.nonzero_segments() {
            let Some(resources) = amount.to_resources() else {
                return bad(format!(
                    "holds {amount} at {start_ms} ms, beyond what a cluster has"
                ));
            };
            allocations.push(Allocation {
                start_ms,
                end_ms,
                resources,
            });
        }
        Ok(Reservation {
            id,
            user,
            definition,
            acceptance_time_ms,
            period_ms,
            allocation,
            allocations,
        })
    }

    /// The allocation as a timeline (a recurring reservation's first occurrence).
    pub fn allocation(&self) -> &RleTimeline {
        &self.allocation
    }

    /// The allocation as intervals, for the list API.
    pub fn allocations(&self) -> &[Allocation] {
        &self.allocations
    }

    /// The recurrence period in ms; None for a one-off reservation.
    pub fn period_ms(&self) -> Option<i64> {
        self.period_ms
    }

    /// True when the reservation repeats every period.
    pub fn is_recurring(&self) -> bool {
        self.period_ms.is_some()
    }

    /// When the (first occurrence of the) allocation starts and ends.
    pub fn span(&self) -> Option<(i64, i64)> {
        self.allocation.span()
    }

    /// What the reservation holds inside [`from`, `to`), every occurrence counted.
    pub fn holds_in(&self, from: i64, to: i64) -> RleTimeline {
        match self.period_ms {
            Some(period_ms) => self.allocation.unroll(period_ms, from, to),
            None => self.allocation.restrict(from, to),
        }
    }

    /// True when some occurrence's [start, end] meets [`from`, `to`] (ends
    /// included, as YARN's list API compares them).
    pub fn overlaps(&self, from: i64, to: i64) -> bool {
        let Some((start, end)) = self.span() else {
            return false;
        };
        match self.period_ms {
            None => start <= to && end >= from,
            Some(period_ms) => {
                if to < start {
                    return false;
                }
                // The last occurrence starting by `to` ends latest.
                let last = (to - start) / period_ms;
                end.saturating_add(last.saturating_mul(period_ms)) >= from
            }
        }
    }

    /// What the reservation holds at `at_ms`, if an occurrence of it spans that instant.
    pub fn amount_at(&self, at_ms: i64) -> Option<Amount> {
        let (start, end) = self.span()?;
        let at_ms = match self.period_ms {
            Some(period_ms) if at_ms >= start => at_ms - (at_ms - start) / period_ms * period_ms,
            _ => at_ms,
        };
        (start <= at_ms && at_ms < end).then(|| self.allocation.value_at(at_ms))
    }
}

/// A reservation the plan follower should be running now, and how much it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holding {
    /// The reservation's id.
    pub id: ReservationId,
    /// Who owns it.
    pub user: String,
    /// What its allocation holds at the instant asked about.
    pub resources: Resources,
}

/// Why the plan refused a change or a query.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The plan's settings are out of range.
    #[error("plan of {queue}: {reason}")]
    BadConfig {
        /// The queue's path.
        queue: String,
        /// What is wrong, with the figure.
        reason: String,
    },
    /// A reservation with this id is already in the plan.
    #[error("reservation {id} is already in the plan of {queue}")]
    Duplicate {
        /// The reservation's id.
        id: ReservationId,
        /// The queue's path.
        queue: String,
    },
    /// The plan holds no reservation with this id.
    #[error("no reservation {id} in the plan of {queue}")]
    Unknown {
        /// The id asked for.
        id: ReservationId,
        /// The queue's path.
        queue: String,
    },
    /// The allocation is negative, never ends, is longer than the period or
    /// holds more than a cluster can.
    #[error("reservation {id}: its allocation {reason}")]
    BadAllocation {
        /// The reservation's id.
        id: ReservationId,
        /// What is wrong, with the figures.
        reason: String,
    },
    /// A timeline of an admission cannot be written as WIT columns (negative,
    /// or never ending).
    #[error("reservation {id}: the {what} timeline cannot go to the sharing policy: {source}")]
    Timeline {
        /// The reservation the decision is about.
        id: ReservationId,
        /// Which timeline: `candidate`, `user-committed` or `plan-committed`.
        what: &'static str,
        /// Why it cannot be converted.
        source: RleError,
    },
    /// A stored reservation's recurrence-expression no longer reads.
    #[error("stored reservation {id}: {source}")]
    StoredDefinition {
        /// The stored reservation's id.
        id: ReservationId,
        /// Why its definition was refused.
        source: DefinitionError,
    },
}

/// The plan of one reservable queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "StoredPlan", into = "StoredPlan")]
pub struct Plan {
    config: PlanConfig,
    reservations: BTreeMap<ReservationId, Reservation>,
    /// Every one-off reservation, summed.
    one_off_total: RleTimeline,
    /// Each user's one-off reservations, summed; a user holding none has no entry.
    one_off_by_user: HashMap<String, RleTimeline>,
    recurring: BTreeSet<ReservationId>,
}

#[derive(Serialize, Deserialize)]
struct StoredPlan {
    config: PlanConfig,
    reservations: Vec<Reservation>,
}

impl From<Plan> for StoredPlan {
    fn from(plan: Plan) -> StoredPlan {
        StoredPlan {
            config: plan.config,
            reservations: plan.reservations.into_values().collect(),
        }
    }
}

impl TryFrom<StoredPlan> for Plan {
    type Error = PlanError;
    fn try_from(stored: StoredPlan) -> Result<Plan, PlanError> {
        let mut plan = Plan::new(stored.config)?;
        for reservation in stored.reservations {
            plan.add(reservation)?;
        }
        Ok(plan)
    }
}

impl Plan {
    /// An empty plan with these settings; settings out of range are refused.
    pub fn new(config: PlanConfig) -> Result<Plan, PlanError> {
        config.check()?;
        Ok(Plan {
            config,
            reservations: BTreeMap::new(),
            one_off_total: RleTimeline::new(),
            one_off_by_user: HashMap::new(),
            recurring: BTreeSet::new(),
        })
    }

    /// The plan's settings.
    pub fn config(&self) -> &PlanConfig {
        &self.config
    }

    /// The queue's guaranteed capacity changed (nodes came or went): later
    /// decisions are taken against `capacity`; admitted reservations stand.
    pub fn set_capacity(&mut self, capacity: Resources) {
        self.config.capacity = capacity;
    }

    /// The queue's path, e.g. `root.dedicated`.
    pub fn queue(&self) -> &str {
        &self.config.queue
    }

    /// The reservation with this id, if the plan holds it.
    pub fn get(&self, id: &ReservationId) -> Option<&Reservation> {
        self.reservations.get(id)
    }

    /// The reservations, in id order.
    pub fn reservations(&self) -> impl Iterator<Item = &Reservation> {
        self.reservations.values()
    }

    /// How many reservations the plan holds, one-off and recurring.
    pub fn len(&self) -> usize {
        self.reservations.len()
    }

    /// True when the plan holds no reservation.
    pub fn is_empty(&self) -> bool {
        self.reservations.is_empty()
    }

    /// Adds a reservation; an id already in the plan is refused.
    pub fn add(&mut self, reservation: Reservation) -> Result<(), PlanError> {
        if self.reservations.contains_key(&reservation.id) {
            return Err(PlanError::Duplicate {
                id: reservation.id,
                queue: self.config.queue.clone(),
            });
        }
        if reservation.is_recurring() {
            self.recurring.insert(reservation.id);
        } else {
            self.one_off_total.add_timeline(&reservation.allocation);
            self.one_off_by_user
                .entry(reservation.user.clone())
                .or_default()
                .add_timeline(&reservation.allocation);
        }
        self.reservations.insert(reservation.id, reservation);
        Ok(())
    }

    /// Removes a reservation and returns it.
    pub fn remove(&mut self, id: &ReservationId) -> Result<Reservation, PlanError> {
        let reservation = self
            .reservations
            .remove(id)
            .ok_or_else(|| PlanError::Unknown {
                id: *id,
                queue: self.config.queue.clone(),
            })?;
        if reservation.is_recurring() {
            self.recurring.remove(id);
        } else {
            self.one_off_total
                .subtract_timeline(&reservation.allocation);
            if let Some(user) = self.one_off_by_user.get_mut(&reservation.user) {
                user.subtract_timeline(&reservation.allocation);
                // No empty entries: a plan emptied again equals a new one.
                if user.is_empty() {
                    self.one_off_by_user.remove(&reservation.user);
                }
            }
        }
        Ok(reservation)
    }

    /// Puts `reservation` in place of the one with its id, and returns the old one.
    pub fn replace(&mut self, reservation: Reservation) -> Result<Reservation, PlanError> {
        let old = self.remove(&reservation.id)?;
        self.add(reservation)?;
        Ok(old)
    }

    /// What the plan holds inside [`from`, `to`) — for one user, or for all —
    /// with the reservation `excluding` (one being updated) left out.
    /// One-off totals are cut in `O(log n + k)`; recurring reservations are
    /// unrolled into the range.
    pub fn committed(
        &self,
        from: i64,
        to: i64,
        user: Option<&str>,
        excluding: Option<&ReservationId>,
    ) -> RleTimeline {
        let one_off = match user {
            None => Some(&self.one_off_total),
            Some(user) => self.one_off_by_user.get(user),
        };
        let mut held = one_off.map_or_else(RleTimeline::new, |total| total.restrict(from, to));
        if let Some(excluded) = excluding.and_then(|id| self.reservations.get(id))
            && !excluded.is_recurring()
            && user.is_none_or(|user| user == excluded.user)
        {
            held.subtract_timeline(&excluded.allocation.restrict(from, to));
        }
        for id in &self.recurring {
            let reservation = &self.reservations[id];
            if Some(id) == excluding || user.is_some_and(|user| user != reservation.user) {
                continue;
            }
            held.add_timeline(&reservation.holds_in(from, to));
        }
        held
    }

    /// Capacity minus everything committed, inside [`from`, `to`) (zero
    /// outside): what the agent may still place, before the sharing policy's say.
    pub fn free(&self, from: i64, to: i64, excluding: Option<&ReservationId>) -> RleTimeline {
        let capacity = RleTimeline::block(from, to, Amount::from_resources(&self.config.capacity));
        &capacity - &self.committed(from, to, None, excluding)
    }

    /// The WIT admission for a decision about reservation `id` of `user` over
    /// [`from`, `to`): the candidate and the user's and plan's commitments cut
    /// to that range, without the reservation `excluding` (its earlier version
    /// when updating). With a candidate, the plan's commitments are cut to
    /// the candidate's span within the range, all over-commit can depend on:
    /// on a dense plan that is most of a decision's cost (see wit/sharing.wit).
    #[allow(
        clippy::too_many_arguments,
        reason = "each is one part of the decision the WIT names"
    )]
    pub fn admission(
        &self,
        user: &str,
        id: &ReservationId,
        candidate: &RleTimeline,
        from: i64,
        to: i64,
        excluding: Option<&ReservationId>,
        terms: Terms<'_>,
    ) -> Result<Admission, PlanError> {
        let wit = |what: &'static str, columns: Result<Timeline, RleError>| {
            columns.map_err(|source| PlanError::Timeline {
                id: *id,
                what,
                source,
            })
        };
        Ok(Admission {
            settings: self.config.to_wit(),
            user: user.to_string(),
            reservation_id: id.to_string(),
            from_ms: from,
            to_ms: to,
            candidate: wit("candidate", candidate.to_timeline_within(from, to))?,
            user_committed: wit(
                "user-committed",
                self.committed_columns(from, to, Some(user), excluding),
            )?,
            plan_committed: {
                let (plan_from, plan_to) = match candidate.span() {
                    Some((start, end)) => (start.max(from), end.min(to)),
                    None => (from, to),
                };
                wit(
                    "plan-committed",
                    self.committed_columns(plan_from, plan_to.max(plan_from), None, excluding),
                )?
            },
            context: self.context(user, excluding, terms),
        })
    }

    /// The plan around a decision about a reservation of `user` (the
    /// reservation `excluding` not counted).
    fn context(
        &self,
        user: &str,
        excluding: Option<&ReservationId>,
        terms: Terms<'_>,
    ) -> PlanContext {
        let counted = self
            .reservations
            .values()
            .filter(|r| Some(&r.id) != excluding);
        let (mut reservations, mut own) = (0u32, 0u32);
        let mut users = std::collections::BTreeSet::new();
        for reservation in counted {
            reservations = reservations.saturating_add(1);
            if reservation.user == user {
                own = own.saturating_add(1);
            }
            users.insert(reservation.user.as_str());
        }
        PlanContext {
            now_ms: terms.now_ms,
            reservation_name: terms.name.to_string(),
            recurring: terms.recurring,
            reservations,
            user_reservations: own,
            users: u32::try_from(users.len()).unwrap_or(u32::MAX),
        }
    }

    /// [`Plan::committed`] as WIT columns. When only one-off reservations
    /// count, the columns are written straight from the plan's totals: a
    /// decision on a large plan then costs one walk over the steps in range.
    fn committed_columns(
        &self,
        from: i64,
        to: i64,
        user: Option<&str>,
        excluding: Option<&ReservationId>,
    ) -> Result<Timeline, RleError> {
        let excludes_one_off = excluding
            .and_then(|id| self.reservations.get(id))
            .is_some_and(|r| !r.is_recurring() && user.is_none_or(|user| user == r.user));
        let recurring_counts = self.recurring.iter().any(|id| {
            Some(id) != excluding && user.is_none_or(|user| user == self.reservations[id].user)
        });
        if excludes_one_off || recurring_counts {
            return self.committed(from, to, user, excluding).to_timeline();
        }
        let empty = RleTimeline::new();
        let one_off = match user {
            None => &self.one_off_total,
            Some(user) => self.one_off_by_user.get(user).unwrap_or(&empty),
        };
        one_off.to_timeline_within(from, to)
    }

    /// The periods of the recurring reservations.
    pub fn recurring_periods(&self) -> impl Iterator<Item = i64> + '_ {
        self.recurring
            .iter()
            .filter_map(|id| self.reservations[id].period_ms)
    }

    /// Where checking a reservation recurring every `period_ms` from
    /// `anchor_ms` on can stop: once every one-off reservation has ended and
    /// every recurring one has begun, the plan repeats with the least common
    /// multiple of the periods, so one such cycle after that covers all later
    /// ones. Returned as `anchor_ms` + a whole number of periods.
    pub fn recurring_check_end(
        &self,
        anchor_ms: i64,
        period_ms: i64,
        excluding: Option<&ReservationId>,
    ) -> i64 {
        // The one-off total's end bounds every one-off's (the excluded one
        // included, which only makes the check longer, never wrong).
        let mut settled = anchor_ms;
        if let Some((_, end)) = self.one_off_total.span() {
            settled = settled.max(end);
        }
        let mut cycle = period_ms;
        for id in &self.recurring {
            let reservation = &self.reservations[id];
            if Some(id) == excluding {
                continue;
            }
            if let (Some(other), Some((start, _))) = (reservation.period_ms, reservation.span()) {
                settled = settled.max(start);
                cycle = lcm(cycle, other);
            }
        }
        let end = settled.saturating_add(cycle);
        let periods = (end.saturating_sub(anchor_ms) + period_ms - 1) / period_ms;
        anchor_ms.saturating_add(periods.saturating_mul(period_ms))
    }

    /// The reservations an occurrence of which spans `at_ms`, with what each
    /// holds then: what the plan follower should be running.
    pub fn active_at(&self, at_ms: i64) -> Vec<Holding> {
        self.reservations
            .values()
            .filter_map(|reservation| {
                let amount = reservation.amount_at(at_ms)?;
                Some(Holding {
                    id: reservation.id,
                    user: reservation.user.clone(),
                    resources: amount.to_resources()?,
                })
            })
            .collect()
    }

    /// Forgets the one-off reservations that ended at or before `cutoff_ms`
    /// (now − the policy's window: no later decision looks at them) and
    /// returns their ids. Recurring reservations never end.
    pub fn forget_ended_before(&mut self, cutoff_ms: i64) -> Vec<ReservationId> {
        let ended: Vec<ReservationId> = self
            .reservations
            .values()
            .filter(|r| !r.is_recurring() && r.span().is_none_or(|(_, end)| end <= cutoff_ms))
            .map(|r| r.id)
            .collect();
        for id in &ended {
            // Listed from the plan just above, so present.
            let _ = self.remove(id);
        }
        ended
    }
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The least common multiple, saturating: periods that divide YARN's maximum
/// periodicity never come near it.
fn lcm(a: i64, b: i64) -> i64 {
    (a / gcd(a, b)).saturating_mul(b)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::reservation::definition::Interpreter;
    use crate::reservation::definition::tests::{definition, request};

    pub(crate) fn config() -> PlanConfig {
        PlanConfig::new("root.dedicated", Resources::new(10 * 1024, 10, 0))
    }

    pub(crate) fn id(sequence: u64) -> ReservationId {
        ReservationId {
            cluster_timestamp: 1_700_000_000_000,
            sequence,
        }
    }

    /// A reservation holding `memory_mb` (and one vcore per GB) over the blocks.
    pub(crate) fn reservation(
        sequence: u64,
        user: &str,
        blocks: &[(i64, i64, i64)],
        period_ms: Option<i64>,
    ) -> Reservation {
        let mut definition = definition(
            0,
            1_000_000,
            Interpreter::All,
            vec![request(1024, 1, 1, 1, 1_000)],
        );
        definition.recurrence_expression = period_ms.map(|p| p.to_string());
        let allocation = RleTimeline::from_blocks(
            blocks
                .iter()
                .map(|&(start, end, memory)| (start, end, Amount::new(memory, memory / 1024, 0))),
        );
        Reservation::new(
            id(sequence),
            user.into(),
            definition,
            period_ms,
            allocation,
            0,
        )
        .unwrap()
    }

    fn memory(timeline: &RleTimeline) -> Vec<(i64, i64)> {
        timeline.steps().map(|(t, a)| (t, a.memory_mb)).collect()
    }

    #[test]
    fn committed_is_cut_per_user_and_in_total() {
        let mut plan = Plan::new(config()).unwrap();
        plan.add(reservation(1, "alice", &[(0, 100, 2048)], None))
            .unwrap();
        plan.add(reservation(2, "bob", &[(50, 150, 1024)], None))
            .unwrap();
        assert_eq!(
            memory(&plan.committed(25, 125, None, None)),
            vec![(25, 2048), (50, 3072), (100, 1024), (125, 0)]
        );
        assert_eq!(
            memory(&plan.committed(25, 125, Some("alice"), None)),
            vec![(25, 2048), (100, 0)]
        );
        assert!(plan.committed(0, 100, Some("carol"), None).is_empty());
        let free = plan.free(0, 200, None);
        assert_eq!(free.value_at(60).memory_mb, 10 * 1024 - 3072);
        assert_eq!(free.value_at(200), Amount::ZERO);
    }

    #[test]
    fn admission_cuts_timelines_to_its_range_without_the_updated_reservation() {
        let mut plan = Plan::new(config()).unwrap();
        plan.add(reservation(1, "alice", &[(0, 100, 2048)], None))
            .unwrap();
        plan.add(reservation(2, "bob", &[(50, 150, 1024)], None))
            .unwrap();
        let candidate = RleTimeline::block(80, 120, Amount::new(4096, 4, 0));
        let admission = plan
            .admission(
                "alice",
                &id(1),
                &candidate,
                60,
                110,
                Some(&id(1)),
                Terms::default(),
            )
            .unwrap();
        assert_eq!(admission.settings.queue, "root.dedicated");
        assert_eq!(admission.settings.capacity.memory_mb, 10 * 1024);
        assert_eq!(admission.reservation_id, "reservation_1700000000000_0001");
        assert_eq!((admission.from_ms, admission.to_ms), (60, 110));
        assert_eq!(admission.candidate.at_ms, vec![80, 110]);
        assert_eq!(admission.candidate.memory_mb, vec![4096, 0]);
        // Alice's own reservation is the one being updated: left out.
        assert!(admission.user_committed.at_ms.is_empty());
        // The plan is cut to the candidate's span within the range: [80, 110).
        assert_eq!(admission.plan_committed.at_ms, vec![80, 110]);
        assert_eq!(admission.plan_committed.memory_mb, vec![1024, 0]);
        // Without the exclusion both are there.
        let admission = plan
            .admission("alice", &id(3), &candidate, 60, 110, None, Terms::default())
            .unwrap();
        assert_eq!(admission.user_committed.memory_mb, vec![2048, 0]);
        assert_eq!(admission.plan_committed.at_ms, vec![80, 100, 110]);
        assert_eq!(admission.plan_committed.memory_mb, vec![3072, 1024, 0]);
        // With no candidate (the agent asking `available`), the whole range.
        let empty = RleTimeline::default();
        let admission = plan
            .admission("alice", &id(3), &empty, 60, 110, None, Terms::default())
            .unwrap();
        assert_eq!(admission.plan_committed.at_ms, vec![60, 100, 110]);
    }

    #[test]
    fn recurring_reservations_are_unrolled_only_into_the_asked_range() {
        let mut plan = Plan::new(config()).unwrap();
        plan.add(reservation(1, "alice", &[(10, 20, 1024)], Some(100)))
            .unwrap();
        plan.add(reservation(2, "bob", &[(0, 1_000, 1024)], None))
            .unwrap();
        assert_eq!(
            memory(&plan.committed(0, 1_000_000_000, Some("bob"), None)),
            vec![(0, 1024), (1_000, 0)]
        );
        assert_eq!(
            memory(&plan.committed(250, 420, Some("alice"), None)),
            vec![(310, 1024), (320, 0), (410, 1024), (420, 0)]
        );
        // Far in the future only the occurrences there are built.
        let far = plan.committed(10_000_000_000, 10_000_000_100, None, None);
        assert_eq!(
            memory(&far),
            vec![(10_000_000_010, 1024), (10_000_000_020, 0)]
        );
        assert!(!plan.committed(250, 420, None, Some(&id(1))).is_empty());
        assert!(
            plan.committed(250, 420, Some("alice"), Some(&id(1)))
                .is_empty()
        );
    }

    #[test]
    fn recurring_check_end_covers_one_offs_and_a_common_cycle() {
        let mut plan = Plan::new(config()).unwrap();
        // Nothing else: one period.
        assert_eq!(plan.recurring_check_end(1_000, 300, None), 1_300);
        plan.add(reservation(1, "bob", &[(5_000, 5_100, 1024)], None))
            .unwrap();
        plan.add(reservation(2, "bob", &[(2_000, 2_050, 1024)], Some(200)))
            .unwrap();
        // Settled at 5,100 (the one-off's end); cycle lcm(300, 200) = 600;
        // rounded up to whole periods of 300 from 1,000.
        assert_eq!(plan.recurring_check_end(1_000, 300, None), 1_000 + 300 * 16);
        // Excluding the recurring one leaves only the one-off to outlast.
        assert_eq!(
            plan.recurring_check_end(1_000, 300, Some(&id(2))),
            1_000 + 300 * 15
        );
    }

    #[test]
    fn active_at_reports_one_off_and_recurring_occurrences() {
        let mut plan = Plan::new(config()).unwrap();
        plan.add(reservation(1, "alice", &[(0, 100, 2048)], None))
            .unwrap();
        plan.add(reservation(
            2,
            "bob",
            &[(10, 20, 1024), (30, 40, 3072)],
            Some(1_000),
        ))
        .unwrap();
        let active = |t| -> Vec<(u64, u64)> {
            plan.active_at(t)
                .iter()
                .map(|a| (a.id.sequence, a.resources.memory_mb))
                .collect()
        };
        assert_eq!(active(15), vec![(1, 2048), (2, 1024)]);
        // Between bob's two blocks his reservation spans the instant, holding nothing.
        assert_eq!(active(25), vec![(1, 2048), (2, 0)]);
        assert_eq!(active(2_035), vec![(2, 3072)]);
        assert_eq!(active(2_045), vec![]);
        assert_eq!(active(5), vec![(1, 2048)]);
    }

    #[test]
    fn forget_drops_only_one_offs_that_ended_before_the_cutoff() {
        let mut plan = Plan::new(config()).unwrap();
        plan.add(reservation(1, "alice", &[(0, 100, 2048)], None))
            .unwrap();
        plan.add(reservation(2, "alice", &[(50, 300, 1024)], None))
            .unwrap();
        plan.add(reservation(3, "bob", &[(0, 10, 1024)], Some(1_000)))
            .unwrap();
        assert_eq!(plan.forget_ended_before(99), vec![]);
        assert_eq!(plan.forget_ended_before(200), vec![id(1)]);
        assert_eq!(plan.len(), 2);
        assert_eq!(
            memory(&plan.committed(0, 400, Some("alice"), None)),
            vec![(50, 1024), (300, 0)]
        );
        assert_eq!(plan.forget_ended_before(1_000_000), vec![id(2)]);
        assert_eq!(
            plan.reservations().map(|r| r.id).collect::<Vec<_>>(),
            vec![id(3)]
        );
    }

    #[test]
    fn add_and_remove_leave_the_plan_as_it_was() {
        let mut plan = Plan::new(config()).unwrap();
        plan.add(reservation(1, "alice", &[(0, 100, 2048)], None))
            .unwrap();
        let before = plan.clone();
        plan.add(reservation(2, "bob", &[(50, 150, 1024)], None))
            .unwrap();
        plan.add(reservation(3, "carol", &[(0, 10, 1024)], Some(100)))
            .unwrap();
        assert_eq!(
            plan.add(reservation(2, "bob", &[(0, 1, 1024)], None))
                .unwrap_err(),
            PlanError::Duplicate {
                id: id(2),
                queue: "root.dedicated".into()
            }
        );
        plan.remove(&id(3)).unwrap();
        plan.remove(&id(2)).unwrap();
        assert_eq!(plan, before);
        assert!(matches!(
            plan.remove(&id(2)),
            Err(PlanError::Unknown { .. })
        ));
        let old = plan
            .replace(reservation(1, "alice", &[(10, 20, 1024)], None))
            .unwrap();
        assert_eq!(old.allocations()[0].end_ms, 100);
        assert_eq!(
            memory(&plan.committed(0, 100, None, None)),
            vec![(10, 1024), (20, 0)]
        );
    }

    #[test]
    fn serde_round_trip_keeps_definitions_and_rebuilds_timelines() {
        let mut plan = Plan::new(config()).unwrap();
        plan.add(reservation(
            1,
            "alice",
            &[(0, 100, 2048), (100, 200, 1024)],
            None,
        ))
        .unwrap();
        plan.add(reservation(2, "bob", &[(10, 20, 1024)], Some(100)))
            .unwrap();
        let json = serde_json::to_value(&plan).unwrap();
        // Stored as definitions and allocation intervals, no timelines.
        let stored = &json["reservations"][0];
        assert_eq!(stored["id"], "reservation_1700000000000_0001");
        assert_eq!(stored["allocations"][1]["start_ms"], 100);
        assert!(stored.get("allocation").is_none());
        assert_eq!(
            json["reservations"][1]["definition"]["recurrence-expression"],
            "100"
        );
        let loaded: Plan = serde_json::from_value(json).unwrap();
        assert_eq!(loaded, plan);
        assert_eq!(
            loaded.committed(0, 300, None, None),
            plan.committed(0, 300, None, None)
        );
    }

    #[test]
    fn reservations_refuse_allocations_they_cannot_hold() {
        let definition = definition(0, 10, Interpreter::All, vec![request(1, 1, 1, 1, 1)]);
        let negative = RleTimeline::block(0, 5, Amount::new(-1, 0, 0));
        let error =
            Reservation::new(id(1), "a".into(), definition.clone(), None, negative, 0).unwrap_err();
        assert!(error.to_string().contains("negative at 0 ms"), "{error}");
        let long = RleTimeline::block(0, 500, Amount::new(1, 1, 0));
        let error =
            Reservation::new(id(1), "a".into(), definition, Some(100), long, 0).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("spans 500 ms, longer than its period 100 ms"),
            "{error}"
        );
    }

    #[test]
    fn overlaps_compares_every_occurrence() {
        let one_off = reservation(1, "a", &[(100, 200, 1024)], None);
        assert!(one_off.overlaps(200, 300));
        assert!(!one_off.overlaps(201, 300));
        assert!(one_off.overlaps(0, 100));
        let recurring = reservation(2, "a", &[(100, 200, 1024)], Some(1_000));
        assert!(recurring.overlaps(5_150, 5_160));
        assert!(!recurring.overlaps(5_300, 5_900));
        assert!(!recurring.overlaps(0, 50));
    }

    #[test]
    fn bad_settings_are_refused() {
        let mut bad = config();
        bad.step_ms = 0;
        assert!(
            Plan::new(bad)
                .unwrap_err()
                .to_string()
                .contains("step must be > 0 ms, got 0")
        );
        let mut bad = config();
        bad.average_capacity = 150.0;
        assert!(
            Plan::new(bad)
                .unwrap_err()
                .to_string()
                .contains("average-capacity")
        );
    }
}
