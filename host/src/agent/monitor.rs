//! Starts a container's process under a monitor: a forked copy of the
//! agent that enters the container's session, cgroups and user, starts the
//! command, waits for it and records its exit status in a file the agent
//! created (root's, in the agent's own state dir, written through a
//! descriptor the monitor keeps — the container cannot reach, replace or
//! backdate it), so an agent that was down when the container ended still
//! learns the status and when. This is YARN's launch script without a shell:
//! a launch costs one fork and one `posix_spawn` instead of a shell, a
//! subshell and an `mv`, and the agent never waits for an exec.
//!
//! Everything the monitor and the command need is prepared before the
//! fork ([`Prepared`]): after it, in a copy of a multi-threaded process,
//! only async-signal-safe calls on that data are made — no allocation, no
//! locks, no Rust I/O — until the monitor's `_exit`. (glibc's
//! `posix_spawn` neither allocates nor locks: it clones onto a stack it
//! maps itself.)

#![allow(
    unsafe_code,
    reason = "fork, the async-signal-safe calls after it and execve need libc; see the module docs"
)]

use std::collections::BTreeMap;
use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nix::unistd::{Gid, Uid};

use super::spawner::HelperError;

/// What a container's process is started with.
pub struct Launch<'a> {
    /// The command; a program name without '/' is looked up in the
    /// container's PATH, as `execvp` does.
    pub argv: &'a [String],
    /// The container's whole environment.
    pub env: BTreeMap<OsString, OsString>,
    /// Its working directory.
    pub work_dir: &'a Path,
    /// Its stdout log file, which the command's output is appended to.
    pub stdout: File,
    /// Its stderr log file, which the command's errors are appended to.
    pub stderr: File,
    /// Its cgroups' `cgroup.procs`, opened by the agent; the monitor joins
    /// them before starting the command (and before leaving root).
    pub join_files: Vec<OwnedFd>,
    /// Who it runs as, when not the agent's user.
    pub switch_to: Option<(Uid, Gid, Vec<Gid>)>,
    /// The exit-code file, opened for writing by the agent (empty until the
    /// monitor writes the code and a newline into it).
    pub exit_file: File,
    /// A private /dev/shm and /tmp, or none (shared with the host).
    pub private_mounts: Option<PrivateMounts>,
    /// Whether the command runs under [`super::syscall_filter`] (with
    /// `no_new_privs`): only where the executor found at start that the
    /// kernel takes it, since a launch whose filter is refused fails.
    pub syscall_filter: bool,
}

/// A container's own /dev/shm and /tmp: a mount namespace of its own
/// with a tmpfs on each, sized to its memory limit, and an IPC namespace
/// of its own (System V shared memory, message queues), all gone with its
/// last process (so nothing it leaves there outlives it). The agent's dirs
/// beneath either mount point (a work dir in /tmp, say) are bound back in
/// place.
#[derive(Debug)]
pub struct PrivateMounts {
    /// Each tmpfs's size, in MiB.
    pub size_mb: u64,
    /// Directories beneath /tmp or /dev/shm to keep where they are, each
    /// opened (`O_PATH`) before the tmpfs hides it.
    pub keep: Vec<(OwnedFd, PathBuf)>,
    /// A network namespace of its own too, with only a loopback (up), and
    /// a tmpfs of its own on /run and /var/tmp: it reaches no service of
    /// the node (on a port, or a socket there) and no other container
    /// (`weft.agent.container-network = none`).
    pub own_network: bool,
}

/// The descriptor the monitor keeps its exit-code file on once it has
/// closed every other (beyond stdio).
const EXIT_FD: libc::c_int = 3;

/// The descriptor the monitor that starts the command keeps its set-up
/// report pipe on until the command has started.
const READY_FD: libc::c_int = 4;

/// The mount points a container gets a tmpfs of its own on.
pub const PRIVATE_MOUNT_POINTS: [&str; 2] = ["/dev/shm", "/tmp"];

/// And, with no network of its own, where Unix sockets at file-system
/// paths live (the system's services', other users') and where containers
/// could meet through one: /run (which /var/run names on current systems)
/// and /var/tmp. A network namespace does not cover them.
const NO_NETWORK_MOUNT_POINTS: [&str; 3] = ["/run", "/var/run", "/var/tmp"];

/// The mount points a container gets a tmpfs of its own on: with no
/// network, also those of [`NO_NETWORK_MOUNT_POINTS`] that are
/// directories (a link such as /var/run → /run is covered by its target).
pub fn private_mount_points(own_network: bool) -> Vec<&'static str> {
    let mut points = PRIVATE_MOUNT_POINTS.to_vec();
    if own_network {
        points.extend(NO_NETWORK_MOUNT_POINTS.iter().filter(|point| {
            std::fs::symlink_metadata(point).is_ok_and(|metadata| metadata.is_dir())
        }));
    }
    points
}

/// The PATH a container gets when neither the agent nor the order has one.
pub const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Forks the monitor, which starts the command; returns the monitor's pid,
/// which is also the container's session and process group id, at once:
/// the monitor's set-up (its session, cgroups, namespaces, user and
/// working dir) goes on beside the agent, which learns how it went from
/// [`SettingUp::check`]. How the command fares is learnt from the monitor's
/// exit and the exit-code file.
pub fn spawn(
    launch: Launch<'_>,
    helper: Option<&mut super::spawner::Spawner>,
) -> io::Result<(u32, SettingUp)> {
    let (ready_read, ready_write) = ready_pipe()?;
    let from_helper = helper.map(|helper| helper.spawn(&launch, &ready_write));
    let pid = match from_helper {
        // This process's copies of the files close here.
        Some(Ok(pid)) => pid,
        Some(Err(lost @ (HelperError::Refused(_) | HelperError::Lost(_)))) => {
            return Err(io::Error::other(lost.to_string()));
        }
        // The executor drops a helper that is gone, and says so.
        Some(Err(HelperError::Unsent(_))) | None => {
            fork_monitor(launch, ready_write, Parent::This)?
        }
    };
    Ok((
        pid,
        SettingUp {
            pipe: File::from(ready_read),
            report: Vec::new(),
        },
    ))
}

/// Whose child a forked monitor is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Parent {
    /// This process's: it reaps the monitor.
    This,
    /// This process's parent's (`CLONE_PARENT`): the agent that asked the
    /// spawner helper for it reaps it.
    OurParent,
}

/// Forks the monitor of `launch`, which reports its set-up on `ready`;
/// returns its pid.
pub(super) fn fork_monitor(launch: Launch<'_>, ready: OwnedFd, parent: Parent) -> io::Result<u32> {
    let prepared = Prepared::new(launch)?;
    let pid = match parent {
        // SAFETY: the child runs only `monitor`, which makes
        // async-signal-safe system calls on memory prepared above and
        // never returns.
        Parent::This => unsafe { libc::fork() },
        // SAFETY: clone without CLONE_VM and without a stack is a fork,
        // made a child of our parent; only the single-threaded spawner
        // helper does this, whose child then runs only `monitor`, as
        // above (it never uses glibc's thread state, which still names
        // the helper's thread).
        Parent::OurParent => unsafe {
            let flags = (libc::CLONE_PARENT | libc::SIGCHLD) as libc::c_ulong;
            libc::syscall(libc::SYS_clone, flags, 0, 0, 0, 0) as libc::pid_t
        },
    };
    let pid = match pid {
        -1 => return Err(io::Error::last_os_error()),
        // SAFETY: see above.
        0 => unsafe { prepared.monitor(ready.as_raw_fd()) },
        pid => pid,
    };
    // Closes this process's copies of the log and cgroup files, and of the
    // pipe's write end, so reading it ends when the monitor closes its.
    drop(prepared);
    drop(ready);
    u32::try_from(pid).map_err(|_| io::Error::other("fork returned a negative pid"))
}

/// A monitor's set-up as the agent sees it: its report pipe, read without
/// waiting.
#[derive(Debug)]
pub struct SettingUp {
    pipe: File,
    /// What the monitor wrote: nothing if its set-up went well, else its
    /// errno and what failed.
    report: Vec<u8>,
}

/// How a monitor's set-up went, so far.
#[derive(Debug, PartialEq, Eq)]
pub enum SetUp {
    /// It is still setting up.
    Pending,
    /// Done: the command has been started (or could not be, which its
    /// exit code says).
    Done,
    /// It failed, and why; the monitor exits with 126.
    Failed(String),
}

/// The most of a monitor's report kept (an errno and a fixed message).
const MAX_REPORT_BYTES: usize = 512;

impl SettingUp {
    /// Reads what the monitor has written so far, without waiting.
    pub fn check(&mut self) -> SetUp {
        let mut buffer = [0u8; 256];
        loop {
            match self.pipe.read(&mut buffer) {
                Ok(0) if self.report.len() >= 4 => {
                    let errno = i32::from_ne_bytes([
                        self.report[0],
                        self.report[1],
                        self.report[2],
                        self.report[3],
                    ]);
                    let what = String::from_utf8_lossy(&self.report[4..]);
                    return SetUp::Failed(format!(
                        "the container's monitor {what}: {}",
                        io::Error::from_raw_os_error(errno)
                    ));
                }
                Ok(0) => return SetUp::Done,
                Ok(read) => {
                    let room = MAX_REPORT_BYTES.saturating_sub(self.report.len());
                    self.report.extend_from_slice(&buffer[..read.min(room)]);
                }
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => return SetUp::Pending,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => {
                    return SetUp::Failed(format!("cannot read its monitor's report: {error}"));
                }
            }
        }
    }
}

/// A close-on-exec pipe: the monitor reports a failed set-up on it, or
/// closes it when set up. The agent's end does not block.
fn ready_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the two descriptors, which we then own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == -1 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both were just opened and nothing else owns them.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: fcntl on a descriptor we own.
    if unsafe { libc::fcntl(read.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok((read, write))
}

/// A launch turned into C strings and raw arrays before the fork.
struct Prepared {
    /// Paths to try, in order (one if argv[0] has a '/').
    candidates: Vec<CString>,
    /// Kept alive for the pointer arrays below.
    _argv: Vec<CString>,
    _env: Vec<CString>,
    argv_ptrs: Vec<*const libc::c_char>,
    env_ptrs: Vec<*const libc::c_char>,
    work_dir: CString,
    exit_file: File,
    /// "weft: PROGRAM: " for the command's own error messages.
    error_prefix: Vec<u8>,
    stdin: File,
    stdout: File,
    stderr: File,
    join_files: Vec<OwnedFd>,
    switch_to: Option<(libc::uid_t, libc::gid_t, Vec<libc::gid_t>)>,
    mounts: Option<PreparedMounts>,
    syscall_filter: Option<&'static [libc::sock_filter]>,
}

/// [`PrivateMounts`] as C strings.
struct PreparedMounts {
    /// "size=…m,mode=1777".
    options: CString,
    points: Vec<CString>,
    keep: Vec<KeptDir>,
    own_network: bool,
}

struct KeptDir {
    /// A descriptor the agent opened, inherited by the monitor: its number
    /// is where the monitor puts the dir as its namespace sees it (a bind
    /// takes its source from the caller's own namespace).
    reserved: OwnedFd,
    /// "/proc/self/fd/N" of `reserved`, the bind's source.
    source: CString,
    /// The dir and each of its ancestors below the mount point, outermost
    /// first: made in the tmpfs, the last one the bind's target.
    path_and_ancestors: Vec<CString>,
}

impl PreparedMounts {
    fn new(mounts: PrivateMounts) -> io::Result<PreparedMounts> {
        let c_string = |path: &Path| {
            CString::new(path.as_os_str().as_bytes())
                .map_err(|_| io::Error::other("a mount path contains a NUL byte"))
        };
        let mount_points = private_mount_points(mounts.own_network);
        let mut keep = Vec::new();
        for (fd, dir) in mounts.keep {
            let Some(point) = mount_points
                .iter()
                .map(Path::new)
                .find(|point| dir.starts_with(point) && dir != *point)
            else {
                continue;
            };
            let mut chain: Vec<&Path> = dir
                .ancestors()
                .take_while(|ancestor| *ancestor != point)
                .collect();
            chain.reverse();
            keep.push(KeptDir {
                source: CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd()))
                    .map_err(|_| io::Error::other("a descriptor path"))?,
                reserved: fd,
                path_and_ancestors: chain.into_iter().map(c_string).collect::<io::Result<_>>()?,
            });
        }
        Ok(PreparedMounts {
            options: CString::new(format!("size={}m,mode=1777", mounts.size_mb.max(1)))
                .map_err(|_| io::Error::other("tmpfs options"))?,
            points: mount_points
                .iter()
                .map(|point| c_string(Path::new(point)))
                .collect::<io::Result<_>>()?,
            keep,
            own_network: mounts.own_network,
        })
    }

    /// In the monitor, as root: a mount namespace of its own, nothing in it
    /// propagated to the host's, a tmpfs on each mount point, and the kept
    /// dirs bound back.
    unsafe fn enter(&self) -> Result<(), &'static [u8]> {
        unsafe {
            // An IPC namespace too (System V shared memory and message
            // queues would outlive it in the host's), and a pid namespace
            // for its processes (the monitor's next child is its first):
            // none of the host's processes, or their /proc/PID/root, in
            // its sight.
            let network = if self.own_network {
                libc::CLONE_NEWNET
            } else {
                0
            };
            if libc::unshare(libc::CLONE_NEWNS | libc::CLONE_NEWIPC | libc::CLONE_NEWPID | network)
                == -1
            {
                return Err(b"cannot enter namespaces of its own");
            }
            if self.own_network {
                loopback_up()?;
            }
            let none = std::ptr::null::<libc::c_char>();
            if libc::mount(
                none,
                c"/".as_ptr(),
                none,
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) == -1
            {
                return Err(b"cannot make its mounts private");
            }
            // Opened in the new namespace, before the tmpfs hides them.
            for kept in &self.keep {
                let Some(dir) = kept.path_and_ancestors.last() else {
                    continue;
                };
                let fd = libc::open(dir.as_ptr(), libc::O_PATH | libc::O_DIRECTORY);
                if fd == -1 || libc::dup2(fd, kept.reserved.as_raw_fd()) == -1 {
                    return Err(b"cannot keep the agent's dirs beneath /tmp");
                }
                libc::close(fd);
            }
            for point in &self.points {
                if libc::mount(
                    c"tmpfs".as_ptr(),
                    point.as_ptr(),
                    c"tmpfs".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV,
                    self.options.as_ptr().cast(),
                ) == -1
                {
                    return Err(b"cannot mount its private /dev/shm and /tmp");
                }
            }
            for kept in &self.keep {
                for dir in &kept.path_and_ancestors {
                    if libc::mkdir(dir.as_ptr(), 0o755) == -1
                        && *libc::__errno_location() != libc::EEXIST
                    {
                        return Err(b"cannot keep the agent's dirs beneath /tmp");
                    }
                }
                let Some(target) = kept.path_and_ancestors.last() else {
                    continue;
                };
                if libc::mount(
                    kept.source.as_ptr(),
                    target.as_ptr(),
                    none,
                    libc::MS_BIND | libc::MS_REC,
                    std::ptr::null(),
                ) == -1
                {
                    return Err(b"cannot keep the agent's dirs beneath /tmp");
                }
            }
            Ok(())
        }
    }
}

impl PreparedMounts {
    /// In the first process of the container's pid namespace: a /proc of
    /// that namespace, so the container sees its own processes only.
    unsafe fn mount_proc() -> Result<(), &'static [u8]> {
        unsafe {
            let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
            if libc::mount(
                c"proc".as_ptr(),
                c"/proc".as_ptr(),
                c"proc".as_ptr(),
                flags,
                std::ptr::null(),
            ) == -1
            {
                return Err(b"cannot mount its own /proc");
            }
            Ok(())
        }
    }
}

/// Brings up the loopback of a new network namespace (it starts down), so
/// a container's processes can still talk to each other on 127.0.0.1.
///
/// # Safety
/// Only system calls: safe after fork.
unsafe fn loopback_up() -> Result<(), &'static [u8]> {
    unsafe {
        let socket = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if socket == -1 {
            return Err(b"cannot bring up its loopback");
        }
        let mut request: libc::ifreq = std::mem::zeroed();
        for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo") {
            *slot = *byte as libc::c_char;
        }
        request.ifr_ifru.ifru_flags = (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        let up = libc::ioctl(socket, libc::SIOCSIFFLAGS, &raw const request);
        libc::close(socket);
        if up == -1 {
            return Err(b"cannot bring up its loopback");
        }
        Ok(())
    }
}

/// Whether this process can give containers private mounts: it forks a
/// child that makes the namespaces, a tmpfs and a /proc as a container's
/// monitor would, and says why not if it cannot.
pub fn probe_private_mounts(own_network: bool) -> Result<(), String> {
    for point in private_mount_points(own_network) {
        if !Path::new(point).is_dir() {
            return Err(format!("there is no {point} to mount over"));
        }
    }
    let prepared = PreparedMounts::new(PrivateMounts {
        size_mb: 1,
        keep: Vec::new(),
        own_network,
    })
    .map_err(|error| error.to_string())?;
    // SAFETY: the child makes system calls on memory prepared above and
    // ends with _exit.
    let pid = match unsafe { libc::fork() } {
        -1 => return Err(format!("cannot fork: {}", io::Error::last_os_error())),
        0 => unsafe {
            let errno = || (*libc::__errno_location()).clamp(1, 255);
            if prepared.enter().is_err() {
                libc::_exit(errno());
            }
            // The namespace's first process mounts its /proc.
            let first = libc::fork();
            if first == 0 {
                let code = match PreparedMounts::mount_proc() {
                    Ok(()) => 0,
                    Err(_) => errno(),
                };
                libc::_exit(code);
            }
            let mut status = 0;
            if first == -1 || libc::waitpid(first, &mut status, 0) != first {
                libc::_exit(errno());
            }
            libc::_exit(if libc::WIFEXITED(status) {
                libc::WEXITSTATUS(status)
            } else {
                255
            })
        },
        pid => pid,
    };
    let mut status = 0;
    // SAFETY: waitpid on our own child, with a valid pointer.
    while unsafe { libc::waitpid(pid, &mut status, 0) } == -1 {
        if io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return Err("lost the probe's child".into());
        }
    }
    match libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)) {
        Some(0) => Ok(()),
        Some(errno) => Err(format!(
            "mount namespaces are not available: {}",
            io::Error::from_raw_os_error(errno)
        )),
        None => Err("the mount namespace probe was killed".into()),
    }
}

impl Prepared {
    fn new(launch: Launch<'_>) -> io::Result<Prepared> {
        // Read now: after the fork only system calls are made.
        argv_area();
        let c_string = |what: &str, bytes: &[u8]| {
            CString::new(bytes)
                .map_err(|_| io::Error::other(format!("the {what} contains a NUL byte")))
        };
        let program = launch
            .argv
            .first()
            .ok_or_else(|| io::Error::other("the command is empty"))?;
        let argv = launch
            .argv
            .iter()
            .map(|arg| c_string("command", arg.as_bytes()))
            .collect::<io::Result<Vec<_>>>()?;
        let env = launch
            .env
            .iter()
            .map(|(key, value)| {
                let pair = [key.as_bytes(), b"=", value.as_bytes()].concat();
                c_string("environment", &pair)
            })
            .collect::<io::Result<Vec<_>>>()?;
        let path = launch
            .env
            .get(OsStr::new("PATH"))
            .map_or(OsStr::new(DEFAULT_PATH), OsString::as_os_str);
        let candidates = program_candidates(program, path)
            .iter()
            .map(|candidate| c_string("command", candidate.as_os_str().as_bytes()))
            .collect::<io::Result<Vec<_>>>()?;
        let argv_ptrs = null_terminated(&argv);
        let env_ptrs = null_terminated(&env);
        Ok(Prepared {
            candidates,
            argv_ptrs,
            env_ptrs,
            _argv: argv,
            _env: env,
            work_dir: c_string("working dir", launch.work_dir.as_os_str().as_bytes())?,
            exit_file: launch.exit_file,
            error_prefix: format!("weft: {program}: ").into_bytes(),
            stdin: File::open("/dev/null")?,
            stdout: launch.stdout,
            stderr: launch.stderr,
            join_files: launch.join_files,
            switch_to: launch.switch_to.map(|(uid, gid, groups)| {
                let groups = groups.iter().map(|group| group.as_raw()).collect();
                (uid.as_raw(), gid.as_raw(), groups)
            }),
            mounts: launch.private_mounts.map(PreparedMounts::new).transpose()?,
            syscall_filter: match launch.syscall_filter {
                true => Some(super::syscall_filter::program().ok_or_else(|| {
                    io::Error::other("no system call filter is written for this architecture")
                })?),
                false => None,
            },
        })
    }

    /// The monitor, in the forked child: sets up, tells the agent (by
    /// closing `ready`), starts the command, waits for it, records its
    /// exit code and exits with it.
    ///
    /// # Safety
    /// Only in the child of `fork`: it takes over the process and ends it.
    unsafe fn monitor(&self, ready: libc::c_int) -> ! {
        unsafe {
            // Named, so `ps` and `top` tell it from the agent it copies.
            libc::prctl(libc::PR_SET_NAME, c"weft-monitor".as_ptr(), 0, 0, 0);
            // And the server's command line (its settings, perhaps a
            // database URL with a password) is not what /proc/PID/cmdline
            // shows of it: anyone can read that, a container included.
            if let Some((start, end)) = argv_area() {
                let area = std::slice::from_raw_parts_mut(start as *mut u8, end - start);
                area.fill(0);
                let name = b"weft-monitor";
                let shown = name.len().min(area.len().saturating_sub(1));
                area[..shown].copy_from_slice(&name[..shown]);
            }
            match self.set_up() {
                Err(what) => {
                    let errno = *libc::__errno_location();
                    write_all(ready, &errno.to_ne_bytes());
                    write_all(ready, what);
                    libc::_exit(126);
                }
                // The container's namespace's first process runs it.
                Ok(Role::Outside { first }) => self.wait_for_namespace(first),
                Ok(Role::Runner) => {}
            }
            // In a namespace the monitor outside records the exit code
            // (this process is the container's to reach); else this one.
            let records = self.mounts.is_none();
            self.keep_only(records, ready);
            let started = self.start_command();
            // Only now does `ready` close: a kill the agent sends once it
            // sees that finds the command in the group.
            libc::close(READY_FD);
            let command = match started {
                Ok(command) => command,
                Err(code) => {
                    if records {
                        self.record_exit_code(code);
                    }
                    libc::_exit(code);
                }
            };
            // In a pid namespace of its own it is the namespace's first
            // process: every orphan there is its to reap, until the command
            // ends (and, with it, everything left in the namespace).
            let wanted = if self.mounts.is_some() { -1 } else { command };
            let mut status = 0;
            loop {
                let reaped = libc::waitpid(wanted, &mut status, 0);
                if reaped == command {
                    break;
                }
                if reaped == -1 && *libc::__errno_location() != libc::EINTR {
                    fail(b"lost its command");
                }
            }
            let code = shell_status(status);
            if records {
                self.record_exit_code(code);
            }
            libc::_exit(code);
        }
    }

    /// Outside the container's pid namespace: waits for its first process
    /// (which runs the command) as the container's user, records the exit
    /// code and exits with it.
    ///
    /// It, not the first process, records the exit code: the first
    /// process is the container's user's inside the namespace (the
    /// container could `prlimit` it so its write fails); this one is out of
    /// the container's sight. It ignores SIGTERM, so a kill's TERM to the
    /// group leaves it to record how the command ended.
    unsafe fn wait_for_namespace(&self, first: libc::pid_t) -> ! {
        unsafe {
            // Before `ready` closes: once it has, the agent may send a
            // kill's TERM to the group.
            default_signals();
            libc::signal(libc::SIGTERM, libc::SIG_IGN);
            self.keep_only_exit_file();
            libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
            if let Some((uid, gid, groups)) = &self.switch_to
                && (libc::setgroups(groups.len(), groups.as_ptr()) == -1
                    || libc::setgid(*gid) == -1
                    || libc::setuid(*uid) == -1)
            {
                fail(b"cannot switch to its user");
            }
            let mut status = 0;
            while libc::waitpid(first, &mut status, 0) == -1 {
                if *libc::__errno_location() != libc::EINTR {
                    fail(b"lost its namespace's first process");
                }
            }
            // The first process ends as its command did (or was killed).
            let code = shell_status(status);
            self.record_exit_code(code);
            libc::_exit(code)
        }
    }

    /// Closes every descriptor but stdio, the exit-code file (kept as
    /// [`EXIT_FD`] if `exit_file`) and `ready` (kept as [`READY_FD`]), none
    /// of them inherited by the command.
    unsafe fn keep_only(&self, exit_file: bool, ready: libc::c_int) {
        unsafe {
            // Above both numbers first, so neither dup2 below closes it.
            let moved = libc::fcntl(ready, libc::F_DUPFD_CLOEXEC, READY_FD + 1);
            if moved == -1 {
                fail(b"cannot keep its report pipe");
            }
            if exit_file
                && (libc::dup2(self.exit_file.as_raw_fd(), EXIT_FD) == -1
                    || libc::fcntl(EXIT_FD, libc::F_SETFD, libc::FD_CLOEXEC) == -1)
            {
                fail(b"cannot keep its exit-code file");
            }
            if libc::dup2(moved, READY_FD) == -1
                || libc::fcntl(READY_FD, libc::F_SETFD, libc::FD_CLOEXEC) == -1
            {
                fail(b"cannot keep its report pipe");
            }
            close_from(READY_FD as libc::c_uint + 1);
            if !exit_file {
                libc::close(EXIT_FD);
            }
        }
    }

    /// Closes every descriptor but stdio and the exit-code file, which it
    /// keeps as [`EXIT_FD`] (not inherited by the command): none of the
    /// agent's files (its sockets, its database) may be held by a process
    /// that outlives it. This also closes `ready`.
    unsafe fn keep_only_exit_file(&self) {
        unsafe {
            if libc::dup2(self.exit_file.as_raw_fd(), EXIT_FD) == -1
                || libc::fcntl(EXIT_FD, libc::F_SETFD, libc::FD_CLOEXEC) == -1
            {
                fail(b"cannot keep its exit-code file");
            }
            close_from(EXIT_FD as libc::c_uint + 1);
        }
    }

    /// The container's stdio, session, cgroups, namespaces, user and
    /// working dir, and default signal handling; `Err` says which failed
    /// (errno is set). With namespaces, it forks their first process,
    /// which goes on as the runner; this process stays outside.
    unsafe fn set_up(&self) -> Result<Role, &'static [u8]> {
        unsafe {
            for (file, target) in [(&self.stdin, 0), (&self.stdout, 1), (&self.stderr, 2)] {
                if libc::dup2(file.as_raw_fd(), target) == -1 {
                    return Err(b"cannot set up its stdio");
                }
            }
            // A session and process group of its own (pid = pgid = sid), so
            // the whole container can be signalled as one.
            if libc::setsid() == -1 {
                return Err(b"cannot start a session");
            }
            // Before leaving root, while the write is still allowed.
            for file in &self.join_files {
                if libc::write(file.as_raw_fd(), b"0".as_ptr().cast(), 1) != 1 {
                    return Err(b"cannot join its cgroup");
                }
            }
            // After the cgroup: the tmpfs pages are charged to it.
            if let Some(mounts) = &self.mounts {
                mounts.enter()?;
                match libc::fork() {
                    -1 => return Err(b"cannot start its namespace's first process"),
                    0 => PreparedMounts::mount_proc()?,
                    first => return Ok(Role::Outside { first }),
                }
            }
            // The monitor holds a copy of the agent's memory (the server's,
            // for the local agent): no process of the container's user may
            // read it through ptrace or /proc/PID/mem. (Switching users
            // clears this too; running as the agent's user does not.)
            libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
            if let Some((uid, gid, groups)) = &self.switch_to
                && (libc::setgroups(groups.len(), groups.as_ptr()) == -1
                    || libc::setgid(*gid) == -1
                    || libc::setuid(*uid) == -1)
            {
                return Err(b"cannot switch to its user");
            }
            // A container of another user gains no privilege by exec: no
            // setuid or file-capability binary raises it (Docker's
            // no-new-privileges), so a flaw in one is no way to root.
            if self.switch_to.is_some() && libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1
            {
                return Err(b"cannot set no_new_privs");
            }
            // Last, as it refuses calls set-up makes (unshare, mount).
            if let Some(program) = self.syscall_filter
                && super::syscall_filter::install(program) == -1
            {
                return Err(b"cannot install its system call filter");
            }
            if libc::chdir(self.work_dir.as_ptr()) == -1 {
                return Err(b"cannot enter its working dir");
            }
            default_signals();
            Ok(Role::Runner)
        }
    }

    /// `posix_spawn` of each candidate in turn, as `execvp` tries them. It
    /// shares the monitor's memory with the child until the exec (vfork),
    /// so the agent's address space is not copied a second time. `Err` is
    /// the status of a command that cannot start, as a shell gives it (127
    /// not found, 126 found but not runnable), said why on stderr.
    unsafe fn start_command(&self) -> Result<libc::pid_t, i32> {
        unsafe {
            let mut found_but_failed = 0;
            for candidate in &self.candidates {
                let mut pid = 0;
                let error = libc::posix_spawn(
                    &mut pid,
                    candidate.as_ptr(),
                    std::ptr::null(),
                    std::ptr::null(),
                    self.argv_ptrs.as_ptr().cast(),
                    self.env_ptrs.as_ptr().cast(),
                );
                if error == 0 {
                    return Ok(pid);
                }
                if error != libc::ENOENT && error != libc::ENOTDIR {
                    found_but_failed = error;
                }
            }
            write_all(2, &self.error_prefix);
            match found_but_failed {
                0 => {
                    write_all(2, b"not found\n");
                    return Err(127);
                }
                libc::EACCES => write_all(2, b"permission denied\n"),
                libc::ENOEXEC => write_all(2, b"not an executable (no #! line?)\n"),
                // Linux's bounds, not Weft's: one argument or variable of
                // at most 128 KiB, all of them a quarter of the stack limit.
                libc::E2BIG => write_all(
                    2,
                    b"its arguments and environment are more than the kernel takes (E2BIG: at most 128 KiB a string, a quarter of the stack limit in all)\n",
                ),
                libc::ETXTBSY => write_all(2, b"the program is open for writing (ETXTBSY)\n"),
                errno => {
                    write_all(2, b"cannot execute, errno ");
                    write_number(2, errno);
                    write_all(2, b"\n");
                }
            }
            Err(126)
        }
    }

    /// The code and a newline in one write at the start of the exit-code
    /// file (kept as [`EXIT_FD`]): a reader takes it only once the newline
    /// is there.
    unsafe fn record_exit_code(&self, code: i32) {
        unsafe {
            let mut text = [0u8; 16];
            let length = format_number(&mut text, code);
            text[length] = b'\n';
            libc::pwrite(EXIT_FD, text.as_ptr().cast(), length + 1, 0);
        }
    }
}

/// Where this process's command line is in its memory (`/proc/self/stat`
/// fields 48 and 49), read once before any fork: a forked monitor blanks
/// it. None if it cannot be read or looks wrong.
fn argv_area() -> Option<(usize, usize)> {
    static AREA: std::sync::OnceLock<Option<(usize, usize)>> = std::sync::OnceLock::new();
    *AREA.get_or_init(|| {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
        // After the name come fields 3 onwards: 48 is the 46th of them.
        let start: usize = fields.nth(45)?.parse().ok()?;
        let end: usize = fields.next()?.parse().ok()?;
        (start > 0 && end > start && end - start <= 1 << 20).then_some((start, end))
    })
}

/// A wait status as a shell reports it: the exit code, or 128 + the
/// signal that ended the process.
fn shell_status(status: libc::c_int) -> libc::c_int {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        255
    }
}

/// What a monitor process goes on as once set up.
enum Role {
    /// It starts the command, waits for it and records its exit code.
    Runner,
    /// It stays outside the container's pid namespace, waiting for
    /// `first`, the namespace's first process, which is the runner.
    Outside { first: libc::pid_t },
}

/// The agent's signal handlers and mask are not the container's.
unsafe fn default_signals() {
    unsafe {
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
        for signal in 1..=64 {
            if signal != libc::SIGKILL && signal != libc::SIGSTOP {
                libc::signal(signal, libc::SIG_DFL);
            }
        }
    }
}

/// The paths `execvp` would try for `program` with this PATH.
fn program_candidates(program: &str, path: &OsStr) -> Vec<PathBuf> {
    if program.contains('/') {
        return vec![PathBuf::from(program)];
    }
    let mut seen = std::collections::BTreeSet::new();
    path.as_bytes()
        .split(|byte| *byte == b':')
        // An empty entry is the working dir, as for execvp.
        .map(|dir| if dir.is_empty() { b".".as_slice() } else { dir })
        // Each dir once: a PATH of 60,000 colons is tried once, not 60,000 times.
        .filter(|dir| seen.insert(*dir))
        .map(|dir| Path::new(OsStr::from_bytes(dir)).join(program))
        .collect()
}

fn null_terminated(strings: &[CString]) -> Vec<*const libc::c_char> {
    strings
        .iter()
        .map(|string| string.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

/// Says why the monitor cannot go on (on the container's stderr) and ends
/// it with 126, which the agent reports with that stderr. Only after
/// set-up, once the agent has been told it is running.
unsafe fn fail(what: &[u8]) -> ! {
    unsafe {
        let errno = *libc::__errno_location();
        write_all(2, b"weft: the container's monitor ");
        write_all(2, what);
        write_all(2, b", errno ");
        write_number(2, errno);
        write_all(2, b"\n");
        libc::_exit(126)
    }
}

/// Closes every descriptor from `first` up.
unsafe fn close_from(first: libc::c_uint) {
    unsafe {
        if libc::syscall(libc::SYS_close_range, first, libc::c_uint::MAX, 0) == 0 {
            return;
        }
        // Kernels before 5.9.
        let mut limit: libc::rlimit = std::mem::zeroed();
        let highest = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur.min(1 << 20) as libc::c_int
        } else {
            4096
        };
        for fd in first as libc::c_int..highest {
            libc::close(fd);
        }
    }
}

unsafe fn write_all(fd: libc::c_int, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        let written = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if written <= 0 {
            if written == -1 && unsafe { *libc::__errno_location() } == libc::EINTR {
                continue;
            }
            return;
        }
        bytes = &bytes[written as usize..];
    }
}

/// Writes a number in decimal without allocating.
unsafe fn write_number(fd: libc::c_int, number: i32) {
    let mut digits = [0u8; 16];
    let length = format_number(&mut digits, number);
    unsafe { write_all(fd, &digits[..length]) }
}

/// `number` in decimal at the start of `out` (16 bytes hold any i32);
/// how many bytes. No allocation.
fn format_number(out: &mut [u8; 16], number: i32) -> usize {
    let mut digits = [0u8; 12];
    let mut at = digits.len();
    let negative = number < 0;
    let mut rest = number.unsigned_abs();
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if negative {
        at -= 1;
        digits[at] = b'-';
    }
    let length = digits.len() - at;
    out[..length].copy_from_slice(&digits[at..]);
    length
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_follow_path_as_execvp_does() {
        assert_eq!(
            program_candidates("./run.sh", OsStr::new("/usr/bin")),
            vec![PathBuf::from("./run.sh")]
        );
        assert_eq!(
            program_candidates("true", OsStr::new("/usr/bin::/bin:/usr/bin:")),
            vec![
                PathBuf::from("/usr/bin/true"),
                PathBuf::from("./true"),
                PathBuf::from("/bin/true")
            ]
        );
    }

    fn launch<'a>(dir: &Path, argv: &'a [String], work_dir: &'a Path) -> Launch<'a> {
        Launch {
            argv,
            env: BTreeMap::from([("PATH".into(), "/usr/bin:/bin".into())]),
            work_dir,
            stdout: File::create(dir.join("out")).unwrap(),
            stderr: File::create(dir.join("err")).unwrap(),
            join_files: Vec::new(),
            switch_to: None,
            exit_file: File::create(dir.join("exitcode")).unwrap(),
            private_mounts: None,
            syscall_filter: false,
        }
    }

    /// Forks the monitor from this process; its pid.
    fn spawn_here(launch: Launch<'_>) -> io::Result<u32> {
        spawn(launch, None).map(|(pid, _)| pid)
    }

    fn wait(pid: u32) -> i32 {
        let mut status = 0;
        assert_eq!(
            unsafe { libc::waitpid(pid as i32, &mut status, 0) },
            pid as i32
        );
        assert!(libc::WIFEXITED(status));
        libc::WEXITSTATUS(status)
    }

    #[test]
    fn records_the_exit_code_in_its_own_session() {
        let dir = tempfile::tempdir().unwrap();
        // Field 6 of /proc/PID/stat is the session id.
        let argv = [
            "sh",
            "-c",
            "read -r _ _ _ _ _ sid _ < /proc/$$/stat; echo $sid; exit 7",
        ]
        .map(String::from);
        let pid = spawn_here(launch(dir.path(), &argv, dir.path())).unwrap();
        assert_eq!(wait(pid), 7);
        let code = std::fs::read_to_string(dir.path().join("exitcode")).unwrap();
        assert_eq!(code, "7\n");
        let session = std::fs::read_to_string(dir.path().join("out")).unwrap();
        assert_eq!(
            session.trim(),
            pid.to_string(),
            "the monitor leads the session"
        );
    }

    #[test]
    fn a_program_that_cannot_run_ends_126_or_127_saying_why() {
        let dir = tempfile::tempdir().unwrap();
        let missing = ["weft-no-such-program".to_owned()];
        assert_eq!(
            wait(spawn_here(launch(dir.path(), &missing, dir.path())).unwrap()),
            127
        );
        let stderr = std::fs::read_to_string(dir.path().join("err")).unwrap();
        assert_eq!(stderr, "weft: weft-no-such-program: not found\n");

        let dir = tempfile::tempdir().unwrap();
        let not_executable = dir.path().join("data.txt");
        std::fs::write(&not_executable, "hello").unwrap();
        let argv = [not_executable.to_str().unwrap().to_owned()];
        assert_eq!(
            wait(spawn_here(launch(dir.path(), &argv, dir.path())).unwrap()),
            126
        );
        let stderr = std::fs::read_to_string(dir.path().join("err")).unwrap();
        assert!(stderr.ends_with(": permission denied\n"), "{stderr}");

        // One argument over the kernel's 128 KiB a string.
        let dir = tempfile::tempdir().unwrap();
        let argv = ["/bin/echo".to_owned(), "x".repeat(200 << 10)];
        assert_eq!(
            wait(spawn_here(launch(dir.path(), &argv, dir.path())).unwrap()),
            126
        );
        let stderr = std::fs::read_to_string(dir.path().join("err")).unwrap();
        assert!(
            stderr.ends_with("more than the kernel takes (E2BIG: at most 128 KiB a string, a quarter of the stack limit in all)\n"),
            "{stderr}"
        );
    }

    #[test]
    fn a_failed_set_up_is_reported_once_the_monitor_has_ended() {
        let dir = tempfile::tempdir().unwrap();
        let gone = dir.path().join("gone");
        let argv = ["/bin/true".to_owned()];
        let (pid, mut setting_up) = spawn(launch(dir.path(), &argv, &gone), None).unwrap();
        assert_eq!(wait(pid), 126);
        let SetUp::Failed(error) = setting_up.check() else {
            panic!("the set-up did not fail");
        };
        assert!(
            error.starts_with("the container's monitor cannot enter its working dir: No such file"),
            "{error}"
        );
    }

    #[test]
    fn a_good_set_up_reports_done() {
        let dir = tempfile::tempdir().unwrap();
        let argv = ["/bin/true".to_owned()];
        let (pid, mut setting_up) = spawn(launch(dir.path(), &argv, dir.path()), None).unwrap();
        assert_eq!(wait(pid), 0);
        assert_eq!(setting_up.check(), SetUp::Done);
    }

    #[test]
    fn a_nul_byte_is_refused_before_any_fork() {
        let dir = tempfile::tempdir().unwrap();
        let argv = ["/bin/true".to_owned(), "a\0b".to_owned()];
        let error = spawn_here(launch(dir.path(), &argv, dir.path())).unwrap_err();
        assert!(error.to_string().contains("NUL"), "{error}");
    }
}
