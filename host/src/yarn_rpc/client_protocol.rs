//! ApplicationClientProtocol, YARN's client port (`yarn.resourcemanager.address`,
//! 8032): each method decodes its request, calls the resource manager's use
//! case (the one REST calls) on the event loop, and encodes the answer.
//! Methods YARN has that Weft does not serve answer
//! RpcNoSuchMethodException naming them.

use std::collections::HashSet;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use prost::Message;

use super::connection::Call;
use super::error::{RpcError, class};
use super::messages::calls::{
    APPLICATION_CLIENT_PROTOCOL, APPLICATION_CLIENT_PROTOCOL_METHODS,
    GetApplicationAttemptReportRequestProto, GetApplicationAttemptReportResponseProto,
    GetApplicationAttemptsRequestProto, GetApplicationAttemptsResponseProto,
    GetApplicationReportRequestProto, GetApplicationReportResponseProto,
    GetApplicationsRequestProto, GetApplicationsResponseProto, GetClusterMetricsRequestProto,
    GetClusterMetricsResponseProto, GetClusterNodesRequestProto, GetClusterNodesResponseProto,
    GetContainerReportRequestProto, GetContainerReportResponseProto, GetContainersRequestProto,
    GetContainersResponseProto, GetNewApplicationRequestProto, GetNewApplicationResponseProto,
    GetQueueInfoRequestProto, GetQueueInfoResponseProto, GetQueueUserAclsInfoRequestProto,
    GetQueueUserAclsInfoResponseProto, KillApplicationRequestProto, KillApplicationResponseProto,
    MoveApplicationAcrossQueuesRequestProto, MoveApplicationAcrossQueuesResponseProto,
    SubmitApplicationRequestProto, SubmitApplicationResponseProto,
    UpdateApplicationPriorityRequestProto, UpdateApplicationPriorityResponseProto,
};
use super::messages::records::{
    ApplicationAttemptIdProto, ApplicationAttemptReportProto, ApplicationSubmissionContextProto,
    ContainerLaunchContextProto, LocalResourceTypeProto, PriorityProto, QueueACLProto,
    QueueUserACLInfoProto,
};
use super::reports::{self, QueueDepth};
use super::server::Protocols;
use crate::cluster::App;
use crate::protocol::node::{LocalResource, LocalResourceKind, YarnLaunch};
use crate::rm::requests::RequestError;
use crate::rm::yarn_submission::YarnSubmission;
use crate::rm::{ResourceManager, RmHandle};
use crate::security::Security;

/// The protocol's name, as clients give it in every call.
pub const PROTOCOL: &str = APPLICATION_CLIENT_PROTOCOL;

/// ApplicationClientProtocol over the resource manager.
#[derive(Clone)]
pub struct ClientProtocol {
    rm: RmHandle,
    security: Arc<Security>,
}

impl ClientProtocol {
    /// The protocol, calling the resource manager `rm`; callers' groups
    /// come from `security`.
    pub fn new(rm: RmHandle, security: Arc<Security>) -> ClientProtocol {
        ClientProtocol { rm, security }
    }
}

impl Protocols for ClientProtocol {
    fn serve(&self, call: Call) -> BoxFuture<'static, Result<Vec<u8>, RpcError>> {
        let this = self.clone();
        Box::pin(async move { this.dispatch(call).await })
    }

    /// The reports (getApplications and the like); getNewApplication
    /// hands out an id, so it is told.
    fn only_reads(&self, method: &str) -> bool {
        method.starts_with("get") && method != "getNewApplication"
    }
}

/// A refusal of the resource manager's, as a Hadoop client reads it.
fn refused(error: RequestError) -> RpcError {
    match error {
        RequestError::NotAllowed(message) | RequestError::OverBudget(message) => {
            RpcError::new(class::ACCESS_CONTROL, message)
        }
        other => RpcError::yarn(other.to_string()),
    }
}

impl ClientProtocol {
    async fn dispatch(&self, call: Call) -> Result<Vec<u8>, RpcError> {
        if call.protocol != PROTOCOL {
            return Err(RpcError::no_such_protocol(&call.protocol));
        }
        let caller = self.security.caller(&call.peer.user);
        let method = call.method.as_str();
        let response = match method {
            "getClusterMetrics" => {
                call.decode::<GetClusterMetricsRequestProto>()?;
                let metrics = self
                    .read(|rm| reports::cluster_metrics(rm.cluster()))
                    .await?;
                GetClusterMetricsResponseProto {
                    cluster_metrics: Some(metrics),
                }
                .encode_to_vec()
            }
            "getNewApplication" => {
                call.decode::<GetNewApplicationRequestProto>()?;
                let (id, largest) = self
                    .rm
                    .with(move |rm: &mut ResourceManager| rm.new_application(&caller))
                    .await?;
                GetNewApplicationResponseProto {
                    application_id: Some(reports::application_id(&id)),
                    maximum_capability: Some(reports::resource(largest)),
                }
                .encode_to_vec()
            }
            "submitApplication" => {
                let request: SubmitApplicationRequestProto = call.decode()?;
                let context = request.application_submission_context.ok_or_else(|| {
                    RpcError::yarn("submitApplication names no application submission context")
                })?;
                let submission = submission(context)?;
                let submitter = call.peer.address.ip().to_string();
                self.rm
                    .with(move |rm: &mut ResourceManager| {
                        rm.submit_app(&caller, submission.into_submit_app(), &submitter)
                    })
                    .await?
                    .map_err(refused)?;
                SubmitApplicationResponseProto {}.encode_to_vec()
            }
            "getApplicationReport" => {
                let request: GetApplicationReportRequestProto = call.decode()?;
                let id = reports::application_id_text(request.application_id.as_ref())?;
                let wanted = id.clone();
                let report = self
                    .read(move |rm| rm.cluster().app(&wanted).map(reports::app_report))
                    .await?
                    .ok_or_else(|| reports::app_not_found(&id))?;
                GetApplicationReportResponseProto {
                    application_report: Some(report),
                }
                .encode_to_vec()
            }
            "getApplications" => {
                let request: GetApplicationsRequestProto = call.decode()?;
                let filter = AppFilter::new(request)?;
                let applications = self
                    .read(move |rm| {
                        rm.cluster()
                            .apps()
                            .iter()
                            .filter(|app| filter.admits(app))
                            .take(filter.limit)
                            .map(reports::app_report)
                            .collect()
                    })
                    .await?;
                GetApplicationsResponseProto { applications }.encode_to_vec()
            }
            "forceKillApplication" => {
                let request: KillApplicationRequestProto = call.decode()?;
                let id = reports::application_id_text(request.application_id.as_ref())?;
                let wanted = id.clone();
                let state = self
                    .rm
                    .with(move |rm: &mut ResourceManager| rm.kill_app(&caller, &wanted))
                    .await?
                    .map_err(|e| match e {
                        RequestError::Unknown(_) => reports::app_not_found(&id),
                        other => refused(other),
                    })?;
                KillApplicationResponseProto {
                    is_kill_completed: Some(state.has_ended()),
                }
                .encode_to_vec()
            }
            "updateApplicationPriority" => {
                let request: UpdateApplicationPriorityRequestProto = call.decode()?;
                let id = reports::application_id_text(request.application_id.as_ref())?;
                let Some(wanted) = request.application_priority.and_then(|p| p.priority) else {
                    return Err(RpcError::new(class::YARN, "applicationPriority is missing"));
                };
                let app = id.clone();
                let priority = self
                    .rm
                    .with(move |rm: &mut ResourceManager| rm.update_priority(&caller, &app, wanted))
                    .await?
                    .map_err(|e| match e {
                        RequestError::Unknown(_) => reports::app_not_found(&id),
                        other => refused(other),
                    })?;
                UpdateApplicationPriorityResponseProto {
                    application_priority: Some(PriorityProto {
                        priority: Some(priority),
                    }),
                }
                .encode_to_vec()
            }
            "moveApplicationAcrossQueues" => {
                let request: MoveApplicationAcrossQueuesRequestProto = call.decode()?;
                let id = reports::application_id_text(Some(&request.application_id))?;
                let queue = request.target_queue;
                if queue.is_empty() {
                    return Err(RpcError::new(class::YARN, "targetQueue is missing"));
                }
                let app = id.clone();
                self.rm
                    .with(move |rm: &mut ResourceManager| rm.move_app(&caller, &app, &queue))
                    .await?
                    .map_err(|e| match e {
                        RequestError::Unknown(_) => reports::app_not_found(&id),
                        other => refused(other),
                    })?;
                MoveApplicationAcrossQueuesResponseProto {}.encode_to_vec()
            }
            "getClusterNodes" => {
                let request: GetClusterNodesRequestProto = call.decode()?;
                // Weft's registered nodes are RUNNING, UNHEALTHY,
                // DECOMMISSIONING or DECOMMISSIONED, and those lost lately
                // LOST; none asked is all of them, as YARN's.
                let states = request.node_states;
                let node_reports = self
                    .read(move |rm| {
                        reports::node_reports(rm.cluster())
                            .filter(|report| {
                                states.is_empty()
                                    || report.node_state.is_some_and(|s| states.contains(&s))
                            })
                            .collect()
                    })
                    .await?;
                GetClusterNodesResponseProto { node_reports }.encode_to_vec()
            }
            "getQueueInfo" => {
                let request: GetQueueInfoRequestProto = call.decode()?;
                let name = request.queue_name.clone().unwrap_or_default();
                let depth = QueueDepth {
                    children: request.include_child_queues.unwrap_or(false),
                    recursive: request.recursive.unwrap_or(false),
                    applications: request.include_applications.unwrap_or(false),
                };
                let wanted = name.clone();
                let info = self
                    .read(move |rm| {
                        let cluster = rm.cluster();
                        let queues = cluster.queues().queues();
                        // By leaf name, full path, or "root".
                        let index = queues
                            .iter()
                            .position(|q| q.path == wanted)
                            .or_else(|| queues.iter().position(|q| q.name == wanted))?;
                        let usage = crate::scheduler::diagnostics::queue_usage(cluster);
                        Some(reports::queue_info(cluster, &usage, index, depth))
                    })
                    .await?
                    .ok_or_else(|| RpcError::new(class::YARN, format!("Unknown queue: {name}")))?;
                GetQueueInfoResponseProto {
                    queue_info: Some(info),
                }
                .encode_to_vec()
            }
            "getQueueUserAcls" => {
                call.decode::<GetQueueUserAclsInfoRequestProto>()?;
                let security = self.security.clone();
                let queue_user_acls = self
                    .read(move |rm| {
                        let tree = rm.cluster().queues();
                        (0..tree.queues().len())
                            .map(|index| {
                                let (submit, administer) =
                                    security.queue_rights(&caller, tree, index);
                                let mut user_acls = Vec::new();
                                if submit {
                                    user_acls.push(QueueACLProto::QaclSubmitApplications as i32);
                                }
                                if administer {
                                    user_acls.push(QueueACLProto::QaclAdministerQueue as i32);
                                }
                                QueueUserACLInfoProto {
                                    queue_name: Some(tree.queues()[index].name.clone()),
                                    user_acls,
                                }
                            })
                            .collect()
                    })
                    .await?;
                GetQueueUserAclsInfoResponseProto { queue_user_acls }.encode_to_vec()
            }
            "getApplicationAttempts" => {
                let request: GetApplicationAttemptsRequestProto = call.decode()?;
                let id = reports::application_id_text(request.application_id.as_ref())?;
                let wanted = id.clone();
                let report = self
                    .read(move |rm| rm.cluster().app(&wanted).map(reports::attempt_report))
                    .await?
                    .ok_or_else(|| reports::app_not_found(&id))?;
                GetApplicationAttemptsResponseProto {
                    application_attempts: vec![report],
                }
                .encode_to_vec()
            }
            "getApplicationAttemptReport" => {
                let request: GetApplicationAttemptReportRequestProto = call.decode()?;
                let report = self.current_attempt(request.application_attempt_id).await?;
                GetApplicationAttemptReportResponseProto {
                    application_attempt_report: Some(report),
                }
                .encode_to_vec()
            }
            "getContainers" => {
                let request: GetContainersRequestProto = call.decode()?;
                let attempt = self.current_attempt(request.application_attempt_id).await?;
                let id = reports::attempt_id_text(attempt.application_attempt_id.as_ref())
                    .map(|(app, _)| app)
                    .unwrap_or_default();
                let containers = self
                    .read(move |rm| {
                        rm.app_containers(&caller, &id).map(|records| {
                            records
                                .iter()
                                .map(|r| reports::container_report(rm.cluster(), r))
                                .collect()
                        })
                    })
                    .await?
                    .map_err(refused)?;
                GetContainersResponseProto { containers }.encode_to_vec()
            }
            "getContainerReport" => {
                let request: GetContainerReportRequestProto = call.decode()?;
                let id = request
                    .container_id
                    .as_ref()
                    .and_then(reports::container_id_text)
                    .ok_or_else(|| RpcError::yarn("the request names no container id"))?;
                let app = reports::application_id_text(
                    request
                        .container_id
                        .as_ref()
                        .and_then(|c| c.app_attempt_id.as_ref())
                        .and_then(|a| a.application_id.as_ref()),
                )?;
                let wanted = id.clone();
                let report = self
                    .read(move |rm| {
                        rm.app_containers(&caller, &app).map(|records| {
                            records
                                .iter()
                                .rev()
                                .find(|r| r.id == wanted)
                                .map(|r| reports::container_report(rm.cluster(), r))
                        })
                    })
                    .await?
                    .map_err(refused)?
                    .ok_or_else(|| {
                        RpcError::new(
                            class::CONTAINER_NOT_FOUND,
                            format!("Container with id '{id}' doesn't exist in RM."),
                        )
                    })?;
                GetContainerReportResponseProto {
                    container_report: Some(report),
                }
                .encode_to_vec()
            }
            // YARN has it; Weft does not serve it.
            other if APPLICATION_CLIENT_PROTOCOL_METHODS.contains(&other) => {
                return Err(RpcError::unsupported(PROTOCOL, other));
            }
            other => return Err(RpcError::no_such_method(PROTOCOL, other)),
        };
        Ok(response)
    }

    /// The report of the attempt `id` names, which must be its app's
    /// current one (Weft keeps no earlier attempts).
    async fn current_attempt(
        &self,
        id: Option<ApplicationAttemptIdProto>,
    ) -> Result<ApplicationAttemptReportProto, RpcError> {
        let (app, attempt) = reports::attempt_id_text(id.as_ref())
            .ok_or_else(|| RpcError::yarn("the request names no application attempt id"))?;
        let wanted = app.clone();
        let report = self
            .read(move |rm| rm.cluster().app(&wanted).map(reports::attempt_report))
            .await?
            .ok_or_else(|| reports::app_not_found(&app))?;
        let current = report
            .application_attempt_id
            .as_ref()
            .and_then(|a| a.attempt_id)
            .unwrap_or(1);
        if i64::from(current) != i64::from(attempt) {
            return Err(RpcError::new(
                class::APPLICATION_ATTEMPT_NOT_FOUND,
                format!(
                    "ApplicationAttempt with id '{}' doesn't exist in RM; its current attempt is {current}",
                    crate::cluster::attempt_id(&app, attempt)
                ),
            ));
        }
        Ok(report)
    }

    /// Runs a read on the event loop.
    async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&ResourceManager) -> T + Send + 'static,
    ) -> Result<T, RpcError> {
        Ok(self.rm.with(move |rm: &mut ResourceManager| f(rm)).await?)
    }
}

/// A submission context as Weft's YARN submission. Fields Weft does not
/// act on (local resources, tokens, ACLs, log aggregation, …) are left.
fn submission(context: ApplicationSubmissionContextProto) -> Result<YarnSubmission, RpcError> {
    let application_id = reports::application_id_text(context.application_id.as_ref())?;
    if context.unmanaged_am() {
        return Err(RpcError::yarn(
            "unmanaged application masters are not supported by Weft: the AM runs in a container",
        ));
    }
    let spec = context.am_container_spec.clone().unwrap_or_default();
    let resource = match (
        &context.resource,
        context.am_container_resource_request.first(),
    ) {
        (Some(resource), _) => resource.clone(),
        (None, Some(request)) => request.capability.clone().unwrap_or_default(),
        (None, None) => {
            return Err(RpcError::yarn(
                "the submission names no resource for its application master",
            ));
        }
    };
    let am_memory_mb = u64::try_from(resource.memory.unwrap_or(0))
        .map_err(|_| RpcError::yarn("the application master's memory is negative"))?;
    let am_vcores = u32::try_from(resource.virtual_cores.unwrap_or(0))
        .map_err(|_| RpcError::yarn("the application master's vcores are negative"))?;
    let max_app_attempts = u32::try_from(context.max_app_attempts())
        .map_err(|_| RpcError::yarn("maxAppAttempts is negative"))?;
    let am_label = context
        .am_container_resource_request
        .first()
        .and_then(|r| r.node_label_expression.clone());
    let am_launch = launch_context(&spec, true)?;
    Ok(YarnSubmission {
        am_launch: Some(am_launch),
        application_id,
        name: context.application_name.clone(),
        queue: context.queue.clone(),
        priority: context
            .priority
            .as_ref()
            .and_then(|p| p.priority)
            .unwrap_or(0),
        am_command: spec.command.join(" "),
        am_environment: environment(&spec),
        am_memory_mb,
        am_vcores,
        max_app_attempts,
        reservation_id: context.reservation_id.as_ref().and_then(|r| {
            r.id.map(|id| format!("reservation_{}_{id:04}", r.cluster_timestamp.unwrap_or(0)))
        }),
        project: None,
        application_type: context.application_type.clone(),
        tags: context.application_tags.clone(),
        app_node_label_expression: context.node_label_expression.clone(),
        am_node_label_expression: am_label,
    })
}

/// A launch context's environment, unexpanded.
pub fn environment(
    spec: &ContainerLaunchContextProto,
) -> std::collections::BTreeMap<String, String> {
    spec.environment
        .iter()
        .filter_map(|entry| Some((entry.key.clone()?, entry.value.clone().unwrap_or_default())))
        .collect()
}

/// What a launch context adds to a command: its local resources (`file:`
/// URLs on the node's file system; others are refused, naming the
/// resource) and its tokens; whether it is an application master's.
/// Bounds are checked with the submission (or the launch).
pub fn launch_context(
    spec: &ContainerLaunchContextProto,
    application_master: bool,
) -> Result<YarnLaunch, RpcError> {
    let mut local_resources = Vec::with_capacity(spec.local_resources.len());
    let mut compiled = HashSet::new();
    for entry in &spec.local_resources {
        let key = entry.key.clone().unwrap_or_default();
        let resource = entry.value.clone().unwrap_or_default();
        let url = resource.resource.clone().unwrap_or_default();
        let scheme = url.scheme.as_deref().unwrap_or("file");
        let host = url.host.as_deref().unwrap_or("");
        if scheme != "file" || !(host.is_empty() || host == "localhost") {
            return Err(RpcError::yarn(format!(
                "local resource {key:?}: {scheme}://{host} is not supported: Weft localizes file: URLs on the node's own file system (docs/yarn-applications.md)"
            )));
        }
        let kind = match LocalResourceTypeProto::try_from(resource.r#type.unwrap_or(0)) {
            Ok(LocalResourceTypeProto::File) => LocalResourceKind::File,
            Ok(LocalResourceTypeProto::Archive) => LocalResourceKind::Archive,
            Ok(LocalResourceTypeProto::Pattern) => LocalResourceKind::Pattern,
            Err(_) => {
                return Err(RpcError::yarn(format!(
                    "local resource {key:?}: its type {} is none of FILE, ARCHIVE, PATTERN",
                    resource.r#type.unwrap_or(0)
                )));
            }
        };
        let resource = LocalResource {
            key,
            path: url.file.clone().unwrap_or_default(),
            kind,
            size: u64::try_from(resource.size.unwrap_or(0)).unwrap_or(0),
            timestamp_ms: resource.timestamp.unwrap_or(0),
            pattern: (kind == LocalResourceKind::Pattern)
                .then(|| resource.pattern.clone())
                .flatten(),
        };
        // Compiled here, off the event loop, each distinct one once (its
        // bounds are checked first, cheaply).
        if kind == LocalResourceKind::Pattern {
            resource.check().map_err(RpcError::yarn)?;
            if compiled.insert(resource.pattern.clone()) {
                resource.unpack_pattern().map_err(RpcError::yarn)?;
            }
        }
        local_resources.push(resource);
    }
    Ok(YarnLaunch {
        local_resources,
        tokens_hex: spec.tokens.as_deref().map(hex::encode).unwrap_or_default(),
        application_master,
        submit_time_ms: 0,
        amrm_password_hex: String::new(),
        node_manager_address: String::new(),
        node_http_port: 0,
    })
}

/// The most values one of getApplications' filters may list.
const MAX_FILTER_VALUES: usize = 1000;

/// getApplications' filters.
struct AppFilter {
    types: HashSet<String>,
    /// YARN states, as reports give them (see `reports::yarn_state`).
    states: HashSet<i32>,
    users: HashSet<String>,
    queues: HashSet<String>,
    tags: HashSet<String>,
    name: Option<String>,
    started: (i64, i64),
    finished: (i64, i64),
    limit: usize,
}

impl AppFilter {
    /// The filters, each list bounded; at most a page of apps (as REST's
    /// GET /ws/v1/cluster/apps), fewer when the client asks for fewer.
    fn new(request: GetApplicationsRequestProto) -> Result<AppFilter, RpcError> {
        let bounded = |field: &str, values: Vec<String>, lower: bool| {
            if values.len() > MAX_FILTER_VALUES {
                return Err(RpcError::yarn(format!(
                    "getApplications: {field} lists {} values, at most {MAX_FILTER_VALUES}",
                    values.len()
                )));
            }
            // YARN matches types and tags without regard to case.
            Ok(values
                .into_iter()
                .map(|v| if lower { v.to_lowercase() } else { v })
                .collect::<HashSet<String>>())
        };
        Ok(AppFilter {
            types: bounded("applicationTypes", request.application_types, true)?,
            states: {
                let states = request.application_states;
                if states.len() > MAX_FILTER_VALUES {
                    return Err(RpcError::yarn(format!(
                        "getApplications: applicationStates lists {} values, at most {MAX_FILTER_VALUES}",
                        states.len()
                    )));
                }
                states.into_iter().collect()
            },
            users: bounded("users", request.users, false)?,
            queues: bounded("queues", request.queues, false)?,
            tags: bounded("applicationTags", request.application_tags, true)?,
            name: request.name,
            started: (
                request.start_begin.unwrap_or(0),
                request.start_end.unwrap_or(i64::MAX),
            ),
            finished: (
                request.finish_begin.unwrap_or(0),
                request.finish_end.unwrap_or(i64::MAX),
            ),
            limit: request
                .limit
                .and_then(|l| usize::try_from(l).ok())
                .filter(|&l| l > 0)
                .unwrap_or(crate::limits::DEFAULT_APPS_PAGE)
                .min(crate::limits::MAX_APPS_PAGE),
        })
    }

    /// Whether `app` passes every filter given (an empty list passes all).
    fn admits(&self, app: &App) -> bool {
        let within = |ms: u64, (from, to): (i64, i64)| {
            let ms = i64::try_from(ms).unwrap_or(i64::MAX);
            from <= ms && ms <= to
        };
        (self.types.is_empty() || self.types.contains(&app.application_type.to_lowercase()))
            && (self.states.is_empty() || self.states.contains(&(reports::yarn_state(app) as i32)))
            && (self.users.is_empty() || self.users.contains(&app.user))
            && (self.queues.is_empty() || self.queues.contains(&app.queue))
            && (self.tags.is_empty()
                || app
                    .tags
                    .iter()
                    .any(|t| self.tags.contains(&t.to_lowercase())))
            && self.name.as_ref().is_none_or(|name| *name == app.name)
            && within(
                app.start_time_ms.unwrap_or(app.submit_time_ms),
                self.started,
            )
            && (self.finished == (0, i64::MAX)
                || app
                    .finish_time_ms
                    .is_some_and(|ms| within(ms, self.finished)))
    }
}
