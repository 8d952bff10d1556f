use super::lifecycle::trim_partial_char;
use super::*;
use std::process::Command;

/// A test's own work and log dirs, and a cgroup name no other test uses.
struct Bench {
    dir: tempfile::TempDir,
}

impl Bench {
    fn new() -> Bench {
        Bench {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    fn config(&self, run_as: RunAs) -> ExecutorConfig {
        let unique = self
            .dir
            .path()
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .replace(|c: char| !c.is_ascii_alphanumeric(), "");
        ExecutorConfig {
            work_dir: self.dir.path().join("work"),
            log_dir: self.dir.path().join("logs"),
            run_as,
            kill_grace: DEFAULT_KILL_GRACE,
            stderr_tail_bytes: DEFAULT_STDERR_TAIL_BYTES,
            cgroup_name: format!("weft-test-{}-{unique}", std::process::id()),
            pids_limit: 512,
            syscall_filter: true,
            own_network: false,
            log_limit_bytes: 0,
            log_check_interval: Duration::from_secs(10),
            memory_mb: 4096,
        }
    }

    fn open(&self) -> Executor {
        Executor::open(self.config(RunAs::Agent)).expect("open")
    }
}

fn order(container_id: &str, command: ContainerCommand) -> LaunchOrder {
    LaunchOrder {
        container_id: container_id.to_owned(),
        app_id: "app_1".to_owned(),
        user: "alice".to_owned(),
        command,
        env: BTreeMap::new(),
        memory_mb: 128,
        vcores: 1,
        gpus: 0,
        yarn: None,
        held_for: None,
        opportunistic: false,
    }
}

fn shell(line: &str) -> ContainerCommand {
    ContainerCommand::Shell(line.to_owned())
}

/// Polls until all of `container_ids` have ended (panics after `within`).
fn wait_for_ends(
    executor: &mut Executor,
    container_ids: &[&str],
    within: Duration,
) -> BTreeMap<String, ContainerEnd> {
    let deadline = Instant::now() + within;
    let mut ends = BTreeMap::new();
    loop {
        for end in executor.poll() {
            assert!(
                ends.insert(end.container_id.clone(), end).is_none(),
                "an end reported twice"
            );
        }
        if container_ids.iter().all(|id| ends.contains_key(*id)) {
            return ends;
        }
        assert!(
            Instant::now() < deadline,
            "{container_ids:?} did not end within {within:?}; ended: {ends:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn wait_for_end(executor: &mut Executor, container_id: &str, within: Duration) -> ContainerEnd {
    let mut ends = wait_for_ends(executor, &[container_id], within);
    ends.remove(container_id).expect("ended")
}

fn wait_until(within: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if condition() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    condition()
}

fn is_alive(pid: u32) -> bool {
    read_proc_stat(pid).is_some_and(|stat| !matches!(stat.state, 'Z' | 'X'))
}

/// The host's pid of the process a container knows as `inner` (what
/// `$!` said inside it): in a pid namespace of its own, the process of
/// that namespace (the one of the leader's child) whose last `NSpid`
/// is `inner`; without one, `inner` itself.
fn host_pid(leader: u32, inner: u32) -> u32 {
    let namespace = |pid: u32| fs::read_link(format!("/proc/{pid}/ns/pid")).ok();
    let pids: Vec<u32> = fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    let parent = |pid: u32| -> Option<u32> {
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat[stat.rfind(')')? + 1..]
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    let Some(own) = pids
        .iter()
        .find(|pid| parent(**pid) == Some(leader))
        .and_then(|first| namespace(*first))
        .filter(|own| Some(own) != namespace(leader).as_ref())
    else {
        return inner;
    };
    pids.into_iter()
        .find(|pid| {
            namespace(*pid).as_ref() == Some(&own)
                && fs::read_to_string(format!("/proc/{pid}/status"))
                    .ok()
                    .and_then(|status| {
                        let line = status.lines().find(|l| l.starts_with("NSpid:"))?;
                        line.split_whitespace().last()?.parse::<u32>().ok()
                    })
                    == Some(inner)
        })
        .expect("the container's process")
}

/// The pids of the containers launched and not ended, whether or not
/// their monitors have finished setting up (`running()` lists only those
/// that have).
fn launched(executor: &Executor) -> BTreeMap<String, u32> {
    executor
        .containers
        .iter()
        .filter_map(|(id, tracked)| match tracked {
            Tracked::Running(process) => Some((id.clone(), process.pid)),
            Tracked::Ended => None,
        })
        .collect()
}

/// Waits (at most 5 s) until every launched container's monitor has
/// finished setting up, without polling (which would conclude ends).
fn wait_for_set_ups(executor: &mut Executor) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut pending = false;
        for tracked in executor.containers.values_mut() {
            if let Tracked::Running(process) = tracked {
                process.note_set_up();
                pending |= process.setting_up.is_some();
            }
        }
        if !pending {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "a monitor never finished setting up"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn runs_a_command_with_its_environment_and_reports_success() {
    let bench = Bench::new();
    let mut executor = bench.open();
    let mut launch = order(
        "c_ok",
        shell(
            "echo hello; echo \"$CONTAINER_ID $APP_ID $WEFT_USER $PWD $LOG_DIRS $LOCAL_DIRS $MINE\"",
        ),
    );
    launch.env.insert("MINE".to_owned(), "mine".to_owned());
    launch
        .env
        .insert("CONTAINER_ID".to_owned(), "forged".to_owned());
    executor.launch(&launch);
    executor.launch(&launch); // idempotent
    assert_eq!(launched(&executor).len(), 1);
    let end = wait_for_end(&mut executor, "c_ok", Duration::from_secs(3));
    assert_eq!((end.exit_status, end.diagnostics.as_str()), (0, ""));
    assert!(executor.running().is_empty());

    let stdout = executor
        .log_path("app_1", "c_ok", LogStream::Stdout)
        .expect("stdout path");
    let text = fs::read_to_string(stdout).expect("stdout");
    let work = executor.settings.layout.container_work_dir("app_1", "c_ok");
    let logs = executor.settings.layout.container_log_dir("app_1", "c_ok");
    let expected = format!(
        "hello\nc_ok app_1 alice {} {} {} mine\n",
        work.display(),
        logs.display(),
        work.display()
    );
    assert_eq!(text, expected);
    assert_eq!(read_exit_code(&executor.settings.layout, "c_ok"), Some(0));

    // Reported once; forgetting keeps the logs, and the id cannot run again.
    assert!(executor.poll().is_empty());
    let record = executor.settings.layout.private_dir("c_ok");
    fs::File::open(record.join(RECORD))
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(3600))
        .unwrap();
    executor.forget("c_ok");
    assert!(
        record.join(ACKNOWLEDGED).exists(),
        "its retention counts from now"
    );
    // Its end record became the mark (no new file), stamped now, not at
    // the end it records.
    assert!(!record.join(RECORD).exists());
    let stamped = fs::symlink_metadata(record.join(ACKNOWLEDGED))
        .and_then(|m| m.modified())
        .unwrap();
    assert!(SystemTime::now().duration_since(stamped).unwrap() < Duration::from_secs(60));
    // An agent started again on these dirs does not report it again.
    assert!(
        Executor::open(bench.config(RunAs::Agent))
            .expect("open")
            .poll()
            .iter()
            .all(|end| end.container_id != "c_ok")
    );
    assert!(
        executor
            .log_path("app_1", "c_ok", LogStream::Stderr)
            .is_some()
    );
    executor.launch(&launch);
    let again = wait_for_end(&mut executor, "c_ok", Duration::from_secs(1));
    assert_eq!(again.exit_status, exit_status::INVALID);
    assert!(
        again.diagnostics.contains("already ran"),
        "{}",
        again.diagnostics
    );
}

#[test]
fn sweeping_removes_only_old_forgotten_containers_dirs() {
    let bench = Bench::new();
    let mut executor = bench.open();
    executor.launch(&order("c_old", shell("echo old")));
    executor.launch(&order("c_kept", shell("echo kept")));
    let _ = wait_for_ends(&mut executor, &["c_old", "c_kept"], Duration::from_secs(3));
    executor.forget("c_old");
    let long_ago = SystemTime::now() - Duration::from_secs(3600);
    let far_ahead = SystemTime::now() + Duration::from_secs(3600 * 24 * 365);
    let layout = &executor.settings.layout;
    // Retention counts from the agent's record of the acknowledgement,
    // not from the logs' times (a container sets those as it likes).
    fs::File::open(layout.private_dir("c_old").join(ACKNOWLEDGED))
        .unwrap()
        .set_modified(long_ago)
        .unwrap();
    for container in ["c_old", "c_kept"] {
        let dir = layout.container_log_dir("app_1", container);
        for path in [dir.join("stdout"), dir.join("stderr"), dir.clone()] {
            fs::File::open(&path)
                .unwrap()
                .set_modified(far_ahead)
                .unwrap();
        }
    }
    let (old_logs, old_work, old_private) = (
        layout.container_log_dir("app_1", "c_old"),
        layout.container_work_dir("app_1", "c_old"),
        layout.private_dir("c_old"),
    );
    assert!(old_logs.exists() && old_work.exists());
    assert_eq!(
        executor.sweep(Duration::from_secs(7200)),
        0,
        "not old enough"
    );
    assert_eq!(executor.sweep(Duration::from_secs(60)), 1);
    // Removal is asynchronous, the private directory last.
    assert!(wait_until(Duration::from_secs(10), || {
        executor.poll();
        !old_logs.exists() && !old_work.exists() && !old_private.exists()
    }));
    assert!(
        executor
            .log_path("app_1", "c_kept", LogStream::Stdout)
            .is_some(),
        "a container not forgotten keeps its logs"
    );
}

#[test]
fn a_missing_command_and_a_failing_one_report_status_and_stderr() {
    let bench = Bench::new();
    let mut executor = bench.open();
    executor.launch(&order(
        "c_missing",
        ContainerCommand::Argv(vec!["weft-no-such-command-xyz".to_owned()]),
    ));
    executor.launch(&order("c_fail", shell("echo oops >&2; exit 3")));
    // An argv is exec'd, never run by a shell: `exit` is no program.
    executor.launch(&order(
        "c_exit_argv",
        ContainerCommand::Argv(vec!["exit".to_owned(), "4".to_owned()]),
    ));
    executor.launch(&order("c_exit_line", shell("exit 4")));
    let ends = wait_for_ends(
        &mut executor,
        &["c_missing", "c_fail", "c_exit_argv", "c_exit_line"],
        Duration::from_secs(3),
    );
    let missing = &ends["c_missing"];
    assert_eq!(missing.exit_status, 127);
    assert!(
        missing.diagnostics.starts_with("exited with status 127"),
        "{}",
        missing.diagnostics
    );
    assert!(
        missing.diagnostics.contains("not found"),
        "{}",
        missing.diagnostics
    );
    let failed = &ends["c_fail"];
    assert_eq!(failed.exit_status, 3);
    assert_eq!(
        failed.diagnostics,
        "exited with status 3; last 5 bytes of stderr:\noops\n"
    );
    let argv = &ends["c_exit_argv"];
    assert_eq!(argv.exit_status, 127, "{}", argv.diagnostics);
    assert!(
        argv.diagnostics.contains("weft: exit: not found"),
        "{}",
        argv.diagnostics
    );
    assert_eq!(ends["c_exit_line"].exit_status, 4);
}

#[test]
fn kill_ends_the_whole_group_and_the_cgroup() {
    let bench = Bench::new();
    let mut executor = bench.open();
    executor.launch(&order(
        "c_stubborn",
        shell("trap '' TERM; setsid sleep 100 & echo $!; sleep 100 & echo $!; wait"),
    ));
    let stdout = executor
        .log_path("app_1", "c_stubborn", LogStream::Stdout)
        .expect("path");
    let mut pids: Vec<u32> = Vec::new();
    assert!(wait_until(Duration::from_secs(2), || {
        pids = fs::read_to_string(&stdout)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.parse().ok())
            .collect();
        pids.len() == 2
    }));
    let leader = launched(&executor)["c_stubborn"];
    let (escaped, in_group) = (host_pid(leader, pids[0]), host_pid(leader, pids[1]));
    let started = Instant::now();
    executor.kill("c_stubborn", exit_status::KILLED_BY_APPMASTER);
    executor.kill("c_stubborn", exit_status::PREEMPTED); // the first kill's status stands
    let end = wait_for_end(&mut executor, "c_stubborn", Duration::from_secs(3));
    assert!(started.elapsed() >= DEFAULT_KILL_GRACE);
    assert_eq!(end.exit_status, exit_status::KILLED_BY_APPMASTER);
    assert_eq!(
        end.diagnostics,
        "killed: SIGTERM, then SIGKILL after 250 ms"
    );
    assert!(wait_until(Duration::from_secs(2), || !is_alive(leader)
        && !is_alive(in_group)));
    if executor.has_cgroups() {
        assert!(
            wait_until(Duration::from_secs(2), || !is_alive(escaped)),
            "the setsid child escaped the cgroup"
        );
    } else {
        eprintln!(
            "note: no cgroups ({}); the setsid child escapes, killing it",
            executor.isolation()
        );
        let _ = nix::sys::signal::kill(Pid::from_raw(escaped as i32), Signal::SIGKILL);
    }
    // Unknown and ended containers: no-ops.
    executor.kill("c_stubborn", exit_status::PREEMPTED);
    executor.kill("nobody", exit_status::PREEMPTED);
    assert!(executor.poll().is_empty());
}

/// All containers together are capped at the node's memory: one within
/// its own limit that the node's cap stops is not said to have exceeded
/// its own (it did not).
#[test]
fn the_nodes_memory_cap_stops_a_container_within_its_own_limit() {
    let bench = Bench::new();
    let mut config = bench.config(RunAs::Agent);
    config.memory_mb = 64;
    let mut executor = Executor::open(config).expect("open");
    if !executor.has_cgroups() {
        eprintln!("note: skipping the node cap test: {}", executor.isolation());
        return;
    }
    let mut launch = order("c_within", shell("head -c 300M /dev/zero | tail"));
    launch.memory_mb = 1024;
    executor.launch(&launch);
    let end = wait_for_end(&mut executor, "c_within", Duration::from_secs(5));
    assert_ne!(
        end.exit_status,
        exit_status::KILLED_EXCEEDED_PMEM,
        "{}",
        end.diagnostics
    );
    assert_ne!(end.exit_status, 0, "ran past the node's cap");
}

#[test]
fn a_container_over_its_memory_limit_ends_killed_for_memory() {
    let bench = Bench::new();
    let mut executor = bench.open();
    if !executor.has_cgroups() {
        eprintln!(
            "note: skipping the memory limit test: {}",
            executor.isolation()
        );
        return;
    }
    let mut launch = order("c_hog", shell("head -c 300M /dev/zero | tail"));
    launch.memory_mb = 64;
    executor.launch(&launch);
    // Usually ~0.15 s; when the victim does not exit at once, the
    // kernel's oom_reaper frees it after its 2 s delay.
    let end = wait_for_end(&mut executor, "c_hog", Duration::from_secs(5));
    assert_eq!(
        end.exit_status,
        exit_status::KILLED_EXCEEDED_PMEM,
        "{}",
        end.diagnostics
    );
    assert!(
        end.diagnostics
            .starts_with("killed for exceeding its memory limit of 64 MB"),
        "{}",
        end.diagnostics
    );
    let cgroups = executor.settings.cgroups.clone().expect("cgroups");
    assert!(wait_until(Duration::from_secs(1), || {
        executor.poll();
        cgroups.existing("c_hog").is_none()
    }));
}

#[test]
fn a_restarted_agent_adopts_running_containers_and_reports_ends() {
    let bench = Bench::new();
    let mut first = bench.open();
    first.launch(&order("c_later", shell("sleep 0.5; exit 5")));
    first.launch(&order("c_quick", shell("exit 6")));
    first.launch(&order("c_kill_before", shell("sleep 100")));
    first.launch(&order("c_kill_after", shell("sleep 100")));
    let pids = launched(&first);
    // Its kill's TERM is sent at once only once the command has started
    // (else by a poll, which this agent will not make).
    wait_for_set_ups(&mut first);
    first.kill("c_kill_before", exit_status::KILLED_BY_RESOURCEMANAGER);
    // Ended, unreaped, before the restart (the test process is their parent).
    for id in ["c_quick", "c_kill_before"] {
        assert!(
            wait_until(Duration::from_secs(2), || !is_alive(pids[id])),
            "{id}"
        );
    }
    drop(first); // as if the agent were killed with -9: nothing killed, nothing reaped

    let mut second = bench.open();
    let running: Vec<String> = second
        .running()
        .into_iter()
        .map(|r| r.container_id)
        .collect();
    assert_eq!(running, ["c_kill_after", "c_later"]);
    assert_eq!(second.running()[0].pid, pids["c_kill_after"]);
    let mut recovered = second.poll();
    recovered.sort_by(|a, b| a.container_id.cmp(&b.container_id));
    let statuses: Vec<(&str, i32)> = recovered
        .iter()
        .map(|e| (e.container_id.as_str(), e.exit_status))
        .collect();
    assert_eq!(
        statuses,
        [
            ("c_kill_before", exit_status::KILLED_BY_RESOURCEMANAGER),
            ("c_quick", 6)
        ]
    );

    second.kill("c_kill_after", exit_status::KILLED_BY_APPMASTER);
    let ends = wait_for_ends(
        &mut second,
        &["c_kill_after", "c_later"],
        Duration::from_secs(3),
    );
    let killed = &ends["c_kill_after"];
    assert_eq!(killed.exit_status, exit_status::KILLED_BY_APPMASTER);
    let later = &ends["c_later"];
    assert_eq!(later.exit_status, 5);
    assert!(
        later.diagnostics.starts_with("exited with status 5"),
        "{}",
        later.diagnostics
    );
    drop(second);

    // A third agent reports the same ends again, until they are forgotten.
    let mut third = bench.open();
    let mut ends = third.poll();
    ends.sort_by(|a, b| a.container_id.cmp(&b.container_id));
    let statuses: Vec<(&str, i32)> = ends
        .iter()
        .map(|e| (e.container_id.as_str(), e.exit_status))
        .collect();
    assert_eq!(
        statuses,
        [
            ("c_kill_after", exit_status::KILLED_BY_APPMASTER),
            ("c_kill_before", exit_status::KILLED_BY_RESOURCEMANAGER),
            ("c_later", 5),
            ("c_quick", 6)
        ]
    );
    for id in pids.keys() {
        third.forget(id);
    }
    drop(third);
    assert!(bench.open().poll().is_empty());

    // The first agent's children are this test's zombies now: reap them.
    for pid in pids.values() {
        let _ = nix::sys::wait::waitpid(Pid::from_raw(*pid as i32), None);
    }
}

#[test]
fn a_process_gone_without_exit_code_is_aborted() {
    let bench = Bench::new();
    let mut first = bench.open();
    first.launch(&order("c_lost", shell("sleep 100")));
    let pid = launched(&first)["c_lost"];
    // The launch does not wait for the monitor to make its session.
    wait_for_set_ups(&mut first);
    drop(first);
    // Killed while "the agent was down": the monitor leaves no exit code.
    let _ = killpg(Pid::from_raw(pid as i32), Signal::SIGKILL);
    let _ = nix::sys::wait::waitpid(Pid::from_raw(pid as i32), None);
    let mut second = bench.open();
    assert!(second.running().is_empty());
    let end = wait_for_end(&mut second, "c_lost", Duration::from_millis(100));
    assert_eq!(end.exit_status, exit_status::ABORTED);
    assert!(
        end.diagnostics.starts_with(
            "the container's process ended while the agent was down and left no exit code"
        ),
        "{}",
        end.diagnostics
    );
}

#[test]
fn refused_users_and_bad_orders_end_invalid_without_panicking() {
    let bench = Bench::new();
    let run_as = RunAs::Submitter {
        banned_users: vec!["mallory".to_owned()],
        min_user_id: 1000,
    };
    let mut executor = Executor::open(bench.config(run_as)).expect("open");
    let as_user = |id: &str, user: &str| LaunchOrder {
        user: user.to_owned(),
        ..order(id, shell("true"))
    };
    executor.launch(&as_user("c_root", "root"));
    executor.launch(&as_user("c_banned", "mallory"));
    executor.launch(&as_user("c_unknown", "weft-no-such-user"));
    let mut bad_key = order("c_bad_key", shell("true"));
    bad_key.env.insert("1X".to_owned(), "v".to_owned());
    executor.launch(&bad_key);
    let mut bad_value = order("c_bad_value", shell("true"));
    bad_value.env.insert("X".to_owned(), "a\0b".to_owned());
    executor.launch(&bad_value);
    executor.launch(&order("../escape", shell("true")));
    executor.launch(&LaunchOrder {
        app_id: "..".to_owned(),
        ..order("c_bad_app", shell("true"))
    });
    executor.launch(&order("c_empty_argv", ContainerCommand::Argv(Vec::new())));
    executor.launch(&order(
        "c_nul_arg",
        ContainerCommand::Argv(vec!["a\0".to_owned()]),
    ));

    let ends: BTreeMap<String, ContainerEnd> = executor
        .poll()
        .into_iter()
        .map(|end| (end.container_id.clone(), end))
        .collect();
    let expect = [
        ("c_root", "uid 0, below this node's minimum 1000"),
        ("c_banned", "user mallory is banned"),
        ("c_unknown", "does not exist"),
        ("c_bad_key", "env: key \"1X\""),
        ("c_bad_value", "env: the value of X contains a NUL"),
        ("../escape", "container id \"../escape\" is not valid"),
        ("c_bad_app", "app id \"..\" is not valid"),
        ("c_empty_argv", "command: argv has 0 arguments"),
        ("c_nul_arg", "command: argument 0 contains a NUL"),
    ];
    assert_eq!(ends.len(), expect.len());
    for (id, text) in expect {
        let end = &ends[id];
        assert_eq!(end.exit_status, exit_status::INVALID, "{id}");
        assert!(end.diagnostics.contains(text), "{id}: {}", end.diagnostics);
    }
    assert!(!bench.dir.path().join("escape").exists());
    assert!(executor.running().is_empty());
    assert_eq!(executor.log_path("..", "c", LogStream::Stdout), None);
    assert_eq!(executor.log_path("app_1", "../c", LogStream::Stdout), None);
    // Known: a second order is a no-op; forgetting an invalid id is harmless.
    executor.launch(&order("../escape", shell("true")));
    assert!(executor.poll().is_empty());
    executor.forget("../escape");
}

#[test]
fn runs_as_the_submitter_when_told_to() {
    if !Uid::effective().is_root() || !matches!(User::from_name("nobody"), Ok(Some(_))) {
        eprintln!("note: skipping the run-as test: needs root and a user nobody");
        return;
    }
    let bench = Bench::new();
    // The tempdir is 0700: let the container's user reach its dirs.
    fs::set_permissions(bench.dir.path(), fs::Permissions::from_mode(0o755)).expect("chmod");
    let run_as = RunAs::Submitter {
        banned_users: Vec::new(),
        min_user_id: 1000,
    };
    let mut executor = Executor::open(bench.config(run_as)).expect("open");
    let launch = LaunchOrder {
        user: "nobody".to_owned(),
        ..order(
            "c_nobody",
            shell("id -u; id -g; echo \"$USER $LOGNAME $WEFT_USER\"; touch made"),
        )
    };
    executor.launch(&launch);
    let end = wait_for_end(&mut executor, "c_nobody", Duration::from_secs(3));
    assert_eq!((end.exit_status, end.diagnostics.as_str()), (0, ""));
    let stdout = executor
        .log_path("app_1", "c_nobody", LogStream::Stdout)
        .expect("path");
    let account = User::from_name("nobody").expect("lookup").expect("nobody");
    assert_eq!(
        fs::read_to_string(stdout).expect("stdout"),
        format!("{}\n{}\nnobody nobody nobody\n", account.uid, account.gid)
    );
    let made = executor
        .settings
        .layout
        .container_work_dir("app_1", "c_nobody")
        .join("made");
    assert_eq!(
        std::os::unix::fs::MetadataExt::uid(&fs::metadata(made).expect("made")),
        account.uid.as_raw()
    );
    // Its alone, not its group's (users may share a primary group).
    let layout = &executor.settings.layout;
    let mode = |path: PathBuf| fs::metadata(path).expect("exists").permissions().mode() & 0o777;
    assert_eq!(mode(layout.container_work_dir("app_1", "c_nobody")), 0o700);
    assert_eq!(mode(layout.container_log_dir("app_1", "c_nobody")), 0o700);
    assert_eq!(
        mode(layout.container_log_dir("app_1", "c_nobody").join("stdout")),
        0o600
    );
    // The monitor, as nobody, recorded the exit code in root's file.
    assert_eq!(
        read_exit_code(&executor.settings.layout, "c_nobody"),
        Some(0)
    );
    let record = executor
        .settings
        .layout
        .private_dir("c_nobody")
        .join("exitcode");
    assert_eq!(
        std::os::unix::fs::MetadataExt::uid(&fs::metadata(record).expect("record")),
        0
    );
}

#[test]
fn a_containers_dev_shm_and_tmp_are_its_own_and_go_with_it() {
    let bench = Bench::new();
    let mut executor = bench.open();
    if !executor.has_private_mounts() {
        eprintln!(
            "note: no mount namespaces here ({}); skipped",
            executor.isolation()
        );
        return;
    }
    assert!(executor.isolation().contains("private /dev/shm and /tmp"));
    let name = format!("weft-test-{}", std::process::id());
    // The work dir is beneath /tmp here (a tempdir): it stays reachable.
    executor.launch(&order(
        "c_private",
        shell(&format!(
            "echo left > /dev/shm/{name} && echo left > /tmp/{name} && \
             test -d \"$PWD\" && test -d \"$LOG_DIRS\" && ls -A /dev/shm | wc -l && \
             grep -c ' /tmp tmpfs .*size=131072k' /proc/self/mounts && \
             echo $$ && ls /proc | grep -c '^[0-9][0-9]*$' && tr -d '\\0' < /proc/1/cmdline && echo"
        )),
    ));
    let end = wait_for_end(&mut executor, "c_private", Duration::from_secs(10));
    assert_eq!((end.exit_status, end.diagnostics.as_str()), (0, ""));
    let stdout = executor
        .log_path("app_1", "c_private", LogStream::Stdout)
        .expect("path");
    // It saw only its own file in /dev/shm, a tmpfs of its memory
    // limit (128 MB) on /tmp, and only its own processes: the shell is
    // the second of its pid namespace (after the monitor's runner), and
    // /proc lists the two and `ls` (a pipe's `grep` may be there too).
    let seen = fs::read_to_string(stdout).expect("stdout");
    let lines: Vec<&str> = seen.lines().collect();
    assert_eq!(&lines[..3], ["1", "1", "2"], "{seen}");
    let processes: u32 = lines[3].parse().expect("a count");
    assert!((3..=4).contains(&processes), "{seen}");
    // Its first process shows nothing of the agent's command line.
    assert_eq!(lines[4], "weft-monitor", "{seen}");
    for dir in ["/dev/shm", "/tmp"] {
        assert!(
            !Path::new(dir).join(&name).exists(),
            "{dir}/{name} outlived it"
        );
    }
}

#[test]
fn a_containers_system_v_shared_memory_goes_with_it() {
    let bench = Bench::new();
    let mut executor = bench.open();
    if !executor.has_private_mounts() || Command::new("ipcmk").arg("-V").output().is_err() {
        eprintln!("note: no namespaces or no ipcmk here; skipped");
        return;
    }
    executor.launch(&order("c_ipc", shell("ipcmk -M 65536 | grep -o '[0-9]*$'")));
    let end = wait_for_end(&mut executor, "c_ipc", Duration::from_secs(10));
    assert_eq!(end.exit_status, 0, "{}", end.diagnostics);
    let stdout = executor
        .log_path("app_1", "c_ipc", LogStream::Stdout)
        .expect("path");
    let id = fs::read_to_string(stdout)
        .expect("stdout")
        .trim()
        .to_string();
    let host = Command::new("ipcs").arg("-m").output().expect("ipcs");
    let listed = String::from_utf8_lossy(&host.stdout);
    assert!(
        !listed.split_whitespace().any(|word| word == id),
        "its segment {id} is in the host's: {listed}"
    );
}

#[test]
fn a_container_has_at_most_its_pids_limit_of_processes() {
    let bench = Bench::new();
    let mut executor = bench.open();
    if !executor.isolation().contains("pids") {
        eprintln!(
            "note: no pids controller here ({}); skipped",
            executor.isolation()
        );
        return;
    }
    // 600 sleepers asked for, 512 allowed (the shell is one of them).
    executor.launch(&order(
        "c_forks",
        shell("n=0; for i in $(seq 600); do sleep 30 & n=$((n+1)); done 2>/dev/null; echo started"),
    ));
    let end = wait_for_end(&mut executor, "c_forks", Duration::from_secs(30));
    let stderr_or_status = format!("{} {}", end.exit_status, end.diagnostics);
    assert_ne!(
        end.exit_status, 0,
        "600 processes started: {stderr_or_status}"
    );
}

#[test]
fn logs_a_container_replaced_with_links_or_fifos_are_not_read() {
    let bench = Bench::new();
    let mut executor = bench.open();
    let secret = bench.dir.path().join("secret");
    fs::write(&secret, "the host's secret").expect("secret");
    executor.launch(&order(
        "c_link",
        shell(&format!(
            "echo out; rm stderr_link 2>/dev/null; cd \"$LOG_DIRS\" && rm stderr && ln -s {} stderr && exit 3",
            secret.display()
        )),
    ));
    let end = wait_for_end(&mut executor, "c_link", Duration::from_secs(3));
    assert_eq!(end.exit_status, 3);
    assert!(!end.diagnostics.contains("secret"), "{}", end.diagnostics);
    assert!(
        end.diagnostics.contains("no longer a regular file"),
        "{}",
        end.diagnostics
    );

    executor.launch(&order(
        "c_fifo",
        shell("cd \"$LOG_DIRS\" && rm stderr && mkfifo stderr && exit 4"),
    ));
    // Without O_NONBLOCK this would hang the agent: nobody writes.
    let end = wait_for_end(&mut executor, "c_fifo", Duration::from_secs(3));
    assert_eq!(end.exit_status, 4);
    assert!(
        end.diagnostics.contains("no longer a regular file"),
        "{}",
        end.diagnostics
    );
}

#[test]
fn without_cgroups_containers_still_run_and_die_as_process_groups() {
    let bench = Bench::new();
    let mut config = bench.config(RunAs::Agent);
    config.cgroup_name = "not/a/name".to_owned();
    let mut executor = Executor::open(config).expect("open");
    assert!(!executor.has_cgroups());
    assert!(
        executor
            .isolation()
            .starts_with("process groups only: the cgroup name"),
        "{}",
        executor.isolation()
    );
    executor.launch(&order(
        "c_group",
        shell("trap '' TERM; sleep 100 & echo $!; wait"),
    ));
    let stdout = executor
        .log_path("app_1", "c_group", LogStream::Stdout)
        .expect("path");
    let mut child = None;
    assert!(wait_until(Duration::from_secs(2), || {
        child = fs::read_to_string(&stdout)
            .ok()
            .and_then(|text| text.trim().parse::<u32>().ok());
        child.is_some()
    }));
    let leader = launched(&executor).into_values().next().expect("launched");
    let child = host_pid(leader, child.expect("child pid"));
    executor.kill("c_group", exit_status::PREEMPTED);
    let end = wait_for_end(&mut executor, "c_group", Duration::from_secs(3));
    assert_eq!(end.exit_status, exit_status::PREEMPTED);
    assert_eq!(
        end.diagnostics,
        "killed: SIGTERM, then SIGKILL after 250 ms"
    );
    assert!(wait_until(Duration::from_secs(2), || !is_alive(child)));
}

#[test]
fn an_unusable_work_dir_is_an_error_naming_it() {
    let bench = Bench::new();
    let file = bench.dir.path().join("file");
    fs::write(&file, "").expect("file");
    let mut config = bench.config(RunAs::Agent);
    config.work_dir = file.join("sub");
    let message = Executor::open(config).err().expect("refused").to_string();
    assert!(
        message.starts_with(&format!(
            "the work dir {} is not usable",
            file.join("sub").display()
        )),
        "{message}"
    );
}

#[test]
fn kill_all_now_ends_everything_at_once() {
    let bench = Bench::new();
    let mut executor = bench.open();
    executor.launch(&order("c_a", shell("trap '' TERM; sleep 100")));
    executor.launch(&order(
        "c_b",
        ContainerCommand::Argv(vec!["sleep".to_owned(), "100".to_owned()]),
    ));
    let pids: Vec<u32> = launched(&executor).into_values().collect();
    executor.kill_all_now();
    assert!(executor.running().is_empty());
    let ends = executor.poll();
    assert_eq!(ends.len(), 2);
    assert!(
        ends.iter()
            .all(|end| end.exit_status == exit_status::ABORTED)
    );
    assert!(pids.iter().all(|pid| !is_alive(*pid)));
}

#[test]
fn parses_proc_stat_and_tails() {
    let stat = "42 (a b) c) S 1 42 42 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 123456 1000 1 18446744073709551615";
    assert_eq!(
        parse_proc_stat(stat),
        Some(ProcStat {
            state: 'S',
            process_group: 42,
            start_ticks: 123_456
        })
    );
    assert_eq!(parse_proc_stat("42 (x"), None);
    assert_eq!(trim_partial_char(&[0x80, 0xa9, b'a']), "a");
    assert_eq!(trim_partial_char("é".as_bytes()), "é");
    assert!(check_id("id", &"a".repeat(257)).is_err());
    assert!(check_id("id", "container_1.2-x").is_ok());
    let root = tempfile::tempdir().expect("tempdir");
    let layout = Layout {
        work_dir: root.path().to_owned(),
        log_dir: root.path().to_owned(),
        private_root: root.path().to_owned(),
    };
    fs::create_dir_all(layout.private_dir("c")).expect("state dir");
    let exit_code = layout.private_dir("c").join("exitcode");
    for (text, code) in [
        ("3\n", Some(3)),
        ("3", None),
        ("", None),
        ("-105\n", None),
        ("256\n", None),
        ("x\n", None),
        ("7".repeat(1 << 20).as_str(), None),
    ] {
        fs::write(&exit_code, text).expect("write");
        assert_eq!(read_exit_code(&layout, "c"), code, "{text:?}");
    }
    // Under run-as = agent a container could put something there
    // instead of a code: not followed, and a FIFO does not block.
    fs::remove_file(&exit_code).expect("remove");
    std::os::unix::fs::symlink("/etc/hostname", &exit_code).expect("link");
    assert_eq!(read_exit_code(&layout, "c"), None);
    fs::remove_file(&exit_code).expect("remove");
    nix::unistd::mkfifo(&exit_code, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("fifo");
    assert_eq!(read_exit_code(&layout, "c"), None);
    assert!(ended_at(&layout, "c") <= now_ms());
}

/// A cgroup that cannot be removed (here a dir with a dir inside, as a
/// container could make in its own cgroup) waits before it is tried again,
/// and does not keep those queued after it from being removed, nor keep
/// `tidy` saying it was cut short.
#[test]
fn a_cgroup_that_cannot_be_removed_waits_and_holds_nothing_up() {
    let bench = Bench::new();
    let mut executor = bench.open();
    let stuck: Vec<PathBuf> = (0..3)
        .map(|i| bench.dir.path().join(format!("stuck-{i}")))
        .collect();
    for dir in &stuck {
        fs::create_dir_all(dir.join("inside")).unwrap();
    }
    let fine = bench.dir.path().join("fine");
    fs::create_dir(&fine).unwrap();
    executor
        .cgroups_to_remove
        .extend(stuck.iter().cloned().map(ContainerCgroup::at));
    executor
        .cgroups_to_remove
        .push(ContainerCgroup::at(fine.clone()));

    assert!(!executor.tidy(), "every cgroup was tried within the budget");
    assert!(
        !fine.exists(),
        "the removable cgroup behind the stuck ones is gone"
    );
    assert!(executor.cgroups_to_remove.is_empty());
    assert_eq!(executor.cgroups_to_retry.len(), 3);
    let due: Vec<Instant> = executor
        .cgroups_to_retry
        .iter()
        .map(|(_, due)| *due)
        .collect();
    assert!(due.iter().all(|due| *due > Instant::now()));
    // Not tried again before they are due.
    assert!(!executor.tidy());
    assert_eq!(
        executor
            .cgroups_to_retry
            .iter()
            .map(|(_, due)| *due)
            .collect::<Vec<_>>(),
        due
    );
    // Once the obstacle is gone, an unbudgeted pass (as at shutdown)
    // removes them, due or not.
    for dir in &stuck {
        fs::remove_dir(dir.join("inside")).unwrap();
    }
    assert!(!executor.remove_cgroups(None));
    assert!(executor.cgroups_to_retry.is_empty());
    assert!(stuck.iter().all(|dir| !dir.exists()));
}

/// What an older agent kept in a file each (`order.json`, `pid`) is still
/// recovered, and a record whose last line was torn (the agent died
/// writing it) is read up to it.
#[test]
fn older_agents_records_and_torn_lines_are_recovered() {
    let bench = Bench::new();
    let mut first = bench.open();
    first.launch(&order("c_legacy", shell("sleep 100")));
    first.launch(&order("c_torn", shell("sleep 100")));
    let pids = launched(&first);
    wait_for_set_ups(&mut first);
    drop(first); // as if killed with -9
    let layout_root = bench.dir.path().join("work/.weft/containers");
    // c_legacy as an older agent left it: a file for each fact.
    let legacy = layout_root.join("c_legacy");
    let text = fs::read_to_string(legacy.join(RECORD)).expect("record");
    for line in text.lines() {
        let line: serde_json::Value = serde_json::from_str(line).expect("a line");
        let (kind, value) = line.as_object().unwrap().iter().next().unwrap();
        let name = match kind.as_str() {
            "order" => "order.json",
            "pid" => "pid",
            other => panic!("unexpected {other}"),
        };
        fs::write(legacy.join(name), serde_json::to_vec(value).unwrap()).unwrap();
    }
    fs::remove_file(legacy.join(RECORD)).unwrap();
    // c_torn: an end half written.
    let mut torn = OpenOptions::new()
        .append(true)
        .open(layout_root.join("c_torn").join(RECORD))
        .unwrap();
    torn.write_all(br#"{"end":{"container_id":"c_torn","exit_st"#)
        .unwrap();
    drop(torn);

    let mut second = bench.open();
    let running: Vec<(String, u32)> = second
        .running()
        .into_iter()
        .map(|r| (r.container_id, r.pid))
        .collect();
    assert_eq!(
        running,
        [
            ("c_legacy".to_owned(), pids["c_legacy"]),
            ("c_torn".to_owned(), pids["c_torn"])
        ]
    );
    for id in ["c_legacy", "c_torn"] {
        second.kill(id, exit_status::KILLED_BY_APPMASTER);
    }
    let ends = wait_for_ends(&mut second, &["c_legacy", "c_torn"], Duration::from_secs(3));
    assert!(
        ends.values()
            .all(|e| e.exit_status == exit_status::KILLED_BY_APPMASTER)
    );
    // The older agent's dir is acknowledged and swept like any.
    second.forget("c_legacy");
    assert!(legacy.join(ACKNOWLEDGED).exists());
    fs::File::open(legacy.join(ACKNOWLEDGED))
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(3600))
        .unwrap();
    assert_eq!(second.sweep(Duration::from_secs(60)), 1);
    let logs = second
        .settings
        .layout
        .container_log_dir("app_1", "c_legacy");
    assert!(
        wait_until(Duration::from_secs(3), || !logs.exists()),
        "its logs go with it"
    );
}

/// A line appended after a torn one is whole; another container's end does
/// not hide this one's; a FIFO where the record goes is refused at once.
#[test]
fn records_survive_torn_lines_foreign_ends_and_fifos() {
    let root = tempfile::tempdir().expect("tempdir");
    let layout = Layout {
        work_dir: root.path().to_owned(),
        log_dir: root.path().to_owned(),
        private_root: root.path().to_owned(),
    };
    let dir = layout.private_dir("c");
    fs::create_dir_all(&dir).expect("state dir");
    let end = |id: &str, status: i32| ContainerEnd {
        container_id: id.to_owned(),
        exit_status: status,
        diagnostics: String::new(),
        finished_ms: 1,
        started_ms: None,
    };
    append_record(&dir, "end", &end("c", 3)).expect("append");
    fs::OpenOptions::new()
        .append(true)
        .open(dir.join(RECORD))
        .unwrap()
        .write_all(br#"{"pid":{"pid":12"#)
        .unwrap();
    append_record(&dir, "end", &end("other", 9)).expect("append");
    let status = || {
        Record::read(&layout, "c", RECORD)
            .end
            .map(|e| e.exit_status)
    };
    assert_eq!(status(), Some(3));
    append_record(&dir, "end", &end("c", 4)).expect("append");
    assert_eq!(status(), Some(4));

    let fifo = layout.private_dir("f");
    fs::create_dir_all(&fifo).expect("state dir");
    nix::unistd::mkfifo(
        &fifo.join(RECORD),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .expect("fifo");
    let started = std::time::Instant::now();
    assert!(append_record(&fifo, "end", &end("f", 1)).is_err());
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(Record::read(&layout, "f", RECORD).end.is_none());
}

#[test]
fn a_node_without_network_refuses_a_yarn_container_saying_why() {
    let bench = Bench::new();
    if !bench.open().has_private_mounts() {
        eprintln!("note: no namespaces here; skipped");
        return;
    }
    let mut config = bench.config(RunAs::Agent);
    config.own_network = true;
    let mut executor = Executor::open(config).expect("open");
    assert!(
        executor
            .isolation()
            .contains("network: a loopback of its own")
    );
    let mut yarn = order("c_yarn", shell("true"));
    yarn.yarn = Some(crate::protocol::node::YarnLaunch::default());
    executor.launch(&yarn);
    let end = wait_for_end(&mut executor, "c_yarn", Duration::from_secs(10));
    assert_eq!(end.exit_status, exit_status::INVALID);
    assert!(
        end.diagnostics.contains("needs the node's network"),
        "{}",
        end.diagnostics
    );
    // A plain command still runs there.
    executor.launch(&order("c_plain", shell("true")));
    let end = wait_for_end(&mut executor, "c_plain", Duration::from_secs(10));
    assert_eq!((end.exit_status, end.diagnostics.as_str()), (0, ""));
}

#[test]
fn the_log_monitor_kills_a_container_whose_logs_outgrow_the_limit() {
    let bench = Bench::new();
    let mut config = bench.config(RunAs::Agent);
    config.log_limit_bytes = 256 << 10;
    config.log_check_interval = Duration::from_millis(100);
    let mut executor = Executor::open(config).expect("open");
    executor.launch(&order(
        "c_big_logs",
        shell("head -c 2000000 /dev/urandom > \"$LOG_DIRS/big\"; sleep 30"),
    ));
    executor.launch(&order(
        "c_many_logs",
        shell("cd \"$LOG_DIRS\" && i=0; while [ $i -lt 1100 ]; do : > f$i; i=$((i+1)); done; sleep 30"),
    ));
    // Within the limit, with a link to / that is not followed.
    executor.launch(&order(
        "c_small_logs",
        shell("ln -s / \"$LOG_DIRS/root\"; echo fine; sleep 1"),
    ));
    let ends = wait_for_ends(
        &mut executor,
        &["c_big_logs", "c_many_logs", "c_small_logs"],
        Duration::from_secs(20),
    );
    for id in ["c_big_logs", "c_many_logs"] {
        let end = &ends[id];
        assert_eq!(
            end.exit_status,
            exit_status::KILLED_FOR_EXCESS_LOGS,
            "{id}: {end:?}"
        );
        assert!(
            end.diagnostics
                .contains("container log monitor's limit (262144 bytes"),
            "{id}: {}",
            end.diagnostics
        );
    }
    assert_eq!(
        ends["c_small_logs"].exit_status, 0,
        "{:?}",
        ends["c_small_logs"]
    );
}
