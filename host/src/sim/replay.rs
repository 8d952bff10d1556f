//! `weft replay`: the what-if-billing tool. A container-event log goes through
//! the real quota service on a virtual clock with the chosen pricing policy,
//! and the ledger comes out as JSON.
//!
//! Timing: QUOTA_COMPUTE fires every scheduling period and the multiplicator
//! step every multiplicator interval of virtual time (multiples of each,
//! from 0). Events at time t are applied and charged before the timers due at
//! t; at equal times the multiplicator step runs before QUOTA_COMPUTE. After
//! the last event a final QUOTA_COMPUTE charges running containers up to it.
//!
//! While no container runs the timers are not fired one by one: replay jumps
//! to the next event, firing each timer due in between once (see
//! `Timers::skip_idle`), so idle stretches cost nothing — a log with epoch
//! timestamps starts at t ≈ 1.7e12 ms. While containers run every firing is
//! needed, so a log needing more than [`MAX_TIMER_FIRINGS`] is refused before
//! anything is charged. Every value is checked against `crate::limits`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::clock::{Clock, VirtualClock};
use crate::cluster::Resources;
use crate::limits::{self, MAX_GPUS, MAX_MEMORY_MB, MAX_TIME_MS, MAX_VCORES, OutOfBounds};
use crate::policy::Utilization;
use crate::quota::{Pricing, ProjectQuota, QuotaError, QuotaService};

/// One line of the log.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ReplayLine {
    /// Milliseconds of virtual time.
    pub t: u64,
    #[serde(flatten)]
    pub event: ReplayEvent,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "event", rename_all = "lowercase")]
pub enum ReplayEvent {
    Start {
        container: String,
        app: String,
        project: String,
        user: String,
        memory_mb: u64,
        vcores: u32,
        #[serde(default)]
        gpus: u32,
    },
    Update {
        container: String,
        memory_mb: u64,
        vcores: u32,
        #[serde(default)]
        gpus: u32,
    },
    Finish {
        container: String,
    },
    Utilization {
        memory: f64,
        vcores: f64,
        #[serde(default)]
        gpus: f64,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("line {line}: {reason}")]
    Line { line: usize, reason: String },
    #[error("at t={t} ms: {source}")]
    Quota { t: u64, source: QuotaError },
    #[error(
        "containers run for {busy_ms} ms of the log's time, which takes {needed} timer firings \
         (QUOTA_COMPUTE every {compute_every_ms} ms, the multiplicator step every \
         {multiplicator_every_ms} ms); replay allows at most {MAX_TIMER_FIRINGS}: set longer \
         periods (--set yarn.resourcemanager.quota.scheduling.period=MS and \
         --set yarn.resourcemanager.quota.multiplicator.interval=MS) or replay a shorter log"
    )]
    TooManyFirings {
        needed: u64,
        busy_ms: u64,
        compute_every_ms: u64,
        multiplicator_every_ms: u64,
    },
    #[error(
        "the log's containers would be charged up to {rows} rows (each QUOTA_COMPUTE charges \
         every running container, every {compute_every_ms} ms); replay allows at most \
         {MAX_CHARGED_ROWS}: set a longer yarn.resourcemanager.quota.scheduling.period or \
         replay a shorter log"
    )]
    TooManyRows { rows: u64, compute_every_ms: u64 },
}

/// The most rows (a running container at a QUOTA_COMPUTE; containers of
/// one project, user and size share theirs, so this counts high) one replay
/// may charge: its cost grows with rows, not only firings. A million rows
/// (1,000 containers × 1,000 firings) took 21 s in a dev build on a busy
/// 2-core machine, so the maximum is minutes.
pub const MAX_CHARGED_ROWS: u64 = 10_000_000;

/// The most timer firings (QUOTA_COMPUTE and multiplicator steps while
/// containers run) one replay may need: a bound on its running time. Each
/// QUOTA_COMPUTE while containers run prices what is owed in one policy call
/// and writes the ledger. Measured with one container and both timers every
/// second (`builtin:hops-pricing`, dev build, a busy 2-core machine): a
/// million firings take 39 s, 56 s with variable pricing on (a policy call
/// per multiplicator step too), so the maximum is some 7 to 9 minutes.
pub const MAX_TIMER_FIRINGS: u64 = 10_000_000;

/// What replay prints.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ReplayReport {
    pub projects: BTreeMap<String, ProjectQuota>,
    pub daily: Vec<DailyRow>,
    pub multiplicators: MultiplicatorsReport,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DailyRow {
    pub project: String,
    pub user: String,
    pub day: String,
    pub credits: f64,
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct MultiplicatorsReport {
    pub general: f64,
    pub gpu: f64,
}

/// Parses the whole log first, so a malformed line is refused before
/// anything is charged.
pub fn parse(text: &str) -> Result<Vec<ReplayLine>, ReplayError> {
    let mut lines = Vec::new();
    let mut last_t = 0;
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let parsed: ReplayLine = serde_json::from_str(raw).map_err(|e| ReplayError::Line {
            line,
            reason: format!("not a valid event: {e}"),
        })?;
        check_bounds(&parsed).map_err(|e| ReplayError::Line {
            line,
            reason: e.to_string(),
        })?;
        if parsed.t < last_t {
            return Err(ReplayError::Line {
                line,
                reason: format!(
                    "t={} comes before the previous line's t={last_t}; lines must be ordered by t",
                    parsed.t
                ),
            });
        }
        if let ReplayEvent::Utilization {
            memory,
            vcores,
            gpus,
        } = parsed.event
            && [memory, vcores, gpus]
                .iter()
                .any(|u| !u.is_finite() || *u < 0.0)
        {
            return Err(ReplayError::Line {
                line,
                reason: "utilization must be finite and at least 0".into(),
            });
        }
        last_t = parsed.t;
        lines.push((line, parsed));
    }
    check_lifecycles(&lines)?;
    Ok(lines.into_iter().map(|(_, parsed)| parsed).collect())
}

/// The line's time, names and resources are within `crate::limits`.
fn check_bounds(parsed: &ReplayLine) -> Result<(), OutOfBounds> {
    limits::within("t", parsed.t, 0, MAX_TIME_MS)?;
    let resources = |memory_mb: u64, vcores: u32, gpus: u32| {
        limits::within("memory_mb", memory_mb, 0, MAX_MEMORY_MB)?;
        limits::within("vcores", vcores, 0, MAX_VCORES)?;
        limits::within("gpus", gpus, 0, MAX_GPUS).map(|_| ())
    };
    match &parsed.event {
        ReplayEvent::Start {
            container,
            app,
            project,
            user,
            memory_mb,
            vcores,
            gpus,
        } => {
            limits::name("container", container)?;
            limits::name("app", app)?;
            limits::name("project", project)?;
            limits::name("user", user)?;
            resources(*memory_mb, *vcores, *gpus)
        }
        ReplayEvent::Update {
            container,
            memory_mb,
            vcores,
            gpus,
        } => {
            limits::name("container", container)?;
            resources(*memory_mb, *vcores, *gpus)
        }
        ReplayEvent::Finish { container } => limits::name("container", container),
        ReplayEvent::Utilization { .. } => Ok(()),
    }
}

/// Every update and finish names a started, unfinished container, and no
/// container starts twice.
fn check_lifecycles(lines: &[(usize, ReplayLine)]) -> Result<(), ReplayError> {
    let mut running = std::collections::HashSet::new();
    let mut finished = std::collections::HashSet::new();
    for (line, parsed) in lines {
        let problem = match &parsed.event {
            ReplayEvent::Start { container, .. }
                if running.contains(container) || finished.contains(container) =>
            {
                Some(format!("container {container:?} starts a second time"))
            }
            ReplayEvent::Start { container, .. } => {
                running.insert(container.clone());
                None
            }
            ReplayEvent::Update { container, .. } if !running.contains(container) => Some(format!(
                "update of container {container:?}, which is not running"
            )),
            ReplayEvent::Finish { container } if !running.remove(container) => Some(format!(
                "finish of container {container:?}, which is not running"
            )),
            ReplayEvent::Finish { container } => {
                finished.insert(container.clone());
                None
            }
            _ => None,
        };
        if let Some(reason) = problem {
            return Err(ReplayError::Line {
                line: *line,
                reason,
            });
        }
    }
    Ok(())
}

/// Runs `lines` through `quota`, priced by `pricing`, on `clock` (at 0, and
/// shared with the pricing policy, which reads it).
pub fn run(
    lines: &[ReplayLine],
    quota: &mut QuotaService,
    pricing: &dyn Pricing,
    clock: VirtualClock,
) -> Result<ReplayReport, ReplayError> {
    replay(lines, quota, pricing, clock, true)
}

/// [`run`]; `jump_idle` false steps through every timer, as the tests'
/// reference for what jumping must give.
fn replay(
    lines: &[ReplayLine],
    quota: &mut QuotaService,
    pricing: &dyn Pricing,
    clock: VirtualClock,
    jump_idle: bool,
) -> Result<ReplayReport, ReplayError> {
    let settings = *quota.settings();
    let mut timers = Timers::new(
        settings.scheduling_period_ms,
        settings.multiplicator_interval_ms,
    );
    let (needed, busy_ms) = timers.firings_while_busy(lines);
    let rows = timers.rows_while_busy(lines);
    if rows > MAX_CHARGED_ROWS {
        return Err(ReplayError::TooManyRows {
            rows,
            compute_every_ms: timers.compute_every,
        });
    }
    if needed > MAX_TIMER_FIRINGS {
        return Err(ReplayError::TooManyFirings {
            needed,
            busy_ms,
            compute_every_ms: timers.compute_every,
            multiplicator_every_ms: timers.multiplicator_every,
        });
    }
    // Containers the log has started and not finished.
    let mut running: usize = 0;
    let mut index = 0;
    while index < lines.len() {
        let t = lines[index].t;
        if jump_idle && running == 0 && !quota.has_owed() {
            timers.skip_idle(t, quota, pricing)?;
        }
        timers.fire_before(t, quota, pricing, &clock)?;
        clock.advance_to(t);
        while index < lines.len() && lines[index].t == t {
            let event = &lines[index].event;
            apply(event, t, quota, &mut timers)
                .map_err(|source| ReplayError::Quota { t, source })?;
            running = running_after(running, event);
            index += 1;
        }
        quota
            .flush(pricing)
            .map_err(|source| ReplayError::Quota { t, source })?;
    }
    let end = clock.now_ms();
    // `end` is a checked time (at most MAX_TIME_MS), so + 1 cannot overflow.
    if jump_idle && running == 0 && !quota.has_owed() {
        timers.skip_idle(end + 1, quota, pricing)?;
    }
    timers.fire_before(end + 1, quota, pricing, &clock)?;
    quota.compute(end);
    quota
        .flush(pricing)
        .map_err(|source| ReplayError::Quota { t: end, source })?;
    Ok(report(quota))
}

/// How many containers run after `event`, if `running` did before it.
/// Parsing checked every finish follows its start, so this never goes
/// below 0; saturating keeps an unchecked log from panicking all the same.
fn running_after(running: usize, event: &ReplayEvent) -> usize {
    match event {
        ReplayEvent::Start { .. } => running.saturating_add(1),
        ReplayEvent::Finish { .. } => running.saturating_sub(1),
        _ => running,
    }
}

/// The two timers, each on the multiples of its period from 0.
struct Timers {
    compute_every: u64,
    multiplicator_every: u64,
    next_compute: u64,
    next_multiplicator: u64,
    utilization: Utilization,
}

impl Timers {
    fn new(compute_every: u64, multiplicator_every: u64) -> Timers {
        Timers {
            compute_every: compute_every.max(1),
            multiplicator_every: multiplicator_every.max(1),
            next_compute: 0,
            next_multiplicator: 0,
            utilization: Utilization {
                memory: 0.0,
                vcores: 0.0,
                gpus: 0.0,
            },
        }
    }

    /// Fires, in time order, every timer due before `t`.
    fn fire_before(
        &mut self,
        t: u64,
        quota: &mut QuotaService,
        pricing: &dyn Pricing,
        clock: &VirtualClock,
    ) -> Result<(), ReplayError> {
        loop {
            let due = self.next_multiplicator.min(self.next_compute);
            if due >= t {
                return Ok(());
            }
            clock.advance_to(due);
            let at = |source| ReplayError::Quota { t: due, source };
            // Saturating: a period near u64::MAX (the settings bound it to a
            // day, but this is a library) leaves the timer at the end of time.
            if self.next_multiplicator == due {
                quota
                    .update_multiplicators(pricing, self.utilization)
                    .map_err(at)?;
                self.next_multiplicator = due.saturating_add(self.multiplicator_every);
            } else {
                quota.compute(due);
                quota.flush(pricing).map_err(at)?;
                self.next_compute = due.saturating_add(self.compute_every);
            }
        }
    }

    /// Stands for every timer due before `t` while no container runs and
    /// nothing is owed, leaving each timer at its first time at or after
    /// `t`, on phase, with the quota service as stepping would leave it:
    ///
    /// - QUOTA_COMPUTE owes nothing with nothing running; all it changes is
    ///   when it last ran, so it runs once, at the last time due before `t`.
    /// - The multiplicator step is given one utilization throughout (only a
    ///   log line changes it), and `multiplicators` depends on its
    ///   utilization alone (docs/policy-authors.md), so one step stands for
    ///   them all. It runs at the first time due, so a failing policy fails
    ///   at the time stepping would report.
    fn skip_idle(
        &mut self,
        t: u64,
        quota: &mut QuotaService,
        pricing: &dyn Pricing,
    ) -> Result<(), ReplayError> {
        if self.next_multiplicator < t {
            let due = self.next_multiplicator;
            quota
                .update_multiplicators(pricing, self.utilization)
                .map_err(|source| ReplayError::Quota { t: due, source })?;
            self.next_multiplicator = first_at_or_after(t, self.multiplicator_every);
        }
        if self.next_compute < t {
            // t > 0 here, so its first multiple at or after is at least one
            // period: no underflow.
            let last = first_at_or_after(t, self.compute_every) - self.compute_every;
            quota.compute(last);
            self.next_compute = last.saturating_add(self.compute_every);
        }
        Ok(())
    }

    /// How many timer firings `lines` need while containers run (the
    /// others are skipped), and for how many ms containers run.
    fn firings_while_busy(&self, lines: &[ReplayLine]) -> (u64, u64) {
        let (mut firings, mut busy_ms, mut running) = (0u64, 0u64, 0usize);
        for (index, line) in lines.iter().enumerate() {
            running = running_after(running, &line.event);
            let next = lines.get(index + 1).map(|l| l.t);
            if running == 0 || next == Some(line.t) {
                continue;
            }
            // The timers due in [t, until) see these containers; after the
            // last line, those due at its time. Saturating: sums of checked
            // times cannot come near u64::MAX, and a count that did would
            // be refused anyway.
            let until = next.unwrap_or(line.t.saturating_add(1));
            busy_ms = busy_ms.saturating_add(until - line.t);
            firings = firings
                .saturating_add(multiples_in(line.t, until, self.compute_every))
                .saturating_add(multiples_in(line.t, until, self.multiplicator_every));
        }
        (firings, busy_ms)
    }
}

impl Timers {
    /// At most how many rows QUOTA_COMPUTE charges over `lines`: each
    /// running container at each compute while it runs.
    fn rows_while_busy(&self, lines: &[ReplayLine]) -> u64 {
        let (mut rows, mut running) = (0u64, 0usize);
        for (index, line) in lines.iter().enumerate() {
            running = running_after(running, &line.event);
            let next = lines.get(index + 1).map(|l| l.t);
            if running == 0 || next == Some(line.t) {
                continue;
            }
            let until = next.unwrap_or(line.t.saturating_add(1));
            let computes = multiples_in(line.t, until, self.compute_every);
            rows = rows.saturating_add(computes.saturating_mul(running as u64));
        }
        rows
    }
}

/// The first multiple of `period` (> 0) at or after `t`; saturating at the
/// end of time rather than overflowing.
fn first_at_or_after(t: u64, period: u64) -> u64 {
    t.div_ceil(period).saturating_mul(period)
}

/// How many multiples of `period` (> 0) lie in [`from`, `to`).
fn multiples_in(from: u64, to: u64, period: u64) -> u64 {
    to.div_ceil(period).saturating_sub(from.div_ceil(period))
}

fn apply(
    event: &ReplayEvent,
    t: u64,
    quota: &mut QuotaService,
    timers: &mut Timers,
) -> Result<(), QuotaError> {
    match event {
        ReplayEvent::Start {
            container,
            app,
            project,
            user,
            memory_mb,
            vcores,
            gpus,
        } => quota.start(
            container,
            app,
            project,
            user,
            Resources::new(*memory_mb, *vcores, *gpus),
            t,
        ),
        ReplayEvent::Update {
            container,
            memory_mb,
            vcores,
            gpus,
        } => quota.update(container, Resources::new(*memory_mb, *vcores, *gpus), t),
        ReplayEvent::Finish { container } => quota.finish(container, t),
        ReplayEvent::Utilization {
            memory,
            vcores,
            gpus,
        } => {
            timers.utilization = Utilization {
                memory: *memory,
                vcores: *vcores,
                gpus: *gpus,
            };
            Ok(())
        }
    }
}

/// The ledger as replay prints it.
pub fn report(quota: &QuotaService) -> ReplayReport {
    let ledger = quota.ledger();
    let multiplicators = quota.multiplicators();
    ReplayReport {
        projects: ledger.projects().clone(),
        daily: ledger
            .daily()
            .iter()
            .map(|((project, user, day), credits)| DailyRow {
                project: project.clone(),
                user: user.clone(),
                day: day.clone(),
                credits: *credits,
            })
            .collect(),
        multiplicators: MultiplicatorsReport {
            general: multiplicators.general,
            gpu: multiplicators.gpu,
        },
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::policy::{CallError, PriceMultiplicators, Usage};

    /// One credit per GB-second at a general multiplicator of 1 + memory
    /// utilization; counts its multiplicator calls.
    #[derive(Default)]
    struct Counting {
        multiplicator_calls: Cell<u64>,
    }

    impl Pricing for Counting {
        fn multiplicators(&self, u: Utilization) -> Result<PriceMultiplicators, CallError> {
            self.multiplicator_calls
                .set(self.multiplicator_calls.get() + 1);
            Ok(PriceMultiplicators {
                general: 1.0 + u.memory,
                gpu: 1.0,
            })
        }
        fn charge(&self, usage: &Usage, m: PriceMultiplicators) -> Result<Vec<f64>, CallError> {
            Ok(usage
                .seconds
                .iter()
                .zip(&usage.memory_mb)
                .map(|(seconds, mb)| seconds * *mb as f64 / 1024.0 * m.general)
                .collect())
        }
    }

    fn quota(compute_ms: u64, multiplicator_ms: u64) -> QuotaService {
        let mut settings = crate::config::Settings::default().quota;
        settings.variable_price = true;
        settings.scheduling_period_ms = compute_ms;
        settings.multiplicator_interval_ms = multiplicator_ms;
        QuotaService::new(settings)
    }

    fn log(lines: &[String]) -> Vec<ReplayLine> {
        parse(&lines.join("\n")).unwrap()
    }

    fn start(t: u64, container: &str, memory_mb: u64) -> String {
        format!(
            r#"{{"t": {t}, "event": "start", "container": "{container}", "app": "a", "project": "P", "user": "u", "memory_mb": {memory_mb}, "vcores": 1}}"#
        )
    }

    fn finish(t: u64, container: &str) -> String {
        format!(r#"{{"t": {t}, "event": "finish", "container": "{container}"}}"#)
    }

    fn utilization(t: u64, memory: f64) -> String {
        format!(r#"{{"t": {t}, "event": "utilization", "memory": {memory}, "vcores": 0}}"#)
    }

    /// Idle stretches across days, utilization changing while idle, events
    /// on and off the timers' phase, containers overlapping a compute.
    fn idle_heavy_log() -> Vec<ReplayLine> {
        log(&[
            utilization(0, 0.5),
            start(3_500, "a", 1024),
            finish(27_000, "a"),
            utilization(40_000, 0.25),
            start(86_395_000, "b", 2048),
            start(86_400_000, "c", 1024),
            utilization(86_401_234, 0.75),
            finish(86_430_001, "b"),
            finish(86_430_001, "c"),
            utilization(100_000_000, 0.1),
            start(100_000_005, "d", 4096),
            finish(100_000_006, "d"),
            utilization(150_000_000, 0.9),
        ])
    }

    #[test]
    fn jumping_over_idle_time_leaves_the_ledger_stepping_leaves() {
        let lines = idle_heavy_log();
        // Stepping is the slow reference: periods of seconds keep it quick.
        for (compute_ms, multiplicator_ms) in [(10_000, 10_000), (7_000, 15_000), (1_000, 3_000)] {
            let (jumping, stepping) = (Counting::default(), Counting::default());
            let mut quota_jumping = quota(compute_ms, multiplicator_ms);
            let mut quota_stepping = quota(compute_ms, multiplicator_ms);
            let jumped = replay(
                &lines,
                &mut quota_jumping,
                &jumping,
                VirtualClock::starting_at(0),
                true,
            )
            .unwrap();
            let stepped = replay(
                &lines,
                &mut quota_stepping,
                &stepping,
                VirtualClock::starting_at(0),
                false,
            )
            .unwrap();
            assert_eq!(jumped, stepped, "periods {compute_ms}, {multiplicator_ms}");
            assert!(
                jumping.multiplicator_calls.get() * 100 < stepping.multiplicator_calls.get(),
                "{} calls jumping, {} stepping",
                jumping.multiplicator_calls.get(),
                stepping.multiplicator_calls.get()
            );
        }
    }

    #[test]
    fn an_epoch_timestamped_log_replays_in_a_few_firings() {
        let t = 1_700_000_000_000;
        let lines = log(&[start(t, "c", 2048), finish(t + 25_000, "c")]);
        let pricing = Counting::default();
        let report = run(
            &lines,
            &mut quota(10_000, 10_000),
            &pricing,
            VirtualClock::starting_at(0),
        )
        .unwrap();
        assert_eq!(report.projects["P"].total_used, 50.0);
        // One step for the idle years, three while "c" runs (at t, t + 10 s
        // and t + 20 s), none after it.
        assert_eq!(pricing.multiplicator_calls.get(), 4);
    }

    #[test]
    fn firings_while_busy_count_the_timers_while_containers_run() {
        let timers = Timers::new(10_000, 15_000);
        // [0, 100 s): computes at 0, 10, …, 90 s (10), steps at 0, 15, …, 90 s (7).
        let lines = log(&[start(0, "a", 1024), finish(100_000, "a")]);
        assert_eq!(timers.firings_while_busy(&lines), (17, 100_000));
        // Still running at the end: the timers due at the last line count
        // too. [5 s, 30 s]: computes at 10, 20, 30 s; steps at 15, 30 s.
        let lines = log(&[start(5_000, "a", 1024), utilization(30_000, 0.5)]);
        assert_eq!(timers.firings_while_busy(&lines), (3 + 2, 25_001));
        // Two busy stretches far apart: the years between cost nothing. Both
        // timers are due at 0; only QUOTA_COMPUTE at 1.7e12 (not a multiple of 15 s).
        let lines = log(&[
            start(0, "a", 1024),
            finish(1, "a"),
            start(1_700_000_000_000, "b", 1024),
            finish(1_700_000_000_001, "b"),
        ]);
        assert_eq!(timers.firings_while_busy(&lines), (2 + 1, 2));
    }

    #[test]
    fn rows_while_busy_count_each_running_container_at_each_compute() {
        let timers = Timers::new(10_000, 15_000);
        // a alone for [0, 20 s): computes at 0 and 10 s; a and b for
        // [20 s, 40 s): at 20 and 30 s, two rows each.
        let lines = log(&[
            start(0, "a", 1024),
            start(20_000, "b", 1024),
            finish(40_000, "a"),
            finish(40_000, "b"),
        ]);
        assert_eq!(timers.rows_while_busy(&lines), 2 + 2 * 2);
    }

    #[test]
    fn a_log_needing_too_many_firings_is_refused_before_anything_is_charged() {
        // One container running 1e10 ms with both timers every second.
        let lines = log(&[start(0, "a", 1024), finish(10_000_000_000, "a")]);
        let mut quota = quota(1_000, 1_000);
        let error = run(
            &lines,
            &mut quota,
            &Counting::default(),
            VirtualClock::starting_at(0),
        )
        .unwrap_err();
        let message = error.to_string();
        assert!(message.contains("20000000 timer firings"), "{message}");
        assert!(message.contains("at most 10000000"), "{message}");
        assert!(
            message.contains("yarn.resourcemanager.quota.scheduling.period"),
            "{message}"
        );
        assert!(report(&quota).projects.is_empty());
    }

    #[test]
    fn out_of_bounds_values_are_refused_naming_the_line_and_field() {
        let cases = [
            (format!(r#"{{"t": {}, "event": "finish", "container": "c"}}"#, MAX_TIME_MS + 1), "t is 253402300800000"),
            (format!(r#"{{"t": {}, "event": "finish", "container": "c"}}"#, u64::MAX), "t is 18446744073709551615"),
            (start(0, "c", MAX_MEMORY_MB + 1), "memory_mb is"),
            (start(0, "", 1), "container is"),
            (
                r#"{"t": 0, "event": "start", "container": "c", "app": "a", "project": "P", "user": "u", "memory_mb": 1, "vcores": 5000}"#.into(),
                "vcores is 5000, but must be from 0 to 4096",
            ),
        ];
        for (line, says) in cases {
            let text = format!("{}\n{line}", utilization(0, 0.0));
            let message = parse(&text).unwrap_err().to_string();
            assert!(message.starts_with("line 2: "), "{message}");
            assert!(message.contains(says), "{line}: {message}");
        }
        // Beyond u64, serde refuses the number itself.
        let message = parse(r#"{"t": 18446744073709551616, "event": "finish", "container": "c"}"#)
            .unwrap_err()
            .to_string();
        assert!(message.starts_with("line 1: "), "{message}");
    }
}
