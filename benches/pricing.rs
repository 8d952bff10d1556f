//! What one pricing `charge` call costs, WebAssembly against native, for the
//! same policy (`hops-pricing`) on identical inputs, measured in one run.
//!
//! Group `pricing_charge`, for each batch size in [`BATCHES`]:
//! - `wasm/hops-pricing`: [`PolicyVersion::charge`] on the bundled component
//!   (lower the usage columns, run the guest, lift the charges);
//! - `wasm-slot/hops-pricing`: the same through the [`PricingSlot`] as
//!   the quota service calls it (output validation,
//!   fallback bookkeeping, call metrics);
//! - `native/hops-pricing`: the `hops-pricing` crate called as plain Rust.
//!
//! Throughput is set to the batch size, so criterion also reports items/s.
//! After the run it prints each median and the WASM/native ratios, read back
//! from this run's `estimates.json`. The target: WASM ≤ 3× native at
//! 10,000 containers.
//!
//! Run: `cargo bench -p weft-host --bench pricing -- --warm-up-time 1 --measurement-time 3`

#[path = "pricing_workload.rs"]
mod pricing_workload;
#[path = "summary.rs"]
mod summary;

use std::hint::black_box;
use std::sync::Arc;
use std::time::SystemTime;

use criterion::{BenchmarkId, Criterion, Throughput};
use weft_host::clock::VirtualClock;
use weft_host::config::CallLimits;
use weft_host::config::Settings;
use weft_host::policy::{
    PolicyEngine, PolicyKind, PolicyRuntime, PolicySource, PolicyVersion, PriceMultiplicators,
    PricingSlot, Utilization,
};

use pricing_workload::{Workload, workload};
use summary::{Results, criterion_dir, duration};

/// Containers per `charge` call.
const BATCHES: [usize; 3] = [1, 100, 10_000];
/// The batch the target is set at, and the target: WASM ≤ this × native.
const TARGET_BATCH: usize = 10_000;
const TARGET_RATIO: f64 = 3.0;

/// The policy measured, bundled in the host and also a dev-dependency crate.
const POLICY: &str = "hops-pricing";
/// Failed calls in a row before the slot rolls a version back (as `weft serve`).
const MAX_FAILURES: u32 = 3;

/// Utilization the multiplicators are computed from (busy enough that both
/// multiplicators are above 1, so every branch of the price is live).
const UTILIZATION: Utilization = Utilization {
    memory: 0.6,
    vcores: 0.4,
    gpus: 0.9,
};

const GROUP: &str = "pricing_charge";
const WASM: &str = "wasm/hops-pricing";
const WASM_SLOT: &str = "wasm-slot/hops-pricing";
const NATIVE: &str = "native/hops-pricing";

/// The three ways of pricing, set up once with the same parameters.
struct Subjects {
    runtime: PolicyRuntime,
    version: std::sync::Arc<PolicyVersion>,
    native: hops_pricing::HopsPricing,
    wit_multiplicators: PriceMultiplicators,
    native_multiplicators: weft_policy::pricing::Multiplicators,
}

impl Subjects {
    fn new() -> Subjects {
        let params = Settings::default().pricing_params.clone();
        let engine = PolicyEngine::new(CallLimits::default(), Arc::new(VirtualClock::default()))
            .expect("wasmtime engine");
        let runtime = PolicyRuntime::new(engine, params.clone(), MAX_FAILURES);
        let version = runtime
            .load(
                PolicyKind::Pricing,
                &PolicySource::Builtin(POLICY.into()),
                &[],
            )
            .expect("the bundled hops-pricing loads");
        let native = weft_policy::params::configure::<hops_pricing::HopsPricing>(
            weft_policy::PolicyKind::Pricing,
            params.clone(),
        )
        .expect("standard parameters");

        let market = weft_host::policy::Market {
            utilization: UTILIZATION,
            ..weft_host::policy::sample_market()
        };
        let wit_multiplicators = version.multiplicators(&market).expect("multiplicators");
        let native_multiplicators = native.multiplicators_for(weft_policy::pricing::Utilization {
            memory: UTILIZATION.memory,
            vcores: UTILIZATION.vcores,
            gpus: UTILIZATION.gpus,
        });
        assert_eq!(
            (wit_multiplicators.general, wit_multiplicators.gpu),
            (native_multiplicators.general, native_multiplicators.gpu),
            "WASM and native multiplicators differ"
        );
        Subjects {
            runtime,
            version,
            native,
            wit_multiplicators,
            native_multiplicators,
        }
    }

    fn slot(&self) -> &PricingSlot {
        self.runtime.pricing()
    }

    /// The three must agree to the bit before their speed is worth comparing.
    fn check_agree(&self, work: &Workload) {
        let native = self
            .native
            .charge_columns(&work.native, self.native_multiplicators);
        let wasm = self
            .version
            .charge(&work.wit, self.wit_multiplicators)
            .expect("wasm charge");
        let slot = self
            .slot()
            .charge(&work.wit, self.wit_multiplicators)
            .expect("slot charge");
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&wasm), bits(&native), "WASM and native charges differ");
        assert_eq!(bits(&slot), bits(&native), "slot and native charges differ");
    }
}

fn bench_charge(c: &mut Criterion, subjects: &Subjects) {
    let mut group = c.benchmark_group(GROUP);
    for n in BATCHES {
        let work = workload(n);
        subjects.check_agree(&work);
        group.throughput(Throughput::Elements(n as u64));

        group.bench_with_input(BenchmarkId::new(WASM, n), &work, |b, work| {
            b.iter(|| {
                subjects
                    .version
                    .charge(black_box(&work.wit), subjects.wit_multiplicators)
                    .expect("wasm charge")
            })
        });
        group.bench_with_input(BenchmarkId::new(WASM_SLOT, n), &work, |b, work| {
            let slot = subjects.slot();
            b.iter(|| {
                slot.charge(black_box(&work.wit), subjects.wit_multiplicators)
                    .expect("slot charge")
            })
        });
        group.bench_with_input(BenchmarkId::new(NATIVE, n), &work, |b, work| {
            b.iter(|| {
                subjects
                    .native
                    .charge_columns(black_box(&work.native), subjects.native_multiplicators)
            })
        });
    }
    group.finish();
}

/// Medians and WASM/native ratios from this run, in one table.
fn print_summary(results: &Results) {
    eprintln!("\n{GROUP}: medians from this run, per call (per container); - if not measured");
    eprintln!(
        "{:>7} {:>24} {:>24} {:>24} {:>9} {:>9}",
        "batch", NATIVE, WASM, WASM_SLOT, "wasm/nat", "slot/nat"
    );
    for n in BATCHES {
        let param = n.to_string();
        let [native, wasm, slot] =
            [NATIVE, WASM, WASM_SLOT].map(|f| results.median_ns(&[GROUP, f, &param]));
        let cell = |m: Option<f64>| match m {
            Some(ns) => format!("{} ({})", duration(ns), duration(ns / n as f64)),
            None => "-".into(),
        };
        let ratio = |m: Option<f64>| match (m, native) {
            (Some(x), Some(native)) => format!("{:.2}×", x / native),
            _ => "-".into(),
        };
        eprintln!(
            "{n:>7} {:>24} {:>24} {:>24} {:>9} {:>9}",
            cell(native),
            cell(wasm),
            cell(slot),
            ratio(wasm),
            ratio(slot)
        );
    }
    if let (Some(wasm), Some(native)) = (
        results.median_ns(&[GROUP, WASM, &TARGET_BATCH.to_string()]),
        results.median_ns(&[GROUP, NATIVE, &TARGET_BATCH.to_string()]),
    ) {
        let ratio = wasm / native;
        let verdict = if ratio <= TARGET_RATIO {
            "met"
        } else {
            "MISSED"
        };
        eprintln!(
            "target WASM ≤ {TARGET_RATIO}× native at {TARGET_BATCH}: {ratio:.2}× — {verdict}"
        );
    }
}

fn main() {
    let results = Results::new(criterion_dir(), SystemTime::now());
    let mut criterion = Criterion::default()
        .output_directory(&criterion_dir())
        .configure_from_args();
    let subjects = Subjects::new();
    bench_charge(&mut criterion, &subjects);
    criterion.final_summary();
    print_summary(&results);
}
