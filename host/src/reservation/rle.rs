//! A run-length-encoded timeline of resources, like YARN's
//! RLESparseResourceAllocation: the one representation of every allocation,
//! plan total and availability in the reservation system.
//!
//! A timeline is a sorted map of steps, time (ms) → amount from then on. The
//! amount is zero before the first step; a final zero step ends it (a timeline
//! whose last step is not zero holds that amount forever, which capacity
//! does). Amounts are signed per dimension so that differences (capacity minus
//! commitments, a plan minus a reservation) can be negative.
//!
//! The map is kept canonical — no step repeats the amount before it — so two
//! timelines that are equal as functions are equal as values. Cuts and block
//! additions touch only the steps in their range (`O(log n + k)` for `k`
//! steps), which keeps building an admission's timelines cheap on a large plan;
//! combining two timelines is one merge walk over both.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Bound::Excluded;
use std::ops::{Add, Neg, Sub};

use serde::{Deserialize, Serialize};

use crate::policy::{SharingResources, Timeline};
use crate::resources::Resources;

/// The end of a segment that never ends (a timeline whose last step is not zero).
pub const FOREVER: i64 = i64::MAX;

/// An amount of every resource dimension, signed so that differences can be
/// negative. Arithmetic saturates: a policy's absurd figures must not crash
/// the host.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Amount {
    /// Memory, in MB.
    pub memory_mb: i64,
    /// Virtual cores.
    pub vcores: i64,
    /// GPUs.
    pub gpus: i64,
}

impl Amount {
    /// Nothing of any dimension.
    pub const ZERO: Amount = Amount::new(0, 0, 0);

    /// An amount of `memory_mb` MB, `vcores` vcores and `gpus` GPUs.
    pub const fn new(memory_mb: i64, vcores: i64, gpus: i64) -> Amount {
        Amount {
            memory_mb,
            vcores,
            gpus,
        }
    }

    /// Memory beyond `i64::MAX` MB saturates; no cluster comes near it.
    pub fn from_resources(resources: &Resources) -> Amount {
        Amount {
            memory_mb: i64::try_from(resources.memory_mb).unwrap_or(i64::MAX),
            vcores: i64::from(resources.vcores),
            gpus: i64::from(resources.gpus),
        }
    }

    /// The cluster's `Resources`, or None when a dimension is negative or too large.
    pub fn to_resources(&self) -> Option<Resources> {
        Some(Resources {
            memory_mb: u64::try_from(self.memory_mb).ok()?,
            vcores: u32::try_from(self.vcores).ok()?,
            gpus: u32::try_from(self.gpus).ok()?,
        })
    }

    /// The WIT record, or None when a dimension is negative.
    pub fn to_wit(&self) -> Option<SharingResources> {
        Some(SharingResources {
            memory_mb: u64::try_from(self.memory_mb).ok()?,
            vcores: u64::try_from(self.vcores).ok()?,
            gpus: u64::try_from(self.gpus).ok()?,
        })
    }

    /// True when every dimension is zero.
    pub fn is_zero(&self) -> bool {
        *self == Amount::ZERO
    }

    /// True when no dimension is negative.
    pub fn is_non_negative(&self) -> bool {
        self.memory_mb >= 0 && self.vcores >= 0 && self.gpus >= 0
    }

    /// True when every dimension of `self` is at most that of `other`.
    pub fn fits_in(&self, other: &Amount) -> bool {
        self.memory_mb <= other.memory_mb && self.vcores <= other.vcores && self.gpus <= other.gpus
    }

    /// The smaller of each dimension.
    pub fn min(self, other: Amount) -> Amount {
        Amount::new(
            self.memory_mb.min(other.memory_mb),
            self.vcores.min(other.vcores),
            self.gpus.min(other.gpus),
        )
    }

    /// The larger of each dimension.
    pub fn max(self, other: Amount) -> Amount {
        Amount::new(
            self.memory_mb.max(other.memory_mb),
            self.vcores.max(other.vcores),
            self.gpus.max(other.gpus),
        )
    }

    /// `self` × `count`, or None on overflow.
    pub fn checked_mul(self, count: i64) -> Option<Amount> {
        Some(Amount::new(
            self.memory_mb.checked_mul(count)?,
            self.vcores.checked_mul(count)?,
            self.gpus.checked_mul(count)?,
        ))
    }

    /// How many whole `unit`s fit in `self`: none if any dimension of `self`
    /// is negative (something is already over-committed), and a dimension the
    /// unit does not use imposes nothing.
    pub fn count_fitting(&self, unit: &Amount) -> i64 {
        if !self.is_non_negative() {
            return 0;
        }
        [
            (self.memory_mb, unit.memory_mb),
            (self.vcores, unit.vcores),
            (self.gpus, unit.gpus),
        ]
        .into_iter()
        .filter(|&(_, need)| need > 0)
        .map(|(have, need)| have / need)
        .min()
        .unwrap_or(i64::MAX)
    }
}

impl Add for Amount {
    type Output = Amount;
    fn add(self, other: Amount) -> Amount {
        Amount::new(
            self.memory_mb.saturating_add(other.memory_mb),
            self.vcores.saturating_add(other.vcores),
            self.gpus.saturating_add(other.gpus),
        )
    }
}

impl Sub for Amount {
    type Output = Amount;
    fn sub(self, other: Amount) -> Amount {
        Amount::new(
            self.memory_mb.saturating_sub(other.memory_mb),
            self.vcores.saturating_sub(other.vcores),
            self.gpus.saturating_sub(other.gpus),
        )
    }
}

impl Neg for Amount {
    type Output = Amount;
    fn neg(self) -> Amount {
        Amount::ZERO - self
    }
}

impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "<memory:{} MB, vcores:{}, gpus:{}>",
            self.memory_mb, self.vcores, self.gpus
        )
    }
}

/// The integral of a timeline over a range, per dimension, in unit × ms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Integral {
    /// Memory over time, in MB × ms.
    pub memory_mb_ms: i128,
    /// Virtual cores over time, in vcores × ms.
    pub vcores_ms: i128,
    /// GPUs over time, in GPUs × ms.
    pub gpus_ms: i128,
}

/// Why a timeline could not be converted to or from the WIT columns.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RleError {
    /// The timeline goes below zero; the WIT columns are unsigned.
    #[error(
        "the timeline is negative from {at_ms} ms on ({amount}); the WIT timeline carries only amounts ≥ 0"
    )]
    Negative {
        /// Where it first goes negative, in ms.
        at_ms: i64,
        /// The amount it has from there.
        amount: Amount,
    },
    /// The timeline never returns to zero, and a WIT timeline must.
    #[error(
        "the timeline holds {amount} forever from {since_ms} ms on; a WIT timeline must end with a zero point"
    )]
    Unbounded {
        /// Its last step, in ms, from which it holds `amount` forever.
        since_ms: i64,
        /// The amount it holds from `since_ms` on.
        amount: Amount,
    },
    /// The four WIT columns are not of one length.
    #[error(
        "the timeline's columns differ in length: at-ms {at_ms}, memory-mb {memory_mb}, vcores {vcores}, gpus {gpus}"
    )]
    ColumnLengths {
        /// The length of the `at-ms` column.
        at_ms: usize,
        /// The length of the `memory-mb` column.
        memory_mb: usize,
        /// The length of the `vcores` column.
        vcores: usize,
        /// The length of the `gpus` column.
        gpus: usize,
    },
    /// A point's `at-ms` is not after the one before it.
    #[error(
        "the timeline's at-ms is not strictly increasing: point {index} is at {at_ms} ms, after {previous_ms} ms"
    )]
    NotIncreasing {
        /// The index of the offending point.
        index: usize,
        /// The time of the point before it, in ms.
        previous_ms: i64,
        /// The time of the offending point, in ms.
        at_ms: i64,
    },
    /// A point has an amount above `i64::MAX` in some dimension.
    #[error("the timeline's point {index} (at {at_ms} ms) has an amount above {max}", max = i64::MAX)]
    TooLarge {
        /// The index of the offending point.
        index: usize,
        /// The time of the offending point, in ms.
        at_ms: i64,
    },
}

/// A step function of resources over time; see the module documentation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RleTimeline {
    steps: BTreeMap<i64, Amount>,
}

/// Collects steps in increasing time, dropping those that repeat the amount
/// before them, so what it builds is canonical.
struct StepsBuilder {
    steps: Vec<(i64, Amount)>,
    last: Amount,
}

impl StepsBuilder {
    fn new() -> StepsBuilder {
        StepsBuilder {
            steps: Vec::new(),
            last: Amount::ZERO,
        }
    }

    fn push(&mut self, at_ms: i64, amount: Amount) {
        debug_assert!(self.steps.last().is_none_or(|&(t, _)| t < at_ms));
        if amount != self.last {
            self.steps.push((at_ms, amount));
            self.last = amount;
        }
    }

    fn finish(self) -> RleTimeline {
        // Sorted input: the map is bulk-built in linear time.
        RleTimeline {
            steps: self.steps.into_iter().collect(),
        }
    }
}

impl RleTimeline {
    /// Zero everywhere.
    pub fn new() -> RleTimeline {
        RleTimeline::default()
    }

    /// `amount` over [`start`, `end`) and zero elsewhere; `end` may be [`FOREVER`].
    pub fn block(start: i64, end: i64, amount: Amount) -> RleTimeline {
        let mut timeline = RleTimeline::new();
        timeline.add_block(start, end, amount);
        timeline
    }

    /// The sum of `(start, end, amount)` blocks.
    pub fn from_blocks(blocks: impl IntoIterator<Item = (i64, i64, Amount)>) -> RleTimeline {
        let mut timeline = RleTimeline::new();
        for (start, end, amount) in blocks {
            timeline.add_block(start, end, amount);
        }
        timeline
    }

    /// True when the timeline is zero everywhere.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// The number of steps (the final zero step included).
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// The steps in time order: from each time on, the amount.
    pub fn steps(&self) -> impl Iterator<Item = (i64, Amount)> + '_ {
        self.steps.iter().map(|(&t, &amount)| (t, amount))
    }

    /// Every segment `(start, end, amount)` from the first step on, zero ones
    /// between blocks included; the last ends at [`FOREVER`].
    pub fn segments(&self) -> impl Iterator<Item = (i64, i64, Amount)> + '_ {
        let mut steps = self.steps.iter().peekable();
        std::iter::from_fn(move || {
            let (&start, &amount) = steps.next()?;
            let end = steps.peek().map_or(FOREVER, |&(&t, _)| t);
            Some((start, end, amount))
        })
    }

    /// The segments whose amount is not zero.
    pub fn nonzero_segments(&self) -> impl Iterator<Item = (i64, i64, Amount)> + '_ {
        self.segments().filter(|(_, _, amount)| !amount.is_zero())
    }

    /// The first and last step: where the timeline is not zero lies inside
    /// [first, last) (last is [`FOREVER`] if it never returns to zero).
    pub fn span(&self) -> Option<(i64, i64)> {
        let (&first, _) = self.steps.first_key_value()?;
        let (&last, &amount) = self.steps.last_key_value()?;
        Some((first, if amount.is_zero() { last } else { FOREVER }))
    }

    /// Where the latest stretch before `before` in which at least `gang`
    /// units fit ends: the start of the run, reaching up to `before`, in which
    /// fewer fit (None if fewer fit everywhere before `before`).
    pub fn end_of_room_before(&self, before: i64, unit: &Amount, gang: i64) -> Option<i64> {
        let mut run_start = before;
        for (&at, amount) in self.steps.range(..before).rev() {
            if amount.count_fitting(unit) >= gang {
                return Some(run_start);
            }
            run_start = at;
        }
        None
    }

    /// The amount at `at_ms`.
    pub fn value_at(&self, at_ms: i64) -> Amount {
        self.steps
            .range(..=at_ms)
            .next_back()
            .map_or(Amount::ZERO, |(_, &amount)| amount)
    }

    /// The amount just before `at_ms`.
    fn value_before(&self, at_ms: i64) -> Amount {
        self.steps
            .range(..at_ms)
            .next_back()
            .map_or(Amount::ZERO, |(_, &amount)| amount)
    }

    /// Removes the step at `at_ms` if it repeats the amount before it.
    fn drop_if_redundant(&mut self, at_ms: i64) {
        if let Some(&amount) = self.steps.get(&at_ms)
            && amount == self.value_before(at_ms)
        {
            self.steps.remove(&at_ms);
        }
    }

    /// Adds `amount` over [`start`, `end`) in place (`end` may be
    /// [`FOREVER`]); touches only the steps inside the block.
    pub fn add_block(&mut self, start: i64, end: i64, amount: Amount) {
        if start >= end || amount.is_zero() {
            return;
        }
        let before_start = self.value_before(start);
        let at_end = (end != FOREVER).then(|| self.value_at(end));
        self.steps.entry(start).or_insert(before_start);
        if let Some(at_end) = at_end {
            self.steps.entry(end).or_insert(at_end);
        }
        for (_, value) in self.steps.range_mut(start..end) {
            *value = *value + amount;
        }
        // Steps inside the block all moved by the same amount, so only its
        // two edges can have become redundant.
        self.drop_if_redundant(start);
        if end != FOREVER {
            self.drop_if_redundant(end);
        }
    }

    /// Adds `other` in place, block by block: `O(k log n)` for `k` steps in
    /// `other`, cheaper than a merge walk when `self` is a large plan total.
    pub fn add_timeline(&mut self, other: &RleTimeline) {
        for (start, end, amount) in other.nonzero_segments() {
            self.add_block(start, end, amount);
        }
    }

    /// Subtracts `other` in place, block by block.
    pub fn subtract_timeline(&mut self, other: &RleTimeline) {
        for (start, end, amount) in other.nonzero_segments() {
            self.add_block(start, end, -amount);
        }
    }

    /// Pointwise `combine(self, other)` in one merge walk over both.
    /// `combine(0, 0)` must be zero, as it is for +, −, min and max.
    pub fn merge(
        &self,
        other: &RleTimeline,
        combine: impl Fn(Amount, Amount) -> Amount,
    ) -> RleTimeline {
        let mut left = self.steps.iter().peekable();
        let mut right = other.steps.iter().peekable();
        let (mut left_value, mut right_value) = (Amount::ZERO, Amount::ZERO);
        let mut out = StepsBuilder::new();
        loop {
            let at_ms = match (left.peek(), right.peek()) {
                (None, None) => break,
                (Some(&(&t, _)), None) | (None, Some(&(&t, _))) => t,
                (Some(&(&l, _)), Some(&(&r, _))) => l.min(r),
            };
            if let Some((_, &value)) = left.next_if(|&(&t, _)| t == at_ms) {
                left_value = value;
            }
            if let Some((_, &value)) = right.next_if(|&(&t, _)| t == at_ms) {
                right_value = value;
            }
            out.push(at_ms, combine(left_value, right_value));
        }
        out.finish()
    }

    /// The pointwise minimum.
    pub fn min(&self, other: &RleTimeline) -> RleTimeline {
        self.merge(other, Amount::min)
    }

    /// The pointwise maximum.
    pub fn max(&self, other: &RleTimeline) -> RleTimeline {
        self.merge(other, Amount::max)
    }

    /// The first step where some dimension is negative, with its amount.
    pub fn first_negative(&self) -> Option<(i64, Amount)> {
        self.steps().find(|(_, amount)| !amount.is_non_negative())
    }

    /// True when no dimension is ever negative.
    pub fn is_non_negative(&self) -> bool {
        self.first_negative().is_none()
    }

    /// The integral over [`from`, `to`), per dimension, in unit × ms.
    pub fn integral(&self, from: i64, to: i64) -> Integral {
        let mut total = Integral::default();
        for (start, end, amount) in self.restrict(from, to).nonzero_segments() {
            let length = i128::from(end) - i128::from(start);
            total.memory_mb_ms = total
                .memory_mb_ms
                .saturating_add(i128::from(amount.memory_mb) * length);
            total.vcores_ms = total
                .vcores_ms
                .saturating_add(i128::from(amount.vcores) * length);
            total.gpus_ms = total
                .gpus_ms
                .saturating_add(i128::from(amount.gpus) * length);
        }
        total
    }

    /// The steps inside [`from`, `to`): first `from` with the amount there,
    /// then every step after it and before `to` (none for an empty range).
    pub fn steps_within(&self, from: i64, to: i64) -> impl Iterator<Item = (i64, Amount)> + '_ {
        let inside = (from < to).then(|| {
            std::iter::once((from, self.value_at(from))).chain(
                self.steps
                    .range((Excluded(from), Excluded(to)))
                    .map(|(&t, &amount)| (t, amount)),
            )
        });
        inside.into_iter().flatten()
    }

    /// The smallest amount of each dimension over [`from`, `to`) (zero for an empty range).
    pub fn min_over(&self, from: i64, to: i64) -> Amount {
        self.steps_within(from, to)
            .map(|(_, amount)| amount)
            .reduce(Amount::min)
            .unwrap_or(Amount::ZERO)
    }

    /// The timeline inside [`from`, `to`) and zero outside it: `O(log n + k)`
    /// for the `k` steps in the range. `to` may be [`FOREVER`].
    pub fn restrict(&self, from: i64, to: i64) -> RleTimeline {
        let mut out = StepsBuilder::new();
        for (at_ms, amount) in self.steps_within(from, to) {
            out.push(at_ms, amount);
        }
        if from < to && to != FOREVER {
            out.push(to, Amount::ZERO);
        }
        out.finish()
    }

    /// The same timeline `delta` ms later.
    pub fn shifted(&self, delta: i64) -> RleTimeline {
        RleTimeline {
            steps: self
                .steps
                .iter()
                .map(|(&t, &amount)| (t.saturating_add(delta), amount))
                .collect(),
        }
    }

    /// `self` repeated every `period_ms` from where it is on (occurrence k is
    /// `self` shifted by k × period, k ≥ 0), cut to [`from`, `to`): what a
    /// recurring reservation holds in that range. Only the occurrences that
    /// reach into the range are built.
    pub fn unroll(&self, period_ms: i64, from: i64, to: i64) -> RleTimeline {
        let mut out = RleTimeline::new();
        let Some((first, last)) = self.span() else {
            return out;
        };
        if from >= to || period_ms <= 0 || last == FOREVER {
            return self.restrict(from, to);
        }
        // Occurrence k covers [first + kP, last + kP); the first to reach
        // past `from` has last + kP > from.
        let mut k = if from < last {
            0
        } else {
            (from - last).div_euclid(period_ms) + 1
        };
        while let Some(offset) = k.checked_mul(period_ms) {
            if first.saturating_add(offset) >= to {
                break;
            }
            for (start, end, amount) in self.nonzero_segments() {
                let start = start.saturating_add(offset).max(from);
                let end = end.saturating_add(offset).min(to);
                out.add_block(start, end, amount);
            }
            k += 1;
        }
        out
    }

    /// The WIT columns: refused if the timeline is ever negative or never
    /// returns to zero (the WIT timeline ends with a zero point).
    pub fn to_timeline(&self) -> Result<Timeline, RleError> {
        if let Some((at_ms, amount)) = self.first_negative() {
            return Err(RleError::Negative { at_ms, amount });
        }
        if let Some((&since_ms, &amount)) = self.steps.last_key_value()
            && !amount.is_zero()
        {
            return Err(RleError::Unbounded { since_ms, amount });
        }
        let mut timeline = Timeline {
            at_ms: Vec::with_capacity(self.steps.len()),
            memory_mb: Vec::with_capacity(self.steps.len()),
            vcores: Vec::with_capacity(self.steps.len()),
            gpus: Vec::with_capacity(self.steps.len()),
        };
        for (&at_ms, amount) in &self.steps {
            // Checked non-negative above, so the casts keep every value.
            timeline.at_ms.push(at_ms);
            timeline.memory_mb.push(amount.memory_mb as u64);
            timeline.vcores.push(amount.vcores as u64);
            timeline.gpus.push(amount.gpus as u64);
        }
        Ok(timeline)
    }

    /// The WIT columns of the timeline cut to [`from`, `to`): the same as
    /// `restrict(from, to).to_timeline()`, written straight from the steps in
    /// the range without building the cut — the admission's hot path.
    pub fn to_timeline_within(&self, from: i64, to: i64) -> Result<Timeline, RleError> {
        // Sized up front (a cheap count): four columns grown step by step
        // would reallocate over and over on a large cut.
        let points = if from < to {
            self.steps.range((Excluded(from), Excluded(to))).count() + 2
        } else {
            0
        };
        let mut timeline = Timeline {
            at_ms: Vec::with_capacity(points),
            memory_mb: Vec::with_capacity(points),
            vcores: Vec::with_capacity(points),
            gpus: Vec::with_capacity(points),
        };
        let mut push = |at_ms: i64, amount: Amount| -> Result<(), RleError> {
            if !amount.is_non_negative() {
                return Err(RleError::Negative { at_ms, amount });
            }
            // Checked non-negative just above, so the casts keep every value.
            timeline.at_ms.push(at_ms);
            timeline.memory_mb.push(amount.memory_mb as u64);
            timeline.vcores.push(amount.vcores as u64);
            timeline.gpus.push(amount.gpus as u64);
            Ok(())
        };
        let mut last = Amount::ZERO;
        for (at_ms, amount) in self.steps_within(from, to) {
            if amount != last {
                push(at_ms, amount)?;
                last = amount;
            }
        }
        if !last.is_zero() {
            if to == FOREVER {
                let since_ms = self.steps.last_key_value().map_or(from, |(&t, _)| t);
                return Err(RleError::Unbounded {
                    since_ms,
                    amount: last,
                });
            }
            push(to, Amount::ZERO)?;
        }
        Ok(timeline)
    }

    /// Reads the WIT columns (as a policy returns them): the columns must be
    /// of one length, `at-ms` strictly increasing and every amount at most
    /// `i64::MAX`. A last point that is not zero holds from then on.
    pub fn from_timeline(timeline: &Timeline) -> Result<RleTimeline, RleError> {
        let points = timeline.at_ms.len();
        if timeline.memory_mb.len() != points
            || timeline.vcores.len() != points
            || timeline.gpus.len() != points
        {
            return Err(RleError::ColumnLengths {
                at_ms: points,
                memory_mb: timeline.memory_mb.len(),
                vcores: timeline.vcores.len(),
                gpus: timeline.gpus.len(),
            });
        }
        let mut out = StepsBuilder::new();
        for index in 0..points {
            let at_ms = timeline.at_ms[index];
            if index > 0 && timeline.at_ms[index - 1] >= at_ms {
                return Err(RleError::NotIncreasing {
                    index,
                    previous_ms: timeline.at_ms[index - 1],
                    at_ms,
                });
            }
            let dimension = |column: &[u64]| i64::try_from(column[index]).ok();
            let (Some(memory_mb), Some(vcores), Some(gpus)) = (
                dimension(&timeline.memory_mb),
                dimension(&timeline.vcores),
                dimension(&timeline.gpus),
            ) else {
                return Err(RleError::TooLarge { index, at_ms });
            };
            out.push(at_ms, Amount::new(memory_mb, vcores, gpus));
        }
        Ok(out.finish())
    }
}

impl Add for &RleTimeline {
    type Output = RleTimeline;
    fn add(self, other: &RleTimeline) -> RleTimeline {
        self.merge(other, |a, b| a + b)
    }
}

impl Sub for &RleTimeline {
    type Output = RleTimeline;
    fn sub(self, other: &RleTimeline) -> RleTimeline {
        self.merge(other, |a, b| a - b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn amount(memory_mb: i64, vcores: i64) -> Amount {
        Amount::new(memory_mb, vcores, 0)
    }

    fn steps(timeline: &RleTimeline) -> Vec<(i64, i64)> {
        timeline.steps().map(|(t, a)| (t, a.memory_mb)).collect()
    }

    #[test]
    fn add_block_splits_and_merges_steps() {
        let mut timeline = RleTimeline::block(10, 20, amount(1024, 1));
        assert_eq!(steps(&timeline), vec![(10, 1024), (20, 0)]);
        // Overlapping block: a step inside, the edges kept apart.
        timeline.add_block(15, 30, amount(1024, 1));
        assert_eq!(
            steps(&timeline),
            vec![(10, 1024), (15, 2048), (20, 1024), (30, 0)]
        );
        // Filling the hole makes [10, 30) flat at 2048 above 15: steps merge.
        timeline.add_block(10, 15, amount(1024, 1));
        timeline.add_block(20, 30, amount(1024, 1));
        assert_eq!(steps(&timeline), vec![(10, 2048), (30, 0)]);
        // Removing everything leaves the empty timeline, equal to a new one.
        timeline.add_block(10, 30, -amount(2048, 2));
        assert_eq!(timeline, RleTimeline::new());
        // Empty and zero blocks change nothing.
        timeline.add_block(5, 5, amount(1, 1));
        timeline.add_block(5, 9, Amount::ZERO);
        assert!(timeline.is_empty());
    }

    #[test]
    fn adjacent_equal_blocks_are_one_step() {
        let timeline = RleTimeline::from_blocks([(0, 10, amount(5, 1)), (10, 20, amount(5, 1))]);
        assert_eq!(steps(&timeline), vec![(0, 5), (20, 0)]);
        assert_eq!(timeline.span(), Some((0, 20)));
    }

    #[test]
    fn add_then_subtract_is_identity_and_agrees_with_in_place() {
        let a = RleTimeline::from_blocks([(0, 100, amount(10, 1)), (50, 150, amount(20, 2))]);
        let b = RleTimeline::from_blocks([(25, 75, amount(7, 1)), (140, 160, amount(3, 0))]);
        let sum = &a + &b;
        assert_eq!(&sum - &b, a);
        let mut in_place = a.clone();
        in_place.add_timeline(&b);
        assert_eq!(in_place, sum);
        in_place.subtract_timeline(&b);
        assert_eq!(in_place, a);
        // Commutative and associative, as functions and so as values.
        assert_eq!(&a + &b, &b + &a);
        let c = RleTimeline::block(-10, 30, amount(1, 1));
        assert_eq!(&(&a + &b) + &c, &a + &(&b + &c));
    }

    #[test]
    fn difference_can_be_negative_and_first_negative_says_where() {
        let capacity = RleTimeline::block(0, FOREVER, amount(100, 10));
        let committed =
            RleTimeline::from_blocks([(10, 20, amount(60, 1)), (15, 30, amount(60, 1))]);
        let free = &capacity - &committed;
        assert_eq!(free.value_at(12), amount(40, 9));
        assert_eq!(free.value_at(17), amount(-20, 8));
        assert!(!free.is_non_negative());
        assert_eq!(free.first_negative(), Some((15, amount(-20, 8))));
        assert!(capacity.is_non_negative());
        assert_eq!(free.span(), Some((0, FOREVER)));
    }

    #[test]
    fn min_and_max_are_pointwise_per_dimension() {
        let a = RleTimeline::block(0, 10, Amount::new(100, 1, 0));
        let b = RleTimeline::block(5, 15, Amount::new(50, 4, 1));
        let low = a.min(&b);
        assert_eq!(low.value_at(2), Amount::ZERO);
        assert_eq!(low.value_at(7), Amount::new(50, 1, 0));
        assert_eq!(low.value_at(12), Amount::ZERO);
        let high = a.max(&b);
        assert_eq!(high.value_at(2), Amount::new(100, 1, 0));
        assert_eq!(high.value_at(7), Amount::new(100, 4, 1));
        assert_eq!(high.value_at(12), Amount::new(50, 4, 1));
        assert_eq!(high.value_at(15), Amount::ZERO);
    }

    #[test]
    fn value_at_before_inside_at_edges_and_after() {
        let timeline = RleTimeline::block(10, 20, amount(8, 1));
        assert_eq!(timeline.value_at(9), Amount::ZERO);
        assert_eq!(timeline.value_at(10), amount(8, 1));
        assert_eq!(timeline.value_at(19), amount(8, 1));
        assert_eq!(timeline.value_at(20), Amount::ZERO);
        assert_eq!(timeline.value_at(i64::MIN), Amount::ZERO);
    }

    #[test]
    fn integral_counts_only_the_range() {
        let timeline = RleTimeline::from_blocks([
            (0, 10, Amount::new(100, 2, 1)),
            (20, 30, Amount::new(10, 1, 0)),
        ]);
        let whole = timeline.integral(i64::MIN / 2, i64::MAX / 2);
        assert_eq!(whole.memory_mb_ms, 100 * 10 + 10 * 10);
        assert_eq!(whole.vcores_ms, 2 * 10 + 10);
        assert_eq!(whole.gpus_ms, 10);
        let part = timeline.integral(5, 25);
        assert_eq!(part.memory_mb_ms, 100 * 5 + 10 * 5);
        assert_eq!(timeline.integral(10, 20), Integral::default());
        // Large figures stay exact in i128.
        let big = RleTimeline::block(0, 1 << 40, Amount::new(1 << 40, 0, 0));
        assert_eq!(big.integral(0, 1 << 40).memory_mb_ms, 1i128 << 80);
    }

    #[test]
    fn restrict_cuts_to_the_range() {
        let timeline = RleTimeline::from_blocks([(0, 100, amount(1, 1)), (40, 60, amount(1, 1))]);
        let cut = timeline.restrict(50, 80);
        assert_eq!(steps(&cut), vec![(50, 2), (60, 1), (80, 0)]);
        assert_eq!(timeline.restrict(100, 200), RleTimeline::new());
        assert_eq!(timeline.restrict(60, 60), RleTimeline::new());
        assert_eq!(timeline.restrict(i64::MIN, FOREVER), timeline);
        let forever = RleTimeline::block(0, FOREVER, amount(3, 1));
        assert_eq!(steps(&forever.restrict(5, 9)), vec![(5, 3), (9, 0)]);
        assert_eq!(timeline.min_over(30, 50), amount(1, 1));
        assert_eq!(timeline.min_over(45, 55), amount(2, 2));
        assert_eq!(timeline.min_over(90, 110), Amount::ZERO);
    }

    #[test]
    fn unroll_repeats_every_period_from_the_first_occurrence() {
        let base = RleTimeline::block(10, 30, amount(4, 1));
        let unrolled = base.unroll(100, 0, 350);
        assert_eq!(
            steps(&unrolled),
            vec![
                (10, 4),
                (30, 0),
                (110, 4),
                (130, 0),
                (210, 4),
                (230, 0),
                (310, 4),
                (330, 0)
            ]
        );
        // Only the occurrences reaching into the range, cut at its edges.
        assert_eq!(
            steps(&base.unroll(100, 120, 215)),
            vec![(120, 4), (130, 0), (210, 4), (215, 0)]
        );
        // Nothing before the first occurrence.
        assert_eq!(base.unroll(100, -500, 5), RleTimeline::new());
        assert_eq!(base.shifted(100).value_at(115), amount(4, 1));
    }

    #[test]
    fn timeline_columns_round_trip_with_final_zero() {
        let timeline = RleTimeline::from_blocks([
            (0, 10, Amount::new(1024, 1, 1)),
            (5, 20, Amount::new(2048, 2, 0)),
        ]);
        let wit = timeline.to_timeline().unwrap();
        assert_eq!(wit.at_ms, vec![0, 5, 10, 20]);
        assert_eq!(wit.memory_mb, vec![1024, 3072, 2048, 0]);
        assert_eq!(wit.vcores, vec![1, 3, 2, 0]);
        assert_eq!(wit.gpus, vec![1, 1, 0, 0]);
        assert_eq!(RleTimeline::from_timeline(&wit).unwrap(), timeline);
        let empty = RleTimeline::new().to_timeline().unwrap();
        assert!(empty.at_ms.is_empty());
    }

    #[test]
    fn to_timeline_within_equals_the_cut_converted() {
        let timeline = RleTimeline::from_blocks([
            (0, 100, amount(1, 1)),
            (40, 60, amount(1, 1)),
            (150, 170, amount(4, 0)),
        ]);
        for (from, to) in [
            (50, 80),
            (0, 200),
            (-10, 45),
            (100, 150),
            (60, 60),
            (155, 165),
        ] {
            let columns = |t: Timeline| (t.at_ms, t.memory_mb, t.vcores, t.gpus);
            assert_eq!(
                columns(timeline.to_timeline_within(from, to).unwrap()),
                columns(timeline.restrict(from, to).to_timeline().unwrap()),
                "[{from}, {to})"
            );
        }
        let forever = RleTimeline::block(5, FOREVER, amount(1, 1));
        assert!(matches!(
            forever.to_timeline_within(0, FOREVER),
            Err(RleError::Unbounded { since_ms: 5, .. })
        ));
        let negative = RleTimeline::block(5, 10, amount(-1, 0));
        assert!(matches!(
            negative.to_timeline_within(7, 9),
            Err(RleError::Negative { at_ms: 7, .. })
        ));
    }

    #[test]
    fn to_timeline_refuses_negative_and_unbounded() {
        let negative = RleTimeline::block(5, 10, amount(-1, 0));
        assert_eq!(
            negative.to_timeline().unwrap_err(),
            RleError::Negative {
                at_ms: 5,
                amount: amount(-1, 0)
            }
        );
        let forever = RleTimeline::block(5, FOREVER, amount(1, 1));
        assert!(matches!(
            forever.to_timeline(),
            Err(RleError::Unbounded { since_ms: 5, .. })
        ));
    }

    #[test]
    fn from_timeline_refuses_malformed_columns_and_canonicalises() {
        let timeline = |at_ms: Vec<i64>, memory_mb: Vec<u64>| Timeline {
            vcores: vec![0; memory_mb.len()],
            gpus: vec![0; memory_mb.len()],
            at_ms,
            memory_mb,
        };
        let mut short = timeline(vec![0, 1], vec![1, 0]);
        short.gpus.pop();
        assert!(matches!(
            RleTimeline::from_timeline(&short),
            Err(RleError::ColumnLengths { gpus: 1, .. })
        ));
        assert_eq!(
            RleTimeline::from_timeline(&timeline(vec![0, 5, 5], vec![1, 2, 0])).unwrap_err(),
            RleError::NotIncreasing {
                index: 2,
                previous_ms: 5,
                at_ms: 5
            }
        );
        assert!(matches!(
            RleTimeline::from_timeline(&timeline(vec![0], vec![u64::MAX])),
            Err(RleError::TooLarge { index: 0, .. })
        ));
        // Leading zeros and repeated amounts are dropped; a non-zero last point holds on.
        let read =
            RleTimeline::from_timeline(&timeline(vec![0, 3, 7, 9], vec![0, 4, 4, 6])).unwrap();
        assert_eq!(steps(&read), vec![(3, 4), (9, 6)]);
        assert_eq!(read.value_at(1_000_000), amount(6, 0));
    }

    #[test]
    fn count_fitting_takes_the_scarcest_dimension() {
        let unit = Amount::new(1024, 1, 0);
        assert_eq!(Amount::new(4096, 10, 0).count_fitting(&unit), 4);
        assert_eq!(Amount::new(8192, 3, 0).count_fitting(&unit), 3);
        assert_eq!(Amount::new(8192, 3, -1).count_fitting(&unit), 0);
        assert_eq!(
            Amount::new(8192, 8, 1).count_fitting(&Amount::new(1024, 1, 1)),
            1
        );
    }
}
