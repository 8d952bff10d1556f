//! Finding a node with room, without scanning every node per container.

use crate::cluster::Res;

/// The nodes' free room as the leaves of a complete binary tree whose inner
/// entries hold the per-resource maximum of the two below. A subtree whose
/// maximum does not cover a container has no node that does, so the
/// first-fit search skips it. The maxima of one entry may come from different
/// nodes, so a search can still enter a subtree in vain and back out; with
/// the few node shapes of real clusters that is rare.
#[derive(Debug, Clone)]
pub(crate) struct NodeRoom {
    /// Real nodes; leaves from here to `width` are empty padding.
    count: usize,
    /// Leaves (a power of two). Entry 1 is the top, entry `width + n` node n.
    width: usize,
    max: Vec<Res>,
}

impl NodeRoom {
    pub fn new(free: Vec<Res>) -> NodeRoom {
        let count = free.len();
        let width = count.next_power_of_two();
        let mut max = vec![Res::ZERO; 2 * width];
        max[width..width + count].copy_from_slice(&free);
        for i in (1..width).rev() {
            max[i] = max[2 * i].max(max[2 * i + 1]);
        }
        NodeRoom { count, width, max }
    }

    pub fn room(&self, node: usize) -> Res {
        self.max[self.width + node]
    }

    pub fn set(&mut self, node: usize, room: Res) {
        let mut i = self.width + node;
        self.max[i] = room;
        while i > 1 {
            i /= 2;
            let merged = self.max[2 * i].max(self.max[2 * i + 1]);
            if self.max[i] == merged {
                // Nothing above changes either.
                break;
            }
            self.max[i] = merged;
        }
    }

    /// The lowest-indexed node with room for one container of `size`.
    pub fn first_fit(&self, size: Res) -> Option<usize> {
        if self.count == 0 {
            return None;
        }
        // Depth-first, left before right, with an explicit stack of entries
        // still to try; a subtree that cannot hold `size` is never entered.
        let mut stack = [0usize; 64];
        let mut top = 0;
        stack[top] = 1;
        top += 1;
        while top > 0 {
            top -= 1;
            let mut i = stack[top];
            loop {
                if !self.max[i].covers(size) {
                    break;
                }
                if i >= self.width {
                    let node = i - self.width;
                    // Padding is empty, but an all-zero size still fits it.
                    if node < self.count {
                        return Some(node);
                    }
                    break;
                }
                // Try the left child now, the right one if that fails.
                stack[top] = 2 * i + 1;
                top += 1;
                i *= 2;
            }
        }
        None
    }
}

/// Container sizes that found no node this round. Room only shrinks during
/// a round, so neither they nor any size at least as large in every resource
/// will find one later: checking here first spares a full cluster a search
/// per ask, and a failed search may visit many nodes.
#[derive(Debug, Clone, Default)]
pub(crate) struct NoRoom {
    /// The smallest sizes known not to fit; none covers another.
    smallest: Vec<Res>,
}

impl NoRoom {
    /// Enough for the few container shapes clusters run; the check is linear.
    const KEEP: usize = 32;

    pub fn rules_out(&self, size: Res) -> bool {
        self.smallest.iter().any(|&known| size.covers(known))
    }

    pub fn remember(&mut self, size: Res) {
        self.smallest.retain(|&known| !known.covers(size));
        if self.smallest.len() < Self::KEEP {
            self.smallest.push(size);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn room(rows: &[(u64, u64, u64)]) -> NodeRoom {
        NodeRoom::new(rows.iter().map(|&(m, v, g)| Res::new(m, v, g)).collect())
    }

    #[test]
    fn first_fit_is_the_lowest_node_with_room() {
        // (nodes, size, first fit)
        type Case = (&'static [(u64, u64, u64)], (u64, u64, u64), Option<usize>);
        let cases: &[Case] = &[
            (&[(1024, 1, 0), (4096, 4, 0)], (2048, 1, 0), Some(1)),
            (&[(4096, 4, 0), (4096, 4, 0)], (2048, 1, 0), Some(0)),
            // Maxima from different nodes: (8192, 1) and (1024, 8) cover
            // (2048, 2) together but neither alone; node 4 does.
            (
                &[
                    (8192, 1, 0),
                    (1024, 8, 0),
                    (0, 0, 0),
                    (0, 0, 0),
                    (2048, 2, 0),
                ],
                (2048, 2, 0),
                Some(4),
            ),
            (&[(1024, 1, 0)], (1024, 1, 1), None),
            (&[], (0, 0, 0), None),
            (&[(0, 0, 0), (0, 0, 0), (0, 0, 0)], (0, 0, 0), Some(0)),
        ];
        for &(nodes, (m, v, g), expected) in cases {
            assert_eq!(
                room(nodes).first_fit(Res::new(m, v, g)),
                expected,
                "{nodes:?}"
            );
        }
    }

    #[test]
    fn updates_move_the_first_fit() {
        let mut nodes = room(&[(2048, 2, 0), (2048, 2, 0), (2048, 2, 0)]);
        let size = Res::new(1024, 1, 0);
        nodes.set(0, Res::ZERO);
        assert_eq!(nodes.first_fit(size), Some(1));
        nodes.set(1, Res::new(512, 2, 0));
        assert_eq!(nodes.first_fit(size), Some(2));
        nodes.set(2, Res::ZERO);
        assert_eq!(nodes.first_fit(size), None);
        nodes.set(0, Res::new(1024, 1, 0));
        assert_eq!(nodes.first_fit(size), Some(0));
        assert_eq!(nodes.room(0), Res::new(1024, 1, 0));
    }

    #[test]
    fn sizes_that_found_no_room_rule_out_larger_ones() {
        let mut none = NoRoom::default();
        none.remember(Res::new(4096, 2, 0));
        none.remember(Res::new(1024, 8, 0));
        // (size, ruled out?)
        let cases = [
            (Res::new(4096, 2, 0), true),
            (Res::new(8192, 4, 1), true),
            (Res::new(1024, 9, 0), true),
            (Res::new(2048, 2, 0), false),
            (Res::new(4096, 1, 0), false),
        ];
        for (size, ruled_out) in cases {
            assert_eq!(none.rules_out(size), ruled_out, "{size:?}");
        }
        none.remember(Res::new(1024, 1, 0));
        assert_eq!(none.smallest, [Res::new(1024, 1, 0)]);
    }
}
