//! The WebAssembly glue: WIT types in, the functions of `lib.rs` out.

#![allow(unsafe_code)] // the code wit-bindgen generates

use std::sync::Mutex;

use crate::FlatPricing;

wit_bindgen::generate!({ world: "pricing-policy", path: "../../wit" });

use exports::weft::policy::pricing::{Guest as Pricing, PriceMultiplicators, Usage, Utilization};
use weft::policy::types::PolicyKind;

/// Settings from the last successful `configure`; defaults until then.
static SETTINGS: Mutex<Option<FlatPricing>> = Mutex::new(None);

fn settings() -> FlatPricing {
    SETTINGS.lock().unwrap().clone().unwrap_or_default()
}

struct Component;

impl Guest for Component {
    fn describe() -> PolicyInfo {
        PolicyInfo {
            name: "flat-pricing".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            kind: PolicyKind::Pricing,
        }
    }

    fn configure(params: Vec<(String, String)>) -> Result<(), String> {
        let pricing = FlatPricing::from_params(&params)?;
        *SETTINGS.lock().unwrap() = Some(pricing);
        Ok(())
    }
}

impl Pricing for Component {
    fn multiplicators(_utilization: Utilization) -> PriceMultiplicators {
        // Flat: the price never moves with demand.
        PriceMultiplicators {
            general: 1.0,
            gpu: 1.0,
        }
    }

    fn charge(usage: Usage, _multiplicators: PriceMultiplicators) -> Vec<f64> {
        // Flat: the multiplicator is always 1, so the host's are not needed.
        let pricing = settings();
        (0..usage.seconds.len())
            .map(|i| {
                pricing.price(
                    usage.seconds[i],
                    usage.memory_mb[i],
                    usage.vcores[i],
                    usage.gpus[i],
                )
            })
            .collect()
    }
}

export!(Component);
