//! The HTTP API, base `/ws/v1`, in YARN's REST style: cluster, nodes
//! (register and heartbeat), apps, reservations, policies, quota; YARN's
//! `/cluster` page and read-only resources for its clients; `/metrics`;
//! and its own OpenAPI 3 document at `/ws/v1/openapi.json`, generated from
//! the handlers and types below so it cannot drift from them.
//!
//! Every request is authenticated before any handler runs (`auth.rs`), and
//! bounded: bodies by route (`limits.rs`), and a panic in a handler is one
//! 500, not a dead connection. Handlers decode, call the resource manager,
//! and encode; the use cases and their checks live in `rm/`.

mod accounting;
mod admin;
mod app_timeouts;
mod auth;
mod cluster;
mod containers;
mod delegation_token;
mod error;
mod events;
mod extract;
mod gate;
mod node_labels;
mod openapi;
mod policies;
mod quota;
mod reservation;
mod scheduler;
mod scheduler_conf;
pub mod server;
mod ui;
mod usage;
mod yarn_apps;
mod yarn_reads;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouter};
use utoipa_axum::routes;

pub use error::ApiError;
pub use events::Live;

use crate::limits::{MAX_BODY_BYTES, MAX_POLICY_BODY_BYTES};
use crate::policy::PolicyRuntime;
use crate::queues::QueueProperties;
use crate::rm::RmHandle;
use crate::security::{Authenticator, Security};

/// Reads the queue properties anew from the configuration, for
/// refreshQueues (and a format of the changes made through the API).
pub type QueueReload = Arc<dyn Fn() -> Result<QueueProperties, String> + Send + Sync>;

/// What every handler can reach.
#[derive(Clone)]
pub struct ApiState {
    /// The way to the event loop (or a standby's answer).
    pub rm: RmHandle,
    /// The policy runtime: slots, loads, shadows, history.
    pub policies: Arc<PolicyRuntime>,
    /// Who a request comes from (simple or token mode).
    pub authenticator: Arc<Authenticator>,
    /// What callers may do, for checks made off the event loop.
    pub security: Arc<Security>,
    /// Token mode's RM delegation tokens (none in simple mode).
    pub delegation_tokens: Option<Arc<crate::yarn_rpc::delegation::DelegationTokens>>,
    /// The queue tree read again from the configuration (refreshQueues).
    pub reload_queues: QueueReload,
    /// How often nodes should heartbeat, told to them at registration.
    pub heartbeat_interval_ms: u64,
    /// One policy load at a time: each compiles a component for seconds.
    pub policy_loads: Arc<tokio::sync::Mutex<()>>,
    /// The web UI's live topics (GET /ws/v1/events).
    pub live: Arc<events::Live>,
    /// Turns true when the server stops: requests that wait (an agent's
    /// wait for orders) end then rather than hold the stop up.
    pub stopping: tokio::sync::watch::Receiver<bool>,
    /// The longest a request may wait (a wait for orders or for an app's
    /// end): within `weft.http.idle-timeout-ms`, which would otherwise cut
    /// the connection of a request waiting in silence.
    pub longest_wait: std::time::Duration,
    /// Places for requests waiting for an app's end
    /// (`weft.http.max-waiting-requests`): with none free, a wait answers
    /// at once, so waiters cannot pile up beyond the connection limits.
    pub waiting_places: Arc<tokio::sync::Semaphore>,
}

impl std::fmt::Debug for ApiState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiState").finish_non_exhaustive()
    }
}

/// The routes and their OpenAPI description, one list for both. Each
/// route's body is bounded: a submission far below a policy upload.
fn api_routes() -> OpenApiRouter<ApiState> {
    let small = |routes| with_body_limit(routes, MAX_BODY_BYTES);
    OpenApiRouter::with_openapi(openapi::base())
        .routes(small(routes!(cluster::info)))
        .routes(small(routes!(cluster::is_active)))
        .routes(small(routes!(cluster::cluster_info)))
        .routes(small(routes!(cluster::cluster_metrics)))
        .routes(small(routes!(scheduler::scheduler)))
        .routes(small(routes!(usage::usage)))
        .routes(small(routes!(cluster::nodes)))
        .routes(small(routes!(cluster::node)))
        .routes(small(routes!(cluster::register_node)))
        .routes(small(routes!(cluster::heartbeat)))
        .routes(small(routes!(cluster::orders_waiting)))
        .routes(small(routes!(cluster::release_node)))
        .routes(small(routes!(cluster::decommission_node)))
        .routes(small(routes!(cluster::recommission_node)))
        .routes(small(routes!(node_labels::get_node_labels)))
        .routes(small(routes!(node_labels::add_node_labels)))
        .routes(small(routes!(node_labels::remove_node_labels)))
        .routes(small(routes!(node_labels::replace_labels)))
        .routes(small(routes!(node_labels::replace_node_to_labels)))
        .routes(small(routes!(node_labels::get_labels)))
        .routes(small(routes!(node_labels::get_node_to_labels)))
        .routes(small(routes!(cluster::apps, cluster::submit_app)))
        .routes(small(routes!(yarn_apps::new_application)))
        .routes(small(routes!(
            delegation_token::create,
            delegation_token::cancel
        )))
        .routes(small(routes!(delegation_token::renew)))
        .routes(small(routes!(cluster::app)))
        .routes(small(routes!(cluster::app_state, cluster::kill_app)))
        .routes(small(routes!(yarn_reads::cluster_page)))
        .routes(small(routes!(yarn_reads::app_statistics)))
        .routes(small(routes!(yarn_reads::app_attempts)))
        .routes(small(routes!(yarn_reads::app_attempt)))
        .routes(small(routes!(yarn_reads::attempt_containers)))
        .routes(small(routes!(yarn_reads::attempt_container)))
        .routes(small(routes!(yarn_reads::app_queue, cluster::move_app)))
        .routes(small(routes!(
            yarn_reads::app_priority,
            cluster::update_app_priority
        )))
        .routes(small(routes!(app_timeouts::app_timeouts)))
        .routes(small(routes!(app_timeouts::app_timeout)))
        .routes(small(routes!(app_timeouts::update_timeout)))
        .routes(small(routes!(
            scheduler_conf::scheduler_conf,
            scheduler_conf::change
        )))
        .routes(small(routes!(scheduler_conf::validate)))
        .routes(small(routes!(scheduler_conf::version)))
        .routes(small(routes!(scheduler_conf::format)))
        .routes(small(routes!(yarn_reads::scheduler_activities)))
        .routes(small(routes!(yarn_reads::app_activities)))
        .routes(small(routes!(containers::containers)))
        .routes(small(routes!(containers::log)))
        .routes(small(routes!(reservation::new_reservation)))
        .routes(small(routes!(reservation::submit)))
        .routes(small(routes!(reservation::update)))
        .routes(small(routes!(reservation::delete)))
        .routes(small(routes!(reservation::list)))
        .routes(small(routes!(policies::list)))
        .routes(with_body_limit(
            routes!(policies::show, policies::load),
            MAX_POLICY_BODY_BYTES,
        ))
        .routes(with_body_limit(
            routes!(
                policies::show_shadow,
                policies::load_shadow,
                policies::stop_shadow
            ),
            MAX_POLICY_BODY_BYTES,
        ))
        .routes(small(routes!(policies::promote_shadow)))
        .routes(small(routes!(policies::rollback)))
        .routes(small(routes!(admin::refresh_queues)))
        .routes(small(routes!(admin::refresh_nodes)))
        .routes(small(routes!(quota::projects)))
        .routes(small(routes!(quota::prices)))
        .routes(small(routes!(quota::quote)))
        .routes(small(routes!(quota::budgets)))
        .routes(small(routes!(quota::project)))
        .routes(small(routes!(quota::grant)))
        .routes(small(routes!(accounting::records)))
        .routes(small(routes!(ui::whoami)))
        .routes(small(routes!(events::events)))
}

/// The OpenAPI 3 document of the whole /ws/v1 API, as served at
/// `/ws/v1/openapi.json`.
pub fn openapi_document() -> utoipa::openapi::OpenApi {
    api_routes().into_openapi()
}

/// Bounds the body of one route: a request whose Content-Length says more
/// is refused before a byte of it is read (`extract::RawBody`), and a body
/// without one is cut off at the limit (both 413).
fn with_body_limit(
    (schemas, paths, router): UtoipaMethodRouter<ApiState>,
    bytes: usize,
) -> UtoipaMethodRouter<ApiState> {
    let router = router
        .layer::<_, std::convert::Infallible>(DefaultBodyLimit::max(bytes))
        .layer::<_, std::convert::Infallible>(axum::Extension(extract::RouteBodyLimit(bytes)));
    (schemas, paths, router)
}

/// The whole HTTP service: the `/ws/v1` routes, `/metrics`, the web UI and
/// the OpenAPI document, behind authentication, a catch for panics (one
/// 500) and the per-route body limits.
pub fn router(state: ApiState) -> Router {
    let (api, document) = api_routes().split_for_parts();
    let document = Arc::new(document);
    api.route("/metrics", axum::routing::get(quota::metrics_text))
        .route("/", axum::routing::get(ui::index))
        .route("/ui/{*path}", axum::routing::get(ui::asset))
        .route(
            openapi::PATH,
            axum::routing::get(move || openapi::serve(document.clone())),
        )
        .fallback(|| async { ApiError::not_found("no such resource; see /ws/v1/openapi.json") })
        // Innermost first: a panic in a handler is one 500; around it, who
        // is asking (and whether the body was read). How much they may
        // send is per route: `with_body_limit`.
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(
            error::panic_response,
        ))
        .layer(gate::GateLayer::new(state.clone()))
        .with_state(state)
}
