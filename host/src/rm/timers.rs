//! The resource manager's timers — the scheduling round, the multiplicator
//! step and QUOTA_COMPUTE — and the one order in which timers due together
//! fire, so `serve` (wall time) and `simulate` (virtual time) agree. One
//! timer type for `serve`, `simulate` and `replay`, which may skip it over
//! idle virtual time or turn it off.

/// A timer of the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timer {
    /// A scheduling round: pending containers placed by the scheduling
    /// policy (and reclaim, when on).
    SchedulingRound,
    /// The multiplicator step (PriceMultiplicatorService): the pricing
    /// policy's multiplicators from the cluster's utilization.
    MultiplicatorStep,
    /// QUOTA_COMPUTE: what running containers owe since last charged,
    /// priced and charged; silent nodes lost.
    QuotaCompute,
}

impl Timer {
    /// Timers due at one instant fire in this order: the round first, so
    /// what it allocates is counted by the multiplicator step (demand) and
    /// charged from that instant by QUOTA_COMPUTE.
    pub const ORDER: [Timer; 3] = [
        Timer::SchedulingRound,
        Timer::MultiplicatorStep,
        Timer::QuotaCompute,
    ];

    /// Its name for logs and errors: "scheduling round", "multiplicator
    /// step" or "QUOTA_COMPUTE".
    pub fn as_str(self) -> &'static str {
        match self {
            Timer::SchedulingRound => "scheduling round",
            Timer::MultiplicatorStep => "multiplicator step",
            Timer::QuotaCompute => "QUOTA_COMPUTE",
        }
    }
}

/// A timer firing every `period` ms, first one period after its start, or
/// off (`next` is None). Wall time (`serve`) re-arms it from when it fired;
/// virtual time (`simulate`, `replay`) may also skip it over idle time,
/// on the phase of its period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Every {
    /// Between firings, in ms (at least 1).
    pub period: u64,
    /// When it fires next (ms, on the loop's time); None when off.
    pub next: Option<u64>,
    /// Its first firing: it is never skipped to before this.
    first: u64,
}

impl Every {
    /// A timer started at `start` firing every `period` ms (0 counts as 1),
    /// first at `start + period`.
    pub fn starting_at(start: u64, period: u64) -> Every {
        let period = period.max(1);
        let first = start.saturating_add(period);
        Every {
            period,
            next: Some(first),
            first,
        }
    }

    /// Firing at every multiple of `period` from 0 on, 0 included (the
    /// periodic timers of a hand-written replay log).
    pub fn from_zero(period: u64) -> Every {
        Every {
            period: period.max(1),
            next: Some(0),
            first: 0,
        }
    }

    /// Whether the timer fires at `now`; if so it is re-armed one period
    /// later (a late tick delays the next rather than bunching them up).
    /// Saturating: a timer at the end of time stays there, never wraps.
    pub fn due(&mut self, now: u64) -> bool {
        if self.next.is_none_or(|next| now < next) {
            return false;
        }
        self.next = Some(now.saturating_add(self.period));
        true
    }

    /// Makes the timer due at `at` if it was due later (not if off), and
    /// says whether it moved; it is re-armed from when it then fires, as
    /// after any firing.
    pub fn bring_forward(&mut self, at: u64) -> bool {
        match &mut self.next {
            Some(next) if at < *next => {
                *next = at;
                true
            }
            _ => false,
        }
    }

    /// Moves the timer on to its first firing at or after `at` on a
    /// multiple of its period (never back, never before its first), or off
    /// for None.
    pub fn skip_to(&mut self, at: Option<u64>) {
        self.next = match (self.next, at) {
            (Some(next), Some(at)) => {
                let on_phase = at.div_ceil(self.period).saturating_mul(self.period);
                Some(next.max(on_phase.max(self.first)))
            }
            _ => None,
        };
    }
}

/// The three timers of the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timers {
    /// The scheduling round's timer.
    pub scheduling: Every,
    /// The multiplicator step's timer.
    pub multiplicator: Every,
    /// QUOTA_COMPUTE's timer.
    pub quota: Every,
}

impl Timers {
    /// Timers with these periods (ms), each first firing one period after `start`.
    pub fn new(start: u64, scheduling: u64, multiplicator: u64, quota: u64) -> Timers {
        Timers {
            scheduling: Every::starting_at(start, scheduling),
            multiplicator: Every::starting_at(start, multiplicator),
            quota: Every::starting_at(start, quota),
        }
    }

    /// When the next timer is due; the end of time if every one is off.
    pub fn next_due(&self) -> u64 {
        [self.scheduling, self.multiplicator, self.quota]
            .iter()
            .filter_map(|every| every.next)
            .min()
            .unwrap_or(u64::MAX)
    }

    /// The timers due at `now`, in [`Timer::ORDER`], each re-armed.
    pub fn fire(&mut self, now: u64) -> Vec<Timer> {
        Timer::ORDER
            .into_iter()
            .filter(|timer| self.every(*timer).due(now))
            .collect()
    }

    /// The last time at or before `end` that any timer fires, had none
    /// been skipped (timers started at 0).
    pub fn last_firing_by(&self, end: u64) -> u64 {
        [self.scheduling, self.quota, self.multiplicator]
            .iter()
            .map(|timer| end / timer.period * timer.period)
            .max()
            .unwrap_or(0)
    }

    fn every(&mut self, timer: Timer) -> &mut Every {
        match timer {
            Timer::SchedulingRound => &mut self.scheduling,
            Timer::MultiplicatorStep => &mut self.multiplicator,
            Timer::QuotaCompute => &mut self.quota,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timer_brought_forward_fires_then_and_a_period_later() {
        let mut timers = Timers::new(0, 100, 1000, 1000);
        assert!(timers.scheduling.bring_forward(30));
        assert_eq!(timers.next_due(), 30);
        assert_eq!(timers.fire(30), vec![Timer::SchedulingRound]);
        assert_eq!(timers.next_due(), 130);
        // Never later than it was, and an off timer stays off.
        assert!(!timers.scheduling.bring_forward(500));
        assert_eq!(timers.next_due(), 130);
        timers.quota.skip_to(None);
        assert!(!timers.quota.bring_forward(10));
        assert_eq!(timers.quota.next, None);
    }

    #[test]
    fn timers_due_together_fire_in_one_order() {
        let mut timers = Timers::new(0, 100, 1000, 1000);
        assert_eq!(timers.next_due(), 100);
        assert_eq!(timers.fire(100), vec![Timer::SchedulingRound]);
        assert_eq!(timers.fire(150), Vec::<Timer>::new());
        assert_eq!(
            timers.fire(1000),
            vec![
                Timer::SchedulingRound,
                Timer::MultiplicatorStep,
                Timer::QuotaCompute
            ]
        );
        // A late tick delays the next one.
        assert_eq!(timers.fire(2500), Timer::ORDER.to_vec());
        assert_eq!(timers.scheduling.next, Some(2600));
        assert_eq!(timers.quota.next, Some(3500));
    }

    #[test]
    fn far_times_saturate_instead_of_wrapping() {
        let mut every = Every::starting_at(u64::MAX - 1, 10);
        assert_eq!(every.next, Some(u64::MAX));
        assert!(every.due(u64::MAX));
        assert_eq!(every.next, Some(u64::MAX));
    }
}
