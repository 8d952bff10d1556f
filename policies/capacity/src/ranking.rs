//! The children of each parent queue still in the running, ranked by their
//! ordering key: the leader and the runner-up in constant time, a change of
//! key in `log(children)`. A binary min-heap per parent, with each queue's
//! slot in its parent's heap so that it can be found and moved.

use crate::cluster::QueueKey;

#[derive(Debug, Clone)]
pub(crate) struct Ranking {
    /// Per parent, a min-heap of its children's keys (the key carries the
    /// child's index).
    heaps: Vec<Vec<QueueKey>>,
    /// Per queue, its index in its parent's heap, or `NONE`.
    slot: Vec<usize>,
}

const NONE: usize = usize::MAX;

impl Ranking {
    pub(crate) fn new(queues: usize) -> Ranking {
        Ranking {
            heaps: vec![Vec::new(); queues],
            slot: vec![NONE; queues],
        }
    }

    pub(crate) fn leader(&self, parent: usize) -> Option<QueueKey> {
        self.heaps[parent].first().copied()
    }

    /// The least key after the leader's.
    pub(crate) fn runner_up(&self, parent: usize) -> Option<QueueKey> {
        let heap = &self.heaps[parent];
        match (heap.get(1), heap.get(2)) {
            (Some(&a), Some(&b)) => Some(a.min(b)),
            (a, _) => a.copied(),
        }
    }

    pub(crate) fn is_empty(&self, parent: usize) -> bool {
        self.heaps[parent].is_empty()
    }

    /// Adds a child (not already ranked) under `parent`.
    pub(crate) fn insert(&mut self, parent: usize, key: QueueKey) {
        let i = self.heaps[parent].len();
        self.heaps[parent].push(key);
        self.slot[key.queue()] = i;
        self.up(parent, i);
    }

    /// Takes child `queue` out of `parent`'s ranking, if it is there.
    pub(crate) fn remove(&mut self, parent: usize, queue: usize) {
        let i = self.slot[queue];
        if i == NONE {
            return;
        }
        self.slot[queue] = NONE;
        let heap = &mut self.heaps[parent];
        let last = heap.pop().expect("a ranked queue is in the heap");
        if i < heap.len() {
            heap[i] = last;
            self.slot[last.queue()] = i;
            self.down(parent, i);
            self.up(parent, self.slot[last.queue()]);
        }
    }

    /// Gives ranked child `key.queue()` of `parent` its new key.
    pub(crate) fn update(&mut self, parent: usize, key: QueueKey) {
        let i = self.slot[key.queue()];
        if i == NONE {
            return;
        }
        let old = std::mem::replace(&mut self.heaps[parent][i], key);
        if key < old {
            self.up(parent, i);
        } else {
            self.down(parent, i);
        }
    }

    // Both sifts move a hole instead of swapping: each step writes one key
    // and one slot, and the moving key is placed once at the end.

    fn up(&mut self, parent: usize, mut i: usize) {
        let heap = &mut self.heaps[parent];
        let key = heap[i];
        while i > 0 {
            let above = (i - 1) / 2;
            if heap[above] <= key {
                break;
            }
            heap[i] = heap[above];
            self.slot[heap[i].queue()] = i;
            i = above;
        }
        heap[i] = key;
        self.slot[key.queue()] = i;
    }

    fn down(&mut self, parent: usize, mut i: usize) {
        let heap = &mut self.heaps[parent];
        let len = heap.len();
        let key = heap[i];
        loop {
            let left = 2 * i + 1;
            if left >= len {
                break;
            }
            let right = left + 1;
            let least = if right < len && heap[right] < heap[left] {
                right
            } else {
                left
            };
            if heap[least] >= key {
                break;
            }
            heap[i] = heap[least];
            self.slot[heap[i].queue()] = i;
            i = least;
        }
        heap[i] = key;
        self.slot[key.queue()] = i;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::testing::Lcg;

    #[test]
    fn leader_and_runner_up_match_a_sorted_set() {
        let mut rng = Lcg(9);
        for _ in 0..200 {
            let children = 1 + rng.below(20) as usize;
            // Queue 0 is the one parent; children are 1..=children.
            let mut ranking = Ranking::new(children + 1);
            let mut set: BTreeSet<QueueKey> = BTreeSet::new();
            let mut key = vec![None; children + 1];
            for _ in 0..300 {
                let q = 1 + rng.below(children as u64) as usize;
                let new = QueueKey::new(rng.below(2) as u8, rng.below(6), q as u32);
                match (key[q], rng.below(3)) {
                    (None, _) => {
                        ranking.insert(0, new);
                        set.insert(new);
                        key[q] = Some(new);
                    }
                    (Some(old), 0) => {
                        ranking.remove(0, q);
                        set.remove(&old);
                        key[q] = None;
                    }
                    (Some(old), _) => {
                        ranking.update(0, new);
                        set.remove(&old);
                        set.insert(new);
                        key[q] = Some(new);
                    }
                }
                let mut sorted = set.iter().copied();
                assert_eq!(ranking.leader(0), sorted.next());
                assert_eq!(ranking.runner_up(0), sorted.next());
                assert_eq!(ranking.is_empty(0), set.is_empty());
            }
        }
    }
}
