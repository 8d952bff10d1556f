//! What a pricing shadow costs the active path: one quota flush (QUOTA_COMPUTE
//! then the charge of every running container, as the event loop does it)
//! through the pricing slot, with no shadow and with a shadow running.
//!
//! - `quota_flush/active/N`: N running containers, each its own row, priced
//!   by `flat-pricing` with no shadow;
//! - `quota_flush/active+shadow/N`: the same, with `flat-pricing` at twice
//!   the price running as a shadow on its own thread (the flush builds the
//!   rows' projects and offers the charge; the shadow prices it apart, and a
//!   charge arriving while it is behind is dropped and counted).
//!
//! The summary prints both medians and their ratio: the target is the
//! active path unchanged within noise.

#[path = "summary.rs"]
mod summary;

use std::hint::black_box;
use std::sync::Arc;
use std::time::SystemTime;

use criterion::{BenchmarkId, Criterion, Throughput};
use weft_host::clock::VirtualClock;
use weft_host::config::CallLimits;
use weft_host::config::Settings;
use weft_host::policy::{PolicyEngine, PolicyKind, PolicyRuntime, PolicySource};
use weft_host::quota::QuotaService;
use weft_host::resources::Resources;

use summary::{Results, criterion_dir, duration};

const GROUP: &str = "quota_flush";
const ACTIVE: &str = "active";
const SHADOWED: &str = "active+shadow";
const CONTAINERS: [usize; 2] = [100, 10_000];
/// Ten seconds between QUOTA_COMPUTEs, in ms.
const PERIOD_MS: u64 = 10_000;

fn runtime(shadow: bool) -> PolicyRuntime {
    let settings = Settings::default();
    let engine = PolicyEngine::new(CallLimits::default(), Arc::new(VirtualClock::default()))
        .expect("wasmtime engine");
    let runtime = PolicyRuntime::new(engine, settings.pricing_params.clone(), 3);
    let flat = PolicySource::Builtin("flat-pricing".into());
    runtime
        .load(PolicyKind::Pricing, &flat, &[])
        .expect("flat-pricing loads");
    if shadow {
        let bytes = flat.read().expect("builtin");
        runtime
            .load_shadow(
                PolicyKind::Pricing,
                "builtin:flat-pricing",
                &bytes,
                &[("price.base.general".into(), "2".into())],
            )
            .expect("the shadow loads");
    }
    runtime
}

/// A quota service with `n` running containers, each of its own app, over
/// ten projects.
fn quota(n: usize) -> QuotaService {
    let mut quota = QuotaService::new(Settings::default().quota);
    for i in 0..n {
        quota
            .start(
                &format!("container_{i}"),
                weft_host::policy::ChargeContext {
                    app: format!("app_{i}"),
                    project: format!("project{}", i % 10),
                    user: "bench".into(),
                    ..weft_host::policy::ChargeContext::anonymous()
                },
                Resources::new(1024 * (1 + (i as u64 % 8)), 1 + (i as u32 % 4), 0),
                0,
            )
            .expect("starts");
    }
    quota
}

fn bench_flush(c: &mut Criterion) {
    let mut group = c.benchmark_group(GROUP);
    for (name, shadow) in [(ACTIVE, false), (SHADOWED, true)] {
        let runtime = runtime(shadow);
        for n in CONTAINERS {
            let mut quota = quota(n);
            let mut now = 0;
            group.throughput(Throughput::Elements(n as u64));
            group.bench_function(BenchmarkId::new(name, n), |b| {
                b.iter(|| {
                    now += PERIOD_MS;
                    quota.compute(now);
                    black_box(quota.flush(runtime.pricing()).expect("flush"))
                })
            });
        }
        if let Some(shadow) = runtime.shadow(PolicyKind::Pricing).get() {
            let report = shadow.report();
            eprintln!(
                "shadow: {} charges compared, {} dropped while it was behind, {} failed",
                report.pricing.map_or(0, |p| p.charge_batches),
                report.dropped,
                report.failures
            );
        }
    }
    group.finish();
}

fn print_summary(results: &Results) {
    eprintln!("\n{GROUP}: medians from this run, per flush (per container)");
    eprintln!(
        "{:>7} {:>22} {:>22} {:>8}",
        "containers", ACTIVE, SHADOWED, "ratio"
    );
    for n in CONTAINERS {
        let param = n.to_string();
        let [active, shadowed] = [ACTIVE, SHADOWED].map(|f| results.median_ns(&[GROUP, f, &param]));
        let cell = |m: Option<f64>| match m {
            Some(ns) => format!("{} ({})", duration(ns), duration(ns / n as f64)),
            None => "-".into(),
        };
        let ratio = match (active, shadowed) {
            (Some(a), Some(s)) => format!("{:.2}×", s / a),
            _ => "-".into(),
        };
        eprintln!(
            "{n:>10} {:>22} {:>22} {:>8}",
            cell(active),
            cell(shadowed),
            ratio
        );
    }
}

fn main() {
    let results = Results::new(criterion_dir(), SystemTime::now());
    let mut criterion = Criterion::default()
        .output_directory(&criterion_dir())
        .configure_from_args();
    bench_flush(&mut criterion);
    criterion.final_summary();
    print_summary(&results);
}
