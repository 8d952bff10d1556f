//! Moving an active app to another leaf queue (YARN's
//! moveApplicationAcrossQueues): what the target must allow, and the
//! bookkeeping that follows the app there.

use super::{Cluster, ClusterError, durable};

impl Cluster {
    /// Moves active app `index` to the leaf queue named `queue` at `now`,
    /// as YARN's CapacityScheduler does: the target is a leaf that is not
    /// STOPPED, with room for one more app of the app's user
    /// (maximum-applications and the user's share of them), that may use
    /// every node label the app asks for; an app in a reservation stays in
    /// its reservation's queue. The target's maximum-application-lifetime
    /// holds from the app's submission (a move that would end the app at
    /// once is refused). What its running containers hold counts in the
    /// new queue from `now`, its fading usage too; its project, priority
    /// and asks stay. Nothing changes on a refusal. Returns the new leaf's
    /// name (its own queue again: nothing to do).
    pub fn move_app(
        &mut self,
        index: usize,
        queue: &str,
        now: u64,
    ) -> Result<String, ClusterError> {
        let app = self
            .apps
            .get(index)
            .filter(|app| !app.state.has_ended())
            .ok_or_else(|| ClusterError::CannotMove(format!("no active application {index}")))?;
        // Its own queue again: nothing to do, whatever that queue's state.
        if self.queues.leaf(queue) == Some(app.queue_index) {
            return Ok(app.queue.clone());
        }
        let leaf = self.open_leaf(queue)?;
        let target = &self.queues.queues()[leaf];
        if let Some(reservation) = &app.reservation_id {
            return Err(ClusterError::CannotMove(format!(
                "application {} runs in reservation {reservation} and stays in its queue {}",
                app.id, app.queue
            )));
        }
        let field = format!("application {}'s node_label_expression", app.id);
        self.check_label(leaf, &field, &app.node_label_expression)?;
        for (i, ask) in app.asks.iter().enumerate() {
            let field = format!("application {}'s asks[{i}] node label", app.id);
            self.check_label(leaf, &field, &ask.partition)?;
        }
        self.check_room_for_app(leaf, &app.user)?;
        let deadline = match target.maximum_application_lifetime_s {
            Some(maximum) => {
                let cap = app
                    .submit_time_ms
                    .saturating_add(maximum.saturating_mul(1000));
                if cap <= now {
                    return Err(ClusterError::CannotMove(format!(
                        "queue {} allows an application {maximum} s from its submission (maximum-application-lifetime), which application {} has run past",
                        target.path, app.id
                    )));
                }
                Some(app.lifetime_deadline_ms.map_or(cap, |d| d.min(cap)))
            }
            None => app.lifetime_deadline_ms,
        };
        // Checked: from here on nothing refuses.
        let (old_leaf, new_path, name) =
            (app.queue_index, target.path.clone(), target.name.clone());
        let old_path = self.queues.queues()[old_leaf].path.clone();
        let (user, held, old_deadline) = (app.user.clone(), app.used, app.lifetime_deadline_ms);
        self.decayed.move_held(&old_path, &new_path, held, now);
        self.active_counts.remove(old_leaf, &user);
        self.active_counts.add(leaf, &user);
        self.lifetimes.remove(old_deadline, index);
        self.lifetimes.insert(deadline, index);
        let app = &mut self.apps[index];
        app.queue = name.clone();
        app.queue_index = leaf;
        app.lifetime_deadline_ms = deadline;
        durable::app_changed(&mut self.changes, &app.id);
        Ok(name)
    }
}

#[cfg(test)]
mod tests {
    use crate::cluster::{
        AppState, AskSpec, Cluster, ClusterError, NodeKind, Placement, SubmitApp,
    };
    use crate::queues::{PREFIX, QueueProperties, QueueTree};
    use crate::resources::Resources;

    /// Leaves `default` and `b` under root, with `extra` properties, and one node.
    fn cluster(extra: &[(&str, &str)]) -> Cluster {
        let mut properties = QueueProperties::defaults();
        for (key, value) in [
            ("root.queues", "default,b"),
            ("root.default.capacity", "50"),
            ("root.b.capacity", "50"),
        ]
        .iter()
        .chain(extra)
        {
            properties.set(&format!("{PREFIX}{key}"), value);
        }
        let mut cluster = Cluster::new(1, QueueTree::from_properties(&properties).unwrap());
        cluster
            .register_node("n1", NodeKind::Remote, Resources::new(8192, 8, 0), "t", 0)
            .unwrap();
        cluster
    }

    fn submit(cluster: &mut Cluster, queue: &str, user: &str, now: u64) -> usize {
        let id = cluster
            .submit(
                SubmitApp::new(
                    user,
                    queue,
                    "app",
                    vec![AskSpec::sized(2, 1024, 1, 0, 60_000)],
                ),
                "t",
                now,
            )
            .unwrap()
            .id
            .clone();
        cluster.app_index(&id).unwrap()
    }

    #[test]
    fn a_moved_app_counts_in_its_new_queue_with_what_it_holds() {
        let mut cluster = cluster(&[]);
        let app = submit(&mut cluster, "default", "alice", 0);
        cluster
            .allocate(
                &[Placement {
                    app,
                    ask: 0,
                    node: 0,
                    count: 1,
                }],
                10,
            )
            .unwrap();
        assert_eq!(cluster.move_app(app, "root.b", 20).unwrap(), "b");
        let moved = &cluster.apps()[app];
        assert_eq!(
            (moved.queue.as_str(), moved.state),
            ("b", AppState::Running)
        );
        let b = cluster.queues().leaf("b").unwrap();
        let a = cluster.queues().leaf("default").unwrap();
        assert_eq!(moved.queue_index, b);
        assert_eq!(
            (
                cluster.active_counts.of_queue(a),
                cluster.active_counts.of_queue(b)
            ),
            (0, 1)
        );
        assert_eq!(cluster.active_counts.of_user(b, "alice"), 1);
        // Its running container's hold moved with it: from the move on its
        // use grows in b, not in default.
        let use_of = |queue: &str, now: u64| cluster.decayed.queue_at(queue, now).vcore_seconds;
        assert!(
            use_of("root.default", 20) > 0.0,
            "default counted it until the move"
        );
        assert!(use_of("root.default", 10_020) <= use_of("root.default", 20));
        assert!(use_of("root.b", 10_020) > use_of("root.b", 20) + 9.0);
        // Its own queue again: nothing to do.
        assert_eq!(cluster.move_app(app, "b", 30).unwrap(), "b");
    }

    #[test]
    fn a_move_the_target_refuses_changes_nothing() {
        let mut cluster = cluster(&[
            ("root.b.maximum-applications", "1"),
            ("root.default.maximum-application-lifetime", "5"),
        ]);
        let app = submit(&mut cluster, "default", "alice", 0);
        let other = submit(&mut cluster, "b", "bob", 0);
        let refused = |cluster: &mut Cluster, queue: &str, now: u64| {
            let before = cluster.apps()[app].clone();
            let error = cluster.move_app(app, queue, now).unwrap_err();
            let after = &cluster.apps()[app];
            assert_eq!(
                (&after.queue, after.queue_index, after.lifetime_deadline_ms),
                (
                    &before.queue,
                    before.queue_index,
                    before.lifetime_deadline_ms
                ),
                "nothing changed"
            );
            error
        };
        assert!(matches!(
            refused(&mut cluster, "nowhere", 1),
            ClusterError::UnknownQueue { .. }
        ));
        assert!(matches!(
            refused(&mut cluster, "root", 1),
            ClusterError::UnknownQueue { .. }
        ));
        assert!(matches!(
            refused(&mut cluster, "b", 1),
            ClusterError::QueueFull { .. }
        ));
        // Back from b to default (whose apps live 5 s): the other app, at 6 s, has
        // run past it; at 2 s it may go, its deadline cut to 5 s.
        let error = cluster.move_app(other, "default", 6_000).unwrap_err();
        assert!(
            error.to_string().contains("maximum-application-lifetime"),
            "{error}"
        );
        cluster.move_app(other, "default", 2_000).unwrap();
        assert_eq!(cluster.apps()[other].lifetime_deadline_ms, Some(5_000));
        // An app in a reservation stays in its reservation's queue.
        let mut reserved = SubmitApp::new(
            "carol",
            "default",
            "app",
            vec![AskSpec::sized(1, 1024, 1, 0, 60_000)],
        );
        reserved.reservation_id = Some("reservation_1_0001".into());
        let id = cluster.submit(reserved, "t", 0).unwrap().id.clone();
        let index = cluster.app_index(&id).unwrap();
        let error = cluster.move_app(index, "b", 2_000).unwrap_err();
        assert!(error.to_string().contains("runs in reservation"), "{error}");
        // An ended app is not moved.
        cluster.kill_app(other, "test", 2_100);
        assert!(matches!(
            cluster.move_app(other, "b", 2_200),
            Err(ClusterError::CannotMove(_))
        ));
    }

    #[test]
    fn a_stopped_queue_or_one_without_the_apps_label_takes_no_move() {
        let mut cluster = cluster(&[("root.b.state", "STOPPED")]);
        let app = submit(&mut cluster, "default", "alice", 0);
        assert!(matches!(
            cluster.move_app(app, "b", 1),
            Err(ClusterError::QueueStopped(_))
        ));
        // An app asking in a partition its target may not use stays.
        let mut cluster = self::cluster(&[
            ("root.default.accessible-node-labels", "gpu"),
            ("root.b.accessible-node-labels", " "),
        ]);
        cluster
            .add_node_labels(&[("gpu".to_string(), true)])
            .unwrap();
        let mut ask = AskSpec::sized(1, 1024, 1, 0, 60_000);
        ask.node_label_expression = Some("gpu".into());
        let id = cluster
            .submit(SubmitApp::new("alice", "default", "app", vec![ask]), "t", 0)
            .unwrap()
            .id
            .clone();
        let index = cluster.app_index(&id).unwrap();
        let error = cluster.move_app(index, "b", 1).unwrap_err();
        assert!(
            matches!(error, ClusterError::LabelNotAccessible { .. }),
            "{error}"
        );
        // So does one whose own expression names it, its asks naming none
        // (a YARN master's later asks run in the app's): b takes it neither
        // by a move nor at submission.
        let whole_app = |queue: &str| {
            let mut ask = AskSpec::sized(1, 1024, 1, 0, 60_000);
            ask.node_label_expression = Some(String::new());
            let mut request = SubmitApp::new("alice", queue, "app", vec![ask]);
            request.node_label_expression = Some("gpu".into());
            request
        };
        let error = cluster.submit(whole_app("b"), "t", 0).unwrap_err();
        assert!(
            matches!(error, ClusterError::LabelNotAccessible { .. }),
            "{error}"
        );
        let id = cluster
            .submit(whole_app("default"), "t", 0)
            .unwrap()
            .id
            .clone();
        let index = cluster.app_index(&id).unwrap();
        let error = cluster.move_app(index, "b", 1).unwrap_err();
        assert!(
            error.to_string().contains("node_label_expression"),
            "{error}"
        );
    }

    #[test]
    fn a_move_to_its_own_queue_is_nothing_to_do_even_when_that_queue_is_stopped() {
        let mut cluster = cluster(&[]);
        let app = submit(&mut cluster, "b", "alice", 0);
        let mut properties = QueueProperties::defaults();
        for (key, value) in [
            ("root.queues", "default,b"),
            ("root.default.capacity", "50"),
            ("root.b.capacity", "50"),
            ("root.b.state", "STOPPED"),
        ] {
            properties.set(&format!("{PREFIX}{key}"), value);
        }
        cluster
            .replace_queues(QueueTree::from_properties(&properties).unwrap(), 1)
            .unwrap();
        assert_eq!(cluster.move_app(app, "root.b", 2).unwrap(), "b");
        assert_eq!(cluster.move_app(app, "default", 2).unwrap(), "default");
        assert!(matches!(
            cluster.move_app(app, "b", 3),
            Err(ClusterError::QueueStopped(_))
        ));
    }
}
