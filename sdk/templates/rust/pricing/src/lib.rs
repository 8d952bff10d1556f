//! A flat pricing policy: a fixed price per unit of a container's dominant
//! resource, whatever the cluster's load — times a factor per project and a
//! discount at night, both off unless given. Start your own pricing policy
//! here; this file is also Weft's bundled `flat-pricing`.
//!
//! A pricing policy answers three questions for the host:
//!
//! 1. *What are the price multiplicators now?* Every multiplicator interval
//!    the host passes the cluster's load (utilization per partition and
//!    queue, pending demand, the multiplicators returned last). A flat
//!    policy ignores it: the multiplicators are always 1.
//! 2. *What does this usage cost?* For each container in a batch (seconds
//!    since it was last charged, its memory, vcores and GPUs, the interval
//!    [start, end] on the host clock, and its context: app, queue, user,
//!    project, application type and tags, node label…) the host wants one
//!    charge in credits.
//! 3. *What would this ask cost?* A quote before a submission; the SDK's
//!    default prices one container for the duration, times the containers.
//!
//! The price of one container is HOPS-1385's formula for each resource,
//! `seconds × base price × allocated / unit`, and the container pays for its
//! dominant (most expensive) resource. Then:
//!
//! - `project.NAME=F` multiplies project NAME's charges by F (say
//!   `project.ml=2`: twice the others);
//! - `night.factor=F` multiplies what falls in the night hours by F (say
//!   `0.5`: half price), the night being `night.start-hour` (default 22)
//!   to `night.end-hour` (default 6), UTC. A row spanning dusk pays pro
//!   rata for each part.
//!
//! Everything below is plain Rust: `cargo test` runs the unit tests at the
//! end natively. The last line, `export_pricing!`, makes the type the
//! WebAssembly component when built with `--target wasm32-wasip2`.

use std::collections::BTreeMap;

use weft_policy::pricing::{Market, Multiplicators, UsageRow, night_fraction};
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
    /// Each project's factor (`project.NAME`); 1 for the others.
    pub project_factors: BTreeMap<String, f64>,
    /// What the night hours cost, as a factor (`night.factor`; 1: no discount).
    pub night_factor: f64,
    /// When the night begins and ends, in whole hours UTC
    /// (`night.start-hour`, `night.end-hour`).
    pub night_hours: (u32, u32),
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
        let mut project_factors = BTreeMap::new();
        for (key, project) in params.with_prefix("project.") {
            let factor = params.non_negative_f64(&key)?.unwrap_or(1.0);
            project_factors.insert(project, factor);
        }
        let hour = |key: &str, default: u32| -> Result<u32, String> {
            match params.u64(key)? {
                None => Ok(default),
                Some(hour) if hour <= 23 => Ok(hour as u32),
                Some(hour) => Err(params.refusal(key, &hour.to_string(), "an hour from 0 to 23")),
            }
        };
        Ok(FlatPricing {
            base_price_general: params
                .non_negative_f64("price.base.general")?
                .unwrap_or(1.0),
            base_price_gpu: params.non_negative_f64("price.base.gpu")?.unwrap_or(1.0),
            // Units divide the allocation: 0 would make every price infinite.
            unit_memory_mb: params.positive_f64("minimum.charged.mb")?.unwrap_or(1024.0),
            unit_gpus: params.positive_f64("minimum.charged.gpu")?.unwrap_or(1.0),
            project_factors,
            night_factor: params.non_negative_f64("night.factor")?.unwrap_or(1.0),
            night_hours: (hour("night.start-hour", 22)?, hour("night.end-hour", 6)?),
        })
    }
}

impl PricingPolicy for FlatPricing {
    /// Flat: prices never move with demand. (A policy that moves them
    /// can smooth its step from `market.last`, what it returned last.)
    fn multiplicators(&mut self, _market: &Market) -> Multiplicators {
        Multiplicators {
            general: 1.0,
            gpu: 1.0,
        }
    }

    /// One container's charge. The host passes the multiplicators this
    /// policy returned, always 1, so they are not needed. `charge`, which
    /// prices a whole batch, and `quote` are left to their defaults: each
    /// row priced here, alone, as the host requires.
    fn price(&self, row: UsageRow, _multiplicators: Multiplicators) -> f64 {
        // One vcore is one unit: the minimum allocation.
        let cpu = row.seconds * self.base_price_general * row.vcores as f64;
        let memory =
            row.seconds * self.base_price_general * row.memory_mb as f64 / self.unit_memory_mb;
        let gpu = row.seconds * self.base_price_gpu * row.gpus as f64 / self.unit_gpus;
        // The container pays for its dominant resource…
        let flat = cpu.max(memory).max(gpu);
        // …times its project's factor, and less for what ran at night.
        let project = self
            .project_factors
            .get(&row.context.project)
            .copied()
            .unwrap_or(1.0);
        let (from, to) = self.night_hours;
        let night = night_fraction(row.start_ms, row.end_ms, from, to);
        flat * project * (1.0 - night * (1.0 - self.night_factor))
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
    use weft_policy::pricing::{ChargeContext, QuoteRequest, Usage};

    /// The policy built from `pairs`, as the host would build it.
    fn configured(pairs: &[(&str, &str)]) -> Result<FlatPricing, String> {
        configure_with::<FlatPricing>(PolicyKind::Pricing, pairs)
    }

    const ONE: Multiplicators = Multiplicators {
        general: 1.0,
        gpu: 1.0,
    };
    const HOUR_MS: i64 = 3_600_000;

    /// The price of one row, `(seconds, memory MB, vcores, gpus)`, of
    /// project `default` starting at noon UTC.
    fn price(pricing: &FlatPricing, row: (f64, u64, u64, u64)) -> f64 {
        price_at(pricing, row, "default", 12 * HOUR_MS)
    }

    /// The price of one row of `project` starting at `start_ms`.
    fn price_at(
        pricing: &FlatPricing,
        row: (f64, u64, u64, u64),
        project: &str,
        start_ms: i64,
    ) -> f64 {
        let context = ChargeContext {
            project: project.into(),
            ..ChargeContext::default()
        };
        let usage = Usage::from_rows_in(&[context], [(row, start_ms, 0)]).unwrap();
        pricing.price(usage.row(0), ONE)
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
    fn project_ml_pays_twice_and_nights_are_half_price() {
        let pricing = configured(&[("project.ml", "2"), ("night.factor", "0.5")]).unwrap();
        let row = (3600.0, 1024, 1, 0); // one vcore-hour
        let noon = 12 * HOUR_MS;
        assert_eq!(price_at(&pricing, row, "ml", noon), 7200.0);
        assert_eq!(price_at(&pricing, row, "web", noon), 3600.0);
        // Wholly at night (23:00–00:00): half price, for ml too.
        let late = 23 * HOUR_MS;
        assert_eq!(price_at(&pricing, row, "web", late), 1800.0);
        assert_eq!(price_at(&pricing, row, "ml", late), 3600.0);
        // Half at night (21:30–22:30): three quarters.
        let dusk = 21 * HOUR_MS + HOUR_MS / 2;
        assert_eq!(price_at(&pricing, row, "web", dusk), 2700.0);
        // Other hours for the night: 0–8 UTC.
        let early = configured(&[
            ("night.factor", "0"),
            ("night.start-hour", "0"),
            ("night.end-hour", "8"),
        ])
        .unwrap();
        assert_eq!(price_at(&early, row, "web", 2 * HOUR_MS), 0.0);
        assert_eq!(price_at(&early, row, "web", late), 3600.0);
    }

    #[test]
    fn a_quote_is_the_price_of_its_containers_for_its_duration() {
        let pricing = configured(&[("project.ml", "2")]).unwrap();
        let request = QuoteRequest {
            context: ChargeContext {
                project: "ml".into(),
                ..ChargeContext::default()
            },
            memory_mb: 1024,
            vcores: 1,
            gpus: 0,
            containers: 3,
            start_ms: 12 * HOUR_MS,
            duration_ms: 60_000,
        };
        assert_eq!(pricing.quote(&request, ONE), 60.0 * 2.0 * 3.0);
    }

    #[test]
    fn bad_parameters_are_refused() {
        // (parameters, the refusal)
        let cases: [(&[(&str, &str)], &str); 8] = [
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
            (
                &[("project.ml", "-1")],
                r#"project.ml must be a number at least 0, not "-1""#,
            ),
            (
                &[("night.start-hour", "24")],
                r#"night.start-hour must be an hour from 0 to 23, not "24""#,
            ),
            (
                &[("night.factor", "x")],
                r#"night.factor must be a number at least 0, not "x""#,
            ),
            (
                &[("night.end-hour", "-3")],
                r#"night.end-hour must be a whole number at least 0, not "-3""#,
            ),
        ];
        for (pairs, refusal) in cases {
            let message = configured(pairs).unwrap_err();
            assert!(message.contains(refusal), "{pairs:?}: {message}");
        }
    }

    #[test]
    fn the_multiplicators_never_move() {
        let mut pricing = configured(&[]).unwrap();
        let mut busy = Market::default();
        busy.utilization.memory = 2.0;
        busy.last.general = 3.0;
        assert_eq!(pricing.multiplicators(&busy), ONE);
    }
}
