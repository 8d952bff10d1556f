//! Resource vectors and dominant shares: the arithmetic every policy does on
//! (memory MB, vcores, GPUs).
//!
//! [`Resources`] is the WIT's `types.resources` record with methods added;
//! every operation saturates, so hostile sizes give odd numbers, never a
//! trap. [`Cluster`] holds a cluster's total and turns amounts into dominant
//! shares (the largest fraction of the total an amount takes in any
//! resource) and shares back into amounts.

use std::ops::{Index, IndexMut};

pub use crate::types::Resources;

/// A resource dimension. Every limit in Weft holds in each one separately.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dimension {
    Memory,
    Vcores,
    Gpus,
}

/// The dimensions, in the order of [`Resources::to_array`].
pub const DIMENSIONS: [Dimension; 3] = [Dimension::Memory, Dimension::Vcores, Dimension::Gpus];

impl Dimension {
    /// Its place in [`Resources::to_array`].
    #[inline]
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

    /// Its name in the WIT records' columns: `memory-mb`, `vcores`, `gpus`.
    pub fn column(self) -> &'static str {
        match self {
            Dimension::Memory => "memory-mb",
            Dimension::Vcores => "vcores",
            Dimension::Gpus => "gpus",
        }
    }
}

impl Resources {
    /// Nothing of anything.
    pub const ZERO: Resources = Resources::new(0, 0, 0);

    /// An amount of each resource.
    #[inline]
    pub const fn new(memory_mb: u64, vcores: u64, gpus: u64) -> Resources {
        Resources {
            memory_mb,
            vcores,
            gpus,
        }
    }

    /// `[memory_mb, vcores, gpus]`, in the order of [`DIMENSIONS`].
    #[inline]
    pub const fn to_array(self) -> [u64; 3] {
        [self.memory_mb, self.vcores, self.gpus]
    }

    /// The inverse of [`Resources::to_array`].
    #[inline]
    pub const fn from_array([memory_mb, vcores, gpus]: [u64; 3]) -> Resources {
        Resources::new(memory_mb, vcores, gpus)
    }

    /// `f` applied to each resource.
    #[inline]
    pub fn map(self, f: impl Fn(u64) -> u64) -> Resources {
        Resources::new(f(self.memory_mb), f(self.vcores), f(self.gpus))
    }

    /// `f` applied to each resource of `self` and `other`, pairwise.
    #[inline]
    pub fn zip_with(self, other: Resources, f: impl Fn(u64, u64) -> u64) -> Resources {
        Resources::new(
            f(self.memory_mb, other.memory_mb),
            f(self.vcores, other.vcores),
            f(self.gpus, other.gpus),
        )
    }

    /// Whether `self` is at least `other` in every resource.
    #[inline]
    pub fn covers(self, other: Resources) -> bool {
        self.memory_mb >= other.memory_mb && self.vcores >= other.vcores && self.gpus >= other.gpus
    }

    /// Whether every resource is 0.
    #[inline]
    pub fn is_zero(self) -> bool {
        self == Resources::ZERO
    }

    /// `self + other`, each at most `u64::MAX`.
    #[inline]
    pub fn plus(self, other: Resources) -> Resources {
        self.zip_with(other, u64::saturating_add)
    }

    /// `self − other`, each at least 0.
    #[inline]
    pub fn minus(self, other: Resources) -> Resources {
        self.zip_with(other, u64::saturating_sub)
    }

    /// `self × count`, each at most `u64::MAX`.
    #[inline]
    pub fn times(self, count: u64) -> Resources {
        self.map(|x| saturating_times(x, count))
    }

    /// The larger of each resource.
    #[inline]
    pub fn max(self, other: Resources) -> Resources {
        self.zip_with(other, u64::max)
    }

    /// The smaller of each resource.
    #[inline]
    pub fn min(self, other: Resources) -> Resources {
        self.zip_with(other, u64::min)
    }

    /// How many containers of `size` fit in `self`. A resource the container
    /// does not use sets no bound, so an all-zero size fits `u64::MAX` times.
    #[inline]
    pub fn fits(self, size: Resources) -> u64 {
        let bound = |have: u64, need: u64| have.checked_div(need).unwrap_or(u64::MAX);
        bound(self.memory_mb, size.memory_mb)
            .min(bound(self.vcores, size.vcores))
            .min(bound(self.gpus, size.gpus))
    }
}

impl Index<Dimension> for Resources {
    type Output = u64;

    #[inline]
    fn index(&self, dimension: Dimension) -> &u64 {
        match dimension {
            Dimension::Memory => &self.memory_mb,
            Dimension::Vcores => &self.vcores,
            Dimension::Gpus => &self.gpus,
        }
    }
}

impl IndexMut<Dimension> for Resources {
    #[inline]
    fn index_mut(&mut self, dimension: Dimension) -> &mut u64 {
        match dimension {
            Dimension::Memory => &mut self.memory_mb,
            Dimension::Vcores => &mut self.vcores,
            Dimension::Gpus => &mut self.gpus,
        }
    }
}

/// `x × count`, at most `u64::MAX`. In WebAssembly `u64::saturating_mul`
/// is a call to a 128-bit multiply; operands below 2³² (every real size and
/// count) cannot overflow, so they take one plain multiply.
#[inline]
fn saturating_times(x: u64, count: u64) -> u64 {
    if (x | count) >> 32 == 0 {
        x * count
    } else {
        x.saturating_mul(count)
    }
}

/// Slack for turning a share back into an amount: one part in 10^12, far
/// below one megabyte of a 10,000-node cluster's memory, far above the
/// rounding of a product of a few percentages.
pub const EPSILON: f64 = 1e-12;

/// A cluster's total resources, the denominators of every share.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cluster {
    total: Resources,
    /// Each total as a float, infinite for a resource the cluster has none
    /// of, so that its share is 0 without a branch.
    divisor: [f64; 3],
}

impl Cluster {
    /// The cluster whose resources add up to `total`.
    #[inline]
    pub fn new(total: Resources) -> Cluster {
        let divisor = total
            .to_array()
            .map(|t| if t == 0 { f64::INFINITY } else { t as f64 });
        Cluster { total, divisor }
    }

    /// The total.
    #[inline]
    pub fn total(&self) -> Resources {
        self.total
    }

    /// The dominant share of `amount`: the largest fraction of the total it
    /// takes in any resource, ignoring resources the cluster has none of.
    /// Each fraction is a correctly rounded division, so amounts in the same
    /// proportion to the total have exactly the same share.
    #[inline]
    pub fn share(&self, amount: Resources) -> f64 {
        let [m, v, g] = amount.to_array();
        larger(
            larger(m as f64 / self.divisor[0], v as f64 / self.divisor[1]),
            g as f64 / self.divisor[2],
        )
    }

    /// The most of each resource whose dominant share stays within
    /// `fraction`: `floor(fraction × total)`, and no bound (`u64::MAX`) on a
    /// resource the cluster has none of, since shares ignore it. So
    /// `limit(f).covers(amount)` exactly when `share(amount) ≤ f`, up to
    /// [`EPSILON`].
    #[inline]
    pub fn limit(&self, fraction: f64) -> Resources {
        self.total.map(|total| {
            if total == 0 {
                u64::MAX
            } else {
                floor_of(fraction, total)
            }
        })
    }

    /// `floor(fraction × total)` in every resource: how much of the cluster
    /// a share stands for (none of a resource the cluster lacks).
    #[inline]
    pub fn amount(&self, fraction: f64) -> Resources {
        self.total.map(|total| floor_of(fraction, total))
    }
}

/// `floor(fraction × total)`, with [`EPSILON`] of slack for rounding in
/// `fraction`; a negative or NaN fraction counts as 0, and `as` saturates.
#[inline]
fn floor_of(fraction: f64, total: u64) -> u64 {
    let exact = fraction.max(0.0) * total as f64;
    (exact + exact * EPSILON).floor() as u64
}

/// The larger of two shares, which are never NaN. A compare-and-select:
/// the NaN-aware `f64::max` compiles to an out-of-line call in WebAssembly.
#[inline]
pub fn larger(a: f64, b: f64) -> f64 {
    if a > b { a } else { b }
}

/// Whether `x` is finite (neither infinite nor NaN), as float arithmetic:
/// `x - x` is 0 for a finite `x` and NaN otherwise. `f64::is_finite` is a
/// 64-bit integer comparison, which WebAssembly's SIMD lacks, so a loop
/// over a column that uses it does not vectorise; this does.
#[inline]
#[allow(clippy::eq_op, reason = "x - x is the test: NaN for inf and NaN")]
pub fn finite(x: f64) -> bool {
    x - x == 0.0
}

/// The smaller of two shares, which are never NaN; see [`larger`].
#[inline]
pub fn smaller(a: f64, b: f64) -> f64 {
    if a < b { a } else { b }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finite_agrees_with_is_finite() {
        let values = [
            0.0,
            -0.0,
            -1.5,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE / 2.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ];
        for x in values {
            assert_eq!(finite(x), x.is_finite(), "{x}");
        }
    }

    #[test]
    fn resources_fit_and_saturate() {
        let room = Resources::new(4096, 3, 1);
        // (size, how many fit)
        let cases = [
            (Resources::new(1024, 1, 0), 3),
            (Resources::new(2048, 1, 0), 2),
            (Resources::new(1024, 1, 1), 1),
            (Resources::new(1024, 1, 2), 0),
            (Resources::ZERO, u64::MAX),
            (Resources::new(0, 2, 0), 1),
        ];
        for (size, fits) in cases {
            assert_eq!(room.fits(size), fits, "{size:?}");
        }
        assert_eq!(
            Resources::new(1, 1, 1).minus(Resources::new(2, 0, 1)),
            Resources::new(0, 1, 0)
        );
        assert_eq!(
            Resources::new(u64::MAX, 1, 0).times(2),
            Resources::new(u64::MAX, 2, 0)
        );
        // 2^40 × 2^30 overflows and saturates; 3 × 2^30 does not.
        assert_eq!(
            Resources::new(1 << 40, 3, 0).times(1 << 30),
            Resources::new(u64::MAX, 3 << 30, 0)
        );
        assert_eq!(
            Resources::new(u64::MAX, 0, 0).plus(Resources::new(1, 1, 0)),
            Resources::new(u64::MAX, 1, 0)
        );
        assert!(Resources::new(2, 2, 2).covers(Resources::new(2, 1, 0)));
        assert!(!Resources::new(2, 2, 2).covers(Resources::new(3, 0, 0)));
        assert_eq!(
            Resources::new(1, 5, 2).max(Resources::new(3, 1, 2)),
            Resources::new(3, 5, 2)
        );
        assert_eq!(
            Resources::new(1, 5, 2).min(Resources::new(3, 1, 2)),
            Resources::new(1, 1, 2)
        );
        assert!(Resources::ZERO.is_zero());
    }

    #[test]
    fn dimensions_index_resources() {
        let mut r = Resources::new(10, 20, 30);
        assert_eq!(DIMENSIONS.map(|d| r[d]), [10, 20, 30]);
        r[Dimension::Gpus] = 3;
        assert_eq!(r.to_array(), [10, 20, 3]);
        assert_eq!(Resources::from_array(r.to_array()), r);
        assert_eq!(
            DIMENSIONS.map(|d| (d.index(), d.unit(), d.column())),
            [
                (0, "MB", "memory-mb"),
                (1, "vcores", "vcores"),
                (2, "GPUs", "gpus")
            ]
        );
    }

    #[test]
    fn dominant_share_ignores_resources_the_cluster_lacks() {
        let cluster = Cluster::new(Resources::new(1000, 10, 0));
        // (amount, dominant share)
        let cases = [
            (Resources::new(100, 1, 0), 0.1),
            (Resources::new(100, 5, 0), 0.5),
            (Resources::new(900, 5, 7), 0.9),
            (Resources::ZERO, 0.0),
        ];
        for (amount, share) in cases {
            assert_eq!(cluster.share(amount), share, "{amount:?}");
        }
        assert_eq!(cluster.limit(0.24).to_array(), [240, 2, u64::MAX]);
        assert_eq!(cluster.amount(0.24).to_array(), [240, 2, 0]);
        assert_eq!(cluster.limit(1.0).to_array(), [1000, 10, u64::MAX]);
        assert_eq!(cluster.amount(-1.0), Resources::ZERO);
    }

    #[test]
    fn equal_proportions_have_equal_shares() {
        // 3/9 and 2/6 are the same third: a division rounds both alike.
        let cluster = Cluster::new(Resources::new(9, 6, 0));
        assert_eq!(
            cluster.share(Resources::new(3, 0, 0)),
            cluster.share(Resources::new(0, 2, 0))
        );
    }
}
