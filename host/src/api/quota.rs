//! Quota endpoints: the projects' ledger and budgets, grants, live prices,
//! and `/metrics`.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use serde::Deserialize;
use serde::Serialize;
use utoipa::ToSchema;

use super::extract::{ApiPath, JsonBody};
use super::openapi::RemoteException;
use super::{ApiError, ApiState};
use crate::quota::{ProjectQuota, UnitPrices};
use crate::rm::ResourceManager;
use crate::rm::budget::{Budgets, GRANTS_SHOWN, ProjectBudget, ProjectDetail};
use crate::rm::charging::{Quote, QuoteApp};
use crate::security::Caller;

/// Every project's credits: `{"PROJECT": {"remaining": …, "total_used": …}}`,
/// as replay's "projects".
#[utoipa::path(get, path = "/ws/v1/quota/projects", tag = "quota",
    responses((status = 200, body = BTreeMap<String, ProjectQuota>),
        (status = 401, body = RemoteException)))]
pub(super) async fn projects(
    State(state): State<ApiState>,
) -> Result<Json<BTreeMap<String, ProjectQuota>>, ApiError> {
    let projects = state
        .rm
        .with(|rm: &mut ResourceManager| rm.quota().ledger().projects().clone())
        .await?;
    Ok(Json(projects.into_iter().collect()))
}

/// What an app would cost if submitted now: the pricing policy's `quote`
/// for each of its asks (the body is `POST /ws/v1/cluster/apps`'s, under
/// `app`, with how long its containers would run). Checked as a submission
/// is; nothing is submitted.
#[utoipa::path(post, path = "/ws/v1/quota/quote", tag = "quota",
    request_body = QuoteApp,
    responses((status = 200, body = Quote), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 403, body = RemoteException),
        (status = 500, description = "the pricing policy cannot quote now", body = RemoteException)))]
pub(super) async fn quote(
    State(state): State<ApiState>,
    caller: Caller,
    JsonBody(request): JsonBody<QuoteApp>,
) -> Result<Json<Quote>, ApiError> {
    let quote = state
        .rm
        .with(move |rm: &mut ResourceManager| rm.quote_app(&caller, request))
        .await??;
    Ok(Json(quote))
}

/// Every project's budget: credits left, burn rate (credits spent in the
/// last hour), state (ok, low, exhausted; unenforced when budgets are off),
/// and the rules in force (`weft.quota.budget.*`).
#[utoipa::path(get, path = "/ws/v1/quota/budgets", tag = "quota",
    responses((status = 200, body = Budgets), (status = 401, body = RemoteException)))]
pub(super) async fn budgets(State(state): State<ApiState>) -> Result<Json<Budgets>, ApiError> {
    Ok(Json(
        state
            .rm
            .with(|rm: &mut ResourceManager| rm.budgets())
            .await?,
    ))
}

/// One project: its budget, use per day and user (the last 31 days), its
/// spending over the last hour, and its latest grants.
#[utoipa::path(get, path = "/ws/v1/quota/projects/{project}", tag = "quota",
    params(("project" = String, Path, description = "The project")),
    responses((status = 200, body = ProjectDetail), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 404, body = RemoteException)))]
pub(super) async fn project(
    State(state): State<ApiState>,
    ApiPath(project): ApiPath<String>,
) -> Result<Json<ProjectDetail>, ApiError> {
    let wanted = project.clone();
    let (mut detail, store) = state
        .rm
        .with(move |rm: &mut ResourceManager| {
            rm.project_detail(&wanted).map(|d| (d, rm.store().cloned()))
        })
        .await??;
    if let Some(store) = store {
        // Off the event loop: a query to the store.
        detail.grants = tokio::task::spawn_blocking(move || store.grants(&project, GRANTS_SHOWN))
            .await
            .map_err(|e| ApiError::internal(format!("the grants read failed: {e}")))?
            .map_err(|e| ApiError::internal(format!("grants unreadable: {e}")))?;
    }
    Ok(Json(detail))
}

/// What a grant adds.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct GrantBody {
    /// Credits to add: above 0, at most 1e12.
    #[schema(exclusive_minimum = 0, maximum = 1_000_000_000_000_f64)]
    pub credits: f64,
}

/// Adds credits to a project (administrators only): a grant or a top-up.
/// Its pending containers are placed again from the next round.
#[utoipa::path(post, path = "/ws/v1/quota/projects/{project}/grant", tag = "quota",
    params(("project" = String, Path, description = "The project")),
    request_body = GrantBody,
    responses((status = 200, body = ProjectBudget), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 403, body = RemoteException),
        (status = 404, body = RemoteException), (status = 413, body = RemoteException)))]
pub(super) async fn grant(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(project): ApiPath<String>,
    JsonBody(body): JsonBody<GrantBody>,
) -> Result<Json<ProjectBudget>, ApiError> {
    Ok(Json(
        state
            .rm
            .with(move |rm: &mut ResourceManager| rm.grant_credits(&caller, &project, body.credits))
            .await??,
    ))
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct Prices {
    /// The active pricing policy's name.
    pricing_policy: Option<String>,
    variable_pricing: bool,
    multiplicators: Multiplicators,
    /// Credits per second for one unit of each resource.
    price_per_second: UnitPrices,
    units: Units,
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct Multiplicators {
    general: f64,
    gpu: f64,
}

/// What one priced unit is.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct Units {
    vcore: u32,
    memory_mb: u64,
    gpu: u32,
}

/// The multiplicators now and what one unit of each resource costs per second.
#[utoipa::path(get, path = "/ws/v1/quota/prices", tag = "quota",
    responses((status = 200, body = Prices), (status = 401, body = RemoteException),
        (status = 503, description = "the pricing policy cannot price now", body = RemoteException)))]
pub(super) async fn prices(State(state): State<ApiState>) -> Result<Json<Prices>, ApiError> {
    let policies = state.policies.clone();
    let (settings, multiplicators, unit_prices, pricing) = state
        .rm
        .with(move |rm: &mut ResourceManager| {
            let pricing = policies.pricing();
            let settings = *rm.quota().settings();
            let multiplicators = rm.quota().multiplicators();
            let unit_prices = rm.quota().unit_prices(pricing, rm.now());
            let name = pricing.active().map(|v| v.info.name.clone());
            (settings, multiplicators, unit_prices, name)
        })
        .await?;
    let unit_prices =
        unit_prices.map_err(|e| ApiError::unavailable(format!("prices unavailable: {e}")))?;
    Ok(Json(Prices {
        pricing_policy: pricing,
        variable_pricing: settings.variable_price,
        multiplicators: Multiplicators {
            general: multiplicators.general,
            gpu: multiplicators.gpu,
        },
        price_per_second: unit_prices,
        units: Units {
            vcore: 1,
            memory_mb: settings.unit_memory_mb,
            gpu: settings.unit_gpus,
        },
    }))
}

/// Prometheus metrics, in the OpenMetrics text format.
pub(super) async fn metrics_text(
    State(state): State<ApiState>,
) -> Result<impl IntoResponse, ApiError> {
    // Gauges are read from the cluster now, so a scrape never sees stale ones.
    state
        .rm
        .with(|rm: &mut ResourceManager| rm.update_gauges())
        .await?;
    Ok((
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        crate::metrics::metrics().render(),
    ))
}
