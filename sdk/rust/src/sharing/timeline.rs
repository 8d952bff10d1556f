//! Step functions of resources over time: the WIT `timeline` record with
//! methods added, its check, a merge [`Walk`] over several timelines at
//! once, a [`TimelineBuilder`] for answers, and [`Integrals`] of timelines
//! from a start to any instant (for limits averaged over windows).
//!
//! Arithmetic is exact and never overflows: checked timelines hold amounts
//! of at most [`MAX_AMOUNT`] (2^40 − 1) at times within ±[`MAX_TIME_MS`]
//! (2^61), so sums of a few fit in u64 and integrals (below 2^104) times a
//! million fit in 128 bits.

use crate::malformed::{Malformed, same_lengths};
use crate::resources::{DIMENSIONS, Resources};

use super::wit::Timeline;

/// The largest amount of one resource in a timeline step or a capacity:
/// 2^40 − 1 (an exabyte of memory in MB). All ones in binary, so one OR over
/// the columns bounds them all.
pub const MAX_AMOUNT: u64 = (1 << 40) - 1;

/// The latest time (and minus the earliest) in ms, and the longest window:
/// 2^61 ms, some 73 million years.
pub const MAX_TIME_MS: i64 = 1 << 61;

impl Timeline {
    /// A timeline from `(at-ms, amount)` points, in order. Not checked:
    /// tests build malformed ones on purpose.
    pub fn from_steps(steps: &[(i64, Resources)]) -> Timeline {
        let mut timeline = Timeline::default();
        for &(at_ms, amount) in steps {
            timeline.push(at_ms, amount);
        }
        timeline
    }

    /// Adds a point at the end (the caller keeps `at_ms` increasing).
    pub fn push(&mut self, at_ms: i64, amount: Resources) {
        self.at_ms.push(at_ms);
        self.memory_mb.push(amount.memory_mb);
        self.vcores.push(amount.vcores);
        self.gpus.push(amount.gpus);
    }

    /// The number of points.
    pub fn len(&self) -> usize {
        self.at_ms.len()
    }

    /// Whether there are none (zero everywhere).
    pub fn is_empty(&self) -> bool {
        self.at_ms.is_empty()
    }

    /// The amount from point `i` on.
    #[inline]
    pub fn amount(&self, i: usize) -> Resources {
        Resources::new(self.memory_mb[i], self.vcores[i], self.gpus[i])
    }

    /// The amount held at instant `at_ms` (zero before the first point).
    #[inline]
    pub fn amount_at(&self, at_ms: i64) -> Resources {
        match self.at_ms.partition_point(|&t| t <= at_ms) {
            0 => Resources::ZERO,
            after => self.amount(after - 1),
        }
    }

    /// Checks columns of one length, strictly increasing times, and times
    /// and amounts within the bounds that keep arithmetic exact. `name`
    /// says which timeline, in the message.
    pub fn check(&self, name: &str) -> Result<(), Malformed> {
        let points = same_lengths(
            name,
            &[
                ("at-ms", self.at_ms.len()),
                ("memory-mb", self.memory_mb.len()),
                ("vcores", self.vcores.len()),
                ("gpus", self.gpus.len()),
            ],
        )?;
        let at = &self.at_ms[..points];
        // One pass with no early exit: quick on the host's long, well-formed
        // timelines. Only when it fails does a second pass find what is wrong.
        let increasing = at
            .windows(2)
            .fold(true, |ok, pair| ok & (pair[0] < pair[1]));
        let in_time = match (at.first(), at.last()) {
            (Some(&first), Some(&last)) => first >= -MAX_TIME_MS && last <= MAX_TIME_MS,
            _ => true,
        };
        let all_amounts = (self.memory_mb.iter().zip(&self.vcores).zip(&self.gpus))
            .fold(0, |all, ((memory, vcores), gpus)| {
                all | memory | vcores | gpus
            });
        if increasing && in_time && all_amounts <= MAX_AMOUNT {
            return Ok(());
        }
        if let Some(i) = at.windows(2).position(|pair| pair[0] >= pair[1]) {
            return Err(Malformed::new(format!(
                "{name}: at-ms must strictly increase, but at-ms[{i}] is {} and at-ms[{}] is {}",
                at[i],
                i + 1,
                at[i + 1]
            )));
        }
        if let Some(i) = at
            .iter()
            .position(|t| t.unsigned_abs() > MAX_TIME_MS as u64)
        {
            return Err(Malformed::new(format!(
                "{name}: at-ms[{i}] is {}, beyond ±2^61 ms",
                at[i]
            )));
        }
        let columns = [&self.memory_mb, &self.vcores, &self.gpus];
        for (dimension, column) in DIMENSIONS.into_iter().zip(columns) {
            if let Some(i) = column.iter().position(|&amount| amount > MAX_AMOUNT) {
                return Err(Malformed::new(format!(
                    "{name}: {}[{i}] is {}, above the largest amount 2^40 - 1",
                    dimension.column(),
                    column[i]
                )));
            }
        }
        // Not reached: the first pass failed for one of the reasons above.
        Err(Malformed::new(format!("{name}: malformed")))
    }
}

/// A stretch of time over which none of the walked timelines changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stretch<const K: usize> {
    pub from_ms: i64,
    pub to_ms: i64,
    /// Each timeline's amount, in the order they were given to the walk.
    pub amounts: [Resources; K],
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
    /// The walk over [from_ms, to_ms).
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
                0 => Resources::ZERO,
                // Unequal columns (an unchecked timeline) read as zero.
                _ => amount_or_zero(line, next - 1),
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

fn amount_or_zero(line: &Timeline, i: usize) -> Resources {
    match (line.memory_mb.get(i), line.vcores.get(i), line.gpus.get(i)) {
        (Some(&m), Some(&v), Some(&g)) => Resources::new(m, v, g),
        _ => Resources::ZERO,
    }
}

/// Builds a timeline from amounts pushed in time order, leaving out points
/// that change nothing, and ending it with a zero point as the WIT asks.
#[derive(Debug, Default)]
pub struct TimelineBuilder {
    timeline: Timeline,
    last: Resources,
}

impl TimelineBuilder {
    /// An empty builder: zero until the first push.
    pub fn new() -> Self {
        TimelineBuilder::default()
    }

    /// From `at_ms` on, the amount is `amount`.
    pub fn push(&mut self, at_ms: i64, amount: Resources) {
        if amount != self.last {
            self.timeline.push(at_ms, amount);
            self.last = amount;
        }
    }

    /// The timeline, zero from `to_ms` on.
    pub fn finish(mut self, to_ms: i64) -> Timeline {
        self.push(to_ms, Resources::ZERO);
        self.timeline
    }
}

/// An integral per dimension, in unit·ms.
pub type Integral = [u128; 3];

/// The integrals of `K` timelines from `lo` to any instant up to `hi`:
/// each stretch of the walk over [lo, hi) with the integrals up to its
/// start, closed by a zero stretch at `hi`. Read with [`Integrals::cursor`];
/// the points are [`Integrals::times`].
#[derive(Debug, Clone)]
pub struct Integrals<const K: usize> {
    /// Where each stretch starts: `lo`, the points within, then `hi`.
    times: Vec<i64>,
    /// Each timeline's amount from that time on.
    amounts: Vec<[Resources; K]>,
    /// Each timeline's integral from `lo` to that time.
    before: Vec<[Integral; K]>,
}

impl<const K: usize> Integrals<K> {
    /// The integrals of `lines` over [lo, hi), `lo ≤ hi`, of checked
    /// timelines (so that nothing overflows).
    pub fn new(lines: [&Timeline; K], lo: i64, hi: i64) -> Integrals<K> {
        let points_within = |line: &Timeline| {
            let first = line.at_ms.partition_point(|&t| t <= lo);
            line.at_ms
                .partition_point(|&t| t < hi)
                .saturating_sub(first)
        };
        let capacity = 2 + lines.iter().map(|line| points_within(line)).sum::<usize>();
        let mut integrals = Integrals {
            times: Vec::with_capacity(capacity),
            amounts: Vec::with_capacity(capacity),
            before: Vec::with_capacity(capacity),
        };
        let mut before = [[0u128; 3]; K];
        for stretch in Walk::new(lines, lo, hi) {
            integrals.times.push(stretch.from_ms);
            integrals.amounts.push(stretch.amounts);
            integrals.before.push(before);
            let length = (stretch.to_ms - stretch.from_ms) as u128;
            for (sum, amount) in before.iter_mut().zip(stretch.amounts) {
                for (d, x) in sum.iter_mut().zip(amount.to_array()) {
                    *d += u128::from(x) * length;
                }
            }
        }
        integrals.times.push(hi);
        integrals.amounts.push([Resources::ZERO; K]);
        integrals.before.push(before);
        integrals
    }

    /// The stretch starts, in increasing order, `hi` last.
    pub fn times(&self) -> &[i64] {
        &self.times
    }

    /// A cursor to read integrals at instants in (roughly) increasing order.
    pub fn cursor(&self) -> IntegralCursor<'_, K> {
        IntegralCursor {
            integrals: self,
            i: 0,
        }
    }
}

/// Reads [`Integrals`] at instants: O(1) amortized while instants move
/// forward (or back a little).
#[derive(Debug, Clone)]
pub struct IntegralCursor<'a, const K: usize> {
    integrals: &'a Integrals<K>,
    i: usize,
}

impl<const K: usize> IntegralCursor<'_, K> {
    /// Each timeline's integral from `lo` to `x`: zero at or before `lo`,
    /// and no more after `hi`.
    pub fn to(&mut self, x: i64) -> [Integral; K] {
        let Integrals {
            times,
            amounts,
            before,
        } = self.integrals;
        if x <= times[0] {
            return [[0; 3]; K];
        }
        while self.i + 1 < times.len() && times[self.i + 1] <= x {
            self.i += 1;
        }
        while times[self.i] > x {
            self.i -= 1;
        }
        let since = (x - times[self.i]) as u128;
        std::array::from_fn(|k| {
            let amount = amounts[self.i][k].to_array();
            std::array::from_fn(|d| before[self.i][k][d] + u128::from(amount[d]) * since)
        })
    }
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
            .map(|s| {
                (
                    s.from_ms,
                    s.to_ms,
                    s.amounts[0].memory_mb,
                    s.amounts[1].memory_mb,
                )
            })
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
            .map(|s| {
                (
                    s.from_ms,
                    s.to_ms,
                    s.amounts[0].memory_mb,
                    s.amounts[1].gpus,
                )
            })
            .collect();
        assert_eq!(cut, [(5, 10, 10, 0), (10, 15, 10, 1)]);
        // An empty range walks nothing; an empty timeline is zero everywhere.
        assert_eq!(Walk::new([&a], 7, 7).count(), 0);
        let empty = Timeline::default();
        let all: Vec<_> = Walk::new([&empty], 0, 100).map(|s| s.amounts).collect();
        assert_eq!(all, [[Resources::ZERO]]);
    }

    #[test]
    fn the_last_amount_holds_on() {
        let open = Timeline::from_steps(&[(0, res(5, 0, 0))]);
        let stretches: Vec<_> = Walk::new([&open], 0, 50).collect();
        assert_eq!(stretches.len(), 1);
        assert_eq!(stretches[0].amounts[0], res(5, 0, 0));
        assert_eq!(open.amount_at(1_000), res(5, 0, 0));
        assert_eq!(open.amount_at(-1), Resources::ZERO);
    }

    #[test]
    fn walk_survives_unsorted_and_ragged_input() {
        let unsorted =
            Timeline::from_steps(&[(30, res(1, 0, 0)), (10, res(2, 0, 0)), (20, res(0, 0, 0))]);
        let stretches: Vec<_> = Walk::new([&unsorted], 0, 40).collect();
        assert!(stretches.windows(2).all(|w| w[0].to_ms == w[1].from_ms));
        assert_eq!(stretches.last().unwrap().to_ms, 40);
        let mut ragged = Timeline::from_steps(&[(0, res(1, 1, 1)), (10, res(0, 0, 0))]);
        ragged.gpus.clear();
        assert_eq!(Walk::new([&ragged], 0, 20).count(), 2);
    }

    #[test]
    fn malformed_timelines_say_what_is_wrong() {
        let mut mismatched = Timeline::from_steps(&[(0, res(1, 1, 0)), (5, res(0, 0, 0))]);
        mismatched.vcores.pop();
        // (timeline, message)
        let cases = [
            (
                mismatched,
                "plan-committed: its columns differ in length (2 at-ms, 2 memory-mb, 1 vcores, 2 gpus)",
            ),
            (
                Timeline::from_steps(&[(10, res(1, 0, 0)), (10, res(0, 0, 0))]),
                "plan-committed: at-ms must strictly increase, but at-ms[0] is 10 and at-ms[1] is 10",
            ),
            (
                Timeline::from_steps(&[(0, res(0, 0, u64::MAX))]),
                "plan-committed: gpus[0] is 18446744073709551615, above the largest amount 2^40 - 1",
            ),
            (
                Timeline::from_steps(&[(i64::MIN, res(0, 0, 0))]),
                "plan-committed: at-ms[0] is -9223372036854775808, beyond ±2^61 ms",
            ),
        ];
        for (timeline, message) in cases {
            assert_eq!(
                timeline.check("plan-committed").unwrap_err().message(),
                message
            );
        }
        let fine = Timeline::from_steps(&[
            (-MAX_TIME_MS, res(MAX_AMOUNT, 0, 0)),
            (MAX_TIME_MS, res(0, 0, 0)),
        ]);
        assert_eq!(fine.check("candidate"), Ok(()));
        assert_eq!(Timeline::default().check("candidate"), Ok(()));
    }

    #[test]
    fn builder_leaves_out_points_that_change_nothing() {
        let mut builder = TimelineBuilder::new();
        builder.push(0, Resources::ZERO); // zero before the first point already
        builder.push(5, res(3, 0, 0));
        builder.push(7, res(3, 0, 0));
        builder.push(9, res(1, 0, 0));
        let timeline = builder.finish(12);
        assert_eq!(timeline.at_ms, [5, 9, 12]);
        assert_eq!(timeline.memory_mb, [3, 1, 0]);
        assert_eq!(TimelineBuilder::new().finish(10), Timeline::default());
    }

    #[test]
    fn integrals_from_the_start_to_any_instant() {
        // 10 MB over [0, 10), 4 MB and 1 GPU over [10, 20); a second line of
        // 2 vcores from 5 on.
        let a = Timeline::from_steps(&[(0, res(10, 0, 0)), (10, res(4, 0, 1)), (20, res(0, 0, 0))]);
        let b = Timeline::from_steps(&[(5, res(0, 2, 0))]);
        let integrals = Integrals::new([&a, &b], -5, 30);
        assert_eq!(integrals.times(), [-5, 0, 5, 10, 20, 30]);
        let mut cursor = integrals.cursor();
        // (instant, ∫ of a, ∫ of b), from -5
        let cases = [
            (-10, [0, 0, 0], [0, 0, 0]),
            (-5, [0, 0, 0], [0, 0, 0]),
            (0, [0, 0, 0], [0, 0, 0]),
            (7, [70, 0, 0], [0, 4, 0]),
            (10, [100, 0, 0], [0, 10, 0]),
            (15, [120, 0, 5], [0, 20, 0]),
            (3, [30, 0, 0], [0, 0, 0]), // back a little
            (30, [140, 0, 10], [0, 50, 0]),
            (99, [140, 0, 10], [0, 50, 0]), // nothing after hi
        ];
        for (x, of_a, of_b) in cases {
            assert_eq!(cursor.to(x), [of_a, of_b], "at {x}");
        }
    }
}
