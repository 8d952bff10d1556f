//! `weft queue list`: the queue tree of a running server as a table —
//! configured, maximum and absolute capacities, what each queue uses (of
//! its capacity and of the cluster), its apps and what they still ask for
//! (seed 002 §5.4) — or as JSON for scripts; `weft queue usage`: each
//! queue's and user's fading use; `weft queue conf`: changes to the queues
//! through the API, as `yarn schedulerconf` makes them.

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
    /// Change the queues of a running server, as `yarn schedulerconf`
    /// does (yarn.scheduler.configuration.store.class not file), all
    /// changes or none; with no change, print the properties in force.
    Conf(ConfArgs),
}

#[derive(Debug, clap::Args)]
pub(super) struct ConfArgs {
    #[command(flatten)]
    server: ServerArgs,
    /// Queues to add, by full path, each with its properties:
    /// "root.a:capacity=10,maximum-capacity=100;root.b:capacity=0"
    /// (`\,` for a comma in a value).
    #[arg(long)]
    add: Option<String>,
    /// Queues to remove, each STOPPED first: "root.a;root.b".
    #[arg(long)]
    remove: Option<String>,
    /// Queues whose properties change, as --add; "key=" unsets one.
    #[arg(long)]
    update: Option<String>,
    /// Global properties by full name: "yarn.scheduler.capacity.maximum-applications=5000".
    #[arg(long)]
    global: Option<String>,
    /// Check the changes and print the properties they would give, without
    /// applying them.
    #[arg(long)]
    validate: bool,
    /// Drop every change made through the API: the queue file and settings
    /// are the configuration again.
    #[arg(long, conflicts_with_all = ["add", "remove", "update", "global", "validate"])]
    format: bool,
}

pub(super) fn run(command: QueueCommand) -> anyhow::Result<()> {
    let (server, json) = match command {
        QueueCommand::List { server, json } => (server, json),
        QueueCommand::Conf(args) => return conf(args),
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

/// `weft queue conf`: a change (or its check), a format, or the properties
/// in force.
fn conf(args: ConfArgs) -> anyhow::Result<()> {
    let client = args.server.client()?;
    if args.format {
        println!(
            "{}",
            client.get_text("/ws/v1/cluster/scheduler-conf/format")?
        );
        return Ok(());
    }
    let body = conf_update(
        args.add.as_deref(),
        args.remove.as_deref(),
        args.update.as_deref(),
        args.global.as_deref(),
    )?;
    if args.validate {
        let answer = client.post_json("/ws/v1/cluster/scheduler-conf/validate", &body)?;
        print_properties(&answer);
    } else if body.as_object().is_some_and(|o| !o.is_empty()) {
        println!(
            "{}",
            client.put_json_once("/ws/v1/cluster/scheduler-conf", &body)?
        );
    } else {
        print_properties(&client.get("/ws/v1/cluster/scheduler-conf")?);
    }
    Ok(())
}

fn print_properties(answer: &Value) {
    for property in answer["property"].as_array().map_or(&[][..], |p| p) {
        println!(
            "{}={}",
            property["name"].as_str().unwrap_or("?"),
            property["value"].as_str().unwrap_or("")
        );
    }
}

/// YARN's SchedConfUpdateInfo as JSON, from `yarn schedulerconf`'s
/// arguments: `;` between queues, `:` after a queue's path, `,` between
/// pairs (`\,` inside a value), `key=value`, `key=` to unset.
fn conf_update(
    add: Option<&str>,
    remove: Option<&str>,
    update: Option<&str>,
    global: Option<&str>,
) -> anyhow::Result<Value> {
    let mut body = serde_json::Map::new();
    let queues = |spec: &str| -> anyhow::Result<Value> {
        let mut queues = Vec::new();
        for part in spec.split(';').filter(|p| !p.trim().is_empty()) {
            let (path, pairs) = part.split_once(':').unwrap_or((part, ""));
            queues.push(serde_json::json!({
                "queue-name": path.trim(),
                "params": { "entry": entries(pairs)? },
            }));
        }
        Ok(Value::Array(queues))
    };
    if let Some(spec) = add {
        body.insert("add-queue".into(), queues(spec)?);
    }
    if let Some(spec) = update {
        body.insert("update-queue".into(), queues(spec)?);
    }
    if let Some(spec) = remove {
        let paths: Vec<Value> = spec
            .split(';')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| Value::String(p.into()))
            .collect();
        body.insert("remove-queue".into(), Value::Array(paths));
    }
    if let Some(spec) = global {
        body.insert(
            "global-updates".into(),
            serde_json::json!({ "entry": entries(spec)? }),
        );
    }
    Ok(Value::Object(body))
}

/// `k=v,k2=,…` as YARN's entries: `k2=` without a value.
fn entries(pairs: &str) -> anyhow::Result<Vec<Value>> {
    let mut entries = Vec::new();
    for pair in split_unescaped_commas(pairs) {
        if pair.trim().is_empty() {
            continue;
        }
        let mut parts = pair.split('=');
        let (Some(key), Some(value), None) = (parts.next(), parts.next(), parts.next()) else {
            anyhow::bail!("{pair:?} is not key=value (key= unsets the property)");
        };
        let mut entry = serde_json::json!({ "key": key.trim() });
        if !value.is_empty() {
            entry["value"] = Value::String(value.into());
        }
        entries.push(entry);
    }
    Ok(entries)
}

/// `a=1,b=x\,y` as `["a=1", "b=x,y"]`.
fn split_unescaped_commas(text: &str) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    parts.last_mut().expect("one part at least").push(next);
                }
            }
            ',' => parts.push(String::new()),
            c => parts.last_mut().expect("one part at least").push(c),
        }
    }
    parts
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
    fn yarn_schedulerconf_arguments_become_its_json() {
        let body = conf_update(
            Some("root.a:capacity=10,acl_submit_applications=alice\\,bob;root.b:capacity=0"),
            Some("root.c; root.d"),
            Some("root.e:state="),
            Some("yarn.scheduler.capacity.maximum-applications=5000"),
        )
        .unwrap();
        assert_eq!(
            body,
            json!({
                "add-queue": [
                    {"queue-name": "root.a", "params": {"entry": [
                        {"key": "capacity", "value": "10"},
                        {"key": "acl_submit_applications", "value": "alice,bob"}]}},
                    {"queue-name": "root.b", "params": {"entry": [
                        {"key": "capacity", "value": "0"}]}}],
                "remove-queue": ["root.c", "root.d"],
                "update-queue": [{"queue-name": "root.e", "params": {"entry": [{"key": "state"}]}}],
                "global-updates": {"entry": [
                    {"key": "yarn.scheduler.capacity.maximum-applications", "value": "5000"}]},
            })
        );
        assert!(conf_update(Some("root.a:capacity"), None, None, None).is_err());
        assert!(conf_update(None, None, None, Some("a=b=c")).is_err());
        assert_eq!(conf_update(None, None, None, None).unwrap(), json!({}));
    }

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
