//! The OpenAPI document's frame: title, version, how callers authenticate,
//! and the error shape every route shares. The paths and schemas come from
//! the handlers' `#[utoipa::path]` attributes and the types they use.

use std::sync::Arc;

use axum::Json;
use utoipa::OpenApi;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};

/// Where the document is served; it needs no authentication.
pub(super) const PATH: &str = "/ws/v1/openapi.json";

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Weft",
        description = "A policy-programmable cluster resource manager in the mould of YARN's \
            ResourceManager. Errors answer {\"RemoteException\": {\"exception\", \"message\"}}. \
            Authentication: in simple mode the X-Weft-User header names the caller; in token \
            mode, Authorization: Bearer TOKEN does (docs/security.md)."
    ),
    // The queue tree is recursive, so its parts are named here once.
    components(schemas(
        RemoteException,
        RemoteExceptionBody,
        super::scheduler::QueueInfo,
        super::scheduler::QueueList
    )),
    modifiers(&Security),
)]
struct Base;

/// The document before the routes add themselves.
pub(super) fn base() -> utoipa::openapi::OpenApi {
    let mut document = Base::openapi();
    document.info.version = env!("CARGO_PKG_VERSION").to_string();
    document
}

struct Security;

impl utoipa::Modify for Security {
    fn modify(&self, document: &mut utoipa::openapi::OpenApi) {
        let components = document.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "token",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("weft.security.authentication = token"))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "simple",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "X-Weft-User",
                "weft.security.authentication = simple: the caller's name, taken on trust",
            ))),
        );
    }
}

/// Every error, in YARN's shape.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[allow(
    dead_code,
    reason = "only describes the error body in the OpenAPI document; ApiError writes it"
)]
pub(super) struct RemoteException {
    #[serde(rename = "RemoteException")]
    pub remote_exception: RemoteExceptionBody,
}

#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[allow(
    dead_code,
    reason = "only describes the error body in the OpenAPI document; ApiError writes it"
)]
pub(super) struct RemoteExceptionBody {
    /// E.g. BadRequestException, ForbiddenException, NotFoundException.
    pub exception: String,
    /// What was wrong, naming the field and the limit where one applies.
    pub message: String,
}

pub(super) async fn serve(
    document: Arc<utoipa::openapi::OpenApi>,
) -> Json<utoipa::openapi::OpenApi> {
    Json((*document).clone())
}
