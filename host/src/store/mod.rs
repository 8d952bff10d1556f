//! The embedded SQLite store under the data directory: the quota ledger, the
//! price multiplicators and the reservations, so all survive a restart.
//!
//! Writes of one quota flush go in one transaction, so the ledger is never
//! half-applied; WAL mode keeps them cheap.

use std::path::Path;

use rusqlite::{Connection, params};

use crate::quota::{DailyKey, LedgerDelta, ProjectQuota};

#[derive(Debug, thiserror::Error)]
#[error("store {path}: {source}")]
pub struct StoreError {
    path: String,
    #[source]
    source: rusqlite::Error,
}

pub struct Store {
    path: String,
    connection: Connection,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS project_quota (
        project TEXT PRIMARY KEY,
        remaining REAL NOT NULL,
        total_used REAL NOT NULL
    );
    CREATE TABLE IF NOT EXISTS daily_usage (
        project TEXT NOT NULL,
        user TEXT NOT NULL,
        day TEXT NOT NULL,
        credits REAL NOT NULL,
        PRIMARY KEY (project, user, day)
    );
    CREATE TABLE IF NOT EXISTS price_multiplicator (
        resource TEXT PRIMARY KEY,
        value REAL NOT NULL
    );
    CREATE TABLE IF NOT EXISTS reservation (
        id TEXT PRIMARY KEY,
        queue TEXT NOT NULL,
        record TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS counter (
        name TEXT PRIMARY KEY,
        value INTEGER NOT NULL
    );
";

impl Store {
    /// Opens (creating if needed) `weft.db` in `data_dir`.
    pub fn open(data_dir: &Path) -> Result<Store, StoreError> {
        let path = data_dir.join("weft.db");
        let display = path.display().to_string();
        let wrap = |source| StoreError {
            path: display.clone(),
            source,
        };
        std::fs::create_dir_all(data_dir).map_err(|e| {
            wrap(rusqlite::Error::InvalidPath(
                format!("{}: {e}", data_dir.display()).into(),
            ))
        })?;
        let connection = Connection::open(&path).map_err(wrap)?;
        connection
            .pragma_update(None, "journal_mode", "WAL")
            .map_err(wrap)?;
        connection
            .pragma_update(None, "synchronous", "NORMAL")
            .map_err(wrap)?;
        Store::with_connection(display.clone(), connection)
    }

    /// A store that lives only as long as the process (replay, simulation).
    pub fn in_memory() -> Store {
        let connection =
            Connection::open_in_memory().expect("SQLite can always open an in-memory database");
        Store::with_connection(":memory:".into(), connection)
            .expect("the schema applies to an empty database")
    }

    fn with_connection(path: String, connection: Connection) -> Result<Store, StoreError> {
        connection
            .execute_batch(SCHEMA)
            .map_err(|source| StoreError {
                path: path.clone(),
                source,
            })?;
        Ok(Store { path, connection })
    }

    fn wrap(&self, source: rusqlite::Error) -> StoreError {
        StoreError {
            path: self.path.clone(),
            source,
        }
    }

    /// Applies one flush of charges in one transaction.
    pub fn apply(&mut self, delta: &LedgerDelta) -> Result<(), StoreError> {
        let tx = self.connection.transaction().map_err(|e| StoreError {
            path: self.path.clone(),
            source: e,
        })?;
        // Cached statements: a simulation flushes after every round, and
        // parsing the SQL each time cost more than running it.
        let result = (|| {
            let mut project_row = tx.prepare_cached(
                "INSERT INTO project_quota (project, remaining, total_used) VALUES (?1, ?2, ?3)
                 ON CONFLICT(project) DO UPDATE SET remaining = excluded.remaining, total_used = excluded.total_used",
            )?;
            for (project, quota) in &delta.projects {
                project_row.execute(params![project, quota.remaining, quota.total_used])?;
            }
            let mut daily_row = tx.prepare_cached(
                "INSERT INTO daily_usage (project, user, day, credits) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(project, user, day) DO UPDATE SET credits = excluded.credits",
            )?;
            for ((project, user, day), credits) in &delta.daily {
                daily_row.execute(params![project, user, day, credits])?;
            }
            Ok(())
        })();
        result.and_then(|()| tx.commit()).map_err(|e| self.wrap(e))
    }

    /// Saves one reservation (its record as JSON), replacing any under `id`,
    /// and the counter `counter` at `value`, in one transaction.
    pub fn save_reservation(
        &mut self,
        id: &str,
        queue: &str,
        record: &str,
        (counter, value): (&str, u64),
    ) -> Result<(), StoreError> {
        let tx = self.connection.transaction().map_err(|e| StoreError {
            path: self.path.clone(),
            source: e,
        })?;
        let result = tx
            .execute(
                "INSERT INTO reservation (id, queue, record) VALUES (?1, ?2, ?3)
                 ON CONFLICT(id) DO UPDATE SET queue = excluded.queue, record = excluded.record",
                params![id, queue, record],
            )
            .and_then(|_| {
                tx.execute(
                    "INSERT INTO counter (name, value) VALUES (?1, ?2)
                     ON CONFLICT(name) DO UPDATE SET value = excluded.value",
                    params![counter, value as i64],
                )
            });
        result.and_then(|_| tx.commit()).map_err(|e| self.wrap(e))
    }

    pub fn delete_reservation(&self, id: &str) -> Result<(), StoreError> {
        self.connection
            .execute("DELETE FROM reservation WHERE id = ?1", params![id])
            .map(drop)
            .map_err(|e| self.wrap(e))
    }

    /// Every saved reservation: (id, queue, record), by id.
    pub fn reservations(&self) -> Result<Vec<(String, String, String)>, StoreError> {
        let mut statement = self
            .connection
            .prepare("SELECT id, queue, record FROM reservation ORDER BY id")
            .map_err(|e| self.wrap(e))?;
        statement
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
            .and_then(Iterator::collect)
            .map_err(|e| self.wrap(e))
    }

    /// A named counter's value (0 if never set).
    pub fn counter(&self, name: &str) -> Result<u64, StoreError> {
        self.connection
            .query_row(
                "SELECT value FROM counter WHERE name = ?1",
                params![name],
                |row| row.get::<_, i64>(0),
            )
            .map(|value| value as u64)
            .or_else(|error| match error {
                rusqlite::Error::QueryReturnedNoRows => Ok(0),
                other => Err(self.wrap(other)),
            })
    }

    pub fn set_counter(&self, name: &str, value: u64) -> Result<(), StoreError> {
        self.connection
            .execute(
                "INSERT INTO counter (name, value) VALUES (?1, ?2)
                 ON CONFLICT(name) DO UPDATE SET value = excluded.value",
                params![name, value as i64],
            )
            .map(drop)
            .map_err(|e| self.wrap(e))
    }

    pub fn projects(&self) -> Result<Vec<(String, ProjectQuota)>, StoreError> {
        let mut statement = self
            .connection
            .prepare("SELECT project, remaining, total_used FROM project_quota ORDER BY project")
            .map_err(|e| self.wrap(e))?;
        statement
            .query_map([], |row| {
                Ok((
                    row.get(0)?,
                    ProjectQuota {
                        remaining: row.get(1)?,
                        total_used: row.get(2)?,
                    },
                ))
            })
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(|e| self.wrap(e))
    }

    pub fn daily(&self) -> Result<Vec<(DailyKey, f64)>, StoreError> {
        let mut statement = self
            .connection
            .prepare(
                "SELECT project, user, day, credits FROM daily_usage ORDER BY project, user, day",
            )
            .map_err(|e| self.wrap(e))?;
        statement
            .query_map([], |row| {
                Ok(((row.get(0)?, row.get(1)?, row.get(2)?), row.get(3)?))
            })
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(|e| self.wrap(e))
    }

    pub fn save_multiplicators(&self, general: f64, gpu: f64) -> Result<(), StoreError> {
        for (resource, value) in [("general", general), ("gpu", gpu)] {
            self.connection
                .execute(
                    "INSERT INTO price_multiplicator (resource, value) VALUES (?1, ?2)
                     ON CONFLICT(resource) DO UPDATE SET value = excluded.value",
                    params![resource, value],
                )
                .map_err(|e| self.wrap(e))?;
        }
        Ok(())
    }

    /// The multiplicators saved last, if any.
    pub fn multiplicators(&self) -> Result<Option<(f64, f64)>, StoreError> {
        let get = |resource: &str| {
            self.connection
                .query_row(
                    "SELECT value FROM price_multiplicator WHERE resource = ?1",
                    [resource],
                    |row| row.get(0),
                )
                .map(Some)
                .or_else(|e| {
                    if e == rusqlite::Error::QueryReturnedNoRows {
                        Ok(None)
                    } else {
                        Err(e)
                    }
                })
                .map_err(|e| self.wrap(e))
        };
        Ok(match (get("general")?, get("gpu")?) {
            (Some(general), Some(gpu)) => Some((general, gpu)),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_and_counters_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut store = Store::open(dir.path()).unwrap();
            assert_eq!(store.counter("reservation").unwrap(), 0);
            let counter = |value| ("reservation", value);
            store
                .save_reservation("r1", "root.plan", "{\"a\":1}", counter(2))
                .unwrap();
            store
                .save_reservation("r2", "root.plan", "{}", counter(3))
                .unwrap();
            store
                .save_reservation("r1", "root.plan", "{\"a\":2}", counter(3))
                .unwrap();
            store.delete_reservation("r2").unwrap();
            assert_eq!(store.counter("reservation").unwrap(), 3);
            store.set_counter("reservation", 7).unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(
            store.reservations().unwrap(),
            [("r1".into(), "root.plan".into(), "{\"a\":2}".into())]
        );
        assert_eq!(store.counter("reservation").unwrap(), 7);
    }
}
