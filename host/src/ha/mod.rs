//! Active/standby: which server may run the resource manager, and the
//! transitions. With SQLite the server is the store's only writer (its lock
//! file says so) and is active at once. With PostgreSQL, servers sharing the
//! database elect one through a lease (`lease.rs`): the winner restores the
//! state the store holds and runs the event loop; the others answer as
//! standbys (503 StandbyException naming the active, `/isActive` 405) and
//! poll the lease. An active server that cannot renew its lease steps down
//! before the lease could expire (its local trust deadline, counted on the
//! monotonic clock from the start of the last successful renewal); and
//! should it not (paused, partitioned), every write it attempts is fenced
//! off by the epoch (`store/`).
//!
//! Timing: the lease lasts `weft.ha.lease-ms`; the active renews every third
//! of it, a standby polls every third of it, and the active stops trusting
//! its lease a sixth of it before the lease could expire. A standby takes
//! over at most a lease plus a poll after the active's last renewal.

pub mod lease;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::rm::RmHandle;
use crate::store::{Fence, Store};
use lease::Lease;

/// The fence of a standby: no lease has this epoch, so no write commits.
static STANDBY_FENCE: Fence = Fence {
    epoch: -1,
    holder: String::new(),
};

/// A running event loop and how to stop it.
#[derive(Debug)]
pub struct Active {
    /// The handle to the running event loop (the controller's own handle
    /// forwards to it while this server is active).
    pub handle: RmHandle,
    /// Set to true to stop the loop cleanly.
    pub stop: tokio::sync::watch::Sender<bool>,
    /// The event loop's thread; it finishes when the loop stops (asked to,
    /// or fenced off by a newer epoch).
    pub thread: JoinHandle<()>,
}

impl Active {
    /// Stops the loop (it charges running containers up to now and commits
    /// what it can) and waits for it.
    fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.thread.join();
    }
}

/// Builds and starts the resource manager under a fence (`serve` provides
/// it: restore the state the store holds, put the policies in force, spawn
/// the loop).
pub type Activate = Box<dyn FnMut(&Fence) -> anyhow::Result<Active> + Send>;

/// How a server becomes active.
#[derive(Debug, Clone)]
pub enum Election {
    /// The store's only writer (SQLite): active at once, a new epoch.
    Sole(Store),
    /// A lease on PostgreSQL shared with other servers.
    Lease(Lease),
}

/// The controller of one server's role.
pub struct Controller {
    /// How this server becomes active: at once, or through the lease.
    pub election: Election,
    /// This server, as the lease and the standbys' answers name it: its
    /// URL first, so clients can go to it.
    pub holder: String,
    /// The store every write goes through (its fence is set here).
    pub store: Store,
    /// The handle the API and the local agent use.
    pub handle: RmHandle,
    /// What starts the resource manager each time this server becomes
    /// active.
    pub activate: Activate,
}

impl std::fmt::Debug for Controller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller")
            .field("holder", &self.holder)
            .finish_non_exhaustive()
    }
}

impl Controller {
    /// Runs until `shutdown` is set (then the loop stops cleanly and the
    /// lease is given up) or, for a sole writer, until it is fenced off or
    /// cannot start (an error).
    pub fn run(mut self, shutdown: Arc<AtomicBool>) -> anyhow::Result<()> {
        match self.election.clone() {
            Election::Sole(store) => self.run_sole(&store, &shutdown),
            Election::Lease(lease) => {
                self.run_elected(&lease, &shutdown);
                Ok(())
            }
        }
    }

    fn run_sole(&mut self, store: &Store, shutdown: &AtomicBool) -> anyhow::Result<()> {
        let fence = store.take_sole_lease(&self.holder)?;
        let active = (self.activate)(&fence)?;
        self.handle.lead_to(&active.handle);
        metrics_role(true);
        tracing::info!(epoch = fence.epoch, "active (the store's only writer)");
        while !shutdown.load(Ordering::SeqCst) && !active.thread.is_finished() {
            std::thread::sleep(Duration::from_millis(50));
        }
        let fenced = active.thread.is_finished() && !shutdown.load(Ordering::SeqCst);
        metrics_role(false);
        active.stop();
        anyhow::ensure!(
            !fenced,
            "the event loop stopped: another server wrote to the store under a newer epoch"
        );
        Ok(())
    }

    fn run_elected(&mut self, lease: &Lease, shutdown: &AtomicBool) {
        // Until elected, nothing this server writes may commit.
        self.store.set_fence(Some(STANDBY_FENCE.clone()));
        let third = Duration::from_millis((lease.ttl_ms() / 3).max(1));
        let trust = Duration::from_millis(lease.ttl_ms() - lease.ttl_ms() / 6);
        while !shutdown.load(Ordering::SeqCst) {
            // Standby: poll the lease.
            let acquired_at = Instant::now();
            let fence = match lease.try_acquire(&self.holder) {
                Ok(Some(fence)) => fence,
                Ok(None) => {
                    let active = lease.holder().ok().filter(|h| h.valid).map(|h| h.holder);
                    self.handle.stand_by(active);
                    sleep_unless(shutdown, third);
                    continue;
                }
                Err(error) => {
                    tracing::warn!(%error, "cannot reach the lease; standing by");
                    self.handle.stand_by(None);
                    sleep_unless(shutdown, third);
                    continue;
                }
            };
            tracing::info!(epoch = fence.epoch, holder = %self.holder, "elected: taking over as the active resource manager");
            self.store.set_fence(Some(fence.clone()));
            // Renewed from now on, also while the state is restored (which
            // may take longer than the lease).
            let sessions = (self.store.reconnects(), lease.reconnects());
            let renewer = Renewer::start(lease.clone(), fence.clone(), third, trust, acquired_at);
            let activated = (self.activate)(&fence);
            let lost = renewer.lost.load(Ordering::SeqCst) || renewer.untrusted();
            let active = match activated {
                Ok(active) if !lost => active,
                Ok(active) => {
                    tracing::error!(
                        epoch = fence.epoch,
                        "the lease was lost while becoming active; standing by"
                    );
                    renewer.stop();
                    self.store.set_fence(Some(STANDBY_FENCE.clone()));
                    active.stop();
                    continue;
                }
                Err(error) => {
                    tracing::error!(
                        error = format!("{error:#}"),
                        "cannot become active; giving the lease up"
                    );
                    renewer.stop();
                    self.store.set_fence(Some(STANDBY_FENCE.clone()));
                    let _ = lease.resign(&fence);
                    sleep_unless(shutdown, third);
                    continue;
                }
            };
            self.handle.lead_to(&active.handle);
            metrics_role(true);
            let why = loop {
                if shutdown.load(Ordering::SeqCst) {
                    break None;
                }
                if (self.store.reconnects(), lease.reconnects()) != sessions {
                    break Some("a database session was lost");
                }
                if active.thread.is_finished() {
                    break Some("the event loop stopped (a newer epoch fenced its writes)");
                }
                if renewer.lost.load(Ordering::SeqCst) {
                    break Some("the lease was lost (expired and taken, or resigned)");
                }
                if renewer.untrusted() {
                    break Some("the lease could not be renewed in time");
                }
                std::thread::sleep(Duration::from_millis(20));
            };
            renewer.stop();
            self.handle.stand_by(None);
            self.store.set_fence(Some(STANDBY_FENCE.clone()));
            metrics_role(false);
            match why {
                Some(why) => tracing::error!(%why, epoch = fence.epoch, "stepping down to standby"),
                None => tracing::info!(epoch = fence.epoch, "stopping: giving the lease up"),
            }
            active.stop();
            if why.is_none() {
                if let Err(error) = lease.resign(&fence) {
                    tracing::warn!(%error, "could not give the lease up; it expires by itself");
                }
                return;
            }
        }
    }
}

fn sleep_unless(shutdown: &AtomicBool, duration: Duration) {
    let until = Instant::now() + duration;
    while !shutdown.load(Ordering::SeqCst) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn metrics_role(active: bool) {
    crate::metrics::metrics().ha_active.set(i64::from(active));
}

/// Renews the lease on a thread of its own, so a stuck database call
/// cannot keep the controller from stepping down in time.
struct Renewer {
    lost: Arc<AtomicBool>,
    stopping: Arc<AtomicBool>,
    /// Until when (ns after `epoch`) the lease may be trusted.
    trusted_until_ns: Arc<AtomicU64>,
    epoch: Instant,
}

impl Renewer {
    fn start(
        lease: Lease,
        fence: Fence,
        every: Duration,
        trust: Duration,
        acquired_at: Instant,
    ) -> Renewer {
        let epoch = acquired_at;
        let renewer = Renewer {
            lost: Arc::default(),
            stopping: Arc::default(),
            trusted_until_ns: Arc::new(AtomicU64::new(trust.as_nanos() as u64)),
            epoch,
        };
        let (lost, stopping, trusted) = (
            renewer.lost.clone(),
            renewer.stopping.clone(),
            renewer.trusted_until_ns.clone(),
        );
        std::thread::Builder::new()
            .name("weft-lease".into())
            .spawn(move || {
                while !stopping.load(Ordering::SeqCst) {
                    sleep_unless(&stopping, every);
                    if stopping.load(Ordering::SeqCst) {
                        break;
                    }
                    let started = Instant::now();
                    match lease.renew(&fence) {
                        Ok(true) => {
                            let until = started.duration_since(epoch) + trust;
                            trusted.store(until.as_nanos() as u64, Ordering::SeqCst);
                        }
                        Ok(false) => {
                            lost.store(true, Ordering::SeqCst);
                            break;
                        }
                        Err(error) => {
                            tracing::warn!(%error, "cannot renew the lease; trying again")
                        }
                    }
                }
            })
            .expect("a thread can be started");
        renewer
    }

    fn untrusted(&self) -> bool {
        self.epoch.elapsed().as_nanos() as u64 >= self.trusted_until_ns.load(Ordering::SeqCst)
    }

    fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
    }
}
