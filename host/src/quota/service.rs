//! The QuotaService of HOPS-1385: follows every running container and charges
//! its project for the time since it was last charged, at the price current
//! when charging, on CONTAINER_START / _UPDATE / _FINISH and every
//! QUOTA_COMPUTE. Also holds the current price multiplicators.
//!
//! QUOTA_COMPUTE does not visit every container: running containers are
//! counted per (context, size) — the context being who and what the usage is
//! for (app, project, user, queue, the node's label…, what the pricing
//! policy's `charge` sees with each row) — and every container that has not
//! started or changed size since the last QUOTA_COMPUTE owes exactly the
//! time since it, so each group owes one row that stands for all of them.
//! Only containers started or resized since then owe rows of their own.
//! Every row covers an interval of the host clock, which it carries to the
//! policy.
//!
//! Events only record what is owed; [`QuotaService::flush`] prices everything
//! owed in one policy call and applies it to the ledger. If pricing fails,
//! what is owed stays owed for the next flush: nothing is charged twice,
//! nothing is lost, nothing invalid is written.
//!
//! The service writes nothing itself: it records what changed (ledger rows,
//! multiplicators, owed usage, containers' charged-until times, the last
//! QUOTA_COMPUTE) and the resource manager writes all of it, with the
//! cluster's changes, in one transaction after each event
//! ([`QuotaService::take_changes`]). The stored state is then always one the
//! service had: after a crash, each container's usage is charged exactly
//! once, from its stored charged-until time.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::Pricing;
use super::budget::{BudgetState, BurnRates};
use super::ledger::{Charge, LedgerDelta, QuotaLedger};
use crate::config::QuotaSettings;
use crate::metrics::{ProjectLabels, metrics};
use crate::policy::{
    CallError, ChargeContext, Market, PriceMultiplicators, QuoteRequest, Usage, UsageRow,
};
use crate::resources::Resources;
use crate::store::{Batch, Store, StoreError};

/// Why the quota service refuses an event or cannot charge.
#[derive(Debug, thiserror::Error)]
pub enum QuotaError {
    /// An update or finish of a container it is not charging, by id.
    #[error("container {0} is not being charged (never started, or already finished)")]
    UnknownContainer(String),
    /// A start of a container it is already charging, by id.
    #[error("container {0} is already being charged")]
    AlreadyStarted(String),
    /// The pricing policy's call failed: what is owed stays owed.
    #[error("the pricing policy failed: {0}")]
    Pricing(#[from] CallError),
    /// A store read or write failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Who and what a container's usage is for, shared by the containers and
/// rows that have the same one (see [`QuotaService::context`]).
pub type Context = Arc<ChargeContext>;

/// A [`Context`] compared by address: contexts are shared, so one address
/// is one context, and hashing it costs nothing.
#[derive(Debug, Clone)]
struct Shared(Context);

impl PartialEq for Shared {
    fn eq(&self, other: &Shared) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Shared {}

impl std::hash::Hash for Shared {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        Arc::as_ptr(&self.0).hash(state);
    }
}

/// A container the service is charging.
#[derive(Debug, Clone)]
struct Tracked {
    project: Arc<str>,
    user: Arc<str>,
    /// Its app, whose credits it adds to.
    app: Arc<str>,
    context: Context,
    resources: Resources,
    started_ms: u64,
    /// When an event of its own last charged it. QUOTA_COMPUTE charges every
    /// container without touching this, so the container has been charged up
    /// to the later of this and the last QUOTA_COMPUTE.
    last_charged_ms: u64,
}

impl Tracked {
    fn new(context: Context, resources: Resources, started_ms: u64, charged_ms: u64) -> Tracked {
        Tracked {
            project: context.project.as_str().into(),
            user: context.user.as_str().into(),
            app: context.app.as_str().into(),
            context,
            resources,
            started_ms,
            last_charged_ms: charged_ms,
        }
    }

    fn group(&self) -> Group {
        (Shared(self.context.clone()), self.resources)
    }
}

/// Running containers of one context and size are priced together.
type Group = (Shared, Resources);

/// Usage recorded by an event, not yet priced: `containers` containers of
/// one size, each owing `seconds`, over [`from_ms`, `to_ms`].
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Owed {
    project: Arc<str>,
    user: Arc<str>,
    app: Arc<str>,
    /// What the policy sees the row with (for rows stored before contexts
    /// were, their app, project and user; see [`QuotaService::open`]).
    #[serde(default = "anonymous_context")]
    context: Context,
    resources: Resources,
    seconds: f64,
    containers: u32,
    at_ms: u64,
    /// The interval charged (rows stored before intervals were end at
    /// `at_ms`).
    #[serde(default)]
    from_ms: Option<u64>,
    #[serde(default)]
    to_ms: Option<u64>,
}

fn anonymous_context() -> Context {
    Arc::new(ChargeContext::anonymous())
}

impl Owed {
    /// The interval it covers, in ms: as recorded, or `seconds` up to when
    /// it was owed.
    fn interval(&self) -> (i64, i64) {
        let to = self.to_ms.unwrap_or(self.at_ms);
        let from = self
            .from_ms
            .unwrap_or_else(|| to.saturating_sub((self.seconds * 1000.0) as u64));
        (clock_ms(from), clock_ms(to.max(from)))
    }
}

/// A host clock reading as the WIT's `s64` (Weft's times are at most
/// year 9999, far inside it).
fn clock_ms(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

/// What unit prices depend on: the multiplicators (as bits), the pricing
/// policy's generation, and the minute (a policy may price by the time of
/// day).
type PricesKey = (u64, u64, u64, u64);

/// Credits per second for one unit of each resource, at today's multiplicators.
#[derive(Debug, Clone, Copy, Serialize, utoipa::ToSchema)]
pub struct UnitPrices {
    /// Credits per second for one vcore.
    pub vcore: f64,
    /// Credits per second for one unit of memory
    /// (`yarn.resourcemanager.quota.minimum.charged.mb` MB).
    pub memory: f64,
    /// Credits per second for one unit of GPUs
    /// (`yarn.resourcemanager.quota.minimum.charged.gpu` GPUs).
    pub gpu: f64,
}

/// HOPS-1385's QuotaService: the containers it charges, the usage they owe, the
/// current multiplicators, the ledger and each project's burn rate (see the
/// module's docs).
pub struct QuotaService {
    settings: QuotaSettings,
    running: foldhash::HashMap<String, Tracked>,
    /// How many running containers each group has.
    groups: foldhash::HashMap<Group, u32>,
    /// Containers started or resized since the last QUOTA_COMPUTE: they owe
    /// from their own `last_charged_ms`, not from the last QUOTA_COMPUTE.
    fresh: foldhash::HashSet<String>,
    last_compute_ms: u64,
    owed: Vec<Owed>,
    multiplicators: PriceMultiplicators,
    ledger: QuotaLedger,
    /// Credits charged per app since [`QuotaService::take_app_credits`].
    app_credits: HashMap<Arc<str>, f64>,
    /// Each project's spending over the last hour.
    burn: BurnRates,
    /// The projects the last flush charged (their burn is sampled then).
    charged_projects: Vec<String>,
    /// The last unit prices asked of the policy, by (multiplicators, the
    /// policy's generation): asking again would be a policy call per read.
    unit_prices_cache: std::sync::Mutex<Option<(PricesKey, UnitPrices)>>,
    /// What changed since [`QuotaService::take_changes`]; `None`: nothing
    /// is stored (replay, simulation).
    changes: Option<QuotaChanges>,
    /// The contexts in use, each once ([`QuotaService::context`]).
    contexts: foldhash::HashMap<ContextKey, Context>,
}

/// What tells two contexts apart: every field of [`ChargeContext`].
type ContextKey = (
    String,
    String,
    String,
    String,
    String,
    Vec<String>,
    i32,
    String,
    Vec<(String, String)>,
    bool,
    Option<String>,
);

fn context_key(c: &ChargeContext) -> ContextKey {
    (
        c.app.clone(),
        c.queue.clone(),
        c.user.clone(),
        c.project.clone(),
        c.application_type.clone(),
        c.application_tags.clone(),
        c.priority,
        c.node_label.clone(),
        c.node_attributes
            .iter()
            .map(|a| (a.key.clone(), a.value.clone()))
            .collect(),
        matches!(
            c.execution_type,
            crate::policy::ExecutionType::Opportunistic
        ),
        c.reservation.clone(),
    )
}

/// What the service changed since the store last took it.
#[derive(Debug, Default)]
struct QuotaChanges {
    ledger: LedgerDelta,
    multiplicators: bool,
    owed: bool,
    last_compute: bool,
    /// Containers whose own charged-until time moved, or that stopped
    /// being charged.
    containers: foldhash::HashSet<String>,
}

/// The setting under which the last QUOTA_COMPUTE's time is kept.
const LAST_COMPUTE_SETTING: &str = "quota.last-compute-ms";

/// A running container as the store keeps it for the quota service.
#[derive(Debug, Clone)]
pub struct ChargedContainer {
    /// The container's id.
    pub id: String,
    /// Who and what it is charged for (its app, project, user…).
    pub context: ChargeContext,
    /// Its size.
    pub resources: Resources,
    /// When it started to run, in ms since the epoch: its minimum runtime
    /// counts from then.
    pub started_ms: u64,
    /// Up to when its own events charged it (QUOTA_COMPUTE charges every
    /// container up to its time, kept apart).
    pub charged_until_ms: u64,
}

impl std::fmt::Debug for QuotaService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuotaService")
            .field("running", &self.running.len())
            .field("owed", &self.owed.len())
            .finish()
    }
}

const UNIT_MULTIPLICATORS: PriceMultiplicators = PriceMultiplicators {
    general: 1.0,
    gpu: 1.0,
};

impl QuotaService {
    /// A service that stores nothing (replay, simulation).
    pub fn new(settings: QuotaSettings) -> QuotaService {
        QuotaService {
            ledger: QuotaLedger::new(settings.default_credits),
            settings,
            running: Default::default(),
            groups: Default::default(),
            fresh: Default::default(),
            last_compute_ms: 0,
            owed: Vec::new(),
            multiplicators: UNIT_MULTIPLICATORS,
            app_credits: HashMap::new(),
            burn: BurnRates::default(),
            charged_projects: Vec::new(),
            unit_prices_cache: Default::default(),
            changes: None,
            contexts: Default::default(),
        }
    }

    /// `context`, shared with every container and row that has the same
    /// one: rows of one context and size are priced as one, and a batch
    /// sends each context once.
    pub fn context(&mut self, context: ChargeContext) -> Context {
        self.contexts
            .entry(context_key(&context))
            .or_insert_with(|| Arc::new(context))
            .clone()
    }

    /// Lets go of contexts no container or row holds any longer.
    fn forget_unused_contexts(&mut self) {
        self.contexts
            .retain(|_, context| Arc::strong_count(context) > 1);
    }

    /// A service whose changes are stored, with the ledger, the owed usage,
    /// the last QUOTA_COMPUTE and (under variable pricing) the
    /// multiplicators `store` holds restored. Running containers come back
    /// with the cluster ([`QuotaService::restore_container`]).
    pub fn open(settings: QuotaSettings, store: &Store) -> Result<QuotaService, StoreError> {
        let mut service = QuotaService::new(settings);
        service.ledger.restore(store.projects()?, store.daily()?);
        if let Some((general, gpu)) = store.multiplicators()?
            && service.settings.variable_price
        {
            service.multiplicators = PriceMultiplicators { general, gpu };
        }
        for record in store.owed()? {
            let corrupt = |e: serde_json::Error| StoreError::Corrupt {
                target: store.target().to_string(),
                what: "an owed_usage row".into(),
                why: e.to_string(),
            };
            let value: serde_json::Value = serde_json::from_str(&record).map_err(corrupt)?;
            let stored_context = value.get("context").is_some();
            let mut owed: Owed = serde_json::from_value(value).map_err(corrupt)?;
            // Stored before rows carried contexts: its own app, project and
            // user, so a per-project price still applies.
            if !stored_context {
                owed.context = Arc::new(ChargeContext {
                    app: owed.app.to_string(),
                    project: owed.project.to_string(),
                    user: owed.user.to_string(),
                    ..ChargeContext::anonymous()
                });
            }
            service.owed.push(owed);
        }
        service.last_compute_ms = store
            .settings()?
            .get(LAST_COMPUTE_SETTING)
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        service.changes = Some(QuotaChanges::default());
        Ok(service)
    }

    /// Charges a container again from its `charged_until_ms`: one a
    /// recovery left waiting for its agent, which has come back and says
    /// it runs (it ran while the server was down). The time up to the last
    /// QUOTA_COMPUTE is owed at once, as those computes would have charged
    /// it.
    pub fn resume(&mut self, container: ChargedContainer) {
        if !self.settings.enabled || self.running.contains_key(&container.id) {
            return;
        }
        let context = self.context(container.context);
        let mut tracked = Tracked::new(
            context,
            container.resources,
            container.started_ms,
            container.charged_until_ms,
        );
        if tracked.last_charged_ms < self.last_compute_ms {
            let owed = owe(&mut tracked, self.last_compute_ms, self.last_compute_ms);
            self.owed.extend(owed);
            self.owed_changed();
        }
        *self.groups.entry(tracked.group()).or_insert(0) += 1;
        self.mark_fresh(&container.id, tracked.last_charged_ms);
        self.container_changed(&container.id);
        self.running.insert(container.id, tracked);
    }

    /// Puts back a running container as stored: charged up to the later of
    /// its own charged-until time and the last QUOTA_COMPUTE, as before.
    pub fn restore_container(&mut self, container: ChargedContainer) {
        if !self.settings.enabled || self.running.contains_key(&container.id) {
            return;
        }
        let context = self.context(container.context);
        let tracked = Tracked::new(
            context,
            container.resources,
            container.started_ms,
            container.charged_until_ms,
        );
        *self.groups.entry(tracked.group()).or_insert(0) += 1;
        if tracked.last_charged_ms > self.last_compute_ms {
            self.fresh.insert(container.id.clone());
        }
        self.running.insert(container.id, tracked);
    }

    /// When the last QUOTA_COMPUTE ran: every running container is charged
    /// up to it, or up to its own [`QuotaService::charged_until`] if later.
    pub fn last_compute_ms(&self) -> u64 {
        self.last_compute_ms
    }

    /// Up to when `container`'s own events charged it, if it is charged.
    pub fn charged_until(&self, container: &str) -> Option<u64> {
        self.running.get(container).map(|t| t.last_charged_ms)
    }

    /// Adds what changed since the last call to `batch` (nothing if the
    /// service stores nothing). Containers' rows must be in `batch` before.
    pub fn take_changes(&mut self, batch: &mut Batch) {
        let Some(changes) = self.changes.as_mut().map(std::mem::take) else {
            return;
        };
        batch.ledger(&changes.ledger);
        if changes.multiplicators {
            batch.multiplicators(self.multiplicators.general, self.multiplicators.gpu);
        }
        if changes.owed {
            batch.replace_owed(
                self.owed
                    .iter()
                    .map(|o| serde_json::to_string(o).expect("owed usage serializes")),
            );
        }
        if changes.last_compute {
            batch.set_setting(LAST_COMPUTE_SETTING, &self.last_compute_ms.to_string());
        }
        for id in &changes.containers {
            batch.charged_until(id, self.charged_until(id));
        }
    }

    fn changed(&mut self) -> Option<&mut QuotaChanges> {
        self.changes.as_mut()
    }

    fn container_changed(&mut self, container: &str) {
        if let Some(changes) = self.changes.as_mut() {
            changes.containers.insert(container.to_string());
        }
    }

    fn owed_changed(&mut self) {
        if let Some(changes) = self.changes.as_mut() {
            changes.owed = true;
        }
    }

    /// The settings it runs with.
    pub fn settings(&self) -> &QuotaSettings {
        &self.settings
    }

    /// CONTAINER_START: the container is charged from `now` on. A start
    /// before the last QUOTA_COMPUTE (a container the server learnt of
    /// late) owes the time up to it at once, as that compute would have
    /// charged it.
    pub fn start(
        &mut self,
        container: &str,
        context: ChargeContext,
        resources: Resources,
        now: u64,
    ) -> Result<(), QuotaError> {
        if !self.settings.enabled {
            return Ok(());
        }
        if self.running.contains_key(container) {
            return Err(QuotaError::AlreadyStarted(container.into()));
        }
        let context = self.context(context);
        let mut tracked = Tracked::new(context, resources, now, now);
        if now < self.last_compute_ms {
            let owed = owe(&mut tracked, self.last_compute_ms, self.last_compute_ms);
            self.owed.extend(owed);
            self.owed_changed();
        }
        *self.groups.entry(tracked.group()).or_insert(0) += 1;
        self.mark_fresh(container, tracked.last_charged_ms);
        self.running.insert(container.into(), tracked);
        self.container_changed(container);
        Ok(())
    }

    /// Remembers that `container` was charged by an event at `now`.
    fn mark_fresh(&mut self, container: &str, now: u64) {
        if now > self.last_compute_ms {
            self.fresh.insert(container.into());
        }
    }

    /// Takes `container` out of its group, as charged up to the later of its
    /// own last charge and the last QUOTA_COMPUTE.
    fn leave_group(&mut self, container: &str) -> Option<&mut Tracked> {
        let tracked = self.running.get_mut(container)?;
        tracked.last_charged_ms = tracked.last_charged_ms.max(self.last_compute_ms);
        let group = tracked.group();
        if let Some(count) = self.groups.get_mut(&group) {
            *count -= 1;
            if *count == 0 {
                self.groups.remove(&group);
            }
        }
        self.fresh.remove(container);
        self.running.get_mut(container)
    }

    /// CONTAINER_UPDATE: the old size is owed up to `now`, the new one from then.
    pub fn update(
        &mut self,
        container: &str,
        resources: Resources,
        now: u64,
    ) -> Result<(), QuotaError> {
        if !self.settings.enabled {
            return Ok(());
        }
        let tracked = self
            .leave_group(container)
            .ok_or_else(|| QuotaError::UnknownContainer(container.into()))?;
        let owed = owe(tracked, now, now);
        tracked.resources = resources;
        let group = tracked.group();
        self.owed.extend(owed);
        *self.groups.entry(group).or_insert(0) += 1;
        self.mark_fresh(container, now);
        self.container_changed(container);
        self.owed_changed();
        Ok(())
    }

    /// CONTAINER_FINISH: what is left is owed — with `minimum` (its own
    /// work ended it), at least up to the minimum runtime; else only up to
    /// `now` (the system ended it: it pays for no more than it ran).
    pub fn finish(&mut self, container: &str, now: u64, minimum: bool) -> Result<(), QuotaError> {
        if !self.settings.enabled {
            return Ok(());
        }
        self.leave_group(container)
            .ok_or_else(|| QuotaError::UnknownContainer(container.into()))?;
        let mut tracked = self.running.remove(container).expect("found above");
        let end = match minimum {
            true => now.max(
                tracked
                    .started_ms
                    .saturating_add(self.settings.min_runtime_ms),
            ),
            false => now,
        };
        self.owed.extend(owe(&mut tracked, end, now));
        self.container_changed(container);
        self.owed_changed();
        Ok(())
    }

    /// QUOTA_COMPUTE: every running container owes its time up to `now`:
    /// one row per group for the containers charged up to the last
    /// QUOTA_COMPUTE, one row each for those charged since.
    pub fn compute(&mut self, now: u64) {
        if now <= self.last_compute_ms {
            return;
        }
        let mut since_last = self.groups.clone();
        let fresh: Vec<String> = self.fresh.drain().collect();
        for container in fresh {
            let tracked = self.running.get_mut(&container).expect("fresh is running");
            if let Some(count) = since_last.get_mut(&tracked.group()) {
                *count -= 1;
            }
            self.owed.extend(owe(tracked, now, now));
            self.container_changed(&container);
        }
        let seconds = (now - self.last_compute_ms) as f64 / 1000.0;
        for ((Shared(context), resources), containers) in since_last {
            if containers > 0 {
                self.owed.push(Owed {
                    project: context.project.as_str().into(),
                    user: context.user.as_str().into(),
                    app: context.app.as_str().into(),
                    context,
                    resources,
                    seconds,
                    containers,
                    at_ms: now,
                    from_ms: Some(self.last_compute_ms),
                    to_ms: Some(now),
                });
            }
        }
        self.last_compute_ms = now;
        if let Some(changes) = self.changed() {
            changes.last_compute = true;
            changes.owed = true;
        }
    }

    /// Prices everything owed in one call and charges it. Returns the credits
    /// charged. On a pricing failure nothing is charged and the usage stays owed.
    pub fn flush(&mut self, pricing: &dyn Pricing) -> Result<f64, QuotaError> {
        if self.owed.is_empty() {
            return Ok(0.0);
        }
        let usage = usage_of(self.owed.iter().map(|o| {
            let (from, to) = o.interval();
            (&o.context, o.resources, o.seconds, from, to)
        }));
        // A row's price is for one container; the policy prices each row on
        // its own, so a row standing for n containers costs n times as much.
        let prices = pricing.charge(&usage, self.multiplicators)?;
        let credits: Vec<f64> = prices
            .iter()
            .zip(&self.owed)
            .map(|(price, owed)| price * f64::from(owed.containers))
            .collect();
        if pricing.shadowing() {
            let rows = self
                .owed
                .iter()
                .map(|owed| (owed.project.clone(), owed.containers))
                .collect();
            pricing.shadow_charge(usage, self.multiplicators, prices, rows);
        }
        // One ledger charge per (project, user, day): a flush prices every
        // running container, and the ledger needs only the sums.
        const DAY_MS: u64 = 86_400_000;
        // (project, user, day number) → (when first charged, credits).
        type Day = (Arc<str>, Arc<str>, u64);
        let mut sums: HashMap<Day, (u64, f64)> = HashMap::new();
        for (owed, credits) in self.owed.drain(..).zip(&credits) {
            *self.app_credits.entry(owed.app).or_insert(0.0) += credits;
            let sum = sums
                .entry((owed.project, owed.user, owed.at_ms / DAY_MS))
                .or_insert((owed.at_ms, 0.0));
            sum.1 += credits;
        }
        let charges: Vec<Charge> = sums
            .into_iter()
            .map(|((project, user, _), (at_ms, credits))| Charge {
                project: project.to_string(),
                user: user.to_string(),
                at_ms,
                credits,
            })
            .collect();
        // A project this server has not sampled yet starts its burn from
        // what it had used before these charges, so its first ones count.
        for charge in &charges {
            let before = self
                .ledger
                .projects()
                .get(&charge.project)
                .map_or(0.0, |account| account.total_used);
            self.burn.baseline(charge.at_ms, &charge.project, before);
        }
        let delta = self.ledger.apply(&charges);
        self.charged_projects = delta.projects.keys().cloned().collect();
        for charge in &charges {
            metrics()
                .credits_charged
                .get_or_create(&ProjectLabels {
                    project: crate::metrics::label(&charge.project),
                })
                .inc_by(charge.credits);
        }
        if let Some(changes) = self.changed() {
            changes.ledger.merge(delta);
            changes.owed = true;
        }
        self.forget_unused_contexts();
        Ok(credits.iter().sum())
    }

    /// The PriceMultiplicatorService step: new multiplicators from
    /// `utilization` (1 when variable pricing is off), saved for a restart.
    pub fn update_multiplicators(
        &mut self,
        pricing: &dyn Pricing,
        mut market: Market,
    ) -> Result<PriceMultiplicators, QuotaError> {
        if !self.settings.variable_price {
            self.multiplicators = UNIT_MULTIPLICATORS;
            return Ok(self.multiplicators);
        }
        market.last = self.multiplicators;
        self.multiplicators = pricing.multiplicators(&market)?;
        if let Some(changes) = self.changed() {
            changes.multiplicators = true;
        }
        Ok(self.multiplicators)
    }

    /// The multiplicators charges are priced at now: the last step's (restored
    /// at a restart), 1 before the first and always with variable pricing off.
    pub fn multiplicators(&self) -> PriceMultiplicators {
        self.multiplicators
    }

    /// What one second of one unit of each resource costs now, asked of the
    /// pricing policy itself so the answer is what would be charged.
    pub fn unit_prices(&self, pricing: &dyn Pricing, now: u64) -> Result<UnitPrices, CallError> {
        let key = pricing.generation().map(|generation| {
            let m = self.multiplicators;
            (
                m.general.to_bits(),
                m.gpu.to_bits(),
                generation,
                now / 60_000,
            )
        });
        let mut cache = self
            .unit_prices_cache
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let (Some(key), Some((kept, prices))) = (key, cache.as_ref())
            && key == *kept
        {
            return Ok(*prices);
        }
        // The second from now, for no one in particular: a policy that
        // prices by context or time of day may charge others otherwise.
        let context = anonymous_context();
        let (from, to) = (clock_ms(now), clock_ms(now.saturating_add(1000)));
        let unit = |memory_mb, vcores, gpus| Resources::new(memory_mb, vcores, gpus);
        let usage = usage_of([
            (&context, unit(0, 1, 0), 1.0, from, to),
            (
                &context,
                unit(self.settings.unit_memory_mb, 0, 0),
                1.0,
                from,
                to,
            ),
            (&context, unit(0, 0, self.settings.unit_gpus), 1.0, from, to),
        ]);
        let prices = pricing.charge(&usage, self.multiplicators)?;
        let prices = UnitPrices {
            vcore: prices[0],
            memory: prices[1],
            gpu: prices[2],
        };
        *cache = key.map(|key| (key, prices));
        Ok(prices)
    }

    /// Gives `project` `credits` remaining.
    pub fn set_credits(&mut self, project: &str, credits: f64) {
        let delta = self.ledger.set_credits(project, credits);
        if let Some(changes) = self.changed() {
            changes.ledger.merge(delta);
        }
    }

    /// Adds `credits` to `project`'s credits left (an administrator's
    /// grant, bounded by the caller); returns what it has left now.
    pub fn grant(&mut self, project: &str, credits: f64) -> f64 {
        let delta = self.ledger.grant(project, credits);
        if let Some(changes) = self.changed() {
            changes.ledger.merge(delta);
        }
        self.ledger.remaining(project)
    }

    /// What `projects` will be charged that the ledger does not hold yet:
    /// their running containers' rest of the minimum runtime (should their
    /// work end now), per (project, size), and the usage owed and not yet
    /// priced — as (project, size, seconds) rows.
    pub fn uncharged(&self, projects: &std::collections::HashSet<&str>) -> Vec<Uncharged> {
        let minimum = self.settings.min_runtime_ms;
        let mut rows = Vec::new();
        for tracked in self.running.values() {
            if !projects.contains(&*tracked.project) {
                continue;
            }
            let charged_to = tracked.last_charged_ms.max(self.last_compute_ms);
            let owed_to = tracked.started_ms.saturating_add(minimum);
            if owed_to > charged_to {
                rows.push(Uncharged {
                    project: tracked.project.clone(),
                    context: tracked.context.clone(),
                    resources: tracked.resources,
                    seconds: (owed_to - charged_to) as f64 / 1000.0,
                    from_ms: charged_to,
                });
            }
        }
        // Owed and not yet priced (a container that ended this event).
        for owed in &self.owed {
            if projects.contains(&*owed.project) {
                rows.push(Uncharged {
                    project: owed.project.clone(),
                    context: owed.context.clone(),
                    resources: owed.resources,
                    seconds: owed.seconds * f64::from(owed.containers),
                    from_ms: u64::try_from(owed.interval().0).unwrap_or(0),
                });
            }
        }
        rows
    }

    /// Prices `rows` at today's multiplicators, in one call: each its
    /// context, size and seconds from its start.
    pub fn price_rows(
        &self,
        pricing: &dyn Pricing,
        rows: &[Uncharged],
    ) -> Result<Vec<f64>, CallError> {
        let usage = usage_of(rows.iter().map(|row| {
            let from = clock_ms(row.from_ms);
            let ms = (row.seconds * 1000.0).clamp(0.0, 1e15) as i64;
            (
                &row.context,
                row.resources,
                row.seconds,
                from,
                from.saturating_add(ms),
            )
        }));
        pricing.charge(&usage, self.multiplicators)
    }

    /// What `containers` containers of `resources` would cost in `context`
    /// from `start_ms` for `duration_ms`, at today's multiplicators: the
    /// pricing policy's `quote`.
    pub fn quote(
        &self,
        pricing: &dyn Pricing,
        context: ChargeContext,
        resources: Resources,
        containers: u32,
        start_ms: u64,
        duration_ms: u64,
    ) -> Result<f64, CallError> {
        let request = QuoteRequest {
            context,
            memory_mb: resources.memory_mb,
            vcores: u64::from(resources.vcores),
            gpus: u64::from(resources.gpus),
            containers,
            start_ms: clock_ms(start_ms),
            duration_ms: clock_ms(duration_ms),
        };
        pricing.quote(&request, self.multiplicators)
    }

    /// The credits `project` has left (negative: in debt).
    pub fn credits_left(&self, project: &str) -> f64 {
        self.ledger.remaining(project)
    }

    /// Where `project`'s credits stand under `weft.quota.budget.*`.
    pub fn budget_state(&self, project: &str) -> BudgetState {
        BudgetState::of(self.ledger.remaining(project), &self.settings.budget)
    }

    /// Records every project's spending at `now`, for its burn rate.
    pub fn sample_burn(&mut self, now: u64) {
        self.burn.sample(now, &self.ledger);
    }

    /// Records the spending of the projects the last flush charged, at `now`.
    pub fn sample_charged_burn(&mut self, now: u64) {
        let charged = std::mem::take(&mut self.charged_projects);
        self.burn.sample_some(now, &self.ledger, &charged);
    }

    /// Each project's spending over the last hour.
    pub fn burn_rates(&self) -> &BurnRates {
        &self.burn
    }

    /// The credits charged per app since the last call (for the apps'
    /// own totals).
    pub fn take_app_credits(&mut self) -> HashMap<Arc<str>, f64> {
        std::mem::take(&mut self.app_credits)
    }

    /// The ledger: every project's account and daily usage.
    pub fn ledger(&self) -> &QuotaLedger {
        &self.ledger
    }

    /// How many containers it is charging.
    pub fn running_containers(&self) -> usize {
        self.running.len()
    }

    /// Whether usage is waiting to be priced.
    pub fn has_owed(&self) -> bool {
        !self.owed.is_empty()
    }
}

/// What `tracked` owes up to `until`; it is then charged up to `until`.
/// `at` is when the charge happens (it picks the ledger day).
fn owe(tracked: &mut Tracked, until: u64, at: u64) -> Option<Owed> {
    let from = tracked.last_charged_ms;
    let millis = until.saturating_sub(from);
    tracked.last_charged_ms = tracked.last_charged_ms.max(until);
    (millis > 0).then(|| Owed {
        project: tracked.project.clone(),
        user: tracked.user.clone(),
        app: tracked.app.clone(),
        context: tracked.context.clone(),
        resources: tracked.resources,
        seconds: millis as f64 / 1000.0,
        containers: 1,
        at_ms: at,
        from_ms: Some(from),
        to_ms: Some(until),
    })
}

/// A row the ledger does not hold yet (see [`QuotaService::uncharged`]).
#[derive(Debug, Clone)]
pub struct Uncharged {
    /// The project it will be charged to.
    pub project: Arc<str>,
    /// Who and what it is for.
    pub context: Context,
    /// Its size.
    pub resources: Resources,
    /// How long, in seconds (for all the containers it stands for).
    pub seconds: f64,
    /// From when, in ms.
    pub from_ms: u64,
}

/// The WIT usage of `rows` (context, size, seconds, from, to), each context
/// sent once.
pub fn usage_of<'a>(
    rows: impl IntoIterator<Item = (&'a Context, Resources, f64, i64, i64)>,
) -> Usage {
    let mut usage = Usage::empty();
    let mut index: HashMap<*const ChargeContext, u32> = HashMap::new();
    for (context, resources, seconds, start_ms, end_ms) in rows {
        let next = usage.contexts.len() as u32;
        let at = *index.entry(Arc::as_ptr(context)).or_insert_with(|| {
            usage.contexts.push((**context).clone());
            next
        });
        usage.push(UsageRow {
            seconds,
            memory_mb: resources.memory_mb,
            vcores: u64::from(resources.vcores),
            gpus: u64::from(resources.gpus),
            start_ms,
            end_ms: end_ms.max(start_ms),
            context: at,
        });
    }
    usage
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_before_the_last_compute_owes_the_time_up_to_it() {
        let (mut quota, gb) = (service(), Resources::new(1024, 1, 0));
        quota.compute(10_000);
        quota.start("late", ctx("a", "p", "u"), gb, 4_000).unwrap();
        quota.compute(12_000);
        quota.finish("late", 13_000, false).unwrap();
        quota.flush(&PerGbSecond).unwrap();
        assert!((used(&quota, "p") - 9.0).abs() < 1e-9, "4 s to 13 s");
    }

    #[test]
    fn the_minimum_runtime_is_charged_only_when_its_own_work_ended_it() {
        let (mut quota, gb) = (service(), Resources::new(1024, 1, 0));
        quota.settings.min_runtime_ms = 10_000;
        quota.start("own", ctx("a", "p", "u"), gb, 0).unwrap();
        quota.start("system", ctx("a", "q", "u"), gb, 0).unwrap();
        quota.finish("own", 1_000, true).unwrap();
        quota.finish("system", 1_000, false).unwrap();
        quota.flush(&PerGbSecond).unwrap();
        assert!((used(&quota, "p") - 10.0).abs() < 1e-9);
        assert!((used(&quota, "q") - 1.0).abs() < 1e-9);
    }

    /// One credit per GB-second: easy to work out by hand.
    struct PerGbSecond;

    impl Pricing for PerGbSecond {
        fn multiplicators(&self, _: &Market) -> Result<PriceMultiplicators, CallError> {
            Ok(UNIT_MULTIPLICATORS)
        }
        fn quote(&self, _: &QuoteRequest, _: PriceMultiplicators) -> Result<f64, CallError> {
            Ok(0.0)
        }
        fn charge(&self, usage: &Usage, _: PriceMultiplicators) -> Result<Vec<f64>, CallError> {
            Ok(usage
                .seconds
                .iter()
                .zip(&usage.memory_mb)
                .map(|(seconds, mb)| seconds * *mb as f64 / 1024.0)
                .collect())
        }
    }

    /// The context of `app`'s containers, of `project` and `user`.
    fn ctx(app: &str, project: &str, user: &str) -> ChargeContext {
        ChargeContext {
            app: app.into(),
            project: project.into(),
            user: user.into(),
            ..ChargeContext::anonymous()
        }
    }

    fn service() -> QuotaService {
        let mut settings = crate::config::Settings::default().quota;
        settings.min_runtime_ms = 0;
        settings.default_credits = 1_000_000.0;
        QuotaService::new(settings)
    }

    fn used(quota: &QuotaService, project: &str) -> f64 {
        quota.ledger().projects()[project].total_used
    }

    #[test]
    fn grouped_compute_charges_every_container_for_exactly_its_time() {
        let (mut quota, gb) = (service(), Resources::new(1024, 1, 0));
        // Three 1 GB containers of one group, one started between computes,
        // one resized, one finished between computes.
        quota.start("a", ctx("app", "p", "u"), gb, 0).unwrap();
        quota.start("b", ctx("app", "p", "u"), gb, 0).unwrap();
        quota.compute(10_000); // a, b: 10 s each
        quota.start("c", ctx("app", "p", "u"), gb, 14_000).unwrap();
        quota
            .update("b", Resources::new(2048, 1, 0), 15_000)
            .unwrap(); // b: 5 s at 1 GB
        quota.compute(20_000); // a: 10 s; b: 5 s at 2 GB; c: 6 s
        quota.finish("a", 25_000, true).unwrap(); // a: 5 s
        quota.compute(30_000); // b: 10 s at 2 GB; c: 10 s
        quota.flush(&PerGbSecond).unwrap();
        let expected = 10.0 + 10.0 + 10.0 + 5.0 + 5.0 * 2.0 + 6.0 + 5.0 + 10.0 * 2.0 + 10.0;
        assert!(
            (used(&quota, "p") - expected).abs() < 1e-9,
            "{}",
            used(&quota, "p")
        );
        assert_eq!(quota.running_containers(), 2);
    }

    #[test]
    fn each_app_is_told_what_its_containers_were_charged() {
        let (mut quota, gb) = (service(), Resources::new(1024, 1, 0));
        // Two apps of one project, user and size: grouped apart.
        quota.start("a1", ctx("app1", "p", "u"), gb, 0).unwrap();
        quota.start("a2", ctx("app1", "p", "u"), gb, 0).unwrap();
        quota.start("b1", ctx("app2", "p", "u"), gb, 0).unwrap();
        quota.compute(10_000);
        quota.finish("b1", 15_000, true).unwrap();
        quota.flush(&PerGbSecond).unwrap();
        let credits = quota.take_app_credits();
        assert!((credits[&Arc::from("app1")] - 20.0).abs() < 1e-9);
        assert!((credits[&Arc::from("app2")] - 15.0).abs() < 1e-9);
        assert!((used(&quota, "p") - 35.0).abs() < 1e-9);
        assert!(quota.take_app_credits().is_empty(), "each charge told once");
    }

    #[test]
    fn a_container_started_at_a_compute_joins_its_group_at_once() {
        let (mut quota, gb) = (service(), Resources::new(1024, 1, 0));
        quota.start("a", ctx("app", "p", "u"), gb, 0).unwrap();
        quota.compute(10_000);
        quota.start("b", ctx("app", "p", "u"), gb, 10_000).unwrap();
        quota.compute(20_000);
        quota.finish("b", 25_000, true).unwrap();
        quota.flush(&PerGbSecond).unwrap();
        // a: 10 + 10; b: 10 + 5.
        assert!(
            (used(&quota, "p") - 35.0).abs() < 1e-9,
            "{}",
            used(&quota, "p")
        );
    }

    /// Records the usage it is asked to price; charges nothing.
    #[derive(Default)]
    struct Recording(std::sync::Mutex<Vec<Usage>>);

    impl Pricing for Recording {
        fn multiplicators(&self, _: &Market) -> Result<PriceMultiplicators, CallError> {
            Ok(UNIT_MULTIPLICATORS)
        }
        fn charge(&self, usage: &Usage, _: PriceMultiplicators) -> Result<Vec<f64>, CallError> {
            self.0.lock().unwrap().push(usage.clone());
            Ok(vec![0.0; usage.len()])
        }
        fn quote(&self, _: &QuoteRequest, _: PriceMultiplicators) -> Result<f64, CallError> {
            Ok(0.0)
        }
    }

    #[test]
    fn each_row_carries_its_context_and_the_interval_it_covers() {
        let (mut quota, gb) = (service(), Resources::new(1024, 1, 0));
        let ml = ChargeContext {
            node_label: "gpu".into(),
            ..ctx("app1", "ml", "u")
        };
        quota.start("a", ml.clone(), gb, 0).unwrap();
        quota.start("b", ml.clone(), gb, 0).unwrap();
        quota
            .start("c", ctx("app2", "web", "u"), gb, 4_000)
            .unwrap();
        quota.compute(10_000);
        let pricing = Recording::default();
        quota.flush(&pricing).unwrap();
        let batches = pricing.0.lock().unwrap();
        let usage = &batches[0];
        // a and b share a context (sent once) and a row; c has its own.
        assert_eq!(usage.contexts.len(), 2, "{usage:?}");
        let rows: Vec<(String, i64, i64, f64)> = (0..usage.len())
            .map(|i| {
                let row = usage.row(i);
                let context = &usage.contexts[row.context as usize];
                (
                    context.project.clone(),
                    row.start_ms,
                    row.end_ms,
                    row.seconds,
                )
            })
            .collect();
        assert!(rows.contains(&("ml".into(), 0, 10_000, 10.0)), "{rows:?}");
        assert!(
            rows.contains(&("web".into(), 4_000, 10_000, 6.0)),
            "{rows:?}"
        );
        let ml = usage.contexts.iter().find(|c| c.project == "ml").unwrap();
        assert_eq!(ml.node_label, "gpu");
        drop(batches);
        // Nothing holds the contexts of ended containers once they are charged.
        quota.finish("a", 11_000, false).unwrap();
        quota.finish("b", 11_000, false).unwrap();
        quota.flush(&pricing).unwrap();
        assert_eq!(quota.contexts.len(), 1, "web's, still running");
    }
}
