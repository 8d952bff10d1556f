//! `weft policy bench`: what one policy call costs, per call and per item,
//! optionally against a baseline policy measured in the same run — in the
//! spirit of `opa bench`. For exact comparisons use the criterion benches.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use serde::Serialize;

use crate::clock::VirtualClock;
use crate::config::Settings;
use crate::policy::{
    Admission, Apps, Asks, CallError, ChargeContext, Nodes, PlanSettings, PolicyEngine, PolicyKind,
    PolicySource, PolicyVersion, Queues, SharingResources, Snapshot, Timeline, Usage, inspect,
};

#[derive(Debug, Args)]
pub(super) struct BenchArgs {
    /// A .wasm component, or builtin:NAME.
    policy: String,
    /// A parameter for the measured policy (not the baseline).
    #[arg(long = "param", value_name = "KEY=VALUE", value_parser = super::parse_pair)]
    params: Vec<(String, String)>,
    /// Another policy of the same kind to compare against.
    #[arg(long, value_name = "FILE|builtin:NAME")]
    baseline: Option<String>,
    /// Items per call: containers to price, pending containers to place, or
    /// steps in the plan a reservation is validated against.
    #[arg(long, default_value_t = 1000)]
    batch: u32,
    /// How long to measure each policy.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    settings: super::SettingsArgs,
}

#[derive(Debug, Serialize)]
struct Figures {
    policy: String,
    kind: PolicyKind,
    batch: u32,
    calls: usize,
    per_call_ns: Stats,
    per_item_ns: Stats,
}

#[derive(Debug, Serialize)]
struct Stats {
    mean: f64,
    p50: f64,
    p99: f64,
}

#[derive(Debug, Serialize)]
struct Report {
    result: Figures,
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline: Option<Figures>,
    /// result ÷ baseline, of the per-call medians.
    #[serde(skip_serializing_if = "Option::is_none")]
    ratio_p50: Option<f64>,
}

pub(super) fn run(args: BenchArgs) -> anyhow::Result<()> {
    if args.batch == 0 {
        bail!("--batch must be at least 1");
    }
    // Warnings reach the author; RUST_LOG=info shows what the guest writes.
    // A failing call's error says what the guest wrote before it failed.
    super::init_tracing(super::OFFLINE_TRACING);
    let settings = args.settings.load()?;
    // No host clock here: guests read a clock fixed at the Unix epoch.
    let engine =
        PolicyEngine::from_settings(&settings.policies, Arc::new(VirtualClock::default()))?;
    let policy = load(&engine, &settings, &args.policy, &args.params)?;
    let baseline = args
        .baseline
        .as_deref()
        .map(|baseline| load(&engine, &settings, baseline, &[]))
        .transpose()?;
    if let Some(baseline) = &baseline
        && baseline.info.kind != policy.info.kind
    {
        bail!(
            "the baseline is a {} policy and {} a {} policy; compare policies of one kind",
            baseline.info.kind,
            args.policy,
            policy.info.kind
        );
    }
    let budget = Duration::from_secs_f64(args.seconds.max(0.01));
    let result = measure(&policy, args.batch, budget)?;
    let baseline = baseline
        .map(|b| measure(&b, args.batch, budget))
        .transpose()?;
    let ratio_p50 = baseline
        .as_ref()
        .map(|b| result.per_call_ns.p50 / b.per_call_ns.p50);
    let report = Report {
        result,
        baseline,
        ratio_p50,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_table(&report);
    }
    Ok(())
}

/// The policy `text` names, loaded as `weft policy check` would.
fn load(
    engine: &PolicyEngine,
    settings: &Settings,
    text: &str,
    params: &[(String, String)],
) -> anyhow::Result<Arc<PolicyVersion>> {
    let source = PolicySource::parse(text);
    let bytes = source.read().map_err(anyhow::Error::msg)?;
    inspect(
        engine,
        &source.to_string(),
        &bytes,
        &settings.pricing_params,
        params,
    )
    .with_context(|| format!("{source} failed its check"))
}

fn measure(version: &PolicyVersion, batch: u32, budget: Duration) -> anyhow::Result<Figures> {
    let call: Box<dyn Fn() -> Result<(), CallError>> = match version.info.kind {
        PolicyKind::Pricing => {
            let usage = sample_usage(batch);
            let multiplicators = version.multiplicators(&crate::policy::sample_market())?;
            Box::new(move || version.charge(&usage, multiplicators).map(drop))
        }
        PolicyKind::Scheduling => {
            let snapshot = sample_snapshot(batch);
            Box::new(move || version.schedule(&snapshot).map(drop))
        }
        PolicyKind::Sharing => {
            let admission = sample_admission(batch);
            Box::new(move || version.validate(&admission).map(drop))
        }
    };
    for _ in 0..3 {
        call().with_context(|| format!("{} failed during warm-up", version.info.name))?;
    }
    let mut samples = Vec::new();
    let started = Instant::now();
    while (started.elapsed() < budget || samples.len() < 10) && samples.len() < 1_000_000 {
        let t = Instant::now();
        call().with_context(|| format!("{} failed while measured", version.info.name))?;
        samples.push(t.elapsed().as_nanos() as f64);
    }
    samples.sort_by(f64::total_cmp);
    let stats = |scale: f64| Stats {
        mean: samples.iter().sum::<f64>() / samples.len() as f64 / scale,
        p50: percentile(&samples, 0.50) / scale,
        p99: percentile(&samples, 0.99) / scale,
    };
    Ok(Figures {
        policy: format!("{} {}", version.info.name, version.info.version),
        kind: version.info.kind,
        batch,
        calls: samples.len(),
        per_call_ns: stats(1.0),
        per_item_ns: stats(f64::from(batch)),
    })
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    let index = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[index]
}

/// `n` containers of mixed sizes, some with GPUs, of eight apps in four
/// projects, each row with its context and an interval ending now (the
/// context filled in as a server fills it).
pub(super) fn sample_usage(n: u32) -> Usage {
    let contexts: Vec<ChargeContext> = (0..8)
        .map(|i| ChargeContext {
            app: format!("application_1700000000000_{:04}", i + 1),
            queue: format!("root.q{}", i % 2),
            user: format!("user{}", i % 3),
            project: ["ml", "web", "etl", "default"][i % 4].into(),
            application_type: "SPARK".into(),
            application_tags: vec![format!("team:{}", i % 4)],
            priority: (i % 3) as i32,
            node_label: if i.is_multiple_of(4) {
                "gpu".into()
            } else {
                String::new()
            },
            ..ChargeContext::anonymous()
        })
        .collect();
    let mut usage = Usage::empty();
    usage.contexts = contexts;
    const NOW: i64 = 1_700_000_000_000;
    for i in 0..n as usize {
        let seconds = 1.0 + (i % 10) as f64;
        usage.push(crate::policy::UsageRow {
            seconds,
            memory_mb: 1024 * (1 + (i % 8) as u64),
            vcores: 1 + (i % 4) as u64,
            gpus: u64::from(i % 7 == 0),
            start_ms: NOW - (seconds * 1000.0) as i64,
            end_ms: NOW,
            context: (i % 8) as u32,
        });
    }
    usage
}

/// A reservation of 10 GB for an hour, validated against a plan whose
/// timelines have `n` steps: the user's own hour-long blocks of 1 GB and,
/// plan-wide, twice as much. The queue has 1 TB; every limit is 50 %, the
/// window a day, so the candidate is accepted.
pub(super) fn sample_admission(n: u32) -> Admission {
    const HOUR: i64 = 3_600_000;
    let steps = n.max(2) as usize;
    let at_ms: Vec<i64> = (0..steps as i64).map(|i| i * HOUR).collect();
    let timeline = |memory_mb: u64| Timeline {
        memory_mb: (0..steps)
            .map(|i| {
                if i + 1 == steps {
                    0
                } else {
                    memory_mb * (1 + i as u64 % 2)
                }
            })
            .collect(),
        vcores: (0..steps)
            .map(|i| if i + 1 == steps { 0 } else { 1 + i as u64 % 2 })
            .collect(),
        gpus: vec![0; steps],
        at_ms: at_ms.clone(),
    };
    let middle = (steps as i64 / 2) * HOUR;
    Admission {
        settings: PlanSettings {
            queue: "root.bench".into(),
            capacity: SharingResources {
                memory_mb: 1 << 20,
                vcores: 1024,
                gpus: 0,
            },
            reservation_window_ms: 24 * HOUR,
            instantaneous_max_capacity: 50.0,
            average_capacity: 50.0,
        },
        user: "bench".into(),
        reservation_id: "reservation_0_0001".into(),
        from_ms: 0,
        to_ms: steps as i64 * HOUR,
        candidate: Timeline {
            at_ms: vec![middle, middle + HOUR],
            memory_mb: vec![10_240, 0],
            vcores: vec![10, 0],
            gpus: vec![0, 0],
        },
        user_committed: timeline(1024),
        plan_committed: timeline(2048),
        context: crate::policy::PlanContext {
            now_ms: 0,
            reservation_name: "bench".into(),
            recurring: false,
            reservations: steps as u32,
            user_reservations: steps as u32 / 2,
            users: 2,
        },
    }
}

/// `n` pending 1 GB, 1 vcore containers in asks of 10 (one app per ask) and
/// nodes of 8 GB, 8 vcores enough for them all.
pub(super) fn sample_snapshot(n: u32) -> Snapshot {
    let asks = n.div_ceil(10) as usize;
    let nodes = n.div_ceil(8) as usize;
    Snapshot::of_columns(
        0,
        Nodes {
            free_memory_mb: vec![8192; nodes],
            free_vcores: vec![8; nodes],
            free_gpus: vec![0; nodes],
            capacity_memory_mb: vec![8192; nodes],
            capacity_vcores: vec![8; nodes],
            capacity_gpus: vec![0; nodes],
            ..Nodes::empty()
        },
        Queues {
            parent: vec![0, 0],
            capacity: vec![100.0; 2],
            maximum_capacity: vec![100.0; 2],
            minimum_user_limit_percent: vec![100.0; 2],
            user_limit_factor: vec![Some(1.0); 2],
            fair: vec![false; 2],
            used_memory_mb: vec![0; 2],
            used_vcores: vec![0; 2],
            used_gpus: vec![0; 2],
            ..Queues::empty()
        },
        Apps {
            queue: vec![1; asks],
            user: (0..asks as u32).map(|i| i % 10).collect(),
            priority: vec![0; asks],
            submit_time_ms: (0..asks as i64).collect(),
            used_memory_mb: vec![0; asks],
            used_vcores: vec![0; asks],
            used_gpus: vec![0; asks],
            ..Apps::empty()
        },
        Asks {
            app: (0..asks as u32).collect(),
            pending: (0..asks as u32).map(|i| (n - i * 10).min(10)).collect(),
            memory_mb: vec![1024; asks],
            vcores: vec![1; asks],
            gpus: vec![0; asks],
            ..Asks::empty()
        },
    )
}

fn print_table(report: &Report) {
    println!(
        "{:<28} {:>7} {:>8} {:>14} {:>14} {:>14} {:>12}",
        "policy", "batch", "calls", "mean/call ns", "p50/call ns", "p99/call ns", "p50/item ns"
    );
    for figures in std::iter::once(&report.result).chain(&report.baseline) {
        println!(
            "{:<28} {:>7} {:>8} {:>14.0} {:>14.0} {:>14.0} {:>12.1}",
            figures.policy,
            figures.batch,
            figures.calls,
            figures.per_call_ns.mean,
            figures.per_call_ns.p50,
            figures.per_call_ns.p99,
            figures.per_item_ns.p50
        );
    }
    if let Some(ratio) = report.ratio_p50 {
        println!("ratio to baseline (p50 per call): {ratio:.2}×");
    }
}
