//! The WebAssembly glue: WIT types in, the functions of `lib.rs` out.

#![allow(unsafe_code)] // the code wit-bindgen generates

use std::sync::Mutex;

use crate::HopsPricing;

wit_bindgen::generate!({ world: "pricing-policy", path: "../../wit" });

use exports::weft::policy::pricing::{Guest as Pricing, PriceMultiplicators, Usage, Utilization};
use weft::policy::types::PolicyKind;

/// Settings from the last successful `configure`; defaults until then.
static SETTINGS: Mutex<Option<HopsPricing>> = Mutex::new(None);

fn settings() -> HopsPricing {
    SETTINGS.lock().unwrap().clone().unwrap_or_default()
}

struct Component;

impl Guest for Component {
    fn describe() -> PolicyInfo {
        PolicyInfo {
            name: "hops-pricing".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            kind: PolicyKind::Pricing,
        }
    }

    fn configure(params: Vec<(String, String)>) -> Result<(), String> {
        let pricing = HopsPricing::from_params(&params)?;
        *SETTINGS.lock().unwrap() = Some(pricing);
        Ok(())
    }
}

impl Pricing for Component {
    fn multiplicators(utilization: Utilization) -> PriceMultiplicators {
        let m = settings().multiplicators(crate::Utilization {
            memory: utilization.memory,
            vcores: utilization.vcores,
            gpus: utilization.gpus,
        });
        PriceMultiplicators {
            general: m.general,
            gpu: m.gpu,
        }
    }

    fn charge(usage: Usage, multiplicators: PriceMultiplicators) -> Vec<f64> {
        // The columns move into the native record: no copy of the batch.
        let usage = crate::Usage {
            seconds: usage.seconds,
            memory_mb: usage.memory_mb,
            vcores: usage.vcores,
            gpus: usage.gpus,
        };
        let multiplicators = crate::PriceMultiplicators {
            general: multiplicators.general,
            gpu: multiplicators.gpu,
        };
        settings().charge(&usage, multiplicators)
    }
}

export!(Component);
