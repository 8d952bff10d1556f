//! Durability benchmarks against a running `weft serve` (driven by
//! `bench-scripts/durability.sh`):
//!
//! - `submit`: durable app submissions per second. N client threads, each
//!   with its own HTTP/1.1 keep-alive connection, POST
//!   /ws/v1/cluster/apps back to back for a fixed time. A 202 is sent only
//!   once the app is committed to the store, so each acknowledged answer
//!   is a durable submission. Prints 202s per second, latency (p50, p99,
//!   max) over a window after a warm-up, the other answers by status, and
//!   the store's commits in the window (from `weft_store_commit_seconds`
//!   in /metrics: acknowledged ÷ commits is the group-commit batch).
//! - `fill`: submits a fixed number of apps (to build a state to restart
//!   or fail over with).
//! - `wait`: polls /ws/v1/cluster/metrics until the cluster holds given
//!   counts (running containers, pending containers, apps).
//! - `probe`: polls GET /ws/v1/cluster/apps?limit=1 on a server started at
//!   a given time until it answers 200 with an app in it (restart time),
//!   then prints the cluster's metrics.
//! - `failover`: SIGKILLs the active server's pid, then polls the standby's
//!   GET /ws/v1/cluster/info every few ms until it says haState ACTIVE,
//!   then POSTs a submission until one is accepted (202). Times from the
//!   kill.
//! - `postgres`: starts a throwaway PostgreSQL 15 (`LocalPostgres`, fsync on
//!   unless `--no-fsync`), prints its URL, and runs until SIGTERM or SIGINT,
//!   when it stops the server and removes its directory.
//!
//! ```sh
//! cargo build --release -p weft-host --example durability_load
//! target/release/examples/durability_load submit --server http://127.0.0.1:18500 --concurrency 8
//! ```
//!
//! The HTTP client is a minimal blocking one written here over
//! `std::net::TcpStream` (Content-Length or chunked answers), one request
//! at a time per connection.

use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(about = "Durability benchmarks against a running Weft server")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Durable submissions per second for a fixed time.
    Submit(SubmitArgs),
    /// Submit a fixed number of apps.
    Fill(FillArgs),
    /// Wait until the cluster's metrics reach given counts.
    Wait(WaitArgs),
    /// Time from a server's start to its first answer with the state back.
    Probe(ProbeArgs),
    /// Kill the active server and time the standby's takeover.
    Failover(FailoverArgs),
    /// Run a throwaway PostgreSQL 15 until SIGTERM/SIGINT.
    Postgres(PostgresArgs),
}

#[derive(Debug, Clone, clap::Args)]
struct AppShape {
    /// Containers in the app's one ask.
    #[arg(long, default_value_t = 1)]
    count: u64,
    #[arg(long, default_value_t = 256)]
    memory_mb: u64,
    #[arg(long, default_value_t = 1)]
    vcores: u32,
    /// How long each (simulated) container runs.
    #[arg(long, default_value_t = 1000)]
    duration_ms: u64,
    #[arg(long, default_value = "p")]
    project: String,
    /// The user the submissions claim (X-Weft-User).
    #[arg(long, default_value = "bench")]
    user: String,
}

impl AppShape {
    fn body(&self) -> Vec<u8> {
        serde_json::json!({
            "project": self.project,
            "asks": [{
                "count": self.count,
                "memory_mb": self.memory_mb,
                "vcores": self.vcores,
                "duration_ms": self.duration_ms,
            }],
        })
        .to_string()
        .into_bytes()
    }
}

#[derive(Debug, clap::Args)]
struct SubmitArgs {
    /// The server: http://HOST:PORT (plain HTTP only).
    #[arg(long, default_value = "http://127.0.0.1:18500")]
    server: String,
    /// Client threads, one keep-alive connection each, one request at a time.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
    /// Seconds of submissions before the measured window opens.
    #[arg(long, default_value_t = 2)]
    warmup_s: u64,
    /// Length of the measured window, in seconds.
    #[arg(long, default_value_t = 10)]
    duration_s: u64,
    /// The server's pid: its CPU over the window is read from /proc.
    #[arg(long)]
    server_pid: Option<u32>,
    /// A label printed in the RESULT line (e.g. sqlite, postgres).
    #[arg(long, default_value = "")]
    label: String,
    #[command(flatten)]
    app: AppShape,
}

#[derive(Debug, clap::Args)]
struct FillArgs {
    #[arg(long, default_value = "http://127.0.0.1:18500")]
    server: String,
    /// Apps to submit in all.
    #[arg(long)]
    apps: u64,
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    #[command(flatten)]
    app: AppShape,
}

#[derive(Debug, clap::Args)]
struct WaitArgs {
    #[arg(long, default_value = "http://127.0.0.1:18500")]
    server: String,
    /// At least this many containers allocated (running).
    #[arg(long, default_value_t = 0)]
    running: u64,
    /// At least this many containers pending.
    #[arg(long, default_value_t = 0)]
    pending: u64,
    /// At least this many apps submitted.
    #[arg(long, default_value_t = 0)]
    apps: u64,
    #[arg(long, default_value_t = 600)]
    timeout_s: u64,
}

#[derive(Debug, clap::Args)]
struct ProbeArgs {
    #[arg(long, default_value = "http://127.0.0.1:18500")]
    server: String,
    /// When the server process was started, in ns since the Unix epoch
    /// (`date +%s%N` just before it).
    #[arg(long)]
    since_ns: u128,
    /// The server's pid: the probe gives up if it dies.
    #[arg(long)]
    pid: Option<u32>,
    /// The id the newest app must have (the state is back).
    #[arg(long)]
    expect_app: Option<String>,
    #[arg(long, default_value_t = 300)]
    timeout_s: u64,
    /// Poll period.
    #[arg(long, default_value_t = 5)]
    every_ms: u64,
}

#[derive(Debug, clap::Args)]
struct FailoverArgs {
    /// The active server's pid (SIGKILLed by this command).
    #[arg(long)]
    kill_pid: i32,
    /// The standby's URL.
    #[arg(long)]
    standby: String,
    /// The active server's URL: it must answer ACTIVE before the kill.
    #[arg(long)]
    active: String,
    #[arg(long, default_value_t = 120)]
    timeout_s: u64,
    #[arg(long, default_value_t = 5)]
    every_ms: u64,
    #[command(flatten)]
    app: AppShape,
}

#[derive(Debug, clap::Args)]
struct PostgresArgs {
    /// Without fsync (and synchronous_commit off): for tests, not benchmarks.
    #[arg(long)]
    no_fsync: bool,
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Submit(args) => submit(args),
        Command::Fill(args) => fill(args),
        Command::Wait(args) => wait(args),
        Command::Probe(args) => probe(args),
        Command::Failover(args) => failover(args),
        Command::Postgres(args) => postgres(args),
    };
    if let Err(error) = result {
        eprintln!("durability_load: {error}");
        std::process::exit(1);
    }
}

// ---------------------------------------------------------------- HTTP

fn address_of(server: &str) -> io::Result<String> {
    let rest = server
        .strip_prefix("http://")
        .ok_or_else(|| io::Error::other(format!("{server}: only http:// URLs")))?;
    Ok(rest.trim_end_matches('/').to_string())
}

/// One HTTP/1.1 keep-alive connection, one request at a time.
struct Conn {
    address: String,
    reader: Option<BufReader<TcpStream>>,
    user: String,
}

struct Answer {
    status: u16,
    body: Vec<u8>,
}

impl Conn {
    fn new(server: &str, user: &str) -> io::Result<Conn> {
        Ok(Conn {
            address: address_of(server)?,
            reader: None,
            user: user.to_string(),
        })
    }

    fn connect(&mut self) -> io::Result<&mut BufReader<TcpStream>> {
        if self.reader.is_none() {
            let stream = TcpStream::connect(&self.address)?;
            stream.set_nodelay(true)?;
            stream.set_read_timeout(Some(Duration::from_secs(120)))?;
            self.reader = Some(BufReader::with_capacity(64 * 1024, stream));
        }
        Ok(self.reader.as_mut().expect("connected above"))
    }

    /// One request; a failed one leaves the connection closed (the next
    /// request opens a new one).
    fn request(&mut self, method: &str, path: &str, body: Option<&[u8]>) -> io::Result<Answer> {
        let result = self.exchange(method, path, body);
        match &result {
            Ok((_, true)) => {}
            _ => self.reader = None,
        }
        result.map(|(answer, _)| answer)
    }

    fn exchange(
        &mut self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
    ) -> io::Result<(Answer, bool)> {
        let mut request = Vec::with_capacity(512);
        write!(
            request,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nX-Weft-User: {}\r\n",
            self.address, self.user
        )?;
        if let Some(body) = body {
            write!(
                request,
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            )?;
        }
        request.extend_from_slice(b"\r\n");
        if let Some(body) = body {
            request.extend_from_slice(body);
        }
        let reader = self.connect()?;
        reader.get_mut().write_all(&request)?;
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed the connection",
            ));
        }
        let status = line
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse::<u16>().ok())
            .ok_or_else(|| io::Error::other(format!("no status line in {line:?}")))?;
        let (mut length, mut chunked, mut keep) = (None, false, true);
        loop {
            line.clear();
            if reader.read_line(&mut line)? == 0 {
                return Err(io::Error::other("the answer's head ended early"));
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            let Some((name, value)) = header.split_once(':') else {
                continue;
            };
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                length = value.parse::<usize>().ok();
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = value.eq_ignore_ascii_case("chunked");
            } else if name.eq_ignore_ascii_case("connection") {
                keep = !value.eq_ignore_ascii_case("close");
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                line.clear();
                reader.read_line(&mut line)?;
                let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                    .map_err(|_| io::Error::other(format!("bad chunk size {line:?}")))?;
                if size == 0 {
                    line.clear();
                    reader.read_line(&mut line)?;
                    break;
                }
                let start = body.len();
                body.resize(start + size, 0);
                reader.read_exact(&mut body[start..])?;
                line.clear();
                reader.read_line(&mut line)?;
            }
        } else if let Some(length) = length {
            body.resize(length, 0);
            reader.read_exact(&mut body)?;
        } else {
            reader.read_to_end(&mut body)?;
            keep = false;
        }
        Ok((Answer { status, body }, keep))
    }
}

fn json(answer: &Answer) -> serde_json::Value {
    serde_json::from_slice(&answer.body).unwrap_or(serde_json::Value::Null)
}

fn epoch_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// utime + stime of a process, in clock ticks.
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// (count, sum in s) of `weft_store_commit_seconds` from /metrics, on a
/// connection of its own (the server closes idle keep-alive connections).
fn commit_stats(server: &str) -> Option<(f64, f64)> {
    let mut conn = Conn::new(server, "bench").ok()?;
    let answer = conn.request("GET", "/metrics", None).ok()?;
    let text = String::from_utf8_lossy(&answer.body);
    let mut count = None;
    let mut sum = None;
    for line in text.lines() {
        let mut parts = line.split_whitespace();
        let (Some(name), Some(value)) = (parts.next(), parts.next()) else {
            continue;
        };
        if name.ends_with("store_commit_seconds_count") {
            count = value.parse().ok();
        } else if name.ends_with("store_commit_seconds_sum") {
            sum = value.parse().ok();
        }
    }
    Some((count?, sum?))
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

// ---------------------------------------------------------------- submit

/// What one client thread saw in the window.
#[derive(Default)]
struct Tally {
    /// Latencies (µs) of the 202s sent in the window.
    latencies_us: Vec<u64>,
    accepted: u64,
    /// Other answers by status, and transport errors.
    statuses: BTreeMap<u16, u64>,
    errors: u64,
    /// The first body of each non-202 status, to say why.
    samples: BTreeMap<u16, String>,
    /// 202s in the whole run (warm-up included).
    accepted_total: u64,
    /// 202s by the second (since the start) they were answered in.
    per_second: Vec<u64>,
}

fn submit(args: SubmitArgs) -> Result<(), String> {
    let body = Arc::new(args.app.body());
    let start = Instant::now();
    let window_start = start + Duration::from_secs(args.warmup_s);
    let window_end = window_start + Duration::from_secs(args.duration_s);
    let mut threads = Vec::new();
    for _ in 0..args.concurrency {
        let body = body.clone();
        let (server, user) = (args.server.clone(), args.app.user.clone());
        threads.push(std::thread::spawn(move || -> Tally {
            let mut tally = Tally::default();
            let mut conn = match Conn::new(&server, &user) {
                Ok(conn) => conn,
                Err(_) => return tally,
            };
            loop {
                let sent = Instant::now();
                if sent >= window_end {
                    break;
                }
                let answer = conn.request("POST", "/ws/v1/cluster/apps", Some(&body));
                let done = Instant::now();
                let in_window = sent >= window_start && done <= window_end;
                match answer {
                    Ok(answer) if answer.status == 202 => {
                        tally.accepted_total += 1;
                        let second = (done - start).as_secs() as usize;
                        if tally.per_second.len() <= second {
                            tally.per_second.resize(second + 1, 0);
                        }
                        tally.per_second[second] += 1;
                        if in_window {
                            tally.accepted += 1;
                            tally.latencies_us.push((done - sent).as_micros() as u64);
                        }
                    }
                    Ok(answer) => {
                        if in_window {
                            *tally.statuses.entry(answer.status).or_default() += 1;
                        }
                        tally.samples.entry(answer.status).or_insert_with(|| {
                            String::from_utf8_lossy(&answer.body)
                                .chars()
                                .take(300)
                                .collect()
                        });
                        // Do not spin on a refusal.
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    Err(error) => {
                        if in_window {
                            tally.errors += 1;
                        }
                        tally.samples.entry(0).or_insert_with(|| error.to_string());
                        std::thread::sleep(Duration::from_millis(10));
                    }
                }
            }
            tally
        }));
    }
    // The window's server CPU and commits, read at its edges.
    std::thread::sleep(window_start.saturating_duration_since(Instant::now()));
    let cpu_before = args.server_pid.and_then(cpu_ticks);
    let commits_before = commit_stats(&args.server);
    let measured_from = Instant::now();
    std::thread::sleep(window_end.saturating_duration_since(Instant::now()));
    let cpu_after = args.server_pid.and_then(cpu_ticks);
    let commits_after = commit_stats(&args.server);
    let measured = measured_from.elapsed().as_secs_f64();

    let mut all = Tally::default();
    for thread in threads {
        let tally = thread.join().map_err(|_| "a client thread panicked")?;
        all.latencies_us.extend(tally.latencies_us);
        all.accepted += tally.accepted;
        all.accepted_total += tally.accepted_total;
        all.errors += tally.errors;
        if all.per_second.len() < tally.per_second.len() {
            all.per_second.resize(tally.per_second.len(), 0);
        }
        for (second, n) in tally.per_second.iter().enumerate() {
            all.per_second[second] += n;
        }
        for (status, n) in tally.statuses {
            *all.statuses.entry(status).or_default() += n;
        }
        for (status, sample) in tally.samples {
            all.samples.entry(status).or_insert(sample);
        }
    }
    all.latencies_us.sort_unstable();
    let window = args.duration_s as f64;
    let per_s = all.accepted as f64 / window;
    let ms = |us: u64| us as f64 / 1000.0;
    let (p50, p99, max) = (
        percentile(&all.latencies_us, 50.0),
        percentile(&all.latencies_us, 99.0),
        all.latencies_us.last().copied().unwrap_or(0),
    );
    let server_cpu_pct = match (cpu_before, cpu_after) {
        (Some(a), Some(b)) => {
            let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
                .ok()
                .flatten()
                .unwrap_or(100) as f64;
            100.0 * (b - a) as f64 / hz / measured
        }
        _ => f64::NAN,
    };
    let (commits_per_s, commit_ms, per_commit) = match (commits_before, commits_after) {
        (Some((c0, s0)), Some((c1, s1))) if c1 > c0 => {
            let commits = c1 - c0;
            (
                commits / measured,
                1000.0 * (s1 - s0) / commits,
                all.accepted as f64 / commits,
            )
        }
        _ => (f64::NAN, f64::NAN, f64::NAN),
    };
    let non202: u64 = all.statuses.values().sum();
    println!(
        "{} concurrency {}: {} acknowledged (202) in {:.0} s = {:.1}/s; latency p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        args.label,
        args.concurrency,
        all.accepted,
        window,
        per_s,
        ms(p50),
        ms(p99),
        ms(max)
    );
    println!(
        "  store commits {commits_per_s:.1}/s, {commit_ms:.2} ms each on average, {per_commit:.2} acknowledged submissions per commit; server CPU {server_cpu_pct:.0} % of one core"
    );
    println!(
        "  202s per second from the start (warm-up included): {}",
        all.per_second
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    );
    for (status, n) in &all.statuses {
        println!(
            "  status {status}: {n} (e.g. {})",
            all.samples.get(status).map_or("", String::as_str)
        );
    }
    if all.errors > 0 {
        println!(
            "  transport errors: {} (e.g. {})",
            all.errors,
            all.samples.get(&0).map_or("", String::as_str)
        );
    }
    println!(
        "RESULT label={} concurrency={} acked={} acked_per_s={per_s:.1} p50_ms={:.3} p99_ms={:.3} max_ms={:.3} non202={non202} errors={} commits_per_s={commits_per_s:.1} commit_ms={commit_ms:.3} per_commit={per_commit:.2} server_cpu_pct={server_cpu_pct:.0} acked_total={}",
        if args.label.is_empty() {
            "-"
        } else {
            &args.label
        },
        args.concurrency,
        all.accepted,
        ms(p50),
        ms(p99),
        ms(max),
        all.errors,
        all.accepted_total,
    );
    Ok(())
}

// ---------------------------------------------------------------- fill

fn fill(args: FillArgs) -> Result<(), String> {
    let body = Arc::new(args.app.body());
    let next = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let started = Instant::now();
    let mut threads = Vec::new();
    for _ in 0..args.concurrency.max(1) {
        let (body, next) = (body.clone(), next.clone());
        let (server, user, total) = (args.server.clone(), args.app.user.clone(), args.apps);
        threads.push(std::thread::spawn(
            move || -> Result<Option<String>, String> {
                let mut conn = Conn::new(&server, &user).map_err(|e| e.to_string())?;
                let mut last = None;
                while next.fetch_add(1, Ordering::SeqCst) < total {
                    let mut attempts = 0;
                    loop {
                        attempts += 1;
                        match conn.request("POST", "/ws/v1/cluster/apps", Some(&body)) {
                            Ok(answer) if answer.status == 202 => {
                                last = json(&answer)["app"]["id"].as_str().map(str::to_string);
                                break;
                            }
                            Ok(answer) if attempts > 5 => {
                                return Err(format!(
                                    "submission refused ({}): {}",
                                    answer.status,
                                    String::from_utf8_lossy(&answer.body)
                                ));
                            }
                            Err(error) if attempts > 5 => return Err(error.to_string()),
                            _ => std::thread::sleep(Duration::from_millis(100)),
                        }
                    }
                }
                Ok(last)
            },
        ));
    }
    let mut lasts = Vec::new();
    for thread in threads {
        if let Some(id) = thread.join().map_err(|_| "a client thread panicked")?? {
            lasts.push(id);
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    // Ids end in a zero-padded number: the greatest is the newest.
    lasts.sort_by_key(|id| {
        id.rsplit('_')
            .next()
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0)
    });
    println!(
        "filled: {} apps of {} containers in {seconds:.1} s ({:.0}/s); newest {}",
        args.apps,
        args.app.count,
        args.apps as f64 / seconds,
        lasts.last().map_or("-", String::as_str)
    );
    println!(
        "RESULT apps={} seconds={seconds:.2} newest={}",
        args.apps,
        lasts.last().map_or("-", String::as_str)
    );
    Ok(())
}

// ---------------------------------------------------------------- wait

fn metrics(conn: &mut Conn) -> io::Result<serde_json::Value> {
    let answer = conn.request("GET", "/ws/v1/cluster/metrics", None)?;
    if answer.status != 200 {
        return Err(io::Error::other(format!(
            "GET /ws/v1/cluster/metrics: {}",
            answer.status
        )));
    }
    Ok(json(&answer)["clusterMetrics"].clone())
}

fn metrics_line(m: &serde_json::Value) -> String {
    format!(
        "apps_submitted={} apps_pending={} apps_running={} containers_allocated={} containers_pending={} total_nodes={}",
        m["appsSubmitted"],
        m["appsPending"],
        m["appsRunning"],
        m["containersAllocated"],
        m["containersPending"],
        m["totalNodes"]
    )
}

fn wait(args: WaitArgs) -> Result<(), String> {
    let mut conn = Conn::new(&args.server, "bench").map_err(|e| e.to_string())?;
    let deadline = Instant::now() + Duration::from_secs(args.timeout_s);
    let started = Instant::now();
    loop {
        if let Ok(m) = metrics(&mut conn) {
            let get = |k: &str| m[k].as_u64().unwrap_or(0);
            if get("containersAllocated") >= args.running
                && get("containersPending") >= args.pending
                && get("appsSubmitted") >= args.apps
            {
                println!(
                    "reached after {:.1} s: {}",
                    started.elapsed().as_secs_f64(),
                    metrics_line(&m)
                );
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!("timed out: {}", metrics_line(&m)));
            }
        } else if Instant::now() > deadline {
            return Err("timed out: no metrics".into());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

// ---------------------------------------------------------------- probe

fn alive(pid: Option<u32>) -> bool {
    pid.is_none_or(|pid| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            !stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
    })
}

fn probe(args: ProbeArgs) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(args.timeout_s);
    let mut first_connect_ns = None;
    let mut first_answer: Option<(u128, u16)> = None;
    let answered_ns = loop {
        if Instant::now() > deadline {
            return Err("timed out".into());
        }
        if !alive(args.pid) {
            return Err("the server exited".into());
        }
        let mut conn = Conn::new(&args.server, "bench").map_err(|e| e.to_string())?;
        if conn.connect().is_ok() && first_connect_ns.is_none() {
            first_connect_ns = Some(epoch_ns());
        }
        if let Ok(answer) = conn.request("GET", "/ws/v1/cluster/apps?limit=1", None) {
            let now = epoch_ns();
            first_answer.get_or_insert((now, answer.status));
            if answer.status == 200 {
                let apps = json(&answer)["apps"]["app"].clone();
                let newest = apps
                    .get(0)
                    .and_then(|a| a["id"].as_str())
                    .map(str::to_string);
                let ok = match (&args.expect_app, &newest) {
                    (Some(expected), Some(newest)) => expected == newest,
                    (None, Some(_)) => true,
                    _ => false,
                };
                if ok {
                    break now;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(args.every_ms));
    };
    let ms = |ns: u128| ns.saturating_sub(args.since_ns) as f64 / 1e6;
    let mut conn = Conn::new(&args.server, "bench").map_err(|e| e.to_string())?;
    let m = metrics(&mut conn).map_err(|e| e.to_string())?;
    println!(
        "state back {:.0} ms after the start (first connection {:.0} ms, first answer {:.0} ms, status {}); {}",
        ms(answered_ns),
        first_connect_ns.map_or(f64::NAN, ms),
        first_answer.map_or(f64::NAN, |(ns, _)| ms(ns)),
        first_answer.map_or(0, |(_, s)| s),
        metrics_line(&m)
    );
    println!(
        "RESULT restart_ms={:.1} first_connect_ms={:.1} {}",
        ms(answered_ns),
        first_connect_ns.map_or(f64::NAN, ms),
        metrics_line(&m)
    );
    Ok(())
}

// ---------------------------------------------------------------- failover

fn ha_state(conn: &mut Conn) -> io::Result<(u16, String, u64)> {
    let answer = conn.request("GET", "/ws/v1/cluster/info", None)?;
    let info = json(&answer)["clusterInfo"].clone();
    Ok((
        answer.status,
        info["haState"].as_str().unwrap_or("").to_string(),
        info["epoch"].as_u64().unwrap_or(0),
    ))
}

fn failover(args: FailoverArgs) -> Result<(), String> {
    let mut active = Conn::new(&args.active, &args.app.user).map_err(|e| e.to_string())?;
    let (status, state, epoch_before) = ha_state(&mut active).map_err(|e| e.to_string())?;
    if status != 200 || state != "ACTIVE" {
        return Err(format!("{} is not active ({status} {state})", args.active));
    }
    let mut standby = Conn::new(&args.standby, &args.app.user).map_err(|e| e.to_string())?;
    let (_, state, _) = ha_state(&mut standby).map_err(|e| e.to_string())?;
    if state != "STANDBY" {
        return Err(format!("{} is not a standby ({state})", args.standby));
    }
    drop(active);
    let killed = Instant::now();
    let killed_ns = epoch_ns();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(args.kill_pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .map_err(|e| format!("kill -9 {}: {e}", args.kill_pid))?;
    let deadline = killed + Duration::from_secs(args.timeout_s);
    let every = Duration::from_millis(args.every_ms);
    let (active_after, epoch_after) = loop {
        if Instant::now() > deadline {
            return Err("the standby never became active".into());
        }
        if let Ok((200, state, epoch)) = ha_state(&mut standby)
            && state == "ACTIVE"
        {
            break (killed.elapsed(), epoch);
        }
        std::thread::sleep(every);
    };
    let body = args.app.body();
    let (mut refused, mut last_refusal) = (0, String::new());
    let accepted_after = loop {
        if Instant::now() > deadline {
            return Err(format!("no submission accepted ({last_refusal})"));
        }
        match standby.request("POST", "/ws/v1/cluster/apps", Some(&body)) {
            Ok(answer) if answer.status == 202 => break killed.elapsed(),
            Ok(answer) => {
                refused += 1;
                last_refusal = format!(
                    "{}: {}",
                    answer.status,
                    String::from_utf8_lossy(&answer.body)
                );
            }
            Err(error) => {
                refused += 1;
                last_refusal = error.to_string();
            }
        }
        std::thread::sleep(every);
    };
    println!(
        "killed {} at {killed_ns} ns; standby ACTIVE after {:.0} ms (epoch {epoch_before} -> {epoch_after}); first submission accepted after {:.0} ms ({refused} refused before)",
        args.kill_pid,
        active_after.as_secs_f64() * 1000.0,
        accepted_after.as_secs_f64() * 1000.0,
    );
    println!(
        "RESULT killed_ns={killed_ns} active_ms={:.1} accepted_ms={:.1} epoch_before={epoch_before} epoch_after={epoch_after} refused={refused}",
        active_after.as_secs_f64() * 1000.0,
        accepted_after.as_secs_f64() * 1000.0,
    );
    Ok(())
}

// ---------------------------------------------------------------- postgres

fn postgres(args: PostgresArgs) -> Result<(), String> {
    use nix::sys::signal::{SigSet, Signal};
    use weft_host::store::local_postgres::{LocalPostgres, Options};
    // Blocked before any thread starts, so every thread inherits the mask
    // and the signal waits for `wait` below.
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGTERM);
    signals.add(Signal::SIGINT);
    signals
        .thread_block()
        .map_err(|e| format!("cannot block signals: {e}"))?;
    let server = LocalPostgres::start_with(Options {
        fsync: !args.no_fsync,
    })?;
    let settings = {
        let mut backend = weft_host::store::postgres::PostgresBackend::connect(&server.url())
            .map_err(|e| e.to_string())?;
        use weft_host::store::Backend;
        let rows = backend
            .query(
                "SELECT current_setting('fsync') || ' ' || current_setting('synchronous_commit') || ' ' || current_setting('wal_sync_method') || ' ' || current_setting('full_page_writes') || ' ' || version()",
                &[],
            )
            .map_err(|e| e.to_string())?;
        rows.first()
            .and_then(|row| row.first())
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    };
    println!(
        "url={} pid={} dir={} settings(fsync synchronous_commit wal_sync_method full_page_writes version)={settings}",
        server.url(),
        server.pid(),
        server.dir().display()
    );
    io::stdout().flush().map_err(|e| e.to_string())?;
    let signal = signals.wait().map_err(|e| format!("sigwait: {e}"))?;
    eprintln!("durability_load postgres: {signal:?}: stopping PostgreSQL");
    drop(server);
    Ok(())
}
