//! The WebAssembly glue: WIT types in, the functions of `lib.rs` out.

#![allow(unsafe_code)] // the code wit-bindgen generates

use std::sync::Mutex;

use crate::Fifo;

wit_bindgen::generate!({ world: "scheduling-policy", path: "../../wit" });

use exports::weft::policy::scheduling::{Containers, Guest as Scheduling, Placements, Snapshot};
use weft::policy::types::PolicyKind;

/// Settings from the last successful `configure`; defaults until then.
static SETTINGS: Mutex<Option<Fifo>> = Mutex::new(None);

fn settings() -> Fifo {
    SETTINGS.lock().unwrap().clone().unwrap_or_default()
}

struct Component;

impl Guest for Component {
    fn describe() -> PolicyInfo {
        PolicyInfo {
            name: "fifo".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            kind: PolicyKind::Scheduling,
        }
    }

    fn configure(params: Vec<(String, String)>) -> Result<(), String> {
        let fifo = Fifo::from_params(&params)?;
        *SETTINGS.lock().unwrap() = Some(fifo);
        Ok(())
    }
}

impl Scheduling for Component {
    fn schedule(snapshot: Snapshot) -> Placements {
        // The columns move into the native records: no copy of the snapshot.
        // FIFO reads only the nodes' free room and the asks; apps are in
        // submission order already, which is ascending app index.
        let nodes = crate::Nodes {
            free_memory_mb: snapshot.nodes.free_memory_mb,
            free_vcores: snapshot.nodes.free_vcores,
            free_gpus: snapshot.nodes.free_gpus,
        };
        let asks = crate::Asks {
            app: snapshot.asks.app,
            pending: snapshot.asks.pending,
            memory_mb: snapshot.asks.memory_mb,
            vcores: snapshot.asks.vcores,
            gpus: snapshot.asks.gpus,
        };
        let placements = crate::schedule(&nodes, &asks, settings().node_order);
        Placements {
            ask: placements.ask,
            node: placements.node,
            count: placements.count,
        }
    }

    fn preempt(_snapshot: Snapshot, _running: Containers) -> Vec<u32> {
        // First come, first served: whoever got a container keeps it.
        Vec::new()
    }
}

export!(Component);
