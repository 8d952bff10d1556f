//! `weft simulate`: a scenario on the virtual clock, through the real
//! cluster model, scheduler, quota service and policies — the same
//! `ResourceManager` `serve` runs, driven by virtual time instead of tokio
//! timers, so a simulated day takes seconds.
//!
//! A scenario (TOML or JSON) gives nodes, queues, apps, reservations,
//! optional policies and settings, and the times to observe; see
//! docs/simulate.md.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::clock::{Clock, VirtualClock};
use crate::cluster::{AskSpec, NodeKind, Resources, SubmitApp};
use crate::config::Settings;
use crate::policy::{CallCost, PolicyKind, PolicyRuntime, PolicySource};
use crate::quota::QuotaService;
use crate::reservation::ReservationDefinition;
use crate::reservation::definition::ReservationSubmissionRequest;
use crate::rm::ResourceManager;
use crate::scheduler::diagnostics;
use crate::store::Store;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Node groups: `count` nodes of one size.
    pub nodes: Vec<NodeGroup>,
    #[serde(default)]
    pub queues: QueueSpec,
    #[serde(default)]
    pub policies: PolicySpec,
    /// Properties, as `--set` takes them.
    #[serde(default)]
    pub settings: BTreeMap<String, String>,
    /// Virtual ms at which to record each queue's and user's use.
    #[serde(default)]
    pub observe_at_ms: Vec<u64>,
    /// How often the scheduler runs, in virtual ms (a node heartbeat).
    #[serde(default = "default_scheduling_interval")]
    pub scheduling_interval_ms: u64,
    /// Stop here even if apps are unfinished (default: when all finish).
    #[serde(default)]
    pub end_ms: Option<u64>,
    pub apps: Vec<ScenarioApp>,
    /// Reservations, submitted at their times through the reservation
    /// system as the REST API submits them.
    #[serde(default)]
    pub reservations: Vec<ScenarioReservation>,
}

/// A reservation of the scenario: YARN's definition in Weft's field names.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioReservation {
    /// How apps name it (`reservation = NAME`); also its reservation-name.
    pub name: String,
    pub submit_ms: u64,
    pub user: String,
    /// The reservable queue.
    pub queue: String,
    pub arrival_ms: u64,
    pub deadline_ms: u64,
    /// R_ANY, R_ALL (default), R_ORDER or R_ORDER_NO_GAP.
    #[serde(default = "default_interpreter")]
    pub interpreter: String,
    /// A recurring reservation's period in ms.
    #[serde(default)]
    pub recurrence_ms: Option<u64>,
    pub requests: Vec<ScenarioRequest>,
}

fn default_interpreter() -> String {
    "R_ALL".into()
}

/// `count` containers of one size for `duration_ms`, at least
/// `min_concurrency` at once (default: all of them).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioRequest {
    pub count: u32,
    pub memory_mb: u64,
    pub vcores: u32,
    #[serde(default)]
    pub gpus: u32,
    pub duration_ms: u64,
    #[serde(default)]
    pub min_concurrency: Option<u32>,
}

impl ScenarioReservation {
    /// The definition YARN's REST API would carry.
    fn definition(&self) -> Result<ReservationDefinition, String> {
        let requests: Vec<serde_json::Value> = self
            .requests
            .iter()
            .map(|r| {
                serde_json::json!({
                    "capability": {"memory": r.memory_mb, "vCores": r.vcores, "gpus": r.gpus},
                    "num-containers": r.count,
                    "min-concurrency": r.min_concurrency.unwrap_or(r.count),
                    "duration": r.duration_ms,
                })
            })
            .collect();
        let mut definition = serde_json::json!({
            "arrival": self.arrival_ms,
            "deadline": self.deadline_ms,
            "reservation-name": self.name,
            "reservation-requests": {
                "reservation-request-interpreter": self.interpreter,
                "reservation-request": requests,
            },
        });
        if let Some(period) = self.recurrence_ms {
            definition["recurrence-expression"] = serde_json::json!(period.to_string());
        }
        serde_json::from_value(definition).map_err(|e| e.to_string())
    }
}

fn default_scheduling_interval() -> u64 {
    1000
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeGroup {
    pub count: u32,
    pub memory_mb: u64,
    pub vcores: u32,
    #[serde(default)]
    pub gpus: u32,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueSpec {
    /// A capacity-scheduler.xml or TOML file, relative to the scenario.
    pub file: Option<PathBuf>,
    /// `yarn.scheduler.capacity.*` properties inline.
    #[serde(default)]
    pub properties: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySpec {
    pub scheduling: Option<String>,
    #[serde(default)]
    pub scheduling_params: BTreeMap<String, String>,
    pub pricing: Option<String>,
    #[serde(default)]
    pub pricing_params: BTreeMap<String, String>,
    pub sharing: Option<String>,
    #[serde(default)]
    pub sharing_params: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioApp {
    pub submit_ms: u64,
    #[serde(default)]
    pub name: Option<String>,
    pub user: String,
    #[serde(default = "default_queue")]
    pub queue: String,
    #[serde(default = "default_project")]
    pub project: String,
    #[serde(default)]
    pub priority: i32,
    pub asks: Vec<AskSpec>,
    /// The scenario reservation (by name) it runs in.
    #[serde(default)]
    pub reservation: Option<String>,
}

fn default_queue() -> String {
    "default".into()
}

fn default_project() -> String {
    "default".into()
}

#[derive(Debug, thiserror::Error)]
pub enum SimulateError {
    #[error("cannot read scenario {path}: {reason}")]
    Read { path: String, reason: String },
    #[error("scenario {path}: {reason}")]
    Invalid { path: String, reason: String },
}

/// The summary `weft simulate` prints.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub end_ms: u64,
    pub apps_submitted: usize,
    pub apps_finished: usize,
    pub observations: Vec<Observation>,
    /// Per leaf queue: from submission to first container, in ms.
    pub wait_time_ms: BTreeMap<String, WaitStats>,
    /// Cluster utilization (allocated over capacity) at every QUOTA_COMPUTE.
    pub utilization: Vec<UtilizationSample>,
    /// Credits charged per project.
    pub credits: BTreeMap<String, f64>,
    pub policies: BTreeMap<String, PolicyCost>,
    /// Each reservation: admitted or refused (why), and how its apps did.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reservations: Vec<ReservationOutcome>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ReservationOutcome {
    pub name: String,
    pub user: String,
    pub queue: String,
    pub submit_ms: u64,
    pub admitted: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reservation_id: Option<String>,
    /// Why it was refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Where the agent placed it: (start, end) of its first occurrence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placed_ms: Option<(i64, i64)>,
    pub deadline_ms: u64,
    /// Apps submitted into it, and how many of them finished by its deadline.
    pub apps: usize,
    pub apps_finished: usize,
    pub apps_met_deadline: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_finish_ms: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Observation {
    pub t_ms: u64,
    pub queues: Vec<QueueUse>,
    pub users: Vec<UserUse>,
    pub pending_apps: Vec<PendingApp>,
}

#[derive(Debug, Clone, Serialize)]
pub struct QueueUse {
    pub queue: String,
    pub used: Resources,
    /// Dominant share of the cluster, in percent.
    pub absolute_used_percent: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct UserUse {
    pub queue: String,
    pub user: String,
    pub used: Resources,
}

#[derive(Debug, Clone, Serialize)]
pub struct PendingApp {
    pub id: String,
    pub queue: String,
    pub user: String,
    pub pending_containers: u64,
    pub reason: String,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct WaitStats {
    pub apps: usize,
    pub mean: f64,
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct UtilizationSample {
    pub t_ms: u64,
    pub memory: f64,
    pub vcores: f64,
    pub gpus: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct PolicyCost {
    pub policy: String,
    #[serde(flatten)]
    pub cost: CallCost,
}

impl Scenario {
    pub fn from_file(path: &Path) -> Result<(Scenario, PathBuf), SimulateError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| SimulateError::Read {
            path: shown.clone(),
            reason: e.to_string(),
        })?;
        let scenario: Scenario = match path.extension().and_then(|e| e.to_str()) {
            Some("json") => serde_json::from_str(&text).map_err(|e| e.to_string()),
            _ => toml::from_str(&text).map_err(|e| e.to_string()),
        }
        .map_err(|reason| SimulateError::Invalid {
            path: shown,
            reason,
        })?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Ok((scenario, base))
    }
}

/// Runs `scenario` (its relative paths from `base`) with `overrides` on top
/// of its settings. `progress` is told of each finished app.
pub fn run(
    scenario: &Scenario,
    base: &Path,
    overrides: &[String],
    progress: &dyn Fn(usize, usize),
) -> anyhow::Result<Summary> {
    let mut assignments: Vec<String> = scenario
        .settings
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    assignments.extend(
        scenario
            .queues
            .properties
            .iter()
            .map(|(k, v)| format!("{k}={v}")),
    );
    assignments.extend_from_slice(overrides);
    let settings = Settings::load(None, &assignments)?;
    let queue_file = scenario.queues.file.as_ref().map(|f| base.join(f));
    let queues = crate::queues::load(queue_file.as_deref(), &settings.queue_properties)?;

    // The policies read the virtual clock the scenario runs on.
    let clock = VirtualClock::starting_at(0);
    let policies = Arc::new(PolicyRuntime::from_settings(
        &settings,
        Arc::new(clock.clone()),
    )?);
    let choices = [
        (
            PolicyKind::Scheduling,
            &scenario.policies.scheduling,
            &scenario.policies.scheduling_params,
            &settings.policies.scheduling,
        ),
        (
            PolicyKind::Pricing,
            &scenario.policies.pricing,
            &scenario.policies.pricing_params,
            &settings.policies.pricing,
        ),
        (
            PolicyKind::Sharing,
            &scenario.policies.sharing,
            &scenario.policies.sharing_params,
            &settings.policies.sharing,
        ),
    ];
    for (kind, choice, params, configured) in choices {
        let text = choice.clone().unwrap_or_else(|| configured.clone());
        let source = match PolicySource::parse(&text) {
            PolicySource::File(path) => PolicySource::File(base.join(path)),
            builtin => builtin,
        };
        let params: Vec<(String, String)> =
            params.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        policies
            .load(kind, &source, &params)
            .map_err(|e| anyhow::anyhow!("cannot load the {kind} policy {source}: {e}"))?;
    }

    let quota = QuotaService::open(settings.quota, Store::in_memory())?;
    let mut rm = ResourceManager::new(
        &settings,
        queues,
        quota,
        Store::in_memory(),
        policies.clone(),
        Arc::new(
            crate::security::Security::from_settings(&settings.security)
                .map_err(anyhow::Error::msg)?,
        ),
        Arc::new(clock.clone()),
    )?;
    let mut node_number = 0;
    for group in &scenario.nodes {
        for _ in 0..group.count {
            node_number += 1;
            let capacity = Resources::new(group.memory_mb, group.vcores, group.gpus);
            rm.cluster
                .register_node(
                    &format!("node-{node_number:05}"),
                    NodeKind::Simulated,
                    capacity,
                    crate::rm::SIMULATED_OWNER,
                    0,
                )
                .map_err(|e| anyhow::anyhow!("node group {group:?}: {e}"))?;
        }
    }

    let mut apps: Vec<&ScenarioApp> = scenario.apps.iter().collect();
    apps.sort_by_key(|a| a.submit_ms);
    let mut reservations: Vec<&ScenarioReservation> = scenario.reservations.iter().collect();
    reservations.sort_by_key(|r| r.submit_ms);
    let mut outcomes: Vec<ReservationOutcome> = Vec::new();
    // Scenario name → index in `outcomes`.
    let mut by_name: BTreeMap<String, usize> = BTreeMap::new();
    // Cluster app id → scenario reservation name.
    let mut reserved_apps: Vec<(String, String)> = Vec::new();
    let mut next_reservation = 0;
    let quota_settings = settings.quota;
    let mut timers = Timers {
        scheduling: Every::new(scenario.scheduling_interval_ms),
        quota: Every::new(quota_settings.scheduling_period_ms),
        multiplicator: Every::new(quota_settings.multiplicator_interval_ms),
    };
    let mut observe: Vec<u64> = scenario.observe_at_ms.clone();
    observe.sort_unstable();
    observe.dedup();
    let mut observe = observe.into_iter().peekable();
    let mut summary = Summary {
        end_ms: 0,
        apps_submitted: 0,
        apps_finished: 0,
        observations: Vec::new(),
        wait_time_ms: BTreeMap::new(),
        utilization: Vec::new(),
        credits: BTreeMap::new(),
        policies: BTreeMap::new(),
        reservations: Vec::new(),
    };
    let mut next_app = 0;
    loop {
        let finished = rm
            .cluster
            .apps()
            .iter()
            .filter(|a| a.state == crate::cluster::AppState::Finished)
            .count();
        progress(finished, apps.len());
        let all_done = next_app == apps.len()
            && next_reservation == reservations.len()
            && rm.cluster.active_apps().next().is_none();
        let next = [
            apps.get(next_app).map(|a| a.submit_ms),
            reservations.get(next_reservation).map(|r| r.submit_ms),
            Some(timers.scheduling.next),
            Some(timers.quota.next),
            Some(timers.multiplicator.next),
            observe.peek().copied(),
        ]
        .into_iter()
        .flatten()
        .min()
        .expect("timers always have a next time");
        let past_end = scenario.end_ms.is_some_and(|end| next > end);
        if (all_done && observe.peek().is_none()) || past_end {
            break;
        }
        clock.advance_to(next);
        while let Some(reservation) = reservations
            .get(next_reservation)
            .filter(|r| r.submit_ms <= next)
        {
            if by_name.contains_key(&reservation.name) {
                anyhow::bail!(
                    "two reservations of the scenario are named {:?}",
                    reservation.name
                );
            }
            by_name.insert(reservation.name.clone(), outcomes.len());
            outcomes.push(submit_reservation(&mut rm, reservation, next, &policies)?);
            next_reservation += 1;
        }
        while let Some(app) = apps.get(next_app).filter(|a| a.submit_ms <= next) {
            let reservation_id = match &app.reservation {
                None => None,
                Some(name) => {
                    let outcome = by_name.get(name).map(|&i| &outcomes[i]).ok_or_else(|| {
                        anyhow::anyhow!(
                            "app {} of the scenario names reservation {name:?}, which is not submitted before it",
                            next_app + 1
                        )
                    })?;
                    // A refused reservation's apps run in the queue as any other.
                    outcome.reservation_id.clone()
                }
            };
            let request = SubmitApp {
                name: app
                    .name
                    .clone()
                    .unwrap_or_else(|| format!("{}-{}", app.user, next_app + 1)),
                queue: app.queue.clone(),
                user: app.user.clone(),
                project: app.project.clone(),
                priority: app.priority,
                asks: app.asks.clone(),
                reservation_id,
            };
            rm.check_app_reservation(&request)
                .map_err(|e| anyhow::anyhow!("app {} of the scenario: {e}", next_app + 1))?;
            let submitted = rm
                .cluster
                .submit(request, "simulate", next)
                .map_err(|e| anyhow::anyhow!("app {} of the scenario: {e}", next_app + 1))?;
            if let Some(name) = &app.reservation {
                reserved_apps.push((submitted.id.clone(), name.clone()));
            }
            next_app += 1;
        }
        if timers.scheduling.due(next) {
            rm.scheduling_round();
        }
        if timers.multiplicator.due(next) {
            rm.multiplicator_step();
        }
        if timers.quota.due(next) {
            rm.quota_compute();
            summary.utilization.push(utilization(&rm, next));
        }
        if observe.peek() == Some(&next) {
            observe.next();
            summary.observations.push(observation(&rm, next));
        }
        rm.flush_quota();
    }
    let end = clock.now_ms();
    rm.shutdown();
    summary.end_ms = end;
    summary.apps_submitted = rm.cluster.apps().len();
    summary.apps_finished = rm
        .cluster
        .apps()
        .iter()
        .filter(|a| a.state == crate::cluster::AppState::Finished)
        .count();
    summary.wait_time_ms = wait_times(&rm);
    for (app_id, name) in reserved_apps {
        let outcome = &mut outcomes[by_name[&name]];
        outcome.apps += 1;
        let finished = rm
            .cluster
            .app(&app_id)
            .filter(|a| a.state == crate::cluster::AppState::Finished)
            .and_then(|a| a.finish_time_ms);
        if let Some(at) = finished {
            outcome.apps_finished += 1;
            outcome.apps_met_deadline += usize::from(at <= outcome.deadline_ms);
            outcome.last_finish_ms = outcome.last_finish_ms.max(Some(at));
        }
    }
    summary.reservations = outcomes;
    summary.credits = rm
        .quota
        .ledger()
        .projects()
        .iter()
        .map(|(p, q)| (p.clone(), q.total_used))
        .collect();
    for kind in PolicyKind::ALL {
        let slot = policies.slot(kind);
        let policy = slot
            .active()
            .map(|v| v.info.name.clone())
            .unwrap_or_default();
        summary.policies.insert(
            kind.to_string(),
            PolicyCost {
                policy,
                cost: slot.cost(),
            },
        );
    }
    Ok(summary)
}

/// Submits a scenario reservation as the REST API would (a new id, then
/// submit), and records whether it was admitted.
fn submit_reservation(
    rm: &mut ResourceManager,
    reservation: &ScenarioReservation,
    now: u64,
    policies: &PolicyRuntime,
) -> anyhow::Result<ReservationOutcome> {
    let definition = reservation
        .definition()
        .map_err(|e| anyhow::anyhow!("reservation {:?} of the scenario: {e}", reservation.name))?;
    let mut outcome = ReservationOutcome {
        name: reservation.name.clone(),
        user: reservation.user.clone(),
        queue: reservation.queue.clone(),
        submit_ms: reservation.submit_ms,
        admitted: false,
        reservation_id: None,
        reason: None,
        placed_ms: None,
        deadline_ms: reservation.deadline_ms,
        apps: 0,
        apps_finished: 0,
        apps_met_deadline: 0,
        last_finish_ms: None,
    };
    rm.reservations.refresh_capacities(&rm.cluster);
    let id = rm.reservations.new_reservation()?;
    let request = ReservationSubmissionRequest {
        queue: reservation.queue.clone(),
        reservation_id: id.to_string(),
        reservation_definition: definition,
    };
    let sharing = policies.slot(PolicyKind::Sharing);
    match rm
        .reservations
        .submit(sharing, &request, &reservation.user, now)
    {
        Ok(accepted) => {
            outcome.admitted = true;
            outcome.reservation_id = Some(accepted.reservation_id.to_string());
            outcome.placed_ms = accepted
                .allocations
                .iter()
                .map(|a| (a.start_ms, a.end_ms))
                .reduce(|(s1, e1), (s2, e2)| (s1.min(s2), e1.max(e2)));
        }
        Err(error) => outcome.reason = Some(error.to_string()),
    }
    Ok(outcome)
}

struct Timers {
    scheduling: Every,
    quota: Every,
    multiplicator: Every,
}

/// A timer firing every `period` ms of virtual time, first at `period`.
struct Every {
    period: u64,
    next: u64,
}

impl Every {
    fn new(period: u64) -> Every {
        let period = period.max(1);
        Every {
            period,
            next: period,
        }
    }

    /// Whether the timer fires at `now`; if so it is re-armed.
    fn due(&mut self, now: u64) -> bool {
        if now < self.next {
            return false;
        }
        self.next = now + self.period;
        true
    }
}

fn utilization(rm: &ResourceManager, t_ms: u64) -> UtilizationSample {
    let (memory, vcores, gpus) = rm.cluster.allocated().fractions_of(&rm.cluster.capacity());
    UtilizationSample {
        t_ms,
        memory,
        vcores,
        gpus,
    }
}

fn observation(rm: &ResourceManager, t_ms: u64) -> Observation {
    let cluster = &rm.cluster;
    let tree = cluster.queues().queues();
    let capacity = cluster.capacity();
    let used = diagnostics::queue_usage(cluster);
    let mut users: BTreeMap<(usize, String), Resources> = BTreeMap::new();
    let mut pending_apps = Vec::new();
    for index in cluster.active_apps() {
        let app = &cluster.apps()[index];
        *users
            .entry((app.queue_index, app.user.clone()))
            .or_default() += app.used;
        if let Some(diagnosis) = rm.diagnose(index, &used) {
            pending_apps.push(PendingApp {
                id: app.id.clone(),
                queue: app.queue.clone(),
                user: app.user.clone(),
                pending_containers: app.pending_containers(),
                reason: diagnosis.reason,
            });
        }
    }
    let queues = tree
        .iter()
        .zip(&used)
        .map(|(q, used)| {
            let (m, v, g) = used.fractions_of(&capacity);
            QueueUse {
                queue: q.path.clone(),
                used: *used,
                absolute_used_percent: m.max(v).max(g) * 100.0,
            }
        })
        .collect();
    let users = users
        .into_iter()
        .filter(|(_, used)| !used.is_zero())
        .map(|((queue, user), used)| UserUse {
            queue: tree[queue].path.clone(),
            user,
            used,
        })
        .collect();
    Observation {
        t_ms,
        queues,
        users,
        pending_apps,
    }
}

fn wait_times(rm: &ResourceManager) -> BTreeMap<String, WaitStats> {
    let mut waits: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for app in rm.cluster.apps() {
        if let Some(start) = app.start_time_ms {
            waits
                .entry(app.queue.clone())
                .or_default()
                .push(start - app.submit_time_ms);
        }
    }
    waits
        .into_iter()
        .map(|(queue, mut w)| {
            w.sort_unstable();
            let at = |q: f64| w[((w.len() - 1) as f64 * q).round() as usize];
            let stats = WaitStats {
                apps: w.len(),
                mean: w.iter().sum::<u64>() as f64 / w.len() as f64,
                p50: at(0.5),
                p99: at(0.99),
                max: *w.last().expect("not empty"),
            };
            (queue, stats)
        })
        .collect()
}
