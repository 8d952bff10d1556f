//! Locality on asks, as YARN's ResourceRequest resourceName and
//! relaxLocality: an ask may prefer nodes and racks, and delay scheduling
//! (YARN's `node-locality-delay` and `rack-locality-additional-delay`)
//! keeps it to its nodes until it has missed that many scheduling
//! opportunities, then to their racks, then — if it relaxes locality —
//! anywhere. Each node of its partition offers it one opportunity per
//! heartbeat interval, as each NodeManager heartbeat does in YARN: time it
//! waits through passes that place none of its containers counts that
//! many missed (however often passes come); a placement starts the count
//! again, as YARN's resetSchedulingOpportunities.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::{Cluster, Node, NodeKind};
use crate::limits::{self, OutOfBounds};

/// An ask's preferred places, as submitted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LocalitySpec {
    /// Node ids it prefers (at most 100).
    #[serde(default)]
    #[schema(max_items = 100)]
    pub nodes: Vec<String>,
    /// Racks it prefers, e.g. `/dc1/rack7` (at most 100).
    #[serde(default)]
    #[schema(max_items = 100)]
    pub racks: Vec<String>,
    /// Whether it may go elsewhere once the delays have passed (YARN's
    /// relaxLocality, default true); false keeps it to its nodes and racks.
    #[serde(default = "relax_by_default")]
    pub relax_locality: bool,
}

fn relax_by_default() -> bool {
    true
}

/// The most nodes, and racks, one ask names.
pub const MAX_PLACES: usize = 100;

impl LocalitySpec {
    /// Within bounds: names as node ids are, racks as YARN's rack paths,
    /// at most [`MAX_PLACES`] of each, at least one place.
    pub fn check(&self, field: &str) -> Result<(), OutOfBounds> {
        limits::at_most(format!("{field}.nodes"), self.nodes.len(), MAX_PLACES)?;
        limits::at_most(format!("{field}.racks"), self.racks.len(), MAX_PLACES)?;
        for (i, node) in self.nodes.iter().enumerate() {
            limits::name(format!("{field}.nodes[{i}]"), node)?;
        }
        for (i, rack) in self.racks.iter().enumerate() {
            limits::rack(format!("{field}.racks[{i}]"), rack)?;
        }
        if self.nodes.is_empty() && self.racks.is_empty() {
            return Err(OutOfBounds {
                field: field.into(),
                value: "no nodes and no racks".into(),
                rule: "but a locality names at least one node or rack".into(),
            });
        }
        Ok(())
    }
}

/// How far an ask may go now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Level {
    /// Its nodes only.
    NodeLocal,
    /// Its nodes, and the nodes of its racks and of its nodes' racks.
    RackLocal,
    /// Any node of its partition.
    OffSwitch,
}

/// An ask's locality and where delay scheduling stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Locality {
    /// Its nodes.
    pub nodes: BTreeSet<String>,
    /// Its racks.
    pub racks: BTreeSet<String>,
    /// Whether it relaxes to anywhere.
    pub relax_locality: bool,
    /// Scheduling opportunities missed since its last placement.
    pub missed_opportunities: u64,
    /// The opportunities it missed, in node-ms: the nodes of its
    /// partition times the ms it waited with them, counted from the first
    /// pass that saw it waiting (a heartbeat interval of node-ms is one
    /// opportunity).
    #[serde(default)]
    pub missed_node_ms: u64,
    /// When a pass last counted its wait (none since its last placement).
    #[serde(default)]
    pub counted_at_ms: Option<u64>,
    /// How far it may go now.
    pub level: Level,
}

impl Locality {
    /// The locality `spec` asks for, at its first level.
    pub fn from_spec(spec: &LocalitySpec) -> Locality {
        let mut locality = Locality {
            nodes: spec.nodes.iter().cloned().collect(),
            racks: spec.racks.iter().cloned().collect(),
            relax_locality: spec.relax_locality,
            missed_opportunities: 0,
            missed_node_ms: 0,
            counted_at_ms: None,
            level: Level::NodeLocal,
        };
        locality.level = locality.first_level();
        locality
    }

    /// Whether `node` is one of its places: one of its nodes, or on one of
    /// its racks or its nodes' racks (`nodes` every node, by id).
    pub(super) fn is_local(
        &self,
        node: &Node,
        nodes: &std::collections::BTreeMap<String, Node>,
    ) -> bool {
        self.nodes.contains(&node.id)
            || self.racks.contains(node.rack())
            || self
                .nodes
                .iter()
                .filter_map(|id| nodes.get(id))
                .any(|mine| mine.rack() == node.rack())
    }

    /// Back to its first level with nothing missed: it was just placed.
    pub(super) fn reset(&mut self) {
        self.missed_opportunities = 0;
        self.missed_node_ms = 0;
        self.counted_at_ms = None;
        self.level = self.first_level();
    }

    /// Its level after `missed` opportunities, with the delays `delays`
    /// (node, then rack-additional).
    fn level_after(&self, missed: u64, (node_delay, rack_delay): (u64, u64)) -> Level {
        if !self.nodes.is_empty() && missed < node_delay {
            Level::NodeLocal
        } else if missed < node_delay.saturating_add(rack_delay) || !self.relax_locality {
            Level::RackLocal
        } else {
            Level::OffSwitch
        }
    }

    /// The missed opportunities at which it leaves its level, if it ever
    /// does.
    fn next_threshold(&self, (node_delay, rack_delay): (u64, u64)) -> Option<u64> {
        match self.level {
            Level::NodeLocal => Some(node_delay),
            Level::RackLocal if self.relax_locality => Some(node_delay.saturating_add(rack_delay)),
            _ => None,
        }
    }

    fn first_level(&self) -> Level {
        if self.nodes.is_empty() {
            Level::RackLocal
        } else {
            Level::NodeLocal
        }
    }

    /// Whether `node` is a place it may go at its level now (`racks_of_nodes`
    /// the racks its nodes are in).
    fn allows(&self, node: &Node, racks_of_nodes: &BTreeSet<&str>) -> bool {
        let rack_local =
            || self.racks.contains(node.rack()) || racks_of_nodes.contains(node.rack());
        match self.level {
            Level::NodeLocal => self.nodes.contains(&node.id),
            Level::RackLocal if self.relax_locality => {
                self.nodes.contains(&node.id) || rack_local()
            }
            // Strict: its nodes and the racks it names, not its nodes' racks.
            Level::RackLocal => self.nodes.contains(&node.id) || self.racks.contains(node.rack()),
            Level::OffSwitch => true,
        }
    }
}

impl Cluster {
    /// The positions (in node order) of the nodes app `app_index`'s ask
    /// `ask` may take containers on now: its partition's, within its
    /// placement constraint and its locality's level, none it avoids.
    /// None for an ask with none of these (it goes in the common rounds).
    pub fn restricted_nodes(&self, app_index: usize, ask: usize) -> Option<Vec<usize>> {
        let spec = self.apps.get(app_index)?.asks.get(ask)?;
        let locality = spec
            .locality
            .as_ref()
            .filter(|l| l.level != Level::OffSwitch);
        if spec.constraint.is_none() && locality.is_none() && spec.avoid.is_empty() {
            return None;
        }
        let counts = self.tag_counts(app_index, ask);
        let racks_of_nodes: BTreeSet<&str> = locality
            .map(|l| {
                l.nodes
                    .iter()
                    .filter_map(|id| self.nodes.get(id).map(Node::rack))
                    .collect()
            })
            .unwrap_or_default();
        Some(
            self.nodes
                .values()
                .enumerate()
                .filter(|(_, node)| node.partition == spec.partition && !spec.avoids(node))
                .filter(|(_, node)| counts.as_ref().is_none_or(|c| c.allows(node)))
                .filter(|(_, node)| locality.is_none_or(|l| l.allows(node, &racks_of_nodes)))
                .map(|(position, _)| position)
                .collect(),
        )
    }

    /// The delays (node, then rack-additional) of an ask of `count`
    /// containers with `locality`: as YARN, the node delay never more than
    /// the cluster's nodes, and the additional one L × C / N when it is -1.
    fn locality_delays(&self, locality: &Locality, count: u32) -> (u64, u64) {
        let cluster_nodes = self.nodes.len() as u64;
        let node_delay = u64::from(self.queues.node_locality_delay).min(cluster_nodes);
        let rack_delay = self
            .queues
            .rack_locality_additional_delay
            .map(u64::from)
            .unwrap_or_else(|| {
                let places = (locality.nodes.len() + locality.racks.len()) as u64;
                places.saturating_mul(u64::from(count)) / cluster_nodes.max(1)
            });
        (node_delay, rack_delay)
    }

    /// Before a scheduling pass at `now`: each ask with locality still
    /// waiting (pending, not yet free to go anywhere) missed one
    /// opportunity per node of its partition per heartbeat interval since
    /// the pass that last counted it (a placement since started its count
    /// again), and may move a level on, which the pass then uses. Counted
    /// by time — each NodeManager heartbeat is one in YARN — so rounds
    /// that come sooner (a submission's, a heartbeat's) do not spend the
    /// delay sooner; and from the first pass that saw the ask, never from
    /// before it existed.
    pub fn count_missed_opportunities(&mut self, now: u64) {
        let waiting: Vec<(usize, usize)> = self
            .active
            .iter()
            .flat_map(|&index| {
                self.apps[index]
                    .asks
                    .iter()
                    .enumerate()
                    .filter(|(_, ask)| {
                        ask.pending > 0
                            && ask
                                .locality
                                .as_ref()
                                .is_some_and(|l| l.level != Level::OffSwitch)
                    })
                    .map(move |(i, _)| (index, i))
            })
            .collect();
        if waiting.is_empty() {
            return;
        }
        let interval_ms = self.heartbeat_interval_ms.max(1);
        let per_partition = offering_nodes_per_partition(&self.nodes, now, interval_ms);
        for (index, i) in waiting {
            let ask = &self.apps[index].asks[i];
            let Some(locality) = ask.locality.as_ref() else {
                continue;
            };
            let offered = per_partition
                .get(ask.partition.as_str())
                .copied()
                .unwrap_or(0);
            let delays = self.locality_delays(locality, ask.count);
            let Some(locality) = self.apps[index].asks[i].locality.as_mut() else {
                continue;
            };
            // A clock that went back counts nothing, and counts on from
            // where it is: the wall time that then passes is time waited.
            let waited = locality
                .counted_at_ms
                .replace(now)
                .map_or(0, |since| now.saturating_sub(since));
            locality.missed_node_ms = locality
                .missed_node_ms
                .saturating_add(offered.saturating_mul(waited));
            // Never fewer than before (a count kept from before it was
            // counted by time).
            locality.missed_opportunities = locality
                .missed_opportunities
                .max(locality.missed_node_ms / interval_ms);
            let level = locality.level_after(locality.missed_opportunities, delays);
            if level != locality.level {
                locality.level = level;
                self.locality_moves = self.locality_moves.saturating_add(1);
                // Stored with its new level (counts between moves are not
                // written: after a restart the wait counts on from what was
                // stored last).
                super::durable::app_changed(&mut self.changes, &self.apps[index].id);
            }
        }
    }

    /// Time in which no node heartbeats — the cluster has none, or a
    /// restarted server waits for its agents or was down — offers no
    /// opportunity: each ask whose count has started goes on counting from
    /// `now`, credited nothing before it.
    pub fn pause_locality_counts(&mut self, now: u64) {
        for &index in &self.active {
            for ask in &mut self.apps[index].asks {
                if let Some(since) = ask.locality.as_mut().and_then(|l| l.counted_at_ms.as_mut()) {
                    *since = now;
                }
            }
        }
    }

    /// How many times an ask's locality level has moved on with time
    /// (`simulate` takes a move for a change of the cluster).
    pub fn locality_moves(&self) -> u64 {
        self.locality_moves
    }

    /// When the earliest ask with locality now waiting moves a level on
    /// (with the nodes offering opportunities at `now`) if nothing is
    /// placed for it (a pass at that time or later moves it,
    /// and places it there if it can): `simulate` wakes then rather than
    /// jump over it.
    pub fn next_locality_change(&self, now: u64) -> Option<u64> {
        let interval_ms = self.heartbeat_interval_ms.max(1);
        let per_partition = offering_nodes_per_partition(&self.nodes, now, interval_ms);
        let mut soonest: Option<u64> = None;
        for &index in &self.active {
            for ask in &self.apps[index].asks {
                let Some(locality) = ask.locality.as_ref() else {
                    continue;
                };
                if ask.pending == 0 {
                    continue;
                }
                let Some(threshold) =
                    locality.next_threshold(self.locality_delays(locality, ask.count))
                else {
                    continue;
                };
                let offered = per_partition
                    .get(ask.partition.as_str())
                    .copied()
                    .unwrap_or(0);
                let at = match locality.counted_at_ms {
                    // Not counted yet: the next pass starts its count.
                    None => continue,
                    Some(_) if locality.missed_opportunities >= threshold => locality.counted_at_ms,
                    Some(_) if offered == 0 => None,
                    Some(since) => {
                        let needed = threshold
                            .saturating_mul(interval_ms)
                            .saturating_sub(locality.missed_node_ms);
                        Some(since.saturating_add(needed.div_ceil(offered)))
                    }
                };
                if let Some(at) = at {
                    soonest = Some(soonest.map_or(at, |s| s.min(at)));
                }
            }
        }
        soonest
    }
}

/// The nodes of each partition of `nodes` that offer opportunities at
/// `now` (borrowing their names: no allocation per node): every simulated
/// node, and an agent's node heard from within two heartbeat intervals
/// (`interval_ms`) — as YARN counts an opportunity per heartbeat, a node
/// gone silent, or restored and not yet heard from, offers none.
fn offering_nodes_per_partition(
    nodes: &std::collections::BTreeMap<String, Node>,
    now: u64,
    interval_ms: u64,
) -> std::collections::HashMap<&str, u64> {
    let mut per_partition = std::collections::HashMap::new();
    let offers = |node: &Node| match node.kind {
        NodeKind::Simulated => true,
        NodeKind::Remote => {
            !node.unheard_since_restore
                && now.saturating_sub(node.last_heartbeat_ms) <= interval_ms.saturating_mul(2)
        }
    };
    for node in nodes.values().filter(|node| offers(node)) {
        *per_partition.entry(node.partition.as_str()).or_default() += 1;
    }
    per_partition
}

/// A cluster of `nodes` (id, MB; 4 vcores each) of `kind` under
/// `properties`, registered at 0, with one app submitted at 0 asking one
/// container of `memory_mb` that prefers node "b" and may relax.
#[cfg(test)]
pub(crate) fn waiting_for_b(
    properties: &crate::queues::QueueProperties,
    kind: NodeKind,
    nodes: &[(&str, u64)],
    memory_mb: u64,
) -> Cluster {
    use crate::cluster::{AskSpec, SubmitApp};
    let queues = crate::queues::QueueTree::from_properties(properties).unwrap();
    let mut cluster = Cluster::new(1, queues);
    for &(id, node_mb) in nodes {
        let size = crate::resources::Resources::new(node_mb, 4, 0);
        cluster.register_node(id, kind, size, "t", 0).unwrap();
    }
    let mut ask = AskSpec::sized(1, memory_mb, 1, 0, 1000);
    ask.locality = Some(LocalitySpec {
        nodes: vec!["b".into()],
        racks: vec![],
        relax_locality: true,
    });
    cluster
        .submit(SubmitApp::new("u", "default", "p", vec![ask]), "t", 0)
        .unwrap();
    cluster
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{AskSpec, SubmitApp};
    use crate::queues::{QueueProperties, QueueTree};
    use crate::resources::Resources;

    #[test]
    fn delay_scheduling_moves_node_then_rack_then_anywhere_and_a_placement_starts_again() {
        let mut properties = QueueProperties::defaults();
        // Two nodes: YARN caps the node delay at the cluster's nodes.
        properties.set("yarn.scheduler.capacity.node-locality-delay", "40");
        properties.set(
            "yarn.scheduler.capacity.rack-locality-additional-delay",
            "2",
        );
        let mut cluster = Cluster::new(1, QueueTree::from_properties(&properties).unwrap());
        for id in ["a", "b"] {
            let size = Resources::new(4096, 4, 0);
            cluster
                .register_node(id, NodeKind::Simulated, size, "t", 0)
                .unwrap();
        }
        let mut ask = AskSpec::sized(2, 1024, 1, 0, 1000);
        ask.locality = Some(LocalitySpec {
            nodes: vec!["b".into()],
            racks: vec![],
            relax_locality: true,
        });
        let strict = AskSpec {
            locality: Some(LocalitySpec {
                relax_locality: false,
                ..ask.locality.clone().unwrap()
            }),
            ..ask.clone()
        };
        cluster
            .submit(
                SubmitApp::new("u", "default", "p", vec![ask, strict]),
                "t",
                0,
            )
            .unwrap();
        let level = |cluster: &Cluster, ask: usize| {
            cluster.apps()[0].asks[ask].locality.as_ref().unwrap().level
        };
        assert_eq!(cluster.restricted_nodes(0, 0), Some(vec![1]), "node b only");
        // Two nodes heartbeating every second (the default) offer two
        // opportunities a second, however often passes come. The first
        // pass that sees the ask starts its count (nothing before it
        // counts); nine passes 100 ms apart miss one, the tenth a second's
        // two (the node delay as capped).
        cluster.count_missed_opportunities(5_000);
        assert_eq!(cluster.next_locality_change(0), Some(6_000));
        for pass in 1..10 {
            cluster.count_missed_opportunities(5_000 + pass * 100);
            assert_eq!(level(&cluster, 0), Level::NodeLocal, "pass {pass}");
        }
        cluster.count_missed_opportunities(6_000);
        assert_eq!(level(&cluster, 0), Level::RackLocal);
        assert_eq!(
            cluster.restricted_nodes(0, 0),
            Some(vec![0, 1]),
            "b's rack: both"
        );
        // Two more missed (the additional delay) after another second.
        assert_eq!(cluster.next_locality_change(0), Some(7_000));
        cluster.count_missed_opportunities(7_000);
        assert_eq!(level(&cluster, 0), Level::OffSwitch);
        assert_eq!(cluster.restricted_nodes(0, 0), None, "in the common rounds");
        // The strict one never leaves its node.
        assert_eq!(level(&cluster, 1), Level::RackLocal);
        assert_eq!(cluster.restricted_nodes(0, 1), Some(vec![1]));
        // A placement starts the count again.
        let placement = crate::cluster::Placement {
            app: 0,
            ask: 0,
            node: 0,
            count: 1,
        };
        cluster.allocate(&[placement], 0).unwrap();
        assert_eq!(level(&cluster, 0), Level::NodeLocal);
        // At a heartbeat every 100 ms, 100 ms waited is two missed; a
        // clock that went back counts nothing, then counts on from there
        // (a wall clock set back: what passes then is time waited, so it
        // is not frozen until the clock is where it was).
        cluster.set_heartbeat_interval(100);
        cluster.count_missed_opportunities(9_000);
        cluster.count_missed_opportunities(8_000);
        assert_eq!(level(&cluster, 0), Level::NodeLocal);
        cluster.count_missed_opportunities(8_100);
        assert_eq!(level(&cluster, 0), Level::RackLocal);
        // Time no node heartbeats (a restart, no nodes) counts nothing.
        assert_eq!(cluster.next_locality_change(0), Some(8_200));
        cluster.pause_locality_counts(60_000);
        assert_eq!(cluster.next_locality_change(0), Some(60_100));
        cluster.count_missed_opportunities(60_000);
        assert_eq!(level(&cluster, 0), Level::RackLocal);
        let moves = cluster.locality_moves();
        cluster.count_missed_opportunities(60_100);
        assert_eq!(level(&cluster, 0), Level::OffSwitch);
        assert_eq!(cluster.locality_moves(), moves + 1);
    }

    #[test]
    fn only_agents_nodes_heard_from_lately_offer_opportunities() {
        let mut properties = QueueProperties::defaults();
        properties.set(
            "yarn.scheduler.capacity.rack-locality-additional-delay",
            "100",
        );
        let nodes = [("a", 4096), ("b", 4096)];
        let mut cluster = waiting_for_b(&properties, NodeKind::Remote, &nodes, 8192);
        let missed = |cluster: &Cluster| {
            cluster.apps()[0].asks[0]
                .locality
                .as_ref()
                .unwrap()
                .missed_node_ms
        };
        cluster.count_missed_opportunities(0);
        // Heard from at 0: both offer for two intervals.
        cluster.count_missed_opportunities(1_000);
        assert_eq!(missed(&cluster), 2_000);
        // Silent since: none offers.
        cluster.count_missed_opportunities(5_000);
        assert_eq!(missed(&cluster), 2_000);
        // a heard from again; b restored and not yet heard from.
        cluster.nodes.get_mut("a").unwrap().last_heartbeat_ms = 5_000;
        let b = cluster.nodes.get_mut("b").unwrap();
        b.last_heartbeat_ms = 5_000;
        b.unheard_since_restore = true;
        cluster.count_missed_opportunities(5_500);
        assert_eq!(missed(&cluster), 2_500);
    }
}
