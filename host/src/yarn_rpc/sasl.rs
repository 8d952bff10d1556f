//! SASL on a Hadoop IPC connection (call id −33), as a server with security
//! off runs it: a client that asks for SASL is told SUCCESS at once and goes
//! on with SIMPLE authentication (the user its connection context names),
//! as Hadoop's SIMPLE-only servers answer a NEGOTIATE.

use std::sync::Arc;

use bytes::Bytes;

use super::messages::ipc::{RpcSaslProto, SaslState};

/// The methods a listener accepts.
#[derive(Debug, Clone)]
pub enum Methods {
    /// SIMPLE only: the connection context names the user.
    SimpleOnly,
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
    /// The message to send back.
    pub reply: RpcSaslProto,
    /// Set when the exchange is over.
    pub done: Option<Done>,
}

/// One connection's SASL exchange.
#[derive(Debug)]
pub struct Exchange {
    methods: Arc<Methods>,
}

impl Exchange {
    /// An exchange accepting `methods`.
    pub fn new(methods: Arc<Methods>) -> Exchange {
        Exchange { methods }
    }

    /// Answers the client's next message, or refuses it (the reason).
    pub fn step(&mut self, message: RpcSaslProto) -> Result<Step, String> {
        match (&*self.methods, message.state) {
            // "SIMPLE-only servers return success in response to negotiate"
            // (Hadoop's Server.buildNegotiateResponse): the client then
            // authenticates as SIMPLE.
            (Methods::SimpleOnly, state) if state == SaslState::Negotiate as i32 => Ok(Step {
                reply: RpcSaslProto {
                    state: SaslState::Success as i32,
                    ..Default::default()
                },
                done: Some(Done { token: None }),
            }),
            (_, other) => Err(format!(
                "SASL state {other} is not expected here (a client starts with NEGOTIATE, 1)"
            )),
        }
    }
}
