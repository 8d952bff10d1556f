//! Compiled policy components kept on disk, named by what they were compiled
//! from (the component's sha256 and the engine's configuration), so a
//! restart, a takeover or a second `weft policy check` reads back in
//! milliseconds what took the compiler seconds. Every entry is verified
//! before use; a damaged or unusable one is a miss, never a crash; the
//! directory is bounded in size, least recently used entries going first.

use std::fs::{self, File};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::metrics::metrics;

/// The first bytes of every entry. A new layout gets a new number, and with
/// it new names (it is part of the key), so old entries are never misread.
const MAGIC: &[u8; 8] = b"WEFTCC01";
/// The magic, the payload's length (u64, little-endian), its CRC-32
/// (little-endian). A checksum, not a signature: it catches torn writes,
/// truncation and bit rot; a forgery is kept out by the directory being its
/// owner's alone. CRC-32 reads 35 MB in milliseconds where sha256 takes a
/// third of a second, and a cached load should take well under one.
const HEADER_BYTES: usize = MAGIC.len() + 8 + 4;
/// An entry's name: 64 hex digits (its key) and this extension.
const ENTRY_EXTENSION: &str = ".cwasm";
const TEMP_EXTENSION: &str = ".tmp";
/// A temporary file this old was left by a writer that died.
const STALE_TEMP: Duration = Duration::from_secs(600);

/// Why the cache could not be used, or an entry was discarded.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// The cache directory could not be created or its metadata read; the
    /// cache is off.
    #[error("cannot create the compile cache directory {}: {source}", dir.display())]
    CreateDir {
        /// The cache directory.
        dir: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The cache directory is not a directory, not owned by the effective
    /// user, or writable by its group or others; the cache is off.
    #[error(
        "the compile cache directory {} is not private (it must belong to the user running weft and be writable by no one else); the cache is off",
        dir.display()
    )]
    NotPrivate {
        /// The cache directory.
        dir: PathBuf,
    },
    /// An entry exists but could not be read.
    #[error("cannot read the compile cache entry {}: {source}", path.display())]
    Read {
        /// The entry's file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// An entry failed its checks: larger than the cache, shorter than its
    /// header, or a wrong magic, length or CRC-32.
    #[error("the compile cache entry {} is damaged: {what}", path.display())]
    Damaged {
        /// The entry's file.
        path: PathBuf,
        /// Which check it failed, as a phrase.
        what: &'static str,
    },
    /// An intact entry that wasmtime refused to deserialize.
    #[error("the compile cache entry {} does not deserialize: {detail}", path.display())]
    Deserialize {
        /// The entry's file.
        path: PathBuf,
        /// wasmtime's error, with its causes.
        detail: String,
    },
    /// wasmtime could not serialize a compiled component; holds its error.
    #[error("cannot serialize a compiled component: {0}")]
    Serialize(String),
    /// An entry could not be written or renamed into place.
    #[error("cannot write the compile cache entry {}: {source}", path.display())]
    Write {
        /// The entry's file (its contents go to a temporary file first).
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
}

/// A directory of compiled components, for one engine configuration.
#[derive(Debug)]
pub struct CompileCache {
    dir: PathBuf,
    /// The most bytes the entries may take together.
    max_bytes: u64,
    /// The engine's configuration, hashed: entries compiled under another
    /// configuration have other names, so they are never read.
    engine_key: [u8; 32],
}

impl CompileCache {
    /// The cache in `dir`, created (private to this user) if missing, for
    /// components compiled by `engine`, holding at most `max_bytes`.
    pub fn open(dir: &Path, max_bytes: u64, engine: &Engine) -> Result<CompileCache, CacheError> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|source| CacheError::CreateDir {
                dir: dir.to_path_buf(),
                source,
            })?;
        // Entries are executable code once deserialized: anyone else able
        // to write them could run code in this process.
        let metadata = fs::metadata(dir).map_err(|source| CacheError::CreateDir {
            dir: dir.to_path_buf(),
            source,
        })?;
        let owner_is_us = metadata.uid() == nix::unistd::geteuid().as_raw();
        if !metadata.is_dir() || !owner_is_us || metadata.mode() & 0o022 != 0 {
            return Err(CacheError::NotPrivate {
                dir: dir.to_path_buf(),
            });
        }
        let cache = CompileCache {
            dir: dir.to_path_buf(),
            max_bytes,
            engine_key: engine_key(engine),
        };
        // The bound may have shrunk since the last run.
        cache.evict();
        Ok(cache)
    }

    /// The per-user place for commands without a data directory:
    /// `$XDG_CACHE_HOME/weft/compiled`, else `~/.cache/weft/compiled`
    /// (relative values are ignored, as the XDG spec says).
    pub fn user_dir() -> Option<PathBuf> {
        let absolute = |path: PathBuf| path.is_absolute().then_some(path);
        let base = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .and_then(absolute)
            .or_else(|| {
                std::env::var_os("HOME")
                    .map(|home| PathBuf::from(home).join(".cache"))
                    .and_then(absolute)
            })?;
        Some(base.join("weft").join("compiled"))
    }

    /// The directory the entries are kept in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The component compiled from the bytes whose sha256 is
    /// `component_sha256`, if an intact entry holds it. A damaged or
    /// unusable entry is deleted and counts as a miss.
    pub fn load(&self, engine: &Engine, component_sha256: &[u8; 32]) -> Option<Component> {
        let path = self.entry_path(component_sha256);
        let started = Instant::now();
        match read_entry(engine, &path, self.max_bytes) {
            Ok(Some(component)) => {
                // Eviction goes by modification time: a hit is a use.
                let _ = File::options()
                    .write(true)
                    .open(&path)
                    .and_then(|file| file.set_modified(SystemTime::now()));
                CacheEvent::Hit {
                    path: &path,
                    elapsed: started.elapsed(),
                }
                .emit();
                Some(component)
            }
            Ok(None) => {
                CacheEvent::Miss { path: &path }.emit();
                None
            }
            Err(error) => {
                let _ = fs::remove_file(&path);
                CacheEvent::Discarded { error: &error }.emit();
                None
            }
        }
    }

    /// Keeps `component`, compiled from the bytes whose sha256 is
    /// `component_sha256`, then evicts the least recently used entries
    /// beyond the bound. Failures are logged: the cache is an optimisation.
    pub fn store(&self, component_sha256: &[u8; 32], component: &Component) {
        let path = self.entry_path(component_sha256);
        if let Err(error) = self.write_entry(&path, component) {
            CacheEvent::WriteFailed { error: &error }.emit();
        }
        self.evict();
    }

    fn entry_path(&self, component_sha256: &[u8; 32]) -> PathBuf {
        let mut key = Sha256::new();
        key.update(MAGIC);
        key.update(self.engine_key);
        key.update(component_sha256);
        self.dir
            .join(format!("{}{ENTRY_EXTENSION}", hex::encode(key.finalize())))
    }

    /// Writes the entry to a temporary file and renames it into place, so a
    /// reader sees a whole entry or none. No fsync: an entry torn by a crash
    /// fails its checksum and is compiled again.
    fn write_entry(&self, path: &Path, component: &Component) -> Result<(), CacheError> {
        let payload = component
            .serialize()
            .map_err(|e| CacheError::Serialize(format!("{e:#}")))?;
        if (HEADER_BYTES + payload.len()) as u64 > self.max_bytes {
            tracing::debug!(
                bytes = payload.len(),
                max_bytes = self.max_bytes,
                "a compiled component larger than the compile cache is not kept"
            );
            return Ok(());
        }
        static WRITES: AtomicU64 = AtomicU64::new(0);
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("entry");
        let temp = self.dir.join(format!(
            ".{name}.{}.{}{TEMP_EXTENSION}",
            std::process::id(),
            WRITES.fetch_add(1, Ordering::Relaxed)
        ));
        let write = |at: &Path| -> std::io::Result<()> {
            let mut file = File::create_new(at)?;
            file.write_all(&header(&payload))?;
            file.write_all(&payload)?;
            fs::rename(at, path)
        };
        write(&temp).map_err(|source| {
            let _ = fs::remove_file(&temp);
            CacheError::Write {
                path: path.to_path_buf(),
                source,
            }
        })
    }

    /// Deletes the least recently used entries until the rest fit in the
    /// bound, and temporary files that writers left behind. Only names this
    /// cache gives are touched, whatever else the directory holds.
    fn evict(&self) {
        let Ok(listing) = fs::read_dir(&self.dir) else {
            return;
        };
        let now = SystemTime::now();
        let mut entries = Vec::new();
        for item in listing.flatten() {
            let name = item.file_name();
            let Some(name) = name.to_str() else { continue };
            let Ok(metadata) = item.metadata() else {
                continue;
            };
            let modified = metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            if is_entry_name(name) && metadata.is_file() {
                entries.push((modified, metadata.len(), item.path()));
            } else if is_temp_name(name)
                && now.duration_since(modified).unwrap_or_default() > STALE_TEMP
            {
                let _ = fs::remove_file(item.path());
            }
        }
        for path in evictions(entries, self.max_bytes) {
            if fs::remove_file(&path).is_ok() {
                CacheEvent::Evicted { path: &path }.emit();
            }
        }
    }
}

/// The engine's configuration as 32 bytes: wasmtime's own hash of what
/// makes an artifact loadable by an engine (target, compiler flags,
/// tunables, wasm features, wasmtime's version), fed through sha256 so it is
/// the same in every process. The profiler setting is not in it and need
/// not be: wasmtime registers code with the profiler when it loads it,
/// whether compiled or deserialized.
fn engine_key(engine: &Engine) -> [u8; 32] {
    use std::hash::Hash;
    let mut hasher = Sha256Hasher(Sha256::new());
    engine.precompile_compatibility_hash().hash(&mut hasher);
    hasher.0.finalize().into()
}

/// A `Hasher` whose state is a sha256: stable across processes and builds,
/// unlike `DefaultHasher`.
struct Sha256Hasher(Sha256);

impl std::hash::Hasher for Sha256Hasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    fn finish(&self) -> u64 {
        let digest = self.0.clone().finalize();
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        u64::from_le_bytes(first)
    }
}

fn header(payload: &[u8]) -> Vec<u8> {
    let mut header = Vec::with_capacity(HEADER_BYTES);
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    header.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    header
}

/// The payload of an entry whose header matches it, or what is wrong.
fn verified_payload(entry: &[u8]) -> Result<&[u8], &'static str> {
    if entry.len() < HEADER_BYTES {
        return Err("shorter than its header");
    }
    let (header, payload) = entry.split_at(HEADER_BYTES);
    if &header[..MAGIC.len()] != MAGIC {
        return Err("not a Weft compile cache entry (wrong magic)");
    }
    let mut length = [0u8; 8];
    length.copy_from_slice(&header[MAGIC.len()..MAGIC.len() + 8]);
    if u64::from_le_bytes(length) != payload.len() as u64 {
        return Err("truncated or extended (its length does not match its header)");
    }
    if crc32fast::hash(payload).to_le_bytes() != header[MAGIC.len() + 8..] {
        return Err("its contents do not match their checksum");
    }
    Ok(payload)
}

/// The component in the entry at `path`; `None` if there is no entry.
fn read_entry(
    engine: &Engine,
    path: &Path,
    max_bytes: u64,
) -> Result<Option<Component>, CacheError> {
    let read_error = |source| CacheError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = match File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(read_error(error)),
    };
    let size = file.metadata().map_err(read_error)?.len();
    if size > max_bytes {
        return Err(CacheError::Damaged {
            path: path.to_path_buf(),
            what: "larger than the whole cache may be",
        });
    }
    let mut entry = Vec::with_capacity(size as usize);
    // Bounded even if the file grows while it is read.
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut entry)
        .map_err(read_error)?;
    let payload = verified_payload(&entry).map_err(|what| CacheError::Damaged {
        path: path.to_path_buf(),
        what,
    })?;
    deserialize_verified(engine, payload)
        .map(Some)
        .map_err(|e| CacheError::Deserialize {
            path: path.to_path_buf(),
            detail: format!("{e:#}"),
        })
}

/// Turns a verified payload back into a component.
#[allow(
    unsafe_code,
    reason = "wasmtime's Component::deserialize trusts its bytes: called only on a payload whose checksum and engine were verified"
)]
fn deserialize_verified(engine: &Engine, payload: &[u8]) -> wasmtime::Result<Component> {
    // SAFETY: `Component::deserialize` trusts its bytes to be an artifact
    // wasmtime produced, because it maps them as executable code. These are:
    // they come from an entry of a directory this cache keeps private (its
    // owner's alone, checked in `open`), which only `write_entry` writes,
    // with what `Component::serialize` returned; and they matched the length
    // and checksum recorded with them, checked on these very bytes (read into
    // memory first, so the file cannot change between check and use). An artifact
    // of another engine configuration or wasmtime version has another name,
    // and wasmtime's own header check would refuse it too.
    unsafe { Component::deserialize(engine, payload) }
}

fn is_entry_name(name: &str) -> bool {
    name.strip_suffix(ENTRY_EXTENSION)
        .is_some_and(|key| key.len() == 64 && key.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn is_temp_name(name: &str) -> bool {
    name.strip_prefix('.')
        .and_then(|rest| rest.strip_suffix(TEMP_EXTENSION))
        .is_some_and(|rest| rest.get(..70).is_some_and(is_entry_name))
}

/// Which of `entries` (modified, bytes, path) to delete so the rest take at
/// most `max_bytes`: the least recently modified first.
fn evictions(mut entries: Vec<(SystemTime, u64, PathBuf)>, max_bytes: u64) -> Vec<PathBuf> {
    entries.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.2.cmp(&b.2)));
    let mut total: u64 = entries.iter().map(|e| e.1).fold(0, u64::saturating_add);
    let mut evicted = Vec::new();
    for (_, bytes, path) in entries {
        if total <= max_bytes {
            break;
        }
        total -= bytes;
        evicted.push(path);
    }
    evicted
}

/// What happened in the cache: each writes its log line and counts its
/// metric here, so the two agree.
enum CacheEvent<'a> {
    Hit { path: &'a Path, elapsed: Duration },
    Miss { path: &'a Path },
    Discarded { error: &'a CacheError },
    WriteFailed { error: &'a CacheError },
    Evicted { path: &'a Path },
}

impl CacheEvent<'_> {
    fn emit(&self) {
        let m = metrics();
        match self {
            CacheEvent::Hit { path, elapsed } => {
                tracing::info!(path = %path.display(), ms = elapsed.as_millis() as u64, "policy component loaded from the compile cache");
                m.policy_compile_cache_hits.inc();
            }
            CacheEvent::Miss { path } => {
                tracing::debug!(path = %path.display(), "policy component not in the compile cache");
                m.policy_compile_cache_misses.inc();
            }
            CacheEvent::Discarded { error } => {
                tracing::warn!(%error, "compile cache entry deleted; the component is compiled again");
                m.policy_compile_cache_misses.inc();
                m.policy_compile_cache_discarded.inc();
            }
            CacheEvent::WriteFailed { error } => {
                tracing::warn!(%error, "the compiled component is not cached; the next load compiles it again");
            }
            CacheEvent::Evicted { path } => {
                tracing::debug!(path = %path.display(), "compile cache entry evicted to stay within weft.policy.compile-cache-mb");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_is_verified_against_its_header() {
        let payload = b"compiled code".to_vec();
        let mut entry = header(&payload);
        entry.extend_from_slice(&payload);
        assert_eq!(verified_payload(&entry), Ok(&payload[..]));

        let cases: [(&str, Vec<u8>, &str); 5] = [
            ("empty", Vec::new(), "shorter than its header"),
            (
                "header cut",
                entry[..HEADER_BYTES - 1].to_vec(),
                "shorter than its header",
            ),
            ("truncated", entry[..entry.len() - 1].to_vec(), "truncated"),
            ("extended", [&entry[..], b"x"].concat(), "truncated"),
            (
                "other magic",
                [b"WEFTCC00", &entry[8..]].concat(),
                "wrong magic",
            ),
        ];
        for (case, bytes, expected) in cases {
            let error = verified_payload(&bytes).unwrap_err();
            assert!(error.contains(expected), "{case}: {error}");
        }
        let mut flipped = entry.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert!(verified_payload(&flipped).unwrap_err().contains("checksum"));
    }

    /// An intact entry whose payload wasmtime refuses (junk, or code of
    /// another engine put under this engine's name) is deleted: a miss.
    #[test]
    fn an_entry_wasmtime_refuses_is_deleted_and_missed() {
        let dir = tempfile::tempdir().unwrap();
        let ours = Engine::default();
        let mut config = wasmtime::Config::new();
        config.consume_fuel(true);
        let theirs = Engine::new(&config).unwrap();
        let cache = CompileCache::open(dir.path(), 1 << 30, &ours).unwrap();
        let sha256 = [7u8; 32];
        let path = cache.entry_path(&sha256);

        let junk = b"not a wasmtime artifact".to_vec();
        fs::write(&path, [header(&junk), junk].concat()).unwrap();
        assert!(cache.load(&ours, &sha256).is_none());
        assert!(!path.exists(), "the refused entry is deleted");

        let bytes = super::super::builtin("flat-pricing").unwrap();
        let component = Component::new(&theirs, bytes).unwrap();
        let foreign = component.serialize().unwrap();
        fs::write(&path, [header(&foreign), foreign].concat()).unwrap();
        assert!(cache.load(&ours, &sha256).is_none());
        assert!(!path.exists());

        let component = Component::new(&ours, bytes).unwrap();
        cache.store(&sha256, &component);
        assert!(cache.load(&ours, &sha256).is_some());
    }

    #[test]
    fn eviction_deletes_the_least_recently_used_until_the_rest_fit() {
        let at = |s: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(s);
        let entries = vec![
            (at(30), 40, PathBuf::from("newest")),
            (at(10), 50, PathBuf::from("oldest")),
            (at(20), 30, PathBuf::from("middle")),
        ];
        assert_eq!(evictions(entries.clone(), 120), Vec::<PathBuf>::new());
        assert_eq!(evictions(entries.clone(), 119), [PathBuf::from("oldest")]);
        assert_eq!(
            evictions(entries.clone(), 40),
            [PathBuf::from("oldest"), PathBuf::from("middle")]
        );
        assert_eq!(evictions(entries, 0).len(), 3);
    }

    #[test]
    fn only_names_the_cache_gives_are_its_own() {
        let key = "ab".repeat(32);
        assert!(is_entry_name(&format!("{key}.cwasm")));
        assert!(!is_entry_name("policy.cwasm"));
        assert!(!is_entry_name(&format!("{key}.wasm")));
        assert!(is_temp_name(&format!(".{key}.cwasm.123.0.tmp")));
        assert!(!is_temp_name(".something.tmp"));
        assert!(!is_temp_name(&format!("{key}.cwasm.123.0.tmp")));
    }
}
