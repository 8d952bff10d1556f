//! YARN's mutable scheduler configuration through the real binary: queues
//! added, updated, stopped and removed with `weft queue conf` and
//! `PUT /ws/v1/cluster/scheduler-conf` (JSON and XML), who may, what is
//! refused with nothing changed, and the changes kept over a refresh of the
//! queue file, a restart, a format and `weft serve --format-conf-store`.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::{Server, weft, weft_within};

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
}

fn queues_file(path: &Path, a: u32, b: u32) {
    write(
        path,
        &format!(
            "[yarn.scheduler.capacity.root]\nqueues = \"a,b\"\nacl_submit_applications = \"*\"\nacl_administer_queue = \" admins\"\n\n\
             [yarn.scheduler.capacity.root.a]\ncapacity = {a}\n\n\
             [yarn.scheduler.capacity.root.b]\ncapacity = {b}\nacl_administer_queue = \"bob\"\n"
        ),
    );
}

/// In `dir`: the queue file (a and b at 50 %, bob administering b) and a
/// users file (root-user an administrator); its path, and the setting
/// naming the users file.
fn files(dir: &Path) -> (std::path::PathBuf, String) {
    let queues = dir.join("queues.toml");
    queues_file(&queues, 50, 50);
    let users = dir.join("users.toml");
    write(&users, "[users]\nroot-user = [\"admins\"]\nbob = []\n");
    let users_setting = format!("weft.security.users-file={}", users.display());
    (queues, users_setting)
}

/// Each leaf's capacity, by name.
fn capacities(server: &Server) -> Vec<(String, f64)> {
    let (_, body) = server.get("/ws/v1/cluster/scheduler");
    let mut out = Vec::new();
    fn walk(queue: &Value, out: &mut Vec<(String, f64)>) {
        for child in queue["queues"]["queue"].as_array().into_iter().flatten() {
            if child["queues"].is_null() {
                out.push((
                    child["queueName"].as_str().unwrap().to_string(),
                    child["capacity"].as_f64().unwrap(),
                ));
            } else {
                walk(child, out);
            }
        }
    }
    walk(&body["scheduler"]["schedulerInfo"], &mut out);
    out
}

fn leaves(server: &Server) -> Vec<String> {
    capacities(server)
        .into_iter()
        .map(|(name, _)| name)
        .collect()
}

/// The versionID, as an administrator reads it.
fn version(server: &Server) -> String {
    let (status, body) = server.get_as("/ws/v1/cluster/scheduler-conf/version", Some("root-user"));
    assert_eq!(status, 200, "{body}");
    body["versionID"].as_str().unwrap().to_string()
}

/// `weft queue conf ARGS… --server BASE --user USER`: (success, stdout, stderr).
fn conf(server: &Server, user: &str, args: &[&str]) -> (bool, String, String) {
    let mut all = vec!["queue", "conf", "--server", &server.base, "--user", user];
    all.extend(args);
    let output = weft(&all);
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).to_string(),
        String::from_utf8_lossy(&output.stderr).to_string(),
    )
}

fn put_as(server: &Server, user: &str, content_type: &str, body: &str) -> (u16, Value) {
    server.request(
        "PUT",
        "/ws/v1/cluster/scheduler-conf",
        &[("X-Weft-User", user), ("Content-Type", content_type)],
        Some(body.as_bytes()),
    )
}

fn message(body: &Value) -> String {
    body["RemoteException"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn queues_change_through_the_api_and_the_changes_outlive_a_refresh_and_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (queues, users_setting) = files(dir.path());
    let args = [
        "--queues",
        queues.to_str().unwrap(),
        "--sim-nodes",
        "2x4096mb,4vcores",
        "--set",
        &users_setting,
        "--set",
        "yarn.admin.acl= admins",
        "--set",
        "yarn.scheduler.configuration.store.class=leveldb",
    ];
    let server = Server::start_in(&data, &args);
    assert_eq!(version(&server), "1");
    // Only administrators read it, as in YARN (it holds the ACLs).
    for path in ["", "/version"] {
        let path = format!("/ws/v1/cluster/scheduler-conf{path}");
        let (status, body) = server.get_as(&path, Some("alice"));
        assert_eq!(status, 403, "{path}: {body}");
    }
    let (status, conf_shown) = server.get_as("/ws/v1/cluster/scheduler-conf", Some("root-user"));
    assert_eq!(status, 200, "{conf_shown}");
    assert!(
        conf_shown["property"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "yarn.scheduler.capacity.root.b.acl_administer_queue"),
        "{conf_shown}"
    );
    let (ok, _, stderr) = conf(
        &server,
        "alice",
        &["--validate", "--add", "root.c:capacity=20"],
    );
    assert!(!ok && stderr.contains("403"), "{stderr}");

    // Only administrators change it (the default policy).
    let (ok, _, stderr) = conf(&server, "alice", &["--add", "root.c:capacity=20"]);
    assert!(!ok && stderr.contains("403"), "{stderr}");
    let (ok, stdout, stderr) = conf(
        &server,
        "root-user",
        &[
            "--add",
            "root.c:capacity=20",
            "--update",
            "root.b:capacity=30",
        ],
    );
    assert!(ok, "{stderr}");
    assert!(stdout.contains("Configuration change successfully applied."));
    assert_eq!(
        capacities(&server),
        vec![
            ("a".to_string(), 50.0),
            ("b".to_string(), 30.0),
            ("c".to_string(), 20.0)
        ]
    );
    assert_eq!(version(&server), "2");
    let (status, body) = server.post_json_as(
        "/ws/v1/cluster/apps",
        &json!({"queue": "c", "user": "alice", "project": "p",
                "asks": [{"count": 1, "memory_mb": 1024, "vcores": 1, "duration_ms": 600_000}]}),
        Some("alice"),
    );
    assert_eq!(status, 202, "{body}");
    let app = body["app"]["id"].as_str().unwrap().to_string();
    server.wait_for(
        &format!("/ws/v1/cluster/apps/{app}"),
        "the app to run",
        |b| b["app"]["state"] == "RUNNING",
    );

    // A RUNNING queue is not removed; nothing changes on a refusal.
    let (ok, _, stderr) = conf(
        &server,
        "root-user",
        &["--remove", "root.c", "--update", "root.a:capacity=70"],
    );
    assert!(!ok && stderr.contains("is RUNNING"), "{stderr}");
    assert_eq!(version(&server), "2");

    // XML, as YARN's REST API takes it: stop c.
    let (status, body) = put_as(
        &server,
        "root-user",
        "application/xml",
        "<sched-conf><update-queue><queue-name>root.c</queue-name><params><entry><key>state</key><value>STOPPED</value></entry></params></update-queue></sched-conf>",
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, "Configuration change successfully applied.");
    // A stopped queue takes no new app.
    let (status, body) = server.post_json(
        "/ws/v1/cluster/apps",
        &json!({"queue": "c", "user": "u", "project": "p",
                "asks": [{"count": 1, "memory_mb": 1024, "vcores": 1, "duration_ms": 1000}]}),
    );
    assert_ne!(status, 202, "{body}");

    // A check of a removal applies nothing.
    let removal = json!({"remove-queue": "root.c",
        "update-queue": {"queue-name": "root.a", "params": {"entry": {"key": "capacity", "value": "70"}}}});
    let (status, body) = server.request(
        "POST",
        "/ws/v1/cluster/scheduler-conf/validate",
        &[
            ("X-Weft-User", "root-user"),
            ("Content-Type", "application/json"),
        ],
        Some(removal.to_string().as_bytes()),
    );
    assert_eq!(status, 200, "{body}");
    let names: Vec<&str> = body["property"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(!names.iter().any(|n| n.contains("root.c")), "{names:?}");
    assert!(leaves(&server).contains(&"c".to_string()));

    // Its app still in it, the cluster refuses the removal.
    let (status, body) = put_as(
        &server,
        "root-user",
        "application/json",
        &removal.to_string(),
    );
    assert_eq!(status, 400, "{body}");
    assert!(message(&body).contains("still has application"), "{body}");
    assert_eq!(version(&server), "3");

    // The changes stay on top of the file at a refresh: a file that no
    // longer fits them is refused, saying so.
    queues_file(&queues, 40, 60);
    let (status, body) = server.request(
        "POST",
        "/ws/v1/admin/refresh-queues",
        &[("X-Weft-User", "root-user")],
        None,
    );
    assert_eq!(status, 400, "{body}");
    assert!(
        message(&body).contains("changes made through the API"),
        "{body}"
    );
    queues_file(&queues, 50, 50);
    let (status, body) = server.request(
        "POST",
        "/ws/v1/admin/refresh-queues",
        &[("X-Weft-User", "root-user")],
        None,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(capacities(&server)[1], ("b".to_string(), 30.0));

    // ... and over a restart.
    server.stop();
    let server = Server::start_in(&data, &args);
    assert_eq!(version(&server), "3");
    assert_eq!(
        capacities(&server),
        vec![
            ("a".to_string(), 50.0),
            ("b".to_string(), 30.0),
            ("c".to_string(), 20.0)
        ]
    );
    let (_, body) = server.get(&format!("/ws/v1/cluster/apps/{app}"));
    assert_eq!(body["app"]["queue"], "c", "{body}");
    assert_eq!(body["app"]["state"], "RUNNING", "{body}");

    // The app gone, the stopped queue goes.
    let (status, body) = server.request(
        "PUT",
        &format!("/ws/v1/cluster/apps/{app}/state"),
        &[
            ("X-Weft-User", "root-user"),
            ("Content-Type", "application/json"),
        ],
        Some(br#"{"state":"KILLED"}"#),
    );
    assert!(status == 200 || status == 202, "{body}");
    server.wait_for(&format!("/ws/v1/cluster/apps/{app}"), "the kill", |b| {
        b["app"]["state"] == "KILLED"
    });
    let (status, body) = put_as(
        &server,
        "root-user",
        "application/json",
        &removal.to_string(),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        capacities(&server),
        vec![("a".to_string(), 70.0), ("b".to_string(), 30.0)]
    );
    assert_eq!(version(&server), "4");

    // Changes that no longer fit the file stop a start, saying how to go on.
    server.stop();
    queues_file(&queues, 75, 25);
    let mut text = std::fs::read_to_string(&queues).unwrap();
    text.push_str("maximum-capacity = 25\n");
    write(&queues, &text);
    let output = weft_within(
        &[
            &[
                "serve",
                "--data-dir",
                data.to_str().unwrap(),
                "--listen",
                "127.0.0.1:0",
            ][..],
            &args[..],
        ]
        .concat(),
        std::time::Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("--format-conf-store"), "{stderr}");
    let output = weft(
        &[
            &[
                "serve",
                "--data-dir",
                data.to_str().unwrap(),
                "--format-conf-store",
            ][..],
            &args[..],
        ]
        .concat(),
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let server = Server::start_in(&data, &args);
    assert_eq!(
        capacities(&server),
        vec![("a".to_string(), 75.0), ("b".to_string(), 25.0)]
    );
    // The version goes on from where it was, the format counting one.
    assert_eq!(version(&server), "5");

    // A format through the API: the file alone again.
    let (ok, _, stderr) = conf(
        &server,
        "root-user",
        &[
            "--update",
            "root.a:capacity=30",
            "--update",
            "root.b:capacity=70",
        ],
    );
    assert!(!ok, "one --update only: {stderr}");
    let (ok, _, stderr) = conf(
        &server,
        "root-user",
        &["--update", "root.a:capacity=80;root.b:capacity=20"],
    );
    assert!(ok, "{stderr}");
    assert_eq!(capacities(&server)[0], ("a".to_string(), 80.0));
    let (ok, _, stderr) = conf(&server, "alice", &["--format"]);
    assert!(!ok && stderr.contains("403"), "{stderr}");
    let (ok, stdout, stderr) = conf(&server, "root-user", &["--format"]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("successfully formatted"), "{stdout}");
    assert_eq!(capacities(&server)[0], ("a".to_string(), 75.0));
    assert_eq!(version(&server), "7");
}

#[test]
fn the_file_store_refuses_changes_and_queue_administrators_change_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let (queues, users_setting) = files(dir.path());
    let common = [
        "--queues",
        queues.to_str().unwrap(),
        "--sim-nodes",
        "1x4096mb,4vcores",
        "--set",
        &users_setting,
        "--set",
        "yarn.admin.acl= admins",
    ];

    // YARN's default: the file is the configuration.
    let server = Server::start(&common);
    let (status, body) = put_as(
        &server,
        "root-user",
        "application/json",
        r#"{"update-queue":{"queue-name":"root.a","params":{"entry":{"key":"maximum-capacity","value":"80"}}}}"#,
    );
    assert_eq!(status, 400, "{body}");
    assert!(message(&body).contains("store.class is file"), "{body}");
    let (status, _) = server.get_as("/ws/v1/cluster/scheduler-conf/version", Some("root-user"));
    assert_eq!(status, 400);
    server.stop();

    let server = Server::start(
        &[
            &common[..],
            &[
                "--set",
                "yarn.scheduler.configuration.store.class=memory",
                "--set",
                "yarn.scheduler.configuration.mutation.acl-policy.class=org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.conf.QueueAdminConfigurationMutationACLPolicy",
            ],
        ]
        .concat(),
    );
    // bob administers root.b: he may change it and add below it.
    let (ok, _, stderr) = conf(
        &server,
        "bob",
        &[
            "--update",
            "root.b:maximum-capacity=80",
            "--add",
            "root.b.x:capacity=100",
        ],
    );
    assert!(ok, "{stderr}");
    assert_eq!(leaves(&server), vec!["a".to_string(), "x".to_string()]);
    // Not root.a, not a global property, and not a part of that in a change of his.
    for args in [
        &["--update", "root.a:maximum-capacity=80"][..],
        &["--global", "yarn.scheduler.capacity.maximum-applications=5"],
        &[
            "--update",
            "root.b:maximum-capacity=90;root.a:maximum-capacity=90",
        ],
    ] {
        let (ok, _, stderr) = conf(&server, "bob", args);
        assert!(!ok && stderr.contains("403"), "{args:?}: {stderr}");
    }
    assert_eq!(version(&server), "2");

    // YARN's weight mode: each child its weight's share.
    let (ok, _, stderr) = conf(
        &server,
        "root-user",
        &["--update", "root.a:capacity=3w;root.b:capacity=1w"],
    );
    assert!(ok, "{stderr}");
    assert_eq!(
        capacities(&server),
        vec![("a".to_string(), 75.0), ("x".to_string(), 100.0)]
    );
    let (_, body) = server.get("/ws/v1/cluster/scheduler");
    let b = &body["scheduler"]["schedulerInfo"]["queues"]["queue"][1];
    assert_eq!(
        (b["capacity"].as_f64(), b["weight"].as_f64()),
        (Some(25.0), Some(1.0))
    );
    assert_eq!(version(&server), "3");

    // As Hadoop's web clients (`yarn schedulerconf`) call: an OPTIONS
    // probe, then the caller named by `user.name` (simple mode).
    let (status, _) = server.request(
        "OPTIONS",
        "/ws/v1/cluster/scheduler-conf?user.name=root-user",
        &[],
        None,
    );
    assert_eq!(status, 200);
    let maximum = r#"{"update-queue":{"queue-name":"root.a","params":{"entry":{"key":"maximum-capacity","value":"90"}}}}"#;
    for (user, expected) in [("mallory", 403), ("root-user", 200)] {
        let (status, body) = server.request(
            "PUT",
            &format!("/ws/v1/cluster/scheduler-conf?user.name={user}"),
            &[("Content-Type", "application/json")],
            Some(maximum.as_bytes()),
        );
        assert_eq!(status, expected, "{user}: {body}");
    }
    assert_eq!(version(&server), "4");
    // Format is a GET that changes things: not from another site's page.
    let (status, body) = server.request(
        "GET",
        "/ws/v1/cluster/scheduler-conf/format?user.name=root-user",
        &[("Sec-Fetch-Site", "cross-site")],
        None,
    );
    assert_eq!(status, 403, "{body}");

    // A queue's capacity is its parent's to give: by weight, bob's root.b
    // would take root.a's share.
    let (ok, _, stderr) = conf(&server, "bob", &["--update", "root.b:capacity=1000000w"]);
    assert!(!ok && stderr.contains("403"), "{stderr}");

    // A queue's own sharing policy is code: not a queue administrator's.
    let (ok, _, stderr) = conf(
        &server,
        "bob",
        &[
            "--update",
            "root.b:reservation-policy=builtin:no-overcommit",
        ],
    );
    assert!(!ok && stderr.contains("403"), "{stderr}");

    // Hostile bodies: refused, naming the field, nothing changed.
    for (content_type, body, says) in [
        ("application/json", "{}", "changes nothing"),
        ("application/json", "{\"add-queue\": 5}", "add-queue"),
        (
            "application/json",
            "{\"drop-queue\": \"root.a\"}",
            "drop-queue",
        ),
        (
            "application/json",
            "{\"remove-queue\": \"root\"}",
            "not a queue below root",
        ),
        (
            "application/xml",
            "<!DOCTYPE x [<!ENTITY a \"b\">]><sched-conf/>",
            "XML",
        ),
        (
            "application/json",
            "{\"global-updates\": {\"entry\": {\"key\": \"yarn.resourcemanager.address\", \"value\": \"x\"}}}",
            "not a queue property",
        ),
        (
            "application/json",
            "{\"update-queue\": {\"queue-name\": \"root.b\", \"params\": {\"entry\": {\"key\": \"capacity\", \"value\": \"-1\"}}}}",
            "capacity",
        ),
    ] {
        let (status, answer) = put_as(&server, "root-user", content_type, body);
        assert_eq!(status, 400, "{body}: {answer}");
        assert!(message(&answer).contains(says), "{body}: {answer}");
    }
    let many: Vec<Value> = (0..1001)
        .map(|i| json!({"key": format!("yarn.scheduler.capacity.root.a.k{i}")}))
        .collect();
    let (status, answer) = put_as(
        &server,
        "root-user",
        "application/json",
        &json!({"global-updates": {"entry": many}}).to_string(),
    );
    assert_eq!(status, 400, "{answer}");
    assert!(message(&answer).contains("at most 1000"), "{answer}");
    assert_eq!(version(&server), "4");
}
