//! The reservation system: the plans of every reservable queue, reservation
//! ids, and YARN's reservation API — new, submit, update, delete, list — with
//! its ownership checks. A refused call leaves every plan as it was: the
//! agent only reads a plan, and a plan changes only once a call has succeeded.

use crate::limits::MAX_RESERVATIONS_PER_QUEUE;
use crate::limits::MAX_RESERVATIONS_PER_USER;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use super::Sharing;
use super::agent::{self, AgentError, PlacementRequest};
use super::definition::{
    Contract, DefinitionError, DefinitionLimits, MalformedReservationId, ReservationDefinition,
    ReservationDeleteRequest, ReservationId, ReservationInfo, ReservationListInfo,
    ReservationSubmissionRequest, ReservationUpdateRequest, ResourceAllocationInfo, ResourceInfo,
};
use super::plan::{Allocation, Plan, PlanConfig, PlanError, Reservation};
use crate::policy::CallError;
use crate::refusal::Refusal;

/// What the system needs besides the plans.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemConfig {
    /// When the cluster started (ms): the middle part of every reservation id.
    pub cluster_start_ms: i64,
    /// `yarn.resourcemanager.reservation-system.max-periodicity`.
    pub max_periodicity_ms: i64,
}

/// Who is calling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caller<'a> {
    /// The authenticated user.
    pub user: &'a str,
    /// In `yarn.admin.acl`: may update and delete anyone's reservations.
    pub is_admin: bool,
}

/// The list API's filters, with YARN's names and defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListQuery {
    /// `queue`: "default" when absent, as in YARN.
    pub queue: Option<String>,
    /// `reservation-id`: only that reservation; the times are then ignored.
    pub reservation_id: Option<String>,
    /// `start-time`: reservations that end at or after it (0 when absent).
    pub start_time_ms: Option<i64>,
    /// `end-time`: reservations that start at or before it (no limit when absent).
    pub end_time_ms: Option<i64>,
    /// `include-resource-allocations`.
    pub include_resource_allocations: bool,
}

/// A reservation the system holds, as submit and update answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// The reservation's id.
    pub reservation_id: ReservationId,
    /// The path of the queue whose plan holds it.
    pub queue: String,
    /// When it was accepted (submitted or last updated), in ms since the
    /// epoch.
    pub acceptance_time_ms: i64,
    /// Its allocation as intervals (a recurring reservation's first
    /// occurrence).
    pub allocations: Vec<Allocation>,
}

impl Accepted {
    fn of(queue: &str, reservation: &Reservation) -> Accepted {
        Accepted {
            reservation_id: reservation.id,
            queue: queue.to_string(),
            acceptance_time_ms: reservation.acceptance_time_ms,
            allocations: reservation.allocations().to_vec(),
        }
    }
}

/// Why a call was refused; [`SystemError::kind`] says what kind of refusal it is.
#[derive(Debug, thiserror::Error)]
pub enum SystemError {
    /// A reservation id that does not parse.
    #[error(transparent)]
    MalformedId(#[from] MalformedReservationId),
    /// No queue has this path or leaf name.
    #[error("no queue {queue:?}")]
    UnknownQueue {
        /// The queue as the client gave it.
        queue: String,
    },
    /// The queue exists but has no plan (it is not `reservable`).
    #[error(
        "queue {queue:?} is not reservable (it has no plan: set its reservable property to true)"
    )]
    NotReservable {
        /// The queue as the client gave it.
        queue: String,
    },
    /// A leaf name that names more than one reservable queue.
    #[error("queue name {queue:?} matches several reservable queues ({paths}): give the full path")]
    AmbiguousQueue {
        /// The leaf name as the client gave it.
        queue: String,
        /// The paths it matches, comma-separated.
        paths: String,
    },
    /// No plan holds a reservation with this id.
    #[error("no reservation {id}")]
    UnknownReservation {
        /// The id asked for.
        id: ReservationId,
    },
    /// The caller is neither the reservation's owner nor an admin, or
    /// resubmits another user's id.
    #[error("reservation {id} is not yours: it belongs to {owner}, not {user}")]
    NotYours {
        /// The reservation's id.
        id: ReservationId,
        /// The user who owns it.
        owner: String,
        /// The caller.
        user: String,
    },
    /// A resubmission differs from the first submission.
    #[error(
        "reservation {id} was already submitted {difference}: resubmit it unchanged, or update it"
    )]
    Conflict {
        /// The reservation's id.
        id: ReservationId,
        /// How it differs: `to queue …` or `with a different definition`.
        difference: String,
    },
    /// The definition was refused by validation.
    #[error("reservation {id}: {source}")]
    Definition {
        /// The reservation's id.
        id: ReservationId,
        /// Why the definition was refused.
        source: DefinitionError,
    },
    /// The agent found no placement, or the sharing policy refused or failed.
    #[error("reservation {id} cannot be placed in {queue}: {source}")]
    Placement {
        /// The reservation's id.
        id: ReservationId,
        /// The path of the queue it was to be placed in.
        queue: String,
        /// Why the agent did not place it.
        source: AgentError,
    },
    /// A new reservation's id was not handed out by this system's
    /// new-reservation.
    #[error(
        "reservation id {id} was not handed out by this resource manager: ask new-reservation for one"
    )]
    NotIssued {
        /// The id submitted.
        id: ReservationId,
    },
    /// The plan already holds [`MAX_RESERVATIONS_PER_QUEUE`] reservations, or the user
    /// [`MAX_RESERVATIONS_PER_USER`] in it.
    #[error(
        "queue {queue} holds {in_queue} reservations, {of_user} of them {user}'s: a queue holds at most {MAX_RESERVATIONS_PER_QUEUE}, a user at most {MAX_RESERVATIONS_PER_USER} in it"
    )]
    TooMany {
        /// The queue's path.
        queue: String,
        /// The submitting user.
        user: String,
        /// How many reservations the plan holds.
        in_queue: usize,
        /// How many of them are the user's.
        of_user: usize,
    },
    /// The list's end-time is before its start-time.
    #[error("end-time {end_ms} is before start-time {start_ms}")]
    BadListRange {
        /// `start-time` (0 when absent), in ms since the epoch.
        start_ms: i64,
        /// `end-time`, in ms since the epoch.
        end_ms: i64,
    },
    /// Two plan settings name the same queue.
    #[error("queue {queue} is given more than one plan")]
    DuplicatePlan {
        /// The queue's path.
        queue: String,
    },
    /// A plan refused its settings or a change (a `Fault`).
    #[error(transparent)]
    Plan(#[from] PlanError),
}

impl SystemError {
    /// A request that is wrong or refused as asked is `Invalid` — a changed
    /// resubmission too, since the caller must resubmit it unchanged or
    /// update it; a failure of the sharing policy or of the plan is a `Fault`.
    pub fn kind(&self) -> Refusal {
        match self {
            SystemError::UnknownQueue { .. } | SystemError::UnknownReservation { .. } => {
                Refusal::Unknown
            }
            SystemError::NotYours { .. } => Refusal::NotAllowed,
            SystemError::TooMany { .. } => Refusal::Conflict,
            SystemError::Placement {
                source: AgentError::Policy(_) | AgentError::Plan(_),
                ..
            }
            | SystemError::Plan(_) => Refusal::Fault,
            SystemError::MalformedId(_)
            | SystemError::NotReservable { .. }
            | SystemError::AmbiguousQueue { .. }
            | SystemError::Conflict { .. }
            | SystemError::NotIssued { .. }
            | SystemError::Definition { .. }
            | SystemError::Placement { .. }
            | SystemError::BadListRange { .. }
            | SystemError::DuplicatePlan { .. } => Refusal::Invalid,
        }
    }
}

/// The plans of every reservable queue and the reservation API over them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "StoredSystem", into = "StoredSystem")]
pub struct ReservationSystem {
    config: SystemConfig,
    next_sequence: u64,
    /// Plans by queue path.
    plans: BTreeMap<String, Plan>,
    /// Queues that exist but are not reservable, to tell them from unknown ones.
    other_queues: BTreeSet<String>,
    /// Which plan holds each reservation.
    queue_of: HashMap<ReservationId, String>,
}

#[derive(Serialize, Deserialize)]
struct StoredSystem {
    config: SystemConfig,
    next_sequence: u64,
    plans: Vec<Plan>,
    other_queues: BTreeSet<String>,
}

impl From<ReservationSystem> for StoredSystem {
    fn from(system: ReservationSystem) -> StoredSystem {
        StoredSystem {
            config: system.config,
            next_sequence: system.next_sequence,
            plans: system.plans.into_values().collect(),
            other_queues: system.other_queues,
        }
    }
}

impl From<StoredSystem> for ReservationSystem {
    fn from(stored: StoredSystem) -> ReservationSystem {
        let mut system = ReservationSystem {
            config: stored.config,
            next_sequence: stored.next_sequence,
            plans: BTreeMap::new(),
            other_queues: stored.other_queues,
            queue_of: HashMap::new(),
        };
        for plan in stored.plans {
            for reservation in plan.reservations() {
                system
                    .queue_of
                    .insert(reservation.id, plan.queue().to_string());
            }
            system.plans.insert(plan.queue().to_string(), plan);
        }
        system
    }
}

impl ReservationSystem {
    /// A system with one empty plan per reservable queue.
    pub fn new(
        config: SystemConfig,
        plans: Vec<PlanConfig>,
    ) -> Result<ReservationSystem, SystemError> {
        let mut by_queue = BTreeMap::new();
        for plan in plans {
            if by_queue.contains_key(&plan.queue) {
                return Err(SystemError::DuplicatePlan { queue: plan.queue });
            }
            by_queue.insert(plan.queue.clone(), Plan::new(plan)?);
        }
        Ok(ReservationSystem {
            config,
            // YARN's first reservation is number 1.
            next_sequence: 1,
            plans: by_queue,
            other_queues: BTreeSet::new(),
            queue_of: HashMap::new(),
        })
    }

    /// Names the queues that exist but are not reservable (paths), so that
    /// submitting to one is refused as invalid rather than as unknown.
    pub fn with_other_queues(
        mut self,
        queues: impl IntoIterator<Item = impl Into<String>>,
    ) -> ReservationSystem {
        self.other_queues = queues.into_iter().map(Into::into).collect();
        self
    }

    /// The cluster start and maximum periodicity the system was made with.
    pub fn config(&self) -> &SystemConfig {
        &self.config
    }

    /// The plan of a reservable queue, by path.
    pub fn plan(&self, queue: &str) -> Option<&Plan> {
        self.plans.get(queue)
    }

    /// Every plan, in queue path order.
    pub fn plans(&self) -> impl Iterator<Item = &Plan> {
        self.plans.values()
    }

    /// The reservation with this id, and the queue whose plan holds it.
    pub fn reservation(&self, id: &ReservationId) -> Option<(&str, &Reservation)> {
        let queue = self.queue_of.get(id)?;
        Some((queue, self.plans.get(queue)?.get(id)?))
    }

    /// Every plan, in queue path order, to change (e.g. its capacity).
    pub fn plans_mut(&mut self) -> impl Iterator<Item = &mut Plan> {
        self.plans.values_mut()
    }

    /// The next sequence number new-reservation hands out.
    pub fn next_sequence(&self) -> u64 {
        self.next_sequence
    }

    /// Puts a reservation back as it was placed — one saved before a
    /// restart, or the version a failed save must not lose — replacing any
    /// version of it the plan holds. Nothing is checked against the plan:
    /// it was admitted when it was placed.
    pub fn restore(&mut self, queue: &str, reservation: Reservation) -> Result<(), SystemError> {
        let queue = self.resolve_queue(queue)?;
        let id = reservation.id;
        let plan = self.plan_mut(&queue);
        if plan.get(&id).is_some() {
            plan.replace(reservation)?;
        } else {
            plan.add(reservation)?;
        }
        self.queue_of.insert(id, queue);
        Ok(())
    }

    /// A fresh reservation id (YARN's new-reservation).
    pub fn new_reservation(&mut self) -> ReservationId {
        let id = ReservationId {
            cluster_timestamp: self.config.cluster_start_ms,
            sequence: self.next_sequence,
        };
        self.next_sequence = self.next_sequence.saturating_add(1);
        id
    }

    /// Never hand out a sequence below `next_sequence` (after a restart or a
    /// refresh, the one the system before it had reached).
    pub fn keep_sequence_from(&mut self, next_sequence: u64) {
        self.next_sequence = self.next_sequence.max(next_sequence);
    }

    /// Submits a reservation for `user`. Resubmitting an id with the same
    /// definition (by the same user, to the same queue) answers as the first
    /// time and changes nothing; with anything different it is refused.
    pub fn submit<S: Sharing + ?Sized>(
        &mut self,
        sharing: &S,
        request: &ReservationSubmissionRequest,
        user: &str,
        now_ms: i64,
    ) -> Result<Accepted, SystemError> {
        let id: ReservationId = request.reservation_id.parse()?;
        let queue = self.resolve_queue(&request.queue)?;
        let definition = request.reservation_definition.normalized();
        if let Some((existing_queue, existing)) = self.reservation(&id) {
            if existing.user != user {
                return Err(SystemError::NotYours {
                    id,
                    owner: existing.user.clone(),
                    user: user.to_string(),
                });
            }
            let difference = if existing_queue != queue {
                format!("to queue {existing_queue}")
            } else if existing.definition != definition {
                "with a different definition".to_string()
            } else {
                return Ok(Accepted::of(existing_queue, existing));
            };
            return Err(SystemError::Conflict { id, difference });
        }
        // A new reservation's id must come from new-reservation: an id made
        // up by the client could be one new-reservation hands out later.
        let issued = id.cluster_timestamp == self.config.cluster_start_ms
            && (1..self.next_sequence).contains(&id.sequence);
        if !issued {
            return Err(SystemError::NotIssued { id });
        }
        let plan = &self.plans[&queue];
        // Bounded per queue and per user, so one user cannot fill a plan
        // (and every list of it) with tiny reservations.
        let of_user = plan.reservations().filter(|r| r.user == user).count();
        if plan.len() >= MAX_RESERVATIONS_PER_QUEUE || of_user >= MAX_RESERVATIONS_PER_USER {
            return Err(SystemError::TooMany {
                queue,
                user: user.to_string(),
                in_queue: plan.len(),
                of_user,
            });
        }
        let contract = self.contract(&id, &definition, plan, now_ms)?;
        let reservation = self.place(
            sharing, plan, &id, user, definition, &contract, None, now_ms,
        )?;
        let accepted = Accepted::of(&queue, &reservation);
        self.plan_mut(&queue).add(reservation)?;
        self.queue_of.insert(id, queue);
        Ok(accepted)
    }

    /// Replaces a reservation's definition, placing it anew without its old
    /// allocation; if refused, the old one stands unchanged.
    pub fn update<S: Sharing + ?Sized>(
        &mut self,
        sharing: &S,
        request: &ReservationUpdateRequest,
        caller: &Caller<'_>,
        now_ms: i64,
    ) -> Result<Accepted, SystemError> {
        let id: ReservationId = request.reservation_id.parse()?;
        let (queue, existing) = self.owned(&id, caller)?;
        let (queue, owner) = (queue.to_string(), existing.user.clone());
        let plan = &self.plans[&queue];
        let definition = request.reservation_definition.normalized();
        let contract = self.contract(&id, &definition, plan, now_ms)?;
        let reservation = self.place(
            sharing,
            plan,
            &id,
            &owner,
            definition,
            &contract,
            Some(&id),
            now_ms,
        )?;
        let accepted = Accepted::of(&queue, &reservation);
        self.plan_mut(&queue).replace(reservation)?;
        Ok(accepted)
    }

    /// Deletes a reservation and returns it.
    pub fn delete(
        &mut self,
        request: &ReservationDeleteRequest,
        caller: &Caller<'_>,
    ) -> Result<Reservation, SystemError> {
        let id: ReservationId = request.reservation_id.parse()?;
        let queue = self.owned(&id, caller)?.0.to_string();
        let removed = self.plan_mut(&queue).remove(&id)?;
        self.queue_of.remove(&id);
        Ok(removed)
    }

    /// The reservations of one queue that meet [start-time, end-time], or the
    /// one with the given id, in id order.
    pub fn list(&self, query: &ListQuery) -> Result<ReservationListInfo, SystemError> {
        let start_ms = query.start_time_ms.unwrap_or(0);
        let end_ms = query.end_time_ms.unwrap_or(i64::MAX);
        if end_ms < start_ms {
            return Err(SystemError::BadListRange { start_ms, end_ms });
        }
        let queue = self.resolve_queue(query.queue.as_deref().unwrap_or("default"))?;
        let plan = &self.plans[&queue];
        let listed: Vec<&Reservation> = match &query.reservation_id {
            Some(id) => plan.get(&id.parse()?).into_iter().collect(),
            None => plan
                .reservations()
                .filter(|r| r.overlaps(start_ms, end_ms))
                .collect(),
        };
        Ok(ReservationListInfo {
            reservations: listed
                .into_iter()
                .map(|reservation| info(reservation, query.include_resource_allocations))
                .collect(),
        })
    }

    /// Forgets, in the plan of `queue`, the one-off reservations that ended
    /// before now minus the policy's window, and returns their ids.
    pub fn forget_ended_in<S: Sharing + ?Sized>(
        &mut self,
        queue: &str,
        sharing: &S,
        now_ms: i64,
    ) -> Result<Vec<ReservationId>, CallError> {
        let Some(plan) = self.plans.get_mut(queue) else {
            return Ok(Vec::new());
        };
        let window_ms = sharing.window(&plan.config().to_wit())?.max(0);
        let forgotten = plan.forget_ended_before(now_ms.saturating_sub(window_ms));
        for id in &forgotten {
            self.queue_of.remove(id);
        }
        Ok(forgotten)
    }

    /// A queue's path from what a client gave: the path itself, or a leaf
    /// name that names one reservable queue (YARN's clients give leaf names).
    fn resolve_queue(&self, queue: &str) -> Result<String, SystemError> {
        if self.plans.contains_key(queue) {
            return Ok(queue.to_string());
        }
        let leaf = |path: &str| path.rsplit('.').next() == Some(queue);
        let matching: Vec<&String> = self.plans.keys().filter(|path| leaf(path)).collect();
        match matching.as_slice() {
            [path] => Ok(path.to_string()),
            [] if self
                .other_queues
                .iter()
                .any(|path| path == queue || leaf(path)) =>
            {
                Err(SystemError::NotReservable {
                    queue: queue.to_string(),
                })
            }
            [] => Err(SystemError::UnknownQueue {
                queue: queue.to_string(),
            }),
            paths => Err(SystemError::AmbiguousQueue {
                queue: queue.to_string(),
                paths: paths
                    .iter()
                    .map(|p| p.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }

    /// The reservation `id` and its queue, if `caller` may change it.
    fn owned(
        &self,
        id: &ReservationId,
        caller: &Caller<'_>,
    ) -> Result<(&str, &Reservation), SystemError> {
        let (queue, reservation) = self
            .reservation(id)
            .ok_or(SystemError::UnknownReservation { id: *id })?;
        if reservation.user != caller.user && !caller.is_admin {
            return Err(SystemError::NotYours {
                id: *id,
                owner: reservation.user.clone(),
                user: caller.user.to_string(),
            });
        }
        Ok((queue, reservation))
    }

    fn contract(
        &self,
        id: &ReservationId,
        definition: &ReservationDefinition,
        plan: &Plan,
        now_ms: i64,
    ) -> Result<Contract, SystemError> {
        let limits = DefinitionLimits {
            now_ms,
            max_periodicity_ms: self.config.max_periodicity_ms,
        };
        let invalid = |source| SystemError::Definition { id: *id, source };
        let contract = definition.validate(&limits).map_err(invalid)?;
        contract
            .check_gangs_fit(&plan.config().capacity)
            .map_err(invalid)?;
        Ok(contract)
    }

    #[allow(
        clippy::too_many_arguments,
        reason = "the greedy agent's inputs, each distinct; a struct would only name them again"
    )]
    fn place<S: Sharing + ?Sized>(
        &self,
        sharing: &S,
        plan: &Plan,
        id: &ReservationId,
        user: &str,
        definition: ReservationDefinition,
        contract: &Contract,
        replacing: Option<&ReservationId>,
        now_ms: i64,
    ) -> Result<Reservation, SystemError> {
        let request = PlacementRequest {
            id,
            user,
            contract,
            replacing,
            now_ms,
            name: &definition.reservation_name,
        };
        let placement =
            agent::place(plan, sharing, &request).map_err(|source| SystemError::Placement {
                id: *id,
                queue: plan.queue().to_string(),
                source,
            })?;
        Ok(Reservation::new(
            *id,
            user.to_string(),
            definition,
            contract.period_ms,
            placement.allocation,
            now_ms,
        )?)
    }

    fn plan_mut(&mut self, queue: &str) -> &mut Plan {
        // Only called with a queue just resolved against `plans`.
        self.plans
            .get_mut(queue)
            .expect("a resolved queue has a plan")
    }
}

fn info(reservation: &Reservation, include_resource_allocations: bool) -> ReservationInfo {
    let resource_allocations = if include_resource_allocations {
        reservation
            .allocations()
            .iter()
            .map(|allocation| ResourceAllocationInfo {
                resource: ResourceInfo::from(allocation.resources),
                start_time: allocation.start_ms,
                end_time: allocation.end_ms,
            })
            .collect()
    } else {
        Vec::new()
    };
    ReservationInfo {
        acceptance_time: reservation.acceptance_time_ms,
        user: reservation.user.clone(),
        resource_allocations,
        reservation_id: reservation.id.to_string(),
        reservation_definition: reservation.definition.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reservation::definition::tests::{definition, request};
    use crate::reservation::definition::{
        DEFAULT_MAX_PERIODICITY_MS, Interpreter, ReservationRequest,
    };
    use crate::reservation::testing::{Broken, NoOverCommit, RefuseAll};
    use crate::resources::Resources;

    const START: i64 = 1_700_000_000_000;
    const NOW: i64 = START + 1_000_000;

    fn system() -> ReservationSystem {
        let config = SystemConfig {
            cluster_start_ms: START,
            max_periodicity_ms: DEFAULT_MAX_PERIODICITY_MS,
        };
        let plans = vec![
            PlanConfig::new("root.dedicated", Resources::new(10 * 1024, 10, 0)),
            PlanConfig::new("root.batch.reserved", Resources::new(4 * 1024, 4, 0)),
        ];
        ReservationSystem::new(config, plans)
            .unwrap()
            .with_other_queues(["root.default", "root.batch"])
    }

    fn gb(containers: i64, gang: i64, seconds: i64) -> ReservationRequest {
        request(1024, 1, containers, gang, seconds * 1_000)
    }

    /// A definition for [NOW + from s, NOW + to s).
    fn job(
        from_s: i64,
        to_s: i64,
        interpreter: Interpreter,
        requests: Vec<ReservationRequest>,
    ) -> ReservationDefinition {
        definition(
            NOW + from_s * 1_000,
            NOW + to_s * 1_000,
            interpreter,
            requests,
        )
    }

    fn submission(
        id: ReservationId,
        queue: &str,
        definition: ReservationDefinition,
    ) -> ReservationSubmissionRequest {
        ReservationSubmissionRequest {
            queue: queue.into(),
            reservation_id: id.to_string(),
            reservation_definition: definition,
        }
    }

    fn update(id: ReservationId, definition: ReservationDefinition) -> ReservationUpdateRequest {
        ReservationUpdateRequest {
            reservation_id: id.to_string(),
            reservation_definition: definition,
        }
    }

    fn delete(id: ReservationId) -> ReservationDeleteRequest {
        ReservationDeleteRequest {
            reservation_id: id.to_string(),
        }
    }

    const ALICE: Caller<'static> = Caller {
        user: "alice",
        is_admin: false,
    };
    const BOB: Caller<'static> = Caller {
        user: "bob",
        is_admin: false,
    };
    const ADMIN: Caller<'static> = Caller {
        user: "root",
        is_admin: true,
    };

    /// (start s after NOW, end s after NOW, memory MB) of each allocation.
    fn spans(allocations: &[Allocation]) -> Vec<(i64, i64, u64)> {
        allocations
            .iter()
            .map(|a| {
                (
                    (a.start_ms - NOW) / 1_000,
                    (a.end_ms - NOW) / 1_000,
                    a.resources.memory_mb,
                )
            })
            .collect()
    }

    #[test]
    fn new_reservation_hands_out_yarn_ids_in_sequence() {
        let mut system = system();
        assert_eq!(
            system.new_reservation().to_string(),
            "reservation_1700000000000_0001"
        );
        assert_eq!(
            system.new_reservation().to_string(),
            "reservation_1700000000000_0002"
        );
    }

    #[test]
    fn submit_places_the_reservation_and_lists_it() {
        let mut system = system();
        let id = system.new_reservation();
        let accepted = system
            .submit(
                &NoOverCommit::default(),
                &submission(
                    id,
                    "dedicated",
                    job(0, 100, Interpreter::All, vec![gb(4, 4, 10)]),
                ),
                "alice",
                NOW,
            )
            .unwrap();
        assert_eq!(accepted.queue, "root.dedicated");
        assert_eq!(accepted.acceptance_time_ms, NOW);
        assert_eq!(spans(&accepted.allocations), vec![(90, 100, 4096)]);
        let listed = system
            .list(&ListQuery {
                queue: Some("root.dedicated".into()),
                include_resource_allocations: true,
                ..ListQuery::default()
            })
            .unwrap();
        let json = serde_json::to_value(&listed).unwrap();
        let first = &json["reservations"][0];
        assert_eq!(first["reservation-id"], "reservation_1700000000000_0001");
        assert_eq!(first["user"], "alice");
        assert_eq!(first["acceptance-time"], NOW);
        assert_eq!(first["resource-allocations"][0]["resource"]["memory"], 4096);
        assert_eq!(first["resource-allocations"][0]["startTime"], NOW + 90_000);
        assert_eq!(
            first["reservation-definition"]["reservation-requests"]["reservation-request-interpreter"],
            1
        );
        let without = system
            .list(&ListQuery {
                queue: Some("dedicated".into()),
                ..ListQuery::default()
            })
            .unwrap();
        assert!(without.reservations[0].resource_allocations.is_empty());
        assert_eq!(system.plan("root.dedicated").unwrap().len(), 1);
    }

    #[test]
    fn a_user_holds_at_most_a_thousand_reservations_in_a_queue() {
        let mut system = system();
        let submit = |system: &mut ReservationSystem, user: &str, second: i64| {
            let id = system.new_reservation();
            system.submit(
                &NoOverCommit::default(),
                &submission(
                    id,
                    "dedicated",
                    job(second, second + 1, Interpreter::All, vec![gb(1, 1, 1)]),
                ),
                user,
                NOW,
            )
        };
        for second in 0..MAX_RESERVATIONS_PER_USER as i64 {
            submit(&mut system, "alice", second).unwrap();
        }
        let refused = submit(&mut system, "alice", 5_000).unwrap_err();
        assert!(
            matches!(refused, SystemError::TooMany { of_user: 1000, .. }),
            "{refused}"
        );
        assert_eq!(refused.kind(), Refusal::Conflict);
        submit(&mut system, "bob", 5_000).unwrap();
    }

    /// Every refused submission, each with its kind of refusal, and the system unchanged.
    #[test]
    fn every_refused_submission_leaves_the_system_unchanged() {
        let mut system = system();
        let busy = system.new_reservation();
        system
            .submit(
                &NoOverCommit::default(),
                &submission(
                    busy,
                    "root.dedicated",
                    job(0, 50, Interpreter::All, vec![gb(10, 10, 50)]),
                ),
                "bob",
                NOW,
            )
            .unwrap();
        let id = system.new_reservation();
        let good = || job(0, 100, Interpreter::All, vec![gb(2, 1, 10)]);
        let with = |change: fn(&mut ReservationDefinition)| {
            let mut definition = good();
            change(&mut definition);
            definition
        };
        let fair = NoOverCommit::default();
        let cases: Vec<(
            &str,
            ReservationSubmissionRequest,
            &dyn Sharing,
            Refusal,
            &str,
        )> = vec![
            (
                "malformed id",
                ReservationSubmissionRequest {
                    reservation_id: "res-1".into(),
                    ..submission(id, "dedicated", good())
                },
                &fair,
                Refusal::Invalid,
                "is not a reservation id",
            ),
            (
                "unknown queue",
                submission(id, "root.nope", good()),
                &fair,
                Refusal::Unknown,
                "no queue \"root.nope\"",
            ),
            (
                "queue not reservable",
                submission(id, "default", good()),
                &fair,
                Refusal::Invalid,
                "not reservable",
            ),
            (
                "arrival after deadline",
                submission(id, "dedicated", with(|d| d.arrival = d.deadline + 1)),
                &fair,
                Refusal::Invalid,
                "is not before deadline",
            ),
            (
                "deadline passed",
                submission(
                    id,
                    "dedicated",
                    job(-100, -10, Interpreter::All, vec![gb(1, 1, 1)]),
                ),
                &fair,
                Refusal::Invalid,
                "has passed",
            ),
            (
                "duration longer than the window",
                submission(
                    id,
                    "dedicated",
                    with(|d| d.reservation_requests.reservation_request[0].duration = 101_000),
                ),
                &fair,
                Refusal::Invalid,
                "longer than the 100000 ms",
            ),
            (
                "zero memory",
                submission(
                    id,
                    "dedicated",
                    with(|d| {
                        d.reservation_requests.reservation_request[0]
                            .capability
                            .memory = 0
                    }),
                ),
                &fair,
                Refusal::Invalid,
                "memory must be at least 1, got 0",
            ),
            (
                "zero containers",
                submission(
                    id,
                    "dedicated",
                    with(|d| d.reservation_requests.reservation_request[0].num_containers = 0),
                ),
                &fair,
                Refusal::Invalid,
                "num-containers must be greater than 0",
            ),
            (
                "negative duration",
                submission(
                    id,
                    "dedicated",
                    with(|d| d.reservation_requests.reservation_request[0].duration = -5),
                ),
                &fair,
                Refusal::Invalid,
                "got -5",
            ),
            (
                "min-concurrency too large",
                submission(
                    id,
                    "dedicated",
                    with(|d| d.reservation_requests.reservation_request[0].min_concurrency = 3),
                ),
                &fair,
                Refusal::Invalid,
                "min-concurrency 3 is outside 1..=2",
            ),
            (
                "period not dividing max periodicity",
                submission(
                    id,
                    "dedicated",
                    with(|d| d.recurrence_expression = Some("7000000".into())),
                ),
                &fair,
                Refusal::Invalid,
                "does not divide",
            ),
            (
                "no requests",
                submission(
                    id,
                    "dedicated",
                    with(|d| d.reservation_requests.reservation_request.clear()),
                ),
                &fair,
                Refusal::Invalid,
                "has no reservation-request",
            ),
            (
                "negative gpus",
                submission(
                    id,
                    "dedicated",
                    with(|d| {
                        d.reservation_requests.reservation_request[0]
                            .capability
                            .gpus = -1
                    }),
                ),
                &fair,
                Refusal::Invalid,
                "gpus must be at least 0, got -1",
            ),
            (
                "too many containers",
                submission(
                    id,
                    "dedicated",
                    with(|d| {
                        d.reservation_requests.reservation_request[0].num_containers = 1 << 33
                    }),
                ),
                &fair,
                Refusal::Invalid,
                "num-containers 8589934592 is above the most Weft handles",
            ),
            (
                "ordered requests longer than the window",
                submission(
                    id,
                    "dedicated",
                    job(0, 100, Interpreter::Order, vec![gb(1, 1, 60), gb(1, 1, 50)]),
                ),
                &fair,
                Refusal::Invalid,
                "110000 ms in all, longer than the 100000 ms",
            ),
            (
                "recurrence not a number",
                submission(
                    id,
                    "dedicated",
                    with(|d| d.recurrence_expression = Some("weekly".into())),
                ),
                &fair,
                Refusal::Invalid,
                "\"weekly\" is not a period in ms",
            ),
            (
                "period shorter than the window",
                submission(
                    id,
                    "dedicated",
                    with(|d| d.recurrence_expression = Some("60000".into())),
                ),
                &fair,
                Refusal::Invalid,
                "shorter than the 100000 ms",
            ),
            (
                "gang larger than the queue",
                submission(
                    id,
                    "dedicated",
                    job(0, 100, Interpreter::All, vec![gb(11, 11, 10)]),
                ),
                &fair,
                Refusal::Invalid,
                "larger than the queue's capacity",
            ),
            (
                "no room before the deadline",
                submission(
                    id,
                    "dedicated",
                    job(0, 50, Interpreter::All, vec![gb(1, 1, 10)]),
                ),
                &fair,
                Refusal::Invalid,
                "no room before the deadline",
            ),
            (
                "refused by the policy",
                submission(id, "dedicated", good()),
                &RefuseAll,
                Refusal::Invalid,
                "average quota",
            ),
            (
                "the policy fails",
                submission(id, "dedicated", good()),
                &Broken,
                Refusal::Fault,
                "the sharing policy failed",
            ),
            (
                "another user's id",
                submission(busy, "dedicated", good()),
                &fair,
                Refusal::NotAllowed,
                "belongs to bob, not alice",
            ),
        ];
        for (name, request, sharing, kind, words) in cases {
            let before = system.clone();
            let error = system.submit(sharing, &request, "alice", NOW).unwrap_err();
            assert_eq!(error.kind(), kind, "{name}: {error}");
            assert!(
                error.to_string().contains(words),
                "{name}: {error:?} lacks {words:?}"
            );
            assert_eq!(system, before, "{name} changed the system");
        }
    }

    #[test]
    fn resubmitting_the_same_definition_is_idempotent() {
        let mut system = system();
        let id = system.new_reservation();
        let mut definition = job(0, 100, Interpreter::All, vec![gb(4, 4, 10)]);
        let first = system
            .submit(
                &NoOverCommit::default(),
                &submission(id, "dedicated", definition.clone()),
                "alice",
                NOW,
            )
            .unwrap();
        let after_first = system.clone();
        // Later, to the queue's full path, "0" spelling no recurrence: the same.
        definition.recurrence_expression = Some("0".into());
        let again = system
            .submit(
                &NoOverCommit::default(),
                &submission(id, "root.dedicated", definition),
                "alice",
                NOW + 5_000,
            )
            .unwrap();
        assert_eq!(again, first);
        assert_eq!(system, after_first);
        assert_eq!(system.plan("root.dedicated").unwrap().len(), 1);
    }

    #[test]
    fn resubmitting_a_different_definition_or_queue_is_refused() {
        let mut system = system();
        let id = system.new_reservation();
        system
            .submit(
                &NoOverCommit::default(),
                &submission(
                    id,
                    "dedicated",
                    job(0, 100, Interpreter::All, vec![gb(4, 4, 10)]),
                ),
                "alice",
                NOW,
            )
            .unwrap();
        let before = system.clone();
        let different = job(0, 100, Interpreter::All, vec![gb(5, 5, 10)]);
        let error = system
            .submit(
                &NoOverCommit::default(),
                &submission(id, "dedicated", different),
                "alice",
                NOW,
            )
            .unwrap_err();
        assert_eq!(error.kind(), Refusal::Invalid);
        assert!(
            error
                .to_string()
                .contains("already submitted with a different definition"),
            "{error}"
        );
        let elsewhere = job(0, 100, Interpreter::All, vec![gb(4, 4, 10)]);
        let error = system
            .submit(
                &NoOverCommit::default(),
                &submission(id, "reserved", elsewhere),
                "alice",
                NOW,
            )
            .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("already submitted to queue root.dedicated"),
            "{error}"
        );
        assert_eq!(system, before);
    }

    #[test]
    fn only_ids_handed_out_by_new_reservation_are_accepted() {
        let mut system = system();
        for sequence in [7, u64::MAX] {
            let chosen = ReservationId {
                cluster_timestamp: START,
                sequence,
            };
            let refused = system.submit(
                &NoOverCommit::default(),
                &submission(
                    chosen,
                    "dedicated",
                    job(0, 100, Interpreter::All, vec![gb(1, 1, 10)]),
                ),
                "alice",
                NOW,
            );
            assert!(
                matches!(refused, Err(SystemError::NotIssued { .. })),
                "{refused:?}"
            );
        }
        assert_eq!(system.new_reservation().sequence, 1);
    }

    #[test]
    fn update_places_the_new_definition_without_the_old_one() {
        let mut system = system();
        let id = system.new_reservation();
        system
            .submit(
                &NoOverCommit::default(),
                &submission(
                    id,
                    "dedicated",
                    job(0, 100, Interpreter::All, vec![gb(10, 10, 10)]),
                ),
                "alice",
                NOW,
            )
            .unwrap();
        // Ten more seconds of the whole queue: it can take its own old place.
        let longer = job(0, 100, Interpreter::All, vec![gb(10, 10, 20)]);
        let accepted = system
            .update(
                &NoOverCommit::default(),
                &update(id, longer.clone()),
                &ALICE,
                NOW + 1_000,
            )
            .unwrap();
        assert_eq!(spans(&accepted.allocations), vec![(80, 100, 10 * 1024)]);
        let (queue, reservation) = system.reservation(&id).unwrap();
        assert_eq!(queue, "root.dedicated");
        assert_eq!(reservation.definition, longer);
        assert_eq!(reservation.acceptance_time_ms, NOW + 1_000);
        assert_eq!(system.plan(queue).unwrap().len(), 1);
    }

    #[test]
    fn a_refused_update_leaves_the_old_reservation() {
        let mut system = system();
        let bob = system.new_reservation();
        system
            .submit(
                &NoOverCommit::default(),
                &submission(
                    bob,
                    "dedicated",
                    job(0, 50, Interpreter::All, vec![gb(10, 10, 50)]),
                ),
                "bob",
                NOW,
            )
            .unwrap();
        let id = system.new_reservation();
        system
            .submit(
                &NoOverCommit::default(),
                &submission(
                    id,
                    "dedicated",
                    job(0, 100, Interpreter::All, vec![gb(4, 4, 10)]),
                ),
                "alice",
                NOW,
            )
            .unwrap();
        let before = system.clone();
        let fair = NoOverCommit::default();
        let cases: Vec<(ReservationDefinition, &dyn Sharing, &str)> = vec![
            // Into bob's full half: no room.
            (
                job(0, 50, Interpreter::All, vec![gb(4, 4, 10)]),
                &fair,
                "no room before the deadline",
            ),
            (
                job(0, 100, Interpreter::All, vec![gb(0, 1, 10)]),
                &fair,
                "num-containers must be greater than 0",
            ),
            (
                job(0, 100, Interpreter::All, vec![gb(1, 1, 10)]),
                &RefuseAll,
                "average quota",
            ),
        ];
        for (definition, sharing, words) in cases {
            let error = system
                .update(sharing, &update(id, definition), &ALICE, NOW)
                .unwrap_err();
            assert_eq!(error.kind(), Refusal::Invalid, "{error}");
            assert!(
                error.to_string().contains(words),
                "{error:?} lacks {words:?}"
            );
            assert_eq!(system, before);
        }
        let (_, reservation) = system.reservation(&id).unwrap();
        assert_eq!(spans(reservation.allocations()), vec![(90, 100, 4096)]);
    }

    #[test]
    fn only_the_owner_or_an_admin_may_update_or_delete() {
        let mut system = system();
        let id = system.new_reservation();
        let definition = job(0, 100, Interpreter::All, vec![gb(4, 4, 10)]);
        system
            .submit(
                &NoOverCommit::default(),
                &submission(id, "dedicated", definition.clone()),
                "alice",
                NOW,
            )
            .unwrap();
        let before = system.clone();
        let error = system.delete(&delete(id), &BOB).unwrap_err();
        assert_eq!(error.kind(), Refusal::NotAllowed);
        assert_eq!(
            error.to_string(),
            "reservation reservation_1700000000000_0001 is not yours: it belongs to alice, not bob"
        );
        let error = system
            .update(
                &NoOverCommit::default(),
                &update(id, definition.clone()),
                &BOB,
                NOW,
            )
            .unwrap_err();
        assert_eq!(error.kind(), Refusal::NotAllowed);
        assert_eq!(system, before);
        // An admin may update; the reservation stays alice's.
        system
            .update(
                &NoOverCommit::default(),
                &update(id, definition),
                &ADMIN,
                NOW,
            )
            .unwrap();
        assert_eq!(system.reservation(&id).unwrap().1.user, "alice");
        let removed = system.delete(&delete(id), &ALICE).unwrap();
        assert_eq!(removed.id, id);
        assert!(system.reservation(&id).is_none());
        assert!(system.plan("root.dedicated").unwrap().is_empty());
    }

    #[test]
    fn deleting_what_is_not_there() {
        let mut system = system();
        let error = system
            .delete(&delete(system.clone().new_reservation()), &ALICE)
            .unwrap_err();
        assert_eq!(error.kind(), Refusal::Unknown);
        assert_eq!(
            error.to_string(),
            "no reservation reservation_1700000000000_0001"
        );
        let error = system
            .delete(
                &ReservationDeleteRequest {
                    reservation_id: "nope".into(),
                },
                &ALICE,
            )
            .unwrap_err();
        assert_eq!(error.kind(), Refusal::Invalid);
        let error = system
            .update(
                &NoOverCommit::default(),
                &update(
                    system.clone().new_reservation(),
                    job(0, 1, Interpreter::All, vec![gb(1, 1, 1)]),
                ),
                &ALICE,
                NOW,
            )
            .unwrap_err();
        assert_eq!(error.kind(), Refusal::Unknown);
    }

    #[test]
    fn list_filters_by_time_and_id() {
        let mut system = system();
        let mut ids = Vec::new();
        for (from, to) in [(0, 100), (200, 300), (400, 500)] {
            let id = system.new_reservation();
            system
                .submit(
                    &NoOverCommit::default(),
                    &submission(
                        id,
                        "dedicated",
                        job(from, to, Interpreter::All, vec![gb(1, 1, 10)]),
                    ),
                    "alice",
                    NOW,
                )
                .unwrap();
            ids.push(id);
        }
        // Placed at the end of each window: [90, 100), [290, 300), [490, 500) s.
        let listed =
            |start_s: Option<i64>, end_s: Option<i64>, id: Option<ReservationId>| -> Vec<String> {
                let query = ListQuery {
                    queue: Some("dedicated".into()),
                    reservation_id: id.map(|id| id.to_string()),
                    start_time_ms: start_s.map(|s| NOW + s * 1_000),
                    end_time_ms: end_s.map(|s| NOW + s * 1_000),
                    include_resource_allocations: false,
                };
                let list = system.list(&query).unwrap();
                list.reservations
                    .into_iter()
                    .map(|r| r.reservation_id)
                    .collect()
            };
        let names = |picked: &[usize]| -> Vec<String> {
            picked.iter().map(|&i| ids[i].to_string()).collect()
        };
        assert_eq!(listed(None, None, None), names(&[0, 1, 2]));
        assert_eq!(listed(Some(100), Some(290), None), names(&[0, 1]));
        assert_eq!(listed(Some(101), Some(289), None), names(&[]));
        assert_eq!(listed(Some(295), None, None), names(&[1, 2]));
        // An id ignores the times.
        assert_eq!(listed(Some(1_000), Some(2_000), Some(ids[0])), names(&[0]));
        let error = system
            .list(&ListQuery {
                queue: Some("dedicated".into()),
                start_time_ms: Some(10),
                end_time_ms: Some(5),
                ..ListQuery::default()
            })
            .unwrap_err();
        assert_eq!(error.kind(), Refusal::Invalid);
        // No queue given means YARN's "default", which is not reservable here.
        assert_eq!(
            system.list(&ListQuery::default()).unwrap_err().kind(),
            Refusal::Invalid
        );
    }

    #[test]
    fn leaf_names_must_name_one_reservable_queue() {
        let config = SystemConfig {
            cluster_start_ms: START,
            max_periodicity_ms: DEFAULT_MAX_PERIODICITY_MS,
        };
        let capacity = Resources::new(1024, 1, 0);
        let mut system = ReservationSystem::new(
            config,
            vec![
                PlanConfig::new("root.a.gold", capacity),
                PlanConfig::new("root.b.gold", capacity),
            ],
        )
        .unwrap();
        let id = system.new_reservation();
        let error = system
            .submit(
                &NoOverCommit::default(),
                &submission(
                    id,
                    "gold",
                    job(0, 100, Interpreter::All, vec![gb(1, 1, 10)]),
                ),
                "alice",
                NOW,
            )
            .unwrap_err();
        assert_eq!(error.kind(), Refusal::Invalid);
        assert!(
            error.to_string().contains("root.a.gold, root.b.gold"),
            "{error}"
        );
        let duplicate = ReservationSystem::new(
            config,
            vec![
                PlanConfig::new("root.a", capacity),
                PlanConfig::new("root.a", capacity),
            ],
        );
        assert!(matches!(duplicate, Err(SystemError::DuplicatePlan { .. })));
    }

    #[test]
    fn forget_ended_drops_reservations_past_the_window() {
        let mut system = system();
        let id = system.new_reservation();
        system
            .submit(
                &NoOverCommit::default(),
                &submission(
                    id,
                    "dedicated",
                    job(0, 100, Interpreter::All, vec![gb(1, 1, 10)]),
                ),
                "alice",
                NOW,
            )
            .unwrap();
        let sharing = NoOverCommit {
            window_ms: 60_000,
            ..NoOverCommit::default()
        };
        assert_eq!(
            system
                .forget_ended_in("root.dedicated", &sharing, NOW + 150_000)
                .unwrap(),
            vec![]
        );
        assert_eq!(
            system
                .forget_ended_in("root.dedicated", &sharing, NOW + 160_000)
                .unwrap(),
            vec![id]
        );
        assert!(system.reservation(&id).is_none());
    }

    #[test]
    fn serde_round_trip_rebuilds_the_index() {
        let mut system = system();
        let id = system.new_reservation();
        let mut daily = job(
            0,
            100,
            Interpreter::OrderNoGap,
            vec![gb(2, 2, 10), gb(1, 1, 20)],
        );
        daily.recurrence_expression = Some(DEFAULT_MAX_PERIODICITY_MS.to_string());
        system
            .submit(
                &NoOverCommit::default(),
                &submission(id, "dedicated", daily),
                "alice",
                NOW,
            )
            .unwrap();
        let text = serde_json::to_string(&system).unwrap();
        let loaded: ReservationSystem = serde_json::from_str(&text).unwrap();
        assert_eq!(loaded, system);
        assert_eq!(loaded.reservation(&id).unwrap().0, "root.dedicated");
    }
}
