//! `weft replay`: the what-if-billing tool. A container-event log (its
//! format: docs/replay-events.md) goes through the real quota service on a
//! virtual clock with the chosen pricing policy, and the ledger comes out.
//!
//! Timers. A log `weft serve` wrote (`weft.quota.event-log`) has *recorded
//! timers*: its `compute` and `multiplicator-step` lines are the server's
//! own QUOTA_COMPUTEs and multiplicator steps, each run where its line is,
//! and replay fires no timer of its own, so it charges what the server
//! charged. A log with neither (one written by hand) has *periodic timers*:
//! QUOTA_COMPUTE fires every scheduling period and the multiplicator step
//! (given the last `utilization` line) every multiplicator interval of
//! virtual time (multiples of each, from 0). Events at time t are applied
//! and charged before the periodic timers due at t; at equal times the
//! multiplicator step runs before QUOTA_COMPUTE. Either way what is owed is
//! priced after each t's lines and before each multiplicator step (as the
//! server prices it), and after the last line a final QUOTA_COMPUTE
//! charges running containers up to it.
//!
//! Recoveries. A `recovery` line and the `running` lines right after it
//! are the containers a (re)started server charged on: one the log does not
//! have running is charged from the line's `charged_until_ms` on, and one
//! the log has running that they leave out stops being charged where it was
//! last charged (its finish was lost in a crash).
//!
//! While no container runs the periodic timers are not fired one by one:
//! replay jumps to the next event, firing each timer due in between once
//! (see `Timers::skip_idle`), so idle stretches cost nothing — a log with
//! epoch timestamps starts at t ≈ 1.7e12 ms. While containers run every
//! firing is needed, so a log needing more than [`MAX_REPLAY_TIMER_FIRINGS`] is
//! refused before anything is charged. Every value is checked against
//! `crate::limits`; the format itself, and its checks, are `quota/events.rs`.

use crate::limits::MAX_REPLAY_CHARGED_ROWS;
use crate::limits::MAX_REPLAY_TIMER_FIRINGS;
use std::collections::BTreeMap;

use serde::Serialize;

use crate::clock::{Clock, VirtualClock};
use crate::policy::{Market, PriceMultiplicators, Utilization};
use crate::quota::events::{EventLine, Lifecycles, LineError, QuotaEvent, has_recorded_timers};
use crate::quota::{ChargedContainer, Pricing, ProjectQuota, QuotaError, QuotaService};
use crate::resources::Resources;
use crate::rm::timers::Every;

/// Why a replay stopped: a line the format refuses, an event that does not
/// follow from the lines before it, a quota service failure, or a log too
/// costly to replay (refused before anything is charged).
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// A line that does not parse or breaks a bound (`quota/events.rs`).
    #[error(transparent)]
    Line(#[from] LineError),
    /// An event that does not follow from those before it (the finish of
    /// a container that is not running, say). Only for lines `parse` did
    /// not check.
    #[error("event {number} of the log: {reason}")]
    Event {
        /// Its number among the log's events, from 1.
        number: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The quota service failed (the pricing policy, say) at log time `t`.
    #[error("at t={t} ms: {source}")]
    Quota {
        /// The log time being replayed, in ms.
        t: u64,
        /// What failed.
        source: QuotaError,
    },
    /// Periodic timers would fire more than [`MAX_REPLAY_TIMER_FIRINGS`] times
    /// while containers run.
    #[error(
        "containers run for {busy_ms} ms of the log's time, which takes {needed} timer firings \
         (QUOTA_COMPUTE every {compute_every_ms} ms, the multiplicator step every \
         {multiplicator_every_ms} ms); replay allows at most {MAX_REPLAY_TIMER_FIRINGS}: set longer \
         periods (--set yarn.resourcemanager.quota.scheduling.period=MS and \
         --set yarn.resourcemanager.quota.multiplicator.interval=MS) or replay a shorter log"
    )]
    TooManyFirings {
        /// The firings the log needs while containers run.
        needed: u64,
        /// How long containers run, in ms of log time.
        busy_ms: u64,
        /// QUOTA_COMPUTE's period, in ms
        /// (`yarn.resourcemanager.quota.scheduling.period`).
        compute_every_ms: u64,
        /// The multiplicator step's period, in ms
        /// (`yarn.resourcemanager.quota.multiplicator.interval`).
        multiplicator_every_ms: u64,
    },
    /// Periodic QUOTA_COMPUTEs would charge more than [`MAX_REPLAY_CHARGED_ROWS`]
    /// rows.
    #[error(
        "the log's containers would be charged up to {rows} rows (each QUOTA_COMPUTE charges \
         every running container, every {compute_every_ms} ms); replay allows at most \
         {MAX_REPLAY_CHARGED_ROWS}: set a longer yarn.resourcemanager.quota.scheduling.period or \
         replay a shorter log"
    )]
    TooManyRows {
        /// The rows they would charge: running containers, summed over
        /// the firings.
        rows: u64,
        /// QUOTA_COMPUTE's period, in ms.
        compute_every_ms: u64,
    },
    /// A log with recorded timers has more than [`MAX_REPLAY_TIMER_FIRINGS`]
    /// firings or would charge more than [`MAX_REPLAY_CHARGED_ROWS`] rows.
    #[error(
        "the log records {firings} timer firings (compute and multiplicator-step lines) that \
         charge up to {rows} rows; replay allows at most {MAX_REPLAY_TIMER_FIRINGS} firings and \
         {MAX_REPLAY_CHARGED_ROWS} rows: replay a shorter stretch of the log"
    )]
    RecordedTooLarge {
        /// Its compute and multiplicator-step lines.
        firings: u64,
        /// Running containers summed over its compute lines and the final
        /// QUOTA_COMPUTE.
        rows: u64,
    },
}

/// What replay prints.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ReplayReport {
    /// Each project's account at the end: credits remaining and used.
    pub projects: BTreeMap<String, ProjectQuota>,
    /// Credits charged per project, user and UTC day, sorted so.
    pub daily: Vec<DailyRow>,
    /// The price multiplicators in force at the end.
    pub multiplicators: MultiplicatorsReport,
}

/// The credits one user of a project was charged on one UTC day.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DailyRow {
    /// The project charged.
    pub project: String,
    /// The user whose containers were charged.
    pub user: String,
    /// The day, as YYYY-MM-DD in UTC.
    pub day: String,
    /// Credits charged that day.
    pub credits: f64,
}

/// The pricing policy's last price multiplicators (1 unless
/// `yarn.resourcemanager.quota.variable.price.enabled`).
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct MultiplicatorsReport {
    /// For CPU and memory.
    pub general: f64,
    /// For GPUs.
    pub gpu: f64,
}

/// How many containers run after each line.
fn running_counts(lines: &[EventLine]) -> Result<Vec<usize>, ReplayError> {
    let mut lifecycles = Lifecycles::default();
    lines
        .iter()
        .enumerate()
        .map(|(index, line)| {
            lifecycles
                .follow(line.t, &line.event)
                .map(|_| lifecycles.running.len())
                .map_err(|reason| ReplayError::Event {
                    number: index + 1,
                    reason,
                })
        })
        .collect()
}

/// Runs `lines` through `quota`, priced by `pricing`, on `clock` (at 0, and
/// shared with the pricing policy, which reads it).
pub fn run(
    lines: &[EventLine],
    quota: &mut QuotaService,
    pricing: &dyn Pricing,
    clock: VirtualClock,
) -> Result<ReplayReport, ReplayError> {
    replay(lines, quota, pricing, clock, true)
}

/// [`run`]; `jump_idle` false steps through every periodic timer, as the
/// tests' reference for what jumping must give.
fn replay(
    lines: &[EventLine],
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
    let running = running_counts(lines)?;
    let recorded = has_recorded_timers(lines);
    if recorded {
        check_recorded_cost(lines, &running)?;
    } else {
        timers.check_cost(lines, &running)?;
    }
    let mut lifecycles = Lifecycles::default();
    let mut index = 0;
    while index < lines.len() {
        let t = lines[index].t;
        let at = |source| ReplayError::Quota { t, source };
        if !recorded {
            if jump_idle && lifecycles.running.is_empty() && !quota.has_owed() {
                timers.skip_idle(t, quota, pricing)?;
            }
            timers.fire_before(t, quota, pricing, &clock)?;
        }
        clock.advance_to(t);
        while index < lines.len() && lines[index].t == t {
            let event = &lines[index].event;
            let followed = lifecycles
                .follow(t, event)
                .map_err(|reason| ReplayError::Event {
                    number: index + 1,
                    reason,
                })?;
            stop_charging(&followed.left_out, quota).map_err(at)?;
            let resumed = match (followed.resumed, followed.late) {
                (false, _) => Resumed::No,
                (true, false) => Resumed::AtRecovery,
                (true, true) => Resumed::Later,
            };
            apply(event, t, resumed, quota, pricing, &mut timers).map_err(at)?;
            index += 1;
        }
        quota.flush(pricing).map_err(at)?;
    }
    let end = clock.now_ms();
    let at_end = |source| ReplayError::Quota { t: end, source };
    stop_charging(&lifecycles.end_recovery(), quota).map_err(at_end)?;
    if !recorded {
        // `end` is a checked time (at most MAX_TIME_MS), so + 1 cannot overflow.
        if jump_idle && lifecycles.running.is_empty() && !quota.has_owed() {
            timers.skip_idle(end + 1, quota, pricing)?;
        }
        timers.fire_before(end + 1, quota, pricing, &clock)?;
    }
    quota.compute(end);
    quota.flush(pricing).map_err(at_end)?;
    Ok(report(quota))
}

/// With recorded timers every compute and multiplicator-step line is a
/// firing, idle or not, and each compute charges every running container.
fn check_recorded_cost(lines: &[EventLine], running: &[usize]) -> Result<(), ReplayError> {
    let (mut firings, mut rows) = (0u64, 0u64);
    for (line, running) in lines.iter().zip(running) {
        match line.event {
            QuotaEvent::Compute => {
                firings += 1;
                rows = rows.saturating_add(*running as u64);
            }
            QuotaEvent::MultiplicatorStep { .. } => firings += 1,
            _ => {}
        }
    }
    // The final QUOTA_COMPUTE after the last line.
    rows = rows.saturating_add(running.last().copied().unwrap_or(0) as u64);
    if firings > MAX_REPLAY_TIMER_FIRINGS || rows > MAX_REPLAY_CHARGED_ROWS {
        return Err(ReplayError::RecordedTooLarge { firings, rows });
    }
    Ok(())
}

/// Stops charging containers a recovery left out, where each was last
/// charged: the server did not charge them after it (no minimum runtime:
/// the server never saw them end). A later running line may resume one.
fn stop_charging(left_out: &[String], quota: &mut QuotaService) -> Result<(), QuotaError> {
    for container in left_out {
        if let Some(charged_until) = quota.charged_until(container) {
            quota.finish(container, charged_until, false)?;
        }
    }
    Ok(())
}

/// The most multiplicator steps run in one stretch with nothing running.
const MAX_IDLE_STEPS: u32 = 64;

/// The market of a log's line: its utilization at `t`, and nothing else
/// known (a line may add what it recorded).
fn market(t: u64, utilization: Utilization) -> Market {
    Market {
        now_ms: i64::try_from(t).unwrap_or(i64::MAX),
        utilization,
        partitions: Vec::new(),
        queues: Vec::new(),
        last: PriceMultiplicators {
            general: 1.0,
            gpu: 1.0,
        },
    }
}

/// The periodic timers of a log without recorded ones: QUOTA_COMPUTE and
/// the multiplicator step on every multiple of their periods from 0.
struct Timers {
    compute: Every,
    multiplicator: Every,
    utilization: Utilization,
}

impl Timers {
    fn new(compute_every: u64, multiplicator_every: u64) -> Timers {
        Timers {
            compute: Every::from_zero(compute_every),
            multiplicator: Every::from_zero(multiplicator_every),
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
            let Some(due) = [self.multiplicator.next, self.compute.next]
                .into_iter()
                .flatten()
                .min()
                .filter(|due| *due < t)
            else {
                return Ok(());
            };
            clock.advance_to(due);
            let at = |source| ReplayError::Quota { t: due, source };
            // The multiplicator step first at equal times; each timer is
            // re-armed one period on (saturating at the end of time).
            if self.multiplicator.due(due) {
                quota
                    .update_multiplicators(pricing, market(due, self.utilization))
                    .map_err(at)?;
            } else if self.compute.due(due) {
                quota.compute(due);
                quota.flush(pricing).map_err(at)?;
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
    ///   log line changes it), and `multiplicators` depends on its market
    ///   (docs/policy-authors.md), of which only `last` and the time move:
    ///   steps run from the first time due (so a failing policy fails at the
    ///   time stepping would report) until the answer stops changing (at
    ///   most [`MAX_IDLE_STEPS`]), which then stands for the rest. A policy
    ///   priced by the time of day sees only those steps' times; nothing
    ///   runs meanwhile, so nothing is charged at the others.
    fn skip_idle(
        &mut self,
        t: u64,
        quota: &mut QuotaService,
        pricing: &dyn Pricing,
    ) -> Result<(), ReplayError> {
        // Steps until the answer stops changing (a policy may smooth from
        // `last`), then the rest stand as the last one.
        let mut steps = 0;
        while let Some(due) = self.multiplicator.next.filter(|due| *due < t) {
            let last = quota.multiplicators();
            let now = quota
                .update_multiplicators(pricing, market(due, self.utilization))
                .map_err(|source| ReplayError::Quota { t: due, source })?;
            steps += 1;
            if now == last || steps == MAX_IDLE_STEPS {
                self.multiplicator.skip_to(Some(t));
                break;
            }
            self.multiplicator.due(due);
        }
        if self.compute.next.is_some_and(|due| due < t) {
            // t > 0 here, so its first multiple at or after is at least one
            // period: no underflow.
            let period = self.compute.period;
            quota.compute(first_at_or_after(t, period) - period);
            self.compute.skip_to(Some(t));
        }
        Ok(())
    }

    /// Refuses, before anything is charged, a log whose periodic timers
    /// would fire too often or charge too many rows while containers run
    /// (`running`: how many run after each line).
    fn check_cost(&self, lines: &[EventLine], running: &[usize]) -> Result<(), ReplayError> {
        let (needed, busy_ms) = self.firings_while_busy(lines, running);
        let rows = self.rows_while_busy(lines, running);
        if rows > MAX_REPLAY_CHARGED_ROWS {
            return Err(ReplayError::TooManyRows {
                rows,
                compute_every_ms: self.compute.period,
            });
        }
        if needed > MAX_REPLAY_TIMER_FIRINGS {
            return Err(ReplayError::TooManyFirings {
                needed,
                busy_ms,
                compute_every_ms: self.compute.period,
                multiplicator_every_ms: self.multiplicator.period,
            });
        }
        Ok(())
    }

    /// How many timer firings `lines` need while containers run (the
    /// others are skipped), and for how many ms containers run.
    fn firings_while_busy(&self, lines: &[EventLine], running: &[usize]) -> (u64, u64) {
        let (mut firings, mut busy_ms) = (0u64, 0u64);
        for (index, (line, running)) in lines.iter().zip(running).enumerate() {
            let next = lines.get(index + 1).map(|l| l.t);
            if *running == 0 || next == Some(line.t) {
                continue;
            }
            // The timers due in [t, until) see these containers; after the
            // last line, those due at its time. Saturating: sums of checked
            // times cannot come near u64::MAX, and a count that did would
            // be refused anyway.
            let until = next.unwrap_or(line.t.saturating_add(1));
            busy_ms = busy_ms.saturating_add(until - line.t);
            firings = firings
                .saturating_add(multiples_in(line.t, until, self.compute.period))
                .saturating_add(multiples_in(line.t, until, self.multiplicator.period));
        }
        (firings, busy_ms)
    }

    /// At most how many rows QUOTA_COMPUTE charges over `lines`: each
    /// running container at each compute while it runs.
    fn rows_while_busy(&self, lines: &[EventLine], running: &[usize]) -> u64 {
        let mut rows = 0u64;
        for (index, (line, running)) in lines.iter().zip(running).enumerate() {
            let next = lines.get(index + 1).map(|l| l.t);
            if *running == 0 || next == Some(line.t) {
                continue;
            }
            let until = next.unwrap_or(line.t.saturating_add(1));
            let computes = multiples_in(line.t, until, self.compute.period);
            rows = rows.saturating_add(computes.saturating_mul(*running as u64));
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

/// Whether a running line charges its container again, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resumed {
    No,
    /// Right after its recovery: from the later of its charged-until time
    /// and the last QUOTA_COMPUTE, as the server restored it.
    AtRecovery,
    /// Once its agent came back: from its charged-until time.
    Later,
}

/// Applies one line at `t`; `resumed`: a running line's container is
/// charged again (see [`Followed`]).
fn apply(
    event: &QuotaEvent,
    t: u64,
    resumed: Resumed,
    quota: &mut QuotaService,
    pricing: &dyn Pricing,
    timers: &mut Timers,
) -> Result<(), QuotaError> {
    match event {
        QuotaEvent::Start {
            container,
            app,
            project,
            user,
            memory_mb,
            vcores,
            gpus,
            started_ms,
            context,
        } => quota.start(
            container,
            context.with(app, project, user),
            Resources::new(*memory_mb, *vcores, *gpus),
            started_ms.map_or(t, |started| started.min(t)),
        ),
        QuotaEvent::Update {
            container,
            memory_mb,
            vcores,
            gpus,
        } => quota.update(container, Resources::new(*memory_mb, *vcores, *gpus), t),
        QuotaEvent::Finish {
            container,
            ended_ms,
            exit_status,
        } => quota.finish(
            container,
            ended_ms.unwrap_or(t),
            exit_status.is_none_or(crate::protocol::node::exit_status::ended_by_its_work),
        ),
        QuotaEvent::Utilization {
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
        QuotaEvent::Compute => {
            quota.compute(t);
            Ok(())
        }
        QuotaEvent::MultiplicatorStep {
            memory,
            vcores,
            gpus,
            partitions,
            queues,
        } => {
            let utilization = Utilization {
                memory: *memory,
                vcores: *vcores,
                gpus: *gpus,
            };
            let mut market = market(t, utilization);
            market.partitions = partitions.clone();
            market.queues = queues.clone();
            // As the server does: what is owed before a step is priced at
            // the multiplicators in force until it, even at the same t.
            quota.flush(pricing)?;
            quota.update_multiplicators(pricing, market).map(|_| ())
        }
        QuotaEvent::Recovery => Ok(()),
        QuotaEvent::Running {
            container,
            app,
            project,
            user,
            memory_mb,
            vcores,
            gpus,
            started_ms,
            charged_until_ms,
            context,
        } => {
            let charged = ChargedContainer {
                id: container.clone(),
                context: context.with(app, project, user),
                resources: Resources::new(*memory_mb, *vcores, *gpus),
                started_ms: *started_ms,
                charged_until_ms: *charged_until_ms,
            };
            match resumed {
                Resumed::No => {}
                Resumed::AtRecovery => quota.restore_container(charged),
                Resumed::Later => quota.resume(charged),
            }
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
    use crate::limits::{MAX_MEMORY_MB, MAX_TIME_MS};
    use crate::policy::{CallError, PriceMultiplicators, QuoteRequest, Usage};
    use crate::quota::events::LoggedContext;
    use crate::quota::events::parse;

    /// One credit per GB-second at a general multiplicator of 1 + memory
    /// utilization; counts its multiplicator calls.
    #[derive(Default)]
    struct Counting {
        multiplicator_calls: Cell<u64>,
    }

    impl Pricing for Counting {
        fn multiplicators(&self, market: &Market) -> Result<PriceMultiplicators, CallError> {
            self.multiplicator_calls
                .set(self.multiplicator_calls.get() + 1);
            Ok(PriceMultiplicators {
                general: 1.0 + market.utilization.memory,
                gpu: 1.0,
            })
        }
        fn quote(&self, _: &QuoteRequest, _: PriceMultiplicators) -> Result<f64, CallError> {
            Ok(0.0)
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

    fn log(lines: &[String]) -> Vec<EventLine> {
        parse(&lines.join("\n")).unwrap()
    }

    fn counts(lines: &[EventLine]) -> Vec<usize> {
        running_counts(lines).unwrap()
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
    fn idle_heavy_log() -> Vec<EventLine> {
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
        assert_eq!(
            timers.firings_while_busy(&lines, &counts(&lines)),
            (17, 100_000)
        );
        // Still running at the end: the timers due at the last line count
        // too. [5 s, 30 s]: computes at 10, 20, 30 s; steps at 15, 30 s.
        let lines = log(&[start(5_000, "a", 1024), utilization(30_000, 0.5)]);
        assert_eq!(
            timers.firings_while_busy(&lines, &counts(&lines)),
            (3 + 2, 25_001)
        );
        // Two busy stretches far apart: the years between cost nothing. Both
        // timers are due at 0; only QUOTA_COMPUTE at 1.7e12 (not a multiple of 15 s).
        let lines = log(&[
            start(0, "a", 1024),
            finish(1, "a"),
            start(1_700_000_000_000, "b", 1024),
            finish(1_700_000_000_001, "b"),
        ]);
        assert_eq!(
            timers.firings_while_busy(&lines, &counts(&lines)),
            (2 + 1, 2)
        );
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
        assert_eq!(timers.rows_while_busy(&lines, &counts(&lines)), 2 + 2 * 2);
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

    fn compute(t: u64) -> String {
        format!(r#"{{"t": {t}, "event": "compute"}}"#)
    }

    fn step(t: u64, memory: f64) -> String {
        format!(
            r#"{{"t": {t}, "event": "multiplicator-step", "memory": {memory}, "vcores": 0, "gpus": 0}}"#
        )
    }

    fn running(t: u64, container: &str, started_ms: u64, charged_until_ms: u64) -> String {
        format!(
            r#"{{"t": {t}, "event": "running", "container": "{container}", "app": "a", "project": "P", "user": "u", "memory_mb": 1024, "vcores": 1, "gpus": 0, "started_ms": {started_ms}, "charged_until_ms": {charged_until_ms}}}"#
        )
    }

    fn recovery(t: u64) -> String {
        format!(r#"{{"t": {t}, "event": "recovery"}}"#)
    }

    /// Replays `lines` (timers every 10 s, were they periodic) with
    /// [`Counting`]: P's credits and the multiplicator calls.
    fn credits(lines: &[String]) -> (f64, u64) {
        let pricing = Counting::default();
        let report = run(
            &log(lines),
            &mut quota(10_000, 10_000),
            &pricing,
            VirtualClock::starting_at(0),
        )
        .unwrap();
        let used = report.projects.get("P").map_or(0.0, |p| p.total_used);
        (used, pricing.multiplicator_calls.get())
    }

    fn refusal(lines: &[String]) -> String {
        parse(&lines.join("\n")).unwrap_err().to_string()
    }

    #[test]
    fn recorded_timers_fire_where_their_lines_are_and_nowhere_else() {
        // One 1 GB container from 1 s to 12 s. Periodic timers would
        // charge at 0 and 10 s; these lines charge at 3.5 and 7 s, and the
        // price doubles at 5 s.
        let lines = [
            step(0, 0.0),
            start(1_000, "c", 1024),
            compute(3_500),
            step(5_000, 1.0),
            compute(7_000),
            finish(12_000, "c"),
        ];
        let (used, calls) = credits(&lines);
        // 2.5 s at 1, then 3.5 s and 5 s at 2.
        assert!((used - (2.5 + 7.0 + 10.0)).abs() < 1e-9, "{used}");
        assert_eq!(calls, 2, "only the recorded steps");
    }

    /// The server prices what is owed before it steps; a finish logged at
    /// the step's own millisecond (one turn before it) is priced at the old
    /// multiplicators, as one a millisecond earlier is.
    #[test]
    fn usage_owed_before_a_step_at_the_same_t_is_priced_at_the_old_multiplicators() {
        let at = |finish_ms: u64| {
            credits(&[
                step(0, 0.0),
                start(0, "c", 1024),
                finish(finish_ms, "c"),
                step(20_000, 1.0),
                start(20_000, "d", 1024),
                finish(31_000, "d"),
            ])
            .0
        };
        // c: 20 s at 1; d: 11 s at 2 (both past the minimum runtime).
        assert!((at(20_000) - 42.0).abs() < 1e-9, "{}", at(20_000));
        assert!((at(19_999) - 41.999).abs() < 1e-9, "{}", at(19_999));
    }

    #[test]
    fn a_finish_is_charged_up_to_when_the_container_ended() {
        let ended_late = r#"{"t": 25000, "event": "finish", "container": "c", "ended_ms": 22000}"#;
        let lines = [
            start(0, "c", 1024),
            compute(10_000),
            compute(20_000),
            ended_late.to_string(),
        ];
        assert!((credits(&lines).0 - 22.0).abs() < 1e-9);
        // Charged up to a compute after it ended: nothing more.
        let ended_early = r#"{"t": 25000, "event": "finish", "container": "c", "ended_ms": 15000}"#;
        let lines = [
            start(0, "c", 1024),
            compute(10_000),
            compute(20_000),
            ended_early.to_string(),
        ];
        assert!((credits(&lines).0 - 20.0).abs() < 1e-9);
        let after_t = r#"{"t": 25000, "event": "finish", "container": "c", "ended_ms": 25001}"#;
        let message = refusal(&[start(0, "c", 1024), after_t.to_string()]);
        assert!(
            message.contains("line 2: ended_ms is 25001, but must be from 0 to 25000"),
            "{message}"
        );
    }

    #[test]
    fn a_recovery_charges_what_the_server_recovered_and_stops_what_it_left_out() {
        let lines = [
            start(0, "a", 1024),
            start(0, "b", 1024),
            compute(10_000),
            // The server restarted: it charges a on, and c, whose start the
            // log lost; b's finish was lost.
            recovery(30_000),
            running(30_000, "a", 0, 10_000),
            running(30_000, "c", 5_000, 10_000),
            compute(40_000),
            finish(40_000, "a"),
            finish(40_000, "c"),
        ];
        // a and b 10 s each up to the first compute, a and c 30 s each
        // after it; b nothing after it (its 10 s minimum was reached).
        let (used, _) = credits(&lines);
        assert!((used - 80.0).abs() < 1e-9, "{used}");

        let mut finished_after = lines.to_vec();
        finished_after.push(finish(50_000, "b"));
        let message = refusal(&finished_after);
        assert!(
            message.starts_with("line 10: finish of container \"b\", which is not running"),
            "{message}"
        );
    }

    #[test]
    fn running_lines_belong_to_a_recovery_at_their_time() {
        let cases = [
            vec![start(0, "a", 1024), running(5_000, "a", 0, 0)],
            vec![recovery(5_000), running(6_000, "a", 0, 0)],
            vec![recovery(5_000), compute(5_000), running(5_000, "a", 0, 0)],
        ];
        for lines in cases {
            let message = refusal(&lines);
            assert!(
                message.contains("must follow a recovery line"),
                "{lines:?}: {message}"
            );
        }
    }

    #[test]
    fn a_utilization_line_is_refused_in_a_log_with_recorded_timers() {
        let lines = [compute(0), start(0, "c", 1024), utilization(5, 0.5)];
        let message = refusal(&lines);
        assert!(
            message
                .starts_with("line 3: a utilization line cannot be in a log with recorded timers"),
            "{message}"
        );
    }

    #[test]
    fn every_event_reads_back_as_it_was_written() {
        let events = [
            QuotaEvent::Start {
                container: "c".into(),
                app: "a".into(),
                project: "P".into(),
                user: "u".into(),
                memory_mb: 2048,
                vcores: 2,
                gpus: 1,
                started_ms: Some(3),
                context: LoggedContext {
                    queue: "root.ml".into(),
                    application_type: "SPARK".into(),
                    application_tags: vec!["nightly".into()],
                    priority: 2,
                    node_label: "gpu".into(),
                    node_attributes: [("nm.yarn.io/gpu-model".into(), "a100".into())].into(),
                    reservation: Some("reservation_1_0001".into()),
                    opportunistic: true,
                },
            },
            QuotaEvent::Update {
                container: "c".into(),
                memory_mb: 4096,
                vcores: 1,
                gpus: 0,
            },
            QuotaEvent::MultiplicatorStep {
                memory: 0.25,
                vcores: 1.5,
                gpus: 0.0,
                partitions: vec![],
                queues: vec![],
            },
            QuotaEvent::Compute,
            QuotaEvent::Finish {
                container: "c".into(),
                ended_ms: Some(7),
                exit_status: Some(-102),
            },
            QuotaEvent::Recovery,
            QuotaEvent::Running {
                container: "c".into(),
                app: "a".into(),
                project: "P".into(),
                user: "u".into(),
                memory_mb: 1,
                vcores: 0,
                gpus: 3,
                started_ms: 1,
                charged_until_ms: 9,
                context: LoggedContext::default(),
            },
            QuotaEvent::Finish {
                container: "c".into(),
                ended_ms: None,
                exit_status: None,
            },
        ];
        let lines: Vec<EventLine> = events
            .into_iter()
            .map(|event| EventLine { t: 10, event })
            .collect();
        let text: Vec<String> = lines
            .iter()
            .map(|line| serde_json::to_string(line).unwrap())
            .collect();
        assert_eq!(text[3], r#"{"t":10,"event":"compute"}"#);
        assert_eq!(text[7], r#"{"t":10,"event":"finish","container":"c"}"#);
        assert_eq!(parse(&text.join("\n")).unwrap(), lines);
    }
}
