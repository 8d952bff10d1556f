//! Placement constraints on asks, in YARN's form (its placement spec, as
//! DistributedShell takes it): an ask's containers carry allocation tags,
//! and its constraint says where they may go by the tags already on a node
//! or rack — `NOTIN,NODE,zk` (anti-affinity: not where a `zk` container
//! runs), `IN,RACK,db` (affinity: only where one does) or
//! `CARDINALITY,NODE,web,0,2` (only where 0 to 2 `web` containers run
//! already: counted before placing, as YARN counts, so up to 3 with its own).
//! Tags count the app's own containers, or every app's with the `all/`
//! namespace (`NOTIN,NODE,all/hbase`), as YARN's namespaces `self` and
//! `all`. A container counts against the constraint once placed, so
//! `NOTIN,NODE,zk` on an ask tagged `zk` puts each on its own node.

use std::collections::HashMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::{Cluster, Node, Placement};
use crate::limits::OutOfBounds;

/// Where a constraint counts tags: one node, or the node's rack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Scope {
    /// The node itself.
    Node,
    /// Every node of its rack.
    Rack,
}

/// A checked constraint: a container may go where `min <= count <= max`,
/// `count` being the containers tagged `tag` in `scope`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlacementConstraint {
    /// Its text as given, normalised (`NOTIN,NODE,zk`).
    pub text: String,
    /// Where tags are counted.
    pub scope: Scope,
    /// The tag counted.
    pub tag: String,
    /// Whether every app's containers count (`all/`), or the app's own.
    pub all_apps: bool,
    /// The fewest tagged containers the scope may have already.
    pub min: u32,
    /// The most tagged containers the scope may have already.
    pub max: u32,
}

use crate::limits::{MAX_ALLOCATION_TAG_BYTES as MAX_TAG_BYTES, MAX_ALLOCATION_TAGS as MAX_TAGS};

/// Checks allocation tags: at most [`MAX_TAGS`], each 1 to
/// [`MAX_TAG_BYTES`] bytes of `A-Z a-z 0-9 . _ -`.
pub(super) fn check_tags(field: &str, tags: &[String]) -> Result<(), OutOfBounds> {
    crate::limits::at_most(field, tags.len(), MAX_TAGS)?;
    for (i, tag) in tags.iter().enumerate() {
        if !is_tag(tag) {
            return Err(OutOfBounds {
                field: format!("{field}[{i}]"),
                value: format!("{:?}", tag.chars().take(40).collect::<String>()),
                rule: format!(
                    "but an allocation tag is 1 to {MAX_TAG_BYTES} bytes of A-Z a-z 0-9 . _ -"
                ),
            });
        }
    }
    Ok(())
}

fn is_tag(tag: &str) -> bool {
    !tag.is_empty()
        && tag.len() <= MAX_TAG_BYTES
        && tag
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

impl PlacementConstraint {
    /// Parses YARN's form: `IN|NOTIN,NODE|RACK,TAG` or
    /// `CARDINALITY,NODE|RACK,TAG,MIN,MAX` (case-insensitive keywords; TAG
    /// may be `all/TAG`). The refusal names `field` and what is wrong.
    pub fn parse(field: &str, text: &str) -> Result<PlacementConstraint, OutOfBounds> {
        let refuse = |rule: &str| OutOfBounds {
            field: field.into(),
            value: format!("{:?}", text.chars().take(60).collect::<String>()),
            rule: format!(
                "but {rule}; a constraint is IN|NOTIN,NODE|RACK,TAG or CARDINALITY,NODE|RACK,TAG,MIN,MAX (TAG may be all/TAG)"
            ),
        };
        if text.len() > 256 {
            return Err(refuse("it is longer than 256 bytes"));
        }
        let parts: Vec<&str> = text.split(',').map(str::trim).collect();
        let (kind, scope, tag) = match parts.as_slice() {
            [kind, scope, tag, ..] => (kind.to_ascii_uppercase(), scope.to_ascii_uppercase(), *tag),
            _ => return Err(refuse("it has fewer than three parts")),
        };
        let scope = match scope.as_str() {
            "NODE" => Scope::Node,
            "RACK" => Scope::Rack,
            _ => return Err(refuse("its scope is not NODE or RACK")),
        };
        let (all_apps, name) = match tag.split_once('/') {
            Some(("all", name)) => (true, name),
            Some(("self", name)) => (false, name),
            Some(_) => return Err(refuse("a tag's namespace is all/ or self/ (or none)")),
            None => (false, tag),
        };
        if !is_tag(name) {
            return Err(refuse("its tag is not 1 to 128 bytes of A-Z a-z 0-9 . _ -"));
        }
        let (min, max) = match (kind.as_str(), &parts[3..]) {
            ("IN", []) => (1, u32::MAX),
            ("NOTIN", []) => (0, 0),
            ("CARDINALITY", [min, max]) => {
                let number = |text: &str| text.parse::<u32>().ok().filter(|&n| n <= 100_000);
                match (number(min), number(max)) {
                    (Some(min), Some(max)) if min <= max => (min, max),
                    _ => return Err(refuse("its MIN and MAX are not 0 ≤ MIN ≤ MAX ≤ 100000")),
                }
            }
            ("IN" | "NOTIN", _) => return Err(refuse("IN and NOTIN take three parts")),
            ("CARDINALITY", _) => return Err(refuse("CARDINALITY takes five parts")),
            _ => return Err(refuse("its kind is not IN, NOTIN or CARDINALITY")),
        };
        let scope_text = match scope {
            Scope::Node => "NODE",
            Scope::Rack => "RACK",
        };
        let tag_text = if all_apps {
            format!("all/{name}")
        } else {
            name.to_string()
        };
        let text = match kind.as_str() {
            "CARDINALITY" => format!("CARDINALITY,{scope_text},{tag_text},{min},{max}"),
            kind => format!("{kind},{scope_text},{tag_text}"),
        };
        Ok(PlacementConstraint {
            text,
            scope,
            tag: name.to_string(),
            all_apps,
            min,
            max,
        })
    }

    /// Whether a scope with `count` tagged containers may take one more.
    pub fn allows(&self, count: u32) -> bool {
        self.min <= count && count <= self.max
    }
}

impl fmt::Display for PlacementConstraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// How many containers tagged as a constraint counts run in each scope,
/// kept up to date as a round's placements are taken in order.
#[derive(Debug)]
pub struct TagCounts<'a> {
    constraint: &'a PlacementConstraint,
    /// Whether the ask's own containers carry the counted tag (each one
    /// placed then counts).
    counts_itself: bool,
    /// Node id → its count; rack → its count (for a RACK scope).
    by_node: HashMap<&'a str, u32>,
    by_rack: HashMap<&'a str, u32>,
}

impl Cluster {
    /// The tags of app `app_index`'s ask `ask` counted where its
    /// constraint looks, if it has one.
    pub fn tag_counts(&self, app_index: usize, ask: usize) -> Option<TagCounts<'_>> {
        let app = self.apps.get(app_index)?;
        let ask = app.asks.get(ask)?;
        let constraint = ask.constraint.as_ref()?;
        let mut counts = TagCounts {
            constraint,
            counts_itself: ask.allocation_tags.contains(&constraint.tag),
            by_node: HashMap::new(),
            by_rack: HashMap::new(),
        };
        for node in self.nodes.values() {
            let tagged = node
                .containers
                .iter()
                .filter_map(|id| self.containers.get(id))
                .filter(|c| constraint.all_apps || c.app == app.id)
                .filter(|c| {
                    self.app(&c.app)
                        .and_then(|a| a.asks.get(c.ask))
                        .is_some_and(|a| a.allocation_tags.contains(&constraint.tag))
                })
                .count() as u32;
            if tagged > 0 {
                counts.by_node.insert(&node.id, tagged);
                *counts.by_rack.entry(node.rack()).or_default() += tagged;
            }
        }
        Some(counts)
    }
}

impl Cluster {
    fn is_constrained(&self, placement: &Placement) -> bool {
        self.apps
            .get(placement.app)
            .and_then(|a| a.asks.get(placement.ask))
            .is_some_and(|a| a.constraint.is_some())
    }

    /// Whether any of `placements` is of an ask with a constraint.
    pub(super) fn any_constrained(&self, placements: &[Placement]) -> bool {
        placements.iter().any(|p| self.is_constrained(p))
    }

    /// `placements` cut to what the constraints of their asks allow, taken
    /// in order, each container counting once placed: a placement that
    /// would break one keeps only the containers before it (and goes if
    /// none is left). Placements of asks without one are kept as they are.
    pub fn within_constraints(&self, placements: Vec<Placement>) -> Vec<Placement> {
        if !self.any_constrained(&placements) {
            return placements;
        }
        let constrained = |p: &Placement| self.is_constrained(p);
        let nodes: Vec<&Node> = self.nodes.values().collect();
        let mut counts: HashMap<(usize, usize), TagCounts<'_>> = HashMap::new();
        placements
            .into_iter()
            .filter_map(|mut placement| {
                if !constrained(&placement) {
                    return Some(placement);
                }
                // No such node: left for `allocate` to refuse.
                let Some(node) = nodes.get(placement.node) else {
                    return Some(placement);
                };
                let counts = counts
                    .entry((placement.app, placement.ask))
                    .or_insert_with(|| {
                        self.tag_counts(placement.app, placement.ask)
                            .expect("a constrained ask")
                    });
                placement.count = counts.take(node, placement.count);
                (placement.count > 0).then_some(placement)
            })
            .collect()
    }
}

impl<'a> TagCounts<'a> {
    /// The count the constraint sees on `node`.
    fn count(&self, node: &Node) -> u32 {
        match self.constraint.scope {
            Scope::Node => self.by_node.get(node.id.as_str()).copied().unwrap_or(0),
            Scope::Rack => self.by_rack.get(node.rack()).copied().unwrap_or(0),
        }
    }

    /// Whether one more container may go on `node` now.
    pub fn allows(&self, node: &Node) -> bool {
        self.constraint.allows(self.count(node))
    }

    /// How many of `wanted` containers may go on `node` one after another,
    /// each counting once placed (when the ask carries the tag); records
    /// them.
    pub fn take(&mut self, node: &'a Node, wanted: u32) -> u32 {
        let mut placed = 0;
        while placed < wanted && self.allows(node) {
            if !self.counts_itself {
                return wanted; // the count does not move
            }
            placed += 1;
            *self.by_node.entry(&node.id).or_default() += 1;
            *self.by_rack.entry(node.rack()).or_default() += 1;
        }
        placed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{AskSpec, NodeKind, SubmitApp};
    use crate::queues::{QueueProperties, QueueTree};
    use crate::resources::Resources;

    #[test]
    fn yarns_forms_parse_and_bad_ones_are_refused_by_name() {
        let parse = |text| PlacementConstraint::parse("c", text);
        let notin = parse("notin, node ,zk").unwrap();
        assert_eq!(
            (notin.text.as_str(), notin.min, notin.max),
            ("NOTIN,NODE,zk", 0, 0)
        );
        let into = parse("IN,RACK,all/db").unwrap();
        assert!(into.all_apps && into.scope == Scope::Rack && into.min == 1);
        assert_eq!(into.text, "IN,RACK,all/db");
        let card = parse("CARDINALITY,NODE,self/web,0,2").unwrap();
        assert_eq!(
            (card.text.as_str(), card.max),
            ("CARDINALITY,NODE,web,0,2", 2)
        );
        for bad in [
            "",
            "NOTIN,NODE",
            "NOTIN,HOST,zk",
            "NEAR,NODE,zk",
            "NOTIN,NODE,zk,1",
            "CARDINALITY,NODE,zk,3,2",
            "CARDINALITY,NODE,zk,0",
            "CARDINALITY,NODE,zk,0,100001",
            "NOTIN,NODE,app-id/x/zk",
            "NOTIN,NODE,z k",
        ] {
            let error = parse(bad).unwrap_err().to_string();
            assert!(error.starts_with("c is "), "{bad:?}: {error}");
        }
        assert!(parse(&format!("NOTIN,NODE,{}", "x".repeat(300))).is_err());
        assert!(check_tags("t", &["a".repeat(129)]).is_err());
        assert!(check_tags("t", &vec!["a".into(); 11]).is_err());
    }

    #[test]
    fn placements_are_cut_to_what_a_constraint_allows_each_container_counting() {
        let mut cluster = Cluster::new(
            1,
            QueueTree::from_properties(&QueueProperties::defaults()).unwrap(),
        );
        for id in ["n1", "n2", "n3"] {
            let size = Resources::new(8192, 8, 0);
            cluster
                .register_node(id, NodeKind::Simulated, size, "t", 0)
                .unwrap();
        }
        let mut ask = AskSpec::sized(3, 1024, 1, 0, 1000);
        ask.allocation_tags = vec!["zk".into()];
        ask.placement_constraint = Some("NOTIN,NODE,zk".into());
        let mut at_most_two = AskSpec::sized(5, 1024, 1, 0, 1000);
        at_most_two.allocation_tags = vec!["web".into()];
        at_most_two.placement_constraint = Some("CARDINALITY,NODE,web,0,1".into());
        cluster
            .submit(
                SubmitApp::new("u", "default", "p", vec![ask, at_most_two]),
                "t",
                0,
            )
            .unwrap();
        let place = |ask, node, count| Placement {
            app: 0,
            ask,
            node,
            count,
        };
        // Three zk on n1 keep one; one each on n2, n3 stay; web: two a node.
        let cut = cluster.within_constraints(vec![
            place(0, 0, 3),
            place(0, 1, 1),
            place(0, 0, 1),
            place(1, 2, 5),
        ]);
        assert_eq!(cut, [place(0, 0, 1), place(0, 1, 1), place(1, 2, 2)]);
        // The host refuses a list that breaks one, whoever made it.
        assert!(cluster.allocate(&[place(0, 0, 2)], 0).is_err());
        cluster.allocate(&cut, 0).unwrap();
        // Placed, they count: n1 and n2 take no more zk, n3 still may.
        let counts = cluster.tag_counts(0, 0).unwrap();
        let allowed: Vec<&str> = cluster
            .nodes()
            .filter(|n| counts.allows(n))
            .map(|n| n.id.as_str())
            .collect();
        assert_eq!(allowed, ["n3"]);
    }
}
