//! Apps' lifetimes through the real binary (YARN's LIFETIME timeout): a
//! queue's maximum and default, a lifetime at submission and from `weft app
//! run --lifetime`, YARN's PUT …/timeout and `weft app lifetime`, an app
//! past its lifetime killed saying so and charged up to then, and the bad
//! inputs refused by name.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Server, start_agent, weft_within};

const LIMIT: Duration = Duration::from_secs(90);

/// The app's report.
fn app(server: &Server, id: &str) -> Value {
    let (status, body) = server.get(&format!("/ws/v1/cluster/apps/{id}"));
    assert_eq!(status, 200, "{body}");
    body["app"].clone()
}

/// Its LIFETIME timeout, as GET …/timeouts/LIFETIME answers it.
fn lifetime(server: &Server, id: &str) -> Value {
    let (status, body) = server.get(&format!("/ws/v1/cluster/apps/{id}/timeouts/LIFETIME"));
    assert_eq!(status, 200, "{body}");
    body["timeout"].clone()
}

/// An ISO 8601 time as YARN writes it, for `ms` since the epoch.
fn iso(ms: u64) -> String {
    chrono::DateTime::<chrono::Utc>::from_timestamp_millis(ms as i64)
        .unwrap()
        .format("%Y-%m-%dT%H:%M:%S%.3f%z")
        .to_string()
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// PUT …/timeout as `user`.
fn put_timeout(server: &Server, id: &str, user: &str, body: &Value) -> (u16, Value) {
    server.request(
        "PUT",
        &format!("/ws/v1/cluster/apps/{id}/timeout"),
        &[("x-weft-user", user), ("content-type", "application/json")],
        Some(body.to_string().as_bytes()),
    )
}

#[test]
fn an_app_past_its_lifetime_is_killed_says_why_and_is_charged_up_to_then() {
    // The queue's maximum cuts the 60 s asked for to 3 s.
    let dir = crate::support::shared_tempdir();
    let server = Server::start_in(
        &dir.path().join("data"),
        &[
            "--set",
            "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms=100",
            "--set",
            "yarn.scheduler.capacity.root.default.maximum-application-lifetime=3",
            "--set",
            "yarn.resourcemanager.quota.min.runtime=0",
        ],
    );
    let _agent = start_agent(&server.base, dir.path(), "2048mb,2vcores");
    server.wait_for("/ws/v1/cluster/nodes", "the agent", |b| {
        b["nodes"]["node"].as_array().is_some_and(|n| n.len() == 1)
    });
    let output = weft_within(
        &[
            "app",
            "run",
            "--server",
            &server.base,
            "--memory",
            "64mb",
            "-n",
            "2",
            "--lifetime",
            "60",
            "--wait",
            "--",
            "sleep",
            "60",
        ],
        LIMIT,
    );
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("exceeded the lifetime period"),
        "--wait says why: {stderr}"
    );
    let id = stdout.trim();
    let report = app(&server, id);
    assert_eq!(report["state"], "KILLED", "{report}");
    assert_eq!(
        report["diagnostics"],
        "Application is killed by ResourceManager as it has exceeded the lifetime period."
    );
    let (submitted, finished) = (
        report["submittedTime"].as_u64().unwrap(),
        report["finishedTime"].as_u64().unwrap(),
    );
    // Killed at the first round past the deadline (rounds every 100 ms).
    assert!(
        (3_000..3_000 + 2_000).contains(&(finished - submitted)),
        "{report}"
    );
    let timeout = &report["timeouts"]["timeout"][0];
    assert_eq!(timeout["type"], "LIFETIME");
    assert_eq!(timeout["expiryTime"], iso(submitted + 3_000), "{report}");
    assert_eq!(timeout["remainingTimeInSeconds"], 0);
    // Charged for its two containers up to its end, not for the 60 s they
    // would have run: 1 vcore each at the base price, the multiplicator at
    // most 2 on this small node.
    let credits = report["credits"].as_f64().unwrap();
    assert!(credits > 0.0 && credits <= 2.0 * 2.0 * 5.0, "{report}");
    // Its containers end, killed (YARN's -105), on the agent too.
    server.wait_for(
        &format!("/ws/v1/cluster/apps/{id}/containers"),
        "the containers' ends",
        |b| {
            b["containers"].as_array().is_some_and(|c| {
                c.len() == 2 && c.iter().all(|c| c["exitStatus"].as_i64() == Some(-105))
            })
        },
    );
    let (_, metrics) = server.get("/ws/v1/cluster/metrics");
    assert_eq!(metrics["clusterMetrics"]["allocatedMB"], 0, "{metrics}");
    server.stop();
}

#[test]
fn lifetimes_are_set_at_submission_changed_by_yarns_put_and_the_cli_and_refused_out_of_bounds() {
    let server = Server::start(&[
        "--sim-nodes",
        "2x8192mb,8vcores",
        "--set",
        "yarn.admin.acl=ops",
        "--set",
        "yarn.scheduler.capacity.root.acl_administer_queue= ",
        "--set",
        "yarn.scheduler.capacity.root.default.maximum-application-lifetime=3600",
        "--set",
        "yarn.scheduler.capacity.root.default.default-application-lifetime=600",
    ]);
    let submit = |extra: Value| {
        let mut body = json!({"user": "alice", "project": "timed",
            "asks": [{"count": 1, "memory_mb": 1024, "vcores": 1, "duration_ms": 3_600_000}]});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        server.post_json_as("/ws/v1/cluster/apps", &body, Some("alice"))
    };
    // Out of bounds at submission: refused by name, nothing accepted.
    for bad in [
        json!({"lifetime_s": 0}),
        json!({"lifetime_s": 315_360_001_u64}),
    ] {
        let (status, body) = submit(bad);
        assert_eq!(status, 400, "{body}");
        assert!(body.to_string().contains("lifetime_s"), "{body}");
    }
    let (status, body) = submit(json!({"lifetime_s": "soon"}));
    assert_eq!(status, 400, "{body}");
    let (_, metrics) = server.get("/ws/v1/cluster/metrics");
    assert_eq!(metrics["clusterMetrics"]["appsSubmitted"], 0, "{metrics}");

    // The queue's default, then an app's own cut to the maximum.
    let (status, body) = submit(json!({}));
    assert_eq!(status, 202, "{body}");
    let id = body["app"]["id"].as_str().unwrap().to_string();
    let submitted = body["app"]["submittedTime"].as_u64().unwrap();
    let timeout = lifetime(&server, &id);
    assert_eq!(timeout["expiryTime"], iso(submitted + 600_000), "{timeout}");
    let left = timeout["remainingTimeInSeconds"].as_i64().unwrap();
    assert!((590..=600).contains(&left), "{timeout}");
    let (_, body) = submit(json!({"lifetime_s": 86_400}));
    let capped = body["app"]["id"].as_str().unwrap().to_string();
    let capped_at = body["app"]["submittedTime"].as_u64().unwrap() + 3_600_000;
    assert_eq!(lifetime(&server, &capped)["expiryTime"], iso(capped_at));
    let (status, all) = server.get(&format!("/ws/v1/cluster/apps/{capped}/timeouts"));
    assert_eq!(status, 200);
    assert_eq!(all["timeouts"]["timeout"][0]["expiryTime"], iso(capped_at));

    // YARN's PUT: later than the maximum is cut to it; earlier is taken.
    let lifetime_at = |ms: u64| json!({"timeout": {"type": "LIFETIME", "expiryTime": iso(ms)}});
    let (status, body) = put_timeout(&server, &id, "alice", &lifetime_at(now_ms() + 7_200_000));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["timeout"]["expiryTime"], iso(submitted + 3_600_000));
    let soon = now_ms() + 120_000;
    let (status, body) = put_timeout(&server, &id, "alice", &lifetime_at(soon));
    assert_eq!(
        (status, &body["timeout"]["expiryTime"]),
        (200, &json!(iso(soon)))
    );
    // Refusals name what is wrong, and change nothing.
    let refused: [(&str, Value, u16, &str); 6] = [
        ("mallory", lifetime_at(now_ms() + 60_000), 403, "may not"),
        (
            "alice",
            lifetime_at(now_ms() - 1_000),
            400,
            "not in the future",
        ),
        (
            "alice",
            json!({"timeout": {"type": "LIFETIME", "expiryTime": "tomorrow"}}),
            400,
            "timeout.expiryTime",
        ),
        (
            "alice",
            json!({"timeout": {"type": "DEADLINE", "expiryTime": iso(soon)}}),
            400,
            "LIFETIME",
        ),
        (
            "alice",
            json!({"timeout": {"type": "LIFETIME"}}),
            400,
            "missing",
        ),
        ("alice", json!({"lifetime": 5}), 400, "timeout"),
    ];
    for (user, body, expected, says) in refused {
        let (status, answer) = put_timeout(&server, &id, user, &body);
        assert_eq!(status, expected, "{body} → {answer}");
        assert!(answer.to_string().contains(says), "{body} → {answer}");
    }
    assert_eq!(lifetime(&server, &id)["expiryTime"], iso(soon));
    let (status, _) = put_timeout(&server, "application_1_9999", "alice", &lifetime_at(soon));
    assert_eq!(status, 404);

    // `weft app lifetime`: 1 s from now, then the app is killed saying why;
    // `weft app status` shows the lifetime.
    let cli = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend_from_slice(&["--server", &server.base, "--user", "alice"]);
        let output = weft_within(&all, LIMIT);
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        stdout
    };
    let status = cli(&["app", "status", &capped]);
    assert!(
        status.contains(&format!("lifetime: ends {}", iso(capped_at))),
        "{status}"
    );
    let said = cli(&["app", "lifetime", &id, "1"]);
    assert!(said.contains("its lifetime now ends at"), "{said}");
    let killed = server.wait_for(&format!("/ws/v1/cluster/apps/{id}"), "the kill", |b| {
        b["app"]["state"] == "KILLED"
    });
    assert!(
        killed["app"]["diagnostics"]
            .as_str()
            .unwrap()
            .contains("exceeded the lifetime period"),
        "{killed}"
    );
    // An app that has ended keeps its lifetime, as in YARN.
    let ended = lifetime(&server, &id);
    let (status, body) = put_timeout(&server, &id, "alice", &lifetime_at(now_ms() + 60_000));
    assert_eq!((status, &body["timeout"]), (200, &ended), "{body}");
    // Someone else may not, ended or not.
    let (status, body) = put_timeout(&server, &id, "mallory", &lifetime_at(now_ms() + 60_000));
    assert_eq!(status, 403, "{body}");
    server.stop();
}
