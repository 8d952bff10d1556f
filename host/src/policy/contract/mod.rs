//! `weft policy test`: a policy's documented contract (wit/*.wit) checked as
//! properties on generated inputs, plus example cases with expected answers.
//! The component goes through the same load and checks as in `serve`
//! ([`inspect`], then calls through the typed slots), so a policy that
//! passes here is one the host accepts.

mod cases;
mod generate;
mod rules;

use std::sync::Arc;

use serde::Serialize;

pub use cases::{Case, parse as parse_cases};

use self::cases::{Call, Expected};
use self::generate::{Inputs, amount_at};
use super::bindings::{Admission, PriceMultiplicators, Rejection, Timeline, Usage};
use super::{
    CallError, LoadError, PolicyEngine, PolicyKind, PolicyVersion, PricingSlot, SchedulingSlot,
    SharingSlot, VersionInfo, compile, inspect, prepare_compiled,
};

/// The parameter no policy knows: `configure` must refuse it.
pub const UNKNOWN_PARAMETER: &str = "weft-policy-test.unknown-parameter";

/// How many generated inputs each property gets, and from which seed.
#[derive(Debug, Clone, Copy)]
pub struct TestOptions {
    /// The seed of the generated inputs (`--seed`, 1 by default): the same
    /// seed, the same inputs.
    pub seed: u64,
    /// Generated inputs per property (`--rounds`, 50 by default).
    pub rounds: usize,
}

impl Default for TestOptions {
    fn default() -> Self {
        TestOptions {
            seed: 1,
            rounds: 50,
        }
    }
}

/// One property or case, and how it went.
#[derive(Debug, Clone, Serialize)]
pub struct CheckOutcome {
    /// The property checked, or `case "NAME" (line N)` for an example case.
    pub name: String,
    /// Whether it held.
    pub passed: bool,
    /// What was checked, or why it failed.
    pub detail: String,
}

/// Everything `weft policy test` found.
#[derive(Debug, Clone, Serialize)]
pub struct TestReport {
    /// The version tested, as its load described it.
    pub policy: VersionInfo,
    /// The seed the inputs were generated from, to run them again.
    pub seed: u64,
    /// Every property and case, in the order checked.
    pub checks: Vec<CheckOutcome>,
}

impl TestReport {
    /// Whether every check passed.
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.passed)
    }

    /// How many checks failed.
    pub fn failed(&self) -> usize {
        self.checks.iter().filter(|c| !c.passed).count()
    }

    fn record(&mut self, name: impl Into<String>, outcome: Result<String, String>) {
        let (passed, detail) = match outcome {
            Ok(detail) => (true, detail),
            Err(detail) => (false, detail),
        };
        self.checks.push(CheckOutcome {
            name: name.into(),
            passed,
            detail,
        });
    }
}

/// Loads `bytes` as `serve` would (pricing policies get `pricing_defaults`
/// before `params`) and checks it. A component that does not load is an
/// error; a broken property is a failed check in the report.
pub fn test(
    engine: &PolicyEngine,
    source: &str,
    bytes: &[u8],
    pricing_defaults: &[(String, String)],
    params: &[(String, String)],
    cases: &[Case],
    options: TestOptions,
) -> Result<TestReport, LoadError> {
    let version = inspect(engine, source, bytes, pricing_defaults, params)?;
    let kind = version.info.kind;
    let mut report = TestReport {
        policy: version.info.clone(),
        seed: options.seed,
        checks: Vec::new(),
    };
    // A memory hit: compiled (and hashed) once here for every load below.
    let compiled = compile(engine, bytes)?;
    let load =
        |params: Vec<(String, String)>| prepare_compiled(engine, kind, source, &compiled, params);

    report.record(
        "configure is repeatable",
        (0..2)
            .try_for_each(|_| version.instantiate_fresh())
            .map(|()| "new instances configured again with the same parameters".into())
            .map_err(|e| format!("a new instance failed to configure: {e}")),
    );
    let mut unknown = version.info.params.clone();
    unknown.push((UNKNOWN_PARAMETER.into(), "1".into()));
    report.record(
        "unknown parameters are refused",
        match load(unknown) {
            Err(LoadError::Configure(message)) => Ok(format!("refused: {message}")),
            Err(other) => Err(format!(
                "failed otherwise than by refusing the parameter: {other}"
            )),
            Ok(_) => Err(format!(
                "configure accepted {UNKNOWN_PARAMETER}=1; a policy must refuse keys it does not know"
            )),
        },
    );
    // A second, independent load: equal inputs must get equal answers from it.
    let other = match load(version.info.params.clone()) {
        Ok(other) => other,
        Err(error) => {
            report.record(
                "loads again",
                Err(format!("a second load of the same bytes failed: {error}")),
            );
            return Ok(report);
        }
    };
    let mut inputs = Inputs::new(options.seed);
    match kind {
        PolicyKind::Pricing => {
            let (slot, again) = (pricing_slot(&version), pricing_slot(&other));
            pricing_properties(&mut report, &slot, &again, &mut inputs, options.rounds);
            for case in cases {
                report.record(case_name(case), pricing_case(&slot, case));
            }
        }
        PolicyKind::Scheduling => {
            let (slot, again) = (scheduling_slot(&version), scheduling_slot(&other));
            scheduling_properties(&mut report, &slot, &again, &mut inputs, options.rounds);
            for case in cases {
                report.record(case_name(case), scheduling_case(&slot, case));
            }
        }
        PolicyKind::Sharing => {
            let (slot, again) = (sharing_slot(&version), sharing_slot(&other));
            sharing_properties(&mut report, &slot, &again, &mut inputs, options.rounds);
            for case in cases {
                report.record(case_name(case), sharing_case(&slot, case));
            }
        }
    }
    Ok(report)
}

fn case_name(case: &Case) -> String {
    format!("case {:?} (line {})", case.name, case.line)
}

// Calls go through typed slots, which check every answer exactly as the
// host does; with no earlier version there is no fallback to hide a failure.
fn pricing_slot(version: &Arc<PolicyVersion>) -> PricingSlot {
    let slot = PricingSlot::new(u32::MAX);
    slot.publish(version.clone());
    slot
}

fn scheduling_slot(version: &Arc<PolicyVersion>) -> SchedulingSlot {
    let slot = SchedulingSlot::new(u32::MAX);
    slot.publish(version.clone());
    slot
}

fn sharing_slot(version: &Arc<PolicyVersion>) -> SharingSlot {
    let slot = SharingSlot::new(u32::MAX);
    slot.publish(version.clone());
    slot
}

/// Batch sizes every pricing property sees, beside generated ones.
const BATCH_SIZES: [usize; 8] = [0, 1, 2, 3, 17, 64, 200, 1000];

/// Rows in the batch whose rows are each priced alone too: more than the
/// 50 rows where volume tricks tend to start.
const INDEPENDENCE_ROWS: usize = 120;

fn pricing_properties(
    report: &mut TestReport,
    slot: &PricingSlot,
    again: &PricingSlot,
    inputs: &mut Inputs,
    rounds: usize,
) {
    report.record(
        "multiplicators are finite, at least 0, and equal for equal markets",
        (0..rounds)
            .try_for_each(|_| {
                let market = inputs.market();
                let first = slot.multiplicators(&market).map_err(failed)?;
                let second = slot.multiplicators(&market).map_err(failed)?;
                let other = again.multiplicators(&market).map_err(failed)?;
                if first != second || first != other {
                    return Err(format!(
                        "{:?} gave {first:?}, then {second:?}, and {other:?} on a new instance",
                        market.utilization
                    ));
                }
                Ok(())
            })
            .map(|()| format!("{rounds} markets")),
    );
    let batches: Vec<(Usage, PriceMultiplicators)> = BATCH_SIZES
        .into_iter()
        .chain((0..rounds).map(|i| i % 300))
        .map(|rows| (inputs.usage(rows), inputs.multiplicators()))
        .collect();
    report.record(
        "one finite charge of at least 0 per row",
        batches
            .iter()
            .try_for_each(|(usage, m)| slot.charge(usage, *m).map(drop).map_err(failed))
            .map(|()| format!("{} batches of 0 to 1000 rows", batches.len())),
    );
    report.record(
        "each row is priced from its own row and context alone",
        row_independence(slot, inputs),
    );
    report.record(
        "a quote is finite, at least 0, and what charge asks for its rows",
        quotes(slot, inputs, rounds),
    );
    report.record(
        "equal usage gives equal charges, on this instance and a new one",
        batches
            .iter()
            .try_for_each(|(usage, m)| {
                let first = slot.charge(usage, *m).map_err(failed)?;
                let second = slot.charge(usage, *m).map_err(failed)?;
                let other = again.charge(usage, *m).map_err(failed)?;
                match (0..first.len()).find(|&i| first[i] != second[i] || first[i] != other[i]) {
                    Some(i) => Err(format!(
                        "row {i} of a batch of {} cost {}, then {}, and {} on a new instance",
                        first.len(),
                        first[i],
                        second[i],
                        other[i]
                    )),
                    None => Ok(()),
                }
            })
            .map(|()| format!("{} batches, each priced three times", batches.len())),
    );
}

/// Prices a batch, the same batch reversed, and each row alone: a row's
/// charge must not depend on the rest of its batch (the host groups and
/// splits batches as it likes).
fn row_independence(slot: &PricingSlot, inputs: &mut Inputs) -> Result<String, String> {
    let usage = inputs.usage(INDEPENDENCE_ROWS);
    let multiplicators = inputs.multiplicators();
    let batch = slot.charge(&usage, multiplicators).map_err(failed)?;
    let reversed = slot
        .charge(&reverse(&usage), multiplicators)
        .map_err(failed)?;
    let rows = usage.seconds.len();
    for i in 0..rows {
        let alone = slot
            .charge(&row(&usage, i), multiplicators)
            .map_err(failed)?[0];
        let in_reverse = reversed[rows - 1 - i];
        if !close(batch[i], alone, 1e-9) || !close(in_reverse, alone, 1e-9) {
            return Err(format!(
                "row {i} ({} s, {} MB, {} vcores, {} GPUs, project {}) costs {alone} alone but {} in a batch of {rows} ({} with the batch reversed)",
                usage.seconds[i],
                usage.memory_mb[i],
                usage.vcores[i],
                usage.gpus[i],
                usage.contexts[usage.context[i] as usize].project,
                batch[i],
                in_reverse
            ));
        }
    }
    Ok(format!(
        "{rows} rows of {} contexts priced in a batch, in reverse, and alone (its context alone with it)",
        usage.contexts.len()
    ))
}

/// A quote for one container must be what `charge` asks for its row, and
/// a quote for n containers n times that (within rounding).
fn quotes(slot: &PricingSlot, inputs: &mut Inputs, rounds: usize) -> Result<String, String> {
    for _ in 0..rounds {
        let request = inputs.quote();
        let multiplicators = inputs.multiplicators();
        let quoted = slot.quote(&request, multiplicators).map_err(failed)?;
        let mut usage = Usage::empty();
        usage.contexts.push(request.context.clone());
        usage.push(crate::policy::UsageRow {
            seconds: request.duration_ms as f64 / 1000.0,
            memory_mb: request.memory_mb,
            vcores: request.vcores,
            gpus: request.gpus,
            start_ms: request.start_ms,
            end_ms: request.start_ms.saturating_add(request.duration_ms),
            context: 0,
        });
        let charged = slot.charge(&usage, multiplicators).map_err(failed)?[0];
        let expected = charged * f64::from(request.containers);
        if !close(quoted, expected, 1e-6) {
            return Err(format!(
                "{} containers of {} MB, {} vcores, {} GPUs for {} ms of project {} were quoted {quoted}, but charge asks {charged} each ({expected} in all)",
                request.containers,
                request.memory_mb,
                request.vcores,
                request.gpus,
                request.duration_ms,
                request.context.project
            ));
        }
    }
    Ok(format!("{rounds} quotes, each against charge"))
}

/// Row `i` of `usage` alone, with its context alone.
fn row(usage: &Usage, i: usize) -> Usage {
    let mut alone = Usage::empty();
    alone
        .contexts
        .push(usage.contexts[usage.context[i] as usize].clone());
    alone.push(crate::policy::UsageRow {
        context: 0,
        ..usage.row(i)
    });
    alone
}

/// `usage`'s rows in reverse order, its contexts too.
fn reverse(usage: &Usage) -> Usage {
    let mut reversed = Usage::empty();
    reversed.contexts = usage.contexts.iter().rev().cloned().collect();
    let last = (usage.contexts.len() as u32).saturating_sub(1);
    for i in (0..usage.len()).rev() {
        let row = usage.row(i);
        reversed.push(crate::policy::UsageRow {
            context: last - row.context,
            ..row
        });
    }
    reversed
}

fn scheduling_properties(
    report: &mut TestReport,
    slot: &SchedulingSlot,
    again: &SchedulingSlot,
    inputs: &mut Inputs,
    rounds: usize,
) {
    let snapshots: Vec<_> = (0..rounds).map(|_| inputs.snapshot()).collect();
    report.record(
        "every placement fits the snapshot",
        snapshots
            .iter()
            .try_for_each(|s| slot.schedule(s).map(drop).map_err(failed))
            .map(|()| format!("{rounds} snapshots of up to 40 nodes and 30 apps")),
    );
    let old = slot.active().map(|v| v.wit_version()) == Some(super::compat::VERSION);
    report.record(
        "placements keep partitions, constraints and gangs",
        if old {
            Ok(format!(
                "not asked of a policy built for weft:policy@{}, which sees none of them: the host keeps them for it",
                super::compat::VERSION
            ))
        } else {
            snapshots
            .iter()
            .enumerate()
            .try_for_each(|(i, s)| {
                let placements = slot.schedule(s).map_err(failed)?;
                match rules::broken(s, &placements) {
                    Some(broken) => Err(format!("snapshot {i}: {broken}")),
                    None => Ok(()),
                }
            })
            .map(|()| {
                format!("{rounds} snapshots, some of a labelled partition, with anti-affinity, gangs and preferred nodes")
            })
        },
    );
    report.record(
        "equal snapshots give equal placements, on this instance and a new one",
        snapshots
            .iter()
            .enumerate()
            .try_for_each(|(i, s)| {
                let first = slot.schedule(s).map_err(failed)?;
                let second = slot.schedule(s).map_err(failed)?;
                let other = again.schedule(s).map_err(failed)?;
                if first != second || first != other {
                    return Err(format!(
                        "snapshot {i} was placed as {first:?}, then {second:?}, and {other:?} on a new instance"
                    ));
                }
                Ok(())
            })
            .map(|()| format!("{rounds} snapshots, each scheduled three times")),
    );
    report.record(
        "preemption victims are distinct running containers",
        snapshots
            .iter()
            .try_for_each(|s| {
                let running = inputs.running(s);
                slot.preempt(s, &running).map(drop).map_err(failed)
            })
            .map(|()| format!("{rounds} snapshots with up to 60 running containers")),
    );
}

fn sharing_properties(
    report: &mut TestReport,
    slot: &SharingSlot,
    again: &SharingSlot,
    inputs: &mut Inputs,
    rounds: usize,
) {
    let admissions: Vec<Admission> = (0..rounds).map(|_| inputs.admission()).collect();
    report.record(
        "the window is at least 0 ms",
        admissions
            .iter()
            .try_for_each(|a| slot.window(&a.settings).map(drop).map_err(failed))
            .map(|()| format!("{rounds} plans")),
    );
    report.record(
        "validate does not refuse what available offers (but for average quota)",
        offered_is_accepted(slot, &admissions, inputs),
    );
    report.record(
        "equal admissions get equal answers, on this instance and a new one",
        admissions
            .iter()
            .enumerate()
            .try_for_each(|(i, a)| {
                let available = slot.available(a).map_err(failed)?;
                let candidate = Admission {
                    candidate: block(a.from_ms, a.to_ms, (1024, 1, 0)),
                    ..a.clone()
                };
                let first = slot.validate(&candidate).map_err(failed)?;
                let second = slot.validate(&candidate).map_err(failed)?;
                let other = again.validate(&candidate).map_err(failed)?;
                let other_available = again.available(a).map_err(failed)?;
                if first != second || first != other || available != other_available {
                    return Err(format!(
                        "admission {i} was answered {first:?}, then {second:?}, and {other:?} on a new instance (available equal: {})",
                        available == other_available
                    ));
                }
                Ok(())
            })
            .map(|()| format!("{rounds} admissions, each decided three times")),
    );
}

/// For each admission: asks `available`, takes a block over part of the
/// range at most what it offered throughout, and asks `validate` about it:
/// it may refuse it only for average quota, which depends on how long the
/// block holds and so is no per-instant offer's to promise.
fn offered_is_accepted(
    slot: &SharingSlot,
    admissions: &[Admission],
    inputs: &mut Inputs,
) -> Result<String, String> {
    let mut tried = 0;
    for (i, admission) in admissions.iter().enumerate() {
        let available = slot.available(admission).map_err(failed)?;
        let (from, to) = inputs.span(admission.from_ms, admission.to_ms);
        let offered = least_over(&available, from, to);
        if offered == (0, 0, 0) {
            continue;
        }
        tried += 1;
        let candidate = Admission {
            candidate: block(from, to, offered),
            ..admission.clone()
        };
        let answer = slot.validate(&candidate).map_err(failed)?;
        if let Err(rejection @ (Rejection::OverCommit(_) | Rejection::InstantaneousQuota(_))) =
            answer
        {
            return Err(format!(
                "admission {i}: available offered at least {} MB, {} vcores, {} GPUs over [{from}, {to}) ms, but validate refused exactly that: {}",
                offered.0,
                offered.1,
                offered.2,
                describe(&rejection)
            ));
        }
    }
    Ok(format!(
        "{tried} of {} admissions had room; no block within what was offered was refused for over-commit or instantaneous quota",
        admissions.len()
    ))
}

/// The least amount of `timeline` over `[from, to)`, per dimension.
fn least_over(timeline: &Timeline, from: i64, to: i64) -> (u64, u64, u64) {
    let mut least = amount_at(timeline, from);
    for (i, &at) in timeline.at_ms.iter().enumerate() {
        if at > from && at < to {
            least.0 = least.0.min(timeline.memory_mb[i]);
            least.1 = least.1.min(timeline.vcores[i]);
            least.2 = least.2.min(timeline.gpus[i]);
        }
    }
    least
}

/// `amount` over `[from, to)`, zero elsewhere.
fn block(from: i64, to: i64, amount: (u64, u64, u64)) -> Timeline {
    Timeline {
        at_ms: vec![from, to],
        memory_mb: vec![amount.0, 0],
        vcores: vec![amount.1, 0],
        gpus: vec![amount.2, 0],
    }
}

fn describe(rejection: &Rejection) -> String {
    match rejection {
        Rejection::OverCommit(m) => format!("over-commit: {m}"),
        Rejection::InstantaneousQuota(m) => format!("instantaneous quota: {m}"),
        Rejection::AverageQuota(m) => format!("average quota: {m}"),
    }
}

fn decision(answer: &Result<(), Rejection>) -> &'static str {
    match answer {
        Ok(()) => "accept",
        Err(Rejection::OverCommit(_)) => "over-commit",
        Err(Rejection::InstantaneousQuota(_)) => "instantaneous-quota",
        Err(Rejection::AverageQuota(_)) => "average-quota",
    }
}

fn failed(error: CallError) -> String {
    format!("a call failed: {error}")
}

/// Equal within `tolerance`, relative to the larger (or absolute below 1).
fn close(a: f64, b: f64, tolerance: f64) -> bool {
    a == b || (a - b).abs() <= tolerance * a.abs().max(b.abs()).max(1.0)
}

fn wrong_kind(case: &Case, kind: PolicyKind) -> Result<String, String> {
    Err(format!(
        "the case calls a {} policy, but this is a {kind} policy",
        case.call.kind()
    ))
}

fn pricing_case(slot: &PricingSlot, case: &Case) -> Result<String, String> {
    match (&case.call, &case.expected) {
        (Call::Multiplicators(market), Expected::Multiplicators(expected)) => {
            let got = slot.multiplicators(market).map_err(failed)?;
            if close(got.general, expected.general, case.tolerance)
                && close(got.gpu, expected.gpu, case.tolerance)
            {
                Ok(format!("{got:?}"))
            } else {
                Err(format!("expected {expected:?}, got {got:?}"))
            }
        }
        (
            Call::Charge {
                usage,
                multiplicators,
            },
            Expected::Charges(expected),
        ) => {
            let got = slot.charge(usage, *multiplicators).map_err(failed)?;
            let same = got.len() == expected.len()
                && got
                    .iter()
                    .zip(expected)
                    .all(|(g, e)| close(*g, *e, case.tolerance));
            if same {
                Ok(format!("{got:?}"))
            } else {
                Err(format!("expected {expected:?}, got {got:?}"))
            }
        }
        _ => wrong_kind(case, PolicyKind::Pricing),
    }
}

fn scheduling_case(slot: &SchedulingSlot, case: &Case) -> Result<String, String> {
    match (&case.call, &case.expected) {
        (Call::Schedule(snapshot), Expected::Placements(expected)) => {
            let got = slot.schedule(snapshot).map_err(failed)?;
            if got == *expected {
                Ok(format!("{} placements", got.ask.len()))
            } else {
                Err(format!("expected {expected:?}, got {got:?}"))
            }
        }
        (Call::Preempt { snapshot, running }, Expected::Victims(expected)) => {
            let got = slot.preempt(snapshot, running).map_err(failed)?;
            if got == *expected {
                Ok(format!("victims {got:?}"))
            } else {
                Err(format!("expected victims {expected:?}, got {got:?}"))
            }
        }
        _ => wrong_kind(case, PolicyKind::Scheduling),
    }
}

fn sharing_case(slot: &SharingSlot, case: &Case) -> Result<String, String> {
    match (&case.call, &case.expected) {
        (Call::Window(settings), Expected::Window(expected)) => {
            let got = slot.window(settings).map_err(failed)?;
            if got == *expected {
                Ok(format!("{got} ms"))
            } else {
                Err(format!("expected {expected} ms, got {got} ms"))
            }
        }
        (Call::Validate(admission), Expected::Decision(expected)) => {
            let got = slot.validate(admission).map_err(failed)?;
            if decision(&got) == expected {
                Ok(decision(&got).to_string())
            } else {
                Err(format!(
                    "expected {expected}, got {}",
                    match &got {
                        Ok(()) => "accept".to_string(),
                        Err(rejection) => describe(rejection),
                    }
                ))
            }
        }
        (Call::Available(admission), Expected::Timeline(expected)) => {
            let got = slot.available(admission).map_err(failed)?;
            if got == *expected {
                Ok(format!("{} steps", got.at_ms.len()))
            } else {
                Err(format!("expected {expected:?}, got {got:?}"))
            }
        }
        _ => wrong_kind(case, PolicyKind::Sharing),
    }
}
