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
//! relative) applies to numbers compared.

use crate::limits::MAX_POLICY_CASES;
use crate::limits::MAX_POLICY_CASES_BYTES;
use serde::Deserialize;

use crate::policy::PolicyKind;
use crate::policy::bindings::{
    Admission, Containers, Placements, PlanSettings, PriceMultiplicators, Snapshot, Timeline,
    Usage, Utilization,
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
    call: Call,
}

/// One call of a case, with its input.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Call {
    Multiplicators(Utilization),
    Charge {
        usage: Usage,
        multiplicators: PriceMultiplicators,
    },
    Schedule(Snapshot),
    Preempt {
        snapshot: Snapshot,
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
    let tolerance = parsed.tolerance.unwrap_or(1e-9);
    if !(tolerance.is_finite() && tolerance >= 0.0) {
        return Err(format!(
            "tolerance is {tolerance}; it must be finite and at least 0"
        ));
    }
    check_input(&parsed.call)?;
    let expect = |what: &str| format!("expect: {what}");
    let value = parsed.expect;
    let expected = match &parsed.call {
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
        call: parsed.call,
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
        Call::Multiplicators(u) => {
            finite(&[("memory", u.memory), ("vcores", u.vcores), ("gpus", u.gpus)])
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
                ],
            )?;
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
                ],
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
        ],
    )?;
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
        ],
    )?;
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
        .chain(q.user_limit_factor.iter().flatten());
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
        ],
    )?;
    in_range("apps.queue", &apps.queue, q.parent.len())?;
    let asks = &s.asks;
    same_lengths(
        "asks",
        &[
            ("app", asks.app.len()),
            ("pending", asks.pending.len()),
            ("memory_mb", asks.memory_mb.len()),
            ("vcores", asks.vcores.len()),
            ("gpus", asks.gpus.len()),
        ],
    )?;
    in_range("asks.app", &asks.app, apps.queue.len())
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
