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
    let cases: [(&[&str], &str); 3] = [
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
