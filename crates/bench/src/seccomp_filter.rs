//! The seccomp-BPF programs `interpose.seccomp` installs, and an emulator of classic BPF that
//! says what the kernel will do with each: which action a call gets, how many instructions it
//! runs on the way, and whether the kernel's per-call-number action cache (Linux ≥ 5.11,
//! `seccomp_cache_prepare`) answers it without running the filter at all.
//!
//! - [`chain`]: a filter of exactly `len` instructions that runs every one of them and allows
//!   everything; [`Load::Argument`] makes each load read the call's first argument (which the
//!   cache cannot know in advance, so the filter runs on every call), [`Load::Number`] the call's
//!   number (which it can: the kernel proves the answer constant and caches it).
//! - [`answer_getppid`]: getppid answered with an action (an error, or the user-notification
//!   listener), everything else allowed.
//! - [`container_default`]: a container runtime's default allow-list — the x86_64 calls Docker's
//!   default profile (moby/profiles, `seccomp/default.json`, commit cd3bed8 of 2026-06-30)
//!   allows without conditions, and its argument rules for `socket` (address families),
//!   `personality` and `clone` (no namespace flags) — every other call failing with `EPERM`,
//!   compiled to BPF by `seccompiler`.
//!
//! The emulator follows the kernel's rules: the checker's (`bpf_check_classic`, forward jumps,
//! the last instruction a return) and the cache's (`seccomp_is_const_allow`: only the number
//! and the architecture are known; any other load, or an instruction outside its small set,
//! makes the answer unknowable and the call uncached).

use sys::seccomp::{Instruction, Program, action, data};

const LD_W_ABS: u16 = 0x20;
const JMP_JA: u16 = 0x05;
const JMP_JEQ_K: u16 = 0x15;
const JMP_JGT_K: u16 = 0x25;
const JMP_JGE_K: u16 = 0x35;
const JMP_JSET_K: u16 = 0x45;
const ALU_AND_K: u16 = 0x54;
const RET_K: u16 = 0x06;
/// `AUDIT_ARCH_X86_64`.
pub const ARCH_X86_64: u32 = 0xc000_003e;

fn stmt(code: u16, k: u32) -> Instruction {
    Instruction { code, jt: 0, jf: 0, k }
}

/// What a [`chain`]'s loads read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Load {
    /// The call's first argument (low word): the cache cannot answer.
    Argument,
    /// The call's number: the cache answers.
    Number,
}

/// A filter of `len` instructions (at least 1), all run on every call: loads alternating with
/// compares that go on either way, then `return ALLOW`.
pub fn chain(len: usize, load: Load) -> Program {
    let offset = match load {
        Load::Argument => data::arg_low(0),
        Load::Number => data::NR,
    };
    let mut p: Program = (0..len.saturating_sub(1))
        .map(|i| {
            if i % 2 == 0 {
                stmt(LD_W_ABS, offset)
            } else {
                Instruction { code: JMP_JEQ_K, jt: 0, jf: 0, k: 0x5eed_0000 + i as u32 }
            }
        })
        .collect();
    p.push(stmt(RET_K, action::ALLOW));
    p
}

/// getppid answered with `answer` (an action and its data), everything else allowed.
pub fn answer_getppid(answer: u32) -> Program {
    vec![
        stmt(LD_W_ABS, data::NR),
        Instruction { code: JMP_JEQ_K, jt: 0, jf: 1, k: libc::SYS_getppid as u32 },
        stmt(RET_K, answer),
        stmt(RET_K, action::ALLOW),
    ]
}

/// The calls Docker's default profile allows on x86_64 without conditions (see the module doc).
static CONTAINER_ALLOW: &[i64] = &[
    libc::SYS_accept,
    libc::SYS_accept4,
    libc::SYS_access,
    libc::SYS_adjtimex,
    libc::SYS_alarm,
    libc::SYS_arch_prctl,
    libc::SYS_bind,
    libc::SYS_brk,
    libc::SYS_capget,
    libc::SYS_capset,
    libc::SYS_chdir,
    libc::SYS_chmod,
    libc::SYS_chown,
    libc::SYS_clock_adjtime,
    libc::SYS_clock_getres,
    libc::SYS_clock_gettime,
    libc::SYS_clock_nanosleep,
    libc::SYS_close,
    libc::SYS_close_range,
    libc::SYS_connect,
    libc::SYS_copy_file_range,
    libc::SYS_creat,
    libc::SYS_dup,
    libc::SYS_dup2,
    libc::SYS_dup3,
    libc::SYS_epoll_create,
    libc::SYS_epoll_create1,
    libc::SYS_epoll_ctl,
    libc::SYS_epoll_ctl_old,
    libc::SYS_epoll_pwait,
    libc::SYS_epoll_pwait2,
    libc::SYS_epoll_wait,
    libc::SYS_epoll_wait_old,
    libc::SYS_eventfd,
    libc::SYS_eventfd2,
    libc::SYS_execve,
    libc::SYS_execveat,
    libc::SYS_exit,
    libc::SYS_exit_group,
    libc::SYS_faccessat,
    libc::SYS_faccessat2,
    libc::SYS_fadvise64,
    libc::SYS_fallocate,
    libc::SYS_fanotify_mark,
    libc::SYS_fchdir,
    libc::SYS_fchmod,
    libc::SYS_fchmodat,
    libc::SYS_fchmodat2,
    libc::SYS_fchown,
    libc::SYS_fchownat,
    libc::SYS_fcntl,
    libc::SYS_fdatasync,
    libc::SYS_fgetxattr,
    libc::SYS_flistxattr,
    libc::SYS_flock,
    libc::SYS_fork,
    libc::SYS_fremovexattr,
    libc::SYS_fsetxattr,
    libc::SYS_fstat,
    libc::SYS_fstatfs,
    libc::SYS_fsync,
    libc::SYS_ftruncate,
    libc::SYS_futex,
    libc::SYS_futex_waitv,
    libc::SYS_futimesat,
    libc::SYS_get_robust_list,
    libc::SYS_get_thread_area,
    libc::SYS_getcpu,
    libc::SYS_getcwd,
    libc::SYS_getdents,
    libc::SYS_getdents64,
    libc::SYS_getegid,
    libc::SYS_geteuid,
    libc::SYS_getgid,
    libc::SYS_getgroups,
    libc::SYS_getitimer,
    libc::SYS_getpeername,
    libc::SYS_getpgid,
    libc::SYS_getpgrp,
    libc::SYS_getpid,
    libc::SYS_getppid,
    libc::SYS_getpriority,
    libc::SYS_getrandom,
    libc::SYS_getresgid,
    libc::SYS_getresuid,
    libc::SYS_getrlimit,
    libc::SYS_getrusage,
    libc::SYS_getsid,
    libc::SYS_getsockname,
    libc::SYS_getsockopt,
    libc::SYS_gettid,
    libc::SYS_gettimeofday,
    libc::SYS_getuid,
    libc::SYS_getxattr,
    libc::SYS_inotify_add_watch,
    libc::SYS_inotify_init,
    libc::SYS_inotify_init1,
    libc::SYS_inotify_rm_watch,
    libc::SYS_io_cancel,
    libc::SYS_io_destroy,
    libc::SYS_io_getevents,
    libc::SYS_io_setup,
    libc::SYS_io_submit,
    libc::SYS_ioctl,
    libc::SYS_ioprio_get,
    libc::SYS_ioprio_set,
    libc::SYS_kill,
    libc::SYS_landlock_add_rule,
    libc::SYS_landlock_create_ruleset,
    libc::SYS_landlock_restrict_self,
    libc::SYS_lchown,
    libc::SYS_lgetxattr,
    libc::SYS_link,
    libc::SYS_linkat,
    libc::SYS_listen,
    libc::SYS_listxattr,
    libc::SYS_llistxattr,
    libc::SYS_lremovexattr,
    libc::SYS_lseek,
    libc::SYS_lsetxattr,
    libc::SYS_lstat,
    libc::SYS_madvise,
    libc::SYS_membarrier,
    libc::SYS_memfd_create,
    libc::SYS_memfd_secret,
    libc::SYS_mincore,
    libc::SYS_mkdir,
    libc::SYS_mkdirat,
    libc::SYS_mknod,
    libc::SYS_mknodat,
    libc::SYS_mlock,
    libc::SYS_mlock2,
    libc::SYS_mlockall,
    libc::SYS_mmap,
    libc::SYS_modify_ldt,
    libc::SYS_mprotect,
    libc::SYS_mq_getsetattr,
    libc::SYS_mq_notify,
    libc::SYS_mq_open,
    libc::SYS_mq_timedreceive,
    libc::SYS_mq_timedsend,
    libc::SYS_mq_unlink,
    libc::SYS_mremap,
    libc::SYS_mseal,
    libc::SYS_msgctl,
    libc::SYS_msgget,
    libc::SYS_msgrcv,
    libc::SYS_msgsnd,
    libc::SYS_msync,
    libc::SYS_munlock,
    libc::SYS_munlockall,
    libc::SYS_munmap,
    libc::SYS_name_to_handle_at,
    libc::SYS_nanosleep,
    libc::SYS_newfstatat,
    libc::SYS_open,
    libc::SYS_openat,
    libc::SYS_openat2,
    libc::SYS_pause,
    libc::SYS_pidfd_open,
    libc::SYS_pidfd_send_signal,
    libc::SYS_pipe,
    libc::SYS_pipe2,
    libc::SYS_pkey_alloc,
    libc::SYS_pkey_free,
    libc::SYS_pkey_mprotect,
    libc::SYS_poll,
    libc::SYS_ppoll,
    libc::SYS_prctl,
    libc::SYS_pread64,
    libc::SYS_preadv,
    libc::SYS_preadv2,
    libc::SYS_prlimit64,
    libc::SYS_process_mrelease,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_pselect6,
    libc::SYS_ptrace,
    libc::SYS_pwrite64,
    libc::SYS_pwritev,
    libc::SYS_pwritev2,
    libc::SYS_read,
    libc::SYS_readahead,
    libc::SYS_readlink,
    libc::SYS_readlinkat,
    libc::SYS_readv,
    libc::SYS_recvfrom,
    libc::SYS_recvmmsg,
    libc::SYS_recvmsg,
    libc::SYS_remap_file_pages,
    libc::SYS_removexattr,
    libc::SYS_rename,
    libc::SYS_renameat,
    libc::SYS_renameat2,
    libc::SYS_restart_syscall,
    libc::SYS_rmdir,
    libc::SYS_rseq,
    libc::SYS_rt_sigaction,
    libc::SYS_rt_sigpending,
    libc::SYS_rt_sigprocmask,
    libc::SYS_rt_sigqueueinfo,
    libc::SYS_rt_sigreturn,
    libc::SYS_rt_sigsuspend,
    libc::SYS_rt_sigtimedwait,
    libc::SYS_rt_tgsigqueueinfo,
    libc::SYS_sched_get_priority_max,
    libc::SYS_sched_get_priority_min,
    libc::SYS_sched_getaffinity,
    libc::SYS_sched_getattr,
    libc::SYS_sched_getparam,
    libc::SYS_sched_getscheduler,
    libc::SYS_sched_rr_get_interval,
    libc::SYS_sched_setaffinity,
    libc::SYS_sched_setattr,
    libc::SYS_sched_setparam,
    libc::SYS_sched_setscheduler,
    libc::SYS_sched_yield,
    libc::SYS_seccomp,
    libc::SYS_select,
    libc::SYS_semctl,
    libc::SYS_semget,
    libc::SYS_semop,
    libc::SYS_semtimedop,
    libc::SYS_sendfile,
    libc::SYS_sendmmsg,
    libc::SYS_sendmsg,
    libc::SYS_sendto,
    libc::SYS_set_robust_list,
    libc::SYS_set_thread_area,
    libc::SYS_set_tid_address,
    libc::SYS_setfsgid,
    libc::SYS_setfsuid,
    libc::SYS_setgid,
    libc::SYS_setgroups,
    libc::SYS_setitimer,
    libc::SYS_setpgid,
    libc::SYS_setpriority,
    libc::SYS_setregid,
    libc::SYS_setresgid,
    libc::SYS_setresuid,
    libc::SYS_setreuid,
    libc::SYS_setrlimit,
    libc::SYS_setsid,
    libc::SYS_setsockopt,
    libc::SYS_setuid,
    libc::SYS_setxattr,
    libc::SYS_shmat,
    libc::SYS_shmctl,
    libc::SYS_shmdt,
    libc::SYS_shmget,
    libc::SYS_shutdown,
    libc::SYS_sigaltstack,
    libc::SYS_signalfd,
    libc::SYS_signalfd4,
    libc::SYS_socketpair,
    libc::SYS_splice,
    libc::SYS_stat,
    libc::SYS_statfs,
    libc::SYS_statx,
    libc::SYS_symlink,
    libc::SYS_symlinkat,
    libc::SYS_sync,
    libc::SYS_sync_file_range,
    libc::SYS_syncfs,
    libc::SYS_sysinfo,
    libc::SYS_tee,
    libc::SYS_tgkill,
    libc::SYS_time,
    libc::SYS_timer_create,
    libc::SYS_timer_delete,
    libc::SYS_timer_getoverrun,
    libc::SYS_timer_gettime,
    libc::SYS_timer_settime,
    libc::SYS_timerfd_create,
    libc::SYS_timerfd_gettime,
    libc::SYS_timerfd_settime,
    libc::SYS_times,
    libc::SYS_tkill,
    libc::SYS_truncate,
    libc::SYS_umask,
    libc::SYS_uname,
    libc::SYS_unlink,
    libc::SYS_unlinkat,
    libc::SYS_utime,
    libc::SYS_utimensat,
    libc::SYS_utimes,
    libc::SYS_vfork,
    libc::SYS_vmsplice,
    libc::SYS_wait4,
    libc::SYS_waitid,
    libc::SYS_write,
    libc::SYS_writev,
];

/// The container runtime's default profile (see the module doc), as `seccompiler` compiles it.
pub fn container_default() -> Result<Program, String> {
    use seccompiler::{SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition, SeccompRule};
    let rule = |op: Op, value: u64| {
        SeccompCondition::new(0, Len::Qword, op, value)
            .and_then(|c| SeccompRule::new(vec![c]))
            .map_err(|e| format!("seccomp rule: {e}"))
    };
    let mut rules: std::collections::BTreeMap<i64, Vec<SeccompRule>> =
        CONTAINER_ALLOW.iter().map(|&nr| (nr, Vec::new())).collect();
    // socket: every address family but AF_VSOCK (40)'s neighbours the profile leaves out.
    rules.insert(libc::SYS_socket, vec![rule(Op::Lt, 38)?, rule(Op::Eq, 39)?, rule(Op::Gt, 40)?]);
    rules.insert(
        libc::SYS_personality,
        [0u64, 8, 0x20000, 0x20008, 0xffff_ffff].iter().map(|&v| rule(Op::Eq, v)).collect::<Result<_, _>>()?,
    );
    // clone without namespace flags (CLONE_NEWNS | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET | NEWCGROUP).
    rules.insert(libc::SYS_clone, vec![rule(Op::MaskedEq(0x7e02_0000), 0)?]);
    let filter = seccompiler::SeccompFilter::new(
        rules,
        SeccompAction::Errno(libc::EPERM as u32),
        SeccompAction::Allow,
        seccompiler::TargetArch::x86_64,
    )
    .map_err(|e| format!("seccomp profile: {e}"))?;
    filter.try_into().map_err(|e: seccompiler::BackendError| format!("seccomp profile: {e}"))
}

/// What a filter does with one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The value returned: an action and its data.
    pub action: u32,
    /// Instructions run, the return included.
    pub ran: usize,
}

/// The call a filter is asked about.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Call {
    pub nr: i64,
    pub arch: u32,
    pub args: [u64; 6],
}

impl Call {
    /// Call `nr` on x86_64 with all arguments 0.
    pub fn x86_64(nr: i64) -> Call {
        Call { nr, arch: ARCH_X86_64, args: [0; 6] }
    }
}

/// Runs `program` on `call` as the kernel's interpreter would; an error for what the kernel's
/// checker refuses (a jump out of the program, no return at the end, an instruction outside
/// the subset seccomp programs here use).
pub fn run(program: &[Instruction], call: Call) -> Result<Outcome, String> {
    check(program)?;
    let (mut acc, mut pc, mut ran) = (0u32, 0usize, 0usize);
    loop {
        let insn = program.get(pc).ok_or_else(|| format!("ran off the end at {pc}"))?;
        ran += 1;
        pc += 1;
        match insn.code {
            LD_W_ABS => acc = load(call, insn.k)?,
            ALU_AND_K => acc &= insn.k,
            RET_K => return Ok(Outcome { action: insn.k, ran }),
            JMP_JA => pc += insn.k as usize,
            code => pc += usize::from(if compare(code, acc, insn.k)? { insn.jt } else { insn.jf }),
        }
    }
}

/// Whether the kernel's action cache answers `nr` on `arch` (the whole program allows it
/// whatever its arguments, as far as the kernel can prove without running it).
pub fn cached(program: &[Instruction], nr: i64, arch: u32) -> bool {
    let (mut acc, mut pc) = (0u32, 0usize);
    while let Some(insn) = program.get(pc) {
        pc += 1;
        match insn.code {
            LD_W_ABS if insn.k == data::NR => acc = nr as u32,
            LD_W_ABS if insn.k == data::ARCH => acc = arch,
            ALU_AND_K => acc &= insn.k,
            RET_K => return insn.k == action::ALLOW,
            JMP_JA => pc += insn.k as usize,
            JMP_JEQ_K | JMP_JGT_K | JMP_JGE_K | JMP_JSET_K => {
                let Ok(taken) = compare(insn.code, acc, insn.k) else { return false };
                pc += usize::from(if taken { insn.jt } else { insn.jf });
            }
            _ => return false,
        }
    }
    false
}

fn check(program: &[Instruction]) -> Result<(), String> {
    if program.is_empty() || program.len() > 4096 {
        return Err(format!("a program has 1 to 4096 instructions, not {}", program.len()));
    }
    for (i, insn) in program.iter().enumerate() {
        let reach = |off: usize| i + 1 + off < program.len();
        let ok = match insn.code {
            LD_W_ABS => insn.k.is_multiple_of(4) && insn.k < 64,
            ALU_AND_K | RET_K => true,
            JMP_JA => reach(insn.k as usize),
            JMP_JEQ_K | JMP_JGT_K | JMP_JGE_K | JMP_JSET_K => {
                reach(usize::from(insn.jt)) && reach(usize::from(insn.jf))
            }
            _ => false,
        };
        if !ok {
            return Err(format!(
                "instruction {i} ({:#06x}, k {:#x}) is refused or outside the subset",
                insn.code, insn.k
            ));
        }
    }
    match program.last() {
        Some(last) if last.code == RET_K => Ok(()),
        _ => Err("the last instruction is not a return".into()),
    }
}

fn load(call: Call, offset: u32) -> Result<u32, String> {
    Ok(match offset {
        0 => call.nr as u32,
        4 => call.arch,
        16..=63 => {
            let arg = call.args[(offset as usize - 16) / 8];
            if offset.is_multiple_of(8) { arg as u32 } else { (arg >> 32) as u32 }
        }
        _ => return Err(format!("load of offset {offset} (the instruction pointer is not emulated)")),
    })
}

fn compare(code: u16, acc: u32, k: u32) -> Result<bool, String> {
    Ok(match code {
        JMP_JEQ_K => acc == k,
        JMP_JGT_K => acc > k,
        JMP_JGE_K => acc >= k,
        JMP_JSET_K => acc & k != 0,
        other => return Err(format!("instruction {other:#06x} outside the subset")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_has_its_length_runs_all_of_it_and_allows() {
        for len in [1, 2, 10, 100, 1000] {
            for load in [Load::Argument, Load::Number] {
                let p = chain(len, load);
                assert_eq!(p.len(), len);
                let got = run(&p, Call::x86_64(libc::SYS_getppid)).unwrap();
                assert_eq!(got, Outcome { action: action::ALLOW, ran: len });
            }
        }
    }

    #[test]
    fn the_cache_answers_number_chains_and_not_argument_chains() {
        for len in [10, 100, 1000] {
            assert!(cached(&chain(len, Load::Number), libc::SYS_getppid, ARCH_X86_64));
            assert!(!cached(&chain(len, Load::Argument), libc::SYS_getppid, ARCH_X86_64));
        }
        // One instruction reads nothing: cached whatever the load.
        assert!(cached(&chain(1, Load::Argument), libc::SYS_getppid, ARCH_X86_64));
        // An answer other than ALLOW is never cached.
        let deny = answer_getppid(action::ERRNO | libc::EPERM as u32);
        assert!(!cached(&deny, libc::SYS_getppid, ARCH_X86_64));
        assert!(cached(&deny, libc::SYS_getpid, ARCH_X86_64));
    }

    #[test]
    fn answer_getppid_answers_getppid_only() {
        let p = answer_getppid(action::USER_NOTIF);
        assert_eq!(run(&p, Call::x86_64(libc::SYS_getppid)).unwrap().action, action::USER_NOTIF);
        assert_eq!(run(&p, Call::x86_64(libc::SYS_getpid)).unwrap().action, action::ALLOW);
    }

    #[test]
    fn the_container_profile_allows_its_list_refuses_the_rest_and_is_cached_where_unconditional() {
        let p = container_default().unwrap();
        let eperm = action::ERRNO | libc::EPERM as u32;
        for nr in [libc::SYS_read, libc::SYS_getppid, 462 /* mseal */] {
            assert_eq!(run(&p, Call::x86_64(nr)).unwrap().action, action::ALLOW, "{nr}");
            assert!(cached(&p, nr, ARCH_X86_64), "{nr}");
        }
        for nr in [libc::SYS_kexec_load, libc::SYS_mount, libc::SYS_bpf] {
            assert_eq!(run(&p, Call::x86_64(nr)).unwrap().action, eperm, "{nr}");
        }
        // Argument rules: the answer depends on the argument, so the cache cannot give it.
        let mut sock = Call::x86_64(libc::SYS_socket);
        sock.args[0] = libc::AF_INET as u64;
        assert_eq!(run(&p, sock).unwrap().action, action::ALLOW);
        sock.args[0] = 40;
        assert_eq!(run(&p, sock).unwrap().action, eperm);
        assert!(!cached(&p, libc::SYS_socket, ARCH_X86_64));
        let mut clone = Call::x86_64(libc::SYS_clone);
        clone.args[0] = libc::CLONE_NEWNET as u64;
        assert_eq!(run(&p, clone).unwrap().action, eperm);
        // Another architecture is not let through.
        let other = Call { arch: 0x4000_0003, ..Call::x86_64(libc::SYS_getppid) };
        assert_ne!(run(&p, other).unwrap().action, action::ALLOW);
    }

    #[test]
    fn the_checker_refuses_what_the_kernel_refuses() {
        assert!(run(&[], Call::x86_64(0)).is_err());
        assert!(run(&[Instruction { code: JMP_JEQ_K, jt: 3, jf: 0, k: 0 }, stmt(RET_K, 0)], Call::x86_64(0)).is_err());
        assert!(run(&[stmt(LD_W_ABS, 0)], Call::x86_64(0)).is_err());
    }
}
