//! `weft simulate SCENARIO [--out DIR] [--set K=V]…`: run a scenario on the
//! virtual clock and print (or write) its summary.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use crate::sim::simulate::{Scenario, run};

#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// The scenario: TOML or JSON (see docs/simulate.md).
    scenario: PathBuf,
    /// Write DIR/summary.json instead of printing the summary.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Override a property on top of the scenario's settings.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

pub fn run_command(args: SimulateArgs) -> anyhow::Result<()> {
    super::init_tracing("warn");
    let (scenario, base) = Scenario::from_file(&args.scenario)?;
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
        .with_context(|| format!("simulating {} failed", args.scenario.display()))?;
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
