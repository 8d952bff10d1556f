//! A Hadoop IPC listener: accepts connections up to a limit, serves each
//! (`connection.rs`) with the protocols given, and stops when told, closing
//! every connection it opened.

use std::future::Future;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::connection::{self, Call};
use super::error::RpcError;
use super::frame::FrameBudget;
use super::sasl::Methods;
use crate::security::{AuthError, Authenticator};

/// The protocols one listener serves, dispatched by the name each call
/// gives (`declaringClassProtocolName`).
pub trait Protocols: Send + Sync + 'static {
    /// Serves `call`: the response message's bytes, or the failure.
    fn serve(&self, call: Call) -> BoxFuture<'static, Result<Vec<u8>, RpcError>>;
}

/// What one listener allows each client.
#[derive(Debug, Clone)]
pub struct Limits {
    /// The longest frame (Hadoop's `ipc.maximum.data.length` is 128 MB; a
    /// YARN call here needs far less).
    pub max_frame: usize,
    /// The request bytes all connections may hold at once.
    pub budget_bytes: usize,
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
    pub(super) protocols: Arc<dyn Protocols>,
    pub(super) sasl: Arc<Methods>,
    authenticator: Arc<Authenticator>,
}

impl Shared {
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
