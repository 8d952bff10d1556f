//! `GET /ws/v1/cluster/usage`: each queue's and user's fading use
//! (`weft.scheduler.usage.half-life-ms`), the input of fair-share
//! policies, as MB-, vcore- and GPU-seconds at the time of the answer.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::extract::ApiQuery;
use super::openapi::RemoteException;
use super::{ApiError, ApiState};
use crate::resources::ResourceSeconds;
use crate::rm::ResourceManager;

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct UsageResponse {
    usage: UsageInfo,
}

/// Fading use: every queue of the tree (a parent's is its children's) and
/// the users with the most (by vcore-seconds, then name).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct UsageInfo {
    /// Use fades by half in this time; 0: it does not fade.
    half_life_ms: u64,
    /// When these figures hold, in ms since the epoch.
    at_ms: u64,
    queues: Vec<QueueUsage>,
    users: Vec<UserUsage>,
    /// Users with use in all (more than listed when `limit` cut the list).
    users_total: usize,
}

/// Faded resource-seconds.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct Faded {
    memory_seconds: f64,
    vcore_seconds: f64,
    gpu_seconds: f64,
}

impl From<ResourceSeconds> for Faded {
    fn from(value: ResourceSeconds) -> Faded {
        Faded {
            memory_seconds: value.memory_mb_seconds,
            vcore_seconds: value.vcore_seconds,
            gpu_seconds: value.gpu_seconds,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct QueueUsage {
    /// The queue's path.
    queue: String,
    #[serde(flatten)]
    usage: Faded,
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct UserUsage {
    user: String,
    #[serde(flatten)]
    usage: Faded,
}

#[derive(Debug, Default, Deserialize, IntoParams)]
pub(super) struct UsageQuery {
    /// The most users listed, 1 to 10,000 (default 1,000).
    limit: Option<usize>,
}

/// The most users one answer lists.
const MAX_USERS: usize = 10_000;

/// Each queue's and user's fading use, now.
#[utoipa::path(get, path = "/ws/v1/cluster/usage", tag = "scheduler",
    params(UsageQuery),
    responses((status = 200, body = UsageResponse), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException)))]
pub(super) async fn usage(
    State(state): State<ApiState>,
    ApiQuery(query): ApiQuery<UsageQuery>,
) -> Result<Json<UsageResponse>, ApiError> {
    let limit = query.limit.unwrap_or(1_000);
    crate::limits::within("limit", limit, 1, MAX_USERS)
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let usage = state
        .rm
        .with(move |rm: &mut ResourceManager| {
            let now = rm.now();
            let cluster = rm.cluster();
            let decayed = cluster.decayed_usage();
            let tree = cluster.queues().queues();
            // Leaves first from the table, then each parent as the sum of
            // its children (children come after their parent in the tree).
            let mut by_queue: Vec<ResourceSeconds> = tree
                .iter()
                .map(|q| decayed.queue_at(&q.path, now))
                .collect();
            for index in (0..tree.len()).rev() {
                if !tree[index].is_leaf() {
                    by_queue[index] = tree[index]
                        .children
                        .iter()
                        .fold(ResourceSeconds::default(), |sum, &child| {
                            sum + by_queue[child]
                        });
                }
            }
            let mut users: Vec<UserUsage> = decayed
                .users
                .keys()
                .map(|user| UserUsage {
                    user: user.clone(),
                    usage: decayed.user_at(user, now).into(),
                })
                .collect();
            let users_total = users.len();
            users.sort_by(|a, b| {
                b.usage
                    .vcore_seconds
                    .total_cmp(&a.usage.vcore_seconds)
                    .then_with(|| a.user.cmp(&b.user))
            });
            users.truncate(limit);
            UsageInfo {
                half_life_ms: decayed.half_life_ms,
                at_ms: now,
                queues: tree
                    .iter()
                    .zip(by_queue)
                    .map(|(q, usage)| QueueUsage {
                        queue: q.path.clone(),
                        usage: usage.into(),
                    })
                    .collect(),
                users,
                users_total,
            }
        })
        .await?;
    Ok(Json(UsageResponse { usage }))
}
