//! The processes between Mandate and a command in the namespace kept for the session (see
//! the parent module): between clone and exec they make only system calls, on data prepared
//! in Mandate.

use std::ffi::CStr;
use std::os::fd::{AsRawFd as _, RawFd};
use std::sync::atomic::Ordering;

use super::{
    Child, Kind, Plan, STEP_CONFINE, STEP_DIR, STEP_EXEC, STEP_FRESH, STEP_JOIN, STEP_PROC,
    STEP_SETUP, STEP_START, STEP_UNSHARE,
};
use crate::sandbox::vspawn;

fn ok(rc: libc::c_long) -> Result<(), i32> {
    if rc < 0 {
        // SAFETY: reads this thread's error number.
        Err(unsafe { *libc::__errno_location() })
    } else {
        Ok(())
    }
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;
const MOUNT_ATTR_NOEXEC: u64 = 0x8;
const OPEN_TREE_CLONE: libc::c_uint = 1;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
const MOVE_MOUNT_T_EMPTY_PATH: libc::c_uint = 0x40;

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// `mount_setattr` on `path` relative to `dir` (or on `dir` itself with an empty path).
unsafe fn set_attributes(
    dir: RawFd,
    path: &CStr,
    recursive: bool,
    set: u64,
    clear: u64,
) -> Result<(), i32> {
    let attr = MountAttr {
        attr_set: set,
        attr_clr: clear,
        propagation: 0,
        userns_fd: 0,
    };
    let mut flags = if recursive { libc::AT_RECURSIVE } else { 0 };
    if path.is_empty() {
        flags |= libc::AT_EMPTY_PATH;
    }
    // SAFETY: pointers to data valid for the call.
    ok(unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            dir,
            path.as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    })
}

unsafe fn mount_fs(fs: &CStr, target: &CStr, flags: libc::c_ulong, data: &CStr) -> Result<(), i32> {
    // SAFETY: NUL-terminated strings valid for the call.
    ok(unsafe {
        libc::mount(
            fs.as_ptr(),
            target.as_ptr(),
            fs.as_ptr(),
            flags,
            data.as_ptr().cast(),
        )
    } as libc::c_long)
}

/// Makes `target` and the directories above it (under a fresh `/tmp` or `/run`): a
/// directory, or an empty file when `dir` is false. Uses a copy of the path on the stack.
unsafe fn make_target(target: &CStr, dir: bool) -> Result<(), i32> {
    let bytes = target.to_bytes();
    let mut path = [0u8; 4096];
    if bytes.len() >= path.len() {
        return Err(libc::ENAMETOOLONG);
    }
    path[..bytes.len()].copy_from_slice(bytes);
    // SAFETY (whole block): `path` is NUL-terminated at every point it is passed.
    unsafe {
        for i in 1..bytes.len() {
            if path[i] == b'/' {
                path[i] = 0;
                libc::mkdir(path.as_ptr().cast(), 0o755);
                path[i] = b'/';
            }
        }
        if dir {
            if libc::mkdir(path.as_ptr().cast(), 0o755) != 0
                && *libc::__errno_location() != libc::EEXIST
            {
                return Err(*libc::__errno_location());
            }
        } else {
            // An existing file may lie in a read-only mount made before.
            let there = libc::open(
                path.as_ptr().cast(),
                libc::O_PATH | libc::O_CLOEXEC | libc::O_NOFOLLOW,
            );
            if there >= 0 {
                libc::close(there);
                return Ok(());
            }
            let fd = libc::open(
                path.as_ptr().cast(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC | libc::O_NOFOLLOW,
                0o644,
            );
            if fd < 0 {
                return Err(*libc::__errno_location());
            }
            libc::close(fd);
        }
    }
    Ok(())
}

/// `path` (relative to `dir`, beneath it when `dir` is a descriptor) as an `O_PATH`
/// descriptor, refused if a symbolic link lies anywhere on it.
unsafe fn open_path(dir: RawFd, path: &CStr) -> Result<RawFd, i32> {
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_PATH | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_NO_SYMLINKS;
    if dir != libc::AT_FDCWD {
        how.resolve |= libc::RESOLVE_BENEATH;
    }
    // SAFETY: pointers to data valid for the call.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir,
            path.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    ok(fd)?;
    Ok(fd as RawFd)
}

/// Moves the detached mount `tree` onto `target` (descriptors).
unsafe fn move_onto(tree: RawFd, target: RawFd) -> Result<(), i32> {
    // SAFETY: descriptors of this process and empty paths.
    ok(unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree,
            c"".as_ptr(),
            target,
            c"".as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH,
        )
    })
}

/// An empty read-only directory (a new tmpfs) over `target`.
unsafe fn mount_empty(target: RawFd) -> Result<(), i32> {
    const FSOPEN_CLOEXEC: libc::c_uint = 1;
    const FSCONFIG_SET_STRING: libc::c_uint = 1;
    const FSCONFIG_CMD_CREATE: libc::c_uint = 6;
    const FSMOUNT_CLOEXEC: libc::c_uint = 1;
    // SAFETY (whole block): NUL-terminated strings and descriptors of this process.
    unsafe {
        let fs = libc::syscall(libc::SYS_fsopen, c"tmpfs".as_ptr(), FSOPEN_CLOEXEC);
        ok(fs)?;
        let fs = fs as RawFd;
        let mounted = (|| {
            ok(libc::syscall(
                libc::SYS_fsconfig,
                fs,
                FSCONFIG_SET_STRING,
                c"mode".as_ptr(),
                c"0755".as_ptr(),
                0,
            ))?;
            ok(libc::syscall(
                libc::SYS_fsconfig,
                fs,
                FSCONFIG_CMD_CREATE,
                std::ptr::null::<libc::c_char>(),
                std::ptr::null::<libc::c_void>(),
                0,
            ))?;
            let attributes = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
            let mount = libc::syscall(libc::SYS_fsmount, fs, FSMOUNT_CLOEXEC, attributes);
            ok(mount)?;
            let moved = move_onto(mount as RawFd, target);
            libc::close(mount as RawFd);
            moved
        })();
        libc::close(fs);
        mounted
    }
}

/// `source` (under the machine's `/tmp` and `/run` kept at `host`, or in the session's view)
/// bound onto `target` with the flags of `kind`.
unsafe fn bind(
    from_host: bool,
    host: RawFd,
    source: &CStr,
    kind: Kind,
    target: RawFd,
) -> Result<(), i32> {
    // SAFETY (whole block): descriptors of this process and NUL-terminated strings.
    unsafe {
        let from = open_path(if from_host { host } else { libc::AT_FDCWD }, source)?;
        let tree = libc::syscall(
            libc::SYS_open_tree,
            from,
            c"".as_ptr(),
            OPEN_TREE_CLONE
                | libc::AT_RECURSIVE as libc::c_uint
                | libc::AT_EMPTY_PATH as libc::c_uint
                | libc::O_CLOEXEC as libc::c_uint,
        );
        libc::close(from);
        ok(tree)?;
        let tree = tree as RawFd;
        // As bubblewrap: flags are only added beneath; a writable bind is writable at its top
        // mount only, and what was read-only inside it stays so.
        let mut set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
        if kind != Kind::Writable {
            set |= MOUNT_ATTR_RDONLY;
        }
        let mut done = set_attributes(tree, c"", true, set, 0);
        if kind == Kind::Writable {
            done = done.and_then(|()| set_attributes(tree, c"", false, 0, MOUNT_ATTR_RDONLY));
        }
        let done = done.and_then(|()| move_onto(tree, target));
        libc::close(tree);
        done
    }
}

/// The command's view in a copy of the session's mount namespace (see the module's text).
unsafe fn make_view(plan: &Plan) -> Result<(), (i32, i32)> {
    // SAFETY (whole block): system calls on NUL-terminated strings and descriptors of this
    // process.
    unsafe {
        let fixed = |e: i32| (STEP_FRESH, e);
        ok(libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) as libc::c_long)
        .map_err(fixed)?;
        // The session's view follows the machine's mounts: one made since the session began
        // arrives with the machine's flags (writable). Everything is read-only again, without
        // set-user-id or devices, but the device nodes of /dev.
        let shut = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
        set_attributes(libc::AT_FDCWD, c"/", true, shut, 0).map_err(fixed)?;
        for node in crate::sandbox::landlock_rules::DEVICES {
            set_attributes(libc::AT_FDCWD, node, false, 0, MOUNT_ATTR_NODEV).map_err(fixed)?;
        }
        let host = libc::open(
            c"/run/.mandate-host".as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        );
        ok(host as libc::c_long).map_err(fixed)?;
        let fresh = libc::MS_NOSUID | libc::MS_NODEV;
        mount_fs(c"tmpfs", c"/tmp", fresh, c"mode=0755").map_err(fixed)?;
        mount_fs(c"tmpfs", c"/run", fresh, c"mode=0755").map_err(fixed)?;
        mount_fs(c"tmpfs", c"/dev/shm", fresh, c"mode=0755").map_err(fixed)?;
        mount_fs(
            c"devpts",
            c"/dev/pts",
            libc::MS_NOSUID | libc::MS_NOEXEC,
            c"newinstance,ptmxmode=0666,mode=620",
        )
        .map_err(fixed)?;
        for (i, op) in plan.ops.iter().enumerate() {
            let at = |e: i32| (i as i32, e);
            if let Some(dir) = op.create {
                make_target(&op.target, dir).map_err(at)?;
            }
            // The place is found without following any symbolic link: one planted on a path
            // of the plan since it was made does not move a mount elsewhere.
            let target = open_path(libc::AT_FDCWD, &op.target).map_err(at)?;
            let done = match &op.source {
                None => mount_empty(target),
                Some((from_host, source)) => bind(*from_host, host, source, op.kind, target),
            };
            libc::close(target);
            done.map_err(at)?;
        }
        libc::close(host);
    }
    Ok(())
}

impl Child<'_> {
    /// Says where and why the set-up failed, for Mandate, and ends the calling process at once.
    fn fail(&self, step: i32, errno: i32) -> ! {
        self.step.store(step, Ordering::SeqCst);
        self.error.store(errno.max(1), Ordering::SeqCst);
        // SAFETY: ends this process at once, running nothing of Mandate's.
        unsafe { libc::_exit(127) }
    }
}

/// The process between Mandate and the command: joins the session's namespaces, makes the
/// command's view, starts the command and exits with its status.
pub(super) extern "C" fn first(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `Child` the parent passed, alive until the report pipe closes.
    let child = unsafe { &*(arg as *const Child<'_>) };
    let fail = |step: i32, errno: i32| -> libc::c_int { child.fail(step, errno) };
    // SAFETY (whole block): system calls on data owned by `child` or this frame.
    unsafe {
        if let Err(errno) = vspawn::reset_signals_and_streams(&child.streams) {
            return fail(STEP_SETUP, errno);
        }
        if let Err(e) = child.launch.setup.apply_outer() {
            return fail(STEP_SETUP, e.raw_os_error().unwrap_or(libc::EPERM));
        }
        // This process lives as long as the command: it keeps no descriptor of Mandate's
        // (a pipe's end held here would keep its reader waiting).
        let mut from = 3u32;
        for &fd in &child.keep {
            if fd as u32 > from {
                if let Err(errno) = ok(libc::syscall(
                    libc::SYS_close_range,
                    from,
                    fd as u32 - 1,
                    0u32,
                )) {
                    return fail(STEP_SETUP, errno);
                }
            }
            from = from.max(fd as u32 + 1);
        }
        if let Err(errno) = ok(libc::syscall(libc::SYS_close_range, from, u32::MAX, 0u32)) {
            return fail(STEP_SETUP, errno);
        }
        let session = child.plan.session;
        if let Some(user) = &session.user {
            if let Err(errno) = ok(libc::setns(user.as_raw_fd(), libc::CLONE_NEWUSER) as _) {
                return fail(STEP_JOIN, errno);
            }
        }
        if let Err(errno) = ok(libc::setns(session.mount.as_raw_fd(), libc::CLONE_NEWNS) as _) {
            return fail(STEP_JOIN, errno);
        }
        let namespaces = libc::CLONE_NEWNS | libc::CLONE_NEWIPC | libc::CLONE_NEWPID;
        if let Err(errno) = ok(libc::unshare(namespaces) as _) {
            return fail(STEP_UNSHARE, errno);
        }
        if let Err((step, errno)) = make_view(child.plan) {
            return fail(step, errno);
        }
        // Not waited for: it lives as long as the command. It closes its copy of the report
        // once the command runs, as the command's own closes at `execve`.
        let pid = libc::clone(
            init,
            child.init_stack,
            libc::CLONE_VM | libc::CLONE_CHILD_CLEARTID | libc::SIGCHLD,
            arg,
            std::ptr::null_mut::<libc::pid_t>(),
            std::ptr::null_mut::<libc::c_void>(),
            child.init_tid,
        );
        if pid < 0 {
            return fail(STEP_START, *libc::__errno_location());
        }
        // Once the report is closed Mandate goes on and `child` is gone: nothing of it is
        // read after.
        libc::close(child.report);
        let mut status = 0;
        while libc::waitpid(pid, &mut status, 0) != pid {}
        libc::_exit(exit_code(status))
    }
}

/// A process's exit code for its parent, as bubblewrap gives it: its own, or 128 + the signal
/// that killed it.
fn exit_code(status: libc::c_int) -> libc::c_int {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    }
}

/// The first process of the command's PID namespace, as bubblewrap's: its `/proc`, then the
/// command as its child; it reaps what is left to it and exits with
/// the command's status. It blocks every signal (a command's `kill 1` does nothing).
extern "C" fn init(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `Child` the parent passed, alive until the report pipe closes.
    let child = unsafe { &*(arg as *const Child<'_>) };
    let fail = |step: i32, errno: i32| -> libc::c_int { child.fail(step, errno) };
    // SAFETY (whole block): system calls on data owned by `child` or this frame.
    unsafe {
        if let Err(errno) = ok(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) as _) {
            return fail(STEP_PROC, errno);
        }
        let proc_flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
        if let Err(errno) = mount_fs(c"proc", c"/proc", proc_flags, c"") {
            return fail(STEP_PROC, errno);
        }
        // As bubblewrap does: what root could write under /proc stays read-only.
        for path in [
            c"/proc/sys",
            c"/proc/sysrq-trigger",
            c"/proc/irq",
            c"/proc/bus",
        ] {
            let bound = libc::mount(
                path.as_ptr(),
                path.as_ptr(),
                std::ptr::null(),
                libc::MS_BIND | libc::MS_REC,
                std::ptr::null(),
            );
            if bound != 0 {
                let errno = *libc::__errno_location();
                if errno == libc::ENOENT {
                    continue;
                }
                return fail(STEP_PROC, errno);
            }
            let all = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
            if let Err(errno) = set_attributes(libc::AT_FDCWD, path, true, all, 0) {
                return fail(STEP_PROC, errno);
            }
        }
        // This process shares Mandate's memory: what its /proc entries change (the OOM
        // killer's score, the core dump filter, the pages' dirty bits) would be Mandate's.
        // An empty read-only directory over them; the command is pid 2 and sees its own.
        if let Err(errno) = mount_fs(
            c"tmpfs",
            c"/proc/1",
            libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            c"mode=0555",
        ) {
            return fail(STEP_PROC, errno);
        }
        let pid = libc::clone(
            command,
            child.command_stack,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_CHILD_CLEARTID | libc::SIGCHLD,
            arg,
            std::ptr::null_mut::<libc::pid_t>(),
            std::ptr::null_mut::<libc::c_void>(),
            child.command_tid,
        );
        if pid < 0 {
            return fail(STEP_START, *libc::__errno_location());
        }
        if child.error.load(Ordering::SeqCst) != 0 {
            libc::_exit(127);
        }
        // The report among them: `child` is not read after this.
        libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
        let mut status = 0;
        loop {
            let reaped = libc::waitpid(-1, &mut status, 0);
            if reaped == pid {
                libc::_exit(exit_code(status));
            }
            if reaped < 0 && *libc::__errno_location() == libc::ECHILD {
                libc::_exit(127);
            }
        }
    }
}

/// The command, second process of its PID namespace: its directory, the confinement, then
/// `execve`.
extern "C" fn command(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `Child` the parent passed, alive while this process's parent waits.
    let child = unsafe { &*(arg as *const Child<'_>) };
    let fail = |step: i32, errno: i32| -> libc::c_int { child.fail(step, errno) };
    // SAFETY (whole block): system calls on data owned by `child` or this frame.
    unsafe {
        if let Err(errno) = ok(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) as _) {
            return fail(STEP_START, errno);
        }
        if libc::chdir(child.plan.cwd.as_ptr()) != 0 {
            return fail(STEP_DIR, *libc::__errno_location());
        }
        if let Err(e) = child.launch.setup.apply_inner(true) {
            return fail(STEP_CONFINE, e.raw_os_error().unwrap_or(libc::EPERM));
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &child.mask, std::ptr::null_mut());
        libc::execve(
            child.program.as_ptr(),
            child.argv.as_ptr(),
            child.envp.as_ptr(),
        );
        fail(STEP_EXEC, *libc::__errno_location())
    }
}
