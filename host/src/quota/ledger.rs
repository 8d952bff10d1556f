//! The quota ledger: per project the credits remaining and used, per
//! (project, user, day) the credits used that day. Kept in memory and written
//! through to the store one flush at a time.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::store::{Batch, Store, StoreError, Value};

/// A project's account.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ProjectQuota {
    /// Credits left, after every grant and charge; negative when in debt.
    pub remaining: f64,
    /// Credits it was charged, in all.
    pub total_used: f64,
}

/// (project, user, day as YYYY-MM-DD in UTC).
pub type DailyKey = (String, String, String);

/// The new values of every row one flush changed, for the store.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct LedgerDelta {
    /// Each changed project's account, as it now stands.
    pub projects: BTreeMap<String, ProjectQuota>,
    /// Each changed (project, user, day)'s credits used that day, as it now
    /// stands.
    pub daily: BTreeMap<DailyKey, f64>,
}

impl LedgerDelta {
    /// Whether no row changed.
    pub fn is_empty(&self) -> bool {
        self.projects.is_empty() && self.daily.is_empty()
    }

    /// Takes `later`'s rows over these (each row is a new absolute value).
    pub fn merge(&mut self, later: LedgerDelta) {
        self.projects.extend(later.projects);
        self.daily.extend(later.daily);
    }
}

/// One charge to apply.
#[derive(Debug, Clone, PartialEq)]
pub struct Charge {
    /// The project charged.
    pub project: String,
    /// The user charged (the app's submitter).
    pub user: String,
    /// When the charge was computed, in ms since the epoch: it picks the day.
    pub at_ms: u64,
    /// The credits charged.
    pub credits: f64,
}

/// Every project's account and every (project, user, day)'s credits used, in
/// memory; the store keeps the same rows (`project_quota`, `daily_usage`).
#[derive(Debug, Clone, Default)]
pub struct QuotaLedger {
    default_credits: f64,
    projects: BTreeMap<String, ProjectQuota>,
    daily: BTreeMap<DailyKey, f64>,
}

impl QuotaLedger {
    /// An empty ledger in which a project starts with `default_credits`
    /// (`weft.quota.default-credits`).
    pub fn new(default_credits: f64) -> QuotaLedger {
        QuotaLedger {
            default_credits,
            ..QuotaLedger::default()
        }
    }

    /// Restores the rows the store holds.
    pub fn restore(
        &mut self,
        projects: impl IntoIterator<Item = (String, ProjectQuota)>,
        daily: impl IntoIterator<Item = (DailyKey, f64)>,
    ) {
        self.projects.extend(projects);
        self.daily.extend(daily);
    }

    /// Gives `project` `credits` remaining (e.g. replay's --initial-credits).
    pub fn set_credits(&mut self, project: &str, credits: f64) -> LedgerDelta {
        let account = self.account(project);
        account.remaining = credits;
        let quota = *account;
        LedgerDelta {
            projects: BTreeMap::from([(project.to_string(), quota)]),
            daily: BTreeMap::new(),
        }
    }

    /// Adds `credits` to what `project` has left (an administrator's
    /// grant); the caller bounds `credits`.
    pub fn grant(&mut self, project: &str, credits: f64) -> LedgerDelta {
        let account = self.account(project);
        account.remaining += credits;
        let quota = *account;
        LedgerDelta {
            projects: BTreeMap::from([(project.to_string(), quota)]),
            daily: BTreeMap::new(),
        }
    }

    /// What `project` has left: the default credits if it was never charged.
    pub fn remaining(&self, project: &str) -> f64 {
        self.projects
            .get(project)
            .map_or(self.default_credits, |account| account.remaining)
    }

    fn account(&mut self, project: &str) -> &mut ProjectQuota {
        let default = self.default_credits;
        self.projects
            .entry(project.to_string())
            .or_insert(ProjectQuota {
                remaining: default,
                total_used: 0.0,
            })
    }

    /// Applies `charges`; returns the rows they changed.
    pub fn apply(&mut self, charges: &[Charge]) -> LedgerDelta {
        let mut delta = LedgerDelta::default();
        for charge in charges {
            let account = self.account(&charge.project);
            account.remaining -= charge.credits;
            account.total_used += charge.credits;
            delta.projects.insert(charge.project.clone(), *account);
            let key = (
                charge.project.clone(),
                charge.user.clone(),
                day_of(charge.at_ms),
            );
            let day = self.daily.entry(key.clone()).or_insert(0.0);
            *day += charge.credits;
            delta.daily.insert(key, *day);
        }
        delta
    }

    /// Every project's account, by name: those charged, granted or given
    /// credits.
    pub fn projects(&self) -> &BTreeMap<String, ProjectQuota> {
        &self.projects
    }

    /// The credits used per (project, user, UTC day).
    pub fn daily(&self) -> &BTreeMap<DailyKey, f64> {
        &self.daily
    }
}

/// The UTC day of `ms` since the epoch, as YYYY-MM-DD.
pub fn day_of(ms: u64) -> String {
    let seconds = i64::try_from(ms / 1000).unwrap_or(i64::MAX);
    chrono::DateTime::from_timestamp(seconds, 0)
        .map(|t| t.format("%Y-%m-%d").to_string())
        .unwrap_or_else(|| "9999-12-31".into())
}

/// The ledger's rows in the store: read at start, written one flush at a
/// time.
impl Store {
    /// Applies one flush of charges in one transaction.
    pub fn apply(&self, delta: &LedgerDelta) -> Result<(), StoreError> {
        let mut batch = Batch::default();
        batch.ledger(delta);
        self.commit(&batch)
    }

    /// Every project's account.
    pub fn projects(&self) -> Result<Vec<(String, ProjectQuota)>, StoreError> {
        self.query(
            "SELECT project, remaining, total_used FROM project_quota ORDER BY project",
            &[],
        )?
        .into_iter()
        .map(|row| match (row.first(), row.get(1), row.get(2)) {
            (Some(Value::Text(project)), Some(remaining), Some(total_used)) => Ok((
                project.clone(),
                ProjectQuota {
                    remaining: remaining.as_f64().unwrap_or(0.0),
                    total_used: total_used.as_f64().unwrap_or(0.0),
                },
            )),
            _ => Err(self.corrupt("a project_quota row", "not (text, number, number)")),
        })
        .collect()
    }

    /// Every (project, user, day)'s credits used.
    pub fn daily(&self) -> Result<Vec<(DailyKey, f64)>, StoreError> {
        self.query(
            "SELECT project, \"user\", day, credits FROM daily_usage ORDER BY project, \"user\", day",
            &[],
        )?
        .into_iter()
        .map(|row| match <[Value; 4]>::try_from(row) {
            Ok([Value::Text(project), Value::Text(user), Value::Text(day), credits]) => {
                Ok(((project, user, day), credits.as_f64().unwrap_or(0.0)))
            }
            _ => Err(self.corrupt("a daily_usage row", "not (text, text, text, number)")),
        })
        .collect()
    }
}

impl Batch {
    /// The new values of every ledger row one flush changed.
    pub fn ledger(&mut self, delta: &LedgerDelta) {
        for (project, quota) in &delta.projects {
            self.push(
                "INSERT INTO project_quota (project, remaining, total_used) VALUES (?1, ?2, ?3)
                 ON CONFLICT (project) DO UPDATE SET remaining = excluded.remaining, total_used = excluded.total_used",
                vec![
                    project.as_str().into(),
                    quota.remaining.into(),
                    quota.total_used.into(),
                ],
            );
        }
        for ((project, user, day), credits) in &delta.daily {
            self.push(
                "INSERT INTO daily_usage (project, \"user\", day, credits) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (project, \"user\", day) DO UPDATE SET credits = excluded.credits",
                vec![
                    project.as_str().into(),
                    user.as_str().into(),
                    day.as_str().into(),
                    (*credits).into(),
                ],
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn charge(project: &str, user: &str, at_ms: u64, credits: f64) -> Charge {
        Charge {
            project: project.into(),
            user: user.into(),
            at_ms,
            credits,
        }
    }

    #[test]
    fn charges_move_credits_from_remaining_to_used() {
        let mut ledger = QuotaLedger::new(0.0);
        ledger.set_credits("p", 50.0);
        let delta = ledger.apply(&[
            charge("p", "u", 0, 20.0),
            charge("p", "v", 86_400_000, 10.0),
        ]);
        assert_eq!(
            ledger.projects()["p"],
            ProjectQuota {
                remaining: 20.0,
                total_used: 30.0
            }
        );
        assert_eq!(delta.projects["p"].total_used, 30.0);
        assert_eq!(
            ledger.daily()[&("p".into(), "u".into(), "1970-01-01".into())],
            20.0
        );
        assert_eq!(
            ledger.daily()[&("p".into(), "v".into(), "1970-01-02".into())],
            10.0
        );
    }

    #[test]
    fn unknown_projects_start_with_the_default_credits() {
        let mut ledger = QuotaLedger::new(100.0);
        ledger.apply(&[charge("q", "u", 0, 1.5)]);
        assert_eq!(
            ledger.projects()["q"],
            ProjectQuota {
                remaining: 98.5,
                total_used: 1.5
            }
        );
    }

    #[test]
    fn days_are_utc() {
        assert_eq!(day_of(0), "1970-01-01");
        assert_eq!(day_of(86_399_999), "1970-01-01");
        assert_eq!(day_of(1_763_683_200_000), "2025-11-21");
    }
}
