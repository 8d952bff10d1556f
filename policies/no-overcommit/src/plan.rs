//! The plan as a sharing policy sees it, and what every sharing policy needs
//! to judge it: native mirrors of the WIT `sharing` records, the check that an
//! admission is well formed, a merge walk over several timelines at once, the
//! capacity (over-commit) check, and the figures refusals quote.
//!
//! This file is `no_overcommit::plan`, and `capacity-over-time` compiles the
//! same file in with `#[path]`. A cargo dependency between the two policies
//! cannot work: each is a cdylib exporting its component, so linking one into
//! the other exports both (duplicate symbols when host/build.rs builds them
//! together), and building one alone overwrites the other's `.wasm` (cdylib
//! file names carry no hash).
//!
//! Arithmetic is exact and never overflows: the checks bound every amount read
//! by [`MAX_AMOUNT`] (2^40 − 1) and every time by [`MAX_TIME_MS`] (2^61), so
//! sums fit in u64 and integrals (below 2^104) times a million fit in 128 bits.

use std::fmt;

/// The largest amount of one resource in a timeline step or a capacity:
/// 2^40 − 1 (an exabyte of memory in MB). Keeps all arithmetic exact without
/// checks; all ones in binary, so one OR over the columns bounds them all.
pub const MAX_AMOUNT: u64 = (1 << 40) - 1;

/// The latest time (and minus the earliest) in ms, and the longest window:
/// 2^61 ms, some 73 million years.
pub const MAX_TIME_MS: i64 = 1 << 61;

/// One amount per resource dimension, in the order of [`DIMENSIONS`]: the
/// form the walks compute in.
pub type Amounts = [u64; 3];

/// Nothing of anything.
pub const ZERO: Amounts = [0; 3];

/// A resource dimension. Every limit holds in each one separately.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dimension {
    Memory,
    Vcores,
    Gpus,
}

/// The dimensions, in the order of [`Amounts`].
pub const DIMENSIONS: [Dimension; 3] = [Dimension::Memory, Dimension::Vcores, Dimension::Gpus];

impl Dimension {
    /// Its place in [`Amounts`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// How an amount of it is written: `51200 MB`, `8 vcores`, `2 GPUs`.
    pub fn unit(self) -> &'static str {
        match self {
            Dimension::Memory => "MB",
            Dimension::Vcores => "vcores",
            Dimension::Gpus => "GPUs",
        }
    }

    /// How an amount of it held over time is written: `MB·ms`.
    pub fn time_unit(self) -> &'static str {
        match self {
            Dimension::Memory => "MB·ms",
            Dimension::Vcores => "vcore·ms",
            Dimension::Gpus => "GPU·ms",
        }
    }

    /// Its column in the WIT records.
    pub fn column(self) -> &'static str {
        match self {
            Dimension::Memory => "memory-mb",
            Dimension::Vcores => "vcores",
            Dimension::Gpus => "gpus",
        }
    }
}

/// An amount of every resource dimension, like the WIT `resources` record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Resources {
    pub memory_mb: u64,
    pub vcores: u64,
    pub gpus: u64,
}

impl Resources {
    pub fn new(memory_mb: u64, vcores: u64, gpus: u64) -> Self {
        Resources {
            memory_mb,
            vcores,
            gpus,
        }
    }

    /// The same amounts as an array, in the order of [`DIMENSIONS`].
    pub fn amounts(&self) -> Amounts {
        [self.memory_mb, self.vcores, self.gpus]
    }
}

/// A step function of resources over time, run-length encoded as columns like
/// the WIT `timeline` record: from `at_ms[i]` until `at_ms[i + 1]` the amount
/// is (`memory_mb[i]`, `vcores[i]`, `gpus[i]`); zero before the first point;
/// the last point's amount holds from then on (the host makes it zero).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Timeline {
    pub at_ms: Vec<i64>,
    pub memory_mb: Vec<u64>,
    pub vcores: Vec<u64>,
    pub gpus: Vec<u64>,
}

impl Timeline {
    /// A timeline from `(at-ms, amount)` points, in order.
    pub fn from_steps(steps: &[(i64, Resources)]) -> Self {
        let mut timeline = Timeline::default();
        for (at_ms, amount) in steps {
            timeline.push(*at_ms, amount.amounts());
        }
        timeline
    }

    /// Adds a point at the end (the caller keeps `at_ms` increasing).
    pub fn push(&mut self, at_ms: i64, amounts: Amounts) {
        self.at_ms.push(at_ms);
        self.memory_mb.push(amounts[0]);
        self.vcores.push(amounts[1]);
        self.gpus.push(amounts[2]);
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.at_ms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.at_ms.is_empty()
    }

    /// The amount from point `i` on.
    pub fn amounts(&self, i: usize) -> Amounts {
        [self.memory_mb[i], self.vcores[i], self.gpus[i]]
    }

    /// The amount held at instant `at_ms`.
    pub fn amounts_at(&self, at_ms: i64) -> Amounts {
        match self.at_ms.partition_point(|&t| t <= at_ms) {
            0 => ZERO,
            after => self.amounts(after - 1),
        }
    }

    /// Columns of one length, strictly increasing times, and times and
    /// amounts within the bounds that keep the arithmetic exact.
    pub fn check(&self, name: &str) -> Result<(), Malformed> {
        self.check_lengths(name)?;
        self.check_points(name, 0, self.len())
    }

    /// [`Timeline::check`] for what a [`Walk`] over [from, to) reads: the
    /// point in force at `from` up to the first at or after `to`. O(log n)
    /// to find them, then O(points read).
    pub fn check_span(&self, name: &str, from_ms: i64, to_ms: i64) -> Result<(), Malformed> {
        self.check_lengths(name)?;
        let Some(last) = self.len().checked_sub(1) else {
            return Ok(());
        };
        // The same searches as the walk's; on unsorted input they may cross.
        let a = self
            .at_ms
            .partition_point(|&t| t <= from_ms)
            .saturating_sub(1);
        let b = self.at_ms.partition_point(|&t| t < to_ms).min(last);
        self.check_points(name, a.min(b), a.max(b) + 1)
    }

    /// Columns of one length: O(1).
    pub fn check_lengths(&self, name: &str) -> Result<(), Malformed> {
        let points = self.at_ms.len();
        let lengths = [self.memory_mb.len(), self.vcores.len(), self.gpus.len()];
        if lengths.iter().any(|&length| length != points) {
            return Err(Malformed(format!(
                "{name}: its columns differ in length ({points} at-ms, {} memory-mb, {} vcores, {} gpus)",
                lengths[0], lengths[1], lengths[2]
            )));
        }
        Ok(())
    }

    /// Checks points [start, end), of columns of one length.
    fn check_points(&self, name: &str, start: usize, end: usize) -> Result<(), Malformed> {
        let at = &self.at_ms[start..end];
        let (memory, vcores, gpus) = (
            &self.memory_mb[start..end],
            &self.vcores[start..end],
            &self.gpus[start..end],
        );
        // One pass with no early exit: quick on the host's long, well-formed
        // timelines. Only when it fails does a second pass find what is wrong.
        let increasing = at
            .windows(2)
            .fold(true, |ok, pair| ok & (pair[0] < pair[1]));
        let in_time = match (at.first(), at.last()) {
            (Some(&first), Some(&last)) => first >= -MAX_TIME_MS && last <= MAX_TIME_MS,
            _ => true,
        };
        let all_amounts = (memory.iter().zip(vcores).zip(gpus))
            .fold(0, |all, ((memory, vcores), gpus)| {
                all | memory | vcores | gpus
            });
        if increasing && in_time && all_amounts <= MAX_AMOUNT {
            return Ok(());
        }
        if let Some(i) = at.windows(2).position(|pair| pair[0] >= pair[1]) {
            return Err(Malformed(format!(
                "{name}: at-ms must strictly increase, but at-ms[{}] is {} and at-ms[{}] is {}",
                start + i,
                at[i],
                start + i + 1,
                at[i + 1]
            )));
        }
        if let Some(i) = at
            .iter()
            .position(|t| t.unsigned_abs() > MAX_TIME_MS as u64)
        {
            return Err(Malformed(format!(
                "{name}: at-ms[{}] is {}, beyond ±2^61 ms",
                start + i,
                at[i]
            )));
        }
        for (dimension, column) in DIMENSIONS.into_iter().zip([memory, vcores, gpus]) {
            if let Some(i) = column.iter().position(|&amount| amount > MAX_AMOUNT) {
                return Err(Malformed(format!(
                    "{name}: {}[{}] is {}, above the largest amount 2^40 - 1",
                    dimension.column(),
                    start + i,
                    column[i]
                )));
            }
        }
        Ok(()) // unreachable: the first pass failed for one of these reasons
    }
}

/// A reservable queue's settings, like the WIT `plan-settings` record.
/// Percentages are 0..=100 and relative to `capacity`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PlanSettings {
    /// The queue's path, e.g. `root.dedicated`.
    pub queue: String,
    /// What the plan may hold at any instant.
    pub capacity: Resources,
    /// `reservation-window`: the length of the averaging window.
    pub reservation_window_ms: i64,
    /// `instantaneous-max-capacity`: most of `capacity` one user may hold at any instant.
    pub instantaneous_max_capacity: f64,
    /// `average-capacity`: most of `capacity` one user may hold on average over any window.
    pub average_capacity: f64,
}

/// What one decision sees, like the WIT `admission` record. Timelines are
/// exact inside [`from_ms`, `to_ms`); outside it they are taken as zero.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Admission {
    pub settings: PlanSettings,
    /// The user the reservation belongs to.
    pub user: String,
    /// The reservation being decided.
    pub reservation_id: String,
    pub from_ms: i64,
    pub to_ms: i64,
    /// The reservation's own allocation (empty when asked for `available`).
    pub candidate: Timeline,
    /// Everything the user already holds in this plan.
    pub user_committed: Timeline,
    /// Everything the plan holds, for every user.
    pub plan_committed: Timeline,
}

impl Admission {
    /// Whether all of the admission can be read, as `available` does: a
    /// range with `from ≤ to`, a capacity and timelines within bounds,
    /// well-formed timelines, and a candidate that holds nothing outside the
    /// range (where the plan is not known). The host always sends well-formed
    /// admissions.
    pub fn check(&self) -> Result<(), Malformed> {
        self.check_candidate()?;
        self.user_committed.check("user-committed")?;
        self.plan_committed.check("plan-committed")
    }

    /// [`Admission::check`] for what `validate` reads, given how far around
    /// the candidate it looks (`window_ms`): the range, the capacity and the
    /// whole candidate; the plan over the candidate's span; the user's
    /// holding over that span and over [`Admission::window_span`]. A flaw
    /// elsewhere in the committed timelines cannot change the answer and is
    /// not looked for: the plan can be long and validate must be quick.
    pub fn check_for_validate(&self, window_ms: i64) -> Result<(), Malformed> {
        self.check_candidate()?;
        let Some((start, end)) = self.candidate_support() else {
            // Nothing asked, nothing read; but the columns must match.
            self.user_committed.check_lengths("user-committed")?;
            return self.plan_committed.check_lengths("plan-committed");
        };
        self.plan_committed
            .check_span("plan-committed", start, end)?;
        self.user_committed
            .check_span("user-committed", start, end)?;
        let (lo, hi) = self.window_span((start, end), window_ms);
        self.user_committed.check_span("user-committed", lo, hi)
    }

    /// The range, the capacity and the whole candidate.
    fn check_candidate(&self) -> Result<(), Malformed> {
        let (from, to) = (self.from_ms, self.to_ms);
        if from > to
            || from.unsigned_abs() > MAX_TIME_MS as u64
            || to.unsigned_abs() > MAX_TIME_MS as u64
        {
            return Err(Malformed(format!(
                "the range [{from}, {to}) ms runs backwards or lies beyond ±2^61 ms"
            )));
        }
        let capacity = self.settings.capacity.amounts();
        if let Some(dimension) = DIMENSIONS
            .into_iter()
            .find(|d| capacity[d.index()] > MAX_AMOUNT)
        {
            return Err(Malformed(format!(
                "settings: the capacity is {} {}, above the largest amount 2^40 - 1",
                capacity[dimension.index()],
                dimension.unit()
            )));
        }
        self.candidate.check("candidate")?;
        let candidate = &self.candidate;
        for i in 0..candidate.len() {
            if candidate.amounts(i) == ZERO {
                continue;
            }
            let start = candidate.at_ms[i];
            let end = candidate.at_ms.get(i + 1).copied();
            if start < from || end.is_none_or(|end| end > to) {
                let end = end.map_or("on".to_string(), |end| format!("until t={end} ms"));
                return Err(Malformed(format!(
                    "candidate: it holds resources from t={start} ms {end}, outside the range [{from}, {to}) ms"
                )));
            }
        }
        Ok(())
    }

    /// Where the windows of length `window_ms` that overlap the candidate's
    /// span [start, end) lie: [start − W, end + W), within the range.
    pub fn window_span(&self, (start, end): (i64, i64), window_ms: i64) -> (i64, i64) {
        (
            self.from_ms.max(start - window_ms),
            self.to_ms.min(end + window_ms),
        )
    }

    /// The candidate's span: from the first instant it holds anything to the
    /// end of the last, or `None` if it holds nothing. Within [from, to) for
    /// a checked admission.
    pub fn candidate_support(&self) -> Option<(i64, i64)> {
        let candidate = &self.candidate;
        let first = (0..candidate.len()).find(|&i| candidate.amounts(i) != ZERO)?;
        let last = (first..candidate.len())
            .rev()
            .find(|&i| candidate.amounts(i) != ZERO)?;
        let end = candidate.at_ms.get(last + 1).copied().unwrap_or(self.to_ms);
        Some((
            candidate.at_ms[first].max(self.from_ms),
            end.min(self.to_ms),
        ))
    }
}

/// Why a reservation was refused, like the WIT `rejection` variant. The
/// message says when, which resource, and the figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// The plan would hold more than the queue's capacity.
    OverCommit(String),
    /// The user would hold more than instantaneous-max-capacity at some instant.
    InstantaneousQuota(String),
    /// The user's holding over some window would exceed window × average-capacity.
    AverageQuota(String),
}

impl Rejection {
    pub fn message(&self) -> &str {
        match self {
            Rejection::OverCommit(message)
            | Rejection::InstantaneousQuota(message)
            | Rejection::AverageQuota(message) => message,
        }
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self {
            Rejection::OverCommit(_) => "over-commit",
            Rejection::InstantaneousQuota(_) => "instantaneous-quota",
            Rejection::AverageQuota(_) => "average-quota",
        };
        write!(f, "{kind}: {}", self.message())
    }
}

/// An admission the policy cannot judge (see [`Admission::check`]). `validate`
/// refuses it as over-commit, "malformed admission: …" — a policy that cannot
/// read the plan cannot show it stays within capacity — and `available`
/// offers nothing. Neither traps: a trap would count against the policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed(pub String);

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed admission: {}", self.0)
    }
}

impl From<Malformed> for Rejection {
    fn from(malformed: Malformed) -> Self {
        Rejection::OverCommit(malformed.to_string())
    }
}

/// A stretch of time over which none of the walked timelines changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stretch<const K: usize> {
    pub from_ms: i64,
    pub to_ms: i64,
    /// Each timeline's amount, in the order they were given to the walk.
    pub amounts: [Amounts; K],
}

/// Walks `K` timelines together over [from, to), stretch by stretch in time
/// order: a merge of their sorted points, O(points) with no allocation.
/// Outside [from, to) nothing is seen. Never panics, even on unsorted input.
#[derive(Debug, Clone)]
pub struct Walk<'a, const K: usize> {
    lines: [&'a Timeline; K],
    /// Per timeline, its first point after `at`.
    next: [usize; K],
    at: i64,
    to: i64,
}

impl<'a, const K: usize> Walk<'a, K> {
    pub fn new(lines: [&'a Timeline; K], from_ms: i64, to_ms: i64) -> Self {
        let next = lines.map(|line| line.at_ms.partition_point(|&t| t <= from_ms));
        Walk {
            lines,
            next,
            at: from_ms,
            to: to_ms,
        }
    }
}

impl<const K: usize> Iterator for Walk<'_, K> {
    type Item = Stretch<K>;

    fn next(&mut self) -> Option<Stretch<K>> {
        if self.at >= self.to {
            return None;
        }
        let mut end = self.to;
        let amounts = std::array::from_fn(|k| {
            let (line, next) = (self.lines[k], self.next[k]);
            if let Some(&t) = line.at_ms.get(next) {
                end = end.min(t);
            }
            match next {
                0 => ZERO,
                _ => line.amounts(next - 1),
            }
        });
        // Unsorted input could put a point behind us: never walk backwards.
        let end = end.max(self.at + 1).min(self.to);
        let stretch = Stretch {
            from_ms: self.at,
            to_ms: end,
            amounts,
        };
        self.at = end;
        for (line, next) in self.lines.iter().zip(&mut self.next) {
            while line.at_ms.get(*next).is_some_and(|&t| t <= end) {
                *next += 1;
            }
        }
        Some(stretch)
    }
}

/// The no-over-commit rule: wherever the candidate holds some of a resource,
/// plan-committed plus candidate stays within capacity. A dimension at an
/// instant where the candidate holds none of it is not its doing: an excess
/// already there (say, after the capacity shrank) stands and does not refuse
/// it. Expects an admission that passed [`Admission::check_for_validate`];
/// refuses the first excess in time.
pub fn check_capacity(admission: &Admission) -> Result<(), Rejection> {
    let Some((start, end)) = admission.candidate_support() else {
        return Ok(());
    };
    let capacity = admission.settings.capacity.amounts();
    let lines = [&admission.plan_committed, &admission.candidate];
    for stretch in Walk::new(lines, start, end) {
        let [committed, asked] = stretch.amounts;
        for dimension in DIMENSIONS {
            let d = dimension.index();
            let held = committed[d] + asked[d];
            if asked[d] > 0 && held > capacity[d] {
                let unit = dimension.unit();
                return Err(Rejection::OverCommit(format!(
                    "plan {} would hold {held} {unit} at t={} ms ({} {unit} committed + {} {unit} asked); \
                     its capacity is {} {unit} (over by {} {unit})",
                    admission.settings.queue,
                    stretch.from_ms,
                    committed[d],
                    asked[d],
                    capacity[d],
                    held - capacity[d],
                )));
            }
        }
    }
    Ok(())
}

/// `a − b` per dimension, at least 0.
pub fn saturating_sub(a: Amounts, b: Amounts) -> Amounts {
    [0, 1, 2].map(|d| a[d].saturating_sub(b[d]))
}

/// Builds a timeline from amounts pushed in time order, leaving out points
/// that change nothing, and ending it with a zero point as the WIT asks.
#[derive(Debug, Default)]
pub struct TimelineBuilder {
    timeline: Timeline,
    last: Amounts,
}

impl TimelineBuilder {
    pub fn new() -> Self {
        TimelineBuilder::default()
    }

    /// From `at_ms` on, the amount is `amounts`.
    pub fn push(&mut self, at_ms: i64, amounts: Amounts) {
        if amounts != self.last {
            self.timeline.push(at_ms, amounts);
            self.last = amounts;
        }
    }

    /// The timeline, zero from `to_ms` on.
    pub fn finish(mut self, to_ms: i64) -> Timeline {
        self.push(to_ms, ZERO);
        self.timeline
    }
}

/// `value / 10^places` as a decimal with trailing zeros dropped:
/// `decimal(51_200_000_000, 6)` is `51200`, `decimal(333_333_000, 6)` is `333.333`.
pub fn decimal(value: u128, places: u32) -> String {
    let scale = 10u128.pow(places);
    let (whole, fraction) = (value / scale, value % scale);
    if fraction == 0 {
        return whole.to_string();
    }
    let digits = format!("{fraction:0width$}", width = places as usize);
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(memory_mb: u64, vcores: u64, gpus: u64) -> Resources {
        Resources::new(memory_mb, vcores, gpus)
    }

    #[test]
    fn walk_merges_the_points_of_several_timelines() {
        let a = Timeline::from_steps(&[(0, res(10, 1, 0)), (20, res(0, 0, 0))]);
        let b = Timeline::from_steps(&[(-5, res(1, 0, 0)), (10, res(2, 0, 1)), (30, res(0, 0, 0))]);
        let stretches: Vec<_> = Walk::new([&a, &b], -10, 40)
            .map(|s| (s.from_ms, s.to_ms, s.amounts[0][0], s.amounts[1][0]))
            .collect();
        assert_eq!(
            stretches,
            [
                (-10, -5, 0, 0), // before either timeline's first point: zero
                (-5, 0, 0, 1),
                (0, 10, 10, 1),
                (10, 20, 10, 2),
                (20, 30, 0, 2),
                (30, 40, 0, 0),
            ]
        );
        // Cut to a range that starts and ends inside stretches.
        let cut: Vec<_> = Walk::new([&a, &b], 5, 15)
            .map(|s| (s.from_ms, s.to_ms, s.amounts[0][0], s.amounts[1][2]))
            .collect();
        assert_eq!(cut, [(5, 10, 10, 0), (10, 15, 10, 1)]);
        // An empty range walks nothing; an empty timeline is zero everywhere.
        assert_eq!(Walk::new([&a], 7, 7).count(), 0);
        let empty = Timeline::default();
        let all: Vec<_> = Walk::new([&empty], 0, 100).map(|s| s.amounts).collect();
        assert_eq!(all, [[ZERO]]);
    }

    #[test]
    fn the_last_amount_holds_on() {
        let open = Timeline::from_steps(&[(0, res(5, 0, 0))]);
        let stretches: Vec<_> = Walk::new([&open], 0, 50).collect();
        assert_eq!(stretches.len(), 1);
        assert_eq!(stretches[0].amounts[0], [5, 0, 0]);
        assert_eq!(open.amounts_at(1_000), [5, 0, 0]);
        assert_eq!(open.amounts_at(-1), ZERO);
    }

    #[test]
    fn walk_survives_unsorted_input() {
        let unsorted =
            Timeline::from_steps(&[(30, res(1, 0, 0)), (10, res(2, 0, 0)), (20, res(0, 0, 0))]);
        let stretches: Vec<_> = Walk::new([&unsorted], 0, 40).collect();
        assert!(stretches.windows(2).all(|w| w[0].to_ms == w[1].from_ms));
        assert_eq!(stretches.last().unwrap().to_ms, 40);
    }

    fn admission() -> Admission {
        Admission {
            settings: PlanSettings {
                queue: "root.dedicated".into(),
                capacity: res(100, 10, 2),
                ..PlanSettings::default()
            },
            user: "alice".into(),
            reservation_id: "reservation_1_0001".into(),
            from_ms: 0,
            to_ms: 100,
            candidate: Timeline::from_steps(&[(10, res(50, 1, 0)), (20, res(0, 0, 0))]),
            ..Admission::default()
        }
    }

    #[test]
    fn malformed_admissions_say_what_is_wrong() {
        let mut mismatched = admission();
        mismatched.plan_committed = Timeline::from_steps(&[(0, res(1, 1, 0)), (5, res(0, 0, 0))]);
        mismatched.plan_committed.vcores.pop();
        let mut unsorted = admission();
        unsorted.user_committed = Timeline::from_steps(&[(10, res(1, 0, 0)), (10, res(0, 0, 0))]);
        let mut outside = admission();
        outside.candidate = Timeline::from_steps(&[(90, res(1, 0, 0)), (110, res(0, 0, 0))]);
        let mut open_ended = admission();
        open_ended.candidate = Timeline::from_steps(&[(90, res(1, 0, 0))]);
        let mut backwards = admission();
        backwards.to_ms = -1;
        let mut huge = admission();
        huge.plan_committed = Timeline::from_steps(&[(0, res(0, 0, u64::MAX))]);
        let mut far = admission();
        far.user_committed = Timeline::from_steps(&[(i64::MIN, res(0, 0, 0))]);
        let mut big_queue = admission();
        big_queue.settings.capacity.memory_mb = u64::MAX;
        let cases = [
            (
                mismatched,
                "plan-committed: its columns differ in length (2 at-ms, 2 memory-mb, 1 vcores, 2 gpus)",
            ),
            (
                unsorted,
                "user-committed: at-ms must strictly increase, but at-ms[0] is 10 and at-ms[1] is 10",
            ),
            (
                outside,
                "candidate: it holds resources from t=90 ms until t=110 ms, outside the range [0, 100) ms",
            ),
            (
                open_ended,
                "candidate: it holds resources from t=90 ms on, outside the range",
            ),
            (backwards, "the range [0, -1) ms"),
            (
                huge,
                "plan-committed: gpus[0] is 18446744073709551615, above the largest amount 2^40 - 1",
            ),
            (
                far,
                "user-committed: at-ms[0] is -9223372036854775808, beyond ±2^61 ms",
            ),
            (
                big_queue,
                "settings: the capacity is 18446744073709551615 MB",
            ),
        ];
        for (admission, expected) in cases {
            let message = admission.check().unwrap_err().to_string();
            assert!(message.starts_with("malformed admission: "), "{message}");
            assert!(message.contains(expected), "{message} lacks {expected}");
        }
        assert_eq!(admission().check(), Ok(()));
    }

    #[test]
    fn candidate_support_is_clipped_to_the_range() {
        let mut a = admission();
        assert_eq!(a.candidate_support(), Some((10, 20)));
        a.candidate = Timeline::from_steps(&[
            (0, res(0, 0, 0)),
            (30, res(0, 1, 0)),
            (40, res(0, 0, 0)),
            (60, res(1, 0, 0)),
            (70, res(0, 0, 0)),
        ]);
        assert_eq!(a.candidate_support(), Some((30, 70)));
        a.candidate = Timeline::from_steps(&[(0, res(0, 0, 0))]);
        assert_eq!(a.candidate_support(), None);
        a.candidate = Timeline::default();
        assert_eq!(a.candidate_support(), None);
    }

    #[test]
    fn builder_leaves_out_points_that_change_nothing() {
        let mut builder = TimelineBuilder::new();
        builder.push(0, ZERO); // zero before the first point already
        builder.push(5, [3, 0, 0]);
        builder.push(7, [3, 0, 0]);
        builder.push(9, [1, 0, 0]);
        let timeline = builder.finish(12);
        assert_eq!(timeline.at_ms, [5, 9, 12]);
        assert_eq!(timeline.memory_mb, [3, 1, 0]);
        assert_eq!(TimelineBuilder::new().finish(10), Timeline::default());
    }

    #[test]
    fn decimals_drop_trailing_zeros() {
        for ((value, places), expected) in [
            ((51_200_000_000, 6), "51200"),
            ((333_333_000, 6), "333.333"),
            ((500_000, 6), "0.5"),
            ((0, 6), "0"),
            ((333_000, 4), "33.3"),
            ((1, 6), "0.000001"),
        ] {
            assert_eq!(decimal(value, places), expected);
        }
    }
}
