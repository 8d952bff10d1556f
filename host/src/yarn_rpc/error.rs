//! A call's failure as a Hadoop client reads it: the Java class of the
//! exception (which `RPCUtil` instantiates on the client, so clients retry,
//! resubmit or give up as they do against YARN) and its message.

use super::messages::ipc::RpcErrorCodeProto;
use crate::rm::CommandError;

/// The Java classes Weft answers with; each changes what a client does.
pub mod class {
    /// An app id the server does not know: YarnClient resubmits on it while
    /// submitting, Spark's monitor takes the app as killed.
    pub const APPLICATION_NOT_FOUND: &str =
        "org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException";
    /// An attempt the server does not know (or no longer runs).
    pub const APPLICATION_ATTEMPT_NOT_FOUND: &str =
        "org.apache.hadoop.yarn.exceptions.ApplicationAttemptNotFoundException";
    /// A master that has not registered: Hadoop's AMRMClient registers
    /// again and resends its asks.
    pub const APPLICATION_MASTER_NOT_REGISTERED: &str =
        "org.apache.hadoop.yarn.exceptions.ApplicationMasterNotRegisteredException";
    /// A master's request out of order (a stale response id).
    pub const INVALID_APPLICATION_MASTER_REQUEST: &str =
        "org.apache.hadoop.yarn.exceptions.InvalidApplicationMasterRequestException";
    /// An ask the scheduler cannot take (larger than the largest container).
    pub const INVALID_RESOURCE_REQUEST: &str =
        "org.apache.hadoop.yarn.exceptions.InvalidResourceRequestException";
    /// A container the server does not know.
    pub const CONTAINER_NOT_FOUND: &str =
        "org.apache.hadoop.yarn.exceptions.ContainerNotFoundException";
    /// A request the server refuses as YARN would (an unknown queue, a
    /// resource above the maximum, a bad field).
    pub const YARN: &str = "org.apache.hadoop.yarn.exceptions.YarnException";
    /// The caller may not do this (ACLs, another app's attempt).
    pub const ACCESS_CONTROL: &str = "org.apache.hadoop.security.AccessControlException";
    /// This server is a standby: a client with several RM addresses fails
    /// over to the next.
    pub const STANDBY: &str = "org.apache.hadoop.ipc.StandbyException";
    /// The protocol serves no method of that name.
    pub const NO_SUCH_METHOD: &str = "org.apache.hadoop.ipc.RpcNoSuchMethodException";
    /// The port serves no protocol of that name.
    pub const NO_SUCH_PROTOCOL: &str = "org.apache.hadoop.ipc.RpcNoSuchProtocolException";
    /// A request that cannot be decoded or breaks the protocol's rules.
    pub const SERVER: &str = "org.apache.hadoop.ipc.RpcServerException";
    /// The IPC version the client speaks is not served.
    pub const VERSION_MISMATCH: &str = "org.apache.hadoop.ipc.RPC$VersionMismatch";
    /// Authentication failed (SASL, or no user where one is required).
    pub const SASL: &str = "javax.security.sasl.SaslException";
    /// The server is busy: the client retries later.
    pub const RETRIABLE: &str = "org.apache.hadoop.ipc.RetriableException";
}

/// The `RpcErrorCodeProto` a failure carries; a fatal one (10 and above)
/// closes the connection.
pub type ErrorCode = RpcErrorCodeProto;

/// Whether the server closes the connection after answering `code`.
pub fn is_fatal(code: ErrorCode) -> bool {
    code as i32 >= ErrorCode::FatalUnknown as i32
}

/// A call that failed: what the client is told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{class}: {message}")]
pub struct RpcError {
    /// The Java exception class the client instantiates.
    pub class: &'static str,
    /// Its message.
    pub message: String,
    /// The error code; a fatal one closes the connection.
    pub code: ErrorCode,
}

impl RpcError {
    /// A failed call of `class`; the connection goes on.
    pub fn new(class: &'static str, message: impl Into<String>) -> RpcError {
        RpcError {
            class,
            message: message.into(),
            code: ErrorCode::ErrorApplication,
        }
    }

    /// A failure after which the connection is closed.
    pub fn fatal(class: &'static str, code: ErrorCode, message: impl Into<String>) -> RpcError {
        RpcError {
            class,
            message: message.into(),
            code,
        }
    }

    /// A YarnException: the request is refused as YARN would refuse it.
    pub fn yarn(message: impl Into<String>) -> RpcError {
        RpcError::new(class::YARN, message)
    }

    /// A method the protocol does not serve, named.
    pub fn no_such_method(protocol: &str, method: &str) -> RpcError {
        RpcError {
            class: class::NO_SUCH_METHOD,
            message: format!("Unknown method {method} called on {protocol} protocol."),
            code: ErrorCode::ErrorNoSuchMethod,
        }
    }

    /// A method YARN has that Weft does not serve, named.
    pub fn unsupported(protocol: &str, method: &str) -> RpcError {
        RpcError {
            class: class::NO_SUCH_METHOD,
            message: format!(
                "{method} of {protocol} is not supported by Weft (docs/yarn-applications.md lists what is)"
            ),
            code: ErrorCode::ErrorNoSuchMethod,
        }
    }

    /// A protocol the port does not serve, named.
    pub fn no_such_protocol(protocol: &str) -> RpcError {
        RpcError {
            class: class::NO_SUCH_PROTOCOL,
            message: format!("Unknown protocol: {protocol}"),
            code: ErrorCode::ErrorNoSuchProtocol,
        }
    }

    /// A request that does not decode as the method's message.
    pub fn undecodable(method: &str, error: impl std::fmt::Display) -> RpcError {
        RpcError {
            class: class::SERVER,
            message: format!("the request of {method} cannot be decoded: {error}"),
            code: ErrorCode::ErrorRpcServer,
        }
    }
}

impl From<CommandError> for RpcError {
    /// The event loop could not run a command: a standby says so (clients
    /// fail over); a stopped or busy loop is retriable.
    fn from(error: CommandError) -> RpcError {
        match error {
            CommandError::Standby(_) => RpcError::new(class::STANDBY, error.to_string()),
            other => RpcError::new(class::RETRIABLE, other.to_string()),
        }
    }
}
