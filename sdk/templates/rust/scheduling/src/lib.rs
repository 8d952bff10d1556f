//! A first-come-first-served scheduling policy. Start your own scheduling
//! policy here; this file is also Weft's bundled `fifo`.
//!
//! Every scheduling round the host passes a snapshot of the cluster (nodes,
//! queues, apps, asks) and gets placements back: `count` containers of ask
//! `ask` on node `node`. FIFO serves applications in submission order (the
//! order of the snapshot's apps, so ascending app index) and, within an
//! application, its asks in order. Each ask gets as many of its pending
//! containers as fit, node by node: first fit (lowest node index with room
//! in memory, vcores and GPUs) by default, or last fit (highest index first)
//! with the parameter `node-order=last-fit`.
//!
//! There is no head-of-line blocking: an ask that does not fit entirely
//! takes what fits and later applications still use the room that is left.
//! Priorities and queues are ignored. FIFO never preempts.
//!
//! It stays fast at 10,000 nodes and 100,000 pending containers because it
//! never goes container by container: each step puts `min(pending, fits on
//! the node)` containers on one node, the SDK's `FreeNodes` (a max tree over
//! the nodes' free room) finds the next node with room in about
//! `log(nodes)`, and `NoRoom` skips sizes already known not to fit.
//!
//! Everything below is plain Rust: `cargo test` runs the unit tests at the
//! end natively. The last line, `export_scheduling!`, makes the type the
//! WebAssembly component when built with `--target wasm32-wasip2`.

use weft_policy::scheduling::{FreeNodes, NoRoom, Placements, Snapshot, schedule_keeping_rules};
use weft_policy::{Params, Policy, SchedulingPolicy};

/// Which end of the node list fills first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NodeOrder {
    /// Lowest node index with room first.
    #[default]
    FirstFit,
    /// Highest node index with room first.
    LastFit,
}

/// The policy's settings, built by `configure` from its parameters.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Fifo {
    /// `node-order`: `first-fit` (default) or `last-fit`.
    pub node_order: NodeOrder,
}

impl Policy for Fifo {
    // The package's name and version, as `weft policy list` shows them.
    const NAME: &'static str = env!("CARGO_PKG_NAME");
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    /// Reads `node-order`. The SDK refuses a value not in the list, and any
    /// key this function never asks for, with a message naming it.
    fn configure(params: &Params) -> Result<Self, String> {
        let orders = [
            ("first-fit", NodeOrder::FirstFit),
            ("last-fit", NodeOrder::LastFit),
        ];
        Ok(Fifo {
            node_order: params.choice("node-order", &orders)?.unwrap_or_default(),
        })
    }
}

impl SchedulingPolicy for Fifo {
    /// One round. The snapshot is checked by the SDK before this runs: every
    /// ask's app exists, columns have one length, and so on.
    fn schedule(&mut self, snapshot: &Snapshot) -> Placements {
        // What the host would refuse goes: placements off an ask's
        // partition, containers against its constraint, gangs in part (the
        // round run again without them, so their room goes to the others).
        let node_order = self.node_order;
        schedule_keeping_rules(snapshot, |snapshot| fifo(snapshot, node_order))
    }

    // `preempt` is left to its default: FIFO takes nothing back.
}

/// One FIFO round: each ask in submission order, as many containers as fit,
/// on nodes in `node_order`.
fn fifo(snapshot: &Snapshot, node_order: NodeOrder) -> Placements {
    let asks = snapshot.asks();
    let mut free = FreeNodes::new(snapshot.nodes().free_rooms());

    // Submission order is app order; the sort is stable, so each app's
    // asks keep their own order.
    let mut queue: Vec<usize> = (0..asks.len()).filter(|&k| asks.pending[k] > 0).collect();
    queue.sort_by_key(|&k| asks.app(k));

    let mut no_room = NoRoom::default();
    let mut placements = Placements::default();
    for ask in queue {
        let size = asks.size(ask);
        // Room only shrinks during a round: a size that found no node
        // before will not find one now.
        if no_room.rules_out(size) {
            continue;
        }
        let mut pending = asks.pending[ask];
        while pending > 0 {
            let node = match node_order {
                NodeOrder::FirstFit => free.first_fit(size),
                NodeOrder::LastFit => free.last_fit(size),
            };
            let Some(node) = node else {
                no_room.remember(size);
                break;
            };
            // Fill the node as far as this ask can: afterwards either the
            // ask is done or the node no longer fits it.
            let count = free.room(node).fits(size).min(u64::from(pending));
            free.take(node, size, count);
            // At most `pending`, a u32.
            let count = count as u32;
            placements.push(ask, node, count);
            pending -= count;
        }
    }
    placements
}

// The component's glue: exports `Fifo` as the `scheduling-policy` world. It
// expands to nothing in a native build, so `cargo test` runs natively.
weft_policy::export_scheduling!(Fifo);

#[cfg(test)]
mod tests {
    use super::*;
    use weft_policy::params::configure_with;
    use weft_policy::scheduling::SnapshotBuilder;
    use weft_policy::{PolicyKind, Resources};

    /// A cluster of `nodes` (free room, all of it free) and one queue whose
    /// app `a` asks for `asks[a]` = (pending, memory MB, vcores).
    fn snapshot(nodes: &[(u64, u64)], asks: &[(u32, u64, u64)]) -> Snapshot {
        let mut builder = SnapshotBuilder::new().queue(0, 100.0, 100.0);
        for &(memory_mb, vcores) in nodes {
            let room = Resources::new(memory_mb, vcores, 0);
            builder = builder.node(room, room);
        }
        for (app, &(pending, memory_mb, vcores)) in asks.iter().enumerate() {
            let size = Resources::new(memory_mb, vcores, 0);
            builder = builder.app(0, 0).ask(app as u32, pending, size);
        }
        builder.build().unwrap()
    }

    #[test]
    fn first_come_first_served() {
        let mut fifo = Fifo::default();
        // Two nodes of 4 GB; app 0 wants 6 containers of 1 GB, app 1 three.
        let round = snapshot(&[(4096, 4), (4096, 4)], &[(6, 1024, 1), (3, 1024, 1)]);
        // (ask, node, count): app 0 fills node 0 and half of node 1, app 1
        // takes the 2 left; its third container waits for the next round.
        assert_eq!(
            fifo.schedule(&round).triples(),
            [(0, 0, 4), (0, 1, 2), (1, 1, 2)]
        );
    }

    #[test]
    fn no_head_of_line_blocking() {
        let mut fifo = Fifo::default();
        // App 0 asks for more than any node has; app 1 still gets room.
        let round = snapshot(&[(4096, 4)], &[(1, 8192, 1), (2, 1024, 1)]);
        assert_eq!(fifo.schedule(&round).triples(), [(1, 0, 2)]);
    }

    #[test]
    fn last_fit_fills_the_highest_node_first() {
        let mut fifo =
            configure_with::<Fifo>(PolicyKind::Scheduling, &[("node-order", "last-fit")]).unwrap();
        let round = snapshot(&[(4096, 4), (4096, 4), (4096, 4)], &[(6, 1024, 1)]);
        assert_eq!(fifo.schedule(&round).triples(), [(0, 2, 4), (0, 1, 2)]);
    }

    #[test]
    fn parameters_are_checked() {
        let configure =
            |pairs: &[(&str, &str)]| configure_with::<Fifo>(PolicyKind::Scheduling, pairs);
        assert_eq!(configure(&[]), Ok(Fifo::default()));
        let refused = configure(&[("node-order", "best-fit")]).unwrap_err();
        assert!(refused.contains("best-fit"), "{refused}");
        let unknown = configure(&[("priority", "on")]).unwrap_err();
        assert!(
            unknown.contains(r#"unknown parameter "priority""#),
            "{unknown}"
        );
    }
}
