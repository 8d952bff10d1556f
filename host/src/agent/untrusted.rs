//! Reading files a container can write — its logs, its exit code, anything
//! under the work and log dirs — as the agent (often root) must: opened
//! relative to a directory handle, one path component at a time, never
//! following a symbolic link, never blocking on open (a FIFO opens at once
//! and is then refused), only if it is a regular file, and never read past
//! a bound. A container that replaces its stderr with `ln -s /etc/shadow`
//! or `mkfifo` gets an error in its diagnostics, not the file or a hung
//! agent.
//!
//! The directory a path starts from (the agent's work or log dir) is the
//! operator's and is opened as given; everything below it is the tenant's.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path};

use nix::errno::Errno;
use nix::fcntl::{OFlag, openat};
use nix::sys::stat::Mode;

/// A regular file opened safely, with what it was when opened.
#[derive(Debug)]
pub struct UntrustedFile {
    /// The open file, for reading.
    pub file: File,
    /// Its length when opened.
    pub len: u64,
    /// When it was last written, ms since the epoch (0 if before it).
    pub modified_ms: u64,
}

/// Opens `relative` beneath the directory `root` for reading: each
/// directory on the way is entered without following a symbolic link,
/// and the file itself must be a regular file (not a link, FIFO, socket,
/// device or directory). `relative` must be plain names (no `..`, no
/// absolute path). A refusal is an error saying which and why.
pub fn open_regular(root: &Path, relative: &Path) -> io::Result<UntrustedFile> {
    let names = plain_names(relative)?;
    let Some((file_name, dirs)) = names.split_last() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "no file name given",
        ));
    };
    let mut dir = open_root(root)?;
    for name in dirs {
        dir = openat(
            &dir,
            *name,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|errno| refusal(errno, root, relative, "a directory on its way"))?;
    }
    // O_NONBLOCK: opening a FIFO for reading waits for a writer without it.
    // O_NOCTTY: a terminal device never becomes the agent's.
    let fd = openat(
        &dir,
        *file_name,
        OFlag::O_RDONLY
            | OFlag::O_NOFOLLOW
            | OFlag::O_NONBLOCK
            | OFlag::O_NOCTTY
            | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|errno| refusal(errno, root, relative, "it"))?;
    let file = File::from(fd);
    let metadata = file.metadata()?;
    if !metadata.file_type().is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is not a regular file (a FIFO, socket, device or directory): not read",
                root.join(relative).display()
            ),
        ));
    }
    // A hard link to a file the container could not read itself (where
    // the kernel lets it make one: fs.protected_hardlinks = 0).
    if metadata.nlink() > 1 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} has other names (hard links): not a regular file of its own, not read",
                root.join(relative).display()
            ),
        ));
    }
    let modified_ms = metadata.mtime().max(0) as u64 * 1000
        + u64::try_from(metadata.mtime_nsec()).unwrap_or(0) / 1_000_000;
    Ok(UntrustedFile {
        file,
        len: metadata.len(),
        modified_ms,
    })
}

/// At most `max` bytes of `relative` beneath `root` (see [`open_regular`]),
/// from its start.
pub fn read_at_most(root: &Path, relative: &Path, max: u64) -> io::Result<Vec<u8>> {
    let opened = open_regular(root, relative)?;
    read_range(opened.file, 0, max)
}

/// At most the last `max` bytes of `relative` beneath `root`.
pub fn read_tail(root: &Path, relative: &Path, max: u64) -> io::Result<Vec<u8>> {
    let opened = open_regular(root, relative)?;
    read_range(opened.file, opened.len.saturating_sub(max), max)
}

/// At most `length` bytes of `file` from `start`. The file may grow
/// meanwhile; nothing beyond `length` is read.
pub fn read_range(mut file: File, start: u64, length: u64) -> io::Result<Vec<u8>> {
    file.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::with_capacity(usize::try_from(length.min(64 << 10)).unwrap_or(0));
    file.take(length).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// What a directory tree a container writes takes on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskUsage {
    /// Its blocks in bytes (as `du` counts: what is allocated, so a
    /// sparse file counts only what it holds), the directories included.
    pub bytes: u64,
    /// Entries seen beneath it.
    pub entries: usize,
    /// False if the walk stopped at its bound of entries or depth: there
    /// is more than was counted.
    pub complete: bool,
}

/// The deepest a [`disk_usage`] walk goes (one descriptor open a level).
const MAX_WALK_DEPTH: usize = 32;

/// What the directory `relative` beneath `root` takes on disk, walked
/// without following a symbolic link (each directory opened by handle,
/// `O_NOFOLLOW`, from its parent's), counting at most `max_entries`
/// entries and going at most [`MAX_WALK_DEPTH`] levels down; past either,
/// `complete` is false. What vanishes while it walks is skipped.
pub fn disk_usage(root: &Path, relative: &Path, max_entries: usize) -> io::Result<DiskUsage> {
    let mut dir = open_root(root)?;
    for name in plain_names(relative)? {
        dir = openat(
            &dir,
            name,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|errno| refusal(errno, root, relative, "a directory on its way"))?;
    }
    let own = nix::sys::stat::fstat(&dir).map_err(io::Error::from)?;
    let mut usage = DiskUsage {
        bytes: blocks_in_bytes(&own),
        entries: 0,
        complete: true,
    };
    let mut linked = std::collections::HashSet::new();
    walk(dir, 0, max_entries, &mut usage, &mut linked)?;
    Ok(usage)
}

/// Adds what `dir`'s entries take to `usage`, then its subdirectories',
/// one level open at a time; a file with other names (hard links) is
/// counted once, by device and inode in `linked`, as `du` does.
fn walk(
    dir: OwnedFd,
    depth: usize,
    max_entries: usize,
    usage: &mut DiskUsage,
    linked: &mut std::collections::HashSet<(u64, u64)>,
) -> io::Result<()> {
    use nix::sys::stat::{SFlag, fstatat};
    let mut listing = nix::dir::Dir::from_fd(dir).map_err(io::Error::from)?;
    let mut names = Vec::new();
    for entry in listing.iter() {
        let entry = entry.map_err(io::Error::from)?;
        let name = entry.file_name();
        if name == c"." || name == c".." {
            continue;
        }
        if usage.entries >= max_entries {
            usage.complete = false;
            break;
        }
        usage.entries += 1;
        names.push(name.to_owned());
    }
    let mut subdirs = Vec::new();
    for name in names {
        let stat = match fstatat(
            &listing,
            name.as_c_str(),
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        ) {
            Ok(stat) => stat,
            Err(Errno::ENOENT) => continue,
            Err(errno) => return Err(errno.into()),
        };
        let is_dir =
            SFlag::from_bits_truncate(stat.st_mode & SFlag::S_IFMT.bits()) == SFlag::S_IFDIR;
        if !is_dir && stat.st_nlink > 1 && !linked.insert((stat.st_dev, stat.st_ino)) {
            continue;
        }
        usage.bytes = usage.bytes.saturating_add(blocks_in_bytes(&stat));
        if is_dir {
            subdirs.push(name);
        }
    }
    if !usage.complete {
        return Ok(());
    }
    for name in subdirs {
        if depth + 1 >= MAX_WALK_DEPTH {
            usage.complete = false;
            return Ok(());
        }
        let child = match openat(
            &listing,
            name.as_c_str(),
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        ) {
            Ok(child) => child,
            // Gone, or replaced by something else since it was listed.
            Err(Errno::ENOENT | Errno::ENOTDIR | Errno::ELOOP) => continue,
            Err(errno) => return Err(errno.into()),
        };
        walk(child, depth + 1, max_entries, usage, linked)?;
        if !usage.complete {
            return Ok(());
        }
    }
    Ok(())
}

/// A file's allocated blocks, in bytes.
fn blocks_in_bytes(stat: &nix::sys::stat::FileStat) -> u64 {
    u64::try_from(stat.st_blocks)
        .unwrap_or(0)
        .saturating_mul(512)
}

/// The directory a path starts from: the operator's, opened as given.
fn open_root(root: &Path) -> io::Result<OwnedFd> {
    openat(
        nix::fcntl::AT_FDCWD,
        root,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|errno| {
        io::Error::new(
            io::Error::from(errno).kind(),
            format!("cannot open {}: {errno}", root.display()),
        )
    })
}

/// The names of `relative`, refusing anything but plain names.
fn plain_names(relative: &Path) -> io::Result<Vec<&OsStr>> {
    relative
        .components()
        .map(|component| match component {
            Component::Normal(name) if !name.as_bytes().contains(&b'/') => Ok(name),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} is not a relative path of plain names",
                    relative.display()
                ),
            )),
        })
        .collect()
}

/// Why an open below `root` failed, in words: a symbolic link is named as
/// such (O_NOFOLLOW answers ELOOP, or ENOTDIR for a directory's place).
fn refusal(errno: Errno, root: &Path, relative: &Path, what: &str) -> io::Error {
    let path = root.join(relative);
    match errno {
        Errno::ELOOP | Errno::ENOTDIR => io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{}: {what} is a symbolic link or not a directory: not followed",
                path.display()
            ),
        ),
        Errno::ENOENT => io::Error::new(
            io::ErrorKind::NotFound,
            format!("{} does not exist", path.display()),
        ),
        other => io::Error::new(
            io::Error::from(other).kind(),
            format!("cannot open {}: {other}", path.display()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_are_read_within_their_bound() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("c")).unwrap();
        std::fs::write(dir.path().join("c/stderr"), b"0123456789").unwrap();
        let rel = Path::new("c/stderr");
        assert_eq!(read_at_most(dir.path(), rel, 4).unwrap(), b"0123");
        assert_eq!(read_tail(dir.path(), rel, 3).unwrap(), b"789");
        assert_eq!(read_tail(dir.path(), rel, 100).unwrap(), b"0123456789");
        let opened = open_regular(dir.path(), rel).unwrap();
        assert_eq!(opened.len, 10);
        assert!(opened.modified_ms > 0);
    }

    #[test]
    fn links_fifos_and_escapes_are_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("c")).unwrap();
        std::fs::write(root.join("secret"), b"root only").unwrap();
        std::os::unix::fs::symlink(root.join("secret"), root.join("c/stdout")).unwrap();
        std::os::unix::fs::symlink(root.join("c"), root.join("linked-dir")).unwrap();
        nix::unistd::mkfifo(&root.join("c/stderr"), Mode::from_bits_truncate(0o600)).unwrap();
        std::fs::create_dir(root.join("c/dir")).unwrap();

        let error = open_regular(root, Path::new("c/stdout")).unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
        let error = open_regular(root, Path::new("linked-dir/stdout")).unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
        // Would block forever without O_NONBLOCK: no writer ever comes.
        let error = open_regular(root, Path::new("c/stderr")).unwrap_err();
        assert!(error.to_string().contains("not a regular file"), "{error}");
        let error = open_regular(root, Path::new("c/dir")).unwrap_err();
        assert!(error.to_string().contains("not a regular file"), "{error}");
        for escape in ["../secret", "/etc/passwd", "c/../secret", ""] {
            assert!(open_regular(root, Path::new(escape)).is_err(), "{escape}");
        }
        std::fs::hard_link(root.join("secret"), root.join("c/hard")).unwrap();
        let error = open_regular(root, Path::new("c/hard")).unwrap_err();
        assert!(error.to_string().contains("hard links"), "{error}");
        let missing = open_regular(root, Path::new("c/none")).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
    }
}
