//! Jumping over idle virtual time: when the cluster cannot change before
//! the next submission, reservation boundary, container end or end of an
//! app's lifetime, and the
//! error for a run nothing could ever move on.

use super::*;

/// An admitted reservation's allocations, as (start, end) ms; a recurring
/// one's first occurrence, repeated every `period_ms`. The plan follower
/// changes what a round sees only at these times.
pub(super) struct Placed {
    pub(super) allocations: Vec<(u64, u64)>,
    pub(super) period_ms: Option<u64>,
}

impl Placed {
    /// The first time after `now` at which an allocation starts or ends.
    pub(super) fn next_boundary(&self, now: u64) -> Option<u64> {
        self.allocations
            .iter()
            .flat_map(|&(start, end)| [start, end])
            .filter_map(|at| match self.period_ms {
                None => (at > now).then_some(at),
                // The first occurrence of `at` after `now`; checked, as
                // nothing bounds how many periods lie ahead.
                Some(period) if at <= now => ((now - at) / period)
                    .checked_add(1)?
                    .checked_mul(period)?
                    .checked_add(at),
                Some(_) => Some(at),
            })
            .min()
    }

    /// The last time at or before `now` at which a one-off allocation
    /// started or ended.
    pub(super) fn last_one_off_boundary(&self, now: u64) -> Option<u64> {
        if self.period_ms.is_some() {
            return None;
        }
        self.allocations
            .iter()
            .flat_map(|&(start, end)| [start, end])
            .filter(|&at| at <= now)
            .max()
    }
}

/// What the run knows about a stretch in which nothing runs, and the jumps
/// over idle time it allows.
///
/// Both jumps rest on one assumption, which the scheduling policy contract
/// states (docs/policy-authors.md): a round that placed nothing places
/// nothing again until the cluster changes — an app submitted or killed at
/// the end of its lifetime, a container ended, a reservation started or
/// ended, an ask's locality level moved on with time. Reclaim needs running containers
/// to take back, and simulated nodes are never lost, so nothing else moves.
#[derive(Default)]
pub(super) struct Idle {
    /// Since when nothing has run, and the apps (submitted, active),
    /// admitted reservations and locality moves there were then (a
    /// submission, a lifetime's end or a level moved on since ends the
    /// stretch).
    since: Option<(u64, (usize, usize, usize, u64))>,
}

impl Idle {
    /// Called after the round at `now` (and the other timers due then):
    /// moves the timers over time in which nothing can change.
    ///
    /// - Nothing runs and nothing is owed: the cluster stays as it is until
    ///   the next submission or end of an app's lifetime — or, if apps are
    ///   pending, the next time a reservation starts or ends or an ask
    ///   waiting out its locality delay may go further — so every
    ///   timer skips to then, on its
    ///   phase. QUOTA_COMPUTE would charge nothing (its utilization samples
    ///   are left out); the multiplicator step would be given the same
    ///   utilization each time, and `multiplicators` depends on it alone
    ///   (docs/policy-authors.md), so it runs once now for all of them. If
    ///   nothing is left to wait for and apps are pending, the run cannot
    ///   finish: an error, or with `end_ms` a jump to the end.
    /// - Containers run, nothing is pending and there are no reservation
    ///   plans: a round only ends containers, so rounds skip to the next
    ///   container end, submission or end of an app's lifetime. QUOTA_COMPUTE keeps firing.
    pub(super) fn skip_after_round(
        &mut self,
        rm: &mut ResourceManager,
        timers: &mut Timers,
        now: u64,
        next_submission: Option<u64>,
        placed: &[Placed],
        end_ms: Option<u64>,
    ) -> anyhow::Result<()> {
        let running = rm.cluster().containers().next().is_some();
        let pending = rm.cluster().has_pending();
        if running {
            self.since = None;
            if !pending && !rm.reservations().has_plans() {
                let next_end = rm
                    .cluster()
                    .containers()
                    // Saturating: a container of a checked duration ends
                    // long before u64::MAX; this cannot panic regardless.
                    .map(|c| c.start_time_ms.saturating_add(c.duration_ms))
                    .min();
                let wake = next_end
                    .into_iter()
                    .chain(next_submission)
                    .chain(rm.cluster().next_lifetime_end())
                    .chain(rm.cluster().next_gang_deadline())
                    .min();
                timers.scheduling.skip_to(wake);
            }
            return Ok(());
        }
        if rm.quota().has_owed() {
            // A failed flush is retried at the next; keep stepping.
            return Ok(());
        }
        // Apps submitted, apps active (a lifetime's end kills one),
        // reservations and locality levels moved on: a change in any ends
        // the quiet stretch (a reservation's next cycle may place an ask
        // that can now go further).
        let seen = (
            rm.cluster().apps().len(),
            rm.cluster().active_apps().count(),
            placed.len(),
            rm.cluster().locality_moves(),
        );
        let since = match self.since {
            Some((since, then)) if then == seen => since,
            _ => now,
        };
        self.since = Some((since, seen));
        // An app's lifetime ending kills it, a gang's deadline fails its app
        // or releases it: the cluster changes then too.
        let lifetime_end = [
            rm.cluster().next_lifetime_end(),
            rm.cluster().next_gang_deadline(),
        ]
        .into_iter()
        .flatten()
        .min();
        let wake = if pending {
            next_submission
                .into_iter()
                .chain(next_boundary(placed, now, since))
                .chain(lifetime_end)
                // An ask waiting out its locality delay may go further
                // then (if within the time a run may reach: a delay of
                // billions of opportunities is waited out never).
                .chain(
                    rm.cluster()
                        .next_locality_change(now)
                        .filter(|&at| at <= crate::limits::MAX_TIME_MS),
                )
                .min()
        } else {
            next_submission.into_iter().chain(lifetime_end).min()
        };
        let wake = match (wake, pending, end_ms) {
            (Some(wake), _, _) => Some(wake),
            (None, false, _) => None,
            // Stepping would wait out the rest of the run: jump past its end.
            (None, true, Some(end)) => Some(end.saturating_add(1)),
            (None, true, None) => return Err(stuck(rm, now)),
        };
        if timers
            .multiplicator
            .next
            .is_some_and(|due| wake.is_none_or(|w| due < w))
        {
            rm.multiplicator_step();
        }
        timers.scheduling.skip_to(wake);
        timers.quota.skip_to(wake);
        timers.multiplicator.skip_to(wake);
        Ok(())
    }
}

/// When a round may next place something for the reservations in
/// `placed`, if nothing has run since `since`: the next time one starts or
/// ends. A recurring reservation comes back forever, so once nothing has
/// run for one whole cycle of them all (the least common multiple of their
/// periods) since the last one-off boundary, another cycle will not help.
pub(super) fn next_boundary(placed: &[Placed], now: u64, since: u64) -> Option<u64> {
    let one_off_passed = placed
        .iter()
        .filter_map(|p| p.last_one_off_boundary(now))
        .max();
    let quiet_since = since.max(one_off_passed.unwrap_or(0));
    let cycle = placed
        .iter()
        .filter_map(|p| p.period_ms)
        .try_fold(1u64, lcm);
    let recurring_helps = cycle.is_none_or(|cycle| now - quiet_since < cycle);
    placed
        .iter()
        .filter(|p| p.period_ms.is_none() || recurring_helps)
        .filter_map(|p| p.next_boundary(now))
        .min()
}

/// The least common multiple, or None past u64 (then no cycle is waited out).
pub(super) fn lcm(a: u64, b: u64) -> Option<u64> {
    let gcd = {
        let (mut x, mut y) = (a, b);
        while y != 0 {
            (x, y) = (y, x % y);
        }
        x
    };
    (a / gcd).checked_mul(b)
}

/// The error for a run that cannot finish: which apps wait, and why the
/// scheduler says they do.
pub(super) fn stuck(rm: &ResourceManager, now: u64) -> anyhow::Error {
    const SHOWN: usize = 10;
    let usage = diagnostics::queue_usage(rm.cluster());
    let waiting: Vec<String> = rm
        .cluster()
        .active_apps()
        .filter_map(|index| {
            let app = &rm.cluster().apps()[index];
            let diagnosis = rm.diagnose(index, &usage)?;
            Some(format!(
                "{} ({:?}, queue {}, {} containers pending): {}",
                app.id,
                app.name,
                app.queue,
                app.pending_containers(),
                diagnosis.reason
            ))
        })
        .collect();
    let more = match waiting.len().saturating_sub(SHOWN) {
        0 => String::new(),
        n => format!("; and {n} more"),
    };
    let count = match waiting.len() {
        1 => "an app waits".to_string(),
        n => format!("{n} apps wait"),
    };
    anyhow::anyhow!(
        "the run cannot finish: at {now} ms nothing runs, nothing is left to submit and no reservation is still to start or end, but {count} that no round places: {}{more} (give end_ms to stop the run at a time instead)",
        waiting[..waiting.len().min(SHOWN)].join("; ")
    )
}
