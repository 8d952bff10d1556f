//! Work-preserving recovery (YARN-556) on the resource manager's side: the
//! apps, asks, containers and nodes the store holds are put back, the quota
//! service charges each running container on from its stored charged-until
//! time, and nothing new is allocated until every known node's agent has
//! registered again or `work-preserving-recovery.scheduling-wait-ms` has
//! passed — agents report what they still run (and what ended while the
//! server was down, with when), which settles each container.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use super::ResourceManager;
use crate::cluster::{Cluster, NodeKind, StoredCluster};
use crate::quota::events::QuotaEvent;
use crate::quota::{ChargedContainer, event_log};
use crate::resources::Resources;
use crate::store::{Store, StoreError};

/// The setting the queue configuration in force is kept under (the tree,
/// as GET /ws/v1/cluster/scheduler shows it).
pub const QUEUES_SETTING: &str = "queues.in-force";

/// Why recovery failed: the server must not start on half its state.
#[derive(Debug, thiserror::Error)]
pub enum RecoveryError {
    /// The store could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The queue changes made through the API do not apply.
    #[error(transparent)]
    SchedulerConf(#[from] super::scheduler_conf::OverlayError),
    /// The queues made for apps cannot be made again.
    #[error("{0}")]
    AutoCreatedQueues(String),
    /// The store's records could not be put back into the cluster.
    #[error("store {target}: {source}")]
    Restore {
        /// Where the store is (its file or database), for the message.
        target: String,
        /// What about the records was wrong.
        #[source]
        source: crate::cluster::RestoreError,
    },
}

/// The wait after recovery: until `until_ms`, or until every node in
/// `awaiting` has registered again.
#[derive(Debug)]
pub(super) struct SchedulingWait {
    until_ms: u64,
    awaiting: BTreeSet<String>,
}

/// What recovery put back, for the log.
#[derive(Debug, Clone, Copy, Default)]
pub struct Recovered {
    /// Apps read back, ended ones included.
    pub apps: usize,
    /// Running containers put back (those then ended at once included).
    pub running_containers: usize,
    /// Agents' nodes put back, waited for until their agents register.
    pub nodes: usize,
    /// Running containers that ended at once, their node or queue gone.
    pub ended_at_recovery: usize,
}

/// The fields of a stored running container the quota service needs.
#[derive(Deserialize)]
struct Charged {
    id: String,
    app: String,
    resources: Resources,
    start_time_ms: u64,
}

impl ResourceManager {
    /// Puts back what `store` holds and from then on writes every change
    /// to it after each event (see `commit`). New container ids carry
    /// `epoch`. Called once, before the loop starts.
    pub fn recover(
        &mut self,
        store: Store,
        epoch: u64,
        scheduling_wait_ms: u64,
    ) -> Result<Recovered, RecoveryError> {
        let now = self.now();
        let restore_error = |source| RecoveryError::Restore {
            target: store.target().to_string(),
            source,
        };
        let settings = store.settings()?;
        // Before anything is put back in the queues: the queues the API
        // added must be there.
        self.recover_scheduler_conf(&settings)?;
        // And the queues made for apps, knowing which the stored apps
        // still run in.
        let apps = store.apps()?;
        self.recover_auto_created(&settings, &queues_in_use(&apps))
            .map_err(RecoveryError::AutoCreatedQueues)?;
        let containers = store.containers()?;
        let charged_until: BTreeMap<String, Option<u64>> = containers
            .iter()
            .filter(|c| c.running)
            .filter_map(|c| {
                let charged: Charged = serde_json::from_str(&c.record).ok()?;
                Some((charged.id, c.charged_until_ms))
            })
            .collect();
        let stored = StoredCluster {
            apps,
            containers: containers
                .iter()
                .map(|c| (c.record.clone(), c.running))
                .collect(),
            nodes: store.nodes()?,
            node_owners: store.node_owners()?,
            totals: settings.get(Cluster::totals_setting()).cloned(),
            decayed_usage: settings.get(Cluster::decayed_usage_setting()).cloned(),
            labels: settings.get(Cluster::labels_setting()).cloned(),
            decommissions: settings.get(Cluster::decommissions_setting()).cloned(),
        };
        // Each server reads its own queue files (as YARN's RMs do); one that
        // differs from the configuration in force before is worth a word.
        let in_force = serde_json::to_string(self.cluster.queues()).expect("queues serialize");
        if settings
            .get(QUEUES_SETTING)
            .is_some_and(|before| *before != in_force)
        {
            tracing::warn!(
                "the queue configuration differs from the one in force before the restart or failover; this server's (its --queues file and settings) is in force now"
            );
        }
        self.queues_changed = true;
        self.cluster.set_epoch(epoch);
        self.cluster.track_changes();
        let restored = self.cluster.restore(stored, now).map_err(restore_error)?;
        let cut = self.cluster.cap_priorities(self.max_application_priority);
        if !cut.is_empty() {
            tracing::info!(
                apps = cut.len(),
                first = %cut[0],
                highest = self.max_application_priority,
                "cut recovered apps' priorities to yarn.cluster.max-application-priority"
            );
        }
        // Every container that was running is charged again from where it
        // was: those on simulated nodes at once, those on agents' nodes once
        // their agent comes back saying it still runs them (it may not: the
        // time the server was down is charged only for what ran). The event
        // log lists the first after a recovery line, none as a start, and
        // each of the others in a running line when its agent is back, so
        // a replay charges each once.
        self.record_quota_event(now, || QuotaEvent::Recovery);
        for stored in containers.iter().filter(|c| c.running) {
            let Ok(charged) = serde_json::from_str::<Charged>(&stored.record) else {
                continue;
            };
            let Some(app) = self.cluster.app(&charged.app) else {
                continue;
            };
            let charged_until_ms = match charged_until.get(&charged.id).copied().flatten() {
                Some(until) => until,
                // Not charged when stored, yet running: quota was off. From now on.
                None if self
                    .cluster
                    .container(&charged.id)
                    .is_some_and(|c| c.launched_ms.is_some()) =>
                {
                    now
                }
                // Allocated, never reported running: charged once it is.
                None => continue,
            };
            let restored = self.cluster.container(&charged.id);
            let on_agent = restored
                .and_then(|c| self.cluster.node(&c.node))
                .is_some_and(|node| node.kind == NodeKind::Remote);
            let node = restored.and_then(|c| self.cluster.node(&c.node));
            let container = ChargedContainer {
                context: super::charging::charge_context(
                    &self.cluster,
                    app,
                    node,
                    restored
                        .and_then(|c| app.asks.get(c.ask))
                        .map(|a| a.execution_type)
                        .unwrap_or_default(),
                ),
                started_ms: restored
                    .and_then(|c| c.launched_ms)
                    .unwrap_or(charged.start_time_ms),
                id: charged.id,
                resources: charged.resources,
                charged_until_ms,
            };
            if on_agent && self.quota.settings().enabled {
                self.awaiting_agents.insert(container.id.clone(), container);
                continue;
            }
            // Charged up to the later of its own time and the last compute.
            let charged_until = charged_until_ms.max(self.quota.last_compute_ms());
            self.record_quota_event(now, || event_log::running(&container, charged_until));
            self.quota.restore_container(container);
        }
        // Ended at recovery (their node or queue is gone): charged up to
        // where the stored state had them, not for the time the server
        // was down, which nobody knows they ran.
        for container in &restored.ended {
            let known = self
                .quota
                .charged_until(&container.id)
                .map_or(now, |until| {
                    until.max(self.quota.last_compute_ms()).min(now)
                });
            self.container_finished(container, known);
        }
        self.accounting.restore(&store)?;
        // No node heartbeated this server while it was down or before it
        // took over: locality delays count on from now.
        self.cluster.pause_locality_counts(now);
        self.last_grant = Some(store.counter(crate::store::GRANT_COUNTER)?);
        self.store = Some(store);
        if !restored.nodes.is_empty() && scheduling_wait_ms > 0 {
            self.scheduling_wait = Some(SchedulingWait {
                until_ms: now.saturating_add(scheduling_wait_ms),
                awaiting: restored.nodes.iter().cloned().collect(),
            });
        }
        let recovered = Recovered {
            apps: restored.apps,
            running_containers: restored.running,
            nodes: restored.nodes.len(),
            ended_at_recovery: restored.ended.len(),
        };
        tracing::info!(
            epoch,
            apps = recovered.apps,
            running_containers = recovered.running_containers,
            nodes = recovered.nodes,
            ended_at_recovery = recovered.ended_at_recovery,
            scheduling_wait_ms = if recovered.nodes > 0 {
                scheduling_wait_ms
            } else {
                0
            },
            "recovered the state the store holds"
        );
        Ok(recovered)
    }

    /// Whether allocation still waits after recovery at `now`.
    pub(super) fn awaiting_nodes(&mut self, now: u64) -> bool {
        let Some(wait) = &self.scheduling_wait else {
            return false;
        };
        if now < wait.until_ms && !wait.awaiting.is_empty() {
            return true;
        }
        tracing::info!(
            nodes_not_back = wait.awaiting.len(),
            "scheduling resumes after recovery"
        );
        self.scheduling_wait = None;
        false
    }

    /// Node `id`'s agent registered again after recovery.
    /// Node `id`'s agent registered again after a recovery: the containers
    /// it kept (it runs them, or ran them and has yet to report their end)
    /// are charged again from where the store had them — they ran while
    /// the server was down.
    pub(super) fn agent_is_back(&mut self, id: &str, now: u64) {
        if self.awaiting_agents.is_empty() {
            return;
        }
        let kept: Vec<String> = match self.cluster.node(id) {
            Some(node) => node
                .containers
                .iter()
                .filter(|c| self.awaiting_agents.contains_key(*c))
                .cloned()
                .collect(),
            None => return,
        };
        for id in kept {
            let Some(container) = self.awaiting_agents.remove(&id) else {
                continue;
            };
            let charged_until = container.charged_until_ms;
            self.record_quota_event(now, || event_log::running(&container, charged_until));
            self.quota.resume(container);
        }
    }

    pub(super) fn node_back(&mut self, id: &str) {
        if let Some(wait) = &mut self.scheduling_wait {
            wait.awaiting.remove(id);
        }
    }
}

/// The queues (by name, as apps name them) of the stored apps that have
/// not ended.
fn queues_in_use(apps: &[(u64, String)]) -> BTreeSet<String> {
    #[derive(Deserialize)]
    struct Placed {
        queue: String,
        state: crate::cluster::AppState,
    }
    apps.iter()
        .filter_map(|(_, record)| serde_json::from_str::<Placed>(record).ok())
        .filter(|app| !app.state.has_ended())
        .map(|app| app.queue)
        .collect()
}
