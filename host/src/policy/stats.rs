//! What policies have cost: a kind's calls (how many, their total time, and a
//! log-scale histogram for percentiles, each bucket a quarter of a power of
//! two wide, so a percentile is exact to within about 19 %), and an engine's
//! compilations (how many components it compiled and how many it reused).

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

const SUB_BUCKETS: u32 = 4;
const BUCKETS: usize = 64 * SUB_BUCKETS as usize;

/// Calls counted as they happen: how many, their total time and a latency
/// histogram. Summed up by [`cost`](Self::cost).
#[derive(Debug, Clone)]
pub struct CallStats {
    calls: u64,
    total_ns: u64,
    buckets: Box<[u64; BUCKETS]>,
}

/// The figures `weft simulate` reports per policy (and GET /ws/v1/policies).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, utoipa::ToSchema)]
pub struct CallCost {
    /// Calls counted.
    pub calls: u64,
    /// Their time together, in nanoseconds.
    pub total_ns: u64,
    /// Their mean time, in nanoseconds (0 with no calls).
    pub mean_ns: f64,
    /// The 99th percentile of their time, in nanoseconds: the upper bound
    /// of the histogram bucket holding it (0 with no calls).
    pub p99_ns: u64,
}

impl Default for CallStats {
    fn default() -> Self {
        CallStats {
            calls: 0,
            total_ns: 0,
            buckets: Box::new([0; BUCKETS]),
        }
    }
}

impl CallStats {
    /// Counts one call that took `ns` nanoseconds.
    pub fn record(&mut self, ns: u64) {
        self.calls += 1;
        self.total_ns = self.total_ns.saturating_add(ns);
        self.buckets[bucket_of(ns)] += 1;
    }

    /// The upper bound of the bucket holding the `q` quantile (0..=1).
    pub fn quantile_ns(&self, q: f64) -> u64 {
        if self.calls == 0 {
            return 0;
        }
        let rank = ((self.calls as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (bucket, count) in self.buckets.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return upper_bound(bucket);
            }
        }
        upper_bound(BUCKETS - 1)
    }

    /// The calls so far, summed up.
    pub fn cost(&self) -> CallCost {
        CallCost {
            calls: self.calls,
            total_ns: self.total_ns,
            mean_ns: if self.calls == 0 {
                0.0
            } else {
                self.total_ns as f64 / self.calls as f64
            },
            p99_ns: self.quantile_ns(0.99),
        }
    }
}

/// How an engine came by the components it was asked to compile, counted
/// as it happens (shared by the engine's clones).
#[derive(Debug, Default)]
pub(super) struct CompileCounters {
    compiled: AtomicU64,
    memory_hits: AtomicU64,
    disk_hits: AtomicU64,
}

/// A reading of [`CompileCounters`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CompileCounts {
    /// Components the compiler turned into code.
    pub compiled: u64,
    /// Components found compiled in the engine's memory.
    pub memory_hits: u64,
    /// Components read back from the disk cache.
    pub disk_hits: u64,
}

impl CompileCounters {
    pub(super) fn record_compiled(&self) {
        self.compiled.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn record_memory_hit(&self) {
        self.memory_hits.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn record_disk_hit(&self) {
        self.disk_hits.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn read(&self) -> CompileCounts {
        CompileCounts {
            compiled: self.compiled.load(Ordering::Relaxed),
            memory_hits: self.memory_hits.load(Ordering::Relaxed),
            disk_hits: self.disk_hits.load(Ordering::Relaxed),
        }
    }
}

fn bucket_of(ns: u64) -> usize {
    if ns < 2 {
        return ns as usize;
    }
    let power = 63 - ns.leading_zeros(); // 2^power <= ns
    let fraction = if power >= 2 {
        (ns >> (power - 2)) & 3
    } else {
        (ns << (2 - power)) & 3
    };
    ((power * SUB_BUCKETS) as usize + fraction as usize).min(BUCKETS - 1)
}

fn upper_bound(bucket: usize) -> u64 {
    let power = bucket as u32 / SUB_BUCKETS;
    let fraction = bucket as u64 % SUB_BUCKETS as u64;
    if power >= 62 {
        return u64::MAX;
    }
    let base = 1u64 << power;
    base + (base * (fraction + 1)) / SUB_BUCKETS as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_bound_the_true_value_within_a_quarter_power_of_two() {
        let mut stats = CallStats::default();
        for ns in 1..=1000u64 {
            stats.record(ns * 100);
        }
        let p99 = stats.quantile_ns(0.99);
        assert!((99_000..=99_000 * 5 / 4).contains(&p99), "{p99}");
        let p50 = stats.quantile_ns(0.50);
        assert!((50_000..=50_000 * 5 / 4).contains(&p50), "{p50}");
        assert_eq!(stats.cost().calls, 1000);
        assert_eq!(CallStats::default().cost().p99_ns, 0);
    }
}
