//! Budgets: what a project's credits left allow under
//! `weft.quota.budget.*` (ok, low, exhausted; unenforced when budgets are
//! off), and how fast it spends them — its burn rate, the credits it spent
//! in the last hour.

use std::collections::{HashMap, VecDeque};

use serde::Serialize;

use super::QuotaLedger;
use crate::config::BudgetSettings;

/// Where a project's credits stand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum BudgetState {
    /// Budgets are not enforced (`weft.quota.budget.enforce = off`):
    /// nothing is low or exhausted, whatever the balance.
    Unenforced,
    /// Enforced, with at least `weft.quota.budget.warn-credits` left.
    Ok,
    /// Fewer credits left than `weft.quota.budget.warn-credits`.
    Low,
    /// None left (zero or in debt).
    Exhausted,
}

impl BudgetState {
    /// The state of a project with `remaining` credits left under `settings`.
    pub fn of(remaining: f64, settings: &BudgetSettings) -> BudgetState {
        if settings.enforce == crate::config::BudgetEnforcement::Off {
            BudgetState::Unenforced
        } else if remaining <= 0.0 {
            BudgetState::Exhausted
        } else if remaining < settings.warn_credits {
            BudgetState::Low
        } else {
            BudgetState::Ok
        }
    }

    /// Its name, as serialized: `unenforced`, `ok`, `low` or `exhausted`.
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetState::Unenforced => "unenforced",
            BudgetState::Ok => "ok",
            BudgetState::Low => "low",
            BudgetState::Exhausted => "exhausted",
        }
    }
}

/// How far back the burn rate looks.
pub const BURN_WINDOW_MS: u64 = 3_600_000;

/// Samples closer together than this are merged (the newer kept), so a
/// project keeps at most about 120 for the window however often it is charged.
const SAMPLE_SPACING_MS: u64 = 30_000;

/// Each project's credits used over the last hour, as (ms, total used)
/// samples: its burn rate and the chart of it. Kept in memory; after a
/// restart the rate starts again from the first samples.
#[derive(Debug, Default)]
pub struct BurnRates {
    samples: HashMap<String, VecDeque<(u64, f64)>>,
}

impl BurnRates {
    /// Records every project's total used at `now`.
    pub fn sample(&mut self, now: u64, ledger: &QuotaLedger) {
        for (project, account) in ledger.projects() {
            self.sample_one(now, project, account.total_used);
        }
    }

    /// Records `projects`' totals at `now` (those a flush just charged).
    pub fn sample_some<'a>(
        &mut self,
        now: u64,
        ledger: &QuotaLedger,
        projects: impl IntoIterator<Item = &'a String>,
    ) {
        for project in projects {
            if let Some(account) = ledger.projects().get(project) {
                self.sample_one(now, project, account.total_used);
            }
        }
    }

    /// Records `project`'s total at `at`, if nothing of it is recorded
    /// yet: what it had used before its first charges this server saw.
    pub fn baseline(&mut self, at: u64, project: &str, total_used: f64) {
        if !self.samples.contains_key(project) {
            self.sample_one(at, project, total_used);
        }
    }

    fn sample_one(&mut self, now: u64, project: &str, total_used: f64) {
        {
            let samples = self.samples.entry(project.to_string()).or_default();
            if samples.back().is_some_and(|&(at, _)| now < at) {
                return; // the clock stepped back: keep the samples monotonic
            }
            let len = samples.len();
            if len >= 2 && now - samples[len - 2].0 < SAMPLE_SPACING_MS {
                samples[len - 1] = (now, total_used);
            } else {
                samples.push_back((now, total_used));
            }
            while samples.len() > 2
                && samples
                    .front()
                    .is_some_and(|&(at, _)| at + BURN_WINDOW_MS < now)
            {
                samples.pop_front();
            }
        }
    }

    /// Credits `project` spent in the last hour (up to its latest
    /// sample): what it really spent, not a rate extrapolated from a few
    /// minutes. Since its first sample if that is later (a project new to
    /// this server, or a server up for less than an hour): never more than
    /// it spent.
    pub fn per_hour(&self, project: &str) -> f64 {
        let Some(&(last_at, last)) = self.samples.get(project).and_then(|s| s.back()) else {
            return 0.0;
        };
        let samples = &self.samples[project];
        let window_start = last_at.saturating_sub(BURN_WINDOW_MS);
        // The newest sample at or before the window's start, else the first.
        let baseline = samples
            .iter()
            .take_while(|(at, _)| *at <= window_start)
            .last()
            .or(samples.front())
            .map_or(last, |&(_, used)| used);
        (last - baseline).max(0.0)
    }

    /// `project`'s samples, oldest first: (ms since the epoch, total used).
    pub fn history(&self, project: &str) -> Vec<(u64, f64)> {
        self.samples
            .get(project)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BudgetEnforcement;
    use crate::quota::Charge;

    fn charge(ledger: &mut QuotaLedger, credits: f64, at_ms: u64) {
        ledger.apply(&[Charge {
            project: "p".into(),
            user: "u".into(),
            at_ms,
            credits,
        }]);
    }

    #[test]
    fn states_follow_the_credits_left() {
        let settings = BudgetSettings {
            enforce: BudgetEnforcement::RefuseNew,
            warn_credits: 100.0,
        };
        assert_eq!(BudgetState::of(150.0, &settings), BudgetState::Ok);
        assert_eq!(BudgetState::of(99.5, &settings), BudgetState::Low);
        assert_eq!(BudgetState::of(0.0, &settings), BudgetState::Exhausted);
        assert_eq!(BudgetState::of(-3.0, &settings), BudgetState::Exhausted);
    }

    #[test]
    fn the_burn_rate_is_the_last_hours_spending_per_hour() {
        let (mut ledger, mut burn) = (QuotaLedger::new(0.0), BurnRates::default());
        // 1 credit a second for two hours, sampled every second.
        for second in 0..=7200u64 {
            if second > 0 {
                charge(&mut ledger, 1.0, second * 1000);
            }
            burn.sample(second * 1000, &ledger);
        }
        // Samples are 30 s apart: the hour's start is found to within one.
        assert!(
            (burn.per_hour("p") - 3600.0).abs() <= 30.0,
            "{}",
            burn.per_hour("p")
        );
        let history = burn.history("p");
        assert!(history.len() <= 125, "{} samples", history.len());
        assert!(history[0].0 >= 3_600_000 - SAMPLE_SPACING_MS, "{history:?}");
        assert_eq!(history.last().copied(), Some((7_200_000, 7200.0)));
        assert_eq!(burn.per_hour("unknown"), 0.0);
    }

    #[test]
    fn a_few_minutes_of_spending_is_what_was_spent_not_an_extrapolation() {
        let (mut ledger, mut burn) = (QuotaLedger::new(0.0), BurnRates::default());
        // Before its first charge: nothing used.
        burn.baseline(30_000, "p", 0.0);
        // 740 credits over five minutes: 740 in the last hour, not 8,880/h.
        for minute in 1..=5u64 {
            charge(&mut ledger, 148.0, minute * 60_000);
            burn.sample(minute * 60_000, &ledger);
        }
        assert!(
            (burn.per_hour("p") - 740.0).abs() < 1e-9,
            "{}",
            burn.per_hour("p")
        );
    }

    #[test]
    fn unenforced_budgets_are_neither_low_nor_exhausted() {
        let settings = BudgetSettings {
            enforce: BudgetEnforcement::Off,
            warn_credits: 100.0,
        };
        assert_eq!(BudgetState::of(-10.0, &settings), BudgetState::Unenforced);
        assert_eq!(BudgetState::of(50.0, &settings).as_str(), "unenforced");
    }

    #[test]
    fn one_sample_or_a_clock_that_steps_back_gives_no_rate() {
        let (mut ledger, mut burn) = (QuotaLedger::new(0.0), BurnRates::default());
        charge(&mut ledger, 5.0, 10_000);
        burn.sample(10_000, &ledger);
        assert_eq!(burn.per_hour("p"), 0.0);
        burn.sample(5_000, &ledger);
        assert_eq!(burn.history("p"), vec![(10_000, 5.0)]);
    }
}
