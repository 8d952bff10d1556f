//! Reservations through the real binary: YARN's REST API and its shapes,
//! capacity-over-time's limits as refusals with figures, every bad input
//! refused with the plan unchanged, hot swaps of the sharing policy, and
//! reservations surviving a restart.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::support::Server;

const BASE: &str = "/ws/v1/cluster/reservation";
const HOUR: i64 = 3_600_000;

/// 100 GB / 100 vcores; root.default 50 %, root.dedicated 50 % (50 GB) and
/// reservable: a user may hold 50 % of it (25 GB) at any instant and 25 %
/// (12.5 GB) on average over any hour. Requests without X-Weft-User act as
/// `anonymous`, the one administrator.
fn server_in(data_dir: Option<&std::path::Path>) -> Server {
    server_with(data_dir, &[])
}

fn server_with(data_dir: Option<&std::path::Path>, more: &[String]) -> Server {
    let q = "yarn.scheduler.capacity.root";
    let mut sets = vec![
        format!("{q}.queues=default,dedicated"),
        format!("{q}.default.capacity=50"),
        format!("{q}.dedicated.capacity=50"),
        format!("{q}.dedicated.reservable=true"),
        format!("{q}.dedicated.instantaneous-max-capacity=50"),
        format!("{q}.dedicated.average-capacity=25"),
        format!("{q}.dedicated.reservation-window={HOUR}"),
        "yarn.admin.acl=anonymous".to_string(),
    ];
    sets.extend_from_slice(more);
    let mut args = vec!["--sim-nodes", "10x10240mb,10vcores"];
    for set in &sets {
        args.extend(["--set", set.as_str()]);
    }
    match data_dir {
        Some(dir) => Server::start_in(dir, &args),
        None => Server::start(&args),
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// A definition: `containers` of `memory_mb` (1 vcore each) for
/// `duration_ms`, all at once, between `arrival` and `deadline`.
fn definition(
    arrival: i64,
    deadline: i64,
    containers: u32,
    memory_mb: u64,
    duration_ms: i64,
) -> Value {
    json!({
        "arrival": arrival,
        "deadline": deadline,
        "reservation-name": "test",
        "reservation-requests": {
            "reservation-request-interpreter": 0,
            "reservation-request": [{
                "capability": {"memory": memory_mb, "vCores": 1},
                "num-containers": containers,
                "min-concurrency": containers,
                "duration": duration_ms
            }]
        }
    })
}

/// A new id, asked for by `user` (only they may submit under it).
fn new_id(server: &Server, user: &str) -> String {
    let (status, body) =
        server.post_json_as(&format!("{BASE}/new-reservation"), &json!({}), Some(user));
    assert_eq!(status, 200, "{body}");
    body["reservation-id"].as_str().unwrap().to_string()
}

fn submit(server: &Server, user: &str, queue: &str, id: &str, definition: &Value) -> (u16, Value) {
    server.post_json_as(
        &format!("{BASE}/submit"),
        &json!({"queue": queue, "reservation-id": id, "reservation-definition": definition}),
        Some(user),
    )
}

fn list(server: &Server) -> Value {
    let (status, body) = server.get(&format!(
        "{BASE}/list?queue=dedicated&include-resource-allocations=true"
    ));
    assert_eq!(status, 200, "{body}");
    body
}

fn message(body: &Value) -> &str {
    body["RemoteException"]["message"].as_str().unwrap_or("")
}

#[test]
fn reservations_follow_yarns_api_and_capacity_over_time() {
    let server = server_in(None);
    let start = now_ms() + 60_000;

    // Accepted: 10 GB for 10 minutes.
    let id = new_id(&server, "alice");
    assert!(id.starts_with("reservation_"), "{id}");
    let accepted = definition(start, start + HOUR, 10, 1024, 600_000);
    let (status, body) = submit(&server, "alice", "dedicated", &id, &accepted);
    assert_eq!(status, 202, "{body}");
    assert_eq!(body, json!(""), "YARN's submit answers 202 with no body");

    // Listed in YARN's shape, placed as late as the deadline allows.
    let listed = list(&server);
    let reservations = listed["reservations"].as_array().unwrap();
    assert_eq!(reservations.len(), 1, "{listed}");
    let r = &reservations[0];
    assert_eq!(r["reservation-id"], id);
    assert_eq!(r["user"], "alice");
    assert!(r["acceptance-time"].as_i64().unwrap() > 0);
    assert_eq!(r["reservation-definition"]["reservation-name"], "test");
    let allocation = &r["resource-allocations"][0];
    assert_eq!(
        allocation["endTime"].as_i64().unwrap(),
        (start + HOUR) / 1000 * 1000
    );
    assert_eq!(allocation["resource"]["memory"], 10 * 1024);
    assert_eq!(allocation["resource"]["vCores"], 10);

    // Resubmitting the same definition is idempotent; a different one is refused.
    let (status, body) = submit(&server, "alice", "dedicated", &id, &accepted);
    assert_eq!(status, 202, "{body}");
    let changed = definition(start, start + HOUR, 11, 1024, 600_000);
    let (status, body) = submit(&server, "alice", "dedicated", &id, &changed);
    assert_eq!(status, 400, "{body}");
    assert!(message(&body).contains("already submitted"), "{body}");

    // Above the instantaneous limit: 30 GB at once when a user may hold 25 GB.
    let (status, body) = submit(
        &server,
        "bob",
        "dedicated",
        &new_id(&server, "bob"),
        &definition(start, start + HOUR, 30, 1024, 600_000),
    );
    assert_eq!(status, 400, "{body}");
    assert!(
        message(&body).contains("25600"),
        "the limit's figure: {body}"
    );

    // Above the average: 20 GB for 40 minutes is 800 GB·min in an hour that
    // allows 12.5 GB × 60 min = 750.
    let (status, body) = submit(
        &server,
        "bob",
        "dedicated",
        &new_id(&server, "bob"),
        &definition(start, start + HOUR, 20, 1024, 40 * 60_000),
    );
    assert_eq!(status, 400, "{body}");
    assert!(message(&body).contains("average-capacity"), "{body}");

    // Bob is not affected by Alice's reservations: 12 GB for an hour is his to take
    // (12 × 60 = 720 ≤ 750).
    let (status, body) = submit(
        &server,
        "bob",
        "dedicated",
        &new_id(&server, "bob"),
        &definition(start, start + 2 * HOUR, 12, 1024, HOUR),
    );
    assert_eq!(status, 202, "{body}");
    assert_eq!(list(&server)["reservations"].as_array().unwrap().len(), 2);
}

#[test]
fn bad_reservations_are_refused_with_reasons_and_the_plan_is_unchanged() {
    let server = server_in(None);
    let start = now_ms() + 60_000;
    let id = new_id(&server, "alice");
    let (status, body) = submit(
        &server,
        "alice",
        "dedicated",
        &id,
        &definition(start, start + HOUR, 2, 1024, 60_000),
    );
    assert_eq!(status, 202, "{body}");
    let before = list(&server);

    let mut period = definition(start, start + HOUR, 1, 1024, 60_000);
    period["recurrence-expression"] = json!("7000000");
    let cases: Vec<(&str, &str, Value, u16)> = vec![
        (
            "arrival after deadline",
            "dedicated",
            definition(start + HOUR, start, 1, 1024, 1000),
            400,
        ),
        (
            "duration longer than the window",
            "dedicated",
            definition(start, start + 60_000, 1, 1024, 120_000),
            400,
        ),
        (
            "zero resources",
            "dedicated",
            definition(start, start + HOUR, 1, 0, 60_000),
            400,
        ),
        (
            "zero containers",
            "dedicated",
            definition(start, start + HOUR, 0, 1024, 60_000),
            400,
        ),
        (
            "a period that does not divide the maximum",
            "dedicated",
            period,
            400,
        ),
        (
            "an unknown queue",
            "nowhere",
            definition(start, start + HOUR, 1, 1024, 60_000),
            404,
        ),
        (
            "a queue that is not reservable",
            "default",
            definition(start, start + HOUR, 1, 1024, 60_000),
            400,
        ),
    ];
    for (what, queue, definition, expected) in cases {
        let (status, body) = submit(
            &server,
            "alice",
            queue,
            &new_id(&server, "alice"),
            &definition,
        );
        assert_eq!(status, expected, "{what}: {body}");
        assert!(!message(&body).is_empty(), "{what}: no reason given");
        assert_eq!(list(&server), before, "{what} changed the plan");
    }
    // Negative figures are not a definition at all.
    let mut negative = definition(start, start + HOUR, 1, 1024, 60_000);
    negative["reservation-requests"]["reservation-request"][0]["capability"]["memory"] = json!(-1);
    let (status, body) = submit(
        &server,
        "alice",
        "dedicated",
        &new_id(&server, "alice"),
        &negative,
    );
    assert_eq!(status, 400, "{body}");

    // Another user may neither update nor delete Alice's reservation.
    let update = json!({
        "reservation-id": id,
        "reservation-definition": definition(start, start + HOUR, 1, 1024, 60_000),
    });
    let (status, body) = server.post_json_as(&format!("{BASE}/update"), &update, Some("mallory"));
    assert_eq!(status, 403, "{body}");
    assert!(message(&body).contains("not yours"), "{body}");
    let delete = json!({ "reservation-id": id });
    let (status, body) = server.post_json_as(&format!("{BASE}/delete"), &delete, Some("mallory"));
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        list(&server),
        before,
        "a refused update or delete changed the plan"
    );

    // An update the policy refuses leaves the old reservation as it was.
    let too_big = json!({
        "reservation-id": id,
        "reservation-definition": definition(start, start + HOUR, 40, 1024, 60_000),
    });
    let (status, body) = server.post_json_as(&format!("{BASE}/update"), &too_big, Some("alice"));
    assert_eq!(status, 400, "{body}");
    assert_eq!(list(&server), before);

    // Alice herself may.
    let (status, body) = server.post_json_as(&format!("{BASE}/delete"), &delete, Some("alice"));
    assert_eq!(status, 200, "{body}");
    assert!(list(&server)["reservations"].as_array().unwrap().is_empty());
}

#[test]
fn swapping_the_sharing_policy_governs_new_admissions_only() {
    let server = server_in(None);
    let start = now_ms() + 60_000;
    // 20 GB for 40 minutes: over capacity-over-time's average, within the plan.
    let over_average = definition(start, start + HOUR, 20, 1024, 40 * 60_000);
    let (status, body) = submit(
        &server,
        "alice",
        "dedicated",
        &new_id(&server, "alice"),
        &over_average,
    );
    assert_eq!(status, 400, "{body}");

    let (status, body) = server.put("/ws/v1/policies/sharing?builtin=no-overcommit", b"");
    assert_eq!(status, 200, "{body}");
    let (status, body) = submit(
        &server,
        "alice",
        "dedicated",
        &new_id(&server, "alice"),
        &over_average,
    );
    assert_eq!(status, 202, "no-overcommit admits it: {body}");

    // Back to capacity-over-time: the admitted reservation stands, and a
    // second one like it is refused.
    let (status, body) = server.put("/ws/v1/policies/sharing?builtin=capacity-over-time", b"");
    assert_eq!(status, 200, "{body}");
    let (status, body) = submit(
        &server,
        "alice",
        "dedicated",
        &new_id(&server, "alice"),
        &definition(start, start + HOUR, 1, 1024, 60_000),
    );
    assert_eq!(status, 400, "{body}");
    assert_eq!(list(&server)["reservations"].as_array().unwrap().len(), 1);
}

#[test]
fn a_queue_may_name_its_own_sharing_policy() {
    // YARN's class name for NoOverCommitPolicy: this queue ignores the averages.
    let policy = "yarn.scheduler.capacity.root.dedicated.reservation-policy=\
                  org.apache.hadoop.yarn.server.resourcemanager.reservation.NoOverCommitPolicy";
    let server = server_with(None, &[policy.to_string()]);
    let start = now_ms() + 60_000;
    let over_average = definition(start, start + HOUR, 20, 1024, 40 * 60_000);
    let (status, body) = submit(
        &server,
        "alice",
        "dedicated",
        &new_id(&server, "alice"),
        &over_average,
    );
    assert_eq!(status, 202, "{body}");

    // A policy that cannot be loaded stops the start, naming the property.
    let dir = tempfile::tempdir().unwrap();
    let output = crate::support::weft(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        dir.path().to_str().unwrap(),
        "--set",
        "yarn.scheduler.capacity.root.queues=default",
        "--set",
        "yarn.scheduler.capacity.root.default.capacity=100",
        "--set",
        "yarn.scheduler.capacity.root.default.reservable=true",
        "--set",
        "yarn.scheduler.capacity.root.default.reservation-policy=builtin:nope",
    ]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("yarn.scheduler.capacity.root.default.reservation-policy"),
        "{stderr}"
    );
}

#[test]
fn reservations_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("data");
    let start = now_ms() + 60_000;
    let server = server_in(Some(&data_dir));
    let first = new_id(&server, "alice");
    let (status, body) = submit(
        &server,
        "alice",
        "dedicated",
        &first,
        &definition(start, start + HOUR, 4, 1024, 60_000),
    );
    assert_eq!(status, 202, "{body}");
    let before = list(&server);
    server.stop();

    let server = server_in(Some(&data_dir));
    assert_eq!(list(&server), before);
    // Ids handed out before the restart are not handed out again.
    assert_ne!(new_id(&server, "alice"), first);
    server.kill();
}

#[test]
fn the_cli_submits_lists_and_deletes_reservations() {
    let server = server_in(None);
    let dir = tempfile::tempdir().unwrap();
    let start = now_ms() + 60_000;
    let file = dir.path().join("etl.json");
    std::fs::write(
        &file,
        definition(start, start + HOUR, 4, 1024, 60_000).to_string(),
    )
    .unwrap();
    let file = file.to_str().unwrap();
    let remote = ["--server", server.base.as_str(), "--user", "alice"];

    let run = |args: &[&str]| {
        let output = crate::support::weft(&[args, &remote[..]].concat());
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).trim().to_string(),
            String::from_utf8_lossy(&output.stderr).to_string(),
        )
    };
    let (ok, id, stderr) = run(&["reservation", "submit", file, "--queue", "dedicated"]);
    assert!(ok, "{stderr}");
    assert!(id.starts_with("reservation_"), "{id}");
    let (ok, listed, stderr) = run(&[
        "reservation",
        "list",
        "--queue",
        "dedicated",
        "--allocations",
    ]);
    assert!(ok, "{stderr}");
    let listed: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed["reservations"][0]["reservation-id"], id.as_str());

    // A bad definition: the server's reason, a non-zero exit, nothing added.
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        definition(start + HOUR, start, 1, 1024, 1000).to_string(),
    )
    .unwrap();
    let (ok, _, stderr) = run(&[
        "reservation",
        "submit",
        bad.to_str().unwrap(),
        "--queue",
        "dedicated",
    ]);
    assert!(!ok);
    assert!(
        stderr.contains("400") && stderr.contains("deadline"),
        "{stderr}"
    );
    assert_eq!(list(&server)["reservations"].as_array().unwrap().len(), 1);

    let (ok, out, stderr) = run(&["reservation", "delete", &id]);
    assert!(ok, "{stderr}");
    assert_eq!(out, format!("deleted {id}"));
    assert!(list(&server)["reservations"].as_array().unwrap().is_empty());
}

#[test]
fn refresh_queues_keeps_reservations_and_refuses_to_lose_one() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("queues.toml");
    let write = |reservable: bool, window: i64| {
        std::fs::write(
            &file,
            format!(
                "[yarn.scheduler.capacity.root]\nqueues = \"default,dedicated\"\n\
                 [yarn.scheduler.capacity.root.default]\ncapacity = 50\n\
                 [yarn.scheduler.capacity.root.dedicated]\ncapacity = 50\n\
                 reservable = {reservable}\nreservation-window = {window}\n"
            ),
        )
        .unwrap();
    };
    write(true, HOUR);
    let server = Server::start(&[
        "--sim-nodes",
        "10x10240mb,10vcores",
        "--queues",
        file.to_str().unwrap(),
    ]);
    let start = now_ms() + 60_000;
    let first = new_id(&server, "alice");
    let (status, body) = submit(
        &server,
        "alice",
        "dedicated",
        &first,
        &definition(start, start + HOUR, 2, 1024, 60_000),
    );
    assert_eq!(status, 202, "{body}");
    let before = list(&server);
    let unused = new_id(&server, "alice");

    // Making the queue not reservable would lose the reservation: refused.
    write(false, HOUR);
    let (status, body) = server.post("/ws/v1/admin/refresh-queues");
    assert_eq!(status, 400, "{body}");
    assert!(message(&body).contains("would be lost"), "{body}");
    assert_eq!(list(&server), before);

    // A new window is fine; the reservation is still there.
    write(true, 2 * HOUR);
    let (status, body) = server.post("/ws/v1/admin/refresh-queues");
    assert_eq!(status, 200, "{body}");
    assert_eq!(list(&server), before);
    // Ids handed out before the refresh, used or not, are not handed out again.
    let after = new_id(&server, "alice");
    assert!(after != first && after != unused, "{after}");
}
