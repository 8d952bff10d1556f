//! Work-preserving restart through the real binaries: `weft serve` killed
//! with -9 and started again on the same store, with a real `weft agent`
//! running real processes.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{Server, Stoppable, alive, free_port, read_pid, weft_within};

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
    crate::support::start_agent(base, work, "4096mb,2vcores")
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
    let dir = crate::support::shared_tempdir();
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
        &format!(
            "echo \"$CONTAINER_ID $$\" > {}; sleep 60",
            long_pid_file.display()
        ),
    );
    let short = run(
        &base,
        &format!(
            "echo \"$CONTAINER_ID $$\" > {}; sleep 2",
            short_pid_file.display()
        ),
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
    // Its use so far was kept, and grows on (it ran on while the server was down).
    let used = |report: &Value| report["memorySeconds"].as_u64().unwrap();
    assert!(used(&before) > 0, "{before}");
    assert!(used(&after) >= used(&before), "{after} vs {before}");
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
    // From when its process started (by its agent's word, after its
    // allocation) to its end: the two seconds it slept, at one credit a
    // second, no more than its life on the server.
    let credits = charged["app"]["credits"].as_f64().unwrap();
    let life = (finish - start) as f64 / 1000.0;
    assert!(
        (1.9..=life + 1e-6).contains(&credits),
        "the short app: {credits} credits for 2 s of sleep in a {life} s life"
    );
    // Its one 1 GB, 1-vcore container's use is counted to its real end too.
    let seconds = (finish - start) as f64 / 1000.0;
    assert_eq!(
        charged["app"]["vcoreSeconds"].as_u64().unwrap(),
        seconds.round() as u64,
        "{charged}"
    );
    assert_eq!(
        charged["app"]["memorySeconds"].as_u64().unwrap(),
        (1024.0 * seconds).round() as u64,
        "{charged}"
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

mod crash_anywhere {
    //! The resource manager in-process on a virtual clock, with its store on
    //! disk, "killed" (dropped before it commits an event) at every point
    //! of a run and recovered from the store: each container is charged
    //! exactly once, whatever the moment of the crash.

    use std::path::Path;
    use std::sync::{Arc, OnceLock};

    use weft_host::clock::{Clock, VirtualClock};
    use weft_host::cluster::{AskSpec, SubmitApp};
    use weft_host::config::Settings;
    use weft_host::policy::{PolicyKind, PolicyRuntime, PolicySource};
    use weft_host::resources::Resources;
    use weft_host::rm::ResourceManager;
    use weft_host::rm::assemble::{Parts, QuotaEventLog, Recover, assemble};
    use weft_host::rm::timers::Timers;
    use weft_host::security::Security;
    use weft_host::store::Store;

    fn settings() -> Settings {
        Settings::load(
            None,
            &[
                "yarn.resourcemanager.quota.min.runtime=0".into(),
                "yarn.resourcemanager.quota.scheduling.period=700".into(),
                format!(
                    "weft.policy.compile-cache-dir={}",
                    crate::support::compile_cache_dir().display()
                ),
            ],
        )
        .unwrap()
    }

    /// The policies, compiled once for every run of this test.
    fn policies(clock: Arc<dyn Clock>) -> Arc<PolicyRuntime> {
        static SHARED: OnceLock<Arc<PolicyRuntime>> = OnceLock::new();
        SHARED
            .get_or_init(|| {
                let runtime = Arc::new(PolicyRuntime::from_settings(&settings(), clock).unwrap());
                for (kind, name) in [
                    (PolicyKind::Scheduling, "capacity"),
                    (PolicyKind::Pricing, "flat-pricing"),
                    (PolicyKind::Sharing, "capacity-over-time"),
                ] {
                    runtime
                        .load(kind, &PolicySource::Builtin(name.into()), &[])
                        .unwrap();
                }
                runtime
            })
            .clone()
    }

    /// A resource manager on the store in `dir`, recovered from it.
    fn start(dir: &Path, clock: &VirtualClock) -> ResourceManager {
        let settings = settings();
        let store = Store::open(dir).unwrap();
        let fence = store.take_sole_lease("test").unwrap();
        let clock: Arc<dyn Clock> = Arc::new(clock.clone());
        let queues = weft_host::queues::load(None, &settings.queue_properties).unwrap();
        assemble(Parts {
            settings: &settings,
            queues,
            store,
            clock: clock.clone(),
            policies: policies(clock),
            security: Arc::new(Security::default()),
            sim_nodes: Some((2, Resources::new(4096, 4, 0))),
            event_log: QuotaEventLog::Off,
            recover: Some(Recover {
                epoch: fence.epoch as u64,
                scheduling_wait_ms: 10_000,
            }),
        })
        .unwrap()
    }

    /// Runs 6 apps to their end, crashing before the commit of event
    /// `crash_at` (if any); the project's credits used, the apps' states
    /// and how many events the run had.
    fn run(crash_at: Option<usize>) -> (f64, Vec<String>, usize) {
        let dir = crate::support::shared_tempdir();
        let clock = VirtualClock::starting_at(1_000_000);
        let mut rm = start(dir.path(), &clock);
        let caller = Security::default().caller("alice");
        let mut ids = Vec::new();
        for (i, duration) in [1500, 2300, 800, 4100, 3000, 1200].into_iter().enumerate() {
            let request = SubmitApp {
                name: format!("app-{i}"),
                ..SubmitApp::new(
                    "",
                    "default",
                    "p",
                    vec![AskSpec::sized(3, 1024, 1, 0, duration)],
                )
            };
            ids.push(rm.submit_app(&caller, request, "test").unwrap().id);
        }
        rm.commit().unwrap();
        let mut timers = Timers::new(1_000_000, 100, 1000, 700);
        let mut events = 0;
        for event in 0.. {
            events = event;
            let now = timers.next_due();
            clock.advance_to(now);
            for timer in timers.fire(now) {
                rm.fire(timer);
            }
            rm.flush_quota();
            if Some(event) == crash_at {
                // kill -9: what this event changed is lost.
                drop(rm);
                rm = start(dir.path(), &clock);
                continue;
            }
            rm.commit().unwrap();
            let done = ids.iter().all(|id| {
                rm.cluster()
                    .app(id)
                    .is_some_and(|app| app.state.has_ended())
            });
            if done || event > 1000 {
                break;
            }
        }
        rm.quota_compute();
        rm.flush_quota();
        rm.commit().unwrap();
        let used = rm.quota().ledger().projects()["p"].total_used;
        let states = ids
            .iter()
            .map(|id| rm.cluster().app(id).unwrap().state.as_str().to_string())
            .collect();
        (used, states, events)
    }

    #[test]
    fn a_crash_before_any_commit_charges_each_container_exactly_once() {
        let (expected, states, events) = run(None);
        assert!(states.iter().all(|s| s == "FINISHED"), "{states:?}");
        // 3 containers per app, each 1 GB and 1 vcore at 1 credit a second.
        let seconds: f64 = [1.5, 2.3, 0.8, 4.1, 3.0, 1.2].iter().map(|s| s * 3.0).sum();
        assert!((expected - seconds).abs() < 1e-6, "{expected} vs {seconds}");
        // Every few events of the run is a point to crash at.
        assert!(events > 30, "{events} events");
        for crash_at in (0..events).step_by(2) {
            let (used, states, _) = run(Some(crash_at));
            assert!(
                states.iter().all(|s| s == "FINISHED"),
                "crash at {crash_at}: {states:?}"
            );
            assert!(
                (used - expected).abs() < 1e-6,
                "a crash before the commit of event {crash_at}: {used} credits charged, {expected} without a crash"
            );
        }
    }
}
