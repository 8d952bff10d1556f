//! no-overcommit's decisions on seed 004's kind of queue: refusals in each
//! dimension at their first instant, excess it does not add to, empty
//! timelines, and what it offers. (Its library is the Rust sharing
//! template's lib.rs, whose own tests are the short tutorial ones.)

use no_overcommit::NoOverCommit;
use weft_policy::sharing::{Admission, Rejection, Timeline, wit};
use weft_policy::{Resources, SharingPolicy};

const HOUR: i64 = 3_600_000;

fn res(memory_mb: u64, vcores: u64, gpus: u64) -> Resources {
    Resources::new(memory_mb, vcores, gpus)
}

/// `amount` over [start, end), zero elsewhere.
fn block(start: i64, end: i64, amount: Resources) -> Timeline {
    Timeline::from_steps(&[(start, amount), (end, res(0, 0, 0))])
}

/// Seed 004's kind of queue: root.dedicated with 100 GB, 100 vcores, 8 GPUs.
fn record(candidate: Timeline, plan_committed: Timeline) -> wit::Admission {
    wit::Admission {
        settings: wit::PlanSettings {
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
        context: wit::PlanContext::default(),
    }
}

fn admission(candidate: Timeline, plan_committed: Timeline) -> Admission {
    Admission::new(record(candidate, plan_committed)).expect("a well-formed admission")
}

fn validate(admission: &Admission) -> Result<(), Rejection> {
    NoOverCommit.validate(admission)
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
    let free = NoOverCommit.available(&nothing);
    assert_eq!(free.at_ms, [0, 24 * HOUR]);
    assert_eq!(free.amount(0), res(102_400, 100, 8));
    assert_eq!(free.amount(1), res(0, 0, 0));
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
    let mut asking = record(Timeline::default(), committed);
    asking.to_ms = 4 * HOUR;
    let free = NoOverCommit.available(&Admission::new(asking).unwrap());
    let points: Vec<_> = (0..free.len())
        .map(|i| (free.at_ms[i], free.amount(i)))
        .collect();
    assert_eq!(
        points,
        [
            (0, res(92_160, 90, 8)),
            (HOUR, res(61_440, 60, 4)),
            (2 * HOUR, res(0, 50, 0)),
            (3 * HOUR, res(102_400, 100, 8)),
            (4 * HOUR, res(0, 0, 0)),
        ]
    );
}

#[test]
fn a_malformed_admission_never_reaches_the_policy() {
    // Out of order where the candidate is: the SDK refuses the admission
    // (in WebAssembly, a trap with this message in the host's log).
    let unsorted = record(
        block(0, 2 * HOUR, res(1, 0, 0)),
        Timeline::from_steps(&[
            (0, res(1, 0, 0)),
            (HOUR, res(2, 0, 0)),
            (HOUR / 2, res(0, 0, 0)),
        ]),
    );
    assert_eq!(
        Admission::new(unsorted).unwrap_err().message(),
        "plan-committed: at-ms must strictly increase, but at-ms[1] is 3600000 and at-ms[2] is 1800000"
    );
}
