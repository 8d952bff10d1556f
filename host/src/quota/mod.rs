//! Usage quota and variable pricing, per HOPS-1385: the PriceMultiplicatorService
//! step and the QuotaService with its four events (`service`),
//! and the ledger the charges land in (`ledger`), and what a project's
//! credits left allow (`budget`). Prices themselves come from
//! the pricing policy, reached through the [`Pricing`] trait. `event_log`
//! records the service's events in the format `events` defines and checks,
//! which `weft replay` reads.

mod budget;
pub mod event_log;
pub mod events;
mod ledger;
mod service;

pub use budget::{BURN_WINDOW_MS, BudgetState, BurnRates};
pub use event_log::EventLog;
pub use ledger::{Charge, DailyKey, LedgerDelta, ProjectQuota, QuotaLedger, day_of};
pub use service::{
    ChargedContainer, Context, QuotaError, QuotaService, Uncharged, UnitPrices, usage_of,
};

use crate::policy::{
    CallError, Market, PolicySlot, PriceMultiplicators, PricingSlot, QuoteRequest, Usage,
};

/// What the quota service needs from a pricing policy. The host's
/// implementation is the [`PricingSlot`] (WASM, with fallback, checked);
/// benchmarks and tests may price natively.
pub trait Pricing {
    /// The price multiplicators for the cluster's load (a
    /// PriceMultiplicatorService step).
    fn multiplicators(&self, market: &Market) -> Result<PriceMultiplicators, CallError>;
    /// The credits each row of `usage` costs at `multiplicators`: one per row,
    /// for one container.
    fn charge(
        &self,
        usage: &Usage,
        multiplicators: PriceMultiplicators,
    ) -> Result<Vec<f64>, CallError>;

    /// What `request` would cost at `multiplicators`, all its containers
    /// together.
    fn quote(
        &self,
        request: &QuoteRequest,
        multiplicators: PriceMultiplicators,
    ) -> Result<f64, CallError>;

    /// Moves whenever what the policy answers may have changed (a load or
    /// rollback), so answers can be kept until then; `None`: never keep.
    fn generation(&self) -> Option<u64> {
        None
    }

    /// Whether a shadow policy wants to see the charges made (so the
    /// caller builds [`shadow_charge`](Self::shadow_charge)'s rows only then).
    fn shadowing(&self) -> bool {
        false
    }

    /// Hands a charge made to the shadow: `rows[i]` is usage row i's
    /// project and how many containers it stands for, `active[i]` its
    /// charge per container.
    fn shadow_charge(
        &self,
        _usage: Usage,
        _multiplicators: PriceMultiplicators,
        _active: Vec<f64>,
        _rows: Vec<(std::sync::Arc<str>, u32)>,
    ) {
    }
}

impl Pricing for PricingSlot {
    fn multiplicators(&self, market: &Market) -> Result<PriceMultiplicators, CallError> {
        PricingSlot::multiplicators(self, market)
    }

    fn quote(
        &self,
        request: &QuoteRequest,
        multiplicators: PriceMultiplicators,
    ) -> Result<f64, CallError> {
        PricingSlot::quote(self, request, multiplicators)
    }

    fn charge(
        &self,
        usage: &Usage,
        multiplicators: PriceMultiplicators,
    ) -> Result<Vec<f64>, CallError> {
        PricingSlot::charge(self, usage, multiplicators)
    }

    fn generation(&self) -> Option<u64> {
        Some(PolicySlot::generation(self))
    }

    fn shadowing(&self) -> bool {
        self.shadow().running()
    }

    fn shadow_charge(
        &self,
        usage: Usage,
        multiplicators: PriceMultiplicators,
        active: Vec<f64>,
        rows: Vec<(std::sync::Arc<str>, u32)>,
    ) {
        PricingSlot::shadow_charge(self, usage, multiplicators, active, rows);
    }
}
