//! `weft simulate` through the real binary: a scenario on the virtual clock
//! is scheduled, charged and summarized; a bad scenario is refused.

use crate::support::{assert_credits, weft};

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
