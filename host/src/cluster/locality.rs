//! Locality on asks, as YARN's ResourceRequest resourceName and
//! relaxLocality: an ask may prefer nodes and racks, and delay scheduling
//! (YARN's `node-locality-delay` and `rack-locality-additional-delay`)
//! keeps it to its nodes until it has missed that many scheduling
//! opportunities, then to their racks, then — if it relaxes locality —
//! anywhere. One scheduling pass offers every node of its partition once:
//! a pass that places none of its containers counts that many missed
//! opportunities; a placement starts the count again, as YARN's
//! resetSchedulingOpportunities.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::{Cluster, Node};
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
    /// How long it has waited since its last placement, in ms of the
    /// passes it got nothing in (the missed opportunities are counted
    /// from it).
    #[serde(default)]
    pub waited_ms: u64,
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
            waited_ms: 0,
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
        self.waited_ms = 0;
        self.level = self.first_level();
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

    /// A scheduling pass begins at `now`: how long since the last one
    /// began (0 for the first).
    pub fn pass_begins(&mut self, now: u64) -> u64 {
        let since = self.last_pass_ms.map_or(0, |last| now.saturating_sub(last));
        self.last_pass_ms = Some(now);
        since
    }

    /// After a scheduling pass, `waited_ms` after the one before: each ask
    /// with locality that waited through it (pending before and after,
    /// nothing placed) waited that much longer, and may move a level on.
    /// It has missed one opportunity per node of its partition per
    /// heartbeat interval waited — each NodeManager heartbeat is one in
    /// YARN — so rounds that come sooner (a submission's, a heartbeat's)
    /// do not spend the delay sooner.
    pub fn count_missed_opportunities(
        &mut self,
        placed: &std::collections::HashSet<(usize, usize)>,
        waited_ms: u64,
    ) {
        // As YARN: never more than the cluster's nodes.
        let node_delay = u64::from(self.queues.node_locality_delay).min(self.nodes.len() as u64);
        let rack_delay = self.queues.rack_locality_additional_delay.map(u64::from);
        let cluster_nodes = self.nodes.len() as u64;
        let interval_ms = self.heartbeat_interval_ms.max(1);
        let mut per_partition: std::collections::HashMap<&str, u64> = Default::default();
        for node in self.nodes.values() {
            *per_partition.entry(&node.partition).or_default() += 1;
        }
        for &index in &self.active {
            let app = &mut self.apps[index];
            for (i, ask) in app.asks.iter_mut().enumerate() {
                let (pending, count, partition) = (ask.pending, ask.count, &ask.partition);
                let Some(locality) = ask.locality.as_mut() else {
                    continue;
                };
                if pending == 0
                    || locality.level == Level::OffSwitch
                    || placed.contains(&(index, i))
                {
                    continue;
                }
                let offered = per_partition.get(partition.as_str()).copied().unwrap_or(0);
                locality.waited_ms = locality.waited_ms.saturating_add(waited_ms);
                let missed =
                    u128::from(offered) * u128::from(locality.waited_ms) / u128::from(interval_ms);
                // Never fewer than before (a node gone, or a count kept
                // from before it was counted by time).
                locality.missed_opportunities = locality
                    .missed_opportunities
                    .max(u64::try_from(missed).unwrap_or(u64::MAX));
                // YARN's L × C / N when the additional delay is -1.
                let places = (locality.nodes.len() + locality.racks.len()) as u64;
                let rack_delay = rack_delay.unwrap_or_else(|| {
                    places.saturating_mul(u64::from(count)) / cluster_nodes.max(1)
                });
                let missed = locality.missed_opportunities;
                locality.level = if !locality.nodes.is_empty() && missed < node_delay {
                    Level::NodeLocal
                } else if missed < node_delay.saturating_add(rack_delay) || !locality.relax_locality
                {
                    Level::RackLocal
                } else {
                    Level::OffSwitch
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{AskSpec, NodeKind, SubmitApp};
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
        let none = std::collections::HashSet::new();
        // Two nodes heartbeating every second (the default) offer two
        // opportunities a second, however often passes come: nine passes
        // 100 ms apart miss one, the tenth a second (the node delay as
        // capped).
        for pass in 1..10 {
            cluster.count_missed_opportunities(&none, 100);
            assert_eq!(level(&cluster, 0), Level::NodeLocal, "pass {pass}");
        }
        cluster.count_missed_opportunities(&none, 100);
        assert_eq!(level(&cluster, 0), Level::RackLocal);
        assert_eq!(
            cluster.restricted_nodes(0, 0),
            Some(vec![0, 1]),
            "b's rack: both"
        );
        cluster.count_missed_opportunities(&none, 1000);
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
        // At a heartbeat every 100 ms, 100 ms waited is two missed.
        cluster.set_heartbeat_interval(100);
        cluster.count_missed_opportunities(&none, 100);
        assert_eq!(level(&cluster, 0), Level::RackLocal);
    }

    #[test]
    fn a_pass_says_how_long_since_the_last_began() {
        let mut cluster = Cluster::new(
            1,
            QueueTree::from_properties(&QueueProperties::defaults()).unwrap(),
        );
        assert_eq!(cluster.pass_begins(5_000), 0, "the first");
        assert_eq!(cluster.pass_begins(5_100), 100);
        assert_eq!(cluster.pass_begins(5_100), 0);
        // A clock that went back counts nothing.
        assert_eq!(cluster.pass_begins(4_000), 0);
    }
}
