//! The plan follower (YARN's PlanFollower): which reservations are active
//! at an instant, as the scheduling round sees them — a reservable leaf
//! with active reservations becomes a parent with one child per
//! reservation, guaranteed and capped at what it holds now — and what
//! becomes of the apps of a reservation that has ended: they move on in
//! their queue, or are killed when the queue's reservation-move-on-expiry
//! is false.

use crate::cluster::{Cluster, Container};
use crate::queues::QueueTree;
use crate::resources::Resources;

use super::{ReservationId, ReservationSystem};

/// A reservation that is active now, as the round sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ActiveReservation {
    /// The reservable leaf, as an index into the queue tree.
    pub queue_index: usize,
    /// The reservation's id, as YARN prints it (`reservation_<ms>_<sequence>`).
    pub id: String,
    /// What the plan gives it at this instant.
    pub reserved: Resources,
}

/// What an app of a reservation should do at a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// The reservation is active, or has yet to start: nothing.
    Keep,
    /// It ended (or was deleted): the app goes on in its queue.
    Move,
    /// It ended, and its queue's reservation-move-on-expiry is false.
    Kill,
}

/// The follower's step before a round: apps of reservations that have
/// ended move on in their queue or are killed (returned: their containers
/// end now, to be charged); and the reservations active at `now`.
pub fn follow(
    system: &ReservationSystem,
    cluster: &mut Cluster,
    now_ms: u64,
) -> (Vec<ActiveReservation>, Vec<Container>) {
    let mut expired = Vec::new();
    for index in cluster.active_apps() {
        let app = &cluster.apps()[index];
        let Some(id) = &app.reservation_id else {
            continue;
        };
        let queue = &cluster.queues().queues()[app.queue_index].path;
        match expiry(system, id, queue, now_ms) {
            Expiry::Keep => {}
            decision => expired.push((index, decision)),
        }
    }
    let mut ended = Vec::new();
    for (index, decision) in expired {
        match decision {
            Expiry::Move => cluster.leave_reservation(index),
            _ => ended.extend(cluster.kill_app(index, "its reservation ended", now_ms)),
        }
    }
    (active(system, cluster.queues(), now_ms), ended)
}

/// The reservations active at `now`, for the round's snapshot.
pub fn active(
    system: &ReservationSystem,
    queues: &QueueTree,
    now_ms: u64,
) -> Vec<ActiveReservation> {
    let mut active = Vec::new();
    for plan in system.plans() {
        let Some(queue_index) = queues.queues().iter().position(|q| q.path == plan.queue()) else {
            continue;
        };
        for holding in plan.active_at(now_ms as i64) {
            active.push(ActiveReservation {
                queue_index,
                id: holding.id.to_string(),
                reserved: holding.resources,
            });
        }
    }
    active
}

/// What an app of reservation `id` in the queue at `queue_path` does now.
pub fn expiry(system: &ReservationSystem, id: &str, queue_path: &str, now_ms: u64) -> Expiry {
    let on_expiry = || {
        let moves = system
            .plan(queue_path)
            .is_none_or(|plan| plan.config().move_on_expiry);
        if moves { Expiry::Move } else { Expiry::Kill }
    };
    let Ok(parsed) = id.parse::<ReservationId>() else {
        return on_expiry();
    };
    match system.reservation(&parsed) {
        None => on_expiry(),
        Some((_, reservation)) if reservation.is_recurring() => Expiry::Keep,
        Some((_, reservation)) => match reservation.span() {
            Some((_, end)) if (now_ms as i64) >= end => on_expiry(),
            _ => Expiry::Keep,
        },
    }
}

/// Why an app of reservation `id` waits, when it is because the
/// reservation has not started yet.
pub fn not_started(system: &ReservationSystem, id: &str, now_ms: u64) -> Option<String> {
    let (queue, reservation) = system.reservation(&id.parse().ok()?)?;
    let now = now_ms as i64;
    if reservation.amount_at(now).is_some() {
        return None;
    }
    let next = reservation
        .allocations()
        .iter()
        .map(|a| a.start_ms)
        .filter(|&start| start > now)
        .min();
    Some(match (next, reservation.period_ms()) {
        (Some(start), _) => {
            format!("waiting for its reservation {id} in {queue}, which starts at {start} ms")
        }
        (None, Some(period)) => format!(
            "waiting for the next occurrence of its reservation {id} in {queue} (every {period} ms)"
        ),
        (None, None) => return None,
    })
}
