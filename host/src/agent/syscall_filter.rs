//! The seccomp filter a container's process runs under: system calls no
//! batch work needs that widen what the kernel exposes to a tenant —
//! creating or entering namespaces (a user namespace gives a tenant
//! root's powers over fresh mount, network and other namespaces, the
//! kernel's largest surface for privilege bugs), mounts, keyrings, BPF,
//! perf events, userfaultfd, io_uring, kernel modules and handles to files
//! by inode — fail with EPERM, as under Docker's default profile.
//!
//! The program is written out here rather than compiled by a seccomp
//! library: it is a straight list (each rule one comparison and one
//! return, no jumps beyond the next rule), it needs two answers in one
//! filter (EPERM, and ENOSYS for `clone3`, whose flags a filter cannot
//! read, so glibc falls back to `clone`, whose flags it can), and it must
//! refuse x86-64's x32 numbering, which rules keyed on syscall numbers
//! miss. A process of another architecture's calls (a 32-bit program) is
//! killed: its numbers mean other calls.

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

/// x86-64's x32 calls are numbered from this bit up.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

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
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_clock_adjtime,
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
    ];
    #[cfg(target_arch = "x86_64")]
    program.extend([
        jump(libc::BPF_JGE, X32_SYSCALL_BIT, 0, 1),
        answer(errno(libc::ENOSYS)),
    ]);
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
    program.push(answer(libc::SECCOMP_RET_ALLOW));
    program
}

/// Installs `program` on the calling thread (and what it starts from then
/// on): it needs `no_new_privs` or CAP_SYS_ADMIN. Only a system call, so
/// safe between fork and exec; -1 with errno set if the kernel refused it.
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
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0,
            &raw const fprog,
        )
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

    /// Runs `program` with its arguments under the filter (installed after
    /// `no_new_privs`, as for a container of another user).
    fn filtered(program: &str, args: &[&str]) -> std::process::Output {
        let filter = super::program().expect("written for this architecture");
        let mut command = Command::new(program);
        command.args(args);
        // SAFETY: only prctl and seccomp, both async-signal-safe.
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 || install(filter) == -1
                {
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
        // namespace, keyctl asks for a keyring's id), never with EPERM.
        let code = format!(
            "import ctypes\n\
             libc = ctypes.CDLL(None, use_errno=True)\n\
             def errno(result):\n    return ctypes.get_errno() if result == -1 else 0\n\
             print(errno(libc.unshare({user})))\n\
             print(errno(libc.unshare({net})))\n\
             print(errno(libc.mount(b'none', b'/nonexistent-weft', b'no-such-fs', 0, None)))\n\
             print(errno(libc.setns(0, 0)))\n\
             print(errno(libc.syscall({keyctl}, 0, -3, 0, 0, 0)))\n\
             print(errno(libc.syscall({bpf}, 0, 0, 0)))\n",
            user = libc::CLONE_NEWUSER,
            net = libc::CLONE_NEWNET,
            keyctl = libc::SYS_keyctl,
            bpf = libc::SYS_bpf,
        );
        let eperm = libc::EPERM.to_string();
        let said = python(&code);
        let refused: Vec<&str> = said.lines().collect();
        let calls = [
            "unshare(CLONE_NEWUSER)",
            "unshare(CLONE_NEWNET)",
            "mount",
            "setns",
            "keyctl",
            "bpf",
        ];
        assert_eq!(refused.len(), calls.len(), "{said}");
        for (call, errno) in calls.iter().zip(refused) {
            assert_eq!(errno, eperm, "{call} gave errno {errno}, not EPERM");
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
