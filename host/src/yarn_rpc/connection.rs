//! One Hadoop IPC connection, as the Java server runs it: the preamble, an
//! optional SASL negotiation, the connection context (who, which protocol),
//! then calls served concurrently and answered in any order, each tagged
//! with its call id. A broken rule closes the connection after a FATAL
//! answer; a failed call answers ERROR and the connection goes on.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

use super::error::{ErrorCode, RpcError, class, is_fatal};
use super::frame::{self, AuthProtocol, EncodeDelimited, Encoded, Frame, FrameError};
use super::messages::ipc::{
    IpcConnectionContextProto, OperationProto, RequestHeaderProto, RpcKindProto,
    RpcRequestHeaderProto, RpcResponseHeaderProto, RpcSaslProto, RpcStatusProto,
};
use super::sasl;
use super::server::Shared;

/// Call ids below zero are the connection's own business.
mod call_id {
    /// The connection context (never answered).
    pub(super) const CONNECTION_CONTEXT: i32 = -3;
    /// A ping while a call takes long (never answered).
    pub(super) const PING: i32 = -4;
    /// A SASL exchange.
    pub(super) const SASL: i32 = -33;
    /// The id of an answer to no call: a FATAL refusal of the connection.
    pub(super) const NONE: i32 = -1;
}

/// Answers waiting to be written, per connection: at most
/// `calls_per_connection` of them calls' (each holds its call's place until
/// written), the rest the connection's own small ones.
const ANSWER_QUEUE: usize = 64;
/// The longest frame before the connection context is established: SASL
/// and the context are small, and no one is known yet.
const MAX_HANDSHAKE_FRAME: usize = 64 << 10;

/// Who a connection's calls come from, once established.
#[derive(Debug, Clone)]
pub struct Peer {
    /// The user the connection authenticated as.
    pub user: Arc<str>,
    /// Its address.
    pub address: SocketAddr,
    /// The attempt a token named, when the connection authenticated by
    /// one (an application master's AMRMToken).
    pub token_identifier: Option<Bytes>,
}

/// One call, for a protocol to serve.
#[derive(Debug)]
pub struct Call {
    /// Who calls.
    pub peer: Peer,
    /// `declaringClassProtocolName`, e.g.
    /// org.apache.hadoop.yarn.api.ApplicationClientProtocolPB.
    pub protocol: String,
    /// The method, e.g. getNewApplication.
    pub method: String,
    /// The request message's bytes, for the method to decode.
    pub request: Bytes,
}

impl Call {
    /// Its request, decoded as `M`; bytes that are not one are refused,
    /// naming the method.
    pub fn decode<M: prost::Message + Default>(&self) -> Result<M, RpcError> {
        M::decode(&self.request[..]).map_err(|e| RpcError::undecodable(&self.method, e))
    }

    /// What its caller's token names, read by `read` from the token's
    /// identifier; a caller without a token (SIMPLE: whoever it says it is)
    /// or with a token `read` refuses is an AccessControlException naming
    /// the `kind` of token the port takes.
    pub fn token<T>(
        &self,
        kind: &str,
        read: impl FnOnce(&[u8]) -> Result<T, String>,
    ) -> Result<T, RpcError> {
        match &self.peer.token_identifier {
            Some(identifier) => {
                read(identifier).map_err(|why| RpcError::new(class::ACCESS_CONTROL, why))
            }
            None => Err(RpcError::new(
                class::ACCESS_CONTROL,
                format!(
                    "No {kind} found for user {}: an application master authenticates with the {kind} it was given",
                    self.peer.user
                ),
            )),
        }
    }
}

/// What the connection learnt before its first call.
struct Established {
    peer: Peer,
}

/// Serves one connection until the client closes it, it breaks a rule, it
/// idles past the limit, or the server stops.
pub(super) async fn serve(stream: TcpStream, address: SocketAddr, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let (mut reader, writer) = stream.into_split();
    let (answers, queued) = mpsc::channel::<Answer>(ANSWER_QUEUE);
    let writing = tokio::spawn(write_answers(writer, queued, shared.limits.idle));
    let result = read_calls(&mut reader, address, &shared, &answers).await;
    if let Err(refusal) = result {
        tracing::debug!(%address, "Hadoop RPC connection closed: {}", refusal.message);
        if let Some(error) = refusal.answer {
            let _ = answers
                .send(Answer::last(error_frame(call_id::NONE, None, &error)))
                .await;
        }
    }
    // The writer ends once every call's sender is gone (calls in flight
    // still answer) or a last answer is written.
    drop(answers);
    let _ = writing.await;
}

/// A frame to write, and whether the connection closes after it.
struct Answer {
    bytes: Vec<u8>,
    last: bool,
    /// What a call's answer holds until it is written (or the connection
    /// ends): its call's place among the connection's, so a client that
    /// does not read has at most so many answers waiting and no more of
    /// its calls are read; and its bytes of the listener's answer budget.
    _held: Vec<OwnedSemaphorePermit>,
}

impl Answer {
    /// A small answer of the connection's own (SASL, a refusal).
    fn plain(bytes: Vec<u8>) -> Answer {
        Answer {
            bytes,
            last: false,
            _held: Vec::new(),
        }
    }

    fn last(bytes: Vec<u8>) -> Answer {
        Answer {
            last: true,
            ..Answer::plain(bytes)
        }
    }
}

/// Writes answers in turn. A client that stops reading them is cut off
/// after `patience`: its queued answers and calls are then dropped (their
/// senders see the channel closed), so it cannot hold the server's memory
/// or its call slots.
async fn write_answers(
    mut writer: OwnedWriteHalf,
    mut queued: mpsc::Receiver<Answer>,
    patience: Duration,
) {
    while let Some(answer) = queued.recv().await {
        let written = tokio::time::timeout(patience, writer.write_all(&answer.bytes)).await;
        if !matches!(written, Ok(Ok(()))) || answer.last {
            break;
        }
    }
    queued.close();
    let _ = tokio::time::timeout(patience, writer.shutdown()).await;
}

/// Why a connection ends early: for the log, and what to tell the client
/// (nothing when it is not a Hadoop client, or has gone).
struct Refusal {
    message: String,
    answer: Option<RpcError>,
}

impl Refusal {
    fn silent(message: impl Into<String>) -> Refusal {
        Refusal {
            message: message.into(),
            answer: None,
        }
    }

    fn fatal(class: &'static str, code: ErrorCode, message: impl Into<String>) -> Refusal {
        let message = message.into();
        Refusal {
            answer: Some(RpcError::fatal(class, code, message.clone())),
            message,
        }
    }
}

impl From<FrameError> for Refusal {
    fn from(error: FrameError) -> Refusal {
        match error {
            FrameError::TooLong { .. } => Refusal::fatal(
                class::SERVER,
                ErrorCode::FatalInvalidRpcHeader,
                error.to_string(),
            ),
            FrameError::Busy { .. } => {
                Refusal::fatal(class::RETRIABLE, ErrorCode::FatalUnknown, error.to_string())
            }
            FrameError::Closed | FrameError::Slow(_) | FrameError::Io(_) => {
                Refusal::silent(error.to_string())
            }
        }
    }
}

fn undecodable(what: &str, error: prost::DecodeError) -> Refusal {
    Refusal::fatal(
        class::SERVER,
        ErrorCode::FatalDeserializingRequest,
        format!("{what} cannot be decoded: {error}"),
    )
}

async fn read_calls(
    reader: &mut tokio::net::tcp::OwnedReadHalf,
    address: SocketAddr,
    shared: &Arc<Shared>,
    answers: &mpsc::Sender<Answer>,
) -> Result<(), Refusal> {
    let limits = &shared.limits;
    let mut preamble = [0u8; 7];
    match tokio::time::timeout(limits.handshake, reader.read_exact(&mut preamble)).await {
        Err(_) => return Err(Refusal::silent("no preamble in time")),
        Ok(Err(e)) => return Err(Refusal::silent(format!("no preamble: {e}"))),
        Ok(Ok(_)) => {}
    }
    let auth = frame::parse_preamble(&preamble).map_err(|e| match e {
        frame::PreambleError::NotHadoop => Refusal::silent(e.to_string()),
        frame::PreambleError::Version(_) => Refusal::fatal(
            class::VERSION_MISMATCH,
            ErrorCode::FatalVersionMismatch,
            e.to_string(),
        ),
        frame::PreambleError::Auth(_) => {
            Refusal::fatal(class::SASL, ErrorCode::FatalUnauthorized, e.to_string())
        }
    })?;
    let established = establish(reader, address, auth, shared, answers).await?;
    let in_flight = Arc::new(Semaphore::new(limits.calls_per_connection));
    let answer_room = Arc::new(Semaphore::new(limits.answer_bytes_per_connection));
    loop {
        // Idle only counts while no call is in flight: a call may take a
        // while, and the client waits for it in silence (or pings).
        let idle = if in_flight.available_permits() == limits.calls_per_connection {
            limits.idle
        } else {
            Duration::from_secs(86_400)
        };
        let next = tokio::select! {
            frame = next_frame(reader, shared, idle, limits.max_frame) => frame,
            () = answers.closed() => return Err(Refusal::silent("its answers are not read")),
        };
        let mut frame = match next {
            Err(FrameError::Closed) => return Ok(()),
            Err(FrameError::Slow(_)) if idle == limits.idle => {
                return Err(Refusal::silent("idle past the limit"));
            }
            other => other?,
        };
        let header: RpcRequestHeaderProto = frame
            .message()
            .map_err(|e| undecodable("the request header", e))?;
        match header.call_id {
            call_id::PING => continue,
            id if id < 0 => {
                return Err(Refusal::fatal(
                    class::SERVER,
                    ErrorCode::FatalInvalidRpcHeader,
                    format!("call id {id} is not a call once the connection is established"),
                ));
            }
            _ => {}
        }
        check_header(&header)?;
        // A token lapses or is revoked while its connection is open: the
        // connection ends with it.
        if let (Some(identifier), sasl::Methods::Tokens { passwords, .. }) =
            (&established.peer.token_identifier, &*shared.sasl)
        {
            passwords.standing(identifier).map_err(|why| {
                Refusal::fatal(class::ACCESS_CONTROL, ErrorCode::FatalUnauthorized, why)
            })?;
        }
        let request: RequestHeaderProto = frame
            .message()
            .map_err(|e| undecodable("the request's method header", e))?;
        let body = match frame.raw() {
            Ok(body) => body,
            Err(e) => {
                let error = RpcError::undecodable(&request.method_name, e);
                let _ = answers
                    .send(Answer::plain(error_frame(
                        header.call_id,
                        Some(&header),
                        &error,
                    )))
                    .await;
                continue;
            }
        };
        // The body is a slice of the frame: its budget is held until the
        // call is answered.
        let budget = frame.into_budget();
        // At most so many calls of one connection at once: further frames
        // wait unread, so one client cannot queue unbounded work. A client
        // whose answers are no longer written is done.
        let permit = tokio::select! {
            permit = in_flight.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => return Ok(()),
            },
            () = answers.closed() => return Err(Refusal::silent("its answers are not read")),
        };
        let call = Call {
            peer: established.peer.clone(),
            protocol: request.declaring_class_protocol_name.clone(),
            method: request.method_name.clone(),
            request: body,
        };
        let answers = answers.clone();
        let shared = shared.clone();
        let only_reads = shared.protocols.only_reads(&call.method);
        let answer_room = answer_room.clone();
        tokio::spawn(async move {
            let id = header.call_id;
            // The server's calls at once are bounded too, so RPC cannot fill
            // the event loop's queue; a call whose client is gone is dropped.
            let slot = tokio::select! {
                slot = shared.calls.clone().acquire_owned() => slot,
                () = answers.closed() => return,
            };
            let Ok(slot) = slot else { return };
            let (bytes, last) = match shared.protocols.serve(call).await {
                Ok(response) => (success_frame(id, &header, response), false),
                Err(error) => (error_frame(id, Some(&header), &error), is_fatal(error.code)),
            };
            // Served: its place among the server's calls and its request's
            // bytes go back now, not once the client reads the answer (one
            // that never reads would hold up everyone's calls).
            drop((slot, budget));
            let answer = match shared.answer_bytes(bytes.len(), &answer_room) {
                Ok([own, all]) => Answer {
                    bytes,
                    last,
                    _held: vec![permit, own, all],
                },
                // A read is asked again: nothing was done.
                Err(full) if only_reads && !last => Answer {
                    bytes: error_frame(id, Some(&header), &full),
                    last: false,
                    _held: vec![permit],
                },
                // A call that changed something (or a refusal that ends
                // the connection) is told what happened, whatever the
                // budget: its answer is small.
                Err(_) => Answer {
                    bytes,
                    last,
                    _held: vec![permit],
                },
            };
            let _ = answers.send(answer).await;
        });
    }
}

/// The next frame, of at most `max` bytes.
async fn next_frame(
    reader: &mut tokio::net::tcp::OwnedReadHalf,
    shared: &Shared,
    idle: Duration,
    max: usize,
) -> Result<Frame, FrameError> {
    let handshake = shared.limits.handshake;
    frame::read_frame(reader, max, &shared.budget, idle, handshake).await
}

/// Java's server checks both: a protocol-buffer call in one packet.
fn check_header(header: &RpcRequestHeaderProto) -> Result<(), Refusal> {
    // The only kind YARN's protocols use.
    if header.rpc_kind != Some(RpcKindProto::RpcProtocolBuffer as i32) {
        return Err(Refusal::fatal(
            class::SERVER,
            ErrorCode::FatalInvalidRpcHeader,
            format!(
                "rpcKind {:?} is not served: YARN's protocols are protocol buffers (2)",
                header.rpc_kind
            ),
        ));
    }
    if header.rpc_op != Some(OperationProto::RpcFinalPacket as i32) {
        return Err(Refusal::fatal(
            class::SERVER,
            ErrorCode::FatalInvalidRpcHeader,
            format!(
                "rpcOp {:?} is not served (0, a final packet, is)",
                header.rpc_op
            ),
        ));
    }
    Ok(())
}

/// The SASL exchange, when the client asks for one, then the connection
/// context: who the calls come from.
async fn establish(
    reader: &mut tokio::net::tcp::OwnedReadHalf,
    address: SocketAddr,
    auth: AuthProtocol,
    shared: &Arc<Shared>,
    answers: &mpsc::Sender<Answer>,
) -> Result<Established, Refusal> {
    let handshake = shared.limits.handshake;
    let mut token = None;
    if auth == AuthProtocol::Sasl {
        let mut exchange = sasl::Exchange::new(shared.sasl.clone());
        loop {
            let mut frame = next_frame(reader, shared, handshake, MAX_HANDSHAKE_FRAME).await?;
            let header: RpcRequestHeaderProto = frame
                .message()
                .map_err(|e| undecodable("the SASL header", e))?;
            if header.call_id != call_id::SASL {
                return Err(Refusal::fatal(
                    class::SASL,
                    ErrorCode::FatalUnauthorized,
                    format!(
                        "call id {} before SASL authentication completed",
                        header.call_id
                    ),
                ));
            }
            let message: RpcSaslProto = frame
                .message()
                .map_err(|e| undecodable("the SASL message", e))?;
            let step = exchange.step(message).map_err(|message| {
                Refusal::fatal(class::SASL, ErrorCode::FatalUnauthorized, message)
            })?;
            // A client that chose SIMPLE waits for no answer (Hadoop's
            // server sends none): one would be read as a call's.
            if !step.silent {
                let bytes = frame::encode_frame(&[&sasl_header(), &step.reply]);
                answers
                    .send(Answer::plain(bytes))
                    .await
                    .map_err(|_| Refusal::silent("the writer stopped"))?;
            }
            if let Some(done) = step.done {
                token = done.token;
                break;
            }
        }
    }
    let mut frame = next_frame(reader, shared, handshake, MAX_HANDSHAKE_FRAME).await?;
    let header: RpcRequestHeaderProto = frame
        .message()
        .map_err(|e| undecodable("the connection context's header", e))?;
    if header.call_id != call_id::CONNECTION_CONTEXT {
        return Err(Refusal::fatal(
            class::SERVER,
            ErrorCode::FatalInvalidRpcHeader,
            "Connection context not established",
        ));
    }
    let context: IpcConnectionContextProto = frame
        .message()
        .map_err(|e| undecodable("the connection context", e))?;
    let user = match &token {
        // The token established who calls: Java sends no user then.
        Some(token) => token.user.clone(),
        None => {
            let named = context
                .user_info
                .as_ref()
                .and_then(|u| u.effective_user.as_deref());
            shared.identify(named).map_err(|message| {
                Refusal::fatal(class::ACCESS_CONTROL, ErrorCode::FatalUnauthorized, message)
            })?
        }
    };
    Ok(Established {
        peer: Peer {
            user,
            address,
            token_identifier: token.map(|t| t.identifier),
        },
    })
}

/// The header of a SASL answer.
fn sasl_header() -> RpcResponseHeaderProto {
    RpcResponseHeaderProto {
        call_id: call_id::SASL as u32,
        status: RpcStatusProto::Success as i32,
        server_ipc_version_num: Some(u32::from(frame::VERSION)),
        ..Default::default()
    }
}

/// A call's success: the header, then the response message (written even
/// when empty, as the Java client expects).
fn success_frame(id: i32, request: &RpcRequestHeaderProto, response: Vec<u8>) -> Vec<u8> {
    let header = RpcResponseHeaderProto {
        call_id: id as u32,
        status: RpcStatusProto::Success as i32,
        server_ipc_version_num: Some(u32::from(frame::VERSION)),
        client_id: Some(request.client_id.clone()),
        retry_count: request.retry_count,
        ..Default::default()
    };
    frame::encode_frame(&[&header as &dyn EncodeDelimited, &Encoded(response)])
}

/// A call's failure, or (with no request) a FATAL refusal of the connection.
fn error_frame(id: i32, request: Option<&RpcRequestHeaderProto>, error: &RpcError) -> Vec<u8> {
    let header = RpcResponseHeaderProto {
        call_id: id as u32,
        status: if is_fatal(error.code) {
            RpcStatusProto::Fatal as i32
        } else {
            RpcStatusProto::Error as i32
        },
        server_ipc_version_num: Some(u32::from(frame::VERSION)),
        exception_class_name: Some(error.class.to_string()),
        error_msg: Some(error.message.clone()),
        error_detail: Some(error.code as i32),
        client_id: request.map(|r| r.client_id.clone()),
        retry_count: request.and_then(|r| r.retry_count),
        ..Default::default()
    };
    frame::encode_frame(&[&header])
}
