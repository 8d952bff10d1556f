//! The WebAssembly glue: WIT types in, the functions of `lib.rs` out, plus
//! the count of `schedule` calls that decides when the fault starts.

#![allow(unsafe_code)] // the code wit-bindgen generates

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::FaultyScheduling;

wit_bindgen::generate!({ world: "scheduling-policy", path: "../../../wit" });

use exports::weft::policy::scheduling::{Containers, Guest as Scheduling, Placements, Snapshot};
use weft::policy::types::PolicyKind;

/// Settings from the last successful `configure`; defaults (no fault) until then.
static SETTINGS: Mutex<Option<FaultyScheduling>> = Mutex::new(None);

/// `schedule` calls since the last successful `configure`.
static CALLS: AtomicU64 = AtomicU64::new(0);

fn settings() -> FaultyScheduling {
    SETTINGS.lock().unwrap().clone().unwrap_or_default()
}

struct Component;

impl Guest for Component {
    fn describe() -> PolicyInfo {
        PolicyInfo {
            name: "faulty-scheduling".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            kind: PolicyKind::Scheduling,
        }
    }

    fn configure(params: Vec<(String, String)>) -> Result<(), String> {
        let settings = FaultyScheduling::from_params(&params)?;
        *SETTINGS.lock().unwrap() = Some(settings);
        CALLS.store(0, Ordering::Relaxed);
        Ok(())
    }
}

impl Scheduling for Component {
    fn schedule(snapshot: Snapshot) -> Placements {
        // Counted before the call runs, so the fault starts on call `after + 1`.
        let calls_before = CALLS.fetch_add(1, Ordering::Relaxed);
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
        let placements = settings().schedule(calls_before, &nodes, &asks);
        Placements {
            ask: placements.ask,
            node: placements.node,
            count: placements.count,
        }
    }

    fn preempt(_snapshot: Snapshot, _running: Containers) -> Vec<u32> {
        // The faults are all in `schedule`; this never preempts.
        Vec::new()
    }
}

export!(Component);
