//! Faults around node agents, through the real binary with real processes:
//! a container over its memory limit, an agent whose work dir cannot be
//! used, an agent paused past its expiry and resumed, heartbeat answers lost
//! or delivered twice, and users an agent must not run containers as.
//! Loopback only; every test stops what it started, by pid.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::support::{Server, Stoppable, alive, weft, weft_command, weft_within};

/// A generous bound for a `weft` command that must finish (not a timing
/// assertion: a regression fails instead of hanging the suite).
const LIMIT: Duration = Duration::from_secs(20);

/// Polls `probe` every 20 ms until it gives a value, or panics after
/// `within` saying what was awaited and what `last` says now.
pub(crate) fn poll<T>(
    what: &str,
    within: Duration,
    mut probe: impl FnMut() -> Option<T>,
    last: impl Fn() -> String,
) -> T {
    let started = Instant::now();
    loop {
        if let Some(value) = probe() {
            return value;
        }
        assert!(
            started.elapsed() < within,
            "timed out after {within:?} waiting for {what}; {}",
            last()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(crate) fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

pub(crate) fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// `weft app run --server BASE FLAGS -- COMMAND`, to completion.
pub(crate) fn app_run(server: &Server, flags: &[&str], command: &[&str]) -> Output {
    let mut args = vec!["app", "run", "--server", &server.base];
    args.extend_from_slice(flags);
    args.push("--");
    args.extend_from_slice(command);
    weft_within(&args, LIMIT)
}

/// The nodes the server knows now.
pub(crate) fn nodes(server: &Server) -> Vec<Value> {
    server.get("/ws/v1/cluster/nodes?states=RUNNING").1["nodes"]["node"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// A standalone `weft agent` `node_id` for `server`, its work and log dirs
/// under `dir`, its log (stderr) in `dir/agent.log`.
pub(crate) fn start_agent(server: &Server, dir: &Path, node_id: &str) -> Stoppable {
    let child = weft_command()
        .args(["agent", "--server", &server.base, "--node-id", node_id])
        .args(["--resources", "2048mb,2vcores"])
        .arg("--work-dir")
        .arg(dir.join("work"))
        .arg("--log-dir")
        .arg(dir.join("logs"))
        .stdout(Stdio::null())
        .stderr(Stdio::from(
            std::fs::File::create(dir.join("agent.log")).unwrap(),
        ))
        .spawn()
        .expect("weft agent starts");
    Stoppable(child)
}

/// The agent's and the server's logs in `dir` (`agent.log`, `server.log`),
/// for a failure's message.
pub(crate) fn logs_in(dir: &Path) -> String {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default();
    format!(
        "\n--- agent log ---\n{}\n--- server log ---\n{}",
        read("agent.log"),
        read("server.log")
    )
}

/// Containers that wrote "CONTAINER_ID PID" lines to a file, their pids as
/// the host knows them (found while they run, then remembered): on drop,
/// any such process still alive (and still that container: its
/// environment says so) is killed, so a failing test leaves none behind.
pub(crate) struct Launches(pub(crate) PathBuf, std::cell::RefCell<Vec<(String, u32)>>);

impl Launches {
    pub(crate) fn new(path: PathBuf) -> Launches {
        Launches(path, Default::default())
    }

    pub(crate) fn read(&self) -> Vec<(String, u32)> {
        let mut known = self.1.borrow_mut();
        for line in std::fs::read_to_string(&self.0).unwrap_or_default().lines() {
            let Some((id, pid)) = line.split_once(' ') else {
                continue;
            };
            if known.iter().any(|(seen, _)| seen == id) {
                continue;
            }
            // What the container called itself, as the host knows it.
            if let Some(pid) = pid
                .trim()
                .parse()
                .ok()
                .and_then(|inner| crate::support::host_pid(id, inner))
            {
                known.push((id.to_string(), pid));
            }
        }
        known.clone()
    }
}

impl Drop for Launches {
    fn drop(&mut self) {
        for (id, pid) in self.read() {
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            let marker = format!("CONTAINER_ID={id}");
            let ours = environ
                .split(|b| *b == 0)
                .any(|var| var == marker.as_bytes());
            if ours && alive(pid) {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
            }
        }
    }
}

// 1. A container that allocates past its memory limit.

#[test]
fn a_container_over_its_memory_limit_ends_killed_exceeded_pmem() {
    let dir = crate::support::shared_tempdir();
    let server = Server::start_with_local_agent(
        &dir.path().join("data"),
        &[
            "--set",
            "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms=100",
        ],
        None,
    );
    let node = poll(
        "the local agent",
        Duration::from_secs(10),
        || nodes(&server).into_iter().next(),
        || format!("{:?}", nodes(&server)),
    );
    let isolation = node["isolation"].as_str().unwrap_or_default().to_string();
    // `tail` keeps everything since the last newline: /dev/zero has none.
    let hog = ["sh", "-c", "head -c 300M /dev/zero | tail"];
    if !isolation.starts_with("cgroup") {
        eprintln!(
            "note: no cgroups here ({isolation}); the memory limit is not enforced, its assertions skipped"
        );
        server.stop();
        return;
    }
    let output = app_run(
        &server,
        &["--wait", "--memory", "64mb", "--max-attempts", "2"],
        &hog,
    );
    // -104 is not a process's own status: `--wait` exits 1.
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let id = stdout(&output);
    let (_, report) = server.get(&format!("/ws/v1/cluster/apps/{id}"));
    let app = &report["app"];
    assert_eq!(app["state"], "FAILED", "{report}");
    assert_eq!(app["finalStatus"], "FAILED", "{report}");
    assert_eq!(app["exitStatus"], -104, "{report}");
    assert_eq!(app["failedContainers"], 2, "each attempt ran: {report}");
    let diagnostics = app["diagnostics"].as_str().unwrap_or_default();
    assert!(
        diagnostics.contains("killed for exceeding its memory limit of 64 MB"),
        "{diagnostics}"
    );
    let (_, containers) = server.get(&format!("/ws/v1/cluster/apps/{id}/containers"));
    let containers = containers["containers"].as_array().unwrap().clone();
    assert_eq!(containers.len(), 2, "{containers:?}");
    for container in &containers {
        assert_eq!(container["exitStatus"], -104, "{container}");
        assert!(
            container["diagnostics"]
                .as_str()
                .is_some_and(|d| d.contains("memory limit of 64 MB")),
            "{container}"
        );
    }
    // The node lives on: the same command with room enough succeeds.
    let output = app_run(&server, &["--wait", "--memory", "1gb"], &hog);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    server.stop();
}

// 2. A work dir (or log dir) that cannot be used.

#[test]
fn an_agent_whose_dirs_cannot_be_used_exits_at_once_naming_them() {
    let dir = crate::support::shared_tempdir();
    let server = Server::start(&[]);
    // Tests run as root, whom permissions do not stop: a path below a
    // regular file can be neither created nor written.
    let file = dir.path().join("a-file");
    std::fs::write(&file, "not a directory").unwrap();
    let below = file.join("work");
    let fine = dir.path().join("fine");
    for (flag, bad, other_flag) in [
        ("--work-dir", &below, "--log-dir"),
        ("--log-dir", &below, "--work-dir"),
    ] {
        let started = Instant::now();
        let output = weft_within(
            &[
                "agent",
                "--server",
                &server.base,
                "--node-id",
                "unusable",
                "--resources",
                "1024mb,1vcores",
                flag,
                bad.to_str().unwrap(),
                other_flag,
                fine.join(flag.trim_start_matches('-')).to_str().unwrap(),
            ],
            LIMIT,
        );
        let message = stderr(&output);
        assert!(!output.status.success(), "{flag}: {output:?}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{flag}: took {:?}",
            started.elapsed()
        );
        assert!(
            message.contains(bad.to_str().unwrap()),
            "{flag}: the message names the dir: {message}"
        );
        let role = if flag == "--work-dir" {
            "work dir"
        } else {
            "log dir"
        };
        assert!(message.contains(role), "{flag}: {message}");
    }
    assert!(
        nodes(&server).is_empty(),
        "no agent registered: {:?}",
        nodes(&server)
    );
    server.stop();
}

// 3. An agent paused (SIGSTOP) past its expiry, then resumed.

#[test]
fn an_agent_paused_past_its_expiry_comes_back_and_its_stale_container_is_killed() {
    let dir = crate::support::shared_tempdir();
    let server = Server::start_logging(
        &dir.path().join("data"),
        &[
            "--set",
            "yarn.nm.liveness-monitor.expiry-interval-ms=1500",
            "--set",
            "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms=100",
            // Nodes are expired at QUOTA_COMPUTE.
            "--set",
            "yarn.resourcemanager.quota.scheduling.period=200",
        ],
        Some(&dir.path().join("server.log")),
    );
    let logs = || logs_in(dir.path());
    let agent = start_agent(&server, dir.path(), "paused");
    let launches = Launches::new(dir.path().join("launches"));
    let registered = |server: &Server| nodes(server).iter().any(|n| n["id"] == "paused");
    poll(
        "the agent to register",
        Duration::from_secs(10),
        || registered(&server).then_some(()),
        logs,
    );
    let script = format!(
        "echo \"$CONTAINER_ID $$\" >> {}; exec sleep 60",
        launches.0.display()
    );
    let output = app_run(&server, &["--shell"], &[&script]);
    assert!(output.status.success(), "{}", stderr(&output));
    let app = stdout(&output);
    let app_path = format!("/ws/v1/cluster/apps/{app}");
    let (old_id, old_pid) = poll(
        "the container to start",
        Duration::from_secs(10),
        || launches.read().into_iter().next(),
        logs,
    );
    assert!(alive(old_pid));

    agent.signal("STOP");
    poll(
        "the paused agent's node to expire",
        Duration::from_secs(10),
        || (!registered(&server)).then_some(()),
        || format!("nodes {:?}", nodes(&server)),
    );
    let report = poll(
        "the container to be lost and asked for again",
        Duration::from_secs(5),
        || {
            let (_, body) = server.get(&app_path);
            let lost = body["app"]["lostContainers"].as_u64().unwrap_or(0) >= 1;
            let pending = body["app"]["pendingContainers"].as_u64().unwrap_or(0) >= 1;
            (lost && pending).then_some(body)
        },
        || format!("{}", server.get(&app_path).1),
    );
    assert_eq!(report["app"]["state"], "RUNNING", "{report}");
    assert_eq!(report["app"]["runningContainers"], 0, "{report}");
    assert!(
        alive(old_pid),
        "a paused agent's container runs on regardless"
    );
    // YARN lists the node as LOST until it registers again.
    let (status, lost) = server.get("/ws/v1/cluster/nodes/paused");
    assert_eq!(status, 200, "{lost}");
    assert_eq!(lost["node"]["state"], "LOST", "{lost}");
    assert_eq!(lost["node"]["numContainers"], 0, "{lost}");
    let (_, listed) = server.get("/ws/v1/cluster/nodes?states=LOST");
    assert_eq!(listed["nodes"]["node"][0]["id"], "paused", "{listed}");
    let (_, metrics) = server.get("/ws/v1/cluster/metrics");
    assert_eq!(metrics["clusterMetrics"]["lostNodes"], 1, "{metrics}");
    assert_eq!(metrics["clusterMetrics"]["activeNodes"], 0, "{metrics}");

    agent.signal("CONT");
    poll(
        "the agent to register again",
        Duration::from_secs(5),
        || registered(&server).then_some(()),
        logs,
    );
    let (_, again) = server.get("/ws/v1/cluster/nodes/paused");
    assert_eq!(again["node"]["state"], "RUNNING", "{again}");
    let (_, metrics) = server.get("/ws/v1/cluster/metrics");
    assert_eq!(metrics["clusterMetrics"]["lostNodes"], 0, "{metrics}");
    // Told at its registration to kill what the node no longer holds.
    poll(
        "the stale container's process to be killed",
        Duration::from_secs(5),
        || (!alive(old_pid)).then_some(()),
        logs,
    );
    // The container asked for again runs on the only node there is, under
    // a new id.
    let (new_id, new_pid) = poll(
        "the container asked for again to start",
        Duration::from_secs(10),
        || launches.read().into_iter().nth(1),
        logs,
    );
    assert_ne!(new_id, old_id);
    assert!(alive(new_pid));
    let report = poll(
        "the new container to be reported running",
        Duration::from_secs(5),
        || {
            let (_, body) = server.get(&app_path);
            (body["app"]["runningContainers"] == 1).then_some(body)
        },
        || format!("{}", server.get(&app_path).1),
    );
    let info = &report["app"];
    assert_eq!(info["state"], "RUNNING", "{report}");
    assert_eq!(info["lostContainers"], 1, "{report}");
    assert_eq!(
        info["failedContainers"], 0,
        "killing the stale one is no failure: {report}"
    );
    assert_eq!(info["pendingContainers"], 0, "{report}");
    let (_, containers) = server.get(&format!("{app_path}/containers"));
    let containers = containers["containers"].as_array().unwrap().clone();
    assert_eq!(containers.len(), 2, "{containers:?}");
    let record = |id: &str| {
        containers
            .iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("{id} in {containers:?}"))
            .clone()
    };
    assert_eq!(record(&old_id)["exitStatus"], -100, "{containers:?}");
    let new = record(&new_id);
    assert_eq!(new["node"], "paused", "{new}");
    assert!(new.get("exitStatus").is_none(), "{new}");
    // Once the kill is done, only the new container runs, and once.
    assert_eq!(launches.read().len(), 2, "{:?}", launches.read());
    let node = nodes(&server)
        .into_iter()
        .find(|n| n["id"] == "paused")
        .unwrap();
    assert_eq!(node["numContainers"], 1, "{node}");

    let killed = weft_within(&["app", "kill", &app, "--server", &server.base], LIMIT);
    assert!(killed.status.success(), "{}", stderr(&killed));
    poll(
        "the new container's process to be killed with its app",
        Duration::from_secs(5),
        || (!alive(new_pid)).then_some(()),
        logs,
    );
    drop(agent);
    server.stop();
}

// 4. A heartbeat answer lost (the heartbeat sent again) and an end
//    reported twice.

#[test]
fn a_heartbeat_sent_twice_gets_the_same_answer_and_an_end_is_charged_once() {
    let server = Server::start(&[
        "--set",
        "yarn.resourcemanager.quota.scheduling.period=100",
        "--set",
        "yarn.resourcemanager.quota.min.runtime=0",
    ]);
    let (status, body) = server.post_json(
        "/ws/v1/cluster/nodes/register",
        &json!({"node_id": "fake", "memory_mb": 4096, "vcores": 4, "running": []}),
    );
    assert_eq!(status, 200, "{body}");
    let beat = |body: &Value| {
        let (status, answer) = server.post_json("/ws/v1/cluster/nodes/fake/heartbeat", body);
        assert_eq!(status, 200, "{body}: {answer}");
        answer
    };
    let app = server.submit("twice", 1, 60_000);
    let app_path = format!("/ws/v1/cluster/apps/{app}");

    // Heartbeat in order until one answer orders the launch.
    let mut number = 0;
    let (sent, first) = poll(
        "a launch order",
        Duration::from_secs(10),
        || {
            let sent = json!({"response_id": number, "running": []});
            let answer = beat(&sent);
            assert_eq!(answer["action"], "NORMAL", "{answer}");
            number = answer["response_id"].as_u64().unwrap();
            let launches = answer["allocations"].as_array().unwrap();
            (!launches.is_empty()).then(|| (sent.clone(), answer.clone()))
        },
        || format!("{}", server.get(&app_path).1),
    );
    let container = first["allocations"][0]["container_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(first["allocations"].as_array().unwrap().len(), 1, "{first}");

    // The answer was lost: the same heartbeat again gets the same answer
    // and changes nothing.
    // (Less the figures that grow with time while a container runs.)
    let report = || {
        let (_, mut body) = server.get(&app_path);
        let app = body["app"].as_object_mut().unwrap();
        for growing in ["elapsedTime", "memorySeconds", "vcoreSeconds", "gpuSeconds"] {
            app.remove(growing);
        }
        body
    };
    let app_before = report();
    let again = beat(&sent);
    assert_eq!(again, first, "the same answer again");
    let app_after = report();
    assert_eq!(app_after, app_before, "nothing changed");
    assert_eq!(app_after["app"]["runningContainers"], 1, "{app_after}");
    assert_eq!(app_after["app"]["lostContainers"], 0, "{app_after}");

    // The container ran a while and ended with 0.
    std::thread::sleep(Duration::from_millis(200));
    let ended = json!({"response_id": first["response_id"], "running": [], "ended": [
        {"container_id": container, "exit_status": 0, "diagnostics": "", "finished_ms": now_ms()}]});
    let answer = beat(&ended);
    assert_eq!(answer["action"], "NORMAL", "{answer}");
    assert_eq!(answer["acknowledged"], json!([container]), "{answer}");
    assert_eq!(answer["finished_accepted"], 1, "{answer}");
    let report = server.wait_for(&app_path, "the app's end", |b| {
        b["app"]["state"] == "FINISHED"
    });
    assert_eq!(report["app"]["finalStatus"], "SUCCEEDED", "{report}");
    let used = || {
        server.get("/ws/v1/quota/projects").1["twice"]["total_used"]
            .as_f64()
            .unwrap_or(0.0)
    };
    // The project's charge once it no longer moves: the same across more
    // than three QUOTA_COMPUTEs (100 ms apart), as a busy machine may
    // delay one.
    let settled = || {
        let mut last = used();
        poll(
            "the charge to settle",
            Duration::from_secs(10),
            || {
                std::thread::sleep(Duration::from_millis(350));
                let now = used();
                let settled = (now == last && now > 0.0).then_some(now);
                last = now;
                settled
            },
            || format!("{}", server.get("/ws/v1/quota/projects").1),
        )
    };
    let charged = settled();
    assert!(charged > 0.0, "charged for its run");

    // Its answer lost, the same heartbeat again: the same answer, the end
    // acknowledged again and taken once.
    let replay = beat(&ended);
    assert_eq!(replay, answer, "the same answer again");
    // And an agent that resends the end in its next heartbeat (as it does
    // until acknowledged): acknowledged, not taken.
    let next = json!({"response_id": answer["response_id"], "running": [],
        "ended": ended["ended"]});
    let later = beat(&next);
    assert_eq!(later["action"], "NORMAL", "{later}");
    assert_eq!(later["acknowledged"], json!([container]), "{later}");
    assert_eq!(later["finished_accepted"], 0, "{later}");
    assert_eq!(settled(), charged, "charged once");
    let (_, report) = server.get(&app_path);
    let info = &report["app"];
    assert_eq!(info["state"], "FINISHED", "{report}");
    assert_eq!(info["finishedContainers"], 1, "{report}");
    assert_eq!(info["failedContainers"], 0, "{report}");
    assert_eq!(info["lostContainers"], 0, "{report}");

    // A heartbeat numbered out of step is told to register again.
    let off = beat(&json!({"response_id": 999, "running": []}));
    assert_eq!(off["action"], "RESYNC", "{off}");
    server.stop();
}

// 5. Users an agent must not run containers as.

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
    stdout(&output)
}

#[test]
fn refused_run_as_users_fail_their_apps_invalid_and_submitter_needs_tokens() {
    let dir = crate::support::shared_tempdir();
    // Containers run as other users: they must reach their dirs below it.
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let tokens = dir.path().join("tokens.toml");
    let users = ["weft-no-such-user", "root", "mallory", "nobody"];
    let tokens_of: Vec<String> = users.iter().map(|u| token(&tokens, u)).collect();
    let tokens_setting = format!("weft.security.tokens-file={}", tokens.display());
    let server = Server::start_with_local_agent(
        &dir.path().join("data"),
        &[
            "--set",
            "weft.security.authentication=token",
            "--set",
            &tokens_setting,
            "--set",
            "weft.agent.run-as=submitter",
            "--set",
            "weft.agent.banned-users=mallory",
            "--set",
            "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms=100",
        ],
        None,
    );
    let get = |path: &str, token: &str| {
        let bearer = format!("Bearer {token}");
        server.request("GET", path, &[("authorization", &bearer)], None)
    };
    let run_as = |token: &str| {
        let output = app_run(
            &server,
            &["--token", token, "--wait"],
            &["sh", "-c", "id -u"],
        );
        let id = stdout(&output);
        let (status, report) = get(&format!("/ws/v1/cluster/apps/{id}"), token);
        assert_eq!(status, 200, "{report}");
        (output, report["app"].clone())
    };
    for (user, token, why) in [
        (
            "weft-no-such-user",
            &tokens_of[0],
            "does not exist on this node",
        ),
        (
            "root",
            &tokens_of[1],
            "has uid 0, below this node's minimum 1000",
        ),
        (
            "mallory",
            &tokens_of[2],
            "is banned from running containers",
        ),
    ] {
        let (output, app) = run_as(token);
        assert_eq!(output.status.code(), Some(1), "{user}: {}", stderr(&output));
        assert_eq!(app["user"], user, "{app}");
        assert_eq!(app["state"], "FAILED", "{user}: {app}");
        assert_eq!(app["exitStatus"], -1000, "{user}: {app}");
        let diagnostics = app["diagnostics"].as_str().unwrap_or_default();
        assert!(
            diagnostics.contains(&format!("user {user} {why}")),
            "{user}: {diagnostics}"
        );
    }
    // A user who may: the container runs as them.
    match nix::unistd::User::from_name("nobody") {
        Ok(Some(nobody)) if nobody.uid.as_raw() >= 1000 => {
            let (output, app) = run_as(&tokens_of[3]);
            assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
            assert_eq!(app["finalStatus"], "SUCCEEDED", "{app}");
            let id = app["id"].as_str().unwrap();
            let logs = weft_within(
                &[
                    "app",
                    "logs",
                    id,
                    "--server",
                    &server.base,
                    "--token",
                    &tokens_of[3],
                ],
                LIMIT,
            );
            // After the "== CONTAINER on NODE ==" heading, what it printed.
            let printed = stdout(&logs);
            assert_eq!(
                printed.lines().last(),
                Some(nobody.uid.to_string().as_str()),
                "{printed} {}",
                stderr(&logs)
            );
        }
        _ => eprintln!("note: no user nobody with a uid of 1000 or more here; skipped"),
    }
    server.stop();

    // With simple authentication anyone could name any user: neither the
    // server's local agent nor a standalone agent starts.
    let output = weft_within(
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            dir.path().join("simple").to_str().unwrap(),
            "--set",
            "weft.agent.run-as=submitter",
        ],
        LIMIT,
    );
    assert!(!output.status.success(), "{output:?}");
    let needs_tokens = "weft.agent.run-as = submitter needs weft.security.authentication = token";
    assert!(
        stderr(&output).contains(needs_tokens),
        "{}",
        stderr(&output)
    );
    assert!(
        !stdout(&output).contains("listening"),
        "{}",
        stdout(&output)
    );
    let output = weft_within(
        &[
            "agent",
            "--server",
            "http://127.0.0.1:1",
            "--resources",
            "1024mb,1vcores",
            "--work-dir",
            dir.path().join("agent-work").to_str().unwrap(),
            "--log-dir",
            dir.path().join("agent-logs").to_str().unwrap(),
            "--set",
            "weft.agent.run-as=submitter",
        ],
        LIMIT,
    );
    assert!(!output.status.success(), "{output:?}");
    assert!(
        stderr(&output).contains(needs_tokens),
        "{}",
        stderr(&output)
    );
}

// 5. Out-of-band heartbeats: ends reported the moment containers are
//    given bring scheduling rounds forward, and hostile ends cannot.

#[test]
fn early_heartbeats_and_hostile_ends_never_place_beyond_the_node_or_the_queue() {
    // Queue a may use at most half of the one node's 4 vcores. Rounds on
    // the timer are 10 s apart, so nearly every placement comes from a
    // round an ending brought forward.
    let server = Server::start(&[
        "--set",
        "yarn.scheduler.capacity.root.queues=a,b",
        "--set",
        "yarn.scheduler.capacity.root.a.capacity=50",
        "--set",
        "yarn.scheduler.capacity.root.a.maximum-capacity=50",
        "--set",
        "yarn.scheduler.capacity.root.b.capacity=50",
        "--set",
        "weft.scheduler.interval-ms=10000",
    ]);
    let (status, body) = server.post_json(
        "/ws/v1/cluster/nodes/register",
        &json!({"node_id": "fast", "memory_mb": 8192, "vcores": 4, "running": []}),
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) = server.post_json(
        "/ws/v1/cluster/apps",
        &json!({"queue": "a", "user": "alice", "project": "p",
            "asks": [{"count": 20, "memory_mb": 256, "vcores": 1, "command": {"argv": ["true"]}}]}),
    );
    assert_eq!(status, 202, "{body}");
    let app = body["app"]["id"].as_str().unwrap().to_string();
    let app_path = format!("/ws/v1/cluster/apps/{app}");

    let mut number = 0;
    let mut given: BTreeSet<String> = BTreeSet::new();
    let mut held: BTreeSet<String> = BTreeSet::new();
    let mut ended_once: Vec<String> = Vec::new();
    let mut beats = 0;
    // 20 containers two at a time on 10 s timer rounds would take 100 s:
    // within 60 s, the rounds came from the ends, not the timer.
    poll(
        "all 20 containers to be given and ended",
        Duration::from_secs(60),
        || {
            beats += 1;
            // Everything held ends now, an end already reported is
            // reported again, and two containers never given end too.
            let mut ended: Vec<Value> = held
                .iter()
                .chain(ended_once.last())
                .map(|id| json!({"container_id": id, "exit_status": 0, "finished_ms": now_ms()}))
                .collect();
            for bogus in [
                format!("{app}_x_{beats}"),
                "container_1_0001_01_000001".into(),
            ] {
                ended.push(
                    json!({"container_id": bogus, "exit_status": 0, "finished_ms": now_ms()}),
                );
            }
            let (status, answer) = server.post_json(
                "/ws/v1/cluster/nodes/fast/heartbeat",
                &json!({"response_id": number, "running": [], "ended": ended}),
            );
            assert_eq!(status, 200, "{answer}");
            number = answer["response_id"].as_u64().unwrap();
            ended_once.extend(std::mem::take(&mut held));
            for launch in answer["allocations"].as_array().unwrap() {
                let id = launch["container_id"].as_str().unwrap().to_string();
                assert!(
                    !ended_once.contains(&id),
                    "{id} was ordered again after it ended: {answer}"
                );
                given.insert(id.clone());
                held.insert(id);
            }
            // Queue a's maximum is 2 of the node's 4 vcores.
            assert!(held.len() <= 2, "the node holds {held:?}: {answer}");
            (given.len() == 20 && held.is_empty()).then_some(())
        },
        || server.get(&app_path).1.to_string(),
    );
    let (_, report) = server.get(&app_path);
    assert_eq!(report["app"]["state"], "FINISHED", "{report}");
    // Each container ran once, and the bogus ends freed nothing.
    assert_eq!(ended_once.len(), 20, "{ended_once:?}");
    server.stop();
}
