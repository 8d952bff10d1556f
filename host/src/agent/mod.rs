//! `weft agent`: the node agent (YARN's NodeManager). It registers with the
//! resource manager, heartbeats, launches the containers it is told to as
//! real processes, kills them when told, reports how they ended, and serves
//! their logs. `weft serve` runs one in-process unless told not to.
//!
//! `protocol.rs`: what the server and the agent say to each other.
//! `tracker.rs`: how the agent reaches the server (HTTP or in-process).
//! `runner.rs`: the loop. `executor.rs` and `cgroups.rs`: processes,
//! limits, kills and exit statuses. `logs.rs`: the log server.
//! `machine.rs`: what the machine offers.

pub mod cgroups;
pub mod executor;
pub mod logs;
pub mod machine;
pub mod monitor;
pub mod protocol;
pub mod runner;
pub mod tracker;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, bail};

use crate::config::{AgentSettings, Authentication, RunAsSetting};
use executor::{Executor, ExecutorConfig, RunAs};
use runner::{AgentLoop, NodeIdentity};
use tracker::ResourceTracker;

/// Where an agent keeps its containers and their logs.
#[derive(Debug, Clone)]
pub struct AgentDirs {
    pub work_dir: PathBuf,
    pub log_dir: PathBuf,
}

/// The executor an agent's settings ask for. Running containers as their
/// submitters is refused unless callers are authenticated by token (else
/// anyone could name any user) and the agent runs as root (else it cannot
/// switch users).
pub fn open_executor(
    node_id: &str,
    dirs: &AgentDirs,
    settings: &AgentSettings,
    authentication: Authentication,
) -> anyhow::Result<Executor> {
    let run_as = match settings.run_as {
        RunAsSetting::Agent => RunAs::Agent,
        RunAsSetting::Submitter => {
            if authentication != Authentication::Token {
                bail!(
                    "weft.agent.run-as = submitter needs weft.security.authentication = token: with simple authentication any caller could run as any user"
                );
            }
            if !nix::unistd::geteuid().is_root() {
                bail!(
                    "weft.agent.run-as = submitter needs the agent to run as root, to switch to each submitter's user"
                );
            }
            RunAs::Submitter {
                banned_users: settings.banned_users.clone(),
                min_user_id: settings.min_user_id,
            }
        }
    };
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
    Executor::open(ExecutorConfig {
        work_dir: dirs.work_dir.clone(),
        log_dir: dirs.log_dir.clone(),
        run_as,
        kill_grace: settings.kill_grace,
        stderr_tail_bytes: settings.stderr_tail_bytes,
        cgroup_name: format!("weft-agent-{sanitized}-{}", work_dir_tag(&dirs.work_dir)),
    })
    .with_context(|| {
        format!(
            "the agent cannot use its directories {} and {}",
            dirs.work_dir.display(),
            dirs.log_dir.display()
        )
    })
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

/// Runs an agent's loop on a thread of its own until `stop` is set.
pub fn spawn_loop<T: ResourceTracker + 'static>(
    identity: NodeIdentity,
    log_retain: std::time::Duration,
    tracker: T,
    executor: Executor,
    stop: Arc<AtomicBool>,
    kill_on_stop: bool,
) -> anyhow::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("weft-agent".into())
        .spawn(move || {
            AgentLoop::new(identity, log_retain, tracker, executor).run(stop, kill_on_stop)
        })
        .context("cannot start the agent's thread")
}
