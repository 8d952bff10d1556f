//! The quota event log's format (docs/replay-events.md): one JSON line per
//! event the resource manager gives the quota service. Written by
//! `event_log.rs` as `weft serve` runs, read and checked here for
//! `weft replay` — a line out of bounds, out of order or naming a container
//! that is not running is refused, with its line number, before anything is
//! charged.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::limits::{self, MAX_GPUS, MAX_MEMORY_MB, MAX_TIME_MS, MAX_VCORES, OutOfBounds};
use crate::policy::{Attribute, ChargeContext, ExecutionType, PartitionLoad, QueueLoad};

/// A line of the log that cannot be taken, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct LineError {
    /// Its line number, from 1 (blank lines count).
    pub line: usize,
    /// Why it is refused (the field and its bounds, when one is out of them).
    pub reason: String,
}

/// What a charge is for beyond its app, project and user, as a line of the
/// log carries it (`charge-context` of wit/pricing.wit): written by servers
/// since weft:policy@0.3.0, so a replay prices each row in the context the
/// server priced it in. Older lines have none: replayed with empty fields.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoggedContext {
    /// The app's leaf queue's full path.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub queue: String,
    /// YARN's application type.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub application_type: String,
    /// The app's tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub application_tags: Vec<String>,
    /// The app's priority.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub priority: i32,
    /// The node's label ("" the default partition).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub node_label: String,
    /// The node's attributes.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub node_attributes: std::collections::BTreeMap<String, String>,
    /// The reservation the app runs in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation: Option<String>,
    /// Whether the container is opportunistic (absent: guaranteed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub opportunistic: bool,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

impl LoggedContext {
    /// What `context` adds to its app, project and user.
    pub fn of(context: &ChargeContext) -> LoggedContext {
        LoggedContext {
            queue: context.queue.clone(),
            application_type: context.application_type.clone(),
            application_tags: context.application_tags.clone(),
            priority: context.priority,
            node_label: context.node_label.clone(),
            node_attributes: context
                .node_attributes
                .iter()
                .map(|a| (a.key.clone(), a.value.clone()))
                .collect(),
            reservation: context.reservation.clone(),
            opportunistic: context.execution_type == ExecutionType::Opportunistic,
        }
    }

    /// The whole context, with its app, project and user.
    pub fn with(&self, app: &str, project: &str, user: &str) -> ChargeContext {
        ChargeContext {
            app: app.into(),
            queue: self.queue.clone(),
            user: user.into(),
            project: project.into(),
            application_type: self.application_type.clone(),
            application_tags: self.application_tags.clone(),
            priority: self.priority,
            node_label: self.node_label.clone(),
            node_attributes: self
                .node_attributes
                .iter()
                .map(|(key, value)| Attribute {
                    key: key.clone(),
                    value: value.clone(),
                })
                .collect(),
            execution_type: if self.opportunistic {
                ExecutionType::Opportunistic
            } else {
                ExecutionType::Guaranteed
            },
            reservation: self.reservation.clone(),
        }
    }

    /// Its fields within the bounds a server's own have.
    fn check(&self) -> Result<(), OutOfBounds> {
        let optional = |field: &str, text: &str| match text.is_empty() {
            true => Ok(()),
            false => limits::name(field, text),
        };
        if !self.queue.is_empty() {
            limits::queue_path("queue", &self.queue)?;
        }
        optional("application_type", &self.application_type)?;
        limits::at_most(
            "application_tags",
            self.application_tags.len(),
            limits::MAX_APP_TAGS,
        )?;
        for tag in &self.application_tags {
            limits::at_most("application_tags[]", tag.len(), limits::MAX_APP_TAG_BYTES)?;
            limits::name("application_tags[]", tag)?;
        }
        if !self.node_label.is_empty() {
            limits::node_label("node_label", &self.node_label)?;
        }
        limits::at_most(
            "node_attributes",
            self.node_attributes.len(),
            limits::MAX_NODE_ATTRIBUTES,
        )?;
        for (key, value) in &self.node_attributes {
            limits::at_most(
                "node_attributes key",
                key.len(),
                limits::MAX_NODE_ATTRIBUTE_BYTES,
            )?;
            limits::at_most(
                "node_attributes value",
                value.len(),
                limits::MAX_NODE_ATTRIBUTE_BYTES,
            )?;
            limits::name("node_attributes key", key)?;
            if value.chars().any(char::is_control) {
                limits::name("node_attributes value", value)?;
            }
        }
        match &self.reservation {
            Some(reservation) => limits::name("reservation", reservation),
            None => Ok(()),
        }
    }
}

/// One line of the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventLine {
    /// Milliseconds of virtual time (since the epoch, in a server's log).
    pub t: u64,
    /// What happened, with its fields: the line's `event` word and the rest of
    /// its object.
    #[serde(flatten)]
    pub event: QuotaEvent,
}

/// What happened at a line's `t`; docs/replay-events.md has every field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum QuotaEvent {
    /// CONTAINER_START: charged from `t` on.
    Start {
        /// The container's id.
        container: String,
        /// Its app's id.
        app: String,
        /// The project charged: its app's.
        project: String,
        /// The user charged: its app's submitter.
        user: String,
        /// Its memory, in MB.
        memory_mb: u64,
        /// Its vcores.
        vcores: u32,
        /// Its GPUs (0 when left out).
        #[serde(default)]
        gpus: u32,
        /// When it started, if before `t` (a container whose start the
        /// server learnt of late): charged from then.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        started_ms: Option<u64>,
        /// What else its charges are for.
        #[serde(flatten)]
        context: LoggedContext,
    },
    /// CONTAINER_UPDATE: the old size is charged up to `t`, this one after.
    Update {
        /// The container's id; it must be running.
        container: String,
        /// Its new memory, in MB.
        memory_mb: u64,
        /// Its new vcores.
        vcores: u32,
        /// Its new GPUs (0 when left out).
        #[serde(default)]
        gpus: u32,
    },
    /// CONTAINER_FINISH: charged up to `ended_ms` if given (a container
    /// that ended before the server learned of it at `t`), else up to `t`.
    Finish {
        /// The container's id; it must be running.
        container: String,
        /// When it ended, in ms, if before `t`; `None`: at `t`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ended_ms: Option<u64>,
        /// How it ended (YARN's ContainerExitStatus): the minimum runtime
        /// is charged only if its own work ended it (see
        /// `exit_status::ended_by_its_work`); none (older logs): always.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_status: Option<i32>,
    },
    /// Periodic timers only: the utilization the next multiplicator steps see.
    Utilization {
        /// Memory allocated plus pending over the cluster's capacity (above 1
        /// when more is asked than there is).
        memory: f64,
        /// Vcores, as `memory`.
        vcores: f64,
        /// GPUs, as `memory` (0 when left out).
        #[serde(default)]
        gpus: f64,
    },
    /// A QUOTA_COMPUTE the server ran.
    Compute,
    /// A multiplicator step the server ran, with the load it saw.
    MultiplicatorStep {
        /// Memory allocated plus pending over the cluster's capacity (above 1
        /// when more is asked than there is).
        memory: f64,
        /// Vcores, as `memory`.
        vcores: f64,
        /// GPUs, as `memory` (0 when left out).
        #[serde(default)]
        gpus: f64,
        /// Each partition's capacity, use and pending demand (none in
        /// older logs).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        partitions: Vec<PartitionLoad>,
        /// Each leaf queue's guarantee, use and pending demand.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        queues: Vec<QueueLoad>,
    },
    /// The server recovered its state (a start, restart or failover); the
    /// `running` lines after it at the same `t` are every container it
    /// charged on.
    Recovery,
    /// A container a recovery found running, charged up to `charged_until_ms`.
    Running {
        /// The container's id.
        container: String,
        /// Its app's id.
        app: String,
        /// The project charged: its app's.
        project: String,
        /// The user charged: its app's submitter.
        user: String,
        /// Its memory, in MB.
        memory_mb: u64,
        /// Its vcores.
        vcores: u32,
        /// Its GPUs (0 when left out).
        #[serde(default)]
        gpus: u32,
        /// When it started, in ms.
        started_ms: u64,
        /// Up to when the server had charged it, in ms: it is charged again
        /// from then.
        charged_until_ms: u64,
        /// What else its charges are for.
        #[serde(flatten)]
        context: LoggedContext,
    },
}

/// Parses the whole log first, so a malformed line is refused before
/// anything is charged.
pub fn parse(text: &str) -> Result<Vec<EventLine>, LineError> {
    let mut lines = Vec::new();
    let mut last_t = 0;
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let refuse = |reason: String| LineError { line, reason };
        let parsed: EventLine =
            serde_json::from_str(raw).map_err(|e| refuse(format!("not a valid event: {e}")))?;
        check_bounds(&parsed).map_err(|e| refuse(e.to_string()))?;
        if parsed.t < last_t {
            return Err(refuse(format!(
                "t={} comes before the previous line's t={last_t}; lines must be ordered by t",
                parsed.t
            )));
        }
        if let Some(utilization) = utilization_of(&parsed.event)
            && utilization.iter().any(|u| !u.is_finite() || *u < 0.0)
        {
            return Err(refuse("utilization must be finite and at least 0".into()));
        }
        last_t = parsed.t;
        lines.push((line, parsed));
    }
    check_timer_kinds(&lines)?;
    check_lifecycles(&lines)?;
    Ok(lines.into_iter().map(|(_, parsed)| parsed).collect())
}

/// The utilization a line gives, if it gives one.
fn utilization_of(event: &QuotaEvent) -> Option<[f64; 3]> {
    match event {
        QuotaEvent::Utilization {
            memory,
            vcores,
            gpus,
        }
        | QuotaEvent::MultiplicatorStep {
            memory,
            vcores,
            gpus,
            ..
        } => Some([*memory, *vcores, *gpus]),
        _ => None,
    }
}

/// Whether the log's timers are the server's (see the module's docs).
pub(crate) fn has_recorded_timers(lines: &[EventLine]) -> bool {
    lines.iter().any(|l| {
        matches!(
            l.event,
            QuotaEvent::Compute | QuotaEvent::MultiplicatorStep { .. }
        )
    })
}

/// A log has periodic or recorded timers, not both: with recorded ones no
/// periodic multiplicator step would read a `utilization` line.
fn check_timer_kinds(lines: &[(usize, EventLine)]) -> Result<(), LineError> {
    let recorded = lines.iter().find(|(_, l)| {
        matches!(
            l.event,
            QuotaEvent::Compute | QuotaEvent::MultiplicatorStep { .. }
        )
    });
    let periodic = lines
        .iter()
        .find(|(_, l)| matches!(l.event, QuotaEvent::Utilization { .. }));
    match (recorded, periodic) {
        (Some((recorded, _)), Some((line, _))) => Err(LineError {
            line: *line,
            reason: format!(
                "a utilization line cannot be in a log with recorded timers (line {recorded} is \
                 a compute or multiplicator-step line): give the utilization in \
                 multiplicator-step lines"
            ),
        }),
        _ => Ok(()),
    }
}

/// The line's time, names and resources are within `crate::limits`.
fn check_bounds(parsed: &EventLine) -> Result<(), OutOfBounds> {
    limits::within("t", parsed.t, 0, MAX_TIME_MS)?;
    let resources = |memory_mb: u64, vcores: u32, gpus: u32| {
        limits::within("memory_mb", memory_mb, 0, MAX_MEMORY_MB)?;
        limits::within("vcores", vcores, 0, MAX_VCORES)?;
        limits::within("gpus", gpus, 0, MAX_GPUS).map(|_| ())
    };
    let names = |container: &str, app: &str, project: &str, user: &str| {
        limits::name("container", container)?;
        limits::name("app", app)?;
        limits::name("project", project)?;
        limits::name("user", user)
    };
    match &parsed.event {
        QuotaEvent::Start {
            container,
            app,
            project,
            user,
            memory_mb,
            vcores,
            gpus,
            started_ms,
            context,
        } => {
            names(container, app, project, user)?;
            context.check()?;
            if let Some(started) = started_ms {
                limits::within("started_ms", *started, 0, parsed.t)?;
            }
            resources(*memory_mb, *vcores, *gpus)
        }
        QuotaEvent::Update {
            container,
            memory_mb,
            vcores,
            gpus,
        } => {
            limits::name("container", container)?;
            resources(*memory_mb, *vcores, *gpus)
        }
        QuotaEvent::Finish {
            container,
            ended_ms,
            exit_status,
        } => {
            limits::name("container", container)?;
            if let Some(status) = exit_status
                && !crate::protocol::node::exit_status::is_valid(*status)
            {
                return Err(OutOfBounds {
                    field: "exit_status".into(),
                    value: status.to_string(),
                    rule: "but it must be a process's own status (0 to 255) or one of YARN's ContainerExitStatus values".into(),
                });
            }
            match ended_ms {
                Some(ended) => limits::within("ended_ms", *ended, 0, parsed.t).map(|_| ()),
                None => Ok(()),
            }
        }
        QuotaEvent::Running {
            container,
            app,
            project,
            user,
            memory_mb,
            vcores,
            gpus,
            started_ms,
            charged_until_ms,
            context,
        } => {
            names(container, app, project, user)?;
            context.check()?;
            resources(*memory_mb, *vcores, *gpus)?;
            limits::within("started_ms", *started_ms, 0, MAX_TIME_MS)?;
            limits::within("charged_until_ms", *charged_until_ms, 0, MAX_TIME_MS).map(|_| ())
        }
        QuotaEvent::MultiplicatorStep {
            partitions, queues, ..
        } => {
            limits::at_most("partitions", partitions.len(), limits::MAX_NODE_LABELS + 1)?;
            limits::at_most("queues", queues.len(), MAX_LOGGED_QUEUES)?;
            // As a server writes them: the default partition first, then
            // each label once; loads no cluster could have.
            let mut seen = std::collections::HashSet::new();
            for (i, partition) in partitions.iter().enumerate() {
                let field = format!("partitions[{i}].name");
                if i > 0 || !partition.name.is_empty() {
                    limits::node_label(&field, &partition.name)?;
                }
                if !seen.insert(partition.name.as_str()) {
                    return Err(OutOfBounds {
                        field,
                        value: format!("{:?}", partition.name),
                        rule: "but it names a partition given already".into(),
                    });
                }
                loads(
                    &format!("partitions[{i}]"),
                    [&partition.capacity, &partition.used],
                )?;
            }
            for (i, queue) in queues.iter().enumerate() {
                let field = format!("queues[{i}].path");
                limits::queue_path(&field, &queue.path)?;
                loads(&format!("queues[{i}]"), [&queue.guaranteed, &queue.used])?;
            }
            Ok(())
        }
        QuotaEvent::Utilization { .. } | QuotaEvent::Compute | QuotaEvent::Recovery => Ok(()),
    }
}

/// A market's capacity (or guarantee) and use within what a cluster of
/// [`limits::MAX_NODES`] of the largest nodes could hold. (Pending demand
/// may be any amount: asks are not bounded by the cluster.)
fn loads(field: &str, figures: [&crate::policy::SharingResources; 2]) -> Result<(), OutOfBounds> {
    let most = |per_node: u64| per_node.saturating_mul(limits::MAX_NODES as u64);
    for (name, figure) in ["capacity", "used"].iter().zip(figures) {
        let at = format!("{field}: {name}");
        limits::within(
            format!("{at}.memory_mb"),
            figure.memory_mb,
            0,
            most(MAX_MEMORY_MB),
        )?;
        limits::within(
            format!("{at}.vcores"),
            figure.vcores,
            0,
            most(u64::from(MAX_VCORES)),
        )?;
        limits::within(
            format!("{at}.gpus"),
            figure.gpus,
            0,
            most(u64::from(MAX_GPUS)),
        )?;
    }
    Ok(())
}

/// The most leaf queues a multiplicator step's line may carry.
const MAX_LOGGED_QUEUES: usize = 100_000;

/// Every update and finish names a running container, and no container
/// starts twice (a recovery may find one running again, though).
fn check_lifecycles(lines: &[(usize, EventLine)]) -> Result<(), LineError> {
    let mut lifecycles = Lifecycles::default();
    for (line, parsed) in lines {
        lifecycles
            .follow(parsed.t, &parsed.event)
            .map_err(|reason| LineError {
                line: *line,
                reason,
            })?;
    }
    Ok(())
}

/// Which containers the log has running, line by line: the one reading of
/// starts, finishes and recoveries that parsing, the cost estimates and the
/// replay itself share.
#[derive(Debug, Default)]
pub(crate) struct Lifecycles {
    pub(crate) running: HashSet<String>,
    /// Containers that finished (or were left out by a recovery): they
    /// cannot start again, though a recovery may find them running.
    ended: HashSet<String>,
    /// Containers a recovery left out: a later running line may say their
    /// agent came back and they ran on.
    left_out: HashSet<String>,
    /// While a recovery's running lines go on: the containers they named.
    /// (its t, the containers its running lines named).
    recovering: Option<(u64, HashSet<String>)>,
}

/// What following one line means for charging.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Followed {
    /// Containers a recovery the line ended left out, in order: they stop
    /// being charged before the line is applied.
    pub(crate) left_out: Vec<String>,
    /// A running line naming a container not running before: it is
    /// charged again from its `charged_until_ms`.
    pub(crate) resumed: bool,
    /// It is a running line after its recovery: the time from its
    /// `charged_until_ms` up to the last QUOTA_COMPUTE is owed at once.
    pub(crate) late: bool,
}

impl Lifecycles {
    /// Follows `event` at `t`, or says why it cannot happen. A recovery's
    /// running lines are those right after it at its t.
    pub(crate) fn follow(&mut self, t: u64, event: &QuotaEvent) -> Result<Followed, String> {
        let mut followed = Followed::default();
        let recovery_goes_on = matches!(event, QuotaEvent::Running { .. })
            && self.recovering.as_ref().is_some_and(|(at, _)| *at == t);
        if !recovery_goes_on {
            followed.left_out = self.end_recovery();
        }
        match event {
            QuotaEvent::Start { container, .. }
                if self.running.contains(container) || self.ended.contains(container) =>
            {
                return Err(format!("container {container:?} starts a second time"));
            }
            QuotaEvent::Start { container, .. } => {
                self.running.insert(container.clone());
            }
            QuotaEvent::Update { container, .. } if !self.running.contains(container) => {
                return Err(format!(
                    "update of container {container:?}, which is not running"
                ));
            }
            QuotaEvent::Finish { container, .. } if !self.running.remove(container) => {
                return Err(format!(
                    "finish of container {container:?}, which is not running"
                ));
            }
            QuotaEvent::Finish { container, .. } => {
                self.ended.insert(container.clone());
            }
            QuotaEvent::Recovery => self.recovering = Some((t, HashSet::new())),
            QuotaEvent::Running { container, .. } => {
                match self.recovering.as_mut() {
                    Some((_, named)) => {
                        named.insert(container.clone());
                    }
                    None if self.left_out.remove(container) => followed.late = true,
                    None => {
                        return Err(format!(
                            "a running line for container {container:?} must follow a recovery \
                             line, or name a container a recovery left out"
                        ));
                    }
                }
                self.ended.remove(container);
                followed.resumed = self.running.insert(container.clone());
            }
            QuotaEvent::Update { .. }
            | QuotaEvent::Utilization { .. }
            | QuotaEvent::Compute
            | QuotaEvent::MultiplicatorStep { .. } => {}
        }
        Ok(followed)
    }

    /// Ends a recovery whose running lines are over: the running
    /// containers they left out, sorted (so replays agree to the bit).
    pub(crate) fn end_recovery(&mut self) -> Vec<String> {
        let Some((_, named)) = self.recovering.take() else {
            return Vec::new();
        };
        let mut left_out: Vec<String> = self
            .running
            .iter()
            .filter(|c| !named.contains(*c))
            .cloned()
            .collect();
        left_out.sort();
        for container in &left_out {
            self.running.remove(container);
            self.ended.insert(container.clone());
            self.left_out.insert(container.clone());
        }
        left_out
    }
}
