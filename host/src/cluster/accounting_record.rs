//! The accounting record of an ended app (seed 002 §6; YARN's
//! ApplicationSummary): who ran it, where, what its containers held for how
//! long, how it ended, what it was charged. The cluster makes one as each
//! app ends; `accounting/` keeps and exports them.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::App;

/// One ended app, as exported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccountingRecord {
    /// YARN's application id (`application_<cluster timestamp>_<number>`).
    pub app_id: String,
    /// The name it was submitted with.
    pub app_name: String,
    /// Who it ran as.
    pub user: String,
    /// The leaf queue it ran in.
    pub queue: String,
    /// The project (organization) charged.
    pub project: String,
    /// YARN's applicationType ("YARN" unless the submission said).
    pub application_type: String,
    /// MB-seconds its containers held (YARN's memorySeconds, rounded).
    pub memory_seconds: u64,
    /// vcore-seconds (YARN's vcoreSeconds, rounded).
    pub vcore_seconds: u64,
    /// GPU-seconds (rounded).
    pub gpu_seconds: u64,
    /// Containers allocated to it, every attempt counted.
    pub containers_run: u32,
    /// Containers that exited non-zero.
    pub containers_failed: u32,
    /// ms since the epoch.
    pub submitted_time: u64,
    /// When its first container was allocated; none if it never ran.
    pub started_time: Option<u64>,
    /// When it ended, in ms since the epoch.
    pub finished_time: u64,
    /// YARN's finalStatus: SUCCEEDED, FAILED or KILLED.
    pub final_status: String,
    /// Credits charged to its project for its containers.
    pub credits: f64,
}

impl AccountingRecord {
    /// The record of `app`, which has just ended.
    pub fn of(app: &App) -> AccountingRecord {
        let finished = app.finish_time_ms.unwrap_or(app.submit_time_ms);
        let [memory_seconds, vcore_seconds, gpu_seconds] = app.usage_at(finished).whole();
        AccountingRecord {
            app_id: app.id.clone(),
            app_name: app.name.clone(),
            user: app.user.clone(),
            queue: app.queue.clone(),
            project: app.project.clone(),
            application_type: app.application_type.clone(),
            memory_seconds,
            vcore_seconds,
            gpu_seconds,
            containers_run: app.containers_run,
            containers_failed: app.failed_containers,
            submitted_time: app.submit_time_ms,
            started_time: app.start_time_ms,
            finished_time: finished,
            final_status: app.final_status().to_string(),
            credits: app.credits,
        }
    }
}
