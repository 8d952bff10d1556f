//! The runtime behind the export macros, not for direct use: it keeps the
//! configured policy value, turns each WIT call into a trait call on it,
//! checks the inputs into views, and installs the panic hook before the
//! first call.
//!
//! A malformed input (see [`crate::Malformed`]) or a call before `configure`
//! panics with a message naming the policy and the call; in WebAssembly that
//! is a trap, and the panic hook has written the message to the host's log.

use std::sync::{Mutex, PoisonError};

use crate::malformed::Malformed;
use crate::pricing::{self, PricingPolicy, Usage};
use crate::scheduling::{self, Containers, SchedulingPolicy, Snapshot};
use crate::sharing::{self, Admission, PlanSettings, SharingPolicy};
use crate::types::{PolicyInfo, PolicyKind};
use crate::{Policy, panic_hook, params};

/// Where the export glue keeps the policy value `configure` built.
#[derive(Debug)]
pub struct Slot<P>(Mutex<Option<P>>);

impl<P: Policy> Slot<P> {
    /// An empty slot: nothing configured yet.
    pub const fn new() -> Self {
        Slot(Mutex::new(None))
    }

    /// Keeps `policy` for the calls to come, replacing the one before.
    fn set(&self, policy: P) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(policy);
    }

    /// Runs `call` on the configured policy.
    fn with<R>(&self, call: &str, f: impl FnOnce(&mut P) -> R) -> R {
        let mut slot = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match slot.as_mut() {
            Some(policy) => f(policy),
            None => panic!(
                "{}: {call} was called before configure; the host configures every instance first",
                P::NAME
            ),
        }
    }
}

impl<P: Policy> Default for Slot<P> {
    fn default() -> Self {
        Slot::new()
    }
}

/// The input if it is well formed; else a panic (a trap) saying why.
fn checked<P: Policy, T>(call: &str, input: Result<T, Malformed>) -> T {
    match input {
        Ok(input) => input,
        Err(malformed) => panic!("{}: {call} refused a malformed input: {malformed}", P::NAME),
    }
}

/// `describe`: the policy's name, version and kind.
pub fn describe<P: Policy>(kind: PolicyKind) -> PolicyInfo {
    panic_hook::install();
    PolicyInfo {
        name: P::NAME.into(),
        version: P::VERSION.into(),
        kind,
    }
}

/// `configure`: builds the policy from `params` and keeps it; on refusal
/// the slot keeps what it had.
pub fn configure<P: Policy>(
    slot: &Slot<P>,
    kind: PolicyKind,
    params: Vec<(String, String)>,
) -> Result<(), String> {
    panic_hook::install();
    slot.set(params::configure::<P>(kind, params)?);
    Ok(())
}

/// `multiplicators`, for a pricing policy.
pub fn multiplicators<P: PricingPolicy>(
    slot: &Slot<P>,
    market: pricing::Market,
) -> pricing::Multiplicators {
    panic_hook::install();
    let market = checked::<P, _>("multiplicators", pricing::check_market(market));
    slot.with("multiplicators", |policy| policy.multiplicators(&market))
}

/// `quote`, for a pricing policy.
pub fn quote<P: PricingPolicy>(
    slot: &Slot<P>,
    request: pricing::QuoteRequest,
    multiplicators: pricing::Multiplicators,
) -> f64 {
    panic_hook::install();
    let request = checked::<P, _>("quote", pricing::check_quote(request));
    let multiplicators = checked::<P, _>("quote", pricing::check_multiplicators(multiplicators));
    slot.with("quote", |policy| policy.quote(&request, multiplicators))
}

/// `charge`, for a pricing policy.
pub fn charge<P: PricingPolicy>(
    slot: &Slot<P>,
    usage: pricing::wit::Usage,
    multiplicators: pricing::Multiplicators,
) -> Vec<f64> {
    panic_hook::install();
    let usage = checked::<P, _>("charge", Usage::new(usage));
    let multiplicators = checked::<P, _>("charge", pricing::check_multiplicators(multiplicators));
    slot.with("charge", |policy| policy.charge(&usage, multiplicators))
}

/// `schedule`, for a scheduling policy.
pub fn schedule<P: SchedulingPolicy>(
    slot: &Slot<P>,
    snapshot: scheduling::wit::Snapshot,
) -> scheduling::Placements {
    panic_hook::install();
    let snapshot = checked::<P, _>("schedule", Snapshot::new(snapshot));
    slot.with("schedule", |policy| policy.schedule(&snapshot))
}

/// `preempt`, for a scheduling policy.
pub fn preempt<P: SchedulingPolicy>(
    slot: &Slot<P>,
    snapshot: scheduling::wit::Snapshot,
    running: scheduling::wit::Containers,
) -> Vec<u32> {
    panic_hook::install();
    let snapshot = checked::<P, _>("preempt", Snapshot::new(snapshot));
    let running = checked::<P, _>("preempt", Containers::new(running, &snapshot));
    slot.with("preempt", |policy| policy.preempt(&snapshot, &running))
}

/// `window`, for a sharing policy.
pub fn window<P: SharingPolicy>(slot: &Slot<P>, settings: sharing::wit::PlanSettings) -> i64 {
    panic_hook::install();
    let settings = checked::<P, _>("window", PlanSettings::new(settings));
    slot.with("window", |policy| policy.window(&settings))
}

/// `validate`, for a sharing policy.
pub fn validate<P: SharingPolicy>(
    slot: &Slot<P>,
    admission: sharing::wit::Admission,
) -> Result<(), sharing::Rejection> {
    panic_hook::install();
    let admission = checked::<P, _>("validate", Admission::new(admission));
    slot.with("validate", |policy| policy.validate(&admission))
}

/// `available`, for a sharing policy.
pub fn available<P: SharingPolicy>(
    slot: &Slot<P>,
    admission: sharing::wit::Admission,
) -> sharing::Timeline {
    panic_hook::install();
    let admission = checked::<P, _>("available", Admission::new(admission));
    slot.with("available", |policy| policy.available(&admission))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Params;
    use crate::pricing::{Market, Multiplicators, UsageRow, Utilization};
    use std::panic::{AssertUnwindSafe, catch_unwind};

    /// Charges `rate × seconds` per row; counts its `charge` calls.
    struct Rated {
        rate: f64,
        calls: u64,
    }

    impl Policy for Rated {
        const NAME: &'static str = "rated";
        const VERSION: &'static str = "1.2.3";

        fn configure(params: &Params) -> Result<Self, String> {
            Ok(Rated {
                rate: params.non_negative_f64("rate")?.unwrap_or(1.0),
                calls: 0,
            })
        }
    }

    impl PricingPolicy for Rated {
        fn multiplicators(&mut self, market: &Market) -> Multiplicators {
            Multiplicators {
                general: 1.0 + market.utilization.memory,
                gpu: 1.0,
            }
        }

        fn price(&self, row: UsageRow, _: Multiplicators) -> f64 {
            self.rate * row.seconds
        }

        fn charge(&mut self, usage: &Usage, multiplicators: Multiplicators) -> Vec<f64> {
            self.calls += 1;
            usage
                .rows()
                .map(|row| self.price(row, multiplicators))
                .collect()
        }
    }

    fn pairs(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn usage(seconds: &[f64]) -> pricing::wit::Usage {
        let rows: Vec<_> = seconds.iter().map(|&s| (s, 0, 0, 0)).collect();
        (*Usage::from_rows(&rows).unwrap()).clone()
    }

    const ONE: Multiplicators = Multiplicators {
        general: 1.0,
        gpu: 1.0,
    };

    /// The panic message of `f`, which must panic.
    fn panic_message(f: impl FnOnce()) -> String {
        let payload = catch_unwind(AssertUnwindSafe(f)).expect_err("it panics");
        payload
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default()
    }

    #[test]
    fn describe_names_the_policy() {
        let info = describe::<Rated>(PolicyKind::Pricing);
        assert_eq!(info.name, "rated");
        assert_eq!(info.version, "1.2.3");
        assert_eq!(info.kind, PolicyKind::Pricing);
    }

    #[test]
    fn configure_keeps_the_policy_and_a_refusal_keeps_the_last_one() {
        let slot = Slot::<Rated>::new();
        assert_eq!(
            configure(&slot, PolicyKind::Pricing, pairs(&[("rate", "2")])),
            Ok(())
        );
        assert_eq!(charge(&slot, usage(&[1.5, 3.0]), ONE), [3.0, 6.0]);
        // Refused: a bad value, then an unknown key; the rate stays 2.
        let bad = configure(&slot, PolicyKind::Pricing, pairs(&[("rate", "-1")]));
        assert_eq!(
            bad,
            Err(r#"rated: rate must be a number at least 0, not "-1""#.into())
        );
        let unknown = configure(&slot, PolicyKind::Pricing, pairs(&[("discount", "5")]));
        assert_eq!(
            unknown,
            Err(r#"unknown parameter "discount" (given discount=5); rated takes rate"#.into())
        );
        assert_eq!(charge(&slot, usage(&[1.0]), ONE), [2.0]);
        // The standard pricing keys are accepted unread.
        let standard = pairs(&[("price.base.gpu", "3"), ("rate", "4")]);
        assert_eq!(configure(&slot, PolicyKind::Pricing, standard), Ok(()));
        assert_eq!(charge(&slot, usage(&[1.0]), ONE), [4.0]);
        // Configuring again starts a new value: the call count restarts.
        slot.with("test", |policy| assert_eq!(policy.calls, 1));
        let market = Market {
            utilization: Utilization {
                memory: 0.5,
                vcores: 0.0,
                gpus: 0.0,
            },
            ..Market::default()
        };
        assert_eq!(multiplicators(&slot, market).general, 1.5);
    }

    #[test]
    fn calls_before_configure_and_malformed_inputs_trap_with_a_message() {
        let slot = Slot::<Rated>::new();
        let early = panic_message(|| {
            charge(&slot, usage(&[1.0]), ONE);
        });
        assert_eq!(
            early,
            "rated: charge was called before configure; the host configures every instance first"
        );
        configure(&slot, PolicyKind::Pricing, Vec::new()).unwrap();
        let ragged = panic_message(|| {
            let mut bad = usage(&[1.0, 2.0]);
            bad.gpus.pop();
            charge(&slot, bad, ONE);
        });
        assert_eq!(
            ragged,
            "rated: charge refused a malformed input: usage: its columns differ in length \
             (2 seconds, 2 memory-mb, 2 vcores, 1 gpus, 2 start-ms, 2 end-ms, 2 context)"
        );
        let nan = panic_message(|| {
            charge(
                &slot,
                usage(&[1.0]),
                Multiplicators {
                    general: f64::NAN,
                    gpu: 1.0,
                },
            );
        });
        assert_eq!(
            nan,
            "rated: charge refused a malformed input: multiplicators: general is NaN; \
             it must be finite and at least 0"
        );
    }
}
