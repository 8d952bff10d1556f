//! Usage quota and variable pricing, per HOPS-1385: the PriceMultiplicatorService
//! step (`multiplicator`), the QuotaService with its four events (`service`),
//! and the ledger the charges land in (`ledger`). Prices themselves come from
//! the pricing policy, reached through the [`Pricing`] trait. `event_log`
//! records the service's events for `weft replay`.

pub mod event_log;
mod ledger;
mod service;

pub use event_log::EventLog;
pub use ledger::{Charge, DailyKey, LedgerDelta, ProjectQuota, QuotaLedger, day_of};
pub use service::{ChargedContainer, QuotaError, QuotaService, UnitPrices};

use crate::policy::{CallError, PolicySlot, PriceMultiplicators, Usage, Utilization, validate};

/// What the quota service needs from a pricing policy. The host's
/// implementation is the pricing [`PolicySlot`] (WASM, with fallback);
/// benchmarks and tests may price natively.
pub trait Pricing {
    fn multiplicators(&self, utilization: Utilization) -> Result<PriceMultiplicators, CallError>;
    fn charge(
        &self,
        usage: &Usage,
        multiplicators: PriceMultiplicators,
    ) -> Result<Vec<f64>, CallError>;
}

impl Pricing for PolicySlot {
    fn multiplicators(&self, utilization: Utilization) -> Result<PriceMultiplicators, CallError> {
        self.call(|version| {
            let multiplicators = version.multiplicators(utilization)?;
            validate::multiplicators(&multiplicators).map_err(CallError::InvalidOutput)?;
            Ok(multiplicators)
        })
    }

    fn charge(
        &self,
        usage: &Usage,
        multiplicators: PriceMultiplicators,
    ) -> Result<Vec<f64>, CallError> {
        self.call(|version| {
            let charges = version.charge(usage, multiplicators)?;
            validate::charges(&charges, usage.seconds.len()).map_err(CallError::InvalidOutput)?;
            Ok(charges)
        })
    }
}
