//! Hadoop SLS inputs as a `weft simulate` scenario: a job trace (SLS JSON:
//! jobs with `job.start.ms`, `job.queue.name`, `job.user` and `job.tasks`)
//! and optionally a node list (`nodes.json`, racks of nodes, each with an
//! optional `memory-mb` and `vcores`). Sizes not given are SLS's defaults
//! from sls-runner.xml: 10240 MB and 10 vcores a node, 1024 MB and 1 vcore a
//! container. Times, sizes and counts are checked against the documented
//! maxima (`crate::limits`), naming the job, task or node and the SLS field.

use std::collections::BTreeSet;

use serde::Deserialize;

use super::simulate::{NodeGroup, PolicySpec, QueueSpec, Scenario, ScenarioApp};
use crate::cluster::AskSpec;
use crate::limits::{
    self, MAX_ASKS_PER_APP, MAX_DURATION_MS, MAX_MEMORY_MB, MAX_NODES, MAX_TIME_MS, MAX_VCORES,
};

/// A node's memory, in MB, when the node list gives none or there is no
/// node list (SLS's `yarn.sls.nm.memory.mb`).
pub const NODE_MEMORY_MB: u64 = 10240;
/// A node's vcores when the node list gives none or there is no node list
/// (SLS's `yarn.sls.nm.vcores`).
pub const NODE_VCORES: u32 = 10;
/// A task's memory, in MB, when the trace gives no `container.memory`
/// (SLS's `yarn.sls.container.memory.mb`).
pub const CONTAINER_MEMORY_MB: u64 = 1024;
/// A task's vcores when the trace gives no `container.vcores` (SLS's
/// `yarn.sls.container.vcores`).
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
    /// Its name (`rack1`): the nodes' network location is `/rack1`.
    #[serde(default)]
    rack: Option<String>,
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
        Some(text) => {
            let nodes: Vec<(Option<String>, SlsNode)> = values::<Rack>(text, "SLS rack")?
                .into_iter()
                .flat_map(|rack| {
                    let path = rack
                        .rack
                        .map(|name| format!("/{}", name.trim_start_matches('/')));
                    rack.nodes.into_iter().map(move |node| (path.clone(), node))
                })
                .filter(|(_, node)| node.node.is_some())
                .collect();
            limits::at_most("the SLS node list", nodes.len(), MAX_NODES)
                .map_err(|e| e.to_string())?;
            nodes
                .iter()
                .map(|(rack, node)| node_group(node, rack.clone()))
                .collect::<Result<_, _>>()?
        }
        // Without a node list, one default node per host the trace names.
        None => {
            let hosts: BTreeSet<&str> = jobs
                .iter()
                .flat_map(|j| &j.tasks)
                .filter_map(|t| t.host.as_deref())
                .collect();
            limits::at_most("the hosts the SLS trace names", hosts.len(), MAX_NODES)
                .map_err(|e| e.to_string())?;
            vec![NodeGroup {
                // At most MAX_NODES, checked just above: fits a u32.
                count: hosts.len().max(1) as u32,
                memory_mb: NODE_MEMORY_MB,
                vcores: NODE_VCORES,
                gpus: 0,
                label: None,
                rack: None,
                attributes: Default::default(),
            }]
        }
    };
    let apps = jobs.into_iter().map(app).collect::<Result<Vec<_>, _>>()?;
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
        labels: Vec::new(),
    })
}

/// A node of the node list on `rack`, of its given or SLS's default size.
fn node_group(node: &SlsNode, rack: Option<String>) -> Result<NodeGroup, String> {
    let name = node.node.as_deref().unwrap_or_default();
    let memory_mb = node.memory_mb.unwrap_or(NODE_MEMORY_MB);
    let vcores = node.vcores.unwrap_or(NODE_VCORES);
    let field = |what: &str| format!("SLS node {name:?}: {what}");
    limits::within(field("memory-mb"), memory_mb, 1, MAX_MEMORY_MB).map_err(|e| e.to_string())?;
    limits::within(field("vcores"), vcores, 1, MAX_VCORES).map_err(|e| e.to_string())?;
    if let Some(rack) = &rack {
        limits::rack(field("rack"), rack).map_err(|e| e.to_string())?;
    }
    Ok(NodeGroup {
        count: 1,
        memory_mb,
        vcores,
        gpus: 0,
        label: None,
        rack,
        attributes: Default::default(),
    })
}

/// A job as an app with one ask (one container) per task.
fn app(job: Job) -> Result<ScenarioApp, String> {
    limits::name("SLS job.id", &job.id).map_err(|e| e.to_string())?;
    let label = format!("SLS job {}", job.id);
    let bounds = |e: limits::OutOfBounds| e.to_string();
    limits::name(format_args!("{label}: job.user"), &job.user).map_err(bounds)?;
    limits::name(format_args!("{label}: job.queue.name"), &job.queue).map_err(bounds)?;
    limits::within(
        format_args!("{label}: job.start.ms"),
        job.start_ms,
        0,
        MAX_TIME_MS,
    )
    .map_err(bounds)?;
    if job.tasks.is_empty() {
        return Err(format!("{label} has no tasks"));
    }
    // Tasks of one size and duration are one ask of the app (its
    // containers are interchangeable), so a job of many like tasks fits
    // the bound on asks.
    limits::at_most(
        format_args!("{label}: job.tasks"),
        job.tasks.len(),
        limits::MAX_CONTAINERS_PER_ASK as usize,
    )
    .map_err(bounds)?;
    let mut asks: Vec<AskSpec> = Vec::new();
    for (index, task) in job.tasks.iter().enumerate() {
        let field = |what: &str| format!("{label}: job.tasks[{index}].{what}");
        limits::within(field("container.start.ms"), task.start_ms, 0, MAX_TIME_MS)
            .map_err(bounds)?;
        limits::within(field("container.end.ms"), task.end_ms, 0, MAX_TIME_MS).map_err(bounds)?;
        let duration_ms = task
            .end_ms
            .checked_sub(task.start_ms)
            .filter(|d| *d > 0)
            .ok_or_else(|| {
                format!(
                    "{label}: a task ends ({}) no later than it starts ({})",
                    task.end_ms, task.start_ms
                )
            })?;
        let duration = field("container.end.ms − container.start.ms");
        limits::within(duration, duration_ms, 1, MAX_DURATION_MS).map_err(bounds)?;
        let memory_mb = task.memory_mb.unwrap_or(CONTAINER_MEMORY_MB);
        let vcores = task.vcores.unwrap_or(CONTAINER_VCORES);
        limits::within(field("container.memory"), memory_mb, 1, MAX_MEMORY_MB).map_err(bounds)?;
        limits::within(field("container.vcores"), vcores, 1, MAX_VCORES).map_err(bounds)?;
        match asks.iter_mut().find(|a| {
            (a.memory_mb, a.vcores, a.duration_ms) == (memory_mb, vcores, Some(duration_ms))
        }) {
            Some(ask) => ask.count += 1,
            None => asks.push(AskSpec::sized(1, memory_mb, vcores, 0, duration_ms)),
        }
    }
    limits::at_most(
        format_args!("{label}: job.tasks of distinct size and duration"),
        asks.len(),
        MAX_ASKS_PER_APP,
    )
    .map_err(bounds)?;
    Ok(ScenarioApp {
        submit_ms: job.start_ms,
        name: Some(job.id),
        project: job.user.clone(),
        user: job.user,
        queue: job.queue,
        priority: 0,
        asks,
        reservation: None,
        lifetime_s: None,
        node_label_expression: None,
        application_type: Some("SLS".into()),
        tags: Vec::new(),
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

    #[test]
    fn out_of_range_sls_values_are_refused_naming_the_job_and_field() {
        let job = |start: u64, tasks: &str| {
            format!(r#"{{"job.start.ms": {start}, "job.id": "j1", "job.tasks": [{tasks}]}}"#)
        };
        let task = |start: u64, end: u64| {
            format!(r#"{{"container.start.ms": {start}, "container.end.ms": {end}}}"#)
        };
        let cases = [
            (
                job(MAX_TIME_MS + 1, &task(0, 1)),
                "SLS job j1: job.start.ms is 253402300800000, but must be from 0 to 253402300799999",
            ),
            (
                job(0, &task(0, u64::MAX)),
                "SLS job j1: job.tasks[0].container.end.ms is 18446744073709551615",
            ),
            (
                job(0, &task(0, MAX_DURATION_MS + 1)),
                "container.end.ms − container.start.ms is 2592000001, but must be from 1 to 2592000000",
            ),
            (
                job(
                    0,
                    r#"{"container.start.ms": 0, "container.end.ms": 1, "container.memory": 1073741825}"#,
                ),
                "job.tasks[0].container.memory is 1073741825",
            ),
            (
                job(
                    0,
                    &(1..=MAX_ASKS_PER_APP as u64 + 1)
                        .map(|end| task(0, end))
                        .collect::<Vec<_>>()
                        .join(","),
                ),
                "SLS job j1: job.tasks of distinct size and duration is 101 items, but may hold at most 100",
            ),
        ];
        // Like tasks are one ask: 101 of one size and duration are fine.
        let alike = super::scenario(&job(0, &vec![task(0, 1); 101].join(",")), None).unwrap();
        assert_eq!(alike.apps[0].asks.len(), 1);
        assert_eq!(alike.apps[0].asks[0].count, 101);
        for (trace, says) in cases {
            let error = super::scenario(&trace, None).unwrap_err();
            assert!(error.contains(says), "{error}");
        }
        let nodes = r#"{"rack": "r", "nodes": [{"node": "n1", "vcores": 5000}]}"#;
        let error = super::scenario(&job(0, &task(0, 1)), Some(nodes)).unwrap_err();
        assert!(
            error.contains(r#"SLS node "n1": vcores is 5000, but must be from 1 to 4096"#),
            "{error}"
        );
    }
}
