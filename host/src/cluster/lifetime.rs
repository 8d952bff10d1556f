//! Apps' lifetimes (YARN's LIFETIME timeout): when each active app's ends,
//! kept in deadline order (`deadlines.rs`) so finding the apps past theirs
//! costs nothing while none is, and a new deadline an owner sets.

use super::model::Cluster;

/// Why an app's new lifetime was refused; nothing changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LifetimeRefusal {
    /// No app has this number (any more).
    #[error("no application number {0}")]
    NoSuchApp(usize),
    /// The new end is not after now.
    #[error(
        "timeout.expiryTime {} is not in the future (now {})",
        crate::clock::iso8601(*expiry_ms),
        crate::clock::iso8601(*now_ms)
    )]
    NotInFuture {
        /// The end asked for, in ms since the epoch.
        expiry_ms: u64,
        /// Now, in ms since the epoch.
        now_ms: u64,
    },
}

impl Cluster {
    /// The diagnostics of an app killed at the end of its lifetime (YARN's
    /// words).
    pub const LIFETIME_ENDED: &'static str =
        "Application is killed by ResourceManager as it has exceeded the lifetime period.";

    /// The active apps whose lifetime has ended by `now`, by deadline
    /// (their entries are taken out: the caller kills them).
    pub fn apps_past_lifetime(&mut self, now: u64) -> Vec<usize> {
        self.lifetimes.take_due(now)
    }

    /// When the next lifetime of an active app ends, if any has one.
    pub fn next_lifetime_end(&self) -> Option<u64> {
        self.lifetimes.next_due()
    }

    /// Sets active app `index`'s lifetime to end at `expiry_ms` (YARN's
    /// updateApplicationTimeouts), cut to its queue's
    /// `maximum-application-lifetime` counted from its submission (as
    /// YARN's RMAppManager cuts it, silently); returns the app's deadline
    /// now. An app that has ended keeps what it had, as in YARN, which
    /// answers such an update with the app's timeout unchanged. The caller
    /// checks who may.
    pub fn set_lifetime_deadline(
        &mut self,
        index: usize,
        expiry_ms: u64,
        now: u64,
    ) -> Result<Option<u64>, LifetimeRefusal> {
        let app = self
            .apps
            .get(index)
            .ok_or(LifetimeRefusal::NoSuchApp(index))?;
        if app.state.has_ended() {
            return Ok(app.lifetime_deadline_ms);
        }
        if expiry_ms <= now {
            return Err(LifetimeRefusal::NotInFuture {
                expiry_ms,
                now_ms: now,
            });
        }
        let queue = &self.queues.queues()[app.queue_index];
        let deadline = match queue.maximum_application_lifetime_s {
            Some(maximum) => expiry_ms.min(
                app.submit_time_ms
                    .saturating_add(maximum.saturating_mul(1000)),
            ),
            None => expiry_ms,
        };
        let old = app.lifetime_deadline_ms;
        self.lifetimes.remove(old, index);
        self.lifetimes.insert(Some(deadline), index);
        let app = &mut self.apps[index];
        app.lifetime_deadline_ms = Some(deadline);
        super::durable::app_changed(&mut self.changes, &app.id);
        Ok(Some(deadline))
    }

    /// Indexes the lifetimes of the active apps again (after a restore).
    pub(super) fn index_lifetimes(&mut self) {
        self.lifetimes = Default::default();
        for &number in &self.active {
            if let Some(app) = self.apps.get(number) {
                self.lifetimes.insert(app.lifetime_deadline_ms, number);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{AppState, AskSpec, SubmitApp};
    use crate::queues::{PREFIX, QueueProperties, QueueTree};

    /// A cluster whose default queue has at most `maximum_s` of lifetime.
    fn cluster(maximum_s: &str) -> Cluster {
        let mut properties = QueueProperties::defaults();
        properties.set(
            &format!("{PREFIX}root.default.maximum-application-lifetime"),
            maximum_s,
        );
        Cluster::new(1, QueueTree::from_properties(&properties).unwrap())
    }

    fn submit(cluster: &mut Cluster, lifetime_s: Option<u64>, now: u64) -> usize {
        let request = SubmitApp {
            name: "timed".into(),
            lifetime_s,
            ..SubmitApp::new(
                "alice",
                "default",
                "demo",
                vec![AskSpec::sized(1, 1024, 1, 0, 60_000)],
            )
        };
        let id = cluster.submit(request, "test", now).unwrap().id.clone();
        cluster.app_index(&id).unwrap()
    }

    #[test]
    fn apps_are_past_their_lifetime_at_its_end_and_not_before() {
        let mut cluster = cluster("100");
        let short = submit(&mut cluster, Some(10), 1_000);
        let capped = submit(&mut cluster, Some(1_000), 1_000);
        let default = submit(&mut cluster, None, 2_000);
        assert_eq!(cluster.apps()[short].lifetime_deadline_ms, Some(11_000));
        assert_eq!(cluster.apps()[capped].lifetime_deadline_ms, Some(101_000));
        assert_eq!(cluster.apps()[default].lifetime_deadline_ms, Some(102_000));
        assert!(cluster.apps_past_lifetime(10_999).is_empty());
        assert_eq!(cluster.apps_past_lifetime(11_000), vec![short]);
        assert!(cluster.apps_past_lifetime(11_000).is_empty(), "taken once");
        // An app that ends before its lifetime leaves no deadline behind.
        cluster.kill_app(capped, "killed by alice", 50_000);
        assert_eq!(cluster.apps_past_lifetime(200_000), vec![default]);
    }

    #[test]
    fn a_new_lifetime_must_be_in_the_future_and_is_cut_to_the_queues_maximum() {
        let mut cluster = cluster("100");
        let app = submit(&mut cluster, Some(10), 1_000);
        assert_eq!(
            cluster.set_lifetime_deadline(app, 5_000, 5_000),
            Err(LifetimeRefusal::NotInFuture {
                expiry_ms: 5_000,
                now_ms: 5_000
            })
        );
        assert_eq!(cluster.apps()[app].lifetime_deadline_ms, Some(11_000));
        // Longer, but no later than submission + 100 s.
        assert_eq!(
            cluster.set_lifetime_deadline(app, 500_000, 5_000),
            Ok(Some(101_000))
        );
        assert!(
            cluster.apps_past_lifetime(100_999).is_empty(),
            "the old end is gone"
        );
        // Shorter again.
        assert_eq!(
            cluster.set_lifetime_deadline(app, 20_000, 5_000),
            Ok(Some(20_000))
        );
        assert_eq!(cluster.apps_past_lifetime(20_000), vec![app]);
        assert!(cluster.apps_past_lifetime(1_000_000).is_empty());
        // An app that has ended keeps what it had.
        cluster.kill_app(app, Cluster::LIFETIME_ENDED, 20_000);
        assert_eq!(cluster.apps()[app].state, AppState::Killed);
        assert_eq!(
            cluster.set_lifetime_deadline(app, 90_000, 30_000),
            Ok(Some(20_000))
        );
        assert!(cluster.apps_past_lifetime(1_000_000).is_empty());
    }
}
