//! The containers both pricing benches price: the same mixed workload
//! `weft policy bench` uses, in the host's WIT shape and the SDK's.

use weft_host::policy::Usage;

/// The mixed workload (the same shape `weft policy bench` uses): container i
/// runs `1 + i % SECONDS_CYCLE` seconds, holds `MEMORY_UNIT_MB × (1 + i %
/// MEMORY_CYCLE)` MB and `1 + i % VCORES_CYCLE` vcores, and every
/// `GPU_EVERY`th container holds one GPU.
const SECONDS_CYCLE: usize = 10; // 1..=10 s
const MEMORY_UNIT_MB: u64 = 1024;
const MEMORY_CYCLE: usize = 8; // 1024..=8192 MB
const VCORES_CYCLE: usize = 4; // 1..=4 vcores
const GPU_EVERY: usize = 7;

/// One workload in both shapes: the host's WIT record and the policy crate's.
pub(crate) struct Workload {
    pub wit: Usage,
    pub native: weft_policy::pricing::Usage,
}

pub(crate) fn workload(n: usize) -> Workload {
    let seconds: Vec<f64> = (0..n).map(|i| 1.0 + (i % SECONDS_CYCLE) as f64).collect();
    let memory_mb: Vec<u64> = (0..n)
        .map(|i| MEMORY_UNIT_MB * (1 + (i % MEMORY_CYCLE) as u64))
        .collect();
    let vcores: Vec<u64> = (0..n).map(|i| 1 + (i % VCORES_CYCLE) as u64).collect();
    let gpus: Vec<u64> = (0..n).map(|i| u64::from(i % GPU_EVERY == 0)).collect();
    Workload {
        native: weft_policy::pricing::Usage::new(weft_policy::pricing::wit::Usage {
            seconds: seconds.clone(),
            memory_mb: memory_mb.clone(),
            vcores: vcores.clone(),
            gpus: gpus.clone(),
        })
        .expect("a well-formed workload"),
        wit: Usage {
            seconds,
            memory_mb,
            vcores,
            gpus,
        },
    }
}
