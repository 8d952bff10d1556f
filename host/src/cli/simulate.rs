//! `weft simulate SCENARIO [--out DIR] [--set K=V]…`: run a scenario on the
//! virtual clock and print (or write) its summary.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use crate::sim::simulate::{Scenario, run};
use crate::sim::sls;

#[derive(Debug, Args)]
pub(super) struct SimulateArgs {
    /// The scenario: TOML or JSON (see docs/simulate.md). Or give --sls-trace.
    #[arg(required_unless_present = "sls_trace", conflicts_with = "sls_trace")]
    scenario: Option<PathBuf>,
    /// A Hadoop SLS job trace (SLS JSON) to simulate instead of a scenario.
    #[arg(long, value_name = "TRACE.json")]
    sls_trace: Option<PathBuf>,
    /// The SLS node list (nodes.json); default: one SLS-sized node per host in the trace.
    #[arg(long, value_name = "NODES.json", requires = "sls_trace")]
    sls_nodes: Option<PathBuf>,
    /// The queue configuration for an SLS trace: capacity-scheduler.xml or TOML.
    #[arg(long, value_name = "FILE", requires = "sls_trace")]
    queues: Option<PathBuf>,
    /// Write DIR/summary.json instead of printing the summary.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Override a property on top of the scenario's settings.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

pub(super) fn run_command(args: SimulateArgs) -> anyhow::Result<()> {
    super::init_tracing("warn");
    let (scenario, base, shown) = match (&args.scenario, &args.sls_trace) {
        (Some(path), _) => {
            let (scenario, base) = Scenario::from_file(path)?;
            (scenario, base, path.display().to_string())
        }
        (None, Some(trace)) => {
            let read = |path: &PathBuf| {
                std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read {}", path.display()))
            };
            let nodes = args.sls_nodes.as_ref().map(read).transpose()?;
            let mut scenario = sls::scenario(&read(trace)?, nodes.as_deref())
                .map_err(anyhow::Error::msg)
                .with_context(|| format!("the SLS inputs ({}) are not usable", trace.display()))?;
            scenario.queues.file = args.queues.clone();
            (scenario, PathBuf::from("."), trace.display().to_string())
        }
        (None, None) => unreachable!("clap requires a scenario or --sls-trace"),
    };
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(scenario.apps.len() as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{elapsed_precise} [{bar:40}] {pos}/{len} apps finished",
            )
            .expect("a valid template")
            .progress_chars("=> "),
        );
        bar
    });
    let progress = |finished: usize, _total: usize| {
        if let Some(bar) = &bar {
            bar.set_position(finished as u64);
        }
    };
    let summary = run(&scenario, &base, &args.set, &progress)
        .with_context(|| format!("simulating {shown} failed"))?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let json = serde_json::to_string_pretty(&summary)?;
    match args.out {
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            let path = dir.join("summary.json");
            std::fs::write(&path, json)
                .with_context(|| format!("cannot write {}", path.display()))?;
            eprintln!("summary written to {}", path.display());
        }
        None => println!("{json}"),
    }
    Ok(())
}
