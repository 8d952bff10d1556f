//! Placement constraints through the real binary (YARN's allocation tags
//! and placement-constraint form): anti-affinity puts each tagged
//! container on its own node and is never broken, whatever waits; the
//! `all/` namespace counts other apps' containers; bad constraints and tags
//! are refused by name.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::support::{Server, weft_stdout};

fn submit(server: &Server, tags: &[&str], constraint: &str, count: u32) -> (u16, Value) {
    server.post_json(
        "/ws/v1/cluster/apps",
        &json!({"project": "p", "asks": [{"count": count, "memory_mb": 512, "vcores": 1,
            "duration_ms": 60_000, "allocation_tags": tags, "placement_constraint": constraint}]}),
    )
}

fn id(answer: (u16, Value)) -> String {
    assert_eq!(answer.0, 202, "{}", answer.1);
    answer.1["app"]["id"].as_str().unwrap().to_string()
}

#[test]
fn anti_affinity_is_never_broken_and_says_why_it_waits() {
    // Three nodes of four vcores: room for twelve, but anti-affinity
    // allows one zk container a node.
    let server = Server::start(&["--sim-nodes", "3x8192mb,4vcores"]);
    for (tags, constraint, says) in [
        (vec!["zk"], "NOTIN,HOST,zk", "asks[0].placement_constraint"),
        (
            vec!["zk"],
            "CARDINALITY,NODE,zk,2,1",
            "asks[0].placement_constraint",
        ),
        (vec!["z k"], "NOTIN,NODE,zk", "asks[0].allocation_tags[0]"),
    ] {
        let (status, body) = submit(&server, &tags, constraint, 1);
        assert_eq!(status, 400, "{constraint}: {body}");
        assert!(body.to_string().contains(says), "{constraint}: {body}");
    }
    let zk = id(submit(&server, &["zk"], "notin,node,zk", 4));
    server.wait_for(&format!("/ws/v1/cluster/apps/{zk}"), "three zk", |b| {
        b["app"]["runningContainers"] == 3
    });
    // A few more rounds: still three, one a node; the fourth says why.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let nodes = server.container_nodes(&zk);
    assert_eq!(nodes.len(), 3, "{nodes:?}");
    assert_eq!(nodes.iter().collect::<BTreeSet<_>>().len(), 3, "{nodes:?}");
    let (_, app) = server.get(&format!("/ws/v1/cluster/apps/{zk}"));
    let reason = app["app"]["diagnostics"].as_str().unwrap_or_default();
    assert!(
        reason.contains("no node satisfies its placement constraint NOTIN,NODE,zk"),
        "{app}"
    );
    assert_eq!(
        app["app"]["asks"][0]["placement_constraint"],
        "NOTIN,NODE,zk"
    );

    // Another app's own zk tags count only its own containers...
    let other = id(submit(&server, &["zk"], "NOTIN,NODE,zk", 3));
    server.wait_for(&format!("/ws/v1/cluster/apps/{other}"), "three more", |b| {
        b["app"]["runningContainers"] == 3
    });
    // ...but all/zk counts everyone's: every node has one, so none starts.
    let shy = id(submit(&server, &["web"], "NOTIN,NODE,all/zk", 1));
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let (_, app) = server.get(&format!("/ws/v1/cluster/apps/{shy}"));
    assert_eq!(app["app"]["runningContainers"], 0, "{app}");
    // At most two web containers a node, over the CLI.
    let cli = weft_stdout(&[
        "app",
        "run",
        "--server",
        &server.base,
        "-n",
        "4",
        "--memory",
        "256mb",
        "--tag",
        "web",
        "--constraint",
        "CARDINALITY,NODE,web,0,1",
        "--",
        "sleep",
        "60",
    ]);
    let cli = cli.trim().to_string();
    server.wait_for(
        &format!("/ws/v1/cluster/apps/{cli}"),
        "the CLI's app placed",
        |b| {
            b["app"]["containersRun"].as_u64().unwrap_or(0) >= 4
                || b["app"]["finishedContainers"].as_u64().unwrap_or(0)
                    + b["app"]["runningContainers"].as_u64().unwrap_or(0)
                    >= 4
        },
    );
    let nodes = server.container_nodes(&cli);
    for node in nodes.iter().collect::<BTreeSet<_>>() {
        let on = nodes.iter().filter(|n| *n == node).count();
        assert!(on <= 2, "{nodes:?}");
    }
}
