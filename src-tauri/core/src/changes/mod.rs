//! Every change a command makes in the workspace, found after it runs: ignored files and
//! `.git/` included. Before the command a cheap metadata snapshot is taken (one `lstat` per
//! entry: size, modification and change times to the nanosecond, inode, mode); after it, a
//! second one; only entries whose metadata moved are read and hashed.
//!
//! [`classify`] sorts the changes into those the selected intent owns, those the
//! confinement permits anyway (build output, `.git/` for an approved `git commit`), and those
//! out of scope; [`restore`] undoes out-of-scope changes where their earlier state is known
//! (possible at all only when confinement is absent or partial) and says which it could not.

mod classify;
mod databases;
mod describe;
mod git_index;
#[cfg(test)]
pub(crate) mod hostile_git;
#[cfg(test)]
mod hostile_modes;
#[cfg(test)]
mod hostile_names;
mod images;
mod moves;
mod names;
mod reopen;
mod restore;
#[cfg(test)]
mod tests;
mod walk;

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

pub use classify::{classify, ChangeClass, ClassifiedChanges};
pub use databases::{out_of_scope_in, repository_dirs, BARE_REPOSITORY};
pub use describe::{described, listed, Described};
pub use images::BeforeImages;
pub use names::{is_utf8, key_of, real_path, shown};
pub use reopen::Reopened;
pub use restore::{not_undone, restore, RestoreOutcome, Restored};

/// What kind of entry a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    File,
    Directory,
    Symlink,
    /// A FIFO, socket or device.
    Other,
}

/// One entry's metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Stamp {
    pub kind: EntryKind,
    pub size: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
    pub inode: u64,
    /// Permission bits and file type, as `st_mode`.
    pub mode: u32,
}

impl Stamp {
    pub fn of(meta: &std::fs::Metadata) -> Stamp {
        let kind = if meta.file_type().is_symlink() {
            EntryKind::Symlink
        } else if meta.is_dir() {
            EntryKind::Directory
        } else if meta.is_file() {
            EntryKind::File
        } else {
            EntryKind::Other
        };
        Stamp {
            kind,
            size: meta.size(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
            inode: meta.ino(),
            mode: meta.mode(),
        }
    }

    /// Whether the content may differ (for directories, only what they are matters: their
    /// times move whenever an entry inside them does, and that entry is reported itself).
    fn content_moved(&self, other: &Stamp) -> bool {
        match self.kind {
            EntryKind::Directory => self.inode != other.inode,
            _ => {
                self.size != other.size
                    || self.mtime_ns != other.mtime_ns
                    || self.ctime_ns != other.ctime_ns
                    || self.inode != other.inode
            }
        }
    }
}

/// The metadata of every entry under a root, by `/`-separated relative path (its key: see
/// [`key_of`]).
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    root: PathBuf,
    entries: HashMap<String, Stamp>,
    /// Content hashes known for entries with exactly this stamp (from earlier diffs).
    hashes: HashMap<String, (Stamp, String)>,
    /// Directories that could not be read or searched, and files that could not be hashed
    /// (reported, never silently skipped).
    unreadable: Vec<String>,
    /// What [`Snapshot::reopen`] opened again after a run.
    reopened: Vec<Reopened>,
}

impl Snapshot {
    /// Stamps everything under `root`, following no symlink, skipping nothing.
    pub fn take(root: &Path) -> Snapshot {
        let (entries, unreadable) = walk::stamp_tree(root);
        Snapshot {
            root: root.to_path_buf(),
            entries,
            hashes: HashMap::new(),
            unreadable,
            reopened: Vec::new(),
        }
    }

    /// Stamps only the directories `within` (relative to `root`) and what is beneath them.
    /// Diffed with [`diff_within`], it finds every change when nothing else could change:
    /// under bubblewrap, everything outside the writable directories is a read-only mount.
    pub fn take_within(root: &Path, within: &[String]) -> Snapshot {
        let (entries, unreadable) = walk::stamp_subtrees(root, within);
        Snapshot {
            root: root.to_path_buf(),
            entries,
            hashes: HashMap::new(),
            unreadable,
            reopened: Vec::new(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn get(&self, rel: &str) -> Option<&Stamp> {
        self.entries.get(rel)
    }

    /// Directories the walk could not read or search, and files whose content could not be
    /// hashed (keys; after [`Snapshot::reopen`], only those Mandate cannot open).
    pub fn unreadable(&self) -> &[String] {
        &self.unreadable
    }

    /// Every directory (not a symlink) whose name is one of `names`, e.g. the build outputs
    /// of the command policy, as absolute paths.
    pub fn directories_named(&self, names: &[&str]) -> Vec<PathBuf> {
        let mut found: Vec<PathBuf> = self
            .entries
            .iter()
            .filter(|(rel, stamp)| {
                stamp.kind == EntryKind::Directory
                    && names.contains(&rel.rsplit('/').next().unwrap_or(rel))
            })
            .map(|(rel, _)| self.root.join(real_path(rel)))
            .collect();
        found.sort();
        found
    }

    /// Paths (absolute) of entries for which `keep(rel, stamp)` holds, e.g. nested `.git`
    /// directories and paths `.intentignore` lists inside writable directories.
    pub fn find(&self, mut keep: impl FnMut(&str, &Stamp) -> bool) -> Vec<PathBuf> {
        let mut found: Vec<PathBuf> = self
            .entries
            .iter()
            .filter(|(rel, stamp)| keep(rel, stamp))
            .map(|(rel, _)| self.root.join(real_path(rel)))
            .collect();
        found.sort();
        found
    }
}

/// How an entry changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Created,
    /// Its content changed (or may have: its content was not known before).
    Modified,
    /// Its times moved, its content is the same as before.
    Touched,
    Deleted,
    /// Only its permissions changed (for a file, its content is known to be the same).
    ModeChanged,
    /// A file became a directory, a symlink, … or the other way round.
    TypeChanged,
}

/// One changed entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// Workspace-relative, `/`-separated: the key of the path ([`key_of`]). Files are reached
    /// through [`real_path`], and names are shown through [`shown`].
    pub path: String,
    pub kind: ChangeKind,
    pub before: Option<Stamp>,
    pub after: Option<Stamp>,
    /// `sha256:` + hex of the content now, for regular files that were created or modified
    /// (not for files over [`MAX_HASHED_BYTES`]).
    pub hash_after: Option<String>,
}

/// Larger files are reported without a content hash.
pub const MAX_HASHED_BYTES: u64 = 256 * 1024 * 1024;

fn hash_file(path: &Path) -> std::io::Result<String> {
    let bytes = std::fs::read(path)?;
    Ok(format!("sha256:{}", crate::fsutil::sha256_hex(&bytes)))
}

/// Whether `path` lies beneath one of the directories in `blind` (which could not be read, so
/// nothing is known of what is inside them, either way).
fn beneath_any(path: &str, blind: &[String]) -> bool {
    blind.iter().any(|dir| {
        dir.is_empty()
            || path
                .strip_prefix(dir.as_str())
                .is_some_and(|r| r.starts_with('/'))
    })
}

/// The changes from `before` (a whole snapshot) to `after` (taken with
/// [`Snapshot::take_within`] for the same `within` directories), sorted by path.
pub fn diff_within(before: &Snapshot, after: &mut Snapshot, within: &[String]) -> Vec<Change> {
    let inside = |path: &str| {
        within.iter().any(|w| {
            w.is_empty()
                || path == w
                || path
                    .strip_prefix(w.as_str())
                    .is_some_and(|r| r.starts_with('/'))
        })
    };
    let part = Snapshot {
        root: before.root.clone(),
        entries: before
            .entries
            .iter()
            .filter(|(p, _)| inside(p))
            .map(|(p, s)| (p.clone(), *s))
            .collect(),
        hashes: before
            .hashes
            .iter()
            .filter(|(p, _)| inside(p))
            .map(|(p, h)| (p.clone(), h.clone()))
            .collect(),
        unreadable: before
            .unreadable
            .iter()
            .filter(|p| inside(p))
            .cloned()
            .collect(),
        reopened: Vec::new(),
    };
    diff(&part, after)
}

/// The changes from `before` to `after`, sorted by path. Files whose metadata moved are
/// hashed, and the hashes are kept in `after` so that the next diff (with `after` as its
/// "before") can tell a touched file from a modified one. Nothing is said of what lies beneath
/// a directory either snapshot could not read; a file that cannot be hashed is added to
/// `after`'s unreadable entries. A mode that [`Snapshot::reopen`] put back is a change.
pub fn diff(before: &Snapshot, after: &mut Snapshot) -> Vec<Change> {
    let mut changes = Vec::new();
    let mut new_hashes = Vec::new();
    let blind: Vec<String> = before
        .unreadable
        .iter()
        .chain(&after.unreadable)
        .cloned()
        .collect();
    for (path, now) in &after.entries {
        if beneath_any(path, &blind) {
            continue;
        }
        let Some(was) = before.entries.get(path) else {
            changes.push(Change {
                path: path.clone(),
                kind: ChangeKind::Created,
                before: None,
                after: Some(*now),
                hash_after: None,
            });
            continue;
        };
        let kind = if was.kind != now.kind {
            ChangeKind::TypeChanged
        } else if was.content_moved(now) {
            ChangeKind::Modified
        } else if was.mode != now.mode {
            ChangeKind::ModeChanged
        } else {
            // Unchanged: keep a known hash for the next diff.
            if let Some(known) = before.hashes.get(path).filter(|(s, _)| s == now) {
                new_hashes.push((path.clone(), known.clone()));
            }
            continue;
        };
        changes.push(Change {
            path: path.clone(),
            kind,
            before: Some(*was),
            after: Some(*now),
            hash_after: None,
        });
    }
    for (path, was) in &before.entries {
        if !after.entries.contains_key(path) && !beneath_any(path, &blind) {
            changes.push(Change {
                path: path.clone(),
                kind: ChangeKind::Deleted,
                before: Some(*was),
                after: None,
                hash_after: None,
            });
        }
    }
    for change in &mut changes {
        let Some(now) = change.after.filter(|s| s.kind == EntryKind::File) else {
            continue;
        };
        if now.size > MAX_HASHED_BYTES
            || !matches!(
                change.kind,
                ChangeKind::Created | ChangeKind::Modified | ChangeKind::TypeChanged
            )
        {
            continue;
        }
        change.hash_after = match hash_file(&after.root.join(real_path(&change.path))) {
            Ok(hash) => Some(hash),
            Err(e) => {
                if e.kind() == std::io::ErrorKind::PermissionDenied {
                    after.unreadable.push(change.path.clone());
                }
                None
            }
        };
        if let Some(hash) = &change.hash_after {
            // Times alone prove nothing (they can be set back); the content hash does.
            let before_hash = before.hashes.get(&change.path);
            if change.kind == ChangeKind::Modified && before_hash.is_some_and(|(_, h)| h == hash) {
                let same_mode = change.before.is_some_and(|b| b.mode == now.mode);
                change.kind = if same_mode {
                    ChangeKind::Touched
                } else {
                    ChangeKind::ModeChanged
                };
            }
            new_hashes.push((change.path.clone(), (now, hash.clone())));
        }
    }
    after.hashes.extend(new_hashes);
    count_reopened(before, after, &mut changes);
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    changes
}

/// A mode that [`Snapshot::reopen`] put back is a change the process made, even where the
/// diff, seeing the mode as it was, found none (or only a touch).
fn count_reopened(before: &Snapshot, after: &Snapshot, changes: &mut Vec<Change>) {
    for opened in &after.reopened {
        let was = before.entries.get(&opened.path);
        let now = after.entries.get(&opened.path);
        let changed_mode = was.is_some_and(|w| w.mode & 0o7777 != opened.left_mode);
        if !changed_mode {
            continue;
        }
        if let Some(found) = changes.iter_mut().find(|c| c.path == opened.path) {
            // Same content, mode put back: still, the process changed its mode.
            if found.kind == ChangeKind::Touched {
                found.kind = ChangeKind::ModeChanged;
            }
        } else {
            changes.push(Change {
                path: opened.path.clone(),
                kind: ChangeKind::ModeChanged,
                before: was.copied(),
                after: now.copied(),
                hash_after: None,
            });
        }
    }
}
