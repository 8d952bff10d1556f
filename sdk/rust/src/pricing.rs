//! Pricing policies (`pricing-policy` world): [`PricingPolicy`], the checked
//! [`Usage`] a `charge` call prices, and [`export_pricing!`](crate::export_pricing).
//!
//! ```ignore
//! struct Flat;
//! impl weft_policy::Policy for Flat { /* NAME, VERSION, configure */ }
//! impl weft_policy::PricingPolicy for Flat {
//!     fn multiplicators(&mut self, _: Utilization) -> Multiplicators {
//!         Multiplicators { general: 1.0, gpu: 1.0 }
//!     }
//!     fn price(&self, row: UsageRow, _: Multiplicators) -> f64 {
//!         row.seconds * row.vcores as f64
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
        PriceMultiplicators, Usage, Utilization,
    };
}

/// Cluster utilization as fractions of capacity (allocated plus pending over
/// capacity): each finite and at least 0, possibly above 1. Checked by the
/// glue before [`PricingPolicy::multiplicators`] sees it.
pub type Utilization = wit::Utilization;

/// Price multiplicators: `general` for CPU and memory, `gpu` for GPUs.
pub type Multiplicators = wit::PriceMultiplicators;

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
    /// Called every multiplicator interval with the cluster's utilization.
    /// Must return finite values, each at least 0.
    fn multiplicators(&mut self, utilization: Utilization) -> Multiplicators;

    /// The charge, in credits, of one row of usage (one container's use
    /// since it was last charged) at `multiplicators`: finite and at least 0,
    /// and from that row alone — the host splits and groups rows into
    /// batches as it likes.
    fn price(&self, row: UsageRow, multiplicators: Multiplicators) -> f64;

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
}

/// One row of [`Usage`]: one container's use since it was last charged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UsageRow {
    /// Finite, at least 0 (the host has applied the minimum runtime).
    pub seconds: f64,
    pub memory_mb: u64,
    pub vcores: u64,
    pub gpus: u64,
}

impl UsageRow {
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
            ],
        )?;
        if let Some(i) = first_not_a_duration(&record.seconds) {
            return Err(Malformed::new(format!(
                "usage: seconds[{i}] is {}; it must be finite and at least 0",
                record.seconds[i]
            )));
        }
        Ok(Usage(record))
    }

    /// Usage from `(seconds, memory MB, vcores, gpus)` rows, for tests.
    pub fn from_rows(rows: &[(f64, u64, u64, u64)]) -> Result<Usage, Malformed> {
        Usage::new(wit::Usage {
            seconds: rows.iter().map(|r| r.0).collect(),
            memory_mb: rows.iter().map(|r| r.1).collect(),
            vcores: rows.iter().map(|r| r.2).collect(),
            gpus: rows.iter().map(|r| r.3).collect(),
        })
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
    pub fn row(&self, i: usize) -> UsageRow {
        UsageRow {
            seconds: self.0.seconds[i],
            memory_mb: self.0.memory_mb[i],
            vcores: self.0.vcores[i],
            gpus: self.0.gpus[i],
        }
    }

    /// The rows, in order.
    pub fn rows(&self) -> impl ExactSizeIterator<Item = UsageRow> + '_ {
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
                    utilization: $crate::pricing::wit::Utilization,
                ) -> $crate::pricing::wit::PriceMultiplicators {
                    $crate::glue::multiplicators(&POLICY, utilization)
                }

                fn charge(
                    usage: $crate::pricing::wit::Usage,
                    multiplicators: $crate::pricing::wit::PriceMultiplicators,
                ) -> ::std::vec::Vec<f64> {
                    $crate::glue::charge(&POLICY, usage, multiplicators)
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
        assert_eq!(
            good.row(1),
            UsageRow {
                seconds: 0.0,
                memory_mb: 0,
                vcores: 0,
                gpus: 2
            }
        );
        assert_eq!(good.rows().count(), 2);
        assert_eq!(good.memory_mb, [1024, 0]);
        assert!(Usage::from_rows(&[]).unwrap().is_empty());

        let ragged = wit::Usage {
            seconds: vec![1.0, 2.0],
            memory_mb: vec![1],
            vcores: vec![1, 1],
            gpus: vec![0, 0],
        };
        assert_eq!(
            Usage::new(ragged).unwrap_err().message(),
            "usage: its columns differ in length (2 seconds, 1 memory-mb, 2 vcores, 2 gpus)"
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
        let row = |memory_mb, vcores, gpus| UsageRow {
            seconds: 1.0,
            memory_mb,
            vcores,
            gpus,
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
}
