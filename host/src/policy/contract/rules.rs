//! The rules a round's placements must keep beyond room, as the host keeps
//! them on its own rounds (`cluster/labels.rs`, `cluster/constraints.rs`,
//! `cluster/gang.rs`): an ask goes on its partition's nodes (or, in a
//! lending round, an ask for the default partition on the lending label's);
//! no container breaks its ask's constraint, counting those placed before
//! it; a gang is placed whole or not at all. `weft policy test` checks them.

use std::collections::HashMap;

use crate::policy::bindings::{ConstraintScope, Placements, RoundKind, Snapshot};

/// Where `placements` first break a rule, if they do.
pub(super) fn broken(snapshot: &Snapshot, placements: &Placements) -> Option<String> {
    let (nodes, asks) = (&snapshot.nodes, &snapshot.asks);
    // Tagged containers per (node, app, tag), those running and those placed.
    let mut tags: HashMap<(u32, u32, &str), u64> = HashMap::new();
    let t = &snapshot.tag_counts;
    for r in 0..t.node.len() {
        *tags.entry((t.node[r], t.app[r], &t.tag[r])).or_default() += u64::from(t.count[r]);
    }
    let mut placed = vec![0u64; asks.app.len()];
    for i in 0..placements.ask.len() {
        let (k, n) = (placements.ask[i] as usize, placements.node[i]);
        let (ask_partition, node_partition) = (asks.partition[k], nodes.partition[n as usize]);
        let lent = snapshot.round.kind == RoundKind::Lending
            && ask_partition == 0
            && node_partition == snapshot.round.partition;
        if ask_partition != node_partition && !lent {
            return Some(format!(
                "placement {i} puts ask {k} (partition {ask_partition}) on node {n} (partition {node_partition})"
            ));
        }
        let app = asks.app[k];
        let own_tags: Vec<&str> = (0..snapshot.ask_tags.ask.len())
            .filter(|&r| snapshot.ask_tags.ask[r] as usize == k)
            .map(|r| snapshot.ask_tags.tag[r].as_str())
            .collect();
        for _ in 0..placements.count[i] {
            if let Some(c) = &asks.constraint[k] {
                let in_scope = |m: u32| match c.scope {
                    ConstraintScope::Node => m == n,
                    ConstraintScope::Rack => nodes.rack[m as usize] == nodes.rack[n as usize],
                };
                let count: u64 = tags
                    .iter()
                    .filter(|((m, a, tag), _)| {
                        *tag == c.tag && in_scope(*m) && (c.all_apps || *a == app)
                    })
                    .map(|(_, count)| *count)
                    .sum();
                if count < u64::from(c.minimum) || count > u64::from(c.maximum) {
                    return Some(format!(
                        "placement {i} puts a container of ask {k} on node {n}, where {count} containers tagged {} run, against its constraint {}",
                        c.tag, c.text
                    ));
                }
            }
            for tag in &own_tags {
                *tags.entry((n, app, tag)).or_default() += 1;
            }
        }
        placed[k] += u64::from(placements.count[i]);
    }
    (0..asks.app.len()).find_map(|k| {
        let minimum = u64::from(asks.gang_minimum[k]?);
        (placed[k] > 0 && placed[k] < minimum).then(|| {
            format!(
                "ask {k} is a gang of at least {minimum}, but {} of its containers were placed",
                placed[k]
            )
        })
    })
}
