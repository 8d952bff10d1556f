//! The `weft` command line: `serve`, `replay`, `simulate`, `policy …`,
//! `reservation …`, `quota …`, `accounting export`, `admin …`, `config`.
//! Every failure ends as one clear sentence on stderr and a non-zero exit
//! (followed, when a policy failed, by the last lines it wrote).

mod agent;
mod app;
mod bench;
mod label;
mod policy;
mod policy_new;
mod queue;
mod quota;
mod replay;
mod reservation;
mod serve;
mod simulate;
mod token;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// The `weft` command line, as parsed from the arguments.
#[derive(Debug, Parser)]
#[command(
    name = "weft",
    version,
    about = "A policy-programmable cluster resource manager; policies are WebAssembly components."
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the resource manager: HTTP API, scheduler, quota (and, without
    /// --sim-nodes, a local agent that runs containers on this machine).
    Serve(serve::ServeArgs),
    /// Run a node agent: register with a resource manager and run its containers.
    Agent(agent::AgentArgs),
    /// Run, list, follow, kill apps and read their logs on a running server.
    #[command(subcommand)]
    App(app::AppCommand),
    /// The nodes of a running server.
    #[command(subcommand)]
    Node(app::NodeCommand),
    /// The queues of a running server.
    #[command(subcommand)]
    Queue(queue::QueueCommand),
    /// The node labels (partitions) of a running server.
    #[command(subcommand)]
    Label(label::LabelCommand),
    /// Projects' credits and budgets on a running server; grants.
    #[command(subcommand)]
    Quota(quota::QuotaCommand),
    /// Ended apps' accounting records on a running server.
    #[command(subcommand)]
    Accounting(quota::AccountingCommand),
    /// Feed a container-event log through the quota service on a virtual clock and print the ledger.
    Replay(replay::ReplayArgs),
    /// Run a scenario (nodes, queues, apps) on the virtual clock and summarize it.
    Simulate(simulate::SimulateArgs),
    /// Inspect, load, roll back, check and benchmark policies.
    #[command(subcommand)]
    Policy(policy::PolicyCommand),
    /// Submit, update, list and delete reservations on a running server.
    #[command(subcommand)]
    Reservation(reservation::ReservationCommand),
    /// Print every setting and its value (after --config and --set).
    Config(SettingsArgs),
    /// Administer a running server.
    #[command(subcommand)]
    Admin(AdminCommand),
    /// Make and revoke bearer tokens (weft.security.authentication=token).
    #[command(subcommand)]
    Token(token::TokenCommand),
    /// Inside a YARN container: localize its resources and run its launch
    /// script (the agent starts this; not for people).
    #[command(hide = true)]
    ContainerLaunch,
}

#[derive(Debug, Subcommand)]
enum AdminCommand {
    /// Reload the queue configuration with no restart (YARN's rmadmin -refreshQueues).
    RefreshQueues {
        #[command(flatten)]
        server: crate::client::ServerArgs,
    },
}

/// The settings flags every command that reads settings takes.
#[derive(Debug, Args, Clone, Default)]
pub struct SettingsArgs {
    /// A TOML config file of YARN-named properties.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Override one property, e.g. --set yarn.resourcemanager.quota.min.runtime=5000.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

impl SettingsArgs {
    /// The settings: defaults, then the `--config` file, then each `--set`;
    /// a bad value is refused naming the property.
    pub fn load(&self) -> anyhow::Result<crate::config::Settings> {
        Ok(crate::config::Settings::load(
            self.config.as_deref(),
            &self.set,
        )?)
    }
}

/// `k=v` as a pair, for --param.
pub fn parse_pair(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .filter(|(k, _)| !k.is_empty())
        .ok_or_else(|| format!("expected KEY=VALUE, got {text:?}"))
}

impl Cli {
    /// Whether the command serves (`serve`, `agent`): a long-running
    /// process, not one whose output a reader may cut short.
    pub fn serves(&self) -> bool {
        matches!(self.command, Command::Serve(_) | Command::Agent(_))
    }
}

/// Runs the command `cli` names to its end.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(args) => serve::run(args),
        Command::Agent(args) => agent::run(args),
        Command::App(command) => app::run(command),
        Command::Node(command) => app::run_node(command),
        Command::Queue(command) => queue::run(command),
        Command::Label(command) => label::run(command),
        Command::Quota(command) => quota::run(command),
        Command::Accounting(command) => quota::run_accounting(command),
        Command::Replay(args) => replay::run(args),
        Command::Simulate(args) => simulate::run_command(args),
        Command::Policy(command) => policy::run(command),
        Command::Reservation(command) => reservation::run(command),
        Command::Admin(AdminCommand::RefreshQueues { server }) => {
            let answer = server.client()?.post("/ws/v1/admin/refresh-queues")?;
            println!("queues refreshed; leaf queues: {}", answer["leaf_queues"]);
            Ok(())
        }
        Command::Token(command) => token::run(command),
        Command::ContainerLaunch => {
            // Only on failure: YARN's diagnostic on stderr, then the exit
            // status of a container that could not be launched.
            eprintln!("{}", crate::agent::yarn_launch::run());
            std::process::exit(1)
        }
        Command::Config(args) => {
            for (key, value) in args.load()?.iter() {
                println!("{key}={value}");
            }
            Ok(())
        }
    }
}

/// A file's bytes, refused if it is larger than `limit` bytes (read no
/// further than one byte past it).
fn read_bounded_bytes(path: &std::path::Path, limit: usize) -> anyhow::Result<Vec<u8>> {
    use anyhow::Context;
    use std::io::Read;
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(limit as u64 + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    if bytes.len() > limit {
        anyhow::bail!("{} is larger than {limit} bytes", path.display());
    }
    Ok(bytes)
}

/// What the offline policy tools (check, test, bench) log: warnings, but
/// not the guest's own lines, which come with a failure's message instead
/// (RUST_LOG=weft::policy::guest=info shows them as they are written).
pub const OFFLINE_TRACING: &str = "warn,weft::policy::guest=off";

/// Logs to stderr, at `default` unless RUST_LOG says otherwise.
pub fn init_tracing(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        // Colours for a person at a terminal, plain text for a log file.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .try_init();
}
