//! One cgroup per container, so a container's memory is capped, its CPU
//! weighted by its vcores, its processes counted (the pids controller,
//! where there is one: no container can take every pid of the machine),
//! and every process it starts — even one that leaves its process group
//! with `setsid` — can be found and killed.
//!
//! Detection reads `/proc/self/cgroup` and `/proc/self/mountinfo` and
//! prefers the unified (v2) hierarchy when it offers the memory controller,
//! else the v1 `memory` (and `cpu`, possibly co-mounted as `cpu,cpuacct`)
//! hierarchies. Cgroups are created only beneath the agent's own cgroup in
//! each hierarchy, as `<own>/<cgroup_name>/<container id>`, never elsewhere.
//!
//! v2's rules are followed: a controller works in a child only when its
//! parent lists it in `cgroup.subtree_control` (top-down), and a cgroup that
//! holds processes cannot enable controllers for children (no internal
//! processes). So when the agent's own cgroup holds only the agent, the
//! agent moves itself into a leaf `<own>/<cgroup_name>.agent` first (as
//! Slurm and systemd-delegated services do); if it holds other processes,
//! cgroups are unusable and the reason says so.
//!
//! A process joins its cgroup between fork and exec: the parent opens the
//! `cgroup.procs` files ([`ContainerCgroup::open_join_files`]) and the child
//! writes "0" (itself) to them with a raw write ([`join_in_child`]), so not
//! even the container's first instruction runs outside its limits.

use std::fs::{self, OpenOptions};
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// Which cgroup interface the agent drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupVersion {
    /// cgroup v1: a hierarchy per controller (memory, cpu, pids).
    V1,
    /// cgroup v2: the unified hierarchy.
    V2,
}

/// A cgroup operation that failed, with the file it was about.
#[derive(Debug, thiserror::Error)]
#[error("cannot {action} {path}: {source}")]
pub struct CgroupError {
    action: &'static str,
    path: PathBuf,
    #[source]
    source: io::Error,
}

impl CgroupError {
    fn new(action: &'static str, path: &Path, source: io::Error) -> CgroupError {
        CgroupError {
            action,
            path: path.to_owned(),
            source,
        }
    }
}

/// The usable cgroup hierarchies and the agent's parent cgroup in each.
#[derive(Debug, Clone)]
pub struct Cgroups {
    version: CgroupVersion,
    /// `<own memory cgroup>/<cgroup_name>`.
    memory_parent: PathBuf,
    /// `<own cpu cgroup>/<cgroup_name>`, when the cpu controller is usable
    /// (the same directory as `memory_parent` on v2 or when co-mounted).
    cpu_parent: Option<PathBuf>,
    /// `<own pids cgroup>/<cgroup_name>`, when the pids controller is
    /// usable (the same directory as `memory_parent` on v2).
    pids_parent: Option<PathBuf>,
    /// What all containers together may hold, in bytes (the memory
    /// parent's limit; set again when v1's parent is made again).
    all_containers_memory: Option<u64>,
}

/// One container's cgroup (one directory per hierarchy it spans).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerCgroup {
    version: CgroupVersion,
    memory_dir: PathBuf,
    cpu_dir: Option<PathBuf>,
    pids_dir: Option<PathBuf>,
}

impl Cgroups {
    /// Finds usable cgroups for this process and prepares the agent's
    /// parent cgroups `<own>/<cgroup_name>`; `Err` says, for people, why
    /// containers will run in process groups only.
    pub fn detect(cgroup_name: &str) -> Result<Cgroups, String> {
        if !is_plain_name(cgroup_name) {
            return Err(format!(
                "the cgroup name {cgroup_name:?} is not a plain directory name ([A-Za-z0-9_.-]+)"
            ));
        }
        let memberships = fs::read_to_string("/proc/self/cgroup")
            .map_err(|error| format!("cannot read /proc/self/cgroup: {error}"))?;
        let mountinfo = fs::read_to_string("/proc/self/mountinfo")
            .map_err(|error| format!("cannot read /proc/self/mountinfo: {error}"))?;
        let places = locate(&memberships, &mountinfo);
        let v2_reason = match &places.unified {
            Ok(own) => match setup_v2(own, cgroup_name) {
                Ok(cgroups) => return Ok(cgroups),
                Err(reason) => reason,
            },
            Err(reason) => reason.clone(),
        };
        match setup_v1(&places, cgroup_name) {
            Ok(cgroups) => Ok(cgroups),
            Err(v1_reason) => Err(format!("cgroup v2: {v2_reason}; cgroup v1: {v1_reason}")),
        }
    }

    /// Which interface the agent drives: v2 when the unified hierarchy
    /// offers memory and cpu, else v1.
    pub fn version(&self) -> CgroupVersion {
        self.version
    }

    /// For people and the node report, e.g. "cgroup v1 (memory, cpu)".
    pub fn describe(&self) -> String {
        let version = match self.version {
            CgroupVersion::V1 => "v1",
            CgroupVersion::V2 => "v2",
        };
        let controllers: Vec<&str> = std::iter::once("memory")
            .chain(self.cpu_parent.as_ref().map(|_| "cpu"))
            .chain(self.pids_parent.as_ref().map(|_| "pids"))
            .collect();
        format!("cgroup {version} ({})", controllers.join(", "))
    }

    /// The paths of a container's cgroup (whether or not it exists).
    /// `container_id` must already be a checked plain name.
    pub fn container(&self, container_id: &str) -> ContainerCgroup {
        let memory_dir = self.memory_parent.join(container_id);
        let in_parent = |parent: &Option<PathBuf>| parent.as_ref().map(|p| p.join(container_id));
        ContainerCgroup {
            version: self.version,
            memory_dir,
            cpu_dir: in_parent(&self.cpu_parent),
            pids_dir: in_parent(&self.pids_parent),
        }
    }

    /// The container's cgroup if it exists (an earlier agent created it).
    pub fn existing(&self, container_id: &str) -> Option<ContainerCgroup> {
        let cgroup = self.container(container_id);
        cgroup.memory_dir.is_dir().then_some(cgroup)
    }

    /// Creates the container's cgroup with its limits: a memory hard limit
    /// of `memory_mb` MiB (0: none) that swap cannot dodge, a CPU weight
    /// proportional to `vcores` (YARN's CGroups*ResourceHandlerImpl values)
    /// and at most `pids_max` processes and threads (0: no limit). A
    /// leftover cgroup of the same name (an earlier agent's) is emptied and
    /// reused.
    pub fn create(
        &self,
        container_id: &str,
        memory_mb: u64,
        vcores: u32,
        pids_max: u64,
    ) -> Result<ContainerCgroup, CgroupError> {
        let cgroup = self.container(container_id);
        for dir in cgroup.dirs() {
            let mut made = fs::create_dir(dir);
            if self.version == CgroupVersion::V1
                && made
                    .as_ref()
                    .is_err_and(|error| error.kind() == io::ErrorKind::NotFound)
                && let Some(parent) = dir.parent()
            {
                // v1 has no subtree_control to set up, so a parent removed
                // since detection can simply be made again. (Only then:
                // trying it first would cost a failed mkdir and a stat per
                // hierarchy and container.)
                fs::create_dir_all(parent)
                    .map_err(|error| CgroupError::new("create", parent, error))?;
                if parent == self.memory_parent
                    && let Err(error) = self.cap_memory_parent()
                {
                    tracing::warn!(%error, "containers together are not capped at the node's memory");
                }
                made = fs::create_dir(dir);
            }
            match made {
                Ok(()) => {}
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => {
                    kill_listed(dir);
                }
                Err(error) => return Err(CgroupError::new("create", dir, error)),
            }
        }
        if let Err(error) = cgroup.apply_limits(memory_mb, vcores, pids_max) {
            cgroup.kill_all();
            let _ = cgroup.remove();
            return Err(error);
        }
        Ok(cgroup)
    }

    /// Caps what all containers together hold at `memory_mb` (0: no cap):
    /// the memory parent's limit, so memory charged to containers —
    /// running, or left behind by ended ones and reparented here — never
    /// takes more of the host than the node declares.
    pub fn limit_all_containers(&mut self, memory_mb: u64) -> Result<(), CgroupError> {
        let bytes = memory_mb.saturating_mul(1024 * 1024);
        self.all_containers_memory = (bytes > 0 && bytes < (1 << 62)).then_some(bytes);
        self.cap_memory_parent()
    }

    fn cap_memory_parent(&self) -> Result<(), CgroupError> {
        let Some(cap) = self.all_containers_memory else {
            return Ok(());
        };
        let (limit, usage, swap) = match self.version {
            CgroupVersion::V1 => (
                "memory.limit_in_bytes",
                "memory.usage_in_bytes",
                "memory.memsw.limit_in_bytes",
            ),
            CgroupVersion::V2 => ("memory.max", "memory.current", "memory.swap.max"),
        };
        // Never below what the containers hold now (an agent restarted
        // declaring less than its recovered containers use): v2 would
        // reclaim and kill in them, v1 refuse the write.
        let used = fs::read_to_string(self.memory_parent.join(usage))
            .ok()
            .and_then(|text| text.trim().parse::<u64>().ok())
            .unwrap_or(0);
        let bytes = cap.max(used);
        write_file(&self.memory_parent.join(limit), &bytes)?;
        // Nor beyond it by swapping (as each container's own limit).
        let swap = self.memory_parent.join(swap);
        if swap.exists() {
            let _ = match self.version {
                CgroupVersion::V1 => write_file(&swap, &bytes),
                CgroupVersion::V2 => write_file(&swap, &0),
            };
        }
        Ok(())
    }

    /// The names of the container cgroups under the agent's parents.
    pub fn container_names(&self) -> Vec<String> {
        let mut names: Vec<String> = std::iter::once(&self.memory_parent)
            .chain(self.cpu_parent.as_ref())
            .chain(self.pids_parent.as_ref())
            .filter_map(|parent| fs::read_dir(parent).ok())
            .flatten()
            .filter_map(|entry| {
                let entry = entry.ok()?;
                entry.file_type().ok()?.is_dir().then_some(())?;
                entry.file_name().into_string().ok()
            })
            .filter(|name| is_plain_name(name))
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// Removes the agent's parent cgroups if no container cgroup is left in
    /// them (best effort: a non-empty directory stays).
    pub fn remove_parents_if_empty(&self) {
        let _ = fs::remove_dir(&self.memory_parent);
        for parent in [&self.cpu_parent, &self.pids_parent].into_iter().flatten() {
            let _ = fs::remove_dir(parent);
        }
    }
}

impl ContainerCgroup {
    /// A container's cgroup that is only `dir` (v1, no cpu or pids dir):
    /// for tests of what removes cgroups, on plain dirs.
    #[cfg(test)]
    pub fn at(dir: PathBuf) -> ContainerCgroup {
        ContainerCgroup {
            version: CgroupVersion::V1,
            memory_dir: dir,
            cpu_dir: None,
            pids_dir: None,
        }
    }

    /// The directories of this cgroup, one per hierarchy.
    fn dirs(&self) -> impl Iterator<Item = &Path> {
        let mut dirs: Vec<&Path> = vec![self.memory_dir.as_path()];
        for dir in [&self.cpu_dir, &self.pids_dir].into_iter().flatten() {
            if !dirs.contains(&dir.as_path()) {
                dirs.push(dir);
            }
        }
        dirs.into_iter()
    }

    fn apply_limits(&self, memory_mb: u64, vcores: u32, pids_max: u64) -> Result<(), CgroupError> {
        // Both versions call it pids.max.
        if let Some(pids_dir) = &self.pids_dir
            && pids_max > 0
        {
            write_file(&pids_dir.join("pids.max"), &pids_max)?;
        }
        let memory_bytes = memory_mb.saturating_mul(1024 * 1024);
        // 0 asks for nothing and above 2^62 bytes a limit means nothing:
        // leave the limit at the kernel's "unlimited".
        let limit_memory = memory_bytes > 0 && memory_bytes < (1 << 62);
        let vcores = u64::from(vcores.max(1));
        match self.version {
            CgroupVersion::V1 => {
                if limit_memory {
                    write_file(
                        &self.memory_dir.join("memory.limit_in_bytes"),
                        &memory_bytes,
                    )?;
                    // memory+swap at the same value so swapping cannot dodge the
                    // limit; the file is absent without swap accounting.
                    let memsw = self.memory_dir.join("memory.memsw.limit_in_bytes");
                    if memsw.exists() {
                        let _ = write_file(&memsw, &memory_bytes);
                    }
                }
                if let Some(cpu_dir) = &self.cpu_dir {
                    // cpu.shares' range is 2..=262144.
                    write_file(&cpu_dir.join("cpu.shares"), &(vcores * 1024).min(262_144))?;
                }
            }
            CgroupVersion::V2 => {
                if limit_memory {
                    write_file(&self.memory_dir.join("memory.max"), &memory_bytes)?;
                    let swap = self.memory_dir.join("memory.swap.max");
                    if swap.exists() {
                        let _ = write_file(&swap, &0);
                    }
                }
                if let Some(cpu_dir) = &self.cpu_dir {
                    write_file(&cpu_dir.join("cpu.weight"), &(vcores * 100).min(10_000))?;
                }
            }
        }
        Ok(())
    }

    /// Opens the `cgroup.procs` files a child writes to in [`join_in_child`]
    /// (close-on-exec, so the container never inherits them).
    pub fn open_join_files(&self) -> Result<Vec<OwnedFd>, CgroupError> {
        self.dirs()
            .map(|dir| {
                let path = dir.join("cgroup.procs");
                OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .map(OwnedFd::from)
                    .map_err(|error| CgroupError::new("open", &path, error))
            })
            .collect()
    }

    /// Whether the kernel killed a process here for exceeding the memory
    /// limit: v2 `memory.events` / v1 `memory.oom_control` `oom_kill`. On
    /// v1 kernels without that counter (before 4.13), a SIGKILL while the
    /// peak usage touched the limit counts.
    pub fn memory_killed(&self, ended_by_sigkill: bool) -> bool {
        let (file, key) = match self.version {
            CgroupVersion::V1 => ("memory.oom_control", "oom_kill"),
            CgroupVersion::V2 => ("memory.events", "oom_kill"),
        };
        let text = fs::read_to_string(self.memory_dir.join(file)).unwrap_or_default();
        if let Some(kills) = keyed_value(&text, key) {
            // The kernel counts a kill in the victim's cgroup whichever
            // limit was reached: the container's own only if its own limit
            // was (v2's local oom events; v1's peak at its limit — its
            // failure counts stay 0 when the kernel reclaims first), not
            // when all containers together reached the node's.
            let own_limit_reached = match self.version {
                CgroupVersion::V2 => {
                    fs::read_to_string(self.memory_dir.join("memory.events.local"))
                        .ok()
                        .and_then(|local| keyed_value(&local, "oom"))
                        .is_none_or(|ooms| ooms > 0)
                }
                CgroupVersion::V1 => self.peak_at_limit().unwrap_or(true),
            };
            return kills > 0 && own_limit_reached;
        }
        if self.version == CgroupVersion::V1 && ended_by_sigkill {
            let failures = self.read_number("memory.failcnt");
            if let (Some(at_limit), Some(failures)) = (self.peak_at_limit(), failures) {
                return failures > 0 && at_limit;
            }
        }
        false
    }

    /// Whether its peak use reached its limit (v1), if both read.
    fn peak_at_limit(&self) -> Option<bool> {
        let limit = self.read_number("memory.limit_in_bytes")?;
        let peak = self.read_number("memory.max_usage_in_bytes")?;
        Some(peak.saturating_add(1024 * 1024) >= limit)
    }

    /// A number one of its memory files holds.
    fn read_number(&self, name: &str) -> Option<u64> {
        fs::read_to_string(self.memory_dir.join(name))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// The processes in this cgroup now.
    pub fn pids(&self) -> Vec<u32> {
        let mut pids: Vec<u32> = self.dirs().flat_map(listed_pids).collect();
        pids.sort_unstable();
        pids.dedup();
        pids
    }

    /// SIGKILLs everything in the cgroup: v2's `cgroup.kill` when the kernel
    /// has it, and each listed process in any case. Signals are delivered
    /// asynchronously, so the cgroup may take a moment to empty; call again
    /// to catch processes forked in between. Returns how many were listed.
    pub fn kill_all(&self) -> usize {
        if self.version == CgroupVersion::V2 {
            let kill_file = self.memory_dir.join("cgroup.kill");
            if kill_file.exists() {
                let _ = fs::write(&kill_file, "1");
            }
        }
        self.dirs().map(kill_listed).sum()
    }

    /// Removes the cgroup's directories; fails (EBUSY) while processes are
    /// left, so callers kill first and retry later. Absent is fine.
    pub fn remove(&self) -> Result<(), CgroupError> {
        for dir in self.dirs() {
            match fs::remove_dir(dir) {
                Ok(()) => {}
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(error) => return Err(CgroupError::new("remove", dir, error)),
            }
        }
        Ok(())
    }
}

/// Moves the calling process into the cgroups whose `cgroup.procs` files
/// are `join_files`. Runs in the child between fork and exec, so it only
/// makes raw `write` calls: no allocation, no locks (async-signal-safe).
pub fn join_in_child(join_files: &[OwnedFd]) -> Result<(), nix::errno::Errno> {
    for file in join_files {
        nix::unistd::write(file, b"0")?;
    }
    Ok(())
}

/// Where this process sits in each cgroup hierarchy, as found in /proc.
#[derive(Debug, PartialEq, Eq)]
struct Places {
    /// The agent's own v2 cgroup directory, or why there is none usable.
    unified: Result<PathBuf, String>,
    /// The agent's own v1 `memory` cgroup directory, or why there is none.
    v1_memory: Result<PathBuf, String>,
    /// The agent's own v1 `cpu` cgroup directory, or why there is none.
    v1_cpu: Result<PathBuf, String>,
    /// The agent's own v1 `pids` cgroup directory, or why there is none.
    v1_pids: Result<PathBuf, String>,
}

/// A cgroup filesystem mount from /proc/self/mountinfo.
#[derive(Debug)]
struct CgroupMount {
    /// The hierarchy path mounted (usually "/").
    root: String,
    mount_point: PathBuf,
    unified: bool,
    /// The super options: for v1, the controllers of the hierarchy.
    options: Vec<String>,
}

/// Finds the agent's own cgroup directories from the texts of
/// /proc/self/cgroup and /proc/self/mountinfo.
fn locate(memberships: &str, mountinfo: &str) -> Places {
    let mounts = parse_cgroup_mounts(mountinfo);
    // "hierarchy-ID:controller-list:cgroup-path"; v2 is "0::path".
    let membership = |wanted: Option<&str>| {
        memberships.lines().find_map(|line| {
            let mut parts = line.splitn(3, ':');
            let (id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            let matches = match wanted {
                None => id == "0" && controllers.is_empty(),
                Some(controller) => controllers.split(',').any(|c| c == controller),
            };
            matches.then(|| path.to_owned())
        })
    };
    let own_dir = |wanted: Option<&str>| -> Result<PathBuf, String> {
        let what = wanted.unwrap_or("unified");
        let path =
            membership(wanted).ok_or_else(|| format!("this process is in no {what} hierarchy"))?;
        let mount = mounts
            .iter()
            .filter(|mount| match wanted {
                None => mount.unified,
                Some(controller) => !mount.unified && mount.options.iter().any(|o| o == controller),
            })
            .find(|mount| under(&path, &mount.root).is_some())
            .ok_or_else(|| format!("the {what} hierarchy is not mounted where this process can see its cgroup {path}"))?;
        let relative = under(&path, &mount.root).unwrap_or_default();
        Ok(mount.mount_point.join(relative))
    };
    Places {
        unified: own_dir(None),
        v1_memory: own_dir(Some("memory")),
        v1_cpu: own_dir(Some("cpu")),
        v1_pids: own_dir(Some("pids")),
    }
}

/// `path` relative to `root` when it lies beneath it.
fn under<'a>(path: &'a str, root: &str) -> Option<&'a str> {
    if root == "/" {
        return Some(path.trim_start_matches('/'));
    }
    let rest = path.strip_prefix(root)?;
    if rest.is_empty() || rest.starts_with('/') {
        Some(rest.trim_start_matches('/'))
    } else {
        None
    }
}

fn parse_cgroup_mounts(mountinfo: &str) -> Vec<CgroupMount> {
    mountinfo
        .lines()
        .filter_map(|line| {
            // "id parent major:minor root mount-point options [optional…] - fstype source super-options"
            let (before, after) = line.split_once(" - ")?;
            let before: Vec<&str> = before.split(' ').collect();
            let after: Vec<&str> = after.split(' ').collect();
            let unified = match *after.first()? {
                "cgroup2" => true,
                "cgroup" => false,
                _ => return None,
            };
            Some(CgroupMount {
                root: unescape_mount_field(before.get(3)?),
                mount_point: PathBuf::from(unescape_mount_field(before.get(4)?)),
                unified,
                options: after
                    .get(2)
                    .map(|o| o.split(',').map(str::to_owned).collect())
                    .unwrap_or_default(),
            })
        })
        .collect()
}

/// mountinfo writes space, tab, newline and backslash as octal escapes (`\040`).
fn unescape_mount_field(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && let Some(code) = bytes.get(i + 1..i + 4)
            && code.iter().all(|b| (b'0'..=b'7').contains(b))
        {
            let value = code
                .iter()
                .fold(0u32, |acc, b| acc * 8 + u32::from(b - b'0'));
            if let Ok(byte) = u8::try_from(value) {
                out.push(byte);
                i += 4;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn setup_v2(own: &Path, cgroup_name: &str) -> Result<Cgroups, String> {
    let agent_leaf_name = format!("{cgroup_name}.agent");
    // An agent (or its parent) that moved itself into its leaf earlier
    // sits one level down: the containers' parent is beside that leaf.
    let base = match own.file_name() {
        Some(name) if name == agent_leaf_name.as_str() => own.parent().unwrap_or(own),
        _ => own,
    };
    let available = read_words(&base.join("cgroup.controllers"))?;
    if !available.iter().any(|c| c == "memory") {
        return Err(format!(
            "the memory controller is not available in {} (cgroup.controllers: {})",
            base.display(),
            display_words(&available)
        ));
    }
    let want_cpu = available.iter().any(|c| c == "cpu");
    let want_pids = available.iter().any(|c| c == "pids");
    enable_controllers_in(base, want_cpu, &agent_leaf_name)?;
    enable_optional(base, "pids", want_pids);
    let parent = base.join(cgroup_name);
    make_dir(&parent)?;
    let cpu_enabled = enable_controllers_in(&parent, want_cpu, &agent_leaf_name)?;
    let pids_enabled = enable_optional(&parent, "pids", want_pids);
    Ok(Cgroups {
        version: CgroupVersion::V2,
        cpu_parent: cpu_enabled.then(|| parent.clone()),
        pids_parent: pids_enabled.then(|| parent.clone()),
        memory_parent: parent,
        all_containers_memory: None,
    })
}

/// Enables memory (required) and cpu (when `want_cpu`; best effort) for
/// the children of `dir`. If `dir` holds only this process, it moves this
/// process into the leaf `agent_leaf_name` first (no internal processes).
/// Returns whether cpu is enabled.
fn enable_controllers_in(
    dir: &Path,
    want_cpu: bool,
    agent_leaf_name: &str,
) -> Result<bool, String> {
    let control = dir.join("cgroup.subtree_control");
    let enabled = read_words(&control)?;
    let has = |name: &str| enabled.iter().any(|c| c == name);
    if !has("memory")
        && let Err(first) = fs::write(&control, "+memory")
    {
        let me = std::process::id();
        let others = listed_pids(dir)
            .into_iter()
            .filter(|pid| *pid != me)
            .count();
        if others > 0 {
            return Err(format!(
                "cannot enable memory in {}: {first} (it holds {others} process(es) besides \
                 the agent; by the no-internal-process rule a cgroup with processes cannot \
                 enable controllers for its children: start the agent in a cgroup of its own)",
                control.display()
            ));
        }
        if listed_pids(dir).is_empty() {
            return Err(format!(
                "cannot enable memory in {}: {first}",
                control.display()
            ));
        }
        // Only the agent is in the way: it moves into a leaf of its own.
        let leaf = dir.join(agent_leaf_name);
        make_dir(&leaf)?;
        let leaf_procs = leaf.join("cgroup.procs");
        fs::write(&leaf_procs, me.to_string()).map_err(|error| {
            format!(
                "cannot move the agent into {}: {error}",
                leaf_procs.display()
            )
        })?;
        tracing::info!(cgroup = %leaf.display(), "moved the agent into a leaf cgroup so that its containers' cgroups can have controllers");
        fs::write(&control, "+memory")
            .map_err(|error| format!("cannot enable memory in {}: {error}", control.display()))?;
    }
    if !want_cpu {
        return Ok(false);
    }
    if has("cpu") {
        return Ok(true);
    }
    // cpu refuses to be enabled while real-time threads exist; then
    // containers get memory limits without CPU weights.
    match fs::write(&control, "+cpu") {
        Ok(()) => Ok(true),
        Err(error) => {
            tracing::warn!(file = %control.display(), %error, "cannot enable the cpu controller; containers get no CPU weight");
            Ok(false)
        }
    }
}

/// Enables `controller` for the children of `dir` if `wanted` (best
/// effort: containers go without its limit otherwise); whether it is on.
fn enable_optional(dir: &Path, controller: &str, wanted: bool) -> bool {
    if !wanted {
        return false;
    }
    let control = dir.join("cgroup.subtree_control");
    if read_words(&control).is_ok_and(|on| on.iter().any(|c| c == controller)) {
        return true;
    }
    match fs::write(&control, format!("+{controller}")) {
        Ok(()) => true,
        Err(error) => {
            tracing::warn!(file = %control.display(), %error, controller, "cannot enable a cgroup controller; containers go without its limit");
            false
        }
    }
}

fn setup_v1(places: &Places, cgroup_name: &str) -> Result<Cgroups, String> {
    let memory_own = places
        .v1_memory
        .as_ref()
        .map_err(|reason| format!("memory: {reason}"))?;
    let memory_parent = memory_own.join(cgroup_name);
    make_dir(&memory_parent)?;
    if !memory_parent.join("memory.limit_in_bytes").exists() {
        return Err(format!(
            "{} has no memory.limit_in_bytes",
            memory_parent.display()
        ));
    }
    let optional_parent = |own: &Result<PathBuf, String>, controller: &str| match own {
        Ok(own) => {
            let parent = own.join(cgroup_name);
            match make_dir(&parent) {
                Ok(()) => Some(parent),
                Err(reason) => {
                    tracing::warn!(%reason, controller, "a v1 controller is unusable; containers go without its limit");
                    None
                }
            }
        }
        Err(_) => None,
    };
    let cpu_parent = optional_parent(&places.v1_cpu, "cpu");
    let pids_parent = optional_parent(&places.v1_pids, "pids");
    Ok(Cgroups {
        version: CgroupVersion::V1,
        memory_parent,
        cpu_parent,
        pids_parent,
        all_containers_memory: None,
    })
}

fn make_dir(dir: &Path) -> Result<(), String> {
    match fs::create_dir(dir) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(error) => Err(format!("cannot create {}: {error}", dir.display())),
    }
}

fn read_words(path: &Path) -> Result<Vec<String>, String> {
    let text = fs::read_to_string(path)
        .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    Ok(text.split_whitespace().map(str::to_owned).collect())
}

fn display_words(words: &[String]) -> String {
    if words.is_empty() {
        "none".to_owned()
    } else {
        words.join(" ")
    }
}

fn write_file(path: &Path, value: &dyn std::fmt::Display) -> Result<(), CgroupError> {
    fs::write(path, value.to_string()).map_err(|error| CgroupError::new("write", path, error))
}

/// The value of `key` in a "key value" per line file.
fn keyed_value(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (name, value) = line.split_once(' ')?;
        (name == key).then(|| value.trim().parse().ok()).flatten()
    })
}

fn listed_pids(dir: &Path) -> Vec<u32> {
    fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect()
}

/// SIGKILLs each process listed in `dir`; returns how many were listed.
///
/// A listed process may end, and its pid be reused by a process outside
/// the cgroup, before the signal: so each is pinned first (a pidfd names
/// one process, never a later one with its pid), the list is read again,
/// and only processes still listed are signalled. One that ended between
/// the readings is not; whatever took its pid since is left to the next
/// call, as is anything forked in between. A pid that cannot be pinned
/// (a kernel before 5.3, no descriptors left) is signalled by number if
/// the second reading still lists it: the old way, with its small race.
fn kill_listed(dir: &Path) -> usize {
    let pids = listed_pids(dir);
    let mut pinned = Vec::with_capacity(pids.len());
    let mut unpinned = Vec::new();
    for &pid in &pids {
        // Never 0 or 1 (this process group, init), whatever the file says.
        let Some(raw) = i32::try_from(pid).ok().filter(|raw| *raw > 1) else {
            continue;
        };
        let Some(rustix_pid) = rustix::process::Pid::from_raw(raw) else {
            continue;
        };
        match rustix::process::pidfd_open(rustix_pid, rustix::process::PidfdFlags::empty()) {
            Ok(pidfd) => pinned.push((pid, pidfd)),
            // Gone already.
            Err(rustix::io::Errno::SRCH) => {}
            Err(error) => {
                tracing::debug!(pid, %error, "cannot pin a container's process; signalled by pid");
                unpinned.push(raw);
            }
        }
    }
    if pinned.is_empty() && unpinned.is_empty() {
        return pids.len();
    }
    let still_listed: std::collections::HashSet<u32> = listed_pids(dir).into_iter().collect();
    for (pid, pidfd) in pinned {
        if still_listed.contains(&pid) {
            let _ = rustix::process::pidfd_send_signal(&pidfd, rustix::process::Signal::KILL);
        }
    }
    for raw in unpinned {
        if still_listed.contains(&raw.unsigned_abs()) {
            let _ = kill(Pid::from_raw(raw), Signal::SIGKILL);
        }
    }
    pids.len()
}

/// Cgroup and other names the agent creates: one path component.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This machine's layout: hybrid, v1 memory and cpu, v2 without controllers.
    const HYBRID_CGROUP: &str =
        "9:name=systemd:/\n4:memory:/process_api/abc\n2:cpuacct:/\n1:cpu:/\n0::/\n";
    const HYBRID_MOUNTINFO: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn locates_own_cgroups_in_a_hybrid_layout() {
        let places = locate(HYBRID_CGROUP, HYBRID_MOUNTINFO);
        assert_eq!(places.unified, Ok(PathBuf::from("/sys/fs/cgroup/unified")));
        assert_eq!(
            places.v1_memory,
            Ok(PathBuf::from("/sys/fs/cgroup/memory/process_api/abc"))
        );
        assert_eq!(places.v1_cpu, Ok(PathBuf::from("/sys/fs/cgroup/cpu")));
    }

    #[test]
    fn locates_co_mounted_cpu_and_a_pure_v2_layout() {
        let cgroup = "0::/system.slice/weft.service\n";
        let mountinfo = "30 24 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
        let places = locate(cgroup, mountinfo);
        assert_eq!(
            places.unified,
            Ok(PathBuf::from("/sys/fs/cgroup/system.slice/weft.service"))
        );
        assert!(places.v1_memory.is_err());

        let cgroup = "3:cpu,cpuacct:/a/b\n";
        let mountinfo = "32 31 0:29 /a /mnt/cpu\\040x rw - cgroup cgroup rw,cpu,cpuacct\n";
        let places = locate(cgroup, mountinfo);
        assert_eq!(places.v1_cpu, Ok(PathBuf::from("/mnt/cpu x/b")));
        // A cgroup outside the mounted subtree cannot be reached.
        let places = locate("3:cpu:/elsewhere\n", mountinfo);
        assert!(places.v1_cpu.is_err());
    }

    #[test]
    fn reads_keyed_counters_and_refuses_odd_names() {
        assert_eq!(
            keyed_value("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n", "oom_kill"),
            Some(2)
        );
        assert_eq!(keyed_value("low 0\nhigh 0\n", "oom_kill"), None);
        assert!(is_plain_name("weft-agent-node_1.x"));
        for bad in ["", ".", "..", "a/b", "a b", "a\0b"] {
            assert!(!is_plain_name(bad), "{bad:?}");
        }
        assert!(Cgroups::detect("../escape").is_err());
    }

    #[test]
    fn creates_limits_and_removes_a_container_cgroup_when_usable() {
        let name = format!("weft-test-cgroups-{}", std::process::id());
        let Ok(cgroups) = Cgroups::detect(&name) else {
            eprintln!("note: cgroups unusable here, skipping");
            return;
        };
        let mut cgroups = cgroups;
        cgroups.limit_all_containers(512).expect("the parent's cap");
        let parent_limit = || {
            let file = match cgroups.version() {
                CgroupVersion::V1 => "memory.limit_in_bytes",
                CgroupVersion::V2 => "memory.max",
            };
            fs::read_to_string(cgroups.memory_parent.join(file)).expect("the parent's limit")
        };
        assert_eq!(parent_limit().trim(), (512u64 << 20).to_string());
        let cgroup = cgroups.create("c1", 64, 2, 100).expect("create");
        let limit = match cgroups.version() {
            CgroupVersion::V1 => {
                fs::read_to_string(cgroup.memory_dir.join("memory.limit_in_bytes"))
            }
            CgroupVersion::V2 => fs::read_to_string(cgroup.memory_dir.join("memory.max")),
        };
        assert_eq!(limit.expect("limit").trim(), (64u64 << 20).to_string());
        if let Some(pids_dir) = &cgroup.pids_dir {
            let pids = fs::read_to_string(pids_dir.join("pids.max")).expect("pids.max");
            assert_eq!(pids.trim(), "100");
        }
        assert!(cgroup.pids().is_empty());
        assert!(!cgroup.memory_killed(false));
        // What it holds is killed (pinned by pidfd, then signalled).
        let mut sleeper = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .expect("sleep");
        for dir in cgroup.dirs() {
            fs::write(dir.join("cgroup.procs"), sleeper.id().to_string()).expect("join");
        }
        assert_eq!(cgroup.pids(), vec![sleeper.id()]);
        assert!(cgroup.kill_all() >= 1);
        let status = sleeper.wait().expect("wait");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
        assert_eq!(cgroups.existing("c1"), Some(cgroup.clone()));
        cgroup.remove().expect("remove");
        assert_eq!(cgroups.existing("c1"), None);
        cgroups.remove_parents_if_empty();
        if cgroups.version() == CgroupVersion::V1 {
            // The parents went: the next container's are made again.
            assert!(!cgroups.memory_parent.exists());
            let again = cgroups.create("c2", 64, 1, 0).expect("create again");
            assert!(again.memory_dir.is_dir());
            assert_eq!(
                parent_limit().trim(),
                (512u64 << 20).to_string(),
                "capped again"
            );
            again.remove().expect("remove");
            cgroups.remove_parents_if_empty();
        }
    }
}
