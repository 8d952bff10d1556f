//! Queue placement and auto-created queues through the real binary: YARN's
//! `queue-mappings` sending each user to `root.users.<user>`, the leaf made
//! at the first submission from `root.users`'s templates, kept over a
//! restart, refused past `max-queues` or to a user the ACLs refuse (with
//! nothing left behind), and removed once idle for the expiration time.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{Server, weft_within};

/// The queues and mappings: root.users makes a leaf per user (at most
/// two), each at most 80 % of it, gone 2 s after its last app.
const SETTINGS: &[&str] = &[
    "--sim-nodes",
    "2x8192mb,8vcores",
    "--set",
    "yarn.scheduler.capacity.root.queues=default,users",
    "--set",
    "yarn.scheduler.capacity.root.default.capacity=50",
    "--set",
    "yarn.scheduler.capacity.root.users.capacity=50",
    "--set",
    "yarn.scheduler.capacity.root.acl_submit_applications= ",
    // Root's administer ACL is "*" unless closed (YARN's default).
    "--set",
    "yarn.scheduler.capacity.root.acl_administer_queue= ",
    "--set",
    "yarn.scheduler.capacity.root.users.acl_submit_applications=alice,bob,carol staff",
    "--set",
    "yarn.scheduler.capacity.root.default.acl_submit_applications=*",
    "--set",
    "yarn.scheduler.capacity.root.users.auto-queue-creation-v2.enabled=true",
    "--set",
    "yarn.scheduler.capacity.root.users.auto-queue-creation-v2.max-queues=2",
    "--set",
    "yarn.scheduler.capacity.root.users.auto-queue-creation-v2.template.maximum-capacity=80",
    "--set",
    "yarn.scheduler.capacity.auto-queue-creation-v2.queue-expiration-time=2",
    "--set",
    "yarn.scheduler.capacity.queue-mappings=u:mallory:root.users.mallory,u:%user:root.users.%user",
    "--set",
    "yarn.scheduler.configuration.store.class=leveldb",
];

fn start(data: &Path, users_setting: &str) -> Server {
    let mut args = SETTINGS.to_vec();
    args.extend(["--set", users_setting]);
    Server::start_in(data, &args)
}

/// Submits an app of `user` to `queue` (long-running): status and body.
fn submit(server: &Server, user: &str, queue: &str) -> (u16, Value) {
    server.post_json_as(
        "/ws/v1/cluster/apps",
        &json!({"queue": queue, "user": user, "project": "p",
                "asks": [{"count": 1, "memory_mb": 1024, "vcores": 1, "duration_ms": 600000}]}),
        Some(user),
    )
}

/// root.users's children in the scheduler view: (name, creationMethod).
fn users_children(server: &Server) -> (Value, Vec<(String, String)>) {
    let (status, body) = server.get("/ws/v1/cluster/scheduler");
    assert_eq!(status, 200, "{body}");
    let root = &body["scheduler"]["schedulerInfo"];
    let users = root["queues"]["queue"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["queueName"] == "users")
        .unwrap()
        .clone();
    let children = users["queues"]["queue"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|q| {
            (
                q["queueName"].as_str().unwrap().to_string(),
                q["creationMethod"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    (users, children)
}

#[test]
fn mappings_place_each_user_in_a_queue_made_for_them_kept_over_a_restart_and_gone_when_idle() {
    let dir = tempfile::tempdir().unwrap();
    let users = dir.path().join("users.toml");
    std::fs::write(
        &users,
        "[users]\nalice = [\"staff\"]\nbob = []\ncarol = []\n",
    )
    .unwrap();
    let users_setting = format!("weft.security.users-file={}", users.display());
    let data = dir.path().join("data");
    let server = start(&data, &users_setting);
    let (users_queue, children) = users_children(&server);
    assert_eq!(users_queue["autoCreationEligibility"], "flexible");
    assert!(children.is_empty(), "{users_queue}");

    // Naming default, alice is placed in root.users.alice, made for her.
    let (status, body) = submit(&server, "alice", "default");
    assert_eq!(status, 202, "{body}");
    let alice_app = body["app"]["id"].as_str().unwrap().to_string();
    let (_, app) = server.get(&format!("/ws/v1/cluster/apps/{alice_app}"));
    assert_eq!(app["app"]["queue"], "alice", "{app}");
    let (users_queue, children) = users_children(&server);
    assert_eq!(
        children,
        [("alice".to_string(), "dynamicFlexible".to_string())]
    );
    let alice = &users_queue["queues"]["queue"][0];
    assert_eq!(
        (alice["weight"].as_f64(), alice["maxCapacity"].as_f64()),
        (Some(1.0), Some(80.0))
    );

    // Mallory is mapped too, but root.users's ACL does not take her: the
    // submission is refused and her queue not left behind.
    let (status, body) = submit(&server, "mallory", "default");
    assert_eq!(status, 403, "{body}");
    assert_eq!(users_children(&server).1.len(), 1);
    // A name that is no queue name is refused, naming it.
    let (status, body) = submit(&server, "bob", "root.users.b%20b");
    assert_eq!(status, 400, "{body}");
    assert_eq!(users_children(&server).1.len(), 1);
    // Bob's queue is the second and last root.users may make.
    let (status, body) = submit(&server, "bob", "default");
    assert_eq!(status, 202, "{body}");
    let bob_app = body["app"]["id"].as_str().unwrap().to_string();
    let (status, body) = submit(&server, "carol", "default");
    assert_eq!(status, 400, "{body}");
    let message = body.to_string();
    assert!(
        message.contains("Max Child Queue limit exceeded"),
        "{message}"
    );
    assert_eq!(users_children(&server).1.len(), 2);

    // The API changes the configured queues, not those made for apps: a
    // static sibling comes and goes beside them, a made one is not found.
    let conf = |body: &str| {
        server.request(
            "PUT",
            "/ws/v1/cluster/scheduler-conf",
            &[
                ("x-weft-user", "alice"),
                ("content-type", "application/json"),
            ],
            Some(body.as_bytes()),
        )
    };
    let (status, body) = conf(
        r#"{"update-queue":{"queue-name":"root.users.bob","params":{"entry":{"key":"maximum-capacity","value":"60"}}}}"#,
    );
    assert_eq!(status, 400, "{body}");
    for change in [
        r#"{"add-queue":{"queue-name":"root.users.ops","params":{"entry":{"key":"capacity","value":"1w"}}}}"#,
        r#"{"update-queue":{"queue-name":"root.users.ops","params":{"entry":{"key":"state","value":"STOPPED"}}}}"#,
    ] {
        let (status, body) = conf(change);
        assert_eq!(status, 200, "{change}: {body}");
    }
    let names = |server: &Server| -> Vec<String> {
        users_children(server)
            .1
            .into_iter()
            .map(|(n, _)| n)
            .collect()
    };
    assert_eq!(names(&server), ["ops", "alice", "bob"]);
    let (status, body) = server.request(
        "POST",
        "/ws/v1/admin/refresh-queues",
        &[("x-weft-user", "alice")],
        None,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(names(&server), ["ops", "alice", "bob"]);
    let (status, body) = conf(r#"{"remove-queue":"root.users.ops"}"#);
    assert_eq!(status, 200, "{body}");
    assert_eq!(names(&server), ["alice", "bob"]);

    // Over a restart the queues are made again, and the apps in them run on.
    server.stop();
    let server = start(&data, &users_setting);
    let (_, children) = users_children(&server);
    let names: Vec<&str> = children.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["alice", "bob"]);
    for app in [&alice_app, &bob_app] {
        let (_, body) = server.get(&format!("/ws/v1/cluster/apps/{app}"));
        assert_eq!(body["app"]["state"], "RUNNING", "{body}");
    }

    // A configured queue elsewhere named as bob's, while his app runs: his
    // app would move into it by name, so the start stops, saying why.
    server.stop();
    let mut clash: Vec<&str> = vec![
        "serve",
        "--data-dir",
        data.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ];
    clash.extend_from_slice(SETTINGS);
    clash.extend([
        "--set",
        &users_setting,
        "--set",
        "yarn.scheduler.capacity.root.queues=default,users,teams",
        "--set",
        "yarn.scheduler.capacity.root.default.capacity=40",
        "--set",
        "yarn.scheduler.capacity.root.teams.capacity=10",
        "--set",
        "yarn.scheduler.capacity.root.teams.queues=bob",
        "--set",
        "yarn.scheduler.capacity.root.teams.bob.capacity=100",
    ]);
    let output = weft_within(&clash, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("root.teams.bob") && stderr.contains("auto-created queue root.users.bob"),
        "{stderr}"
    );
    let server = start(&data, &users_setting);

    // Alice's app killed: her queue goes once idle for 2 s; bob's stays.
    let (status, body) = server.request(
        "PUT",
        &format!("/ws/v1/cluster/apps/{alice_app}/state"),
        &[
            ("x-weft-user", "alice"),
            ("content-type", "application/json"),
        ],
        Some(br#"{"state": "KILLED"}"#),
    );
    assert_eq!(status, 200, "{body}");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, children) = users_children(&server);
        if children.len() == 1 {
            assert_eq!(children[0].0, "bob");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "alice's queue still there: {children:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // With room again, carol gets hers: an app naming no user is its
    // caller's (as YARN's clients and `weft app run` send it).
    let (status, body) = server.post_json_as(
        "/ws/v1/cluster/apps",
        &json!({"queue": "default", "project": "p",
                "asks": [{"count": 1, "memory_mb": 1024, "vcores": 1, "duration_ms": 600000}]}),
        Some("carol"),
    );
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["app"]["queue"], "carol", "{body}");
    server.stop();
}
