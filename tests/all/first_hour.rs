//! A new user's first hour, through the real binary: the rough edges a
//! newcomer met on the README's path, each checked where the user meets it —
//! budgets that read neutral when they are off, an ask bigger than any node
//! refused at submission, `--wait` saying why it waits, pending reasons
//! naming the limiting resource, a failed app's logs showing its stderr,
//! output cut short by a closed pipe, and the policy tables.

use std::io::Read as _;
use std::process::{Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::support::{Server, start_agent, weft_command, weft_within};

const LIMIT: Duration = Duration::from_secs(90);

/// `weft ARGS` against `server` (its `--server` before any `--`), within
/// `LIMIT`.
fn cli(server: &Server, args: &[&str]) -> Output {
    let split = args.iter().position(|a| *a == "--").unwrap_or(args.len());
    let mut all = args[..split].to_vec();
    all.extend_from_slice(&["--server", &server.base]);
    all.extend_from_slice(&args[split..]);
    weft_within(&all, LIMIT)
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A server whose one node is a real agent of 2048 MB and 2 vcores, with
/// budgets off (the default).
fn server_with_small_node(dir: &std::path::Path) -> (Server, crate::support::Stoppable) {
    let server = Server::start_in(
        &dir.join("data"),
        &[
            "--set",
            "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms=100",
        ],
    );
    let agent = start_agent(&server.base, dir, "2048mb,2vcores");
    server.wait_for("/ws/v1/cluster/nodes", "the agent", |b| {
        b["nodes"]["node"].as_array().is_some_and(|n| n.len() == 1)
    });
    (server, agent)
}

/// A server and its agent, stopped when dropped (the agent first).
struct Cluster {
    server: Server,
    _agent: crate::support::Stoppable,
    _dir: tempfile::TempDir,
}

impl Cluster {
    fn start() -> Cluster {
        let dir = crate::support::shared_tempdir();
        let (server, agent) = server_with_small_node(dir.path());
        Cluster {
            server,
            _agent: agent,
            _dir: dir,
        }
    }

    fn server(&self) -> &Server {
        &self.server
    }
}

#[test]
fn budgets_read_unenforced_not_exhausted_when_they_are_off() {
    let cluster = Cluster::start();
    let server = cluster.server();
    // One app charged (at least the minimum runtime) with budgets off: the
    // project is in debt, but nothing is exhausted or low.
    let ran = cli(server, &["app", "run", "--wait", "--", "echo", "hello"]);
    assert!(ran.status.success(), "{}", stderr(&ran));
    let table = stdout(&cli(server, &["quota", "list"]));
    let default = table
        .lines()
        .find(|line| line.starts_with("default "))
        .unwrap_or_else(|| panic!("no project default in\n{table}"));
    assert!(default.ends_with("unenforced"), "{table}");
    assert!(
        !table.contains("exhausted") && !table.contains(" low"),
        "{table}"
    );
    let (_, budgets) = server.get("/ws/v1/quota/budgets");
    assert_eq!(budgets["projects"][0]["state"], "unenforced", "{budgets}");
}

#[test]
fn asks_bigger_than_any_node_are_refused_at_submission() {
    let cluster = Cluster::start();
    let server = cluster.server();

    // Asks bigger than the only node are refused at submission, naming the
    // limit; nothing is left behind.
    let (_, before) = server.get("/ws/v1/cluster/apps");
    for (flags, names) in [
        (
            ["--memory", "64gb"],
            "65536 MB of memory per container, more than yarn.scheduler.maximum-allocation-mb allows: 2048 MB of memory (the largest node's)",
        ),
        (
            ["--vcores", "8"],
            "8 vcores per container, more than yarn.scheduler.maximum-allocation-vcores allows: 2 vcores",
        ),
        (
            ["--gpus", "1"],
            "1 GPUs per container, more than yarn.resource-types.yarn.io/gpu.maximum-allocation allows: 0 GPUs",
        ),
    ] {
        let mut args = vec!["app", "run", "--wait"];
        args.extend_from_slice(&flags);
        args.extend_from_slice(&["--", "true"]);
        let refused = cli(server, &args);
        assert!(!refused.status.success(), "{flags:?} was accepted");
        assert!(stderr(&refused).contains("400"), "{}", stderr(&refused));
        assert!(stderr(&refused).contains(names), "{}", stderr(&refused));
    }
    let (_, after) = server.get("/ws/v1/cluster/apps");
    assert_eq!(before, after, "a refused ask leaves no app");
}

#[test]
fn a_waiting_app_says_which_resource_it_waits_for() {
    let cluster = Cluster::start();
    let server = cluster.server();

    // Two containers take both vcores (half the memory): the next app waits,
    // and `--wait` says why, naming vcores with their figures.
    let busy = cli(server, &["app", "run", "-n", "2", "--", "sleep", "8"]);
    assert!(busy.status.success(), "{}", stderr(&busy));
    server.wait_for("/ws/v1/cluster/scheduler", "both containers", |b| {
        b["scheduler"]["schedulerInfo"]["resourcesUsed"]["vCores"] == 2
    });
    let queues = stdout(&cli(server, &["queue", "list"]));
    let default_row: Vec<&str> = queues
        .lines()
        .find(|line| line.trim_start().starts_with("default "))
        .unwrap_or_else(|| panic!("no queue default in\n{queues}"))
        .split_whitespace()
        .collect();
    assert_eq!(
        (default_row[6], default_row[7]),
        ("100.0", "vcores"),
        "{queues}"
    );
    let waited = cli(server, &["app", "run", "--wait", "--", "true"]);
    assert!(waited.status.success(), "{}", stderr(&waited));
    let said = stderr(&waited);
    assert!(
        said.contains("waits (position 1 in its queue): queue root.default is at its maximum capacity by vcores: vcores 2 of 2 used"),
        "{said}"
    );
}

#[test]
fn a_failed_apps_logs_show_both_streams_and_its_status_once() {
    let cluster = Cluster::start();
    let server = cluster.server();
    // A failed app: its status said once, and `app logs` shows what it
    // wrote on both streams.
    let failed = cli(
        server,
        &[
            "app",
            "run",
            "--wait",
            "--shell",
            "--",
            "echo to stdout; echo to stderr >&2; exit 3",
        ],
    );
    assert_eq!(failed.status.code(), Some(3), "{}", stderr(&failed));
    assert_eq!(
        stderr(&failed).matches("exited with status 3").count(),
        1,
        "{}",
        stderr(&failed)
    );
    let id = stdout(&failed).trim().to_string();
    let logs = cli(server, &["app", "logs", &id]);
    assert!(logs.status.success(), "{}", stderr(&logs));
    let printed = stdout(&logs);
    assert!(
        printed.contains("to stdout") && printed.contains("to stderr"),
        "{printed}"
    );
    let only_out = stdout(&cli(server, &["app", "logs", &id, "--stdout"]));
    assert!(
        only_out.contains("to stdout") && !only_out.contains("to stderr"),
        "{only_out}"
    );
}

#[test]
fn output_cut_short_by_a_closed_pipe_stops_quietly() {
    let server = Server::start(&["--sim-nodes", "1x8192mb,8vcores"]);
    let id = server.submit("demo", 1, 100);
    // Output cut short by its reader (`| head`): a quiet stop, as Unix
    // tools do — no panic, no backtrace.
    for args in [
        vec!["app", "list", "--json"],
        vec!["app", "status", id.as_str()],
        vec!["policy", "list", "--json"],
        vec!["queue", "list"],
    ] {
        let (status, said) = closed_pipe(&server, &args);
        assert!(!said.contains("panicked"), "{args:?}: {said}");
        assert!(
            status.success() || std::os::unix::process::ExitStatusExt::signal(&status) == Some(13),
            "{args:?} ended {status}: {said}"
        );
    }

    server.stop();
}

/// Runs `weft ARGS --server BASE` with its stdout a pipe whose reading end
/// is closed before it writes; returns how it ended and its stderr.
fn closed_pipe(server: &Server, args: &[&str]) -> (std::process::ExitStatus, String) {
    let mut child = weft_command()
        .args(args)
        .args(["--server", &server.base])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("weft starts");
    drop(child.stdout.take());
    let mut said = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut said)
        .unwrap();
    (child.wait().unwrap(), said)
}

#[test]
fn policy_list_and_shadow_show_print_tables_with_json_for_scripts() {
    let server = Server::start(&["--sim-nodes", "1x8192mb,8vcores"]);
    let listed = cli(&server, &["policy", "list"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    let table = stdout(&listed);
    let rows: Vec<Vec<&str>> = table
        .lines()
        .map(|line| line.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0][..3], ["KIND", "#", "STATE"], "{table}");
    for (kind, name) in [
        ("pricing", "hops-pricing"),
        ("scheduling", "capacity"),
        ("sharing", "capacity-over-time"),
    ] {
        assert!(
            rows.iter()
                .any(|row| row[..4] == [kind, "1", "active", name]),
            "{kind} {name} in\n{table}"
        );
    }
    assert!(rows.len() < 10, "a table, not a document:\n{table}");
    let json: Value =
        serde_json::from_str(&stdout(&cli(&server, &["policy", "list", "--json"]))).unwrap();
    assert_eq!(json["pricing"]["active"]["name"], "hops-pricing", "{json}");

    // A shadow beside the active pricing, one app charged under both.
    let loaded = cli(
        &server,
        &[
            "policy",
            "load",
            "pricing",
            "builtin:flat-pricing",
            "--shadow",
        ],
    );
    assert!(loaded.status.success(), "{}", stderr(&loaded));
    server.submit("demo", 2, 200);
    server.wait_for("/ws/v1/policies/pricing/shadow", "a shadow charge", |b| {
        b["pricing"]["projects"]
            .as_array()
            .is_some_and(|p| !p.is_empty())
    });
    let shown = cli(&server, &["policy", "shadow", "show", "pricing"]);
    assert!(shown.status.success(), "{}", stderr(&shown));
    let text = stdout(&shown);
    assert!(text.starts_with("pricing shadow: flat-pricing"), "{text}");
    let header = text
        .lines()
        .find(|line| line.starts_with("PROJECT"))
        .unwrap_or_else(|| panic!("no project table in\n{text}"));
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["PROJECT", "ACTIVE", "SHADOW", "DIFFERENCE"]
    );
    assert!(text.lines().any(|line| line.starts_with("demo ")), "{text}");
    assert!(text.lines().count() < 15, "{text}");
    let json: Value = serde_json::from_str(&stdout(&cli(
        &server,
        &["policy", "shadow", "show", "pricing", "--json"],
    )))
    .unwrap();
    assert_eq!(json["shadow"]["name"], "flat-pricing", "{json}");
    server.stop();
}
