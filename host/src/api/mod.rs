//! The HTTP API, base `/ws/v1`, in YARN's REST style: cluster, nodes
//! (register and heartbeat), apps, reservations, policies, quota; `/metrics`;
//! and its own OpenAPI 3 document at `/ws/v1/openapi.json`, generated from
//! the handlers and types below so it cannot drift from them.
//!
//! Every request is authenticated before any handler runs (`auth.rs`), and
//! bounded: bodies by route (`limits.rs`), and a panic in a handler is one
//! 500, not a dead connection. Handlers decode, call the resource manager,
//! and encode; the use cases and their checks live in `rm/`.

mod admin;
mod auth;
mod cluster;
mod error;
mod extract;
mod openapi;
mod policies;
mod quota;
mod reservation;
mod scheduler;
pub mod server;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouter};
use utoipa_axum::routes;

pub use error::ApiError;

use crate::limits::{MAX_BODY_BYTES, MAX_POLICY_BODY_BYTES};
use crate::policy::PolicyRuntime;
use crate::queues::QueueTree;
use crate::rm::RmHandle;
use crate::security::{Authenticator, Security};

/// Builds the queue tree anew from the configuration, for refreshQueues.
pub type QueueReload = Arc<dyn Fn() -> Result<QueueTree, String> + Send + Sync>;

/// What every handler can reach.
#[derive(Clone)]
pub struct ApiState {
    pub rm: RmHandle,
    pub policies: Arc<PolicyRuntime>,
    pub authenticator: Arc<Authenticator>,
    pub security: Arc<Security>,
    pub reload_queues: QueueReload,
    /// How often nodes should heartbeat, told to them at registration.
    pub heartbeat_interval_ms: u64,
    /// One policy load at a time: each compiles a component for seconds.
    pub policy_loads: Arc<tokio::sync::Mutex<()>>,
}

impl std::fmt::Debug for ApiState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiState").finish_non_exhaustive()
    }
}

/// The routes and their OpenAPI description, one list for both.
fn api_routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::with_openapi(openapi::base())
        .routes(routes!(cluster::info))
        .routes(routes!(cluster::cluster_info))
        .routes(routes!(cluster::cluster_metrics))
        .routes(routes!(scheduler::scheduler))
        .routes(routes!(cluster::nodes))
        .routes(routes!(cluster::register_node))
        .routes(routes!(cluster::heartbeat))
        .routes(routes!(cluster::apps, cluster::submit_app))
        .routes(routes!(cluster::app))
        .routes(routes!(reservation::new_reservation))
        .routes(routes!(reservation::submit))
        .routes(routes!(reservation::update))
        .routes(routes!(reservation::delete))
        .routes(routes!(reservation::list))
        .routes(routes!(policies::list))
        .routes(with_body_limit(
            routes!(policies::show, policies::load),
            MAX_POLICY_BODY_BYTES,
        ))
        .routes(routes!(policies::rollback))
        .routes(routes!(admin::refresh_queues))
        .routes(routes!(quota::projects))
        .routes(routes!(quota::prices))
}

/// The OpenAPI 3 document of the whole /ws/v1 API, as served at
/// `/ws/v1/openapi.json`.
pub fn openapi_document() -> utoipa::openapi::OpenApi {
    api_routes().into_openapi()
}

/// Raises (or lowers) the body limit of one route.
fn with_body_limit(
    (schemas, paths, router): UtoipaMethodRouter<ApiState>,
    bytes: usize,
) -> UtoipaMethodRouter<ApiState> {
    (schemas, paths, router.layer(DefaultBodyLimit::max(bytes)))
}

pub fn router(state: ApiState) -> Router {
    let (api, document) = api_routes().split_for_parts();
    let document = Arc::new(document);
    api.route("/metrics", axum::routing::get(quota::metrics_text))
        .route(
            openapi::PATH,
            axum::routing::get(move || openapi::serve(document.clone())),
        )
        .fallback(|| async { ApiError::not_found("no such resource; see /ws/v1/openapi.json") })
        // Outermost first: a panic anywhere is one 500; then who is asking;
        // then how much they may send (a submission is far smaller than
        // a policy upload, which raises its own limit).
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::authenticate,
        ))
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(
            error::panic_response,
        ))
        .with_state(state)
}
