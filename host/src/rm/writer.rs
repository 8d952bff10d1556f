//! The store's writer: commits the event loop's batches on a thread of its
//! own, in the order the loop made them, and answers each batch's commands
//! once it is durable — so the loop goes on with the next commands while
//! the last ones are written (a pipelined group commit).
//!
//! What callers see is as before: no answer leaves before the changes of
//! its command, and of every command before it, are in the store. A failed
//! commit keeps its writes, which go first in the next one; a fenced commit
//! (another server is active) refuses every answer from then on and tells
//! the loop to stop.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

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
    fenced: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Writer {
    /// Starts the writer of `store`.
    pub(super) fn start(store: Store) -> std::io::Result<Writer> {
        let (turns, inbox) = mpsc::sync_channel::<Turn>(QUEUED_BATCHES);
        let fenced = Arc::new(AtomicBool::new(false));
        let told = fenced.clone();
        let thread = std::thread::Builder::new()
            .name("weft-store".into())
            .spawn(move || write_turns(&store, &inbox, &told))?;
        Ok(Writer {
            turns: Some(turns),
            fenced,
            thread: Some(thread),
        })
    }

    /// Hands a turn over (waiting while the writer is `QUEUED_BATCHES`
    /// behind).
    pub(super) fn write(&self, turn: Turn) {
        if let Some(turns) = &self.turns
            && let Err(mpsc::SendError(turn)) = turns.send(turn)
        {
            // The writer is gone (it panicked): nothing is durable.
            answer(turn.replies, Err("the store's writer stopped".into()));
        }
    }

    /// Whether a commit was fenced: another server is active.
    pub(super) fn is_fenced(&self) -> bool {
        self.fenced.load(Ordering::SeqCst)
    }

    /// Waits until every turn handed over is written (or refused).
    pub(super) fn finish(mut self) {
        self.turns = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The writer's thread: each turn (with any queued behind it: one
/// transaction for all of them) committed, then answered.
fn write_turns(store: &Store, inbox: &mpsc::Receiver<Turn>, fenced: &AtomicBool) {
    // Writes a failed commit kept: they go first in the next one.
    let mut kept = Batch::default();
    while let Ok(first) = inbox.recv() {
        let mut writes = std::mem::take(&mut kept);
        writes.append(first.writes);
        let mut replies = first.replies;
        while let Ok(next) = inbox.try_recv() {
            writes.append(next.writes);
            replies.extend(next.replies);
        }
        if fenced.load(Ordering::SeqCst) {
            answer(replies, Err("another server is active".into()));
            continue;
        }
        match commit(store, &writes) {
            Ok(()) => answer(replies, Ok(())),
            Err(error) => {
                if error.is_fenced() {
                    tracing::error!(%error, "another server is active: this one stops writing and stops");
                    fenced.store(true, Ordering::SeqCst);
                } else {
                    tracing::error!(%error, writes = writes.len(), "the store refused a commit; its writes are kept for the next");
                    kept = writes;
                }
                answer(replies, Err(error.to_string()));
            }
        }
    }
    // The loop has stopped: one last try for writes a failed commit kept.
    if !kept.is_empty()
        && !fenced.load(Ordering::SeqCst)
        && let Err(error) = commit(store, &kept)
    {
        tracing::error!(%error, writes = kept.len(), "the store refused the last commit; these writes are lost");
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
        for name in &names {
            writer.write(turn(name, &store, &answers));
        }
        writer.finish();
        let got: Vec<_> = answered.try_iter().collect();
        assert_eq!(got.len(), names.len(), "every turn answered once");
        for (i, (name, committed, held)) in got.iter().enumerate() {
            assert_eq!(name, &names[i], "answered in the order written");
            assert_eq!(committed, &Ok(()));
            for before in &names[..=i] {
                assert!(held.contains(before), "{name} answered before {before} was stored");
            }
        }
    }
}
