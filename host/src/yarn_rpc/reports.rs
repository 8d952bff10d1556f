//! What Weft knows, as YARN's records: app ids and reports, attempt and
//! container reports, node reports, queue infos and the cluster's metrics,
//! read from the cluster model for the RPC protocols to answer with.

use super::error::{RpcError, class};
use super::messages::records::{
    ApplicationAttemptIdProto, ApplicationAttemptReportProto, ApplicationIdProto,
    ApplicationReportProto, ApplicationResourceUsageReportProto, ContainerIdProto,
    ContainerReportProto, ContainerStateProto, FinalApplicationStatusProto, NodeIdProto,
    NodeReportProto, NodeStateProto, NodeUpdateTypeProto, PriorityProto, QueueInfoProto,
    QueueStateProto, ResourceProto, YarnApplicationAttemptStateProto, YarnApplicationStateProto,
    YarnClusterMetricsProto,
};
use crate::cluster::{App, AppState, Cluster, ContainerRecord, Node, NodeState};
use crate::queues::QueueState;
use crate::resources::Resources;

/// A YARN app id's two numbers from Weft's `application_<ts>_<nnnn>`.
pub fn application_id(id: &str) -> ApplicationIdProto {
    let (timestamp, number) = id
        .strip_prefix("application_")
        .and_then(|rest| rest.split_once('_'))
        .unwrap_or_default();
    ApplicationIdProto {
        id: number.parse().ok(),
        cluster_timestamp: timestamp.parse().ok(),
    }
}

/// Weft's id of a YARN app id: `application_<ts>_<nnnn>` (at least four
/// digits, as YARN prints it); refused when a number is missing or
/// negative.
pub fn application_id_text(id: Option<&ApplicationIdProto>) -> Result<String, RpcError> {
    let id = id.ok_or_else(|| RpcError::yarn("the request names no application id"))?;
    match (id.cluster_timestamp, id.id) {
        (Some(timestamp), Some(number)) if timestamp >= 0 && number >= 0 => {
            Ok(format!("application_{timestamp}_{number:04}"))
        }
        _ => Err(RpcError::yarn(format!(
            "application id {{clusterTimestamp: {:?}, id: {:?}}} is not one this server gives",
            id.cluster_timestamp, id.id
        ))),
    }
}

/// The answer for an app the cluster does not keep, as YARN words it.
pub fn app_not_found(id: &str) -> RpcError {
    RpcError::new(
        class::APPLICATION_NOT_FOUND,
        format!("Application with id '{id}' doesn't exist in RM."),
    )
}

/// Attempt `attempt` of app `id`.
pub fn attempt_id(id: &str, attempt: u32) -> ApplicationAttemptIdProto {
    ApplicationAttemptIdProto {
        application_id: Some(application_id(id)),
        attempt_id: Some(i32::try_from(attempt).unwrap_or(i32::MAX)),
    }
}

/// A container id (`container_[e<epoch>_]<ts>_<app>_<attempt>_<n>`) as
/// YARN's record: the epoch in the top 24 bits of its number.
pub fn container_id(id: &str) -> Option<ContainerIdProto> {
    let rest = id.strip_prefix("container_")?;
    let (epoch, rest) = match rest.strip_prefix('e') {
        Some(tail) => {
            let (epoch, tail) = tail.split_once('_')?;
            (epoch.parse::<i64>().ok()?, tail)
        }
        None => (0, rest),
    };
    let mut parts = rest.split('_');
    let timestamp: i64 = parts.next()?.parse().ok()?;
    let app: i32 = parts.next()?.parse().ok()?;
    let attempt: i32 = parts.next()?.parse().ok()?;
    let number: i64 = parts.next()?.parse().ok()?;
    if parts.next().is_some() || !(0..1 << 24).contains(&epoch) || !(0..1 << 40).contains(&number) {
        return None;
    }
    let application = ApplicationIdProto {
        id: Some(app),
        cluster_timestamp: Some(timestamp),
    };
    Some(ContainerIdProto {
        app_id: Some(application.clone()),
        app_attempt_id: Some(ApplicationAttemptIdProto {
            application_id: Some(application),
            attempt_id: Some(attempt),
        }),
        id: Some(epoch << 40 | number),
    })
}

/// YARN's text of a container id record (ContainerId.toString), if it is
/// one Weft could have made.
pub fn container_id_text(id: &ContainerIdProto) -> Option<String> {
    let attempt = id.app_attempt_id.as_ref()?;
    let app = attempt.application_id.as_ref().or(id.app_id.as_ref())?;
    let (timestamp, number) = (app.cluster_timestamp?, app.id?);
    let (attempt, raw) = (attempt.attempt_id?, id.id?);
    if timestamp < 0 || number < 0 || attempt < 0 || raw < 0 {
        return None;
    }
    let (epoch, sequence) = (raw >> 40, raw & ((1 << 40) - 1));
    Some(match epoch {
        0 => format!("container_{timestamp}_{number:04}_{attempt:02}_{sequence:06}"),
        epoch => format!("container_e{epoch}_{timestamp}_{number:04}_{attempt:02}_{sequence:06}"),
    })
}

/// YARN's text of an attempt id record (`appattempt_<ts>_<app>_<attempt>`),
/// and the app's id and the attempt's number.
pub fn attempt_id_text(id: Option<&ApplicationAttemptIdProto>) -> Option<(String, u32)> {
    let id = id?;
    let app = application_id_text(id.application_id.as_ref()).ok()?;
    let attempt = u32::try_from(id.attempt_id?).ok()?;
    Some((app, attempt))
}

/// YARN's resource record.
pub fn resource(r: Resources) -> ResourceProto {
    ResourceProto {
        memory: Some(i64::try_from(r.memory_mb).unwrap_or(i64::MAX)),
        virtual_cores: Some(i32::try_from(r.vcores).unwrap_or(i32::MAX)),
        resource_value_map: Vec::new(),
    }
}

fn state(state: AppState) -> YarnApplicationStateProto {
    match state {
        AppState::Accepted => YarnApplicationStateProto::Accepted,
        AppState::Running => YarnApplicationStateProto::Running,
        AppState::Finished => YarnApplicationStateProto::Finished,
        AppState::Failed => YarnApplicationStateProto::Failed,
        AppState::Killed => YarnApplicationStateProto::Killed,
    }
}

fn final_status(app: &App) -> FinalApplicationStatusProto {
    match app.final_status() {
        "SUCCEEDED" => FinalApplicationStatusProto::AppSucceeded,
        "FAILED" => FinalApplicationStatusProto::AppFailed,
        "KILLED" => FinalApplicationStatusProto::AppKilled,
        _ => FinalApplicationStatusProto::AppUndefined,
    }
}

fn ms(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

/// The state an app's report gives: a master's app is ACCEPTED until its
/// master registers (Spark's client mode waits for RUNNING to find its
/// master).
pub fn yarn_state(app: &App) -> YarnApplicationStateProto {
    let registered = app.master.as_deref().is_some_and(|m| m.registered);
    match state(app.state) {
        YarnApplicationStateProto::Running if app.master.is_some() && !registered => {
            YarnApplicationStateProto::Accepted
        }
        other => other,
    }
}

/// An app's report, as getApplicationReport and getApplications answer.
pub fn app_report(app: &App) -> ApplicationReportProto {
    let master = app.master.as_deref().filter(|m| m.registered);
    let yarn_state = yarn_state(app);
    let progress = app.progress() as f32;
    ApplicationReportProto {
        application_id: Some(application_id(&app.id)),
        user: Some(app.user.clone()),
        queue: Some(app.queue.clone()),
        name: Some(app.name.clone()),
        host: Some(master.map_or("N/A".into(), |m| m.host.clone())),
        rpc_port: Some(master.map_or(-1, |m| m.rpc_port)),
        yarn_application_state: Some(yarn_state as i32),
        tracking_url: Some(master.map_or(String::new(), |m| m.tracking_url.clone())),
        diagnostics: Some(app.diagnostics.clone()),
        start_time: Some(ms(app.start_time_ms.unwrap_or(app.submit_time_ms))),
        finish_time: Some(app.finish_time_ms.map_or(0, ms)),
        final_application_status: Some(final_status(app) as i32),
        app_resource_usage: Some(ApplicationResourceUsageReportProto {
            num_used_containers: Some(i32::try_from(app.running_containers).unwrap_or(i32::MAX)),
            num_reserved_containers: Some(0),
            used_resources: Some(resource(app.used)),
            reserved_resources: Some(resource(Resources::ZERO)),
            needed_resources: Some(resource(app.used)),
            ..Default::default()
        }),
        current_application_attempt_id: Some(attempt_id(
            &app.id,
            app.master.as_ref().map_or(1, |m| m.attempt.max(1)),
        )),
        progress: Some(progress),
        application_type: Some(app.application_type.clone()),
        application_tags: app.tags.clone(),
        priority: Some(PriorityProto {
            priority: Some(app.priority),
        }),
        submit_time: Some(ms(app.submit_time_ms)),
        launch_time: app.start_time_ms.map(ms),
        ..Default::default()
    }
}

/// A node as YARN's NodeId: the address its agent serves
/// ContainerManagementProtocol on, else its id as `host:port`, else its id
/// with port 0.
pub fn node_id(node: &Node) -> NodeIdProto {
    let named = if node.agent.nm_address.is_empty() {
        &node.id
    } else {
        &node.agent.nm_address
    };
    let (host, port) = match named.rsplit_once(':') {
        Some((host, port)) if port.parse::<u16>().is_ok() => (host, port.parse().unwrap_or(0)),
        _ => (named.as_str(), 0),
    };
    NodeIdProto {
        host: Some(host.to_string()),
        port: Some(port),
    }
}

/// The report of an app's current attempt (see `App::current_attempt`).
pub fn attempt_report(app: &App) -> ApplicationAttemptReportProto {
    let attempt = app.current_attempt();
    let state = match attempt.state {
        "SCHEDULED" => YarnApplicationAttemptStateProto::AppAttemptScheduled,
        "LAUNCHED" => YarnApplicationAttemptStateProto::AppAttemptLaunched,
        "RUNNING" => YarnApplicationAttemptStateProto::AppAttemptRunning,
        "FINISHED" => YarnApplicationAttemptStateProto::AppAttemptFinished,
        "FAILED" => YarnApplicationAttemptStateProto::AppAttemptFailed,
        _ => YarnApplicationAttemptStateProto::AppAttemptKilled,
    };
    ApplicationAttemptReportProto {
        application_attempt_id: Some(attempt_id(&app.id, attempt.number)),
        host: Some(attempt.host.to_string()),
        rpc_port: Some(attempt.rpc_port),
        tracking_url: Some(attempt.tracking_url.to_string()),
        diagnostics: Some(app.diagnostics.clone()),
        yarn_application_attempt_state: Some(state as i32),
        am_container_id: attempt.am_container.and_then(|c| container_id(&c.id)),
        original_tracking_url: Some(attempt.tracking_url.to_string()),
        start_time: Some(ms(app.start_time_ms.unwrap_or(app.submit_time_ms))),
        finish_time: Some(app.finish_time_ms.map_or(0, ms)),
    }
}

/// A container's report, from its record (its node's NodeId and web
/// address while the node is registered).
pub fn container_report(cluster: &Cluster, record: &ContainerRecord) -> ContainerReportProto {
    let node = cluster.node(&record.node);
    ContainerReportProto {
        container_id: container_id(&record.id),
        node_id: node.map(node_id),
        creation_time: Some(ms(record.start_time_ms)),
        finish_time: Some(record.finish_time_ms.map_or(0, ms)),
        diagnostics_info: Some(record.diagnostics.clone()),
        // YARN's INVALID while it runs.
        container_exit_status: Some(record.exit_status.unwrap_or(-1000)),
        container_state: Some(if record.finish_time_ms.is_some() {
            ContainerStateProto::CComplete as i32
        } else {
            ContainerStateProto::CRunning as i32
        }),
        node_http_address: node.map(Node::http_host_port),
        ..ContainerReportProto::default()
    }
}

/// A node's report in `state`: a registered node's own (RUNNING;
/// UNHEALTHY with what its health checks found; DECOMMISSIONING or
/// DECOMMISSIONED), or a node lost lately as it was (LOST, nothing on it).
pub fn node_report(node: &Node, state: NodeState) -> NodeReportProto {
    NodeReportProto {
        node_id: Some(node_id(node)),
        http_address: Some(node.http_host_port()),
        rack_name: Some(node.rack().to_string()),
        used: Some(resource(node.allocated)),
        capability: Some(resource(node.capacity)),
        num_containers: Some(i32::try_from(node.containers.len()).unwrap_or(i32::MAX)),
        node_state: Some(node_state(state) as i32),
        health_report: Some(node.unhealthy.clone().unwrap_or_default()),
        last_health_report_time: Some(ms(node.last_heartbeat_ms)),
        node_labels: if node.partition.is_empty() {
            Vec::new()
        } else {
            vec![node.partition.clone()]
        },
        ..Default::default()
    }
}

/// YARN's `NodeStateProto` for a node state.
pub fn node_state(state: NodeState) -> NodeStateProto {
    match state {
        NodeState::Running => NodeStateProto::NsRunning,
        NodeState::Unhealthy => NodeStateProto::NsUnhealthy,
        NodeState::Decommissioning => NodeStateProto::NsDecommissioning,
        NodeState::Decommissioned => NodeStateProto::NsDecommissioned,
        NodeState::Lost => NodeStateProto::NsLost,
    }
}

/// Every node's report, registered or lost lately.
pub fn node_reports(cluster: &Cluster) -> impl Iterator<Item = NodeReportProto> + '_ {
    let registered = cluster.nodes().map(|node| node_report(node, node.state()));
    let lost = cluster
        .lost_nodes()
        .map(|lost| node_report(&lost.node, NodeState::Lost));
    registered.chain(lost)
}

/// Node `id`'s report among an allocate's updated nodes, if it is
/// registered or lost lately: why it is there (usable again, unusable —
/// unhealthy, decommissioned or lost —, being decommissioned) and, while
/// it is being decommissioned, the seconds left before what runs on it is
/// killed.
pub fn updated_node_report(cluster: &Cluster, id: &str, now: u64) -> Option<NodeReportProto> {
    let (node, state) = match cluster.node(id) {
        Some(node) => (node, node.state()),
        None => (&cluster.lost_node(id)?.node, NodeState::Lost),
    };
    let update = match state {
        NodeState::Running => NodeUpdateTypeProto::NodeUsable,
        NodeState::Decommissioning => NodeUpdateTypeProto::NodeDecommissioning,
        NodeState::Unhealthy | NodeState::Decommissioned | NodeState::Lost => {
            NodeUpdateTypeProto::NodeUnusable
        }
    };
    Some(NodeReportProto {
        node_update_type: Some(update as i32),
        decommissioning_timeout: node
            .decommission
            .filter(|_| state != NodeState::Lost)
            .map(|d| u32::try_from(d.deadline_ms.saturating_sub(now) / 1000).unwrap_or(u32::MAX)),
        ..node_report(node, state)
    })
}

/// The cluster's node counts.
pub fn cluster_metrics(cluster: &Cluster) -> YarnClusterMetricsProto {
    let count = |n: usize| Some(i32::try_from(n).unwrap_or(i32::MAX));
    let nodes = cluster.node_counts();
    YarnClusterMetricsProto {
        num_node_managers: count(nodes.registered),
        num_active_nms: count(nodes.running),
        num_lost_nms: count(nodes.lost),
        num_decommissioned_nms: count(nodes.decommissioned),
        num_unhealthy_nms: count(nodes.unhealthy),
        num_rebooted_nms: Some(0),
        num_decommissioning_nms: count(nodes.decommissioning),
        num_shutdown_nms: Some(0),
    }
}

/// What a queue info holds besides the queue itself.
#[derive(Debug, Clone, Copy)]
pub struct QueueDepth {
    /// Its children's infos (YARN's includeChildQueues).
    pub children: bool,
    /// Their children's too, all the way down (recursive).
    pub recursive: bool,
    /// Its apps' reports (includeApplications).
    pub applications: bool,
}

/// Queue `index`'s info: capacities as fractions of its parent's (YARN's
/// QueueInfo), its use as a fraction of its guarantee.
pub fn queue_info(
    cluster: &Cluster,
    usage: &[Resources],
    index: usize,
    depth: QueueDepth,
) -> QueueInfoProto {
    let queues = cluster.queues().queues();
    let queue = &queues[index];
    let capacity = cluster.capacity();
    let used_share = usage
        .get(index)
        .map_or(0.0, |used| used.dominant_share(&capacity).percent);
    let current = if queue.absolute_capacity > 0.0 {
        used_share / queue.absolute_capacity
    } else {
        0.0
    };
    let children = if depth.children || depth.recursive {
        let below = QueueDepth {
            children: depth.recursive,
            ..depth
        };
        queue
            .children
            .iter()
            .map(|&child| queue_info(cluster, usage, child, below))
            .collect()
    } else {
        Vec::new()
    };
    let applications = if depth.applications {
        cluster
            .active_apps()
            .map(|i| &cluster.apps()[i])
            .filter(|app| app.queue_index == index)
            .map(app_report)
            .collect()
    } else {
        Vec::new()
    };
    QueueInfoProto {
        queue_name: Some(queue.name.clone()),
        queue_path: Some(queue.path.clone()),
        capacity: Some((queue.capacity / 100.0) as f32),
        maximum_capacity: Some((queue.maximum_capacity / 100.0) as f32),
        current_capacity: Some(current as f32),
        state: Some(match queue.state {
            QueueState::Running => QueueStateProto::QRunning as i32,
            QueueState::Stopped => QueueStateProto::QStopped as i32,
        }),
        child_queues: children,
        applications,
        accessible_node_labels: match &queue.partitions.accessible {
            None => vec!["*".into()],
            Some(labels) => labels.iter().cloned().collect(),
        },
        default_node_label_expression: Some(queue.partitions.default_label_expression.clone()),
        scheduler_type: Some("capacityScheduler".into()),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn app_ids_go_both_ways_and_bad_ones_are_refused() {
        let proto = application_id("application_1700000000000_0042");
        assert_eq!(proto.cluster_timestamp, Some(1_700_000_000_000));
        assert_eq!(proto.id, Some(42));
        assert_eq!(
            application_id_text(Some(&proto)).unwrap(),
            "application_1700000000000_0042"
        );
        // YARN prints at least four digits, more when the number needs them.
        let big = ApplicationIdProto {
            id: Some(123_456),
            cluster_timestamp: Some(5),
        };
        assert_eq!(
            application_id_text(Some(&big)).unwrap(),
            "application_5_123456"
        );
        assert!(application_id_text(None).is_err());
        let negative = ApplicationIdProto {
            id: Some(-1),
            cluster_timestamp: Some(5),
        };
        assert!(application_id_text(Some(&negative)).is_err());
        let missing = ApplicationIdProto {
            id: Some(1),
            cluster_timestamp: None,
        };
        assert!(application_id_text(Some(&missing)).is_err());
    }

    #[test]
    fn an_unhealthy_node_is_reported_as_yarn_says_it() {
        use crate::protocol::node::NodeHealth;
        use crate::queues::{QueueProperties, QueueTree};
        let tree = QueueTree::from_properties(&QueueProperties::defaults()).unwrap();
        let mut cluster = Cluster::new(1, tree);
        for id in ["a", "b"] {
            cluster
                .register_agent(
                    id,
                    crate::resources::Resources::new(1024, 1, 0),
                    "ops",
                    Default::default(),
                    Some(&[]),
                    0,
                )
                .unwrap();
        }
        let sick = NodeHealth {
            healthy: false,
            report: "log-dirs /l is bad".into(),
        };
        cluster.set_node_health("b", Some(&sick));
        let b = cluster.node("b").unwrap();
        let report = node_report(b, b.state());
        assert_eq!(report.node_state, Some(NodeStateProto::NsUnhealthy as i32));
        assert_eq!(report.health_report.as_deref(), Some("log-dirs /l is bad"));
        let a = cluster.node("a").unwrap();
        let healthy = node_report(a, a.state());
        assert_eq!(healthy.node_state, Some(NodeStateProto::NsRunning as i32));
        let updated = updated_node_report(&cluster, "b", 0).unwrap();
        assert_eq!(
            updated.node_update_type,
            Some(NodeUpdateTypeProto::NodeUnusable as i32)
        );
        cluster.decommission_node("a", 90_500, 0).unwrap();
        let draining = updated_node_report(&cluster, "a", 500).unwrap();
        assert_eq!(
            draining.node_state,
            Some(NodeStateProto::NsDecommissioned as i32),
            "nothing runs on it"
        );
        assert_eq!(
            draining.node_update_type,
            Some(NodeUpdateTypeProto::NodeUnusable as i32)
        );
        assert_eq!(draining.decommissioning_timeout, Some(90));
        cluster.recommission_node("a").unwrap();
        let metrics = cluster_metrics(&cluster);
        assert_eq!(metrics.num_node_managers, Some(2));
        assert_eq!(metrics.num_active_nms, Some(1));
        assert_eq!(metrics.num_unhealthy_nms, Some(1));
        // Lost by silence: LOST and unusable, in the listing until it
        // registers again.
        cluster.expire_nodes(1, 2);
        let lost = updated_node_report(&cluster, "a", 3).unwrap();
        assert_eq!(lost.node_state, Some(NodeStateProto::NsLost as i32));
        assert_eq!(
            lost.node_update_type,
            Some(NodeUpdateTypeProto::NodeUnusable as i32)
        );
        assert_eq!(lost.num_containers, Some(0));
        assert_eq!(node_reports(&cluster).count(), 2);
        assert!(updated_node_report(&cluster, "never-seen", 3).is_none());
        let metrics = cluster_metrics(&cluster);
        assert_eq!(metrics.num_node_managers, Some(0));
        assert_eq!(metrics.num_lost_nms, Some(2));
        assert_eq!(metrics.num_active_nms, Some(0));
    }

    #[test]
    fn states_map_onto_yarn_numbers() {
        assert_eq!(state(AppState::Accepted) as i32, 4);
        assert_eq!(state(AppState::Killed) as i32, 8);
    }
}
