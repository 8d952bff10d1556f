//! The request and response messages of YARN's three protocols, package
//! `hadoop.yarn`: yarn_service_protos.proto as in Hadoop 3.4.1 (checked
//! against the descriptors built into hadoop-client-api-3.4.1.jar), plus the
//! delegation-token messages of Security.proto (package `hadoop.common`)
//! that ApplicationClientProtocol also serves. The method names are those of
//! the services in applicationclient_protocol.proto,
//! applicationmaster_protocol.proto and containermanagement_protocol.proto.

use super::ipc::TokenProto;
use super::records::{
    AMCommandProto, ApplicationACLMapProto, ApplicationAttemptIdProto,
    ApplicationAttemptReportProto, ApplicationIdProto, ApplicationReportProto,
    ApplicationSubmissionContextProto, CollectorInfoProto, ContainerIdProto,
    ContainerLaunchContextProto, ContainerProto, ContainerReportProto, ContainerStatusProto,
    ExecutionTypeProto, FinalApplicationStatusProto, NodeIdProto, NodeReportProto, NodeStateProto,
    PreemptionMessageProto, PriorityProto, QueueInfoProto, QueueUserACLInfoProto,
    ResourceBlacklistRequestProto, ResourceProfilesProto, ResourceProto, ResourceRequestProto,
    ResourceTypeInfoProto, SerializedExceptionProto, StringBytesMapProto,
    YarnApplicationStateProto, YarnClusterMetricsProto,
};

// ---------------------------------------------------------------- protocols

/// The protocol name a client sends for ApplicationClientProtocol
/// (connection context and every `RequestHeaderProto`); version 1.
pub const APPLICATION_CLIENT_PROTOCOL: &str =
    "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB";

/// applicationclient_protocol.proto `ApplicationClientProtocolService`: every
/// method name, in the service's order (the request and response messages
/// are the ones below, named after the method, except forceKillApplication →
/// `KillApplication*`, getQueueUserAcls → `GetQueueUserAclsInfo*`,
/// getNodeToLabels → `GetNodesToLabels*`, submit/update/delete/listReservation
/// → `Reservation{Submission,Update,Delete,List}*`, getResourceProfiles →
/// `GetAllResourceProfiles*`, getResourceTypeInfo → `GetAllResourceTypeInfo*`,
/// signalToContainer → `SignalContainer*`, and the delegation-token methods,
/// whose messages are `hadoop.common`'s).
pub const APPLICATION_CLIENT_PROTOCOL_METHODS: &[&str] = &[
    "getNewApplication",
    "getApplicationReport",
    "submitApplication",
    "failApplicationAttempt",
    "forceKillApplication",
    "getClusterMetrics",
    "getApplications",
    "getClusterNodes",
    "getQueueInfo",
    "getQueueUserAcls",
    "getDelegationToken",
    "renewDelegationToken",
    "cancelDelegationToken",
    "moveApplicationAcrossQueues",
    "getApplicationAttemptReport",
    "getApplicationAttempts",
    "getContainerReport",
    "getContainers",
    "getNewReservation",
    "submitReservation",
    "updateReservation",
    "deleteReservation",
    "listReservations",
    "getNodeToLabels",
    "getLabelsToNodes",
    "getClusterNodeLabels",
    "updateApplicationPriority",
    "signalToContainer",
    "updateApplicationTimeouts",
    "getResourceProfiles",
    "getResourceProfile",
    "getResourceTypeInfo",
    "getClusterNodeAttributes",
    "getAttributesToNodes",
    "getNodesToAttributes",
];

/// The protocol name an AM sends for ApplicationMasterProtocol; version 1.
pub const APPLICATION_MASTER_PROTOCOL: &str =
    "org.apache.hadoop.yarn.api.ApplicationMasterProtocolPB";

/// applicationmaster_protocol.proto `ApplicationMasterProtocolService`: every
/// method name, in the service's order (messages `RegisterApplicationMaster*`,
/// `FinishApplicationMaster*`, `Allocate*`).
pub const APPLICATION_MASTER_PROTOCOL_METHODS: &[&str] = &[
    "registerApplicationMaster",
    "finishApplicationMaster",
    "allocate",
];

/// The protocol name an AM sends to a NodeManager for
/// ContainerManagementProtocol; version 1.
pub const CONTAINER_MANAGEMENT_PROTOCOL: &str =
    "org.apache.hadoop.yarn.api.ContainerManagementProtocolPB";

/// containermanagement_protocol.proto `ContainerManagementProtocolService`:
/// every method name, in the service's order (messages `StartContainers*`,
/// `StopContainers*`, `GetContainerStatuses*` are declared here; the others
/// are not).
pub const CONTAINER_MANAGEMENT_PROTOCOL_METHODS: &[&str] = &[
    "startContainers",
    "stopContainers",
    "getContainerStatuses",
    "increaseContainersResource",
    "updateContainer",
    "signalToContainer",
    "localize",
    "reInitializeContainer",
    "restartContainer",
    "rollbackLastReInitialization",
    "commitLastReInitialization",
    "getLocalizationStatuses",
];

// ---------------------------------------------------------------- enums

/// `ContainerUpdateTypeProto`: what a container update changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum ContainerUpdateTypeProto {
    /// INCREASE_RESOURCE: grow its resources.
    IncreaseResource = 0,
    /// DECREASE_RESOURCE: shrink its resources.
    DecreaseResource = 1,
    /// PROMOTE_EXECUTION_TYPE: opportunistic to guaranteed.
    PromoteExecutionType = 2,
    /// DEMOTE_EXECUTION_TYPE: guaranteed to opportunistic.
    DemoteExecutionType = 3,
}

/// `SchedulerResourceTypes`: the resource types the scheduler considers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum SchedulerResourceTypes {
    /// MEMORY: memory.
    Memory = 0,
    /// CPU: virtual cores.
    Cpu = 1,
}

/// `ApplicationsRequestScopeProto`: whose applications getApplications lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum ApplicationsRequestScopeProto {
    /// ALL: every application.
    All = 0,
    /// VIEWABLE: those the caller may view.
    Viewable = 1,
    /// OWN: the caller's own.
    Own = 2,
}

// ---------------------------------------------------------------- ApplicationMasterProtocol

/// `RegisterApplicationMasterRequestProto`: an AM announces itself.
/// `placement_constraints` (4) is not declared.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RegisterApplicationMasterRequestProto {
    /// host: the AM's host; may be absent on a re-register.
    #[prost(string, optional, tag = "1")]
    pub host: Option<String>,
    /// rpc_port: the AM's RPC port; -1 when none.
    #[prost(int32, optional, tag = "2")]
    pub rpc_port: Option<i32>,
    /// tracking_url: the AM's web UI.
    #[prost(string, optional, tag = "3")]
    pub tracking_url: Option<String>,
}

/// `RegisterApplicationMasterResponseProto`: what an AM learns on register.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RegisterApplicationMasterResponseProto {
    /// maximumCapability: the largest container the cluster grants.
    #[prost(message, optional, tag = "1")]
    pub maximum_capability: Option<ResourceProto>,
    /// client_to_am_token_master_key: the key for client-to-AM tokens.
    #[prost(bytes = "vec", optional, tag = "2")]
    pub client_to_am_token_master_key: Option<Vec<u8>>,
    /// application_ACLs: the application's ACLs.
    #[prost(message, repeated, tag = "3")]
    pub application_acls: Vec<ApplicationACLMapProto>,
    /// containers_from_previous_attempts: containers kept from earlier attempts.
    #[prost(message, repeated, tag = "4")]
    pub containers_from_previous_attempts: Vec<ContainerProto>,
    /// queue: the queue the application runs in.
    #[prost(string, optional, tag = "5")]
    pub queue: Option<String>,
    /// nm_tokens_from_previous_attempts: NMTokens for the kept containers' nodes.
    #[prost(message, repeated, tag = "6")]
    pub nm_tokens_from_previous_attempts: Vec<NMTokenProto>,
    /// scheduler_resource_types: the resource types the scheduler considers.
    #[prost(
        enumeration = "SchedulerResourceTypes",
        repeated,
        packed = "false",
        tag = "7"
    )]
    pub scheduler_resource_types: Vec<i32>,
    /// resource_profiles: the cluster's resource profiles.
    #[prost(message, optional, tag = "8")]
    pub resource_profiles: Option<ResourceProfilesProto>,
    /// resource_types: the cluster's resource types.
    #[prost(message, repeated, tag = "9")]
    pub resource_types: Vec<ResourceTypeInfoProto>,
}

/// `FinishApplicationMasterRequestProto`: an AM unregisters.
#[derive(Clone, PartialEq, prost::Message)]
pub struct FinishApplicationMasterRequestProto {
    /// diagnostics: the AM's closing message.
    #[prost(string, optional, tag = "1")]
    pub diagnostics: Option<String>,
    /// tracking_url: the final tracking URL (e.g. history server).
    #[prost(string, optional, tag = "2")]
    pub tracking_url: Option<String>,
    /// final_application_status: the outcome.
    #[prost(enumeration = "FinalApplicationStatusProto", optional, tag = "3")]
    pub final_application_status: Option<i32>,
}

/// `FinishApplicationMasterResponseProto`: whether the unregister is done.
#[derive(Clone, PartialEq, prost::Message)]
pub struct FinishApplicationMasterResponseProto {
    /// isUnregistered: done; false when unset (the client then retries forever).
    #[prost(bool, optional, tag = "1", default = "false")]
    pub is_unregistered: Option<bool>,
}

/// `UpdateContainerRequestProto`: an AM asks to change a container.
#[derive(Clone, PartialEq, prost::Message)]
pub struct UpdateContainerRequestProto {
    /// container_version: the container's current version.
    #[prost(int32, required, tag = "1")]
    pub container_version: i32,
    /// container_id: the container.
    #[prost(message, required, tag = "2")]
    pub container_id: ContainerIdProto,
    /// update_type: what to change.
    #[prost(enumeration = "ContainerUpdateTypeProto", required, tag = "3")]
    pub update_type: i32,
    /// capability: the new resources.
    #[prost(message, optional, tag = "4")]
    pub capability: Option<ResourceProto>,
    /// execution_type: the new execution type.
    #[prost(enumeration = "ExecutionTypeProto", optional, tag = "5")]
    pub execution_type: Option<i32>,
}

/// `UpdateContainerErrorProto`: a refused container update.
#[derive(Clone, PartialEq, prost::Message)]
pub struct UpdateContainerErrorProto {
    /// reason: why it was refused.
    #[prost(string, optional, tag = "1")]
    pub reason: Option<String>,
    /// update_request: the refused request.
    #[prost(message, optional, tag = "2")]
    pub update_request: Option<UpdateContainerRequestProto>,
    /// current_container_version: the container's current version.
    #[prost(int32, optional, tag = "3")]
    pub current_container_version: Option<i32>,
}

/// `AllocateRequestProto`: an AM's heartbeat. `scheduling_requests` (10) is
/// not declared.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AllocateRequestProto {
    /// ask: changed asks, each the absolute count for its key.
    #[prost(message, repeated, tag = "1")]
    pub ask: Vec<ResourceRequestProto>,
    /// release: containers the AM gives back.
    #[prost(message, repeated, tag = "2")]
    pub release: Vec<ContainerIdProto>,
    /// blacklist_request: changes to the node blacklist.
    #[prost(message, optional, tag = "3")]
    pub blacklist_request: Option<ResourceBlacklistRequestProto>,
    /// response_id: the last response id the AM saw; 0 after register.
    #[prost(int32, optional, tag = "4")]
    pub response_id: Option<i32>,
    /// progress: the AM's progress, from 0 to 1.
    #[prost(float, optional, tag = "5")]
    pub progress: Option<f32>,
    /// update_requests: container changes asked for.
    #[prost(message, repeated, tag = "7")]
    pub update_requests: Vec<UpdateContainerRequestProto>,
    /// tracking_url: a new tracking URL.
    #[prost(string, optional, tag = "11")]
    pub tracking_url: Option<String>,
}

/// `NMTokenProto` (yarn_service_protos.proto): the token for one NodeManager.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NMTokenProto {
    /// nodeId: the node, with the NM's RPC port.
    #[prost(message, optional, tag = "1")]
    pub node_id: Option<NodeIdProto>,
    /// token: the NMToken, kind `NMToken`.
    #[prost(message, optional, tag = "2")]
    pub token: Option<TokenProto>,
}

/// `UpdatedContainerProto`: a container whose update was granted.
#[derive(Clone, PartialEq, prost::Message)]
pub struct UpdatedContainerProto {
    /// update_type: what changed.
    #[prost(enumeration = "ContainerUpdateTypeProto", required, tag = "1")]
    pub update_type: i32,
    /// container: the container as it is now.
    #[prost(message, required, tag = "2")]
    pub container: ContainerProto,
}

/// `EnhancedHeadroomProto`: extra headroom figures.
#[derive(Clone, PartialEq, prost::Message)]
pub struct EnhancedHeadroomProto {
    /// total_pending_count: pending containers.
    #[prost(int32, optional, tag = "1")]
    pub total_pending_count: Option<i32>,
    /// total_active_cores: active cores.
    #[prost(int32, optional, tag = "2")]
    pub total_active_cores: Option<i32>,
}

/// `AllocateResponseProto`: the RM's answer to a heartbeat.
/// `rejected_scheduling_requests` (18) is not declared.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AllocateResponseProto {
    /// a_m_command: resync or shut down; unset normally.
    #[prost(enumeration = "AMCommandProto", optional, tag = "1")]
    pub a_m_command: Option<i32>,
    /// response_id: the request's id + 1.
    #[prost(int32, optional, tag = "2")]
    pub response_id: Option<i32>,
    /// allocated_containers: newly allocated containers.
    #[prost(message, repeated, tag = "3")]
    pub allocated_containers: Vec<ContainerProto>,
    /// completed_container_statuses: containers that ended.
    #[prost(message, repeated, tag = "4")]
    pub completed_container_statuses: Vec<ContainerStatusProto>,
    /// limit: the application's headroom.
    #[prost(message, optional, tag = "5")]
    pub limit: Option<ResourceProto>,
    /// updated_nodes: nodes whose state changed.
    #[prost(message, repeated, tag = "6")]
    pub updated_nodes: Vec<NodeReportProto>,
    /// num_cluster_nodes: nodes in the cluster.
    #[prost(int32, optional, tag = "7")]
    pub num_cluster_nodes: Option<i32>,
    /// preempt: the preemption notice.
    #[prost(message, optional, tag = "8")]
    pub preempt: Option<PreemptionMessageProto>,
    /// nm_tokens: NMTokens for the nodes of new containers.
    #[prost(message, repeated, tag = "9")]
    pub nm_tokens: Vec<NMTokenProto>,
    /// am_rm_token: a rolled-over AMRMToken.
    #[prost(message, optional, tag = "12")]
    pub am_rm_token: Option<TokenProto>,
    /// application_priority: the application's priority.
    #[prost(message, optional, tag = "13")]
    pub application_priority: Option<PriorityProto>,
    /// collector_info: the timeline collector.
    #[prost(message, optional, tag = "14")]
    pub collector_info: Option<CollectorInfoProto>,
    /// update_errors: refused container updates.
    #[prost(message, repeated, tag = "15")]
    pub update_errors: Vec<UpdateContainerErrorProto>,
    /// updated_containers: granted container updates.
    #[prost(message, repeated, tag = "16")]
    pub updated_containers: Vec<UpdatedContainerProto>,
    /// containers_from_previous_attempts: containers recovered from earlier attempts.
    #[prost(message, repeated, tag = "17")]
    pub containers_from_previous_attempts: Vec<ContainerProto>,
    /// enhanced_headroom: extra headroom figures.
    #[prost(message, optional, tag = "19")]
    pub enhanced_headroom: Option<EnhancedHeadroomProto>,
}

// ---------------------------------------------------------------- ApplicationClientProtocol

/// `GetNewApplicationRequestProto`: getNewApplication's request (empty).
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetNewApplicationRequestProto {}

/// `GetNewApplicationResponseProto`: a fresh application id.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetNewApplicationResponseProto {
    /// application_id: the new id.
    #[prost(message, optional, tag = "1")]
    pub application_id: Option<ApplicationIdProto>,
    /// maximumCapability: the largest container; the client needs it.
    #[prost(message, optional, tag = "2")]
    pub maximum_capability: Option<ResourceProto>,
}

/// `GetApplicationReportRequestProto`: getApplicationReport's request.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetApplicationReportRequestProto {
    /// application_id: the application.
    #[prost(message, optional, tag = "1")]
    pub application_id: Option<ApplicationIdProto>,
}

/// `GetApplicationReportResponseProto`: one application's report.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetApplicationReportResponseProto {
    /// application_report: the report.
    #[prost(message, optional, tag = "1")]
    pub application_report: Option<ApplicationReportProto>,
}

/// `SubmitApplicationRequestProto`: submitApplication's request.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SubmitApplicationRequestProto {
    /// application_submission_context: what to run.
    #[prost(message, optional, tag = "1")]
    pub application_submission_context: Option<ApplicationSubmissionContextProto>,
}

/// `SubmitApplicationResponseProto`: submitApplication's response (empty).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SubmitApplicationResponseProto {}

/// `FailApplicationAttemptRequestProto`: failApplicationAttempt's request.
#[derive(Clone, PartialEq, prost::Message)]
pub struct FailApplicationAttemptRequestProto {
    /// application_attempt_id: the attempt to fail.
    #[prost(message, optional, tag = "1")]
    pub application_attempt_id: Option<ApplicationAttemptIdProto>,
}

/// `FailApplicationAttemptResponseProto`: failApplicationAttempt's response (empty).
#[derive(Clone, PartialEq, prost::Message)]
pub struct FailApplicationAttemptResponseProto {}

/// `KillApplicationRequestProto`: forceKillApplication's request.
#[derive(Clone, PartialEq, prost::Message)]
pub struct KillApplicationRequestProto {
    /// application_id: the application.
    #[prost(message, optional, tag = "1")]
    pub application_id: Option<ApplicationIdProto>,
    /// diagnostics: why it is killed.
    #[prost(string, optional, tag = "2")]
    pub diagnostics: Option<String>,
}

/// `KillApplicationResponseProto`: forceKillApplication's response.
#[derive(Clone, PartialEq, prost::Message)]
pub struct KillApplicationResponseProto {
    /// is_kill_completed: the kill is done; false when unset (the client polls until true).
    #[prost(bool, optional, tag = "1", default = "false")]
    pub is_kill_completed: Option<bool>,
}

/// `UpdateApplicationPriorityRequestProto`: updateApplicationPriority's request.
#[derive(Clone, PartialEq, prost::Message)]
pub struct UpdateApplicationPriorityRequestProto {
    /// applicationId: the application.
    #[prost(message, optional, tag = "1")]
    pub application_id: Option<ApplicationIdProto>,
    /// applicationPriority: the priority wanted.
    #[prost(message, optional, tag = "2")]
    pub application_priority: Option<PriorityProto>,
}

/// `UpdateApplicationPriorityResponseProto`: updateApplicationPriority's response.
#[derive(Clone, PartialEq, prost::Message)]
pub struct UpdateApplicationPriorityResponseProto {
    /// applicationPriority: the priority now (cut to the cluster's highest).
    #[prost(message, optional, tag = "1")]
    pub application_priority: Option<PriorityProto>,
}

/// `GetClusterMetricsRequestProto`: getClusterMetrics's request (empty).
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetClusterMetricsRequestProto {}

/// `GetClusterMetricsResponseProto`: getClusterMetrics's response.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetClusterMetricsResponseProto {
    /// cluster_metrics: node counts.
    #[prost(message, optional, tag = "1")]
    pub cluster_metrics: Option<YarnClusterMetricsProto>,
}

/// `MoveApplicationAcrossQueuesRequestProto`: moveApplicationAcrossQueues's request.
#[derive(Clone, PartialEq, prost::Message)]
pub struct MoveApplicationAcrossQueuesRequestProto {
    /// application_id: the application.
    #[prost(message, required, tag = "1")]
    pub application_id: ApplicationIdProto,
    /// target_queue: the queue to move it to.
    #[prost(string, required, tag = "2")]
    pub target_queue: String,
}

/// `MoveApplicationAcrossQueuesResponseProto`: the move's response (empty).
#[derive(Clone, PartialEq, prost::Message)]
pub struct MoveApplicationAcrossQueuesResponseProto {}

/// `GetApplicationsRequestProto`: getApplications's filters; empty means all.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetApplicationsRequestProto {
    /// application_types: only these types.
    #[prost(string, repeated, tag = "1")]
    pub application_types: Vec<String>,
    /// application_states: only these states.
    #[prost(
        enumeration = "YarnApplicationStateProto",
        repeated,
        packed = "false",
        tag = "2"
    )]
    pub application_states: Vec<i32>,
    /// users: only these users'.
    #[prost(string, repeated, tag = "3")]
    pub users: Vec<String>,
    /// queues: only in these queues.
    #[prost(string, repeated, tag = "4")]
    pub queues: Vec<String>,
    /// limit: the most reports to return.
    #[prost(int64, optional, tag = "5")]
    pub limit: Option<i64>,
    /// start_begin: started at or after, ms since the epoch.
    #[prost(int64, optional, tag = "6")]
    pub start_begin: Option<i64>,
    /// start_end: started at or before, ms since the epoch.
    #[prost(int64, optional, tag = "7")]
    pub start_end: Option<i64>,
    /// finish_begin: finished at or after, ms since the epoch.
    #[prost(int64, optional, tag = "8")]
    pub finish_begin: Option<i64>,
    /// finish_end: finished at or before, ms since the epoch.
    #[prost(int64, optional, tag = "9")]
    pub finish_end: Option<i64>,
    /// applicationTags: only with one of these tags.
    #[prost(string, repeated, tag = "10")]
    pub application_tags: Vec<String>,
    /// scope: whose applications; ALL when unset.
    #[prost(
        enumeration = "ApplicationsRequestScopeProto",
        optional,
        tag = "11",
        default = "All"
    )]
    pub scope: Option<i32>,
    /// name: only with this name.
    #[prost(string, optional, tag = "12")]
    pub name: Option<String>,
}

/// `GetApplicationsResponseProto`: the matching applications.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetApplicationsResponseProto {
    /// applications: their reports.
    #[prost(message, repeated, tag = "1")]
    pub applications: Vec<ApplicationReportProto>,
}

/// `GetClusterNodesRequestProto`: getClusterNodes's filter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetClusterNodesRequestProto {
    /// nodeStates: only nodes in these states; empty means all.
    #[prost(enumeration = "NodeStateProto", repeated, packed = "false", tag = "1")]
    pub node_states: Vec<i32>,
}

/// `GetClusterNodesResponseProto`: the matching nodes.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetClusterNodesResponseProto {
    /// nodeReports: their reports.
    #[prost(message, repeated, tag = "1")]
    pub node_reports: Vec<NodeReportProto>,
}

/// `GetQueueInfoRequestProto`: getQueueInfo's request.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetQueueInfoRequestProto {
    /// queueName: the queue.
    #[prost(string, optional, tag = "1")]
    pub queue_name: Option<String>,
    /// includeApplications: include its applications.
    #[prost(bool, optional, tag = "2")]
    pub include_applications: Option<bool>,
    /// includeChildQueues: include its children.
    #[prost(bool, optional, tag = "3")]
    pub include_child_queues: Option<bool>,
    /// recursive: include all descendants.
    #[prost(bool, optional, tag = "4")]
    pub recursive: Option<bool>,
    /// subClusterId: the federation sub-cluster.
    #[prost(string, optional, tag = "5")]
    pub sub_cluster_id: Option<String>,
}

/// `GetQueueInfoResponseProto`: getQueueInfo's response.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetQueueInfoResponseProto {
    /// queueInfo: the queue.
    #[prost(message, optional, tag = "1")]
    pub queue_info: Option<QueueInfoProto>,
}

/// `GetQueueUserAclsInfoRequestProto`: getQueueUserAcls's request (empty).
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetQueueUserAclsInfoRequestProto {}

/// `GetQueueUserAclsInfoResponseProto`: getQueueUserAcls's response.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetQueueUserAclsInfoResponseProto {
    /// queueUserAcls: the caller's permissions, per queue.
    #[prost(message, repeated, tag = "1")]
    pub queue_user_acls: Vec<QueueUserACLInfoProto>,
}

/// `GetApplicationAttemptReportRequestProto`: getApplicationAttemptReport's request.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetApplicationAttemptReportRequestProto {
    /// application_attempt_id: the attempt.
    #[prost(message, optional, tag = "1")]
    pub application_attempt_id: Option<ApplicationAttemptIdProto>,
}

/// `GetApplicationAttemptReportResponseProto`: one attempt's report.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetApplicationAttemptReportResponseProto {
    /// application_attempt_report: the report.
    #[prost(message, optional, tag = "1")]
    pub application_attempt_report: Option<ApplicationAttemptReportProto>,
}

/// `GetApplicationAttemptsRequestProto`: getApplicationAttempts's request.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetApplicationAttemptsRequestProto {
    /// application_id: the application.
    #[prost(message, optional, tag = "1")]
    pub application_id: Option<ApplicationIdProto>,
}

/// `GetApplicationAttemptsResponseProto`: an application's attempts.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetApplicationAttemptsResponseProto {
    /// application_attempts: their reports.
    #[prost(message, repeated, tag = "1")]
    pub application_attempts: Vec<ApplicationAttemptReportProto>,
}

/// `GetContainerReportRequestProto`: getContainerReport's request.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetContainerReportRequestProto {
    /// container_id: the container.
    #[prost(message, optional, tag = "1")]
    pub container_id: Option<ContainerIdProto>,
}

/// `GetContainerReportResponseProto`: one container's report.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetContainerReportResponseProto {
    /// container_report: the report.
    #[prost(message, optional, tag = "1")]
    pub container_report: Option<ContainerReportProto>,
}

/// `GetContainersRequestProto`: getContainers's request.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetContainersRequestProto {
    /// application_attempt_id: the attempt.
    #[prost(message, optional, tag = "1")]
    pub application_attempt_id: Option<ApplicationAttemptIdProto>,
}

/// `GetContainersResponseProto`: an attempt's containers.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetContainersResponseProto {
    /// containers: their reports.
    #[prost(message, repeated, tag = "1")]
    pub containers: Vec<ContainerReportProto>,
}

/// Security.proto `hadoop.common.GetDelegationTokenRequestProto`:
/// getDelegationToken's request.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetDelegationTokenRequestProto {
    /// renewer: who may renew the token.
    #[prost(string, required, tag = "1")]
    pub renewer: String,
}

/// Security.proto `hadoop.common.GetDelegationTokenResponseProto`:
/// getDelegationToken's response.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetDelegationTokenResponseProto {
    /// token: the delegation token.
    #[prost(message, optional, tag = "1")]
    pub token: Option<TokenProto>,
}

/// Security.proto `hadoop.common.RenewDelegationTokenRequestProto`:
/// renewDelegationToken's request.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RenewDelegationTokenRequestProto {
    /// token: the token to renew.
    #[prost(message, required, tag = "1")]
    pub token: TokenProto,
}

/// Security.proto `hadoop.common.RenewDelegationTokenResponseProto`:
/// renewDelegationToken's response.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RenewDelegationTokenResponseProto {
    /// newExpiryTime: the new expiry, ms since the epoch.
    #[prost(uint64, required, tag = "1")]
    pub new_expiry_time: u64,
}

/// Security.proto `hadoop.common.CancelDelegationTokenRequestProto`:
/// cancelDelegationToken's request.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CancelDelegationTokenRequestProto {
    /// token: the token to cancel.
    #[prost(message, required, tag = "1")]
    pub token: TokenProto,
}

/// Security.proto `hadoop.common.CancelDelegationTokenResponseProto`:
/// cancelDelegationToken's response (empty).
#[derive(Clone, PartialEq, prost::Message)]
pub struct CancelDelegationTokenResponseProto {}

// ---------------------------------------------------------------- ContainerManagementProtocol

/// `StartContainerRequestProto`: one container to start.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StartContainerRequestProto {
    /// container_launch_context: what to run.
    #[prost(message, optional, tag = "1")]
    pub container_launch_context: Option<ContainerLaunchContextProto>,
    /// container_token: the container token; carries the id and the user.
    #[prost(message, optional, tag = "2")]
    pub container_token: Option<TokenProto>,
}

/// `StartContainersRequestProto`: startContainers's request.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StartContainersRequestProto {
    /// start_container_request: the containers to start.
    #[prost(message, repeated, tag = "1")]
    pub start_container_request: Vec<StartContainerRequestProto>,
}

/// `ContainerExceptionMapProto`: why one container's request failed.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ContainerExceptionMapProto {
    /// container_id: the container.
    #[prost(message, optional, tag = "1")]
    pub container_id: Option<ContainerIdProto>,
    /// exception: the failure, as a Java exception.
    #[prost(message, optional, tag = "2")]
    pub exception: Option<SerializedExceptionProto>,
}

/// `StartContainersResponseProto`: startContainers's response.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StartContainersResponseProto {
    /// services_meta_data: auxiliary services' data, by service name.
    #[prost(message, repeated, tag = "1")]
    pub services_meta_data: Vec<StringBytesMapProto>,
    /// succeeded_requests: containers started.
    #[prost(message, repeated, tag = "2")]
    pub succeeded_requests: Vec<ContainerIdProto>,
    /// failed_requests: containers not started, with why.
    #[prost(message, repeated, tag = "3")]
    pub failed_requests: Vec<ContainerExceptionMapProto>,
}

/// `StopContainersRequestProto`: stopContainers's request.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StopContainersRequestProto {
    /// container_id: the containers to stop.
    #[prost(message, repeated, tag = "1")]
    pub container_id: Vec<ContainerIdProto>,
}

/// `StopContainersResponseProto`: stopContainers's response.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StopContainersResponseProto {
    /// succeeded_requests: containers stopped.
    #[prost(message, repeated, tag = "1")]
    pub succeeded_requests: Vec<ContainerIdProto>,
    /// failed_requests: containers not stopped, with why.
    #[prost(message, repeated, tag = "2")]
    pub failed_requests: Vec<ContainerExceptionMapProto>,
}

/// `GetContainerStatusesRequestProto`: getContainerStatuses's request.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetContainerStatusesRequestProto {
    /// container_id: the containers.
    #[prost(message, repeated, tag = "1")]
    pub container_id: Vec<ContainerIdProto>,
}

/// `GetContainerStatusesResponseProto`: getContainerStatuses's response.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetContainerStatusesResponseProto {
    /// status: the containers' statuses.
    #[prost(message, repeated, tag = "1")]
    pub status: Vec<ContainerStatusProto>,
    /// failed_requests: containers with no status, with why.
    #[prost(message, repeated, tag = "2")]
    pub failed_requests: Vec<ContainerExceptionMapProto>,
}
