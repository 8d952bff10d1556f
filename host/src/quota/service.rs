//! The QuotaService of HOPS-1385: follows every running container and charges
//! its project for the time since it was last charged, at the price current
//! when charging, on CONTAINER_START / _UPDATE / _FINISH and every
//! QUOTA_COMPUTE. Also holds the current price multiplicators.
//!
//! Events only record what is owed; [`QuotaService::flush`] prices everything
//! owed in one policy call and writes it to the ledger and store in one
//! transaction. If pricing fails, what is owed stays owed for the next flush:
//! nothing is charged twice, nothing is lost, nothing invalid is written.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;

use super::Pricing;
use super::ledger::{Charge, QuotaLedger};
use crate::cluster::Resources;
use crate::config::QuotaSettings;
use crate::metrics::{ProjectLabels, metrics};
use crate::policy::{CallError, PriceMultiplicators, Usage, Utilization};
use crate::store::{Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum QuotaError {
    #[error("container {0} is not being charged (never started, or already finished)")]
    UnknownContainer(String),
    #[error("container {0} is already being charged")]
    AlreadyStarted(String),
    #[error("the pricing policy failed: {0}")]
    Pricing(#[from] CallError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A container the service is charging.
#[derive(Debug, Clone)]
struct Tracked {
    project: Arc<str>,
    user: Arc<str>,
    resources: Resources,
    started_ms: u64,
    last_charged_ms: u64,
}

/// Usage recorded by an event, not yet priced.
#[derive(Debug, Clone)]
struct Owed {
    project: Arc<str>,
    user: Arc<str>,
    resources: Resources,
    seconds: f64,
    at_ms: u64,
}

/// Credits per second for one unit of each resource, at today's multiplicators.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct UnitPrices {
    pub vcore: f64,
    pub memory: f64,
    pub gpu: f64,
}

pub struct QuotaService {
    settings: QuotaSettings,
    running: HashMap<String, Tracked>,
    owed: Vec<Owed>,
    multiplicators: PriceMultiplicators,
    ledger: QuotaLedger,
    store: Store,
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
    /// A service over `store`, with the ledger and (under variable pricing)
    /// the multiplicators it holds restored.
    pub fn open(settings: QuotaSettings, store: Store) -> Result<QuotaService, StoreError> {
        let mut ledger = QuotaLedger::new(settings.default_credits);
        ledger.restore(store.projects()?, store.daily()?);
        let multiplicators = match store.multiplicators()? {
            Some((general, gpu)) if settings.variable_price => PriceMultiplicators { general, gpu },
            _ => UNIT_MULTIPLICATORS,
        };
        Ok(QuotaService {
            settings,
            running: HashMap::new(),
            owed: Vec::new(),
            multiplicators,
            ledger,
            store,
        })
    }

    pub fn settings(&self) -> &QuotaSettings {
        &self.settings
    }

    /// CONTAINER_START: the container is charged from `now` on.
    pub fn start(
        &mut self,
        container: &str,
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
        let tracked = Tracked {
            project: project.into(),
            user: user.into(),
            resources,
            started_ms: now,
            last_charged_ms: now,
        };
        self.running.insert(container.into(), tracked);
        Ok(())
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
            .running
            .get_mut(container)
            .ok_or_else(|| QuotaError::UnknownContainer(container.into()))?;
        let owed = owe(tracked, now, now);
        tracked.resources = resources;
        self.owed.extend(owed);
        Ok(())
    }

    /// CONTAINER_FINISH: what is left is owed, at least up to the minimum runtime.
    pub fn finish(&mut self, container: &str, now: u64) -> Result<(), QuotaError> {
        if !self.settings.enabled {
            return Ok(());
        }
        let mut tracked = self
            .running
            .remove(container)
            .ok_or_else(|| QuotaError::UnknownContainer(container.into()))?;
        let end = now.max(tracked.started_ms + self.settings.min_runtime_ms);
        self.owed.extend(owe(&mut tracked, end, now));
        Ok(())
    }

    /// QUOTA_COMPUTE: every running container owes its time up to `now`.
    pub fn compute(&mut self, now: u64) {
        for tracked in self.running.values_mut() {
            self.owed.extend(owe(tracked, now, now));
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
            vcores: self.owed.iter().map(|o| o.resources.vcores).collect(),
            gpus: self.owed.iter().map(|o| o.resources.gpus).collect(),
        };
        let credits = pricing.charge(&usage, self.multiplicators)?;
        // One ledger charge per (project, user, day): a flush prices every
        // running container, and the ledger needs only the sums.
        const DAY_MS: u64 = 86_400_000;
        // (project, user, day number) → (when first charged, credits).
        type Group = (Arc<str>, Arc<str>, u64);
        let mut sums: HashMap<Group, (u64, f64)> = HashMap::new();
        for (owed, credits) in self.owed.drain(..).zip(&credits) {
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
        let delta = self.ledger.apply(&charges);
        for charge in &charges {
            metrics()
                .credits_charged
                .get_or_create(&ProjectLabels {
                    project: charge.project.clone(),
                })
                .inc_by(charge.credits);
        }
        // The in-memory ledger is ahead if this fails; the store catches up
        // with absolute values at the next flush that touches the same rows.
        self.store.apply(&delta)?;
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
        self.store
            .save_multiplicators(self.multiplicators.general, self.multiplicators.gpu)?;
        Ok(self.multiplicators)
    }

    pub fn multiplicators(&self) -> PriceMultiplicators {
        self.multiplicators
    }

    /// What one second of one unit of each resource costs now, asked of the
    /// pricing policy itself so the answer is what would be charged.
    pub fn unit_prices(&self, pricing: &dyn Pricing) -> Result<UnitPrices, CallError> {
        let usage = Usage {
            seconds: vec![1.0; 3],
            memory_mb: vec![0, self.settings.unit_memory_mb, 0],
            vcores: vec![1, 0, 0],
            gpus: vec![0, 0, self.settings.unit_gpus],
        };
        let prices = pricing.charge(&usage, self.multiplicators)?;
        Ok(UnitPrices {
            vcore: prices[0],
            memory: prices[1],
            gpu: prices[2],
        })
    }

    /// Gives `project` `credits` remaining.
    pub fn set_credits(&mut self, project: &str, credits: f64) -> Result<(), StoreError> {
        let delta = self.ledger.set_credits(project, credits);
        self.store.apply(&delta)
    }

    pub fn ledger(&self) -> &QuotaLedger {
        &self.ledger
    }

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
        resources: tracked.resources,
        seconds: millis as f64 / 1000.0,
        at_ms: at,
    })
}
