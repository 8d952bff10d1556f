//! Usage that fades (Slurm's PriorityDecayHalfLife, Kueue's admission fair
//! sharing): the resource-seconds each user and each leaf queue held, halved
//! every `weft.scheduler.usage.half-life-ms`, kept exact as containers start
//! and end (between two events a key holds a constant amount, so its decay
//! has a closed form), and across restarts.

use std::collections::HashMap;
use std::f64::consts::LN_2;

use serde::{Deserialize, Serialize};

use crate::limits::MAX_USAGE_USERS;
use crate::resources::{ResourceSeconds, Resources};

/// One user's or leaf queue's fading use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Fading {
    /// Decayed resource-seconds, as of `at_ms`.
    pub value: ResourceSeconds,
    /// When `value` was last brought up to date, in ms since the epoch.
    pub at_ms: u64,
    /// What its running containers hold now (rebuilt from them at a
    /// restore, so not stored).
    #[serde(skip)]
    pub held: Resources,
}

impl Fading {
    /// Its value at `now`, what it held since `at_ms` counted and all of it
    /// faded by `half_life_ms` (0: no fading).
    pub fn at(&self, now: u64, half_life_ms: u64) -> ResourceSeconds {
        let elapsed_ms = now.saturating_sub(self.at_ms) as f64;
        let (kept, held_ms) = fade(elapsed_ms, half_life_ms);
        add(scale(self.value, kept), self.held, held_ms)
    }

    fn advance(&mut self, now: u64, half_life_ms: u64) {
        if now > self.at_ms {
            self.value = self.at(now, half_life_ms);
            self.at_ms = now;
        }
    }

    /// Whether nothing is left of it worth keeping: nothing held and less
    /// than one resource-second in each figure (a difference fair sharing
    /// cannot feel).
    fn is_spent(&self, now: u64, half_life_ms: u64) -> bool {
        let value = self.at(now, half_life_ms);
        self.held == Resources::ZERO
            && value.memory_mb_seconds < 1.0
            && value.vcore_seconds < 1.0
            && value.gpu_seconds < 1.0
    }
}

/// Over `elapsed_ms`, the share of a value that is kept, and how many ms of
/// holding a constant amount are worth at the end (the integral of the
/// fading over the stretch).
fn fade(elapsed_ms: f64, half_life_ms: u64) -> (f64, f64) {
    if half_life_ms == 0 || elapsed_ms <= 0.0 {
        return (1.0, elapsed_ms.max(0.0));
    }
    let rate = LN_2 / half_life_ms as f64;
    let kept = (-rate * elapsed_ms).exp();
    (kept, (1.0 - kept) / rate)
}

fn scale(value: ResourceSeconds, factor: f64) -> ResourceSeconds {
    ResourceSeconds {
        memory_mb_seconds: value.memory_mb_seconds * factor,
        vcore_seconds: value.vcore_seconds * factor,
        gpu_seconds: value.gpu_seconds * factor,
    }
}

/// `value` plus `held` for `ms` (which may be negative), never below 0.
fn add(value: ResourceSeconds, held: Resources, ms: f64) -> ResourceSeconds {
    let seconds = ms / 1000.0;
    ResourceSeconds {
        memory_mb_seconds: (value.memory_mb_seconds + held.memory_mb as f64 * seconds).max(0.0),
        vcore_seconds: (value.vcore_seconds + f64::from(held.vcores) * seconds).max(0.0),
        gpu_seconds: (value.gpu_seconds + f64::from(held.gpus) * seconds).max(0.0),
    }
}

/// The fading use of every user and leaf queue (by path) that ran
/// something.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DecayedUsage {
    /// Half-life, in ms; 0: no fading (plain resource-seconds).
    pub half_life_ms: u64,
    /// By leaf queue path.
    pub queues: HashMap<String, Fading>,
    /// By user.
    pub users: HashMap<String, Fading>,
    /// Whether it changed since it was last stored.
    #[serde(skip)]
    dirty: bool,
    /// When it was last stored, in ms since the epoch.
    #[serde(skip)]
    saved_ms: u64,
}

/// How often it is stored at most (with QUOTA_COMPUTE, when it changed):
/// a crash loses at most this much of it.
const USAGE_SAVE_INTERVAL_MS: u64 = 60_000;

impl DecayedUsage {
    /// No use yet, fading with `half_life_ms`.
    pub fn new(half_life_ms: u64) -> DecayedUsage {
        DecayedUsage {
            half_life_ms,
            ..DecayedUsage::default()
        }
    }

    /// A container of `user` in leaf `queue` holds `resources` from `start`.
    pub(super) fn hold(&mut self, queue: &str, user: &str, resources: Resources, start: u64) {
        let half_life_ms = self.half_life_ms;
        for fading in [
            entry(&mut self.queues, queue, start),
            entry(&mut self.users, user, start),
        ] {
            fading.advance(start, half_life_ms);
            // Started before the last update (a restore, a clock stepped
            // back): the stretch between counts for it too.
            let (_, missed_ms) = fade(fading.at_ms.saturating_sub(start) as f64, half_life_ms);
            fading.value = add(fading.value, resources, missed_ms);
            fading.held += resources;
        }
        self.dirty = true;
    }

    /// A container running at a restore, of `user` in leaf `queue`,
    /// holding `resources` since `start`: what it held up to the stored
    /// update is in the stored value already. Called in order of start.
    pub(super) fn resume(&mut self, queue: &str, user: &str, resources: Resources, start: u64) {
        for fading in [
            entry(&mut self.queues, queue, start),
            entry(&mut self.users, user, start),
        ] {
            // Started after the stored update: counted from its start.
            fading.advance(start, self.half_life_ms);
            fading.held += resources;
        }
        self.dirty = true;
    }

    /// A container of `user` in leaf `queue` that held `resources` ended at
    /// `end`, which may be before the last update (an end reported late):
    /// what was counted for it past its end is taken back.
    pub(super) fn release(&mut self, queue: &str, user: &str, resources: Resources, end: u64) {
        let half_life_ms = self.half_life_ms;
        for fading in [
            entry(&mut self.queues, queue, end),
            entry(&mut self.users, user, end),
        ] {
            fading.advance(end, half_life_ms);
            let (_, counted_past_end_ms) =
                fade(fading.at_ms.saturating_sub(end) as f64, half_life_ms);
            fading.value = add(fading.value, resources, -counted_past_end_ms);
            fading.held = fading.held.saturating_sub(&resources);
        }
        self.dirty = true;
    }

    /// A leaf queue moved from path `old` to `new` (refreshQueues) while
    /// its apps' running containers held `held`: from `now` on that is
    /// held under the new path.
    pub(super) fn move_held(&mut self, old: &str, new: &str, held: Resources, now: u64) {
        let half_life_ms = self.half_life_ms;
        if let Some(fading) = self.queues.get_mut(old) {
            fading.advance(now, half_life_ms);
            fading.held = fading.held.saturating_sub(&held);
        }
        let fading = entry(&mut self.queues, new, now);
        fading.advance(now, half_life_ms);
        fading.held += held;
        self.dirty = true;
    }

    /// Leaf queue `path`'s use at `now`.
    pub fn queue_at(&self, path: &str, now: u64) -> ResourceSeconds {
        self.queues
            .get(path)
            .map_or_else(ResourceSeconds::default, |f| f.at(now, self.half_life_ms))
    }

    /// `user`'s use at `now`.
    pub fn user_at(&self, user: &str, now: u64) -> ResourceSeconds {
        self.users
            .get(user)
            .map_or_else(ResourceSeconds::default, |f| f.at(now, self.half_life_ms))
    }

    /// Lets go of the entries with nothing left worth keeping, and of the
    /// users beyond [`MAX_USAGE_USERS`] holding nothing with the least use
    /// (before it is stored: the stored form stays small).
    pub(super) fn settle(&mut self, now: u64) {
        let half_life_ms = self.half_life_ms;
        for map in [&mut self.queues, &mut self.users] {
            map.retain(|_, fading| !fading.is_spent(now, half_life_ms));
        }
        if self.users.len() > MAX_USAGE_USERS {
            let mut idle: Vec<(f64, String)> = self
                .users
                .iter()
                .filter(|(_, f)| f.held == Resources::ZERO)
                .map(|(user, f)| (f.at(now, half_life_ms).vcore_seconds, user.clone()))
                .collect();
            idle.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
            let excess = self.users.len() - MAX_USAGE_USERS;
            for (_, user) in idle.into_iter().take(excess) {
                self.users.remove(&user);
            }
        }
    }

    /// Whether it should be stored now: it changed, and was last stored
    /// [`USAGE_SAVE_INTERVAL_MS`] ago or more (or `at_once`).
    pub(super) fn due(&mut self, now: u64, at_once: bool) -> bool {
        // A clock stepped back behind the last save saves at once.
        let due = self.dirty
            && (at_once || now < self.saved_ms || now - self.saved_ms >= USAGE_SAVE_INTERVAL_MS);
        if due {
            self.dirty = false;
            self.saved_ms = now;
        }
        due
    }
}

impl super::Cluster {
    /// Sets the half-life use fades with (`weft.scheduler.usage.half-life-ms`;
    /// 0: no fading), from now on.
    pub fn set_usage_half_life(&mut self, half_life_ms: u64) {
        self.decayed.half_life_ms = half_life_ms;
    }

    /// Each user's and leaf queue's fading use.
    pub fn decayed_usage(&self) -> &DecayedUsage {
        &self.decayed
    }

    /// Has the fading use stored with the next commit if it changed and
    /// was last stored [`USAGE_SAVE_INTERVAL_MS`] ago (or `at_once`, at a
    /// stop). The resource manager asks at each QUOTA_COMPUTE, not at every
    /// container's start and end: a crash loses at most that interval.
    pub fn save_decayed_usage(&mut self, now: u64, at_once: bool) {
        if self.decayed.due(now, at_once) {
            self.decayed.settle(now);
            super::durable::decayed_usage_changed(&mut self.changes);
        }
    }
}

/// `key`'s entry, new ones counted from `now`.
fn entry<'a>(map: &'a mut HashMap<String, Fading>, key: &str, now: u64) -> &'a mut Fading {
    if !map.contains_key(key) {
        map.insert(
            key.to_string(),
            Fading {
                at_ms: now,
                ..Fading::default()
            },
        );
    }
    map.get_mut(key).expect("inserted above")
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: u64 = 3_600_000;

    fn vcore_seconds(usage: &DecayedUsage, user: &str, now: u64) -> f64 {
        usage.user_at(user, now).vcore_seconds
    }

    #[test]
    fn use_is_halved_every_half_life_and_held_use_accrues_faded() {
        let mut usage = DecayedUsage::new(HOUR);
        let one = Resources::new(1024, 1, 0);
        usage.hold("root.a", "alice", one, 0);
        usage.release("root.a", "alice", one, 1_000);
        // One vcore for one second, then halved each hour.
        assert!((vcore_seconds(&usage, "alice", 1_000) - 1.0).abs() < 1e-3);
        assert!((vcore_seconds(&usage, "alice", 1_000 + HOUR) - 0.5).abs() < 1e-3);
        assert!((vcore_seconds(&usage, "alice", 1_000 + 2 * HOUR) - 0.25).abs() < 1e-3);
        // Held for a long time, it tends to held × half-life / ln 2.
        usage.hold("root.b", "bob", one, 0);
        let steady = 3_600.0 / LN_2;
        let far = vcore_seconds(&usage, "bob", 40 * HOUR);
        assert!(
            (far - steady).abs() / steady < 1e-6,
            "{far} against {steady}"
        );
        // The queue's use is its users' there.
        assert_eq!(
            usage.queue_at("root.b", 40 * HOUR).vcore_seconds,
            usage.user_at("bob", 40 * HOUR).vcore_seconds
        );
        // No fading: plain resource-seconds.
        let mut plain = DecayedUsage::new(0);
        plain.hold("root.a", "alice", one, 0);
        assert!((vcore_seconds(&plain, "alice", 10_000) - 10.0).abs() < 1e-9);
    }

    #[test]
    fn an_end_reported_late_takes_back_what_was_counted_past_it() {
        let mut usage = DecayedUsage::new(HOUR);
        let one = Resources::new(1024, 1, 0);
        usage.hold("root.a", "alice", one, 0);
        usage.hold("root.a", "alice", one, 0);
        // The first is learnt to have ended at 10 s only at 20 s (another
        // event, here a container holding nothing, brought the entry up to
        // 20 s first).
        usage.hold("root.a", "alice", Resources::ZERO, 20_000);
        usage.release("root.a", "alice", one, 10_000);
        let mut exact = DecayedUsage::new(HOUR);
        exact.hold("root.a", "alice", one, 0);
        exact.hold("root.a", "alice", one, 0);
        exact.release("root.a", "alice", one, 10_000);
        let (late, on_time) = (
            vcore_seconds(&usage, "alice", 30_000),
            vcore_seconds(&exact, "alice", 30_000),
        );
        assert!((late - on_time).abs() < 1e-6, "{late} against {on_time}");
        // Two vcores for 10 s and one for 20 more, faded a little (30 s of an hour).
        assert!((39.5..40.0).contains(&on_time), "{on_time}");
    }

    #[test]
    fn a_leaf_moved_to_another_parent_takes_what_runs_with_it() {
        let mut usage = DecayedUsage::new(0);
        let one = Resources::new(1024, 1, 0);
        usage.hold("root.x.a", "alice", one, 0);
        usage.move_held("root.x.a", "root.y.a", one, 10_000);
        usage.release("root.y.a", "alice", one, 15_000);
        let at = |path: &str, now: u64| usage.queue_at(path, now).vcore_seconds;
        assert!(
            (at("root.x.a", 100_000) - 10.0).abs() < 1e-9,
            "stops growing"
        );
        assert!((at("root.y.a", 100_000) - 5.0).abs() < 1e-9);
        assert!((vcore_seconds(&usage, "alice", 100_000) - 15.0).abs() < 1e-9);
    }

    #[test]
    fn settling_lets_go_of_what_is_spent_and_keeps_what_runs() {
        let mut usage = DecayedUsage::new(1_000);
        let one = Resources::new(1024, 1, 0);
        usage.hold("root.a", "alice", one, 0);
        usage.release("root.a", "alice", one, 1_000);
        usage.hold("root.a", "bob", one, 0);
        assert!(usage.due(100_000, false), "changed, never stored");
        assert!(!usage.due(100_001, false), "just stored");
        usage.settle(100_000);
        assert!(!usage.users.contains_key("alice"), "faded to nothing");
        assert!(usage.users.contains_key("bob"), "holds something");
        let stored = serde_json::to_string(&usage).unwrap();
        let back: DecayedUsage = serde_json::from_str(&stored).unwrap();
        assert_eq!(back.users["bob"].value, usage.users["bob"].value);
        assert_eq!(
            back.users["bob"].held,
            Resources::ZERO,
            "rebuilt, not stored"
        );
    }
}
