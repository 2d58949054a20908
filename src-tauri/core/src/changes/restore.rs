//! Undoing out-of-scope changes, which only a command without (full) confinement can make.
//! What comes back depends on what is known of the state before the command, and every path
//! says which it was, never silently:
//!
//! - a created file, link or directory is removed;
//! - a changed mode is set back (the snapshot holds it);
//! - a file of `.orchestration/`, `.intentignore` or `.git/` (config, hooks, refs, `HEAD`,
//!   `packed-refs`, `info/`), or of a nested repository's `.git` but its objects, comes back
//!   from the copy [`BeforeImages::capture`] took; a file too large to copy (the ledger) comes
//!   back only if it was appended to (cut back to its length after checking that the start is
//!   unchanged);
//! - what a process moved out of a protected place (a nested repository's `.git`, renamed or
//!   carried along with the directory holding it) is moved back when its place is free, and
//!   is never removed (see `moves`);
//! - a tracked file that was clean comes back from git's index (see `git_index`);
//! - anything else (an untracked or already modified file that was changed or deleted) cannot
//!   be restored: the outcome says so, and the caller reports it.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{git_index, moves, real_path, BeforeImages, Change, ChangeKind, EntryKind, Snapshot};

/// What became of one out-of-scope change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RestoreOutcome {
    /// The key of the path ([`super::key_of`]).
    pub path: String,
    pub kind: ChangeKind,
    /// How it was restored, or why it could not be.
    pub result: Result<Restored, String>,
}

/// The paths of `restored` that could not be undone, as shown ([`super::shown`]).
pub fn not_undone(restored: &[RestoreOutcome]) -> Vec<String> {
    restored
        .iter()
        .filter(|r| r.result.is_err())
        .map(|r| super::shown(&r.path).into_owned())
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Restored {
    /// It was created by the command and is gone again.
    Removed,
    /// Its permissions are set back.
    ModeRestored,
    /// Its content came back from the copy taken before the command.
    FromCopy,
    /// It was only appended to and is cut back to its length.
    CutBack,
    /// Its content came back from git's index.
    FromGit,
    /// Only its times changed: there is nothing to undo.
    Unchanged,
    /// Confinement kept its content from changing; its permissions and time are set back.
    MetadataRestored,
    /// It had been moved away, and is back where it was.
    MovedBack,
}

/// Undoes `changes` (the out-of-scope ones) in `root` where the earlier state is known.
/// Deepest paths first, so a created directory is emptied before it is removed. What was moved
/// out of its place is moved back or kept, never removed (see `moves`); `before` is the
/// snapshot the changes were found against.
///
/// `content_fixed(path)` says whether confinement kept the path's content from changing (it
/// is outside the writable directories): a change there can only be to its permissions or
/// times (Landlock does not cover `chmod` and `utime`), which are set back from the
/// snapshot. Without confinement pass `&|_| false`.
pub fn restore(
    root: &Path,
    before: &Snapshot,
    changes: &[Change],
    images: &BeforeImages,
    content_fixed: &dyn Fn(&str) -> bool,
) -> Vec<RestoreOutcome> {
    let moved = moves::restore_moves(root, changes);
    let moved_files: HashMap<&str, &str> = moved
        .files
        .iter()
        .map(|(to, from)| (to.as_str(), from.as_str()))
        .collect();
    let rest: Vec<Change> = changes
        .iter()
        .filter(|c| {
            !moved.outcomes.contains_key(&c.path) && !moved_files.contains_key(c.path.as_str())
        })
        .cloned()
        .collect();
    let mut outcomes = restore_in_place(root, &rest, images, content_fixed);
    for (path, result) in &moved.outcomes {
        let kind = changes
            .iter()
            .find(|c| &c.path == path)
            .map_or(ChangeKind::Modified, |c| c.kind);
        outcomes.push(RestoreOutcome {
            path: path.clone(),
            kind,
            result: result.clone(),
        });
    }
    // What came back may differ from before (changed or added while it was away).
    let differences = moves::differences(root, before, &moved.places);
    for outcome in restore_in_place(root, &differences, images, content_fixed) {
        outcomes.retain(|o| o.path != outcome.path);
        outcomes.push(outcome);
    }
    for (to, from) in &moved.files {
        let ok = outcomes
            .iter()
            .find(|o| &o.path == from)
            .is_some_and(|o| o.result.is_ok());
        outcomes.push(moves::file_outcome(root, to, from, ok));
    }
    outcomes.sort_by(|a, b| a.path.cmp(&b.path));
    outcomes
}

/// [`restore`] for changes that are not moves: each undone where it is.
fn restore_in_place(
    root: &Path,
    changes: &[Change],
    images: &BeforeImages,
    content_fixed: &dyn Fn(&str) -> bool,
) -> Vec<RestoreOutcome> {
    let needs_content: Vec<&str> = changes
        .iter()
        .filter(|c| {
            matches!(
                c.kind,
                ChangeKind::Modified | ChangeKind::Deleted | ChangeKind::TypeChanged
            )
        })
        .filter(|c| c.kind != ChangeKind::Modified || !content_fixed(&c.path))
        .filter(|c| {
            !images.copies.contains_key(&c.path)
                && !images.prefixes.contains_key(&c.path)
                && !images.stored.contains_key(&c.path)
        })
        .map(|c| c.path.as_str())
        .collect();
    let (index, index_mtime) = git_index::entries(root, &needs_content);
    let from_git: HashMap<&str, &str> = changes
        .iter()
        .filter_map(|c| {
            let entry = index.get(&c.path)?;
            let before = c.before?;
            entry
                .matches(&before, index_mtime)
                .then_some((c.path.as_str(), entry.blob.as_str()))
        })
        .collect();
    let mut order: Vec<&Change> = changes.iter().collect();
    order.sort_by(|a, b| b.path.cmp(&a.path));
    let mut outcomes: Vec<RestoreOutcome> = order
        .into_iter()
        .map(|change| RestoreOutcome {
            path: change.path.clone(),
            kind: change.kind,
            result: restore_one(
                root,
                change,
                images,
                from_git.get(change.path.as_str()).copied(),
                content_fixed(&change.path),
            ),
        })
        .collect();
    outcomes.sort_by(|a, b| a.path.cmp(&b.path));
    outcomes
}

fn restore_one(
    root: &Path,
    change: &Change,
    images: &BeforeImages,
    git_blob: Option<&str>,
    content_fixed: bool,
) -> Result<Restored, String> {
    let path = root.join(real_path(&change.path));
    no_symlink_on_the_way(root, &change.path)?;
    let now = std::fs::symlink_metadata(&path)
        .ok()
        .map(|m| super::Stamp::of(&m));
    // A directory's times move as its entries are restored; what it is must not.
    let same = match (now, change.after) {
        (Some(n), Some(a)) if a.kind == EntryKind::Directory => {
            n.kind == a.kind && n.inode == a.inode
        }
        (n, a) => n == a,
    };
    if !same {
        return Err("it changed again after the command".into());
    }
    match change.kind {
        ChangeKind::Touched => Ok(Restored::Unchanged),
        ChangeKind::Created => remove(&path).map(|_| Restored::Removed),
        ChangeKind::ModeChanged => set_mode(&path, change).map(|_| Restored::ModeRestored),
        // One name for the file only: a hard link inside a writable directory could have
        // changed the content.
        ChangeKind::Modified
            if content_fixed
                && change.before.is_some_and(|b| b.kind == EntryKind::File)
                && std::fs::metadata(&path)
                    .is_ok_and(|m| std::os::unix::fs::MetadataExt::nlink(&m) == 1) =>
        {
            set_mode(&path, change).map(|_| Restored::MetadataRestored)
        }
        ChangeKind::TypeChanged | ChangeKind::Deleted | ChangeKind::Modified => {
            let before = change.before.ok_or("its earlier state is unknown")?;
            if before.kind == EntryKind::Directory {
                if change.kind == ChangeKind::TypeChanged {
                    remove(&path)?;
                }
                // Restoring a file inside it may have made it again already.
                if !path.is_dir() {
                    std::fs::create_dir(&path).map_err(|e| e.to_string())?;
                }
                return set_mode(&path, change).map(|_| Restored::FromCopy);
            }
            if before.kind != EntryKind::File {
                return Err("it was not a regular file, and no copy of it was kept".into());
            }
            let (bytes, how) = earlier_content(root, change, images, git_blob)?;
            if let Some(bytes) = bytes {
                if change.kind == ChangeKind::TypeChanged {
                    remove(&path)?;
                }
                write_back(&path, &bytes)?;
            }
            set_mode(&path, change)?;
            Ok(how)
        }
    }
}

/// The content before the command (`None` when cutting back was enough).
fn earlier_content(
    root: &Path,
    change: &Change,
    images: &BeforeImages,
    git_blob: Option<&str>,
) -> Result<(Option<Vec<u8>>, Restored), String> {
    if let Some(copy) = images.copies.get(&change.path) {
        return Ok((Some(copy.clone()), Restored::FromCopy));
    }
    if let Some((len, hash)) = images.prefixes.get(&change.path) {
        let path = root.join(real_path(&change.path));
        let now = std::fs::read(&path).map_err(|e| e.to_string())?;
        let len = usize::try_from(*len).map_err(|e| e.to_string())?;
        if change.kind == ChangeKind::Modified
            && now.len() >= len
            && crate::fsutil::sha256_hex(&now[..len]) == *hash
        {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .map_err(|e| e.to_string())?;
            file.set_len(len as u64).map_err(|e| e.to_string())?;
            file.sync_all().map_err(|e| e.to_string())?;
            return Ok((None, Restored::CutBack));
        }
        return Err(
            "it was rewritten, not appended to, and is too large to have been copied".into(),
        );
    }
    if let (Some(hash), Some(store)) = (images.stored.get(&change.path), &images.store) {
        if let Ok(bytes) = store.0.get(hash) {
            return Ok((Some(bytes), Restored::FromCopy));
        }
    }
    if let Some(blob) = git_blob {
        return Ok((Some(git_index::blob(root, blob)?), Restored::FromGit));
    }
    Err("no copy of its earlier content exists (it is not tracked by git, or it had uncommitted changes)".into())
}

/// Refuses to write through a symlink the command may have put in the way.
pub(super) fn no_symlink_on_the_way(root: &Path, rel: &str) -> Result<(), String> {
    let mut at = PathBuf::from(root);
    let rel = real_path(rel);
    let parts: Vec<_> = rel.components().collect();
    for part in &parts[..parts.len().saturating_sub(1)] {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                let inside = at.strip_prefix(root).unwrap_or(&at);
                return Err(format!(
                    "`{}` is now a symlink",
                    super::shown(&super::key_of(inside.as_os_str()))
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

fn remove(path: &Path) -> Result<(), String> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| e.to_string())?;
    if meta.is_dir() {
        std::fs::remove_dir(path).map_err(|e| format!("the directory is not empty: {e}"))
    } else {
        std::fs::remove_file(path).map_err(|e| e.to_string())
    }
}

/// Sets the permissions, and for files the modification time, back to the earlier stamp.
fn set_mode(path: &Path, change: &Change) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt as _;
    let Some(before) = change.before else {
        return Ok(());
    };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(before.mode & 0o7777))
        .map_err(|e| e.to_string())?;
    if before.kind == EntryKind::File {
        let secs = before.mtime_ns.div_euclid(1_000_000_000);
        let nanos = before.mtime_ns.rem_euclid(1_000_000_000);
        let when = u64::try_from(secs)
            .ok()
            .map(|s| std::time::UNIX_EPOCH + std::time::Duration::new(s, nanos as u32));
        if let Some(when) = when {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .or_else(|_| std::fs::File::open(path))
                .map_err(|e| e.to_string())?;
            file.set_modified(when).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

fn write_back(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let dir = path.parent().ok_or("no parent directory")?;
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| e.to_string())?;
    tmp.write_all(bytes).map_err(|e| e.to_string())?;
    tmp.as_file().sync_all().map_err(|e| e.to_string())?;
    tmp.persist(path).map_err(|e| e.to_string())?;
    Ok(())
}
