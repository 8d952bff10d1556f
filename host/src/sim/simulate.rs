//! `weft simulate`: a scenario on the virtual clock, through the real
//! cluster model, scheduler, quota service and policies — the same
//! `ResourceManager` `serve` runs, driven by virtual time instead of tokio
//! timers, so a simulated day takes seconds.
//!
//! A scenario (TOML or JSON) gives nodes, queues, apps, reservations,
//! optional policies and settings, and the times to observe; see
//! docs/simulate.md. It is checked against the documented maxima
//! (`crate::limits`) before anything runs, and refused if it could never
//! finish (apps but no nodes, an ask no node can hold).
//!
//! Idle time is jumped over: while nothing runs the cluster cannot change
//! until the next submission or reservation boundary, so the timers skip
//! to it on their phase; while containers run and nothing is pending,
//! scheduling rounds skip to the next container end. A run that nothing
//! could ever move on (apps pending that no round places, nothing running,
//! nothing left to submit or to start) stops with an error naming the apps.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::clock::{Clock, VirtualClock};
use crate::cluster::{AskSpec, SubmitApp};
use crate::config::Settings;
use crate::limits::{
    self, MAX_ASKS_PER_APP, MAX_CONTAINERS_PER_ASK, MAX_DURATION_MS, MAX_GPUS, MAX_MEMORY_MB,
    MAX_NODES, MAX_TIME_MS, MAX_VCORES, OutOfBounds,
};
use crate::policy::{CallCost, PolicyKind, PolicyRuntime, PolicySource};
use crate::reservation::ReservationDefinition;
use crate::reservation::definition::ReservationSubmissionRequest;
use crate::resources::Resources;
use crate::rm::ResourceManager;
use crate::rm::assemble::{Parts, assemble};
use crate::rm::policy_load::{Component, LoadRight, PolicyLoad, Target};
use crate::rm::timers::{Every, Timer, Timers};
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
    /// Apps refused at submission because their project had no credits
    /// left (`weft.quota.budget.enforce`), and the first refusal.
    #[serde(skip_serializing_if = "is_zero")]
    pub apps_refused_over_budget: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_budget_refusal: Option<String>,
}

fn is_zero(count: &usize) -> bool {
    *count == 0
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

    /// Checks every time, duration, count, resource and name against the
    /// documented maxima, that apps name reservations submitted before
    /// them, and that the scenario can finish: apps need nodes, and every
    /// ask a node it fits on. Reservations' other rules (arrival before
    /// deadline, minimum sizes) are the reservation system's: a reservation
    /// breaking them is refused in the summary, as the REST API refuses it.
    pub fn check(&self) -> Result<(), String> {
        self.check_bounds().map_err(|e| e.to_string())?;
        let mut reservations: HashMap<&str, u64> = HashMap::new();
        for r in &self.reservations {
            if reservations.insert(&r.name, r.submit_ms).is_some() {
                return Err(format!(
                    "two reservations of the scenario are named {:?}",
                    r.name
                ));
            }
        }
        for (index, app) in self.apps.iter().enumerate() {
            let Some(name) = &app.reservation else {
                continue;
            };
            // At one instant reservations are submitted before apps.
            if reservations
                .get(name.as_str())
                .is_none_or(|&at| at > app.submit_ms)
            {
                return Err(format!(
                    "{} names reservation {name:?}, which the scenario does not submit by its submit_ms ({})",
                    app_label(index, app),
                    app.submit_ms
                ));
            }
        }
        self.check_fits()
    }

    fn check_bounds(&self) -> Result<(), OutOfBounds> {
        limits::within(
            "scheduling_interval_ms",
            self.scheduling_interval_ms,
            1,
            MAX_DURATION_MS,
        )?;
        if let Some(end) = self.end_ms {
            limits::within("end_ms", end, 0, MAX_TIME_MS)?;
        }
        for (i, &t) in self.observe_at_ms.iter().enumerate() {
            limits::within(format_args!("observe_at_ms[{i}]"), t, 0, MAX_TIME_MS)?;
        }
        let mut nodes: usize = 0;
        for (i, group) in self.nodes.iter().enumerate() {
            let field = |name: &str| format!("nodes[{i}].{name}");
            limits::within(field("count"), group.count as usize, 0, MAX_NODES)?;
            limits::within(field("memory_mb"), group.memory_mb, 1, MAX_MEMORY_MB)?;
            limits::within(field("vcores"), group.vcores, 1, MAX_VCORES)?;
            limits::within(field("gpus"), group.gpus, 0, MAX_GPUS)?;
            // Each count is at most MAX_NODES, so the sum cannot overflow
            // before it is refused; saturating all the same.
            nodes = nodes.saturating_add(group.count as usize);
        }
        limits::within("the nodes of all groups", nodes, 0, MAX_NODES)?;
        for (index, app) in self.apps.iter().enumerate() {
            let label = app_label(index, app);
            limits::within(
                format_args!("{label}: submit_ms"),
                app.submit_ms,
                0,
                MAX_TIME_MS,
            )?;
            if let Some(name) = &app.name {
                limits::name(format_args!("{label}: name"), name)?;
            }
            limits::name(format_args!("{label}: user"), &app.user)?;
            limits::name(format_args!("{label}: queue"), &app.queue)?;
            limits::name(format_args!("{label}: project"), &app.project)?;
            limits::within(
                format_args!("{label}: the number of asks"),
                app.asks.len(),
                1,
                MAX_ASKS_PER_APP,
            )?;
            for (j, ask) in app.asks.iter().enumerate() {
                let field = |name: &str| format!("{label}: asks[{j}].{name}");
                limits::within(field("count"), ask.count, 1, MAX_CONTAINERS_PER_ASK)?;
                limits::within(field("memory_mb"), ask.memory_mb, 1, MAX_MEMORY_MB)?;
                limits::within(field("vcores"), ask.vcores, 1, MAX_VCORES)?;
                limits::within(field("gpus"), ask.gpus, 0, MAX_GPUS)?;
                if let Some(duration_ms) = ask.duration_ms {
                    limits::within(field("duration_ms"), duration_ms, 1, MAX_DURATION_MS)?;
                }
            }
        }
        for r in &self.reservations {
            let label = format!("reservation {:?}", r.name);
            limits::name("reservation name", &r.name)?;
            limits::name(format_args!("{label}: user"), &r.user)?;
            limits::name(format_args!("{label}: queue"), &r.queue)?;
            for (field, t) in [
                ("submit_ms", r.submit_ms),
                ("arrival_ms", r.arrival_ms),
                ("deadline_ms", r.deadline_ms),
                ("recurrence_ms", r.recurrence_ms.unwrap_or(0)),
            ] {
                limits::within(format_args!("{label}: {field}"), t, 0, MAX_TIME_MS)?;
            }
            limits::at_most(
                format_args!("{label}: requests"),
                r.requests.len(),
                MAX_ASKS_PER_APP,
            )?;
            for (j, request) in r.requests.iter().enumerate() {
                let field = |name: &str| format!("{label}: requests[{j}].{name}");
                let count = request.count;
                limits::within(field("count"), count, 0, MAX_CONTAINERS_PER_ASK)?;
                let concurrency = request.min_concurrency.unwrap_or(count);
                limits::within(
                    field("min_concurrency"),
                    concurrency,
                    0,
                    MAX_CONTAINERS_PER_ASK,
                )?;
                limits::within(field("memory_mb"), request.memory_mb, 0, MAX_MEMORY_MB)?;
                limits::within(field("vcores"), request.vcores, 0, MAX_VCORES)?;
                limits::within(field("gpus"), request.gpus, 0, MAX_GPUS)?;
                limits::within(
                    field("duration_ms"),
                    request.duration_ms,
                    0,
                    MAX_DURATION_MS,
                )?;
            }
        }
        Ok(())
    }

    /// Apps need nodes, and each ask a node it fits on: otherwise the run
    /// could never finish.
    fn check_fits(&self) -> Result<(), String> {
        let sizes: BTreeSet<(u64, u32, u32)> = self
            .nodes
            .iter()
            .filter(|g| g.count > 0)
            .map(|g| (g.memory_mb, g.vcores, g.gpus))
            .collect();
        if let Some(app) = self.apps.first()
            && sizes.is_empty()
        {
            return Err(format!(
                "the scenario has no nodes, but {} (and every other app) asks for containers: add [[nodes]]",
                app_label(0, app)
            ));
        }
        let most = sizes.iter().fold((0, 0, 0), |(m, v, g), &(nm, nv, ng)| {
            (m.max(nm), v.max(nv), g.max(ng))
        });
        // Many asks share a size (an SLS trace has one per task): each size
        // is looked for among the node sizes once.
        let mut fits: HashMap<(u64, u32, u32), bool> = HashMap::new();
        for (index, app) in self.apps.iter().enumerate() {
            for (j, ask) in app.asks.iter().enumerate() {
                let size = (ask.memory_mb, ask.vcores, ask.gpus);
                let fits = *fits.entry(size).or_insert_with(|| {
                    sizes
                        .iter()
                        .any(|&(m, v, g)| m >= size.0 && v >= size.1 && g >= size.2)
                });
                if !fits {
                    return Err(format!(
                        "{}: asks[{j}] ({} MB, {} vcores, {} GPUs) is larger than every node (the nodes offer at most {} MB, {} vcores, {} GPUs)",
                        app_label(index, app),
                        size.0,
                        size.1,
                        size.2,
                        most.0,
                        most.1,
                        most.2
                    ));
                }
            }
        }
        Ok(())
    }
}

impl Scenario {
    /// Refuses a scenario whose work cannot be done in time. Its containers
    /// take at least their work (containers × duration × size, per resource)
    /// over the cluster's capacity, run back to back; while any runs,
    /// QUOTA_COMPUTE fires every `quota_period_ms`. Without `end_ms`, a run
    /// that could not end before the year 9999, or would need more than
    /// [`MAX_STEPS`] of those firings, is refused up front.
    pub fn check_work(&self, quota_period_ms: u64) -> Result<(), String> {
        if self.end_ms.is_some() {
            return self.check_end_steps();
        }
        // u128: each product is below 2^17 × 2^35 × 2^30, and sums of
        // MAX_ASKS_PER_APP of them per app stay far below 2^128.
        let mut capacity = [0u128; 3];
        for group in &self.nodes {
            let count = u128::from(group.count);
            capacity[0] += count * u128::from(group.memory_mb);
            capacity[1] += count * u128::from(group.vcores);
            capacity[2] += count * u128::from(group.gpus);
        }
        let mut work = [0u128; 3];
        for ask in self.apps.iter().flat_map(|a| &a.asks) {
            let duration_ms = ask
                .duration_ms
                .unwrap_or(crate::cluster::SIMULATED_COMMAND_MS);
            let time = u128::from(ask.count) * u128::from(duration_ms);
            work[0] += time * u128::from(ask.memory_mb);
            work[1] += time * u128::from(ask.vcores);
            work[2] += time * u128::from(ask.gpus);
        }
        let makespan_ms = (0..3)
            .filter(|&r| capacity[r] > 0)
            .map(|r| work[r] / capacity[r])
            .max()
            .unwrap_or(0);
        let first = self.apps.iter().map(|a| a.submit_ms).min().unwrap_or(0);
        let end = u128::from(first) + makespan_ms;
        if end > u128::from(MAX_TIME_MS) {
            return Err(format!(
                "the scenario's containers need at least {makespan_ms} ms of the whole cluster \
                 (their work over its capacity) from t={first} ms: they cannot finish before \
                 the year 9999; add nodes, shorten them, or set end_ms"
            ));
        }
        let computes = makespan_ms / u128::from(quota_period_ms.max(1));
        if computes > u128::from(MAX_STEPS) {
            return Err(format!(
                "the scenario's containers need at least {makespan_ms} ms of the whole cluster, \
                 {computes} QUOTA_COMPUTEs at yarn.resourcemanager.quota.scheduling.period = \
                 {quota_period_ms} ms; a run visits at most {MAX_STEPS} instants: set a longer \
                 period, add nodes, or set end_ms"
            ));
        }
        Ok(())
    }

    /// With `end_ms`, the rounds up to it are bounded by the interval.
    fn check_end_steps(&self) -> Result<(), String> {
        let end = self.end_ms.unwrap_or(0);
        let rounds = end / self.scheduling_interval_ms.max(1);
        if rounds > MAX_STEPS {
            return Err(format!(
                "end_ms {end} at a scheduling_interval_ms of {} is {rounds} rounds; a run visits \
                 at most {MAX_STEPS} instants: set a longer interval or an earlier end",
                self.scheduling_interval_ms
            ));
        }
        Ok(())
    }
}

/// How refusals name an app: its place in the scenario (from 1) and its
/// name, if it has one.
fn app_label(index: usize, app: &ScenarioApp) -> String {
    match &app.name {
        Some(name) => format!("app {} ({name:?})", index + 1),
        None => format!("app {}", index + 1),
    }
}

/// The most instants a run visits (each a submission, an observation or
/// timers due): a step costs microseconds to milliseconds with the
/// scenario's size; beyond it a scenario is refused rather than left to run.
pub const MAX_STEPS: u64 = 10_000_000;

/// Runs `scenario` (its relative paths from `base`) with `overrides` on top
/// of its settings. `progress` is told of each finished app.
pub fn run(
    scenario: &Scenario,
    base: &Path,
    overrides: &[String],
    progress: &dyn Fn(usize, usize),
) -> anyhow::Result<Summary> {
    simulate(scenario, base, overrides, progress, true)
}

/// [`run`]; `jump_idle` false fires every timer (and never finds a run
/// stuck), as the tests' reference for what jumping must give.
fn simulate(
    scenario: &Scenario,
    base: &Path,
    overrides: &[String],
    progress: &dyn Fn(usize, usize),
    jump_idle: bool,
) -> anyhow::Result<Summary> {
    scenario.check().map_err(anyhow::Error::msg)?;
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
    let mut settings = Settings::load(None, &assignments)?;
    // The summary reports on every app: keep them all.
    settings.max_completed_applications = usize::MAX;
    scenario
        .check_work(settings.quota.scheduling_period_ms)
        .map_err(anyhow::Error::msg)?;
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
        let load = PolicyLoad {
            kind,
            component: Component::Source(source.clone()),
            params: params.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            target: Target::Active,
        };
        load.run(&policies, LoadRight::operator())
            .map_err(|e| anyhow::anyhow!("cannot load the {kind} policy {source}: {e}"))?;
    }

    let mut rm = assemble(Parts {
        settings: &settings,
        queues,
        store: Store::in_memory(),
        clock: Arc::new(clock.clone()),
        policies: policies.clone(),
        security: Arc::new(
            crate::security::Security::from_settings(&settings.security)
                .map_err(anyhow::Error::msg)?,
        ),
        sim_nodes: None,
        event_log: None,
        recover: None,
    })?;
    let mut node_number = 0;
    for group in &scenario.nodes {
        for _ in 0..group.count {
            node_number += 1;
            let capacity = Resources::new(group.memory_mb, group.vcores, group.gpus);
            rm.add_simulated_node(&format!("node-{node_number:05}"), capacity)
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
    // When the admitted reservations start and end.
    let mut placed: Vec<Placed> = Vec::new();
    let mut next_reservation = 0;
    let quota_settings = settings.quota;
    let mut timers = Timers {
        scheduling: Every::starting_at(0, scenario.scheduling_interval_ms),
        quota: Every::starting_at(0, quota_settings.scheduling_period_ms),
        multiplicator: Every::starting_at(0, quota_settings.multiplicator_interval_ms),
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
        apps_refused_over_budget: 0,
        first_budget_refusal: None,
    };
    let mut next_app = 0;
    let mut idle = Idle::default();
    let mut stopped_at_end = false;
    let mut steps: u64 = 0;
    loop {
        // Counted by the cluster as apps end: no walk over every app a step.
        let (_, finished, _) = rm.cluster().app_totals();
        progress(finished, apps.len());
        let all_done = next_app == apps.len()
            && next_reservation == reservations.len()
            && rm.cluster().active_apps().next().is_none();
        if all_done && observe.peek().is_none() {
            break;
        }
        // None only once every timer is off: nothing is left to happen.
        let Some(next) = [
            apps.get(next_app).map(|a| a.submit_ms),
            reservations.get(next_reservation).map(|r| r.submit_ms),
            timers.scheduling.next,
            timers.quota.next,
            timers.multiplicator.next,
            observe.peek().copied(),
        ]
        .into_iter()
        .flatten()
        .min() else {
            break;
        };
        if scenario.end_ms.is_some_and(|end| next > end) {
            stopped_at_end = true;
            break;
        }
        steps += 1;
        if steps > MAX_STEPS {
            anyhow::bail!(
                "the scenario needs more than {MAX_STEPS} steps of virtual time (at t={next} ms, \
                 timers every {} ms while containers run or wait); raise scheduling_interval_ms \
                 or set end_ms",
                timers.scheduling.period
            );
        }
        clock.advance_to(next);
        while let Some(reservation) = reservations
            .get(next_reservation)
            .filter(|r| r.submit_ms <= next)
        {
            by_name.insert(reservation.name.clone(), outcomes.len());
            let (outcome, times) = submit_reservation(&mut rm, reservation)?;
            outcomes.push(outcome);
            placed.extend(times);
            next_reservation += 1;
        }
        while let Some(app) = apps.get(next_app).filter(|a| a.submit_ms <= next) {
            let reservation_id = match &app.reservation {
                None => None,
                // Checked up front: named reservations are submitted by now.
                // A refused one's apps run in the queue as any other.
                Some(name) => by_name
                    .get(name)
                    .and_then(|&i| outcomes[i].reservation_id.clone()),
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
                application_id: None,
                application_type: None,
                tags: Vec::new(),
            };
            // The use case the API runs, as the app's own user.
            let caller = rm.security().caller(&app.user);
            let submitted = match rm.submit_app(&caller, request, "simulate") {
                Ok(submitted) => submitted,
                // A project out of credits is an outcome, not a broken scenario.
                Err(crate::rm::requests::RequestError::OverBudget(why)) => {
                    summary.apps_refused_over_budget += 1;
                    summary.first_budget_refusal.get_or_insert(why);
                    next_app += 1;
                    continue;
                }
                Err(e) => anyhow::bail!("app {} of the scenario: {e}", next_app + 1),
            };
            if let Some(name) = &app.reservation {
                reserved_apps.push((submitted.id.clone(), name.clone()));
            }
            next_app += 1;
        }
        // Timers due together fire in serve's order (rm::timers::Timer::ORDER).
        let mut round = false;
        for timer in timers.fire(next) {
            rm.fire(timer);
            match timer {
                Timer::SchedulingRound => round = true,
                Timer::QuotaCompute => summary.utilization.push(utilization(&rm, next)),
                Timer::MultiplicatorStep => {}
            }
        }
        if observe.peek() == Some(&next) {
            observe.next();
            summary.observations.push(observation(&rm, next));
        }
        rm.flush_quota();
        if round && jump_idle {
            let next_submission = [
                apps.get(next_app).map(|a| a.submit_ms),
                reservations.get(next_reservation).map(|r| r.submit_ms),
            ]
            .into_iter()
            .flatten()
            .min();
            idle.skip_after_round(
                &mut rm,
                &mut timers,
                next,
                next_submission,
                &placed,
                scenario.end_ms,
            )?;
        }
    }
    // A run stopped by end_ms stops where stepping every timer would have:
    // at the last firing by end_ms of a timer that was skipped over.
    if stopped_at_end && let Some(end) = scenario.end_ms {
        clock.advance_to(timers.last_firing_by(end));
    }
    let end = clock.now_ms();
    rm.shutdown();
    summary.end_ms = end;
    summary.apps_submitted = rm.cluster().apps().len();
    summary.apps_finished = rm
        .cluster()
        .apps()
        .iter()
        .filter(|a| a.state == crate::cluster::AppState::Finished)
        .count();
    summary.wait_time_ms = wait_times(&rm);
    for (app_id, name) in reserved_apps {
        let outcome = &mut outcomes[by_name[&name]];
        outcome.apps += 1;
        let finished = rm
            .cluster()
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
        .quota()
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
/// submit), and records whether it was admitted, and if so when it holds
/// resources.
fn submit_reservation(
    rm: &mut ResourceManager,
    reservation: &ScenarioReservation,
) -> anyhow::Result<(ReservationOutcome, Option<Placed>)> {
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
    // The use cases the REST API runs (new-reservation, then submit), as
    // the reservation's user.
    let caller = rm.security().caller(&reservation.user);
    let id = rm.new_reservation(&caller)?;
    let request = ReservationSubmissionRequest {
        queue: reservation.queue.clone(),
        reservation_id: id.to_string(),
        reservation_definition: definition,
    };
    let mut placed = None;
    match rm.submit_reservation(&caller, &request) {
        Ok(accepted) => {
            outcome.admitted = true;
            outcome.reservation_id = Some(accepted.reservation_id.to_string());
            outcome.placed_ms = accepted
                .allocations
                .iter()
                .map(|a| (a.start_ms, a.end_ms))
                .reduce(|(s1, e1), (s2, e2)| (s1.min(s2), e1.max(e2)));
            // Admitted times lie in 1970..=9999: never negative.
            let ms = |t: i64| u64::try_from(t).unwrap_or(0);
            placed = Some(Placed {
                allocations: accepted
                    .allocations
                    .iter()
                    .map(|a| (ms(a.start_ms), ms(a.end_ms)))
                    .collect(),
                // As the definition reads it: 0 is not recurring.
                period_ms: reservation.recurrence_ms.filter(|&p| p > 0),
            });
        }
        Err(error) => outcome.reason = Some(error.to_string()),
    }
    Ok((outcome, placed))
}

/// An admitted reservation's allocations, as (start, end) ms; a recurring
/// one's first occurrence, repeated every `period_ms`. The plan follower
/// changes what a round sees only at these times.
struct Placed {
    allocations: Vec<(u64, u64)>,
    period_ms: Option<u64>,
}

impl Placed {
    /// The first time after `now` at which an allocation starts or ends.
    fn next_boundary(&self, now: u64) -> Option<u64> {
        self.allocations
            .iter()
            .flat_map(|&(start, end)| [start, end])
            .filter_map(|at| match self.period_ms {
                None => (at > now).then_some(at),
                // The first occurrence of `at` after `now`; checked, as
                // nothing bounds how many periods lie ahead.
                Some(period) if at <= now => ((now - at) / period)
                    .checked_add(1)?
                    .checked_mul(period)?
                    .checked_add(at),
                Some(_) => Some(at),
            })
            .min()
    }

    /// The last time at or before `now` at which a one-off allocation
    /// started or ended.
    fn last_one_off_boundary(&self, now: u64) -> Option<u64> {
        if self.period_ms.is_some() {
            return None;
        }
        self.allocations
            .iter()
            .flat_map(|&(start, end)| [start, end])
            .filter(|&at| at <= now)
            .max()
    }
}

/// What the run knows about a stretch in which nothing runs, and the jumps
/// over idle time it allows.
///
/// Both jumps rest on one assumption, which the scheduling policy contract
/// states (docs/policy-authors.md): a round that placed nothing places
/// nothing again until the cluster changes — an app submitted, a container
/// ended, a reservation started or ended. Reclaim needs running containers
/// to take back, and simulated nodes are never lost, so nothing else moves.
#[derive(Default)]
struct Idle {
    /// Since when nothing has run, and the apps and admitted reservations
    /// there were then (a submission since ends the stretch).
    since: Option<(u64, (usize, usize))>,
}

impl Idle {
    /// Called after the round at `now` (and the other timers due then):
    /// moves the timers over time in which nothing can change.
    ///
    /// - Nothing runs and nothing is owed: the cluster stays as it is until
    ///   the next submission — or, if apps are pending, the next time a
    ///   reservation starts or ends — so every timer skips to then, on its
    ///   phase. QUOTA_COMPUTE would charge nothing (its utilization samples
    ///   are left out); the multiplicator step would be given the same
    ///   utilization each time, and `multiplicators` depends on it alone
    ///   (docs/policy-authors.md), so it runs once now for all of them. If
    ///   nothing is left to wait for and apps are pending, the run cannot
    ///   finish: an error, or with `end_ms` a jump to the end.
    /// - Containers run, nothing is pending and there are no reservation
    ///   plans: a round only ends containers, so rounds skip to the next
    ///   container end or submission. QUOTA_COMPUTE keeps firing.
    fn skip_after_round(
        &mut self,
        rm: &mut ResourceManager,
        timers: &mut Timers,
        now: u64,
        next_submission: Option<u64>,
        placed: &[Placed],
        end_ms: Option<u64>,
    ) -> anyhow::Result<()> {
        let running = rm.cluster().containers().next().is_some();
        let pending = rm.cluster().has_pending();
        if running {
            self.since = None;
            if !pending && !rm.reservations().has_plans() {
                let next_end = rm
                    .cluster()
                    .containers()
                    // Saturating: a container of a checked duration ends
                    // long before u64::MAX; this cannot panic regardless.
                    .map(|c| c.start_time_ms.saturating_add(c.duration_ms))
                    .min();
                let wake = next_end.into_iter().chain(next_submission).min();
                timers.scheduling.skip_to(wake);
            }
            return Ok(());
        }
        if rm.quota().has_owed() {
            // A failed flush is retried at the next; keep stepping.
            return Ok(());
        }
        let seen = (rm.cluster().apps().len(), placed.len());
        let since = match self.since {
            Some((since, then)) if then == seen => since,
            _ => now,
        };
        self.since = Some((since, seen));
        let wake = if pending {
            next_submission
                .into_iter()
                .chain(next_boundary(placed, now, since))
                .min()
        } else {
            next_submission
        };
        let wake = match (wake, pending, end_ms) {
            (Some(wake), _, _) => Some(wake),
            (None, false, _) => None,
            // Stepping would wait out the rest of the run: jump past its end.
            (None, true, Some(end)) => Some(end.saturating_add(1)),
            (None, true, None) => return Err(stuck(rm, now)),
        };
        if timers
            .multiplicator
            .next
            .is_some_and(|due| wake.is_none_or(|w| due < w))
        {
            rm.multiplicator_step();
        }
        timers.scheduling.skip_to(wake);
        timers.quota.skip_to(wake);
        timers.multiplicator.skip_to(wake);
        Ok(())
    }
}

/// When a round may next place something for the reservations in
/// `placed`, if nothing has run since `since`: the next time one starts or
/// ends. A recurring reservation comes back forever, so once nothing has
/// run for one whole cycle of them all (the least common multiple of their
/// periods) since the last one-off boundary, another cycle will not help.
fn next_boundary(placed: &[Placed], now: u64, since: u64) -> Option<u64> {
    let one_off_passed = placed
        .iter()
        .filter_map(|p| p.last_one_off_boundary(now))
        .max();
    let quiet_since = since.max(one_off_passed.unwrap_or(0));
    let cycle = placed
        .iter()
        .filter_map(|p| p.period_ms)
        .try_fold(1u64, lcm);
    let recurring_helps = cycle.is_none_or(|cycle| now - quiet_since < cycle);
    placed
        .iter()
        .filter(|p| p.period_ms.is_none() || recurring_helps)
        .filter_map(|p| p.next_boundary(now))
        .min()
}

/// The least common multiple, or None past u64 (then no cycle is waited out).
fn lcm(a: u64, b: u64) -> Option<u64> {
    let gcd = {
        let (mut x, mut y) = (a, b);
        while y != 0 {
            (x, y) = (y, x % y);
        }
        x
    };
    (a / gcd).checked_mul(b)
}

/// The error for a run that cannot finish: which apps wait, and why the
/// scheduler says they do.
fn stuck(rm: &ResourceManager, now: u64) -> anyhow::Error {
    const SHOWN: usize = 10;
    let usage = diagnostics::queue_usage(rm.cluster());
    let waiting: Vec<String> = rm
        .cluster()
        .active_apps()
        .filter_map(|index| {
            let app = &rm.cluster().apps()[index];
            let diagnosis = rm.diagnose(index, &usage)?;
            Some(format!(
                "{} ({:?}, queue {}, {} containers pending): {}",
                app.id,
                app.name,
                app.queue,
                app.pending_containers(),
                diagnosis.reason
            ))
        })
        .collect();
    let more = match waiting.len().saturating_sub(SHOWN) {
        0 => String::new(),
        n => format!("; and {n} more"),
    };
    let count = match waiting.len() {
        1 => "an app waits".to_string(),
        n => format!("{n} apps wait"),
    };
    anyhow::anyhow!(
        "the run cannot finish: at {now} ms nothing runs, nothing is left to submit and no reservation is still to start or end, but {count} that no round places: {}{more} (give end_ms to stop the run at a time instead)",
        waiting[..waiting.len().min(SHOWN)].join("; ")
    )
}

fn utilization(rm: &ResourceManager, t_ms: u64) -> UtilizationSample {
    let (memory, vcores, gpus) = rm
        .cluster()
        .allocated()
        .fractions_of(&rm.cluster().capacity());
    UtilizationSample {
        t_ms,
        memory,
        vcores,
        gpus,
    }
}

fn observation(rm: &ResourceManager, t_ms: u64) -> Observation {
    let cluster = rm.cluster();
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
    for app in rm.cluster().apps() {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(text: &str) -> Scenario {
        toml::from_str(text).unwrap()
    }

    /// The summary with the parts jumping may change taken out: the
    /// utilization samples (returned apart) and the policies' call counts
    /// and times.
    fn run_both(text: &str) -> (serde_json::Value, serde_json::Value) {
        let scenario = scenario(text);
        // Compiled policies go to a directory of this run, not the user's cache.
        let cache = tempfile::tempdir().unwrap();
        let overrides = [format!(
            "weft.policy.compile-cache-dir={}",
            cache.path().display()
        )];
        let mut summaries = [true, false].map(|jump| {
            let summary =
                simulate(&scenario, Path::new("."), &overrides, &|_, _| {}, jump).unwrap();
            serde_json::to_value(summary).unwrap()
        });
        for summary in &mut summaries {
            summary.as_object_mut().unwrap().remove("policies");
        }
        let [jumped, stepped] = summaries;
        (jumped, stepped)
    }

    /// Jumping gives the summary stepping gives, but for the utilization
    /// samples of idle stretches, which are all zero.
    fn assert_same_but_idle_samples(text: &str) {
        let (mut jumped, mut stepped) = run_both(text);
        let take = |summary: &mut serde_json::Value| {
            summary
                .as_object_mut()
                .unwrap()
                .remove("utilization")
                .unwrap()
                .as_array()
                .unwrap()
                .clone()
        };
        let (jumped_samples, stepped_samples) = (take(&mut jumped), take(&mut stepped));
        assert_eq!(jumped, stepped);
        assert!(jumped_samples.len() < stepped_samples.len() / 10);
        for sample in &stepped_samples {
            let idle = ["memory", "vcores", "gpus"]
                .iter()
                .all(|r| sample[r] == 0.0);
            assert!(
                idle || jumped_samples.contains(sample),
                "a busy sample was left out: {sample}"
            );
        }
        for sample in &jumped_samples {
            assert!(stepped_samples.contains(sample), "{sample}");
        }
    }

    const SETTINGS: &str = r#"
[settings]
"yarn.resourcemanager.quota.variable.price.enabled" = "true"
"yarn.resourcemanager.quota.multiplicator.interval" = "15000"
"yarn.resourcemanager.quota.scheduling.period" = "7000"
"#;

    #[test]
    fn jumping_over_idle_time_gives_the_summary_stepping_gives() {
        // Idle hours between apps; one app's containers end at different
        // times (rounds jump from end to end); observations while idle.
        // c's containers, placed at 7201 s, end at 7203 s, when QUOTA_COMPUTE
        // fires: the round that ends them must come first, as when stepping.
        assert_same_but_idle_samples(&format!(
            r#"
observe_at_ms = [5000, 100000, 3600000, 3000500, 9000000]
{SETTINGS}
[[nodes]]
count = 2
memory_mb = 4096
vcores = 4
[[apps]]
submit_ms = 0
user = "a"
project = "p"
asks = [{{ count = 10, memory_mb = 1024, vcores = 1, duration_ms = 20000 }}]
[[apps]]
submit_ms = 3000000
user = "b"
project = "q"
asks = [{{ count = 3, memory_mb = 1024, vcores = 1, duration_ms = 7500 }}, {{ count = 1, memory_mb = 2048, vcores = 2, duration_ms = 123456 }}]
[[apps]]
submit_ms = 7200001
user = "c"
project = "q"
asks = [{{ count = 8, memory_mb = 1024, vcores = 1, duration_ms = 2000 }}]
"#
        ));
    }

    #[test]
    fn jumping_waits_for_reservations_as_stepping_does() {
        // A reserved app waits idle for its reservation, placed as late as
        // it can be, then runs; a later app waits for nothing.
        assert_same_but_idle_samples(&format!(
            r#"
observe_at_ms = [4600000, 5000000]
{SETTINGS}
[[nodes]]
count = 2
memory_mb = 4096
vcores = 4
[queues.properties]
"yarn.scheduler.capacity.root.queues" = "default,dedicated"
"yarn.scheduler.capacity.root.default.capacity" = "50"
"yarn.scheduler.capacity.root.dedicated.capacity" = "50"
"yarn.scheduler.capacity.root.dedicated.reservable" = "true"
[[reservations]]
name = "r"
submit_ms = 4000000
user = "alice"
queue = "dedicated"
arrival_ms = 4000000
deadline_ms = 6000000
requests = [{{ count = 2, memory_mb = 1024, vcores = 1, duration_ms = 100000 }}]
[[apps]]
submit_ms = 0
user = "a"
project = "p"
asks = [{{ count = 4, memory_mb = 1024, vcores = 1, duration_ms = 20000 }}]
[[apps]]
submit_ms = 4100000
user = "alice"
queue = "dedicated"
reservation = "r"
project = "p"
asks = [{{ count = 2, memory_mb = 1024, vcores = 1, duration_ms = 90000 }}]
[[apps]]
submit_ms = 8000000
user = "b"
project = "q"
asks = [{{ count = 3, memory_mb = 1024, vcores = 1, duration_ms = 7500 }}]
"#
        ));
    }

    #[test]
    fn a_run_with_an_end_stops_there_even_with_apps_no_round_places() {
        // "stuck" asks for more than queue b may ever have; the run stops
        // at end_ms, as stepping stops, with the app pending.
        let text = format!(
            r#"
end_ms = 1234567
observe_at_ms = [1000000]
{SETTINGS}
[[nodes]]
count = 2
memory_mb = 4096
vcores = 4
[queues.properties]
"yarn.scheduler.capacity.root.queues" = "a,b"
"yarn.scheduler.capacity.root.a.capacity" = "90"
"yarn.scheduler.capacity.root.b.capacity" = "10"
"yarn.scheduler.capacity.root.b.maximum-capacity" = "10"
[[apps]]
submit_ms = 0
user = "u"
queue = "a"
project = "p"
asks = [{{ count = 2, memory_mb = 1024, vcores = 1, duration_ms = 100000 }}]
[[apps]]
submit_ms = 5000
name = "stuck"
user = "u"
queue = "b"
asks = [{{ count = 1, memory_mb = 2048, vcores = 1, duration_ms = 1000 }}]
"#
        );
        assert_same_but_idle_samples(&text);
        let (jumped, _) = run_both(&text);
        // The last firing by the end: the scheduling round at 1234000 ms.
        assert_eq!(jumped["end_ms"], 1_234_000);
        assert_eq!(
            jumped["observations"][0]["pending_apps"][0]["id"],
            "application_0_0002"
        );
        // Without the end it cannot finish, and says which app waits.
        let error = run(
            &scenario(&text.replace("end_ms = 1234567", "")),
            Path::new("."),
            &[],
            &|_, _| {},
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("the run cannot finish"), "{error}");
        assert!(
            error.contains(r#"application_0_0002 ("stuck", queue b"#),
            "{error}"
        );
    }

    #[test]
    fn timers_skip_on_their_phase_and_never_back() {
        let mut every = Every::starting_at(0, 1000);
        every.skip_to(Some(0));
        assert_eq!(every.next, Some(1000), "first at one period");
        every.skip_to(Some(2500));
        assert_eq!(every.next, Some(3000));
        every.skip_to(Some(2000));
        assert_eq!(every.next, Some(3000), "never back");
        assert!(!every.due(2999) && every.due(3000));
        assert_eq!(every.next, Some(4000));
        every.skip_to(Some(u64::MAX));
        assert_eq!(every.next, Some(u64::MAX), "saturates, no overflow");
        every.skip_to(None);
        assert_eq!(every.next, None);
        assert!(!every.due(u64::MAX));
        let timers = Timers {
            scheduling: Every::starting_at(0, 1000),
            quota: Every::starting_at(0, 7000),
            multiplicator: Every::starting_at(0, 15000),
        };
        assert_eq!(timers.last_firing_by(1_234_567), 1_234_000);
        assert_eq!(timers.last_firing_by(999), 0);
    }

    #[test]
    fn reservation_boundaries_repeat_with_their_period() {
        let one_off = Placed {
            allocations: vec![(100, 200), (300, 400)],
            period_ms: None,
        };
        assert_eq!(one_off.next_boundary(0), Some(100));
        assert_eq!(one_off.next_boundary(200), Some(300));
        assert_eq!(one_off.next_boundary(400), None);
        assert_eq!(one_off.last_one_off_boundary(350), Some(300));
        let recurring = Placed {
            allocations: vec![(100, 200)],
            period_ms: Some(1000),
        };
        assert_eq!(recurring.next_boundary(150), Some(200));
        assert_eq!(recurring.next_boundary(200), Some(1100));
        assert_eq!(recurring.next_boundary(5150), Some(5200));
        assert_eq!(recurring.next_boundary(u64::MAX - 10), None, "no overflow");
        assert_eq!(recurring.last_one_off_boundary(5000), None);
    }

    #[test]
    fn recurring_reservations_are_waited_for_one_whole_cycle() {
        let placed = [
            Placed {
                allocations: vec![(0, 500)],
                period_ms: Some(2000),
            },
            Placed {
                allocations: vec![(0, 1000)],
                period_ms: Some(3000),
            },
        ];
        // Together they repeat every 6000 ms.
        assert_eq!(next_boundary(&placed, 5999, 0), Some(6000));
        assert_eq!(next_boundary(&placed, 6000, 0), None);
        assert_eq!(next_boundary(&placed, 6000, 100), Some(6500));
        // A one-off reservation ahead is always waited for, and one that
        // has passed starts the cycle anew.
        let [a, b] = placed;
        let one_off = Placed {
            allocations: vec![(9000, 9500)],
            period_ms: None,
        };
        let with_one_off = [a, b, one_off];
        assert_eq!(next_boundary(&with_one_off, 8000, 0), Some(9000));
        assert_eq!(next_boundary(&with_one_off, 10_000, 0), Some(10_500));
        assert_eq!(lcm(u64::MAX, u64::MAX - 1), None);
    }
}
