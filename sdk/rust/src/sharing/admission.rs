//! Checked views of what a sharing decision sees: a plan's settings and an
//! admission, with the range the candidate reservation covers.

use std::ops::Deref;

use crate::malformed::Malformed;
use crate::resources::{DIMENSIONS, Resources};

use super::timeline::{MAX_AMOUNT, MAX_TIME_MS};
use super::wit::{self, Rejection, Timeline};

/// A reservable queue's settings, checked: a window from 0 to 2^61 ms,
/// percentages from 0 to 100, a capacity of at most [`MAX_AMOUNT`] in each
/// resource. Derefs to the record.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PlanSettings(wit::PlanSettings);

impl PlanSettings {
    /// Checks the settings the host sent.
    pub fn new(record: wit::PlanSettings) -> Result<PlanSettings, Malformed> {
        let window_ms = record.reservation_window_ms;
        if !(0..=MAX_TIME_MS).contains(&window_ms) {
            return Err(Malformed::new(format!(
                "settings: reservation-window is {window_ms} ms; it must be from 0 to 2^61 ms"
            )));
        }
        let percentages = [
            (
                "instantaneous-max-capacity",
                record.instantaneous_max_capacity,
            ),
            ("average-capacity", record.average_capacity),
        ];
        for (name, percent) in percentages {
            if !(0.0..=100.0).contains(&percent) {
                return Err(Malformed::new(format!(
                    "settings: {name} is {percent}; it must be a percentage from 0 to 100"
                )));
            }
        }
        let capacity = record.capacity;
        if let Some(dimension) = DIMENSIONS.into_iter().find(|&d| capacity[d] > MAX_AMOUNT) {
            return Err(Malformed::new(format!(
                "settings: the capacity is {} {}, above the largest amount 2^40 - 1",
                capacity[dimension],
                dimension.unit()
            )));
        }
        Ok(PlanSettings(record))
    }

    /// What the plan may hold at any instant.
    pub fn capacity(&self) -> Resources {
        self.0.capacity
    }
}

impl Deref for PlanSettings {
    type Target = wit::PlanSettings;

    /// The checked record: read its fields directly.
    fn deref(&self) -> &wit::PlanSettings {
        &self.0
    }
}

/// What one admission decision sees, checked: the settings (see
/// [`PlanSettings`]), a range [from, to) with `from ≤ to` within ±2^61 ms,
/// well-formed timelines (see [`Timeline::check`]), and a candidate that
/// holds nothing outside the range, where the plan is not known.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Admission {
    settings: PlanSettings,
    user: String,
    reservation_id: String,
    from_ms: i64,
    to_ms: i64,
    candidate: Timeline,
    user_committed: Timeline,
    plan_committed: Timeline,
    context: wit::PlanContext,
}

impl Admission {
    /// Checks the admission the host sent.
    pub fn new(record: wit::Admission) -> Result<Admission, Malformed> {
        let wit::Admission {
            settings,
            user,
            reservation_id,
            from_ms,
            to_ms,
            candidate,
            user_committed,
            plan_committed,
            context,
        } = record;
        let settings = PlanSettings::new(settings)?;
        if from_ms > to_ms
            || from_ms.unsigned_abs() > MAX_TIME_MS as u64
            || to_ms.unsigned_abs() > MAX_TIME_MS as u64
        {
            return Err(Malformed::new(format!(
                "the range [{from_ms}, {to_ms}) ms runs backwards or lies beyond ±2^61 ms"
            )));
        }
        candidate.check("candidate")?;
        user_committed.check("user-committed")?;
        plan_committed.check("plan-committed")?;
        for i in 0..candidate.len() {
            if candidate.amount(i).is_zero() {
                continue;
            }
            let start = candidate.at_ms[i];
            let end = candidate.at_ms.get(i + 1).copied();
            if start < from_ms || end.is_none_or(|end| end > to_ms) {
                let end = end.map_or("on".to_string(), |end| format!("until t={end} ms"));
                return Err(Malformed::new(format!(
                    "candidate: it holds resources from t={start} ms {end}, outside the range [{from_ms}, {to_ms}) ms"
                )));
            }
        }
        Ok(Admission {
            settings,
            user,
            reservation_id,
            from_ms,
            to_ms,
            candidate,
            user_committed,
            plan_committed,
            context,
        })
    }

    /// The plan around the decision: the time, the reservation's name and
    /// whether it recurs, and how many reservations and users the plan holds.
    pub fn context(&self) -> &wit::PlanContext {
        &self.context
    }

    /// The plan's settings.
    pub fn settings(&self) -> &PlanSettings {
        &self.settings
    }

    /// The user the reservation belongs to.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The reservation being decided.
    pub fn reservation_id(&self) -> &str {
        &self.reservation_id
    }

    /// The start of the range the timelines are exact in.
    pub fn from_ms(&self) -> i64 {
        self.from_ms
    }

    /// The end (exclusive) of that range.
    pub fn to_ms(&self) -> i64 {
        self.to_ms
    }

    /// The reservation's own allocation (empty when asked for `available`).
    pub fn candidate(&self) -> &Timeline {
        &self.candidate
    }

    /// What the user already holds in the plan.
    pub fn user_committed(&self) -> &Timeline {
        &self.user_committed
    }

    /// What the plan holds for every user; with a candidate, exact only
    /// over the candidate's span.
    pub fn plan_committed(&self) -> &Timeline {
        &self.plan_committed
    }

    /// The candidate's span: from the first instant it holds anything to the
    /// end of the last, within [from, to), or `None` if it holds nothing.
    pub fn candidate_support(&self) -> Option<(i64, i64)> {
        let candidate = &self.candidate;
        let first = (0..candidate.len()).find(|&i| !candidate.amount(i).is_zero())?;
        let last = (first..candidate.len())
            .rev()
            .find(|&i| !candidate.amount(i).is_zero())?;
        let end = candidate.at_ms.get(last + 1).copied().unwrap_or(self.to_ms);
        Some((
            candidate.at_ms[first].max(self.from_ms),
            end.min(self.to_ms),
        ))
    }

    /// Where the windows of length `window_ms` that overlap the span
    /// [start, end) lie: [start − W, end + W), within the range.
    pub fn window_span(&self, (start, end): (i64, i64), window_ms: i64) -> (i64, i64) {
        (
            self.from_ms.max(start - window_ms),
            self.to_ms.min(end + window_ms),
        )
    }
}

impl Rejection {
    /// The message: when, which resource, and the figures.
    pub fn message(&self) -> &str {
        match self {
            Rejection::OverCommit(message)
            | Rejection::InstantaneousQuota(message)
            | Rejection::AverageQuota(message) => message,
        }
    }

    /// The case's WIT name: `over-commit`, `instantaneous-quota`,
    /// `average-quota`.
    pub fn kind(&self) -> &'static str {
        match self {
            Rejection::OverCommit(_) => "over-commit",
            Rejection::InstantaneousQuota(_) => "instantaneous-quota",
            Rejection::AverageQuota(_) => "average-quota",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(memory_mb: u64, vcores: u64, gpus: u64) -> Resources {
        Resources::new(memory_mb, vcores, gpus)
    }

    fn record() -> wit::Admission {
        wit::Admission {
            settings: wit::PlanSettings {
                queue: "root.dedicated".into(),
                capacity: res(100, 10, 2),
                reservation_window_ms: 50,
                instantaneous_max_capacity: 50.0,
                average_capacity: 25.0,
            },
            user: "alice".into(),
            reservation_id: "reservation_1_0001".into(),
            from_ms: 0,
            to_ms: 100,
            candidate: Timeline::from_steps(&[(10, res(50, 1, 0)), (20, res(0, 0, 0))]),
            ..wit::Admission::default()
        }
    }

    #[test]
    fn a_well_formed_admission_reads_back() {
        let admission = Admission::new(record()).unwrap();
        assert_eq!(admission.user(), "alice");
        assert_eq!(admission.reservation_id(), "reservation_1_0001");
        assert_eq!((admission.from_ms(), admission.to_ms()), (0, 100));
        assert_eq!(admission.settings().capacity(), res(100, 10, 2));
        assert_eq!(admission.settings().queue, "root.dedicated");
        assert_eq!(admission.candidate().len(), 2);
        assert!(admission.user_committed().is_empty());
        assert!(admission.plan_committed().is_empty());
        assert_eq!(admission.window_span((10, 20), 50), (0, 70));
    }

    #[test]
    fn malformed_admissions_say_what_is_wrong() {
        let with = |change: fn(&mut wit::Admission)| {
            let mut record = record();
            change(&mut record);
            record
        };
        // (admission, message)
        let cases = [
            (
                with(|a| a.plan_committed.vcores.push(1)),
                "plan-committed: its columns differ in length (0 at-ms, 0 memory-mb, 1 vcores, 0 gpus)",
            ),
            (
                with(|a| {
                    a.user_committed =
                        Timeline::from_steps(&[(10, res(1, 0, 0)), (10, res(0, 0, 0))])
                }),
                "user-committed: at-ms must strictly increase, but at-ms[0] is 10 and at-ms[1] is 10",
            ),
            (
                with(|a| {
                    a.candidate = Timeline::from_steps(&[(90, res(1, 0, 0)), (110, res(0, 0, 0))])
                }),
                "candidate: it holds resources from t=90 ms until t=110 ms, outside the range [0, 100) ms",
            ),
            (
                with(|a| a.candidate = Timeline::from_steps(&[(90, res(1, 0, 0))])),
                "candidate: it holds resources from t=90 ms on, outside the range [0, 100) ms",
            ),
            (
                with(|a| a.to_ms = -1),
                "the range [0, -1) ms runs backwards or lies beyond ±2^61 ms",
            ),
            (
                with(|a| a.settings.capacity.memory_mb = u64::MAX),
                "settings: the capacity is 18446744073709551615 MB, above the largest amount 2^40 - 1",
            ),
            (
                with(|a| a.settings.reservation_window_ms = -1),
                "settings: reservation-window is -1 ms; it must be from 0 to 2^61 ms",
            ),
            (
                with(|a| a.settings.average_capacity = f64::NAN),
                "settings: average-capacity is NaN; it must be a percentage from 0 to 100",
            ),
            (
                with(|a| a.settings.instantaneous_max_capacity = 100.5),
                "settings: instantaneous-max-capacity is 100.5; it must be a percentage from 0 to 100",
            ),
        ];
        for (admission, message) in cases {
            assert_eq!(Admission::new(admission).unwrap_err().message(), message);
        }
    }

    #[test]
    fn candidate_support_is_clipped_to_the_range() {
        let support = |candidate: Timeline| {
            let mut record = record();
            record.candidate = candidate;
            Admission::new(record).unwrap().candidate_support()
        };
        assert_eq!(support(record().candidate), Some((10, 20)));
        let gaps = Timeline::from_steps(&[
            (0, res(0, 0, 0)),
            (30, res(0, 1, 0)),
            (40, res(0, 0, 0)),
            (60, res(1, 0, 0)),
            (70, res(0, 0, 0)),
        ]);
        assert_eq!(support(gaps), Some((30, 70)));
        assert_eq!(support(Timeline::from_steps(&[(0, res(0, 0, 0))])), None);
        assert_eq!(support(Timeline::default()), None);
    }

    #[test]
    fn rejections_name_their_kind() {
        let cases = [
            (Rejection::OverCommit("a".into()), "over-commit"),
            (
                Rejection::InstantaneousQuota("b".into()),
                "instantaneous-quota",
            ),
            (Rejection::AverageQuota("c".into()), "average-quota"),
        ];
        for (rejection, kind) in cases {
            assert_eq!(rejection.kind(), kind);
            assert_eq!(rejection.message().len(), 1);
        }
    }
}
