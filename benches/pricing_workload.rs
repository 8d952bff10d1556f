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

/// Contexts the rows cycle through: eight apps of four projects, as a
/// server's batches have them (`charge` sees the context filled in).
const CONTEXTS: usize = 8;
/// Every row's interval ends here (a weekday, 22:13 UTC).
const NOW_MS: i64 = 1_700_000_000_000;

pub(crate) fn workload(n: usize) -> Workload {
    let seconds: Vec<f64> = (0..n).map(|i| 1.0 + (i % SECONDS_CYCLE) as f64).collect();
    let memory_mb: Vec<u64> = (0..n)
        .map(|i| MEMORY_UNIT_MB * (1 + (i % MEMORY_CYCLE) as u64))
        .collect();
    let vcores: Vec<u64> = (0..n).map(|i| 1 + (i % VCORES_CYCLE) as u64).collect();
    let gpus: Vec<u64> = (0..n).map(|i| u64::from(i % GPU_EVERY == 0)).collect();
    let start_ms: Vec<i64> = seconds
        .iter()
        .map(|s| NOW_MS - (s * 1000.0) as i64)
        .collect();
    let end_ms = vec![NOW_MS; n];
    let context: Vec<u32> = (0..n).map(|i| (i % CONTEXTS) as u32).collect();
    // (app, queue, user, project, type, tag, label)
    let fields = |i: usize| {
        (
            format!("application_1700000000000_{:04}", i + 1),
            format!("root.q{}", i % 2),
            format!("user{}", i % 3),
            ["ml", "web", "etl", "default"][i % 4].to_string(),
            "SPARK".to_string(),
            format!("team:{}", i % 4),
            if i.is_multiple_of(4) { "gpu" } else { "" }.to_string(),
        )
    };
    let host_contexts: Vec<weft_host::policy::ChargeContext> = (0..CONTEXTS)
        .map(|i| {
            let (app, queue, user, project, application_type, tag, node_label) = fields(i);
            weft_host::policy::ChargeContext {
                app,
                queue,
                user,
                project,
                application_type,
                application_tags: vec![tag],
                priority: (i % 3) as i32,
                node_label,
                node_attributes: vec![],
                execution_type: weft_host::policy::ExecutionType::Guaranteed,
                reservation: None,
            }
        })
        .collect();
    // The same contexts in the SDK's types.
    let native_contexts = host_contexts
        .iter()
        .map(|c| weft_policy::pricing::ChargeContext {
            app: c.app.clone(),
            queue: c.queue.clone(),
            user: c.user.clone(),
            project: c.project.clone(),
            application_type: c.application_type.clone(),
            application_tags: c.application_tags.clone(),
            priority: c.priority,
            node_label: c.node_label.clone(),
            ..Default::default()
        })
        .collect();
    Workload {
        native: weft_policy::pricing::Usage::new(weft_policy::pricing::wit::Usage {
            seconds: seconds.clone(),
            memory_mb: memory_mb.clone(),
            vcores: vcores.clone(),
            gpus: gpus.clone(),
            start_ms: start_ms.clone(),
            end_ms: end_ms.clone(),
            context: context.clone(),
            contexts: native_contexts,
        })
        .expect("a well-formed workload"),
        wit: Usage {
            seconds,
            memory_mb,
            vcores,
            gpus,
            start_ms,
            end_ms,
            context,
            contexts: host_contexts,
        },
    }
}
