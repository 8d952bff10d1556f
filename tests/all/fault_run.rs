//! The randomized fault run of "Nothing lost" (Jepsen-style): two `weft
//! serve` on one PostgreSQL, two real `weft agent`s running short real
//! commands, a client submitting apps all along to whichever server is
//! active, and one random fault per iteration — the active killed with -9
//! and started again, the active paused past its lease, the active's
//! database sessions ended, an agent killed with -9 and started again, or
//! nothing. After each iteration, once exactly one server is active again,
//! the invariants are checked through the active's API and straight from
//! the database:
//!
//! - every acknowledged submission (202) exists, in any state;
//! - no node is allocated beyond its capacity;
//! - each container ends exactly once: one record per id, a record that
//!   ended has one exit status and end time, an app's counters of ended
//!   containers match its records, a finished app ran each container it
//!   asked for once, and the active's view agrees with the store's;
//! - the ledger equals the sum of its charges (the apps' credits);
//! - no two writers in overlapping epochs, and one holder per epoch.
//!
//! `WEFT_FAULT_SEED` replays a run (its seed is printed first);
//! `WEFT_FAULT_ITERATIONS` raises the number of iterations (50);
//! `WEFT_FAULT_KEEP=1` keeps the servers' and agents' logs and directories.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use weft_host::store::Store;
use weft_host::store::local_postgres::LocalPostgres;

use crate::support::{Server, Stoppable, free_port, pg_database, weft_command};

const LEASE_MS: u64 = 1000;
const DEFAULT_ITERATIONS: u64 = 50;
/// Every agent's node.
const NODE_MEMORY_MB: u64 = 4096;
const NODE_VCORES: u64 = 4;
const AGENTS: usize = 2;
/// How long the servers may take to settle on one active after a fault
/// (not a timing assertion: a generous bound, so a stuck election fails).
const SETTLE_LIMIT: Duration = Duration::from_secs(60);
/// How long the apps may take to end once the client stops.
const DRAIN_LIMIT: Duration = Duration::from_secs(120);
const PROJECT: &str = "p";
/// Exit statuses (YARN's ContainerExitStatus).
const ABORTED: i64 = -100;
const PREEMPTED: i64 = -102;
const KILLED: i64 = -105;

#[test]
fn a_randomized_fault_run_keeps_every_invariant() {
    let Some(url) = pg_database() else { return };
    let seed = std::env::var("WEFT_FAULT_SEED")
        .ok()
        .map(|s| {
            s.trim()
                .parse::<u64>()
                .expect("WEFT_FAULT_SEED is a number")
        })
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    let iterations = std::env::var("WEFT_FAULT_ITERATIONS")
        .ok()
        .map(|s| {
            s.trim()
                .parse::<u64>()
                .expect("WEFT_FAULT_ITERATIONS is a number")
        })
        .unwrap_or(DEFAULT_ITERATIONS)
        .max(DEFAULT_ITERATIONS);
    say(&format!(
        "fault run: seed {seed} (replay with WEFT_FAULT_SEED={seed}), {iterations} iterations"
    ));
    let began = Instant::now();
    let mut run = Run::start(&url, seed);
    for iteration in 1..=iterations {
        run.iteration = iteration;
        run.one_iteration();
    }
    run.iteration = iterations + 1;
    run.finish();
    say(&format!(
        "fault run: seed {seed}: every invariant held; {:.1} s in all",
        began.elapsed().as_secs_f64()
    ));
}

/// Straight to stderr: the harness would keep a passing test's output.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// xorshift64*: small, seeded, good enough to choose faults.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        // splitmix64 of the seed, so nearby seeds start far apart (never 0).
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng((z ^ (z >> 31)).max(1))
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// lo..=hi.
    fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    fn millis(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(self.between(lo, hi))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Fault {
    KillActive,
    PauseActive,
    EndActiveSessions,
    KillAgent,
    Nothing,
}

impl Fault {
    fn choose(rng: &mut Rng) -> Fault {
        match rng.below(100) {
            0..25 => Fault::KillActive,
            25..45 => Fault::PauseActive,
            45..65 => Fault::EndActiveSessions,
            65..88 => Fault::KillAgent,
            _ => Fault::Nothing,
        }
    }
}

/// An HTTP client with timeouts (a paused server accepts connections but
/// never answers) and no kept connections (a killed server's would fail
/// the next request ambiguously).
#[derive(Clone)]
struct Http(ureq::Agent);

/// What became of a request.
enum Outcome {
    Answer(u16, Value),
    /// It never reached a server (no connection was made).
    NotSent(String),
    /// It may or may not have been carried out (a timeout, a reset).
    Unknown(String),
}

impl Http {
    fn new(timeout: Duration) -> Http {
        Http(
            ureq::Agent::config_builder()
                .http_status_as_error(false)
                .timeout_connect(Some(Duration::from_millis(500)))
                .timeout_global(Some(timeout))
                .max_idle_connections(0)
                .build()
                .into(),
        )
    }

    fn get(&self, url: &str) -> Outcome {
        outcome(self.0.get(url).call())
    }

    fn post(&self, url: &str, body: &Value) -> Outcome {
        outcome(self.0.post(url).send_json(body))
    }
}

fn outcome(response: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> Outcome {
    match response {
        Ok(mut response) => {
            let status = response.status().as_u16();
            let text = response.body_mut().read_to_string().unwrap_or_default();
            Outcome::Answer(
                status,
                serde_json::from_str(&text).unwrap_or(Value::String(text)),
            )
        }
        Err(error) => {
            let never_sent = match &error {
                ureq::Error::Io(io) => io.kind() == std::io::ErrorKind::ConnectionRefused,
                ureq::Error::ConnectionFailed => true,
                ureq::Error::Timeout(t) => matches!(t, ureq::Timeout::Connect),
                _ => false,
            };
            if never_sent {
                Outcome::NotSent(error.to_string())
            } else {
                Outcome::Unknown(error.to_string())
            }
        }
    }
}

fn is_standby(body: &Value) -> bool {
    body["RemoteException"]["exception"] == "StandbyException"
}

/// One `weft serve` of the two: its fixed address, data directory and log.
struct Slot {
    name: &'static str,
    listen: String,
    base: String,
    data: PathBuf,
    log: PathBuf,
    args: Vec<String>,
    server: Option<Server>,
    /// The running process's pid; `None` while it is down (the observers
    /// attribute an answer to a process only if this did not change).
    pid: Arc<Mutex<Option<u32>>>,
}

impl Slot {
    fn new(name: &'static str, url: &str, dir: &Path) -> Slot {
        let port = free_port();
        let separator = if url.contains('?') { '&' } else { '?' };
        let args = [
            "--set",
            &format!("weft.store.url={url}{separator}application_name=weft-fault-run-{name}"),
            "--set",
            &format!("weft.ha.lease-ms={LEASE_MS}"),
            "--set",
            "weft.scheduler.interval-ms=100",
            "--set",
            "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms=100",
            "--set",
            "yarn.resourcemanager.quota.scheduling.period=500",
            "--set",
            "yarn.resourcemanager.quota.min.runtime=0",
            // Every app kept: the ledger is checked against all of them.
            "--set",
            "yarn.resourcemanager.max-completed-applications=1000000",
        ]
        .map(str::to_string)
        .to_vec();
        Slot {
            name,
            listen: format!("127.0.0.1:{port}"),
            base: format!("http://127.0.0.1:{port}"),
            data: dir.join(format!("server-{name}")),
            log: dir.join(format!("server-{name}.log")),
            args,
            server: None,
            pid: Arc::default(),
        }
    }

    fn start(&mut self) {
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        let server = Server::start_at(&self.listen, &self.data, &args, Some(&self.log));
        assert_eq!(
            server.base.trim_end_matches('/'),
            self.base,
            "weft serve {} listens where it was told",
            self.name
        );
        *self.pid.lock().unwrap() = Some(server.pid());
        self.server = Some(server);
    }

    fn kill_9(&mut self) {
        *self.pid.lock().unwrap() = None;
        if let Some(server) = self.server.take() {
            server.kill();
        }
    }

    fn pid(&self) -> u32 {
        self.server.as_ref().expect("the server runs").pid()
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([format!("-{signal}"), self.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal} of server {}", self.name);
    }
}

/// One `weft agent`: its node and work directory outlive its processes.
struct AgentSlot {
    node: String,
    servers: String,
    work: PathBuf,
    log: PathBuf,
    process: Option<Stoppable>,
}

impl AgentSlot {
    fn start(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        let child = weft_command()
            .args(["agent", "--server", &self.servers, "--node-id", &self.node])
            .args([
                "--resources",
                &format!("{NODE_MEMORY_MB}mb,{NODE_VCORES}vcores"),
            ])
            .arg("--work-dir")
            .arg(self.work.join("work"))
            .arg("--log-dir")
            .arg(self.work.join("logs"))
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("weft agent starts");
        self.process = Some(Stoppable(child));
    }

    fn kill_9(&mut self) {
        if let Some(mut process) = self.process.take() {
            process.kill_9();
        }
    }
}

/// What the client was told.
#[derive(Default)]
struct Submissions {
    /// Apps acknowledged (202), in order.
    acked: Vec<String>,
    /// Submissions whose fate is unknown (a timeout, a reset, a 5xx other
    /// than a standby's): they may or may not exist.
    indeterminate: u64,
    /// Standbys' answers and connections refused (tried elsewhere).
    redirected: u64,
    /// Answers no submission should get (a 4xx): the test fails.
    refused: Vec<String>,
}

/// The client: submits apps to whichever server is active, until stopped.
struct Client {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Client {
    fn start(bases: [String; 2], submissions: Arc<Mutex<Submissions>>, seed: u64) -> Client {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("fault-run-client".into())
                .spawn(move || submit_until(&stop, &bases, &submissions, seed))
                .unwrap()
        };
        Client {
            stop,
            thread: Some(thread),
        }
    }

    fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.stop();
    }
}

fn app_body(rng: &mut Rng) -> Value {
    let (command, max_attempts) = match rng.below(100) {
        // Fails twice: its app fails (its other containers are killed).
        0..8 => ("exit 3".to_string(), 2),
        8..14 => ("true".to_string(), 1),
        _ => (format!("sleep 0.{}", rng.between(1, 5)), 1),
    };
    json!({
        "name": "fault-run", "project": PROJECT,
        "asks": [{
            "count": rng.between(1, 3),
            "memory_mb": 256 * rng.between(1, 4),
            "vcores": 1,
            "command": {"shell": command},
            "max_attempts": max_attempts,
        }]
    })
}

fn submit_until(
    stop: &AtomicBool,
    bases: &[String; 2],
    submissions: &Mutex<Submissions>,
    seed: u64,
) {
    let mut rng = Rng::new(seed);
    let http = Http::new(Duration::from_secs(4));
    let mut preferred = 0;
    while !stop.load(Ordering::SeqCst) {
        let body = app_body(&mut rng);
        let mut placed = false;
        for i in [preferred, 1 - preferred] {
            let url = format!("{}/ws/v1/cluster/apps", bases[i]);
            match http.post(&url, &body) {
                Outcome::Answer(202, answer) => {
                    let id = answer["app"]["id"].as_str().unwrap_or_default().to_string();
                    let mut submissions = submissions.lock().unwrap();
                    if id.is_empty() {
                        submissions
                            .refused
                            .push(format!("202 without an id: {answer}"));
                    } else {
                        submissions.acked.push(id);
                    }
                    preferred = i;
                    placed = true;
                    break;
                }
                Outcome::Answer(503, answer) if is_standby(&answer) => {
                    submissions.lock().unwrap().redirected += 1;
                }
                Outcome::NotSent(_) => submissions.lock().unwrap().redirected += 1,
                Outcome::Answer(status, _) if status >= 500 => {
                    // Not applied, or applied and not durable: unknown.
                    submissions.lock().unwrap().indeterminate += 1;
                    preferred = 1 - i;
                    placed = true;
                    break;
                }
                Outcome::Answer(status, answer) => {
                    submissions
                        .lock()
                        .unwrap()
                        .refused
                        .push(format!("{status} from {}: {answer}", bases[i]));
                    placed = true;
                    break;
                }
                Outcome::Unknown(_) => {
                    submissions.lock().unwrap().indeterminate += 1;
                    preferred = 1 - i;
                    placed = true;
                    break;
                }
            }
        }
        let pause = if placed {
            rng.millis(100, 300)
        } else {
            // Nobody active: an election is under way.
            Duration::from_millis(100)
        };
        std::thread::sleep(pause);
    }
}

/// What the observers saw: every (epoch, server, pid) answering ACTIVE.
#[derive(Default)]
struct Seen {
    /// epoch → the processes that said they were active under it, with
    /// when they were first seen doing so.
    active: BTreeMap<u64, Vec<(usize, u32, Instant)>>,
}

/// Polls each server's role every 50 ms on a thread of its own.
struct Observers {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Observers {
    fn start(slots: &[Slot], seen: &Arc<Mutex<Seen>>) -> Observers {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = slots
            .iter()
            .enumerate()
            .map(|(index, slot)| {
                let (stop, seen, pid) = (stop.clone(), seen.clone(), slot.pid.clone());
                let url = format!("{}/ws/v1/cluster/info", slot.base);
                std::thread::Builder::new()
                    .name(format!("fault-run-observer-{}", slot.name))
                    .spawn(move || {
                        let http = Http::new(Duration::from_millis(500));
                        while !stop.load(Ordering::SeqCst) {
                            let before = *pid.lock().unwrap();
                            let answer = http.get(&url);
                            let after = *pid.lock().unwrap();
                            if let (Outcome::Answer(200, body), Some(pid)) = (answer, before)
                                && before == after
                                && body["clusterInfo"]["haState"] == "ACTIVE"
                            {
                                let epoch = body["clusterInfo"]["epoch"].as_u64().unwrap_or(0);
                                let mut seen = seen.lock().unwrap();
                                let holders = seen.active.entry(epoch).or_default();
                                if !holders.iter().any(|h| (h.0, h.1) == (index, pid)) {
                                    holders.push((index, pid, Instant::now()));
                                }
                            }
                            std::thread::sleep(Duration::from_millis(50));
                        }
                    })
                    .unwrap()
            })
            .collect();
        Observers { stop, threads }
    }
}

impl Drop for Observers {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// The store's state, read in one statement (one snapshot).
struct Snapshot {
    total_used: f64,
    /// id → record.
    apps: BTreeMap<String, Value>,
    /// id → (app, running, record).
    containers: BTreeMap<String, (String, bool, Value)>,
    /// (epoch, holder, first commit ms, last commit ms, commits).
    audit: Vec<(i64, String, i64, i64, i64)>,
    lease_epoch: i64,
}

const SNAPSHOT: &str = "SELECT
    (SELECT total_used FROM project_quota WHERE project = 'p'),
    (SELECT COALESCE(json_agg(json_build_array(id, record) ORDER BY number), '[]'::json)::text FROM app),
    (SELECT COALESCE(json_agg(json_build_array(id, app, running, record) ORDER BY app, seq), '[]'::json)::text
       FROM container),
    (SELECT COALESCE(json_agg(json_build_array(epoch, holder, first_commit_ms, last_commit_ms, commits)
       ORDER BY epoch), '[]'::json)::text FROM write_audit),
    (SELECT epoch FROM weft_leader WHERE id = 1)";

fn read_snapshot(store: &Store) -> Result<Snapshot, String> {
    let rows = store.query(SNAPSHOT, &[]).map_err(|e| e.to_string())?;
    let row = rows.into_iter().next().ok_or("no row")?;
    let json = |i: usize| -> Result<Vec<Value>, String> {
        let text = row.get(i).and_then(|v| v.as_str()).ok_or("not a text")?;
        serde_json::from_str(text).map_err(|e| e.to_string())
    };
    let record = |v: &Value| -> Value {
        v.as_str()
            .and_then(|s| serde_json::from_str(s).ok())
            .unwrap_or(Value::Null)
    };
    let apps = json(1)?
        .iter()
        .map(|a| (a[0].as_str().unwrap_or("").to_string(), record(&a[1])))
        .collect();
    let containers = json(2)?
        .iter()
        .map(|c| {
            (
                c[0].as_str().unwrap_or("").to_string(),
                (
                    c[1].as_str().unwrap_or("").to_string(),
                    c[2].as_i64() == Some(1),
                    record(&c[3]),
                ),
            )
        })
        .collect();
    let audit = json(3)?
        .iter()
        .map(|a| {
            (
                a[0].as_i64().unwrap_or(-1),
                a[1].as_str().unwrap_or("").to_string(),
                a[2].as_i64().unwrap_or(-1),
                a[3].as_i64().unwrap_or(-1),
                a[4].as_i64().unwrap_or(-1),
            )
        })
        .collect();
    Ok(Snapshot {
        total_used: row.first().and_then(|v| v.as_f64()).unwrap_or(0.0),
        apps,
        containers,
        audit,
        lease_epoch: row.get(4).and_then(|v| v.as_i64()).unwrap_or(0),
    })
}

/// Why a check did not complete.
enum Check {
    /// The active changed under it, or did not answer: try again.
    Retry(String),
    /// An invariant does not hold.
    Violation(String),
}

fn retry(why: impl Into<String>) -> Check {
    Check::Retry(why.into())
}

#[derive(Default)]
struct Stats {
    faults: BTreeMap<Fault, u64>,
    failovers: u64,
    failover_times: Vec<Duration>,
    checks: u64,
    check_retries: u64,
}

/// Everything the run started, stopped in this order when dropped: the
/// client, the observers, the agents, the servers, then the directory.
struct Run {
    client: Client,
    _observers: Observers,
    agents: Vec<AgentSlot>,
    slots: Vec<Slot>,
    _dir: tempfile::TempDir,
    url: String,
    store: Store,
    rng: Rng,
    seed: u64,
    iteration: u64,
    submissions: Arc<Mutex<Submissions>>,
    seen: Arc<Mutex<Seen>>,
    /// Apps whose containers were found ended and in agreement with the
    /// store: not asked for again until the final check.
    verified: BTreeSet<String>,
    stats: Stats,
}

impl Run {
    fn start(url: &str, seed: u64) -> Run {
        let mut dir = crate::support::shared_tempdir();
        if std::env::var_os("WEFT_FAULT_KEEP").is_some() {
            dir.disable_cleanup(true);
            say(&format!("fault run: logs kept in {}", dir.path().display()));
        }
        let mut slots = vec![
            Slot::new("a", url, dir.path()),
            Slot::new("b", url, dir.path()),
        ];
        slots[0].start();
        slots[1].start();
        let servers = format!("{},{}", slots[0].base, slots[1].base);
        let mut agents: Vec<AgentSlot> = (1..=AGENTS)
            .map(|n| AgentSlot {
                node: format!("node-{n}"),
                servers: servers.clone(),
                work: dir.path().join(format!("agent-{n}")),
                log: dir.path().join(format!("agent-{n}.log")),
                process: None,
            })
            .collect();
        for agent in &mut agents {
            std::fs::create_dir_all(&agent.work).unwrap();
            agent.start();
        }
        let mut rng = Rng::new(seed);
        let submissions = Arc::new(Mutex::new(Submissions::default()));
        let seen = Arc::new(Mutex::new(Seen::default()));
        let observers = Observers::start(&slots, &seen);
        let client = Client::start(
            [slots[0].base.clone(), slots[1].base.clone()],
            submissions.clone(),
            rng.next(),
        );
        let store = Store::postgres(url).expect("the test reads the store");
        let mut run = Run {
            client,
            _observers: observers,
            agents,
            slots,
            _dir: dir,
            url: url.to_string(),
            store,
            rng,
            seed,
            iteration: 0,
            submissions,
            seen,
            verified: BTreeSet::new(),
            stats: Stats::default(),
        };
        run.wait_for_nodes();
        run
    }

    /// Both agents' nodes registered with the active.
    fn wait_for_nodes(&mut self) {
        let begun = Instant::now();
        let http = Http::new(Duration::from_secs(2));
        loop {
            let (active, _) = self.wait_settled();
            if let Outcome::Answer(200, body) = http.get(&format!(
                "{}/ws/v1/cluster/nodes?states=RUNNING",
                self.slots[active].base
            )) {
                let count = body["nodes"]["node"].as_array().map_or(0, Vec::len);
                if count == AGENTS {
                    return;
                }
            }
            if begun.elapsed() > SETTLE_LIMIT {
                self.fail("the agents' nodes did not register within 60 s".into());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Each server's (haState, epoch), or None if it does not answer.
    fn roles(&self) -> Vec<Option<(String, u64)>> {
        let http = Http::new(Duration::from_secs(1));
        self.slots
            .iter()
            .map(
                |slot| match http.get(&format!("{}/ws/v1/cluster/info", slot.base)) {
                    Outcome::Answer(200, body) => Some((
                        body["clusterInfo"]["haState"]
                            .as_str()
                            .unwrap_or("?")
                            .to_string(),
                        body["clusterInfo"]["epoch"].as_u64().unwrap_or(0),
                    )),
                    _ => None,
                },
            )
            .collect()
    }

    /// Waits until exactly one server is ACTIVE and the other STANDBY; the
    /// active's index and epoch.
    fn wait_settled(&self) -> (usize, u64) {
        let begun = Instant::now();
        loop {
            let roles = self.roles();
            let state = |i: usize| roles[i].as_ref().map(|r| r.0.as_str());
            for (active, standby) in [(0, 1), (1, 0)] {
                if state(active) == Some("ACTIVE") && state(standby) == Some("STANDBY") {
                    return (active, roles[active].as_ref().unwrap().1);
                }
            }
            if begun.elapsed() > SETTLE_LIMIT {
                let epochs: Vec<u64> = self
                    .seen
                    .lock()
                    .unwrap()
                    .active
                    .iter()
                    .filter(|(_, holders)| holders.iter().any(|h| h.2 >= begun))
                    .map(|(epoch, _)| *epoch)
                    .collect();
                self.fail(format!(
                    "no single active server within {SETTLE_LIMIT:?}: roles {roles:?}; \
                     epochs seen active meanwhile: {epochs:?} (see 'elected', 'cannot become \
                     active' and 'stepping down' in the servers' logs)"
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn one_iteration(&mut self) {
        // Clients work a while before the fault.
        std::thread::sleep(self.rng.millis(300, 1000));
        let (active, epoch_before) = self.wait_settled();
        let fault = Fault::choose(&mut self.rng);
        *self.stats.faults.entry(fault).or_default() += 1;
        let fault_at = Instant::now();
        let detail = self.inject(fault, active, epoch_before);
        let (now_active, epoch) = self.wait_settled();
        let settled_in = fault_at.elapsed();
        let mut line = format!(
            "iteration {}: {fault:?}{detail}: active {} epoch {epoch_before} → {} epoch {epoch} (settled in {:.2} s)",
            self.iteration,
            self.slots[active].name,
            self.slots[now_active].name,
            settled_in.as_secs_f64()
        );
        if epoch != epoch_before {
            self.stats.failovers += 1;
            // From the fault to the first answer as active under the new
            // epoch (the observers poll every 50 ms).
            let first = self
                .seen
                .lock()
                .unwrap()
                .active
                .get(&epoch)
                .and_then(|holders| holders.iter().map(|h| h.2).min());
            let took = first.map_or(settled_in, |at| at.saturating_duration_since(fault_at));
            self.stats.failover_times.push(took);
            line.push_str(&format!(", failover in {:.2} s", took.as_secs_f64()));
            if epoch > epoch_before + 1 {
                line.push_str(&format!(" ({} elections)", epoch - epoch_before));
            }
        }
        self.check(false);
        let acked = self.submissions.lock().unwrap().acked.len();
        line.push_str(&format!(", {acked} apps acknowledged"));
        eprintln!("{line}");
    }

    /// Injects `fault` on the active server `active`; what it did, for the log.
    fn inject(&mut self, fault: Fault, active: usize, epoch: u64) -> String {
        match fault {
            Fault::KillActive => {
                self.slots[active].kill_9();
                // Started again at once (it may win the next election) or
                // only once the other took over.
                let detail = if self.rng.below(2) == 0 {
                    std::thread::sleep(self.rng.millis(0, 500));
                    " (restarted at once)"
                } else {
                    let begun = Instant::now();
                    let other = 1 - active;
                    while !matches!(&self.roles()[other], Some((state, _)) if state == "ACTIVE") {
                        if begun.elapsed() > SETTLE_LIMIT {
                            self.fail(format!(
                                "server {} did not take over within {SETTLE_LIMIT:?} after server {} was killed",
                                self.slots[other].name, self.slots[active].name
                            ));
                        }
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    " (restarted after the takeover)"
                };
                self.slots[active].start();
                detail.to_string()
            }
            Fault::PauseActive => {
                let pause = Duration::from_millis(LEASE_MS) + self.rng.millis(200, 1500);
                self.slots[active].signal("STOP");
                std::thread::sleep(pause);
                self.slots[active].signal("CONT");
                format!(" ({} ms)", pause.as_millis())
            }
            Fault::EndActiveSessions => {
                let name = format!("weft-fault-run-{}", self.slots[active].name);
                let ended = match LocalPostgres::shared().and_then(|pg| pg.terminate(&name)) {
                    Ok(ended) => ended,
                    Err(error) => self.fail(format!("cannot end {name}'s sessions: {error}")),
                };
                // An active that lost its session steps down (at its next
                // renewal, a third of a lease away): a new epoch follows.
                let begun = Instant::now();
                loop {
                    let roles = self.roles();
                    if roles[active]
                        .as_ref()
                        .is_some_and(|r| r.0 != "ACTIVE" || r.1 != epoch)
                    {
                        break;
                    }
                    if begun.elapsed() > SETTLE_LIMIT {
                        self.fail(format!(
                            "server {} lost its database sessions and stayed active under epoch {epoch} for {SETTLE_LIMIT:?}: {roles:?}",
                            self.slots[active].name
                        ));
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                format!(" ({ended} sessions)")
            }
            Fault::KillAgent => {
                let index = self.rng.below(self.agents.len() as u64) as usize;
                self.agents[index].kill_9();
                let down = self.rng.millis(0, 800);
                std::thread::sleep(down);
                self.agents[index].start();
                format!(
                    " ({} down {} ms)",
                    self.agents[index].node,
                    down.as_millis()
                )
            }
            Fault::Nothing => String::new(),
        }
    }

    /// Checks every invariant, trying again while the active changes under
    /// the check.
    fn check(&mut self, last: bool) {
        self.stats.checks += 1;
        let mut why = String::new();
        for _ in 0..30 {
            let (active, epoch) = self.wait_settled();
            match self.check_once(active, epoch, last) {
                Ok(()) => return,
                Err(Check::Violation(what)) => self.fail(what),
                Err(Check::Retry(reason)) => {
                    self.stats.check_retries += 1;
                    why = reason;
                    std::thread::sleep(Duration::from_millis(200));
                }
            }
        }
        self.fail(format!(
            "the invariants could not be checked: the active kept changing ({why})"
        ));
    }

    fn check_once(&mut self, active: usize, epoch: u64, last: bool) -> Result<(), Check> {
        let acked = self.submissions.lock().unwrap().acked.clone();
        {
            let submissions = self.submissions.lock().unwrap();
            if !submissions.refused.is_empty() {
                return Err(Check::Violation(format!(
                    "submissions were refused: {:?}",
                    submissions.refused
                )));
            }
        }
        let db = read_snapshot(&self.store).map_err(|e| retry(format!("the store: {e}")))?;
        self.check_store(&db, &acked).map_err(Check::Violation)?;
        // The server asked is the lease's holder (not a former active that
        // has yet to notice, nor one whose successor is still activating).
        if u64::try_from(db.lease_epoch).ok() != Some(epoch) {
            return Err(retry(format!(
                "the lease is at epoch {}, the active says {epoch}",
                db.lease_epoch
            )));
        }
        {
            // No app nobody submitted: at most the acknowledged, the
            // indeterminate and the one under way.
            let submissions = self.submissions.lock().unwrap();
            let bound = submissions.acked.len() as u64 + submissions.indeterminate + 1;
            if db.apps.len() as u64 > bound {
                return Err(Check::Violation(format!(
                    "the store holds {} apps; {} were acknowledged and {} indeterminate",
                    db.apps.len(),
                    submissions.acked.len(),
                    submissions.indeterminate
                )));
            }
        }
        self.check_epochs(&db).map_err(Check::Violation)?;
        self.check_api(active, epoch, &db, &acked, last)
    }

    /// What the store alone must satisfy.
    fn check_store(&self, db: &Snapshot, acked: &[String]) -> Result<(), String> {
        // Every acknowledged app is stored.
        let lost: Vec<&String> = acked
            .iter()
            .filter(|id| !db.apps.contains_key(*id))
            .collect();
        if !lost.is_empty() {
            return Err(format!(
                "{} acknowledged apps are not in the store: {lost:?}",
                lost.len()
            ));
        }
        // The ledger equals the sum of its charges.
        let charged: f64 = db
            .apps
            .values()
            .filter(|a| a["project"] == PROJECT)
            .map(|a| a["credits"].as_f64().unwrap_or(0.0))
            .sum();
        let tolerance = 1e-6 * db.total_used.abs().max(charged.abs()).max(1.0);
        if (db.total_used - charged).abs() > tolerance {
            return Err(format!(
                "the ledger says project {PROJECT} used {} credits, its apps were charged {charged} (a difference of {})",
                db.total_used,
                db.total_used - charged
            ));
        }
        // Each container's record: running, or ended once with one exit
        // status; used resources within each node's capacity.
        let mut ended: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
        let mut running: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        let mut used: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for (id, (app, is_running, record)) in &db.containers {
            if record["id"] != id.as_str() || record["app"] != app.as_str() {
                return Err(format!("container row {id} of {app} holds {record}"));
            }
            let (exit, finish) = (
                record["exit_status"].as_i64(),
                record["finish_time_ms"].as_u64(),
            );
            match (is_running, exit, finish) {
                (true, None, None) => {
                    running.entry(app).or_default().push(id);
                    let node = record["node"].as_str().unwrap_or("?").to_string();
                    let entry = used.entry(node).or_default();
                    entry.0 += record["resources"]["memory_mb"].as_u64().unwrap_or(0);
                    entry.1 += record["resources"]["vcores"].as_u64().unwrap_or(0);
                }
                (false, Some(exit), Some(_)) => ended.entry(app).or_default().push(exit),
                _ => {
                    return Err(format!(
                        "container {id} is stored {} with exit status {exit:?} and end {finish:?}: {record}",
                        if *is_running { "running" } else { "ended" }
                    ));
                }
            }
        }
        for (node, (memory, vcores)) in &used {
            if *memory > NODE_MEMORY_MB || *vcores > NODE_VCORES {
                return Err(format!(
                    "node {node} runs {memory} MB and {vcores} vcores by the store, beyond its {NODE_MEMORY_MB} MB and {NODE_VCORES} vcores"
                ));
            }
        }
        // Each app's counters of ended containers match its records; a
        // finished app ran each container it asked for once.
        for (id, app) in &db.apps {
            let exits = ended.get(id.as_str()).cloned().unwrap_or_default();
            let count = |f: &dyn Fn(i64) -> bool| exits.iter().filter(|e| f(**e)).count() as u64;
            let counter = |name: &str| app[name].as_u64().unwrap_or(0);
            let succeeded = count(&|e| e == 0);
            let lost = count(&|e| e == ABORTED);
            let preempted = count(&|e| e == PREEMPTED);
            let killed = count(&|e| e == KILLED);
            let failed = count(&|e| ![0, ABORTED, PREEMPTED, KILLED].contains(&e));
            let asked: u64 = app["asks"]
                .as_array()
                .map(|asks| asks.iter().map(|a| a["count"].as_u64().unwrap_or(0)).sum())
                .unwrap_or(0);
            let state = app["state"].as_str().unwrap_or("?");
            let problem = if counter("finished_containers") != succeeded {
                Some("its finished containers")
            } else if counter("lost_containers") != lost {
                Some("its lost containers")
            } else if counter("preempted_containers") != preempted {
                Some("its preempted containers")
            } else if !(failed..=failed + killed).contains(&counter("failed_containers")) {
                Some("its failed containers")
            } else if succeeded > asked {
                Some("more containers succeeded than it asked for")
            } else if state == "FINISHED" && succeeded != asked {
                Some("it finished without each container it asked for succeeding once")
            } else if matches!(state, "FINISHED" | "FAILED" | "KILLED")
                && running.contains_key(id.as_str())
            {
                Some("it ended with containers still running")
            } else {
                None
            };
            if let Some(problem) = problem {
                return Err(format!(
                    "app {id} ({state}): {problem}: the store holds exit statuses {exits:?} and running {:?} for it; its record: {app}",
                    running.get(id.as_str())
                ));
            }
        }
        Ok(())
    }

    /// No two writers in overlapping epochs; one holder per epoch.
    fn check_epochs(&self, db: &Snapshot) -> Result<(), String> {
        for pair in db.audit.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            if a.0 >= b.0 || a.3 > b.2 {
                return Err(format!(
                    "epoch {} ({}) wrote until {} after epoch {} ({}) began writing at {}: {:?}",
                    a.0, a.1, a.3, b.0, b.1, b.2, db.audit
                ));
            }
        }
        if let Some(newest) = db.audit.last()
            && newest.0 > db.lease_epoch
        {
            return Err(format!(
                "epoch {} wrote, beyond the lease's epoch {}",
                newest.0, db.lease_epoch
            ));
        }
        let seen = self.seen.lock().unwrap();
        for (epoch, holders) in &seen.active {
            if holders.len() > 1 {
                let who: Vec<String> = holders
                    .iter()
                    .map(|h| format!("server {} pid {}", self.slots[h.0].name, h.1))
                    .collect();
                return Err(format!(
                    "two servers answered ACTIVE under epoch {epoch}: {who:?}"
                ));
            }
        }
        for (epoch, holder, ..) in &db.audit {
            let Some(holders) = u64::try_from(*epoch).ok().and_then(|e| seen.active.get(&e)) else {
                if !self
                    .slots
                    .iter()
                    .any(|s| holder.starts_with(&format!("{} ", s.base)))
                {
                    return Err(format!("epoch {epoch} was written by a stranger: {holder}"));
                }
                continue;
            };
            let (slot, pid, _) = holders[0];
            let expected = format!("{} pid={pid}@", self.slots[slot].base);
            if !holder.starts_with(&expected) {
                return Err(format!(
                    "epoch {epoch} was written by {holder:?}, but server {} (pid {pid}) answered as its active",
                    self.slots[slot].name
                ));
            }
        }
        Ok(())
    }

    /// The active's view: every acknowledged app, nodes within capacity,
    /// containers as the store has them.
    fn check_api(
        &mut self,
        active: usize,
        epoch: u64,
        db: &Snapshot,
        acked: &[String],
        last: bool,
    ) -> Result<(), Check> {
        let base = self.slots[active].base.clone();
        let http = Http::new(Duration::from_secs(10));
        let get = |path: &str| -> Result<(u16, Value), Check> {
            match http.get(&format!("{base}{path}")) {
                Outcome::Answer(503, _) => Err(retry(format!("{path}: 503"))),
                Outcome::Answer(status, body) => Ok((status, body)),
                Outcome::NotSent(e) | Outcome::Unknown(e) => Err(retry(format!("{path}: {e}"))),
            }
        };
        let still_active = |what: &str| -> Result<(), Check> {
            match get("/ws/v1/cluster/info")? {
                (200, body)
                    if body["clusterInfo"]["haState"] == "ACTIVE"
                        && body["clusterInfo"]["epoch"].as_u64() == Some(epoch) =>
                {
                    Ok(())
                }
                (_, body) => Err(retry(format!("{what}: the active changed: {body}"))),
            }
        };
        still_active("before")?;
        let mut violations = Vec::new();

        // Every acknowledged app exists.
        let (status, listing) = get("/ws/v1/cluster/apps?limit=1000")?;
        if status != 200 {
            return Err(retry(format!("the apps: {status} {listing}")));
        }
        let listed: BTreeMap<String, Value> = listing["apps"]["app"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .map(|a| (a["id"].as_str().unwrap_or("").to_string(), a))
            .collect();
        for id in acked.iter().filter(|id| !listed.contains_key(*id)) {
            let (status, body) = get(&format!("/ws/v1/cluster/apps/{id}"))?;
            if status != 200 {
                violations.push(format!(
                    "acknowledged app {id}: GET answers {status} {body}"
                ));
            }
        }
        // A few at random, one by one, too.
        for _ in 0..3.min(acked.len()) {
            let id = &acked[self.rng.below(acked.len() as u64) as usize];
            let (status, body) = get(&format!("/ws/v1/cluster/apps/{id}"))?;
            if status != 200 {
                violations.push(format!(
                    "acknowledged app {id}: GET answers {status} {body}"
                ));
            }
        }

        // No node beyond its capacity.
        let (status, nodes) = get("/ws/v1/cluster/nodes")?;
        if status != 200 {
            return Err(retry(format!("the nodes: {status} {nodes}")));
        }
        for node in nodes["nodes"]["node"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            let memory = node["usedMemoryMB"].as_u64().unwrap_or(u64::MAX);
            let vcores = node["usedVirtualCores"].as_u64().unwrap_or(u64::MAX);
            if memory > NODE_MEMORY_MB || vcores > NODE_VCORES {
                violations.push(format!("node beyond its capacity: {node}"));
            }
        }

        // Containers: the active agrees with the store, no id twice, no
        // container running twice.
        let mut everywhere: BTreeMap<String, String> = BTreeMap::new();
        let mut running: BTreeMap<String, String> = BTreeMap::new();
        let mut by_app: BTreeMap<&str, Vec<(&String, bool, &Value)>> = BTreeMap::new();
        for (id, (app, is_running, record)) in &db.containers {
            by_app
                .entry(app)
                .or_default()
                .push((id, *is_running, record));
        }
        let mut verified_now = Vec::new();
        for (app_id, app) in &db.apps {
            if !last && self.verified.contains(app_id) {
                continue;
            }
            let (status, body) = get(&format!("/ws/v1/cluster/apps/{app_id}/containers"))?;
            if status != 200 {
                violations.push(format!(
                    "app {app_id} is stored, yet its containers answer {status} {body}"
                ));
                continue;
            }
            let api: Vec<Value> = body["containers"].as_array().cloned().unwrap_or_default();
            let mut api_by_id: BTreeMap<String, &Value> = BTreeMap::new();
            for record in &api {
                let id = record["id"].as_str().unwrap_or("").to_string();
                if let Some(other) = everywhere.insert(id.clone(), app_id.clone()) {
                    violations.push(format!(
                        "container {id} is listed under apps {other} and {app_id}"
                    ));
                }
                if api_by_id.insert(id.clone(), record).is_some() {
                    violations.push(format!("container {id} is listed twice under app {app_id}"));
                }
                if record.get("exitStatus").is_none() {
                    let node = record["node"].as_str().unwrap_or("?").to_string();
                    if let Some(other) = running.insert(id.clone(), node.clone()) {
                        violations.push(format!("container {id} runs on {other} and {node}"));
                    }
                    if record.get("finishTimeMs").is_some() {
                        violations.push(format!(
                            "container {id} has an end but no exit status: {record}"
                        ));
                    }
                }
            }
            let stored = by_app.get(app_id.as_str()).cloned().unwrap_or_default();
            for (id, is_running, record) in &stored {
                let Some(seen) = api_by_id.get(id.as_str()) else {
                    violations.push(format!(
                        "container {id} of app {app_id} is stored ({record}) but the active does not list it"
                    ));
                    continue;
                };
                let same_place = seen["node"] == record["node"]
                    && seen["startTimeMs"] == record["start_time_ms"]
                    && seen["attempt"] == record["attempt"];
                // The active may be ahead of the store, never behind it.
                let agrees = if *is_running && !last {
                    same_place
                } else {
                    same_place
                        && seen["exitStatus"] == record["exit_status"]
                        && seen["finishTimeMs"] == record["finish_time_ms"]
                };
                if !agrees {
                    violations.push(format!(
                        "container {id} of app {app_id}: the store holds {record}, the active says {seen}"
                    ));
                }
            }
            if last && api.len() != stored.len() {
                let stored_ids: BTreeSet<&str> = stored.iter().map(|c| c.0.as_str()).collect();
                let extra: Vec<&Value> = api
                    .iter()
                    .filter(|r| !stored_ids.contains(r["id"].as_str().unwrap_or("")))
                    .collect();
                violations.push(format!(
                    "app {app_id}: the active lists {} containers, the store {}; not stored: {extra:?}",
                    api.len(),
                    stored.len()
                ));
            }
            let ended = matches!(
                app["state"].as_str(),
                Some("FINISHED" | "FAILED" | "KILLED")
            );
            if ended && stored.iter().all(|c| !c.1) {
                verified_now.push(app_id.clone());
            }
        }
        // The answers all came from the same active under the same epoch,
        // which the lease still has.
        still_active("after")?;
        let lease = self
            .store
            .query("SELECT epoch FROM weft_leader WHERE id = 1", &[])
            .map_err(|e| retry(format!("the lease: {e}")))?;
        let lease_epoch = lease
            .first()
            .and_then(|r| r.first())
            .and_then(|v| v.as_i64());
        if lease_epoch.and_then(|e| u64::try_from(e).ok()) != Some(epoch) {
            return Err(retry(format!(
                "the lease moved on to epoch {lease_epoch:?} during the check"
            )));
        }
        if !violations.is_empty() {
            return Err(Check::Violation(format!(
                "server {} (epoch {epoch}) disagrees:\n  {}",
                self.slots[active].name,
                violations.join("\n  ")
            )));
        }
        self.verified.extend(verified_now);
        Ok(())
    }

    /// Stops the client, lets every app end, checks once more, and prints
    /// the summary; then stops everything.
    fn finish(mut self) {
        self.client.stop();
        let begun = Instant::now();
        let http = Http::new(Duration::from_secs(5));
        loop {
            let (active, _) = self.wait_settled();
            let url = format!(
                "{}/ws/v1/cluster/apps?states=NEW,NEW_SAVING,SUBMITTED,ACCEPTED,RUNNING&limit=1000",
                self.slots[active].base
            );
            if let Outcome::Answer(200, body) = http.get(&url) {
                let open = body["apps"]["app"].as_array().cloned().unwrap_or_default();
                if open.is_empty() {
                    break;
                }
                if begun.elapsed() > DRAIN_LIMIT {
                    let ids: Vec<String> = open
                        .iter()
                        .map(|a| format!("{} {} {}", a["id"], a["state"], a["pendingContainers"]))
                        .collect();
                    self.fail(format!(
                        "{} apps did not end within {DRAIN_LIMIT:?} after the client stopped: {ids:?}",
                        open.len()
                    ));
                }
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let drained_in = begun.elapsed();
        self.check(true);
        let db = read_snapshot(&self.store).unwrap_or_else(|e| self.fail(e));
        let submissions = self.submissions.lock().unwrap();
        let (acked, indeterminate, redirected) = (
            submissions.acked.len(),
            submissions.indeterminate,
            submissions.redirected,
        );
        drop(submissions);
        let mut times = self.stats.failover_times.clone();
        times.sort();
        let median = times.get(times.len() / 2).copied().unwrap_or_default();
        let max = times.last().copied().unwrap_or_default();
        // How often an elected server did not stay active (not an
        // invariant: safety holds by the fence; it makes failovers slow).
        let logs: String = self
            .slots
            .iter()
            .map(|s| std::fs::read_to_string(&s.log).unwrap_or_default())
            .collect();
        let count = |needle: &str| logs.lines().filter(|l| l.contains(needle)).count();
        let (elected, unfinished, unrenewed) = (
            count("elected: taking over"),
            count("cannot become active"),
            count("could not be renewed in time"),
        );
        let ended: Vec<i64> = db
            .containers
            .values()
            .filter_map(|c| c.2["exit_status"].as_i64())
            .collect();
        say(&format!(
            "fault run summary (seed {}): {} iterations; faults {:?}; {} failovers (epochs 1 → {}), \
             from the fault to a new active median {:.2} s, max {:.2} s; {} apps acknowledged, \
             {} indeterminate, {} tried elsewhere; {} apps and {} containers stored ({} exited 0, \
             {} aborted, {} failed or killed); {:.3} credits charged; {} checks ({} retried); \
             drained in {:.1} s; {} elections, of which {} activations were fenced off before \
             they finished; {} step-downs for a lease not renewed in time (paused actives' \
             included)",
            self.seed,
            self.iteration - 1,
            self.stats.faults,
            self.stats.failovers,
            db.lease_epoch,
            median.as_secs_f64(),
            max.as_secs_f64(),
            acked,
            indeterminate,
            redirected,
            db.apps.len(),
            db.containers.len(),
            ended.iter().filter(|e| **e == 0).count(),
            ended.iter().filter(|e| **e == ABORTED).count(),
            ended.iter().filter(|e| ![0, ABORTED].contains(*e)).count(),
            db.total_used,
            self.stats.checks,
            self.stats.check_retries,
            drained_in.as_secs_f64(),
            elected,
            unfinished,
            unrenewed,
        ));
        assert!(
            acked as u64 >= self.iteration,
            "the client got too few apps in ({acked}): the run tested little"
        );
        assert!(
            db.total_used > 0.0,
            "nothing was charged: the run tested little"
        );
        for agent in &mut self.agents {
            drop(agent.process.take());
        }
        for slot in &mut self.slots {
            *slot.pid.lock().unwrap() = None;
            if let Some(server) = slot.server.take() {
                server.stop();
            }
        }
    }

    /// Fails the test: what, the seed and iteration, and the logs' tails.
    fn fail(&self, what: String) -> ! {
        let mut message = format!(
            "fault run, seed {} (replay with WEFT_FAULT_SEED={}), iteration {}: {what}\n",
            self.seed, self.seed, self.iteration
        );
        for slot in &self.slots {
            message.push_str(&tail(&slot.log, &format!("server {}", slot.name), 60));
        }
        for agent in &self.agents {
            message.push_str(&tail(&agent.log, &agent.node, 20));
        }
        message.push_str(&format!("(database {})\n", self.url));
        panic!("{message}");
    }
}

/// The last `lines` lines of `path`, headed by `what`.
fn tail(path: &Path, what: &str, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    // Without the standbys' 503s, which would fill it.
    let all: Vec<&str> = text
        .lines()
        .filter(|l| !l.contains("resource manager is STANDBY"))
        .collect();
    let from = all.len().saturating_sub(lines);
    format!(
        "---- {what}: the last {} lines of {} (standbys' 503s left out) ----\n{}\n",
        all.len() - from,
        path.display(),
        all[from..].join("\n")
    )
}
