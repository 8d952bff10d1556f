//! The PostgreSQL store against a real PostgreSQL 15 — one throwaway server
//! per test process, a database per test: the SQLite store's behaviours,
//! and what only a shared database has (servers migrating at once, a
//! fenced commit waiting for a takeover, a session ended under it).
//!
//! Without PostgreSQL 15 installed these tests say loudly that they were
//! skipped, except under CI (`CI` set), where they fail.

use std::path::Path;
use std::sync::{Arc, Barrier, mpsc};
use std::time::{Duration, Instant};

use weft_host::quota::{LedgerDelta, ProjectQuota};
use weft_host::store::local_postgres::LocalPostgres;
use weft_host::store::postgres::PostgresBackend;
use weft_host::store::{
    Backend, Batch, Fence, Statement, Store, StoreError, StoredContainer, Value, migrations,
};

macro_rules! database {
    () => {
        match crate::support::pg_database() {
            Some(url) => url,
            None => return,
        }
    };
}

/// `url` with sessions named `name`, made unique by the database's name
/// (tests share one server).
fn named(url: &str, name: &str) -> (String, String) {
    let database = url.rsplit('/').next().unwrap_or_default();
    let application = format!("{name}-{database}");
    (format!("{url}?application_name={application}"), application)
}

fn counter_rows(backend: &mut PostgresBackend) -> Vec<Vec<Value>> {
    backend
        .query("SELECT name, value FROM counter ORDER BY name", &[])
        .unwrap()
}

#[test]
fn reservations_and_counters_survive_reconnecting() {
    let url = database!();
    {
        let store = Store::postgres(&url).unwrap();
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
    let store = Store::postgres(&url).unwrap();
    assert_eq!(
        store.reservations().unwrap(),
        [("r1".into(), "root.plan".into(), "{\"a\":2}".into())]
    );
    assert_eq!(store.counter("reservation").unwrap(), 7);
}

#[test]
fn a_stale_epoch_commits_nothing_and_the_audit_counts_commits() {
    let url = database!();
    let store = Store::postgres(&url).unwrap();
    store
        .query(
            "UPDATE weft_leader SET epoch = 3, holder = 'a' WHERE id = 1",
            &[],
        )
        .unwrap();
    let set_c = || {
        let mut batch = Batch::default();
        batch.set_counter("c", 1);
        batch
    };
    for (epoch, holder) in [(2, "a"), (3, "b")] {
        store.set_fence(Some(Fence {
            epoch,
            holder: holder.into(),
        }));
        match store.commit(&set_c()).unwrap_err() {
            StoreError::Fenced {
                mine,
                current,
                holder,
                ..
            } => assert_eq!((mine, current, holder.as_str()), (epoch, 3, "a")),
            other => panic!("{other}"),
        }
    }
    assert_eq!(store.counter("c").unwrap(), 0);
    assert!(
        store
            .query("SELECT * FROM write_audit", &[])
            .unwrap()
            .is_empty()
    );

    store.set_fence(Some(Fence {
        epoch: 3,
        holder: "a".into(),
    }));
    let before = now_ms();
    store.commit(&set_c()).unwrap();
    store.commit(&set_c()).unwrap();
    let after = now_ms();
    assert_eq!(store.counter("c").unwrap(), 1);
    let audit = store
        .query(
            "SELECT epoch, holder, commits, first_commit_ms, last_commit_ms FROM write_audit",
            &[],
        )
        .unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!(
        audit[0][..3],
        [Value::Int(3), Value::Text("a".into()), Value::Int(2)]
    );
    // Stamped by the database's clock: the same machine's here.
    let (first, last) = (audit[0][3].as_i64().unwrap(), audit[0][4].as_i64().unwrap());
    assert!(
        before - 1000 <= first && first <= last && last <= after + 1000,
        "{before} {first} {last} {after}"
    );
}

#[test]
fn a_schema_newer_than_this_build_is_refused() {
    let url = database!();
    {
        let store = Store::postgres(&url).unwrap();
        store
            .query(
                "INSERT INTO weft_schema (version, description, applied_ms) VALUES (999, 'future', 0)",
                &[],
            )
            .unwrap();
    }
    let error = Store::postgres(&url).unwrap_err();
    assert!(
        matches!(error, StoreError::TooNew { found: 999, known, .. } if known == migrations::latest()),
        "{error}"
    );
    assert!(
        error.to_string().contains("schema is version 999"),
        "{error}"
    );
}

#[test]
fn servers_migrating_one_empty_database_at_once_all_succeed() {
    // Several rounds: the race is in the first milliseconds.
    for _ in 0..3 {
        let url = database!();
        let servers = 4;
        let barrier = Arc::new(Barrier::new(servers));
        let opened: Vec<_> = (0..servers)
            .map(|_| {
                let (url, barrier) = (url.clone(), Arc::clone(&barrier));
                std::thread::spawn(move || {
                    barrier.wait();
                    Store::postgres(&url)
                })
            })
            .collect();
        let stores: Vec<Store> = opened
            .into_iter()
            .map(|thread| thread.join().unwrap().unwrap())
            .collect();
        let versions = stores[0]
            .query("SELECT version FROM weft_schema ORDER BY version", &[])
            .unwrap();
        let expected: Vec<Vec<Value>> = migrations::MIGRATIONS
            .iter()
            .map(|m| vec![Value::Int(m.version)])
            .collect();
        assert_eq!(versions, expected);
        assert_eq!(
            stores[0]
                .query("SELECT count(*) FROM weft_leader", &[])
                .unwrap(),
            [vec![Value::Int(1)]]
        );
    }
}

#[test]
fn every_batch_method_round_trips() {
    let url = database!();
    let store = Store::postgres(&url).unwrap();
    let big: Vec<u8> = (0..1024 * 1024).map(|i| (i % 251) as u8).collect();
    let mut delta = LedgerDelta::default();
    delta.projects.insert(
        "p1".into(),
        ProjectQuota {
            remaining: 10.5,
            total_used: 2.25,
        },
    );
    let day = (
        "p1".to_string(),
        "alice".to_string(),
        "2026-01-02".to_string(),
    );
    delta.daily.insert(day.clone(), 1.75);

    let mut batch = Batch::default();
    batch.ledger(&delta);
    batch.multiplicators(1.5, 2.5);
    batch.put_app("application_1_0001", 1, "{\"app\":1}".into());
    batch.put_app("application_1_0002", 2, "{\"app\":2}".into());
    batch.put_container("c1", "application_1_0001", 1, true, "{\"c\":1}".into());
    batch.put_container("c2", "application_1_0001", 2, false, "{\"c\":2}".into());
    batch.put_container("c3", "application_1_0002", 1, true, "{\"c\":3}".into());
    batch.charged_until("c1", Some(1_700_000_000_123));
    batch.put_node("n2", "{\"node\":2}".into());
    batch.put_node("n1", "{\"node\":1}".into());
    batch.replace_owed(["o1".to_string(), "o2".to_string()]);
    batch.set_setting("queues", "<queues/>");
    batch.set_setting("policy.pricing", "hops");
    batch.put_policy_blob("sha-big", big.clone());
    batch.put_reservation("r1", "root.a", "{}");
    batch.set_counter("app", 2);
    store.commit(&batch).unwrap();

    let container = |record: &str, running, charged_until_ms| StoredContainer {
        record: record.into(),
        running,
        charged_until_ms,
    };
    assert_eq!(
        store.projects().unwrap(),
        [(
            "p1".into(),
            ProjectQuota {
                remaining: 10.5,
                total_used: 2.25
            }
        )]
    );
    assert_eq!(store.daily().unwrap(), [(day.clone(), 1.75)]);
    assert_eq!(store.multiplicators().unwrap(), Some((1.5, 2.5)));
    assert_eq!(
        store.apps().unwrap(),
        [(1, "{\"app\":1}".into()), (2, "{\"app\":2}".into())]
    );
    assert_eq!(
        store.containers().unwrap(),
        [
            container("{\"c\":1}", true, Some(1_700_000_000_123)),
            container("{\"c\":2}", false, None),
            container("{\"c\":3}", true, None),
        ]
    );
    assert_eq!(store.nodes().unwrap(), ["{\"node\":1}", "{\"node\":2}"]);
    assert_eq!(store.owed().unwrap(), ["o1", "o2"]);
    let settings = store.settings().unwrap();
    assert_eq!(settings.len(), 2);
    assert_eq!(settings["queues"], "<queues/>");
    assert_eq!(
        store.policy_blob("sha-big").unwrap().as_deref(),
        Some(&big[..])
    );
    assert_eq!(store.policy_blob("sha-none").unwrap(), None);
    assert_eq!(store.reservations().unwrap().len(), 1);
    assert_eq!(store.counter("app").unwrap(), 2);

    // Upserts replace, deletes delete, a blob is kept once.
    delta.projects.insert(
        "p1".into(),
        ProjectQuota {
            remaining: 9.0,
            total_used: 3.75,
        },
    );
    delta.daily.insert(day.clone(), 2.75);
    let mut batch = Batch::default();
    batch.ledger(&delta);
    batch.multiplicators(1.0, 3.0);
    batch.put_container(
        "c1",
        "application_1_0001",
        1,
        false,
        "{\"c\":\"1b\"}".into(),
    );
    batch.delete_app("application_1_0002");
    batch.delete_container("c2");
    batch.charged_until("c1", None);
    batch.delete_node("n2");
    batch.replace_owed(["o3".to_string()]);
    batch.set_setting("queues", "<queues a=\"1\"/>");
    batch.put_policy_blob("sha-big", vec![1, 2, 3]);
    batch.delete_reservation("r1");
    batch.set_counter("app", 3);
    store.commit(&batch).unwrap();

    // Read back on another connection.
    let store = Store::postgres(&url).unwrap();
    assert_eq!(
        store.projects().unwrap()[0].1,
        ProjectQuota {
            remaining: 9.0,
            total_used: 3.75
        }
    );
    assert_eq!(store.daily().unwrap(), [(day, 2.75)]);
    assert_eq!(store.multiplicators().unwrap(), Some((1.0, 3.0)));
    assert_eq!(store.apps().unwrap(), [(1, "{\"app\":1}".into())]);
    assert_eq!(
        store.containers().unwrap(),
        [container("{\"c\":\"1b\"}", false, None)]
    );
    assert_eq!(store.nodes().unwrap(), ["{\"node\":1}"]);
    assert_eq!(store.owed().unwrap(), ["o3"]);
    assert_eq!(store.settings().unwrap()["queues"], "<queues a=\"1\"/>");
    assert_eq!(
        store.policy_blob("sha-big").unwrap().as_deref(),
        Some(&big[..])
    );
    assert!(store.reservations().unwrap().is_empty());
    assert_eq!(store.counter("app").unwrap(), 3);
}

#[test]
fn nulls_extreme_integers_and_quoted_text_survive() {
    let url = database!();
    let store = Store::postgres(&url).unwrap();
    let text = "it's \"quoted\", ?1 inside, ✓";
    let rows = store
        .query(
            "SELECT ?1::bigint, ?2::bigint, ?3::bigint, ?4::double precision, ?5::text,
                    ?6::bytea, ?7::text, '?1 stays', ?8::int, ?9::smallint, ?10::real,
                    ?11::double precision, ?12::bytea",
            &[
                Value::Null,
                Value::Int(i64::MAX),
                Value::Int(i64::MIN),
                Value::Real(0.1 + 0.2),
                text.into(),
                Value::Blob(vec![0, 255, 1]),
                Value::Null,
                Value::Int(-7),
                Value::Int(300),
                Value::Real(1.5),
                Value::Int(3),
                Value::Blob(Vec::new()),
            ],
        )
        .unwrap();
    assert_eq!(
        rows,
        [vec![
            Value::Null,
            Value::Int(i64::MAX),
            Value::Int(i64::MIN),
            Value::Real(0.1 + 0.2),
            Value::Text(text.into()),
            Value::Blob(vec![0, 255, 1]),
            Value::Null,
            Value::Text("?1 stays".into()),
            Value::Int(-7),
            Value::Int(300),
            Value::Real(1.5),
            Value::Real(3.0),
            Value::Blob(Vec::new()),
        ]]
    );
    // What SUM gives (numeric), booleans as SQLite's 0 and 1.
    assert_eq!(
        store
            .query(
                "SELECT SUM(x), 1.25::numeric, true, false FROM (VALUES (1::bigint), (2::bigint)) AS t (x)",
                &[]
            )
            .unwrap(),
        [vec![
            Value::Int(3),
            Value::Real(1.25),
            Value::Int(1),
            Value::Int(0)
        ]]
    );
    // Counters beyond i64 are kept as the largest, as SQLite's are.
    store.set_counter("big", u64::MAX).unwrap();
    assert_eq!(store.counter("big").unwrap(), i64::MAX as u64);
    let error = store
        .query("SELECT ?1::int", &[Value::Int(1 << 40)])
        .unwrap_err();
    assert!(error.to_string().contains("does not fit"), "{error}");
    let error = store.query("SELECT now()", &[]).unwrap_err();
    assert!(error.to_string().contains("timestamptz"), "{error}");
    // The store still answers after refusing.
    assert_eq!(store.counter("big").unwrap(), i64::MAX as u64);
}

#[test]
fn a_batch_with_a_failing_statement_applies_nothing() {
    let url = database!();
    let mut backend = PostgresBackend::connect(&url).unwrap();
    backend.migrate().unwrap();
    let insert = |name: &str, value: Value| Statement {
        sql: "INSERT INTO counter (name, value) VALUES (?1, ?2)",
        params: vec![name.into(), value],
    };
    // Refused by the database: NOT NULL.
    let error = backend
        .commit(
            None,
            &[
                insert("a", Value::Int(1)),
                insert("bad", Value::Null),
                insert("b", Value::Int(2)),
            ],
        )
        .unwrap_err();
    assert!(error.to_string().contains("statement 2 of 3"), "{error}");
    assert!(error.to_string().contains("23502"), "{error}");
    assert!(counter_rows(&mut backend).is_empty());

    // Refused before it is sent (a text where a number goes), while the
    // statements after it were sent.
    let error = backend
        .commit(
            None,
            &[
                insert("a", Value::Int(1)),
                insert("bad", "one".into()),
                insert("b", Value::Int(2)),
            ],
        )
        .unwrap_err();
    assert!(error.to_string().contains("cannot bind a text"), "{error}");
    assert!(counter_rows(&mut backend).is_empty());

    // Fenced and failing: no audit either.
    backend
        .query(
            "UPDATE weft_leader SET epoch = 1, holder = 'a' WHERE id = 1",
            &[],
        )
        .unwrap();
    let fence = Fence {
        epoch: 1,
        holder: "a".into(),
    };
    backend
        .commit(
            Some(&fence),
            &[insert("a", Value::Int(1)), insert("a", Value::Int(1))],
        )
        .unwrap_err();
    assert!(counter_rows(&mut backend).is_empty());
    assert!(
        backend
            .query("SELECT * FROM write_audit", &[])
            .unwrap()
            .is_empty()
    );

    // And the session is fine afterwards.
    backend
        .commit(Some(&fence), &[insert("a", Value::Int(1))])
        .unwrap();
    assert_eq!(
        counter_rows(&mut backend),
        [vec![Value::Text("a".into()), Value::Int(1)]]
    );
}

#[test]
fn a_large_batch_is_applied_in_order_in_one_transaction() {
    let url = database!();
    let store = Store::postgres(&url).unwrap();
    for round in 0..2 {
        let records: Vec<String> = (0..2000).map(|i| format!("{round}-{i}")).collect();
        let mut batch = Batch::default();
        // A DELETE, then 2000 INSERTs that would collide with the rows it
        // deletes if they ran before it.
        batch.replace_owed(records.clone());
        let started = Instant::now();
        store.commit(&batch).unwrap();
        eprintln!(
            "a batch of 2001 statements committed in {:?}",
            started.elapsed()
        );
        assert_eq!(store.owed().unwrap(), records);
    }
}

#[test]
fn a_fenced_commit_waits_for_a_takeover_in_progress() {
    let url = database!();
    let (store_url, application) = named(&url, "fenced");
    let store = Store::postgres(&store_url).unwrap();
    store
        .query(
            "UPDATE weft_leader SET epoch = 1, holder = 'a' WHERE id = 1",
            &[],
        )
        .unwrap();
    let mut takeover = PostgresBackend::connect(&url).unwrap();
    let mut observer = PostgresBackend::connect(&url).unwrap();
    let commit_in_background = |store: &Store, value: u64| {
        let (done, result) = mpsc::channel();
        let store = store.clone();
        std::thread::spawn(move || {
            let mut batch = Batch::default();
            batch.set_counter("c", value);
            let _ = done.send(store.commit(&batch));
        });
        result
    };
    // Until the commit is seen waiting for the lease row's lock.
    let wait_until_blocked = |observer: &mut PostgresBackend| {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let waiting = observer
                .query(
                    "SELECT count(*) FROM pg_stat_activity
                     WHERE application_name = ?1 AND wait_event_type = 'Lock'",
                    &[application.as_str().into()],
                )
                .unwrap();
            if waiting == [vec![Value::Int(1)]] {
                return;
            }
            assert!(Instant::now() < deadline, "the commit never waited");
            std::thread::sleep(Duration::from_millis(10));
        }
    };

    // A takeover commits while the old leader's commit waits: refused.
    store.set_fence(Some(Fence {
        epoch: 1,
        holder: "a".into(),
    }));
    takeover
        .batch_execute("BEGIN; UPDATE weft_leader SET epoch = epoch + 1, holder = 'b' WHERE id = 1")
        .unwrap();
    let result = commit_in_background(&store, 1);
    wait_until_blocked(&mut observer);
    assert!(result.try_recv().is_err(), "the commit did not wait");
    takeover.batch_execute("COMMIT").unwrap();
    match result.recv_timeout(Duration::from_secs(10)).unwrap() {
        Err(StoreError::Fenced {
            mine,
            current,
            holder,
            ..
        }) => assert_eq!((mine, current, holder.as_str()), (1, 2, "b")),
        other => panic!("{other:?}"),
    }
    assert_eq!(store.counter("c").unwrap(), 0);

    // A takeover that rolls back lets the waiting commit through.
    store.set_fence(Some(Fence {
        epoch: 2,
        holder: "b".into(),
    }));
    takeover
        .batch_execute("BEGIN; UPDATE weft_leader SET epoch = epoch + 1, holder = 'c' WHERE id = 1")
        .unwrap();
    let result = commit_in_background(&store, 2);
    wait_until_blocked(&mut observer);
    takeover.batch_execute("ROLLBACK").unwrap();
    result
        .recv_timeout(Duration::from_secs(10))
        .unwrap()
        .unwrap();
    assert_eq!(store.counter("c").unwrap(), 2);
    assert_eq!(
        store
            .query("SELECT epoch, holder, commits FROM write_audit", &[])
            .unwrap(),
        [vec![Value::Int(2), Value::Text("b".into()), Value::Int(1)]]
    );
}

#[test]
fn a_terminated_session_makes_the_next_call_fail_not_hang() {
    let url = database!();
    let (url, application) = named(&url, "terminated");
    let mut backend = PostgresBackend::connect(&url).unwrap();
    backend.migrate().unwrap();
    assert_eq!(
        backend.query("SELECT 1", &[]).unwrap(),
        [vec![Value::Int(1)]]
    );
    assert!(!backend.is_closed());
    let ended = LocalPostgres::shared()
        .unwrap()
        .terminate(&application)
        .unwrap();
    assert_eq!(ended, 1);

    let (done, result) = mpsc::channel();
    std::thread::spawn(move || {
        let first = backend.query("SELECT 1", &[]);
        let insert = Statement {
            sql: "INSERT INTO counter (name, value) VALUES (?1, ?2)",
            params: vec!["c".into(), Value::Int(1)],
        };
        let second = backend.commit(None, &[insert]);
        let _ = done.send((first, second, backend.is_closed()));
    });
    let (first, second, closed) = result
        .recv_timeout(Duration::from_secs(30))
        .expect("calls on a terminated session return");
    let first = first.unwrap_err().to_string();
    assert!(
        first.contains("the connection to PostgreSQL is lost"),
        "{first}"
    );
    assert!(first.contains("terminating connection"), "{first}");
    let second = second.unwrap_err().to_string();
    assert!(second.contains("does not reconnect by itself"), "{second}");
    assert!(closed);
}

#[test]
fn calls_work_from_inside_a_tokio_runtime() {
    let url = database!();
    for runtime in [
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap(),
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap(),
    ] {
        runtime.block_on(async {
            let store = Store::postgres(&url).unwrap();
            store.set_counter("in-runtime", 5).unwrap();
            assert_eq!(store.counter("in-runtime").unwrap(), 5);
        });
    }
}

#[test]
fn an_unreachable_server_fails_fast_without_showing_the_password() {
    // Nothing listens there (held, then released).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let started = Instant::now();
    let error = Store::postgres(&format!("postgres://weft:s3cret@127.0.0.1:{port}/weft"))
        .unwrap_err()
        .to_string();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        error.starts_with(&format!(
            "store postgres://weft@127.0.0.1:{port}/weft: cannot connect"
        )),
        "{error}"
    );
    assert!(!error.contains("s3cret"), "{error}");
    let error = Store::postgres("postgres://weft:s3cret@127.0.0.1:notaport/weft")
        .unwrap_err()
        .to_string();
    assert!(!error.contains("s3cret"), "{error}");
}

#[test]
fn a_local_server_is_stopped_and_removed_when_dropped() {
    if crate::support::pg_database().is_none() {
        return;
    }
    let started = Instant::now();
    let server = LocalPostgres::start().unwrap();
    eprintln!("a local PostgreSQL started in {:?}", started.elapsed());
    let (pid, dir) = (server.pid(), server.dir().to_path_buf());
    assert!(Path::new(&format!("/proc/{pid}")).exists());
    let store = Store::postgres(&server.url()).unwrap();
    store.set_counter("c", 1).unwrap();
    assert!(server.create_database("no such; name").is_err());
    let other = Store::postgres(&server.create_database("other").unwrap()).unwrap();
    assert_eq!(other.counter("c").unwrap(), 0);
    drop(server);
    assert!(!dir.exists());
    assert!(!Path::new(&format!("/proc/{pid}")).exists());
    // Its sessions are gone with it.
    assert!(store.counter("c").is_err());
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[test]
fn many_distinct_queries_leave_the_store_working() {
    // More texts than the backend keeps prepared: it forgets them all and
    // prepares again what it needs.
    let url = database!();
    let store = Store::postgres(&url).unwrap();
    store.set_counter("c", 1).unwrap();
    for i in 0..600 {
        assert_eq!(
            store.query(&format!("SELECT {i}::bigint"), &[]).unwrap(),
            [vec![Value::Int(i)]]
        );
    }
    store.set_counter("c", 2).unwrap();
    assert_eq!(store.counter("c").unwrap(), 2);
}
