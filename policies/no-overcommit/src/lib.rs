//! `no-overcommit`: the simplest reservation sharing policy, YARN's
//! NoOverCommitPolicy. A reservation enters a reservable queue's plan only if
//! the plan then never holds more than the queue's capacity — at any instant,
//! in any resource (memory, vcores, GPUs). Who holds what does not matter.
//!
//! The host asks three things (world `sharing-policy`, `wit/sharing.wit`):
//!
//! 1. *How far around a reservation do you look?* [`window`]: 0, the policy
//!    has no memory; the host cuts the timelines to the reservation itself.
//! 2. *May this reservation enter?* [`validate`]: refused with
//!    `over-commit` at the first instant where plan-committed + candidate
//!    exceeds the capacity in a resource the candidate asks for.
//! 3. *What could the user still get?* [`available`]: capacity −
//!    plan-committed over [from, to), never below 0.
//!
//! The plan model and the walk over timelines live in [`plan`], which
//! `capacity-over-time` compiles in too. Everything is plain Rust, unit tested
//! natively; the WebAssembly glue is `component.rs`.

#[cfg(target_arch = "wasm32")]
mod component;
pub mod plan;

pub use plan::{Admission, Malformed, PlanSettings, Rejection, Resources, Timeline};
use plan::{TimelineBuilder, Walk};

/// Checks the parameters given at load. This policy takes none: the capacity
/// is the queue's, so any key is refused with a message naming it.
pub fn configure(params: &[(String, String)]) -> Result<(), String> {
    match params.first() {
        None => Ok(()),
        Some((key, value)) => Err(format!(
            "no-overcommit has no parameters (given {key}={value}); the plan's capacity is its queue's"
        )),
    }
}

/// How far before and after a reservation the policy looks: not at all.
pub fn window(_settings: &PlanSettings) -> i64 {
    0
}

/// Accepts the candidate, or refuses it with `over-commit`; a malformed
/// admission is refused too (see [`Malformed`]).
pub fn validate(admission: &Admission) -> Result<(), Rejection> {
    admission.check_for_validate(0)?;
    validate_checked(admission)
}

/// [`validate`] for an admission that passed
/// [`Admission::check_for_validate`] with a window of 0.
pub fn validate_checked(admission: &Admission) -> Result<(), Rejection> {
    plan::check_capacity(admission)
}

/// What the plan could still take at each instant of [from, to): capacity −
/// plan-committed, at least 0, ending with a zero point at `to`.
pub fn available(admission: &Admission) -> Result<Timeline, Malformed> {
    admission.check()?;
    let capacity = admission.settings.capacity.amounts();
    let mut free = TimelineBuilder::new();
    let walk = Walk::new(
        [&admission.plan_committed],
        admission.from_ms,
        admission.to_ms,
    );
    for stretch in walk {
        let [committed] = stretch.amounts;
        free.push(stretch.from_ms, plan::saturating_sub(capacity, committed));
    }
    Ok(free.finish(admission.to_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: i64 = 3_600_000;

    fn res(memory_mb: u64, vcores: u64, gpus: u64) -> Resources {
        Resources::new(memory_mb, vcores, gpus)
    }

    /// `amount` over [start, end), zero elsewhere.
    fn block(start: i64, end: i64, amount: Resources) -> Timeline {
        Timeline::from_steps(&[(start, amount), (end, res(0, 0, 0))])
    }

    /// Seed 004's kind of queue: root.dedicated with 100 GB, 100 vcores, 8 GPUs.
    fn admission(candidate: Timeline, plan_committed: Timeline) -> Admission {
        Admission {
            settings: PlanSettings {
                queue: "root.dedicated".into(),
                capacity: res(102_400, 100, 8),
                reservation_window_ms: 24 * HOUR,
                instantaneous_max_capacity: 50.0,
                average_capacity: 25.0,
            },
            user: "alice".into(),
            reservation_id: "reservation_1700000000000_0001".into(),
            from_ms: 0,
            to_ms: 24 * HOUR,
            candidate,
            user_committed: Timeline::default(),
            plan_committed,
        }
    }

    #[test]
    fn over_commit_in_each_dimension() {
        // Bob's reservation holds 80 GB, 80 vcores and 6 GPUs over [1 h, 3 h).
        let committed = block(HOUR, 3 * HOUR, res(81_920, 80, 6));
        // (what alice asks over [2 h, 4 h), the refusal's words or None)
        let cases = [
            (res(20_480, 20, 2), None), // exactly the capacity in every dimension
            (
                res(20_481, 0, 0),
                Some(
                    "plan root.dedicated would hold 102401 MB at t=7200000 ms (81920 MB committed + 20481 MB asked); its capacity is 102400 MB (over by 1 MB)",
                ),
            ),
            (
                res(0, 21, 0),
                Some(
                    "would hold 101 vcores at t=7200000 ms (80 vcores committed + 21 vcores asked); its capacity is 100 vcores (over by 1 vcores)",
                ),
            ),
            (
                res(0, 0, 3),
                Some(
                    "would hold 9 GPUs at t=7200000 ms (6 GPUs committed + 3 GPUs asked); its capacity is 8 GPUs (over by 1 GPUs)",
                ),
            ),
        ];
        for (asked, refusal) in cases {
            let admission = admission(block(2 * HOUR, 4 * HOUR, asked), committed.clone());
            match (validate(&admission), refusal) {
                (Ok(()), None) => {}
                (Err(Rejection::OverCommit(message)), Some(words)) => {
                    assert!(message.contains(words), "{message}\nlacks\n{words}")
                }
                (outcome, expected) => panic!("{asked:?}: {outcome:?}, expected {expected:?}"),
            }
        }
    }

    #[test]
    fn excess_is_reported_at_its_first_instant() {
        // Full from 5 h to 6 h only: a candidate over [0, 10 h) collides there.
        let committed = block(5 * HOUR, 6 * HOUR, res(102_400, 0, 0));
        let admission = admission(block(0, 10 * HOUR, res(1, 0, 0)), committed);
        let message = validate(&admission).unwrap_err().message().to_string();
        assert!(message.contains("at t=18000000 ms"), "{message}");
    }

    #[test]
    fn excess_the_candidate_adds_nothing_to_stands() {
        // The plan already holds 10 GPUs of 8 (the queue shrank); a
        // reservation for memory alone does not make that worse.
        let committed = block(0, 10 * HOUR, res(0, 0, 10));
        let memory_only = admission(block(HOUR, 2 * HOUR, res(1024, 1, 0)), committed.clone());
        assert_eq!(validate(&memory_only), Ok(()));
        let one_more_gpu = admission(block(HOUR, 2 * HOUR, res(1024, 1, 1)), committed);
        assert!(matches!(
            validate(&one_more_gpu),
            Err(Rejection::OverCommit(_))
        ));
    }

    #[test]
    fn empty_timelines() {
        // Nothing asked, nothing committed: accepted, and all is available.
        let nothing = admission(Timeline::default(), Timeline::default());
        assert_eq!(validate(&nothing), Ok(()));
        let free = available(&nothing).unwrap();
        assert_eq!(free.at_ms, [0, 24 * HOUR]);
        assert_eq!(free.amounts(0), [102_400, 100, 8]);
        assert_eq!(free.amounts(1), [0, 0, 0]);
        // A whole-capacity reservation on an empty plan fits.
        let whole = admission(block(0, HOUR, res(102_400, 100, 8)), Timeline::default());
        assert_eq!(validate(&whole), Ok(()));
    }

    #[test]
    fn available_is_capacity_minus_plan() {
        let committed = Timeline::from_steps(&[
            (-HOUR, res(10_240, 10, 0)), // began before the range
            (HOUR, res(40_960, 40, 4)),
            (2 * HOUR, res(204_800, 50, 8)), // over capacity in memory: 0 left, not negative
            (3 * HOUR, res(0, 0, 0)),
        ]);
        let mut asking = admission(Timeline::default(), committed);
        asking.to_ms = 4 * HOUR;
        let free = available(&asking).unwrap();
        let points: Vec<_> = (0..free.len())
            .map(|i| (free.at_ms[i], free.amounts(i)))
            .collect();
        assert_eq!(
            points,
            [
                (0, [92_160, 90, 8]),
                (HOUR, [61_440, 60, 4]),
                (2 * HOUR, [0, 50, 0]),
                (3 * HOUR, [102_400, 100, 8]),
                (4 * HOUR, [0, 0, 0]),
            ]
        );
    }

    #[test]
    fn malformed_admissions_are_refused_not_trapped() {
        // Out of order where the candidate is, columns of different lengths.
        let mut unsorted = admission(block(0, 2 * HOUR, res(1, 0, 0)), Timeline::default());
        unsorted.plan_committed = Timeline::from_steps(&[
            (0, res(1, 0, 0)),
            (HOUR, res(2, 0, 0)),
            (HOUR / 2, res(0, 0, 0)),
        ]);
        let mut mismatched = admission(block(0, HOUR, res(1, 0, 0)), Timeline::default());
        mismatched.candidate.gpus.clear();
        let cases = [
            (
                unsorted,
                "plan-committed: at-ms must strictly increase, but at-ms[1] is 3600000 and at-ms[2] is 1800000",
            ),
            (
                mismatched,
                "candidate: its columns differ in length (2 at-ms, 2 memory-mb, 2 vcores, 0 gpus)",
            ),
        ];
        for (bad, words) in cases {
            match validate(&bad) {
                Err(Rejection::OverCommit(message)) => {
                    assert_eq!(message, format!("malformed admission: {words}"))
                }
                other => panic!("{other:?}"),
            }
            assert_eq!(available(&bad).unwrap_err().0, words);
        }
    }

    #[test]
    fn validate_reads_the_plan_only_where_the_candidate_is() {
        // Out of order hours after the candidate: validate never reads it
        // (and does not trap); available reads all of it and says so.
        let mut late = admission(block(0, HOUR, res(1, 0, 0)), Timeline::default());
        late.plan_committed =
            Timeline::from_steps(&[(3 * HOUR, res(1, 0, 0)), (2 * HOUR, res(0, 0, 0))]);
        assert_eq!(validate(&late), Ok(()));
        assert!(
            available(&late)
                .unwrap_err()
                .0
                .contains("at-ms must strictly increase")
        );
    }

    #[test]
    fn no_window_and_no_parameters() {
        assert_eq!(
            window(&admission(Timeline::default(), Timeline::default()).settings),
            0
        );
        assert_eq!(configure(&[]), Ok(()));
        let refusal = configure(&[("capacity".into(), "50".into())]).unwrap_err();
        assert!(
            refusal.contains("no parameters (given capacity=50)"),
            "{refusal}"
        );
    }
}
