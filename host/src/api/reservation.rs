//! YARN's reservation REST API, same paths and JSON shapes:
//! `POST /ws/v1/cluster/reservation/{new-reservation,submit,update,delete}`
//! and `GET /ws/v1/cluster/reservation/list`. Decisions are the sharing
//! policy's; a refusal is a 4xx whose message says which limit, when and by
//! how much, and leaves every plan as it was.

use axum::Json;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ApiError, ApiState};
use crate::policy::PolicyKind;
use crate::reservation::definition::{
    ReservationDeleteRequest, ReservationSubmissionRequest, ReservationUpdateRequest,
};
use crate::reservation::{Caller, ListQuery};
use crate::rm::ResourceManager;
use crate::rm::reservations::ReservationError;

impl From<ReservationError> for ApiError {
    fn from(error: ReservationError) -> ApiError {
        ApiError {
            status: StatusCode::from_u16(error.status())
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            message: error.to_string(),
        }
    }
}

/// A JSON body, or a 400 saying what is wrong with it.
fn body<T: serde::de::DeserializeOwned>(bytes: &[u8], what: &str) -> Result<T, ApiError> {
    serde_json::from_slice(bytes).map_err(|e| ApiError::bad_request(format!("invalid {what}: {e}")))
}

/// `POST …/new-reservation`: `{"reservation-id": "reservation_…"}`.
pub async fn new_reservation(State(state): State<ApiState>) -> Result<Json<Value>, ApiError> {
    let id = state
        .rm
        .with(|rm: &mut ResourceManager| rm.reservations.new_reservation())
        .await??;
    Ok(Json(json!({ "reservation-id": id.to_string() })))
}

/// `POST …/submit`: 202, with no body as in YARN, once the reservation is
/// placed in its plan (`list` shows where).
pub async fn submit(
    State(state): State<ApiState>,
    headers: HeaderMap,
    bytes: axum::body::Bytes,
) -> Result<StatusCode, ApiError> {
    let request: ReservationSubmissionRequest = body(&bytes, "reservation submission")?;
    let caller = state.caller(&headers);
    let security = state.security.clone();
    let policies = state.policies.clone();
    state
        .rm
        .with(move |rm: &mut ResourceManager| {
            // Submitting a reservation takes the right to submit to its queue.
            if let Some(leaf) = rm.cluster.queues().leaf(&request.queue) {
                security
                    .check_submit(&caller, rm.cluster.queues(), leaf)
                    .map_err(ApiError::forbidden)?;
            }
            rm.reservations.refresh_capacities(&rm.cluster);
            let now = rm.now();
            let sharing = policies.slot(PolicyKind::Sharing);
            let accepted = rm.reservations.submit(sharing, &request, &caller, now)?;
            tracing::info!(reservation = %accepted.reservation_id, queue = %accepted.queue, user = %caller, "reservation accepted");
            Ok::<_, ApiError>(())
        })
        .await??;
    Ok(StatusCode::ACCEPTED)
}

/// `POST …/update`: the reservation is placed anew, or stays as it was.
pub async fn update(
    State(state): State<ApiState>,
    headers: HeaderMap,
    bytes: axum::body::Bytes,
) -> Result<Json<Value>, ApiError> {
    let request: ReservationUpdateRequest = body(&bytes, "reservation update")?;
    let caller = state.caller(&headers);
    let is_admin = state.security.is_admin(&caller);
    let policies = state.policies.clone();
    let accepted = state
        .rm
        .with(move |rm: &mut ResourceManager| {
            rm.reservations.refresh_capacities(&rm.cluster);
            let now = rm.now();
            let caller = Caller {
                user: &caller,
                is_admin,
            };
            let sharing = policies.slot(PolicyKind::Sharing);
            rm.reservations.update(sharing, &request, &caller, now)
        })
        .await??;
    tracing::info!(reservation = %accepted.reservation_id, "reservation updated");
    Ok(Json(json!({})))
}

/// `POST …/delete`.
pub async fn delete(
    State(state): State<ApiState>,
    headers: HeaderMap,
    bytes: axum::body::Bytes,
) -> Result<Json<Value>, ApiError> {
    let request: ReservationDeleteRequest = body(&bytes, "reservation delete request")?;
    let caller = state.caller(&headers);
    let is_admin = state.security.is_admin(&caller);
    let removed = state
        .rm
        .with(move |rm: &mut ResourceManager| {
            let caller = Caller {
                user: &caller,
                is_admin,
            };
            rm.reservations.delete(&request, &caller)
        })
        .await??;
    tracing::info!(reservation = %removed.id, "reservation deleted");
    Ok(Json(json!({})))
}

/// The list API's query parameters, with YARN's names. Others (such as the
/// `user.name` Hadoop's clients add to every request) are ignored, as YARN does.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ListParams {
    queue: Option<String>,
    reservation_id: Option<String>,
    start_time: Option<i64>,
    end_time: Option<i64>,
    #[serde(default)]
    include_resource_allocations: bool,
}

/// `GET …/list`: `{"reservations": [...]}`.
pub async fn list(
    State(state): State<ApiState>,
    params: Result<Query<ListParams>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let Query(params) = params.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let query = ListQuery {
        queue: params.queue,
        reservation_id: params.reservation_id,
        start_time_ms: params.start_time,
        end_time_ms: params.end_time,
        include_resource_allocations: params.include_resource_allocations,
    };
    let listed = state
        .rm
        .with(move |rm: &mut ResourceManager| rm.reservations.list(&query))
        .await??;
    Ok(Json(
        serde_json::to_value(listed).map_err(ApiError::internal)?,
    ))
}
