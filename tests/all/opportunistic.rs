//! Opportunistic containers queued at agents, through the real binary with
//! real processes: they wait at a busy agent and start there as room frees,
//! never beyond what the agent declared nor beyond their queue's limit; what
//! waited at an agent killed -9 is placed again and runs once; and what an
//! agent reports of its queue is bounded. Loopback only; every test stops
//! what it started, by pid.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::agent_faults::{Launches, app_run, logs_in, nodes, poll, start_agent, stderr, stdout};
use crate::support::{Server, Stoppable};

/// Frequent heartbeats, and queues a and b, each guaranteed half the
/// cluster: b (its one user too) may take all of it.
const QUEUES: &[&str] = &[
    "--set",
    "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms=100",
    "--set",
    "yarn.nodemanager.opportunistic-containers-max-queue-length=4",
    "--set",
    "yarn.scheduler.capacity.root.queues=a,b",
    "--set",
    "yarn.scheduler.capacity.root.a.capacity=50",
    "--set",
    "yarn.scheduler.capacity.root.b.capacity=50",
    "--set",
    "yarn.scheduler.capacity.root.b.maximum-capacity=100",
    "--set",
    "yarn.scheduler.capacity.root.b.user-limit-factor=2",
];

/// A shell line that records its container's start and end (ns since the
/// epoch) in `runs`, sleeping `seconds` between.
fn recorded(runs: &Path, seconds: &str) -> String {
    let runs = runs.display();
    format!(
        "echo \"$CONTAINER_ID start $(date +%s%N)\" >> {runs}; sleep {seconds}; echo \"$CONTAINER_ID end $(date +%s%N)\" >> {runs}"
    )
}

/// Each container's (start, end) as `runs` recorded them; a container that
/// started twice fails the test.
fn intervals(runs: &Path) -> BTreeMap<String, (u128, Option<u128>)> {
    let mut seen: BTreeMap<String, (u128, Option<u128>)> = BTreeMap::new();
    let text = std::fs::read_to_string(runs).unwrap_or_default();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let [id, what, at] = words[..] else {
            panic!("a line of {}: {line:?}", runs.display());
        };
        let at: u128 = at.parse().unwrap();
        match what {
            "start" => assert!(
                seen.insert(id.to_string(), (at, None)).is_none(),
                "{id} started twice:\n{text}"
            ),
            _ => seen.get_mut(id).expect("ended after it started").1 = Some(at),
        }
    }
    seen
}

/// The most containers that ran at one instant.
fn most_at_once(runs: &BTreeMap<String, (u128, Option<u128>)>) -> usize {
    let mut edges: Vec<(u128, i32)> = Vec::new();
    for (start, end) in runs.values() {
        edges.push((*start, 1));
        edges.push((end.unwrap_or(u128::MAX), -1));
    }
    // An end before a start at the same instant.
    edges.sort();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, step) in edges {
        now += step;
        most = most.max(now);
    }
    most as usize
}

fn app_state(server: &Server, app: &str) -> Value {
    server.get(&format!("/ws/v1/cluster/apps/{app}")).1["app"].clone()
}

fn node(server: &Server, id: &str) -> Value {
    nodes(server)
        .into_iter()
        .find(|n| n["id"] == id)
        .unwrap_or(Value::Null)
}

#[test]
fn opportunistic_containers_wait_at_a_busy_agent_and_never_run_beyond_it_or_their_queue() {
    let dir = crate::support::shared_tempdir();
    // Queue a may hold at most half of the node's 2 vcores, queued
    // containers included; b may hold it all.
    let mut settings = QUEUES.to_vec();
    settings.extend([
        "--set",
        "yarn.scheduler.capacity.root.a.maximum-capacity=50",
    ]);
    let server = Server::start_logging(
        &dir.path().join("data"),
        &settings,
        Some(&dir.path().join("server.log")),
    );
    let logs = || logs_in(dir.path());
    let _agent = start_agent(&server, dir.path(), "busy");
    poll(
        "the agent to register",
        Duration::from_secs(10),
        || (node(&server, "busy") != Value::Null).then_some(()),
        logs,
    );
    let runs = dir.path().join("runs");
    // Two guaranteed containers fill the node; four opportunistic ones
    // then wait for it, one at a time (queue a's limit).
    let run = |flags: &[&str], seconds: &str| {
        let mut flags = flags.to_vec();
        flags.push("--shell");
        let output = app_run(&server, &flags, &[&recorded(&runs, seconds)]);
        assert!(output.status.success(), "{}", stderr(&output));
        stdout(&output)
    };
    let filler = run(
        &[
            "--queue", "b", "-n", "2", "--memory", "64mb", "--vcores", "1",
        ],
        "1.5",
    );
    // Running, and their commands started (under load a shell can write
    // its start a moment after the server counts it running).
    poll(
        "the guaranteed containers to run",
        Duration::from_secs(10),
        || {
            let running = app_state(&server, &filler)["runningContainers"] == 2;
            (running && intervals(&runs).len() == 2).then_some(())
        },
        logs,
    );
    let waiting = run(
        &[
            "--queue",
            "a",
            "-n",
            "4",
            "--memory",
            "64mb",
            "--vcores",
            "1",
            "--opportunistic",
        ],
        "0.2",
    );
    // It waits in the agent's queue while the node is full.
    let busy = poll(
        "an opportunistic container to wait in the agent's queue",
        Duration::from_secs(10),
        || {
            let node = node(&server, "busy");
            (node["numQueuedContainers"] == 1).then_some(node)
        },
        logs,
    );
    assert_eq!(busy["usedVirtualCores"], 3, "{busy}");
    assert_eq!(busy["availableVirtualCores"], 0, "{busy}");
    let started = intervals(&runs);
    assert_eq!(
        started.len(),
        2,
        "only the guaranteed ones run: {started:?}"
    );
    // Until both apps end, queue a never holds more than its 1 vcore.
    poll(
        "both apps to finish",
        Duration::from_secs(30),
        || {
            let (_, queues) = server.get("/ws/v1/cluster/apps?queue=a&states=RUNNING");
            let held: u64 = queues["apps"]["app"]
                .as_array()
                .map(|apps| {
                    apps.iter()
                        .map(|a| a["allocatedVCores"].as_u64().unwrap_or(0))
                        .sum()
                })
                .unwrap_or(0);
            assert!(held <= 1, "queue a holds {held} vcores: {queues}");
            let done = |app: &str| app_state(&server, app)["state"] == "FINISHED";
            (done(&filler) && done(&waiting)).then_some(())
        },
        logs,
    );
    for app in [&filler, &waiting] {
        let report = app_state(&server, app);
        assert_eq!(report["finalStatus"], "SUCCEEDED", "{report}");
    }
    let ran = intervals(&runs);
    assert_eq!(ran.len(), 6, "each container ran once: {ran:?}");
    assert!(ran.values().all(|(_, end)| end.is_some()), "{ran:?}");
    // Never more than the node's 2 vcores at once.
    assert!(most_at_once(&ran) <= 2, "{ran:?}");
    // The opportunistic ones each started after a guaranteed one ended.
    let first_end = ran.values().filter_map(|(_, end)| *end).min().unwrap();
    let guaranteed: Vec<&String> = started.keys().collect();
    for (id, (start, _)) in &ran {
        if !guaranteed.contains(&id) {
            assert!(
                *start >= first_end,
                "{id} started before room freed: {ran:?}"
            );
        }
    }
    server.stop();
}

/// A server (QUEUES and `extra`; queue a may take the whole node, its
/// user too), agent `node_id` (2 vcores), two holders in b running
/// `sleep HOLD` (their pids known, so killed at the end if something
/// failed), and two opportunistic containers of a, each recording its run
/// in `runs`, waiting in the agent's queue behind them.
struct TwoWaiting {
    // Dropped in this order: the agent, then what it ran, the server,
    // and last their directory.
    agent: Stoppable,
    launches: Launches,
    server: Server,
    holders: String,
    waiting: String,
    runs: std::path::PathBuf,
    dir: tempfile::TempDir,
}

impl TwoWaiting {
    fn start(node_id: &str, hold: &str, extra: &[&str]) -> TwoWaiting {
        let dir = crate::support::shared_tempdir();
        let mut settings = QUEUES.to_vec();
        settings.extend([
            "--set",
            "yarn.scheduler.capacity.root.a.maximum-capacity=100",
            "--set",
            "yarn.scheduler.capacity.root.a.user-limit-factor=2",
        ]);
        settings.extend_from_slice(extra);
        let server = Server::start_logging(
            &dir.path().join("data"),
            &settings,
            Some(&dir.path().join("server.log")),
        );
        let logs = || logs_in(dir.path());
        let agent = start_agent(&server, dir.path(), node_id);
        poll(
            "the agent to register",
            Duration::from_secs(10),
            || (node(&server, node_id) != Value::Null).then_some(()),
            logs,
        );
        let launches = Launches::new(dir.path().join("launches"));
        let holder = format!(
            "echo \"$CONTAINER_ID $$\" >> {}; exec sleep {hold}",
            launches.0.display()
        );
        let output = app_run(
            &server,
            &[
                "--queue", "b", "-n", "2", "--memory", "64mb", "--vcores", "1", "--shell",
            ],
            &[&holder],
        );
        assert!(output.status.success(), "{}", stderr(&output));
        let holders = stdout(&output);
        poll(
            "the holders to start",
            Duration::from_secs(10),
            || (launches.read().len() == 2).then_some(()),
            logs,
        );
        let runs = dir.path().join("runs");
        let output = app_run(
            &server,
            &[
                "--queue",
                "a",
                "-n",
                "2",
                "--memory",
                "64mb",
                "--vcores",
                "1",
                "--opportunistic",
                "--shell",
            ],
            &[&recorded(&runs, "0.1")],
        );
        assert!(output.status.success(), "{}", stderr(&output));
        let waiting = stdout(&output);
        poll(
            "both to wait in the agent's queue",
            Duration::from_secs(10),
            || (node(&server, node_id)["numQueuedContainers"] == 2).then_some(()),
            logs,
        );
        TwoWaiting {
            agent,
            launches,
            server,
            holders,
            waiting,
            runs,
            dir,
        }
    }

    fn logs(&self) -> String {
        logs_in(self.dir.path())
    }

    /// Waits for the opportunistic app to succeed, and checks that each of
    /// its containers the server took for lost never ran and each other
    /// ran once: two in all.
    fn ran_once(&self) {
        poll(
            "the opportunistic app to finish",
            Duration::from_secs(30),
            || (app_state(&self.server, &self.waiting)["state"] == "FINISHED").then_some(()),
            || self.logs(),
        );
        let report = app_state(&self.server, &self.waiting);
        assert_eq!(report["finalStatus"], "SUCCEEDED", "{report}");
        assert_eq!(report["lostContainers"], 2, "both were lost once: {report}");
        let path = format!("/ws/v1/cluster/apps/{}/containers", self.waiting);
        let containers = self.server.get(&path).1["containers"]
            .as_array()
            .unwrap()
            .clone();
        assert_eq!(containers.len(), 4, "{containers:?}");
        let ran = intervals(&self.runs);
        assert_eq!(ran.len(), 2, "two ran, each once: {ran:?}");
        for container in &containers {
            let id = container["id"].as_str().unwrap();
            let lost = container["exitStatus"] == -100;
            assert_eq!(
                ran.contains_key(id),
                !lost,
                "what the server took for lost never started where it waited: {containers:?} {ran:?}"
            );
        }
    }
}

#[test]
fn what_waited_at_an_agent_killed_9_is_placed_again_and_runs_once() {
    let mut test = TwoWaiting::start("restarted", "3", &[]);
    // kill -9, and the agent comes back on the same dirs at once: it
    // adopts the holders, and what waited is gone from it.
    test.agent.kill_9();
    test.agent = start_agent(&test.server, test.dir.path(), "restarted");
    test.ran_once();
    // The holders were adopted, not lost: they ran on to their end.
    let report = app_state(&test.server, &test.holders);
    assert_eq!(report["lostContainers"], 0, "{report}");
    assert_eq!(test.launches.read().len(), 2);
    test.server.stop();
}

#[test]
fn what_waited_at_an_agent_paused_past_its_expiry_never_starts_there_when_it_wakes() {
    let test = TwoWaiting::start(
        "sleeper",
        "1",
        &[
            "--set",
            "yarn.nm.liveness-monitor.expiry-interval-ms=1500",
            // Nodes are expired at QUOTA_COMPUTE.
            "--set",
            "yarn.resourcemanager.quota.scheduling.period=200",
        ],
    );
    test.agent.signal("STOP");
    poll(
        "the sleeping agent's node to be lost, and what waited there with it",
        Duration::from_secs(10),
        || (app_state(&test.server, &test.waiting)["lostContainers"] == 2).then_some(()),
        || test.logs(),
    );
    // The holders end meanwhile: room the agent finds when it wakes.
    std::thread::sleep(Duration::from_millis(1200));
    test.agent.signal("CONT");
    test.ran_once();
    test.server.stop();
}

#[test]
fn what_an_agent_says_it_queues_is_bounded_and_only_its_own() {
    let server = Server::start(QUEUES);
    let (status, body) = server.post_json(
        "/ws/v1/cluster/nodes/register",
        &json!({"node_id": "liar", "memory_mb": 1024, "vcores": 1, "running": []}),
    );
    assert_eq!(status, 200, "{body}");
    // Containers it was never given are no queue of its.
    let (status, body) = server.post_json(
        "/ws/v1/cluster/nodes/liar/heartbeat",
        &json!({"response_id": 0, "running": [], "queued": ["container_1_0001_01_000001", "x"]}),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(node(&server, "liar")["numQueuedContainers"], 0);
    // An id past the bounds of a name: refused, naming it.
    let (status, body) = server.post_json(
        "/ws/v1/cluster/nodes/liar/heartbeat",
        &json!({"response_id": 1, "running": [], "queued": ["x".repeat(257)]}),
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains("queued[0]"), "{body}");
    server.stop();
}

#[test]
fn a_nodes_queue_takes_no_more_than_its_length_however_much_room_it_has() {
    // Room for two more 1-vcore containers, places for one.
    let mut settings = QUEUES.to_vec();
    settings.extend([
        "--set",
        "yarn.nodemanager.opportunistic-containers-max-queue-length=1",
        "--set",
        "yarn.scheduler.capacity.root.a.maximum-capacity=100",
        "--set",
        "yarn.scheduler.capacity.root.a.user-limit-factor=2",
    ]);
    let server = Server::start(&settings);
    let (status, body) = server.post_json(
        "/ws/v1/cluster/nodes/register",
        &json!({"node_id": "one", "memory_mb": 1024, "vcores": 2, "running": []}),
    );
    assert_eq!(status, 200, "{body}");
    let submit = |queue: &str, kind: &str| {
        let (status, body) = server.post_json(
            "/ws/v1/cluster/apps",
            &json!({"queue": queue, "project": "p", "asks": [{"count": 3, "memory_mb": 64,
                "vcores": 1, "command": {"argv": ["true"]}, "execution_type": kind}]}),
        );
        assert_eq!(status, 202, "{body}");
    };
    // The fake agent runs what it is given and holds the rest queued.
    let mut agent = (0, Vec::<String>::new(), Vec::<String>::new());
    let beat = |agent: &mut (u64, Vec<String>, Vec<String>)| {
        let (number, running, queued) = agent;
        let (status, answer) = server.post_json(
            "/ws/v1/cluster/nodes/one/heartbeat",
            &json!({"response_id": number, "running": running, "queued": queued}),
        );
        assert_eq!(status, 200, "{answer}");
        *number = answer["response_id"].as_u64().unwrap();
        for order in answer["allocations"].as_array().unwrap() {
            let id = order["container_id"].as_str().unwrap().to_string();
            if order["opportunistic"] == true {
                queued.push(id);
            } else {
                running.push(id);
            }
        }
        answer
    };
    submit("b", "guaranteed");
    poll(
        "b to fill the node",
        Duration::from_secs(10),
        || {
            beat(&mut agent);
            (agent.1.len() == 2).then_some(())
        },
        || format!("{}", server.get("/ws/v1/cluster/nodes").1),
    );
    submit("a", "opportunistic");
    poll(
        "one of a to wait at the node",
        Duration::from_secs(10),
        || {
            beat(&mut agent);
            (agent.2.len() == 1).then_some(())
        },
        || format!("{}", server.get("/ws/v1/cluster/nodes").1),
    );
    // More rounds give it no more.
    std::thread::sleep(Duration::from_millis(300));
    let answer = beat(&mut agent);
    assert_eq!(answer["allocations"], json!([]), "{answer}");
    let node = node(&server, "one");
    assert_eq!(node["numContainers"], 3, "{node}");
    assert_eq!(node["numQueuedContainers"], 1, "{node}");
    server.stop();
}

#[test]
fn a_queue_whose_work_only_waits_is_starved_and_reclaim_takes_back_what_waits_first() {
    // b's holders fill the node (over b's guarantee); a's only container
    // waits at the agent. a is starved: reclaim takes back what waits and
    // then what b holds beyond its guarantee, and a's guaranteed app runs.
    let dir = crate::support::shared_tempdir();
    let mut settings = QUEUES.to_vec();
    settings.extend([
        "--set",
        "yarn.resourcemanager.scheduler.monitor.enable=true",
        "--set",
        "weft.reclaim.starvation-ms=500",
    ]);
    let server = Server::start_logging(
        &dir.path().join("data"),
        &settings,
        Some(&dir.path().join("server.log")),
    );
    let logs = || logs_in(dir.path());
    let _agent = start_agent(&server, dir.path(), "contended");
    poll(
        "the agent to register",
        Duration::from_secs(10),
        || (node(&server, "contended") != Value::Null).then_some(()),
        logs,
    );
    let launches = Launches::new(dir.path().join("launches"));
    let holder = format!(
        "echo \"$CONTAINER_ID $$\" >> {}; exec sleep 60",
        launches.0.display()
    );
    let run = |flags: &[&str], command: &str| {
        let mut flags = flags.to_vec();
        flags.extend(["-n", "1", "--memory", "64mb", "--vcores", "1", "--shell"]);
        let output = app_run(&server, &flags, &[command]);
        assert!(output.status.success(), "{}", stderr(&output));
        stdout(&output)
    };
    let holders = {
        let output = app_run(
            &server,
            &[
                "--queue", "b", "-n", "2", "--memory", "64mb", "--vcores", "1", "--shell",
            ],
            &[&holder],
        );
        assert!(output.status.success(), "{}", stderr(&output));
        stdout(&output)
    };
    poll(
        "the holders to start",
        Duration::from_secs(10),
        || (launches.read().len() == 2).then_some(()),
        logs,
    );
    let waiting = run(&["--queue", "a", "--opportunistic"], "sleep 0.2");
    poll(
        "a's container to wait at the agent",
        Duration::from_secs(10),
        || (node(&server, "contended")["numQueuedContainers"] == 1).then_some(()),
        logs,
    );
    let guaranteed = run(&["--queue", "a"], "sleep 0.2");
    poll(
        "a's apps to finish",
        Duration::from_secs(20),
        || {
            let done = |app: &str| app_state(&server, app)["state"] == "FINISHED";
            (done(&waiting) && done(&guaranteed)).then_some(())
        },
        logs,
    );
    let holders = app_state(&server, &holders);
    assert!(
        holders["preemptedContainers"].as_u64().unwrap_or(0) >= 1,
        "b gave back what it held beyond its guarantee: {holders}"
    );
    let waited = app_state(&server, &waiting);
    assert_eq!(waited["finalStatus"], "SUCCEEDED", "{waited}");
    server.stop();
}
