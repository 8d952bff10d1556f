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
//! which would not end). The WebAssembly glue is in `component.rs` and keeps
//! the call count.

#[cfg(target_arch = "wasm32")]
mod component;

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

/// The policy's settings, filled in by `configure`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FaultyScheduling {
    pub fault: Fault,
    /// Successful `schedule` calls before the fault starts.
    pub after: u64,
}

/// The nodes' free room, as columns like the WIT `nodes` record.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Nodes {
    pub free_memory_mb: Vec<u64>,
    pub free_vcores: Vec<u64>,
    pub free_gpus: Vec<u64>,
}

/// Outstanding asks, as columns like the WIT `asks` record.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Asks {
    pub app: Vec<u32>,
    pub pending: Vec<u32>,
    pub memory_mb: Vec<u64>,
    pub vcores: Vec<u64>,
    pub gpus: Vec<u64>,
}

/// The result, as `(ask, node, count)` columns like the WIT `placements` record.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Placements {
    pub ask: Vec<u32>,
    pub node: Vec<u32>,
    pub count: Vec<u32>,
}

impl Placements {
    fn push(&mut self, ask: usize, node: usize, count: u32) {
        // Indices come from (or are one past) u32 columns; a list of 2³²
        // entries cannot cross the component boundary anyway.
        self.ask.push(ask as u32);
        self.node.push(node as u32);
        self.count.push(count);
    }

    /// The entries as `(ask, node, count)` triples.
    pub fn triples(&self) -> Vec<(u32, u32, u32)> {
        self.ask
            .iter()
            .zip(&self.node)
            .zip(&self.count)
            .map(|((&ask, &node), &count)| (ask, node, count))
            .collect()
    }
}

impl FaultyScheduling {
    /// Builds the settings from `key=value` parameters; unknown keys, fault
    /// names and counts are refused like a real policy would.
    pub fn from_params(params: &[(String, String)]) -> Result<Self, String> {
        let mut settings = FaultyScheduling::default();
        for (key, value) in params {
            match key.as_str() {
                "fault" => {
                    settings.fault = Fault::NAMES
                        .iter()
                        .find(|(name, _)| *name == value.trim())
                        .map(|&(_, fault)| fault)
                        .ok_or_else(|| format!("faulty-scheduling: no fault called {value:?}"))?;
                }
                "after" => {
                    settings.after = value.trim().parse().map_err(|_| {
                        format!("faulty-scheduling: after must be a count of calls, not {value:?}")
                    })?;
                }
                _ => {
                    return Err(format!(
                        "faulty-scheduling has no parameter {key:?} (given {key}={value})"
                    ));
                }
            }
        }
        Ok(settings)
    }

    /// One `schedule` call, `calls_before` calls after the last `configure`.
    pub fn schedule(&self, calls_before: u64, nodes: &Nodes, asks: &Asks) -> Placements {
        let fault = if calls_before >= self.after {
            self.fault
        } else {
            Fault::None
        };
        let node_count = nodes.free_memory_mb.len();
        let ask_count = asks.pending.len();
        let mut placements = Placements::default();
        match fault {
            Fault::None => placements = first_fit(nodes, asks),
            Fault::GhostNode if ask_count > 0 => {
                placements = first_fit(nodes, asks);
                placements.push(0, node_count, 1);
            }
            Fault::GhostAsk => {
                placements = first_fit(nodes, asks);
                placements.push(ask_count, 0, 1);
            }
            Fault::OverAllocate if ask_count > 0 => {
                // Without nodes, node 0 is a ghost too; the count is still at least 1.
                let room = if node_count > 0 {
                    room(nodes, 0).fits(size(asks, 0))
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

/// One container's size, or a node's free room.
#[derive(Debug, Clone, Copy)]
struct Resources {
    memory_mb: u64,
    vcores: u64,
    gpus: u64,
}

impl Resources {
    /// How many containers of `size` fit; a resource of size 0 sets no limit.
    fn fits(self, size: Resources) -> u64 {
        [
            self.memory_mb.checked_div(size.memory_mb),
            self.vcores.checked_div(size.vcores),
            self.gpus.checked_div(size.gpus),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(u64::MAX)
    }
}

fn room(nodes: &Nodes, node: usize) -> Resources {
    Resources {
        memory_mb: nodes.free_memory_mb[node],
        vcores: nodes.free_vcores[node],
        gpus: nodes.free_gpus[node],
    }
}

fn size(asks: &Asks, ask: usize) -> Resources {
    Resources {
        memory_mb: asks.memory_mb[ask],
        vcores: asks.vcores[ask],
        gpus: asks.gpus[ask],
    }
}

/// The well-behaved answer: apps in submission order, each ask first fit,
/// by a plain scan (a test guest needs to be obviously right, not fast).
/// The snapshot is trusted to have columns of equal length.
pub fn first_fit(nodes: &Nodes, asks: &Asks) -> Placements {
    let mut free: Vec<Resources> = (0..nodes.free_memory_mb.len())
        .map(|node| room(nodes, node))
        .collect();
    let mut queue: Vec<usize> = (0..asks.pending.len()).collect();
    queue.sort_by_key(|&ask| asks.app[ask]);
    let mut placements = Placements::default();
    for ask in queue {
        let size = size(asks, ask);
        let mut pending = asks.pending[ask];
        for (node, room) in free.iter_mut().enumerate() {
            if pending == 0 {
                break;
            }
            let count = room.fits(size).min(u64::from(pending)) as u32;
            if count > 0 {
                room.memory_mb -= size.memory_mb * u64::from(count);
                room.vcores -= size.vcores * u64::from(count);
                room.gpus -= size.gpus * u64::from(count);
                placements.push(ask, node, count);
                pending -= count;
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

    fn params(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// Two nodes of 4 GB, 4 vcores; app 1's ask of 6 × 1 GB, then app 0's
    /// ask of 1 × 2 GB (served first: it was submitted first).
    fn cluster() -> (Nodes, Asks) {
        let nodes = Nodes {
            free_memory_mb: vec![4096, 4096],
            free_vcores: vec![4, 4],
            free_gpus: vec![0, 0],
        };
        let asks = Asks {
            app: vec![1, 0],
            pending: vec![6, 1],
            memory_mb: vec![1024, 2048],
            vcores: vec![1, 1],
            gpus: vec![0, 0],
        };
        (nodes, asks)
    }

    #[test]
    fn each_fault_breaks_its_rule() {
        let (nodes, asks) = cluster();
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
            let settings = FaultyScheduling { fault, after };
            let placements = settings.schedule(calls_before, &nodes, &asks);
            assert_eq!(
                placements.triples(),
                expected,
                "{fault:?} after {after} at {calls_before}"
            );
        }
    }

    #[test]
    fn over_allocate_exceeds_room_even_when_little_is_pending() {
        let (nodes, mut asks) = cluster();
        asks.pending[0] = 2; // fits on node 0, so the count must be raised to 5
        let settings = FaultyScheduling {
            fault: Fault::OverAllocate,
            after: 0,
        };
        assert_eq!(settings.schedule(0, &nodes, &asks).triples(), [(0, 0, 5)]);
    }

    #[test]
    fn faults_naming_ask_0_place_nothing_without_asks() {
        let (nodes, _) = cluster();
        for fault in [Fault::GhostNode, Fault::OverAllocate, Fault::OverPending] {
            let settings = FaultyScheduling { fault, after: 0 };
            assert!(
                settings
                    .schedule(0, &nodes, &Asks::default())
                    .triples()
                    .is_empty(),
                "{fault:?}"
            );
        }
    }

    #[test]
    #[should_panic(expected = "fault=trap")]
    fn trap_panics() {
        let (nodes, asks) = cluster();
        let settings = FaultyScheduling {
            fault: Fault::Trap,
            after: 0,
        };
        settings.schedule(0, &nodes, &asks);
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
                }),
            ),
            (
                &[("fault", "over-allocate")],
                Ok(FaultyScheduling {
                    fault: Fault::OverAllocate,
                    after: 0,
                }),
            ),
            (&[("fault", "refuse")], Err("refuse")),
            (&[("after", "1.5")], Err("1.5")),
            (&[("price.base.general", "1")], Err("price.base.general")),
        ];
        for (pairs, expected) in cases {
            match (FaultyScheduling::from_params(&params(pairs)), expected) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{pairs:?}"),
                (Err(message), Err(word)) => {
                    assert!(message.contains(word), "{pairs:?}: {message:?}")
                }
                (got, want) => panic!("{pairs:?}: got {got:?}, want {want:?}"),
            }
        }
    }
}
