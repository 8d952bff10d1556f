//! Native timing of one scheduling round at the issue's target size:
//! 10,000 nodes, 1,000 leaf queues, 100,000 pending containers.
//!
//! ```text
//! cargo run -p capacity --release --example throughput
//! ```

use std::time::{Duration, Instant};

use capacity::{preempt, schedule};
use weft_policy::scheduling::{Containers, Snapshot, SnapshotBuilder, wit};

const GB: u64 = 1024;

/// `nodes` nodes of `node` (memory MB, vcores), all free; root → `parents`
/// parents → `leaves` leaves each, equal shares, every other parent's leaves
/// fair; `apps` apps per leaf (users spread over 1,000), each asking for
/// `per_app` containers of 2 GB and 1 or 2 vcores.
fn cluster(
    nodes: usize,
    node: (u64, u64),
    parents: usize,
    leaves: usize,
    apps: usize,
    per_app: u32,
) -> wit::Snapshot {
    let nodes = wit::Nodes {
        free_memory_mb: vec![node.0; nodes],
        free_vcores: vec![node.1; nodes],
        free_gpus: vec![0; nodes],
        capacity_memory_mb: vec![node.0; nodes],
        capacity_vcores: vec![node.1; nodes],
        capacity_gpus: vec![0; nodes],
        ..wit::Nodes::default()
    };
    let mut q = wit::Queues::default();
    let push = |q: &mut wit::Queues, parent: u32, capacity: f64, fair: bool| {
        q.parent.push(parent);
        q.capacity.push(capacity);
        q.maximum_capacity.push(100.0);
        q.minimum_user_limit_percent.push(100.0);
        q.user_limit_factor.push(Some(1.0));
        q.fair.push(fair);
        q.used_memory_mb.push(0);
        q.used_vcores.push(0);
        q.used_gpus.push(0);
        q.parent.len() as u32 - 1
    };
    push(&mut q, 0, 100.0, false);
    let mut leaf_ids = Vec::new();
    for p in 0..parents {
        let parent = push(&mut q, 0, 100.0 / parents as f64, false);
        for _ in 0..leaves {
            leaf_ids.push(push(&mut q, parent, 100.0 / leaves as f64, p % 2 == 1));
        }
    }
    let (mut a, mut k) = (wit::Apps::default(), wit::Asks::default());
    for (i, &leaf) in leaf_ids.iter().enumerate() {
        for j in 0..apps {
            let app = a.queue.len() as u32;
            a.queue.push(leaf);
            a.user.push(((i * apps + j) % 1000) as u32);
            a.priority.push((j % 3) as i32);
            a.submit_time_ms.push(i64::from(app));
            a.used_memory_mb.push(0);
            a.used_vcores.push(0);
            a.used_gpus.push(0);
            k.app.push(app);
            k.pending.push(per_app);
            k.memory_mb.push(2 * GB);
            k.vcores.push(1 + u64::from(app % 2));
            k.gpus.push(0);
        }
    }
    SnapshotBuilder::complete(wit::Snapshot {
        now_ms: 0,
        nodes,
        queues: q,
        apps: a,
        asks: k,
        ..wit::Snapshot::default()
    })
}

/// The checked snapshot of a record built above.
fn checked(record: wit::Snapshot) -> Snapshot {
    Snapshot::new(record).expect("a well-formed snapshot")
}

/// Nanoseconds this thread has run on a CPU (Linux), so that other work on
/// a busy machine does not count; `None` elsewhere.
fn cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// The best of `runs` timings of `f` (CPU time where the system reports it,
/// else wall time), and its last result.
fn best<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut result = None;
    for _ in 0..runs {
        let (start, cpu_start) = (Instant::now(), cpu_ns());
        let r = f();
        let took = match (cpu_start, cpu_ns()) {
            (Some(start), Some(end)) => Duration::from_nanos(end - start),
            _ => start.elapsed(),
        };
        best = best.min(took);
        result = Some(r);
    }
    (best, result.expect("runs > 0"))
}

fn report(what: &str, snapshot: &Snapshot) {
    let (took, placements) = best(15, || schedule(snapshot));
    let placed = placements.total();
    println!(
        "{what}: {placed} containers in {} placements, {:.1} ms, {:.2} M allocations/s",
        placements.ask.len(),
        took.as_secs_f64() * 1e3,
        placed as f64 / took.as_secs_f64() / 1e6
    );
}

fn main() {
    // `throughput [roomy|big-asks|contended|preempt]` runs one scenario.
    let only = std::env::args().nth(1);
    let wanted = |name: &str| only.as_deref().is_none_or(|o| o == name);

    // Room for everything: each leaf's 100 containers are within its 0.1 %.
    let roomy = cluster(10_000, (64 * GB, 32), 10, 100, 10, 10);
    if wanted("roomy") {
        report(
            "roomy: 10,000 nodes, 1,000 leaves, 10,000 apps × 10 containers",
            &checked(roomy.clone()),
        );
    }
    if wanted("big-asks") {
        let big_asks = cluster(10_000, (64 * GB, 32), 10, 100, 1, 100);
        report(
            "big-asks: 10,000 nodes, 1,000 leaves, 1,000 apps × 100 containers",
            &checked(big_asks),
        );
    }
    if wanted("contended") {
        // 40,000 vcores for 150,000 asked: the cluster fills.
        let contended = cluster(10_000, (8 * GB, 4), 10, 100, 10, 10);
        report(
            "contended: 10,000 nodes of 8 GB and 4 vcores, 1,000 leaves, 100,000 containers",
            &checked(contended),
        );
    }
    if wanted("preempt") {
        preemption(&roomy);
    }
}

/// Preemption over 160,000 running containers: the first 500 leaves idle and
/// owed their 200 GB of demand, the other 500 holding the cluster at twice
/// their guarantee.
fn preemption(roomy: &wit::Snapshot) {
    let mut busy = roomy.clone();
    let queues = busy.queues.parent.len();
    let leaves: Vec<usize> = (1..queues)
        .filter(|&q| !busy.queues.parent[1..].contains(&(q as u32)))
        .collect();
    let mut running = wit::Containers::default();
    let busy_leaf_gb: u64 = 64 * 10_000 / 500;
    for (i, &leaf) in leaves.iter().enumerate().skip(500) {
        let app = busy
            .apps
            .queue
            .iter()
            .position(|&q| q as usize == leaf)
            .unwrap();
        for c in 0..busy_leaf_gb / 4 {
            running.app.push(app as u32);
            running.node.push(0);
            running.memory_mb.push(4 * GB);
            running.vcores.push(1);
            running.gpus.push(0);
            running.start_time_ms.push(i as i64 * 1000 + c as i64);
        }
        // The leaf, its parent and the root hold the containers.
        for q in [leaf, busy.queues.parent[leaf] as usize, 0] {
            busy.queues.used_memory_mb[q] += busy_leaf_gb * GB;
            busy.queues.used_vcores[q] += busy_leaf_gb / 4;
        }
    }
    let busy = checked(busy);
    let running = Containers::new(running, &busy).expect("well-formed containers");
    let (took, victims) = best(5, || preempt(&busy, &running));
    println!(
        "preempt: {} running containers, {} victims, {:.1} ms",
        running.app.len(),
        victims.len(),
        took.as_secs_f64() * 1e3
    );
}
