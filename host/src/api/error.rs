//! The one error type of the HTTP API, turned into a response in one place,
//! in the shape YARN's REST API uses: `{"RemoteException": {...}}`.

use axum::Json;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::openapi::{RemoteException, RemoteExceptionBody};
use crate::rm::CommandError;
use crate::rm::requests::RequestError;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl ToString) -> ApiError {
        ApiError {
            status,
            message: message.to_string(),
        }
    }

    pub fn bad_request(message: impl ToString) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }

    pub fn unauthorized(message: impl ToString) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, message)
    }

    pub fn forbidden(message: impl ToString) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, message)
    }

    pub fn not_found(message: impl ToString) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, message)
    }

    pub fn conflict(message: impl ToString) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, message)
    }

    pub fn unavailable(message: impl ToString) -> ApiError {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, message)
    }

    pub fn internal(message: impl ToString) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }
}

impl From<CommandError> for ApiError {
    fn from(error: CommandError) -> ApiError {
        match error {
            CommandError::ShuttingDown => ApiError::unavailable(error),
            CommandError::Panicked(_) => ApiError::internal(error),
        }
    }
}

impl From<RequestError> for ApiError {
    fn from(error: RequestError) -> ApiError {
        let status =
            StatusCode::from_u16(error.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        ApiError::new(status, error)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let exception = match self.status {
            StatusCode::BAD_REQUEST => "BadRequestException",
            StatusCode::UNAUTHORIZED => "AuthenticationException",
            StatusCode::NOT_FOUND => "NotFoundException",
            StatusCode::FORBIDDEN => "ForbiddenException",
            StatusCode::CONFLICT => "ConflictException",
            StatusCode::PAYLOAD_TOO_LARGE => "PayloadTooLargeException",
            StatusCode::REQUEST_TIMEOUT => "RequestTimeoutException",
            _ => "WebApplicationException",
        };
        if self.status.is_server_error() {
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
pub fn panic_response(payload: Box<dyn std::any::Any + Send + 'static>) -> Response {
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
