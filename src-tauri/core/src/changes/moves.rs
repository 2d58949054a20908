//! Entries a process moved rather than made: a created entry with the inode of one that left
//! its place (deleted there, or replaced by another). A rename keeps the inode, the kind, and
//! for a file its size and modification time; nothing else can be trusted to (the process
//! chooses names and times, and the kernel may give a deleted file's inode to a new one).
//!
//! What moved out of a protected place (a nested repository's `.git`, carried along when the
//! directory holding it is renamed) is not the intent's where it lands ([`reclassify`]), and
//! undoing it must not delete it: that would destroy what it held (a repository's objects,
//! which no copy keeps). A directory goes back where it was when that place is free, and what
//! then differs from before is undone like any change; otherwise it stays where it is and says
//! so ([`restore_moves`]).

use std::collections::HashMap;
use std::path::Path;

use super::{real_path, shown, Change, ChangeKind, EntryKind, RestoreOutcome, Restored, Snapshot};

/// One entry moved from `from` (its path before) to `to` (where it was created).
#[derive(Debug, Clone, Copy)]
pub(super) struct Move<'a> {
    pub from: &'a Change,
    pub to: &'a Change,
}

/// Whether the entry that stood at the change's path before is no longer there.
fn left_its_place(change: &Change) -> bool {
    let Some(before) = change.before else {
        return false;
    };
    matches!(before.kind, EntryKind::File | EntryKind::Directory)
        && change.after.is_none_or(|now| now.inode != before.inode)
}

/// The moves among `changes`: each created entry paired with the entry in `gone` that left
/// its place with the same inode (and, for a file, the same size and modification time).
pub(super) fn find<'a>(
    gone: impl IntoIterator<Item = &'a Change>,
    created: impl IntoIterator<Item = &'a Change>,
) -> Vec<Move<'a>> {
    let by_inode: HashMap<u64, &Change> = gone
        .into_iter()
        .filter(|c| left_its_place(c))
        .filter_map(|c| Some((c.before?.inode, c)))
        .collect();
    created
        .into_iter()
        .filter(|c| c.kind == ChangeKind::Created)
        .filter_map(|to| {
            let now = to.after?;
            let from = by_inode.get(&now.inode)?;
            let was = from.before?;
            let same = was.kind == now.kind
                && (was.kind == EntryKind::Directory
                    || (was.size == now.size && was.mtime_ns == now.mtime_ns));
            same.then_some(Move { from, to })
        })
        .collect()
}

/// Whether `path` is `top` or lies beneath it.
pub(super) fn at_or_beneath(path: &str, top: &str) -> bool {
    path == top
        || path
            .strip_prefix(top)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// The moves not carried along with another (the top-most, by where they landed).
fn topmost<'a>(moves: &[Move<'a>]) -> Vec<Move<'a>> {
    moves
        .iter()
        .filter(|m| {
            !moves.iter().any(|other| {
                other.to.path != m.to.path && at_or_beneath(&m.to.path, &other.to.path)
            })
        })
        .copied()
        .collect()
}

/// For each change of `created` that is (or lies inside) an entry moved out of one of the
/// out-of-scope places `gone` (path → why it is out of scope): the reason it is out of scope
/// where it landed.
pub(super) fn reclassify(
    gone: &[(Change, String)],
    created: &[&Change],
) -> HashMap<String, String> {
    let moves = find(gone.iter().map(|(c, _)| c), created.iter().copied());
    let why: HashMap<&str, &str> = gone
        .iter()
        .map(|(c, why)| (c.path.as_str(), why.as_str()))
        .collect();
    let mut out = HashMap::new();
    for m in topmost(&moves) {
        let reason = format!(
            "moved here from `{}`: {}",
            shown(&m.from.path),
            why.get(m.from.path.as_str()).copied().unwrap_or_default()
        );
        for c in created {
            if at_or_beneath(&c.path, &m.to.path) {
                out.insert(c.path.clone(), reason.clone());
            }
        }
    }
    out
}

/// What became of the moves among the out-of-scope `changes` (see the module's
/// documentation): the outcomes of the changes they account for, by path, and the places
/// moved back (whose content is then compared with `before` and undone where it differs).
pub(super) struct MovedBack {
    pub outcomes: HashMap<String, Result<Restored, String>>,
    pub places: Vec<String>,
    /// Files moved out of a place: kept unless they turn out to be a copy of what is back
    /// there once the place is restored (then removed).
    pub files: Vec<(String, String)>,
}

pub(super) fn restore_moves(root: &Path, changes: &[Change]) -> MovedBack {
    let moves = find(changes, changes);
    let mut done = MovedBack {
        outcomes: HashMap::new(),
        places: Vec::new(),
        files: Vec::new(),
    };
    for m in topmost(&moves) {
        let (from, to) = (m.from.path.as_str(), m.to.path.as_str());
        if m.to.after.is_some_and(|s| s.kind == EntryKind::File) {
            done.files.push((to.to_string(), from.to_string()));
            continue;
        }
        let result = move_back(root, m);
        let moved = result.is_ok();
        for c in changes.iter().filter(|c| at_or_beneath(&c.path, to)) {
            let outcome = match &result {
                Ok(()) => Ok(Restored::MovedBack),
                Err(why) => Err(format!(
                    "it is `{}` moved here; {why}, so it was left here (removing it would lose what it holds)",
                    shown(from)
                )),
            };
            done.outcomes.insert(c.path.clone(), outcome);
        }
        if moved {
            for c in changes.iter().filter(|c| at_or_beneath(&c.path, from)) {
                done.outcomes
                    .insert(c.path.clone(), Ok(Restored::MovedBack));
            }
            done.places.push(from.to_string());
        }
    }
    done
}

/// Renames the directory the move made back to where it was, when that place is free and
/// nothing on either way is a symlink the process put there.
fn move_back(root: &Path, m: Move<'_>) -> Result<(), String> {
    let (from, to) = (
        root.join(real_path(&m.from.path)),
        root.join(real_path(&m.to.path)),
    );
    super::restore::no_symlink_on_the_way(root, &m.to.path)?;
    super::restore::no_symlink_on_the_way(root, &m.from.path)?;
    let now =
        std::fs::symlink_metadata(&to).map_err(|e| format!("it cannot be found again ({e})"))?;
    let expected = m.to.after.map(|s| s.inode);
    if Some(std::os::unix::fs::MetadataExt::ino(&now)) != expected || !now.is_dir() {
        return Err("it changed again after the process".into());
    }
    match std::fs::symlink_metadata(&from) {
        // A file or link the process put in its place (a `gitdir:` pointer): it was not
        // there before (its place was a directory), so it goes.
        Ok(meta) if !meta.is_dir() => std::fs::remove_file(&from).map_err(|e| e.to_string())?,
        Ok(_) => {
            return Err(format!(
                "something else now stands at `{}`",
                shown(&m.from.path)
            ))
        }
        Err(_) => {}
    }
    if let Some(parent) = from.parent() {
        std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
    }
    std::fs::rename(&to, &from).map_err(|e| e.to_string())
}

/// After `places` were moved back: what in them differs from `before` (a file the process
/// added while it was away, one it changed), to be undone like any change.
pub(super) fn differences(root: &Path, before: &Snapshot, places: &[String]) -> Vec<Change> {
    if places.is_empty() {
        return Vec::new();
    }
    let mut now = Snapshot::take_within(root, places);
    super::diff_within(before, &mut now, places)
}

/// Whether the file at `copy` (moved out of `place`) holds what `place` holds now.
pub(super) fn same_content(root: &Path, copy: &str, place: &str) -> bool {
    let read = |rel: &str| std::fs::read(root.join(real_path(rel))).ok();
    matches!((read(copy), read(place)), (Some(a), Some(b)) if a == b)
}

/// The outcome for a file moved out of `place` to `moved`, once `place` was restored (`ok`):
/// removed when it is a copy of what is there again, else kept.
pub(super) fn file_outcome(root: &Path, moved: &str, place: &str, ok: bool) -> RestoreOutcome {
    let result = if ok && same_content(root, moved, place) {
        std::fs::remove_file(root.join(real_path(moved)))
            .map(|_| Restored::Removed)
            .map_err(|e| e.to_string())
    } else {
        Err(format!(
            "it is `{}` moved here, and it was left here (removing it could lose what it holds)",
            shown(place)
        ))
    };
    RestoreOutcome {
        path: moved.to_string(),
        kind: ChangeKind::Created,
        result,
    }
}
