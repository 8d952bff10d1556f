//! The one error type of the HTTP API, turned into a response in one place,
//! in the shape YARN's REST API uses: `{"RemoteException": {...}}`.

use axum::Json;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::openapi::{RemoteException, RemoteExceptionBody};
use crate::refusal::Refusal;
use crate::reservation::service::ReservationError;
use crate::rm::CommandError;
use crate::rm::requests::{RequestError, ReservationRequestError};

/// A refused or failed request: its status and message, answered as YARN's
/// `{"RemoteException": {"exception", "message"}}`.
#[derive(Debug)]
pub struct ApiError {
    /// The HTTP status answered.
    pub status: StatusCode,
    /// What went wrong, for people (the RemoteException's `message`).
    pub message: String,
    /// The RemoteException's name, when the status alone does not say it
    /// (a standby's 503 is a StandbyException, as Hadoop's).
    pub exception: Option<&'static str>,
}

impl ApiError {
    /// An error of `status` saying `message`, its exception named after the
    /// status.
    pub fn new(status: StatusCode, message: impl ToString) -> ApiError {
        ApiError {
            status,
            message: message.to_string(),
            exception: None,
        }
    }

    /// 400 BadRequestException: the request is malformed or out of bounds.
    pub fn bad_request(message: impl ToString) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }

    /// 401 AuthenticationException: no caller could be established (the
    /// answer asks for a bearer token).
    pub fn unauthorized(message: impl ToString) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, message)
    }

    /// 403 ForbiddenException: the caller may not do this.
    pub fn forbidden(message: impl ToString) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, message)
    }

    /// 404 NotFoundException: what the request names does not exist.
    pub fn not_found(message: impl ToString) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, message)
    }

    /// 409 ConflictException: the request clashes with what is there now.
    pub fn conflict(message: impl ToString) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, message)
    }

    /// 503 WebApplicationException: the server cannot serve it now (shutting
    /// down, a commit the store refused, a part busy or out of reach); it
    /// may later.
    pub fn unavailable(message: impl ToString) -> ApiError {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, message)
    }

    /// 500 WebApplicationException: a fault of the server, logged.
    pub fn internal(message: impl ToString) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }

    /// A domain error, answered with the status of its kind of refusal.
    pub fn refused(refusal: Refusal, message: impl ToString) -> ApiError {
        ApiError::new(status_of(refusal), message)
    }
}

/// The one place a kind of refusal becomes an HTTP status, so the domain
/// (rm/, reservation/, cluster/) never speaks HTTP.
pub(super) fn status_of(refusal: Refusal) -> StatusCode {
    match refusal {
        Refusal::Invalid => StatusCode::BAD_REQUEST,
        Refusal::NotAllowed => StatusCode::FORBIDDEN,
        Refusal::Unknown => StatusCode::NOT_FOUND,
        Refusal::Conflict => StatusCode::CONFLICT,
        Refusal::Off => StatusCode::SERVICE_UNAVAILABLE,
        Refusal::Fault => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl From<CommandError> for ApiError {
    fn from(error: CommandError) -> ApiError {
        match error {
            CommandError::ShuttingDown | CommandError::NotDurable(_) => {
                ApiError::unavailable(error)
            }
            CommandError::Standby(_) => ApiError {
                status: StatusCode::SERVICE_UNAVAILABLE,
                message: error.to_string(),
                exception: Some("StandbyException"),
            },
            CommandError::Panicked(_) => ApiError::internal(error),
        }
    }
}

impl From<RequestError> for ApiError {
    fn from(error: RequestError) -> ApiError {
        ApiError::refused(error.kind(), error)
    }
}

impl From<ReservationError> for ApiError {
    fn from(error: ReservationError) -> ApiError {
        ApiError::refused(error.kind(), error)
    }
}

impl From<ReservationRequestError> for ApiError {
    fn from(error: ReservationRequestError) -> ApiError {
        ApiError::refused(error.kind(), error)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let exception = self.exception.unwrap_or(match self.status {
            StatusCode::BAD_REQUEST => "BadRequestException",
            StatusCode::UNAUTHORIZED => "AuthenticationException",
            StatusCode::NOT_FOUND => "NotFoundException",
            StatusCode::FORBIDDEN => "ForbiddenException",
            StatusCode::CONFLICT => "ConflictException",
            StatusCode::PAYLOAD_TOO_LARGE => "PayloadTooLargeException",
            StatusCode::REQUEST_TIMEOUT => "RequestTimeoutException",
            _ => "WebApplicationException",
        });
        // A standby's answer is its job, not a failure.
        if self.status.is_server_error() && exception != "StandbyException" {
            tracing::error!(status = %self.status, message = %self.message, "request failed");
        }
        let body = RemoteException {
            remote_exception: RemoteExceptionBody {
                exception: exception.into(),
                message: self.message,
            },
        };
        let mut response = (self.status, Json(body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer realm=\"weft\""),
            );
        }
        response
    }
}

/// A handler panicked (a bug): one 500, logged and counted; the server and
/// the event loop go on.
pub(super) fn panic_response(payload: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with no message".into());
    crate::metrics::metrics()
        .event_loop_panics
        .get_or_create(&crate::metrics::WhatLabels {
            what: "http handler".into(),
        })
        .inc();
    ApiError::internal(format!("internal error (logged): {message}")).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reservation::{PlanError, ReservationId, SystemError};

    #[test]
    fn each_kind_of_refusal_has_one_status() {
        let cases = [
            (Refusal::Invalid, 400),
            (Refusal::NotAllowed, 403),
            (Refusal::Unknown, 404),
            (Refusal::Conflict, 409),
            (Refusal::Off, 503),
            (Refusal::Fault, 500),
        ];
        for (refusal, status) in cases {
            assert_eq!(status_of(refusal).as_u16(), status, "{refusal:?}");
        }
    }

    /// The statuses the REST API has always answered these errors with.
    #[test]
    fn domain_errors_keep_their_statuses() {
        let id = ReservationId {
            cluster_timestamp: 1_700_000_000_000,
            sequence: 1,
        };
        let system = |error: SystemError| ApiError::from(ReservationError::System(error));
        let cases = [
            (ApiError::from(RequestError::Invalid("x".into())), 400),
            (ApiError::from(RequestError::NotAllowed("x".into())), 403),
            (ApiError::from(RequestError::Unknown("x".into())), 404),
            (ApiError::from(RequestError::Conflict("x".into())), 409),
            (ApiError::from(ReservationError::Disabled), 503),
            (ApiError::from(ReservationError::Refresh("x".into())), 400),
            (
                ApiError::from(ReservationError::IssuedToAnother {
                    id: id.to_string(),
                    owner: "bob".into(),
                }),
                403,
            ),
            (
                system(SystemError::UnknownQueue {
                    queue: "root.nope".into(),
                }),
                404,
            ),
            (system(SystemError::UnknownReservation { id }), 404),
            (
                system(SystemError::NotReservable {
                    queue: "default".into(),
                }),
                400,
            ),
            (
                system(SystemError::NotYours {
                    id,
                    owner: "bob".into(),
                    user: "alice".into(),
                }),
                403,
            ),
            (
                system(SystemError::TooMany {
                    queue: "root.a".into(),
                    user: "alice".into(),
                    in_queue: 1,
                    of_user: 1,
                }),
                409,
            ),
            (
                system(SystemError::Plan(PlanError::BadConfig {
                    queue: "root.a".into(),
                    reason: "x".into(),
                })),
                500,
            ),
            (
                ApiError::from(ReservationRequestError::Request(RequestError::NotAllowed(
                    "x".into(),
                ))),
                403,
            ),
            (
                ApiError::from(ReservationRequestError::Reservation(
                    ReservationError::Disabled,
                )),
                503,
            ),
        ];
        for (error, status) in cases {
            assert_eq!(error.status.as_u16(), status, "{}", error.message);
        }
    }
}
