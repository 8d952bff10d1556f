//! An application: who submitted it where, and what it asks for. A pending
//! container is a count in an ask, never an object of its own, so a million
//! pending tasks cost a few bytes.

use serde::{Deserialize, Serialize};

use super::Resources;
use crate::limits::OutOfBounds;

/// YARN's application states, as far as Weft drives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AppState {
    /// Accepted into its queue; waiting for its first container.
    Accepted,
    /// At least one container allocated.
    Running,
    /// Every container it asked for has run and finished.
    Finished,
    /// Ended before finishing: its reservation expired (and
    /// reservation-move-on-expiry is false).
    Killed,
}

impl AppState {
    /// YARN's name for the state.
    pub fn as_str(self) -> &'static str {
        match self {
            AppState::Accepted => "ACCEPTED",
            AppState::Running => "RUNNING",
            AppState::Finished => "FINISHED",
            AppState::Killed => "KILLED",
        }
    }
}

/// `count` containers of one size, each running `duration_ms` (on a
/// simulated node). Bounds: docs/security.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AskSpec {
    /// 1 to 100,000.
    #[schema(minimum = 1, maximum = 100_000)]
    pub count: u32,
    /// 1 MB to 1 PiB.
    #[schema(minimum = 1, maximum = 1_073_741_824_u64)]
    pub memory_mb: u64,
    /// 1 to 4096.
    #[schema(minimum = 1, maximum = 4096)]
    pub vcores: u32,
    /// 0 to 1024.
    #[serde(default)]
    #[schema(minimum = 0, maximum = 1024)]
    pub gpus: u32,
    /// 1 ms to 30 days.
    #[schema(minimum = 1, maximum = 2_592_000_000_u64)]
    pub duration_ms: u64,
}

/// A submission, as POST /ws/v1/cluster/apps takes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitApp {
    #[serde(default = "default_name")]
    #[schema(min_length = 1, max_length = 256, pattern = r"\S")]
    pub name: String,
    /// A leaf queue's name.
    #[serde(default = "default_queue")]
    #[schema(min_length = 1, max_length = 256, pattern = r"\S")]
    pub queue: String,
    /// Who the app runs as: the caller, unless an administrator submits on
    /// someone's behalf.
    #[schema(min_length = 1, max_length = 256, pattern = r"\S")]
    pub user: String,
    /// The project charged for its containers.
    #[schema(min_length = 1, max_length = 256, pattern = r"\S")]
    pub project: String,
    #[serde(default)]
    pub priority: i32,
    /// 1 to 100 asks.
    #[schema(min_items = 1, max_items = 100)]
    pub asks: Vec<AskSpec>,
    /// The reservation it runs in (YARN's `reservation-id`), which must be
    /// in its queue's plan.
    #[serde(default, alias = "reservation-id")]
    pub reservation_id: Option<String>,
}

impl SubmitApp {
    /// Every field within its documented bound (`limits.rs`); the refusal
    /// names the field and the limit.
    pub fn check(&self) -> Result<(), OutOfBounds> {
        use crate::limits::*;
        name("name", &self.name)?;
        name("queue", &self.queue)?;
        name("user", &self.user)?;
        name("project", &self.project)?;
        if let Some(id) = &self.reservation_id {
            name("reservation_id", id)?;
        }
        if self.asks.is_empty() {
            return Err(OutOfBounds {
                field: "asks".into(),
                value: "empty".into(),
                rule: "but an app must ask for at least one container".into(),
            });
        }
        at_most("asks", self.asks.len(), MAX_ASKS_PER_APP)?;
        for (i, ask) in self.asks.iter().enumerate() {
            within(
                format!("asks[{i}].count"),
                ask.count,
                1,
                MAX_CONTAINERS_PER_ASK,
            )?;
            within(
                format!("asks[{i}].memory_mb"),
                ask.memory_mb,
                1,
                MAX_MEMORY_MB,
            )?;
            within(format!("asks[{i}].vcores"), ask.vcores, 1, MAX_VCORES)?;
            within(format!("asks[{i}].gpus"), ask.gpus, 0, MAX_GPUS)?;
            within(
                format!("asks[{i}].duration_ms"),
                ask.duration_ms,
                1,
                MAX_DURATION_MS,
            )?;
        }
        Ok(())
    }
}

fn default_name() -> String {
    "app".into()
}

fn default_queue() -> String {
    "default".into()
}

/// One ask of a running app.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Ask {
    pub resources: Resources,
    pub duration_ms: u64,
    /// Containers asked for in all.
    pub count: u32,
    /// Containers not yet allocated.
    pub pending: u32,
}

#[derive(Debug, Clone, Serialize)]
pub struct App {
    pub id: String,
    pub name: String,
    /// The leaf queue's name, and its index in the queue tree.
    pub queue: String,
    #[serde(skip)]
    pub queue_index: usize,
    /// The host the submission came from.
    pub submitter: String,
    pub user: String,
    pub project: String,
    pub priority: i32,
    pub state: AppState,
    pub submit_time_ms: u64,
    pub start_time_ms: Option<u64>,
    pub finish_time_ms: Option<u64>,
    pub asks: Vec<Ask>,
    /// Resources of its running containers.
    pub used: Resources,
    pub running_containers: u32,
    pub finished_containers: u32,
    /// Containers taken back by reclaim (and asked for again).
    pub preempted_containers: u32,
    /// Containers lost with their node (and asked for again).
    pub lost_containers: u32,
    /// The reservation it runs in while that is active.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reservation_id: Option<String>,
}

impl App {
    pub fn pending_containers(&self) -> u64 {
        self.asks.iter().map(|a| u64::from(a.pending)).sum()
    }

    /// Resources asked for and not yet allocated.
    pub fn pending_resources(&self) -> Resources {
        self.asks.iter().fold(Resources::ZERO, |sum, ask| {
            sum + ask.resources.saturating_times(ask.pending)
        })
    }

    pub fn is_done(&self) -> bool {
        self.running_containers == 0 && self.pending_containers() == 0
    }
}

/// Which apps a listing wants, with YARN's filters: states, queue, user,
/// started and finished time windows (inclusive), and at most `limit`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AppFilter {
    pub states: Option<Vec<AppState>>,
    pub queue: Option<String>,
    pub user: Option<String>,
    pub started: (Option<u64>, Option<u64>),
    pub finished: (Option<u64>, Option<u64>),
    pub limit: usize,
}

impl AppFilter {
    pub fn matches(&self, app: &App) -> bool {
        let within = |time: Option<u64>, (begin, end): (Option<u64>, Option<u64>)| {
            if begin.is_none() && end.is_none() {
                return true;
            }
            // As YARN: an app not started (or not finished) has time 0.
            let time = time.unwrap_or(0);
            begin.is_none_or(|b| time >= b) && end.is_none_or(|e| time <= e)
        };
        self.states.as_ref().is_none_or(|s| s.contains(&app.state))
            && self.queue.as_ref().is_none_or(|q| *q == app.queue)
            && self.user.as_ref().is_none_or(|u| *u == app.user)
            && within(app.start_time_ms, self.started)
            && within(app.finish_time_ms, self.finished)
    }

    /// The newest `limit` matching apps, in submission order.
    pub fn select<'a>(&self, apps: &'a super::AppTable) -> Vec<&'a App> {
        let mut selected: Vec<&App> = apps
            .iter()
            .rev()
            .filter(|app| self.matches(app))
            .take(self.limit)
            .collect();
        selected.reverse();
        selected
    }
}

impl std::str::FromStr for AppState {
    type Err = String;

    /// YARN's state names, any case. YARN's other states (NEW, SUBMITTED,
    /// FAILED, …) are valid filters that Weft's apps never match.
    fn from_str(text: &str) -> Result<AppState, String> {
        match text.trim().to_ascii_uppercase().as_str() {
            "ACCEPTED" => Ok(AppState::Accepted),
            "RUNNING" => Ok(AppState::Running),
            "FINISHED" => Ok(AppState::Finished),
            "KILLED" => Ok(AppState::Killed),
            other => Err(other.to_string()),
        }
    }
}

/// YARN's application states that Weft accepts in a filter but never reaches.
pub const OTHER_YARN_APP_STATES: &[&str] = &["NEW", "NEW_SAVING", "SUBMITTED", "FAILED"];
