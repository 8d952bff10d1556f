//! What a run reports: the summary `weft simulate` prints, with its
//! observations, wait times, utilization samples and policy costs.

use super::*;

/// The summary `weft simulate` prints.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub end_ms: u64,
    pub apps_submitted: usize,
    pub apps_finished: usize,
    pub observations: Vec<Observation>,
    /// Per leaf queue: from submission to first container, in ms.
    pub wait_time_ms: BTreeMap<String, WaitStats>,
    /// Cluster utilization (allocated over capacity) at every QUOTA_COMPUTE.
    pub utilization: Vec<UtilizationSample>,
    /// Credits charged per project.
    pub credits: BTreeMap<String, f64>,
    pub policies: BTreeMap<String, PolicyCost>,
    /// Each reservation: admitted or refused (why), and how its apps did.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reservations: Vec<ReservationOutcome>,
    /// Apps refused at submission because their project had no credits
    /// left (`weft.quota.budget.enforce`), and the first refusal.
    #[serde(skip_serializing_if = "is_zero")]
    pub apps_refused_over_budget: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_budget_refusal: Option<String>,
}

pub(super) fn is_zero(count: &usize) -> bool {
    *count == 0
}

#[derive(Debug, Clone, Serialize)]
pub struct ReservationOutcome {
    pub name: String,
    pub user: String,
    pub queue: String,
    pub submit_ms: u64,
    pub admitted: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reservation_id: Option<String>,
    /// Why it was refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Where the agent placed it: (start, end) of its first occurrence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placed_ms: Option<(i64, i64)>,
    pub deadline_ms: u64,
    /// Apps submitted into it, and how many of them finished by its deadline.
    pub apps: usize,
    pub apps_finished: usize,
    pub apps_met_deadline: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_finish_ms: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Observation {
    pub t_ms: u64,
    pub queues: Vec<QueueUse>,
    pub users: Vec<UserUse>,
    pub pending_apps: Vec<PendingApp>,
}

#[derive(Debug, Clone, Serialize)]
pub struct QueueUse {
    pub queue: String,
    pub used: Resources,
    /// Dominant share of the cluster, in percent.
    pub absolute_used_percent: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct UserUse {
    pub queue: String,
    pub user: String,
    pub used: Resources,
}

#[derive(Debug, Clone, Serialize)]
pub struct PendingApp {
    pub id: String,
    pub queue: String,
    pub user: String,
    pub pending_containers: u64,
    pub reason: String,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct WaitStats {
    pub apps: usize,
    pub mean: f64,
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct UtilizationSample {
    pub t_ms: u64,
    pub memory: f64,
    pub vcores: f64,
    pub gpus: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct PolicyCost {
    pub policy: String,
    #[serde(flatten)]
    pub cost: CallCost,
}

pub(super) fn utilization(rm: &ResourceManager, t_ms: u64) -> UtilizationSample {
    let (memory, vcores, gpus) = rm
        .cluster()
        .allocated()
        .fractions_of(&rm.cluster().capacity());
    UtilizationSample {
        t_ms,
        memory,
        vcores,
        gpus,
    }
}

pub(super) fn observation(rm: &ResourceManager, t_ms: u64) -> Observation {
    let cluster = rm.cluster();
    let tree = cluster.queues().queues();
    let capacity = cluster.capacity();
    let used = diagnostics::queue_usage(cluster);
    let mut users: BTreeMap<(usize, String), Resources> = BTreeMap::new();
    let mut pending_apps = Vec::new();
    for index in cluster.active_apps() {
        let app = &cluster.apps()[index];
        *users
            .entry((app.queue_index, app.user.clone()))
            .or_default() += app.used;
        if let Some(diagnosis) = rm.diagnose(index, &used) {
            pending_apps.push(PendingApp {
                id: app.id.clone(),
                queue: app.queue.clone(),
                user: app.user.clone(),
                pending_containers: app.pending_containers(),
                reason: diagnosis.reason,
            });
        }
    }
    let queues = tree
        .iter()
        .zip(&used)
        .map(|(q, used)| {
            let (m, v, g) = used.fractions_of(&capacity);
            QueueUse {
                queue: q.path.clone(),
                used: *used,
                absolute_used_percent: m.max(v).max(g) * 100.0,
            }
        })
        .collect();
    let users = users
        .into_iter()
        .filter(|(_, used)| !used.is_zero())
        .map(|((queue, user), used)| UserUse {
            queue: tree[queue].path.clone(),
            user,
            used,
        })
        .collect();
    Observation {
        t_ms,
        queues,
        users,
        pending_apps,
    }
}

pub(super) fn wait_times(rm: &ResourceManager) -> BTreeMap<String, WaitStats> {
    let mut waits: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for app in rm.cluster().apps() {
        if let Some(start) = app.start_time_ms {
            waits
                .entry(app.queue.clone())
                .or_default()
                .push(start - app.submit_time_ms);
        }
    }
    waits
        .into_iter()
        .map(|(queue, mut w)| {
            w.sort_unstable();
            let at = |q: f64| w[((w.len() - 1) as f64 * q).round() as usize];
            let stats = WaitStats {
                apps: w.len(),
                mean: w.iter().sum::<u64>() as f64 / w.len() as f64,
                p50: at(0.5),
                p99: at(0.99),
                max: *w.last().expect("not empty"),
            };
            (queue, stats)
        })
        .collect()
}
