//! Forks containers' monitors from a small helper process instead of from
//! the agent, so a launch does not copy the agent's memory. Forking copies
//! the page tables of everything the process has mapped and makes every
//! page copy-on-write; `weft serve`'s local agent lives in the server, with
//! its policies, caches and threads, and there one fork took about 0.85 ms
//! of the agent's time (and the container's namespace runner, a fork of
//! the monitor, as much again), plus a copy-on-write fault in the server
//! for each page it wrote next.
//!
//! The helper is this binary run again (`/proc/self/exe` with
//! [`HELPER_ARG`]), so it starts small and stays small: it only reads
//! requests. Each request is one launch — the command, environment, dirs,
//! user and mounts, with the open files a monitor needs passed as
//! descriptors (`SCM_RIGHTS`) — over a Unix socket pair that is its stdin;
//! nobody else can reach it. It forks the monitor with `CLONE_PARENT`, so
//! the monitor is the agent's own child, reaped and watched as if the agent
//! had forked it, and answers with its pid. It ends when the agent closes
//! the socket (or dies). If it cannot be started, or a launch cannot reach
//! it, the agent forks its monitors itself; if it takes a launch and does
//! not answer within 5 s, it is killed and that launch fails (it may have
//! forked the monitor: forking another could run the command twice).

#![allow(
    unsafe_code,
    reason = "the helper's socket is its stdin, and descriptors received over SCM_RIGHTS become owned here"
)]

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, IoSlice, IoSliceMut, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use nix::sys::socket::{ControlMessage, ControlMessageOwned, MsgFlags, recvmsg, sendmsg};
use nix::unistd::{Gid, Uid};
use serde::{Deserialize, Serialize};

use super::monitor::{self, Launch, Parent, PrivateMounts};

/// The first argument that makes `weft` the spawner helper.
pub const HELPER_ARG: &str = "__weft-monitor-spawner";

/// The most descriptors one request passes: the ready pipe, stdout,
/// stderr, the exit-code file, a cgroup join file per controller and a
/// kept dir per private mount point.
const MAX_FDS: usize = 16;

/// The largest request body (a launch's command and environment are
/// bounded well below this by the order's checks).
const MAX_REQUEST_BYTES: u64 = 16 << 20;

/// How long the agent waits on the helper before giving it up.
const ANSWER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// A launch as it crosses to the helper; the files follow as descriptors,
/// in the order [`Request::fds`] gives.
#[derive(Debug, Serialize, Deserialize)]
struct Request {
    argv: Vec<String>,
    /// Names and values, as bytes.
    env: Vec<(Vec<u8>, Vec<u8>)>,
    work_dir: Vec<u8>,
    /// uid, gid and supplementary groups.
    switch_to: Option<(u32, u32, Vec<u32>)>,
    /// The tmpfs size in MiB, the kept dirs' paths and whether the
    /// network is its own, if private.
    private_mounts: Option<(u64, Vec<Vec<u8>>, bool)>,
    /// Whether the command runs under the system call filter.
    syscall_filter: bool,
    /// How many cgroup join files follow the exit-code file.
    join_files: usize,
}

/// The helper's answer.
#[derive(Debug, Serialize, Deserialize)]
enum Answer {
    /// The monitor's pid.
    Forked(u32),
    /// Why it could not.
    Refused(String),
}

/// The agent's side: the helper process and the socket to it.
#[derive(Debug)]
pub struct Spawner {
    socket: UnixStream,
    helper: Child,
    /// The socket failed: the helper is gone or out of step.
    broken: bool,
}

impl Spawner {
    /// Starts the helper: this binary again, the socket as its stdin.
    pub fn start() -> io::Result<Spawner> {
        let (ours, theirs) = UnixStream::pair()?;
        // A helper that hangs (stopped, say) fails a launch, not the agent.
        ours.set_read_timeout(Some(ANSWER_TIMEOUT))?;
        ours.set_write_timeout(Some(ANSWER_TIMEOUT))?;
        let helper = Command::new("/proc/self/exe")
            .arg0("weft")
            .arg(HELPER_ARG)
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            .stdout(Stdio::null())
            .env_clear()
            .spawn()?;
        Ok(Spawner {
            socket: ours,
            helper,
            broken: false,
        })
    }

    /// Whether talking to the helper failed: it is to be dropped.
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// Asks the helper to fork the monitor of `launch`, reporting on
    /// `ready`; returns the monitor's pid (a child of this process). The
    /// helper gets copies of the files: `launch` is left as it was, to be
    /// forked here instead if the helper is gone.
    pub fn spawn(&mut self, launch: &Launch<'_>, ready: &OwnedFd) -> Result<u32, HelperError> {
        let mut fds: Vec<RawFd> = vec![
            ready.as_raw_fd(),
            launch.stdout.as_raw_fd(),
            launch.stderr.as_raw_fd(),
            launch.exit_file.as_raw_fd(),
        ];
        fds.extend(launch.join_files.iter().map(AsRawFd::as_raw_fd));
        let private_mounts = launch.private_mounts.as_ref().map(|mounts| {
            let mut paths = Vec::new();
            for (fd, path) in &mounts.keep {
                fds.push(fd.as_raw_fd());
                paths.push(path.as_os_str().as_bytes().to_vec());
            }
            (mounts.size_mb, paths, mounts.own_network)
        });
        if fds.len() > MAX_FDS {
            return Err(HelperError::Refused(format!(
                "a launch passes {} descriptors, more than the {MAX_FDS} the spawner takes",
                fds.len()
            )));
        }
        let request = Request {
            argv: launch.argv.to_vec(),
            env: launch
                .env
                .iter()
                .map(|(key, value)| (key.as_bytes().to_vec(), value.as_bytes().to_vec()))
                .collect(),
            work_dir: launch.work_dir.as_os_str().as_bytes().to_vec(),
            switch_to: launch.switch_to.as_ref().map(|(uid, gid, groups)| {
                let groups = groups.iter().map(|group| group.as_raw()).collect();
                (uid.as_raw(), gid.as_raw(), groups)
            }),
            private_mounts,
            syscall_filter: launch.syscall_filter,
            join_files: launch.join_files.len(),
        };
        let body = serde_json::to_vec(&request).map_err(|e| HelperError::Refused(e.to_string()))?;
        if body.len() as u64 > MAX_REQUEST_BYTES {
            // Too big to send (an environment of many megabytes): this
            // one is forked here.
            return Err(HelperError::Unsent(io::Error::other(format!(
                "a launch of {} bytes, more than the {MAX_REQUEST_BYTES} the spawner takes",
                body.len()
            ))));
        }
        if let Err(error) = send(&self.socket, &body, &fds) {
            // The helper forks only once it has the whole request.
            self.broken = true;
            return Err(HelperError::Unsent(error));
        }
        let answer = receive(&self.socket, 0)
            .and_then(|(answer, _)| serde_json::from_slice(&answer).map_err(io::Error::other));
        match answer {
            Ok(Answer::Forked(pid)) => Ok(pid),
            Ok(Answer::Refused(why)) => Err(HelperError::Refused(why)),
            Err(error) => {
                // It may have forked the monitor: forking another here could
                // run the command twice. The helper goes, and this launch
                // fails.
                self.broken = true;
                let _ = self.helper.kill();
                Err(HelperError::Lost(error))
            }
        }
    }
}

/// Why the helper forked no monitor.
#[derive(Debug, thiserror::Error)]
pub enum HelperError {
    /// The launch cannot be started (forking here would fail the same way).
    #[error("{0}")]
    Refused(String),
    /// The request did not reach the helper: fork here.
    #[error("the monitor spawner did not take the launch: {0}")]
    Unsent(io::Error),
    /// The request went, the answer did not come: whether the helper forked
    /// is unknown, so the launch fails (and the helper is killed).
    #[error("the monitor spawner stopped answering after taking the launch: {0}")]
    Lost(io::Error),
}

impl Drop for Spawner {
    fn drop(&mut self) {
        // The helper ends when its socket closes, or is killed if it hangs;
        // then it is reaped.
        let _ = self.socket.shutdown(std::net::Shutdown::Both);
        let _ = self.helper.kill();
        let _ = self.helper.wait();
    }
}

/// The helper's main: answers requests on stdin until it closes. Never
/// returns.
pub fn run_helper() -> ! {
    // SAFETY: prctl with constant arguments. Named for `ps` and `top`; not
    // dumpable, as the monitors it forks are not: its memory has held the
    // launches' environments.
    unsafe {
        libc::prctl(libc::PR_SET_NAME, c"weft-spawner".as_ptr(), 0, 0, 0);
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
    // SAFETY: fd 0 is the socket the agent gave as stdin; nothing else in
    // this process uses it.
    let socket = unsafe { UnixStream::from_raw_fd(0) };
    loop {
        let (body, fds) = match receive(&socket, MAX_FDS) {
            Ok(message) => message,
            // The agent has gone (or sent something we cannot read).
            Err(_) => std::process::exit(0),
        };
        let answer = match fork_for(&body, fds) {
            Ok(pid) => Answer::Forked(pid),
            Err(error) => Answer::Refused(error.to_string()),
        };
        let answer = serde_json::to_vec(&answer).unwrap_or_default();
        if send(&socket, &answer, &[]).is_err() {
            std::process::exit(0);
        }
    }
}

/// Rebuilds a launch from a request and its descriptors, and forks its
/// monitor as a child of the agent.
fn fork_for(body: &[u8], fds: Vec<OwnedFd>) -> io::Result<u32> {
    let request: Request = serde_json::from_slice(body).map_err(io::Error::other)?;
    let keep = request
        .private_mounts
        .as_ref()
        .map_or(0, |(_, paths, _)| paths.len());
    if fds.len() != 4 + request.join_files + keep {
        return Err(io::Error::other(format!(
            "a launch came with {} descriptors, not the {} it names",
            fds.len(),
            4 + request.join_files + keep
        )));
    }
    let mut fds = fds.into_iter();
    let mut next = || {
        fds.next()
            .ok_or_else(|| io::Error::other("a descriptor is missing"))
    };
    let ready = next()?;
    let stdout = File::from(next()?);
    let stderr = File::from(next()?);
    let exit_file = File::from(next()?);
    let join_files = (0..request.join_files)
        .map(|_| next())
        .collect::<io::Result<Vec<_>>>()?;
    let private_mounts = match request.private_mounts {
        Some((size_mb, paths, own_network)) => Some(PrivateMounts {
            size_mb,
            own_network,
            keep: paths
                .into_iter()
                .map(|path| Ok((next()?, PathBuf::from(OsString::from_vec(path)))))
                .collect::<io::Result<Vec<_>>>()?,
        }),
        None => None,
    };
    let env: BTreeMap<OsString, OsString> = request
        .env
        .into_iter()
        .map(|(key, value)| (OsString::from_vec(key), OsString::from_vec(value)))
        .collect();
    let work_dir = PathBuf::from(OsString::from_vec(request.work_dir));
    let launch = Launch {
        argv: &request.argv,
        env,
        work_dir: Path::new(&work_dir),
        stdout,
        stderr,
        join_files,
        switch_to: request.switch_to.map(|(uid, gid, groups)| {
            let groups = groups.into_iter().map(Gid::from_raw).collect();
            (Uid::from_raw(uid), Gid::from_raw(gid), groups)
        }),
        exit_file,
        private_mounts,
        syscall_filter: request.syscall_filter,
    };
    monitor::fork_monitor(launch, ready, Parent::OurParent)
}

/// One message: its length (8 bytes, with the descriptors attached), then
/// its body.
fn send(mut socket: &UnixStream, body: &[u8], fds: &[RawFd]) -> io::Result<()> {
    let length = (body.len() as u64).to_le_bytes();
    let control = [ControlMessage::ScmRights(fds)];
    let control: &[ControlMessage<'_>] = if fds.is_empty() { &[] } else { &control };
    let sent = sendmsg::<()>(
        socket.as_raw_fd(),
        &[IoSlice::new(&length)],
        control,
        MsgFlags::empty(),
        None,
    )?;
    if sent != length.len() {
        return Err(io::Error::other("a short write of a message's length"));
    }
    socket.write_all(body)
}

/// One message sent by [`send`], with at most `max_fds` descriptors
/// (more are closed and refused).
fn receive(mut socket: &UnixStream, max_fds: usize) -> io::Result<(Vec<u8>, Vec<OwnedFd>)> {
    let mut length = [0u8; 8];
    let mut control = nix::cmsg_space!([RawFd; MAX_FDS]);
    let mut fds = Vec::new();
    let received = {
        let mut iov = [IoSliceMut::new(&mut length)];
        let message = loop {
            match recvmsg::<()>(
                socket.as_raw_fd(),
                &mut iov,
                Some(&mut control),
                MsgFlags::MSG_CMSG_CLOEXEC,
            ) {
                Err(nix::errno::Errno::EINTR) => continue,
                other => break other?,
            }
        };
        for control in message.cmsgs()? {
            if let ControlMessageOwned::ScmRights(received) = control {
                // SAFETY: the kernel just gave us these descriptors.
                fds.extend(
                    received
                        .into_iter()
                        .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }),
                );
            }
        }
        if message.flags.contains(MsgFlags::MSG_CTRUNC) {
            return Err(io::Error::other("a message's descriptors were cut off"));
        }
        message.bytes
    };
    if received == 0 {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    if fds.len() > max_fds {
        return Err(io::Error::other("a message with too many descriptors"));
    }
    if received < length.len() {
        socket.read_exact(&mut length[received..])?;
    }
    let size = u64::from_le_bytes(length);
    if size > MAX_REQUEST_BYTES {
        return Err(io::Error::other(format!(
            "a message of {size} bytes, more than {MAX_REQUEST_BYTES}"
        )));
    }
    let mut body = Vec::new();
    socket.take(size).read_to_end(&mut body)?;
    if body.len() as u64 != size {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok((body, fds))
}
