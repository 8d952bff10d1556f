//! Pricing policies (`pricing-policy` world): [`PricingPolicy`], the checked
//! [`Usage`] a `charge` call prices (each row with its context and
//! interval), the [`Market`] `multiplicators` sees, [`night_fraction`] for
//! time-of-day prices, and [`export_pricing!`](crate::export_pricing).
//!
//! ```ignore
//! struct Flat;
//! impl weft_policy::Policy for Flat { /* NAME, VERSION, configure */ }
//! impl weft_policy::PricingPolicy for Flat {
//!     fn multiplicators(&mut self, _: &Market) -> Multiplicators {
//!         Multiplicators { general: 1.0, gpu: 1.0 }
//!     }
//!     fn price(&self, row: UsageRow, _: Multiplicators) -> f64 {
//!         let factor = if row.context.project == "ml" { 2.0 } else { 1.0 };
//!         row.seconds * row.vcores as f64 * factor
//!     }
//! }
//! weft_policy::export_pricing!(Flat);
//! ```

use std::ops::Deref;

use crate::Policy;
use crate::malformed::{Malformed, same_lengths};
use crate::resources::finite;

/// The WIT records of `weft:policy/pricing`, as the host sends them.
pub mod wit {
    pub use crate::bindings::pricing::exports::weft::policy::pricing::{
        ChargeContext, Market, PartitionLoad, PriceMultiplicators, QueueLoad, QuoteRequest, Usage,
        Utilization,
    };
    pub use crate::bindings::pricing::weft::policy::types::{Attribute, ExecutionType};
}

/// Cluster utilization as fractions of capacity (allocated plus pending over
/// capacity): each finite and at least 0, possibly above 1. Checked by the
/// glue before [`PricingPolicy::multiplicators`] sees it.
pub type Utilization = wit::Utilization;

/// Price multiplicators: `general` for CPU and memory, `gpu` for GPUs.
pub type Multiplicators = wit::PriceMultiplicators;

/// What `multiplicators` sees: the time, the cluster's utilization, each
/// partition's and each leaf queue's load, and the multiplicators returned
/// last. Checked by the glue (fractions and multiplicators finite and at
/// least 0).
pub type Market = wit::Market;

/// Who and what a row of usage is for.
pub type ChargeContext = wit::ChargeContext;

/// A hypothetical ask to price (`quote`).
pub type QuoteRequest = wit::QuoteRequest;

/// The standard quota parameters the host passes every pricing policy first
/// (the `yarn.resourcemanager.quota.*` settings without that prefix). A
/// policy reads those it uses; the others are accepted unread.
pub const STANDARD_KEYS: &[&str] = &[
    "price.base.general",
    "price.base.gpu",
    "multiplicator.threshold.general",
    "multiplicator.threshold.gpu",
    "multiplicator.increment.general",
    "multiplicator.increment.gpu",
    "minimum.charged.mb",
    "minimum.charged.gpu",
];

/// A pricing policy: HOPS-1385's PriceMultiplicatorService step and the
/// QuotaService charge step.
pub trait PricingPolicy: Policy {
    /// Called every multiplicator interval with the cluster's load. Must
    /// return finite values, each at least 0. `market.last` is what it
    /// returned last, so a price can be smoothed without keeping state.
    fn multiplicators(&mut self, market: &Market) -> Multiplicators;

    /// The charge, in credits, of one row of usage (one container's use
    /// over [`start_ms`, `end_ms`], with its context) at `multiplicators`:
    /// finite and at least 0, and from that row alone — the host splits and
    /// groups rows into batches as it likes.
    fn price(&self, row: UsageRow<'_>, multiplicators: Multiplicators) -> f64;

    /// One charge per row of `usage`, in order. By default each row is
    /// priced alone with [`PricingPolicy::price`]; override it to price a
    /// batch faster (over the columns), never to make rows depend on each
    /// other: `weft policy test` checks that they do not.
    fn charge(&mut self, usage: &Usage, multiplicators: Multiplicators) -> Vec<f64> {
        usage
            .rows()
            .map(|row| self.price(row, multiplicators))
            .collect()
    }

    /// What `request` would cost, all its containers together. By default
    /// what `price` gives one container over the request's interval, times
    /// the containers: what `charge` would charge, before any minimum
    /// runtime.
    fn quote(&self, request: &QuoteRequest, multiplicators: Multiplicators) -> f64 {
        let row = UsageRow {
            seconds: request.duration_ms.max(0) as f64 / 1000.0,
            memory_mb: request.memory_mb,
            vcores: request.vcores,
            gpus: request.gpus,
            start_ms: request.start_ms,
            end_ms: request.start_ms.saturating_add(request.duration_ms.max(0)),
            context: &request.context,
        };
        self.price(row, multiplicators) * f64::from(request.containers)
    }
}

/// One row of [`Usage`]: one container's use since it was last charged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UsageRow<'a> {
    /// Finite, at least 0 (the host has applied the minimum runtime).
    pub seconds: f64,
    pub memory_mb: u64,
    pub vcores: u64,
    pub gpus: u64,
    /// The interval charged, in ms on the host clock (virtual under replay
    /// and simulate); `start_ms <= end_ms`. With a minimum runtime applied,
    /// `end_ms` may be later than the charge.
    pub start_ms: i64,
    pub end_ms: i64,
    /// Who and what it is for.
    pub context: &'a ChargeContext,
}

impl UsageRow<'_> {
    /// The row's size in units of its dominant resource: the largest of its
    /// vcores (one vcore is one unit), its memory in units of
    /// `unit_memory_mb` and its GPUs in units of `unit_gpus`. A container
    /// pays for this many units per second when every unit costs the same.
    #[inline]
    pub fn dominant_units(&self, unit_memory_mb: f64, unit_gpus: f64) -> f64 {
        (self.vcores as f64)
            .max(self.memory_mb as f64 / unit_memory_mb)
            .max(self.gpus as f64 / unit_gpus)
    }
}

/// The usage of one `charge` call, checked: columns of one length, every
/// `seconds` finite and at least 0. Read rows with [`Usage::rows`], or the
/// columns themselves through `Deref` (`usage.seconds`, `usage.memory_mb`…)
/// for a loop over slices.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Usage(wit::Usage);

impl Usage {
    /// Checks the record the host sent.
    pub fn new(record: wit::Usage) -> Result<Usage, Malformed> {
        same_lengths(
            "usage",
            &[
                ("seconds", record.seconds.len()),
                ("memory-mb", record.memory_mb.len()),
                ("vcores", record.vcores.len()),
                ("gpus", record.gpus.len()),
                ("start-ms", record.start_ms.len()),
                ("end-ms", record.end_ms.len()),
                ("context", record.context.len()),
            ],
        )?;
        if let Some(i) = first_not_a_duration(&record.seconds) {
            return Err(Malformed::new(format!(
                "usage: seconds[{i}] is {}; it must be finite and at least 0",
                record.seconds[i]
            )));
        }
        if let Some(i) = first_backwards(&record.start_ms, &record.end_ms) {
            return Err(Malformed::new(format!(
                "usage: start-ms[{i}] is {}, after end-ms[{i}] {}",
                record.start_ms[i], record.end_ms[i]
            )));
        }
        let contexts = record.contexts.len();
        if let Some(i) = first_stray_context(&record.context, contexts) {
            return Err(Malformed::new(format!(
                "usage: context[{i}] is {}, but there are {contexts} contexts",
                record.context[i]
            )));
        }
        Ok(Usage(record))
    }

    /// Usage from `(seconds, memory MB, vcores, gpus)` rows, for tests: all
    /// in one context (project `default`, user `user`, queue
    /// `root.default`), each over [0, seconds] on the host clock.
    pub fn from_rows(rows: &[(f64, u64, u64, u64)]) -> Result<Usage, Malformed> {
        let context = ChargeContext {
            project: "default".into(),
            user: "user".into(),
            queue: "root.default".into(),
            application_type: "weft".into(),
            ..ChargeContext::default()
        };
        Usage::from_rows_in(&[context], rows.iter().map(|&r| (r, 0, 0)))
    }

    /// Usage from `((seconds, memory MB, vcores, gpus), start ms, context)`
    /// rows in `contexts`, for tests; each row ends `seconds` after its start.
    pub fn from_rows_in(
        contexts: &[ChargeContext],
        rows: impl IntoIterator<Item = ((f64, u64, u64, u64), i64, u32)>,
    ) -> Result<Usage, Malformed> {
        let mut record = wit::Usage {
            contexts: contexts.to_vec(),
            ..wit::Usage::default()
        };
        for ((seconds, memory_mb, vcores, gpus), start_ms, context) in rows {
            record.seconds.push(seconds);
            record.memory_mb.push(memory_mb);
            record.vcores.push(vcores);
            record.gpus.push(gpus);
            record.start_ms.push(start_ms);
            let ms = if seconds.is_finite() {
                (seconds * 1000.0).max(0.0) as i64
            } else {
                0
            };
            record.end_ms.push(start_ms.saturating_add(ms));
            record.context.push(context);
        }
        Usage::new(record)
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.0.seconds.len()
    }

    /// Whether there are no rows (a batch may be empty).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Row `i`, which must be below [`Usage::len`].
    #[inline]
    pub fn row(&self, i: usize) -> UsageRow<'_> {
        UsageRow {
            seconds: self.0.seconds[i],
            memory_mb: self.0.memory_mb[i],
            vcores: self.0.vcores[i],
            gpus: self.0.gpus[i],
            start_ms: self.0.start_ms[i],
            end_ms: self.0.end_ms[i],
            context: &self.0.contexts[self.0.context[i] as usize],
        }
    }

    /// The rows, in order.
    pub fn rows(&self) -> impl ExactSizeIterator<Item = UsageRow<'_>> + '_ {
        (0..self.len()).map(|i| self.row(i))
    }
}

impl Deref for Usage {
    type Target = wit::Usage;

    /// The checked record: read its columns directly.
    fn deref(&self) -> &wit::Usage {
        &self.0
    }
}

/// The index of the first of `seconds` that is not finite or below 0.
///
/// One pass without an early exit comes first: it vectorises, and it is the
/// whole cost when the host's usage is well-formed (always, but checked).
fn first_not_a_duration(seconds: &[f64]) -> Option<usize> {
    let is_duration = |s: &f64| (*s >= 0.0) & finite(*s);
    let all = seconds.iter().fold(true, |all, s| all & is_duration(s));
    if all {
        None
    } else {
        seconds.iter().position(|s| !is_duration(s))
    }
}

/// The index of the first row whose `start_ms` is after its `end_ms`.
///
/// As [`first_not_a_duration`]: one pass without an early exit or indexing
/// first, so it vectorises (an early-exit search over two columns does not,
/// and cost as much as `hops-pricing`'s whole charge).
fn first_backwards(start_ms: &[i64], end_ms: &[i64]) -> Option<usize> {
    let in_order = |(start, end): (&i64, &i64)| start <= end;
    let all = start_ms
        .iter()
        .zip(end_ms)
        .fold(true, |all, row| all & in_order(row));
    if all {
        None
    } else {
        start_ms.iter().zip(end_ms).position(|row| !in_order(row))
    }
}

/// The index of the first `context` that is not below `contexts`; one
/// vectorised pass first, as [`first_not_a_duration`].
fn first_stray_context(context: &[u32], contexts: usize) -> Option<usize> {
    let known = |c: &u32| (*c as usize) < contexts;
    let all = context.iter().fold(true, |all, c| all & known(c));
    if all {
        None
    } else {
        context.iter().position(|c| !known(c))
    }
}

/// Checks a utilization the host sent: every fraction finite and at least 0.
pub fn check_utilization(utilization: Utilization) -> Result<Utilization, Malformed> {
    let fractions = [
        ("memory", utilization.memory),
        ("vcores", utilization.vcores),
        ("gpus", utilization.gpus),
    ];
    for (name, fraction) in fractions {
        if !(fraction.is_finite() && fraction >= 0.0) {
            return Err(Malformed::new(format!(
                "utilization: {name} is {fraction}; it must be finite and at least 0"
            )));
        }
    }
    Ok(utilization)
}

/// Checks a market the host sent: its utilization and the last
/// multiplicators finite and at least 0.
pub fn check_market(market: Market) -> Result<Market, Malformed> {
    check_utilization(market.utilization)?;
    check_multiplicators(market.last).map_err(|m| Malformed::new(format!("market.last: {m}")))?;
    Ok(market)
}

/// Checks a quote request the host sent: a duration of at least 0.
pub fn check_quote(request: QuoteRequest) -> Result<QuoteRequest, Malformed> {
    if request.duration_ms < 0 {
        return Err(Malformed::new(format!(
            "quote-request: duration-ms is {}; it must be at least 0",
            request.duration_ms
        )));
    }
    Ok(request)
}

/// The share (0 to 1) of [`start_ms`, `end_ms`] that falls in the daily
/// hours [`from_hour`, `to_hour`) UTC, which wrap midnight when `from_hour`
/// is the later (22 to 6: 22:00–06:00). Equal hours: no such hours (0).
/// An empty interval counts whole if its instant is inside. Hours above 23
/// count as 24 (midnight). Exact on integer milliseconds, in constant time.
pub fn night_fraction(start_ms: i64, end_ms: i64, from_hour: u32, to_hour: u32) -> f64 {
    const HOUR: i128 = 3_600_000;
    const DAY: i128 = 24 * HOUR;
    let (a, b) = (
        i128::from(from_hour.min(24)) * HOUR,
        i128::from(to_hour.min(24)) * HOUR,
    );
    if a == b {
        return 0.0;
    }
    // Night within [0, x) of one day, 0 <= x <= DAY.
    let within_day = |x: i128| -> i128 {
        let overlap = |lo: i128, hi: i128| (x.min(hi) - lo).max(0);
        if a < b {
            overlap(a, b)
        } else {
            overlap(0, b) + overlap(a, DAY)
        }
    };
    let per_day = within_day(DAY);
    // Night within [0, t) for any t (negative t counts backwards).
    let before = |t: i128| t.div_euclid(DAY) * per_day + within_day(t.rem_euclid(DAY));
    let (start, end) = (i128::from(start_ms), i128::from(end_ms.max(start_ms)));
    if start == end {
        let at = start.rem_euclid(DAY);
        let inside = if a < b {
            a <= at && at < b
        } else {
            at >= a || at < b
        };
        return if inside { 1.0 } else { 0.0 };
    }
    (before(end) - before(start)) as f64 / (end - start) as f64
}

/// Checks the multiplicators the host passes to `charge`: finite and at
/// least 0, as `multiplicators` must return them.
pub fn check_multiplicators(multiplicators: Multiplicators) -> Result<Multiplicators, Malformed> {
    let values = [
        ("general", multiplicators.general),
        ("gpu", multiplicators.gpu),
    ];
    for (name, value) in values {
        if !(value.is_finite() && value >= 0.0) {
            return Err(Malformed::new(format!(
                "multiplicators: {name} is {value}; it must be finite and at least 0"
            )));
        }
    }
    Ok(multiplicators)
}

/// Exports a type implementing [`PricingPolicy`] as the component's
/// `pricing-policy` world: `weft_policy::export_pricing!(MyPricing);` at the
/// top level of the crate (a `cdylib`). It does nothing outside WebAssembly,
/// so the same crate builds and tests natively.
#[macro_export]
macro_rules! export_pricing {
    ($policy:ty) => {
        #[cfg(target_arch = "wasm32")]
        #[allow(unsafe_code, reason = "the exports wit-bindgen generates")]
        const _: () = {
            static POLICY: $crate::glue::Slot<$policy> = $crate::glue::Slot::new();

            struct Component;

            impl $crate::bindings::pricing::Guest for Component {
                fn describe() -> $crate::types::PolicyInfo {
                    $crate::glue::describe::<$policy>($crate::types::PolicyKind::Pricing)
                }

                fn configure(
                    params: $crate::types::Params,
                ) -> ::core::result::Result<(), ::std::string::String> {
                    $crate::glue::configure(&POLICY, $crate::types::PolicyKind::Pricing, params)
                }
            }

            impl $crate::bindings::pricing::exports::weft::policy::pricing::Guest for Component {
                fn multiplicators(
                    market: $crate::pricing::wit::Market,
                ) -> $crate::pricing::wit::PriceMultiplicators {
                    $crate::glue::multiplicators(&POLICY, market)
                }

                fn charge(
                    usage: $crate::pricing::wit::Usage,
                    multiplicators: $crate::pricing::wit::PriceMultiplicators,
                ) -> ::std::vec::Vec<f64> {
                    $crate::glue::charge(&POLICY, usage, multiplicators)
                }

                fn quote(
                    request: $crate::pricing::wit::QuoteRequest,
                    multiplicators: $crate::pricing::wit::PriceMultiplicators,
                ) -> f64 {
                    $crate::glue::quote(&POLICY, request, multiplicators)
                }
            }

            $crate::bindings::pricing::export_pricing_world!(
                Component with_types_in $crate::bindings::pricing
            );
        };
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_columns_must_agree_and_seconds_be_finite() {
        let good = Usage::from_rows(&[(1.5, 1024, 1, 0), (0.0, 0, 0, 2)]).unwrap();
        assert_eq!(good.len(), 2);
        let row = good.row(1);
        assert_eq!(
            (row.seconds, row.memory_mb, row.vcores, row.gpus),
            (0.0, 0, 0, 2)
        );
        assert_eq!(row.context.project, "default");
        assert_eq!(good.rows().count(), 2);
        assert_eq!(good.memory_mb, [1024, 0]);
        assert!(Usage::from_rows(&[]).unwrap().is_empty());

        let mut ragged = good.0.clone();
        ragged.memory_mb.pop();
        assert_eq!(
            Usage::new(ragged).unwrap_err().message(),
            "usage: its columns differ in length (2 seconds, 1 memory-mb, 2 vcores, 2 gpus, \
             2 start-ms, 2 end-ms, 2 context)"
        );
        let mut backwards = good.0.clone();
        backwards.start_ms[0] = 5_000;
        assert_eq!(
            Usage::new(backwards).unwrap_err().message(),
            "usage: start-ms[0] is 5000, after end-ms[0] 1500"
        );
        let mut stray = good.0.clone();
        stray.context[1] = 1;
        assert_eq!(
            Usage::new(stray).unwrap_err().message(),
            "usage: context[1] is 1, but there are 1 contexts"
        );
        // Of several bad rows, the first is named.
        let mut both = good.0.clone();
        both.start_ms = vec![1_000, 9_000];
        both.end_ms = vec![500, 8_000];
        both.context = vec![7, 3];
        assert_eq!(
            Usage::new(both.clone()).unwrap_err().message(),
            "usage: start-ms[0] is 1000, after end-ms[0] 500"
        );
        both.start_ms[0] = 0;
        assert_eq!(
            Usage::new(both.clone()).unwrap_err().message(),
            "usage: start-ms[1] is 9000, after end-ms[1] 8000"
        );
        both.end_ms[1] = 9_000;
        assert_eq!(
            Usage::new(both).unwrap_err().message(),
            "usage: context[0] is 7, but there are 1 contexts"
        );
        for (bad, shown) in [(f64::NAN, "NaN"), (f64::INFINITY, "inf"), (-1.0, "-1")] {
            let message = Usage::from_rows(&[(0.0, 0, 0, 0), (bad, 0, 0, 0)])
                .unwrap_err()
                .to_string();
            assert_eq!(
                message,
                format!("usage: seconds[1] is {shown}; it must be finite and at least 0")
            );
        }
    }

    #[test]
    fn dominant_units_are_the_largest_resource_in_units() {
        let context = ChargeContext::default();
        let row = |memory_mb, vcores, gpus| UsageRow {
            seconds: 1.0,
            memory_mb,
            vcores,
            gpus,
            start_ms: 0,
            end_ms: 1000,
            context: &context,
        };
        // (row, units at 1024 MB and 1 GPU per unit)
        let cases = [
            (row(1024, 1, 0), 1.0),
            (row(4096, 1, 0), 4.0),
            (row(1024, 8, 0), 8.0),
            (row(512, 0, 0), 0.5),
            (row(0, 1, 3), 3.0),
            (row(0, 0, 0), 0.0),
        ];
        for (row, units) in cases {
            assert_eq!(row.dominant_units(1024.0, 1.0), units, "{row:?}");
        }
        assert_eq!(row(0, 0, 4).dominant_units(1024.0, 2.0), 2.0);
    }

    #[test]
    fn utilization_and_multiplicators_must_be_finite_and_non_negative() {
        let fine = Utilization {
            memory: 1.5,
            vcores: 0.0,
            gpus: 0.2,
        };
        assert_eq!(check_utilization(fine), Ok(fine));
        let nan = Utilization {
            gpus: f64::NAN,
            ..fine
        };
        assert_eq!(
            check_utilization(nan).unwrap_err().message(),
            "utilization: gpus is NaN; it must be finite and at least 0"
        );
        let one = Multiplicators {
            general: 1.0,
            gpu: 1.0,
        };
        assert_eq!(check_multiplicators(one), Ok(one));
        let negative = Multiplicators { gpu: -0.5, ..one };
        assert_eq!(
            check_multiplicators(negative).unwrap_err().message(),
            "multiplicators: gpu is -0.5; it must be finite and at least 0"
        );
    }

    #[test]
    fn night_fraction_counts_the_share_in_the_daily_hours() {
        const H: i64 = 3_600_000;
        const D: i64 = 24 * H;
        // (start, end, from, to) -> share
        let cases = [
            ((23 * H, 23 * H + 1000), (22, 6), 1.0), // inside, before midnight
            ((D + 2 * H, D + 3 * H), (22, 6), 1.0),  // inside, after midnight
            ((12 * H, 13 * H), (22, 6), 0.0),        // outside
            ((21 * H, 23 * H), (22, 6), 0.5),        // half
            ((0, D), (22, 6), 8.0 / 24.0),           // a whole day
            ((0, 3 * D), (22, 6), 8.0 / 24.0),       // three days
            ((5 * H, 7 * H), (22, 6), 0.5),          // the morning edge
            ((9 * H, 12 * H), (9, 17), 1.0),         // a window that does not wrap
            ((8 * H, 10 * H), (9, 17), 0.5),
            ((-2 * H, 0), (22, 6), 1.0),      // before the epoch
            ((0, D), (6, 6), 0.0),            // no night at all
            ((23 * H, 23 * H), (22, 6), 1.0), // an instant inside
            ((12 * H, 12 * H), (22, 6), 0.0), // an instant outside
            ((22 * H, 22 * H), (22, 6), 1.0), // the start is inside
            ((6 * H, 6 * H), (22, 6), 0.0),   // the end is not
        ];
        for ((start, end), (from, to), share) in cases {
            let got = night_fraction(start, end, from, to);
            assert!(
                (got - share).abs() < 1e-12,
                "{start}..{end} in {from}-{to}: {got}, not {share}"
            );
        }
        // Extremes neither overflow nor leave 0..=1.
        let wide = night_fraction(i64::MIN, i64::MAX, 22, 6);
        assert!((0.0..=1.0).contains(&wide), "{wide}");
    }

    #[test]
    fn the_default_quote_prices_one_container_for_the_duration_times_the_containers() {
        struct PerSecond;
        impl Policy for PerSecond {
            const NAME: &'static str = "per-second";
            const VERSION: &'static str = "0";
            fn configure(_: &crate::Params) -> Result<Self, String> {
                Ok(PerSecond)
            }
        }
        impl PricingPolicy for PerSecond {
            fn multiplicators(&mut self, market: &Market) -> Multiplicators {
                market.last
            }
            fn price(&self, row: UsageRow, m: Multiplicators) -> f64 {
                let night = night_fraction(row.start_ms, row.end_ms, 22, 6);
                row.seconds * row.vcores as f64 * m.general * (1.0 - night / 2.0)
            }
        }
        let request = QuoteRequest {
            vcores: 2,
            containers: 3,
            start_ms: 12 * 3_600_000,
            duration_ms: 10_000,
            ..QuoteRequest::default()
        };
        let two = Multiplicators {
            general: 2.0,
            gpu: 1.0,
        };
        assert_eq!(PerSecond.quote(&request, two), 10.0 * 2.0 * 2.0 * 3.0);
        let at_night = QuoteRequest {
            start_ms: 23 * 3_600_000,
            ..request.clone()
        };
        assert_eq!(PerSecond.quote(&at_night, two), 60.0);
        assert!(
            check_quote(QuoteRequest {
                duration_ms: -1,
                ..request
            })
            .is_err()
        );
    }
}
