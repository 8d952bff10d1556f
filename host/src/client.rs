//! A small blocking client for the HTTP API, for the CLI's remote commands
//! and the node agent: where the servers are (a list, tried in turn), and
//! who is asking (a token, or in simple mode a name).
//!
//! With several servers (active/standby high availability) a request goes
//! first to the one that answered last, and on to the next when a server
//! is a standby (503, `StandbyException`: YARN's "not applied"), cannot be
//! reached, or times out. A standby that names the active one sends the
//! request there next, but only if `--server` lists it: an answer never
//! sends a client to a host it was not told to trust. While no server
//! answers as active (an election under way), the list is tried again with
//! a short backoff for up to `--failover-wait`. A request that may do
//! something twice if sent twice (a submission) is sent again only when no
//! server can have acted on it (a standby's answer, a connection never
//! made); after an ambiguous failure (a reset, a timeout waiting for the
//! answer) it fails, saying it may or may not have been carried out.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use serde_json::Value;

/// The server `--server` names by default: a local `weft serve` on YARN's
/// ResourceManager web port.
pub const DEFAULT_SERVER: &str = "http://127.0.0.1:8088";

/// How long a request keeps trying the servers while none answers as
/// active (`--failover-wait`).
pub const DEFAULT_FAILOVER_WAIT: Duration = Duration::from_secs(30);
/// How long a connection may take to be made.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a server may take to take a request and to begin its answer
/// (a paused server accepts connections but never answers).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a policy load may take to answer: the server compiles the
/// component first, which takes tens of seconds for a Python or JavaScript
/// one on a busy machine (then it is cached).
const LOAD_ANSWER_TIMEOUT: Duration = Duration::from_secs(600);
/// How long an answer's body may take to arrive (a log: 4 MiB at most).
const BODY_TIMEOUT: Duration = Duration::from_secs(60);
/// The first pause between two passes over the servers, doubled each time
/// up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(100);
const MAX_PAUSE: Duration = Duration::from_secs(2);

/// The flags of every command that talks to a running server.
#[derive(Debug, Clone, Args)]
pub struct ServerArgs {
    /// The server's base URL (https:// when it serves TLS), or several,
    /// comma-separated (active/standby): each is tried in turn until one
    /// answers as active, starting with the one that answered last.
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
    /// How long a request keeps trying the servers, with a short backoff,
    /// while none answers as active (during a failover): e.g. 30s, 500ms,
    /// 0 (each server once). With a single server that cannot be reached,
    /// the command fails at once.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_wait)]
    pub failover_wait: Duration,
}

impl ServerArgs {
    /// The flags' defaults, for `server` (one URL or a comma-separated list).
    pub fn for_server(server: &str) -> ServerArgs {
        ServerArgs {
            server: server.to_string(),
            user: None,
            token: None,
            ca_cert: None,
            failover_wait: DEFAULT_FAILOVER_WAIT,
        }
    }

    /// A client for these flags (see [`Client::new`]).
    pub fn client(&self) -> anyhow::Result<Client> {
        Client::new(self)
    }
}

/// `--failover-wait`: whole seconds, or a number with `s` or `ms`.
fn parse_wait(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = match text.strip_suffix("ms") {
        Some(number) => (number, 1),
        None => (text.strip_suffix('s').unwrap_or(text), 1000),
    };
    let value: u64 = number
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a duration (e.g. 30s, 500ms, 0)"))?;
    if value.saturating_mul(unit) > 3_600_000 {
        return Err(format!("{text:?} is more than an hour"));
    }
    Ok(Duration::from_millis(value * unit))
}

/// Whether a request may be sent again once it may have reached a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replay {
    /// Sending it twice does what sending it once does (a GET, a kill, a
    /// numbered heartbeat): sent on to the next server after any failure.
    Safe,
    /// Sending it twice may do it twice (a submission, a policy load or
    /// rollback): sent on only when no server can have acted on it.
    Unsafe,
}

/// How one server took one request.
enum Attempt {
    /// An answer from a server that is not a standby (whatever its status).
    Answer(ureq::http::Response<ureq::Body>),
    /// A standby's 503; `active` is the server it names, if any.
    Standby {
        message: String,
        active: Option<String>,
    },
    /// Another 503 (shutting down, a store that refused the commit): the
    /// server may have acted on the request.
    Unavailable(ureq::http::Response<ureq::Body>, String),
    /// No answer. `maybe_sent`: the request may have reached the server
    /// (anything but a connection never made).
    Failed { error: String, maybe_sent: bool },
}

/// A blocking client of one or more servers' HTTP API, as one user: it
/// fails over between the servers and says when a request may or may not
/// have been carried out.
pub struct Client {
    /// The servers, and which one answered last as active (tried first).
    bases: Vec<String>,
    current: AtomicUsize,
    /// How long a request keeps trying while no server answers as active.
    failover_wait: Duration,
    agent: ureq::Agent,
    /// Sent as X-Weft-User, the caller's identity in simple mode.
    user: Option<String>,
    /// Sent as Authorization: Bearer, the caller's identity in token mode.
    token: Option<String>,
}

impl Client {
    /// A client of the servers `args` lists (duplicates dropped), with its
    /// CA certificates, user or token; refuses an unreadable `--ca-cert`
    /// and a `--server` that names no server.
    pub fn new(args: &ServerArgs) -> anyhow::Result<Client> {
        let mut config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(CONNECT_TIMEOUT))
            .timeout_send_request(Some(ANSWER_TIMEOUT))
            .timeout_send_body(Some(ANSWER_TIMEOUT))
            .timeout_recv_response(Some(ANSWER_TIMEOUT))
            .timeout_recv_body(Some(BODY_TIMEOUT));
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
        let mut bases: Vec<String> = Vec::new();
        for base in args
            .server
            .split(',')
            .map(|s| s.trim().trim_end_matches('/').to_string())
            .filter(|s| !s.is_empty())
        {
            if !bases.iter().any(|b| same_server(b, &base)) {
                bases.push(base);
            }
        }
        if bases.is_empty() {
            bail!("--server names no server");
        }
        Ok(Client {
            bases,
            current: Default::default(),
            failover_wait: args.failover_wait,
            agent: config.build().into(),
            user: args.user.clone(),
            token: args.token.clone().filter(|t| !t.trim().is_empty()),
        })
    }

    /// GETs `path` and gives back its JSON body; an error for a status
    /// other than 2xx. Sent again as needed.
    pub fn get(&self, path: &str) -> anyhow::Result<Value> {
        let response = self.send(path, Replay::Safe, self.failover_wait, |url| {
            self.with_user(self.agent.get(url)).call()
        })?;
        self.answer(path, response)
    }

    /// POSTs nothing; not sent again once it may have been carried out.
    pub fn post(&self, path: &str) -> anyhow::Result<Value> {
        let response = self.send(path, Replay::Unsafe, self.failover_wait, |url| {
            self.with_user(self.agent.post(url)).send_empty()
        })?;
        self.answer(path, response)
    }

    /// POSTs `body`; not sent again once it may have been carried out.
    pub fn post_json(&self, path: &str, body: &Value) -> anyhow::Result<Value> {
        self.answer(path, self.post_json_raw(path, body)?)
    }

    /// PUTs `body`, a state to reach (a kill): sent again as needed.
    pub fn put_json(&self, path: &str, body: &Value) -> anyhow::Result<Value> {
        let response = self.send(path, Replay::Safe, self.failover_wait, |url| {
            self.with_user(self.agent.put(url)).send_json(body)
        })?;
        self.answer(path, response)
    }

    /// GETs `path`, whose 2xx answer is text. Sent again as needed.
    pub fn get_text(&self, path: &str) -> anyhow::Result<String> {
        let response = self.send(path, Replay::Safe, self.failover_wait, |url| {
            self.with_user(self.agent.get(url)).call()
        })?;
        self.answer_text(path, response)
    }

    /// PUTs `body`, a change that may not be made twice (its 2xx answer
    /// text): not sent again once it may have been carried out.
    pub fn put_json_once(&self, path: &str, body: &Value) -> anyhow::Result<String> {
        let response = self.send(path, Replay::Unsafe, self.failover_wait, |url| {
            self.with_user(self.agent.put(url)).send_json(body)
        })?;
        self.answer_text(path, response)
    }

    /// POSTs `body` and gives back the answer whatever its status, for
    /// callers that act on the status. Not sent again once it may have
    /// been carried out.
    pub fn post_json_raw(
        &self,
        path: &str,
        body: &Value,
    ) -> anyhow::Result<ureq::http::Response<ureq::Body>> {
        self.send(path, Replay::Unsafe, self.failover_wait, |url| {
            self.with_user(self.agent.post(url)).send_json(body)
        })
    }

    /// POSTs `body`, a request that may be sent twice (the agent's
    /// registration and numbered heartbeats), to each server at most once
    /// until one answers as active: for a caller that tries again on its
    /// own schedule. The answer whatever its status.
    pub fn post_json_once(
        &self,
        path: &str,
        body: &Value,
    ) -> anyhow::Result<ureq::http::Response<ureq::Body>> {
        self.send(path, Replay::Safe, Duration::ZERO, |url| {
            self.with_user(self.agent.post(url)).send_json(body)
        })
    }

    /// DELETEs `path`, a state to reach: sent again as needed.
    pub fn delete(&self, path: &str) -> anyhow::Result<Value> {
        let response = self.send(path, Replay::Safe, self.failover_wait, |url| {
            self.with_user(self.agent.delete(url)).call()
        })?;
        self.answer(path, response)
    }

    /// POSTs nothing, with the header `name: value` (a token's renewal):
    /// sent again as needed.
    pub fn post_with_header(&self, path: &str, name: &str, value: &str) -> anyhow::Result<Value> {
        let response = self.send(path, Replay::Safe, self.failover_wait, |url| {
            self.with_user(self.agent.post(url))
                .header(name, value)
                .send_empty()
        })?;
        self.answer(path, response)
    }

    /// DELETEs `path` with the header `name: value` (a token's
    /// cancellation); not sent again once it may have been carried out (a
    /// second would be refused: the token stands no more).
    pub fn delete_with_header(&self, path: &str, name: &str, value: &str) -> anyhow::Result<Value> {
        let response = self.send(path, Replay::Unsafe, self.failover_wait, |url| {
            self.with_user(self.agent.delete(url))
                .header(name, value)
                .call()
        })?;
        self.answer(path, response)
    }

    /// The bytes a GET answers (a log), or the server's message.
    pub fn get_bytes(&self, path: &str) -> anyhow::Result<Vec<u8>> {
        let mut response = self.send(path, Replay::Safe, self.failover_wait, |url| {
            self.with_user(self.agent.get(url)).call()
        })?;
        if !response.status().is_success() {
            self.answer(path, response)?;
            bail!("{path} answered no body");
        }
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut response.body_mut().as_reader(), &mut bytes)
            .with_context(|| format!("{path} answered an unreadable body"))?;
        Ok(bytes)
    }

    /// PUTs `body` (a policy); not sent again once it may have been
    /// carried out (each load is a version in the history).
    pub fn put_bytes(&self, path: &str, body: &[u8]) -> anyhow::Result<Value> {
        let response = self.send(path, Replay::Unsafe, self.failover_wait, |url| {
            let request = self
                .agent
                .put(url)
                .config()
                .timeout_recv_response(Some(LOAD_ANSWER_TIMEOUT))
                .build()
                .header("content-type", "application/wasm");
            self.with_user(request).send(body)
        })?;
        self.answer(path, response)
    }

    /// GETs `path` from the server `base` alone (no failover, and which
    /// server is current is left as it is), waiting up to `wait` beyond
    /// the usual time for its answer: a request the server holds open (an
    /// agent's wait for orders). The JSON body of a 2xx answer.
    pub fn get_waiting(&self, base: &str, path: &str, wait: Duration) -> anyhow::Result<Value> {
        let request = self
            .agent
            .get(format!("{base}{path}"))
            .config()
            .timeout_recv_response(Some(ANSWER_TIMEOUT + wait))
            .build();
        let response = self
            .with_user(request)
            .call()
            .with_context(|| format!("{base}{path}"))?;
        self.answer(path, response)
    }

    /// The server that answered last as active (the first listed before
    /// any answered): where the next request goes first.
    pub fn current_server(&self) -> &str {
        &self.bases[self.current.load(Ordering::Relaxed) % self.bases.len()]
    }

    /// Moves on from `base` (it answered, but is not to be believed: an
    /// old epoch's server): unless another server answered since, the next
    /// request goes first to the one after it in the list.
    pub fn pass_over(&self, base: &str) {
        if let Some(index) = self.bases.iter().position(|b| b == base) {
            let _ = self.current.compare_exchange(
                index,
                (index + 1) % self.bases.len(),
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
    }

    /// Sends with `call` to the servers in turn, starting with the one
    /// that answered last, until one answers as active; while none does,
    /// passes over them again with a growing pause for up to `wait` (a
    /// single server that cannot be reached fails at once). `replay` says
    /// whether a request that may have reached a server is sent again.
    fn send(
        &self,
        path: &str,
        replay: Replay,
        wait: Duration,
        call: impl Fn(&str) -> Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> anyhow::Result<ureq::http::Response<ureq::Body>> {
        let count = self.bases.len();
        let started = Instant::now();
        let deadline = started + wait;
        let mut pause = FIRST_PAUSE;
        let mut saw_standby = false;
        // The active server a standby named (and `--server` lists).
        let mut named: Option<usize> = None;
        let mut passes = 0u32;
        loop {
            passes += 1;
            let first = named.unwrap_or_else(|| self.current.load(Ordering::Relaxed) % count);
            let mut order: VecDeque<usize> = (0..count).map(|i| (first + i) % count).collect();
            let mut failures: Vec<String> = Vec::new();
            // The last answer that was a 503 other than a standby's.
            let mut unavailable = None;
            while let Some(index) = order.pop_front() {
                let base = &self.bases[index];
                match self.attempt(&call, &format!("{base}{path}")) {
                    Attempt::Answer(response) => {
                        self.current.store(index, Ordering::Relaxed);
                        return Ok(response);
                    }
                    Attempt::Standby { message, active } => {
                        saw_standby = true;
                        let mut note = String::new();
                        if let Some(active) = active {
                            match self.listed(&active) {
                                Some(listed) if listed != index => {
                                    named = Some(listed);
                                    if let Some(at) = order.iter().position(|&i| i == listed) {
                                        order.remove(at);
                                        order.push_front(listed);
                                    }
                                }
                                Some(_) => {}
                                None => {
                                    note = format!(
                                        " (not followed to {active}: --server does not list it)"
                                    )
                                }
                            }
                        }
                        failures.push(format!("{base}: standby: {message}{note}"));
                    }
                    Attempt::Unavailable(response, message) => {
                        if replay == Replay::Unsafe {
                            // It may have been done: the caller shows it.
                            self.current.store(index, Ordering::Relaxed);
                            return Ok(response);
                        }
                        failures.push(format!("{base}: unavailable: {message}"));
                        unavailable = Some((index, response));
                    }
                    Attempt::Failed { error, maybe_sent } => {
                        if maybe_sent && replay == Replay::Unsafe {
                            let earlier = if failures.is_empty() {
                                String::new()
                            } else {
                                format!("; before it: {}", failures.join("; "))
                            };
                            bail!(
                                "{base}{path}: {error}. The request may or may not have been carried out, \
                                 so it was not sent again (look before you try again){earlier}"
                            );
                        }
                        failures.push(format!("{base}: {error}"));
                    }
                }
            }
            let again = saw_standby || count > 1;
            if !again || Instant::now() + pause > deadline {
                if let (false, Some((index, response))) = (saw_standby, unavailable) {
                    // No standby, just servers that cannot serve: say why.
                    self.current.store(index, Ordering::Relaxed);
                    return Ok(response);
                }
                let tried = if passes > 1 {
                    format!(" (each tried {passes} times in {:.1?})", started.elapsed())
                } else {
                    String::new()
                };
                bail!(
                    "cannot reach an active weft server{tried}: {}",
                    failures.join("; ")
                );
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(MAX_PAUSE);
        }
    }

    /// One request to one server, and what it came to.
    fn attempt(
        &self,
        call: &impl Fn(&str) -> Result<ureq::http::Response<ureq::Body>, ureq::Error>,
        url: &str,
    ) -> Attempt {
        let response = match call(url) {
            Ok(response) => response,
            Err(error) => {
                return Attempt::Failed {
                    maybe_sent: may_have_been_sent(&error),
                    error: error.to_string(),
                };
            }
        };
        if response.status() != ureq::http::StatusCode::SERVICE_UNAVAILABLE {
            return Attempt::Answer(response);
        }
        let (parts, mut body) = response.into_parts();
        let bytes = match body.read_to_vec() {
            Ok(bytes) => bytes,
            Err(error) => {
                return Attempt::Failed {
                    error: format!("503 with an unreadable body: {error}"),
                    maybe_sent: true,
                };
            }
        };
        let parsed: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        let exception = &parsed["RemoteException"];
        let message = exception["message"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| String::from_utf8_lossy(&bytes).into_owned());
        if exception["exception"] == "StandbyException" {
            return Attempt::Standby {
                active: named_active(&message),
                message,
            };
        }
        let rebuilt = ureq::http::Response::from_parts(parts, ureq::Body::builder().data(bytes));
        Attempt::Unavailable(rebuilt, message)
    }

    /// The index of `url` in the list, if it is listed.
    fn listed(&self, url: &str) -> Option<usize> {
        self.bases.iter().position(|base| same_server(base, url))
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
        response: ureq::http::Response<ureq::Body>,
    ) -> anyhow::Result<Value> {
        let text = self.answer_text(path, response)?;
        // Some answers have no body (a reservation's submit, as in YARN).
        if text.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&text).with_context(|| format!("{path} did not answer JSON"))
    }

    /// The body of a 2xx answer as text; otherwise the server's own message.
    fn answer_text(
        &self,
        path: &str,
        mut response: ureq::http::Response<ureq::Body>,
    ) -> anyhow::Result<String> {
        let status = response.status();
        let text = response
            .body_mut()
            .read_to_string()
            .with_context(|| format!("{path} answered an unreadable body"))?;
        if !status.is_success() {
            let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            let message = body["RemoteException"]["message"]
                .as_str()
                .map(str::to_string)
                .unwrap_or(text);
            bail!("the server refused ({status}): {message}");
        }
        Ok(text)
    }
}

/// Whether a request that failed with `error` may have reached the server:
/// anything but a connection that was never made (refused, unreachable, a
/// name not found, a connect that timed out, a request not even built).
fn may_have_been_sent(error: &ureq::Error) -> bool {
    use std::io::ErrorKind;
    match error {
        ureq::Error::Io(io) => !matches!(
            io.kind(),
            ErrorKind::ConnectionRefused
                | ErrorKind::HostUnreachable
                | ErrorKind::NetworkUnreachable
                | ErrorKind::AddrNotAvailable
        ),
        ureq::Error::Timeout(timeout) => {
            !matches!(timeout, ureq::Timeout::Connect | ureq::Timeout::Resolve)
        }
        ureq::Error::HostNotFound
        | ureq::Error::ConnectionFailed
        | ureq::Error::BadUri(_)
        | ureq::Error::Http(_)
        | ureq::Error::RequireHttpsOnly(_)
        | ureq::Error::TlsRequired
        | ureq::Error::InvalidProxyUrl
        | ureq::Error::ConnectProxyFailed(_) => false,
        _ => true,
    }
}

/// The active server a standby's message names ("…; the active one is
/// http://host:port"), if it names one.
fn named_active(message: &str) -> Option<String> {
    const MARK: &str = "the active one is ";
    let at = message.find(MARK)? + MARK.len();
    let url = message[at..]
        .split_whitespace()
        .next()?
        .trim_end_matches(['.', ',', ';', ')'])
        .trim_end_matches('/');
    (!url.is_empty()).then(|| url.to_string())
}

/// Whether base URL `listed` and `other` (a URL, or host:port) are the
/// same server: compared without case or a trailing '/'.
fn same_server(listed: &str, other: &str) -> bool {
    let normal = |url: &str| url.trim().trim_end_matches('/').to_ascii_lowercase();
    let (listed, other) = (normal(listed), normal(other));
    if listed == other {
        return true;
    }
    // "host:port" names the listed server whatever its scheme.
    !other.contains("://")
        && listed
            .split_once("://")
            .is_some_and(|(_, authority)| authority == other)
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::Mutex;
    use std::sync::atomic::AtomicBool;

    /// What a fake server does with a request.
    enum Reply {
        /// Answers this status and JSON body.
        Json(u16, String),
        /// Reads the request and closes the connection without a word.
        Close,
    }

    /// A tiny HTTP server on 127.0.0.1, answering each request (one per
    /// connection) as `reply` says, given how many it had before.
    struct Fake {
        base: String,
        requests: Arc<Mutex<Vec<String>>>,
        stop: Arc<AtomicBool>,
        thread: Option<std::thread::JoinHandle<()>>,
    }

    impl Fake {
        fn start(reply: impl Fn(usize) -> Reply + Send + 'static) -> Fake {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let base = format!("http://{}", listener.local_addr().unwrap());
            let requests = Arc::new(Mutex::new(Vec::new()));
            let stop = Arc::new(AtomicBool::new(false));
            let thread = {
                let (requests, stop) = (requests.clone(), stop.clone());
                std::thread::spawn(move || {
                    for stream in listener.incoming() {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        let Ok(stream) = stream else { continue };
                        let Some(line) = read_request(&stream) else {
                            continue;
                        };
                        let seen = {
                            let mut requests = requests.lock().unwrap();
                            requests.push(line);
                            requests.len() - 1
                        };
                        if let Reply::Json(status, body) = reply(seen) {
                            let mut stream = stream;
                            let _ = write!(
                                stream,
                                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n\
                                 content-length: {}\r\nconnection: close\r\n\r\n{body}",
                                body.len()
                            );
                        }
                    }
                })
            };
            Fake {
                base,
                requests,
                stop,
                thread: Some(thread),
            }
        }

        /// The requests it got, as "METHOD PATH".
        fn requests(&self) -> Vec<String> {
            self.requests.lock().unwrap().clone()
        }
    }

    impl Drop for Fake {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::Relaxed);
            let _ = TcpStream::connect(self.base.trim_start_matches("http://"));
            if let Some(thread) = self.thread.take() {
                let _ = thread.join();
            }
        }
    }

    /// Reads one request's head and body; gives "METHOD PATH".
    fn read_request(stream: &TcpStream) -> Option<String> {
        stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        let mut reader = BufReader::new(stream);
        let mut first = String::new();
        reader.read_line(&mut first).ok()?;
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).ok()? == 0 || line.trim().is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().ok()?;
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).ok()?;
        let mut words = first.split_whitespace();
        Some(format!("{} {}", words.next()?, words.next()?))
    }

    fn standby(active: Option<&str>) -> Reply {
        let message = match active {
            Some(active) => {
                format!("this resource manager is STANDBY; the active one is {active}")
            }
            None => "this resource manager is STANDBY; no server is active yet (an election is under way)".into(),
        };
        Reply::Json(
            503,
            serde_json::json!({"RemoteException": {
                "exception": "StandbyException", "message": message,
                "javaClassName": "org.apache.hadoop.ipc.StandbyException"}})
            .to_string(),
        )
    }

    fn active(what: &str) -> Reply {
        Reply::Json(200, serde_json::json!({ "from": what }).to_string())
    }

    fn client(servers: &[&str], wait: Duration) -> Client {
        let mut args = ServerArgs::for_server(&servers.join(","));
        args.failover_wait = wait;
        Client::new(&args).unwrap()
    }

    /// A loopback address nothing listens on.
    fn dead() -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    }

    #[test]
    fn a_standby_is_passed_over_and_the_active_one_tried_first_next_time() {
        let a = Fake::start(|_| standby(None));
        let b = Fake::start(|_| active("b"));
        let client = client(&[&a.base, &b.base], Duration::from_secs(5));
        assert_eq!(client.get("/ws/v1/cluster/apps").unwrap()["from"], "b");
        assert_eq!(client.current_server(), b.base);
        assert_eq!(client.get("/ws/v1/cluster/apps").unwrap()["from"], "b");
        assert_eq!(a.requests().len(), 1, "the standby is not asked again");
        assert_eq!(b.requests(), vec!["GET /ws/v1/cluster/apps"; 2]);
    }

    #[test]
    fn a_standby_that_names_a_listed_server_sends_the_request_there_next() {
        let c = Fake::start(|_| active("c"));
        let a = Fake::start({
            let named = format!("{}/", c.base.to_uppercase().replace("HTTP", "http"));
            move |_| standby(Some(&named))
        });
        let b = Fake::start(|_| active("b"));
        let client = client(&[&a.base, &b.base, &c.base], Duration::from_secs(5));
        assert_eq!(client.get("/x").unwrap()["from"], "c");
        assert!(b.requests().is_empty(), "b was skipped for the named one");
    }

    #[test]
    fn a_standby_naming_a_server_not_listed_is_not_followed() {
        let elsewhere = Fake::start(|_| active("elsewhere"));
        let a = Fake::start({
            let named = elsewhere.base.clone();
            move |_| standby(Some(&named))
        });
        let b = Fake::start(|_| active("b"));
        let client = client(&[&a.base, &b.base], Duration::from_secs(5));
        assert_eq!(
            client.post_json("/submit", &Value::Null).unwrap()["from"],
            "b"
        );
        assert!(elsewhere.requests().is_empty(), "never sent elsewhere");
        // Nor when every listed server is a standby naming it.
        let c = Fake::start({
            let named = elsewhere.base.clone();
            move |_| standby(Some(&named))
        });
        let client = super::tests::client(&[&a.base, &c.base], Duration::ZERO);
        let error = format!("{:#}", client.get("/x").unwrap_err());
        assert!(elsewhere.requests().is_empty(), "never sent elsewhere");
        assert!(error.contains("not followed"), "{error}");
        assert!(
            error.contains(&a.base) && error.contains(&c.base),
            "{error}"
        );
    }

    #[test]
    fn a_submission_goes_on_after_a_standby_or_a_refused_connection_and_is_sent_once() {
        let a = Fake::start(|_| standby(None));
        let b = Fake::start(|_| active("b"));
        let dead = dead();
        let client = client(&[&dead, &a.base, &b.base], Duration::from_secs(5));
        let answer = client
            .post_json("/ws/v1/cluster/apps", &serde_json::json!({"queue": "q"}))
            .unwrap();
        assert_eq!(answer["from"], "b");
        assert_eq!(a.requests(), vec!["POST /ws/v1/cluster/apps"]);
        assert_eq!(b.requests(), vec!["POST /ws/v1/cluster/apps"]);
    }

    #[test]
    fn a_submission_that_may_have_been_carried_out_is_not_sent_again() {
        let a = Fake::start(|_| Reply::Close);
        let b = Fake::start(|_| active("b"));
        let client = client(&[&a.base, &b.base], Duration::from_secs(5));
        let error = format!(
            "{:#}",
            client
                .post_json("/ws/v1/cluster/apps", &Value::Null)
                .unwrap_err()
        );
        assert!(
            error.contains("may or may not have been carried out"),
            "{error}"
        );
        assert!(error.contains(&a.base), "{error}");
        assert!(b.requests().is_empty(), "not sent again: {error}");
        // A GET is: it changes nothing.
        assert_eq!(client.get("/ws/v1/cluster/apps").unwrap()["from"], "b");
    }

    #[test]
    fn another_503_is_shown_for_a_submission_and_passed_over_for_a_get() {
        let busy = || {
            Reply::Json(
                503,
                r#"{"RemoteException": {"exception": "WebApplicationException",
                    "message": "the store did not take this change (it may yet be kept; try again)"}}"#
                    .into(),
            )
        };
        let a = Fake::start(move |_| busy());
        let b = Fake::start(|_| active("b"));
        let client = client(&[&a.base, &b.base], Duration::from_secs(5));
        let error = format!(
            "{:#}",
            client.post_json("/submit", &Value::Null).unwrap_err()
        );
        assert!(error.contains("may yet be kept"), "{error}");
        assert!(b.requests().is_empty());
        assert_eq!(client.get("/x").unwrap()["from"], "b");
    }

    #[test]
    fn during_an_election_the_list_is_tried_again_until_one_is_active() {
        // b becomes active at its third request.
        let a = Fake::start(|_| standby(None));
        let b = Fake::start(|seen| if seen < 2 { standby(None) } else { active("b") });
        let client = client(&[&a.base, &b.base], Duration::from_secs(10));
        assert_eq!(client.get("/x").unwrap()["from"], "b");
        assert_eq!(b.requests().len(), 3);
        assert_eq!(a.requests().len(), 3, "one pass over both, three times");
    }

    #[test]
    fn a_request_gives_up_when_the_wait_is_over_naming_each_server() {
        let a = Fake::start(|_| standby(None));
        let dead = dead();
        let client = client(&[&a.base, &dead], Duration::from_millis(400));
        let started = Instant::now();
        let error = format!("{:#}", client.get("/x").unwrap_err());
        assert!(started.elapsed() < Duration::from_secs(3), "{error}");
        assert!(a.requests().len() >= 2, "tried again: {error}");
        assert!(
            error.contains("cannot reach an active weft server"),
            "{error}"
        );
        assert!(error.contains(&a.base) && error.contains(&dead), "{error}");
        assert!(error.contains("STANDBY"), "{error}");
    }

    #[test]
    fn a_single_server_that_cannot_be_reached_fails_at_once() {
        let dead = dead();
        let client = client(&[&dead], DEFAULT_FAILOVER_WAIT);
        let started = Instant::now();
        let error = format!("{:#}", client.get("/x").unwrap_err());
        assert!(started.elapsed() < Duration::from_secs(2), "{error}");
        assert!(
            error.contains("cannot reach") && error.contains(&dead),
            "{error}"
        );
    }

    #[test]
    fn a_server_passed_over_is_tried_last() {
        let a = Fake::start(|_| active("a"));
        let b = Fake::start(|_| active("b"));
        let client = client(&[&a.base, &b.base], Duration::ZERO);
        assert_eq!(client.get("/x").unwrap()["from"], "a");
        client.pass_over(&a.base);
        assert_eq!(client.current_server(), b.base);
        assert_eq!(client.get("/x").unwrap()["from"], "b");
        // Passing over a server that no longer answered first changes nothing.
        client.pass_over(&a.base);
        assert_eq!(client.current_server(), b.base);
    }

    #[test]
    fn the_active_server_is_read_from_a_standbys_message() {
        assert_eq!(
            named_active("this resource manager is STANDBY; the active one is http://rm2:8088")
                .as_deref(),
            Some("http://rm2:8088")
        );
        assert_eq!(
            named_active("this resource manager is STANDBY; the active one is https://rm2:8088/.")
                .as_deref(),
            Some("https://rm2:8088")
        );
        // As `weft serve` names itself (the lease's holder): its URL first.
        assert_eq!(
            named_active(
                "this resource manager is STANDBY; the active one is http://10.0.0.2:8088 pid=41@rm2"
            )
            .as_deref(),
            Some("http://10.0.0.2:8088")
        );
        assert_eq!(
            named_active("this resource manager is STANDBY; no server is active yet"),
            None
        );
        assert!(same_server("http://RM2:8088/", "http://rm2:8088"));
        assert!(same_server("http://rm2:8088", "rm2:8088"));
        assert!(!same_server("http://rm2:8088", "http://rm2:8089"));
        assert!(!same_server(
            "http://rm2:8088",
            "http://rm2:8088.evil.example"
        ));
    }

    #[test]
    fn failover_waits_are_parsed() {
        assert_eq!(parse_wait("30").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_wait("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_wait("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_wait("0").unwrap(), Duration::ZERO);
        assert!(parse_wait("soon").is_err());
        assert!(parse_wait("2h").is_err());
        assert!(parse_wait("7200s").is_err());
    }

    #[test]
    fn a_list_naming_a_server_twice_tries_it_once() {
        let client = client(&["http://a:1", "http://a:1/", "http://b:2"], Duration::ZERO);
        assert_eq!(client.bases, vec!["http://a:1", "http://b:2"]);
    }
}
