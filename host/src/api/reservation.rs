//! YARN's reservation REST API, same paths and JSON shapes:
//! `POST /ws/v1/cluster/reservation/{new-reservation,submit,update,delete}`
//! and `GET /ws/v1/cluster/reservation/list`. Decisions are the sharing
//! policy's; a refusal is a 4xx whose message says which limit, when and by
//! how much, and leaves every plan as it was.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::extract::{ApiQuery, JsonBody};
use super::openapi::RemoteException;
use super::{ApiError, ApiState};
use crate::reservation::ListQuery;
use crate::reservation::definition::{
    NewReservation, ReservationDeleteRequest, ReservationListInfo, ReservationSubmissionRequest,
    ReservationUpdateRequest,
};
use crate::rm::ResourceManager;
use crate::security::Caller;

/// An empty JSON object, as YARN answers update and delete.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct Empty {}

/// A new reservation id, to submit a reservation under.
#[utoipa::path(post, path = "/ws/v1/cluster/reservation/new-reservation", tag = "reservations",
    responses((status = 200, body = NewReservation), (status = 401, body = RemoteException),
        (status = 503, description = "the reservation system is off", body = RemoteException)))]
pub(super) async fn new_reservation(
    State(state): State<ApiState>,
    caller: Caller,
) -> Result<Json<NewReservation>, ApiError> {
    let id = state
        .rm
        .with(move |rm: &mut ResourceManager| rm.new_reservation(&caller))
        .await??;
    Ok(Json(NewReservation {
        reservation_id: id.to_string(),
    }))
}

/// 202, with no body as in YARN, once the reservation is placed in its plan
/// (`list` shows where).
#[utoipa::path(post, path = "/ws/v1/cluster/reservation/submit", tag = "reservations",
    request_body = ReservationSubmissionRequest,
    responses((status = 202, description = "placed in its plan"),
        (status = 400, body = RemoteException), (status = 401, body = RemoteException),
        (status = 403, body = RemoteException), (status = 404, body = RemoteException),
        (status = 409, body = RemoteException), (status = 413, body = RemoteException),
        (status = 503, description = "the reservation system is off", body = RemoteException)))]
pub(super) async fn submit(
    State(state): State<ApiState>,
    caller: Caller,
    JsonBody(request): JsonBody<ReservationSubmissionRequest>,
) -> Result<StatusCode, ApiError> {
    state
        .rm
        .with(move |rm: &mut ResourceManager| rm.submit_reservation(&caller, &request))
        .await??;
    Ok(StatusCode::ACCEPTED)
}

/// The reservation is placed anew, or stays as it was.
#[utoipa::path(post, path = "/ws/v1/cluster/reservation/update", tag = "reservations",
    request_body = ReservationUpdateRequest,
    responses((status = 200, body = Empty), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 403, body = RemoteException),
        (status = 404, body = RemoteException), (status = 409, body = RemoteException),
        (status = 413, body = RemoteException),
        (status = 503, description = "the reservation system is off", body = RemoteException)))]
pub(super) async fn update(
    State(state): State<ApiState>,
    caller: Caller,
    JsonBody(request): JsonBody<ReservationUpdateRequest>,
) -> Result<Json<Empty>, ApiError> {
    state
        .rm
        .with(move |rm: &mut ResourceManager| rm.update_reservation(&caller, &request))
        .await??;
    Ok(Json(Empty {}))
}

/// Deletes a reservation (its owner or an administrator).
#[utoipa::path(post, path = "/ws/v1/cluster/reservation/delete", tag = "reservations",
    request_body = ReservationDeleteRequest,
    responses((status = 200, body = Empty), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 403, body = RemoteException),
        (status = 404, body = RemoteException), (status = 413, body = RemoteException),
        (status = 503, description = "the reservation system is off", body = RemoteException)))]
pub(super) async fn delete(
    State(state): State<ApiState>,
    caller: Caller,
    JsonBody(request): JsonBody<ReservationDeleteRequest>,
) -> Result<Json<Empty>, ApiError> {
    state
        .rm
        .with(move |rm: &mut ResourceManager| rm.delete_reservation(&caller, &request))
        .await??;
    Ok(Json(Empty {}))
}

/// The list API's query parameters, with YARN's names. Others (such as the
/// `user.name` Hadoop's clients add to every request) are ignored, as YARN does.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "kebab-case")]
#[into_params(parameter_in = Query, rename_all = "kebab-case")]
pub(super) struct ListParams {
    queue: Option<String>,
    reservation_id: Option<String>,
    start_time: Option<i64>,
    end_time: Option<i64>,
    #[serde(default)]
    include_resource_allocations: bool,
}

/// Reservations, by queue, id and time window.
#[utoipa::path(get, path = "/ws/v1/cluster/reservation/list", tag = "reservations",
    params(ListParams),
    responses((status = 200, body = ReservationListInfo), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 404, body = RemoteException),
        (status = 503, description = "the reservation system is off", body = RemoteException)))]
pub(super) async fn list(
    State(state): State<ApiState>,
    ApiQuery(params): ApiQuery<ListParams>,
) -> Result<Json<ReservationListInfo>, ApiError> {
    let query = ListQuery {
        queue: params.queue,
        reservation_id: params.reservation_id,
        start_time_ms: params.start_time,
        end_time_ms: params.end_time,
        include_resource_allocations: params.include_resource_allocations,
    };
    let listed = state
        .rm
        .with(move |rm: &mut ResourceManager| rm.reservations().list(&query))
        .await??;
    Ok(Json(listed))
}
