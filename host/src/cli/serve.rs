//! `weft serve`: start the resource manager and its HTTP API.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;

use super::SettingsArgs;
use crate::api::{ApiState, router};
use crate::clock::{Clock, WallClock};
use crate::config::{
    Authentication, DEFAULT_CLIENT_RPC_PORT, DEFAULT_SCHEDULER_RPC_PORT, Settings,
    YARN_WEBAPP_PORT, YarnRpcSettings,
};
use crate::ha;
use crate::policy::PolicyRuntime;
use crate::quota::EventLog;
use crate::rm::assemble::{Parts, QuotaEventLog, Recover};
use crate::rm::{self, Intervals, policy_load, policy_watch, sim_nodes};
use crate::security::yarn_tokens::TokenKeys;
use crate::security::{Authenticator, Security};
use crate::store::{Fence, Store};
use crate::yarn_rpc::delegation::DelegationTokens;
use crate::yarn_rpc::master_protocol::{AmrmPasswords, MasterProtocol};
use crate::yarn_rpc::{self, client_protocol::ClientProtocol};

#[derive(Debug, Args)]
pub(super) struct ServeArgs {
    #[command(flatten)]
    settings: SettingsArgs,
    /// Where state is kept (weft.db, unless weft.store.url names
    /// PostgreSQL; the tokens file; compiled policies), private to the
    /// server's user (0700).
    #[arg(long, value_name = "DIR", default_value = "weft-data")]
    data_dir: PathBuf,
    /// The local agent's work and log dirs (default: beside the data dir,
    /// its name with -agent, e.g. weft-data-agent): never inside the data
    /// dir, which containers must not reach.
    #[arg(long, value_name = "DIR")]
    agent_dir: Option<PathBuf>,
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
    /// Drop the queue changes made through the API from the store and exit
    /// (YARN's `yarn resourcemanager -format-conf-store`), for changes that
    /// no longer apply to the queue file; run it with the servers stopped.
    #[arg(long)]
    format_conf_store: bool,
}

/// What becoming active needs, kept by the server for each time it does.
struct Activation {
    settings: Settings,
    store: Store,
    policies: Arc<PolicyRuntime>,
    security: Arc<Security>,
    clock: Arc<dyn Clock>,
    reload_queues: crate::api::QueueReload,
    sim_nodes: Option<(u32, crate::resources::Resources)>,
    /// The quota event log opened at start, for the first activation (later
    /// ones open it again).
    event_log: Option<EventLog>,
    /// The key of YARN's tokens: one per process, so the scheduler port
    /// checks what every activation's cluster issues.
    token_keys: Arc<TokenKeys>,
}

impl Activation {
    /// Restores the state the store holds under `fence`, puts the policies
    /// in force and starts the event loop.
    fn activate(&mut self, fence: &Fence) -> anyhow::Result<ha::Active> {
        let settings = &self.settings;
        let store = &self.store;
        policy_load::put_policies_in_force(&self.policies, settings, store)?;
        let queues = (self.reload_queues)()
            .and_then(|properties| {
                crate::queues::QueueTree::from_properties(&properties).map_err(|e| e.to_string())
            })
            .map_err(anyhow::Error::msg)
            .context("the queue configuration is invalid")?;
        let mut manager = rm::assemble::assemble(Parts {
            settings,
            queues,
            store: store.clone(),
            clock: self.clock.clone(),
            policies: self.policies.clone(),
            security: self.security.clone(),
            sim_nodes: self.sim_nodes,
            event_log: QuotaEventLog::FromSettings {
                opened: &mut self.event_log,
            },
            recover: Some(Recover {
                epoch: u64::try_from(fence.epoch).unwrap_or(0),
                scheduling_wait_ms: settings.store.scheduling_wait_ms,
            }),
        })?;
        manager.use_token_keys(self.token_keys.clone());
        let intervals = Intervals {
            scheduling: settings.scheduler.interval,
            quota_compute: Duration::from_millis(settings.quota.scheduling_period_ms),
            multiplicator: Duration::from_millis(settings.quota.multiplicator_interval_ms),
        };
        let (stop, stop_rx) = tokio::sync::watch::channel(false);
        let (handle, thread) = rm::spawn(manager, intervals, stopped(stop_rx))
            .context("cannot start the event loop")?;
        Ok(ha::Active {
            handle,
            stop,
            thread,
        })
    }
}

/// Resolves once `rx` says stop.
async fn stopped(mut rx: tokio::sync::watch::Receiver<bool>) {
    let _ = rx.wait_for(|stop| *stop).await;
}

pub(super) fn run(args: ServeArgs) -> anyhow::Result<()> {
    super::init_tracing("info");
    let mut settings = args.settings.load()?;
    // Compiled policies are kept with the server's state unless told otherwise.
    settings
        .policies
        .compile_cache_dir
        .get_or_insert_with(|| args.data_dir.join("compiled"));
    let sim_nodes = args
        .sim_nodes
        .as_deref()
        .map(sim_nodes::parse)
        .transpose()?;
    // Checked now, so a bad configuration stops the start, not a failover.
    let queues = crate::queues::load(args.queues.as_deref(), &settings.queue_properties)
        .context("the queue configuration is invalid")?;
    let root_administered_by_all = queues
        .queues()
        .first()
        .is_some_and(|root| root.acl_administer_queue.trim() == "*");
    if settings.security.authentication == Authentication::Token && root_administered_by_all {
        tracing::warn!(
            "yarn.scheduler.capacity.root.acl_administer_queue is * (YARN's default): every caller with a token administers every queue, so may kill any app and read any container's logs; close it (docs/security.md)"
        );
    }
    if sim_nodes.is_none() && !args.no_local_agent {
        crate::agent::run_as(
            &settings.agent,
            settings.security.authentication,
            crate::agent::AgentKind::Local,
        )?;
    }
    // The ledger, tokens, log secrets, compiled code: only the server's.
    crate::private_files::dir(&args.data_dir)?;
    let event_log = EventLog::open_configured(&settings.quota_event_log)?;
    let security =
        Arc::new(Security::from_settings(&settings.security).map_err(anyhow::Error::msg)?);
    let authenticator = Arc::new(
        Authenticator::from_settings(&settings.security, &args.data_dir)
            .map_err(anyhow::Error::msg)?,
    );
    // refreshQueues (and each activation) reads the config file, the --set
    // overrides and the --queues file again, as they are now.
    let reload_queues: crate::api::QueueReload = {
        let (settings_args, queues_file) = (args.settings.clone(), args.queues.clone());
        Arc::new(move || {
            let settings = settings_args.load().map_err(|e| format!("{e:#}"))?;
            crate::queues::load_properties(queues_file.as_deref(), &settings.queue_properties)
                .map_err(|e| e.to_string())
        })
    };
    // One clock for the resource manager and the policies' WASI clocks.
    let clock: Arc<dyn Clock> = Arc::new(WallClock);
    let store = crate::store::open(settings.store.url.as_deref(), &args.data_dir)
        .context("cannot open the store")?;
    if args.format_conf_store {
        let version = crate::rm::scheduler_conf::format_stored(&store)
            .context("cannot format the scheduler configuration's changes")?;
        println!(
            "the queue changes made through the API are dropped from {} (version {version})",
            store.target()
        );
        return Ok(());
    }
    let listener = std::net::TcpListener::bind(args.listen)
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let address = listener.local_addr()?;
    let rpc_listener = {
        let rpc = &settings.yarn_rpc;
        let client = bind_rpc(
            rpc,
            rpc.client_address.as_ref(),
            "yarn.resourcemanager.address",
            DEFAULT_CLIENT_RPC_PORT,
            args.listen,
        )?;
        let scheduler = bind_rpc(
            rpc,
            rpc.scheduler_address.as_ref(),
            "yarn.resourcemanager.scheduler.address",
            DEFAULT_SCHEDULER_RPC_PORT,
            args.listen,
        )?;
        client.zip(scheduler)
    };
    warn_about_exposure(
        &address,
        &authenticator,
        &security,
        settings.http.tls.is_some(),
    );
    let scheme = if settings.http.tls.is_some() {
        "https"
    } else {
        "http"
    };
    // Its URL first: a standby's answers name it, and clients go there (a
    // wildcard listen address is no place to go: the host's name is).
    let host = crate::agent::machine::host_name();
    let reachable = if address.ip().is_unspecified() {
        format!("{host}:{}", address.port())
    } else {
        address.to_string()
    };
    let holder = format!("{scheme}://{reachable} pid={}@{host}", std::process::id());
    let sole = settings.store.url.is_none();
    let election = match &settings.store.url {
        Some(url) => ha::Election::Lease(ha::lease::Lease::new(
            Store::postgres(url).context("cannot open the lease's connection")?,
            settings.store.lease_ms,
        )),
        None => ha::Election::Sole(store.clone()),
    };
    // Policies are put in force when the server becomes active.
    let policies = Arc::new(PolicyRuntime::from_settings(&settings, clock.clone())?);
    let handle = rm::RmHandle::standby(None);
    let token_keys = Arc::new(TokenKeys::random()?);
    let mut activation = Activation {
        settings: settings.clone(),
        store: store.clone(),
        policies: policies.clone(),
        security: security.clone(),
        clock: clock.clone(),
        reload_queues: reload_queues.clone(),
        sim_nodes,
        event_log,
        token_keys: token_keys.clone(),
    };
    if !sole {
        // A standby compiles what it would put in force while it waits.
        let (policies, store, configured) =
            (policies.clone(), store.clone(), settings.policies.clone());
        std::thread::Builder::new()
            .name("weft-policy-warm".into())
            .spawn(move || {
                let sources = [
                    configured.scheduling.as_str(),
                    configured.pricing.as_str(),
                    configured.sharing.as_str(),
                ];
                policies.warm(&store, &sources);
            })?;
    }
    let controller = ha::Controller {
        election,
        holder,
        store,
        handle: handle.clone(),
        activate: Box::new(move |fence| activation.activate(fence)),
    };
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stop_tx = Arc::new(stop_tx);
    let shutdown = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let controller_thread = {
        let (shutdown, stop_tx) = (shutdown.clone(), stop_tx.clone());
        std::thread::Builder::new()
            .name("weft-ha".into())
            .spawn(move || {
                let result = controller.run(shutdown);
                if let Err(error) = &result {
                    tracing::error!(error = format!("{error:#}"), "the resource manager stopped");
                }
                // Whatever ended the controller ends the server.
                let _ = stop_tx.send(true);
                result
            })?
    };

    // The store's only writer is active before it says it listens: its
    // first answers are the resource manager's, not a standby's.
    while sole && !handle.is_active() && !controller_thread.is_finished() {
        std::thread::sleep(Duration::from_millis(5));
    }
    if controller_thread.is_finished() {
        return controller_thread
            .join()
            .map_err(|_| anyhow::anyhow!("the resource manager's thread failed"))?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let local_agent = sim_nodes.is_none() && !args.no_local_agent;
    let agent_dir = match &args.agent_dir {
        Some(dir) => dir.clone(),
        None => beside(&args.data_dir, "-agent")?,
    };
    let agent_stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let agent_thread = if local_agent {
        Some(start_local_agent(
            &runtime,
            &settings,
            &args.data_dir,
            &agent_dir,
            handle.clone(),
            agent_stop.clone(),
        )?)
    } else {
        None
    };
    let served = runtime.block_on(async move {
        if let Some(watch_dir) = settings.policies.watch_dir.clone() {
            policy_watch::watch(policies.clone(), watch_dir)
                .context("cannot watch the policy directory")?;
        }
        let signals = ShutdownSignals::listen().context("cannot listen for SIGINT and SIGTERM")?;
        let signalled = stop_tx.clone();
        tokio::spawn(async move {
            signals.received().await;
            tracing::info!("stopping: charging running containers, then exiting");
            let _ = signalled.send(true);
        });
        // Token mode's RM delegation tokens: issued, renewed and cancelled
        // over REST, taken on the client port.
        let delegation_tokens = authenticator.token_verifier().map(|bearer_tokens| {
            Arc::new(DelegationTokens::new(
                token_keys.clone(),
                bearer_tokens,
                clock.clone(),
            ))
        });
        let state = ApiState {
            rm: handle,
            policies,
            authenticator,
            delegation_tokens: delegation_tokens.clone(),
            security,
            reload_queues,
            heartbeat_interval_ms: settings.nodes.heartbeat_interval_ms,
            policy_loads: Default::default(),
            live: Arc::new(crate::api::Live::new(
                settings.http.event_stream_lifetime,
            )),
            stopping: stop_rx.clone(),
            longest_wait: settings.http.idle_timeout * 3 / 4,
            // At most 1,000,000 (properties.rs), far below MAX_PERMITS.
            waiting_places: Arc::new(tokio::sync::Semaphore::new(
                settings.http.max_waiting_requests,
            )),
        };
        let rpc = match rpc_listener {
            Some((client, scheduler)) => {
                let client = tokio::net::TcpListener::from_std(client)?;
                let client_address = client.local_addr()?;
                tokio::spawn(yarn_rpc::server::serve(
                    yarn_rpc::server::Listener {
                        socket: client,
                        protocols: Arc::new(ClientProtocol::new(
                            state.rm.clone(),
                            state.security.clone(),
                        )),
                        authenticator: state.authenticator.clone(),
                        // Token mode takes no one's word: a YARN client
                        // proves its user with an RM delegation token.
                        sasl: match delegation_tokens {
                            None => yarn_rpc::sasl::Methods::SimpleOnly,
                            Some(tokens) => yarn_rpc::sasl::Methods::Tokens {
                                passwords: tokens,
                                simple_too: false,
                            },
                        },
                        limits: yarn_rpc::server::Limits::default(),
                    },
                    stopped(stop_rx.clone()),
                ));
                let scheduler = tokio::net::TcpListener::from_std(scheduler)?;
                let scheduler_address = scheduler.local_addr()?;
                tokio::spawn(yarn_rpc::server::serve(
                    yarn_rpc::server::Listener {
                        socket: scheduler,
                        protocols: Arc::new(MasterProtocol::new(state.rm.clone())),
                        authenticator: state.authenticator.clone(),
                        // A master without its token is refused by the
                        // protocol, naming why.
                        sasl: yarn_rpc::sasl::Methods::Tokens {
                            passwords: Arc::new(AmrmPasswords::new(token_keys)),
                            simple_too: true,
                        },
                        limits: yarn_rpc::server::Limits::default(),
                    },
                    stopped(stop_rx.clone()),
                ));
                format!(" and YARN RPC {client_address} (application masters {scheduler_address})")
            }
            None => String::new(),
        };
        // stdout gets the one line a user needs; logs go to stderr.
        println!(
            "weft listening on {scheme}://{address}{rpc}  (try: curl {scheme}://{address}/ws/v1/cluster/metrics)"
        );
        tracing::info!(%address, data_dir = %args.data_dir.display(), "weft serving");
        crate::api::server::serve(router(state), listener, &settings.http, stopped(stop_rx))
            .await
    });
    // The local agent stops first, killing its containers; then the
    // resource manager (also when the HTTP server failed), charging running
    // containers up to the stop and giving its lease up.
    agent_stop.store(true, std::sync::atomic::Ordering::Relaxed);
    if let Some(thread) = agent_thread {
        let _ = thread.join();
    }
    shutdown.store(true, std::sync::atomic::Ordering::SeqCst);
    let controlled = controller_thread
        .join()
        .map_err(|_| anyhow::anyhow!("the resource manager's thread failed"))?;
    served?;
    controlled
}

/// `dir`'s sibling named as it is with `suffix` (weft-data → weft-data-agent).
fn beside(dir: &std::path::Path, suffix: &str) -> anyhow::Result<PathBuf> {
    let absolute =
        std::path::absolute(dir).with_context(|| format!("cannot resolve {}", dir.display()))?;
    let name = absolute
        .file_name()
        .map_or_else(|| "weft".into(), |name| name.to_owned());
    let mut sibling = name;
    sibling.push(suffix);
    Ok(absolute.with_file_name(sibling))
}

/// Starts the in-process agent (as `nomad agent -dev` does): this machine
/// less its reserve, containers under `agent_dir` (outside the data dir),
/// logs served on a loopback port, talking to the event loop as the user
/// running the server.
fn start_local_agent(
    runtime: &tokio::runtime::Runtime,
    settings: &Settings,
    data_dir: &std::path::Path,
    agent_dir: &std::path::Path,
    rm: rm::RmHandle,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> anyhow::Result<std::thread::JoinHandle<()>> {
    use crate::agent::{self, AgentDirs, machine, runner::NodeIdentity};
    use crate::rm::local_tracker::LocalTracker;
    let node_id = format!("{}:local", machine::host_name());
    let resources = machine::resources(settings.agent.reserved_memory_mb)?;
    let dirs = AgentDirs {
        work_dir: agent_dir.join("work"),
        log_dir: agent_dir.join("logs"),
    };
    let data_dir = std::path::absolute(data_dir)?;
    for dir in [&dirs.work_dir, &dirs.log_dir] {
        if std::path::absolute(dir)?.starts_with(&data_dir) {
            anyhow::bail!(
                "--agent-dir {} is inside the data dir {}: containers must not reach the server's state",
                agent_dir.display(),
                data_dir.display()
            );
        }
    }
    let executor = agent::open_executor(
        &node_id,
        &dirs,
        &settings.agent,
        settings.security.authentication,
        agent::AgentKind::Local,
        resources.memory_mb,
    )?;
    let health = agent::health::HealthChecker::start(&dirs, &settings.agent.health)?;
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
        placed: Default::default(),
    };
    // YARN's application masters start their containers here; on
    // loopback unless configured (masters run on this machine).
    let node_manager = Arc::new(agent::node_manager::Shared::default());
    let nm_address = match &settings.yarn_rpc {
        rpc if rpc.enabled => {
            let listen = rpc
                .node_manager_address
                .clone()
                .unwrap_or_else(|| "127.0.0.1:0".into());
            Some(runtime.block_on(agent::serve_node_manager(
                &listen,
                &machine::host_name(),
                node_manager.clone(),
            ))?)
        }
        _ => None,
    };
    let identity = NodeIdentity {
        node_id,
        resources,
        http_address,
        logs_secret,
        rack: None,
        attributes: Default::default(),
        labels: Vec::new(),
        nm_address,
    };
    let agent_loop =
        agent::runner::AgentLoop::new(identity, settings.agent.log_retain, tracker, executor)
            .with_node_manager(node_manager)
            .with_health(health);
    agent::spawn_loop(agent_loop, stop, true)
}

/// A listener for one of YARN's RPC ports, unless Hadoop RPC is off: where
/// configured (`property`), else the HTTP API's address with YARN's port
/// (`yarn_port`: 8032 for clients, 8030 for application masters) when the
/// API is on YARN's port 8088 (the pair a YARN client expects), or any free
/// port when it is elsewhere (tests and scripts that run several servers on
/// one machine; the first line says which).
fn bind_rpc(
    settings: &YarnRpcSettings,
    configured: Option<&String>,
    property: &str,
    yarn_port: u16,
    http: SocketAddr,
) -> anyhow::Result<Option<std::net::TcpListener>> {
    let Some(address) = rpc_address(settings, configured, yarn_port, http) else {
        return Ok(None);
    };
    let socket = std::net::TcpListener::bind(address.as_str()).with_context(|| {
        format!("cannot listen for YARN RPC on {address} ({property}; weft.yarn-rpc.enabled=false turns Hadoop RPC off)")
    })?;
    socket.set_nonblocking(true)?;
    Ok(Some(socket))
}

/// Where one of YARN's RPC ports is served, from the settings and the HTTP
/// API's `--listen` address (see [`bind_rpc`]); None when RPC is off.
fn rpc_address(
    settings: &YarnRpcSettings,
    configured: Option<&String>,
    yarn_port: u16,
    http: SocketAddr,
) -> Option<String> {
    if !settings.enabled {
        return None;
    }
    Some(match configured {
        Some(configured) => configured.clone(),
        None if http.port() == YARN_WEBAPP_PORT => {
            SocketAddr::new(http.ip(), yarn_port).to_string()
        }
        None => SocketAddr::new(http.ip(), 0).to_string(),
    })
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
/// SIGINT and SIGTERM, listened for from the moment this is made, so a
/// signal that arrives before anything awaits [`received`](Self::received)
/// (say, right after `serve` printed where it listens) is a clean stop, not
/// the default action that kills the process.
pub(super) struct ShutdownSignals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl ShutdownSignals {
    /// Starts listening; call it inside a tokio runtime.
    pub(super) fn listen() -> std::io::Result<ShutdownSignals> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(ShutdownSignals {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    /// Waits for either.
    pub(super) async fn received(mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {},
            _ = self.terminate.recv() => {},
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(enabled: bool) -> YarnRpcSettings {
        YarnRpcSettings {
            enabled,
            client_address: None,
            scheduler_address: None,
            node_manager_address: None,
        }
    }

    #[test]
    fn yarn_clients_are_served_on_yarns_pair_of_ports_or_where_configured() {
        let http = |text: &str| text.parse::<SocketAddr>().unwrap();
        let on = settings(true);
        assert_eq!(
            rpc_address(&on, None, 8032, http("127.0.0.1:8088")).as_deref(),
            Some("127.0.0.1:8032")
        );
        assert_eq!(
            rpc_address(&on, None, 8030, http("127.0.0.1:8088")).as_deref(),
            Some("127.0.0.1:8030")
        );
        assert_eq!(
            rpc_address(&on, None, 8032, http("0.0.0.0:9000")).as_deref(),
            Some("0.0.0.0:0"),
            "elsewhere, any free port (several servers on one machine)"
        );
        let configured = "10.0.0.1:18032".to_string();
        assert_eq!(
            rpc_address(&on, Some(&configured), 8032, http("127.0.0.1:8088")).as_deref(),
            Some("10.0.0.1:18032")
        );
        assert_eq!(
            rpc_address(&settings(false), None, 8032, http("127.0.0.1:8088")),
            None
        );
    }
}
