//! The leader's lease on PostgreSQL: one row (`weft_leader`) with a holder,
//! an epoch and an expiry computed by the database's clock (so servers'
//! clocks may disagree). Taking it bumps the epoch — the fencing token every
//! write transaction checks (`store/`) — and waits for in-flight writes of
//! the former holder, which hold the row under a shared lock.
//!
//! The lease is read and written on a connection of its own, so a busy or
//! stuck write path cannot delay a renewal (and the reverse).

use crate::store::{Fence, Store, StoreError, Value};

/// The database's clock, in ms since the Unix epoch.
const NOW_MS: &str = "(extract(epoch from clock_timestamp()) * 1000)::bigint";

/// Who holds the lease, as read from the database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseHolder {
    /// The holding server as it names itself (its URL first); empty if no
    /// server ever took the lease.
    pub holder: String,
    /// The epoch of the latest taking of the lease: the fencing token.
    pub epoch: i64,
    /// Whether the lease is still valid by the database's clock.
    pub valid: bool,
}

/// The lease, over a dedicated connection.
#[derive(Debug, Clone)]
pub struct Lease {
    store: Store,
    ttl_ms: u64,
}

impl Lease {
    /// The lease through `store` (a connection for the lease alone), lasting
    /// `ttl_ms` ms (`weft.ha.lease-ms`) from each take or renewal.
    pub fn new(store: Store, ttl_ms: u64) -> Lease {
        Lease { store, ttl_ms }
    }

    /// How long the lease lasts from each take or renewal, in ms
    /// (`weft.ha.lease-ms`).
    pub fn ttl_ms(&self) -> u64 {
        self.ttl_ms
    }

    /// How many times its lost session was replaced.
    pub fn reconnects(&self) -> u64 {
        self.store.reconnects()
    }

    /// Takes the lease for `holder` if nobody holds a valid one: the new
    /// epoch, or `None` if another server holds it.
    pub fn try_acquire(&self, holder: &str) -> Result<Option<Fence>, StoreError> {
        let sql = format!(
            "UPDATE weft_leader SET holder = ?1, epoch = epoch + 1, expires_at_ms = {NOW_MS} + ?2
             WHERE id = 1 AND (expires_at_ms < {NOW_MS} OR holder = '')
             RETURNING epoch"
        );
        let rows = self
            .store
            .query(&sql, &[holder.into(), self.ttl_ms.into()])?;
        Ok(rows
            .first()
            .and_then(|row| row.first())
            .and_then(Value::as_i64)
            .map(|epoch| Fence {
                epoch,
                holder: holder.to_string(),
            }))
    }

    /// Extends the lease `fence` holds by the TTL from now; false if it is
    /// no longer this holder's (expired and taken, or resigned).
    pub fn renew(&self, fence: &Fence) -> Result<bool, StoreError> {
        let sql = format!(
            "UPDATE weft_leader SET expires_at_ms = {NOW_MS} + ?3
             WHERE id = 1 AND epoch = ?1 AND holder = ?2 AND expires_at_ms >= {NOW_MS}
             RETURNING epoch"
        );
        let rows = self.store.query(
            &sql,
            &[
                fence.epoch.into(),
                fence.holder.as_str().into(),
                self.ttl_ms.into(),
            ],
        )?;
        Ok(!rows.is_empty())
    }

    /// Gives the lease up at once (a clean stop), so a standby need not
    /// wait for it to expire.
    pub fn resign(&self, fence: &Fence) -> Result<(), StoreError> {
        self.store.query(
            "UPDATE weft_leader SET expires_at_ms = 0 WHERE id = 1 AND epoch = ?1 AND holder = ?2",
            &[fence.epoch.into(), fence.holder.as_str().into()],
        )?;
        Ok(())
    }

    /// Who holds the lease now.
    pub fn holder(&self) -> Result<LeaseHolder, StoreError> {
        let sql = format!(
            "SELECT holder, epoch, CASE WHEN expires_at_ms >= {NOW_MS} THEN 1 ELSE 0 END
             FROM weft_leader WHERE id = 1"
        );
        let rows = self.store.query(&sql, &[])?;
        match rows.into_iter().next().map(<[Value; 3]>::try_from) {
            Some(Ok([Value::Text(holder), epoch, valid])) => Ok(LeaseHolder {
                holder,
                epoch: epoch.as_i64().unwrap_or(0),
                valid: valid.as_i64() == Some(1),
            }),
            _ => Err(StoreError::Corrupt {
                target: self.store.target().to_string(),
                what: "the lease row".into(),
                why: "missing or malformed".into(),
            }),
        }
    }
}
