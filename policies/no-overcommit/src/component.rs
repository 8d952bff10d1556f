//! The WebAssembly glue: WIT records in, the functions of `lib.rs` out. The
//! timelines' columns move into the native records without a copy.

#![allow(unsafe_code)] // the code wit-bindgen generates

wit_bindgen::generate!({ world: "sharing-policy", path: "../../wit" });

use exports::weft::policy::sharing as wit;
use weft::policy::host::{Level, log};
use weft::policy::types::PolicyKind;

struct Component;

impl Guest for Component {
    fn describe() -> PolicyInfo {
        PolicyInfo {
            name: "no-overcommit".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            kind: PolicyKind::Sharing,
        }
    }

    fn configure(params: Vec<(String, String)>) -> Result<(), String> {
        crate::configure(&params)
    }
}

impl wit::Guest for Component {
    fn window(settings: wit::PlanSettings) -> i64 {
        crate::window(&native_settings(settings))
    }

    fn validate(admission: wit::Admission) -> Result<(), wit::Rejection> {
        let admission = native_admission(admission);
        if let Err(malformed) = admission.check_for_validate(0) {
            log(
                Level::Warn,
                &format!("refused {}: {malformed}", admission.reservation_id),
            );
            return Err(wit::Rejection::OverCommit(malformed.to_string()));
        }
        crate::validate_checked(&admission).map_err(wit_rejection)
    }

    fn available(admission: wit::Admission) -> wit::Timeline {
        let admission = native_admission(admission);
        match crate::available(&admission) {
            Ok(timeline) => wit_timeline(timeline),
            Err(malformed) => {
                log(Level::Warn, &format!("offered nothing: {malformed}"));
                wit_timeline(crate::Timeline::default())
            }
        }
    }
}

fn native_settings(settings: wit::PlanSettings) -> crate::PlanSettings {
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

fn native_admission(admission: wit::Admission) -> crate::Admission {
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

fn wit_timeline(timeline: crate::Timeline) -> wit::Timeline {
    wit::Timeline {
        at_ms: timeline.at_ms,
        memory_mb: timeline.memory_mb,
        vcores: timeline.vcores,
        gpus: timeline.gpus,
    }
}

fn wit_rejection(rejection: crate::Rejection) -> wit::Rejection {
    match rejection {
        crate::Rejection::OverCommit(message) => wit::Rejection::OverCommit(message),
        crate::Rejection::InstantaneousQuota(message) => {
            wit::Rejection::InstantaneousQuota(message)
        }
        crate::Rejection::AverageQuota(message) => wit::Rejection::AverageQuota(message),
    }
}

export!(Component);
