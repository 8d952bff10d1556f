//! Bearer tokens (`weft.security.authentication = token`): `weft token
//! create USER` makes a random token, prints it once and stores only its
//! SHA-256 in the tokens file; the server maps a presented token's hash to
//! its user. The file is read again when it changes, so tokens created or
//! revoked while the server runs take effect within a second.
//!
//! SHA-256 without a salt is enough here, unlike for passwords: a token is
//! 256 random bits, so its hash cannot be searched back to it.
//!
//! A file that no longer reads (gone, or malformed by a hand edit) takes
//! every token away until it reads again: a revocation must never be lost
//! to a typo.

use std::collections::HashMap;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Every token starts with this, so a leaked one is recognisable (and
/// secret scanners can be taught it).
pub const TOKEN_PREFIX: &str = "weft_";

/// How often the server looks at the file for changes, at most.
const RECHECK: Duration = Duration::from_secs(1);

/// The tokens file as it is stored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokensFile {
    /// Every token, as `[[token]]` tables.
    #[serde(default, rename = "token")]
    pub tokens: Vec<TokenEntry>,
}

/// One token of the tokens file: whose it is and its hash, never the token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenEntry {
    /// The user the token authenticates as.
    pub user: String,
    /// Hex SHA-256 of the token.
    pub sha256: String,
    /// When it was created (RFC 3339): for the operator, and to tell which
    /// YARN delegation tokens it vouches for (those issued after it).
    pub created: String,
}

impl TokensFile {
    /// Reads the file; a missing file holds no tokens.
    pub fn read(path: &Path) -> Result<TokensFile, String> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Ok(TokensFile::default());
            }
            Err(error) => {
                return Err(format!(
                    "cannot read tokens file {}: {error}",
                    path.display()
                ));
            }
        };
        toml::from_str(&text).map_err(|e| format!("tokens file {}: {e}", path.display()))
    }

    /// Reads the file, changes it with `change` and writes it back whole,
    /// all under an exclusive lock on `PATH.lock`: two `weft token`
    /// commands at once each see the other's change, so no creation or
    /// revocation is lost. Nothing is written if `change` fails.
    pub fn update<T>(
        path: &Path,
        change: impl FnOnce(&mut TokensFile) -> Result<T, String>,
    ) -> Result<T, String> {
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        // Missing dirs are made private: by default this is the data dir.
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let mut lock_name = path.file_name().unwrap_or_default().to_owned();
        lock_name.push(".lock");
        let lock_path = path.with_file_name(lock_name);
        let lock_file = crate::private_files::open(&lock_path).map_err(|e| e.to_string())?;
        let _lock = nix::fcntl::Flock::lock(lock_file, nix::fcntl::FlockArg::LockExclusive)
            .map_err(|(_, errno)| format!("cannot lock {}: {errno}", lock_path.display()))?;
        let mut file = TokensFile::read(path)?;
        let answer = change(&mut file)?;
        file.write(path)?;
        Ok(answer)
    }

    /// Writes the file whole: a temporary file of a name no other writer
    /// uses, then a rename, so a reader never sees half of it. Only its
    /// owner may read it. Call it under [`TokensFile::update`]'s lock.
    fn write(&self, path: &Path) -> Result<(), String> {
        let text = toml::to_string(self).map_err(|e| format!("cannot encode tokens: {e}"))?;
        let mut random = [0u8; 8];
        getrandom::fill(&mut random)
            .map_err(|e| format!("the system has no random source: {e}"))?;
        let mut temporary = path.file_name().unwrap_or_default().to_owned();
        temporary.push(format!(
            ".{}.{}.new",
            std::process::id(),
            hex::encode(random)
        ));
        let temporary = path.with_file_name(temporary);
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temporary)
            .and_then(|mut file| {
                std::io::Write::write_all(&mut file, text.as_bytes())?;
                file.sync_all()
            });
        if let Err(error) = written {
            let _ = std::fs::remove_file(&temporary);
            return Err(format!("cannot write {}: {error}", temporary.display()));
        }
        std::fs::rename(&temporary, path).map_err(|e| {
            let _ = std::fs::remove_file(&temporary);
            format!("cannot replace {}: {e}", path.display())
        })
    }

    /// Adds a new random token for `user` and returns it (the only time it
    /// is seen in the clear).
    pub fn create(&mut self, user: &str) -> Result<String, String> {
        crate::limits::name("the user", user).map_err(|e| e.to_string())?;
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret)
            .map_err(|e| format!("the system has no random source: {e}"))?;
        let token = format!("{TOKEN_PREFIX}{}", hex::encode(secret));
        self.tokens.push(TokenEntry {
            user: user.to_string(),
            sha256: hash(&token),
            created: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        });
        Ok(token)
    }

    /// Removes every token of `user`; how many there were.
    pub fn revoke(&mut self, user: &str) -> usize {
        let before = self.tokens.len();
        self.tokens.retain(|entry| entry.user != user);
        before - self.tokens.len()
    }
}

/// Hex SHA-256 of a token.
pub fn hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// The server's view of the tokens file: hash → user, refreshed on change.
#[derive(Debug)]
pub struct TokenVerifier {
    path: PathBuf,
    state: Mutex<Loaded>,
    /// How often to look at the file: [`RECHECK`], shorter in tests.
    recheck: Duration,
}

#[derive(Debug)]
struct Loaded {
    users: HashMap<String, String>,
    /// Per user, when their oldest token still in the file was created
    /// (Unix ms; a token whose creation time does not read vouches
    /// for nothing issued on its strength).
    since: HashMap<String, i64>,
    /// What the file looked like when read.
    stamp: Option<Stamp>,
    checked: Instant,
    /// Whether the file read when last looked at (if not, no one holds a
    /// token until it does).
    reads: bool,
}

impl TokenVerifier {
    /// Reads `path` now: a file that cannot be read or parsed stops the start.
    pub fn open(path: PathBuf) -> Result<TokenVerifier, String> {
        let file = TokensFile::read(&path)?;
        let stamp = stamp(&path);
        Ok(TokenVerifier {
            path,
            state: Mutex::new(Loaded {
                users: users_of(&file),
                since: since_of(&file),
                stamp,
                checked: Instant::now(),
                reads: true,
            }),
            recheck: RECHECK,
        })
    }

    /// The same, reading the file again at every look (tests).
    #[cfg(test)]
    pub(crate) fn rereading_every_time(mut self) -> TokenVerifier {
        self.recheck = Duration::ZERO;
        self
    }

    /// The tokens file it reads.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The user a token belongs to, if it is known.
    pub fn user_of(&self, token: &str) -> Option<String> {
        self.current().users.get(&hash(token)).cloned()
    }

    /// Whether `user` holds a token created at or before `unix_ms`: what
    /// was issued on the strength of a token (a YARN delegation token)
    /// stands while it does, and falls when the user's tokens are revoked
    /// — also when a new one is created afterwards.
    pub fn holds_token_since(&self, user: &str, unix_ms: i64) -> bool {
        self.current()
            .since
            .get(user)
            .is_some_and(|&created| created <= unix_ms)
    }

    /// Per user, when their oldest token still in the file was created (as
    /// [`TokenVerifier::holds_token_since`] asks it), for checking many at
    /// once; None while the file does not read (no one holds a token then,
    /// which says nothing of who was revoked).
    pub fn holders_since(&self) -> Option<HashMap<String, i64>> {
        let state = self.current();
        state.reads.then(|| state.since.clone())
    }

    /// The file as it is now, read again when it changed.
    fn current(&self) -> std::sync::MutexGuard<'_, Loaded> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.checked.elapsed() >= self.recheck {
            state.checked = Instant::now();
            let now = stamp(&self.path);
            if now != state.stamp {
                // Files are replaced whole (written aside, then renamed), so
                // one that does not read is broken, not half-written.
                state.stamp = now;
                match TokensFile::read(&self.path) {
                    Ok(file) => {
                        state.users = users_of(&file);
                        state.since = since_of(&file);
                        state.reads = true;
                        tracing::info!(file = %self.path.display(), tokens = state.users.len(), "tokens file read again");
                    }
                    Err(error) => {
                        state.users.clear();
                        state.since.clear();
                        state.reads = false;
                        tracing::error!(%error, "the tokens file does not read: no token is accepted until it does");
                    }
                }
            }
        }
        state
    }
}

fn users_of(file: &TokensFile) -> HashMap<String, String> {
    file.tokens
        .iter()
        .map(|entry| (entry.sha256.to_ascii_lowercase(), entry.user.clone()))
        .collect()
}

fn since_of(file: &TokensFile) -> HashMap<String, i64> {
    let mut since: HashMap<String, i64> = HashMap::new();
    for entry in &file.tokens {
        let created = chrono::DateTime::parse_from_rfc3339(&entry.created)
            .map_or(i64::MAX, |time| time.timestamp_millis());
        since
            .entry(entry.user.clone())
            .and_modify(|oldest| *oldest = (*oldest).min(created))
            .or_insert(created);
    }
    since
}

/// What tells one version of the file from another: every write is a new
/// file renamed into place (a new inode), so two writes within one tick of
/// the clock, of one length, still differ.
type Stamp = (u64, u64, SystemTime, u64);

fn stamp(path: &Path) -> Option<Stamp> {
    let metadata = std::fs::metadata(path).ok()?;
    Some((
        metadata.dev(),
        metadata.ino(),
        metadata.modified().ok()?,
        metadata.len(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_created_token_is_stored_only_as_its_hash_and_verifies() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.toml");
        let mut file = TokensFile::read(&path).unwrap();
        let token = file.create("alice").unwrap();
        assert!(token.starts_with(TOKEN_PREFIX) && token.len() == TOKEN_PREFIX.len() + 64);
        file.write(&path).unwrap();
        let stored = std::fs::read_to_string(&path).unwrap();
        assert!(!stored.contains(&token[TOKEN_PREFIX.len()..]), "{stored}");
        assert!(stored.contains(&hash(&token)));

        let verifier = TokenVerifier::open(path.clone()).unwrap();
        assert_eq!(verifier.user_of(&token).as_deref(), Some("alice"));
        assert_eq!(verifier.user_of("weft_00"), None);
        assert_eq!(verifier.user_of(""), None);
    }

    #[test]
    fn a_file_that_stops_reading_takes_every_token_away() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.toml");
        let (alice, bob) = TokensFile::update(&path, |file| {
            Ok((file.create("alice")?, file.create("bob")?))
        })
        .unwrap();
        let mut verifier = TokenVerifier::open(path.clone()).unwrap();
        verifier.recheck = Duration::ZERO;
        // A revocation with a typo in the same edit must not leave bob in.
        std::fs::write(&path, "[[token]]\nuser = \"alice\"\nsha256 = \n").unwrap();
        assert_eq!(verifier.user_of(&bob), None);
        assert_eq!(verifier.user_of(&alice), None);
        // Fixed, it reads again.
        let mut file = TokensFile::default();
        file.tokens.push(TokenEntry {
            user: "alice".into(),
            sha256: hash(&alice),
            created: "now".into(),
        });
        file.write(&path).unwrap();
        assert_eq!(verifier.user_of(&alice).as_deref(), Some("alice"));
        assert_eq!(verifier.user_of(&bob), None);
    }

    #[test]
    fn revoking_removes_every_token_of_the_user() {
        let mut file = TokensFile::default();
        file.create("alice").unwrap();
        file.create("alice").unwrap();
        file.create("bob").unwrap();
        assert_eq!(file.revoke("alice"), 2);
        assert_eq!(file.tokens.len(), 1);
        assert!(file.create("").is_err());
    }

    #[test]
    fn concurrent_changes_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data").join("tokens.toml");
        TokensFile::update(&path, |file| file.create("victim")).unwrap();
        let writers: Vec<_> = (0..8)
            .map(|i| {
                let path = path.clone();
                std::thread::spawn(move || {
                    for round in 0..10 {
                        let user = format!("u{i}-{round}");
                        TokensFile::update(&path, |file| file.create(&user)).unwrap();
                        if i == 0 && round == 5 {
                            TokensFile::update(&path, |file| Ok(file.revoke("victim"))).unwrap();
                        }
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap();
        }
        let file = TokensFile::read(&path).unwrap();
        assert_eq!(file.tokens.len(), 80, "every creation is kept");
        assert!(
            file.tokens.iter().all(|t| t.user != "victim"),
            "the revocation is kept"
        );
        let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|name| name.ends_with(".new"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        let mode = std::fs::metadata(path.parent().unwrap()).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }

    #[test]
    fn a_malformed_file_is_refused_with_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.toml");
        std::fs::write(&path, "[[token]]\nuser = 3\n").unwrap();
        let error = TokenVerifier::open(path).unwrap_err();
        assert!(error.contains("tokens.toml"), "{error}");
    }
}
