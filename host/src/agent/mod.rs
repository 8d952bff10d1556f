//! `weft agent`: the node agent (YARN's NodeManager). It registers with the
//! resource manager, heartbeats, launches the containers it is told to as
//! real processes, kills them when told, reports how they ended, and serves
//! their logs. `weft serve` runs one in-process unless told not to.
//!
//! What it says to the server is the node protocol (`protocol/node.rs`).
//! `tracker.rs`: how the agent reaches the server over HTTP.
//! `runner.rs`: the loop. `executor.rs` and `cgroups.rs`: processes,
//! limits, kills and exit statuses. `logs.rs`: the log server.
//! `untrusted.rs`: reading files a container can write. `removal.rs`:
//! removing the trees it leaves. `health.rs`: the node's health checks.
//! `machine.rs`: what the machine offers.

pub mod cgroups;
pub mod executor;
pub mod health;
pub mod logs;
pub mod machine;
pub mod monitor;
pub mod node_manager;
pub mod queue;
pub mod removal;
pub mod runner;
pub mod spawner;
pub mod syscall_filter;
pub mod tracker;
pub mod untrusted;
pub mod yarn_launch;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, bail};

use crate::config::{AgentSettings, Authentication, RunAsSetting};
use crate::protocol::node::ResourceTracker;
use executor::{Executor, ExecutorConfig, RunAs};
use runner::AgentLoop;

/// Where an agent keeps its containers and their logs.
#[derive(Debug, Clone)]
pub struct AgentDirs {
    /// `--work-dir`: the containers' working dirs (`apps/<app>/<container>`)
    /// and the agent's records of them (`.weft/containers/<container>`).
    pub work_dir: PathBuf,
    /// `--log-dir`: the containers' logs (`<app>/<container>/{stdout,stderr}`).
    pub log_dir: PathBuf,
}

/// Whose agent this is: `weft serve`'s own (in the server's process, as
/// the server's user) or a `weft agent` of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentKind {
    /// `weft serve`'s own agent, in the server's process.
    Local,
    /// A `weft agent` process.
    Standalone,
}

/// The executor an agent's settings ask for, if they are safe (see
/// [`run_as`]).
pub fn open_executor(
    node_id: &str,
    dirs: &AgentDirs,
    settings: &AgentSettings,
    authentication: Authentication,
    kind: AgentKind,
    memory_mb: u64,
) -> anyhow::Result<Executor> {
    let run_as = run_as(settings, authentication, kind)?;
    executor_for(node_id, dirs, settings, run_as, memory_mb)
}

/// Who containers run as, if the settings are safe:
///
/// - `submitter` (each container as its app's user) needs token
///   authentication (else anyone could name any user) and a root agent (to
///   switch users);
/// - `local-user` (every container as one unprivileged user) needs a root
///   agent;
/// - `agent` (containers as the agent's own user) is refused in token mode
///   for the local agent — its user owns the data directory, the tokens
///   file and the ledger, which a container would then rewrite — and for
///   any agent running as root.
pub fn run_as(
    settings: &AgentSettings,
    authentication: Authentication,
    kind: AgentKind,
) -> anyhow::Result<RunAs> {
    let root = nix::unistd::geteuid().is_root();
    Ok(match settings.run_as {
        RunAsSetting::Agent => {
            if authentication == Authentication::Token && (kind == AgentKind::Local || root) {
                let whose = match kind {
                    AgentKind::Local => {
                        "the server's own user, who owns the data directory, the tokens file and the ledger"
                    }
                    AgentKind::Standalone => "root",
                };
                bail!(
                    "in token mode containers may not run as {whose} (weft.agent.run-as = agent): set weft.agent.run-as = local-user (every container as {local}, yarn.nodemanager.linux-container-executor.nonsecure-mode.local-user) or submitter (each as its submitter), both with the agent running as root{local_hint}",
                    local = settings.local_user,
                    local_hint = match kind {
                        AgentKind::Local =>
                            ", or start the server with --no-local-agent and run `weft agent` as a user of its own",
                        AgentKind::Standalone =>
                            ", or run the agent as an unprivileged user of its own",
                    }
                );
            }
            RunAs::Agent
        }
        RunAsSetting::Submitter => {
            if authentication != Authentication::Token {
                bail!(
                    "weft.agent.run-as = submitter needs weft.security.authentication = token: with simple authentication any caller could run as any user"
                );
            }
            if !root {
                bail!(
                    "weft.agent.run-as = submitter needs the agent to run as root, to switch to each submitter's user"
                );
            }
            RunAs::Submitter {
                banned_users: settings.banned_users.clone(),
                min_user_id: settings.min_user_id,
            }
        }
        RunAsSetting::LocalUser => {
            if !root {
                bail!(
                    "weft.agent.run-as = local-user needs the agent to run as root, to switch to {}",
                    settings.local_user
                );
            }
            // Checked now, so a misconfigured user stops the start rather
            // than failing every container.
            let identity = executor::switch_identity(
                &settings.local_user,
                &settings.banned_users,
                settings.min_user_id,
            )
            .map_err(|why| {
                anyhow::anyhow!(
                    "yarn.nodemanager.linux-container-executor.nonsecure-mode.local-user: {why}"
                )
            })?;
            if let Some(uid) = identity.uid() {
                warn_if_shared(&settings.local_user, uid);
            }
            RunAs::LocalUser {
                user: settings.local_user.clone(),
                banned_users: settings.banned_users.clone(),
                min_user_id: settings.min_user_id,
            }
        }
    })
}

fn executor_for(
    node_id: &str,
    dirs: &AgentDirs,
    settings: &AgentSettings,
    run_as: RunAs,
    memory_mb: u64,
) -> anyhow::Result<Executor> {
    let sanitized: String = node_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mut executor = Executor::open(ExecutorConfig {
        work_dir: dirs.work_dir.clone(),
        log_dir: dirs.log_dir.clone(),
        run_as,
        kill_grace: settings.kill_grace,
        stderr_tail_bytes: settings.stderr_tail_bytes,
        cgroup_name: format!("weft-agent-{sanitized}-{}", work_dir_tag(&dirs.work_dir)),
        pids_limit: settings.pids_limit,
        syscall_filter: settings.syscall_filter,
        own_network: settings.own_network,
        log_limit_bytes: settings.log_limit_bytes.unwrap_or(0),
        log_check_interval: settings.log_check_interval,
        memory_mb,
    })
    .with_context(|| {
        format!(
            "the agent cannot use its directories {} and {}",
            dirs.work_dir.display(),
            dirs.log_dir.display()
        )
    })?;
    raise_open_files_limit();
    executor.fork_from_helper();
    Ok(executor)
}

/// Each running container holds a descriptor of the agent's (its monitor's
/// pidfd), besides its log files while it starts: the soft limit on open
/// files goes up to the hard one, so a node of many slots does not run
/// out.
fn raise_open_files_limit() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE)
        && soft < hard
        && let Err(error) = setrlimit(Resource::RLIMIT_NOFILE, hard, hard)
    {
        tracing::warn!(%error, soft, hard, "cannot raise the limit on open files");
    }
}

/// Containers share the host's process table: any process of their user
/// outside them (a daemon run as `nobody`) is theirs to signal, trace or
/// enter through /proc. Says so if the local user has such processes.
fn warn_if_shared(user: &str, uid: u32) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    let others = entries
        .filter_map(Result::ok)
        .filter(|entry| {
            entry
                .file_name()
                .to_str()
                .is_some_and(|n| n.parse::<u32>().is_ok())
        })
        .filter(|entry| entry.metadata().is_ok_and(|m| m.uid() == uid))
        .count();
    if others > 0 {
        tracing::warn!(
            user,
            processes = others,
            "processes of the containers' local user run outside them; a container can signal, trace or reach into them: give containers a user of their own (yarn.nodemanager.linux-container-executor.nonsecure-mode.local-user)"
        );
    }
}

/// A short tag of the work dir for the agent's cgroup name: two agents on
/// one machine (two local agents of two servers, say) must never share a
/// cgroup parent, as an agent removes what it finds there that is not its
/// own; an agent restarted on the same work dir finds its own again.
fn work_dir_tag(work_dir: &std::path::Path) -> String {
    use sha2::Digest;
    // Made first, so the tag is of the same resolved path every time (an
    // unusable dir is reported by the executor right after).
    let _ = std::fs::create_dir_all(work_dir);
    let path = std::fs::canonicalize(work_dir).unwrap_or_else(|_| work_dir.to_path_buf());
    let digest = sha2::Sha256::digest(path.as_os_str().as_encoded_bytes());
    hex::encode(&digest[..4])
}

/// Starts the log server on `listen`; returns its address as the server
/// should reach it (`http://ip:port`) and the secret it wants.
pub async fn serve_logs(listen: SocketAddr, log_dir: PathBuf) -> anyhow::Result<(String, String)> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("the agent cannot serve logs on {listen}"))?;
    let address = listener.local_addr()?;
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret)
        .map_err(|e| anyhow::anyhow!("no randomness for the log secret: {e}"))?;
    let secret = hex::encode(secret);
    let app = logs::router(log_dir, secret.clone());
    tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, app).await {
            tracing::error!(%error, "the agent's log server stopped");
        }
    });
    Ok((format!("http://{address}"), secret))
}

/// Starts the agent's ContainerManagementProtocol on `listen` (YARN's
/// `yarn.nodemanager.address`), over `shared`; returns the `host:port` it
/// serves on (the NodeId masters are given), `host` being `listen`'s, else
/// `advertised` for a wildcard. Serves until the runtime stops.
pub async fn serve_node_manager(
    listen: &str,
    advertised: &str,
    shared: Arc<node_manager::Shared>,
) -> anyhow::Result<String> {
    use crate::yarn_rpc::{sasl::Methods, server};
    let socket = tokio::net::TcpListener::bind(listen).await.with_context(|| {
        format!("the agent cannot serve ContainerManagementProtocol on {listen} (yarn.nodemanager.address)")
    })?;
    let address = socket.local_addr()?;
    let host = if address.ip().is_unspecified() {
        advertised.to_string()
    } else {
        address.ip().to_string()
    };
    let (protocols, passwords) = node_manager::NodeManager::new(shared);
    tokio::spawn(server::serve(
        server::Listener {
            socket,
            protocols: Arc::new(protocols),
            // A caller without an NMToken is refused by the protocol,
            // naming why; whoever it says it is does not matter.
            authenticator: Arc::new(crate::security::Authenticator::Simple {
                default_user: "nobody".into(),
            }),
            sasl: Methods::Tokens {
                passwords: Arc::new(passwords),
                simple_too: true,
            },
            limits: server::Limits::default(),
        },
        std::future::pending::<()>(),
    ));
    Ok(format!("{host}:{}", address.port()))
}

/// Runs `agent_loop` on a thread of its own until `stop` is set; then,
/// with `kill_on_stop`, it kills what runs.
pub fn spawn_loop<T: ResourceTracker + 'static>(
    agent_loop: AgentLoop<T>,
    stop: Arc<AtomicBool>,
    kill_on_stop: bool,
) -> anyhow::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("weft-agent".into())
        .spawn(move || agent_loop.run(stop, kill_on_stop))
        .context("cannot start the agent's thread")
}
