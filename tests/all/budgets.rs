//! Budgets enforced by the resource manager and accounting, through the
//! real binary: with refuse-new a project at zero cannot start work and its
//! pending app says why, a grant lets it run; with stop-running its running
//! containers are preempted; every ended app has one accounting record, and
//! an exported CSV matches the ledger to the credit; grants and records
//! survive a restart; bad requests are refused by name.

use serde_json::{Value, json};

use crate::support::{Server, weft, weft_stdout};

/// An app of `count` 1 GB, 1 vcore containers of `duration_ms` for `project`.
fn app(project: &str, count: u32, duration_ms: u64) -> Value {
    json!({
        "name": "budgeted", "queue": "default", "user": "alice", "project": project,
        "asks": [{"count": count, "memory_mb": 1024, "vcores": 1, "duration_ms": duration_ms}]
    })
}

fn budget<'a>(budgets: &'a Value, project: &str) -> &'a Value {
    budgets["projects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["project"] == project)
        .unwrap_or_else(|| panic!("no project {project} in {budgets}"))
}

const QUOTA: [&str; 6] = [
    "--set",
    "yarn.resourcemanager.quota.scheduling.period=100",
    "--set",
    "yarn.resourcemanager.quota.min.runtime=0",
    "--set",
    "weft.scheduler.interval-ms=50",
];

#[test]
fn refuse_new_holds_a_project_at_zero_until_a_grant_and_accounting_matches_the_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut args = vec![
        "--sim-nodes",
        "1x8192mb,8vcores",
        "--set",
        "weft.quota.budget.enforce=refuse-new",
        "--set",
        "weft.quota.budget.warn-credits=50",
        "--set",
        "yarn.admin.acl=admin",
    ];
    args.extend(QUOTA);
    let server = Server::start_in(&data, &args);
    let admin = Some("admin");

    // No credits: refused at submission, saying the balance.
    let (status, body) =
        server.post_json_as("/ws/v1/cluster/apps", &app("p1", 1, 100), Some("alice"));
    assert_eq!(status, 403, "{body}");
    let message = body["RemoteException"]["message"].as_str().unwrap();
    assert!(
        message.contains("no credits left") && message.contains("balance 0.00"),
        "{message}"
    );

    // Only administrators grant; a grant is bounded and names what it refuses.
    let grant = |project: &str, body: Value, user: Option<&str>| {
        server.post_json_as(
            &format!("/ws/v1/quota/projects/{project}/grant"),
            &body,
            user,
        )
    };
    assert_eq!(grant("p1", json!({"credits": 5}), Some("alice")).0, 403);
    for (bad, field) in [
        (json!({"credits": -1}), "credits"),
        (json!({"credits": 0}), "credits"),
        (json!({"credits": 1e13}), "credits"),
        (json!({"credits": "many"}), "credits"),
        (json!({"credits": 1, "note": "x"}), "note"),
    ] {
        let (status, body) = grant("p1", bad.clone(), admin);
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(body.to_string().contains(field), "{bad}: {body}");
    }
    let long = "x".repeat(300);
    assert_eq!(grant(&long, json!({"credits": 1}), admin).0, 400);

    // 3 credits: 8 of 20 one-second containers start, the credits run out
    // (1 credit per second each), and the other 12 wait for a grant.
    let output = weft(&[
        "quota",
        "grant",
        "p1",
        "3",
        "--server",
        &server.base,
        "--user",
        "admin",
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let (status, body) =
        server.post_json_as("/ws/v1/cluster/apps", &app("p1", 20, 1500), Some("alice"));
    assert_eq!(status, 202, "{body}");
    let id = body["app"]["id"].as_str().unwrap().to_string();
    let path = format!("/ws/v1/cluster/apps/{id}");
    let held = server.wait_for(&path, "the app held for its budget", |b| {
        b["app"]["runningContainers"] == 0
            && b["app"]["diagnostics"]
                .as_str()
                .is_some_and(|r| r.starts_with("budget exhausted"))
    });
    let reason = held["app"]["diagnostics"].as_str().unwrap();
    assert!(
        reason.contains("project p1 has -") && reason.contains("weft quota grant p1"),
        "{reason}"
    );
    assert_eq!(held["app"]["finishedContainers"], 8, "{held}");
    // Held, and stays held: nothing more is placed.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let (_, still) = server.get(&path);
    assert_eq!(still["app"]["runningContainers"], 0, "{still}");
    assert_eq!(still["app"]["finishedContainers"], 8, "{still}");
    let (status, body) =
        server.post_json_as("/ws/v1/cluster/apps", &app("p1", 1, 100), Some("alice"));
    assert_eq!(status, 403, "{body}");

    let (_, budgets) = server.get("/ws/v1/quota/budgets");
    assert_eq!(budgets["enforce"], "refuse-new");
    assert_eq!(budget(&budgets, "p1")["state"], "exhausted", "{budgets}");
    let metrics = server.metrics();
    assert!(
        metrics.contains("weft_project_budget_exhausted{project=\"p1\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("weft_project_budget_low{project=\"p1\"} 1"),
        "{metrics}"
    );
    let table = weft_stdout(&["quota", "list", "--server", &server.base]);
    let row = table
        .lines()
        .find(|l| l.starts_with("p1 "))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(row.ends_with("exhausted"), "{table}");

    // A grant lets it run to its end.
    assert_eq!(grant("p1", json!({"credits": 1000}), admin).0, 200);
    let done = server.wait_for(&path, "the app to finish", |b| {
        b["app"]["state"] == "FINISHED"
    });
    assert_eq!(done["app"]["finishedContainers"], 20, "{done}");
    let (_, budgets) = server.get("/ws/v1/quota/budgets");
    assert_eq!(budget(&budgets, "p1")["state"], "ok", "{budgets}");

    // One record per ended app; its credits are the app's, the CSV's sum the ledger's.
    let (_, projects) = server.get("/ws/v1/quota/projects");
    let used = projects["p1"]["total_used"].as_f64().unwrap();
    let (status, page) = server.get_as("/ws/v1/accounting?project=p1", admin);
    assert_eq!(status, 200, "{page}");
    let records = page["records"].as_array().unwrap();
    assert_eq!(records.len(), 1, "{page}");
    let record = &records[0];
    assert_eq!(record["appId"], id.as_str());
    assert_eq!(record["user"], "alice");
    assert_eq!(record["finalStatus"], "SUCCEEDED");
    assert_eq!(record["containersRun"], 20);
    assert_eq!(
        record["memorySeconds"], done["app"]["memorySeconds"],
        "{record} {done}"
    );
    assert_eq!(record["vcoreSeconds"], done["app"]["vcoreSeconds"]);
    assert_eq!(
        record["memorySeconds"],
        20 * 1024 * 3 / 2,
        "20 containers of 1 GB for 1.5 s"
    );
    assert_eq!(record["credits"], done["app"]["credits"]);
    let (status, csv) = server.get_as("/ws/v1/accounting?project=p1&format=csv", admin);
    assert_eq!(status, 200);
    let csv = csv.as_str().unwrap().to_string();
    let sum: f64 = csv
        .lines()
        .skip(1)
        .map(|line| line.rsplit(',').next().unwrap().parse::<f64>().unwrap())
        .sum();
    assert!(
        (sum - used).abs() < 1e-6,
        "CSV credits {sum}, ledger {used}\n{csv}"
    );

    // The CLI's export, a page at a time, is the API's CSV; JSON lines too.
    let exported = weft_stdout(&[
        "accounting",
        "export",
        "--project",
        "p1",
        "--page-size",
        "1",
        "--server",
        &server.base,
        "--user",
        "admin",
    ]);
    assert_eq!(exported, csv);
    let lines = weft_stdout(&[
        "accounting",
        "export",
        "--format",
        "jsonl",
        "--server",
        &server.base,
        "--user",
        "admin",
    ]);
    let parsed: Vec<Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(parsed, records.to_vec());

    // Users read their own records only; bad queries are refused by name.
    assert_eq!(
        server.get_as("/ws/v1/accounting", Some("alice")).1["records"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert!(
        server.get_as("/ws/v1/accounting", Some("bob")).1["records"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        server.get_as("/ws/v1/accounting?user=alice", Some("bob")).0,
        403
    );
    for (query, field) in [
        ("from=yesterday", "from"),
        ("to=-1", "to"),
        ("format=xml", "format"),
        ("limit=0", "limit"),
        ("limit=10001", "limit"),
        ("after=x", "after"),
        ("projet=p1", "projet"),
    ] {
        let (status, body) = server.get_as(&format!("/ws/v1/accounting?{query}"), admin);
        assert_eq!(status, 400, "{query}: {body}");
        assert!(body.to_string().contains(field), "{query}: {body}");
    }
    let (_, later) = server.get_as("/ws/v1/accounting?from=2999-01-01", admin);
    assert!(later["records"].as_array().unwrap().is_empty());

    // `quota show`: the balance, the day's use, the grants.
    let shown = weft_stdout(&["quota", "show", "p1", "--server", &server.base]);
    assert!(
        shown.contains("1000.00") && shown.contains("3.00") && shown.contains("admin"),
        "{shown}"
    );
    assert!(shown.contains("alice"), "daily use per user: {shown}");
    server.stop();

    // A restart keeps the records and the grants.
    let server = Server::start_in(&data, &args);
    let (_, page) = server.get_as("/ws/v1/accounting?project=p1", admin);
    assert_eq!(page["records"].as_array().unwrap(), records);
    let (_, detail) = server.get("/ws/v1/quota/projects/p1");
    assert_eq!(detail["grants"].as_array().unwrap().len(), 2, "{detail}");
    assert_eq!(detail["grants"][0]["credits"], 1000.0);
    // With no projects file any project may be charged: one never charged
    // has the default credits (none here).
    let (status, unseen) = server.get("/ws/v1/quota/projects/never-seen");
    assert_eq!(status, 200, "{unseen}");
    assert_eq!(unseen["remaining"], 0.0);
    assert_eq!(unseen["state"], "exhausted");
    server.stop();
}

#[test]
fn stop_running_preempts_a_project_at_zero_and_accounting_can_be_off() {
    let mut args = vec![
        "--sim-nodes",
        "1x8192mb,8vcores",
        "--set",
        "weft.quota.budget.enforce=stop-running",
        "--set",
        "weft.accounting.enabled=false",
    ];
    args.extend(QUOTA);
    let server = Server::start(&args);
    assert_eq!(
        server
            .post_json("/ws/v1/quota/projects/p2/grant", &json!({"credits": 2}))
            .0,
        200
    );
    let (status, body) = server.post_json("/ws/v1/cluster/apps", &app("p2", 4, 600_000));
    assert_eq!(status, 202, "{body}");
    let id = body["app"]["id"].as_str().unwrap().to_string();
    let path = format!("/ws/v1/cluster/apps/{id}");
    // 4 credits a second against 2: within a second all four are stopped,
    // charged to their end, and wait for a grant.
    let stopped = server.wait_for(&path, "the containers stopped", |b| {
        b["app"]["preemptedContainers"] == 4 && b["app"]["runningContainers"] == 0
    });
    assert_eq!(stopped["app"]["state"], "RUNNING", "{stopped}");
    let (_, projects) = server.get("/ws/v1/quota/projects");
    let remaining = projects["p2"]["remaining"].as_f64().unwrap();
    assert!(
        remaining <= 0.0 && remaining > -2.0,
        "charged to their end: {projects}"
    );
    assert!(server.metrics().contains("weft_budget_preemptions_total 4"));

    server.post_json("/ws/v1/quota/projects/p2/grant", &json!({"credits": 1000}));
    server.wait_for(&path, "the containers to run again", |b| {
        b["app"]["runningContainers"] == 4
    });

    let (status, body) = server.get("/ws/v1/accounting");
    assert_eq!(status, 503, "{body}");
    assert!(
        body.to_string().contains("weft.accounting.enabled"),
        "{body}"
    );
    server.stop();
}

/// A quote is the pricing policy's price of an app before it is submitted:
/// `POST /ws/v1/quota/quote` and `weft app run --quote` answer it, checked
/// as a submission; with budgets enforced, an app whose containers'
/// minimum runtime alone would cost more than its project has left is
/// refused at submission, saying both figures.
#[test]
fn quotes_price_an_app_before_it_runs_and_budgets_refuse_what_cannot_be_paid() {
    let args = [
        "--sim-nodes",
        "1x8192mb,8vcores",
        "--set",
        "weft.quota.budget.enforce=refuse-new",
        "--set",
        "yarn.admin.acl=admin",
        "--set",
        // Ten seconds at least, each container.
        "yarn.resourcemanager.quota.min.runtime=10000",
    ];
    let server = Server::start(&args);
    // The bundled flat price: one credit a second per vcore or GB.
    let (status, quote) = server.post_json_as(
        "/ws/v1/quota/quote",
        &json!({"app": app("p1", 3, 60_000), "duration_ms": 20_000}),
        Some("alice"),
    );
    assert_eq!(status, 200, "{quote}");
    assert_eq!(quote["credits"], 60.0, "3 containers × 20 s × 1: {quote}");
    assert_eq!(quote["asks"][0]["duration_ms"], 20_000);
    assert_eq!(quote["project"], "p1");
    // Shorter than the minimum runtime: quoted for the minimum.
    let (_, short) = server.post_json_as(
        "/ws/v1/quota/quote",
        &json!({"app": app("p1", 1, 1000)}),
        Some("alice"),
    );
    assert_eq!(short["credits"], 10.0, "{short}");
    // Checked as a submission: bounds, queues and unknown fields by name.
    let mut huge = app("p1", 1, 1000);
    huge["asks"][0]["memory_mb"] = json!(65_536);
    for (bad, words) in [
        (
            json!({"app": app("p1", 1, 1000), "duration_ms": 0}),
            "duration_ms",
        ),
        (
            json!({"app": {"queue": "nope", "project": "p", "asks": [{"count": 1, "memory_mb": 1, "vcores": 1, "duration_ms": 1}]}}),
            "nope",
        ),
        (json!({"app": app("p1", 1, 1000), "extra": 1}), "extra"),
        // Bigger than any node, as a submission refuses it.
        (json!({"app": huge}), "65536"),
    ] {
        let (status, body) = server.post_json_as("/ws/v1/quota/quote", &bad, Some("alice"));
        assert_eq!(status, 400, "{bad}: {body}");
        let message = body["RemoteException"]["message"]
            .as_str()
            .unwrap_or_default();
        assert!(message.contains(words), "{bad}: {message}");
    }
    // On someone's behalf only for an administrator, as a submission.
    let mut bobs = app("p1", 1, 1000);
    bobs["user"] = json!("bob");
    let (status, body) =
        server.post_json_as("/ws/v1/quota/quote", &json!({"app": bobs}), Some("alice"));
    assert_eq!(status, 403, "{body}");
    // The CLI prints the same figures and submits nothing.
    let printed = weft_stdout(&[
        "app",
        "run",
        "--server",
        &server.base,
        "--project",
        "p1",
        "-n",
        "3",
        "--memory",
        "1gb",
        "--quote",
        "20",
        "--",
        "/bin/true",
    ]);
    assert!(
        printed.starts_with("60.00 credits (project p1"),
        "{printed}"
    );
    let (_, apps) = server.get("/ws/v1/cluster/apps");
    assert!(
        apps["apps"].is_null() || apps["apps"]["app"].as_array().is_none_or(|a| a.is_empty()),
        "{apps}"
    );

    // 25 credits: one container's minimum (10) fits; a gang of three (30)
    // or one container of 4 GB and 4 vcores (40) could never start.
    let (status, _) = server.post_json_as(
        "/ws/v1/quota/projects/p1/grant",
        &json!({"credits": 25}),
        Some("admin"),
    );
    assert_eq!(status, 200);
    let mut gang = app("p1", 3, 100);
    gang["asks"][0]["gang"] = json!({"minimum": 3});
    let mut big = app("p1", 1, 100);
    big["asks"][0]["memory_mb"] = json!(4096);
    big["asks"][0]["vcores"] = json!(4);
    for (refused, cost) in [(gang, "30.00"), (big, "40.00")] {
        let (status, body) = server.post_json_as("/ws/v1/cluster/apps", &refused, Some("alice"));
        assert_eq!(status, 403, "{body}");
        let message = body["RemoteException"]["message"].as_str().unwrap();
        assert!(
            message.contains("25.00 credits left")
                && message.contains(&format!("would cost {cost}")),
            "{message}"
        );
    }
    // Three without a gang can start one at a time: accepted (the rounds
    // admit what the credits pay for).
    let (status, body) =
        server.post_json_as("/ws/v1/cluster/apps", &app("p1", 3, 100), Some("alice"));
    assert_eq!(status, 202, "{body}");
}
