//! The WebAssembly glue: WIT records in (`convert.rs`), the functions of
//! `lib.rs` out.

#![allow(unsafe_code)] // the code wit-bindgen generates

wit_bindgen::generate!({ world: "sharing-policy", path: "../../wit" });

use exports::weft::policy::sharing as wit;
use weft::policy::host::{Level, log};
use weft::policy::types::PolicyKind;

#[path = "convert.rs"]
mod convert;
use convert::{native_admission, native_settings, wit_rejection};

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
        convert::available(admission)
    }
}

export!(Component);
