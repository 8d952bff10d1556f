//! Reclaim (seed 002 §1.5–1.6): when a leaf queue below its guarantee has had
//! unmet demand for longer than `weft.reclaim.starvation-ms`, the scheduling
//! policy's `preempt` chooses containers of queues above their guarantee to
//! take back; so does an active reservation whose apps hold less than it
//! with demand (the plan follower's guarantee). Off unless
//! `yarn.resourcemanager.scheduler.monitor.enable`, as in YARN. A preempted container ends (and is charged up to then); its app
//! is told, and asks for it again.

use std::collections::{HashMap, HashSet};

use super::{ActiveReservation, HeldProjects, Part, Round, ScheduleError, Scheduling, diagnostics};
use crate::cluster::{Cluster, Container};
use crate::policy::{Containers, ExecutionType};
use crate::resources::Resources;

/// Since when each starved leaf queue, and each starved reservation, has
/// been starved.
#[derive(Debug, Default)]
pub struct Starvation {
    /// (leaf, partition) → since when.
    since: HashMap<(usize, String), u64>,
    reservations_since: HashMap<String, u64>,
}

impl Starvation {
    /// Reclaim has just taken containers back: whoever is starved now must
    /// stay so for the whole patience again before the next. So a queue
    /// the scheduling policy will not serve even with room (a container
    /// larger than its user limit) costs others one preemption per
    /// patience, not one per round.
    pub fn reclaimed(&mut self, now: u64) {
        for since in self.since.values_mut() {
            *since = now;
        }
        for since in self.reservations_since.values_mut() {
            *since = now;
        }
    }

    /// A reclaim was cut short by its cap: the starved may have the rest
    /// `interval_ms` from `now`, or a whole patience (`after_ms`) on if that
    /// is sooner.
    pub fn reclaimed_in_part(&mut self, now: u64, after_ms: u64, interval_ms: u64) {
        let since = now.saturating_sub(after_ms.saturating_sub(interval_ms));
        for value in self
            .since
            .values_mut()
            .chain(self.reservations_since.values_mut())
        {
            *value = since;
        }
    }

    /// Whether a leaf or a reservation was starved at the last update.
    pub fn any(&self) -> bool {
        !self.since.is_empty() || !self.reservations_since.is_empty()
    }

    /// Records which leaves are starved at `now` — below their guarantee with
    /// something pending — and which active reservations are — their apps
    /// hold less than the reservation with something pending — and says
    /// whether one has been for `after_ms`. What `held` projects' apps
    /// wait for is no demand: they may not be given anything now.
    pub fn update(
        &mut self,
        cluster: &Cluster,
        reservations: &[ActiveReservation],
        held: &HeldProjects,
        now: u64,
        after_ms: u64,
    ) -> bool {
        let waiting = |app: &crate::cluster::App| {
            app.pending_containers() > 0 && !held.contains(&app.project)
        };
        let mut held: HashMap<&str, (crate::resources::Resources, bool)> = HashMap::new();
        for app in cluster.active_apps().map(|i| &cluster.apps()[i]) {
            if let Some(id) = app.reservation_id.as_deref() {
                let entry = held.entry(id).or_default();
                entry.0 += app.used;
                entry.1 |= waiting(app);
            }
        }
        let capacity = cluster.capacity();
        let dominant = |r: &crate::resources::Resources| {
            let (m, v, g) = r.fractions_of(&capacity);
            m.max(v).max(g)
        };
        let mut starved_reservations = HashMap::new();
        for reservation in reservations {
            let Some(&(used, pending)) = held.get(reservation.id.as_str()) else {
                continue;
            };
            if pending && dominant(&used) + 1e-9 < dominant(&reservation.reserved) {
                let since = self.reservations_since.get(&reservation.id).copied();
                starved_reservations.insert(reservation.id.clone(), since.unwrap_or(now));
            }
        }
        self.reservations_since = starved_reservations;
        let reservation_waited = self
            .reservations_since
            .values()
            .any(|&since| now.saturating_sub(since) >= after_ms);
        self.update_queues(cluster, reservations, &waiting, now, after_ms) || reservation_waited
    }

    /// A leaf is starved in a partition when an app of it waits for that
    /// partition, its user is below the leaf's user limit there, and the
    /// leaf holds less of it than it is guaranteed (in a cluster without
    /// labels, the one partition is the whole cluster). Demand its user
    /// limit bars would not be served with room either: taking room back
    /// for it would only preempt others once a patience (YARN counts
    /// pending demand up to user limits the same way).
    ///
    /// The limit is reckoned never lower than the policy's in any round,
    /// so a queue the policy would serve is always starved: as for one
    /// user (the policy divides among the users of a round, who may be
    /// fewer than wait in the leaf: another partition's, a constrained
    /// ask's own round), and not in a leaf with active reservations (its
    /// users' limits are their reservation's or its default child's).
    fn update_queues(
        &mut self,
        cluster: &Cluster,
        reservations: &[ActiveReservation],
        waiting: &dyn Fn(&crate::cluster::App) -> bool,
        now: u64,
        after_ms: u64,
    ) -> bool {
        let tree = cluster.queues().queues();
        let labelled = !cluster.node_labels().is_empty();
        // What each leaf, and each user in it, holds in each partition.
        let mut usage: HashMap<(usize, &str), Resources> = HashMap::new();
        let mut user_usage: HashMap<(usize, &str, &str), Resources> = HashMap::new();
        if labelled {
            for node in cluster.nodes() {
                for container in node
                    .containers
                    .iter()
                    .filter_map(|id| cluster.container(id))
                {
                    if let Some(app) = cluster.app(&container.app) {
                        let (queue, partition) = (app.queue_index, node.partition.as_str());
                        *usage.entry((queue, partition)).or_default() += container.resources;
                        *user_usage
                            .entry((queue, partition, app.user.as_str()))
                            .or_default() += container.resources;
                    }
                }
            }
        } else {
            for (queue, used) in diagnostics::queue_usage(cluster).into_iter().enumerate() {
                usage.insert((queue, ""), used);
            }
            for app in cluster.active_apps().map(|i| &cluster.apps()[i]) {
                *user_usage
                    .entry((app.queue_index, "", app.user.as_str()))
                    .or_default() += app.used;
            }
        }
        // What waits in agents' queues runs nowhere: a leaf whose own
        // containers only wait is starved all the same.
        for container in cluster.waiting_containers() {
            let (Some(app), Some(node)) =
                (cluster.app(&container.app), cluster.node(&container.node))
            else {
                continue;
            };
            let partition = if labelled {
                node.partition.as_str()
            } else {
                ""
            };
            if let Some(used) = usage.get_mut(&(app.queue_index, partition)) {
                *used = used.saturating_sub(&container.resources);
            }
            let user = (app.queue_index, partition, app.user.as_str());
            if let Some(used) = user_usage.get_mut(&user) {
                *used = used.saturating_sub(&container.resources);
            }
        }
        let reserved_leaves: std::collections::HashSet<usize> =
            reservations.iter().map(|r| r.queue_index).collect();
        let mut guarantees: HashMap<&str, (Resources, Vec<Option<crate::queues::Share>>)> =
            HashMap::new();
        let mut starved: HashMap<(usize, String), u64> = HashMap::new();
        for app in cluster.active_apps().map(|i| &cluster.apps()[i]) {
            let queue = app.queue_index;
            if !waiting(app) {
                continue;
            }
            for ask in app.asks.iter().filter(|a| a.pending > 0) {
                let partition = ask.partition.as_str();
                let key = (queue, partition.to_string());
                if starved.contains_key(&key) {
                    continue;
                }
                let (capacity, shares) = guarantees.entry(partition).or_insert_with(|| {
                    if labelled {
                        let shares = cluster.queues().partition_shares(partition);
                        (cluster.partition_capacity(partition), shares)
                    } else {
                        (cluster.capacity(), Vec::new())
                    }
                });
                let (guaranteed, maximum) = if labelled {
                    shares[queue].map_or((0.0, 0.0), |s| {
                        (s.absolute_capacity, s.absolute_maximum_capacity)
                    })
                } else {
                    (
                        tree[queue].absolute_capacity,
                        tree[queue].absolute_maximum_capacity,
                    )
                };
                let used = usage.get(&(queue, partition)).copied().unwrap_or_default();
                let user_used = user_usage
                    .get(&(queue, partition, app.user.as_str()))
                    .copied()
                    .unwrap_or_default();
                let share = |r: Resources| r.dominant_share(capacity).percent;
                // A user who holds nothing here may always have one
                // container; shares of sums, as the policy reckons them.
                if !user_used.is_zero() && !reserved_leaves.contains(&queue) {
                    let limit = diagnostics::user_limit(
                        &tree[queue],
                        guaranteed,
                        maximum,
                        share(used + ask.resources),
                        1,
                    );
                    if share(user_used + ask.resources) > limit + 1e-9 {
                        continue;
                    }
                }
                if share(used) + 1e-9 < guaranteed {
                    let since = self.since.get(&key).copied().unwrap_or(now);
                    starved.insert(key, since);
                }
            }
        }
        self.since = starved;
        self.since
            .values()
            .any(|&since| now.saturating_sub(since) >= after_ms)
    }
}

/// What one reclaim took back.
#[derive(Debug, Default)]
pub struct Reclaimed {
    /// The containers preempted (with `observe_only`, those that would
    /// have been, still running).
    pub containers: Vec<Container>,
    /// How many containers this reclaim marked for preemption (their
    /// masters told; killed at a later reclaim once marked for
    /// `max_wait_before_kill`, if still chosen).
    pub marked: usize,
    /// Whether chosen containers stay marked, waiting for their kill.
    pub waiting: bool,
    /// Whether the cap (`total_preemption_per_round`) or the natural
    /// termination factor held back some of what the policy chose.
    pub capped: bool,
}

/// How a reclaim may take back (YARN's `…monitor.capacity.preemption.*`).
#[derive(Debug, Clone, Copy)]
pub struct ReclaimLimits {
    /// `total_preemption_per_round`: the fraction of the cluster's
    /// resources one reclaim takes at most (at least one container).
    pub per_round: f64,
    /// `observe_only`: choose and say, take nothing.
    pub observe_only: bool,
    /// `max_wait_before_kill`: ms a chosen container is marked before it
    /// is killed (0: at once).
    pub wait_before_kill_ms: u64,
    /// `max_ignored_over_capacity`: a queue gives up nothing unless it
    /// holds more than its guarantee times 1 plus this.
    pub ignored_over_capacity: f64,
    /// `natural_termination_factor`: the share of what the policy chose
    /// in a queue one reclaim takes (at least one container; 0: none).
    pub natural_termination: f64,
}

/// Asks `policy` which containers to take back, keeps those the queues'
/// dead zone and natural termination factor leave to this reclaim
/// ([`for_this_reclaim`]), then, in the policy's order, those that fit in
/// `limits.per_round` of the cluster (the rest are left for the next
/// reclaim; at least one a partition), one partition at a time when the
/// cluster has labels (what a queue holds in one partition says nothing of
/// its share of another). A chosen container is marked for preemption
/// first (its master told) and preempted when chosen again once marked for
/// `limits.wait_before_kill_ms` (YARN's preemption candidates). With `limits.observe_only` (YARN's
/// `…preemption.observe_only`) nothing is marked or preempted.
pub fn reclaim(
    cluster: &mut Cluster,
    policy: &dyn Scheduling,
    reservations: &[ActiveReservation],
    held: &HeldProjects,
    now: u64,
    limits: ReclaimLimits,
) -> Result<Reclaimed, ScheduleError> {
    let capacity = cluster.capacity();
    let share = limits.per_round.clamp(0.0, 1.0);
    // Floors of each resource's share (whole MB, vcores, GPUs); the
    // epsilon keeps 0.29 × 100 at 29, not 28.99… → 28.
    let floor = |total: f64| (total * share + 1e-9).floor();
    let cap = Resources::new(
        floor(capacity.memory_mb as f64) as u64,
        floor(f64::from(capacity.vcores)) as u32,
        floor(f64::from(capacity.gpus)) as u32,
    );
    let mut taken = Resources::ZERO;
    let mut reclaimed = Reclaimed::default();
    // Before any mark is found due: a stale one marks anew.
    drop_stale_marks(cluster, now, limits);
    for part in Part::all(cluster) {
        if matches!(part, Part::Lending(_)) {
            continue; // what is lent is in the label's own round
        }
        let round = Round::of_part(cluster, now, reservations, held, &part);
        let running = running_in(cluster, &round);
        if running.ids.is_empty() {
            continue;
        }
        let victims = match policy.preempt(&round.snapshot, &running.containers) {
            Ok(victims) => victims,
            // What earlier partitions preempted stands (and is charged).
            Err(error) if !reclaimed.containers.is_empty() || reclaimed.waiting => {
                tracing::warn!(%error, "reclaim failed in a partition; what was preempted or marked before stands");
                break;
            }
            Err(error) => return Err(error.into()),
        };
        let (victims, held_back) =
            for_this_reclaim(cluster, &part, reservations, &running, &victims, limits);
        reclaimed.capped |= held_back;
        // In the policy's order, each that fits within the cap (one that
        // does not is left, a smaller one after it may fit: a GPU
        // container over a small GPU cap holds back no other); the first
        // of each partition always, so no partition waits on another's.
        let mut chosen = Vec::new();
        for victim in victims {
            let resources = running.resources[victim];
            let after = taken + resources;
            // Only what it holds counts against the cap: a first GPU
            // container over a GPU cap of 0 bars no container without.
            let within = (resources.memory_mb == 0 || after.memory_mb <= cap.memory_mb)
                && (resources.vcores == 0 || after.vcores <= cap.vcores)
                && (resources.gpus == 0 || after.gpus <= cap.gpus);
            if !(within || chosen.is_empty()) {
                reclaimed.capped = true;
                continue;
            }
            taken = after;
            chosen.push(running.ids[victim].clone());
        }
        for id in chosen {
            if limits.observe_only {
                reclaimed.containers.extend(cluster.container(&id).cloned());
                continue;
            }
            let due = match cluster.preemption_mark(&id) {
                _ if limits.wait_before_kill_ms == 0 => true,
                Some(since) => now.saturating_sub(since) >= limits.wait_before_kill_ms,
                None => {
                    cluster.mark_for_preemption(&id, now);
                    reclaimed.marked += 1;
                    false
                }
            };
            if due {
                reclaimed.containers.extend(cluster.preempt(&id, now));
            } else {
                reclaimed.waiting = true;
            }
        }
    }
    Ok(reclaimed)
}

/// As YARN's monitor at each interval: a mark is kept while younger than
/// twice the wait (a container chosen again within that is killed once
/// its wait is over), and dropped after, so that a container chosen
/// later is marked, and its master told, anew. Called before each reclaim
/// and at each pass without one (no mark outlives its use because no one
/// was starved for a while).
pub fn drop_stale_marks(cluster: &mut Cluster, now: u64, limits: ReclaimLimits) {
    if cluster.any_preemption_marks() {
        let stale_after = limits.wait_before_kill_ms.saturating_mul(2);
        cluster.keep_preemption_marks(|since| now.saturating_sub(since) <= stale_after);
    }
}

/// Of the policy's `victims` (positions in `running`; repeats and
/// positions out of range dropped), those this reclaim may take from
/// their leaf queues, in the policy's order, and whether any were held
/// back: YARN's dead zone (a leaf gives up nothing unless it holds more
/// than its guarantee in this part times `1 + ignored_over_capacity`; not
/// for a leaf with active reservations, whose guarantee is the plan's) and
/// natural termination (of what the policy chose in a leaf, only while
/// what is taken is below `natural_termination` of it: at least one
/// container, the rest left to containers ending or the next reclaim).
fn for_this_reclaim(
    cluster: &Cluster,
    part: &Part,
    reservations: &[ActiveReservation],
    running: &Running,
    victims: &[u32],
    limits: ReclaimLimits,
) -> (Vec<usize>, bool) {
    let (capacity, shares) = match part {
        Part::Partition(label) => (
            cluster.partition_capacity(label),
            Some(cluster.queues().partition_shares(label)),
        ),
        _ => (cluster.capacity(), None),
    };
    let tree = cluster.queues().queues();
    let guaranteed = |leaf: usize| match &shares {
        Some(shares) => shares
            .get(leaf)
            .copied()
            .flatten()
            .map_or(0.0, |s| s.absolute_capacity),
        None => tree.get(leaf).map_or(0.0, |q| q.absolute_capacity),
    };
    let share = |r: Resources| r.dominant_share(&capacity).percent;
    let reserved: HashSet<usize> = reservations.iter().map(|r| r.queue_index).collect();
    let mut seen = HashSet::new();
    // What the dead zone spares is not held back for the next reclaim: it
    // stays spared while the leaf holds no more.
    let victims: Vec<usize> = victims
        .iter()
        .map(|&v| v as usize)
        .filter(|&v| v < running.ids.len() && seen.insert(v))
        .filter(|&v| {
            let leaf = running.leaves[v];
            let used = running.leaf_used.get(&leaf).copied().unwrap_or_default();
            reserved.contains(&leaf)
                || share(used) > guaranteed(leaf) * (1.0 + limits.ignored_over_capacity) + 1e-9
        })
        .collect();
    let mut held_back = false;
    let mut chosen_in: HashMap<usize, Resources> = HashMap::new();
    for &v in &victims {
        *chosen_in.entry(running.leaves[v]).or_default() += running.resources[v];
    }
    let mut taken_in: HashMap<usize, Resources> = HashMap::new();
    let kept = victims
        .into_iter()
        .filter(|&v| {
            let leaf = running.leaves[v];
            let taken = taken_in.entry(leaf).or_default();
            let resources = running.resources[v];
            // As YARN's: a container is taken while some resource it holds
            // is still owed (a share of each resource, not of the dominant
            // one, which a few GPU containers would fill at once).
            let owed = |held: u64, taken: u64, chosen: u64| {
                let limit = limits.natural_termination * chosen as f64;
                held > 0 && limit > 0.0 && (taken == 0 || (taken as f64) + 1e-9 < limit)
            };
            let chosen = chosen_in[&leaf];
            let still_owed = owed(resources.memory_mb, taken.memory_mb, chosen.memory_mb)
                || owed(
                    resources.vcores.into(),
                    taken.vcores.into(),
                    chosen.vcores.into(),
                )
                || owed(resources.gpus.into(), taken.gpus.into(), chosen.gpus.into());
            if still_owed {
                *taken += resources;
            } else {
                held_back = true;
            }
            still_owed
        })
        .collect();
    (kept, held_back)
}

/// The containers running on a round's nodes that may be taken back, as
/// its snapshot numbers them, with each one's id, size and leaf queue, and
/// what each leaf holds on those nodes.
struct Running {
    containers: Containers,
    ids: Vec<String>,
    resources: Vec<Resources>,
    leaves: Vec<usize>,
    leaf_used: HashMap<usize, Resources>,
}

/// What runs on `round`'s nodes: every container counts in its leaf's
/// use; those of apps in a queue with `disable_preemption` (checked here,
/// whatever the policy would choose) or on a node that takes no new
/// containers are no victims.
fn running_in(cluster: &Cluster, round: &Round) -> Running {
    let mut running = Running {
        containers: Containers::empty(),
        ids: Vec::new(),
        resources: Vec::new(),
        leaves: Vec::new(),
        leaf_used: HashMap::new(),
    };
    let nodes: Vec<&crate::cluster::Node> = cluster.nodes().collect();
    let queues = cluster.queues().queues();
    // Node by node, in the snapshot's node order: each container's node
    // index is where it is found, never looked up (and never guessed).
    for node_index in 0..round.snapshot.nodes.free_memory_mb.len() as u32 {
        let Some(node) = nodes.get(round.node_position(node_index)) else {
            continue;
        };
        for container in node
            .containers
            .iter()
            .filter_map(|id| cluster.container(id))
        {
            let Some(index) = cluster.app_index(&container.app) else {
                continue;
            };
            let leaf = cluster.apps()[index].queue_index;
            *running.leaf_used.entry(leaf).or_default() += container.resources;
            // What runs on an unhealthy or decommissioned node is no
            // victim: the room it would free goes to no one (the node
            // takes no new containers).
            let Some(app) = round
                .app_position(index)
                .filter(|_| node.takes_containers())
            else {
                continue;
            };
            if queues
                .get(leaf)
                .is_some_and(|queue| queue.preemption_disabled)
            {
                continue;
            }
            let containers = &mut running.containers;
            containers.app.push(app);
            containers.node.push(node_index);
            containers.memory_mb.push(container.resources.memory_mb);
            containers.vcores.push(container.resources.vcores.into());
            containers.gpus.push(container.resources.gpus.into());
            containers
                .start_time_ms
                .push(super::millis(container.start_time_ms));
            let ask = cluster
                .app(&container.app)
                .and_then(|a| a.asks.get(container.ask));
            containers
                .execution_type
                .push(ask.map_or(ExecutionType::Guaranteed, |ask| {
                    super::context::policy_execution_type(ask.execution_type)
                }));
            let tags = ask.map_or(&[][..], |ask| &ask.allocation_tags[..]);
            for tag in tags {
                containers.tags.container.push(running.ids.len() as u32);
                containers.tags.tag.push(tag.clone());
            }
            running.ids.push(container.id.clone());
            running.resources.push(container.resources);
            running.leaves.push(leaf);
        }
    }
    running
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn after_a_reclaim_the_starved_wait_the_whole_patience_again() {
        let mut starvation = Starvation::default();
        assert!(!starvation.any());
        starvation.since.insert((1, String::new()), 0);
        starvation.reservations_since.insert("r".into(), 100);
        assert!(starvation.any());
        starvation.reclaimed(5_000);
        assert_eq!(starvation.since[&(1, String::new())], 5_000);
        assert_eq!(starvation.reservations_since["r"], 5_000);
        // Cut short by the cap: due again an interval on (3 s of a 15 s
        // patience), or a patience on when that is sooner.
        starvation.reclaimed_in_part(20_000, 15_000, 3_000);
        assert_eq!(starvation.since[&(1, String::new())], 8_000);
        starvation.reclaimed_in_part(20_000, 2_000, 5_000);
        assert_eq!(starvation.reservations_since["r"], 20_000);
    }

    #[test]
    fn demand_its_user_limit_bars_does_not_starve_a_queue() {
        let mut properties = crate::queues::QueueProperties::default();
        for (name, value) in [
            ("root.queues", "a,c"),
            ("root.a.capacity", "40"),
            ("root.a.user-limit-factor", "3"),
            ("root.c.capacity", "60"),
            // 6 % of the cluster a user: one container each.
            ("root.c.user-limit-factor", "0.1"),
        ] {
            properties.set(&format!("yarn.scheduler.capacity.{name}"), value);
        }
        let queues = crate::queues::QueueTree::from_properties(&properties).unwrap();
        let mut cluster = Cluster::new(1, queues);
        let size = Resources::new(10_240, 10, 0);
        cluster
            .register_node("n", crate::cluster::NodeKind::Simulated, size, "t", 0)
            .unwrap();
        let submit = |cluster: &mut Cluster, user: &str, queue: &str, count: u32| {
            let asks = vec![crate::cluster::AskSpec::sized(count, 1024, 1, 0, 1_000_000)];
            let request = crate::cluster::SubmitApp::new(user, queue, "p", asks);
            let app = cluster.submit(request, "test", 0).unwrap().id.clone();
            cluster.app_index(&app).unwrap()
        };
        let place = |cluster: &mut Cluster, app: usize, count: u32| {
            let placement = crate::cluster::Placement {
                app,
                ask: 0,
                node: 0,
                count,
            };
            cluster.allocate(&[placement], 0).unwrap();
        };
        let starved = |cluster: &Cluster| {
            let mut starvation = Starvation::default();
            starvation.update(cluster, &[], &HeldProjects::new(), 0, 0)
        };
        let alice = submit(&mut cluster, "alice", "a", 20);
        place(&mut cluster, alice, 9);
        let carol = submit(&mut cluster, "carol", "c", 5);
        assert!(starved(&cluster), "carol holds nothing: she may have one");
        place(&mut cluster, carol, 1);
        // c holds 10 % of its 60 %, but carol is at her limit: taking room
        // from a would serve no one.
        assert!(!starved(&cluster));
        // Another user of c holds nothing: c is starved for him.
        submit(&mut cluster, "dave", "c", 1);
        assert!(starved(&cluster));
    }
}
