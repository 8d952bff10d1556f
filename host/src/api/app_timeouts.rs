//! An app's lifetime as YARN's REST shows and changes it: GET
//! …/apps/{id}/timeouts and …/timeouts/{type}, PUT …/apps/{id}/timeout,
//! and the `timeouts` of an app's report. YARN's only timeout type is
//! LIFETIME; its expiry time is ISO 8601 with milliseconds and an offset
//! (`2026-11-27T09:36:16.678+0000`).

use axum::Json;
use axum::extract::State;
use chrono::DateTime;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::extract::{ApiPath, JsonBody};
use super::openapi::RemoteException;
use super::{ApiError, ApiState};
use crate::clock::iso8601;
use crate::cluster::App;
use crate::rm::ResourceManager;
use crate::rm::requests::RequestError;
use crate::security::Caller;

/// YARN's `timeouts`: `{"timeout": [...]}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(super) struct AppTimeoutList {
    timeout: Vec<AppTimeout>,
}

impl AppTimeoutList {
    /// The timeouts of `app` at `now`: its LIFETIME.
    pub(super) fn of(app: &App, now: u64) -> AppTimeoutList {
        AppTimeoutList {
            timeout: vec![AppTimeout::lifetime(app, now)],
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct AppTimeoutsResponse {
    timeouts: AppTimeoutList,
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct AppTimeoutResponse {
    timeout: AppTimeout,
}

/// YARN's app timeout: LIFETIME, when it expires and the seconds left
/// (`UNLIMITED` and -1 without a lifetime; 0 left once the app ended).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct AppTimeout {
    #[serde(rename = "type")]
    kind: String,
    expiry_time: String,
    remaining_time_in_seconds: i64,
}

/// YARN's only timeout type.
const LIFETIME: &str = "LIFETIME";

impl AppTimeout {
    /// `app`'s LIFETIME timeout at `now`.
    pub(super) fn lifetime(app: &App, now: u64) -> AppTimeout {
        match app.lifetime_deadline_ms {
            None => AppTimeout {
                kind: LIFETIME.into(),
                expiry_time: "UNLIMITED".into(),
                remaining_time_in_seconds: -1,
            },
            Some(deadline) => AppTimeout {
                kind: LIFETIME.into(),
                expiry_time: iso8601(deadline),
                remaining_time_in_seconds: if app.state.has_ended() {
                    0
                } else {
                    i64::try_from(deadline.saturating_sub(now) / 1000).unwrap_or(i64::MAX)
                },
            },
        }
    }
}

/// An expiry time as YARN takes it (`2026-11-27T09:36:16.678+0530`), or
/// RFC 3339 (`…+05:30`, `…Z`), as ms since the epoch; the refusal names the
/// field and the forms taken.
fn parse_expiry(text: &str) -> Result<u64, ApiError> {
    let text = text.trim();
    let parsed = DateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f%z")
        .or_else(|_| DateTime::parse_from_rfc3339(text))
        .ok()
        .and_then(|time| u64::try_from(time.timestamp_millis()).ok())
        .filter(|&ms| ms <= crate::limits::MAX_TIME_MS);
    parsed.ok_or_else(|| {
        ApiError::bad_request(format!(
            "timeout.expiryTime {:?} is not an ISO 8601 time Weft takes: \
             yyyy-MM-dd'T'HH:mm:ss.SSSZ (2026-11-27T09:36:16.678+0000) or RFC 3339, \
             from 1970 to 9999",
            text.chars().take(64).collect::<String>()
        ))
    })
}

/// An app's lifetime, and what its report says of it.
async fn timeout_of(state: &ApiState, id: String) -> Result<AppTimeout, ApiError> {
    let wanted = id.clone();
    state
        .rm
        .with(move |rm: &mut ResourceManager| {
            let now = rm.now();
            rm.cluster()
                .app(&wanted)
                .map(|app| AppTimeout::lifetime(app, now))
        })
        .await?
        .ok_or_else(|| ApiError::not_found(format!("application {id} not found")))
}

/// An app's timeouts: its LIFETIME (`UNLIMITED` without one).
#[utoipa::path(get, path = "/ws/v1/cluster/apps/{id}/timeouts", tag = "apps",
    params(("id" = String, Path, description = "The application id")),
    responses((status = 200, body = AppTimeoutsResponse), (status = 401, body = RemoteException),
        (status = 404, body = RemoteException)))]
pub(super) async fn app_timeouts(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<AppTimeoutsResponse>, ApiError> {
    let timeout = timeout_of(&state, id).await?;
    Ok(Json(AppTimeoutsResponse {
        timeouts: AppTimeoutList {
            timeout: vec![timeout],
        },
    }))
}

/// Refuses a timeout type (`field`) other than LIFETIME (any case, as YARN).
fn check_type(field: &str, kind: &str) -> Result<(), ApiError> {
    if kind.trim().eq_ignore_ascii_case(LIFETIME) {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "{field} {:?} is no timeout type: YARN's only one is LIFETIME",
            kind.chars().take(64).collect::<String>()
        )))
    }
}

/// One of an app's timeouts: YARN knows only LIFETIME.
#[utoipa::path(get, path = "/ws/v1/cluster/apps/{id}/timeouts/{type}", tag = "apps",
    params(("id" = String, Path, description = "The application id"),
        ("type" = String, Path, description = "LIFETIME")),
    responses((status = 200, body = AppTimeoutResponse), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 404, body = RemoteException)))]
pub(super) async fn app_timeout(
    State(state): State<ApiState>,
    ApiPath((id, kind)): ApiPath<(String, String)>,
) -> Result<Json<AppTimeoutResponse>, ApiError> {
    check_type("type", &kind)?;
    let timeout = timeout_of(&state, id).await?;
    Ok(Json(AppTimeoutResponse { timeout }))
}

/// YARN's body for a new lifetime: `{"timeout": {"type": "LIFETIME",
/// "expiryTime": "…"}}` (a `remainingTimeInSeconds` sent along is ignored).
#[derive(Debug, Deserialize, ToSchema)]
pub(super) struct TimeoutUpdate {
    timeout: TimeoutUpdateFields,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct TimeoutUpdateFields {
    /// LIFETIME.
    #[serde(rename = "type", default)]
    #[schema(max_length = 64)]
    kind: Option<String>,
    /// When the app's lifetime ends: `yyyy-MM-dd'T'HH:mm:ss.SSSZ` or RFC 3339.
    #[serde(default)]
    #[schema(max_length = 64)]
    expiry_time: Option<String>,
    #[serde(default)]
    #[allow(
        dead_code,
        reason = "YARN clients send it; what it says follows from expiryTime"
    )]
    remaining_time_in_seconds: Option<i64>,
}

/// Sets when an app's lifetime ends (YARN's updateApplicationTimeouts):
/// its user, an administrator of its queue or of the cluster. The time must
/// be in the future, and is cut to the queue's
/// `maximum-application-lifetime` from the app's submission; an app that
/// has ended keeps its own. Answers the lifetime now in force.
#[utoipa::path(put, path = "/ws/v1/cluster/apps/{id}/timeout", tag = "apps",
    params(("id" = String, Path, description = "The application id")),
    request_body = TimeoutUpdate,
    responses((status = 200, body = AppTimeoutResponse), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 403, body = RemoteException),
        (status = 404, body = RemoteException), (status = 413, body = RemoteException)))]
pub(super) async fn update_timeout(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    JsonBody(update): JsonBody<TimeoutUpdate>,
) -> Result<Json<AppTimeoutResponse>, ApiError> {
    let (Some(kind), Some(expiry)) = (update.timeout.kind, update.timeout.expiry_time) else {
        return Err(ApiError::bad_request(
            "timeout.type or timeout.expiryTime is missing (YARN: \"Timeout type or ExpiryTime is null.\")",
        ));
    };
    check_type("timeout.type", &kind)?;
    let expiry_ms = parse_expiry(&expiry)?;
    let timeout = state
        .rm
        .with(move |rm: &mut ResourceManager| {
            rm.update_lifetime(&caller, &id, expiry_ms)?;
            let now = rm.now();
            rm.cluster()
                .app(&id)
                .map(|app| AppTimeout::lifetime(app, now))
                .ok_or_else(|| RequestError::Unknown(format!("application {id} not found")))
        })
        .await??;
    Ok(Json(AppTimeoutResponse { timeout }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_times_read_as_yarn_writes_them_and_as_rfc_3339() {
        let ms = 1_795_772_176_678;
        assert_eq!(iso8601(ms), "2026-11-27T09:36:16.678+0000");
        assert_eq!(parse_expiry("2026-11-27T09:36:16.678+0000").unwrap(), ms);
        assert_eq!(parse_expiry("2026-11-27T15:06:16.678+0530").unwrap(), ms);
        assert_eq!(parse_expiry("2026-11-27T15:06:16.678+05:30").unwrap(), ms);
        assert_eq!(parse_expiry("2026-11-27T09:36:16.678Z").unwrap(), ms);
        for bad in ["tomorrow", "", "1969-12-31T23:59:59.000+0000", "2026-11-27"] {
            let error = parse_expiry(bad).unwrap_err().message;
            assert!(error.contains("timeout.expiryTime"), "{bad}: {error}");
        }
    }
}
