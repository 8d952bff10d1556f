//! The one way a resource manager is put together — settings, a store, a
//! clock and the policies in, a ResourceManager out — used by `weft serve`
//! (each time it becomes active), `weft simulate` and the tests, so every
//! one runs the same parts, built in the same order.

use std::sync::Arc;

use super::ResourceManager;
use super::recovery::RecoveryError;
use crate::clock::Clock;
use crate::config::Settings;
use crate::policy::PolicyRuntime;
use crate::queues::QueueTree;
use crate::quota::event_log::EventLogError;
use crate::quota::{EventLog, QuotaService};
use crate::reservation::service::ReservationError;
use crate::resources::Resources;
use crate::security::Security;
use crate::store::{Store, StoreError};

/// What a resource manager is made of.
pub struct Parts<'a> {
    /// The settings in force (timers, quota, budgets, accounting, limits).
    pub settings: &'a Settings,
    /// The validated queue tree to start with.
    pub queues: QueueTree,
    /// Where reservations (and, when recovering, everything else) are kept.
    pub store: Store,
    /// The time the resource manager and its policies read.
    pub clock: Arc<dyn Clock>,
    /// The runtime, with the policies in force already loaded.
    pub policies: Arc<PolicyRuntime>,
    /// Who may do what, shared with the API.
    pub security: Arc<Security>,
    /// `--sim-nodes`: (count, each node's capacity), registered before the
    /// recovery so containers stored on them come back on them.
    pub sim_nodes: Option<(u32, Resources)>,
    /// The quota event log (`weft.quota.event-log`), if one is written.
    pub event_log: QuotaEventLog<'a>,
    /// Restore the state `store` holds, as the holder of this lease; none
    /// for a store that starts empty, where the quota ledger is kept in
    /// memory (`simulate`, in-process tests).
    pub recover: Option<Recover>,
}

/// Which quota event log a resource manager writes.
#[derive(Debug)]
pub enum QuotaEventLog<'a> {
    /// None (`simulate`, the tests).
    Off,
    /// The one `weft.quota.event-log` names, if any: the one in `opened`
    /// (`serve` opens it at start, to refuse a bad path before anything
    /// else), taken only once the resource manager is built, else opened
    /// then.
    FromSettings {
        /// The log opened already, if it is.
        opened: &'a mut Option<EventLog>,
    },
}

/// How a resource manager takes up the state its store holds.
#[derive(Debug, Clone, Copy)]
pub struct Recover {
    /// The epoch of the lease it holds (its fencing token).
    pub epoch: u64,
    /// How long the first scheduling round waits for agents to report
    /// the containers the store says run, in ms
    /// (`yarn.resourcemanager.work-preserving-recovery.scheduling-wait-ms`).
    pub scheduling_wait_ms: u64,
}

/// Why a resource manager could not be put together.
#[derive(Debug, thiserror::Error)]
pub enum AssembleError {
    /// The quota service's state (ledger, owed usage, multiplicators) could
    /// not be read back from the store.
    #[error("cannot restore the ledger")]
    Ledger(#[source] StoreError),
    /// The reservations could not be read back from the store.
    #[error("cannot restore the reservations")]
    Reservations(#[source] ReservationError),
    /// A reservable queue's plan cannot be set up (its own sharing policy
    /// does not load) in a resource manager that recovers nothing.
    #[error(transparent)]
    Plans(ReservationError),
    /// The quota event log cannot be opened.
    #[error(transparent)]
    EventLog(EventLogError),
    /// The apps, containers and nodes the store holds could not be put back.
    #[error("cannot recover the state the store holds")]
    Recovery(#[source] RecoveryError),
}

/// Builds the resource manager `parts` describe: the quota service (its
/// ledger restored from the store when recovering), the reservations, the
/// simulated nodes, the event log, then the recovery.
pub fn assemble(parts: Parts<'_>) -> Result<ResourceManager, AssembleError> {
    let Parts {
        settings,
        queues,
        store,
        clock,
        policies,
        security,
        sim_nodes,
        event_log,
        recover,
    } = parts;
    let quota = match recover {
        Some(_) => QuotaService::open(settings.quota, &store).map_err(AssembleError::Ledger)?,
        None => QuotaService::new(settings.quota),
    };
    let mut manager = ResourceManager::new(
        settings,
        queues,
        quota,
        store.clone(),
        policies,
        security,
        clock,
    )
    .map_err(|e| match recover {
        Some(_) => AssembleError::Reservations(e),
        None => AssembleError::Plans(e),
    })?;
    if let Some((count, capacity)) = sim_nodes {
        manager.add_simulated_nodes(count, capacity);
        tracing::info!(count, %capacity, "simulated nodes registered");
    }
    let event_log = match event_log {
        QuotaEventLog::Off => None,
        QuotaEventLog::FromSettings { opened } if opened.is_some() => opened.take(),
        QuotaEventLog::FromSettings { .. } => {
            EventLog::open_configured(&settings.quota_event_log).map_err(AssembleError::EventLog)?
        }
    };
    if let Some(log) = event_log {
        manager.record_quota_events(log);
    }
    if let Some(recover) = recover {
        manager
            .recover(store, recover.epoch, recover.scheduling_wait_ms)
            .map_err(AssembleError::Recovery)?;
    }
    manager.apply_exclude_file_at_start();
    Ok(manager)
}
