//! What admitting a reservation costs: one decision — the plan cut to the
//! decision's range, then `validate` of `capacity-over-time` — against a plan
//! holding 10,000 reservations of 100 users, through WASM and with the same
//! policy crate built natively, in the same run.
//!
//! Prints p50 and p99 of each (interleaved samples, so both see the same
//! machine) and their ratio, then criterion's medians.
//!
//! ```text
//! cargo bench -p weft-host --bench reservation
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use weft_host::clock::VirtualClock;
use weft_host::config::Settings;
use weft_host::policy::{self, PolicyKind, PolicyRuntime, PolicySource};
use weft_host::reservation::rle::{Amount, RleTimeline};
use weft_host::reservation::{Plan, PlanConfig, Reservation, ReservationDefinition, ReservationId};
use weft_host::resources::Resources;

const HOUR: i64 = 3_600_000;
const WEEK: i64 = 7 * 24 * HOUR;
const RESERVATIONS: u64 = 10_000;
const USERS: u64 = 100;

/// A small deterministic generator: the plan is the same every run.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

fn id(sequence: u64) -> ReservationId {
    ReservationId {
        cluster_timestamp: 1,
        sequence,
    }
}

/// A 1 TB / 1,024-vcore queue; users may hold half of it at any instant and
/// on average over any day. 10,000 reservations of 100 users, each 1–8 GB
/// (a vcore per GB) for 1–4 hours, spread over a week.
fn plan() -> Plan {
    let config = PlanConfig {
        instantaneous_max_capacity: 50.0,
        average_capacity: 50.0,
        ..PlanConfig::new("root.dedicated", Resources::new(1 << 20, 1024, 0))
    };
    let mut plan = Plan::new(config).expect("a valid plan");
    let definition: ReservationDefinition = serde_json::from_value(serde_json::json!({
        "arrival": 0, "deadline": WEEK, "reservation-name": "bench",
        "reservation-requests": {"reservation-request-interpreter": 1, "reservation-request": [
            {"capability": {"memory": 1024, "vCores": 1}, "num-containers": 1, "duration": HOUR}]}
    }))
    .expect("a valid definition");
    let mut rng = Lcg(7);
    for n in 1..=RESERVATIONS {
        let start = rng.below((WEEK / 1000) as u64) as i64 * 1000;
        let hours = 1 + rng.below(4) as i64;
        let gb = 1 + rng.below(8) as i64;
        let allocation =
            RleTimeline::block(start, start + hours * HOUR, Amount::new(gb * 1024, gb, 0));
        let user = format!("user{}", n % USERS);
        let reservation =
            Reservation::new(id(n), user, definition.clone(), None, allocation, 0).unwrap();
        plan.add(reservation).expect("fits the plan");
    }
    plan
}

/// The decision: user0 asks for 10 GB for an hour in the middle of the week.
struct Decision {
    plan: Plan,
    candidate: RleTimeline,
    window_ms: i64,
}

impl Decision {
    fn admission(&self) -> policy::Admission {
        let (start, end) = self.candidate.span().expect("not empty");
        self.plan
            .admission(
                "user0",
                &id(RESERVATIONS + 1),
                &self.candidate,
                start - self.window_ms,
                end + self.window_ms,
                None,
                weft_host::reservation::plan::Terms::default(),
            )
            .expect("a plan of valid reservations")
    }
}

/// The host's WIT admission as the SDK's checked view (moved, not copied).
fn to_native(admission: policy::Admission) -> weft_policy::sharing::Admission {
    use weft_policy::sharing::wit;
    let timeline = |t: policy::Timeline| wit::Timeline {
        at_ms: t.at_ms,
        memory_mb: t.memory_mb,
        vcores: t.vcores,
        gpus: t.gpus,
    };
    let s = admission.settings;
    let record = wit::Admission {
        settings: wit::PlanSettings {
            queue: s.queue,
            capacity: weft_policy::types::Resources {
                memory_mb: s.capacity.memory_mb,
                vcores: s.capacity.vcores,
                gpus: s.capacity.gpus,
            },
            reservation_window_ms: s.reservation_window_ms,
            instantaneous_max_capacity: s.instantaneous_max_capacity,
            average_capacity: s.average_capacity,
        },
        user: admission.user,
        reservation_id: admission.reservation_id,
        from_ms: admission.from_ms,
        to_ms: admission.to_ms,
        candidate: timeline(admission.candidate),
        user_committed: timeline(admission.user_committed),
        context: wit::PlanContext {
            now_ms: admission.context.now_ms,
            reservation_name: admission.context.reservation_name,
            recurring: admission.context.recurring,
            reservations: admission.context.reservations,
            user_reservations: admission.context.user_reservations,
            users: admission.context.users,
        },
        plan_committed: timeline(admission.plan_committed),
    };
    weft_policy::sharing::Admission::new(record).expect("a well-formed admission")
}

fn percentile(sorted: &[u64], q: f64) -> u64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn reservation(c: &mut Criterion) {
    let settings = Settings::load(None, &[]).expect("default settings");
    let runtime = PolicyRuntime::from_settings(&settings, Arc::new(VirtualClock::default()))
        .expect("an engine");
    runtime
        .load(
            PolicyKind::Sharing,
            &PolicySource::parse("builtin:capacity-over-time"),
            &[],
        )
        .expect("capacity-over-time loads");
    let slot = runtime.sharing();
    let plan = plan();
    let window_ms = slot.window(&plan.config().to_wit()).expect("window");
    let middle = WEEK / 2;
    let decision = Decision {
        plan,
        candidate: RleTimeline::block(middle, middle + HOUR, Amount::new(10 * 1024, 10, 0)),
        window_ms,
    };
    let wasm = || {
        slot.validate(&decision.admission())
            .expect("the call succeeds")
    };
    let native = || capacity_over_time::validate(&to_native(decision.admission()));
    // Both must accept, or the bench would time a shortcut.
    assert!(wasm().is_ok(), "WASM refused: {:?}", wasm());
    assert!(native().is_ok(), "native refused: {:?}", native());
    let admission = decision.admission();
    println!(
        "reservation: one decision against {RESERVATIONS} reservations of {USERS} users; \
         window {} h; the admission carries {} user steps and {} plan steps",
        window_ms / HOUR,
        admission.user_committed.at_ms.len(),
        admission.plan_committed.at_ms.len(),
    );

    // Interleaved samples: each pair sees the same machine.
    const SAMPLES: usize = 20_000;
    let (mut wasm_ns, mut native_ns) = (Vec::new(), Vec::new());
    for _ in 0..SAMPLES {
        let started = Instant::now();
        let _ = std::hint::black_box(wasm());
        wasm_ns.push(started.elapsed().as_nanos() as u64);
        let started = Instant::now();
        let _ = std::hint::black_box(native());
        native_ns.push(started.elapsed().as_nanos() as u64);
    }
    wasm_ns.sort_unstable();
    native_ns.sort_unstable();
    let (w50, w99) = (percentile(&wasm_ns, 0.5), percentile(&wasm_ns, 0.99));
    let (n50, n99) = (percentile(&native_ns, 0.5), percentile(&native_ns, 0.99));
    println!(
        "reservation: decision: WASM p50 {w50} ns, p99 {w99} ns; native p50 {n50} ns, \
         p99 {n99} ns; WASM/native p50 {:.2}×, p99 {:.2}×",
        w50 as f64 / n50 as f64,
        w99 as f64 / n99 as f64
    );

    // The policy alone, on an admission built once: what crossing into WASM
    // and running there costs against the same code natively.
    let prebuilt = decision.admission();
    let prebuilt_native = to_native(decision.admission());
    let (mut wasm_ns, mut native_ns) = (Vec::new(), Vec::new());
    for _ in 0..SAMPLES {
        let started = Instant::now();
        let _ = std::hint::black_box(slot.validate(&prebuilt));
        wasm_ns.push(started.elapsed().as_nanos() as u64);
        let started = Instant::now();
        let _ = std::hint::black_box(capacity_over_time::validate(&prebuilt_native));
        native_ns.push(started.elapsed().as_nanos() as u64);
    }
    wasm_ns.sort_unstable();
    native_ns.sort_unstable();
    let (w50, w99) = (percentile(&wasm_ns, 0.5), percentile(&wasm_ns, 0.99));
    let (n50, n99) = (percentile(&native_ns, 0.5), percentile(&native_ns, 0.99));
    println!(
        "reservation: validate alone: WASM p50 {w50} ns, p99 {w99} ns; native p50 {n50} ns, \
         p99 {n99} ns; WASM/native p50 {:.2}×",
        w50 as f64 / n50 as f64,
    );

    let mut group = c.benchmark_group("reservation_decision");
    group
        .sample_size(50)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    group.bench_function("native", |b| b.iter(native));
    group.bench_function("wasm", |b| b.iter(wasm));
    group.finish();
}

criterion_group!(benches, reservation);
criterion_main!(benches);
