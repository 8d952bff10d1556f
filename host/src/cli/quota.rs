//! `weft quota …`: projects' budgets on a running server — every project
//! as a table (credits left, used, burn rate, state), one project in full
//! (daily use, grants), and grants by administrators — with `--json`.
//! `weft accounting export`: ended apps' records as CSV or JSON lines.

use std::io::Write;

use anyhow::Context;
use clap::{Subcommand, ValueEnum};
use serde_json::{Value, json};

use crate::accounting::export;
use crate::client::{ServerArgs, encode};
use crate::cluster::AccountingRecord;

#[derive(Debug, Subcommand)]
pub(super) enum QuotaCommand {
    /// Every project: credits left, used, burn rate per hour, state.
    List {
        #[command(flatten)]
        server: ServerArgs,
        /// Print GET /ws/v1/quota/budgets as JSON.
        #[arg(long)]
        json: bool,
    },
    /// One project: balance, burn rate, daily use per user, latest grants.
    Show {
        project: String,
        #[command(flatten)]
        server: ServerArgs,
        /// Print GET /ws/v1/quota/projects/PROJECT as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Add credits to a project (administrators): a grant or a top-up.
    Grant {
        project: String,
        /// Credits to add (above 0, at most 1e12).
        credits: f64,
        #[command(flatten)]
        server: ServerArgs,
    },
}

pub(super) fn run(command: QuotaCommand) -> anyhow::Result<()> {
    match command {
        QuotaCommand::List { server, json } => {
            let budgets = server.client()?.get("/ws/v1/quota/budgets")?;
            if json {
                println!("{}", serde_json::to_string_pretty(&budgets)?);
            } else {
                print!("{}", budgets_table(&budgets));
            }
        }
        QuotaCommand::Show {
            project,
            server,
            json,
        } => {
            let path = format!("/ws/v1/quota/projects/{}", encode(&project));
            let detail = server.client()?.get(&path)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&detail)?);
            } else {
                print!("{}", project_text(&detail));
            }
        }
        QuotaCommand::Grant {
            project,
            credits,
            server,
        } => {
            let path = format!("/ws/v1/quota/projects/{}/grant", encode(&project));
            let budget = server
                .client()?
                .post_json(&path, &json!({ "credits": credits }))?;
            println!(
                "granted {credits} credits to {project}: {} left ({})",
                figure(&budget["remaining"]),
                budget["state"].as_str().unwrap_or("?")
            );
        }
    }
    Ok(())
}

fn figure(value: &Value) -> String {
    value.as_f64().map_or("-".into(), |x| format!("{x:.2}"))
}

fn budgets_table(budgets: &Value) -> String {
    let mut out = format!(
        "{:<24} {:>14} {:>14} {:>12} {:>10} {}\n",
        "PROJECT", "REMAINING", "USED", "LAST HOUR", "HOURS LEFT", "STATE"
    );
    for project in budgets["projects"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "{:<24} {:>14} {:>14} {:>12} {:>10} {}\n",
            project["project"].as_str().unwrap_or("?"),
            figure(&project["remaining"]),
            figure(&project["total_used"]),
            figure(&project["burn_rate_per_hour"]),
            project["hours_left"]
                .as_f64()
                .map_or("-".into(), |h| format!("{h:.1}")),
            project["state"].as_str().unwrap_or("?"),
        ));
    }
    out.push_str(&format!(
        "budgets: {} (warn below {} credits)\n",
        budgets["enforce"].as_str().unwrap_or("?"),
        figure(&budgets["warn_credits"])
    ));
    out
}

fn project_text(detail: &Value) -> String {
    let mut out = format!(
        "project    {}\nremaining  {}\nused       {}\nlast hour  {} credits spent\nstate      {} (budgets: {})\n",
        detail["project"].as_str().unwrap_or("?"),
        figure(&detail["remaining"]),
        figure(&detail["total_used"]),
        figure(&detail["burn_rate_per_hour"]),
        detail["state"].as_str().unwrap_or("?"),
        detail["enforce"].as_str().unwrap_or("?"),
    );
    out.push_str(&format!(
        "\n{:<12} {:<20} {:>14}\n",
        "DAY", "USER", "CREDITS"
    ));
    for row in detail["daily"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "{:<12} {:<20} {:>14}\n",
            row["day"].as_str().unwrap_or("?"),
            row["user"].as_str().unwrap_or("?"),
            figure(&row["credits"]),
        ));
    }
    let grants = detail["grants"].as_array().cloned().unwrap_or_default();
    if !grants.is_empty() {
        out.push_str(&format!(
            "\n{:<24} {:>14} {:<20}\n",
            "GRANTED AT (UTC)", "CREDITS", "BY"
        ));
        for grant in &grants {
            let at = grant["at_ms"]
                .as_i64()
                .and_then(chrono::DateTime::from_timestamp_millis)
                .map_or("?".into(), |t| t.format("%Y-%m-%d %H:%M:%S").to_string());
            out.push_str(&format!(
                "{:<24} {:>14} {:<20}\n",
                at,
                figure(&grant["credits"]),
                grant["granted_by"].as_str().unwrap_or("?"),
            ));
        }
    }
    out
}

#[derive(Debug, Subcommand)]
pub(super) enum AccountingCommand {
    /// Ended apps' records (user, app, queue, project, memorySeconds,
    /// vcoreSeconds, gpuSeconds, containers, times, final status, credits),
    /// oldest first, every page of them.
    Export {
        #[command(flatten)]
        server: ServerArgs,
        /// Finished at or after: ms since the epoch, YYYY-MM-DD or RFC 3339.
        #[arg(long)]
        from: Option<String>,
        /// Finished before (same forms).
        #[arg(long)]
        to: Option<String>,
        #[arg(long)]
        project: Option<String>,
        /// One user's records (--user is who asks).
        #[arg(long = "for-user", value_name = "USER")]
        for_user: Option<String>,
        #[arg(long, value_enum, default_value = "csv")]
        format: ExportFormat,
        /// Records asked for per request (1 to 10,000).
        #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=10_000))]
        page_size: u64,
        /// Write here instead of standard output.
        #[arg(long, short)]
        output: Option<std::path::PathBuf>,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(super) enum ExportFormat {
    /// One header line, then one line per app (RFC 4180).
    Csv,
    /// One JSON object per line.
    Jsonl,
}

pub(super) fn run_accounting(command: AccountingCommand) -> anyhow::Result<()> {
    let AccountingCommand::Export {
        server,
        from,
        to,
        project,
        for_user,
        format,
        page_size,
        output,
    } = command;
    let client = server.client()?;
    let mut out: Box<dyn Write> = match &output {
        Some(path) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let mut base = format!("/ws/v1/accounting?format=json&limit={page_size}");
    for (name, value) in [
        ("from", &from),
        ("to", &to),
        ("project", &project),
        ("user", &for_user),
    ] {
        if let Some(value) = value {
            base.push_str(&format!("&{name}={}", encode(value)));
        }
    }
    let mut after: Option<u64> = None;
    let mut count = 0usize;
    loop {
        let path = match &after {
            Some(cursor) => format!("{base}&after={cursor}"),
            None => base.clone(),
        };
        let page = client.get(&path)?;
        // The header once the server answered: a refusal leaves no file
        // that looks like an empty export.
        if count == 0 && after.is_none() && matches!(format, ExportFormat::Csv) {
            out.write_all(export::csv_header().as_bytes())?;
        }
        let records: Vec<AccountingRecord> = serde_json::from_value(page["records"].clone())
            .context("the server's accounting page is not a list of records")?;
        for record in &records {
            match format {
                ExportFormat::Csv => out.write_all(export::csv_line(record).as_bytes())?,
                ExportFormat::Jsonl => {
                    serde_json::to_writer(&mut out, record)?;
                    out.write_all(b"\n")?;
                }
            }
        }
        count += records.len();
        match page["next"].as_u64() {
            Some(next) if !records.is_empty() => after = Some(next),
            _ => break,
        }
    }
    out.flush()?;
    if let Some(path) = output {
        eprintln!("{count} records written to {}", path.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_show_each_project_and_dashes_for_what_is_missing() {
        let budgets = json!({
            "enforce": "refuse-new", "warn_credits": 100.0, "default_credits": 0.0,
            "projects": [
                {"project": "genomics", "remaining": 250.5, "total_used": 49.5,
                 "burn_rate_per_hour": 10.0, "hours_left": 25.05, "state": "ok"},
                {"project": "physics", "remaining": -1.0, "total_used": 11.0,
                 "burn_rate_per_hour": 0.0, "hours_left": null, "state": "exhausted"}
            ]
        });
        let text = budgets_table(&budgets);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(
            lines[1].starts_with("genomics")
                && lines[1].contains("250.50")
                && lines[1].contains("25.1"),
            "{text}"
        );
        assert!(
            lines[2].contains("-1.00")
                && lines[2].contains(" - ")
                && lines[2].ends_with("exhausted"),
            "{text}"
        );
        assert!(lines[3].contains("refuse-new"), "{text}");

        let detail = json!({
            "project": "genomics", "remaining": 250.5, "total_used": 49.5,
            "burn_rate_per_hour": 10.0, "state": "ok", "enforce": "off",
            "daily": [{"day": "2026-11-23", "user": "alice", "credits": 49.5}],
            "grants": [{"at_ms": 0, "credits": 300.0, "granted_by": "admin"}]
        });
        let text = project_text(&detail);
        assert!(
            text.contains("2026-11-23   alice") && text.contains("49.50"),
            "{text}"
        );
        assert!(
            text.contains("1970-01-01 00:00:00")
                && text.contains("300.00")
                && text.contains("admin"),
            "{text}"
        );
    }
}
