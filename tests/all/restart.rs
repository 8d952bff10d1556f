//! Work-preserving restart through the real binaries: `weft serve` killed
//! with -9 and started again on the same store, with a real `weft agent`
//! running real processes.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{Server, Stoppable, WEFT, alive, free_port, read_pid, weft_within};

const LIMIT: Duration = Duration::from_secs(60);

/// Heartbeats every 100 ms; every container charged for its own time.
const FAST: &[&str] = &[
    "--set",
    "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms=100",
    "--set",
    "yarn.resourcemanager.quota.min.runtime=0",
    "--set",
    "weft.scheduler.interval-ms=100",
    // Only the agent's return ends the wait in these tests.
    "--set",
    "yarn.resourcemanager.work-preserving-recovery.scheduling-wait-ms=600000",
];

fn start_agent(base: &str, work: &Path) -> Stoppable {
    let child = Command::new(WEFT)
        .args(["agent", "--server", base, "--node-id", "agent-1"])
        .args(["--resources", "4096mb,2vcores"])
        .arg("--work-dir")
        .arg(work.join("work"))
        .arg("--log-dir")
        .arg(work.join("logs"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("weft agent starts");
    Stoppable(child)
}

/// Runs `weft GROUP COMMAND --server BASE REST…`, which must succeed; its
/// stdout.
fn weft_ok(base: &str, args: &[&str]) -> String {
    let mut all: Vec<&str> = args[..2].to_vec();
    all.extend(["--server", base]);
    all.extend(&args[2..]);
    let output = weft_within(&all, LIMIT);
    assert!(
        output.status.success(),
        "weft {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// Submits one 1 GB, 1 vcore container running `script`; the app's id.
fn run(base: &str, script: &str) -> String {
    weft_ok(
        base,
        &[
            "app", "run", "--memory", "1024mb", "--vcores", "1", "--shell", "--", script,
        ],
    )
}

fn wait_for_pid(path: &Path) -> u32 {
    let begun = Instant::now();
    loop {
        if let Some(pid) = read_pid(path) {
            return pid;
        }
        assert!(begun.elapsed() < LIMIT, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn app(server: &Server, id: &str) -> Value {
    let (status, body) = server.get(&format!("/ws/v1/cluster/apps/{id}"));
    assert_eq!(status, 200, "{body}");
    body["app"].clone()
}

fn containers(server: &Server, id: &str) -> Vec<Value> {
    let (status, body) = server.get(&format!("/ws/v1/cluster/apps/{id}/containers"));
    assert_eq!(status, 200, "{body}");
    body["containers"].as_array().cloned().unwrap_or_default()
}

#[test]
fn a_server_killed_with_9_comes_back_with_its_apps_containers_and_policies() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = dir.path().join("serve.log");
    let listen = format!("127.0.0.1:{}", free_port());
    let server = Server::start_at(&listen, &data, FAST, Some(&log));
    let base = server.base.clone();
    let agent = start_agent(&base, dir.path());
    server.wait_for("/ws/v1/cluster/nodes", "the agent", |b| {
        b["nodes"]["node"].as_array().is_some_and(|n| !n.is_empty())
    });
    // One credit per second for a 1 GB, 1 vcore container.
    weft_ok(
        &base,
        &["policy", "load", "pricing", "builtin:flat-pricing"],
    );

    // A long container, and a short one that ends while the server is down.
    let long_pid_file = dir.path().join("long.pid");
    let short_pid_file = dir.path().join("short.pid");
    let long = run(
        &base,
        &format!("echo $$ > {}; sleep 60", long_pid_file.display()),
    );
    let short = run(
        &base,
        &format!("echo $$ > {}; sleep 2", short_pid_file.display()),
    );
    let long_pid = wait_for_pid(&long_pid_file);
    wait_for_pid(&short_pid_file);
    let long_containers = containers(&server, &long);
    let before = app(&server, &long);
    assert_eq!(before["state"], "RUNNING", "{before}");

    server.kill();
    // The agent cannot come back before the test lets it: allocation must
    // wait for it.
    agent.signal("STOP");
    std::thread::sleep(Duration::from_secs(3));
    let server = Server::start_at(&listen, &data, FAST, Some(&log));
    let restarted_ms = now_ms();

    // Everything is back, and the long container was not touched.
    assert!(alive(long_pid), "the long container survived the restart");
    let after = app(&server, &long);
    for field in [
        "id",
        "state",
        "queue",
        "user",
        "project",
        "runningContainers",
    ] {
        assert_eq!(after[field], before[field], "{field}: {after} vs {before}");
    }
    assert_eq!(containers(&server, &long), long_containers);
    let (_, policies) = server.get("/ws/v1/policies");
    assert_eq!(
        policies["pricing"]["active"]["name"], "flat-pricing",
        "the policy loaded at runtime is in force after the restart: {policies}"
    );

    // A new app waits: its node's agent has not registered again.
    let waiting = run(&base, "true");
    std::thread::sleep(Duration::from_millis(1500));
    let pending = app(&server, &waiting);
    assert_eq!(
        pending["state"], "ACCEPTED",
        "nothing is allocated before the known node is back: {pending}"
    );

    agent.signal("CONT");
    let finished = server.wait_for(
        &format!("/ws/v1/cluster/apps/{short}"),
        "the short app's end",
        |b| b["app"]["state"] == "FINISHED",
    );
    server.wait_for(
        &format!("/ws/v1/cluster/apps/{waiting}"),
        "the waiting app's end",
        |b| b["app"]["state"] == "FINISHED",
    );
    assert_eq!(finished["app"]["lostContainers"], 0, "{finished}");
    // The short container ended while the server was down: it is charged
    // up to its real end, once.
    let short_container = &containers(&server, &short)[0];
    let (start, finish) = (
        short_container["startTimeMs"].as_u64().unwrap(),
        short_container["finishTimeMs"].as_u64().unwrap(),
    );
    assert!(
        finish < restarted_ms,
        "its end is when it ended ({finish}), not the restart ({restarted_ms})"
    );
    // The next QUOTA_COMPUTE or its end charged it; wait for the flush.
    let charged = server.wait_for(
        &format!("/ws/v1/cluster/apps/{short}"),
        "the short app's charge",
        |b| b["app"]["credits"].as_f64().unwrap_or(0.0) > 0.0,
    );
    crate::support::assert_credits(
        &charged["app"]["credits"],
        (finish - start) as f64 / 1000.0,
        "the short app",
    );
    // A container allocated after the restart carries the new epoch.
    let new_id = containers(&server, &waiting)[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let old_id = long_containers[0]["id"].as_str().unwrap();
    assert!(
        new_id.starts_with("container_e2_") && old_id.starts_with("container_e1_"),
        "{old_id} then {new_id}"
    );
    assert!(alive(long_pid));
    weft_ok(&base, &["app", "kill", &long]);
    drop(agent);
    server.stop();
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}
