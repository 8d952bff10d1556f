//! What falls due in time order — apps' lifetimes, gangs' deadlines: an
//! index whose earliest entry is at hand, so a round's check costs nothing
//! while nothing is due.

use std::collections::BTreeSet;

/// Keys each due at a time (ms since the epoch), earliest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Deadlines<K: Ord + Copy>(BTreeSet<(u64, K)>);

impl<K: Ord + Copy> Default for Deadlines<K> {
    fn default() -> Self {
        Deadlines(BTreeSet::new())
    }
}

impl<K: Ord + Copy> Deadlines<K> {
    /// `key` falls due at `due`, if it has a time.
    pub(super) fn insert(&mut self, due: Option<u64>, key: K) {
        if let Some(due) = due {
            self.0.insert((due, key));
        }
    }

    /// `key`, due at `due` (if it had a time), no longer is.
    pub(super) fn remove(&mut self, due: Option<u64>, key: K) {
        if let Some(due) = due {
            self.0.remove(&(due, key));
        }
    }

    /// The keys due by `now`, earliest first, taken out.
    pub(super) fn take_due(&mut self, now: u64) -> Vec<K> {
        let mut due = Vec::new();
        while let Some(&(at, key)) = self.0.first()
            && at <= now
        {
            self.0.pop_first();
            due.push(key);
        }
        due
    }

    /// When the earliest key falls due, if any.
    pub(super) fn next_due(&self) -> Option<u64> {
        self.0.first().map(|&(at, _)| at)
    }
}
