//! `weft policy …`: list, load and roll back on a running server; check and
//! bench a component offline.

use anyhow::Context;
use clap::Subcommand;

use super::parse_pair;
use crate::client::ServerArgs;
use crate::policy::{PolicyEngine, PolicyKind, PolicySource, contract, inspect};
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
        kind: PolicyKind,
        /// A .wasm component, or builtin:NAME.
        policy: String,
        #[arg(long = "param", value_name = "KEY=VALUE", value_parser = parse_pair)]
        params: Vec<(String, String)>,
        /// Run it beside the active policy on the same live calls, compared
        /// and never applied (see `weft policy shadow show`, `promote`).
        #[arg(long)]
        shadow: bool,
        /// Sharing only: load into this reservable queue's own policy (its
        /// reservation-policy) instead of the one every other queue uses.
        #[arg(long, value_name = "QUEUE")]
        queue: Option<String>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Make KIND's shadow the active policy (a normal hot swap).
    Promote {
        kind: PolicyKind,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Show or stop a shadow policy.
    #[command(subcommand)]
    Shadow(ShadowCommand),
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
    /// Test a component offline against its world's contract: properties
    /// on generated inputs (row independence, determinism, valid
    /// placements, validate agreeing with available …) and example cases.
    Test {
        /// A .wasm component, or builtin:NAME.
        policy: String,
        /// Example cases, one JSON object per line (see docs/policy-authors.md).
        #[arg(long, value_name = "CASES.jsonl")]
        cases: Option<std::path::PathBuf>,
        #[arg(long = "param", value_name = "KEY=VALUE", value_parser = parse_pair)]
        params: Vec<(String, String)>,
        /// The seed of the generated inputs: the same seed, the same inputs.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Generated inputs per property (1 to 10,000).
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        rounds: u32,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        settings: super::SettingsArgs,
    },
    /// Measure what a policy's calls cost, per call and per item.
    Bench(super::bench::BenchArgs),
    /// Start a policy project (Rust, Python or JS): a template, its SDK and the WIT.
    New(super::policy_new::NewArgs),
}

#[derive(Debug, Subcommand)]
pub enum ShadowCommand {
    /// What KIND's shadow found: per-project credit differences, placements
    /// or decisions that differ, failures and latency.
    Show {
        kind: PolicyKind,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Stop KIND's shadow; prints its last report.
    Stop {
        kind: PolicyKind,
        #[command(flatten)]
        server: ServerArgs,
    },
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
            shadow,
            queue,
            server,
        } => {
            let client = server.client()?;
            let mut query: Vec<(String, String)> = params;
            if let Some(queue) = queue {
                query.insert(0, ("queue".into(), queue));
            }
            let source = PolicySource::parse(&policy);
            let body = match &source {
                PolicySource::Builtin(name) => {
                    query.insert(0, ("builtin".into(), name.clone()));
                    Vec::new()
                }
                PolicySource::File(_) => source.read().map_err(anyhow::Error::msg)?,
            };
            let target = if shadow { "/shadow" } else { "" };
            let path = format!("/ws/v1/policies/{kind}{target}?{}", encode_query(&query));
            let status = client.put_bytes(&path, &body)?;
            if shadow {
                let candidate = &status["shadow"];
                println!(
                    "{kind} shadow is {} {} (sha256 {}): it answers beside the active policy, never applied; see `weft policy shadow show {kind}`",
                    candidate["name"].as_str().unwrap_or("?"),
                    candidate["version"].as_str().unwrap_or("?"),
                    candidate["sha256"].as_str().unwrap_or("?")
                );
                return Ok(());
            }
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
        PolicyCommand::Promote { kind, server } => {
            let status = server
                .client()?
                .post(&format!("/ws/v1/policies/{kind}/shadow/promote"))?;
            let active = &status["active"];
            println!(
                "{kind} shadow promoted: {} {} is active (version {} in the history)",
                active["name"].as_str().unwrap_or("?"),
                active["version"].as_str().unwrap_or("?"),
                active["number"]
            );
        }
        PolicyCommand::Shadow(ShadowCommand::Show { kind, server }) => {
            let report = server
                .client()?
                .get(&format!("/ws/v1/policies/{kind}/shadow"))?;
            println!("{}", serde_json::to_string_pretty(&report)?);
        }
        PolicyCommand::Shadow(ShadowCommand::Stop { kind, server }) => {
            let report = server
                .client()?
                .delete(&format!("/ws/v1/policies/{kind}/shadow"))?;
            println!("{}", serde_json::to_string_pretty(&report)?);
        }
        PolicyCommand::Check {
            policy,
            params,
            settings,
        } => check(&policy, &params, &settings)?,
        PolicyCommand::Test {
            policy,
            cases,
            params,
            seed,
            rounds,
            json,
            settings,
        } => test(
            &policy,
            cases.as_deref(),
            &params,
            seed,
            rounds,
            json,
            &settings,
        )?,
        PolicyCommand::Bench(args) => super::bench::run(args)?,
        PolicyCommand::New(args) => super::policy_new::run(args)?,
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
    super::init_tracing(super::OFFLINE_TRACING);
    let (settings, engine, source, bytes) = offline(settings, policy)?;
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

/// `weft policy test`: the contract harness (`policy::contract`), its
/// report printed as lines or JSON; an error if any check failed.
fn test(
    policy: &str,
    cases: Option<&std::path::Path>,
    params: &[(String, String)],
    seed: u64,
    rounds: u32,
    json: bool,
    settings: &super::SettingsArgs,
) -> anyhow::Result<()> {
    super::init_tracing(super::OFFLINE_TRACING);
    let cases = match cases {
        Some(path) => {
            let text = read_bounded(path, contract::MAX_CASES_BYTES)?;
            contract::parse_cases(&text)
                .map_err(anyhow::Error::msg)
                .with_context(|| format!("{} is not a valid case file", path.display()))?
        }
        None => Vec::new(),
    };
    let (settings, engine, source, bytes) = offline(settings, policy)?;
    let options = contract::TestOptions {
        seed,
        rounds: rounds as usize,
    };
    let report = contract::test(
        &engine,
        &source.to_string(),
        &bytes,
        &settings.pricing_params,
        params,
        &cases,
        options,
    )
    .with_context(|| format!("{source} does not load"))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        let info = &report.policy;
        println!(
            "{source}: {} policy {} {} (sha256 {}), seed {seed}",
            info.kind, info.name, info.version, info.sha256
        );
        for check in &report.checks {
            let mark = if check.passed { "ok  " } else { "FAIL" };
            println!("  {mark}  {}: {}", check.name, check.detail);
        }
    }
    if report.passed() {
        if !json {
            println!("{} checks passed", report.checks.len());
        }
        Ok(())
    } else {
        anyhow::bail!(
            "{} of {} checks failed",
            report.failed(),
            report.checks.len()
        )
    }
}

/// A file's text, refused if it is larger than `limit` bytes.
fn read_bounded(path: &std::path::Path, limit: usize) -> anyhow::Result<String> {
    use std::io::Read;
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut text = String::new();
    file.take(limit as u64 + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("cannot read {} as UTF-8 text", path.display()))?;
    if text.len() > limit {
        anyhow::bail!("{} is larger than {limit} bytes", path.display());
    }
    Ok(text)
}

/// What the offline tools start from: the settings, an engine whose guests
/// read a clock fixed at the Unix epoch (there is no host clock here), and
/// the component named.
fn offline(
    settings: &super::SettingsArgs,
    policy: &str,
) -> anyhow::Result<(crate::config::Settings, PolicyEngine, PolicySource, Vec<u8>)> {
    let settings = settings.load()?;
    let engine = PolicyEngine::from_settings(
        &settings.policies,
        std::sync::Arc::new(VirtualClock::default()),
    )?;
    let source = PolicySource::parse(policy);
    let bytes = source.read().map_err(anyhow::Error::msg)?;
    Ok((settings, engine, source, bytes))
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
