//! Inputs for the contract properties, generated from a seed: the same seed
//! gives the same inputs, so a failure can be reproduced with `--seed`.
//! Every input keeps the guarantees the WIT documents for the host's own.

use crate::policy::bindings::{
    Admission, Apps, Asks, Containers, Nodes, PlanSettings, PriceMultiplicators, Queues,
    SharingResources, Snapshot, Timeline, Usage, Utilization,
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

    pub(super) fn multiplicators(&mut self) -> PriceMultiplicators {
        PriceMultiplicators {
            general: self.pick(&[1.0, 1.0, 1.5, 2.75]),
            gpu: self.pick(&[1.0, 1.0, 2.0, 4.5]),
        }
    }

    /// `rows` containers of mixed sizes: some idle a while, some with GPUs,
    /// some charged for no time at all.
    pub(super) fn usage(&mut self, rows: usize) -> Usage {
        let mut usage = Usage {
            seconds: Vec::with_capacity(rows),
            memory_mb: Vec::with_capacity(rows),
            vcores: Vec::with_capacity(rows),
            gpus: Vec::with_capacity(rows),
        };
        for _ in 0..rows {
            usage.seconds.push(match self.below(8) {
                0 => 0.0,
                1 => self.pick(&[1.0, 60.0, 3600.0, 86_400.0]),
                _ => (self.unit() * 600.0 * 1000.0).round() / 1000.0,
            });
            usage
                .memory_mb
                .push(self.pick(&[0, 256, 1024, 2048, 4096, 16_384, 262_144]));
            usage.vcores.push(self.pick(&[0, 1, 1, 2, 4, 16, 64]));
            usage.gpus.push(self.pick(&[0, 0, 0, 0, 1, 2, 8]));
        }
        usage
    }

    /// A cluster of up to 40 nodes, a root with up to 5 leaves (capacities
    /// adding up to 100), up to 30 apps by up to 6 users, and their asks.
    pub(super) fn snapshot(&mut self) -> Snapshot {
        let node_count = 1 + self.below(40) as usize;
        let mut nodes = Nodes {
            free_memory_mb: vec![],
            free_vcores: vec![],
            free_gpus: vec![],
            capacity_memory_mb: vec![],
            capacity_vcores: vec![],
            capacity_gpus: vec![],
        };
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
        let mut apps = Apps {
            queue: vec![],
            user: vec![],
            priority: vec![],
            submit_time_ms: vec![],
            used_memory_mb: vec![],
            used_vcores: vec![],
            used_gpus: vec![],
        };
        let mut asks = Asks {
            app: vec![],
            pending: vec![],
            memory_mb: vec![],
            vcores: vec![],
            gpus: vec![],
        };
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
        Snapshot {
            now_ms: app_count as i64 * 1000 + 500,
            nodes,
            queues,
            apps,
            asks,
        }
    }

    /// Up to 60 running containers of the snapshot's apps on its nodes.
    pub(super) fn running(&mut self, snapshot: &Snapshot) -> Containers {
        let mut running = Containers {
            app: vec![],
            node: vec![],
            memory_mb: vec![],
            vcores: vec![],
            gpus: vec![],
            start_time_ms: vec![],
        };
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
