//! The CLI and `weft agent` with a list of servers (`--server a,b`), where
//! some are down or standbys: a command goes on to the next server, a
//! standby's 503 (StandbyException) is passed over, a standby naming a host
//! the list does not have is not followed, and an agent follows its server
//! to the next address on the list. The standby here is a fake (a tiny
//! HTTP server answering 503 StandbyException); real failovers between two
//! servers on one store are tested in `failover.rs`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::{Server, Stoppable, free_port, weft_command, weft_within};

const LIMIT: Duration = Duration::from_secs(60);

/// A standby that answers every request 503 StandbyException, naming
/// `active` as the active server (or none), and writes down what it got.
struct FakeStandby {
    base: String,
    requests: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeStandby {
    fn start(active: Option<&str>) -> FakeStandby {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let message = match active {
            Some(active) => format!("this resource manager is STANDBY; the active one is {active}"),
            None => "this resource manager is STANDBY; no server is active yet (an election is under way)".into(),
        };
        let body = serde_json::json!({"RemoteException": {
            "exception": "StandbyException",
            "message": message,
            "javaClassName": "org.apache.hadoop.ipc.StandbyException",
        }})
        .to_string();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (requests, stop) = (requests.clone(), stop.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let Ok(mut stream) = stream else { continue };
                    let Some(request) = read_request(&stream) else {
                        continue;
                    };
                    requests.lock().unwrap().push(request);
                    let _ = write!(
                        stream,
                        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
                         content-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                }
            })
        };
        FakeStandby {
            base,
            requests,
            stop,
            thread: Some(thread),
        }
    }

    /// What it was asked, as "METHOD PATH".
    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for FakeStandby {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(self.base.trim_start_matches("http://"));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One request's head and body, read; "METHOD PATH".
fn read_request(stream: &TcpStream) -> Option<String> {
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut reader = BufReader::new(stream);
    let mut first = String::new();
    reader.read_line(&mut first).ok()?;
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let mut words = first.split_whitespace();
    Some(format!("{} {}", words.next()?, words.next()?))
}

/// A loopback URL nothing listens on.
fn dead() -> String {
    format!("http://127.0.0.1:{}", free_port())
}

/// `weft ARGS`, which must succeed within the limit; its stdout.
fn weft_ok(args: &[&str]) -> String {
    let output = weft_within(args, LIMIT);
    assert!(
        output.status.success(),
        "weft {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn apps(server: &Server) -> Vec<serde_json::Value> {
    let (status, body) = server.get("/ws/v1/cluster/apps");
    assert_eq!(status, 200, "{body}");
    body["apps"]["app"].as_array().cloned().unwrap_or_default()
}

/// A `weft agent` as node `node_id` for `servers`, on `work`, its log in
/// `work/agent.log`.
fn start_agent(servers: &str, node_id: &str, work: &Path) -> Stoppable {
    let log = std::fs::File::create(work.join("agent.log")).unwrap();
    let child = weft_command()
        .args(["agent", "--server", servers, "--node-id", node_id])
        .args(["--resources", "2048mb,2vcores"])
        .arg("--work-dir")
        .arg(work.join("work"))
        .arg("--log-dir")
        .arg(work.join("logs"))
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("weft agent starts");
    Stoppable(child)
}

fn wait_for_node(server: &Server, node_id: &str) {
    server.wait_for("/ws/v1/cluster/nodes", "the agent's node", |b| {
        b["nodes"]["node"]
            .as_array()
            .is_some_and(|nodes| nodes.iter().any(|n| n["id"] == node_id))
    });
}

#[test]
fn a_cli_command_goes_on_past_a_server_that_is_down() {
    let server = Server::start(&[]);
    let servers = format!("{},{}", dead(), server.base);
    let listed = weft_ok(&["app", "list", "--server", &servers, "--json"]);
    assert_eq!(listed, "[]");
    // A submission too: the connection was refused, so it never got there.
    let id = weft_ok(&["app", "run", "--server", &servers, "--", "true"]);
    let apps = apps(&server);
    assert_eq!(apps.len(), 1, "submitted once: {apps:?}");
    assert_eq!(apps[0]["id"], id.as_str());
}

#[test]
fn a_standby_in_front_is_passed_over_by_commands_and_by_an_agent() {
    let dir = crate::support::shared_tempdir();
    let server = Server::start(&[
        "--set",
        "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms=100",
    ]);
    let standby = FakeStandby::start(Some(&server.base));
    let servers = format!("{},{}", standby.base, server.base);

    let listed = weft_ok(&["app", "list", "--server", &servers, "--json"]);
    assert_eq!(listed, "[]");
    let asked = standby.requests();
    assert!(
        asked.len() == 1 && asked[0].starts_with("GET /ws/v1/cluster/apps"),
        "asked the standby once, first: {asked:?}"
    );

    let agent = start_agent(&servers, "behind-a-standby", dir.path());
    wait_for_node(&server, "behind-a-standby");
    assert!(
        standby
            .requests()
            .contains(&"POST /ws/v1/cluster/nodes/register".to_string()),
        "the agent asked the standby first: {:?}",
        standby.requests()
    );

    // A submission, once, and followed to its end on the agent's node.
    let output = weft_within(
        &["app", "run", "--server", &servers, "--wait", "--", "true"],
        LIMIT,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let apps = apps(&server);
    assert_eq!(apps.len(), 1, "submitted once: {apps:?}");
    assert_eq!(apps[0]["state"], "FINISHED", "{apps:?}");
    assert_eq!(apps[0]["finalStatus"], "SUCCEEDED", "{apps:?}");
    drop(agent);
}

#[test]
fn a_standby_naming_a_server_not_listed_sends_no_one_there() {
    let server = Server::start(&[]);
    // Where a hostile standby would send clients: it must get nothing.
    let elsewhere = FakeStandby::start(None);
    let standby = FakeStandby::start(Some(&elsewhere.base));
    let servers = format!("{},{}", standby.base, server.base);
    let listed = weft_ok(&["app", "list", "--server", &servers, "--json"]);
    assert_eq!(listed, "[]");

    // With only the standby listed: the command gives up, naming it.
    let begun = Instant::now();
    let output = weft_within(
        &[
            "app",
            "list",
            "--server",
            &standby.base,
            "--failover-wait",
            "1s",
        ],
        LIMIT,
    );
    assert!(!output.status.success());
    assert!(begun.elapsed() < Duration::from_secs(20));
    let error = stderr(&output);
    assert!(error.contains(&standby.base), "{error}");
    assert!(error.contains("STANDBY"), "{error}");
    assert!(error.contains("not followed"), "{error}");
    assert!(standby.requests().len() >= 2, "tried again within the wait");
    assert!(
        elsewhere.requests().is_empty(),
        "followed an unlisted server: {:?}",
        elsewhere.requests()
    );
}

#[test]
fn an_agent_follows_its_server_to_the_next_address_on_its_list() {
    // The server moves: killed with -9 at one address, started again on the
    // same store at the next address the agent lists (a newer epoch). The
    // agent finds it there, registers again, and keeps its container.
    let dir = crate::support::shared_tempdir();
    let data = dir.path().join("data");
    let fast = [
        "--set",
        "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms=100",
        "--set",
        "weft.scheduler.interval-ms=100",
    ];
    let (first, second) = (
        format!("127.0.0.1:{}", free_port()),
        format!("127.0.0.1:{}", free_port()),
    );
    let servers = format!("http://{first},http://{second}");
    let server = Server::start_at(&first, &data, &fast, None);
    let agent = start_agent(&servers, "moving", dir.path());
    wait_for_node(&server, "moving");
    let started = dir.path().join("started");
    let script = format!("echo $$ > {}; sleep 4", started.display());
    let id = weft_ok(&["app", "run", "--server", &servers, "--shell", "--", &script]);
    let begun = Instant::now();
    while !started.exists() {
        assert!(begun.elapsed() < LIMIT, "the container never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    server.kill();
    let server = Server::start_at(&second, &data, &fast, None);
    let report = server.wait_for(&format!("/ws/v1/cluster/apps/{id}"), "the app's end", |b| {
        matches!(
            b["app"]["state"].as_str(),
            Some("FINISHED" | "FAILED" | "KILLED")
        )
    });
    let log = std::fs::read_to_string(dir.path().join("agent.log")).unwrap_or_default();
    assert_eq!(report["app"]["state"], "FINISHED", "{report}\n{log}");
    assert_eq!(report["app"]["lostContainers"], 0, "{report}\n{log}");
    drop(agent);
}
