//! Gangs (all-or-nothing asks): a round's placements for a gang not yet
//! placed whole are kept only if they place at least its minimum at once,
//! and a gang not placed by its deadline fails its app or places as it can.
//! The scheduling policy need not know: the host holds a gang back however
//! the policy places it.

use std::collections::BTreeMap;

use super::deadlines::Deadlines;
use super::model::{Cluster, Placement};
use super::{App, Gang};

/// App `number`'s gangs not yet placed whole fall due at their deadlines
/// (at its submission or restore), keyed (app number, ask index).
pub(super) fn add_gangs(deadlines: &mut Deadlines<(usize, usize)>, number: usize, app: &App) {
    for (index, gang) in waiting_gangs(app) {
        deadlines.insert(gang.deadline_ms, (number, index));
    }
}

/// App `number` has ended: its gangs wait no longer.
pub(super) fn remove_gangs(deadlines: &mut Deadlines<(usize, usize)>, number: usize, app: &App) {
    for (index, ask) in app.asks.iter().enumerate() {
        deadlines.remove(ask.gang.and_then(|g| g.deadline_ms), (number, index));
    }
}

/// `placements` less those of the gangs `partial` (sorted, as
/// [`Cluster::gangs_in_part`] gives them).
pub fn without_gangs(placements: Vec<Placement>, partial: &[(usize, usize)]) -> Vec<Placement> {
    if partial.is_empty() {
        return placements;
    }
    placements
        .into_iter()
        .filter(|p| partial.binary_search(&(p.app, p.ask)).is_err())
        .collect()
}

/// `app`'s asks whose gang has not been placed whole.
fn waiting_gangs(app: &App) -> impl Iterator<Item = (usize, Gang)> + '_ {
    app.asks
        .iter()
        .enumerate()
        .filter_map(|(index, ask)| ask.gang.filter(|g| !g.placed).map(|g| (index, g)))
}

impl Cluster {
    /// The gangs `placements` would place in part (fewer than their minimum,
    /// not yet placed whole), as (app number, ask index), in app order.
    pub fn gangs_in_part(&self, placements: &[Placement]) -> Vec<(usize, usize)> {
        let waiting = |p: &Placement| {
            self.apps
                .get(p.app)
                .and_then(|app| app.asks.get(p.ask))
                .and_then(|ask| ask.gang)
                .filter(|gang| !gang.placed)
        };
        // Most rounds place no waiting gang: then nothing is counted.
        let mut placed: BTreeMap<(usize, usize), (u64, u32)> = BTreeMap::new();
        for p in placements {
            if let Some(gang) = waiting(p) {
                let (count, _) = placed.entry((p.app, p.ask)).or_insert((0, gang.minimum));
                *count += u64::from(p.count);
            }
        }
        placed
            .into_iter()
            .filter(|&(_, (count, minimum))| count < u64::from(minimum))
            .map(|(key, _)| key)
            .collect()
    }

    /// `placements` less those of gangs they would place in part: a gang not
    /// yet placed whole keeps its placements only if together they place at
    /// least its minimum. (The scheduler keeps the gangs in part of its last
    /// pass and drops them with [`without_gangs`].)
    #[cfg(test)]
    pub fn whole_gangs(&self, placements: Vec<Placement>) -> Vec<Placement> {
        let partial = self.gangs_in_part(&placements);
        without_gangs(placements, &partial)
    }

    /// The gangs still not placed whole at their deadline, by deadline, as
    /// (app number, ask index, gang); taken out of the index (the caller
    /// fails the app or releases the gang).
    pub fn gangs_past_deadline(&mut self, now: u64) -> Vec<(usize, usize, Gang)> {
        let mut past = Vec::new();
        for (number, index) in self.gang_deadlines.take_due(now) {
            let gang = self
                .apps
                .get(number)
                .filter(|app| !app.state.has_ended())
                .and_then(|app| app.asks.get(index))
                .and_then(|ask| ask.gang)
                .filter(|g| !g.placed);
            if let Some(gang) = gang {
                past.push((number, index, gang));
            }
        }
        past
    }

    /// When the next gang's deadline is, if any waits with one.
    pub fn next_gang_deadline(&self) -> Option<u64> {
        self.gang_deadlines.next_due()
    }

    /// Releases gang `ask` of app `number` at its deadline: its containers
    /// place as they can from now on.
    pub fn release_gang(&mut self, number: usize, ask: usize) {
        if let Some(app) = self.apps.get_mut(number)
            && let Some(gang) = app.asks.get_mut(ask).and_then(|a| a.gang.as_mut())
        {
            gang.placed = true;
            super::durable::app_changed(&mut self.changes, &app.id);
        }
    }

    /// Indexes the gang deadlines of the active apps again (after a restore).
    pub(super) fn index_gangs(&mut self) {
        self.gang_deadlines = Default::default();
        for &number in &self.active {
            if let Some(app) = self.apps.get(number) {
                add_gangs(&mut self.gang_deadlines, number, app);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{AskSpec, GangSpec, GangTimeout, NodeKind, SubmitApp};
    use crate::queues::{QueueProperties, QueueTree};
    use crate::resources::Resources;

    /// Two nodes of 4 vcores.
    fn cluster() -> Cluster {
        let tree = QueueTree::from_properties(&QueueProperties::defaults()).unwrap();
        let mut cluster = Cluster::new(1, tree);
        for id in ["n1", "n2"] {
            cluster
                .register_node(id, NodeKind::Simulated, Resources::new(8192, 4, 0), "t", 0)
                .unwrap();
        }
        cluster
    }

    fn submit_gang(cluster: &mut Cluster, count: u32, gang: GangSpec) -> usize {
        let mut ask = AskSpec::sized(count, 1024, 1, 0, 60_000);
        ask.gang = Some(gang);
        let request = SubmitApp {
            name: "gang".into(),
            ..SubmitApp::new("u", "default", "p", vec![ask])
        };
        let id = cluster.submit(request, "t", 0).unwrap().id.clone();
        cluster.app_index(&id).unwrap()
    }

    fn at(app: usize, node: usize, count: u32) -> Placement {
        Placement {
            app,
            ask: 0,
            node,
            count,
        }
    }

    #[test]
    fn a_gang_is_placed_whole_or_not_at_all_then_as_it_can() {
        let mut cluster = cluster();
        let gang = GangSpec {
            minimum: 6,
            timeout_ms: None,
            on_timeout: GangTimeout::Fail,
        };
        let app = submit_gang(&mut cluster, 8, gang);
        // Four on one node: fewer than six, so none.
        assert!(cluster.whole_gangs(vec![at(app, 0, 4)]).is_empty());
        // Six over two nodes: all of them.
        let whole = vec![at(app, 0, 3), at(app, 1, 3)];
        assert_eq!(cluster.whole_gangs(whole.clone()), whole);
        cluster.allocate(&whole, 10).unwrap();
        assert!(cluster.apps()[app].asks[0].gang.unwrap().placed);
        // Placed whole: the last two place as they can, one at a time.
        assert_eq!(
            cluster.whole_gangs(vec![at(app, 0, 1)]),
            vec![at(app, 0, 1)]
        );
    }

    #[test]
    fn a_gang_past_its_deadline_is_told_once_and_a_placed_one_never() {
        let mut cluster = cluster();
        let waits = GangSpec {
            minimum: 4,
            timeout_ms: Some(1_000),
            on_timeout: GangTimeout::Place,
        };
        let late = submit_gang(&mut cluster, 4, waits);
        let placed = submit_gang(&mut cluster, 4, waits);
        cluster.allocate(&[at(placed, 0, 4)], 500).unwrap();
        assert_eq!(cluster.next_gang_deadline(), Some(1_000));
        assert!(cluster.gangs_past_deadline(999).is_empty());
        let past = cluster.gangs_past_deadline(1_000);
        assert_eq!(past.len(), 1);
        assert_eq!((past[0].0, past[0].1), (late, 0));
        assert!(cluster.gangs_past_deadline(5_000).is_empty());
        // Released, it places as it can.
        cluster.release_gang(late, 0);
        assert_eq!(
            cluster.whole_gangs(vec![at(late, 1, 1)]),
            vec![at(late, 1, 1)]
        );
        // An app that ends takes its deadlines with it.
        let gone = submit_gang(&mut cluster, 4, waits);
        cluster.kill_app(gone, "killed", 1_100);
        assert_eq!(cluster.next_gang_deadline(), None);
    }
}
