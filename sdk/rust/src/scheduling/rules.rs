//! The host's rules beyond room, kept by a policy's own answer: an ask goes
//! on its partition's nodes (or, in a lending round, an ask for the default
//! partition on the lending label's); no container breaks its ask's
//! placement constraint, counting those placed before it; a gang is placed
//! whole or not at all. The host refuses what breaks them; a policy that
//! passes its placements through [`keep_rules`] never does (and `weft
//! policy test` checks it).

use std::collections::HashMap;

use super::wit::{ConstraintScope, RoundKind};
use super::{Placements, Snapshot};

/// Tagged containers counted where constraints look: per (node or rack,
/// tag), every app's and each app's.
#[derive(Default)]
struct Counts<'a> {
    by_node: HashMap<(usize, &'a str), Tally>,
    by_rack: HashMap<(usize, &'a str), Tally>,
}

#[derive(Default)]
struct Tally {
    all: u64,
    by_app: HashMap<usize, u64>,
}

impl<'a> Counts<'a> {
    fn add(&mut self, snapshot: &Snapshot, node: usize, app: usize, tag: &'a str, count: u64) {
        let rack = snapshot.nodes().rack(node);
        for tally in [
            self.by_node.entry((node, tag)).or_default(),
            self.by_rack.entry((rack, tag)).or_default(),
        ] {
            tally.all += count;
            *tally.by_app.entry(app).or_default() += count;
        }
    }

    fn count(
        &self,
        snapshot: &Snapshot,
        scope: ConstraintScope,
        node: usize,
        app: Option<usize>,
        tag: &str,
    ) -> u64 {
        let tally = match scope {
            ConstraintScope::Node => self.by_node.get(&(node, tag)),
            ConstraintScope::Rack => self.by_rack.get(&(snapshot.nodes().rack(node), tag)),
        };
        match (tally, app) {
            (None, _) => 0,
            (Some(t), None) => t.all,
            (Some(t), Some(app)) => t.by_app.get(&app).copied().unwrap_or(0),
        }
    }
}

/// `placements` less what the host would refuse or hold back, in order:
/// placements off their ask's partition go; a constrained ask's placement
/// keeps only the containers before the first its constraint refuses (each
/// placed container counting for the next); then every placement of a gang
/// placed below its minimum goes.
pub fn keep_rules(snapshot: &Snapshot, placements: Placements) -> Placements {
    let (nodes, asks) = (snapshot.nodes(), snapshot.asks());
    let round = snapshot.round();
    let constrained = (0..asks.len()).any(|k| asks.constraint(k).is_some());
    let mut counts = Counts::default();
    if constrained {
        for n in 0..nodes.len() {
            for (app, tag, count) in snapshot.tag_counts(n) {
                counts.add(snapshot, n, app, tag, u64::from(count));
            }
        }
    }
    let mut kept = Placements::default();
    let mut placed = vec![0u64; asks.len()];
    for (ask, node, count) in placements.triples() {
        let (k, n) = (ask as usize, node as usize);
        let (wanted, on) = (asks.partition(k), nodes.partition(n));
        let lent =
            round.kind == RoundKind::Lending && wanted == 0 && on == round.partition as usize;
        if wanted != on && !lent {
            continue;
        }
        let app = asks.app(k);
        let mut count = count;
        if let Some(c) = asks.constraint(k) {
            let whose = (!c.all_apps).then_some(app);
            let own = snapshot.ask_tags(k);
            let mut allowed = 0;
            while allowed < count {
                let now = counts.count(snapshot, c.scope, n, whose, &c.tag);
                if now < u64::from(c.minimum) || now > u64::from(c.maximum) {
                    break;
                }
                allowed += 1;
                for tag in own {
                    counts.add(snapshot, n, app, tag, 1);
                }
            }
            count = allowed;
        } else if constrained {
            for tag in snapshot.ask_tags(k) {
                counts.add(snapshot, n, app, tag, u64::from(count));
            }
        }
        if count > 0 {
            placed[k] += u64::from(count);
            kept.push(k, n, count);
        }
    }
    let short = |k: usize| {
        asks.gang_minimum(k)
            .is_some_and(|minimum| placed[k] > 0 && placed[k] < u64::from(minimum))
    };
    if !(0..asks.len()).any(short) {
        return kept;
    }
    let mut whole = Placements::default();
    for (ask, node, count) in kept.triples() {
        if !short(ask as usize) {
            whole.push(ask as usize, node as usize, count);
        }
    }
    whole
}

/// The most times [`schedule_keeping_rules`] runs a round again for gangs
/// placed in part (as the host, which asks at most four times in all).
const MAX_REROUNDS: usize = 3;

/// `schedule` on `snapshot`, kept to the host's rules ([`keep_rules`]),
/// with gangs placed whole where they can be, as the host does for a policy
/// that does not: while gangs are placed in part, the round runs again with
/// the first of them alone in play (the others left out), then, if it is
/// still in part, without it too — so two gangs cannot split the room
/// between them round after round, and the room one cannot use goes to the
/// others.
pub fn schedule_keeping_rules(
    snapshot: &Snapshot,
    mut schedule: impl FnMut(&Snapshot) -> Placements,
) -> Placements {
    let mut placements = schedule(snapshot);
    let mut left_out: Vec<usize> = Vec::new();
    let mut alone: Option<usize> = None;
    for _ in 0..MAX_REROUNDS {
        let partial = partial_gangs(snapshot, &placements);
        let Some(&first) = partial.first() else {
            break;
        };
        let keep_first = alone != Some(first);
        left_out.extend(partial.into_iter().filter(|&g| !(keep_first && g == first)));
        alone = keep_first.then_some(first);
        let mut record = snapshot.to_record();
        for &k in &left_out {
            record.asks.pending[k] = 0;
            record.asks.gang_minimum[k] = None;
        }
        let Ok(without) = Snapshot::new(record) else {
            break;
        };
        placements = schedule(&without);
    }
    keep_rules(snapshot, placements)
}

/// The gang asks `placements` place below their minimum (but not none).
pub fn partial_gangs(snapshot: &Snapshot, placements: &Placements) -> Vec<usize> {
    let asks = snapshot.asks();
    if (0..asks.len()).all(|k| asks.gang_minimum(k).is_none()) {
        return Vec::new();
    }
    let mut placed = vec![0u64; asks.len()];
    for (ask, _, count) in placements.triples() {
        placed[ask as usize] += u64::from(count);
    }
    (0..asks.len())
        .filter(|&k| {
            asks.gang_minimum(k)
                .is_some_and(|minimum| placed[k] > 0 && placed[k] < u64::from(minimum))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Resources;
    use crate::scheduling::{SnapshotBuilder, wit};

    fn placements(rows: &[(u32, u32, u32)]) -> Placements {
        let mut p = Placements::default();
        for &(ask, node, count) in rows {
            p.push(ask as usize, node as usize, count);
        }
        p
    }

    #[test]
    fn anti_affinity_gangs_and_partitions_are_kept() {
        let gb = Resources::new(1024, 1, 0);
        let mut record = SnapshotBuilder::new()
            .node(gb.times(4), gb.times(4))
            .node(gb.times(4), gb.times(4))
            .queue(0, 100.0, 100.0)
            .app(0, 0)
            .ask(0, 3, gb) // 0: NOTIN,NODE,zk, tagged zk
            .ask(0, 4, gb) // 1: a gang of 4
            .ask(0, 1, gb) // 2: for the gpu partition
            .record();
        record.asks.constraint[0] = Some(wit::PlacementConstraint {
            text: "NOTIN,NODE,zk".into(),
            scope: ConstraintScope::Node,
            tag: "zk".into(),
            all_apps: false,
            minimum: 0,
            maximum: 0,
        });
        record.ask_tags = wit::AskTags {
            ask: vec![0],
            tag: vec!["zk".into()],
        };
        record.asks.gang_minimum[1] = Some(4);
        record.partitions.name.push("gpu".into());
        record.partitions.exclusive.push(true);
        record.asks.partition[2] = 1;
        let snapshot = Snapshot::new(record).unwrap();
        let kept = keep_rules(
            &snapshot,
            placements(&[(0, 0, 2), (0, 1, 1), (1, 0, 2), (1, 1, 1), (2, 0, 1)]),
        );
        // zk: one a node; the gang of 4 got 3, so none; the gpu ask is off
        // its partition.
        assert_eq!(kept.triples(), [(0, 0, 1), (0, 1, 1)]);
        let whole = keep_rules(&snapshot, placements(&[(1, 0, 2), (1, 1, 2)]));
        assert_eq!(whole.triples().len(), 2, "a gang placed whole stays");
    }

    #[test]
    fn two_gangs_splitting_the_room_get_it_one_at_a_time() {
        let gb = Resources::new(1024, 1, 0);
        let mut record = SnapshotBuilder::new()
            .node(gb.times(8), gb.times(8))
            .queue(0, 100.0, 100.0)
            .app(0, 0)
            .app(0, 1)
            .ask(0, 6, gb)
            .ask(1, 6, gb)
            .record();
        record.asks.gang_minimum = vec![Some(6), Some(6)];
        let snapshot = Snapshot::new(record).unwrap();
        // A policy that shares the room out evenly among the asks in play.
        let halves = |s: &Snapshot| {
            let asks = s.asks();
            let live: Vec<usize> = (0..asks.len()).filter(|&k| asks.pending[k] > 0).collect();
            let mut p = Placements::default();
            for &k in &live {
                let share = (8 / live.len() as u32).min(asks.pending[k]);
                p.push(k, 0, share);
            }
            p
        };
        assert_eq!(halves(&snapshot).triples(), [(0, 0, 4), (1, 0, 4)]);
        let kept = schedule_keeping_rules(&snapshot, halves);
        assert_eq!(kept.triples(), [(0, 0, 6)], "the first gang alone, whole");
    }
}
