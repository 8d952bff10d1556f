//! YARN's records, package `hadoop.yarn`: yarn_protos.proto as in Hadoop
//! 3.4.1 (checked against the descriptors built into
//! hadoop-client-api-3.4.1.jar). Tokens are Security.proto's
//! `hadoop.common.TokenProto`, declared in `super::ipc`.

use super::ipc::TokenProto;

// ---------------------------------------------------------------- enums

/// `ResourceTypesProto`: how a resource type is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum ResourceTypesProto {
    /// COUNTABLE: a plain quantity.
    Countable = 0,
}

/// `ContainerStateProto`: a container's coarse state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum ContainerStateProto {
    /// C_NEW: allocated, not yet running.
    CNew = 1,
    /// C_RUNNING: running.
    CRunning = 2,
    /// C_COMPLETE: exited, killed or released.
    CComplete = 3,
}

/// `ContainerSubStateProto`: a container's fine-grained state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum ContainerSubStateProto {
    /// CSS_SCHEDULED: waiting to start on the node.
    CssScheduled = 1,
    /// CSS_RUNNING: running.
    CssRunning = 2,
    /// CSS_PAUSED: paused.
    CssPaused = 3,
    /// CSS_COMPLETING: exiting, being cleaned up.
    CssCompleting = 4,
    /// CSS_DONE: finished.
    CssDone = 5,
}

/// `YarnApplicationStateProto`: an application's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum YarnApplicationStateProto {
    /// NEW: just created.
    New = 1,
    /// NEW_SAVING: being stored.
    NewSaving = 2,
    /// SUBMITTED: submitted to the scheduler.
    Submitted = 3,
    /// ACCEPTED: accepted, waiting for its AM to run.
    Accepted = 4,
    /// RUNNING: its AM has registered.
    Running = 5,
    /// FINISHED: its AM unregistered.
    Finished = 6,
    /// FAILED: failed.
    Failed = 7,
    /// KILLED: killed.
    Killed = 8,
}

/// `YarnApplicationAttemptStateProto`: an application attempt's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum YarnApplicationAttemptStateProto {
    /// APP_ATTEMPT_NEW: just created.
    AppAttemptNew = 1,
    /// APP_ATTEMPT_SUBMITTED: submitted to the scheduler.
    AppAttemptSubmitted = 2,
    /// APP_ATTEMPT_SCHEDULED: its AM container is asked for.
    AppAttemptScheduled = 3,
    /// APP_ATTEMPT_ALLOCATED_SAVING: AM container allocated, being stored.
    AppAttemptAllocatedSaving = 4,
    /// APP_ATTEMPT_ALLOCATED: AM container allocated.
    AppAttemptAllocated = 5,
    /// APP_ATTEMPT_LAUNCHED: AM container launched.
    AppAttemptLaunched = 6,
    /// APP_ATTEMPT_FAILED: failed.
    AppAttemptFailed = 7,
    /// APP_ATTEMPT_RUNNING: its AM has registered.
    AppAttemptRunning = 8,
    /// APP_ATTEMPT_FINISHING: its AM unregistered, container still up.
    AppAttemptFinishing = 9,
    /// APP_ATTEMPT_FINISHED: finished.
    AppAttemptFinished = 10,
    /// APP_ATTEMPT_KILLED: killed.
    AppAttemptKilled = 11,
}

/// `FinalApplicationStatusProto`: the outcome an AM reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum FinalApplicationStatusProto {
    /// APP_UNDEFINED: not finished yet.
    AppUndefined = 0,
    /// APP_SUCCEEDED: succeeded.
    AppSucceeded = 1,
    /// APP_FAILED: failed.
    AppFailed = 2,
    /// APP_KILLED: killed.
    AppKilled = 3,
    /// APP_ENDED: ended (long-running services).
    AppEnded = 4,
}

/// `LocalResourceVisibilityProto`: who may share a localized resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum LocalResourceVisibilityProto {
    /// PUBLIC: all users of the node.
    Public = 1,
    /// PRIVATE: the same user.
    Private = 2,
    /// APPLICATION: the same application.
    Application = 3,
}

/// `LocalResourceTypeProto`: how a resource is localized.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum LocalResourceTypeProto {
    /// ARCHIVE: unpacked into a directory.
    Archive = 1,
    /// FILE: copied as is.
    File = 2,
    /// PATTERN: a jar whose entries matching `pattern` are unpacked.
    Pattern = 3,
}

/// `LogAggregationStatusProto`: how an application's log upload went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum LogAggregationStatusProto {
    /// LOG_DISABLED: log aggregation is off.
    LogDisabled = 1,
    /// LOG_NOT_START: not started.
    LogNotStart = 2,
    /// LOG_RUNNING: in progress.
    LogRunning = 3,
    /// LOG_SUCCEEDED: done.
    LogSucceeded = 4,
    /// LOG_FAILED: failed.
    LogFailed = 5,
    /// LOG_TIME_OUT: timed out.
    LogTimeOut = 6,
    /// LOG_RUNNING_WITH_FAILURE: in progress, some nodes failed.
    LogRunningWithFailure = 7,
}

/// `NodeStateProto`: a node's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum NodeStateProto {
    /// NS_NEW: just registered.
    NsNew = 1,
    /// NS_RUNNING: healthy and in use.
    NsRunning = 2,
    /// NS_UNHEALTHY: failed its health check.
    NsUnhealthy = 3,
    /// NS_DECOMMISSIONED: removed from service.
    NsDecommissioned = 4,
    /// NS_LOST: stopped heartbeating.
    NsLost = 5,
    /// NS_REBOOTED: restarted.
    NsRebooted = 6,
    /// NS_DECOMMISSIONING: being drained.
    NsDecommissioning = 7,
    /// NS_SHUTDOWN: shut down cleanly.
    NsShutdown = 8,
}

/// `NodeUpdateTypeProto`: why a node appears in `updated_nodes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum NodeUpdateTypeProto {
    /// NODE_USABLE: became usable.
    NodeUsable = 0,
    /// NODE_UNUSABLE: became unusable.
    NodeUnusable = 1,
    /// NODE_DECOMMISSIONING: is being drained.
    NodeDecommissioning = 2,
}

/// `NodeAttributeTypeProto`: a node attribute's value type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum NodeAttributeTypeProto {
    /// STRING: a string value.
    String = 1,
}

/// `ContainerTypeProto`: what a container is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum ContainerTypeProto {
    /// APPLICATION_MASTER: an application's AM.
    ApplicationMaster = 1,
    /// TASK: any other container.
    Task = 2,
}

/// `ExecutionTypeProto`: whether a container may be preempted by design.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum ExecutionTypeProto {
    /// GUARANTEED: a normal container.
    Guaranteed = 1,
    /// OPPORTUNISTIC: runs on spare capacity, may be killed.
    Opportunistic = 2,
}

/// `AMCommandProto`: an order from the RM to an AM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum AMCommandProto {
    /// AM_RESYNC: re-register and resend all asks.
    AmResync = 1,
    /// AM_SHUTDOWN: shut down.
    AmShutdown = 2,
}

/// `ApplicationTimeoutTypeProto`: which timeout of an application.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum ApplicationTimeoutTypeProto {
    /// APP_TIMEOUT_LIFETIME: the application's lifetime.
    AppTimeoutLifetime = 1,
}

/// `ApplicationAccessTypeProto`: an application ACL's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum ApplicationAccessTypeProto {
    /// APPACCESS_VIEW_APP: may view the application.
    AppaccessViewApp = 1,
    /// APPACCESS_MODIFY_APP: may modify (kill) the application.
    AppaccessModifyApp = 2,
}

/// `QueueStateProto`: a queue's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum QueueStateProto {
    /// Q_STOPPED: accepts no applications.
    QStopped = 1,
    /// Q_RUNNING: accepts applications.
    QRunning = 2,
    /// Q_DRAINING: runs its applications, accepts no new ones.
    QDraining = 3,
}

/// `QueueACLProto`: a queue permission.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum QueueACLProto {
    /// QACL_SUBMIT_APPLICATIONS: may submit.
    QaclSubmitApplications = 1,
    /// QACL_ADMINISTER_QUEUE: may administer.
    QaclAdministerQueue = 2,
}

/// `ContainerExitStatusProto`: the special container exit codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum ContainerExitStatusProto {
    /// SUCCESS: exited 0.
    Success = 0,
    /// INVALID: no exit status yet.
    Invalid = -1000,
    /// ABORTED: released or lost by the framework.
    Aborted = -100,
    /// DISKS_FAILED: the node's disks failed.
    DisksFailed = -101,
}

/// `ContainerRetryPolicyProto`: when the NM relaunches a failed container.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum ContainerRetryPolicyProto {
    /// NEVER_RETRY: never.
    NeverRetry = 0,
    /// RETRY_ON_ALL_ERRORS: on any failure.
    RetryOnAllErrors = 1,
    /// RETRY_ON_SPECIFIC_ERROR_CODES: on the listed exit codes.
    RetryOnSpecificErrorCodes = 2,
}

// ---------------------------------------------------------------- ids

/// `SerializedExceptionProto`: a Java exception carried in a response.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SerializedExceptionProto {
    /// message: the exception's message.
    #[prost(string, optional, tag = "1")]
    pub message: Option<String>,
    /// trace: the stack trace text.
    #[prost(string, optional, tag = "2")]
    pub trace: Option<String>,
    /// class_name: the Java class, instantiated by the client by reflection.
    #[prost(string, optional, tag = "3")]
    pub class_name: Option<String>,
    /// cause: the exception's cause.
    #[prost(message, optional, boxed, tag = "4")]
    pub cause: Option<Box<SerializedExceptionProto>>,
}

/// `ApplicationIdProto`: `application_<cluster_timestamp>_<id>`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ApplicationIdProto {
    /// id: the sequence number within the RM's run.
    #[prost(int32, optional, tag = "1")]
    pub id: Option<i32>,
    /// cluster_timestamp: the RM's start time, ms since the epoch.
    #[prost(int64, optional, tag = "2")]
    pub cluster_timestamp: Option<i64>,
}

/// `ApplicationAttemptIdProto`: an application and an attempt number.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ApplicationAttemptIdProto {
    /// application_id: the application.
    #[prost(message, optional, tag = "1")]
    pub application_id: Option<ApplicationIdProto>,
    /// attemptId: the attempt number, from 1.
    #[prost(int32, optional, tag = "2")]
    pub attempt_id: Option<i32>,
}

/// `ContainerIdProto`: an attempt and a container number.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ContainerIdProto {
    /// app_id: the application (kept for old readers).
    #[prost(message, optional, tag = "1")]
    pub app_id: Option<ApplicationIdProto>,
    /// app_attempt_id: the attempt.
    #[prost(message, optional, tag = "2")]
    pub app_attempt_id: Option<ApplicationAttemptIdProto>,
    /// id: the container number; the RM epoch is in the top 24 bits.
    #[prost(int64, optional, tag = "3")]
    pub id: Option<i64>,
}

/// `NodeIdProto`: a NodeManager's RPC address.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NodeIdProto {
    /// host: the node's host name.
    #[prost(string, optional, tag = "1")]
    pub host: Option<String>,
    /// port: the NM's RPC port.
    #[prost(int32, optional, tag = "2")]
    pub port: Option<i32>,
}

/// `PriorityProto`: a priority; its meaning is the application's.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PriorityProto {
    /// priority: the value.
    #[prost(int32, optional, tag = "1")]
    pub priority: Option<i32>,
}

/// `ReservationIdProto`: a reservation's id.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ReservationIdProto {
    /// id: the sequence number.
    #[prost(int64, optional, tag = "1")]
    pub id: Option<i64>,
    /// cluster_timestamp: the RM's start time, ms since the epoch.
    #[prost(int64, optional, tag = "2")]
    pub cluster_timestamp: Option<i64>,
}

// ---------------------------------------------------------------- maps

/// `StringStringMapProto`: one entry of a string map.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StringStringMapProto {
    /// key: the key.
    #[prost(string, optional, tag = "1")]
    pub key: Option<String>,
    /// value: the value.
    #[prost(string, optional, tag = "2")]
    pub value: Option<String>,
}

/// `StringBytesMapProto`: one entry of a string-to-bytes map.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StringBytesMapProto {
    /// key: the key.
    #[prost(string, optional, tag = "1")]
    pub key: Option<String>,
    /// value: the bytes.
    #[prost(bytes = "vec", optional, tag = "2")]
    pub value: Option<Vec<u8>>,
}

/// `StringLongMapProto`: one entry of a string-to-int64 map.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StringLongMapProto {
    /// key: the key.
    #[prost(string, required, tag = "1")]
    pub key: String,
    /// value: the value.
    #[prost(int64, required, tag = "2")]
    pub value: i64,
}

/// `StringFloatMapProto`: one entry of a string-to-float map.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StringFloatMapProto {
    /// key: the key.
    #[prost(string, required, tag = "1")]
    pub key: String,
    /// value: the value.
    #[prost(float, required, tag = "2")]
    pub value: f32,
}

/// `StringLocalResourceMapProto`: one entry of a CLC's local resources.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StringLocalResourceMapProto {
    /// key: the link name in the container's directory (may contain `/`).
    #[prost(string, optional, tag = "1")]
    pub key: Option<String>,
    /// value: the resource.
    #[prost(message, optional, tag = "2")]
    pub value: Option<LocalResourceProto>,
}

// ---------------------------------------------------------------- resources

/// `ResourceInformationProto`: one resource type's amount.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceInformationProto {
    /// key: the resource name, e.g. `memory-mb`, `vcores`, `yarn.io/gpu`.
    #[prost(string, required, tag = "1")]
    pub key: String,
    /// value: the amount, in `units`.
    #[prost(int64, optional, tag = "2")]
    pub value: Option<i64>,
    /// units: the unit, e.g. `Mi`, or empty.
    #[prost(string, optional, tag = "3")]
    pub units: Option<String>,
    /// type: how the resource is counted.
    #[prost(enumeration = "ResourceTypesProto", optional, tag = "4")]
    pub r#type: Option<i32>,
    /// tags: the resource type's tags.
    #[prost(string, repeated, tag = "5")]
    pub tags: Vec<String>,
    /// attributes: the resource type's attributes.
    #[prost(message, repeated, tag = "6")]
    pub attributes: Vec<StringStringMapProto>,
}

/// `ResourceTypeInfoProto`: a resource type the cluster knows.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceTypeInfoProto {
    /// name: the resource name.
    #[prost(string, required, tag = "1")]
    pub name: String,
    /// units: the default unit.
    #[prost(string, optional, tag = "2")]
    pub units: Option<String>,
    /// type: how the resource is counted.
    #[prost(enumeration = "ResourceTypesProto", optional, tag = "3")]
    pub r#type: Option<i32>,
}

/// `ResourceProto`: an amount of resources.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceProto {
    /// memory: memory in MB.
    #[prost(int64, optional, tag = "1")]
    pub memory: Option<i64>,
    /// virtual_cores: virtual cores.
    #[prost(int32, optional, tag = "2")]
    pub virtual_cores: Option<i32>,
    /// resource_value_map: every resource type's amount (custom types too).
    #[prost(message, repeated, tag = "3")]
    pub resource_value_map: Vec<ResourceInformationProto>,
}

/// `ResourceUtilizationProto`: what a node or its containers use.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceUtilizationProto {
    /// pmem: physical memory in MB.
    #[prost(int32, optional, tag = "1")]
    pub pmem: Option<i32>,
    /// vmem: virtual memory in MB.
    #[prost(int32, optional, tag = "2")]
    pub vmem: Option<i32>,
    /// cpu: CPU use, in vcores.
    #[prost(float, optional, tag = "3")]
    pub cpu: Option<f32>,
    /// customResources: use of custom resource types.
    #[prost(message, repeated, tag = "4")]
    pub custom_resources: Vec<StringFloatMapProto>,
}

/// `ResourceProfileEntry`: one named resource profile.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceProfileEntry {
    /// name: the profile's name.
    #[prost(string, required, tag = "1")]
    pub name: String,
    /// resources: the profile's resources.
    #[prost(message, required, tag = "2")]
    pub resources: ResourceProto,
}

/// `ResourceProfilesProto`: the cluster's resource profiles.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceProfilesProto {
    /// resource_profiles_map: the profiles.
    #[prost(message, repeated, tag = "1")]
    pub resource_profiles_map: Vec<ResourceProfileEntry>,
}

// ---------------------------------------------------------------- containers

/// `ContainerProto`: an allocated container, as the RM hands it to the AM.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ContainerProto {
    /// id: the container's id.
    #[prost(message, optional, tag = "1")]
    pub id: Option<ContainerIdProto>,
    /// nodeId: the node, with the NM's RPC port.
    #[prost(message, optional, tag = "2")]
    pub node_id: Option<NodeIdProto>,
    /// node_http_address: the NM's web address, `host:port`.
    #[prost(string, optional, tag = "3")]
    pub node_http_address: Option<String>,
    /// resource: the container's resources.
    #[prost(message, optional, tag = "4")]
    pub resource: Option<ResourceProto>,
    /// priority: the priority of the ask it satisfies.
    #[prost(message, optional, tag = "5")]
    pub priority: Option<PriorityProto>,
    /// container_token: the token the AM presents to the NM to start it.
    #[prost(message, optional, tag = "6")]
    pub container_token: Option<TokenProto>,
    /// execution_type: guaranteed or opportunistic.
    #[prost(
        enumeration = "ExecutionTypeProto",
        optional,
        tag = "7",
        default = "Guaranteed"
    )]
    pub execution_type: Option<i32>,
    /// allocation_request_id: the id of the ask it satisfies; -1 when unset.
    #[prost(int64, optional, tag = "8", default = "-1")]
    pub allocation_request_id: Option<i64>,
    /// version: the container's update version.
    #[prost(int32, optional, tag = "9", default = "0")]
    pub version: Option<i32>,
    /// allocation_tags: the scheduling request's allocation tags.
    #[prost(string, repeated, tag = "10")]
    pub allocation_tags: Vec<String>,
    /// exposed_ports: a Docker container's exposed ports, as JSON.
    #[prost(string, optional, tag = "11")]
    pub exposed_ports: Option<String>,
}

/// `ContainerStatusProto`: a container's state and exit status.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ContainerStatusProto {
    /// container_id: the container.
    #[prost(message, optional, tag = "1")]
    pub container_id: Option<ContainerIdProto>,
    /// state: new, running or complete.
    #[prost(enumeration = "ContainerStateProto", optional, tag = "2")]
    pub state: Option<i32>,
    /// diagnostics: why it ended; "N/A" when unset.
    #[prost(string, optional, tag = "3", default = "N/A")]
    pub diagnostics: Option<String>,
    /// exit_status: the exit code or a ContainerExitStatus; -1000 when unset.
    #[prost(int32, optional, tag = "4", default = "-1000")]
    pub exit_status: Option<i32>,
    /// capability: the container's resources.
    #[prost(message, optional, tag = "5")]
    pub capability: Option<ResourceProto>,
    /// executionType: guaranteed or opportunistic.
    #[prost(
        enumeration = "ExecutionTypeProto",
        optional,
        tag = "6",
        default = "Guaranteed"
    )]
    pub execution_type: Option<i32>,
    /// container_attributes: extra attributes (e.g. its IPs and host name).
    #[prost(message, repeated, tag = "7")]
    pub container_attributes: Vec<StringStringMapProto>,
    /// container_sub_state: the fine-grained state.
    #[prost(enumeration = "ContainerSubStateProto", optional, tag = "8")]
    pub container_sub_state: Option<i32>,
}

/// `ContainerReportProto`: a container's history, for reports.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ContainerReportProto {
    /// container_id: the container.
    #[prost(message, optional, tag = "1")]
    pub container_id: Option<ContainerIdProto>,
    /// resource: its resources.
    #[prost(message, optional, tag = "2")]
    pub resource: Option<ResourceProto>,
    /// node_id: its node.
    #[prost(message, optional, tag = "3")]
    pub node_id: Option<NodeIdProto>,
    /// priority: its priority.
    #[prost(message, optional, tag = "4")]
    pub priority: Option<PriorityProto>,
    /// creation_time: ms since the epoch.
    #[prost(int64, optional, tag = "5")]
    pub creation_time: Option<i64>,
    /// finish_time: ms since the epoch; 0 while running.
    #[prost(int64, optional, tag = "6")]
    pub finish_time: Option<i64>,
    /// diagnostics_info: diagnostics; "N/A" when unset.
    #[prost(string, optional, tag = "7", default = "N/A")]
    pub diagnostics_info: Option<String>,
    /// log_url: the URL of its logs.
    #[prost(string, optional, tag = "8")]
    pub log_url: Option<String>,
    /// container_exit_status: its exit status.
    #[prost(int32, optional, tag = "9")]
    pub container_exit_status: Option<i32>,
    /// container_state: new, running or complete.
    #[prost(enumeration = "ContainerStateProto", optional, tag = "10")]
    pub container_state: Option<i32>,
    /// node_http_address: the NM's web address.
    #[prost(string, optional, tag = "11")]
    pub node_http_address: Option<String>,
    /// executionType: guaranteed or opportunistic.
    #[prost(
        enumeration = "ExecutionTypeProto",
        optional,
        tag = "12",
        default = "Guaranteed"
    )]
    pub execution_type: Option<i32>,
    /// exposed_ports: a Docker container's exposed ports, as JSON.
    #[prost(string, optional, tag = "13")]
    pub exposed_ports: Option<String>,
}

/// `ContainerRetryContextProto`: when and how often the NM relaunches.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ContainerRetryContextProto {
    /// retry_policy: when to retry.
    #[prost(
        enumeration = "ContainerRetryPolicyProto",
        optional,
        tag = "1",
        default = "NeverRetry"
    )]
    pub retry_policy: Option<i32>,
    /// error_codes: the exit codes that allow a retry.
    #[prost(int32, repeated, packed = "false", tag = "2")]
    pub error_codes: Vec<i32>,
    /// max_retries: the most retries.
    #[prost(int32, optional, tag = "3", default = "0")]
    pub max_retries: Option<i32>,
    /// retry_interval: the pause between retries, in ms.
    #[prost(int32, optional, tag = "4", default = "0")]
    pub retry_interval: Option<i32>,
    /// failures_validity_interval: the window failures count in, in ms; -1 for all.
    #[prost(int64, optional, tag = "5", default = "-1")]
    pub failures_validity_interval: Option<i64>,
}

// ---------------------------------------------------------------- launch contexts

/// `URLProto`: a local resource's location.
#[derive(Clone, PartialEq, prost::Message)]
pub struct URLProto {
    /// scheme: e.g. `file` or `hdfs`.
    #[prost(string, optional, tag = "1")]
    pub scheme: Option<String>,
    /// host: the host, if any.
    #[prost(string, optional, tag = "2")]
    pub host: Option<String>,
    /// port: the port; -1 when none.
    #[prost(int32, optional, tag = "3")]
    pub port: Option<i32>,
    /// file: the path.
    #[prost(string, optional, tag = "4")]
    pub file: Option<String>,
    /// userInfo: the URL's user info, if any.
    #[prost(string, optional, tag = "5")]
    pub user_info: Option<String>,
}

/// `LocalResourceProto`: a file the NM must localize for a container.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LocalResourceProto {
    /// resource: where it is.
    #[prost(message, optional, tag = "1")]
    pub resource: Option<URLProto>,
    /// size: its size in bytes.
    #[prost(int64, optional, tag = "2")]
    pub size: Option<i64>,
    /// timestamp: its modification time, ms since the epoch; must match.
    #[prost(int64, optional, tag = "3")]
    pub timestamp: Option<i64>,
    /// type: archive, file or pattern.
    #[prost(enumeration = "LocalResourceTypeProto", optional, tag = "4")]
    pub r#type: Option<i32>,
    /// visibility: public, private or application.
    #[prost(enumeration = "LocalResourceVisibilityProto", optional, tag = "5")]
    pub visibility: Option<i32>,
    /// pattern: for PATTERN, the entries to unpack.
    #[prost(string, optional, tag = "6")]
    pub pattern: Option<String>,
    /// should_be_uploaded_to_shared_cache: upload it to the shared cache.
    #[prost(bool, optional, tag = "7")]
    pub should_be_uploaded_to_shared_cache: Option<bool>,
}

/// `ApplicationACLMapProto`: one application ACL.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ApplicationACLMapProto {
    /// accessType: view or modify.
    #[prost(enumeration = "ApplicationAccessTypeProto", optional, tag = "1")]
    pub access_type: Option<i32>,
    /// acl: the ACL string; a single space (nobody) when unset.
    #[prost(string, optional, tag = "2", default = " ")]
    pub acl: Option<String>,
}

/// `ContainerLaunchContextProto`: what to run in a container.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ContainerLaunchContextProto {
    /// localResources: files to localize, by link name.
    #[prost(message, repeated, tag = "1")]
    pub local_resources: Vec<StringLocalResourceMapProto>,
    /// tokens: the container's credentials, Hadoop `HDTS` format.
    #[prost(bytes = "vec", optional, tag = "2")]
    pub tokens: Option<Vec<u8>>,
    /// service_data: data for the NM's auxiliary services, by service name.
    #[prost(message, repeated, tag = "3")]
    pub service_data: Vec<StringBytesMapProto>,
    /// environment: environment variables.
    #[prost(message, repeated, tag = "4")]
    pub environment: Vec<StringStringMapProto>,
    /// command: the command's parts, joined by spaces into one shell line.
    #[prost(string, repeated, tag = "5")]
    pub command: Vec<String>,
    /// application_ACLs: the application's ACLs.
    #[prost(message, repeated, tag = "6")]
    pub application_acls: Vec<ApplicationACLMapProto>,
    /// container_retry_context: relaunch policy.
    #[prost(message, optional, tag = "7")]
    pub container_retry_context: Option<ContainerRetryContextProto>,
    /// tokens_conf: configuration for token renewal, serialized.
    #[prost(bytes = "vec", optional, tag = "8")]
    pub tokens_conf: Option<Vec<u8>>,
}

/// `LogAggregationContextProto`: which logs to upload.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LogAggregationContextProto {
    /// include_pattern: log files to include; ".*" when unset.
    #[prost(string, optional, tag = "1", default = ".*")]
    pub include_pattern: Option<String>,
    /// exclude_pattern: log files to exclude; "" when unset.
    #[prost(string, optional, tag = "2", default = "")]
    pub exclude_pattern: Option<String>,
    /// rolled_logs_include_pattern: rolled logs to include; "" when unset.
    #[prost(string, optional, tag = "3", default = "")]
    pub rolled_logs_include_pattern: Option<String>,
    /// rolled_logs_exclude_pattern: rolled logs to exclude; ".*" when unset.
    #[prost(string, optional, tag = "4", default = ".*")]
    pub rolled_logs_exclude_pattern: Option<String>,
    /// log_aggregation_policy_class_name: the policy's Java class.
    #[prost(string, optional, tag = "5")]
    pub log_aggregation_policy_class_name: Option<String>,
    /// log_aggregation_policy_parameters: the policy's parameters.
    #[prost(string, optional, tag = "6")]
    pub log_aggregation_policy_parameters: Option<String>,
}

// ---------------------------------------------------------------- asks

/// `ExecutionTypeRequestProto`: the execution type an ask wants.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExecutionTypeRequestProto {
    /// execution_type: guaranteed or opportunistic.
    #[prost(
        enumeration = "ExecutionTypeProto",
        optional,
        tag = "1",
        default = "Guaranteed"
    )]
    pub execution_type: Option<i32>,
    /// enforce_execution_type: only that type will do.
    #[prost(bool, optional, tag = "2", default = "false")]
    pub enforce_execution_type: Option<bool>,
}

/// `ResourceRequestProto`: an AM's ask; the absolute count for its key.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceRequestProto {
    /// priority: the ask's priority.
    #[prost(message, optional, tag = "1")]
    pub priority: Option<PriorityProto>,
    /// resource_name: a host, a rack or `*`.
    #[prost(string, optional, tag = "2")]
    pub resource_name: Option<String>,
    /// capability: each container's resources.
    #[prost(message, optional, tag = "3")]
    pub capability: Option<ResourceProto>,
    /// num_containers: how many containers are outstanding.
    #[prost(int32, optional, tag = "4")]
    pub num_containers: Option<i32>,
    /// relax_locality: may fall back to other nodes or racks; true when unset.
    #[prost(bool, optional, tag = "5", default = "true")]
    pub relax_locality: Option<bool>,
    /// node_label_expression: the node label the containers need.
    #[prost(string, optional, tag = "6")]
    pub node_label_expression: Option<String>,
    /// execution_type_request: the execution type wanted.
    #[prost(message, optional, tag = "7")]
    pub execution_type_request: Option<ExecutionTypeRequestProto>,
    /// allocation_request_id: the AM's id for the ask; -1 when unset.
    #[prost(int64, optional, tag = "8", default = "-1")]
    pub allocation_request_id: Option<i64>,
}

/// `ResourceBlacklistRequestProto`: changes to an AM's node blacklist.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceBlacklistRequestProto {
    /// blacklist_additions: hosts or racks to avoid.
    #[prost(string, repeated, tag = "1")]
    pub blacklist_additions: Vec<String>,
    /// blacklist_removals: hosts or racks no longer to avoid.
    #[prost(string, repeated, tag = "2")]
    pub blacklist_removals: Vec<String>,
}

/// `PreemptionContainerProto`: a container the RM will preempt.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PreemptionContainerProto {
    /// id: the container.
    #[prost(message, optional, tag = "1")]
    pub id: Option<ContainerIdProto>,
}

/// `PreemptionResourceRequestProto`: resources the RM wants back.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PreemptionResourceRequestProto {
    /// resource: the resources, as an ask.
    #[prost(message, optional, tag = "1")]
    pub resource: Option<ResourceRequestProto>,
}

/// `StrictPreemptionContractProto`: containers that will be preempted.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StrictPreemptionContractProto {
    /// container: the containers.
    #[prost(message, repeated, tag = "1")]
    pub container: Vec<PreemptionContainerProto>,
}

/// `PreemptionContractProto`: resources the AM may give back its own way.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PreemptionContractProto {
    /// resource: the resources wanted.
    #[prost(message, repeated, tag = "1")]
    pub resource: Vec<PreemptionResourceRequestProto>,
    /// container: the containers that would be taken otherwise.
    #[prost(message, repeated, tag = "2")]
    pub container: Vec<PreemptionContainerProto>,
}

/// `PreemptionMessageProto`: the RM's preemption notice to an AM.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PreemptionMessageProto {
    /// strictContract: containers that will be preempted.
    #[prost(message, optional, tag = "1")]
    pub strict_contract: Option<StrictPreemptionContractProto>,
    /// contract: resources the AM may give back its own way.
    #[prost(message, optional, tag = "2")]
    pub contract: Option<PreemptionContractProto>,
}

/// `CollectorInfoProto`: the timeline collector of an application.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CollectorInfoProto {
    /// collector_addr: the collector's address.
    #[prost(string, optional, tag = "1")]
    pub collector_addr: Option<String>,
    /// collector_token: the token for the collector.
    #[prost(message, optional, tag = "2")]
    pub collector_token: Option<TokenProto>,
}

// ---------------------------------------------------------------- submission

/// `ApplicationTimeoutMapProto`: one timeout of a submitted application.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ApplicationTimeoutMapProto {
    /// application_timeout_type: which timeout.
    #[prost(enumeration = "ApplicationTimeoutTypeProto", optional, tag = "1")]
    pub application_timeout_type: Option<i32>,
    /// timeout: the timeout in seconds.
    #[prost(int64, optional, tag = "2")]
    pub timeout: Option<i64>,
}

/// `ApplicationSubmissionContextProto`: what a client submits.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ApplicationSubmissionContextProto {
    /// application_id: the id from getNewApplication.
    #[prost(message, optional, tag = "1")]
    pub application_id: Option<ApplicationIdProto>,
    /// application_name: the name; "N/A" when unset.
    #[prost(string, optional, tag = "2", default = "N/A")]
    pub application_name: Option<String>,
    /// queue: the queue; "default" when unset.
    #[prost(string, optional, tag = "3", default = "default")]
    pub queue: Option<String>,
    /// priority: the application's priority.
    #[prost(message, optional, tag = "4")]
    pub priority: Option<PriorityProto>,
    /// am_container_spec: the AM's launch context.
    #[prost(message, optional, tag = "5")]
    pub am_container_spec: Option<ContainerLaunchContextProto>,
    /// cancel_tokens_when_complete: cancel delegation tokens at the end; true when unset.
    #[prost(bool, optional, tag = "6", default = "true")]
    pub cancel_tokens_when_complete: Option<bool>,
    /// unmanaged_am: the AM runs outside the cluster.
    #[prost(bool, optional, tag = "7", default = "false")]
    pub unmanaged_am: Option<bool>,
    /// maxAppAttempts: the most AM attempts; 0 for the cluster default.
    #[prost(int32, optional, tag = "8", default = "0")]
    pub max_app_attempts: Option<i32>,
    /// resource: the AM container's resources.
    #[prost(message, optional, tag = "9")]
    pub resource: Option<ResourceProto>,
    /// applicationType: e.g. `SPARK`; "YARN" when unset.
    #[prost(string, optional, tag = "10", default = "YARN")]
    pub application_type: Option<String>,
    /// keep_containers_across_application_attempts: keep containers when the AM restarts.
    #[prost(bool, optional, tag = "11", default = "false")]
    pub keep_containers_across_application_attempts: Option<bool>,
    /// applicationTags: free-form tags.
    #[prost(string, repeated, tag = "12")]
    pub application_tags: Vec<String>,
    /// attempt_failures_validity_interval: the window AM failures count in, in ms; -1 for all.
    #[prost(int64, optional, tag = "13", default = "-1")]
    pub attempt_failures_validity_interval: Option<i64>,
    /// log_aggregation_context: which logs to upload.
    #[prost(message, optional, tag = "14")]
    pub log_aggregation_context: Option<LogAggregationContextProto>,
    /// reservation_id: the reservation to run in.
    #[prost(message, optional, tag = "15")]
    pub reservation_id: Option<ReservationIdProto>,
    /// node_label_expression: the node label for all containers.
    #[prost(string, optional, tag = "16")]
    pub node_label_expression: Option<String>,
    /// am_container_resource_request: the AM's asks (instead of `resource`).
    #[prost(message, repeated, tag = "17")]
    pub am_container_resource_request: Vec<ResourceRequestProto>,
    /// application_timeouts: the application's timeouts.
    #[prost(message, repeated, tag = "18")]
    pub application_timeouts: Vec<ApplicationTimeoutMapProto>,
    /// application_scheduling_properties: scheduler-specific properties.
    #[prost(message, repeated, tag = "19")]
    pub application_scheduling_properties: Vec<StringStringMapProto>,
}

// ---------------------------------------------------------------- reports

/// `ApplicationResourceUsageReportProto`: what an application uses.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ApplicationResourceUsageReportProto {
    /// num_used_containers: running containers.
    #[prost(int32, optional, tag = "1")]
    pub num_used_containers: Option<i32>,
    /// num_reserved_containers: reserved containers.
    #[prost(int32, optional, tag = "2")]
    pub num_reserved_containers: Option<i32>,
    /// used_resources: resources in use.
    #[prost(message, optional, tag = "3")]
    pub used_resources: Option<ResourceProto>,
    /// reserved_resources: resources reserved.
    #[prost(message, optional, tag = "4")]
    pub reserved_resources: Option<ResourceProto>,
    /// needed_resources: used plus reserved.
    #[prost(message, optional, tag = "5")]
    pub needed_resources: Option<ResourceProto>,
    /// memory_seconds: MB-seconds used.
    #[prost(int64, optional, tag = "6")]
    pub memory_seconds: Option<i64>,
    /// vcore_seconds: vcore-seconds used.
    #[prost(int64, optional, tag = "7")]
    pub vcore_seconds: Option<i64>,
    /// queue_usage_percentage: share of its queue, in percent.
    #[prost(float, optional, tag = "8")]
    pub queue_usage_percentage: Option<f32>,
    /// cluster_usage_percentage: share of the cluster, in percent.
    #[prost(float, optional, tag = "9")]
    pub cluster_usage_percentage: Option<f32>,
    /// preempted_memory_seconds: MB-seconds preempted.
    #[prost(int64, optional, tag = "10")]
    pub preempted_memory_seconds: Option<i64>,
    /// preempted_vcore_seconds: vcore-seconds preempted.
    #[prost(int64, optional, tag = "11")]
    pub preempted_vcore_seconds: Option<i64>,
    /// application_resource_usage_map: resource-seconds used, per resource type.
    #[prost(message, repeated, tag = "12")]
    pub application_resource_usage_map: Vec<StringLongMapProto>,
    /// application_preempted_resource_usage_map: resource-seconds preempted, per type.
    #[prost(message, repeated, tag = "13")]
    pub application_preempted_resource_usage_map: Vec<StringLongMapProto>,
}

/// `ApplicationTimeoutProto`: one timeout of a running application.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ApplicationTimeoutProto {
    /// application_timeout_type: which timeout.
    #[prost(enumeration = "ApplicationTimeoutTypeProto", required, tag = "1")]
    pub application_timeout_type: i32,
    /// expire_time: when it expires, ISO 8601, or "UNLIMITED".
    #[prost(string, optional, tag = "2")]
    pub expire_time: Option<String>,
    /// remaining_time: seconds left.
    #[prost(int64, optional, tag = "3")]
    pub remaining_time: Option<i64>,
}

/// `AppTimeoutsMapProto`: one entry of a report's timeouts.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AppTimeoutsMapProto {
    /// application_timeout_type: which timeout.
    #[prost(enumeration = "ApplicationTimeoutTypeProto", optional, tag = "1")]
    pub application_timeout_type: Option<i32>,
    /// application_timeout: the timeout.
    #[prost(message, optional, tag = "2")]
    pub application_timeout: Option<ApplicationTimeoutProto>,
}

/// `ApplicationReportProto`: an application as clients see it.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ApplicationReportProto {
    /// applicationId: the application.
    #[prost(message, optional, tag = "1")]
    pub application_id: Option<ApplicationIdProto>,
    /// user: the submitter.
    #[prost(string, optional, tag = "2")]
    pub user: Option<String>,
    /// queue: the queue.
    #[prost(string, optional, tag = "3")]
    pub queue: Option<String>,
    /// name: the application's name.
    #[prost(string, optional, tag = "4")]
    pub name: Option<String>,
    /// host: the AM's host, once registered.
    #[prost(string, optional, tag = "5")]
    pub host: Option<String>,
    /// rpc_port: the AM's RPC port, once registered.
    #[prost(int32, optional, tag = "6")]
    pub rpc_port: Option<i32>,
    /// client_to_am_token: the token for talking to the AM.
    #[prost(message, optional, tag = "7")]
    pub client_to_am_token: Option<TokenProto>,
    /// yarn_application_state: the state.
    #[prost(enumeration = "YarnApplicationStateProto", optional, tag = "8")]
    pub yarn_application_state: Option<i32>,
    /// trackingUrl: the AM's tracking URL.
    #[prost(string, optional, tag = "9")]
    pub tracking_url: Option<String>,
    /// diagnostics: diagnostics; "N/A" when unset.
    #[prost(string, optional, tag = "10", default = "N/A")]
    pub diagnostics: Option<String>,
    /// startTime: ms since the epoch.
    #[prost(int64, optional, tag = "11")]
    pub start_time: Option<i64>,
    /// finishTime: ms since the epoch; 0 while running.
    #[prost(int64, optional, tag = "12")]
    pub finish_time: Option<i64>,
    /// final_application_status: the outcome the AM reported.
    #[prost(enumeration = "FinalApplicationStatusProto", optional, tag = "13")]
    pub final_application_status: Option<i32>,
    /// app_resource_Usage: what the application uses.
    #[prost(message, optional, tag = "14")]
    pub app_resource_usage: Option<ApplicationResourceUsageReportProto>,
    /// originalTrackingUrl: the AM's tracking URL, not proxied.
    #[prost(string, optional, tag = "15")]
    pub original_tracking_url: Option<String>,
    /// currentApplicationAttemptId: the current attempt.
    #[prost(message, optional, tag = "16")]
    pub current_application_attempt_id: Option<ApplicationAttemptIdProto>,
    /// progress: from 0 to 1.
    #[prost(float, optional, tag = "17")]
    pub progress: Option<f32>,
    /// applicationType: e.g. `SPARK`.
    #[prost(string, optional, tag = "18")]
    pub application_type: Option<String>,
    /// am_rm_token: the AMRMToken, for unmanaged AMs.
    #[prost(message, optional, tag = "19")]
    pub am_rm_token: Option<TokenProto>,
    /// applicationTags: free-form tags.
    #[prost(string, repeated, tag = "20")]
    pub application_tags: Vec<String>,
    /// log_aggregation_status: how the log upload went.
    #[prost(enumeration = "LogAggregationStatusProto", optional, tag = "21")]
    pub log_aggregation_status: Option<i32>,
    /// unmanaged_application: its AM runs outside the cluster.
    #[prost(bool, optional, tag = "22", default = "false")]
    pub unmanaged_application: Option<bool>,
    /// priority: the application's priority.
    #[prost(message, optional, tag = "23")]
    pub priority: Option<PriorityProto>,
    /// appNodeLabelExpression: the application's node label.
    #[prost(string, optional, tag = "24")]
    pub app_node_label_expression: Option<String>,
    /// amNodeLabelExpression: the AM container's node label.
    #[prost(string, optional, tag = "25")]
    pub am_node_label_expression: Option<String>,
    /// appTimeouts: the application's timeouts.
    #[prost(message, repeated, tag = "26")]
    pub app_timeouts: Vec<AppTimeoutsMapProto>,
    /// launchTime: when the AM was launched, ms since the epoch.
    #[prost(int64, optional, tag = "27")]
    pub launch_time: Option<i64>,
    /// submitTime: when it was submitted, ms since the epoch.
    #[prost(int64, optional, tag = "28")]
    pub submit_time: Option<i64>,
    /// rmClusterId: the RM cluster's id.
    #[prost(string, optional, tag = "29")]
    pub rm_cluster_id: Option<String>,
}

/// `ApplicationAttemptReportProto`: an attempt as clients see it.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ApplicationAttemptReportProto {
    /// application_attempt_id: the attempt.
    #[prost(message, optional, tag = "1")]
    pub application_attempt_id: Option<ApplicationAttemptIdProto>,
    /// host: the AM's host.
    #[prost(string, optional, tag = "2")]
    pub host: Option<String>,
    /// rpc_port: the AM's RPC port.
    #[prost(int32, optional, tag = "3")]
    pub rpc_port: Option<i32>,
    /// tracking_url: the AM's tracking URL.
    #[prost(string, optional, tag = "4")]
    pub tracking_url: Option<String>,
    /// diagnostics: diagnostics; "N/A" when unset.
    #[prost(string, optional, tag = "5", default = "N/A")]
    pub diagnostics: Option<String>,
    /// yarn_application_attempt_state: the state.
    #[prost(enumeration = "YarnApplicationAttemptStateProto", optional, tag = "6")]
    pub yarn_application_attempt_state: Option<i32>,
    /// am_container_id: the AM's container.
    #[prost(message, optional, tag = "7")]
    pub am_container_id: Option<ContainerIdProto>,
    /// original_tracking_url: the AM's tracking URL, not proxied.
    #[prost(string, optional, tag = "8")]
    pub original_tracking_url: Option<String>,
    /// startTime: ms since the epoch.
    #[prost(int64, optional, tag = "9")]
    pub start_time: Option<i64>,
    /// finishTime: ms since the epoch; 0 while running.
    #[prost(int64, optional, tag = "10")]
    pub finish_time: Option<i64>,
}

// ---------------------------------------------------------------- nodes

/// `NodeAttributeKeyProto`: a node attribute's name.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NodeAttributeKeyProto {
    /// attributePrefix: the namespace; "rm.yarn.io" when unset.
    #[prost(string, optional, tag = "1", default = "rm.yarn.io")]
    pub attribute_prefix: Option<String>,
    /// attributeName: the name.
    #[prost(string, required, tag = "2")]
    pub attribute_name: String,
}

/// `NodeAttributeProto`: one attribute of a node.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NodeAttributeProto {
    /// attributeKey: the name.
    #[prost(message, required, tag = "1")]
    pub attribute_key: NodeAttributeKeyProto,
    /// attributeType: the value's type; STRING when unset.
    #[prost(
        enumeration = "NodeAttributeTypeProto",
        optional,
        tag = "2",
        default = "String"
    )]
    pub attribute_type: Option<i32>,
    /// attributeValue: the value; "" when unset.
    #[prost(string, optional, tag = "3", default = "")]
    pub attribute_value: Option<String>,
}

/// `NodeReportProto`: a node as clients and AMs see it.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NodeReportProto {
    /// nodeId: the node.
    #[prost(message, optional, tag = "1")]
    pub node_id: Option<NodeIdProto>,
    /// httpAddress: the NM's web address, `host:port`.
    #[prost(string, optional, tag = "2")]
    pub http_address: Option<String>,
    /// rackName: the node's rack, e.g. `/default-rack`.
    #[prost(string, optional, tag = "3")]
    pub rack_name: Option<String>,
    /// used: resources in use.
    #[prost(message, optional, tag = "4")]
    pub used: Option<ResourceProto>,
    /// capability: the node's total resources.
    #[prost(message, optional, tag = "5")]
    pub capability: Option<ResourceProto>,
    /// numContainers: running containers.
    #[prost(int32, optional, tag = "6")]
    pub num_containers: Option<i32>,
    /// node_state: the node's state.
    #[prost(enumeration = "NodeStateProto", optional, tag = "7")]
    pub node_state: Option<i32>,
    /// health_report: the health check's output.
    #[prost(string, optional, tag = "8")]
    pub health_report: Option<String>,
    /// last_health_report_time: ms since the epoch.
    #[prost(int64, optional, tag = "9")]
    pub last_health_report_time: Option<i64>,
    /// node_labels: the node's labels.
    #[prost(string, repeated, tag = "10")]
    pub node_labels: Vec<String>,
    /// containers_utilization: what its containers use.
    #[prost(message, optional, tag = "11")]
    pub containers_utilization: Option<ResourceUtilizationProto>,
    /// node_utilization: what the whole node uses.
    #[prost(message, optional, tag = "12")]
    pub node_utilization: Option<ResourceUtilizationProto>,
    /// decommissioning_timeout: seconds left to drain, when decommissioning.
    #[prost(uint32, optional, tag = "13")]
    pub decommissioning_timeout: Option<u32>,
    /// node_update_type: why it is in `updated_nodes`.
    #[prost(enumeration = "NodeUpdateTypeProto", optional, tag = "14")]
    pub node_update_type: Option<i32>,
    /// node_attributes: the node's attributes.
    #[prost(message, repeated, tag = "15")]
    pub node_attributes: Vec<NodeAttributeProto>,
}

/// `YarnClusterMetricsProto`: node counts.
#[derive(Clone, PartialEq, prost::Message)]
pub struct YarnClusterMetricsProto {
    /// num_node_managers: NodeManagers in service.
    #[prost(int32, optional, tag = "1")]
    pub num_node_managers: Option<i32>,
    /// num_decommissioned_nms: decommissioned NodeManagers.
    #[prost(int32, optional, tag = "2")]
    pub num_decommissioned_nms: Option<i32>,
    /// num_active_nms: active NodeManagers.
    #[prost(int32, optional, tag = "3")]
    pub num_active_nms: Option<i32>,
    /// num_lost_nms: lost NodeManagers.
    #[prost(int32, optional, tag = "4")]
    pub num_lost_nms: Option<i32>,
    /// num_unhealthy_nms: unhealthy NodeManagers.
    #[prost(int32, optional, tag = "5")]
    pub num_unhealthy_nms: Option<i32>,
    /// num_rebooted_nms: rebooted NodeManagers.
    #[prost(int32, optional, tag = "6")]
    pub num_rebooted_nms: Option<i32>,
    /// num_decommissioning_nms: decommissioning NodeManagers.
    #[prost(int32, optional, tag = "7")]
    pub num_decommissioning_nms: Option<i32>,
    /// num_shutdown_nms: NodeManagers shut down.
    #[prost(int32, optional, tag = "8")]
    pub num_shutdown_nms: Option<i32>,
}

// ---------------------------------------------------------------- queues

/// `QueueStatisticsProto`: a queue's counters.
#[derive(Clone, PartialEq, prost::Message)]
pub struct QueueStatisticsProto {
    /// numAppsSubmitted: applications submitted.
    #[prost(int64, optional, tag = "1")]
    pub num_apps_submitted: Option<i64>,
    /// numAppsRunning: applications running.
    #[prost(int64, optional, tag = "2")]
    pub num_apps_running: Option<i64>,
    /// numAppsPending: applications pending.
    #[prost(int64, optional, tag = "3")]
    pub num_apps_pending: Option<i64>,
    /// numAppsCompleted: applications completed.
    #[prost(int64, optional, tag = "4")]
    pub num_apps_completed: Option<i64>,
    /// numAppsKilled: applications killed.
    #[prost(int64, optional, tag = "5")]
    pub num_apps_killed: Option<i64>,
    /// numAppsFailed: applications failed.
    #[prost(int64, optional, tag = "6")]
    pub num_apps_failed: Option<i64>,
    /// numActiveUsers: users with running applications.
    #[prost(int64, optional, tag = "7")]
    pub num_active_users: Option<i64>,
    /// availableMemoryMB: available memory in MB.
    #[prost(int64, optional, tag = "8")]
    pub available_memory_mb: Option<i64>,
    /// allocatedMemoryMB: allocated memory in MB.
    #[prost(int64, optional, tag = "9")]
    pub allocated_memory_mb: Option<i64>,
    /// pendingMemoryMB: asked-for memory in MB.
    #[prost(int64, optional, tag = "10")]
    pub pending_memory_mb: Option<i64>,
    /// reservedMemoryMB: reserved memory in MB.
    #[prost(int64, optional, tag = "11")]
    pub reserved_memory_mb: Option<i64>,
    /// availableVCores: available vcores.
    #[prost(int64, optional, tag = "12")]
    pub available_v_cores: Option<i64>,
    /// allocatedVCores: allocated vcores.
    #[prost(int64, optional, tag = "13")]
    pub allocated_v_cores: Option<i64>,
    /// pendingVCores: asked-for vcores.
    #[prost(int64, optional, tag = "14")]
    pub pending_v_cores: Option<i64>,
    /// reservedVCores: reserved vcores.
    #[prost(int64, optional, tag = "15")]
    pub reserved_v_cores: Option<i64>,
    /// allocatedContainers: allocated containers.
    #[prost(int64, optional, tag = "16")]
    pub allocated_containers: Option<i64>,
    /// pendingContainers: asked-for containers.
    #[prost(int64, optional, tag = "17")]
    pub pending_containers: Option<i64>,
    /// reservedContainers: reserved containers.
    #[prost(int64, optional, tag = "18")]
    pub reserved_containers: Option<i64>,
}

/// `QueueConfigurationsProto`: a queue's capacities in one partition.
#[derive(Clone, PartialEq, prost::Message)]
pub struct QueueConfigurationsProto {
    /// capacity: share of the parent, from 0 to 1.
    #[prost(float, optional, tag = "1")]
    pub capacity: Option<f32>,
    /// absoluteCapacity: share of the cluster, from 0 to 1.
    #[prost(float, optional, tag = "2")]
    pub absolute_capacity: Option<f32>,
    /// maxCapacity: maximum share of the parent, from 0 to 1.
    #[prost(float, optional, tag = "3")]
    pub max_capacity: Option<f32>,
    /// absoluteMaxCapacity: maximum share of the cluster, from 0 to 1.
    #[prost(float, optional, tag = "4")]
    pub absolute_max_capacity: Option<f32>,
    /// maxAMPercentage: the most the AMs may use, from 0 to 1.
    #[prost(float, optional, tag = "5")]
    pub max_am_percentage: Option<f32>,
    /// effectiveMinCapacity: the guaranteed resources.
    #[prost(message, optional, tag = "6")]
    pub effective_min_capacity: Option<ResourceProto>,
    /// effectiveMaxCapacity: the most resources.
    #[prost(message, optional, tag = "7")]
    pub effective_max_capacity: Option<ResourceProto>,
    /// configuredMinCapacity: the configured guaranteed resources.
    #[prost(message, optional, tag = "8")]
    pub configured_min_capacity: Option<ResourceProto>,
    /// configuredMaxCapacity: the configured most resources.
    #[prost(message, optional, tag = "9")]
    pub configured_max_capacity: Option<ResourceProto>,
}

/// `QueueConfigurationsMapProto`: a queue's capacities, by partition.
#[derive(Clone, PartialEq, prost::Message)]
pub struct QueueConfigurationsMapProto {
    /// partitionName: the node-label partition ("" for the default).
    #[prost(string, required, tag = "1")]
    pub partition_name: String,
    /// queueConfigurations: the capacities.
    #[prost(message, optional, tag = "2")]
    pub queue_configurations: Option<QueueConfigurationsProto>,
}

/// `QueueInfoProto`: a queue as clients see it.
#[derive(Clone, PartialEq, prost::Message)]
pub struct QueueInfoProto {
    /// queueName: the queue's short name.
    #[prost(string, optional, tag = "1")]
    pub queue_name: Option<String>,
    /// capacity: share of the parent, from 0 to 1.
    #[prost(float, optional, tag = "2")]
    pub capacity: Option<f32>,
    /// maximumCapacity: maximum share of the parent, from 0 to 1.
    #[prost(float, optional, tag = "3")]
    pub maximum_capacity: Option<f32>,
    /// currentCapacity: used share of its capacity, from 0 up.
    #[prost(float, optional, tag = "4")]
    pub current_capacity: Option<f32>,
    /// state: running, stopped or draining.
    #[prost(enumeration = "QueueStateProto", optional, tag = "5")]
    pub state: Option<i32>,
    /// childQueues: the child queues.
    #[prost(message, repeated, tag = "6")]
    pub child_queues: Vec<QueueInfoProto>,
    /// applications: its applications, when asked for.
    #[prost(message, repeated, tag = "7")]
    pub applications: Vec<ApplicationReportProto>,
    /// accessibleNodeLabels: node labels it may use.
    #[prost(string, repeated, tag = "8")]
    pub accessible_node_labels: Vec<String>,
    /// defaultNodeLabelExpression: the label its applications get by default.
    #[prost(string, optional, tag = "9")]
    pub default_node_label_expression: Option<String>,
    /// queueStatistics: counters.
    #[prost(message, optional, tag = "10")]
    pub queue_statistics: Option<QueueStatisticsProto>,
    /// preemptionDisabled: preemption from this queue is off.
    #[prost(bool, optional, tag = "11")]
    pub preemption_disabled: Option<bool>,
    /// queueConfigurationsMap: capacities per partition.
    #[prost(message, repeated, tag = "12")]
    pub queue_configurations_map: Vec<QueueConfigurationsMapProto>,
    /// intraQueuePreemptionDisabled: preemption within the queue is off.
    #[prost(bool, optional, tag = "13")]
    pub intra_queue_preemption_disabled: Option<bool>,
    /// weight: the queue's weight (weight mode).
    #[prost(float, optional, tag = "14")]
    pub weight: Option<f32>,
    /// queuePath: the full path, e.g. `root.default`.
    #[prost(string, optional, tag = "15")]
    pub queue_path: Option<String>,
    /// maxParallelApps: the most applications running at once.
    #[prost(int32, optional, tag = "16")]
    pub max_parallel_apps: Option<i32>,
    /// schedulerType: e.g. `CapacityScheduler`.
    #[prost(string, optional, tag = "17")]
    pub scheduler_type: Option<String>,
    /// minResourceVCore: guaranteed vcores (fair scheduler).
    #[prost(int32, optional, tag = "18")]
    pub min_resource_v_core: Option<i32>,
    /// minResourceMemory: guaranteed memory in MB (fair scheduler).
    #[prost(int64, optional, tag = "19")]
    pub min_resource_memory: Option<i64>,
    /// maxResourceVCore: most vcores (fair scheduler).
    #[prost(int32, optional, tag = "20")]
    pub max_resource_v_core: Option<i32>,
    /// maxResourceMemory: most memory in MB (fair scheduler).
    #[prost(int64, optional, tag = "21")]
    pub max_resource_memory: Option<i64>,
    /// reservedResourceVCore: reserved vcores (fair scheduler).
    #[prost(int32, optional, tag = "22")]
    pub reserved_resource_v_core: Option<i32>,
    /// reservedResourceMemory: reserved memory in MB (fair scheduler).
    #[prost(int64, optional, tag = "23")]
    pub reserved_resource_memory: Option<i64>,
    /// steadyFairShareVCore: steady fair share of vcores (fair scheduler).
    #[prost(int32, optional, tag = "24")]
    pub steady_fair_share_v_core: Option<i32>,
    /// steadyFairShareMemory: steady fair share of memory in MB (fair scheduler).
    #[prost(int64, optional, tag = "25")]
    pub steady_fair_share_memory: Option<i64>,
    /// subClusterId: the federation sub-cluster.
    #[prost(string, optional, tag = "26")]
    pub sub_cluster_id: Option<String>,
    /// maxRunningApp: the most running applications (fair scheduler).
    #[prost(int32, optional, tag = "27")]
    pub max_running_app: Option<i32>,
}

/// `QueueUserACLInfoProto`: what the caller may do in a queue.
#[derive(Clone, PartialEq, prost::Message)]
pub struct QueueUserACLInfoProto {
    /// queueName: the queue.
    #[prost(string, optional, tag = "1")]
    pub queue_name: Option<String>,
    /// userAcls: the caller's permissions.
    #[prost(enumeration = "QueueACLProto", repeated, packed = "false", tag = "2")]
    pub user_acls: Vec<i32>,
}
