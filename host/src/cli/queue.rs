//! `weft queue list`: the queue tree of a running server as a table —
//! configured, maximum and absolute capacities, what each queue uses (of
//! its capacity and of the cluster), its apps and what they still ask for
//! (seed 002 §5.4) — or as JSON for scripts; `weft queue usage`: each
//! queue's and user's fading use.

use clap::Subcommand;
use serde_json::Value;

use crate::client::ServerArgs;

#[derive(Debug, Subcommand)]
pub(super) enum QueueCommand {
    /// Every queue: capacity, maximum, absolute figures, used, apps, pending.
    List {
        #[command(flatten)]
        server: ServerArgs,
        /// Print the scheduler's queue tree as JSON (GET /ws/v1/cluster/scheduler).
        #[arg(long)]
        json: bool,
    },
    /// Each queue's and user's use, fading by half every
    /// weft.scheduler.usage.half-life-ms (what fair-share policies weigh).
    Usage {
        #[command(flatten)]
        server: ServerArgs,
        /// The most users listed (those with the most use first).
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=10_000))]
        users: u64,
        /// Print GET /ws/v1/cluster/usage as JSON.
        #[arg(long)]
        json: bool,
    },
}

pub(super) fn run(command: QueueCommand) -> anyhow::Result<()> {
    let (server, json) = match command {
        QueueCommand::List { server, json } => (server, json),
        QueueCommand::Usage {
            server,
            users,
            json,
        } => return usage(&server, users, json),
    };
    let answer = server.client()?.get("/ws/v1/cluster/scheduler")?;
    let root = &answer["scheduler"]["schedulerInfo"];
    if json {
        println!("{}", serde_json::to_string_pretty(root)?);
        return Ok(());
    }
    print!("{}", table(root));
    Ok(())
}

/// `weft queue usage`: queues, then the users with the most use.
fn usage(server: &ServerArgs, users: u64, json: bool) -> anyhow::Result<()> {
    let answer = server
        .client()?
        .get(&format!("/ws/v1/cluster/usage?limit={users}"))?;
    let usage = &answer["usage"];
    if json {
        println!("{}", serde_json::to_string_pretty(usage)?);
        return Ok(());
    }
    let figure = |v: &Value, key: &str| format!("{:.0}", v[key].as_f64().unwrap_or(0.0));
    let half_life_h = usage["halfLifeMs"].as_f64().unwrap_or(0.0) / 3_600_000.0;
    println!("use fading by half every {half_life_h} h (0: not fading)");
    println!(
        "{:<40} {:>16} {:>14} {:>12}",
        "QUEUE", "MB-SECONDS", "VCORE-SECONDS", "GPU-SECONDS"
    );
    for q in usage["queues"].as_array().map_or(&[][..], |q| q) {
        println!(
            "{:<40} {:>16} {:>14} {:>12}",
            q["queue"].as_str().unwrap_or("-"),
            figure(q, "memorySeconds"),
            figure(q, "vcoreSeconds"),
            figure(q, "gpuSeconds")
        );
    }
    println!(
        "\n{:<40} {:>16} {:>14} {:>12}",
        "USER", "MB-SECONDS", "VCORE-SECONDS", "GPU-SECONDS"
    );
    for u in usage["users"].as_array().map_or(&[][..], |u| u) {
        println!(
            "{:<40} {:>16} {:>14} {:>12}",
            u["user"].as_str().unwrap_or("-"),
            figure(u, "memorySeconds"),
            figure(u, "vcoreSeconds"),
            figure(u, "gpuSeconds")
        );
    }
    Ok(())
}

/// The tree under `root` as rows, children indented under their parent.
fn table(root: &Value) -> String {
    let mut out = format!(
        "{:<28} {:>6} {:>6} {:>8} {:>8} {:>7} {:>8} {:<6} {:>5} {:>10} {:>7} {:>11}\n",
        "QUEUE",
        "CAP%",
        "MAX%",
        "ABSCAP%",
        "ABSMAX%",
        "USED%",
        "ABSUSED%",
        "BY",
        "APPS",
        "USED MB",
        "USED VC",
        "PENDING MB"
    );
    rows(root, 0, &mut out);
    // A cluster with node labels: each queue's share and use of each label.
    let mut labelled = String::new();
    partition_rows(root, 0, &mut labelled);
    if !labelled.is_empty() {
        out.push_str(&format!(
            "\n{:<28} {:<14} {:>6} {:>6} {:>8} {:>8} {:>8} {:>10} {:>7} {:>11}\n",
            "QUEUE",
            "PARTITION",
            "CAP%",
            "MAX%",
            "ABSCAP%",
            "ABSMAX%",
            "ABSUSED%",
            "USED MB",
            "USED VC",
            "PENDING MB"
        ));
        out.push_str(&labelled);
    }
    out
}

/// Each queue's figures of each node label (not the default partition,
/// which the first table shows), children under their parent.
fn partition_rows(queue: &Value, depth: usize, out: &mut String) {
    let name = format!(
        "{}{}",
        "  ".repeat(depth),
        queue["queueName"].as_str().unwrap_or("?")
    );
    let capacities = queue["capacities"]["queueCapacitiesByPartition"].as_array();
    let usages = queue["resources"]["resourceUsagesByPartition"].as_array();
    for capacity in capacities.into_iter().flatten() {
        let partition = capacity["partitionName"].as_str().unwrap_or("");
        if partition.is_empty() {
            continue;
        }
        let usage = usages
            .into_iter()
            .flatten()
            .find(|u| u["partitionName"].as_str() == Some(partition))
            .unwrap_or(&Value::Null);
        let percent = |field: &str| match capacity[field].as_f64() {
            Some(x) => format!("{x:.1}"),
            None => "-".into(),
        };
        let whole = |value: &Value| value.as_u64().map_or("-".into(), |x| x.to_string());
        out.push_str(&format!(
            "{:<28} {:<14} {:>6} {:>6} {:>8} {:>8} {:>8} {:>10} {:>7} {:>11}\n",
            name,
            partition,
            percent("capacity"),
            percent("maxCapacity"),
            percent("absoluteCapacity"),
            percent("absoluteMaxCapacity"),
            percent("absoluteUsedCapacity"),
            whole(&usage["used"]["memory"]),
            whole(&usage["used"]["vCores"]),
            whole(&usage["pending"]["memory"]),
        ));
    }
    for child in queue["queues"]["queue"].as_array().into_iter().flatten() {
        partition_rows(child, depth + 1, out);
    }
}

fn rows(queue: &Value, depth: usize, out: &mut String) {
    let percent = |field: &str| match queue[field].as_f64() {
        Some(x) => format!("{x:.1}"),
        None => "-".into(),
    };
    let whole = |value: &Value| value.as_u64().map_or("-".into(), |x| x.to_string());
    let name = format!(
        "{}{}",
        "  ".repeat(depth),
        queue["queueName"].as_str().unwrap_or("?")
    );
    out.push_str(&format!(
        "{:<28} {:>6} {:>6} {:>8} {:>8} {:>7} {:>8} {:<6} {:>5} {:>10} {:>7} {:>11}\n",
        name,
        percent("capacity"),
        percent("maxCapacity"),
        percent("absoluteCapacity"),
        percent("absoluteMaxCapacity"),
        percent("usedCapacity"),
        percent("absoluteUsedCapacity"),
        queue["dominantResource"].as_str().unwrap_or("-"),
        whole(&queue["numApplications"]),
        whole(&queue["resourcesUsed"]["memory"]),
        whole(&queue["resourcesUsed"]["vCores"]),
        whole(&queue["pendingResources"]["memory"]),
    ));
    for child in queue["queues"]["queue"].as_array().into_iter().flatten() {
        rows(child, depth + 1, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn children_are_indented_under_their_parent_and_missing_figures_are_dashes() {
        let root = json!({
            "queueName": "root", "capacity": 100.0, "maxCapacity": 100.0,
            "absoluteCapacity": 100.0, "absoluteMaxCapacity": 100.0,
            "usedCapacity": 12.5, "absoluteUsedCapacity": 12.5, "numApplications": 2,
            "resourcesUsed": {"memory": 2048, "vCores": 2},
            "pendingResources": {"memory": 1024, "vCores": 1},
            "queues": {"queue": [{"queueName": "default", "capacity": 40.0}]}
        });
        let text = table(&root);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].starts_with("QUEUE"));
        assert!(lines[1].starts_with("root "), "{text}");
        assert!(
            lines[1].contains("12.5") && lines[1].contains("2048"),
            "{text}"
        );
        assert!(lines[2].starts_with("  default "), "{text}");
        assert!(
            lines[2].contains("40.0") && lines[2].contains(" -"),
            "{text}"
        );
    }
}
