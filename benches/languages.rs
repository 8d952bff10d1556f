//! The same flat pricing written in Rust, Python and JavaScript, against
//! the Rust code run natively: what an author's choice of language costs
//! per call, per container, to instantiate and to load.
//!
//! The Python and JavaScript components are the projects `weft policy new`
//! writes (their tutorial policy is flat-pricing), built by their own build
//! commands; `bench-scripts/languages.sh` builds both and runs this bench
//! with their paths in `WEFT_BENCH_PYTHON_PRICING` and
//! `WEFT_BENCH_JS_PRICING`. Without them only Rust is measured.
//!
//! - Group `flat_pricing_charge`, for each batch in [`BATCHES`]:
//!   `native/rust` (the `flat-pricing` crate as plain Rust), then
//!   `wasm/{rust,python,javascript}` ([`PolicyVersion::charge`]). Before
//!   timing, every language's charges must equal native's to the bit.
//! - Group `flat_pricing_instantiate`: [`PolicyVersion::instantiate_fresh`]
//!   per language, on the pooled engine `serve` uses.
//! - Then, timed with `Instant` (a Python compile takes seconds, too long
//!   for criterion's samples): compiling on a fresh engine without a
//!   cache, reading the disk cache on a fresh engine, and the whole
//!   `prepare` (compile or cache, type-check, describe, instantiate,
//!   configure, self-check) with the cache warm; medians of [`LOAD_RUNS`].
//!
//! Run: `bench-scripts/languages.sh` (or `cargo bench -p weft-host --bench
//! languages -- --warm-up-time 1 --measurement-time 3` for Rust alone).

#[path = "pricing_workload.rs"]
mod pricing_workload;
#[path = "summary.rs"]
mod summary;

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use criterion::{BenchmarkId, Criterion, Throughput};
use weft_host::clock::VirtualClock;
use weft_host::config::CallLimits;
use weft_host::config::Settings;
use weft_host::policy::{
    PolicyEngine, PolicyKind, PolicyVersion, PriceMultiplicators, builtin, prepare,
};

use pricing_workload::workload;
use summary::{Results, criterion_dir, duration};

/// Containers per `charge` call: one (the per-call cost) and a thousand
/// (the per-container cost).
const BATCHES: [usize; 2] = [1, 1_000];
/// Timed loads per language and way.
const LOAD_RUNS: usize = 3;

const CHARGE: &str = "flat_pricing_charge";
const INSTANTIATE: &str = "flat_pricing_instantiate";
const NATIVE: &str = "native/rust";

/// A language whose component is measured, and where it comes from.
struct Language {
    name: &'static str,
    source: String,
    bytes: Vec<u8>,
}

/// Rust (the bundled flat-pricing), then the components the environment
/// names.
fn languages() -> Vec<Language> {
    let mut languages = vec![Language {
        name: "rust",
        source: "builtin:flat-pricing".into(),
        bytes: builtin("flat-pricing").expect("bundled").to_vec(),
    }];
    for (name, variable) in [
        ("python", "WEFT_BENCH_PYTHON_PRICING"),
        ("javascript", "WEFT_BENCH_JS_PRICING"),
    ] {
        match std::env::var_os(variable) {
            Some(path) => {
                let bytes = std::fs::read(&path)
                    .unwrap_or_else(|e| panic!("{variable}={}: {e}", Path::new(&path).display()));
                languages.push(Language {
                    name,
                    source: Path::new(&path).display().to_string(),
                    bytes,
                });
            }
            None => eprintln!("{variable} is not set: {name} is not measured"),
        }
    }
    languages
}

fn pricing_params() -> Vec<(String, String)> {
    Settings::default().pricing_params.clone()
}

fn pooled_engine(cache: Option<&Path>) -> PolicyEngine {
    let clock = Arc::new(VirtualClock::default());
    match cache {
        Some(dir) => {
            PolicyEngine::with_compile_cache(CallLimits::default(), clock, Some((dir, 1 << 30)))
        }
        None => PolicyEngine::new(CallLimits::default(), clock),
    }
    .expect("wasmtime engine")
}

fn prepared(engine: &PolicyEngine, language: &Language) -> Arc<PolicyVersion> {
    prepare(
        engine,
        PolicyKind::Pricing,
        &language.source,
        &language.bytes,
        pricing_params(),
    )
    .unwrap_or_else(|e| panic!("{} does not load: {e}", language.name))
}

fn bench_charge(c: &mut Criterion, versions: &[(&Language, Arc<PolicyVersion>)]) {
    let mut native = weft_policy::params::configure::<flat_pricing::FlatPricing>(
        weft_policy::PolicyKind::Pricing,
        pricing_params(),
    )
    .expect("standard parameters");
    let unit = PriceMultiplicators {
        general: 1.0,
        gpu: 1.0,
    };
    let native_unit = weft_policy::pricing::Multiplicators {
        general: 1.0,
        gpu: 1.0,
    };
    use weft_policy::PricingPolicy as _;
    let mut group = c.benchmark_group(CHARGE);
    for n in BATCHES {
        let work = workload(n);
        let expected: Vec<u64> = native
            .charge(&work.native, native_unit)
            .iter()
            .map(|x| x.to_bits())
            .collect();
        for (language, version) in versions {
            let charged: Vec<u64> = version
                .charge(&work.wit, unit)
                .expect("charges")
                .iter()
                .map(|x| x.to_bits())
                .collect();
            assert_eq!(charged, expected, "{} and native differ", language.name);
        }
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::new(NATIVE, n), &work, |b, work| {
            b.iter(|| native.charge(black_box(&work.native), native_unit))
        });
        for (language, version) in versions {
            let id = BenchmarkId::new(format!("wasm/{}", language.name), n);
            group.bench_with_input(id, &work, |b, work| {
                b.iter(|| version.charge(black_box(&work.wit), unit).expect("charges"))
            });
        }
    }
    group.finish();
}

fn bench_instantiate(c: &mut Criterion, versions: &[(&Language, Arc<PolicyVersion>)]) {
    let mut group = c.benchmark_group(INSTANTIATE);
    for (language, version) in versions {
        group.bench_function(language.name, |b| {
            b.iter(|| version.instantiate_fresh().expect("instantiates"))
        });
    }
    group.finish();
}

/// The median of `LOAD_RUNS` timings of `run`.
fn median_of_runs(mut run: impl FnMut() -> Duration) -> Duration {
    let mut times: Vec<Duration> = (0..LOAD_RUNS).map(|_| run()).collect();
    times.sort();
    times[LOAD_RUNS / 2]
}

/// Compile without a cache, read from a warm disk cache, and a whole
/// `prepare` from the warm cache, each on a fresh engine (so nothing is
/// reused from memory).
fn measure_loads(languages: &[Language]) {
    eprintln!(
        "\nloads, median of {LOAD_RUNS} on fresh engines: {:>12} {:>16} {:>22} {:>10}",
        "bytes", "compile, no cache", "read from disk cache", "prepare, warm cache"
    );
    for language in languages {
        let cold = median_of_runs(|| {
            let engine = pooled_engine(None);
            let started = Instant::now();
            engine.compile(&language.bytes).expect("compiles");
            started.elapsed()
        });
        let cache = tempfile::tempdir().expect("a temporary directory");
        pooled_engine(Some(cache.path()))
            .compile(&language.bytes)
            .expect("compiles");
        let from_disk = median_of_runs(|| {
            let engine = pooled_engine(Some(cache.path()));
            let started = Instant::now();
            engine.compile(&language.bytes).expect("reads the cache");
            let elapsed = started.elapsed();
            assert_eq!(engine.compile_counts().disk_hits, 1, "read from disk");
            elapsed
        });
        let prepare_warm = median_of_runs(|| {
            let engine = pooled_engine(Some(cache.path()));
            let started = Instant::now();
            prepared(&engine, language);
            started.elapsed()
        });
        let ns = |d: Duration| d.as_nanos() as f64;
        eprintln!(
            "  {:<10} {:>12} {:>16} {:>22} {:>10}",
            language.name,
            language.bytes.len(),
            duration(ns(cold)),
            duration(ns(from_disk)),
            duration(ns(prepare_warm)),
        );
    }
}

/// Medians and ratios to native Rust from this run.
fn print_summary(results: &Results, languages: &[Language]) {
    eprintln!("\n{CHARGE}: medians from this run, per call (per container), and × native Rust");
    for n in BATCHES {
        let param = n.to_string();
        let native = results.median_ns(&[CHARGE, NATIVE, &param]);
        let mut line = format!("{n:>6}");
        for (label, median) in
            std::iter::once((NATIVE.to_string(), native)).chain(languages.iter().map(|l| {
                let id = format!("wasm/{}", l.name);
                let median = results.median_ns(&[CHARGE, &id, &param]);
                (id, median)
            }))
        {
            let cell = match (median, native) {
                (Some(ns), Some(native)) => format!(
                    "{} ({}/item, {:.1}×)",
                    duration(ns),
                    duration(ns / n as f64),
                    ns / native
                ),
                (Some(ns), None) => duration(ns),
                _ => "-".into(),
            };
            line.push_str(&format!("  {label}: {cell}"));
        }
        eprintln!("{line}");
    }
    eprintln!("{INSTANTIATE}: medians from this run");
    for language in languages {
        if let Some(ns) = results.median_ns(&[INSTANTIATE, language.name]) {
            eprintln!("  {:<10} {:>10}", language.name, duration(ns));
        }
    }
}

fn main() {
    let results = Results::new(criterion_dir(), SystemTime::now());
    let mut criterion = Criterion::default()
        .output_directory(&criterion_dir())
        .configure_from_args();
    let languages = languages();
    let engine = pooled_engine(None);
    let versions: Vec<(&Language, Arc<PolicyVersion>)> = languages
        .iter()
        .map(|language| (language, prepared(&engine, language)))
        .collect();
    bench_charge(&mut criterion, &versions);
    bench_instantiate(&mut criterion, &versions);
    criterion.final_summary();
    print_summary(&results, &languages);
    // Not under `cargo test --benches` (`--test`): it compiles for seconds.
    if !std::env::args().any(|a| a == "--test") {
        measure_loads(&languages);
    }
}
