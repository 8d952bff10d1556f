//! The one error type of the HTTP API, turned into a response in one place,
//! in the shape YARN's REST API uses: `{"RemoteException": {...}}`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
}

impl ApiError {
    pub fn bad_request(message: impl ToString) -> ApiError {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            message: message.to_string(),
        }
    }

    pub fn forbidden(message: impl ToString) -> ApiError {
        ApiError {
            status: StatusCode::FORBIDDEN,
            message: message.to_string(),
        }
    }

    pub fn not_found(message: impl ToString) -> ApiError {
        ApiError {
            status: StatusCode::NOT_FOUND,
            message: message.to_string(),
        }
    }

    pub fn conflict(message: impl ToString) -> ApiError {
        ApiError {
            status: StatusCode::CONFLICT,
            message: message.to_string(),
        }
    }

    pub fn unavailable(message: impl ToString) -> ApiError {
        ApiError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: message.to_string(),
        }
    }

    pub fn internal(message: impl ToString) -> ApiError {
        ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message: message.to_string(),
        }
    }
}

impl From<crate::rm::ShuttingDown> for ApiError {
    fn from(error: crate::rm::ShuttingDown) -> ApiError {
        ApiError::unavailable(error)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let exception = match self.status {
            StatusCode::BAD_REQUEST => "BadRequestException",
            StatusCode::NOT_FOUND => "NotFoundException",
            StatusCode::FORBIDDEN => "ForbiddenException",
            StatusCode::CONFLICT => "ConflictException",
            _ => "WebApplicationException",
        };
        let body =
            json!({ "RemoteException": { "exception": exception, "message": self.message } });
        (self.status, Json(body)).into_response()
    }
}
