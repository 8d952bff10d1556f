//! Ids handed out ahead of a submission (YARN's new-application and
//! new-reservation), and to whom, so that no other user can take an id
//! before the one it was given submits under it.

use std::collections::{HashMap, VecDeque};

/// The ids handed out and not yet submitted. Each user holds at most
/// [`IssuedIds::PER_USER`]: asking for more lets go of that user's own
/// oldest. All users together hold at most [`IssuedIds::IN_ALL`]: past
/// that the oldest of all is let go — only a flood of user names reaches
/// it, which anyone can send in simple mode (where anyone may name any
/// user anyway), and in token mode only as many users as hold tokens.
/// Ids from before a restart are not remembered.
#[derive(Debug, Default)]
pub struct IssuedIds {
    to: HashMap<String, String>,
    by_user: HashMap<String, VecDeque<String>>,
    /// Every id recorded, oldest first; ids no longer held are dropped as
    /// they come to the front, or when they are half of it.
    order: VecDeque<String>,
}

impl IssuedIds {
    /// Ids one user may hold unsubmitted; a newer one lets go of their
    /// oldest.
    pub const PER_USER: usize = 100;

    /// Ids all users together hold unsubmitted; a newer one lets go of the
    /// oldest of all.
    pub const IN_ALL: usize = 100_000;

    /// `id` was handed to `user`.
    pub fn record(&mut self, id: String, user: &str) {
        self.to.insert(id.clone(), user.to_string());
        self.order.push_back(id.clone());
        let held = self.by_user.entry(user.to_string()).or_default();
        held.push_back(id);
        while held.len() > Self::PER_USER {
            if let Some(old) = held.pop_front() {
                self.to.remove(&old);
            }
        }
        while self.to.len() > Self::IN_ALL {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            self.submitted(&oldest);
        }
        if self.order.len() > 2 * Self::IN_ALL {
            let to = &self.to;
            self.order.retain(|id| to.contains_key(id));
        }
    }

    /// Whom `id` was handed to, if it is held.
    pub fn owner(&self, id: &str) -> Option<&str> {
        self.to.get(id).map(String::as_str)
    }

    /// A submitted id is no longer held.
    pub fn submitted(&mut self, id: &str) {
        let Some(user) = self.to.remove(id) else {
            return;
        };
        if let Some(held) = self.by_user.get_mut(&user) {
            held.retain(|held| held != id);
            if held.is_empty() {
                self.by_user.remove(&user);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_holds_at_most_its_own_hundred() {
        let mut issued = IssuedIds::default();
        issued.record("theirs".into(), "bob");
        for i in 0..=IssuedIds::PER_USER {
            issued.record(format!("id{i}"), "alice");
        }
        assert_eq!(issued.owner("id0"), None, "alice's oldest let go");
        assert_eq!(issued.owner("theirs"), Some("bob"), "never another's");
        issued.submitted("id1");
        assert_eq!(issued.owner("id1"), None);
    }

    #[test]
    fn all_users_together_hold_a_bounded_number() {
        let mut issued = IssuedIds::default();
        issued.record("first".into(), "alice");
        for i in 0..IssuedIds::IN_ALL {
            issued.record(format!("id{i}"), &format!("user{i}"));
        }
        assert_eq!(issued.to.len(), IssuedIds::IN_ALL);
        assert_eq!(issued.owner("first"), None, "the oldest of all let go");
        assert!(!issued.by_user.contains_key("alice"));
        assert_eq!(issued.owner("id0"), Some("user0"));
        // Ids submitted as fast as they come leave the order bounded.
        for i in 0..3 * IssuedIds::IN_ALL {
            let id = format!("quick{i}");
            issued.record(id.clone(), "bob");
            issued.submitted(&id);
        }
        assert!(issued.order.len() <= 2 * IssuedIds::IN_ALL + 1);
    }
}
