//! WIT records to this crate's native ones and back, for both sharing
//! policies' component glue (capacity-over-time includes this file): the
//! timelines' columns move without a copy.

use super::wit;
use super::{Level, log};

/// What `available` answers: the crate's own, or nothing (logged) when the
/// admission is malformed.
pub(super) fn available(admission: wit::Admission) -> wit::Timeline {
    match crate::available(&native_admission(admission)) {
        Ok(timeline) => wit_timeline(timeline),
        Err(malformed) => {
            log(Level::Warn, &format!("offered nothing: {malformed}"));
            wit_timeline(crate::Timeline::default())
        }
    }
}

pub(super) fn native_settings(settings: wit::PlanSettings) -> crate::PlanSettings {
    crate::PlanSettings {
        queue: settings.queue,
        capacity: crate::Resources::new(
            settings.capacity.memory_mb,
            settings.capacity.vcores,
            settings.capacity.gpus,
        ),
        reservation_window_ms: settings.reservation_window_ms,
        instantaneous_max_capacity: settings.instantaneous_max_capacity,
        average_capacity: settings.average_capacity,
    }
}

fn native_timeline(timeline: wit::Timeline) -> crate::Timeline {
    crate::Timeline {
        at_ms: timeline.at_ms,
        memory_mb: timeline.memory_mb,
        vcores: timeline.vcores,
        gpus: timeline.gpus,
    }
}

pub(super) fn native_admission(admission: wit::Admission) -> crate::Admission {
    crate::Admission {
        settings: native_settings(admission.settings),
        user: admission.user,
        reservation_id: admission.reservation_id,
        from_ms: admission.from_ms,
        to_ms: admission.to_ms,
        candidate: native_timeline(admission.candidate),
        user_committed: native_timeline(admission.user_committed),
        plan_committed: native_timeline(admission.plan_committed),
    }
}

pub(super) fn wit_timeline(timeline: crate::Timeline) -> wit::Timeline {
    wit::Timeline {
        at_ms: timeline.at_ms,
        memory_mb: timeline.memory_mb,
        vcores: timeline.vcores,
        gpus: timeline.gpus,
    }
}

pub(super) fn wit_rejection(rejection: crate::Rejection) -> wit::Rejection {
    match rejection {
        crate::Rejection::OverCommit(message) => wit::Rejection::OverCommit(message),
        crate::Rejection::InstantaneousQuota(message) => {
            wit::Rejection::InstantaneousQuota(message)
        }
        crate::Rejection::AverageQuota(message) => wit::Rejection::AverageQuota(message),
    }
}
