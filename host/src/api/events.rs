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
//! swap is just another change (the policies and prices topics). A
//! connection is closed after `weft.http.idle-timeout-ms` without a byte
//! from the client, streams too: the page opens the next at once.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::extract::State;
use axum::response::IntoResponse;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::stream::{self, Stream, StreamExt};
use tokio::sync::{Semaphore, broadcast};

use super::extract::ApiQuery;
use super::openapi::RemoteException;
use super::{ApiError, ApiState, cluster, policies, quota, scheduler};

/// How often the sampler builds the topics while a stream is open.
const SAMPLE_EVERY: Duration = Duration::from_millis(500);
/// Streams open at once (each holds a connection).
pub const MAX_STREAMS: usize = 64;
/// How often an idle stream gets a comment, so proxies and the page's
/// watchdog see it alive.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// One topic's body as sent.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicBody {
    pub topic: &'static str,
    pub json: String,
}

/// The live topics shared by every stream of one server.
#[derive(Debug)]
pub struct Live {
    sender: broadcast::Sender<Arc<TopicBody>>,
    latest: std::sync::Mutex<BTreeMap<&'static str, Arc<TopicBody>>>,
    sampling: AtomicBool,
    streams: Arc<Semaphore>,
}

impl Default for Live {
    fn default() -> Live {
        Live {
            sender: broadcast::channel(64).0,
            latest: Default::default(),
            sampling: AtomicBool::new(false),
            streams: Arc::new(Semaphore::new(MAX_STREAMS)),
        }
    }
}

impl Live {
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

/// Every topic's body now, built by its endpoint's own handler.
pub async fn sample(state: &ApiState) -> Vec<TopicBody> {
    let s = || axum::extract::State(state.clone());
    let topic = |topic, json| TopicBody { topic, json };
    vec![
        topic(
            "metrics",
            body_of(cluster::cluster_metrics(s()).await).await,
        ),
        topic("scheduler", body_of(scheduler::scheduler(s()).await).await),
        topic(
            "apps",
            body_of(cluster::apps(s(), ApiQuery(Default::default())).await).await,
        ),
        topic(
            "nodes",
            body_of(cluster::nodes(s(), ApiQuery(Default::default())).await).await,
        ),
        topic("prices", body_of(quota::prices(s()).await).await),
        topic("budgets", body_of(quota::budgets(s()).await).await),
        topic("policies", body_of(policies::list(s()).await).await),
    ]
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
/// scheduler: /ws/v1/cluster/scheduler; apps: /ws/v1/cluster/apps; nodes:
/// /ws/v1/cluster/nodes; prices: /ws/v1/quota/prices; budgets:
/// /ws/v1/quota/budgets; policies: /ws/v1/policies). Every topic comes
/// once when the stream opens, then again whenever it changed (a comment
/// every 15 s when nothing did). At most 64 streams at once; a stream ends
/// after `weft.http.idle-timeout-ms` (the client sends nothing), and the
/// page reopens it.
#[utoipa::path(get, path = "/ws/v1/events", tag = "cluster",
    responses((status = 200, description = "an endless text/event-stream", content_type = "text/event-stream", body = String),
        (status = 401, body = RemoteException),
        (status = 503, description = "64 streams are open already", body = RemoteException)))]
pub async fn events(
    State(state): State<ApiState>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let live = state.live.clone();
    let permit = live.streams.clone().try_acquire_owned().map_err(|_| {
        ApiError::unavailable(format!(
            "{MAX_STREAMS} event streams are open already; try again later"
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
    let opening = stream::iter(live.latest());
    let changes = stream::unfold(
        (receiver, live, permit),
        |(mut receiver, live, permit)| async move {
            let bodies = match receiver.recv().await {
                Ok(body) => vec![body],
                // Too slow a reader missed changes: every topic again.
                Err(broadcast::error::RecvError::Lagged(_)) => live.latest(),
                Err(broadcast::error::RecvError::Closed) => return None,
            };
            Some((stream::iter(bodies), (receiver, live, permit)))
        },
    )
    .flatten();
    let events = opening
        .chain(changes)
        .map(|body| Ok(Event::default().event(body.topic).data(&body.json)));
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)))
}
