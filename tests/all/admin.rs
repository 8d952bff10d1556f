//! ACLs and refreshQueues through the real binary: who may submit where, who
//! may change policies and queues, and a live queue reload that refuses a bad
//! file and keeps running apps running.

use std::path::Path;

use serde_json::json;

use crate::support::{Server, weft};

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
}

fn queues_file(dir: &Path, a: u32, b: u32) -> String {
    let path = dir.join("queues.toml");
    write(
        &path,
        &format!(
            "[yarn.scheduler.capacity.root]\nqueues = \"a,b\"\n\n[yarn.scheduler.capacity.root.a]\ncapacity = {a}\n\n[yarn.scheduler.capacity.root.b]\ncapacity = {b}\n"
        ),
    );
    path.to_str().unwrap().to_string()
}

fn queue_capacity(server: &Server, name: &str) -> f64 {
    let (_, body) = server.get("/ws/v1/cluster/scheduler");
    body["scheduler"]["schedulerInfo"]["queues"]["queue"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["queueName"] == name)
        .map(|q| q["capacity"].as_f64().unwrap())
        .unwrap()
}

#[test]
fn acls_decide_who_submits_where_and_who_administers() {
    let dir = tempfile::tempdir().unwrap();
    let users = dir.path().join("users.toml");
    write(
        &users,
        "[users]\nroot-user = [\"admins\"]\nalice = [\"engineering\"]\n",
    );
    let queues = dir.path().join("queues.toml");
    write(
        &queues,
        "[yarn.scheduler.capacity.root]\nqueues = \"a,b\"\nacl_submit_applications = \" \"\nacl_administer_queue = \" admins\"\n\n\
         [yarn.scheduler.capacity.root.a]\ncapacity = 50\nacl_submit_applications = \"alice\"\nacl_administer_queue = \" \"\n\n\
         [yarn.scheduler.capacity.root.b]\ncapacity = 50\nacl_submit_applications = \" engineering\"\nacl_administer_queue = \" \"\n",
    );
    let server = Server::start(&[
        "--queues",
        queues.to_str().unwrap(),
        "--set",
        &format!("weft.security.users-file={}", users.display()),
        "--set",
        "yarn.admin.acl= admins",
    ]);
    let submit = |caller: Option<&str>, queue: &str, user: &str| {
        let app = json!({"queue": queue, "user": user, "project": "p", "asks": [{"count": 1, "memory_mb": 1024, "vcores": 1, "duration_ms": 100}]});
        let (status, body) = server.post_json_as("/ws/v1/cluster/apps", &app, caller);
        (status, body.to_string())
    };
    let cases = [
        (Some("alice"), "a", "alice", 202, ""),
        (Some("alice"), "b", "alice", 202, ""), // via the engineering group
        (Some("bob"), "a", "bob", 403, "may not submit to root.a"),
        (None, "a", "anonymous", 403, "may not submit to root.a"), // the default user
        (Some("alice"), "a", "bob", 403, "on behalf of bob"),
        (Some("root-user"), "a", "bob", 202, ""), // root's administer ACL, and an admin
    ];
    for (caller, queue, user, expected, says) in cases {
        let (status, body) = submit(caller, queue, user);
        assert_eq!(status, expected, "{caller:?} → {queue} as {user}: {body}");
        assert!(body.contains(says), "{caller:?} → {queue}: {body}");
    }
    let output = weft(&[
        "policy",
        "load",
        "pricing",
        "builtin:flat-pricing",
        "--server",
        &server.base,
        "--user",
        "alice",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success() && stderr.contains("403") && stderr.contains("yarn.admin.acl"),
        "{stderr}"
    );
    let output = weft(&[
        "policy",
        "load",
        "pricing",
        "builtin:flat-pricing",
        "--server",
        &server.base,
        "--user",
        "root-user",
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let output = weft(&[
        "admin",
        "refresh-queues",
        "--server",
        &server.base,
        "--user",
        "alice",
    ]);
    assert!(String::from_utf8_lossy(&output.stderr).contains("403"));
}

#[test]
fn refresh_queues_applies_a_good_file_and_refuses_a_bad_one() {
    let dir = tempfile::tempdir().unwrap();
    let file = queues_file(dir.path(), 50, 50);
    let server = Server::start(&["--queues", &file, "--sim-nodes", "2x4096mb,4vcores"]);
    let running = server.submit_to_for("a", 60_000);
    server.wait_for(
        &format!("/ws/v1/cluster/apps/{running}"),
        "the app to run",
        |b| b["app"]["state"] == "RUNNING",
    );

    queues_file(dir.path(), 70, 30);
    let output = weft(&["admin", "refresh-queues", "--server", &server.base]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(queue_capacity(&server, "a"), 70.0);

    // Bad: capacities sum to 90. Refused with the reason; nothing changes.
    queues_file(dir.path(), 60, 30);
    let (status, body) = server.post("/ws/v1/admin/refresh-queues");
    assert_eq!(status, 400, "{body}");
    assert!(
        body["RemoteException"]["message"]
            .as_str()
            .unwrap()
            .contains("sum to 90"),
        "{body}"
    );
    assert_eq!(queue_capacity(&server, "a"), 70.0);

    // Bad: queue a disappears while it has a running app.
    write(
        Path::new(&file),
        "[yarn.scheduler.capacity.root]\nqueues = \"b\"\n\n[yarn.scheduler.capacity.root.b]\ncapacity = 100\n",
    );
    let (status, body) = server.post("/ws/v1/admin/refresh-queues");
    assert_eq!(status, 400, "{body}");
    assert!(
        body["RemoteException"]["message"]
            .as_str()
            .unwrap()
            .contains("still has application"),
        "{body}"
    );

    let (_, app) = server.get(&format!("/ws/v1/cluster/apps/{running}"));
    assert_eq!(
        app["app"]["state"], "RUNNING",
        "the running app kept running"
    );
    assert_eq!(queue_capacity(&server, "a"), 70.0);
}

/// Only active apps follow a refresh of the queues: who may change an
/// ended one is found from its queue's name, and once that queue is gone,
/// from root's administrators.
#[test]
fn who_may_change_an_ended_app_follows_its_queue_by_name_across_refreshes() {
    let dir = tempfile::tempdir().unwrap();
    let users = dir.path().join("users.toml");
    write(&users, "[users]\nroot-user = [\"admins\"]\n");
    let queues = dir.path().join("queues.toml");
    let tree = |order: &str, a: bool| {
        let mut text = format!(
            "[yarn.scheduler.capacity.root]\nqueues = \"{order}\"\nacl_administer_queue = \" admins\"\n\n\
             [yarn.scheduler.capacity.root.b]\ncapacity = {}\nacl_administer_queue = \" \"\n",
            if a { 50 } else { 100 }
        );
        if a {
            text.push_str(
                "\n[yarn.scheduler.capacity.root.a]\ncapacity = 50\nacl_administer_queue = \"qadmin\"\n",
            );
        }
        write(&queues, &text);
    };
    tree("a,b", true);
    let server = Server::start(&[
        "--queues",
        queues.to_str().unwrap(),
        "--sim-nodes",
        "1x4096mb,4vcores",
        "--set",
        &format!("weft.security.users-file={}", users.display()),
        "--set",
        "yarn.admin.acl=clusteradmin",
    ]);
    let app = json!({"queue": "a", "user": "alice", "project": "p",
        "asks": [{"count": 1, "memory_mb": 1024, "vcores": 1, "duration_ms": 100}]});
    let (status, body) = server.post_json_as("/ws/v1/cluster/apps", &app, Some("alice"));
    assert_eq!(status, 202, "{body}");
    let id = body["app"]["id"].as_str().unwrap().to_string();
    server.wait_for(
        &format!("/ws/v1/cluster/apps/{id}"),
        "the app to end",
        |b| b["app"]["state"] == "FINISHED",
    );
    let status_for = |user: &str| {
        let (status, body) = server.request(
            "PUT",
            &format!("/ws/v1/cluster/apps/{id}/priority"),
            &[("X-Weft-User", user), ("Content-Type", "application/json")],
            Some(br#"{"priority": 1}"#),
        );
        assert!(status == 200 || status == 403, "{user}: {status} {body}");
        status
    };
    let refresh = || {
        let (status, body) = server.request(
            "POST",
            "/ws/v1/admin/refresh-queues",
            &[("X-Weft-User", "clusteradmin")],
            None,
        );
        assert_eq!(status, 200, "{body}");
    };
    let everyone = ["alice", "qadmin", "root-user", "clusteradmin", "mallory"];
    let answers = |expected: [u16; 5]| {
        let got = everyone.map(status_for);
        assert_eq!(got, expected, "{everyone:?}");
    };
    answers([200, 200, 200, 200, 403]);
    // a moves in the tree's order: its administrator still is one.
    tree("b,a", true);
    refresh();
    answers([200, 200, 200, 200, 403]);
    // a is gone: root's administrators remain.
    tree("b", false);
    refresh();
    answers([200, 403, 200, 200, 403]);
}

/// YARN's refreshNodes: `weft node refresh` and `POST
/// /ws/v1/admin/refresh-nodes` decommission the nodes the exclude file
/// lists and recommission those it drops; only administrators; a bad file
/// changes nothing.
#[test]
fn refresh_nodes_decommissions_what_the_exclude_file_lists_and_recommissions_what_it_drops() {
    let dir = tempfile::tempdir().unwrap();
    let exclude = dir.path().join("exclude");
    write(&exclude, "# for the upgrade\nsim-0001:8041\n");
    let setting = format!(
        "yarn.resourcemanager.nodes.exclude-path={}",
        exclude.display()
    );
    let server = Server::start(&[
        "--sim-nodes",
        "2x4096mb,4vcores",
        "--set",
        &setting,
        "--set",
        "yarn.admin.acl=ops",
    ]);
    let state = |id: &str| {
        server.get(&format!("/ws/v1/cluster/nodes/{id}")).1["node"]["state"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let refresh = |user: &str, query: &str| {
        server.request(
            "POST",
            &format!("/ws/v1/admin/refresh-nodes{query}"),
            &[("X-Weft-User", user)],
            None,
        )
    };
    // Read at the start, as YARN's resource manager reads it.
    assert_eq!(state("sim-0001:8041"), "DECOMMISSIONED");
    write(&exclude, "# for the upgrade\n");
    let (status, body) = refresh("ops", "");
    assert_eq!(status, 200, "{body}");
    assert_eq!(state("sim-0001:8041"), "RUNNING");
    write(&exclude, "# for the upgrade\nsim-0001:8041\n");
    let (status, body) = refresh("alice", "");
    assert_eq!(status, 403, "{body}");
    assert_eq!(state("sim-0001:8041"), "RUNNING");
    let (status, body) = refresh("ops", "?graceful=true&timeout=60");
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        json!({"decommissioned": ["sim-0001:8041"], "recommissioned": [],
            "unmatched": [], "unmatchedCount": 0})
    );
    assert_eq!(
        state("sim-0001:8041"),
        "DECOMMISSIONED",
        "nothing ran on it"
    );
    assert_eq!(state("sim-0002:8041"), "RUNNING");
    // A bad name in the file: refused, naming the line; nothing changes.
    write(&exclude, "sim-0002:8041\nbad\u{7}name\n");
    let (status, body) = refresh("ops", "");
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains("line 2"), "{body}");
    assert_eq!(state("sim-0002:8041"), "RUNNING");
    // A timeout without graceful is refused.
    let (status, _) = refresh("ops", "?timeout=5");
    assert_eq!(status, 400);
    // Dropped from the file: the CLI's refresh recommissions it, and
    // decommissions what the file names now.
    write(&exclude, "sim-0002:8041\n");
    let output = weft(&["node", "refresh", "--server", &server.base, "--user", "ops"]);
    assert!(output.status.success(), "{output:?}");
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(said.contains("decommissioned: sim-0002:8041"), "{said}");
    assert!(said.contains("recommissioned: sim-0001:8041"), "{said}");
    assert_eq!(state("sim-0001:8041"), "RUNNING");
    assert_eq!(state("sim-0002:8041"), "DECOMMISSIONED");

    // A node the file lists that registers after the refresh (YARN's
    // disallowed NodeManager): decommissioned as it registers.
    write(&exclude, "agent-1\n");
    let (status, body) = refresh("ops", "");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["unmatched"], json!(["agent-1"]), "{body}");
    let _agent = crate::support::start_agent(&server.base, dir.path(), "4096mb,2vcores");
    server.wait_for("/ws/v1/cluster/nodes/agent-1", "agent-1 to register", |b| {
        b["node"]["state"].is_string()
    });
    assert_eq!(state("agent-1"), "DECOMMISSIONED");
    assert_eq!(state("sim-0002:8041"), "RUNNING");
}
