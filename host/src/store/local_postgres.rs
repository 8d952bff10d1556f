//! A throwaway PostgreSQL 15 for tests and benchmarks: a fresh cluster
//! (`initdb`) in a temporary directory, trusting loopback connections, on a
//! free port of 127.0.0.1, stopped and removed when dropped — or, for the
//! one a test process shares ([`LocalPostgres::shared`]), when the process
//! ends, however it ends.
//!
//! It uses Debian's `postgresql-15` (programs in `/usr/lib/postgresql/15/bin`,
//! or `WEFT_POSTGRES_BIN`). PostgreSQL refuses to run as root, so under root
//! its programs run as the `postgres` OS user that package creates.
//!
//! Starting one costs about 1 s without fsync (in memory: `initdb` most of
//! it, the start 0.1 s) and 1.5–2 s with; a database on a running one costs
//! about 25 ms in memory, 200–300 ms on disk. So tests share one server per
//! test process, without fsync, and take a database each
//! ([`LocalPostgres::fresh_database`]).

use std::fs::File;
use std::io::Read;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::postgres::PostgresBackend;
use super::{Backend, Value};

/// Where Debian's postgresql-15 installs its programs.
pub const DEFAULT_BIN: &str = "/usr/lib/postgresql/15/bin";

/// How long the server may take to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// How long it may take to stop after SIGQUIT before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// Runs at the end of the process that started a server (its standard
/// input is a pipe whose other end only that process holds: the read ends
/// when it exits, even killed). It then stops the server if it still runs
/// — after checking that the pid in `postmaster.pid` is that server's, so a
/// reused pid is never signalled — and removes the directory. It tries
/// again for a while: an `initdb` or a postmaster that process started just
/// before dying may still be writing there. `$1` is the directory.
const WATCHDOG: &str = r#"
cat >/dev/null
pidfile="$1/data/postmaster.pid"
ours() {
    [ -f "$pidfile" ] && pid=$(head -n 1 "$pidfile") && [ -n "$pid" ] &&
        tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$1/data"
}
attempt=0
while [ -e "$1" ] && [ "$attempt" -lt 20 ]; do
    if ours; then
        kill -QUIT "$pid" 2>/dev/null
        i=0
        while [ -f "$pidfile" ] && [ "$i" -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
        ours && kill -KILL "$pid" 2>/dev/null
    fi
    rm -rf -- "$1" 2>/dev/null
    [ -e "$1" ] && sleep 0.5
    attempt=$((attempt + 1))
done
"#;

/// How a server is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Whether commits reach the disk. Off (`fsync=off`,
    /// `synchronous_commit=off`, `full_page_writes=off`) is for tests of
    /// behaviour only: a crash of the machine loses the cluster. On for
    /// benchmarks that should cost what production does.
    pub fsync: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options { fsync: true }
    }
}

/// A running PostgreSQL of this process's own.
pub struct LocalPostgres {
    dir: PathBuf,
    port: u16,
    postmaster: Option<Child>,
    /// Cleans up at this process's end if `Drop` never runs (see
    /// [`WATCHDOG`]).
    watchdog: Option<Child>,
    /// A session on the `postgres` database, for creating databases and
    /// ending sessions; opened when first needed.
    admin: Mutex<Option<PostgresBackend>>,
}

impl std::fmt::Debug for LocalPostgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalPostgres")
            .field("dir", &self.dir)
            .field("port", &self.port)
            .field("pid", &self.pid())
            .finish()
    }
}

/// The server a test process shares, started by the first to ask.
static SHARED: OnceLock<Result<LocalPostgres, String>> = OnceLock::new();

impl LocalPostgres {
    /// The directory of PostgreSQL 15's programs if they are installed, or
    /// a message that says how to install them.
    pub fn installed() -> Result<PathBuf, String> {
        let bin = std::env::var_os("WEFT_POSTGRES_BIN")
            .map_or_else(|| PathBuf::from(DEFAULT_BIN), PathBuf::from);
        for program in ["initdb", "postgres"] {
            if !bin.join(program).is_file() {
                return Err(format!(
                    "PostgreSQL 15 is not installed ({} is missing): apt-get install postgresql-15",
                    bin.join(program).display()
                ));
            }
        }
        Ok(bin)
    }

    /// Starts a durable server (see [`Options`]) with a database `weft`.
    pub fn start() -> Result<LocalPostgres, String> {
        LocalPostgres::start_with(Options::default())
    }

    /// Starts a server as `options` say, with a database `weft`: stopped and
    /// removed when dropped, or when this process ends.
    pub fn start_with(options: Options) -> Result<LocalPostgres, String> {
        let bin = LocalPostgres::installed()?;
        let owner = owner()?;
        let dir = fresh_dir(owner, options)?;
        let mut server = LocalPostgres {
            dir,
            port: 0,
            postmaster: None,
            watchdog: None,
            admin: Mutex::new(None),
        };
        // Before anything else, so even a start that fails halfway is
        // cleaned up if this process dies.
        server.watchdog = Some(
            Command::new("/bin/sh")
                .arg("-c")
                .arg(WATCHDOG)
                .arg("weft-postgres-watchdog")
                .arg(&server.dir)
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                // Out of the terminal's process group: a ^C that kills the
                // tests must leave it alive to clean up after them.
                .process_group(0)
                .spawn()
                .map_err(|e| format!("cannot start the watchdog (/bin/sh): {e}"))?,
        );
        let data = server.dir.join("data");
        let output = as_owner(Command::new(bin.join("initdb")), owner)
            .arg("--pgdata")
            .arg(&data)
            .args([
                "--username=postgres",
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
                "--no-instructions",
            ])
            .current_dir(&server.dir)
            .output()
            .map_err(|e| format!("cannot run initdb: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "initdb failed ({}): {}{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        // A free port can be taken by someone else between finding it and
        // the server binding it: then try another.
        let mut attempts = 0;
        loop {
            attempts += 1;
            server.port = free_port()?;
            match server.run_postmaster(&bin, owner, options) {
                Ok(()) => break,
                Err(Start::PortTaken) if attempts < 5 => continue,
                Err(Start::PortTaken) => return Err("no free port could be bound".into()),
                Err(Start::Failed(why)) => return Err(why),
            }
        }
        server.admin_run(|admin| admin.batch_execute("CREATE DATABASE weft"))?;
        Ok(server)
    }

    /// The server this test process shares: started (without fsync) by
    /// the first caller, stopped when the process ends.
    pub fn shared() -> Result<&'static LocalPostgres, String> {
        SHARED
            .get_or_init(|| LocalPostgres::start_with(Options { fsync: false }))
            .as_ref()
            .map_err(String::clone)
    }

    /// The URL of a new, empty database on the shared server: each test
    /// its own.
    pub fn fresh_database() -> Result<String, String> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let server = LocalPostgres::shared()?;
        server.create_database(&format!("test_{}", NEXT.fetch_add(1, Ordering::Relaxed)))
    }

    /// The database `weft`'s URL.
    pub fn url(&self) -> String {
        self.url_of("weft")
    }

    /// The URL of database `database` on it (user `postgres`, trusted from
    /// loopback).
    pub fn url_of(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    /// The port it listens on, on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The postmaster's pid.
    pub fn pid(&self) -> u32 {
        self.postmaster.as_ref().map_or(0, Child::id)
    }

    /// Its directory: the cluster (`data/`), the socket and `postgres.log`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Creates database `name` (letters, digits and `_`) and returns its URL.
    pub fn create_database(&self, name: &str) -> Result<String, String> {
        let valid = !name.is_empty()
            && name.len() < 64
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(format!(
                "{name:?} is not a database name this helper creates (letters, digits, _)"
            ));
        }
        self.admin_run(|admin| admin.batch_execute(&format!("CREATE DATABASE \"{name}\"")))?;
        Ok(self.url_of(name))
    }

    /// Ends every session whose `application_name` is `application_name`
    /// (as an administrator or a failing network would) and waits until
    /// they are gone; returns how many there were.
    pub fn terminate(&self, application_name: &str) -> Result<usize, String> {
        let rows = self.admin_run(|admin| {
            admin.query(
                "SELECT pid, pg_terminate_backend(pid, 5000) FROM pg_stat_activity
                 WHERE application_name = ?1 AND pid <> pg_backend_pid()",
                &[application_name.into()],
            )
        })?;
        for row in &rows {
            if row.get(1) != Some(&Value::Int(1)) {
                return Err(format!(
                    "session {:?} of {application_name:?} did not end within 5 s",
                    row.first()
                ));
            }
        }
        Ok(rows.len())
    }

    /// Runs `f` on the administrator's session, opening it (again) if it
    /// is not open.
    fn admin_run<T>(
        &self,
        f: impl FnOnce(&mut PostgresBackend) -> Result<T, super::StoreError>,
    ) -> Result<T, String> {
        let mut admin = self
            .admin
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if admin.as_ref().is_none_or(PostgresBackend::is_closed) {
            let url = format!(
                "{}?application_name=weft-local-postgres",
                self.url_of("postgres")
            );
            *admin = Some(PostgresBackend::connect(&url).map_err(|e| e.to_string())?);
        }
        match admin.as_mut() {
            Some(backend) => f(backend).map_err(|e| e.to_string()),
            None => Err("no administrator session".into()),
        }
    }

    /// Starts the postmaster on `self.port` and waits until it accepts
    /// connections.
    fn run_postmaster(
        &mut self,
        bin: &Path,
        owner: Option<(u32, u32)>,
        options: Options,
    ) -> Result<(), Start> {
        let log_path = self.dir.join("postgres.log");
        let log = File::create(&log_path)
            .and_then(|log| Ok((log.try_clone()?, log)))
            .map_err(|e| Start::Failed(format!("cannot create {}: {e}", log_path.display())))?;
        let mut command = as_owner(Command::new(bin.join("postgres")), owner);
        command
            .arg("-D")
            .arg(self.dir.join("data"))
            .arg("-p")
            .arg(self.port.to_string())
            .arg("-k")
            .arg(&self.dir)
            .args(["-c", "listen_addresses=127.0.0.1"])
            .args(["-c", "max_connections=200"]);
        if !options.fsync {
            command.args([
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
            ]);
        }
        let child = command
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(log.0)
            .stderr(log.1)
            .process_group(0)
            .spawn()
            .map_err(|e| Start::Failed(format!("cannot start postgres: {e}")))?;
        let postmaster = self.postmaster.insert(child);
        let pid_file = self.dir.join("data").join("postmaster.pid");
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            // Its 8th line says "ready" once it accepts connections.
            let ready = std::fs::read_to_string(&pid_file)
                .is_ok_and(|text| text.lines().nth(7).map(str::trim) == Some("ready"));
            if ready {
                return Ok(());
            }
            if let Ok(Some(status)) = postmaster.try_wait() {
                self.postmaster = None;
                let log = tail(&log_path);
                if log.contains("could not bind") || log.contains("could not create listen socket")
                {
                    return Err(Start::PortTaken);
                }
                return Err(Start::Failed(format!("postgres exited ({status}): {log}")));
            }
            if Instant::now() > deadline {
                return Err(Start::Failed(format!(
                    "postgres did not accept connections within {START_TIMEOUT:?}: {}",
                    tail(&log_path)
                )));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for LocalPostgres {
    fn drop(&mut self) {
        // Closed first, so no session of ours is cut off mid-request.
        drop(
            self.admin
                .get_mut()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .take(),
        );
        if let Some(postmaster) = self.postmaster.as_mut() {
            stop(postmaster);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
        // Its pipe closed, it finds nothing left to do and exits.
        if let Some(mut watchdog) = self.watchdog.take() {
            drop(watchdog.stdin.take());
            let _ = watchdog.wait();
        }
    }
}

/// Why a postmaster did not start.
enum Start {
    PortTaken,
    Failed(String),
}

/// Stops a postmaster of ours: SIGQUIT is `pg_ctl stop -m immediate` (it
/// ends the server's other processes too, without a checkpoint: the cluster
/// is thrown away); SIGKILL if it is still there after [`STOP_TIMEOUT`].
/// It is our child, not yet waited for, so its pid cannot have been reused.
fn stop(postmaster: &mut Child) {
    if let Ok(pid) = i32::try_from(postmaster.id()) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGQUIT,
        );
    }
    let deadline = Instant::now() + STOP_TIMEOUT;
    while Instant::now() < deadline {
        match postmaster.try_wait() {
            Ok(Some(_)) => return,
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(_) => break,
        }
    }
    let _ = postmaster.kill();
    let _ = postmaster.wait();
}

/// Under root, the `postgres` OS user's (uid, gid): PostgreSQL's programs
/// refuse to run as root. Otherwise `None`: they run as this user.
fn owner() -> Result<Option<(u32, u32)>, String> {
    if !nix::unistd::geteuid().is_root() {
        return Ok(None);
    }
    match nix::unistd::User::from_name("postgres") {
        Ok(Some(user)) => Ok(Some((user.uid.as_raw(), user.gid.as_raw()))),
        Ok(None) => Err(
            "PostgreSQL will not run as root and there is no `postgres` OS user to run it as \
             (apt-get install postgresql-15 creates it)"
                .into(),
        ),
        Err(e) => Err(format!("cannot look up the `postgres` OS user: {e}")),
    }
}

/// `command` running as `owner`, with an environment of its own (a PGDATA
/// or PGPORT of the caller's must not steer it).
fn as_owner(mut command: Command, owner: Option<(u32, u32)>) -> Command {
    command
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("LC_ALL", "C");
    if let Some((uid, gid)) = owner {
        // Setting the uid from root also drops root's supplementary groups.
        command.uid(uid).gid(gid);
    }
    command
}

/// A new directory owned by `owner`: in memory (`/dev/shm`) for a server
/// without fsync — nothing of it is meant to last, and on disk `CREATE
/// DATABASE` alone took 300 ms here, in memory 25 ms — else in the
/// temporary directory.
fn fresh_dir(owner: Option<(u32, u32)>, options: Options) -> Result<PathBuf, String> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let shm = Path::new("/dev/shm");
    let base = if !options.fsync && shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let dir = base.join(format!(
        "weft-postgres-{}-{}-{nanos:08x}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    if let Some((uid, gid)) = owner {
        nix::unistd::chown(
            &dir,
            Some(nix::unistd::Uid::from_raw(uid)),
            Some(nix::unistd::Gid::from_raw(gid)),
        )
        .map_err(|e| {
            let _ = std::fs::remove_dir(&dir);
            format!("cannot give {} to the postgres user: {e}", dir.display())
        })?;
    }
    Ok(dir)
}

/// A port of 127.0.0.1 that nothing listens on now.
fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .map_err(|e| format!("cannot find a free port: {e}"))
}

/// The end of a log, for a message.
fn tail(path: &Path) -> String {
    let mut text = String::new();
    let _ = File::open(path).and_then(|mut file| file.read_to_string(&mut text));
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}
