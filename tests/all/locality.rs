//! Locality and delay scheduling through the real binary (YARN's
//! resourceName, relaxLocality and node-locality-delay): an ask lands on
//! its node when it can, waits there while it is full for the configured
//! number of missed opportunities (saying so), then relaxes; a strict ask
//! never does; bad localities are refused by name.

use serde_json::{Value, json};

use crate::support::Server;

fn submit(server: &Server, count: u32, locality: Value) -> (u16, Value) {
    server.post_json(
        "/ws/v1/cluster/apps",
        &json!({"project": "p", "asks": [{"count": count, "memory_mb": 1024, "vcores": 1,
            "duration_ms": 60_000, "locality": locality}]}),
    )
}

/// Three simulated nodes of two vcores; a node delay of 6 (counted as 3,
/// the cluster's nodes, as YARN caps it) and none more before off-switch
/// (the racks are all the default one).
const THREE_NODES_DELAY_SIX: [&str; 6] = [
    "--sim-nodes",
    "3x4096mb,2vcores",
    "--set",
    "yarn.scheduler.capacity.node-locality-delay=6",
    "--set",
    "yarn.scheduler.capacity.rack-locality-additional-delay=0",
];

/// Waits for `app`'s container to run, and checks it ran no sooner than
/// `at_least_ms` after `since` (it waited out its delay).
fn runs_no_sooner_than(server: &Server, app: &str, since: std::time::Instant, at_least_ms: u64) {
    server.wait_for(&format!("/ws/v1/cluster/apps/{app}"), "relaxed", |b| {
        b["app"]["runningContainers"] == 1
    });
    let waited = since.elapsed();
    assert!(
        waited >= std::time::Duration::from_millis(at_least_ms),
        "it waited out its delay: {waited:?}"
    );
}

fn id(answer: (u16, Value)) -> String {
    assert_eq!(answer.0, 202, "{}", answer.1);
    answer.1["app"]["id"].as_str().unwrap().to_string()
}

#[test]
fn an_ask_lands_node_local_when_it_can_and_relaxes_after_the_delay() {
    // Three nodes of two vcores, each offering itself once a heartbeat
    // interval (1 s), and the delay of 6 counts as 3, as YARN caps it at
    // the cluster's nodes: a second's worth, however many passes come in
    // it. The racks are all the default one: rack-local is anywhere, and
    // no additional delay before off-switch.
    let server = Server::start(&THREE_NODES_DELAY_SIX);
    for (locality, says) in [
        (json!({}), "asks[0].locality"),
        (json!({"racks": ["rack7"]}), "asks[0].locality.racks[0]"),
        (
            json!({"nodes": ["n".repeat(300)]}),
            "asks[0].locality.nodes[0]",
        ),
        (json!({"nodes": ["x"], "near": true}), "near"),
    ] {
        let (status, body) = submit(&server, 1, locality.clone());
        assert_eq!(status, 400, "{locality}: {body}");
        assert!(body.to_string().contains(says), "{locality}: {body}");
    }

    // Room on sim-0002: both land there.
    let first = id(submit(&server, 2, json!({"nodes": ["sim-0002:8041"]})));
    server.wait_for(&format!("/ws/v1/cluster/apps/{first}"), "two", |b| {
        b["app"]["runningContainers"] == 2
    });
    assert_eq!(server.container_nodes(&first), ["sim-0002:8041"; 2]);

    // sim-0002 is full now: the next waits for it for a second, then
    // relaxes, though the submission brought a pass forward and passes
    // come every 100 ms.
    let submitted = std::time::Instant::now();
    let relaxed = id(submit(&server, 1, json!({"nodes": ["sim-0002:8041"]})));
    // (Its count starts at the first pass that sees it, after the
    // submission; the server counts whole ms. Counted by pass, it went
    // within 200 ms.)
    runs_no_sooner_than(&server, &relaxed, submitted, 990);
    let nodes = server.container_nodes(&relaxed);
    assert_ne!(
        nodes,
        ["sim-0002:8041"],
        "it went elsewhere after the delay"
    );

    // A strict one keeps to its node however long it waits.
    let strict = id(submit(
        &server,
        1,
        json!({"nodes": ["sim-0002:8041"], "relax_locality": false}),
    ));
    std::thread::sleep(std::time::Duration::from_millis(3000));
    let (_, app) = server.get(&format!("/ws/v1/cluster/apps/{strict}"));
    assert_eq!(app["app"]["runningContainers"], 0, "{app}");
    let reason = app["app"]["diagnostics"].as_str().unwrap_or_default();
    assert!(
        reason.contains("waiting for a node-local place on sim-0002:8041"),
        "{app}"
    );
    assert!(reason.contains("does not relax locality"), "{app}");
    let missed = &app["app"]["asks"][0]["locality"]["missed_opportunities"];
    assert!(missed.as_u64().unwrap_or(0) >= 6, "{app}");
}

#[test]
fn time_the_server_was_down_is_not_counted_toward_a_delay() {
    // As above, but heartbeats every 2 s: a delay of 2 s. The ask has
    // waited a fraction of it when the server stops. Down for three
    // seconds (4.5 opportunities' worth), then started again on its
    // store: the ask still waits the rest of its delay, not relaxed at
    // once for the time no node heartbeat.
    let dir = crate::support::shared_tempdir();
    let data = dir.path().join("data");
    let args = [
        &THREE_NODES_DELAY_SIX[..],
        &[
            "--set",
            "yarn.cluster.max-application-priority=10",
            "--set",
            "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms=2000",
        ],
    ]
    .concat();
    let server = Server::start_in(&data, &args);
    let first = id(submit(&server, 2, json!({"nodes": ["sim-0002:8041"]})));
    server.wait_for(&format!("/ws/v1/cluster/apps/{first}"), "two", |b| {
        b["app"]["runningContainers"] == 2
    });
    let waiting = id(submit(&server, 1, json!({"nodes": ["sim-0002:8041"]})));
    std::thread::sleep(std::time::Duration::from_millis(200));
    // A change to the app stores it with its count as it is.
    let (status, body) = server.request(
        "PUT",
        &format!("/ws/v1/cluster/apps/{waiting}/priority"),
        &[("content-type", "application/json")],
        Some(br#"{"priority": 5}"#),
    );
    assert_eq!(status, 200, "{body}");
    server.stop();
    std::thread::sleep(std::time::Duration::from_secs(3));
    let server = Server::start_in(&data, &args);
    let back = std::time::Instant::now();
    let (_, app) = server.get(&format!("/ws/v1/cluster/apps/{waiting}"));
    assert_eq!(app["app"]["runningContainers"], 0, "not at once: {app}");
    // A few hundred ms were counted before the stop. (Counted from
    // before the stop, it went within about 100 ms.)
    runs_no_sooner_than(&server, &waiting, back, 1000);
}
