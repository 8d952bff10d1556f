//! Finding a node with room without scanning every node per container:
//! [`FreeNodes`], a max tree over the nodes' free room, and [`NoRoom`], the
//! container sizes already known to find none this round.

use crate::resources::Resources;

/// The nodes' free room as the leaves of a complete binary tree whose inner
/// entries hold the per-resource maximum of the two below. A subtree whose
/// maximum does not cover a container has no node that does, so a search
/// skips it whole. The maxima of one entry may come from different nodes, so
/// a search can still enter a subtree in vain and back out; with the few
/// node shapes of real clusters that is rare.
#[derive(Debug, Clone)]
pub struct FreeNodes {
    /// Real nodes; leaves from here to `leaves` are empty padding.
    len: usize,
    /// Leaf count, a power of two. Entry 1 is the top, entry `leaves + n` node n.
    leaves: usize,
    room: Vec<Resources>,
}

impl FreeNodes {
    /// The index over `free`, node `n`'s room being the n-th item.
    pub fn new(free: impl ExactSizeIterator<Item = Resources>) -> FreeNodes {
        let len = free.len();
        let leaves = len.next_power_of_two().max(1);
        let mut room = vec![Resources::ZERO; 2 * leaves];
        for (slot, r) in room[leaves..].iter_mut().zip(free) {
            *slot = r;
        }
        for i in (1..leaves).rev() {
            room[i] = room[2 * i].max(room[2 * i + 1]);
        }
        FreeNodes { len, leaves, room }
    }

    /// The number of nodes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Node `node`'s room.
    #[inline]
    pub fn room(&self, node: usize) -> Resources {
        self.room[self.leaves + node]
    }

    /// Sets node `node`'s room.
    #[inline]
    pub fn set(&mut self, node: usize, room: Resources) {
        let mut i = self.leaves + node;
        self.room[i] = room;
        while i > 1 {
            i /= 2;
            let merged = self.room[2 * i].max(self.room[2 * i + 1]);
            if self.room[i] == merged {
                // Unchanged here, so unchanged all the way up.
                break;
            }
            self.room[i] = merged;
        }
    }

    /// Takes `count` containers of `size` from node `node`'s room (at most
    /// all of it).
    #[inline]
    pub fn take(&mut self, node: usize, size: Resources, count: u64) {
        self.set(node, self.room(node).minus(size.times(count)));
    }

    /// The lowest-indexed node with room for one container of `size`.
    pub fn first_fit(&self, size: Resources) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        // Depth-first from the top, left before right, with an explicit
        // stack of entries still to try; a subtree that cannot hold `size`
        // is never entered. (A loop, not recursion: this is the hottest
        // search of a scheduling round.)
        let mut stack = [0usize; usize::BITS as usize];
        let mut top = 0;
        stack[top] = 1;
        top += 1;
        while top > 0 {
            top -= 1;
            let mut i = stack[top];
            while self.room[i].covers(size) {
                if i >= self.leaves {
                    let node = i - self.leaves;
                    // Padding is empty, but an all-zero size still fits it.
                    if node < self.len {
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

    /// The lowest-indexed node from `from` on with room for `size`. Starts
    /// at that leaf, the usual answer when a node takes several containers
    /// in a row, and climbs only as far as the next subtree with room; a
    /// caller that knows no node before `from` has room (room only shrinks
    /// during a round) saves the search through them.
    #[inline]
    pub fn first_fit_from(&self, from: usize, size: Resources) -> Option<usize> {
        if from >= self.len {
            return None;
        }
        let mut i = self.leaves + from;
        if self.room[i].covers(size) {
            return Some(from);
        }
        loop {
            // Up to the nearest left child whose right sibling may have room…
            while i % 2 == 1 || !self.room[i + 1].covers(size) {
                i /= 2;
                if i <= 1 {
                    return None;
                }
            }
            // …and into that sibling, which covers only nodes after `from`.
            i += 1;
            if let Some(node) = self.leftmost(i, size) {
                return Some(node);
            }
        }
    }

    /// The highest-indexed node with room for one container of `size`.
    #[inline]
    pub fn last_fit(&self, size: Resources) -> Option<usize> {
        self.rightmost(1, size)
    }

    /// The leftmost real node with room for `size` under entry `i`.
    fn leftmost(&self, i: usize, size: Resources) -> Option<usize> {
        if !self.room[i].covers(size) {
            return None;
        }
        if i >= self.leaves {
            // Padding is empty, but an all-zero size still fits it.
            let node = i - self.leaves;
            return (node < self.len).then_some(node);
        }
        self.leftmost(2 * i, size)
            .or_else(|| self.leftmost(2 * i + 1, size))
    }

    /// The rightmost real node with room for `size` under entry `i`.
    fn rightmost(&self, i: usize, size: Resources) -> Option<usize> {
        if !self.room[i].covers(size) {
            return None;
        }
        if i >= self.leaves {
            let node = i - self.leaves;
            return (node < self.len).then_some(node);
        }
        self.rightmost(2 * i + 1, size)
            .or_else(|| self.rightmost(2 * i, size))
    }
}

/// Container sizes that found no node this round. Free room only shrinks
/// during a round, so neither they nor any size at least as large in every
/// resource will find one later: checking here first spares a full cluster
/// a search per ask, and a search that fails can visit every node.
#[derive(Debug, Clone, Default)]
pub struct NoRoom {
    /// The smallest sizes known not to fit; none covers another.
    smallest: Vec<Resources>,
}

impl NoRoom {
    /// Enough for the few container shapes real clusters run; more would
    /// make each check slower than the search it saves.
    pub const KEEP: usize = 64;

    /// Whether `size` is known to find no node.
    #[inline]
    pub fn rules_out(&self, size: Resources) -> bool {
        self.smallest.iter().any(|&known| size.covers(known))
    }

    /// Records that `size` found no node.
    pub fn remember(&mut self, size: Resources) {
        self.smallest.retain(|&known| !known.covers(size));
        if self.smallest.len() < Self::KEEP {
            self.smallest.push(size);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(memory_mb: u64, vcores: u64, gpus: u64) -> Resources {
        Resources::new(memory_mb, vcores, gpus)
    }

    fn nodes(rows: &[(u64, u64, u64)]) -> FreeNodes {
        FreeNodes::new(rows.iter().map(|&(m, v, g)| r(m, v, g)))
    }

    /// The lowest (or highest) node with room, by a plain scan.
    fn scan(rows: &[(u64, u64, u64)], size: Resources, last: bool) -> Option<usize> {
        let fits = |&n: &usize| {
            let (m, v, g) = rows[n];
            r(m, v, g).covers(size)
        };
        if last {
            (0..rows.len()).rev().find(fits)
        } else {
            (0..rows.len()).find(fits)
        }
    }

    #[test]
    fn first_and_last_fit_are_the_lowest_and_highest_node_with_room() {
        type Case = (
            &'static [(u64, u64, u64)],
            (u64, u64, u64),
            Option<usize>,
            Option<usize>,
        );
        // (nodes, size, first fit, last fit)
        let cases: &[Case] = &[
            (
                &[(1024, 1, 0), (4096, 4, 0)],
                (2048, 1, 0),
                Some(1),
                Some(1),
            ),
            (
                &[(4096, 4, 0), (4096, 4, 0)],
                (2048, 1, 0),
                Some(0),
                Some(1),
            ),
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
                Some(4),
            ),
            (&[(1024, 1, 0)], (1024, 1, 1), None, None),
            (&[], (0, 0, 0), None, None),
            // An all-zero size fits every real node, never the padding.
            (
                &[(0, 0, 0), (0, 0, 0), (0, 0, 0)],
                (0, 0, 0),
                Some(0),
                Some(2),
            ),
        ];
        for &(rows, (m, v, g), first, last) in cases {
            let index = nodes(rows);
            assert_eq!(index.first_fit(r(m, v, g)), first, "{rows:?}");
            assert_eq!(index.last_fit(r(m, v, g)), last, "{rows:?}");
        }
    }

    #[test]
    fn searches_agree_with_a_plain_scan() {
        // A small deterministic generator, so a failure reproduces.
        let mut state = 7u64;
        let mut below = |n: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % n
        };
        for _ in 0..500 {
            let count = below(20) as usize;
            let mut rows: Vec<(u64, u64, u64)> =
                (0..count).map(|_| (below(4), below(4), below(2))).collect();
            let mut index = nodes(&rows);
            for _ in 0..10 {
                let size = r(below(3), below(3), below(2));
                let from = below(count as u64 + 2) as usize;
                assert_eq!(index.first_fit(size), scan(&rows, size, false));
                assert_eq!(index.last_fit(size), scan(&rows, size, true));
                let from_on = (from..rows.len()).find(|&n| {
                    let (m, v, g) = rows[n];
                    r(m, v, g).covers(size)
                });
                assert_eq!(index.first_fit_from(from, size), from_on);
                if count > 0 {
                    let node = below(count as u64) as usize;
                    let room = (below(4), below(4), below(2));
                    rows[node] = room;
                    index.set(node, r(room.0, room.1, room.2));
                    assert_eq!(index.room(node), r(room.0, room.1, room.2));
                }
            }
        }
    }

    #[test]
    fn take_removes_containers_from_a_node() {
        let mut index = nodes(&[(4096, 4, 0), (2048, 2, 0)]);
        index.take(0, r(1024, 1, 0), 3);
        assert_eq!(index.room(0), r(1024, 1, 0));
        assert_eq!(index.first_fit(r(2048, 1, 0)), Some(1));
        assert_eq!(index.len(), 2);
        assert!(!index.is_empty());
    }

    #[test]
    fn sizes_that_found_no_room_rule_out_larger_ones() {
        let mut none = NoRoom::default();
        none.remember(r(4096, 2, 0));
        none.remember(r(1024, 8, 0));
        // (size, ruled out?)
        let cases = [
            (r(4096, 2, 0), true),
            (r(8192, 4, 1), true),
            (r(1024, 9, 0), true),
            (r(2048, 2, 0), false),
            (r(4096, 1, 0), false),
        ];
        for (size, ruled_out) in cases {
            assert_eq!(none.rules_out(size), ruled_out, "{size:?}");
        }
        // A smaller size replaces the larger ones it rules out anyway.
        none.remember(r(1024, 1, 0));
        assert_eq!(none.smallest, [r(1024, 1, 0)]);
    }

    #[test]
    fn the_cache_keeps_at_most_its_bound() {
        let mut none = NoRoom::default();
        // Sizes none of which covers another: memory up, vcores down.
        for i in 0..(NoRoom::KEEP as u64 + 10) {
            none.remember(r(i, 1000 - i, 0));
        }
        assert_eq!(none.smallest.len(), NoRoom::KEEP);
        assert!(none.rules_out(r(0, 1000, 0)));
        // Forgotten past the bound: not ruled out, so searched again.
        let late = NoRoom::KEEP as u64 + 5;
        assert!(!none.rules_out(r(late, 1000 - late, 0)));
    }
}
