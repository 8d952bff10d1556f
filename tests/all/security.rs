//! Authentication and authorization through the real binary: token mode
//! refuses requests without a valid token (401) and no header changes who
//! the caller is; rollback, node registration and heartbeats, and project
//! charging refuse callers without the right (403, with the reason); TLS;
//! and a node's containers, lost with it, are asked for again.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Server, weft};

/// Makes a token for `user` in `file` with the real command.
fn token(file: &Path, user: &str) -> String {
    let output = weft(&[
        "token",
        "create",
        user,
        "--tokens-file",
        file.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{output:?}");
    let token = String::from_utf8(output.stdout).unwrap().trim().to_string();
    assert!(token.starts_with("weft_"), "{token}");
    token
}

fn message(body: &Value) -> String {
    body["RemoteException"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// A request as the holder of `token`, with extra `headers`.
fn call(
    server: &Server,
    method: &str,
    path: &str,
    token: Option<&str>,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> (u16, Value) {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut all: Vec<(&str, &str)> = headers.to_vec();
    if let Some(bearer) = &bearer {
        all.push(("authorization", bearer));
    }
    all.push(("content-type", "application/json"));
    let bytes = body.map(|b| b.to_string().into_bytes());
    server.request(method, path, &all, bytes.as_deref())
}

fn small_app(user: &str, project: &str) -> Value {
    json!({"queue": "default", "user": user, "project": project,
           "asks": [{"count": 1, "memory_mb": 1024, "vcores": 1, "duration_ms": 200}]})
}

#[test]
fn token_mode_authenticates_every_request_and_authorizes_each_right() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.toml");
    let projects = dir.path().join("projects.toml");
    std::fs::write(
        &projects,
        "[projects]\ngenomics = [\"alice\", \"@bio\"]\nweb = [\"bob\"]\n",
    )
    .unwrap();
    let users = dir.path().join("users.toml");
    std::fs::write(&users, "[users]\ncarol = [\"bio\"]\n").unwrap();
    let (alice, bob, carol) = (
        token(&tokens, "alice"),
        token(&tokens, "bob"),
        token(&tokens, "carol"),
    );
    let (ops, nm, nm2) = (
        token(&tokens, "ops"),
        token(&tokens, "nm"),
        token(&tokens, "nm2"),
    );
    let set = |kv: String| ["--set".to_string(), kv];
    let args: Vec<String> = [
        set("weft.security.authentication=token".into()),
        set(format!("weft.security.tokens-file={}", tokens.display())),
        set(format!(
            "weft.security.projects-file={}",
            projects.display()
        )),
        set(format!("weft.security.users-file={}", users.display())),
        set("yarn.admin.acl=ops".into()),
        set("weft.security.node-acl=nm,nm2".into()),
    ]
    .concat();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = Server::start(&args);

    // 401 without a valid token, whatever the headers say.
    for (token, headers) in [
        (None, vec![]),
        (None, vec![("x-weft-user", "ops")]),
        (Some("weft_0000"), vec![]),
        (Some(""), vec![]),
    ] {
        let (status, body) = call(
            &server,
            "GET",
            "/ws/v1/cluster/metrics",
            token,
            &headers,
            None,
        );
        assert_eq!(status, 401, "{token:?} {headers:?}: {body}");
    }
    let (status, _) = call(&server, "GET", "/metrics", None, &[], None);
    assert_eq!(status, 401, "metrics need a token too");
    let (status, _) = call(&server, "GET", "/ws/v1/openapi.json", None, &[], None);
    assert_eq!(status, 200, "the API's description is public");
    let (status, body) = call(
        &server,
        "GET",
        "/ws/v1/cluster",
        None,
        &[("authorization", "Basic YWxpY2U6eA==")],
        None,
    );
    assert_eq!(status, 400, "{body}");

    // No header changes who the caller is: alice claiming to be ops is alice.
    let (status, body) = call(
        &server,
        "POST",
        "/ws/v1/policies/pricing/rollback",
        Some(&alice),
        &[("x-weft-user", "ops")],
        None,
    );
    assert_eq!(status, 403, "{body}");
    assert!(
        message(&body).contains("user alice may not roll back"),
        "{body}"
    );
    let (status, body) = call(
        &server,
        "PUT",
        "/ws/v1/policies/pricing?builtin=flat-pricing",
        Some(&alice),
        &[],
        None,
    );
    assert_eq!(status, 403, "{body}");
    let (status, body) = call(
        &server,
        "POST",
        "/ws/v1/admin/refresh-queues",
        Some(&bob),
        &[],
        None,
    );
    assert_eq!(status, 403, "{body}");
    // An administrator loads and rolls back.
    let (status, body) = call(
        &server,
        "PUT",
        "/ws/v1/policies/pricing?builtin=flat-pricing",
        Some(&ops),
        &[],
        None,
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) = call(
        &server,
        "POST",
        "/ws/v1/policies/pricing/rollback",
        Some(&ops),
        &[],
        None,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["active"]["name"], "hops-pricing", "{body}");

    // Projects: only members charge them; a group member too.
    let submit = |token: &str, user: &str, project: &str| {
        call(
            &server,
            "POST",
            "/ws/v1/cluster/apps",
            Some(token),
            &[],
            Some(&small_app(user, project)),
        )
    };
    assert_eq!(submit(&alice, "alice", "genomics").0, 202);
    assert_eq!(
        submit(&carol, "carol", "genomics").0,
        202,
        "carol is in @bio"
    );
    let (status, body) = submit(&alice, "alice", "web");
    assert_eq!(status, 403, "{body}");
    assert!(message(&body).contains("project \"web\""), "{body}");
    let (status, body) = submit(&alice, "bob", "web");
    assert_eq!(status, 403, "{body}");
    assert!(message(&body).contains("on behalf of bob"), "{body}");
    // The app's user is the token's, whatever the header says.
    let (status, body) = call(
        &server,
        "POST",
        "/ws/v1/cluster/apps",
        Some(&bob),
        &[("x-weft-user", "alice")],
        Some(&small_app("alice", "genomics")),
    );
    assert_eq!(status, 403, "{body}");

    // Nodes: only the node ACL registers; a node id belongs to its registrant.
    let node = json!({"node_id": "nm1:8041", "memory_mb": 4096, "vcores": 4});
    let (status, body) = call(
        &server,
        "POST",
        "/ws/v1/cluster/nodes/register",
        Some(&alice),
        &[],
        Some(&node),
    );
    assert_eq!(status, 403, "{body}");
    assert!(message(&body).contains("weft.security.node-acl"), "{body}");
    let (status, body) = call(
        &server,
        "POST",
        "/ws/v1/cluster/nodes/register",
        Some(&nm),
        &[],
        Some(&node),
    );
    assert_eq!(status, 200, "{body}");
    let beat = json!({"finished": []});
    let heartbeat = "/ws/v1/cluster/nodes/nm1:8041/heartbeat";
    let (status, body) = call(&server, "POST", heartbeat, Some(&alice), &[], Some(&beat));
    assert_eq!(status, 403, "{body}");
    let (status, body) = call(&server, "POST", heartbeat, Some(&nm2), &[], Some(&beat));
    assert_eq!(status, 403, "{body}");
    assert!(message(&body).contains("registered by nm"), "{body}");
    let (status, body) = call(
        &server,
        "POST",
        "/ws/v1/cluster/nodes/register",
        Some(&nm2),
        &[],
        Some(&node),
    );
    assert_eq!(
        status, 403,
        "another node manager cannot take the id over: {body}"
    );
    let (status, body) = call(&server, "POST", heartbeat, Some(&nm), &[], Some(&beat));
    assert_eq!(status, 200, "{body}");

    // The CLI takes --token or WEFT_TOKEN.
    let output = weft(&["policy", "list", "--server", &server.base, "--token", &ops]);
    assert!(output.status.success(), "{output:?}");
    let output = std::process::Command::new(crate::support::WEFT)
        .args(["policy", "list", "--server", &server.base])
        .env("WEFT_TOKEN", &bob)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let output = weft(&["policy", "list", "--server", &server.base]);
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("401"),
        "{output:?}"
    );

    // A revoked token stops working within a second or two.
    let output = weft(&[
        "token",
        "revoke",
        "bob",
        "--tokens-file",
        tokens.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{output:?}");
    let started = std::time::Instant::now();
    loop {
        let (status, _) = call(&server, "GET", "/ws/v1/cluster", Some(&bob), &[], None);
        if status == 401 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "bob's token still works"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    server.stop();
}

#[test]
fn simple_mode_refuses_rollback_and_node_rights_to_those_without_them() {
    let server = Server::start(&[
        "--set",
        "yarn.admin.acl=ops",
        "--set",
        "weft.security.node-acl=nm",
    ]);
    let (status, body) = server.request("POST", "/ws/v1/policies/pricing/rollback", &[], None);
    assert_eq!(status, 403, "anonymous is not an administrator: {body}");
    let node = json!({"node_id": "n1", "memory_mb": 4096, "vcores": 4});
    let (status, body) =
        server.post_json_as("/ws/v1/cluster/nodes/register", &node, Some("mallory"));
    assert_eq!(status, 403, "{body}");
    let (status, body) = server.post_json_as("/ws/v1/cluster/nodes/register", &node, Some("nm"));
    assert_eq!(status, 200, "{body}");
    server.stop();
}

#[test]
fn tls_serves_the_api_and_the_cli_trusts_the_given_ca() {
    let dir = tempfile::tempdir().unwrap();
    let certified =
        rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.signing_key.serialize_pem()).unwrap();
    let server = Server::start(&[
        "--set",
        &format!("weft.http.tls.cert-file={}", cert.display()),
        "--set",
        &format!("weft.http.tls.key-file={}", key.display()),
    ]);
    assert!(server.base.starts_with("https://"), "{}", server.base);
    let (status, body) = server.get("/ws/v1/cluster");
    assert_eq!(status, 200, "{body}");
    let with_ca = weft(&[
        "policy",
        "list",
        "--server",
        &server.base,
        "--ca-cert",
        cert.to_str().unwrap(),
    ]);
    assert!(with_ca.status.success(), "{with_ca:?}");
    let without = weft(&["policy", "list", "--server", &server.base]);
    assert!(!without.status.success(), "an unknown CA is not trusted");
    let plain = server.base.replacen("https://", "http://", 1);
    let over_http = weft(&["policy", "list", "--server", &plain]);
    assert!(!over_http.status.success(), "no plain HTTP on a TLS port");
    server.stop();
}

#[test]
fn a_lost_nodes_containers_are_asked_for_again_and_charged_to_then() {
    let server = Server::start(&[
        "--set",
        "yarn.resourcemanager.quota.scheduling.period=100",
        "--set",
        "yarn.resourcemanager.quota.min.runtime=0",
    ]);
    let register = |id: &str| {
        let (status, body) = server.post_json(
            "/ws/v1/cluster/nodes/register",
            &json!({"node_id": id, "memory_mb": 4096, "vcores": 4}),
        );
        assert_eq!(status, 200, "{body}");
    };
    let allocations = |id: &str, want: usize| -> Vec<String> {
        let mut got = Vec::new();
        let started = std::time::Instant::now();
        while got.len() < want {
            let (status, body) = server.post_json(
                &format!("/ws/v1/cluster/nodes/{id}/heartbeat"),
                &json!({"finished": []}),
            );
            assert_eq!(status, 200, "{body}");
            got.extend(
                body["allocations"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|a| a["container_id"].as_str().unwrap().to_string()),
            );
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "no allocations"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        got
    };
    register("nm1");
    let app = server.submit("lost", 2, 60_000);
    let first = allocations("nm1", 2);
    // It runs them (charged from now on; a container never reported
    // running would be charged nothing).
    let (status, body) = server.post_json(
        "/ws/v1/cluster/nodes/nm1/heartbeat",
        &json!({"running": first}),
    );
    assert_eq!(status, 200, "{body}");
    std::thread::sleep(Duration::from_millis(300));
    // The node restarts: it registers again, and its containers are lost.
    register("nm1");
    let (_, body) = server.get(&format!("/ws/v1/cluster/apps/{app}"));
    let info = &body["app"];
    assert_eq!(info["lostContainers"], 2, "{info}");
    // Asked for again: pending, or already placed again by a round that
    // ran since (on a loaded machine a commit can take that long).
    let asked = info["pendingContainers"].as_u64().unwrap_or(0)
        + info["runningContainers"].as_u64().unwrap_or(0);
    assert_eq!(asked, 2, "asked for again: {info}");
    assert_ne!(info["state"], "FINISHED", "{info}");
    let charged = server.get("/ws/v1/quota/projects").1["lost"]["total_used"]
        .as_f64()
        .unwrap_or(0.0);
    assert!(charged > 0.0, "charged up to the loss");
    // Asked for again: the node gets two new containers.
    let again = allocations("nm1", 2);
    assert!(
        again.iter().all(|c| !first.contains(c)),
        "{first:?} {again:?}"
    );
    // A heartbeat reporting the lost ones finished changes nothing.
    let (_, beat) = server.post_json(
        "/ws/v1/cluster/nodes/nm1/heartbeat",
        &json!({"finished": first}),
    );
    assert_eq!(beat["finished_accepted"], 0, "{beat}");
    server.stop();
}

#[test]
fn a_silent_node_expires_and_its_containers_are_asked_for_again() {
    let server = Server::start(&[
        "--set",
        "yarn.nm.liveness-monitor.expiry-interval-ms=300",
        "--set",
        "yarn.resourcemanager.quota.scheduling.period=100",
    ]);
    let (status, body) = server.post_json(
        "/ws/v1/cluster/nodes/register",
        &json!({"node_id": "quiet", "memory_mb": 4096, "vcores": 4}),
    );
    assert_eq!(status, 200, "{body}");
    let app = server.submit("expiry", 1, 60_000);
    server.wait_for(&format!("/ws/v1/cluster/apps/{app}"), "a container", |b| {
        b["app"]["runningContainers"] == 1
    });
    let body = server.wait_for(
        &format!("/ws/v1/cluster/apps/{app}"),
        "the node to expire",
        |b| b["app"]["lostContainers"] == 1,
    );
    assert_eq!(body["app"]["pendingContainers"], 1, "{body}");
    assert_eq!(body["app"]["state"], "RUNNING", "{body}");
    server.stop();
}

#[test]
fn apps_are_killed_by_their_user_or_an_administrator_and_charged_to_then() {
    let server = Server::start(&[
        "--sim-nodes",
        "2x8192mb,8vcores",
        "--set",
        "yarn.admin.acl=ops",
        // As in YARN, root's ACLs default to "*": everyone would
        // administer every queue (and kill any app) unless it is closed.
        "--set",
        "yarn.scheduler.capacity.root.acl_administer_queue= ",
        "--set",
        "yarn.resourcemanager.quota.min.runtime=0",
    ]);
    // YARN's scheduler-conf shows who may administer or submit to a
    // queue: administrators only read it.
    let (status, conf) = server.get_as("/ws/v1/cluster/scheduler-conf", Some("mallory"));
    assert_eq!(status, 403, "{conf}");
    let (status, conf) = server.get_as("/ws/v1/cluster/scheduler-conf", Some("ops"));
    assert_eq!(status, 200, "{conf}");
    let names: Vec<&str> = conf["property"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"yarn.scheduler.capacity.root.queues"),
        "{conf}"
    );
    let submit = || {
        let (status, body) = server.post_json_as(
            "/ws/v1/cluster/apps",
            &json!({"queue": "default", "user": "alice", "project": "killed",
                    "asks": [{"count": 2, "memory_mb": 1024, "vcores": 1, "duration_ms": 600000}]}),
            Some("alice"),
        );
        assert_eq!(status, 202, "{body}");
        body["app"]["id"].as_str().unwrap().to_string()
    };
    let kill = |id: &str, user: &str| {
        server.request(
            "PUT",
            &format!("/ws/v1/cluster/apps/{id}/state"),
            &[("x-weft-user", user), ("content-type", "application/json")],
            Some(br#"{"state": "KILLED"}"#),
        )
    };
    let first = submit();
    server.wait_for(&format!("/ws/v1/cluster/apps/{first}"), "containers", |b| {
        b["app"]["runningContainers"] == 2
    });
    std::thread::sleep(Duration::from_millis(300));
    let (status, body) = kill(&first, "mallory");
    assert_eq!(status, 403, "{body}");
    let (status, body) = kill(&first, "alice");
    assert_eq!(
        (status, body["state"].as_str()),
        (200, Some("KILLED")),
        "{body}"
    );
    let (_, state) = server.get(&format!("/ws/v1/cluster/apps/{first}/state"));
    assert_eq!(state["state"], "KILLED");
    let second = submit();
    let (status, body) = kill(&second, "ops");
    assert_eq!(
        (status, body["state"].as_str()),
        (200, Some("KILLED")),
        "{body}"
    );
    let (status, _) = server.request(
        "PUT",
        &format!("/ws/v1/cluster/apps/{second}/state"),
        &[("x-weft-user", "alice")],
        Some(br#"{"state": "RUNNING"}"#),
    );
    assert_eq!(status, 400);
    // The killed containers were charged up to the kill, and no further.
    let used = || {
        server.wait_for("/ws/v1/quota/projects", "the charge", |b| {
            b["killed"]["total_used"].as_f64().unwrap_or(0.0) > 0.0
        })["killed"]["total_used"]
            .as_f64()
            .unwrap()
    };
    let charged = used();
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(used(), charged, "nothing charged after the kill");
    let (_, metrics) = server.get("/ws/v1/cluster/metrics");
    assert_eq!(metrics["clusterMetrics"]["appsKilled"], 2, "{metrics}");
    server.stop();
}
