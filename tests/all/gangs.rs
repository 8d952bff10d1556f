//! Gangs (all-or-nothing asks) through the real binary: a gang waits while
//! it cannot be placed whole, saying so, then starts all together; one not
//! placed in time fails its app or places as it can, as it asked; bad terms
//! are refused by name.

use serde_json::{Value, json};

use crate::support::Server;

fn submit(server: &Server, user: &str, ask: Value) -> (u16, Value) {
    server.post_json_as(
        "/ws/v1/cluster/apps",
        &json!({"user": user, "project": "p", "asks": [ask]}),
        Some(user),
    )
}

fn id(answer: &(u16, Value)) -> String {
    assert_eq!(answer.0, 202, "{}", answer.1);
    answer.1["app"]["id"].as_str().unwrap().to_string()
}

#[test]
fn a_gang_starts_all_together_or_not_at_all_and_times_out_as_it_asked() {
    // 8 vcores in all, over two nodes.
    let server = Server::start(&["--sim-nodes", "2x8192mb,4vcores"]);
    // Bad terms: refused by name, nothing accepted.
    for (gang, field) in [
        (json!({"minimum": 0}), "asks[0].gang.minimum"),
        (json!({"minimum": 5}), "asks[0].gang.minimum"),
        (
            json!({"minimum": 2, "timeout_ms": 0}),
            "asks[0].gang.timeout_ms",
        ),
        (json!({"minimum": 2, "on_timeout": "retry"}), "on_timeout"),
        (json!({"minimum": 2, "size": 3}), "size"),
    ] {
        let ask = json!({"count": 4, "memory_mb": 1024, "vcores": 1,
            "duration_ms": 1000, "gang": gang});
        let (status, body) = submit(&server, "eve", ask);
        assert_eq!(status, 400, "{gang} → {body}");
        assert!(body.to_string().contains(field), "{gang} → {body}");
    }

    // Six vcores busy for 2 s: a gang of four waits for them, whole.
    let busy = id(&submit(
        &server,
        "alice",
        json!({"count": 6, "memory_mb": 1024, "vcores": 1, "duration_ms": 2000}),
    ));
    server.wait_for(&format!("/ws/v1/cluster/apps/{busy}"), "six running", |b| {
        b["app"]["runningContainers"] == 6
    });
    let gang = id(&submit(
        &server,
        "bob",
        json!({"count": 4, "memory_mb": 1024, "vcores": 1, "duration_ms": 1000,
            "gang": {"minimum": 4}}),
    ));
    std::thread::sleep(std::time::Duration::from_millis(500));
    let (_, waiting) = server.get(&format!("/ws/v1/cluster/apps/{gang}"));
    assert_eq!(waiting["app"]["runningContainers"], 0, "{waiting}");
    assert!(
        waiting["app"]["diagnostics"]
            .as_str()
            .unwrap()
            .contains("gang of at least 4"),
        "{waiting}"
    );
    server.wait_for(
        &format!("/ws/v1/cluster/apps/{gang}"),
        "the gang's end",
        |b| b["app"]["state"] == "FINISHED",
    );
    let (_, containers) = server.get(&format!("/ws/v1/cluster/apps/{gang}/containers"));
    let starts: Vec<u64> = containers["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["startTimeMs"].as_u64().unwrap())
        .collect();
    assert_eq!(starts.len(), 4, "{containers}");
    assert!(
        starts.iter().all(|&s| s == starts[0]),
        "all four in one round: {containers}"
    );

    // Ten on eight vcores can never be whole: one fails at its deadline,
    // the other then places as it can.
    let fails = id(&submit(
        &server,
        "carol",
        json!({"count": 10, "memory_mb": 1024, "vcores": 1, "duration_ms": 500,
            "gang": {"minimum": 10, "timeout_ms": 800}}),
    ));
    let failed = server.wait_for(
        &format!("/ws/v1/cluster/apps/{fails}"),
        "the failure",
        |b| b["app"]["state"] == "FAILED",
    );
    assert!(
        failed["app"]["diagnostics"]
            .as_str()
            .unwrap()
            .contains("could not be placed whole in time"),
        "{failed}"
    );
    assert_eq!(failed["app"]["finishedContainers"], 0, "{failed}");
    let places = id(&submit(
        &server,
        "dave",
        json!({"count": 10, "memory_mb": 1024, "vcores": 1, "duration_ms": 500,
            "gang": {"minimum": 10, "timeout_ms": 800, "on_timeout": "place"}}),
    ));
    let done = server.wait_for(&format!("/ws/v1/cluster/apps/{places}"), "its end", |b| {
        b["app"]["state"] == "FINISHED"
    });
    assert_eq!(done["app"]["finishedContainers"], 10, "{done}");
    let started = done["app"]["startedTime"].as_u64().unwrap();
    let submitted = done["app"]["submittedTime"].as_u64().unwrap();
    assert!(
        started >= submitted + 800,
        "placed only at its deadline: {done}"
    );

    // From the command line: `--gang` reaches the ask, refused by name
    // when bigger than the ask, run whole otherwise.
    let run = |args: &[&str]| {
        let mut all = vec!["app", "run", "--server", &server.base, "--memory", "64mb"];
        all.extend_from_slice(args);
        crate::support::weft_within(&all, std::time::Duration::from_secs(60))
    };
    let refused = run(&["-n", "2", "--gang", "3", "--", "/bin/true"]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("asks[0].gang.minimum"), "{stderr}");
    let whole = run(&[
        "-n",
        "4",
        "--gang",
        "4",
        "--gang-timeout-ms",
        "60000",
        "--wait",
        "--",
        "/bin/true",
    ]);
    assert!(
        whole.status.success(),
        "{}",
        String::from_utf8_lossy(&whole.stderr)
    );
    server.stop();
}

#[test]
fn gangs_that_split_the_room_do_not_wait_on_each_other_and_one_that_cannot_fit_blocks_nobody() {
    // Two queues of half the cluster each, which may each take it all;
    // 8 vcores over two nodes.
    let server = Server::start(&[
        "--sim-nodes",
        "2x8192mb,4vcores",
        "--set",
        "yarn.scheduler.capacity.root.queues=a,b",
        "--set",
        "yarn.scheduler.capacity.root.a.capacity=50",
        "--set",
        "yarn.scheduler.capacity.root.b.capacity=50",
        "--set",
        "yarn.scheduler.capacity.root.a.maximum-capacity=100",
        "--set",
        "yarn.scheduler.capacity.root.b.maximum-capacity=100",
        "--set",
        "yarn.scheduler.capacity.root.a.user-limit-factor=2",
        "--set",
        "yarn.scheduler.capacity.root.b.user-limit-factor=2",
        "--set",
        "yarn.scheduler.capacity.root.a.acl_submit_applications=*",
        "--set",
        "yarn.scheduler.capacity.root.b.acl_submit_applications=*",
    ]);
    let submit_to = |queue: &str, user: &str, ask: Value| {
        id(&server.post_json_as(
            "/ws/v1/cluster/apps",
            &json!({"queue": queue, "user": user, "project": "p", "asks": [ask]}),
            Some(user),
        ))
    };
    // The cluster full for a moment, then two gangs of six, one per queue:
    // each round would give each half the room, which neither can use.
    let busy = submit_to(
        "a",
        "carol",
        json!({"count": 8, "memory_mb": 1024, "vcores": 1, "duration_ms": 1500}),
    );
    server.wait_for(
        &format!("/ws/v1/cluster/apps/{busy}"),
        "eight running",
        |b| b["app"]["runningContainers"] == 8,
    );
    let gang = json!({"count": 6, "memory_mb": 1024, "vcores": 1, "duration_ms": 500,
        "gang": {"minimum": 6}});
    let (first, second) = (
        submit_to("a", "alice", gang.clone()),
        submit_to("b", "bob", gang),
    );
    for app in [&first, &second] {
        server.wait_for(
            &format!("/ws/v1/cluster/apps/{app}"),
            "both gangs to run",
            |b| b["app"]["state"] == "FINISHED",
        );
    }

    // A gang no queue could ever hold whole blocks nobody behind it, and
    // its pending reason says why it waits.
    let never = submit_to(
        "b",
        "mallory",
        json!({"count": 100, "memory_mb": 1024, "vcores": 1, "duration_ms": 500,
            "gang": {"minimum": 100}}),
    );
    let small = submit_to(
        "b",
        "bob",
        json!({"count": 2, "memory_mb": 1024, "vcores": 1, "duration_ms": 300}),
    );
    server.wait_for(
        &format!("/ws/v1/cluster/apps/{small}"),
        "the small app",
        |b| b["app"]["state"] == "FINISHED",
    );
    let (_, waiting) = server.get(&format!("/ws/v1/cluster/apps/{never}"));
    assert_eq!(waiting["app"]["state"], "ACCEPTED", "{waiting}");
    assert!(
        waiting["app"]["diagnostics"]
            .as_str()
            .unwrap()
            .contains("more than queue root.b may ever hold"),
        "{waiting}"
    );
    server.stop();
}
