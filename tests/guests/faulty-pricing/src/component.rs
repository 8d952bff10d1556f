//! The WebAssembly glue: WIT types in, the functions of `lib.rs` out, plus
//! the count of `charge` calls that decides when the fault starts.

#![allow(unsafe_code)] // the code wit-bindgen generates

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::FaultyPricing;

wit_bindgen::generate!({ world: "pricing-policy", path: "../../../wit" });

use exports::weft::policy::pricing::{Guest as Pricing, PriceMultiplicators, Usage, Utilization};
use weft::policy::types::PolicyKind;

/// Settings from the last successful `configure`; defaults (no fault) until then.
static SETTINGS: Mutex<Option<FaultyPricing>> = Mutex::new(None);

/// `charge` calls since the last successful `configure`.
static CALLS: AtomicU64 = AtomicU64::new(0);

fn settings() -> FaultyPricing {
    SETTINGS.lock().unwrap().clone().unwrap_or_default()
}

struct Component;

impl Guest for Component {
    fn describe() -> PolicyInfo {
        PolicyInfo {
            name: "faulty-pricing".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            kind: PolicyKind::Pricing,
        }
    }

    fn configure(params: Vec<(String, String)>) -> Result<(), String> {
        let settings = FaultyPricing::from_params(&params)?;
        *SETTINGS.lock().unwrap() = Some(settings);
        CALLS.store(0, Ordering::Relaxed);
        Ok(())
    }
}

impl Pricing for Component {
    fn multiplicators(_utilization: Utilization) -> PriceMultiplicators {
        // The faults are all in `charge`; this stays well-behaved.
        PriceMultiplicators {
            general: 1.0,
            gpu: 1.0,
        }
    }

    fn charge(usage: Usage, _multiplicators: PriceMultiplicators) -> Vec<f64> {
        // Counted before the call runs, so the fault starts on call `after + 1`.
        let calls_before = CALLS.fetch_add(1, Ordering::Relaxed);
        let usage = crate::Usage {
            seconds: usage.seconds,
            memory_mb: usage.memory_mb,
            vcores: usage.vcores,
            gpus: usage.gpus,
        };
        settings().charge(calls_before, &usage)
    }
}

export!(Component);
