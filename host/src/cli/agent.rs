//! `weft agent`: run a node agent that registers with a resource manager
//! (or several, the first that answers) and runs its containers.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context;
use clap::Args;

use super::SettingsArgs;
use crate::agent::{self, AgentDirs, machine, runner::NodeIdentity, tracker::HttpTracker};
use crate::client::ServerArgs;

#[derive(Debug, Args)]
pub(super) struct AgentArgs {
    #[command(flatten)]
    server: ServerArgs,
    #[command(flatten)]
    settings: SettingsArgs,
    /// What this node offers, e.g. 16384mb,8vcores[,2gpus] (default: this
    /// machine, less yarn.nodemanager.resource.system-reserved-memory-mb).
    #[arg(long, value_name = "SPEC")]
    resources: Option<String>,
    /// The node's rack (YARN's network location), e.g. /dc1/rack7
    /// (default: /default-rack).
    #[arg(long, value_name = "PATH")]
    rack: Option<String>,
    /// An attribute of the node (YARN's node attributes), KEY=VALUE, e.g.
    /// gpu-model=a100 (repeatable).
    #[arg(long = "attribute", value_name = "KEY=VALUE")]
    attributes: Vec<String>,
    /// The node's label (YARN's partition, e.g. gpu), one the cluster has
    /// (POST /ws/v1/cluster/add-node-labels, weft label add); an
    /// administrator's replace-labels overrides it (default: none).
    #[arg(long, value_name = "LABEL")]
    labels: Option<String>,
    /// The node's id (default: the host name).
    #[arg(long)]
    node_id: Option<String>,
    /// Where containers run (default: $TMPDIR/weft-agent/work).
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
    /// Where containers' stdout and stderr go (default: $TMPDIR/weft-agent/logs).
    #[arg(long, value_name = "DIR")]
    log_dir: Option<PathBuf>,
    /// Where the agent serves container logs to the resource manager.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    logs_listen: SocketAddr,
    /// How long each wait for orders is held open beside the heartbeats,
    /// so containers placed here launch at once rather than at the next
    /// heartbeat (0: no waits; at most 30000). Each costs one more
    /// connection to the server.
    #[arg(long, value_name = "MS", default_value_t = 10_000,
        value_parser = clap::value_parser!(u64).range(0..=crate::protocol::node::MAX_ORDERS_WAIT_MS))]
    order_wait_ms: u64,
}

pub(super) fn run(args: AgentArgs) -> anyhow::Result<()> {
    super::init_tracing("info");
    let settings = args.settings.load()?;
    let resources = match &args.resources {
        Some(spec) => machine::parse_resources(spec).map_err(anyhow::Error::msg)?,
        None => machine::resources(settings.agent.reserved_memory_mb)?,
    };
    let node_id = args.node_id.clone().unwrap_or_else(machine::host_name);
    crate::limits::name("--node-id", &node_id)?;
    if let Some(rack) = &args.rack {
        crate::limits::rack("--rack", rack)?;
    }
    let mut attributes = std::collections::BTreeMap::new();
    for pair in &args.attributes {
        let (key, value) = super::parse_pair(pair).map_err(anyhow::Error::msg)?;
        attributes.insert(key, value);
    }
    let attributes = crate::limits::node_attributes("--attribute", attributes.iter())?;
    let labels: Vec<String> = args.labels.iter().map(|l| l.trim().to_string()).collect();
    for label in &labels {
        crate::limits::node_label("--labels", label)?;
    }
    let base = std::env::temp_dir().join("weft-agent");
    let dirs = AgentDirs {
        work_dir: args.work_dir.clone().unwrap_or_else(|| base.join("work")),
        log_dir: args.log_dir.clone().unwrap_or_else(|| base.join("logs")),
    };
    let executor = agent::open_executor(
        &node_id,
        &dirs,
        &settings.agent,
        settings.security.authentication,
        agent::AgentKind::Standalone,
        resources.memory_mb,
    )?;
    let health = agent::health::HealthChecker::start(&dirs, &settings.agent.health)?;
    let client = args.server.client()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let (http_address, logs_secret) =
        runtime.block_on(agent::serve_logs(args.logs_listen, dirs.log_dir.clone()))?;
    // Listening before the line below, so a stop right after it is clean.
    let signals = runtime
        .block_on(async { super::serve::ShutdownSignals::listen() })
        .context("cannot listen for SIGINT and SIGTERM")?;
    // stdout gets the one line a user needs; logs go to stderr.
    println!(
        "weft agent {node_id} ({resources}, {}) for {}",
        executor.isolation(),
        args.server.server
    );
    let stop = Arc::new(AtomicBool::new(false));
    // YARN's application masters start their containers here: on the log
    // server's host unless configured.
    let node_manager = Arc::new(agent::node_manager::Shared::default());
    let nm_address = if settings.yarn_rpc.enabled {
        let listen = settings
            .yarn_rpc
            .node_manager_address
            .clone()
            .unwrap_or_else(|| std::net::SocketAddr::new(args.logs_listen.ip(), 0).to_string());
        Some(runtime.block_on(agent::serve_node_manager(
            &listen,
            &machine::host_name(),
            node_manager.clone(),
        ))?)
    } else {
        None
    };
    let identity = NodeIdentity {
        node_id,
        resources,
        http_address,
        logs_secret,
        rack: args.rack.clone(),
        attributes,
        labels,
        nm_address,
    };
    // A clean stop (Ctrl-C, SIGTERM) kills the containers, as YARN's
    // NodeManager does without supervised recovery; a kill -9 leaves them
    // running for the next agent on the same work dir to take back.
    let agent_loop = agent::runner::AgentLoop::new(
        identity,
        settings.agent.log_retain,
        HttpTracker::new(client, std::time::Duration::from_millis(args.order_wait_ms)),
        executor,
    )
    .with_node_manager(node_manager)
    .with_health(health);
    let thread = agent::spawn_loop(agent_loop, stop.clone(), true)?;
    runtime.block_on(signals.received());
    tracing::info!("stopping: killing this node's containers");
    stop.store(true, Ordering::Relaxed);
    thread
        .join()
        .map_err(|_| anyhow::anyhow!("the agent's thread failed"))
        .context("stopping the agent")?;
    Ok(())
}
