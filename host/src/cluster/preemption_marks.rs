//! Containers marked for preemption: what reclaim chose and waits
//! `max_wait_before_kill` to kill, so that their application masters may
//! give them back first (YARN's preemption candidates and the
//! PreemptionMessage an allocate answers with).

use super::Cluster;
use crate::resources::Resources;

impl Cluster {
    /// Since when container `id` has been marked for preemption, if it is.
    pub fn preemption_mark(&self, id: &str) -> Option<u64> {
        self.preemption_marks.get(id).map(|mark| mark.since)
    }

    /// Marks running container `id` for preemption at `now` (no-op for one
    /// already marked, which keeps its first time, or one not running).
    pub fn mark_for_preemption(&mut self, id: &str, now: u64) {
        if self.containers.contains_key(id) {
            self.preemption_marks
                .entry(id.to_string())
                .or_insert(PreemptionMark {
                    since: now,
                    told: false,
                });
        }
    }

    /// Keeps the marks `keep` says (given since when each is), drops the
    /// others (stale ones, to be marked anew if chosen again).
    pub fn keep_preemption_marks(&mut self, keep: impl Fn(u64) -> bool) {
        self.preemption_marks.retain(|_, mark| keep(mark.since));
    }

    /// Whether any container is marked.
    pub fn any_preemption_marks(&self) -> bool {
        !self.preemption_marks.is_empty()
    }

    /// App `app_id`'s containers marked for preemption since it was last
    /// told, in id order, with their sizes, now told (YARN tells a master of
    /// each mark once).
    pub fn take_preemption_marks_of(&mut self, app_id: &str) -> Vec<(String, Resources)> {
        let containers = &self.containers;
        self.preemption_marks
            .iter_mut()
            .filter(|(_, mark)| !mark.told)
            .filter_map(|(id, mark)| {
                let container = containers.get(id).filter(|c| c.app == app_id)?;
                mark.told = true;
                Some((id.clone(), container.resources))
            })
            .collect()
    }
}

/// A container marked for preemption.
#[derive(Debug, Clone, Copy)]
pub(super) struct PreemptionMark {
    /// When it was marked, ms.
    since: u64,
    /// Whether its app's master has been told.
    told: bool,
}

#[cfg(test)]
mod tests {
    use crate::cluster::{AskSpec, Cluster, NodeKind, Placement, SubmitApp};
    use crate::queues::{QueueProperties, QueueTree};
    use crate::resources::Resources;

    #[test]
    fn a_mark_keeps_its_first_time_and_goes_with_its_container() {
        let mut cluster = Cluster::new(
            1,
            QueueTree::from_properties(&QueueProperties::defaults()).unwrap(),
        );
        let size = Resources::new(4096, 4, 0);
        cluster
            .register_node("n", NodeKind::Simulated, size, "t", 0)
            .unwrap();
        let request = SubmitApp::new(
            "u",
            "default",
            "p",
            vec![AskSpec::sized(2, 1024, 1, 0, 60_000)],
        );
        let app = cluster.submit(request, "test", 0).unwrap().id.clone();
        let index = cluster.app_index(&app).unwrap();
        let placement = Placement {
            app: index,
            ask: 0,
            node: 0,
            count: 2,
        };
        let placed = cluster.allocate(&[placement], 0).unwrap();
        let ids: Vec<String> = placed.iter().map(|a| a.container.id.clone()).collect();
        cluster.mark_for_preemption("container_nope", 5);
        assert!(!cluster.any_preemption_marks(), "only a running container");
        cluster.mark_for_preemption(&ids[0], 10);
        cluster.mark_for_preemption(&ids[0], 20);
        assert_eq!(cluster.preemption_mark(&ids[0]), Some(10));
        assert!(
            cluster
                .take_preemption_marks_of("application_other")
                .is_empty()
        );
        let size = Resources::new(1024, 1, 0);
        assert_eq!(
            cluster.take_preemption_marks_of(&app),
            [(ids[0].clone(), size)]
        );
        assert!(
            cluster.take_preemption_marks_of(&app).is_empty(),
            "told once"
        );
        cluster.preempt(&ids[0], 30);
        assert!(!cluster.any_preemption_marks(), "ended: unmarked");
        cluster.mark_for_preemption(&ids[1], 40);
        cluster.keep_preemption_marks(|since| since > 40);
        assert_eq!(cluster.preemption_mark(&ids[1]), None, "stale");
        cluster.mark_for_preemption(&ids[1], 50);
        let told = cluster.take_preemption_marks_of(&app);
        assert_eq!(told, [(ids[1].clone(), size)], "told anew");
    }
}
