//! The one source of time: the wall clock for `serve`, a virtual clock for
//! replay and simulation, so the same quota and scheduling code runs on both.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// `ms` since the epoch as YARN writes times (`yyyy-MM-dd'T'HH:mm:ss.SSSZ`,
/// e.g. `2026-11-27T09:36:16.678+0000`), in UTC; the number itself if it
/// is beyond what a date holds.
pub fn iso8601(ms: u64) -> String {
    i64::try_from(ms)
        .ok()
        .and_then(chrono::DateTime::<chrono::Utc>::from_timestamp_millis)
        .map_or_else(
            || ms.to_string(),
            |time| time.format("%Y-%m-%dT%H:%M:%S%.3f%z").to_string(),
        )
}

/// Milliseconds since the Unix epoch.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The current time, in ms since the Unix epoch.
    fn now_ms(&self) -> u64;
}

/// The system's real time, as `serve` runs on (0 if the system clock is
/// before the epoch).
#[derive(Debug, Clone, Copy, Default)]
pub struct WallClock;

impl Clock for WallClock {
    fn now_ms(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0)
    }
}

/// Time that moves only when told to. Clones share one time.
#[derive(Debug, Clone, Default)]
pub struct VirtualClock {
    now: Arc<AtomicU64>,
}

impl VirtualClock {
    /// A clock standing at `ms` (ms since the epoch) until advanced.
    pub fn starting_at(ms: u64) -> VirtualClock {
        VirtualClock {
            now: Arc::new(AtomicU64::new(ms)),
        }
    }

    /// Moves time forward to `ms`; time never goes back.
    pub fn advance_to(&self, ms: u64) {
        self.now.fetch_max(ms, Ordering::SeqCst);
    }
}

impl Clock for VirtualClock {
    fn now_ms(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn virtual_time_only_moves_forward() {
        let clock = VirtualClock::starting_at(10);
        let shared = clock.clone();
        clock.advance_to(50);
        clock.advance_to(20);
        assert_eq!(shared.now_ms(), 50);
    }
}
