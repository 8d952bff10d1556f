//! Real processes through the real binary: `weft serve`'s local agent and a
//! standalone `weft agent` run commands, report their exit, kill them
//! (leaving nothing behind), serve their logs, and survive a kill -9.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::support::{Server, Stoppable, alive, read_pid, weft_within};

const LIMIT: Duration = Duration::from_secs(60);

/// `weft app ARGS --server BASE`.
fn app(server: &Server, args: &[&str]) -> Output {
    let (subcommand, rest) = args.split_first().expect("a subcommand");
    let mut all = vec!["app", subcommand, "--server", &server.base];
    all.extend_from_slice(rest);
    weft_within(&all, LIMIT)
}

/// `weft app run [FLAGS] --wait -- COMMAND`: (exit code, app id, stderr).
fn run_and_wait(server: &Server, flags: &[&str], command: &[&str]) -> (i32, String, String) {
    let mut args = vec!["run", "--server", &server.base, "--wait"];
    args.extend_from_slice(flags);
    args.push("--");
    args.extend_from_slice(command);
    let mut all = vec!["app"];
    all.extend_from_slice(&args);
    let output = weft_within(&all, LIMIT);
    let id = String::from_utf8_lossy(&output.stdout).trim().to_string();
    (
        output.status.code().unwrap_or(-1),
        id,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The pid of `parent`'s monitor spawner helper (a child running
/// `weft __weft-monitor-spawner`), if it has one.
fn spawner_of(parent: u32) -> Option<u32> {
    std::fs::read_dir("/proc")
        .ok()?
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .find(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let parent_field = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|ppid| ppid.parse::<u32>().ok());
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            parent_field == Some(parent)
                && cmdline
                    .split(|b| *b == 0)
                    .nth(1)
                    .is_some_and(|arg| arg == b"__weft-monitor-spawner")
        })
}

/// A server with its local agent and `extra` arguments, once the agent has
/// registered; and the nodes it then lists.
fn registered_local_agent(dir: &Path, extra: &[&str]) -> (Server, serde_json::Value) {
    let server = Server::start_with_local_agent(&dir.join("data"), extra, None);
    let nodes = server.wait_for("/ws/v1/cluster/nodes", "the local agent", |b| {
        b["nodes"]["node"].as_array().is_some_and(|n| !n.is_empty())
    });
    (server, nodes)
}

fn local_agent_server(dir: &Path) -> Server {
    Server::start_with_local_agent(
        &dir.join("data"),
        &[
            "--set",
            "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms=100",
            // Not everyone administers the cluster, so rights are checked.
            "--set",
            "yarn.admin.acl=admin",
            "--set",
            "yarn.scheduler.capacity.root.acl_administer_queue=admin",
        ],
        None,
    )
}

#[test]
fn the_local_agent_runs_commands_reports_their_exit_and_serves_their_logs() {
    let dir = crate::support::shared_tempdir();
    let server = local_agent_server(dir.path());
    let nodes = server.wait_for("/ws/v1/cluster/nodes", "the local agent", |b| {
        b["nodes"]["node"].as_array().is_some_and(|n| !n.is_empty())
    });
    let node = &nodes["nodes"]["node"][0];
    assert!(
        node["isolation"].as_str().is_some_and(|i| !i.is_empty()),
        "{node}"
    );

    // A command that succeeds, its output in its log.
    let (code, id, stderr) = run_and_wait(
        &server,
        &["--env", "GREETING=hello"],
        &["sh", "-c", "echo $GREETING from $CONTAINER_ID"],
    );
    assert_eq!(code, 0, "{stderr}");
    let logs = app(&server, &["logs", &id]);
    let stdout = String::from_utf8_lossy(&logs.stdout);
    assert!(
        logs.status.success(),
        "{}",
        String::from_utf8_lossy(&logs.stderr)
    );
    assert!(stdout.contains("hello from container_"), "{stdout}");
    let (_, report) = server.get(&format!("/ws/v1/cluster/apps/{id}"));
    assert_eq!(report["app"]["finalStatus"], "SUCCEEDED", "{report}");
    // Charged (at least the minimum runtime), and the project's total is
    // the sum of its apps'.
    let credits = report["app"]["credits"].as_f64().unwrap();
    assert!(credits > 0.0, "{report}");
    let (_, projects) = server.get("/ws/v1/quota/projects");
    let total = projects["default"]["total_used"].as_f64().unwrap();
    assert!((total - credits).abs() < 1e-6, "{total} vs {credits}");

    // Exit 3 with output on stderr: the app fails with that status and the
    // stderr tail in its diagnostics; `app run --wait` exits with it.
    let (code, id, stderr) =
        run_and_wait(&server, &["--shell"], &["echo oops on stderr >&2; exit 3"]);
    assert_eq!(code, 3, "{stderr}");
    let (_, report) = server.get(&format!("/ws/v1/cluster/apps/{id}"));
    let app_report = &report["app"];
    assert_eq!(app_report["state"], "FAILED", "{report}");
    assert_eq!(app_report["exitStatus"], 3, "{report}");
    let diagnostics = app_report["diagnostics"].as_str().unwrap_or_default();
    assert!(diagnostics.contains("oops on stderr"), "{diagnostics}");
    let errors = app(&server, &["logs", &id, "--stderr"]);
    assert!(String::from_utf8_lossy(&errors.stdout).contains("oops on stderr"));

    // Retried: the first attempt fails, the second (a marker file exists) succeeds.
    let marker = dir.path().join("attempted");
    let script = format!("test -e {0} && exit 0; touch {0}; exit 7", marker.display());
    let (code, id, stderr) = run_and_wait(&server, &["--shell", "--max-attempts", "2"], &[&script]);
    assert_eq!(code, 0, "{stderr}");
    let (_, report) = server.get(&format!("/ws/v1/cluster/apps/{id}"));
    assert_eq!(report["app"]["failedContainers"], 1, "{report}");

    // A command that does not exist: the container fails with a
    // diagnostic; the agent lives on and runs the next one.
    let (code, id, _) = run_and_wait(&server, &[], &["/no/such/command"]);
    assert_ne!(code, 0);
    let (_, report) = server.get(&format!("/ws/v1/cluster/apps/{id}"));
    assert_eq!(report["app"]["state"], "FAILED", "{report}");
    let (code, _, stderr) = run_and_wait(&server, &[], &["true"]);
    assert_eq!(code, 0, "the agent still runs containers: {stderr}");

    // Monitors are forked by a helper (agent/spawner.rs); killed, the
    // agent forks them itself and containers still run.
    let helper = spawner_of(server.pid()).expect("the agent's monitor spawner");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(helper as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    for _ in 0..2 {
        let (code, _, stderr) = run_and_wait(&server, &[], &["true"]);
        assert_eq!(code, 0, "containers run without the spawner: {stderr}");
    }
    assert_eq!(spawner_of(server.pid()), None, "the dead helper was reaped");

    // Another user may not read the logs.
    let (status, body) = server.get_as(
        &format!("/ws/v1/cluster/apps/{id}/containers"),
        Some("mallory"),
    );
    assert_eq!(status, 403, "{body}");
    server.stop();
}

#[test]
fn a_killed_app_leaves_no_process_behind() {
    let dir = crate::support::shared_tempdir();
    let server = local_agent_server(dir.path());
    let pids = dir.path().join("pids");
    std::fs::create_dir(&pids).unwrap();
    // A child that ignores SIGTERM and a grandchild that escapes into its
    // own session, also ignoring SIGTERM.
    let script = format!(
        "trap '' TERM; setsid sh -c 'trap \"\" TERM; echo \"$CONTAINER_ID $$\" > {0}/grandchild; exec sleep 300' & echo \"$CONTAINER_ID $$\" > {0}/child; sleep 300",
        pids.display()
    );
    let output = app(&server, &["run", "--shell", "--", &script]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let id = String::from_utf8_lossy(&output.stdout).trim().to_string();
    let started = Instant::now();
    while read_pid(&pids.join("grandchild")).is_none() || read_pid(&pids.join("child")).is_none() {
        assert!(started.elapsed() < LIMIT, "the container never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (child, grandchild) = (
        read_pid(&pids.join("child")).unwrap(),
        read_pid(&pids.join("grandchild")).unwrap(),
    );
    assert!(
        alive(child) && alive(grandchild),
        "before the kill: child {child} {:?}, grandchild {grandchild} {:?}; app {}",
        std::fs::read_to_string(format!("/proc/{child}/stat")).ok(),
        std::fs::read_to_string(format!("/proc/{grandchild}/stat")).ok(),
        server.get(&format!("/ws/v1/cluster/apps/{id}")).1
    );
    let killed = app(&server, &["kill", &id]);
    assert!(
        killed.status.success(),
        "{}",
        String::from_utf8_lossy(&killed.stderr)
    );
    let (_, report) = server.get(&format!("/ws/v1/cluster/apps/{id}"));
    assert_eq!(report["app"]["state"], "KILLED", "{report}");
    let nodes = server.get("/ws/v1/cluster/nodes").1;
    let cgroups = nodes["nodes"]["node"][0]["isolation"]
        .as_str()
        .unwrap_or_default()
        .starts_with("cgroup");
    let started = Instant::now();
    while alive(child) || (cgroups && alive(grandchild)) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "left behind: child {} grandchild {}",
            alive(child),
            alive(grandchild)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    if !cgroups {
        // Without cgroups a process that left the group cannot be found.
        eprintln!("no cgroups here: the escaped grandchild {grandchild} is not tracked");
        let _ = Command::new("kill")
            .args(["-KILL", &grandchild.to_string()])
            .status();
    }
    server.stop();
}

fn start_agent(server: &Server, work: &Path) -> Stoppable {
    crate::support::start_agent(&server.base, work, "2048mb,2vcores")
}

#[test]
fn an_agent_killed_with_9_and_restarted_keeps_its_containers() {
    let dir = crate::support::shared_tempdir();
    let server = Server::start_in(
        &dir.path().join("data"),
        &[
            "--set",
            "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms=100",
        ],
    );
    let mut agent = start_agent(&server, dir.path());
    server.wait_for("/ws/v1/cluster/nodes", "the agent", |b| {
        b["nodes"]["node"].as_array().is_some_and(|n| !n.is_empty())
    });
    let started_file = dir.path().join("started");
    let script = format!(
        "echo \"$CONTAINER_ID $$\" > {}; sleep 3; echo done",
        started_file.display()
    );
    let output = app(&server, &["run", "--shell", "--", &script]);
    let id = String::from_utf8_lossy(&output.stdout).trim().to_string();
    let begun = Instant::now();
    while read_pid(&started_file).is_none() {
        assert!(begun.elapsed() < LIMIT, "the container never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = read_pid(&started_file).unwrap();
    agent.kill_9();
    assert!(alive(pid), "the container outlives its agent's kill -9");
    let agent = start_agent(&server, dir.path());
    let app_report = server.wait_for(&format!("/ws/v1/cluster/apps/{id}"), "the app's end", |b| {
        matches!(
            b["app"]["state"].as_str(),
            Some("FINISHED" | "FAILED" | "KILLED")
        )
    });
    assert_eq!(app_report["app"]["state"], "FINISHED", "{app_report}");
    assert_eq!(app_report["app"]["lostContainers"], 0, "{app_report}");
    let logs = app(&server, &["logs", &id]);
    assert!(String::from_utf8_lossy(&logs.stdout).contains("done"));
    drop(agent);
    server.stop();
}

#[test]
fn a_heartbeat_that_frees_a_slot_carries_the_next_launch() {
    // One slot (the agent has 2 vcores, each container takes 2), heartbeats
    // every 3 s: were the next container placed only on a scheduling tick,
    // the agent would hear of it 3 s after the out-of-turn heartbeat that
    // reported the end. Placed on that heartbeat (YARN's NODE_UPDATE), it
    // is in the answer.
    let dir = crate::support::shared_tempdir();
    let server = Server::start_in(
        &dir.path().join("data"),
        &[
            "--set",
            "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms=3000",
            "--set",
            "weft.scheduler.interval-ms=100",
        ],
    );
    let agent = start_agent(&server, dir.path());
    server.wait_for("/ws/v1/cluster/nodes", "the agent", |b| {
        b["nodes"]["node"].as_array().is_some_and(|n| !n.is_empty())
    });
    let (code, id, stderr) = run_and_wait(
        &server,
        &["-n", "4", "--vcores", "2", "--memory", "256mb"],
        &["sleep", "0.3"],
    );
    assert_eq!(code, 0, "{stderr}");
    let (status, body) = server.get(&format!("/ws/v1/cluster/apps/{id}/containers"));
    assert_eq!(status, 200, "{body}");
    let mut finishes: Vec<u64> = body["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["finishTimeMs"].as_u64().expect("every container ended"))
        .collect();
    finishes.sort_unstable();
    assert_eq!(finishes.len(), 4, "{body}");
    for pair in finishes.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(
            gap < 1_500,
            "a container ended {gap} ms after the one before it, which ran 0.3 s: the next launch waited for a regular heartbeat ({body})"
        );
    }
    drop(agent);
    server.stop();
}

#[test]
fn hostile_agent_and_command_fields_are_refused() {
    let server = Server::start(&[]);
    let register = |extra: serde_json::Value| {
        let mut body =
            serde_json::json!({"node_id": "n1", "memory_mb": 4096, "vcores": 4, "running": []});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        server.post_json("/ws/v1/cluster/nodes/register", &body)
    };
    // Only scheme, host and port: a fragment, path or user would let the
    // logs proxy reach another URL.
    for address in [
        "http://127.0.0.1:1/#",
        "http://u:p@127.0.0.1:1",
        "http://h:1/x",
        "file:///etc",
    ] {
        let (status, body) = register(serde_json::json!({"http_address": address}));
        assert_eq!(status, 400, "{address}: {body}");
    }
    let (status, body) = register(serde_json::json!({"logs_secret": "s\r\nX-Injected: 1"}));
    assert_eq!(status, 400, "{body}");
    let (status, body) = register(
        serde_json::json!({"http_address": "http://127.0.0.1:9", "logs_secret": "s3cret"}),
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) = server.post_json(
        "/ws/v1/cluster/nodes/n1/heartbeat",
        &serde_json::json!({"response_id": 0, "running": [], "ended": [
            {"container_id": "c1", "exit_status": i32::MIN, "finished_ms": 0}]}),
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains("ended[0].exit_status"), "{body}");
    // A health report past 2,048 bytes, or health of another shape, is
    // refused whole: the node stays as it was (RUNNING).
    let heartbeat = |health: serde_json::Value| {
        server.post_json(
            "/ws/v1/cluster/nodes/n1/heartbeat",
            &serde_json::json!({"response_id": 0, "running": [], "health": health}),
        )
    };
    let (status, body) =
        heartbeat(serde_json::json!({"healthy": false, "report": "x".repeat(2049)}));
    assert_eq!(status, 400, "{body}");
    assert!(
        body.to_string()
            .contains("health.report is 2049 bytes, but may hold at most 2048 bytes"),
        "{body}"
    );
    // A report forging a log line, or escapes for a terminal.
    let (status, body) = heartbeat(serde_json::json!({"healthy": false,
        "report": "ok\n2026-11-29T10:00:00Z  INFO node registered \u{1b}[31m"}));
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains("no control characters"), "{body}");
    let (status, body) = register(
        serde_json::json!({"http_address": "http://127.0.0.1:9", "logs_secret": "s3cret",
            "health": {"healthy": false, "report": "x".repeat(5000)}}),
    );
    assert_eq!(status, 400, "{body}");
    for odd in [
        serde_json::json!({"healthy": "no"}),
        serde_json::json!({"report": "missing healthy"}),
        serde_json::json!({"healthy": false, "extra": 1}),
    ] {
        let (status, body) = heartbeat(odd.clone());
        assert_eq!(status, 400, "{odd}: {body}");
    }
    let (_, node) = server.get("/ws/v1/cluster/nodes/n1");
    assert_eq!(node["node"]["state"], "RUNNING", "{node}");
    // One exec argument over Linux's 128 KiB would fail at every launch.
    let long = format!("true #{}", "x".repeat(200 << 10));
    let (status, body) = server.post_json(
        "/ws/v1/cluster/apps",
        &serde_json::json!({"project": "p", "asks": [{"count": 1, "memory_mb": 64, "vcores": 1,
            "command": {"shell": long}}]}),
    );
    assert_eq!(status, 400, "{body}");
    server.stop();
}

#[test]
fn a_yarn_client_submits_with_new_application_and_a_submission_context() {
    let dir = crate::support::shared_tempdir();
    let server = local_agent_server(dir.path());
    let new_app = |user: &str| {
        let (status, body) = server.post_json_as(
            "/ws/v1/cluster/apps/new-application",
            &serde_json::json!({}),
            Some(user),
        );
        assert_eq!(status, 200, "{body}");
        assert!(
            body["maximum-resource-capability"]["memory"]
                .as_u64()
                .unwrap()
                > 0
        );
        body["application-id"].as_str().unwrap().to_string()
    };
    let context = |id: &str| {
        serde_json::json!({
            "application-id": id,
            "application-name": "distributed-shell",
            "queue": "default",
            "am-container-spec": {
                "local-resources": {"entry": []},
                "environment": {"entry": [{"key": "WHO", "value": "yarn"}]},
                "commands": {"command": "echo hello $WHO"}
            },
            "unmanaged-AM": false,
            "max-app-attempts": 1,
            "resource": {"memory": 128, "vCores": 1},
            "application-type": "YARN",
            "keep-containers-across-application-attempts": false
        })
    };
    let id = new_app("alice");
    // Only the user it was given to submits under it.
    let (status, body) = server.post_json_as("/ws/v1/cluster/apps", &context(&id), Some("mallory"));
    assert_eq!(status, 403, "{body}");
    let (status, body) = server.post_json_as("/ws/v1/cluster/apps", &context(&id), Some("alice"));
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["app"]["id"], id.as_str());
    // Submitted again (a client retrying after a lost answer or a
    // failover): the same app, not a second one, as YARN answers.
    let (status, body) = server.post_json_as("/ws/v1/cluster/apps", &context(&id), Some("alice"));
    assert_eq!(status, 202, "resubmitted: {body}");
    assert_eq!(body["app"]["id"], id.as_str());
    let (status, body) = server.post_json_as("/ws/v1/cluster/apps", &context(&id), Some("mallory"));
    assert_eq!(status, 409, "another user's app: {body}");
    let (_, apps) = server.get("/ws/v1/cluster/apps");
    assert_eq!(
        apps["apps"]["app"].as_array().map(Vec::len),
        Some(1),
        "submitted once: {apps}"
    );
    let made_up = id.replace("_0001", "_0999");
    let (status, body) =
        server.post_json_as("/ws/v1/cluster/apps", &context(&made_up), Some("alice"));
    assert_eq!(status, 400, "{body}");
    let report = server.wait_for(&format!("/ws/v1/cluster/apps/{id}"), "the app's end", |b| {
        matches!(
            b["app"]["state"].as_str(),
            Some("FINISHED" | "FAILED" | "KILLED")
        )
    });
    assert_eq!(report["app"]["finalStatus"], "SUCCEEDED", "{report}");
    assert_eq!(report["app"]["user"], "alice", "{report}");
    let logs = app(&server, &["logs", &id, "--user", "alice"]);
    assert!(
        String::from_utf8_lossy(&logs.stdout).contains("hello yarn"),
        "{}",
        String::from_utf8_lossy(&logs.stderr)
    );
    server.stop();
}

#[test]
fn the_local_agent_launches_what_is_placed_without_waiting_for_its_heartbeat() {
    // Heartbeats ten minutes apart: a launch that waited for the agent's
    // next heartbeat, rather than being told of the placement at once,
    // would not come within the limit below.
    let dir = crate::support::shared_tempdir();
    let (server, _) = registered_local_agent(
        dir.path(),
        &[
            "--set",
            "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms=600000",
        ],
    );
    run_six_short_containers(&server, "the local agent");
}

#[test]
fn a_remote_agent_launches_what_is_placed_without_waiting_for_its_heartbeat() {
    // As the local agent's test above, for `weft agent` over HTTP: its wait
    // for orders, held open beside the heartbeats, ends when the round
    // places containers on its node, and it heartbeats for them at once.
    let dir = crate::support::shared_tempdir();
    let server = Server::start_in(
        &dir.path().join("data"),
        &[
            "--set",
            "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms=600000",
        ],
    );
    let agent = start_agent(&server, dir.path());
    server.wait_for("/ws/v1/cluster/nodes", "the agent", |b| {
        b["nodes"]["node"].as_array().is_some_and(|n| !n.is_empty())
    });
    for round in [
        "the remote agent, first app",
        "the remote agent, second app",
    ] {
        run_six_short_containers(&server, round);
    }
    drop(agent);
    server.stop();
}

#[test]
fn waits_for_orders_and_for_an_apps_end_are_owned_bounded_and_end_when_awaited() {
    let server = Server::start(&[]);
    let (status, body) = server.post_json_as(
        "/ws/v1/cluster/nodes/register",
        &serde_json::json!({"node_id": "n1", "memory_mb": 4096, "vcores": 4, "running": []}),
        Some("nm"),
    );
    assert_eq!(status, 200, "{body}");
    let orders = "/ws/v1/cluster/nodes/n1/orders-waiting";
    let (status, body) = server.get_as(&format!("{orders}?wait_ms=30001"), Some("nm"));
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains("wait_ms"), "{body}");
    let (status, body) = server.get_as(&format!("{orders}?wait_ms=10"), Some("someone-else"));
    assert_eq!(
        status, 403,
        "only the node's registrant waits for its orders: {body}"
    );
    let (status, body) = server.get_as(
        "/ws/v1/cluster/nodes/nobody-registered/orders-waiting?wait_ms=10",
        Some("nm"),
    );
    assert_eq!(status, 404, "{body}");
    let (status, body) = server.get_as(&format!("{orders}?wait_ms=10"), Some("nm"));
    assert_eq!(
        (status, &body["orders_waiting"]),
        (200, &serde_json::json!(false)),
        "{body}"
    );

    // A wait held open ends when a container is placed on the node; a
    // second one meanwhile is refused.
    std::thread::scope(|scope| {
        let held = scope.spawn(|| {
            let begun = Instant::now();
            let answer = server.get_as(&format!("{orders}?wait_ms=30000"), Some("nm"));
            (answer, begun.elapsed())
        });
        std::thread::sleep(Duration::from_millis(300));
        let (status, body) = server.get_as(&format!("{orders}?wait_ms=10"), Some("nm"));
        assert_eq!(status, 409, "one wait per node: {body}");
        server.submit("p", 1, 60_000);
        let ((status, body), waited) = held.join().unwrap();
        assert_eq!(
            (status, &body["orders_waiting"]),
            (200, &serde_json::json!(true)),
            "{body}"
        );
        assert!(
            waited < Duration::from_secs(25),
            "the placement ended the wait ({waited:?})"
        );
    });
    // Until a heartbeat's answer carries the placement, a wait answers at
    // once; after it, it waits again.
    let (status, body) = server.get_as(&format!("{orders}?wait_ms=30000"), Some("nm"));
    assert_eq!(
        (status, &body["orders_waiting"]),
        (200, &serde_json::json!(true)),
        "{body}"
    );
    let (status, body) = server.post_json_as(
        "/ws/v1/cluster/nodes/n1/heartbeat",
        &serde_json::json!({"response_id": 0, "running": []}),
        Some("nm"),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["allocations"].as_array().map(Vec::len),
        Some(1),
        "{body}"
    );
    let (status, body) = server.get_as(&format!("{orders}?wait_ms=10"), Some("nm"));
    assert_eq!(
        (status, &body["orders_waiting"]),
        (200, &serde_json::json!(false)),
        "{body}"
    );

    // An app's state, waited for: bounded, and answered when it ends.
    let app = server.submit("p", 1, 60_000);
    let state = format!("/ws/v1/cluster/apps/{app}/state");
    let (status, body) = server.get(&format!("{state}?wait_ms=30001"));
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains("wait_ms"), "{body}");
    let (status, body) = server.get(&format!("{state}?wait_ms=10"));
    assert_eq!(status, 200, "{body}");
    assert!(
        matches!(body["state"].as_str(), Some("ACCEPTED" | "RUNNING")),
        "{body}"
    );
    let (status, body) = server.get("/ws/v1/cluster/apps/application_1_9999/state?wait_ms=10");
    assert_eq!(status, 404, "{body}");
    std::thread::scope(|scope| {
        let held = scope.spawn(|| {
            let begun = Instant::now();
            (
                server.get(&format!("{state}?wait_ms=30000")),
                begun.elapsed(),
            )
        });
        std::thread::sleep(Duration::from_millis(300));
        kill_app(&server, &state);
        let (answer, waited) = held.join().unwrap();
        assert_killed(&answer);
        assert!(
            waited < Duration::from_secs(25),
            "the kill ended the wait ({waited:?})"
        );
    });
    server.stop();
}

#[test]
fn waits_end_within_the_servers_idle_timeout_rather_than_be_cut() {
    // A connection silent for weft.http.idle-timeout-ms is closed: a wait
    // longer than that answers before it, as if it had run out.
    let server = Server::start(&["--set", "weft.http.idle-timeout-ms=600"]);
    let (status, body) = server.post_json_as(
        "/ws/v1/cluster/nodes/register",
        &serde_json::json!({"node_id": "n1", "memory_mb": 4096, "vcores": 4, "running": []}),
        Some("nm"),
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) = server.get_as(
        "/ws/v1/cluster/nodes/n1/orders-waiting?wait_ms=5000",
        Some("nm"),
    );
    assert_eq!(
        (status, &body["orders_waiting"]),
        (200, &serde_json::json!(false)),
        "{body}"
    );
    // An app that does not end within the wait: its state, not a cut.
    let app = server.submit("p", 1, 60_000);
    let (status, body) = server.get(&format!("/ws/v1/cluster/apps/{app}/state?wait_ms=5000"));
    assert_eq!(status, 200, "{body}");
    assert!(
        matches!(body["state"].as_str(), Some("ACCEPTED" | "RUNNING")),
        "{body}"
    );
    server.stop();
}

#[test]
fn waits_beyond_the_servers_places_for_them_are_only_looks() {
    // weft.http.max-waiting-requests: one wait holds the only place; the
    // next answers at once with the state now, and the place is free again
    // once the first is answered.
    let server = Server::start(&["--set", "weft.http.max-waiting-requests=1"]);
    let app = server.submit("p", 1, 60_000);
    let state = format!("/ws/v1/cluster/apps/{app}/state");
    std::thread::scope(|scope| {
        let held = scope.spawn(|| server.get(&format!("{state}?wait_ms=30000")));
        std::thread::sleep(Duration::from_millis(300));
        let begun = Instant::now();
        let (status, body) = server.get(&format!("{state}?wait_ms=30000"));
        assert_eq!(status, 200, "{body}");
        assert!(
            matches!(body["state"].as_str(), Some("ACCEPTED" | "RUNNING")),
            "{body}"
        );
        assert!(
            begun.elapsed() < Duration::from_secs(10),
            "a wait without a place answers at once ({:?})",
            begun.elapsed()
        );
        kill_app(&server, &state);
        assert_killed(&held.join().unwrap());
    });
    // The place is free again: a wait on a second app waits (here until
    // its short wait runs out).
    let other = server.submit("p", 1, 60_000);
    let begun = Instant::now();
    let (status, body) = server.get(&format!("/ws/v1/cluster/apps/{other}/state?wait_ms=1500"));
    assert_eq!(status, 200, "{body}");
    assert!(
        begun.elapsed() >= Duration::from_millis(1_000),
        "the freed place was taken and the wait held ({:?})",
        begun.elapsed()
    );
    server.stop();
}

/// Kills the app whose state resource is `state`, as YARN's
/// `PUT …/apps/{id}/state {"state": "KILLED"}`.
fn kill_app(server: &Server, state: &str) {
    let (status, body) = server.request(
        "PUT",
        state,
        &[("content-type", "application/json")],
        Some(br#"{"state": "KILLED"}"#),
    );
    assert_eq!(status, 200, "{body}");
}

/// The answer to a wait on an app that was killed meanwhile.
fn assert_killed((status, body): &(u16, serde_json::Value)) {
    assert_eq!(
        (*status, &body["state"]),
        (200, &serde_json::json!("KILLED")),
        "{body}"
    );
}

/// Runs six containers of `true` with `--wait`; fails (saying `what`) if
/// they do not all succeed within a minute — far less than the ten-minute
/// heartbeat interval of the tests above.
fn run_six_short_containers(server: &Server, what: &str) {
    let ran = weft_within(
        &[
            "app",
            "run",
            "--server",
            &server.base,
            "-n",
            "6",
            "--vcores",
            "1",
            "--memory",
            "64mb",
            "--wait",
            "--",
            "true",
        ],
        Duration::from_secs(60),
    );
    assert!(
        ran.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&ran.stderr)
    );
}

#[test]
fn a_container_without_network_reaches_no_service_of_the_node() {
    let dir = crate::support::shared_tempdir();
    let (server, nodes) = registered_local_agent(
        dir.path(),
        &[
            "--set",
            "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms=100",
            "--set",
            "weft.agent.container-network=none",
        ],
    );
    let isolation = nodes["nodes"]["node"][0]["isolation"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if !isolation.contains("network: a loopback of its own") {
        // Not root, or no namespaces: the agent would have refused to start.
        eprintln!("note: no network namespaces here ({isolation}); skipped");
        return;
    }
    // The server's own port on the node's loopback is out of reach, and so
    // is a service of the node's on a Unix socket in /var/tmp (a network
    // namespace does not cover sockets at paths: /run and /var/tmp are its
    // own); its own loopback works (processes of one container still
    // talk), and it sees no interface but that loopback.
    let port = server.base.rsplit(':').next().expect("a port");
    let socket_path = format!("/var/tmp/weft-test-{}.sock", std::process::id());
    let _ = std::fs::remove_file(&socket_path);
    let host_service = std::os::unix::net::UnixListener::bind(&socket_path).expect("bind");
    std::fs::set_permissions(
        &socket_path,
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .expect("chmod");
    let probe = format!(
        "import socket\n\
         try:\n    socket.create_connection(('127.0.0.1', {port}), timeout=5); print('reached the server')\n\
         except OSError as error:\n    print('server unreachable:', type(error).__name__)\n\
         try:\n    socket.socket(socket.AF_UNIX).connect('{socket_path}'); print('reached the node')\n\
         except OSError as error:\n    print('path socket unreachable:', type(error).__name__)\n\
         listener = socket.socket(); listener.bind(('127.0.0.1', 0)); listener.listen()\n\
         socket.create_connection(listener.getsockname(), timeout=5); print('own loopback works')\n\
         print('interfaces:', ' '.join(line.split(':')[0].strip() for line in open('/proc/net/dev').readlines()[2:]))\n"
    );
    let (code, id, stderr) = run_and_wait(&server, &[], &["/usr/bin/python3", "-c", &probe]);
    assert_eq!(code, 0, "{stderr}");
    let logs = app(&server, &["logs", &id]);
    let stdout = String::from_utf8_lossy(&logs.stdout);
    drop(host_service);
    let _ = std::fs::remove_file(&socket_path);
    assert!(stdout.contains("server unreachable"), "{stdout}");
    assert!(stdout.contains("path socket unreachable"), "{stdout}");
    assert!(stdout.contains("own loopback works"), "{stdout}");
    assert!(stdout.contains("interfaces: lo\n"), "{stdout}");
}

#[test]
fn the_log_monitor_kills_a_container_whose_logs_outgrow_their_limit() {
    let dir = crate::support::shared_tempdir();
    let (server, _) = registered_local_agent(
        dir.path(),
        &[
            "--set",
            "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms=100",
            "--set",
            "yarn.nodemanager.container-log-monitor.interval-ms=200",
            "--set",
            "yarn.nodemanager.container-log-monitor.dir-size-limit-bytes=1000000",
        ],
    );
    let started = Instant::now();
    let (code, id, stderr) = run_and_wait(
        &server,
        &["--shell"],
        &["head -c 5000000 /dev/urandom > \"$LOG_DIRS/big\"; sleep 60"],
    );
    assert_ne!(code, 0, "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(45),
        "not killed: it slept on"
    );
    let (_, report) = server.get(&format!("/ws/v1/cluster/apps/{id}"));
    let app_report = &report["app"];
    assert_eq!(app_report["state"], "FAILED", "{report}");
    assert_eq!(app_report["exitStatus"], -109, "{report}");
    let diagnostics = app_report["diagnostics"].as_str().unwrap_or_default();
    assert!(
        diagnostics.contains("container log monitor's limit (1000000 bytes"),
        "{diagnostics}"
    );
}

/// YARN's node health script through `weft serve`: an ERROR line in its
/// output makes the local agent's node UNHEALTHY (the REST node, YARN's
/// metrics, `?states=`), an app waits rather than run there, and once the
/// script passes again the node is RUNNING and the app runs.
#[test]
fn an_unhealthy_node_gets_no_containers_until_its_health_script_passes() {
    use std::os::unix::fs::PermissionsExt;
    let dir = crate::support::shared_tempdir();
    let state = dir.path().join("health-state");
    std::fs::write(&state, "ERROR disk /data is failing\n").unwrap();
    let script = dir.path().join("check-health.sh");
    std::fs::write(&script, format!("#!/bin/sh\ncat '{}'\n", state.display())).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (server, _) = registered_local_agent(
        dir.path(),
        &[
            "--set",
            "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms=100",
            "--set",
            &format!(
                "yarn.nodemanager.health-checker.script.path={}",
                script.display()
            ),
            "--set",
            "yarn.nodemanager.health-checker.interval-ms=200",
        ],
    );
    let nodes = server.wait_for("/ws/v1/cluster/nodes", "an unhealthy node", |b| {
        b["nodes"]["node"][0]["state"] == "UNHEALTHY"
    });
    assert_eq!(
        nodes["nodes"]["node"][0]["healthReport"],
        "the health script says: ERROR disk /data is failing",
        "{nodes}"
    );
    let (_, metrics) = server.get("/ws/v1/cluster/metrics");
    assert_eq!(metrics["clusterMetrics"]["unhealthyNodes"], 1, "{metrics}");
    assert_eq!(metrics["clusterMetrics"]["activeNodes"], 0, "{metrics}");
    let (_, running) = server.get("/ws/v1/cluster/nodes?states=RUNNING");
    assert_eq!(running["nodes"]["node"], serde_json::json!([]), "{running}");
    let listed = crate::support::weft_stdout(&["node", "list", "--server", &server.base]);
    assert!(listed.contains("UNHEALTHY"), "{listed}");
    assert!(listed.contains("ERROR disk /data is failing"), "{listed}");

    let app = crate::support::weft_stdout(&[
        "app",
        "run",
        "--server",
        &server.base,
        "--memory",
        "64mb",
        "--",
        "true",
    ])
    .trim()
    .to_string();
    // Several heartbeats and rounds: nothing is placed on the node.
    std::thread::sleep(Duration::from_millis(1500));
    let (_, report) = server.get(&format!("/ws/v1/cluster/apps/{app}"));
    assert_eq!(report["app"]["state"], "ACCEPTED", "{report}");
    assert_eq!(report["app"]["runningContainers"], 0, "{report}");
    let why = report["app"]["diagnostics"].as_str().unwrap_or_default();
    assert!(
        why.contains("1 node is unhealthy and takes no new containers (")
            && why.ends_with(": the health script says: ERROR disk /data is failing)"),
        "{report}"
    );
    // Its room is not the cluster's while it is unhealthy.
    let (_, metrics) = server.get("/ws/v1/cluster/metrics");
    assert_eq!(metrics["clusterMetrics"]["totalMB"], 0, "{metrics}");
    assert_eq!(metrics["clusterMetrics"]["availableMB"], 0, "{metrics}");

    std::fs::write(&state, "all well\n").unwrap();
    let nodes = server.wait_for("/ws/v1/cluster/nodes", "a healthy node", |b| {
        b["nodes"]["node"][0]["state"] == "RUNNING"
    });
    assert_eq!(nodes["nodes"]["node"][0]["healthReport"], "", "{nodes}");
    server.wait_for(
        &format!("/ws/v1/cluster/apps/{app}"),
        "the app to run",
        |b| b["app"]["state"] == "FINISHED",
    );
}

/// The disk checker: a standalone agent whose dirs' disk has less free
/// than `min-free-space-per-disk-mb` registers UNHEALTHY, with YARN's name
/// for each dir in the report.
#[test]
fn an_agent_whose_disk_is_too_full_registers_unhealthy() {
    let dir = crate::support::shared_tempdir();
    let server = Server::start_in(&dir.path().join("data"), &[]);
    let agent = crate::support::weft_command()
        .args(["agent", "--server", &server.base, "--node-id", "full-disk"])
        .args(["--resources", "2048mb,2vcores"])
        .arg("--work-dir")
        .arg(dir.path().join("work"))
        .arg("--log-dir")
        .arg(dir.path().join("logs"))
        .args([
            "--set",
            "yarn.nodemanager.disk-health-checker.min-free-space-per-disk-mb=1099511627776",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("weft agent starts");
    let agent = Stoppable(agent);
    let nodes = server.wait_for("/ws/v1/cluster/nodes/full-disk", "the agent", |b| {
        b["node"]["state"] == "UNHEALTHY"
    });
    let report = nodes["node"]["healthReport"].as_str().unwrap_or_default();
    for kind in ["local-dirs", "log-dirs"] {
        assert!(report.contains(&format!("{kind} ")), "{report}");
    }
    assert!(
        report.contains("MB free, below the minimum of 1099511627776 MB"),
        "{report}"
    );
    drop(agent);
}

/// YARN's graceful decommission through `weft serve` and the CLI: the
/// node takes no new containers, what it runs goes on until the timeout
/// and is then killed and asked for again, and a recommission puts it
/// back to work. Only administrators may do either.
#[test]
fn a_decommissioned_node_runs_out_its_containers_then_takes_work_again_when_recommissioned() {
    let dir = crate::support::shared_tempdir();
    let (server, nodes) = registered_local_agent(
        dir.path(),
        &[
            "--set",
            "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms=100",
            "--set",
            "yarn.admin.acl=admin",
        ],
    );
    let node = nodes["nodes"]["node"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    // `weft ARGS --server … --user USER [-- COMMAND]`.
    let weft_as = |user: &str, args: &[&str]| {
        let (args, command) = match args.iter().position(|a| *a == "--") {
            Some(at) => args.split_at(at),
            None => (args, &[][..]),
        };
        let mut all = args.to_vec();
        all.extend(["--server", &server.base, "--user", user]);
        all.extend_from_slice(command);
        weft_within(&all, LIMIT)
    };
    let long = String::from_utf8(
        weft_as(
            "alice",
            &["app", "run", "--memory", "64mb", "--", "sleep", "300"],
        )
        .stdout,
    )
    .unwrap()
    .trim()
    .to_string();
    server.wait_for(&format!("/ws/v1/cluster/apps/{long}"), "it to run", |b| {
        b["app"]["runningContainers"] == 1
    });

    let refused = weft_as("alice", &["node", "decommission", &node]);
    assert!(
        !refused.status.success(),
        "only administrators decommission"
    );
    let done = weft_as("admin", &["node", "decommission", &node, "--timeout", "3"]);
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert!(
        String::from_utf8_lossy(&done.stderr).contains("DECOMMISSIONING"),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let (_, listed) = server.get(&format!("/ws/v1/cluster/nodes/{}", node));
    assert_eq!(listed["node"]["state"], "DECOMMISSIONING", "{listed}");
    assert!(
        listed["node"]["decommissionDeadlineMs"].as_u64().is_some(),
        "{listed}"
    );
    let table = String::from_utf8(weft_as("alice", &["node", "list"]).stdout).unwrap();
    assert!(
        table.contains("decommissioning; what still runs is killed at"),
        "{table}"
    );
    // Nothing new goes there while it runs out.
    let short = String::from_utf8(
        weft_as("alice", &["app", "run", "--memory", "64mb", "--", "true"]).stdout,
    )
    .unwrap()
    .trim()
    .to_string();
    std::thread::sleep(Duration::from_millis(1000));
    let (_, report) = server.get(&format!("/ws/v1/cluster/apps/{short}"));
    assert_eq!(report["app"]["state"], "ACCEPTED", "{report}");
    let why = report["app"]["diagnostics"].as_str().unwrap_or_default();
    assert!(why.contains("1 node is decommissioned"), "{report}");

    // At the timeout the sleeper is killed (ABORTED, asked for again) and
    // the node is DECOMMISSIONED, its process gone.
    let gone = server.wait_for("/ws/v1/cluster/metrics", "the node decommissioned", |b| {
        b["clusterMetrics"]["decommissionedNodes"] == 1
    });
    assert_eq!(gone["clusterMetrics"]["activeNodes"], 0, "{gone}");
    let (_, report) = server.get(&format!("/ws/v1/cluster/apps/{long}"));
    assert_eq!(report["app"]["runningContainers"], 0, "{report}");
    let (_, containers) = server.get(&format!("/ws/v1/cluster/apps/{long}/containers"));
    assert!(containers.to_string().contains("-100"), "{containers}");

    let back = weft_as("admin", &["node", "recommission", &node]);
    assert!(
        back.status.success(),
        "{}",
        String::from_utf8_lossy(&back.stderr)
    );
    server.wait_for(
        &format!("/ws/v1/cluster/apps/{short}"),
        "the app to run",
        |b| b["app"]["state"] == "FINISHED",
    );
    server.wait_for(
        &format!("/ws/v1/cluster/apps/{long}"),
        "the sleeper again",
        |b| b["app"]["runningContainers"] == 1,
    );
    let killed = weft_as("alice", &["app", "kill", &long]);
    assert!(
        killed.status.success(),
        "{}",
        String::from_utf8_lossy(&killed.stderr)
    );
}
