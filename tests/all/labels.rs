//! Node labels (YARN's partitions) through the real binary: labels added
//! and set on nodes over YARN's REST, an app with a label expression runs
//! only in its partition while a non-exclusive label lends its idle room,
//! the queue view shows each partition's use, a label in use is not
//! removed, bad expressions are refused by name, and all of it is kept
//! across a restart.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::support::{Server, weft_stdout};

/// ml may use gpu and spare (all of each); web no label at all, and its
/// one user may take the whole default partition.
const QUEUES: [&str; 16] = [
    "--set",
    "yarn.scheduler.capacity.root.queues=ml,web",
    "--set",
    "yarn.scheduler.capacity.root.ml.capacity=50",
    "--set",
    "yarn.scheduler.capacity.root.web.capacity=50",
    "--set",
    "yarn.scheduler.capacity.root.ml.accessible-node-labels=gpu,spare",
    "--set",
    "yarn.scheduler.capacity.root.ml.accessible-node-labels.gpu.capacity=100",
    "--set",
    "yarn.scheduler.capacity.root.ml.accessible-node-labels.spare.capacity=100",
    "--set",
    "yarn.scheduler.capacity.root.web.accessible-node-labels= ",
    "--set",
    "yarn.scheduler.capacity.root.web.user-limit-factor=2",
];

fn submit(server: &Server, queue: &str, label: Option<&str>, count: u32) -> (u16, Value) {
    let mut body = json!({"queue": queue, "project": "p", "asks": [
        {"count": count, "memory_mb": 1024, "vcores": 1, "duration_ms": 60_000}]});
    if let Some(label) = label {
        body["node_label_expression"] = json!(label);
    }
    server.post_json("/ws/v1/cluster/apps", &body)
}

fn nodes_of(server: &Server, app: &str) -> BTreeSet<String> {
    server.container_nodes(app).into_iter().collect()
}

/// The `partition` figures of queue `name` in the scheduler view.
fn partition_of(server: &Server, name: &str, partition: &str) -> (Value, Value) {
    let (_, body) = server.get("/ws/v1/cluster/scheduler");
    let queue = body["scheduler"]["schedulerInfo"]["queues"]["queue"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["queueName"] == name)
        .unwrap()
        .clone();
    let pick = |list: &Value| {
        list.as_array()
            .into_iter()
            .flatten()
            .find(|p| p["partitionName"] == partition)
            .cloned()
            .unwrap_or(Value::Null)
    };
    (
        pick(&queue["capacities"]["queueCapacitiesByPartition"]),
        pick(&queue["resources"]["resourceUsagesByPartition"]),
    )
}

#[test]
fn an_app_with_a_label_runs_only_in_its_partition_and_labels_outlive_a_restart() {
    let dir = crate::support::shared_tempdir();
    let data = dir.path().join("data");
    let mut args = vec!["--sim-nodes", "3x4096mb,4vcores"];
    args.extend(QUEUES);
    let server = Server::start_in(&data, &args);
    let (_, labels) = server.get("/ws/v1/cluster/get-node-labels");
    assert_eq!(labels["nodeLabelInfo"], json!([]), "{labels}");

    // A label the cluster lacks: 400 naming it, nothing accepted.
    let (status, body) = submit(&server, "ml", Some("gpu"), 1);
    assert_eq!(status, 400, "{body}");
    assert!(
        body.to_string().contains("no node label \\\"gpu\\\""),
        "{body}"
    );

    // YARN's bodies: with the root and exclusivity as text, or without.
    let (status, body) = server.post_json(
        "/ws/v1/cluster/add-node-labels",
        &json!({"nodeLabelsInfo": {"nodeLabelInfo": {"name": "gpu", "exclusivity": "true"}}}),
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) = server.post_json(
        "/ws/v1/cluster/add-node-labels",
        &json!({"nodeLabelInfo": [{"name": "spare", "exclusivity": false}]}),
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) =
        server.post("/ws/v1/cluster/nodes/sim-0002:8041/replace-labels?labels=gpu");
    assert_eq!(status, 200, "{body}");
    let (status, body) = server.post_json(
        "/ws/v1/cluster/replace-node-to-labels",
        &json!({"nodeToLabels": [{"nodeId": "sim-0003:8041", "nodeLabels": ["spare"]}]}),
    );
    assert_eq!(status, 200, "{body}");

    // Refusals, each naming what is wrong, none applied.
    for (status, body, says) in [
        (
            submit(&server, "web", Some("gpu"), 1),
            400,
            "queue root.web may not use node label \\\"gpu\\\"",
        ),
        (
            submit(&server, "ml", Some("gpu && spare"), 1),
            400,
            "node_label_expression",
        ),
        (
            submit(&server, "ml", Some("-x"), 1),
            400,
            "node_label_expression",
        ),
        (
            server.post("/ws/v1/cluster/nodes/sim-0001:8041/replace-labels?labels=tpu"),
            404,
            "no node label \\\"tpu\\\"",
        ),
        (
            server
                .post("/ws/v1/cluster/nodes/sim-0001:8041/replace-labels?labels=gpu&labels=spare"),
            400,
            "at most one label",
        ),
        (
            server.post("/ws/v1/cluster/nodes/nowhere/replace-labels?labels=gpu"),
            404,
            "unknown node",
        ),
        (
            server.post_json(
                "/ws/v1/cluster/add-node-labels",
                &json!({"nodeLabelInfo": [{"name": "gpu", "exclusivity": false}]}),
            ),
            409,
            "exists already as exclusive",
        ),
        (
            server.post_json(
                "/ws/v1/cluster/add-node-labels",
                &json!({"nodeLabelInfo": [{"name": "a b"}]}),
            ),
            400,
            "nodeLabelInfo[0].name",
        ),
    ]
    .map(|((status, body), expected, says)| (status == expected, body, says))
    {
        assert!(status, "{says}: {body}");
        assert!(body.to_string().contains(says), "{says}: {body}");
    }
    let (_, node) = server.get("/ws/v1/cluster/nodes/sim-0001:8041");
    assert_eq!(node["node"]["nodeLabels"], json!([]), "{node}");

    // gpu asks run on the gpu node alone, however much is free elsewhere;
    // asks without a label run on the plain node and spare's idle room.
    let (status, body) = submit(&server, "ml", Some("gpu"), 6);
    assert_eq!(status, 202, "{body}");
    let gpu = body["app"]["id"].as_str().unwrap().to_string();
    let (status, body) = submit(&server, "web", None, 10);
    assert_eq!(status, 202, "{body}");
    let plain = body["app"]["id"].as_str().unwrap().to_string();
    server.wait_for(
        &format!("/ws/v1/cluster/apps/{plain}"),
        "web's eight",
        |b| b["app"]["runningContainers"] == 8,
    );
    server.wait_for(&format!("/ws/v1/cluster/apps/{gpu}"), "ml's four", |b| {
        b["app"]["runningContainers"] == 4
    });
    assert_eq!(
        nodes_of(&server, &gpu),
        BTreeSet::from(["sim-0002:8041".into()])
    );
    assert_eq!(
        nodes_of(&server, &plain),
        BTreeSet::from(["sim-0001:8041".into(), "sim-0003:8041".into()])
    );
    let (_, app) = server.get(&format!("/ws/v1/cluster/apps/{gpu}"));
    assert_eq!(app["app"]["appNodeLabelExpression"], "gpu", "{app}");

    // The queue view: ml holds all of gpu; web holds spare's lent room.
    let (capacity, usage) = partition_of(&server, "ml", "gpu");
    assert_eq!(capacity["absoluteCapacity"], 100.0, "{capacity}");
    assert_eq!(capacity["absoluteUsedCapacity"], 100.0, "{capacity}");
    assert_eq!(usage["used"]["memory"], 4096, "{usage}");
    assert_eq!(usage["pending"]["memory"], 2048, "{usage}");
    let (capacity, usage) = partition_of(&server, "web", "spare");
    assert!(capacity.is_null(), "web may not use spare: {capacity}");
    assert!(usage.is_null(), "{usage}");
    let (_, usage) = partition_of(&server, "web", "");
    assert_eq!(usage["used"]["memory"], 4096, "its own partition: {usage}");
    let table = weft_stdout(&["queue", "list", "--server", &server.base]);
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("  ml ") && l.contains(" gpu ")),
        "{table}"
    );
    // Where the gpu app waits, its reason says which partition.
    let (_, app) = server.get(&format!("/ws/v1/cluster/apps/{gpu}"));
    let reason = app["app"]["diagnostics"].to_string() + &app["app"].to_string();
    assert!(reason.contains("partition \\\"gpu\\\""), "{reason}");

    // A label in use is not removed: the refusal names its holders.
    let (status, body) = server.post("/ws/v1/cluster/remove-node-labels?labels=gpu");
    assert_eq!(status, 409, "{body}");
    let says = body.to_string();
    for holder in ["sim-0002:8041", "root.ml.accessible-node-labels", &gpu] {
        assert!(says.contains(holder), "{holder}: {says}");
    }
    let table = weft_stdout(&["label", "list", "--server", &server.base]);
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("gpu ") && l.contains("true")),
        "{table}"
    );
    let nodes = weft_stdout(&["node", "list", "--server", &server.base]);
    assert!(
        nodes
            .lines()
            .any(|l| l.starts_with("sim-0003:8041") && l.contains(" spare ")),
        "{nodes}"
    );

    // An agent may name only a label the cluster has.
    let (status, body) = server.post_json(
        "/ws/v1/cluster/nodes/register",
        &json!({"node_id": "agent-x", "memory_mb": 1024, "vcores": 1, "labels": ["tpu"]}),
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains("labels[0]"), "{body}");

    // Across a restart: the labels, what is set on nodes, the asks' partitions.
    server.stop();
    let server = Server::start_in(&data, &args);
    let (_, labels) = server.get("/ws/v1/cluster/get-node-labels");
    let names: Vec<&str> = labels["nodeLabelInfo"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["gpu", "spare"], "{labels}");
    let (_, node) = server.get("/ws/v1/cluster/nodes/sim-0002:8041/get-labels");
    assert_eq!(node["nodeLabelInfo"][0]["name"], "gpu", "{node}");
    let (_, app) = server.get(&format!("/ws/v1/cluster/apps/{gpu}"));
    assert_eq!(app["app"]["appNodeLabelExpression"], "gpu", "{app}");
}
