//! The HTTP API, base `/ws/v1`, in YARN's REST style: cluster, nodes
//! (register and heartbeat), apps, reservations, policies, quota; and
//! `/metrics`.

mod admin;
mod cluster;
mod error;
mod policies;
mod quota;
mod reservation;
mod scheduler;

use std::sync::Arc;

use axum::Router;
use axum::routing::{get, post, put};

pub use error::ApiError;

use crate::policy::PolicyRuntime;
use crate::queues::QueueTree;
use crate::rm::RmHandle;
use crate::security::{Security, USER_HEADER};

/// Builds the queue tree anew from the configuration, for refreshQueues.
pub type QueueReload = Arc<dyn Fn() -> Result<QueueTree, String> + Send + Sync>;

/// What every handler can reach.
#[derive(Clone)]
pub struct ApiState {
    pub rm: RmHandle,
    pub policies: Arc<PolicyRuntime>,
    pub security: Arc<Security>,
    pub reload_queues: QueueReload,
    /// How often nodes should heartbeat, told to them at registration.
    pub heartbeat_interval_ms: u64,
}

impl std::fmt::Debug for ApiState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiState").finish_non_exhaustive()
    }
}

impl ApiState {
    /// The caller named by the X-Weft-User header, or the default user.
    pub fn caller(&self, headers: &axum::http::HeaderMap) -> String {
        self.security
            .caller(headers.get(USER_HEADER).and_then(|v| v.to_str().ok()))
    }

    /// Refuses with 403 unless the caller administers the cluster.
    pub fn require_admin(
        &self,
        headers: &axum::http::HeaderMap,
        action: &str,
    ) -> Result<String, ApiError> {
        let caller = self.caller(headers);
        self.security
            .check_admin(&caller, action)
            .map_err(ApiError::forbidden)?;
        Ok(caller)
    }
}

pub fn router(state: ApiState) -> Router {
    Router::new()
        .route("/ws/v1/cluster", get(cluster::info))
        .route("/ws/v1/cluster/info", get(cluster::info))
        .route("/ws/v1/cluster/metrics", get(cluster::cluster_metrics))
        .route("/ws/v1/cluster/scheduler", get(scheduler::scheduler))
        .route("/ws/v1/cluster/nodes", get(cluster::nodes))
        .route(
            "/ws/v1/cluster/nodes/register",
            post(cluster::register_node),
        )
        .route(
            "/ws/v1/cluster/nodes/{id}/heartbeat",
            post(cluster::heartbeat),
        )
        .route(
            "/ws/v1/cluster/apps",
            get(cluster::apps).post(cluster::submit_app),
        )
        .route("/ws/v1/cluster/apps/{id}", get(cluster::app))
        .route(
            "/ws/v1/cluster/reservation/new-reservation",
            post(reservation::new_reservation),
        )
        .route(
            "/ws/v1/cluster/reservation/submit",
            post(reservation::submit),
        )
        .route(
            "/ws/v1/cluster/reservation/update",
            post(reservation::update),
        )
        .route(
            "/ws/v1/cluster/reservation/delete",
            post(reservation::delete),
        )
        .route("/ws/v1/cluster/reservation/list", get(reservation::list))
        .route("/ws/v1/policies", get(policies::list))
        .route(
            "/ws/v1/policies/{kind}",
            put(policies::load).get(policies::show),
        )
        .route("/ws/v1/policies/{kind}/rollback", post(policies::rollback))
        .route("/ws/v1/admin/refresh-queues", post(admin::refresh_queues))
        .route("/ws/v1/quota/projects", get(quota::projects))
        .route("/ws/v1/quota/prices", get(quota::prices))
        .route("/metrics", get(quota::metrics_text))
        // Policies are uploaded as bodies; a component can be several MB.
        .layer(axum::extract::DefaultBodyLimit::max(64 << 20))
        .with_state(state)
}
