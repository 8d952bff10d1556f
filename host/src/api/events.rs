//! GET /ws/v1/events: the web UI's live figures as server-sent events. Each
//! event is a topic — metrics, scheduler, apps, nodes, prices, budgets,
//! policies — whose data is exactly the body its GET endpoint answers
//! (the same handler builds it), sent once when a stream opens and again
//! whenever it changed.
//!
//! One sampler serves every stream: while at least one is open it builds
//! each topic's body twice a second and broadcasts those that changed, so
//! a page costs the server nothing per viewer but a send. (Running apps'
//! elapsed time and the policies' call counts change at nearly every
//! sample, so those topics go out about twice a second.) A policy hot
//! swap is just another change (the policies and prices topics).
//!
//! Bounded, so that streams cost the server nothing it cannot afford: each
//! event is formatted once and its bytes shared by every stream; a topic
//! is at most 1 MiB (the apps topic shows fewer apps until it fits, and
//! the `cut` topic says so); a reader 16 changes behind is dropped rather
//! than buffered for; a stream's credentials are checked again every two
//! seconds; and a stream lasts `weft.http.event-stream-lifetime-ms`,
//! after which the page opens the next.

use std::collections::{BTreeMap, VecDeque};
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use futures_util::stream::{self, Stream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, broadcast};

use super::extract::ApiQuery;
use super::openapi::RemoteException;
use super::{ApiError, ApiState, cluster, policies, quota, scheduler};
use crate::limits::{MAX_EVENT_STREAMS, MAX_EVENT_STREAMS_PER_CALLER, MAX_EVENT_TOPIC_BYTES};
use crate::security::{Caller, USER_HEADER};

/// How often the sampler builds the topics while a stream is open.
const SAMPLE_EVERY: Duration = Duration::from_millis(500);
/// How often an idle stream gets a comment, so proxies and the page's
/// watchdog see it alive.
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// How often a stream's credentials are checked again: a revoked token
/// ends its streams within this.
pub(super) const RECHECK_EVERY: Duration = Duration::from_secs(2);
/// Changes a stream may fall behind by: a reader slower than this (one
/// that stopped reading) is dropped, not buffered; it reconnects.
const BACKLOG: usize = 16;

/// One topic's body as sent: the event that carries its JSON, formatted
/// once and shared by every stream (the JSON is not kept apart: a large
/// apps topic would be held twice).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct TopicBody {
    pub topic: &'static str,
    frame: Bytes,
}

impl TopicBody {
    pub(super) fn new(topic: &'static str, json: &str) -> TopicBody {
        let mut frame = String::with_capacity(json.len() + topic.len() + 16);
        frame.push_str("event: ");
        frame.push_str(topic);
        frame.push('\n');
        // One data line per line of the body (JSON has none but an
        // error's text might).
        for line in json.split('\n') {
            frame.push_str("data: ");
            frame.push_str(line.trim_end_matches('\r'));
            frame.push('\n');
        }
        frame.push('\n');
        TopicBody {
            topic,
            frame: Bytes::from(frame),
        }
    }
}

/// The live topics shared by every stream of one server.
#[derive(Debug)]
pub struct Live {
    sender: broadcast::Sender<Arc<TopicBody>>,
    latest: std::sync::Mutex<BTreeMap<&'static str, Arc<TopicBody>>>,
    sampling: AtomicBool,
    streams: Arc<Semaphore>,
    /// Streams open per caller.
    by_caller: Arc<std::sync::Mutex<std::collections::HashMap<String, usize>>>,
    /// How long one stream lasts (`weft.http.event-stream-lifetime-ms`).
    lifetime: Duration,
}

/// A caller's place among its [`MAX_EVENT_STREAMS_PER_CALLER`], given back when
/// its stream ends.
#[derive(Debug)]
struct CallerPlace {
    by_caller: Arc<std::sync::Mutex<std::collections::HashMap<String, usize>>>,
    caller: String,
}

impl Drop for CallerPlace {
    fn drop(&mut self) {
        let mut counts = self
            .by_caller
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(open) = counts.get_mut(&self.caller) {
            *open = open.saturating_sub(1);
            if *open == 0 {
                counts.remove(&self.caller);
            }
        }
    }
}

impl Default for Live {
    fn default() -> Live {
        Live::new(
            crate::config::Settings::default()
                .http
                .event_stream_lifetime,
        )
    }
}

impl Live {
    /// Streams that last `lifetime` each (then the client opens another).
    pub fn new(lifetime: Duration) -> Live {
        Live {
            sender: broadcast::channel(BACKLOG).0,
            latest: Default::default(),
            sampling: AtomicBool::new(false),
            streams: Arc::new(Semaphore::new(MAX_EVENT_STREAMS)),
            by_caller: Default::default(),
            lifetime,
        }
    }

    /// A place for one more stream of `caller`, if it has one left.
    fn place_for(&self, caller: &str) -> Option<CallerPlace> {
        let mut counts = self
            .by_caller
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let open = counts.entry(caller.to_string()).or_insert(0);
        if *open >= MAX_EVENT_STREAMS_PER_CALLER {
            return None;
        }
        *open += 1;
        Some(CallerPlace {
            by_caller: self.by_caller.clone(),
            caller: caller.to_string(),
        })
    }

    fn latest(&self) -> Vec<Arc<TopicBody>> {
        self.latest
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .values()
            .cloned()
            .collect()
    }

    /// Keeps `bodies` as the latest and broadcasts those that changed.
    fn publish(&self, bodies: Vec<TopicBody>) {
        let mut latest = self
            .latest
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        for body in bodies {
            if latest.get(body.topic).is_some_and(|old| **old == body) {
                continue;
            }
            let body = Arc::new(body);
            latest.insert(body.topic, body.clone());
            // No receiver is no error: nobody is watching.
            let _ = self.sender.send(body);
        }
    }
}

/// The body a handler's answer carries, as text (an error's too: the page
/// shows a RemoteException as such).
async fn body_of(answer: impl IntoResponse) -> String {
    let body = answer.into_response().into_body();
    match axum::body::to_bytes(body, 64 << 20).await {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(error) => {
            serde_json::json!({"RemoteException": {"message": format!("unreadable: {error}")}})
                .to_string()
        }
    }
}

/// The apps topic: the body of `/ws/v1/cluster/apps?limit=N`, N the
/// default 1,000 if that fits [`MAX_EVENT_TOPIC_BYTES`], else as many as the
/// first body's size per app says fit (with a margin), halved again only
/// should that still not fit; with that N. Usually one body is built, two
/// when the list is too long, rarely more.
async fn apps_within_bound(state: &ApiState) -> (String, u64) {
    let mut limit = crate::limits::DEFAULT_APPS_PAGE as u64;
    let mut estimated = false;
    loop {
        let query = cluster::AppsQuery::newest(limit);
        let json = body_of(cluster::apps(State(state.clone()), ApiQuery(query)).await).await;
        if json.len() <= MAX_EVENT_TOPIC_BYTES || limit == 1 {
            return (json, limit);
        }
        limit = if estimated {
            limit / 2
        } else {
            estimated = true;
            let fitting = (MAX_EVENT_TOPIC_BYTES as u64).saturating_mul(limit) / json.len() as u64;
            (fitting * 9 / 10).clamp(1, limit - 1)
        };
    }
}

/// Every topic's body now, built by its endpoint's own handler, and the
/// `cut` topic saying what was cut to stay within [`MAX_EVENT_TOPIC_BYTES`]:
/// `{"max_bytes", "apps_limit" (the apps topic's limit, 1,000 if not
/// cut), "left_out" (topics too large to send)}`.
pub(super) async fn sample(state: &ApiState) -> Vec<TopicBody> {
    let s = || axum::extract::State(state.clone());
    let (apps, apps_limit) = apps_within_bound(state).await;
    let mut topics = vec![
        (
            "metrics",
            body_of(cluster::cluster_metrics(s()).await).await,
        ),
        ("scheduler", body_of(scheduler::scheduler(s()).await).await),
        ("apps", apps),
        (
            "nodes",
            body_of(cluster::nodes(s(), ApiQuery(Default::default())).await).await,
        ),
        ("prices", body_of(quota::prices(s()).await).await),
        ("budgets", body_of(quota::budgets(s()).await).await),
        ("policies", body_of(policies::list(s()).await).await),
    ];
    let left_out: Vec<&str> = topics
        .iter()
        .filter(|(_, json)| json.len() > MAX_EVENT_TOPIC_BYTES)
        .map(|(topic, _)| *topic)
        .collect();
    topics.retain(|(_, json)| json.len() <= MAX_EVENT_TOPIC_BYTES);
    let cut = serde_json::json!({
        "max_bytes": MAX_EVENT_TOPIC_BYTES,
        "apps_limit": apps_limit,
        "left_out": left_out,
    });
    topics.push(("cut", cut.to_string()));
    topics
        .into_iter()
        .map(|(topic, json)| TopicBody::new(topic, &json))
        .collect()
}

/// Samples while any stream is open, then stops (the next stream starts
/// it again). The first sample goes out at once.
async fn run_sampler(state: ApiState) {
    let live = state.live.clone();
    // Should this task end otherwise (a panic), the next stream starts
    // another.
    struct Panicked(Option<Arc<Live>>);
    impl Drop for Panicked {
        fn drop(&mut self) {
            if let Some(live) = &self.0 {
                live.sampling.store(false, Ordering::SeqCst);
            }
        }
    }
    let mut panicked = Panicked(Some(live.clone()));
    loop {
        let bodies = sample(&state).await;
        live.publish(bodies);
        tokio::time::sleep(SAMPLE_EVERY).await;
        if live.sender.receiver_count() == 0 {
            live.sampling.store(false, Ordering::SeqCst);
            // A stream that opened just now saw this sampler running:
            // carry on for it (unless it started another).
            if live.sender.receiver_count() == 0 || live.sampling.swap(true, Ordering::SeqCst) {
                panicked.0 = None;
                return;
            }
        }
    }
}

/// The live figures as server-sent events: `event: TOPIC`, `data:` the
/// body of the topic's GET endpoint (metrics: /ws/v1/cluster/metrics;
/// scheduler: /ws/v1/cluster/scheduler; apps: /ws/v1/cluster/apps, its
/// newest apps within 1 MiB; nodes: /ws/v1/cluster/nodes; prices:
/// /ws/v1/quota/prices; budgets: /ws/v1/quota/budgets; policies:
/// /ws/v1/policies), and `cut` (what was cut to stay within 1 MiB a topic:
/// `{"max_bytes", "apps_limit", "left_out"}`). Every topic comes once when
/// the stream opens, then again whenever it changed (a comment every 15 s
/// when nothing did). At most 64 streams at once, 4 per caller. A stream ends — and the
/// client opens another — after `weft.http.event-stream-lifetime-ms`, when
/// its reader falls 16 changes behind (it stopped reading), or within 2 s
/// of its credentials no longer being valid (a revoked token).
#[utoipa::path(get, path = "/ws/v1/events", tag = "cluster",
    responses((status = 200, description = "a text/event-stream, ended after weft.http.event-stream-lifetime-ms", content_type = "text/event-stream", body = String),
        (status = 401, body = RemoteException),
        (status = 503, description = "64 streams are open already, or the caller's 4", body = RemoteException)))]
pub(super) async fn events(
    State(state): State<ApiState>,
    caller: Caller,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let live = state.live.clone();
    let place = live.place_for(&caller.user).ok_or_else(|| {
        ApiError::unavailable(format!(
            "{} holds {MAX_EVENT_STREAMS_PER_CALLER} event streams already, the most one caller may; close one",
            caller.user
        ))
    })?;
    let permit = live.streams.clone().try_acquire_owned().map_err(|_| {
        ApiError::unavailable(format!(
            "{MAX_EVENT_STREAMS} event streams are open already; try again later"
        ))
    })?;
    // Subscribed before the sampler is looked at (a sampler about to stop
    // sees this stream) and before the latest are read (a change in
    // between comes twice, harmless; none is missed). Nothing here awaits:
    // a client gone early leaves nothing half done.
    let receiver = live.sender.subscribe();
    if !live.sampling.swap(true, Ordering::SeqCst) {
        // The first stream: the sampler's first bodies come at once, and
        // the latest ones, perhaps old, open the stream meanwhile.
        tokio::spawn(run_sampler(state.clone()));
    }
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
    };
    let stream = LiveStream {
        opening: live.latest().into(),
        receiver,
        credentials: Credentials {
            user: text(USER_HEADER),
            authorization: text(header::AUTHORIZATION.as_str()),
            caller: caller.user,
        },
        ends_at: tokio::time::Instant::now() + live.lifetime,
        recheck: tokio::time::interval_at(
            tokio::time::Instant::now() + RECHECK_EVERY,
            RECHECK_EVERY,
        ),
        keep_alive: tokio::time::interval_at(tokio::time::Instant::now() + KEEP_ALIVE, KEEP_ALIVE),
        state,
        _permit: permit,
        _place: place,
    };
    let mut response = Body::from_stream(stream.frames()).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Ok(response)
}

/// What a stream was opened with, to check again as it goes.
struct Credentials {
    user: Option<String>,
    authorization: Option<String>,
    /// Who they were.
    caller: String,
}

/// One open stream.
struct LiveStream {
    /// The latest bodies, sent first.
    opening: VecDeque<Arc<TopicBody>>,
    receiver: broadcast::Receiver<Arc<TopicBody>>,
    credentials: Credentials,
    ends_at: tokio::time::Instant,
    recheck: tokio::time::Interval,
    keep_alive: tokio::time::Interval,
    state: ApiState,
    /// Its place among [`MAX_EVENT_STREAMS`], given back when it ends.
    _permit: OwnedSemaphorePermit,
    /// And among its caller's.
    _place: CallerPlace,
}

impl LiveStream {
    /// Whether the credentials it was opened with still name its caller
    /// (a revoked token's do not).
    fn still_valid(&self) -> bool {
        let credentials = &self.credentials;
        self.state
            .authenticator
            .authenticate(
                credentials.user.as_deref(),
                credentials.authorization.as_deref(),
            )
            .is_ok_and(|user| user == credentials.caller)
    }

    /// The bytes it sends: each event formatted once for every stream
    /// (shared, not copied), until it ends.
    fn frames(self) -> impl Stream<Item = Result<Bytes, Infallible>> {
        stream::unfold(self, |mut live| async move {
            if let Some(body) = live.opening.pop_front() {
                return Some((Ok(body.frame.clone()), live));
            }
            loop {
                tokio::select! {
                    received = live.receiver.recv() => match received {
                        Ok(body) => return Some((Ok(body.frame.clone()), live)),
                        // Too slow a reader (one that stopped reading): ended
                        // rather than buffered for; the page opens another.
                        Err(broadcast::error::RecvError::Lagged(missed)) => {
                            tracing::debug!(missed, "an event stream fell behind; ended");
                            return None;
                        }
                        Err(broadcast::error::RecvError::Closed) => return None,
                    },
                    _ = live.recheck.tick() => {
                        if !live.still_valid() {
                            tracing::info!(user = %live.credentials.caller, "an event stream's credentials are no longer valid; ended");
                            return None;
                        }
                    }
                    _ = live.keep_alive.tick() => {
                        return Some((Ok(Bytes::from_static(b": keep-alive\n\n")), live));
                    }
                    _ = tokio::time::sleep_until(live.ends_at) => return None,
                }
            }
        })
    }
}
