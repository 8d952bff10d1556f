//! The agent's queue of opportunistic containers (YARN's NodeManager
//! ContainerScheduler): launch orders that wait for room, started in the
//! order they came as what runs leaves room for them within the resources
//! the node declared. Kept in memory only: an agent that restarts or
//! registers again holds none, and the resource manager places them again.

use std::collections::{HashSet, VecDeque};

use crate::protocol::node::LaunchOrder;
use crate::resources::Resources;

/// Launch orders waiting for room, first come first started.
#[derive(Debug, Default)]
pub struct OpportunisticQueue {
    waiting: VecDeque<LaunchOrder>,
    ids: HashSet<String>,
}

/// Why an order was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// It waits already (its order was repeated): nothing to do.
    Queued,
    /// The queue holds [`crate::limits::MAX_OPPORTUNISTIC_QUEUE`] already.
    Full,
}

impl OpportunisticQueue {
    /// Queues `order` at the back.
    pub fn push(&mut self, order: &LaunchOrder) -> Result<(), Refused> {
        if self.ids.contains(&order.container_id) {
            return Err(Refused::Queued);
        }
        if self.waiting.len() >= crate::limits::MAX_OPPORTUNISTIC_QUEUE {
            return Err(Refused::Full);
        }
        self.ids.insert(order.container_id.clone());
        self.waiting.push_back(order.clone());
        Ok(())
    }

    /// Takes container `id` out of the queue; whether it was in it.
    pub fn remove(&mut self, id: &str) -> bool {
        if !self.ids.remove(id) {
            return false;
        }
        self.waiting.retain(|order| order.container_id != id);
        true
    }

    /// Whether container `id` waits.
    pub fn contains(&self, id: &str) -> bool {
        self.ids.contains(id)
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// The ids of the containers waiting, in order.
    pub fn ids(&self) -> Vec<String> {
        self.waiting
            .iter()
            .map(|order| order.container_id.clone())
            .collect()
    }

    /// Empties the queue, giving back the ids that waited.
    pub fn clear(&mut self) -> Vec<String> {
        self.ids.clear();
        self.waiting
            .drain(..)
            .map(|order| order.container_id)
            .collect()
    }

    /// The orders to start now, given `free` room: from the front, as
    /// long as the next fits in what the ones before it left. The first
    /// that does not fit waits, and so do those behind it, so a large
    /// container is not passed over for ever by small ones.
    pub fn take_startable(&mut self, mut free: Resources) -> Vec<LaunchOrder> {
        let mut start = Vec::new();
        while let Some(order) = self.waiting.front() {
            let size = Resources::new(order.memory_mb, order.vcores, order.gpus);
            if !size.fits_in(&free) {
                break;
            }
            free = free.saturating_sub(&size);
            let order = self.waiting.pop_front().expect("looked at above");
            self.ids.remove(&order.container_id);
            start.push(order);
        }
        start
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::node::ContainerCommand;

    fn order(id: &str, memory_mb: u64, vcores: u32) -> LaunchOrder {
        LaunchOrder {
            container_id: id.into(),
            app_id: "application_1_0001".into(),
            user: "alice".into(),
            command: ContainerCommand::Argv(vec!["true".into()]),
            env: Default::default(),
            memory_mb,
            vcores,
            gpus: 0,
            yarn: None,
            held_for: None,
            opportunistic: true,
        }
    }

    #[test]
    fn orders_start_in_turn_within_the_room_given_and_never_beyond_it() {
        let mut queue = OpportunisticQueue::default();
        for (id, vcores) in [("a", 1), ("b", 2), ("c", 1)] {
            queue.push(&order(id, 64, vcores)).unwrap();
        }
        assert_eq!(queue.push(&order("a", 64, 1)), Err(Refused::Queued));
        // No room: nothing starts.
        assert!(queue.take_startable(Resources::new(1024, 0, 0)).is_empty());
        // Room for a, not for b after it: c waits behind b.
        let started = queue.take_startable(Resources::new(1024, 2, 0));
        assert_eq!(
            started
                .iter()
                .map(|o| o.container_id.as_str())
                .collect::<Vec<_>>(),
            ["a"]
        );
        assert_eq!(queue.ids(), ["b", "c"]);
        let started = queue.take_startable(Resources::new(1024, 3, 0));
        assert_eq!(started.len(), 2);
        assert!(queue.is_empty());
    }

    #[test]
    fn a_removed_or_cleared_order_never_starts_and_the_queue_is_bounded() {
        let mut queue = OpportunisticQueue::default();
        queue.push(&order("a", 64, 1)).unwrap();
        queue.push(&order("b", 64, 1)).unwrap();
        assert!(queue.remove("a"));
        assert!(!queue.remove("a"));
        assert_eq!(queue.clear(), ["b"]);
        assert!(
            queue
                .take_startable(Resources::new(1 << 20, 1000, 0))
                .is_empty()
        );
        for i in 0..crate::limits::MAX_OPPORTUNISTIC_QUEUE {
            queue.push(&order(&format!("c{i}"), 1, 1)).unwrap();
        }
        assert_eq!(queue.push(&order("over", 1, 1)), Err(Refused::Full));
    }
}
