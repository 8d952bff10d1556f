//! The PostgreSQL 15 backend (`weft.store.url = postgres://…`): one
//! connection per server, driven by a thread of its own, with the store's
//! SQLite-style statements (`?1`, `?2`) rewritten and prepared once each.
//!
//! Callers run inside a tokio runtime (the event loop's) and expect each
//! call to block, as SQLite's do. So the connection's I/O runs on a
//! dedicated OS thread in a small current-thread runtime, and every call
//! waits on the client's futures with `futures_executor::block_on`: those
//! futures only exchange messages with that thread, so they need no runtime
//! of their own (the synchronous `postgres` crate would start one inside
//! the caller's and panic).
//!
//! A lost connection fails the call with a message that says so
//! ([`PostgresBackend::is_closed`] tells it); the `Store` replaces it at
//! its next call (`reconnect`) and counts that.

use std::collections::HashMap;
use std::error::Error as StdError;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use bytes::BytesMut;
use futures_util::future::{FutureExt, poll_fn};
use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type, to_sql_checked};
use tokio_postgres::{Client, NoTls};

use super::{Backend, Dialect, Fence, Row, Statement, StoreError, Value, migrations};

/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Probes of an idle connection start after 5 s, 1 s apart: a vanished
/// server (or network) is noticed in seconds, not the kernel's default two
/// hours — the failover a later version does hinges on noticing.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(5);
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(1);
const KEEPALIVE_RETRIES: u32 = 3;
/// Keepalives only probe an idle socket: data sent and never acknowledged
/// (a request to a server that vanished mid-call) would otherwise wait for
/// the kernel's retransmissions, about 15 minutes. (On Linux this also
/// bounds how long unanswered probes are waited for.)
const TCP_USER_TIMEOUT: Duration = Duration::from_secs(15);

/// Prepared statements kept per connection. The store's own SQL is a few
/// dozen texts; ad-hoc queries beyond this empty the cache rather than
/// grow it without bound.
const PREPARED_LIMIT: usize = 512;

/// Reads the lease row under a shared lock: a takeover (which updates that
/// row) waits for this transaction, and this one waits for a takeover in
/// progress and then sees its epoch.
const LEASE: &str = "SELECT epoch, holder FROM weft_leader WHERE id = 1 FOR SHARE";

/// Records a commit under the fence's epoch, as sqlite.rs's `AUDIT` does,
/// but stamped by the database's clock: servers sharing the database may
/// disagree on the time, the database does not.
const AUDIT: &str =
    "INSERT INTO write_audit (epoch, holder, first_commit_ms, last_commit_ms, commits)
     SELECT ?1::bigint, ?2::text, clock.ms, clock.ms, 1
     FROM (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms) AS clock
     ON CONFLICT (epoch) DO UPDATE SET last_commit_ms = excluded.last_commit_ms,
                                       commits = write_audit.commits + 1";

/// Serializes creating `weft_schema` (a transaction-scoped advisory lock):
/// two sessions running `CREATE TABLE IF NOT EXISTS` at the same moment can
/// both find it missing, and the second then fails on a duplicate key.
const SCHEMA_LOCK: i64 = 0x7765_6674_5f73_6368; // "weft_sch"

/// The store on PostgreSQL 15: one session, driven on a thread of its own, each
/// SQL text prepared once (see the module's docs).
pub struct PostgresBackend {
    /// The URL without its password.
    target: String,
    /// The URL as given (with any password), to connect again; never shown.
    url: String,
    client: Client,
    /// Why the connection ended, written by its thread when it does.
    closed_because: Arc<Mutex<Option<String>>>,
    /// Prepared statements by the SQL text callers gave (with `?N`).
    prepared: HashMap<String, tokio_postgres::Statement>,
}

impl std::fmt::Debug for PostgresBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresBackend")
            .field("target", &self.target)
            .field("closed", &self.client.is_closed())
            .finish()
    }
}

impl PostgresBackend {
    /// Connects to `url` (`postgres://user[:password]@host:port/db`, the
    /// `postgresql://` scheme, or libpq's `key=value` form). Without an
    /// `application_name` in it, the session is named `weft`.
    pub fn connect(url: &str) -> Result<PostgresBackend, StoreError> {
        let target = redact(url);
        let fail = |message: String| StoreError::Database {
            target: target.clone(),
            message,
        };
        // The parser's messages name the option at fault, never the URL
        // (which may hold a password).
        let mut config: tokio_postgres::Config = url
            .parse()
            .map_err(|e| fail(format!("not a PostgreSQL URL: {e}")))?;
        if config.get_application_name().is_none() {
            config.application_name("weft");
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        // The idle time has no "unset" to test: an explicit one is kept.
        if !url.contains("keepalives_idle") {
            config.keepalives_idle(KEEPALIVE_IDLE);
        }
        if config.get_keepalives_interval().is_none() {
            config.keepalives_interval(KEEPALIVE_INTERVAL);
        }
        if config.get_keepalives_retries().is_none() {
            config.keepalives_retries(KEEPALIVE_RETRIES);
        }
        if config.get_tcp_user_timeout().is_none() {
            config.tcp_user_timeout(TCP_USER_TIMEOUT);
        }
        config.keepalives(true);
        // A server paused (or starved) inside a transaction holds the lease
        // row's shared lock and would keep a standby from taking over: the
        // database ends such a transaction after 5 s idle. Weft sends each
        // transaction at once, so a live server never idles that long.
        if config.get_options().is_none() {
            config.options("-c idle_in_transaction_session_timeout=5000");
        }

        let closed_because = Arc::new(Mutex::new(None));
        let (ready, connected) = std::sync::mpsc::channel();
        let thread_closed = Arc::clone(&closed_because);
        let thread_target = target.clone();
        std::thread::Builder::new()
            .name("weft-postgres".into())
            .spawn(move || drive(config, ready, thread_closed, thread_target))
            .map_err(|e| fail(format!("cannot start the connection's thread: {e}")))?;
        let client = connected
            .recv()
            .map_err(|_| fail("the connection's thread ended before connecting".into()))?
            .map_err(|e| fail(format!("cannot connect: {e}")))?;
        Ok(PostgresBackend {
            target,
            url: url.to_string(),
            client,
            closed_because,
            prepared: HashMap::new(),
        })
    }

    /// Whether the connection is gone (every call now fails; nothing here
    /// reconnects).
    pub fn is_closed(&self) -> bool {
        self.client.is_closed()
    }

    /// Runs `sql` — one or more statements separated by `;`, without
    /// parameters — through the simple protocol: for what cannot be
    /// prepared or must run outside a transaction (`CREATE DATABASE`).
    pub fn batch_execute(&mut self, sql: &str) -> Result<(), StoreError> {
        self.check_open()?;
        futures_executor::block_on(self.client.batch_execute(sql)).map_err(|e| self.error(&e))
    }

    fn check_open(&self) -> Result<(), StoreError> {
        if self.client.is_closed() {
            return Err(self.closed());
        }
        Ok(())
    }

    fn closed(&self) -> StoreError {
        let why = self
            .closed_because
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
            .unwrap_or_else(|| "connection closed".into());
        self.lost(&why)
    }

    fn lost(&self, why: &str) -> StoreError {
        StoreError::Database {
            target: self.target.clone(),
            message: format!(
                "the connection to PostgreSQL is lost ({why}); this server does not reconnect by itself"
            ),
        }
    }

    fn error(&self, error: &tokio_postgres::Error) -> StoreError {
        if error.is_closed() || self.client.is_closed() {
            return self.closed();
        }
        // A FATAL error is the server's last word on this connection (an
        // administrator ended it, the server is shutting down).
        if let Some(db) = error.as_db_error()
            && matches!(db.severity(), "FATAL" | "PANIC")
        {
            return self.lost(&describe(error));
        }
        StoreError::Database {
            target: self.target.clone(),
            message: describe(error),
        }
    }

    /// Prepares whichever of `sqls` are not prepared yet, all in one round
    /// trip.
    fn prepare(&mut self, sqls: &[&str]) -> Result<(), StoreError> {
        let unprepared = |prepared: &HashMap<String, tokio_postgres::Statement>| {
            let mut missing: Vec<&str> = Vec::new();
            for sql in sqls {
                if !prepared.contains_key(*sql) && !missing.contains(sql) {
                    missing.push(sql);
                }
            }
            missing
        };
        let mut missing = unprepared(&self.prepared);
        if missing.is_empty() {
            return Ok(());
        }
        if self.prepared.len() + missing.len() > PREPARED_LIMIT {
            self.prepared.clear();
            missing = unprepared(&self.prepared);
        }
        let converted: Vec<String> = missing.iter().map(|sql| placeholders(sql)).collect();
        let client = &self.client;
        let results = futures_executor::block_on(in_order(
            converted.iter().map(|sql| client.prepare(sql)).collect(),
        ));
        for (sql, result) in missing.into_iter().zip(results) {
            match result {
                Ok(statement) => {
                    self.prepared.insert(sql.to_string(), statement);
                }
                Err(e) => {
                    let error = self.error(&e);
                    return Err(with_context(error, &format!("preparing `{}`", head(sql))));
                }
            }
        }
        Ok(())
    }

    fn statement(&self, sql: &str) -> Result<&tokio_postgres::Statement, StoreError> {
        self.prepared.get(sql).ok_or_else(|| StoreError::Database {
            target: self.target.clone(),
            message: format!("`{}` was not prepared", head(sql)),
        })
    }

    /// The transaction of [`Backend::commit`], up to and including COMMIT;
    /// on an error the caller rolls back.
    async fn write(
        &self,
        fence: Option<&Fence>,
        statements: &[Statement],
    ) -> Result<(), StoreError> {
        let client = &self.client;
        let audit_params: Vec<Value>;
        let mut steps: Vec<(Step, Request<'_>)> = Vec::new();
        match fence {
            Some(fence) => {
                // BEGIN and the lease's read go out together: one round trip.
                let lease = self.statement(LEASE)?;
                let (begun, lease) = futures_util::future::join(
                    client.batch_execute("BEGIN"),
                    client.query_opt(lease, &[]),
                )
                .await;
                begun.map_err(|e| self.error(&e))?;
                let lease_corrupt = |why: String| StoreError::Corrupt {
                    target: self.target.clone(),
                    what: "the leader's lease".into(),
                    why,
                };
                let row = lease
                    .map_err(|e| self.error(&e))?
                    .ok_or_else(|| lease_corrupt("its row (id 1) is missing".into()))?;
                let epoch: i64 = row.try_get(0).map_err(|e| lease_corrupt(e.to_string()))?;
                let holder: String = row.try_get(1).map_err(|e| lease_corrupt(e.to_string()))?;
                if epoch != fence.epoch || holder != fence.holder {
                    return Err(StoreError::Fenced {
                        target: self.target.clone(),
                        mine: fence.epoch,
                        current: epoch,
                        holder,
                    });
                }
                audit_params = vec![Value::Int(fence.epoch), Value::Text(fence.holder.clone())];
                steps.push((
                    Step::Audit,
                    execute(client, self.statement(AUDIT)?, &audit_params),
                ));
            }
            None => {
                // Awaited before the statements are sent: were they sent
                // behind a BEGIN that failed, each would commit on its own.
                // (Unfenced commits are the rare ones: replay, simulation.)
                client
                    .batch_execute("BEGIN")
                    .await
                    .map_err(|e| with_context(self.error(&e), "BEGIN"))?;
            }
        }
        for (n, statement) in statements.iter().enumerate() {
            let prepared = self.statement(statement.sql)?;
            steps.push((
                Step::Statement(n),
                execute(client, prepared, &statement.params),
            ));
        }
        // Every statement is sent before any answer is awaited (the
        // connection pipelines them, in order): a batch costs one round
        // trip, not one per statement.
        let (labels, requests): (Vec<Step>, Vec<Request<'_>>) = steps.into_iter().unzip();
        for (step, result) in labels.into_iter().zip(in_order(requests).await) {
            if let Err(e) = result {
                let what = match step {
                    Step::Audit => "recording the commit in write_audit".to_string(),
                    Step::Statement(n) => format!(
                        "statement {} of {} (`{}`)",
                        n + 1,
                        statements.len(),
                        head(statements[n].sql)
                    ),
                };
                return Err(with_context(self.error(&e), &what));
            }
        }
        client
            .batch_execute("COMMIT")
            .await
            .map_err(|e| with_context(self.error(&e), "COMMIT"))
    }

    /// Ends a transaction left open by an error. On a lost connection
    /// there is nothing to end: the server rolled it back.
    fn rollback(&self) {
        if !self.client.is_closed() {
            let _ = futures_executor::block_on(self.client.batch_execute("ROLLBACK"));
        }
    }

    async fn create_schema_table(&self) -> Result<(), tokio_postgres::Error> {
        // One simple query is one implicit transaction: the advisory lock
        // is held until the table exists.
        self.client
            .batch_execute(&format!(
                "SELECT pg_advisory_xact_lock({SCHEMA_LOCK});
                 CREATE TABLE IF NOT EXISTS weft_schema (
                     version BIGINT PRIMARY KEY,
                     description TEXT NOT NULL,
                     applied_ms BIGINT NOT NULL
                 )"
            ))
            .await
    }

    /// Applies `migration` in one transaction unless the schema has it.
    async fn apply(&self, migration: &migrations::Migration) -> Result<(), StoreError> {
        let client = &self.client;
        let error = |e: tokio_postgres::Error| {
            with_context(
                self.error(&e),
                &format!(
                    "migration {} ({})",
                    migration.version, migration.description
                ),
            )
        };
        // The exclusive lock makes a second server wait here until the
        // first has committed this migration; it then reads the version
        // the first recorded and skips it.
        client
            .batch_execute("BEGIN; LOCK TABLE weft_schema IN EXCLUSIVE MODE")
            .await
            .map_err(error)?;
        let found: i64 = client
            .query_one("SELECT COALESCE(MAX(version), 0) FROM weft_schema", &[])
            .await
            .and_then(|row| row.try_get(0))
            .map_err(error)?;
        if found > migrations::latest() {
            return Err(StoreError::TooNew {
                target: self.target.clone(),
                found,
                known: migrations::latest(),
            });
        }
        if found >= migration.version {
            return client.batch_execute("COMMIT").await.map_err(error);
        }
        for statement in migrations::statements(migration, Dialect::Postgres) {
            client.batch_execute(&statement).await.map_err(error)?;
        }
        client
            .execute(
                "INSERT INTO weft_schema (version, description, applied_ms)
                 VALUES ($1, $2, (extract(epoch FROM clock_timestamp()) * 1000)::bigint)",
                &[&migration.version, &migration.description],
            )
            .await
            .map_err(error)?;
        client.batch_execute("COMMIT").await.map_err(error)
    }
}

/// The connection's thread: connects, hands the client over, then drives
/// the connection until it ends (the backend dropped its client, or the
/// server or network ended it).
fn drive(
    config: tokio_postgres::Config,
    ready: std::sync::mpsc::Sender<Result<Client, String>>,
    closed_because: Arc<Mutex<Option<String>>>,
    target: String,
) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = ready.send(Err(format!("cannot start the connection's runtime: {e}")));
            return;
        }
    };
    runtime.block_on(async move {
        let (client, connection) = match config.connect(NoTls).await {
            Ok(connected) => connected,
            Err(e) => {
                let _ = ready.send(Err(describe(&e)));
                return;
            }
        };
        if ready.send(Ok(client)).is_err() {
            return;
        }
        // Awaited through a pin, not consumed: the cause is recorded before
        // the connection is dropped, and so before any waiting call learns
        // that it ended.
        let mut connection = std::pin::pin!(connection);
        let why = match connection.as_mut().await {
            Ok(()) => "closed by this server".to_string(),
            Err(e) => {
                let why = describe(&e);
                tracing::warn!(store = %target, "the connection to PostgreSQL ended: {why}");
                why
            }
        };
        *closed_because
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(why);
    });
}

impl Backend for PostgresBackend {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn is_closed(&self) -> bool {
        self.client.is_closed()
    }

    fn reconnect(&mut self) -> Result<(), StoreError> {
        *self = PostgresBackend::connect(&self.url)?;
        Ok(())
    }

    fn target(&self) -> &str {
        &self.target
    }

    fn commit(
        &mut self,
        fence: Option<&Fence>,
        statements: &[Statement],
    ) -> Result<(), StoreError> {
        self.check_open()?;
        let mut sqls: Vec<&str> = statements.iter().map(|s| s.sql).collect();
        if fence.is_some() {
            sqls.extend([LEASE, AUDIT]);
        }
        self.prepare(&sqls)?;
        let result = futures_executor::block_on(self.write(fence, statements));
        if result.is_err() {
            self.rollback();
        }
        result
    }

    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>, StoreError> {
        self.check_open()?;
        self.prepare(&[sql])?;
        let statement = self.statement(sql)?;
        let bound: Vec<Bound<'_>> = params.iter().map(Bound).collect();
        let refs: Vec<&(dyn ToSql + Sync)> =
            bound.iter().map(|b| b as &(dyn ToSql + Sync)).collect();
        let rows = futures_executor::block_on(self.client.query(statement, &refs))
            .map_err(|e| with_context(self.error(&e), &format!("`{}`", head(sql))))?;
        rows.iter()
            .map(|row| {
                (0..row.len())
                    .map(|i| {
                        row.try_get::<_, Read>(i)
                            .map(|read| read.0)
                            .map_err(|e| self.error(&e))
                    })
                    .collect()
            })
            .collect()
    }

    fn migrate(&mut self) -> Result<(), StoreError> {
        self.check_open()?;
        futures_executor::block_on(self.create_schema_table())
            .map_err(|e| with_context(self.error(&e), "creating weft_schema"))?;
        for migration in migrations::MIGRATIONS {
            if let Err(e) = futures_executor::block_on(self.apply(migration)) {
                self.rollback();
                return Err(e);
            }
        }
        Ok(())
    }
}

/// One request of a transaction, sent when first polled.
type Request<'a> = Pin<Box<dyn Future<Output = Result<(), tokio_postgres::Error>> + 'a>>;

/// What a request of [`PostgresBackend::write`] was, for its error.
#[derive(Debug, Clone, Copy)]
enum Step {
    Audit,
    Statement(usize),
}

fn execute<'a>(
    client: &'a Client,
    statement: &'a tokio_postgres::Statement,
    params: &'a [Value],
) -> Request<'a> {
    Box::pin(async move {
        client
            .execute_raw(statement, params.iter().map(Bound))
            .await
            .map(drop)
    })
}

/// Awaits `futures` together, every one first polled in the order given:
/// each sends its request when first polled, so the requests leave in that
/// order and the connection pipelines them. After that first pass only
/// the futures woken by an answer are polled again.
async fn in_order<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    let mut pending = FuturesUnordered::new();
    let mut unsent: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    poll_fn(|cx| {
        for (i, mut future) in unsent.drain(..).enumerate() {
            match future.as_mut().poll(cx) {
                Poll::Ready(output) => outputs[i] = Some(output),
                Poll::Pending => pending.push(future.map(move |output| (i, output))),
            }
        }
        Poll::Ready(())
    })
    .await;
    while let Some((i, output)) = pending.next().await {
        outputs[i] = Some(output);
    }
    outputs
        .into_iter()
        .map(|output| output.expect("every future was awaited to its end"))
        .collect()
}

/// Binds a [`Value`] as whatever the parameter's type is, where it fits:
/// PostgreSQL types each parameter from the SQL, where SQLite takes any
/// value anywhere.
#[derive(Debug)]
struct Bound<'a>(&'a Value);

impl ToSql for Bound<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn StdError + Sync + Send>> {
        let mismatch = |what: &str| -> Box<dyn StdError + Sync + Send> {
            format!("cannot bind {what} to a parameter of type {ty}").into()
        };
        let out_of_range =
            |v: i64| -> Box<dyn StdError + Sync + Send> { format!("{v} does not fit {ty}").into() };
        match self.0 {
            Value::Null => Ok(IsNull::Yes),
            Value::Int(v) => {
                if *ty == Type::INT8 {
                    v.to_sql(ty, out)
                } else if *ty == Type::INT4 {
                    i32::try_from(*v)
                        .map_err(|_| out_of_range(*v))?
                        .to_sql(ty, out)
                } else if *ty == Type::INT2 {
                    i16::try_from(*v)
                        .map_err(|_| out_of_range(*v))?
                        .to_sql(ty, out)
                } else if *ty == Type::FLOAT8 {
                    // A whole number where a real is stored, as SQLite would.
                    (*v as f64).to_sql(ty, out)
                } else {
                    Err(mismatch("an integer"))
                }
            }
            Value::Real(v) => {
                if *ty == Type::FLOAT8 {
                    v.to_sql(ty, out)
                } else if *ty == Type::FLOAT4 {
                    (*v as f32).to_sql(ty, out)
                } else {
                    Err(mismatch("a real"))
                }
            }
            Value::Text(v) if <&str as ToSql>::accepts(ty) => v.as_str().to_sql(ty, out),
            Value::Text(_) => Err(mismatch("a text")),
            Value::Blob(v) if *ty == Type::BYTEA => v.as_slice().to_sql(ty, out),
            Value::Blob(_) => Err(mismatch("a blob")),
        }
    }

    /// Every type: whether a value fits is decided per value in `to_sql`
    /// (a NULL fits any).
    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// A column read as a [`Value`].
struct Read(Value);

impl<'a> FromSql<'a> for Read {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Read, Box<dyn StdError + Sync + Send>> {
        let value = if *ty == Type::INT8 {
            Value::Int(i64::from_sql(ty, raw)?)
        } else if *ty == Type::INT4 {
            Value::Int(i32::from_sql(ty, raw)?.into())
        } else if *ty == Type::INT2 {
            Value::Int(i16::from_sql(ty, raw)?.into())
        } else if *ty == Type::OID {
            Value::Int(u32::from_sql(ty, raw)?.into())
        } else if *ty == Type::BOOL {
            // SQLite's booleans are 0 and 1.
            Value::Int(bool::from_sql(ty, raw)?.into())
        } else if *ty == Type::FLOAT8 {
            Value::Real(f64::from_sql(ty, raw)?)
        } else if *ty == Type::FLOAT4 {
            Value::Real(f32::from_sql(ty, raw)?.into())
        } else if *ty == Type::NUMERIC {
            // What SUM and AVG of integers give.
            numeric(raw)?
        } else if *ty == Type::BYTEA {
            Value::Blob(raw.to_vec())
        } else if <&str as FromSql>::accepts(ty) {
            Value::Text(<&str as FromSql>::from_sql(ty, raw)?.to_string())
        } else {
            return Err(format!("the store does not read columns of type {ty}").into());
        };
        Ok(Read(value))
    }

    fn from_sql_null(_: &Type) -> Result<Read, Box<dyn StdError + Sync + Send>> {
        Ok(Read(Value::Null))
    }

    /// Every type: an unreadable one gets a message naming it from
    /// `from_sql` rather than the driver's about a Rust type.
    fn accepts(_: &Type) -> bool {
        true
    }
}

/// A NUMERIC in PostgreSQL's binary form (base-10000 digits): an `Int` when
/// it is whole and fits, else a `Real`.
fn numeric(raw: &[u8]) -> Result<Value, Box<dyn StdError + Sync + Send>> {
    let word = |i: usize| -> Result<u16, Box<dyn StdError + Sync + Send>> {
        raw.get(2 * i..2 * i + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(|| "a truncated numeric".into())
    };
    let ndigits = usize::from(word(0)?);
    let weight = i64::from(word(1)? as i16);
    let sign = word(2)?;
    let dscale = word(3)?;
    match sign {
        0x0000 | 0x4000 => {}
        0xC000 => return Ok(Value::Real(f64::NAN)),
        0xD000 => return Ok(Value::Real(f64::INFINITY)),
        0xF000 => return Ok(Value::Real(f64::NEG_INFINITY)),
        _ => return Err(format!("a numeric with sign {sign:#x}").into()),
    }
    let digits = (0..ndigits)
        .map(|i| word(4 + i))
        .collect::<Result<Vec<u16>, _>>()?;
    // Digit i stands for digits[i] * 10000^(weight - i).
    let mut integer = String::new();
    for power in (0..=weight.max(-1)).rev() {
        let i = weight - power;
        let digit = usize::try_from(i)
            .ok()
            .and_then(|i| digits.get(i))
            .copied()
            .unwrap_or(0);
        if integer.is_empty() {
            integer = digit.to_string();
        } else {
            integer.push_str(&format!("{digit:04}"));
        }
    }
    if integer.is_empty() {
        integer.push('0');
    }
    let mut fraction = String::new();
    // With a weight below -1, zeros stand before the first digit stored.
    fraction.push_str(&"0000".repeat(usize::try_from(-(weight + 1)).unwrap_or(0)));
    for digit in digits.iter().skip(usize::try_from(weight + 1).unwrap_or(0)) {
        fraction.push_str(&format!("{digit:04}"));
    }
    let negative = if sign == 0x4000 { "-" } else { "" };
    if dscale == 0
        && fraction.trim_end_matches('0').is_empty()
        && let Ok(v) = format!("{negative}{integer}").parse::<i64>()
    {
        return Ok(Value::Int(v));
    }
    Ok(Value::Real(
        format!("{negative}{integer}.{fraction}0").parse::<f64>()?,
    ))
}

/// `sql` with SQLite's numbered parameters (`?1`) written as PostgreSQL's
/// (`$1`), except inside quoted strings, quoted names and comments. (The
/// store's SQL uses standard strings only: no `E'…'` escapes, no
/// dollar quoting.)
fn placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        match c {
            '\'' | '"' => {
                // A doubled quote inside ends and reopens: same result.
                for inner in chars.by_ref() {
                    out.push(inner);
                    if inner == c {
                        break;
                    }
                }
            }
            '-' if chars.peek() == Some(&'-') => {
                for inner in chars.by_ref() {
                    out.push(inner);
                    if inner == '\n' {
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                let mut previous = ' ';
                // Skip the `*` that opened it, so `/*/` does not close.
                if let Some(star) = chars.next() {
                    out.push(star);
                }
                for inner in chars.by_ref() {
                    out.push(inner);
                    if previous == '*' && inner == '/' {
                        break;
                    }
                    previous = inner;
                }
            }
            '?' if chars.peek().is_some_and(char::is_ascii_digit) => {
                out.pop();
                out.push('$');
            }
            _ => {}
        }
    }
    out
}

/// `url` without its password, for messages and `target()`.
fn redact(url: &str) -> String {
    for scheme in ["postgres://", "postgresql://"] {
        if let Some(rest) = url.strip_prefix(scheme) {
            let end = rest.find(['/', '?']).unwrap_or(rest.len());
            let (authority, tail) = rest.split_at(end);
            let authority = match authority.rsplit_once('@') {
                Some((userinfo, host)) => {
                    let user = userinfo.split_once(':').map_or(userinfo, |(user, _)| user);
                    format!("{user}@{host}")
                }
                None => authority.to_string(),
            };
            let tail = match tail.split_once('?') {
                Some((path, query)) => {
                    let kept: Vec<&str> = query
                        .split('&')
                        .filter(|pair| !pair.starts_with("password="))
                        .collect();
                    if kept.is_empty() {
                        path.to_string()
                    } else {
                        format!("{path}?{}", kept.join("&"))
                    }
                }
                None => tail.to_string(),
            };
            return format!("{scheme}{authority}{tail}");
        }
    }
    redact_key_value(url)
}

/// libpq's `key=value key='quoted value'` form without its password.
fn redact_key_value(dsn: &str) -> String {
    let mut kept: Vec<&str> = Vec::new();
    let mut rest = dsn.trim_start();
    while !rest.is_empty() {
        let key_end = rest
            .find(|c: char| c == '=' || c.is_whitespace())
            .unwrap_or(rest.len());
        let key = &rest[..key_end];
        let after_key = rest[key_end..].trim_start();
        let Some(value) = after_key.strip_prefix('=') else {
            // Not the form: keep what is left as it is.
            kept.push(rest);
            break;
        };
        let value = value.trim_start();
        let mut len = 0;
        let mut escaped = false;
        if let Some(quoted) = value.strip_prefix('\'') {
            len = 1;
            for c in quoted.chars() {
                len += c.len_utf8();
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == '\'' {
                    break;
                }
            }
        } else {
            for c in value.chars() {
                if c.is_whitespace() && !escaped {
                    break;
                }
                len += c.len_utf8();
                escaped = !escaped && c == '\\';
            }
        }
        let pair_end = dsn.len() - value.len() + len;
        let pair_start = dsn.len() - rest.len();
        if key != "password" {
            kept.push(&dsn[pair_start..pair_end]);
        }
        rest = dsn[pair_end..].trim_start();
    }
    kept.join(" ")
}

/// A driver error as one line: the server's message and SQLSTATE when the
/// server sent one.
fn describe(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => {
            let mut message = format!(
                "{}: {} (SQLSTATE {})",
                db.severity(),
                db.message(),
                db.code().code()
            );
            if let Some(detail) = db.detail() {
                message.push_str(&format!("; {detail}"));
            }
            message
        }
        None => {
            // The driver's own message may leave out its cause ("error
            // serializing parameter 1"): add the chain of causes.
            let mut message = error.to_string();
            let mut source = StdError::source(error);
            while let Some(cause) = source {
                let text = cause.to_string();
                if !message.contains(&text) {
                    message.push_str(&format!(": {text}"));
                }
                source = cause.source();
            }
            message
        }
    }
}

/// `error` with what was being done put in front of its message.
fn with_context(error: StoreError, what: &str) -> StoreError {
    match error {
        StoreError::Database { target, message } => StoreError::Database {
            target,
            message: format!("{what}: {message}"),
        },
        other => other,
    }
}

/// The start of a statement, on one line, for messages.
fn head(sql: &str) -> String {
    let line = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(60) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_parameters_become_dollar_ones_outside_quotes_and_comments() {
        assert_eq!(
            placeholders("UPDATE c SET v = ?2 WHERE id = ?1 AND x = ?12"),
            "UPDATE c SET v = $2 WHERE id = $1 AND x = $12"
        );
        assert_eq!(
            placeholders("SELECT '?1', 'it''s ?2', \"?3\", ?4 -- ?5\n, ?6 /* ?7 */ ?8"),
            "SELECT '?1', 'it''s ?2', \"?3\", $4 -- ?5\n, $6 /* ?7 */ $8"
        );
        // A `?` without a number (jsonb's operator) is left alone.
        assert_eq!(
            placeholders("SELECT d ? 'k' FROM t"),
            "SELECT d ? 'k' FROM t"
        );
        assert_eq!(
            placeholders("SELECT 1 /*/ ?1 */, ?2"),
            "SELECT 1 /*/ ?1 */, $2"
        );
    }

    #[test]
    fn the_target_never_shows_a_password() {
        for (url, target) in [
            (
                "postgres://weft:s3cret@db.example:5432/weft",
                "postgres://weft@db.example:5432/weft",
            ),
            (
                "postgresql://weft:p%40ss@db:5432/weft?application_name=a&password=x",
                "postgresql://weft@db:5432/weft?application_name=a",
            ),
            ("postgres://weft@db/weft", "postgres://weft@db/weft"),
            ("postgres://db:5432", "postgres://db:5432"),
            (
                "host=db user=weft password='a b\\' c' dbname=weft",
                "host=db user=weft dbname=weft",
            ),
            ("password=x host=db", "host=db"),
        ] {
            assert_eq!(redact(url), target, "{url}");
        }
    }

    #[test]
    fn numerics_read_as_integers_when_whole_else_reals() {
        fn encode(digits: &[u16], weight: i16, sign: u16, dscale: u16) -> Vec<u8> {
            let mut raw = Vec::new();
            for word in [digits.len() as u16, weight as u16, sign, dscale] {
                raw.extend(word.to_be_bytes());
            }
            for digit in digits {
                raw.extend(digit.to_be_bytes());
            }
            raw
        }
        // 12345678 = 1234 * 10000 + 5678
        assert_eq!(
            numeric(&encode(&[1234, 5678], 1, 0, 0)).unwrap(),
            Value::Int(12_345_678)
        );
        assert_eq!(numeric(&encode(&[], 0, 0, 0)).unwrap(), Value::Int(0));
        // 20000 is stored as one digit 2 of weight 1.
        assert_eq!(
            numeric(&encode(&[2], 1, 0x4000, 0)).unwrap(),
            Value::Int(-20_000)
        );
        // 1.5
        assert_eq!(
            numeric(&encode(&[1, 5000], 0, 0, 1)).unwrap(),
            Value::Real(1.5)
        );
        // 0.00012 = 1.2 * 10^-4: weight -1, digits [1, 2000]
        assert_eq!(
            numeric(&encode(&[1, 2000], -1, 0, 5)).unwrap(),
            Value::Real(0.00012)
        );
        // 9223372036854775808 (2^63) does not fit: a real.
        assert_eq!(
            numeric(&encode(&[922, 3372, 368, 5477, 5808], 4, 0, 0)).unwrap(),
            Value::Real(9_223_372_036_854_775_808.0)
        );
        assert!(numeric(&[0, 1]).is_err());
    }
}
