//! `weft policy …`: list, load and roll back on a running server; check and
//! bench a component offline.

use anyhow::Context;
use clap::Subcommand;

use super::parse_pair;
use crate::client::ServerArgs;
use crate::clock::VirtualClock;
use crate::policy::{PolicyEngine, PolicyKind, PolicySource, contract, inspect};

#[derive(Debug, Subcommand)]
pub(super) enum PolicyCommand {
    /// Each kind's versions (the active one first among them), with what
    /// its calls cost; a table, or the API's JSON with --json.
    List {
        #[command(flatten)]
        server: ServerArgs,
        #[arg(long)]
        json: bool,
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

/// `GET /ws/v1/policies` as a table: a row per version of each kind (and
/// each queue's sharing slot), what the active one's calls cost.
fn policies_table(body: &serde_json::Value) -> String {
    use serde_json::Value;
    let text = |value: &Value| match value {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    };
    let micros = |ns: &Value| {
        ns.as_f64()
            .map_or("-".into(), |ns| format!("{:.1} µs", ns / 1000.0))
    };
    let when = |ms: &Value| {
        ms.as_i64()
            .and_then(chrono::DateTime::from_timestamp_millis)
            .map_or("-".into(), |at| at.format("%Y-%m-%d %H:%M:%S").to_string())
    };
    let mut out = format!(
        "{:<18} {:>3} {:<11} {:<22} {:<8} {:<28} {:<19} {:>7} {:>10} {:>10} {:>6} {:>9}\n",
        "KIND",
        "#",
        "STATE",
        "NAME",
        "VERSION",
        "SOURCE",
        "LOADED (UTC)",
        "CALLS",
        "MEAN",
        "P99",
        "FAILED",
        "FALLBACKS"
    );
    for (kind, slot) in body.as_object().into_iter().flatten() {
        let active = slot["active"]["number"].as_u64();
        let mut history: Vec<&Value> = slot["history"].as_array().into_iter().flatten().collect();
        // Newest first: the versions an operator rolls back to are next.
        history.sort_by_key(|version| std::cmp::Reverse(version["number"].as_u64()));
        for version in history {
            // Calls, timings and failures are the active version's; a
            // version that has not been called yet has no timings.
            let (calls, mean, p99, failures, fallbacks) = if version["number"].as_u64() == active {
                let stats = &slot["stats"];
                let called = stats["calls"].as_u64().unwrap_or(0) > 0;
                let timing = |field: &str| {
                    if called {
                        micros(&stats[field])
                    } else {
                        "-".into()
                    }
                };
                (
                    text(&stats["calls"]),
                    timing("mean_ns"),
                    timing("p99_ns"),
                    text(&slot["failures"]),
                    text(&slot["fallbacks"]),
                )
            } else {
                Default::default()
            };
            let row = format!(
                "{:<18} {:>3} {:<11} {:<22} {:<8} {:<28} {:<19} {:>7} {:>10} {:>10} {:>6} {:>9}",
                kind,
                text(&version["number"]),
                text(&version["state"]),
                text(&version["name"]),
                text(&version["version"]),
                text(&version["source"]),
                when(&version["loaded_at_ms"]),
                calls,
                mean,
                p99,
                failures,
                fallbacks,
            );
            out.push_str(row.trim_end());
            out.push('\n');
        }
    }
    out
}

/// A shadow's report as the API's JSON, or in a few lines for people.
fn print_shadow(report: &serde_json::Value, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(report)?);
    } else {
        print!("{}", shadow_text(report));
    }
    Ok(())
}

/// `GET /ws/v1/policies/{kind}/shadow` in a few lines: the candidate, what
/// it answered, and what differs from the active version.
fn shadow_text(report: &serde_json::Value) -> String {
    use serde_json::Value;
    let text = |value: &Value| match value {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    };
    let credits = |value: &Value| value.as_f64().map_or("-".into(), |x| format!("{x:.3}"));
    let shadow = &report["shadow"];
    let mut out = format!(
        "{} shadow: {} {} ({}), beside the active version, never applied\n\
         calls {} · failures {} · dropped (it was behind) {} · mean {} µs · p99 {} µs\n",
        text(&report["kind"]),
        text(&shadow["name"]),
        text(&shadow["version"]),
        text(&shadow["source"]),
        text(&report["calls"]),
        text(&report["failures"]),
        text(&report["dropped"]),
        report["latency"]["mean_ns"]
            .as_f64()
            .map_or("-".into(), |ns| format!("{:.1}", ns / 1000.0)),
        report["latency"]["p99_ns"]
            .as_f64()
            .map_or("-".into(), |ns| format!("{:.1}", ns / 1000.0)),
    );
    if let Some(failure) = report["last_failure"].as_str() {
        out.push_str(&format!("last failure: {failure}\n"));
    }
    if let Some(pricing) = report.get("pricing") {
        out.push_str(&format!(
            "multiplicator steps {} ({} differing) · charge batches {}\n\n{:<24} {:>14} {:>14} {:>14}\n",
            text(&pricing["multiplicator_steps"]),
            text(&pricing["multiplicators_differing"]),
            text(&pricing["charge_batches"]),
            "PROJECT",
            "ACTIVE",
            "SHADOW",
            "DIFFERENCE"
        ));
        for project in pricing["projects"].as_array().into_iter().flatten() {
            out.push_str(&format!(
                "{:<24} {:>14} {:>14} {:>14}\n",
                text(&project["project"]),
                credits(&project["active_credits"]),
                credits(&project["shadow_credits"]),
                credits(&project["difference"]),
            ));
        }
    }
    if let Some(scheduling) = report.get("scheduling") {
        out.push_str(&format!(
            "rounds {} · differing {} ({} containers placed otherwise) · would be refused {}\n",
            text(&scheduling["rounds"]),
            text(&scheduling["differing_rounds"]),
            text(&scheduling["differing_containers"]),
            text(&scheduling["invalid_rounds"]),
        ));
    }
    if let Some(sharing) = report.get("sharing") {
        out.push_str(&format!(
            "decisions {} · flipped to accept {} · flipped to refuse {}\n",
            text(&sharing["decisions"]),
            text(&sharing["flipped_to_accept"]),
            text(&sharing["flipped_to_refuse"]),
        ));
    }
    out
}

#[derive(Debug, Subcommand)]
pub(super) enum ShadowCommand {
    /// What KIND's shadow found: per-project credit differences, placements
    /// or decisions that differ, failures and latency.
    Show {
        kind: PolicyKind,
        #[command(flatten)]
        server: ServerArgs,
        /// The API's JSON rather than the summary.
        #[arg(long)]
        json: bool,
    },
    /// Stop KIND's shadow; prints its last report.
    Stop {
        kind: PolicyKind,
        #[command(flatten)]
        server: ServerArgs,
        /// The API's JSON rather than the summary.
        #[arg(long)]
        json: bool,
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

pub(super) fn run(command: PolicyCommand) -> anyhow::Result<()> {
    match command {
        PolicyCommand::List { server, json } => {
            let body = server.client()?.get("/ws/v1/policies")?;
            if json {
                println!("{}", serde_json::to_string_pretty(&body)?);
            } else {
                print!("{}", policies_table(&body));
            }
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
        PolicyCommand::Shadow(ShadowCommand::Show { kind, server, json }) => {
            let report = server
                .client()?
                .get(&format!("/ws/v1/policies/{kind}/shadow"))?;
            print_shadow(&report, json)?;
        }
        PolicyCommand::Shadow(ShadowCommand::Stop { kind, server, json }) => {
            let report = server
                .client()?
                .delete(&format!("/ws/v1/policies/{kind}/shadow"))?;
            print_shadow(&report, json)?;
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
            let text = read_bounded(path, crate::limits::MAX_POLICY_CASES_BYTES)?;
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
    String::from_utf8(super::read_bounded_bytes(path, limit)?)
        .with_context(|| format!("cannot read {} as UTF-8 text", path.display()))
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
