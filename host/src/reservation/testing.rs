//! Native sharing-policy doubles for the reservation unit tests, standing in
//! for the WASM policies: no over-commit (YARN's NoOverCommitPolicy), a
//! per-user instantaneous cap, one that refuses everything, one that fails.

use std::cell::Cell;

use super::Sharing;
use super::rle::{Amount, RleTimeline};
use crate::policy::{Admission, CallError, PlanSettings, Rejection, Timeline};

fn read(timeline: &Timeline) -> RleTimeline {
    RleTimeline::from_timeline(timeline).expect("the host sends well-formed timelines")
}

fn capacity(admission: &Admission) -> RleTimeline {
    let c = &admission.settings.capacity;
    let amount = Amount::new(c.memory_mb as i64, c.vcores as i64, c.gpus as i64);
    RleTimeline::block(admission.from_ms, admission.to_ms, amount)
}

/// `limit − held`, never below zero, as the WIT timeline carries it.
fn headroom(limit: &RleTimeline, held: &RleTimeline) -> Timeline {
    (limit - held)
        .max(&RleTimeline::new())
        .to_timeline()
        .expect("clamped at zero and cut to the admission's range")
}

/// The first instant `held` exceeds `limit`, described with its figures.
fn first_excess(limit: &RleTimeline, held: &RleTimeline, what: &str) -> Option<String> {
    let (at_ms, _) = (limit - held).first_negative()?;
    Some(format!(
        "at {at_ms} ms {what} would hold {} of {}",
        held.value_at(at_ms),
        limit.value_at(at_ms)
    ))
}

/// The plan may never hold more than the queue's capacity. Counts its calls.
#[derive(Debug, Default)]
pub(super) struct NoOverCommit {
    pub window_ms: i64,
    pub validations: Cell<u32>,
}

impl Sharing for NoOverCommit {
    fn window(&self, _settings: &PlanSettings) -> Result<i64, CallError> {
        Ok(self.window_ms)
    }

    fn validate(&self, admission: &Admission) -> Result<Result<(), Rejection>, CallError> {
        self.validations.set(self.validations.get() + 1);
        let held = &read(&admission.plan_committed) + &read(&admission.candidate);
        Ok(
            match first_excess(&capacity(admission), &held, "the plan") {
                Some(message) => Err(Rejection::OverCommit(message)),
                None => Ok(()),
            },
        )
    }

    fn available(&self, admission: &Admission) -> Result<Timeline, CallError> {
        Ok(headroom(
            &capacity(admission),
            &read(&admission.plan_committed),
        ))
    }
}

/// No over-commit, and no user above `limit` at any instant.
#[derive(Debug)]
pub(super) struct UserCap {
    pub limit: Amount,
}

impl Sharing for UserCap {
    fn window(&self, _settings: &PlanSettings) -> Result<i64, CallError> {
        Ok(0)
    }

    fn validate(&self, admission: &Admission) -> Result<Result<(), Rejection>, CallError> {
        if let Err(rejection) = NoOverCommit::default().validate(admission)? {
            return Ok(Err(rejection));
        }
        let limit = RleTimeline::block(admission.from_ms, admission.to_ms, self.limit);
        let held = &read(&admission.user_committed) + &read(&admission.candidate);
        let user = format!("user {}", admission.user);
        Ok(match first_excess(&limit, &held, &user) {
            Some(message) => Err(Rejection::InstantaneousQuota(message)),
            None => Ok(()),
        })
    }

    fn available(&self, admission: &Admission) -> Result<Timeline, CallError> {
        let limit = RleTimeline::block(admission.from_ms, admission.to_ms, self.limit);
        let user = &limit - &read(&admission.user_committed);
        let plan = &capacity(admission) - &read(&admission.plan_committed);
        Ok(headroom(&user.min(&plan), &RleTimeline::new()))
    }
}

/// Offers everything, then refuses every candidate on average quota.
#[derive(Debug)]
pub(super) struct RefuseAll;

impl Sharing for RefuseAll {
    fn window(&self, _settings: &PlanSettings) -> Result<i64, CallError> {
        Ok(0)
    }

    fn validate(&self, admission: &Admission) -> Result<Result<(), Rejection>, CallError> {
        Ok(Err(Rejection::AverageQuota(format!(
            "user {} would average above the limit",
            admission.user
        ))))
    }

    fn available(&self, admission: &Admission) -> Result<Timeline, CallError> {
        NoOverCommit::default().available(admission)
    }
}

/// A policy whose every call traps.
#[derive(Debug)]
pub(super) struct Broken;

impl Sharing for Broken {
    fn window(&self, _settings: &PlanSettings) -> Result<i64, CallError> {
        Err(CallError::Trap("unreachable executed".into()))
    }

    fn validate(&self, _admission: &Admission) -> Result<Result<(), Rejection>, CallError> {
        Err(CallError::Trap("unreachable executed".into()))
    }

    fn available(&self, _admission: &Admission) -> Result<Timeline, CallError> {
        Err(CallError::Trap("unreachable executed".into()))
    }
}
