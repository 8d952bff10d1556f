//! The scenario format (docs/simulate.md): nodes, queues, apps,
//! reservations, policies, settings and observation times, read from TOML
//! or JSON and checked against the documented maxima, and refused if its
//! work could never be done.

use super::*;
use crate::limits::MAX_SIMULATION_STEPS;

/// A `weft simulate` scenario (docs/simulate.md), as read from TOML or
/// JSON. Its times are virtual ms from the run's start (0).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Node groups: `count` nodes of one size.
    pub nodes: Vec<NodeGroup>,
    /// The queue tree; the default one when left out.
    #[serde(default)]
    pub queues: QueueSpec,
    /// The policies to load; the configured ones when left out.
    #[serde(default)]
    pub policies: PolicySpec,
    /// Properties, as `--set` takes them.
    #[serde(default)]
    pub settings: BTreeMap<String, String>,
    /// Virtual ms at which to record each queue's and user's use.
    #[serde(default)]
    pub observe_at_ms: Vec<u64>,
    /// How often the scheduler runs, in virtual ms (`weft.scheduler.interval-ms`).
    #[serde(default = "default_scheduling_interval")]
    pub scheduling_interval_ms: u64,
    /// Stop here even if apps are unfinished (default: when all finish).
    #[serde(default)]
    pub end_ms: Option<u64>,
    /// The apps, each submitted at its `submit_ms` (in any order in the
    /// file).
    pub apps: Vec<ScenarioApp>,
    /// Reservations, submitted at their times through the reservation
    /// system as the REST API submits them.
    #[serde(default)]
    pub reservations: Vec<ScenarioReservation>,
    /// Node labels (YARN's partitions) the node groups may carry.
    #[serde(default)]
    pub labels: Vec<ScenarioLabel>,
}

/// A reservation of the scenario: YARN's definition in Weft's field names.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioReservation {
    /// How apps name it (`reservation = NAME`); also its reservation-name.
    pub name: String,
    /// When it is submitted, in virtual ms (before the apps of the same
    /// instant).
    pub submit_ms: u64,
    /// Who submits it, and so owns it.
    pub user: String,
    /// The reservable queue.
    pub queue: String,
    /// YARN's arrival: the earliest it may start, in virtual ms.
    pub arrival_ms: u64,
    /// YARN's deadline: when it must be done, in virtual ms.
    pub deadline_ms: u64,
    /// R_ANY, R_ALL (default), R_ORDER or R_ORDER_NO_GAP.
    #[serde(default = "default_interpreter")]
    pub interpreter: String,
    /// A recurring reservation's period in ms.
    #[serde(default)]
    pub recurrence_ms: Option<u64>,
    /// YARN's reservation-requests: at most 100.
    pub requests: Vec<ScenarioRequest>,
}

pub(super) fn default_interpreter() -> String {
    "R_ALL".into()
}

/// `count` containers of one size for `duration_ms`, at least
/// `min_concurrency` at once (default: all of them).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioRequest {
    /// How many containers (YARN's num-containers).
    pub count: u32,
    /// Each container's memory, in MB.
    pub memory_mb: u64,
    /// Each container's vcores.
    pub vcores: u32,
    /// Each container's GPUs; 0 when left out.
    #[serde(default)]
    pub gpus: u32,
    /// How long each container is held, in ms (YARN's duration).
    pub duration_ms: u64,
    /// How many must run at once (YARN's min-concurrency); `count` when
    /// left out.
    #[serde(default)]
    pub min_concurrency: Option<u32>,
}

impl ScenarioReservation {
    /// The definition YARN's REST API would carry.
    pub(super) fn definition(&self) -> Result<ReservationDefinition, String> {
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

pub(super) fn default_scheduling_interval() -> u64 {
    1000
}

/// `count` simulated nodes of one size. Nodes are named `node-00001`,
/// `node-00002`… over the groups in order.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeGroup {
    /// How many nodes (0 is allowed).
    pub count: u32,
    /// Each node's memory, in MB.
    pub memory_mb: u64,
    /// Each node's vcores.
    pub vcores: u32,
    /// Each node's GPUs; 0 when left out.
    #[serde(default)]
    pub gpus: u32,
    /// Their node label (partition), one of the scenario's `labels`; none
    /// when left out (the default partition).
    #[serde(default)]
    pub label: Option<String>,
    /// Their rack (`/dc1/rack7`); YARN's `/default-rack` when left out.
    #[serde(default)]
    pub rack: Option<String>,
    /// Their node attributes (`gpu-model = "a100"`; given YARN's
    /// `nm.yarn.io/` prefix), as an agent's `--attribute`s.
    #[serde(default)]
    pub attributes: BTreeMap<String, String>,
}

/// A node label of the scenario (YARN's partition).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioLabel {
    /// Its name (YARN's rules for label names).
    pub name: String,
    /// Whether only asks for it run on its nodes (the default), or it
    /// lends idle room to asks for the default partition.
    #[serde(default = "exclusive_by_default")]
    pub exclusive: bool,
}

fn exclusive_by_default() -> bool {
    true
}

/// The queue tree: a file, properties on top of it, or neither (the
/// default tree).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueSpec {
    /// A capacity-scheduler.xml or TOML file, relative to the scenario.
    pub file: Option<PathBuf>,
    /// `yarn.scheduler.capacity.*` properties inline.
    #[serde(default)]
    pub properties: BTreeMap<String, String>,
}

/// The policies a run loads, each `builtin:NAME` or a .wasm path relative
/// to the scenario, with its parameters. One left out is the configured
/// one (`weft.policy.scheduling`, `.pricing`, `.sharing`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySpec {
    /// The scheduling policy.
    pub scheduling: Option<String>,
    /// Parameters given to the scheduling policy.
    #[serde(default)]
    pub scheduling_params: BTreeMap<String, String>,
    /// The pricing policy.
    pub pricing: Option<String>,
    /// Parameters given to the pricing policy (`price.base.general`…).
    #[serde(default)]
    pub pricing_params: BTreeMap<String, String>,
    /// The sharing policy: reservation admission.
    pub sharing: Option<String>,
    /// Parameters given to the sharing policy.
    #[serde(default)]
    pub sharing_params: BTreeMap<String, String>,
}

/// An app of the scenario, submitted through the resource manager's own
/// use case as its user.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioApp {
    /// When it is submitted, in virtual ms.
    pub submit_ms: u64,
    /// What people call it; `USER-N` when left out (N its place in
    /// submission order, from 1).
    #[serde(default)]
    pub name: Option<String>,
    /// Who submits it and whom it runs as (the queue ACLs apply).
    pub user: String,
    /// A leaf queue's name; "default" when left out.
    #[serde(default = "default_queue")]
    pub queue: String,
    /// The project charged for its containers; "default" when left out.
    #[serde(default = "default_project")]
    pub project: String,
    /// YARN's application priority (its queue serves higher numbers
    /// first); 0 when left out.
    #[serde(default)]
    pub priority: i32,
    /// What it asks for: 1 to 100 asks, as POST /ws/v1/cluster/apps takes
    /// them.
    pub asks: Vec<AskSpec>,
    /// The scenario reservation (by name) it runs in.
    #[serde(default)]
    pub reservation: Option<String>,
    /// How long it may live, in seconds from its submission (1 to 10
    /// years), cut to its queue's `maximum-application-lifetime`; the
    /// queue's default when left out. Past it the app is killed.
    #[serde(default)]
    pub lifetime_s: Option<u64>,
    /// The node label its asks run in unless they name one (YARN's
    /// app-node-label-expression); its queue's default when left out.
    #[serde(default)]
    pub node_label_expression: Option<String>,
    /// YARN's application type (`SPARK`…), which pricing may read.
    #[serde(default)]
    pub application_type: Option<String>,
    /// Its application tags, which pricing may read.
    #[serde(default)]
    pub tags: Vec<String>,
}

pub(super) fn default_queue() -> String {
    "default".into()
}

pub(super) fn default_project() -> String {
    "default".into()
}

/// Why a scenario file could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum SimulateError {
    /// The file could not be read.
    #[error("cannot read scenario {path}: {reason}")]
    Read {
        /// The file, as given.
        path: String,
        /// The I/O error.
        reason: String,
    },
    /// The file is not a scenario: it does not parse, or has a field of the
    /// wrong type or an unknown one.
    #[error("scenario {path}: {reason}")]
    Invalid {
        /// The file, as given.
        path: String,
        /// The parser's message.
        reason: String,
    },
}

impl Scenario {
    /// Reads the scenario at `path` (JSON if it ends in `.json`, else TOML),
    /// unchecked (see [`Scenario::check`]); returns it with the directory
    /// its relative paths start from.
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

    pub(super) fn check_bounds(&self) -> Result<(), OutOfBounds> {
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
        limits::at_most("labels", self.labels.len(), limits::MAX_NODE_LABELS)?;
        for (i, label) in self.labels.iter().enumerate() {
            limits::node_label(format_args!("labels[{i}].name"), &label.name)?;
        }
        let mut nodes: usize = 0;
        for (i, group) in self.nodes.iter().enumerate() {
            let field = |name: &str| format!("nodes[{i}].{name}");
            if let Some(label) = &group.label {
                limits::node_label(field("label"), label)?;
            }
            if let Some(rack) = &group.rack {
                limits::rack(field("rack"), rack)?;
            }
            limits::node_attributes(field("attributes"), group.attributes.iter())?;
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
            if let Some(expression) = &app.node_label_expression {
                limits::node_label_expression(
                    format_args!("{label}: node_label_expression"),
                    expression,
                )?;
            }
            // As a submission checks them, before the run starts.
            crate::cluster::SubmitApp::check_type_and_tags(
                &label,
                app.application_type.as_deref(),
                &app.tags,
            )?;
            if let Some(lifetime_s) = app.lifetime_s {
                limits::within(
                    format_args!("{label}: lifetime_s"),
                    lifetime_s,
                    1,
                    limits::MAX_APP_LIFETIME_S,
                )?;
            }
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
                if let Some(expression) = &ask.node_label_expression {
                    limits::node_label_expression(field("node_label_expression"), expression)?;
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

    /// Apps need nodes, and each ask a node it fits on in its partition
    /// (its node label expression, else its app's; the default partition
    /// may also use non-exclusive labels' nodes): otherwise the run could
    /// never finish. Labels named must be the scenario's.
    pub(super) fn check_fits(&self) -> Result<(), String> {
        let mut exclusive: HashMap<&str, bool> = HashMap::new();
        for label in &self.labels {
            if exclusive.insert(&label.name, label.exclusive).is_some() {
                return Err(format!(
                    "two labels of the scenario are named {:?}",
                    label.name
                ));
            }
        }
        let declared = |label: &str, what: &dyn Fn() -> String| {
            if label.is_empty() || exclusive.contains_key(label) {
                Ok(())
            } else {
                Err(format!(
                    "{}: node label {label:?} is not one of the scenario's labels (add it to [[labels]])",
                    what()
                ))
            }
        };
        // Node sizes by partition ("" the default one).
        let mut sizes: BTreeMap<&str, BTreeSet<(u64, u32, u32)>> = BTreeMap::new();
        for (i, group) in self.nodes.iter().enumerate() {
            let label = group.label.as_deref().unwrap_or("");
            declared(label, &|| format!("nodes[{i}].label"))?;
            if group.count > 0 {
                sizes
                    .entry(label)
                    .or_default()
                    .insert((group.memory_mb, group.vcores, group.gpus));
            }
        }
        if let Some(app) = self.apps.first()
            && sizes.is_empty()
        {
            return Err(format!(
                "the scenario has no nodes, but {} (and every other app) asks for containers: add [[nodes]]",
                app_label(0, app)
            ));
        }
        // Where an ask for `partition` may run.
        let room = |partition: &str| -> Vec<(u64, u32, u32)> {
            sizes
                .iter()
                .filter(|(label, _)| {
                    **label == partition
                        || (partition.is_empty() && exclusive.get(**label) == Some(&false))
                })
                .flat_map(|(_, sizes)| sizes.iter().copied())
                .collect()
        };
        // Many asks share a size (an SLS trace has one per task): each size
        // is looked for among the node sizes once per partition.
        let mut fits: HashMap<(&str, (u64, u32, u32)), bool> = HashMap::new();
        for (index, app) in self.apps.iter().enumerate() {
            for (j, ask) in app.asks.iter().enumerate() {
                let partition = ask
                    .node_label_expression
                    .as_deref()
                    .or(app.node_label_expression.as_deref())
                    .unwrap_or("")
                    .trim();
                declared(partition, &|| {
                    format!("{}: asks[{j}]", app_label(index, app))
                })?;
                let size = (ask.memory_mb, ask.vcores, ask.gpus);
                let fits = *fits.entry((partition, size)).or_insert_with(|| {
                    room(partition)
                        .iter()
                        .any(|&(m, v, g)| m >= size.0 && v >= size.1 && g >= size.2)
                });
                if !fits {
                    let most = room(partition)
                        .iter()
                        .fold((0, 0, 0), |(m, v, g), &(nm, nv, ng)| {
                            (m.max(nm), v.max(nv), g.max(ng))
                        });
                    let nodes = if partition.is_empty() {
                        "every node".to_string()
                    } else {
                        format!("every node of label {partition:?}")
                    };
                    return Err(format!(
                        "{}: asks[{j}] ({} MB, {} vcores, {} GPUs) is larger than {nodes} (the nodes offer at most {} MB, {} vcores, {} GPUs)",
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
    /// [`MAX_SIMULATION_STEPS`] of those firings, is refused up front.
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
        if computes > u128::from(MAX_SIMULATION_STEPS) {
            return Err(format!(
                "the scenario's containers need at least {makespan_ms} ms of the whole cluster, \
                 {computes} QUOTA_COMPUTEs at yarn.resourcemanager.quota.scheduling.period = \
                 {quota_period_ms} ms; a run visits at most {MAX_SIMULATION_STEPS} instants: set a longer \
                 period, add nodes, or set end_ms"
            ));
        }
        Ok(())
    }

    /// With `end_ms`, the rounds up to it are bounded by the interval.
    pub(super) fn check_end_steps(&self) -> Result<(), String> {
        let end = self.end_ms.unwrap_or(0);
        let rounds = end / self.scheduling_interval_ms.max(1);
        if rounds > MAX_SIMULATION_STEPS {
            return Err(format!(
                "end_ms {end} at a scheduling_interval_ms of {} is {rounds} rounds; a run visits \
                 at most {MAX_SIMULATION_STEPS} instants: set a longer interval or an earlier end",
                self.scheduling_interval_ms
            ));
        }
        Ok(())
    }
}

/// How refusals name an app: its place in the scenario (from 1) and its
/// name, if it has one.
pub(super) fn app_label(index: usize, app: &ScenarioApp) -> String {
    match &app.name {
        Some(name) => format!("app {} ({name:?})", index + 1),
        None => format!("app {}", index + 1),
    }
}
