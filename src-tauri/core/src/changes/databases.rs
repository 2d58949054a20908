//! Repository databases not named `.git`: a directory holding `HEAD`, `objects/` and `refs/`
//! is one to git (a bare repository, `git init --bare x`), and git uses it, with the hooks and
//! commands its `config` names (`core.fsmonitor` with `core.worktree` set, `core.pager`), when
//! the person runs git inside it. Like a nested `.git`, no intent may create or change one,
//! whatever its globs; the workspace's own `.git/` (and what it holds) is left to the rules
//! for it.

use super::{moves::at_or_beneath, ChangeKind, ClassifiedChanges, EntryKind, Snapshot};

/// Why a change inside such a directory is out of scope.
pub const BARE_REPOSITORY: &str = "git configuration in a nested repository (a repository database not named `.git`, which git uses when the person works inside it): git runs the hooks and commands it names with the person's rights, so only the person creates or changes one";

/// The directories of `snapshot` git would take for a repository database, other than the
/// workspace's own `.git/` and what lies in any `.git` (protected by its name already).
pub fn repository_dirs(snapshot: &Snapshot) -> Vec<String> {
    let is = |rel: &str, kind: EntryKind| snapshot.get(rel).is_some_and(|s| s.kind == kind);
    let mut found: Vec<String> = snapshot
        .entries
        .iter()
        .filter(|(_, s)| s.kind == EntryKind::File)
        .filter_map(|(rel, _)| rel.strip_suffix("/HEAD"))
        .filter(|dir| !dir.split('/').any(|p| p.eq_ignore_ascii_case(".git")))
        .filter(|dir| {
            is(&format!("{dir}/objects"), EntryKind::Directory)
                && is(&format!("{dir}/refs"), EntryKind::Directory)
        })
        .map(str::to_string)
        .collect();
    found.sort();
    found
}

/// Moves the changes at or beneath any of `dirs` that `out` holds in scope or permitted to its
/// out-of-scope list, with [`BARE_REPOSITORY`] as the reason.
pub fn out_of_scope_in(out: &mut ClassifiedChanges, dirs: &[String]) {
    if dirs.is_empty() {
        return;
    }
    let inside = |path: &str| dirs.iter().any(|d| at_or_beneath(path, d));
    let in_scope = std::mem::take(&mut out.in_scope);
    for change in in_scope {
        if inside(&change.path) && change.kind != ChangeKind::Touched {
            out.out_of_scope.push((change, BARE_REPOSITORY.to_string()));
        } else {
            out.in_scope.push(change);
        }
    }
    let permitted = std::mem::take(&mut out.permitted);
    for (change, why) in permitted {
        if inside(&change.path) && change.kind != ChangeKind::Touched {
            out.out_of_scope.push((change, BARE_REPOSITORY.to_string()));
        } else {
            out.permitted.push((change, why));
        }
    }
    out.out_of_scope.sort_by(|a, b| a.0.path.cmp(&b.0.path));
}
