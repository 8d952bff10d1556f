//! Queue configuration through the real binary: YARN property names in TOML,
//! a Hadoop capacity-scheduler.xml imported unchanged, and bad
//! configurations refused with the property named.

use serde_json::json;

use crate::support::{Server, weft};

const SEED_001: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../examples/seed-001-queues.toml"
);
const SLS_XML: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../shared/data/sls/capacity-scheduler.xml"
);

fn queue<'a>(info: &'a serde_json::Value, path: &[&str]) -> &'a serde_json::Value {
    let mut node = info;
    for name in path {
        node = node["queues"]["queue"]
            .as_array()
            .unwrap()
            .iter()
            .find(|q| q["queueName"] == *name)
            .unwrap();
    }
    node
}

#[test]
fn the_seed_001_tree_serves_and_reports_its_capacities() {
    let server = Server::start(&["--queues", SEED_001, "--sim-nodes", "10x10240mb,10vcores"]);
    let (status, body) = server.get("/ws/v1/cluster/scheduler");
    assert_eq!(status, 200, "{body}");
    let root = &body["scheduler"]["schedulerInfo"];
    assert_eq!(root["type"], "capacityScheduler");
    let development = queue(root, &["engineering", "development"]);
    assert_eq!(
        development["absoluteCapacity"]
            .as_f64()
            .map(|c| (c * 1e6).round() / 1e6),
        Some(12.0)
    );
    assert_eq!(
        development["absoluteMaxCapacity"]
            .as_f64()
            .map(|c| (c * 1e6).round() / 1e6),
        Some(24.0)
    );
    server.submit_to("development", "sid");
    let (_, body) = server.get("/ws/v1/cluster/scheduler");
    let development = queue(
        &body["scheduler"]["schedulerInfo"],
        &["engineering", "development"],
    );
    assert_eq!(
        development["users"]["user"][0]["username"], "sid",
        "{development}"
    );
    // An ask no node can hold is refused at submission, naming the limit
    // (YARN's maximum-allocation, by default the largest node's).
    let (status, body) = server.post_json(
        "/ws/v1/cluster/apps",
        &json!({"user": "u", "project": "p", "queue": "qa", "asks": [{"count": 1, "memory_mb": 20480, "vcores": 1, "duration_ms": 1000}]}),
    );
    assert_eq!(status, 400, "{body}");
    let message = body["RemoteException"]["message"].as_str().unwrap();
    assert!(
        message.contains("20480 MB of memory per container, more than yarn.scheduler.maximum-allocation-mb allows"),
        "{message}"
    );
    let (status, refused) = server.post_json(
        "/ws/v1/cluster/apps",
        &json!({"user": "u", "project": "p", "queue": "default", "asks": [{"count": 1, "memory_mb": 1024, "vcores": 1, "duration_ms": 1000}]}),
    );
    assert_eq!(status, 400);
    let message = refused["RemoteException"]["message"].as_str().unwrap();
    assert!(
        message.contains("development, qa, support, marketing"),
        "{message}"
    );
}

#[test]
fn a_hadoop_capacity_scheduler_xml_imports_unchanged() {
    let server = Server::start(&["--queues", SLS_XML]);
    let (_, body) = server.get("/ws/v1/cluster/scheduler");
    let root = &body["scheduler"]["schedulerInfo"];
    let names: Vec<&str> = root["queues"]["queue"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["queueName"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["sls_queue_1", "sls_queue_2", "sls_queue_3"]);
    // --set overrides a queue property of the imported file.
    let server = Server::start(&[
        "--queues",
        SLS_XML,
        "--set",
        "yarn.scheduler.capacity.root.sls_queue_3.maximum-capacity=60",
    ]);
    let (_, body) = server.get("/ws/v1/cluster/scheduler");
    assert_eq!(
        queue(&body["scheduler"]["schedulerInfo"], &["sls_queue_3"])["maxCapacity"],
        60.0
    );
}

#[test]
fn bad_queue_configurations_are_refused_naming_the_property() {
    let cases: [(&[&str], &str); 4] = [
        (
            &[
                "--queues",
                SEED_001,
                "--set",
                "yarn.scheduler.capacity.root.support.capacity=20",
            ],
            "sum to 110",
        ),
        (
            &[
                "--queues",
                SEED_001,
                "--set",
                "yarn.scheduler.capacity.root.support.colour=red",
            ],
            "yarn.scheduler.capacity.root.support.colour",
        ),
        (
            &[
                "--set",
                "yarn.scheduler.capacity.root.default.maximum-capacity=50",
                "--set",
                "yarn.scheduler.capacity.root.default.capacity=60",
            ],
            "below the queue's capacity",
        ),
        (
            &[
                "--set",
                "yarn.scheduler.capacity.root.default.disable_preemption=maybe",
            ],
            "yarn.scheduler.capacity.root.default.disable_preemption: \"maybe\" must be true or false",
        ),
    ];
    for (args, says) in cases {
        let mut all = vec!["serve", "--listen", "127.0.0.1:0"];
        all.extend_from_slice(args);
        let output = weft(&all);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?} was accepted");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

/// YARN's `PUT …/apps/{id}/queue` and `weft app move`: the app's user moves
/// it to a queue they may submit to, where it then counts (and stays after
/// a restart); others, unknown or closed queues and bad bodies are refused
/// with nothing changed; an ended app is not moved.
#[test]
fn an_app_moves_to_another_queue_for_its_user_and_stays_there_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let settings = [
        "--sim-nodes",
        "2x8192mb,8vcores",
        "--set",
        "yarn.scheduler.capacity.root.queues=default,b,closed,stopped",
        "--set",
        "yarn.scheduler.capacity.root.default.capacity=40",
        "--set",
        "yarn.scheduler.capacity.root.b.capacity=40",
        "--set",
        "yarn.scheduler.capacity.root.closed.capacity=10",
        "--set",
        "yarn.scheduler.capacity.root.stopped.capacity=10",
        "--set",
        "yarn.scheduler.capacity.root.stopped.state=STOPPED",
        "--set",
        "yarn.scheduler.capacity.root.acl_submit_applications= ",
        "--set",
        "yarn.scheduler.capacity.root.acl_administer_queue= ",
        "--set",
        "yarn.scheduler.capacity.root.default.acl_submit_applications=*",
        "--set",
        "yarn.scheduler.capacity.root.b.acl_submit_applications=*",
        "--set",
        "yarn.scheduler.capacity.root.stopped.acl_submit_applications=*",
        "--set",
        "yarn.admin.acl= admins",
    ];
    let server = Server::start_in(dir.path(), &settings);
    let body = json!({"queue": "default", "user": "alice", "project": "p",
        "asks": [{"count": 1, "memory_mb": 1024, "vcores": 1, "duration_ms": 3_600_000}]});
    let (status, answer) = server.post_json_as("/ws/v1/cluster/apps", &body, Some("alice"));
    assert_eq!(status, 202, "{answer}");
    let id = answer["app"]["id"].as_str().unwrap().to_string();
    server.wait_for(
        &format!("/ws/v1/cluster/apps/{id}"),
        "the app to run",
        |b| b["app"]["runningContainers"] == 1,
    );
    let path = format!("/ws/v1/cluster/apps/{id}/queue");
    let put = |user: &str, body: &str| {
        server.request(
            "PUT",
            &path,
            &[("X-Weft-User", user), ("Content-Type", "application/json")],
            Some(body.as_bytes()),
        )
    };
    let queue_now = || server.get(&path).1["queue"].clone();
    for (user, body, status, says) in [
        ("bob", r#"{"queue": "b"}"#, 403, "may not move"),
        (
            "alice",
            r#"{"queue": "nowhere"}"#,
            400,
            "the leaf queues are",
        ),
        ("alice", r#"{"queue": "root"}"#, 400, "the leaf queues are"),
        (
            "alice",
            r#"{"queue": "closed"}"#,
            403,
            "may not submit to root.closed",
        ),
        ("alice", r#"{"queue": "stopped"}"#, 400, "STOPPED"),
        ("alice", r#"{"queue": 3}"#, 400, ""),
        ("alice", r#"{}"#, 400, ""),
        ("alice", r#"{"queue": "b", "priority": 1}"#, 400, ""),
        ("alice", r#"{"queue": "b"} {"queue": "b"}"#, 400, ""),
        ("alice", r#"{"queue": "a\u0000b"}"#, 400, "queue"),
    ] {
        let (got, answer) = put(user, body);
        assert_eq!(got, status, "{user} {body}: {answer}");
        assert!(answer.to_string().contains(says), "{body}: {answer}");
        assert_eq!(queue_now(), "default", "{body} changed nothing");
    }
    assert_eq!(
        put("alice", r#"{"queue": "root.b"}"#),
        (200, json!({"queue": "b"}))
    );
    let (_, listed) = server.get("/ws/v1/cluster/apps?queue=b");
    assert_eq!(listed["apps"]["app"][0]["id"], id.as_str(), "{listed}");
    let (_, scheduler) = server.get("/ws/v1/cluster/scheduler");
    let b = queue(&scheduler["scheduler"]["schedulerInfo"], &["b"]);
    assert_eq!(b["numApplications"], 1, "{b}");
    assert_eq!(
        b["resourcesUsed"]["vCores"], 1,
        "what it runs counts in b: {b}"
    );
    // The CLI moves it back and forth, as `yarn application -movetoqueue`.
    let output = weft(&[
        "app",
        "move",
        &id,
        "default",
        "--server",
        &server.base,
        "--user",
        "alice",
    ]);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        format!("{id}: in queue default")
    );
    let output = weft(&[
        "app",
        "move",
        &id,
        "b",
        "--server",
        &server.base,
        "--user",
        "bob",
    ]);
    assert!(!output.status.success(), "bob may not: {output:?}");
    assert_eq!(put("alice", r#"{"queue": "b"}"#).0, 200);
    server.stop();

    // Kept in the store: after a restart it is in b, and an ended app is
    // not moved.
    let server = Server::start_in(dir.path(), &settings);
    assert_eq!(server.get(&path).1["queue"], "b");
    let (status, _) = server.request(
        "PUT",
        &format!("/ws/v1/cluster/apps/{id}/state"),
        &[
            ("X-Weft-User", "alice"),
            ("Content-Type", "application/json"),
        ],
        Some(br#"{"state": "KILLED"}"#),
    );
    assert_eq!(status, 200);
    let (status, answer) = server.request(
        "PUT",
        &path,
        &[
            ("X-Weft-User", "alice"),
            ("Content-Type", "application/json"),
        ],
        Some(br#"{"queue": "default"}"#),
    );
    assert_eq!(status, 409, "{answer}");
    assert!(answer.to_string().contains("cannot be moved"), "{answer}");
    server.stop();
}
