//! Files only their owner may read or write, whatever the umask: the data
//! directory (the ledger, the tokens file, the agents' log secrets,
//! compiled policies) is 0700 and the files in it 0600, so a container
//! running as another user can neither read nor change them.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Mode of a private directory.
pub const DIR_MODE: u32 = 0o700;
/// Mode of a private file.
pub const FILE_MODE: u32 = 0o600;

/// Creates `dir` (and its missing parents, also 0700) or, if it exists and
/// is this user's, takes every right of others away from it. A directory
/// of another user is left as it is and refused.
pub fn dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
        .map_err(|error| with_path("cannot create", dir, error))?;
    let metadata = fs::metadata(dir).map_err(|error| with_path("cannot read", dir, error))?;
    if metadata.uid() != nix::unistd::geteuid().as_raw() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} belongs to uid {}, not to this process's user: a data directory must be its own",
                dir.display(),
                metadata.uid()
            ),
        ));
    }
    if metadata.mode() & 0o777 != DIR_MODE {
        fs::set_permissions(dir, fs::Permissions::from_mode(DIR_MODE))
            .map_err(|error| with_path("cannot make private", dir, error))?;
    }
    Ok(())
}

/// Takes every right of others away from `path`, if it exists.
pub fn restrict(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(metadata) if metadata.is_file() && metadata.mode() & 0o077 != 0 => {
            fs::set_permissions(path, fs::Permissions::from_mode(FILE_MODE))
                .map_err(|error| with_path("cannot make private", path, error))
        }
        Ok(_) => Ok(()),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(with_path("cannot read", path, error)),
    }
}

/// Opens `path` for writing, created 0600 if missing (else made so), not
/// truncated.
pub fn open(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|error| with_path("cannot open", path, error))?;
    restrict(path)?;
    Ok(file)
}

fn with_path(what: &str, path: &Path, error: io::Error) -> io::Error {
    io::Error::new(error.kind(), format!("{what} {}: {error}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_whatever_the_umask() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("a").join("data");
        super::dir(&data).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().mode() & 0o777;
        assert_eq!(mode(&data), 0o700);
        // An existing one is made private.
        fs::set_permissions(&data, fs::Permissions::from_mode(0o755)).unwrap();
        super::dir(&data).unwrap();
        assert_eq!(mode(&data), 0o700);

        let db = data.join("weft.db");
        fs::write(&db, b"x").unwrap();
        fs::set_permissions(&db, fs::Permissions::from_mode(0o644)).unwrap();
        restrict(&db).unwrap();
        assert_eq!(mode(&db), 0o600);
        restrict(&data.join("missing")).unwrap();
        drop(open(&data.join("lock")).unwrap());
        assert_eq!(mode(&data.join("lock")), 0o600);
    }
}
