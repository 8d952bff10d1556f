//! `weft replay` follows HOPS-1385 to the credit: each case is a log whose
//! charges are worked out by hand from the seed's formulas. A server's own
//! event log (`weft.quota.event-log`) replays to its ledger, and
//! `--baseline` compares two policies on one log.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use serde_json::Value;

use crate::support::{CLOCK_PRICING, Server, assert_credits, weft_within};

/// Writes `lines` to a temporary log and replays it with `args`. Every
/// case here finishes in a second or two; the limit only stops a replay
/// that has started stepping through idle time again from hanging the suite.
fn replay(lines: &[&str], args: &[&str]) -> (bool, Value, String) {
    let output = replay_output(lines, args);
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

/// Writes `lines` to a temporary log and runs `weft replay LOG ARGS…`.
fn replay_output(lines: &[&str], args: &[&str]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    std::fs::write(&path, lines.join("\n")).unwrap();
    replay_file(&path, args)
}

/// `weft replay PATH ARGS…`.
fn replay_file(path: &Path, args: &[&str]) -> Output {
    let mut all = vec!["replay", path.to_str().unwrap()];
    all.extend_from_slice(args);
    weft_within(&all, Duration::from_secs(300))
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
    let step = |partitions: &str, queues: &str| {
        format!(
            r#"{{"t": 0, "event": "multiplicator-step", "memory": 0.5, "vcores": 0.5, "partitions": {partitions}, "queues": {queues}}}"#
        )
    };
    let load = r#"{"memory_mb": 1, "vcores": 1, "gpus": 0}"#;
    let huge = r#"{"memory_mb": 18446744073709551615, "vcores": 1, "gpus": 0}"#;
    let cases: [(String, &str); 9] = [
        (
            step(
                &format!(
                    r#"[{{"name": "", "capacity": {load}, "used": {load}, "pending": {load}}}, {{"name": "", "capacity": {load}, "used": {load}, "pending": {load}}}]"#
                ),
                "[]",
            ),
            "partitions[1].name",
        ),
        (
            step(
                &format!(
                    r#"[{{"name": "", "capacity": {huge}, "used": {load}, "pending": {load}}}]"#
                ),
                "[]",
            ),
            "partitions[0]: capacity.memory_mb is 18446744073709551615",
        ),
        (
            step(
                "[]",
                &format!(
                    r#"[{{"path": "root.\u0007", "guaranteed": {load}, "used": {load}, "pending": {load}}}]"#
                ),
            ),
            "queues[0].path",
        ),
        (
            format!(
                r#"{{"t": 0, "event": "start", "container": "c", "app": "a", "project": "p", "user": "u", "memory_mb": 1, "vcores": 1, "queue": "root.{}"}}"#,
                "q".repeat(2000)
            ),
            "queue",
        ),
        (
            format!(
                r#"{{"t": 0, "event": "start", "container": "c", "app": "a", "project": "p", "user": "u", "memory_mb": 1, "vcores": 1, "application_tags": [{}]}}"#,
                [r#""t""#; 11].join(",")
            ),
            "application_tags",
        ),
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

/// The settings both the server and its replays run with: quick timers,
/// variable pricing that moves (the sim nodes are half used), a short
/// minimum runtime.
const QUOTA_SETTINGS: &[&str] = &[
    "--set",
    "yarn.resourcemanager.quota.scheduling.period=200",
    "--set",
    "yarn.resourcemanager.quota.multiplicator.interval=300",
    "--set",
    "yarn.resourcemanager.quota.variable.price.enabled=true",
    "--set",
    "yarn.resourcemanager.quota.multiplicator.increment.general=4",
    "--set",
    "yarn.resourcemanager.quota.min.runtime=500",
    "--set",
    "weft.policy.pricing=builtin:hops-pricing",
];

/// Counts the log's lines of `event`.
fn count_events(lines: &[Value], event: &str) -> usize {
    lines.iter().filter(|l| l["event"] == event).count()
}

/// A server records its quota events across a clean restart; replaying
/// the log with the server's pricing policy and settings charges each
/// project what the server's ledger says. The restart adds a recovery with
/// the container still running, and no second start for it.
#[test]
fn a_servers_event_log_replays_to_its_ledger_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = dir.path().join("quota-events.jsonl");
    let log_setting = format!("weft.quota.event-log={}", log.display());
    let mut serve_args: Vec<&str> = QUOTA_SETTINGS.to_vec();
    serve_args.extend([
        "--set",
        &log_setting,
        "--set",
        "weft.scheduler.interval-ms=50",
        "--set",
        "yarn.resourcemanager.work-preserving-recovery.scheduling-wait-ms=0",
        "--sim-nodes",
        "2x4096mb,4vcores",
    ]);

    let server = Server::start_in(&data, &serve_args);
    let wait_finished = |server: &Server, id: &str| {
        server.wait_for(
            &format!("/ws/v1/cluster/apps/{id}"),
            "the app to finish",
            |body| body["app"]["state"] == "FINISHED",
        );
    };
    let short = server.submit("p1", 2, 700);
    let long = server.submit("p2", 1, 4_000);
    wait_finished(&server, &short);
    server.stop();

    // p2's container runs on across the restart.
    let server = Server::start_in(&data, &serve_args);
    let after = server.submit("p3", 3, 600);
    wait_finished(&server, &after);
    wait_finished(&server, &long);
    // What the last containers owe is charged at the next flush: the
    // ledger is read once two reads two quota periods apart agree (on a
    // busy machine the first read may come before that flush).
    let mut ledger = server.get("/ws/v1/quota/projects").1;
    for _ in 0..50 {
        std::thread::sleep(std::time::Duration::from_millis(400));
        let (status, again) = server.get("/ws/v1/quota/projects");
        assert_eq!(status, 200, "{again}");
        if again == ledger {
            break;
        }
        ledger = again;
    }
    server.stop();

    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(count_events(&lines, "recovery"), 2, "one a start:\n{text}");
    assert_eq!(count_events(&lines, "start"), 6, "no start twice:\n{text}");
    assert_eq!(count_events(&lines, "finish"), 6, "{text}");
    assert!(
        count_events(&lines, "running") >= 1,
        "p2's container:\n{text}"
    );
    assert!(count_events(&lines, "compute") >= 2, "{text}");
    assert!(count_events(&lines, "multiplicator-step") >= 2, "{text}");

    let mut replay_args: Vec<&str> = QUOTA_SETTINGS.to_vec();
    replay_args.extend(["--pricing", "builtin:hops-pricing"]);
    let output = replay_file(&log, &replay_args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    for project in ["p1", "p2", "p3"] {
        let charged = ledger[project]["total_used"].as_f64().unwrap();
        assert!(charged > 0.0, "{project}: {ledger}");
        assert_credits(&report["projects"][project]["total_used"], charged, project);
        assert_credits(
            &report["projects"][project]["remaining"],
            ledger[project]["remaining"].as_f64().unwrap(),
            project,
        );
    }
    // The price moved with the load (above the 0.2 threshold), so the
    // replay had to follow the server's multiplicator steps.
    assert!(
        lines
            .iter()
            .any(|l| l["event"] == "multiplicator-step" && l["memory"].as_f64().unwrap() > 0.2),
        "{text}"
    );
}

/// One event-loop turn that runs a scheduling round (which ends a
/// container, so its last stretch is owed) and then the multiplicator
/// step, a millisecond later, as a slow round on a busy machine dates it.
/// The server prices what is owed before it steps, and replay prices each
/// line's usage before the next step: the ledgers agree. (Before, the
/// server charged the finish at the new multiplicators and replay at the
/// old: "p3: 3.6825 credits, expected 2.9121" in the test above.)
#[test]
fn a_round_and_a_step_in_one_turn_replay_to_the_servers_ledger() {
    use std::sync::Arc;
    use weft_host::clock::{Clock, VirtualClock};
    use weft_host::policy::{PolicyKind, PolicyRuntime, PolicySource};
    use weft_host::resources::Resources;
    use weft_host::rm::assemble::{Parts, QuotaEventLog, assemble};
    use weft_host::rm::timers::Timer;
    use weft_host::security::Security;
    use weft_host::store::Store;

    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("quota-events.jsonl");
    let mut overrides: Vec<String> = QUOTA_SETTINGS
        .iter()
        .filter(|arg| **arg != "--set")
        .map(ToString::to_string)
        .collect();
    overrides.push(format!("weft.quota.event-log={}", log.display()));
    let mut settings = weft_host::config::Settings::load(None, &overrides).unwrap();
    settings.policies.compile_cache_dir = Some(crate::support::compile_cache_dir());
    let start = 1_700_000_000_000;
    let clock = VirtualClock::starting_at(start);
    let shared: Arc<dyn Clock> = Arc::new(clock.clone());
    let policies = Arc::new(PolicyRuntime::from_settings(&settings, shared.clone()).unwrap());
    for (kind, name) in [
        (PolicyKind::Scheduling, "capacity"),
        (PolicyKind::Pricing, "hops-pricing"),
    ] {
        policies
            .load(kind, &PolicySource::Builtin(name.into()), &[])
            .unwrap();
    }
    let security = Arc::new(Security::default());
    let mut rm = assemble(Parts {
        settings: &settings,
        queues: weft_host::queues::load(None, &settings.queue_properties).unwrap(),
        store: Store::in_memory(),
        clock: shared,
        policies,
        security: security.clone(),
        sim_nodes: Some((1, Resources::new(4096, 4, 0))),
        event_log: QuotaEventLog::FromSettings { opened: &mut None },
        recover: None,
    })
    .unwrap();
    let submission = serde_json::from_value(serde_json::json!({
        "name": "one", "queue": "default", "user": "alice", "project": "p", "priority": 0,
        "asks": [{"count": 1, "memory_mb": 2048, "vcores": 1, "gpus": 0, "duration_ms": 10_000}]
    }))
    .unwrap();
    rm.submit_app(&security.caller("alice"), submission, "127.0.0.1")
        .unwrap();
    let mut turn = |at: u64, timers: &[(u64, Timer)]| {
        clock.advance_to(start + at);
        for (late, timer) in timers {
            clock.advance_to(start + at + late);
            rm.fire(*timer);
        }
        rm.flush_quota();
        rm.commit().unwrap();
    };
    // Half the memory in use: the step raises the price.
    turn(0, &[(0, Timer::SchedulingRound)]);
    turn(1_000, &[(0, Timer::MultiplicatorStep)]);
    turn(5_000, &[(0, Timer::QuotaCompute)]);
    // The container ended at 10 s; the round that sees it, then the step
    // (the cluster now idle: the price falls back).
    turn(
        10_500,
        &[(0, Timer::SchedulingRound), (1, Timer::MultiplicatorStep)],
    );
    let ledger = rm.quota().ledger().projects()["p"].total_used;
    rm.shutdown();
    rm.commit().unwrap();
    drop(rm);

    let text = std::fs::read_to_string(&log).unwrap();
    let steps: Vec<f64> = text
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|line| line["event"] == "multiplicator-step")
        .map(|line| line["memory"].as_f64().unwrap())
        .collect();
    assert_eq!(steps, [0.5, 0.0], "{text}");
    let mut replay_args: Vec<&str> = QUOTA_SETTINGS.to_vec();
    replay_args.extend(["--pricing", "builtin:hops-pricing"]);
    let output = replay_file(&log, &replay_args);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_credits(&report["projects"]["p"]["total_used"], ledger, "p");
}

/// A day of two projects over midnight, charged under `builtin:flat-pricing`
/// with a GPU base price of 2 (A) and `builtin:hops-pricing` at 3 credits a
/// general unit (B).
fn two_day_log() -> Vec<String> {
    let day = 86_400_000;
    let start_as = |t: u64, c: &str, project: &str, user: &str, mb: u64, gpus: u32| {
        format!(
            r#"{{"t": {t}, "event": "start", "container": "{c}", "app": "a-{c}", "project": "{project}", "user": "{user}", "memory_mb": {mb}, "vcores": 1, "gpus": {gpus}}}"#
        )
    };
    vec![
        start_as(day - 20_000, "c1", "P", "rizvi", 2048, 0),
        start_as(day - 10_000, "c2", "Q", "sid", 1024, 1),
        finish(day + 30_000, "c1"),
        finish(day + 40_000, "c2"),
        start_as(2 * day, "c3", "P", "sid", 4096, 0),
        finish(2 * day + 15_000, "c3"),
    ]
}

const A: &[&str] = &[
    "--baseline",
    "builtin:flat-pricing",
    "--baseline-param",
    "price.base.gpu=2",
];
const B: &[&str] = &[
    "--pricing",
    "builtin:hops-pricing",
    "--param",
    "price.base.general=3",
];

/// A's or B's ledger alone, per (project, user, day).
fn daily_credits(lines: &[&str], args: &[&str]) -> Vec<(String, String, String, f64)> {
    let (ok, report, stderr) = replay(lines, args);
    assert!(ok, "{stderr}");
    report["daily"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                row["project"].as_str().unwrap().to_string(),
                row["user"].as_str().unwrap().to_string(),
                row["day"].as_str().unwrap().to_string(),
                row["credits"].as_f64().unwrap(),
            )
        })
        .collect()
}

fn close(actual: f64, expected: f64, what: &str) {
    // The table prints six decimals.
    assert!(
        (actual - expected).abs() < 2e-6,
        "{what}: {actual}, expected {expected}"
    );
}

#[test]
fn baseline_compares_two_policies_per_project_user_and_day() {
    let lines = two_day_log();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let alone_a = daily_credits(&lines, &["--pricing", A[1], "--param", A[3]]);
    let alone_b = daily_credits(&lines, B);
    assert_eq!(alone_a.len(), 4, "{alone_a:?}");

    let args: Vec<&str> = A.iter().chain(B).copied().collect();
    let output = replay_output(&lines, &args);
    let table = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let rows: Vec<Vec<&str>> = table
        .lines()
        .skip(3)
        .map(|line| line.split_whitespace().collect())
        .collect();
    let number = |cell: &str| cell.parse::<f64>().unwrap();
    let mut checked = 0;
    for row in &rows {
        let (a, b, difference) = match row.as_slice() {
            [_, _, _, a, b, d] | ["TOTAL", a, b, d] => (number(a), number(b), number(d)),
            _ => panic!("not a row: {row:?}\n{table}"),
        };
        close(difference, b - a, &format!("{row:?}"));
        if let [project, user, day, _, _, _] = row.as_slice()
            && *user != "*"
        {
            let find = |alone: &[(String, String, String, f64)]| {
                alone
                    .iter()
                    .find(|(p, u, d, _)| {
                        (p, u, d) == (&project.to_string(), &user.to_string(), &day.to_string())
                    })
                    .map_or(0.0, |(.., credits)| *credits)
            };
            close(a, find(&alone_a), "A's column is A's ledger");
            close(b, find(&alone_b), "B's column is B's ledger");
            checked += 1;
        }
    }
    assert_eq!(checked, 4, "{table}");
    let total = rows.last().unwrap();
    assert_eq!(total[0], "TOTAL", "{table}");
    close(
        number(total[1]),
        alone_a.iter().map(|r| r.3).sum(),
        "A's total",
    );
    close(
        number(total[2]),
        alone_b.iter().map(|r| r.3).sum(),
        "B's total",
    );
    assert!(number(total[3]) > 0.0, "B charges more: {table}");

    // --json: the same comparison.
    let mut json_args = args.clone();
    json_args.push("--json");
    let (ok, json, stderr) = replay(&lines, &json_args);
    assert!(ok, "{stderr}");
    assert_eq!(json["baseline_policy"], "builtin:flat-pricing");
    assert_eq!(json["pricing_policy"], "builtin:hops-pricing");
    let daily = json["daily"].as_array().unwrap();
    assert_eq!(daily.len(), 4, "{json}");
    for row in daily {
        let (a, b) = (
            row["baseline"].as_f64().unwrap(),
            row["pricing"].as_f64().unwrap(),
        );
        assert_eq!(row["difference"].as_f64().unwrap(), b - a, "{row}");
    }
    close(
        json["total"]["difference"].as_f64().unwrap(),
        number(total[3]),
        "the JSON's total is the table's",
    );
}

#[test]
fn baseline_refuses_bad_inputs_naming_the_file_or_line() {
    let args: Vec<&str> = A.iter().chain(B).copied().collect();
    let missing = replay_file(Path::new("/nonexistent/weft-events.jsonl"), &args);
    assert!(!missing.status.success());
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(
        stderr.contains("cannot read the event log /nonexistent/weft-events.jsonl"),
        "{stderr}"
    );

    let good = start(0, "c", "u", 1024, 1, 0);
    let bad = replay_output(&[&good, "{\"t\": 5, \"event\": \"finish\""], &args);
    assert!(!bad.status.success());
    assert!(bad.stdout.is_empty(), "a failed replay printed a table");
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("line 2: not a valid event"), "{stderr}");

    for alone in [
        &["--json"][..],
        &["--baseline-param", "price.base.gpu=2"][..],
    ] {
        let output = replay_output(&[&good], alone);
        assert!(!output.status.success(), "{alone:?} without --baseline");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("--baseline"), "{alone:?}: {stderr}");
    }
}
