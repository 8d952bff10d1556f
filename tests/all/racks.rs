//! Nodes' racks and attributes through the real binary (YARN's network
//! location and node attributes): `weft agent --rack --attribute`, the node
//! report and `weft node list`, and bad ones refused by name with nothing
//! registered.

use std::process::Stdio;
use std::time::Duration;

use serde_json::json;

use crate::support::{Server, Stoppable, weft_command, weft_stdout, weft_within};

#[test]
fn an_agents_rack_and_attributes_are_reported_and_bad_ones_refused_by_name() {
    let dir = crate::support::shared_tempdir();
    let server = Server::start_in(&dir.path().join("data"), &[]);
    let child = weft_command()
        .args(["agent", "--server", &server.base, "--node-id", "rack-1"])
        .args(["--resources", "2048mb,2vcores", "--rack", "/dc1/rack7"])
        .args([
            "--attribute",
            "gpu-model=a100",
            "--attribute",
            "nm.yarn.io/os=linux",
        ])
        .arg("--work-dir")
        .arg(dir.path().join("work"))
        .arg("--log-dir")
        .arg(dir.path().join("logs"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("weft agent starts");
    let agent = Stoppable(child);
    let nodes = server.wait_for("/ws/v1/cluster/nodes", "the agent", |b| {
        b["nodes"]["node"].as_array().is_some_and(|n| n.len() == 1)
    });
    let node = &nodes["nodes"]["node"][0];
    assert_eq!(node["rack"], "/dc1/rack7", "{node}");
    assert_eq!(
        node["nodeAttributesInfo"]["nodeAttributeInfo"],
        json!([
            {"prefix": "nm.yarn.io", "name": "gpu-model", "type": "STRING", "value": "a100"},
            {"prefix": "nm.yarn.io", "name": "os", "type": "STRING", "value": "linux"},
        ]),
        "{node}"
    );
    let table = weft_stdout(&["node", "list", "--server", &server.base]);
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("rack-1") && l.contains("/dc1/rack7")),
        "{table}"
    );
    drop(agent);

    // Registrations that break the rules: 400 naming the field, and no node.
    let register = |extra: serde_json::Value| {
        let mut body = json!({"node_id": "bad-1", "memory_mb": 1024, "vcores": 1});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        server.post_json("/ws/v1/cluster/nodes/register", &body)
    };
    let too_many: serde_json::Map<String, serde_json::Value> =
        (0..65).map(|i| (format!("k{i}"), json!("v"))).collect();
    for (extra, says) in [
        (json!({"rack": "rack7"}), "rack"),
        (json!({"rack": "/dc1//rack7"}), "rack"),
        (json!({"rack": format!("/{}", "r/".repeat(9))}), "rack"),
        (json!({"rack": "/dc 1"}), "rack"),
        (
            json!({"attributes": {"gpu model": "a100"}}),
            "attributes.gpu model",
        ),
        (json!({"attributes": {"gpu": "-a100"}}), "attributes.gpu"),
        (json!({"attributes": {"a/b/c": "x"}}), "attributes.a/b/c"),
        (
            json!({"attributes": {"rm.yarn.io/os": "x"}}),
            "prefix nm.yarn.io",
        ),
        (
            json!({"attributes": {"os": "a", "nm.yarn.io/os": "b"}}),
            "given already",
        ),
        (
            json!({"attributes": {"k": "v".repeat(256)}}),
            "attributes.k",
        ),
        (json!({"attributes": too_many}), "attributes"),
        (json!({"attributes": {"k": 7}}), "attributes"),
    ] {
        let (status, body) = register(extra.clone());
        assert_eq!(status, 400, "{extra} → {body}");
        assert!(body.to_string().contains(says), "{extra} → {body}");
    }
    let (_, node) = server.get("/ws/v1/cluster/nodes/bad-1");
    assert!(
        node.to_string().contains("not found") || node["node"].is_null(),
        "{node}"
    );

    // The agent refuses a bad flag before it registers anything.
    let output = weft_within(
        &[
            "agent",
            "--server",
            &server.base,
            "--node-id",
            "bad-2",
            "--rack",
            "no-slash",
        ],
        Duration::from_secs(60),
    );
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--rack"), "{stderr}");
    server.stop();
}
