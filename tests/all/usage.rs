//! Decayed usage through the real binary: what each user and queue held,
//! fading with `weft.scheduler.usage.half-life-ms`, in GET
//! /ws/v1/cluster/usage and `weft queue usage`, and kept across a restart.

use serde_json::{Value, json};

use crate::support::{Server, weft_stdout};

fn usage(server: &Server) -> Value {
    let (status, body) = server.get("/ws/v1/cluster/usage");
    assert_eq!(status, 200, "{body}");
    body["usage"].clone()
}

fn vcore_seconds(list: &Value, key: &str, name: &str) -> f64 {
    list.as_array()
        .unwrap()
        .iter()
        .find(|e| e[key] == name)
        .unwrap_or_else(|| panic!("no {name} in {list}"))["vcoreSeconds"]
        .as_f64()
        .unwrap()
}

#[test]
fn users_and_queues_use_fades_is_shown_and_survives_a_restart() {
    let dir = crate::support::shared_tempdir();
    let data = dir.path().join("data");
    let settings = [
        "--sim-nodes",
        "1x8192mb,8vcores",
        "--set",
        "weft.scheduler.usage.half-life-ms=3600000",
        "--set",
        "yarn.resourcemanager.quota.scheduling.period=200",
    ];
    let server = Server::start_in(&data, &settings);
    let run = |user: &str, count: u32, vcores: u32, duration_ms: u64| {
        let (status, body) = server.post_json_as(
            "/ws/v1/cluster/apps",
            &json!({"user": user, "project": "p", "asks": [{"count": count,
                "memory_mb": 1024, "vcores": vcores, "duration_ms": duration_ms}]}),
            Some(user),
        );
        assert_eq!(status, 202, "{body}");
        body["app"]["id"].as_str().unwrap().to_string()
    };
    let apps = [run("alice", 2, 1, 1_000), run("bob", 1, 2, 2_000)];
    for id in &apps {
        server.wait_for(&format!("/ws/v1/cluster/apps/{id}"), "its end", |b| {
            b["app"]["state"] == "FINISHED"
        });
    }
    let now = usage(&server);
    assert_eq!(now["halfLifeMs"], 3_600_000);
    // alice: 2 vcores for 1 s; bob: 2 vcores for 2 s (each ended at the
    // first round past its duration), faded by seconds of an hour.
    let (alice, bob) = (
        vcore_seconds(&now["users"], "user", "alice"),
        vcore_seconds(&now["users"], "user", "bob"),
    );
    assert!((1.9..2.6).contains(&alice), "{now}");
    assert!((3.9..4.6).contains(&bob), "{now}");
    assert_eq!(now["users"][0]["user"], "bob", "the most use first: {now}");
    assert_eq!(now["usersTotal"], 2);
    let default = vcore_seconds(&now["queues"], "queue", "root.default");
    let root = vcore_seconds(&now["queues"], "queue", "root");
    assert!((default - (alice + bob)).abs() < 0.01, "{now}");
    assert!(
        (root - default).abs() < 1e-9,
        "a parent's is its children's: {now}"
    );

    let table = weft_stdout(&["queue", "usage", "--server", &server.base]);
    assert!(
        table.lines().any(|l| l.starts_with("root.default")),
        "{table}"
    );
    assert!(table.lines().any(|l| l.starts_with("bob")), "{table}");
    let (status, body) = server.get("/ws/v1/cluster/usage?limit=0");
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains("limit"), "{body}");

    // Stored at the stop (and every minute it changes): back after a
    // restart, a little faded.
    std::thread::sleep(std::time::Duration::from_millis(500));
    server.stop();
    let server = Server::start_in(&data, &settings);
    let after = usage(&server);
    let alice_after = vcore_seconds(&after["users"], "user", "alice");
    assert!(
        alice_after <= alice && alice_after > alice * 0.99,
        "{alice} before, {after} after"
    );
    server.stop();
}
