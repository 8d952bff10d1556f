//! The embedded SQLite backend: `weft.db` under the data directory, in WAL
//! mode with full sync (a commit is on disk before a submission is
//! acknowledged), and a lock file that keeps a second server off the same
//! directory (SQLite has one writer; two servers need PostgreSQL).

use std::path::Path;

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, TransactionBehavior};

use super::{Backend, Dialect, Fence, Row, Statement, StoreError, Value, migrations};

/// The page cache of the store's connection, in KiB (64 MiB at most, held
/// only as the database grows into it).
const PAGE_CACHE_KIB: i64 = 64 * 1024;

/// The store on SQLite: one connection to `weft.db` (or to a database in
/// memory) and, for a file, the lock that keeps other servers off its
/// directory.
pub struct SqliteBackend {
    target: String,
    connection: Connection,
    /// Held while the backend lives: another server's open fails on it.
    _lock: Option<nix::fcntl::Flock<std::fs::File>>,
}

impl SqliteBackend {
    /// Opens (creating if needed) `weft.db` in `data_dir`.
    pub fn open(data_dir: &Path) -> Result<SqliteBackend, StoreError> {
        let path = data_dir.join("weft.db");
        let target = path.display().to_string();
        let fail = |message: String| StoreError::Database {
            target: target.clone(),
            message,
        };
        // The ledger, the agents' log secrets: only this user's (0700 and
        // 0600, whatever the umask; SQLite gives its -wal and -shm files
        // the mode of the database file).
        crate::private_files::dir(data_dir).map_err(|e| fail(e.to_string()))?;
        let lock_path = data_dir.join("weft.db.lock");
        let lock_file = crate::private_files::open(&lock_path).map_err(|e| fail(e.to_string()))?;
        drop(crate::private_files::open(&path).map_err(|e| fail(e.to_string()))?);
        for journal in ["weft.db-wal", "weft.db-shm", "weft.db-journal"] {
            crate::private_files::restrict(&data_dir.join(journal))
                .map_err(|e| fail(e.to_string()))?;
        }
        let lock = nix::fcntl::Flock::lock(lock_file, nix::fcntl::FlockArg::LockExclusiveNonblock)
            .map_err(|(_, errno)| {
                fail(format!(
                    "another weft server uses this data directory ({} is locked: {errno}); \
                     servers that share state need weft.store.url = postgres://…",
                    lock_path.display()
                ))
            })?;
        let connection = Connection::open(&path).map_err(|e| fail(e.to_string()))?;
        for (pragma, value) in [("journal_mode", "WAL"), ("synchronous", "FULL")] {
            connection
                .pragma_update(None, pragma, value)
                .map_err(|e| fail(format!("PRAGMA {pragma}: {e}")))?;
        }
        // SQLite's default page cache (2 MB) is far smaller than a busy
        // cluster's container table: every upsert then reads its B-tree
        // pages back through the OS, and a large commit spills dirty pages
        // to the WAL before it ends. A negative size is in KiB.
        connection
            .pragma_update(None, "cache_size", -PAGE_CACHE_KIB)
            .map_err(|e| fail(format!("PRAGMA cache_size: {e}")))?;
        connection
            .busy_timeout(std::time::Duration::from_secs(5))
            .map_err(|e| fail(e.to_string()))?;
        Ok(SqliteBackend {
            target,
            connection,
            _lock: Some(lock),
        })
    }

    /// A database in memory, gone with the backend, with no lock (replay,
    /// simulation, tests).
    pub fn in_memory() -> SqliteBackend {
        SqliteBackend {
            target: ":memory:".into(),
            connection: Connection::open_in_memory()
                .expect("SQLite can always open an in-memory database"),
            _lock: None,
        }
    }

    fn error(&self, error: impl std::fmt::Display) -> StoreError {
        StoreError::Database {
            target: self.target.clone(),
            message: error.to_string(),
        }
    }
}

/// Binds a [`Value`] as SQLite's own value.
struct Bound<'a>(&'a Value);

impl rusqlite::ToSql for Bound<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self.0 {
            Value::Null => ValueRef::Null,
            Value::Int(v) => ValueRef::Integer(*v),
            Value::Real(v) => ValueRef::Real(*v),
            Value::Text(v) => ValueRef::Text(v.as_bytes()),
            Value::Blob(v) => ValueRef::Blob(v),
        }))
    }
}

fn read(value: ValueRef<'_>) -> Value {
    match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(v) => Value::Int(v),
        ValueRef::Real(v) => Value::Real(v),
        ValueRef::Text(v) => Value::Text(String::from_utf8_lossy(v).into_owned()),
        ValueRef::Blob(v) => Value::Blob(v.to_vec()),
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Records a commit under `fence`'s epoch (see `write_audit`).
pub(super) const AUDIT: &str =
    "INSERT INTO write_audit (epoch, holder, first_commit_ms, last_commit_ms, commits)
     VALUES (?1, ?2, ?3, ?3, 1)
     ON CONFLICT (epoch) DO UPDATE SET last_commit_ms = excluded.last_commit_ms,
                                       commits = write_audit.commits + 1";

impl Backend for SqliteBackend {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn target(&self) -> &str {
        &self.target
    }

    fn commit(
        &mut self,
        fence: Option<&Fence>,
        statements: &[Statement],
    ) -> Result<(), StoreError> {
        let target = self.target.clone();
        let error = |e: rusqlite::Error| StoreError::Database {
            target: target.clone(),
            message: e.to_string(),
        };
        let tx = self
            .connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(error)?;
        if let Some(fence) = fence {
            let (epoch, holder): (i64, String) = tx
                .query_row(
                    "SELECT epoch, holder FROM weft_leader WHERE id = 1",
                    [],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )
                .map_err(error)?;
            if epoch != fence.epoch || holder != fence.holder {
                return Err(StoreError::Fenced {
                    target: target.clone(),
                    mine: fence.epoch,
                    current: epoch,
                    holder,
                });
            }
            tx.prepare_cached(AUDIT)
                .and_then(|mut s| s.execute(rusqlite::params![fence.epoch, fence.holder, now_ms()]))
                .map_err(error)?;
        }
        // Cached statements: the loop commits after every event, and parsing
        // the SQL each time cost more than running it.
        for statement in statements {
            let mut prepared = tx.prepare_cached(statement.sql).map_err(error)?;
            let params: Vec<Bound<'_>> = statement.params.iter().map(Bound).collect();
            prepared
                .execute(rusqlite::params_from_iter(params))
                .map_err(error)?;
        }
        tx.commit().map_err(error)
    }

    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>, StoreError> {
        let mut prepared = self
            .connection
            .prepare_cached(sql)
            .map_err(|e| self.error(e))?;
        let columns = prepared.column_count();
        let bound: Vec<Bound<'_>> = params.iter().map(Bound).collect();
        let rows = prepared
            .query_map(rusqlite::params_from_iter(bound), |row| {
                (0..columns)
                    .map(|i| row.get_ref(i).map(read))
                    .collect::<rusqlite::Result<Row>>()
            })
            .and_then(Iterator::collect::<rusqlite::Result<Vec<Row>>>);
        rows.map_err(|e| self.error(e))
    }

    fn migrate(&mut self) -> Result<(), StoreError> {
        self.connection
            .execute_batch(
                "CREATE TABLE IF NOT EXISTS weft_schema (
                    version INTEGER PRIMARY KEY,
                    description TEXT NOT NULL,
                    applied_ms INTEGER NOT NULL
                )",
            )
            .map_err(|e| self.error(e))?;
        for migration in migrations::MIGRATIONS {
            let target = self.target.clone();
            let error = |e: rusqlite::Error| StoreError::Database {
                target: target.clone(),
                message: format!(
                    "migration {} ({}): {e}",
                    migration.version, migration.description
                ),
            };
            let tx = self
                .connection
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(error)?;
            let found: i64 = tx
                .query_row(
                    "SELECT COALESCE(MAX(version), 0) FROM weft_schema",
                    [],
                    |row| row.get(0),
                )
                .map_err(error)?;
            if found > migrations::latest() {
                return Err(StoreError::TooNew {
                    target: target.clone(),
                    found,
                    known: migrations::latest(),
                });
            }
            if found >= migration.version {
                continue;
            }
            for statement in migrations::statements(migration, Dialect::Sqlite) {
                tx.execute_batch(&statement).map_err(error)?;
            }
            tx.execute(
                "INSERT INTO weft_schema (version, description, applied_ms) VALUES (?1, ?2, ?3)",
                rusqlite::params![migration.version, migration.description, now_ms()],
            )
            .map_err(error)?;
            tx.commit().map_err(error)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Batch, Store};

    #[test]
    fn a_second_server_cannot_open_the_same_data_directory() {
        let dir = tempfile::tempdir().unwrap();
        let _first = Store::open(dir.path()).unwrap();
        let second = Store::open(dir.path()).unwrap_err().to_string();
        assert!(
            second.contains("another weft server uses this data directory"),
            "{second}"
        );
    }

    #[test]
    fn a_stale_epoch_commits_nothing() {
        let store = Store::in_memory();
        store
            .query(
                "UPDATE weft_leader SET epoch = 3, holder = 'a' WHERE id = 1",
                &[],
            )
            .unwrap();
        store.set_fence(Some(Fence {
            epoch: 2,
            holder: "a".into(),
        }));
        let mut batch = Batch::default();
        batch.set_counter("c", 1);
        let error = store.commit(&batch).unwrap_err();
        assert!(error.is_fenced(), "{error}");
        assert_eq!(store.counter("c").unwrap(), 0);
        store.set_fence(Some(Fence {
            epoch: 3,
            holder: "a".into(),
        }));
        let mut batch = Batch::default();
        batch.set_counter("c", 1);
        store.commit(&batch).unwrap();
        assert_eq!(store.counter("c").unwrap(), 1);
        let audit = store
            .query("SELECT epoch, holder, commits FROM write_audit", &[])
            .unwrap();
        assert_eq!(
            audit,
            [vec![Value::Int(3), Value::Text("a".into()), Value::Int(1)]]
        );
    }

    #[test]
    fn a_schema_newer_than_this_build_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
            store
                .query(
                    "INSERT INTO weft_schema (version, description, applied_ms) VALUES (999, 'future', 0)",
                    &[],
                )
                .unwrap();
        }
        let error = Store::open(dir.path()).unwrap_err().to_string();
        assert!(error.contains("schema is version 999"), "{error}");
    }
}
