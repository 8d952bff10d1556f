//! Budgets enforced by the resource manager (`weft.quota.budget.enforce`):
//! a project with no credits left starts no new app and its pending
//! containers wait for a grant (refuse-new); its running containers are
//! preempted as well, charged to their end (stop-running). Administrators
//! grant credits; each project's standing — credits left, burn rate,
//! state, daily use — is read here for the API, the CLI and the web UI.

use serde::Serialize;
use utoipa::ToSchema;

use super::ResourceManager;
use super::requests::RequestError;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::cluster::{Container, Placement};
use crate::config::BudgetEnforcement;
use crate::metrics::{ProjectLabels, label, metrics};
use crate::quota::{BudgetState, DailyKey, Uncharged};
use crate::scheduler::HeldProjects;
use crate::security::Caller;
use crate::store::Grant;

/// A project's budget now.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ProjectBudget {
    /// The project's name, as apps name it.
    pub project: String,
    /// Credits left (negative: in debt).
    pub remaining: f64,
    /// Credits charged to it in all, ever.
    pub total_used: f64,
    /// Credits spent in the last hour, as this server saw it (since it
    /// first saw the project, if less than an hour ago): what was spent,
    /// not an extrapolation.
    pub burn_rate_per_hour: f64,
    /// Hours until none is left at that rate; none when it is not
    /// spending or has none left.
    pub hours_left: Option<f64>,
    /// Where its credits stand: ok, low, exhausted, or unenforced when
    /// budgets are not enforced.
    pub state: BudgetState,
}

/// Every project's budget and the rules they are held to.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Budgets {
    /// How budgets are enforced (`weft.quota.budget.enforce`; off while
    /// quota is off).
    pub enforce: BudgetEnforcement,
    /// Below this many credits left a project is `low`.
    pub warn_credits: f64,
    /// What a project never granted nor charged has.
    pub default_credits: f64,
    /// Every project the ledger knows, by name.
    pub projects: Vec<ProjectBudget>,
}

/// One project in full: its budget, use per day and user, spending over
/// the last hour and the latest grants.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ProjectDetail {
    /// Its budget now (its fields at the top level of the JSON).
    #[serde(flatten)]
    pub budget: ProjectBudget,
    /// How budgets are enforced (`weft.quota.budget.enforce`; off while
    /// quota is off).
    pub enforce: BudgetEnforcement,
    /// The last 31 days with use, newest first (at most 10,000 rows).
    pub daily: Vec<DailyUse>,
    /// (ms since the epoch, total used) over the last hour, oldest first.
    pub history: Vec<UsedAt>,
    /// The latest 20 grants, newest first.
    pub grants: Vec<Grant>,
}

/// What one user's apps charged a project on one day.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct DailyUse {
    /// YYYY-MM-DD (UTC).
    pub day: String,
    /// The user whose apps were charged.
    pub user: String,
    /// Credits charged that day.
    pub credits: f64,
}

/// A sample of a project's total use, as the burn rate is computed from.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct UsedAt {
    /// When it was sampled (by QUOTA_COMPUTE, or a flush that charged the
    /// project), in ms since the epoch.
    pub at_ms: u64,
    /// The project's total credits used then.
    pub total_used: f64,
}

/// Days of use a project's detail lists.
const DAILY_DAYS: usize = 31;
/// Grants a project's detail lists.
pub const GRANTS_SHOWN: usize = 20;
/// The most (day, user) rows a project's detail lists.
const MAX_DAILY_ROWS: usize = 10_000;

impl ResourceManager {
    /// The enforcement in force: none while quota is off.
    fn enforcing(&self) -> BudgetEnforcement {
        let settings = self.quota.settings();
        if settings.enabled {
            settings.budget.enforce
        } else {
            BudgetEnforcement::Off
        }
    }

    /// The projects of active apps that have no credits left, when budgets
    /// are enforced: their pending containers are not placed.
    pub(crate) fn held_projects(&self) -> HeldProjects {
        let mut held = HeldProjects::new();
        if self.enforcing() == BudgetEnforcement::Off {
            return held;
        }
        for app in self.cluster.active_apps().map(|i| &self.cluster.apps()[i]) {
            if !held.contains(&app.project)
                && self.quota.budget_state(&app.project) == BudgetState::Exhausted
            {
                held.insert(app.project.clone());
            }
        }
        held
    }

    /// The round's placements, trimmed so that no project is given more
    /// new containers than its credits pay for at their minimum runtime,
    /// after what it has already committed: its running containers' rest
    /// of their minimum, usage owed and not yet charged, and the minimum
    /// of those placed but not yet started, and `earlier`, what this
    /// pass's earlier rounds admitted (in the policy's order; the rest
    /// wait). One pricing call.
    pub(crate) fn affordable(
        quota: &mut crate::quota::QuotaService,
        pricing: &dyn crate::quota::Pricing,
        cluster: &crate::cluster::Cluster,
        placements: Vec<Placement>,
        earlier: &[Placement],
        now: u64,
    ) -> Vec<Placement> {
        let minimum = quota.settings().min_runtime_ms as f64 / 1000.0;
        let app_of = |p: &Placement| &cluster.apps()[p.app];
        let size = |p: &Placement| app_of(p).asks[p.ask].resources;
        let projects: HashSet<&str> = placements
            .iter()
            .map(|p| app_of(p).project.as_str())
            .collect();
        // A row for one new container of each placement, for the minimum
        // runtime from now, in the context it would run in (its app's, on
        // its node); then what each project has committed already.
        let mut context_of = |app: &crate::cluster::App, ask: usize, node: Option<&str>| {
            let node = node.and_then(|id| cluster.node(id));
            let execution_type = app.asks.get(ask).map(|a| a.execution_type);
            quota.context(super::charging::charge_context(
                cluster,
                app,
                node,
                execution_type.unwrap_or_default(),
            ))
        };
        let node_ids: Vec<&str> = cluster.nodes().map(|n| n.id.as_str()).collect();
        let node_id = |p: &Placement| node_ids.get(p.node).copied();
        let row = |context, resources, seconds| Uncharged {
            project: Arc::from(""),
            context,
            resources,
            seconds,
            from_ms: now,
        };
        let mut rows: Vec<Uncharged> = placements
            .iter()
            .map(|p| row(context_of(app_of(p), p.ask, node_id(p)), size(p), minimum))
            .collect();
        let mut committed_rows: Vec<&str> = Vec::new();
        let mut committed = Vec::new();
        // What earlier rounds of this pass admitted (other partitions,
        // constrained asks): allocated, but not yet known to the quota.
        for placement in earlier {
            let app = app_of(placement);
            if let Some(project) = projects.get(app.project.as_str()).copied() {
                committed_rows.push(project);
                let seconds = minimum * f64::from(placement.count);
                committed.push(row(
                    context_of(app, placement.ask, node_id(placement)),
                    size(placement),
                    seconds,
                ));
            }
        }
        for container in cluster.containers().filter(|c| c.launched_ms.is_none()) {
            let Some(app) = cluster.app(&container.app) else {
                continue;
            };
            if let Some(project) = projects.get(app.project.as_str()).copied() {
                committed_rows.push(project);
                let context = context_of(app, container.ask, Some(container.node.as_str()));
                committed.push(row(context, container.resources, minimum));
            }
        }
        for uncharged in quota.uncharged(&projects) {
            let project = projects
                .get(&*uncharged.project)
                .copied()
                .unwrap_or_default();
            committed_rows.push(project);
            committed.push(uncharged);
        }
        let new_rows = rows.len();
        rows.extend(committed);
        let charges = match quota.price_rows(pricing, &rows) {
            Ok(charges) => charges,
            Err(error) => {
                tracing::warn!(%error, "cannot price new containers' minimum runtime; the round's placements stand");
                return placements;
            }
        };
        let (new, committed) = charges.split_at(new_rows);
        let mut left: HashMap<&str, f64> = projects
            .iter()
            .map(|project| (*project, quota.credits_left(project)))
            .collect();
        for (project, charge) in committed_rows.iter().zip(committed) {
            if let Some(credits) = left.get_mut(project) {
                *credits -= charge;
            }
        }
        let mut admitted = Vec::with_capacity(placements.len());
        for (mut placement, charge) in placements.into_iter().zip(new.iter().copied()) {
            let project = cluster.apps()[placement.app].project.as_str();
            // Free (or not a number, which a checked policy never answers).
            if charge.is_nan() || charge <= 0.0 {
                admitted.push(placement);
                continue;
            }
            let credits = left.entry(project).or_insert(0.0);
            let affordable = (*credits / charge).floor().clamp(0.0, f64::from(u32::MAX)) as u32;
            if affordable < placement.count {
                tracing::debug!(
                    project,
                    wanted = placement.count,
                    affordable,
                    "fewer containers placed: the project's credits pay for no more"
                );
                placement.count = affordable;
            }
            *credits -= f64::from(placement.count) * charge;
            if placement.count > 0 {
                admitted.push(placement);
            }
        }
        admitted
    }

    /// Whether a round's placements are trimmed to what projects can pay
    /// for (see [`ResourceManager::affordable`]).
    pub(crate) fn budgets_trim_rounds(&self) -> bool {
        self.enforcing() != BudgetEnforcement::Off && self.quota.settings().min_runtime_ms > 0
    }

    /// Refuses a new app of a project with no credits left (refuse-new
    /// and stop-running), saying what it has.
    pub(crate) fn check_budget(&self, project: &str) -> Result<(), RequestError> {
        let enforce = self.enforcing();
        if enforce == BudgetEnforcement::Off
            || self.quota.budget_state(project) != BudgetState::Exhausted
        {
            return Ok(());
        }
        Err(RequestError::OverBudget(format!(
            "project {project:?} has no credits left: balance {:.2} credits (weft.quota.budget.enforce = {}); an administrator can grant more (weft quota grant {project} CREDITS)",
            self.quota.ledger().remaining(project),
            enforce.as_str()
        )))
    }

    /// Refuses, while budgets are enforced, an app nothing of which its
    /// project can pay for: every ask's first step (one container, or its
    /// gang's minimum) would cost more than the project has left for its
    /// minimum runtime alone (`yarn.resourcemanager.quota.min.runtime`), at
    /// today's prices — the pricing policy's `quote`. An app that can start
    /// is accepted; the rounds then admit no more of it than its credits pay
    /// for. A policy that cannot quote refuses nothing.
    pub(crate) fn check_quote(
        &self,
        request: &crate::cluster::SubmitApp,
        leaf: usize,
    ) -> Result<(), RequestError> {
        use super::charging::Containers;
        let minimum = self.quota.settings().min_runtime_ms;
        if self.enforcing() == BudgetEnforcement::Off || minimum == 0 {
            return Ok(());
        }
        let now = self.now();
        let pricing = self.policies.pricing();
        let quoted = self.price_app(
            request,
            leaf,
            Some(minimum),
            Containers::First,
            now,
            pricing,
        );
        let asks = match quoted {
            Ok((asks, _)) => asks,
            Err(error) => {
                tracing::warn!(%error, "cannot quote a submission; its budget is checked as it runs");
                return Ok(());
            }
        };
        let left = self.quota.credits_left(&request.project);
        let Some(cheapest) = asks.iter().map(|a| a.credits).min_by(f64::total_cmp) else {
            return Ok(());
        };
        if cheapest > left {
            return Err(RequestError::OverBudget(format!(
                "project {:?} has {left:.2} credits left, but the least of this app that can start would cost {cheapest:.2} for its minimum runtime of {} ms alone (yarn.resourcemanager.quota.min.runtime; weft.quota.budget.enforce = {}); an administrator can grant more (weft quota grant {} CREDITS)",
                request.project,
                minimum,
                self.enforcing().as_str(),
                request.project
            )));
        }
        Ok(())
    }

    /// Why a pending app of a held project waits, with the figures.
    pub(crate) fn budget_reason(&self, project: &str) -> Option<String> {
        if self.enforcing() == BudgetEnforcement::Off
            || self.quota.budget_state(project) != BudgetState::Exhausted
        {
            return None;
        }
        let used = self
            .quota
            .ledger()
            .projects()
            .get(project)
            .map_or(0.0, |account| account.total_used);
        Some(format!(
            "budget exhausted: project {project} has {:.2} credits left ({used:.2} used); its containers wait for a grant (weft quota grant {project} CREDITS)",
            self.quota.ledger().remaining(project)
        ))
    }

    /// stop-running: preempts every running container of a project with
    /// no credits left (each is charged to its end; its app asks for it
    /// again, held until a grant). Whether any was.
    pub(super) fn stop_exhausted_projects(&mut self) -> bool {
        if self.enforcing() != BudgetEnforcement::StopRunning {
            return false;
        }
        let held = self.held_projects();
        if held.is_empty() {
            return false;
        }
        // Only the held projects' apps that run something, their running
        // containers found in their own records (a walk over all
        // containers only for an app whose records lost one).
        let mut victims: Vec<String> = Vec::new();
        let mut walk_all = false;
        for app in self.cluster.active_apps().map(|i| &self.cluster.apps()[i]) {
            if app.running_containers == 0 || !held.contains(&app.project) {
                continue;
            }
            let before = victims.len();
            victims.extend(
                app.containers
                    .iter()
                    .filter(|record| record.finish_time_ms.is_none())
                    .map(|record| record.id.clone()),
            );
            walk_all |= victims.len() - before < app.running_containers as usize;
        }
        if walk_all {
            victims = self
                .cluster
                .containers()
                .filter(|c| {
                    self.cluster
                        .app(&c.app)
                        .is_some_and(|app| held.contains(&app.project))
                })
                .map(|c| c.id.clone())
                .collect();
        }
        if victims.is_empty() {
            return false;
        }
        let now = self.now();
        let preempted: Vec<Container> = victims
            .iter()
            .filter_map(|id| self.cluster.preempt(id, now))
            .collect();
        tracing::warn!(projects = ?held, containers = preempted.len(), "budget exhausted: running containers preempted (weft.quota.budget.enforce = stop-running)");
        metrics().budget_preemptions.inc_by(preempted.len() as u64);
        self.containers_finished(&preempted, now);
        true
    }

    /// An administrator adds `credits` to `project`'s (a top-up); its
    /// pending containers are placed again at the next round.
    pub fn grant_credits(
        &mut self,
        caller: &Caller,
        project: &str,
        credits: f64,
    ) -> Result<ProjectBudget, RequestError> {
        self.security
            .check_admin(caller, &format!("grant credits to project {project:?}"))
            .map_err(RequestError::NotAllowed)?;
        crate::limits::name("project", project)?;
        crate::limits::grant_credits("credits", credits)?;
        if !self.security.project_exists(project) {
            return Err(RequestError::Unknown(format!(
                "project {project:?} is not in the projects file (weft.security.projects-file)"
            )));
        }
        let now = self.now();
        let remaining = self.quota.grant(project, credits);
        if let Some(last) = self.last_grant {
            let seq = last + 1;
            self.last_grant = Some(seq);
            self.unsaved
                .put_grant(seq, project, now, credits, &caller.user);
        }
        tracing::info!(project, credits, remaining, by = %caller.user, "credits granted");
        Ok(self.project_budget(project))
    }

    /// `project`'s budget now (a project never charged nor granted has the
    /// default credits).
    pub fn project_budget(&self, project: &str) -> ProjectBudget {
        let ledger = self.quota.ledger();
        let remaining = ledger.remaining(project);
        let total_used = ledger
            .projects()
            .get(project)
            .map_or(0.0, |account| account.total_used);
        let burn_rate_per_hour = self.quota.burn_rates().per_hour(project);
        ProjectBudget {
            project: project.to_string(),
            remaining,
            total_used,
            burn_rate_per_hour,
            hours_left: (burn_rate_per_hour > 0.0 && remaining > 0.0)
                .then(|| remaining / burn_rate_per_hour),
            state: self.quota.budget_state(project),
        }
    }

    /// Every project the ledger knows, by name.
    pub fn budgets(&self) -> Budgets {
        let settings = self.quota.settings();
        Budgets {
            enforce: self.enforcing(),
            warn_credits: settings.budget.warn_credits,
            default_credits: settings.default_credits,
            projects: self
                .quota
                .ledger()
                .projects()
                .keys()
                .map(|project| self.project_budget(project))
                .collect(),
        }
    }

    /// `project` in full, but its grants (the store's: `Store::grants`,
    /// read off the loop by the caller).
    pub fn project_detail(&self, project: &str) -> Result<ProjectDetail, RequestError> {
        crate::limits::name("project", project)?;
        let ledger = self.quota.ledger();
        if !ledger.projects().contains_key(project) && !self.security.project_exists(project) {
            return Err(RequestError::Unknown(format!(
                "no project {project:?}: never charged nor granted, and not in the projects file"
            )));
        }
        // The last 31 days' rows only (days are UTC dates, so they compare
        // as text); at most MAX_DAILY_ROWS of them.
        let since = crate::quota::day_of(
            self.now()
                .saturating_sub(DAILY_DAYS as u64 * 86_400_000)
                .saturating_add(86_400_000),
        );
        let start: DailyKey = (project.to_string(), String::new(), String::new());
        let mut daily: Vec<DailyUse> = ledger
            .daily()
            .range(start..)
            .take_while(|((p, _, _), _)| p == project)
            .filter(|((_, _, day), _)| *day >= since)
            .take(MAX_DAILY_ROWS)
            .map(|((_, user, day), credits)| DailyUse {
                day: day.clone(),
                user: user.clone(),
                credits: *credits,
            })
            .collect();
        daily.sort_by(|a, b| b.day.cmp(&a.day).then_with(|| a.user.cmp(&b.user)));
        Ok(ProjectDetail {
            budget: self.project_budget(project),
            enforce: self.enforcing(),
            daily,
            history: self
                .quota
                .burn_rates()
                .history(project)
                .into_iter()
                .map(|(at_ms, total_used)| UsedAt { at_ms, total_used })
                .collect(),
            // Read from the store by the caller, off the event loop.
            grants: Vec::new(),
        })
    }

    /// Sets each project's budget gauges (before each scrape of /metrics).
    pub(super) fn update_budget_gauges(&self) {
        let m = metrics();
        for budget in self.budgets().projects {
            let labels = ProjectLabels {
                project: label(&budget.project),
            };
            m.project_credits_remaining
                .get_or_create(&labels)
                .set(budget.remaining);
            m.project_burn_rate
                .get_or_create(&labels)
                .set(budget.burn_rate_per_hour);
            m.project_budget_low
                .get_or_create(&labels)
                .set(i64::from(matches!(
                    budget.state,
                    BudgetState::Low | BudgetState::Exhausted
                )));
            m.project_budget_exhausted
                .get_or_create(&labels)
                .set(i64::from(budget.state == BudgetState::Exhausted));
        }
    }
}
