//! How `weft agent` reaches the resource manager's ResourceTracker: over
//! HTTP, with a wait for orders kept open beside the heartbeats so that
//! containers placed on the node launch without waiting for the next one.
//! (The local agent of `weft serve` reaches it in process:
//! `rm/local_tracker.rs`.)

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use serde::Deserialize;

use crate::client::Client;
use crate::protocol::node::{
    Heartbeat, MAX_ORDERS_WAIT_MS, NodeOrders, OrdersWaiting, RegisterNode, RegisteredNode,
    ResourceTracker, TrackerError,
};

/// The first pause after a wait for orders failed (a server gone, one that
/// does not know the node yet, one without the endpoint); it doubles up to
/// `MAX_RETRY` while they keep failing.
const FIRST_RETRY: Duration = Duration::from_millis(500);
const MAX_RETRY: Duration = Duration::from_secs(30);

/// Over HTTP, to one server of a list: each request goes to the one that
/// answered last, and on to the others (each once) while it cannot be
/// reached or is a standby; the agent's loop tries again on its schedule.
pub struct HttpTracker {
    /// The client of the servers `--server` lists, as the agent's user.
    client: Arc<Client>,
    /// How long each wait for orders is held open (none: no waits).
    order_wait: Option<Duration>,
    /// The wait for orders, once the node has registered.
    waiter: Option<Arc<OrdersWaiter>>,
}

/// What the agent's loop and the thread waiting for orders share.
struct OrdersWaiter {
    /// The path of the node's wait.
    path: String,
    /// The server that answered the last heartbeat: the wait goes there.
    server: Mutex<String>,
    /// A wait answered that orders wait; cleared when the loop reads it.
    waiting: AtomicBool,
    /// How many heartbeats were answered: after a wait that answered yes,
    /// the next one is asked for only once a heartbeat has been answered
    /// since (which takes the orders), so waits never spin.
    answers: Mutex<u64>,
    answered: Condvar,
    /// The tracker was dropped (the agent stops).
    stopped: AtomicBool,
}

impl HttpTracker {
    /// A tracker through `client` that keeps a wait for orders of
    /// `order_wait` open beside the heartbeats (`Duration::ZERO`: none),
    /// at most [`MAX_ORDERS_WAIT_MS`].
    pub fn new(client: Client, order_wait: Duration) -> HttpTracker {
        HttpTracker {
            client: Arc::new(client),
            order_wait: (!order_wait.is_zero())
                .then(|| order_wait.min(Duration::from_millis(MAX_ORDERS_WAIT_MS))),
            waiter: None,
        }
    }

    /// Starts the thread that waits for the node's orders, once.
    fn start_waiting(&mut self, node: &str) {
        let Some(wait) = self.order_wait else {
            return;
        };
        if self.waiter.is_some() {
            return;
        }
        let waiter = Arc::new(OrdersWaiter {
            path: format!(
                "/ws/v1/cluster/nodes/{}/orders-waiting?wait_ms={}",
                crate::client::encode(node),
                wait.as_millis()
            ),
            server: Mutex::new(self.client.current_server().to_string()),
            waiting: AtomicBool::new(false),
            answers: Mutex::new(0),
            answered: Condvar::new(),
            stopped: AtomicBool::new(false),
        });
        let (client, shared) = (self.client.clone(), waiter.clone());
        let started = std::thread::Builder::new()
            .name("weft-agent-orders".into())
            .spawn(move || shared.run(&client, wait));
        match started {
            Ok(_) => self.waiter = Some(waiter),
            Err(error) => {
                tracing::warn!(%error, "cannot start the wait for orders; launches wait for heartbeats")
            }
        }
    }

    fn post<T: for<'de> Deserialize<'de>>(
        &self,
        path: &str,
        body: &impl serde::Serialize,
    ) -> Result<T, TrackerError> {
        let body = serde_json::to_value(body).map_err(|e| TrackerError::Refused(e.to_string()))?;
        let response = self
            .client
            .post_json_once(path, &body)
            .map_err(|e| TrackerError::Unavailable(format!("{e:#}")))?;
        let status = response.status().as_u16();
        let answer = self.client.answer(path, response);
        match (status, answer) {
            (200..=299, Ok(value)) => serde_json::from_value(value)
                .map_err(|e| TrackerError::Unavailable(format!("{path} answered {e}"))),
            (404, Err(e)) => Err(TrackerError::UnknownNode(format!("{e:#}"))),
            (500.., Err(e)) | (408 | 429, Err(e)) => {
                Err(TrackerError::Unavailable(format!("{e:#}")))
            }
            (_, Err(e)) => Err(TrackerError::Refused(format!("{e:#}"))),
            (_, Ok(value)) => Err(TrackerError::Unavailable(format!(
                "{path} answered {value}"
            ))),
        }
    }
}

impl ResourceTracker for HttpTracker {
    fn register(&mut self, request: &RegisterNode) -> Result<RegisteredNode, TrackerError> {
        let registered = self.post("/ws/v1/cluster/nodes/register", request)?;
        self.start_waiting(&request.node_id);
        Ok(registered)
    }

    fn heartbeat(&mut self, node: &str, beat: &Heartbeat) -> Result<NodeOrders, TrackerError> {
        let path = format!(
            "/ws/v1/cluster/nodes/{}/heartbeat",
            crate::client::encode(node)
        );
        let orders = self.post(&path, beat)?;
        if let Some(waiter) = &self.waiter {
            waiter.heartbeat_answered(self.client.current_server());
        }
        Ok(orders)
    }

    fn orders_waiting(&self) -> bool {
        self.waiter
            .as_ref()
            .is_some_and(|waiter| waiter.waiting.swap(false, Ordering::AcqRel))
    }

    fn server(&self) -> Option<String> {
        Some(self.client.current_server().to_string())
    }

    fn pass_over(&mut self) {
        let server = self.client.current_server().to_string();
        self.client.pass_over(&server);
    }
}

impl Drop for HttpTracker {
    fn drop(&mut self) {
        if let Some(waiter) = &self.waiter {
            waiter.stopped.store(true, Ordering::Release);
            waiter.answered.notify_all();
        }
    }
}

impl OrdersWaiter {
    /// A heartbeat was answered by `server`.
    fn heartbeat_answered(&self, server: &str) {
        let mut current = self.server.lock().unwrap_or_else(|e| e.into_inner());
        if *current != server {
            *current = server.to_string();
        }
        drop(current);
        *self.answers.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.answered.notify_all();
    }

    fn answers(&self) -> u64 {
        *self.answers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for orders until the tracker is dropped: each wait that says
    /// orders wait sets the flag the agent's loop reads, and the next is
    /// asked for once a heartbeat has been answered since.
    fn run(&self, client: &Client, wait: Duration) {
        let mut retry = FIRST_RETRY;
        while !self.stopped.load(Ordering::Acquire) {
            let before = self.answers();
            let server = self
                .server
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            let answer = client
                .get_waiting(&server, &self.path, wait)
                .and_then(|value| Ok(serde_json::from_value::<OrdersWaiting>(value)?));
            match answer {
                Ok(OrdersWaiting { orders_waiting }) => {
                    retry = FIRST_RETRY;
                    if orders_waiting {
                        self.waiting.store(true, Ordering::Release);
                        self.until_answered_since(before);
                    }
                }
                Err(error) => {
                    if retry == FIRST_RETRY {
                        tracing::warn!(
                            error = format!("{error:#}"),
                            "the wait for orders failed; launches wait for heartbeats until it answers again"
                        );
                    }
                    // Tried again sooner once a heartbeat is answered (the
                    // server may be back), but never sooner than FIRST_RETRY.
                    self.pause(retry, before);
                    retry = (retry * 2).min(MAX_RETRY);
                }
            }
        }
    }

    /// Blocks until more than `before` heartbeats were answered, or the
    /// tracker is dropped.
    fn until_answered_since(&self, before: u64) {
        let mut answers = self.answers.lock().unwrap_or_else(|e| e.into_inner());
        while *answers <= before && !self.stopped.load(Ordering::Acquire) {
            answers = self
                .answered
                .wait(answers)
                .unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Sleeps `pause`, or less if the tracker is dropped, or if a heartbeat
    /// is answered after the `before`th meanwhile (but at least
    /// `FIRST_RETRY` then).
    fn pause(&self, pause: Duration, before: u64) {
        let begun = std::time::Instant::now();
        let answers = self.answers.lock().unwrap_or_else(|e| e.into_inner());
        let (answers, _) = self
            .answered
            .wait_timeout_while(answers, pause, |answers| {
                *answers <= before && !self.stopped.load(Ordering::Acquire)
            })
            .unwrap_or_else(|e| e.into_inner());
        drop(answers);
        let least = FIRST_RETRY.min(pause);
        if !self.stopped.load(Ordering::Acquire) && begun.elapsed() < least {
            std::thread::sleep(least.saturating_sub(begun.elapsed()));
        }
    }
}
