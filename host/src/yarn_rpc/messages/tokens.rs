//! The identifiers of YARN's tokens, package `hadoop.yarn`:
//! yarn_security_token.proto (hadoop-yarn-common) as in Hadoop 3.4.1
//! (checked against the descriptors built into hadoop-client-api-3.4.1.jar).
//! A token travels as `super::ipc::TokenProto` whose `identifier` is one of
//! these messages, serialized, and whose `kind` is the matching constant.

use super::records::{
    ApplicationAttemptIdProto, ContainerIdProto, ContainerTypeProto, ExecutionTypeProto,
    LogAggregationContextProto, NodeIdProto, PriorityProto, ResourceProto,
};

/// The token kind of an AMRMToken (`AMRMTokenIdentifier.KIND_NAME`).
pub const AMRM_TOKEN_KIND: &str = "YARN_AM_RM_TOKEN";

/// The token kind of an NMToken (`NMTokenIdentifier.KIND`).
pub const NM_TOKEN_KIND: &str = "NMToken";

/// The token kind of a container token (`ContainerTokenIdentifier.KIND`).
pub const CONTAINER_TOKEN_KIND: &str = "ContainerToken";

/// The token kind of an RM delegation token
/// (`RMDelegationTokenIdentifier.KIND_NAME`).
pub const RM_DELEGATION_TOKEN_KIND: &str = "RM_DELEGATION_TOKEN";

/// `YARNDelegationTokenIdentifierProto`: what an RM delegation token
/// stands for (its owner, and when it was issued and lapses).
#[derive(Clone, PartialEq, prost::Message)]
pub struct YARNDelegationTokenIdentifierProto {
    /// owner: the user the token authenticates as.
    #[prost(string, optional, tag = "1")]
    pub owner: Option<String>,
    /// renewer: who may renew it.
    #[prost(string, optional, tag = "2")]
    pub renewer: Option<String>,
    /// realUser: the user acting for the owner, if any.
    #[prost(string, optional, tag = "3")]
    pub real_user: Option<String>,
    /// issueDate: when it was issued, ms since the epoch.
    #[prost(int64, optional, tag = "4")]
    pub issue_date: Option<i64>,
    /// maxDate: when it lapses, ms since the epoch.
    #[prost(int64, optional, tag = "5")]
    pub max_date: Option<i64>,
    /// sequenceNumber: the issuer's count.
    #[prost(int32, optional, tag = "6")]
    pub sequence_number: Option<i32>,
    /// masterKeyId: the id of the key that signed it; -1 when unset.
    #[prost(int32, optional, tag = "7", default = "-1")]
    pub master_key_id: Option<i32>,
}

/// `AMRMTokenIdentifierProto`: identifies an AM to the scheduler port.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AMRMTokenIdentifierProto {
    /// appAttemptId: the attempt the AM runs.
    #[prost(message, optional, tag = "1")]
    pub app_attempt_id: Option<ApplicationAttemptIdProto>,
    /// keyId: the id of the master key that signed it; -1 when unset.
    #[prost(int32, optional, tag = "2", default = "-1")]
    pub key_id: Option<i32>,
}

/// `NMTokenIdentifierProto`: lets an AM talk to one NodeManager.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NMTokenIdentifierProto {
    /// appAttemptId: the attempt the AM runs.
    #[prost(message, optional, tag = "1")]
    pub app_attempt_id: Option<ApplicationAttemptIdProto>,
    /// nodeId: the node, with the NM's RPC port.
    #[prost(message, optional, tag = "2")]
    pub node_id: Option<NodeIdProto>,
    /// appSubmitter: the user who submitted the application.
    #[prost(string, optional, tag = "3")]
    pub app_submitter: Option<String>,
    /// keyId: the id of the master key that signed it; -1 when unset.
    #[prost(int32, optional, tag = "4", default = "-1")]
    pub key_id: Option<i32>,
}

/// `ContainerTokenIdentifierProto`: authorizes starting one container.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ContainerTokenIdentifierProto {
    /// containerId: the container.
    #[prost(message, optional, tag = "1")]
    pub container_id: Option<ContainerIdProto>,
    /// nmHostAddr: the NM's RPC address, `host:port`.
    #[prost(string, optional, tag = "2")]
    pub nm_host_addr: Option<String>,
    /// appSubmitter: the user who submitted the application.
    #[prost(string, optional, tag = "3")]
    pub app_submitter: Option<String>,
    /// resource: the container's resources.
    #[prost(message, optional, tag = "4")]
    pub resource: Option<ResourceProto>,
    /// expiryTimeStamp: when the token expires, ms since the epoch.
    #[prost(int64, optional, tag = "5")]
    pub expiry_time_stamp: Option<i64>,
    /// masterKeyId: the id of the master key that signed it; -1 when unset.
    #[prost(int32, optional, tag = "6", default = "-1")]
    pub master_key_id: Option<i32>,
    /// rmIdentifier: the RM's start time, ms since the epoch.
    #[prost(int64, optional, tag = "7")]
    pub rm_identifier: Option<i64>,
    /// priority: the container's priority.
    #[prost(message, optional, tag = "8")]
    pub priority: Option<PriorityProto>,
    /// creationTime: when the container was allocated, ms since the epoch.
    #[prost(int64, optional, tag = "9")]
    pub creation_time: Option<i64>,
    /// logAggregationContext: which logs to upload.
    #[prost(message, optional, tag = "10")]
    pub log_aggregation_context: Option<LogAggregationContextProto>,
    /// nodeLabelExpression: the node label it was allocated under.
    #[prost(string, optional, tag = "11")]
    pub node_label_expression: Option<String>,
    /// containerType: AM or task.
    #[prost(enumeration = "ContainerTypeProto", optional, tag = "12")]
    pub container_type: Option<i32>,
    /// executionType: guaranteed or opportunistic.
    #[prost(
        enumeration = "ExecutionTypeProto",
        optional,
        tag = "13",
        default = "Guaranteed"
    )]
    pub execution_type: Option<i32>,
    /// version: the container's update version.
    #[prost(int32, optional, tag = "14", default = "0")]
    pub version: Option<i32>,
    /// allocation_request_id: the id of the ask it satisfies; -1 when unset.
    #[prost(int64, optional, tag = "15", default = "-1")]
    pub allocation_request_id: Option<i64>,
    /// allocation_tags: the scheduling request's allocation tags.
    #[prost(string, repeated, tag = "16")]
    pub allocation_tags: Vec<String>,
}
