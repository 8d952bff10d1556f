//! A load generator for the heartbeat protocol (issue 9, benchmark (b)):
//! many simulated node agents, each registering with a running `weft serve`
//! and then heartbeating it over its own HTTP/1.1 keep-alive connection,
//! as `weft agent` does (docs/agents.md): numbered heartbeats
//! (`response_id`), every running container listed, ends resent until
//! acknowledged, launch orders taken once, kill orders obeyed. Nothing is
//! executed: a launched container is reported running in the next
//! heartbeat and ended (exit 0) in a later one, after `--run-ms`; with
//! `--out-of-band`, it ends when `--run-ms` is over and the end goes out at
//! once, as `weft agent` reports a container's end.
//!
//! It measures, client side, over a window after a warm-up: heartbeats
//! answered per second and their latency (send to the whole answer read:
//! p50, p99, max); with `--containers N`, it submits N containers of
//! `/bin/true` when the window opens and counts the launch orders that
//! reach its agents per second. It reads its own CPU, and the server's
//! (per thread) when given `--server-pid`, from /proc.
//!
//! ```sh
//! cargo build --release -p weft-host --example heartbeat_load
//! target/release/examples/heartbeat_load --server http://127.0.0.1:18490 --nodes 10000
//! ```
//!
//! `bench-scripts/heartbeat-load.sh` starts the server, runs this and stops
//! the server. The HTTP client is a minimal one written here (a POST with a
//! Content-Length, an answer with a Content-Length) on tokio's sockets:
//! hyper's client needs crates this workspace does not have, and a small
//! client leaves more of a 2-core machine to the server being measured.

use std::collections::BTreeMap;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::Parser;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{Semaphore, watch};

use weft_host::protocol::node::ContainerEnd;
use weft_host::protocol::node::RegisteredNode;
use weft_host::protocol::node::{HEARTBEAT_RETRY, heartbeat_wait, heartbeat_wait_after_a_stall};
use weft_host::protocol::node::{Heartbeat, RegisterNode};
use weft_host::protocol::node::{NodeAction, NodeOrders};

/// When a simulated agent sends its next regular heartbeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum AfterAnswer {
    /// On its grid of ticks an interval apart, unless the answer came more
    /// than an interval after its tick (then an interval after the answer);
    /// with `--out-of-band`, always an interval after the answer. Every
    /// figure before 2026-11-28 21:00 UTC.
    Grid,
    /// An interval after every answer, exactly.
    Interval,
    /// Up to a tenth of an interval sooner, at random, or anywhere in the
    /// interval after an answer slower than it or the first answer after
    /// failed tries; after a failed try, half a second less up to a tenth:
    /// as `weft agent` waits (`protocol::node::heartbeat_wait`).
    Agent,
}

impl AfterAnswer {
    /// After a failed try (no answer, a refusal, an answer that does not
    /// parse): `weft agent` tries again after [`HEARTBEAT_RETRY`] less up
    /// to a tenth, the agent before it after [`HEARTBEAT_RETRY`]; the grid
    /// keeps its phase.
    fn after_failure(self, ticks: &mut tokio::time::Interval, rng: &mut u64) {
        match self {
            AfterAnswer::Grid => {}
            AfterAnswer::Interval => ticks.reset_at((Instant::now() + HEARTBEAT_RETRY).into()),
            AfterAnswer::Agent => ticks.reset_at(
                (Instant::now() + heartbeat_wait(HEARTBEAT_RETRY, next_draw(rng))).into(),
            ),
        }
    }
}

/// The next of an agent's random draws (a 64-bit LCG).
fn next_draw(rng: &mut u64) -> u64 {
    *rng = rng
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *rng
}

#[derive(Debug, Clone, Parser)]
#[command(about = "Simulated node agents heartbeating a Weft server over HTTP")]
struct Args {
    /// The server: http://HOST:PORT (plain HTTP only).
    #[arg(long, default_value = "http://127.0.0.1:18490")]
    server: String,
    /// How many simulated agents (nodes), one connection each.
    #[arg(long, default_value_t = 10_000)]
    nodes: usize,
    /// Each agent's heartbeat interval; 0 takes the one the server gives
    /// at registration (yarn.resourcemanager.nodemanagers.heartbeat-interval-ms).
    #[arg(long, default_value_t = 0)]
    interval_ms: u64,
    /// Seconds of heartbeats before the measured window opens.
    #[arg(long, default_value_t = 5)]
    warmup_s: u64,
    /// Length of the measured window, in seconds.
    #[arg(long, default_value_t = 20)]
    duration_s: u64,
    /// Worker threads of the generator (1: one thread for everything).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Each simulated node's memory and vcores.
    #[arg(long, default_value_t = 65_536)]
    node_memory_mb: u64,
    #[arg(long, default_value_t = 16)]
    node_vcores: u32,
    /// Containers to submit when the window opens (0: heartbeats only),
    /// as apps of at most `--per-app` containers.
    #[arg(long, default_value_t = 0)]
    containers: u64,
    #[arg(long, default_value_t = 1_000_000)]
    per_app: u64,
    #[arg(long, default_value_t = 1024)]
    container_memory_mb: u64,
    #[arg(long, default_value_t = 1)]
    container_vcores: u32,
    /// How long a launched container "runs" before its end is reported
    /// (without `--out-of-band`, it is reported running in at least one
    /// heartbeat first).
    #[arg(long, default_value_t = 0)]
    run_ms: u64,
    /// Report ends at once, as `weft agent` does (YARN's out-of-band
    /// heartbeat): a heartbeat goes out when a container's `--run-ms` is
    /// over, not sooner than 1 ms after the last one, besides those of the
    /// interval. Without it the agents are YARN's NodeManagers, which
    /// report ends only at the interval.
    #[arg(long)]
    out_of_band: bool,
    /// When an agent sends its next regular heartbeat after an answer.
    #[arg(long, value_enum, default_value_t = AfterAnswer::Agent)]
    after_answer: AfterAnswer,
    /// The user the agents and the submissions claim (X-Weft-User).
    #[arg(long, default_value = "bench")]
    user: String,
    /// The server's pid: its CPU (per thread) over the window is read from /proc.
    #[arg(long)]
    server_pid: Option<u32>,
    /// Connections opened at once while the agents register.
    #[arg(long, default_value_t = 64)]
    connect_concurrency: usize,
}

/// The soonest an out-of-band heartbeat follows the one before (`weft
/// agent`'s `MIN_GAP`): ends closer together go in one heartbeat.
const OUT_OF_BAND_GAP: Duration = Duration::from_millis(1);

/// Ms since the epoch (a container end's `finished_ms`).
fn epoch_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

// ---------------------------------------------------------------- HTTP

/// One HTTP/1.1 keep-alive connection, one request at a time.
struct Conn {
    address: String,
    stream: TcpStream,
    buffer: Vec<u8>,
    request: Vec<u8>,
}

/// An answer: its status and body.
struct Answer {
    status: u16,
    body: Vec<u8>,
}

impl Conn {
    async fn open(address: &str) -> io::Result<Conn> {
        let stream = TcpStream::connect(address).await?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            address: address.to_string(),
            stream,
            buffer: Vec::with_capacity(8192),
            request: Vec::with_capacity(8192),
        })
    }

    /// POSTs `body` to `path`. An answer that says `Connection: close`
    /// (or one that cannot be read) leaves the connection reopened for
    /// the next request.
    async fn post(&mut self, path: &str, user: &str, body: &[u8]) -> io::Result<Answer> {
        let result = self.exchange(path, user, body).await;
        match result {
            Ok((answer, keep)) => {
                if !keep {
                    self.reopen().await?;
                }
                Ok(answer)
            }
            Err(error) => {
                // The next request goes down a fresh connection.
                let _ = self.reopen().await;
                Err(error)
            }
        }
    }

    async fn reopen(&mut self) -> io::Result<()> {
        *self = Conn::open(&self.address).await?;
        Ok(())
    }

    async fn exchange(
        &mut self,
        path: &str,
        user: &str,
        body: &[u8],
    ) -> io::Result<(Answer, bool)> {
        use std::io::Write;
        self.request.clear();
        write!(
            self.request,
            "POST {path} HTTP/1.1\r\nHost: {}\r\nX-Weft-User: {user}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            self.address,
            body.len()
        )?;
        self.request.extend_from_slice(body);
        self.stream.write_all(&self.request).await?;
        self.buffer.clear();
        // The head, up to its blank line.
        let head_end = loop {
            if let Some(at) = find(&self.buffer, b"\r\n\r\n") {
                break at + 4;
            }
            self.read_more().await?;
        };
        let head = std::str::from_utf8(&self.buffer[..head_end])
            .map_err(|_| io::Error::other("the answer's head is not text"))?;
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|line| line.split(' ').nth(1))
            .and_then(|code| code.parse::<u16>().ok())
            .ok_or_else(|| io::Error::other(format!("no status line in {head:?}")))?;
        let (mut length, mut keep) = (None, true);
        for line in lines {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                length = value.parse::<usize>().ok();
            } else if name.eq_ignore_ascii_case("connection") {
                keep = !value.eq_ignore_ascii_case("close");
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                return Err(io::Error::other(
                    "a chunked answer (this client reads Content-Length only)",
                ));
            }
        }
        let length = length.ok_or_else(|| io::Error::other("an answer with no Content-Length"))?;
        while self.buffer.len() < head_end + length {
            self.read_more().await?;
        }
        let body = self.buffer[head_end..head_end + length].to_vec();
        Ok((Answer { status, body }, keep))
    }

    async fn read_more(&mut self) -> io::Result<()> {
        // Straight into the buffer's spare room (no zeroed scratch copy).
        self.buffer.reserve(16 * 1024);
        if self.stream.read_buf(&mut self.buffer).await? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed the connection",
            ));
        }
        Ok(())
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

// ---------------------------------------------------------------- counters

/// Per-second counts since the heartbeats started, shared by all agents,
/// for the timeline and the allocation figures.
struct Timeline {
    start: Instant,
    heartbeats: Vec<AtomicU64>,
    launches: Vec<AtomicU64>,
    acknowledged: Vec<AtomicU64>,
    /// The slowest answer (µs) and the answers over 10 ms, by the second
    /// they were sent in: shows whether slow answers come in bursts.
    slowest_us: Vec<AtomicU64>,
    over_10ms: Vec<AtomicU64>,
    /// The latest a heartbeat was sent after its tick (µs), by second: a
    /// generator that falls behind shows here, not in the server's answers.
    latest_send_us: Vec<AtomicU64>,
}

impl Timeline {
    fn new(start: Instant, seconds: usize) -> Timeline {
        let zeros = || (0..seconds).map(|_| AtomicU64::new(0)).collect();
        Timeline {
            start,
            heartbeats: zeros(),
            launches: zeros(),
            acknowledged: zeros(),
            slowest_us: zeros(),
            over_10ms: zeros(),
            latest_send_us: zeros(),
        }
    }

    fn add(counts: &[AtomicU64], start: Instant, at: Instant, n: u64) {
        if at < start || n == 0 {
            return;
        }
        let second = at.duration_since(start).as_secs() as usize;
        if let Some(count) = counts.get(second) {
            count.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Records one answer's latency under the second it was sent in.
    fn latency(&self, sent: Instant, latency: Duration) {
        if sent < self.start {
            return;
        }
        let second = sent.duration_since(self.start).as_secs() as usize;
        let us = latency.as_micros().min(u128::from(u64::MAX)) as u64;
        if let Some(slowest) = self.slowest_us.get(second) {
            slowest.fetch_max(us, Ordering::Relaxed);
        }
        if us > 10_000 {
            Timeline::add(&self.over_10ms, self.start, sent, 1);
        }
    }

    /// Records how long after its `tick` a heartbeat was `sent`.
    fn send_lateness(&self, tick: Instant, sent: Instant) {
        if sent < self.start {
            return;
        }
        let second = sent.duration_since(self.start).as_secs() as usize;
        let us = sent
            .duration_since(tick)
            .as_micros()
            .min(u128::from(u64::MAX)) as u64;
        if let Some(latest) = self.latest_send_us.get(second) {
            latest.fetch_max(us, Ordering::Relaxed);
        }
    }

    /// The values of `counts` for the `seconds` from `from`.
    fn seconds(counts: &[AtomicU64], from: usize, seconds: usize) -> Vec<u64> {
        counts[from..from + seconds]
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect()
    }
}

/// When the heartbeats begin (all agents registered) and the measured window.
#[derive(Debug, Clone, Copy)]
struct Plan {
    begin: Instant,
    window_start: Instant,
    window_end: Instant,
}

/// Shared by the agents.
struct Shared {
    args: Args,
    address: String,
    registered: AtomicUsize,
    /// Set once every agent has registered.
    plan: watch::Receiver<Option<Plan>>,
    timeline: Timeline,
    /// Launch orders received (each container once), and when the first
    /// and the last came (ns since the timeline's start).
    launches_total: AtomicU64,
    first_launch_ns: AtomicU64,
    last_launch_ns: AtomicU64,
    /// Ends acknowledged by the server.
    acknowledged_total: AtomicU64,
    /// The heartbeat interval the agents use (ms).
    interval_ms: AtomicU64,
}

/// What one agent saw in the window.
#[derive(Default)]
struct AgentStats {
    latencies_us: Vec<u32>,
    ok: u64,
    errors: u64,
    bad_status: u64,
    resyncs: u64,
    kills: u64,
    repeated_launches: u64,
    first_error: Option<String>,
}

// ---------------------------------------------------------------- one agent

/// A container the agent "runs": when its launch order came, and whether a
/// heartbeat has reported it running yet.
struct Running {
    since: Instant,
    reported: bool,
}

struct Agent {
    node_id: String,
    conn: Conn,
    response_id: u64,
    running: BTreeMap<String, Running>,
    unacknowledged: BTreeMap<String, ContainerEnd>,
    /// Containers were killed since the last heartbeat: with
    /// `--out-of-band`, their ends go out at once, as `weft agent`'s do.
    killed_since_beat: bool,
}

impl Agent {
    fn registration(&self, args: &Args) -> RegisterNode {
        // Ended but unacknowledged containers are listed as running, as
        // the real agent does when it registers again.
        let running = self
            .running
            .keys()
            .chain(self.unacknowledged.keys())
            .cloned()
            .collect();
        RegisterNode {
            node_id: self.node_id.clone(),
            memory_mb: args.node_memory_mb,
            vcores: args.node_vcores,
            gpus: 0,
            running: Some(running),
            isolation: Some("none: simulated by heartbeat_load".into()),
            http_address: None,
            logs_secret: None,
            rack: None,
            attributes: Default::default(),
            labels: Vec::new(),
            nm_address: None,
            health: None,
        }
    }

    async fn register(&mut self, args: &Args) -> Result<RegisteredNode, String> {
        let body = serde_json::to_vec(&self.registration(args)).map_err(|e| e.to_string())?;
        let answer = self
            .conn
            .post("/ws/v1/cluster/nodes/register", &args.user, &body)
            .await
            .map_err(|e| format!("register {}: {e}", self.node_id))?;
        if answer.status != 200 {
            return Err(format!(
                "register {}: {} {}",
                self.node_id,
                answer.status,
                String::from_utf8_lossy(&answer.body)
            ));
        }
        self.response_id = 0;
        let registration: RegisteredNode = serde_json::from_slice(&answer.body)
            .map_err(|e| format!("register {}: {e}", self.node_id))?;
        for order in &registration.kill {
            self.kill(&order.container_id, order.exit_status);
        }
        Ok(registration)
    }

    fn kill(&mut self, id: &str, exit_status: i32) {
        if self.running.remove(id).is_some() {
            self.killed_since_beat = true;
            self.unacknowledged.insert(
                id.to_string(),
                ContainerEnd {
                    container_id: id.to_string(),
                    exit_status,
                    diagnostics: "killed (simulated)".into(),
                    finished_ms: epoch_ms(),
                    started_ms: None,
                },
            );
        }
    }

    /// The next heartbeat: containers past `run_ms` (and, unless ends are
    /// reported `out_of_band`, reported running once) end now (exit 0);
    /// every other is reported running.
    fn heartbeat(&mut self, run: Duration, out_of_band: bool) -> Heartbeat {
        self.killed_since_beat = false;
        let now = Instant::now();
        let done: Vec<String> = self
            .running
            .iter()
            .filter(|(_, c)| (c.reported || out_of_band) && now.duration_since(c.since) >= run)
            .map(|(id, _)| id.clone())
            .collect();
        for id in done {
            self.running.remove(&id);
            self.unacknowledged.insert(
                id.clone(),
                ContainerEnd {
                    container_id: id,
                    exit_status: 0,
                    diagnostics: String::new(),
                    finished_ms: epoch_ms(),
                    started_ms: None,
                },
            );
        }
        for container in self.running.values_mut() {
            container.reported = true;
        }
        Heartbeat {
            finished: Vec::new(),
            ended: self
                .unacknowledged
                .values()
                .take(weft_host::limits::MAX_FINISHED_PER_HEARTBEAT)
                .cloned()
                .collect(),
            running: Some(self.running.keys().cloned().collect()),
            queued: Vec::new(),
            response_id: Some(self.response_id),
            health: None,
        }
    }

    /// When an end is next to report: now if containers were killed since
    /// the last heartbeat, else when the first of its running containers
    /// ends (`run` after its launch order came), if it runs any.
    fn next_end(&self, run: Duration) -> Option<Instant> {
        if self.killed_since_beat {
            return Some(Instant::now());
        }
        self.running.values().map(|c| c.since + run).min()
    }

    /// Carries out an answer; returns how many new launch orders it held
    /// and how many ends it acknowledged.
    fn carry_out(&mut self, orders: &NodeOrders, stats: &mut AgentStats) -> (u64, u64) {
        self.response_id = orders.response_id;
        let mut acknowledged = 0;
        for id in &orders.acknowledged {
            if self.unacknowledged.remove(id).is_some() {
                acknowledged += 1;
            }
        }
        for order in &orders.kill {
            stats.kills += 1;
            self.kill(&order.container_id, order.exit_status);
        }
        let mut launched = 0;
        let now = Instant::now();
        for order in &orders.launch {
            let id = &order.container_id;
            if self.running.contains_key(id) || self.unacknowledged.contains_key(id) {
                stats.repeated_launches += 1;
                continue;
            }
            self.running.insert(
                id.clone(),
                Running {
                    since: now,
                    reported: false,
                },
            );
            launched += 1;
        }
        (launched, acknowledged)
    }
}

async fn run_agent(index: usize, shared: Arc<Shared>, connect: Arc<Semaphore>) -> AgentStats {
    let args = &shared.args;
    let mut stats = AgentStats::default();
    let node_id = format!("load-{index:05}:8041");
    // Connecting and registering, a few agents at a time (the server's
    // listen backlog is short), retried while the server refuses.
    let (mut agent, registration) = {
        let _permit = connect.acquire().await.expect("never closed");
        let mut tries = 0;
        loop {
            tries += 1;
            let attempt = async {
                let conn = Conn::open(&shared.address)
                    .await
                    .map_err(|e| format!("connect: {e}"))?;
                let mut agent = Agent {
                    node_id: node_id.clone(),
                    conn,
                    response_id: 0,
                    running: BTreeMap::new(),
                    unacknowledged: BTreeMap::new(),
                    killed_since_beat: false,
                };
                let registration = agent.register(args).await?;
                Ok::<_, String>((agent, registration))
            };
            match attempt.await {
                Ok(done) => break done,
                Err(error) if tries >= 20 => {
                    stats.errors += 1;
                    stats.first_error = Some(error);
                    shared.registered.fetch_add(1, Ordering::Relaxed);
                    return stats;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(100 * tries)).await,
            }
        }
    };
    shared.registered.fetch_add(1, Ordering::Relaxed);
    let interval = Duration::from_millis(if args.interval_ms > 0 {
        args.interval_ms
    } else {
        registration.heartbeat_interval_ms.max(1)
    });
    shared
        .interval_ms
        .store(interval.as_millis() as u64, Ordering::Relaxed);
    let mut plan = shared.plan.clone();
    let plan = loop {
        if let Some(plan) = *plan.borrow_and_update() {
            break plan;
        }
        if plan.changed().await.is_err() {
            return stats;
        }
    };
    // Spread over one interval, as agents started at different times are.
    let offset = interval.mul_f64(index as f64 / args.nodes as f64);
    let mut ticks = tokio::time::interval_at((plan.begin + offset).into(), interval);
    // A heartbeat late past its tick does not make the next ones bunch up
    // (a real agent waits for an answer before it sends again). When the
    // next regular one goes is `--after-answer`'s: with `grid` an agent
    // keeps its phase on the grid, which differs from an interval after
    // the answer only by the answer's latency, unless the answer was late
    // or the agent reports ends out of band; with `interval` an interval
    // after every answer, as YARN's NodeManager waits; with `agent` (the
    // default) up to a tenth sooner, at random, or anywhere in the
    // interval after an answer slower than it, as `weft agent` waits.
    // Answers that come in one burst (this one thread reads many at once;
    // a server answers many at once after a pause) keep `interval`'s
    // agents in step for good: `agent`'s drift apart.
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let run = Duration::from_millis(args.run_ms);
    let (window_start, window_end) = (plan.window_start, plan.window_end);
    let path = format!("/ws/v1/cluster/nodes/{}/heartbeat", agent.node_id);
    let mut last_sent = Instant::now();
    // The agent's random draws for `--after-answer agent` (a 64-bit LCG
    // seeded by its index: each agent's sequence its own).
    let mut rng = (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    // Whether the last try failed (the next answer is then taken as a
    // stall's, as `weft agent` takes it).
    let mut failed = false;
    loop {
        // Out of band: at the first end, unless the interval's tick comes
        // first (`Interval::tick` may be dropped unfinished).
        let end = args.out_of_band.then(|| agent.next_end(run)).flatten();
        let tick = match end {
            Some(end) => {
                let early = end.max(last_sent + OUT_OF_BAND_GAP);
                tokio::select! {
                    biased;
                    tick = ticks.tick() => tick.into_std(),
                    () = tokio::time::sleep_until(early.into()) => early,
                }
            }
            None => ticks.tick().await.into_std(),
        };
        if tick >= window_end {
            break;
        }
        let beat = agent.heartbeat(run, args.out_of_band);
        let body = serde_json::to_vec(&beat).expect("a heartbeat serializes");
        let sent = Instant::now();
        last_sent = sent;
        shared.timeline.send_lateness(tick, sent);
        let counted = sent >= window_start && sent < window_end;
        let answer = agent.conn.post(&path, &args.user, &body).await;
        let latency = sent.elapsed();
        let answer = match answer {
            Ok(answer) => answer,
            Err(error) => {
                if counted {
                    stats.errors += 1;
                }
                stats
                    .first_error
                    .get_or_insert(format!("heartbeat: {error}"));
                failed = true;
                args.after_answer.after_failure(&mut ticks, &mut rng);
                continue;
            }
        };
        if answer.status == 404 {
            // Unknown to the server (lost, restarted): register again.
            stats.resyncs += 1;
            if let Err(error) = agent.register(args).await {
                stats.first_error.get_or_insert(error);
            }
            continue;
        }
        if answer.status != 200 {
            if counted {
                stats.bad_status += 1;
            }
            stats.first_error.get_or_insert(format!(
                "heartbeat: {} {}",
                answer.status,
                String::from_utf8_lossy(&answer.body)
            ));
            failed = true;
            args.after_answer.after_failure(&mut ticks, &mut rng);
            continue;
        }
        let orders: NodeOrders = match serde_json::from_slice(&answer.body) {
            Ok(orders) => orders,
            Err(error) => {
                stats.errors += 1;
                stats.first_error.get_or_insert(format!("answer: {error}"));
                failed = true;
                args.after_answer.after_failure(&mut ticks, &mut rng);
                continue;
            }
        };
        let done = Instant::now();
        match args.after_answer {
            AfterAnswer::Grid if args.out_of_band || done >= tick + interval => ticks.reset(),
            AfterAnswer::Grid => {}
            AfterAnswer::Interval => ticks.reset(),
            AfterAnswer::Agent => {
                let draw = next_draw(&mut rng);
                let wait = if latency > interval || failed {
                    heartbeat_wait_after_a_stall(interval, draw)
                } else {
                    heartbeat_wait(interval, draw)
                };
                ticks.reset_at((done + wait).into());
            }
        }
        failed = false;
        Timeline::add(&shared.timeline.heartbeats, shared.timeline.start, done, 1);
        shared.timeline.latency(sent, latency);
        if counted {
            stats.ok += 1;
            stats
                .latencies_us
                .push(latency.as_micros().min(u128::from(u32::MAX)) as u32);
        }
        if orders.action == NodeAction::Resync {
            stats.resyncs += 1;
            if let Err(error) = agent.register(args).await {
                stats.first_error.get_or_insert(error);
            }
            continue;
        }
        let (launched, acknowledged) = agent.carry_out(&orders, &mut stats);
        if launched > 0 {
            let ns = done.duration_since(shared.timeline.start).as_nanos() as u64;
            shared.launches_total.fetch_add(launched, Ordering::Relaxed);
            shared.first_launch_ns.fetch_min(ns, Ordering::Relaxed);
            shared.last_launch_ns.fetch_max(ns, Ordering::Relaxed);
            Timeline::add(
                &shared.timeline.launches,
                shared.timeline.start,
                done,
                launched,
            );
        }
        if acknowledged > 0 {
            shared
                .acknowledged_total
                .fetch_add(acknowledged, Ordering::Relaxed);
            Timeline::add(
                &shared.timeline.acknowledged,
                shared.timeline.start,
                done,
                acknowledged,
            );
        }
    }
    stats
}

// ---------------------------------------------------------------- /proc

/// utime + stime, in clock ticks, of a process or one of its threads.
fn cpu_ticks(stat_path: &str) -> Option<(String, u64)> {
    let text = std::fs::read_to_string(stat_path).ok()?;
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let name = text[open + 1..close].to_string();
    let fields: Vec<&str> = text[close + 2..].split_whitespace().collect();
    // After "(comm) ": state is field 3, utime 14 and stime 15 (1-based).
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((name, utime + stime))
}

/// CPU ticks of a process and of each of its threads (by tid).
fn process_cpu(pid: u32) -> (u64, BTreeMap<u32, (String, u64)>) {
    let total = cpu_ticks(&format!("/proc/{pid}/stat")).map_or(0, |(_, t)| t);
    let mut threads = BTreeMap::new();
    if let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for entry in entries.flatten() {
            if let Some(tid) = entry.file_name().to_str().and_then(|s| s.parse().ok())
                && let Some(found) = cpu_ticks(&format!("/proc/{pid}/task/{tid}/stat"))
            {
                threads.insert(tid, found);
            }
        }
    }
    (total, threads)
}

fn clock_ticks_per_second() -> f64 {
    // Linux reports /proc times in USER_HZ, 100 on every common build.
    100.0
}

// ---------------------------------------------------------------- submission

/// Submits `total` containers of `/bin/true` as apps of at most `per_app`
/// (asks of at most 100,000 each, the server's limit per ask).
async fn submit(args: &Args, address: &str) -> Result<usize, String> {
    let mut conn = Conn::open(address).await.map_err(|e| e.to_string())?;
    let per_ask = u64::from(weft_host::limits::MAX_CONTAINERS_PER_ASK);
    let (mut left, mut apps) = (args.containers, 0);
    while left > 0 {
        let in_app = left.min(args.per_app);
        left -= in_app;
        let mut asks = Vec::new();
        let mut remaining = in_app;
        while remaining > 0 {
            let count = remaining.min(per_ask);
            remaining -= count;
            asks.push(serde_json::json!({
                "count": count,
                "memory_mb": args.container_memory_mb,
                "vcores": args.container_vcores,
                "command": {"argv": ["/bin/true"]},
            }));
        }
        let body = serde_json::json!({
            "name": format!("heartbeat-load-{apps}"),
            "queue": "default",
            "project": "bench",
            "asks": asks,
        });
        let body = serde_json::to_vec(&body).map_err(|e| e.to_string())?;
        let answer = conn
            .post("/ws/v1/cluster/apps", &args.user, &body)
            .await
            .map_err(|e| e.to_string())?;
        if answer.status != 202 {
            return Err(format!(
                "submission: {} {}",
                answer.status,
                String::from_utf8_lossy(&answer.body)
            ));
        }
        apps += 1;
    }
    Ok(apps)
}

// ---------------------------------------------------------------- main

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    f64::from(sorted[rank.clamp(1, sorted.len()) - 1]) / 1000.0
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let address = args
        .server
        .strip_prefix("http://")
        .ok_or_else(|| anyhow::anyhow!("--server must be http://HOST:PORT"))?
        .trim_end_matches('/')
        .to_string();
    let runtime = if args.threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(args.threads)
            .enable_all()
            .build()?
    };
    runtime.block_on(run(args, address))
}

async fn run(args: Args, address: String) -> anyhow::Result<()> {
    let nodes = args.nodes;
    let started = Instant::now();
    let (plan_tx, plan_rx) = watch::channel(None);
    let shared = Arc::new(Shared {
        args: args.clone(),
        address: address.clone(),
        registered: AtomicUsize::new(0),
        plan: plan_rx,
        // Long enough for any run: the registration, the warm-up, the window.
        timeline: Timeline::new(started, 3600),
        launches_total: AtomicU64::new(0),
        first_launch_ns: AtomicU64::new(u64::MAX),
        last_launch_ns: AtomicU64::new(0),
        acknowledged_total: AtomicU64::new(0),
        interval_ms: AtomicU64::new(0),
    });

    // Every agent registers first; the heartbeats begin once all have.
    let connect = Arc::new(Semaphore::new(args.connect_concurrency.max(1)));
    let handles: Vec<_> = (0..nodes)
        .map(|index| tokio::spawn(run_agent(index, shared.clone(), connect.clone())))
        .collect();
    let mut shown = 0;
    while shared.registered.load(Ordering::Relaxed) < nodes {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = shared.registered.load(Ordering::Relaxed);
        if now / 1000 > shown / 1000 {
            eprintln!("registered {now} of {nodes}");
        }
        shown = now;
    }
    let registration = started.elapsed();
    let begin = Instant::now() + Duration::from_millis(200);
    let window_start = begin + Duration::from_secs(args.warmup_s);
    let window_end = window_start + Duration::from_secs(args.duration_s);
    let _ = plan_tx.send(Some(Plan {
        begin,
        window_start,
        window_end,
    }));
    eprintln!(
        "{nodes} agents registered in {:.2} s; heartbeats begin, the window opens in {} s",
        registration.as_secs_f64(),
        args.warmup_s
    );

    tokio::time::sleep_until(window_start.into()).await;
    let own_before = process_cpu(std::process::id()).0;
    let server_before = args.server_pid.map(process_cpu);
    let mut submitted = None;
    if args.containers > 0 {
        let at = Instant::now();
        let apps = submit(&args, &address)
            .await
            .map_err(|e| anyhow::anyhow!("cannot submit: {e}"))?;
        submitted = Some((at, at.elapsed(), apps));
        eprintln!(
            "submitted {} containers in {apps} apps ({:.1} ms)",
            args.containers,
            at.elapsed().as_secs_f64() * 1000.0
        );
    }
    tokio::time::sleep_until(window_end.into()).await;
    let own_after = process_cpu(std::process::id()).0;
    let server_after = args.server_pid.map(process_cpu);

    let mut all = AgentStats::default();
    for handle in handles {
        let stats = handle.await?;
        all.latencies_us.extend(stats.latencies_us);
        all.ok += stats.ok;
        all.errors += stats.errors;
        all.bad_status += stats.bad_status;
        all.resyncs += stats.resyncs;
        all.kills += stats.kills;
        all.repeated_launches += stats.repeated_launches;
        if all.first_error.is_none() {
            all.first_error = stats.first_error;
        }
    }
    let mut latencies = all.latencies_us;
    latencies.sort_unstable();
    let window = args.duration_s as f64;
    let interval_ms = shared.interval_ms.load(Ordering::Relaxed);
    let offered = nodes as f64 * 1000.0 / interval_ms.max(1) as f64;
    let after_answer = clap::ValueEnum::to_possible_value(&args.after_answer)
        .map(|value| value.get_name().to_string())
        .unwrap_or_default();
    let rate = all.ok as f64 / window;
    let hz = clock_ticks_per_second();
    let own_cpu = (own_after - own_before) as f64 / hz / window * 100.0;

    println!(
        "heartbeat_load: {nodes} agents, one HTTP/1.1 keep-alive connection each, to {}",
        args.server
    );
    println!(
        "  registration   {nodes} in {:.2} s ({:.0}/s)",
        registration.as_secs_f64(),
        nodes as f64 / registration.as_secs_f64()
    );
    println!(
        "  window         {} s after {} s of warm-up; each agent every {interval_ms} ms (offered {offered:.0} heartbeats/s)",
        args.duration_s, args.warmup_s,
    );
    println!(
        "  heartbeats     {rate:.0}/s answered ({} in the window); errors {}, non-200 {}, resyncs {}",
        all.ok, all.errors, all.bad_status, all.resyncs
    );
    println!(
        "  latency (ms)   p50 {:.2}  p90 {:.2}  p99 {:.2}  p99.9 {:.2}  max {:.2}",
        percentile(&latencies, 50.0),
        percentile(&latencies, 90.0),
        percentile(&latencies, 99.0),
        percentile(&latencies, 99.9),
        percentile(&latencies, 100.0)
    );
    // Per second of the window: answers, the slowest, those over 10 ms.
    let from = window_start.duration_since(started).as_secs() as usize;
    let span = args.duration_s as usize;
    let join = |values: Vec<u64>| {
        values
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    };
    println!(
        "  per second     answered: {}",
        join(Timeline::seconds(&shared.timeline.heartbeats, from, span))
    );
    // A row of µs figures, shown in whole ms.
    let join_ms = |counts: &[AtomicU64]| {
        join(
            Timeline::seconds(counts, from, span)
                .into_iter()
                .map(|us| us / 1000)
                .collect(),
        )
    };
    println!(
        "                 slowest (ms): {}",
        join_ms(&shared.timeline.slowest_us)
    );
    println!(
        "                 over 10 ms: {}",
        join(Timeline::seconds(&shared.timeline.over_10ms, from, span))
    );
    println!(
        "                 latest send after its tick (ms): {}",
        join_ms(&shared.timeline.latest_send_us)
    );
    let launches = shared.launches_total.load(Ordering::Relaxed);
    let acknowledged = shared.acknowledged_total.load(Ordering::Relaxed);
    let mut allocation_rate = 0.0;
    let mut peak = 0;
    if let Some((at, took, apps)) = submitted {
        let base = at.duration_since(started).as_nanos() as u64;
        let first = shared.first_launch_ns.load(Ordering::Relaxed);
        let last = shared.last_launch_ns.load(Ordering::Relaxed);
        let all_arrived = launches >= args.containers;
        let span_s = last.saturating_sub(base) as f64 / 1e9;
        allocation_rate = if all_arrived {
            launches as f64 / span_s
        } else {
            launches as f64 / window
        };
        let seconds = Timeline::seconds(&shared.timeline.launches, from, span);
        peak = seconds.iter().copied().max().unwrap_or(0);
        println!(
            "  submission     {} containers of /bin/true in {apps} apps, {:.1} ms",
            args.containers,
            took.as_secs_f64() * 1000.0
        );
        println!(
            "  allocations    {launches} launch orders reached agents; first {:.0} ms after the submission, {}",
            first.saturating_sub(base) as f64 / 1e6,
            if all_arrived {
                format!("the last {:.2} s after it", span_s)
            } else {
                "not all within the window".into()
            }
        );
        println!(
            "                 {allocation_rate:.0}/s end to end (submission to the {}); peak second {peak}/s",
            if all_arrived {
                "last launch order"
            } else {
                "window's end"
            }
        );
        println!(
            "                 per second: {}",
            seconds
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(" ")
        );
        println!(
            "  ends           {acknowledged} acknowledged; kill orders {}; launch orders repeated {}",
            all.kills, all.repeated_launches
        );
    }
    println!(
        "  generator CPU  {own_cpu:.0} % of one core ({} thread(s))",
        args.threads.max(1)
    );
    let mut server_cpu = f64::NAN;
    if let (Some((before, threads_before)), Some((after, threads_after))) =
        (server_before, server_after)
    {
        server_cpu = (after - before) as f64 / hz / window * 100.0;
        // By thread name: the event loop ("weft-rm") and the HTTP workers.
        let mut by_name: BTreeMap<String, f64> = BTreeMap::new();
        for (tid, (name, ticks)) in &threads_after {
            let was = threads_before.get(tid).map_or(0, |(_, t)| *t);
            *by_name.entry(name.clone()).or_default() +=
                ticks.saturating_sub(was) as f64 / hz / window * 100.0;
        }
        let parts: Vec<String> = by_name
            .iter()
            .filter(|(_, cpu)| **cpu >= 0.5)
            .map(|(name, cpu)| format!("{name} {cpu:.0} %"))
            .collect();
        println!(
            "  server CPU     {server_cpu:.0} % of one core: {}",
            parts.join(", ")
        );
    }
    if let Some(error) = &all.first_error {
        println!("  first error    {error}");
    }
    // One line for scripts.
    println!(
        "RESULT nodes={nodes} interval_ms={interval_ms} after_answer={after_answer} offered_per_s={offered:.0} heartbeats_per_s={rate:.0} p50_ms={:.3} p99_ms={:.3} max_ms={:.3} errors={} non200={} resyncs={} allocations_per_s={allocation_rate:.0} peak_allocations_per_s={peak} launches={launches} acknowledged={acknowledged} generator_cpu_pct={own_cpu:.0} server_cpu_pct={server_cpu:.0}",
        percentile(&latencies, 50.0),
        percentile(&latencies, 99.0),
        percentile(&latencies, 100.0),
        all.errors,
        all.bad_status,
        all.resyncs,
    );
    Ok(())
}
