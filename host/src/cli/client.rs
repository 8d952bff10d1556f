//! A small blocking client for the HTTP API, for the CLI's remote commands.

use anyhow::{Context, bail};
use serde_json::Value;

pub const DEFAULT_SERVER: &str = "http://127.0.0.1:8088";

pub struct Client {
    base: String,
    agent: ureq::Agent,
    /// Sent as X-Weft-User, the caller's identity.
    user: Option<String>,
}

impl Client {
    pub fn new(server: &str, user: Option<&str>) -> Client {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build();
        Client {
            base: server.trim_end_matches('/').to_string(),
            agent: config.into(),
            user: user.map(String::from),
        }
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

    fn with_user<B>(&self, request: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        match &self.user {
            Some(user) => request.header(crate::security::USER_HEADER, user),
            None => request,
        }
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
