//! `weft serve` end to end over HTTP: a live simulated cluster is scheduled
//! and charged, policies swap under load with no failed request, bad uploads
//! are refused while the host keeps serving, and the ledger survives a clean
//! stop and a kill -9.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{FAULTY_PRICING, FAULTY_SCHEDULING, Server, assert_credits, weft};

fn app_state(server: &Server, id: &str) -> String {
    server.get(&format!("/ws/v1/cluster/apps/{id}")).1["app"]["state"]
        .as_str()
        .unwrap_or("?")
        .to_string()
}

fn wait_finished(server: &Server, id: &str) {
    server.wait_for(
        &format!("/ws/v1/cluster/apps/{id}"),
        &format!("{id} to finish"),
        |body| body["app"]["state"] == "FINISHED",
    );
}

fn active_policy(server: &Server, kind: &str) -> String {
    server.get("/ws/v1/policies").1[kind]["active"]["name"]
        .as_str()
        .unwrap_or("?")
        .to_string()
}

#[test]
fn a_live_cluster_is_scheduled_charged_and_priced() {
    let server = Server::start(&["--sim-nodes", "4x8192mb,8vcores,1gpus"]);
    let (status, info) = server.get("/ws/v1/cluster/info");
    assert_eq!(
        (status, info["clusterInfo"]["state"].as_str()),
        (200, Some("STARTED"))
    );
    let id = server.submit("demo", 8, 2000);
    assert!(["ACCEPTED", "RUNNING"].contains(&app_state(&server, &id).as_str()));
    wait_finished(&server, &id);
    // 8 containers of 1 GB, 1 vcore ran 2 s each: each is charged the 10 s
    // minimum runtime at 1 credit per unit-second.
    let (_, projects) = server.get("/ws/v1/quota/projects");
    assert_credits(&projects["demo"]["total_used"], 80.0, "demo's usage");
    assert_credits(
        &projects["demo"]["remaining"],
        -80.0,
        "demo's remaining credits",
    );
    let (_, prices) = server.get("/ws/v1/quota/prices");
    assert_eq!(
        prices["multiplicators"],
        json!({"general": 1.0, "gpu": 1.0}),
        "{prices}"
    );
    assert_eq!(
        prices["price_per_second"],
        json!({"vcore": 1.0, "memory": 1.0, "gpu": 1.0}),
        "{prices}"
    );
    let (_, apps) = server.get("/ws/v1/cluster/apps");
    assert_eq!(apps["apps"]["app"][0]["finishedContainers"], 8);
    let metrics = server.metrics();
    for metric in [
        "weft_policy_calls_total",
        "weft_credits_charged_total",
        "weft_containers_allocated_total",
        "weft_apps",
    ] {
        assert!(metrics.contains(metric), "/metrics lacks {metric}");
    }
    let (status, missing) = server.get("/ws/v1/cluster/apps/application_1_9999");
    assert_eq!(status, 404, "{missing}");
    server.stop();
}

#[test]
fn a_submission_brings_the_next_round_forward() {
    // Rounds a minute apart: the first is due a minute after the start, so
    // only the round a submission brings forward can place this app in the
    // 30 s `wait_for` allows.
    let server = Server::start(&[
        "--sim-nodes",
        "2x4096mb,4vcores",
        "--set",
        "weft.scheduler.interval-ms=60000",
    ]);
    let id = server.submit("demo", 2, 60_000);
    server.wait_for(
        &format!("/ws/v1/cluster/apps/{id}"),
        "the app to run",
        |b| b["app"]["state"] == "RUNNING",
    );
    server.stop();
}

#[test]
fn nodes_register_heartbeat_and_report_finished_containers() {
    let server = Server::start(&[]);
    let (status, body) = server.post_json(
        "/ws/v1/cluster/nodes/register",
        &json!({"node_id": "nm1:8041", "memory_mb": 4096, "vcores": 4}),
    );
    assert_eq!(status, 200, "{body}");
    assert!(body["heartbeat_interval_ms"].as_u64().unwrap() > 0);
    let id = server.submit("remote", 2, 1000);
    let mut delivered: Vec<String> = Vec::new();
    for _ in 0..600 {
        let (status, beat) = server.post_json(
            "/ws/v1/cluster/nodes/nm1:8041/heartbeat",
            &json!({"finished": []}),
        );
        assert_eq!(status, 200, "{beat}");
        delivered.extend(
            beat["allocations"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a["container_id"].as_str().unwrap().to_string()),
        );
        if delivered.len() == 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(delivered.len(), 2, "the node never received its containers");
    assert_eq!(app_state(&server, &id), "RUNNING");
    let (status, beat) = server.post_json(
        "/ws/v1/cluster/nodes/nm1:8041/heartbeat",
        &json!({"finished": delivered}),
    );
    assert_eq!(
        (status, beat["finished_accepted"].as_u64()),
        (200, Some(2)),
        "{beat}"
    );
    assert_eq!(app_state(&server, &id), "FINISHED");
    let bad: [(&str, Value, u16); 4] = [
        (
            "/ws/v1/cluster/nodes/ghost:1/heartbeat",
            json!({"finished": []}),
            404,
        ),
        (
            "/ws/v1/cluster/nodes/register",
            json!({"node_id": "nm2", "memory_mb": 0, "vcores": 4}),
            400,
        ),
        (
            "/ws/v1/cluster/apps",
            json!({"user": "a", "project": "p", "queue": "nope", "asks": [{"count": 1, "memory_mb": 1, "vcores": 1, "duration_ms": 1}]}),
            400,
        ),
        (
            "/ws/v1/cluster/apps",
            json!({"user": "a", "project": "p", "asks": []}),
            400,
        ),
    ];
    for (path, body, expected) in bad {
        let (status, answer) = server.post_json(path, &body);
        assert_eq!(status, expected, "{path} {body}: {answer}");
        assert!(
            answer["RemoteException"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{answer}"
        );
    }
}

/// Submits small apps and reads prices in a loop, counting failed requests.
struct Load {
    stop: Arc<AtomicBool>,
    requests: Arc<AtomicU64>,
    failures: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Load {
    /// Submits into `queue`.
    fn start(base: &str, queue: &str) -> Load {
        let (stop, requests, failures) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicU64::new(0)),
            Arc::new(AtomicU64::new(0)),
        );
        let (base, s, r, f) = (
            base.to_string(),
            stop.clone(),
            requests.clone(),
            failures.clone(),
        );
        let queue = queue.to_string();
        let thread = std::thread::spawn(move || {
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .http_status_as_error(false)
                .build()
                .into();
            while !s.load(Ordering::Relaxed) {
                let app = json!({"queue": queue, "user": "bob", "project": "load", "asks": [{"count": 1, "memory_mb": 1024, "vcores": 1, "duration_ms": 150}]});
                let submitted = agent
                    .post(&format!("{base}/ws/v1/cluster/apps"))
                    .send_json(&app);
                let priced = agent.get(&format!("{base}/ws/v1/quota/prices")).call();
                for response in [submitted, priced] {
                    r.fetch_add(1, Ordering::Relaxed);
                    if !response.is_ok_and(|r| r.status().is_success()) {
                        f.fetch_add(1, Ordering::Relaxed);
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Load {
            stop,
            requests,
            failures,
            thread: Some(thread),
        }
    }

    /// Stops the load; returns (requests, failed requests).
    fn finish(mut self) -> (u64, u64) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap();
        (
            self.requests.load(Ordering::Relaxed),
            self.failures.load(Ordering::Relaxed),
        )
    }
}

fn vcore_price(body: &Value) -> f64 {
    body["price_per_second"]["vcore"].as_f64().unwrap_or(-1.0)
}

fn node_used_mb(server: &Server, node: &str) -> u64 {
    let (_, nodes) = server.get("/ws/v1/cluster/nodes");
    nodes["nodes"]["node"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == node)
        .map(|n| n["usedMemoryMB"].as_u64().unwrap())
        .unwrap_or(0)
}

#[test]
fn swapping_policies_under_load_changes_behaviour_with_no_failed_request() {
    let server = Server::start(&[
        "--set",
        "weft.policy.scheduling=builtin:fifo",
        "--sim-nodes",
        "4x8192mb,8vcores",
        "--set",
        "yarn.resourcemanager.quota.variable.price.enabled=true",
        "--set",
        "yarn.resourcemanager.quota.multiplicator.interval=100",
        "--set",
        "weft.scheduler.interval-ms=20",
    ]);
    // Half the cluster busy for a minute, plus the load: utilization above
    // 0.5, so hops-pricing's general multiplicator is above 1 + (0.5 − 0.2).
    // First fit fills sim-0001 and sim-0002 with it.
    let (status, body) = server.post_json(
        "/ws/v1/cluster/apps",
        &json!({"user": "alice", "project": "base", "asks": [{"count": 16, "memory_mb": 1024, "vcores": 1, "duration_ms": 60000}]}),
    );
    assert_eq!(status, 202, "{body}");
    let load = Load::start(&server.base, "default");

    let hops = server.wait_for(
        "/ws/v1/quota/prices",
        "hops-pricing's variable price",
        |b| vcore_price(b) > 1.3,
    );
    assert_eq!(hops["pricing_policy"], "hops-pricing");
    server.wait_for("/ws/v1/cluster/nodes", "first fit to use sim-0003", |_| {
        node_used_mb(&server, "sim-0003:8041") > 0
    });
    assert_eq!(
        node_used_mb(&server, "sim-0004:8041"),
        0,
        "first fit used the last node"
    );

    let (status, body) = server.put("/ws/v1/policies/pricing?builtin=flat-pricing", b"");
    assert_eq!(status, 200, "{body}");
    server.wait_for("/ws/v1/quota/prices", "flat-pricing's price", |b| {
        vcore_price(b) == 1.0
    });

    let (status, body) = server.put(
        "/ws/v1/policies/scheduling?builtin=fifo&node-order=last-fit",
        b"",
    );
    assert_eq!(status, 200, "{body}");
    server.wait_for("/ws/v1/cluster/nodes", "last fit to use sim-0004", |_| {
        node_used_mb(&server, "sim-0004:8041") > 0
    });

    let (status, body) = server.put("/ws/v1/policies/pricing?builtin=hops-pricing", b"");
    assert_eq!(status, 200, "{body}");
    server.wait_for("/ws/v1/quota/prices", "hops-pricing's price again", |b| {
        vcore_price(b) > 1.3
    });

    let (requests, failures) = load.finish();
    assert!(requests > 10, "the load made only {requests} requests");
    assert_eq!(
        failures, 0,
        "{failures} of {requests} requests failed during the swaps"
    );
}

#[test]
fn bad_uploads_are_refused_and_the_host_keeps_serving() {
    let server = Server::start(&["--sim-nodes", "2x4096mb,4vcores"]);
    let faulty_pricing = std::fs::read(FAULTY_PRICING).unwrap();
    let faulty_scheduling = std::fs::read(FAULTY_SCHEDULING).unwrap();
    let flat = weft_host::policy::builtin("flat-pricing").unwrap().to_vec();
    let cases: Vec<(&str, String, Vec<u8>, u16, &str)> = vec![
        (
            "not wasm",
            "pricing".into(),
            b"GIF89a".to_vec(),
            400,
            "not a WebAssembly",
        ),
        (
            "core module",
            "pricing".into(),
            b"\0asm\x01\0\0\0".to_vec(),
            400,
            "core WebAssembly module",
        ),
        (
            "another world",
            "scheduling".into(),
            flat,
            400,
            "not a scheduling policy",
        ),
        (
            "configure refuses",
            "pricing?fault=refuse".into(),
            faulty_pricing.clone(),
            400,
            "refused its parameters",
        ),
        (
            "traps",
            "pricing?fault=trap".into(),
            faulty_pricing.clone(),
            400,
            "trapped",
        ),
        (
            "loops",
            "pricing?fault=loop".into(),
            faulty_pricing.clone(),
            400,
            "timed out",
        ),
        (
            "memory bomb",
            "pricing?fault=alloc".into(),
            faulty_pricing.clone(),
            400,
            "self-check",
        ),
        (
            "ghost node",
            "scheduling?fault=ghost-node".into(),
            faulty_scheduling.clone(),
            400,
            "node",
        ),
        (
            "over-allocates",
            "scheduling?fault=over-allocate".into(),
            faulty_scheduling.clone(),
            400,
            "over-allocated",
        ),
        ("no body", "pricing".into(), vec![], 400, "no policy given"),
        (
            "unknown builtin",
            "pricing?builtin=nope".into(),
            vec![],
            400,
            "no bundled policy",
        ),
        (
            "unknown kind",
            "colour".into(),
            vec![],
            404,
            "unknown policy kind",
        ),
    ];
    for (case, path, body, expected, says) in cases {
        let (status, answer) = server.put(&format!("/ws/v1/policies/{path}"), &body);
        let message = answer["RemoteException"]["message"]
            .as_str()
            .unwrap_or_default();
        assert_eq!(status, expected, "{case}: {answer}");
        assert!(
            message.contains(says),
            "{case}: {message:?} does not say {says:?}"
        );
    }
    assert_eq!(active_policy(&server, "pricing"), "hops-pricing");
    assert_eq!(active_policy(&server, "scheduling"), "capacity");
    let id = server.submit("after", 2, 500);
    wait_finished(&server, &id);
    let (_, projects) = server.get("/ws/v1/quota/projects");
    assert_credits(&projects["after"]["total_used"], 20.0, "valid charges only");
    let (status, _) = server.post("/ws/v1/policies/pricing/rollback");
    assert_eq!(status, 409, "nothing earlier to roll back to");
}

#[test]
fn a_failing_scheduler_falls_back_and_is_rolled_back_by_itself() {
    let server = Server::start(&["--sim-nodes", "2x4096mb,4vcores"]);
    let faulty = std::fs::read(FAULTY_SCHEDULING).unwrap();
    // Passes its self-check (call 1), then places on a node that does not exist.
    let (status, body) = server.put(
        "/ws/v1/policies/scheduling?fault=ghost-node&after=1",
        &faulty,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(active_policy(&server, "scheduling"), "faulty-scheduling");
    for _ in 0..3 {
        // Each round with pending work fails once, and capacity places it instead.
        let id = server.submit("fallback", 1, 100);
        wait_finished(&server, &id);
    }
    let (_, policies) = server.get("/ws/v1/policies");
    assert_eq!(
        policies["scheduling"]["active"]["name"], "capacity",
        "{policies}"
    );
    let faulty_entry = &policies["scheduling"]["history"][1];
    assert_eq!(faulty_entry["state"], "rolled-back", "{policies}");
    assert!(
        faulty_entry["note"].as_str().unwrap().contains("in a row"),
        "{faulty_entry}"
    );
}

#[test]
fn the_ledger_and_multiplicators_survive_a_clean_stop() {
    let dir = tempfile::tempdir().unwrap();
    let variable = [
        "--set",
        "yarn.resourcemanager.quota.variable.price.enabled=true",
    ];
    let mut args = vec![
        "--sim-nodes",
        "1x4096mb,4vcores",
        "--set",
        "yarn.resourcemanager.quota.multiplicator.interval=100",
    ];
    args.extend(variable);
    let server = Server::start_in(dir.path(), &args);
    // 3 of 4 GB busy: general multiplicator 1 + (0.75 − 0.2) = 1.55.
    server.submit("kept", 3, 60_000);
    let prices = server.wait_for("/ws/v1/quota/prices", "the multiplicator to rise", |b| {
        b["multiplicators"]["general"].as_f64().unwrap_or(0.0) > 1.5
    });
    server.stop();
    let server = Server::start_in(
        dir.path(),
        &[
            "--set",
            "yarn.resourcemanager.quota.multiplicator.interval=3600000",
            variable[0],
            variable[1],
        ],
    );
    let (_, after) = server.get("/ws/v1/quota/prices");
    assert_eq!(
        after["multiplicators"], prices["multiplicators"],
        "multiplicators were not restored"
    );
    let (_, projects) = server.get("/ws/v1/quota/projects");
    // The clean stop charged the 3 running containers up to the stop, at 1.55.
    let used = projects["kept"]["total_used"].as_f64().unwrap();
    assert!(used > 0.0, "{projects}");
    assert_credits(
        &projects["kept"]["remaining"],
        -used,
        "remaining after restart",
    );
}

#[test]
fn after_kill_9_at_most_the_time_since_the_last_quota_compute_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--sim-nodes",
        "1x4096mb,4vcores",
        "--set",
        "yarn.resourcemanager.quota.scheduling.period=200",
    ];
    let server = Server::start_in(dir.path(), &args);
    server.submit("crash", 1, 60_000);
    let before = server.wait_for("/ws/v1/quota/projects", "two QUOTA_COMPUTEs", |b| {
        b["crash"]["total_used"].as_f64().unwrap_or(0.0) >= 0.4
    });
    let charged_before = before["crash"]["total_used"].as_f64().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    server.kill();
    let server = Server::start_in(dir.path(), &[]);
    let (_, projects) = server.get("/ws/v1/quota/projects");
    let charged_after = projects["crash"]["total_used"].as_f64().unwrap();
    // Everything charged before the kill is there; at most the last period
    // and the kill's own moment went uncharged.
    assert!(
        charged_after >= charged_before,
        "{charged_after} < {charged_before}"
    );
    assert!(
        charged_after <= charged_before + 1.0,
        "{charged_after} is more than was ever charged"
    );
}

#[test]
fn cli_errors_are_one_sentence_and_a_non_zero_exit() {
    let cases: [(&[&str], &str); 4] = [
        (
            &["serve", "--sim-nodes", "lots", "--listen", "127.0.0.1:0"],
            "--sim-nodes",
        ),
        (
            &["policy", "list", "--server", "http://127.0.0.1:9"],
            "cannot reach",
        ),
        (
            &["policy", "check", FAULTY_PRICING, "--param", "fault=trap"],
            "trapped",
        ),
        (
            &[
                "serve",
                "--set",
                "yarn.resourcemanager.quota.enabled=maybe",
                "--listen",
                "127.0.0.1:0",
            ],
            "true or false",
        ),
    ];
    for (args, says) in cases {
        let output = weft(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?} succeeded");
        assert!(stderr.contains(says), "{args:?}: {stderr:?}");
        // One sentence, then what a failing guest wrote, if anything.
        let sentence = stderr
            .trim()
            .lines()
            .take_while(|line| !line.starts_with("what the guest wrote"));
        assert_eq!(sentence.count(), 1, "{args:?}: {stderr:?}");
    }
    let output = weft(&["policy", "check", FAULTY_PRICING]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn swapping_capacity_for_drf_under_load_changes_placement_with_no_failed_request() {
    let dir = tempfile::tempdir().unwrap();
    let queues = dir.path().join("queues.toml");
    std::fs::write(
        &queues,
        "[yarn.scheduler.capacity.root]\nqueues = \"a,b\"\n\n[yarn.scheduler.capacity.root.a]\ncapacity = 50\n\n[yarn.scheduler.capacity.root.b]\ncapacity = 50\n",
    )
    .unwrap();
    let server = Server::start(&[
        "--queues",
        queues.to_str().unwrap(),
        "--sim-nodes",
        "4x8192mb,8vcores",
        "--set",
        "weft.policy.scheduling=builtin:capacity",
        "--set",
        "weft.scheduler.interval-ms=20",
    ]);
    // One user asks queue a for more than the cluster. Under capacity its
    // user limit (guarantee × user-limit-factor 1) holds it to half the
    // cluster; drf has no user limits and lets a grow to its maximum.
    let (status, body) = server.post_json(
        "/ws/v1/cluster/apps",
        &json!({"queue": "a", "user": "alice", "project": "p", "asks": [{"count": 64, "memory_mb": 1024, "vcores": 1, "duration_ms": 60000}]}),
    );
    assert_eq!(status, 202, "{body}");
    let id = body["app"]["id"].as_str().unwrap().to_string();
    let allocated = |b: &Value| b["app"]["allocatedMB"].as_u64().unwrap_or(0);
    let app_path = format!("/ws/v1/cluster/apps/{id}");
    server.wait_for(&app_path, "capacity to give a half the cluster", |b| {
        allocated(b) == 16 * 1024
    });
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        allocated(&server.get(&app_path).1),
        16 * 1024,
        "capacity let a user past its limit"
    );

    let load = Load::start(&server.base, "b");
    let (status, body) = server.put("/ws/v1/policies/scheduling?builtin=drf", b"");
    assert_eq!(status, 200, "{body}");
    server.wait_for(&app_path, "drf to let a grow", |b| allocated(b) > 16 * 1024);
    let (requests, failures) = load.finish();
    assert!(requests > 0);
    assert_eq!(
        failures, 0,
        "{failures} of {requests} requests failed during the swap"
    );
}
