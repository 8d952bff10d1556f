//! Launch preparation: a checked order's directories, identity, environment,
//! private mounts and cgroup, then the container's monitor spawned.

use super::*;

impl Settings {
    /// Checks an order, prepares the container's dirs and cgroup, and
    /// spawns it. `Err` is the diagnostic of a container that cannot run.
    pub(super) fn start(
        &self,
        order: &LaunchOrder,
        spawner: Option<&mut Spawner>,
    ) -> Result<ContainerProcess, String> {
        check_id("container id", &order.container_id)?;
        check_id("app id", &order.app_id)?;
        let container_id = order.container_id.as_str();
        let layout = &self.layout;
        let private_dir = layout.private_dir(container_id);
        if layout
            .container_log_dir(&order.app_id, container_id)
            .exists()
        {
            // Its end was acknowledged and forgotten: a container id runs
            // at most once on a node.
            return Err(format!(
                "container {container_id} already ran on this node; a container id is launched at most once"
            ));
        }
        // From here on the end of a refused order is recorded in this dir.
        fs::DirBuilder::new()
            .mode(0o700)
            .create(&private_dir)
            .map_err(|error| format!("cannot create {}: {error}", private_dir.display()))?;
        check_user(&order.user)?;
        check_command(&order.command)?;
        check_env(&order.env)?;
        if self.config.own_network && order.yarn.is_some() {
            // Its master could never reach the resource manager: say so
            // now rather than let its client retry for minutes.
            return Err(format!(
                "container {container_id} is a YARN application's, which needs the node's network to reach the resource manager and its other containers; this node gives containers none (weft.agent.container-network = none)"
            ));
        }
        // 0 would be no memory limit at all (cgroups.rs): never launched.
        if order.memory_mb == 0 || order.vcores == 0 {
            return Err(format!(
                "container {container_id} holds {} MB and {} vcores; a container needs at least 1 of each",
                order.memory_mb, order.vcores
            ));
        }
        let container_work_dir = layout.container_work_dir(&order.app_id, container_id);
        let identity = self.identity_for(&order.user, &container_work_dir)?;
        // Kept for recovery without the master's AMRMToken password: it is
        // in the container's own credentials, where only its user reads it.
        let mut kept = order.clone();
        if let Some(yarn) = &mut kept.yarn {
            yarn.amrm_password_hex.clear();
        }
        append_record(&private_dir, "order", &kept).map_err(|error| {
            format!(
                "cannot record the launch order in {}: {error}",
                private_dir.display()
            )
        })?;

        let owner = identity
            .switch_to
            .as_ref()
            .map(|(uid, gid, _)| (*uid, *gid));
        let exit_path = private_dir.join("exitcode");
        let exit_file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&exit_path)
            .map_err(|error| format!("cannot create {}: {error}", exit_path.display()))?;
        let container_log_dir = layout.container_log_dir(&order.app_id, container_id);
        // The user's alone (not their group's: users who share a primary
        // group must not read each other's work or logs).
        make_owned_dir(&container_work_dir, 0o700, owner)?;
        // The logs are made in the dir while it is still the agent's, and
        // given away by handle: once the dir is the user's, another of
        // their containers could put a link where a path points.
        make_owned_dir(&container_log_dir, 0o700, None)?;
        let stdout = open_log(&container_log_dir.join("stdout"), owner)?;
        let stderr = open_log(&container_log_dir.join("stderr"), owner)?;
        chown(&container_log_dir, owner)?;

        let cgroup = match &self.cgroups {
            Ok(cgroups) => Some(
                cgroups
                    .create(
                        container_id,
                        order.memory_mb,
                        order.vcores,
                        self.config.pids_limit,
                    )
                    .map_err(|error| format!("cannot set up its cgroup: {error}"))?,
            ),
            Err(_) => None,
        };
        let join_files = match &cgroup {
            Some(cgroup) => cgroup.open_join_files().map_err(|error| {
                let _ = cgroup.remove();
                format!("cannot set up its cgroup: {error}")
            })?,
            None => Vec::new(),
        };

        let argv = match (&order.yarn, &order.command) {
            // YARN's launch: this binary, inside the container, localizes and
            // execs the launch script (agent/yarn_launch.rs). /proc/self/exe
            // is the binary even where its path is hidden from containers.
            (Some(yarn), command) => {
                write_yarn_launch(
                    order,
                    yarn,
                    command,
                    &container_work_dir,
                    &container_log_dir,
                    owner,
                )?;
                vec!["/proc/self/exe".to_owned(), "container-launch".to_owned()]
            }
            (None, ContainerCommand::Argv(argv)) => argv.clone(),
            (None, ContainerCommand::Shell(line)) => {
                vec!["/bin/sh".to_owned(), "-c".to_owned(), line.clone()]
            }
        };
        let env = self.container_env(order, &identity, &container_work_dir, &container_log_dir);
        let private_mounts = match &self.private_mounts {
            Ok(keep) => Some(monitor::PrivateMounts {
                size_mb: order.memory_mb,
                own_network: self.config.own_network,
                keep: keep
                    .iter()
                    .map(|dir| {
                        nix::fcntl::open(
                            dir.as_path(),
                            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
                            nix::sys::stat::Mode::empty(),
                        )
                        .map(|fd| (fd, dir.clone()))
                        .map_err(|errno| format!("cannot open {}: {errno}", dir.display()))
                    })
                    .collect::<Result<_, _>>()?,
            }),
            Err(_) => None,
        };
        let launch = monitor::Launch {
            argv: &argv,
            env,
            work_dir: &container_work_dir,
            stdout,
            stderr,
            join_files,
            switch_to: identity.switch_to,
            exit_file,
            private_mounts,
            syscall_filter: self.syscall_filter.is_ok(),
        };
        let started_ms = now_ms();
        let (pid, setting_up) = monitor::spawn(launch, spawner).map_err(|error| {
            if let Some(cgroup) = &cgroup {
                // A spawner that stopped answering may have forked it.
                cgroup.kill_all();
                let _ = cgroup.remove();
            }
            format!("cannot start the process: {error}")
        })?;
        // Right after spawn the child exists (at worst as a zombie, which
        // nobody but us can reap), so its start time is readable.
        let start_ticks = read_proc_stat(pid).map_or(0, |stat| stat.start_ticks);
        let record = PidRecord {
            pid,
            start_ticks,
            started_ms,
        };
        if let Err(error) = append_record(&private_dir, "pid", &record) {
            tracing::warn!(container = %container_id, %error, "cannot record the pid; a restarted agent will not find this container");
        }
        // Our child, not yet reaped, so the pid is certainly the monitor's.
        let end_signal = i32::try_from(pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
            .and_then(|pid| {
                rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok()
            });
        Ok(ContainerProcess {
            container_id: container_id.to_owned(),
            app_id: order.app_id.clone(),
            resources: order_resources(order),
            pid,
            start_ticks,
            started_ms,
            ours: true,
            cgroup,
            kill: None,
            ended_at: None,
            end_signal,
            setting_up: Some(setting_up),
            set_up_failure: None,
        })
    }

    /// The user a container of `user` runs as, or why it may not run.
    /// `work_dir` is the container's, the home of a shared local user.
    pub(super) fn identity_for(&self, user: &str, work_dir: &Path) -> Result<Identity, String> {
        match &self.config.run_as {
            RunAs::Agent => Ok(Identity {
                name: self.agent_user.clone(),
                home: std::env::var_os("HOME")
                    .map_or_else(|| self.layout.work_dir.clone(), PathBuf::from),
                switch_to: None,
            }),
            RunAs::Submitter {
                banned_users,
                min_user_id,
            } => switch_identity(user, banned_users, *min_user_id),
            RunAs::LocalUser {
                user: local,
                banned_users,
                min_user_id,
            } => {
                // Its home is shared by every container (often /nonexistent).
                let identity = switch_identity(local, banned_users, *min_user_id)?;
                Ok(Identity {
                    home: work_dir.to_owned(),
                    ..identity
                })
            }
        }
    }

    /// The container's environment: a few of the agent's variables, then
    /// the order's, then the agent's own (these win), as YARN's sanitizeEnv.
    pub(super) fn container_env(
        &self,
        order: &LaunchOrder,
        identity: &Identity,
        work_dir: &Path,
        log_dir: &Path,
    ) -> BTreeMap<OsString, OsString> {
        let mut env = BTreeMap::new();
        env.insert(
            "PATH".into(),
            std::env::var_os("PATH").unwrap_or_else(|| monitor::DEFAULT_PATH.into()),
        );
        for inherited in ["LANG", "TZ"] {
            if let Some(value) = std::env::var_os(inherited) {
                env.insert(inherited.into(), value);
            }
        }
        env.insert("HOME".into(), identity.home.clone().into_os_string());
        for (key, value) in &order.env {
            env.insert(key.into(), value.into());
        }
        let own: [(&str, &OsStr); 8] = [
            ("CONTAINER_ID", order.container_id.as_ref()),
            ("APP_ID", order.app_id.as_ref()),
            ("WEFT_USER", order.user.as_ref()),
            ("USER", identity.name.as_ref()),
            ("LOGNAME", identity.name.as_ref()),
            ("PWD", work_dir.as_os_str()),
            ("LOG_DIRS", log_dir.as_os_str()),
            ("LOCAL_DIRS", work_dir.as_os_str()),
        ];
        for (key, value) in own {
            env.insert(key.into(), value.to_owned());
        }
        env
    }
}

/// Writes a YARN container's launch into its (new, still empty) directory
/// for `weft container-launch` to read there as the container's user.
fn write_yarn_launch(
    order: &LaunchOrder,
    yarn: &crate::protocol::node::YarnLaunch,
    command: &ContainerCommand,
    work_dir: &Path,
    log_dir: &Path,
    owner: Option<(Uid, Gid)>,
) -> Result<(), String> {
    yarn.check()?;
    let command_line = match command {
        ContainerCommand::Shell(line) => line.clone(),
        ContainerCommand::Argv(argv) => argv.join(" "),
    };
    let spec = crate::agent::yarn_launch::LaunchSpec {
        command_line,
        env: order.env.clone(),
        yarn: crate::agent::yarn_launch::with_amrm_token(yarn, &order.container_id)?,
        log_dir: log_dir.to_owned(),
        app_id: order.app_id.clone(),
    };
    let path = work_dir.join(crate::agent::yarn_launch::SPEC_FILE);
    let bytes = serde_json::to_vec(&spec).map_err(|e| format!("cannot write the launch: {e}"))?;
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path)
        .map_err(|error| format!("cannot create {}: {error}", path.display()))?;
    file.write_all(&bytes)
        .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
    if let Some((uid, gid)) = owner {
        nix::unistd::fchown(&file, Some(uid), Some(gid))
            .map_err(|errno| format!("cannot give {} to its user: {errno}", path.display()))?;
    }
    Ok(())
}

/// The account `user` runs as, if container-executor.cfg's rules allow it:
/// not banned, not below the minimum uid, existing on this node.
pub fn switch_identity(
    user: &str,
    banned_users: &[String],
    min_user_id: u32,
) -> Result<Identity, String> {
    if banned_users.iter().any(|banned| banned == user) {
        return Err(format!(
            "user {user} is banned from running containers on this node"
        ));
    }
    let account = match User::from_name(user) {
        Ok(Some(account)) => account,
        Ok(None) => return Err(format!("user {user} does not exist on this node")),
        Err(error) => return Err(format!("cannot look up user {user}: {error}")),
    };
    if account.uid.as_raw() < min_user_id {
        return Err(format!(
            "user {user} has uid {}, below this node's minimum {min_user_id}",
            account.uid
        ));
    }
    let name = CString::new(user).map_err(|_| format!("user {user:?} contains a NUL byte"))?;
    let groups = nix::unistd::getgrouplist(&name, account.gid)
        .map_err(|error| format!("cannot look up the groups of user {user}: {error}"))?;
    Ok(Identity {
        name: account.name,
        home: account.dir,
        switch_to: Some((account.uid, account.gid, groups)),
    })
}

/// Creates `path` (and parents) and checks it can be written, returning
/// its absolute form (containers run elsewhere, so relative paths won't do).
pub(super) fn prepare_dir(role: &'static str, path: &Path) -> Result<PathBuf, ExecutorError> {
    let fail = |source| ExecutorError::Dir {
        role,
        path: path.to_owned(),
        source,
    };
    fs::create_dir_all(path).map_err(fail)?;
    let path = fs::canonicalize(path).map_err(fail)?;
    let probe = path.join(format!(".weft-write-probe-{}", std::process::id()));
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&probe)
        .map_err(fail)?;
    fs::remove_file(&probe).map_err(fail)?;
    Ok(path)
}

/// Whether containers can have their own /dev/shm and /tmp here (root, and
/// mount namespaces that work, and network namespaces if `own_network`:
/// see [`monitor::probe_private_mounts`]); if
/// so, which of `dirs` lie beneath either and must be bound back into each
/// container's view.
pub(super) fn plan_private_mounts(
    dirs: &[&Path],
    own_network: bool,
) -> Result<Vec<PathBuf>, String> {
    if !nix::unistd::geteuid().is_root() {
        return Err("mount namespaces need the agent to run as root".into());
    }
    monitor::probe_private_mounts(own_network)?;
    let mount_points = monitor::private_mount_points(own_network);
    let points: Vec<PathBuf> = mount_points
        .iter()
        .map(|point| fs::canonicalize(point).unwrap_or_else(|_| PathBuf::from(point)))
        .collect();
    let mut keep = Vec::new();
    for dir in dirs {
        for (point, canonical) in mount_points.iter().zip(&points) {
            // Written under the mount point's own name, which the
            // container's namespace mounts over.
            if let Ok(below) = dir.strip_prefix(canonical) {
                if below.as_os_str().is_empty() {
                    return Err(format!(
                        "the agent's dir {} is {point} itself",
                        dir.display()
                    ));
                }
                keep.push(Path::new(point).join(below));
            }
        }
    }
    Ok(keep)
}

/// Whether containers can run under the system call filter here: asked
/// for, written for this architecture, and taken by the kernel (probed).
/// Installing it sets `no_new_privs`, so only a root agent's containers
/// get it: containers of a non-root agent's own user would lose the
/// setuid programs that user may rely on.
pub(super) fn plan_syscall_filter(wanted: bool) -> Result<(), String> {
    if !wanted {
        return Err("off (weft.agent.syscall-filter = false)".into());
    }
    if !nix::unistd::geteuid().is_root() {
        return Err("containers run as the agent's own user, which is not root".into());
    }
    syscall_filter::probe()
}

/// Containers run as other users enter their working and log dirs below
/// the agent's, so every directory above must let others pass (o+x);
/// without, they cannot start.
pub(super) fn warn_unless_traversable(dir: &Path) {
    for ancestor in dir.ancestors() {
        if let Ok(metadata) = fs::metadata(ancestor)
            && metadata.permissions().mode() & 0o001 == 0
        {
            tracing::warn!(
                dir = %ancestor.display(),
                "other users cannot traverse this directory, so containers run as other users cannot enter their dirs below it"
            );
            return;
        }
    }
}

/// Creates `dir` (its parents with the usual modes) with `mode`, owned by
/// `owner` when the container runs as another user.
pub(super) fn make_owned_dir(
    dir: &Path,
    mode: u32,
    owner: Option<(Uid, Gid)>,
) -> Result<(), String> {
    let fail = |error: io::Error| format!("cannot create {}: {error}", dir.display());
    if let Some(parent) = dir.parent() {
        fs::create_dir_all(parent).map_err(fail)?;
    }
    match fs::DirBuilder::new().mode(mode).create(dir) {
        Ok(()) => {}
        // Only a real directory, never a link to one (chown would follow it).
        Err(error)
            if error.kind() == io::ErrorKind::AlreadyExists
                && fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) => {}
        Err(error) => return Err(fail(error)),
    }
    chown(dir, owner)
}

/// A new log file (never an existing one, nor through a link), given to
/// `owner` by its handle.
pub(super) fn open_log(path: &Path, owner: Option<(Uid, Gid)>) -> Result<File, String> {
    let file = OpenOptions::new()
        .append(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|error| format!("cannot open {}: {error}", path.display()))?;
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::fchown(&file, Some(uid.as_raw()), Some(gid.as_raw()))
            .map_err(|error| format!("cannot give {} to uid {uid}: {error}", path.display()))?;
    }
    Ok(file)
}

pub(super) fn chown(path: &Path, owner: Option<(Uid, Gid)>) -> Result<(), String> {
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::chown(path, Some(uid.as_raw()), Some(gid.as_raw()))
            .map_err(|error| format!("cannot give {} to uid {uid}: {error}", path.display()))?;
    }
    Ok(())
}

/// What a launch order gives its container.
pub(super) fn order_resources(order: &LaunchOrder) -> crate::resources::Resources {
    crate::resources::Resources::new(order.memory_mb, order.vcores, order.gpus)
}
