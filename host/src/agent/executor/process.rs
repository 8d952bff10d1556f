//! /proc and waitpid: whether a container's main process and its group
//! still live, signalling the group, reaping our child.

use super::*;
use crate::agent::monitor::SetUp;

/// Whether a container's main process is still there.
pub(super) enum Leader {
    Alive,
    /// Ended. `pinned`: it is still a zombie, so its pid (the group's id)
    /// cannot be reused yet and signalling the group is safe.
    Ended {
        pinned: bool,
    },
}

impl ContainerProcess {
    /// Learns how far the monitor's set-up has got, without waiting; a
    /// failure is kept for the container's end.
    pub(super) fn note_set_up(&mut self) {
        let Some(setting_up) = &mut self.setting_up else {
            return;
        };
        match setting_up.check() {
            SetUp::Pending => {}
            SetUp::Done => self.setting_up = None,
            SetUp::Failed(why) => {
                self.setting_up = None;
                self.set_up_failure = Some(why);
            }
        }
    }

    pub(super) fn leader(&self) -> Leader {
        if self.ours {
            let Ok(pid) = i32::try_from(self.pid) else {
                return Leader::Ended { pinned: false };
            };
            // WNOWAIT: look without reaping, so the zombie keeps the group
            // id reserved until the group has been SIGKILLed.
            let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
            return match waitid(Id::Pid(Pid::from_raw(pid)), flags) {
                Ok(WaitStatus::StillAlive) => Leader::Alive,
                Ok(_) => Leader::Ended { pinned: true },
                Err(Errno::EINTR) => Leader::Alive,
                Err(_) => Leader::Ended { pinned: false },
            };
        }
        match read_proc_stat(self.pid) {
            Some(stat) if stat.start_ticks == self.start_ticks => {
                if matches!(stat.state, 'Z' | 'X') {
                    Leader::Ended { pinned: true }
                } else {
                    Leader::Alive
                }
            }
            _ => Leader::Ended { pinned: false },
        }
    }

    /// Signals the process group, but only while its id is certainly ours.
    pub(super) fn signal_group(&self, signal: Signal) {
        let safe = match self.leader() {
            Leader::Alive | Leader::Ended { pinned: true } => true,
            Leader::Ended { pinned: false } => false,
        };
        if let Ok(pgid) = i32::try_from(self.pid)
            && pgid > 1
            && safe
        {
            let _ = killpg(Pid::from_raw(pgid), signal);
        }
    }

    /// Whether a process of the container's group or cgroup is still alive.
    pub(super) fn anything_left(&self) -> bool {
        self.cgroup
            .as_ref()
            .is_some_and(|cgroup| !cgroup.pids().is_empty())
            || group_has_live_members(self.pid)
    }

    /// SIGKILL to the group and everything in the cgroup — and to our
    /// monitor itself, which before its set-up has no group yet (its pid
    /// is ours until we reap it, so it names no other process).
    pub(super) fn kill_everything(&self) {
        self.signal_group(Signal::SIGKILL);
        if self.ours
            && let Ok(pid) = i32::try_from(self.pid)
        {
            let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        if let Some(cgroup) = &self.cgroup {
            cgroup.kill_all();
        }
    }
}

pub(super) fn signal_name(signal: i32) -> String {
    Signal::try_from(signal).map_or_else(
        |_| format!("signal {signal}"),
        |signal| signal.as_str().to_owned(),
    )
}

/// Reaps our child if it has ended (`None` while it runs).
pub(super) fn reap_child(pid: u32) -> nix::Result<Option<WaitStatus>> {
    let pid = i32::try_from(pid).map_err(|_| Errno::ESRCH)?;
    match waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG))? {
        WaitStatus::StillAlive => Ok(None),
        status => Ok(Some(status)),
    }
}

/// The few fields of /proc/<pid>/stat the executor needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ProcStat {
    pub(super) state: char,
    pub(super) process_group: u32,
    pub(super) start_ticks: u64,
}

pub(super) fn read_proc_stat(pid: u32) -> Option<ProcStat> {
    if pid == 0 {
        return None;
    }
    let bytes = fs::read(format!("/proc/{pid}/stat")).ok()?;
    parse_proc_stat(&String::from_utf8_lossy(&bytes))
}

/// The command name (field 2) may hold spaces and parentheses, so fields
/// are counted after its last ')': field 3 (state), 5 (process group), 22
/// (start time in clock ticks since boot).
pub(super) fn parse_proc_stat(text: &str) -> Option<ProcStat> {
    let after_name = &text[text.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let process_group = fields.nth(1)?.parse().ok()?;
    let start_ticks = fields.nth(16)?.parse().ok()?;
    Some(ProcStat {
        state,
        process_group,
        start_ticks,
    })
}

/// Whether a live (not zombie) process is in process group `pgid`: one
/// pass over /proc, done once per kill, for the diagnostic.
pub(super) fn group_has_live_members(pgid: u32) -> bool {
    let Ok(entries) = fs::read_dir("/proc") else {
        return false;
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(read_proc_stat)
        .any(|stat| stat.process_group == pgid && !matches!(stat.state, 'Z' | 'X'))
}
