//! One kind's place in the host: the active version (published atomically),
//! the history of every version loaded, fallback to the last good version when
//! a call fails, and rollback — by the operator, or by itself after a new
//! version fails `max_failures` calls in a row.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use arc_swap::ArcSwapOption;
use serde::Serialize;

use super::events::PolicyEvent;
use super::stats::{CallCost, CallStats};
use super::{CallError, PolicyKind, PolicyVersion, VersionInfo};

/// Where a version stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum VersionState {
    /// Answers every call.
    Active,
    /// Was active and worked: a fallback and rollback target.
    Standby,
    /// Taken out by a rollback; never called again.
    RolledBack,
    /// An older good version whose compiled code was let go (the slot keeps
    /// the newest few standbys ready): listed, no longer a rollback target.
    Retired,
}

/// How many standby versions a slot keeps compiled, ready for fallback and
/// rollback. Older ones stay in the history as rows; their code is freed, so
/// a host that hot-swaps all day does not grow without bound.
pub const STANDBY_KEPT: usize = 5;

/// How many bytes of compiled code a slot's standbys may hold unless told
/// otherwise (`weft.policy.standby-memory-mb`): a hundred Rust policies, or
/// fourteen of the 35 MB a Python or JavaScript one compiles to.
pub(super) const STANDBY_MEMORY_DEFAULT: u64 = 512 << 20;

/// One row of a kind's history, as the API shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct HistoryEntry {
    /// 1 for the first version loaded into this slot, then 2, 3 …
    pub number: u32,
    /// Where the version stands now.
    pub state: VersionState,
    /// What was loaded: name, version, sha256, source, parameters, when
    /// (flattened into the row).
    #[serde(flatten)]
    pub info: VersionInfo,
    /// Why it was rolled back, if it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A kind's active version and history, as the API shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct SlotStatus {
    /// The slot's kind.
    pub kind: PolicyKind,
    /// The version answering calls; `None` before the first load.
    pub active: Option<HistoryEntry>,
    /// Every version loaded into the slot, oldest first (the active one
    /// included).
    pub history: Vec<HistoryEntry>,
    /// What this kind's successful calls cost since the start (any version).
    pub stats: CallCost,
    /// Calls whose version failed since the start (a failed fallback
    /// counts too).
    pub failures: u64,
    /// Calls another version answered after the active one failed, since
    /// the start.
    pub fallbacks: u64,
}

struct Entry {
    number: u32,
    info: VersionInfo,
    /// The compiled version, while it may still answer calls (None once it
    /// is rolled back or retired).
    version: Option<Arc<PolicyVersion>>,
    state: VersionState,
    note: Option<String>,
}

impl Entry {
    fn row(&self) -> HistoryEntry {
        HistoryEntry {
            number: self.number,
            state: self.state,
            info: self.info.clone(),
            note: self.note.clone(),
        }
    }

    fn is(&self, version: &Arc<PolicyVersion>) -> bool {
        self.version
            .as_ref()
            .is_some_and(|v| Arc::ptr_eq(v, version))
    }
}

/// One kind's slot: the active version, published atomically (arc-swap), the
/// history of every version loaded into it, fallback and rollback. Untyped:
/// [`PricingSlot`](super::PricingSlot) and its siblings wrap it with the
/// calls of their world.
pub struct PolicySlot {
    kind: PolicyKind,
    max_failures: u32,
    active: ArcSwapOption<PolicyVersion>,
    entries: Mutex<Vec<Entry>>,
    stats: Mutex<CallStats>,
    failures: std::sync::atomic::AtomicU64,
    fallbacks: std::sync::atomic::AtomicU64,
    /// Counts publications and rollbacks: the store saves the slot's
    /// versions when it moved.
    generation: std::sync::atomic::AtomicU64,
    /// The most bytes of compiled code the standbys may hold together.
    standby_memory: std::sync::atomic::AtomicU64,
}

/// A version the slot can still answer with, as the store keeps it: its
/// component by sha256 and what it was configured with. In a slot's saved
/// list the last is the active one, the others its standbys, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct SavedVersion {
    /// Where it was loaded from: `builtin:NAME`, a file path, or `upload`.
    pub source: String,
    /// The component's sha256, in hex: its key among the store's blobs.
    pub sha256: String,
    /// The parameters it was configured with, in order (for pricing, the
    /// host's defaults first).
    pub params: Vec<(String, String)>,
}

impl std::fmt::Debug for PolicySlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicySlot")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

/// A standby's code, for the retirement rule: versions of one component
/// share it.
#[derive(Debug, Clone, Copy)]
struct StandbyCode<'a> {
    sha256: &'a str,
    bytes: u64,
}

/// How many of `standbys` (newest first) a slot keeps: the newest ones, at
/// most [`STANDBY_KEPT`], whose code takes at most `budget` bytes together.
/// Code is counted once however many versions share it, and code the active
/// version (`active_sha256`) holds costs nothing: it stays in memory anyway.
fn standbys_kept(standbys: &[StandbyCode<'_>], active_sha256: &str, budget: u64) -> usize {
    let mut paid_for = vec![active_sha256];
    let mut used: u64 = 0;
    for (kept, standby) in standbys.iter().enumerate() {
        if kept == STANDBY_KEPT {
            return kept;
        }
        if !paid_for.contains(&standby.sha256) {
            used = used.saturating_add(standby.bytes);
            if used > budget {
                return kept;
            }
            paid_for.push(standby.sha256);
        }
    }
    standbys.len()
}

impl PolicySlot {
    /// An empty slot of `kind` whose versions roll back after
    /// `max_failures` failed calls in a row (at least 1).
    pub fn new(kind: PolicyKind, max_failures: u32) -> PolicySlot {
        PolicySlot {
            kind,
            max_failures: max_failures.max(1),
            active: ArcSwapOption::empty(),
            entries: Mutex::new(Vec::new()),
            stats: Mutex::new(CallStats::default()),
            failures: Default::default(),
            fallbacks: Default::default(),
            generation: Default::default(),
            standby_memory: STANDBY_MEMORY_DEFAULT.into(),
        }
    }

    /// From the next publication on, standbys beyond `bytes` of compiled
    /// code are retired, the oldest first.
    pub fn limit_standby_memory(&self, bytes: u64) {
        self.standby_memory
            .store(bytes, std::sync::atomic::Ordering::SeqCst);
    }

    /// The bytes of compiled code this slot's standbys may hold.
    pub fn standby_memory_limit(&self) -> u64 {
        self.standby_memory
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Moves on every publication and rollback.
    pub fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The versions that can still answer: standbys oldest first, then
    /// the active one (empty if none is active).
    pub fn saved_versions(&self) -> Vec<SavedVersion> {
        let entries = self.entries.lock().unwrap();
        let saved = |e: &Entry| SavedVersion {
            source: e.info.source.clone(),
            sha256: e.info.sha256.clone(),
            params: e.info.params.clone(),
        };
        let Some(active) = entries.iter().find(|e| e.state == VersionState::Active) else {
            return Vec::new();
        };
        entries
            .iter()
            .filter(|e| e.state == VersionState::Standby)
            .chain(std::iter::once(active))
            .map(saved)
            .collect()
    }

    /// The version answering calls now, if any.
    pub fn active(&self) -> Option<Arc<PolicyVersion>> {
        self.active.load_full()
    }

    /// Makes `version` the active one; the previous active one stays as the
    /// fallback. Calls already running finish on the version they started on.
    pub fn publish(&self, version: Arc<PolicyVersion>) {
        let mut entries = self.entries.lock().unwrap();
        for entry in entries
            .iter_mut()
            .filter(|e| e.state == VersionState::Active)
        {
            entry.state = VersionState::Standby;
        }
        let number = entries.len() as u32 + 1;
        entries.push(Entry {
            number,
            info: version.info.clone(),
            version: Some(version.clone()),
            state: VersionState::Active,
            note: None,
        });
        self.retire_standbys(&mut entries, &version);
        self.active.store(Some(version));
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    /// Retires the standbys beyond the newest few, or beyond the code they
    /// may hold: calls already running on one keep their own reference and
    /// finish.
    fn retire_standbys(&self, entries: &mut [Entry], active: &PolicyVersion) {
        let budget = self
            .standby_memory
            .load(std::sync::atomic::Ordering::SeqCst);
        let standbys: Vec<usize> = (0..entries.len())
            .rev()
            .filter(|&i| entries[i].state == VersionState::Standby)
            .collect();
        let code: Vec<StandbyCode> = standbys
            .iter()
            .map(|&i| StandbyCode {
                sha256: &entries[i].info.sha256,
                bytes: entries[i].version.as_ref().map_or(0, |v| v.code_bytes()) as u64,
            })
            .collect();
        let kept = standbys_kept(&code, &active.info.sha256, budget);
        for &i in &standbys[kept..] {
            let entry = &mut entries[i];
            entry.state = VersionState::Retired;
            entry.version = None;
            tracing::info!(
                kind = %self.kind,
                number = entry.number,
                policy = %entry.info.name,
                "standby version retired: a slot keeps at most {STANDBY_KEPT} standbys, within weft.policy.standby-memory-mb of code"
            );
        }
    }

    /// Takes the active version out and makes the newest earlier good one active.
    pub fn rollback(&self, reason: &str) -> Result<Arc<PolicyVersion>, String> {
        let active = self
            .active()
            .ok_or_else(|| format!("no {} policy is loaded", self.kind))?;
        self.roll_back_from(&active, false, reason)
    }

    fn roll_back_from(
        &self,
        from: &Arc<PolicyVersion>,
        automatic: bool,
        reason: &str,
    ) -> Result<Arc<PolicyVersion>, String> {
        let mut entries = self.entries.lock().unwrap();
        let current = entries
            .iter()
            .position(|e| e.state == VersionState::Active && e.is(from))
            .ok_or_else(|| {
                format!(
                    "the {} policy changed meanwhile; nothing rolled back",
                    self.kind
                )
            })?;
        let target = entries
            .iter()
            .rposition(|e| e.state == VersionState::Standby)
            .ok_or_else(|| {
                format!(
                    "there is no earlier good {} policy to roll back to",
                    self.kind
                )
            })?;
        entries[current].state = VersionState::RolledBack;
        entries[current].note = Some(reason.to_string());
        // Never called again: its code goes once running calls finish.
        entries[current].version = None;
        entries[target].state = VersionState::Active;
        let to = entries[target]
            .version
            .clone()
            .expect("a standby keeps its compiled version");
        self.active.store(Some(to.clone()));
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        drop(entries);
        PolicyEvent::RolledBack {
            kind: self.kind,
            from,
            to: &to,
            automatic,
            reason,
        }
        .emit();
        Ok(to)
    }

    /// The version that answers when the active one fails: the newest standby.
    fn fallback(&self) -> Option<Arc<PolicyVersion>> {
        let entries = self.entries.lock().unwrap();
        entries
            .iter()
            .rev()
            .find(|e| e.state == VersionState::Standby)
            .and_then(|e| e.version.clone())
    }

    /// Calls the active version with `call`, which also checks the output.
    /// If it fails, the last good version answers instead, and a version that
    /// has failed `max_failures` calls in a row is rolled back.
    pub fn call<R>(
        &self,
        call: impl Fn(&PolicyVersion) -> Result<R, CallError>,
    ) -> Result<R, CallError> {
        let active = self.active().ok_or(CallError::NoPolicy(self.kind))?;
        let error = match self.timed_call(&active, &call) {
            Ok(result) => return Ok(result),
            Err(error) => error,
        };
        let consecutive = active.record_failure();
        self.failures
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        PolicyEvent::CallFailed {
            version: &active,
            error: &error,
            consecutive,
        }
        .emit();
        if consecutive >= self.max_failures {
            let reason = format!("failed {consecutive} calls in a row; last: {error}");
            // Another thread may have rolled it back already; that is fine.
            let _ = self.roll_back_from(&active, true, &reason);
        }
        // After a rollback the new active version answers; otherwise the newest standby.
        let replacement = self
            .active()
            .filter(|a| !Arc::ptr_eq(a, &active))
            .or_else(|| self.fallback());
        let Some(fallback) = replacement.filter(|f| !Arc::ptr_eq(f, &active)) else {
            return Err(error);
        };
        self.fallbacks
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        PolicyEvent::FellBack {
            kind: self.kind,
            from: &active,
            to: &fallback,
        }
        .emit();
        self.timed_call(&fallback, &call)
            .inspect_err(|fallback_error| {
                let consecutive = fallback.record_failure();
                self.failures
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                PolicyEvent::CallFailed {
                    version: &fallback,
                    error: fallback_error,
                    consecutive,
                }
                .emit();
            })
    }

    /// Calls the active version with `call` on input a tenant chose (a
    /// quote): its failure is that caller's answer alone — not counted
    /// toward a rollback, no fallback — and its success does not clear the
    /// failures the host's own calls counted, so no tenant can roll a
    /// version back or keep a failing one in place.
    pub fn call_for_tenant<R>(
        &self,
        call: impl Fn(&PolicyVersion) -> Result<R, CallError>,
    ) -> Result<R, CallError> {
        let active = self.active().ok_or(CallError::NoPolicy(self.kind))?;
        call(&active)
    }

    /// What this kind's successful calls have cost since the start.
    pub fn cost(&self) -> CallCost {
        self.stats.lock().unwrap().cost()
    }

    fn timed_call<R>(
        &self,
        version: &PolicyVersion,
        call: &impl Fn(&PolicyVersion) -> Result<R, CallError>,
    ) -> Result<R, CallError> {
        let started = Instant::now();
        let result = call(version)?;
        let elapsed = started.elapsed();
        version.record_success();
        self.stats.lock().unwrap().record(elapsed.as_nanos() as u64);
        PolicyEvent::CallSucceeded { version, elapsed }.emit();
        Ok(result)
    }

    /// The active version, the history and the call figures, as the API
    /// shows them.
    pub fn status(&self) -> SlotStatus {
        let entries = self.entries.lock().unwrap();
        SlotStatus {
            kind: self.kind,
            active: entries
                .iter()
                .find(|e| e.state == VersionState::Active)
                .map(Entry::row),
            history: entries.iter().map(Entry::row).collect(),
            stats: self.cost(),
            failures: self.failures.load(std::sync::atomic::Ordering::Relaxed),
            fallbacks: self.fallbacks.load(std::sync::atomic::Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1 << 20;

    fn code(sha256: &str, mb: u64) -> StandbyCode<'_> {
        StandbyCode {
            sha256,
            bytes: mb * MB,
        }
    }

    #[test]
    fn standbys_are_kept_newest_first_within_the_count_and_the_code_budget() {
        // (standbys newest first, budget in MB, how many are kept)
        let cases: &[(&str, &[StandbyCode], u64, usize)] = &[
            ("none", &[], 512, 0),
            (
                "small ones up to the count",
                &[
                    code("a", 1),
                    code("b", 1),
                    code("c", 1),
                    code("d", 1),
                    code("e", 1),
                    code("f", 1),
                    code("g", 1),
                ],
                512,
                STANDBY_KEPT,
            ),
            (
                "python ones up to the budget",
                &[code("a", 35), code("b", 35), code("c", 35)],
                70,
                2,
            ),
            ("exactly the budget", &[code("a", 35), code("b", 35)], 70, 2),
            (
                "an older small one behind a big one is not kept",
                &[code("big", 100), code("small", 1)],
                50,
                0,
            ),
            (
                "shared code is counted once",
                &[code("a", 35), code("a", 35), code("a", 35)],
                35,
                3,
            ),
            (
                "the active one's code is free",
                &[code("active", 35), code("b", 35)],
                35,
                2,
            ),
            (
                "no budget keeps only what shares the active code",
                &[code("active", 35), code("b", 1)],
                0,
                1,
            ),
        ];
        for (case, standbys, budget_mb, expected) in cases {
            assert_eq!(
                standbys_kept(standbys, "active", budget_mb * MB),
                *expected,
                "{case}"
            );
        }
    }

    #[test]
    fn a_slot_retires_standbys_beyond_its_code_budget_but_never_the_active_one() {
        let engine = super::super::PolicyEngine::new(
            crate::config::CallLimits::default(),
            std::sync::Arc::new(crate::clock::VirtualClock::default()),
        )
        .unwrap();
        let load = |name: &str| {
            super::super::prepare(
                &engine,
                PolicyKind::Pricing,
                &format!("builtin:{name}"),
                super::super::builtin(name).unwrap(),
                crate::config::Settings::default().pricing_params,
            )
            .unwrap()
        };
        let (hops, flat) = (load("hops-pricing"), load("flat-pricing"));
        assert!(hops.code_bytes() > 0 && flat.code_bytes() > 0);
        let slot = PolicySlot::new(PolicyKind::Pricing, 3);
        // Room for one component's code: enough, as the active one's is free.
        slot.limit_standby_memory(hops.code_bytes().max(flat.code_bytes()) as u64);
        for version in [&hops, &flat, &hops, &flat] {
            slot.publish(version.clone());
        }
        let states =
            || -> Vec<VersionState> { slot.status().history.iter().map(|e| e.state).collect() };
        use VersionState::{Active, Retired, Standby};
        // flat is active and its code free; hops's fits, counted once.
        assert_eq!(states(), [Standby, Standby, Standby, Active]);

        // No budget: the newest standby (flat) has code the active one
        // (hops) does not share, so it goes, and every older one with it.
        slot.limit_standby_memory(0);
        slot.publish(hops.clone());
        assert_eq!(states(), [Retired, Retired, Retired, Retired, Active]);
        assert_eq!(slot.active().unwrap().info.name, "hops-pricing");
        assert!(
            slot.rollback("test").is_err(),
            "nothing left to roll back to"
        );

        // Room again: the next publication keeps the one it demotes.
        slot.limit_standby_memory(STANDBY_MEMORY_DEFAULT);
        slot.publish(flat.clone());
        assert_eq!(
            states(),
            [Retired, Retired, Retired, Retired, Standby, Active]
        );
        assert_eq!(slot.rollback("test").unwrap().info.name, "hops-pricing");
    }
}
