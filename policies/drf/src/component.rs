//! The WebAssembly glue: WIT types in, the functions of `lib.rs` out.

#![allow(unsafe_code)] // the code wit-bindgen generates

use crate::Drf;

wit_bindgen::generate!({ world: "scheduling-policy", path: "../../wit" });

use exports::weft::policy::scheduling::{Containers, Guest as Scheduling, Placements, Snapshot};
use weft::policy::types::PolicyKind;

struct Component;

impl Guest for Component {
    fn describe() -> PolicyInfo {
        PolicyInfo {
            name: "drf".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            kind: PolicyKind::Scheduling,
        }
    }

    fn configure(params: Vec<(String, String)>) -> Result<(), String> {
        // DRF has no settings: this only refuses parameters it does not know.
        Drf::from_params(&params).map(|_| ())
    }
}

impl Scheduling for Component {
    fn schedule(snapshot: Snapshot) -> Placements {
        // The columns move into the native records: no copy of the snapshot.
        let Snapshot {
            nodes,
            queues,
            apps,
            asks,
            ..
        } = snapshot;
        let nodes = crate::Nodes {
            free_memory_mb: nodes.free_memory_mb,
            free_vcores: nodes.free_vcores,
            free_gpus: nodes.free_gpus,
            capacity_memory_mb: nodes.capacity_memory_mb,
            capacity_vcores: nodes.capacity_vcores,
            capacity_gpus: nodes.capacity_gpus,
        };
        let queues = crate::Queues {
            parent: queues.parent,
            capacity: queues.capacity,
            maximum_capacity: queues.maximum_capacity,
            used_memory_mb: queues.used_memory_mb,
            used_vcores: queues.used_vcores,
            used_gpus: queues.used_gpus,
        };
        let apps = crate::Apps {
            queue: apps.queue,
            user: apps.user,
            submit_time_ms: apps.submit_time_ms,
            used_memory_mb: apps.used_memory_mb,
            used_vcores: apps.used_vcores,
            used_gpus: apps.used_gpus,
        };
        let asks = crate::Asks {
            app: asks.app,
            pending: asks.pending,
            memory_mb: asks.memory_mb,
            vcores: asks.vcores,
            gpus: asks.gpus,
        };
        let placements = crate::schedule(&nodes, &queues, &apps, &asks);
        Placements {
            ask: placements.ask,
            node: placements.node,
            count: placements.count,
        }
    }

    fn preempt(_snapshot: Snapshot, _running: Containers) -> Vec<u32> {
        // DRF here only shares out free room; it never takes containers back.
        Vec::new()
    }
}

export!(Component);
