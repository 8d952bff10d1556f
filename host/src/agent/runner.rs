//! The agent's loop (YARN's NodeStatusUpdater): register, then heartbeat on
//! the interval the server gives — sooner when a container ends — each
//! time reporting what runs and what ended (until acknowledged), and carry
//! out the answer's kill and launch orders. One thread; nothing in it waits
//! on a container.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::executor::Executor;
use super::protocol::ContainerEnd;
use super::tracker::{ResourceTracker, TrackerError};
use crate::cluster::{NodeAction, NodeOrders, Resources};
use crate::rm::requests::{Heartbeat, RegisterNode};

/// Who the agent is to the server, and what it offers.
#[derive(Debug, Clone)]
pub struct NodeIdentity {
    pub node_id: String,
    pub resources: Resources,
    /// Where its log server listens, and the secret it wants.
    pub http_address: String,
    pub logs_secret: String,
}

/// How often the loop looks at its containers between heartbeats.
const POLL: Duration = Duration::from_millis(20);
/// The soonest a heartbeat follows the one before, when containers end.
const MIN_GAP: Duration = Duration::from_millis(20);
/// How long to wait before trying an unreachable server again.
const RETRY: Duration = Duration::from_millis(500);
/// How often old containers' logs and working dirs are looked for.
const SWEEP: Duration = Duration::from_secs(60);

pub struct AgentLoop<T: ResourceTracker> {
    identity: NodeIdentity,
    /// How long ended containers' logs are kept.
    log_retain: Duration,
    tracker: T,
    executor: Executor,
    /// Ends not yet acknowledged, resent in every heartbeat.
    unacknowledged: BTreeMap<String, ContainerEnd>,
    registered: bool,
    response_id: u64,
    interval: Duration,
}

impl<T: ResourceTracker> AgentLoop<T> {
    pub fn new(
        identity: NodeIdentity,
        log_retain: Duration,
        tracker: T,
        executor: Executor,
    ) -> AgentLoop<T> {
        AgentLoop {
            identity,
            log_retain,
            tracker,
            executor,
            unacknowledged: BTreeMap::new(),
            registered: false,
            response_id: 0,
            interval: Duration::from_secs(1),
        }
    }

    /// Runs until `stop` is set; then, with `kill_on_stop`, kills what runs.
    pub fn run(mut self, stop: Arc<AtomicBool>, kill_on_stop: bool) {
        let mut next_beat = Instant::now();
        let mut last_beat = Instant::now() - self.interval;
        let mut last_sweep = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            if last_sweep.elapsed() >= SWEEP {
                last_sweep = Instant::now();
                let removed = self.executor.sweep(self.log_retain);
                if removed > 0 {
                    tracing::info!(
                        containers = removed,
                        "removed the logs and working dirs of containers past yarn.nodemanager.log.retain-seconds"
                    );
                }
            }
            let ended = self.executor.poll();
            let something_ended = !ended.is_empty();
            for end in ended {
                tracing::info!(container = %end.container_id, exit_status = end.exit_status, "container ended");
                self.unacknowledged.insert(end.container_id.clone(), end);
            }
            // Out of band, as YARN's NodeManager does when a container ends.
            if something_ended && self.registered && last_beat.elapsed() >= MIN_GAP {
                next_beat = Instant::now();
            }
            if Instant::now() >= next_beat {
                last_beat = Instant::now();
                next_beat = match self.exchange() {
                    Ok(()) => Instant::now() + self.interval,
                    Err(error) => {
                        tracing::warn!(%error, node = %self.identity.node_id, "no answer from the resource manager; trying again");
                        Instant::now() + RETRY
                    }
                };
            }
            std::thread::sleep(POLL);
        }
        if kill_on_stop {
            self.executor.kill_all_now();
        }
    }

    /// One registration or heartbeat, and its orders carried out.
    fn exchange(&mut self) -> Result<(), TrackerError> {
        if !self.registered {
            return self.register();
        }
        let beat = Heartbeat {
            finished: Vec::new(),
            // The server takes at most this many a heartbeat; the rest follow.
            ended: self
                .unacknowledged
                .values()
                .take(crate::limits::MAX_FINISHED_PER_HEARTBEAT)
                .cloned()
                .collect(),
            running: Some(self.running_ids()),
            response_id: Some(self.response_id),
        };
        match self.tracker.heartbeat(&self.identity.node_id, &beat) {
            Ok(orders) => {
                self.carry_out(orders);
                Ok(())
            }
            Err(TrackerError::UnknownNode(why)) => {
                tracing::warn!(%why, "the resource manager does not know this node; registering again");
                self.registered = false;
                self.register()
            }
            Err(other) => Err(other),
        }
    }

    fn register(&mut self) -> Result<(), TrackerError> {
        // Ended but unacknowledged containers are listed as running, so the
        // server keeps them until the next heartbeat reports their real end.
        let mut running = self.running_ids();
        running.extend(self.unacknowledged.keys().cloned());
        let request = RegisterNode {
            node_id: self.identity.node_id.clone(),
            memory_mb: self.identity.resources.memory_mb,
            vcores: self.identity.resources.vcores,
            gpus: self.identity.resources.gpus,
            running: Some(running),
            // The server takes at most 256 bytes of it (a reason for
            // unusable cgroups can name long paths).
            isolation: Some(crate::limits::cut(
                &self.executor.isolation(),
                crate::limits::MAX_NAME_BYTES,
            )),
            http_address: Some(self.identity.http_address.clone()),
            logs_secret: Some(self.identity.logs_secret.clone()),
        };
        let registration = self.tracker.register(&request)?;
        self.interval =
            Duration::from_millis(registration.heartbeat_interval_ms.clamp(10, 3_600_000));
        self.response_id = 0;
        self.registered = true;
        tracing::info!(node = %self.identity.node_id, resources = %self.identity.resources, isolation = %self.executor.isolation(), "registered with the resource manager");
        for order in registration.kill {
            self.executor.kill(&order.container_id, order.exit_status);
        }
        Ok(())
    }

    fn carry_out(&mut self, orders: NodeOrders) {
        if orders.action == NodeAction::Resync {
            tracing::warn!("the resource manager asks this node to register again");
            self.registered = false;
            return;
        }
        self.response_id = orders.response_id;
        for id in &orders.acknowledged {
            if self.unacknowledged.remove(id).is_some() {
                self.executor.forget(id);
            }
        }
        for order in &orders.kill {
            self.executor.kill(&order.container_id, order.exit_status);
        }
        for order in &orders.launch {
            // A container this agent ended and has not been told it knows
            // must not start again.
            if !self.unacknowledged.contains_key(&order.container_id) {
                self.executor.launch(order);
            }
        }
    }

    fn running_ids(&self) -> Vec<String> {
        self.executor
            .running()
            .into_iter()
            .map(|c| c.container_id)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_long_isolation_message_is_cut_to_what_the_server_takes() {
        let long = "process groups only: ".to_string() + &"/sys/fs/cgroup/é".repeat(30);
        let cut = crate::limits::cut(&long, 256);
        assert!(cut.len() <= 256 && long.starts_with(&cut), "{cut}");
        assert_eq!(crate::limits::cut("short", 256), "short");
    }
}
