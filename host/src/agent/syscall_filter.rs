//! The seccomp filter a container's process runs under: system calls no
//! batch work needs that widen what the kernel exposes to a tenant —
//! creating or entering namespaces (a user namespace gives a tenant
//! root's powers over fresh mount, network and other namespaces, the
//! kernel's largest surface for privilege bugs), mounts, keyrings, BPF,
//! perf events, userfaultfd, io_uring, kernel modules and handles to files
//! by inode — fail with EPERM, as under Docker's default profile; and
//! vsock sockets (a VM's channel to its hypervisor, which no network
//! namespace covers) fail with EAFNOSUPPORT.
//!
//! Calls newer than this filter knows (numbered above [`LAST_KNOWN`])
//! answer ENOSYS, as on a kernel that predates them, so programs fall
//! back: a call the kernel adds later (another way to mount, say) is
//! allowed only once it has been looked at here. This also refuses
//! x86-64's x32 numbering, which rules keyed on syscall numbers miss.
//!
//! It is not a boundary for a container that runs as root (a root agent
//! with `weft.agent.run-as = agent`, simple mode): root owns the host's
//! files, /proc/sys among them, whatever its system calls.
//!
//! The program is written out here rather than compiled by a seccomp
//! library: it is a straight list (each rule one comparison and one
//! return, no jumps beyond the next rule), it needs two answers in one
//! filter (EPERM, and ENOSYS for `clone3`, whose flags a filter cannot
//! read, so glibc falls back to `clone`, whose flags it can, and for calls
//! it does not know), and it must refuse numbers above any it knows. A
//! process of another architecture's calls (a 32-bit program) is killed
//! (SIGSYS): its numbers mean other calls.

#![allow(
    unsafe_code,
    reason = "installing a seccomp filter is a raw system call, made after fork"
)]
#![cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code, reason = "no filter is written for this architecture")
)]

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
use std::sync::LazyLock;

use libc::sock_filter;

/// The offsets of `seccomp_data`'s fields the program reads.
const NR_OFFSET: u32 = 0;
const ARCH_OFFSET: u32 = 4;
/// The low 32 bits of the first argument (little-endian targets only),
/// where `clone` and `unshare` take their flags.
const FIRST_ARG_LOW_OFFSET: u32 = 16;

/// `AUDIT_ARCH_*` of the architectures the filter is written for: the ELF
/// machine, 64-bit and little-endian.
#[cfg(target_arch = "x86_64")]
const NATIVE_ARCH: u32 = 62 | 0x8000_0000 | 0x4000_0000;
#[cfg(target_arch = "aarch64")]
const NATIVE_ARCH: u32 = 183 | 0x8000_0000 | 0x4000_0000;

/// The newest call this filter has been written with in mind: `mseal`.
/// Calls added since 5.1 are numbered alike on every architecture.
const LAST_KNOWN: u32 = 462;

/// `quotactl_fd`, which libc does not name on every architecture.
const SYS_QUOTACTL_FD: libc::c_long = 443;

/// The namespace flags of `clone`; its low byte is the exit signal, so
/// `CLONE_NEWTIME` (0x80) cannot be asked for there.
const CLONE_NAMESPACES: u32 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWCGROUP
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET) as u32;

/// `unshare`'s namespace flags: `clone`'s and the time namespace.
const UNSHARE_NAMESPACES: u32 = CLONE_NAMESPACES | libc::CLONE_NEWTIME as u32;

/// Calls refused whatever their arguments.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const REFUSED: &[libc::c_long] = &[
    // Namespaces other processes made.
    libc::SYS_setns,
    // Mounts, old and new API, and changing the root.
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    // Keyrings: shared by every process of a uid, so by its containers.
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_keyctl,
    // Kernel surfaces with a history of privilege bugs.
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    // Files by handle, past the directories' permissions ("shocker").
    libc::SYS_open_by_handle_at,
    // The kernel itself.
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_acct,
    libc::SYS_syslog,
    libc::SYS_quotactl,
    SYS_QUOTACTL_FD,
    // Setting the clocks (reading them through clock_adjtime, as glibc's
    // ntp_gettime does, is left: setting needs CAP_SYS_TIME anyway).
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_iopl,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_ioperm,
];

/// The filter's program, built once (call it before any fork that
/// installs it); none where this build has no filter for its architecture.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub fn program() -> Option<&'static [sock_filter]> {
    static PROGRAM: LazyLock<Vec<sock_filter>> = LazyLock::new(build);
    Some(&PROGRAM)
}

/// The filter's program: none on this architecture.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn program() -> Option<&'static [sock_filter]> {
    None
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn build() -> Vec<sock_filter> {
    let mut program = vec![
        load(ARCH_OFFSET),
        jump_if_equal(NATIVE_ARCH, 1, 0),
        answer(libc::SECCOMP_RET_KILL_PROCESS),
        load(NR_OFFSET),
        // Newer than this filter, or x32's numbering (from 0x4000_0000).
        jump(libc::BPF_JGT, LAST_KNOWN, 0, 1),
        answer(errno(libc::ENOSYS)),
    ];
    for &call in REFUSED {
        program.extend([jump_if_equal(call as u32, 0, 1), answer(errno(libc::EPERM))]);
    }
    program.extend([
        jump_if_equal(libc::SYS_clone3 as u32, 0, 1),
        answer(errno(libc::ENOSYS)),
    ]);
    for (call, namespaces) in [
        (libc::SYS_clone, CLONE_NAMESPACES),
        (libc::SYS_unshare, UNSHARE_NAMESPACES),
    ] {
        // Not this call: past its four instructions to the next rule.
        program.extend([
            jump_if_equal(call as u32, 0, 4),
            load(FIRST_ARG_LOW_OFFSET),
            jump(libc::BPF_JSET, namespaces, 0, 1),
            answer(errno(libc::EPERM)),
            answer(libc::SECCOMP_RET_ALLOW),
        ]);
    }
    program.extend([
        jump_if_equal(libc::SYS_socket as u32, 0, 4),
        load(FIRST_ARG_LOW_OFFSET),
        jump_if_equal(libc::AF_VSOCK as u32, 0, 1),
        answer(errno(libc::EAFNOSUPPORT)),
        answer(libc::SECCOMP_RET_ALLOW),
    ]);
    program.push(answer(libc::SECCOMP_RET_ALLOW));
    program
}

/// Installs `program` on the calling thread (and what it starts from then
/// on), after setting `no_new_privs` (which a filter needs unless the
/// caller has CAP_SYS_ADMIN). Only system calls, so safe between fork and
/// exec; -1 with errno set if the kernel refused either.
///
/// # Safety
/// `program` must be a valid classic BPF seccomp program.
pub unsafe fn install(program: &[sock_filter]) -> libc::c_long {
    let Ok(len) = u16::try_from(program.len()) else {
        return -1;
    };
    let fprog = libc::sock_fprog {
        len,
        filter: program.as_ptr().cast_mut(),
    };
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 {
            return -1;
        }
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0,
            &raw const fprog,
        )
    }
}

/// Whether the kernel takes the filter here: a forked child installs it
/// and ends (as a container's monitor would, before every launch); if it
/// cannot, why.
pub fn probe() -> Result<(), String> {
    let program = program().ok_or("none is written for this architecture")?;
    // SAFETY: the child makes system calls on memory prepared above and
    // ends with _exit.
    let pid = match unsafe { libc::fork() } {
        -1 => return Err(format!("cannot fork: {}", std::io::Error::last_os_error())),
        0 => unsafe {
            let code = match install(program) {
                -1 => (*libc::__errno_location()).clamp(1, 255),
                _ => 0,
            };
            libc::_exit(code)
        },
        pid => pid,
    };
    let mut status = 0;
    // SAFETY: waitpid on our own child, with a valid pointer.
    while unsafe { libc::waitpid(pid, &mut status, 0) } == -1 {
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return Err("lost the probe's child".into());
        }
    }
    match libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)) {
        Some(0) => Ok(()),
        Some(errno) => Err(format!(
            "the kernel refuses it: {}",
            std::io::Error::from_raw_os_error(errno)
        )),
        None => Err("the probe was killed".into()),
    }
}

fn errno(code: libc::c_int) -> u32 {
    libc::SECCOMP_RET_ERRNO | (code as u32 & libc::SECCOMP_RET_DATA)
}

fn load(offset: u32) -> sock_filter {
    statement((libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16, offset)
}

fn answer(action: u32) -> sock_filter {
    statement((libc::BPF_RET | libc::BPF_K) as u16, action)
}

fn jump_if_equal(value: u32, if_true: u8, if_false: u8) -> sock_filter {
    jump(libc::BPF_JEQ, value, if_true, if_false)
}

/// A conditional jump on the accumulator against `value`, skipping
/// `if_true` or `if_false` instructions.
fn jump(condition: u32, value: u32, if_true: u8, if_false: u8) -> sock_filter {
    sock_filter {
        code: (libc::BPF_JMP | condition | libc::BPF_K) as u16,
        jt: if_true,
        jf: if_false,
        k: value,
    }
}

fn statement(code: u16, k: u32) -> sock_filter {
    sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

#[cfg(all(test, any(target_arch = "x86_64", target_arch = "aarch64")))]
mod tests {
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    use super::*;

    /// Runs `program` with its arguments under the filter.
    fn filtered(program: &str, args: &[&str]) -> std::process::Output {
        let filter = super::program().expect("written for this architecture");
        let mut command = Command::new(program);
        command.args(args);
        // SAFETY: only prctl and seccomp, both async-signal-safe.
        unsafe {
            command.pre_exec(move || {
                if install(filter) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        command.output().expect("runs")
    }

    /// A Python snippet's stdout under the filter.
    fn python(code: &str) -> String {
        let output = filtered("python3", &["-c", code]);
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).expect("utf-8")
    }

    #[test]
    fn namespaces_mounts_and_keyrings_are_refused() {
        // Each call as root without the filter would succeed or fail
        // otherwise (the mount names no filesystem type, setns no
        // namespace, keyctl asks for a keyring's id, open_tree_attr is
        // given no attributes), never with the errno expected.
        let code = format!(
            "import ctypes\n\
             libc = ctypes.CDLL(None, use_errno=True)\n\
             def errno(result):\n    return ctypes.get_errno() if result == -1 else 0\n\
             print(errno(libc.unshare({user})))\n\
             print(errno(libc.unshare({net})))\n\
             print(errno(libc.mount(b'none', b'/nonexistent-weft', b'no-such-fs', 0, None)))\n\
             print(errno(libc.setns(0, 0)))\n\
             print(errno(libc.syscall({keyctl}, 0, -3, 0, 0, 0)))\n\
             print(errno(libc.syscall({bpf}, 0, 0, 0)))\n\
             print(errno(libc.syscall(467, -100, b'/', 1, None, 0)))\n\
             print(errno(libc.syscall({x32_getpid})))\n\
             print(0 if libc.ntp_gettime(ctypes.create_string_buffer(256)) >= 0 else ctypes.get_errno())\n\
             print(errno(libc.socket({vsock}, 1, 0)))\n\
             print(0 if libc.socket(1, 1, 0) >= 0 else ctypes.get_errno())\n",
            user = libc::CLONE_NEWUSER,
            net = libc::CLONE_NEWNET,
            keyctl = libc::SYS_keyctl,
            bpf = libc::SYS_bpf,
            x32_getpid = 0x4000_0000 | libc::SYS_getpid,
            vsock = libc::AF_VSOCK,
        );
        let said = python(&code);
        let answers: Vec<&str> = said.lines().collect();
        let (eperm, enosys) = (libc::EPERM.to_string(), libc::ENOSYS.to_string());
        let eafnosupport = libc::EAFNOSUPPORT.to_string();
        // Calls newer than the filter (open_tree_attr, 467) and x32's
        // numbering answer ENOSYS; reading the clock through clock_adjtime
        // (ntp_gettime) is left.
        let expected = [
            ("unshare(CLONE_NEWUSER)", eperm.as_str()),
            ("unshare(CLONE_NEWNET)", &eperm),
            ("mount", &eperm),
            ("setns", &eperm),
            ("keyctl", &eperm),
            ("bpf", &eperm),
            ("open_tree_attr", &enosys),
            ("x32 getpid", &enosys),
            ("ntp_gettime", "0"),
            ("socket(AF_VSOCK)", &eafnosupport),
            ("socket(AF_UNIX)", "0"),
        ];
        assert_eq!(answers.len(), expected.len(), "{said}");
        for ((call, wanted), errno) in expected.iter().zip(answers) {
            assert_eq!(errno, *wanted, "{call} gave errno {errno}");
        }
    }

    #[test]
    fn processes_threads_and_harmless_unshares_still_work() {
        // fork and posix_spawn (clone3 refused with ENOSYS: glibc falls
        // back to clone), threads, and an unshare of no namespace.
        let said = python(
            "import ctypes, os, subprocess, threading\n\
             libc = ctypes.CDLL(None, use_errno=True)\n\
             print(subprocess.run(['/bin/sh', '-c', 'echo child'], capture_output=True).stdout.decode().strip())\n\
             seen = []\n\
             thread = threading.Thread(target=lambda: seen.append('thread'))\n\
             thread.start(); thread.join()\n\
             print(seen[0])\n\
             print(libc.unshare(0x200))\n",
        );
        assert_eq!(said, "child\nthread\n0\n");
        let unshare = filtered("unshare", &["--user", "--map-root-user", "true"]);
        assert!(!unshare.status.success(), "{unshare:?}");
    }

    #[test]
    fn every_jump_lands_inside_the_program() {
        let program = super::program().expect("written for this architecture");
        for (at, instruction) in program.iter().enumerate() {
            // The instruction class is the code's low three bits.
            if instruction.code & 0x07 == libc::BPF_JMP as u16 {
                let furthest = at + 1 + usize::from(instruction.jt.max(instruction.jf));
                assert!(furthest < program.len(), "instruction {at} jumps out");
            }
        }
        let last = program.last().expect("not empty");
        assert_eq!(last.code, (libc::BPF_RET | libc::BPF_K) as u16);
        assert_eq!(last.k, libc::SECCOMP_RET_ALLOW);
    }
}
