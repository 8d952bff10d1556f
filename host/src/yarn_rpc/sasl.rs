//! SASL on a Hadoop IPC connection (call id −33), as Hadoop's server runs
//! it with security off. A SIMPLE-only listener tells a client that asks
//! for SASL SUCCESS at once, and the client goes on with SIMPLE
//! authentication (the user its connection context names). A listener that
//! takes tokens offers TOKEN (SASL DIGEST-MD5, the client proving it holds
//! a token this server issued) and, optionally, SIMPLE after it, as
//! Hadoop's server offers them when it has a secret manager
//! (`Server.buildNegotiateResponse`, `SaslRpcServer`). The DIGEST-MD5
//! arithmetic is RFC 2831's with `algorithm=md5-sess` and qop `auth`, as
//! the JDK's DigestMD5Server checks it; the SASL password is the base64 of
//! the token's password and the user name the base64 of its identifier
//! (Hadoop's `SaslRpcServer.encodePassword` / `encodeIdentifier`).

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use bytes::Bytes;
use md5::{Digest as _, Md5};

use super::messages::ipc::{RpcSaslProto, SaslAuth, SaslState};

/// Looks up tokens this server issued.
pub trait TokenPasswords: Send + Sync + std::fmt::Debug {
    /// For a token's identifier bytes: its password and the user it names,
    /// or why it is refused (unknown, expired, malformed).
    fn password(&self, identifier: &[u8]) -> Result<(Vec<u8>, Arc<str>), String>;

    /// Whether a token whose password checked out still stands (not
    /// lapsed, not revoked), or why not: asked only once the client proved
    /// it holds the token (so no one learns anything of a token they do
    /// not hold), and again before each of the connection's calls.
    fn standing(&self, _identifier: &[u8]) -> Result<(), String> {
        Ok(())
    }
}

/// The methods a listener accepts.
#[derive(Debug, Clone)]
pub enum Methods {
    /// SIMPLE only: the connection context names the user.
    SimpleOnly,
    /// TOKEN (DIGEST-MD5 over a token `passwords` knows), and SIMPLE too
    /// when `simple_too`: a client without a matching token then goes on
    /// as SIMPLE.
    Tokens {
        /// The tokens this server issued.
        passwords: Arc<dyn TokenPasswords>,
        /// Whether a client may choose SIMPLE instead.
        simple_too: bool,
    },
}

/// What a completed exchange established.
#[derive(Debug)]
pub struct Done {
    /// The token the client authenticated with, when it used one.
    pub token: Option<Authenticated>,
}

/// A client authenticated by a token.
#[derive(Debug)]
pub struct Authenticated {
    /// The user the token names.
    pub user: Arc<str>,
    /// The token's identifier bytes (what it was issued for).
    pub identifier: Bytes,
}

/// One step of the exchange: the reply, and the outcome once done.
#[derive(Debug)]
pub struct Step {
    /// The message to send back, unless `silent`.
    pub reply: RpcSaslProto,
    /// Send nothing back: a client that chose SIMPLE from the methods
    /// offered does not wait for an answer, and Hadoop's server sends none
    /// (`Server.processSaslMessage`: "we will send no response"). An
    /// answer would reach the client as a reply to no call and break the
    /// connection.
    pub silent: bool,
    /// Set when the exchange is over.
    pub done: Option<Done>,
}

/// One connection's SASL exchange.
#[derive(Debug)]
pub struct Exchange {
    methods: Arc<Methods>,
    stage: Stage,
}

/// How far an exchange got.
#[derive(Debug)]
enum Stage {
    /// Nothing received yet.
    Start,
    /// The methods were offered, TOKEN's challenge with this nonce.
    Offered { nonce: String },
    /// Done, or refused: nothing more is taken.
    Over,
}

/// Hadoop's name of token authentication.
const TOKEN: &str = "TOKEN";
/// Hadoop's name of SIMPLE authentication (its mechanism is empty).
const SIMPLE: &str = "SIMPLE";
/// TOKEN's SASL mechanism.
const DIGEST_MD5: &str = "DIGEST-MD5";
/// TOKEN's SASL protocol: empty (`SaslRpcServer`).
const SASL_PROTOCOL: &str = "";
/// TOKEN's server id, which is also the realm
/// (`SaslRpcServer.SASL_DEFAULT_REALM`).
const SERVER_ID: &str = "default";
/// The digest-uri a client names: protocol "/" server id.
const DIGEST_URI: &str = "/default";
/// The longest digest-response taken, as the JDK's DigestMD5Server.
const MAX_RESPONSE: usize = 4096;
/// Random bytes in a nonce: the JDK's 30, 40 base64 characters.
const NONCE_BYTES: usize = 30;
/// The only nonce count a single authentication uses.
const NONCE_COUNT: u32 = 1;
/// The qop without a security layer (`hadoop.rpc.protection=authentication`).
const QOP_AUTH: &str = "auth";
/// A2's method part for the client's response; the server's rspauth has
/// none.
const AUTHENTICATE: &str = "AUTHENTICATE";

impl Exchange {
    /// An exchange accepting `methods`.
    pub fn new(methods: Arc<Methods>) -> Exchange {
        Exchange {
            methods,
            stage: Stage::Start,
        }
    }

    /// Answers the client's next message, or refuses it (the reason).
    /// After a refusal, or once done, every further message is refused.
    pub fn step(&mut self, message: RpcSaslProto) -> Result<Step, String> {
        // Whatever happens, the exchange is over unless a NEGOTIATE is
        // answered with an offer below.
        let stage = std::mem::replace(&mut self.stage, Stage::Over);
        let state = SaslState::try_from(message.state).ok();
        match (stage, state) {
            (Stage::Over, _) => Err("the SASL exchange is already over".to_string()),
            (Stage::Start, Some(SaslState::Negotiate)) => self.negotiate(),
            (Stage::Offered { .. }, Some(SaslState::Negotiate)) => {
                Err("Client already attempted negotiation".to_string())
            }
            (Stage::Offered { nonce }, Some(SaslState::Initiate)) => self.initiate(&nonce, message),
            (Stage::Start, Some(SaslState::Initiate)) => Err(
                "SASL INITIATE before NEGOTIATE: a client asks which methods are offered first"
                    .to_string(),
            ),
            (_, _) => Err(format!(
                "SASL state {} is not expected here (a client starts with NEGOTIATE, 1, \
                 then INITIATE, 2)",
                message.state
            )),
        }
    }

    /// The answer to NEGOTIATE: SUCCESS when SIMPLE is all there is
    /// ("SIMPLE-only servers return success in response to negotiate",
    /// Hadoop's `Server.buildNegotiateResponse`), else the methods offered,
    /// TOKEN first with DIGEST-MD5's challenge.
    fn negotiate(&mut self) -> Result<Step, String> {
        match &*self.methods {
            Methods::SimpleOnly => Ok(Step {
                reply: RpcSaslProto {
                    state: SaslState::Success as i32,
                    ..Default::default()
                },
                silent: false,
                done: Some(Done { token: None }),
            }),
            Methods::Tokens { simple_too, .. } => {
                let nonce = new_nonce()?;
                let mut auths = offered(*simple_too);
                if let Some(token) = auths.first_mut() {
                    token.challenge = Some(challenge(&nonce).into_bytes());
                }
                self.stage = Stage::Offered { nonce };
                Ok(Step {
                    reply: RpcSaslProto {
                        state: SaslState::Negotiate as i32,
                        auths,
                        ..Default::default()
                    },
                    silent: false,
                    done: None,
                })
            }
        }
    }

    /// The client's choice, and for TOKEN its digest-response.
    fn initiate(&mut self, nonce: &str, message: RpcSaslProto) -> Result<Step, String> {
        let Methods::Tokens {
            passwords,
            simple_too,
        } = &*self.methods
        else {
            return Err("SASL INITIATE is not expected by a SIMPLE-only server".to_string());
        };
        let [chosen] = message.auths.as_slice() else {
            return Err(format!(
                "Client mechanism is malformed: an INITIATE names one method, not {}",
                message.auths.len()
            ));
        };
        // As Hadoop's server: the choice must be one of the methods offered,
        // field for field (the client echoes it without the challenge).
        let offered = offered(*simple_too);
        if !offered.contains(chosen) {
            let names: Vec<&str> = offered.iter().map(|a| a.method.as_str()).collect();
            return Err(format!(
                "{} authentication is not enabled.  Available:[{}]",
                chosen.method,
                names.join(", ")
            ));
        }
        if chosen.method == SIMPLE {
            return Ok(Step {
                reply: RpcSaslProto {
                    state: SaslState::Success as i32,
                    ..Default::default()
                },
                silent: true,
                done: Some(Done { token: None }),
            });
        }
        let Some(response) = message.token.as_deref() else {
            return Err("Client did not send a token".to_string());
        };
        let (rspauth, authenticated) = verify(nonce, response, passwords.as_ref())?;
        Ok(Step {
            reply: RpcSaslProto {
                state: SaslState::Success as i32,
                token: Some(rspauth),
                ..Default::default()
            },
            silent: false,
            done: Some(Done {
                token: Some(authenticated),
            }),
        })
    }
}

/// The methods offered, without challenges: TOKEN, then SIMPLE when
/// allowed (Hadoop's order: `SaslRpcServer`'s TOKEN first, then the
/// configured method).
fn offered(simple_too: bool) -> Vec<SaslAuth> {
    let mut auths = vec![SaslAuth {
        method: TOKEN.to_string(),
        mechanism: DIGEST_MD5.to_string(),
        protocol: Some(SASL_PROTOCOL.to_string()),
        server_id: Some(SERVER_ID.to_string()),
        challenge: None,
    }];
    if simple_too {
        auths.push(SaslAuth {
            method: SIMPLE.to_string(),
            mechanism: String::new(),
            protocol: None,
            server_id: None,
            challenge: None,
        });
    }
    auths
}

/// DIGEST-MD5's challenge, as the JDK's DigestMD5Server words it for
/// Hadoop (one realm, qop auth only, UTF-8).
fn challenge(nonce: &str) -> String {
    format!(
        "realm=\"{SERVER_ID}\",nonce=\"{nonce}\",qop=\"{QOP_AUTH}\",charset=utf-8,\
         algorithm=md5-sess"
    )
}

/// A fresh nonce: random bytes from the system, in base64 (no character
/// that needs quoting).
fn new_nonce() -> Result<String, String> {
    let mut random = [0u8; NONCE_BYTES];
    getrandom::fill(&mut random)
        .map_err(|e| format!("the system has no random source for a SASL nonce: {e}"))?;
    Ok(BASE64.encode(random))
}

/// Checks a client's DIGEST-MD5 digest-response to the challenge with
/// `nonce`, as the JDK's DigestMD5Server with Hadoop's callbacks do:
/// the server's `rspauth` token and who the client is, or why it is
/// refused.
fn verify(
    nonce: &str,
    response: &[u8],
    passwords: &dyn TokenPasswords,
) -> Result<(Vec<u8>, Authenticated), String> {
    if response.len() > MAX_RESPONSE {
        return Err(format!(
            "DIGEST-MD5: Invalid digest response length. Got: {} Expected < {MAX_RESPONSE}",
            response.len()
        ));
    }
    let directives = Directives::parse(response)?;
    let violation = |what: &str| format!("DIGEST-MD5: digest response format violation. {what}");
    if let Some(charset) = directives.get("charset")
        && charset != b"utf-8"
    {
        return Err(violation(&format!(
            "Incompatible charset value: {}",
            String::from_utf8_lossy(charset)
        )));
    }
    if let Some(maxbuf) = directives.get("maxbuf")
        && !std::str::from_utf8(maxbuf).is_ok_and(|m| m.parse::<i32>().is_ok())
    {
        return Err(violation("maxbuf is not a number."));
    }
    let username = directives
        .get("username")
        .ok_or_else(|| violation("Missing username."))?;
    let realm = directives.get("realm").unwrap_or_default();
    if realm != SERVER_ID.as_bytes() {
        return Err(violation(&format!(
            "Nonexistent realm: {}",
            String::from_utf8_lossy(realm)
        )));
    }
    let client_nonce = directives
        .get("nonce")
        .ok_or_else(|| violation("Missing nonce."))?;
    if client_nonce != nonce.as_bytes() {
        return Err(violation("Mismatched nonce."));
    }
    let cnonce = directives
        .get("cnonce")
        .ok_or_else(|| violation("Missing cnonce."))?;
    let nc = directives
        .get("nc")
        .ok_or_else(|| violation("Missing nonce count (nc)."))?;
    let count = std::str::from_utf8(nc)
        .ok()
        .and_then(|nc| u32::from_str_radix(nc, 16).ok());
    if count != Some(NONCE_COUNT) {
        return Err(violation(&format!(
            "Nonce count does not match: {}",
            String::from_utf8_lossy(nc)
        )));
    }
    let qop = directives
        .get("qop")
        .ok_or_else(|| violation("Missing qop."))?;
    match qop {
        b"auth" => {}
        b"auth-int" | b"auth-conf" => {
            return Err(format!(
                "hadoop.rpc.protection above authentication is not supported (the client \
                 asked for qop {})",
                String::from_utf8_lossy(qop)
            ));
        }
        other => {
            return Err(violation(&format!(
                "Invalid QOP: {}",
                String::from_utf8_lossy(other)
            )));
        }
    }
    let digest_uri = directives
        .get("digest-uri")
        .ok_or_else(|| violation("Missing digest-uri."))?;
    if !digest_uri.eq_ignore_ascii_case(DIGEST_URI.as_bytes()) {
        return Err(violation(&format!(
            "Mismatched URI: {}; expecting: {DIGEST_URI}",
            String::from_utf8_lossy(digest_uri)
        )));
    }
    let client_response = directives
        .get("response")
        .ok_or_else(|| violation("Missing response."))?;
    let authzid = directives.get("authzid");

    // The user name is the token's identifier in base64.
    let identifier = BASE64.decode(username).map_err(|e| {
        format!("DIGEST-MD5: the user name is not a token identifier in base64: {e}")
    })?;
    let (password, user) = passwords
        .password(&identifier)
        .map_err(|why| format!("DIGEST-MD5: the token is refused: {why}"))?;
    let password = BASE64.encode(password);
    let inputs = DigestInputs {
        username,
        realm,
        password: password.as_bytes(),
        nonce: nonce.as_bytes(),
        cnonce,
        nonce_count: NONCE_COUNT,
        qop: QOP_AUTH,
        digest_uri,
        authzid,
    };
    let expected = inputs.response_value(AUTHENTICATE);
    if !same_bytes(&expected, client_response) {
        return Err(violation("Mismatched response."));
    }
    passwords
        .standing(&identifier)
        .map_err(|why| format!("DIGEST-MD5: the token is refused: {why}"))?;
    // Hadoop's callback authorizes a client only as itself.
    if let Some(authzid) = authzid
        && authzid != username
    {
        return Err(format!(
            "DIGEST-MD5: {} is not authorized to act as {}",
            String::from_utf8_lossy(username),
            String::from_utf8_lossy(authzid)
        ));
    }
    let mut rspauth = b"rspauth=".to_vec();
    rspauth.extend_from_slice(&inputs.response_value(""));
    Ok((
        rspauth,
        Authenticated {
            user,
            identifier: Bytes::from(identifier),
        },
    ))
}

/// Whether two byte strings are equal, in time that depends only on their
/// lengths.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let difference = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(difference) == 0
}

/// What a DIGEST-MD5 response value is computed from (RFC 2831 2.1.2.1),
/// as the strings the JDK hashes: the password is the one the SASL layer
/// is given (for Hadoop, base64 of the token's password).
#[derive(Debug, Clone, Copy)]
struct DigestInputs<'a> {
    username: &'a [u8],
    realm: &'a [u8],
    password: &'a [u8],
    nonce: &'a [u8],
    cnonce: &'a [u8],
    nonce_count: u32,
    qop: &'a str,
    digest_uri: &'a [u8],
    authzid: Option<&'a [u8]>,
}

impl DigestInputs<'_> {
    /// The response value in lowercase hex: with `method`
    /// "AUTHENTICATE" the client's `response`, with "" the server's
    /// `rspauth`.
    ///
    /// HA1 = MD5( MD5(user ":" realm ":" password) ":" nonce ":" cnonce
    /// [":" authzid] ) (md5-sess), HA2 = MD5(method ":" digest-uri
    /// [":" 32 zeros when qop has a security layer]), value =
    /// hex MD5( hex(HA1) ":" nonce ":" nc ":" cnonce ":" qop ":" hex(HA2) ).
    fn response_value(&self, method: &str) -> [u8; 32] {
        let layer: &[u8] = if self.qop == "auth-int" || self.qop == "auth-conf" {
            b":00000000000000000000000000000000"
        } else {
            b""
        };
        let ha2 = hex(md5(&[method.as_bytes(), b":", self.digest_uri, layer]));
        let secret = md5(&[self.username, b":", self.realm, b":", self.password]);
        let mut a1: Vec<&[u8]> = vec![&secret, b":", self.nonce, b":", self.cnonce];
        if let Some(authzid) = self.authzid {
            a1.extend([b":" as &[u8], authzid]);
        }
        let ha1 = hex(md5(&a1));
        let nc = format!("{:08x}", self.nonce_count);
        hex(md5(&[
            &ha1,
            b":",
            self.nonce,
            b":",
            nc.as_bytes(),
            b":",
            self.cnonce,
            b":",
            self.qop.as_bytes(),
            b":",
            &ha2,
        ]))
    }
}

/// MD5 of the parts, one after the other.
fn md5(parts: &[&[u8]]) -> [u8; 16] {
    let mut hasher = Md5::new();
    for part in parts {
        hasher.update(part);
    }
    let mut digest = [0u8; 16];
    digest.copy_from_slice(&hasher.finalize());
    digest
}

/// Lowercase hex, as the JDK's `binaryToHex`.
fn hex(digest: [u8; 16]) -> [u8; 32] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 32];
    for (pair, byte) in out.chunks_exact_mut(2).zip(digest) {
        pair[0] = DIGITS[usize::from(byte >> 4)];
        pair[1] = DIGITS[usize::from(byte & 0x0f)];
    }
    out
}

/// A digest-response's directives: `key=value` separated by commas, with
/// optional whitespace; a value is a token or a quoted string in which a
/// backslash escapes the next byte (RFC 2831 7.2). Keys are compared
/// without case, as the JDK does; a key given twice is refused.
#[derive(Debug, Default)]
struct Directives {
    entries: Vec<(String, Vec<u8>)>,
}

impl Directives {
    fn parse(text: &[u8]) -> Result<Directives, String> {
        let malformed =
            |what: &str| format!("DIGEST-MD5: the digest response is malformed: {what}");
        let mut directives = Directives::default();
        let mut at = 0;
        loop {
            // Empty elements are allowed (RFC 2831's #rule).
            while at < text.len() && (is_space(text[at]) || text[at] == b',') {
                at += 1;
            }
            if at == text.len() {
                break;
            }
            let start = at;
            while at < text.len() && !matches!(text[at], b'=' | b',' | b'"') && !is_space(text[at])
            {
                at += 1;
            }
            let key = String::from_utf8_lossy(&text[start..at]).to_ascii_lowercase();
            while at < text.len() && is_space(text[at]) {
                at += 1;
            }
            if text.get(at) != Some(&b'=') {
                return Err(malformed(&format!("'=' expected after key {key:?}")));
            }
            if key.is_empty() {
                return Err(malformed("an empty key"));
            }
            at += 1;
            while at < text.len() && is_space(text[at]) {
                at += 1;
            }
            let mut value = Vec::new();
            if text.get(at) == Some(&b'"') {
                at += 1;
                loop {
                    match text.get(at) {
                        None => {
                            return Err(malformed(&format!(
                                "the value of {key} has no closing quote"
                            )));
                        }
                        Some(b'"') => {
                            at += 1;
                            break;
                        }
                        Some(b'\\') => {
                            let Some(&escaped) = text.get(at + 1) else {
                                return Err(malformed(&format!(
                                    "the value of {key} has no closing quote"
                                )));
                            };
                            value.push(escaped);
                            at += 2;
                        }
                        Some(&byte) => {
                            value.push(byte);
                            at += 1;
                        }
                    }
                }
            } else {
                while at < text.len() && text[at] != b',' && !is_space(text[at]) {
                    if text[at] == b'"' {
                        return Err(malformed(&format!("a quote inside the value of {key}")));
                    }
                    value.push(text[at]);
                    at += 1;
                }
            }
            while at < text.len() && is_space(text[at]) {
                at += 1;
            }
            if at < text.len() && text[at] != b',' {
                return Err(malformed(&format!(
                    "a comma expected after the value of {key}"
                )));
            }
            if directives.entries.iter().any(|(k, _)| *k == key) {
                return Err(malformed(&format!("{key} is given more than once")));
            }
            directives.entries.push((key, value));
        }
        Ok(directives)
    }

    /// The value of `key` (lowercase), if given.
    fn get(&self, key: &str) -> Option<&[u8]> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_slice())
    }
}

/// RFC 2616's linear whitespace.
fn is_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\r' | b'\n')
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use md5::Digest as _;

    use super::*;

    /// The tokens a test server issued.
    #[derive(Debug, Default)]
    struct Issued(HashMap<Vec<u8>, (Vec<u8>, Arc<str>)>);

    impl TokenPasswords for Issued {
        fn password(&self, identifier: &[u8]) -> Result<(Vec<u8>, Arc<str>), String> {
            self.0
                .get(identifier)
                .cloned()
                .ok_or_else(|| "no such token".to_string())
        }
    }

    const IDENTIFIER: &[u8] = b"\x0a\x0c\x0a\x06\x08\x01\x10\xe8\x07\x10\x01\x10\x07";
    const PASSWORD: &[u8] = b"\x9f\x00\x13hmac-sha1-of-the-identifier";

    fn methods(simple_too: bool) -> Arc<Methods> {
        let mut issued = Issued::default();
        issued.0.insert(
            IDENTIFIER.to_vec(),
            (PASSWORD.to_vec(), Arc::from("appattempt_1_0001_000001")),
        );
        Arc::new(Methods::Tokens {
            passwords: Arc::new(issued),
            simple_too,
        })
    }

    fn message(state: SaslState) -> RpcSaslProto {
        RpcSaslProto {
            state: state as i32,
            ..Default::default()
        }
    }

    /// The Java client's side of DIGEST-MD5 (the JDK's DigestMD5Client as
    /// Hadoop's SaslRpcClient drives it), written out separately from the
    /// server's arithmetic.
    struct JavaClient {
        identifier: Vec<u8>,
        password: Vec<u8>,
        cnonce: String,
        qop: &'static str,
        authzid: Option<String>,
        /// Set to answer another nonce than the challenge's.
        nonce: Option<String>,
    }

    impl JavaClient {
        fn new() -> JavaClient {
            JavaClient {
                identifier: IDENTIFIER.to_vec(),
                password: PASSWORD.to_vec(),
                cnonce: "bXkgb3duIGNsaWVudCBub25jZSwgMzAgYnl0ZXMhIQ==".to_string(),
                qop: "auth",
                authzid: None,
                nonce: None,
            }
        }

        fn challenge_value<'a>(challenge: &'a str, key: &str) -> &'a str {
            challenge
                .split(',')
                .find_map(|kv| kv.strip_prefix(&format!("{key}=")))
                .map(|v| v.trim_matches('"'))
                .unwrap()
        }

        fn h(data: &[u8]) -> Vec<u8> {
            let mut hasher = Md5::new();
            hasher.update(data);
            hasher.finalize().to_vec()
        }

        fn compute(&self, realm: &str, nonce: &str, a2_prefix: &str) -> String {
            let user = BASE64.encode(&self.identifier);
            let pass = BASE64.encode(&self.password);
            let mut a1 = Self::h(format!("{user}:{realm}:{pass}").as_bytes());
            a1.extend_from_slice(format!(":{nonce}:{}", self.cnonce).as_bytes());
            if let Some(authzid) = &self.authzid {
                a1.extend_from_slice(format!(":{authzid}").as_bytes());
            }
            let ha1 = ::hex::encode(Self::h(&a1));
            let ha2 = ::hex::encode(Self::h(format!("{a2_prefix}:/default").as_bytes()));
            let kd = format!("{ha1}:{nonce}:00000001:{}:{}:{ha2}", self.cnonce, self.qop);
            ::hex::encode(Self::h(kd.as_bytes()))
        }

        /// The INITIATE answering a NEGOTIATE's offer.
        fn initiate(&self, negotiate: &RpcSaslProto) -> RpcSaslProto {
            let mut auth = negotiate.auths[0].clone();
            let challenge = String::from_utf8(auth.challenge.take().unwrap()).unwrap();
            let realm = Self::challenge_value(&challenge, "realm");
            let nonce = self
                .nonce
                .clone()
                .unwrap_or_else(|| Self::challenge_value(&challenge, "nonce").to_string());
            let response = self.compute(realm, &nonce, "AUTHENTICATE");
            let mut token = format!(
                "charset=utf-8,username=\"{}\",realm=\"{realm}\",nonce=\"{nonce}\",\
                 nc=00000001,cnonce=\"{}\",digest-uri=\"/default\",maxbuf=65536,\
                 response={response},qop={}",
                BASE64.encode(&self.identifier),
                self.cnonce,
                self.qop
            );
            if let Some(authzid) = &self.authzid {
                token.push_str(&format!(",authzid=\"{authzid}\""));
            }
            RpcSaslProto {
                state: SaslState::Initiate as i32,
                token: Some(token.into_bytes()),
                auths: vec![auth],
                ..Default::default()
            }
        }

        /// Checks the server's rspauth, as the client does on SUCCESS.
        fn check_success(&self, negotiate: &RpcSaslProto, success: &RpcSaslProto) {
            assert_eq!(success.state, SaslState::Success as i32);
            let challenge =
                String::from_utf8(negotiate.auths[0].challenge.clone().unwrap()).unwrap();
            let realm = Self::challenge_value(&challenge, "realm");
            let nonce = Self::challenge_value(&challenge, "nonce");
            let expected = format!("rspauth={}", self.compute(realm, nonce, ""));
            assert_eq!(success.token.as_deref(), Some(expected.as_bytes()));
        }
    }

    fn negotiated(simple_too: bool) -> (Exchange, RpcSaslProto) {
        let mut exchange = Exchange::new(methods(simple_too));
        let step = exchange.step(message(SaslState::Negotiate)).unwrap();
        assert!(step.done.is_none());
        assert!(!step.silent);
        (exchange, step.reply)
    }

    #[test]
    fn negotiate_offers_token_then_simple() {
        let (_, reply) = negotiated(true);
        assert_eq!(reply.state, SaslState::Negotiate as i32);
        assert_eq!(reply.auths.len(), 2);
        let token = &reply.auths[0];
        assert_eq!(token.method, "TOKEN");
        assert_eq!(token.mechanism, "DIGEST-MD5");
        assert_eq!(token.protocol.as_deref(), Some(""));
        assert_eq!(token.server_id.as_deref(), Some("default"));
        let challenge = String::from_utf8(token.challenge.clone().unwrap()).unwrap();
        let nonce = JavaClient::challenge_value(&challenge, "nonce");
        assert_eq!(nonce.len(), 40);
        assert_eq!(BASE64.decode(nonce).unwrap().len(), NONCE_BYTES);
        assert_eq!(
            challenge,
            format!(
                "realm=\"default\",nonce=\"{nonce}\",qop=\"auth\",charset=utf-8,\
                 algorithm=md5-sess"
            )
        );
        assert_eq!(reply.auths[1].method, "SIMPLE");
        assert_eq!(reply.auths[1].mechanism, "");
        assert!(reply.auths[1].challenge.is_none());

        let (_, reply) = negotiated(false);
        assert_eq!(reply.auths.len(), 1);
        // Each exchange has its own nonce.
        let (_, again) = negotiated(false);
        assert_ne!(reply.auths[0].challenge, again.auths[0].challenge);
    }

    #[test]
    fn a_java_client_authenticates_with_its_token() {
        let (mut exchange, negotiate) = negotiated(true);
        let client = JavaClient::new();
        let step = exchange.step(client.initiate(&negotiate)).unwrap();
        assert!(!step.silent);
        client.check_success(&negotiate, &step.reply);
        let token = step.done.unwrap().token.unwrap();
        assert_eq!(&*token.identifier, IDENTIFIER);
        assert_eq!(&*token.user, "appattempt_1_0001_000001");
        // Done: nothing more is taken.
        let again = exchange.step(client.initiate(&negotiate));
        assert!(again.unwrap_err().contains("already over"));
        assert!(exchange.step(message(SaslState::Negotiate)).is_err());
    }

    #[test]
    fn an_authzid_of_the_client_itself_is_taken_another_is_not() {
        let (mut exchange, negotiate) = negotiated(false);
        let mut client = JavaClient::new();
        client.authzid = Some(BASE64.encode(IDENTIFIER));
        let step = exchange.step(client.initiate(&negotiate)).unwrap();
        client.check_success(&negotiate, &step.reply);

        let (mut exchange, negotiate) = negotiated(false);
        client.authzid = Some("someone-else".to_string());
        let error = exchange.step(client.initiate(&negotiate)).unwrap_err();
        assert!(error.contains("not authorized"), "{error}");
    }

    #[test]
    fn a_wrong_password_is_refused() {
        let (mut exchange, negotiate) = negotiated(true);
        let mut client = JavaClient::new();
        client.password = b"not the password".to_vec();
        let error = exchange.step(client.initiate(&negotiate)).unwrap_err();
        assert!(error.contains("Mismatched response"), "{error}");
        // A refused exchange takes nothing more, not even the right answer.
        let right = JavaClient::new().initiate(&negotiate);
        assert!(exchange.step(right).is_err());
    }

    #[test]
    fn a_wrong_nonce_is_refused() {
        let (mut exchange, negotiate) = negotiated(true);
        let mut client = JavaClient::new();
        client.nonce = Some("T3RoZXIgbm9uY2U=".to_string());
        let error = exchange.step(client.initiate(&negotiate)).unwrap_err();
        assert!(error.contains("Mismatched nonce"), "{error}");
    }

    #[test]
    fn a_response_replayed_to_another_exchange_is_refused() {
        let (mut first, negotiate) = negotiated(true);
        let initiate = JavaClient::new().initiate(&negotiate);
        assert!(first.step(initiate.clone()).is_ok());
        let (mut second, _) = negotiated(true);
        let error = second.step(initiate).unwrap_err();
        assert!(error.contains("Mismatched nonce"), "{error}");
    }

    #[test]
    fn an_unknown_token_is_refused() {
        let (mut exchange, negotiate) = negotiated(true);
        let mut client = JavaClient::new();
        client.identifier = b"another identifier".to_vec();
        let error = exchange.step(client.initiate(&negotiate)).unwrap_err();
        assert!(error.contains("no such token"), "{error}");
    }

    #[test]
    fn a_user_name_not_in_base64_is_refused() {
        let (mut exchange, negotiate) = negotiated(true);
        let mut initiate = JavaClient::new().initiate(&negotiate);
        let token = String::from_utf8(initiate.token.take().unwrap()).unwrap();
        let user = BASE64.encode(IDENTIFIER);
        initiate.token = Some(token.replace(&user, "not*base64!").into_bytes());
        let error = exchange.step(initiate).unwrap_err();
        assert!(error.contains("base64"), "{error}");
    }

    #[test]
    fn an_oversized_response_is_refused() {
        let (mut exchange, negotiate) = negotiated(true);
        let mut initiate = JavaClient::new().initiate(&negotiate);
        let mut token = initiate.token.take().unwrap();
        token.extend_from_slice(b",padding=\"");
        token.resize(MAX_RESPONSE + 1, b'x');
        token.push(b'"');
        initiate.token = Some(token);
        let error = exchange.step(initiate).unwrap_err();
        assert!(error.contains("length"), "{error}");
    }

    #[test]
    fn qop_above_auth_is_refused_clearly() {
        for qop in ["auth-conf", "auth-int"] {
            let (mut exchange, negotiate) = negotiated(true);
            let mut client = JavaClient::new();
            client.qop = qop;
            let error = exchange.step(client.initiate(&negotiate)).unwrap_err();
            assert!(
                error.contains("hadoop.rpc.protection above authentication is not supported"),
                "{error}"
            );
        }
    }

    #[test]
    fn a_client_choosing_simple_gets_no_answer_when_simple_is_offered() {
        let (mut exchange, negotiate) = negotiated(true);
        // Hadoop's client echoes the SIMPLE auth and sends no token.
        let initiate = RpcSaslProto {
            state: SaslState::Initiate as i32,
            auths: vec![negotiate.auths[1].clone()],
            ..Default::default()
        };
        let step = exchange.step(initiate.clone()).unwrap();
        assert!(step.silent);
        assert!(step.done.unwrap().token.is_none());

        let (mut exchange, _) = negotiated(false);
        let error = exchange.step(initiate).unwrap_err();
        assert!(
            error.contains("SIMPLE authentication is not enabled"),
            "{error}"
        );
    }

    #[test]
    fn an_initiate_must_name_one_offered_method() {
        let (mut exchange, negotiate) = negotiated(true);
        let mut initiate = JavaClient::new().initiate(&negotiate);
        initiate.auths[0].server_id = Some("elsewhere".to_string());
        assert!(exchange.step(initiate).is_err());

        let (mut exchange, negotiate) = negotiated(true);
        let mut initiate = JavaClient::new().initiate(&negotiate);
        initiate.auths.push(negotiate.auths[1].clone());
        assert!(exchange.step(initiate).unwrap_err().contains("malformed"));

        let (mut exchange, negotiate) = negotiated(true);
        let mut initiate = JavaClient::new().initiate(&negotiate);
        initiate.token = None;
        assert!(
            exchange
                .step(initiate)
                .unwrap_err()
                .contains("did not send a token")
        );
    }

    #[test]
    fn out_of_order_messages_are_refused() {
        let mut exchange = Exchange::new(methods(true));
        assert!(exchange.step(message(SaslState::Initiate)).is_err());

        let (mut exchange, _) = negotiated(true);
        let error = exchange.step(message(SaslState::Negotiate)).unwrap_err();
        assert!(error.contains("already attempted"), "{error}");

        for state in [SaslState::Response, SaslState::Success, SaslState::Wrap] {
            let (mut exchange, _) = negotiated(true);
            assert!(exchange.step(message(state)).is_err());
        }
        let mut exchange = Exchange::new(methods(true));
        let unknown = RpcSaslProto {
            state: 77,
            ..Default::default()
        };
        assert!(exchange.step(unknown).is_err());
    }

    #[test]
    fn simple_only_answers_negotiate_with_success() {
        let mut exchange = Exchange::new(Arc::new(Methods::SimpleOnly));
        let step = exchange.step(message(SaslState::Negotiate)).unwrap();
        assert_eq!(step.reply.state, SaslState::Success as i32);
        assert!(step.reply.auths.is_empty());
        assert!(!step.silent);
        assert!(step.done.unwrap().token.is_none());
        assert!(exchange.step(message(SaslState::Negotiate)).is_err());

        let mut exchange = Exchange::new(Arc::new(Methods::SimpleOnly));
        assert!(exchange.step(message(SaslState::Initiate)).is_err());
    }

    /// RFC 2831 section 4's example (an IMAP login; a plain password, not
    /// Hadoop's base64 one).
    #[test]
    fn the_rfc_2831_example_is_reproduced() {
        let inputs = DigestInputs {
            username: b"chris",
            realm: b"elwood.innosoft.com",
            password: b"secret",
            nonce: b"OA6MG9tEQGm2hh",
            cnonce: b"OA6MHXh6VqTrRk",
            nonce_count: 1,
            qop: "auth",
            digest_uri: b"imap/elwood.innosoft.com",
            authzid: None,
        };
        assert_eq!(
            &inputs.response_value("AUTHENTICATE"),
            b"d388dad90d4bbd760a152321f2143af7"
        );
        assert_eq!(
            &inputs.response_value(""),
            b"ea40f60335c427b5527b84dbabcdfffd"
        );
    }

    #[test]
    fn directives_parse_quotes_escapes_and_whitespace() {
        let directives = Directives::parse(
            b" Username = \"a\\\"b\\\\c\" ,, realm=\"\" ,qop=auth,\tNC=00000001 ,",
        )
        .unwrap();
        assert_eq!(directives.get("username"), Some(&b"a\"b\\c"[..]));
        assert_eq!(directives.get("realm"), Some(&b""[..]));
        assert_eq!(directives.get("qop"), Some(&b"auth"[..]));
        assert_eq!(directives.get("nc"), Some(&b"00000001"[..]));
        assert!(Directives::parse(b"").unwrap().entries.is_empty());

        for bad in [
            &b"qop=auth,QOP=auth"[..],
            b"username=\"open",
            b"username=\"open\\",
            b"=value",
            b"key",
            b"key value",
            b"a=\"x\"y",
            b"a=x\"y\"",
            b"a=b c=d",
        ] {
            assert!(
                Directives::parse(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn missing_or_wrong_directives_are_refused() {
        let (_, negotiate) = negotiated(true);
        let good =
            String::from_utf8(JavaClient::new().initiate(&negotiate).token.unwrap()).unwrap();
        let cases: Vec<String> = vec![
            good.replace("realm=\"default\"", "realm=\"other\""),
            good.replace("digest-uri=\"/default\"", "digest-uri=\"hdfs/default\""),
            good.replace("nc=00000001", "nc=00000002"),
            good.replace("charset=utf-8", "charset=latin1"),
            good.replace("maxbuf=65536", "maxbuf=lots"),
            good.replace(",qop=auth", ""),
            good.replace("nc=00000001,", ""),
            good.replace("charset=utf-8,", "charset=utf-8,nonce=\"again\","),
        ];
        for token in cases {
            assert_ne!(token, good);
            let (mut exchange, negotiate) = negotiated(true);
            let mut initiate = JavaClient::new().initiate(&negotiate);
            initiate.token = Some(token.clone().into_bytes());
            assert!(exchange.step(initiate).is_err(), "{token}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        #[test]
        fn any_token_is_answered_without_panic(token in proptest::collection::vec(
            proptest::prelude::any::<u8>(), 0..600)) {
            let (mut exchange, negotiate) = negotiated(true);
            let mut initiate = JavaClient::new().initiate(&negotiate);
            initiate.token = Some(token);
            proptest::prop_assert!(exchange.step(initiate).is_err());
        }

        #[test]
        fn any_directive_text_parses_without_panic(text in "[a-z=,\" \\\\]{0,80}") {
            let _ = Directives::parse(text.as_bytes());
        }
    }
}
