//! `hops-pricing`: HopsYARN's variable pricing, as specified in HOPS-1385.
//!
//! The spec splits quota into two services, and this policy is the pricing
//! half of both:
//!
//! 1. *PriceMultiplicatorService*: every multiplicator interval the host
//!    passes the cluster's utilization and gets two multiplicators back. The
//!    GENERAL one follows the busier of memory and vcores; the GPU one follows
//!    GPUs but never drops below GENERAL. For each,
//!    `incrementBase = max(usage − threshold, 0)` and
//!    `multiplicator = 1 + incrementBase × increment`, with usage and
//!    threshold both fractions (0.2 is 20 %).
//! 2. *QuotaService* charge step: for each container, the price of each
//!    resource is `seconds × multiplicator × base price × allocated / unit`,
//!    and the container pays for its dominant (most expensive) resource.
//!    Prices are never frozen: the host passes the current multiplicators.
//!
//! The host relies on every number coming back finite and at least 0, so
//! non-finite or negative inputs count as 0 and a result too large for an
//! `f64` saturates at `f64::MAX` instead of becoming infinite.
//!
//! Everything here is plain Rust that also compiles natively, so it is unit
//! tested with `cargo test -p hops-pricing` and the host can benchmark it.
//! The WebAssembly glue is the `export_pricing!` line.

use weft_policy::pricing::{Market, Multiplicators, Usage, UsageRow, Utilization};
use weft_policy::resources::{finite, larger};
use weft_policy::{Params, Policy, PricingPolicy};

/// The policy's settings, filled in by `configure`.
#[derive(Debug, Clone, PartialEq)]
pub struct HopsPricing {
    /// Credits per second for one unit of CPU or memory (`price.base.general`).
    pub base_price_general: f64,
    /// Credits per second for one GPU unit (`price.base.gpu`).
    pub base_price_gpu: f64,
    /// Utilization above which GENERAL prices rise (`multiplicator.threshold.general`).
    pub threshold_general: f64,
    /// Utilization above which GPU prices rise (`multiplicator.threshold.gpu`).
    pub threshold_gpu: f64,
    /// GENERAL multiplicator gained per unit of utilization above the threshold
    /// (`multiplicator.increment.general`).
    pub increment_general: f64,
    /// GPU multiplicator gained per unit of utilization above the threshold
    /// (`multiplicator.increment.gpu`).
    pub increment_gpu: f64,
    /// Megabytes of memory that count as one unit (`minimum.charged.mb`).
    pub unit_memory_mb: f64,
    /// GPUs that count as one unit (`minimum.charged.gpu`).
    pub unit_gpus: f64,
}

impl Default for HopsPricing {
    /// HopsYARN's defaults for the `yarn.resourcemanager.quota.*` settings.
    fn default() -> Self {
        HopsPricing {
            base_price_general: 1.0,
            base_price_gpu: 1.0,
            threshold_general: 0.2,
            threshold_gpu: 0.2,
            increment_general: 1.0,
            increment_gpu: 1.0,
            unit_memory_mb: 1024.0,
            unit_gpus: 1.0,
        }
    }
}

impl Policy for HopsPricing {
    const NAME: &'static str = env!("CARGO_PKG_NAME");
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    /// Reads the eight standard quota keys, each defaulting to HopsYARN's
    /// value; a later value for a key wins, so operator `--param`s override
    /// the standard ones the host passes first. Prices, thresholds and
    /// increments may be 0; units may not, as they divide the allocation.
    fn configure(params: &Params) -> Result<Self, String> {
        let defaults = HopsPricing::default();
        let at_least_0 = |key: &str, default: f64| -> Result<f64, String> {
            Ok(params.non_negative_f64(key)?.unwrap_or(default))
        };
        Ok(HopsPricing {
            base_price_general: at_least_0("price.base.general", defaults.base_price_general)?,
            base_price_gpu: at_least_0("price.base.gpu", defaults.base_price_gpu)?,
            threshold_general: at_least_0(
                "multiplicator.threshold.general",
                defaults.threshold_general,
            )?,
            threshold_gpu: at_least_0("multiplicator.threshold.gpu", defaults.threshold_gpu)?,
            increment_general: at_least_0(
                "multiplicator.increment.general",
                defaults.increment_general,
            )?,
            increment_gpu: at_least_0("multiplicator.increment.gpu", defaults.increment_gpu)?,
            unit_memory_mb: params
                .positive_f64("minimum.charged.mb")?
                .unwrap_or(defaults.unit_memory_mb),
            unit_gpus: params
                .positive_f64("minimum.charged.gpu")?
                .unwrap_or(defaults.unit_gpus),
        })
    }
}

impl PricingPolicy for HopsPricing {
    /// The PriceMultiplicatorService step: multiplicators for this utilization.
    fn multiplicators(&mut self, market: &Market) -> Multiplicators {
        self.multiplicators_for(market.utilization)
    }

    /// The price of one container for `row.seconds` of use, in credits: the
    /// price of its dominant resource.
    fn price(&self, row: UsageRow, multiplicators: Multiplicators) -> f64 {
        self.price_of(
            row.seconds,
            row.memory_mb,
            row.vcores,
            row.gpus,
            multiplicators,
        )
    }

    /// The QuotaService charge step: one charge per container, in order,
    /// each from its row alone, in one pass over the columns (which
    /// vectorises; see `larger`).
    fn charge(&mut self, usage: &Usage, multiplicators: Multiplicators) -> Vec<f64> {
        self.charge_columns(usage, multiplicators)
    }
}

impl HopsPricing {
    /// [`PricingPolicy::multiplicators`] without the `&mut`.
    pub fn multiplicators_for(&self, utilization: Utilization) -> Multiplicators {
        // GENERAL follows whichever of CPU and memory is busier.
        let general_usage =
            finite_or_zero(utilization.memory).max(finite_or_zero(utilization.vcores));
        let general = multiplicator(
            general_usage,
            self.threshold_general,
            self.increment_general,
        );
        let gpu_only = multiplicator(
            finite_or_zero(utilization.gpus),
            self.threshold_gpu,
            self.increment_gpu,
        );
        // "For non general resources the final multiplicator is the max of the
        // resource specific multiplicator and the general multiplicator."
        Multiplicators {
            general,
            gpu: gpu_only.max(general),
        }
    }

    /// The price of one container for `seconds` of use, in credits.
    pub fn price_of(
        &self,
        seconds: f64,
        memory_mb: u64,
        vcores: u64,
        gpus: u64,
        multiplicators: Multiplicators,
    ) -> f64 {
        let seconds = non_negative(seconds);
        let general = seconds * non_negative(multiplicators.general) * self.base_price_general;
        let gpu = seconds * non_negative(multiplicators.gpu) * self.base_price_gpu;
        // One vcore is one unit: the minimum allocation.
        let cpu_price = saturate(general * vcores as f64);
        let memory_price = saturate(general * (memory_mb as f64 / self.unit_memory_mb));
        let gpu_price = saturate(gpu * (gpus as f64 / self.unit_gpus));
        larger(larger(cpu_price, memory_price), gpu_price)
    }

    /// [`PricingPolicy::charge`] without the `&mut`: each row priced alone,
    /// over the columns of the checked usage.
    pub fn charge_columns(&self, usage: &Usage, multiplicators: Multiplicators) -> Vec<f64> {
        usage
            .seconds
            .iter()
            .zip(&usage.memory_mb)
            .zip(&usage.vcores)
            .zip(&usage.gpus)
            .map(|(((&seconds, &memory_mb), &vcores), &gpus)| {
                self.price_of(seconds, memory_mb, vcores, gpus, multiplicators)
            })
            .collect()
    }
}

/// HOPS-1385's formula: `1 + max(usage − threshold, 0) × increment`.
fn multiplicator(usage: f64, threshold: f64, increment: f64) -> f64 {
    let increment_base = (usage - threshold).max(0.0);
    (1.0 + increment_base * increment).min(f64::MAX)
}

/// Non-finite utilization (a NaN from 0/0 on an empty cluster) counts as idle.
fn finite_or_zero(x: f64) -> f64 {
    if x.is_finite() { x } else { 0.0 }
}

/// Seconds and multiplicators below 0 or not finite count as 0, so a charge
/// can never turn into a credit. (`finite` keeps the loop over the columns
/// in vector registers in WebAssembly too.)
fn non_negative(x: f64) -> f64 {
    if (x > 0.0) & finite(x) { x } else { 0.0 }
}

/// Keeps a price finite: overflow saturates at `f64::MAX`, and the NaN of
/// an overflowed rate times a zero allocation is a zero price.
fn saturate(x: f64) -> f64 {
    if x.is_nan() {
        0.0
    } else if x > f64::MAX {
        f64::MAX
    } else {
        x
    }
}

weft_policy::export_pricing!(HopsPricing);

#[cfg(test)]
mod tests {
    use super::*;
    use weft_policy::PolicyKind;
    use weft_policy::params::configure_with;

    /// Parameters as written in a test table.
    type Pairs = &'static [(&'static str, &'static str)];

    /// The multiplicators of an idle cluster.
    const ONE: Multiplicators = Multiplicators {
        general: 1.0,
        gpu: 1.0,
    };

    /// The policy built from `pairs`, as the host would build it.
    fn configured(pairs: &[(&str, &str)]) -> Result<HopsPricing, String> {
        configure_with::<HopsPricing>(PolicyKind::Pricing, pairs)
    }

    /// Float arithmetic on 0.2-style fractions is not exact (0.9 − 0.2 is
    /// 0.7000000000000001), so compare within a tolerance.
    fn assert_close(actual: f64, expected: f64, what: &str) {
        assert!(
            (actual - expected).abs() <= 1e-9 * expected.abs().max(1.0),
            "{what}: {actual} != {expected}"
        );
    }

    #[test]
    fn multiplicators_follow_utilization() {
        let pricing = HopsPricing::default();
        // (memory, vcores, gpus) -> (general, gpu), default threshold 0.2, increment 1
        let cases = [
            ((0.0, 0.0, 0.0), (1.0, 1.0)),    // idle cluster: base prices
            ((0.2, 0.2, 0.2), (1.0, 1.0)),    // at the threshold: not above it yet
            ((0.5, 0.3, 0.1), (1.3, 1.3)),    // memory dominates GENERAL; GPU lifted to GENERAL
            ((0.3, 0.5, 0.1), (1.3, 1.3)),    // vcores dominate GENERAL
            ((0.5, 0.3, 0.9), (1.3, 1.7)),    // GPU's own multiplicator is higher
            ((0.1, 0.1, 0.9), (1.0, 1.7)),    // GPU busy, rest idle
            ((1.0, 1.0, 1.0), (1.8, 1.8)),    // full cluster
            ((1.5, 0.0, 2.2), (2.3, 3.0)),    // demand beyond capacity keeps raising prices
            ((-1.0, -1.0, -1.0), (1.0, 1.0)), // nonsense below 0 is idle
        ];
        for ((memory, vcores, gpus), (general, gpu)) in cases {
            let m = pricing.multiplicators_for(Utilization {
                memory,
                vcores,
                gpus,
            });
            let what = format!("{memory} {vcores} {gpus}");
            assert_close(m.general, general, &what);
            assert_close(m.gpu, gpu, &what);
        }
    }

    #[test]
    fn thresholds_and_increments_are_parameters() {
        let pricing = configured(&[
            ("multiplicator.threshold.general", "0.5"),
            ("multiplicator.increment.general", "2"),
            ("multiplicator.threshold.gpu", "0"),
            ("multiplicator.increment.gpu", "10"),
        ])
        .unwrap();
        // (memory, vcores, gpus) -> (general, gpu)
        let cases = [
            ((0.4, 0.0, 0.0), (1.0, 1.0)),
            ((0.75, 0.0, 0.0), (1.5, 1.5)), // 1 + 0.25 × 2; GPU lifted to GENERAL
            ((0.0, 1.0, 0.1), (2.0, 2.0)),  // GPU 1 + 0.1 × 10 = 2 ties GENERAL
            ((0.0, 0.0, 0.3), (1.0, 4.0)),  // 1 + 0.3 × 10
        ];
        for ((memory, vcores, gpus), (general, gpu)) in cases {
            let m = pricing.multiplicators_for(Utilization {
                memory,
                vcores,
                gpus,
            });
            let what = format!("{memory} {vcores} {gpus}");
            assert_close(m.general, general, &what);
            assert_close(m.gpu, gpu, &what);
        }
    }

    #[test]
    fn multiplicators_are_always_finite() {
        let huge = configured(&[("multiplicator.increment.general", "1e308")]).unwrap();
        let cases = [
            (
                HopsPricing::default(),
                Utilization {
                    memory: f64::NAN,
                    vcores: f64::NAN,
                    gpus: f64::NAN,
                },
                1.0,
            ),
            (
                HopsPricing::default(),
                Utilization {
                    memory: f64::INFINITY,
                    vcores: 0.5,
                    gpus: 0.0,
                },
                1.3,
            ),
            (
                huge,
                Utilization {
                    memory: 10.0,
                    vcores: 0.0,
                    gpus: 0.0,
                },
                f64::MAX,
            ),
        ];
        for (pricing, utilization, general) in cases {
            let m = pricing.multiplicators_for(utilization);
            assert!(
                m.general.is_finite() && m.gpu.is_finite(),
                "{utilization:?} -> {m:?}"
            );
            assert_close(m.general, general, &format!("{utilization:?}"));
        }
    }

    #[test]
    fn dominant_resource_pays() {
        let pricing = HopsPricing::default();
        let m = Multiplicators {
            general: 1.5,
            gpu: 2.0,
        };
        // (seconds, memory, vcores, gpus) -> credits at GENERAL 1.5, GPU 2
        let cases = [
            ((10.0, 1024, 1, 0), 15.0),  // memory and cpu tie at one unit
            ((10.0, 4096, 1, 0), 60.0),  // memory dominates: 4 units × 1.5
            ((10.0, 1024, 8, 0), 120.0), // cpu dominates: 8 units × 1.5
            ((10.0, 1024, 1, 1), 20.0),  // gpu dominates: 1 unit × 2 beats 1 unit × 1.5
            ((10.0, 2048, 1, 1), 30.0),  // memory's 2 × 1.5 beats gpu's 1 × 2
            ((10.0, 512, 0, 0), 7.5),    // half a memory unit is charged as half
            ((0.0, 8192, 8, 8), 0.0),    // no time, no charge
            ((10.0, 0, 0, 0), 0.0),      // nothing allocated, no charge
        ];
        for ((seconds, mb, vcores, gpus), expected) in cases {
            let price = pricing.price_of(seconds, mb, vcores, gpus, m);
            assert_close(
                price,
                expected,
                &format!("{seconds}s {mb}MB {vcores}vc {gpus}gpu"),
            );
        }
    }

    #[test]
    fn parameters_change_prices() {
        let m = Multiplicators {
            general: 2.0,
            gpu: 3.0,
        };
        // (params, (seconds, memory, vcores, gpus)) -> credits
        let cases: [(Pairs, _, f64); 4] = [
            (&[("price.base.general", "0.5")], (2.0, 1024, 1, 0), 2.0),
            (&[("minimum.charged.mb", "512")], (2.0, 1024, 1, 0), 8.0),
            (
                &[("price.base.gpu", "4"), ("minimum.charged.gpu", "2")],
                (1.0, 0, 0, 4),
                24.0,
            ),
            // A later value wins: operator parameters come after the standard ones.
            (
                &[("price.base.general", "5"), ("price.base.general", "1")],
                (1.0, 0, 3, 0),
                6.0,
            ),
        ];
        for (pairs, (seconds, mb, vcores, gpus), expected) in cases {
            let pricing = configured(pairs).unwrap();
            assert_close(
                pricing.price_of(seconds, mb, vcores, gpus, m),
                expected,
                &format!("{pairs:?}"),
            );
        }
    }

    #[test]
    fn charge_keeps_container_order() {
        let pricing = HopsPricing::default();
        let usage =
            Usage::from_rows(&[(1.0, 1024, 1, 0), (2.0, 0, 5, 0), (3.0, 3072, 1, 2)]).unwrap();
        let charges = pricing.charge_columns(
            &usage,
            Multiplicators {
                general: 1.3,
                gpu: 1.7,
            },
        );
        let expected = [1.3, 13.0, 11.7]; // memory 1 × 1.3; cpu 2s × 5 × 1.3; memory 3s × 3 × 1.3 beats gpu 3s × 2 × 1.7 = 10.2
        assert_eq!(charges.len(), expected.len());
        for (i, (&charge, &want)) in charges.iter().zip(&expected).enumerate() {
            assert_close(charge, want, &format!("container {i}"));
        }
        assert!(pricing.charge_columns(&Usage::default(), ONE).is_empty());
    }

    #[test]
    fn a_batch_costs_what_its_rows_cost_alone() {
        let mut pricing = configured(&[("price.base.gpu", "3")]).unwrap();
        let usage =
            Usage::from_rows(&[(1.5, 2048, 1, 0), (7.0, 512, 3, 1), (0.0, 1, 1, 1)]).unwrap();
        let m = Multiplicators {
            general: 1.2,
            gpu: 2.5,
        };
        let alone: Vec<f64> = usage.rows().map(|row| pricing.price(row, m)).collect();
        assert_eq!(pricing.charge(&usage, m), alone);
    }

    #[test]
    fn charges_are_always_finite_and_non_negative() {
        let pricing = HopsPricing::default();
        // (seconds, multiplicators, memory, vcores, gpus) -> credits
        let cases = [
            ((f64::NAN, ONE, 1024, 1, 0), 0.0),
            ((-5.0, ONE, 1024, 1, 0), 0.0),
            ((f64::INFINITY, ONE, 1024, 1, 0), 0.0),
            (
                (
                    10.0,
                    Multiplicators {
                        general: f64::NAN,
                        gpu: -1.0,
                    },
                    1024,
                    1,
                    1,
                ),
                0.0,
            ),
            (
                (
                    f64::MAX,
                    Multiplicators {
                        general: 2.0,
                        gpu: 1.0,
                    },
                    1024,
                    1,
                    0,
                ),
                f64::MAX,
            ), // overflow saturates
            (
                (
                    f64::MAX,
                    Multiplicators {
                        general: 2.0,
                        gpu: 1.0,
                    },
                    0,
                    0,
                    0,
                ),
                0.0,
            ), // ∞ × 0 is not NaN
        ];
        for ((seconds, m, mb, vcores, gpus), expected) in cases {
            let price = pricing.price_of(seconds, mb, vcores, gpus, m);
            assert!(
                price.is_finite() && price >= 0.0,
                "{seconds} {m:?} -> {price}"
            );
            assert_eq!(price, expected, "{seconds} {m:?}");
        }
    }

    #[test]
    fn bad_parameters_are_refused_naming_key_and_value() {
        // (params, words the message must contain)
        let cases: [(Pairs, &[&str]); 8] = [
            (
                &[("price.base.general", "cheap")],
                &["price.base.general", "cheap"],
            ),
            (&[("price.base.gpu", "-1")], &["price.base.gpu", "-1"]),
            (
                &[("multiplicator.threshold.gpu", "NaN")],
                &["multiplicator.threshold.gpu", "NaN"],
            ),
            (
                &[("multiplicator.increment.general", "inf")],
                &["multiplicator.increment.general", "inf"],
            ),
            (
                &[("minimum.charged.mb", "0")],
                &["minimum.charged.mb", "0", "above 0"],
            ),
            (
                &[("minimum.charged.gpu", "-0.5")],
                &["minimum.charged.gpu", "-0.5"],
            ),
            (&[("discount", "10")], &["discount", "10"]),
            (
                &[("yarn.resourcemanager.quota.price.base.general", "1")],
                &["yarn.resourcemanager"],
            ),
        ];
        for (pairs, words) in cases {
            let message = configured(pairs).unwrap_err();
            for word in words {
                assert!(
                    message.contains(word),
                    "{pairs:?}: {message:?} lacks {word:?}"
                );
            }
        }
    }

    #[test]
    fn zero_is_a_valid_price_threshold_and_increment() {
        let pricing = configured(&[
            ("price.base.general", "0"),
            ("multiplicator.threshold.general", "0"),
            ("multiplicator.increment.gpu", "0"),
        ])
        .unwrap();
        assert_eq!(pricing.price_of(10.0, 4096, 4, 0, ONE), 0.0);
        assert_eq!(
            pricing
                .multiplicators_for(Utilization {
                    memory: 0.0,
                    vcores: 0.0,
                    gpus: 1.0
                })
                .gpu,
            1.0
        );
    }
}
