//! YARN's `POST /ws/v1/cluster/delegation-token` in token mode: an RM
//! delegation token for the caller, which a YARN client carries to the
//! client port (Hadoop RPC) in place of a bearer token.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::extract::JsonBody;
use super::openapi::RemoteException;
use super::{ApiError, ApiState};
use crate::config::Authentication;
use crate::rm::ResourceManager;
use crate::security::Caller;
use crate::yarn_rpc::delegation;

/// YARN's DelegationToken request: who may renew it.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct DelegationTokenRequest {
    /// Recorded in the token; Weft does not renew tokens.
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
    /// When it lapses, ms since the epoch.
    #[serde(rename = "expiration-time")]
    expiration_time: i64,
    /// The same: Weft does not renew tokens.
    #[serde(rename = "max-validity")]
    max_validity: i64,
}

/// An RM delegation token for the caller (token mode only): valid for a
/// day, until the server restarts or the caller's bearer tokens are
/// revoked; `weft token yarn` writes it as a Hadoop credentials file.
#[utoipa::path(post, path = "/ws/v1/cluster/delegation-token", tag = "cluster",
    request_body = DelegationTokenRequest,
    responses((status = 200, body = DelegationToken), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 403, body = RemoteException)))]
pub(super) async fn create(
    State(state): State<ApiState>,
    caller: Caller,
    JsonBody(request): JsonBody<DelegationTokenRequest>,
) -> Result<Json<DelegationToken>, ApiError> {
    if state.authenticator.mode() != Authentication::Token {
        return Err(ApiError::forbidden(
            "delegation tokens are issued only in token mode (weft.security.authentication=token): in simple mode YARN clients need none",
        ));
    }
    let renewer = request.renewer;
    if !renewer.is_empty() {
        crate::limits::name("renewer", &renewer).map_err(ApiError::bad_request)?;
    }
    // The process's YARN token keys, which the client port checks against.
    let (keys, now) = state
        .rm
        .with(|rm: &mut ResourceManager| (rm.cluster().token_keys().cloned(), rm.now()))
        .await?;
    let keys =
        keys.ok_or_else(|| ApiError::unavailable("this server has no key for YARN's tokens"))?;
    let issued = delegation::issue(
        &keys,
        &caller.user,
        &renewer,
        i64::try_from(now).unwrap_or(i64::MAX),
    );
    tracing::info!(owner = %caller.user, %renewer, "RM delegation token issued");
    Ok(Json(DelegationToken {
        token: issued.token.to_url_string(),
        renewer: issued.renewer,
        owner: issued.owner,
        kind: issued.token.kind,
        expiration_time: issued.max_date,
        max_validity: issued.max_date,
    }))
}
