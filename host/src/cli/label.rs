//! `weft label`: a running server's node labels (YARN's partitions) —
//! list them, add and remove them, and set a node's (YARN's rmadmin
//! -addToClusterNodeLabels, -removeFromClusterNodeLabels,
//! -replaceLabelsOnNode and `yarn cluster --list-node-labels`).

use clap::Subcommand;
use serde_json::{Value, json};

use crate::client::{ServerArgs, encode};

#[derive(Debug, Subcommand)]
pub(super) enum LabelCommand {
    /// The cluster's labels: exclusive or not, and how many nodes are in each.
    List {
        #[command(flatten)]
        server: ServerArgs,
        /// Print GET /ws/v1/cluster/get-node-labels as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Adds labels (administrators). Exclusive unless --non-exclusive: a
    /// non-exclusive label lends its idle room to apps asking for no label.
    Add {
        /// The labels' names.
        #[arg(required = true)]
        names: Vec<String>,
        #[arg(long)]
        non_exclusive: bool,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Removes labels no node, queue or active app holds (administrators).
    Remove {
        /// The labels' names.
        #[arg(required = true)]
        names: Vec<String>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Sets a node's label, over what its agent named; without LABEL the
    /// node goes back to the default partition (administrators).
    Set {
        /// The node id.
        node: String,
        /// Its label.
        label: Option<String>,
        #[command(flatten)]
        server: ServerArgs,
    },
}

pub(super) fn run(command: LabelCommand) -> anyhow::Result<()> {
    let (answer, json) = match command {
        LabelCommand::List { server, json } => {
            let answer = server.client()?.get("/ws/v1/cluster/get-node-labels")?;
            (answer, json)
        }
        LabelCommand::Add {
            names,
            non_exclusive,
            server,
        } => {
            let labels: Vec<Value> = names
                .iter()
                .map(|name| json!({"name": name, "exclusivity": !non_exclusive}))
                .collect();
            let body = json!({"nodeLabelInfo": labels});
            let answer = server
                .client()?
                .post_json("/ws/v1/cluster/add-node-labels", &body)?;
            (answer, false)
        }
        LabelCommand::Remove { names, server } => {
            let query: Vec<String> = names
                .iter()
                .map(|name| format!("labels={}", encode(name)))
                .collect();
            let path = format!("/ws/v1/cluster/remove-node-labels?{}", query.join("&"));
            let answer = server.client()?.post(&path)?;
            (answer, false)
        }
        LabelCommand::Set {
            node,
            label,
            server,
        } => {
            let query = label.map_or(String::new(), |l| format!("?labels={}", encode(&l)));
            let path = format!(
                "/ws/v1/cluster/nodes/{}/replace-labels{query}",
                encode(&node)
            );
            server.client()?.post(&path)?;
            let answer = server.client()?.get("/ws/v1/cluster/get-node-labels")?;
            (answer, false)
        }
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&answer)?);
        return Ok(());
    }
    println!("{:<32} {:<14} {:>6}", "LABEL", "EXCLUSIVE", "NODES");
    for label in answer["nodeLabelInfo"].as_array().into_iter().flatten() {
        println!(
            "{:<32} {:<14} {:>6}",
            label["name"].as_str().unwrap_or("?"),
            label["exclusivity"].as_bool().unwrap_or(true),
            label["activeNMs"].as_u64().unwrap_or(0)
        );
    }
    Ok(())
}
