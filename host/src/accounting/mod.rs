//! Accounting (seed 002 §6): one record per ended app — who ran it, where,
//! what its containers held for how long, how it ended, what it was
//! charged — kept in the store for third-party accounting systems
//! (`weft.accounting.enabled`). The cluster makes each record as its app
//! ends (`cluster/accounting_record.rs`); `export.rs` reads records back
//! and writes them as CSV or JSON lines.
//!
//! An app's record is written when it ends, in the commit that ends it,
//! and is final once every charge of its containers is in: usually in that
//! same commit; if pricing failed, once a later flush priced what they owe.
//! Until then it is pending, stored as such (a restart takes it up again)
//! and not exported, so an export never holds a record whose credits will
//! still change. Final records are numbered in the order they became
//! final, and exports page by that number: a record that comes late (an
//! end an agent reported late) is never behind a cursor already given.

pub mod export;

use std::collections::BTreeMap;

use crate::cluster::AccountingRecord;
use crate::store::{Batch, Store, StoreError};

/// The records of ended apps whose charges may still come in, by app id.
/// The resource manager owns it: apps end in, charges come from the quota
/// service, and what changed goes into each commit.
#[derive(Debug, Default)]
pub struct Accounting {
    enabled: bool,
    pending: BTreeMap<String, AccountingRecord>,
    /// Pending records changed since the last commit (written as pending).
    changed: Vec<String>,
    /// Records final since the last commit.
    finished: Vec<AccountingRecord>,
    /// The number of the last record made final: exports page by it.
    last_seq: u64,
}

impl Accounting {
    /// Accounting on or off (`weft.accounting.enabled`); off, it keeps
    /// nothing.
    pub fn new(enabled: bool) -> Accounting {
        Accounting {
            enabled,
            ..Accounting::default()
        }
    }

    /// Takes up the pending records `store` holds (a restart).
    pub fn restore(&mut self, store: &Store) -> Result<(), StoreError> {
        if !self.enabled {
            return Ok(());
        }
        for record in export::pending(store)? {
            self.pending.insert(record.app_id.clone(), record);
        }
        self.last_seq = store.last_accounting_seq()?;
        Ok(())
    }

    /// An app ended: its record is pending until its charges are in.
    pub fn app_ended(&mut self, record: AccountingRecord) {
        if !self.enabled {
            return;
        }
        self.changed.push(record.app_id.clone());
        self.pending.insert(record.app_id.clone(), record);
    }

    /// Credits charged to `app` came in.
    pub fn charged(&mut self, app: &str, credits: f64) {
        if let Some(record) = self.pending.get_mut(app) {
            record.credits += credits;
            self.changed.push(app.to_string());
        }
    }

    /// Nothing is owed any more: every pending record is final.
    pub fn nothing_owed(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        self.finished.extend(pending.into_values());
    }

    /// Adds what changed since the last call to `batch`.
    pub fn take_changes(&mut self, batch: &mut Batch) {
        let changed = std::mem::take(&mut self.changed);
        for id in changed {
            if let Some(record) = self.pending.get(&id) {
                export::put(batch, record, None);
            }
        }
        for record in self.finished.drain(..) {
            self.last_seq += 1;
            export::put(batch, &record, Some(self.last_seq));
        }
    }

    /// Whether accounting is on (`weft.accounting.enabled`).
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// How many records wait for charges.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, credits: f64) -> AccountingRecord {
        AccountingRecord {
            app_id: id.into(),
            app_name: "n".into(),
            user: "u".into(),
            queue: "default".into(),
            project: "p".into(),
            application_type: "YARN".into(),
            memory_seconds: 1,
            vcore_seconds: 1,
            gpu_seconds: 0,
            containers_run: 1,
            containers_failed: 0,
            submitted_time: 0,
            started_time: Some(1),
            finished_time: 2,
            final_status: "SUCCEEDED".into(),
            credits,
        }
    }

    #[test]
    fn a_record_is_final_once_nothing_is_owed_and_holds_every_charge() {
        let store = Store::in_memory();
        let mut accounting = Accounting::new(true);
        accounting.app_ended(record("a", 1.5));
        accounting.charged("a", 2.0);
        accounting.charged("other", 7.0);
        let mut batch = Batch::default();
        accounting.take_changes(&mut batch);
        store.commit(&batch).unwrap();
        assert!(
            export::query(&store, &export::Query::default())
                .unwrap()
                .records
                .is_empty()
        );
        assert_eq!(export::pending(&store).unwrap()[0].credits, 3.5);

        // A restart takes the pending record up again.
        let mut restarted = Accounting::new(true);
        restarted.restore(&store).unwrap();
        assert_eq!(restarted.pending(), 1);
        restarted.charged("a", 0.5);
        restarted.nothing_owed();
        let mut batch = Batch::default();
        restarted.take_changes(&mut batch);
        store.commit(&batch).unwrap();
        let page = export::query(&store, &export::Query::default()).unwrap();
        assert_eq!(page.records, vec![record("a", 4.0)]);
        assert!(export::pending(&store).unwrap().is_empty());
    }

    #[test]
    fn off_keeps_nothing() {
        let mut accounting = Accounting::new(false);
        accounting.app_ended(record("a", 1.0));
        accounting.nothing_owed();
        let mut batch = Batch::default();
        accounting.take_changes(&mut batch);
        assert!(batch.is_empty());
    }
}
