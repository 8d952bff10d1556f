//! Seed 004 (CapacityOverTimePolicy) through the host: the reservation
//! system, the greedy agent and the `capacity-over-time` WASM component.
//!
//! The plan: 100 GB / 100 vcores; a user may hold 50 % (51,200 MB) at any
//! instant and 25 % (25,600 MB) on average over any hour. Every reservation
//! has exactly its duration between arrival and deadline, so the agent's
//! placement is known and the limits can be hit to the megabyte.

use std::sync::Arc;

use serde_json::json;
use weft_host::clock::VirtualClock;
use weft_host::policy::{PolicyKind, PolicyRuntime, PolicySource};
use weft_host::reservation::definition::ReservationSubmissionRequest;
use weft_host::reservation::{PlanConfig, ReservationSystem, SystemConfig, SystemError};
use weft_host::resources::Resources;

const HOUR: i64 = 3_600_000;

struct Seed004 {
    runtime: PolicyRuntime,
    system: ReservationSystem,
}

impl Seed004 {
    fn new() -> Seed004 {
        let runtime = PolicyRuntime::from_settings(
            &crate::support::default_settings(),
            Arc::new(VirtualClock::default()),
        )
        .unwrap();
        runtime
            .load(
                PolicyKind::Sharing,
                &PolicySource::Builtin("capacity-over-time".into()),
                &[],
            )
            .unwrap();
        let plan = PlanConfig {
            reservation_window_ms: HOUR,
            instantaneous_max_capacity: 50.0,
            average_capacity: 25.0,
            ..PlanConfig::new("root.dedicated", Resources::new(102_400, 100, 0))
        };
        let config = SystemConfig {
            cluster_start_ms: 1,
            max_periodicity_ms: 24 * HOUR,
        };
        Seed004 {
            runtime,
            system: ReservationSystem::new(config, vec![plan]).unwrap(),
        }
    }

    /// `user` reserves one container of `memory_mb` over exactly
    /// [`start`, `start + duration`), recurring every `period` if given.
    fn reserve(
        &mut self,
        user: &str,
        memory_mb: i64,
        start: i64,
        duration: i64,
        period: Option<i64>,
    ) -> Result<(), SystemError> {
        let mut definition = json!({
            "arrival": start, "deadline": start + duration, "reservation-name": user,
            "reservation-requests": {"reservation-request-interpreter": 1, "reservation-request": [
                {"capability": {"memory": memory_mb, "vCores": 1}, "num-containers": 1, "duration": duration}]}
        });
        if let Some(period) = period {
            definition["recurrence-expression"] = json!(period.to_string());
        }
        let id = self.system.new_reservation();
        let request = ReservationSubmissionRequest {
            queue: "dedicated".into(),
            reservation_id: id.to_string(),
            reservation_definition: serde_json::from_value(definition).unwrap(),
        };
        let sharing = self.runtime.sharing();
        self.system.submit(sharing, &request, user, 0).map(drop)
    }
}

/// The refusal's message, which must name the limit.
fn refused(result: Result<(), SystemError>, limit: &str) -> String {
    let message = result.expect_err("should be refused").to_string();
    assert!(message.contains(limit), "{message}");
    message
}

#[test]
fn the_instantaneous_limit_just_below_at_and_above() {
    let mut seed = Seed004::new();
    // Ten minutes, far under the hour's average.
    seed.reserve("below", 51_199, 0, 600_000, None).unwrap();
    seed.reserve("at", 51_200, HOUR, 600_000, None).unwrap();
    let message = refused(
        seed.reserve("above", 51_201, 2 * HOUR, 600_000, None),
        "instantaneous-max-capacity",
    );
    assert!(message.contains("over by 1 MB"), "{message}");
}

#[test]
fn the_average_limit_just_below_at_and_above() {
    let mut seed = Seed004::new();
    // A whole hour: the integral over the window is the whole reservation.
    seed.reserve("below", 25_599, 0, HOUR, None).unwrap();
    seed.reserve("at", 25_600, 0, HOUR, None).unwrap();
    refused(
        seed.reserve("above", 25_601, 0, HOUR, None),
        "average-capacity",
    );
    // A hair over: on top of a full hour, 1 MB for one second inside it.
    seed.reserve("hair", 25_600, 2 * HOUR, HOUR, None).unwrap();
    refused(
        seed.reserve("hair", 1, 3 * HOUR - 1000, 1000, None),
        "average-capacity",
    );
    // The same second just after the hour starts a window of its own that
    // holds 25,600 MB for 3,599 s and 1 MB for 1 s: under the limit.
    seed.reserve("hair", 1, 3 * HOUR, 1000, None).unwrap();
}

#[test]
fn one_users_submissions_accumulate_and_another_user_is_unaffected() {
    let mut seed = Seed004::new();
    seed.reserve("carol", 12_800, 0, HOUR, None).unwrap();
    seed.reserve("carol", 12_800, 0, HOUR, None).unwrap();
    // Carol holds the hour's average in full; a third reservation, even
    // half an hour later, would put a window over it.
    refused(
        seed.reserve("carol", 1024, HOUR / 2, HOUR, None),
        "average-capacity",
    );
    // Dave, in the same hour, is judged on his own.
    seed.reserve("dave", 25_600, 0, HOUR, None).unwrap();
    // And the plan as a whole still may not go above 100 GB at an instant.
    seed.reserve("erin", 25_600, 0, HOUR, None).unwrap();
    seed.reserve("frank", 25_600, 0, HOUR, None).unwrap();
    refused(seed.reserve("grace", 1024, 0, HOUR, None), "no room");
}

#[test]
fn recurring_reservations_count_in_every_period() {
    let mut seed = Seed004::new();
    // 25,600 MB for one hour in every two: every window is at most at the limit.
    seed.reserve("erin", 25_600, 0, HOUR, Some(2 * HOUR))
        .unwrap();
    // On top of a later occurrence, any more is over the average…
    refused(
        seed.reserve("erin", 1024, 4 * HOUR, HOUR, None),
        "average-capacity",
    );
    // …while between two occurrences the rest of the allowance is hers.
    seed.reserve("erin", 25_600, 5 * HOUR, HOUR, None).unwrap();
    // A period that does not divide the maximum periodicity is refused.
    let message = seed
        .reserve("erin", 1024, 0, HOUR, Some(7 * HOUR))
        .unwrap_err()
        .to_string();
    assert!(message.contains("period"), "{message}");
}
