//! YARN's way to submit an app, for existing clients: POST
//! /ws/v1/cluster/apps/new-application for an id, then POST
//! /ws/v1/cluster/apps with an ApplicationSubmissionContext, mapped onto
//! Weft's own submission (one ask: the AM container's command, resource,
//! environment and attempts).

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::openapi::RemoteException;
use super::{ApiError, ApiState};
use crate::cluster::SubmitApp;
use crate::rm::{self, ResourceManager};
use crate::security::Caller;

/// YARN's answer to new-application.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct NewApplication {
    #[serde(rename = "application-id")]
    application_id: String,
    #[serde(rename = "maximum-resource-capability")]
    maximum_resource_capability: YarnResource,
}

/// YARN's resource: memory in MB and vcores.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
pub(super) struct YarnResource {
    /// 1 MB to 1 PiB.
    #[schema(minimum = 1, maximum = 1_073_741_824_u64)]
    memory: u64,
    /// 1 to 4096.
    #[serde(rename = "vCores")]
    #[schema(minimum = 1, maximum = 4096)]
    vcores: u32,
}

/// An app id for the caller to submit under (YARN's new-application), and
/// the largest container a node here could hold.
#[utoipa::path(post, path = "/ws/v1/cluster/apps/new-application", tag = "apps",
    responses((status = 200, body = NewApplication), (status = 401, body = RemoteException)))]
pub(super) async fn new_application(
    State(state): State<ApiState>,
    caller: Caller,
) -> Result<Json<NewApplication>, ApiError> {
    let (id, largest) = state
        .rm
        .with(move |rm: &mut ResourceManager| rm.new_application(&caller))
        .await?;
    Ok(Json(NewApplication {
        application_id: id,
        maximum_resource_capability: YarnResource {
            memory: largest.memory_mb,
            vcores: largest.vcores,
        },
    }))
}

/// YARN's ApplicationSubmissionContext, as far as Weft reads it. Other
/// fields YARN clients send (local-resources, credentials, unmanaged-AM,
/// log-aggregation-context, …) are ignored.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub(super) struct YarnSubmission {
    /// From new-application.
    #[serde(rename = "application-id")]
    #[schema(max_length = 256)]
    application_id: String,
    #[serde(rename = "application-name", default)]
    #[schema(max_length = 256)]
    application_name: Option<String>,
    #[serde(default)]
    #[schema(max_length = 256)]
    queue: Option<String>,
    #[serde(default)]
    priority: i32,
    #[serde(rename = "am-container-spec")]
    am_container_spec: ContainerLaunchContext,
    resource: YarnResource,
    /// How often the AM container may run (YARN's default: 2).
    #[serde(rename = "max-app-attempts", default = "default_attempts")]
    #[schema(minimum = 1, maximum = 100)]
    max_app_attempts: u32,
    #[serde(rename = "reservation-id", default)]
    #[schema(max_length = 256)]
    reservation_id: Option<String>,
    /// The project charged (a Weft field; YARN has none): else the
    /// `project:NAME` tag's, else "default".
    #[serde(default)]
    #[schema(max_length = 256)]
    project: Option<String>,
    #[serde(rename = "application-type", default)]
    #[schema(max_length = 256)]
    application_type: Option<String>,
    #[serde(rename = "application-tags", default)]
    application_tags: Option<ApplicationTags>,
    /// The node label its containers run in (one label; "" for the
    /// default partition).
    #[serde(rename = "app-node-label-expression", default)]
    #[schema(max_length = 255)]
    app_node_label_expression: Option<String>,
    /// The node label its AM container runs in: its only container here,
    /// so this wins over `app-node-label-expression`.
    #[serde(rename = "am-container-node-label-expression", default)]
    #[schema(max_length = 255)]
    am_container_node_label_expression: Option<String>,
}

/// YARN's `application-tags`: `{"tag": ["a", "b"]}`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub(super) struct ApplicationTags {
    #[serde(default)]
    #[schema(max_items = 10)]
    tag: Vec<String>,
}

fn default_attempts() -> u32 {
    rm::yarn_submission::DEFAULT_AM_ATTEMPTS
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
pub(super) struct ContainerLaunchContext {
    commands: Commands,
    #[serde(default)]
    environment: Option<Environment>,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
pub(super) struct Commands {
    /// One shell line (YARN runs it with bash -c).
    #[schema(max_length = 131071)]
    command: String,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
pub(super) struct Environment {
    #[serde(default)]
    #[schema(max_items = 1000)]
    entry: Vec<EnvironmentEntry>,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
pub(super) struct EnvironmentEntry {
    key: String,
    value: String,
}

impl YarnSubmission {
    /// Weft's submission (`rm::yarn_submission`, shared with Hadoop RPC):
    /// one container of the AM's resource running its command.
    pub(super) fn into_submission(self) -> SubmitApp {
        rm::yarn_submission::YarnSubmission {
            application_id: self.application_id,
            name: self.application_name,
            queue: self.queue,
            priority: self.priority,
            am_command: self.am_container_spec.commands.command,
            am_environment: self
                .am_container_spec
                .environment
                .map(|e| e.entry.into_iter().map(|e| (e.key, e.value)).collect())
                .unwrap_or_default(),
            am_launch: None,
            am_memory_mb: self.resource.memory,
            am_vcores: self.resource.vcores,
            max_app_attempts: self.max_app_attempts,
            reservation_id: self.reservation_id,
            project: self.project,
            application_type: self.application_type,
            tags: self.application_tags.map(|t| t.tag).unwrap_or_default(),
            app_node_label_expression: self.app_node_label_expression,
            am_node_label_expression: self.am_container_node_label_expression,
        }
        .into_submit_app()
    }
}

/// Whether a submission body is YARN's shape rather than Weft's: it has
/// an `am-container-spec`.
pub(super) fn is_yarn_shape(bytes: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct Probe {
        #[serde(rename = "am-container-spec")]
        am_container_spec: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_slice::<Probe>(bytes).is_ok_and(|p| p.am_container_spec.is_some())
}

/// What POST /ws/v1/cluster/apps takes, for the OpenAPI document: Weft's
/// submission or YARN's (told apart by `am-container-spec`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged)]
#[allow(
    dead_code,
    reason = "only describes the body in the OpenAPI document; `submit_app` decodes it"
)]
pub(super) enum SubmitBody {
    Weft(SubmitApp),
    Yarn(YarnSubmission),
}
