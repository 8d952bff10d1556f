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

    #[test]
    fn only_excess_the_candidate_adds_to_is_refused_at_its_first_instant() {
        // A queue of 10 GB, 10 vcores, 2 GPUs; the plan holds 8 GB, 3 vcores
        // and 3 GPUs (one GPU too many already) over [0, 5 h).
        let plan = block(0, 5 * HOUR, res(8192, 3, 3));
        // (candidate's start, end, amount; the refusal's dimension and instant)
        let cases = [
            (HOUR, 2 * HOUR, res(2048, 7, 0), None),
            (6 * HOUR, 7 * HOUR, res(10_240, 10, 2), None),
            (4 * HOUR, 6 * HOUR, res(2049, 0, 0), Some(("MB", 4 * HOUR))),
            (3 * HOUR, 4 * HOUR, res(0, 8, 0), Some(("vcores", 3 * HOUR))),
            (2 * HOUR, 3 * HOUR, res(1, 1, 1), Some(("GPUs", 2 * HOUR))),
        ];
        for (start, end, amount, refusal) in cases {
            let mut record = wit::Admission {
                settings: wit::PlanSettings {
                    queue: "root.q".into(),
                    capacity: res(10_240, 10, 2),
                    ..wit::PlanSettings::default()
                },
                from_ms: 0,
                to_ms: 24 * HOUR,
                candidate: block(start, end, amount),
                plan_committed: plan.clone(),
                ..wit::Admission::default()
            };
            let outcome = check_over_commit(&Admission::new(record.clone()).unwrap());
            match (outcome, refusal) {
                (Ok(()), None) => {}
                (Err(Rejection::OverCommit(message)), Some((unit, at))) => {
                    let expected = format!("at t={at} ms");
                    assert!(
                        message.contains(unit) && message.contains(&expected),
                        "{message}"
                    );
                }
                (outcome, expected) => panic!("{amount:?}: {outcome:?}, expected {expected:?}"),
            }
            // Nothing asked refuses nothing.
            record.candidate = Timeline::default();
            assert_eq!(check_over_commit(&Admission::new(record).unwrap()), Ok(()));
        }
    }
}
