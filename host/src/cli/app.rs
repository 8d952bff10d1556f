//! `weft app …` and `weft node list`: run a command as an app and follow it,
//! list apps, show one, kill one, read its containers' logs, list nodes —
//! all through a running server's API.

use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::client::{Client, ServerArgs, encode};

#[derive(Debug, Subcommand)]
pub(super) enum AppCommand {
    /// Submit COMMAND as an app of N containers (and with --wait follow it
    /// to its end, exiting with its status).
    Run(Box<RunArgs>),
    /// The apps, as a table (or --json).
    List {
        #[command(flatten)]
        server: ServerArgs,
        #[arg(long)]
        queue: Option<String>,
        /// A YARN state: ACCEPTED, RUNNING, FINISHED, FAILED, KILLED.
        #[arg(long)]
        state: Option<String>,
        #[arg(long = "for-user", value_name = "USER")]
        for_user: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// One app: its state, containers and diagnostics.
    Status {
        #[command(flatten)]
        server: ServerArgs,
        id: String,
    },
    /// Kill an app: its containers are killed, charged to their end.
    Kill {
        #[command(flatten)]
        server: ServerArgs,
        id: String,
    },
    /// Set an app's lifetime to end SECONDS from now (as `yarn application
    /// -updateLifetime`), cut to its queue's maximum-application-lifetime
    /// counted from its submission. Past it the app is killed.
    Lifetime {
        #[command(flatten)]
        server: ServerArgs,
        id: String,
        /// Seconds from now, at least 1.
        #[arg(value_parser = clap::value_parser!(u64).range(1..=crate::limits::MAX_APP_LIFETIME_S))]
        seconds: u64,
    },
    /// Move an app to another leaf queue (as `yarn application -movetoqueue
    /// ID -queue QUEUE`): its user or an administrator who may submit to
    /// QUEUE; what it runs counts there from now on.
    Move {
        #[command(flatten)]
        server: ServerArgs,
        id: String,
        /// The leaf queue, by name or path (e.g. root.batch).
        queue: String,
    },
    /// The stdout (or --stderr) of an app's containers.
    Logs {
        #[command(flatten)]
        server: ServerArgs,
        id: String,
        /// Only this container.
        #[arg(long)]
        container: Option<String>,
        /// Only stderr (by default stdout, then stderr when it is not empty).
        #[arg(long, conflicts_with = "stdout")]
        stderr: bool,
        /// Only stdout.
        #[arg(long)]
        stdout: bool,
        /// Keep printing what the container writes (stdout, or stderr with
        /// --stderr) until it and its app end.
        #[arg(long)]
        follow: bool,
    },
}

#[derive(Debug, Subcommand)]
pub(super) enum NodeCommand {
    /// The nodes: registered ones (RUNNING) and those lost lately (LOST),
    /// used and free, isolation.
    List {
        #[command(flatten)]
        server: ServerArgs,
        #[arg(long)]
        json: bool,
    },
    /// Frees a node id for whoever registers it next (administrators): a
    /// node id is its first registrant's, also while it is lost. A
    /// registered node is lost now, its containers asked for again.
    Release {
        /// The node id.
        id: String,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Decommissions a node (administrators; YARN's graceful
    /// decommission): it takes no new containers, what it runs goes on
    /// until the timeout and is then killed and asked for again.
    Decommission {
        /// The node id.
        id: String,
        /// Seconds its containers may still run (0: kill them now); the
        /// server's yarn.resourcemanager.nodemanager-graceful-decommission-timeout-secs
        /// (3600) when left out.
        #[arg(long)]
        timeout: Option<u64>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Ends a node's decommission (administrators): it takes containers
    /// again.
    Recommission {
        /// The node id.
        id: String,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Reads the server's exclude file (yarn.resourcemanager.nodes.exclude-path)
    /// again, as `yarn rmadmin -refreshNodes` (administrators): the nodes
    /// it lists are decommissioned, those it no longer lists that a refresh
    /// decommissioned take containers again.
    Refresh {
        /// Decommission gracefully: what runs goes on until the timeout
        /// (YARN's -g). Without it, at once.
        #[arg(short = 'g', long)]
        graceful: bool,
        /// With --graceful, seconds its containers may still run; the
        /// server's yarn.resourcemanager.nodemanager-graceful-decommission-timeout-secs
        /// (3600) when left out.
        #[arg(long, requires = "graceful")]
        timeout: Option<u64>,
        #[command(flatten)]
        server: ServerArgs,
    },
}

#[derive(Debug, Args)]
pub(super) struct RunArgs {
    #[command(flatten)]
    server: ServerArgs,
    #[arg(long, default_value = "default")]
    queue: String,
    /// The project charged (default: "default").
    #[arg(long, default_value = "default")]
    project: String,
    #[arg(long, default_value = "app")]
    name: String,
    /// How many containers run the command.
    #[arg(short = 'n', long = "containers", default_value_t = 1)]
    count: u32,
    /// Memory per container, e.g. 512mb or 2gb.
    #[arg(long, default_value = "512mb")]
    memory: String,
    #[arg(long, default_value_t = 1)]
    vcores: u32,
    #[arg(long, default_value_t = 0)]
    gpus: u32,
    /// A variable for each container's environment, KEY=VALUE (repeatable).
    #[arg(long = "env", value_name = "KEY=VALUE")]
    env: Vec<String>,
    /// Runs per container before a failure fails the app.
    #[arg(long, default_value_t = 1)]
    max_attempts: u32,
    /// COMMAND is one line for /bin/sh -c, not an argv.
    #[arg(long)]
    shell: bool,
    /// Follow the app to its end and exit with its status.
    #[arg(long)]
    wait: bool,
    /// How long the app may live, in seconds from its submission (YARN's
    /// LIFETIME), cut to its queue's maximum-application-lifetime; past it
    /// the app is killed. Default: the queue's default-application-lifetime.
    #[arg(long, value_name = "SECONDS",
        value_parser = clap::value_parser!(u64).range(1..=crate::limits::MAX_APP_LIFETIME_S))]
    lifetime: Option<u64>,
    /// All or nothing: at least MIN of the containers start together, or
    /// none does (a gang).
    #[arg(long, value_name = "MIN")]
    gang: Option<u32>,
    /// How long after submission the gang may wait to start whole (default:
    /// as long as it takes).
    #[arg(long, value_name = "MS", requires = "gang")]
    gang_timeout_ms: Option<u64>,
    /// What happens to a gang not started whole in time: fail (the app
    /// fails) or place (its containers start as they can).
    #[arg(long, value_name = "fail|place", requires = "gang_timeout_ms",
        value_parser = ["fail", "place"])]
    gang_on_timeout: Option<String>,
    /// The node label (partition) its containers run in, e.g. gpu (YARN's
    /// node label expression; default: its queue's
    /// default-node-label-expression).
    #[arg(long, value_name = "LABEL")]
    label: Option<String>,
    /// An allocation tag its containers carry, for placement constraints
    /// (repeatable), e.g. zk.
    #[arg(long = "tag", value_name = "TAG")]
    tags: Vec<String>,
    /// Where its containers may go, in YARN's placement-constraint form:
    /// NOTIN,NODE,zk (one per node with --tag zk), IN,RACK,db,
    /// CARDINALITY,NODE,web,0,2; all/TAG counts every app's containers.
    #[arg(long, value_name = "CONSTRAINT")]
    constraint: Option<String>,
    /// A node it would rather run on (repeatable; YARN's resourceName):
    /// after node-locality-delay missed scheduling opportunities, its rack;
    /// then anywhere.
    #[arg(long = "prefer-node", value_name = "NODE")]
    prefer_nodes: Vec<String>,
    /// A rack it would rather run on (repeatable).
    #[arg(long = "prefer-rack", value_name = "RACK")]
    prefer_racks: Vec<String>,
    /// Never run elsewhere than the preferred nodes and racks (YARN's
    /// relaxLocality=false).
    #[arg(long)]
    strict_locality: bool,
    /// Opportunistic containers: besides free room, they may wait in a
    /// busy agent's queue and start there the moment room frees
    /// (yarn.nodemanager.opportunistic-containers-max-queue-length).
    #[arg(long)]
    opportunistic: bool,
    /// Say what the app would cost at today's prices, its containers each
    /// running SECONDS (default: an hour), and submit nothing.
    #[arg(long, value_name = "SECONDS", num_args = 0..=1, default_missing_value = "3600",
        value_parser = clap::value_parser!(u64).range(1..=crate::limits::MAX_APP_LIFETIME_S))]
    quote: Option<u64>,
    /// The command and its arguments (after --).
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

pub(super) fn run(command: AppCommand) -> anyhow::Result<()> {
    match command {
        AppCommand::Run(args) => run_app(*args),
        AppCommand::List {
            server,
            queue,
            state,
            for_user,
            json,
        } => {
            let mut query = vec!["limit=1000".to_string()];
            for (key, value) in [("queue", queue), ("states", state), ("user", for_user)] {
                if let Some(value) = value {
                    query.push(format!("{key}={}", encode(&value)));
                }
            }
            let answer = server
                .client()?
                .get(&format!("/ws/v1/cluster/apps?{}", query.join("&")))?;
            let apps = answer["apps"]["app"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if json {
                println!("{}", serde_json::to_string_pretty(&apps)?);
            } else {
                print_apps(&apps);
            }
            Ok(())
        }
        AppCommand::Status { server, id } => {
            let client = server.client()?;
            let app = client.get(&format!("/ws/v1/cluster/apps/{}", encode(&id)))?["app"].clone();
            print_status(&app);
            if let Ok(answer) =
                client.get(&format!("/ws/v1/cluster/apps/{}/containers", encode(&id)))
            {
                print_containers(answer["containers"].as_array().map_or(&[][..], |c| c));
            }
            Ok(())
        }
        AppCommand::Kill { server, id } => {
            let answer = server.client()?.put_json(
                &format!("/ws/v1/cluster/apps/{}/state", encode(&id)),
                &json!({"state": "KILLED"}),
            )?;
            println!("{id}: {}", answer["state"].as_str().unwrap_or("?"));
            Ok(())
        }
        AppCommand::Lifetime {
            server,
            id,
            seconds,
        } => update_lifetime(&server, &id, seconds),
        AppCommand::Move { server, id, queue } => {
            let answer = server.client()?.put_json(
                &format!("/ws/v1/cluster/apps/{}/queue", encode(&id)),
                &json!({ "queue": queue }),
            )?;
            println!("{id}: in queue {}", answer["queue"].as_str().unwrap_or("?"));
            Ok(())
        }
        AppCommand::Logs {
            server,
            id,
            container,
            stderr,
            stdout,
            follow,
        } => {
            let client = server.client()?;
            if stderr || stdout || follow {
                return logs(&client, &id, container.as_deref(), stderr, follow);
            }
            both_logs(&client, &id, container.as_deref())
        }
    }
}

pub(super) fn run_node(command: NodeCommand) -> anyhow::Result<()> {
    let (server, json) = match command {
        NodeCommand::List { server, json } => (server, json),
        NodeCommand::Release { id, server } => {
            let path = format!("/ws/v1/cluster/nodes/{}/release", encode(&id));
            let answer = server.client()?.post(&path)?;
            let owner = answer["owner"].as_str().unwrap_or("nobody");
            eprintln!(
                "node id {id} released (it was {owner}'s); {} container(s) lost and asked for again",
                answer["lost_containers"]
            );
            return Ok(());
        }
        NodeCommand::Decommission {
            id,
            timeout,
            server,
        } => {
            let mut path = format!("/ws/v1/cluster/nodes/{}/decommission", encode(&id));
            if let Some(seconds) = timeout {
                path.push_str(&format!("?timeout={seconds}"));
            }
            let answer = server.client()?.post(&path)?;
            let running = answer["running_containers"].as_u64().unwrap_or(0);
            let deadline = answer["deadline_ms"]
                .as_u64()
                .map_or("?".into(), crate::clock::iso8601);
            if running == 0 {
                eprintln!(
                    "node {id} {}: it takes no new containers",
                    text(&answer["state"])
                );
            } else {
                eprintln!(
                    "node {id} {}: it takes no new containers; {running} still running, killed at {deadline} if not ended by then",
                    text(&answer["state"])
                );
            }
            return Ok(());
        }
        NodeCommand::Refresh {
            graceful,
            timeout,
            server,
        } => {
            let mut path = format!("/ws/v1/admin/refresh-nodes?graceful={graceful}");
            if let Some(seconds) = timeout {
                path.push_str(&format!("&timeout={seconds}"));
            }
            let answer = server.client()?.post(&path)?;
            let list = |key: &str| {
                answer[key]
                    .as_array()
                    .map(|ids| {
                        ids.iter()
                            .filter_map(|id| id.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .filter(|ids| !ids.is_empty())
                    .unwrap_or_else(|| "none".into())
            };
            println!("decommissioned: {}", list("decommissioned"));
            println!("recommissioned: {}", list("recommissioned"));
            if answer["unmatchedCount"].as_u64().unwrap_or(0) > 0 {
                eprintln!(
                    "{} name(s) of the file match no node: {}",
                    text(&answer["unmatchedCount"]),
                    list("unmatched")
                );
            }
            return Ok(());
        }
        NodeCommand::Recommission { id, server } => {
            let path = format!("/ws/v1/cluster/nodes/{}/recommission", encode(&id));
            let answer = server.client()?.post(&path)?;
            eprintln!(
                "node {id} {}: it takes containers again",
                text(&answer["state"])
            );
            return Ok(());
        }
    };
    let answer = server.client()?.get("/ws/v1/cluster/nodes")?;
    let nodes = answer["nodes"]["node"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if json {
        println!("{}", serde_json::to_string_pretty(&nodes)?);
        return Ok(());
    }
    println!(
        "{:<28} {:<15} {:<9} {:<16} {:<12} {:>10} {:>10} {:>7} {:>7} {:>5}  ISOLATION",
        "NODE",
        "STATE",
        "KIND",
        "RACK",
        "LABEL",
        "USED MB",
        "FREE MB",
        "USED VC",
        "FREE VC",
        "CONT."
    );
    for n in &nodes {
        let label = n["nodeLabels"][0].as_str().unwrap_or("-");
        println!(
            "{:<28} {:<15} {:<9} {:<16} {:<12} {:>10} {:>10} {:>7} {:>7} {:>5}  {}",
            text(&n["id"]),
            text(&n["state"]),
            text(&n["kind"]),
            text(&n["rack"]),
            label,
            text(&n["usedMemoryMB"]),
            text(&n["availMemoryMB"]),
            text(&n["usedVirtualCores"]),
            text(&n["availableVirtualCores"]),
            text(&n["numContainers"]),
            n["isolation"].as_str().unwrap_or("-"),
        );
    }
    // Why an unhealthy node gets no new containers, and until when a
    // decommissioning one runs what it has, under the table.
    for n in &nodes {
        if let Some(report) = n["healthReport"].as_str().filter(|r| !r.is_empty()) {
            println!("{}: {report}", text(&n["id"]));
        }
        if let Some(deadline) = n["decommissionDeadlineMs"].as_u64()
            && n["state"] == "DECOMMISSIONING"
        {
            println!(
                "{}: decommissioning; what still runs is killed at {}",
                text(&n["id"]),
                crate::clock::iso8601(deadline)
            );
        }
    }
    Ok(())
}

fn run_app(args: RunArgs) -> anyhow::Result<()> {
    let memory_mb = parse_memory(&args.memory)?;
    let mut env = serde_json::Map::new();
    for pair in &args.env {
        let (key, value) = super::parse_pair(pair).map_err(anyhow::Error::msg)?;
        env.insert(key, Value::String(value));
    }
    let command = if args.shell {
        json!({"shell": args.command.join(" ")})
    } else {
        json!({"argv": args.command})
    };
    let gang = args.gang.map(|minimum| {
        json!({
            "minimum": minimum,
            "timeout_ms": args.gang_timeout_ms,
            "on_timeout": args.gang_on_timeout.as_deref().unwrap_or("fail"),
        })
    });
    if args.strict_locality && args.prefer_nodes.is_empty() && args.prefer_racks.is_empty() {
        anyhow::bail!(
            "--strict-locality keeps an app to its --prefer-node and --prefer-rack places: name one"
        );
    }
    let locality = (!args.prefer_nodes.is_empty() || !args.prefer_racks.is_empty()).then(|| {
        json!({
            "nodes": args.prefer_nodes,
            "racks": args.prefer_racks,
            "relax_locality": !args.strict_locality,
        })
    });
    let body = json!({
        "name": args.name,
        "queue": args.queue,
        "project": args.project,
        "asks": [{
            "count": args.count,
            "memory_mb": memory_mb,
            "vcores": args.vcores,
            "gpus": args.gpus,
            "command": command,
            "env": env,
            "max_attempts": args.max_attempts,
            "gang": gang,
            "allocation_tags": args.tags,
            "placement_constraint": args.constraint,
            "locality": locality,
            "execution_type": if args.opportunistic { "opportunistic" } else { "guaranteed" },
        }],
        "lifetime_s": args.lifetime,
        "node_label_expression": args.label,
    });
    let client = args.server.client()?;
    if let Some(seconds) = args.quote {
        let request = json!({"app": body, "duration_ms": seconds * 1000});
        let quote = client.post_json("/ws/v1/quota/quote", &request)?;
        print_quote(&quote);
        return Ok(());
    }
    let answer = client.post_json("/ws/v1/cluster/apps", &body)?;
    let id = answer["app"]["id"]
        .as_str()
        .context("the server answered no app id")?
        .to_string();
    println!("{id}");
    if !args.wait {
        return Ok(());
    }
    let app = wait_for_end(&client, &id)?;
    let state = text(&app["state"]);
    eprintln!("{id} {state} ({})", text(&app["finalStatus"]));
    match state.as_str() {
        "FINISHED" => Ok(()),
        _ => {
            if let Some(diagnostics) = app["diagnostics"].as_str() {
                eprintln!("{diagnostics}");
            }
            // The exit status of the container that failed it, when it is
            // a process's own; else 1.
            let code = app["exitStatus"]
                .as_i64()
                .filter(|c| (1..=255).contains(c))
                .unwrap_or(1);
            std::process::exit(code as i32);
        }
    }
}

/// `weft app run --quote`'s answer: the total, each ask, and what the
/// project has left.
fn print_quote(quote: &Value) {
    let credits = quote["credits"].as_f64().unwrap_or(f64::NAN);
    let left = quote["credits_left"].as_f64().unwrap_or(f64::NAN);
    println!(
        "{credits:.2} credits (project {}, {left:.2} left; priced by {})",
        text(&quote["project"]),
        quote["pricing_policy"]
            .as_str()
            .unwrap_or("no pricing policy"),
    );
    for ask in quote["asks"].as_array().into_iter().flatten() {
        println!(
            "  {} containers × {} s: {:.2} credits",
            ask["containers"],
            ask["duration_ms"].as_u64().unwrap_or(0) / 1000,
            ask["credits"].as_f64().unwrap_or(f64::NAN)
        );
    }
}

/// How long an app may wait for its containers before `--wait` says why.
const SAY_WHY_AFTER: Duration = Duration::from_secs(3);

/// How long one wait for the app's end is held open by the server
/// (`GET …/state?wait_ms=`): it answers the moment the app ends, so
/// `--wait` returns then; between waits the app's report is read again,
/// to say why it waits.
const END_WAIT: Duration = Duration::from_secs(2);

/// The shortest time between two reads of the app's report: a server that
/// answers a wait at once (one that waits on many apps) is not asked again
/// in a busy loop.
const LOOK_GAP: Duration = Duration::from_millis(200);

/// Follows the app until it has ended; returns its report. While containers
/// of it have waited a few seconds, says why on stderr (and again when the
/// reason changes), so a wait is never silent.
fn wait_for_end(client: &Client, id: &str) -> anyhow::Result<Value> {
    let begun = std::time::Instant::now();
    let mut said: Option<String> = None;
    let ended = |state: Option<&str>| matches!(state, Some("FINISHED" | "FAILED" | "KILLED"));
    loop {
        let looked = std::time::Instant::now();
        let app = client.get(&format!("/ws/v1/cluster/apps/{}", encode(id)))?["app"].clone();
        if ended(app["state"].as_str()) {
            return Ok(app);
        }
        let waiting = app["pendingContainers"].as_u64().unwrap_or(0) > 0;
        if waiting
            && begun.elapsed() >= SAY_WHY_AFTER
            && let Some(reason) = app["diagnostics"].as_str()
            && said.as_deref() != Some(reason)
        {
            let position = app["positionInQueue"]
                .as_u64()
                .map_or(String::new(), |p| format!(" (position {p} in its queue)"));
            eprintln!("{id} waits{position}: {reason}");
            said = Some(reason.to_string());
        }
        // A wait cut short (a proxy, a server's short idle timeout) is
        // only a look to take again: the report above says what failed.
        let state = client
            .get(&format!(
                "/ws/v1/cluster/apps/{}/state?wait_ms={}",
                encode(id),
                END_WAIT.as_millis()
            ))
            .unwrap_or_default();
        if !ended(state["state"].as_str()) {
            std::thread::sleep(LOOK_GAP.saturating_sub(looked.elapsed()));
        }
    }
}

/// The app's containers (only `only`, when given: an error if it has no
/// such container).
fn containers_of(client: &Client, id: &str, only: Option<&str>) -> anyhow::Result<Vec<Value>> {
    let listed = client.get(&format!("/ws/v1/cluster/apps/{}/containers", encode(id)))?;
    let containers: Vec<Value> = listed["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|c| only.is_none_or(|o| c["id"] == o))
        .collect();
    if let Some(container) = only
        && containers.is_empty()
    {
        bail!("application {id} has no container {container}");
    }
    Ok(containers)
}

/// Each container's stdout, then its stderr when it wrote any (a failed
/// command's say is often all there): what a user wants to see of an app.
fn both_logs(client: &Client, id: &str, only: Option<&str>) -> anyhow::Result<()> {
    use std::io::Write;
    let containers = containers_of(client, id, only)?;
    let mut out = std::io::stdout().lock();
    for c in &containers {
        let cid = text(&c["id"]);
        let read = |stream: &str| {
            client.get_bytes(&format!(
                "/ws/v1/cluster/apps/{}/containers/{}/logs/{stream}",
                encode(id),
                encode(&cid)
            ))
        };
        writeln!(out, "== {cid} on {} ==", text(&c["node"]))?;
        match read("stdout") {
            Ok(bytes) => out.write_all(&bytes)?,
            Err(error) => writeln!(out, "(stdout: {error:#})")?,
        }
        match read("stderr") {
            Ok(bytes) if bytes.is_empty() => {}
            Ok(bytes) => {
                writeln!(out, "== {cid} on {}: stderr ==", text(&c["node"]))?;
                out.write_all(&bytes)?;
            }
            Err(error) => writeln!(out, "(stderr: {error:#})")?,
        }
    }
    Ok(())
}

fn logs(
    client: &Client,
    id: &str,
    only: Option<&str>,
    stderr: bool,
    follow: bool,
) -> anyhow::Result<()> {
    let stream = if stderr { "stderr" } else { "stdout" };
    let mut offsets: std::collections::BTreeMap<String, u64> = Default::default();
    loop {
        let containers = containers_of(client, id, only)?;
        let several = containers.len() > 1 || only.is_none() && !follow;
        for c in &containers {
            let cid = text(&c["id"]);
            let offset = offsets.entry(cid.clone()).or_insert(0);
            let bytes = match client.get_bytes(&format!(
                "/ws/v1/cluster/apps/{}/containers/{}/logs/{stream}?offset={offset}",
                encode(id),
                encode(&cid)
            )) {
                Ok(bytes) => bytes,
                Err(error) if follow => {
                    tracing::debug!(%error, "log not readable yet");
                    continue;
                }
                Err(error) => {
                    eprintln!("{cid}: {error:#}");
                    continue;
                }
            };
            if several && (*offset == 0 || !follow) {
                println!("== {cid} on {} ==", text(&c["node"]));
            }
            *offset += bytes.len() as u64;
            use std::io::Write;
            std::io::stdout().write_all(&bytes)?;
        }
        if !follow {
            return Ok(());
        }
        let app = client.get(&format!("/ws/v1/cluster/apps/{}", encode(id)))?["app"].clone();
        let ended = matches!(
            app["state"].as_str(),
            Some("FINISHED" | "FAILED" | "KILLED")
        );
        if ended && containers.iter().all(|c| !c["finishTimeMs"].is_null()) {
            // One last read picks up what was written before the end.
            return logs(client, id, only, stderr, false).map(|_| ()).or(Ok(()));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn print_apps(apps: &[Value]) {
    println!(
        "{:<32} {:<16} {:<12} {:<12} {:<12} {:<9} {:>7} {:>8} {:>6} {:>10}",
        "ID",
        "NAME",
        "QUEUE",
        "USER",
        "PROJECT",
        "STATE",
        "RUNNING",
        "FINISHED",
        "FAILED",
        "CREDITS"
    );
    for app in apps {
        println!(
            "{:<32} {:<16} {:<12} {:<12} {:<12} {:<9} {:>7} {:>8} {:>6} {:>10.3}",
            text(&app["id"]),
            text(&app["name"]),
            text(&app["queue"]),
            text(&app["user"]),
            text(&app["project"]),
            text(&app["state"]),
            text(&app["runningContainers"]),
            text(&app["finishedContainers"]),
            text(&app["failedContainers"]),
            app["credits"].as_f64().unwrap_or(0.0),
        );
    }
}

/// Sets app `id`'s lifetime to end `seconds` from now (this machine's
/// clock, as YARN's CLI), and says when it ends.
fn update_lifetime(server: &ServerArgs, id: &str, seconds: u64) -> anyhow::Result<()> {
    let expiry = chrono::Utc::now() + chrono::Duration::seconds(i64::try_from(seconds)?);
    let asked = expiry.format("%Y-%m-%dT%H:%M:%S%.3f%z").to_string();
    let answer = server.client()?.put_json(
        &format!("/ws/v1/cluster/apps/{}/timeout", encode(id)),
        &json!({"timeout": {"type": "LIFETIME", "expiryTime": asked}}),
    )?;
    let now = text(&answer["timeout"]["expiryTime"]);
    if now == asked {
        println!("{id}: its lifetime now ends at {now}");
    } else {
        println!(
            "{id}: its lifetime ends at {now} (its queue's maximum-application-lifetime, or the app has ended)"
        );
    }
    Ok(())
}

fn print_status(app: &Value) {
    for (label, key) in [
        ("id", "id"),
        ("name", "name"),
        ("queue", "queue"),
        ("user", "user"),
        ("project", "project"),
        ("state", "state"),
        ("final status", "finalStatus"),
        ("running", "runningContainers"),
        ("pending", "pendingContainers"),
        ("finished", "finishedContainers"),
        ("failed", "failedContainers"),
        ("lost", "lostContainers"),
        ("preempted", "preemptedContainers"),
        ("credits", "credits"),
    ] {
        println!("{label:>13}: {}", text(&app[key]));
    }
    let lifetime = &app["timeouts"]["timeout"][0];
    match lifetime["expiryTime"].as_str() {
        Some("UNLIMITED") | None => println!("{:>13}: unlimited", "lifetime"),
        Some(expiry) => println!(
            "{:>13}: ends {expiry} ({} s left)",
            "lifetime",
            text(&lifetime["remainingTimeInSeconds"])
        ),
    }
    if let Some(diagnostics) = app["diagnostics"].as_str() {
        println!("  diagnostics: {diagnostics}");
    }
}

fn print_containers(containers: &[Value]) {
    if containers.is_empty() {
        return;
    }
    println!(
        "{:<40} {:<24} {:>7} {:>6}",
        "CONTAINER", "NODE", "ATTEMPT", "EXIT"
    );
    for c in containers {
        println!(
            "{:<40} {:<24} {:>7} {:>6}",
            text(&c["id"]),
            text(&c["node"]),
            text(&c["attempt"]),
            c["exitStatus"]
                .as_i64()
                .map_or("-".into(), |s| s.to_string()),
        );
    }
}

/// A JSON value as plain text (strings without quotes).
fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    }
}

/// `512mb`, `2gb` or a plain number of MB.
fn parse_memory(text: &str) -> anyhow::Result<u64> {
    let lower = text.trim().to_ascii_lowercase();
    let (number, factor) = if let Some(n) = lower.strip_suffix("gb") {
        (n, 1024)
    } else if let Some(n) = lower.strip_suffix("mb") {
        (n, 1)
    } else {
        (lower.as_str(), 1)
    };
    number
        .trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(factor))
        .filter(|n| *n > 0)
        .with_context(|| format!("--memory {text:?}: expected e.g. 512mb or 2gb"))
}
