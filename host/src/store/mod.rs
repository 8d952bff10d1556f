//! The durable store: one interface over two databases — the embedded SQLite
//! under the data directory (the default) and PostgreSQL 15
//! (`weft.store.url = postgres://…`, which two servers can share) — with one
//! schema history (`migrations.rs`).
//!
//! It holds what a restart must not lose: the ledger (its SQL is beside it,
//! in `quota/ledger.rs`), multiplicators and
//! owed usage, the reservations, apps with their asks, running containers
//! with their node and charged-until time, nodes, the settings in force
//! (queues, policies, counters, the cluster's timestamp) and the leader's
//! lease with its epoch.
//!
//! Every write goes through [`Store::commit`]: one transaction that first
//! checks, under a shared lock of the lease row, that the epoch this server
//! holds is still the lease's (the fencing token). A server whose epoch is
//! stale commits nothing.

pub mod local_postgres;
pub mod migrations;
pub mod postgres;
pub mod sqlite;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// A value bound to or read from a statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// SQL `NULL`: no value (`None`).
    Null,
    /// A 64-bit integer: a time in ms, a count, a flag as 0 or 1.
    Int(i64),
    /// A double: credits, multiplicators.
    Real(f64),
    /// Text: a name, an id, a JSON record.
    Text(String),
    /// Bytes: a policy component.
    Blob(Vec<u8>),
}

impl From<i64> for Value {
    fn from(value: i64) -> Value {
        Value::Int(value)
    }
}

impl From<u64> for Value {
    /// Times and counts are far below 2^63; a larger value is kept as the
    /// largest, never wrapped negative.
    fn from(value: u64) -> Value {
        Value::Int(i64::try_from(value).unwrap_or(i64::MAX))
    }
}

impl From<f64> for Value {
    fn from(value: f64) -> Value {
        Value::Real(value)
    }
}

impl From<&str> for Value {
    fn from(value: &str) -> Value {
        Value::Text(value.to_string())
    }
}

impl From<String> for Value {
    fn from(value: String) -> Value {
        Value::Text(value)
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(value: Option<T>) -> Value {
        value.map_or(Value::Null, Into::into)
    }
}

impl Value {
    /// The integer, if it is one.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(v) => Some(*v),
            _ => None,
        }
    }

    /// A stored time or count: negative values (never written) read as 0.
    pub fn as_u64(&self) -> Option<u64> {
        self.as_i64().map(|v| u64::try_from(v).unwrap_or(0))
    }

    /// The number, if it is one (an integer widened).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Real(v) => Some(*v),
            Value::Int(v) => Some(*v as f64),
            _ => None,
        }
    }

    /// The text, if it is text.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Text(v) => Some(v),
            _ => None,
        }
    }

    /// The text, if it is text, taken.
    pub fn into_text(self) -> Option<String> {
        match self {
            Value::Text(v) => Some(v),
            _ => None,
        }
    }

    /// The bytes, if it is a blob, taken.
    pub fn into_blob(self) -> Option<Vec<u8>> {
        match self {
            Value::Blob(v) => Some(v),
            _ => None,
        }
    }
}

/// One row of a query's answer.
pub type Row = Vec<Value>;

/// One statement of a transaction: SQL with `?1`, `?2`, … placeholders.
#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    /// The SQL, one text for both dialects (`postgres.rs` rewrites `?N` to
    /// `$N`).
    pub sql: &'static str,
    /// The values bound, in order: `params[0]` is `?1`.
    pub params: Vec<Value>,
}

/// Which SQL a backend speaks where the two differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// The embedded SQLite (`sqlite.rs`).
    Sqlite,
    /// PostgreSQL 15 (`postgres.rs`).
    Postgres,
}

/// The fencing token a writer holds: the lease's epoch when it was elected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    /// The lease's epoch: it counts up at each election (with SQLite, at each
    /// start).
    pub epoch: i64,
    /// The server that took it, as the lease row names it.
    pub holder: String,
}

/// Why a store call failed; each names the store (its path, or its URL without
/// the password).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database failed a call, refused it or could not be reached.
    #[error("store {target}: {message}")]
    Database {
        /// The store: its path, or its URL without the password.
        target: String,
        /// The database's or its driver's message.
        message: String,
    },
    /// Another server holds the lease now: this one must write nothing more.
    #[error(
        "store {target}: fenced off: this server's epoch is {mine}, the lease's is {current} (held by {holder:?}); another server is active"
    )]
    Fenced {
        /// The store: its path, or its URL without the password.
        target: String,
        /// The epoch this server writes under.
        mine: i64,
        /// The lease's epoch now.
        current: i64,
        /// The server holding the lease now.
        holder: String,
    },
    /// The schema was migrated by a newer weft; this one touches nothing.
    #[error(
        "store {target}: its schema is version {found}, newer than this weft knows ({known}); run a newer weft"
    )]
    TooNew {
        /// The store: its path, or its URL without the password.
        target: String,
        /// The schema's version.
        found: i64,
        /// The newest version this binary knows.
        known: i64,
    },
    /// A stored row cannot be read as what it should be.
    #[error("store {target}: {what} is unreadable: {why}")]
    Corrupt {
        /// The store: its path, or its URL without the password.
        target: String,
        /// What was read, e.g. "a node row".
        what: String,
        /// Why it cannot be read as that.
        why: String,
    },
}

impl StoreError {
    /// Whether this server lost its right to write (it must step down).
    pub fn is_fenced(&self) -> bool {
        matches!(self, StoreError::Fenced { .. })
    }
}

/// A database the store runs on. Each call is one round of work; a
/// backend reports its errors with its target (path or URL, never a
/// password) already in them.
pub trait Backend: Send {
    /// Which SQL it speaks.
    fn dialect(&self) -> Dialect;

    /// Where it is, for messages.
    fn target(&self) -> &str;

    /// Runs `statements` in one transaction. With `fence`, the transaction
    /// first reads the lease row under a shared lock and commits nothing
    /// unless its epoch and holder are `fence`'s; it then records the
    /// commit in `write_audit` under that epoch.
    fn commit(&mut self, fence: Option<&Fence>, statements: &[Statement])
    -> Result<(), StoreError>;

    /// Runs one query outside any write transaction.
    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>, StoreError>;

    /// Brings the schema to the newest migration, one transaction each,
    /// serialized against other servers migrating the same database.
    fn migrate(&mut self) -> Result<(), StoreError>;

    /// Whether its connection is gone (every call would fail).
    fn is_closed(&self) -> bool {
        false
    }

    /// Connects again, as a new session.
    fn reconnect(&mut self) -> Result<(), StoreError> {
        Ok(())
    }
}

/// The store: a handle shared by the event loop, the reservation service
/// and the policy runtime (cheap to clone; calls are serialized).
#[derive(Clone)]
pub struct Store {
    shared: Arc<Shared>,
}

struct Shared {
    target: String,
    backend: Mutex<Box<dyn Backend>>,
    /// The epoch this server writes under; `None`: unfenced (a store of
    /// its own: replay, simulation, tests).
    fence: Mutex<Option<Fence>>,
    /// Counts the database sessions opened after the first (a lost one is
    /// replaced at the next call): an active server that lost its session
    /// steps down (`ha/`).
    reconnects: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("target", &self.shared.target)
            .finish()
    }
}

/// Where the store is: `weft.store.url` if set, else the data directory.
pub fn open(url: Option<&str>, data_dir: &std::path::Path) -> Result<Store, StoreError> {
    match url {
        Some(url) => Store::postgres(url),
        None => Store::open(data_dir),
    }
}

impl Store {
    /// Opens (creating if needed) `weft.db` in `data_dir`, locked against
    /// any other server using the same directory, and migrates it.
    pub fn open(data_dir: &std::path::Path) -> Result<Store, StoreError> {
        Store::with_backend(Box::new(sqlite::SqliteBackend::open(data_dir)?))
    }

    /// Connects to PostgreSQL at `url` and migrates its schema.
    pub fn postgres(url: &str) -> Result<Store, StoreError> {
        Store::with_backend(Box::new(postgres::PostgresBackend::connect(url)?))
    }

    /// A store that lives only as long as the process (replay, simulation).
    pub fn in_memory() -> Store {
        Store::with_backend(Box::new(sqlite::SqliteBackend::in_memory()))
            .expect("the schema applies to an empty in-memory database")
    }

    fn with_backend(mut backend: Box<dyn Backend>) -> Result<Store, StoreError> {
        backend.migrate()?;
        Ok(Store {
            shared: Arc::new(Shared {
                target: backend.target().to_string(),
                backend: Mutex::new(backend),
                fence: Mutex::new(None),
                reconnects: Default::default(),
            }),
        })
    }

    /// Where the store is, for messages: the SQLite file's path or the URL
    /// without its password.
    pub fn target(&self) -> &str {
        &self.shared.target
    }

    /// Which SQL its database speaks.
    pub fn dialect(&self) -> Dialect {
        self.backend().dialect()
    }

    fn backend(&self) -> std::sync::MutexGuard<'_, Box<dyn Backend>> {
        // A panic while holding the lock leaves the backend as it was
        // between calls (each call is one transaction).
        self.shared
            .backend
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The backend, connected again first if its session was lost (a
    /// failed reconnection is the call's error).
    fn connected(&self) -> Result<std::sync::MutexGuard<'_, Box<dyn Backend>>, StoreError> {
        let mut backend = self.backend();
        if backend.is_closed() {
            backend.reconnect()?;
            self.shared
                .reconnects
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tracing::warn!(store = %self.shared.target, "the store's database session was lost; connected again");
        }
        Ok(backend)
    }

    /// How many times a lost session was replaced.
    pub fn reconnects(&self) -> u64 {
        self.shared
            .reconnects
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// From now on every commit is fenced by `fence` (this server became
    /// active under it); `None` stops fencing.
    pub fn set_fence(&self, fence: Option<Fence>) {
        *self
            .shared
            .fence
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = fence;
    }

    /// The fence commits are made under now; `None`: unfenced.
    pub fn fence(&self) -> Option<Fence> {
        self.shared
            .fence
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Takes the lease as the store's only possible writer (SQLite, behind
    /// its lock file): the epoch counts up once per start, and every commit
    /// from now on is fenced by it.
    pub fn take_sole_lease(&self, holder: &str) -> Result<Fence, StoreError> {
        let statement = Statement {
            sql: "UPDATE weft_leader SET epoch = epoch + 1, holder = ?1 WHERE id = 1",
            params: vec![holder.into()],
        };
        self.connected()?.commit(None, &[statement])?;
        let rows = self.query("SELECT epoch FROM weft_leader WHERE id = 1", &[])?;
        let epoch = rows
            .first()
            .and_then(|row| row.first())
            .and_then(Value::as_i64)
            .ok_or_else(|| self.corrupt("the lease row", "missing"))?;
        let fence = Fence {
            epoch,
            holder: holder.to_string(),
        };
        self.set_fence(Some(fence.clone()));
        Ok(fence)
    }

    /// Writes `batch` in one transaction, fenced (see the module's doc).
    pub fn commit(&self, batch: &Batch) -> Result<(), StoreError> {
        if batch.statements.is_empty() {
            return Ok(());
        }
        let fence = self.fence();
        self.connected()?.commit(fence.as_ref(), &batch.statements)
    }

    /// Runs one query, `?N` bound to `params[N - 1]`, outside any write
    /// transaction (the session is replaced first if it was lost).
    pub fn query(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>, StoreError> {
        self.connected()?.query(sql, params)
    }

    pub(crate) fn corrupt(
        &self,
        what: impl Into<String>,
        why: impl std::fmt::Display,
    ) -> StoreError {
        StoreError::Corrupt {
            target: self.shared.target.clone(),
            what: what.into(),
            why: why.to_string(),
        }
    }

    /// Saves one reservation (its record as JSON), replacing any under `id`,
    /// and the counter `counter` at `value`, in one transaction.
    pub fn save_reservation(
        &self,
        id: &str,
        queue: &str,
        record: &str,
        (counter, value): (&str, u64),
    ) -> Result<(), StoreError> {
        let mut batch = Batch::default();
        batch.put_reservation(id, queue, record);
        batch.set_counter(counter, value);
        self.commit(&batch)
    }

    /// Deletes reservation `id`, in a transaction of its own.
    pub fn delete_reservation(&self, id: &str) -> Result<(), StoreError> {
        let mut batch = Batch::default();
        batch.delete_reservation(id);
        self.commit(&batch)
    }

    /// Every saved reservation: (id, queue, record), by id.
    pub fn reservations(&self) -> Result<Vec<(String, String, String)>, StoreError> {
        self.query("SELECT id, queue, record FROM reservation ORDER BY id", &[])?
            .into_iter()
            .map(|row| match <[Value; 3]>::try_from(row) {
                Ok([Value::Text(id), Value::Text(queue), Value::Text(record)]) => {
                    Ok((id, queue, record))
                }
                _ => Err(self.corrupt("a reservation row", "not three texts")),
            })
            .collect()
    }

    /// A named counter's value (0 if never set).
    pub fn counter(&self, name: &str) -> Result<u64, StoreError> {
        let rows = self.query("SELECT value FROM counter WHERE name = ?1", &[name.into()])?;
        Ok(rows
            .first()
            .and_then(|row| row.first())
            .and_then(Value::as_u64)
            .unwrap_or(0))
    }

    /// Sets the counter `name` to `value`, in a transaction of its own.
    pub fn set_counter(&self, name: &str, value: u64) -> Result<(), StoreError> {
        let mut batch = Batch::default();
        batch.set_counter(name, value);
        self.commit(&batch)
    }

    /// Saves the price multiplicators, `general` (CPU and memory) and `gpu`, in
    /// a transaction of its own.
    pub fn save_multiplicators(&self, general: f64, gpu: f64) -> Result<(), StoreError> {
        let mut batch = Batch::default();
        batch.multiplicators(general, gpu);
        self.commit(&batch)
    }

    /// The multiplicators saved last, if any.
    pub fn multiplicators(&self) -> Result<Option<(f64, f64)>, StoreError> {
        let rows = self.query("SELECT resource, value FROM price_multiplicator", &[])?;
        let get = |name: &str| {
            rows.iter()
                .find(|row| row.first().and_then(Value::as_str) == Some(name))
                .and_then(|row| row.get(1))
                .and_then(Value::as_f64)
        };
        Ok(get("general").zip(get("gpu")))
    }

    /// Every setting in force, by name.
    pub fn settings(&self) -> Result<BTreeMap<String, String>, StoreError> {
        self.query("SELECT name, value FROM setting", &[])?
            .into_iter()
            .map(|row| match <[Value; 2]>::try_from(row) {
                Ok([Value::Text(name), Value::Text(value)]) => Ok((name, value)),
                _ => Err(self.corrupt("a setting row", "not two texts")),
            })
            .collect()
    }

    /// Every app record, in submission order: (number, record).
    pub fn apps(&self) -> Result<Vec<(u64, String)>, StoreError> {
        self.query("SELECT number, record FROM app ORDER BY number", &[])?
            .into_iter()
            .map(|row| match <[Value; 2]>::try_from(row) {
                Ok([number, Value::Text(record)]) if number.as_u64().is_some() => {
                    Ok((number.as_u64().unwrap_or(0), record))
                }
                _ => Err(self.corrupt("an app row", "not (number, text)")),
            })
            .collect()
    }

    /// Every container record, by app then number: (record, running,
    /// charged until).
    pub fn containers(&self) -> Result<Vec<StoredContainer>, StoreError> {
        self.query(
            "SELECT record, running, charged_until_ms FROM container ORDER BY app, seq",
            &[],
        )?
        .into_iter()
        .map(|row| match <[Value; 3]>::try_from(row) {
            Ok([Value::Text(record), running, charged]) => Ok(StoredContainer {
                record,
                running: running.as_i64() == Some(1),
                charged_until_ms: charged.as_u64(),
            }),
            _ => Err(self.corrupt("a container row", "not (text, number, number)")),
        })
        .collect()
    }

    /// Every node record, by id.
    pub fn nodes(&self) -> Result<Vec<String>, StoreError> {
        self.texts("SELECT record FROM node ORDER BY id", "a node row")
    }

    /// Who owns each node id: (id, owner), by id.
    pub fn node_owners(&self) -> Result<Vec<(String, String)>, StoreError> {
        self.query("SELECT id, owner FROM node_owner ORDER BY id", &[])?
            .into_iter()
            .map(|row| match <[Value; 2]>::try_from(row) {
                Ok([Value::Text(id), Value::Text(owner)]) => Ok((id, owner)),
                _ => Err(self.corrupt("a node owner row", "not (text, text)")),
            })
            .collect()
    }

    /// Usage owed and not yet priced, in the order it was owed.
    pub fn owed(&self) -> Result<Vec<String>, StoreError> {
        self.texts("SELECT record FROM owed_usage ORDER BY seq", "an owed row")
    }

    /// Final accounting records (JSON) in `range`, in the order they
    /// became final.
    /// Each as (its number, the record).
    pub fn accounting(&self, range: &AccountingRange) -> Result<Vec<(u64, String)>, StoreError> {
        let mut sql = String::from(
            "SELECT final_seq, record FROM accounting WHERE final_seq > ?1 AND finished_ms >= ?2 AND finished_ms < ?3",
        );
        let mut params: Vec<Value> = vec![range.after.into(), range.from.into(), range.to.into()];
        // Each condition's `#` is its parameter's number.
        let mut condition = |sql: &mut String, text: &str, value: Value| {
            params.push(value);
            sql.push_str(&text.replace('#', &format!("?{}", params.len())));
        };
        if let Some(project) = &range.project {
            condition(&mut sql, " AND project = #", project.as_str().into());
        }
        if let Some(user) = &range.user {
            condition(&mut sql, " AND \"user\" = #", user.as_str().into());
        }
        sql.push_str(&format!(" ORDER BY final_seq LIMIT {}", range.limit));
        self.query(&sql, &params)?
            .into_iter()
            .map(|row| match <[Value; 2]>::try_from(row) {
                Ok([seq, Value::Text(record)]) if seq.as_u64().is_some() => {
                    Ok((seq.as_u64().unwrap_or(0), record))
                }
                _ => Err(self.corrupt("an accounting row", "not (number, text)")),
            })
            .collect()
    }

    /// The number of the last accounting record made final (0: none).
    pub fn last_accounting_seq(&self) -> Result<u64, StoreError> {
        let rows = self.query("SELECT MAX(final_seq) FROM accounting", &[])?;
        Ok(rows
            .first()
            .and_then(|row| row.first())
            .and_then(Value::as_u64)
            .unwrap_or(0))
    }

    /// Accounting records still waiting for charges (JSON).
    pub fn pending_accounting(&self) -> Result<Vec<String>, StoreError> {
        self.texts(
            "SELECT record FROM accounting WHERE is_final = 0 ORDER BY app_id",
            "an accounting row",
        )
    }

    /// `project`'s newest grants, newest first: (ms, credits, granted by).
    pub fn grants(&self, project: &str, limit: usize) -> Result<Vec<Grant>, StoreError> {
        self.query(
            &format!(
                "SELECT at_ms, credits, granted_by FROM quota_grant WHERE project = ?1 ORDER BY seq DESC LIMIT {limit}"
            ),
            &[project.into()],
        )?
        .into_iter()
        .map(|row| match <[Value; 3]>::try_from(row) {
            Ok([at, credits, Value::Text(by)]) if at.as_u64().is_some() => Ok(Grant {
                at_ms: at.as_u64().unwrap_or(0),
                credits: credits.as_f64().unwrap_or(0.0),
                granted_by: by,
            }),
            _ => Err(self.corrupt("a quota_grant row", "not (number, number, text)")),
        })
        .collect()
    }

    fn texts(&self, sql: &str, what: &str) -> Result<Vec<String>, StoreError> {
        self.texts_with(sql, &[], what)
    }

    fn texts_with(
        &self,
        sql: &str,
        params: &[Value],
        what: &str,
    ) -> Result<Vec<String>, StoreError> {
        self.query(sql, params)?
            .into_iter()
            .map(|row| {
                row.into_iter()
                    .next()
                    .and_then(Value::into_text)
                    .ok_or_else(|| self.corrupt(what, "not a text"))
            })
            .collect()
    }

    /// A policy component's bytes, by their sha256.
    pub fn policy_blob(&self, sha256: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let rows = self.query(
            "SELECT bytes FROM policy_blob WHERE sha256 = ?1",
            &[sha256.into()],
        )?;
        Ok(rows
            .into_iter()
            .next()
            .and_then(|row| row.into_iter().next())
            .and_then(Value::into_blob))
    }
}

/// The counter of grants: the last grant's number.
pub const GRANT_COUNTER: &str = "quota-grant";

/// Which accounting records to read: finished in `[from, to)`, of a
/// project, of a user, made final after number `after`, at most `limit`.
#[derive(Debug, Clone, Default)]
pub struct AccountingRange {
    /// Finished at or after this, in ms since the epoch.
    pub from: u64,
    /// Finished before this, in ms since the epoch.
    pub to: u64,
    /// Only this project's; `None`: every project's.
    pub project: Option<String>,
    /// Only this user's; `None`: every user's.
    pub user: Option<String>,
    /// Only those made final after this number (the previous page's last; 0:
    /// from the first).
    pub after: u64,
    /// At most this many.
    pub limit: usize,
}

/// Credits an administrator granted a project.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct Grant {
    /// When it was granted, in ms since the epoch.
    pub at_ms: u64,
    /// The credits added to what the project has left.
    pub credits: f64,
    /// The administrator who granted them.
    pub granted_by: String,
}

/// A container as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredContainer {
    /// Its record, as JSON (the cluster's own format).
    pub record: String,
    /// Whether it was running when stored; else it had ended.
    pub running: bool,
    /// Up to when its own events charged it, in ms since the epoch; `None`: the
    /// quota service no longer charges it (or never did).
    pub charged_until_ms: Option<u64>,
}

/// A container's record upsert; its charged-until time is left as it was.
const PUT_CONTAINER: &str =
    "INSERT INTO container (id, app, seq, running, record) VALUES (?1, ?2, ?3, ?4, ?5)
     ON CONFLICT (id) DO UPDATE SET running = excluded.running, record = excluded.record";

/// [`PUT_CONTAINER`] that also sets the charged-until time (`?6`).
const PUT_CONTAINER_CHARGED: &str =
    "INSERT INTO container (id, app, seq, running, record, charged_until_ms)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6)
     ON CONFLICT (id) DO UPDATE SET running = excluded.running, record = excluded.record,
         charged_until_ms = excluded.charged_until_ms";

/// The writes of one transaction, built by the event loop and the services
/// (each method is one table's upsert or delete).
#[derive(Debug, Default)]
pub struct Batch {
    statements: Vec<Statement>,
    /// Where each container's record upsert is in `statements`, so that a
    /// charged-until time set after it goes into the same row write
    /// instead of an UPDATE of its own (a container that starts or ends
    /// changes both at once: one B-tree walk instead of two).
    container_puts: foldhash::HashMap<String, usize>,
}

impl Batch {
    /// Whether it writes nothing.
    pub fn is_empty(&self) -> bool {
        self.statements.is_empty()
    }

    /// How many statements it holds.
    pub fn len(&self) -> usize {
        self.statements.len()
    }

    /// Adds `other`'s writes after these.
    pub fn append(&mut self, other: Batch) {
        // Later writes are no longer folded into earlier records: a
        // charged-until time for a container in `other` could otherwise
        // land in a record upsert that precedes other's statements.
        self.container_puts.clear();
        self.statements.extend(other.statements);
    }

    pub(crate) fn push(&mut self, sql: &'static str, params: Vec<Value>) {
        self.statements.push(Statement { sql, params });
    }

    /// Saves the price multiplicators, `general` (CPU and memory) and `gpu`.
    pub fn multiplicators(&mut self, general: f64, gpu: f64) {
        for (resource, value) in [("general", general), ("gpu", gpu)] {
            self.push(
                "INSERT INTO price_multiplicator (resource, value) VALUES (?1, ?2)
                 ON CONFLICT (resource) DO UPDATE SET value = excluded.value",
                vec![resource.into(), value.into()],
            );
        }
    }

    /// Saves reservation `id` of `queue` (its record as JSON), replacing any
    /// under `id`.
    pub fn put_reservation(&mut self, id: &str, queue: &str, record: &str) {
        self.push(
            "INSERT INTO reservation (id, queue, record) VALUES (?1, ?2, ?3)
             ON CONFLICT (id) DO UPDATE SET queue = excluded.queue, record = excluded.record",
            vec![id.into(), queue.into(), record.into()],
        );
    }

    /// Deletes reservation `id`.
    pub fn delete_reservation(&mut self, id: &str) {
        self.push("DELETE FROM reservation WHERE id = ?1", vec![id.into()]);
    }

    /// Sets the counter `name` to `value`.
    pub fn set_counter(&mut self, name: &str, value: u64) {
        self.push(
            "INSERT INTO counter (name, value) VALUES (?1, ?2)
             ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            vec![name.into(), value.into()],
        );
    }

    /// Sets the setting in force `name` (the queues, a policy version, the last
    /// QUOTA_COMPUTE, …) to `value`.
    pub fn set_setting(&mut self, name: &str, value: &str) {
        self.push(
            "INSERT INTO setting (name, value) VALUES (?1, ?2)
             ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            vec![name.into(), value.into()],
        );
    }

    /// Saves app `id`'s record (JSON) with its number, the order apps are read
    /// back in; replaces any under `id`.
    pub fn put_app(&mut self, id: &str, number: u64, record: String) {
        self.push(
            "INSERT INTO app (id, number, record) VALUES (?1, ?2, ?3)
             ON CONFLICT (id) DO UPDATE SET number = excluded.number, record = excluded.record",
            vec![id.into(), number.into(), record.into()],
        );
    }

    /// Forgets an app and every container record of it.
    pub fn delete_app(&mut self, id: &str) {
        self.push("DELETE FROM container WHERE app = ?1", vec![id.into()]);
        self.push("DELETE FROM app WHERE id = ?1", vec![id.into()]);
    }

    /// A container's record; `running` while it runs. Its charged-until
    /// time is set apart ([`Batch::charged_until`]) and kept here.
    pub fn put_container(&mut self, id: &str, app: &str, seq: u64, running: bool, record: String) {
        self.container_puts
            .insert(id.to_string(), self.statements.len());
        self.push(
            PUT_CONTAINER,
            vec![
                id.into(),
                app.into(),
                seq.into(),
                Value::Int(i64::from(running)),
                record.into(),
            ],
        );
    }

    /// Forgets container `id`'s record.
    pub fn delete_container(&mut self, id: &str) {
        self.push("DELETE FROM container WHERE id = ?1", vec![id.into()]);
    }

    /// Up to when a running container has been charged (`None`: it is no
    /// longer charged by the quota service).
    pub fn charged_until(&mut self, id: &str, ms: Option<u64>) {
        if let Some(&at) = self.container_puts.get(id) {
            // Nothing between that upsert and here writes this row's
            // charged-until time (the map is cleared when batches merge),
            // and a delete of the row in between leaves it gone either way
            // (the separate UPDATE would have matched no row).
            let put = &mut self.statements[at];
            if put.sql == PUT_CONTAINER_CHARGED {
                put.params[5] = ms.into();
            } else {
                put.sql = PUT_CONTAINER_CHARGED;
                put.params.push(ms.into());
            }
            return;
        }
        self.push(
            "UPDATE container SET charged_until_ms = ?2 WHERE id = ?1",
            vec![id.into(), ms.into()],
        );
    }

    /// Saves node `id`'s record (JSON): an agent's node, put back at recovery.
    pub fn put_node(&mut self, id: &str, record: String) {
        self.push(
            "INSERT INTO node (id, record) VALUES (?1, ?2)
             ON CONFLICT (id) DO UPDATE SET record = excluded.record",
            vec![id.into(), record.into()],
        );
    }

    /// Forgets node `id`'s record.
    pub fn delete_node(&mut self, id: &str) {
        self.push("DELETE FROM node WHERE id = ?1", vec![id.into()]);
    }

    /// Records `owner`, its first registrant, as the owner of agent node id
    /// `id` (kept while the node is lost, until released).
    pub fn put_node_owner(&mut self, id: &str, owner: &str) {
        self.push(
            "INSERT INTO node_owner (id, owner) VALUES (?1, ?2)
             ON CONFLICT (id) DO UPDATE SET owner = excluded.owner",
            vec![id.into(), owner.into()],
        );
    }

    /// Forgets node id `id`'s owner (an administrator released it): whoever
    /// registers it next owns it.
    pub fn delete_node_owner(&mut self, id: &str) {
        self.push("DELETE FROM node_owner WHERE id = ?1", vec![id.into()]);
    }

    /// Replaces the usage owed and not yet priced.
    pub fn replace_owed(&mut self, records: impl IntoIterator<Item = String>) {
        self.push("DELETE FROM owed_usage", Vec::new());
        for (seq, record) in records.into_iter().enumerate() {
            self.push(
                "INSERT INTO owed_usage (seq, record) VALUES (?1, ?2)",
                vec![(seq as u64).into(), record.into()],
            );
        }
    }

    /// An app's accounting record: pending (`final_seq` none), or final as
    /// the `final_seq`th.
    pub fn put_accounting(
        &mut self,
        app_id: &str,
        finished_ms: u64,
        project: &str,
        user: &str,
        final_seq: Option<u64>,
        record: String,
    ) {
        self.push(
            "INSERT INTO accounting (app_id, finished_ms, project, \"user\", is_final, final_seq, record)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT (app_id) DO UPDATE SET finished_ms = excluded.finished_ms,
                 project = excluded.project, \"user\" = excluded.\"user\",
                 is_final = excluded.is_final, final_seq = excluded.final_seq,
                 record = excluded.record",
            vec![
                app_id.into(),
                finished_ms.into(),
                project.into(),
                user.into(),
                Value::Int(i64::from(final_seq.is_some())),
                final_seq.into(),
                record.into(),
            ],
        );
    }

    /// Grant number `seq` (and the counter of grants, in the same commit).
    pub fn put_grant(&mut self, seq: u64, project: &str, at_ms: u64, credits: f64, by: &str) {
        self.push(
            // A failed commit is written again with the next: once.
            "INSERT INTO quota_grant (seq, project, at_ms, credits, granted_by) VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (seq) DO NOTHING",
            vec![
                seq.into(),
                project.into(),
                at_ms.into(),
                credits.into(),
                by.into(),
            ],
        );
        self.set_counter(GRANT_COUNTER, seq);
    }

    /// A policy component's bytes, kept once per sha256.
    pub fn put_policy_blob(&mut self, sha256: &str, bytes: Vec<u8>) {
        self.push(
            "INSERT INTO policy_blob (sha256, bytes) VALUES (?1, ?2)
             ON CONFLICT (sha256) DO NOTHING",
            vec![sha256.into(), Value::Blob(bytes)],
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_and_counters_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
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

    #[test]
    fn a_charged_until_time_joins_its_records_upsert_in_one_batch() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let stored = |store: &Store| {
            let mut rows: Vec<_> = store
                .containers()
                .unwrap()
                .into_iter()
                .map(|c| (c.record, c.running, c.charged_until_ms))
                .collect();
            rows.sort_by(|a, b| a.0.cmp(&b.0));
            rows
        };

        let mut batch = Batch::default();
        batch.put_app("a1", 1, "{}".into());
        batch.put_container("c1", "a1", 1, true, "r1".into());
        batch.put_container("c2", "a1", 2, true, "r2".into());
        batch.charged_until("c1", Some(4));
        batch.charged_until("c1", Some(5)); // the later time wins
        batch.charged_until("c3", Some(9)); // no record in this batch, no row
        assert_eq!(batch.len(), 4, "c1's time joined its upsert");
        store.commit(&batch).unwrap();
        assert_eq!(
            stored(&store),
            [("r1".into(), true, Some(5)), ("r2".into(), true, None)]
        );

        // A later upsert without a time keeps the stored one; one with a
        // time (ended: none) replaces it.
        let mut batch = Batch::default();
        batch.put_container("c1", "a1", 1, true, "r1b".into());
        batch.put_container("c2", "a1", 2, false, "r2b".into());
        batch.charged_until("c2", Some(7));
        store.commit(&batch).unwrap();
        let mut batch = Batch::default();
        batch.put_container("c2", "a1", 2, false, "r2c".into());
        batch.charged_until("c2", None);
        store.commit(&batch).unwrap();
        assert_eq!(
            stored(&store),
            [("r1b".into(), true, Some(5)), ("r2c".into(), false, None)]
        );

        // After batches merge, a time is an UPDATE of its own again, after
        // every merged statement.
        let mut first = Batch::default();
        first.put_container("c1", "a1", 1, true, "r1c".into());
        let mut second = Batch::default();
        second.charged_until("c1", Some(11));
        first.append(second);
        first.charged_until("c1", Some(12));
        assert_eq!(first.len(), 3);
        store.commit(&first).unwrap();
        assert_eq!(stored(&store)[0], ("r1c".into(), true, Some(12)));
    }
}
