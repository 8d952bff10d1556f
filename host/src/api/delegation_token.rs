//! YARN's RM delegation token calls in token mode: `POST
//! /ws/v1/cluster/delegation-token` issues one for the caller, which a
//! YARN client carries to the client port (Hadoop RPC) in place of a
//! bearer token; `POST …/delegation-token/expiration` renews one (its
//! renewer) and `DELETE …/delegation-token` cancels one (its owner or
//! renewer), each naming it in the `Hadoop-YARN-RM-Delegation-Token`
//! header, as YARN's do.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::extract::JsonBody;
use super::openapi::RemoteException;
use super::{ApiError, ApiState};
use crate::security::Caller;
use crate::yarn_rpc::credentials::Token;
use crate::yarn_rpc::delegation::{DelegationTokens, TOKEN_HEADER, TokenError};

/// The longest token URL string taken from the header: an RM delegation
/// token's is about 200 characters.
const MAX_TOKEN_CHARS: usize = 4096;

/// YARN's DelegationToken request: who may renew it.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct DelegationTokenRequest {
    /// Who may renew it (none: no one).
    #[serde(default)]
    #[schema(max_length = 256)]
    renewer: String,
}

/// YARN's DelegationToken answer.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct DelegationToken {
    /// Hadoop's URL string of the token (`Token.decodeFromUrlString`).
    token: String,
    renewer: String,
    owner: String,
    /// `RM_DELEGATION_TOKEN`.
    kind: String,
    /// When it lapses unless renewed, ms since the epoch.
    #[serde(rename = "expiration-time")]
    expiration_time: i64,
    /// When it lapses however often it is renewed.
    #[serde(rename = "max-validity")]
    max_validity: i64,
}

/// YARN's answer to a renewal.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct Expiration {
    /// When it lapses now unless renewed again, ms since the epoch.
    #[serde(rename = "expiration-time")]
    expiration_time: i64,
}

/// The token service of token mode, or the refusal of simple mode.
fn tokens(state: &ApiState) -> Result<&Arc<DelegationTokens>, ApiError> {
    state.delegation_tokens.as_ref().ok_or_else(|| {
        ApiError::forbidden(
            "RM delegation tokens exist only in token mode (weft.security.authentication=token): in simple mode YARN clients need none",
        )
    })
}

/// The token the request's `Hadoop-YARN-RM-Delegation-Token` header names.
fn named_token(headers: &HeaderMap) -> Result<Token, ApiError> {
    let value = headers.get(TOKEN_HEADER).ok_or_else(|| {
        ApiError::bad_request(format!(
            "the {TOKEN_HEADER} header is missing: it names the token (its URL string, as the token field of POST /ws/v1/cluster/delegation-token gives it)"
        ))
    })?;
    if value.len() > MAX_TOKEN_CHARS {
        return Err(ApiError::bad_request(format!(
            "the {TOKEN_HEADER} header is {} bytes, more than {MAX_TOKEN_CHARS}",
            value.len()
        )));
    }
    let text = value
        .to_str()
        .map_err(|_| ApiError::bad_request(format!("the {TOKEN_HEADER} header is not text")))?;
    if text.trim().is_empty() {
        return Err(ApiError::bad_request(format!(
            "the {TOKEN_HEADER} header is empty: it names the token (its URL string)"
        )));
    }
    Token::from_url_string(text, String::new())
        .map_err(|e| ApiError::bad_request(format!("the {TOKEN_HEADER} header: {e}")))
}

/// A refusal of the token service, as an HTTP answer: as YARN's, a token
/// that is not (or no longer) valid is a bad request, a caller who may not
/// act on it forbidden.
fn refused(error: TokenError) -> ApiError {
    match error {
        TokenError::Invalid(message) => ApiError::bad_request(message),
        TokenError::NotAllowed(message) => ApiError::forbidden(message),
        TokenError::Full(message) => ApiError::unavailable(message),
    }
}

/// An RM delegation token for the caller (token mode only): valid for a
/// day unless its renewer renews it (up to a week), until it is cancelled,
/// the server restarts or the caller's bearer tokens are revoked; `weft
/// token yarn` writes it as a Hadoop credentials file.
#[utoipa::path(post, path = "/ws/v1/cluster/delegation-token", tag = "cluster",
    request_body = DelegationTokenRequest,
    responses((status = 200, body = DelegationToken), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 403, body = RemoteException),
        (status = 503, body = RemoteException)))]
pub(super) async fn create(
    State(state): State<ApiState>,
    caller: Caller,
    JsonBody(request): JsonBody<DelegationTokenRequest>,
) -> Result<Json<DelegationToken>, ApiError> {
    let tokens = tokens(&state)?;
    let renewer = request.renewer;
    if !renewer.is_empty() {
        crate::limits::name("renewer", &renewer).map_err(ApiError::bad_request)?;
    }
    let issued = tokens.issue(&caller.user, &renewer).map_err(refused)?;
    tracing::info!(owner = %caller.user, %renewer, "RM delegation token issued");
    Ok(Json(DelegationToken {
        token: issued.token.to_url_string(),
        renewer: issued.renewer,
        owner: issued.owner,
        kind: issued.token.kind,
        expiration_time: issued.expires_ms,
        max_validity: issued.max_date,
    }))
}

/// Renews the token the `Hadoop-YARN-RM-Delegation-Token` header names,
/// for its renewer (the caller): it stands a day from now, never past its
/// max validity.
#[utoipa::path(post, path = "/ws/v1/cluster/delegation-token/expiration", tag = "cluster",
    params(("Hadoop-YARN-RM-Delegation-Token" = String, Header,
        description = "The token's URL string")),
    responses((status = 200, body = Expiration), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 403, body = RemoteException)))]
pub(super) async fn renew(
    State(state): State<ApiState>,
    caller: Caller,
    headers: HeaderMap,
) -> Result<Json<Expiration>, ApiError> {
    let tokens = tokens(&state)?;
    let token = named_token(&headers)?;
    let expiration_time = tokens.renew(&token, &caller.user).map_err(refused)?;
    tracing::info!(renewer = %caller.user, expiration_time, "RM delegation token renewed");
    Ok(Json(Expiration { expiration_time }))
}

/// Cancels the token the `Hadoop-YARN-RM-Delegation-Token` header names,
/// for its owner or renewer (the caller): it stands no more, on open
/// connections too.
#[utoipa::path(delete, path = "/ws/v1/cluster/delegation-token", tag = "cluster",
    params(("Hadoop-YARN-RM-Delegation-Token" = String, Header,
        description = "The token's URL string")),
    responses((status = 200), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 403, body = RemoteException)))]
pub(super) async fn cancel(
    State(state): State<ApiState>,
    caller: Caller,
    headers: HeaderMap,
) -> Result<(), ApiError> {
    let tokens = tokens(&state)?;
    let token = named_token(&headers)?;
    tokens.cancel(&token, &caller.user).map_err(refused)?;
    tracing::info!(by = %caller.user, "RM delegation token cancelled");
    Ok(())
}
