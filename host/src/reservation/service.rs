//! The reservation system as the resource manager runs it: YARN's
//! reservation calls decided by the sharing policy and saved in the store,
//! and plan capacities kept to the queues' guarantees. The plan follower
//! (`follower.rs`) reads the system it keeps.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::cluster::Cluster;
use crate::config::Settings;
use crate::policy::{PolicyRuntime, PolicySource, QueueSharing, SharingSlot};
use crate::queues::QueueTree;
use crate::refusal::Refusal;
use crate::reservation::definition::{
    ReservationDeleteRequest, ReservationSubmissionRequest, ReservationUpdateRequest,
};
use crate::reservation::system::Accepted;
use crate::reservation::{
    Caller, ListQuery, PlanConfig, Reservation, ReservationId, ReservationListInfo,
    ReservationSystem, Sharing, SystemConfig, SystemError,
};
use crate::resources::Resources;
use crate::store::{Store, StoreError};

/// The store counter that keeps reservation ids unique across restarts.
const SEQUENCE: &str = "reservation-sequence";

/// Why a reservation call, or a change of the queue configuration, was
/// refused; [`ReservationError::kind`] says what kind of refusal it is.
#[derive(Debug, thiserror::Error)]
pub enum ReservationError {
    /// `yarn.resourcemanager.reservation-system.enable` is false.
    #[error("the reservation system is off (yarn.resourcemanager.reservation-system.enable=false)")]
    Disabled,
    /// The reservation system refused the call.
    #[error(transparent)]
    System(#[from] SystemError),
    /// The store failed; the change was undone.
    #[error("the reservation could not be saved, so it stays as it was: {0}")]
    Store(#[from] StoreError),
    /// A new queue configuration would lose a reservation (its queue is
    /// gone or no longer reservable); the reason names it.
    #[error("the queue configuration cannot keep the reservations: {0}")]
    Refresh(String),
    /// The id was handed out by new-reservation to another user.
    #[error(
        "reservation id {id} was handed out to {owner}; ask new-reservation for an id of your own"
    )]
    IssuedToAnother {
        /// The reservation id submitted.
        id: String,
        /// The user it was handed out to.
        owner: String,
    },
    /// A reservable queue's `reservation-policy` does not load.
    #[error("{property}: cannot load the sharing policy {source_name}: {reason}")]
    QueuePolicy {
        /// The full property, e.g.
        /// `yarn.scheduler.capacity.root.dedicated.reservation-policy`.
        property: String,
        /// The policy source it names, as parsed.
        source_name: String,
        /// Why the runtime could not load it.
        reason: String,
    },
}

impl ReservationError {
    /// What kind of refusal this is; a [`SystemError`] keeps its own kind.
    pub fn kind(&self) -> Refusal {
        match self {
            ReservationError::Disabled => Refusal::Off,
            ReservationError::System(error) => error.kind(),
            ReservationError::Store(_) => Refusal::Fault,
            ReservationError::Refresh(_) | ReservationError::QueuePolicy { .. } => Refusal::Invalid,
            ReservationError::IssuedToAnother { .. } => Refusal::NotAllowed,
        }
    }
}

/// A queue configuration's plans and policies, prepared by
/// [`ReservationService::prepare_queues`].
pub struct PreparedQueues {
    system: ReservationSystem,
    guarantees: HashMap<String, f64>,
    queue_policies: BTreeMap<String, QueueSharing>,
}

/// The reservation system as the resource manager runs it: YARN's
/// reservation calls, each decided by the queue's sharing policy and saved in
/// the store, and the plans' capacities kept to the queues' guarantees.
pub struct ReservationService {
    system: ReservationSystem,
    store: Store,
    enabled: bool,
    /// Queue path → percent of the cluster it is guaranteed.
    guarantees: HashMap<String, f64>,
    /// Queue path → the sharing policy its `reservation-policy` names (a
    /// slot of the policy runtime, hot-swappable); the others use the
    /// runtime's own sharing slot.
    queue_policies: BTreeMap<String, QueueSharing>,
    /// Who each recently handed-out id was handed to.
    issued: crate::security::issued::IssuedIds,
}

impl std::fmt::Debug for ReservationService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReservationService")
            .field("enabled", &self.enabled)
            .finish_non_exhaustive()
    }
}

impl ReservationService {
    /// The plans of `queues`' reservable queues, with the reservations saved
    /// in `store` put back. A saved reservation whose queue is no longer
    /// reservable stays in the store (a later configuration may take it
    /// back) and is logged.
    pub fn open(
        settings: &Settings,
        queues: &QueueTree,
        store: Store,
        policies: &PolicyRuntime,
        cluster_start_ms: u64,
    ) -> Result<ReservationService, ReservationError> {
        let config = SystemConfig {
            cluster_start_ms: cluster_start_ms as i64,
            max_periodicity_ms: settings.reservations.max_periodicity_ms,
        };
        let step_ms = settings.reservations.time_step_ms;
        let mut service = ReservationService {
            system: build_system(config, queues, step_ms)?,
            store,
            enabled: settings.reservations.enabled,
            guarantees: guarantees(queues),
            queue_policies: queue_policies(queues, policies)?,
            issued: Default::default(),
        };
        policies.set_queue_sharing(service.queue_policies.clone());
        let next_sequence = service.store.counter(SEQUENCE)?;
        for (id, queue, record) in service.store.reservations()? {
            let restored = serde_json::from_str::<Reservation>(&record)
                .map_err(|e| e.to_string())
                .and_then(|reservation| {
                    service
                        .system
                        .restore(&queue, reservation)
                        .map_err(|e| e.to_string())
                });
            if let Err(reason) = restored {
                tracing::warn!(reservation = %id, %queue, %reason, "a saved reservation was not restored; it stays in the store for a restart with a configuration that has its queue");
            }
        }
        service.system.keep_sequence_from(next_sequence);
        Ok(service)
    }

    /// The reservation system, for the plan follower.
    pub fn system(&self) -> &ReservationSystem {
        &self.system
    }

    /// Whether any queue is reservable (if none, the plan follower has
    /// nothing to do in a round).
    pub fn has_plans(&self) -> bool {
        self.system.plans().next().is_some()
    }

    fn check_enabled(&self) -> Result<(), ReservationError> {
        if self.enabled {
            Ok(())
        } else {
            Err(ReservationError::Disabled)
        }
    }

    /// Sets each plan's capacity to its queue's guarantee of the cluster now
    /// (of its default partition: reservations hold no node label).
    pub fn refresh_capacities(&mut self, cluster: &Cluster) {
        let total = cluster.partition_capacity("");
        for plan in self.system.plans_mut() {
            let percent = self.guarantees.get(plan.queue()).copied().unwrap_or(0.0);
            plan.set_capacity(share(total, percent));
        }
    }

    /// The plans and queue policies of a new queue configuration, holding
    /// every current reservation, ready for [`apply_queues`](Self::apply_queues);
    /// refused if a reservation would be lost or a queue's policy does not
    /// load. Nothing changes until it is applied.
    pub fn prepare_queues(
        &self,
        queues: &QueueTree,
        policies: &PolicyRuntime,
    ) -> Result<PreparedQueues, ReservationError> {
        let config = *self.system.config();
        let step_ms = self
            .system
            .plans()
            .next()
            .map(|plan| plan.config().step_ms)
            .unwrap_or(crate::reservation::plan::DEFAULT_PLAN_STEP_MS);
        let mut system = build_system(config, queues, step_ms)?;
        for plan in self.system.plans() {
            for reservation in plan.reservations() {
                system
                    .restore(plan.queue(), reservation.clone())
                    .map_err(|e| {
                        ReservationError::Refresh(format!(
                            "reservation {} in {} would be lost: {e}",
                            reservation.id,
                            plan.queue()
                        ))
                    })?;
            }
        }
        system.keep_sequence_from(self.system.next_sequence());
        Ok(PreparedQueues {
            system,
            guarantees: guarantees(queues),
            queue_policies: queue_policies(queues, policies)?,
        })
    }

    /// Switches to a prepared queue configuration, installing its queues'
    /// own sharing policies in `policies`.
    pub fn apply_queues(&mut self, prepared: PreparedQueues, policies: &PolicyRuntime) {
        self.system = prepared.system;
        self.guarantees = prepared.guarantees;
        self.queue_policies = prepared.queue_policies;
        policies.set_queue_sharing(self.queue_policies.clone());
    }

    /// The sharing policy of its own that the queue `queue` names (a path
    /// or a leaf name) has, if its `reservation-policy` names one.
    fn own_policy(&self, queue: &str) -> Option<Arc<SharingSlot>> {
        self.queue_policies
            .iter()
            .find(|(path, _)| path.as_str() == queue || path.rsplit('.').next() == Some(queue))
            .map(|(_, own)| own.slot.clone())
    }

    /// YARN's new-reservation: a fresh id, never handed out again.
    /// A new id, handed to `user`: only they may submit under it.
    pub fn new_reservation(&mut self, user: &str) -> Result<ReservationId, ReservationError> {
        self.check_enabled()?;
        let id = self.system.new_reservation();
        self.store
            .set_counter(SEQUENCE, self.system.next_sequence())?;
        self.issued.record(id.to_string(), user);
        Ok(id)
    }

    /// YARN's reservation/submit for `user` at `now_ms` (ms since the epoch),
    /// decided by the queue's own sharing policy if it has one, else by
    /// `sharing`. Only the user an id was handed to may submit under it. A
    /// new reservation is saved in the store, and dropped again if that
    /// fails; an unchanged resubmission answers as the first time.
    pub fn submit(
        &mut self,
        sharing: &dyn Sharing,
        request: &ReservationSubmissionRequest,
        user: &str,
        now_ms: u64,
    ) -> Result<Accepted, ReservationError> {
        self.check_enabled()?;
        if let Some(owner) = self.issued.owner(&request.reservation_id)
            && owner != user
        {
            return Err(ReservationError::IssuedToAnother {
                id: request.reservation_id.clone(),
                owner: owner.to_string(),
            });
        }
        let known = self.find(&request.reservation_id).is_some();
        let own = self.own_policy(&request.queue);
        let sharing: &dyn Sharing = own.as_deref().map_or(sharing, |slot| slot);
        let accepted = self.system.submit(sharing, request, user, now_ms as i64)?;
        if known {
            return Ok(accepted); // an idempotent resubmission: already saved
        }
        if let Err(error) = self.save(&accepted.reservation_id) {
            // Not saved, so not kept: the caller is told, and may resubmit.
            let admin = Caller {
                user,
                is_admin: true,
            };
            let delete = ReservationDeleteRequest {
                reservation_id: accepted.reservation_id.to_string(),
            };
            let _ = self.system.delete(&delete, &admin);
            return Err(error);
        }
        self.issued.submitted(&request.reservation_id);
        Ok(accepted)
    }

    /// YARN's reservation/update: places the new definition anew, decided
    /// by the queue's own sharing policy if it has one, else by `sharing`,
    /// and saves it; if saving fails the old version is put back.
    pub fn update(
        &mut self,
        sharing: &dyn Sharing,
        request: &ReservationUpdateRequest,
        caller: &Caller<'_>,
        now_ms: u64,
    ) -> Result<Accepted, ReservationError> {
        self.check_enabled()?;
        let previous = self.find(&request.reservation_id);
        let own = previous
            .as_ref()
            .and_then(|(queue, _)| self.own_policy(queue));
        let sharing: &dyn Sharing = own.as_deref().map_or(sharing, |slot| slot);
        let accepted = self
            .system
            .update(sharing, request, caller, now_ms as i64)?;
        if let Err(error) = self.save(&accepted.reservation_id) {
            if let Some((queue, old)) = previous {
                let _ = self.system.restore(&queue, old);
            }
            return Err(error);
        }
        Ok(accepted)
    }

    /// YARN's reservation/delete: removes the reservation from its plan and
    /// the store, and returns it; if the store fails it is put back.
    pub fn delete(
        &mut self,
        request: &ReservationDeleteRequest,
        caller: &Caller<'_>,
    ) -> Result<Reservation, ReservationError> {
        self.check_enabled()?;
        let queue = self.find(&request.reservation_id).map(|(queue, _)| queue);
        let removed = self.system.delete(request, caller)?;
        if let Err(error) = self.store.delete_reservation(&removed.id.to_string()) {
            if let Some(queue) = queue {
                let _ = self.system.restore(&queue, removed);
            }
            return Err(error.into());
        }
        Ok(removed)
    }

    /// The queue and a copy of the reservation `id` names, if it exists.
    fn find(&self, id: &str) -> Option<(String, Reservation)> {
        let (queue, reservation) = self.system.reservation(&id.parse().ok()?)?;
        Some((queue.to_string(), reservation.clone()))
    }

    /// YARN's reservation/list (see [`ReservationSystem::list`]).
    pub fn list(&self, query: &ListQuery) -> Result<ReservationListInfo, ReservationError> {
        self.check_enabled()?;
        Ok(self.system.list(query)?)
    }

    /// Forgets reservations that ended longer ago than their plan's policy's
    /// window (no later decision looks at them).
    pub fn forget_ended(&mut self, sharing: &dyn Sharing, now_ms: u64) {
        let queues: Vec<String> = self.system.plans().map(|p| p.queue().to_string()).collect();
        for queue in queues {
            let own = self.own_policy(&queue);
            let sharing: &dyn Sharing = own.as_deref().map_or(sharing, |slot| slot);
            match self.system.forget_ended_in(&queue, sharing, now_ms as i64) {
                Ok(forgotten) => {
                    for id in forgotten {
                        if let Err(error) = self.store.delete_reservation(&id.to_string()) {
                            tracing::warn!(reservation = %id, %error, "an ended reservation stays in the store");
                        }
                    }
                }
                Err(error) => {
                    tracing::warn!(%queue, %error, "ended reservations kept: the sharing policy failed")
                }
            }
        }
    }

    /// Whether reservation `id` (as an app names it) is in the plan of the
    /// queue at `queue_path`; the reason if not.
    pub fn check_app_reservation(&self, id: &str, queue_path: &str) -> Result<(), NotInPlan> {
        let parsed: ReservationId = id.parse().map_err(|e| NotInPlan::BadId(format!("{e}")))?;
        match self.system.reservation(&parsed) {
            Some((queue, _)) if queue == queue_path => Ok(()),
            Some((queue, _)) => Err(NotInPlan::OtherQueue {
                id: id.to_string(),
                queue: queue.to_string(),
                wanted: queue_path.to_string(),
            }),
            None => Err(NotInPlan::Unknown(id.to_string())),
        }
    }

    /// The user reservation `id` belongs to, if it exists.
    pub fn owner(&self, id: &str) -> Option<&str> {
        let parsed: ReservationId = id.parse().ok()?;
        self.system
            .reservation(&parsed)
            .map(|(_, reservation)| reservation.user.as_str())
    }

    fn save(&mut self, id: &ReservationId) -> Result<(), ReservationError> {
        let (queue, reservation) = self
            .system
            .reservation(id)
            .expect("saved right after the system accepted it");
        let record = serde_json::to_string(reservation).expect("a reservation serializes");
        let counter = (SEQUENCE, self.system.next_sequence());
        self.store
            .save_reservation(&id.to_string(), queue, &record, counter)?;
        Ok(())
    }
}

/// The own sharing policy of each reservable queue whose
/// `reservation-policy` names one (`builtin:NAME`, a file, or YARN's class
/// names for the two bundled policies), as slots of the policy runtime.
fn queue_policies(
    queues: &QueueTree,
    policies: &PolicyRuntime,
) -> Result<BTreeMap<String, QueueSharing>, ReservationError> {
    let mut loaded = BTreeMap::new();
    for (queue, settings) in queues.reservable() {
        let Some(named) = &settings.policy else {
            continue;
        };
        let source = match named.rsplit('.').next() {
            Some("CapacityOverTimePolicy") => PolicySource::Builtin("capacity-over-time".into()),
            Some("NoOverCommitPolicy") => PolicySource::Builtin("no-overcommit".into()),
            _ => PolicySource::parse(named),
        };
        let own = policies
            .queue_sharing_slot(&queue.path, &source)
            .map_err(|e| ReservationError::QueuePolicy {
                property: format!("{}{}.reservation-policy", crate::queues::PREFIX, queue.path),
                source_name: source.to_string(),
                reason: e.to_string(),
            })?;
        loaded.insert(queue.path.clone(), own);
    }
    Ok(loaded)
}

/// The plans of `queues`' reservable queues, each with capacity zero until
/// [`ReservationService::refresh_capacities`] sees the cluster.
fn build_system(
    config: SystemConfig,
    queues: &QueueTree,
    step_ms: i64,
) -> Result<ReservationSystem, ReservationError> {
    let plans = queues
        .reservable()
        .map(|(queue, settings)| PlanConfig {
            reservation_window_ms: settings.window_ms,
            instantaneous_max_capacity: settings.instantaneous_max_capacity,
            average_capacity: settings.average_capacity,
            move_on_expiry: settings.move_on_expiry,
            step_ms,
            ..PlanConfig::new(queue.path.clone(), Resources::ZERO)
        })
        .collect();
    let others = queues
        .queues()
        .iter()
        .filter(|q| q.reservations.is_none())
        .map(|q| q.path.clone());
    Ok(ReservationSystem::new(config, plans)?.with_other_queues(others))
}

fn guarantees(queues: &QueueTree) -> HashMap<String, f64> {
    queues
        .reservable()
        .map(|(queue, _)| (queue.path.clone(), queue.absolute_capacity))
        .collect()
}

/// `percent` of `total`, rounded down in each dimension.
fn share(total: Resources, percent: f64) -> Resources {
    let part = |amount: f64| (amount * percent / 100.0).floor();
    Resources::new(
        part(total.memory_mb as f64) as u64,
        part(f64::from(total.vcores)) as u32,
        part(f64::from(total.gpus)) as u32,
    )
}
/// Why an app cannot run in the reservation it names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotInPlan {
    /// Not a reservation id (the parser's reason).
    #[error("{0}")]
    BadId(String),
    /// The reservation is in the plan of another queue.
    #[error("reservation {id} is in queue {queue}, not {wanted}")]
    OtherQueue {
        /// The reservation id the app names.
        id: String,
        /// The path of the queue whose plan holds it.
        queue: String,
        /// The path of the app's queue.
        wanted: String,
    },
    /// No plan holds the reservation (never submitted, deleted, or
    /// forgotten after it ended); carries the id.
    #[error("no reservation {0}")]
    Unknown(String),
}
