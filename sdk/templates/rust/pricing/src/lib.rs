//! A flat pricing policy: a fixed price per unit of a container's dominant
//! resource, whatever the cluster's load. Start your own pricing policy
//! here; this file is also Weft's bundled `flat-pricing`.
//!
//! A pricing policy answers two questions for the host:
//!
//! 1. *What are the price multiplicators now?* Every multiplicator interval
//!    the host passes the cluster's utilization. A flat policy ignores it:
//!    the multiplicators are always 1.
//! 2. *What does this usage cost?* For each container in a batch (seconds
//!    since it was last charged, and its memory, vcores and GPUs) the host
//!    wants one charge in credits.
//!
//! The price of one container is HOPS-1385's formula for each resource,
//! `seconds × base price × allocated / unit`, and the container pays for its
//! dominant (most expensive) resource.
//!
//! Everything below is plain Rust: `cargo test` runs the unit tests at the
//! end natively. The last line, `export_pricing!`, makes the type the
//! WebAssembly component when built with `--target wasm32-wasip2`.

use weft_policy::pricing::{Multiplicators, UsageRow, Utilization};
use weft_policy::{Params, Policy, PricingPolicy};

/// The policy's settings, built by `configure` from its parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct FlatPricing {
    /// Credits per second for one vcore or one unit of memory
    /// (`price.base.general`).
    pub base_price_general: f64,
    /// Credits per second for one unit of GPUs (`price.base.gpu`).
    pub base_price_gpu: f64,
    /// Megabytes of memory in one unit (`minimum.charged.mb`).
    pub unit_memory_mb: f64,
    /// GPUs in one unit (`minimum.charged.gpu`).
    pub unit_gpus: f64,
}

impl Policy for FlatPricing {
    // The package's name and version, as `weft policy list` shows them.
    const NAME: &'static str = env!("CARGO_PKG_NAME");
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    /// Reads the parameters this policy uses, with HopsYARN's defaults. The
    /// host passes the standard quota keys (`yarn.resourcemanager.quota.*`)
    /// first, then the operator's `--param`s; the SDK refuses any key this
    /// function never asks for, except standard ones (the multiplicator
    /// thresholds and increments, unused here).
    fn configure(params: &Params) -> Result<Self, String> {
        Ok(FlatPricing {
            base_price_general: params
                .non_negative_f64("price.base.general")?
                .unwrap_or(1.0),
            base_price_gpu: params.non_negative_f64("price.base.gpu")?.unwrap_or(1.0),
            // Units divide the allocation: 0 would make every price infinite.
            unit_memory_mb: params.positive_f64("minimum.charged.mb")?.unwrap_or(1024.0),
            unit_gpus: params.positive_f64("minimum.charged.gpu")?.unwrap_or(1.0),
        })
    }
}

impl PricingPolicy for FlatPricing {
    /// Flat: prices never move with demand.
    fn multiplicators(&mut self, _utilization: Utilization) -> Multiplicators {
        Multiplicators {
            general: 1.0,
            gpu: 1.0,
        }
    }

    /// One container's charge. The host passes the multiplicators this
    /// policy returned, always 1, so they are not needed. `charge`, which
    /// prices a whole batch, is left to its default: each row priced here,
    /// alone, as the host requires.
    fn price(&self, row: UsageRow, _multiplicators: Multiplicators) -> f64 {
        // One vcore is one unit: the minimum allocation.
        let cpu = row.seconds * self.base_price_general * row.vcores as f64;
        let memory =
            row.seconds * self.base_price_general * row.memory_mb as f64 / self.unit_memory_mb;
        let gpu = row.seconds * self.base_price_gpu * row.gpus as f64 / self.unit_gpus;
        // The container pays for its dominant resource.
        cpu.max(memory).max(gpu)
    }
}

// The component's glue: exports `FlatPricing` as the `pricing-policy` world.
// It expands to nothing in a native build, so `cargo test` runs natively.
weft_policy::export_pricing!(FlatPricing);

#[cfg(test)]
mod tests {
    use super::*;
    use weft_policy::PolicyKind;
    use weft_policy::params::configure_with;

    /// The policy built from `pairs`, as the host would build it.
    fn configured(pairs: &[(&str, &str)]) -> Result<FlatPricing, String> {
        configure_with::<FlatPricing>(PolicyKind::Pricing, pairs)
    }

    /// The price of one row: `(seconds, memory MB, vcores, gpus)`.
    fn price(
        pricing: &FlatPricing,
        (seconds, memory_mb, vcores, gpus): (f64, u64, u64, u64),
    ) -> f64 {
        let row = UsageRow {
            seconds,
            memory_mb,
            vcores,
            gpus,
        };
        let one = Multiplicators {
            general: 1.0,
            gpu: 1.0,
        };
        pricing.price(row, one)
    }

    #[test]
    fn dominant_resource_pays() {
        let pricing = configured(&[]).unwrap();
        // (seconds, memory, vcores, gpus) -> credits
        let cases = [
            ((10.0, 1024, 1, 0), 10.0), // memory and cpu tie at one unit
            ((10.0, 4096, 1, 0), 40.0), // memory dominates: 4 units
            ((10.0, 1024, 8, 0), 80.0), // cpu dominates: 8 units
            ((10.0, 1024, 1, 2), 20.0), // gpu dominates: 2 units
            ((0.0, 8192, 8, 8), 0.0),   // no time, no charge
        ];
        for (row, expected) in cases {
            assert_eq!(price(&pricing, row), expected, "{row:?}");
        }
    }

    #[test]
    fn parameters_change_prices() {
        let pricing = configured(&[
            ("price.base.general", "0.5"),
            ("minimum.charged.mb", "512"),
            // A standard key this policy does not use: accepted, ignored.
            ("multiplicator.threshold.general", "0.2"),
        ])
        .unwrap();
        assert_eq!(price(&pricing, (2.0, 1024, 1, 0)), 2.0);
    }

    #[test]
    fn bad_parameters_are_refused() {
        // (parameters, the refusal)
        let cases: [(&[(&str, &str)], &str); 4] = [
            (
                &[("price.base.general", "cheap")],
                r#"price.base.general must be a number at least 0, not "cheap""#,
            ),
            (
                &[("price.base.gpu", "-1")],
                r#"price.base.gpu must be a number at least 0, not "-1""#,
            ),
            (
                &[("minimum.charged.mb", "0")],
                r#"minimum.charged.mb must be a number above 0, not "0""#,
            ),
            (&[("discount", "10")], r#"unknown parameter "discount""#),
        ];
        for (pairs, refusal) in cases {
            let message = configured(pairs).unwrap_err();
            assert!(message.contains(refusal), "{pairs:?}: {message}");
        }
    }

    #[test]
    fn the_multiplicators_never_move() {
        let mut pricing = configured(&[]).unwrap();
        let busy = Utilization {
            memory: 2.0,
            vcores: 1.0,
            gpus: 0.5,
        };
        assert_eq!(
            pricing.multiplicators(busy),
            Multiplicators {
                general: 1.0,
                gpu: 1.0
            }
        );
    }
}
