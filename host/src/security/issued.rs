//! Ids handed out ahead of a submission (YARN's new-application and
//! new-reservation), and to whom, so that no other user can take an id
//! before the one it was given submits under it.

use std::collections::{HashMap, VecDeque};

/// The ids handed out and not yet submitted. Each user holds at most
/// [`IssuedIds::PER_USER`]: asking for more lets go of that user's own
/// oldest, never anyone else's. Ids from before a restart are not
/// remembered.
#[derive(Debug, Default)]
pub struct IssuedIds {
    to: HashMap<String, String>,
    by_user: HashMap<String, VecDeque<String>>,
}

impl IssuedIds {
    /// Ids one user may hold unsubmitted; a newer one lets go of their
    /// oldest.
    pub const PER_USER: usize = 100;

    /// `id` was handed to `user`.
    pub fn record(&mut self, id: String, user: &str) {
        self.to.insert(id.clone(), user.to_string());
        let held = self.by_user.entry(user.to_string()).or_default();
        held.push_back(id);
        while held.len() > Self::PER_USER {
            if let Some(old) = held.pop_front() {
                self.to.remove(&old);
            }
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
}
