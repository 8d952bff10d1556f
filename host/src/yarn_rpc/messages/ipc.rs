//! Hadoop IPC's own messages, package `hadoop.common`: RpcHeader.proto,
//! IpcConnectionContext.proto, ProtobufRpcEngine2.proto and Security.proto's
//! `TokenProto`, as in Hadoop 3.4.1 (checked against the descriptors built
//! into hadoop-client-api-3.4.1.jar). Nested .proto types (`OperationProto`,
//! `RpcStatusProto`, `RpcErrorCodeProto`, `SaslState`, `SaslAuth`) are
//! declared at this module's top level under their .proto names.

/// RpcHeader.proto `RpcKindProto`: how a call's body is serialized.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum RpcKindProto {
    /// RPC_BUILTIN: built-in calls, used by Hadoop's tests.
    RpcBuiltin = 0,
    /// RPC_WRITABLE: WritableRpcEngine.
    RpcWritable = 1,
    /// RPC_PROTOCOL_BUFFER: ProtobufRpcEngine(2); what every YARN client sends.
    RpcProtocolBuffer = 2,
}

/// `RpcRequestHeaderProto.OperationProto`: which packet of a call this is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum OperationProto {
    /// RPC_FINAL_PACKET: the only value Java's server accepts.
    RpcFinalPacket = 0,
    /// RPC_CONTINUATION_PACKET: not implemented by Hadoop.
    RpcContinuationPacket = 1,
    /// RPC_CLOSE_CONNECTION: close the connection.
    RpcCloseConnection = 2,
}

/// RpcHeader.proto `RpcRequestHeaderProto`: the header before every request
/// body. `traceInfo` (6) and `callerContext` (7) are not declared; a decoder
/// skips them.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RpcRequestHeaderProto {
    /// rpcKind: the body's serialization.
    #[prost(enumeration = "RpcKindProto", optional, tag = "1")]
    pub rpc_kind: Option<i32>,
    /// rpcOp: the packet kind.
    #[prost(enumeration = "OperationProto", optional, tag = "2")]
    pub rpc_op: Option<i32>,
    /// callId: the call's sequence number (sint32, zigzag); negative ids are
    /// out-of-band (-3 connection context, -4 ping, -33 SASL).
    #[prost(sint32, required, tag = "3")]
    pub call_id: i32,
    /// clientId: the client's globally unique id, a 16-byte UUID.
    #[prost(bytes = "vec", required, tag = "4")]
    pub client_id: Vec<u8>,
    /// retryCount: which retry this is; -1 when not a retry.
    #[prost(sint32, optional, tag = "5", default = "-1")]
    pub retry_count: Option<i32>,
    /// stateId: the client's last seen state id (HDFS observer reads).
    #[prost(int64, optional, tag = "8")]
    pub state_id: Option<i64>,
    /// routerFederatedState: opaque state of an RBF router.
    #[prost(bytes = "vec", optional, tag = "9")]
    pub router_federated_state: Option<Vec<u8>>,
}

/// `RpcResponseHeaderProto.RpcStatusProto`: the outcome of a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum RpcStatusProto {
    /// SUCCESS: the response body follows.
    Success = 0,
    /// ERROR: the call failed; the connection stays open.
    Error = 1,
    /// FATAL: the connection is closed after this header.
    Fatal = 2,
}

/// `RpcResponseHeaderProto.RpcErrorCodeProto`: the detail of a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum RpcErrorCodeProto {
    /// ERROR_APPLICATION: the called method threw.
    ErrorApplication = 1,
    /// ERROR_NO_SUCH_METHOD: no such method in the protocol.
    ErrorNoSuchMethod = 2,
    /// ERROR_NO_SUCH_PROTOCOL: no such protocol on this server.
    ErrorNoSuchProtocol = 3,
    /// ERROR_RPC_SERVER: an error in the RPC server.
    ErrorRpcServer = 4,
    /// ERROR_SERIALIZING_RESPONSE: the response could not be serialized.
    ErrorSerializingResponse = 5,
    /// ERROR_RPC_VERSION_MISMATCH: the protocol version does not match.
    ErrorRpcVersionMismatch = 6,
    /// FATAL_UNKNOWN: an unknown fatal error.
    FatalUnknown = 10,
    /// FATAL_UNSUPPORTED_SERIALIZATION: an unsupported rpcKind.
    FatalUnsupportedSerialization = 11,
    /// FATAL_INVALID_RPC_HEADER: invalid fields in the request header.
    FatalInvalidRpcHeader = 12,
    /// FATAL_DESERIALIZING_REQUEST: the request could not be decoded.
    FatalDeserializingRequest = 13,
    /// FATAL_VERSION_MISMATCH: the IPC version in the preamble does not match.
    FatalVersionMismatch = 14,
    /// FATAL_UNAUTHORIZED: authentication or authorization failed.
    FatalUnauthorized = 15,
}

/// RpcHeader.proto `RpcResponseHeaderProto`: the header of every reply.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RpcResponseHeaderProto {
    /// callId: the request's call id as uint32 (a negative id such as -33
    /// travels as its two's-complement u32, a 5-byte varint).
    #[prost(uint32, required, tag = "1")]
    pub call_id: u32,
    /// status: success, error or fatal.
    #[prost(enumeration = "RpcStatusProto", required, tag = "2")]
    pub status: i32,
    /// serverIpcVersionNum: the server's IPC version (9).
    #[prost(uint32, optional, tag = "3")]
    pub server_ipc_version_num: Option<u32>,
    /// exceptionClassName: the Java class of the exception, on failure.
    #[prost(string, optional, tag = "4")]
    pub exception_class_name: Option<String>,
    /// errorMsg: the exception's message or stack trace, on failure.
    #[prost(string, optional, tag = "5")]
    pub error_msg: Option<String>,
    /// errorDetail: the error code, on failure.
    #[prost(enumeration = "RpcErrorCodeProto", optional, tag = "6")]
    pub error_detail: Option<i32>,
    /// clientId: the request's client id, echoed.
    #[prost(bytes = "vec", optional, tag = "7")]
    pub client_id: Option<Vec<u8>>,
    /// retryCount: the request's retry count, echoed; -1 when unset.
    #[prost(sint32, optional, tag = "8", default = "-1")]
    pub retry_count: Option<i32>,
    /// stateId: the server's state id (HDFS observer reads).
    #[prost(int64, optional, tag = "9")]
    pub state_id: Option<i64>,
    /// routerFederatedState: opaque state of an RBF router.
    #[prost(bytes = "vec", optional, tag = "10")]
    pub router_federated_state: Option<Vec<u8>>,
}

/// `RpcSaslProto.SaslState`: the step of a SASL exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum SaslState {
    /// SUCCESS: authentication is done (or SIMPLE was chosen).
    Success = 0,
    /// NEGOTIATE: the client asks for, or the server offers, methods.
    Negotiate = 1,
    /// INITIATE: the client picks a method and sends its first token.
    Initiate = 2,
    /// CHALLENGE: the server's challenge.
    Challenge = 3,
    /// RESPONSE: the client's answer to a challenge.
    Response = 4,
    /// WRAP: a message wrapped by the negotiated SASL security layer.
    Wrap = 5,
}

/// `RpcSaslProto.SaslAuth`: one authentication method a server offers.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SaslAuth {
    /// method: the Hadoop auth method name, e.g. `TOKEN` or `SIMPLE`.
    #[prost(string, required, tag = "1")]
    pub method: String,
    /// mechanism: the SASL mechanism, e.g. `DIGEST-MD5`; empty for SIMPLE.
    #[prost(string, required, tag = "2")]
    pub mechanism: String,
    /// protocol: the SASL protocol name.
    #[prost(string, optional, tag = "3")]
    pub protocol: Option<String>,
    /// serverId: the SASL server id, e.g. `default`.
    #[prost(string, optional, tag = "4")]
    pub server_id: Option<String>,
    /// challenge: the mechanism's initial challenge.
    #[prost(bytes = "vec", optional, tag = "5")]
    pub challenge: Option<Vec<u8>>,
}

/// RpcHeader.proto `RpcSaslProto`: the body of every call with id -33.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RpcSaslProto {
    /// version: the SASL exchange version.
    #[prost(uint32, optional, tag = "1")]
    pub version: Option<u32>,
    /// state: the step of the exchange.
    #[prost(enumeration = "SaslState", required, tag = "2")]
    pub state: i32,
    /// token: the mechanism's token for this step.
    #[prost(bytes = "vec", optional, tag = "3")]
    pub token: Option<Vec<u8>>,
    /// auths: the methods offered (NEGOTIATE) or chosen (INITIATE).
    #[prost(message, repeated, tag = "4")]
    pub auths: Vec<SaslAuth>,
}

/// IpcConnectionContext.proto `UserInformationProto`: who is calling.
#[derive(Clone, PartialEq, prost::Message)]
pub struct UserInformationProto {
    /// effectiveUser: the user the calls run as.
    #[prost(string, optional, tag = "1")]
    pub effective_user: Option<String>,
    /// realUser: the authenticated user behind a proxy user.
    #[prost(string, optional, tag = "2")]
    pub real_user: Option<String>,
}

/// IpcConnectionContext.proto `IpcConnectionContextProto`: the body of the
/// call with id -3, sent once per connection.
#[derive(Clone, PartialEq, prost::Message)]
pub struct IpcConnectionContextProto {
    /// userInfo: the caller; absent under TOKEN auth.
    #[prost(message, optional, tag = "2")]
    pub user_info: Option<UserInformationProto>,
    /// protocol: the protocol name, e.g.
    /// `org.apache.hadoop.yarn.api.ApplicationClientProtocolPB`.
    #[prost(string, optional, tag = "3")]
    pub protocol: Option<String>,
}

/// ProtobufRpcEngine2.proto `RequestHeaderProto`: names the method of a
/// protobuf call; sent after `RpcRequestHeaderProto`, before the request.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RequestHeaderProto {
    /// methodName: the service method, e.g. `getNewApplication`.
    #[prost(string, required, tag = "1")]
    pub method_name: String,
    /// declaringClassProtocolName: the protocol name, as in the context.
    #[prost(string, required, tag = "2")]
    pub declaring_class_protocol_name: String,
    /// clientProtocolVersion: the protocol's version (1 for YARN's).
    #[prost(uint64, required, tag = "3")]
    pub client_protocol_version: u64,
}

/// Security.proto `TokenProto`: a Hadoop token on the wire.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TokenProto {
    /// identifier: the serialized token identifier.
    #[prost(bytes = "vec", required, tag = "1")]
    pub identifier: Vec<u8>,
    /// password: the identifier's MAC under the issuer's secret.
    #[prost(bytes = "vec", required, tag = "2")]
    pub password: Vec<u8>,
    /// kind: the token kind, e.g. `YARN_AM_RM_TOKEN`.
    #[prost(string, required, tag = "3")]
    pub kind: String,
    /// service: the address the token is for, `host:port`.
    #[prost(string, required, tag = "4")]
    pub service: String,
}

#[cfg(test)]
mod tests {
    use super::super::{calls, records, tokens};
    use super::*;
    use prost::Message;

    #[test]
    fn response_call_id_is_uint32_so_negative_ids_are_five_byte_varints() {
        let header = RpcResponseHeaderProto {
            call_id: (-33i32) as u32,
            status: RpcStatusProto::Success as i32,
            ..Default::default()
        };
        let bytes = header.encode_to_vec();
        // Tag 1 varint, 4294967263 as a varint; then the required status 0.
        assert_eq!(bytes, [0x08, 0xdf, 0xff, 0xff, 0xff, 0x0f, 0x10, 0x00]);
        let back = RpcResponseHeaderProto::decode(&bytes[..]).unwrap();
        assert_eq!(back.call_id as i32, -33);
        assert_eq!(back.retry_count(), -1);
    }

    #[test]
    fn request_call_id_is_sint32_zigzag() {
        let header = RpcRequestHeaderProto {
            rpc_kind: Some(RpcKindProto::RpcProtocolBuffer as i32),
            rpc_op: Some(OperationProto::RpcFinalPacket as i32),
            call_id: -3,
            client_id: Vec::new(),
            retry_count: Some(-1),
            ..Default::default()
        };
        // zigzag(-3) = 5 after tag 0x18; zigzag(-1) = 1 after tag 0x28.
        assert_eq!(
            header.encode_to_vec(),
            [0x08, 0x02, 0x10, 0x00, 0x18, 0x05, 0x22, 0x00, 0x28, 0x01]
        );
        let back = RpcRequestHeaderProto::decode(&[0x18, 0x41, 0x22, 0x00][..]).unwrap();
        assert_eq!(back.call_id, -33);
        assert_eq!(back.retry_count(), -1);
    }

    #[test]
    fn required_enum_zero_is_still_written() {
        let sasl = RpcSaslProto {
            state: SaslState::Success as i32,
            ..Default::default()
        };
        assert_eq!(sasl.encode_to_vec(), [0x10, 0x00]);
    }

    #[test]
    fn proto2_defaults_of_decoded_empty_messages() {
        // An allocate request with one empty ask: field 1, length 0.
        let allocate = calls::AllocateRequestProto::decode(&[0x0a, 0x00][..]).unwrap();
        assert_eq!(allocate.ask.len(), 1);
        assert!(allocate.ask[0].relax_locality());
        assert_eq!(allocate.ask[0].allocation_request_id(), -1);

        let status = records::ContainerStatusProto::decode(&[][..]).unwrap();
        assert_eq!(status.exit_status(), -1000);
        assert_eq!(status.diagnostics(), "N/A");
        assert_eq!(
            status.execution_type(),
            records::ExecutionTypeProto::Guaranteed
        );

        let context = records::ApplicationSubmissionContextProto::decode(&[][..]).unwrap();
        assert_eq!(context.queue(), "default");
        assert_eq!(context.application_type(), "YARN");
        assert!(context.cancel_tokens_when_complete());
        assert_eq!(context.attempt_failures_validity_interval(), -1);

        let killed = calls::KillApplicationResponseProto::decode(&[][..]).unwrap();
        assert!(!killed.is_kill_completed());

        let token = tokens::ContainerTokenIdentifierProto::decode(&[][..]).unwrap();
        assert_eq!(token.master_key_id(), -1);
        assert_eq!(token.allocation_request_id(), -1);
        assert_eq!(token.version(), 0);
    }

    #[test]
    fn repeated_enums_are_not_packed_and_negative_int32_is_ten_bytes() {
        let request = calls::GetApplicationsRequestProto {
            application_states: vec![
                records::YarnApplicationStateProto::Running as i32,
                records::YarnApplicationStateProto::Killed as i32,
            ],
            ..Default::default()
        };
        // One tag-2 varint per value (0x10), not one length-delimited 0x12.
        assert_eq!(request.encode_to_vec(), [0x10, 0x05, 0x10, 0x08]);

        let url = records::URLProto {
            port: Some(-1),
            ..Default::default()
        };
        let mut expected: Vec<u8> = vec![0x18];
        expected.extend([0xff; 9]);
        expected.push(0x01);
        assert_eq!(url.encode_to_vec(), expected);
    }
}
