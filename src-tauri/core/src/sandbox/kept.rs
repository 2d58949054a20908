//! The namespace kept for the session: bubblewrap builds the view every command shares (a
//! read-only `/`, fresh `/dev`, `/proc`, `/tmp` and `/run`) once, and each command then only
//! adds its own mounts in a copy of it, instead of bubblewrap building everything again for
//! every command (its own start is most of the cost: see the README's benchmarks).
//!
//! Once per process, [`session`] runs bubblewrap with the arguments every command gets
//! ([`super::bwrap::FIXED`]) plus the machine's `/tmp` and `/run` under [`HOST`], keeps
//! descriptors of its user and mount namespaces, and lets it exit: the descriptors keep the
//! namespaces alive. For each command ([`start`]), a process that shares Mandate's memory (as
//! [`super::vspawn`] does, but without waiting: it lives as long as the command) joins them,
//! copies the mount namespace, covers `/tmp`, `/run`, `/dev/shm` and `/dev/pts` with fresh
//! ones, makes the command's mounts ([`super::bwrap::mounts`], the same list bubblewrap is
//! given), and starts the first process of a new PID namespace, which starts the command and
//! exits with its status (as bubblewrap's does); the first process waits for it and exits with
//! that status. The command sees Mandate's user (the session's user namespace maps it to itself)
//! with no capability, `no_new_privs`, the system-call filter and Landlock, as under
//! bubblewrap. The two processes before it share Mandate's memory and never execute anything:
//! the command is kept from them by its PID namespace (the first is not in it) and by its
//! Landlock domain (no `ptrace`, no `/proc/1/mem` of a process outside it), which is why this
//! is used only where the command has one.
//!
//! Nothing one command leaves reaches the next: every writable mount is made per command, the
//! shared `/dev` is read-only, and each command has its own PID and IPC namespaces.

use std::ffi::CString;
use std::io::{self, Read as _};
use std::os::fd::{AsRawFd as _, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, OnceLock};

use super::bwrap::{self, Mount};
use super::vspawn::{self, Launch, Raw};
use super::CommandSandbox;

mod child;
use child::first;

/// Where the session's view keeps the machine's `/tmp` and `/run`, the sources of the binds
/// under them; covered by the command's fresh `/run` before it runs.
const HOST: &str = "/run/.mandate-host";

/// The namespaces kept for the session.
pub(super) struct Session {
    /// The user namespace that owns its mount namespace, which maps Mandate's own ids to
    /// themselves; none when Mandate runs as root (bubblewrap makes none then).
    user: Option<OwnedFd>,
    mount: OwnedFd,
}

/// The session's arguments: every command's ([`bwrap::FIXED`]) but `/dev` made of its parts,
/// as bubblewrap's `--dev` makes it, without the `devpts` (each command mounts its own). With
/// `--dev`, bubblewrap maps Mandate's user to root in an outer user namespace (to mount
/// `devpts`) and back in a nested one; without it there is one, which maps Mandate's ids to
/// themselves, and the command needs no user namespace of its own.
fn session_arguments() -> Vec<String> {
    let mut args = Vec::new();
    let mut fixed = bwrap::FIXED.iter();
    while let Some(&arg) = fixed.next() {
        if arg != "--dev" {
            args.push(arg.to_string());
            continue;
        }
        let _ = fixed.next();
        args.extend(["--tmpfs", "/dev"].map(String::from));
        for node in super::landlock_rules::DEVICES {
            let path = node.to_string_lossy().into_owned();
            args.extend(["--dev-bind".to_string(), path.clone(), path]);
        }
        for (link, to) in [
            ("/dev/fd", "/proc/self/fd"),
            ("/dev/stdin", "/proc/self/fd/0"),
            ("/dev/stdout", "/proc/self/fd/1"),
            ("/dev/stderr", "/proc/self/fd/2"),
            ("/dev/core", "/proc/kcore"),
            ("/dev/ptmx", "pts/ptmx"),
        ] {
            args.extend(["--symlink", to, link].map(String::from));
        }
        args.extend(["--dir", "/dev/shm", "--dir", "/dev/pts"].map(String::from));
    }
    args.extend(["--bind", "/tmp", &format!("{HOST}/tmp")].map(String::from));
    args.extend(["--bind", "/run", &format!("{HOST}/run")].map(String::from));
    args
}

/// The session's namespaces, made on first use; none where they cannot be made (the command
/// then runs under bubblewrap alone, as before).
pub(super) fn session(bwrap: &Path) -> Option<&'static Session> {
    static SESSION: OnceLock<Option<&'static Session>> = OnceLock::new();
    *SESSION.get_or_init(|| {
        let made = Session::start(bwrap).and_then(|session| {
            // Kept for the whole process.
            let session: &'static Session = Box::leak(Box::new(session));
            session.trial()?;
            Ok(session)
        });
        match made {
            Ok(session) => Some(session),
            Err(e) => {
                tracing::warn!(error = %e, "no namespace kept for the session: each command starts bubblewrap");
                None
            }
        }
    })
}

impl Session {
    pub(super) fn start(bwrap: &Path) -> io::Result<Session> {
        // open_tree, move_mount and mount_setattr (Linux 5.12): refused for the bad
        // descriptor where they exist.
        for call in [
            libc::SYS_open_tree,
            libc::SYS_move_mount,
            libc::SYS_mount_setattr,
        ] {
            // SAFETY: every argument is an integer or null; the descriptor -1 is refused.
            let rc = unsafe { libc::syscall(call, -1, std::ptr::null::<u8>(), 0, 0, 0) };
            if rc < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) {
                return Err(io::Error::other("the kernel lacks the new mount calls"));
            }
        }
        let mut holder = Command::new(bwrap)
            .args(session_arguments())
            .args(["--info-fd", "1", "--", "/bin/sh", "-c", "read _ || :"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .env_clear()
            .spawn()?;
        let namespaces = (|| {
            let mut out = holder
                .stdout
                .take()
                .ok_or_else(|| io::Error::other("no stdout"))?;
            let mut info = Vec::new();
            let mut chunk = [0u8; 512];
            while !info.contains(&b'}') && info.len() < 4096 {
                let n = out.read(&mut chunk)?;
                if n == 0 {
                    break;
                }
                info.extend_from_slice(&chunk[..n]);
            }
            let pid =
                child_pid(&info).ok_or_else(|| io::Error::other("bubblewrap gave no child pid"))?;
            let mount: OwnedFd = std::fs::File::open(format!("/proc/{pid}/ns/mnt"))?.into();
            // The user namespace that owns it (not the process's own, which bubblewrap may
            // change after it reported the pid).
            const NS_GET_USERNS: u64 = 0xb701;
            // SAFETY: an ioctl without argument on a descriptor owned here; the result is a new
            // descriptor, owned by the OwnedFd.
            let user = unsafe { libc::ioctl(mount.as_raw_fd(), NS_GET_USERNS as _) };
            if user < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: just made, owned by nobody else.
            let user = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(user) };
            Ok::<_, io::Error>((user, mount))
        })();
        drop(holder.stdin.take());
        let status = holder.wait()?;
        let (user, mount) = namespaces?;
        if !status.success() {
            return Err(io::Error::other(format!("bubblewrap exited with {status}")));
        }
        let ours = std::fs::metadata("/proc/self/ns/user")?;
        let theirs = std::fs::File::from(user.try_clone()?).metadata()?;
        let user = (ours.ino() != theirs.ino() || ours.dev() != theirs.dev()).then_some(user);
        // Above the standard descriptors, which the processes before a command replace.
        let user = user.map(vspawn::above_stdio).transpose()?;
        let mount = vspawn::above_stdio(mount)?;
        Ok(Session { user, mount })
    }

    /// One command with no mount of its own, started as every command is: where a step is
    /// refused here (a system-call filter around Mandate, a setuid bubblewrap whose namespaces
    /// Mandate cannot join), commands start their own bubblewrap instead of all failing.
    pub(super) fn trial(&'static self) -> io::Result<()> {
        let plan = Plan {
            session: self,
            ops: Vec::new(),
            cwd: c"/".into(),
        };
        let launch = Launch {
            program: c"/bin/sh".into(),
            argv: vec![c"sh".into(), c"-c".into(), c"exit 0".into()],
            envp: Vec::new(),
            cwd: None,
            setup: super::spawn::plain_setup(super::spawn::parent_pid()),
            io: [vspawn::Io::Null; 3],
            kept: None,
        };
        let raw = start(&launch, &plan)?;
        let status = vspawn::wait_blocking(raw.pid)?;
        if !status.success() {
            return Err(io::Error::other(format!(
                "the trial command ended with {status}"
            )));
        }
        Ok(())
    }

    /// The command's mounts in the session's view, or none when one cannot be made there
    /// (a source under `/dev` or `/proc`): bubblewrap makes them then.
    pub(super) fn plan(&'static self, sandbox: &CommandSandbox) -> Option<Plan> {
        let mut ops = Vec::new();
        for mount in bwrap::mounts(sandbox, false) {
            let (kind, path) = match &mount {
                Mount::ReadOnly(p) => (Kind::ReadOnly, p),
                Mount::Writable(p) => (Kind::Writable, p),
                Mount::HiddenDir(p) => (Kind::HiddenDir, p),
                Mount::HiddenFile(p) => (Kind::HiddenFile, p),
            };
            let fresh = ["/tmp", "/run"].iter().any(|m| path.starts_with(m));
            if ["/dev", "/proc"].iter().any(|m| path.starts_with(m)) {
                return None;
            }
            let source = match kind {
                Kind::HiddenDir => None,
                Kind::HiddenFile => Some((false, CString::new("/dev/null").ok()?)),
                // Under `/tmp` or `/run`: the machine's, kept under HOST.
                _ if fresh => {
                    let relative = path.strip_prefix("/").ok()?;
                    Some((true, CString::new(relative.as_os_str().as_bytes()).ok()?))
                }
                _ => Some((false, CString::new(path.as_os_str().as_bytes()).ok()?)),
            };
            ops.push(Op {
                kind,
                source,
                target: CString::new(path.as_os_str().as_bytes()).ok()?,
                // What `mounts` hid it knows to be a directory or a file.
                create: fresh.then(|| match kind {
                    Kind::HiddenDir => true,
                    Kind::HiddenFile => false,
                    _ => path.is_dir(),
                }),
            });
        }
        Some(Plan {
            session: self,
            ops,
            cwd: CString::new(sandbox.cwd.as_os_str().as_bytes()).ok()?,
        })
    }
}

/// `"child-pid": N` in bubblewrap's `--info-fd` output.
fn child_pid(info: &[u8]) -> Option<u32> {
    let text = std::str::from_utf8(info).ok()?;
    let after = &text[text.find("\"child-pid\"")? + "\"child-pid\"".len()..];
    let digits = after.trim_start_matches([':', ' ', '\t', '\n']);
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    digits[..end].parse().ok().filter(|&pid| pid > 0)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    ReadOnly,
    Writable,
    HiddenDir,
    HiddenFile,
}

/// One mount of the command, prepared in Mandate for the child, which only makes system calls.
struct Op {
    kind: Kind,
    /// Where it comes from: under [`HOST`] (true) or the path in the session's view.
    source: Option<(bool, CString)>,
    target: CString,
    /// Under a fresh `/tmp` or `/run`, the target is made first: a directory (true) or a file.
    create: Option<bool>,
}

/// A command's mounts in the session's namespaces (see [`Session::plan`]).
pub struct Plan {
    session: &'static Session,
    ops: Vec<Op>,
    cwd: CString,
}

/// One stack for the processes between Mandate and a command, which live as long as the
/// command: reused once the kernel has cleared the word of each (`CLONE_CHILD_CLEARTID`) at
/// its exit (and the command's at its `execve`).
struct Stack {
    base: usize,
    /// `first`'s, `init`'s and the command's.
    tids: [AtomicI32; 3],
}

impl Stack {
    fn free(&self) -> bool {
        self.tids.iter().all(|t| t.load(Ordering::SeqCst) == 0)
    }

    fn take(&self) {
        for t in &self.tids {
            t.store(-1, Ordering::SeqCst);
        }
    }
}

const STACK: usize = 512 * 1024;
/// The first process of the command's PID namespace runs below this on the same stack, and
/// the command's own first steps below [`COMMAND_STACK`].
const INIT_STACK: usize = 320 * 1024;
const COMMAND_STACK: usize = 160 * 1024;

/// A stack no running process uses, marked in use.
fn stack() -> io::Result<&'static Stack> {
    static STACKS: Mutex<Vec<&'static Stack>> = Mutex::new(Vec::new());
    let mut stacks = STACKS.lock().unwrap_or_else(|e| e.into_inner());
    // Under the lock: no other start takes the same stack meanwhile.
    if let Some(stack) = stacks.iter().find(|s| s.free()) {
        stack.take();
        return Ok(stack);
    }
    // SAFETY: a fresh private anonymous mapping, never unmapped (stacks are reused).
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            STACK,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let stack: &'static Stack = Box::leak(Box::new(Stack {
        base: base as usize,
        tids: [AtomicI32::new(-1), AtomicI32::new(-1), AtomicI32::new(-1)],
    }));
    stacks.push(stack);
    Ok(stack)
}

/// What the two child processes read, prepared in Mandate.
struct Child<'a> {
    launch: &'a Launch,
    plan: &'a Plan,
    program: &'a CString,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    streams: [Option<RawFd>; 3],
    /// The descriptors the first child keeps (sorted); it closes every other.
    keep: Vec<RawFd>,
    /// Closed by the first child once the command runs (or at its exit).
    report: RawFd,
    init_stack: *mut libc::c_void,
    command_stack: *mut libc::c_void,
    /// Cleared by the kernel when `init` exits, and when the command executes or exits.
    init_tid: *mut libc::pid_t,
    command_tid: *mut libc::pid_t,
    mask: libc::sigset_t,
    /// Where the set-up failed (a `STEP_` value, or the index of the mount in the plan) and
    /// the error number.
    step: AtomicI32,
    error: AtomicI32,
}

const STEP_SETUP: i32 = -1;
const STEP_JOIN: i32 = -2;
const STEP_UNSHARE: i32 = -3;
const STEP_FRESH: i32 = -4;
const STEP_PROC: i32 = -5;
const STEP_START: i32 = -7;
const STEP_DIR: i32 = -8;
const STEP_CONFINE: i32 = -9;
const STEP_EXEC: i32 = -10;

/// The error of a failed start, saying which step failed (an `execve` error stays as it is).
fn failure(plan: &Plan, step: i32, errno: i32) -> io::Error {
    let error = io::Error::from_raw_os_error(errno);
    let what = match step {
        STEP_EXEC => return error,
        STEP_SETUP => "setting up the process".to_string(),
        STEP_JOIN => "joining the namespaces kept for the session".to_string(),
        STEP_UNSHARE => "making the command's namespaces".to_string(),
        STEP_FRESH => "mounting the command's fresh /tmp, /run, /dev/shm and /dev/pts".to_string(),
        STEP_PROC => "mounting the command's /proc".to_string(),
        STEP_START => "starting the command's processes".to_string(),
        STEP_DIR => format!("entering `{}`", plan.cwd.to_string_lossy()),
        STEP_CONFINE => "confining the command".to_string(),
        i => match plan.ops.get(i as usize) {
            Some(op) => format!(
                "mounting `{}` in the command's view",
                op.target.to_string_lossy()
            ),
            None => "making the command's view".to_string(),
        },
    };
    io::Error::new(error.kind(), format!("{what}: {error}"))
}

/// Starts `launch` in the session's namespaces with `plan`'s mounts, from the calling thread
/// (as [`vspawn::start`]); the pid is that of the process that waits for the command.
pub(super) fn start(launch: &Launch, plan: &Plan) -> io::Result<Raw> {
    let (child_ends, parent_ends, streams) = vspawn::streams(launch)?;
    let program = vspawn::resolve(launch)?;
    let (report_read, report_write) = vspawn::pipe()?;
    // Above the standard descriptors, which `first` replaces before it is done with this one.
    let report_write = vspawn::above_stdio(report_write)?;
    let session = plan.session;
    let mut keep: Vec<RawFd> = [report_write.as_raw_fd(), session.mount.as_raw_fd()]
        .into_iter()
        .chain(session.user.as_ref().map(|fd| fd.as_raw_fd()))
        .chain(launch.setup.own_descriptors())
        .collect();
    keep.sort_unstable();
    let terminated = |list: &[CString]| {
        list.iter()
            .map(|s| s.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect::<Vec<_>>()
    };
    let stack = stack()?;
    let mut child = Child {
        launch,
        plan,
        program: &program,
        argv: terminated(&launch.argv),
        envp: terminated(&launch.envp),
        streams,
        keep,
        report: report_write.as_raw_fd(),
        init_stack: (stack.base + INIT_STACK) as *mut libc::c_void,
        command_stack: (stack.base + COMMAND_STACK) as *mut libc::c_void,
        init_tid: stack.tids[1].as_ptr(),
        command_tid: stack.tids[2].as_ptr(),
        // SAFETY: an all-zero sigset_t is a valid value for pthread_sigmask to fill.
        mask: unsafe { std::mem::zeroed() },
        step: AtomicI32::new(0),
        error: AtomicI32::new(0),
    };
    let top = (stack.base + STACK) as *mut libc::c_void;
    // SAFETY (whole block): signal masks of this thread, on stack data; `clone` runs `first`
    // on its own stack with a pointer to `child`, which lives until the report pipe is closed
    // (the command has been executed, or the processes have exited); the kernel clears each
    // process's word in the stack's record, and the stack is not reused before.
    let pid = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut child.mask);
        let pid = libc::clone(
            first,
            top,
            libc::CLONE_VM | libc::CLONE_CHILD_CLEARTID | libc::SIGCHLD,
            (&raw mut child).cast(),
            std::ptr::null_mut::<libc::pid_t>(),
            std::ptr::null_mut::<libc::c_void>(),
            stack.tids[0].as_ptr(),
        );
        if pid < 0 {
            let spawn_error = io::Error::last_os_error();
            libc::pthread_sigmask(libc::SIG_SETMASK, &child.mask, std::ptr::null_mut());
            for t in &stack.tids {
                t.store(0, Ordering::SeqCst);
            }
            return Err(spawn_error);
        }
        pid
    };
    drop(report_write);
    // Until the report closes, the processes read `child`, the launch and the plan, and share
    // this thread's `errno`: nothing returns before, and this thread takes no signal meanwhile
    // (its mask is still full).
    let mut report = std::fs::File::from(report_read);
    let mut byte = [0u8; 1];
    loop {
        match report.read(&mut byte) {
            Ok(0) => break,
            Ok(_) => continue,
            Err(_) => {
                // Not expected on a pipe of this process: end them all and wait for the end.
                // SAFETY: signals this process's own child's group.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
    }
    // SAFETY: the mask saved before the clone, for this thread.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &child.mask, std::ptr::null_mut()) };
    drop(child_ends);
    let error = child.error.load(Ordering::SeqCst);
    if error != 0 {
        let _ = vspawn::wait_blocking(pid);
        return Err(failure(plan, child.step.load(Ordering::SeqCst), error));
    }
    let [stdin, stdout, stderr] = parent_ends;
    Ok(Raw {
        pid,
        stdin,
        stdout,
        stderr,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bubblewrap_s_child_pid_is_read_from_its_info() {
        let info = b"{\n    \"child-pid\": 4242,\n    \"cgroup-namespace\": 1\n}";
        assert_eq!(child_pid(info), Some(4242));
        assert_eq!(child_pid(b"{\"child-pid\":7}"), Some(7));
        assert_eq!(child_pid(b"{\"child-pid\": 0}"), None);
        assert_eq!(child_pid(b"{\"other\": 5}"), None);
        assert_eq!(child_pid(b"\xff\"child-pid\": 5"), None);
    }
}
