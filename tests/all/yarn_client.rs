//! Existing YARN clients against Weft: yarn-api-client (PyPI, the client
//! most Python YARN tools use), installed by this test, drives a live
//! server through every read call its ResourceManager has and kill
//! (tests/yarn_client/check.py), and what it read is checked against
//! Weft's own /ws/v1 answers.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::Server;

/// The client's version this test pins.
const CLIENT: &str = "yarn-api-client==1.0.3";
/// How long installing it and running the script may take.
const LIMIT: Duration = Duration::from_secs(300);

/// yarn-api-client installed into a directory of the build (once): the
/// PYTHONPATH the script runs with.
fn installed_client() -> PathBuf {
    crate::support::pip_installed(CLIENT, "yarn-api-client-1.0.3", "yarn_api_client")
}

/// Runs the script against `server`; returns what it read.
fn run_client(server: &Server, running: &str, finished: &str) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/yarn_client/check.py");
    let mut child = Command::new("python3")
        .arg(script)
        .env("PYTHONPATH", installed_client())
        .env("WEFT_BASE", &server.base)
        .env("WEFT_RUNNING", running)
        .env("WEFT_FINISHED", finished)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let started = Instant::now();
    while child.try_wait().expect("waits").is_none() {
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the yarn-api-client script ran past {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let output = child.wait_with_output().expect("its output");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the script failed:\n{stderr}\n{stdout}"
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"))
}

/// Submits an app of one 1 GB, 1-vcore container for `duration_ms` as
/// anonymous (yarn-api-client sends no user); returns its id.
fn submit(server: &Server, duration_ms: u64, extra: Value) -> String {
    let mut body = json!({
        "queue": "default", "project": "p",
        "asks": [{"count": 1, "memory_mb": 1024, "vcores": 1, "duration_ms": duration_ms}]
    });
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let (status, answer) = server.post_json("/ws/v1/cluster/apps", &body);
    assert_eq!(status, 202, "{answer}");
    answer["app"]["id"].as_str().unwrap().to_string()
}

fn ids(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect()
}

#[test]
fn yarn_api_client_reads_everything_and_kills_an_app() {
    let server = Server::start(&[
        "--sim-nodes",
        "2x8192mb,8vcores",
        // A plan to list reservations of (cluster_reservations needs one).
        "--set",
        "yarn.scheduler.capacity.root.default.reservable=true",
    ]);
    let finished = submit(
        &server,
        200,
        json!({"tags": ["Nightly"], "application_type": "MAPREDUCE"}),
    );
    let running = submit(&server, 3_600_000, json!({}));
    server.wait_for(
        &format!("/ws/v1/cluster/apps/{finished}"),
        "the short app to finish",
        |b| b["app"]["state"] == "FINISHED",
    );
    server.wait_for(
        &format!("/ws/v1/cluster/apps/{running}"),
        "the long app to run",
        |b| b["app"]["state"] == "RUNNING",
    );

    let seen = run_client(&server, &running, &finished);

    // The cluster, as Weft itself reports it.
    let (_, metrics) = server.get("/ws/v1/cluster/metrics");
    let metrics = &metrics["clusterMetrics"];
    for field in ["totalMB", "activeNodes", "totalNodes", "appsSubmitted"] {
        assert_eq!(seen["clusterMetrics"][field], metrics[field], "{field}");
    }
    assert_eq!(metrics["activeNodes"], 2);
    assert_eq!(metrics["lostNodes"], 0);

    // Apps and their YARN fields, equal to Weft's own report.
    let (_, done) = server.get(&format!("/ws/v1/cluster/apps/{finished}"));
    let done = &done["app"];
    let read = &seen["apps"][&finished];
    for field in [
        "state",
        "finalStatus",
        "progress",
        "elapsedTime",
        "applicationType",
        "applicationTags",
        "memorySeconds",
        "vcoreSeconds",
        "trackingUI",
    ] {
        assert_eq!(read[field], done[field], "{field}: {read} against {done}");
    }
    assert_eq!(done["progress"], 100.0);
    assert_eq!(done["applicationType"], "MAPREDUCE");
    assert_eq!(done["applicationTags"], "nightly");
    assert_eq!(done["trackingUI"], "History");
    // One 1,024 MB, 1-vcore container for its run (200 ms on a simulated node).
    let seconds = done["elapsedTime"].as_f64().unwrap() / 1000.0;
    assert!(seconds >= 0.2, "{done}");
    assert!(
        done["memorySeconds"].as_u64().unwrap() as f64 <= 1024.0 * seconds + 1.0,
        "{done}"
    );
    assert!(done["memorySeconds"].as_u64().unwrap() >= 204, "{done}");

    let app = &seen["running"];
    assert_eq!(app["state"], "RUNNING");
    assert_eq!(app["applicationType"], "YARN");
    assert_eq!(app["trackingUI"], "ApplicationMaster");
    let progress = app["progress"].as_f64().unwrap();
    assert!((0.0..=100.0).contains(&progress), "{app}");

    // Filters.
    assert_eq!(ids(&seen["running_filtered"]), [running.as_str()]);
    assert!(ids(&seen["finished_filtered"]).contains(&finished.as_str()));
    assert!(!ids(&seen["finished_filtered"]).contains(&running.as_str()));
    assert_eq!(ids(&seen["tagged"]), [finished.as_str()]);
    assert!(
        seen["limit_0"].as_str().unwrap().contains("400"),
        "{}",
        seen["limit_0"]
    );
    assert!(seen["unknown_app"].as_str().unwrap().contains("404"));

    // Statistics: all eight YARN states for every type, then one filtered.
    let statistics = seen["statistics"].as_array().unwrap();
    assert_eq!(statistics.len(), 8, "{statistics:?}");
    let count = |state: &str| {
        statistics
            .iter()
            .find(|i| i["state"] == state)
            .map(|i| i["count"].clone())
    };
    assert_eq!(count("RUNNING"), Some(json!(1)));
    assert_eq!(count("FINISHED"), Some(json!(1)));
    assert_eq!(count("NEW"), Some(json!(0)));
    assert_eq!(
        seen["statistics_yarn_running"],
        json!([{"state": "RUNNING", "type": "yarn", "count": 1}])
    );

    // The one attempt and its container.
    assert!(
        seen["attempt"]["appAttemptId"]
            .as_str()
            .unwrap()
            .ends_with("_000001")
    );
    assert_eq!(seen["attempt"]["appAttemptState"], "RUNNING");
    assert_eq!(seen["container"]["containerState"], "RUNNING");
    assert_eq!(seen["state_before_kill"], "RUNNING");

    // Nodes (read while the long app ran: it holds 1,024 MB of one).
    let (_, nodes) = server.get("/ws/v1/cluster/nodes");
    let nodes = nodes["nodes"]["node"].as_array().unwrap();
    let read = seen["nodes"].as_array().unwrap();
    assert_eq!(read.len(), nodes.len());
    for (read, node) in read.iter().zip(nodes) {
        for field in [
            "id",
            "nodeHostName",
            "rack",
            "state",
            "nodeHTTPAddress",
            "version",
        ] {
            assert_eq!(read[field], node[field], "{field}");
        }
        let capacity =
            |n: &Value| n["usedMemoryMB"].as_u64().unwrap() + n["availMemoryMB"].as_u64().unwrap();
        assert_eq!(capacity(read), capacity(node));
    }
    let held: u64 = read
        .iter()
        .map(|n| n["usedMemoryMB"].as_u64().unwrap())
        .sum();
    assert_eq!(held, 1024);
    assert_eq!(seen["running_nodes"], 2);
    assert_eq!(seen["new_nodes"], 0);
    assert_eq!(seen["node"]["id"], read[0]["id"]);
    assert_eq!(seen["node"]["usedMemoryMB"], read[0]["usedMemoryMB"]);
    assert!(
        seen["node_state_accepted"]
            .as_str()
            .unwrap()
            .contains("400")
    );

    // The app's other resources.
    assert_eq!(seen["queue"], json!({"queue": "default"}));
    assert_eq!(seen["priority"], json!({"priority": 0}));
    assert_eq!(
        seen["timeouts"]["timeouts"]["timeout"][0]["type"],
        "LIFETIME"
    );
    assert_eq!(seen["timeout"]["timeout"]["expiryTime"], "UNLIMITED");
    // A lifetime set through the client, in its own format, and read back.
    assert_eq!(
        seen["timeout_set"]["timeout"]["expiryTime"],
        seen["timeout_asked"]
    );
    assert_eq!(
        seen["timeout_after"]["timeout"]["expiryTime"],
        seen["timeout_asked"]
    );
    let left = seen["timeout_after"]["timeout"]["remainingTimeInSeconds"]
        .as_i64()
        .unwrap();
    assert!((3500..=3600).contains(&left), "{}", seen["timeout_after"]);
    let properties = seen["scheduler_conf"]["property"].as_array().unwrap();
    assert!(
        properties
            .iter()
            .any(|p| p["name"] == "yarn.scheduler.capacity.root.queues"),
        "{properties:?}"
    );
    assert!(seen["activities"]["activities"]["diagnostic"].is_string());
    assert_eq!(
        seen["app_activities"]["appActivities"]["applicationId"],
        running.as_str()
    );

    // Kill: the app is KILLED (and killing it, or a finished app, again changes nothing).
    assert_eq!(seen["kill"], json!({"state": "KILLED"}));
    assert_eq!(seen["killed"]["finalStatus"], "KILLED");
    assert_eq!(seen["kill_again"], json!({"state": "KILLED"}));
    assert_eq!(seen["kill_finished"], json!({"state": "FINISHED"}));
    let (_, killed) = server.get(&format!("/ws/v1/cluster/apps/{running}"));
    assert_eq!(killed["app"]["state"], "KILLED");
    server.stop();
}
