//! The HTTP API in process, as a property: whatever a client sends — any
//! route, method, query, headers and body, near-valid or nonsense — the
//! answer is a 2xx or a 4xx in YARN's error shape, never a 5xx, and the event
//! loop goes on scheduling afterwards. And the OpenAPI document served at
//! /ws/v1/openapi.json is the one generated from the code, and lists every
//! status the GET routes answer.

use std::sync::{Arc, OnceLock};

use axum::Router;
use axum::body::Body;
use axum::http::Request;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use serde_json::{Value, json};
use tower::ServiceExt;
use weft_host::api::{ApiState, openapi_document, router};
use weft_host::clock::{Clock, WallClock};
use weft_host::policy::{PolicyKind, PolicyRuntime, PolicySource};
use weft_host::resources::Resources;
use weft_host::rm::assemble::{Parts, QuotaEventLog, assemble};
use weft_host::rm::{self, Intervals, RmHandle};
use weft_host::security::{Authenticator, Security};
use weft_host::store::Store;

/// One resource manager and router for every test of this module.
struct InProcess {
    router: Router,
    rm: RmHandle,
    runtime: tokio::runtime::Runtime,
}

fn in_process() -> &'static InProcess {
    static SHARED: OnceLock<InProcess> = OnceLock::new();
    SHARED.get_or_init(|| {
        let settings = crate::support::default_settings();
        let clock: Arc<dyn Clock> = Arc::new(WallClock);
        let policies = Arc::new(PolicyRuntime::from_settings(&settings, clock.clone()).unwrap());
        for (kind, name) in [
            (PolicyKind::Scheduling, "capacity"),
            (PolicyKind::Pricing, "hops-pricing"),
            (PolicyKind::Sharing, "capacity-over-time"),
        ] {
            policies
                .load(kind, &PolicySource::Builtin(name.into()), &[])
                .unwrap();
        }
        let queues = weft_host::queues::load(None, &settings.queue_properties).unwrap();
        let security = Arc::new(Security::default());
        let manager = assemble(Parts {
            settings: &settings,
            queues,
            store: Store::in_memory(),
            clock,
            policies: policies.clone(),
            security: security.clone(),
            sim_nodes: Some((4, Resources::new(8192, 8, 1))),
            event_log: QuotaEventLog::Off,
            recover: None,
        })
        .unwrap();
        let intervals = Intervals {
            scheduling: std::time::Duration::from_millis(20),
            quota_compute: std::time::Duration::from_millis(100),
            multiplicator: std::time::Duration::from_millis(100),
        };
        // The loop lives as long as the test process.
        let (rm, _thread) = rm::spawn(manager, intervals, std::future::pending()).unwrap();
        let state = ApiState {
            rm: rm.clone(),
            policies,
            authenticator: Arc::new(Authenticator::Simple {
                default_user: "anonymous".into(),
            }),
            security,
            delegation_tokens: None,
            reload_queues: Arc::new(|| {
                weft_host::queues::load_properties(None, &Default::default())
                    .map_err(|e| e.to_string())
            }),
            heartbeat_interval_ms: 1000,
            policy_loads: Default::default(),
            live: Default::default(),
            // Never stops: the sender is dropped.
            stopping: tokio::sync::watch::channel(false).1,
            longest_wait: std::time::Duration::from_secs(30),
            waiting_places: Arc::new(tokio::sync::Semaphore::new(4096)),
        };
        InProcess {
            router: router(state),
            rm,
            runtime: tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap(),
        }
    })
}

/// Sends one request; the status and the body as JSON (or text).
fn send(request: Request<Body>) -> (u16, Value) {
    let api = in_process();
    api.runtime.block_on(async {
        let response = api.router.clone().oneshot(request).await.unwrap();
        let status = response.status().as_u16();
        let bytes = axum::body::to_bytes(response.into_body(), 64 << 20)
            .await
            .unwrap();
        let body = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
        (status, body)
    })
}

fn get(path: &str) -> (u16, Value) {
    send(Request::get(path).body(Body::empty()).unwrap())
}

/// Numbers where arithmetic breaks: zero, one, the types' edges, negatives,
/// fractions, and huge floats.
fn edge_number() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!(0)),
        Just(json!(1)),
        Just(json!(-1)),
        Just(json!(u32::MAX)),
        Just(json!(u64::from(u32::MAX) + 1)),
        Just(json!(1u64 << 63)),
        Just(json!(u64::MAX)),
        Just(json!(i64::MIN)),
        Just(json!(1.5)),
        Just(json!(1e300)),
        Just(json!(-0.0)),
        Just(json!("12")),
        Just(Value::Null),
        (0u64..200_000).prop_map(|n| json!(n)),
        any::<i64>().prop_map(|n| json!(n)),
    ]
}

fn text() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!("")),
        Just(json!("default")),
        Just(json!("alice")),
        Just(json!(" ")),
        Just(json!("a\u{0}b")),
        Just(json!("x".repeat(300))),
        "[a-z.]{1,12}".prop_map(|s| json!(s)),
    ]
}

/// Any JSON at all, a few levels deep.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![edge_number(), text(), any::<bool>().prop_map(|b| json!(b))];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_-]{1,10}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Mostly a small valid figure, sometimes an edge.
fn figure() -> impl Strategy<Value = Value> {
    prop_oneof![4 => (1u64..64).prop_map(|n| json!(n)), 1 => edge_number()]
}

/// A submission with every field near a bound.
fn near_valid_app() -> impl Strategy<Value = Value> {
    let ask = (figure(), figure(), figure(), figure(), figure()).prop_map(
        |(count, memory_mb, vcores, gpus, duration_ms)| {
            json!({"count": count, "memory_mb": memory_mb, "vcores": vcores,
                   "gpus": gpus, "duration_ms": duration_ms})
        },
    );
    let user = prop_oneof![3 => Just(json!("alice")), 1 => text()];
    let queue = prop_oneof![3 => Just(json!("default")), 1 => text()];
    (
        queue,
        user,
        text(),
        edge_number(),
        prop::collection::vec(ask, 0..4),
    )
        .prop_map(|(queue, user, project, priority, asks)| {
            json!({"queue": queue, "user": user, "project": project,
                   "priority": priority, "asks": asks})
        })
}

fn near_valid_node() -> impl Strategy<Value = Value> {
    (text(), edge_number(), edge_number(), edge_number())
        .prop_map(|(id, m, v, g)| json!({"node_id": id, "memory_mb": m, "vcores": v, "gpus": g}))
}

fn near_valid_reservation() -> impl Strategy<Value = Value> {
    (
        text(),
        edge_number(),
        edge_number(),
        edge_number(),
        edge_number(),
        edge_number(),
    )
        .prop_map(|(queue, arrival, deadline, count, memory, duration)| {
            json!({"queue": queue, "reservation-id": "reservation_1_0001",
                "reservation-definition": {"arrival": arrival, "deadline": deadline,
                    "reservation-requests": {"reservation-request-interpreter": 1,
                        "reservation-request": [{"capability": {"memory": memory, "vCores": 1},
                            "num-containers": count, "duration": duration}]}}})
        })
}

const ROUTES: &[(&str, &str)] = &[
    ("GET", "/ws/v1/cluster"),
    ("GET", "/ws/v1/cluster/info"),
    ("GET", "/isActive"),
    ("GET", "/ws/v1/cluster/metrics"),
    ("GET", "/ws/v1/cluster/scheduler"),
    ("GET", "/ws/v1/cluster/usage"),
    ("GET", "/ws/v1/cluster/nodes"),
    ("GET", "/ws/v1/cluster/nodes/{id}"),
    ("GET", "/cluster"),
    ("GET", "/ws/v1/cluster/appstatistics"),
    ("GET", "/ws/v1/cluster/apps/{id}/appattempts"),
    ("GET", "/ws/v1/cluster/apps/{id}/appattempts/{attempt}"),
    (
        "GET",
        "/ws/v1/cluster/apps/{id}/appattempts/{attempt}/containers",
    ),
    (
        "GET",
        "/ws/v1/cluster/apps/{id}/appattempts/{attempt}/containers/{container}",
    ),
    ("GET", "/ws/v1/cluster/apps/{id}/queue"),
    ("PUT", "/ws/v1/cluster/apps/{id}/queue"),
    ("GET", "/ws/v1/cluster/apps/{id}/priority"),
    ("PUT", "/ws/v1/cluster/apps/{id}/priority"),
    ("GET", "/ws/v1/cluster/apps/{id}/timeouts"),
    ("GET", "/ws/v1/cluster/apps/{id}/timeouts/{type}"),
    ("PUT", "/ws/v1/cluster/apps/{id}/timeout"),
    ("GET", "/ws/v1/cluster/scheduler-conf"),
    ("PUT", "/ws/v1/cluster/scheduler-conf"),
    ("POST", "/ws/v1/cluster/scheduler-conf/validate"),
    ("GET", "/ws/v1/cluster/scheduler-conf/version"),
    ("GET", "/ws/v1/cluster/scheduler-conf/format"),
    ("GET", "/ws/v1/cluster/scheduler/activities"),
    ("GET", "/ws/v1/cluster/scheduler/app-activities/{id}"),
    ("POST", "/ws/v1/cluster/nodes/register"),
    ("POST", "/ws/v1/cluster/nodes/{id}/heartbeat"),
    ("GET", "/ws/v1/cluster/nodes/{id}/orders-waiting"),
    ("POST", "/ws/v1/cluster/nodes/{id}/release"),
    ("POST", "/ws/v1/cluster/nodes/{id}/decommission"),
    ("POST", "/ws/v1/cluster/nodes/{id}/recommission"),
    ("GET", "/ws/v1/cluster/get-node-labels"),
    ("POST", "/ws/v1/cluster/add-node-labels"),
    ("POST", "/ws/v1/cluster/remove-node-labels"),
    ("POST", "/ws/v1/cluster/nodes/{id}/replace-labels"),
    ("POST", "/ws/v1/cluster/replace-node-to-labels"),
    ("GET", "/ws/v1/cluster/nodes/{id}/get-labels"),
    ("GET", "/ws/v1/cluster/get-node-to-labels"),
    ("GET", "/ws/v1/cluster/apps"),
    ("POST", "/ws/v1/cluster/apps"),
    ("POST", "/ws/v1/cluster/apps/new-application"),
    ("POST", "/ws/v1/cluster/delegation-token"),
    ("DELETE", "/ws/v1/cluster/delegation-token"),
    ("POST", "/ws/v1/cluster/delegation-token/expiration"),
    ("GET", "/ws/v1/cluster/apps/{id}"),
    ("GET", "/ws/v1/cluster/apps/{id}/state"),
    ("PUT", "/ws/v1/cluster/apps/{id}/state"),
    ("GET", "/ws/v1/cluster/apps/{id}/containers"),
    (
        "GET",
        "/ws/v1/cluster/apps/{id}/containers/{container}/logs/{stream}",
    ),
    ("POST", "/ws/v1/cluster/reservation/new-reservation"),
    ("POST", "/ws/v1/cluster/reservation/submit"),
    ("POST", "/ws/v1/cluster/reservation/update"),
    ("POST", "/ws/v1/cluster/reservation/delete"),
    ("GET", "/ws/v1/cluster/reservation/list"),
    ("GET", "/ws/v1/policies"),
    ("GET", "/ws/v1/policies/{kind}"),
    ("PUT", "/ws/v1/policies/{kind}"),
    ("POST", "/ws/v1/policies/{kind}/rollback"),
    ("GET", "/ws/v1/policies/{kind}/shadow"),
    ("PUT", "/ws/v1/policies/{kind}/shadow"),
    ("DELETE", "/ws/v1/policies/{kind}/shadow"),
    ("POST", "/ws/v1/policies/{kind}/shadow/promote"),
    ("POST", "/ws/v1/admin/refresh-queues"),
    ("POST", "/ws/v1/admin/refresh-nodes"),
    ("GET", "/ws/v1/quota/projects"),
    ("GET", "/ws/v1/quota/prices"),
    ("POST", "/ws/v1/quota/quote"),
    ("GET", "/ws/v1/quota/budgets"),
    ("GET", "/ws/v1/quota/projects/{project}"),
    ("POST", "/ws/v1/quota/projects/{project}/grant"),
    ("GET", "/ws/v1/accounting"),
    ("GET", "/ws/v1/whoami"),
];

/// Routes whose answer never ends (server-sent events): in the document,
/// kept out of the requests above, whose bodies are read to their end
/// (`tests/all/web_ui.rs` reads the stream).
const STREAMS: &[(&str, &str)] = &[("GET", "/ws/v1/events")];

fn request() -> impl Strategy<Value = Request<Body>> {
    let route = prop::sample::select(ROUTES);
    let segment = prop_oneof![
        Just("pricing".to_string()),
        Just("scheduling".to_string()),
        Just("sim-0001:8041".to_string()),
        Just("application_1_0001".to_string()),
        Just("%00".to_string()),
        "[a-zA-Z0-9_:.-]{1,20}",
    ];
    let query = prop::collection::vec(
        (
            prop::sample::select(vec![
                "states",
                "state",
                "queue",
                "user",
                "limit",
                "startedTimeBegin",
                "startedTimeEnd",
                "finishedTimeBegin",
                "finishedTimeEnd",
                "start-time",
                "end-time",
                "include-resource-allocations",
                "builtin",
                "reservation-id",
            ]),
            prop_oneof![
                Just("RUNNING".to_string()),
                Just("-1".to_string()),
                Just("18446744073709551616".to_string()),
                Just("0".to_string()),
                Just("true".to_string()),
                "[A-Za-z0-9,%]{0,12}",
            ],
        ),
        0..4,
    );
    let body = prop_oneof![
        Just(None),
        any_json().prop_map(Some),
        near_valid_app().prop_map(Some),
        near_valid_node().prop_map(Some),
        near_valid_reservation().prop_map(Some),
    ];
    let user = prop_oneof![
        3 => Just(Some("alice".to_string())),
        1 => Just(None),
        1 => Just(Some("x".repeat(400))),
    ];
    (route, segment, query, body, user).prop_map(|((method, path), segment, query, body, user)| {
        let path = path.replace("{id}", &segment).replace("{kind}", &segment);
        let query: Vec<String> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let uri = if query.is_empty() {
            path
        } else {
            format!("{path}?{}", query.join("&"))
        };
        let mut builder = Request::builder()
            .method(method)
            .uri(uri)
            .header("content-type", "application/json");
        if let Some(user) = user {
            builder = builder.header("x-weft-user", user);
        }
        builder
            .body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())))
            .unwrap()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, .. ProptestConfig::default() })]

    #[test]
    fn no_request_gets_a_server_error(request in request()) {
        let shown = format!("{} {}", request.method(), request.uri());
        let (status, body) = send(request);
        prop_assert!(status < 500, "{shown} → {status} {body}");
        if status >= 400 {
            prop_assert!(
                body["RemoteException"]["message"].is_string(),
                "{shown} → {status}: not YARN's error shape: {body}"
            );
        }
    }
}

#[test]
fn after_hostile_requests_the_loop_still_schedules() {
    // Run some of the property's requests first, whatever order tests run in.
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    for _ in 0..100 {
        let request = request().new_tree(&mut runner).unwrap().current();
        let (status, body) = send(request);
        assert!(status < 500, "{status} {body}");
    }
    let submitted = send(
        Request::post("/ws/v1/cluster/apps")
            .header("x-weft-user", "alice")
            .body(Body::from(
                json!({"queue": "default", "user": "alice", "project": "after",
                       "asks": [{"count": 1, "memory_mb": 512, "vcores": 1, "duration_ms": 50}]})
                .to_string(),
            ))
            .unwrap(),
    );
    assert_eq!(submitted.0, 202, "{}", submitted.1);
    let id = submitted.1["app"]["id"].as_str().unwrap().to_string();
    let started = std::time::Instant::now();
    loop {
        let (_, body) = get(&format!("/ws/v1/cluster/apps/{id}"));
        if body["app"]["state"] == "FINISHED" {
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "{body}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let api = in_process();
    let alive = api.runtime.block_on(api.rm.with(|rm| rm.now()));
    assert!(alive.is_ok());
}

#[test]
fn the_served_openapi_document_is_the_generated_one_and_covers_every_route() {
    let (status, served) = get("/ws/v1/openapi.json");
    assert_eq!(status, 200);
    let generated = serde_json::to_value(openapi_document()).unwrap();
    assert_eq!(served, generated);
    assert!(served["openapi"].as_str().unwrap().starts_with("3."));
    let paths = served["paths"].as_object().unwrap();
    for (method, path) in ROUTES.iter().chain(STREAMS) {
        let operation = &paths
            .get(*path)
            .unwrap_or_else(|| panic!("{path} is not in the document"))[method.to_lowercase()];
        assert!(
            operation.is_object(),
            "{method} {path} is not in the document"
        );
    }
    assert_eq!(
        paths
            .values()
            .map(|p| p.as_object().unwrap().len())
            .sum::<usize>(),
        ROUTES.len() + STREAMS.len(),
        "the document and the routes of this test list the same operations"
    );
    // Every GET without a path parameter answers a status its operation lists.
    for (method, path) in ROUTES {
        if *method != "GET" || path.contains('{') {
            continue;
        }
        let (status, body) = get(path);
        let documented = &paths[*path]["get"]["responses"];
        assert!(
            documented.get(status.to_string()).is_some(),
            "GET {path} answered {status}, which the document does not list: {body}"
        );
    }
}
