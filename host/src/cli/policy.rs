//! `weft policy …`: list, load and roll back on a running server; check and
//! bench a component offline.

use anyhow::Context;
use clap::Subcommand;

use super::parse_pair;
use crate::client::ServerArgs;
use crate::policy::{PolicyEngine, PolicyKind, PolicySource, inspect};
use crate::sim::VirtualClock;

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Show each kind's active policy and history.
    List {
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Load a policy into a running server; the old one stays if it is refused.
    Load {
        /// scheduling or pricing.
        kind: PolicyKind,
        /// A .wasm component, or builtin:NAME.
        policy: String,
        #[arg(long = "param", value_name = "KEY=VALUE", value_parser = parse_pair)]
        params: Vec<(String, String)>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Make the previous good version of KIND active again.
    Rollback {
        kind: PolicyKind,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Check a component offline: its world, describe, configure and a self-check call.
    Check {
        /// A .wasm component, or builtin:NAME.
        policy: String,
        #[arg(long = "param", value_name = "KEY=VALUE", value_parser = parse_pair)]
        params: Vec<(String, String)>,
        #[command(flatten)]
        settings: super::SettingsArgs,
    },
    /// Measure what a policy's calls cost, per call and per item.
    Bench(super::bench::BenchArgs),
}

impl clap::ValueEnum for PolicyKind {
    fn value_variants<'a>() -> &'a [Self] {
        &PolicyKind::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.as_str()))
    }
}

pub fn run(command: PolicyCommand) -> anyhow::Result<()> {
    match command {
        PolicyCommand::List { server } => {
            let body = server.client()?.get("/ws/v1/policies")?;
            println!("{}", serde_json::to_string_pretty(&body)?);
        }
        PolicyCommand::Load {
            kind,
            policy,
            params,
            server,
        } => {
            let client = server.client()?;
            let mut query: Vec<(String, String)> = params;
            let source = PolicySource::parse(&policy);
            let body = match &source {
                PolicySource::Builtin(name) => {
                    query.insert(0, ("builtin".into(), name.clone()));
                    Vec::new()
                }
                PolicySource::File(_) => source.read().map_err(anyhow::Error::msg)?,
            };
            let path = format!("/ws/v1/policies/{kind}?{}", encode_query(&query));
            let status = client.put_bytes(&path, &body)?;
            let active = &status["active"];
            println!(
                "{kind} policy is now {} {} (version {} in the history, sha256 {})",
                active["name"].as_str().unwrap_or("?"),
                active["version"].as_str().unwrap_or("?"),
                active["number"],
                active["sha256"].as_str().unwrap_or("?")
            );
        }
        PolicyCommand::Rollback { kind, server } => {
            let status = server
                .client()?
                .post(&format!("/ws/v1/policies/{kind}/rollback"))?;
            let active = &status["active"];
            println!(
                "{kind} policy rolled back to {} {} (version {} in the history)",
                active["name"].as_str().unwrap_or("?"),
                active["version"].as_str().unwrap_or("?"),
                active["number"]
            );
        }
        PolicyCommand::Check {
            policy,
            params,
            settings,
        } => check(&policy, &params, &settings)?,
        PolicyCommand::Bench(args) => super::bench::run(args)?,
    }
    Ok(())
}

/// `weft policy check`: loads the component as a server would, without
/// publishing it, and says how long that took and whether it compiled.
fn check(
    policy: &str,
    params: &[(String, String)],
    settings: &super::SettingsArgs,
) -> anyhow::Result<()> {
    // Warnings (a damaged cache entry, the policy's own) reach the author;
    // RUST_LOG=info shows everything the guest writes as it runs.
    super::init_tracing("warn");
    let settings = settings.load()?;
    // No host clock here: guests read a clock fixed at the Unix epoch.
    let engine = PolicyEngine::from_settings(
        &settings.policies,
        std::sync::Arc::new(VirtualClock::default()),
    )?;
    let source = PolicySource::parse(policy);
    let bytes = source.read().map_err(anyhow::Error::msg)?;
    let started = std::time::Instant::now();
    let version = inspect(
        &engine,
        &source.to_string(),
        &bytes,
        &settings.pricing_params,
        params,
    )
    .with_context(|| format!("{source} failed the check"))?;
    let elapsed = started.elapsed();
    let info = &version.info;
    println!(
        "{source}: ok — {} policy {} {} (sha256 {}): world, describe, configure and self-check passed",
        info.kind, info.name, info.version, info.sha256
    );
    let counts = engine.compile_counts();
    let code = if counts.compiled == 0 && counts.disk_hits > 0 {
        "read compiled from the cache"
    } else {
        "compiled"
    };
    let cache = match engine.compile_cache_dir() {
        Some(dir) => format!("compile cache {}", dir.display()),
        None => "no compile cache".to_string(),
    };
    println!(
        "loaded in {} ms ({code}, {:.1} MB of code; {cache})",
        elapsed.as_millis(),
        version.code_bytes() as f64 / f64::from(1 << 20)
    );
    Ok(())
}

fn encode_query(pairs: &[(String, String)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", percent_encode(k), percent_encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}
