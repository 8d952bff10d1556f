//! The greedy placement agent: finds where in a plan a reservation's requests
//! can run, then lets the sharing policy accept or refuse the result.
//!
//! It follows YARN's GreedyReservationAgent (an IterativePlanner with
//! StageExecutionIntervalUnconstrained and StageAllocatorGreedyRLE, allocating
//! right to left):
//!
//! - Time is discretised by the plan step (YARN's plan-follower time step,
//!   1000 ms by default): the window [arrival, deadline) shrinks to whole steps
//!   (arrival rounded up, deadline down) and each duration is rounded up to a
//!   whole number of steps. Arrival is also moved up to now: nothing is placed
//!   in the past.
//! - What a request may use is the queue's capacity minus everything the plan
//!   has committed (without the reservation's earlier version on an update),
//!   intersected with what the policy's `available` offers the user. Each
//!   placement is taken off it at once, so requests of one reservation never
//!   count the same room twice.
//! - A request is placed from its deadline backwards, as late as it can: the
//!   agent tries the window [deadline − duration, deadline), finds its
//!   scarcest stretch (where the fewest containers fit), places as many
//!   containers as fit there across the whole window, and tries again with a
//!   window ending where that stretch began (on a step), or one duration
//!   earlier — until all containers are placed or the window would start
//!   before the request's arrival. A request that cannot be fully placed
//!   leaves no trace.
//! - Gangs: every group placed at once holds at least min-concurrency
//!   containers, and never leaves a remainder smaller than min-concurrency.
//!   (YARN instead places whole gangs and refuses a num-containers that is not
//!   a multiple of min-concurrency; Weft accepts it.)
//! - Interpreters. R_ALL: every request, each anywhere in [arrival, deadline),
//!   the last request placed first, as YARN's right-to-left provider does.
//!   R_ANY: the first request, in the order given, that can be placed (YARN's
//!   right-to-left provider would try the last first). R_ORDER: from the last
//!   request backwards, each request must end by the time the next one
//!   starts. R_ORDER_NO_GAP: as R_ORDER, and each request must end exactly
//!   when the next starts and run without a hole (YARN's
//!   `validateOrderNoGap`); the greedy agent does not slide earlier requests
//!   to close a gap, it refuses.
//! - Recurring reservations: the candidate (its first occurrence, repeated
//!   every period) must fit against every recurring reservation unrolled and
//!   every one-off reservation, so what is available to it is the minimum,
//!   over its occurrences, of the room at that occurrence — taken up to where
//!   the plan repeats (see `Plan::recurring_check_end`).
//! - The policy has the last word: `validate` sees the candidate (unrolled
//!   over the checked range if recurring) with the plan cut to
//!   [start − window, end + window); its rejection is passed through as is.
//!   `available` only guides: when a one-off reservation finds no room
//!   within it but the plan alone has room, the agent places it there and
//!   asks `validate`, which accepts it or refuses saying which limit, when
//!   and by how much.
//!
//! Simplifications: recent Hadoop's default agent, AlignedPlannerWithGreedy,
//! first tries StageAllocatorLowCostAligned (spreading a stage to smooth the
//! plan's load) and falls back to this greedy allocator; Weft has only the
//! greedy one. GreedyReservationAgent's favor-early-allocation flag
//! (left to right, its default in recent Hadoop) is not offered: Weft places
//! late, as the original greedy agent did. Priority is kept but not used (YARN
//! uses it only in its preempting priority agent). The agent's own over-commit
//! check is its free-capacity bound; the policy's `validate` is the final one.

use std::fmt;

use super::Sharing;
use super::definition::{Contract, Interpreter, ReservationId, Stage};
use super::plan::{Plan, PlanError};
use super::rle::{Amount, RleTimeline};
use crate::policy::{CallError, Rejection};
use crate::resources::Resources;

/// The most occurrences (of the shortest period in the plan) the agent
/// unrolls to check a recurring reservation; a check needing more (one-off
/// reservations far in the future and a short period) is refused rather than
/// stalling the event loop.
pub const MAX_OCCURRENCES_CHECKED: i64 = 100_000;

/// What to place.
#[derive(Debug, Clone, Copy)]
pub struct PlacementRequest<'a> {
    /// The reservation's id, as the policy's admission names the candidate.
    pub id: &'a ReservationId,
    /// The user the reservation is for, whose limits the policy applies.
    pub user: &'a str,
    /// The checked definition: requests, window, interpreter and period.
    pub contract: &'a Contract,
    /// The reservation being updated: its current allocation does not count.
    pub replacing: Option<&'a ReservationId>,
    /// The time of the request, in ms since the epoch: nothing is placed
    /// before it.
    pub now_ms: i64,
    /// The reservation's name as submitted (may be empty), for the policy.
    pub name: &'a str,
}

impl PlacementRequest<'_> {
    /// What the sharing policy is told of the reservation itself.
    fn terms(&self) -> crate::reservation::plan::Terms<'_> {
        crate::reservation::plan::Terms {
            now_ms: self.now_ms,
            name: self.name,
            recurring: self.contract.period_ms.is_some(),
        }
    }
}

/// One group of containers of one request, running together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacedBlock {
    /// The request's index in the definition.
    pub request: usize,
    /// When the group starts, in ms since the epoch.
    pub start_ms: i64,
    /// When the group ends (exclusive), in ms since the epoch.
    pub end_ms: i64,
    /// How many containers the group holds, at least the request's
    /// min-concurrency.
    pub containers: u32,
    /// containers × capability.
    pub resources: Resources,
}

/// A placement the policy accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The sum of the blocks; a recurring reservation's first occurrence.
    pub allocation: RleTimeline,
    /// The blocks, request by request in the order the requests were placed.
    pub blocks: Vec<PlacedBlock>,
}

/// How much of a request found no room.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shortfall {
    /// The request's index in the definition.
    pub request: usize,
    /// The size of one of its containers.
    pub capability: Resources,
    /// Its num-containers.
    pub wanted: u32,
    /// How many of them found room before the agent gave up (none are kept).
    pub placed: u32,
    /// The window the request had, after rounding to the plan step: its
    /// start, in ms since the epoch.
    pub window_start_ms: i64,
    /// The end of that window (exclusive), in ms since the epoch.
    pub window_end_ms: i64,
}

impl Shortfall {
    /// How many containers found no room: `wanted` − `placed`.
    pub fn missing(&self) -> u32 {
        self.wanted - self.placed
    }
}

impl fmt::Display for Shortfall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let missing = match self.capability.times(self.missing()) {
            Some(total) => total.to_string(),
            None => "more than a cluster holds".to_string(),
        };
        write!(
            f,
            "reservation-request {}: only {} of {} containers of {} fit between {} and {} ms; {} more ({}) have no room",
            self.request,
            self.placed,
            self.wanted,
            self.capability,
            self.window_start_ms,
            self.window_end_ms,
            self.missing(),
            missing
        )
    }
}

/// A policy rejection as one line: its kind, then the policy's message.
pub fn describe_rejection(rejection: &Rejection) -> String {
    match rejection {
        Rejection::OverCommit(message) => format!("over-commit: {message}"),
        Rejection::InstantaneousQuota(message) => format!("instantaneous quota: {message}"),
        Rejection::AverageQuota(message) => format!("average quota: {message}"),
    }
}

fn describe_shortfalls(shortfalls: &[Shortfall]) -> String {
    shortfalls
        .iter()
        .map(Shortfall::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Why a reservation was not placed. All but `Policy` and `Plan` are an
/// answer about the request; those two are faults of the host or the policy.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// Arrival (or now, if later) rounded up and the deadline rounded down
    /// to the plan step leave no time.
    #[error(
        "nothing can be placed between {from_ms} and {to_ms} ms (arrival, or now if later, and deadline on the {step_ms} ms plan step)"
    )]
    EmptyWindow {
        /// Arrival or now, rounded up to the step, in ms since the epoch.
        from_ms: i64,
        /// The deadline rounded down to the step, in ms since the epoch.
        to_ms: i64,
        /// The plan step, in ms.
        step_ms: i64,
    },
    /// A request (R_ALL, R_ORDER, R_ORDER_NO_GAP) could not be fully placed.
    #[error("no room before the deadline: {0}")]
    NoRoom(Shortfall),
    /// No request of an R_ANY definition could be placed; one shortfall per
    /// request, in order.
    #[error("no room for any of the R_ANY alternatives: {}", describe_shortfalls(.0))]
    NoAlternativeFits(Vec<Shortfall>),
    /// R_ORDER_NO_GAP: a request does not end exactly when the next starts.
    #[error(
        "R_ORDER_NO_GAP: reservation-request {request} ends at {end_ms} ms but reservation-request {next} starts at {next_start_ms} ms"
    )]
    Gap {
        /// The request's index in the definition.
        request: usize,
        /// When it ends, in ms since the epoch.
        end_ms: i64,
        /// The index of the request after it.
        next: usize,
        /// When that request starts, in ms since the epoch.
        next_start_ms: i64,
    },
    /// R_ORDER_NO_GAP: a request's containers do not run without a break.
    #[error("R_ORDER_NO_GAP: reservation-request {request} stops between {from_ms} and {to_ms} ms")]
    Hole {
        /// The request's index in the definition.
        request: usize,
        /// Where the break begins, in ms since the epoch.
        from_ms: i64,
        /// Where it ends, in ms since the epoch.
        to_ms: i64,
    },
    /// Checking a recurring reservation would unroll more than
    /// [`MAX_OCCURRENCES_CHECKED`] occurrences.
    #[error(
        "the reservation recurs every {period_ms} ms; checking it against the plan up to {check_end_ms} ms would unroll {occurrences} occurrences of the shortest period, {shortest_period_ms} ms: more than {max}",
        max = MAX_OCCURRENCES_CHECKED
    )]
    TooManyOccurrences {
        /// The reservation's period (its recurrence expression), in ms.
        period_ms: i64,
        /// Where the plan repeats, up to which it is checked, in ms since the
        /// epoch.
        check_end_ms: i64,
        /// The shortest period in the plan with the candidate, in ms.
        shortest_period_ms: i64,
        /// How many occurrences of that period the check would unroll.
        occurrences: i64,
    },
    /// The sharing policy's `validate` refused the placement.
    #[error("refused by the sharing policy: {}", describe_rejection(.0))]
    Rejected(Rejection),
    /// A call to the sharing policy failed (a fault, not a refusal).
    #[error("the sharing policy failed: {0}")]
    Policy(#[from] CallError),
    /// The plan could not build the admission (a fault of the host).
    #[error(transparent)]
    Plan(#[from] PlanError),
}

fn round_down(at_ms: i64, step_ms: i64) -> i64 {
    at_ms - at_ms.rem_euclid(step_ms)
}

fn round_up(at_ms: i64, step_ms: i64) -> i64 {
    match at_ms.rem_euclid(step_ms) {
        0 => at_ms,
        rest => at_ms.saturating_add(step_ms - rest),
    }
}

/// Places `request` in `plan` and has `sharing` validate it. The plan is
/// only read: the caller commits the placement.
pub fn place<S: Sharing + ?Sized>(
    plan: &Plan,
    sharing: &S,
    request: &PlacementRequest<'_>,
) -> Result<Placement, AgentError> {
    let step_ms = plan.config().step_ms;
    let contract = request.contract;
    let from = round_up(contract.arrival_ms.max(request.now_ms), step_ms);
    let to = round_down(contract.deadline_ms, step_ms);
    if from >= to {
        return Err(AgentError::EmptyWindow {
            from_ms: from,
            to_ms: to,
            step_ms,
        });
    }
    let window_ms = sharing.window(&plan.config().to_wit())?.max(0);
    // A recurring candidate is checked up to where the plan repeats.
    let check_end = match contract.period_ms {
        None => to,
        Some(period_ms) => {
            let end = plan.recurring_check_end(from, period_ms, request.replacing);
            // Every recurring reservation is unrolled over the checked range:
            // the shortest period sets the work.
            let shortest = plan.recurring_periods().fold(period_ms, i64::min);
            let occurrences = (end - from) / shortest;
            if occurrences > MAX_OCCURRENCES_CHECKED {
                return Err(AgentError::TooManyOccurrences {
                    period_ms,
                    check_end_ms: end,
                    shortest_period_ms: shortest,
                    occurrences,
                });
            }
            end
        }
    };

    let place_in = |mut room: RleTimeline| -> Result<Vec<PlacedBlock>, AgentError> {
        let stages = &contract.stages;
        match contract.interpreter {
            Interpreter::All => place_all(&mut room, stages, from, to, step_ms),
            Interpreter::Any => place_any(&mut room, stages, from, to, step_ms),
            Interpreter::Order => place_ordered(&mut room, stages, from, to, step_ms, false),
            Interpreter::OrderNoGap => place_ordered(&mut room, stages, from, to, step_ms, true),
        }
    };
    let offered = available(plan, sharing, request, from, to, check_end, window_ms)?;
    let blocks = match place_in(offered) {
        Ok(blocks) => blocks,
        // The policy's `available` only guides; `validate` has the last
        // word. Where the plan alone has room, place there and let
        // `validate` decide: it accepts, or its refusal says which limit,
        // when and by how much, which "no room" cannot.
        Err(no_room) if contract.period_ms.is_none() => {
            match place_in(plan.free(from, to, request.replacing)) {
                Ok(blocks) => blocks,
                Err(_) => return Err(no_room),
            }
        }
        Err(no_room) => return Err(no_room),
    };
    let allocation = RleTimeline::from_blocks(
        blocks
            .iter()
            .map(|b| (b.start_ms, b.end_ms, Amount::from_resources(&b.resources))),
    );

    let (candidate, range) = match contract.period_ms {
        Some(period_ms) => (
            allocation.unroll(period_ms, from, check_end),
            (from, check_end),
        ),
        // Every placed request holds at least one container: never empty.
        None => (allocation.clone(), allocation.span().unwrap_or((from, to))),
    };
    let admission = plan.admission(
        request.user,
        request.id,
        &candidate,
        range.0.saturating_sub(window_ms),
        range.1.saturating_add(window_ms),
        request.replacing,
        request.terms(),
    )?;
    match sharing.validate(&admission)? {
        Ok(()) => Ok(Placement { allocation, blocks }),
        Err(rejection) => Err(AgentError::Rejected(rejection)),
    }
}

/// The room for the candidate inside [`from`, `to`): the plan's free capacity
/// intersected with what the policy offers the user; for a recurring
/// candidate, the least room over its occurrences up to `check_end`.
fn available<S: Sharing + ?Sized>(
    plan: &Plan,
    sharing: &S,
    request: &PlacementRequest<'_>,
    from: i64,
    to: i64,
    check_end: i64,
    window_ms: i64,
) -> Result<RleTimeline, AgentError> {
    let free = plan.free(from, check_end, request.replacing);
    let admission = plan.admission(
        request.user,
        request.id,
        &RleTimeline::new(),
        from.saturating_sub(window_ms),
        check_end.saturating_add(window_ms),
        request.replacing,
        request.terms(),
    )?;
    let offered = RleTimeline::from_timeline(&sharing.available(&admission)?)
        .map_err(|error| CallError::InvalidOutput(format!("available: {error}")))?;
    let room = free.min(&offered.restrict(from, check_end));
    let Some(period_ms) = request.contract.period_ms else {
        return Ok(room);
    };
    let mut folded = room.restrict(from, to);
    let mut offset = period_ms;
    while from.saturating_add(offset) < check_end {
        let occurrence = room.restrict(from + offset, to + offset).shifted(-offset);
        folded = folded.min(&occurrence);
        offset += period_ms;
    }
    Ok(folded)
}

/// How many containers to place where `fit` fit, with `remaining` to place
/// in groups of at least `gang`: all if they fit; else as many as fit while
/// leaving at least a gang for later; none if that is less than a gang.
fn containers_to_place(fit: i64, remaining: i64, gang: i64) -> i64 {
    if fit >= remaining {
        return remaining;
    }
    let count = fit.min(remaining - gang);
    if count >= gang { count } else { 0 }
}

/// The scarcest stretch of [`start`, `end`): how many `unit`s fit there, and
/// where it begins (the leftmost of equally scarce stretches, so the next try
/// skips them all).
fn scarcest(available: &RleTimeline, start: i64, end: i64, unit: &Amount) -> (i64, i64) {
    let mut scarcest = (i64::MAX, start);
    for (at_ms, amount) in available.steps_within(start, end) {
        let fit = amount.count_fitting(unit);
        if fit < scarcest.0 {
            scarcest = (fit, at_ms);
        }
    }
    scarcest
}

/// Places one request inside [`start_ms`, `end_ms`), as late as it can (see
/// the module documentation), taking what it places off `available`. On
/// failure `available` is as it was.
fn place_request(
    available: &mut RleTimeline,
    index: usize,
    stage: &Stage,
    start_ms: i64,
    end_ms: i64,
    step_ms: i64,
) -> Result<Vec<PlacedBlock>, Shortfall> {
    let duration = round_up(stage.duration_ms, step_ms);
    let unit = Amount::from_resources(&stage.capability);
    let gang = i64::from(stage.min_concurrency);
    let mut remaining = i64::from(stage.num_containers);
    let mut deadline = end_ms;
    let mut blocks = Vec::new();
    while remaining > 0 && deadline.saturating_sub(duration) >= start_ms {
        let start = deadline - duration;
        let (fit, scarce_from) = scarcest(available, start, deadline, &unit);
        let count = containers_to_place(fit, remaining, gang);
        if count > 0 {
            // count ≤ what fits, so count × unit ≤ available: no overflow.
            let held = unit.checked_mul(count).unwrap_or(Amount::ZERO);
            available.add_block(start, deadline, -held);
            remaining -= count;
            blocks.push(PlacedBlock {
                request: index,
                start_ms: start,
                end_ms: deadline,
                // At most num-containers, a u32.
                containers: count as u32,
                resources: stage
                    .capability
                    .times(count as u32)
                    .unwrap_or(Resources::ZERO),
            });
        }
        deadline = if count > 0 {
            // Next, end before the scarcest stretch (on a step), or a duration earlier.
            round_down(scarce_from, step_ms).max(start)
        } else {
            // Not even a gang fits: every window ending after the run of too
            // little room around the scarcest point would include it, so jump
            // to where that run begins, however far (a long booked or empty
            // stretch costs one step, not one per duration).
            match available.end_of_room_before(scarce_from, &unit, gang) {
                Some(end) => round_down(end, step_ms),
                None => break,
            }
        };
    }
    if remaining == 0 {
        return Ok(blocks);
    }
    for block in &blocks {
        available.add_block(
            block.start_ms,
            block.end_ms,
            Amount::from_resources(&block.resources),
        );
    }
    Err(Shortfall {
        request: index,
        capability: stage.capability,
        wanted: stage.num_containers,
        placed: stage.num_containers - remaining as u32,
        window_start_ms: start_ms,
        window_end_ms: end_ms,
    })
}

fn place_all(
    available: &mut RleTimeline,
    stages: &[Stage],
    from: i64,
    to: i64,
    step_ms: i64,
) -> Result<Vec<PlacedBlock>, AgentError> {
    let mut blocks = Vec::new();
    for (index, stage) in stages.iter().enumerate().rev() {
        blocks.extend(
            place_request(available, index, stage, from, to, step_ms)
                .map_err(AgentError::NoRoom)?,
        );
    }
    Ok(blocks)
}

fn place_any(
    available: &mut RleTimeline,
    stages: &[Stage],
    from: i64,
    to: i64,
    step_ms: i64,
) -> Result<Vec<PlacedBlock>, AgentError> {
    let mut shortfalls = Vec::new();
    for (index, stage) in stages.iter().enumerate() {
        match place_request(available, index, stage, from, to, step_ms) {
            Ok(blocks) => return Ok(blocks),
            Err(shortfall) => shortfalls.push(shortfall),
        }
    }
    Err(AgentError::NoAlternativeFits(shortfalls))
}

/// R_ORDER and R_ORDER_NO_GAP: from the last request back, each ending by
/// (or, without gaps, exactly at) the start of the one after it.
fn place_ordered(
    available: &mut RleTimeline,
    stages: &[Stage],
    from: i64,
    to: i64,
    step_ms: i64,
    no_gap: bool,
) -> Result<Vec<PlacedBlock>, AgentError> {
    let mut placed = Vec::new();
    let mut deadline = to;
    let mut next: Option<(usize, i64)> = None;
    for (index, stage) in stages.iter().enumerate().rev() {
        let mut blocks = place_request(available, index, stage, from, deadline, step_ms)
            .map_err(AgentError::NoRoom)?;
        blocks.sort_by_key(|block| block.start_ms);
        let start = blocks.first().map_or(deadline, |block| block.start_ms);
        let end = blocks
            .iter()
            .map(|block| block.end_ms)
            .max()
            .unwrap_or(deadline);
        if no_gap {
            if let Some((next, next_start_ms)) = next
                && end != next_start_ms
            {
                return Err(AgentError::Gap {
                    request: index,
                    end_ms: end,
                    next,
                    next_start_ms,
                });
            }
            let mut covered_to = start;
            for block in &blocks {
                if block.start_ms > covered_to {
                    return Err(AgentError::Hole {
                        request: index,
                        from_ms: covered_to,
                        to_ms: block.start_ms,
                    });
                }
                covered_to = covered_to.max(block.end_ms);
            }
        }
        next = Some((index, start));
        deadline = start;
        placed.extend(blocks);
    }
    Ok(placed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reservation::definition::tests::{LIMITS, definition, request};
    use crate::reservation::definition::{ReservationDefinition, ReservationRequest};
    use crate::reservation::plan::Reservation;
    use crate::reservation::plan::tests::{config, id};
    use crate::reservation::testing::{Broken, NoOverCommit, RefuseAll, UserCap};

    const DAY: i64 = 86_400_000;
    const HOUR: i64 = 3_600_000;

    /// `containers` × 1 GB, 1 vcore, each running `seconds`, gangs of `gang`.
    fn gb(containers: i64, gang: i64, seconds: i64) -> ReservationRequest {
        request(1024, 1, containers, gang, seconds * 1_000)
    }

    fn contract(definition: &ReservationDefinition) -> Contract {
        definition.validate(&LIMITS).unwrap()
    }

    fn try_place(
        plan: &Plan,
        sharing: &dyn Sharing,
        definition: &ReservationDefinition,
        sequence: u64,
        user: &str,
    ) -> Result<Placement, AgentError> {
        let contract = contract(definition);
        place(
            plan,
            sharing,
            &PlacementRequest {
                id: &id(sequence),
                user,
                contract: &contract,
                replacing: None,
                now_ms: 0,
                name: "",
            },
        )
    }

    /// Places and commits, as the reservation system does.
    fn commit(
        plan: &mut Plan,
        definition: &ReservationDefinition,
        sequence: u64,
        user: &str,
    ) -> Placement {
        let placement =
            try_place(plan, &NoOverCommit::default(), definition, sequence, user).unwrap();
        let period = contract(definition).period_ms;
        let reservation = Reservation::new(
            id(sequence),
            user.into(),
            definition.clone(),
            period,
            placement.allocation.clone(),
            0,
        )
        .unwrap();
        plan.add(reservation).unwrap();
        placement
    }

    /// (request, start s, end s, containers) of each block, in time order.
    fn blocks(placement: &Placement) -> Vec<(usize, i64, i64, u32)> {
        let mut blocks: Vec<_> = placement
            .blocks
            .iter()
            .map(|b| {
                (
                    b.request,
                    b.start_ms / 1_000,
                    b.end_ms / 1_000,
                    b.containers,
                )
            })
            .collect();
        blocks.sort_by_key(|&(request, start, ..)| (start, request));
        blocks
    }

    fn plan() -> Plan {
        // 10 GB, 10 vcores, one-second steps.
        Plan::new(config()).unwrap()
    }

    #[test]
    fn order_places_backwards_from_the_deadline_each_before_the_next() {
        let order = definition(
            0,
            100_000,
            Interpreter::Order,
            vec![gb(2, 1, 10), gb(4, 4, 20)],
        );
        let placement = try_place(&plan(), &NoOverCommit::default(), &order, 1, "alice").unwrap();
        assert_eq!(blocks(&placement), vec![(0, 70, 80, 2), (1, 80, 100, 4)]);
        assert_eq!(
            placement.allocation.value_at(75_000),
            Amount::new(2048, 2, 0)
        );
        assert_eq!(
            placement.allocation.value_at(85_000),
            Amount::new(4096, 4, 0)
        );
    }

    #[test]
    fn order_no_gap_chains_requests_end_to_start() {
        let chain = definition(
            0,
            100_000,
            Interpreter::OrderNoGap,
            vec![gb(10, 10, 10), gb(2, 2, 30), gb(5, 1, 5)],
        );
        let placement = try_place(&plan(), &NoOverCommit::default(), &chain, 1, "alice").unwrap();
        assert_eq!(
            blocks(&placement),
            vec![(0, 55, 65, 10), (1, 65, 95, 2), (2, 95, 100, 5)]
        );
    }

    #[test]
    fn order_leaves_a_gap_where_order_no_gap_refuses() {
        let mut plan = plan();
        // Someone holds the whole queue over [75 s, 80 s).
        commit(
            &mut plan,
            &definition(75_000, 80_000, Interpreter::All, vec![gb(10, 10, 5)]),
            9,
            "bob",
        );
        let requests = vec![gb(10, 10, 10), gb(10, 10, 20)];
        let order = definition(0, 100_000, Interpreter::Order, requests.clone());
        let placement = try_place(&plan, &NoOverCommit::default(), &order, 1, "alice").unwrap();
        assert_eq!(blocks(&placement), vec![(0, 65, 75, 10), (1, 80, 100, 10)]);
        let no_gap = definition(0, 100_000, Interpreter::OrderNoGap, requests);
        let error = try_place(&plan, &NoOverCommit::default(), &no_gap, 1, "alice").unwrap_err();
        assert!(
            matches!(
                error,
                AgentError::Gap {
                    request: 0,
                    end_ms: 75_000,
                    next: 1,
                    next_start_ms: 80_000
                }
            ),
            "{error}"
        );
        assert!(error.to_string().contains(
            "reservation-request 0 ends at 75000 ms but reservation-request 1 starts at 80000 ms"
        ));
    }

    #[test]
    fn order_no_gap_refuses_a_request_with_a_hole() {
        let mut plan = plan();
        // Full over [80 s, 90 s); 2 GB free over [90 s, 100 s).
        commit(
            &mut plan,
            &definition(80_000, 90_000, Interpreter::All, vec![gb(10, 10, 10)]),
            8,
            "bob",
        );
        commit(
            &mut plan,
            &definition(90_000, 100_000, Interpreter::All, vec![gb(8, 8, 10)]),
            9,
            "bob",
        );
        let split = vec![gb(4, 2, 10)];
        let order = definition(0, 100_000, Interpreter::Order, split.clone());
        let placement = try_place(&plan, &NoOverCommit::default(), &order, 1, "alice").unwrap();
        assert_eq!(blocks(&placement), vec![(0, 70, 80, 2), (0, 90, 100, 2)]);
        let no_gap = definition(0, 100_000, Interpreter::OrderNoGap, split);
        let error = try_place(&plan, &NoOverCommit::default(), &no_gap, 1, "alice").unwrap_err();
        assert!(
            matches!(
                error,
                AgentError::Hole {
                    request: 0,
                    from_ms: 80_000,
                    to_ms: 90_000
                }
            ),
            "{error}"
        );
        assert_eq!(
            error.to_string(),
            "R_ORDER_NO_GAP: reservation-request 0 stops between 80000 and 90000 ms"
        );
    }

    #[test]
    fn all_places_every_request_latest_first_splitting_above_the_gang() {
        // 11 × 1 GB into 10 GB: the last request first; the first spills back
        // one window, in groups of at least its gang of 3.
        let all = definition(
            0,
            100_000,
            Interpreter::All,
            vec![gb(6, 3, 10), gb(5, 5, 10)],
        );
        let placement = try_place(&plan(), &NoOverCommit::default(), &all, 1, "alice").unwrap();
        assert_eq!(
            blocks(&placement),
            vec![(0, 80, 90, 3), (0, 90, 100, 3), (1, 90, 100, 5)]
        );
        // With gangs of 1 as many as fit go late.
        let all = definition(
            0,
            100_000,
            Interpreter::All,
            vec![gb(6, 1, 10), gb(5, 5, 10)],
        );
        let placement = try_place(&plan(), &NoOverCommit::default(), &all, 1, "alice").unwrap();
        assert_eq!(
            blocks(&placement),
            vec![(0, 80, 90, 1), (0, 90, 100, 5), (1, 90, 100, 5)]
        );
    }

    #[test]
    fn any_takes_the_first_alternative_that_fits() {
        // The first alternative needs a gang of 20 GB: never fits in 10 GB.
        let any = definition(
            0,
            100_000,
            Interpreter::Any,
            vec![gb(20, 20, 10), gb(5, 1, 30), gb(1, 1, 1)],
        );
        let placement = try_place(&plan(), &NoOverCommit::default(), &any, 1, "alice").unwrap();
        assert_eq!(blocks(&placement), vec![(1, 70, 100, 5)]);
        let none = definition(
            0,
            100_000,
            Interpreter::Any,
            vec![gb(20, 20, 10), gb(11, 11, 10)],
        );
        let error = try_place(&plan(), &NoOverCommit::default(), &none, 1, "alice").unwrap_err();
        let AgentError::NoAlternativeFits(shortfalls) = &error else {
            panic!("{error}");
        };
        assert_eq!(
            shortfalls
                .iter()
                .map(|s| (s.request, s.placed))
                .collect::<Vec<_>>(),
            vec![(0, 0), (1, 0)]
        );
        assert!(
            error
                .to_string()
                .contains("reservation-request 1: only 0 of 11 containers"),
            "{error}"
        );
    }

    #[test]
    fn places_as_late_as_the_plan_allows() {
        let mut plan = plan();
        // 8 GB taken over [95 s, 100 s): a gang of 4 GB for 10 s must end by 95 s.
        commit(
            &mut plan,
            &definition(95_000, 100_000, Interpreter::All, vec![gb(8, 8, 5)]),
            9,
            "bob",
        );
        let job = definition(0, 100_000, Interpreter::All, vec![gb(4, 4, 10)]);
        let placement = try_place(&plan, &NoOverCommit::default(), &job, 1, "alice").unwrap();
        assert_eq!(blocks(&placement), vec![(0, 85, 95, 4)]);
        // Two containers still fit beside bob's 8 GB: they go right to the deadline.
        let small = definition(0, 100_000, Interpreter::All, vec![gb(2, 1, 10)]);
        let placement = try_place(&plan, &NoOverCommit::default(), &small, 1, "alice").unwrap();
        assert_eq!(blocks(&placement), vec![(0, 90, 100, 2)]);
    }

    #[test]
    fn times_are_rounded_to_the_plan_step() {
        // Window [0.5 s, 30.5 s) → [1 s, 30 s); 2.5 s → 3 s.
        let job = definition(
            500,
            30_500,
            Interpreter::All,
            vec![request(1024, 1, 1, 1, 2_500)],
        );
        let placement = try_place(&plan(), &NoOverCommit::default(), &job, 1, "alice").unwrap();
        assert_eq!(blocks(&placement), vec![(0, 27, 30, 1)]);
        let tiny = definition(
            100,
            900,
            Interpreter::All,
            vec![request(1024, 1, 1, 1, 100)],
        );
        let error = try_place(&plan(), &NoOverCommit::default(), &tiny, 1, "alice").unwrap_err();
        assert!(
            matches!(
                error,
                AgentError::EmptyWindow {
                    from_ms: 1_000,
                    to_ms: 0,
                    ..
                }
            ),
            "{error}"
        );
    }

    #[test]
    fn nothing_is_placed_in_the_past() {
        let job = contract(&definition(
            0,
            100_000,
            Interpreter::All,
            vec![gb(1, 1, 10)],
        ));
        let request = PlacementRequest {
            id: &id(1),
            user: "alice",
            contract: &job,
            replacing: None,
            now_ms: 95_000,
            name: "",
        };
        let error = place(&plan(), &NoOverCommit::default(), &request).unwrap_err();
        let AgentError::NoRoom(shortfall) = &error else {
            panic!("{error}");
        };
        assert_eq!(
            (shortfall.window_start_ms, shortfall.window_end_ms),
            (95_000, 100_000)
        );
    }

    #[test]
    fn no_room_says_which_request_and_how_much_is_missing() {
        let mut plan = plan();
        commit(
            &mut plan,
            &definition(
                0,
                100_000,
                Interpreter::All,
                vec![request(6 * 1024, 1, 1, 1, 100_000)],
            ),
            9,
            "bob",
        );
        // 4 GB free throughout: one 4 GB container per 50 s window, two of four.
        let job = definition(
            0,
            100_000,
            Interpreter::All,
            vec![gb(1, 1, 1), request(4096, 1, 4, 1, 50_000)],
        );
        let error = try_place(&plan, &NoOverCommit::default(), &job, 1, "alice").unwrap_err();
        let AgentError::NoRoom(shortfall) = &error else {
            panic!("{error}");
        };
        assert_eq!(
            (shortfall.request, shortfall.placed, shortfall.missing()),
            (1, 2, 2)
        );
        let message = error.to_string();
        assert!(
            message.contains("reservation-request 1: only 2 of 4 containers of <memory:4096 MB, vcores:1, gpus:0> fit between 0 and 100000 ms; 2 more (<memory:8192 MB, vcores:2, gpus:0>) have no room"),
            "{message}"
        );
    }

    #[test]
    fn the_policys_rejection_is_passed_through() {
        let job = definition(0, 100_000, Interpreter::All, vec![gb(1, 1, 10)]);
        let error = try_place(&plan(), &RefuseAll, &job, 1, "alice").unwrap_err();
        assert!(
            matches!(&error, AgentError::Rejected(Rejection::AverageQuota(m)) if m == "user alice would average above the limit")
        );
        assert_eq!(
            error.to_string(),
            "refused by the sharing policy: average quota: user alice would average above the limit"
        );
        let error = try_place(&plan(), &Broken, &job, 1, "alice").unwrap_err();
        assert!(
            matches!(error, AgentError::Policy(CallError::Trap(_))),
            "{error}"
        );
    }

    #[test]
    fn the_policys_available_bounds_the_placement() {
        let mut plan = plan();
        commit(
            &mut plan,
            &definition(90_000, 100_000, Interpreter::All, vec![gb(2, 2, 10)]),
            9,
            "alice",
        );
        let cap = UserCap {
            limit: Amount::new(2048, 2, 0),
        };
        // Alice already holds her 2 GB at the end: her next 2 GB go before it…
        let job = definition(0, 100_000, Interpreter::All, vec![gb(2, 2, 10)]);
        let placement = try_place(&plan, &cap, &job, 1, "alice").unwrap();
        assert_eq!(blocks(&placement), vec![(0, 80, 90, 2)]);
        // …while bob, under the same cap, gets the end.
        let placement = try_place(&plan, &cap, &job, 2, "bob").unwrap();
        assert_eq!(blocks(&placement), vec![(0, 90, 100, 2)]);
    }

    #[test]
    fn a_long_stretch_without_room_is_crossed_in_one_step() {
        // The plan is full for a month but its first second; a request of
        // one second with a deadline a month off (as far ahead as plans
        // reach). Moving back one duration at a time would take 2.6 × 10⁶
        // passes; the agent jumps.
        const A_MONTH: i64 = 30 * DAY;
        let mut plan = plan();
        commit(
            &mut plan,
            &definition(
                1_000,
                A_MONTH,
                Interpreter::All,
                vec![gb(10, 10, A_MONTH / 1000 - 1)],
            ),
            1,
            "alice",
        );
        let job = definition(0, A_MONTH, Interpreter::All, vec![gb(1, 1, 1)]);
        let placement = try_place(&plan, &NoOverCommit::default(), &job, 2, "bob").unwrap();
        assert_eq!(blocks(&placement), vec![(0, 0, 1, 1)]);
    }

    #[test]
    fn an_update_does_not_compete_with_its_own_earlier_version() {
        let mut plan = plan();
        let full = definition(0, 100_000, Interpreter::All, vec![gb(10, 10, 10)]);
        commit(&mut plan, &full, 1, "alice");
        let contract = contract(&full);
        let mut request = PlacementRequest {
            id: &id(1),
            user: "alice",
            contract: &contract,
            replacing: Some(&id(1)),
            now_ms: 0,
            name: "",
        };
        assert_eq!(
            blocks(&place(&plan, &NoOverCommit::default(), &request).unwrap()),
            vec![(0, 90, 100, 10)]
        );
        request.replacing = None;
        assert_eq!(
            blocks(&place(&plan, &NoOverCommit::default(), &request).unwrap()),
            vec![(0, 80, 90, 10)]
        );
    }

    #[test]
    fn a_recurring_reservation_avoids_a_one_off_in_a_later_period() {
        let mut plan = plan();
        // Bob holds the whole queue on day two, 90–100 s after midnight.
        commit(
            &mut plan,
            &definition(
                DAY + 90_000,
                DAY + 100_000,
                Interpreter::All,
                vec![gb(10, 10, 10)],
            ),
            9,
            "bob",
        );
        let mut daily = definition(0, 100_000, Interpreter::All, vec![gb(2, 2, 10)]);
        daily.recurrence_expression = Some(DAY.to_string());
        let placement = try_place(&plan, &NoOverCommit::default(), &daily, 1, "alice").unwrap();
        assert_eq!(blocks(&placement), vec![(0, 80, 90, 2)]);
        // As a one-off it would have taken the end of day one.
        let once = definition(0, 100_000, Interpreter::All, vec![gb(2, 2, 10)]);
        assert_eq!(
            blocks(&try_place(&plan, &NoOverCommit::default(), &once, 1, "alice").unwrap()),
            vec![(0, 90, 100, 2)]
        );
    }

    #[test]
    fn a_one_off_avoids_a_recurring_reservation_in_a_later_period() {
        let mut plan = plan();
        let mut daily = definition(0, 100_000, Interpreter::All, vec![gb(10, 10, 10)]);
        daily.recurrence_expression = Some(DAY.to_string());
        commit(&mut plan, &daily, 1, "alice");
        // On day three the daily reservation holds [90 s, 100 s) again.
        let later = definition(
            2 * DAY,
            2 * DAY + 100_000,
            Interpreter::All,
            vec![gb(1, 1, 10)],
        );
        let placement = try_place(&plan, &NoOverCommit::default(), &later, 2, "bob").unwrap();
        assert_eq!(
            blocks(&placement),
            vec![(0, (2 * DAY) / 1_000 + 80, (2 * DAY) / 1_000 + 90, 1)]
        );
    }

    #[test]
    fn recurring_reservations_with_different_periods_meet_in_the_cycle() {
        let mut plan = plan();
        // Alice, daily, holds the queue from 1 h + 100 s to 1 h + 200 s.
        let mut daily = definition(
            HOUR + 100_000,
            HOUR + 200_000,
            Interpreter::All,
            vec![gb(10, 10, 100)],
        );
        daily.recurrence_expression = Some(DAY.to_string());
        commit(&mut plan, &daily, 1, "alice");
        // Bob, hourly from 0, would take 100–200 s; his second occurrence
        // would then meet alice's, so every occurrence runs 0–100 s.
        let mut hourly = definition(0, 200_000, Interpreter::All, vec![gb(1, 1, 100)]);
        let once = try_place(&plan, &NoOverCommit::default(), &hourly, 2, "bob").unwrap();
        assert_eq!(blocks(&once), vec![(0, 100, 200, 1)]);
        hourly.recurrence_expression = Some(HOUR.to_string());
        let placement = try_place(&plan, &NoOverCommit::default(), &hourly, 2, "bob").unwrap();
        assert_eq!(blocks(&placement), vec![(0, 0, 100, 1)]);
    }

    #[test]
    fn a_recurring_check_too_long_to_unroll_is_refused() {
        let mut plan = plan();
        // A one-off a month ahead: a reservation every 10 s would be checked
        // over more than 250,000 of its occurrences.
        let year = 30 * DAY;
        commit(
            &mut plan,
            &definition(year, year + 10_000, Interpreter::All, vec![gb(1, 1, 10)]),
            9,
            "bob",
        );
        let mut minutely = definition(0, 10_000, Interpreter::All, vec![gb(1, 1, 10)]);
        minutely.recurrence_expression = Some("10000".into());
        let error = try_place(&plan, &NoOverCommit::default(), &minutely, 1, "alice").unwrap_err();
        assert!(
            matches!(
                error,
                AgentError::TooManyOccurrences {
                    period_ms: 10_000,
                    ..
                }
            ),
            "{error}"
        );
        // Daily, it is 31 occurrences.
        minutely.recurrence_expression = Some(DAY.to_string());
        assert!(try_place(&plan, &NoOverCommit::default(), &minutely, 1, "alice").is_ok());
    }

    #[test]
    fn containers_to_place_keeps_gangs_whole() {
        assert_eq!(containers_to_place(10, 6, 3), 6);
        assert_eq!(containers_to_place(5, 6, 3), 3);
        assert_eq!(containers_to_place(2, 6, 3), 0);
        assert_eq!(containers_to_place(4, 5, 3), 0);
        assert_eq!(containers_to_place(7, 10, 2), 7);
        assert_eq!(containers_to_place(0, 1, 1), 0);
    }
}
