//! `weft reservation submit|update|list|delete`: YARN's reservation REST API
//! from the command line, against a running server.

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Subcommand;
use serde_json::{Value, json};

use crate::client::{Client, ServerArgs};

#[derive(Debug, Subcommand)]
pub(super) enum ReservationCommand {
    /// Submit a reservation: FILE holds YARN's `reservation-definition`
    /// object, or a whole submission (queue, reservation-id, reservation-definition).
    Submit {
        file: PathBuf,
        /// The reservable queue (else the file's `queue`).
        #[arg(long)]
        queue: Option<String>,
        /// The reservation id (else the file's, else a new one from the server).
        #[arg(long)]
        id: Option<String>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Replace a reservation's definition with FILE's.
    Update {
        id: String,
        file: PathBuf,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// List reservations (YARN's filters).
    List {
        #[arg(long)]
        queue: Option<String>,
        #[arg(long)]
        id: Option<String>,
        /// Only reservations ending at or after this time (ms since the epoch).
        #[arg(long)]
        start_time: Option<i64>,
        /// Only reservations starting at or before this time (ms since the epoch).
        #[arg(long)]
        end_time: Option<i64>,
        /// Include each reservation's resource allocations.
        #[arg(long)]
        allocations: bool,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Delete a reservation.
    Delete {
        id: String,
        #[command(flatten)]
        server: ServerArgs,
    },
}

const BASE: &str = "/ws/v1/cluster/reservation";

pub(super) fn run(command: ReservationCommand) -> anyhow::Result<()> {
    match command {
        ReservationCommand::Submit {
            file,
            queue,
            id,
            server,
        } => {
            let client = server.client()?;
            let file_json = read_json(&file)?;
            let (file_queue, file_id, definition) = split_submission(file_json);
            let Some(queue) = queue.or(file_queue) else {
                bail!(
                    "no queue: give --queue or a \"queue\" in {}",
                    file.display()
                );
            };
            let id = match id.or(file_id) {
                Some(id) => id,
                None => new_reservation_id(&client)?,
            };
            let body = json!({
                "queue": queue,
                "reservation-id": id,
                "reservation-definition": definition,
            });
            client.post_json(&format!("{BASE}/submit"), &body)?;
            println!("{id}");
            Ok(())
        }
        ReservationCommand::Update { id, file, server } => {
            let (_, _, definition) = split_submission(read_json(&file)?);
            let body = json!({ "reservation-id": id, "reservation-definition": definition });
            server
                .client()?
                .post_json(&format!("{BASE}/update"), &body)?;
            println!("updated {id}");
            Ok(())
        }
        ReservationCommand::List {
            queue,
            id,
            start_time,
            end_time,
            allocations,
            server,
        } => {
            let mut query = vec![format!("include-resource-allocations={allocations}")];
            let mut add = |name: &str, value: Option<String>| {
                if let Some(value) = value {
                    query.push(format!("{name}={}", urlencode(&value)));
                }
            };
            add("queue", queue);
            add("reservation-id", id);
            add("start-time", start_time.map(|t| t.to_string()));
            add("end-time", end_time.map(|t| t.to_string()));
            let answer = server
                .client()?
                .get(&format!("{BASE}/list?{}", query.join("&")))?;
            println!("{}", serde_json::to_string_pretty(&answer)?);
            Ok(())
        }
        ReservationCommand::Delete { id, server } => {
            let body = json!({ "reservation-id": id });
            server
                .client()?
                .post_json(&format!("{BASE}/delete"), &body)?;
            println!("deleted {id}");
            Ok(())
        }
    }
}

fn read_json(file: &PathBuf) -> anyhow::Result<Value> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not JSON", file.display()))
}

/// (queue, reservation id, definition) of a whole submission, or (None,
/// None, the file) when the file is the definition alone.
fn split_submission(file: Value) -> (Option<String>, Option<String>, Value) {
    match file.get("reservation-definition") {
        Some(definition) => (
            file.get("queue").and_then(Value::as_str).map(String::from),
            file.get("reservation-id")
                .and_then(Value::as_str)
                .map(String::from),
            definition.clone(),
        ),
        None => (None, None, file),
    }
}

fn new_reservation_id(client: &Client) -> anyhow::Result<String> {
    let answer = client.post(&format!("{BASE}/new-reservation"))?;
    answer["reservation-id"]
        .as_str()
        .map(String::from)
        .context("new-reservation answered without a reservation-id")
}

/// Percent-encodes what a query value must not carry raw.
fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}
