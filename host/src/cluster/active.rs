//! How many active apps each leaf queue, and each user in it, has: what a
//! submission checks against `maximum-applications` and its per-user share,
//! kept as apps come and go so a submission does not walk every active app.

use std::collections::HashMap;

/// Active apps per leaf queue (by index in the queue tree) and per (leaf,
/// user).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct ActiveCounts {
    by_queue: HashMap<usize, u64>,
    by_user: HashMap<usize, HashMap<String, u64>>,
}

impl ActiveCounts {
    /// An app of `user` in leaf `queue` became active.
    pub(super) fn add(&mut self, queue: usize, user: &str) {
        *self.by_queue.entry(queue).or_default() += 1;
        let users = self.by_user.entry(queue).or_default();
        match users.get_mut(user) {
            Some(count) => *count += 1,
            None => {
                users.insert(user.to_string(), 1);
            }
        }
    }

    /// An app of `user` in leaf `queue` is no longer active.
    pub(super) fn remove(&mut self, queue: usize, user: &str) {
        if let Some(count) = self.by_queue.get_mut(&queue) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.by_queue.remove(&queue);
            }
        }
        if let Some(users) = self.by_user.get_mut(&queue) {
            if let Some(count) = users.get_mut(user) {
                *count = count.saturating_sub(1);
                if *count == 0 {
                    users.remove(user);
                }
            }
            if users.is_empty() {
                self.by_user.remove(&queue);
            }
        }
    }

    /// Active apps in leaf `queue`.
    pub(super) fn of_queue(&self, queue: usize) -> u64 {
        self.by_queue.get(&queue).copied().unwrap_or(0)
    }

    /// Active apps of `user` in leaf `queue`.
    pub(super) fn of_user(&self, queue: usize, user: &str) -> u64 {
        self.by_user
            .get(&queue)
            .and_then(|users| users.get(user))
            .copied()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_follow_adds_and_removes() {
        let mut counts = ActiveCounts::default();
        counts.add(1, "alice");
        counts.add(1, "alice");
        counts.add(1, "bob");
        counts.add(2, "alice");
        assert_eq!((counts.of_queue(1), counts.of_user(1, "alice")), (3, 2));
        assert_eq!((counts.of_queue(2), counts.of_user(2, "bob")), (1, 0));
        counts.remove(1, "alice");
        counts.remove(1, "alice");
        counts.remove(1, "alice"); // more removes than adds: stays at 0
        assert_eq!((counts.of_queue(1), counts.of_user(1, "alice")), (0, 0));
        counts.remove(1, "bob");
        counts.remove(2, "alice");
        assert_eq!(counts, ActiveCounts::default(), "nothing left behind");
    }
}
