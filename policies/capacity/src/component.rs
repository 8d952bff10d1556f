//! The WebAssembly glue: WIT types in, the functions of `lib.rs` out.

#![allow(unsafe_code)] // the code wit-bindgen generates

use crate::Capacity;

wit_bindgen::generate!({ world: "scheduling-policy", path: "../../wit" });

use exports::weft::policy::scheduling::{Containers, Guest as Scheduling, Placements, Snapshot};
use weft::policy::types::PolicyKind;

struct Component;

impl Guest for Component {
    fn describe() -> PolicyInfo {
        PolicyInfo {
            name: "capacity".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            kind: PolicyKind::Scheduling,
        }
    }

    fn configure(params: Vec<(String, String)>) -> Result<(), String> {
        // Nothing to keep: the queue tree comes with every snapshot.
        Capacity::from_params(&params).map(|_| ())
    }
}

/// The columns move into the native records: no copy of the snapshot.
fn native(snapshot: Snapshot) -> crate::Snapshot {
    let Snapshot {
        now_ms,
        nodes,
        queues,
        apps,
        asks,
    } = snapshot;
    crate::Snapshot {
        now_ms,
        nodes: crate::Nodes {
            free_memory_mb: nodes.free_memory_mb,
            free_vcores: nodes.free_vcores,
            free_gpus: nodes.free_gpus,
            capacity_memory_mb: nodes.capacity_memory_mb,
            capacity_vcores: nodes.capacity_vcores,
            capacity_gpus: nodes.capacity_gpus,
        },
        queues: crate::Queues {
            parent: queues.parent,
            capacity: queues.capacity,
            maximum_capacity: queues.maximum_capacity,
            minimum_user_limit_percent: queues.minimum_user_limit_percent,
            user_limit_factor: queues.user_limit_factor,
            fair: queues.fair,
            used_memory_mb: queues.used_memory_mb,
            used_vcores: queues.used_vcores,
            used_gpus: queues.used_gpus,
        },
        apps: crate::Apps {
            queue: apps.queue,
            user: apps.user,
            priority: apps.priority,
            submit_time_ms: apps.submit_time_ms,
            used_memory_mb: apps.used_memory_mb,
            used_vcores: apps.used_vcores,
            used_gpus: apps.used_gpus,
        },
        asks: crate::Asks {
            app: asks.app,
            pending: asks.pending,
            memory_mb: asks.memory_mb,
            vcores: asks.vcores,
            gpus: asks.gpus,
        },
    }
}

impl Scheduling for Component {
    fn schedule(snapshot: Snapshot) -> Placements {
        let placements = crate::schedule(&native(snapshot));
        Placements {
            ask: placements.ask,
            node: placements.node,
            count: placements.count,
        }
    }

    fn preempt(snapshot: Snapshot, running: Containers) -> Vec<u32> {
        let running = crate::Containers {
            app: running.app,
            node: running.node,
            memory_mb: running.memory_mb,
            vcores: running.vcores,
            gpus: running.gpus,
            start_time_ms: running.start_time_ms,
        };
        crate::preempt(&native(snapshot), &running)
    }
}

export!(Component);
