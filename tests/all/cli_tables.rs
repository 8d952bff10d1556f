//! The tables a person reads at the terminal (`weft queue list`, `weft node
//! list`), each with `--json` for scripts, against a live server: every
//! figure is the API's.

use serde_json::Value;

use crate::support::{Server, weft_stdout};

/// The row of the table whose first column is `name`, split into columns.
fn row<'a>(table: &'a str, name: &str) -> Vec<&'a str> {
    table
        .lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .find(|columns| columns.first() == Some(&name))
        .unwrap_or_else(|| panic!("no row {name} in\n{table}"))
}

#[test]
fn queue_and_node_tables_show_what_the_api_reports() {
    let server = Server::start(&[
        "--sim-nodes",
        "2x8192mb,8vcores",
        "--set",
        "yarn.scheduler.capacity.root.queues=default,batch",
        "--set",
        "yarn.scheduler.capacity.root.default.capacity=60",
        "--set",
        "yarn.scheduler.capacity.root.batch.capacity=40",
    ]);
    server.submit_to_for("batch", 3_600_000);
    server.wait_for("/ws/v1/cluster/scheduler", "the app to run", |b| {
        b["scheduler"]["schedulerInfo"]["resourcesUsed"]["memory"] == 1024
    });

    let table = weft_stdout(&["queue", "list", "--server", &server.base]);
    let (_, scheduler) = server.get("/ws/v1/cluster/scheduler");
    let root = &scheduler["scheduler"]["schedulerInfo"];
    let batch = root["queues"]["queue"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["queueName"] == "batch")
        .unwrap();
    let columns = row(&table, "batch");
    let percent = |v: &Value| format!("{:.1}", v.as_f64().unwrap());
    assert_eq!(columns[1], percent(&batch["capacity"]), "{table}");
    assert_eq!(columns[1], "40.0");
    assert_eq!(columns[3], percent(&batch["absoluteCapacity"]));
    assert_eq!(columns[5], percent(&batch["usedCapacity"]));
    assert_eq!(columns[6], percent(&batch["absoluteUsedCapacity"]));
    // The resource it uses the most of (YARN's dominant resource): 1 GB of
    // 16 GB and 1 of 16 vcores are equal shares, and memory comes first.
    assert_eq!(columns[7], "memory", "{table}");
    assert_eq!(batch["dominantResource"], "memory", "{batch}");
    assert_eq!(columns[8], "1", "one app: {table}");
    assert_eq!(columns[9], "1024");
    assert_eq!(row(&table, "default")[9], "0");
    assert!(
        table.contains("\n  batch "),
        "children are indented: {table}"
    );

    let json: Value = serde_json::from_str(&weft_stdout(&[
        "queue",
        "list",
        "--json",
        "--server",
        &server.base,
    ]))
    .unwrap();
    assert_eq!(json["queueName"], "root");
    assert_eq!(json["queues"], root["queues"]);

    let table = weft_stdout(&["node", "list", "--server", &server.base]);
    let columns = row(&table, "sim-0001:8041");
    assert_eq!(columns[1], "RUNNING", "{table}");
    let (_, nodes) = server.get("/ws/v1/cluster/nodes");
    let first = &nodes["nodes"]["node"][0];
    assert_eq!(columns[3], "/default-rack", "{table}");
    assert_eq!(columns[4], "-", "no label: {table}");
    assert_eq!(columns[5], first["usedMemoryMB"].to_string(), "{table}");
    assert_eq!(columns[6], first["availMemoryMB"].to_string(), "{table}");
    server.stop();
}
