//! Helpers: run the `weft` binary, talk to a running server, find the guests.

use std::io::Write as _;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use weft_host::store::local_postgres::LocalPostgres;

pub(crate) const WEFT: &str = env!("CARGO_BIN_EXE_weft");
pub(crate) const FAULTY_PRICING: &str = env!("WEFT_GUEST_FAULTY_PRICING");
pub(crate) const FAULTY_SCHEDULING: &str = env!("WEFT_GUEST_FAULTY_SCHEDULING");
pub(crate) const CLOCK_PRICING: &str = env!("WEFT_GUEST_CLOCK_PRICING");

/// Where the tests' offline commands (and in-process runtimes) keep
/// compiled policies: under the build's target directory, never the
/// user's own cache, and shared by the suite's runs.
pub(crate) fn compile_cache_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("weft")
        .join("compiled")
}

/// A temporary directory containers see as the test does: beneath the
/// build's target dir, not /tmp, which each container has a private one
/// of (agents mount a tmpfs over it in the container's own namespace).
pub(crate) fn shared_tempdir() -> tempfile::TempDir {
    let parent = Path::new(env!("CARGO_TARGET_TMPDIR")).join("shared");
    std::fs::create_dir_all(&parent).unwrap();
    tempfile::tempdir_in(parent).unwrap()
}

/// Default settings, with compiled policies kept in [`compile_cache_dir`]:
/// for runtimes the tests build in-process.
pub(crate) fn default_settings() -> weft_host::config::Settings {
    let mut settings = weft_host::config::Settings::default();
    settings.policies.compile_cache_dir = Some(compile_cache_dir());
    settings
}

/// The `weft` binary the tests run: this build's, or the one
/// `WEFT_TEST_BINARY` names (to run the suite against another build, say a
/// release binary or the one before a fix).
pub(crate) fn weft_binary() -> std::path::PathBuf {
    std::env::var_os("WEFT_TEST_BINARY")
        .filter(|path| !path.is_empty())
        .map_or_else(|| WEFT.into(), Into::into)
}

/// The `weft` binary as a command whose per-user cache is the tests'
/// (`XDG_CACHE_HOME`): see [`compile_cache_dir`].
pub(crate) fn weft_command() -> Command {
    let mut command = Command::new(weft_binary());
    command.env("XDG_CACHE_HOME", Path::new(env!("CARGO_TARGET_TMPDIR")));
    command
}

/// Runs `weft ARGS` to completion.
pub(crate) fn weft(args: &[&str]) -> Output {
    weft_command()
        .args(args)
        .output()
        .expect("the weft binary runs")
}

/// Runs `weft ARGS`, which must succeed; its standard output.
pub(crate) fn weft_stdout(args: &[&str]) -> String {
    let output = weft(args);
    assert!(
        output.status.success(),
        "weft {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Runs `weft ARGS` to completion, or kills it and fails the test after
/// `limit`: for runs that must finish, so a regression fails rather than
/// hangs the suite. Not a timing assertion: give it a generous limit.
pub(crate) fn weft_within(args: &[&str], limit: Duration) -> Output {
    let child = weft_command()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the weft binary runs");
    let pid = child.id().to_string();
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(child.wait_with_output()));
    match finished.recv_timeout(limit) {
        Ok(output) => output.expect("weft ran"),
        Err(_) => {
            let _ = Command::new("kill").args(["-KILL", &pid]).status();
            panic!("weft {args:?} did not finish within {limit:?}");
        }
    }
}

/// A `weft serve` running on a free port with its own data directory.
pub(crate) struct Server {
    child: Child,
    pub base: String,
    /// Where it serves YARN clients over Hadoop RPC (`host:port`).
    pub rpc: Option<String>,
    /// Where it serves YARN's application masters (`host:port`).
    pub scheduler: Option<String>,
    _dir: Option<tempfile::TempDir>,
    agent: ureq::Agent,
}

impl Server {
    /// Starts a server with `extra` arguments, in a fresh data directory.
    pub(crate) fn start(extra: &[&str]) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = dir.path().join("data");
        let mut server = Server::start_in(&data_dir, extra);
        server._dir = Some(dir);
        server
    }

    /// Starts a server on `data_dir` (which outlives it: for restarts).
    pub(crate) fn start_in(data_dir: &Path, extra: &[&str]) -> Server {
        Server::start_logging(data_dir, extra, None)
    }

    /// As `start_in`, its log (stderr) written to `log` if given. Without
    /// `--sim-nodes` the server runs no local agent: the tests register
    /// their own nodes (see `start_with_local_agent`).
    pub(crate) fn start_logging(data_dir: &Path, extra: &[&str], log: Option<&Path>) -> Server {
        let no_agent = (!extra.contains(&"--sim-nodes")).then_some("--no-local-agent");
        let extra: Vec<&str> = extra.iter().copied().chain(no_agent).collect();
        Server::launch(data_dir, &extra, log)
    }

    /// A server with its local agent, which runs real processes.
    pub(crate) fn start_with_local_agent(
        data_dir: &Path,
        extra: &[&str],
        log: Option<&Path>,
    ) -> Server {
        Server::launch(data_dir, extra, log)
    }

    fn launch(data_dir: &Path, extra: &[&str], log: Option<&Path>) -> Server {
        Server::launch_at("127.0.0.1:0", data_dir, extra, log)
    }

    /// A server without a local agent listening on `listen` (a restarted
    /// server must be where its agents look for it), its log appended to
    /// `log` if given.
    pub(crate) fn start_at(
        listen: &str,
        data_dir: &Path,
        extra: &[&str],
        log: Option<&Path>,
    ) -> Server {
        let extra: Vec<&str> = extra.iter().copied().chain(["--no-local-agent"]).collect();
        Server::launch_at(listen, data_dir, &extra, log)
    }

    fn launch_at(listen: &str, data_dir: &Path, extra: &[&str], log: Option<&Path>) -> Server {
        let stderr = match log {
            Some(path) => Stdio::from(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .unwrap(),
            ),
            None => Stdio::null(),
        };
        let mut child = weft_command()
            .args(["serve", "--listen", listen, "--data-dir"])
            .arg(data_dir)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("weft serve starts");
        let stdout = child.stdout.take().unwrap();
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        let base = line
            .split_whitespace()
            .find(|word| word.starts_with("http://") || word.starts_with("https://"))
            .unwrap_or_else(|| panic!("weft serve did not say where it listens: {line:?}"))
            .to_string();
        let rpc = line
            .split_once(" YARN RPC ")
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .map(str::to_string);
        let scheduler = line
            .split_once("(application masters ")
            .and_then(|(_, rest)| rest.split(')').next())
            .map(str::to_string);
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            // Self-signed certificates of the TLS tests; loopback only.
            .tls_config(
                ureq::tls::TlsConfig::builder()
                    .disable_verification(base.starts_with("https://"))
                    .build(),
            )
            .build()
            .into();
        Server {
            child,
            base,
            rpc,
            scheduler,
            _dir: None,
            agent,
        }
    }

    pub(crate) fn get(&self, path: &str) -> (u16, Value) {
        let response = self.agent.get(&format!("{}{path}", self.base)).call();
        read(path, response)
    }

    /// GETs `path` as `user` (the X-Weft-User header).
    pub(crate) fn get_as(&self, path: &str, user: Option<&str>) -> (u16, Value) {
        let mut request = self.agent.get(&format!("{}{path}", self.base));
        if let Some(user) = user {
            request = request.header("X-Weft-User", user);
        }
        read(path, request.call())
    }

    pub(crate) fn post_json(&self, path: &str, body: &Value) -> (u16, Value) {
        self.post_json_as(path, body, None)
    }

    /// POSTs `body` as `user` (the X-Weft-User header), or as nobody in particular.
    pub(crate) fn post_json_as(
        &self,
        path: &str,
        body: &Value,
        user: Option<&str>,
    ) -> (u16, Value) {
        let mut request = self.agent.post(&format!("{}{path}", self.base));
        if let Some(user) = user {
            request = request.header("X-Weft-User", user);
        }
        read(path, request.send_json(body))
    }

    pub(crate) fn post(&self, path: &str) -> (u16, Value) {
        let response = self
            .agent
            .post(&format!("{}{path}", self.base))
            .send_empty();
        read(path, response)
    }

    /// Any request, with `headers`, and a body unless it is None.
    pub(crate) fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> (u16, Value) {
        let url = format!("{}{path}", self.base);
        let mut builder = ureq::http::Request::builder().method(method).uri(&url);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let response = match body {
            Some(body) => self.agent.run(builder.body(body.to_vec()).unwrap()),
            None => self.agent.run(builder.body(()).unwrap()),
        };
        read(path, response)
    }

    pub(crate) fn put(&self, path: &str, body: &[u8]) -> (u16, Value) {
        let response = self.agent.put(&format!("{}{path}", self.base)).send(body);
        read(path, response)
    }

    /// The Prometheus text at /metrics.
    pub(crate) fn metrics(&self) -> String {
        let (status, body) = self.get("/metrics");
        assert_eq!(status, 200, "{body}");
        body.as_str().expect("metrics are text").to_string()
    }

    /// Submits a one-container app to `queue` as `user`; returns its id.
    pub(crate) fn submit_to(&self, queue: &str, user: &str) -> String {
        let (status, body) = self.post_json(
            "/ws/v1/cluster/apps",
            &serde_json::json!({
                "queue": queue, "user": user, "project": "p",
                "asks": [{"count": 1, "memory_mb": 1024, "vcores": 1, "duration_ms": 1000}]
            }),
        );
        assert_eq!(status, 202, "{body}");
        body["app"]["id"].as_str().unwrap().to_string()
    }

    /// Submits a one-container app of `duration_ms` to `queue`; returns its id.
    pub(crate) fn submit_to_for(&self, queue: &str, duration_ms: u64) -> String {
        let (status, body) = self.post_json(
            "/ws/v1/cluster/apps",
            &serde_json::json!({
                "queue": queue, "user": "alice", "project": "p",
                "asks": [{"count": 1, "memory_mb": 1024, "vcores": 1, "duration_ms": duration_ms}]
            }),
        );
        assert_eq!(status, 202, "{body}");
        body["app"]["id"].as_str().unwrap().to_string()
    }

    /// Submits an app of `count` containers of 1 GB, 1 vcore for `duration_ms`.
    pub(crate) fn submit(&self, project: &str, count: u32, duration_ms: u64) -> String {
        let (status, body) = self.post_json(
            "/ws/v1/cluster/apps",
            &serde_json::json!({
                "name": "test", "queue": "default", "user": "alice", "project": project, "priority": 0,
                "asks": [{"count": count, "memory_mb": 1024, "vcores": 1, "gpus": 0, "duration_ms": duration_ms}]
            }),
        );
        assert_eq!(status, 202, "{body}");
        body["app"]["id"].as_str().unwrap().to_string()
    }

    /// The nodes app `app`'s containers ran on, one per container, oldest first.
    pub(crate) fn container_nodes(&self, app: &str) -> Vec<String> {
        let (_, body) = self.get(&format!("/ws/v1/cluster/apps/{app}/containers"));
        body["containers"]
            .as_array()
            .unwrap_or_else(|| panic!("no containers of {app}: {body}"))
            .iter()
            .map(|c| c["node"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// Polls `path` until `done` holds for its body, or panics after 30 s.
    pub(crate) fn wait_for(&self, path: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        let started = Instant::now();
        loop {
            let (_, body) = self.get(path);
            if done(&body) {
                return body;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "timed out waiting for {what}; last {path}: {body}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGINT: a clean stop. Waits for the process to exit.
    pub(crate) fn stop(mut self) {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-INT", &pid]).status().unwrap();
        let status = self.child.wait().unwrap();
        assert!(
            status.success(),
            "weft serve exited with {status} on SIGINT"
        );
    }

    /// The server's pid (to signal it).
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL: no chance to clean up.
    pub(crate) fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Server {
    /// SIGINT first, so a local agent kills its containers (a test that
    /// failed leaves no process behind), then SIGKILL after 5 s.
    fn drop(&mut self) {
        stop_gently(&mut self.child);
    }
}

/// Stops `child` as a person would: SIGCONT (a stopped process takes no
/// SIGINT), SIGINT, and SIGKILL if it has not exited after 5 s.
pub(crate) fn stop_gently(child: &mut Child) {
    if let Ok(None) = child.try_wait() {
        let pid = child.id().to_string();
        let _ = Command::new("kill").args(["-CONT", &pid]).status();
        let _ = Command::new("kill").args(["-INT", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline && matches!(child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// A process a test started (a `weft agent`), stopped gently when dropped,
/// so a test that fails leaves nothing running.
pub(crate) struct Stoppable(pub Child);

impl Stoppable {
    /// Sends `signal` (a name: STOP, CONT, …) to it.
    pub(crate) fn signal(&self, signal: &str) {
        let pid = self.0.id().to_string();
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal} {pid}");
    }

    /// kill -9: it dies at once, with no chance to clean up.
    pub(crate) fn kill_9(&mut self) {
        self.0.kill().unwrap();
        self.0.wait().unwrap();
    }
}

impl Drop for Stoppable {
    fn drop(&mut self) {
        stop_gently(&mut self.0);
    }
}

fn read(
    path: &str,
    response: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
) -> (u16, Value) {
    let mut response = response.unwrap_or_else(|e| panic!("{path}: the server answers: {e:?}"));
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().unwrap_or_default();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// A standalone `weft agent` (node `agent-1`, offering `resources`) for the
/// server(s) at `base`, its work and log dirs under `work`.
pub(crate) fn start_agent(base: &str, work: &Path, resources: &str) -> Stoppable {
    let child = weft_command()
        .args(["agent", "--server", base, "--node-id", "agent-1"])
        .args(["--resources", resources])
        .arg("--work-dir")
        .arg(work.join("work"))
        .arg("--log-dir")
        .arg(work.join("logs"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("weft agent starts");
    Stoppable(child)
}

/// Whether process `pid` runs (a zombie counts as gone).
pub(crate) fn alive(pid: u32) -> bool {
    // A zombie has no more to kill: count it as gone.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            !stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

/// The host's pid of the process a container wrote to `path` as
/// `"$CONTAINER_ID $$"`, once it has (see [`host_pid`]).
pub(crate) fn read_pid(path: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(path).ok()?;
    let (container, inner) = text.trim().split_once(' ')?;
    host_pid(container, inner.parse().ok()?)
}

/// The host's pid of the process of `container` that knows itself as
/// `inner` (its `$$`): a container has a pid namespace of its own where the
/// agent can make one, so its pids are not the host's. Found among the
/// processes whose environment has its CONTAINER_ID, by the last pid of
/// their `NSpid` (their pid in their own namespace).
pub(crate) fn host_pid(container: &str, inner: u32) -> Option<u32> {
    let marker = format!("CONTAINER_ID={container}");
    std::fs::read_dir("/proc").ok()?.find_map(|entry| {
        let pid: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
        let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
        if !environ
            .split(|b| *b == 0)
            .any(|var| var == marker.as_bytes())
        {
            return None;
        }
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let own: u32 = status
            .lines()
            .find_map(|line| line.strip_prefix("NSpid:"))?
            .split_whitespace()
            .last()?
            .parse()
            .ok()?;
        (own == inner).then_some(pid)
    })
}

/// A new database's URL, or `None` where PostgreSQL 15 is missing (and
/// this is not CI).
pub(crate) fn pg_database() -> Option<String> {
    if let Err(why) = LocalPostgres::installed() {
        if std::env::var_os("CI").is_some() {
            panic!("{why}");
        }
        // Straight to stderr: the harness captures eprintln! of a passing
        // test, and a skip must be seen.
        let test = std::thread::current().name().unwrap_or("?").to_string();
        let _ = writeln!(std::io::stderr(), "******** skipped {test}: {why} ********");
        return None;
    }
    Some(LocalPostgres::fresh_database().unwrap_or_else(|e| panic!("{e}")))
}

/// `requirement` (e.g. `pyspark==4.0.1`) installed from PyPI into
/// `dir_name` beneath the build's directory, once (when `marker`, a path in
/// it, is missing): the directory, for PYTHONPATH or its files.
pub(crate) fn pip_installed(requirement: &str, dir_name: &str, marker: &str) -> std::path::PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(dir_name);
    if !dir.join(marker).exists() {
        let status = Command::new("python3")
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .args(["--upgrade", "--target"])
            .arg(&dir)
            .arg(requirement)
            .status()
            .expect("python3 runs (install Python 3 with pip)");
        assert!(status.success(), "pip install {requirement} failed");
    }
    dir
}

/// A loopback port free now (for a server restarted at the same address).
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Asserts two credit figures agree to a millionth of a credit.
pub(crate) fn assert_credits(actual: &Value, expected: f64, what: &str) {
    let actual = actual
        .as_f64()
        .unwrap_or_else(|| panic!("{what}: not a number: {actual}"));
    assert!(
        (actual - expected).abs() < 1e-6,
        "{what}: {actual} credits, expected {expected}"
    );
}
