//! `weft serve`: start the resource manager and its HTTP API.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;

use super::SettingsArgs;
use crate::api::{ApiState, router};
use crate::config::{Authentication, Settings};
use crate::policy::{PolicyKind, PolicyRuntime, PolicySource, watch};
use crate::quota::QuotaService;
use crate::rm::{self, Intervals, ResourceManager, sim_nodes};
use crate::security::{Authenticator, Security};
use crate::sim::{Clock, WallClock};
use crate::store::Store;

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    settings: SettingsArgs,
    /// Where the ledger and multiplicators are kept.
    #[arg(long, value_name = "DIR", default_value = "weft-data")]
    data_dir: PathBuf,
    /// Address of the HTTP API.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8088")]
    listen: SocketAddr,
    /// The queue configuration: a capacity-scheduler.xml or a TOML file of
    /// yarn.scheduler.capacity.* properties (default: root.default at 100 %).
    #[arg(long, value_name = "FILE")]
    queues: Option<PathBuf>,
    /// Built-in simulated nodes, e.g. 20x8192mb,8vcores,1gpus.
    #[arg(long, value_name = "SPEC")]
    sim_nodes: Option<String>,
    /// Do not start the local agent (without --sim-nodes, `weft serve`
    /// runs one in-process, sized to this machine, so apps run real
    /// commands out of the box).
    #[arg(long)]
    no_local_agent: bool,
}

/// Builds the policy runtime from settings, its guests reading `clock`, and
/// loads the start-up policies.
pub fn policy_runtime(
    settings: &Settings,
    clock: Arc<dyn Clock>,
) -> anyhow::Result<Arc<PolicyRuntime>> {
    let runtime = Arc::new(PolicyRuntime::from_settings(settings, clock)?);
    let configured = &settings.policies;
    for (kind, text, key) in [
        (
            PolicyKind::Scheduling,
            &configured.scheduling,
            "weft.policy.scheduling",
        ),
        (
            PolicyKind::Pricing,
            &configured.pricing,
            "weft.policy.pricing",
        ),
        (
            PolicyKind::Sharing,
            &configured.sharing,
            "weft.policy.sharing",
        ),
    ] {
        let source = PolicySource::parse(text);
        runtime
            .load(kind, &source, &[])
            .with_context(|| format!("cannot load the {kind} policy {source} ({key})"))?;
    }
    Ok(runtime)
}

pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    super::init_tracing("info");
    let settings = args.settings.load()?;
    let sim_nodes = args
        .sim_nodes
        .as_deref()
        .map(sim_nodes::parse)
        .transpose()
        .map_err(anyhow::Error::msg)?;
    let queues = crate::queues::load(args.queues.as_deref(), &settings.queue_properties)
        .context("the queue configuration is invalid")?;
    let security =
        Arc::new(Security::from_settings(&settings.security).map_err(anyhow::Error::msg)?);
    let authenticator = Arc::new(
        Authenticator::from_settings(&settings.security, &args.data_dir)
            .map_err(anyhow::Error::msg)?,
    );
    // refreshQueues reads the config file, the --set overrides and the
    // --queues file again, as they are now.
    let reload_queues: crate::api::QueueReload = {
        let (settings_args, queues_file) = (args.settings.clone(), args.queues.clone());
        Arc::new(move || {
            let settings = settings_args.load().map_err(|e| format!("{e:#}"))?;
            crate::queues::load(queues_file.as_deref(), &settings.queue_properties)
                .map_err(|e| e.to_string())
        })
    };
    // One clock for the resource manager and the policies' WASI clocks.
    let clock: Arc<dyn Clock> = Arc::new(WallClock);
    let policies = policy_runtime(&settings, clock.clone())?;
    let store = Store::open(&args.data_dir)?;
    let quota = QuotaService::open(settings.quota, store)?;
    // Reservations have their own connection to the same database.
    let reservation_store = Store::open(&args.data_dir)?;
    let listener = std::net::TcpListener::bind(args.listen)
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let address = listener.local_addr()?;
    warn_about_exposure(
        &address,
        &authenticator,
        &security,
        settings.http.tls.is_some(),
    );

    let mut manager = ResourceManager::new(
        &settings,
        queues,
        quota,
        reservation_store,
        policies.clone(),
        security.clone(),
        clock,
    )
    .context("cannot restore the reservations")?;
    if let Some((count, capacity)) = sim_nodes {
        manager.add_simulated_nodes(count, capacity);
        tracing::info!(count, %capacity, "simulated nodes registered");
    }
    let intervals = Intervals {
        scheduling: settings.scheduler.interval,
        quota_compute: Duration::from_millis(settings.quota.scheduling_period_ms),
        multiplicator: Duration::from_millis(settings.quota.multiplicator_interval_ms),
    };
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stop_tx = Arc::new(stop_tx);
    let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|stop| *stop).await;
    };
    let (handle, loop_thread) = rm::spawn(manager, intervals, stopped(stop_rx.clone()))
        .context("cannot start the event loop")?;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let stopper = stop_tx.clone();
    let local_agent = sim_nodes.is_none() && !args.no_local_agent;
    let agent_stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let agent_thread = if local_agent {
        Some(start_local_agent(
            &runtime,
            &settings,
            &args.data_dir,
            handle.clone(),
            agent_stop.clone(),
        )?)
    } else {
        None
    };
    let served = runtime.block_on(async move {
        if let Some(watch_dir) = settings.policies.watch_dir.clone() {
            watch::watch(policies.clone(), watch_dir)
                .context("cannot watch the policy directory")?;
        }
        let signalled = stop_tx.clone();
        tokio::spawn(async move {
            shutdown_signal().await;
            tracing::info!("stopping: charging running containers, then exiting");
            let _ = signalled.send(true);
        });
        let state = ApiState {
            rm: handle,
            policies,
            authenticator,
            security,
            reload_queues,
            heartbeat_interval_ms: settings.nodes.heartbeat_interval_ms,
            policy_loads: Default::default(),
        };
        let scheme = if settings.http.tls.is_some() { "https" } else { "http" };
        // stdout gets the one line a user needs; logs go to stderr.
        println!(
            "weft listening on {scheme}://{address}  (try: curl {scheme}://{address}/ws/v1/cluster/metrics)"
        );
        tracing::info!(%address, data_dir = %args.data_dir.display(), "weft serving");
        crate::api::server::serve(
            router(state),
            listener,
            &settings.http,
            stopped(stop_rx),
        )
        .await
    });
    // The local agent stops first, killing its containers; then the loop
    // ends (also when the HTTP server failed), charging running containers
    // up to the stop.
    agent_stop.store(true, std::sync::atomic::Ordering::Relaxed);
    if let Some(thread) = agent_thread {
        let _ = thread.join();
    }
    let _ = stopper.send(true);
    let looped = loop_thread.join();
    served?;
    looped.map_err(|_| anyhow::anyhow!("the event loop thread failed"))?;
    Ok(())
}

/// Starts the in-process agent (as `nomad agent -dev` does): this machine
/// less its reserve, containers under DATA_DIR/agent, logs served on a
/// loopback port, talking to the event loop as the user running the server.
fn start_local_agent(
    runtime: &tokio::runtime::Runtime,
    settings: &Settings,
    data_dir: &std::path::Path,
    rm: rm::RmHandle,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> anyhow::Result<std::thread::JoinHandle<()>> {
    use crate::agent::{self, AgentDirs, machine, runner::NodeIdentity, tracker::LocalTracker};
    let node_id = format!("{}:local", machine::host_name());
    let resources = machine::resources(settings.agent.reserved_memory_mb)?;
    let dirs = AgentDirs {
        work_dir: data_dir.join("agent").join("work"),
        log_dir: data_dir.join("agent").join("logs"),
    };
    let executor = agent::open_executor(
        &node_id,
        &dirs,
        &settings.agent,
        settings.security.authentication,
    )?;
    let (http_address, logs_secret) = runtime.block_on(agent::serve_logs(
        SocketAddr::from(([127, 0, 0, 1], 0)),
        dirs.log_dir.clone(),
    ))?;
    tracing::info!(node = %node_id, %resources, isolation = %executor.isolation(), "local agent starting (--no-local-agent turns it off)");
    let security = Security::from_settings(&settings.security).map_err(anyhow::Error::msg)?;
    let tracker = LocalTracker {
        rm,
        runtime: runtime.handle().clone(),
        caller: security.caller(&crate::security::service_user()),
        heartbeat_interval: Duration::from_millis(settings.nodes.heartbeat_interval_ms),
    };
    let identity = NodeIdentity {
        node_id,
        resources,
        http_address,
        logs_secret,
    };
    agent::spawn_loop(
        identity,
        settings.agent.log_retain,
        tracker,
        executor,
        stop,
        true,
    )
}

/// What a listener on a network, rather than loopback, leaves open.
fn warn_about_exposure(
    address: &SocketAddr,
    authenticator: &Authenticator,
    security: &Security,
    tls: bool,
) {
    let exposed = !address.ip().is_loopback();
    match authenticator.mode() {
        Authentication::Simple if exposed => tracing::warn!(
            %address,
            "simple authentication on a non-loopback address: any client can claim any user with X-Weft-User; set weft.security.authentication=token (docs/security.md)"
        ),
        Authentication::Token if exposed && !tls => tracing::warn!(
            %address,
            "tokens travel in the clear: set weft.http.tls.cert-file and weft.http.tls.key-file (docs/security.md)"
        ),
        _ => {}
    }
    if authenticator.mode() == Authentication::Token && security.everyone_is_admin() {
        tracing::warn!("yarn.admin.acl is *: every caller with a token administers the cluster");
    }
    if let Authenticator::Token(verifier) = authenticator {
        tracing::info!(tokens_file = %verifier.path().display(), "token authentication");
    }
}
pub async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                .expect("installing a SIGTERM handler cannot fail");
        tokio::select! {
            _ = interrupt => {},
            _ = terminate.recv() => {},
        }
    }
    #[cfg(not(unix))]
    let _ = interrupt.await;
}
