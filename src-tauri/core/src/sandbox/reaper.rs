//! The watchdog that kills what confined processes started when Mandate dies, however it dies.
//!
//! A confined process gets `PR_SET_PDEATHSIG(SIGKILL)`, but only it: what it started survives
//! a killed Mandate unless bubblewrap's PID namespace ends it too. So Mandate forks one small
//! process, the watchdog, holding the read end of a pipe whose write end only Mandate holds
//! (close-on-exec; the watchdog closes its copy). Each confined process, between fork and exec
//! and before any code of its own runs, writes its pid (its new session's and process group's
//! number) into the pipe; Mandate writes the group's number negated when it kills the group.
//! When the pipe reads end-of-file, Mandate is gone, and the watchdog SIGKILLs every group it
//! still knows and exits. A confined process cannot leave its group (`setsid` and `setpgid`
//! are refused by its system-call filter), so the group is everything it started.
//!
//! The watchdog is a plain fork (no exec: it works from every binary and test), so it only
//! makes system calls on its own stack, as code between fork and exec must in a process with
//! threads. It leaves Mandate's session and ignores the signals a terminal or a `kill` without
//! `-9` sends, so a Ctrl-C that ends Mandate does not end it first. Confined processes cannot
//! signal or trace it where Landlock scopes signals (ABI ≥ 6) or under bubblewrap's PID
//! namespace; below that, a command of the same user could stop or kill it.

use std::io;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd, RawFd};
use std::sync::{Arc, Mutex};

/// How many groups the watchdog keeps at once; one more is killed at once (fail closed).
const CAPACITY: usize = 4096;

struct Watchdog {
    pid: libc::pid_t,
    write: Arc<OwnedFd>,
}

static WATCHDOG: Mutex<Option<Watchdog>> = Mutex::new(None);

/// The write end of the running watchdog's pipe; a watchdog is started when none runs (the
/// first confined spawn, or after it was killed). Confined processes register through it.
pub(super) fn channel() -> io::Result<Arc<OwnedFd>> {
    let mut watchdog = WATCHDOG.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(w) = watchdog.as_ref() {
        // SAFETY: waitpid on this process's own child, without blocking or keeping a status.
        let state = unsafe { libc::waitpid(w.pid, std::ptr::null_mut(), libc::WNOHANG) };
        if state == 0 {
            return Ok(w.write.clone());
        }
        tracing::warn!(
            pid = w.pid,
            "the watchdog of confined processes was gone; another is started"
        );
    }
    let started = start()?;
    let write = started.write.clone();
    *watchdog = Some(started);
    Ok(write)
}

/// Tells the watchdog that Mandate killed group `group`: nothing of it is left to kill later
/// (and its number may be another group's one day). Best effort: a full pipe drops it.
pub(crate) fn forget(group: i32) {
    let watchdog = WATCHDOG.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(w) = watchdog.as_ref() {
        let record = (-group).to_ne_bytes();
        // SAFETY: a write of 4 bytes from the stack on a descriptor this process owns.
        unsafe {
            libc::write(w.write.as_raw_fd(), record.as_ptr().cast(), record.len());
        }
    }
}

/// Registers the calling process (between fork and exec: only system calls) as a group to
/// kill when Mandate dies. Fails when the watchdog is gone: the process must then not run.
pub(super) fn register_self(channel: RawFd) -> io::Result<()> {
    // SAFETY (whole block): system calls on stack data valid for each call.
    unsafe {
        // A watchdog that is gone must be an error here, not a SIGPIPE that kills the child
        // without a word.
        let mut ignore: libc::sigaction = std::mem::zeroed();
        ignore.sa_sigaction = libc::SIG_IGN;
        let mut before: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGPIPE, &ignore, &mut before);
        let record = libc::getpid().to_ne_bytes();
        let n = libc::write(channel, record.as_ptr().cast(), record.len());
        let errno = *libc::__errno_location();
        libc::sigaction(libc::SIGPIPE, &before, std::ptr::null_mut());
        match n {
            4 => Ok(()),
            n if n < 0 => Err(io::Error::from_raw_os_error(errno)),
            _ => Err(io::Error::from_raw_os_error(libc::EIO)),
        }
    }
}

fn start() -> io::Result<Watchdog> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 fills two descriptors, owned from here on.
    let (read, write) = unsafe {
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(io::Error::last_os_error());
        }
        (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]))
    };
    // Mandate never waits on a full pipe: a forget that does not fit is dropped, a child that
    // cannot register does not run.
    // SAFETY: fcntl with integer arguments on a descriptor owned here.
    unsafe {
        let flags = libc::fcntl(write.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(write.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
    // SAFETY: the child only calls `watch`, which makes system calls on its own stack and
    // never returns.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: see above; the child's copies of `read` and `write` are closed by `watch`.
        unsafe { watch(read.as_raw_fd()) }
    }
    drop(read);
    Ok(Watchdog {
        pid,
        write: Arc::new(write),
    })
}

/// The watchdog's life, in the forked child: only system calls, no allocation.
unsafe fn watch(pipe: RawFd) -> ! {
    // SAFETY (whole block): system calls with integer arguments or stack data.
    unsafe {
        libc::setsid();
        for signal in [
            libc::SIGINT,
            libc::SIGTERM,
            libc::SIGHUP,
            libc::SIGQUIT,
            libc::SIGTSTP,
            libc::SIGTTIN,
            libc::SIGTTOU,
            libc::SIGPIPE,
            libc::SIGUSR1,
            libc::SIGUSR2,
        ] {
            libc::signal(signal, libc::SIG_IGN);
        }
        libc::prctl(libc::PR_SET_NAME, c"mandate-reaper".as_ptr(), 0, 0, 0);
        // Every descriptor of Mandate but the pipe: holding a copy of a server's stdin or of
        // the write end itself would keep others from seeing their end-of-file.
        let keep = pipe as libc::c_uint;
        if keep > 0 {
            libc::syscall(libc::SYS_close_range, 0u32, keep - 1, 0u32);
        }
        libc::syscall(libc::SYS_close_range, keep + 1, u32::MAX, 0u32);
        let mut groups = [0 as libc::pid_t; CAPACITY];
        let mut count = 0usize;
        let mut buf = [0u8; 4096];
        let mut held = 0usize;
        loop {
            let n = libc::read(pipe, buf.as_mut_ptr().add(held).cast(), buf.len() - held);
            if n < 0 && *libc::__errno_location() == libc::EINTR {
                continue;
            }
            if n <= 0 {
                break;
            }
            let end = held + n as usize;
            let whole = end - end % 4;
            for record in buf[..whole].chunks_exact(4) {
                let group = i32::from_ne_bytes([record[0], record[1], record[2], record[3]]);
                if group > 1 {
                    if count < CAPACITY {
                        groups[count] = group;
                        count += 1;
                    } else {
                        libc::kill(-group, libc::SIGKILL);
                    }
                } else if group < -1 {
                    if let Some(i) = groups[..count].iter().position(|g| *g == -group) {
                        count -= 1;
                        groups[i] = groups[count];
                    }
                }
            }
            buf.copy_within(whole..end, 0);
            held = end - whole;
        }
        for group in &groups[..count] {
            libc::kill(-*group, libc::SIGKILL);
        }
        libc::_exit(0)
    }
}

/// The running watchdog's pid (tests).
#[cfg(test)]
pub(super) fn pid() -> Option<libc::pid_t> {
    WATCHDOG
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .map(|w| w.pid)
}
