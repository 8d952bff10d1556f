//! `flat-pricing`: the simplest pricing policy Weft has, and the one to copy
//! when you write your own.
//!
//! A pricing policy answers two questions for the host:
//!
//! 1. *What are the price multiplicators now?* The host asks every
//!    multiplicator interval, passing the cluster's utilization. A flat policy
//!    ignores utilization: the multiplicator is always 1.
//! 2. *What does this usage cost?* The host asks at every quota event with a
//!    batch of containers (seconds since each was last charged, and its
//!    memory, vcores and GPUs) and gets one charge per container back.
//!
//! The price of one container is HOPS-1385's formula for each resource,
//! `seconds × multiplicator × base price × allocated / unit`, and the
//! container pays for its dominant (most expensive) resource.
//!
//! Everything here is plain Rust that also compiles natively, so it is unit
//! tested with `cargo test -p flat-pricing`. The WebAssembly glue is in
//! `component.rs` and only translates between WIT types and these functions.

#[cfg(target_arch = "wasm32")]
mod component;

/// The policy's settings, filled in by `configure`.
#[derive(Debug, Clone, PartialEq)]
pub struct FlatPricing {
    /// Credits per second for one unit of CPU or memory.
    pub base_price_general: f64,
    /// Credits per second for one GPU unit.
    pub base_price_gpu: f64,
    /// Megabytes of memory that count as one unit.
    pub unit_memory_mb: f64,
    /// GPUs that count as one unit.
    pub unit_gpus: f64,
}

impl Default for FlatPricing {
    /// HopsYARN's defaults: base price 1 for both, 1024 MB and 1 GPU per unit.
    fn default() -> Self {
        FlatPricing {
            base_price_general: 1.0,
            base_price_gpu: 1.0,
            unit_memory_mb: 1024.0,
            unit_gpus: 1.0,
        }
    }
}

/// The standard quota parameters the host always passes. This policy uses
/// the first four; it must accept the others silently.
const STANDARD_KEYS_UNUSED: &[&str] = &[
    "multiplicator.threshold.general",
    "multiplicator.threshold.gpu",
    "multiplicator.increment.general",
    "multiplicator.increment.gpu",
];

impl FlatPricing {
    /// Builds the settings from `key=value` parameters, starting from the
    /// defaults. An unknown key or a bad number is refused with a message
    /// saying which one: the host shows it to the operator and keeps the
    /// policy that was running.
    pub fn from_params(params: &[(String, String)]) -> Result<Self, String> {
        let mut pricing = FlatPricing::default();
        for (key, value) in params {
            let field = match key.as_str() {
                "price.base.general" => &mut pricing.base_price_general,
                "price.base.gpu" => &mut pricing.base_price_gpu,
                "minimum.charged.mb" => &mut pricing.unit_memory_mb,
                "minimum.charged.gpu" => &mut pricing.unit_gpus,
                other if STANDARD_KEYS_UNUSED.contains(&other) => continue,
                other => return Err(format!("flat-pricing has no parameter {other:?}")),
            };
            *field = parse_non_negative(key, value)?;
        }
        if pricing.unit_memory_mb == 0.0 || pricing.unit_gpus == 0.0 {
            return Err(
                "flat-pricing: a unit (minimum.charged.mb, minimum.charged.gpu) must be above 0"
                    .into(),
            );
        }
        Ok(pricing)
    }

    /// The price of one container for `seconds` of use, in credits.
    pub fn price(&self, seconds: f64, memory_mb: u64, vcores: u64, gpus: u64) -> f64 {
        // One vcore is one unit: the minimum allocation.
        let cpu = seconds * self.base_price_general * vcores as f64;
        let memory = seconds * self.base_price_general * memory_mb as f64 / self.unit_memory_mb;
        let gpu = seconds * self.base_price_gpu * gpus as f64 / self.unit_gpus;
        // The container pays for its dominant resource.
        cpu.max(memory).max(gpu)
    }
}

fn parse_non_negative(key: &str, value: &str) -> Result<f64, String> {
    match value.trim().parse::<f64>() {
        Ok(number) if number.is_finite() && number >= 0.0 => Ok(number),
        _ => Err(format!(
            "flat-pricing: {key} must be a number at least 0, not {value:?}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn dominant_resource_pays() {
        let pricing = FlatPricing::default();
        // (seconds, memory, vcores, gpus) -> credits
        let cases = [
            ((10.0, 1024, 1, 0), 10.0), // memory and cpu tie at one unit
            ((10.0, 4096, 1, 0), 40.0), // memory dominates: 4 units
            ((10.0, 1024, 8, 0), 80.0), // cpu dominates: 8 units
            ((10.0, 1024, 1, 2), 20.0), // gpu dominates: 2 units
            ((0.0, 8192, 8, 8), 0.0),   // no time, no charge
        ];
        for ((seconds, mb, vcores, gpus), expected) in cases {
            assert_eq!(
                pricing.price(seconds, mb, vcores, gpus),
                expected,
                "{seconds}s {mb}MB {vcores}vc {gpus}gpu"
            );
        }
    }

    #[test]
    fn parameters_change_prices() {
        let pricing = FlatPricing::from_params(&params(&[
            ("price.base.general", "0.5"),
            ("minimum.charged.mb", "512"),
            ("multiplicator.threshold.general", "0.2"),
        ]))
        .unwrap();
        assert_eq!(pricing.price(2.0, 1024, 1, 0), 2.0);
    }

    #[test]
    fn bad_parameters_are_refused() {
        for bad in [
            &[("price.base.general", "cheap")][..],
            &[("price.base.gpu", "-1")],
            &[("minimum.charged.mb", "0")],
            &[("discount", "10")],
        ] {
            assert!(FlatPricing::from_params(&params(bad)).is_err(), "{bad:?}");
        }
    }
}
