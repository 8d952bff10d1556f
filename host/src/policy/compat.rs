//! The 0.2.0 adapter: a component built for weft:policy@0.2.0 is called
//! with what 0.3.0 sends, less what 0.2.0 did not have — the same columns,
//! in the same order, so it behaves exactly as before. Its answers are the
//! same records in both versions. `quote`, new in 0.3.0, is priced for it
//! through its own `charge`, one row per container.

use super::bindings::v0_2::pricing::exports::weft::policy::pricing as old_pricing;
use super::bindings::v0_2::pricing::weft::policy::types as old_types;
use super::bindings::v0_2::scheduling::exports::weft::policy::scheduling as old_scheduling;
use super::bindings::v0_2::sharing::exports::weft::policy::sharing as old_sharing;
use super::bindings::{
    Admission, Containers, Market, PlanSettings, PolicyInfo, PriceMultiplicators, QuoteRequest,
    Rejection, SharingResources, Snapshot, Timeline, Usage, WitPolicyKind,
};

/// The WIT version these components were built for.
pub(super) const VERSION: &str = "0.2.0";

pub(super) fn policy_info(info: old_types::PolicyInfo) -> PolicyInfo {
    PolicyInfo {
        name: info.name,
        version: info.version,
        kind: match info.kind {
            old_types::PolicyKind::Scheduling => WitPolicyKind::Scheduling,
            old_types::PolicyKind::Pricing => WitPolicyKind::Pricing,
            old_types::PolicyKind::Sharing => WitPolicyKind::Sharing,
        },
    }
}

pub(super) fn utilization(market: &Market) -> old_pricing::Utilization {
    let u = market.utilization;
    old_pricing::Utilization {
        memory: u.memory,
        vcores: u.vcores,
        gpus: u.gpus,
    }
}

pub(super) fn multiplicators_to_old(m: PriceMultiplicators) -> old_pricing::PriceMultiplicators {
    old_pricing::PriceMultiplicators {
        general: m.general,
        gpu: m.gpu,
    }
}

pub(super) fn multiplicators_from_old(m: old_pricing::PriceMultiplicators) -> PriceMultiplicators {
    PriceMultiplicators {
        general: m.general,
        gpu: m.gpu,
    }
}

pub(super) fn usage(usage: &Usage) -> old_pricing::Usage {
    old_pricing::Usage {
        seconds: usage.seconds.clone(),
        memory_mb: usage.memory_mb.clone(),
        vcores: usage.vcores.clone(),
        gpus: usage.gpus.clone(),
    }
}

/// A quote as one row of 0.2.0 usage: one container for the duration (the
/// answer is multiplied by the containers, as the host charges rows that
/// stand for several containers).
pub(super) fn quote_row(request: &QuoteRequest) -> old_pricing::Usage {
    old_pricing::Usage {
        seconds: vec![request.duration_ms.max(0) as f64 / 1000.0],
        memory_mb: vec![request.memory_mb],
        vcores: vec![request.vcores],
        gpus: vec![request.gpus],
    }
}

pub(super) fn snapshot(snapshot: &Snapshot) -> old_scheduling::Snapshot {
    let (nodes, queues, apps, asks) = (
        &snapshot.nodes,
        &snapshot.queues,
        &snapshot.apps,
        &snapshot.asks,
    );
    old_scheduling::Snapshot {
        now_ms: snapshot.now_ms,
        nodes: old_scheduling::Nodes {
            free_memory_mb: nodes.free_memory_mb.clone(),
            free_vcores: nodes.free_vcores.clone(),
            free_gpus: nodes.free_gpus.clone(),
            capacity_memory_mb: nodes.capacity_memory_mb.clone(),
            capacity_vcores: nodes.capacity_vcores.clone(),
            capacity_gpus: nodes.capacity_gpus.clone(),
        },
        queues: old_scheduling::Queues {
            parent: queues.parent.clone(),
            capacity: queues.capacity.clone(),
            maximum_capacity: queues.maximum_capacity.clone(),
            minimum_user_limit_percent: queues.minimum_user_limit_percent.clone(),
            user_limit_factor: queues.user_limit_factor.clone(),
            fair: queues.fair.clone(),
            used_memory_mb: queues.used_memory_mb.clone(),
            used_vcores: queues.used_vcores.clone(),
            used_gpus: queues.used_gpus.clone(),
        },
        apps: old_scheduling::Apps {
            queue: apps.queue.clone(),
            user: apps.user.clone(),
            priority: apps.priority.clone(),
            submit_time_ms: apps.submit_time_ms.clone(),
            used_memory_mb: apps.used_memory_mb.clone(),
            used_vcores: apps.used_vcores.clone(),
            used_gpus: apps.used_gpus.clone(),
        },
        asks: old_scheduling::Asks {
            app: asks.app.clone(),
            pending: asks.pending.clone(),
            memory_mb: asks.memory_mb.clone(),
            vcores: asks.vcores.clone(),
            gpus: asks.gpus.clone(),
        },
    }
}

pub(super) fn containers(running: &Containers) -> old_scheduling::Containers {
    old_scheduling::Containers {
        app: running.app.clone(),
        node: running.node.clone(),
        memory_mb: running.memory_mb.clone(),
        vcores: running.vcores.clone(),
        gpus: running.gpus.clone(),
        start_time_ms: running.start_time_ms.clone(),
    }
}

pub(super) fn placements(old: old_scheduling::Placements) -> super::bindings::Placements {
    super::bindings::Placements {
        ask: old.ask,
        node: old.node,
        count: old.count,
    }
}

fn resources(r: &SharingResources) -> old_types::Resources {
    old_types::Resources {
        memory_mb: r.memory_mb,
        vcores: r.vcores,
        gpus: r.gpus,
    }
}

pub(super) fn plan_settings(settings: &PlanSettings) -> old_sharing::PlanSettings {
    old_sharing::PlanSettings {
        queue: settings.queue.clone(),
        capacity: resources(&settings.capacity),
        reservation_window_ms: settings.reservation_window_ms,
        instantaneous_max_capacity: settings.instantaneous_max_capacity,
        average_capacity: settings.average_capacity,
    }
}

fn timeline_to_old(t: &Timeline) -> old_sharing::Timeline {
    old_sharing::Timeline {
        at_ms: t.at_ms.clone(),
        memory_mb: t.memory_mb.clone(),
        vcores: t.vcores.clone(),
        gpus: t.gpus.clone(),
    }
}

pub(super) fn timeline_from_old(t: old_sharing::Timeline) -> Timeline {
    Timeline {
        at_ms: t.at_ms,
        memory_mb: t.memory_mb,
        vcores: t.vcores,
        gpus: t.gpus,
    }
}

pub(super) fn admission(a: &Admission) -> old_sharing::Admission {
    old_sharing::Admission {
        settings: plan_settings(&a.settings),
        user: a.user.clone(),
        reservation_id: a.reservation_id.clone(),
        from_ms: a.from_ms,
        to_ms: a.to_ms,
        candidate: timeline_to_old(&a.candidate),
        user_committed: timeline_to_old(&a.user_committed),
        plan_committed: timeline_to_old(&a.plan_committed),
    }
}

pub(super) fn rejection(r: old_sharing::Rejection) -> Rejection {
    match r {
        old_sharing::Rejection::OverCommit(m) => Rejection::OverCommit(m),
        old_sharing::Rejection::InstantaneousQuota(m) => Rejection::InstantaneousQuota(m),
        old_sharing::Rejection::AverageQuota(m) => Rejection::AverageQuota(m),
    }
}
