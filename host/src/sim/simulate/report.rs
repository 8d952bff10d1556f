//! What a run reports: the summary `weft simulate` prints, with its
//! observations, wait times, utilization samples and policy costs.

use super::*;

/// The summary `weft simulate` prints.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Where the run stopped, in virtual ms.
    pub end_ms: u64,
    /// Apps the cluster accepted (not those refused over budget).
    pub apps_submitted: usize,
    /// Apps that finished (not those that failed or were killed).
    pub apps_finished: usize,
    /// Apps killed at the end of their lifetime.
    #[serde(skip_serializing_if = "is_zero")]
    pub apps_past_lifetime: usize,
    /// One per distinct `observe_at_ms` the run reached, in time order.
    pub observations: Vec<Observation>,
    /// Per leaf queue: from submission to first container, in ms.
    pub wait_time_ms: BTreeMap<String, WaitStats>,
    /// Cluster utilization (allocated over capacity) at every QUOTA_COMPUTE.
    pub utilization: Vec<UtilizationSample>,
    /// Credits charged per project.
    pub credits: BTreeMap<String, f64>,
    /// Per policy kind (scheduling, pricing, sharing): the active policy
    /// and what its calls cost.
    pub policies: BTreeMap<String, PolicyCost>,
    /// Each reservation: admitted or refused (why), and how its apps did.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reservations: Vec<ReservationOutcome>,
    /// Apps refused at submission because their project had no credits
    /// left (`weft.quota.budget.enforce`), and the first refusal.
    #[serde(skip_serializing_if = "is_zero")]
    pub apps_refused_over_budget: usize,
    /// Why the first app refused over budget was refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_budget_refusal: Option<String>,
}

pub(super) fn is_zero(count: &usize) -> bool {
    *count == 0
}

/// What became of a scenario reservation, and of the apps that ran in it.
#[derive(Debug, Clone, Serialize)]
pub struct ReservationOutcome {
    /// Its name in the scenario.
    pub name: String,
    /// Who submitted it.
    pub user: String,
    /// The queue it was submitted to.
    pub queue: String,
    /// When it was submitted, in virtual ms.
    pub submit_ms: u64,
    /// Whether the reservation system admitted it.
    pub admitted: bool,
    /// The id it was admitted under (YARN's reservation-id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reservation_id: Option<String>,
    /// Why it was refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Where the agent placed it: (start, end) of its first occurrence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placed_ms: Option<(i64, i64)>,
    /// Its deadline, in virtual ms.
    pub deadline_ms: u64,
    /// Apps submitted into it, and how many of them finished by its deadline.
    pub apps: usize,
    /// Of those apps, how many finished.
    pub apps_finished: usize,
    /// Of those apps, how many finished by its deadline.
    pub apps_met_deadline: usize,
    /// When the last of its apps to finish did, in virtual ms; none if
    /// none did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_finish_ms: Option<u64>,
}

/// The cluster at one `observe_at_ms`.
#[derive(Debug, Clone, Serialize)]
pub struct Observation {
    /// When, in virtual ms.
    pub t_ms: u64,
    /// Every queue of the tree, parents included.
    pub queues: Vec<QueueUse>,
    /// Each user's use per leaf queue; users using nothing are left out.
    pub users: Vec<UserUse>,
    /// The active apps that wait for containers, with why.
    pub pending_apps: Vec<PendingApp>,
}

/// What one queue's apps hold at an observation.
#[derive(Debug, Clone, Serialize)]
pub struct QueueUse {
    /// The queue's path (`root.…`).
    pub queue: String,
    /// What its running containers hold, its descendants' included.
    pub used: Resources,
    /// Dominant share of the cluster, in percent.
    pub absolute_used_percent: f64,
}

/// What one user's running containers hold in one leaf queue at an
/// observation.
#[derive(Debug, Clone, Serialize)]
pub struct UserUse {
    /// The leaf queue's path.
    pub queue: String,
    /// The user the apps run as.
    pub user: String,
    /// What they hold.
    pub used: Resources,
}

/// An app waiting for containers at an observation, and why.
#[derive(Debug, Clone, Serialize)]
pub struct PendingApp {
    /// Its application id.
    pub id: String,
    /// Its leaf queue's name.
    pub queue: String,
    /// Who it runs as.
    pub user: String,
    /// Containers it asks for and has not been allocated.
    pub pending_containers: u64,
    /// Why it waits, for people: the scheduler's diagnosis, an exhausted
    /// budget or a reservation not yet started.
    pub reason: String,
}

/// One leaf queue's waits from submission to first container, in ms, over
/// the apps that got one.
#[derive(Debug, Clone, Default, Serialize)]
pub struct WaitStats {
    /// Apps that got a first container.
    pub apps: usize,
    /// The mean wait.
    pub mean: f64,
    /// The median wait.
    pub p50: u64,
    /// The 99th percentile wait.
    pub p99: u64,
    /// The longest wait.
    pub max: u64,
}

/// Allocated over capacity, per resource, at one QUOTA_COMPUTE: each a
/// fraction from 0 to 1 (0 when the cluster has none of it).
#[derive(Debug, Clone, Serialize)]
pub struct UtilizationSample {
    /// When, in virtual ms.
    pub t_ms: u64,
    /// Of memory.
    pub memory: f64,
    /// Of vcores.
    pub vcores: f64,
    /// Of GPUs.
    pub gpus: f64,
}

/// One policy kind's active policy and what its calls cost.
#[derive(Debug, Clone, Serialize)]
pub struct PolicyCost {
    /// The active policy's name; empty if none is active.
    pub policy: String,
    /// Its calls: how many, total, mean and p99 ns (flattened into this
    /// object).
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
