//! Settings, by YARN's property names (and `weft.*` for what YARN lacks),
//! parsed and checked once at start into one typed structure: nothing reads
//! a property by its name after that, so no lookup can fail at run time.
//!
//! `properties.rs` holds the names, types, bounds and defaults, and reads the
//! config file and `--set` overrides; this module turns them into [`Settings`].

mod properties;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use properties::{CAPACITY_PREFIX, ConfigError, PROPERTIES, Properties, ValueType};

pub(crate) use properties::flatten;

/// YARN's default `yarn.scheduler.capacity.node-locality-delay`: missed
/// scheduling opportunities before an ask may go rack-local (the queue
/// tree reads the setting; policies' samples assume it).
pub const DEFAULT_NODE_LOCALITY_DELAY: u32 = 40;
/// YARN's default `yarn.resourcemanager.nodemanagers.heartbeat-interval-ms`
/// (the pace of delay scheduling in a cluster nothing configured).
pub const DEFAULT_HEARTBEAT_INTERVAL_MS: u64 = 1000;
/// Everything configurable, typed.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Charging and pricing (`yarn.resourcemanager.quota.*`, `weft.quota.*`).
    pub quota: QuotaSettings,
    /// Where the quota events are logged for `weft replay`.
    pub quota_event_log: QuotaEventLogSettings,
    /// The standard parameters every pricing policy's `configure` receives.
    pub pricing_params: Vec<(String, String)>,
    /// The scheduling round, reclaim and the largest container an ask may ask
    /// for.
    pub scheduler: SchedulerSettings,
    /// How often nodes heartbeat and when a silent one is lost.
    pub nodes: NodeSettings,
    /// `yarn.resourcemanager.nodes.exclude-path`: the hosts a refresh of
    /// the nodes decommissions (an absolute path), if any.
    pub nodes_exclude_path: Option<PathBuf>,
    /// Queue changes made through the API: where they are kept and who may
    /// make them (`yarn.scheduler.configuration.*`).
    pub scheduler_conf: SchedulerConfSettings,
    /// How node agents run containers.
    pub agent: AgentSettings,
    /// Ended apps kept for the API (YARN's max-completed-applications).
    pub max_completed_applications: usize,
    /// The reservation system (`yarn.resourcemanager.reservation-system.*`).
    pub reservations: ReservationSystemSettings,
    /// The policies loaded at start, their caches and the limits on their
    /// calls (`weft.policy.*`).
    pub policies: PolicySettings,
    /// How callers are named and what they may do.
    pub security: SecuritySettings,
    /// The HTTP server's TLS and connection limits (`weft.http.*`).
    pub http: HttpSettings,
    /// Where state is kept, and how a restart or failover resumes.
    pub store: StoreSettings,
    /// YARN's RPC ports for existing YARN clients.
    pub yarn_rpc: YarnRpcSettings,
    /// `yarn.scheduler.capacity.*` from the config file and `--set`; the
    /// queue tree is built from them (and a `--queues` file) by `queues::load`.
    pub queue_properties: BTreeMap<String, String>,
    /// `weft.accounting.enabled`: one record per ended app.
    pub accounting_enabled: bool,
    properties: Properties,
}

/// Queue changes made through the API (YARN's mutable scheduler
/// configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchedulerConfSettings {
    /// `yarn.scheduler.configuration.store.class`.
    pub store: ConfStore,
    /// `yarn.scheduler.configuration.mutation.acl-policy.class`: whether
    /// queue administrators may change their queues (else administrators
    /// only).
    pub queue_admins_may_change: bool,
}

/// Where queue changes made through the API are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfStore {
    /// `file`: nowhere; the API refuses changes.
    File,
    /// `memory`: in the server, until it stops.
    Memory,
    /// `leveldb`, `zk` or `fs`: in Weft's store, over restarts and failovers.
    Store,
}

/// YARN's RPC ports (`yarn_rpc`), with YARN's property names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YarnRpcSettings {
    /// `weft.yarn-rpc.enabled`: whether `weft serve` listens for Hadoop RPC.
    pub enabled: bool,
    /// `yarn.resourcemanager.address`: where clients submit (`host:port`);
    /// `None` when not set: the HTTP API's address with port 8032 when the
    /// API is on 8088 (YARN's pair), else any free port.
    pub client_address: Option<String>,
    /// `yarn.resourcemanager.scheduler.address`: where application
    /// masters ask (`host:port`); `None` when not set: as the client
    /// address, with port 8030.
    pub scheduler_address: Option<String>,
    /// `yarn.nodemanager.address`: where an agent serves
    /// ContainerManagementProtocol; `None`: any free port on the agent's
    /// host.
    pub node_manager_address: Option<String>,
}

/// The port of `yarn.resourcemanager.address` when it is not set and the
/// HTTP API is on [`YARN_WEBAPP_PORT`] (YARN's).
pub const DEFAULT_CLIENT_RPC_PORT: u16 = 8032;
/// The port of `yarn.resourcemanager.scheduler.address` when it is not set
/// and the HTTP API is on [`YARN_WEBAPP_PORT`].
pub const DEFAULT_SCHEDULER_RPC_PORT: u16 = 8030;
/// YARN's web port, `weft serve`'s default.
pub const YARN_WEBAPP_PORT: u16 = 8088;

/// The quota service's timing and switches.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuotaSettings {
    /// `yarn.resourcemanager.quota.enabled`: whether containers are charged at
    /// all; off, the quota service follows none.
    pub enabled: bool,
    /// `yarn.resourcemanager.quota.variable.price.enabled`: whether the
    /// multiplicators follow cluster utilization; off, they stay 1.
    pub variable_price: bool,
    /// `yarn.resourcemanager.quota.min.runtime`: the ms a container is charged
    /// for at least, when its own work ended it.
    pub min_runtime_ms: u64,
    /// `yarn.resourcemanager.quota.scheduling.period`: ms between two
    /// QUOTA_COMPUTEs.
    pub scheduling_period_ms: u64,
    /// `yarn.resourcemanager.quota.multiplicator.interval`: ms between two
    /// multiplicator steps (HopsYARN's PriceMultiplicatorService).
    pub multiplicator_interval_ms: u64,
    /// `weft.quota.default-credits`: the credits a project has before its first
    /// charge or grant.
    pub default_credits: f64,
    /// The units prices are quoted in (one vcore is always one unit).
    pub unit_memory_mb: u64,
    /// GPUs in one priced unit
    /// (`yarn.resourcemanager.quota.minimum.charged.gpu`).
    pub unit_gpus: u32,
    /// What running out of credits means (`weft.quota.budget.*`).
    pub budget: BudgetSettings,
}

/// What happens to a project whose credits run out (`weft.quota.budget.*`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BudgetSettings {
    /// `weft.quota.budget.enforce`: what a project with no credits left may
    /// still do.
    pub enforce: BudgetEnforcement,
    /// Below this many credits left a project is shown as low.
    pub warn_credits: f64,
}

/// `weft.quota.budget.enforce`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum BudgetEnforcement {
    /// A project runs on into debt.
    Off,
    /// No new apps; pending containers wait for a grant.
    RefuseNew,
    /// As refuse-new, and running containers are preempted.
    StopRunning,
}

impl BudgetEnforcement {
    /// The value `weft.quota.budget.enforce` takes for it: `off`, `refuse-new`
    /// or `stop-running`.
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetEnforcement::Off => "off",
            BudgetEnforcement::RefuseNew => "refuse-new",
            BudgetEnforcement::StopRunning => "stop-running",
        }
    }
}

/// `weft.quota.event-log`: where `serve` records its quota events for
/// `weft replay` (`quota::event_log`).
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaEventLogSettings {
    /// `None`: no log (the property is empty).
    pub path: Option<PathBuf>,
    /// `weft.quota.event-log-max-mb`, in bytes: the file never grows past it.
    pub max_bytes: u64,
}

/// Where state is kept and how a restart or failover resumes.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreSettings {
    /// `weft.store.url`: PostgreSQL; `None`: SQLite in the data directory.
    pub url: Option<String>,
    /// No new allocations this long after recovery, unless every known
    /// node registered again sooner.
    pub scheduling_wait_ms: u64,
    /// `weft.ha.lease-ms`: the active server's lease (PostgreSQL only).
    pub lease_ms: u64,
}

/// The scheduling round's timing, reclaim and the bounds on an ask.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SchedulerSettings {
    /// Between two scheduling rounds.
    pub interval: Duration,
    /// Reclaim's patience, when reclaim is on (`…scheduler.monitor.enable`).
    pub reclaim_after_ms: Option<u64>,
    /// `yarn.resourcemanager.monitor.capacity.preemption.observe_only`:
    /// reclaim chooses its victims and logs them, and preempts none.
    pub reclaim_observe_only: bool,
    /// `…preemption.total_preemption_per_round`: the most of the cluster
    /// one reclaim takes, a fraction (at least one container).
    pub reclaim_per_round: f64,
    /// `…preemption.monitoring_interval`: ms before the next reclaim when
    /// the cap cut one short.
    pub reclaim_interval_ms: u64,
    /// `…preemption.max_wait_before_kill`: ms a chosen container is marked
    /// (its master told) before it is killed.
    pub reclaim_wait_before_kill_ms: u64,
    /// `…preemption.max_ignored_over_capacity`: the dead zone above a
    /// queue's guarantee, a fraction of it.
    pub reclaim_ignored_over_capacity: f64,
    /// `…preemption.natural_termination_factor`: the share of what the
    /// policy chose in a queue one reclaim takes.
    pub reclaim_natural_termination: f64,
    /// The largest container an ask may ask for (YARN's
    /// `yarn.scheduler.maximum-allocation-*`); 0 in a field: the largest
    /// registered node's.
    pub maximum_allocation: crate::resources::Resources,
    /// `weft.scheduler.usage.half-life-ms`: users' and queues' use fades by
    /// half in this time (0: it does not fade).
    pub usage_half_life_ms: u64,
    /// `yarn.cluster.max-application-priority`: the highest priority an
    /// app may have (higher ones asked are cut to it).
    pub max_application_priority: i32,
    /// `yarn.nodemanager.opportunistic-containers-max-queue-length`: how
    /// many opportunistic containers may wait at one agent's node.
    pub opportunistic_queue_length: usize,
}

/// How the resource manager tracks nodes (YARN's NodeManager heartbeats and
/// liveness monitor).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NodeSettings {
    /// `yarn.resourcemanager.nodemanagers.heartbeat-interval-ms`: ms between
    /// two heartbeats of a node, told to each node when it registers.
    pub heartbeat_interval_ms: u64,
    /// Silence after which a node is lost.
    pub expiry_interval_ms: u64,
    /// How long a node being decommissioned waits for its containers,
    /// unless the administrator says otherwise.
    pub decommission_timeout_ms: u64,
}

/// How a node agent runs containers (YARN's NodeManager properties).
#[derive(Debug, Clone, PartialEq)]
pub struct AgentSettings {
    /// `yarn.nodemanager.sleep-delay-before-sigkill.ms`: how long a kill waits
    /// between SIGTERM and SIGKILL (0: SIGKILL at once).
    pub kill_grace: Duration,
    /// `yarn.nodemanager.container.stderr.tail.bytes`: how much of a failed
    /// container's stderr its diagnostics carry.
    pub stderr_tail_bytes: usize,
    /// `yarn.nodemanager.log.retain-seconds`: how long an agent keeps an ended
    /// container's logs and working directory.
    pub log_retain: Duration,
    /// `yarn.nodemanager.resource.system-reserved-memory-mb`: MB of the machine
    /// an agent leaves to the system when it sizes itself.
    pub reserved_memory_mb: u64,
    /// `weft.agent.run-as`: which user containers run as.
    pub run_as: RunAsSetting,
    /// Who containers run as with `run-as = local-user`.
    pub local_user: String,
    /// Processes and threads one container may have (0: no limit).
    pub pids_limit: u64,
    /// `weft.agent.syscall-filter`: containers run under the seccomp filter.
    pub syscall_filter: bool,
    /// The container log monitor's limit on a container's log dir, in
    /// bytes (the smaller of YARN's dir and total limits), if enabled.
    pub log_limit_bytes: Option<u64>,
    /// How often the container log monitor measures.
    pub log_check_interval: Duration,
    /// `weft.agent.container-network = none`: each container gets a network
    /// namespace of its own with only a loopback.
    pub own_network: bool,
    /// `weft.agent.banned-users`: users no container runs as with `run-as`
    /// submitter or local-user (container-executor.cfg's `banned.users`).
    pub banned_users: Vec<String>,
    /// `weft.agent.min-user-id`: the lowest uid a container runs as with
    /// `run-as` submitter or local-user (container-executor.cfg's
    /// `min.user.id`).
    pub min_user_id: u32,
    /// The node's health checks.
    pub health: HealthSettings,
}

/// An agent's node health checks (YARN's NodeHealthCheckerService).
#[derive(Debug, Clone, PartialEq)]
pub struct HealthSettings {
    /// The disk checker (`yarn.nodemanager.disk-health-checker.*`), unless
    /// disabled.
    pub disk: Option<DiskCheckSettings>,
    /// The health script (`yarn.nodemanager.health-checker.*`), if one is
    /// set.
    pub script: Option<HealthScriptSettings>,
}

/// When the disk of an agent's work or log dir is too full.
#[derive(Debug, Clone, PartialEq)]
pub struct DiskCheckSettings {
    /// How often the disks are checked.
    pub interval: Duration,
    /// Too full above this percentage used.
    pub max_used_percent: f64,
    /// Too full below this many MB free for use.
    pub min_free_mb: u64,
}

/// The operator's health script.
#[derive(Debug, Clone, PartialEq)]
pub struct HealthScriptSettings {
    /// The executable.
    pub path: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// From the start of one run to the next.
    pub interval: Duration,
    /// How long one run may take.
    pub timeout: Duration,
}

/// `weft.agent.run-as`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunAsSetting {
    /// The agent's own user (YARN's DefaultContainerExecutor).
    Agent,
    /// Each container as its app's user (YARN's LinuxContainerExecutor in
    /// secure mode).
    Submitter,
    /// Every container as one unprivileged user, `local_user` (YARN's
    /// LinuxContainerExecutor in non-secure mode, `nonsecure-mode.local-user`).
    LocalUser,
}

/// YARN's reservation system (`yarn.resourcemanager.reservation-system.*`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReservationSystemSettings {
    /// `…reservation-system.enable`: whether reservable queues accept
    /// reservations.
    pub enabled: bool,
    /// `…reservation-system.max-periodicity`: ms that the period of every
    /// recurring reservation must divide.
    pub max_periodicity_ms: i64,
    /// `…reservation-system.planfollower.time-step`: the plan's time step, in
    /// ms; reservations are placed on its multiples.
    pub time_step_ms: i64,
}

/// Limits applied to every policy call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallLimits {
    /// Wall time one call may take before it is interrupted.
    pub timeout: Duration,
    /// The most linear memory one policy instance may grow to, in bytes.
    pub memory_bytes: usize,
}

impl Default for CallLimits {
    /// 500 ms and 256 MiB: far above what a well-behaved policy needs for a
    /// 10,000-node snapshot, low enough that a runaway one is caught quickly.
    fn default() -> Self {
        CallLimits {
            timeout: Duration::from_millis(500),
            memory_bytes: 256 << 20,
        }
    }
}

/// Which policies run, and the limits they run under (`weft.policy.*`).
#[derive(Debug, Clone, PartialEq)]
pub struct PolicySettings {
    /// The policies loaded at start: `builtin:NAME` or a file.
    pub scheduling: String,
    /// `weft.policy.pricing`: the pricing policy, as `scheduling`.
    pub pricing: String,
    /// `weft.policy.sharing`: the reservation sharing policy, as `scheduling`.
    pub sharing: String,
    /// Each call's time and memory (`weft.policy.call-timeout-ms`,
    /// `weft.policy.memory-limit-mb`).
    pub limits: CallLimits,
    /// `weft.policy.max-consecutive-failures`: failed calls in a row after
    /// which a new version is rolled back.
    pub max_consecutive_failures: u32,
    /// `weft.policy.watch-dir`: a directory whose `NAME.KIND.wasm` files are
    /// loaded when written; `None`: none is watched.
    pub watch_dir: Option<PathBuf>,
    /// Most bytes of compiled code kept on disk; 0: no disk cache.
    pub compile_cache_bytes: u64,
    /// `None`: the command's own place (`serve`: DATA_DIR/compiled; the
    /// others: the user's cache directory).
    pub compile_cache_dir: Option<PathBuf>,
    /// Most bytes of compiled code one kind's standby versions may hold.
    pub standby_memory_bytes: u64,
    /// Policy instances allocated from a pool made at start; 0: on demand.
    pub instance_pool: u32,
}

/// Hadoop's `hadoop.security.authentication`, in Weft's two modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Authentication {
    /// The X-Weft-User header names the caller: for development.
    Simple,
    /// A bearer token names the caller; headers cannot.
    Token,
}

/// How a caller is named and what it may do (Hadoop's security properties,
/// `weft.security.*`).
#[derive(Debug, Clone, PartialEq)]
pub struct SecuritySettings {
    /// `weft.security.authentication`: what names a request's caller.
    pub authentication: Authentication,
    /// `yarn.admin.acl`; `None` when not set in token mode, which means the
    /// user running the server.
    pub admin_acl: Option<String>,
    /// `weft.security.node-acl`; `None` as `admin_acl`.
    pub node_acl: Option<String>,
    /// `weft.security.default-user`: in simple mode, the caller of a request
    /// without an X-Weft-User header.
    pub default_user: String,
    /// `weft.security.users-file`: a TOML file of each user's groups; `None`:
    /// nobody is in a group.
    pub users_file: Option<PathBuf>,
    /// `None`: DATA_DIR/tokens.toml.
    pub tokens_file: Option<PathBuf>,
    /// `weft.security.projects-file`: a TOML file of who may charge each
    /// project; `None`: anyone may charge any project.
    pub projects_file: Option<PathBuf>,
}

/// The HTTP server's TLS and connection limits (`weft.http.*`).
#[derive(Debug, Clone, PartialEq)]
pub struct HttpSettings {
    /// The certificate and key the API is served with; `None`: plain HTTP.
    pub tls: Option<TlsFiles>,
    /// A connection making no progress this long is closed.
    pub idle_timeout: Duration,
    /// Connections open at once; `None`: half the file-descriptor limit.
    pub max_connections: Option<usize>,
    /// Connections one client address may hold open at once.
    pub max_connections_per_client: usize,
    /// How long one stream of `GET /ws/v1/events` lasts.
    pub event_stream_lifetime: Duration,
    /// Requests that may wait at once for an app's end; beyond it a wait
    /// answers at once.
    pub max_waiting_requests: usize,
}

/// The PEM files the API is served over TLS with (`weft.http.tls.*`, set
/// together).
#[derive(Debug, Clone, PartialEq)]
pub struct TlsFiles {
    /// `weft.http.tls.cert-file`: the certificate chain.
    pub cert: PathBuf,
    /// `weft.http.tls.key-file`: the certificate's private key.
    pub key: PathBuf,
}

impl Default for Settings {
    fn default() -> Self {
        Settings::from_properties(Properties::default())
            .expect("the defaults are valid (tested by defaults_parse_and_every_property_is_read)")
    }
}

const QUOTA_PREFIX: &str = "yarn.resourcemanager.quota.";

/// The pricing parameters passed to every pricing policy's `configure`.
const PRICING_PARAMETERS: &[&str] = &[
    "price.base.general",
    "price.base.gpu",
    "multiplicator.threshold.general",
    "multiplicator.threshold.gpu",
    "multiplicator.increment.general",
    "multiplicator.increment.gpu",
    "minimum.charged.mb",
    "minimum.charged.gpu",
];

impl Settings {
    /// Defaults, then `file` if given, then each `KEY=VALUE` override, checked.
    pub fn load(file: Option<&Path>, overrides: &[String]) -> Result<Settings, ConfigError> {
        Settings::from_properties(Properties::load(file, overrides)?)
    }

    /// Reads every property once into its typed place.
    pub fn from_properties(properties: Properties) -> Result<Settings, ConfigError> {
        let read = Reader {
            properties: &properties,
            #[cfg(test)]
            seen: Default::default(),
        };
        let q = |name: &str| format!("{QUOTA_PREFIX}{name}");
        let quota = QuotaSettings {
            enabled: read.flag(&q("enabled"))?,
            variable_price: read.flag(&q("variable.price.enabled"))?,
            min_runtime_ms: read.whole(&q("min.runtime"))?,
            scheduling_period_ms: read.whole(&q("scheduling.period"))?,
            multiplicator_interval_ms: read.whole(&q("multiplicator.interval"))?,
            default_credits: read.number("weft.quota.default-credits")?,
            unit_memory_mb: read.whole(&q("minimum.charged.mb"))?,
            unit_gpus: read.whole_u32(&q("minimum.charged.gpu"))?,
            budget: BudgetSettings {
                enforce: match read.text("weft.quota.budget.enforce")?.as_str() {
                    "refuse-new" => BudgetEnforcement::RefuseNew,
                    "stop-running" => BudgetEnforcement::StopRunning,
                    _ => BudgetEnforcement::Off,
                },
                warn_credits: read.number("weft.quota.budget.warn-credits")?,
            },
        };
        let quota_event_log = QuotaEventLogSettings {
            path: read.path("weft.quota.event-log")?,
            max_bytes: read.whole("weft.quota.event-log-max-mb")? << 20,
        };
        let mut pricing_params = Vec::new();
        for name in PRICING_PARAMETERS {
            let value = read.text(&q(name))?;
            pricing_params.push((name.to_string(), value));
        }
        let scheduler = SchedulerSettings {
            interval: Duration::from_millis(read.whole("weft.scheduler.interval-ms")?),
            reclaim_after_ms: read
                .flag("yarn.resourcemanager.scheduler.monitor.enable")?
                .then(|| read.whole("weft.reclaim.starvation-ms"))
                .transpose()?,
            reclaim_observe_only: read
                .flag("yarn.resourcemanager.monitor.capacity.preemption.observe_only")?,
            reclaim_per_round: read.number(
                "yarn.resourcemanager.monitor.capacity.preemption.total_preemption_per_round",
            )?,
            reclaim_interval_ms: read
                .whole("yarn.resourcemanager.monitor.capacity.preemption.monitoring_interval")?,
            reclaim_wait_before_kill_ms: read
                .whole("yarn.resourcemanager.monitor.capacity.preemption.max_wait_before_kill")?,
            reclaim_ignored_over_capacity: read.number(
                "yarn.resourcemanager.monitor.capacity.preemption.max_ignored_over_capacity",
            )?,
            reclaim_natural_termination: read.number(
                "yarn.resourcemanager.monitor.capacity.preemption.natural_termination_factor",
            )?,
            maximum_allocation: crate::resources::Resources::new(
                read.whole("yarn.scheduler.maximum-allocation-mb")?,
                read.whole_u32("yarn.scheduler.maximum-allocation-vcores")?,
                read.whole_u32("yarn.resource-types.yarn.io/gpu.maximum-allocation")?,
            ),
            usage_half_life_ms: read.whole("weft.scheduler.usage.half-life-ms")?,
            // Within i32 by its bounds (properties.rs).
            max_application_priority: i32::try_from(
                read.whole("yarn.cluster.max-application-priority")?,
            )
            .unwrap_or(i32::MAX),
            // Within MAX_OPPORTUNISTIC_QUEUE by its bounds.
            opportunistic_queue_length: usize::try_from(
                read.whole("yarn.nodemanager.opportunistic-containers-max-queue-length")?,
            )
            .unwrap_or(crate::limits::MAX_OPPORTUNISTIC_QUEUE),
        };
        // Read the patience even when reclaim is off, so a bad value is
        // refused either way (and the read is counted by the tests).
        read.whole("weft.reclaim.starvation-ms")?;
        let nodes = NodeSettings {
            heartbeat_interval_ms: read
                .whole("yarn.resourcemanager.nodemanagers.heartbeat-interval-ms")?,
            expiry_interval_ms: read.whole("yarn.nm.liveness-monitor.expiry-interval-ms")?,
            decommission_timeout_ms: read
                .whole("yarn.resourcemanager.nodemanager-graceful-decommission-timeout-secs")?
                .saturating_mul(1000),
        };
        let agent = AgentSettings {
            kill_grace: Duration::from_millis(
                read.whole("yarn.nodemanager.sleep-delay-before-sigkill.ms")?,
            ),
            stderr_tail_bytes: read.whole("yarn.nodemanager.container.stderr.tail.bytes")? as usize,
            log_retain: Duration::from_secs(read.whole("yarn.nodemanager.log.retain-seconds")?),
            reserved_memory_mb: read
                .whole("yarn.nodemanager.resource.system-reserved-memory-mb")?,
            run_as: match read.text("weft.agent.run-as")?.as_str() {
                "submitter" => RunAsSetting::Submitter,
                "local-user" => RunAsSetting::LocalUser,
                _ => RunAsSetting::Agent,
            },
            local_user: read
                .text("yarn.nodemanager.linux-container-executor.nonsecure-mode.local-user")?
                .trim()
                .to_string(),
            pids_limit: read.whole("weft.agent.pids-limit")?,
            syscall_filter: read.flag("weft.agent.syscall-filter")?,
            log_limit_bytes: read
                .flag("yarn.nodemanager.container-log-monitor.enable")?
                .then(|| -> Result<u64, ConfigError> {
                    Ok(read
                        .whole("yarn.nodemanager.container-log-monitor.dir-size-limit-bytes")?
                        .min(read.whole(
                            "yarn.nodemanager.container-log-monitor.total-size-limit-bytes",
                        )?))
                })
                .transpose()?,
            log_check_interval: Duration::from_millis(
                read.whole("yarn.nodemanager.container-log-monitor.interval-ms")?,
            ),
            own_network: read.text("weft.agent.container-network")? == "none",
            banned_users: read
                .text("weft.agent.banned-users")?
                .split(',')
                .map(|u| u.trim().to_string())
                .filter(|u| !u.is_empty())
                .collect(),
            min_user_id: read.whole_u32("weft.agent.min-user-id")?,
            health: health_settings(&read)?,
        };
        let max_completed_applications =
            read.whole("yarn.resourcemanager.max-completed-applications")? as usize;
        let reservations = ReservationSystemSettings {
            enabled: read.flag("yarn.resourcemanager.reservation-system.enable")?,
            max_periodicity_ms: read
                .whole("yarn.resourcemanager.reservation-system.max-periodicity")?
                as i64,
            time_step_ms: read
                .whole("yarn.resourcemanager.reservation-system.planfollower.time-step")?
                as i64,
        };
        let policies = PolicySettings {
            scheduling: read.text("weft.policy.scheduling")?,
            pricing: read.text("weft.policy.pricing")?,
            sharing: read.text("weft.policy.sharing")?,
            limits: CallLimits {
                timeout: Duration::from_millis(read.whole("weft.policy.call-timeout-ms")?),
                memory_bytes: (read.whole("weft.policy.memory-limit-mb")? << 20) as usize,
            },
            max_consecutive_failures: read.whole_u32("weft.policy.max-consecutive-failures")?,
            watch_dir: read.path("weft.policy.watch-dir")?,
            compile_cache_bytes: read.whole("weft.policy.compile-cache-mb")? << 20,
            compile_cache_dir: read.path("weft.policy.compile-cache-dir")?,
            standby_memory_bytes: read.whole("weft.policy.standby-memory-mb")? << 20,
            instance_pool: read.whole_u32("weft.policy.instance-pool")?,
        };
        let store = StoreSettings {
            url: Some(read.text("weft.store.url")?).filter(|url| !url.is_empty()),
            scheduling_wait_ms: read
                .whole("yarn.resourcemanager.work-preserving-recovery.scheduling-wait-ms")?,
            lease_ms: read.whole("weft.ha.lease-ms")?,
        };
        let authentication = match read.text("weft.security.authentication")?.as_str() {
            "token" => Authentication::Token,
            _ => Authentication::Simple,
        };
        // In token mode an ACL left at its default means the server's own
        // user, as Hadoop's AdminACLsManager always admits the daemon's user.
        let mode_default_acl = |key: &str| -> Result<Option<String>, ConfigError> {
            let value = read.text(key)?;
            let defaulted = !properties.is_given(key);
            Ok((authentication == Authentication::Simple || !defaulted).then_some(value))
        };
        let security = SecuritySettings {
            authentication,
            admin_acl: mode_default_acl("yarn.admin.acl")?,
            node_acl: mode_default_acl("weft.security.node-acl")?,
            default_user: read.text("weft.security.default-user")?,
            users_file: read.path("weft.security.users-file")?,
            tokens_file: read.path("weft.security.tokens-file")?,
            projects_file: read.path("weft.security.projects-file")?,
        };
        let tls = match (
            read.path("weft.http.tls.cert-file")?,
            read.path("weft.http.tls.key-file")?,
        ) {
            (Some(cert), Some(key)) => Some(TlsFiles { cert, key }),
            (None, None) => None,
            _ => {
                return Err(ConfigError::Inconsistent(
                    "weft.http.tls.cert-file and weft.http.tls.key-file must be set together"
                        .into(),
                ));
            }
        };
        let http = HttpSettings {
            tls,
            idle_timeout: Duration::from_millis(read.whole("weft.http.idle-timeout-ms")?),
            max_connections: match read.whole("weft.http.max-connections")? {
                0 => None,
                n => Some(n as usize),
            },
            max_connections_per_client: read.whole("weft.http.max-connections-per-client")?
                as usize,
            event_stream_lifetime: Duration::from_millis(
                read.whole("weft.http.event-stream-lifetime-ms")?,
            ),
            max_waiting_requests: read.whole("weft.http.max-waiting-requests")? as usize,
        };
        let yarn_rpc = YarnRpcSettings {
            enabled: read.flag("weft.yarn-rpc.enabled")?,
            client_address: read.address("yarn.resourcemanager.address")?,
            scheduler_address: read.address("yarn.resourcemanager.scheduler.address")?,
            node_manager_address: read.address("yarn.nodemanager.address")?,
        };
        let accounting_enabled = read.flag("weft.accounting.enabled")?;
        let scheduler_conf = SchedulerConfSettings {
            store: match read
                .text("yarn.scheduler.configuration.store.class")?
                .as_str()
            {
                "file" => ConfStore::File,
                "memory" => ConfStore::Memory,
                _ => ConfStore::Store,
            },
            queue_admins_may_change: read
                .text("yarn.scheduler.configuration.mutation.acl-policy.class")?
                .ends_with(".QueueAdminConfigurationMutationACLPolicy"),
        };
        let exclude = "yarn.resourcemanager.nodes.exclude-path";
        let nodes_exclude_path = read.path(exclude)?;
        if let Some(path) = nodes_exclude_path.as_ref().filter(|p| !p.is_absolute()) {
            return Err(ConfigError::BadValue {
                key: exclude.into(),
                value: path.display().to_string(),
                expected: "an absolute path".into(),
            });
        }
        #[cfg(test)]
        read.check_all_read();
        Ok(Settings {
            quota,
            quota_event_log,
            pricing_params,
            scheduler,
            nodes,
            nodes_exclude_path,
            scheduler_conf,
            agent,
            max_completed_applications,
            reservations,
            policies,
            security,
            yarn_rpc,
            http,
            store,
            queue_properties: properties.queue_properties.clone(),
            accounting_enabled,
            properties,
        })
    }

    /// Every property and its value, for `weft config`.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &str)> {
        self.properties.iter()
    }
}

/// An agent's health checks, from `yarn.nodemanager.disk-health-checker.*`
/// and `yarn.nodemanager.health-checker.*`.
fn health_settings(read: &Reader<'_>) -> Result<HealthSettings, ConfigError> {
    const DISKS: &str = "yarn.nodemanager.disk-health-checker";
    const SCRIPT: &str = "yarn.nodemanager.health-checker";
    let disk = DiskCheckSettings {
        interval: Duration::from_millis(read.whole(&format!("{DISKS}.interval-ms"))?),
        max_used_percent: read
            .number(&format!("{DISKS}.max-disk-utilization-per-disk-percentage"))?,
        min_free_mb: read.whole(&format!("{DISKS}.min-free-space-per-disk-mb"))?,
    };
    let args = read
        .text(&format!("{SCRIPT}.script.opts"))?
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let interval = Duration::from_millis(read.whole(&format!("{SCRIPT}.interval-ms"))?);
    let timeout = Duration::from_millis(read.whole(&format!("{SCRIPT}.timeout-ms"))?);
    Ok(HealthSettings {
        disk: read.flag(&format!("{DISKS}.enable"))?.then_some(disk),
        script: read
            .path(&format!("{SCRIPT}.script.path"))?
            .map(|path| HealthScriptSettings {
                path,
                args,
                interval,
                timeout,
            }),
    })
}

/// Reads typed values out of [`Properties`]. The values were checked when
/// set, so a parse failure here means the table and the reader disagree.
struct Reader<'a> {
    properties: &'a Properties,
    /// Under test, every name read, to prove no property is left unread.
    #[cfg(test)]
    seen: std::cell::RefCell<std::collections::BTreeSet<String>>,
}

impl Reader<'_> {
    fn raw(&self, key: &str) -> Result<&str, ConfigError> {
        #[cfg(test)]
        self.seen.borrow_mut().insert(key.to_string());
        self.properties.value(key)
    }

    fn parsed<T: std::str::FromStr>(&self, key: &str, expected: &str) -> Result<T, ConfigError> {
        let value = self.raw(key)?;
        value.parse().map_err(|_| ConfigError::BadValue {
            key: key.into(),
            expected: expected.into(),
            value: value.into(),
        })
    }

    fn flag(&self, key: &str) -> Result<bool, ConfigError> {
        self.parsed(key, "true or false")
    }

    fn whole(&self, key: &str) -> Result<u64, ConfigError> {
        self.parsed(key, "a whole number")
    }

    fn whole_u32(&self, key: &str) -> Result<u32, ConfigError> {
        self.parsed(key, "a whole number below 2^32")
    }

    fn number(&self, key: &str) -> Result<f64, ConfigError> {
        self.parsed(key, "a number")
    }

    fn text(&self, key: &str) -> Result<String, ConfigError> {
        self.raw(key).map(str::to_string)
    }

    /// A `host:port`, or `None` when the property is empty.
    fn address(&self, key: &str) -> Result<Option<String>, ConfigError> {
        let value = self.raw(key)?.trim();
        Ok((!value.is_empty()).then(|| value.to_string()))
    }

    /// A path, or `None` when the property is empty.
    fn path(&self, key: &str) -> Result<Option<PathBuf>, ConfigError> {
        let value = self.raw(key)?.trim();
        Ok((!value.is_empty()).then(|| PathBuf::from(value)))
    }

    #[cfg(test)]
    fn check_all_read(&self) {
        let seen = self.seen.borrow();
        for (name, ..) in PROPERTIES {
            assert!(
                seen.contains(*name),
                "{name} is in the table but Settings never reads it"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_parse_and_every_property_is_read() {
        // `from_properties` asserts, under test, that it read every property.
        let settings = Settings::default();
        let quota = settings.quota;
        assert!(quota.enabled);
        assert!(!quota.variable_price);
        assert_eq!(
            (
                quota.min_runtime_ms,
                quota.scheduling_period_ms,
                quota.multiplicator_interval_ms
            ),
            (10000, 10000, 10000)
        );
        assert_eq!(quota.unit_memory_mb, 1024);
        assert_eq!(settings.pricing_params.len(), 8);
        assert_eq!(settings.scheduler.reclaim_after_ms, None);
        assert_eq!(settings.security.authentication, Authentication::Simple);
        assert_eq!(settings.security.admin_acl.as_deref(), Some("*"));
        assert_eq!(settings.http.tls, None);
        assert_eq!(
            settings.quota_event_log,
            QuotaEventLogSettings {
                path: None,
                max_bytes: 1 << 30
            }
        );
    }

    #[test]
    fn token_mode_leaves_unset_acls_to_the_server_user() {
        let settings = Settings::load(
            None,
            &[
                "weft.security.authentication=token".into(),
                "weft.security.node-acl=agents".into(),
            ],
        )
        .unwrap();
        assert_eq!(settings.security.admin_acl, None);
        assert_eq!(settings.security.node_acl.as_deref(), Some("agents"));
    }

    #[test]
    fn tls_needs_both_files() {
        let error = Settings::load(None, &["weft.http.tls.cert-file=c.pem".into()]).unwrap_err();
        assert!(error.to_string().contains("set together"), "{error}");
    }
}
