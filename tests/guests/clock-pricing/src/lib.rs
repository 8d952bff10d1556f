//! `clock-pricing`: a pricing policy that reads everything a guest can read
//! of time and chance, and adds it to its charges, so the host's tests can
//! see whether a guest's answers depend on the real world (they must not:
//! two replays of one log must print the same ledger) and which clock it
//! reads (under replay, the virtual one).
//!
//! Each charge is flat pricing, `seconds × max(vcores, memory_mb / 1024,
//! gpus)`, plus the reading chosen by the parameter `read`:
//!
//! - `wall`: the wall clock (std's `SystemTime`), in seconds since the epoch;
//! - `monotonic`: the monotonic clock (wasi:clocks/monotonic-clock `now`), in seconds;
//! - `random`: 8 bytes of wasi:random/random (the `getrandom` crate), as a fraction of 2^64;
//! - `insecure`: 8 bytes of wasi:random/insecure, as a fraction of 2^64;
//! - `hashed`: a hash by std's `RandomState`, whose keys come from
//!   wasi:random/insecure-seed, as a fraction of 2^64;
//! - `all` (the default): the sum of all five.
//!
//! `sleep-ms` (default 0): `charge` first sleeps that long, as a guest that
//! waits would (wasi:clocks/monotonic-clock `subscribe-duration`).
//!
//! The standard quota keys are accepted and ignored; any other key is
//! refused. `multiplicators` always returns 1 and 1. The arithmetic is plain
//! Rust, tested natively with `cargo test -p clock-pricing`; the readings are
//! taken, and the policy exported, in `component.rs` (WebAssembly only).

#[cfg(target_arch = "wasm32")]
mod component;

use weft_policy::pricing::{Usage, UsageRow};
use weft_policy::{Params, Policy};

/// Which reading is added to every charge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Read {
    Wall,
    Monotonic,
    Random,
    Insecure,
    Hashed,
    #[default]
    All,
}

impl Read {
    const NAMES: &[(&str, Read)] = &[
        ("wall", Read::Wall),
        ("monotonic", Read::Monotonic),
        ("random", Read::Random),
        ("insecure", Read::Insecure),
        ("hashed", Read::Hashed),
        ("all", Read::All),
    ];
}

/// The policy's settings, filled in by `configure`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClockPricing {
    pub read: Read,
    /// How long `charge` sleeps before answering.
    pub sleep_ms: u64,
}

/// What one `charge` call read from the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Readings {
    /// wasi:clocks/wall-clock, in ms since the Unix epoch.
    pub wall_ms: u64,
    /// wasi:clocks/monotonic-clock, in ns.
    pub monotonic_ns: u64,
    /// wasi:random/random.
    pub random: u64,
    /// wasi:random/insecure.
    pub insecure: u64,
    /// A hash keyed from wasi:random/insecure-seed.
    pub hashed: u64,
}

impl Policy for ClockPricing {
    const NAME: &'static str = env!("CARGO_PKG_NAME");
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    /// Reads `read` and `sleep-ms`; unknown keys and values are refused.
    fn configure(params: &Params) -> Result<Self, String> {
        Ok(ClockPricing {
            read: params.choice("read", Read::NAMES)?.unwrap_or_default(),
            sleep_ms: params.u64("sleep-ms")?.unwrap_or(0),
        })
    }
}

impl ClockPricing {
    /// What is added to every charge: the chosen reading, as a number of credits.
    pub fn extra(&self, readings: &Readings) -> f64 {
        let wall = readings.wall_ms as f64 / 1e3;
        let monotonic = readings.monotonic_ns as f64 / 1e9;
        let random = fraction(readings.random);
        let insecure = fraction(readings.insecure);
        let hashed = fraction(readings.hashed);
        match self.read {
            Read::Wall => wall,
            Read::Monotonic => monotonic,
            Read::Random => random,
            Read::Insecure => insecure,
            Read::Hashed => hashed,
            Read::All => wall + monotonic + random + insecure + hashed,
        }
    }

    /// Flat pricing at base price 1, plus [`extra`](Self::extra), for one row.
    pub fn price(&self, readings: &Readings, row: UsageRow) -> f64 {
        row.seconds * row.dominant_units(1024.0, 1.0) + self.extra(readings)
    }

    /// [`price`](Self::price) of every row, with the same readings.
    pub fn charge(&self, readings: &Readings, usage: &Usage) -> Vec<f64> {
        usage.rows().map(|row| self.price(readings, row)).collect()
    }
}

/// `bits` as a fraction of 2^64, in [0, 1).
fn fraction(bits: u64) -> f64 {
    bits as f64 / 18_446_744_073_709_551_616.0
}

#[cfg(test)]
mod tests {
    use super::*;

    use weft_policy::PolicyKind;
    use weft_policy::params::configure_with;

    #[test]
    fn parameters_choose_the_reading() {
        // (params, settings or a word the refusal must contain)
        type Pairs = &'static [(&'static str, &'static str)];
        let cases: [(Pairs, Result<ClockPricing, &str>); 6] = [
            (&[], Ok(ClockPricing::default())),
            (
                &[("read", "wall"), ("price.base.gpu", "2")],
                Ok(ClockPricing {
                    read: Read::Wall,
                    sleep_ms: 0,
                }),
            ),
            (
                &[("sleep-ms", "5")],
                Ok(ClockPricing {
                    read: Read::All,
                    sleep_ms: 5,
                }),
            ),
            (&[("read", "sundial")], Err("sundial")),
            (&[("sleep-ms", "-1")], Err("sleep-ms")),
            (&[("discount", "10")], Err("discount")),
        ];
        for (pairs, expected) in cases {
            match (
                configure_with::<ClockPricing>(PolicyKind::Pricing, pairs),
                expected,
            ) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{pairs:?}"),
                (Err(message), Err(word)) => {
                    assert!(message.contains(word), "{pairs:?}: {message:?}")
                }
                (got, want) => panic!("{pairs:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn charges_are_flat_plus_the_reading() {
        let readings = Readings {
            wall_ms: 90_500,
            monotonic_ns: 90_500_000_000,
            random: 1 << 63,
            insecure: 1 << 62,
            hashed: 0,
        };
        let usage = Usage::from_rows(&[(10.0, 2048, 1, 0), (0.0, 1024, 1, 0)]).unwrap();
        // (read, charges)
        let cases = [
            (Read::Wall, vec![20.0 + 90.5, 90.5]),
            (Read::Monotonic, vec![20.0 + 90.5, 90.5]),
            (Read::Random, vec![20.5, 0.5]),
            (Read::Insecure, vec![20.25, 0.25]),
            (Read::Hashed, vec![20.0, 0.0]),
            (Read::All, vec![20.0 + 181.75, 181.75]),
        ];
        for (read, expected) in cases {
            let settings = ClockPricing { read, sleep_ms: 0 };
            assert_eq!(settings.charge(&readings, &usage), expected, "{read:?}");
        }
    }
}
