//! The resource manager's timers — the scheduling round, the multiplicator
//! step and QUOTA_COMPUTE — and the one order in which timers due together
//! fire, so `serve` (wall time) and `simulate` (virtual time) agree.

/// A timer of the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timer {
    SchedulingRound,
    MultiplicatorStep,
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

    pub fn as_str(self) -> &'static str {
        match self {
            Timer::SchedulingRound => "scheduling round",
            Timer::MultiplicatorStep => "multiplicator step",
            Timer::QuotaCompute => "QUOTA_COMPUTE",
        }
    }
}

/// A timer firing every `period` ms, first one period after its start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Every {
    pub period: u64,
    pub next: u64,
}

impl Every {
    pub fn starting_at(start: u64, period: u64) -> Every {
        let period = period.max(1);
        Every {
            period,
            next: start.saturating_add(period),
        }
    }

    /// Whether the timer fires at `now`; if so it is re-armed one period
    /// later (a late tick delays the next rather than bunching them up).
    pub fn due(&mut self, now: u64) -> bool {
        if now < self.next {
            return false;
        }
        self.next = now.saturating_add(self.period);
        true
    }
}

/// The three timers of the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timers {
    pub scheduling: Every,
    pub multiplicator: Every,
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

    /// When the next timer is due.
    pub fn next_due(&self) -> u64 {
        self.scheduling
            .next
            .min(self.multiplicator.next)
            .min(self.quota.next)
    }

    /// The timers due at `now`, in [`Timer::ORDER`], each re-armed.
    pub fn fire(&mut self, now: u64) -> Vec<Timer> {
        Timer::ORDER
            .into_iter()
            .filter(|timer| self.every(*timer).due(now))
            .collect()
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
        assert_eq!(timers.scheduling.next, 2600);
        assert_eq!(timers.quota.next, 3500);
    }

    #[test]
    fn far_times_saturate_instead_of_wrapping() {
        let mut every = Every::starting_at(u64::MAX - 1, 10);
        assert_eq!(every.next, u64::MAX);
        assert!(every.due(u64::MAX));
        assert_eq!(every.next, u64::MAX);
    }
}
