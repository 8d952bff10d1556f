//! The container state machine: a running container's kill (TERM, then
//! KILL after the grace), its reaping, and its end concluded with a status
//! and diagnostics, persisted and queued for the next poll.

use super::*;

impl Executor {
    /// One round of what [`Executor::poll`] does, keeping the ends.
    pub(super) fn advance(&mut self, now: Instant) {
        let mut ended = Vec::new();
        for tracked in self.containers.values_mut() {
            if let Tracked::Running(process) = tracked
                && let Some(end) = self
                    .settings
                    .step(process, now, &mut self.cgroups_to_remove)
            {
                ended.push(end);
            }
        }
        for end in ended {
            self.record_end(end);
        }
    }

    /// Removes the cgroups of ended containers (killing what is left in
    /// them): the new ones in order, then those that failed before and
    /// are due again. Within `budget` if one is given; without one, every
    /// cgroup is tried, due or not. Those that fail wait [`CGROUP_RETRY`].
    /// Whether the budget ran out before every new one was tried.
    pub(super) fn remove_cgroups(&mut self, budget: Option<Duration>) -> bool {
        let started = Instant::now();
        let out_of_time = || budget.is_some_and(|budget| started.elapsed() >= budget);
        // An ended container's cgroup is nearly always empty: removing it
        // first spares reading every hierarchy's `cgroup.procs`. Only when
        // a process is left (EBUSY) is everything listed killed, and the
        // removal tried again (and later, while the kills land).
        let removed = |cgroup: &ContainerCgroup| {
            cgroup.remove().is_ok() || {
                cgroup.kill_all();
                cgroup.remove().is_ok()
            }
        };
        let mut failed = Vec::new();
        let mut cut_short = false;
        let mut untried = Vec::new();
        for cgroup in std::mem::take(&mut self.cgroups_to_remove) {
            if cut_short || out_of_time() {
                cut_short = true;
                untried.push(cgroup);
            } else if !removed(&cgroup) {
                failed.push((cgroup, started + CGROUP_RETRY));
            }
        }
        self.cgroups_to_remove = untried;
        let mut waiting = Vec::new();
        for (cgroup, due) in std::mem::take(&mut self.cgroups_to_retry) {
            let not_yet = budget.is_some() && due > started;
            if not_yet || cut_short || out_of_time() {
                waiting.push((cgroup, due));
            } else if !removed(&cgroup) {
                failed.push((cgroup, started + CGROUP_RETRY));
            }
        }
        waiting.extend(failed);
        self.cgroups_to_retry = waiting;
        cut_short
    }

    /// Marks a container ended, logs and persists its end (so a restarted
    /// agent reports the same) and queues it for the next poll.
    pub(super) fn record_end(&mut self, end: ContainerEnd) {
        tracing::info!(
            container = %end.container_id,
            exit_status = end.exit_status,
            diagnostics = %end.diagnostics,
            "container ended"
        );
        if check_id("container id", &end.container_id).is_ok() {
            let dir = self.settings.layout.private_dir(&end.container_id);
            if dir.is_dir()
                && let Err(error) = append_record(&dir, "end", &end)
            {
                tracing::warn!(dir = %dir.display(), %error, "cannot record a container's end");
            }
        }
        self.containers
            .insert(end.container_id.clone(), Tracked::Ended);
        self.unreported.push(end);
    }
}

impl Settings {
    /// Records a kill (in memory and on disk) and sends the first signal.
    pub(super) fn start_kill(
        &self,
        process: &mut ContainerProcess,
        record: KillRecord,
        now: Instant,
    ) {
        let dir = self.layout.private_dir(&process.container_id);
        if let Err(error) = append_record(&dir, "kill", &record) {
            tracing::warn!(dir = %dir.display(), %error, "cannot record a kill");
        }
        let immediate = record.immediate || self.config.kill_grace.is_zero();
        // A monitor still setting up has not started the command to send
        // the TERM to: a later poll sends it once it has (the grace counts
        // from now all the same; SIGKILL needs no such wait).
        process.note_set_up();
        let term_pending = !record.immediate && process.setting_up.is_some();
        process.kill = Some(KillState {
            record,
            requested_at: now,
            escalated: immediate,
            ended_within_grace: false,
            term_pending,
        });
        if !record.immediate && !term_pending {
            process.signal_group(Signal::SIGTERM);
        }
        if immediate {
            process.kill_everything();
        }
    }

    /// Advances one running container: escalates its kill, and when its
    /// main process has ended (and any grace or exit-code wait is over),
    /// concludes it.
    pub(super) fn step(
        &self,
        process: &mut ContainerProcess,
        now: Instant,
        cgroups_to_remove: &mut Vec<ContainerCgroup>,
    ) -> Option<ContainerEnd> {
        process.note_set_up();
        let term_due = process.setting_up.is_none()
            && matches!(&process.kill, Some(kill) if kill.term_pending);
        if term_due {
            if let Some(kill) = &mut process.kill {
                kill.term_pending = false;
            }
            process.signal_group(Signal::SIGTERM);
        }
        let leader = process.leader();
        let ended = matches!(leader, Leader::Ended { .. });
        if ended && process.ended_at.is_none() {
            process.ended_at = Some(now);
        }
        let grace = self.config.kill_grace;
        let (escalate, keep_killing) = match &process.kill {
            Some(kill) => (
                !kill.escalated && now.duration_since(kill.requested_at) >= grace,
                // Still there after SIGKILL (forking, or in the kernel):
                // keep at it, it is cheap.
                kill.escalated && !ended,
            ),
            None => (false, false),
        };
        if escalate {
            let ended_within_grace = ended && !process.anything_left();
            if let Some(kill) = &mut process.kill {
                kill.escalated = true;
                kill.ended_within_grace = ended_within_grace;
            }
        }
        if escalate || keep_killing {
            process.kill_everything();
        }
        if !ended {
            return None;
        }
        // Read again: the monitor may have reported and exited since the
        // look above, and now that it has ended its report is complete.
        process.note_set_up();
        if let Some(why) = process.set_up_failure.take() {
            return Some(self.not_started(process, why, cgroups_to_remove));
        }
        let outcome = if process.ours {
            None
        } else {
            read_exit_code(&self.layout, &process.container_id).map(Outcome::Code)
        };
        match &process.kill {
            // The rest of the group gets the whole grace to clean up.
            Some(kill) if !kill.escalated => return None,
            Some(_) => {}
            None if !process.ours
                && outcome.is_none()
                && now.duration_since(process.ended_at.unwrap_or(now)) < EXIT_CODE_FILE_TIMEOUT =>
            {
                return None;
            }
            None => {}
        }
        let outcome = match outcome {
            Some(outcome) => outcome,
            None => self.reap(process),
        };
        let unknown_reason =
            "the container's process (adopted after an agent restart) ended and left no exit code";
        Some(self.conclude(process, outcome, unknown_reason, cgroups_to_remove))
    }

    /// The end of a container whose monitor failed its set-up, so its
    /// command never ran: INVALID, saying what failed, as a launch refused
    /// before the fork is.
    fn not_started(
        &self,
        process: &mut ContainerProcess,
        why: String,
        cgroups_to_remove: &mut Vec<ContainerCgroup>,
    ) -> ContainerEnd {
        let _ = self.reap(process);
        if let Some(cgroup) = process.cgroup.take() {
            cgroup.kill_all();
            if cgroup.remove().is_err() {
                cgroups_to_remove.push(cgroup);
            }
        }
        ContainerEnd {
            container_id: process.container_id.clone(),
            exit_status: exit_status::INVALID,
            diagnostics: format!("cannot start the process: {why}"),
            finished_ms: now_ms(),
            started_ms: None,
        }
    }

    /// Our child's outcome: the exit-code file's, else its wait status.
    /// Kills what is left of its group first, while the zombie still pins
    /// the group id, then reaps it.
    pub(super) fn reap(&self, process: &mut ContainerProcess) -> Outcome {
        process.signal_group(Signal::SIGKILL);
        let status = if process.ours {
            reap_child(process.pid).unwrap_or_else(|error| {
                tracing::warn!(container = %process.container_id, %error, "cannot reap a container's process");
                None
            })
        } else {
            None
        };
        if let Some(code) = read_exit_code(&self.layout, &process.container_id) {
            return Outcome::Code(code);
        }
        match status {
            Some(WaitStatus::Exited(_, code)) => Outcome::Code(code),
            Some(WaitStatus::Signaled(_, signal, _)) => Outcome::Signal(signal as i32),
            _ => Outcome::Unknown,
        }
    }

    /// Builds the end of a container whose main process is gone, and
    /// cleans up: what is left of its group and cgroup is killed, its
    /// cgroup removed (or queued for removal).
    pub(super) fn conclude(
        &self,
        process: &mut ContainerProcess,
        outcome: Outcome,
        unknown_reason: &str,
        cgroups_to_remove: &mut Vec<ContainerCgroup>,
    ) -> ContainerEnd {
        process.signal_group(Signal::SIGKILL);
        let ended_by_sigkill = match outcome {
            Outcome::Code(code) => code == 128 + Signal::SIGKILL as i32,
            Outcome::Signal(signal) => signal == Signal::SIGKILL as i32,
            Outcome::Unknown => true,
        };
        let memory_killed = process
            .cgroup
            .as_ref()
            .is_some_and(|cgroup| cgroup.memory_killed(ended_by_sigkill));
        if let Some(cgroup) = process.cgroup.take() {
            // Emptied now; removed by the next tidy, after the end is
            // reported (an rmdir per hierarchy is most of an end's cost).
            cgroup.kill_all();
            cgroups_to_remove.push(cgroup);
        } else {
            self.clean_cgroup(&process.container_id, cgroups_to_remove);
        }
        let stderr_tail = || {
            let stderr = Path::new(&process.app_id)
                .join(&process.container_id)
                .join("stderr");
            describe_stderr_tail(&self.layout.log_dir, &stderr, self.config.stderr_tail_bytes)
        };
        let (exit_status, diagnostics) = if let Some(kill) = &process.kill {
            let how = if kill.record.immediate {
                "killed: SIGKILL (the agent is stopping)".to_owned()
            } else if kill.ended_within_grace {
                format!(
                    "killed: SIGTERM; it ended within the {} ms grace",
                    self.config.kill_grace.as_millis()
                )
            } else if !kill.escalated {
                // Recovered: it ended while the agent was down.
                "killed: SIGTERM; it ended before SIGKILL was due".to_owned()
            } else {
                format!(
                    "killed: SIGTERM, then SIGKILL after {} ms",
                    self.config.kill_grace.as_millis()
                )
            };
            let why = match kill.record.exit_status {
                exit_status::KILLED_FOR_EXCESS_LOGS => format!(
                    "its logs grew past the container log monitor's limit ({} bytes on disk or {MAX_LOG_ENTRIES} entries, yarn.nodemanager.container-log-monitor.*); ",
                    self.config.log_limit_bytes
                ),
                _ => String::new(),
            };
            (kill.record.exit_status, format!("{why}{how}"))
        } else {
            match outcome {
                // A child may have been killed for memory, but the command
                // itself succeeded.
                Outcome::Code(0) => (0, String::new()),
                _ if memory_killed => (
                    exit_status::KILLED_EXCEEDED_PMEM,
                    format!(
                        "killed for exceeding its memory limit of {} MB{}",
                        process.resources.memory_mb,
                        stderr_tail()
                    ),
                ),
                Outcome::Code(code) => {
                    (code, format!("exited with status {code}{}", stderr_tail()))
                }
                Outcome::Signal(signal) => (
                    128 + signal,
                    format!(
                        "ended by signal {} (status {}){}",
                        signal_name(signal),
                        128 + signal,
                        stderr_tail()
                    ),
                ),
                Outcome::Unknown => (
                    exit_status::ABORTED,
                    format!("{unknown_reason}{}", stderr_tail()),
                ),
            }
        };
        ContainerEnd {
            container_id: process.container_id.clone(),
            exit_status,
            diagnostics,
            finished_ms: ended_at(&self.layout, &process.container_id),
            // 0: recovered without the record of its start.
            started_ms: (process.started_ms > 0).then_some(process.started_ms),
        }
    }

    /// Kills and removes a container's cgroup found by path (an earlier
    /// agent's), if there is one.
    pub(super) fn clean_cgroup(
        &self,
        container_id: &str,
        cgroups_to_remove: &mut Vec<ContainerCgroup>,
    ) {
        if let Ok(cgroups) = &self.cgroups
            && let Some(cgroup) = cgroups.existing(container_id)
        {
            cgroup.kill_all();
            if cgroup.remove().is_err() {
                cgroups_to_remove.push(cgroup);
            }
        }
    }
}

/// "; last N bytes of stderr:\n…", or "" when stderr is empty or gone. The
/// file is the container's: one it replaced with a link, a FIFO or a
/// device is not read, and the diagnostics say so.
pub(super) fn describe_stderr_tail(log_dir: &Path, stderr: &Path, max_bytes: usize) -> String {
    let max = u64::try_from(max_bytes).unwrap_or(u64::MAX);
    match untrusted::read_tail(log_dir, stderr, max) {
        Ok(tail) if !tail.is_empty() => {
            format!(
                "; last {} bytes of stderr:\n{}",
                tail.len(),
                trim_partial_char(&tail)
            )
        }
        Err(error) if error.kind() == io::ErrorKind::InvalidInput => {
            "; its stderr is no longer a regular file: not read".to_owned()
        }
        _ => String::new(),
    }
}

/// The tail as text, without the broken pieces of a character cut at its
/// start.
pub(super) fn trim_partial_char(tail: &[u8]) -> String {
    let skip = tail
        .iter()
        .take(3)
        .take_while(|b| (**b & 0b1100_0000) == 0b1000_0000)
        .count();
    String::from_utf8_lossy(&tail[skip..]).into_owned()
}
