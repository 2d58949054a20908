//! What a command can touch, decided by the kernel, not by a parser.
//!
//! Every command the agent runs (safe-classified or approved) starts through
//! [`ConfinedCommand::command`]: `bash --noprofile --norc -c LINE`, with
//!
//! - **Landlock** (applied in the child between fork and exec, the ruleset built before the
//!   fork): list directories everywhere, read and execute everywhere but the protected paths
//!   ([`secrets`]: the person's keys and credentials, Mandate's settings and data); write only the [`CommandSandbox::writable`] paths (the
//!   selected intent's directories and the build outputs), the private temporary directory,
//!   and `/dev/null`-like devices; TCP `connect`/`bind` refused unless the network is granted
//!   (ABI ≥ 4); no signals to, and no abstract sockets of, processes outside (ABI ≥ 6); Unix
//!   sockets by path refused (ABI ≥ 9);
//! - **bubblewrap** where it works (optional, [`Confinement::detect`]): the file system is a
//!   read-only view of `/` with the writable paths bound read-write and the protected paths
//!   inside them bound read-only again (what Landlock alone cannot say) and the directories
//!   between pinned as mount points (so a protected path cannot be renamed away with its
//!   parent), a PID namespace (so `/proc/$PPID` is not Mandate), and `/run`, the person's
//!   secrets and Mandate's own directories hidden. `/tmp` is private; what a hook or server runs
//!   from under the real one is bound read-only back (`programs.rs`). Landlock then filters the
//!   network and scopes signals and abstract sockets (its file rules would forbid bubblewrap's
//!   mounts), with the same system-call filter as without bubblewrap; below Landlock ABI 6,
//!   which cannot scope abstract sockets, a command without network gets a network namespace
//!   without interfaces instead;
//! - always: an allow-listed environment ([`env`]), no capabilities, `no_new_privs`, a new
//!   session it cannot leave (`setsid` and `setpgid` refused by a seccomp filter), descriptors
//!   above 2 closed, death with Mandate (`PR_SET_PDEATHSIG`, forked from one long-lived thread:
//!   [`spawn`]) and, for all it started, a watchdog that kills its group when Mandate dies
//!   however it dies (`reaper.rs`), and, without bubblewrap
//!   and without network, a seccomp filter refusing non-TCP Internet sockets (UDP, raw),
//!   io_uring, and below Landlock ABI 9 Unix sockets, which Landlock does not filter.
//!
//! Where the kernel offers none of it, [`Confinement::level`] is `None` and says so: the
//! caller must then ask a person before every command.
//!
//! No trace of the confinement stays in the workspace: a directory made only so that it could
//! be granted (a first build's `node_modules/`) is removed after the command when it is still
//! empty (`made_dirs.rs`), and every mount point bubblewrap is given exists already.

mod background;
mod bwrap;
#[cfg(test)]
mod death_tests;
pub mod env;
mod freeze;
mod kept;
#[cfg(test)]
mod kept_tests;
mod landlock_rules;
mod made_dirs;
#[cfg(test)]
mod nested_git_tests;
#[cfg(test)]
mod net_tests;
mod plan;
mod programs;
#[cfg(test)]
mod programs_tests;
mod reaper;
mod run;
mod scope;
mod seccomp;
pub mod secrets;
#[cfg(test)]
mod secrets_tests;
#[cfg(test)]
mod sequence_tests;
#[cfg(test)]
pub(crate) mod server_tests;
mod spawn;
mod spawner;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod trace_tests;
mod vspawn;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::Serialize;

pub use background::{start_background, terminate_group, Background};
pub use freeze::{
    freeze_and_mark, freeze_group, group_gone, ran_since, thaw_group, FreezeError, GroupMark,
};
pub use made_dirs::MadeDir;
pub use plan::{protected_inside, without_listed, SandboxRequest};
pub use programs::find_program;
pub(crate) use run::{kept_names, kill_group};
pub use run::{
    run_confined, run_governed, ChangeRules, CommandContext, CommandRun, FoundChanges, GovernedRun,
    Watch,
};
pub use scope::{scope_grants, Grant, GrantKind};
pub use spawn::{bash, ConfinedCommand};
pub use spawner::spawn;
pub use vspawn::{ConfinedChild, Io, Launch};

/// How strongly commands are confined on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfinementLevel {
    /// Landlock and bubblewrap.
    LandlockAndBwrap,
    /// Landlock without bubblewrap (see [`Confinement::gaps`]).
    LandlockOnly,
    /// Nothing: every command needs a person's approval.
    None,
}

/// The confinement this machine offers, found once ([`Confinement::detect`]), shown in
/// Settings and by the runner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Confinement {
    pub level: ConfinementLevel,
    /// The kernel's Landlock ABI version, when Landlock is enabled.
    pub landlock_abi: Option<u32>,
    /// The bubblewrap program, when it works here.
    pub bwrap: Option<PathBuf>,
    /// What this confinement does not stop, in the user's words (empty when complete).
    pub gaps: Vec<String>,
    /// Whether bubblewrap builds each command's whole view itself, instead of each command
    /// adding its own mounts to a namespace kept for the session (`kept.rs`; the default,
    /// and bubblewrap's way where that namespace cannot be made).
    #[serde(skip)]
    pub(crate) bwrap_per_command: bool,
}

impl Confinement {
    /// Probes the kernel and bubblewrap once per process; later calls return the same value.
    pub fn detect() -> Confinement {
        static FOUND: OnceLock<Confinement> = OnceLock::new();
        FOUND
            .get_or_init(|| Confinement::from_parts(landlock_abi(), bwrap::find_working()))
            .clone()
    }

    /// The confinement with the given parts (tests use it to run each level on purpose).
    pub fn from_parts(landlock_abi: Option<u32>, bwrap: Option<PathBuf>) -> Confinement {
        let level = match (landlock_abi, &bwrap) {
            (Some(_), Some(_)) => ConfinementLevel::LandlockAndBwrap,
            (Some(_), None) => ConfinementLevel::LandlockOnly,
            (None, _) => ConfinementLevel::None,
        };
        let abi = landlock_abi.unwrap_or(0);
        let mut gaps = Vec::new();
        match level {
            ConfinementLevel::None => gaps.push(
                "the kernel offers no Landlock: commands are not confined, so each one needs approval"
                    .to_string(),
            ),
            ConfinementLevel::LandlockOnly => {
                gaps.push("protected paths inside a writable directory (a nested `.git`, a path `.intentignore` lists) are not refused: changes there are found after the command, reported and undone (a nested `.git` is kept before each command, all but its objects)".into());
                gaps.push("root-level files can only be changed in place, not created".into());
                if abi < 9 {
                    gaps.push("with the network granted, Unix sockets by path (the session bus, Docker) can be reached, and through them programs started outside the confinement".into());
                }
                gaps.push("permissions and times of files outside the writable directories can be changed (Landlock does not cover chmod and utime); in the workspace they are found and set back".into());
                gaps.push("the names of files in protected directories (`~/.ssh`, Mandate's data) can be listed, though not read".into());
            }
            ConfinementLevel::LandlockAndBwrap => {
                gaps.push("root-level files can only be changed in place, not created".into());
            }
        }
        if level != ConfinementLevel::None && !net_namespace(level, abi) {
            gaps.push("the machine's own network connections can be listed (`/proc/net`), though not reached".into());
        }
        if level != ConfinementLevel::None && abi < 4 {
            gaps.push(
                "TCP is only refused through bubblewrap's network namespace (Landlock ABI < 4)"
                    .into(),
            );
        }
        if level != ConfinementLevel::None && abi < 6 {
            gaps.push("signals to Mandate are not refused (Landlock ABI < 6)".into());
            if level == ConfinementLevel::LandlockOnly {
                gaps.push("a command could stop or kill the watchdog that ends what it started if Mandate is killed (Landlock ABI < 6)".into());
            }
        }
        Confinement {
            level,
            landlock_abi,
            bwrap,
            gaps,
            bwrap_per_command: false,
        }
    }

    /// The same confinement with bubblewrap building every command's view itself, as where
    /// no namespace can be kept for the session (tests and the benchmark run both ways).
    pub fn bwrap_per_command(mut self) -> Confinement {
        self.bwrap_per_command = true;
        self
    }

    /// Whether a command without network is kept off it by bubblewrap's empty network
    /// namespace ([`net_namespace`]) rather than by Landlock and the system-call filter.
    pub fn net_namespace(&self) -> bool {
        net_namespace(self.level, self.landlock_abi.unwrap_or(0))
    }

    /// Whether commands run confined at all.
    pub fn is_confined(&self) -> bool {
        self.level != ConfinementLevel::None
    }

    /// One line for Settings and the runner: `landlock ABI 7 + bwrap`, `landlock ABI 7 only`,
    /// `none`.
    pub fn summary(&self) -> String {
        match (self.level, self.landlock_abi) {
            (ConfinementLevel::LandlockAndBwrap, Some(abi)) => {
                format!("landlock ABI {abi} + bwrap")
            }
            (ConfinementLevel::LandlockOnly, Some(abi)) => format!("landlock ABI {abi} only"),
            _ => "none".to_string(),
        }
    }
}

/// Whether bubblewrap gives a command without network an empty network namespace: only where
/// Landlock cannot keep it off. Landlock refuses TCP from ABI 4 and connections to abstract
/// Unix sockets outside the command (the session bus, X11) from ABI 6; the command's
/// system-call filter refuses every other Internet socket (UDP, raw, SCTP) and io_uring
/// (`seccomp::command_filter`). Sockets by path are what the mounts show, namespace or not:
/// `/run` and `/tmp` are private. The namespace costs bubblewrap about a millisecond a command.
fn net_namespace(level: ConfinementLevel, landlock_abi: u32) -> bool {
    level == ConfinementLevel::LandlockAndBwrap && landlock_abi < 6
}

/// bubblewrap's arguments that do not depend on the command (what each command's start costs
/// before any of its own mounts): the benchmark measures bubblewrap with only these.
pub fn bwrap_fixed_arguments() -> &'static [&'static str] {
    &bwrap::FIXED
}

/// The kernel's Landlock ABI version, or `None` when Landlock is not enabled.
pub fn landlock_abi() -> Option<u32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute, size 0 and the VERSION flag the call only returns a number.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(v).ok().filter(|v| *v > 0)
}

/// Everything one command may do: the policy value the caller builds for each command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSandbox {
    /// The workspace root, canonical.
    pub workspace: PathBuf,
    /// Where the command starts (inside the workspace).
    pub cwd: PathBuf,
    /// Paths the command may write (directories with everything beneath, or single files),
    /// each checked to be inside the workspace and not protected ([`CommandSandbox::new`]).
    pub writable: Vec<Grant>,
    /// Protected paths found inside writable directories (a nested `.git`, a path
    /// `.intentignore` lists): bubblewrap binds them read-only again.
    pub read_only_inside: Vec<PathBuf>,
    /// The command's private temporary directory (`TMPDIR`), writable.
    pub temp_dir: PathBuf,
    /// Whether the command may reach the network.
    pub network: bool,
    /// Whether the command may write the workspace's `.git/` (an approved `git commit`).
    pub write_git: bool,
    /// What the command must not even read, symlinks resolved: the person's secrets and
    /// Mandate's settings and data ([`secrets`]). Hidden by bubblewrap, left out of Landlock's
    /// read rules, never writable.
    pub hidden: Vec<PathBuf>,
    /// The whole environment of the command (see [`env::command_environment`]).
    pub env: Vec<(String, String)>,
    /// A directory outside the workspace that stays writable across runs (an MCP server's
    /// package caches); none for commands. See [`CommandSandbox::with_cache_dir`].
    pub cache_dir: Option<PathBuf>,
    /// Directories made in the workspace only so that they could be granted (see
    /// `made_dirs.rs`); [`CommandSandbox::remove_made_dirs`] after the process.
    pub made: Vec<MadeDir>,
    /// What a hook or server runs from outside the workspace that bubblewrap's private `/tmp`
    /// would hide: bound read-only back ([`CommandSandbox::with_programs`]).
    pub programs: Vec<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("cannot prepare the confinement: `{path}`: {message}")]
    Path { path: String, message: String },
    #[error("cannot prepare the confinement: {0}")]
    Landlock(String),
    #[error("cannot start the command: {0}")]
    Spawn(String),
    #[error("the workspace `{workspace}` is inside `{protected}`, which commands, hooks and MCP servers may not read (the person's secrets or Mandate's own data): open a workspace outside it")]
    WorkspaceProtected {
        workspace: String,
        protected: String,
    },
    #[error("`{program}` is inside `{protected}`, which commands, hooks and MCP servers may not read (the person's secrets or Mandate's own data), so it is not run: keep it elsewhere")]
    ProgramHidden { program: String, protected: String },
}

impl CommandSandbox {
    /// A sandbox for one command. `grants` are the writable paths (from [`scope_grants`] and
    /// the build outputs); any that is outside `workspace`, protected, or reached through a
    /// symlink is dropped here, whatever the caller passed. `hidden` (Mandate's settings and
    /// data directories, and what the person added) joins the secrets under `HOME`
    /// ([`secrets::protected_paths`]); see [`CommandSandbox::protect`].
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        workspace: &Path,
        cwd: &Path,
        grants: Vec<Grant>,
        read_only_inside: Vec<PathBuf>,
        temp_dir: &Path,
        network: bool,
        write_git: bool,
        hidden: Vec<PathBuf>,
        env: Vec<(String, String)>,
    ) -> Result<CommandSandbox, SandboxError> {
        let workspace = workspace.canonicalize().map_err(|e| SandboxError::Path {
            path: workspace.display().to_string(),
            message: e.to_string(),
        })?;
        let temp_dir = temp_dir.canonicalize().map_err(|e| SandboxError::Path {
            path: temp_dir.display().to_string(),
            message: e.to_string(),
        })?;
        let writable = grants
            .into_iter()
            .filter_map(|g| scope::checked_grant(&workspace, g))
            .collect();
        let mut own = hidden;
        own.extend(secrets::named_by_environment(|name| std::env::var_os(name)));
        let protected = secrets::protected_paths(secrets::home().as_deref(), &own);
        let mut sandbox = CommandSandbox {
            cwd: cwd.to_path_buf(),
            writable,
            read_only_inside,
            temp_dir,
            network,
            write_git,
            hidden: Vec::new(),
            env,
            workspace,
            cache_dir: None,
            made: Vec::new(),
            programs: Vec::new(),
        };
        sandbox.protect(protected)?;
        Ok(sandbox)
    }

    /// Makes `protected` (existing paths, symlinks resolved: [`secrets::protected_paths`])
    /// unreadable to the command. A workspace inside one is refused; writable paths that are
    /// or hold one are dropped (a workspace that holds one, such as the home directory, keeps
    /// it hidden); a temporary or cache directory overlapping one is an error.
    pub fn protect(&mut self, protected: Vec<PathBuf>) -> Result<(), SandboxError> {
        if let Some(p) = protected.iter().find(|p| self.workspace.starts_with(p)) {
            return Err(SandboxError::WorkspaceProtected {
                workspace: self.workspace.display().to_string(),
                protected: p.display().to_string(),
            });
        }
        for dir in std::iter::once(&self.temp_dir).chain(self.cache_dir.as_ref()) {
            if secrets::overlaps(dir, &protected) {
                return Err(SandboxError::Path {
                    path: dir.display().to_string(),
                    message: "it overlaps a protected path".into(),
                });
            }
        }
        self.writable
            .retain(|g| !secrets::overlaps(&g.path, &protected));
        self.hidden = protected;
        Ok(())
    }

    /// Adds a writable directory outside the workspace (created if missing). Refused when,
    /// symlinks resolved, it is inside the workspace or a hidden directory or contains one of
    /// them: a cache must never be a way into what is protected.
    pub fn with_cache_dir(mut self, dir: &Path) -> Result<CommandSandbox, SandboxError> {
        let refuse = |message: &str| SandboxError::Path {
            path: dir.display().to_string(),
            message: message.to_string(),
        };
        let allowed = |at: &Path| {
            let overlaps = |other: &Path| at.starts_with(other) || other.starts_with(at);
            !overlaps(&self.workspace) && !self.hidden.iter().any(|h| overlaps(h))
        };
        let overlap = || refuse("it overlaps the workspace or Mandate's own directories");
        // Checked before anything is made, so that a refused one leaves no directory behind,
        // and again once made (a symlink on the way may have changed meanwhile).
        if !allowed(&resolved(dir).map_err(|e| refuse(&e.to_string()))?) {
            return Err(overlap());
        }
        std::fs::create_dir_all(dir).map_err(|e| refuse(&e.to_string()))?;
        let canonical = dir.canonicalize().map_err(|e| refuse(&e.to_string()))?;
        if !allowed(&canonical) {
            return Err(overlap());
        }
        self.cache_dir = Some(canonical);
        Ok(self)
    }
}

impl CommandSandbox {
    /// The writable paths inside the workspace, relative to it, as keys of the changes module
    /// ([`crate::changes::key_of`]; the granted `.git` too).
    pub fn writable_within_workspace(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .writable
            .iter()
            .filter_map(|g| g.path.strip_prefix(&self.workspace).ok())
            .map(|rel| crate::changes::key_of(rel.as_os_str()).into_owned())
            .collect();
        if self.write_git {
            out.push(".git".into());
        }
        out
    }

    /// Removes the directories made for this sandbox that the process left empty (a first
    /// build's `node_modules/` that nothing was written to), so that no trace of the
    /// confinement stays in the workspace. Call it once the process has ended.
    pub fn remove_made_dirs(&self) -> Vec<PathBuf> {
        made_dirs::remove_unused(&self.made)
    }

    /// Whether the command could write `path` (absolute): it is inside a writable grant,
    /// the temporary directory, or the granted `.git/`.
    pub fn may_write(&self, path: &Path) -> bool {
        let granted = self.writable.iter().any(|g| match g.kind {
            GrantKind::Directory => path.starts_with(&g.path),
            GrantKind::File => path == g.path,
        });
        granted
            || path.starts_with(&self.temp_dir)
            || self.cache_dir.as_ref().is_some_and(|c| path.starts_with(c))
            || (self.write_git && path.starts_with(self.workspace.join(".git")))
    }

    /// Whether the command could write `path` (absolute) or anything beneath it.
    pub fn may_write_within(&self, path: &Path) -> bool {
        self.may_write(path)
            || self.writable.iter().any(|g| g.path.starts_with(path))
            || self.temp_dir.starts_with(path)
            || self.cache_dir.as_ref().is_some_and(|c| c.starts_with(path))
            || (self.write_git && self.workspace.join(".git").starts_with(path))
    }
}

/// `path` with symlinks resolved as far as it exists: its nearest existing ancestor,
/// canonical, joined with the rest.
fn resolved(path: &Path) -> std::io::Result<PathBuf> {
    let absolute = std::path::absolute(path)?;
    let mut rest = Vec::new();
    let mut at = absolute.as_path();
    loop {
        match at.canonicalize() {
            Ok(real) => return Ok(rest.iter().rev().fold(real, |p, c| p.join(c))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                at = parent;
            }
            _ => return Ok(absolute),
        }
    }
}

/// A private temporary directory for commands (mode 0700), removed when dropped. One per
/// task is enough; tools keep caches there (`npm_config_cache`, `XDG_CACHE_HOME`).
pub fn private_temp_dir() -> std::io::Result<tempfile::TempDir> {
    tempfile::Builder::new().prefix("mandate-cmd-").tempdir()
}

/// Makes Mandate's own process undumpable, so that a process of the same user (a command
/// without bubblewrap's PID namespace) cannot read `/proc/<Mandate>/environ` or its memory.
/// Call it once at start-up. (Root is refused too, because commands run without
/// capabilities.) Returns whether the kernel accepted it.
pub fn protect_this_process() -> bool {
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) == 0 }
}
