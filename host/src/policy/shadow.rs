//! Shadow mode: a candidate version answers the same live calls as the
//! active one, on a thread of its own, and its answers are compared, never
//! applied. Its failures and latency are its own: they never count against
//! the active version, never trigger a fallback or rollback, and a full
//! queue drops the comparison, never delays the active call.

use std::collections::BTreeMap;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use arc_swap::ArcSwapOption;
use serde::Serialize;

use super::bindings::{
    Admission, Market, Placements, PriceMultiplicators, Rejection, Snapshot, Usage,
};
use super::stats::{CallCost, CallStats};
use super::version::now_ms;
use super::{CallError, PolicyKind, PolicyVersion, VersionInfo, validate};
use crate::metrics::{OutcomeLabels, ShadowCreditLabels, metrics};

/// Calls waiting for the shadow; beyond this the newest are dropped (and
/// counted), so a slow candidate never holds the active path up.
const QUEUE: usize = 32;

/// Projects compared one by one; the rest are summed as one row, so a
/// server with many projects does not grow the report without bound.
const MAX_PROJECTS: usize = 10_000;
const OTHER_PROJECTS: &str = "(other projects)";

/// One live call, with the active version's answer.
pub(super) enum Job {
    Multiplicators {
        market: Box<Market>,
        active: PriceMultiplicators,
    },
    /// `rows[i]` is the project of usage row i and how many containers it
    /// stands for; `active[i]` what the active version charged per container.
    Charge {
        usage: Usage,
        multiplicators: PriceMultiplicators,
        active: Vec<f64>,
        rows: Vec<(Arc<str>, u32)>,
    },
    // Boxed: snapshots and admissions are large, the other jobs small.
    Schedule {
        snapshot: Box<Snapshot>,
        active: Placements,
    },
    Validate {
        admission: Box<Admission>,
        active: Result<(), Rejection>,
    },
}

/// A running shadow: its version, its queue and what it found so far.
pub struct Shadow {
    version: Arc<PolicyVersion>,
    jobs: SyncSender<Job>,
    findings: Arc<Mutex<Findings>>,
}

impl std::fmt::Debug for Shadow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shadow")
            .field("version", &self.version.info)
            .finish_non_exhaustive()
    }
}

/// What a shadow found: the API's view of it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ShadowReport {
    /// The kind of policy the shadow runs beside.
    pub kind: PolicyKind,
    /// The candidate.
    pub shadow: VersionInfo,
    /// Milliseconds since the Unix epoch when it started.
    pub since_ms: u64,
    /// Calls the candidate answered.
    pub calls: u64,
    /// Calls the candidate failed: a trap, a timeout, or pricing output the
    /// host would refuse (scheduling placements it would refuse count in
    /// [`SchedulingComparison::invalid_rounds`] instead).
    pub failures: u64,
    /// The newest failure's message; `None` while it has not failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_failure: Option<String>,
    /// Live calls not compared because the candidate was behind.
    pub dropped: u64,
    /// The candidate's successful calls: count, mean and p99.
    #[schema(value_type = Object)]
    pub latency: CallCost,
    /// Calls whose answer differed from the active version's.
    pub differing: u64,
    /// The pricing comparison; only for a pricing shadow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pricing: Option<PricingComparison>,
    /// The scheduling comparison; only for a scheduling shadow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduling: Option<SchedulingComparison>,
    /// The sharing comparison; only for a sharing shadow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sharing: Option<SharingComparison>,
}

/// Pricing: what each project would have been charged.
#[derive(Debug, Clone, Default, Serialize, utoipa::ToSchema)]
pub struct PricingComparison {
    /// Multiplicator steps the candidate answered.
    pub multiplicator_steps: u64,
    /// Steps whose multiplicators differed from the active version's.
    pub multiplicators_differing: u64,
    /// The last step's multiplicators: the active's, then the candidate's.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub last_multiplicators: Option<(PriceMultiplicators, PriceMultiplicators)>,
    /// Charge calls (one per quota flush) the candidate answered.
    pub charge_batches: u64,
    /// Per project, sorted by name; beyond 10,000 projects the rest are
    /// summed in one row, `(other projects)`.
    pub projects: Vec<ProjectCredits>,
}

/// One project's credits under the active version and under the candidate.
#[derive(Debug, Clone, Default, Serialize, utoipa::ToSchema)]
pub struct ProjectCredits {
    /// The project's name, or `(other projects)` for the summed rest.
    pub project: String,
    /// Credits the active version charged while the shadow ran.
    pub active_credits: f64,
    /// Credits the candidate would have charged for the same usage.
    pub shadow_credits: f64,
    /// `shadow_credits - active_credits`.
    pub difference: f64,
}

/// Scheduling: each round's placements compared.
#[derive(Debug, Clone, Default, Serialize, utoipa::ToSchema)]
pub struct SchedulingComparison {
    /// Scheduling rounds the candidate answered.
    pub rounds: u64,
    /// Rounds whose placements differ.
    pub differing_rounds: u64,
    /// Containers placed differently (on another node, or by one and not the other).
    pub differing_containers: u64,
    /// Rounds where the candidate's placements would have been refused.
    pub invalid_rounds: u64,
}

/// Sharing: each admission decision compared.
#[derive(Debug, Clone, Default, Serialize, utoipa::ToSchema)]
pub struct SharingComparison {
    /// Admissions (`validate` calls) the candidate answered.
    pub decisions: u64,
    /// Refused by the active version, accepted by the candidate.
    pub flipped_to_accept: u64,
    /// Accepted by the active version, refused by the candidate.
    pub flipped_to_refuse: u64,
}

struct Findings {
    kind: PolicyKind,
    since_ms: u64,
    calls: u64,
    failures: u64,
    last_failure: Option<String>,
    dropped: u64,
    differing: u64,
    latency: CallStats,
    /// The candidate's own last multiplicators, which its charges use (as
    /// they would if it were active); the active's until it has some.
    own_multiplicators: Option<PriceMultiplicators>,
    pricing: PricingComparison,
    credits: BTreeMap<Arc<str>, (f64, f64)>,
    scheduling: SchedulingComparison,
    sharing: SharingComparison,
}

impl Shadow {
    /// Starts the candidate's thread. It ends when the shadow is dropped.
    pub(super) fn start(version: Arc<PolicyVersion>) -> std::io::Result<Arc<Shadow>> {
        let (jobs, queue) = sync_channel(QUEUE);
        let findings = Arc::new(Mutex::new(Findings {
            kind: version.info.kind,
            since_ms: now_ms(),
            calls: 0,
            failures: 0,
            last_failure: None,
            dropped: 0,
            differing: 0,
            latency: CallStats::default(),
            own_multiplicators: None,
            pricing: PricingComparison::default(),
            credits: BTreeMap::new(),
            scheduling: SchedulingComparison::default(),
            sharing: SharingComparison::default(),
        }));
        let worker = (version.clone(), findings.clone());
        std::thread::Builder::new()
            .name(format!("weft-shadow-{}", version.info.kind))
            .spawn(move || run(worker.0, worker.1, queue))?;
        Ok(Arc::new(Shadow {
            version,
            jobs,
            findings,
        }))
    }

    /// The candidate version.
    pub fn version(&self) -> &Arc<PolicyVersion> {
        &self.version
    }

    /// Hands a live call to the candidate, or counts it dropped if the
    /// candidate is behind. Never blocks.
    pub(super) fn offer(&self, job: Job) {
        if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) = self.jobs.try_send(job)
        {
            self.findings.lock().unwrap().dropped += 1;
            count(self.version.info.kind, "dropped");
        }
    }

    /// What the candidate found so far, with the comparison of its kind.
    pub fn report(&self) -> ShadowReport {
        let findings = self.findings.lock().unwrap();
        let kind = findings.kind;
        let mut pricing = findings.pricing.clone();
        pricing.projects = findings
            .credits
            .iter()
            .map(|(project, (active, shadow))| ProjectCredits {
                project: project.to_string(),
                active_credits: *active,
                shadow_credits: *shadow,
                difference: shadow - active,
            })
            .collect();
        ShadowReport {
            kind,
            shadow: self.version.info.clone(),
            since_ms: findings.since_ms,
            calls: findings.calls,
            failures: findings.failures,
            last_failure: findings.last_failure.clone(),
            dropped: findings.dropped,
            latency: findings.latency.cost(),
            differing: findings.differing,
            pricing: (kind == PolicyKind::Pricing).then_some(pricing),
            scheduling: (kind == PolicyKind::Scheduling).then(|| findings.scheduling.clone()),
            sharing: (kind == PolicyKind::Sharing).then(|| findings.sharing.clone()),
        }
    }
}

/// The candidate's thread: answers each job, then records the comparison.
fn run(version: Arc<PolicyVersion>, findings: Arc<Mutex<Findings>>, queue: Receiver<Job>) {
    for job in queue {
        let started = Instant::now();
        let own_multiplicators = findings.lock().unwrap().own_multiplicators;
        let answer = answer(&version, &job, own_multiplicators);
        let elapsed = started.elapsed().as_nanos() as u64;
        let mut findings = findings.lock().unwrap();
        match answer {
            Ok(answer) => {
                findings.calls += 1;
                findings.latency.record(elapsed);
                let differs = findings.compare(job, answer);
                if differs {
                    findings.differing += 1;
                }
                count(
                    version.info.kind,
                    if differs { "differing" } else { "same" },
                );
            }
            Err(error) => {
                findings.failures += 1;
                findings.last_failure = Some(error.to_string());
                count(version.info.kind, "failed");
                tracing::debug!(kind = %version.info.kind, policy = %version.info.name, %error, "the shadow policy failed a call");
            }
        }
    }
}

/// The candidate's answer to one job, checked as the active's would be.
enum Answer {
    Multiplicators(PriceMultiplicators),
    Charges(Vec<f64>),
    /// The placements, and whether the host would have accepted them.
    Placements(Placements, bool),
    Decision(Result<(), Rejection>),
}

fn answer(
    version: &PolicyVersion,
    job: &Job,
    own_multiplicators: Option<PriceMultiplicators>,
) -> Result<Answer, CallError> {
    Ok(match job {
        Job::Multiplicators { market, .. } => {
            let m = version.multiplicators(market)?;
            validate::multiplicators(&m).map_err(CallError::from)?;
            Answer::Multiplicators(m)
        }
        Job::Charge {
            usage,
            multiplicators,
            ..
        } => {
            let m = own_multiplicators.unwrap_or(*multiplicators);
            let charges = version.charge(usage, m)?;
            validate::charges(&charges, usage.seconds.len()).map_err(CallError::from)?;
            Answer::Charges(charges)
        }
        Job::Schedule { snapshot, .. } => {
            let placements = version.schedule(snapshot)?;
            let valid = validate::placements(snapshot, &placements).is_ok();
            Answer::Placements(placements, valid)
        }
        Job::Validate { admission, .. } => Answer::Decision(version.validate(admission)?),
    })
}

impl Findings {
    /// Records how the candidate's answer compares; true if it differs.
    fn compare(&mut self, job: Job, answer: Answer) -> bool {
        match (job, answer) {
            (Job::Multiplicators { active, .. }, Answer::Multiplicators(shadow)) => {
                self.own_multiplicators = Some(shadow);
                self.pricing.multiplicator_steps += 1;
                self.pricing.last_multiplicators = Some((active, shadow));
                let differs = active != shadow;
                self.pricing.multiplicators_differing += u64::from(differs);
                differs
            }
            (Job::Charge { active, rows, .. }, Answer::Charges(shadow)) => {
                self.pricing.charge_batches += 1;
                let mut differs = false;
                for ((project, containers), (a, s)) in rows.iter().zip(active.iter().zip(&shadow)) {
                    let containers = f64::from(*containers);
                    let (active_credits, shadow_credits) = (a * containers, s * containers);
                    differs |= a != s;
                    let known = self.credits.contains_key(project);
                    let key = if known || self.credits.len() < MAX_PROJECTS {
                        project.clone()
                    } else {
                        Arc::from(OTHER_PROJECTS)
                    };
                    let sums = self.credits.entry(key).or_insert((0.0, 0.0));
                    sums.0 += active_credits;
                    sums.1 += shadow_credits;
                    for (policy, credits) in
                        [("active", active_credits), ("shadow", shadow_credits)]
                    {
                        metrics()
                            .policy_shadow_credits
                            .get_or_create(&ShadowCreditLabels {
                                project: crate::metrics::label(project),
                                policy: policy.into(),
                            })
                            .inc_by(credits);
                    }
                }
                differs
            }
            (Job::Schedule { active, .. }, Answer::Placements(shadow, valid)) => {
                let scheduling = &mut self.scheduling;
                scheduling.rounds += 1;
                scheduling.invalid_rounds += u64::from(!valid);
                let differing = differing_containers(&active, &shadow);
                scheduling.differing_containers += differing;
                let differs = differing > 0 || !valid;
                scheduling.differing_rounds += u64::from(differs);
                differs
            }
            (Job::Validate { active, .. }, Answer::Decision(shadow)) => {
                let sharing = &mut self.sharing;
                sharing.decisions += 1;
                match (active.is_ok(), shadow.is_ok()) {
                    (false, true) => sharing.flipped_to_accept += 1,
                    (true, false) => sharing.flipped_to_refuse += 1,
                    _ => {}
                }
                active.is_ok() != shadow.is_ok()
            }
            // A job gets the answer of its own kind; anything else is ignored.
            _ => false,
        }
    }
}

/// Containers placed differently: on another node, or by one version and
/// not the other (from the (ask, node) counts each placed).
fn differing_containers(a: &Placements, b: &Placements) -> u64 {
    let mut counts: BTreeMap<(u32, u32), i64> = BTreeMap::new();
    for (placements, sign) in [(a, 1), (b, -1)] {
        for i in 0..placements
            .ask
            .len()
            .min(placements.node.len())
            .min(placements.count.len())
        {
            *counts
                .entry((placements.ask[i], placements.node[i]))
                .or_insert(0) += sign * i64::from(placements.count[i]);
        }
    }
    let more: u64 = counts
        .values()
        .filter(|c| **c > 0)
        .map(|c| c.unsigned_abs())
        .sum();
    let fewer: u64 = counts
        .values()
        .filter(|c| **c < 0)
        .map(|c| c.unsigned_abs())
        .sum();
    more.max(fewer)
}

fn count(kind: PolicyKind, outcome: &str) {
    metrics()
        .policy_shadow_calls
        .get_or_create(&OutcomeLabels {
            kind: kind.as_str().into(),
            outcome: outcome.into(),
        })
        .inc();
}

/// A typed slot's shadow, if one runs.
#[derive(Debug, Default)]
pub struct ShadowSlot(ArcSwapOption<Shadow>);

impl ShadowSlot {
    pub(super) fn set(&self, shadow: Arc<Shadow>) {
        self.0.store(Some(shadow));
    }

    pub(super) fn take(&self) -> Option<Arc<Shadow>> {
        self.0.swap(None)
    }

    /// The running shadow, if any.
    pub fn get(&self) -> Option<Arc<Shadow>> {
        self.0.load_full()
    }

    /// Offers a call to the shadow, if one runs; `job` is only built then.
    pub(super) fn offer(&self, job: impl FnOnce() -> Job) {
        if let Some(shadow) = self.0.load().as_ref() {
            shadow.offer(job());
        }
    }

    /// Whether a shadow runs.
    pub fn running(&self) -> bool {
        self.0.load().is_some()
    }
}
