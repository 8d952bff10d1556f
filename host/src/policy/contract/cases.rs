//! Example cases for `weft policy test --cases FILE`: one JSON object per
//! line naming a call, its input and the expected answer. Inputs come from
//! outside, so each is checked against the guarantees the host gives its own
//! (equal column lengths, indices in range, finite numbers) before any call.
//!
//! ```text
//! {"name": "an hour of 1 GB", "charge": {"usage": {"seconds": [3600], "memory_mb": [1024], "vcores": [1], "gpus": [0]}, "multiplicators": {"general": 1, "gpu": 1}}, "expect": [1.0]}
//! {"name": "idle cluster", "multiplicators": {"memory": 0, "vcores": 0, "gpus": 0}, "expect": {"general": 1, "gpu": 1}}
//! {"name": "fits", "schedule": SNAPSHOT, "expect": {"ask": [0], "node": [0], "count": [2]}}
//! {"name": "victim", "preempt": {"snapshot": SNAPSHOT, "running": CONTAINERS}, "expect": [0]}
//! {"name": "a day", "window": PLAN_SETTINGS, "expect": 86400000}
//! {"name": "too big", "validate": ADMISSION, "expect": "over-commit"}
//! {"name": "room", "available": ADMISSION, "expect": TIMELINE}
//! ```
//!
//! Field names are the WIT's with `_` for `-`. `tolerance` (default 1e-9,
//! relative) applies to numbers compared. Inputs may leave out what
//! weft:policy@0.2.0 did not have (cases written for it still run): a
//! missing record is empty, a missing column of a record with rows is filled
//! as `records.rs` fills it, and `multiplicators` may be given a bare
//! utilization.

use crate::limits::MAX_POLICY_CASES;
use crate::limits::MAX_POLICY_CASES_BYTES;
use serde::Deserialize;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::policy::PolicyKind;
use crate::policy::bindings::{
    Admission, Apps, Asks, Containers, Market, Nodes, Placements, PlanContext, PlanSettings,
    PriceMultiplicators, Queues, Snapshot, Timeline, Usage,
};

/// The most rows, nodes, apps, asks, containers or steps one case's input may have.
pub(super) const MAX_COLUMN: usize = 100_000;

#[derive(Debug, Deserialize)]
struct CaseLine {
    name: String,
    #[serde(default)]
    tolerance: Option<f64>,
    expect: serde_json::Value,
    #[serde(flatten)]
    call: RawCall,
}

/// A call as written, its input not yet completed (see the module's docs).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
enum RawCall {
    Multiplicators(serde_json::Value),
    Charge {
        usage: serde_json::Value,
        multiplicators: PriceMultiplicators,
    },
    Schedule(serde_json::Value),
    Preempt {
        snapshot: serde_json::Value,
        running: serde_json::Value,
    },
    Window(PlanSettings),
    Validate(serde_json::Value),
    Available(serde_json::Value),
}

/// `given` laid over `template` (objects key by key, anything else
/// replaced), then read as a `T`.
fn over<T: Serialize + DeserializeOwned>(
    template: &T,
    given: serde_json::Value,
) -> Result<T, String> {
    fn merge(base: &mut serde_json::Value, given: serde_json::Value) {
        match (base, given) {
            (serde_json::Value::Object(base), serde_json::Value::Object(given)) => {
                for (key, value) in given {
                    match base.get_mut(&key) {
                        Some(slot) => merge(slot, value),
                        None => {
                            base.insert(key, value);
                        }
                    }
                }
            }
            (slot, value) => *slot = value,
        }
    }
    let mut base = serde_json::to_value(template).map_err(|e| e.to_string())?;
    merge(&mut base, given);
    serde_json::from_value(base).map_err(|e| e.to_string())
}

fn snapshot(given: serde_json::Value) -> Result<Snapshot, String> {
    let empty = Snapshot::of_columns(
        0,
        Nodes::empty(),
        Queues::empty(),
        Apps::empty(),
        Asks::empty(),
    );
    let given = over(&empty, given)?;
    // Bounded before anything is filled in for its rows.
    for (record, rows) in [
        ("nodes", given.nodes.free_memory_mb.len()),
        ("queues", given.queues.parent.len()),
        ("apps", given.apps.queue.len()),
        ("asks", given.asks.app.len()),
    ] {
        if rows > MAX_COLUMN {
            return Err(format!("{record} has {rows} rows; at most {MAX_COLUMN}"));
        }
    }
    Ok(given.complete())
}

fn admission(given: serde_json::Value) -> Result<Admission, String> {
    let empty = Admission {
        settings: PlanSettings {
            queue: String::new(),
            capacity: crate::policy::SharingResources {
                memory_mb: 0,
                vcores: 0,
                gpus: 0,
            },
            reservation_window_ms: 0,
            instantaneous_max_capacity: 100.0,
            average_capacity: 100.0,
        },
        user: String::new(),
        reservation_id: String::new(),
        from_ms: 0,
        to_ms: 0,
        candidate: crate::policy::validate::empty_timeline(),
        user_committed: crate::policy::validate::empty_timeline(),
        plan_committed: crate::policy::validate::empty_timeline(),
        context: PlanContext {
            now_ms: 0,
            reservation_name: String::new(),
            recurring: false,
            reservations: 0,
            user_reservations: 0,
            users: 0,
        },
    };
    over(&empty, given)
}

impl RawCall {
    fn complete(self) -> Result<Call, String> {
        Ok(match self {
            RawCall::Multiplicators(given) => {
                // A bare utilization, as 0.2.0 took it.
                let given = match given.get("utilization") {
                    None => serde_json::json!({ "utilization": given }),
                    Some(_) => given,
                };
                Call::Multiplicators(over(&crate::policy::sample_market(), given)?)
            }
            RawCall::Charge {
                usage,
                multiplicators,
            } => {
                let usage = over(&Usage::empty(), usage)?;
                if usage.seconds.len() > MAX_COLUMN {
                    return Err(format!("usage has more than {MAX_COLUMN} rows"));
                }
                Call::Charge {
                    usage: usage.complete(),
                    multiplicators,
                }
            }
            RawCall::Schedule(given) => Call::Schedule(Box::new(snapshot(given)?)),
            RawCall::Preempt {
                snapshot: s,
                running,
            } => Call::Preempt {
                snapshot: Box::new(snapshot(s)?),
                running: over(&Containers::empty(), running)?.complete(),
            },
            RawCall::Window(settings) => Call::Window(settings),
            RawCall::Validate(given) => Call::Validate(admission(given)?),
            RawCall::Available(given) => Call::Available(admission(given)?),
        })
    }
}

/// One call of a case, with its input.
#[derive(Debug)]
pub enum Call {
    Multiplicators(Market),
    Charge {
        usage: Usage,
        multiplicators: PriceMultiplicators,
    },
    // Boxed: snapshots are large, the other inputs small.
    Schedule(Box<Snapshot>),
    Preempt {
        snapshot: Box<Snapshot>,
        running: Containers,
    },
    Window(PlanSettings),
    Validate(Admission),
    Available(Admission),
}

impl Call {
    pub fn kind(&self) -> PolicyKind {
        match self {
            Call::Multiplicators(_) | Call::Charge { .. } => PolicyKind::Pricing,
            Call::Schedule(_) | Call::Preempt { .. } => PolicyKind::Scheduling,
            Call::Window(_) | Call::Validate(_) | Call::Available(_) => PolicyKind::Sharing,
        }
    }
}

/// What a case expects back.
#[derive(Debug, Clone, PartialEq)]
pub enum Expected {
    Multiplicators(PriceMultiplicators),
    Charges(Vec<f64>),
    Placements(Placements),
    Victims(Vec<u32>),
    Window(i64),
    /// `accept`, or the refusal's kind: `over-commit`, `instantaneous-quota`,
    /// `average-quota` (its message is not compared).
    Decision(String),
    Timeline(Timeline),
}

/// One example case of a case file, its input checked.
#[derive(Debug)]
pub struct Case {
    /// Its line in the file, from 1.
    pub line: usize,
    /// Its `name`, shown in the report.
    pub name: String,
    /// How far a number compared may be from the expected one, relative to
    /// the larger of the two (absolute below 1): `tolerance`, by default
    /// 1e-9.
    pub tolerance: f64,
    /// The call to make, with its input.
    pub call: Call,
    /// The answer the case expects (`expect`), typed by the call.
    pub expected: Expected,
}

/// Parses a case file, refusing the whole file on any bad line with the
/// line's number and what is wrong.
pub fn parse(text: &str) -> Result<Vec<Case>, String> {
    if text.len() > MAX_POLICY_CASES_BYTES {
        return Err(format!(
            "the case file has {} bytes; at most {MAX_POLICY_CASES_BYTES} are read",
            text.len()
        ));
    }
    let mut cases = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        if cases.len() == MAX_POLICY_CASES {
            return Err(format!(
                "line {number}: a case file holds at most {MAX_POLICY_CASES} cases"
            ));
        }
        let case = parse_line(line).map_err(|e| format!("line {number}: {e}"))?;
        cases.push(Case {
            line: number,
            ..case
        });
    }
    Ok(cases)
}

fn parse_line(line: &str) -> Result<Case, String> {
    let parsed: CaseLine = serde_json::from_str(line).map_err(|e| e.to_string())?;
    let call = parsed.call.complete()?;
    let tolerance = parsed.tolerance.unwrap_or(1e-9);
    if !(tolerance.is_finite() && tolerance >= 0.0) {
        return Err(format!(
            "tolerance is {tolerance}; it must be finite and at least 0"
        ));
    }
    check_input(&call)?;
    let expect = |what: &str| format!("expect: {what}");
    let value = parsed.expect;
    let expected = match &call {
        Call::Multiplicators(_) => Expected::Multiplicators(
            serde_json::from_value(value).map_err(|e| expect(&e.to_string()))?,
        ),
        Call::Charge { .. } => {
            Expected::Charges(serde_json::from_value(value).map_err(|e| expect(&e.to_string()))?)
        }
        Call::Schedule(_) => {
            Expected::Placements(serde_json::from_value(value).map_err(|e| expect(&e.to_string()))?)
        }
        Call::Preempt { .. } => {
            Expected::Victims(serde_json::from_value(value).map_err(|e| expect(&e.to_string()))?)
        }
        Call::Window(_) => {
            Expected::Window(serde_json::from_value(value).map_err(|e| expect(&e.to_string()))?)
        }
        Call::Validate(_) => {
            let decision: String =
                serde_json::from_value(value).map_err(|e| expect(&e.to_string()))?;
            if !DECISIONS.contains(&decision.as_str()) {
                return Err(expect(&format!(
                    "{decision:?} is not one of {}",
                    DECISIONS.join(", ")
                )));
            }
            Expected::Decision(decision)
        }
        Call::Available(_) => {
            Expected::Timeline(serde_json::from_value(value).map_err(|e| expect(&e.to_string()))?)
        }
    };
    Ok(Case {
        line: 0,
        name: parsed.name,
        tolerance,
        call,
        expected,
    })
}

/// What `validate` may be expected to answer.
pub(super) const DECISIONS: [&str; 4] = [
    "accept",
    "over-commit",
    "instantaneous-quota",
    "average-quota",
];

/// The guarantees the host gives the inputs it builds itself.
fn check_input(call: &Call) -> Result<(), String> {
    match call {
        Call::Multiplicators(market) => {
            let (u, last) = (market.utilization, market.last);
            finite(&[
                ("memory", u.memory),
                ("vcores", u.vcores),
                ("gpus", u.gpus),
                ("last.general", last.general),
                ("last.gpu", last.gpu),
            ])
        }
        Call::Charge {
            usage,
            multiplicators,
        } => {
            same_lengths(
                "usage",
                &[
                    ("seconds", usage.seconds.len()),
                    ("memory_mb", usage.memory_mb.len()),
                    ("vcores", usage.vcores.len()),
                    ("gpus", usage.gpus.len()),
                    ("start_ms", usage.start_ms.len()),
                    ("end_ms", usage.end_ms.len()),
                    ("context", usage.context.len()),
                ],
            )?;
            in_range("usage.context", &usage.context, usage.contexts.len())?;
            if let Some(i) =
                (0..usage.start_ms.len()).find(|&i| usage.start_ms[i] > usage.end_ms[i])
            {
                return Err(format!("usage.start_ms[{i}] is after usage.end_ms[{i}]"));
            }
            if let Some(s) = usage
                .seconds
                .iter()
                .find(|s| !(s.is_finite() && **s >= 0.0))
            {
                return Err(format!(
                    "usage.seconds has {s}; each must be finite and at least 0"
                ));
            }
            finite(&[
                ("multiplicators.general", multiplicators.general),
                ("multiplicators.gpu", multiplicators.gpu),
            ])
        }
        Call::Schedule(snapshot) => check_snapshot(snapshot),
        Call::Preempt { snapshot, running } => {
            check_snapshot(snapshot)?;
            same_lengths(
                "running",
                &[
                    ("app", running.app.len()),
                    ("node", running.node.len()),
                    ("memory_mb", running.memory_mb.len()),
                    ("vcores", running.vcores.len()),
                    ("gpus", running.gpus.len()),
                    ("start_time_ms", running.start_time_ms.len()),
                    ("execution_type", running.execution_type.len()),
                ],
            )?;
            same_lengths(
                "running.tags",
                &[
                    ("container", running.tags.container.len()),
                    ("tag", running.tags.tag.len()),
                ],
            )?;
            in_range(
                "running.tags.container",
                &running.tags.container,
                running.app.len(),
            )?;
            in_range("running.app", &running.app, snapshot.apps.queue.len())?;
            in_range(
                "running.node",
                &running.node,
                snapshot.nodes.free_memory_mb.len(),
            )
        }
        Call::Window(settings) => check_settings(settings),
        Call::Validate(admission) | Call::Available(admission) => {
            check_settings(&admission.settings)?;
            for (name, timeline) in [
                ("candidate", &admission.candidate),
                ("user_committed", &admission.user_committed),
                ("plan_committed", &admission.plan_committed),
            ] {
                crate::policy::validate::timeline(timeline)
                    .map_err(|e| format!("{name}: {}", e.0.trim_start_matches("returned ")))?;
                if timeline.at_ms.len() > MAX_COLUMN {
                    return Err(format!("{name} has more than {MAX_COLUMN} steps"));
                }
            }
            if admission.from_ms >= admission.to_ms {
                return Err(format!(
                    "from_ms {} must be before to_ms {}",
                    admission.from_ms, admission.to_ms
                ));
            }
            Ok(())
        }
    }
}

fn check_snapshot(s: &Snapshot) -> Result<(), String> {
    let nodes = &s.nodes;
    same_lengths(
        "nodes",
        &[
            ("free_memory_mb", nodes.free_memory_mb.len()),
            ("free_vcores", nodes.free_vcores.len()),
            ("free_gpus", nodes.free_gpus.len()),
            ("capacity_memory_mb", nodes.capacity_memory_mb.len()),
            ("capacity_vcores", nodes.capacity_vcores.len()),
            ("capacity_gpus", nodes.capacity_gpus.len()),
            ("partition", nodes.partition.len()),
            ("rack", nodes.rack.len()),
        ],
    )?;
    let partitions = s.partitions.name.len();
    same_lengths(
        "partitions",
        &[
            ("name", partitions),
            ("exclusive", s.partitions.exclusive.len()),
        ],
    )?;
    if s.partitions
        .name
        .first()
        .is_none_or(|name| !name.is_empty())
    {
        return Err("partitions: entry 0 is the default partition, named \"\"".into());
    }
    in_range("round.partition", &[s.round.partition], partitions)?;
    in_range("nodes.partition", &nodes.partition, partitions)?;
    in_range("nodes.rack", &nodes.rack, s.racks.len())?;
    let n = nodes.free_memory_mb.len();
    let a = &s.node_attributes;
    same_lengths(
        "node_attributes",
        &[("node", a.node.len()), ("attribute", a.attribute.len())],
    )?;
    in_range("node_attributes.node", &a.node, n)?;
    let q = &s.queues;
    same_lengths(
        "queues",
        &[
            ("parent", q.parent.len()),
            ("capacity", q.capacity.len()),
            ("maximum_capacity", q.maximum_capacity.len()),
            (
                "minimum_user_limit_percent",
                q.minimum_user_limit_percent.len(),
            ),
            ("user_limit_factor", q.user_limit_factor.len()),
            ("fair", q.fair.len()),
            ("used_memory_mb", q.used_memory_mb.len()),
            ("used_vcores", q.used_vcores.len()),
            ("used_gpus", q.used_gpus.len()),
            ("path", q.path.len()),
            (
                "decayed_memory_mb_seconds",
                q.decayed_memory_mb_seconds.len(),
            ),
            ("decayed_vcore_seconds", q.decayed_vcore_seconds.len()),
            ("decayed_gpu_seconds", q.decayed_gpu_seconds.len()),
        ],
    )?;
    let shares = &s.partition_shares;
    same_lengths(
        "partition_shares",
        &[
            ("queue", shares.queue.len()),
            ("partition", shares.partition.len()),
            ("capacity", shares.capacity.len()),
            ("maximum_capacity", shares.maximum_capacity.len()),
        ],
    )?;
    in_range("partition_shares.queue", &shares.queue, q.parent.len())?;
    in_range("partition_shares.partition", &shares.partition, partitions)?;
    if q.parent.is_empty() {
        return Err("queues: a snapshot has at least the root queue".into());
    }
    if let Some(i) = (1..q.parent.len()).find(|&i| q.parent[i] as usize >= i) {
        return Err(format!(
            "queues.parent[{i}] is {}; a parent comes before its children",
            q.parent[i]
        ));
    }
    let percentages = q
        .capacity
        .iter()
        .chain(&q.maximum_capacity)
        .chain(&q.minimum_user_limit_percent)
        .chain(q.user_limit_factor.iter().flatten())
        .chain(&q.decayed_memory_mb_seconds)
        .chain(&q.decayed_vcore_seconds)
        .chain(&q.decayed_gpu_seconds)
        .chain(&shares.capacity)
        .chain(&shares.maximum_capacity);
    if let Some(p) = percentages
        .into_iter()
        .find(|p| !(p.is_finite() && **p >= 0.0))
    {
        return Err(format!(
            "queues has the percentage or factor {p}; each must be finite and at least 0"
        ));
    }
    let apps = &s.apps;
    same_lengths(
        "apps",
        &[
            ("queue", apps.queue.len()),
            ("user", apps.user.len()),
            ("priority", apps.priority.len()),
            ("submit_time_ms", apps.submit_time_ms.len()),
            ("used_memory_mb", apps.used_memory_mb.len()),
            ("used_vcores", apps.used_vcores.len()),
            ("used_gpus", apps.used_gpus.len()),
            ("name", apps.name.len()),
            ("application_type", apps.application_type.len()),
            ("project", apps.project.len()),
            ("start_time_ms", apps.start_time_ms.len()),
            ("deadline_ms", apps.deadline_ms.len()),
            (
                "user_decayed_memory_mb_seconds",
                apps.user_decayed_memory_mb_seconds.len(),
            ),
            (
                "user_decayed_vcore_seconds",
                apps.user_decayed_vcore_seconds.len(),
            ),
            (
                "user_decayed_gpu_seconds",
                apps.user_decayed_gpu_seconds.len(),
            ),
        ],
    )?;
    in_range("apps.queue", &apps.queue, q.parent.len())?;
    let decayed = apps
        .user_decayed_memory_mb_seconds
        .iter()
        .chain(&apps.user_decayed_vcore_seconds)
        .chain(&apps.user_decayed_gpu_seconds);
    if let Some(x) = decayed.into_iter().find(|x| !(x.is_finite() && **x >= 0.0)) {
        return Err(format!(
            "apps has the decayed use {x}; each must be finite and at least 0"
        ));
    }
    let app_count = apps.queue.len();
    same_lengths(
        "app_tags",
        &[("app", s.app_tags.app.len()), ("tag", s.app_tags.tag.len())],
    )?;
    in_range("app_tags.app", &s.app_tags.app, app_count)?;
    let asks = &s.asks;
    same_lengths(
        "asks",
        &[
            ("app", asks.app.len()),
            ("pending", asks.pending.len()),
            ("memory_mb", asks.memory_mb.len()),
            ("vcores", asks.vcores.len()),
            ("gpus", asks.gpus.len()),
            ("partition", asks.partition.len()),
            ("locality_level", asks.locality_level.len()),
            ("relax_locality", asks.relax_locality.len()),
            ("missed_opportunities", asks.missed_opportunities.len()),
            ("gang_minimum", asks.gang_minimum.len()),
            ("constraint", asks.constraint.len()),
            ("execution_type", asks.execution_type.len()),
        ],
    )?;
    in_range("asks.app", &asks.app, app_count)?;
    in_range("asks.partition", &asks.partition, partitions)?;
    if let Some(k) = (0..asks.app.len())
        .find(|&k| asks.gang_minimum[k].is_some_and(|g| g == 0 || g > asks.pending[k]))
    {
        return Err(format!(
            "asks.gang_minimum[{k}] must be 1 to the ask's pending count"
        ));
    }
    let ask_count = asks.app.len();
    same_lengths(
        "ask_nodes",
        &[
            ("ask", s.ask_nodes.ask.len()),
            ("node", s.ask_nodes.node.len()),
        ],
    )?;
    in_range("ask_nodes.ask", &s.ask_nodes.ask, ask_count)?;
    in_range("ask_nodes.node", &s.ask_nodes.node, n)?;
    same_lengths(
        "ask_racks",
        &[
            ("ask", s.ask_racks.ask.len()),
            ("rack", s.ask_racks.rack.len()),
        ],
    )?;
    in_range("ask_racks.ask", &s.ask_racks.ask, ask_count)?;
    in_range("ask_racks.rack", &s.ask_racks.rack, s.racks.len())?;
    same_lengths(
        "ask_tags",
        &[("ask", s.ask_tags.ask.len()), ("tag", s.ask_tags.tag.len())],
    )?;
    in_range("ask_tags.ask", &s.ask_tags.ask, ask_count)?;
    let t = &s.tag_counts;
    same_lengths(
        "tag_counts",
        &[
            ("node", t.node.len()),
            ("app", t.app.len()),
            ("tag", t.tag.len()),
            ("count", t.count.len()),
        ],
    )?;
    in_range("tag_counts.node", &t.node, n)?;
    in_range("tag_counts.app", &t.app, app_count)?;
    sorted("node_attributes.node", &a.node)?;
    sorted("app_tags.app", &s.app_tags.app)?;
    sorted("ask_nodes.ask", &s.ask_nodes.ask)?;
    sorted("ask_racks.ask", &s.ask_racks.ask)?;
    sorted("ask_tags.ask", &s.ask_tags.ask)?;
    sorted("partition_shares.queue", &shares.queue)?;
    sorted("tag_counts.node", &t.node)
}

/// A sparse table's items must ascend (the WIT says so).
fn sorted(column: &str, items: &[u32]) -> Result<(), String> {
    match items.windows(2).position(|w| w[0] > w[1]) {
        Some(i) => Err(format!(
            "{column}[{}] is {}, after {}; rows must be in item order",
            i + 1,
            items[i + 1],
            items[i]
        )),
        None => Ok(()),
    }
}

fn check_settings(settings: &PlanSettings) -> Result<(), String> {
    finite(&[
        (
            "settings.instantaneous_max_capacity",
            settings.instantaneous_max_capacity,
        ),
        ("settings.average_capacity", settings.average_capacity),
    ])?;
    if settings.reservation_window_ms < 0 {
        return Err(format!(
            "settings.reservation_window_ms is {}; it must be at least 0",
            settings.reservation_window_ms
        ));
    }
    Ok(())
}

fn same_lengths(record: &str, columns: &[(&str, usize)]) -> Result<(), String> {
    let (first, length) = columns[0];
    if length > MAX_COLUMN {
        return Err(format!(
            "{record}.{first} has {length} entries; at most {MAX_COLUMN}"
        ));
    }
    match columns.iter().find(|(_, l)| *l != length) {
        Some((name, other)) => Err(format!(
            "{record}: {first} has {length} entries but {name} has {other}; columns must have one length"
        )),
        None => Ok(()),
    }
}

fn in_range(column: &str, indices: &[u32], length: usize) -> Result<(), String> {
    match indices.iter().position(|&i| i as usize >= length) {
        Some(at) => Err(format!(
            "{column}[{at}] is {}, but there are only {length}",
            indices[at]
        )),
        None => Ok(()),
    }
}

/// Each value finite and at least 0.
fn finite(values: &[(&str, f64)]) -> Result<(), String> {
    match values.iter().find(|(_, v)| !(v.is_finite() && *v >= 0.0)) {
        Some((name, v)) => Err(format!("{name} is {v}; it must be finite and at least 0")),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_case_of_0_2_0_shape_is_completed_and_a_deep_tree_costs_no_more_than_a_wide_one() {
        // A chain of 40,000 queues, each under the one before: the names
        // filled in are flat, not each a copy of its parent's.
        let parents: Vec<u32> = std::iter::once(0).chain(0..39_999).collect();
        let line = serde_json::json!({
            "name": "deep",
            "schedule": {"queues": {"parent": parents}},
            "expect": {"ask": [], "node": [], "count": []},
        });
        let case = parse_line(&line.to_string()).unwrap_err();
        // The rest of the columns are the case's to give: refused by name.
        assert!(case.contains("queues"), "{case}");
        let mut given = serde_json::json!({"queues": {"parent": [0, 0]}});
        given["queues"]["capacity"] = serde_json::json!([100.0, 100.0]);
        let completed = snapshot(given).unwrap();
        assert_eq!(completed.queues.path, ["root", "root.q1"]);
        let too_many = serde_json::json!({"nodes": {"free_memory_mb": vec![0; MAX_COLUMN + 1]}});
        assert!(
            snapshot(too_many)
                .unwrap_err()
                .contains("nodes has 100001 rows")
        );
    }
}
