//! Which changes the selected intent may make: in scope (it owns the path, and the path is
//! neither protected nor listed in `.intentignore`), permitted by the confinement anyway
//! (build output, `.git/` for an approved command that writes it), or out of scope.

use serde::Serialize;

use super::{Change, ChangeKind};
use crate::hooks::ignore_list::IntentIgnore;
use crate::workspace::protected_reason;

/// Why a change is where it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "class", content = "reason")]
pub enum ChangeClass {
    /// Owned by the intent: recorded in the ledger with its diff.
    InScope,
    /// Build output or an approved write to `.git/`: allowed, not recorded.
    Permitted(String),
    /// Anything else: reported as a scope violation, and undone where possible.
    OutOfScope(String),
}

/// The changes of one command, sorted into three lists (each sorted by path).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ClassifiedChanges {
    pub in_scope: Vec<Change>,
    pub permitted: Vec<(Change, String)>,
    pub out_of_scope: Vec<(Change, String)>,
}

impl ClassifiedChanges {
    /// The out-of-scope paths as shown ([`super::shown`]), for the SCOPE_VIOLATION message.
    pub fn out_of_scope_paths(&self) -> Vec<String> {
        self.out_of_scope
            .iter()
            .map(|(c, _)| super::shown(&c.path).into_owned())
            .collect()
    }

    /// The in-scope changes the ledger records: all but those that only touched a file.
    pub fn to_record(&self) -> Vec<Change> {
        self.in_scope
            .iter()
            .filter(|c| c.kind != ChangeKind::Touched)
            .cloned()
            .collect()
    }
}

/// The class of one change. `owns` is the selected intent's scope (`Intent::owns`; with no
/// intent nothing is owned), `build_outputs` the command policy's build-output directory names,
/// `write_git` whether the command was allowed to write the workspace's `.git/`.
pub fn class_of(
    change: &Change,
    owns: &dyn Fn(&str) -> bool,
    ignore: &IntentIgnore,
    build_outputs: &[&str],
    write_git: bool,
) -> ChangeClass {
    let path = change.path.as_str();
    // Globs and `.intentignore` speak UTF-8: a name that is not UTF-8 is nobody's, and no
    // rule may read it through a lossy or escaped spelling.
    if !super::is_utf8(path) {
        return ChangeClass::OutOfScope(
            "its name is not valid UTF-8, so no intent can own it".into(),
        );
    }
    if let Some(reason) = protected_reason(path) {
        let own_git = path == ".git" || path.starts_with(".git/");
        if write_git && own_git {
            if is_hook(change) {
                return ChangeClass::OutOfScope(OWN_HOOK.into());
            }
            return ChangeClass::Permitted("the command was allowed to write `.git/`".into());
        }
        return ChangeClass::OutOfScope(reason.to_string());
    }
    if let Some(why) = ignore.why(path) {
        return ChangeClass::OutOfScope(why);
    }
    let parts: Vec<&str> = path.split('/').collect();
    let inside_output = parts[..parts.len().saturating_sub(1)]
        .iter()
        .chain(
            // The build-output directory itself, created by the command.
            std::iter::once(parts.last().unwrap_or(&"")).filter(|_| {
                change
                    .after
                    .is_some_and(|s| s.kind == super::EntryKind::Directory)
            }),
        )
        .find(|p| build_outputs.contains(p));
    if let Some(dir) = inside_output {
        return ChangeClass::Permitted(format!("build output (`{dir}/`)"));
    }
    if owns(path) {
        return ChangeClass::InScope;
    }
    // A directory the intent's files are created in: owned when something beneath it is.
    if change.kind == ChangeKind::Created
        && change
            .after
            .is_some_and(|s| s.kind == super::EntryKind::Directory)
        && owns(&format!("{path}/x"))
    {
        return ChangeClass::InScope;
    }
    ChangeClass::OutOfScope("the selected intent does not own it".into())
}

/// Why a hook of the workspace's own repository is out of scope even for a command allowed to
/// write `.git/`.
pub const OWN_HOOK: &str = "a hook of the repository: git runs it with the person's rights when they commit, check out or push, and no git command writes one, so only the person does";

/// Whether the change is to a hook the workspace's own repository runs (not a `.sample`,
/// which git never runs).
fn is_hook(change: &Change) -> bool {
    let Some(name) = change.path.strip_prefix(".git/hooks/") else {
        return false;
    };
    let directory = change
        .after
        .or(change.before)
        .is_some_and(|s| s.kind == super::EntryKind::Directory);
    !directory && !name.ends_with(".sample")
}

/// Sorts `changes` with [`class_of`]. A file only touched (same content) is in scope
/// wherever the intent owns it, and permitted elsewhere: nothing changed.
pub fn classify(
    changes: Vec<Change>,
    owns: &dyn Fn(&str) -> bool,
    ignore: &IntentIgnore,
    build_outputs: &[&str],
    write_git: bool,
) -> ClassifiedChanges {
    let mut out = ClassifiedChanges::default();
    for change in changes {
        match class_of(&change, owns, ignore, build_outputs, write_git) {
            ChangeClass::InScope => out.in_scope.push(change),
            ChangeClass::Permitted(why) => out.permitted.push((change, why)),
            ChangeClass::OutOfScope(_) if change.kind == ChangeKind::Touched => out
                .permitted
                .push((change, "only its times changed".to_string())),
            ChangeClass::OutOfScope(why) => out.out_of_scope.push((change, why)),
        }
    }
    out_of_scope_where_moved(&mut out);
    out
}

/// What a process moved out of an out-of-scope place (a nested repository's `.git` renamed to
/// a name the intent owns, or carried along with its directory) is out of scope where it
/// landed too: it is still what it was.
fn out_of_scope_where_moved(out: &mut ClassifiedChanges) {
    let created: Vec<&Change> = out
        .in_scope
        .iter()
        .chain(out.permitted.iter().map(|(c, _)| c))
        .filter(|c| c.kind == ChangeKind::Created)
        .collect();
    let moved = super::moves::reclassify(&out.out_of_scope, &created);
    if moved.is_empty() {
        return;
    }
    let in_scope = std::mem::take(&mut out.in_scope);
    for change in in_scope {
        match moved.get(&change.path) {
            Some(why) => out.out_of_scope.push((change, why.clone())),
            None => out.in_scope.push(change),
        }
    }
    let permitted = std::mem::take(&mut out.permitted);
    for (change, was) in permitted {
        match moved.get(&change.path) {
            Some(why) => out.out_of_scope.push((change, why.clone())),
            None => out.permitted.push((change, was)),
        }
    }
    out.out_of_scope.sort_by(|a, b| a.0.path.cmp(&b.0.path));
}
