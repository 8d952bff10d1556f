//! `faulty-scheduling`: a scheduling policy that misbehaves on purpose, so
//! the host's tests can check that it refuses a bad round whole and contains
//! a trap, an endless loop or a runaway allocation.
//!
//! Parameters:
//!
//! - `fault` (default `none`): what goes wrong in `schedule`. `none` places
//!   every pending container it can, first fit, apps in submission order, like
//!   `fifo` does. The faults:
//!   - `ghost-node`: the `none` placements, then 1 container of ask 0 on node
//!     index = number of nodes, which does not exist;
//!   - `ghost-ask`: the `none` placements, then 1 container of ask index =
//!     number of asks, which does not exist, on node 0;
//!   - `over-allocate`: only all pending containers of ask 0 on node 0, and at
//!     least one more than node 0 has room for;
//!   - `over-pending`: only ask 0's pending count plus one on node 0;
//!   - `trap` panics; `loop` never returns; `alloc` allocates and touches
//!     1 MiB blocks until memory runs out.
//!
//!   The ghosts follow valid placements so that a host which dropped only
//!   the bad entry, instead of refusing the whole round, fails its test. The
//!   faults that name ask 0 place nothing when there are no asks; give the
//!   tests at least one ask and one node, and for `over-allocate` an ask 0
//!   with a non-zero size and more pending than node 0 holds, so that each
//!   result breaks exactly one rule.
//! - `after` (default 0): how many `schedule` calls succeed before the fault
//!   starts, counted since the last successful `configure`. The count lives in
//!   the instance, so a host that replaces a trapped instance starts it at 0.
//!
//! `preempt` never misbehaves and never preempts. Unknown keys are refused.
//!
//! The behaviour is plain Rust that also compiles natively, so it is unit
//! tested with `cargo test -p faulty-scheduling` (all but `loop` and `alloc`,
//! which would not end). The WebAssembly glue is the `export_scheduling!`
//! line.

use weft_policy::scheduling::{Placements, Snapshot};
use weft_policy::{Params, Policy, Resources, SchedulingPolicy};

/// What goes wrong once the fault starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fault {
    /// Nothing: first fit.
    #[default]
    None,
    GhostNode,
    GhostAsk,
    OverAllocate,
    OverPending,
    /// Panic, which traps the instance.
    Trap,
    /// Spin forever; only the host's deadline ends the call.
    Loop,
    /// Allocate and touch memory without bound.
    Alloc,
}

impl Fault {
    const NAMES: &[(&str, Fault)] = &[
        ("none", Fault::None),
        ("ghost-node", Fault::GhostNode),
        ("ghost-ask", Fault::GhostAsk),
        ("over-allocate", Fault::OverAllocate),
        ("over-pending", Fault::OverPending),
        ("trap", Fault::Trap),
        ("loop", Fault::Loop),
        ("alloc", Fault::Alloc),
    ];
}

/// The policy: its settings, and the `schedule` calls made since `configure`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FaultyScheduling {
    pub fault: Fault,
    /// Successful `schedule` calls before the fault starts.
    pub after: u64,
    /// `schedule` calls since `configure` built this value.
    pub calls: u64,
}

impl Policy for FaultyScheduling {
    const NAME: &'static str = env!("CARGO_PKG_NAME");
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    /// Reads `fault` and `after`; unknown keys, fault names and counts are
    /// refused like a real policy would.
    fn configure(params: &Params) -> Result<Self, String> {
        Ok(FaultyScheduling {
            fault: params.choice("fault", Fault::NAMES)?.unwrap_or_default(),
            after: params.u64("after")?.unwrap_or(0),
            calls: 0,
        })
    }
}

impl SchedulingPolicy for FaultyScheduling {
    fn schedule(&mut self, snapshot: &Snapshot) -> Placements {
        // Counted before the call runs, so the fault starts on call `after + 1`.
        let calls_before = self.calls;
        self.calls += 1;
        self.schedule_after(calls_before, snapshot)
    }

    // `preempt` is left to its default: the faults are all in `schedule`.
}

weft_policy::export_scheduling!(FaultyScheduling);

impl FaultyScheduling {
    /// One `schedule` call, `calls_before` calls after the last `configure`.
    pub fn schedule_after(&self, calls_before: u64, snapshot: &Snapshot) -> Placements {
        let fault = if calls_before >= self.after {
            self.fault
        } else {
            Fault::None
        };
        let (nodes, asks) = (snapshot.nodes(), snapshot.asks());
        let (node_count, ask_count) = (nodes.len(), asks.len());
        let mut placements = Placements::default();
        match fault {
            Fault::None => placements = first_fit(snapshot),
            Fault::GhostNode if ask_count > 0 => {
                placements = first_fit(snapshot);
                placements.push(0, node_count, 1);
            }
            Fault::GhostAsk => {
                placements = first_fit(snapshot);
                placements.push(ask_count, 0, 1);
            }
            Fault::OverAllocate if ask_count > 0 => {
                // Without nodes, node 0 is a ghost too; the count is still at least 1.
                let room = if node_count > 0 {
                    nodes.free(0).fits(asks.size(0))
                } else {
                    0
                };
                // More than fits, so node 0 is over-allocated; for a size of
                // all zeros nothing can be, and the count saturates.
                let count = u64::from(asks.pending[0]).max(room.saturating_add(1));
                placements.push(0, 0, u32::try_from(count).unwrap_or(u32::MAX));
            }
            Fault::OverPending if ask_count > 0 => {
                placements.push(0, 0, asks.pending[0].saturating_add(1));
            }
            Fault::GhostNode | Fault::OverAllocate | Fault::OverPending => {}
            Fault::Trap => panic!("faulty-scheduling: trapping on purpose (fault=trap)"),
            Fault::Loop => spin(),
            Fault::Alloc => hoard(),
        }
        placements
    }
}

/// The well-behaved answer: apps in submission order, each ask first fit,
/// by a plain scan (a test guest needs to be obviously right, not fast).
pub fn first_fit(snapshot: &Snapshot) -> Placements {
    let asks = snapshot.asks();
    let mut free: Vec<Resources> = snapshot.nodes().free_rooms().collect();
    let mut queue: Vec<usize> = (0..asks.len()).collect();
    queue.sort_by_key(|&ask| asks.app(ask));
    let mut placements = Placements::default();
    for ask in queue {
        let size = asks.size(ask);
        let mut pending = asks.pending[ask];
        for (node, room) in free.iter_mut().enumerate() {
            if pending == 0 {
                break;
            }
            let count = room.fits(size).min(u64::from(pending));
            if count > 0 {
                *room = room.minus(size.times(count));
                // At most `pending`, a u32.
                placements.push(ask, node, count as u32);
                pending -= count as u32;
            }
        }
    }
    placements
}

/// Never returns. The counter goes through `black_box` so the optimizer
/// cannot prove the loop does nothing; only the host's deadline (epoch or
/// fuel) can end the call.
pub fn spin() -> ! {
    let mut counter = 0u64;
    loop {
        counter = std::hint::black_box(counter.wrapping_add(1));
    }
}

/// Never returns: keeps 1 MiB blocks, each written through, until an
/// allocation fails (which aborts, a trap in WebAssembly) or the host's
/// memory limit stops the instance.
pub fn hoard() -> ! {
    const BLOCK: usize = 1 << 20;
    let mut blocks: Vec<Vec<u8>> = Vec::new();
    loop {
        let block = vec![0xA5u8; BLOCK];
        blocks.push(std::hint::black_box(block));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use weft_policy::PolicyKind;
    use weft_policy::params::configure_with;
    use weft_policy::scheduling::SnapshotBuilder;

    /// Two nodes of 4 GB, 4 vcores, all free, and two apps in one queue.
    fn nodes_and_apps() -> SnapshotBuilder {
        let node = Resources::new(4096, 4, 0);
        SnapshotBuilder::new()
            .node(node, node)
            .node(node, node)
            .queue(0, 100.0, 100.0)
            .app(0, 0)
            .app(0, 1)
    }

    /// [`nodes_and_apps`] with app 1's ask of `pending` × 1 GB, then app 0's
    /// ask of 1 × 2 GB (served first: it was submitted first).
    fn cluster_with(pending: u32) -> Snapshot {
        nodes_and_apps()
            .ask(1, pending, Resources::new(1024, 1, 0))
            .ask(0, 1, Resources::new(2048, 1, 0))
            .build()
            .unwrap()
    }

    fn cluster() -> Snapshot {
        cluster_with(6)
    }

    #[test]
    fn each_fault_breaks_its_rule() {
        let snapshot = cluster();
        let valid = [(1, 0, 1), (0, 0, 2), (0, 1, 4)];
        let with = |extra: (u32, u32, u32)| {
            let mut triples = valid.to_vec();
            triples.push(extra);
            triples
        };
        // (fault, after, calls before this one) -> placements
        let cases = [
            (Fault::None, 0, 0, valid.to_vec()),
            (Fault::GhostNode, 0, 0, with((0, 2, 1))),
            (Fault::GhostAsk, 0, 0, with((2, 0, 1))),
            (Fault::OverAllocate, 0, 0, vec![(0, 0, 6)]), // node 0 holds 4
            (Fault::OverPending, 0, 0, vec![(0, 0, 7)]),
            (Fault::OverPending, 3, 2, valid.to_vec()), // not yet
            (Fault::OverPending, 3, 3, vec![(0, 0, 7)]),
            (Fault::Trap, 1, 0, valid.to_vec()),
            (Fault::Loop, 1, 0, valid.to_vec()),
            (Fault::Alloc, 1, 0, valid.to_vec()),
        ];
        for (fault, after, calls_before, expected) in cases {
            let settings = FaultyScheduling {
                fault,
                after,
                calls: 0,
            };
            let placements = settings.schedule_after(calls_before, &snapshot);
            assert_eq!(
                placements.triples(),
                expected,
                "{fault:?} after {after} at {calls_before}"
            );
        }
    }

    #[test]
    fn over_allocate_exceeds_room_even_when_little_is_pending() {
        let snapshot = cluster_with(2); // fits on node 0, so the count must be raised to 5
        let settings = FaultyScheduling {
            fault: Fault::OverAllocate,
            ..FaultyScheduling::default()
        };
        assert_eq!(settings.schedule_after(0, &snapshot).triples(), [(0, 0, 5)]);
    }

    #[test]
    fn faults_naming_ask_0_place_nothing_without_asks() {
        let no_asks = nodes_and_apps().build().unwrap();
        for fault in [Fault::GhostNode, Fault::OverAllocate, Fault::OverPending] {
            let settings = FaultyScheduling {
                fault,
                ..FaultyScheduling::default()
            };
            assert!(settings.schedule_after(0, &no_asks).is_empty(), "{fault:?}");
        }
    }

    #[test]
    #[should_panic(expected = "fault=trap")]
    fn trap_panics() {
        let settings = FaultyScheduling {
            fault: Fault::Trap,
            ..FaultyScheduling::default()
        };
        settings.schedule_after(0, &cluster());
    }

    #[test]
    fn the_fault_starts_after_counted_calls_since_configure() {
        let mut policy = configure_with::<FaultyScheduling>(
            PolicyKind::Scheduling,
            &[("fault", "over-pending"), ("after", "1")],
        )
        .unwrap();
        let snapshot = cluster();
        assert_eq!(policy.schedule(&snapshot), first_fit(&snapshot));
        assert_eq!(policy.schedule(&snapshot).triples(), [(0, 0, 7)]);
        assert_eq!(policy.calls, 2);
    }

    #[test]
    fn parameters_choose_the_fault() {
        type Pairs = &'static [(&'static str, &'static str)];
        // (params, settings or a word the refusal must contain)
        let cases: [(Pairs, Result<FaultyScheduling, &str>); 6] = [
            (&[], Ok(FaultyScheduling::default())),
            (
                &[("fault", "ghost-node"), ("after", "2")],
                Ok(FaultyScheduling {
                    fault: Fault::GhostNode,
                    after: 2,
                    calls: 0,
                }),
            ),
            (
                &[("fault", "over-allocate")],
                Ok(FaultyScheduling {
                    fault: Fault::OverAllocate,
                    ..FaultyScheduling::default()
                }),
            ),
            (&[("fault", "refuse")], Err("refuse")),
            (&[("after", "1.5")], Err("1.5")),
            (&[("price.base.general", "1")], Err("price.base.general")),
        ];
        for (pairs, expected) in cases {
            match (
                configure_with::<FaultyScheduling>(PolicyKind::Scheduling, pairs),
                expected,
            ) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{pairs:?}"),
                (Err(message), Err(word)) => {
                    assert!(message.contains(word), "{pairs:?}: {message:?}")
                }
                (got, want) => panic!("{pairs:?}: got {got:?}, want {want:?}"),
            }
        }
    }
}
