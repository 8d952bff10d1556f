//! Hostile input through the real binary: every reproduction of "Safe to
//! expose" is refused with a 4xx naming the field and the limit, and the
//! host keeps serving, scheduling and charging; bodies are bounded per
//! route; app and node listings filter and page as YARN's do.

use serde_json::{Value, json};

use crate::support::{Server, assert_credits};

const SIM_NODES: [&str; 2] = ["--sim-nodes", "4x8192mb,8vcores,1gpus"];

fn app(asks: Value) -> Value {
    json!({"queue": "default", "user": "alice", "project": "p", "asks": asks})
}

fn refused(server: &Server, body: &Value, status: u16, mentions: &[&str]) {
    let (got, answer) = server.post_json("/ws/v1/cluster/apps", body);
    let message = answer["RemoteException"]["message"].as_str().unwrap_or("");
    assert_eq!(got, status, "{body} → {answer}");
    for word in mentions {
        assert!(
            message.contains(word),
            "{message:?} should mention {word:?}"
        );
    }
}

/// A small app is scheduled, finishes and is charged: the loop is alive.
fn still_schedules_and_charges(server: &Server, project: &str) {
    let id = server.submit(project, 2, 500);
    server.wait_for(
        &format!("/ws/v1/cluster/apps/{id}"),
        "the app to finish",
        |body| body["app"]["state"] == "FINISHED",
    );
    server.wait_for("/ws/v1/quota/projects", "the app to be charged", |body| {
        body[project]["total_used"].as_f64().unwrap_or(0.0) > 0.0
    });
    let (status, _) = server.get("/ws/v1/cluster/metrics");
    assert_eq!(status, 200);
}

#[test]
fn the_reproductions_are_refused_and_the_host_keeps_working() {
    let server = Server::start(&[
        SIM_NODES[0],
        SIM_NODES[1],
        // The multiplicator step overflowed ten seconds after a huge count.
        "--set",
        "yarn.resourcemanager.quota.multiplicator.interval=100",
        "--set",
        "yarn.resourcemanager.quota.scheduling.period=200",
        "--set",
        "yarn.resourcemanager.quota.variable.price.enabled=true",
    ]);
    let max = u64::MAX;
    refused(
        &server,
        &app(json!([{"count": 1, "memory_mb": 1024, "vcores": 1, "duration_ms": max}])),
        400,
        &["asks[0].duration_ms", "2592000000"],
    );
    refused(
        &server,
        &app(
            json!([{"count": 4294967295u64, "memory_mb": 1024, "vcores": 1, "duration_ms": 1000}]),
        ),
        400,
        &["asks[0].count", "100000"],
    );
    refused(
        &server,
        &app(json!([
            {"count": 1, "memory_mb": 1u64 << 63, "vcores": 1, "duration_ms": 1000},
            {"count": 1, "memory_mb": 1u64 << 63, "vcores": 1, "duration_ms": 1000}
        ])),
        400,
        &["asks[0].memory_mb", "1073741824"],
    );
    refused(
        &server,
        &app(json!([{"count": 1, "memory_mb": 1024, "vcores": 1, "duration_ms": -1}])),
        400,
        &["duration_ms"],
    );
    let many: Vec<Value> = (0..101)
        .map(|_| json!({"count": 1, "memory_mb": 1, "vcores": 1, "duration_ms": 1}))
        .collect();
    refused(&server, &app(json!(many)), 400, &["asks", "at most 100"]);
    let mut long_name = app(json!([{"count": 1, "memory_mb": 1, "vcores": 1, "duration_ms": 1}]));
    long_name["user"] = json!("u".repeat(300));
    refused(&server, &long_name, 400, &["user", "256"]);
    for _ in 0..2 {
        let (status, body) = server.post_json(
            "/ws/v1/cluster/nodes/register",
            &json!({"node_id": format!("huge-{}", 1u64 << 63), "memory_mb": 1u64 << 63, "vcores": 4}),
        );
        assert_eq!(status, 400, "{body}");
        assert!(body.to_string().contains("memory_mb"), "{body}");
    }

    // The largest demand the bounds allow: sums saturate rather than wrap,
    // in the multiplicator step, the scheduler view and the metrics.
    let largest: Vec<Value> = (0..100)
        .map(|_| json!({"count": 100_000, "memory_mb": 1u64 << 30, "vcores": 4096, "gpus": 1024, "duration_ms": 2_592_000_000u64}))
        .collect();
    for _ in 0..2 {
        let (status, body) = server.post_json("/ws/v1/cluster/apps", &app(json!(largest)));
        assert_eq!(status, 202, "{body}");
    }
    let (status, scheduler) = server.get("/ws/v1/cluster/scheduler");
    assert_eq!(status, 200, "{scheduler}");
    let pending = &scheduler["scheduler"]["schedulerInfo"]["pendingResources"];
    assert_eq!(pending["vCores"], json!(u32::MAX), "saturated: {pending}");
    let (status, metrics) = server.get("/ws/v1/cluster/metrics");
    assert_eq!(status, 200, "{metrics}");
    // Let several multiplicator steps and QUOTA_COMPUTEs see that demand.
    std::thread::sleep(std::time::Duration::from_millis(600));
    let (status, prices) = server.get("/ws/v1/quota/prices");
    assert_eq!(status, 200, "{prices}");
    still_schedules_and_charges(&server, "after-hostile-input");
    server.stop();
}

#[test]
fn bodies_are_bounded_per_route() {
    let server = Server::start(&[]);
    let big = vec![b' '; 2 << 20];
    let (status, body) = server.request(
        "POST",
        "/ws/v1/cluster/apps",
        &[("content-type", "application/json")],
        Some(&big),
    );
    assert_eq!(status, 413, "{body}");
    assert!(
        body["RemoteException"]["message"]
            .as_str()
            .unwrap()
            .contains("limited per route"),
        "{body}"
    );
    // A policy upload may be larger than a submission: 2 MB of nonsense is
    // read, then refused as no component (400, not 413).
    let (status, body) = server.request("PUT", "/ws/v1/policies/pricing", &[], Some(&big));
    assert_eq!(status, 400, "{body}");
    let (status, body) = server.request(
        "POST",
        "/ws/v1/cluster/apps",
        &[("content-type", "application/json")],
        Some(b"{\"asks\": [1e400]}"),
    );
    assert_eq!(status, 400, "{body}");
    let (status, body) = server.get("/ws/v1/no/such/thing");
    assert_eq!(status, 404, "{body}");
    server.stop();
}

#[test]
fn app_and_node_listings_filter_and_page_as_yarn() {
    let server = Server::start(&SIM_NODES);
    let ids: Vec<String> = (0..5).map(|_| server.submit("p", 1, 300)).collect();
    for id in &ids {
        server.wait_for(
            &format!("/ws/v1/cluster/apps/{id}"),
            "the app to finish",
            |body| body["app"]["state"] == "FINISHED",
        );
    }
    let (status, body) = server.post_json(
        "/ws/v1/cluster/apps",
        &app(json!([{"count": 1, "memory_mb": 1024, "vcores": 1, "duration_ms": 60000}])),
    );
    assert_eq!(status, 202, "{body}");
    let long = body["app"]["id"].as_str().unwrap().to_string();
    let listed = |query: &str| -> Vec<String> {
        let (status, body) = server.get(&format!("/ws/v1/cluster/apps{query}"));
        assert_eq!(status, 200, "{query}: {body}");
        body["apps"]["app"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(listed("").len(), 6);
    assert_eq!(
        listed("?limit=2"),
        vec![ids[4].clone(), long.clone()],
        "the newest two"
    );
    assert_eq!(listed("?states=finished").len(), 5);
    assert_eq!(listed("?states=RUNNING,ACCEPTED"), vec![long.clone()]);
    assert_eq!(listed("?state=FAILED"), Vec::<String>::new());
    assert_eq!(listed("?user=alice&queue=default").len(), 6);
    assert_eq!(listed("?user=bob").len(), 0);
    assert_eq!(listed("?finishedTimeBegin=1").len(), 5);
    assert_eq!(
        listed("?finishedTimeEnd=0"),
        vec![long.clone()],
        "unfinished: time 0"
    );
    assert_eq!(listed("?startedTimeBegin=99999999999999").len(), 0);
    assert_eq!(
        listed("?user.name=alice").len(),
        6,
        "unknown parameters are ignored"
    );
    for bad in [
        "?states=BOGUS",
        "?limit=0",
        "?limit=10001",
        "?limit=-1",
        "?startedTimeBegin=5&startedTimeEnd=4",
        "?finishedTimeBegin=abc",
    ] {
        let (status, body) = server.get(&format!("/ws/v1/cluster/apps{bad}"));
        assert_eq!(status, 400, "{bad}: {body}");
    }
    let nodes = |query: &str| {
        let (status, body) = server.get(&format!("/ws/v1/cluster/nodes{query}"));
        (status, body["nodes"]["node"].as_array().map(Vec::len))
    };
    assert_eq!(nodes(""), (200, Some(4)));
    assert_eq!(nodes("?states=running"), (200, Some(4)));
    assert_eq!(nodes("?states=LOST,UNHEALTHY"), (200, Some(0)));
    assert_eq!(nodes("?states=SLEEPING").0, 400);
    server.stop();
}

#[test]
fn the_submitting_host_is_the_clients_address() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("weft.log");
    let server = Server::start_logging(&dir.path().join("data"), &SIM_NODES, Some(&log));
    let (status, body) = server.request(
        "POST",
        "/ws/v1/cluster/apps",
        &[("host", "evil.example:80"), ("x-forwarded-for", "10.6.6.6")],
        Some(
            app(json!([{"count": 1, "memory_mb": 1024, "vcores": 1, "duration_ms": 100}]))
                .to_string()
                .as_bytes(),
        ),
    );
    assert_eq!(status, 202, "{body}");
    server.stop();
    let log = std::fs::read_to_string(&log).unwrap();
    let line = log
        .lines()
        .find(|l| l.contains("application submitted and accepted"))
        .expect("the submission is logged");
    assert!(
        line.contains("submitter=127.0.0.1") || line.contains("submitter=\"127.0.0.1\""),
        "{line}"
    );
    assert!(
        !line.contains("evil") && !line.contains("10.6.6.6"),
        "{line}"
    );
}

#[test]
fn credits_of_a_bounded_run_are_exact() {
    // 2 containers × 10 s minimum runtime × 1 credit: bounds change nothing
    // for ordinary input.
    let server = Server::start(&SIM_NODES);
    let id = server.submit("exact", 2, 300);
    server.wait_for(
        &format!("/ws/v1/cluster/apps/{id}"),
        "the app to finish",
        |body| body["app"]["state"] == "FINISHED",
    );
    let (_, projects) = server.get("/ws/v1/quota/projects");
    assert_credits(&projects["exact"]["total_used"], 20.0, "exact's usage");
    server.stop();
}
