//! The Landlock ruleset for one command, built in the parent before the fork (opening paths
//! and allocating are not safe between fork and exec); the child only calls
//! `landlock_restrict_self` on the finished ruleset's descriptor.

use std::os::fd::OwnedFd;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

use landlock::{
    Access, AccessFs, AccessNet, BitFlags, PathBeneath, Ruleset, RulesetAttr, RulesetCreatedAttr,
    Scope, ABI,
};

use super::{CommandSandbox, GrantKind, SandboxError};

/// The newest ABI this code knows; rights the kernel lacks are left out ("best effort"), and
/// `Confinement::gaps` says what that leaves open.
const TARGET: ABI = ABI::V9;

/// Devices normal programs write (the command's own output is a pipe and needs no rule).
pub(super) const DEVICES: [&std::ffi::CStr; 6] = [
    c"/dev/null",
    c"/dev/zero",
    c"/dev/full",
    c"/dev/random",
    c"/dev/urandom",
    c"/dev/tty",
];

/// What the ruleset restricts.
#[derive(Debug, Clone, Copy)]
pub(super) struct Restrict {
    /// File system rules (not with bubblewrap, whose mounts Landlock would refuse).
    pub filesystem: bool,
    /// Refuse TCP connect and bind (not needed inside bubblewrap's empty network namespace).
    pub tcp: bool,
}

fn landlock_error(e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Landlock(e.to_string())
}

/// Opens `path` for a rule without following a final symlink.
fn open_path(path: &Path, follow: bool) -> Result<std::fs::File, SandboxError> {
    let mut flags = libc::O_PATH | libc::O_CLOEXEC;
    if !follow {
        flags |= libc::O_NOFOLLOW;
    }
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .map_err(|e| SandboxError::Path {
            path: path.display().to_string(),
            message: e.to_string(),
        })
}

/// The ruleset's descriptor, or `None` when there is nothing to restrict.
pub(super) fn prepare(
    sandbox: &CommandSandbox,
    restrict: Restrict,
) -> Result<Option<OwnedFd>, SandboxError> {
    let mut ruleset = Ruleset::default();
    let mut handles_anything = false;
    if restrict.filesystem {
        ruleset = ruleset
            .handle_access(AccessFs::from_all(TARGET))
            .map_err(landlock_error)?;
        handles_anything = true;
    }
    if restrict.tcp {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(TARGET))
            .map_err(landlock_error)?;
        handles_anything = true;
    }
    if super::landlock_abi().unwrap_or(0) >= 6 {
        ruleset = ruleset
            .scope(Scope::from_all(TARGET))
            .map_err(landlock_error)?;
        handles_anything = true;
    }
    if !handles_anything {
        return Ok(None);
    }
    let mut created = ruleset.create().map_err(landlock_error)?;
    if restrict.filesystem {
        let read = AccessFs::from_read(TARGET);
        let all = AccessFs::from_all(TARGET);
        let file: BitFlags<AccessFs> = AccessFs::from_file(TARGET);
        // Names may be listed everywhere (tools walk directories); files are read only
        // around the protected paths (see `secrets::readable_around`).
        let mut rules: Vec<(std::fs::File, BitFlags<AccessFs>)> =
            vec![(open_path(Path::new("/"), true)?, AccessFs::ReadDir.into())];
        for path in super::secrets::readable_around(&sandbox.hidden) {
            // Resolved already; one that vanished since is simply not granted.
            if let Ok(fd) = open_path(&path, false) {
                rules.push((fd, read));
            }
        }
        for grant in &sandbox.writable {
            let access = match grant.kind {
                GrantKind::Directory => all,
                GrantKind::File => file,
            };
            rules.push((open_path(&grant.path, false)?, access));
        }
        rules.push((open_path(&sandbox.temp_dir, false)?, all));
        if let Some(cache) = &sandbox.cache_dir {
            rules.push((open_path(cache, false)?, all));
        }
        if sandbox.write_git {
            let git = sandbox.workspace.join(".git");
            if git.is_dir() && !super::secrets::overlaps(&git, &sandbox.hidden) {
                rules.push((open_path(&git, false)?, all));
            }
        }
        for device in DEVICES {
            if let Ok(fd) = open_path(Path::new(device.to_str().unwrap_or_default()), true) {
                rules.push((fd, file & !AccessFs::Execute));
            }
        }
        for (fd, access) in rules {
            created = created
                .add_rule(PathBeneath::new(fd, access))
                .map_err(landlock_error)?;
        }
    }
    Ok(Option::<OwnedFd>::from(created))
}
