//! YARN's ApplicationMasterProtocol as use cases: an application master
//! registers, asks (its asks go through the same queues, limits, policy,
//! budgets and ledger as every ask: they are the app's asks), is told what
//! it got, and unregisters. The edge (`yarn_rpc/master_protocol.rs`)
//! authenticates the master by its AMRMToken and keeps the response ids;
//! this is what each call does to the cluster.

use super::ResourceManager;
use crate::cluster::{BlacklistChange, MasterAsk, MasterError, MasterFinish, MasterNews};
use crate::resources::Resources;

/// What a registration answers.
#[derive(Debug, Clone)]
pub struct MasterRegistered {
    /// The largest container it may ask for.
    pub maximum: Resources,
    /// Its app's queue.
    pub queue: String,
}

/// What an allocate answers.
#[derive(Debug, Clone)]
pub struct MasterAllocated {
    /// What is new for the master.
    pub news: MasterNews,
    /// What the cluster has free now (YARN's headroom, roughly).
    pub available: Resources,
    /// How many nodes the cluster has.
    pub nodes: usize,
}

impl ResourceManager {
    /// Issues YARN's tokens under `keys` (the process's, shared with its
    /// scheduler port) rather than the cluster's own.
    pub fn use_token_keys(
        &mut self,
        keys: std::sync::Arc<crate::security::yarn_tokens::TokenKeys>,
    ) {
        self.cluster.set_token_keys(keys);
    }

    /// registerApplicationMaster for attempt `attempt` of `app_id`.
    pub fn register_master(
        &mut self,
        app_id: &str,
        attempt: u32,
        host: String,
        rpc_port: i32,
        tracking_url: String,
    ) -> Result<MasterRegistered, MasterError> {
        self.cluster
            .register_master(app_id, attempt, host, rpc_port, tracking_url)?;
        let queue = self
            .cluster
            .app(app_id)
            .map(|app| app.queue.clone())
            .unwrap_or_default();
        Ok(MasterRegistered {
            maximum: self.maximum_allocation().0,
            queue,
        })
    }

    /// allocate for attempt `attempt` of `app_id`: its asks replace the last
    /// ones, each within the largest container an ask may have; its
    /// releases end now and are charged; then a round places what it
    /// asks, if there is room.
    pub fn master_allocate(
        &mut self,
        app_id: &str,
        attempt: u32,
        asks: &[MasterAsk],
        releases: &[String],
        blacklist: &BlacklistChange,
        progress: f32,
    ) -> Result<MasterAllocated, MasterError> {
        let maximum = self.maximum_allocation().0;
        for ask in asks {
            let size = ask.key.resources();
            if !size.fits_in(&maximum) {
                return Err(MasterError::BadAsk(format!(
                    "Invalid resource request, requested resource {size} is more than the maximum allocation {maximum}"
                )));
            }
        }
        let now = self.now();
        let (news, released) = self
            .cluster
            .master_allocate(app_id, attempt, asks, releases, blacklist, now)?;
        self.cluster.master_progress(app_id, attempt, progress);
        self.containers_finished(&released, now);
        // (A blacklist's removals wait for the next round: an allocate
        // that removes nothing would otherwise force a round each call.)
        if !asks.is_empty() || !released.is_empty() {
            self.schedule_on_freed_resources();
        }
        Ok(MasterAllocated {
            news,
            available: self
                .cluster
                .capacity()
                .saturating_sub(&self.cluster.allocated()),
            nodes: self.cluster.nodes().count(),
        })
    }

    /// finishApplicationMaster for attempt `attempt` of `app_id`: its other
    /// containers end now, charged; the app ends when its master's
    /// container exits.
    pub fn finish_master(
        &mut self,
        app_id: &str,
        attempt: u32,
        finish: MasterFinish,
    ) -> Result<(), MasterError> {
        let now = self.now();
        let ended = self.cluster.finish_master(app_id, attempt, finish, now)?;
        self.containers_finished(&ended, now);
        Ok(())
    }
}
