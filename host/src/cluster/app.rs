//! An application: who submitted it where, and what it asks for. A pending
//! container is a count in an ask, never an object of its own, so a million
//! pending tasks cost a few bytes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::limits::OutOfBounds;
use crate::protocol::node::ContainerCommand;
use crate::resources::{ResourceSeconds, Resources};

/// YARN's application states, as far as Weft drives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AppState {
    /// Accepted into its queue; waiting for its first container.
    Accepted,
    /// At least one container allocated.
    Running,
    /// Every container it asked for has run and finished.
    Finished,
    /// A container failed more often than its ask's `max_attempts`; the
    /// others were killed.
    Failed,
    /// Ended before finishing: killed by its user or an administrator, or
    /// its reservation expired (and reservation-move-on-expiry is false).
    Killed,
}

impl AppState {
    /// YARN's name for the state.
    pub fn as_str(self) -> &'static str {
        match self {
            AppState::Accepted => "ACCEPTED",
            AppState::Running => "RUNNING",
            AppState::Finished => "FINISHED",
            AppState::Failed => "FAILED",
            AppState::Killed => "KILLED",
        }
    }

    /// Whether the app has ended (and holds nothing any more).
    pub fn has_ended(self) -> bool {
        matches!(
            self,
            AppState::Finished | AppState::Failed | AppState::Killed
        )
    }

    /// YARN's finalStatus for an app in this state.
    pub fn final_status(self) -> &'static str {
        match self {
            AppState::Accepted | AppState::Running => "UNDEFINED",
            AppState::Finished => "SUCCEEDED",
            AppState::Failed => "FAILED",
            AppState::Killed => "KILLED",
        }
    }
}

/// `count` containers of one size, each running `command` (on an agent)
/// or for `duration_ms` (on a simulated node): YARN's distributed shell's
/// `shell_command`, `num_containers`, `container_memory`, `container_vcores`.
/// Bounds: docs/security.md.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AskSpec {
    /// 1 to 100,000.
    #[schema(minimum = 1, maximum = 100_000)]
    pub count: u32,
    /// 1 MB to 1 PiB.
    #[schema(minimum = 1, maximum = 1_073_741_824_u64)]
    pub memory_mb: u64,
    /// 1 to 4096.
    #[schema(minimum = 1, maximum = 4096)]
    pub vcores: u32,
    /// 0 to 1024.
    #[serde(default)]
    #[schema(minimum = 0, maximum = 1024)]
    pub gpus: u32,
    /// How long each container runs on a simulated node: 1 ms to 30 days.
    /// Required without a command; on an agent, an ask with no command
    /// runs `sleep` for this long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 2_592_000_000_u64)]
    pub duration_ms: Option<u64>,
    /// What each container runs on an agent: `{"argv": [...]}` (at most
    /// 4096 words, 1 MiB in all) or `{"shell": "line"}` (`/bin/sh -c`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<ContainerCommand>,
    /// Variables added to each container's environment (at most 1000;
    /// names `[A-Za-z_][A-Za-z0-9_]*`, values at most 64 KiB).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// How often one container may run before a failure (a non-zero exit)
    /// fails the app: 1 (the default) to 100.
    #[serde(default = "default_max_attempts")]
    #[schema(minimum = 1, maximum = 100)]
    pub max_attempts: u32,
    /// All or nothing (a gang, as YuniKorn's task groups and Kueue's
    /// all-or-nothing admission): at least `minimum` of its containers are
    /// placed in one round, or none is; once they have been, the rest
    /// place as they can.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gang: Option<GangSpec>,
    /// The node label (partition) its containers run in (YARN's
    /// ResourceRequest nodeLabelExpression): one label, or "" for the
    /// default partition; left out, the app's expression, else its queue's
    /// `default-node-label-expression`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 255)]
    pub node_label_expression: Option<String>,
    /// Tags its containers carry, for placement constraints (YARN's
    /// allocation tags): at most 10, each 1 to 128 bytes of
    /// `A-Z a-z 0-9 . _ -`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(max_items = 10)]
    pub allocation_tags: Vec<String>,
    /// Where its containers may go, in YARN's placement-constraint form:
    /// `NOTIN,NODE,zk` (not where a `zk` container runs), `IN,RACK,db`,
    /// `CARDINALITY,NODE,web,0,2` (where 0 to 2 run already, as YARN counts); `all/TAG` counts
    /// every app's containers, a plain tag the app's own. The host checks
    /// it against every placement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 256)]
    pub placement_constraint: Option<String>,
    /// Where it would rather run (YARN's resourceName and relaxLocality):
    /// its nodes first, after `node-locality-delay` missed scheduling
    /// opportunities their racks, then — relaxing — anywhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locality: Option<super::LocalitySpec>,
    /// `guaranteed` (the default): each container starts on room free
    /// when it is placed. `opportunistic`: it may also be queued at an
    /// agent whose room is taken (up to
    /// `yarn.nodemanager.opportunistic-containers-max-queue-length` a
    /// node), and starts there the moment room frees. Either counts
    /// against its queue, user limit and budget from its placement, and is
    /// charged from its real start.
    #[serde(default, skip_serializing_if = "ExecutionType::is_guaranteed")]
    pub execution_type: ExecutionType,
    /// What a YARN client's launch context adds (Hadoop RPC's
    /// submitApplication fills it in; not part of the REST body).
    #[serde(skip)]
    pub yarn: Option<crate::protocol::node::YarnLaunch>,
}

/// How a container holds its room (YARN's ExecutionType).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ExecutionType {
    /// Placed only on room free at the time; starts at once.
    #[default]
    #[serde(alias = "GUARANTEED")]
    Guaranteed,
    /// May wait in its agent's queue for room held by others.
    #[serde(alias = "OPPORTUNISTIC")]
    Opportunistic,
}

impl ExecutionType {
    /// Whether it is the default, guaranteed.
    pub fn is_guaranteed(&self) -> bool {
        *self == ExecutionType::Guaranteed
    }
}

fn default_max_attempts() -> u32 {
    1
}

/// A gang ask's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GangSpec {
    /// Containers placed together at the least: 1 to the ask's count.
    #[schema(minimum = 1, maximum = 100_000)]
    pub minimum: u32,
    /// How long after the app's submission the gang may wait to be placed
    /// whole: 1 ms to 30 days; left out, as long as it takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 2_592_000_000_u64)]
    pub timeout_ms: Option<u64>,
    /// Then: `fail` (the app fails, saying why; the default) or `place`
    /// (its containers are placed as they can).
    #[serde(default)]
    pub on_timeout: GangTimeout,
}

/// What becomes of a gang not placed whole in time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum GangTimeout {
    /// The app fails.
    #[default]
    Fail,
    /// Its containers are placed as they can.
    Place,
}

/// A gang ask's state: its terms, when it must be placed by, and whether it
/// has been (its minimum placed in one round).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Gang {
    /// Containers placed together at the least.
    pub minimum: u32,
    /// When it must have been placed, in ms since the epoch; none: no limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<u64>,
    /// What happens at the deadline.
    pub on_timeout: GangTimeout,
    /// Whether it has been placed whole (or released at its deadline):
    /// from then on its containers place as they can.
    pub placed: bool,
}

impl AskSpec {
    /// `count` containers of one size that run `duration_ms` (on a
    /// simulated node) and no command.
    pub fn sized(count: u32, memory_mb: u64, vcores: u32, gpus: u32, duration_ms: u64) -> AskSpec {
        AskSpec {
            count,
            memory_mb,
            vcores,
            gpus,
            duration_ms: Some(duration_ms),
            command: None,
            env: BTreeMap::new(),
            max_attempts: 1,
            gang: None,
            node_label_expression: None,
            allocation_tags: Vec::new(),
            placement_constraint: None,
            locality: None,
            execution_type: ExecutionType::Guaranteed,
            yarn: None,
        }
    }
}

/// A submission, as POST /ws/v1/cluster/apps takes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitApp {
    /// What people call it (YARN's application-name): "app" when left out.
    #[serde(default = "default_name")]
    #[schema(min_length = 1, max_length = 256, pattern = r"\S")]
    pub name: String,
    /// A leaf queue's name.
    #[serde(default = "default_queue")]
    #[schema(min_length = 1, max_length = 256, pattern = r"\S")]
    pub queue: String,
    /// Who the app runs as: the caller (also when left out), unless an
    /// administrator submits on someone's behalf.
    #[serde(default)]
    #[schema(max_length = 256)]
    pub user: String,
    /// The project charged for its containers.
    #[schema(min_length = 1, max_length = 256, pattern = r"\S")]
    pub project: String,
    /// YARN's application priority: its queue serves higher numbers
    /// first; 0 when left out.
    #[serde(default)]
    pub priority: i32,
    /// 1 to 100 asks.
    #[schema(min_items = 1, max_items = 100)]
    pub asks: Vec<AskSpec>,
    /// The id POST /ws/v1/cluster/apps/new-application gave the caller;
    /// without one the app gets the next id.
    #[serde(
        default,
        alias = "application-id",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(max_length = 256)]
    pub application_id: Option<String>,
    /// The reservation it runs in (YARN's `reservation-id`), which must be
    /// in its queue's plan.
    #[serde(default, alias = "reservation-id")]
    pub reservation_id: Option<String>,
    /// What kind of app it is, as YARN's `applicationType` (MAPREDUCE,
    /// SPARK…): "YARN" when left out.
    #[serde(default, alias = "application-type")]
    #[schema(max_length = 256)]
    pub application_type: Option<String>,
    /// Labels to find it by (YARN's application tags, kept lower case): at
    /// most 10 of at most 100 characters.
    #[serde(default)]
    #[schema(max_items = 10)]
    pub tags: Vec<String>,
    /// How long it may live, in seconds from its submission (YARN's
    /// LIFETIME timeout), 1 to 315,360,000 (10 years); cut to its queue's
    /// `maximum-application-lifetime`. Left out: the queue's
    /// `default-application-lifetime`, if any. Past it the app is killed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 315_360_000_u64)]
    pub lifetime_s: Option<u64>,
    /// The node label (partition) its asks run in unless they name one
    /// (YARN's `app-node-label-expression`): one label, or "" for the
    /// default partition; left out, its queue's
    /// `default-node-label-expression`. The queue must be able to use it.
    #[serde(
        default,
        alias = "app-node-label-expression",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(max_length = 255)]
    pub node_label_expression: Option<String>,
}

/// A tag as it is kept and matched: trimmed, lower case (as YARN keeps it).
pub(super) fn normal_tag(tag: &str) -> String {
    tag.trim().to_lowercase()
}

impl SubmitApp {
    /// Checks an application type and tags as a submission does (fields
    /// named after `at`, e.g. "app 3: ", when given): the type a name
    /// without a comma; at most `MAX_APP_TAGS` tags, each a name without
    /// a comma of at most `MAX_APP_TAG_BYTES` bytes in lower case.
    pub fn check_type_and_tags(
        at: &str,
        application_type: Option<&str>,
        tags: &[String],
    ) -> Result<(), OutOfBounds> {
        use crate::limits::{MAX_APP_TAG_BYTES, MAX_APP_TAGS, at_most, name};
        let at = if at.is_empty() {
            String::new()
        } else {
            format!("{at}: ")
        };
        if let Some(kind) = application_type {
            let field = format!("{at}application_type");
            name(&field, kind.trim())?;
            no_comma(&field, kind)?;
        }
        at_most(format!("{at}tags"), tags.len(), MAX_APP_TAGS)?;
        for (i, tag) in tags.iter().enumerate() {
            let field = format!("{at}tags[{i}]");
            let tag = normal_tag(tag);
            name(&field, &tag)?;
            no_comma(&field, &tag)?;
            if tag.len() > MAX_APP_TAG_BYTES {
                return Err(OutOfBounds {
                    field,
                    value: format!("{:?}", tag.chars().take(40).collect::<String>()),
                    rule: format!("but a tag has at most {MAX_APP_TAG_BYTES} bytes (lower case)"),
                });
            }
        }
        Ok(())
    }

    /// Its application type as the app keeps it: trimmed, YARN's default
    /// when left out.
    pub fn normal_application_type(&self) -> String {
        self.application_type.as_deref().map_or_else(
            || DEFAULT_APPLICATION_TYPE.into(),
            |kind| kind.trim().to_string(),
        )
    }

    /// Its tags as the app keeps them: trimmed, lower case, each once.
    pub fn normal_tags(&self) -> Vec<String> {
        self.tags.iter().fold(Vec::new(), |mut tags, tag| {
            let tag = normal_tag(tag);
            if !tags.contains(&tag) {
                tags.push(tag);
            }
            tags
        })
    }
}

/// Refuses a comma in `text`: filters list types and tags with commas.
fn no_comma(field: &str, text: &str) -> Result<(), OutOfBounds> {
    if text.contains(',') {
        return Err(OutOfBounds {
            field: field.into(),
            value: format!("{:?}", text.chars().take(40).collect::<String>()),
            rule: "but must not contain a comma (filters list them with commas)".into(),
        });
    }
    Ok(())
}

/// The application type an app has when its submission names none.
pub(super) const DEFAULT_APPLICATION_TYPE: &str = "YARN";

impl SubmitApp {
    /// `user`'s submission of `asks` to leaf `queue`, charged to `project`,
    /// every other field as when left out (name "app", priority 0, no
    /// reservation, id, type, tags or lifetime).
    pub fn new(user: &str, queue: &str, project: &str, asks: Vec<AskSpec>) -> SubmitApp {
        SubmitApp {
            name: default_name(),
            queue: queue.into(),
            user: user.into(),
            project: project.into(),
            priority: 0,
            asks,
            application_id: None,
            reservation_id: None,
            application_type: None,
            tags: Vec::new(),
            lifetime_s: None,
            node_label_expression: None,
        }
    }

    /// Every field within its documented bound (`limits.rs`); the refusal
    /// names the field and the limit.
    pub fn check(&self) -> Result<(), OutOfBounds> {
        use crate::limits::*;
        name("name", &self.name)?;
        name("queue", &self.queue)?;
        name("user", &self.user)?;
        name("project", &self.project)?;
        if let Some(id) = &self.reservation_id {
            name("reservation_id", id)?;
        }
        if let Some(id) = &self.application_id {
            name("application_id", id)?;
        }
        SubmitApp::check_type_and_tags("", self.application_type.as_deref(), &self.tags)?;
        if let Some(lifetime_s) = self.lifetime_s {
            within("lifetime_s", lifetime_s, 1, MAX_APP_LIFETIME_S)?;
        }
        if let Some(expression) = &self.node_label_expression {
            node_label_expression("node_label_expression", expression)?;
        }
        if self.asks.is_empty() {
            return Err(OutOfBounds {
                field: "asks".into(),
                value: "empty".into(),
                rule: "but an app must ask for at least one container".into(),
            });
        }
        at_most("asks", self.asks.len(), MAX_ASKS_PER_APP)?;
        for (i, ask) in self.asks.iter().enumerate() {
            within(
                format!("asks[{i}].count"),
                ask.count,
                1,
                MAX_CONTAINERS_PER_ASK,
            )?;
            within(
                format!("asks[{i}].memory_mb"),
                ask.memory_mb,
                1,
                MAX_MEMORY_MB,
            )?;
            within(format!("asks[{i}].vcores"), ask.vcores, 1, MAX_VCORES)?;
            within(format!("asks[{i}].gpus"), ask.gpus, 0, MAX_GPUS)?;
            if let Some(duration_ms) = ask.duration_ms {
                within(
                    format!("asks[{i}].duration_ms"),
                    duration_ms,
                    1,
                    MAX_DURATION_MS,
                )?;
            }
            within(
                format!("asks[{i}].max_attempts"),
                ask.max_attempts,
                1,
                MAX_ATTEMPTS,
            )?;
            match &ask.command {
                Some(command) => check_command(&format!("asks[{i}].command"), command)?,
                None if ask.duration_ms.is_none() => {
                    return Err(OutOfBounds {
                        field: format!("asks[{i}]"),
                        value: "neither command nor duration_ms".into(),
                        rule: "but an ask needs a command (what its containers run) or a duration_ms (how long they run)".into(),
                    });
                }
                None => {}
            }
            check_env(&format!("asks[{i}].env"), &ask.env)?;
            if let Some(command) = &ask.command {
                let bytes =
                    crate::protocol::node::launch_bytes(command, &ask.env, ask.yarn.as_ref());
                if bytes > MAX_LAUNCH_BYTES {
                    return Err(OutOfBounds {
                        field: format!("asks[{i}]"),
                        value: format!("a command, env and launch context of {bytes} bytes"),
                        rule: format!(
                            "but they may hold at most {MAX_LAUNCH_BYTES} bytes together"
                        ),
                    });
                }
            }
            if let Some(expression) = &ask.node_label_expression {
                node_label_expression(format!("asks[{i}].node_label_expression"), expression)?;
            }
            super::constraints::check_tags(
                &format!("asks[{i}].allocation_tags"),
                &ask.allocation_tags,
            )?;
            if let Some(constraint) = &ask.placement_constraint {
                super::PlacementConstraint::parse(
                    &format!("asks[{i}].placement_constraint"),
                    constraint,
                )?;
            }
            if let Some(locality) = &ask.locality {
                locality.check(&format!("asks[{i}].locality"))?;
            }
            if let Some(yarn) = &ask.yarn {
                yarn.check().map_err(|rule| OutOfBounds {
                    field: format!("asks[{i}].launch_context"),
                    value: "refused".into(),
                    rule: format!("because {rule}"),
                })?;
            }
            if let Some(gang) = &ask.gang {
                within(
                    format!("asks[{i}].gang.minimum"),
                    gang.minimum,
                    1,
                    ask.count.max(1),
                )?;
                if let Some(timeout_ms) = gang.timeout_ms {
                    within(
                        format!("asks[{i}].gang.timeout_ms"),
                        timeout_ms,
                        1,
                        MAX_DURATION_MS,
                    )?;
                }
            }
        }
        Ok(())
    }
}

fn default_name() -> String {
    "app".into()
}

fn default_queue() -> String {
    "default".into()
}

/// One ask of a running app.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Ask {
    /// The size of each of its containers.
    pub resources: Resources,
    /// How long a container runs on a simulated node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// What a container runs on an agent, shared by all of them.
    #[serde(skip)]
    pub launch: Arc<Launch>,
    /// Containers asked for in all.
    pub count: u32,
    /// Containers not yet allocated.
    pub pending: u32,
    /// How often one container may run before a failure fails the app
    /// (the spec's `max_attempts`).
    pub max_attempts: u32,
    /// The attempt numbers of failed containers asked for again (each ≥ 2),
    /// taken before fresh ones.
    #[serde(skip)]
    pub retries: Vec<u32>,
    /// All or nothing: its gang, if it is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gang: Option<Gang>,
    /// The node label (partition) its containers run in; "" for the
    /// default partition, which may also borrow a non-exclusive label's
    /// idle room.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub partition: String,
    /// Tags its containers carry (YARN's allocation tags).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allocation_tags: Vec<String>,
    /// Where its containers may go (`constraints.rs`).
    #[serde(
        rename = "placement_constraint",
        skip_serializing_if = "Option::is_none",
        serialize_with = "constraint_text"
    )]
    #[schema(value_type = Option<String>)]
    pub constraint: Option<super::PlacementConstraint>,
    /// Where it would rather run, and where delay scheduling stands.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub locality: Option<super::Locality>,
    /// Hosts (as YARN's NodeIds name them) and racks its containers must
    /// not go to: its YARN master's blacklist, one set shared by the
    /// master's asks (not shown: it may be long).
    #[serde(skip)]
    #[schema(ignore)]
    pub avoid: Arc<BTreeSet<String>>,
    /// Whether its containers may wait in an agent's queue.
    #[serde(skip_serializing_if = "ExecutionType::is_guaranteed")]
    pub execution_type: ExecutionType,
}

impl Ask {
    /// Whether `node` is a place it must not go.
    pub fn avoids(&self, node: &super::Node) -> bool {
        !self.avoid.is_empty()
            && (self.avoid.contains(&node.id)
                || self.avoid.contains(node.yarn_host())
                || self.avoid.contains(node.rack()))
    }
}

fn constraint_text<S: serde::Serializer>(
    constraint: &Option<super::PlacementConstraint>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match constraint {
        Some(constraint) => serializer.serialize_str(&constraint.text),
        None => serializer.serialize_none(),
    }
}

/// The most container records one app keeps (the oldest go first).
pub(super) const MAX_CONTAINER_RECORDS: usize = 10_000;

/// One container of an app: where it ran and how it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRecord {
    /// The container's number in the cluster: records are in its order.
    #[serde(skip)]
    pub seq: u64,
    /// YARN's container id (`container_…`).
    pub id: String,
    /// The node it was allocated on.
    pub node: String,
    /// 1 for the first run of its slot, 2 for the run after one failure, …
    pub attempt: u32,
    /// When it was allocated, in ms since the epoch.
    pub start_time_ms: u64,
    /// When it ended, in ms since the epoch; none while it runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finish_time_ms: Option<u64>,
    /// YARN's ContainerExitStatus, once it ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<i32>,
    /// Why it failed, in its agent's words; empty unless it failed.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub diagnostics: String,
}

/// What each container of an ask runs on an agent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Launch {
    /// The argv or shell line; none for an ask that gives only a duration
    /// (an agent runs `sleep` for it).
    pub command: Option<ContainerCommand>,
    /// Variables added to each container's environment.
    pub env: BTreeMap<String, String>,
    /// What a YARN client's launch context adds (its local resources and
    /// tokens); none for Weft's own asks.
    pub yarn: Option<crate::protocol::node::YarnLaunch>,
}

impl Ask {
    /// The ask a submission's spec becomes, submitted at `now`, in
    /// `partition` (its expression resolved, see [`Cluster::submit`]).
    ///
    /// [`Cluster::submit`]: super::Cluster::submit
    pub fn from_spec(spec: &AskSpec, partition: String, now: u64) -> Ask {
        Ask {
            resources: Resources::new(spec.memory_mb, spec.vcores, spec.gpus),
            duration_ms: spec.duration_ms,
            launch: Arc::new(Launch {
                command: spec.command.clone(),
                env: spec.env.clone(),
                yarn: spec.yarn.clone(),
            }),
            count: spec.count,
            pending: spec.count,
            max_attempts: spec.max_attempts,
            retries: Vec::new(),
            gang: spec.gang.map(|gang| Gang {
                minimum: gang.minimum,
                deadline_ms: gang.timeout_ms.map(|t| now.saturating_add(t)),
                on_timeout: gang.on_timeout,
                placed: false,
            }),
            partition,
            allocation_tags: spec.allocation_tags.clone(),
            // Checked with the submission (SubmitApp::check).
            constraint: spec
                .placement_constraint
                .as_deref()
                .and_then(|text| super::PlacementConstraint::parse("", text).ok()),
            locality: spec.locality.as_ref().map(super::Locality::from_spec),
            avoid: Arc::default(),
            execution_type: spec.execution_type,
        }
    }

    /// How long a container of this ask runs on a simulated node: its
    /// duration, or one second for an ask that gives only a command.
    pub fn simulated_duration_ms(&self) -> u64 {
        self.duration_ms.unwrap_or(SIMULATED_COMMAND_MS)
    }
}

/// How long a container that gives only a command runs on a simulated node.
pub const SIMULATED_COMMAND_MS: u64 = 1000;

/// An argv or shell line within bounds: no NUL (the OS refuses it), at
/// most 4096 words and 1 MiB in all.
fn check_command(field: &str, command: &ContainerCommand) -> Result<(), OutOfBounds> {
    use crate::limits::*;
    let refuse = |rule: &str| OutOfBounds {
        field: field.to_string(),
        value: "the command".into(),
        rule: rule.to_string(),
    };
    let words: Vec<&String> = match command {
        ContainerCommand::Argv(argv) => argv.iter().collect(),
        ContainerCommand::Shell(line) => vec![line],
    };
    if words.is_empty() || words[0].trim().is_empty() {
        return Err(refuse("but a command needs at least a program name"));
    }
    at_most(field, words.len(), MAX_COMMAND_WORDS)?;
    for (i, word) in words.iter().enumerate() {
        // Linux refuses one exec argument over 128 KiB (MAX_ARG_STRLEN).
        at_most(
            format!("{field}[{i}] (bytes)"),
            word.len(),
            MAX_COMMAND_WORD_BYTES,
        )?;
    }
    let total: usize = words.iter().map(|w| w.len()).sum();
    at_most(format!("{field} (bytes)"), total, MAX_COMMAND_BYTES)?;
    if words.iter().any(|w| w.contains('\0')) {
        return Err(refuse("but it contains a NUL byte"));
    }
    Ok(())
}

/// Environment variables within bounds: names `[A-Za-z_][A-Za-z0-9_]*` of
/// at most 256 bytes, values without NUL of at most 64 KiB, 1000 in all.
fn check_env(field: &str, env: &BTreeMap<String, String>) -> Result<(), OutOfBounds> {
    use crate::limits::*;
    at_most(field, env.len(), MAX_ENV_VARS)?;
    for (name, value) in env {
        let valid = !name.is_empty()
            && name.len() <= MAX_NAME_BYTES
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(OutOfBounds {
                field: format!("{field}.{name}"),
                value: "the name".into(),
                rule: "but a variable name is [A-Za-z_][A-Za-z0-9_]*, at most 256 bytes".into(),
            });
        }
        at_most(
            format!("{field}.{name} (bytes)"),
            value.len(),
            MAX_ENV_VALUE_BYTES,
        )?;
        if value.contains('\0') {
            return Err(OutOfBounds {
                field: format!("{field}.{name}"),
                value: "the value".into(),
                rule: "but it contains a NUL byte".into(),
            });
        }
    }
    Ok(())
}

/// An application (YARN's RMApp): who submitted it where, what it asks
/// for, what it holds and has used, and how it ended.
#[derive(Debug, Clone, Serialize)]
pub struct App {
    /// YARN's application id (`application_<cluster timestamp>_<number>`).
    pub id: String,
    /// What people call it (YARN's application-name).
    pub name: String,
    /// The leaf queue's name.
    pub queue: String,
    /// Its leaf queue's index in the cluster's queue tree
    /// (`QueueTree::queues`).
    #[serde(skip)]
    pub queue_index: usize,
    /// The host the submission came from.
    pub submitter: String,
    /// Who it runs as.
    pub user: String,
    /// The project charged for its containers.
    pub project: String,
    /// YARN's application priority: its queue serves higher numbers first.
    pub priority: i32,
    /// Where it is in its life (YARN's state).
    pub state: AppState,
    /// When it was submitted, in ms since the epoch.
    pub submit_time_ms: u64,
    /// When its first container was allocated; none until then.
    pub start_time_ms: Option<u64>,
    /// When it finished, failed or was killed; none while it is active.
    pub finish_time_ms: Option<u64>,
    /// What it asks for, in its submission's order.
    pub asks: Vec<Ask>,
    /// Resources of its running containers.
    pub used: Resources,
    /// Its containers running now.
    pub running_containers: u32,
    /// Its containers that ran to their end (exit 0, or their duration on a
    /// simulated node).
    pub finished_containers: u32,
    /// Containers that exited non-zero (each retried while its ask allows).
    pub failed_containers: u32,
    /// Why it failed or was killed, for people (YARN's diagnostics).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub diagnostics: String,
    /// The exit status of the container whose failure failed it.
    pub exit_status: Option<i32>,
    /// Credits charged for its containers so far (at each QUOTA_COMPUTE
    /// and container end).
    pub credits: f64,
    /// Its containers, newest last (at most [`MAX_CONTAINER_RECORDS`]):
    /// where each ran and how it ended, for its logs and its page.
    #[serde(skip)]
    pub containers: std::collections::VecDeque<ContainerRecord>,
    /// Containers taken back by reclaim (and asked for again).
    pub preempted_containers: u32,
    /// Containers lost with their node (and asked for again).
    pub lost_containers: u32,
    /// Containers allocated to it in all (each attempt counts).
    pub containers_run: u32,
    /// The reservation it runs in while that is active.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reservation_id: Option<String>,
    /// YARN's applicationType ("YARN" unless the submission said).
    pub application_type: String,
    /// YARN's application tags, lower case.
    pub tags: Vec<String>,
    /// What its containers held over time, counted up to
    /// `usage_counted_ms` (see [`App::usage_at`]).
    pub usage: ResourceSeconds,
    /// The time, in ms since the epoch, `usage` is counted up to.
    pub usage_counted_ms: u64,
    /// When its lifetime ends, in ms since the epoch (YARN's LIFETIME
    /// timeout): an app still active then is killed. None: no lifetime.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifetime_deadline_ms: Option<u64>,
    /// The node label expression it was submitted with ("" for none).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub node_label_expression: String,
    /// Its YARN application master, when its first ask is one
    /// (`master.rs`).
    #[serde(skip)]
    pub master: Option<Box<super::Master>>,
}

impl App {
    /// YARN's final status: its master's, when it unregistered with one and
    /// the app finished; else its state's.
    pub fn final_status(&self) -> &'static str {
        match (&self.master, self.state) {
            (Some(master), AppState::Finished) => match &master.finished {
                Some(finish) => match finish.final_status {
                    super::FinalStatus::Undefined => "UNDEFINED",
                    status => status.as_str(),
                },
                None => self.state.final_status(),
            },
            _ => self.state.final_status(),
        }
    }

    /// YARN's progress, 0 to 1: 1 once ended; a registered YARN master's
    /// own word; else the share of its containers that ended.
    pub fn progress(&self) -> f64 {
        if self.finish_time_ms.is_some() {
            return 1.0;
        }
        if let Some(master) = self.master.as_deref().filter(|m| m.registered) {
            return f64::from(master.progress);
        }
        let containers = u64::from(self.finished_containers)
            .saturating_add(u64::from(self.running_containers))
            .saturating_add(self.pending_containers());
        if containers == 0 {
            0.0
        } else {
            self.finished_containers as f64 / containers as f64
        }
    }

    /// Counts what its running containers held since the last count, up to
    /// `now`.
    fn count_usage(&mut self, now: u64) {
        if now > self.usage_counted_ms {
            self.usage = self.usage.plus(self.used, now - self.usage_counted_ms);
            self.usage_counted_ms = now;
        }
    }

    /// A container holding `resources` starts at `now`. Each container is
    /// counted from its start to its end: should the clock have stepped
    /// back behind the last count, the time between is counted for it now.
    pub fn hold(&mut self, resources: Resources, now: u64) {
        if now >= self.usage_counted_ms {
            self.count_usage(now);
        } else {
            self.usage = self.usage.plus(resources, self.usage_counted_ms - now);
        }
        self.used += resources;
    }

    /// A container holding `resources` since `start` ended at `at`, which
    /// an agent may report after later counts: what was counted for it past
    /// its end is taken back (never more than was counted since its start,
    /// should the clock have stepped back).
    pub fn release(&mut self, resources: Resources, start: u64, at: u64) {
        if at >= self.usage_counted_ms {
            self.count_usage(at);
        } else {
            let counted_past_end = self.usage_counted_ms - at.max(start).min(self.usage_counted_ms);
            self.usage = self.usage.minus(resources, counted_past_end);
        }
        self.used -= resources;
    }

    /// Its use up to `now`: what was counted, and what its running
    /// containers held since.
    pub fn usage_at(&self, now: u64) -> ResourceSeconds {
        self.usage
            .plus(self.used, now.saturating_sub(self.usage_counted_ms))
    }

    /// Containers asked for and not yet allocated, over all its asks.
    pub fn pending_containers(&self) -> u64 {
        self.asks.iter().map(|a| u64::from(a.pending)).sum()
    }

    /// Resources asked for and not yet allocated.
    pub fn pending_resources(&self) -> Resources {
        self.asks.iter().fold(Resources::ZERO, |sum, ask| {
            sum + ask.resources.saturating_times(ask.pending)
        })
    }

    /// Whether nothing of it runs or waits: no running container and none
    /// pending.
    pub fn is_done(&self) -> bool {
        self.running_containers == 0 && self.pending_containers() == 0
    }
}

/// Which apps a listing wants, with YARN's filters: states, queue, user,
/// started and finished time windows (inclusive), and at most `limit`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AppFilter {
    /// YARN's `states`: the app is in one of them.
    pub states: Option<Vec<AppState>>,
    /// YARN's final status (UNDEFINED, SUCCEEDED, FAILED, KILLED).
    pub final_status: Option<String>,
    /// YARN's `queue`: the app's leaf queue has this name.
    pub queue: Option<String>,
    /// YARN's `user`: the app runs as this user.
    pub user: Option<String>,
    /// YARN's `name`: the app has this name.
    pub name: Option<String>,
    /// Application types, lower case: the app's, lowered, is one of them.
    /// (Sets: a long list of repeats costs one look-up per app.)
    pub types: Option<std::collections::BTreeSet<String>>,
    /// Tags, lower case: the app has at least one of them.
    pub tags: Option<std::collections::BTreeSet<String>>,
    /// YARN's `startedTimeBegin` and `startedTimeEnd`, in ms since the
    /// epoch, either open; an app not started counts as started at 0.
    pub started: (Option<u64>, Option<u64>),
    /// YARN's `finishedTimeBegin` and `finishedTimeEnd`, in ms since the
    /// epoch, either open; an app not finished counts as finished at 0.
    pub finished: (Option<u64>, Option<u64>),
    /// The most apps listed: the newest that match.
    pub limit: usize,
}

impl AppFilter {
    /// Whether `app` passes every filter given (a filter left `None`
    /// passes every app).
    pub fn matches(&self, app: &App) -> bool {
        let within = |time: Option<u64>, (begin, end): (Option<u64>, Option<u64>)| {
            if begin.is_none() && end.is_none() {
                return true;
            }
            // As YARN: an app not started (or not finished) has time 0.
            let time = time.unwrap_or(0);
            begin.is_none_or(|b| time >= b) && end.is_none_or(|e| time <= e)
        };
        self.states.as_ref().is_none_or(|s| s.contains(&app.state))
            && self
                .final_status
                .as_ref()
                .is_none_or(|f| f == app.final_status())
            && self.queue.as_ref().is_none_or(|q| *q == app.queue)
            && self.user.as_ref().is_none_or(|u| *u == app.user)
            && self.name.as_ref().is_none_or(|n| *n == app.name)
            && self
                .types
                .as_ref()
                .is_none_or(|t| t.contains(&app.application_type.to_lowercase()))
            && self
                .tags
                .as_ref()
                .is_none_or(|t| app.tags.iter().any(|tag| t.contains(tag)))
            && within(app.start_time_ms, self.started)
            && within(app.finish_time_ms, self.finished)
    }

    /// The newest `limit` matching apps, in submission order.
    pub fn select<'a>(&self, apps: &'a super::AppTable) -> Vec<&'a App> {
        let mut selected: Vec<&App> = apps
            .iter()
            .rev()
            .filter(|app| self.matches(app))
            .take(self.limit)
            .collect();
        selected.reverse();
        selected
    }
}

impl std::str::FromStr for AppState {
    type Err = String;

    /// YARN's state names, any case. YARN's other states (NEW, SUBMITTED,
    /// …) are valid filters that Weft's apps never match.
    fn from_str(text: &str) -> Result<AppState, String> {
        match text.trim().to_ascii_uppercase().as_str() {
            "ACCEPTED" => Ok(AppState::Accepted),
            "RUNNING" => Ok(AppState::Running),
            "FINISHED" => Ok(AppState::Finished),
            "FAILED" => Ok(AppState::Failed),
            "KILLED" => Ok(AppState::Killed),
            other => Err(other.to_string()),
        }
    }
}

/// YARN's application states that Weft accepts in a filter but never reaches.
pub const OTHER_YARN_APP_STATES: &[&str] = &["NEW", "NEW_SAVING", "SUBMITTED"];
