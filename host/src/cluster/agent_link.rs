//! The heartbeat protocol with node agents, on the cluster's side (YARN's
//! ResourceTrackerService): numbered answers, sent again when the agent
//! says it missed one; launch and kill orders repeated until the agent's
//! reports show them carried out; container ends acknowledged; and a
//! registration that keeps what a restarted agent still runs. So a lost or
//! duplicated message changes nothing, and no container runs on two nodes.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::model::EndCause;
use super::node::AgentInfo;
use super::{Cluster, ClusterError, Container, NodeKind};
use crate::protocol::node::{
    ContainerCommand, ContainerEnd, KillOrder, LaunchOrder, NodeAction, NodeOrders, exit_status,
};
use crate::resources::Resources;

/// What a node agent reports in one heartbeat.
#[derive(Debug, Clone, Copy, Default)]
pub struct AgentReport<'a> {
    /// The number of the last answer it received (0 after registering);
    /// none for a client that does not number its heartbeats.
    pub response_id: Option<u64>,
    /// Every container it runs now; none for a client that does not say.
    pub running: Option<&'a [String]>,
    /// Containers that ended, resent until acknowledged.
    pub ended: &'a [ContainerEnd],
    /// Containers that ended with status 0 now (the simple protocol).
    pub finished: &'a [String],
    /// Opportunistic containers it holds queued, not yet started.
    pub queued: &'a [String],
}

/// A heartbeat's report once taken ([`Cluster::take_agent_report`]).
#[derive(Debug, Clone)]
pub enum TakenReport {
    /// The heartbeat before, again (its answer was lost): answered as
    /// then, nothing changed.
    Repeat(Arc<NodeOrders>),
    /// A new report, taken.
    New {
        /// Containers it ended, with when (to be charged).
        ended: Vec<(Container, u64)>,
        /// Containers it reported running for the first time: they are
        /// charged from now ([`Container::launched_ms`]).
        launched: Vec<String>,
        /// Every reported end's container id, known or not: the answer
        /// acknowledges them so the agent stops resending them.
        acknowledged: Vec<String>,
        /// How many reported ends (and simple-protocol finishes) ended a
        /// container this node held (the answer's `finished_accepted`).
        accepted: usize,
        /// It listed what the node runs.
        says_running: bool,
        /// It carried a response id.
        numbered: bool,
    },
}

impl TakenReport {
    /// Containers the report ended, with when.
    pub fn ended(&self) -> &[(Container, u64)] {
        match self {
            TakenReport::Repeat(_) => &[],
            TakenReport::New { ended, .. } => ended,
        }
    }

    /// Containers the report showed running for the first time.
    pub fn launched(&self) -> &[String] {
        match self {
            TakenReport::Repeat(_) => &[],
            TakenReport::New { launched, .. } => launched,
        }
    }
}

/// What a registration did: containers it lost, and kill orders for what
/// the agent runs that its node does not hold.
#[derive(Debug, Clone, Default)]
pub struct AgentRegistered {
    /// Containers the node had that ended (ABORTED) with the
    /// registration, to be charged.
    pub lost: Vec<Container>,
    /// Orders to kill what the agent runs that its node does not hold.
    pub kill: Vec<KillOrder>,
}

/// What a heartbeat did: containers that ended (with when, to be charged)
/// and the answer.
#[derive(Debug, Clone)]
pub struct HeartbeatOutcome {
    /// Containers that ended, each with when it ended (ms since the
    /// epoch), to be charged.
    pub ended: Vec<(Container, u64)>,
    /// The answer sent to the agent (shared with the node's copy of its
    /// last answer, kept for a repeated heartbeat).
    pub orders: Arc<NodeOrders>,
}

impl Cluster {
    /// Registers an agent's node. Known again with `running` listed (a
    /// restarted agent): what it still runs is kept, what it lost is lost
    /// (ABORTED, asked for again), and what it runs that this node does
    /// not hold is to be killed (returned as orders). Without `running`, or
    /// for a new id, every container the node had is lost (as YARN's
    /// non-work-preserving resync).
    pub fn register_agent(
        &mut self,
        id: &str,
        capacity: Resources,
        owner: &str,
        agent: AgentInfo,
        running: Option<&[String]>,
        now: u64,
    ) -> Result<AgentRegistered, ClusterError> {
        let keep = running.is_some()
            && self
                .nodes
                .get(id)
                .is_some_and(|node| node.kind == NodeKind::Remote);
        self.check_capacity(id, capacity)?;
        self.claim_node(id, owner)?;
        let running: BTreeSet<&String> = running.unwrap_or_default().iter().collect();
        // An administrator's decommission outlasts the agent's restarts
        // and its node's loss.
        let decommission = self.decommissions.get(id).copied();
        let mut lost = Vec::new();
        if keep {
            self.check_capacity(id, capacity)?;
            let node = &self.nodes[id];
            let gone: Vec<String> = node
                .containers
                .iter()
                .filter(|c| !running.contains(c))
                .cloned()
                .collect();
            // Last known to run at the heartbeat before this registration.
            let seen = node.last_heartbeat_ms;
            for container in &gone {
                lost.extend(self.lose_container(container, seen, now));
            }
            let node = self.nodes.get_mut(id).expect("checked above");
            node.capacity = capacity;
            node.last_heartbeat_ms = now;
            node.unheard_since_restore = false;
            // Kept: the agent runs them, or ran them and has yet to report
            // their end (it lists those too), so when one that was never
            // charged started is learnt from its next heartbeat.
            node.launched = node.containers.clone();
            // A registering agent holds no queue: what it had queued is
            // not among what it runs, so is lost above and asked for again.
            node.queued.clear();
        } else {
            lost = self.register_node(id, NodeKind::Remote, capacity, owner, now)?;
        }
        let partition = self.partition_of(id, &agent.label);
        let node = self.nodes.get_mut(id).expect("registered above");
        node.agent = agent;
        node.partition = partition;
        node.decommission = decommission;
        node.response_id = 0;
        node.last_answer = None;
        for container in running {
            if !node.containers.contains(container) {
                node.to_kill
                    .entry(container.clone())
                    .or_insert(exit_status::KILLED_BY_RESOURCEMANAGER);
            }
        }
        let kill = node.to_kill.iter().map(kill_order).collect();
        for container in &lost {
            tracing::warn!(container = %container.id, app = %container.app, node = %id, "container lost: the node's agent registered again without it");
        }
        super::durable::node_changed(&mut self.changes, id);
        Ok(AgentRegistered { lost, kill })
    }

    /// One heartbeat of agent `id`: its ends are taken (charged to the time
    /// it reports, within the container's life), what it no longer runs is
    /// lost, what it runs that it should not is ordered killed, and it is
    /// ordered to launch what is allocated to it. A heartbeat numbered as
    /// the one before gets the same answer again and changes nothing.
    pub fn agent_heartbeat(
        &mut self,
        id: &str,
        report: AgentReport<'_>,
        now: u64,
    ) -> Result<HeartbeatOutcome, ClusterError> {
        let taken = self.take_agent_report(id, report, now)?;
        Ok(self.answer_agent(id, taken))
    }

    /// The first half of [`Cluster::agent_heartbeat`]: the report taken,
    /// the answer not yet built, so that the resource manager can place
    /// containers on what the report freed before answering.
    pub fn take_agent_report(
        &mut self,
        id: &str,
        report: AgentReport<'_>,
        now: u64,
    ) -> Result<TakenReport, ClusterError> {
        let node = self
            .nodes
            .get_mut(id)
            .ok_or_else(|| ClusterError::UnknownNode(id.into()))?;
        node.last_heartbeat_ms = now;
        node.unheard_since_restore = false;
        if let Some(number) = report.response_id
            && number != node.response_id
        {
            let orders = match &node.last_answer {
                Some(last) if number.checked_add(1) == Some(node.response_id) => last.clone(),
                _ => Arc::new(NodeOrders::resync(node.response_id, self.epoch)),
            };
            return Ok(TakenReport::Repeat(orders));
        }
        let mut ended = Vec::new();
        let mut launched = Vec::new();
        let mut acknowledged = Vec::new();
        let mut accepted = 0;
        for end in report.ended {
            acknowledged.push(end.container_id.clone());
            // One look-up of the node per end (its id is a key among
            // thousands of nodes), not one to read and one to change it.
            let node = self.nodes.get_mut(id).expect("looked up above");
            let on_node = node.containers.contains(&end.container_id);
            node.to_kill.remove(&end.container_id);
            if !on_node {
                continue;
            }
            let container = self
                .containers
                .get_mut(&end.container_id)
                .expect("a node's containers are the cluster's");
            let start = container.start_time_ms;
            let at = end.finished_ms.clamp(start, now.max(start));
            if container.launched_ms.is_none() {
                container.launched_ms = launched_at(container, end, at);
            }
            let cause = EndCause::from_exit(end.exit_status, &end.diagnostics);
            if let Some(container) = self.end_container(&end.container_id, at, cause) {
                accepted += 1;
                ended.push((container, at));
            }
        }
        for finished in report.finished {
            if !self.nodes[id].containers.contains(finished) {
                continue;
            }
            // The simple protocol says only that it ran, not since when.
            if let Some(container) = self.containers.get_mut(finished) {
                container.launched_ms.get_or_insert(container.start_time_ms);
            }
            if let Some(container) = self.end_container(finished, now, EndCause::Succeeded) {
                accepted += 1;
                ended.push((container, now));
            }
        }
        ended.extend(self.fail_apps(now).into_iter().map(|c| (c, now)));
        if let Some(running) = report.running {
            let running: BTreeSet<&String> = running.iter().collect();
            let node = &self.nodes[id];
            let gone: Vec<String> = node
                .launched
                .iter()
                .filter(|c| !running.contains(c))
                .cloned()
                .collect();
            for container in &gone {
                tracing::warn!(container = %container, node = %id, "container lost: its agent no longer runs it and reported no end");
                if let Some(container) = self.end_container(container, now, EndCause::Lost) {
                    ended.push((container, now));
                }
            }
            let node = self.nodes.get_mut(id).expect("looked up above");
            // `launched` becomes what the node holds that the agent runs,
            // changed in place: only ids reported running for the first
            // time are copied (rebuilding it copied every id on the node
            // at every heartbeat).
            node.launched
                .retain(|c| running.contains(c) && node.containers.contains(c));
            for container in &node.containers {
                if !running.contains(container) {
                    continue;
                }
                if !node.launched.contains(container) {
                    node.launched.insert(container.clone());
                }
                // Charged from the first report that it runs.
                if let Some(first) = self.containers.get_mut(container)
                    && first.launched_ms.is_none()
                {
                    first.launched_ms = Some(now);
                    launched.push(container.clone());
                    super::durable::container_changed(
                        &mut self.changes,
                        container,
                        &first.app,
                        first.seq,
                    );
                }
            }
            // Kills of containers it runs or holds queued go on until they
            // are gone (a queued one would otherwise start later).
            let queued: BTreeSet<&String> = report.queued.iter().collect();
            node.to_kill
                .retain(|c, _| running.contains(c) || queued.contains(c));
            // What it holds queued (placed here, not running): its orders
            // rest until it starts them or stops saying so.
            node.queued.clear();
            for container in report.queued {
                if node.containers.contains(container) && !node.launched.contains(container) {
                    node.queued.insert(container.clone());
                }
            }
            for container in running {
                if !node.containers.contains(container) {
                    node.to_kill
                        .entry(container.clone())
                        .or_insert(exit_status::KILLED_BY_RESOURCEMANAGER);
                }
            }
        }
        Ok(TakenReport::New {
            ended,
            launched,
            acknowledged,
            accepted,
            says_running: report.running.is_some(),
            numbered: report.response_id.is_some(),
        })
    }

    /// The second half of [`Cluster::agent_heartbeat`]: the answer to a
    /// taken report, ordering the node to kill what it should not run and
    /// to launch what is allocated to it. An unknown node (gone since the
    /// report was taken) gets nothing to do.
    pub fn answer_agent(&mut self, id: &str, taken: TakenReport) -> HeartbeatOutcome {
        let (ended, acknowledged, accepted, says_running, numbered) = match taken {
            TakenReport::Repeat(orders) => {
                return HeartbeatOutcome {
                    ended: Vec::new(),
                    orders,
                };
            }
            TakenReport::New {
                ended,
                acknowledged,
                accepted,
                says_running,
                numbered,
                ..
            } => (ended, acknowledged, accepted, says_running, numbered),
        };
        let launch = match self.nodes.get(id) {
            Some(node) => {
                // Within what the agent reads of an answer; the rest come
                // in the next answers (orders repeat until running).
                let mut room = crate::limits::MAX_ANSWER_LAUNCH_BYTES;
                let mut orders: Vec<LaunchOrder> = Vec::new();
                for order in node
                    .containers
                    .iter()
                    .filter(|c| !node.launched.contains(*c) && !node.queued.contains(*c))
                    .filter_map(|c| self.launch_order(c))
                {
                    let bytes = order.launch_bytes().saturating_mul(6).saturating_add(512);
                    if !orders.is_empty() && bytes > room {
                        break;
                    }
                    room = room.saturating_sub(bytes);
                    orders.push(order);
                }
                orders
            }
            None => Vec::new(),
        };
        let Some(node) = self.nodes.get_mut(id) else {
            return HeartbeatOutcome {
                ended,
                orders: Arc::new(NodeOrders {
                    acknowledged,
                    finished_accepted: accepted,
                    ..NodeOrders::resync(0, self.epoch)
                }),
            };
        };
        let kill = node.to_kill.iter().map(kill_order).collect();
        // A client that does not say what it runs is told once.
        if !says_running {
            node.to_kill.clear();
        }
        node.response_id = node.response_id.saturating_add(1);
        let orders = Arc::new(NodeOrders {
            response_id: node.response_id,
            action: NodeAction::Normal,
            launch,
            kill,
            acknowledged,
            finished_accepted: accepted,
            epoch: self.epoch,
        });
        if numbered {
            node.last_answer = Some(orders.clone());
        }
        HeartbeatOutcome { ended, orders }
    }

    /// The order that launches container `id`: its ask's command (or, for
    /// an ask that gives only a duration, `sleep` for that long).
    fn launch_order(&self, id: &str) -> Option<LaunchOrder> {
        let container = self.containers.get(id)?;
        let app = self.app(&container.app)?;
        let ask = app.asks.get(container.ask)?;
        let command = match &ask.launch.command {
            Some(command) => command.clone(),
            None => ContainerCommand::Argv(vec![
                "sleep".into(),
                format!(
                    "{}.{:03}",
                    container.duration_ms / 1000,
                    container.duration_ms % 1000
                ),
            ]),
        };
        Some(LaunchOrder {
            container_id: container.id.clone(),
            app_id: app.id.clone(),
            user: app.user.clone(),
            command,
            env: ask.launch.env.clone(),
            memory_mb: container.resources.memory_mb,
            vcores: container.resources.vcores,
            gpus: container.resources.gpus,
            yarn: ask
                .launch
                .yarn
                .clone()
                .map(|yarn| crate::protocol::node::YarnLaunch {
                    submit_time_ms: app.submit_time_ms,
                    amrm_password_hex: match (&app.master, &self.token_keys) {
                        (Some(_), Some(keys)) if yarn.application_master => hex::encode(
                            keys.amrm_password(&super::attempt_id(&app.id, container.attempt)),
                        ),
                        _ => String::new(),
                    },
                    ..yarn
                }),
            // Its master starts it (ContainerManagementProtocol).
            held_for: app
                .master
                .as_ref()
                .filter(|_| container.ask != 0)
                .map(|master| super::attempt_id(&app.id, master.attempt)),
            opportunistic: ask.execution_type == super::ExecutionType::Opportunistic,
        })
    }

    /// Whether `capacity` is within bounds for node `id`.
    pub(super) fn check_capacity(&self, id: &str, capacity: Resources) -> Result<(), ClusterError> {
        use crate::limits::{MAX_GPUS, MAX_MEMORY_MB, MAX_VCORES, within};
        crate::limits::name("node_id", id)?;
        if capacity.memory_mb == 0 || capacity.vcores == 0 {
            return Err(ClusterError::EmptyNode(capacity));
        }
        within("memory_mb", capacity.memory_mb, 1, MAX_MEMORY_MB)?;
        within("vcores", capacity.vcores, 1, MAX_VCORES)?;
        within("gpus", capacity.gpus, 0, MAX_GPUS)?;
        Ok(())
    }
}

/// When a container the agent reports ended had started, if it had not
/// been seen running: the agent's word for its start (within its life on
/// the server's clock, allocation to `ended`), else its allocation if its
/// own process ended it (a client that does not say when), else never (it
/// could not be launched, or was lost or killed before it ran).
fn launched_at(container: &Container, end: &ContainerEnd, ended: u64) -> Option<u64> {
    match end.started_ms {
        Some(started) => Some(started.clamp(container.start_time_ms, ended)),
        None if end.exit_status >= 0 || end.exit_status == exit_status::KILLED_EXCEEDED_PMEM => {
            Some(container.start_time_ms)
        }
        None => None,
    }
}

fn kill_order((container_id, exit_status): (&String, &i32)) -> KillOrder {
    KillOrder {
        container_id: container_id.clone(),
        exit_status: *exit_status,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::cluster::{AppState, AskSpec, NodeState, Placement, SubmitApp};
    use crate::queues::{QueueProperties, QueueTree};

    /// A cluster with agent node "a1" and one app of `count` containers
    /// running `true` (`max_attempts` each), all allocated; returns the
    /// container ids.
    fn running(count: u32, max_attempts: u32) -> (Cluster, Vec<String>) {
        running_with(count, max_attempts, BTreeMap::new())
    }

    /// `count` containers of one app, each with `env`, allocated on "a1".
    fn running_with(
        count: u32,
        max_attempts: u32,
        env: BTreeMap<String, String>,
    ) -> (Cluster, Vec<String>) {
        let tree = QueueTree::from_properties(&QueueProperties::defaults()).unwrap();
        let mut cluster = Cluster::new(1, tree);
        cluster
            .register_agent(
                "a1",
                Resources::new(8192, 8, 0),
                "ops",
                AgentInfo::default(),
                Some(&[]),
                0,
            )
            .unwrap();
        let mut ask = AskSpec::sized(count, 1024, 1, 0, 1000);
        ask.command = Some(ContainerCommand::Argv(vec!["true".into()]));
        ask.max_attempts = max_attempts;
        ask.env = env;
        let request = SubmitApp {
            name: "t".into(),
            ..SubmitApp::new("alice", "default", "p", vec![ask])
        };
        cluster.submit(request, "test", 0).unwrap();
        let placement = Placement {
            app: 0,
            ask: 0,
            node: 0,
            count,
        };
        let ids = cluster
            .allocate(&[placement], 10)
            .unwrap()
            .into_iter()
            .map(|a| a.container.id)
            .collect();
        (cluster, ids)
    }

    #[test]
    fn an_answer_carries_launch_orders_up_to_what_an_agent_reads() {
        // Three orders of 900 KB each (5.4 MB escaped at worst): one an
        // answer, the next when the first runs.
        let env = (0..15)
            .map(|i| (format!("BIG{i}"), "x".repeat(60_000)))
            .collect();
        let (mut cluster, ids) = running_with(3, 1, env);
        let first = beat(&mut cluster, 0, &[], &[], 20);
        assert_eq!(first.orders.launch.len(), 1);
        let second = beat(&mut cluster, 1, &ids[..1], &[], 30);
        assert_eq!(second.orders.launch.len(), 1);
        assert_ne!(
            second.orders.launch[0].container_id,
            first.orders.launch[0].container_id
        );
    }

    fn beat(
        cluster: &mut Cluster,
        response_id: u64,
        running: &[String],
        ended: &[ContainerEnd],
        now: u64,
    ) -> HeartbeatOutcome {
        let report = AgentReport {
            response_id: Some(response_id),
            running: Some(running),
            ended,
            finished: &[],
            queued: &[],
        };
        cluster.agent_heartbeat("a1", report, now).unwrap()
    }

    fn end(id: &str, exit_status: i32, at: u64) -> ContainerEnd {
        ContainerEnd {
            container_id: id.into(),
            exit_status,
            diagnostics: format!("exited with {exit_status}"),
            finished_ms: at,
            started_ms: None,
        }
    }

    #[test]
    fn launch_orders_repeat_until_running_and_a_duplicate_heartbeat_changes_nothing() {
        let (mut cluster, ids) = running(2, 1);
        let first = beat(&mut cluster, 0, &[], &[], 20);
        assert_eq!(first.orders.launch.len(), 2);
        assert_eq!(first.orders.response_id, 1);
        // The answer was lost: the agent sends heartbeat 0 again, with an end.
        let again = beat(&mut cluster, 0, &[], &[end(&ids[0], 0, 25)], 30);
        assert_eq!(again.orders, first.orders, "the same answer again");
        assert!(again.ended.is_empty(), "and nothing taken from it");
        // Now in order: one ran and ended, one runs.
        let next = beat(&mut cluster, 1, &ids[1..], &[end(&ids[0], 0, 25)], 40);
        assert_eq!(next.ended.len(), 1);
        assert_eq!(next.ended[0].1, 25, "charged to the end the agent reports");
        assert_eq!(next.orders.acknowledged, vec![ids[0].clone()]);
        assert!(next.orders.launch.is_empty());
        // An end reported twice is acknowledged again but taken once.
        let twice = beat(&mut cluster, 2, &ids[1..], &[end(&ids[0], 0, 25)], 50);
        assert!(twice.ended.is_empty());
        assert_eq!(twice.orders.acknowledged, vec![ids[0].clone()]);
        // A number out of step asks for a new registration.
        let off = beat(&mut cluster, 7, &ids[1..], &[], 60);
        assert_eq!(off.orders.action, NodeAction::Resync);
    }

    #[test]
    fn what_an_agent_stops_reporting_is_lost_and_what_it_should_not_run_is_killed() {
        let (mut cluster, ids) = running(2, 1);
        beat(&mut cluster, 0, &ids, &[], 20);
        let stray = "container_9_9999_01_000001".to_string();
        let outcome = beat(&mut cluster, 1, &[ids[1].clone(), stray.clone()], &[], 30);
        assert_eq!(outcome.ended.len(), 1, "the unreported one is lost");
        assert_eq!(cluster.apps()[0].lost_containers, 1);
        assert_eq!(
            cluster.apps()[0].pending_containers(),
            1,
            "and asked for again"
        );
        assert_eq!(outcome.orders.kill.len(), 1);
        assert_eq!(outcome.orders.kill[0].container_id, stray);
        // Once no longer reported, no more kill orders.
        let outcome = beat(&mut cluster, 2, &ids[1..], &[], 40);
        assert!(outcome.orders.kill.is_empty());
    }

    #[test]
    fn a_killed_app_orders_its_containers_killed_until_they_are_gone() {
        let (mut cluster, ids) = running(2, 1);
        beat(&mut cluster, 0, &ids, &[], 20);
        let ended = cluster.kill_app(0, "killed by alice", 30);
        assert_eq!(ended.len(), 2);
        let outcome = beat(&mut cluster, 1, &ids, &[], 40);
        assert_eq!(outcome.orders.kill.len(), 2);
        assert!(
            outcome
                .orders
                .kill
                .iter()
                .all(|k| k.exit_status == exit_status::KILLED_BY_APPMASTER)
        );
        let killed: Vec<ContainerEnd> = ids.iter().map(|id| end(id, -105, 41)).collect();
        let outcome = beat(&mut cluster, 2, &[], &killed, 50);
        assert!(outcome.orders.kill.is_empty());
        assert!(outcome.ended.is_empty(), "charged when killed, not again");
        assert_eq!(outcome.orders.acknowledged.len(), 2);
    }

    #[test]
    fn a_failure_is_retried_up_to_max_attempts_then_fails_the_app() {
        let (mut cluster, ids) = running(2, 2);
        beat(&mut cluster, 0, &ids, &[], 20);
        beat(&mut cluster, 1, &ids[1..], &[end(&ids[0], 3, 25)], 30);
        let app = &cluster.apps()[0];
        assert_eq!((app.failed_containers, app.pending_containers()), (1, 1));
        assert_eq!(app.asks[0].retries, vec![2]);
        let placement = Placement {
            app: 0,
            ask: 0,
            node: 0,
            count: 1,
        };
        let retry = cluster.allocate(&[placement], 35).unwrap()[0]
            .container
            .clone();
        assert_eq!(retry.attempt, 2);
        let running = vec![ids[1].clone(), retry.id.clone()];
        let outcome = beat(&mut cluster, 2, &running, &[end(&retry.id, 4, 38)], 40);
        let app = &cluster.apps()[0];
        assert_eq!(app.state, AppState::Failed);
        assert_eq!(app.exit_status, Some(4));
        assert!(
            app.diagnostics.contains("attempt 2 of 2"),
            "{}",
            app.diagnostics
        );
        // Its other container is killed with it.
        assert_eq!(outcome.ended.len(), 2);
        let outcome = beat(&mut cluster, 3, &ids[1..], &[], 50);
        assert_eq!(outcome.orders.kill.len(), 1);
    }

    #[test]
    fn a_restarted_agent_keeps_what_it_runs() {
        let (mut cluster, ids) = running(2, 1);
        beat(&mut cluster, 0, &ids, &[], 20);
        let AgentRegistered { lost, kill, .. } = cluster
            .register_agent(
                "a1",
                Resources::new(8192, 8, 0),
                "ops",
                AgentInfo::default(),
                Some(&ids[..1]),
                30,
            )
            .unwrap();
        assert_eq!(lost.len(), 1, "the one it no longer runs");
        assert!(kill.is_empty());
        assert_eq!(cluster.apps()[0].running_containers, 1);
        // Without a list, a registration loses everything (not work-preserving).
        let AgentRegistered { lost, .. } = cluster
            .register_agent(
                "a1",
                Resources::new(8192, 8, 0),
                "ops",
                AgentInfo::default(),
                None,
                40,
            )
            .unwrap();
        assert_eq!(lost.len(), 1);
    }

    /// A cluster of agent node "a1" (2 GB, 2 vcores), queues of 3, and an
    /// opportunistic app of `count` containers of 1 vcore.
    fn opportunistic(count: u32) -> Cluster {
        let tree = QueueTree::from_properties(&QueueProperties::defaults()).unwrap();
        let mut cluster = Cluster::new(1, tree);
        cluster.set_opportunistic_queue(3);
        cluster
            .register_agent(
                "a1",
                Resources::new(2048, 2, 0),
                "ops",
                AgentInfo::default(),
                Some(&[]),
                0,
            )
            .unwrap();
        let mut ask = AskSpec::sized(count, 512, 1, 0, 1000);
        ask.command = Some(ContainerCommand::Argv(vec!["true".into()]));
        ask.execution_type = crate::cluster::ExecutionType::Opportunistic;
        cluster
            .submit(
                SubmitApp::new("alice", "default", "p", vec![ask]),
                "test",
                0,
            )
            .unwrap();
        cluster
    }

    fn place(count: u32) -> [Placement; 1] {
        [Placement {
            app: 0,
            ask: 0,
            node: 0,
            count,
        }]
    }

    #[test]
    fn an_unhealthy_node_is_offered_to_no_new_container_and_keeps_what_it_runs() {
        use crate::protocol::node::NodeHealth;
        let mut cluster = opportunistic(10);
        let started = cluster.allocate(&place(1), 10).unwrap();
        let sick = NodeHealth {
            healthy: false,
            report: "local-dirs /w is bad: 95.0% used".into(),
        };
        assert!(!cluster.set_node_health("a1", Some(&sick)));
        let node = cluster.node("a1").unwrap();
        assert_eq!(node.state(), NodeState::Unhealthy);
        assert_eq!(node.free(), Resources::ZERO);
        assert_eq!(cluster.queue_room_of(node), Resources::ZERO);
        let refused = cluster.allocate(&place(1), 20).unwrap_err();
        assert!(refused.to_string().contains("does not fit"), "{refused}");
        assert!(cluster.allocate_queued(&place(1), 20).is_err());
        // What it runs goes on, and a heartbeat without health changes
        // nothing of it.
        let running = vec![started[0].container.id.clone()];
        let report = AgentReport {
            response_id: Some(0),
            running: Some(&running),
            ended: &[],
            finished: &[],
            queued: &[],
        };
        cluster.agent_heartbeat("a1", report, 30).unwrap();
        let node = cluster.node("a1").unwrap();
        assert_eq!(node.containers.len(), 1);
        assert_eq!(node.unhealthy.as_deref(), Some(sick.report.as_str()));
        // Healthy again: said so once, and its room is offered.
        let well = NodeHealth {
            healthy: true,
            report: String::new(),
        };
        assert!(cluster.set_node_health("a1", Some(&well)));
        assert!(!cluster.set_node_health("a1", Some(&well)));
        assert_eq!(cluster.node("a1").unwrap().state(), NodeState::Running);
        assert_eq!(
            cluster.node("a1").unwrap().free(),
            Resources::new(1536, 1, 0)
        );
        cluster.allocate(&place(1), 40).unwrap();
    }

    #[test]
    fn a_decommissioned_node_takes_nothing_new_and_kills_what_runs_at_its_deadline() {
        let mut cluster = opportunistic(10);
        let started = cluster.allocate(&place(1), 10).unwrap();
        let id = started[0].container.id.clone();
        // One more waits in the agent's queue.
        let queued = cluster.allocate_queued(&place(1), 10).unwrap();
        let queued_id = queued[0].container.id.clone();
        let report = AgentReport {
            response_id: Some(0),
            running: Some(std::slice::from_ref(&id)),
            ended: &[],
            finished: &[],
            queued: std::slice::from_ref(&queued_id),
        };
        cluster.agent_heartbeat("a1", report, 15).unwrap();
        let taken_back = cluster.decommission_node("a1", 1_000, 20).unwrap();
        assert_eq!(taken_back.len(), 1, "what waited is taken back at once");
        assert_eq!(taken_back[0].id, queued_id);
        let node = cluster.node("a1").unwrap();
        assert_eq!(node.state(), NodeState::Decommissioning);
        // It counts for what runs on it, no more.
        assert_eq!(
            (node.free(), node.usable_capacity()),
            (Resources::ZERO, Resources::new(512, 1, 0))
        );
        assert_eq!(cluster.queue_room_of(node), Resources::ZERO);
        assert!(cluster.allocate(&place(1), 30).is_err());
        assert!(cluster.allocate_queued(&place(1), 30).is_err());
        // Its agent registers again (a restart): still decommissioning.
        cluster
            .register_agent(
                "a1",
                Resources::new(2048, 2, 0),
                "ops",
                AgentInfo::default(),
                Some(std::slice::from_ref(&id)),
                40,
            )
            .unwrap();
        assert_eq!(
            cluster.node("a1").unwrap().state(),
            NodeState::Decommissioning
        );
        // Before the deadline nothing ends; at it, what runs is killed
        // (ordered killed, ABORTED) and asked for again.
        assert!(cluster.end_decommissions(999).is_empty());
        let killed = cluster.end_decommissions(1_000);
        assert_eq!(killed.len(), 1);
        assert_eq!(killed[0].exit_status, Some(exit_status::ABORTED));
        let node = cluster.node("a1").unwrap();
        assert_eq!(node.state(), NodeState::Decommissioned);
        assert_eq!(node.to_kill.get(&id), Some(&exit_status::ABORTED));
        assert_eq!(cluster.apps()[0].pending_containers(), 10);
        assert_eq!(
            cluster.node("a1").unwrap().usable_capacity(),
            Resources::ZERO
        );
        // Recommissioned: it takes containers again.
        assert!(cluster.recommission_node("a1").unwrap());
        assert!(!cluster.recommission_node("a1").unwrap());
        assert_eq!(cluster.node("a1").unwrap().state(), NodeState::Running);
        cluster.allocate(&place(1), 1_100).unwrap();
        assert!(matches!(
            cluster.decommission_node("nope", 0, 0),
            Err(ClusterError::UnknownNode(_))
        ));
    }

    #[test]
    fn opportunistic_containers_wait_within_the_queue_and_twice_the_capacity() {
        let mut cluster = opportunistic(10);
        // Free room first: two start at once (on their way, they count as
        // waiting until the agent says they run).
        let started = cluster.allocate(&place(2), 10).unwrap();
        assert!(
            cluster.allocate(&place(1), 10).is_err(),
            "no free room left"
        );
        // One more may queue (3 waiting at most); a fourth may not.
        let queued = cluster.allocate_queued(&place(1), 10).unwrap();
        let refused = cluster.allocate_queued(&place(1), 10).unwrap_err();
        assert!(refused.to_string().contains("queue"), "{refused}");
        // The agent runs two and holds the third: its order rests.
        let running: Vec<String> = started.iter().map(|a| a.container.id.clone()).collect();
        let queued_id = queued[0].container.id.clone();
        let report = AgentReport {
            response_id: Some(0),
            running: Some(&running),
            ended: &[],
            finished: &[],
            queued: std::slice::from_ref(&queued_id),
        };
        let answer = cluster.agent_heartbeat("a1", report, 20).unwrap();
        assert!(
            answer.orders.launch.is_empty(),
            "{:?}",
            answer.orders.launch
        );
        // Allocated: 3 vcores of 2 (1.5 GB of 2): what may still wait is
        // 2 - 1 = 1 vcore (and 2 GB).
        let node = cluster.node("a1").unwrap();
        assert_eq!(cluster.queue_room_of(node), Resources::new(2048, 1, 0));
        assert!(
            cluster.allocate_queued(&place(2), 20).is_err(),
            "beyond twice the capacity"
        );
        cluster.allocate_queued(&place(1), 20).unwrap();
        // Twice its capacity in vcores is placed: no room for one more.
        let node = cluster.node("a1").unwrap();
        assert_eq!(cluster.queue_room_of(node).vcores, 0);
        // Guaranteed asks never queue.
        cluster.apps[0].asks[0].execution_type = crate::cluster::ExecutionType::Guaranteed;
        assert!(cluster.allocate_queued(&place(1), 20).is_err());
        cluster.apps[0].asks[0].execution_type = crate::cluster::ExecutionType::Opportunistic;
        // The agent registers again (restarted): what waited is lost and
        // asked for again; what runs is kept.
        let pending = cluster.apps()[0].pending_containers();
        let AgentRegistered { lost, .. } = cluster
            .register_agent(
                "a1",
                Resources::new(2048, 2, 0),
                "ops",
                AgentInfo::default(),
                Some(&running),
                30,
            )
            .unwrap();
        assert_eq!(lost.len(), 2);
        assert!(
            lost.iter().all(|c| c.launched_ms.is_none()),
            "never started, charged nothing"
        );
        assert_eq!(cluster.apps()[0].pending_containers(), pending + 2);
        assert_eq!(cluster.apps()[0].running_containers, 2);
        assert!(cluster.node("a1").unwrap().queued.is_empty());
    }

    /// Two containers placed on free room and one queued: their ids.
    fn two_running_one_waiting(cluster: &mut Cluster) -> (Vec<String>, String) {
        let running = cluster
            .allocate(&place(2), 10)
            .unwrap()
            .into_iter()
            .map(|a| a.container.id)
            .collect();
        let waiting = cluster.allocate_queued(&place(1), 10).unwrap()[0]
            .container
            .id
            .clone();
        (running, waiting)
    }

    #[test]
    fn a_waiting_container_ended_by_the_server_is_ordered_killed_while_it_waits() {
        let mut cluster = opportunistic(3);
        let (running, waiting) = two_running_one_waiting(&mut cluster);
        let queued = [waiting.clone()];
        let beat = |cluster: &mut Cluster, number: u64, queued: &[String]| {
            let report = AgentReport {
                response_id: Some(number),
                running: Some(&running),
                ended: &[],
                finished: &[],
                queued,
            };
            cluster.agent_heartbeat("a1", report, 20).unwrap()
        };
        beat(&mut cluster, 0, &queued);
        cluster.kill_app(0, "killed by alice", 30);
        // Reported queued still: the kill goes out until it is gone.
        for number in 1..3 {
            let answer = beat(&mut cluster, number, &queued);
            assert!(
                answer.orders.kill.iter().any(|k| k.container_id == waiting),
                "{:?}",
                answer.orders.kill
            );
        }
        let answer = beat(&mut cluster, 3, &[]);
        assert!(!answer.orders.kill.iter().any(|k| k.container_id == waiting));
    }

    #[test]
    fn a_queueing_rounds_placements_are_cut_to_the_places_left_in_queues() {
        let mut cluster = opportunistic(10);
        cluster.allocate(&place(2), 10).unwrap();
        // Two wait (on their way), one place is left of three.
        let cut = cluster.within_queue_places(vec![place(3)[0], place(2)[0]]);
        assert_eq!(
            cut,
            vec![Placement {
                count: 1,
                ..place(1)[0]
            }]
        );
        cluster.allocate_queued(&cut, 10).unwrap();
        assert!(cluster.within_queue_places(place(1).to_vec()).is_empty());
    }

    #[test]
    fn what_waits_is_taken_back_first_for_starved_queues_and_charged_nothing() {
        let mut cluster = opportunistic(4);
        let (running, waiting) = two_running_one_waiting(&mut cluster);
        // Placed but not yet said to wait: not taken back.
        assert!(cluster.dequeue_waiting(15).is_empty());
        let queued = [waiting.clone()];
        let report = AgentReport {
            response_id: Some(0),
            running: Some(&running),
            ended: &[],
            finished: &[],
            queued: &queued,
        };
        cluster.agent_heartbeat("a1", report, 20).unwrap();
        let pending = cluster.apps()[0].pending_containers();
        let taken = cluster.dequeue_waiting(30);
        assert_eq!(taken.len(), 1);
        assert_eq!(taken[0].id, waiting);
        assert!(taken[0].launched_ms.is_none(), "it never ran");
        assert_eq!(cluster.apps()[0].pending_containers(), pending + 1);
        assert_eq!(cluster.apps()[0].preempted_containers, 1);
        assert_eq!(
            cluster.node("a1").unwrap().allocated,
            Resources::new(1024, 2, 0)
        );
        let report = AgentReport {
            response_id: Some(1),
            running: Some(&running),
            ended: &[],
            finished: &[],
            queued: &queued,
        };
        let answer = cluster.agent_heartbeat("a1", report, 40).unwrap();
        assert!(answer.orders.kill.iter().any(|k| k.container_id == waiting));
    }

    #[test]
    fn what_waits_in_a_queue_with_preemption_disabled_is_not_taken_back() {
        let mut cluster = opportunistic(4);
        let (running, waiting) = two_running_one_waiting(&mut cluster);
        let mut properties = QueueProperties::defaults();
        properties.set(
            "yarn.scheduler.capacity.root.default.disable_preemption",
            "true",
        );
        cluster
            .replace_queues(QueueTree::from_properties(&properties).unwrap(), 15)
            .unwrap();
        let queued = [waiting];
        let report = AgentReport {
            response_id: Some(0),
            running: Some(&running),
            ended: &[],
            finished: &[],
            queued: &queued,
        };
        cluster.agent_heartbeat("a1", report, 20).unwrap();
        assert_eq!(cluster.waiting_containers().count(), 1);
        assert!(cluster.dequeue_waiting(30).is_empty());
        assert_eq!(cluster.apps()[0].preempted_containers, 0);
    }

    #[test]
    fn a_decommissioned_node_whose_agent_stops_stays_decommissioned() {
        let mut cluster = opportunistic(1);
        cluster.decommission_node("a1", 0, 10).unwrap();
        assert_eq!(
            cluster.node("a1").unwrap().state(),
            NodeState::Decommissioned
        );
        assert!(cluster.expire_nodes(1_000, 1_000).is_empty());
        assert_eq!(
            cluster.node("a1").unwrap().state(),
            NodeState::Decommissioned
        );
        assert!(cluster.lost_node("a1").is_none());
        // Recommissioned, a silent node is lost as any.
        cluster.recommission_node("a1").unwrap();
        cluster.expire_nodes(1_000, 1_000);
        assert!(cluster.node("a1").is_none() && cluster.lost_node("a1").is_some());
    }

    #[test]
    fn a_refresh_decommissions_the_nodes_the_exclude_file_names_and_ends_only_its_own() {
        let mut cluster = opportunistic(1);
        for (id, nm) in [("a2", "host-b:4545"), ("a3", ""), ("a4", "")] {
            let agent = AgentInfo {
                nm_address: nm.into(),
                ..AgentInfo::default()
            };
            cluster
                .register_agent(id, Resources::new(2048, 2, 0), "ops", agent, Some(&[]), 0)
                .unwrap();
        }
        // a4 decommissioned through the API: no refresh ends it.
        cluster.decommission_node("a4", 5_000, 0).unwrap();
        let names = |names: &[&str]| names.iter().map(|n| n.to_string()).collect();
        // a1 by its id, a2 by its NodeId's host; "ghost" names nothing.
        let refresh = cluster.refresh_excluded(&names(&["a1", "host-b", "ghost", "a4"]), 9_000, 10);
        assert_eq!(refresh.decommissioned, ["a1", "a2"]);
        assert!(refresh.recommissioned.is_empty());
        let deadline =
            |cluster: &Cluster, id: &str| cluster.decommission_of(id).map(|d| d.deadline_ms);
        assert_eq!(deadline(&cluster, "a2"), Some(9_000));
        assert_eq!(deadline(&cluster, "a4"), Some(5_000), "the API's stands");
        // Again, with a2 dropped from the file: a2 takes containers again,
        // a1's deadline stands, a4's decommission is the API's.
        let refresh = cluster.refresh_excluded(&names(&["a1"]), 20_000, 20);
        assert!(refresh.decommissioned.is_empty());
        assert_eq!(refresh.recommissioned, ["a2"]);
        assert_eq!(deadline(&cluster, "a1"), Some(9_000));
        assert_eq!(cluster.node("a2").unwrap().state(), NodeState::Running);
        // An empty file: every decommission a refresh made ends.
        let refresh = cluster.refresh_excluded(&BTreeSet::new(), 0, 30);
        assert_eq!(refresh.recommissioned, ["a1"]);
        assert_eq!(
            cluster.node("a4").unwrap().state(),
            NodeState::Decommissioned
        );
        assert!(refresh.unmatched.is_empty());
        // By its web address's host too; a name that matches nothing is
        // said.
        cluster.nodes.get_mut("a3").unwrap().agent.http_address = "http://web-3:8042".into();
        let refresh = cluster.refresh_excluded(&names(&["web-3", "typo"]), 50_000, 40);
        assert_eq!(refresh.decommissioned, ["a3"]);
        assert_eq!(refresh.unmatched, ["typo"]);
        // Restored and not yet heard from, a node's hosts are unknown: the
        // decommission its host asked for stands until they are.
        let refresh = cluster.refresh_excluded(&names(&["host-b"]), 60_000, 50);
        assert_eq!(refresh.decommissioned, ["a2"]);
        let a2 = cluster.nodes.get_mut("a2").unwrap();
        a2.unheard_since_restore = true;
        a2.agent = AgentInfo::default();
        let refresh = cluster.refresh_excluded(&names(&["host-b"]), 70_000, 60);
        assert!(refresh.recommissioned.is_empty(), "{refresh:?}");
        assert_eq!(deadline(&cluster, "a2"), Some(60_000));
    }
}
