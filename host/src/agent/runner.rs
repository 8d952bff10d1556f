//! The agent's loop (YARN's NodeStatusUpdater): register, then heartbeat on
//! the interval the server gives — sooner when a container ends — each
//! time reporting what runs and what ended (until acknowledged), and carry
//! out the answer's kill and launch orders. One thread; nothing in it waits
//! on a container.
//!
//! Fencing (active/standby servers): every answer carries its server's
//! epoch, which only grows across restarts and failovers. The agent keeps
//! the highest it has seen; an answer of a lower one (a former active that
//! lost its lease and does not know it yet) is ignored entirely — nothing
//! killed, launched or acknowledged — and the agent moves on to the next
//! server. An answer from a server or epoch other than the one it
//! registered with is a new active's: the agent registers with it again,
//! listing what it runs, so its containers are kept.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::executor::Executor;
use super::health::HealthChecker;
use super::node_manager::Shared;
use super::queue::{OpportunisticQueue, Refused};
use crate::protocol::node::{ContainerEnd, LaunchOrder};
use crate::protocol::node::{HEARTBEAT_RETRY, heartbeat_wait, heartbeat_wait_after_a_stall};
use crate::protocol::node::{Heartbeat, RegisterNode};
use crate::protocol::node::{NodeAction, NodeOrders};
use crate::protocol::node::{ResourceTracker, TrackerError};
use crate::resources::Resources;

/// Who the agent is to the server, and what it offers.
#[derive(Debug, Clone)]
pub struct NodeIdentity {
    /// The node id it registers as (`weft agent --node-id`, else the host
    /// name).
    pub node_id: String,
    /// What the node offers (`weft agent --resources`, else what the
    /// machine has).
    pub resources: Resources,
    /// Where its log server listens, and the secret it wants.
    pub http_address: String,
    /// The bearer secret its log server wants, given at registration.
    pub logs_secret: String,
    /// Its rack (`weft agent --rack`), or none for YARN's default one.
    pub rack: Option<String>,
    /// Its attributes (`weft agent --attribute KEY=VALUE`).
    pub attributes: std::collections::BTreeMap<String, String>,
    /// Its node label (`weft agent --labels`), none or one.
    pub labels: Vec<String>,
    /// Where it serves ContainerManagementProtocol (`host:port`), if it does.
    pub nm_address: Option<String>,
}

/// How often the loop looks at its containers between heartbeats (it wakes
/// sooner when one of its containers ends).
const POLL: Duration = Duration::from_millis(20);
/// The soonest a heartbeat follows the one before, when containers end:
/// ends closer together than this go in one heartbeat.
const MIN_GAP: Duration = Duration::from_millis(1);
/// How many heartbeat intervals an agent waits for an answer before it
/// starts no more waiting containers (a server takes a node for lost after
/// many silent intervals: 600 at YARN's defaults; an agent also keeps
/// within half the expiry interval its server gives).
const IN_TOUCH: u32 = 3;
/// How often old containers' logs and working dirs are looked for.
const SWEEP: Duration = Duration::from_secs(60);

/// The agent's loop: registers through `T`, heartbeats (numbered, ends
/// resent until acknowledged), carries out the orders with its executor,
/// and removes old containers' logs and dirs.
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
    /// Random draws for the waits between heartbeats: a counter hashed
    /// with keys the process drew from the system at random.
    spread: std::collections::hash_map::RandomState,
    draws: u64,
    /// The highest epoch an answer carried.
    highest_epoch: u64,
    /// The server (none in process) and epoch of the last registration.
    registered_with: Option<(Option<String>, u64)>,
    /// The last answer of an old epoch warned about (its server, its
    /// epoch, the highest then), so that each is warned about once.
    stale_warned: Option<(Option<String>, u64, u64)>,
    /// Whether ends were found that no heartbeat has carried yet: they go
    /// out before the ended containers' cgroups are removed.
    ends_to_report: bool,
    /// Containers held for their YARN application masters, which start
    /// them over ContainerManagementProtocol (`LaunchOrder::held_for`):
    /// their room is theirs, and they are reported running.
    node_manager: Arc<Shared>,
    /// Opportunistic containers waiting for room (reported `queued`).
    queue: OpportunisticQueue,
    /// When the server last answered (a registration, or a heartbeat of
    /// the epoch registered with).
    last_answered: Option<Instant>,
    /// How long after its last answer the agent counts itself in touch
    /// with the server (see [`AgentLoop::in_touch`]).
    in_touch_for: Duration,
    /// The node's health checks, reported in every heartbeat.
    health: HealthChecker,
}

/// What an answer is to the agent, by who gave it and its epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// Of an epoch older than one seen: ignored.
    Stale,
    /// From the server and epoch the agent registered with.
    Registered,
    /// From another server, or a newer epoch: a new active, to register
    /// with (for a registration's answer: that registration).
    New,
}

/// How an answer of `epoch` from `server` is taken, given the highest epoch
/// seen and where the agent registered last.
fn judge(
    highest: u64,
    registered_with: Option<&(Option<String>, u64)>,
    server: &Option<String>,
    epoch: u64,
) -> Verdict {
    if epoch < highest {
        Verdict::Stale
    } else if registered_with.is_some_and(|(s, e)| s == server && *e == epoch) {
        Verdict::Registered
    } else {
        Verdict::New
    }
}

impl<T: ResourceTracker> AgentLoop<T> {
    /// A loop for the node `identity`, keeping ended containers' logs for
    /// `log_retain` (`yarn.nodemanager.log.retain-seconds`), not yet
    /// registered.
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
            spread: Default::default(),
            draws: 0,
            highest_epoch: 0,
            registered_with: None,
            stale_warned: None,
            ends_to_report: false,
            node_manager: Arc::default(),
            queue: OpportunisticQueue::default(),
            last_answered: None,
            in_touch_for: Duration::ZERO,
            health: HealthChecker::none(),
        }
    }

    /// The loop, sharing its held containers with `node_manager` (the
    /// agent's ContainerManagementProtocol).
    pub fn with_node_manager(mut self, node_manager: Arc<Shared>) -> AgentLoop<T> {
        self.node_manager = node_manager;
        self
    }

    /// The loop, its node's health checked by `health`.
    pub fn with_health(mut self, health: HealthChecker) -> AgentLoop<T> {
        self.health = health;
        self
    }

    /// Runs until `stop` is set; then, with `kill_on_stop`, kills what runs.
    pub fn run(mut self, stop: Arc<AtomicBool>, kill_on_stop: bool) {
        let mut next_beat = Instant::now();
        let mut last_beat = Instant::now() - self.interval;
        let mut last_sweep = Instant::now();
        // Whether the last exchange was answered: one that was not is
        // tried again after HEARTBEAT_RETRY, however many containers end meanwhile.
        let mut answered = true;
        // Whether the last wait woke on a pidfd: if the poll then found
        // nothing ended (a monitor traced by someone else looks alive to
        // us), the next wait is a plain sleep, not a busy loop.
        let mut woke = false;
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
            self.starts_and_stops();
            // The container log monitor (a no-op until its interval has
            // passed): a container it kills ends as any kill does.
            self.executor.check_log_sizes(Instant::now());
            // Ends are found first and tidied after the heartbeat that
            // reports them, so the server learns of them sooner.
            let something_ended = self.take_ends();
            // Room they left goes to what waits, before the heartbeat
            // that reports them, so it reports these running too.
            self.start_queued();
            // Out of band, as YARN's NodeManager does when a container ends
            // (but not sooner than MIN_GAP after the last one).
            // And when the server says containers were placed here since
            // (an agent in its process): their launch need not wait.
            // A change of health goes out at once too: the server stops
            // (or starts again) placing work here.
            let health_changed = self.health.changed();
            let can_beat = self.registered && answered;
            let placed = can_beat && self.tracker.orders_waiting();
            if (self.ends_to_report || placed || health_changed) && can_beat {
                next_beat = next_beat.min(last_beat + MIN_GAP);
            }
            if Instant::now() >= next_beat {
                last_beat = Instant::now();
                let outcome = self.exchange();
                let after_failures = !answered;
                answered = outcome.is_ok();
                // Spread, so that agents answered (or refused) together do
                // not send together for good; over the whole interval when
                // many were likely answered together.
                let draw = self.draw();
                let wait = match outcome {
                    Ok(()) if after_failures || last_beat.elapsed() > self.interval => {
                        heartbeat_wait_after_a_stall(self.interval, draw)
                    }
                    Ok(()) => heartbeat_wait(self.interval, draw),
                    // Warned about once, when it first answered so.
                    Err(error @ TrackerError::Stale(_)) => {
                        tracing::debug!(%error, "trying the next server");
                        heartbeat_wait(HEARTBEAT_RETRY, draw)
                    }
                    Err(error) => {
                        tracing::warn!(%error, node = %self.identity.node_id, "no answer from the resource manager; trying again");
                        heartbeat_wait(HEARTBEAT_RETRY, draw)
                    }
                };
                next_beat = Instant::now() + wait;
            }
            // Removing cgroups takes long (three rmdirs a container): not
            // while ends wait to be reported, unless the server is away.
            let more_to_tidy = (!self.ends_to_report || !answered) && self.executor.tidy();
            // Ends not yet reported go out at once; cgroups left to remove
            // are removed soon.
            let due = if (self.ends_to_report && self.registered && answered) || more_to_tidy {
                next_beat.min(last_beat + MIN_GAP)
            } else {
                next_beat
            };
            let wait = due.saturating_duration_since(Instant::now()).min(POLL);
            if woke && !something_ended {
                woke = false;
                std::thread::sleep(wait);
            } else {
                woke = self.executor.wait_for_an_end(wait);
            }
        }
        if kill_on_stop {
            self.executor.kill_all_now();
        }
    }

    /// The next random number for a wait between heartbeats.
    fn draw(&mut self) -> u64 {
        self.draws = self.draws.wrapping_add(1);
        std::hash::BuildHasher::hash_one(&self.spread, self.draws)
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
            queued: self.queue.ids(),
            response_id: Some(self.response_id),
            health: self.health.health(),
        };
        match self.tracker.heartbeat(&self.identity.node_id, &beat) {
            Ok(orders) => {
                // Ends beyond what one heartbeat takes go in the next ones,
                // at the interval: an early beat is for ends none carried.
                self.ends_to_report = false;
                let server = self.tracker.server();
                match judge(
                    self.highest_epoch,
                    self.registered_with.as_ref(),
                    &server,
                    orders.epoch,
                ) {
                    Verdict::Stale => Err(self.stale("heartbeat", server, orders.epoch)),
                    Verdict::Registered => {
                        self.last_answered = Some(Instant::now());
                        self.carry_out(orders);
                        Ok(())
                    }
                    Verdict::New => {
                        // Its orders answer a heartbeat numbered for
                        // another server's answers: not acted on.
                        tracing::warn!(
                            server = server.as_deref().unwrap_or("in process"),
                            epoch = orders.epoch,
                            registered_epoch = self.registered_with.as_ref().map(|r| r.1),
                            "a new active resource manager answered; registering with it"
                        );
                        self.highest_epoch = orders.epoch;
                        self.registered = false;
                        self.register()
                    }
                }
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
        // And those still starting: a server that knows them must not take
        // them for lost and place them again while they start here.
        running.extend(self.executor.starting());
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
            rack: self.identity.rack.clone(),
            attributes: self.identity.attributes.clone(),
            labels: self.identity.labels.clone(),
            nm_address: self.identity.nm_address.clone(),
            health: self.health.health(),
        };
        let registration = self.tracker.register(&request)?;
        // What waited is not among what it runs, so the server takes it
        // for lost and places it again: it must never start here now.
        let dropped = self.queue.clear();
        if !dropped.is_empty() {
            tracing::info!(
                containers = dropped.len(),
                "dropped the opportunistic containers that waited: the resource manager places them again"
            );
        }
        let server = self.tracker.server();
        if judge(self.highest_epoch, None, &server, registration.epoch) == Verdict::Stale {
            return Err(self.stale("registration", server, registration.epoch));
        }
        self.highest_epoch = registration.epoch;
        self.registered_with = Some((server.clone(), registration.epoch));
        self.stale_warned = None;
        self.interval =
            Duration::from_millis(registration.heartbeat_interval_ms.clamp(10, 3_600_000));
        // Well within the time after which the server takes the node for
        // lost (half of it, where the server says it).
        self.in_touch_for = self.interval * IN_TOUCH;
        if registration.expiry_interval_ms > 0 {
            self.in_touch_for = self
                .in_touch_for
                .min(Duration::from_millis(registration.expiry_interval_ms / 2));
        }
        self.response_id = 0;
        self.registered = true;
        self.last_answered = Some(Instant::now());
        self.node_manager
            .set_key(crate::security::yarn_tokens::NodeTokenKey::from_hex(
                &registration.yarn_token_key,
            ));
        tracing::info!(node = %self.identity.node_id, resources = %self.identity.resources, isolation = %self.executor.isolation(), server = server.as_deref().unwrap_or("in process"), epoch = registration.epoch, "registered with the resource manager");
        for order in registration.kill {
            self.kill(&order.container_id, order.exit_status);
        }
        Ok(())
    }

    /// An answer of an old epoch from `server`: ignored, warned about
    /// once, and the next request goes to the next server.
    fn stale(&mut self, what: &str, server: Option<String>, epoch: u64) -> TrackerError {
        let seen = (server.clone(), epoch, self.highest_epoch);
        let server = server.as_deref().unwrap_or("in process");
        if self.stale_warned.as_ref() != Some(&seen) {
            tracing::warn!(
                server,
                epoch,
                highest_epoch = self.highest_epoch,
                "ignoring an answer of an old epoch (a former active resource manager); trying the next server"
            );
            self.stale_warned = Some(seen);
        }
        self.tracker.pass_over();
        TrackerError::Stale(format!(
            "{server} answered the {what} from epoch {epoch}, older than {}: ignored",
            self.highest_epoch
        ))
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
            self.kill(&order.container_id, order.exit_status);
        }
        for order in &orders.launch {
            // A container this agent ended and has not been told it knows
            // must not start again.
            if self.unacknowledged.contains_key(&order.container_id) {
                continue;
            }
            if order.held_for.is_some() {
                self.node_manager.hold(order);
            } else if order.opportunistic {
                self.enqueue(order);
            } else if order.yarn.is_some() {
                self.executor.launch(&self.with_node(order));
            } else {
                self.executor.launch(order);
            }
        }
        self.start_queued();
    }

    /// Queues an opportunistic container, unless it runs or ran here
    /// already (its order is repeated until the server hears it waits).
    fn enqueue(&mut self, order: &LaunchOrder) {
        if self.executor.knows(&order.container_id) {
            return;
        }
        match self.queue.push(order) {
            Ok(()) | Err(Refused::Queued) => {}
            Err(Refused::Full) => {
                let end = ContainerEnd {
                    container_id: order.container_id.clone(),
                    exit_status: crate::protocol::node::exit_status::INVALID,
                    diagnostics: format!(
                        "not queued: this agent's queue holds {} opportunistic containers already",
                        crate::limits::MAX_OPPORTUNISTIC_QUEUE
                    ),
                    finished_ms: super::executor::now_ms(),
                    started_ms: None,
                };
                self.unacknowledged.insert(end.container_id.clone(), end);
                self.ends_to_report = true;
            }
        }
    }

    /// Starts what waits in the queue, in turn, as far as the room the
    /// node declared and does not use leaves (what runs, sets up, or is
    /// held for a master counts): never beyond it.
    fn start_queued(&mut self) {
        if self.queue.is_empty() || !self.in_touch() {
            return;
        }
        let in_use = self.executor.in_use() + self.node_manager.held_resources();
        let free = self.identity.resources.saturating_sub(&in_use);
        for order in self.queue.take_startable(free) {
            if order.yarn.is_some() {
                self.executor.launch(&self.with_node(&order));
            } else {
                self.executor.launch(&order);
            }
        }
    }

    /// Whether the server answered lately (within [`IN_TOUCH`] heartbeat
    /// intervals, and half the time after which it takes a silent node
    /// for lost): if not, it may have taken this node for lost and placed
    /// what waits here elsewhere, so nothing waiting starts until it
    /// answers again (or, registering anew, the queue is dropped).
    fn in_touch(&self) -> bool {
        self.registered
            && self
                .last_answered
                .is_some_and(|at| at.elapsed() <= self.in_touch_for)
    }

    /// The containers that ended since the last look, kept to report until
    /// acknowledged (the executor logs each); whether any did.
    fn take_ends(&mut self) -> bool {
        let ended = self.executor.poll_ends();
        let something_ended = !ended.is_empty();
        self.ends_to_report |= something_ended;
        for end in ended {
            self.node_manager
                .ended(&end.container_id, end.exit_status, &end.diagnostics);
            self.unacknowledged.insert(end.container_id.clone(), end);
        }
        something_ended
    }

    /// Kills a container, or lets go of one held for its master (it ends
    /// at once with `exit_status`).
    fn kill(&mut self, container_id: &str, exit_status: i32) {
        let why = if self.queue.contains(container_id) {
            "killed while it waited in the agent's queue"
        } else {
            "killed before its application master started it"
        };
        self.end(container_id, exit_status, why);
    }

    /// [`AgentLoop::kill`], a held or queued container's end saying
    /// `diagnostics`.
    fn end(&mut self, container_id: &str, exit_status: i32, diagnostics: &str) {
        let queued = self.queue.remove(container_id);
        if self.node_manager.release(container_id) || queued {
            self.node_manager
                .ended(container_id, exit_status, diagnostics);
            let end = ContainerEnd {
                container_id: container_id.to_string(),
                exit_status,
                diagnostics: diagnostics.into(),
                finished_ms: super::executor::now_ms(),
                started_ms: None,
            };
            self.unacknowledged.insert(end.container_id.clone(), end);
            self.ends_to_report = true;
        } else {
            self.executor.kill(container_id, exit_status);
        }
    }

    /// A YARN container's order with this node's addresses (for NM_HOST,
    /// NM_PORT, NM_HTTP_PORT).
    fn with_node(&self, order: &LaunchOrder) -> LaunchOrder {
        let mut order = order.clone();
        if let Some(yarn) = &mut order.yarn {
            yarn.node_manager_address = self.identity.nm_address.clone().unwrap_or_default();
            yarn.node_http_port = self
                .identity
                .http_address
                .rsplit_once(':')
                .and_then(|(_, port)| port.trim_end_matches('/').parse().ok())
                .unwrap_or(0);
        }
        order
    }

    /// Launches what application masters started, kills what they stopped.
    fn starts_and_stops(&mut self) {
        let (starts, stops) = self.node_manager.take();
        for order in &starts {
            self.executor.launch(&self.with_node(order));
        }
        for container in stops {
            self.kill(
                &container,
                crate::protocol::node::exit_status::KILLED_BY_APPMASTER,
            );
        }
        for container in self.node_manager.expired() {
            tracing::info!(container = %container, "container expired: its application master did not start it");
            self.end(
                &container,
                crate::protocol::node::exit_status::ABORTED,
                "Container expired since it was unused",
            );
        }
    }

    fn running_ids(&self) -> Vec<String> {
        self.executor
            .running()
            .into_iter()
            .map(|c| c.container_id)
            .chain(self.node_manager.held())
            // Reported running while held: not lost while it sets up.
            .chain(
                self.executor
                    .starting()
                    .into_iter()
                    .filter(|id| self.node_manager.started(id)),
            )
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;
    use crate::agent::executor::{
        DEFAULT_KILL_GRACE, DEFAULT_STDERR_TAIL_BYTES, ExecutorConfig, RunAs,
    };
    use crate::protocol::node::KillOrder;
    use crate::protocol::node::RegisteredNode;
    use crate::protocol::node::{ContainerCommand, LaunchOrder};

    #[test]
    fn a_long_isolation_message_is_cut_to_what_the_server_takes() {
        let long = "process groups only: ".to_string() + &"/sys/fs/cgroup/é".repeat(30);
        let cut = crate::limits::cut(&long, 256);
        assert!(cut.len() <= 256 && long.starts_with(&cut), "{cut}");
        assert_eq!(crate::limits::cut("short", 256), "short");
    }

    /// One scripted answer, and the server that gives it.
    enum Answer {
        Registered(&'static str, RegisteredNode),
        Orders(&'static str, NodeOrders),
    }

    /// A tracker that answers from a script, and writes down what it was
    /// asked ("register" / "heartbeat") and how often it passed a server over.
    #[derive(Default)]
    struct Scripted {
        answers: VecDeque<Answer>,
        asked: Vec<&'static str>,
        server: Option<String>,
        passed_over: Vec<String>,
        registrations: Vec<RegisterNode>,
        /// When each heartbeat came, and the flag to set when the script
        /// runs out (for tests of the running loop).
        heartbeat_times: Arc<std::sync::Mutex<Vec<Instant>>>,
        stop_when_done: Option<Arc<AtomicBool>>,
        /// How long each heartbeat's answer takes, and when it was given.
        answer_after: Duration,
        answer_times: Arc<std::sync::Mutex<Vec<Instant>>>,
    }

    impl ResourceTracker for Scripted {
        fn register(&mut self, request: &RegisterNode) -> Result<RegisteredNode, TrackerError> {
            self.asked.push("register");
            self.registrations.push(request.clone());
            match self.answers.pop_front() {
                Some(Answer::Registered(server, registration)) => {
                    self.server = Some(server.into());
                    Ok(registration)
                }
                _ => Err(TrackerError::Unavailable("no answer scripted".into())),
            }
        }

        fn heartbeat(&mut self, _: &str, _: &Heartbeat) -> Result<NodeOrders, TrackerError> {
            self.asked.push("heartbeat");
            self.heartbeat_times.lock().unwrap().push(Instant::now());
            std::thread::sleep(self.answer_after);
            self.answer_times.lock().unwrap().push(Instant::now());
            if self.answers.is_empty()
                && let Some(stop) = &self.stop_when_done
            {
                stop.store(true, Ordering::Relaxed);
            }
            match self.answers.pop_front() {
                Some(Answer::Orders(server, orders)) => {
                    self.server = Some(server.into());
                    Ok(orders)
                }
                _ => Err(TrackerError::Unavailable("no answer scripted".into())),
            }
        }

        fn server(&self) -> Option<String> {
            self.server.clone()
        }

        fn pass_over(&mut self) {
            self.passed_over.extend(self.server.clone());
        }
    }

    fn registration(epoch: u64, kill: &[&str]) -> RegisteredNode {
        RegisteredNode {
            node_id: "n1".into(),
            heartbeat_interval_ms: 1000,
            kill: kill
                .iter()
                .map(|id| KillOrder {
                    container_id: id.to_string(),
                    exit_status: -106,
                })
                .collect(),
            epoch,
            yarn_token_key: String::new(),
            expiry_interval_ms: 0,
        }
    }

    /// A launch order for container `id` running `argv`.
    fn launch(id: &str, argv: &[&str]) -> LaunchOrder {
        LaunchOrder {
            container_id: id.into(),
            app_id: "application_1_0001".into(),
            user: "alice".into(),
            command: ContainerCommand::Argv(argv.iter().map(|a| a.to_string()).collect()),
            env: Default::default(),
            memory_mb: 64,
            vcores: 1,
            gpus: 0,
            yarn: None,
            held_for: None,
            opportunistic: false,
        }
    }

    /// Orders to launch `launch`, kill `kill` and acknowledge `acknowledged`.
    fn orders(
        epoch: u64,
        response_id: u64,
        launch: Vec<LaunchOrder>,
        kill: &[&str],
        acknowledged: &[&str],
    ) -> NodeOrders {
        NodeOrders {
            response_id,
            action: NodeAction::Normal,
            launch,
            kill: kill
                .iter()
                .map(|id| KillOrder {
                    container_id: id.to_string(),
                    exit_status: -105,
                })
                .collect(),
            acknowledged: acknowledged.iter().map(|id| id.to_string()).collect(),
            finished_accepted: 0,
            epoch,
        }
    }

    fn end(id: &str) -> ContainerEnd {
        ContainerEnd {
            container_id: id.into(),
            exit_status: 0,
            diagnostics: String::new(),
            finished_ms: 1,
            started_ms: None,
        }
    }

    /// An agent loop on a fresh work dir with `answers` scripted.
    fn agent(dir: &tempfile::TempDir, answers: Vec<Answer>) -> AgentLoop<Scripted> {
        let unique = dir
            .path()
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .replace(|c: char| !c.is_ascii_alphanumeric(), "");
        let executor = Executor::open(ExecutorConfig {
            work_dir: dir.path().join("work"),
            log_dir: dir.path().join("logs"),
            run_as: RunAs::Agent,
            kill_grace: DEFAULT_KILL_GRACE,
            stderr_tail_bytes: DEFAULT_STDERR_TAIL_BYTES,
            cgroup_name: format!("weft-test-{}-{unique}", std::process::id()),
            pids_limit: 0,
            syscall_filter: true,
            own_network: false,
            log_limit_bytes: 0,
            log_check_interval: Duration::from_secs(10),
            memory_mb: 0,
        })
        .expect("open");
        let identity = NodeIdentity {
            node_id: "n1".into(),
            resources: Resources::new(1024, 1, 0),
            http_address: "http://127.0.0.1:1".into(),
            nm_address: None,
            logs_secret: "s".into(),
            rack: None,
            attributes: Default::default(),
            labels: Vec::new(),
        };
        let tracker = Scripted {
            answers: answers.into(),
            ..Scripted::default()
        };
        AgentLoop::new(identity, Duration::from_secs(60), tracker, executor)
    }

    #[test]
    fn answers_are_judged_by_epoch_and_by_who_gave_them() {
        let a = Some("http://a".to_string());
        let b = Some("http://b".to_string());
        let registered = (a.clone(), 5);
        assert_eq!(judge(5, Some(&registered), &a, 4), Verdict::Stale);
        assert_eq!(judge(5, Some(&registered), &b, 4), Verdict::Stale);
        assert_eq!(judge(5, Some(&registered), &a, 5), Verdict::Registered);
        assert_eq!(judge(5, Some(&registered), &a, 6), Verdict::New);
        assert_eq!(judge(5, Some(&registered), &b, 5), Verdict::New);
        assert_eq!(judge(0, None, &a, 0), Verdict::New);
        // A server that does not say its epoch (0) is taken until one does.
        assert_eq!(judge(0, Some(&(a.clone(), 0)), &a, 0), Verdict::Registered);
    }

    /// An agent registered with heartbeats every `interval_ms`, given
    /// `heartbeats` answers, each `answer_after` late: when its heartbeats
    /// came and when their answers did, once the script ran out.
    fn heartbeat_times(
        interval_ms: u64,
        heartbeats: u64,
        answer_after: Duration,
    ) -> (Vec<Instant>, Vec<Instant>) {
        let dir = tempfile::tempdir().unwrap();
        let mut registered = registration(1, &[]);
        registered.heartbeat_interval_ms = interval_ms;
        let mut answers = vec![Answer::Registered("http://a", registered)];
        for id in 1..=heartbeats {
            answers.push(Answer::Orders(
                "http://a",
                orders(1, id, Vec::new(), &[], &[]),
            ));
        }
        let mut agent = agent(&dir, answers);
        let stop = Arc::new(AtomicBool::new(false));
        let (sent, answered) = (
            agent.tracker.heartbeat_times.clone(),
            agent.tracker.answer_times.clone(),
        );
        agent.tracker.stop_when_done = Some(stop.clone());
        agent.tracker.answer_after = answer_after;
        agent.run(stop, true);
        let (sent, answered) = (
            sent.lock().unwrap().clone(),
            answered.lock().unwrap().clone(),
        );
        assert_eq!(sent.len() as u64, heartbeats + 1, "{sent:?}");
        (sent, answered)
    }

    #[test]
    fn the_loop_waits_up_to_a_tenth_less_than_the_interval_between_heartbeats() {
        // Interval 200 ms: each wait is 180–200 ms. Without the spread no
        // gap is under 200 ms; with it, all twelve over 195 ms is about as
        // likely as 0.25^12 (more with the exchange's time and a late
        // wake, which a loaded machine adds to every gap).
        let (sent, _) = heartbeat_times(200, 12, Duration::ZERO);
        let gaps: Vec<Duration> = sent.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(
            gaps.iter().all(|&g| g >= Duration::from_millis(180)),
            "never sooner than 90 % of the interval: {gaps:?}"
        );
        assert!(
            gaps.iter().any(|&g| g < Duration::from_millis(195)),
            "some sooner than the interval: {gaps:?}"
        );
    }

    #[test]
    fn after_an_answer_slower_than_the_interval_the_wait_is_anywhere_in_it() {
        // Interval 50 ms, every answer 60 ms late: each wait after one is
        // 0–50 ms, not 45–50 ms; all eight at 40 ms or more is about as
        // likely as 0.2^8.
        let (sent, answered) = heartbeat_times(50, 8, Duration::from_millis(60));
        let waits: Vec<Duration> = answered
            .iter()
            .zip(&sent[1..])
            .map(|(a, s)| *s - *a)
            .collect();
        assert!(
            waits.iter().any(|&w| w < Duration::from_millis(40)),
            "spread over the interval: {waits:?}"
        );
    }

    #[test]
    fn a_heartbeat_answer_of_an_older_epoch_is_ignored_entirely() {
        let dir = tempfile::tempdir().unwrap();
        let (ended, running, new) = (
            "container_1_0001_01_000001",
            "container_1_0001_01_000002",
            "container_1_0001_01_000003",
        );
        let mut agent = agent(
            &dir,
            vec![
                Answer::Registered("http://b", registration(7, &[])),
                Answer::Orders(
                    "http://b",
                    orders(7, 1, vec![launch(running, &["sleep", "10"])], &[], &[]),
                ),
                // A former active, paused and resumed, still answering.
                Answer::Orders(
                    "http://a",
                    orders(6, 41, vec![launch(new, &["true"])], &[running], &[ended]),
                ),
                Answer::Orders("http://b", orders(7, 2, Vec::new(), &[], &[ended])),
            ],
        );
        agent.exchange().unwrap();
        agent.exchange().unwrap();
        let ids = |agent: &AgentLoop<Scripted>| agent.running_ids();
        // Listed once its monitor has started it (a poll sees that).
        let deadline = Instant::now() + Duration::from_secs(5);
        while ids(&agent).is_empty() && Instant::now() < deadline {
            agent.executor.poll();
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(ids(&agent), [running]);
        agent.unacknowledged.insert(ended.into(), end(ended));
        let error = agent.exchange().unwrap_err();
        assert!(matches!(error, TrackerError::Stale(_)), "{error}");
        std::thread::sleep(DEFAULT_KILL_GRACE + Duration::from_millis(100));
        agent.executor.poll();
        assert_eq!(ids(&agent), [running], "nothing killed, nothing launched");
        assert!(
            agent.unacknowledged.contains_key(ended),
            "nothing acknowledged"
        );
        assert_eq!(agent.response_id, 1, "its number not taken");
        assert!(agent.registered, "still registered with b");
        assert_eq!(agent.tracker.passed_over, vec!["http://a"]);
        assert_eq!(agent.highest_epoch, 7);
        // b's answer, of the epoch it registered with, is carried out.
        agent.exchange().unwrap();
        assert!(agent.unacknowledged.is_empty());
        assert_eq!(agent.response_id, 2);
        assert_eq!(
            agent.tracker.asked,
            ["register", "heartbeat", "heartbeat", "heartbeat"]
        );
        agent.executor.kill_all_now();
    }

    #[test]
    fn a_registration_answer_of_an_older_epoch_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let mut agent = agent(
            &dir,
            vec![
                Answer::Registered("http://b", registration(7, &[])),
                Answer::Orders(
                    "http://b",
                    NodeOrders {
                        action: NodeAction::Resync,
                        ..orders(7, 0, Vec::new(), &[], &[])
                    },
                ),
                Answer::Registered("http://a", registration(3, &["container_1_0001_01_000005"])),
                Answer::Registered("http://b", registration(7, &[])),
            ],
        );
        agent.exchange().unwrap();
        agent.exchange().unwrap();
        assert!(!agent.registered, "told to register again");
        let error = agent.exchange().unwrap_err();
        assert!(matches!(error, TrackerError::Stale(_)), "{error}");
        assert!(!agent.registered);
        assert_eq!(agent.registered_with, Some((Some("http://b".into()), 7)));
        assert_eq!(agent.tracker.passed_over, vec!["http://a"]);
        agent.exchange().unwrap();
        assert!(agent.registered);
        agent.executor.kill_all_now();
    }

    #[test]
    fn a_newer_epoch_is_a_new_active_to_register_with_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let kept = "container_1_0001_01_000003";
        let mut agent = agent(
            &dir,
            vec![
                Answer::Registered("http://a", registration(1, &[])),
                Answer::Orders("http://a", orders(1, 1, Vec::new(), &[], &[])),
                // a died; b took over with the store (epoch 2).
                Answer::Orders(
                    "http://b",
                    orders(
                        2,
                        0,
                        vec![launch("container_1_0001_01_000004", &["true"])],
                        &[],
                        &[],
                    ),
                ),
                Answer::Registered("http://b", registration(2, &[])),
            ],
        );
        agent.exchange().unwrap();
        agent.exchange().unwrap();
        assert_eq!(agent.response_id, 1);
        agent.unacknowledged.insert(kept.into(), end(kept));
        agent.exchange().unwrap();
        assert_eq!(
            agent.tracker.asked,
            ["register", "heartbeat", "heartbeat", "register"]
        );
        assert!(
            agent.executor.running().is_empty(),
            "its orders not acted on"
        );
        assert_eq!(agent.registered_with, Some((Some("http://b".into()), 2)));
        assert_eq!((agent.highest_epoch, agent.response_id), (2, 0));
        let again = &agent.tracker.registrations[1];
        assert_eq!(
            again.running.as_deref(),
            Some(&[kept.to_string()][..]),
            "registered listing what it has, so the new active keeps it"
        );
        assert!(agent.tracker.passed_over.is_empty());
        agent.executor.kill_all_now();
    }

    #[test]
    fn an_agent_counts_itself_in_touch_within_half_its_servers_expiry() {
        let dir = tempfile::tempdir().unwrap();
        // Heartbeats every second, lost after 1.5 s of silence: in touch
        // for 0.75 s after an answer, not the three intervals.
        let mut registered = registration(3, &[]);
        registered.expiry_interval_ms = 1500;
        let mut told = agent(&dir, vec![Answer::Registered("http://a", registered)]);
        told.exchange().unwrap();
        assert_eq!(told.in_touch_for, Duration::from_millis(750));
        assert!(told.in_touch());
        told.last_answered = Some(Instant::now() - Duration::from_millis(800));
        assert!(
            !told.in_touch(),
            "past half the expiry nothing waiting starts"
        );
        // A server that does not say: three intervals.
        let mut untold = agent(
            &dir,
            vec![Answer::Registered("http://a", registration(3, &[]))],
        );
        untold.exchange().unwrap();
        assert_eq!(untold.in_touch_for, Duration::from_secs(3));
    }
}
