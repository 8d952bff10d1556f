//! What a scheduling round costs with the `capacity` policy, through WASM and
//! natively in the same run, at issue 3's size: 10,000 nodes, 1,000 leaf
//! queues, 100,000 pending containers. Reports allocations per second
//! (criterion's throughput) and the WASM/native ratio of the medians.
//!
//! ```text
//! cargo bench -p weft-host --bench scheduling
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use weft_host::clock::VirtualClock;
use weft_host::config::CallLimits;
use weft_host::config::Settings;
use weft_host::policy::{self, PolicyEngine, PolicyKind, PolicyRuntime, PolicySource};
use weft_policy::scheduling::{Snapshot, wit};

/// The workload: nodes, parents × leaves per parent, apps per leaf, containers per app.
const NODES: usize = 10_000;
const NODE_MEMORY_MB: u64 = 32 * 1024;
const NODE_VCORES: u64 = 16;
const PARENTS: usize = 10;
const LEAVES_PER_PARENT: usize = 100;
const APPS_PER_LEAF: usize = 1;
const CONTAINERS_PER_APP: u32 = 100;
const CONTAINER_MEMORY_MB: u64 = 2048;

/// The snapshot as the SDK's WIT record, from which both the native view
/// and the host's record are made.
fn snapshot_record() -> wit::Snapshot {
    let nodes = wit::Nodes {
        free_memory_mb: vec![NODE_MEMORY_MB; NODES],
        free_vcores: vec![NODE_VCORES; NODES],
        free_gpus: vec![0; NODES],
        capacity_memory_mb: vec![NODE_MEMORY_MB; NODES],
        capacity_vcores: vec![NODE_VCORES; NODES],
        capacity_gpus: vec![0; NODES],
    };
    let mut queues = wit::Queues::default();
    let mut add_queue = |parent: u32, capacity: f64| {
        queues.parent.push(parent);
        queues.capacity.push(capacity);
        queues.maximum_capacity.push(100.0);
        queues.minimum_user_limit_percent.push(100.0);
        queues.user_limit_factor.push(Some(1.0));
        queues.fair.push(false);
        queues.used_memory_mb.push(0);
        queues.used_vcores.push(0);
        queues.used_gpus.push(0);
        queues.parent.len() as u32 - 1
    };
    add_queue(0, 100.0);
    let mut leaves = Vec::new();
    for _ in 0..PARENTS {
        let parent = add_queue(0, 100.0 / PARENTS as f64);
        for _ in 0..LEAVES_PER_PARENT {
            leaves.push(add_queue(parent, 100.0 / LEAVES_PER_PARENT as f64));
        }
    }
    let (mut apps, mut asks) = (wit::Apps::default(), wit::Asks::default());
    for (i, &leaf) in leaves.iter().enumerate() {
        for j in 0..APPS_PER_LEAF {
            let app = apps.queue.len() as u32;
            apps.queue.push(leaf);
            apps.user.push(((i * APPS_PER_LEAF + j) % 1000) as u32);
            apps.priority.push(0);
            apps.submit_time_ms.push(i64::from(app));
            apps.used_memory_mb.push(0);
            apps.used_vcores.push(0);
            apps.used_gpus.push(0);
            asks.app.push(app);
            asks.pending.push(CONTAINERS_PER_APP);
            asks.memory_mb.push(CONTAINER_MEMORY_MB);
            asks.vcores.push(1);
            asks.gpus.push(0);
        }
    }
    wit::Snapshot {
        now_ms: 0,
        nodes,
        queues,
        apps,
        asks,
    }
}

/// The same snapshot in the WIT's types.
fn wit_snapshot(s: &wit::Snapshot) -> policy::Snapshot {
    policy::Snapshot {
        now_ms: s.now_ms,
        nodes: policy::Nodes {
            free_memory_mb: s.nodes.free_memory_mb.clone(),
            free_vcores: s.nodes.free_vcores.clone(),
            free_gpus: s.nodes.free_gpus.clone(),
            capacity_memory_mb: s.nodes.capacity_memory_mb.clone(),
            capacity_vcores: s.nodes.capacity_vcores.clone(),
            capacity_gpus: s.nodes.capacity_gpus.clone(),
        },
        queues: policy::Queues {
            parent: s.queues.parent.clone(),
            capacity: s.queues.capacity.clone(),
            maximum_capacity: s.queues.maximum_capacity.clone(),
            minimum_user_limit_percent: s.queues.minimum_user_limit_percent.clone(),
            user_limit_factor: s.queues.user_limit_factor.clone(),
            fair: s.queues.fair.clone(),
            used_memory_mb: s.queues.used_memory_mb.clone(),
            used_vcores: s.queues.used_vcores.clone(),
            used_gpus: s.queues.used_gpus.clone(),
        },
        apps: policy::Apps {
            queue: s.apps.queue.clone(),
            user: s.apps.user.clone(),
            priority: s.apps.priority.clone(),
            submit_time_ms: s.apps.submit_time_ms.clone(),
            used_memory_mb: s.apps.used_memory_mb.clone(),
            used_vcores: s.apps.used_vcores.clone(),
            used_gpus: s.apps.used_gpus.clone(),
        },
        asks: policy::Asks {
            app: s.asks.app.clone(),
            pending: s.asks.pending.clone(),
            memory_mb: s.asks.memory_mb.clone(),
            vcores: s.asks.vcores.clone(),
            gpus: s.asks.gpus.clone(),
        },
    }
}

fn scheduling(c: &mut Criterion) {
    let record = snapshot_record();
    let wit = wit_snapshot(&record);
    let native = Snapshot::new(record.clone()).expect("a well-formed snapshot");
    // A round at this size takes tens of ms; give the WASM call room.
    let limits = CallLimits {
        timeout: Duration::from_secs(30),
        ..CallLimits::default()
    };
    let runtime = PolicyRuntime::new(
        PolicyEngine::new(limits, Arc::new(VirtualClock::default())).unwrap(),
        Settings::default().pricing_params.clone(),
        3,
    );
    let version = runtime
        .load(
            PolicyKind::Scheduling,
            &PolicySource::Builtin("capacity".into()),
            &[],
        )
        .unwrap();

    let native_placed: u64 = capacity::schedule(&native)
        .count
        .iter()
        .map(|&c| u64::from(c))
        .sum();
    let wasm_placements = version.schedule(&wit).unwrap();
    let wasm_placed: u64 = wasm_placements.count.iter().map(|&c| u64::from(c)).sum();
    assert_eq!(
        native_placed, wasm_placed,
        "WASM and native placed different counts"
    );
    policy::validate::placements(&wit, &wasm_placements).expect("the host accepts the round");

    // Interleaved rounds, so both builds see the same machine: criterion
    // measures one group after the other, and on a busy machine the load
    // can change between them. The ratio of these medians is the figure.
    // A third build, native too, does what the guest does with its input
    // before the policy runs: takes the record (here a copy, there the
    // canonical ABI's lift) and checks it into the SDK's views
    // (`Snapshot::new`), which the plain native round is spared.
    const PAIRS: usize = 40;
    let (mut native_ms, mut wasm_ms, mut checked_ms) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..PAIRS {
        let started = Instant::now();
        std::hint::black_box(capacity::schedule(&native));
        native_ms.push(started.elapsed().as_secs_f64() * 1e3);
        let started = Instant::now();
        let checked = Snapshot::new(record.clone()).expect("a well-formed snapshot");
        std::hint::black_box(capacity::schedule(&checked));
        checked_ms.push(started.elapsed().as_secs_f64() * 1e3);
        let started = Instant::now();
        std::hint::black_box(version.schedule(&wit).unwrap());
        wasm_ms.push(started.elapsed().as_secs_f64() * 1e3);
    }
    let median = |samples: &mut Vec<f64>| {
        samples.sort_by(f64::total_cmp);
        samples[samples.len() / 2]
    };
    let (native_median, wasm_median) = (median(&mut native_ms), median(&mut wasm_ms));
    let checked_median = median(&mut checked_ms);
    eprintln!(
        "capacity_round: interleaved, {PAIRS} triples: native median {native_median:.1} ms, \
         WASM median {wasm_median:.1} ms ({:.2} M allocations/s), WASM/native {:.2}×; \
         native with the guest's input work (copy + Snapshot::new) {checked_median:.1} ms, \
         WASM/that {:.2}×",
        native_placed as f64 / wasm_median / 1e3,
        wasm_median / native_median,
        wasm_median / checked_median
    );

    let mut group = c.benchmark_group("capacity_round");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(8))
        .throughput(Throughput::Elements(native_placed));
    group.bench_function("native", |b| b.iter(|| capacity::schedule(&native)));
    group.bench_function("wasm", |b| b.iter(|| version.schedule(&wit).unwrap()));
    group.finish();
    eprintln!(
        "capacity_round: {native_placed} allocations per round on {NODES} nodes, {} leaf queues",
        PARENTS * LEAVES_PER_PARENT
    );
}

criterion_group!(benches, scheduling);
criterion_main!(benches);
