//! Inputs for the contract properties, generated from a seed: the same seed
//! gives the same inputs, so a failure can be reproduced with `--seed`.
//! Every input keeps the guarantees the WIT documents for the host's own.

use crate::policy::UsageRow;
use crate::policy::bindings::{
    Admission, Apps, Asks, Attribute, ChargeContext, ConstraintScope, Containers, ExecutionType,
    LocalityLevel, Market, Nodes, PartitionLoad, PlacementConstraint, PlanContext, PlanSettings,
    PriceMultiplicators, QueueLoad, Queues, QuoteRequest, RoundKind, SharingResources, Snapshot,
    Timeline, Usage, Utilization,
};
use crate::policy::engine::call_seed;

/// A small seeded generator (SplitMix64 through the engine's call seeds).
#[derive(Debug)]
pub(super) struct Inputs {
    seed: u64,
    drawn: u64,
}

impl Inputs {
    pub(super) fn new(seed: u64) -> Inputs {
        Inputs { seed, drawn: 0 }
    }

    fn next(&mut self) -> u64 {
        self.drawn += 1;
        call_seed(self.seed, self.drawn)
    }

    /// Uniform in `0..n` (n > 0).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn pick<T: Copy>(&mut self, choices: &[T]) -> T {
        choices[self.below(choices.len() as u64) as usize]
    }

    pub(super) fn utilization(&mut self) -> Utilization {
        let mut fraction = || match self.below(4) {
            0 => 0.0,
            1 => self.pick(&[0.25, 0.5, 0.9, 1.0, 1.5]),
            _ => self.unit() * 2.0,
        };
        Utilization {
            memory: fraction(),
            vcores: fraction(),
            gpus: fraction(),
        }
    }

    /// A market: a utilization, up to two partitions and three queues of
    /// some load, at some time of some day, after some multiplicators.
    pub(super) fn market(&mut self) -> Market {
        let partitions = (0..self.below(3))
            .map(|i| PartitionLoad {
                name: ["", "gpu"][i as usize].into(),
                capacity: self.load(),
                used: self.load(),
                pending: self.load(),
            })
            .collect();
        let queues = (0..self.below(4))
            .map(|i| QueueLoad {
                path: format!("root.q{i}"),
                guaranteed: self.load(),
                used: self.load(),
                pending: self.load(),
            })
            .collect();
        Market {
            now_ms: self.time_ms(),
            utilization: self.utilization(),
            partitions,
            queues,
            last: self.multiplicators(),
        }
    }

    fn load(&mut self) -> SharingResources {
        SharingResources {
            memory_mb: self.pick(&[0, 1024, 65_536]),
            vcores: self.pick(&[0, 1, 64]),
            gpus: self.pick(&[0, 0, 4]),
        }
    }

    /// An instant in 2023–2024, at any time of day.
    fn time_ms(&mut self) -> i64 {
        1_672_531_200_000 + self.below(2 * 365 * 86_400_000) as i64
    }

    /// One of a few contexts: projects `ml`, `web` and `default`, two queues,
    /// a GPU partition, some tags and attributes, a reservation now and then.
    fn context(&mut self) -> ChargeContext {
        let app = self.below(6);
        ChargeContext {
            app: format!("application_1700000000000_{:04}", app + 1),
            queue: self.pick(&["root.default", "root.research"]).into(),
            user: self.pick(&["alice", "bob"]).into(),
            project: self.pick(&["ml", "web", "default"]).into(),
            application_type: self.pick(&["weft", "SPARK", "MAPREDUCE"]).into(),
            application_tags: (0..self.below(3)).map(|i| format!("tag{i}")).collect(),
            priority: self.pick(&[0, 0, 1, 10]),
            node_label: self.pick(&["", "", "gpu"]).into(),
            node_attributes: match self.below(3) {
                0 => vec![Attribute {
                    key: "nm.yarn.io/gpu-model".into(),
                    value: "a100".into(),
                }],
                _ => vec![],
            },
            execution_type: ExecutionType::Guaranteed,
            reservation: (self.below(5) == 0).then(|| "reservation_0_0001".into()),
        }
    }

    /// A quote of 1 to 20 containers for up to a day, from any time.
    pub(super) fn quote(&mut self) -> QuoteRequest {
        QuoteRequest {
            context: self.context(),
            memory_mb: self.pick(&[0, 512, 1024, 8192]),
            vcores: self.pick(&[0, 1, 2, 16]),
            gpus: self.pick(&[0, 0, 1]),
            containers: 1 + self.below(20) as u32,
            start_ms: self.time_ms(),
            duration_ms: self.pick(&[0, 1000, 60_000, 3_600_000, 86_400_000]),
        }
    }

    pub(super) fn multiplicators(&mut self) -> PriceMultiplicators {
        PriceMultiplicators {
            general: self.pick(&[1.0, 1.0, 1.5, 2.75]),
            gpu: self.pick(&[1.0, 1.0, 2.0, 4.5]),
        }
    }

    /// `rows` containers of mixed sizes: some idle a while, some with GPUs,
    /// some charged for no time at all.
    /// Rows of up to 5 contexts, over intervals at any time of day.
    pub(super) fn usage(&mut self, rows: usize) -> Usage {
        let mut usage = Usage::empty();
        usage.contexts = (0..1 + self.below(5)).map(|_| self.context()).collect();
        for _ in 0..rows {
            let seconds = match self.below(8) {
                0 => 0.0,
                1 => self.pick(&[1.0, 60.0, 3600.0, 86_400.0]),
                _ => (self.unit() * 600.0 * 1000.0).round() / 1000.0,
            };
            let start_ms = self.time_ms();
            let row = UsageRow {
                seconds,
                memory_mb: self.pick(&[0, 256, 1024, 2048, 4096, 16_384, 262_144]),
                vcores: self.pick(&[0, 1, 1, 2, 4, 16, 64]),
                gpus: self.pick(&[0, 0, 0, 0, 1, 2, 8]),
                start_ms,
                end_ms: start_ms + (seconds * 1000.0) as i64,
                context: self.below(usage.contexts.len() as u64) as u32,
            };
            usage.push(row);
        }
        usage
    }

    /// A cluster of up to 40 nodes, a root with up to 5 leaves (capacities
    /// adding up to 100), up to 30 apps by up to 6 users, and their asks.
    pub(super) fn snapshot(&mut self) -> Snapshot {
        let node_count = 1 + self.below(40) as usize;
        let mut nodes = Nodes::empty();
        for _ in 0..node_count {
            let memory = self.pick(&[4096, 8192, 65_536]);
            let vcores = self.pick(&[4, 8, 32]);
            let gpus = self.pick(&[0, 0, 4]);
            nodes.capacity_memory_mb.push(memory);
            nodes.capacity_vcores.push(vcores);
            nodes.capacity_gpus.push(gpus);
            nodes.free_memory_mb.push(self.below(memory + 1));
            nodes.free_vcores.push(self.below(vcores + 1));
            nodes.free_gpus.push(self.below(gpus + 1));
        }
        let leaves = 1 + self.below(5) as usize;
        let mut queues = Queues {
            parent: vec![0],
            capacity: vec![100.0],
            maximum_capacity: vec![100.0],
            minimum_user_limit_percent: vec![100.0],
            user_limit_factor: vec![Some(1.0)],
            fair: vec![false],
            used_memory_mb: vec![0],
            used_vcores: vec![0],
            used_gpus: vec![0],
            ..Queues::empty()
        };
        let share = 100.0 / leaves as f64;
        for _ in 0..leaves {
            queues.parent.push(0);
            queues.capacity.push(share);
            queues
                .maximum_capacity
                .push(self.pick(&[share, 100.0, 100.0_f64.max(share * 2.0)]));
            queues
                .minimum_user_limit_percent
                .push(self.pick(&[100.0, 50.0, 25.0]));
            queues
                .user_limit_factor
                .push(self.pick(&[Some(1.0), Some(2.0), None]));
            queues.fair.push(self.below(2) == 0);
            queues.used_memory_mb.push(0);
            queues.used_vcores.push(0);
            queues.used_gpus.push(0);
        }
        let app_count = self.below(31) as usize;
        let mut apps = Apps::empty();
        let mut asks = Asks::empty();
        let mut users = 0;
        for app in 0..app_count {
            let queue = 1 + self.below(leaves as u64) as u32;
            // Users are numbered in order of first appearance, with no gaps.
            let user = self.below(users + 1).min(5) as u32;
            users = users.max(u64::from(user) + 1);
            let used = (
                self.pick(&[0, 1024, 8192]),
                self.pick(&[0, 1, 4]),
                self.pick(&[0, 0, 1]),
            );
            apps.queue.push(queue);
            apps.user.push(user);
            apps.priority.push(self.pick(&[0, 0, 1, 5, -1]));
            apps.submit_time_ms.push(app as i64 * 1000);
            apps.used_memory_mb.push(used.0);
            apps.used_vcores.push(used.1);
            apps.used_gpus.push(used.2);
            // A queue's use includes its apps', and root's every queue's.
            for q in [queue as usize, 0] {
                queues.used_memory_mb[q] += used.0;
                queues.used_vcores[q] += used.1;
                queues.used_gpus[q] += used.2;
            }
            for _ in 0..self.below(3) {
                asks.app.push(app as u32);
                asks.pending.push(1 + self.below(12) as u32);
                asks.memory_mb.push(self.pick(&[512, 1024, 4096, 100_000]));
                asks.vcores.push(self.pick(&[1, 1, 2, 64]));
                asks.gpus.push(self.pick(&[0, 0, 0, 1]));
            }
        }
        let mut snapshot =
            Snapshot::of_columns(app_count as i64 * 1000 + 500, nodes, queues, apps, asks);
        self.label(&mut snapshot);
        self.constrain(&mut snapshot);
        snapshot
    }

    /// Makes a third of the rounds labelled: a `gpu` partition's own round
    /// (its nodes, its asks), or its idle room lent to the default
    /// partition's asks; and puts every node on one of two racks.
    fn label(&mut self, snapshot: &mut Snapshot) {
        snapshot.racks = vec!["/rack1".into(), "/rack2".into()];
        for rack in &mut snapshot.nodes.rack {
            *rack = self.below(2) as u32;
        }
        let kind = match self.below(6) {
            0 => RoundKind::Partition,
            1 => RoundKind::Lending,
            _ => return,
        };
        snapshot.partitions.name.push("gpu".into());
        snapshot
            .partitions
            .exclusive
            .push(kind == RoundKind::Partition);
        snapshot.round.kind = kind;
        snapshot.round.partition = 1;
        snapshot.nodes.partition.fill(1);
        if kind == RoundKind::Partition {
            snapshot.asks.partition.fill(1);
        }
    }

    /// Gives a fifth of the asks anti-affinity (at most one `zk` container
    /// a node, some nodes holding one already) and a fifth a gang of at
    /// least half their containers, and some asks a preferred node.
    fn constrain(&mut self, snapshot: &mut Snapshot) {
        let nodes = snapshot.nodes.free_memory_mb.len() as u64;
        let apps = snapshot.apps.queue.len() as u64;
        let mut tagged = false;
        for k in 0..snapshot.asks.app.len() {
            match self.below(5) {
                0 => {
                    snapshot.asks.constraint[k] = Some(PlacementConstraint {
                        text: "NOTIN,NODE,all/zk".into(),
                        scope: ConstraintScope::Node,
                        tag: "zk".into(),
                        all_apps: true,
                        minimum: 0,
                        maximum: 0,
                    });
                    snapshot.ask_tags.ask.push(k as u32);
                    snapshot.ask_tags.tag.push("zk".into());
                    tagged = true;
                }
                1 => {
                    let pending = snapshot.asks.pending[k];
                    snapshot.asks.gang_minimum[k] = Some(pending.div_ceil(2).max(1));
                }
                2 => {
                    snapshot.ask_nodes.ask.push(k as u32);
                    snapshot.ask_nodes.node.push(self.below(nodes) as u32);
                    snapshot.asks.locality_level[k] = LocalityLevel::NodeLocal;
                    snapshot.asks.missed_opportunities[k] = self.below(3) as u32;
                }
                _ => {}
            }
        }
        if tagged && apps > 0 {
            for node in 0..nodes {
                if self.below(3) == 0 {
                    snapshot.tag_counts.node.push(node as u32);
                    snapshot.tag_counts.app.push(self.below(apps) as u32);
                    snapshot.tag_counts.tag.push("zk".into());
                    snapshot.tag_counts.count.push(1);
                }
            }
        }
    }

    /// Up to 60 running containers of the snapshot's apps on its nodes.
    pub(super) fn running(&mut self, snapshot: &Snapshot) -> Containers {
        let mut running = Containers::empty();
        let apps = snapshot.apps.queue.len() as u64;
        let nodes = snapshot.nodes.free_memory_mb.len() as u64;
        if apps == 0 || nodes == 0 {
            return running;
        }
        for _ in 0..self.below(61) {
            running.app.push(self.below(apps) as u32);
            running.node.push(self.below(nodes) as u32);
            running.memory_mb.push(self.pick(&[512, 1024, 4096]));
            running.vcores.push(self.pick(&[1, 2]));
            running.gpus.push(0);
            running
                .start_time_ms
                .push(self.below(snapshot.now_ms.max(1) as u64) as i64);
            running.execution_type.push(ExecutionType::Guaranteed);
            if self.below(4) == 0 {
                running.tags.container.push(running.app.len() as u32 - 1);
                running.tags.tag.push("zk".into());
            }
        }
        running
    }

    /// A random part `[a, b)` of `[from, to)`, at least 1 ms long.
    pub(super) fn span(&mut self, from: i64, to: i64) -> (i64, i64) {
        let a = from + self.below((to - from - 1).max(1) as u64) as i64;
        let b = a + 1 + self.below((to - a - 1).max(1) as u64) as i64;
        (a, b.min(to))
    }

    /// A step function over `[from, to)` with up to 8 steps of at most
    /// `most` each, ending at zero.
    fn timeline(&mut self, from: i64, to: i64, most: &SharingResources) -> Timeline {
        let mut at: Vec<i64> = (0..self.below(8))
            .map(|_| from + self.below((to - from) as u64) as i64)
            .collect();
        at.sort_unstable();
        at.dedup();
        let mut timeline = Timeline {
            at_ms: vec![],
            memory_mb: vec![],
            vcores: vec![],
            gpus: vec![],
        };
        for at_ms in at {
            timeline.at_ms.push(at_ms);
            timeline.memory_mb.push(self.below(most.memory_mb + 1));
            timeline.vcores.push(self.below(most.vcores + 1));
            timeline.gpus.push(self.below(most.gpus + 1));
        }
        if let Some(last) = timeline.at_ms.last().copied() {
            // The host ends every timeline with a zero step.
            timeline.at_ms.push((last + 1).max(to - 1));
            timeline.memory_mb.push(0);
            timeline.vcores.push(0);
            timeline.gpus.push(0);
        }
        timeline
    }

    /// A plan of a queue with up to 100 GB over [0, 10 h), the user's and
    /// the plan's holdings, and an empty candidate (as `available` gets it).
    /// What is held already keeps every limit, as the host's plans do: the
    /// user holds at most the smaller of the two limits at any instant, the
    /// plan at most its capacity.
    pub(super) fn admission(&mut self) -> Admission {
        const HOUR: i64 = 3_600_000;
        let capacity = SharingResources {
            memory_mb: self.pick(&[10_240, 102_400]),
            vcores: self.pick(&[10, 100]),
            gpus: self.pick(&[0, 8]),
        };
        let instantaneous_max_capacity = self.pick(&[100.0, 50.0, 25.0]);
        let average_capacity = self.pick(&[100.0, 50.0, 10.0]);
        let part = |amount: u64, percent: f64| (amount as f64 * percent / 100.0).floor() as u64;
        let limit = f64::min(instantaneous_max_capacity, average_capacity);
        let user_most = SharingResources {
            memory_mb: part(capacity.memory_mb, limit),
            vcores: part(capacity.vcores, limit),
            gpus: part(capacity.gpus, limit),
        };
        let others_most = SharingResources {
            memory_mb: capacity.memory_mb - user_most.memory_mb,
            vcores: capacity.vcores - user_most.vcores,
            gpus: capacity.gpus - user_most.gpus,
        };
        let (from_ms, to_ms) = (0, 10 * HOUR);
        let user_committed = self.timeline(from_ms, to_ms, &user_most);
        let others = self.timeline(from_ms, to_ms, &others_most);
        let plan_committed = add(&user_committed, &others);
        Admission {
            settings: PlanSettings {
                queue: "root.contract".into(),
                capacity,
                reservation_window_ms: self.pick(&[HOUR, 4 * HOUR]),
                instantaneous_max_capacity,
                average_capacity,
            },
            user: "contract-user".into(),
            reservation_id: "reservation_0_0001".into(),
            from_ms,
            to_ms,
            candidate: empty(),
            user_committed,
            plan_committed,
            context: PlanContext {
                now_ms: self.time_ms(),
                reservation_name: String::new(),
                recurring: self.below(4) == 0,
                reservations: self.below(10) as u32,
                user_reservations: 0,
                users: self.below(4) as u32,
            },
        }
    }
}

pub(super) fn empty() -> Timeline {
    Timeline {
        at_ms: vec![],
        memory_mb: vec![],
        vcores: vec![],
        gpus: vec![],
    }
}

/// The amount of `timeline` at `t`.
pub(super) fn amount_at(timeline: &Timeline, t: i64) -> (u64, u64, u64) {
    match timeline.at_ms.partition_point(|&at| at <= t) {
        0 => (0, 0, 0),
        i => (
            timeline.memory_mb[i - 1],
            timeline.vcores[i - 1],
            timeline.gpus[i - 1],
        ),
    }
}

/// The pointwise sum of two step functions.
pub(super) fn add(a: &Timeline, b: &Timeline) -> Timeline {
    let mut at: Vec<i64> = a.at_ms.iter().chain(&b.at_ms).copied().collect();
    at.sort_unstable();
    at.dedup();
    let mut sum = empty();
    for t in at {
        let (x, y) = (amount_at(a, t), amount_at(b, t));
        sum.at_ms.push(t);
        sum.memory_mb.push(x.0.saturating_add(y.0));
        sum.vcores.push(x.1.saturating_add(y.1));
        sum.gpus.push(x.2.saturating_add(y.2));
    }
    sum
}
