//! Building the answer of `schedule`: the WIT `placements` record, with
//! methods to append to it and read it back.

use super::wit::Placements;

impl Placements {
    /// Appends `count` containers of ask `ask` on node `node`, adding them
    /// to the last entry when that is the same ask on the same node.
    ///
    /// `ask` and `node` are indices into a checked snapshot's lists, which
    /// hold at most `u32::MAX` entries, so they fit the WIT's `u32`.
    #[inline]
    pub fn push(&mut self, ask: usize, node: usize, count: u32) {
        let (ask, node) = (ask as u32, node as u32);
        if self.ask.last() == Some(&ask)
            && self.node.last() == Some(&node)
            && let Some(last) = self.count.last_mut()
        {
            *last = last.saturating_add(count);
            return;
        }
        self.ask.push(ask);
        self.node.push(node);
        self.count.push(count);
    }

    /// The number of entries.
    #[inline]
    pub fn len(&self) -> usize {
        self.ask.len()
    }

    /// Whether nothing was placed.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.ask.is_empty()
    }

    /// The entries as `(ask, node, count)` triples, for tests and logs.
    pub fn triples(&self) -> Vec<(u32, u32, u32)> {
        self.ask
            .iter()
            .zip(&self.node)
            .zip(&self.count)
            .map(|((&ask, &node), &count)| (ask, node, count))
            .collect()
    }

    /// How many containers the entries place in all.
    pub fn total(&self) -> u64 {
        self.count.iter().map(|&c| u64::from(c)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_placements_of_one_ask_on_one_node_coalesce() {
        let mut placements = Placements::default();
        assert!(placements.is_empty());
        // (ask, node, count) pushed in order
        for (ask, node, count) in [(0, 1, 2), (0, 1, 3), (0, 2, 1), (1, 2, 1), (0, 2, 4)] {
            placements.push(ask, node, count);
        }
        assert_eq!(
            placements.triples(),
            [(0, 1, 5), (0, 2, 1), (1, 2, 1), (0, 2, 4)]
        );
        assert_eq!(placements.len(), 4);
        assert_eq!(placements.total(), 11);
    }
}
