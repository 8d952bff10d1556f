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
//! tested with `cargo test -p hops-pricing` and the host can benchmark it. The
//! WebAssembly glue is in `component.rs`.

#[cfg(target_arch = "wasm32")]
mod component;

/// Cluster utilization as fractions of capacity (normally 0..=1, may exceed 1).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Utilization {
    pub memory: f64,
    pub vcores: f64,
    pub gpus: f64,
}

/// Price multiplicators: `general` for CPU and memory, `gpu` for GPUs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PriceMultiplicators {
    pub general: f64,
    pub gpu: f64,
}

impl Default for PriceMultiplicators {
    /// An idle cluster: base prices apply unchanged.
    fn default() -> Self {
        PriceMultiplicators {
            general: 1.0,
            gpu: 1.0,
        }
    }
}

/// Usage to charge, as columns like the WIT record: entry i of every column
/// is container i.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Usage {
    pub seconds: Vec<f64>,
    pub memory_mb: Vec<u64>,
    pub vcores: Vec<u64>,
    pub gpus: Vec<u64>,
}

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

impl HopsPricing {
    /// Builds the settings from `key=value` parameters, starting from the
    /// defaults; a later value for a key wins, so operator `--param`s
    /// override the standard ones the host passes first. An unknown key or a
    /// bad number is refused with a message naming both: the host shows it
    /// to the operator and keeps the policy that was running.
    pub fn from_params(params: &[(String, String)]) -> Result<Self, String> {
        let mut pricing = HopsPricing::default();
        for (key, value) in params {
            // Units divide the allocation, so 0 would make every price infinite.
            let (field, is_unit) = match key.as_str() {
                "price.base.general" => (&mut pricing.base_price_general, false),
                "price.base.gpu" => (&mut pricing.base_price_gpu, false),
                "multiplicator.threshold.general" => (&mut pricing.threshold_general, false),
                "multiplicator.threshold.gpu" => (&mut pricing.threshold_gpu, false),
                "multiplicator.increment.general" => (&mut pricing.increment_general, false),
                "multiplicator.increment.gpu" => (&mut pricing.increment_gpu, false),
                "minimum.charged.mb" => (&mut pricing.unit_memory_mb, true),
                "minimum.charged.gpu" => (&mut pricing.unit_gpus, true),
                _ => {
                    return Err(format!(
                        "hops-pricing has no parameter {key:?} (given {key}={value})"
                    ));
                }
            };
            *field = parse_number(key, value, is_unit)?;
        }
        Ok(pricing)
    }

    /// The PriceMultiplicatorService step: multiplicators for this utilization.
    pub fn multiplicators(&self, utilization: Utilization) -> PriceMultiplicators {
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
        PriceMultiplicators {
            general,
            gpu: gpu_only.max(general),
        }
    }

    /// The price of one container for `seconds` of use, in credits: the
    /// price of its dominant resource.
    pub fn price(
        &self,
        seconds: f64,
        memory_mb: u64,
        vcores: u64,
        gpus: u64,
        multiplicators: PriceMultiplicators,
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

    /// The QuotaService charge step: one charge per container, in order.
    ///
    /// The columns should be the same length; if the host ever sends ragged
    /// ones, only the containers present in every column are charged, so the
    /// host sees the wrong count rather than a trap.
    pub fn charge(&self, usage: &Usage, multiplicators: PriceMultiplicators) -> Vec<f64> {
        usage
            .seconds
            .iter()
            .zip(&usage.memory_mb)
            .zip(&usage.vcores)
            .zip(&usage.gpus)
            .map(|(((&seconds, &memory_mb), &vcores), &gpus)| {
                self.price(seconds, memory_mb, vcores, gpus, multiplicators)
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
/// can never turn into a credit.
fn non_negative(x: f64) -> f64 {
    if x.is_finite() && x > 0.0 { x } else { 0.0 }
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

/// The larger of two prices that are never NaN. A compare-and-select,
/// because `f64::max` (NaN-aware) compiles to an out-of-line call in
/// WebAssembly and stops the charge loop vectorising: it made `charge` 7×
/// slower than native (BENCHMARKS.md).
fn larger(a: f64, b: f64) -> f64 {
    if a > b { a } else { b }
}

fn parse_number(key: &str, value: &str, is_unit: bool) -> Result<f64, String> {
    match value.trim().parse::<f64>() {
        Ok(number) if number.is_finite() && (number > 0.0 || (!is_unit && number == 0.0)) => {
            Ok(number)
        }
        _ if is_unit => Err(format!(
            "hops-pricing: {key} must be a number above 0, not {value:?}"
        )),
        _ => Err(format!(
            "hops-pricing: {key} must be a number at least 0, not {value:?}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parameters as written in a test table.
    type Pairs = &'static [(&'static str, &'static str)];

    fn params(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
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
            let m = pricing.multiplicators(Utilization {
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
        let pricing = HopsPricing::from_params(&params(&[
            ("multiplicator.threshold.general", "0.5"),
            ("multiplicator.increment.general", "2"),
            ("multiplicator.threshold.gpu", "0"),
            ("multiplicator.increment.gpu", "10"),
        ]))
        .unwrap();
        // (memory, vcores, gpus) -> (general, gpu)
        let cases = [
            ((0.4, 0.0, 0.0), (1.0, 1.0)),
            ((0.75, 0.0, 0.0), (1.5, 1.5)), // 1 + 0.25 × 2; GPU lifted to GENERAL
            ((0.0, 1.0, 0.1), (2.0, 2.0)),  // GPU 1 + 0.1 × 10 = 2 ties GENERAL
            ((0.0, 0.0, 0.3), (1.0, 4.0)),  // 1 + 0.3 × 10
        ];
        for ((memory, vcores, gpus), (general, gpu)) in cases {
            let m = pricing.multiplicators(Utilization {
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
        let huge =
            HopsPricing::from_params(&params(&[("multiplicator.increment.general", "1e308")]))
                .unwrap();
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
            let m = pricing.multiplicators(utilization);
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
        let m = PriceMultiplicators {
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
            let price = pricing.price(seconds, mb, vcores, gpus, m);
            assert_close(
                price,
                expected,
                &format!("{seconds}s {mb}MB {vcores}vc {gpus}gpu"),
            );
        }
    }

    #[test]
    fn parameters_change_prices() {
        let m = PriceMultiplicators {
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
            let pricing = HopsPricing::from_params(&params(pairs)).unwrap();
            assert_close(
                pricing.price(seconds, mb, vcores, gpus, m),
                expected,
                &format!("{pairs:?}"),
            );
        }
    }

    #[test]
    fn charge_keeps_container_order() {
        let pricing = HopsPricing::default();
        let usage = Usage {
            seconds: vec![1.0, 2.0, 3.0],
            memory_mb: vec![1024, 0, 3072],
            vcores: vec![1, 5, 1],
            gpus: vec![0, 0, 2],
        };
        let charges = pricing.charge(
            &usage,
            PriceMultiplicators {
                general: 1.3,
                gpu: 1.7,
            },
        );
        let expected = [1.3, 13.0, 11.7]; // memory 1 × 1.3; cpu 2s × 5 × 1.3; memory 3s × 3 × 1.3 beats gpu 3s × 2 × 1.7 = 10.2
        assert_eq!(charges.len(), expected.len());
        for (i, (&charge, &want)) in charges.iter().zip(&expected).enumerate() {
            assert_close(charge, want, &format!("container {i}"));
        }
        assert!(
            pricing
                .charge(&Usage::default(), PriceMultiplicators::default())
                .is_empty()
        );
    }

    #[test]
    fn charges_are_always_finite_and_non_negative() {
        let pricing = HopsPricing::default();
        let one = PriceMultiplicators::default();
        // (seconds, multiplicators, memory, vcores, gpus) -> credits
        let cases = [
            ((f64::NAN, one, 1024, 1, 0), 0.0),
            ((-5.0, one, 1024, 1, 0), 0.0),
            ((f64::INFINITY, one, 1024, 1, 0), 0.0),
            (
                (
                    10.0,
                    PriceMultiplicators {
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
                    PriceMultiplicators {
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
                    PriceMultiplicators {
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
            let price = pricing.price(seconds, mb, vcores, gpus, m);
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
            let message = HopsPricing::from_params(&params(pairs)).unwrap_err();
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
        let pricing = HopsPricing::from_params(&params(&[
            ("price.base.general", "0"),
            ("multiplicator.threshold.general", "0"),
            ("multiplicator.increment.gpu", "0"),
        ]))
        .unwrap();
        assert_eq!(
            pricing.price(10.0, 4096, 4, 0, PriceMultiplicators::default()),
            0.0
        );
        assert_eq!(
            pricing
                .multiplicators(Utilization {
                    memory: 0.0,
                    vcores: 0.0,
                    gpus: 1.0
                })
                .gpu,
            1.0
        );
    }
}
