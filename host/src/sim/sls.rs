//! Hadoop SLS inputs as a `weft simulate` scenario: a job trace (SLS JSON:
//! jobs with `job.start.ms`, `job.queue.name`, `job.user` and `job.tasks`)
//! and optionally a node list (`nodes.json`, racks of nodes, each with an
//! optional `memory-mb` and `vcores`). Sizes not given are SLS's defaults
//! from sls-runner.xml: 10240 MB and 10 vcores a node, 1024 MB and 1 vcore a
//! container.

use std::collections::BTreeSet;

use serde::Deserialize;

use super::simulate::{NodeGroup, PolicySpec, QueueSpec, Scenario, ScenarioApp};
use crate::cluster::AskSpec;

pub const NODE_MEMORY_MB: u64 = 10240;
pub const NODE_VCORES: u32 = 10;
pub const CONTAINER_MEMORY_MB: u64 = 1024;
pub const CONTAINER_VCORES: u32 = 1;

#[derive(Debug, Deserialize)]
struct Job {
    #[serde(rename = "job.start.ms")]
    start_ms: u64,
    #[serde(rename = "job.queue.name", default = "default_queue")]
    queue: String,
    #[serde(rename = "job.id")]
    id: String,
    #[serde(rename = "job.user", default = "default_user")]
    user: String,
    #[serde(rename = "job.tasks", default)]
    tasks: Vec<Task>,
}

fn default_queue() -> String {
    "default".into()
}

fn default_user() -> String {
    "default".into()
}

#[derive(Debug, Deserialize)]
struct Task {
    #[serde(rename = "container.host", default)]
    host: Option<String>,
    #[serde(rename = "container.start.ms")]
    start_ms: u64,
    #[serde(rename = "container.end.ms")]
    end_ms: u64,
    #[serde(rename = "container.memory", default)]
    memory_mb: Option<u64>,
    #[serde(rename = "container.vcores", default)]
    vcores: Option<u32>,
}

#[derive(Debug, Deserialize)]
struct Rack {
    nodes: Vec<SlsNode>,
}

#[derive(Debug, Deserialize)]
struct SlsNode {
    /// Real node lists hold empty entries (`{}`); those are skipped.
    node: Option<String>,
    #[serde(rename = "memory-mb", default)]
    memory_mb: Option<u64>,
    #[serde(default)]
    vcores: Option<u32>,
}

/// SLS files hold one JSON value after another, not an array.
fn values<T: for<'de> Deserialize<'de>>(text: &str, what: &str) -> Result<Vec<T>, String> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<T>()
        .enumerate()
        .map(|(i, value)| value.map_err(|e| format!("{what} entry {}: {e}", i + 1)))
        .collect()
}

/// A scenario from an SLS trace and, if given, an SLS node list.
pub fn scenario(trace: &str, nodes: Option<&str>) -> Result<Scenario, String> {
    let jobs: Vec<Job> = values(trace, "SLS job")?;
    if jobs.is_empty() {
        return Err("the SLS trace holds no jobs".into());
    }
    let node_groups = match nodes {
        Some(text) => values::<Rack>(text, "SLS rack")?
            .into_iter()
            .flat_map(|rack| rack.nodes)
            .filter(|node| node.node.is_some())
            .map(|node| NodeGroup {
                count: 1,
                memory_mb: node.memory_mb.unwrap_or(NODE_MEMORY_MB),
                vcores: node.vcores.unwrap_or(NODE_VCORES),
                gpus: 0,
            })
            .collect(),
        // Without a node list, one default node per host the trace names.
        None => {
            let hosts: BTreeSet<&str> = jobs
                .iter()
                .flat_map(|j| &j.tasks)
                .filter_map(|t| t.host.as_deref())
                .collect();
            vec![NodeGroup {
                count: hosts.len().max(1) as u32,
                memory_mb: NODE_MEMORY_MB,
                vcores: NODE_VCORES,
                gpus: 0,
            }]
        }
    };
    let mut apps = Vec::new();
    for job in jobs {
        if job.tasks.is_empty() {
            return Err(format!("SLS job {} has no tasks", job.id));
        }
        let asks = job
            .tasks
            .iter()
            .map(|task| {
                let duration_ms = task
                    .end_ms
                    .checked_sub(task.start_ms)
                    .filter(|d| *d > 0)
                    .ok_or_else(|| {
                        format!(
                            "SLS job {}: a task ends ({}) no later than it starts ({})",
                            job.id, task.end_ms, task.start_ms
                        )
                    })?;
                Ok(AskSpec {
                    count: 1,
                    memory_mb: task.memory_mb.unwrap_or(CONTAINER_MEMORY_MB),
                    vcores: task.vcores.unwrap_or(CONTAINER_VCORES),
                    gpus: 0,
                    duration_ms,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        apps.push(ScenarioApp {
            submit_ms: job.start_ms,
            name: Some(job.id),
            project: job.user.clone(),
            user: job.user,
            queue: job.queue,
            priority: 0,
            asks,
            reservation: None,
        });
    }
    Ok(Scenario {
        nodes: node_groups,
        queues: QueueSpec::default(),
        policies: PolicySpec::default(),
        settings: Default::default(),
        observe_at_ms: Vec::new(),
        scheduling_interval_ms: 1000,
        end_ms: None,
        apps,
        reservations: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_sls_inputs_become_a_scenario() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/sls");
        let trace = std::fs::read_to_string(dir.join("inputsls.json")).unwrap();
        let nodes = std::fs::read_to_string(dir.join("nodes-with-resources.json")).unwrap();
        let scenario = scenario(&trace, Some(&nodes)).unwrap();
        assert_eq!(scenario.apps.len(), 2);
        assert_eq!(scenario.apps[0].queue, "sls_queue_1");
        assert_eq!(scenario.apps[0].asks[0].memory_mb, CONTAINER_MEMORY_MB);
        assert_eq!(scenario.nodes[0].memory_mb, 2048);
        assert_eq!(scenario.nodes[1].memory_mb, NODE_MEMORY_MB);
        let without_nodes = super::scenario(&trace, None).unwrap();
        assert!(without_nodes.nodes[0].count >= 1);
        assert!(super::scenario("", None).is_err());
        assert!(super::scenario(r#"{"job.start.ms": 0, "job.id": "j", "job.tasks": [{"container.start.ms": 5, "container.end.ms": 5}]}"#, None).is_err());
    }
}
