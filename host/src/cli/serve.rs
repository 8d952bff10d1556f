//! `weft serve`: start the resource manager and its HTTP API.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;

use super::SettingsArgs;
use crate::api::{ApiState, router};
use crate::config::Settings;
use crate::policy::{PolicyKind, PolicyRuntime, PolicySource, watch};
use crate::quota::QuotaService;
use crate::rm::{self, Intervals, ResourceManager, sim_nodes};
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
    let security = Arc::new(
        crate::security::Security::from_settings(&settings.security).map_err(anyhow::Error::msg)?,
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

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        let address = listener.local_addr()?;

        let mut manager = ResourceManager::new(
            &settings,
            queues,
            quota,
            reservation_store,
            policies.clone(),
            clock,
        )
        .context("cannot restore the reservations")?;
        if let Some((count, capacity)) = sim_nodes {
            manager.add_simulated_nodes(count, capacity);
            tracing::info!(count, %capacity, "simulated nodes registered");
        }
        let quota_settings = settings.quota;
        let intervals = Intervals {
            scheduling: settings.scheduler.interval,
            quota_compute: std::time::Duration::from_millis(quota_settings.scheduling_period_ms),
            multiplicator: std::time::Duration::from_millis(
                quota_settings.multiplicator_interval_ms,
            ),
        };
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
            let _ = rx.wait_for(|stop| *stop).await;
        };
        let (handle, loop_task) = rm::spawn(manager, intervals, stopped(stop_rx.clone()));

        if let Some(watch_dir) = settings.policies.watch_dir.clone() {
            watch::watch(policies.clone(), watch_dir)
                .context("cannot watch the policy directory")?;
        }

        tokio::spawn(async move {
            shutdown_signal().await;
            tracing::info!("stopping: charging running containers, then exiting");
            let _ = stop_tx.send(true);
        });

        let state = ApiState {
            rm: handle,
            policies,
            security,
            reload_queues,
            heartbeat_interval_ms: settings.nodes.heartbeat_interval_ms,
        };
        // stdout gets the one line a user needs; logs go to stderr.
        println!(
            "weft listening on http://{address}  (try: curl http://{address}/ws/v1/cluster/metrics)"
        );
        tracing::info!(%address, data_dir = %args.data_dir.display(), "weft serving");
        axum::serve(listener, router(state))
            .with_graceful_shutdown(stopped(stop_rx))
            .await
            .context("the HTTP server failed")?;
        loop_task.await.context("the event loop failed")?;
        Ok(())
    })
}

async fn shutdown_signal() {
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
