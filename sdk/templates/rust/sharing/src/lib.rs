//! A reservation sharing policy, YARN's NoOverCommitPolicy: a reservation
//! enters a reservable queue's plan only if the plan then never holds more
//! than the queue's capacity, at any instant, in any resource (memory,
//! vcores, GPUs). Who holds what does not matter. Start your own sharing
//! policy here; this file is also Weft's bundled `no-overcommit`.
//!
//! The host asks three things (`wit/sharing.wit`):
//!
//! 1. *How far around a reservation do you look?* `window`: 0, the policy
//!    has no memory; the host cuts the timelines to the reservation itself.
//! 2. *May this reservation enter?* `validate`: refused with `over-commit`
//!    at the first instant where plan-committed + candidate exceeds the
//!    capacity in a resource the candidate asks for.
//! 3. *What could the user still get?* `available`: capacity −
//!    plan-committed over [from, to), never below 0.
//!
//! Timelines are step functions, as columns: the SDK's `Walk` goes through
//! several at once, stretch by stretch, and `TimelineBuilder` writes the
//! answer. Every sharing policy keeps the over-commit rule, so the SDK has
//! it: `check_over_commit`.
//!
//! Everything below is plain Rust: `cargo test` runs the unit tests at the
//! end natively. The last line, `export_sharing!`, makes the type the
//! WebAssembly component when built with `--target wasm32-wasip2`.

use weft_policy::sharing::{
    Admission, PlanSettings, Rejection, Timeline, TimelineBuilder, Walk, check_over_commit,
};
use weft_policy::{Params, Policy, SharingPolicy};

/// The policy: it has no settings, the capacity is the queue's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NoOverCommit;

impl Policy for NoOverCommit {
    // The package's name and version, as `weft policy list` shows them.
    const NAME: &'static str = env!("CARGO_PKG_NAME");
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    /// Asks for no key, so the SDK refuses any given, with a message naming
    /// it: a typo in a parameter is reported, not ignored.
    fn configure(_params: &Params) -> Result<Self, String> {
        Ok(NoOverCommit)
    }
}

impl SharingPolicy for NoOverCommit {
    /// The policy looks at the reservation's own span only.
    fn window(&mut self, _settings: &PlanSettings) -> i64 {
        0
    }

    /// The SDK has checked the admission (sorted times, columns of one
    /// length, amounts in range); the rule is the SDK's too.
    fn validate(&mut self, admission: &Admission) -> Result<(), Rejection> {
        check_over_commit(admission)
    }

    /// What the plan could still take at each instant of [from, to):
    /// capacity − plan-committed, at least 0, zero from `to` on.
    fn available(&mut self, admission: &Admission) -> Timeline {
        let capacity = admission.settings().capacity();
        let mut free = TimelineBuilder::new();
        let walk = Walk::new(
            [admission.plan_committed()],
            admission.from_ms(),
            admission.to_ms(),
        );
        for stretch in walk {
            let [committed] = stretch.amounts;
            // `minus` stops at 0: a plan already over capacity offers nothing.
            free.push(stretch.from_ms, capacity.minus(committed));
        }
        free.finish(admission.to_ms())
    }
}

// The component's glue: exports `NoOverCommit` as the `sharing-policy`
// world. It expands to nothing in a native build, so `cargo test` runs
// natively.
weft_policy::export_sharing!(NoOverCommit);

#[cfg(test)]
mod tests {
    use super::*;
    use weft_policy::Resources;
    use weft_policy::sharing::wit;

    const HOUR: i64 = 3_600_000;

    /// A day's decision in a queue of 100 GB, 100 vcores and 8 GPUs, with
    /// the plan already holding `plan` and alice asking for `candidate`.
    fn admission(candidate: Timeline, plan: Timeline) -> Admission {
        let record = wit::Admission {
            settings: wit::PlanSettings {
                queue: "root.dedicated".into(),
                capacity: Resources::new(102_400, 100, 8),
                ..wit::PlanSettings::default()
            },
            user: "alice".into(),
            reservation_id: "reservation_1700000000000_0001".into(),
            from_ms: 0,
            to_ms: 24 * HOUR,
            candidate,
            plan_committed: plan,
            ..wit::Admission::default()
        };
        // What the SDK does to the host's admission before the policy runs.
        Admission::new(record).unwrap()
    }

    /// `amount` over [start, end), zero elsewhere.
    fn block(start: i64, end: i64, amount: Resources) -> Timeline {
        Timeline::from_steps(&[(start, amount), (end, Resources::ZERO)])
    }

    #[test]
    fn a_reservation_that_fits_is_accepted_and_one_that_does_not_is_refused() {
        let mut policy = NoOverCommit;
        // Bob's reservation holds 80 GB over [1 h, 3 h); alice asks over [2 h, 4 h).
        let bob = block(HOUR, 3 * HOUR, Resources::new(81_920, 80, 6));
        let fits = block(2 * HOUR, 4 * HOUR, Resources::new(20_480, 20, 2));
        assert_eq!(policy.validate(&admission(fits, bob.clone())), Ok(()));
        let too_big = block(2 * HOUR, 4 * HOUR, Resources::new(20_481, 0, 0));
        match policy.validate(&admission(too_big, bob)) {
            Err(Rejection::OverCommit(message)) => {
                assert!(message.contains("(over by 1 MB)"), "{message}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn available_is_capacity_minus_plan() {
        let mut policy = NoOverCommit;
        let plan = block(HOUR, 2 * HOUR, Resources::new(40_960, 40, 8));
        let free = policy.available(&admission(Timeline::default(), plan));
        // (from, what is left)
        let points: Vec<_> = (0..free.len())
            .map(|i| (free.at_ms[i], free.amount(i)))
            .collect();
        assert_eq!(
            points,
            [
                (0, Resources::new(102_400, 100, 8)),
                (HOUR, Resources::new(61_440, 60, 0)),
                (2 * HOUR, Resources::new(102_400, 100, 8)),
                (24 * HOUR, Resources::ZERO),
            ]
        );
    }

    #[test]
    fn no_window_and_no_parameters() {
        use weft_policy::PolicyKind;
        use weft_policy::params::configure_with;
        let settings = admission(Timeline::default(), Timeline::default());
        assert_eq!(NoOverCommit.window(settings.settings()), 0);
        let refusal =
            configure_with::<NoOverCommit>(PolicyKind::Sharing, &[("capacity", "50")]).unwrap_err();
        assert!(
            refusal.contains(r#"unknown parameter "capacity""#),
            "{refusal}"
        );
    }
}
