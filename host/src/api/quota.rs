//! Quota endpoints: the projects' ledger, live prices, and `/metrics`.

use axum::Json;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use serde_json::{Value, json};

use super::{ApiError, ApiState};
use crate::policy::PolicyKind;
use crate::rm::ResourceManager;

/// `{"PROJECT": {"remaining": …, "total_used": …}}`, as replay's "projects".
pub async fn projects(State(state): State<ApiState>) -> Result<Json<Value>, ApiError> {
    let projects = state
        .rm
        .with(|rm: &mut ResourceManager| json!(rm.quota.ledger().projects()))
        .await?;
    Ok(Json(projects))
}

/// The multiplicators now and what one unit of each resource costs per second.
pub async fn prices(State(state): State<ApiState>) -> Result<Json<Value>, ApiError> {
    let body = state
        .rm
        .with(|rm: &mut ResourceManager| {
            let settings = *rm.quota.settings();
            let multiplicators = rm.quota.multiplicators();
            let unit_prices = rm.quota.unit_prices(rm.policies.slot(PolicyKind::Pricing));
            let pricing = rm
                .policies
                .slot(PolicyKind::Pricing)
                .active()
                .map(|v| v.info.name.clone());
            (settings, multiplicators, unit_prices, pricing)
        })
        .await?;
    let (settings, multiplicators, unit_prices, pricing) = body;
    let unit_prices =
        unit_prices.map_err(|e| ApiError::unavailable(format!("prices unavailable: {e}")))?;
    Ok(Json(json!({
        "pricing_policy": pricing,
        "variable_pricing": settings.variable_price,
        "multiplicators": { "general": multiplicators.general, "gpu": multiplicators.gpu },
        "price_per_second": unit_prices,
        "units": { "vcore": 1, "memory_mb": settings.unit_memory_mb, "gpu": settings.unit_gpus },
    })))
}

pub async fn metrics_text(State(state): State<ApiState>) -> Result<impl IntoResponse, ApiError> {
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
