//! The apps a cluster keeps, by submission number: every active one, and
//! the most recently ended ones up to a retention (YARN's
//! `yarn.resourcemanager.max-completed-applications`), so a server that runs
//! for months does not keep every app it ever ran.

use std::collections::{BTreeMap, VecDeque};
use std::ops::{Index, IndexMut};

use super::App;

/// The apps a cluster keeps, by submission number (0 for the first): every
/// active one and the most recently ended ones.
#[derive(Debug)]
pub struct AppTable {
    /// By submission number, 0 for the first app: an app's number never
    /// changes, so placements and snapshots can refer to it.
    apps: BTreeMap<usize, App>,
    /// The number the next app gets: how many were ever submitted.
    next: usize,
    /// Ended apps, oldest first, and how many of them to keep.
    ended: VecDeque<usize>,
    keep_ended: usize,
}

impl AppTable {
    /// A table that keeps the `keep_ended` most recently ended apps.
    pub fn new(keep_ended: usize) -> AppTable {
        AppTable {
            apps: BTreeMap::new(),
            next: 0,
            ended: VecDeque::new(),
            keep_ended,
        }
    }

    /// Adds an app under the next number, which it returns.
    pub(super) fn push(&mut self, app: App) -> usize {
        let number = self.next;
        self.apps.insert(number, app);
        self.next += 1;
        number
    }

    /// A number for an app submitted later (YARN's new-application): no
    /// other app will get it.
    pub(super) fn reserve(&mut self) -> usize {
        let number = self.next;
        self.next += 1;
        number
    }

    /// Adds an app under a number [`AppTable::reserve`] gave out.
    pub(super) fn push_reserved(&mut self, number: usize, app: App) {
        debug_assert!(number < self.next && !self.apps.contains_key(&number));
        self.apps.insert(number, app);
    }

    /// Puts back a stored app under its number (see `durable.rs`); later
    /// apps get higher numbers.
    pub(super) fn restore(&mut self, number: usize, app: App) {
        self.apps.insert(number, app);
        self.next = self.next.max(number.saturating_add(1));
    }

    /// The number the next app will get (how many were ever submitted).
    pub fn next_number(&self) -> usize {
        self.next
    }

    /// Records that app `number` ended; returns the apps let go to stay
    /// within the retention (their ids are forgotten by the caller).
    pub(super) fn ended(&mut self, number: usize) -> Vec<App> {
        self.ended.push_back(number);
        let mut dropped = Vec::new();
        while self.ended.len() > self.keep_ended {
            if let Some(app) = self.ended.pop_front().and_then(|n| self.apps.remove(&n)) {
                dropped.push(app);
            }
        }
        dropped
    }

    /// App number `number`, if it is kept (none once the retention let it
    /// go, or for a number only reserved).
    pub fn get(&self, number: usize) -> Option<&App> {
        self.apps.get(&number)
    }

    pub(super) fn get_mut(&mut self, number: usize) -> Option<&mut App> {
        self.apps.get_mut(&number)
    }

    /// The apps kept, in submission order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &App> {
        self.apps.values()
    }

    /// How many apps are kept (not how many were submitted).
    pub fn len(&self) -> usize {
        self.apps.len()
    }

    /// Whether no app is kept.
    pub fn is_empty(&self) -> bool {
        self.apps.is_empty()
    }
}

impl<'a> IntoIterator for &'a AppTable {
    type Item = &'a App;
    type IntoIter = std::collections::btree_map::Values<'a, usize, App>;

    fn into_iter(self) -> Self::IntoIter {
        self.apps.values()
    }
}

/// `table[n]`: app number `n`, which must be kept (active apps always are).
impl Index<usize> for AppTable {
    type Output = App;

    fn index(&self, number: usize) -> &App {
        &self.apps[&number]
    }
}

impl IndexMut<usize> for AppTable {
    fn index_mut(&mut self, number: usize) -> &mut App {
        self.apps
            .get_mut(&number)
            .unwrap_or_else(|| panic!("app {number} is not kept"))
    }
}
