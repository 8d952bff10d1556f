//! Hostile input through the real binary: every reproduction of "Safe to
//! expose" is refused with a 4xx naming the field and the limit, and the
//! host keeps serving, scheduling and charging; bodies are bounded per
//! route; app and node listings filter and page as YARN's do.

use serde_json::{Value, json};

use crate::support::{Server, assert_credits};

const SIM_NODES: [&str; 2] = ["--sim-nodes", "4x8192mb,8vcores,1gpus"];

fn app(asks: Value) -> Value {
    json!({"queue": "default", "user": "alice", "project": "p", "asks": asks})
}

fn refused(server: &Server, body: &Value, status: u16, mentions: &[&str]) {
    let (got, answer) = server.post_json("/ws/v1/cluster/apps", body);
    let message = answer["RemoteException"]["message"].as_str().unwrap_or("");
    assert_eq!(got, status, "{body} → {answer}");
    for word in mentions {
        assert!(
            message.contains(word),
            "{message:?} should mention {word:?}"
        );
    }
}

/// A small app is scheduled, finishes and is charged: the loop is alive.
fn still_schedules_and_charges(server: &Server, project: &str) {
    let (status, body) = server.post_json_as(
        "/ws/v1/cluster/apps",
        &json!({"queue": "default", "user": "alice", "project": project,
                "asks": [{"count": 2, "memory_mb": 1024, "vcores": 1, "duration_ms": 500}]}),
        Some("alice"),
    );
    assert_eq!(status, 202, "{body}");
    let id = body["app"]["id"].as_str().unwrap().to_string();
    server.wait_for(
        &format!("/ws/v1/cluster/apps/{id}"),
        "the app to finish",
        |body| body["app"]["state"] == "FINISHED",
    );
    server.wait_for("/ws/v1/quota/projects", "the app to be charged", |body| {
        body[project]["total_used"].as_f64().unwrap_or(0.0) > 0.0
    });
    let (status, _) = server.get("/ws/v1/cluster/metrics");
    assert_eq!(status, 200);
}

#[test]
fn the_reproductions_are_refused_and_the_host_keeps_working() {
    let server = Server::start(&[
        SIM_NODES[0],
        SIM_NODES[1],
        // The multiplicator step overflowed ten seconds after a huge count.
        "--set",
        "yarn.resourcemanager.quota.multiplicator.interval=100",
        "--set",
        "yarn.resourcemanager.quota.scheduling.period=200",
        "--set",
        "yarn.resourcemanager.quota.variable.price.enabled=true",
        // The largest container the bounds allow may be asked for (by
        // default no ask may exceed the largest node).
        "--set",
        "yarn.scheduler.maximum-allocation-mb=1073741824",
        "--set",
        "yarn.scheduler.maximum-allocation-vcores=4096",
        "--set",
        "yarn.resource-types.yarn.io/gpu.maximum-allocation=1024",
    ]);
    let max = u64::MAX;
    refused(
        &server,
        &app(json!([{"count": 1, "memory_mb": 1024, "vcores": 1, "duration_ms": max}])),
        400,
        &["asks[0].duration_ms", "2592000000"],
    );
    refused(
        &server,
        &app(
            json!([{"count": 4294967295u64, "memory_mb": 1024, "vcores": 1, "duration_ms": 1000}]),
        ),
        400,
        &["asks[0].count", "100000"],
    );
    refused(
        &server,
        &app(json!([
            {"count": 1, "memory_mb": 1u64 << 63, "vcores": 1, "duration_ms": 1000},
            {"count": 1, "memory_mb": 1u64 << 63, "vcores": 1, "duration_ms": 1000}
        ])),
        400,
        &["asks[0].memory_mb", "1073741824"],
    );
    refused(
        &server,
        &app(json!([{"count": 1, "memory_mb": 1024, "vcores": 1, "duration_ms": -1}])),
        400,
        &["duration_ms"],
    );
    let many: Vec<Value> = (0..101)
        .map(|_| json!({"count": 1, "memory_mb": 1, "vcores": 1, "duration_ms": 1}))
        .collect();
    refused(&server, &app(json!(many)), 400, &["asks", "at most 100"]);
    let mut long_name = app(json!([{"count": 1, "memory_mb": 1, "vcores": 1, "duration_ms": 1}]));
    long_name["user"] = json!("u".repeat(300));
    refused(&server, &long_name, 400, &["user", "256"]);
    for _ in 0..2 {
        let (status, body) = server.post_json(
            "/ws/v1/cluster/nodes/register",
            &json!({"node_id": format!("huge-{}", 1u64 << 63), "memory_mb": 1u64 << 63, "vcores": 4}),
        );
        assert_eq!(status, 400, "{body}");
        assert!(body.to_string().contains("memory_mb"), "{body}");
    }

    // The largest demand the bounds allow: sums saturate rather than wrap,
    // in the multiplicator step, the scheduler view and the metrics.
    let largest: Vec<Value> = (0..100)
        .map(|_| json!({"count": 100_000, "memory_mb": 1u64 << 30, "vcores": 4096, "gpus": 1024, "duration_ms": 2_592_000_000u64}))
        .collect();
    for _ in 0..2 {
        let (status, body) = server.post_json("/ws/v1/cluster/apps", &app(json!(largest)));
        assert_eq!(status, 202, "{body}");
    }
    let (status, scheduler) = server.get("/ws/v1/cluster/scheduler");
    assert_eq!(status, 200, "{scheduler}");
    let pending = &scheduler["scheduler"]["schedulerInfo"]["pendingResources"];
    assert_eq!(pending["vCores"], json!(u32::MAX), "saturated: {pending}");
    let (status, metrics) = server.get("/ws/v1/cluster/metrics");
    assert_eq!(status, 200, "{metrics}");
    // Let several multiplicator steps and QUOTA_COMPUTEs see that demand.
    std::thread::sleep(std::time::Duration::from_millis(600));
    let (status, prices) = server.get("/ws/v1/quota/prices");
    assert_eq!(status, 200, "{prices}");
    still_schedules_and_charges(&server, "after-hostile-input");
    server.stop();
}

#[test]
fn bodies_are_bounded_per_route() {
    let server = Server::start(&[]);
    let big = vec![b' '; 2 << 20];
    // A declared length over the limit is refused before the body is read:
    // sent as headers only, since a client still writing the body may see
    // the connection closed under it (a broken pipe) instead of the answer.
    let address = server.base.trim_start_matches("http://").to_string();
    let mut stream = std::net::TcpStream::connect(&address).unwrap();
    use std::io::{Read, Write};
    write!(
        stream,
        "POST /ws/v1/cluster/apps HTTP/1.1\r\nHost: {address}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        big.len()
    )
    .unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("limited per route"), "{answer}");
    // A policy upload may be larger than a submission: 2 MB of nonsense is
    // read, then refused as no component (400, not 413).
    let (status, body) = server.request("PUT", "/ws/v1/policies/pricing", &[], Some(&big));
    assert_eq!(status, 400, "{body}");
    let (status, body) = server.request(
        "POST",
        "/ws/v1/cluster/apps",
        &[("content-type", "application/json")],
        Some(b"{\"asks\": [1e400]}"),
    );
    assert_eq!(status, 400, "{body}");
    let (status, body) = server.get("/ws/v1/no/such/thing");
    assert_eq!(status, 404, "{body}");
    server.stop();
}

#[test]
fn app_and_node_listings_filter_and_page_as_yarn() {
    let server = Server::start(&SIM_NODES);
    let ids: Vec<String> = (0..5).map(|_| server.submit("p", 1, 300)).collect();
    for id in &ids {
        server.wait_for(
            &format!("/ws/v1/cluster/apps/{id}"),
            "the app to finish",
            |body| body["app"]["state"] == "FINISHED",
        );
    }
    let (status, body) = server.post_json(
        "/ws/v1/cluster/apps",
        &app(json!([{"count": 1, "memory_mb": 1024, "vcores": 1, "duration_ms": 60000}])),
    );
    assert_eq!(status, 202, "{body}");
    let long = body["app"]["id"].as_str().unwrap().to_string();
    let listed = |query: &str| -> Vec<String> {
        let (status, body) = server.get(&format!("/ws/v1/cluster/apps{query}"));
        assert_eq!(status, 200, "{query}: {body}");
        body["apps"]["app"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(listed("").len(), 6);
    assert_eq!(
        listed("?limit=2"),
        vec![ids[4].clone(), long.clone()],
        "the newest two"
    );
    assert_eq!(listed("?states=finished").len(), 5);
    assert_eq!(listed("?states=RUNNING,ACCEPTED"), vec![long.clone()]);
    assert_eq!(listed("?state=FAILED"), Vec::<String>::new());
    assert_eq!(listed("?user=alice&queue=default").len(), 6);
    assert_eq!(listed("?user=bob").len(), 0);
    assert_eq!(listed("?finishedTimeBegin=1").len(), 5);
    assert_eq!(
        listed("?finishedTimeEnd=0"),
        vec![long.clone()],
        "unfinished: time 0"
    );
    assert_eq!(listed("?startedTimeBegin=99999999999999").len(), 0);
    assert_eq!(
        listed("?user.name=alice").len(),
        6,
        "unknown parameters are ignored"
    );
    for bad in [
        "?states=BOGUS",
        "?limit=0",
        "?limit=1001",
        "?limit=-1",
        "?startedTimeBegin=5&startedTimeEnd=4",
        "?finishedTimeBegin=abc",
    ] {
        let (status, body) = server.get(&format!("/ws/v1/cluster/apps{bad}"));
        assert_eq!(status, 400, "{bad}: {body}");
    }
    let nodes = |query: &str| {
        let (status, body) = server.get(&format!("/ws/v1/cluster/nodes{query}"));
        (status, body["nodes"]["node"].as_array().map(Vec::len))
    };
    assert_eq!(nodes(""), (200, Some(4)));
    assert_eq!(nodes("?states=running"), (200, Some(4)));
    assert_eq!(nodes("?states=LOST,UNHEALTHY"), (200, Some(0)));
    assert_eq!(nodes("?states=SLEEPING").0, 400);
    for bad in [
        "/ws/v1/cluster/apps?finalStatus=MAYBE",
        "/ws/v1/cluster/apps?deSelects=everything",
        "/ws/v1/cluster/appstatistics?states=SLEEPING",
        "/ws/v1/cluster/appstatistics?applicationTypes=spark,mapreduce",
    ] {
        let (status, body) = server.get(bad);
        assert_eq!(status, 400, "{bad}: {body}");
    }
    let (status, body) = server.get("/ws/v1/cluster/nodes/no-such-node");
    assert_eq!(status, 404, "{body}");
    for (extra, field) in [
        (
            json!({"tags": ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"]}),
            "tags",
        ),
        (json!({"tags": ["a,b"]}), "tags[0]"),
        (json!({"tags": ["x".repeat(101)]}), "tags[0]"),
        // 100 bytes as sent, 150 once lower case: kept lower case, so refused.
        (json!({"tags": ["\u{130}".repeat(50)]}), "tags[0]"),
        (json!({"tags": ["  "]}), "tags[0]"),
        (
            json!({"application_type": "spark,mapreduce"}),
            "application_type",
        ),
    ] {
        let mut submission = json!({"project": "p",
            "asks": [{"count": 1, "memory_mb": 1024, "vcores": 1, "duration_ms": 100}]});
        submission
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let (status, body) = server.post_json("/ws/v1/cluster/apps", &submission);
        assert_eq!(status, 400, "{body}");
        assert!(body.to_string().contains(field), "{field}: {body}");
    }
    // Empty filter items are skipped, as YARN does: no filter at all.
    let count = |query: &str| {
        let (status, body) = server.get(&format!("/ws/v1/cluster/apps{query}"));
        assert_eq!(status, 200, "{query}: {body}");
        body["apps"]["app"].as_array().unwrap().len()
    };
    let all = count("");
    assert_eq!(count("?applicationTypes="), all);
    assert_eq!(count("?applicationTags=,,"), all);
    assert_eq!(
        count("?states=RUNNING,ACCEPTED,FINISHED,FAILED,KILLED,"),
        all
    );
    // Repeated states count once: the answer is one item, whatever the list.
    let many = vec!["NEW"; 5_000].join(",");
    let (status, body) = server.get(&format!("/ws/v1/cluster/appstatistics?states={many}"));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["appStatInfo"]["statItem"].as_array().unwrap().len(), 1);
    server.stop();
}

#[test]
fn the_submitting_host_is_the_clients_address() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("weft.log");
    let server = Server::start_logging(&dir.path().join("data"), &SIM_NODES, Some(&log));
    let (status, body) = server.request(
        "POST",
        "/ws/v1/cluster/apps",
        &[("host", "evil.example:80"), ("x-forwarded-for", "10.6.6.6")],
        Some(
            app(json!([{"count": 1, "memory_mb": 1024, "vcores": 1, "duration_ms": 100}]))
                .to_string()
                .as_bytes(),
        ),
    );
    assert_eq!(status, 202, "{body}");
    server.stop();
    let log = std::fs::read_to_string(&log).unwrap();
    let line = log
        .lines()
        .find(|l| l.contains("application submitted and accepted"))
        .expect("the submission is logged");
    assert!(
        line.contains("submitter=127.0.0.1") || line.contains("submitter=\"127.0.0.1\""),
        "{line}"
    );
    assert!(
        !line.contains("evil") && !line.contains("10.6.6.6"),
        "{line}"
    );
}

#[test]
fn credits_of_a_bounded_run_are_exact() {
    // 2 containers × 10 s minimum runtime × 1 credit: bounds change nothing
    // for ordinary input.
    let server = Server::start(&SIM_NODES);
    let id = server.submit("exact", 2, 300);
    server.wait_for(
        &format!("/ws/v1/cluster/apps/{id}"),
        "the app to finish",
        |body| body["app"]["state"] == "FINISHED",
    );
    let (_, projects) = server.get("/ws/v1/quota/projects");
    assert_credits(&projects["exact"]["total_used"], 20.0, "exact's usage");
    server.stop();
}

/// The address of a plain-HTTP server, for raw sockets.
fn address(server: &Server) -> String {
    server.base.trim_start_matches("http://").to_string()
}

/// Sends `head` (and no body) on a fresh connection; the status line of the
/// answer, or an empty string if the server closed it without one.
fn raw(server: &Server, head: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(address(server)).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer)
        .lines()
        .next()
        .unwrap_or("")
        .to_string()
}

#[test]
fn a_declared_body_too_large_is_refused_before_it_is_sent() {
    let server = Server::start(&["--set", "yarn.admin.acl=ops"]);
    // The body never comes: the answer must not wait for it.
    let started = std::time::Instant::now();
    let status = raw(
        &server,
        "POST /ws/v1/cluster/apps HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 99999999999\r\nconnection: close\r\n\r\n{",
    );
    assert!(status.contains(" 413 "), "{status:?}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    // A policy upload by someone who may not load policies is refused
    // before its 63 MB are read.
    let status = raw(
        &server,
        "PUT /ws/v1/policies/pricing HTTP/1.1\r\nhost: x\r\nx-weft-user: mallory\r\ncontent-length: 63000000\r\nconnection: close\r\n\r\n",
    );
    assert!(status.contains(" 403 "), "{status:?}");
    // A route that reads no body answers a request that declared one, and
    // says it closes the connection, whose unread rest it cannot serve
    // another request from (the client did not ask to close it).
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(address(&server)).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    stream
        .write_all(b"POST /ws/v1/cluster/apps/new-application HTTP/1.1\r\nhost: x\r\nx-weft-user: alice\r\ncontent-length: 1000\r\n\r\n")
        .unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer).to_ascii_lowercase();
    assert!(answer.starts_with("http/1.1 200"), "{answer}");
    assert!(answer.contains("\r\nconnection: close\r\n"), "{answer}");
    server.stop();
}

#[test]
fn connections_are_capped_and_idle_ones_closed() {
    use std::io::Read;
    let server = Server::start(&[
        "--set",
        "weft.http.max-connections=4",
        "--set",
        "weft.http.idle-timeout-ms=500",
    ]);
    let idle: Vec<std::net::TcpStream> = (0..4)
        .map(|_| std::net::TcpStream::connect(address(&server)).unwrap())
        .collect();
    // Let the server accept them all.
    std::thread::sleep(std::time::Duration::from_millis(200));
    // A fifth is closed at once, with no answer.
    let status = raw(
        &server,
        "GET /ws/v1/cluster HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    );
    assert_eq!(status, "", "over the cap");
    // The silent ones are closed after the idle timeout...
    for mut stream in idle {
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        let mut buffer = [0u8; 16];
        assert_eq!(
            stream.read(&mut buffer).unwrap_or(0),
            0,
            "closed by the server"
        );
    }
    // ...and their places are free again.
    let status = raw(
        &server,
        "GET /ws/v1/cluster HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    );
    assert!(status.contains(" 200 "), "{status:?}");
    server.stop();
}

#[test]
fn a_huge_reservation_is_refused_at_once_and_the_loop_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let queues = dir.path().join("queues.toml");
    std::fs::write(
        &queues,
        "[yarn.scheduler.capacity.root]\nqueues = \"default,dedicated\"\n\
         [yarn.scheduler.capacity.root.default]\ncapacity = 50\n\
         [yarn.scheduler.capacity.root.dedicated]\ncapacity = 50\nreservable = true\n",
    )
    .unwrap();
    let server = Server::start(&[
        SIM_NODES[0],
        SIM_NODES[1],
        "--queues",
        queues.to_str().unwrap(),
        "--set",
        "yarn.admin.acl=ops",
    ]);
    let (_, id) = server.post_json("/ws/v1/cluster/reservation/new-reservation", &json!({}));
    let id = id["reservation-id"].as_str().unwrap().to_string();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let huge = |count: u64, deadline: u64| {
        json!({"queue": "dedicated", "reservation-id": id,
            "reservation-definition": {"arrival": now, "deadline": deadline,
                "reservation-requests": {"reservation-request-interpreter": 0,
                    "reservation-request": [{"capability": {"memory": 1024, "vCores": 1},
                        "num-containers": count, "min-concurrency": 1, "duration": 1000}]}}})
    };
    for (count, deadline, says) in [
        (
            4_294_967_295u64,
            now + 3_600_000,
            "num-containers 4294967295 is above",
        ),
        (10, 253_402_300_799_999, "more than 31 days ahead"),
    ] {
        let started = std::time::Instant::now();
        let (status, body) =
            server.post_json("/ws/v1/cluster/reservation/submit", &huge(count, deadline));
        assert_eq!(status, 400, "{body}");
        assert!(body.to_string().contains(says), "{body}");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }
    // Someone else cannot take the id new-reservation gave anonymous.
    let (status, body) = server.post_json_as(
        "/ws/v1/cluster/reservation/submit",
        &huge(2, now + 3_600_000),
        Some("mallory"),
    );
    assert_eq!(status, 403, "{body}");
    assert!(
        body.to_string().contains("handed out to anonymous"),
        "{body}"
    );
    let (status, body) = server.post_json(
        "/ws/v1/cluster/reservation/submit",
        &huge(2, now + 3_600_000),
    );
    assert_eq!(status, 202, "{body}");
    // Its capacity is its owner's: another user's app may not run in it.
    let in_reservation = |user: &str| {
        server.post_json_as(
            "/ws/v1/cluster/apps",
            &json!({"queue": "dedicated", "user": user, "project": "p", "reservation-id": id,
                    "asks": [{"count": 1, "memory_mb": 1024, "vcores": 1, "duration_ms": 100}]}),
            Some(user),
        )
    };
    let (status, body) = in_reservation("mallory");
    assert_eq!(status, 403, "{body}");
    assert!(body.to_string().contains("belongs to anonymous"), "{body}");
    let (status, body) = in_reservation("anonymous");
    assert_eq!(status, 202, "{body}");
    still_schedules_and_charges(&server, "after-reservations");
    server.stop();
}

#[test]
fn ended_apps_beyond_the_retention_are_forgotten_and_still_counted() {
    let server = Server::start(&[
        SIM_NODES[0],
        SIM_NODES[1],
        "--set",
        "yarn.resourcemanager.max-completed-applications=2",
    ]);
    let ids: Vec<String> = (0..4).map(|_| server.submit("p", 1, 100)).collect();
    for id in &ids {
        server.wait_for("/ws/v1/cluster/metrics", "the apps to finish", |body| {
            body["clusterMetrics"]["appsCompleted"] == 4
        });
        let _ = id;
    }
    let (_, apps) = server.get("/ws/v1/cluster/apps");
    let kept: Vec<&str> = apps["apps"]["app"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    assert_eq!(kept, vec![ids[2].as_str(), ids[3].as_str()]);
    assert_eq!(
        server.get(&format!("/ws/v1/cluster/apps/{}", ids[0])).0,
        404
    );
    let (_, metrics) = server.get("/ws/v1/cluster/metrics");
    assert_eq!(metrics["clusterMetrics"]["appsSubmitted"], 4, "{metrics}");
    // A fifth app gets a new id, not a reused one.
    let fifth = server.submit("p", 1, 100);
    assert!(!ids.contains(&fifth));
    server.stop();
}

#[test]
fn a_user_may_hold_only_their_share_of_a_queues_applications() {
    let server = Server::start(&[
        "--set",
        "yarn.scheduler.capacity.maximum-applications=4",
        "--set",
        "yarn.scheduler.capacity.root.default.minimum-user-limit-percent=50",
    ]);
    // No nodes: every app waits.
    let submit = |user: &str| {
        server.post_json_as(
            "/ws/v1/cluster/apps",
            &json!({"queue": "default", "user": user, "project": "p",
                    "asks": [{"count": 1, "memory_mb": 1024, "vcores": 1, "duration_ms": 100}]}),
            Some(user),
        )
    };
    assert_eq!(submit("alice").0, 202);
    assert_eq!(submit("alice").0, 202);
    let (status, body) = submit("alice");
    assert_eq!(status, 409, "{body}");
    assert!(
        body.to_string().contains("user alice has 2 applications"),
        "{body}"
    );
    assert_eq!(submit("bob").0, 202);
    assert_eq!(submit("bob").0, 202);
    let (status, body) = submit("carol");
    assert_eq!(status, 409, "the queue is full: {body}");
    server.stop();
}

#[test]
fn one_client_holds_only_its_share_of_connections() {
    let server = Server::start(&["--set", "weft.http.max-connections-per-client=3"]);
    let _held: Vec<std::net::TcpStream> = (0..3)
        .map(|_| std::net::TcpStream::connect(address(&server)).unwrap())
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let status = raw(
        &server,
        "GET /ws/v1/cluster HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    );
    assert_eq!(
        status, "",
        "a fourth from the same address is closed at once"
    );
    drop(_held);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let status = raw(
        &server,
        "GET /ws/v1/cluster HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    );
    assert!(status.contains(" 200 "), "{status:?}");
    server.stop();
}

#[test]
fn a_body_trickled_too_slowly_is_cut_off() {
    use std::io::{Read, Write};
    let server = Server::start(&[]);
    let mut stream = std::net::TcpStream::connect(address(&server)).unwrap();
    stream
        .write_all(b"POST /ws/v1/cluster/apps HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\nconnection: close\r\n\r\n{")
        .unwrap();
    let started = std::time::Instant::now();
    // A byte a second: under the idle timeout, far under 64 KiB/s. The
    // deadline for 100 bytes is 10 s.
    let writer = {
        let mut stream = stream.try_clone().unwrap();
        std::thread::spawn(move || {
            for _ in 0..30 {
                std::thread::sleep(std::time::Duration::from_secs(1));
                if stream.write_all(b" ").is_err() {
                    break;
                }
            }
        })
    };
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(40)))
        .unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer:?}");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    let _ = stream.shutdown(std::net::Shutdown::Both);
    writer.join().unwrap();
    server.stop();
}

/// Submits an app with `priority` and returns the priority it was given.
fn given_priority(server: &Server, priority: i64) -> Value {
    let id = submitted_with_priority(server, priority, 10);
    priority_of(server, &id)
}

/// Submits an app with `priority` running `duration_ms`; its id.
fn submitted_with_priority(server: &Server, priority: i64, duration_ms: u64) -> String {
    let asks = json!([{"count": 1, "memory_mb": 1024, "vcores": 1, "duration_ms": duration_ms}]);
    let mut body = app(asks);
    body["priority"] = json!(priority);
    let (status, answer) = server.post_json_as("/ws/v1/cluster/apps", &body, Some("alice"));
    assert_eq!(status, 202, "{answer}");
    answer["app"]["id"].as_str().unwrap().to_owned()
}

fn priority_of(server: &Server, id: &str) -> Value {
    let (status, answer) = server.get(&format!("/ws/v1/cluster/apps/{id}/priority"));
    assert_eq!(status, 200, "{answer}");
    answer["priority"].clone()
}

#[test]
fn a_recovered_apps_priority_is_cut_to_the_clusters_highest_in_force() {
    // As YARN's RM on recovery: the highest may have been lowered since.
    let dir = tempfile::tempdir().unwrap();
    let with_highest = |highest: &'static str| vec![SIM_NODES[0], SIM_NODES[1], "--set", highest];
    let server = Server::start_in(
        dir.path(),
        &with_highest("yarn.cluster.max-application-priority=5"),
    );
    let high = submitted_with_priority(&server, 5, 3_600_000);
    let low = submitted_with_priority(&server, 1, 3_600_000);
    assert_eq!(priority_of(&server, &high), json!(5));
    server.stop();
    let server = Server::start_in(
        dir.path(),
        &with_highest("yarn.cluster.max-application-priority=2"),
    );
    assert_eq!(priority_of(&server, &high), json!(2));
    assert_eq!(priority_of(&server, &low), json!(1));
    server.stop();
    // The cut was stored: a server with a higher limit does not undo it.
    let server = Server::start_in(
        dir.path(),
        &with_highest("yarn.cluster.max-application-priority=5"),
    );
    assert_eq!(priority_of(&server, &high), json!(2));
    server.stop();
}

#[test]
fn priorities_above_the_clusters_highest_are_cut_to_it() {
    // YARN's default: no app is served ahead of earlier ones by asking.
    let server = Server::start(&SIM_NODES);
    assert_eq!(given_priority(&server, i64::from(i32::MAX)), json!(0));
    assert_eq!(given_priority(&server, -3), json!(-3));
    drop(server);
    let server = Server::start(&[
        SIM_NODES[0],
        SIM_NODES[1],
        "--set",
        "yarn.cluster.max-application-priority=5",
    ]);
    assert_eq!(given_priority(&server, 9), json!(5));
    assert_eq!(given_priority(&server, 3), json!(3));
}

#[test]
fn an_apps_priority_is_changed_by_its_user_cut_to_the_clusters_highest_and_checked() {
    let server = Server::start(&[
        SIM_NODES[0],
        SIM_NODES[1],
        "--set",
        "yarn.cluster.max-application-priority=5",
        "--set",
        "yarn.scheduler.capacity.root.acl_administer_queue= ",
        "--set",
        "yarn.admin.acl= admins",
    ]);
    let id = submitted_with_priority(&server, 1, 3_600_000);
    let path = format!("/ws/v1/cluster/apps/{id}/priority");
    let put = |user: &str, body: &str| {
        server.request(
            "PUT",
            &path,
            &[("X-Weft-User", user), ("Content-Type", "application/json")],
            Some(body.as_bytes()),
        )
    };
    assert_eq!(
        put("alice", r#"{"priority": 3}"#),
        (200, json!({"priority": 3}))
    );
    assert_eq!(priority_of(&server, &id), json!(3));
    // Above the cluster's highest: cut to it, as at submission.
    assert_eq!(
        put("alice", r#"{"priority": 2147483647}"#),
        (200, json!({"priority": 5}))
    );
    // Someone else, without administering its queue: refused, unchanged.
    let (status, body) = put("bob", r#"{"priority": 0}"#);
    assert_eq!(status, 403, "{body}");
    assert!(body.to_string().contains("priority"), "{body}");
    for bad in [
        r#"{"priority": "high"}"#,
        r#"{"priority": 2147483648}"#,
        r#"{}"#,
        r#"{"priority": 1, "queue": "x"}"#,
        "not json",
        // An array is not read as the body's fields in order.
        "[3]",
        " \n[3]",
        "3",
        // Nor is anything after the object.
        r#"{"priority": 3}{"priority": 4}"#,
        r#"{"priority": 3} trailing"#,
    ] {
        let (status, body) = put("alice", bad);
        assert_eq!(status, 400, "{bad}: {body}");
    }
    assert_eq!(priority_of(&server, &id), json!(5));
    let (status, _) = server.request(
        "PUT",
        "/ws/v1/cluster/apps/application_1_9999/priority",
        &[
            ("X-Weft-User", "alice"),
            ("Content-Type", "application/json"),
        ],
        Some(br#"{"priority": 1}"#),
    );
    assert_eq!(status, 404);
    // An app that has ended keeps its own (as YARN).
    let (status, body) = server.request(
        "PUT",
        &format!("/ws/v1/cluster/apps/{id}/state"),
        &[
            ("X-Weft-User", "alice"),
            ("Content-Type", "application/json"),
        ],
        Some(br#"{"state": "KILLED"}"#),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        put("alice", r#"{"priority": 1}"#),
        (200, json!({"priority": 5}))
    );
    // Whoever else asks is refused first, as YARN checks before it looks
    // at the app's state.
    let (status, body) = put("bob", r#"{"priority": 1}"#);
    assert_eq!(status, 403, "{body}");
}

#[test]
fn a_raised_priority_is_served_first_when_room_frees() {
    let server = Server::start(&[
        "--sim-nodes",
        "1x1024mb,1vcores",
        "--set",
        "yarn.cluster.max-application-priority=5",
    ]);
    let first = submitted_with_priority(&server, 0, 1_500);
    let running = |id: &str| {
        let (_, body) = server.get(&format!("/ws/v1/cluster/apps/{id}"));
        body["app"]["runningContainers"].as_u64().unwrap_or(0)
    };
    server.wait_for(
        &format!("/ws/v1/cluster/apps/{first}"),
        "the first app to run",
        |b| b["app"]["runningContainers"] == 1,
    );
    let earlier = submitted_with_priority(&server, 0, 3_600_000);
    let later = submitted_with_priority(&server, 0, 3_600_000);
    let (status, body) = server.request(
        "PUT",
        &format!("/ws/v1/cluster/apps/{later}/priority"),
        &[
            ("X-Weft-User", "alice"),
            ("Content-Type", "application/json"),
        ],
        Some(br#"{"priority": 4}"#),
    );
    assert_eq!(status, 200, "{body}");
    server.wait_for(
        &format!("/ws/v1/cluster/apps/{later}"),
        "the raised app to run",
        |b| b["app"]["runningContainers"] == 1,
    );
    assert_eq!(running(&earlier), 0, "the earlier app of priority 0 waits");
}
