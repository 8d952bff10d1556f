//! `weft policy test`: the contract harness through the real binary. Every
//! bundled policy passes it; a policy that breaks the pricing contract, which
//! `weft policy check` accepts, fails it; example cases are checked; a
//! component built for another WIT version is refused, saying which.

use std::process::Output;

use crate::support::weft;

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn every_bundled_policy_passes_its_contract() {
    for builtin in [
        "flat-pricing",
        "hops-pricing",
        "fifo",
        "capacity",
        "drf",
        "no-overcommit",
        "capacity-over-time",
    ] {
        let source = format!("builtin:{builtin}");
        let output = weft(&["policy", "test", &source, "--rounds", "20"]);
        assert!(output.status.success(), "{builtin}: {}", text(&output));
        assert!(text(&output).contains("checks passed"), "{}", text(&output));
    }
}

#[test]
fn a_volume_discount_passes_check_but_fails_the_contract() {
    let discount = env!("WEFT_GUEST_VOLUME_DISCOUNT_PRICING");
    let check = weft(&["policy", "check", discount]);
    assert!(check.status.success(), "{}", text(&check));

    let test = weft(&["policy", "test", discount]);
    let report = text(&test);
    assert!(!test.status.success(), "{report}");
    assert!(
        report.contains("FAIL  each row is priced from its own row and context alone"),
        "{report}"
    );
    assert!(
        report.contains("1 of"),
        "only row independence fails: {report}"
    );

    let json = weft(&["policy", "test", discount, "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let failed: Vec<&str> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["passed"] == false)
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        failed,
        ["each row is priced from its own row and context alone"]
    );
}

#[test]
fn example_cases_are_checked_and_a_bad_case_file_is_refused_by_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases = dir.path().join("cases.jsonl");
    std::fs::write(
        &cases,
        concat!(
            "# flat pricing: one credit per unit-second of the dominant resource\n",
            r#"{"name": "an hour of one vcore", "charge": {"usage": {"seconds": [3600], "memory_mb": [1024], "vcores": [1], "gpus": [0]}, "multiplicators": {"general": 1, "gpu": 1}}, "expect": [3600.0]}"#,
            "\n",
            r#"{"name": "idle", "multiplicators": {"memory": 0, "vcores": 0, "gpus": 0}, "expect": {"general": 1, "gpu": 1}}"#,
            "\n",
            r#"{"name": "wrong on purpose", "charge": {"usage": {"seconds": [1], "memory_mb": [1024], "vcores": [1], "gpus": [0]}, "multiplicators": {"general": 1, "gpu": 1}}, "expect": [5.0]}"#,
            "\n",
        ),
    )
    .unwrap();
    let output = weft(&[
        "policy",
        "test",
        "builtin:flat-pricing",
        "--cases",
        cases.to_str().unwrap(),
    ]);
    let report = text(&output);
    assert!(!output.status.success(), "{report}");
    assert!(
        report.contains(r#"ok    case "an hour of one vcore" (line 2)"#),
        "{report}"
    );
    assert!(report.contains(r#"ok    case "idle" (line 3)"#), "{report}");
    assert!(
        report.contains(r#"FAIL  case "wrong on purpose" (line 4): expected [5.0], got [1.0]"#),
        "{report}"
    );

    for (bad, says) in [
        (
            r#"{"name": "x", "charge": {"usage": {"seconds": [1, 2], "memory_mb": [1], "vcores": [1], "gpus": [0]}, "multiplicators": {"general": 1, "gpu": 1}}, "expect": [1]}"#,
            "line 1: usage: seconds has 2 entries but memory_mb has 1",
        ),
        (
            r#"{"name": "x", "schedule": {"now_ms": 0, "nodes": {"free_memory_mb": [1], "free_vcores": [1], "free_gpus": [0], "capacity_memory_mb": [1], "capacity_vcores": [1], "capacity_gpus": [0]}, "queues": {"parent": [0], "capacity": [100], "maximum_capacity": [100], "minimum_user_limit_percent": [100], "user_limit_factor": [null], "fair": [false], "used_memory_mb": [0], "used_vcores": [0], "used_gpus": [0]}, "apps": {"queue": [0], "user": [0], "priority": [0], "submit_time_ms": [0], "used_memory_mb": [0], "used_vcores": [0], "used_gpus": [0]}, "asks": {"app": [7], "pending": [1], "memory_mb": [1], "vcores": [1], "gpus": [0]}}, "expect": {"ask": [], "node": [], "count": []}}"#,
            "line 1: asks.app[0] is 7, but there are only 1",
        ),
        (
            r#"{"name": "x", "validate": 1, "expect": "maybe"}"#,
            "line 1:",
        ),
        ("not json", "line 1:"),
    ] {
        std::fs::write(&cases, bad).unwrap();
        let output = weft(&[
            "policy",
            "test",
            "builtin:flat-pricing",
            "--cases",
            cases.to_str().unwrap(),
        ]);
        assert!(!output.status.success(), "{bad}");
        assert!(text(&output).contains(says), "{bad}: {}", text(&output));
    }
}

#[test]
fn a_component_for_another_wit_version_is_refused_saying_which() {
    let old = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/flat-pricing-wit-0.1.0.wasm"
    );
    for command in ["check", "test"] {
        let output = weft(&["policy", command, old]);
        let said = text(&output);
        assert!(!output.status.success(), "{said}");
        assert!(
            said.contains(
                "built for weft:policy@0.1.0, but this Weft speaks weft:policy@0.3.0 (and loads components built for 0.2.0)"
            ),
            "{command}: {said}"
        );
    }
}
