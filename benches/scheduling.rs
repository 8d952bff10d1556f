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
use weft_policy::scheduling::{Snapshot, SnapshotBuilder, wit};

/// The workload: nodes, parents × leaves per parent, apps per leaf, containers per app.
const NODES: usize = 10_000;
const NODE_MEMORY_MB: u64 = 32 * 1024;
const NODE_VCORES: u64 = 16;
const PARENTS: usize = 10;
const LEAVES_PER_PARENT: usize = 100;
const APPS_PER_LEAF: usize = 1;
const CONTAINERS_PER_APP: u32 = 100;
const CONTAINER_MEMORY_MB: u64 = 2048;

/// Racks the nodes are spread over.
const RACKS: usize = 20;

/// The snapshot as the SDK's WIT record, from which both the native view
/// and the host's record are made: the context a server fills in filled in
/// too (racks, queue paths, app names, types and projects).
fn snapshot_record() -> wit::Snapshot {
    let nodes = wit::Nodes {
        free_memory_mb: vec![NODE_MEMORY_MB; NODES],
        free_vcores: vec![NODE_VCORES; NODES],
        free_gpus: vec![0; NODES],
        capacity_memory_mb: vec![NODE_MEMORY_MB; NODES],
        capacity_vcores: vec![NODE_VCORES; NODES],
        capacity_gpus: vec![0; NODES],
        partition: vec![0; NODES],
        rack: (0..NODES).map(|n| (n % RACKS) as u32).collect(),
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
            apps.name.push(format!("job-{app}"));
            apps.application_type.push("SPARK".into());
            apps.project
                .push(["ml", "web", "etl", "default"][app as usize % 4].into());
            asks.app.push(app);
            asks.pending.push(CONTAINERS_PER_APP);
            asks.memory_mb.push(CONTAINER_MEMORY_MB);
            asks.vcores.push(1);
            asks.gpus.push(0);
        }
    }
    let mut record = SnapshotBuilder::complete(wit::Snapshot {
        now_ms: 0,
        nodes,
        queues,
        apps,
        asks,
        ..wit::Snapshot::default()
    });
    record.racks = (0..RACKS).map(|r| format!("/dc1/rack{r}")).collect();
    record
}

/// The same snapshot in the host's WIT types.
fn wit_snapshot(s: &wit::Snapshot) -> policy::Snapshot {
    let (n, q, a, k) = (&s.nodes, &s.queues, &s.apps, &s.asks);
    let mut snapshot = policy::Snapshot::of_columns(
        s.now_ms,
        policy::Nodes {
            free_memory_mb: n.free_memory_mb.clone(),
            free_vcores: n.free_vcores.clone(),
            free_gpus: n.free_gpus.clone(),
            capacity_memory_mb: n.capacity_memory_mb.clone(),
            capacity_vcores: n.capacity_vcores.clone(),
            capacity_gpus: n.capacity_gpus.clone(),
            partition: n.partition.clone(),
            rack: n.rack.clone(),
        },
        policy::Queues {
            path: q.path.clone(),
            parent: q.parent.clone(),
            capacity: q.capacity.clone(),
            maximum_capacity: q.maximum_capacity.clone(),
            minimum_user_limit_percent: q.minimum_user_limit_percent.clone(),
            user_limit_factor: q.user_limit_factor.clone(),
            fair: q.fair.clone(),
            used_memory_mb: q.used_memory_mb.clone(),
            used_vcores: q.used_vcores.clone(),
            used_gpus: q.used_gpus.clone(),
            decayed_memory_mb_seconds: q.decayed_memory_mb_seconds.clone(),
            decayed_vcore_seconds: q.decayed_vcore_seconds.clone(),
            decayed_gpu_seconds: q.decayed_gpu_seconds.clone(),
        },
        policy::Apps {
            queue: a.queue.clone(),
            user: a.user.clone(),
            priority: a.priority.clone(),
            submit_time_ms: a.submit_time_ms.clone(),
            used_memory_mb: a.used_memory_mb.clone(),
            used_vcores: a.used_vcores.clone(),
            used_gpus: a.used_gpus.clone(),
            name: a.name.clone(),
            application_type: a.application_type.clone(),
            project: a.project.clone(),
            start_time_ms: a.start_time_ms.clone(),
            deadline_ms: a.deadline_ms.clone(),
            user_decayed_memory_mb_seconds: a.user_decayed_memory_mb_seconds.clone(),
            user_decayed_vcore_seconds: a.user_decayed_vcore_seconds.clone(),
            user_decayed_gpu_seconds: a.user_decayed_gpu_seconds.clone(),
        },
        policy::Asks {
            app: k.app.clone(),
            pending: k.pending.clone(),
            memory_mb: k.memory_mb.clone(),
            vcores: k.vcores.clone(),
            gpus: k.gpus.clone(),
            // Every ask as the builder makes it: default partition, no
            // locality, gang or constraint (the host's defaults).
            ..policy::Asks::empty()
        },
    );
    snapshot.racks = s.racks.clone();
    snapshot
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
