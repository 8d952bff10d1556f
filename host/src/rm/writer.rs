//! The store's writer: commits the event loop's batches, in the order the
//! loop made them, and answers each batch's commands once it is durable.
//! While a commit is in flight, the next batches go to a thread of its own
//! (`weft-store`), so the loop goes on with the next commands while the
//! last ones are written (a pipelined group commit); when none is, the loop
//! commits itself, sparing a light load the hop to another thread.
//!
//! What callers see is as before: no answer leaves before the changes of
//! its command, and of every command before it, are in the store. A failed
//! (or panicking) commit keeps its writes, which go first in the next one;
//! a fenced commit (another server is active) refuses every answer from
//! then on and tells the loop to stop.
//!
//! The loop's other writes — reservations and their counter, saved by the
//! reservation service in transactions of their own — may land before
//! batches still queued here: they touch only rows no batch writes. A
//! direct write of rows the batches also write would have to come here.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use crate::metrics::metrics;
use crate::store::{Batch, Store, StoreError};

/// How many batches may wait for the writer before the loop waits for it
/// (each holds its commands' answers): enough to keep both busy.
const QUEUED_BATCHES: usize = 4;

/// One turn of the loop: its writes and the answers waiting for them.
pub(super) struct Turn {
    pub writes: Batch,
    pub replies: Vec<super::Reply>,
}

/// The loop's end of the writer.
pub(super) struct Writer {
    turns: Option<mpsc::SyncSender<Turn>>,
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// What the loop and the writer's thread both reach.
struct Shared {
    store: Store,
    /// Writes a failed commit kept: they go first in the next one.
    kept: Mutex<Batch>,
    /// Turns handed to the thread and not yet answered.
    in_flight: AtomicUsize,
    /// A commit was fenced: another server is active.
    fenced: AtomicBool,
}

impl Writer {
    /// Starts the writer of `store`.
    pub(super) fn start(store: Store) -> std::io::Result<Writer> {
        let (turns, inbox) = mpsc::sync_channel::<Turn>(QUEUED_BATCHES);
        let shared = Arc::new(Shared {
            store,
            kept: Mutex::new(Batch::default()),
            in_flight: AtomicUsize::new(0),
            fenced: AtomicBool::new(false),
        });
        let theirs = shared.clone();
        let thread = std::thread::Builder::new()
            .name("weft-store".into())
            .spawn(move || write_turns(&theirs, &inbox))?;
        Ok(Writer {
            turns: Some(turns),
            shared,
            thread: Some(thread),
        })
    }

    /// Writes `turn` and answers it: here and now if the loop has nothing
    /// else waiting (`busy` false) and nothing is in flight (every turn
    /// before it is answered), else on the writer's thread (waiting while
    /// it is `QUEUED_BATCHES` behind).
    pub(super) fn write(&self, turn: Turn, busy: bool) {
        if !busy && self.shared.in_flight.load(Ordering::SeqCst) == 0 {
            self.shared.write(turn);
            return;
        }
        self.shared.in_flight.fetch_add(1, Ordering::SeqCst);
        let Some(turns) = &self.turns else {
            return;
        };
        if let Err(mpsc::SendError(turn)) = turns.send(turn) {
            // The thread is gone: the loop writes this turn itself.
            self.shared.in_flight.fetch_sub(1, Ordering::SeqCst);
            self.shared.write(turn);
        }
    }

    /// Whether a commit was fenced: another server is active.
    pub(super) fn is_fenced(&self) -> bool {
        self.shared.fenced.load(Ordering::SeqCst)
    }

    /// Waits until every turn handed over is written (or refused), and
    /// gives back what a failed commit kept, for the loop's last commit.
    pub(super) fn finish(mut self) -> Batch {
        self.turns = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        std::mem::take(&mut *self.shared.kept())
    }
}

impl Shared {
    fn kept(&self) -> std::sync::MutexGuard<'_, Batch> {
        self.kept
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Commits `turn`'s writes after any kept, then answers its commands.
    fn write(&self, turn: Turn) {
        if self.fenced.load(Ordering::SeqCst) {
            answer(turn.replies, Err("another server is active".into()));
            return;
        }
        let mut kept = self.kept();
        let mut writes = std::mem::take(&mut *kept);
        writes.append(turn.writes);
        // A panic in the store is a failed commit, not a dead writer.
        let committed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            commit(&self.store, &writes)
        }))
        .unwrap_or_else(|_| {
            metrics().store_commit_failures.inc();
            Err(StoreError::Database {
                target: self.store.target().to_string(),
                message: "the commit panicked (a bug; logged)".into(),
            })
        });
        match committed {
            Ok(()) => {
                drop(kept);
                answer(turn.replies, Ok(()));
            }
            Err(error) => {
                if error.is_fenced() {
                    tracing::error!(%error, "another server is active: this one stops writing and stops");
                    self.fenced.store(true, Ordering::SeqCst);
                } else {
                    tracing::error!(%error, writes = writes.len(), "the store refused a commit; its writes are kept for the next");
                    *kept = writes;
                }
                drop(kept);
                answer(turn.replies, Err(error.to_string()));
            }
        }
    }
}

/// The writer's thread: each turn (with any queued behind it: one
/// transaction for all of them) committed, then answered.
fn write_turns(shared: &Shared, inbox: &mpsc::Receiver<Turn>) {
    while let Ok(mut turn) = inbox.recv() {
        let mut turns = 1;
        while let Ok(next) = inbox.try_recv() {
            turn.writes.append(next.writes);
            turn.replies.extend(next.replies);
            turns += 1;
        }
        shared.write(turn);
        shared.in_flight.fetch_sub(turns, Ordering::SeqCst);
    }
}

/// Commits `writes`, timed.
fn commit(store: &Store, writes: &Batch) -> Result<(), StoreError> {
    if writes.is_empty() {
        return Ok(());
    }
    let started = std::time::Instant::now();
    let result = store.commit(writes);
    metrics()
        .store_commit_seconds
        .observe(started.elapsed().as_secs_f64());
    if result.is_err() {
        metrics().store_commit_failures.inc();
    }
    result
}

fn answer(replies: Vec<super::Reply>, committed: Result<(), String>) {
    for reply in replies {
        reply(committed.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A turn setting `name`, whose answer reports what the store held
    /// for every name so far when it came.
    fn turn(
        name: &str,
        store: &Store,
        answers: &mpsc::Sender<(String, Result<(), String>, Vec<String>)>,
    ) -> Turn {
        let mut writes = Batch::default();
        writes.set_setting(name, "1");
        let (name, store, answers) = (name.to_string(), store.clone(), answers.clone());
        let reply: super::super::Reply = Box::new(move |committed| {
            let held = store.settings().unwrap().into_keys().collect();
            let _ = answers.send((name, committed, held));
        });
        Turn {
            writes,
            replies: vec![reply],
        }
    }

    #[test]
    fn each_answer_waits_until_its_writes_and_those_before_are_durable() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let writer = Writer::start(store.clone()).unwrap();
        let (answers, answered) = mpsc::channel();
        let names: Vec<String> = (0..50).map(|i| format!("w{i:02}")).collect();
        // In runs: some here and now, some on the thread behind others.
        for (i, name) in names.iter().enumerate() {
            writer.write(turn(name, &store, &answers), i % 7 < 4);
        }
        writer.finish();
        let got: Vec<_> = answered.try_iter().collect();
        assert_eq!(got.len(), names.len(), "every turn answered once");
        for (i, (name, committed, held)) in got.iter().enumerate() {
            assert_eq!(name, &names[i], "answered in the order written");
            assert_eq!(committed, &Ok(()));
            for before in &names[..=i] {
                assert!(
                    held.contains(before),
                    "{name} answered before {before} was stored"
                );
            }
        }
    }
}
