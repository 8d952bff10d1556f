//! A small blocking client for the HTTP API, for the CLI's remote commands:
//! where the server is, and who is asking (a token, or in simple mode a name).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Args;
use serde_json::Value;

pub const DEFAULT_SERVER: &str = "http://127.0.0.1:8088";

/// The flags of every command that talks to a running server.
#[derive(Debug, Clone, Args)]
pub struct ServerArgs {
    /// The server's base URL (https:// when it serves TLS).
    #[arg(long, default_value = DEFAULT_SERVER)]
    pub server: String,
    /// Act as this user (sent as X-Weft-User; simple authentication only).
    #[arg(long)]
    pub user: Option<String>,
    /// A bearer token from `weft token create` (token authentication).
    #[arg(long, env = "WEFT_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// A PEM file of the CA certificate(s) to trust for https:// (else the
    /// usual public roots).
    #[arg(long, value_name = "FILE")]
    pub ca_cert: Option<PathBuf>,
}

impl ServerArgs {
    pub fn client(&self) -> anyhow::Result<Client> {
        Client::new(self)
    }
}

pub struct Client {
    base: String,
    agent: ureq::Agent,
    /// Sent as X-Weft-User, the caller's identity in simple mode.
    user: Option<String>,
    /// Sent as Authorization: Bearer, the caller's identity in token mode.
    token: Option<String>,
}

impl Client {
    pub fn new(args: &ServerArgs) -> anyhow::Result<Client> {
        let mut config = ureq::Agent::config_builder().http_status_as_error(false);
        if let Some(path) = &args.ca_cert {
            let pem = std::fs::read(path)
                .with_context(|| format!("cannot read --ca-cert {}", path.display()))?;
            let certs = ureq::tls::parse_pem(&pem)
                .filter_map(|item| match item {
                    Ok(ureq::tls::PemItem::Certificate(cert)) => Some(Ok(cert)),
                    Ok(_) => None,
                    Err(error) => Some(Err(error)),
                })
                .collect::<Result<Vec<_>, _>>()
                .with_context(|| format!("--ca-cert {} is not PEM", path.display()))?;
            if certs.is_empty() {
                bail!("--ca-cert {} holds no certificate", path.display());
            }
            config = config.tls_config(
                ureq::tls::TlsConfig::builder()
                    .root_certs(ureq::tls::RootCerts::Specific(Arc::new(certs)))
                    .build(),
            );
        }
        Ok(Client {
            base: args.server.trim_end_matches('/').to_string(),
            agent: config.build().into(),
            user: args.user.clone(),
            token: args.token.clone().filter(|t| !t.trim().is_empty()),
        })
    }

    pub fn get(&self, path: &str) -> anyhow::Result<Value> {
        let response = self.with_user(self.agent.get(&self.url(path))).call();
        self.answer(path, response)
    }

    pub fn post(&self, path: &str) -> anyhow::Result<Value> {
        let response = self
            .with_user(self.agent.post(&self.url(path)))
            .send_empty();
        self.answer(path, response)
    }

    pub fn post_json(&self, path: &str, body: &Value) -> anyhow::Result<Value> {
        let response = self
            .with_user(self.agent.post(&self.url(path)))
            .send_json(body);
        self.answer(path, response)
    }

    pub fn put_bytes(&self, path: &str, body: &[u8]) -> anyhow::Result<Value> {
        let request = self
            .agent
            .put(&self.url(path))
            .header("content-type", "application/wasm");
        let response = self.with_user(request).send(body);
        self.answer(path, response)
    }

    fn with_user<B>(&self, mut request: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        if let Some(user) = &self.user {
            request = request.header(crate::security::USER_HEADER, user);
        }
        if let Some(token) = &self.token {
            request = request.header("authorization", format!("Bearer {}", token.trim()));
        }
        request
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The JSON body of a 2xx answer; otherwise the server's own message.
    fn answer(
        &self,
        path: &str,
        response: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> anyhow::Result<Value> {
        let mut response =
            response.with_context(|| format!("cannot reach the weft server at {}", self.base))?;
        let status = response.status();
        let text = response
            .body_mut()
            .read_to_string()
            .with_context(|| format!("{path} answered an unreadable body"))?;
        // Some answers have no body (a reservation's submit, as in YARN).
        let body: Value = if text.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).with_context(|| format!("{path} did not answer JSON"))?
        };
        if !status.is_success() {
            let message = body["RemoteException"]["message"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| body.to_string());
            bail!("the server refused ({status}): {message}");
        }
        Ok(body)
    }
}
