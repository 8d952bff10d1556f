//! Shadow mode on a live server: a candidate answers the same calls as the
//! active policy, its differences are reported, the ledger and placements
//! stay the active policy's, and promotion swaps with no failed request.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Server, assert_credits};

fn project<'a>(report: &'a Value, name: &str) -> Option<&'a Value> {
    report["pricing"]["projects"]
        .as_array()?
        .iter()
        .find(|p| p["project"] == name)
}

fn submit(server: &Server, project: &str, count: u32) -> String {
    let (status, body) = server.post_json(
        "/ws/v1/cluster/apps",
        &json!({"queue": "default", "user": "alice", "project": project,
            "asks": [{"count": count, "memory_mb": 1024, "vcores": 1, "duration_ms": 300}]}),
    );
    assert_eq!(status, 202, "{body}");
    body["app"]["id"].as_str().unwrap().to_string()
}

fn wait_finished(server: &Server, id: &str) {
    server.wait_for(
        &format!("/ws/v1/cluster/apps/{id}"),
        "the app to finish",
        |b| b["app"]["state"] == "FINISHED",
    );
}

/// Two simulated nodes, flat-pricing active, rounds every 20 ms.
fn start_with_flat_pricing() -> Server {
    Server::start(&[
        "--sim-nodes",
        "2x8192mb,8vcores",
        "--set",
        "weft.policy.pricing=builtin:flat-pricing",
        "--set",
        "weft.scheduler.interval-ms=20",
    ])
}

#[test]
fn a_pricing_shadow_reports_what_it_would_charge_and_the_ledger_stays_the_active_ones() {
    let server = start_with_flat_pricing();
    let (status, body) = server.get("/ws/v1/policies/pricing/shadow");
    assert_eq!(status, 404, "no shadow runs yet: {body}");
    // The candidate prices everything twice as high.
    let (status, report) = server.put(
        "/ws/v1/policies/pricing/shadow?builtin=flat-pricing&price.base.general=2",
        b"",
    );
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["shadow"]["name"], "flat-pricing");

    let apps: Vec<String> = (0..3).map(|_| submit(&server, "shadowed", 2)).collect();
    for app in &apps {
        wait_finished(&server, app);
    }
    let (_, projects) = server.get("/ws/v1/quota/projects");
    let charged = projects["shadowed"]["total_used"].as_f64().unwrap();
    // 6 containers of 1 vcore at the 10 s minimum runtime, 1 credit per
    // unit-second: the active policy's prices, not the shadow's.
    assert_credits(&projects["shadowed"]["total_used"], 60.0, "the ledger");
    let report = server.wait_for(
        "/ws/v1/policies/pricing/shadow",
        "the shadow to have seen every charge",
        |r| project(r, "shadowed").is_some_and(|p| p["active_credits"].as_f64() == Some(charged)),
    );
    let shadowed = project(&report, "shadowed").unwrap();
    assert_credits(
        &shadowed["shadow_credits"],
        120.0,
        "what the shadow would charge",
    );
    assert_credits(&shadowed["difference"], 60.0, "the difference");
    assert_eq!(report["failures"], 0, "{report}");
    assert_eq!(
        server.get("/ws/v1/policies/pricing").1["history"]
            .as_array()
            .unwrap()
            .len(),
        1,
        "a shadow is not a version of the active slot"
    );
    let metrics = server.metrics();
    assert!(
        metrics.contains(
            r#"weft_policy_shadow_credits_total{project="shadowed",policy="shadow"} 120"#
        ),
        "/metrics lacks the shadow's credits:\n{metrics}"
    );

    // Stopping it reports once more, then it is gone.
    let (status, last) = server.request("DELETE", "/ws/v1/policies/pricing/shadow", &[], None);
    assert_eq!(status, 200, "{last}");
    assert_eq!(server.get("/ws/v1/policies/pricing/shadow").0, 404);
    server.stop();
}

#[test]
fn a_misbehaving_scheduling_shadow_changes_no_placement_and_is_counted_apart() {
    let faulty = env!("WEFT_GUEST_FAULTY_SCHEDULING");
    let server = Server::start(&[
        "--sim-nodes",
        "2x8192mb,8vcores",
        "--set",
        "weft.policy.scheduling=builtin:fifo",
        "--set",
        "weft.scheduler.interval-ms=20",
    ]);
    // After the load's self-check, every round it places a container on a
    // node that does not exist: placements the host would refuse.
    let bytes = std::fs::read(faulty).unwrap();
    let (status, report) = server.put(
        "/ws/v1/policies/scheduling/shadow?fault=ghost-node&after=1",
        &bytes,
    );
    assert_eq!(status, 200, "{report}");

    let apps: Vec<String> = (0..4).map(|_| submit(&server, "p", 3)).collect();
    for app in &apps {
        wait_finished(&server, app);
    }
    let report = server.wait_for(
        "/ws/v1/policies/scheduling/shadow",
        "the shadow's invalid rounds",
        |r| r["scheduling"]["invalid_rounds"].as_u64().unwrap_or(0) > 0,
    );
    assert!(
        report["scheduling"]["differing_rounds"].as_u64().unwrap() > 0,
        "{report}"
    );
    // The active version never failed, fell back or rolled back.
    let (_, status) = server.get("/ws/v1/policies/scheduling");
    assert_eq!(status["active"]["name"], "fifo", "{status}");
    assert_eq!(status["history"].as_array().unwrap().len(), 1, "{status}");
    let metrics = server.metrics();
    assert!(
        !metrics.contains("weft_policy_failures_total{kind=\"scheduling\""),
        "the shadow's failures were counted as the active's:\n{metrics}"
    );
    server.stop();
}

#[test]
fn promoting_a_shadow_swaps_with_no_failed_request() {
    let server = start_with_flat_pricing();
    let (status, report) = server.put(
        "/ws/v1/policies/pricing/shadow?builtin=flat-pricing&price.base.general=3",
        b"",
    );
    assert_eq!(status, 200, "{report}");

    let stop = Arc::new(AtomicBool::new(false));
    let (requests, failures) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let load = {
        let (base, stop, requests, failures) = (
            server.base.clone(),
            stop.clone(),
            requests.clone(),
            failures.clone(),
        );
        std::thread::spawn(move || {
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .http_status_as_error(false)
                .build()
                .into();
            while !stop.load(Ordering::Relaxed) {
                let app = json!({"queue": "default", "user": "bob", "project": "load",
                    "asks": [{"count": 1, "memory_mb": 512, "vcores": 1, "duration_ms": 100}]});
                for response in [
                    agent
                        .post(&format!("{base}/ws/v1/cluster/apps"))
                        .send_json(&app),
                    agent.get(&format!("{base}/ws/v1/quota/prices")).call(),
                ] {
                    requests.fetch_add(1, Ordering::Relaxed);
                    if !response.is_ok_and(|r| r.status().is_success()) {
                        failures.fetch_add(1, Ordering::Relaxed);
                    }
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    let (status, promoted) = server.post("/ws/v1/policies/pricing/shadow/promote");
    assert_eq!(status, 200, "{promoted}");
    assert_eq!(promoted["active"]["number"], 2, "{promoted}");
    server.wait_for("/ws/v1/quota/prices", "the promoted prices", |p| {
        p["price_per_second"]["vcore"].as_f64() == Some(3.0)
    });
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    load.join().unwrap();
    let (requests, failures) = (
        requests.load(Ordering::Relaxed),
        failures.load(Ordering::Relaxed),
    );
    assert!(requests > 10, "the load made only {requests} requests");
    assert_eq!(failures, 0, "{failures} of {requests} requests failed");
    // Promotion ends the shadow; the old version stays as the fallback.
    assert_eq!(server.get("/ws/v1/policies/pricing/shadow").0, 404);
    let (status, missing) = server.post("/ws/v1/policies/pricing/shadow/promote");
    assert_eq!(status, 404, "{missing}");
    server.stop();
}
