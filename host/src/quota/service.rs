//! The QuotaService of HOPS-1385: follows every running container and charges
//! its project for the time since it was last charged, at the price current
//! when charging, on CONTAINER_START / _UPDATE / _FINISH and every
//! QUOTA_COMPUTE. Also holds the current price multiplicators.
//!
//! QUOTA_COMPUTE does not visit every container: running containers are
//! counted per (project, user, app, size), and every container that has not started
//! or changed size since the last QUOTA_COMPUTE owes exactly the time since it,
//! so each group owes one row that stands for all of them. Only containers
//! started or resized since then owe rows of their own.
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
use crate::policy::{CallError, PriceMultiplicators, Usage, Utilization};
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

/// A container the service is charging.
#[derive(Debug, Clone)]
struct Tracked {
    project: Arc<str>,
    user: Arc<str>,
    /// Its app, whose credits it adds to.
    app: Arc<str>,
    resources: Resources,
    started_ms: u64,
    /// When an event of its own last charged it. QUOTA_COMPUTE charges every
    /// container without touching this, so the container has been charged up
    /// to the later of this and the last QUOTA_COMPUTE.
    last_charged_ms: u64,
}

impl Tracked {
    fn group(&self) -> Group {
        (
            self.project.clone(),
            self.user.clone(),
            self.app.clone(),
            self.resources,
        )
    }
}

/// Running containers of one project, user, app and size are priced together.
type Group = (Arc<str>, Arc<str>, Arc<str>, Resources);

/// Usage recorded by an event, not yet priced: `containers` containers of
/// one size, each owing `seconds`.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Owed {
    project: Arc<str>,
    user: Arc<str>,
    app: Arc<str>,
    resources: Resources,
    seconds: f64,
    containers: u32,
    at_ms: u64,
}

/// What unit prices depend on: the multiplicators (as bits) and the
/// pricing policy's generation.
type PricesKey = (u64, u64, u64);

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
    /// Its app's id.
    pub app: String,
    /// The project it is charged to.
    pub project: String,
    /// The user it is charged to.
    pub user: String,
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
        }
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
            let owed: Owed = serde_json::from_str(&record).map_err(|e| StoreError::Corrupt {
                target: store.target().to_string(),
                what: "an owed_usage row".into(),
                why: e.to_string(),
            })?;
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
        let mut tracked = Tracked {
            project: container.project.into(),
            user: container.user.into(),
            app: container.app.into(),
            resources: container.resources,
            started_ms: container.started_ms,
            last_charged_ms: container.charged_until_ms,
        };
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
        let tracked = Tracked {
            project: container.project.into(),
            user: container.user.into(),
            app: container.app.into(),
            resources: container.resources,
            started_ms: container.started_ms,
            last_charged_ms: container.charged_until_ms,
        };
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
        app: &str,
        project: &str,
        user: &str,
        resources: Resources,
        now: u64,
    ) -> Result<(), QuotaError> {
        if !self.settings.enabled {
            return Ok(());
        }
        if self.running.contains_key(container) {
            return Err(QuotaError::AlreadyStarted(container.into()));
        }
        let mut tracked = Tracked {
            project: project.into(),
            user: user.into(),
            app: app.into(),
            resources,
            started_ms: now,
            last_charged_ms: now,
        };
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
        for ((project, user, app, resources), containers) in since_last {
            if containers > 0 {
                self.owed.push(Owed {
                    project,
                    user,
                    app,
                    resources,
                    seconds,
                    containers,
                    at_ms: now,
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
        let usage = Usage {
            seconds: self.owed.iter().map(|o| o.seconds).collect(),
            memory_mb: self.owed.iter().map(|o| o.resources.memory_mb).collect(),
            vcores: self
                .owed
                .iter()
                .map(|o| u64::from(o.resources.vcores))
                .collect(),
            gpus: self
                .owed
                .iter()
                .map(|o| u64::from(o.resources.gpus))
                .collect(),
        };
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
        Ok(credits.iter().sum())
    }

    /// The PriceMultiplicatorService step: new multiplicators from
    /// `utilization` (1 when variable pricing is off), saved for a restart.
    pub fn update_multiplicators(
        &mut self,
        pricing: &dyn Pricing,
        utilization: Utilization,
    ) -> Result<PriceMultiplicators, QuotaError> {
        if !self.settings.variable_price {
            self.multiplicators = UNIT_MULTIPLICATORS;
            return Ok(self.multiplicators);
        }
        self.multiplicators = pricing.multiplicators(utilization)?;
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
    pub fn unit_prices(&self, pricing: &dyn Pricing) -> Result<UnitPrices, CallError> {
        let key = pricing.generation().map(|generation| {
            let m = self.multiplicators;
            (m.general.to_bits(), m.gpu.to_bits(), generation)
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
        let usage = Usage {
            seconds: vec![1.0; 3],
            memory_mb: vec![0, self.settings.unit_memory_mb, 0],
            vcores: vec![1, 0, 0],
            gpus: vec![0, 0, u64::from(self.settings.unit_gpus)],
        };
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
    pub fn uncharged(
        &self,
        projects: &std::collections::HashSet<&str>,
    ) -> Vec<(Arc<str>, Resources, f64)> {
        let minimum = self.settings.min_runtime_ms;
        let mut unpaid: HashMap<(Arc<str>, Resources), u64> = HashMap::new();
        for tracked in self.running.values() {
            if !projects.contains(&*tracked.project) {
                continue;
            }
            let charged_to = tracked.last_charged_ms.max(self.last_compute_ms);
            let owed_to = tracked.started_ms.saturating_add(minimum);
            if owed_to > charged_to {
                *unpaid
                    .entry((tracked.project.clone(), tracked.resources))
                    .or_insert(0) += owed_to - charged_to;
            }
        }
        let mut rows: Vec<(Arc<str>, Resources, f64)> = unpaid
            .into_iter()
            .map(|((project, resources), ms)| (project, resources, ms as f64 / 1000.0))
            .collect();
        // Owed and not yet priced (a container that ended this event).
        for owed in &self.owed {
            if projects.contains(&*owed.project) {
                rows.push((
                    owed.project.clone(),
                    owed.resources,
                    owed.seconds * f64::from(owed.containers),
                ));
            }
        }
        rows
    }

    /// Prices `rows` of (size, seconds) at today's multiplicators, in one
    /// call.
    pub fn price_rows(
        &self,
        pricing: &dyn Pricing,
        rows: &[(Resources, f64)],
    ) -> Result<Vec<f64>, CallError> {
        let usage = Usage {
            seconds: rows.iter().map(|(_, seconds)| *seconds).collect(),
            memory_mb: rows.iter().map(|(r, _)| r.memory_mb).collect(),
            vcores: rows.iter().map(|(r, _)| u64::from(r.vcores)).collect(),
            gpus: rows.iter().map(|(r, _)| u64::from(r.gpus)).collect(),
        };
        pricing.charge(&usage, self.multiplicators)
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
    let millis = until.saturating_sub(tracked.last_charged_ms);
    tracked.last_charged_ms = tracked.last_charged_ms.max(until);
    (millis > 0).then(|| Owed {
        project: tracked.project.clone(),
        user: tracked.user.clone(),
        app: tracked.app.clone(),
        resources: tracked.resources,
        seconds: millis as f64 / 1000.0,
        containers: 1,
        at_ms: at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_before_the_last_compute_owes_the_time_up_to_it() {
        let (mut quota, gb) = (service(), Resources::new(1024, 1, 0));
        quota.compute(10_000);
        quota.start("late", "a", "p", "u", gb, 4_000).unwrap();
        quota.compute(12_000);
        quota.finish("late", 13_000, false).unwrap();
        quota.flush(&PerGbSecond).unwrap();
        assert!((used(&quota, "p") - 9.0).abs() < 1e-9, "4 s to 13 s");
    }

    #[test]
    fn the_minimum_runtime_is_charged_only_when_its_own_work_ended_it() {
        let (mut quota, gb) = (service(), Resources::new(1024, 1, 0));
        quota.settings.min_runtime_ms = 10_000;
        quota.start("own", "a", "p", "u", gb, 0).unwrap();
        quota.start("system", "a", "q", "u", gb, 0).unwrap();
        quota.finish("own", 1_000, true).unwrap();
        quota.finish("system", 1_000, false).unwrap();
        quota.flush(&PerGbSecond).unwrap();
        assert!((used(&quota, "p") - 10.0).abs() < 1e-9);
        assert!((used(&quota, "q") - 1.0).abs() < 1e-9);
    }

    /// One credit per GB-second: easy to work out by hand.
    struct PerGbSecond;

    impl Pricing for PerGbSecond {
        fn multiplicators(&self, _: Utilization) -> Result<PriceMultiplicators, CallError> {
            Ok(UNIT_MULTIPLICATORS)
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
        quota.start("a", "app", "p", "u", gb, 0).unwrap();
        quota.start("b", "app", "p", "u", gb, 0).unwrap();
        quota.compute(10_000); // a, b: 10 s each
        quota.start("c", "app", "p", "u", gb, 14_000).unwrap();
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
        quota.start("a1", "app1", "p", "u", gb, 0).unwrap();
        quota.start("a2", "app1", "p", "u", gb, 0).unwrap();
        quota.start("b1", "app2", "p", "u", gb, 0).unwrap();
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
        quota.start("a", "app", "p", "u", gb, 0).unwrap();
        quota.compute(10_000);
        quota.start("b", "app", "p", "u", gb, 10_000).unwrap();
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
}
