//! What the policy runtime's own operations cost: making an instance, and
//! swapping the active version while the host runs.
//!
//! - `instantiate/{hops-pricing,fifo}`: [`PolicyVersion::instantiate_fresh`]
//!   on a loaded version: a new store, instantiation of the pre-linked
//!   component and its `configure` call, on the engine as `serve` makes it
//!   (instances from wasmtime's pooling allocator). Target: under
//!   [`INSTANTIATE_TARGET_US`] µs.
//! - `instantiate_on_demand/…`: the same on an engine without the pool
//!   (`weft.policy.instance-pool=0`), for comparison in the same run.
//! - `instantiate_parts/store`: a new store alone (its WASI context, limits
//!   and output capture); `instantiate_parts/{name}`: a store and the pooled
//!   instantiation, without `configure`. For attribution.
//! - `hot_swap/load`: a full [`PolicyRuntime::load`] (read builtin bytes,
//!   compile, type-check, describe, instantiate, configure, self-check,
//!   publish), alternating `builtin:hops-pricing` and `builtin:flat-pricing`.
//! - `hot_swap/compile`: `Component::new` alone on the same bytes, the part
//!   of a load that is wasmtime compiling the component (for attribution).
//! - `hot_swap/publish`: [`PolicySlot::publish`] alone, of a version prepared
//!   beforehand with [`prepare`], into a slot holding [`PUBLISH_HISTORY`]
//!   earlier versions.
//! - `hot_swap/load_under_calls`: the same full load while another thread
//!   calls `charge` through the slot in a tight loop. Afterwards, and again
//!   after [`STRESS_PUBLISHES`] back-to-back publishes under the same caller,
//!   it asserts that no call failed, fell back or returned anything but one
//!   of the two policies' exact answers, and prints how many calls completed
//!   while swaps were in progress.
//!
//! Run: `cargo bench -p weft-host --bench policy_runtime -- --warm-up-time 1 --measurement-time 3`

#[path = "summary.rs"]
mod summary;

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use criterion::{BatchSize, BenchmarkId, Criterion, SamplingMode};
use wasmtime::component::Component;
use weft_host::clock::VirtualClock;
use weft_host::config::CallLimits;
use weft_host::config::Settings;
use weft_host::metrics::{KindLabels, metrics};
use weft_host::policy::{
    PolicyEngine, PolicyKind, PolicyRuntime, PolicySlot, PolicySource, PolicyVersion,
    PriceMultiplicators, PricingSlot, Usage, Utilization, VersionState, builtin, prepare,
};

use summary::{Results, criterion_dir, duration};

/// Versions whose instantiation is measured.
const INSTANTIATED: [(PolicyKind, &str); 2] = [
    (PolicyKind::Pricing, "hops-pricing"),
    (PolicyKind::Scheduling, "fifo"),
];
/// The target for one fresh instance, in microseconds.
const INSTANTIATE_TARGET_US: u64 = 10;

/// The two pricing policies every swap alternates between.
const SWAPPED: [&str; 2] = ["hops-pricing", "flat-pricing"];
/// Versions already in the slot when `publish` is measured (an operator's
/// history after a few swaps; `publish` scans the whole history). Not a
/// power of two, so the measured push does not always reallocate the history.
const PUBLISH_HISTORY: usize = 10;
/// A full load takes over 100 ms, so criterion's minimum sample count.
const LOAD_SAMPLES: usize = 10;
/// Failed calls in a row before the slot rolls a version back (as `weft serve`).
const MAX_FAILURES: u32 = 3;

/// Containers per `charge` call made by the caller thread during swaps.
const CALLER_BATCH: usize = 100;
/// The caller's containers, mixed as in the pricing bench: container i runs
/// `1 + i % SECONDS_CYCLE` s, holds `MEMORY_UNIT_MB × (1 + i % MEMORY_CYCLE)`
/// MB and `1 + i % VCORES_CYCLE` vcores; every `GPU_EVERY`th holds a GPU.
const SECONDS_CYCLE: usize = 10;
const MEMORY_UNIT_MB: u64 = 1024;
const MEMORY_CYCLE: usize = 8;
const VCORES_CYCLE: usize = 4;
const GPU_EVERY: usize = 7;
/// Publishes of prepared versions, back to back, in the stress after the bench.
const STRESS_PUBLISHES: usize = 5_000;
/// Utilization the caller's multiplicators come from.
const UTILIZATION: Utilization = Utilization {
    memory: 0.6,
    vcores: 0.4,
    gpus: 0.9,
};

fn engine() -> PolicyEngine {
    PolicyEngine::new(CallLimits::default(), Arc::new(VirtualClock::default()))
        .expect("wasmtime engine")
}

fn runtime(engine: &PolicyEngine) -> PolicyRuntime {
    PolicyRuntime::new(
        engine.clone(),
        Settings::default().pricing_params.clone(),
        MAX_FAILURES,
    )
}

fn source(name: &str) -> PolicySource {
    PolicySource::Builtin(name.into())
}

/// A checked version of a bundled pricing policy, not published anywhere.
/// `prepare` does not add the standard pricing parameters; a load does.
fn prepared(engine: &PolicyEngine, name: &str) -> Arc<PolicyVersion> {
    let bytes = builtin(name).unwrap_or_else(|| panic!("{name} is not bundled"));
    prepare(
        engine,
        PolicyKind::Pricing,
        &source(name).to_string(),
        bytes,
        Settings::default().pricing_params.clone(),
    )
    .unwrap_or_else(|e| panic!("{name} does not prepare: {e}"))
}

fn bench_instantiate(c: &mut Criterion) {
    let pooled = engine();
    let mut settings = Settings::default().policies;
    settings.instance_pool = 0;
    settings.compile_cache_bytes = 0;
    let on_demand = PolicyEngine::from_settings(&settings, Arc::new(VirtualClock::default()))
        .expect("wasmtime engine");
    for (group, engine) in [
        ("instantiate", &pooled),
        ("instantiate_on_demand", &on_demand),
    ] {
        let runtime = runtime(engine);
        let mut group = c.benchmark_group(group);
        for (kind, name) in INSTANTIATED {
            let version = runtime
                .load(kind, &source(name), &[])
                .unwrap_or_else(|e| panic!("{name} does not load: {e}"));
            group.bench_function(BenchmarkId::from_parameter(name), |b| {
                b.iter(|| version.instantiate_fresh().expect("instantiates"))
            });
        }
        group.finish();
    }

    let mut group = c.benchmark_group("instantiate_parts");
    group.bench_function("store", |b| b.iter(|| pooled.new_store(Arc::from("bench"))));
    for (_, name) in INSTANTIATED {
        let bytes = builtin(name).expect("bundled");
        let component = pooled.compile(bytes).expect("compiles").component;
        let pre = pooled.linker().instantiate_pre(&component).expect("links");
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                let mut store = pooled.new_store(Arc::from("bench"));
                pooled.begin_call(&mut store, 0);
                pre.instantiate(&mut store).expect("instantiates");
                store
            })
        });
    }
    group.finish();
}

/// The full load, alternating the two policies on one runtime as an operator
/// would. Every load stays in the slot's history (nothing prunes it).
fn bench_load(c: &mut Criterion, engine: &PolicyEngine) {
    let runtime = runtime(engine);
    let sources = SWAPPED.map(source);
    let mut next = 0;
    let mut group = c.benchmark_group("hot_swap");
    group
        .sample_size(LOAD_SAMPLES)
        .sampling_mode(SamplingMode::Flat);
    group.bench_function("load", |b| {
        b.iter(|| {
            next = (next + 1) % sources.len();
            runtime
                .load(PolicyKind::Pricing, &sources[next], &[])
                .expect("loads")
        })
    });
    group.finish();
}

/// Compiling alone, on the engine the loads use: how much of a load is
/// wasmtime's compiler rather than the host's checks.
fn bench_compile(c: &mut Criterion, engine: &PolicyEngine) {
    let bytes = SWAPPED.map(|name| builtin(name).expect("bundled"));
    let mut next = 0;
    let mut group = c.benchmark_group("hot_swap");
    group
        .sample_size(LOAD_SAMPLES)
        .sampling_mode(SamplingMode::Flat);
    group.bench_function("compile", |b| {
        b.iter(|| {
            next = (next + 1) % bytes.len();
            Component::new(engine.engine(), bytes[next]).expect("compiles")
        })
    });
    group.finish();
}

/// Publishing alone. Each measured publish gets a fresh slot already holding
/// `PUBLISH_HISTORY` versions (built outside the timing), so the history does
/// not grow with the iteration count.
fn bench_publish(c: &mut Criterion, versions: &[Arc<PolicyVersion>; 2]) {
    let mut next = 0;
    let mut group = c.benchmark_group("hot_swap");
    group.bench_function("publish", |b| {
        b.iter_batched_ref(
            || {
                let slot = PolicySlot::new(PolicyKind::Pricing, MAX_FAILURES);
                for i in 0..PUBLISH_HISTORY {
                    slot.publish(versions[i % 2].clone());
                }
                next = (next + 1) % versions.len();
                (slot, Some(versions[next].clone()))
            },
            |(slot, version)| slot.publish(version.take().expect("one publish per setup")),
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

/// What the caller thread saw.
#[derive(Default)]
struct Tally {
    /// Calls answered with exactly one policy's charges, per `SWAPPED` index.
    answered: [AtomicU64; 2],
    /// Calls that returned an error.
    failed: AtomicU64,
    /// Calls that returned charges matching neither policy.
    wrong: AtomicU64,
}

impl Tally {
    fn answered(&self) -> u64 {
        self.answered
            .iter()
            .map(|a| a.load(Ordering::Relaxed))
            .sum()
    }
}

/// Calls `charge` through the slot until `stop`, checking every answer
/// against the two policies' known charges for this input.
fn call_in_a_loop(
    slot: &PricingSlot,
    usage: &Usage,
    multiplicators: PriceMultiplicators,
    expected: &[Vec<f64>; 2],
    tally: &Tally,
    stop: &AtomicBool,
) {
    while !stop.load(Ordering::Relaxed) {
        match slot.charge(usage, multiplicators) {
            Ok(charges) => match expected.iter().position(|e| *e == charges) {
                Some(i) => tally.answered[i].fetch_add(1, Ordering::Relaxed),
                None => tally.wrong.fetch_add(1, Ordering::Relaxed),
            },
            Err(_) => tally.failed.fetch_add(1, Ordering::Relaxed),
        };
    }
}

fn fallbacks() -> u64 {
    metrics()
        .policy_fallbacks
        .get_or_create(&KindLabels {
            kind: PolicyKind::Pricing.to_string(),
        })
        .get()
}

/// Full loads (criterion-timed) and then `STRESS_PUBLISHES` publishes while a
/// second thread keeps calling the slot; no call may fail or see a torn swap.
fn bench_load_under_calls(
    c: &mut Criterion,
    engine: &PolicyEngine,
    versions: &[Arc<PolicyVersion>; 2],
) {
    let runtime = runtime(engine);
    let sources = SWAPPED.map(source);
    runtime
        .load(PolicyKind::Pricing, &sources[0], &[])
        .expect("loads");
    let slot = runtime.pricing();

    let usage = caller_usage(CALLER_BATCH);
    let market = weft_host::policy::Market {
        utilization: UTILIZATION,
        ..weft_host::policy::sample_market()
    };
    let multiplicators = versions[0].multiplicators(&market).expect("multiplicators");
    let expected = versions
        .each_ref()
        .map(|v| v.charge(&usage, multiplicators).expect("charges"));
    assert_ne!(
        expected[0], expected[1],
        "the two policies must answer differently to tell them apart"
    );

    let tally = Tally::default();
    let stop = AtomicBool::new(false);
    let fallbacks_before = fallbacks();
    let mut load_swaps = 0u64;
    let mut calls_during_loads = 0u64;
    let mut load_time = Duration::ZERO;
    let mut stress_calls = 0u64;
    let mut stress_elapsed = Duration::ZERO;
    std::thread::scope(|scope| {
        let caller =
            scope.spawn(|| call_in_a_loop(slot, &usage, multiplicators, &expected, &tally, &stop));
        // Let the caller get going before anything is timed.
        while tally.answered() == 0 && !caller.is_finished() {
            if tally.failed.load(Ordering::Relaxed) + tally.wrong.load(Ordering::Relaxed) > 0 {
                break; // reported and asserted below
            }
            std::thread::yield_now();
        }

        let mut next = 0;
        let mut group = c.benchmark_group("hot_swap");
        group
            .sample_size(LOAD_SAMPLES)
            .sampling_mode(SamplingMode::Flat);
        group.bench_function("load_under_calls", |b| {
            b.iter_custom(|iters| {
                let mut elapsed = Duration::ZERO;
                for _ in 0..iters {
                    next = (next + 1) % sources.len();
                    let before = tally.answered();
                    let started = Instant::now();
                    black_box(
                        runtime
                            .load(PolicyKind::Pricing, &sources[next], &[])
                            .expect("loads"),
                    );
                    elapsed += started.elapsed();
                    calls_during_loads += tally.answered() - before;
                    load_swaps += 1;
                }
                load_time += elapsed;
                elapsed
            })
        });
        group.finish();

        let before = tally.answered();
        let started = Instant::now();
        for i in 0..STRESS_PUBLISHES {
            slot.publish(versions[i % 2].clone());
        }
        stress_elapsed = started.elapsed();
        stress_calls = tally.answered() - before;

        stop.store(true, Ordering::Relaxed);
        caller.join().expect("the caller thread panicked");
    });

    let [hops, flat] = tally.answered.each_ref().map(|a| a.load(Ordering::Relaxed));
    let failed = tally.failed.load(Ordering::Relaxed);
    let wrong = tally.wrong.load(Ordering::Relaxed);
    let fell_back = fallbacks() - fallbacks_before;
    let rolled_back = slot
        .status()
        .history
        .iter()
        .filter(|e| e.state == VersionState::RolledBack)
        .count();
    eprintln!(
        "\nhot_swap/load_under_calls: one caller thread, {CALLER_BATCH} containers per charge call"
    );
    eprintln!(
        "  {} calls answered ({hops} by {}, {flat} by {}); {failed} failed, {wrong} wrong, \
         {fell_back} fell back, {rolled_back} versions rolled back",
        hops + flat,
        SWAPPED[0],
        SWAPPED[1],
    );
    eprintln!(
        "  full loads: {load_swaps} swaps taking {:.0} ms in all; {calls_during_loads} calls \
         completed during them ({:.0} per swap, {:.0} calls/s)",
        load_time.as_secs_f64() * 1e3,
        calls_during_loads as f64 / load_swaps.max(1) as f64,
        calls_during_loads as f64 / load_time.as_secs_f64().max(1e-9),
    );
    eprintln!(
        "  publish stress: {STRESS_PUBLISHES} publishes in {:.2} ms; {stress_calls} calls \
         completed during them",
        stress_elapsed.as_secs_f64() * 1e3,
    );
    assert_eq!(failed, 0, "calls failed during swaps");
    assert_eq!(wrong, 0, "calls returned charges of neither policy");
    assert_eq!(fell_back, 0, "calls fell back to the previous version");
    assert_eq!(rolled_back, 0, "a version was rolled back");
    // In `--test` mode criterion runs the load once, so only insist on
    // calls during swaps when something was actually measured.
    if load_swaps > 1 {
        assert!(hops > 0 && flat > 0, "both policies must have answered");
    }
}

fn caller_usage(n: usize) -> Usage {
    Usage::of_columns(
        (0..n).map(|i| 1.0 + (i % SECONDS_CYCLE) as f64).collect(),
        (0..n)
            .map(|i| MEMORY_UNIT_MB * (1 + (i % MEMORY_CYCLE) as u64))
            .collect(),
        (0..n).map(|i| 1 + (i % VCORES_CYCLE) as u64).collect(),
        (0..n).map(|i| u64::from(i % GPU_EVERY == 0)).collect(),
    )
}

/// This run's medians, and the instantiation target's verdict.
fn print_summary(results: &Results) {
    eprintln!("\npolicy_runtime: medians from this run (none under --test or a filter)");
    for (_, name) in INSTANTIATED {
        if let Some(ns) = results.median_ns(&["instantiate", name]) {
            let verdict = if ns <= (INSTANTIATE_TARGET_US * 1_000) as f64 {
                "met"
            } else {
                "MISSED"
            };
            let on_demand = results
                .median_ns(&["instantiate_on_demand", name])
                .map(|od| format!(", on demand {} ({:.1}× pooled)", duration(od), od / ns))
                .unwrap_or_default();
            eprintln!(
                "  instantiate/{name:<14} {:>10}   target < {INSTANTIATE_TARGET_US} µs: {verdict}{on_demand}",
                duration(ns)
            );
        }
    }
    for id in ["store", "hops-pricing", "fifo"] {
        if let Some(ns) = results.median_ns(&["instantiate_parts", id]) {
            eprintln!("  instantiate_parts/{id:<8} {:>10}", duration(ns));
        }
    }
    for id in ["load", "compile", "publish", "load_under_calls"] {
        if let Some(ns) = results.median_ns(&["hot_swap", id]) {
            eprintln!("  hot_swap/{id:<17} {:>10}", duration(ns));
        }
    }
}

fn main() {
    let results = Results::new(criterion_dir(), SystemTime::now());
    let mut criterion = Criterion::default()
        .output_directory(&criterion_dir())
        .configure_from_args();
    bench_instantiate(&mut criterion);
    let engine = engine();
    let versions = SWAPPED.map(|name| prepared(&engine, name));
    bench_load(&mut criterion, &engine);
    bench_compile(&mut criterion, &engine);
    bench_publish(&mut criterion, &versions);
    bench_load_under_calls(&mut criterion, &engine, &versions);
    criterion.final_summary();
    print_summary(&results);
}
