//! A small blocking client for the HTTP API, for the CLI's remote commands
//! and the node agent: where the servers are (a list, tried in turn), and
//! who is asking (a token, or in simple mode a name).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Args;
use serde_json::Value;

pub const DEFAULT_SERVER: &str = "http://127.0.0.1:8088";

/// The flags of every command that talks to a running server.
#[derive(Debug, Clone, Args)]
pub struct ServerArgs {
    /// The server's base URL (https:// when it serves TLS), or several,
    /// comma-separated: each is tried in turn until one answers.
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
    /// The servers, and which one answered last (tried first).
    bases: Vec<String>,
    current: std::sync::atomic::AtomicUsize,
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
        let bases: Vec<String> = args
            .server
            .split(',')
            .map(|s| s.trim().trim_end_matches('/').to_string())
            .filter(|s| !s.is_empty())
            .collect();
        if bases.is_empty() {
            bail!("--server names no server");
        }
        Ok(Client {
            bases,
            current: Default::default(),
            agent: config.build().into(),
            user: args.user.clone(),
            token: args.token.clone().filter(|t| !t.trim().is_empty()),
        })
    }

    pub fn get(&self, path: &str) -> anyhow::Result<Value> {
        let response = self.send(path, |url| self.with_user(self.agent.get(url)).call())?;
        self.answer(path, response)
    }

    pub fn post(&self, path: &str) -> anyhow::Result<Value> {
        let response = self.send(path, |url| {
            self.with_user(self.agent.post(url)).send_empty()
        })?;
        self.answer(path, response)
    }

    pub fn post_json(&self, path: &str, body: &Value) -> anyhow::Result<Value> {
        self.answer(path, self.post_json_raw(path, body)?)
    }

    pub fn put_json(&self, path: &str, body: &Value) -> anyhow::Result<Value> {
        let response = self.send(path, |url| {
            self.with_user(self.agent.put(url)).send_json(body)
        })?;
        self.answer(path, response)
    }

    /// POSTs `body` and gives back the answer whatever its status, for
    /// callers that act on the status (the agent re-registers on 404).
    pub fn post_json_raw(
        &self,
        path: &str,
        body: &Value,
    ) -> anyhow::Result<ureq::http::Response<ureq::Body>> {
        self.send(path, |url| {
            self.with_user(self.agent.post(url)).send_json(body)
        })
    }

    /// The bytes a GET answers (a log), or the server's message.
    pub fn get_bytes(&self, path: &str) -> anyhow::Result<Vec<u8>> {
        let mut response = self.send(path, |url| self.with_user(self.agent.get(url)).call())?;
        if !response.status().is_success() {
            self.answer(path, response)?;
            bail!("{path} answered no body");
        }
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut response.body_mut().as_reader(), &mut bytes)
            .with_context(|| format!("{path} answered an unreadable body"))?;
        Ok(bytes)
    }

    pub fn put_bytes(&self, path: &str, body: &[u8]) -> anyhow::Result<Value> {
        let response = self.send(path, |url| {
            let request = self
                .agent
                .put(url)
                .header("content-type", "application/wasm");
            self.with_user(request).send(body)
        })?;
        self.answer(path, response)
    }

    /// Sends with `call` to each server in turn, starting with the one
    /// that answered last, until one is reached.
    fn send(
        &self,
        path: &str,
        call: impl Fn(&str) -> Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> anyhow::Result<ureq::http::Response<ureq::Body>> {
        use std::sync::atomic::Ordering;
        let first = self.current.load(Ordering::Relaxed);
        let mut failures = Vec::new();
        for i in 0..self.bases.len() {
            let index = (first + i) % self.bases.len();
            let base = &self.bases[index];
            match call(&format!("{base}{path}")) {
                Ok(response) => {
                    self.current.store(index, Ordering::Relaxed);
                    return Ok(response);
                }
                Err(error) => failures.push(format!("{base}: {error}")),
            }
        }
        bail!("cannot reach the weft server ({})", failures.join("; "))
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

    /// The JSON body of a 2xx answer; otherwise the server's own message.
    pub fn answer(
        &self,
        path: &str,
        mut response: ureq::http::Response<ureq::Body>,
    ) -> anyhow::Result<Value> {
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

/// `text` as one URL path segment or query value, percent-encoded (ids may
/// hold ':' and names anything).
pub fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
