//! Serving the router: plain HTTP, or TLS with rustls when
//! `weft.http.tls.cert-file` and `.key-file` are set; each request knows the
//! client's address; slow clients are cut off; a stop drains what is in
//! flight.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::Router;
use axum_server::Handle;
use axum_server::tls_rustls::RustlsConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::config::TlsFiles;

/// A client has this long to send a request's headers (against clients
/// that open connections and trickle bytes to hold them).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// And this long to finish a TLS handshake.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// In-flight requests get this long to finish once a stop is asked for.
const DRAIN: Duration = Duration::from_secs(5);

/// Serves `router` on `listener` until `stop` resolves.
pub async fn serve(
    router: Router,
    listener: std::net::TcpListener,
    tls: Option<&TlsFiles>,
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
    match tls {
        None => {
            let mut server = axum_server::from_tcp(listener)?.handle(handle);
            limit_slow_clients(server.http_builder());
            server.serve(service).await
        }
        Some(files) => {
            let config = RustlsConfig::from_config(Arc::new(server_config(files)?));
            let acceptor = axum_server::tls_rustls::RustlsAcceptor::new(config)
                .handshake_timeout(TLS_HANDSHAKE_TIMEOUT);
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
