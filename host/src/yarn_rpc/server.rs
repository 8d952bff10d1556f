//! A Hadoop IPC listener: accepts connections up to a limit, serves each
//! (`connection.rs`) with the protocols given, and stops when told, closing
//! every connection it opened.

use std::future::Future;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use super::connection::{self, Call};
use super::error::{RpcError, class};
use super::frame::FrameBudget;
use super::sasl::Methods;
use crate::security::{AuthError, Authenticator};

/// The protocols one listener serves, dispatched by the name each call
/// gives (`declaringClassProtocolName`).
pub trait Protocols: Send + Sync + 'static {
    /// Serves `call`: the response message's bytes, or the failure.
    fn serve(&self, call: Call) -> BoxFuture<'static, Result<Vec<u8>, RpcError>>;

    /// Whether a call of `method` only reads, so that once served its
    /// answer may be replaced with RetriableException when the answer
    /// budget is full: the client asks again and nothing was done twice.
    /// A call that changes something is always told its answer (such
    /// answers are small).
    fn only_reads(&self, method: &str) -> bool {
        let _ = method;
        false
    }
}

/// What one listener allows each client.
#[derive(Debug, Clone)]
pub struct Limits {
    /// The longest frame (Hadoop's `ipc.maximum.data.length` is 128 MB; a
    /// YARN call here needs far less).
    pub max_frame: usize,
    /// The request bytes all connections may hold at once.
    pub budget_bytes: usize,
    /// The answer bytes all connections may hold unwritten at once (their
    /// clients not reading them yet); a read answered beyond it gets
    /// RetriableException instead (a call that changed something is told
    /// its answer anyway, see [`Protocols::only_reads`]).
    pub answer_budget_bytes: usize,
    /// The part of it one connection may hold, so that one client that
    /// does not read leaves the rest to others.
    pub answer_bytes_per_connection: usize,
    /// Open connections at once; beyond them a new one is closed at once.
    pub max_connections: usize,
    /// Calls of one connection served at once; further ones wait unread.
    pub calls_per_connection: usize,
    /// Calls of all connections served at once (each takes its turn on the
    /// event loop); further ones wait.
    pub calls: usize,
    /// Open connections from one address at once.
    pub connections_per_address: usize,
    /// How long the preamble, the SASL exchange, the connection context
    /// and each frame's body may take to arrive.
    pub handshake: Duration,
    /// How long a connection with no call in flight may stay silent (Java
    /// clients close theirs after 10 s idle).
    pub idle: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_frame: crate::limits::MAX_RPC_FRAME_BYTES,
            budget_bytes: 256 << 20,
            answer_budget_bytes: 256 << 20,
            answer_bytes_per_connection: 16 << 20,
            max_connections: 1024,
            calls_per_connection: 16,
            calls: 32,
            connections_per_address: 256,
            handshake: Duration::from_secs(10),
            idle: Duration::from_secs(20),
        }
    }
}

/// What every connection of a listener shares.
pub(super) struct Shared {
    pub(super) limits: Limits,
    /// Places for calls being served, across connections.
    pub(super) calls: Arc<Semaphore>,
    pub(super) budget: FrameBudget,
    /// The answer bytes not yet written, across connections.
    answer_budget: Arc<Semaphore>,
    pub(super) protocols: Arc<dyn Protocols>,
    pub(super) sasl: Arc<Methods>,
    authenticator: Arc<Authenticator>,
}

impl Shared {
    /// Takes `bytes` of the answer budget until the permit is dropped (the
    /// answer written), or says why not: never waiting, as the answer is
    /// made already and waiting would hold it.
    pub(super) fn answer_bytes(
        &self,
        bytes: usize,
        connections: &Arc<Semaphore>,
    ) -> Result<[OwnedSemaphorePermit; 2], RpcError> {
        let take = |room: &Arc<Semaphore>| {
            u32::try_from(bytes)
                .ok()
                .and_then(|bytes| room.clone().try_acquire_many_owned(bytes).ok())
        };
        let full = |whose: &str, limit: usize| {
            RpcError::new(
                class::RETRIABLE,
                format!(
                    "{whose} {} MiB of answers not read yet, the most it keeps: read them, then try again",
                    limit >> 20
                ),
            )
        };
        let own = take(connections).ok_or_else(|| {
            full(
                "this connection holds",
                self.limits.answer_bytes_per_connection,
            )
        })?;
        let all = take(&self.answer_budget).ok_or_else(|| {
            full(
                "the server holds its clients'",
                self.limits.answer_budget_bytes,
            )
        })?;
        Ok([own, all])
    }

    /// Who a connection's calls come from, with SIMPLE authentication: the
    /// user its context names, believed as simple mode believes the
    /// X-Weft-User header. Token mode takes no one's word.
    pub(super) fn identify(&self, named: Option<&str>) -> Result<Arc<str>, String> {
        match &*self.authenticator {
            Authenticator::Simple { .. } => {
                let user = self
                    .authenticator
                    .authenticate(named, None)
                    .map_err(|e: AuthError| e.to_string())?;
                Ok(Arc::from(user))
            }
            Authenticator::Token(_) => Err(
                "this server takes tokens (weft.security.authentication=token) and no SIMPLE user: a YARN client authenticates with an RM delegation token (`weft token yarn --out FILE` with your bearer token, then HADOOP_TOKEN_FILE_LOCATION=FILE)"
                    .into(),
            ),
        }
    }
}

/// A listener's parts.
pub struct Listener {
    /// Where it listens.
    pub socket: TcpListener,
    /// What it serves.
    pub protocols: Arc<dyn Protocols>,
    /// Who callers may be.
    pub authenticator: Arc<Authenticator>,
    /// How SASL is answered.
    pub sasl: Methods,
    /// Its bounds.
    pub limits: Limits,
}

/// Accepts and serves connections until `stop` resolves, then closes them.
pub async fn serve(listener: Listener, stop: impl Future<Output = ()>) {
    let Listener {
        socket,
        protocols,
        authenticator,
        sasl,
        limits,
    } = listener;
    let open = Arc::new(Semaphore::new(limits.max_connections));
    let shared = Arc::new(Shared {
        calls: Arc::new(Semaphore::new(limits.calls)),
        budget: FrameBudget::new(limits.budget_bytes),
        answer_budget: Arc::new(Semaphore::new(limits.answer_budget_bytes)),
        limits,
        protocols,
        sasl: Arc::new(sasl),
        authenticator,
    });
    let per_address = PerAddress::new(shared.limits.connections_per_address);
    let mut connections = JoinSet::new();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => break,
            Some(_) = connections.join_next() => {}
            accepted = socket.accept() => match accepted {
                Ok((stream, address)) => {
                    // Beyond the limit a connection is closed at once: the
                    // client sees it end and retries later.
                    let Ok(place) = open.clone().try_acquire_owned() else {
                        tracing::debug!(%address, "Hadoop RPC connection refused: {} are open", shared.limits.max_connections);
                        continue;
                    };
                    let Some(from_address) = per_address.enter(address.ip()) else {
                        tracing::debug!(%address, "Hadoop RPC connection refused: {} are open from that address", shared.limits.connections_per_address);
                        continue;
                    };
                    let shared = shared.clone();
                    connections.spawn(async move {
                        connection::serve(stream, address, shared).await;
                        drop((place, from_address));
                    });
                }
                Err(e) => {
                    // Out of file descriptors, say: wait rather than spin.
                    tracing::warn!("Hadoop RPC accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }
    connections.abort_all();
    while connections.join_next().await.is_some() {}
}

/// Open connections by client address, each bounded.
#[derive(Clone)]
struct PerAddress {
    open: Arc<std::sync::Mutex<std::collections::HashMap<IpAddr, usize>>>,
    limit: usize,
}

/// One connection's place among its address's; given back when dropped.
struct AddressPlace {
    of: PerAddress,
    address: IpAddr,
}

impl PerAddress {
    fn new(limit: usize) -> PerAddress {
        PerAddress {
            open: Default::default(),
            limit,
        }
    }

    /// A place for one more connection from `address`, if it has one.
    fn enter(&self, address: IpAddr) -> Option<AddressPlace> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let count = open.entry(address).or_insert(0);
        if *count >= self.limit {
            return None;
        }
        *count += 1;
        Some(AddressPlace {
            of: self.clone(),
            address,
        })
    }
}

impl Drop for AddressPlace {
    fn drop(&mut self) {
        let mut open = self.of.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = open.get_mut(&self.address) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.address);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use prost::Message;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    use super::*;
    use crate::yarn_rpc::frame::{EncodeDelimited, Encoded, encode_frame};
    use crate::yarn_rpc::messages::ipc::{
        IpcConnectionContextProto, RequestHeaderProto, RpcRequestHeaderProto,
        RpcResponseHeaderProto, RpcStatusProto,
    };

    /// Answers `small` with a few bytes and anything else (`big`, `change`)
    /// with 1 MiB.
    struct Sized;

    impl Protocols for Sized {
        fn serve(&self, call: Call) -> BoxFuture<'static, Result<Vec<u8>, RpcError>> {
            let bytes = if call.method == "small" { 8 } else { 1 << 20 };
            Box::pin(async move { Ok(vec![7; bytes]) })
        }

        /// `change` stands for a call that does something.
        fn only_reads(&self, method: &str) -> bool {
            method != "change"
        }
    }

    /// A SIMPLE client's preamble and connection context, then `calls`
    /// calls of `method` (ids from 1).
    fn calls(method: &str, calls: i32) -> Vec<u8> {
        let header = |call_id| RpcRequestHeaderProto {
            rpc_kind: Some(2),
            rpc_op: Some(0),
            call_id,
            client_id: vec![7; 16],
            retry_count: Some(-1),
            ..Default::default()
        };
        let context = IpcConnectionContextProto {
            user_info: None,
            protocol: Some("test".into()),
        };
        let mut bytes = b"hrpc\x09\x00\x00".to_vec();
        bytes.extend(encode_frame(&[&header(-3), &context]));
        let method = RequestHeaderProto {
            method_name: method.into(),
            declaring_class_protocol_name: "test".into(),
            client_protocol_version: 1,
        };
        for id in 1..=calls {
            let parts: [&dyn EncodeDelimited; 3] = [&header(id), &method, &Encoded(Vec::new())];
            bytes.extend(encode_frame(&parts));
        }
        bytes
    }

    /// A connection that sends `calls` calls of `method` and reads
    /// nothing (its receive buffer as small as the kernel allows).
    async fn never_reading(address: std::net::SocketAddr, method: &str, count: i32) -> TcpStream {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let mut stream = socket.connect(address).await.unwrap();
        stream.write_all(&calls(method, count)).await.unwrap();
        stream
    }

    /// The status (and exception class) of the next answer on `stream`.
    async fn status(stream: &mut TcpStream) -> (i32, String) {
        let mut prefix = [0u8; 4];
        stream.read_exact(&mut prefix).await.unwrap();
        let mut body = vec![0u8; u32::from_be_bytes(prefix) as usize];
        stream.read_exact(&mut body).await.unwrap();
        let header = RpcResponseHeaderProto::decode_length_delimited(&body[..]).unwrap();
        (
            header.status,
            header.exception_class_name.unwrap_or_default(),
        )
    }

    /// One call of `method` on a fresh connection that reads its answer,
    /// within 5 s.
    async fn call(address: std::net::SocketAddr, method: &str) -> (i32, String) {
        let mut stream = TcpStream::connect(address).await.unwrap();
        stream.write_all(&calls(method, 1)).await.unwrap();
        tokio::time::timeout(Duration::from_secs(5), status(&mut stream))
            .await
            .unwrap_or_else(|_| panic!("{method} was not answered within 5 s"))
    }

    /// Clients that send calls and never read the answers hold none of
    /// the server's call places (others are answered at once, not when
    /// the writer gives up on them after 20 s); each holds at most its
    /// connection's share of the answer budget, and all of them no more
    /// than the budget: a read answered beyond it gets RetriableException,
    /// and the room comes back when they go.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn clients_that_never_read_hold_no_calls_up_and_bounded_answers() {
        let socket = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = socket.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let listener = Listener {
            socket,
            protocols: Arc::new(Sized),
            authenticator: Arc::new(Authenticator::Simple {
                default_user: "anonymous".into(),
            }),
            sasl: Methods::SimpleOnly,
            limits: Limits {
                calls: 4,
                // Eight big answers in all, two a connection, and room for
                // small ones.
                answer_budget_bytes: (8 << 20) + (64 << 10),
                answer_bytes_per_connection: (2 << 20) + (64 << 10),
                ..Limits::default()
            },
        };
        let serving = tokio::spawn(serve(listener, async {
            let _ = stopped.await;
        }));
        let ok = RpcStatusProto::Success as i32;
        // One client alone holds its share, and leaves the rest to others.
        let mut silent = vec![never_reading(address, "big", 200).await];
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(call(address, "big").await.0, ok, "one client took all");
        for _ in 0..5 {
            silent.push(never_reading(address, "big", 200).await);
        }
        // Time for their calls to be read and served (the answers queued
        // up to what the connection allows).
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(call(address, "small").await.0, ok);
        // Each silent client's kernel buffers take a few MiB, its share of
        // the budget the next two of its answers: six fill it.
        let started = tokio::time::Instant::now();
        loop {
            let (status, class) = call(address, "big").await;
            if status != ok {
                assert_eq!(class, "org.apache.hadoop.ipc.RetriableException");
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the unread answers were never bounded"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(call(address, "small").await.0, ok);
        // A call that did something is told so, budget or not.
        assert_eq!(call(address, "change").await.0, ok);
        drop(silent);
        let started = tokio::time::Instant::now();
        while call(address, "big").await.0 != ok {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the budget did not come back"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let _ = stop.send(());
        serving.await.unwrap();
    }
}
