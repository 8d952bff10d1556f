//! Constructors for the WIT's records of columns: empty ones for builders
//! to fill, and snapshots and usage from the columns 0.2.0 had alone —
//! every node unlabelled on the default rack, no tags, no locality, no
//! gangs, one anonymous context — for samples, benchmarks and generated
//! test cases, so each of those need not spell out what it does not use.

use super::bindings::{
    AppTags, Apps, AskNodes, AskRacks, AskTags, Asks, ChargeContext, ContainerTags, Containers,
    ExecutionType, LocalityDelays, LocalityLevel, NodeAttributes, Nodes, PartitionShares,
    Partitions, Queues, Round, RoundKind, Snapshot, TagCounts, Usage,
};

use crate::protocol::node::DEFAULT_RACK;

impl Nodes {
    /// No nodes.
    pub fn empty() -> Nodes {
        Nodes {
            free_memory_mb: vec![],
            free_vcores: vec![],
            free_gpus: vec![],
            capacity_memory_mb: vec![],
            capacity_vcores: vec![],
            capacity_gpus: vec![],
            partition: vec![],
            rack: vec![],
        }
    }
}

impl Queues {
    /// No queues.
    pub fn empty() -> Queues {
        Queues {
            path: vec![],
            parent: vec![],
            capacity: vec![],
            maximum_capacity: vec![],
            minimum_user_limit_percent: vec![],
            user_limit_factor: vec![],
            fair: vec![],
            used_memory_mb: vec![],
            used_vcores: vec![],
            used_gpus: vec![],
            decayed_memory_mb_seconds: vec![],
            decayed_vcore_seconds: vec![],
            decayed_gpu_seconds: vec![],
        }
    }
}

impl Apps {
    /// No apps.
    pub fn empty() -> Apps {
        Apps {
            queue: vec![],
            user: vec![],
            priority: vec![],
            submit_time_ms: vec![],
            used_memory_mb: vec![],
            used_vcores: vec![],
            used_gpus: vec![],
            name: vec![],
            application_type: vec![],
            project: vec![],
            start_time_ms: vec![],
            deadline_ms: vec![],
            user_decayed_memory_mb_seconds: vec![],
            user_decayed_vcore_seconds: vec![],
            user_decayed_gpu_seconds: vec![],
        }
    }
}

impl Asks {
    /// No asks.
    pub fn empty() -> Asks {
        Asks {
            app: vec![],
            pending: vec![],
            memory_mb: vec![],
            vcores: vec![],
            gpus: vec![],
            partition: vec![],
            locality_level: vec![],
            relax_locality: vec![],
            missed_opportunities: vec![],
            gang_minimum: vec![],
            constraint: vec![],
            execution_type: vec![],
        }
    }
}

impl Containers {
    /// No containers.
    pub fn empty() -> Containers {
        Containers {
            app: vec![],
            node: vec![],
            memory_mb: vec![],
            vcores: vec![],
            gpus: vec![],
            start_time_ms: vec![],
            execution_type: vec![],
            tags: ContainerTags {
                container: vec![],
                tag: vec![],
            },
        }
    }

    /// Fills the columns 0.2.0 did not have, when empty, for containers
    /// that have only its columns: guaranteed, untagged.
    pub fn complete(mut self) -> Containers {
        if self.execution_type.is_empty() {
            self.execution_type
                .resize(self.app.len(), ExecutionType::Guaranteed);
        }
        self
    }
}

impl Partitions {
    /// The default partition alone.
    pub fn default_only() -> Partitions {
        Partitions {
            name: vec![String::new()],
            exclusive: vec![true],
        }
    }
}

impl Snapshot {
    /// A snapshot of the whole cluster with every table empty but `nodes`,
    /// `queues`, `apps` and `asks`, whose columns new in 0.3.0 are filled
    /// as [`Snapshot::complete`] fills them.
    pub fn of_columns(
        now_ms: i64,
        nodes: Nodes,
        queues: Queues,
        apps: Apps,
        asks: Asks,
    ) -> Snapshot {
        Snapshot::with_tables_empty(now_ms, nodes, queues, apps, asks).complete()
    }

    /// A round of the whole cluster of the default partition on the
    /// default rack, with `nodes`, `queues`, `apps` and `asks` as given and
    /// every other table empty: for a builder to fill the rest.
    pub fn with_tables_empty(
        now_ms: i64,
        nodes: Nodes,
        queues: Queues,
        apps: Apps,
        asks: Asks,
    ) -> Snapshot {
        Snapshot {
            now_ms,
            round: Round {
                kind: RoundKind::Whole,
                partition: 0,
            },
            partitions: Partitions::default_only(),
            racks: vec![DEFAULT_RACK.into()],
            nodes,
            node_attributes: NodeAttributes {
                node: vec![],
                attribute: vec![],
            },
            queues,
            partition_shares: PartitionShares {
                queue: vec![],
                partition: vec![],
                capacity: vec![],
                maximum_capacity: vec![],
            },
            apps,
            app_tags: AppTags {
                app: vec![],
                tag: vec![],
            },
            asks,
            ask_nodes: AskNodes {
                ask: vec![],
                node: vec![],
            },
            ask_racks: AskRacks {
                ask: vec![],
                rack: vec![],
            },
            ask_tags: AskTags {
                ask: vec![],
                tag: vec![],
            },
            tag_counts: TagCounts {
                node: vec![],
                app: vec![],
                tag: vec![],
                count: vec![],
            },
            locality_delays: LocalityDelays {
                node_locality_delay: crate::config::DEFAULT_NODE_LOCALITY_DELAY,
                rack_locality_additional_delay: None,
            },
        }
    }

    /// Fills each column new in 0.3.0 that is empty while its record has
    /// rows: nodes unlabelled on the first rack, queues named `root` and
    /// `root.qN` with no decayed use, apps of type `weft` in project
    /// `default` with no name, start or deadline, asks for the default
    /// partition going anywhere, guaranteed, with no gang or constraint.
    /// A column given in part is left as it is (and refused by the checks).
    pub fn complete(mut self) -> Snapshot {
        fn fill<T: Clone>(column: &mut Vec<T>, rows: usize, value: T) {
            if column.is_empty() {
                column.resize(rows, value);
            }
        }
        let (nodes, queues, apps, asks) = (
            &mut self.nodes,
            &mut self.queues,
            &mut self.apps,
            &mut self.asks,
        );
        let n = nodes.free_memory_mb.len();
        fill(&mut nodes.partition, n, 0);
        fill(&mut nodes.rack, n, 0);
        let q = queues.parent.len();
        if queues.path.is_empty() {
            // Flat names: one queue's path never copies another's, so a
            // deep tree costs no more than a wide one.
            queues.path.extend((0..q).map(|i| match i {
                0 => "root".to_string(),
                _ => format!("root.q{i}"),
            }));
        }
        fill(&mut queues.decayed_memory_mb_seconds, q, 0.0);
        fill(&mut queues.decayed_vcore_seconds, q, 0.0);
        fill(&mut queues.decayed_gpu_seconds, q, 0.0);
        let a = apps.queue.len();
        fill(&mut apps.name, a, String::new());
        fill(&mut apps.application_type, a, "weft".into());
        fill(&mut apps.project, a, "default".into());
        fill(&mut apps.start_time_ms, a, None);
        fill(&mut apps.deadline_ms, a, None);
        fill(&mut apps.user_decayed_memory_mb_seconds, a, 0.0);
        fill(&mut apps.user_decayed_vcore_seconds, a, 0.0);
        fill(&mut apps.user_decayed_gpu_seconds, a, 0.0);
        let k = asks.app.len();
        fill(&mut asks.partition, k, 0);
        fill(&mut asks.locality_level, k, LocalityLevel::OffSwitch);
        fill(&mut asks.relax_locality, k, true);
        fill(&mut asks.missed_opportunities, k, 0);
        fill(&mut asks.gang_minimum, k, None);
        fill(&mut asks.constraint, k, None);
        fill(&mut asks.execution_type, k, ExecutionType::Guaranteed);
        self
    }
}

impl ChargeContext {
    /// A context that names nothing in particular: project `default`, user
    /// `sample`, queue `root.default`, unlabelled, guaranteed.
    pub fn anonymous() -> ChargeContext {
        ChargeContext {
            app: "application_0_0001".into(),
            queue: "root.default".into(),
            user: "sample".into(),
            project: "default".into(),
            application_type: "weft".into(),
            application_tags: vec![],
            priority: 0,
            node_label: String::new(),
            node_attributes: vec![],
            execution_type: ExecutionType::Guaranteed,
            reservation: None,
        }
    }
}

impl Usage {
    /// Usage with no rows.
    pub fn empty() -> Usage {
        Usage {
            seconds: vec![],
            memory_mb: vec![],
            vcores: vec![],
            gpus: vec![],
            start_ms: vec![],
            end_ms: vec![],
            context: vec![],
            contexts: vec![],
        }
    }

    /// Usage of the columns 0.2.0 had alone: every row in one anonymous
    /// context ([`ChargeContext::anonymous`]), its interval ending at 0 ms.
    pub fn of_columns(
        seconds: Vec<f64>,
        memory_mb: Vec<u64>,
        vcores: Vec<u64>,
        gpus: Vec<u64>,
    ) -> Usage {
        Usage {
            seconds,
            memory_mb,
            vcores,
            gpus,
            ..Usage::empty()
        }
        .complete()
    }

    /// Fills, when empty, the columns 0.2.0 did not have: every row in one
    /// anonymous context, its interval `seconds` long ending at 0 ms.
    pub fn complete(mut self) -> Usage {
        let n = self.seconds.len();
        if self.start_ms.is_empty() && self.end_ms.is_empty() {
            self.start_ms = self
                .seconds
                .iter()
                .map(|s| -((s * 1000.0).round().clamp(0.0, 1e15) as i64))
                .collect();
            self.end_ms = vec![0; n];
        }
        if self.context.is_empty() && self.contexts.is_empty() {
            self.context = vec![0; n];
            self.contexts = vec![ChargeContext::anonymous()];
        }
        self
    }

    /// Appends one row; `context` must index `contexts`.
    pub fn push(&mut self, row: UsageRow) {
        self.seconds.push(row.seconds);
        self.memory_mb.push(row.memory_mb);
        self.vcores.push(row.vcores);
        self.gpus.push(row.gpus);
        self.start_ms.push(row.start_ms);
        self.end_ms.push(row.end_ms);
        self.context.push(row.context);
    }

    /// Row `i`, which must exist.
    pub fn row(&self, i: usize) -> UsageRow {
        UsageRow {
            seconds: self.seconds[i],
            memory_mb: self.memory_mb[i],
            vcores: self.vcores[i],
            gpus: self.gpus[i],
            start_ms: self.start_ms[i],
            end_ms: self.end_ms[i],
            context: self.context[i],
        }
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.seconds.len()
    }

    /// Whether it has no rows.
    pub fn is_empty(&self) -> bool {
        self.seconds.is_empty()
    }
}

/// One row of [`Usage`], its context an index into the usage's contexts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UsageRow {
    /// Seconds charged.
    pub seconds: f64,
    /// Memory, in MB.
    pub memory_mb: u64,
    /// Vcores.
    pub vcores: u64,
    /// GPUs.
    pub gpus: u64,
    /// The interval's start, in ms on the host clock.
    pub start_ms: i64,
    /// The interval's end.
    pub end_ms: i64,
    /// Its context's index.
    pub context: u32,
}
