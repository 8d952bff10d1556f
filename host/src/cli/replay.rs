//! `weft replay`: what-if billing of a container-event log.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;

use super::{SettingsArgs, parse_pair};
use crate::policy::{PolicyEngine, PolicyKind, PolicyRuntime, PolicySource};
use crate::quota::QuotaService;
use crate::sim::{VirtualClock, replay};

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The event log: one JSON object per line, ordered by t (ms).
    events: PathBuf,
    #[command(flatten)]
    settings: SettingsArgs,
    /// The pricing policy: a .wasm file or builtin:NAME (default: weft.policy.pricing).
    #[arg(long, value_name = "FILE|builtin:NAME")]
    pricing: Option<String>,
    /// A parameter for the pricing policy's configure, e.g. --param price.base.general=2.
    #[arg(long = "param", value_name = "KEY=VALUE", value_parser = parse_pair)]
    params: Vec<(String, String)>,
    /// Credits a project starts with, e.g. --initial-credits Project07=50.
    #[arg(long = "initial-credits", value_name = "PROJECT=N", value_parser = parse_credits)]
    initial_credits: Vec<(String, f64)>,
}

fn parse_credits(text: &str) -> Result<(String, f64), String> {
    let (project, credits) = parse_pair(text)?;
    match credits.parse::<f64>() {
        Ok(n) if n.is_finite() => Ok((project, n)),
        _ => Err(format!("credits must be a number, got {credits:?}")),
    }
}

pub fn run(args: ReplayArgs) -> anyhow::Result<()> {
    super::init_tracing("warn");
    let settings = args.settings.load()?;
    let text = std::fs::read_to_string(&args.events)
        .with_context(|| format!("cannot read the event log {}", args.events.display()))?;
    let lines = replay::parse(&text)
        .with_context(|| format!("{} is not a valid event log", args.events.display()))?;

    // The policy reads the replay's virtual clock, so its answers depend on
    // the log, not on when the replay runs.
    let clock = VirtualClock::starting_at(0);
    let engine = PolicyEngine::new(settings.policies.limits, Arc::new(clock.clone()))?;
    // No fallback in replay: a failing policy fails the replay.
    let runtime = PolicyRuntime::new(engine, settings.pricing_params.clone(), u32::MAX);
    let source = PolicySource::parse(
        args.pricing
            .as_deref()
            .unwrap_or(&settings.policies.pricing),
    );
    runtime
        .load(PolicyKind::Pricing, &source, &args.params)
        .with_context(|| format!("cannot load the pricing policy {source}"))?;

    let mut quota = QuotaService::new(settings.quota);
    for (project, credits) in &args.initial_credits {
        quota.set_credits(project, *credits);
    }
    let report =
        replay::run(&lines, &mut quota, runtime.pricing(), clock).context("replay failed")?;
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}
