//! Small seccomp filters. Every confined process stays in its process group and session
//! (`setsid` and `setpgid` refused), so that killing the group kills all it started. For
//! commands without network that no empty network namespace of bubblewrap's keeps off it:
//! Landlock filters TCP only, so only TCP streams, Unix, netlink and crypto sockets may be
//! made (UDP, SCTP, raw and packet sockets and every other family are refused at
//! `socket(2)`), and io_uring is refused, which could create sockets without that system
//! call; below Landlock ABI 9, Unix sockets too. Built before the
//! fork; installed in the child with one `prctl`.

// BPF opcodes and `seccomp` return values.
const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JEQ: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JGE: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const AND: u16 = 0x54; // BPF_ALU | BPF_AND | BPF_K
const RET: u16 = 0x06; // BPF_RET | BPF_K
const ALLOW: u32 = 0x7fff_0000;
const ERRNO: u32 = 0x0005_0000;
// Offsets in `struct seccomp_data`: nr, arch, then args (low 32 bits on little-endian).
const NR: u32 = 0;
const ARCH: u32 = 4;
const ARG0: u32 = 16;
const ARG1: u32 = 24;
const ARG2: u32 = 32;

fn op(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// The first six instructions of every filter: another architecture's calls, and the x32 ABI's,
/// are refused (their numbers mean other calls); the system call's number is then loaded.
/// `None` on an architecture this code does not know (the caller then reports the gap instead
/// of guessing system-call numbers).
fn prelude() -> Option<Vec<libc::sock_filter>> {
    let (arch, x32_bit): (u32, u32) = if cfg!(all(target_arch = "x86_64", target_endian = "little"))
    {
        (0xC000_003E, 0x4000_0000)
    } else if cfg!(all(target_arch = "aarch64", target_endian = "little")) {
        // No second ABI here: the "x32" check compares against an impossible number.
        (0xC000_00B7, u32::MAX)
    } else {
        return None;
    };
    let eperm = ERRNO | libc::EPERM as u32;
    Some(vec![
        /* 0 */ op(LD_W_ABS, 0, 0, ARCH),
        /* 1 */ op(JEQ, 1, 0, arch),
        /* 2 */ op(RET, 0, 0, eperm),
        /* 3 */ op(LD_W_ABS, 0, 0, NR),
        /* 4 */ op(JGE, 0, 1, x32_bit),
        /* 5 */ op(RET, 0, 0, eperm),
    ])
}

/// The filter of a command: it may not leave its process group or session (`setsid`,
/// `setpgid` refused), so that killing the group, when the command ends or when Mandate dies
/// ([`super::reaper`]), kills everything it started. `without_network` (given when the command
/// has no network and no bubblewrap namespace keeps it off) adds the network part: sockets
/// other than TCP streams (which Landlock filters) and local ones refused at `socket(2)` (see
/// `no_network`), io_uring refused
/// (it could create sockets without that system call), and, with `block_unix`, Unix sockets:
/// below Landlock ABI 9 nothing else keeps a command from connecting by path to the session
/// bus (which can start programs outside the confinement) or to Docker's socket. `socketpair`
/// stays allowed: it reaches no one. `None` on an architecture this code does not know (the
/// caller then reports the gap instead of guessing system-call numbers).
pub(super) fn command_filter(without_network: Option<bool>) -> Option<Vec<libc::sock_filter>> {
    let mut program = prelude()?;
    stay_in_group(&mut program)?;
    no_kernel_keyring(&mut program)?;
    match without_network {
        Some(block_unix) => program.extend(no_network(block_unix)?),
        None => program.push(op(RET, 0, 0, ALLOW)),
    }
    Some(program)
}

/// Refuses `setsid` and `setpgid`: one pair of instructions each, after the prelude.
fn stay_in_group(program: &mut Vec<libc::sock_filter>) -> Option<()> {
    for nr in [libc::SYS_setsid, libc::SYS_setpgid] {
        let nr = u32::try_from(nr).ok()?;
        program.extend([op(JEQ, 0, 1, nr), op(RET, 0, 0, ERRNO | libc::EPERM as u32)]);
    }
    Some(())
}

/// Refuses the kernel's keyrings (`add_key`, `keyctl`, `request_key`), as container runtimes
/// do: they are not confined by any namespace a command gets here (the user's keyring is the
/// person's, or the one every command of the session shares), so a command could read what
/// another program keeps there or leave something for the next command.
fn no_kernel_keyring(program: &mut Vec<libc::sock_filter>) -> Option<()> {
    for nr in [libc::SYS_add_key, libc::SYS_keyctl, libc::SYS_request_key] {
        let nr = u32::try_from(nr).ok()?;
        program.extend([op(JEQ, 0, 1, nr), op(RET, 0, 0, ERRNO | libc::EPERM as u32)]);
    }
    Some(())
}

/// The network part of a command's filter (its jumps are relative: it follows the prelude
/// or any run of refused calls, with the system call's number loaded). An allow-list of socket
/// families: Unix (unless `block_unix`), netlink and the kernel's crypto sockets, which reach
/// no other machine, and Internet sockets only as TCP streams (protocol 0 or TCP), which
/// Landlock filters by port; anything else is refused, SCTP and UDP, raw and packet sockets,
/// and every other family that can carry traffic (TIPC, RDS, vsock, …).
fn no_network(block_unix: bool) -> Option<Vec<libc::sock_filter>> {
    let socket = u32::try_from(libc::SYS_socket).ok()?;
    let io_uring = u32::try_from(libc::SYS_io_uring_setup).ok()?;
    let family = |f: libc::c_int| f as u32;
    let eacces = ERRNO | libc::EACCES as u32;
    let unix = if block_unix { eacces } else { ALLOW };
    Some(vec![
        /* 0 */ op(JEQ, 0, 1, io_uring),
        /* 1 */ op(RET, 0, 0, ERRNO | libc::ENOSYS as u32),
        /* 2 */ op(JEQ, 1, 0, socket),
        /* 3 */ op(RET, 0, 0, ALLOW),
        /* 4 */ op(LD_W_ABS, 0, 0, ARG0),
        /* 5 */ op(JEQ, 6, 0, family(libc::AF_INET)), // -> 12
        /* 6 */ op(JEQ, 5, 0, family(libc::AF_INET6)), // -> 12
        /* 7 */ op(JEQ, 2, 0, family(libc::AF_UNIX)), // -> 10
        /* 8 */ op(JEQ, 2, 0, family(libc::AF_NETLINK)), // -> 11
        /* 9 */ op(JEQ, 1, 8, family(libc::AF_ALG)), // -> 11, else -> 18
        /* 10 */ op(RET, 0, 0, unix),
        /* 11 */ op(RET, 0, 0, ALLOW),
        /* 12 */ op(LD_W_ABS, 0, 0, ARG1),
        /* 13 */ op(AND, 0, 0, 0xf),
        /* 14 */ op(JEQ, 0, 3, libc::SOCK_STREAM as u32), // else -> 18
        /* 15 */ op(LD_W_ABS, 0, 0, ARG2),
        /* 16 */ op(JEQ, 2, 0, 0), // -> 19
        /* 17 */ op(JEQ, 1, 0, libc::IPPROTO_TCP as u32), // -> 19
        /* 18 */ op(RET, 0, 0, eacces),
        /* 19 */ op(RET, 0, 0, ALLOW),
    ])
}

/// Installs `filter` on the calling thread. Only system calls: safe between fork and exec.
/// `no_new_privs` must already be set.
pub(super) fn install(filter: &[libc::sock_filter]) -> std::io::Result<()> {
    let program = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: `program` points at `filter`, which outlives the call; the kernel copies it.
    let rc = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER as libc::c_ulong,
            &program as *const libc::sock_fprog as libc::c_ulong,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The filter of an MCP server: it may not leave its process group or session (`setsid`,
/// `setpgid` refused), nor use io_uring, so that stopping the group between calls stops
/// everything it started; nor create Unix sockets, whatever else confines it (bubblewrap does
/// not scope them): through one a server could reach the session bus or X11, which start
/// programs outside the confinement, or pass a writable descriptor of the workspace to another
/// server that is neither frozen nor watched. It keeps TCP and UDP, which it needs, and
/// `socketpair`, which runtimes use for their children's stdio and which reaches no one.
pub(super) fn server_filter() -> Option<Vec<libc::sock_filter>> {
    let mut program = prelude()?;
    stay_in_group(&mut program)?;
    no_kernel_keyring(&mut program)?;
    // Each refused call: "if nr == X return error", one pair of instructions.
    let mut refuse = |nr: libc::c_long, errno: i32| -> Option<()> {
        let nr = u32::try_from(nr).ok()?;
        program.extend([op(JEQ, 0, 1, nr), op(RET, 0, 0, ERRNO | errno as u32)]);
        Some(())
    };
    // io_uring always: its kernel worker threads ignore SIGSTOP, so work queued before a
    // freeze would go on writing while the server is meant to be stopped.
    refuse(libc::SYS_io_uring_setup, libc::ENOSYS)?;
    refuse(libc::SYS_io_uring_enter, libc::ENOSYS)?;
    refuse(libc::SYS_io_uring_register, libc::ENOSYS)?;
    let socket = u32::try_from(libc::SYS_socket).ok()?;
    program.extend([
        op(JEQ, 1, 0, socket),
        op(RET, 0, 0, ALLOW),
        op(LD_W_ABS, 0, 0, ARG0),
        op(JEQ, 0, 1, libc::AF_UNIX as u32),
        op(RET, 0, 0, ERRNO | libc::EACCES as u32),
        op(RET, 0, 0, ALLOW),
    ]);
    Some(program)
}
