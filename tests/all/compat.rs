//! weft:policy@0.2.0 components still load and behave exactly as before:
//! the bundled policies as built for 0.2.0 (tests/fixtures/wit-0.2.0/, see
//! its README) give the same placements, victims, admissions and ledgers as
//! their 0.3.0 builds on the same inputs; `weft policy test` passes them.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use weft_host::clock::VirtualClock;
use weft_host::config::{CallLimits, Settings};
use weft_host::policy::{
    Admission, Apps, Asks, Containers, Nodes, PlanContext, PlanSettings, PolicyEngine, PolicyKind,
    PolicyRuntime, PolicySource, PolicyVersion, Queues, SharingResources, Snapshot, Timeline,
};

use crate::support::weft_within;

/// A bundled policy as built for 0.2.0.
fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/wit-0.2.0")
        .join(format!("{name}.wasm"))
}

/// The 0.2.0 build of `builtin` (file `fixture`) and its 0.3.0 build, loaded
/// as `kind`.
fn both(kind: PolicyKind, builtin: &str, file: &str) -> (Arc<PolicyVersion>, Arc<PolicyVersion>) {
    let limits = CallLimits {
        timeout: Duration::from_secs(10),
        ..CallLimits::default()
    };
    let engine = PolicyEngine::new(limits, Arc::new(VirtualClock::default())).unwrap();
    let runtime = PolicyRuntime::new(engine, Settings::default().pricing_params.clone(), 3);
    let old = runtime
        .load(kind, &PolicySource::File(fixture(file)), &[])
        .unwrap_or_else(|e| panic!("the 0.2.0 build of {builtin} loads: {e}"));
    let new = runtime
        .load(kind, &PolicySource::Builtin(builtin.into()), &[])
        .unwrap_or_else(|e| panic!("the 0.3.0 build of {builtin} loads: {e}"));
    assert_eq!(old.wit_version(), "0.2.0");
    assert_eq!(new.wit_version(), "0.3.0");
    assert_eq!(old.info.name, new.info.name);
    (old, new)
}

/// Snapshots of `nodes` nodes of 8 GB and 8 vcores (some partly used), two
/// leaves under root (one fair), and apps of three users asking for
/// containers of mixed sizes.
fn snapshot(seed: u64, nodes: usize, apps: usize) -> Snapshot {
    let pick = |i: usize, of: &[u64]| of[(i as u64 * 7 + seed) as usize % of.len()];
    let free: Vec<u64> = (0..nodes)
        .map(|i| pick(i, &[8192, 4096, 1024, 0]))
        .collect();
    let queues = Queues {
        parent: vec![0, 0, 0],
        capacity: vec![100.0, 60.0, 40.0],
        maximum_capacity: vec![100.0, 100.0, 70.0],
        minimum_user_limit_percent: vec![100.0, 50.0, 100.0],
        user_limit_factor: vec![Some(1.0), Some(2.0), None],
        fair: vec![false, false, true],
        used_memory_mb: vec![0; 3],
        used_vcores: vec![0; 3],
        used_gpus: vec![0; 3],
        ..Queues::empty()
    };
    let mut snapshot = Snapshot::of_columns(
        1_700_000_000_000,
        Nodes {
            free_memory_mb: free.clone(),
            free_vcores: free.iter().map(|m| m / 1024).collect(),
            free_gpus: vec![0; nodes],
            capacity_memory_mb: vec![8192; nodes],
            capacity_vcores: vec![8; nodes],
            capacity_gpus: vec![0; nodes],
            ..Nodes::empty()
        },
        queues,
        Apps {
            queue: (0..apps).map(|a| 1 + (a % 2) as u32).collect(),
            user: (0..apps).map(|a| (a % 3) as u32).collect(),
            priority: (0..apps).map(|a| (a % 2) as i32).collect(),
            submit_time_ms: (0..apps).map(|a| a as i64).collect(),
            used_memory_mb: (0..apps).map(|a| pick(a, &[0, 2048, 8192])).collect(),
            used_vcores: (0..apps).map(|a| pick(a, &[0, 2, 8])).collect(),
            used_gpus: vec![0; apps],
            ..Apps::empty()
        },
        Asks {
            app: (0..apps as u32).collect(),
            pending: (0..apps).map(|a| 1 + pick(a, &[1, 4, 20]) as u32).collect(),
            memory_mb: (0..apps).map(|a| pick(a, &[512, 1024, 4096])).collect(),
            vcores: (0..apps).map(|a| pick(a, &[1, 2])).collect(),
            gpus: vec![0; apps],
            ..Asks::empty()
        },
    );
    // Queue use is its apps' (root: everything).
    for a in 0..apps {
        let q = snapshot.apps.queue[a] as usize;
        for queue in [q, 0] {
            snapshot.queues.used_memory_mb[queue] += snapshot.apps.used_memory_mb[a];
            snapshot.queues.used_vcores[queue] += snapshot.apps.used_vcores[a];
        }
    }
    snapshot
}

/// Containers of every app on node 0, started one after another.
fn running(snapshot: &Snapshot) -> Containers {
    let apps = snapshot.apps.queue.len();
    Containers {
        app: (0..apps as u32).collect(),
        node: vec![0; apps],
        memory_mb: vec![1024; apps],
        vcores: vec![1; apps],
        gpus: vec![0; apps],
        start_time_ms: (0..apps as i64).collect(),
        ..Containers::empty()
    }
    .complete()
}

#[test]
fn scheduling_policies_built_for_0_2_0_place_and_preempt_as_their_0_3_0_builds() {
    for (builtin, file) in [("capacity", "capacity"), ("drf", "drf"), ("fifo", "fifo")] {
        let (old, new) = both(PolicyKind::Scheduling, builtin, file);
        for seed in 0..12 {
            let s = snapshot(seed, 3 + seed as usize * 3, 2 + seed as usize * 5);
            let (a, b) = (old.schedule(&s).unwrap(), new.schedule(&s).unwrap());
            assert_eq!(
                a, b,
                "{builtin}, snapshot {seed}: 0.2.0 and 0.3.0 builds place apart"
            );
            assert!(seed < 2 || !a.ask.is_empty(), "{builtin} placed something");
            let r = running(&s);
            assert_eq!(
                old.preempt(&s, &r).unwrap(),
                new.preempt(&s, &r).unwrap(),
                "{builtin}, snapshot {seed}: the victims differ"
            );
        }
    }
}

#[test]
fn sharing_policies_built_for_0_2_0_admit_as_their_0_3_0_builds() {
    const HOUR: i64 = 3_600_000;
    let block = |from: i64, to: i64, memory_mb: u64| Timeline {
        at_ms: vec![from, to],
        memory_mb: vec![memory_mb, 0],
        vcores: vec![memory_mb / 1024, 0],
        gpus: vec![0, 0],
    };
    let admission = |candidate_mb: u64, held_mb: u64| Admission {
        settings: PlanSettings {
            queue: "root.dedicated".into(),
            capacity: SharingResources {
                memory_mb: 102_400,
                vcores: 100,
                gpus: 0,
            },
            reservation_window_ms: 24 * HOUR,
            instantaneous_max_capacity: 50.0,
            average_capacity: 25.0,
        },
        user: "alice".into(),
        reservation_id: "reservation_1700000000000_0002".into(),
        from_ms: 0,
        to_ms: 48 * HOUR,
        candidate: block(10 * HOUR, 14 * HOUR, candidate_mb),
        user_committed: block(0, 8 * HOUR, held_mb),
        plan_committed: block(0, 20 * HOUR, held_mb * 2),
        context: PlanContext {
            now_ms: 0,
            reservation_name: "nightly".into(),
            recurring: false,
            reservations: 2,
            user_reservations: 1,
            users: 2,
        },
    };
    for (builtin, file) in [
        ("capacity-over-time", "capacity_over_time"),
        ("no-overcommit", "no_overcommit"),
    ] {
        let (old, new) = both(PolicyKind::Sharing, builtin, file);
        for (candidate, held) in [(10_240, 0), (51_200, 10_240), (61_440, 0), (40_960, 40_960)] {
            let a = admission(candidate, held);
            assert_eq!(
                old.window(&a.settings).unwrap(),
                new.window(&a.settings).unwrap()
            );
            assert_eq!(
                old.validate(&a).unwrap(),
                new.validate(&a).unwrap(),
                "{builtin}: {candidate} MB over {held} MB"
            );
            let empty = Admission {
                candidate: Timeline {
                    at_ms: vec![],
                    memory_mb: vec![],
                    vcores: vec![],
                    gpus: vec![],
                },
                ..a
            };
            assert_eq!(
                old.available(&empty).unwrap(),
                new.available(&empty).unwrap()
            );
        }
    }
}

/// A two-day log of three projects, with variable prices and a GPU.
fn log() -> String {
    let mut lines = Vec::new();
    let start = |t: u64, c: &str, project: &str, mb: u64, vcores: u32, gpus: u32| {
        format!(
            r#"{{"t": {t}, "event": "start", "container": "{c}", "app": "application_1_000{}", "project": "{project}", "user": "u", "memory_mb": {mb}, "vcores": {vcores}, "gpus": {gpus}}}"#,
            c.len()
        )
    };
    lines.push(start(0, "a", "ml", 4096, 2, 1));
    lines.push(start(1_000, "bb", "web", 1024, 4, 0));
    lines.push(
        r#"{"t": 60000, "event": "utilization", "memory": 0.9, "vcores": 0.7, "gpus": 1.0}"#
            .to_string(),
    );
    lines.push(start(90_000_000, "ccc", "default", 2048, 1, 0));
    lines.push(r#"{"t": 100000000, "event": "finish", "container": "a"}"#.to_string());
    lines.push(r#"{"t": 120000000, "event": "finish", "container": "bb"}"#.to_string());
    lines.push(r#"{"t": 150000000, "event": "finish", "container": "ccc"}"#.to_string());
    lines.join("\n")
}

/// The ledger `weft replay` writes for `log` priced by `pricing`.
fn ledger(log: &std::path::Path, pricing: &str) -> serde_json::Value {
    let out = weft_within(
        &[
            "replay",
            log.to_str().unwrap(),
            "--pricing",
            pricing,
            "--set",
            "yarn.resourcemanager.quota.variable.price.enabled=true",
        ],
        Duration::from_secs(300),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    report["daily"].clone()
}

#[test]
fn pricing_policies_built_for_0_2_0_replay_to_the_ledgers_of_their_0_3_0_builds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    std::fs::write(&path, log()).unwrap();
    for (builtin, file) in [
        ("hops-pricing", "hops_pricing"),
        ("flat-pricing", "flat_pricing"),
    ] {
        let old = ledger(&path, fixture(file).to_str().unwrap());
        let new = ledger(&path, &format!("builtin:{builtin}"));
        assert!(old.as_array().is_some_and(|days| days.len() >= 4), "{old}");
        assert_eq!(
            old, new,
            "{builtin}: the 0.2.0 and 0.3.0 builds charge apart"
        );
    }
}

#[test]
fn weft_policy_test_passes_the_0_2_0_builds() {
    for file in ["capacity", "hops_pricing", "capacity_over_time"] {
        let path = fixture(file);
        let out = weft_within(
            &["policy", "test", path.to_str().unwrap(), "--rounds", "10"],
            Duration::from_secs(300),
        );
        let printed = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && printed.contains("checks passed"),
            "{file}: {printed}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            file != "capacity" || printed.contains("built for weft:policy@0.2.0"),
            "{printed}"
        );
    }
}
