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
//! taken in `component.rs`.

#[cfg(target_arch = "wasm32")]
mod component;

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

/// The standard quota parameters the host always passes: accepted, unused.
const STANDARD_KEYS: &[&str] = &[
    "price.base.general",
    "price.base.gpu",
    "multiplicator.threshold.general",
    "multiplicator.threshold.gpu",
    "multiplicator.increment.general",
    "multiplicator.increment.gpu",
    "minimum.charged.mb",
    "minimum.charged.gpu",
];

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

/// Usage to charge, as columns like the WIT record (entry i is container i).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Usage {
    pub seconds: Vec<f64>,
    pub memory_mb: Vec<u64>,
    pub vcores: Vec<u64>,
    pub gpus: Vec<u64>,
}

impl ClockPricing {
    /// Builds the settings from `key=value` parameters; unknown keys and
    /// values are refused with a message naming them.
    pub fn from_params(params: &[(String, String)]) -> Result<Self, String> {
        let mut settings = ClockPricing::default();
        for (key, value) in params {
            match key.as_str() {
                "read" => {
                    settings.read = Read::NAMES
                        .iter()
                        .find(|(name, _)| *name == value.trim())
                        .map(|&(_, read)| read)
                        .ok_or_else(|| {
                            format!("clock-pricing: nothing to read called {value:?}")
                        })?;
                }
                "sleep-ms" => {
                    settings.sleep_ms = value.trim().parse().map_err(|_| {
                        format!("clock-pricing: sleep-ms must be milliseconds, not {value:?}")
                    })?;
                }
                standard if STANDARD_KEYS.contains(&standard) => {}
                _ => {
                    return Err(format!(
                        "clock-pricing has no parameter {key:?} (given {key}={value})"
                    ));
                }
            }
        }
        Ok(settings)
    }

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

    /// Flat pricing at base price 1, plus [`extra`](Self::extra), per container.
    pub fn charge(&self, readings: &Readings, usage: &Usage) -> Vec<f64> {
        let extra = self.extra(readings);
        usage
            .seconds
            .iter()
            .zip(&usage.memory_mb)
            .zip(&usage.vcores)
            .zip(&usage.gpus)
            .map(|(((&seconds, &memory_mb), &vcores), &gpus)| {
                let units = (vcores as f64)
                    .max(memory_mb as f64 / 1024.0)
                    .max(gpus as f64);
                seconds * units + extra
            })
            .collect()
    }
}

/// `bits` as a fraction of 2^64, in [0, 1).
fn fraction(bits: u64) -> f64 {
    bits as f64 / 18_446_744_073_709_551_616.0
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
            match (ClockPricing::from_params(&params(pairs)), expected) {
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
        let usage = Usage {
            seconds: vec![10.0, 0.0],
            memory_mb: vec![2048, 1024],
            vcores: vec![1, 1],
            gpus: vec![0, 0],
        };
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
