//! The WebAssembly glue: the readings of the clocks and random sources each
//! call takes, the policy on top of the arithmetic in `lib.rs`, and its
//! export.

#![allow(unsafe_code, reason = "two WASI imports")]

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use weft_policy::PricingPolicy;
use weft_policy::pricing::{Market, Multiplicators, Usage, UsageRow};

use crate::{ClockPricing, Readings};

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

impl PricingPolicy for ClockPricing {
    fn multiplicators(&mut self, _market: &Market) -> Multiplicators {
        Multiplicators {
            general: 1.0,
            gpu: 1.0,
        }
    }

    fn price(&self, row: UsageRow, _multiplicators: Multiplicators) -> f64 {
        ClockPricing::price(self, &read(), row)
    }

    /// One reading per call, added to every row.
    fn charge(&mut self, usage: &Usage, _multiplicators: Multiplicators) -> Vec<f64> {
        if self.sleep_ms > 0 {
            std::thread::sleep(Duration::from_millis(self.sleep_ms));
        }
        ClockPricing::charge(self, &read(), usage)
    }
}

weft_policy::export_pricing!(ClockPricing);
