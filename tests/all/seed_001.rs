//! Seed 001's worked example, shipped as examples/seed-001/scenario.toml and
//! run through `weft simulate` with the `capacity` policy: the numbers the
//! Capacity Scheduler documentation gives, in GB.

use serde_json::Value;

use crate::support::weft;

const SCENARIO: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../examples/seed-001/scenario.toml"
);

fn simulate(extra: &[&str]) -> Value {
    let mut args = vec!["simulate", SCENARIO];
    args.extend_from_slice(extra);
    let output = weft(&args);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// GB used by `queue` (a full path) at the observation taken at `t_ms`.
fn queue_gb(summary: &Value, t_ms: u64, queue: &str) -> u64 {
    let observation = summary["observations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["t_ms"] == t_ms)
        .unwrap();
    let q = observation["queues"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["queue"] == queue)
        .unwrap();
    q["used"]["memory_mb"].as_u64().unwrap() / 1024
}

fn user_gb(summary: &Value, t_ms: u64, user: &str) -> u64 {
    let observation = summary["observations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["t_ms"] == t_ms)
        .unwrap();
    observation["users"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["user"] == user)
        .map_or(0, |u| u["used"]["memory_mb"].as_u64().unwrap() / 1024)
}

fn is_pending(summary: &Value, t_ms: u64, user: &str) -> bool {
    let observation = summary["observations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["t_ms"] == t_ms)
        .unwrap();
    observation["pending_apps"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["user"] == user)
}

#[test]
fn seed_001_development_grows_elastically_then_qa_gets_its_share() {
    let summary = simulate(&[]);
    assert_eq!(summary["policies"]["scheduling"]["policy"], "capacity");
    // Support and marketing full.
    assert_eq!(
        (
            queue_gb(&summary, 30_000, "root.support"),
            queue_gb(&summary, 30_000, "root.marketing")
        ),
        (100, 300)
    );
    // Sid and Hitesh: 120 GB each, 240 GB in development (its guarantee is 120).
    assert_eq!(
        (
            user_gb(&summary, 30_000, "sid"),
            user_gb(&summary, 30_000, "hitesh")
        ),
        (120, 120)
    );
    assert_eq!(
        queue_gb(&summary, 30_000, "root.engineering.development"),
        240
    );
    // Jian, Zhijie and Xuan: development takes all of engineering, 600 GB, 120 each.
    assert_eq!(
        queue_gb(&summary, 90_000, "root.engineering.development"),
        600
    );
    for user in ["sid", "hitesh", "jian", "zhijie", "xuan"] {
        assert_eq!(user_gb(&summary, 90_000, user), 120, "{user}");
    }
    // Gupta's app in qa waits: the cluster is full.
    assert!(is_pending(&summary, 150_000, "gupta"));
    assert_eq!(queue_gb(&summary, 150_000, "root.engineering.qa"), 0);
    // As development's apps end, qa gets the freed containers, up to the 1:4 ratio.
    assert_eq!(queue_gb(&summary, 700_000, "root.engineering.qa"), 480);
    assert_eq!(
        queue_gb(&summary, 700_000, "root.engineering.development"),
        120
    );
}

#[test]
fn seed_001_with_maximum_capacity_40_development_never_passes_240_gb() {
    let summary = simulate(&[
        "--set",
        "yarn.scheduler.capacity.root.engineering.development.maximum-capacity=40",
    ]);
    for observation in summary["observations"].as_array().unwrap() {
        let t = observation["t_ms"].as_u64().unwrap();
        assert!(
            queue_gb(&summary, t, "root.engineering.development") <= 240,
            "at {t} ms"
        );
    }
    assert_eq!(
        queue_gb(&summary, 90_000, "root.engineering.development"),
        240
    );
    // The rest of engineering goes to qa once gupta asks.
    assert_eq!(queue_gb(&summary, 150_000, "root.engineering.qa"), 360);
}

#[test]
fn seed_001_with_reclaim_gives_qa_its_guarantee_within_the_starvation_time() {
    // Gupta asks at 120 s; after 15 s of starvation reclaim takes back the
    // youngest of development's containers above its guarantee (killed at
    // once: no wait for masters to give them back).
    let summary = simulate(&[
        "--set",
        "yarn.resourcemanager.scheduler.monitor.enable=true",
        "--set",
        "yarn.resourcemanager.monitor.capacity.preemption.max_wait_before_kill=0",
    ]);
    assert_eq!(
        queue_gb(&summary, 90_000, "root.engineering.development"),
        600,
        "no reclaim before anyone starves"
    );
    assert_eq!(queue_gb(&summary, 150_000, "root.engineering.qa"), 480);
    assert_eq!(
        queue_gb(&summary, 150_000, "root.engineering.development"),
        120,
        "development keeps its guarantee"
    );
}
