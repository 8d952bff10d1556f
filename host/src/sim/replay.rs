//! `weft replay`: the what-if-billing tool. A container-event log goes through
//! the real quota service on a virtual clock with the chosen pricing policy,
//! and the ledger comes out as JSON.
//!
//! Timing: QUOTA_COMPUTE fires every scheduling period and the multiplicator
//! step every multiplicator interval of virtual time (multiples of each,
//! from 0). Events at time t are applied and charged before the timers due at
//! t; at equal times the multiplicator step runs before QUOTA_COMPUTE. After
//! the last event a final QUOTA_COMPUTE charges running containers up to it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::clock::{Clock, VirtualClock};
use crate::cluster::Resources;
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
}

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
    let settings = *quota.settings();
    let mut timers = Timers {
        compute_every: settings.scheduling_period_ms.max(1),
        multiplicator_every: settings.multiplicator_interval_ms.max(1),
        next_compute: 0,
        next_multiplicator: 0,
        utilization: Utilization {
            memory: 0.0,
            vcores: 0.0,
            gpus: 0.0,
        },
    };
    let mut index = 0;
    while index < lines.len() {
        let t = lines[index].t;
        timers.fire_before(t, quota, pricing, &clock)?;
        clock.advance_to(t);
        while index < lines.len() && lines[index].t == t {
            apply(&lines[index].event, t, quota, &mut timers)
                .map_err(|source| ReplayError::Quota { t, source })?;
            index += 1;
        }
        quota
            .flush(pricing)
            .map_err(|source| ReplayError::Quota { t, source })?;
    }
    let end = clock.now_ms();
    timers.fire_before(end + 1, quota, pricing, &clock)?;
    quota.compute(end);
    quota
        .flush(pricing)
        .map_err(|source| ReplayError::Quota { t: end, source })?;
    Ok(report(quota))
}

struct Timers {
    compute_every: u64,
    multiplicator_every: u64,
    next_compute: u64,
    next_multiplicator: u64,
    utilization: Utilization,
}

impl Timers {
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
            if self.next_multiplicator == due {
                quota
                    .update_multiplicators(pricing, self.utilization)
                    .map_err(at)?;
                self.next_multiplicator += self.multiplicator_every;
            } else {
                quota.compute(due);
                quota.flush(pricing).map_err(at)?;
                self.next_compute += self.compute_every;
            }
        }
    }
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
            app: _,
            project,
            user,
            memory_mb,
            vcores,
            gpus,
        } => quota.start(
            container,
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
