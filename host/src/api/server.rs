//! Serving the router: plain HTTP, or TLS with rustls when
//! `weft.http.tls.cert-file` and `.key-file` are set; each request knows the
//! client's address; connections are capped and idle or slow ones cut off
//! (`Guarded`); a stop drains what is in flight.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use anyhow::Context;
use axum::Router;
use axum_server::Handle;
use axum_server::tls_rustls::RustlsConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::config::{HttpSettings, TlsFiles};

/// A client has this long to send a request's headers (against clients
/// that open connections and trickle bytes to hold them).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// And this long to finish a TLS handshake.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// In-flight requests get this long to finish once a stop is asked for.
const DRAIN: Duration = Duration::from_secs(5);

/// Serves `router` on `listener` as `settings` say until `stop` resolves.
pub async fn serve(
    router: Router,
    listener: std::net::TcpListener,
    settings: &HttpSettings,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    listener
        .set_nonblocking(true)
        .context("cannot make the listener non-blocking")?;
    let handle: Handle<SocketAddr> = Handle::new();
    let stopper = handle.clone();
    tokio::spawn(async move {
        stop.await;
        stopper.graceful_shutdown(Some(DRAIN));
    });
    let service = router.into_make_service_with_connect_info::<SocketAddr>();
    let guarded = Guarded::new(
        settings.max_connections.unwrap_or_else(max_connections),
        settings.max_connections_per_client,
        settings.idle_timeout,
    );
    tracing::info!(max_connections = guarded.max, idle_timeout = ?guarded.idle_timeout, "connections capped");
    match &settings.tls {
        None => {
            let mut server = axum_server::from_tcp(listener)?
                .acceptor(guarded)
                .handle(handle);
            limit_slow_clients(server.http_builder());
            server.serve(service).await
        }
        Some(files) => {
            let config = RustlsConfig::from_config(Arc::new(server_config(files)?));
            let acceptor = axum_server::tls_rustls::RustlsAcceptor::new(config)
                .handshake_timeout(TLS_HANDSHAKE_TIMEOUT)
                .acceptor(guarded);
            let mut server = axum_server::from_tcp(listener)?
                .acceptor(acceptor)
                .handle(handle);
            limit_slow_clients(server.http_builder());
            server.serve(service).await
        }
    }
    .context("the HTTP server failed")
}

fn limit_slow_clients(
    builder: &mut hyper_util::server::conn::auto::Builder<hyper_util::rt::TokioExecutor>,
) {
    builder
        .http1()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
}

/// The TLS configuration from PEM files: a certificate chain and its key.
pub fn server_config(files: &TlsFiles) -> anyhow::Result<rustls::ServerConfig> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&files.cert)
        .with_context(|| {
            format!(
                "cannot read weft.http.tls.cert-file {}",
                files.cert.display()
            )
        })?
        .collect::<Result<_, _>>()
        .with_context(|| {
            format!(
                "weft.http.tls.cert-file {} is not PEM certificates",
                files.cert.display()
            )
        })?;
    if certs.is_empty() {
        anyhow::bail!(
            "weft.http.tls.cert-file {} holds no certificate",
            files.cert.display()
        );
    }
    let key = PrivateKeyDer::from_pem_file(&files.key).with_context(|| {
        format!(
            "cannot read a PEM private key from weft.http.tls.key-file {}",
            files.key.display()
        )
    })?;
    rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .context("the TLS provider offers no safe protocol version")?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .context("the TLS certificate and key do not go together")
}

/// Half the process's file-descriptor limit (the rest is for the store,
/// policies and logs), between 16 and 10,000 connections.
fn max_connections() -> usize {
    let soft = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        .map(|(soft, _)| soft)
        .unwrap_or(1024);
    (soft / 2).clamp(16, 10_000) as usize
}

/// Accepts a connection only while fewer than `max` are open, and fewer
/// than `per_client` from its address (beyond either it is closed at once,
/// so no flood takes every file descriptor and no one client takes every
/// place), and closes one on which nothing can be read or written for
/// `idle_timeout`: an idle keep-alive, a client gone quiet mid-body, a
/// socket opened and left (`weft.http.idle-timeout-ms`, longer than any
/// request takes).
#[derive(Debug, Clone)]
struct Guarded {
    max: usize,
    per_client: usize,
    idle_timeout: Duration,
    permits: Arc<tokio::sync::Semaphore>,
    by_client: ClientCounts,
}

/// Open connections by client address.
type ClientCounts = Arc<std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, usize>>>;

impl Guarded {
    fn new(max: usize, per_client: usize, idle_timeout: Duration) -> Guarded {
        Guarded {
            max,
            per_client,
            idle_timeout,
            permits: Arc::new(tokio::sync::Semaphore::new(max)),
            by_client: Default::default(),
        }
    }

    /// A place for one more connection from `address`, if it has one left.
    fn client_slot(&self, address: Option<std::net::IpAddr>) -> Option<ClientSlot> {
        let Some(address) = address else {
            return Some(ClientSlot(None));
        };
        let mut counts = self.by_client.lock().unwrap_or_else(|e| e.into_inner());
        let open = counts.entry(address).or_insert(0);
        if *open >= self.per_client {
            return None;
        }
        *open += 1;
        Some(ClientSlot(Some((self.by_client.clone(), address))))
    }
}

/// One connection's place in its client's count, given back when it closes.
struct ClientSlot(Option<(ClientCounts, std::net::IpAddr)>);

impl Drop for ClientSlot {
    fn drop(&mut self) {
        if let Some((counts, address)) = &self.0 {
            let mut counts = counts.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(open) = counts.get_mut(address) {
                *open = open.saturating_sub(1);
                if *open == 0 {
                    counts.remove(address);
                }
            }
        }
    }
}

/// Where a connection comes from.
pub trait PeerAddress {
    /// The client's IP address, which connections are counted per; None if
    /// it cannot be read (then it is counted only in the total).
    fn peer_ip(&self) -> Option<std::net::IpAddr>;
}

impl PeerAddress for tokio::net::TcpStream {
    fn peer_ip(&self) -> Option<std::net::IpAddr> {
        self.peer_addr().ok().map(|address| address.ip())
    }
}

fn refuse(what: &str, message: String) -> io::Error {
    crate::metrics::metrics()
        .requests_refused
        .get_or_create(&crate::metrics::WhatLabels { what: what.into() })
        .inc();
    io::Error::other(message)
}

impl<I, S> axum_server::accept::Accept<I, S> for Guarded
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + PeerAddress,
{
    type Stream = GuardedStream<I>;
    type Service = S;
    type Future = std::future::Ready<io::Result<(GuardedStream<I>, S)>>;

    fn accept(&self, stream: I, service: S) -> Self::Future {
        let Ok(permit) = self.permits.clone().try_acquire_owned() else {
            return std::future::ready(Err(refuse(
                "too many connections",
                format!(
                    "more than {} connections are open; this one is closed",
                    self.max
                ),
            )));
        };
        let Some(slot) = self.client_slot(stream.peer_ip()) else {
            return std::future::ready(Err(refuse(
                "too many connections from one client",
                format!(
                    "its client holds {} connections already; this one is closed",
                    self.per_client
                ),
            )));
        };
        let mut timed = tokio_io_timeout::TimeoutStream::new(stream);
        timed.set_read_timeout(Some(self.idle_timeout));
        timed.set_write_timeout(Some(self.idle_timeout));
        std::future::ready(Ok((
            GuardedStream {
                inner: Box::pin(timed),
                _permit: permit,
                _slot: slot,
            },
            service,
        )))
    }
}

/// A connection holding its place under the cap until it closes.
struct GuardedStream<I> {
    inner: Pin<Box<tokio_io_timeout::TimeoutStream<I>>>,
    _permit: tokio::sync::OwnedSemaphorePermit,
    _slot: ClientSlot,
}

impl<I: tokio::io::AsyncRead + tokio::io::AsyncWrite> tokio::io::AsyncRead for GuardedStream<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.get_mut().inner.as_mut().poll_read(cx, buf)
    }
}

impl<I: tokio::io::AsyncRead + tokio::io::AsyncWrite> tokio::io::AsyncWrite for GuardedStream<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().inner.as_mut().poll_write(cx, buf)
    }

    // Vectored, so hyper queues a response's pieces (an event stream's
    // events, shared by every stream) instead of copying each into a
    // buffer of the connection's own.
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().inner.as_mut().poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().inner.as_mut().poll_flush(cx)
    }

    fn poll_shutdown(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<io::Result<()>> {
        self.get_mut().inner.as_mut().poll_shutdown(cx)
    }
}
