//! `weft replay` follows HOPS-1385 to the credit: each case is a log whose
//! charges are worked out by hand from the seed's formulas.

use std::time::Duration;

use serde_json::Value;

use crate::support::{CLOCK_PRICING, assert_credits, weft_within};

/// Writes `lines` to a temporary log and replays it with `args`. Every
/// case here finishes in a second or two; the limit only stops a replay
/// that has started stepping through idle time again from hanging the suite.
fn replay(lines: &[&str], args: &[&str]) -> (bool, Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    std::fs::write(&path, lines.join("\n")).unwrap();
    let mut all = vec!["replay", path.to_str().unwrap()];
    all.extend_from_slice(args);
    let output = weft_within(&all, Duration::from_secs(300));
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    let json = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    if output.status.success() {
        (true, json, stderr)
    } else {
        assert!(stdout.is_empty(), "a failed replay printed {stdout:?}");
        (false, json, stderr)
    }
}

fn start(t: u64, container: &str, user: &str, memory_mb: u64, vcores: u32, gpus: u32) -> String {
    format!(
        r#"{{"t": {t}, "event": "start", "container": "{container}", "app": "a-{container}", "project": "P", "user": "{user}", "memory_mb": {memory_mb}, "vcores": {vcores}, "gpus": {gpus}}}"#
    )
}

fn finish(t: u64, container: &str) -> String {
    format!(r#"{{"t": {t}, "event": "finish", "container": "{container}"}}"#)
}

/// (case, log, extra args, credits expected for project P)
fn cases() -> Vec<(&'static str, Vec<String>, Vec<&'static str>, f64)> {
    vec![
        // 25 s of 2 memory units (2048 MB / 1024), the dominant resource.
        ("memory dominates", vec![start(0, "c", "u", 2048, 1, 0), finish(25_000, "c")], vec![], 50.0),
        // 4 vcores dominate 1 GB: 10 s × 4.
        ("vcores dominate", vec![start(0, "c", "u", 1024, 4, 0), finish(10_000, "c")], vec![], 40.0),
        // 3 s is charged as the 10 s minimum runtime.
        ("minimum runtime", vec![start(0, "c", "u", 1024, 1, 0), finish(3_000, "c")], vec![], 10.0),
        // A shorter minimum runtime is honoured.
        (
            "minimum runtime setting",
            vec![start(0, "c", "u", 1024, 1, 0), finish(3_000, "c")],
            vec!["--set", "yarn.resourcemanager.quota.min.runtime=5000"],
            5.0,
        ),
        // GPU base price 2: 20 s × 1 GPU × 2 beats 20 s of general.
        (
            "gpu dominates at its own base price",
            vec![start(0, "c", "u", 1024, 1, 1), finish(20_000, "c")],
            vec!["--set", "yarn.resourcemanager.quota.price.base.gpu=2"],
            40.0,
        ),
        // The old size is charged up to the update: 20 s × 1 + 10 s × 4.
        (
            "update charges the old size first",
            vec![
                start(0, "c", "u", 1024, 1, 0),
                r#"{"t": 20000, "event": "update", "container": "c", "memory_mb": 4096, "vcores": 2, "gpus": 0}"#.into(),
                finish(30_000, "c"),
            ],
            vec![],
            60.0,
        ),
        // Variable pricing: memory 0.7 over the 0.2 threshold, increment 2:
        // general = 1 + 0.5 × 2 = 2; 10 s × 1 unit × 2.
        (
            "variable pricing",
            vec![
                r#"{"t": 0, "event": "utilization", "memory": 0.7, "vcores": 0.4, "gpus": 0.1}"#.into(),
                start(0, "c", "u", 1024, 1, 0),
                finish(10_000, "c"),
            ],
            vec![
                "--set",
                "yarn.resourcemanager.quota.variable.price.enabled=true",
                "--set",
                "yarn.resourcemanager.quota.multiplicator.increment.general=2",
            ],
            20.0,
        ),
        // The price changes mid-run. Multiplicator steps at 0 s (no load
        // yet: 1.0) and 15 s (the load of 5 s: 1 + (0.6 − 0.2) = 1.4).
        // QUOTA_COMPUTE at 10 s charges 0–10 s at 1.0; the finish at 20 s
        // charges 10–20 s at 1.4, the price then: 10 + 14.
        (
            "price current when charging",
            vec![
                start(0, "c", "u", 1024, 1, 0),
                r#"{"t": 5000, "event": "utilization", "memory": 0.6, "vcores": 0.1, "gpus": 0.0}"#.into(),
                finish(20_000, "c"),
            ],
            vec![
                "--set",
                "yarn.resourcemanager.quota.variable.price.enabled=true",
                "--set",
                "yarn.resourcemanager.quota.multiplicator.interval=15000",
            ],
            24.0,
        ),
        // Variable pricing off: utilization changes nothing.
        (
            "variable pricing off",
            vec![
                r#"{"t": 0, "event": "utilization", "memory": 1.0, "vcores": 1.0, "gpus": 1.0}"#.into(),
                start(0, "c", "u", 1024, 1, 0),
                finish(10_000, "c"),
            ],
            vec![],
            10.0,
        ),
        // flat-pricing ignores utilization even with variable pricing on.
        (
            "flat pricing",
            vec![
                r#"{"t": 0, "event": "utilization", "memory": 1.0, "vcores": 1.0, "gpus": 1.0}"#.into(),
                start(0, "c", "u", 1024, 1, 0),
                finish(10_000, "c"),
            ],
            vec!["--pricing", "builtin:flat-pricing", "--set", "yarn.resourcemanager.quota.variable.price.enabled=true"],
            10.0,
        ),
        // Policy parameters override the settings: memory unit 512 MB.
        (
            "policy parameter",
            vec![start(0, "c", "u", 1024, 1, 0), finish(10_000, "c")],
            vec!["--param", "minimum.charged.mb=512"],
            20.0,
        ),
    ]
}

#[test]
fn replay_follows_hops_1385_to_the_credit() {
    for (case, lines, args, expected) in cases() {
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let mut all = args.clone();
        all.extend(["--initial-credits", "P=100"]);
        let (ok, report, stderr) = replay(&lines, &all);
        assert!(ok, "{case}: replay failed: {stderr}");
        assert_credits(&report["projects"]["P"]["total_used"], expected, case);
        assert_credits(
            &report["projects"]["P"]["remaining"],
            100.0 - expected,
            case,
        );
    }
}

#[test]
fn daily_usage_is_per_project_user_and_day() {
    let lines = [
        start(0, "c1", "rizvi", 1024, 1, 0),
        finish(30_000, "c1"),
        start(86_400_000, "c2", "sid", 2048, 1, 0),
        finish(86_420_000, "c2"),
    ];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let (ok, report, stderr) = replay(&lines, &[]);
    assert!(ok, "{stderr}");
    let daily = report["daily"].as_array().unwrap();
    assert_eq!(daily.len(), 2, "{report}");
    assert_eq!(
        (daily[0]["user"].as_str(), daily[0]["day"].as_str()),
        (Some("rizvi"), Some("1970-01-01"))
    );
    assert_credits(&daily[0]["credits"], 30.0, "rizvi's day");
    assert_eq!(
        (daily[1]["user"].as_str(), daily[1]["day"].as_str()),
        (Some("sid"), Some("1970-01-02"))
    );
    assert_credits(&daily[1]["credits"], 40.0, "sid's day");
    assert_credits(
        &report["projects"]["P"]["remaining"],
        -70.0,
        "no initial credits",
    );
    assert_eq!(
        report["multiplicators"],
        serde_json::json!({"general": 1.0, "gpu": 1.0})
    );
}

#[test]
fn bad_logs_are_refused_with_the_line_number_and_no_ledger() {
    let good = start(0, "c", "u", 1024, 1, 0);
    let cases: [(&[&str], &str); 5] = [
        (&[&good, "{not json"], "line 2"),
        (
            &[&good, r#"{"t": 5, "event": "explode", "container": "c"}"#],
            "line 2",
        ),
        (
            &[r#"{"t": 9, "event": "finish", "container": "x"}"#],
            "line 1",
        ),
        (
            &[
                &good,
                r#"{"t": 0, "event": "finish", "container": "c"}"#,
                r#"{"t": 0, "event": "update", "container": "c", "memory_mb": 1, "vcores": 1}"#,
            ],
            "line 3",
        ),
        (
            &[
                r#"{"t": 10, "event": "utilization", "memory": 0.1, "vcores": 0.1}"#,
                &good,
            ],
            "line 2",
        ),
    ];
    for (lines, expected) in cases {
        let (ok, _, stderr) = replay(lines, &[]);
        assert!(!ok, "{lines:?} was accepted");
        assert!(
            stderr.contains(expected),
            "{lines:?}: {stderr:?} does not name {expected}"
        );
    }
}

#[test]
fn replay_refuses_bad_options_in_one_sentence() {
    let good = start(0, "c", "u", 1024, 1, 0);
    let cases: [(&[&str], &str); 4] = [
        (&["--pricing", "builtin:nope"], "no bundled policy"),
        (&["--param", "discount=5"], "discount"),
        (&["--set", "yarn.resourcemanager.quota.bogus=1"], "bogus"),
        (&["--initial-credits", "P=lots"], "lots"),
    ];
    for (args, expected) in cases {
        let (ok, _, stderr) = replay(&[&good], args);
        assert!(!ok, "{args:?} was accepted");
        assert!(stderr.contains(expected), "{args:?}: {stderr:?}");
    }
}

/// A policy that adds what it reads of the clocks and of randomness to its
/// charges prints the same ledger in every replay of a log, and the time it
/// reads is the log's virtual time, not the day the replay runs.
#[test]
fn a_guest_reading_clocks_and_randomness_replays_to_the_same_ledger() {
    let lines = [start(0, "c", "u", 1024, 1, 0), finish(25_000, "c")];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let total = |read: &str| {
        let param = format!("read={read}");
        let args = [
            "--pricing",
            CLOCK_PRICING,
            "--param",
            &param,
            // QUOTA_COMPUTE hourly: the finish, at 25 s, is the only charge
            // made at a time other than 0.
            "--set",
            "yarn.resourcemanager.quota.scheduling.period=3600000",
        ];
        let (ok, report, stderr) = replay(&lines, &args);
        assert!(ok, "read={read}: {stderr}");
        report
    };

    let first = total("all");
    let second = total("all");
    assert_eq!(
        first, second,
        "two replays of one log printed different ledgers"
    );

    // 25 s of one unit, plus the 25 s the clock reads at the finish. On the
    // host's real clock the reading alone would be over 1.7 billion.
    for clock in ["wall", "monotonic"] {
        assert_credits(&total(clock)["projects"]["P"]["total_used"], 50.0, clock);
    }
    // Each random source adds a fraction of a credit to each charge, so the
    // ledgers above would differ if the host's randomness were not seeded.
    for source in ["random", "insecure", "hashed"] {
        let used = total(source)["projects"]["P"]["total_used"]
            .as_f64()
            .unwrap();
        assert!(used > 25.0 && used < 27.0, "read={source}: {used} credits");
    }
}

/// Epoch timestamps start 1.7e12 ms after replay's t = 0, and a log may be
/// dated up to the year 9999: the idle time before the first event, and
/// between events, is jumped over, with the ledger as stepping gives it.
#[test]
fn epoch_timestamped_and_far_future_logs_replay() {
    for t in [1_700_000_000_000u64, 253_402_000_000_000] {
        let lines = [
            start(t, "c", "u", 2048, 1, 0),
            finish(t + 25_000, "c"),
            start(t + 86_400_000, "d", "u", 1024, 1, 0),
            finish(t + 86_410_000, "d"),
        ];
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let (ok, report, stderr) = replay(&lines, &[]);
        assert!(ok, "t={t}: {stderr}");
        // 25 s of 2 memory units, then 10 s of 1.
        assert_credits(&report["projects"]["P"]["total_used"], 60.0, "credits");
        assert_eq!(report["daily"].as_array().unwrap().len(), 2, "{report}");
    }
}

#[test]
fn out_of_range_values_are_refused_naming_the_field_and_the_limit() {
    let cases: [(String, &str); 4] = [
        (
            start(253_402_300_800_000, "c", "u", 1024, 1, 0),
            "line 1: t is 253402300800000, but must be from 0 to 253402300799999",
        ),
        (
            start(u64::MAX, "c", "u", 1024, 1, 0),
            "line 1: t is 18446744073709551615",
        ),
        (
            start(0, "c", "u", u64::MAX, 1, 0),
            "line 1: memory_mb is 18446744073709551615, but must be from 0 to 1073741824",
        ),
        (
            start(0, "c", "u", 1024, 1, 4_000_000_000),
            "line 1: gpus is 4000000000, but must be from 0 to 1024",
        ),
    ];
    for (line, says) in cases {
        let (ok, _, stderr) = replay(&[&line], &[]);
        assert!(!ok, "{line} was accepted");
        assert!(stderr.contains(says), "{line}: {stderr:?}");
    }
}

/// While containers run QUOTA_COMPUTE fires every period, so a log that
/// keeps one running for years at a 1 s period is refused up front, saying
/// how many firings it needs and what to change.
#[test]
fn a_log_needing_too_many_timer_firings_is_refused_up_front() {
    let lines = [start(0, "c", "u", 1024, 1, 0), finish(10_000_000_000, "c")];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let (ok, _, stderr) = replay(
        &lines,
        &[
            "--set",
            "yarn.resourcemanager.quota.scheduling.period=1000",
            "--set",
            "yarn.resourcemanager.quota.multiplicator.interval=1000",
        ],
    );
    assert!(!ok, "accepted");
    for says in [
        "20000000 timer firings",
        "at most 10000000",
        "yarn.resourcemanager.quota.scheduling.period",
    ] {
        assert!(stderr.contains(says), "{stderr:?} does not say {says}");
    }
}
