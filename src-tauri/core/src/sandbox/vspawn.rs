//! Starting a confined process the way `posix_spawn` does: `clone(CLONE_VM | CLONE_VFORK)`.
//!
//! `fork()` copies the page tables of the whole process, which costs more the more memory
//! Mandate holds (about +3 ms at a few hundred megabytes here, +50 ms at 1.9 GB), and the
//! standard library forks whenever code must run between fork and exec, as the confinement's
//! set-up must. Here the child shares Mandate's memory instead, on a stack of its own, while
//! the thread that started it waits (`CLONE_VFORK`) until it has called `execve` or failed.
//! The child makes only system calls on data prepared before the clone: it resets the signal
//! handlers (they belong to Mandate's code), puts its standard streams in place, changes
//! directory, applies the confinement ([`super::spawn::ChildSetup`]) and executes the program.
//! A failure before `execve` is written where the parent reads it, and the child exits.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt as _;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use tokio::io::unix::AsyncFd;

use super::spawn::ChildSetup;

/// What one standard stream of the child is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Io {
    /// `/dev/null`.
    Null,
    /// A pipe to Mandate.
    Piped,
    /// Mandate's own.
    Inherit,
}

/// A confined process ready to start: everything the child needs, prepared in the parent.
pub struct Launch {
    pub(super) program: CString,
    pub(super) argv: Vec<CString>,
    pub(super) envp: Vec<CString>,
    pub(super) cwd: Option<CString>,
    pub(super) setup: ChildSetup,
    pub(super) io: [Io; 3],
    /// The namespace kept for the session and this process's mounts in it, instead of
    /// bubblewrap (see `super::kept`).
    pub(super) kept: Option<super::kept::Plan>,
}

impl Launch {
    /// The program as given (a path, or a name looked up on the child's `PATH`).
    pub fn program(&self) -> &std::ffi::CStr {
        &self.program
    }

    /// The arguments after the program's name.
    pub fn args(&self) -> impl Iterator<Item = &std::ffi::CStr> {
        self.argv.iter().skip(1).map(CString::as_c_str)
    }

    pub fn stdin(&mut self, io: Io) -> &mut Self {
        self.io[0] = io;
        self
    }
    pub fn stdout(&mut self, io: Io) -> &mut Self {
        self.io[1] = io;
        self
    }
    pub fn stderr(&mut self, io: Io) -> &mut Self {
        self.io[2] = io;
        self
    }
}

/// A confined process started from the calling thread and waited for by blocking (tests).
#[cfg(test)]
pub(crate) struct BlockingChild {
    pid: libc::pid_t,
    pub stdout: Option<std::fs::File>,
}

/// Starting from the calling thread, for tests (Mandate starts processes from the spawner
/// thread: [`super::spawn`]).
#[cfg(test)]
impl Launch {
    /// Starts the process from this thread and waits for it; its output as `output()` of the
    /// standard library gives it (stdin is `/dev/null`, stdout and stderr are read).
    pub(crate) fn output(mut self) -> io::Result<std::process::Output> {
        use std::io::Read as _;
        self.io = [Io::Null, Io::Piped, Io::Piped];
        let raw = start(&self)?;
        let mut err_pipe = raw.stderr.map(std::fs::File::from);
        let errors = std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(pipe) = err_pipe.as_mut() {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        });
        let mut stdout = Vec::new();
        if let Some(pipe) = raw.stdout {
            std::fs::File::from(pipe).read_to_end(&mut stdout)?;
        }
        let stderr = errors.join().unwrap_or_default();
        let status = wait_blocking(raw.pid)?;
        Ok(std::process::Output {
            status,
            stdout,
            stderr,
        })
    }

    /// Starts the process from this thread and waits for it.
    pub(crate) fn status(self) -> io::Result<ExitStatus> {
        let raw = start(&self)?;
        wait_blocking(raw.pid)
    }

    /// Starts the process from this thread.
    pub(crate) fn start_blocking(&self) -> io::Result<BlockingChild> {
        let raw = start(self)?;
        Ok(BlockingChild {
            pid: raw.pid,
            stdout: raw.stdout.map(std::fs::File::from),
        })
    }
}

#[cfg(test)]
impl BlockingChild {
    pub(crate) fn id(&self) -> u32 {
        self.pid as u32
    }
    pub(crate) fn wait(&mut self) -> io::Result<ExitStatus> {
        wait_blocking(self.pid)
    }
    pub(crate) fn wait_with_output(mut self) -> io::Result<std::process::Output> {
        use std::io::Read as _;
        let mut stdout = Vec::new();
        if let Some(mut pipe) = self.stdout.take() {
            pipe.read_to_end(&mut stdout)?;
        }
        Ok(std::process::Output {
            status: self.wait()?,
            stdout,
            stderr: Vec::new(),
        })
    }
}

pub(super) fn wait_blocking(pid: libc::pid_t) -> io::Result<ExitStatus> {
    let mut status = 0;
    loop {
        // SAFETY: waitpid on this process's own child, with a status owned by this frame.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        if rc == pid {
            return Ok(ExitStatus::from_raw(status));
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// A started child: its pid and Mandate's ends of its pipes.
pub(super) struct Raw {
    pub pid: libc::pid_t,
    pub stdin: Option<OwnedFd>,
    pub stdout: Option<OwnedFd>,
    pub stderr: Option<OwnedFd>,
}

/// What the child reads, and where it says why it failed.
struct Shared<'a> {
    launch: &'a Launch,
    program: &'a CString,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    /// The child's standard streams, as descriptors of the parent (None: inherited).
    streams: [Option<RawFd>; 3],
    mask: libc::sigset_t,
    error: AtomicI32,
}

/// The child's ends of its standard streams (kept open until it has started), Mandate's ends,
/// and the descriptors the child puts in place (None: inherited).
pub(super) type Streams = (Vec<OwnedFd>, [Option<OwnedFd>; 3], [Option<RawFd>; 3]);

/// Opens the standard streams `launch` asks for (see [`Streams`]).
pub(super) fn streams(launch: &Launch) -> io::Result<Streams> {
    let mut child_ends: Vec<OwnedFd> = Vec::new();
    let mut parent_ends: [Option<OwnedFd>; 3] = [None, None, None];
    let mut streams = [None; 3];
    for (i, io) in launch.io.iter().enumerate() {
        let child = match io {
            Io::Inherit => continue,
            Io::Null => OwnedFd::from(
                std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open("/dev/null")?,
            ),
            Io::Piped => {
                let (read, write) = pipe()?;
                let (child, parent) = if i == 0 { (read, write) } else { (write, read) };
                parent_ends[i] = Some(parent);
                child
            }
        };
        // Above the three standard descriptors, so that putting one in place never
        // overwrites another that is still to be placed.
        let child = above_stdio(child)?;
        streams[i] = Some(child.as_raw_fd());
        child_ends.push(child);
    }
    Ok((child_ends, parent_ends, streams))
}

/// In a child, between clone and exec: Mandate's signal handlers back to the default (they are
/// Mandate's code; SIGPIPE is ignored by Mandate, not by programs), then the standard streams
/// put in place. Returns the error number of a failed `dup2`.
///
/// # Safety
/// Only in a child after clone: it changes the calling process's signal dispositions.
pub(super) unsafe fn reset_signals_and_streams(streams: &[Option<RawFd>; 3]) -> Result<(), i32> {
    // SAFETY (whole block): sigaction and dup2 on stack data and integers.
    unsafe {
        for sig in 1..65 {
            if sig == libc::SIGKILL || sig == libc::SIGSTOP {
                continue;
            }
            let mut current: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut current) != 0 {
                continue;
            }
            if current.sa_sigaction != libc::SIG_IGN || sig == libc::SIGPIPE {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(sig, &default, std::ptr::null_mut());
            }
        }
        for (target, stream) in streams.iter().enumerate() {
            if let Some(fd) = *stream {
                if libc::dup2(fd, target as RawFd) < 0 {
                    return Err(*libc::__errno_location());
                }
            }
        }
    }
    Ok(())
}

/// The child's stack: enough for the set-up, which calls no library code that recurses.
const STACK: usize = 256 * 1024;

/// Starts `launch` as a child of this process, from the calling thread (the thread its
/// parent-death signal is tied to).
pub(super) fn start(launch: &Launch) -> io::Result<Raw> {
    if let Some(plan) = &launch.kept {
        return super::kept::start(launch, plan);
    }
    let (child_ends, parent_ends, streams) = streams(launch)?;
    let program = resolve(launch)?;
    let terminated = |list: &[CString]| {
        list.iter()
            .map(|s| s.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect::<Vec<_>>()
    };
    // SAFETY: an all-zero sigset_t is a valid value for sigemptyset/pthread_sigmask to fill.
    let mut shared = Shared {
        launch,
        program: &program,
        argv: terminated(&launch.argv),
        envp: terminated(&launch.envp),
        streams,
        mask: unsafe { std::mem::zeroed() },
        error: AtomicI32::new(0),
    };
    let mut stack = vec![0u128; STACK / 16];
    // SAFETY: `stack` outlives the child's use of it (the parent waits until the child has
    // executed or exited: CLONE_VFORK); the top is 16-byte aligned.
    let top = unsafe { stack.as_mut_ptr().add(stack.len()) }.cast::<libc::c_void>();
    // SAFETY (whole block): signal masks of this thread, on stack data; `clone` runs
    // `child_main` with a pointer to `shared`, which lives until after the child is done.
    let pid = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        // No signal handler of Mandate's may run in the child, on memory it shares.
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut shared.mask);
        let pid = libc::clone(
            child_main,
            top,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (&raw mut shared).cast(),
        );
        let spawn_error = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &shared.mask, std::ptr::null_mut());
        if pid < 0 {
            return Err(spawn_error);
        }
        pid
    };
    drop(stack);
    drop(child_ends);
    let error = shared.error.load(Ordering::SeqCst);
    if error != 0 {
        let _ = wait_blocking(pid);
        return Err(io::Error::from_raw_os_error(error));
    }
    let [stdin, stdout, stderr] = parent_ends;
    Ok(Raw {
        pid,
        stdin,
        stdout,
        stderr,
    })
}

/// The program's path: as given when it names a directory, else the first executable file
/// of that name on the child's `PATH` (as `execvp` looks it up).
pub(super) fn resolve(launch: &Launch) -> io::Result<CString> {
    use std::os::unix::ffi::OsStrExt as _;
    use std::os::unix::fs::PermissionsExt as _;
    let program = launch.program.as_bytes();
    if program.contains(&b'/') {
        return Ok(launch.program.clone());
    }
    let path = launch
        .envp
        .iter()
        .find_map(|kv| kv.as_bytes().strip_prefix(b"PATH="))
        .unwrap_or(b"/usr/local/bin:/usr/bin:/bin");
    for dir in path.split(|&b| b == b':').filter(|d| !d.is_empty()) {
        let candidate = std::path::Path::new(std::ffi::OsStr::from_bytes(dir))
            .join(std::ffi::OsStr::from_bytes(program));
        let runnable = std::fs::metadata(&candidate)
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
        if runnable {
            return CString::new(candidate.as_os_str().as_bytes()).map_err(io::Error::other);
        }
    }
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        format!(
            "`{}` was not found on the PATH",
            String::from_utf8_lossy(program)
        ),
    ))
}

/// `fd`, or a copy of it numbered 3 or above (close-on-exec like the original).
pub(super) fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    // SAFETY: duplicates a descriptor owned here; the copy is owned by the result.
    let copy = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if copy < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the copy was just made and belongs to nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(copy) })
}

pub(super) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 fills the two descriptors, which are then owned here.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just made and belong to nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The child, between clone and exec: system calls only.
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `Shared` the parent passed, alive while the parent waits.
    let shared = unsafe { &*(arg as *const Shared<'_>) };
    let fail = |errno: i32| -> libc::c_int {
        shared.error.store(errno.max(1), Ordering::SeqCst);
        // SAFETY: ends the child at once, running nothing of Mandate's.
        unsafe { libc::_exit(127) }
    };
    // SAFETY (whole block): system calls on data owned by `shared` or this frame.
    unsafe {
        if let Err(errno) = reset_signals_and_streams(&shared.streams) {
            return fail(errno);
        }
        if let Some(cwd) = &shared.launch.cwd {
            if libc::chdir(cwd.as_ptr()) != 0 {
                return fail(*libc::__errno_location());
            }
        }
        if let Err(e) = shared.launch.setup.apply() {
            return fail(e.raw_os_error().unwrap_or(libc::EPERM));
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &shared.mask, std::ptr::null_mut());
        libc::execve(
            shared.program.as_ptr(),
            shared.argv.as_ptr(),
            shared.envp.as_ptr(),
        );
        fail(*libc::__errno_location())
    }
}

/// A confined process started by [`super::spawn`], for async callers; killed (with SIGKILL)
/// and reaped when dropped before it was waited for.
pub struct ConfinedChild {
    pid: libc::pid_t,
    exit: Option<ExitStatus>,
    /// Readable once the process has exited (None where the kernel has no pidfd).
    exited: Option<AsyncFd<OwnedFd>>,
    pub stdin: Option<tokio::process::ChildStdin>,
    pub stdout: Option<tokio::process::ChildStdout>,
    pub stderr: Option<tokio::process::ChildStderr>,
}

impl ConfinedChild {
    /// Wraps a started child for the current tokio runtime.
    pub(super) fn new(raw: Raw) -> io::Result<ConfinedChild> {
        // SAFETY: pidfd_open on this process's own child, not yet reaped.
        let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, raw.pid, 0) };
        let exited = if pidfd >= 0 {
            // SAFETY: the descriptor was just made and belongs to nobody else; the AsyncFd
            // owns it, open and unchanged, until it is dropped.
            unsafe {
                let fd = OwnedFd::from_raw_fd(pidfd as RawFd);
                AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE).ok()
            }
        } else {
            None
        };
        let mut child = ConfinedChild {
            pid: raw.pid,
            exit: None,
            exited,
            stdin: None,
            stdout: None,
            stderr: None,
        };
        child.stdin = raw
            .stdin
            .map(|fd| tokio::process::ChildStdin::from_std(fd.into()))
            .transpose()?;
        child.stdout = raw
            .stdout
            .map(|fd| tokio::process::ChildStdout::from_std(fd.into()))
            .transpose()?;
        child.stderr = raw
            .stderr
            .map(|fd| tokio::process::ChildStderr::from_std(fd.into()))
            .transpose()?;
        Ok(child)
    }

    /// Its pid (which is its process group and session), until it has been waited for.
    pub fn id(&self) -> Option<u32> {
        self.exit.is_none().then_some(self.pid as u32)
    }

    /// Its status if it has exited (it is reaped then).
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if let Some(status) = self.exit {
            return Ok(Some(status));
        }
        let mut status = 0;
        // SAFETY: waitpid on this process's own child, with a status owned by this frame.
        let rc = unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) };
        match rc {
            0 => Ok(None),
            rc if rc == self.pid => {
                let status = ExitStatus::from_raw(status);
                self.exit = Some(status);
                Ok(Some(status))
            }
            _ => Err(io::Error::last_os_error()),
        }
    }

    /// Waits for it to exit.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        loop {
            if let Some(status) = self.try_wait()? {
                return Ok(status);
            }
            match &self.exited {
                Some(fd) => fd.readable().await?.clear_ready(),
                None => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    }

    /// Waits for it to exit, reading its stdout and stderr to their end meanwhile.
    pub async fn wait_with_output(mut self) -> io::Result<std::process::Output> {
        use tokio::io::AsyncReadExt as _;
        async fn all(pipe: Option<impl tokio::io::AsyncRead + Unpin>) -> io::Result<Vec<u8>> {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                pipe.read_to_end(&mut bytes).await?;
            }
            Ok(bytes)
        }
        drop(self.stdin.take());
        let (out, err) = (self.stdout.take(), self.stderr.take());
        let (stdout, stderr) = tokio::try_join!(all(out), all(err))?;
        let status = self.wait().await?;
        Ok(std::process::Output {
            status,
            stdout,
            stderr,
        })
    }

    /// Sends it SIGKILL (not its group: see `kill_group`), unless it was waited for.
    pub fn start_kill(&mut self) -> io::Result<()> {
        if self.exit.is_some() {
            return Ok(());
        }
        // SAFETY: kill only sends a signal to this process's own unreaped child.
        if unsafe { libc::kill(self.pid, libc::SIGKILL) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

impl Drop for ConfinedChild {
    fn drop(&mut self) {
        if self.exit.is_some() || matches!(self.try_wait(), Ok(Some(_))) {
            return;
        }
        let _ = self.start_kill();
        let pid = self.pid;
        // Reaped off the caller's thread: SIGKILL is prompt, but not instantaneous.
        let _ = std::thread::Builder::new()
            .name("mandate-reap".into())
            .spawn(move || wait_blocking(pid));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(program: &str, args: &[&str], cwd: Option<&std::path::Path>, parent: i32) -> Launch {
        let c = |s: &str| CString::new(s).expect("c string");
        Launch {
            program: c(program),
            argv: std::iter::once(program)
                .chain(args.iter().copied())
                .map(c)
                .collect(),
            envp: vec![c("PATH=/usr/bin:/bin"), c("LC_ALL=C")],
            cwd: cwd.map(|d| c(&d.display().to_string())),
            setup: super::super::spawn::plain_setup(parent),
            io: [Io::Inherit; 3],
            kept: None,
        }
    }

    fn me() -> i32 {
        // SAFETY: getpid takes no argument.
        unsafe { libc::getpid() }
    }

    #[test]
    fn a_program_runs_with_its_environment_directory_and_streams_and_default_signals() {
        let dir = tempfile::tempdir().expect("tmp");
        // A name looked up on the child's PATH; SIGPIPE is the default again (Mandate ignores
        // it), so `yes | head` ends by it.
        let out = launch(
            "sh",
            &["-c", "pwd; echo \"$LC_ALL\"; yes | head -n 1; echo err >&2"],
            Some(dir.path()),
            me(),
        )
        .output()
        .expect("run");
        assert!(out.status.success(), "{out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                dir.path()
                    .canonicalize()
                    .expect("real")
                    .display()
                    .to_string()
                    .as_str(),
                "C",
                "y"
            ]
        );
        assert_eq!(out.stderr, b"err\n");
    }

    #[test]
    fn a_failure_before_exec_is_the_spawn_s_error_and_nothing_runs() {
        let dir = tempfile::tempdir().expect("tmp");
        let marker = dir.path().join("ran");
        let touch = format!("touch '{}'", marker.display());
        // As if Mandate had died before the child's parent-death signal was set.
        let err = launch("/bin/sh", &["-c", &touch], None, 1)
            .status()
            .expect_err("refused before exec");
        assert_eq!(err.raw_os_error(), Some(libc::ESRCH), "{err}");
        let err = launch(
            "/bin/sh",
            &["-c", &touch],
            Some(&dir.path().join("gone")),
            me(),
        )
        .status()
        .expect_err("no such directory");
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT), "{err}");
        let err = launch("no-such-program-here", &[], None, me())
            .status()
            .expect_err("not on the PATH");
        assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
        assert!(!marker.exists());
    }

    #[test]
    fn a_dropped_child_is_killed_and_reaped() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let pid = rt.block_on(async {
            let mut l = launch("/bin/sleep", &["30"], None, me());
            l.stdin(Io::Null);
            let child = ConfinedChild::new(start(&l).expect("start")).expect("child");
            child.id().expect("pid")
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::path::Path::new(&format!("/proc/{pid}")).exists()
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
    }
}
