//! YARN's read-only resources that existing clients call (yarn-api-client's
//! ResourceManager among them), answered from what Weft knows: the web
//! UI's `/cluster` page that clients probe for the active server, an app's
//! one attempt and its containers, its queue and priority,
//! application statistics, and scheduler activities (which Weft does not
//! record).

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::cluster::parse_states;
use super::extract::{ApiPath, ApiQuery};
use super::openapi::RemoteException;
use super::{ApiError, ApiState};
use crate::cluster::{App, AppState, Cluster, ContainerRecord, OTHER_YARN_APP_STATES};
use crate::rm::ResourceManager;
use crate::security::Caller;

/// YARN's liveness page, which clients probe to find the active server
/// (yarn-api-client's constructor needs a 200): a small HTML page on the
/// active server, 503 on a standby (not a redirect: a client following
/// one would then call the standby).
#[utoipa::path(get, path = "/cluster", tag = "cluster",
    responses((status = 200, body = String, content_type = "text/html"),
        (status = 401, body = RemoteException), (status = 503, body = RemoteException)))]
pub(super) async fn cluster_page(State(state): State<ApiState>) -> Result<Response, ApiError> {
    // A standby's answer is its 503 (StandbyException).
    let id = state
        .rm
        .with(|rm: &mut ResourceManager| rm.cluster().cluster_timestamp())
        .await?;
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        format!(
            "<!doctype html><title>Weft</title><p>Weft resource manager, active \
             (cluster {id}). The API is at <a href=\"/ws/v1/cluster\">/ws/v1</a>.</p>\n"
        ),
    )
        .into_response())
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct AppStatisticsResponse {
    #[serde(rename = "appStatInfo")]
    app_stat_info: StatItems,
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct StatItems {
    #[serde(rename = "statItem")]
    stat_item: Vec<StatItem>,
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct StatItem {
    state: String,
    /// The application type, lower case, or `*` for all.
    #[serde(rename = "type")]
    kind: String,
    count: usize,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub(super) struct AppStatisticsQuery {
    /// Comma-separated YARN application states; all when left out.
    states: Option<String>,
    /// One application type (YARN takes at most one).
    application_types: Option<String>,
}

/// YARN's application states, in its order.
fn yarn_app_states() -> Vec<&'static str> {
    let weft = [
        AppState::Accepted,
        AppState::Running,
        AppState::Finished,
        AppState::Failed,
        AppState::Killed,
    ];
    let mut states: Vec<&str> = OTHER_YARN_APP_STATES.to_vec();
    states.extend(weft.iter().map(|s| s.as_str()));
    let order = [
        "NEW",
        "NEW_SAVING",
        "SUBMITTED",
        "ACCEPTED",
        "RUNNING",
        "FINISHED",
        "FAILED",
        "KILLED",
    ];
    states.sort_by_key(|s| order.iter().position(|o| o == s).unwrap_or(order.len()));
    states
}

/// How many of the apps kept are in each state (of one type, or of all).
#[utoipa::path(get, path = "/ws/v1/cluster/appstatistics", tag = "apps",
    params(AppStatisticsQuery),
    responses((status = 200, body = AppStatisticsResponse), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException)))]
pub(super) async fn app_statistics(
    State(state): State<ApiState>,
    ApiQuery(query): ApiQuery<AppStatisticsQuery>,
) -> Result<Json<AppStatisticsResponse>, ApiError> {
    let known = yarn_app_states();
    let states = parse_states(query.states.as_deref(), &known, "application")?
        .unwrap_or_else(|| known.iter().map(|s| s.to_string()).collect());
    let types: Vec<String> = query
        .application_types
        .iter()
        .flat_map(|t| t.split(','))
        .map(|t| t.trim().to_lowercase())
        .filter(|t| !t.is_empty())
        .collect();
    if types.len() > 1 {
        return Err(ApiError::bad_request(
            "applicationTypes: at most one application type, as YARN takes",
        ));
    }
    let kind = types.into_iter().next();
    let counts = state
        .rm
        .with(move |rm: &mut ResourceManager| {
            // One pass over the apps kept, counting by state.
            let mut counts = std::collections::HashMap::<&str, usize>::new();
            for app in rm.cluster().apps().iter() {
                if kind
                    .as_ref()
                    .is_none_or(|k| app.application_type.eq_ignore_ascii_case(k))
                {
                    *counts.entry(app.state.as_str()).or_default() += 1;
                }
            }
            states
                .iter()
                .map(|state| StatItem {
                    state: state.clone(),
                    kind: kind.clone().unwrap_or_else(|| "*".into()),
                    count: counts.get(state.as_str()).copied().unwrap_or(0),
                })
                .collect::<Vec<_>>()
        })
        .await?;
    Ok(Json(AppStatisticsResponse {
        app_stat_info: StatItems { stat_item: counts },
    }))
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct AppAttemptsResponse {
    #[serde(rename = "appAttempts")]
    app_attempts: AppAttemptList,
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct AppAttemptList {
    #[serde(rename = "appAttempt")]
    app_attempt: Vec<AppAttempt>,
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct AppAttemptResponse {
    #[serde(rename = "appAttempt")]
    app_attempt: AppAttempt,
}

/// An app's current attempt as YARN reports it (`Cluster`'s
/// `App::current_attempt`): a YARN master's, else the one attempt a Weft
/// app has, which lasts as long as the app.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct AppAttempt {
    /// The attempt's number.
    id: u32,
    app_attempt_id: String,
    app_attempt_state: String,
    start_time: u64,
    finished_time: u64,
    /// Its master's container, else the app's first ("" before one).
    container_id: String,
    node_id: String,
    node_http_address: String,
    logs_link: String,
    blacklisted_nodes: String,
    nodes_blacklisted_by_system: String,
}

fn attempt_of(app: &App, node_http_address: impl Fn(&str) -> String) -> AppAttempt {
    let attempt = app.current_attempt();
    let am = attempt.am_container;
    AppAttempt {
        id: attempt.number,
        app_attempt_id: attempt.id,
        app_attempt_state: attempt.state.into(),
        start_time: app.submit_time_ms,
        finished_time: app.finish_time_ms.unwrap_or(0),
        container_id: am.map(|c| c.id.clone()).unwrap_or_default(),
        node_id: am.map(|c| c.node.clone()).unwrap_or_default(),
        node_http_address: am.map(|c| node_http_address(&c.node)).unwrap_or_default(),
        logs_link: String::new(),
        blacklisted_nodes: String::new(),
        nodes_blacklisted_by_system: String::new(),
    }
}

/// What `read` makes of app `id` and its cluster, or 404 if the app is not
/// kept.
async fn read_app<T: Send + 'static>(
    state: &ApiState,
    id: String,
    read: impl FnOnce(&Cluster, &App) -> T + Send + 'static,
) -> Result<T, ApiError> {
    let wanted = id.clone();
    state
        .rm
        .with(move |rm: &mut ResourceManager| {
            let c = rm.cluster();
            c.app(&wanted).map(|app| read(c, app))
        })
        .await?
        .ok_or_else(|| ApiError::not_found(format!("application {id} not found")))
}

/// The attempt of app `id`, if the app is kept.
async fn find_attempt(state: &ApiState, id: String) -> Result<AppAttempt, ApiError> {
    read_app(state, id, |c, app| {
        let address = |node: &str| {
            c.node(node)
                .map(|n| n.agent.http_address.clone())
                .unwrap_or_default()
        };
        attempt_of(app, address)
    })
    .await
}

/// An app's attempts: its current one (earlier attempts are not kept).
#[utoipa::path(get, path = "/ws/v1/cluster/apps/{id}/appattempts", tag = "apps",
    params(("id" = String, Path, description = "The application id")),
    responses((status = 200, body = AppAttemptsResponse), (status = 401, body = RemoteException),
        (status = 404, body = RemoteException)))]
pub(super) async fn app_attempts(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<AppAttemptsResponse>, ApiError> {
    let attempt = find_attempt(&state, id).await?;
    Ok(Json(AppAttemptsResponse {
        app_attempts: AppAttemptList {
            app_attempt: vec![attempt],
        },
    }))
}

/// The attempt `attempt` of an app, which must be its current one.
async fn the_attempt(state: &ApiState, id: String, attempt: &str) -> Result<AppAttempt, ApiError> {
    let found = find_attempt(state, id).await?;
    if found.app_attempt_id != attempt {
        return Err(ApiError::not_found(format!(
            "attempt {attempt} not found; the app's current attempt is {}",
            found.app_attempt_id
        )));
    }
    Ok(found)
}

/// One attempt of an app.
#[utoipa::path(get, path = "/ws/v1/cluster/apps/{id}/appattempts/{attempt}", tag = "apps",
    params(("id" = String, Path, description = "The application id"),
        ("attempt" = String, Path, description = "The attempt id")),
    responses((status = 200, body = AppAttemptResponse), (status = 401, body = RemoteException),
        (status = 404, body = RemoteException)))]
pub(super) async fn app_attempt(
    State(state): State<ApiState>,
    ApiPath((id, attempt)): ApiPath<(String, String)>,
) -> Result<Json<AppAttemptResponse>, ApiError> {
    let app_attempt = the_attempt(&state, id, &attempt).await?;
    Ok(Json(AppAttemptResponse { app_attempt }))
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct AttemptContainersResponse {
    containers: AttemptContainerList,
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct AttemptContainerList {
    container: Vec<AttemptContainer>,
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct AttemptContainerResponse {
    container: AttemptContainer,
}

/// A container as YARN's attempt resources report it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct AttemptContainer {
    container_id: String,
    assigned_node_id: String,
    node_id: String,
    started_time: u64,
    finished_time: u64,
    elapsed_time: u64,
    /// RUNNING or COMPLETE.
    container_state: String,
    container_exit_status: i32,
    diagnostics_info: String,
}

impl AttemptContainer {
    fn new(record: &ContainerRecord, now: u64) -> AttemptContainer {
        AttemptContainer {
            container_id: record.id.clone(),
            assigned_node_id: record.node.clone(),
            node_id: record.node.clone(),
            started_time: record.start_time_ms,
            finished_time: record.finish_time_ms.unwrap_or(0),
            elapsed_time: record
                .finish_time_ms
                .unwrap_or(now)
                .saturating_sub(record.start_time_ms),
            container_state: if record.finish_time_ms.is_some() {
                "COMPLETE"
            } else {
                "RUNNING"
            }
            .into(),
            // YARN's INVALID (-1000) while it runs.
            container_exit_status: record.exit_status.unwrap_or(-1000),
            diagnostics_info: record.diagnostics.clone(),
        }
    }
}

/// The containers of an app's attempt: all its containers (its user and
/// administrators only).
#[utoipa::path(get, path = "/ws/v1/cluster/apps/{id}/appattempts/{attempt}/containers",
    tag = "apps",
    params(("id" = String, Path, description = "The application id"),
        ("attempt" = String, Path, description = "The attempt id")),
    responses((status = 200, body = AttemptContainersResponse), (status = 401, body = RemoteException),
        (status = 403, body = RemoteException), (status = 404, body = RemoteException)))]
pub(super) async fn attempt_containers(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath((id, attempt)): ApiPath<(String, String)>,
) -> Result<Json<AttemptContainersResponse>, ApiError> {
    let container = attempt_container_list(&state, caller, id, &attempt).await?;
    Ok(Json(AttemptContainersResponse {
        containers: AttemptContainerList { container },
    }))
}

async fn attempt_container_list(
    state: &ApiState,
    caller: Caller,
    id: String,
    attempt: &str,
) -> Result<Vec<AttemptContainer>, ApiError> {
    the_attempt(state, id.clone(), attempt).await?;
    let containers = state
        .rm
        .with(move |rm: &mut ResourceManager| {
            let now = rm.now();
            rm.app_containers(&caller, &id).map(|records| {
                records
                    .iter()
                    .map(|r| AttemptContainer::new(r, now))
                    .collect()
            })
        })
        .await??;
    Ok(containers)
}

/// One container of an app's attempt.
#[utoipa::path(get,
    path = "/ws/v1/cluster/apps/{id}/appattempts/{attempt}/containers/{container}",
    tag = "apps",
    params(("id" = String, Path, description = "The application id"),
        ("attempt" = String, Path, description = "The attempt id"),
        ("container" = String, Path, description = "The container id")),
    responses((status = 200, body = AttemptContainerResponse), (status = 401, body = RemoteException),
        (status = 403, body = RemoteException), (status = 404, body = RemoteException)))]
pub(super) async fn attempt_container(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath((id, attempt, container)): ApiPath<(String, String, String)>,
) -> Result<Json<AttemptContainerResponse>, ApiError> {
    let found = attempt_container_list(&state, caller, id, &attempt)
        .await?
        .into_iter()
        .find(|c| c.container_id == container)
        .ok_or_else(|| ApiError::not_found(format!("container {container} not found")))?;
    Ok(Json(AttemptContainerResponse { container: found }))
}

/// An app's queue, as YARN's REST API reads and writes it.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct AppQueue {
    pub(super) queue: String,
}

/// An app's priority, as YARN's REST API reads and writes it.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct AppPriority {
    pub(super) priority: i32,
}

/// The queue and priority of app `id`.
async fn queue_and_priority(state: &ApiState, id: String) -> Result<(String, i32), ApiError> {
    read_app(state, id, |_, app| (app.queue.clone(), app.priority)).await
}

/// An app's queue.
#[utoipa::path(get, path = "/ws/v1/cluster/apps/{id}/queue", tag = "apps",
    params(("id" = String, Path, description = "The application id")),
    responses((status = 200, body = AppQueue), (status = 401, body = RemoteException),
        (status = 404, body = RemoteException)))]
pub(super) async fn app_queue(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<AppQueue>, ApiError> {
    let (queue, _) = queue_and_priority(&state, id).await?;
    Ok(Json(AppQueue { queue }))
}

/// An app's priority.
#[utoipa::path(get, path = "/ws/v1/cluster/apps/{id}/priority", tag = "apps",
    params(("id" = String, Path, description = "The application id")),
    responses((status = 200, body = AppPriority), (status = 401, body = RemoteException),
        (status = 404, body = RemoteException)))]
pub(super) async fn app_priority(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<AppPriority>, ApiError> {
    let (_, priority) = queue_and_priority(&state, id).await?;
    Ok(Json(AppPriority { priority }))
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct ActivitiesResponse {
    activities: Activities,
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct AppActivitiesResponse {
    #[serde(rename = "appActivities")]
    app_activities: Activities,
}

/// YARN's scheduler activities: Weft does not record them; an app's
/// pending reason is on its report (GET …/apps/{id}, `diagnostics`).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct Activities {
    #[serde(skip_serializing_if = "Option::is_none")]
    application_id: Option<String>,
    diagnostic: String,
}

const NO_ACTIVITIES: &str = "Weft does not record scheduler activities; a pending app's report (GET /ws/v1/cluster/apps/{id}) says why it waits";

/// Scheduler activities: none recorded.
#[utoipa::path(get, path = "/ws/v1/cluster/scheduler/activities", tag = "cluster",
    responses((status = 200, body = ActivitiesResponse), (status = 401, body = RemoteException)))]
pub(super) async fn scheduler_activities(
    State(state): State<ApiState>,
) -> Result<Json<ActivitiesResponse>, ApiError> {
    state.rm.with(|_: &mut ResourceManager| ()).await?;
    Ok(Json(ActivitiesResponse {
        activities: Activities {
            application_id: None,
            diagnostic: NO_ACTIVITIES.into(),
        },
    }))
}

/// An app's scheduler activities: none recorded.
#[utoipa::path(get, path = "/ws/v1/cluster/scheduler/app-activities/{id}", tag = "cluster",
    params(("id" = String, Path, description = "The application id")),
    responses((status = 200, body = AppActivitiesResponse), (status = 401, body = RemoteException),
        (status = 404, body = RemoteException)))]
pub(super) async fn app_activities(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<AppActivitiesResponse>, ApiError> {
    queue_and_priority(&state, id.clone()).await?;
    Ok(Json(AppActivitiesResponse {
        app_activities: Activities {
            application_id: Some(id),
            diagnostic: NO_ACTIVITIES.into(),
        },
    }))
}
