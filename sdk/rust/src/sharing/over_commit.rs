//! The rule every sharing policy keeps (YARN's NoOverCommitPolicy): a plan
//! never holds more than its queue's capacity, at any instant, in any
//! resource. `no-overcommit` is this rule alone; `capacity-over-time`
//! checks it before its own limits.

use crate::resources::DIMENSIONS;

use super::admission::Admission;
use super::timeline::Walk;
use super::wit::Rejection;

/// Wherever the candidate holds some of a resource, plan-committed plus
/// candidate stays within the capacity; refuses the first excess in time
/// with `over-commit`. A dimension at an instant where the candidate holds
/// none of it is not its doing: an excess already there (say, after the
/// capacity shrank) stands and does not refuse it.
pub fn check_over_commit(admission: &Admission) -> Result<(), Rejection> {
    let Some((start, end)) = admission.candidate_support() else {
        return Ok(());
    };
    let capacity = admission.settings().capacity();
    let lines = [admission.plan_committed(), admission.candidate()];
    for stretch in Walk::new(lines, start, end) {
        let [committed, asked] = stretch.amounts;
        for dimension in DIMENSIONS {
            // Checked amounts are below 2^40: the sum cannot overflow.
            let held = committed[dimension] + asked[dimension];
            if asked[dimension] > 0 && held > capacity[dimension] {
                let unit = dimension.unit();
                return Err(Rejection::OverCommit(format!(
                    "plan {} would hold {held} {unit} at t={} ms ({} {unit} committed + {} {unit} asked); \
                     its capacity is {} {unit} (over by {} {unit})",
                    admission.settings().queue,
                    stretch.from_ms,
                    committed[dimension],
                    asked[dimension],
                    capacity[dimension],
                    held - capacity[dimension],
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Resources;
    use crate::sharing::wit::{self, Timeline};

    const HOUR: i64 = 3_600_000;

    fn res(memory_mb: u64, vcores: u64, gpus: u64) -> Resources {
        Resources::new(memory_mb, vcores, gpus)
    }

    fn block(start: i64, end: i64, amount: Resources) -> Timeline {
        Timeline::from_steps(&[(start, amount), (end, Resources::ZERO)])
    }

    fn admission(candidate: Timeline, plan_committed: Timeline) -> Admission {
        Admission::new(wit::Admission {
            settings: wit::PlanSettings {
                queue: "root.dedicated".into(),
                capacity: res(102_400, 100, 8),
                ..wit::PlanSettings::default()
            },
            from_ms: 0,
            to_ms: 24 * HOUR,
            candidate,
            plan_committed,
            ..wit::Admission::default()
        })
        .unwrap()
    }

    #[test]
    fn over_commit_in_each_dimension_at_its_first_instant() {
        let committed = block(HOUR, 3 * HOUR, res(81_920, 80, 6));
        // (asked over [2 h, 4 h), the refusal or None)
        let cases = [
            (res(20_480, 20, 2), None),
            (
                res(20_481, 0, 0),
                Some(
                    "plan root.dedicated would hold 102401 MB at t=7200000 ms (81920 MB committed + 20481 MB asked); its capacity is 102400 MB (over by 1 MB)",
                ),
            ),
            (
                res(0, 0, 3),
                Some(
                    "plan root.dedicated would hold 9 GPUs at t=7200000 ms (6 GPUs committed + 3 GPUs asked); its capacity is 8 GPUs (over by 1 GPUs)",
                ),
            ),
        ];
        for (asked, refusal) in cases {
            let outcome = check_over_commit(&admission(
                block(2 * HOUR, 4 * HOUR, asked),
                committed.clone(),
            ));
            match (outcome, refusal) {
                (Ok(()), None) => {}
                (Err(Rejection::OverCommit(message)), Some(expected)) => {
                    assert_eq!(message, expected)
                }
                (outcome, expected) => panic!("{asked:?}: {outcome:?}, expected {expected:?}"),
            }
        }
    }

    #[test]
    fn excess_the_candidate_adds_nothing_to_stands() {
        let committed = block(0, 10 * HOUR, res(0, 0, 10));
        let memory_only = admission(block(HOUR, 2 * HOUR, res(1024, 1, 0)), committed.clone());
        assert_eq!(check_over_commit(&memory_only), Ok(()));
        let one_more_gpu = admission(block(HOUR, 2 * HOUR, res(1024, 1, 1)), committed);
        assert!(matches!(
            check_over_commit(&one_more_gpu),
            Err(Rejection::OverCommit(_))
        ));
        let nothing = admission(Timeline::default(), Timeline::default());
        assert_eq!(check_over_commit(&nothing), Ok(()));
    }
}
