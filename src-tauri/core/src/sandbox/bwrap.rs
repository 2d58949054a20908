//! bubblewrap, where it works: found on `PATH` and tried once with the arguments every command
//! gets (distributions that disable unprivileged user namespaces make it fail), then given the
//! file system view of each command as mount arguments.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::CommandSandbox;

/// The bubblewrap program if it can create the namespaces commands need here.
pub(super) fn find_working() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    let program = std::env::split_paths(&path)
        .map(|dir| dir.join("bwrap"))
        .find(|p| p.is_file())?;
    // What every command gets, and the empty network namespace some get.
    let works = Command::new(&program)
        .args(FIXED)
        .args(["--unshare-net", "--", "/bin/sh", "-c", "exit 0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .env_clear()
        .status()
        .is_ok_and(|s| s.success());
    works.then_some(program)
}

/// The arguments every command gets, whatever it is: a read-only `/`, fresh `/dev`, `/proc`,
/// `/tmp` and `/run`. `/run` holds the session and system buses and Docker's socket, through
/// which a command could start programs outside the confinement; with the network granted only
/// the resolver's directory comes back (see [`mounts`]).
pub(super) const FIXED: [&str; 16] = [
    "--die-with-parent",
    "--unshare-pid",
    "--unshare-ipc",
    "--cap-drop",
    "ALL",
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--tmpfs",
    "/tmp",
    "--tmpfs",
    "/run",
];

fn arg(list: &mut Vec<OsString>, words: &[&str]) {
    list.extend(words.iter().map(OsString::from));
}

/// One mount of a command's view over the fixed ones, in the order they are made: each may lie
/// inside one made before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Mount {
    /// The path, bound read-only onto itself.
    ReadOnly(PathBuf),
    /// The path, bound writable onto itself.
    Writable(PathBuf),
    /// An empty read-only directory over the directory.
    HiddenDir(PathBuf),
    /// An empty read-only file (`/dev/null`) over the file.
    HiddenFile(PathBuf),
}

/// The arguments before `--` for one command: the fixed ones, then its [`mounts`].
/// `net_namespace`: an empty network namespace for a command without network (see
/// [`super::Confinement::net_namespace`]).
pub(super) fn arguments(sandbox: &CommandSandbox, net_namespace: bool) -> Vec<OsString> {
    let mut a = Vec::new();
    arg(&mut a, &FIXED);
    if net_namespace {
        arg(&mut a, &["--unshare-net"]);
    }
    for mount in mounts(sandbox, net_namespace) {
        let (how, from, to) = match &mount {
            Mount::ReadOnly(p) => ("--ro-bind", p.as_path(), p),
            Mount::Writable(p) => ("--bind", p.as_path(), p),
            Mount::HiddenDir(p) => {
                a.push("--tmpfs".into());
                a.push(p.into());
                ("--remount-ro", p.as_path(), p)
            }
            Mount::HiddenFile(p) => ("--ro-bind", Path::new("/dev/null"), p),
        };
        a.push(how.into());
        if !matches!(mount, Mount::HiddenDir(_)) {
            a.push(from.into());
        }
        a.push(to.into());
    }
    a.push("--chdir".into());
    a.push(sandbox.cwd.as_os_str().into());
    a
}

/// A command's view over the fixed mounts: with the network granted the resolver's directory
/// under `/run` comes back, so that names still resolve; a hook's or server's program kept
/// under `/tmp` read-only again (`programs`); the workspace read-only with the writable paths
/// bound read-write and the protected paths inside them read-only again; then the person's
/// secrets and Mandate's own directories hidden.
pub(super) fn mounts(sandbox: &CommandSandbox, net_namespace: bool) -> Vec<Mount> {
    let mut a = Vec::new();
    let resolver = Path::new("/run/systemd/resolve");
    if !net_namespace && sandbox.network && resolver.is_dir() {
        a.push(Mount::ReadOnly(resolver.to_path_buf()));
    }
    // After the tmpfs mounts, so that what lives under /tmp stays visible: a hook's or
    // server's program and the person's home first, then the workspace and what is
    // writable, which may lie inside them.
    for path in sandbox.shown_again() {
        a.push(Mount::ReadOnly(path));
    }
    // The workspace is in the read-only view of `/` already unless a fresh mount above hid it
    // (each bind costs bubblewrap a read of the mount table: a quarter of a millisecond).
    if FRESH_MOUNTS
        .iter()
        .any(|m| sandbox.workspace.starts_with(m))
    {
        a.push(Mount::ReadOnly(sandbox.workspace.clone()));
    }
    a.push(Mount::Writable(sandbox.temp_dir.clone()));
    if let Some(cache) = &sandbox.cache_dir {
        a.push(Mount::Writable(cache.clone()));
    }
    for grant in &sandbox.writable {
        a.push(Mount::Writable(grant.path.clone()));
    }
    let git = sandbox.workspace.join(".git");
    if sandbox.write_git && git.is_dir() {
        a.push(Mount::Writable(git));
    }
    // Each directory between a writable grant and a protected path in it becomes a mount of
    // its own: a mount point cannot be renamed or removed, so the protected path cannot be
    // carried away with the directory that holds it (and a planted one put in its place).
    for dir in pinned(sandbox) {
        a.push(Mount::Writable(dir));
    }
    for path in &sandbox.read_only_inside {
        if path.exists() {
            a.push(Mount::ReadOnly(path.clone()));
        }
    }
    // Last, so that no bind above brings one back: an empty directory over each protected
    // directory, an empty read-only file over each protected file.
    for hidden in &sandbox.hidden {
        if hidden.is_dir() {
            a.push(Mount::HiddenDir(hidden.clone()));
        } else if hidden.exists() {
            a.push(Mount::HiddenFile(hidden.clone()));
        }
    }
    a
}

/// The directories bubblewrap mounts afresh over the read-only view of `/` (see [`arguments`]).
const FRESH_MOUNTS: [&str; 4] = ["/tmp", "/run", "/dev", "/proc"];

/// At most this many directories are pinned (beyond, a move is found and undone afterwards).
const MAX_PINNED: usize = 1024;

/// The directories strictly between a writable directory and each protected path inside it
/// (read-only again), parents first.
fn pinned(sandbox: &CommandSandbox) -> Vec<PathBuf> {
    let grants: Vec<&Path> = sandbox
        .writable
        .iter()
        .filter(|g| g.kind == super::GrantKind::Directory)
        .map(|g| g.path.as_path())
        .collect();
    let mut dirs: Vec<PathBuf> = Vec::new();
    for path in &sandbox.read_only_inside {
        let Some(grant) = grants.iter().find(|g| path.starts_with(g)) else {
            continue;
        };
        let mut at = path.parent();
        while let Some(dir) = at.filter(|d| d != grant && d.starts_with(grant)) {
            dirs.push(dir.to_path_buf());
            at = dir.parent();
        }
    }
    dirs.sort();
    dirs.dedup();
    dirs.retain(|d| std::fs::symlink_metadata(d).is_ok_and(|m| m.is_dir()));
    dirs.truncate(MAX_PINNED);
    dirs
}
