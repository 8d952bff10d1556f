//! Removing trees a container wrote (its working dir, its logs): in child
//! processes, `rm -rf --one-file-system`, a few at a time, never waited
//! for. A tenant can make a tree of any depth and size: removing it in the
//! agent would recurse past its stack (std's `remove_dir_all` overflows a
//! thread's stack near 15,000 levels, taking the server with it) or hold
//! the agent's loop for as long as it takes. `rm` walks iteratively (fts),
//! never follows a link and stays on the tree's file system.

use std::collections::{HashSet, VecDeque};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Removals running at once.
const MAX_RUNNING: usize = 4;
/// How long one removal runs before it makes way for the next (it goes on
/// later from where it stopped): a tenant's tree of millions of files does
/// not hold up everyone else's.
const TURN: Duration = Duration::from_secs(120);

/// Trees being removed and waiting to be.
#[derive(Debug, Default)]
pub struct Remover {
    running: Vec<(Child, PathBuf, Instant)>,
    waiting: VecDeque<PathBuf>,
    /// Every path running or waiting, once.
    queued: HashSet<PathBuf>,
}

impl Remover {
    /// Removes `path` (if it exists) soon.
    pub fn remove(&mut self, path: PathBuf) {
        if self.queued.insert(path.clone()) {
            self.waiting.push_back(path);
        }
        self.poll();
    }

    /// Notes the removals that finished, sends those whose turn is over
    /// to the back, and starts waiting ones.
    pub fn poll(&mut self) {
        let mut running = Vec::with_capacity(self.running.len());
        for (mut child, path, began) in std::mem::take(&mut self.running) {
            match child.try_wait() {
                Ok(None) if began.elapsed() < TURN => running.push((child, path, began)),
                Ok(None) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    self.waiting.push_back(path);
                }
                Ok(Some(status)) => {
                    if !status.success() {
                        tracing::warn!(dir = %path.display(), %status, "could not remove all of a container's dir");
                    }
                    self.queued.remove(&path);
                }
                Err(error) => {
                    tracing::warn!(dir = %path.display(), %error, "lost track of a removal");
                    self.queued.remove(&path);
                }
            }
        }
        self.running = running;
        while self.running.len() < MAX_RUNNING
            && let Some(path) = self.waiting.pop_front()
        {
            if std::fs::symlink_metadata(&path).is_err() {
                self.queued.remove(&path);
                continue; // gone already
            }
            match Command::new("rm")
                .args(["-rf", "--one-file-system", "--"])
                .arg(&path)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
            {
                Ok(child) => self.running.push((child, path, Instant::now())),
                Err(error) => {
                    self.queued.remove(&path);
                    tracing::warn!(dir = %path.display(), %error, "cannot start rm to remove a container's dir");
                }
            }
        }
    }

    /// Whether removals are running or waiting.
    pub fn busy(&self) -> bool {
        !self.running.is_empty() || !self.waiting.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_deeper_than_any_stack_is_removed_without_following_links() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        std::fs::write(&outside, "kept").unwrap();
        let tree = dir.path().join("tree");
        std::fs::create_dir(&tree).unwrap();
        std::os::unix::fs::symlink(&outside, tree.join("link")).unwrap();
        // 20,000 levels, made one by one from the inside (paths this long
        // cannot be named whole).
        let fd = nix::fcntl::open(
            &tree,
            nix::fcntl::OFlag::O_DIRECTORY,
            nix::sys::stat::Mode::empty(),
        )
        .unwrap();
        let mut current = fd;
        for _ in 0..20_000 {
            nix::sys::stat::mkdirat(
                &current,
                "a",
                nix::sys::stat::Mode::from_bits_truncate(0o700),
            )
            .unwrap();
            current = nix::fcntl::openat(
                &current,
                "a",
                nix::fcntl::OFlag::O_DIRECTORY,
                nix::sys::stat::Mode::empty(),
            )
            .unwrap();
        }
        drop(current);
        let mut remover = Remover::default();
        remover.remove(tree.clone());
        let begun = std::time::Instant::now();
        while remover.busy() {
            assert!(begun.elapsed() < std::time::Duration::from_secs(60));
            std::thread::sleep(std::time::Duration::from_millis(20));
            remover.poll();
        }
        assert!(!tree.exists());
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "kept");
    }
}
