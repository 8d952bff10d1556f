//! `weft replay`: what-if billing of a container-event log, with one pricing
//! policy (the ledger as JSON) or two (a per project, user and day
//! comparison with a baseline).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use serde::Serialize;

use super::{SettingsArgs, parse_pair};
use crate::clock::VirtualClock;
use crate::config::Settings;
use crate::limits::MAX_LOG_BYTES;
use crate::policy::{PolicyEngine, PolicyKind, PolicyRuntime, PolicySource};
use crate::quota::QuotaService;
use crate::quota::events::{self, EventLine};
use crate::sim::replay::{self, ReplayReport};

#[derive(Debug, Args)]
pub(super) struct ReplayArgs {
    /// The event log: one JSON object per line, ordered by t (ms); see docs/replay-events.md.
    events: PathBuf,
    #[command(flatten)]
    settings: SettingsArgs,
    /// The pricing policy (B when comparing): a .wasm file or builtin:NAME (default: weft.policy.pricing).
    #[arg(long, value_name = "FILE|builtin:NAME")]
    pricing: Option<String>,
    /// A parameter for the pricing policy's configure, e.g. --param price.base.general=2.
    #[arg(long = "param", value_name = "KEY=VALUE", value_parser = parse_pair)]
    params: Vec<(String, String)>,
    /// Compare with this pricing policy (A): print per project, user and day
    /// A's credits, B's (--pricing) and B - A, as a table.
    #[arg(long, value_name = "FILE|builtin:NAME")]
    baseline: Option<String>,
    /// A parameter for the baseline policy's configure.
    #[arg(long = "baseline-param", value_name = "KEY=VALUE", value_parser = parse_pair, requires = "baseline")]
    baseline_params: Vec<(String, String)>,
    /// With --baseline: print the comparison as JSON instead of a table.
    #[arg(long, requires = "baseline")]
    json: bool,
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

pub(super) fn run(args: ReplayArgs) -> anyhow::Result<()> {
    super::init_tracing("warn");
    let settings = args.settings.load()?;
    let text = read_log(&args.events)?;
    let lines = events::parse(&text)
        .with_context(|| format!("{} is not a valid event log", args.events.display()))?;
    let pricing = args
        .pricing
        .clone()
        .unwrap_or_else(|| settings.policies.pricing.clone());
    let charged = replay_with(
        &settings,
        &lines,
        &pricing,
        &args.params,
        &args.initial_credits,
    )?;
    let Some(baseline) = &args.baseline else {
        println!("{}", serde_json::to_string(&charged)?);
        return Ok(());
    };
    let charged_before = replay_with(
        &settings,
        &lines,
        baseline,
        &args.baseline_params,
        &args.initial_credits,
    )
    .context("the baseline (--baseline)")?;
    let comparison = Comparison::of(baseline, &charged_before, &pricing, &charged);
    if args.json {
        println!("{}", serde_json::to_string(&comparison)?);
    } else {
        print!("{}", comparison.table());
    }
    Ok(())
}

/// The log's text, refused if larger than replay reads.
fn read_log(path: &Path) -> anyhow::Result<String> {
    let file = std::fs::File::open(path).with_context(|| {
        format!(
            "cannot read the event log {}: a server writes one when started with \
             --set weft.quota.event-log=FILE",
            path.display()
        )
    })?;
    let mut text = String::new();
    file.take(MAX_LOG_BYTES + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("cannot read the event log {}", path.display()))?;
    if text.len() as u64 > MAX_LOG_BYTES {
        anyhow::bail!(
            "the event log {} is larger than the {MAX_LOG_BYTES} bytes replay reads: replay a part of it",
            path.display()
        );
    }
    Ok(text)
}

/// Replays `lines` priced by `pricing` (configured with `params`), in a
/// policy runtime and on a virtual clock of its own.
fn replay_with(
    settings: &Settings,
    lines: &[EventLine],
    pricing: &str,
    params: &[(String, String)],
    initial_credits: &[(String, f64)],
) -> anyhow::Result<ReplayReport> {
    // The policy reads the replay's virtual clock, so its answers depend on
    // the log, not on when the replay runs.
    let clock = VirtualClock::starting_at(0);
    let engine = PolicyEngine::from_settings(&settings.policies, Arc::new(clock.clone()))?;
    // No fallback in replay: a failing policy fails the replay.
    let runtime = PolicyRuntime::new(engine, settings.pricing_params.clone(), u32::MAX);
    let source = PolicySource::parse(pricing);
    runtime
        .load(PolicyKind::Pricing, &source, params)
        .with_context(|| format!("cannot load the pricing policy {source}"))?;
    let mut quota = QuotaService::new(settings.quota);
    for (project, credits) in initial_credits {
        quota.set_credits(project, *credits);
    }
    replay::run(lines, &mut quota, runtime.pricing(), clock)
        .with_context(|| format!("replay with {source} failed"))
}

/// Credits charged under the baseline (A) and the policy compared (B).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
struct Credits {
    baseline: f64,
    pricing: f64,
    /// pricing − baseline.
    difference: f64,
}

impl Credits {
    fn new(baseline: f64, pricing: f64) -> Credits {
        Credits {
            baseline,
            pricing,
            difference: pricing - baseline,
        }
    }

    fn add(&mut self, other: Credits) {
        *self = Credits::new(self.baseline + other.baseline, self.pricing + other.pricing);
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
struct ComparedDay {
    project: String,
    user: String,
    day: String,
    #[serde(flatten)]
    credits: Credits,
}

/// What `--baseline` prints: every (project, user, day) either policy
/// charged, each project's sums and the total.
#[derive(Debug, Clone, PartialEq, Serialize)]
struct Comparison {
    /// The policies: A and B.
    baseline_policy: String,
    pricing_policy: String,
    daily: Vec<ComparedDay>,
    projects: BTreeMap<String, Credits>,
    total: Credits,
}

impl Comparison {
    fn of(
        baseline_policy: &str,
        baseline: &ReplayReport,
        pricing_policy: &str,
        pricing: &ReplayReport,
    ) -> Comparison {
        // (project, user, day) → (A, B); a day only one policy charged is 0 under the other.
        let mut days: BTreeMap<(&str, &str, &str), (f64, f64)> = BTreeMap::new();
        for row in &baseline.daily {
            days.entry((&row.project, &row.user, &row.day))
                .or_default()
                .0 += row.credits;
        }
        for row in &pricing.daily {
            days.entry((&row.project, &row.user, &row.day))
                .or_default()
                .1 += row.credits;
        }
        let mut projects: BTreeMap<String, Credits> = BTreeMap::new();
        let mut total = Credits::default();
        let daily = days
            .into_iter()
            .map(|((project, user, day), (a, b))| {
                let credits = Credits::new(a, b);
                projects
                    .entry(project.to_string())
                    .or_default()
                    .add(credits);
                total.add(credits);
                ComparedDay {
                    project: project.into(),
                    user: user.into(),
                    day: day.into(),
                    credits,
                }
            })
            .collect();
        Comparison {
            baseline_policy: baseline_policy.into(),
            pricing_policy: pricing_policy.into(),
            daily,
            projects,
            total,
        }
    }

    /// The comparison as an aligned table: each project's days, then its
    /// sums (user `*`, day `total`), and the total of all in the last row.
    fn table(&self) -> String {
        let number = |n: f64| format!("{n:.6}");
        let numbers = |c: &Credits| [number(c.baseline), number(c.pricing), number(c.difference)];
        let mut rows: Vec<[String; 6]> = vec![[
            "PROJECT".into(),
            "USER".into(),
            "DAY".into(),
            "A".into(),
            "B".into(),
            "B - A".into(),
        ]];
        let mut days = self.daily.iter().peekable();
        for (project, sums) in &self.projects {
            while let Some(day) = days.next_if(|d| d.project == *project) {
                let [a, b, d] = numbers(&day.credits);
                rows.push([project.clone(), day.user.clone(), day.day.clone(), a, b, d]);
            }
            let [a, b, d] = numbers(sums);
            rows.push([project.clone(), "*".into(), "total".into(), a, b, d]);
        }
        let [a, b, d] = numbers(&self.total);
        rows.push(["TOTAL".into(), String::new(), String::new(), a, b, d]);

        let mut widths = [0usize; 6];
        for row in &rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let mut out = format!(
            "A = {} (--baseline)\nB = {} (--pricing)\n",
            self.baseline_policy, self.pricing_policy
        );
        for row in &rows {
            let mut line = String::new();
            for (column, (cell, width)) in row.iter().zip(widths).enumerate() {
                let pad = width - cell.chars().count();
                // Names to the left, numbers to the right.
                if column < 3 {
                    line.push_str(cell);
                    line.push_str(&" ".repeat(pad));
                } else {
                    line.push_str(&" ".repeat(pad));
                    line.push_str(cell);
                }
                line.push_str("  ");
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::replay::{DailyRow, MultiplicatorsReport};

    fn report(daily: &[(&str, &str, &str, f64)]) -> ReplayReport {
        ReplayReport {
            projects: BTreeMap::new(),
            daily: daily
                .iter()
                .map(|(project, user, day, credits)| DailyRow {
                    project: project.to_string(),
                    user: user.to_string(),
                    day: day.to_string(),
                    credits: *credits,
                })
                .collect(),
            multiplicators: MultiplicatorsReport {
                general: 1.0,
                gpu: 1.0,
            },
        }
    }

    #[test]
    fn the_comparison_covers_days_either_policy_charged() {
        let a = report(&[
            ("P", "u", "2024-01-01", 10.0),
            ("Q", "v", "2024-01-02", 4.0),
        ]);
        let b = report(&[
            ("P", "u", "2024-01-01", 25.0),
            ("P", "w", "2024-01-01", 1.5),
        ]);
        let comparison = Comparison::of("builtin:a", &a, "builtin:b", &b);
        let days: Vec<(&str, &str, Credits)> = comparison
            .daily
            .iter()
            .map(|d| (d.project.as_str(), d.user.as_str(), d.credits))
            .collect();
        assert_eq!(
            days,
            [
                ("P", "u", Credits::new(10.0, 25.0)),
                ("P", "w", Credits::new(0.0, 1.5)),
                ("Q", "v", Credits::new(4.0, 0.0)),
            ]
        );
        assert_eq!(comparison.projects["P"], Credits::new(10.0, 26.5));
        assert_eq!(comparison.projects["Q"], Credits::new(4.0, 0.0));
        assert_eq!(comparison.total, Credits::new(14.0, 26.5));
        assert_eq!(comparison.total.difference, 12.5);
    }

    #[test]
    fn the_table_is_aligned_with_sums_per_project_and_a_total() {
        let a = report(&[
            ("P", "u", "2024-01-01", 10.0),
            ("Quota-7", "v", "2024-01-02", 4.0),
        ]);
        let b = report(&[("P", "u", "2024-01-01", 125.0)]);
        let table = Comparison::of("builtin:a", &a, "builtin:b", &b).table();
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines[0], "A = builtin:a (--baseline)");
        assert_eq!(lines[1], "B = builtin:b (--pricing)");
        let expected = [
            "PROJECT  USER  DAY                 A           B       B - A",
            "P        u     2024-01-01  10.000000  125.000000  115.000000",
            "P        *     total       10.000000  125.000000  115.000000",
            "Quota-7  v     2024-01-02   4.000000    0.000000   -4.000000",
            "Quota-7  *     total        4.000000    0.000000   -4.000000",
            "TOTAL                      14.000000  125.000000  111.000000",
        ];
        assert_eq!(&lines[2..], expected, "\n{table}");
    }
}
