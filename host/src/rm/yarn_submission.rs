//! YARN's ApplicationSubmissionContext as Weft's submission, one mapping for
//! the clients that send it over REST (POST /ws/v1/cluster/apps) and over
//! Hadoop RPC (submitApplication): the AM container is the app's one ask,
//! and the project charged is named by the `project:NAME` tag (Spark's
//! `spark.yarn.tags`) unless a Weft field names it.

use std::collections::BTreeMap;

use crate::cluster::{AskSpec, SubmitApp};
use crate::protocol::node::{ContainerCommand, YarnLaunch};

/// The tag prefix that names the project an app charges.
pub const PROJECT_TAG: &str = "project:";
/// The project charged when nothing names one.
pub const DEFAULT_PROJECT: &str = "default";
/// AM attempts when the submission leaves it to the cluster (YARN's
/// `yarn.resourcemanager.am.max-attempts` default).
pub const DEFAULT_AM_ATTEMPTS: u32 = 2;

/// A YARN submission, as either transport decodes it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct YarnSubmission {
    /// The id new-application / getNewApplication gave.
    pub application_id: String,
    /// YARN's application name.
    pub name: Option<String>,
    /// The leaf queue.
    pub queue: Option<String>,
    /// YARN's application priority.
    pub priority: i32,
    /// The AM container's command line (YARN joins a launch context's
    /// commands with single spaces and runs them with bash -c).
    pub am_command: String,
    /// The AM container's environment.
    pub am_environment: BTreeMap<String, String>,
    /// What its launch context adds (local resources, tokens), when the
    /// client sent one Weft localizes (Hadoop RPC's submissions).
    pub am_launch: Option<YarnLaunch>,
    /// The AM container's memory in MB.
    pub am_memory_mb: u64,
    /// The AM container's vcores.
    pub am_vcores: u32,
    /// How often the AM may run; 0 leaves it to the cluster.
    pub max_app_attempts: u32,
    /// The reservation it runs in.
    pub reservation_id: Option<String>,
    /// The project charged, when the transport names it (a Weft field of the
    /// REST body); else the `project:NAME` tag, else "default".
    pub project: Option<String>,
    /// YARN's application type.
    pub application_type: Option<String>,
    /// YARN's application tags.
    pub tags: Vec<String>,
    /// The partition its containers run in.
    pub app_node_label_expression: Option<String>,
    /// The partition its AM container runs in: its only container here, so
    /// this wins over `app_node_label_expression`.
    pub am_node_label_expression: Option<String>,
}

impl YarnSubmission {
    /// The project it charges: the named one, else the first `project:NAME`
    /// tag's name, else "default".
    pub fn project(&self) -> String {
        if let Some(project) = &self.project {
            return project.clone();
        }
        self.tags
            .iter()
            .find_map(|tag| tag.strip_prefix(PROJECT_TAG))
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .unwrap_or(DEFAULT_PROJECT)
            .to_string()
    }

    /// Weft's submission: one container of the AM's resource running its
    /// command, as the caller (the user is filled in by the submission's
    /// checks). Its bounds are checked there, as any submission's are.
    pub fn into_submit_app(self) -> SubmitApp {
        let project = self.project();
        let max_attempts = match self.max_app_attempts {
            0 => DEFAULT_AM_ATTEMPTS,
            n => n,
        };
        SubmitApp {
            name: self.name.unwrap_or_else(|| "app".into()),
            queue: self.queue.unwrap_or_else(|| "default".into()),
            user: String::new(),
            project,
            priority: self.priority,
            asks: vec![AskSpec {
                count: 1,
                memory_mb: self.am_memory_mb,
                vcores: self.am_vcores,
                gpus: 0,
                duration_ms: None,
                command: Some(ContainerCommand::Shell(self.am_command)),
                env: self.am_environment,
                max_attempts,
                gang: None,
                node_label_expression: self.am_node_label_expression,
                allocation_tags: Vec::new(),
                placement_constraint: None,
                locality: None,
                execution_type: crate::cluster::ExecutionType::Guaranteed,
                yarn: self.am_launch.map(|launch| YarnLaunch {
                    application_master: true,
                    ..launch
                }),
            }],
            application_id: Some(self.application_id),
            reservation_id: self.reservation_id,
            application_type: self.application_type,
            tags: self.tags,
            lifetime_s: None,
            node_label_expression: self.app_node_label_expression,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_project_comes_from_the_field_then_the_tag_then_the_default() {
        let mut submission = YarnSubmission {
            tags: vec![
                "nightly".into(),
                "project:ml".into(),
                "project:other".into(),
            ],
            ..Default::default()
        };
        assert_eq!(submission.project(), "ml");
        submission.project = Some("named".into());
        assert_eq!(submission.project(), "named");
        submission.project = None;
        submission.tags = vec!["project:".into()];
        assert_eq!(submission.project(), DEFAULT_PROJECT);
        submission.tags.clear();
        assert_eq!(submission.project(), DEFAULT_PROJECT);
    }

    #[test]
    fn the_am_is_the_one_ask_and_attempts_default_as_yarn_does() {
        let app = YarnSubmission {
            application_id: "application_1_0001".into(),
            am_command: "echo hi".into(),
            am_memory_mb: 512,
            am_vcores: 1,
            tags: vec!["project:ml".into()],
            ..Default::default()
        }
        .into_submit_app();
        assert_eq!(app.project, "ml");
        assert_eq!(app.queue, "default");
        assert_eq!(app.asks.len(), 1);
        assert_eq!(app.asks[0].max_attempts, DEFAULT_AM_ATTEMPTS);
        assert_eq!(
            app.asks[0].command,
            Some(ContainerCommand::Shell("echo hi".into()))
        );
        assert_eq!(app.tags, ["project:ml"]);
    }

    #[test]
    fn a_launch_too_large_for_an_agents_answer_is_refused_at_submission() {
        let app = YarnSubmission {
            application_id: "application_1_0001".into(),
            am_command: "run".into(),
            am_memory_mb: 512,
            am_vcores: 1,
            am_environment: (0..20)
                .map(|i| (format!("V{i}"), "x".repeat(60_000)))
                .collect(),
            ..Default::default()
        }
        .into_submit_app();
        let app = SubmitApp {
            user: "alice".into(),
            ..app
        };
        let refusal = app.check().unwrap_err().to_string();
        assert!(
            refusal.contains("at most 1048576 bytes together"),
            "{refusal}"
        );
    }
}
