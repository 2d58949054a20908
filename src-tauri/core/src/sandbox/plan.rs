//! From what Mandate knows before a command (the selected intent, `.intentignore`, the command
//! policy, the snapshot taken for change detection, what the person granted) to the
//! [`CommandSandbox`] of that command.

use std::path::{Path, PathBuf};

use super::scope::scope_grants_making;
use super::{env, CommandSandbox, Grant, MadeDir, SandboxError};
use crate::changes::{EntryKind, Snapshot};
use crate::hooks::command_policy::ConfinementSettings;
use crate::hooks::ignore_list::IntentIgnore;
use crate::redact::Redactor;
use crate::workspace::protected_reason;

/// At most this many protected paths are re-bound read-only inside writable directories.
const MAX_READ_ONLY_INSIDE: usize = 256;

/// What a command's sandbox is made from.
pub struct SandboxRequest<'a> {
    /// The workspace root (canonical).
    pub workspace: &'a Path,
    /// Where the command starts (absolute, inside the workspace).
    pub cwd: &'a Path,
    /// The selected intent's globs (`owned_scope`); empty when no intent is selected.
    pub owned_scope: &'a [String],
    pub ignore: &'a IntentIgnore,
    /// The command policy's confinement section (`CommandPolicy::confinement`).
    pub settings: &'a ConfinementSettings,
    /// The snapshot taken before this command for change detection: build-output
    /// directories and protected paths inside writable ones are found in it.
    pub before: &'a Snapshot,
    /// The command's private temporary directory ([`super::private_temp_dir`]).
    pub temp_dir: &'a Path,
    /// Granted by the person on the approval card.
    pub network: bool,
    /// Granted by the person for a command whose rule needs it (`git commit`).
    pub write_git: bool,
    /// Mandate's settings and data directories (`AppDirs`): hidden from commands.
    pub app_dirs: &'a [PathBuf],
    /// Every secret Mandate holds, so that no variable holding one reaches the command.
    pub redactor: &'a Redactor,
}

impl SandboxRequest<'_> {
    /// The sandbox. Missing build-output directories whose marker file is at the root or in
    /// the working directory (`target/` beside `Cargo.toml`), and new top-level directories
    /// the intent owns, are made first so that a first build can write them; they are listed
    /// in [`CommandSandbox::made`], and the caller removes those left empty
    /// ([`CommandSandbox::remove_made_dirs`]) once the command has ended.
    pub fn build(&self) -> Result<CommandSandbox, SandboxError> {
        let mut made: Vec<MadeDir> = Vec::new();
        let mut make = |dir: &Path| match MadeDir::make(dir) {
            Some(dir) => {
                made.push(dir);
                true
            }
            None => false,
        };
        let scope = scope_grants_making(self.workspace, self.owned_scope, &mut make);
        let mut grants = without_listed(self.workspace, scope, self.ignore);
        for dir in self.build_outputs(&mut make) {
            grants.push(Grant::directory(dir));
        }
        let read_only_inside = self.read_only_inside(&grants);
        let env = env::command_environment(
            std::env::vars(),
            self.settings,
            self.temp_dir,
            self.network,
            self.redactor,
        );
        let sandbox = CommandSandbox::new(
            self.workspace,
            self.cwd,
            grants,
            read_only_inside,
            self.temp_dir,
            self.network,
            self.write_git,
            self.app_dirs.to_vec(),
            env,
        );
        match sandbox {
            Ok(sandbox) => Ok(CommandSandbox { made, ..sandbox }),
            Err(e) => {
                super::made_dirs::remove_unused(&made);
                Err(e)
            }
        }
    }

    fn allowed_here(&self, rel: &str) -> bool {
        protected_reason(rel).is_none() && self.ignore.why(rel).is_none()
    }

    /// Whether a build output may be written: allowed here, and the repository's git
    /// configuration runs nothing from inside it (`core.pager = node_modules/.bin/delta`):
    /// what such a program loads from beside it (its package, a `.venv`'s site-packages) is
    /// not held path by path, so the whole output stays as it is.
    fn output_writable(&self, rel: &str) -> bool {
        let inside = format!("{rel}/");
        self.allowed_here(rel) && !self.ignore.git_named().any(|n| n.starts_with(&inside))
    }

    fn build_outputs(&self, make: &mut dyn FnMut(&Path) -> bool) -> Vec<PathBuf> {
        let names = self.settings.build_output_names();
        let mut dirs: Vec<PathBuf> = self
            .before
            .directories_named(&names)
            .into_iter()
            .filter(|d| {
                d.strip_prefix(self.workspace)
                    .is_ok_and(|rel| self.output_writable(&rel.to_string_lossy()))
            })
            .collect();
        for place in [self.workspace, self.cwd] {
            if !place.starts_with(self.workspace) {
                continue;
            }
            for output in &self.settings.build_outputs {
                let dir = place.join(&output.dir);
                let wanted = output.when.iter().any(|m| place.join(m).is_file());
                let rel = dir
                    .strip_prefix(self.workspace)
                    .map(|r| r.to_string_lossy().into_owned());
                if wanted
                    && !dir.exists()
                    && rel.is_ok_and(|r| self.output_writable(&r))
                    && make(&dir)
                {
                    dirs.push(dir);
                }
            }
        }
        dirs.sort();
        dirs.dedup();
        dirs
    }

    fn read_only_inside(&self, grants: &[Grant]) -> Vec<PathBuf> {
        protected_inside(self.workspace, self.before, grants, self.ignore)
    }
}

/// Protected entries below the writable directories `grants` of `workspace`, found in the
/// snapshot `before`: nested repositories' `.git` (and databases not named so), paths
/// `.intentignore` lists and the repository's git configuration names (the top-most of
/// each). bubblewrap binds them read-only again.
pub fn protected_inside(
    workspace: &Path,
    before: &Snapshot,
    grants: &[Grant],
    ignore: &IntentIgnore,
) -> Vec<PathBuf> {
    let under: Vec<String> = grants
        .iter()
        .filter_map(|g| g.path.strip_prefix(workspace).ok())
        .map(|rel| format!("{}/", crate::changes::key_of(rel.as_os_str())))
        .collect();
    let databases = crate::changes::repository_dirs(before);
    let mut found = before.find(|rel, stamp| {
        under.iter().any(|u| rel.starts_with(u.as_str()))
            && stamp.kind != EntryKind::Symlink
            && (protected_reason(rel).is_some()
                || ignore.why(rel).is_some()
                || databases.iter().any(|d| d == rel))
    });
    // Only the top-most: a bind of a directory covers what is inside it.
    found.sort();
    let mut top: Vec<PathBuf> = Vec::new();
    for path in found {
        if !top.iter().any(|t| path.starts_with(t)) {
            top.push(path);
        }
    }
    top.truncate(MAX_READ_ONLY_INSIDE);
    top
}

/// `grants` without those `.intentignore` or the repository's git configuration covers (a
/// top-level `.husky/` of `core.hooksPath`, a root-level `.gitconfig` it includes): what is
/// beneath a grant is bound read-only again ([`protected_inside`]), a grant itself is dropped.
pub fn without_listed(workspace: &Path, grants: Vec<Grant>, ignore: &IntentIgnore) -> Vec<Grant> {
    grants
        .into_iter()
        .filter(|g| {
            g.path.strip_prefix(workspace).is_ok_and(|rel| {
                ignore
                    .why(&crate::changes::key_of(rel.as_os_str()))
                    .is_none()
            })
        })
        .collect()
}
