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
//! that status. The command sees Mandate's user (a user namespace of its own maps it back)
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
    /// Its user namespace; none when Mandate runs as root (bubblewrap makes none then).
    user: Option<OwnedFd>,
    mount: OwnedFd,
    /// `/proc/self/uid_map` and `gid_map` of the command's own user namespace: Mandate's ids,
    /// which are root in the session's.
    uid_map: CString,
    gid_map: CString,
}

/// The session's namespaces, made on first use; none where they cannot be made (the command
/// then runs under bubblewrap alone, as before).
pub(super) fn session(bwrap: &Path) -> Option<&'static Session> {
    static SESSION: OnceLock<Option<Session>> = OnceLock::new();
    SESSION
        .get_or_init(|| match Session::start(bwrap) {
            Ok(session) => Some(session),
            Err(e) => {
                tracing::warn!(error = %e, "no namespace kept for the session: each command starts bubblewrap");
                None
            }
        })
        .as_ref()
}

impl Session {
    fn start(bwrap: &Path) -> io::Result<Session> {
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
        let host_tmp = format!("{HOST}/tmp");
        let host_run = format!("{HOST}/run");
        let mut holder = Command::new(bwrap)
            .args(bwrap::FIXED)
            .args(["--bind", "/tmp", &host_tmp, "--bind", "/run", &host_run])
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
            let open = |ns: &str| -> io::Result<OwnedFd> {
                Ok(std::fs::File::open(format!("/proc/{pid}/ns/{ns}"))?.into())
            };
            Ok::<_, io::Error>((open("user")?, open("mnt")?))
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
        // SAFETY: getuid and getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let map = |id: u32| CString::new(format!("{id} 0 1\n")).map_err(io::Error::other);
        Ok(Session {
            user,
            mount,
            uid_map: map(uid)?,
            gid_map: map(gid)?,
        })
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
                create: fresh.then(|| path.is_dir()),
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

/// One stack for the process between Mandate and a command, which lives as long as the
/// command: reused once the kernel has cleared `tid` (`CLONE_CHILD_CLEARTID`), at its exit.
struct Stack {
    base: usize,
    tid: AtomicI32,
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
    for stack in stacks.iter() {
        if stack
            .tid
            .compare_exchange(0, -1, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return Ok(stack);
        }
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
        tid: AtomicI32::new(-1),
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
    mask: libc::sigset_t,
    error: AtomicI32,
}

/// Starts `launch` in the session's namespaces with `plan`'s mounts, from the calling thread
/// (as [`vspawn::start`]); the pid is that of the process that waits for the command.
pub(super) fn start(launch: &Launch, plan: &Plan) -> io::Result<Raw> {
    let (child_ends, parent_ends, streams) = vspawn::streams(launch)?;
    let program = vspawn::resolve(launch)?;
    let (report_read, report_write) = vspawn::pipe()?;
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
        // SAFETY: an all-zero sigset_t is a valid value for pthread_sigmask to fill.
        mask: unsafe { std::mem::zeroed() },
        error: AtomicI32::new(0),
    };
    let top = (stack.base + STACK) as *mut libc::c_void;
    // SAFETY (whole block): signal masks of this thread, on stack data; `clone` runs `first`
    // on its own stack with a pointer to `child`, which lives until the report pipe is closed
    // (the command has been executed, or the child has exited); the kernel clears `tid` when
    // the child exits, and the stack is not reused before.
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
            stack.tid.as_ptr(),
        );
        let spawn_error = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &child.mask, std::ptr::null_mut());
        if pid < 0 {
            stack.tid.store(0, Ordering::SeqCst);
            return Err(spawn_error);
        }
        pid
    };
    drop(report_write);
    let mut report = std::fs::File::from(report_read);
    let mut byte = [0u8; 1];
    loop {
        match report.read(&mut byte) {
            Ok(0) => break,
            Ok(_) => continue,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    drop(child_ends);
    let error = child.error.load(Ordering::SeqCst);
    if error != 0 {
        let _ = vspawn::wait_blocking(pid);
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
