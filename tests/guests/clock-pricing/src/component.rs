//! The WebAssembly glue: WIT types in, the functions of `lib.rs` out, and the
//! readings of the clocks and random sources each `charge` call takes.

#![allow(unsafe_code)] // the code wit-bindgen generates, and two WASI imports

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::{ClockPricing, Readings};

wit_bindgen::generate!({ world: "pricing-policy", path: "../../../wit" });

use exports::weft::policy::pricing::{Guest as Pricing, PriceMultiplicators, Usage, Utilization};
use weft::policy::types::PolicyKind;

// std reads the monotonic clock only behind `Instant`, which hides its value,
// and never uses wasi:random/insecure; these two are imported directly, as
// the getrandom crate imports wasi:random/random. Both return a plain u64.
#[link(wasm_import_module = "wasi:clocks/monotonic-clock@0.2.0")]
unsafe extern "C" {
    #[link_name = "now"]
    safe fn monotonic_now() -> u64;
}

#[link(wasm_import_module = "wasi:random/insecure@0.2.0")]
unsafe extern "C" {
    #[link_name = "get-insecure-random-u64"]
    safe fn insecure_random_u64() -> u64;
}

/// Settings from the last successful `configure`; defaults until then.
static SETTINGS: Mutex<Option<ClockPricing>> = Mutex::new(None);

fn settings() -> ClockPricing {
    SETTINGS.lock().unwrap().clone().unwrap_or_default()
}

/// Everything this call can read of time and chance.
fn read() -> Readings {
    Readings {
        wall_ms: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0),
        monotonic_ns: monotonic_now(),
        random: getrandom::u64().expect("wasi:random/random answers"),
        insecure: insecure_random_u64(),
        hashed: RandomState::new().hash_one(0u64),
    }
}

struct Component;

impl Guest for Component {
    fn describe() -> PolicyInfo {
        PolicyInfo {
            name: "clock-pricing".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            kind: PolicyKind::Pricing,
        }
    }

    fn configure(params: Vec<(String, String)>) -> Result<(), String> {
        let settings = ClockPricing::from_params(&params)?;
        *SETTINGS.lock().unwrap() = Some(settings);
        Ok(())
    }
}

impl Pricing for Component {
    fn multiplicators(_utilization: Utilization) -> PriceMultiplicators {
        PriceMultiplicators {
            general: 1.0,
            gpu: 1.0,
        }
    }

    fn charge(usage: Usage, _multiplicators: PriceMultiplicators) -> Vec<f64> {
        let settings = settings();
        if settings.sleep_ms > 0 {
            std::thread::sleep(Duration::from_millis(settings.sleep_ms));
        }
        let usage = crate::Usage {
            seconds: usage.seconds,
            memory_mb: usage.memory_mb,
            vcores: usage.vcores,
            gpus: usage.gpus,
        };
        settings.charge(&read(), &usage)
    }
}

export!(Component);
