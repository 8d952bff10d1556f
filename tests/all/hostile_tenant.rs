//! A hostile tenant against the real binary: containers that replace their
//! logs with links to root's files or with FIFOs, that reach for the data
//! directory, that leave things in /dev/shm and /tmp; a node owner who
//! re-registers without its running list; a project whose credits pay for
//! a few containers asking for thousands; a server killed under running
//! containers; event streams that never read, outlive their token or live
//! forever; token commands racing each other; a node id taken over once
//! its node is lost. Each is refused or harmless (docs/security.md).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{Server, free_port, shared_tempdir, weft, weft_command, weft_within};

/// Long enough for anything here on a loaded machine; not a timing claim.
const LIMIT: Duration = Duration::from_secs(30);

/// A token for `user` in `tokens`, made by the real command.
pub(crate) fn token(tokens: &Path, user: &str) -> String {
    let output = weft(&[
        "token",
        "create",
        user,
        "--tokens-file",
        tokens.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// A server's call as the bearer of `token`.
fn call(
    server: &Server,
    method: &str,
    path: &str,
    token: &str,
    body: Option<&Value>,
) -> (u16, Value) {
    let bearer = format!("Bearer {token}");
    let mut headers = vec![("authorization", bearer.as_str())];
    let text = body.map(|b| b.to_string());
    if text.is_some() {
        headers.push(("content-type", "application/json"));
    }
    server.request(method, path, &headers, text.as_deref().map(str::as_bytes))
}

/// Submits one container running `line` with /bin/sh -c as the bearer of
/// `token`; its app id.
fn run_shell(server: &Server, token: &str, line: &str, memory_mb: u64) -> String {
    let submission = json!({"name": "tenant", "queue": "default", "project": "tenant",
        "asks": [{"count": 1, "memory_mb": memory_mb, "vcores": 1, "command": {"shell": line}}]});
    let (status, body) = call(
        server,
        "POST",
        "/ws/v1/cluster/apps",
        token,
        Some(&submission),
    );
    assert_eq!(status, 202, "{body}");
    body["app"]["id"].as_str().unwrap().to_string()
}

/// The app once it has ended.
fn ended(server: &Server, token: &str, id: &str) -> Value {
    let begun = Instant::now();
    loop {
        let (status, body) = call(
            server,
            "GET",
            &format!("/ws/v1/cluster/apps/{id}"),
            token,
            None,
        );
        assert_eq!(status, 200, "{body}");
        if ["FINISHED", "FAILED", "KILLED"].contains(&body["app"]["state"].as_str().unwrap_or("")) {
            return body["app"].clone();
        }
        assert!(begun.elapsed() < LIMIT, "{id} did not end: {body}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The app's only container's id.
fn container_of(server: &Server, token: &str, id: &str) -> String {
    let (status, body) = call(
        server,
        "GET",
        &format!("/ws/v1/cluster/apps/{id}/containers"),
        token,
        None,
    );
    assert_eq!(status, 200, "{body}");
    body["containers"][0]["id"].as_str().unwrap().to_string()
}

/// What app `id`'s only container wrote to its stdout.
fn stdout_of(server: &Server, token: &str, id: &str) -> String {
    let container = container_of(server, token, id);
    let (_, output) = call(
        server,
        "GET",
        &format!("/ws/v1/cluster/apps/{id}/containers/{container}/logs/stdout"),
        token,
        None,
    );
    output.as_str().unwrap_or_default().to_string()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().mode() & 0o777
}

/// A user other than root that containers may run as, if this machine has one.
fn nobody() -> Option<nix::unistd::User> {
    let user = nix::unistd::User::from_name("nobody").ok().flatten()?;
    (nix::unistd::geteuid().is_root() && user.uid.as_raw() >= 1000).then_some(user)
}

// 1. Containers run as their submitter cannot read, hang or rewrite the host.

#[test]
fn a_container_cannot_read_hang_or_rewrite_the_host() {
    let Some(nobody) = nobody() else {
        eprintln!("note: needs root and a user nobody (uid ≥ 1000); skipped");
        return;
    };
    let dir = shared_tempdir();
    // Containers run as nobody reach their own dirs beside the data dir.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let data = dir.path().join("data");
    let tokens = data.join("tokens.toml");
    let tenant = token(&tokens, "nobody");
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "root's secret: do not show").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let tokens_setting = format!("weft.security.tokens-file={}", tokens.display());
    let server = Server::start_with_local_agent(
        &data,
        &[
            "--set",
            "weft.security.authentication=token",
            "--set",
            &tokens_setting,
            "--set",
            "weft.agent.run-as=submitter",
            "--set",
            "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms=100",
        ],
        None,
    );
    let (_, nodes) = call(&server, "GET", "/ws/v1/cluster/nodes", &tenant, None);
    let isolation = nodes["nodes"]["node"][0]["isolation"]
        .as_str()
        .unwrap_or_default()
        .to_string();

    // The data dir and everything in it are the server's alone.
    assert_eq!(mode(&data), 0o700);
    for file in ["weft.db", "weft.db-wal", "weft.db-shm", "tokens.toml"] {
        if data.join(file).exists() {
            assert_eq!(
                mode(&data.join(file)) & 0o077,
                0,
                "{file} is readable by others"
            );
        }
    }

    // Its logs replaced with links to a root-only file: neither the log
    // server nor the diagnostics follow them.
    let id = run_shell(
        &server,
        &tenant,
        &format!(
            "echo visible; cd \"$LOG_DIRS\" && rm -f stdout stderr && ln -s {0} stdout && ln -s {0} stderr && exit 3",
            secret.display()
        ),
        128,
    );
    let app = ended(&server, &tenant, &id);
    assert_eq!(app["exitStatus"], 3, "{app}");
    let diagnostics = app["diagnostics"].as_str().unwrap_or_default();
    assert!(!diagnostics.contains("root's secret"), "{diagnostics}");
    assert!(
        diagnostics.contains("no longer a regular file"),
        "{diagnostics}"
    );
    let container = container_of(&server, &tenant, &id);
    for stream in ["stdout", "stderr"] {
        let (status, body) = call(
            &server,
            "GET",
            &format!("/ws/v1/cluster/apps/{id}/containers/{container}/logs/{stream}"),
            &tenant,
            None,
        );
        assert_eq!(status, 403, "{stream}: {body}");
        assert!(!body.to_string().contains("root's secret"), "{body}");
    }
    let (_, apps) = call(&server, "GET", "/ws/v1/cluster/apps", &tenant, None);
    assert!(!apps.to_string().contains("root's secret"));

    // Its stderr replaced with a FIFO: the agent neither blocks reading it
    // for the diagnostics nor when serving it, and runs the next container.
    let id = run_shell(
        &server,
        &tenant,
        "cd \"$LOG_DIRS\" && rm -f stderr && mkfifo stderr && exit 4",
        128,
    );
    let app = ended(&server, &tenant, &id);
    assert_eq!(app["exitStatus"], 4, "{app}");
    let container = container_of(&server, &tenant, &id);
    let asked = Instant::now();
    let (status, body) = call(
        &server,
        "GET",
        &format!("/ws/v1/cluster/apps/{id}/containers/{container}/logs/stderr"),
        &tenant,
        None,
    );
    assert_eq!(status, 403, "{body}");
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "a FIFO made the log server wait"
    );

    // A tree deeper than any thread's stack where the agent will remove it
    // (its exit dir, where an agent had one it could write; else its
    // working dir): the agent and the server live on.
    let id = run_shell(
        &server,
        &tenant,
        "python3 -c \"import os\nx=os.path.join(os.environ['PWD'], '../../../.weft/containers', os.environ['CONTAINER_ID'], 'exit')\nos.chdir(x if os.access(x, os.W_OK) else '.')\nfor i in range(30000):\n    os.mkdir('a'); os.chdir('a')\"",
        128,
    );
    let app = ended(&server, &tenant, &id);
    // (This test's own clean-up would overflow removing it: rm does not.)
    let removed = Command::new("rm")
        .arg("-rf")
        .arg(
            dir.path()
                .join("data-agent")
                .join("work")
                .join("apps")
                .join(&id),
        )
        .status()
        .unwrap();
    assert!(removed.success());
    assert_eq!(app["finalStatus"], "SUCCEEDED", "{app}");
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        crate::support::alive(server.pid()),
        "the tree took the server down"
    );
    let id = run_shell(&server, &tenant, "true", 128);
    assert_eq!(ended(&server, &tenant, &id)["finalStatus"], "SUCCEEDED");

    // No exec raises its privileges (no setuid binary makes it root), no
    // user namespace gives it root's powers over namespaces of its own
    // (the system call filter), and where cgroups are used all containers
    // together are capped at the node's memory: what one leaves behind (a
    // tmpfs or memfd another process keeps open) never takes more of the
    // host.
    assert!(isolation.contains("system calls filtered"), "{isolation}");
    let id = run_shell(
        &server,
        &tenant,
        "grep -E 'NoNewPrivs|Seccomp:' /proc/self/status; unshare --user --map-root-user true 2>/dev/null; echo user namespace $?; m=$(grep -m1 -E ':memory:|^0::' /proc/self/cgroup | cut -d: -f3); for f in /sys/fs/cgroup/memory$m/../memory.limit_in_bytes /sys/fs/cgroup$m/../memory.max; do [ -r $f ] && echo parent $(cat $f); done; exit 0",
        128,
    );
    let app = ended(&server, &tenant, &id);
    let output = stdout_of(&server, &tenant, &id);
    assert!(output.contains("NoNewPrivs:\t1"), "{output} {app}");
    assert!(output.contains("Seccomp:\t2"), "{output} {app}");
    assert!(output.contains("user namespace 1"), "{output} {app}");
    if isolation.contains("memory") {
        let (_, nodes) = call(&server, "GET", "/ws/v1/cluster/nodes", &tenant, None);
        let node = &nodes["nodes"]["node"][0];
        let memory_mb =
            node["usedMemoryMB"].as_u64().unwrap() + node["availMemoryMB"].as_u64().unwrap();
        assert!(
            output.contains(&format!("parent {}", memory_mb << 20)),
            "{output}, the node has {memory_mb} MB"
        );
    }

    // The data dir is out of reach: the tokens file, the ledger.
    let id = run_shell(
        &server,
        &tenant,
        &format!(
            "id -un; cat {0}/tokens.toml; echo forged >> {0}/tokens.toml; cat {0}/weft.db > /dev/null; ls {0}; exit 0",
            data.display()
        ),
        128,
    );
    let app = ended(&server, &tenant, &id);
    let container = container_of(&server, &tenant, &id);
    let (_, output) = call(
        &server,
        "GET",
        &format!("/ws/v1/cluster/apps/{id}/containers/{container}/logs/stdout"),
        &tenant,
        None,
    );
    assert_eq!(
        output.as_str().map(str::trim),
        Some(nobody.name.as_str()),
        "{app}"
    );
    let tokens_now = std::fs::read_to_string(data.join("tokens.toml")).unwrap();
    assert!(
        !tokens_now.contains("forged"),
        "the tokens file was written to"
    );
    let (_, errors) = call(
        &server,
        "GET",
        &format!("/ws/v1/cluster/apps/{id}/containers/{container}/logs/stderr"),
        &tenant,
        None,
    );
    assert_eq!(
        errors
            .as_str()
            .unwrap_or_default()
            .matches("Permission denied")
            .count(),
        4,
        "{errors}"
    );

    // What it leaves in /dev/shm and /tmp goes with it, also past its
    // memory limit (the tmpfs is charged to it and killed with it).
    if isolation.contains("private /dev/shm and /tmp") {
        let name = format!("weft-hostile-{}", std::process::id());
        let id = run_shell(
            &server,
            &tenant,
            &format!(
                "echo left > /tmp/{name} && head -c 80000000 /dev/zero > /dev/shm/{name}; sleep 5"
            ),
            64,
        );
        // Killed for its memory (−104), or its tmpfs full first.
        let app = ended(&server, &tenant, &id);
        eprintln!("the /dev/shm filler ended {}", app["exitStatus"]);
        for place in ["/dev/shm", "/tmp"] {
            assert!(
                !Path::new(place).join(&name).exists(),
                "{place}/{name} outlived its container"
            );
        }
        // And it sees none of the host's processes: a process of its user
        // outside (a daemon as nobody, say) is no door into the host.
        let mut outside = Command::new("setpriv")
            .args([
                "--reuid",
                "nobody",
                "--regid",
                "nogroup",
                "--clear-groups",
                "sleep",
                "30",
            ])
            .spawn()
            .unwrap();
        let id = run_shell(
            &server,
            &tenant,
            &format!(
                "ls /proc | grep -c '^[0-9][0-9]*$'; ls /proc/{}/root/tmp 2>&1 | head -1",
                outside.id()
            ),
            128,
        );
        ended(&server, &tenant, &id);
        let seen = stdout_of(&server, &tenant, &id);
        let _ = outside.kill();
        let _ = outside.wait();
        let processes: u32 = seen.lines().next().unwrap_or("").parse().unwrap();
        assert!(processes <= 5, "it saw {processes} processes: {seen}");
        assert!(seen.contains("No such file"), "{seen}");
    } else {
        eprintln!("note: no private /dev/shm and /tmp here ({isolation})");
    }

    // The server still stops at once on SIGTERM.
    let pid = server.pid().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let asked = Instant::now();
    while crate::support::alive(server.pid()) {
        assert!(
            asked.elapsed() < Duration::from_secs(15),
            "the server did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

// 2. In token mode, no container runs as the server's user.

#[test]
fn token_mode_never_runs_containers_as_the_servers_user() {
    let dir = shared_tempdir();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let data = dir.path().join("data");
    let refused = weft_within(
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            data.to_str().unwrap(),
            "--set",
            "weft.security.authentication=token",
        ],
        LIMIT,
    );
    assert!(!refused.status.success(), "{refused:?}");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("weft.agent.run-as = local-user") && stderr.contains("--no-local-agent"),
        "{stderr}"
    );
    if nobody().is_none() {
        eprintln!("note: needs root and a user nobody for local-user; skipped the rest");
        return;
    }
    let tokens = data.join("tokens.toml");
    let alice = token(&tokens, "alice");
    let tokens_setting = format!("weft.security.tokens-file={}", tokens.display());
    let server = Server::start_with_local_agent(
        &data,
        &[
            "--set",
            "weft.security.authentication=token",
            "--set",
            &tokens_setting,
            "--set",
            "weft.agent.run-as=local-user",
            "--set",
            "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms=100",
        ],
        None,
    );
    let id = run_shell(
        &server,
        &alice,
        &format!("echo \"$(id -un) $WEFT_USER\"; cat {}", tokens.display()),
        128,
    );
    let app = ended(&server, &alice, &id);
    assert_ne!(app["exitStatus"], 0, "it read the tokens file: {app}");
    assert_eq!(
        stdout_of(&server, &alice, &id).trim(),
        "nobody alice",
        "{app}"
    );
}

// 3. Charges follow what ran.

/// A server with one credit a second for a 1 GB, 1 vcore container
/// (flat-pricing) and a minimum runtime of `min_runtime_ms`.
fn flat_priced(data: &Path, min_runtime_ms: u64, extra: &[&str]) -> Server {
    let min_runtime = format!("yarn.resourcemanager.quota.min.runtime={min_runtime_ms}");
    let mut args = vec![
        "--set",
        "weft.policy.pricing=builtin:flat-pricing",
        "--set",
        "yarn.resourcemanager.quota.scheduling.period=100",
        "--set",
        "weft.scheduler.interval-ms=50",
        "--set",
        &min_runtime,
    ];
    args.extend_from_slice(extra);
    Server::start_in(data, &args)
}

fn used(server: &Server, project: &str) -> f64 {
    server.get("/ws/v1/quota/projects").1[project]["total_used"]
        .as_f64()
        .unwrap_or(0.0)
}

/// Waits until `project`'s charge stops moving; the charge.
fn settled(server: &Server, project: &str) -> f64 {
    let mut last = f64::NAN;
    let begun = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(400));
        let now = used(server, project);
        if now == last {
            return now;
        }
        last = now;
        assert!(begun.elapsed() < LIMIT, "{project}'s charge never settled");
    }
}

#[test]
fn a_node_owner_who_re_registers_costs_others_only_what_ran() {
    let dir = tempfile::tempdir().unwrap();
    let server = flat_priced(&dir.path().join("data"), 60_000, &[]);
    let register = |running: Option<Vec<String>>| {
        let mut body = json!({"node_id": "evil", "memory_mb": 8192, "vcores": 8});
        if let Some(running) = running {
            body["running"] = json!(running);
        }
        let (status, answer) =
            server.post_json_as("/ws/v1/cluster/nodes/register", &body, Some("mallory"));
        assert_eq!(status, 200, "{answer}");
    };
    register(Some(Vec::new()));
    let (status, body) = server.post_json_as(
        "/ws/v1/cluster/apps",
        &json!({"name": "victim", "queue": "default", "project": "victim",
            "asks": [{"count": 3, "memory_mb": 1024, "vcores": 1, "duration_ms": 600000}]}),
        Some("victim"),
    );
    assert_eq!(status, 202, "{body}");
    let app = body["app"]["id"].as_str().unwrap().to_string();
    let mut launched = Vec::new();
    let begun = Instant::now();
    while launched.len() < 3 {
        let (_, orders) = server.post_json_as(
            "/ws/v1/cluster/nodes/evil/heartbeat",
            &json!({"running": []}),
            Some("mallory"),
        );
        launched.extend(
            orders["allocations"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o["container_id"].as_str().unwrap().to_string()),
        );
        assert!(begun.elapsed() < LIMIT, "no launch orders");
        std::thread::sleep(Duration::from_millis(50));
    }
    // One of the three runs for a second; two never start.
    let (status, body) = server.post_json_as(
        "/ws/v1/cluster/nodes/evil/heartbeat",
        &json!({"running": [launched[0]]}),
        Some("mallory"),
    );
    assert_eq!(status, 200, "{body}");
    std::thread::sleep(Duration::from_secs(1));
    let (status, body) = server.post_json_as(
        "/ws/v1/cluster/nodes/evil/heartbeat",
        &json!({"running": [launched[0]]}),
        Some("mallory"),
    );
    assert_eq!(status, 200, "{body}");
    // Registered again without its running list: all three are lost.
    register(None);
    let (_, report) = server.get(&format!("/ws/v1/cluster/apps/{app}"));
    assert_eq!(report["app"]["lostContainers"], 3, "{report}");
    assert_eq!(
        report["app"]["failedContainers"], 0,
        "aborts are no attempts: {report}"
    );
    assert_ne!(report["app"]["state"], "FAILED", "{report}");
    // About one second of one container, not three minimum runtimes (180).
    let charged = settled(&server, "victim");
    assert!((0.5..3.0).contains(&charged), "victim charged {charged}");
}

#[test]
fn a_round_admits_no_more_than_the_credits_left_pay_for() {
    let dir = tempfile::tempdir().unwrap();
    let server = flat_priced(
        &dir.path().join("data"),
        10_000,
        &[
            "--sim-nodes",
            "4x65536mb,64vcores",
            "--set",
            "weft.quota.budget.enforce=stop-running",
            "--set",
            "yarn.admin.acl=admin",
        ],
    );
    let (status, body) = server.post_json_as(
        "/ws/v1/quota/projects/thrifty/grant",
        &json!({"credits": 95}),
        Some("admin"),
    );
    assert_eq!(status, 200, "{body}");
    // 2,048 containers of 2 s; each is charged its 10 s minimum (10 credits).
    let (status, body) = server.post_json_as(
        "/ws/v1/cluster/apps",
        &json!({"name": "greedy", "queue": "default", "project": "thrifty",
            "asks": [{"count": 2048, "memory_mb": 1024, "vcores": 1, "duration_ms": 2000}]}),
        Some("alice"),
    );
    assert_eq!(status, 202, "{body}");
    let app = body["app"]["id"].as_str().unwrap().to_string();
    let report = server.wait_for(
        &format!("/ws/v1/cluster/apps/{app}"),
        "nine containers run and end",
        |b| b["app"]["finishedContainers"] == 9 && b["app"]["runningContainers"] == 0,
    );
    let charged = settled(&server, "thrifty");
    assert!((charged - 90.0).abs() < 1e-6, "charged {charged}: {report}");
    std::thread::sleep(Duration::from_millis(500));
    let (_, report) = server.get(&format!("/ws/v1/cluster/apps/{app}"));
    assert_eq!(
        report["app"]["finishedContainers"], 9,
        "5 credits pay for no tenth: {report}"
    );
    assert_eq!(report["app"]["pendingContainers"], 2048 - 9, "{report}");
}

#[test]
fn a_server_killed_under_running_containers_charges_no_downtime() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let listen = format!("127.0.0.1:{}", free_port());
    let args = [
        "--set",
        "weft.policy.pricing=builtin:flat-pricing",
        "--set",
        "yarn.resourcemanager.quota.scheduling.period=100",
        "--set",
        "weft.scheduler.interval-ms=50",
        "--set",
        "yarn.resourcemanager.quota.min.runtime=60000",
        "--set",
        "yarn.resourcemanager.work-preserving-recovery.scheduling-wait-ms=0",
    ];
    let server = Server::start_at(&listen, &data, &args, None);
    let register = |server: &Server, running: Option<Vec<String>>| {
        let mut body = json!({"node_id": "n1", "memory_mb": 8192, "vcores": 8});
        if let Some(running) = running {
            body["running"] = json!(running);
        }
        let (status, answer) = server.post_json("/ws/v1/cluster/nodes/register", &body);
        assert_eq!(status, 200, "{answer}");
    };
    register(&server, Some(Vec::new()));
    server.submit("crashed", 1, 600_000);
    let container = loop {
        let (_, orders) =
            server.post_json("/ws/v1/cluster/nodes/n1/heartbeat", &json!({"running": []}));
        if let Some(order) = orders["allocations"].as_array().and_then(|a| a.first()) {
            break order["container_id"].as_str().unwrap().to_string();
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    server.post_json(
        "/ws/v1/cluster/nodes/n1/heartbeat",
        &json!({"running": [container]}),
    );
    std::thread::sleep(Duration::from_secs(1));
    let before = used(&server, "crashed");
    assert!(before > 0.5, "it was charged while it ran: {before}");
    server.kill();
    std::thread::sleep(Duration::from_secs(3));
    let server = Server::start_at(&listen, &data, &args, None);
    // The node comes back without it: lost where the store last had it
    // charged — neither the 3 s the server was down nor the 60 s minimum.
    register(&server, None);
    let after = settled(&server, "crashed");
    assert!(
        after - before < 0.5,
        "charged {before} before the crash, {after} after"
    );
}

// 4. Event streams cost what they are worth, and end.

/// Opens GET /ws/v1/events on a raw connection with `headers`; the socket.
fn open_stream(server: &Server, headers: &str) -> TcpStream {
    let address = server.base.trim_start_matches("http://");
    let mut socket = TcpStream::connect(address).unwrap();
    write!(
        socket,
        "GET /ws/v1/events HTTP/1.1\r\nHost: {address}\r\n{headers}\r\n"
    )
    .unwrap();
    socket
}

/// Reads `socket` until the server ends the response (EOF) or `within`
/// passes; whether it ended.
fn ends_within(socket: &mut TcpStream, within: Duration) -> bool {
    let begun = Instant::now();
    socket
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut buffer = [0u8; 65536];
    let mut text = Vec::new();
    while begun.elapsed() < within {
        match socket.read(&mut buffer) {
            Ok(0) => return true,
            Ok(n) => {
                text.extend_from_slice(&buffer[..n]);
                // The chunked body's last chunk.
                if text.ends_with(b"0\r\n\r\n") {
                    return true;
                }
            }
            Err(error)
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return true,
        }
    }
    false
}

/// The data of the next event of `topic` on `socket` (within 20 s).
fn next_event(socket: &mut TcpStream, topic: &str) -> Value {
    socket
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut text = Vec::new();
    let mut buffer = [0u8; 65536];
    let marker = format!("event: {topic}\ndata: ");
    loop {
        let read = socket.read(&mut buffer).expect("the stream goes on");
        assert!(read > 0, "the stream ended before a {topic} event");
        text.extend_from_slice(&buffer[..read]);
        let seen = String::from_utf8_lossy(&text);
        if let Some(at) = seen.find(&marker)
            && let Some(line) = seen[at + marker.len()..].split_once('\n')
        {
            return serde_json::from_str(line.0).unwrap();
        }
    }
}

fn resident_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap()
}

#[test]
fn a_hundred_idle_event_streams_cost_the_server_little() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(
        &dir.path().join("data"),
        &["--sim-nodes", "8x65536mb,64vcores"],
    );
    // A large apps topic (1,000 apps) that changes at every sample (some
    // run, their elapsed time grows).
    for i in 0..1000 {
        let (status, body) = server.post_json(
            "/ws/v1/cluster/apps",
            &json!({"name": format!("app-{i:04}-{}", "x".repeat(240)), "queue": "default", "project": "busy",
                "tags": (0..10).map(|t| format!("{t}{}", "t".repeat(90))).collect::<Vec<_>>(),
                "asks": [{"count": 1, "memory_mb": 64, "vcores": 1, "duration_ms": if i % 10 == 0 { 600_000 } else { 1 }}]}),
        );
        assert_eq!(status, 202, "{body}");
    }
    // The apps topic stays within its bound: fewer apps, and `cut` says so.
    let whole = server.get("/ws/v1/cluster/apps").1.to_string().len();
    let mut reader = open_stream(&server, "");
    let cut = next_event(&mut reader, "cut");
    assert_eq!(cut["max_bytes"], 1 << 20, "{cut}");
    eprintln!("{whole} bytes of apps; the live stream's cut: {cut}");
    if whole > 1 << 20 {
        assert!(
            cut["apps_limit"].as_u64().unwrap() < 1000,
            "{whole} bytes of apps: {cut}"
        );
    }
    assert!(
        !ends_within(&mut reader, Duration::from_secs(2)),
        "a stream ended at once"
    );
    // One caller holds at most four streams.
    let greedy = "X-Weft-User: greedy\r\n";
    let status_of = |socket: &mut TcpStream| {
        socket.set_read_timeout(Some(LIMIT)).unwrap();
        let mut head = [0u8; 12];
        socket.read_exact(&mut head).unwrap();
        String::from_utf8_lossy(&head).into_owned()
    };
    let held: Vec<TcpStream> = (0..4)
        .map(|_| {
            // Each answered before the next is asked for.
            let mut stream = open_stream(&server, greedy);
            assert_eq!(status_of(&mut stream), "HTTP/1.1 200");
            stream
        })
        .collect();
    let mut fifth = open_stream(&server, greedy);
    assert_eq!(status_of(&mut fifth), "HTTP/1.1 503");
    drop((held, fifth));
    let before = resident_kb(server.pid());
    // 100 streams that never read, of 100 callers (36 are refused: 64 at
    // most; one caller holds at most 4).
    let idle: Vec<TcpStream> = (0..100)
        .map(|i| open_stream(&server, &format!("X-Weft-User: idle-{i}\r\n")))
        .collect();
    std::thread::sleep(Duration::from_secs(8));
    let during = resident_kb(server.pid());
    eprintln!("100 idle event streams: server resident {before} kB before, {during} kB with them");
    assert!(
        during.saturating_sub(before) < 50 * 1024,
        "100 idle streams took the server from {before} kB to {during} kB"
    );
    drop(idle);
    let (status, _) = server.get("/ws/v1/cluster/metrics");
    assert_eq!(status, 200);
}

#[test]
fn an_event_stream_ends_after_its_lifetime() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(
        &dir.path().join("data"),
        &[
            "--sim-nodes",
            "1x8192mb,8vcores",
            "--set",
            "weft.http.event-stream-lifetime-ms=2000",
        ],
    );
    let mut stream = open_stream(&server, "");
    assert!(
        !ends_within(&mut stream, Duration::from_millis(500)),
        "a stream ended at once"
    );
    assert!(
        ends_within(&mut stream, Duration::from_secs(10)),
        "a stream outlived its lifetime"
    );
}

#[test]
fn an_event_stream_ends_soon_after_its_token_is_revoked() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let tokens = data.join("tokens.toml");
    let carol = token(&tokens, "carol");
    let tokens_setting = format!("weft.security.tokens-file={}", tokens.display());
    let server = Server::start_in(
        &data,
        &[
            "--sim-nodes",
            "1x8192mb,8vcores",
            "--set",
            "weft.security.authentication=token",
            "--set",
            &tokens_setting,
        ],
    );
    let mut stream = open_stream(&server, &format!("Authorization: Bearer {carol}\r\n"));
    assert!(
        !ends_within(&mut stream, Duration::from_secs(1)),
        "the stream ended before the revocation"
    );
    let revoked = weft(&[
        "token",
        "revoke",
        "carol",
        "--tokens-file",
        tokens.to_str().unwrap(),
    ]);
    assert!(revoked.status.success(), "{revoked:?}");
    assert!(
        ends_within(&mut stream, Duration::from_secs(8)),
        "the stream outlived its token"
    );
}

// 5. Token commands at once lose nothing.

#[test]
fn token_commands_at_once_lose_no_creation_or_revocation() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("data").join("tokens.toml");
    token(&tokens, "leaver");
    let file = tokens.to_str().unwrap().to_string();
    let mut children: Vec<_> = (0..16)
        .map(|i| {
            weft_command()
                .args([
                    "token",
                    "create",
                    &format!("user{i}"),
                    "--tokens-file",
                    &file,
                ])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    children.push(
        weft_command()
            .args(["token", "revoke", "leaver", "--tokens-file", &file])
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let text = std::fs::read_to_string(&tokens).unwrap();
    let parsed: toml::Value = toml::from_str(&text).unwrap();
    let users: Vec<&str> = parsed["token"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["user"].as_str().unwrap())
        .collect();
    assert_eq!(users.len(), 16, "{users:?}");
    assert!(!users.contains(&"leaver"), "{users:?}");
    assert_eq!(mode(&tokens), 0o600);
}

// 6. A node id stays its first registrant's.

#[test]
fn a_lost_nodes_id_stays_its_owners_until_an_administrator_releases_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(
        &dir.path().join("data"),
        &[
            "--set",
            "yarn.admin.acl=admin",
            "--set",
            "yarn.nm.liveness-monitor.expiry-interval-ms=300",
            "--set",
            "yarn.resourcemanager.quota.scheduling.period=100",
        ],
    );
    let register = |user: &str| {
        server.post_json_as(
            "/ws/v1/cluster/nodes/register",
            &json!({"node_id": "n1", "memory_mb": 4096, "vcores": 4, "running": []}),
            Some(user),
        )
    };
    assert_eq!(register("alice").0, 200);
    server.wait_for("/ws/v1/cluster/nodes", "n1 to be lost", |b| {
        b["nodes"]["node"].as_array().is_some_and(|nodes| {
            nodes
                .iter()
                .any(|n| n["id"] == "n1" && n["state"] == "LOST")
        })
    });
    let (status, body) = register("bob");
    assert_eq!(status, 403, "{body}");
    assert!(body.to_string().contains("belongs to alice"), "{body}");
    let (status, body) =
        server.post_json_as("/ws/v1/cluster/nodes/n1/release", &json!({}), Some("bob"));
    assert_eq!(status, 403, "only administrators release: {body}");
    let released = weft_within(
        &[
            "node",
            "release",
            "n1",
            "--server",
            &server.base,
            "--user",
            "admin",
        ],
        LIMIT,
    );
    assert!(released.status.success(), "{released:?}");
    assert!(
        String::from_utf8_lossy(&released.stderr).contains("it was alice's"),
        "{released:?}"
    );
    assert_eq!(register("bob").0, 200);
    assert_eq!(register("alice").0, 403, "now bob's");
}
