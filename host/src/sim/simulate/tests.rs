use super::*;

fn scenario(text: &str) -> Scenario {
    toml::from_str(text).unwrap()
}

/// The summary with the parts jumping may change taken out: the
/// utilization samples (returned apart) and the policies' call counts
/// and times.
fn run_both(text: &str) -> (serde_json::Value, serde_json::Value) {
    let scenario = scenario(text);
    // Compiled policies go to a directory of this run, not the user's cache.
    let cache = tempfile::tempdir().unwrap();
    let overrides = [format!(
        "weft.policy.compile-cache-dir={}",
        cache.path().display()
    )];
    let mut summaries = [true, false].map(|jump| {
        let summary = simulate(&scenario, Path::new("."), &overrides, &|_, _| {}, jump).unwrap();
        serde_json::to_value(summary).unwrap()
    });
    for summary in &mut summaries {
        summary.as_object_mut().unwrap().remove("policies");
    }
    let [jumped, stepped] = summaries;
    (jumped, stepped)
}

/// Jumping gives the summary stepping gives, but for the utilization
/// samples of idle stretches, which are all zero.
fn assert_same_but_idle_samples(text: &str) {
    let (mut jumped, mut stepped) = run_both(text);
    let take = |summary: &mut serde_json::Value| {
        summary
            .as_object_mut()
            .unwrap()
            .remove("utilization")
            .unwrap()
            .as_array()
            .unwrap()
            .clone()
    };
    let (jumped_samples, stepped_samples) = (take(&mut jumped), take(&mut stepped));
    assert_eq!(jumped, stepped);
    assert!(jumped_samples.len() < stepped_samples.len() / 10);
    for sample in &stepped_samples {
        let idle = ["memory", "vcores", "gpus"]
            .iter()
            .all(|r| sample[r] == 0.0);
        assert!(
            idle || jumped_samples.contains(sample),
            "a busy sample was left out: {sample}"
        );
    }
    for sample in &jumped_samples {
        assert!(stepped_samples.contains(sample), "{sample}");
    }
}

const SETTINGS: &str = r#"
[settings]
"yarn.resourcemanager.quota.variable.price.enabled" = "true"
"yarn.resourcemanager.quota.multiplicator.interval" = "15000"
"yarn.resourcemanager.quota.scheduling.period" = "7000"
"#;

#[test]
fn jumping_over_idle_time_gives_the_summary_stepping_gives() {
    // Idle hours between apps; one app's containers end at different
    // times (rounds jump from end to end); observations while idle.
    // c's containers, placed at 7201 s, end at 7203 s, when QUOTA_COMPUTE
    // fires: the round that ends them must come first, as when stepping.
    assert_same_but_idle_samples(&format!(
        r#"
observe_at_ms = [5000, 100000, 3600000, 3000500, 9000000]
{SETTINGS}
[[nodes]]
count = 2
memory_mb = 4096
vcores = 4
[[apps]]
submit_ms = 0
user = "a"
project = "p"
asks = [{{ count = 10, memory_mb = 1024, vcores = 1, duration_ms = 20000 }}]
[[apps]]
submit_ms = 3000000
user = "b"
project = "q"
asks = [{{ count = 3, memory_mb = 1024, vcores = 1, duration_ms = 7500 }}, {{ count = 1, memory_mb = 2048, vcores = 2, duration_ms = 123456 }}]
[[apps]]
submit_ms = 7200001
user = "c"
project = "q"
asks = [{{ count = 8, memory_mb = 1024, vcores = 1, duration_ms = 2000 }}]
"#
    ));
}

#[test]
fn jumping_waits_for_reservations_as_stepping_does() {
    // A reserved app waits idle for its reservation, placed as late as
    // it can be, then runs; a later app waits for nothing.
    assert_same_but_idle_samples(&format!(
        r#"
observe_at_ms = [4600000, 5000000]
{SETTINGS}
[[nodes]]
count = 2
memory_mb = 4096
vcores = 4
[queues.properties]
"yarn.scheduler.capacity.root.queues" = "default,dedicated"
"yarn.scheduler.capacity.root.default.capacity" = "50"
"yarn.scheduler.capacity.root.dedicated.capacity" = "50"
"yarn.scheduler.capacity.root.dedicated.reservable" = "true"
[[reservations]]
name = "r"
submit_ms = 4000000
user = "alice"
queue = "dedicated"
arrival_ms = 4000000
deadline_ms = 6000000
requests = [{{ count = 2, memory_mb = 1024, vcores = 1, duration_ms = 100000 }}]
[[apps]]
submit_ms = 0
user = "a"
project = "p"
asks = [{{ count = 4, memory_mb = 1024, vcores = 1, duration_ms = 20000 }}]
[[apps]]
submit_ms = 4100000
user = "alice"
queue = "dedicated"
reservation = "r"
project = "p"
asks = [{{ count = 2, memory_mb = 1024, vcores = 1, duration_ms = 90000 }}]
[[apps]]
submit_ms = 8000000
user = "b"
project = "q"
asks = [{{ count = 3, memory_mb = 1024, vcores = 1, duration_ms = 7500 }}]
"#
    ));
}

#[test]
fn a_run_with_an_end_stops_there_even_with_apps_no_round_places() {
    // "stuck" asks for more than queue b may ever have; the run stops
    // at end_ms, as stepping stops, with the app pending.
    let text = format!(
        r#"
end_ms = 1234567
observe_at_ms = [1000000]
{SETTINGS}
[[nodes]]
count = 2
memory_mb = 4096
vcores = 4
[queues.properties]
"yarn.scheduler.capacity.root.queues" = "a,b"
"yarn.scheduler.capacity.root.a.capacity" = "90"
"yarn.scheduler.capacity.root.b.capacity" = "10"
"yarn.scheduler.capacity.root.b.maximum-capacity" = "10"
[[apps]]
submit_ms = 0
user = "u"
queue = "a"
project = "p"
asks = [{{ count = 2, memory_mb = 1024, vcores = 1, duration_ms = 100000 }}]
[[apps]]
submit_ms = 5000
name = "stuck"
user = "u"
queue = "b"
asks = [{{ count = 1, memory_mb = 2048, vcores = 1, duration_ms = 1000 }}]
"#
    );
    assert_same_but_idle_samples(&text);
    let (jumped, _) = run_both(&text);
    // The last firing by the end: the scheduling round at 1234000 ms.
    assert_eq!(jumped["end_ms"], 1_234_000);
    assert_eq!(
        jumped["observations"][0]["pending_apps"][0]["id"],
        "application_0_0002"
    );
    // Without the end it cannot finish, and says which app waits.
    let error = run(
        &scenario(&text.replace("end_ms = 1234567", "")),
        Path::new("."),
        &[],
        &|_, _| {},
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("the run cannot finish"), "{error}");
    assert!(
        error.contains(r#"application_0_0002 ("stuck", queue b"#),
        "{error}"
    );
}

#[test]
fn timers_skip_on_their_phase_and_never_back() {
    let mut every = Every::starting_at(0, 1000);
    every.skip_to(Some(0));
    assert_eq!(every.next, Some(1000), "first at one period");
    every.skip_to(Some(2500));
    assert_eq!(every.next, Some(3000));
    every.skip_to(Some(2000));
    assert_eq!(every.next, Some(3000), "never back");
    assert!(!every.due(2999) && every.due(3000));
    assert_eq!(every.next, Some(4000));
    every.skip_to(Some(u64::MAX));
    assert_eq!(every.next, Some(u64::MAX), "saturates, no overflow");
    every.skip_to(None);
    assert_eq!(every.next, None);
    assert!(!every.due(u64::MAX));
    let timers = Timers {
        scheduling: Every::starting_at(0, 1000),
        quota: Every::starting_at(0, 7000),
        multiplicator: Every::starting_at(0, 15000),
    };
    assert_eq!(timers.last_firing_by(1_234_567), 1_234_000);
    assert_eq!(timers.last_firing_by(999), 0);
}

#[test]
fn reservation_boundaries_repeat_with_their_period() {
    let one_off = Placed {
        allocations: vec![(100, 200), (300, 400)],
        period_ms: None,
    };
    assert_eq!(one_off.next_boundary(0), Some(100));
    assert_eq!(one_off.next_boundary(200), Some(300));
    assert_eq!(one_off.next_boundary(400), None);
    assert_eq!(one_off.last_one_off_boundary(350), Some(300));
    let recurring = Placed {
        allocations: vec![(100, 200)],
        period_ms: Some(1000),
    };
    assert_eq!(recurring.next_boundary(150), Some(200));
    assert_eq!(recurring.next_boundary(200), Some(1100));
    assert_eq!(recurring.next_boundary(5150), Some(5200));
    assert_eq!(recurring.next_boundary(u64::MAX - 10), None, "no overflow");
    assert_eq!(recurring.last_one_off_boundary(5000), None);
}

#[test]
fn recurring_reservations_are_waited_for_one_whole_cycle() {
    let placed = [
        Placed {
            allocations: vec![(0, 500)],
            period_ms: Some(2000),
        },
        Placed {
            allocations: vec![(0, 1000)],
            period_ms: Some(3000),
        },
    ];
    // Together they repeat every 6000 ms.
    assert_eq!(next_boundary(&placed, 5999, 0), Some(6000));
    assert_eq!(next_boundary(&placed, 6000, 0), None);
    assert_eq!(next_boundary(&placed, 6000, 100), Some(6500));
    // A one-off reservation ahead is always waited for, and one that
    // has passed starts the cycle anew.
    let [a, b] = placed;
    let one_off = Placed {
        allocations: vec![(9000, 9500)],
        period_ms: None,
    };
    let with_one_off = [a, b, one_off];
    assert_eq!(next_boundary(&with_one_off, 8000, 0), Some(9000));
    assert_eq!(next_boundary(&with_one_off, 10_000, 0), Some(10_500));
    assert_eq!(lcm(u64::MAX, u64::MAX - 1), None);
}

#[test]
fn apps_past_their_lifetime_are_killed_then_and_charged_up_to_it() {
    // a's two containers would run 60 s but its lifetime is 10 s; b waits
    // behind them for a whole vcore node and lives 5 s; c has no lifetime.
    let text = format!(
        r#"
{SETTINGS}
[[nodes]]
count = 1
memory_mb = 4096
vcores = 2
[[apps]]
submit_ms = 0
user = "a"
project = "p"
lifetime_s = 10
asks = [{{ count = 2, memory_mb = 1024, vcores = 1, duration_ms = 60000 }}]
[[apps]]
submit_ms = 1000
user = "b"
project = "q"
lifetime_s = 5
asks = [{{ count = 1, memory_mb = 1024, vcores = 2, duration_ms = 1000 }}]
[[apps]]
submit_ms = 2000
user = "c"
project = "r"
asks = [{{ count = 1, memory_mb = 1024, vcores = 1, duration_ms = 1000 }}]
"#
    );
    let (jumped, stepped) = run_both(&text);
    assert_eq!(jumped["apps_past_lifetime"], 2, "{jumped:#}");
    assert_eq!(jumped["apps_finished"], 1);
    // a is charged for its two containers up to 10 s (and not 60 s): two
    // vcores for about 10 s at the base price, times the multiplicator.
    let a = jumped["credits"]["p"].as_f64().unwrap();
    assert!((15.0..=45.0).contains(&a), "a charged {a}");
    assert!(jumped["credits"].get("q").is_none_or(|q| q == 0.0));
    assert_eq!(jumped["apps_past_lifetime"], stepped["apps_past_lifetime"]);
    assert_eq!(jumped["credits"], stepped["credits"]);
    assert_eq!(jumped["end_ms"], stepped["end_ms"]);
}

/// Three 2-vcore nodes: one plain, one labelled gpu (exclusive), one spare
/// (non-exclusive); queue ml holds all of both labels, and web's one user
/// may take the whole default partition.
fn labelled(apps: &str) -> String {
    format!(
        r#"
{SETTINGS}
[[labels]]
name = "gpu"
[[labels]]
name = "spare"
exclusive = false
[[nodes]]
count = 1
memory_mb = 4096
vcores = 2
[[nodes]]
count = 1
memory_mb = 4096
vcores = 2
label = "gpu"
[[nodes]]
count = 1
memory_mb = 4096
vcores = 2
label = "spare"
[queues.properties]
"yarn.scheduler.capacity.root.queues" = "ml,web"
"yarn.scheduler.capacity.root.ml.capacity" = "50"
"yarn.scheduler.capacity.root.web.capacity" = "50"
"yarn.scheduler.capacity.root.web.user-limit-factor" = "2"
"yarn.scheduler.capacity.root.ml.accessible-node-labels" = "gpu,spare"
"yarn.scheduler.capacity.root.ml.accessible-node-labels.gpu.capacity" = "100"
"yarn.scheduler.capacity.root.ml.accessible-node-labels.spare.capacity" = "100"
{apps}
"#
    )
}

#[test]
fn scenarios_carry_node_labels_and_asks_run_only_in_their_partition() {
    // Four 10 s containers for gpu: its one node runs two at a time (20 s),
    // however idle the others are.
    // Four 10 s containers of one app in `queue`, with `extra` lines.
    let four = |queue: &str, extra: &str| {
        labelled(&format!(
            "[[apps]]\nsubmit_ms = 0\nuser = \"a\"\nqueue = \"{queue}\"\n{extra}\nasks = [{{ count = 4, memory_mb = 1024, vcores = 1, duration_ms = 10000 }}]"
        ))
    };
    let (jumped, stepped) = run_both(&four("ml", "node_label_expression = \"gpu\""));
    let end = jumped["end_ms"].as_u64().unwrap();
    assert!((20_000..30_000).contains(&end), "{jumped:#}");
    assert_eq!(jumped["end_ms"], stepped["end_ms"]);
    // Four for the default partition: its node and spare's idle room run
    // them all at once (10 s), never the gpu node.
    let (jumped, _) = run_both(&four("web", ""));
    let end = jumped["end_ms"].as_u64().unwrap();
    assert!((10_000..20_000).contains(&end), "{jumped:#}");

    // Labels the scenario does not declare, or asks no node of their
    // label can hold, are refused up front, by name.
    for (apps, says) in [
        (
            r#"[[apps]]
submit_ms = 0
user = "a"
queue = "ml"
node_label_expression = "tpu"
asks = [{ count = 1, memory_mb = 1024, vcores = 1, duration_ms = 10 }]"#,
            "node label \"tpu\" is not one of the scenario's labels",
        ),
        (
            r#"[[apps]]
submit_ms = 0
user = "a"
queue = "ml"
asks = [{ count = 1, memory_mb = 1024, vcores = 3, duration_ms = 10, node_label_expression = "gpu" }]"#,
            "larger than every node of label \"gpu\"",
        ),
    ] {
        let error = scenario(&labelled(apps)).check().unwrap_err();
        assert!(error.contains(says), "{error}");
    }
    let undeclared = labelled("[[apps]]\nsubmit_ms = 0\nuser = \"a\"\nasks = [{ count = 1, memory_mb = 1, vcores = 1, duration_ms = 1 }]")
        .replace("label = \"spare\"", "label = \"ssd\"");
    let error = scenario(&undeclared).check().unwrap_err();
    assert!(error.contains("nodes[2].label"), "{error}");
}

/// The run finished its one app, jumping as stepping.
fn finished_one_as_stepping(jumped: &serde_json::Value, stepped: &serde_json::Value) {
    assert_eq!(jumped["apps_finished"], 1, "{jumped}");
    assert_eq!(jumped["wait_time_ms"], stepped["wait_time_ms"]);
    assert_eq!(jumped["end_ms"], stepped["end_ms"]);
}

/// Two nodes: node-00001 too small for the 4 GB asks of the locality
/// tests, which prefer it; node-00002 roomy.
const TOO_SMALL_THEN_ROOMY: &str = "[[nodes]]
count = 1
memory_mb = 2048
vcores = 4
[[nodes]]
count = 1
memory_mb = 8192
vcores = 4";

#[test]
fn an_ask_waiting_out_its_locality_delay_is_woken_for_it_jumping_or_stepping() {
    // Nothing runs: the app prefers node-00001, too small for it. Two
    // nodes heartbeating every second (the default) spend the node delay
    // (capped at the 2 nodes) in a second from the first round that saw
    // it (at 100 ms: the round at 0 comes before the submission); then it
    // goes to node-00002, jumping as stepping. (Before, a run that jumped
    // stopped: "the run cannot finish".)
    let (jumped, stepped) = run_both(&format!(
        r#"
scheduling_interval_ms = 100
[settings]
"yarn.scheduler.capacity.rack-locality-additional-delay" = "0"
{TOO_SMALL_THEN_ROOMY}
[[apps]]
submit_ms = 0
user = "a"
project = "p"
asks = [{{ count = 1, memory_mb = 4096, vcores = 1, duration_ms = 5000, locality = {{ nodes = ["node-00001"] }} }}]
"#
    ));
    finished_one_as_stepping(&jumped, &stepped);
    assert_eq!(jumped["wait_time_ms"]["default"]["max"], 1100, "{jumped}");
}

#[test]
fn a_locality_level_moving_on_gives_a_recurring_reservation_another_cycle() {
    // The reserved app prefers node-00001, too small for it. Its node
    // delay (two nodes heartbeating every 25 s) is spent at 25,100 ms,
    // after the reservation's window of its second cycle closed, more than
    // a whole cycle after the stretch began. The level's move is a change,
    // so the next cycle is waited for and it runs at 40,000 ms, jumping as
    // stepping. (Before, a run that jumped gave up: "the run cannot
    // finish".)
    let (jumped, stepped) = run_both(&format!(
        r#"
scheduling_interval_ms = 100
[settings]
"yarn.resourcemanager.nodemanagers.heartbeat-interval-ms" = "25000"
"yarn.scheduler.capacity.rack-locality-additional-delay" = "0"
{TOO_SMALL_THEN_ROOMY}
[queues.properties]
"yarn.scheduler.capacity.root.queues" = "default,dedicated"
"yarn.scheduler.capacity.root.default.capacity" = "50"
"yarn.scheduler.capacity.root.dedicated.capacity" = "50"
"yarn.scheduler.capacity.root.dedicated.reservable" = "true"
[[reservations]]
name = "r"
submit_ms = 0
user = "alice"
queue = "dedicated"
arrival_ms = 0
deadline_ms = 5000
recurrence_ms = 20000
requests = [{{ count = 1, memory_mb = 4096, vcores = 1, duration_ms = 5000 }}]
[[apps]]
submit_ms = 100
user = "alice"
queue = "dedicated"
reservation = "r"
project = "p"
asks = [{{ count = 1, memory_mb = 4096, vcores = 1, duration_ms = 1000, locality = {{ nodes = ["node-00001"] }} }}]
"#
    ));
    finished_one_as_stepping(&jumped, &stepped);
    assert_eq!(jumped["end_ms"], 41_000, "{jumped}");
}
