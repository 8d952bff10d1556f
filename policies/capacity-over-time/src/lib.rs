//! `capacity-over-time`: YARN's CapacityOverTimePolicy (seed 004), a
//! time-extended notion of capacity for a reservable queue's plan. A
//! reservation enters only if, in every resource (memory, vcores, GPUs):
//!
//! 1. the plan never holds more than the queue's capacity (as `no-overcommit`:
//!    refused with `over-commit`);
//! 2. the user — what they hold already plus this reservation — never holds
//!    more than `instantaneous-max-capacity` % of the capacity at any instant
//!    (`instantaneous-quota`);
//! 3. over every window [t, t + W) of `reservation-window` W, the integral of
//!    the user's holding is at most W × `average-capacity` % of the capacity
//!    (`average-quota`).
//!
//! So a user may take a large share for a while, but not for long: the average
//! bounds abuse. Checks 1 and 2 look only where the reservation holds some of
//! the resource, and check 3 only at windows that overlap it: what is already
//! admitted stands, even if it breaks a limit (say, admitted under
//! `no-overcommit` before a hot swap) — a reservation is refused only for a
//! limit it pushes further past.
//!
//! The average is checked exactly, in integers, for every window starting at a
//! whole millisecond, in O(points within [start − W, end + W)). The windowed
//! integral F(t) = ∫[t, t+W) is piecewise linear in t, with breakpoints where
//! t or t + W meets a point of the timeline, so its largest value over the
//! windows that matter is at a breakpoint or, where a window only starts or
//! stops overlapping the reservation there, one millisecond beside it. Two
//! cursors over the merged timeline's prefix integrals evaluate F at those
//! instants in time order. Percentages become parts per million
//! (round(% × 10,000)) and the test is integral × 1,000,000 ≤ W × capacity ×
//! ppm, in u128: a reservation exactly at a limit is accepted, one 1 MB·ms
//! over is refused.
//!
//! The admission is the `weft-policy` SDK's checked view (a malformed one
//! traps before the policy runs); the timeline walk, the prefix integrals and
//! the over-commit rule (shared with `no-overcommit`) are the SDK's. The
//! WebAssembly glue is the `export_sharing!` line.

mod figures;

use figures::{decimal, percent};
use weft_policy::sharing::{
    Admission, Integrals, PlanSettings, Rejection, Timeline, TimelineBuilder, Walk,
    check_over_commit,
};
use weft_policy::{DIMENSIONS, Dimension, Params, Policy, SharingPolicy};

/// Parts per million in a whole: 100 % is 1,000,000 ppm.
const MILLION: u128 = 1_000_000;

/// The policy: it has no settings of its own; its limits are the queue's
/// `reservation-window`, `instantaneous-max-capacity` and `average-capacity`,
/// which come with every decision. `configure` asks for no key, so the SDK
/// refuses any given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CapacityOverTime;

impl Policy for CapacityOverTime {
    const NAME: &'static str = env!("CARGO_PKG_NAME");
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn configure(_params: &Params) -> Result<Self, String> {
        Ok(CapacityOverTime)
    }
}

impl SharingPolicy for CapacityOverTime {
    fn window(&mut self, settings: &PlanSettings) -> i64 {
        window(settings)
    }

    fn validate(&mut self, admission: &Admission) -> Result<(), Rejection> {
        validate(admission)
    }

    fn available(&mut self, admission: &Admission) -> Timeline {
        available(admission)
    }
}

weft_policy::export_sharing!(CapacityOverTime);

/// How far before and after a reservation the policy looks: the averaging
/// window (the SDK checked it is from 0 to 2^61 ms).
pub fn window(settings: &PlanSettings) -> i64 {
    settings.reservation_window_ms
}

/// The queue's limits, as exact integers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    /// W, `reservation-window`, in ms.
    pub window_ms: i64,
    /// `instantaneous-max-capacity`, in parts per million of the capacity.
    pub instantaneous_ppm: u64,
    /// `average-capacity`, in parts per million of the capacity.
    pub average_ppm: u64,
}

impl Quota {
    /// Reads the limits of checked settings (percentages from 0 to 100).
    pub fn of(settings: &PlanSettings) -> Quota {
        Quota {
            window_ms: settings.reservation_window_ms,
            instantaneous_ppm: ppm(settings.instantaneous_max_capacity),
            average_ppm: ppm(settings.average_capacity),
        }
    }
}

/// A percentage from 0 to 100 in parts per million: 33.3 → 333,000.
fn ppm(percent: f64) -> u64 {
    // Within 0..=1e6 for a checked percentage, so the cast is exact.
    (percent * 10_000.0).round() as u64
}

/// Accepts the candidate, or refuses it with the first limit it breaks, in
/// the order over-commit, instantaneous, average.
pub fn validate(admission: &Admission) -> Result<(), Rejection> {
    let Some(support) = admission.candidate_support() else {
        return Ok(()); // holds nothing, breaks nothing
    };
    let quota = Quota::of(admission.settings());
    check_over_commit(admission)?;
    check_instantaneous(admission, quota, support)?;
    check_average(admission, quota, support)
}

/// Wherever the candidate holds some of a resource, the user's holding with
/// it is at most instantaneous-max-capacity % of the capacity.
fn check_instantaneous(
    admission: &Admission,
    quota: Quota,
    (start, end): (i64, i64),
) -> Result<(), Rejection> {
    let capacity = admission.settings().capacity();
    let limit = |d: Dimension| u128::from(capacity[d]) * u128::from(quota.instantaneous_ppm);
    let lines = [admission.user_committed(), admission.candidate()];
    for stretch in Walk::new(lines, start, end) {
        let [committed, asked] = stretch.amounts;
        for dimension in DIMENSIONS {
            // Checked amounts are below 2^40: the sum cannot overflow.
            let held = committed[dimension] + asked[dimension];
            if asked[dimension] > 0 && u128::from(held) * MILLION > limit(dimension) {
                let unit = dimension.unit();
                return Err(Rejection::InstantaneousQuota(format!(
                    "user {} would hold {held} {unit} at t={} ms ({} {unit} committed + {} {unit} asked); \
                     instantaneous-max-capacity {}% of {} {unit} is {} {unit} (over by {} {unit})",
                    admission.user(),
                    stretch.from_ms,
                    committed[dimension],
                    asked[dimension],
                    percent(quota.instantaneous_ppm),
                    capacity[dimension],
                    decimal(limit(dimension), 6),
                    decimal(u128::from(held) * MILLION - limit(dimension), 6),
                )));
            }
        }
    }
    Ok(())
}

/// The window [t, t + W): what the user would hold over it, and how much of
/// that is the candidate's, per dimension (unit·ms).
#[derive(Debug, Clone, Copy)]
struct Window {
    start_ms: i64,
    held: [u128; 3],
    asked: [u128; 3],
}

/// Over every window of length W that overlaps the candidate, the user's
/// holding integrates to at most W × average-capacity % of the capacity.
fn check_average(
    admission: &Admission,
    quota: Quota,
    support: (i64, i64),
) -> Result<(), Rejection> {
    let w = quota.window_ms;
    if w == 0 {
        return Ok(()); // an empty window holds nothing
    }
    // Windows overlapping the candidate lie in [start − W, end + W): the
    // integrals of the user's holding and of the candidate over that span.
    let (lo, hi) = admission.window_span(support, w);
    let integrals = Integrals::new([admission.user_committed(), admission.candidate()], lo, hi);
    let times = integrals.times();
    let capacity = admission.settings().capacity().to_array();
    // held × 10^6 > W × capacity × ppm, for a whole number held, is
    // held > ⌊W × capacity × ppm / 10^6⌋: one division here, none per window.
    let most =
        capacity.map(|c| u128::from(c) * u128::from(quota.average_ppm) * w as u128 / MILLION);

    let (mut window_start, mut window_end) = (integrals.cursor(), integrals.cursor());
    let mut window = |t: i64| {
        let [committed_from, asked_from] = window_start.to(t);
        let [committed_to, asked_to] = window_end.to(t + w);
        let asked: [u128; 3] = std::array::from_fn(|d| asked_to[d] - asked_from[d]);
        Window {
            start_ms: t,
            held: std::array::from_fn(|d| committed_to[d] - committed_from[d] + asked[d]),
            asked,
        }
    };
    let over = |window: &Window, dimension: Dimension| {
        let d = dimension.index();
        window.asked[d] > 0 && window.held[d] > most[d]
    };
    let refuse = |window: &Window, dimension: Dimension| {
        Err(average_refusal(admission, quota, window, dimension))
    };

    // The breakpoints of F: every point time s and s − W, merged in order,
    // from start − W to end. Windows starting outside them do not overlap
    // the candidate; both are breakpoints (start and end are point times),
    // where the overlap is zero, so no stretch that matters is cut.
    let (first, last) = (support.0 - w, support.1);
    let mut at = times.partition_point(|&s| s < first);
    let mut at_minus_w = times.partition_point(|&s| s - w < first);
    let mut previous: Option<Window> = None;
    loop {
        let s = times.get(at).copied().unwrap_or(i64::MAX);
        let s_minus_w = times.get(at_minus_w).map_or(i64::MAX, |&s| s - w);
        let t = s.min(s_minus_w);
        if t > last {
            break;
        }
        at += usize::from(s == t);
        at_minus_w += usize::from(s_minus_w == t);

        let current = window(t);
        // Between two breakpoints F is linear, so its largest value over the
        // windows that overlap the candidate is at an end of that stretch, or
        // 1 ms inside it where the overlap begins or ends at the breakpoint.
        if let Some(previous) = previous.filter(|p| t - p.start_ms >= 2) {
            for dimension in DIMENSIONS {
                let d = dimension.index();
                let (before, now) = (previous.asked[d] > 0, current.asked[d] > 0);
                if before != now {
                    let inside = window(if now { previous.start_ms + 1 } else { t - 1 });
                    if over(&inside, dimension) {
                        return refuse(&inside, dimension);
                    }
                }
            }
        }
        if let Some(dimension) = DIMENSIONS.into_iter().find(|&d| over(&current, d)) {
            return refuse(&current, dimension);
        }
        previous = Some(current);
    }
    Ok(())
}

fn average_refusal(
    admission: &Admission,
    quota: Quota,
    window: &Window,
    dimension: Dimension,
) -> Rejection {
    let d = dimension.index();
    let capacity = admission.settings().capacity()[dimension];
    let (unit, time_unit) = (dimension.unit(), dimension.time_unit());
    let w = quota.window_ms as u128;
    let held = window.held[d];
    // In millionths of a unit: exact.
    let average_limit = u128::from(capacity) * u128::from(quota.average_ppm);
    let limit = average_limit * w;
    Rejection::AverageQuota(format!(
        "user {} would hold {held} {time_unit} over the window [{}, {}) ms, an average of {} {unit}; \
         average-capacity {}% of {capacity} {unit} over {w} ms allows {} {time_unit}, an average of {} {unit} \
         (over by {} {time_unit})",
        admission.user(),
        window.start_ms,
        window.start_ms + quota.window_ms,
        decimal(held * 1000 / w, 3),
        percent(quota.average_ppm),
        decimal(limit, 6),
        decimal(average_limit, 6),
        decimal(held * MILLION - limit, 6),
    ))
}

/// What the user could still be given at each instant of [from, to): the
/// least of what the plan has left (capacity − plan-committed) and what the
/// instantaneous limit leaves them (⌊instantaneous-max-capacity % ×
/// capacity⌋ − user-committed), at least 0. The average limit is left to
/// [`validate`]: how much more a user may hold at one instant depends on how
/// long they hold it.
pub fn available(admission: &Admission) -> Timeline {
    let quota = Quota::of(admission.settings());
    let capacity = admission.settings().capacity();
    // At most the capacity, so it fits back in u64.
    let user_limit =
        capacity.map(|c| (u128::from(c) * u128::from(quota.instantaneous_ppm) / MILLION) as u64);
    let mut free = TimelineBuilder::new();
    let lines = [admission.plan_committed(), admission.user_committed()];
    for stretch in Walk::new(lines, admission.from_ms(), admission.to_ms()) {
        let [plan_held, user_held] = stretch.amounts;
        let plan_room = capacity.minus(plan_held);
        let user_room = user_limit.minus(user_held);
        free.push(stretch.from_ms, plan_room.min(user_room));
    }
    free.finish(admission.to_ms())
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_policy::sharing::MAX_TIME_MS;
    use weft_policy::sharing::wit::{Admission, PlanSettings};
    use weft_policy::{Malformed, Resources};

    /// `validate` on the admission the host would send, checked by the SDK.
    fn validate(admission: &Admission) -> Result<(), Rejection> {
        super::validate(&checked(admission))
    }

    /// `available` on the admission the host would send, or why the SDK
    /// refuses it.
    fn available(admission: &Admission) -> Result<Timeline, Malformed> {
        let admission = weft_policy::sharing::Admission::new(admission.clone())?;
        Ok(super::available(&admission))
    }

    /// `window` on the settings the host would send.
    fn window(settings: &PlanSettings) -> i64 {
        super::window(&weft_policy::sharing::PlanSettings::new(settings.clone()).unwrap())
    }

    fn checked(admission: &Admission) -> weft_policy::sharing::Admission {
        weft_policy::sharing::Admission::new(admission.clone()).expect("a well-formed admission")
    }

    const HOUR: i64 = 3_600_000;
    const DAY: i64 = 24 * HOUR;

    fn res(memory_mb: u64, vcores: u64, gpus: u64) -> Resources {
        Resources::new(memory_mb, vcores, gpus)
    }

    /// `amount` over [start, end), zero elsewhere.
    fn block(start: i64, end: i64, amount: Resources) -> Timeline {
        Timeline::from_steps(&[(start, amount), (end, res(0, 0, 0))])
    }

    /// Both timelines' amounts added, at every instant.
    fn sum(a: &Timeline, b: &Timeline) -> Timeline {
        let mut total = TimelineBuilder::new();
        for stretch in Walk::new([a, b], -MAX_TIME_MS, MAX_TIME_MS) {
            let [x, y] = stretch.amounts;
            total.push(stretch.from_ms, x.plus(y));
        }
        total.finish(MAX_TIME_MS)
    }

    /// Seed 004's kind of queue: root.dedicated, 100 GB, 100 vcores, 8 GPUs;
    /// a day's window; 50 % at any instant and 25 % on average per user.
    fn dedicated() -> PlanSettings {
        PlanSettings {
            queue: "root.dedicated".into(),
            capacity: res(102_400, 100, 8),
            reservation_window_ms: DAY,
            instantaneous_max_capacity: 50.0,
            average_capacity: 25.0,
        }
    }

    /// A small queue with round figures: 1000 MB, 10 vcores, no GPUs.
    fn small(window_ms: i64, instantaneous: f64, average: f64) -> PlanSettings {
        PlanSettings {
            queue: "root.small".into(),
            capacity: res(1000, 10, 0),
            reservation_window_ms: window_ms,
            instantaneous_max_capacity: instantaneous,
            average_capacity: average,
        }
    }

    /// What the host sends: timelines on [start − W, end + W) of the candidate.
    fn ask(
        settings: &PlanSettings,
        user: &str,
        candidate: Timeline,
        user_committed: &Timeline,
        plan_committed: &Timeline,
    ) -> Admission {
        let w = window(settings);
        let (start, end) = match (candidate.at_ms.first(), candidate.at_ms.last()) {
            (Some(&start), Some(&end)) => (start, end),
            _ => (0, 0),
        };
        Admission {
            settings: settings.clone(),
            user: user.into(),
            reservation_id: "reservation_1700000000000_0042".into(),
            from_ms: start - w,
            to_ms: end + w,
            candidate,
            user_committed: user_committed.clone(),
            plan_committed: plan_committed.clone(),
            context: Default::default(),
        }
    }

    fn refusal(outcome: Result<(), Rejection>) -> String {
        outcome.expect_err("refused").message().to_string()
    }

    #[test]
    fn over_commit_comes_first() {
        // Bob holds 80 GB over [0, 4 h); alice asks for 60 GB over [1 h, 2 h):
        // too much for the plan, and for her instantaneous share too.
        let bob = block(0, 4 * HOUR, res(81_920, 10, 0));
        let admission = ask(
            &dedicated(),
            "alice",
            block(HOUR, 2 * HOUR, res(61_440, 1, 0)),
            &Timeline::default(),
            &bob,
        );
        match validate(&admission) {
            Err(Rejection::OverCommit(message)) => assert!(
                message.contains("plan root.dedicated would hold 143360 MB at t=3600000 ms (81920 MB committed + 61440 MB asked); its capacity is 102400 MB (over by 40960 MB)"),
                "{message}"
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn instantaneous_limit_below_at_and_above() {
        // 50 % of 102400 MB, 100 vcores, 8 GPUs is 51200 MB, 50 vcores, 4 GPUs.
        // Alice holds 40 GB, 40 vcores, 2 GPUs over [0, 2 h) and asks over [1 h, 3 h).
        let settings = PlanSettings {
            average_capacity: 100.0,
            ..dedicated()
        };
        let alice = block(0, 2 * HOUR, res(40_960, 40, 2));
        let cases = [
            (res(10_239, 9, 1), None),
            (res(10_240, 10, 2), None), // exactly at the limit in every dimension
            (
                res(10_241, 0, 0),
                Some(
                    "user alice would hold 51201 MB at t=3600000 ms (40960 MB committed + 10241 MB asked); instantaneous-max-capacity 50% of 102400 MB is 51200 MB (over by 1 MB)",
                ),
            ),
            (
                res(20_480, 0, 0),
                Some(
                    "user alice would hold 61440 MB at t=3600000 ms (40960 MB committed + 20480 MB asked); instantaneous-max-capacity 50% of 102400 MB is 51200 MB (over by 10240 MB)",
                ),
            ),
            (
                res(0, 11, 0),
                Some(
                    "would hold 51 vcores at t=3600000 ms (40 vcores committed + 11 vcores asked); instantaneous-max-capacity 50% of 100 vcores is 50 vcores (over by 1 vcores)",
                ),
            ),
            (
                res(0, 0, 3),
                Some(
                    "would hold 5 GPUs at t=3600000 ms (2 GPUs committed + 3 GPUs asked); instantaneous-max-capacity 50% of 8 GPUs is 4 GPUs (over by 1 GPUs)",
                ),
            ),
        ];
        for (asked, expected) in cases {
            let admission = ask(
                &settings,
                "alice",
                block(HOUR, 3 * HOUR, asked),
                &alice,
                &alice,
            );
            match (validate(&admission), expected) {
                (Ok(()), None) => {}
                (Err(Rejection::InstantaneousQuota(message)), Some(words)) => {
                    assert!(message.contains(words), "{message}\nlacks\n{words}")
                }
                (outcome, expected) => panic!("{asked:?}: {outcome:?}, expected {expected:?}"),
            }
        }
    }

    #[test]
    fn instantaneous_limit_in_fractions() {
        // 33.3 % is 333,000 ppm: of 1000 MB that is 333 MB, of 1001 MB 333.333 MB.
        for (capacity, limit_words) in [
            (1000, "is 333 MB (over by 1 MB)"),
            (1001, "is 333.333 MB (over by 0.667 MB)"),
        ] {
            let settings = PlanSettings {
                capacity: res(capacity, 10, 0),
                ..small(HOUR, 33.3, 100.0)
            };
            let none = Timeline::default();
            let at_limit = ask(
                &settings,
                "alice",
                block(0, HOUR, res(333, 0, 0)),
                &none,
                &none,
            );
            assert_eq!(validate(&at_limit), Ok(()));
            let over = ask(
                &settings,
                "alice",
                block(0, HOUR, res(334, 0, 0)),
                &none,
                &none,
            );
            let message = refusal(validate(&over));
            assert!(
                message.contains(&format!(
                    "instantaneous-max-capacity 33.3% of {capacity} MB {limit_words}"
                )),
                "{message}"
            );
        }
    }

    #[test]
    fn average_limit_below_at_and_a_hair_above() {
        // 25 % of 102400 MB over a day: 25600 MB on average, 2,211,840,000,000 MB·ms.
        // Half the queue (the instantaneous maximum) for 12 h is exactly that.
        let none = Timeline::default();
        let below = ask(
            &dedicated(),
            "alice",
            block(0, 12 * HOUR, res(51_199, 0, 0)),
            &none,
            &none,
        );
        assert_eq!(validate(&below), Ok(()));
        let at = ask(
            &dedicated(),
            "alice",
            block(0, 12 * HOUR, res(51_200, 0, 0)),
            &none,
            &none,
        );
        assert_eq!(validate(&at), Ok(()));
        // 1 MB for 1 ms more.
        let hair = Timeline::from_steps(&[
            (0, res(51_200, 0, 0)),
            (12 * HOUR, res(1, 0, 0)),
            (12 * HOUR + 1, res(0, 0, 0)),
        ]);
        let over = ask(&dedicated(), "alice", hair, &none, &none);
        match validate(&over) {
            Err(Rejection::AverageQuota(message)) => assert_eq!(
                message,
                "user alice would hold 2211840000001 MB·ms over the window [-43199999, 43200001) ms, \
                 an average of 25600 MB; average-capacity 25% of 102400 MB over 86400000 ms allows \
                 2211840000000 MB·ms, an average of 25600 MB (over by 1 MB·ms)"
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn average_limit_in_fractions() {
        // 33.3 % of 1001 MB over 1000 ms allows 333,333 MB·ms (333.333 MB on average).
        let settings = PlanSettings {
            capacity: res(1001, 10, 0),
            ..small(1000, 100.0, 33.3)
        };
        let none = Timeline::default();
        // 668 MB for 499 ms, then 2 MB for 1 ms: 333,334 MB·ms.
        let over = Timeline::from_steps(&[
            (0, res(668, 0, 0)),
            (499, res(2, 0, 0)),
            (500, res(0, 0, 0)),
        ]);
        let message = refusal(validate(&ask(&settings, "alice", over, &none, &none)));
        assert!(
            message.contains("allows 333333 MB·ms, an average of 333.333 MB (over by 1 MB·ms)"),
            "{message}"
        );
        // Over 999 ms the allowance is 332,999.667 MB·ms.
        let shorter = PlanSettings {
            reservation_window_ms: 999,
            ..settings.clone()
        };
        let over = block(0, 500, res(666, 0, 0)); // 333,000 MB·ms
        let message = refusal(validate(&ask(&shorter, "alice", over, &none, &none)));
        assert!(
            message.contains(
                "allows 332999.667 MB·ms, an average of 333.333 MB (over by 0.333 MB·ms)"
            ),
            "{message}"
        );
        let within = block(0, 499, res(668, 0, 0)); // 333,332 MB·ms
        assert_eq!(
            validate(&ask(&settings, "alice", within, &none, &none)),
            Ok(())
        );
    }

    #[test]
    fn a_window_overlapping_the_reservation_only_partly() {
        // W = 10 h at 50 % of 1000 MB: 5000 MB·h per window. Alice holds the
        // whole queue over [0, 4 h) (4000 MB·h) and asks over [8 h, 14 h).
        let settings = small(10 * HOUR, 100.0, 50.0);
        let alice = block(0, 4 * HOUR, res(1000, 0, 0));
        // 600 MB: no window holds all of it and more than 3600 MB·h of it, but
        // [0, 10 h) holds her 4000 and 2 h of it, 1200: 5200 MB·h.
        let over = ask(
            &settings,
            "alice",
            block(8 * HOUR, 14 * HOUR, res(600, 0, 0)),
            &alice,
            &alice,
        );
        let message = refusal(validate(&over));
        assert!(
            message.starts_with(
                "user alice would hold 18720000000 MB·ms over the window [0, 36000000) ms, an average of 520 MB; \
                 average-capacity 50% of 1000 MB over 36000000 ms allows 18000000000 MB·ms"
            ),
            "{message}"
        );
        // 500 MB: [0, 10 h) holds exactly 5000 MB·h.
        let at = ask(
            &settings,
            "alice",
            block(8 * HOUR, 14 * HOUR, res(500, 0, 0)),
            &alice,
            &alice,
        );
        assert_eq!(validate(&at), Ok(()));
    }

    #[test]
    fn admitted_excess_stands_but_is_not_added_to() {
        // Admitted under no-overcommit before a hot swap: alice holds the whole
        // queue for 20 h, twice the average any 10 h window allows.
        let settings = small(10 * HOUR, 100.0, 50.0);
        let alice = block(0, 20 * HOUR, res(1000, 0, 0));
        // No window over [30 h, 42 h) reaches her old holding: accepted.
        let later = ask(
            &settings,
            "alice",
            block(40 * HOUR, 42 * HOUR, res(100, 0, 0)),
            &alice,
            &alice,
        );
        assert_eq!(validate(&later), Ok(()));
        // Windows over [22 h, 24 h) from t = 12 h + 1 ms on also hold 8 h of
        // the old: refused at the first of them, 1 ms past the breakpoint.
        let close = ask(
            &settings,
            "alice",
            block(22 * HOUR, 24 * HOUR, res(100, 0, 0)),
            &alice,
            &alice,
        );
        let message = refusal(validate(&close));
        assert!(
            message.contains("over the window [43200001, 79200001) ms"),
            "{message}"
        );
        // Another user is not held to alice's past.
        let bob = ask(
            &settings,
            "bob",
            block(22 * HOUR, 24 * HOUR, res(100, 0, 0)),
            &Timeline::default(),
            &alice,
        );
        assert_eq!(validate(&bob), Ok(()));
    }

    #[test]
    fn submissions_accumulate_per_user() {
        // Each of alice's reservations holds 50 GB for 4 h: 204,800 MB·h, a
        // third of what a day's window allows her (614,400 MB·h).
        let settings = dedicated();
        let (mut plan, mut alice) = (Timeline::default(), Timeline::default());
        for (i, start) in [0, 4 * HOUR, 8 * HOUR].into_iter().enumerate() {
            let admission = ask(
                &settings,
                "alice",
                block(start, start + 4 * HOUR, res(51_200, 0, 0)),
                &alice,
                &plan,
            );
            assert_eq!(validate(&admission), Ok(()), "submission {i}");
            alice = sum(&alice, &admission.candidate);
            plan = sum(&plan, &admission.candidate);
        }
        // A fourth would make her day's holding 4/3 of the average.
        let fourth = ask(
            &settings,
            "alice",
            block(12 * HOUR, 16 * HOUR, res(51_200, 0, 0)),
            &alice,
            &plan,
        );
        assert!(matches!(validate(&fourth), Err(Rejection::AverageQuota(_))));
        // Bob asks for the same: his own holding is empty, the plan has room.
        let bob = ask(
            &settings,
            "bob",
            block(12 * HOUR, 16 * HOUR, res(51_200, 0, 0)),
            &Timeline::default(),
            &plan,
        );
        assert_eq!(validate(&bob), Ok(()));
        // Even beside alice: 50 + 50 GB is exactly the queue.
        let beside = ask(
            &settings,
            "bob",
            block(0, 4 * HOUR, res(51_200, 0, 0)),
            &Timeline::default(),
            &plan,
        );
        assert_eq!(validate(&beside), Ok(()));
        let too_much = ask(
            &settings,
            "bob",
            block(0, 4 * HOUR, res(51_201, 0, 0)),
            &Timeline::default(),
            &plan,
        );
        assert!(matches!(validate(&too_much), Err(Rejection::OverCommit(_))));
    }

    #[test]
    fn periodic_pattern() {
        // A recurring reservation, unrolled by the host: the whole 1000 MB for
        // 4 h every day for a week. Any day-long window holds 4000 MB·h of it;
        // 20 % average allows 4800.
        let settings = small(DAY, 100.0, 20.0);
        let mut daily = Timeline::default();
        for day in 0..7 {
            daily.push(day * DAY, res(1000, 0, 0));
            daily.push(day * DAY + 4 * HOUR, Resources::ZERO);
        }
        // 100 MB for 8 h between the blocks of day 2: 800 MB·h more, at the limit.
        let fits = ask(
            &settings,
            "alice",
            block(2 * DAY + 10 * HOUR, 2 * DAY + 18 * HOUR, res(100, 0, 0)),
            &daily,
            &daily,
        );
        assert_eq!(validate(&fits), Ok(()));
        // 1 ms longer: over by 100 MB·ms in the windows that hold all of it.
        let longer = ask(
            &settings,
            "alice",
            block(2 * DAY + 10 * HOUR, 2 * DAY + 18 * HOUR + 1, res(100, 0, 0)),
            &daily,
            &daily,
        );
        let message = refusal(validate(&longer));
        assert!(message.ends_with("(over by 100 MB·ms)"), "{message}");
    }

    #[test]
    fn empty_timelines() {
        let none = Timeline::default();
        // Nothing asked: accepted, whatever the user holds.
        let greedy = block(0, 10 * DAY, res(102_400, 100, 8));
        assert_eq!(
            validate(&ask(&dedicated(), "alice", none.clone(), &greedy, &greedy)),
            Ok(())
        );
        // Nothing held: a reservation within the limits is accepted.
        assert_eq!(
            validate(&ask(
                &dedicated(),
                "alice",
                block(0, HOUR, res(51_200, 50, 4)),
                &none,
                &none
            )),
            Ok(())
        );
        // And all of the instantaneous share is available.
        let mut open = ask(&dedicated(), "alice", none.clone(), &none, &none);
        (open.from_ms, open.to_ms) = (0, DAY);
        let free = available(&open).unwrap();
        assert_eq!(free.at_ms, [0, DAY]);
        assert_eq!(free.amount(0).to_array(), [51_200, 50, 4]);
    }

    #[test]
    fn available_is_the_least_of_plan_and_instantaneous_room() {
        let plan = Timeline::from_steps(&[
            (0, res(81_920, 80, 4)),
            (HOUR, res(61_440, 40, 6)),
            (2 * HOUR, res(40_960, 20, 2)),
            (3 * HOUR, res(0, 0, 0)),
        ]);
        let alice = block(HOUR, 3 * HOUR, res(40_960, 20, 2));
        let mut admission = ask(&dedicated(), "alice", Timeline::default(), &alice, &plan);
        (admission.from_ms, admission.to_ms) = (0, 4 * HOUR);
        let free = available(&admission).unwrap();
        let points: Vec<_> = (0..free.len())
            .map(|i| (free.at_ms[i], free.amount(i).to_array()))
            .collect();
        assert_eq!(
            points,
            [
                (0, [20_480, 20, 4]),        // the plan's room
                (HOUR, [10_240, 30, 2]),     // alice's room; [2 h, 3 h) is the same
                (3 * HOUR, [51_200, 50, 4]), // her whole share
                (4 * HOUR, [0, 0, 0]),
            ]
        );
        // A fractional share rounds down: 33.3 % of 1001 MB leaves 333 MB.
        let settings = PlanSettings {
            capacity: res(1001, 10, 0),
            ..small(HOUR, 33.3, 100.0)
        };
        let mut tiny = ask(
            &settings,
            "alice",
            Timeline::default(),
            &Timeline::default(),
            &Timeline::default(),
        );
        (tiny.from_ms, tiny.to_ms) = (0, HOUR);
        assert_eq!(available(&tiny).unwrap().amount(0).to_array(), [333, 3, 0]);
    }

    #[test]
    fn malformed_admissions_and_settings_are_refused_by_the_sdk() {
        // What used to be refused here as "malformed admission" is now the
        // SDK's to refuse, before the policy runs (a trap with a message).
        let none = Timeline::default();
        let good = ask(
            &dedicated(),
            "alice",
            block(0, HOUR, res(1, 0, 0)),
            &none,
            &none,
        );
        let mut unsorted = good.clone();
        unsorted.user_committed = Timeline::from_steps(&[(HOUR, res(1, 0, 0)), (0, res(0, 0, 0))]);
        let mut mismatched = good.clone();
        mismatched.plan_committed = block(0, HOUR, res(1, 0, 0));
        mismatched.plan_committed.memory_mb.push(7);
        let mut over_100 = good.clone();
        over_100.settings.instantaneous_max_capacity = 150.0;
        let mut not_a_number = good.clone();
        not_a_number.settings.average_capacity = f64::NAN;
        let mut negative_window = good.clone();
        negative_window.settings.reservation_window_ms = -1;
        // Out of order far from the candidate, where validate would not look.
        let mut far = good.clone();
        far.from_ms = -30 * DAY;
        far.plan_committed = Timeline::from_steps(&[
            (-10 * DAY, res(1, 0, 0)),
            (-20 * DAY, res(2, 0, 0)),
            (0, res(3, 0, 0)),
            (HOUR, res(0, 0, 0)),
        ]);
        let cases = [
            (unsorted, "user-committed: at-ms must strictly increase"),
            (mismatched, "plan-committed: its columns differ in length"),
            (
                over_100,
                "settings: instantaneous-max-capacity is 150; it must be a percentage from 0 to 100",
            ),
            (not_a_number, "settings: average-capacity is NaN"),
            (negative_window, "settings: reservation-window is -1 ms"),
            (
                far,
                "plan-committed: at-ms must strictly increase, but at-ms[0] is -864000000 and at-ms[1] is -1728000000",
            ),
        ];
        for (admission, words) in cases {
            let message = available(&admission).unwrap_err().to_string();
            assert!(message.contains(words), "{message}");
        }
        assert_eq!(validate(&good), Ok(()));
    }

    #[test]
    fn window_and_parameters() {
        use weft_policy::PolicyKind;
        use weft_policy::params::configure_with;
        assert_eq!(window(&dedicated()), DAY);
        assert_eq!(window(&small(0, 50.0, 50.0)), 0);
        assert_eq!(
            configure_with::<CapacityOverTime>(PolicyKind::Sharing, &[]),
            Ok(CapacityOverTime)
        );
        let refusal =
            configure_with::<CapacityOverTime>(PolicyKind::Sharing, &[("average-capacity", "10")])
                .unwrap_err();
        assert!(
            refusal.contains("(given average-capacity=10); capacity-over-time takes no parameters"),
            "{refusal}"
        );
    }

    /// A small deterministic generator (xorshift), so failures replay.
    struct Random(u64);

    impl Random {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }

        fn timeline(&mut self, points: u64, span: i64, top: u64) -> Timeline {
            let mut times: Vec<i64> = (0..self.below(points + 1))
                .map(|_| self.below(span as u64) as i64)
                .collect();
            times.sort_unstable();
            times.dedup();
            let mut timeline = Timeline::default();
            for (i, &at) in times.iter().enumerate() {
                let last = i + 1 == times.len();
                let amount = |r: &mut Random| if last { 0 } else { r.below(top + 1) };
                let amounts = [amount(self), amount(self), amount(self)];
                timeline.push(at, Resources::from_array(amounts));
            }
            timeline
        }
    }

    /// The amount a timeline holds at `t`, zero outside the admission's range.
    fn held_at(admission: &Admission, timeline: &Timeline, t: i64) -> [u64; 3] {
        if (admission.from_ms..admission.to_ms).contains(&t) {
            timeline.amount_at(t).to_array()
        } else {
            [0; 3]
        }
    }

    /// Whether the window [t, t + W) overlaps the candidate in a dimension
    /// and is over the average there, summed millisecond by millisecond.
    fn window_over(admission: &Admission, quota: Quota, t: i64) -> bool {
        let capacity = admission.settings.capacity.to_array();
        let (mut held, mut asked) = ([0u128; 3], [0u128; 3]);
        for x in t..t + quota.window_ms {
            let user = held_at(admission, &admission.user_committed, x);
            let candidate = held_at(admission, &admission.candidate, x);
            for d in 0..3 {
                held[d] += u128::from(user[d] + candidate[d]);
                asked[d] += u128::from(candidate[d]);
            }
        }
        (0..3).any(|d| {
            let limit =
                u128::from(capacity[d]) * u128::from(quota.average_ppm) * quota.window_ms as u128;
            asked[d] > 0 && held[d] * MILLION > limit
        })
    }

    /// The rules, instant by instant and window by window, with no
    /// cleverness: the first limit broken (0 over-commit, 1 instantaneous,
    /// 2 average) and the first instant or window start it is broken at.
    fn brute_force(admission: &Admission, quota: Quota) -> Option<(usize, i64)> {
        let (from, to, w) = (admission.from_ms, admission.to_ms, quota.window_ms);
        let capacity = admission.settings.capacity.to_array();
        for t in from..to {
            let plan = held_at(admission, &admission.plan_committed, t);
            let asked = held_at(admission, &admission.candidate, t);
            if (0..3).any(|d| asked[d] > 0 && plan[d] + asked[d] > capacity[d]) {
                return Some((0, t));
            }
        }
        for t in from..to {
            let user = held_at(admission, &admission.user_committed, t);
            let asked = held_at(admission, &admission.candidate, t);
            let limit = |d: usize| u128::from(capacity[d]) * u128::from(quota.instantaneous_ppm);
            if (0..3).any(|d| asked[d] > 0 && u128::from(user[d] + asked[d]) * MILLION > limit(d)) {
                return Some((1, t));
            }
        }
        ((from - w - 1)..=(to + 1))
            .find(|&t| window_over(admission, quota, t))
            .map(|t| (2, t))
    }

    #[test]
    fn agrees_with_a_brute_force_check() {
        let mut random = Random(0x5eed_0004);
        let instantaneous = [33.3, 50.0, 66.7, 100.0];
        let average = [0.0, 12.5, 25.0, 33.3, 50.0, 66.7, 100.0];
        let mut refused = [0; 3];
        for case in 0..20_000 {
            let settings = PlanSettings {
                queue: "root.q".into(),
                capacity: res(4 + random.below(20), 4 + random.below(20), random.below(8)),
                reservation_window_ms: random.below(12) as i64,
                instantaneous_max_capacity: instantaneous[random.below(4) as usize],
                average_capacity: average[random.below(7) as usize],
            };
            let candidate = random.timeline(4, 30, 4);
            let user_committed = random.timeline(6, 50, 6);
            let plan_committed = sum(&user_committed, &random.timeline(4, 50, 3));
            let mut admission = ask(
                &settings,
                "alice",
                candidate,
                &user_committed,
                &plan_committed,
            );
            // Sometimes a range wider than the host's, or none at all.
            admission.from_ms -= random.below(3) as i64;
            admission.to_ms += random.below(3) as i64;
            let quota = Quota::of(checked(&admission).settings());
            let expected = brute_force(&admission, quota);
            let outcome = validate(&admission);
            let kind = match &outcome {
                Ok(()) => None,
                Err(Rejection::OverCommit(_)) => Some(0),
                Err(Rejection::InstantaneousQuota(_)) => Some(1),
                Err(Rejection::AverageQuota(_)) => Some(2),
            };
            assert_eq!(
                kind,
                expected.map(|(kind, _)| kind),
                "case {case}: {admission:?}\n{outcome:?}"
            );
            if let (Err(rejection), Some((kind, first))) = (&outcome, expected) {
                refused[kind] += 1;
                let message = rejection.message();
                if kind < 2 {
                    // The first instant over the limit.
                    assert!(
                        message.contains(&format!(" at t={first} ms ")),
                        "case {case}: {message}, expected t={first}"
                    );
                } else {
                    // A window over the limit: at or after the first, at a
                    // breakpoint or 1 ms beside one rather than the first.
                    let start: i64 = message
                        .split("over the window [")
                        .nth(1)
                        .and_then(|s| s.split(',').next())
                        .unwrap()
                        .parse()
                        .unwrap();
                    assert!(
                        start >= first && window_over(&admission, quota, start),
                        "case {case}: {message}, first over at {first}"
                    );
                }
            }
        }
        // Every kind of refusal was exercised.
        assert!(refused.iter().all(|&n| n > 1000), "{refused:?}");
    }
}
