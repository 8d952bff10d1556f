//! Authentication of every request, before any handler runs: the caller
//! (see `security::Authenticator`) goes into the request's extensions, or the
//! request ends here — 401 without valid credentials, 400 for malformed ones.

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::{ApiError, ApiState, openapi};
use crate::metrics::{WhatLabels, metrics};
use crate::security::{AuthError, USER_HEADER};

pub async fn authenticate(
    State(state): State<ApiState>,
    mut request: Request,
    next: Next,
) -> Response {
    // The API's description and the web UI's files are public, as a
    // login page is (the page then asks the API with credentials).
    let path = request.uri().path();
    if path == openapi::PATH || super::ui::is_ui_path(path) {
        return next.run(request).await;
    }
    // In a block of its own: the headers are borrowed (and a borrowed
    // request is not Send) only until the caller is known.
    let user = {
        let headers = request.headers();
        let header = |name: &str| {
            headers
                .get(name)
                .map(|value| {
                    value
                        .to_str()
                        .map_err(|_| AuthError::Malformed(format!("the {name} header is not text")))
                })
                .transpose()
        };
        header(USER_HEADER).and_then(|user| {
            let authorization = header(axum::http::header::AUTHORIZATION.as_str())?;
            state.authenticator.authenticate(user, authorization)
        })
    };
    match user {
        Ok(user) => {
            let caller = state.security.caller(&user);
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Err(error) => {
            let (reason, refusal) = match &error {
                AuthError::Malformed(_) => ("malformed credentials", ApiError::bad_request(&error)),
                _ => ("unauthenticated", ApiError::unauthorized(&error)),
            };
            metrics()
                .requests_refused
                .get_or_create(&WhatLabels {
                    what: reason.into(),
                })
                .inc();
            refusal.into_response()
        }
    }
}
