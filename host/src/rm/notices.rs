//! Telling those who wait the moment what they wait for happens, rather
//! than at their next look: an agent, that containers were placed on its
//! node (a flag the local agent's loop reads between heartbeats, and a
//! wait a remote agent keeps open, `GET /ws/v1/cluster/nodes/{id}/orders-waiting`);
//! a client, that its app ended (`GET /ws/v1/cluster/apps/{id}/state?wait_ms=`).
//! A notice carries no work or state (the orders come in a heartbeat's
//! answer, the app's state is read again), so a lost or extra one changes
//! nothing but when the waiter looks.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::watch;

/// One node's notice: whether placements wait for its next answer.
#[derive(Debug, Default)]
pub struct PlacementNotice {
    /// Containers were placed since the node's last new answer.
    pending: AtomicBool,
    /// Wakes the wait open for the node, if any.
    notify: tokio::sync::Notify,
    /// A wait is open (one per node: more would only multiply requests).
    held: AtomicBool,
}

/// A second wait for a node that has one open.
#[derive(Debug, thiserror::Error)]
#[error("a wait for orders is already open for this node; one at a time")]
pub struct AlreadyWaiting;

impl PlacementNotice {
    /// Containers were placed on the node: its next answer carries them.
    pub fn placed(&self) {
        if !self.pending.swap(true, Ordering::AcqRel) {
            self.notify.notify_one();
        }
    }

    /// The node got a new answer, which carries every placement so far.
    pub fn answered(&self) {
        self.pending.store(false, Ordering::Release);
    }

    /// Whether placements wait, clearing the flag (the local agent's loop:
    /// it heartbeats at once when this is true).
    pub fn take(&self) -> bool {
        self.pending.swap(false, Ordering::AcqRel)
    }

    /// Waits up to `timeout` for placements on the node (at once if some
    /// wait already), and says whether there are any. Refused while
    /// another wait for the node is open. Cancel-safe: dropping the future
    /// closes the wait.
    pub async fn wait(&self, timeout: Duration) -> Result<bool, AlreadyWaiting> {
        if self.held.swap(true, Ordering::AcqRel) {
            return Err(AlreadyWaiting);
        }
        let _open = Held(&self.held);
        let notified = self.notify.notified();
        tokio::pin!(notified);
        // Enabled before the flag is read, so a placement in between wakes
        // it rather than being missed.
        notified.as_mut().enable();
        if !self.pending.load(Ordering::Acquire) {
            let _ = tokio::time::timeout(timeout, notified).await;
        }
        Ok(self.pending.load(Ordering::Acquire))
    }
}

/// Closes a node's wait when it ends, however it ends.
struct Held<'a>(&'a AtomicBool);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// The most apps waited on at once for their end: beyond it a wait answers
/// at once (the client looks again later), so waits cannot grow the map
/// without bound.
pub const MAX_APPS_WAITED_ON: usize = 1024;

/// Apps someone waits on to end, by id: each a channel that turns true
/// (or closes) when the app ends.
#[derive(Debug, Default)]
pub struct AppEndWaits {
    apps: foldhash::HashMap<String, watch::Sender<bool>>,
}

impl AppEndWaits {
    /// Something to wait on for the end of app `id`, which has not ended;
    /// none while [`MAX_APPS_WAITED_ON`] other apps are waited on (apps
    /// whose waiters have all gone count no more).
    pub fn wait_for(&mut self, id: &str) -> Option<watch::Receiver<bool>> {
        if let Some(sender) = self.apps.get(id) {
            return Some(sender.subscribe());
        }
        if self.apps.len() >= MAX_APPS_WAITED_ON {
            self.apps.retain(|_, sender| sender.receiver_count() > 0);
        }
        if self.apps.len() >= MAX_APPS_WAITED_ON {
            return None;
        }
        let (sender, receiver) = watch::channel(false);
        self.apps.insert(id.to_string(), sender);
        Some(receiver)
    }

    /// App `id` ended: its waiters are told and it is waited on no more.
    pub fn ended(&mut self, id: &str) {
        if let Some(sender) = self.apps.remove(id) {
            let _ = sender.send(true);
        }
    }

    /// How many apps are waited on.
    pub fn len(&self) -> usize {
        self.apps.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.apps.is_empty()
    }
}

/// Waits up to `timeout` on `end` (from [`AppEndWaits::wait_for`]); whether
/// the app ended (a closed channel counts: its server stopped or moved on,
/// so the caller reads the state again either way).
pub async fn app_ended(mut end: watch::Receiver<bool>, timeout: Duration) -> bool {
    matches!(
        tokio::time::timeout(timeout, end.wait_for(|ended| *ended)).await,
        Ok(Ok(_)) | Ok(Err(_))
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test]
    async fn a_wait_ends_when_containers_are_placed_and_not_before() {
        let notice = Arc::new(PlacementNotice::default());
        let waiting = tokio::spawn({
            let notice = notice.clone();
            async move { notice.wait(Duration::from_secs(30)).await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished(), "nothing was placed yet");
        notice.placed();
        let placed = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("the placement ends the wait")
            .unwrap();
        assert!(placed.unwrap());
    }

    #[tokio::test]
    async fn a_wait_times_out_false_and_answers_at_once_while_placements_wait() {
        let notice = PlacementNotice::default();
        assert!(!notice.wait(Duration::from_millis(10)).await.unwrap());
        notice.placed();
        assert!(notice.wait(Duration::from_secs(30)).await.unwrap());
        notice.answered();
        assert!(!notice.wait(Duration::from_millis(10)).await.unwrap());
    }

    #[tokio::test]
    async fn one_wait_at_a_time_per_node_and_a_dropped_wait_closes() {
        let notice = Arc::new(PlacementNotice::default());
        let first = tokio::spawn({
            let notice = notice.clone();
            async move { notice.wait(Duration::from_secs(30)).await.map(|_| ()) }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(notice.wait(Duration::from_secs(30)).await.is_err());
        first.abort();
        let _ = first.await;
        assert!(!notice.wait(Duration::from_millis(1)).await.unwrap());
    }

    #[tokio::test]
    async fn an_apps_waiters_are_told_of_its_end_and_waits_are_bounded() {
        let mut waits = AppEndWaits::default();
        let first = waits.wait_for("app_1").unwrap();
        let second = waits.wait_for("app_1").unwrap();
        assert_eq!(waits.len(), 1, "one entry per app however many wait");
        assert!(!app_ended(first.clone(), Duration::from_millis(10)).await);
        let waiting = tokio::spawn(app_ended(second, Duration::from_secs(30)));
        waits.ended("app_1");
        assert!(waiting.await.unwrap());
        assert!(app_ended(first, Duration::from_secs(30)).await);
        assert!(waits.is_empty());
        let mut held = Vec::new();
        for i in 0..MAX_APPS_WAITED_ON {
            held.push(waits.wait_for(&format!("app_{i}")).unwrap());
        }
        assert!(waits.wait_for("one_too_many").is_none());
        assert!(
            waits.wait_for("app_0").is_some(),
            "an app already waited on still is"
        );
        waits.ended("app_0");
        let kept = waits.wait_for("one_too_many").unwrap();
        // Waiters that left (timed out, disconnected) free their app's place.
        held.truncate(10);
        assert!(waits.wait_for("after_they_left").is_some());
        assert!(waits.len() <= 12, "{} apps still counted", waits.len());
        drop(kept);
    }

    #[test]
    fn take_clears_what_placed_set() {
        let notice = PlacementNotice::default();
        assert!(!notice.take());
        notice.placed();
        assert!(notice.take());
        assert!(!notice.take());
    }
}
