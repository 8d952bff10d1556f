//! An application: who submitted it where, and what it asks for. A pending
//! container is a count in an ask, never an object of its own, so a million
//! pending tasks cost a few bytes.

use serde::{Deserialize, Serialize};

use super::Resources;

/// YARN's application states, as far as Weft drives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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

/// `count` containers of one size, each running `duration_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AskSpec {
    pub count: u32,
    pub memory_mb: u64,
    pub vcores: u32,
    #[serde(default)]
    pub gpus: u32,
    pub duration_ms: u64,
}

/// A submission, as POST /ws/v1/cluster/apps takes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubmitApp {
    #[serde(default = "default_name")]
    pub name: String,
    #[serde(default = "default_queue")]
    pub queue: String,
    pub user: String,
    pub project: String,
    #[serde(default)]
    pub priority: i32,
    pub asks: Vec<AskSpec>,
    /// The reservation it runs in (YARN's `reservation-id`), which must be
    /// in its queue's plan.
    #[serde(default, alias = "reservation-id")]
    pub reservation_id: Option<String>,
}

fn default_name() -> String {
    "app".into()
}

fn default_queue() -> String {
    "default".into()
}

/// One ask of a running app.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
            sum + ask.resources.times(ask.pending).unwrap_or(Resources::ZERO)
        })
    }

    pub fn is_done(&self) -> bool {
        self.running_containers == 0 && self.pending_containers() == 0
    }
}
