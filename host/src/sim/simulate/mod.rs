//! `weft simulate`: a scenario on the virtual clock, through the real
//! cluster model, scheduler, quota service and policies — the same
//! `ResourceManager` `serve` runs, driven by virtual time instead of tokio
//! timers, so a simulated day takes seconds.
//!
//! A scenario (TOML or JSON) gives nodes, queues, apps, reservations,
//! optional policies and settings, and the times to observe; see
//! docs/simulate.md. It is checked against the documented maxima
//! (`crate::limits`) before anything runs, and refused if it could never
//! finish (apps but no nodes, an ask no node can hold).
//!
//! Idle time is jumped over: while nothing runs the cluster cannot change
//! until the next submission or reservation boundary, so the timers skip
//! to it on their phase; while containers run and nothing is pending,
//! scheduling rounds skip to the next container end. A run that nothing
//! could ever move on (apps pending that no round places, nothing running,
//! nothing left to submit or to start) stops with an error naming the apps.
//!
//! This file runs a scenario (`run`); `scenario.rs` is its format and
//! checks, `idle.rs` the jumping over idle time, `report.rs` the summary.

mod idle;
mod report;
mod scenario;
#[cfg(test)]
mod tests;

use crate::limits::MAX_SIMULATION_STEPS;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::clock::{Clock, VirtualClock};
use crate::cluster::{AskSpec, SubmitApp};
use crate::config::Settings;
use crate::limits::{
    self, MAX_ASKS_PER_APP, MAX_CONTAINERS_PER_ASK, MAX_DURATION_MS, MAX_GPUS, MAX_MEMORY_MB,
    MAX_NODES, MAX_TIME_MS, MAX_VCORES, OutOfBounds,
};
use crate::policy::{CallCost, PolicyKind, PolicyRuntime, PolicySource};
use crate::reservation::ReservationDefinition;
use crate::reservation::definition::ReservationSubmissionRequest;
use crate::resources::Resources;
use crate::rm::ResourceManager;
use crate::rm::assemble::{Parts, QuotaEventLog, assemble};
use crate::rm::policy_load::{Component, LoadRight, PolicyLoad, Target};
use crate::rm::timers::{Every, Timer, Timers};
use crate::scheduler::diagnostics;
use crate::store::Store;

use idle::*;
pub use report::*;
pub use scenario::*;

/// Runs `scenario` (its relative paths from `base`) with `overrides` on top
/// of its settings. `progress` is told of each finished app.
pub fn run(
    scenario: &Scenario,
    base: &Path,
    overrides: &[String],
    progress: &dyn Fn(usize, usize),
) -> anyhow::Result<Summary> {
    simulate(scenario, base, overrides, progress, true)
}

/// [`run`]; `jump_idle` false fires every timer (and never finds a run
/// stuck), as the tests' reference for what jumping must give.
fn simulate(
    scenario: &Scenario,
    base: &Path,
    overrides: &[String],
    progress: &dyn Fn(usize, usize),
    jump_idle: bool,
) -> anyhow::Result<Summary> {
    scenario.check().map_err(anyhow::Error::msg)?;
    let mut assignments: Vec<String> = scenario
        .settings
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    assignments.extend(
        scenario
            .queues
            .properties
            .iter()
            .map(|(k, v)| format!("{k}={v}")),
    );
    assignments.extend_from_slice(overrides);
    let mut settings = Settings::load(None, &assignments)?;
    // The summary reports on every app: keep them all.
    settings.max_completed_applications = usize::MAX;
    scenario
        .check_work(settings.quota.scheduling_period_ms)
        .map_err(anyhow::Error::msg)?;
    let queue_file = scenario.queues.file.as_ref().map(|f| base.join(f));
    let queues = crate::queues::load(queue_file.as_deref(), &settings.queue_properties)?;

    // The policies read the virtual clock the scenario runs on.
    let clock = VirtualClock::starting_at(0);
    let policies = Arc::new(PolicyRuntime::from_settings(
        &settings,
        Arc::new(clock.clone()),
    )?);
    let choices = [
        (
            PolicyKind::Scheduling,
            &scenario.policies.scheduling,
            &scenario.policies.scheduling_params,
            &settings.policies.scheduling,
        ),
        (
            PolicyKind::Pricing,
            &scenario.policies.pricing,
            &scenario.policies.pricing_params,
            &settings.policies.pricing,
        ),
        (
            PolicyKind::Sharing,
            &scenario.policies.sharing,
            &scenario.policies.sharing_params,
            &settings.policies.sharing,
        ),
    ];
    for (kind, choice, params, configured) in choices {
        let text = choice.clone().unwrap_or_else(|| configured.clone());
        let source = match PolicySource::parse(&text) {
            PolicySource::File(path) => PolicySource::File(base.join(path)),
            builtin => builtin,
        };
        let load = PolicyLoad {
            kind,
            component: Component::Source(source.clone()),
            params: params.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            target: Target::Active,
        };
        load.run(&policies, LoadRight::operator())
            .map_err(|e| anyhow::anyhow!("cannot load the {kind} policy {source}: {e}"))?;
    }

    let mut rm = assemble(Parts {
        settings: &settings,
        queues,
        store: Store::in_memory(),
        clock: Arc::new(clock.clone()),
        policies: policies.clone(),
        security: Arc::new(
            crate::security::Security::from_settings(&settings.security)
                .map_err(anyhow::Error::msg)?,
        ),
        sim_nodes: None,
        event_log: QuotaEventLog::Off,
        recover: None,
    })?;
    let mut node_number = 0;
    let mut labelled = Vec::new();
    for group in &scenario.nodes {
        for _ in 0..group.count {
            node_number += 1;
            let capacity = Resources::new(group.memory_mb, group.vcores, group.gpus);
            let id = format!("node-{node_number:05}");
            rm.add_simulated_node(&id, capacity)
                .map_err(|e| anyhow::anyhow!("node group {group:?}: {e}"))?;
            // Checked up front (`Scenario::check`).
            let attributes = crate::limits::node_attributes("attributes", group.attributes.iter())
                .map_err(|e| anyhow::anyhow!("node group {group:?}: {e}"))?;
            rm.place_simulated_node(&id, group.rack.clone().unwrap_or_default(), attributes);
            if let Some(label) = &group.label {
                labelled.push((id, Some(label.clone())));
            }
        }
    }
    let labels: Vec<(String, bool)> = scenario
        .labels
        .iter()
        .map(|l| (l.name.clone(), l.exclusive))
        .collect();
    rm.set_up_node_labels(&labels, &labelled)
        .map_err(|e| anyhow::anyhow!("the scenario's labels: {e}"))?;

    let mut apps: Vec<&ScenarioApp> = scenario.apps.iter().collect();
    apps.sort_by_key(|a| a.submit_ms);
    let mut reservations: Vec<&ScenarioReservation> = scenario.reservations.iter().collect();
    reservations.sort_by_key(|r| r.submit_ms);
    let mut outcomes: Vec<ReservationOutcome> = Vec::new();
    // Scenario name → index in `outcomes`.
    let mut by_name: BTreeMap<String, usize> = BTreeMap::new();
    // Cluster app id → scenario reservation name.
    let mut reserved_apps: Vec<(String, String)> = Vec::new();
    // When the admitted reservations start and end.
    let mut placed: Vec<Placed> = Vec::new();
    let mut next_reservation = 0;
    let quota_settings = settings.quota;
    let mut timers = Timers {
        scheduling: Every::starting_at(0, scenario.scheduling_interval_ms),
        quota: Every::starting_at(0, quota_settings.scheduling_period_ms),
        multiplicator: Every::starting_at(0, quota_settings.multiplicator_interval_ms),
    };
    let mut observe: Vec<u64> = scenario.observe_at_ms.clone();
    observe.sort_unstable();
    observe.dedup();
    let mut observe = observe.into_iter().peekable();
    let mut summary = Summary {
        end_ms: 0,
        apps_submitted: 0,
        apps_finished: 0,
        apps_past_lifetime: 0,
        observations: Vec::new(),
        wait_time_ms: BTreeMap::new(),
        utilization: Vec::new(),
        credits: BTreeMap::new(),
        policies: BTreeMap::new(),
        reservations: Vec::new(),
        apps_refused_over_budget: 0,
        first_budget_refusal: None,
    };
    let mut next_app = 0;
    let mut idle = Idle::default();
    let mut stopped_at_end = false;
    let mut steps: u64 = 0;
    loop {
        // Counted by the cluster as apps end: no walk over every app a step.
        let (_, finished, _) = rm.cluster().app_totals();
        progress(finished, apps.len());
        let all_done = next_app == apps.len()
            && next_reservation == reservations.len()
            && rm.cluster().active_apps().next().is_none();
        if all_done && observe.peek().is_none() {
            break;
        }
        // None only once every timer is off: nothing is left to happen.
        let Some(next) = [
            apps.get(next_app).map(|a| a.submit_ms),
            reservations.get(next_reservation).map(|r| r.submit_ms),
            timers.scheduling.next,
            timers.quota.next,
            timers.multiplicator.next,
            observe.peek().copied(),
        ]
        .into_iter()
        .flatten()
        .min() else {
            break;
        };
        if scenario.end_ms.is_some_and(|end| next > end) {
            stopped_at_end = true;
            break;
        }
        steps += 1;
        if steps > MAX_SIMULATION_STEPS {
            anyhow::bail!(
                "the scenario needs more than {MAX_SIMULATION_STEPS} steps of virtual time (at t={next} ms, \
                 timers every {} ms while containers run or wait); raise scheduling_interval_ms \
                 or set end_ms",
                timers.scheduling.period
            );
        }
        clock.advance_to(next);
        while let Some(reservation) = reservations
            .get(next_reservation)
            .filter(|r| r.submit_ms <= next)
        {
            by_name.insert(reservation.name.clone(), outcomes.len());
            let (outcome, times) = submit_reservation(&mut rm, reservation)?;
            outcomes.push(outcome);
            placed.extend(times);
            next_reservation += 1;
        }
        while let Some(app) = apps.get(next_app).filter(|a| a.submit_ms <= next) {
            let reservation_id = match &app.reservation {
                None => None,
                // Checked up front: named reservations are submitted by now.
                // A refused one's apps run in the queue as any other.
                Some(name) => by_name
                    .get(name)
                    .and_then(|&i| outcomes[i].reservation_id.clone()),
            };
            let request = SubmitApp {
                name: app
                    .name
                    .clone()
                    .unwrap_or_else(|| format!("{}-{}", app.user, next_app + 1)),
                queue: app.queue.clone(),
                user: app.user.clone(),
                project: app.project.clone(),
                priority: app.priority,
                asks: app.asks.clone(),
                reservation_id,
                application_id: None,
                application_type: app.application_type.clone(),
                tags: app.tags.clone(),
                lifetime_s: app.lifetime_s,
                node_label_expression: app.node_label_expression.clone(),
            };
            // The use case the API runs, as the app's own user.
            let caller = rm.security().caller(&app.user);
            let submitted = match rm.submit_app(&caller, request, "simulate") {
                Ok(submitted) => submitted,
                // A project out of credits is an outcome, not a broken scenario.
                Err(crate::rm::requests::RequestError::OverBudget(why)) => {
                    summary.apps_refused_over_budget += 1;
                    summary.first_budget_refusal.get_or_insert(why);
                    next_app += 1;
                    continue;
                }
                Err(e) => anyhow::bail!("app {} of the scenario: {e}", next_app + 1),
            };
            if let Some(name) = &app.reservation {
                reserved_apps.push((submitted.id.clone(), name.clone()));
            }
            next_app += 1;
        }
        // Timers due together fire in serve's order (rm::timers::Timer::ORDER).
        let mut round = false;
        for timer in timers.fire(next) {
            rm.fire(timer);
            match timer {
                Timer::SchedulingRound => round = true,
                Timer::QuotaCompute => summary.utilization.push(utilization(&rm, next)),
                Timer::MultiplicatorStep => {}
            }
        }
        if observe.peek() == Some(&next) {
            observe.next();
            summary.observations.push(observation(&rm, next));
        }
        rm.flush_quota();
        if round && jump_idle {
            let next_submission = [
                apps.get(next_app).map(|a| a.submit_ms),
                reservations.get(next_reservation).map(|r| r.submit_ms),
            ]
            .into_iter()
            .flatten()
            .min();
            idle.skip_after_round(
                &mut rm,
                &mut timers,
                next,
                next_submission,
                &placed,
                scenario.end_ms,
            )?;
        }
    }
    // A run stopped by end_ms stops where stepping every timer would have:
    // at the last firing by end_ms of a timer that was skipped over.
    if stopped_at_end && let Some(end) = scenario.end_ms {
        clock.advance_to(timers.last_firing_by(end));
    }
    let end = clock.now_ms();
    rm.shutdown();
    summary.end_ms = end;
    summary.apps_submitted = rm.cluster().apps().len();
    summary.apps_finished = rm
        .cluster()
        .apps()
        .iter()
        .filter(|a| a.state == crate::cluster::AppState::Finished)
        .count();
    summary.apps_past_lifetime = rm
        .cluster()
        .apps()
        .iter()
        .filter(|a| a.diagnostics == crate::cluster::Cluster::LIFETIME_ENDED)
        .count();
    summary.wait_time_ms = wait_times(&rm);
    for (app_id, name) in reserved_apps {
        let outcome = &mut outcomes[by_name[&name]];
        outcome.apps += 1;
        let finished = rm
            .cluster()
            .app(&app_id)
            .filter(|a| a.state == crate::cluster::AppState::Finished)
            .and_then(|a| a.finish_time_ms);
        if let Some(at) = finished {
            outcome.apps_finished += 1;
            outcome.apps_met_deadline += usize::from(at <= outcome.deadline_ms);
            outcome.last_finish_ms = outcome.last_finish_ms.max(Some(at));
        }
    }
    summary.reservations = outcomes;
    summary.credits = rm
        .quota()
        .ledger()
        .projects()
        .iter()
        .map(|(p, q)| (p.clone(), q.total_used))
        .collect();
    for kind in PolicyKind::ALL {
        let slot = policies.slot(kind);
        let policy = slot
            .active()
            .map(|v| v.info.name.clone())
            .unwrap_or_default();
        summary.policies.insert(
            kind.to_string(),
            PolicyCost {
                policy,
                cost: slot.cost(),
            },
        );
    }
    Ok(summary)
}

/// Submits a scenario reservation as the REST API would (a new id, then
/// submit), and records whether it was admitted, and if so when it holds
/// resources.
fn submit_reservation(
    rm: &mut ResourceManager,
    reservation: &ScenarioReservation,
) -> anyhow::Result<(ReservationOutcome, Option<Placed>)> {
    let definition = reservation
        .definition()
        .map_err(|e| anyhow::anyhow!("reservation {:?} of the scenario: {e}", reservation.name))?;
    let mut outcome = ReservationOutcome {
        name: reservation.name.clone(),
        user: reservation.user.clone(),
        queue: reservation.queue.clone(),
        submit_ms: reservation.submit_ms,
        admitted: false,
        reservation_id: None,
        reason: None,
        placed_ms: None,
        deadline_ms: reservation.deadline_ms,
        apps: 0,
        apps_finished: 0,
        apps_met_deadline: 0,
        last_finish_ms: None,
    };
    // The use cases the REST API runs (new-reservation, then submit), as
    // the reservation's user.
    let caller = rm.security().caller(&reservation.user);
    let id = rm.new_reservation(&caller)?;
    let request = ReservationSubmissionRequest {
        queue: reservation.queue.clone(),
        reservation_id: id.to_string(),
        reservation_definition: definition,
    };
    let mut placed = None;
    match rm.submit_reservation(&caller, &request) {
        Ok(accepted) => {
            outcome.admitted = true;
            outcome.reservation_id = Some(accepted.reservation_id.to_string());
            outcome.placed_ms = accepted
                .allocations
                .iter()
                .map(|a| (a.start_ms, a.end_ms))
                .reduce(|(s1, e1), (s2, e2)| (s1.min(s2), e1.max(e2)));
            // Admitted times lie in 1970..=9999: never negative.
            let ms = |t: i64| u64::try_from(t).unwrap_or(0);
            placed = Some(Placed {
                allocations: accepted
                    .allocations
                    .iter()
                    .map(|a| (ms(a.start_ms), ms(a.end_ms)))
                    .collect(),
                // As the definition reads it: 0 is not recurring.
                period_ms: reservation.recurrence_ms.filter(|&p| p > 0),
            });
        }
        Err(error) => outcome.reason = Some(error.to_string()),
    }
    Ok((outcome, placed))
}
