//! `weft simulate` through the real binary: a scenario on the virtual clock
//! is scheduled, charged and summarized; a bad scenario is refused.

use std::time::Duration;

use crate::support::{assert_credits, weft, weft_within};

#[test]
fn a_scenario_runs_on_virtual_time_and_is_summarized() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("scenario.toml");
    std::fs::write(
        &scenario,
        r#"
observe_at_ms = [5000]
[[nodes]]
count = 2
memory_mb = 4096
vcores = 4
[[apps]]
submit_ms = 0
user = "a"
project = "p"
asks = [{ count = 10, memory_mb = 1024, vcores = 1, duration_ms = 20000 }]
"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    let output = weft(&[
        "simulate",
        scenario.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(
        (
            summary["apps_submitted"].as_u64(),
            summary["apps_finished"].as_u64()
        ),
        (Some(1), Some(1))
    );
    // 8 containers fit at once (2 × 4 GB); the last 2 wait for the first round to end.
    let seen = &summary["observations"][0];
    assert_eq!(seen["queues"][1]["used"]["memory_mb"], 8192, "{seen}");
    assert_eq!(seen["pending_apps"][0]["pending_containers"], 2, "{seen}");
    // 10 containers × 20 s × 1 credit per unit-second.
    assert_credits(&summary["credits"]["p"], 200.0, "credits");
    assert_eq!(summary["policies"]["scheduling"]["policy"], "capacity");
    assert!(summary["policies"]["scheduling"]["calls"].as_u64().unwrap() >= 2);
    assert!(summary["policies"]["pricing"]["p99_ns"].as_u64().unwrap() > 0);
    assert!(!summary["utilization"].as_array().unwrap().is_empty());
}

#[test]
fn a_bad_scenario_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "[[nodes]]\ncount = 1\nmemory_mb = 1024\nvcores = 1\n",
            "apps",
        ),
        ("apps = []\nnodes = []\ncolour = 1\n", "colour"),
        (
            "[[nodes]]\ncount = 1\nmemory_mb = 1024\nvcores = 1\n[[apps]]\nsubmit_ms = 0\nuser = \"u\"\nqueue = \"nope\"\nasks = [{ count = 1, memory_mb = 1, vcores = 1, duration_ms = 1 }]\n",
            "unknown queue",
        ),
    ];
    for (text, says) in cases {
        let path = dir.path().join("bad.toml");
        std::fs::write(&path, text).unwrap();
        let output = weft(&["simulate", path.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{text} was accepted");
        assert!(stderr.contains(says), "{text}: {stderr}");
    }
}

/// Runs `weft simulate` on a scenario's text, killing it (and failing) if
/// it has not finished after a generous limit: these runs must end,
/// whatever their answer. (exit status, stdout, stderr)
fn simulate_within(scenario: &str) -> (bool, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scenario.toml");
    std::fs::write(&path, scenario).unwrap();
    let output = weft_within(
        &["simulate", path.to_str().unwrap()],
        Duration::from_secs(300),
    );
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).to_string(),
        String::from_utf8_lossy(&output.stderr).to_string(),
    )
}

/// Two nodes of 4 GB and 4 vcores.
const TWO_NODES: &str = "[[nodes]]\ncount = 2\nmemory_mb = 4096\nvcores = 4\n";

fn app(submit_ms: u64, ask: &str) -> String {
    format!("[[apps]]\nsubmit_ms = {submit_ms}\nname = \"job\"\nuser = \"u\"\nasks = [{ask}]\n")
}

const ONE_GB: &str = "{ count = 1, memory_mb = 1024, vcores = 1, duration_ms = 1000 }";

/// Scenarios that could never finish, or whose values pass the documented
/// maxima, are refused before anything runs, naming the app, the field and
/// the limit.
#[test]
fn scenarios_that_cannot_finish_or_break_the_limits_are_refused_up_front() {
    let cases = [
        (
            format!("nodes = []\n{}", app(0, ONE_GB)),
            "the scenario has no nodes, but app 1 (\"job\") (and every other app) asks for containers",
        ),
        (
            format!(
                "{TWO_NODES}{}",
                app(
                    0,
                    &format!(
                        "{ONE_GB}, {{ count = 1, memory_mb = 8192, vcores = 1, duration_ms = 1000 }}"
                    )
                )
            ),
            "app 1 (\"job\"): asks[1] (8192 MB, 1 vcores, 0 GPUs) is larger than every node (the nodes offer at most 4096 MB, 4 vcores, 0 GPUs)",
        ),
        (
            format!(
                "{TWO_NODES}{}",
                app(
                    0,
                    "{ count = 1, memory_mb = 1024, vcores = 1, duration_ms = 18446744073709551615 }"
                )
            ),
            "app 1 (\"job\"): asks[0].duration_ms is 18446744073709551615, but must be from 1 to 2592000000",
        ),
        (
            format!("{TWO_NODES}{}", app(253_402_300_800_000, ONE_GB)),
            "app 1 (\"job\"): submit_ms is 253402300800000, but must be from 0 to 253402300799999",
        ),
        (
            format!(
                "observe_at_ms = [18446744073709551615]\n{TWO_NODES}{}",
                app(0, ONE_GB)
            ),
            "observe_at_ms[0] is 18446744073709551615, but must be from 0 to 253402300799999",
        ),
        (
            format!(
                "[[nodes]]\ncount = 100001\nmemory_mb = 1024\nvcores = 1\n{}",
                app(0, ONE_GB)
            ),
            "nodes[0].count is 100001, but must be from 0 to 100000",
        ),
        (
            // A million container-days on one vcore, at the end of time.
            format!(
                "{TWO_NODES}{}",
                app(
                    253_402_300_799_999,
                    "{ count = 100000, memory_mb = 1, vcores = 1, duration_ms = 2592000000 }"
                )
            ),
            "they cannot finish before the year 9999",
        ),
        (
            // A year of work a second at a 1 ms QUOTA_COMPUTE.
            format!(
                "[settings]\n\"yarn.resourcemanager.quota.scheduling.period\" = \"1\"\n{TWO_NODES}{}",
                app(
                    0,
                    "{ count = 100000, memory_mb = 1, vcores = 1, duration_ms = 2592000000 }"
                )
            ),
            "a run visits at most 10000000 instants",
        ),
    ];
    for (scenario, says) in cases {
        let (ok, _, stderr) = simulate_within(&scenario);
        assert!(!ok, "{scenario} was accepted");
        assert!(stderr.contains(says), "{scenario}: {stderr}");
    }
}

/// The virtual clock jumps over idle time: an app submitted near the end
/// of the year 9999 runs at once, and the summary is what stepping gives.
#[test]
fn a_far_future_submission_runs_without_stepping_to_it() {
    let (ok, stdout, stderr) = simulate_within(&format!(
        "observe_at_ms = [253402000000500]\n{TWO_NODES}{}{}",
        app(0, ONE_GB),
        app(
            253_402_000_000_000,
            "{ count = 2, memory_mb = 1024, vcores = 1, duration_ms = 10000 }"
        ),
    ));
    assert!(ok, "{stderr}");
    let summary: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(summary["apps_finished"], 2, "{summary}");
    // Submitted at a round's time, placed by it, both containers end 10 s later.
    assert_eq!(summary["end_ms"], 253_402_000_010_000u64, "{summary}");
    assert_eq!(
        summary["observations"][0]["queues"][0]["used"]["memory_mb"], 2048,
        "{summary}"
    );
    // 1 s, then 2 × 10 s, of one unit (the 10 s minimum runtime applies to the first).
    assert_credits(&summary["credits"]["default"], 30.0, "credits");
}

/// An app that no round places, with nothing running and nothing left to
/// submit, would keep a run going for ever: it stops with an error naming
/// the app and the scheduler's reason.
#[test]
fn a_stuck_run_stops_with_an_error_naming_the_app() {
    let (ok, _, stderr) = simulate_within(&format!(
        r#"{TWO_NODES}
[queues.properties]
"yarn.scheduler.capacity.root.queues" = "a,b"
"yarn.scheduler.capacity.root.a.capacity" = "90"
"yarn.scheduler.capacity.root.b.capacity" = "10"
"yarn.scheduler.capacity.root.b.maximum-capacity" = "10"
[[apps]]
submit_ms = 0
user = "u"
queue = "a"
asks = [{ONE_GB}]
[[apps]]
submit_ms = 5000
name = "too-big-for-b"
user = "u"
queue = "b"
asks = [{{ count = 1, memory_mb = 2048, vcores = 1, duration_ms = 1000 }}]
"#
    ));
    assert!(!ok, "a stuck run succeeded");
    for says in [
        "the run cannot finish",
        r#"application_0_0002 ("too-big-for-b", queue b, 1 containers pending): "#,
        "root.b",
        "give end_ms",
    ] {
        assert!(stderr.contains(says), "{stderr} does not say {says}");
    }
}

#[test]
fn the_hadoop_sls_inputs_simulate() {
    let sls = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/data/sls");
    let (trace, nodes, queues) = (
        format!("{sls}/inputsls.json"),
        format!("{sls}/nodes.json"),
        format!("{sls}/capacity-scheduler.xml"),
    );
    let output = weft(&[
        "simulate",
        "--sls-trace",
        &trace,
        "--sls-nodes",
        &nodes,
        "--queues",
        &queues,
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        (
            summary["apps_submitted"].as_u64(),
            summary["apps_finished"].as_u64()
        ),
        (Some(2), Some(2))
    );
    assert!(
        summary["wait_time_ms"]["sls_queue_1"]["apps"] == 1,
        "{summary}"
    );
    let output = weft(&["simulate", "--sls-trace", &nodes]);
    assert!(!output.status.success(), "a node list is not a trace");
}

/// 100 GB; dedicated (50 %) is reservable. Bob floods it with short
/// containers from the start; Alice's reservation "etl" (20 × 1 GB for
/// 120 s, by 600 s) is placed as late as it can be, [480 s, 600 s), and her
/// app in it waits until then, then runs ahead of Bob's. "late" asks for more
/// time than its reservation has and meets the reservation's end; "greedy"
/// asks for more than the queue has and is refused.
fn reservation_scenario(move_on_expiry: bool) -> serde_json::Value {
    simulate(&format!(
        r#"
observe_at_ms = [470000, 500000]
{PLAN_CLUSTER}"yarn.scheduler.capacity.root.dedicated.reservation-move-on-expiry" = "{move_on_expiry}"
[[reservations]]
name = "etl"
submit_ms = 0
user = "alice"
queue = "dedicated"
arrival_ms = 0
deadline_ms = 600000
requests = [{{ count = 20, memory_mb = 1024, vcores = 1, duration_ms = 120000 }}]
[[reservations]]
name = "greedy"
submit_ms = 0
user = "alice"
queue = "dedicated"
arrival_ms = 0
deadline_ms = 600000
requests = [{{ count = 60, memory_mb = 1024, vcores = 1, duration_ms = 60000 }}]
[[apps]]
submit_ms = 0
user = "bob"
queue = "dedicated"
asks = [{{ count = 6000, memory_mb = 1024, vcores = 1, duration_ms = 10000 }}]
[[apps]]
submit_ms = 1000
user = "alice"
queue = "dedicated"
reservation = "etl"
asks = [{{ count = 10, memory_mb = 1024, vcores = 1, duration_ms = 100000 }}]
[[apps]]
submit_ms = 1000
name = "late"
user = "alice"
queue = "dedicated"
reservation = "etl"
asks = [{{ count = 10, memory_mb = 1024, vcores = 1, duration_ms = 300000 }}]
"#
    ))
}

/// The reservation scenarios' cluster: 10 nodes of 10 GB; root.default and
/// root.dedicated at 50 % each, dedicated reservable. More queue properties
/// may follow it directly.
const PLAN_CLUSTER: &str = r#"
[[nodes]]
count = 10
memory_mb = 10240
vcores = 10
[queues.properties]
"yarn.scheduler.capacity.root.queues" = "default,dedicated"
"yarn.scheduler.capacity.root.default.capacity" = "50"
"yarn.scheduler.capacity.root.dedicated.capacity" = "50"
"yarn.scheduler.capacity.root.dedicated.reservable" = "true"
"#;

/// Runs `weft simulate` on a scenario's text; its summary.
fn simulate(scenario: &str) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scenario.toml");
    std::fs::write(&path, scenario).unwrap();
    let output = weft(&["simulate", path.to_str().unwrap()]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

fn alice_in_dedicated(observation: &serde_json::Value) -> u64 {
    observation["users"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["user"] == "alice" && u["queue"] == "root.dedicated")
        .map(|u| u["used"]["memory_mb"].as_u64().unwrap())
        .sum()
}

#[test]
fn reserved_apps_wait_for_their_reservation_then_run_ahead() {
    let summary = reservation_scenario(true);
    let reservations = summary["reservations"].as_array().unwrap();
    let etl = &reservations[0];
    assert_eq!(etl["admitted"], true, "{etl}");
    assert_eq!(
        etl["placed_ms"],
        serde_json::json!([480000, 600000]),
        "{etl}"
    );
    let greedy = &reservations[1];
    assert_eq!(greedy["admitted"], false, "{greedy}");
    assert!(
        greedy["reason"].as_str().unwrap().contains("51200 MB"),
        "{greedy}"
    );

    // Before the reservation starts Alice has nothing; once it has, she holds
    // all 20 GB of it while Bob still has thousands pending.
    let [before, during] = [&summary["observations"][0], &summary["observations"][1]];
    assert_eq!(alice_in_dedicated(before), 0, "{before}");
    let waiting = before["pending_apps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["user"] == "alice")
        .expect("alice's apps are pending");
    assert!(
        waiting["reason"]
            .as_str()
            .unwrap()
            .contains("which starts at 480000 ms"),
        "{waiting}"
    );
    assert_eq!(alice_in_dedicated(during), 20 * 1024, "{during}");
    // Both apps; the short one met the deadline, "late" went on in the queue after it.
    assert_eq!(etl["apps"], 2);
    assert_eq!(etl["apps_met_deadline"], 1, "{etl}");
    assert_eq!(
        etl["apps_finished"], 2,
        "moved on expiry, so it finished: {etl}"
    );
}

#[test]
fn without_move_on_expiry_a_reservations_apps_are_killed_when_it_ends() {
    let summary = reservation_scenario(false);
    let etl = &summary["reservations"][0];
    assert_eq!(etl["apps"], 2);
    assert_eq!(etl["apps_met_deadline"], 1, "{etl}");
    assert_eq!(etl["apps_finished"], 1, "\"late\" was killed: {etl}");
}

/// A reservation nobody runs in holds nothing back, and the queue's other
/// apps still grow to the queue's maximum around one that is used.
#[test]
fn reservations_leave_idle_capacity_to_the_queue() {
    let summary = simulate(&format!(
        "{}{}{}",
        r#"
observe_at_ms = [30000, 400000]
end_ms = 400000
"#,
        PLAN_CLUSTER,
        r#""yarn.scheduler.capacity.root.dedicated.user-limit-factor" = "2"
[[reservations]]
name = "idle"
submit_ms = 0
user = "alice"
queue = "dedicated"
arrival_ms = 0
deadline_ms = 600000
requests = [{ count = 40, memory_mb = 1024, vcores = 1, duration_ms = 600000 }]
[[reservations]]
name = "used"
submit_ms = 0
user = "carol"
queue = "dedicated"
arrival_ms = 0
deadline_ms = 600000
requests = [{ count = 10, memory_mb = 1024, vcores = 1, duration_ms = 600000 }]
[[apps]]
submit_ms = 0
user = "bob"
queue = "dedicated"
asks = [{ count = 1000, memory_mb = 1024, vcores = 1, duration_ms = 1000000 }]
[[apps]]
submit_ms = 200000
user = "carol"
queue = "dedicated"
reservation = "used"
asks = [{ count = 10, memory_mb = 1024, vcores = 1, duration_ms = 100000 }]
"#
    ));
    let held = |observation: &serde_json::Value, user: &str| -> u64 {
        observation["users"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|u| u["user"] == user)
            .map(|u| u["used"]["memory_mb"].as_u64().unwrap())
            .sum()
    };
    let reservations = summary["reservations"].as_array().unwrap();
    assert!(
        reservations.iter().all(|r| r["admitted"] == true),
        "{reservations:?}"
    );
    // Bob takes the whole idle cluster: the queue's maximum (100 %), his
    // user limit twice its guarantee; "idle" holds nothing back.
    let early = &summary["observations"][0];
    assert_eq!(held(early, "bob"), 100 * 1024, "{early}");
    // Carol's reservation, once it has an app, is hers as Bob's containers
    // end (they run long; nothing is preempted, so she gets none yet) —
    // and Bob keeps the rest.
    let late = &summary["observations"][1];
    assert_eq!(
        held(late, "bob") + held(late, "carol"),
        100 * 1024,
        "{late}"
    );
}

/// With reclaim on, a reservation whose apps hold less than it takes its
/// capacity back from the queue's other apps, and its app meets the deadline.
#[test]
fn reclaim_gives_a_reservation_its_capacity() {
    let summary = simulate(&format!(
        "{}{}{}",
        r#"
observe_at_ms = [299000, 330000]
[settings]
"yarn.resourcemanager.scheduler.monitor.enable" = "true"
"weft.reclaim.starvation-ms" = "5000"
"yarn.resourcemanager.monitor.capacity.preemption.max_wait_before_kill" = "0"
"#,
        PLAN_CLUSTER,
        r#""yarn.scheduler.capacity.root.dedicated.user-limit-factor" = "2"
[[reservations]]
name = "etl"
submit_ms = 0
user = "alice"
queue = "dedicated"
arrival_ms = 0
deadline_ms = 600000
requests = [{ count = 20, memory_mb = 1024, vcores = 1, duration_ms = 300000 }]
[[apps]]
submit_ms = 0
user = "bob"
queue = "dedicated"
asks = [{ count = 100, memory_mb = 1024, vcores = 1, duration_ms = 1000000 }]
[[apps]]
submit_ms = 1000
user = "alice"
queue = "dedicated"
reservation = "etl"
asks = [{ count = 20, memory_mb = 1024, vcores = 1, duration_ms = 200000 }]
"#
    ));
    let etl = &summary["reservations"][0];
    assert_eq!(
        etl["placed_ms"],
        serde_json::json!([300000, 600000]),
        "{etl}"
    );
    let [before, during] = [&summary["observations"][0], &summary["observations"][1]];
    assert_eq!(alice_in_dedicated(before), 0, "{before}");
    assert_eq!(alice_in_dedicated(during), 20 * 1024, "{during}");
    assert_eq!(etl["apps_met_deadline"], 1, "{etl}");
}

/// The vcores `queue` holds in a summary's `observation` (0 if none).
fn vcores(observation: &serde_json::Value, queue: &str) -> u64 {
    observation["queues"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["queue"] == queue)
        .map_or(0, |q| q["used"]["vcores"].as_u64().unwrap())
}

#[test]
fn reclaim_serves_what_the_user_limit_admits() {
    // Each scenario: c below its guarantee, the policy would place carol's
    // last ask with room; reclaim makes the room. Before, the host barred
    // it: in `shares`, by adding her share and the ask's (30 % + 30 %)
    // where the policy takes the share of the sum (40 % of a 50 % limit);
    // in `partitions`, by dividing c's limit with dave, who waits only for
    // partition x and is no user of the default partition's round.
    let shares = r#"
[[nodes]]
count = 1
memory_mb = 10240
vcores = 10
[queues.properties]
"yarn.scheduler.capacity.root.queues" = "a,c"
"yarn.scheduler.capacity.root.a.capacity" = "50"
"yarn.scheduler.capacity.root.a.user-limit-factor" = "2"
"yarn.scheduler.capacity.root.c.capacity" = "50"
[[apps]]
submit_ms = 0
user = "carol"
queue = "c"
asks = [{ count = 1, memory_mb = 3072, vcores = 1, duration_ms = 200000 }]
[[apps]]
submit_ms = 1000
user = "alice"
queue = "a"
asks = [{ count = 20, memory_mb = 1024, vcores = 1, duration_ms = 100000 }]
[[apps]]
submit_ms = 2000
user = "carol"
queue = "c"
asks = [{ count = 1, memory_mb = 1024, vcores = 3, duration_ms = 10000 }]
"#;
    let partitions = r#"
[[labels]]
name = "x"
exclusive = true
[[nodes]]
count = 1
memory_mb = 10240
vcores = 10
[[nodes]]
count = 1
memory_mb = 10240
vcores = 10
label = "x"
[queues.properties]
"yarn.scheduler.capacity.root.queues" = "a,c"
"yarn.scheduler.capacity.root.a.capacity" = "50"
"yarn.scheduler.capacity.root.a.user-limit-factor" = "2"
"yarn.scheduler.capacity.root.a.accessible-node-labels" = " "
"yarn.scheduler.capacity.root.c.capacity" = "50"
"yarn.scheduler.capacity.root.c.minimum-user-limit-percent" = "50"
"yarn.scheduler.capacity.root.c.accessible-node-labels" = "x"
"yarn.scheduler.capacity.root.c.accessible-node-labels.x.capacity" = "100"
[[apps]]
submit_ms = 0
user = "carol"
queue = "c"
asks = [{ count = 3, memory_mb = 1024, vcores = 1, duration_ms = 200000 }]
[[apps]]
submit_ms = 0
user = "dave"
queue = "c"
node_label_expression = "x"
asks = [{ count = 20, memory_mb = 1024, vcores = 1, duration_ms = 200000 }]
[[apps]]
submit_ms = 1000
user = "alice"
queue = "a"
asks = [{ count = 20, memory_mb = 1024, vcores = 1, duration_ms = 100000 }]
[[apps]]
submit_ms = 2000
user = "carol"
queue = "c"
asks = [{ count = 1, memory_mb = 1024, vcores = 1, duration_ms = 10000 }]
"#;
    // c's vcores in all partitions with carol's last container.
    for (name, scenario, served) in [("shares", shares, 4), ("partitions", partitions, 14)] {
        let summary = simulate(&format!(
            r#"
scheduling_interval_ms = 1000
observe_at_ms = [12000]
[settings]
"yarn.resourcemanager.scheduler.monitor.enable" = "true"
"weft.reclaim.starvation-ms" = "5000"
"yarn.resourcemanager.monitor.capacity.preemption.max_wait_before_kill" = "0"
{scenario}"#
        ));
        let observed = &summary["observations"][0];
        assert_eq!(vcores(observed, "root.c"), served, "{name}: {observed}");
    }
}

#[test]
fn reclaim_spares_disabled_queues_observes_only_when_asked_and_takes_a_tenth_of_the_cluster_a_time()
{
    // a fills the node; c, below its guarantee, waits past the patience.
    let scenario = r#"
[[nodes]]
count = 1
memory_mb = 10240
vcores = 10
[[apps]]
submit_ms = 0
user = "alice"
queue = "a"
asks = [{ count = 20, memory_mb = 1024, vcores = 1, duration_ms = 100000 }]
[[apps]]
submit_ms = 2000
user = "carol"
queue = "c"
asks = [{ count = 3, memory_mb = 1024, vcores = 1, duration_ms = 10000 }]
"#;
    // Each case: a setting, a queue property, what c then holds.
    let observe_only =
        r#""yarn.resourcemanager.monitor.capacity.preemption.observe_only" = "true""#;
    for (name, setting, property, c_served) in [
        ("reclaim as usual", "", "", 3),
        (
            "a's disable_preemption",
            "",
            r#""yarn.scheduler.capacity.root.a.disable_preemption" = "true""#,
            0,
        ),
        (
            "root's, inherited by a",
            "",
            r#""yarn.scheduler.capacity.root.disable_preemption" = "true""#,
            0,
        ),
        (
            "root's, a's own false",
            "",
            "\"yarn.scheduler.capacity.root.disable_preemption\" = \"true\"\n\
             \"yarn.scheduler.capacity.root.a.disable_preemption\" = \"false\"",
            3,
        ),
        ("observe_only", observe_only, "", 0),
    ] {
        let summary = simulate(&format!(
            r#"
scheduling_interval_ms = 1000
observe_at_ms = [12000]
[settings]
"yarn.resourcemanager.scheduler.monitor.enable" = "true"
"weft.reclaim.starvation-ms" = "5000"
"yarn.resourcemanager.monitor.capacity.preemption.max_wait_before_kill" = "0"
"yarn.resourcemanager.monitor.capacity.preemption.total_preemption_per_round" = "1"
{setting}
{scenario}
[queues.properties]
"yarn.scheduler.capacity.root.queues" = "a,c"
"yarn.scheduler.capacity.root.a.capacity" = "50"
"yarn.scheduler.capacity.root.a.user-limit-factor" = "2"
"yarn.scheduler.capacity.root.c.capacity" = "50"
{property}
"#
        ));
        let observed = &summary["observations"][0];
        assert_eq!(vcores(observed, "root.c"), c_served, "{name}: {observed}");
        assert_eq!(
            vcores(observed, "root.a"),
            10 - c_served,
            "{name}: {observed}"
        );
    }
    // YARN's default cap, a tenth of the cluster a reclaim (one of a's
    // containers here): the rest comes a monitoring interval (3 s) apart,
    // not a whole patience. A cap below one container still takes one.
    for cap in ["0.1", "0.01"] {
        let summary = simulate(&format!(
            r#"
scheduling_interval_ms = 1000
observe_at_ms = [8500, 11500, 14500]
[settings]
"yarn.resourcemanager.scheduler.monitor.enable" = "true"
"weft.reclaim.starvation-ms" = "5000"
"yarn.resourcemanager.monitor.capacity.preemption.max_wait_before_kill" = "0"
"yarn.resourcemanager.monitor.capacity.preemption.total_preemption_per_round" = "{cap}"
{scenario}
[queues.properties]
"yarn.scheduler.capacity.root.queues" = "a,c"
"yarn.scheduler.capacity.root.a.capacity" = "50"
"yarn.scheduler.capacity.root.a.user-limit-factor" = "2"
"yarn.scheduler.capacity.root.c.capacity" = "50"
"#
        ));
        let served: Vec<u64> = (0..3)
            .map(|i| vcores(&summary["observations"][i], "root.c"))
            .collect();
        assert_eq!(served, [1, 2, 3], "cap {cap}: {summary}");
    }
    // Per resource, and only what a victim holds: with 4 GPUs in 100
    // vcores the GPU cap is 0, and a GPU container among a's victims bars
    // none of the others: ten a reclaim, as without GPUs.
    let summary = simulate(
        r#"
scheduling_interval_ms = 1000
observe_at_ms = [8500, 11500]
[settings]
"yarn.resourcemanager.scheduler.monitor.enable" = "true"
"weft.reclaim.starvation-ms" = "5000"
"yarn.resourcemanager.monitor.capacity.preemption.max_wait_before_kill" = "0"
[[nodes]]
count = 8
memory_mb = 10240
vcores = 10
[[nodes]]
count = 2
memory_mb = 10240
vcores = 10
gpus = 2
[[apps]]
submit_ms = 0
user = "alice"
queue = "a"
asks = [{ count = 4, memory_mb = 1024, vcores = 1, gpus = 1, duration_ms = 100000 },
        { count = 96, memory_mb = 1024, vcores = 1, duration_ms = 100000 }]
[[apps]]
submit_ms = 2000
user = "carol"
queue = "c"
asks = [{ count = 50, memory_mb = 1024, vcores = 1, duration_ms = 100000 }]
[queues.properties]
"yarn.scheduler.capacity.root.queues" = "a,c"
"yarn.scheduler.capacity.root.a.capacity" = "50"
"yarn.scheduler.capacity.root.a.user-limit-factor" = "2"
"yarn.scheduler.capacity.root.c.capacity" = "50"
"#,
    );
    let served: Vec<u64> = (0..2)
        .map(|i| vcores(&summary["observations"][i], "root.c"))
        .collect();
    assert_eq!(served, [10, 20], "{summary}");
}

#[test]
fn a_mark_left_when_starvation_ended_does_not_kill_when_it_comes_back() {
    // c is starved past the 5 s patience at 7 s (3 of a's containers
    // marked); its app's lifetime ends it at 12 s, before the 15 s wait.
    // Starved again from 60 s: marked anew at 65 s, killed 15 s on.
    let summary = simulate(
        r#"
scheduling_interval_ms = 1000
observe_at_ms = [13000, 65500, 79000, 81500]
[settings]
"yarn.resourcemanager.scheduler.monitor.enable" = "true"
"weft.reclaim.starvation-ms" = "5000"
"yarn.resourcemanager.monitor.capacity.preemption.total_preemption_per_round" = "1"
[[nodes]]
count = 1
memory_mb = 10240
vcores = 10
[[apps]]
submit_ms = 0
user = "alice"
queue = "a"
asks = [{ count = 10, memory_mb = 1024, vcores = 1, duration_ms = 1000000 }]
[[apps]]
submit_ms = 2000
user = "carol"
queue = "c"
lifetime_s = 10
asks = [{ count = 3, memory_mb = 1024, vcores = 1, duration_ms = 100000 }]
[[apps]]
submit_ms = 60000
user = "carol"
queue = "c"
asks = [{ count = 3, memory_mb = 1024, vcores = 1, duration_ms = 100000 }]
[queues.properties]
"yarn.scheduler.capacity.root.queues" = "a,c"
"yarn.scheduler.capacity.root.a.capacity" = "50"
"yarn.scheduler.capacity.root.a.user-limit-factor" = "2"
"yarn.scheduler.capacity.root.c.capacity" = "50"
"#,
    );
    let a: Vec<u64> = (0..4)
        .map(|i| vcores(&summary["observations"][i], "root.a"))
        .collect();
    assert_eq!(a, [10, 10, 10, 7], "{summary}");
}

#[test]
fn reclaim_marks_before_it_kills_spares_the_dead_zone_and_takes_a_share_a_time() {
    // a fills the node; c, below its guarantee, asks for 3 at 2 s and is
    // starved past the 5 s patience at 7 s; reclaims follow 3 s apart.
    let observe = [8500, 11500, 21000, 25000];
    let cases = [
        // YARN's 15 s wait: marked at 7 s, killed at the reclaim of 22 s.
        ("the default wait", "", [0, 0, 0, 3]),
        // 40 % of the 3 chosen a time: 2 (the second begins below 1.2),
        // then the last a monitoring interval on.
        (
            "natural termination",
            "natural_termination_factor\" = \"0.4",
            [2, 3, 3, 3],
        ),
        // a holds 100 %, not more than its 50 % twice over: spared.
        (
            "a dead zone a covers",
            "max_ignored_over_capacity\" = \"1",
            [0, 0, 0, 0],
        ),
        (
            "a dead zone a is past",
            "max_ignored_over_capacity\" = \"0.9",
            [3, 3, 3, 3],
        ),
    ];
    for (name, setting, served) in cases {
        let wait = if name == "the default wait" {
            String::new()
        } else {
            "\"yarn.resourcemanager.monitor.capacity.preemption.max_wait_before_kill\" = \"0\""
                .into()
        };
        let setting = if setting.is_empty() {
            String::new()
        } else {
            format!("\"yarn.resourcemanager.monitor.capacity.preemption.{setting}\"")
        };
        let summary = simulate(&format!(
            r#"
scheduling_interval_ms = 1000
observe_at_ms = {observe:?}
[settings]
"yarn.resourcemanager.scheduler.monitor.enable" = "true"
"weft.reclaim.starvation-ms" = "5000"
"yarn.resourcemanager.monitor.capacity.preemption.total_preemption_per_round" = "1"
{wait}
{setting}
[[nodes]]
count = 1
memory_mb = 10240
vcores = 10
[[apps]]
submit_ms = 0
user = "alice"
queue = "a"
asks = [{{ count = 20, memory_mb = 1024, vcores = 1, duration_ms = 100000 }}]
[[apps]]
submit_ms = 2000
user = "carol"
queue = "c"
asks = [{{ count = 3, memory_mb = 1024, vcores = 1, duration_ms = 100000 }}]
[queues.properties]
"yarn.scheduler.capacity.root.queues" = "a,c"
"yarn.scheduler.capacity.root.a.capacity" = "50"
"yarn.scheduler.capacity.root.a.user-limit-factor" = "2"
"yarn.scheduler.capacity.root.c.capacity" = "50"
"#
        ));
        let got: Vec<u64> = (0..observe.len())
            .map(|i| vcores(&summary["observations"][i], "root.c"))
            .collect();
        assert_eq!(got, served, "{name}: {summary}");
        for i in 0..observe.len() {
            let observed = &summary["observations"][i];
            assert_eq!(
                vcores(observed, "root.a"),
                10 - got[i],
                "{name}: {observed}"
            );
        }
    }
}

#[test]
fn reclaim_takes_nothing_for_demand_the_user_limit_bars() {
    // c's user limit is one container: once carol has it, what she still
    // asks for would not be served with room, so nothing more is taken
    // from a (before, every patience took another of alice's containers,
    // run again from the start).
    let summary = simulate(
        r#"
scheduling_interval_ms = 1000
observe_at_ms = [10000, 30000, 45000]
[settings]
"yarn.resourcemanager.scheduler.monitor.enable" = "true"
"weft.reclaim.starvation-ms" = "5000"
"yarn.resourcemanager.monitor.capacity.preemption.max_wait_before_kill" = "0"
[[nodes]]
count = 1
memory_mb = 10240
vcores = 10
[queues.properties]
"yarn.scheduler.capacity.root.queues" = "a,c"
"yarn.scheduler.capacity.root.a.capacity" = "40"
"yarn.scheduler.capacity.root.a.user-limit-factor" = "3"
"yarn.scheduler.capacity.root.c.capacity" = "60"
"yarn.scheduler.capacity.root.c.user-limit-factor" = "0.1"
[[apps]]
submit_ms = 0
user = "alice"
queue = "a"
asks = [{ count = 10, memory_mb = 1024, vcores = 1, duration_ms = 20000 }]
[[apps]]
submit_ms = 1000
user = "carol"
queue = "c"
asks = [{ count = 3, memory_mb = 1024, vcores = 1, duration_ms = 60000 }]
"#,
    );
    let [served, after, later] = [0, 1, 2].map(|i| &summary["observations"][i]);
    assert_eq!(
        (vcores(served, "root.a"), vcores(served, "root.c")),
        (9, 1),
        "{served}"
    );
    // alice's nine ended at 20 s; only the one preempted runs again.
    assert_eq!(
        (vcores(after, "root.a"), vcores(after, "root.c")),
        (1, 1),
        "{after}"
    );
    assert_eq!(vcores(later, "root.a"), 0, "{later}");
}

/// A queue whose guarantee × user-limit-factor is smaller than one of its
/// containers: its user still gets one (as in YARN), after reclaim takes
/// one back from the queue holding the node — once, not every patience.
#[test]
fn reclaim_serves_a_queue_whose_user_limit_is_below_one_container() {
    let summary = simulate(
        r#"
scheduling_interval_ms = 1000
observe_at_ms = [9000, 30000, 120000]
[settings]
"yarn.resourcemanager.scheduler.monitor.enable" = "true"
"weft.reclaim.starvation-ms" = "5000"
"yarn.resourcemanager.monitor.capacity.preemption.max_wait_before_kill" = "0"
[[nodes]]
count = 1
memory_mb = 2048
vcores = 2
[queues.properties]
"yarn.scheduler.capacity.root.queues" = "a,b,c"
"yarn.scheduler.capacity.root.a.capacity" = "40"
"yarn.scheduler.capacity.root.a.user-limit-factor" = "3"
"yarn.scheduler.capacity.root.b.capacity" = "30"
"yarn.scheduler.capacity.root.c.capacity" = "30"
[[apps]]
submit_ms = 0
user = "alice"
queue = "a"
asks = [{ count = 2, memory_mb = 1024, vcores = 1, duration_ms = 1000000 }]
[[apps]]
submit_ms = 10000
user = "carol"
queue = "c"
asks = [{ count = 1, memory_mb = 1024, vcores = 1, duration_ms = 1000000 }]
"#,
    );
    let [before, served, later] = [0, 1, 2].map(|i| &summary["observations"][i]);
    assert_eq!(vcores(before, "root.a"), 2, "{before}");
    // Carol's 1 vcore is more than c's 0.6-vcore user limit.
    assert_eq!(vcores(served, "root.c"), 1, "{served}");
    assert_eq!(vcores(served, "root.a"), 1, "{served}");
    // Nothing more is taken from a: its one container stays.
    assert_eq!(vcores(later, "root.a"), 1, "{later}");
    assert_eq!(vcores(later, "root.c"), 1, "{later}");
}
