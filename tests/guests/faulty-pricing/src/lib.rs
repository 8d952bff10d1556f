//! `faulty-pricing`: a pricing policy that misbehaves on purpose, so the
//! host's tests can check that a bad policy costs the cluster nothing: a
//! trap, an endless loop or a runaway allocation must be contained, and a bad
//! answer (NaN, too few charges, a negative charge) must be refused.
//!
//! Parameters:
//!
//! - `fault` (default `none`): what goes wrong in `charge`. `none` charges
//!   like flat pricing, `seconds × max(vcores, memory_mb / 1024, gpus)`.
//!   `trap` panics; `loop` never returns; `alloc` allocates and touches 1 MiB
//!   blocks until memory runs out; `nan` returns NaN charges; `short` returns
//!   one charge fewer than there are containers; `negative` returns −1 for
//!   every container; `refuse` makes `configure` itself fail.
//! - `after` (default 0): how many `charge` calls succeed before the fault
//!   starts, counted since the last successful `configure`. The count lives in
//!   the instance, so a host that replaces a trapped instance starts it at 0.
//!
//! `multiplicators` never misbehaves and always returns 1 and 1. The
//! standard quota keys are accepted and ignored, as the WIT asks of a pricing
//! policy; any other key is refused.
//!
//! The behaviour is plain Rust that also compiles natively, so it is unit
//! tested with `cargo test -p faulty-pricing` (all but `loop` and `alloc`,
//! which would not end). The WebAssembly glue is the `export_pricing!` line.

use weft_policy::pricing::{Market, Multiplicators, Usage, UsageRow};
use weft_policy::{Params, Policy, PricingPolicy};

/// What goes wrong once the fault starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fault {
    /// Nothing: charge like flat pricing.
    #[default]
    None,
    /// Panic, which traps the instance.
    Trap,
    /// Spin forever; only the host's deadline ends the call.
    Loop,
    /// Allocate and touch memory without bound.
    Alloc,
    /// Return NaN for every container.
    Nan,
    /// Return one charge fewer than there are containers.
    Short,
    /// Return −1 for every container.
    Negative,
    /// Refuse the parameters in `configure`.
    Refuse,
}

impl Fault {
    const NAMES: &[(&str, Fault)] = &[
        ("none", Fault::None),
        ("trap", Fault::Trap),
        ("loop", Fault::Loop),
        ("alloc", Fault::Alloc),
        ("nan", Fault::Nan),
        ("short", Fault::Short),
        ("negative", Fault::Negative),
        ("refuse", Fault::Refuse),
    ];
}

/// The message `fault=refuse` makes `configure` return, for tests to match.
pub const REFUSAL: &str = "faulty-pricing refuses its parameters: fault=refuse";

/// The policy: its settings, and the `charge` calls made since `configure`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FaultyPricing {
    pub fault: Fault,
    /// Successful `charge` calls before the fault starts.
    pub after: u64,
    /// `charge` calls since `configure` built this value.
    pub calls: u64,
}

impl Policy for FaultyPricing {
    const NAME: &'static str = env!("CARGO_PKG_NAME");
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    /// Reads `fault` and `after`; bad values and unknown keys are refused
    /// like a real policy would; `fault=refuse` is refused once everything
    /// else has parsed.
    fn configure(params: &Params) -> Result<Self, String> {
        let settings = FaultyPricing {
            fault: params.choice("fault", Fault::NAMES)?.unwrap_or_default(),
            after: params.u64("after")?.unwrap_or(0),
            calls: 0,
        };
        if settings.fault == Fault::Refuse {
            return Err(REFUSAL.into());
        }
        Ok(settings)
    }
}

impl PricingPolicy for FaultyPricing {
    /// The faults are all in `charge`; this stays well-behaved.
    fn multiplicators(&mut self, _market: &Market) -> Multiplicators {
        Multiplicators {
            general: 1.0,
            gpu: 1.0,
        }
    }

    /// A row's flat price, what `charge` gives it while there is no fault.
    fn price(&self, row: UsageRow, _multiplicators: Multiplicators) -> f64 {
        flat_price(row)
    }

    fn charge(&mut self, usage: &Usage, _multiplicators: Multiplicators) -> Vec<f64> {
        // Counted before the call runs, so the fault starts on call `after + 1`.
        let calls_before = self.calls;
        self.calls += 1;
        self.charge_after(calls_before, usage)
    }
}

weft_policy::export_pricing!(FaultyPricing);

impl FaultyPricing {
    /// One `charge` call, `calls_before` calls after the last `configure`.
    pub fn charge_after(&self, calls_before: u64, usage: &Usage) -> Vec<f64> {
        let count = usage.len();
        let fault = if calls_before >= self.after {
            self.fault
        } else {
            Fault::None
        };
        match fault {
            // Refuse never gets this far: configure failed and kept the defaults.
            Fault::None | Fault::Refuse => flat_charges(usage),
            Fault::Trap => panic!("faulty-pricing: trapping on purpose (fault=trap)"),
            Fault::Loop => spin(),
            Fault::Alloc => hoard(),
            Fault::Nan => vec![f64::NAN; count],
            Fault::Short => {
                let mut charges = flat_charges(usage);
                charges.pop();
                charges
            }
            Fault::Negative => vec![-1.0; count],
        }
    }
}

/// Flat pricing at base price 1: `seconds × max(vcores, memory_mb / 1024, gpus)`.
pub fn flat_price(row: UsageRow) -> f64 {
    row.seconds * row.dominant_units(1024.0, 1.0)
}

/// [`flat_price`] of every row.
pub fn flat_charges(usage: &Usage) -> Vec<f64> {
    usage.rows().map(flat_price).collect()
}

/// Never returns. The counter goes through `black_box` so the optimizer
/// cannot prove the loop does nothing; only the host's deadline (epoch or
/// fuel) can end the call.
pub fn spin() -> ! {
    let mut counter = 0u64;
    loop {
        counter = std::hint::black_box(counter.wrapping_add(1));
    }
}

/// Never returns: keeps 1 MiB blocks, each written through, until an
/// allocation fails (which aborts, a trap in WebAssembly) or the host's
/// memory limit stops the instance. Writing every byte makes the memory real
/// instead of reserved-but-untouched pages.
pub fn hoard() -> ! {
    const BLOCK: usize = 1 << 20;
    let mut blocks: Vec<Vec<u8>> = Vec::new();
    loop {
        let block = vec![0xA5u8; BLOCK];
        blocks.push(std::hint::black_box(block));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use weft_policy::PolicyKind;
    use weft_policy::params::configure_with;

    fn usage() -> Usage {
        Usage::from_rows(&[(10.0, 4096, 1, 0), (10.0, 1024, 8, 0), (2.0, 0, 0, 3)]).unwrap()
    }

    /// Parameters as written in a test table.
    type Pairs = &'static [(&'static str, &'static str)];

    #[test]
    fn parameters_choose_the_fault() {
        // (params, settings or the words the refusal must contain)
        let cases: [(Pairs, Result<FaultyPricing, &str>); 10] = [
            (&[], Ok(FaultyPricing::default())),
            (
                &[("fault", "nan"), ("after", "3")],
                Ok(FaultyPricing {
                    fault: Fault::Nan,
                    after: 3,
                    calls: 0,
                }),
            ),
            (
                &[
                    ("price.base.general", "2"),
                    ("minimum.charged.gpu", "x"),
                    ("fault", "trap"),
                ],
                Ok(FaultyPricing {
                    fault: Fault::Trap,
                    ..FaultyPricing::default()
                }),
            ),
            (
                &[("fault", "loop"), ("fault", "alloc")],
                Ok(FaultyPricing {
                    fault: Fault::Alloc,
                    ..FaultyPricing::default()
                }),
            ),
            (&[("fault", "refuse")], Err(REFUSAL)),
            (&[("fault", "refuse"), ("after", "5")], Err(REFUSAL)),
            (&[("fault", "explode")], Err("explode")),
            (&[("after", "-1")], Err("after")),
            (&[("after", "soon")], Err("soon")),
            (&[("discount", "10")], Err("discount")),
        ];
        for (pairs, expected) in cases {
            match (
                configure_with::<FaultyPricing>(PolicyKind::Pricing, pairs),
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
    fn faults_start_after_the_given_calls() {
        let flat = vec![40.0, 80.0, 6.0];
        // (fault, after, calls before this one) -> charges
        let cases = [
            (Fault::None, 0, 0, flat.clone()),
            (Fault::None, 0, 99, flat.clone()),
            (Fault::Negative, 0, 0, vec![-1.0; 3]),
            (Fault::Negative, 2, 1, flat.clone()),
            (Fault::Negative, 2, 2, vec![-1.0; 3]),
            (Fault::Short, 0, 0, vec![40.0, 80.0]),
            (Fault::Trap, 1, 0, flat.clone()),
            (Fault::Loop, 1, 0, flat.clone()),
            (Fault::Alloc, 5, 4, flat.clone()),
        ];
        for (fault, after, calls_before, expected) in cases {
            let settings = FaultyPricing {
                fault,
                after,
                calls: 0,
            };
            assert_eq!(
                settings.charge_after(calls_before, &usage()),
                expected,
                "{fault:?} after {after} at {calls_before}"
            );
        }
    }

    #[test]
    fn nan_charges_every_container_nan() {
        let settings = FaultyPricing {
            fault: Fault::Nan,
            ..FaultyPricing::default()
        };
        let charges = settings.charge_after(0, &usage());
        assert_eq!(charges.len(), 3);
        assert!(charges.iter().all(|c| c.is_nan()));
    }

    #[test]
    fn short_of_nothing_is_nothing() {
        let settings = FaultyPricing {
            fault: Fault::Short,
            ..FaultyPricing::default()
        };
        assert!(settings.charge_after(0, &Usage::default()).is_empty());
    }

    #[test]
    #[should_panic(expected = "fault=trap")]
    fn trap_panics() {
        let settings = FaultyPricing {
            fault: Fault::Trap,
            ..FaultyPricing::default()
        };
        settings.charge_after(0, &usage());
    }

    #[test]
    fn the_fault_starts_after_counted_calls_since_configure() {
        let mut policy = configure_with::<FaultyPricing>(
            PolicyKind::Pricing,
            &[("fault", "negative"), ("after", "2")],
        )
        .unwrap();
        let one = Multiplicators {
            general: 1.0,
            gpu: 1.0,
        };
        let flat = flat_charges(&usage());
        assert_eq!(policy.charge(&usage(), one), flat);
        assert_eq!(policy.charge(&usage(), one), flat);
        assert_eq!(policy.charge(&usage(), one), vec![-1.0; 3]);
        assert_eq!(policy.calls, 3);
        // Each row's charge without a fault is its price.
        let alone: Vec<f64> = usage().rows().map(|row| policy.price(row, one)).collect();
        assert_eq!(alone, flat);
    }
}
