//! YARN's refreshNodes: the hosts of the exclude file
//! (`yarn.resourcemanager.nodes.exclude-path`) are decommissioned, and
//! those it no longer lists recommissioned; the file is read at the start
//! too, and a node it lists is decommissioned as it registers (YARN's
//! NodesListManager).

use std::collections::BTreeSet;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use super::ResourceManager;
use super::requests::RequestError;
use crate::cluster::ExcludedRefresh;
use crate::limits;
use crate::security::Caller;

/// The most the exclude file may hold.
pub const MAX_EXCLUDE_FILE_BYTES: u64 = 4 << 20;

/// The hosts the exclude file at `path` lists, as YARN's HostsFileReader
/// reads its plain form: names separated by white space, `#` starting a
/// comment to the end of its line. Refused, naming the file (and the line),
/// when it cannot be read, is larger than [`MAX_EXCLUDE_FILE_BYTES`], is
/// the XML form (per-host timeouts are not read), names more than
/// [`limits::MAX_NODES`] hosts or a name out of bounds.
pub fn read_exclude_file(path: &Path) -> Result<BTreeSet<String>, String> {
    let what = format!("yarn.resourcemanager.nodes.exclude-path {}", path.display());
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("xml"))
    {
        return Err(format!(
            "{what}: the XML form (hosts with timeouts) is not read; list the hosts as plain text, one or more a line"
        ));
    }
    // Opened without waiting (a FIFO's open would wait for a writer) and
    // checked as opened, not by name: whatever is swapped in at the path,
    // only a regular file is read.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| format!("{what}: {e}"))?;
    let meta = file.metadata().map_err(|e| format!("{what}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{what}: not a regular file"));
    }
    let mut text = String::new();
    file.take(MAX_EXCLUDE_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("{what}: {e}"))?;
    if text.len() as u64 > MAX_EXCLUDE_FILE_BYTES {
        return Err(format!(
            "{what}: larger than {MAX_EXCLUDE_FILE_BYTES} bytes"
        ));
    }
    // A byte-order mark some editors write would make the first name one
    // that matches nothing.
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut hosts = BTreeSet::new();
    for (number, line) in text.lines().enumerate() {
        let listed = line.split('#').next().unwrap_or_default();
        for host in listed.split_whitespace() {
            limits::name("host", host).map_err(|e| format!("{what}, line {}: {e}", number + 1))?;
            hosts.insert(host.to_string());
            if hosts.len() > limits::MAX_NODES {
                return Err(format!("{what}: more than {} hosts", limits::MAX_NODES));
            }
        }
    }
    Ok(hosts)
}

impl ResourceManager {
    /// `yarn.resourcemanager.nodes.exclude-path`, if set: read (off the
    /// event loop) with [`read_exclude_file`] for [`Self::refresh_nodes`].
    pub fn nodes_exclude_path(&self) -> Option<&Path> {
        self.nodes_exclude_path.as_deref()
    }

    /// refreshNodes for `caller` (administrators only), with `excluded`
    /// the hosts the exclude file lists now (none without a file): the
    /// nodes it names are decommissioned — at once, or with `graceful`
    /// after `timeout_s` (the setting's when none) — and those an earlier
    /// refresh decommissioned that it no longer names are recommissioned
    /// (`Cluster::refresh_excluded`).
    pub fn refresh_nodes(
        &mut self,
        caller: &Caller,
        excluded: &BTreeSet<String>,
        graceful: bool,
        timeout_s: Option<u64>,
    ) -> Result<ExcludedRefresh, RequestError> {
        self.security
            .check_admin(caller, "refresh the nodes")
            .map_err(RequestError::NotAllowed)?;
        if let Some(timeout) = timeout_s {
            if !graceful {
                return Err(RequestError::Invalid(
                    "timeout: only a graceful refresh waits (graceful=true)".into(),
                ));
            }
            limits::within("timeout", timeout, 0, limits::MAX_DECOMMISSION_TIMEOUT_S)?;
        }
        let timeout_ms = match (graceful, timeout_s) {
            (false, _) => 0,
            (true, Some(seconds)) => seconds.saturating_mul(1000),
            (true, None) => self.decommission_timeout_ms,
        };
        let now = self.now();
        let refresh = self
            .cluster
            .refresh_excluded(excluded, now.saturating_add(timeout_ms), now);
        let killed = self.finish_decommissioning(&refresh.taken_back, now);
        tracing::warn!(
            decommissioned = ?refresh.decommissioned,
            recommissioned = ?refresh.recommissioned,
            unmatched = refresh.unmatched.len(),
            timeout_ms,
            killed,
            by = %caller.user,
            "nodes refreshed from the exclude file"
        );
        if !refresh.recommissioned.is_empty() {
            self.schedule_on_freed_resources();
        }
        self.excluded_hosts = excluded.clone();
        Ok(refresh)
    }

    /// At the start, once the state is restored: the exclude file as it is
    /// now, applied as a refresh at once would be (YARN reads it when its
    /// resource manager starts). A file that cannot be read is logged and
    /// lists nothing; the next refresh says why again.
    pub(super) fn apply_exclude_file_at_start(&mut self) {
        let Some(path) = self.nodes_exclude_path.clone() else {
            return;
        };
        let excluded = match read_exclude_file(&path) {
            Ok(excluded) => excluded,
            Err(error) => {
                tracing::warn!(%error, "the exclude file is not applied at the start");
                return;
            }
        };
        let now = self.now();
        let refresh = self.cluster.refresh_excluded(&excluded, now, now);
        self.finish_decommissioning(&refresh.taken_back, now);
        if !refresh.decommissioned.is_empty() || !refresh.recommissioned.is_empty() {
            tracing::warn!(
                decommissioned = ?refresh.decommissioned,
                recommissioned = ?refresh.recommissioned,
                "nodes refreshed from the exclude file at the start"
            );
        }
        self.excluded_hosts = excluded;
    }

    /// A node that registers under a name the exclude file listed when
    /// last read is decommissioned at once (YARN refuses it as a
    /// disallowed NodeManager; here it is registered, as DECOMMISSIONED,
    /// until a refresh whose file no longer lists it takes it back).
    pub(super) fn decommission_if_excluded(&mut self, id: &str, now: u64) {
        if self.excluded_hosts.is_empty() || self.cluster.decommission_of(id).is_some() {
            return;
        }
        let listed = self.cluster.node(id).is_some_and(|node| {
            node.names()
                .iter()
                .any(|n| self.excluded_hosts.contains(*n))
        });
        if !listed {
            return;
        }
        if let Ok(taken) = self.cluster.decommission_listed(id, now) {
            self.finish_decommissioning(&taken, now);
            tracing::warn!(node = %id, "a node the exclude file lists registered: decommissioned");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str, name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn the_plain_form_is_read_with_its_comments_and_bad_files_are_refused() {
        let (_dir, path) = file(
            "\u{feff}# drained for the upgrade\nnode-1 node-2\n\n  10.0.0.7\t# rack 3\nnode-1\n",
            "exclude",
        );
        let hosts = read_exclude_file(&path).unwrap();
        assert_eq!(
            hosts.iter().map(String::as_str).collect::<Vec<_>>(),
            ["10.0.0.7", "node-1", "node-2"]
        );
        let (_dir, path) = file("ok\nbad\u{1b}[31m\n", "exclude");
        let refusal = read_exclude_file(&path).unwrap_err();
        assert!(refusal.contains("line 2"), "{refusal}");
        let (_dir, path) = file("<hosts/>", "exclude.xml");
        assert!(read_exclude_file(&path).unwrap_err().contains("XML form"));
        let (_dir, path) = file(&"a ".repeat(3 << 20), "exclude");
        assert!(
            read_exclude_file(&path)
                .unwrap_err()
                .contains("larger than")
        );
        assert!(
            read_exclude_file(Path::new("/dev/zero"))
                .unwrap_err()
                .contains("not a regular file")
        );
        // A FIFO with no writer: refused at once, not waited on.
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("exclude");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRUSR).unwrap();
        assert!(
            read_exclude_file(&fifo)
                .unwrap_err()
                .contains("not a regular file")
        );
        let missing = read_exclude_file(Path::new("/nonexistent/exclude")).unwrap_err();
        assert!(missing.contains("/nonexistent/exclude"), "{missing}");
    }
}
