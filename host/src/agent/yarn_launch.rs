//! A YARN container's launch, run inside the container — as its user, in its
//! namespaces, with its limits (`weft container-launch`, which the executor
//! starts in place of the command): localize its resources within bounds,
//! write its tokens, write YARN's launch script and exec bash on it, as a
//! NodeManager's ContainerLaunch does. Nothing here reaches further than the
//! container's own command could: the sources are read with its rights.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Component, Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};

use crate::protocol::node::{LocalResource, LocalResourceKind, YarnLaunch};

/// The file in the container's directory the executor writes the launch
/// into (read and removed by the launch).
pub const SPEC_FILE: &str = ".weft-launch.json";
/// The credentials file (HADOOP_TOKEN_FILE_LOCATION).
pub const TOKENS_FILE: &str = "container_tokens";
/// YARN's launch script.
pub const SCRIPT_FILE: &str = "launch_container.sh";
/// The most bytes one container's resources may unpack to.
pub const MAX_LOCALIZED_BYTES: u64 = 8 << 30;
/// The most files and directories one container's archives may hold.
pub const MAX_LOCALIZED_ENTRIES: u64 = 200_000;
/// The largest launch file read.
const MAX_SPEC_BYTES: u64 = 16 << 20;
/// An empty Hadoop credentials file (`HDTS`, version 0, no tokens, no
/// secrets): YARN always writes one.
const EMPTY_CREDENTIALS: &[u8] = b"HDTS\x00\x00\x00";

/// What the executor hands the launch.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LaunchSpec {
    /// The command line, unexpanded (YARN's commands joined by spaces).
    pub command_line: String,
    /// The launch context's environment, unexpanded.
    pub env: BTreeMap<String, String>,
    /// Its resources and tokens.
    pub yarn: YarnLaunch,
    /// The container's log directory (`<LOG_DIR>`).
    pub log_dir: PathBuf,
    /// Its app's id (for APPLICATION_WEB_PROXY_BASE).
    pub app_id: String,
}

/// The launch with an application master's AMRMToken among its tokens
/// (for the attempt its container id names, with the password its order
/// carries), as YARN's AMLauncher adds it; any other launch as it is.
pub fn with_amrm_token(yarn: &YarnLaunch, container_id: &str) -> Result<YarnLaunch, String> {
    use crate::yarn_rpc::credentials::{Credentials, Token};
    use crate::yarn_rpc::messages::tokens::AMRM_TOKEN_KIND;
    if yarn.amrm_password_hex.is_empty() {
        return Ok(yarn.clone());
    }
    let password = hex::decode(&yarn.amrm_password_hex)
        .map_err(|e| format!("the AMRMToken's password is not hex: {e}"))?;
    let (app, attempt) = crate::yarn_rpc::reports::container_id(container_id)
        .and_then(|id| crate::yarn_rpc::reports::attempt_id_text(id.app_attempt_id.as_ref()))
        .ok_or_else(|| format!("container id {container_id:?} names no application attempt"))?;
    let mut credentials = Credentials::decode(&yarn.tokens()?)
        .map_err(|e| format!("the launch context's tokens: {e}"))?;
    credentials.add_token(Token {
        alias: AMRM_TOKEN_KIND.to_string(),
        identifier: crate::yarn_rpc::master_protocol::amrm_identifier(&app, attempt),
        password,
        kind: AMRM_TOKEN_KIND.to_string(),
        service: String::new(),
    });
    Ok(YarnLaunch {
        tokens_hex: hex::encode(credentials.encode()),
        amrm_password_hex: String::new(),
        ..yarn.clone()
    })
}

/// YARN's expansions of a command or variable (Linux):
/// `{{X}}` → `$X`, `<CPS>` → `:`, `<LOG_DIR>` → the log directory,
/// `<ADD_OPENS>` → nothing (no JDK module flags are added here).
pub fn expand(text: &str, log_dir: &Path) -> String {
    text.replace("<LOG_DIR>", &log_dir.to_string_lossy())
        .replace("<CPS>", ":")
        .replace("<ADD_OPENS>", "")
        .replace("{{", "$")
        .replace("}}", "")
}

/// Runs the launch in the current directory (the container's): returns
/// only on failure, with YARN's kind of diagnostic.
pub fn run() -> String {
    match launch() {
        Ok(never) => match never {},
        Err(diagnostic) => diagnostic,
    }
}

fn launch() -> Result<std::convert::Infallible, String> {
    let work = std::env::current_dir().map_err(|e| format!("no working directory: {e}"))?;
    let spec = read_spec(&work.join(SPEC_FILE))?;
    spec.yarn.check()?;
    let mut budget = Budget {
        bytes: MAX_LOCALIZED_BYTES,
        entries: MAX_LOCALIZED_ENTRIES,
    };
    for resource in &spec.yarn.local_resources {
        localize(resource, &work, &mut budget)
            .map_err(|e| format!("Failed to localize {}: {e}", resource.path))?;
    }
    let tokens = spec.yarn.tokens()?;
    let tokens = if tokens.is_empty() {
        EMPTY_CREDENTIALS.to_vec()
    } else {
        tokens
    };
    write_new(&work.join(TOKENS_FILE), &tokens, 0o600)?;
    fs::create_dir(work.join("tmp")).map_err(|e| format!("cannot create tmp/: {e}"))?;
    let script = script(&spec, &work);
    write_new(&work.join(SCRIPT_FILE), script.as_bytes(), 0o700)?;
    let error = std::process::Command::new("/bin/bash")
        .arg(work.join(SCRIPT_FILE))
        .exec();
    Err(format!("cannot run /bin/bash {SCRIPT_FILE}: {error}"))
}

/// Reads and removes the launch file (never through a link: the directory
/// is the container's user's).
fn read_spec(path: &Path) -> Result<LaunchSpec, String> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let mut text = Vec::new();
    file.take(MAX_SPEC_BYTES)
        .read_to_end(&mut text)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let _ = fs::remove_file(path);
    serde_json::from_slice(&text).map_err(|e| format!("the launch file is not valid: {e}"))
}

/// The script YARN's UnixShellScriptBuilder writes: the context's variables
/// (expanded), then the node's (which win), then `exec /bin/bash -c` of the
/// commands — the double-quoted layer Spark's quoting is written for.
fn script(spec: &LaunchSpec, work: &Path) -> String {
    let mut out = String::from("#!/bin/bash\n\nset -o pipefail -e\n");
    let export = |out: &mut String, key: &str, value: &str| {
        out.push_str(&format!("export {key}=\"{value}\"\n"));
    };
    let log_dir = &spec.log_dir;
    for (key, value) in &spec.env {
        export(&mut out, key, &expand(value, log_dir));
    }
    // The node's own, as the executor set them (they win over the
    // context's, as YARN's sanitizeEnv makes them).
    for key in [
        "CONTAINER_ID",
        "USER",
        "LOGNAME",
        "HOME",
        "PWD",
        "LOG_DIRS",
        "LOCAL_DIRS",
    ] {
        if let Ok(value) = std::env::var(key) {
            export(&mut out, key, &value);
        }
    }
    let work = work.to_string_lossy();
    export(&mut out, "LOCAL_USER_DIRS", &work);
    // The NodeId masters are given, so Spark's NM_HOST matches it.
    let (nm_host, nm_port) = spec
        .yarn
        .node_manager_address
        .rsplit_once(':')
        .unwrap_or(("", "0"));
    let nm_host = match nm_host {
        "" => super::machine::host_name(),
        host => host.to_string(),
    };
    export(&mut out, "NM_HOST", &nm_host);
    export(&mut out, "NM_PORT", nm_port);
    export(
        &mut out,
        "NM_HTTP_PORT",
        &spec.yarn.node_http_port.to_string(),
    );
    export(
        &mut out,
        "HADOOP_TOKEN_FILE_LOCATION",
        &format!("{work}/{TOKENS_FILE}"),
    );
    out.push_str("export JVM_PID=\"$$\"\n");
    if spec.yarn.application_master {
        export(
            &mut out,
            "APPLICATION_WEB_PROXY_BASE",
            &format!("/proxy/{}", spec.app_id),
        );
        export(
            &mut out,
            "APP_SUBMIT_TIME_ENV",
            &spec.yarn.submit_time_ms.to_string(),
        );
    }
    // The node's default where the context sets none (YARN's whitelist).
    if let Some(java_home) = java_home() {
        out.push_str(&format!(
            "export JAVA_HOME=${{JAVA_HOME:-\"{}\"}}\n",
            java_home.display()
        ));
    }
    out.push_str(&format!(
        "exec /bin/bash -c \"{}\"\n",
        expand(&spec.command_line, log_dir)
    ));
    out
}

/// This machine's Java: JAVA_HOME, else the JDK `java` on PATH belongs to.
fn java_home() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("JAVA_HOME").filter(|h| !h.is_empty()) {
        return Some(home.into());
    }
    let path = std::env::var_os("PATH")?;
    let java = std::env::split_paths(&path)
        .map(|dir| dir.join("java"))
        .find(|candidate| candidate.is_file())?;
    let real = fs::canonicalize(java).ok()?;
    Some(real.parent()?.parent()?.to_path_buf())
}

/// What the container's resources may still take.
struct Budget {
    bytes: u64,
    entries: u64,
}

impl Budget {
    fn take_entry(&mut self) -> Result<(), String> {
        self.entries = self.entries.checked_sub(1).ok_or_else(|| {
            format!("the resources hold more than {MAX_LOCALIZED_ENTRIES} files and directories")
        })?;
        Ok(())
    }

    fn take_bytes(&mut self, bytes: u64) -> Result<(), String> {
        self.bytes = self.bytes.checked_sub(bytes).ok_or_else(|| {
            format!("the resources unpack to more than {MAX_LOCALIZED_BYTES} bytes")
        })?;
        Ok(())
    }
}

/// Places one resource under its key: copied, or unpacked by its
/// extension; refused when it changed since the client saw it.
fn localize(resource: &LocalResource, work: &Path, budget: &mut Budget) -> Result<(), String> {
    let source = Path::new(&resource.path);
    // Not blocking: a FIFO must be refused below, not waited on.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(source)
        .map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => format!("File file:{} does not exist", resource.path),
            _ => format!("cannot read file:{}: {e}", resource.path),
        })?;
    let metadata = file.metadata().map_err(|e| e.to_string())?;
    if !metadata.is_file() {
        return Err(format!("file:{} is not a regular file", resource.path));
    }
    let mtime_ms = metadata
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    if mtime_ms != resource.timestamp_ms {
        return Err(format!(
            "Resource file:{} changed on src filesystem - expected: \"{}\", was: \"{}\"",
            resource.path, resource.timestamp_ms, mtime_ms
        ));
    }
    let destination = work.join(&resource.key);
    if let Some(parent) = destination.parent() {
        fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    let name = resource.path.to_ascii_lowercase();
    let unpacked = matches!(
        resource.kind,
        LocalResourceKind::Archive | LocalResourceKind::Pattern
    );
    match resource.kind {
        // YARN's PATTERN: the matching entries, and the jar kept whole
        // beside them under the directory's own name.
        LocalResourceKind::Pattern if name.ends_with(".jar") => {
            let pattern = resource.unpack_pattern()?;
            let mut whole = file
                .try_clone()
                .map_err(|e| format!("cannot read file:{}: {e}", resource.path))?;
            unzip(file, &destination, Some(&pattern), budget)?;
            whole
                .seek(io::SeekFrom::Start(0))
                .map_err(|e| format!("cannot read file:{}: {e}", resource.path))?;
            // The jar itself takes its place, as YARN's rename would
            // (over an entry unpacked there, never through a link: none
            // is unpacked).
            let kept = destination.join(destination.file_name().unwrap_or_default());
            match fs::symlink_metadata(&kept) {
                Ok(entry) if entry.is_dir() => fs::remove_dir_all(&kept),
                Ok(_) => fs::remove_file(&kept),
                Err(_) => Ok(()),
            }
            .map_err(|e| format!("cannot replace {}: {e}", kept.display()))?;
            budget.take_entry()?;
            copy(whole, &kept, metadata.permissions().mode(), budget)
        }
        _ if unpacked && (name.ends_with(".zip") || name.ends_with(".jar")) => {
            unzip(file, &destination, None, budget)
        }
        _ if unpacked && (name.ends_with(".tar.gz") || name.ends_with(".tgz")) => {
            untar(flate2::read::GzDecoder::new(file), &destination, budget)
        }
        _ if unpacked && name.ends_with(".tar") => untar(file, &destination, budget),
        _ => {
            budget.take_entry()?;
            copy(file, &destination, metadata.permissions().mode(), budget)
        }
    }
}

/// Copies `from` into a new file at `to`, within the budget.
fn copy(from: impl Read, to: &Path, mode: u32, budget: &mut Budget) -> Result<(), String> {
    let mut out = OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o600 | (mode & 0o100))
        .open(to)
        .map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    let allowed = budget.bytes;
    let copied = io::copy(&mut from.take(allowed.saturating_add(1)), &mut out)
        .map_err(|e| format!("cannot copy into {}: {e}", to.display()))?;
    budget.take_bytes(copied)?;
    out.flush().map_err(|e| e.to_string())
}

/// A relative path of normal components inside an archive, or None.
fn inside(path: &Path) -> Option<PathBuf> {
    let mut clean = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => clean.push(part),
            Component::CurDir => {}
            _ => return None,
        }
    }
    (!clean.as_os_str().is_empty()).then_some(clean)
}

/// Unpacks a zip or jar into `to` — only the entries whose names `only`
/// matches whole, when given: files and directories only, each inside it
/// (links and paths leaving it are refused).
fn unzip(
    file: File,
    to: &Path,
    only: Option<&regex::bytes::Regex>,
    budget: &mut Budget,
) -> Result<(), String> {
    let mut archive = zip::ZipArchive::new(file).map_err(|e| format!("not a zip archive: {e}"))?;
    fs::create_dir(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    for index in 0..archive.len() {
        budget.take_entry()?;
        let mut entry = archive
            .by_index(index)
            .map_err(|e| format!("entry {index} cannot be read: {e}"))?;
        let name = entry.name().to_string();
        if only.is_some_and(|pattern| !pattern.is_match(entry.name_raw())) {
            continue;
        }
        let relative = inside(Path::new(&name))
            .ok_or_else(|| format!("entry {name:?} would be placed outside its directory"))?;
        if entry.is_symlink() {
            return Err(format!("entry {name:?} is a link, which is not unpacked"));
        }
        let path = to.join(&relative);
        if entry.is_dir() {
            fs::create_dir_all(&path)
                .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
            continue;
        }
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        let mode = entry.unix_mode().unwrap_or(0o644);
        copy(&mut entry, &path, mode, budget)?;
    }
    Ok(())
}

/// Unpacks a tar stream into `to` with the tar crate's guard (nothing is
/// written outside it, through links or otherwise), within the budget.
fn untar(stream: impl Read, to: &Path, budget: &mut Budget) -> Result<(), String> {
    fs::create_dir(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    let mut archive = tar::Archive::new(stream);
    archive.set_preserve_permissions(false);
    archive.set_overwrite(false);
    let entries = archive
        .entries()
        .map_err(|e| format!("not a tar archive: {e}"))?;
    for entry in entries {
        budget.take_entry()?;
        let mut entry = entry.map_err(|e| format!("an entry cannot be read: {e}"))?;
        budget.take_bytes(entry.header().size().unwrap_or(u64::MAX))?;
        let kind = entry.header().entry_type();
        if !(kind.is_file() || kind.is_dir() || kind.is_symlink()) {
            let name = entry
                .path()
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            return Err(format!(
                "entry {name:?} is neither a file, a directory nor a link"
            ));
        }
        let unpacked = entry
            .unpack_in(to)
            .map_err(|e| format!("an entry cannot be unpacked: {e}"))?;
        if !unpacked {
            let name = entry
                .path()
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            return Err(format!(
                "entry {name:?} would be placed outside its directory"
            ));
        }
    }
    Ok(())
}

/// Writes a new file (never through a link).
fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<(), String> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(mode)
        .open(path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    file.write_all(bytes)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::node::MAX_PATTERN_BYTES;

    #[test]
    fn yarn_expansions_are_made_as_a_linux_node_manager_makes_them() {
        let log = Path::new("/logs/c1");
        assert_eq!(
            expand(
                "{{JAVA_HOME}}/bin/java -cp {{PWD}}<CPS>x 1><LOG_DIR>/stdout",
                log
            ),
            "$JAVA_HOME/bin/java -cp $PWD:x 1>/logs/c1/stdout"
        );
    }

    fn resource(key: &str, path: &Path, kind: LocalResourceKind) -> LocalResource {
        let mtime = fs::metadata(path)
            .unwrap()
            .modified()
            .unwrap()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        LocalResource {
            key: key.into(),
            path: path.to_string_lossy().into(),
            kind,
            size: fs::metadata(path).unwrap().len(),
            timestamp_ms: mtime,
            pattern: None,
        }
    }

    fn budget() -> Budget {
        Budget {
            bytes: MAX_LOCALIZED_BYTES,
            entries: MAX_LOCALIZED_ENTRIES,
        }
    }

    #[test]
    fn files_are_copied_and_zips_unpacked_under_their_keys() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("source");
        fs::create_dir(&source).unwrap();
        fs::write(source.join("app.jar.txt"), b"hello").unwrap();
        let zip_path = source.join("conf.zip");
        {
            let mut writer = zip::ZipWriter::new(File::create(&zip_path).unwrap());
            let options = zip::write::SimpleFileOptions::default();
            writer.start_file("a/b.properties", options).unwrap();
            writer.write_all(b"k=v").unwrap();
            writer.finish().unwrap();
        }
        let work = dir.path().join("work");
        fs::create_dir(&work).unwrap();
        let mut budget = budget();
        localize(
            &resource(
                "deep/file.txt",
                &source.join("app.jar.txt"),
                LocalResourceKind::File,
            ),
            &work,
            &mut budget,
        )
        .unwrap();
        localize(
            &resource("__conf__", &zip_path, LocalResourceKind::Archive),
            &work,
            &mut budget,
        )
        .unwrap();
        assert_eq!(fs::read(work.join("deep/file.txt")).unwrap(), b"hello");
        assert_eq!(
            fs::read(work.join("__conf__/a/b.properties")).unwrap(),
            b"k=v"
        );
    }

    #[test]
    fn a_pattern_jar_unpacks_its_matching_entries_and_is_kept_whole() {
        let dir = tempfile::tempdir().unwrap();
        let jar = dir.path().join("job.jar");
        {
            let mut writer = zip::ZipWriter::new(File::create(&jar).unwrap());
            let options = zip::write::SimpleFileOptions::default();
            for (name, body) in [
                ("classes/A.class", "a"),
                ("lib/dep.jar", "d"),
                ("META-INF/MANIFEST.MF", "m"),
            ] {
                writer.start_file(name, options).unwrap();
                writer.write_all(body.as_bytes()).unwrap();
            }
            writer.finish().unwrap();
        }
        let work = dir.path().join("work");
        fs::create_dir(&work).unwrap();
        let mut pattern = resource("job.jar", &jar, LocalResourceKind::Pattern);
        // MapReduce's mapreduce.job.jar.unpack.pattern.
        pattern.pattern = Some("(?:classes/|lib/).*".into());
        pattern.check().unwrap();
        localize(&pattern, &work, &mut budget()).unwrap();
        assert_eq!(
            fs::read(work.join("job.jar/classes/A.class")).unwrap(),
            b"a"
        );
        assert_eq!(fs::read(work.join("job.jar/lib/dep.jar")).unwrap(), b"d");
        assert!(!work.join("job.jar/META-INF").exists(), "not matched");
        assert_eq!(
            fs::read(work.join("job.jar/job.jar")).unwrap(),
            fs::read(&jar).unwrap(),
            "the jar itself, kept whole"
        );
        // Matched whole, as Java's matches(): "lib" alone is no match.
        let whole = LocalResource {
            key: "again".into(),
            pattern: Some("lib".into()),
            ..pattern.clone()
        };
        localize(&whole, &work, &mut budget()).unwrap();
        assert!(!work.join("again/lib").exists());
        // A pattern too long or with control characters is refused by the
        // check; one that does not compile, or compiles too big, when
        // compiled (at the RPC edge, and by the agent).
        for bad in [&"a".repeat(MAX_PATTERN_BYTES + 1), "a\u{1}"] {
            let refused = LocalResource {
                pattern: Some(bad.to_string()),
                ..pattern.clone()
            };
            assert!(refused.check().unwrap_err().contains("pattern"));
        }
        for (i, bad) in ["(", "(?:a{1000}){1000}", "(\\w)\\1"].iter().enumerate() {
            let refused = LocalResource {
                key: format!("bad{i}"),
                pattern: Some(bad.to_string()),
                ..pattern.clone()
            };
            refused.check().unwrap();
            let error = localize(&refused, &work, &mut budget()).unwrap_err();
            assert!(
                error.contains("its pattern is not one Weft takes"),
                "{bad}: {error}"
            );
        }
        // An entry where the jar's own copy goes is replaced by it.
        let clash = dir.path().join("clash.jar");
        {
            let mut writer = zip::ZipWriter::new(File::create(&clash).unwrap());
            let options = zip::write::SimpleFileOptions::default();
            writer.start_file("clash/inner.txt", options).unwrap();
            writer.write_all(b"x").unwrap();
            writer.finish().unwrap();
        }
        let mut clashing = resource("clash", &clash, LocalResourceKind::Pattern);
        clashing.pattern = None;
        localize(&clashing, &work, &mut budget()).unwrap();
        assert_eq!(
            fs::read(work.join("clash/clash")).unwrap(),
            fs::read(&clash).unwrap()
        );
        let stray = LocalResource {
            kind: LocalResourceKind::File,
            ..pattern
        };
        assert!(stray.check().unwrap_err().contains("only a PATTERN"));
    }

    #[test]
    fn a_changed_file_a_missing_one_and_an_escaping_zip_entry_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        fs::write(&file, b"x").unwrap();
        let work = dir.path().join("work");
        fs::create_dir(&work).unwrap();
        let mut changed = resource("k", &file, LocalResourceKind::File);
        changed.timestamp_ms -= 1000;
        let error = localize(&changed, &work, &mut budget()).unwrap_err();
        assert!(error.contains("changed on src filesystem"), "{error}");
        let missing = LocalResource {
            path: dir.path().join("nope").to_string_lossy().into(),
            ..changed
        };
        let error = localize(&missing, &work, &mut budget()).unwrap_err();
        assert!(error.contains("does not exist"), "{error}");

        let zip_path = dir.path().join("evil.zip");
        {
            let mut writer = zip::ZipWriter::new(File::create(&zip_path).unwrap());
            let options = zip::write::SimpleFileOptions::default();
            writer.start_file("../escaped", options).unwrap();
            writer.write_all(b"x").unwrap();
            writer.finish().unwrap();
        }
        let error = localize(
            &resource("evil", &zip_path, LocalResourceKind::Archive),
            &work,
            &mut budget(),
        )
        .unwrap_err();
        assert!(error.contains("outside"), "{error}");
        assert!(!dir.path().join("escaped").exists());
    }

    #[test]
    fn a_tar_link_out_of_the_directory_is_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        fs::create_dir(&outside).unwrap();
        let tar_path = dir.path().join("evil.tar");
        {
            let mut builder = tar::Builder::new(File::create(&tar_path).unwrap());
            let mut link = tar::Header::new_gnu();
            link.set_entry_type(tar::EntryType::Symlink);
            link.set_size(0);
            builder.append_link(&mut link, "out", &outside).unwrap();
            let mut file = tar::Header::new_gnu();
            file.set_size(1);
            file.set_mode(0o644);
            builder
                .append_data(&mut file, "out/planted", &b"x"[..])
                .unwrap();
            builder.finish().unwrap();
        }
        let work = dir.path().join("work");
        fs::create_dir(&work).unwrap();
        let result = localize(
            &resource("evil", &tar_path, LocalResourceKind::Archive),
            &work,
            &mut budget(),
        );
        assert!(result.is_err(), "{result:?}");
        assert!(!outside.join("planted").exists());
    }

    #[test]
    fn a_fifo_source_is_refused_not_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let work = dir.path().join("work");
        fs::create_dir(&work).unwrap();
        let error = localize(
            &resource("k", &fifo, LocalResourceKind::File),
            &work,
            &mut budget(),
        )
        .unwrap_err();
        assert!(error.contains("not a regular file"), "{error}");
    }

    #[test]
    fn the_budget_bounds_what_resources_unpack_to() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("big");
        fs::write(&file, vec![0u8; 4096]).unwrap();
        let work = dir.path().join("work");
        fs::create_dir(&work).unwrap();
        let mut small = Budget {
            bytes: 1000,
            entries: 10,
        };
        let error = localize(
            &resource("big", &file, LocalResourceKind::File),
            &work,
            &mut small,
        )
        .unwrap_err();
        assert!(error.contains("more than"), "{error}");
    }
}
