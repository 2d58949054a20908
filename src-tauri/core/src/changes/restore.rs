//! Undoing out-of-scope changes, which only a command without (full) confinement can make.
//! What comes back depends on what is known of the state before the command, and every path
//! says which it was, never silently:
//!
//! - a created file, link or directory is removed;
//! - a changed mode is set back (the snapshot holds it);
//! - a file of `.orchestration/`, `.intentignore` or `.git/` (config, hooks, refs, `HEAD`,
//!   `packed-refs`, `info/`) comes back from the copy [`BeforeImages::capture`] took; a file
//!   too large to copy (the ledger) comes back only if it was appended to (cut back to its
//!   length after checking that the start is unchanged);
//! - a tracked file that was clean comes back from git's index;
//! - anything else (an untracked or already modified file that was changed or deleted) cannot
//!   be restored: the outcome says so, and the caller reports it.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Serialize;

use super::{Change, ChangeKind, EntryKind, Snapshot};

/// Files up to this size are copied whole; all copies together stay under `MAX_COPIED`.
const MAX_COPY: u64 = 4 * 1024 * 1024;
const MAX_COPIED: u64 = 64 * 1024 * 1024;

/// What is known of the workspace before a command, beyond its metadata.
#[derive(Debug, Clone, Default)]
pub struct BeforeImages {
    copies: HashMap<String, Vec<u8>>,
    /// Larger protected files: their length and the hash of their content.
    prefixes: HashMap<String, (u64, String)>,
    /// Tracked files that were clean: their blob id in git's index.
    git_blobs: HashMap<String, String>,
    /// What could not be kept, to say when it is needed.
    not_kept: Vec<String>,
}

#[cfg(test)]
impl BeforeImages {
    pub(super) fn capture_for_test(snapshot: &Snapshot, max_copy: u64) -> BeforeImages {
        let mut images = BeforeImages::copies_of_protected(snapshot, max_copy);
        images.git_blobs = clean_tracked_files(snapshot.root());
        images
    }
}

/// The protected files worth a copy before an unconfined command.
fn worth_copying(rel: &str) -> bool {
    if rel == ".intentignore" || rel.starts_with(".orchestration/") {
        return true;
    }
    let Some(git) = rel.strip_prefix(".git/") else {
        return false;
    };
    matches!(git, "config" | "HEAD" | "packed-refs" | "index")
        || ["hooks/", "refs/", "info/"]
            .iter()
            .any(|dir| git.starts_with(dir))
}

impl BeforeImages {
    /// Files that should have been kept but could not be read.
    pub fn not_kept(&self) -> &[String] {
        &self.not_kept
    }

    /// Nothing kept: with full confinement no out-of-scope change can be made.
    pub fn none() -> BeforeImages {
        BeforeImages::default()
    }

    /// Keeps what an unconfined command could destroy and Mandate must get back (see the
    /// module's documentation). `snapshot` is the one taken before the same command.
    pub fn capture(snapshot: &Snapshot) -> BeforeImages {
        BeforeImages::capture_with(snapshot, true, true)
    }

    /// As [`BeforeImages::capture`], choosing what to keep: copies of the protected files
    /// (needed when confinement is partial or absent), and git's view of clean tracked files
    /// (needed whenever writable directories are wider than the intent's globs; it runs two
    /// `git` commands).
    pub fn capture_with(snapshot: &Snapshot, protected_copies: bool, git: bool) -> BeforeImages {
        let mut images = if protected_copies {
            BeforeImages::copies_of_protected(snapshot, MAX_COPY)
        } else {
            BeforeImages::default()
        };
        if git {
            images.git_blobs = clean_tracked_files(snapshot.root());
        }
        images
    }

    fn copies_of_protected(snapshot: &Snapshot, max_copy: u64) -> BeforeImages {
        let root = snapshot.root();
        let mut images = BeforeImages::default();
        let mut copied = 0u64;
        let mut paths: Vec<(&String, &super::Stamp)> = snapshot
            .entries
            .iter()
            .filter(|(rel, s)| s.kind == EntryKind::File && worth_copying(rel))
            .collect();
        paths.sort_by_key(|(rel, _)| rel.as_str());
        for (rel, stamp) in paths {
            let path = root.join(rel);
            let bytes = match std::fs::read(&path) {
                Ok(bytes) => bytes,
                Err(e) => {
                    images.not_kept.push(format!("{rel}: {e}"));
                    continue;
                }
            };
            if stamp.size <= max_copy && copied + stamp.size <= MAX_COPIED {
                copied += bytes.len() as u64;
                images.copies.insert(rel.clone(), bytes);
            } else {
                let hash = crate::fsutil::sha256_hex(&bytes);
                images
                    .prefixes
                    .insert(rel.clone(), (bytes.len() as u64, hash));
            }
        }
        images
    }
}

/// `path → blob id` for tracked files whose working copy matches the index.
fn clean_tracked_files(root: &Path) -> HashMap<String, String> {
    let git = |args: &[&str]| {
        Command::new("git")
            .args([
                "-c",
                "core.fsmonitor=false",
                "-c",
                "core.hooksPath=/dev/null",
            ])
            .args(args)
            .current_dir(root)
            .env("GIT_OPTIONAL_LOCKS", "0")
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| o.stdout)
    };
    let Some(staged) = git(&["ls-files", "-s", "-z"]) else {
        return HashMap::new();
    };
    let dirty: Vec<String> = git(&["diff-files", "--name-only", "-z"])
        .map(|out| {
            out.split(|b| *b == 0)
                .filter(|p| !p.is_empty())
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .collect()
        })
        .unwrap_or_default();
    let mut blobs = HashMap::new();
    for line in staged.split(|b| *b == 0).filter(|l| !l.is_empty()) {
        // `<mode> <blob> <stage>\t<path>`
        let line = String::from_utf8_lossy(line);
        let Some((info, path)) = line.split_once('\t') else {
            continue;
        };
        let mut fields = info.split(' ');
        let (Some(_mode), Some(blob), Some("0")) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if !dirty.iter().any(|d| d == path) {
            blobs.insert(path.to_string(), blob.to_string());
        }
    }
    blobs
}

/// What became of one out-of-scope change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RestoreOutcome {
    pub path: String,
    pub kind: ChangeKind,
    /// How it was restored, or why it could not be.
    pub result: Result<Restored, String>,
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
}

/// Undoes `changes` (the out-of-scope ones) in `root` where the earlier state is known.
/// Deepest paths first, so a created directory is emptied before it is removed.
pub fn restore(root: &Path, changes: &[Change], images: &BeforeImages) -> Vec<RestoreOutcome> {
    let mut order: Vec<&Change> = changes.iter().collect();
    order.sort_by(|a, b| b.path.cmp(&a.path));
    let mut outcomes: Vec<RestoreOutcome> = order
        .into_iter()
        .map(|change| RestoreOutcome {
            path: change.path.clone(),
            kind: change.kind,
            result: restore_one(root, change, images),
        })
        .collect();
    outcomes.sort_by(|a, b| a.path.cmp(&b.path));
    outcomes
}

fn restore_one(root: &Path, change: &Change, images: &BeforeImages) -> Result<Restored, String> {
    let path = root.join(&change.path);
    no_symlink_on_the_way(root, &change.path)?;
    let now = std::fs::symlink_metadata(&path)
        .ok()
        .map(|m| super::Stamp::of(&m));
    if now != change.after {
        return Err("it changed again after the command".into());
    }
    match change.kind {
        ChangeKind::Touched => Ok(Restored::Unchanged),
        ChangeKind::Created => remove(&path).map(|_| Restored::Removed),
        ChangeKind::ModeChanged => set_mode(&path, change).map(|_| Restored::ModeRestored),
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
            let (bytes, how) = earlier_content(root, change, images)?;
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
) -> Result<(Option<Vec<u8>>, Restored), String> {
    if let Some(copy) = images.copies.get(&change.path) {
        return Ok((Some(copy.clone()), Restored::FromCopy));
    }
    if let Some((len, hash)) = images.prefixes.get(&change.path) {
        let path = root.join(&change.path);
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
    if let Some(blob) = images.git_blobs.get(&change.path) {
        let out = Command::new("git")
            .args(["cat-file", "blob", blob])
            .current_dir(root)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .map_err(|e| e.to_string())?;
        if out.status.success() {
            return Ok((Some(out.stdout), Restored::FromGit));
        }
        return Err(format!("git could not give back blob {blob}"));
    }
    Err("no copy of its earlier content exists (it is not tracked by git, or it had uncommitted changes)".into())
}

/// Refuses to write through a symlink the command may have put in the way.
fn no_symlink_on_the_way(root: &Path, rel: &str) -> Result<(), String> {
    let mut at = PathBuf::from(root);
    let parts: Vec<&str> = rel.split('/').collect();
    for part in &parts[..parts.len().saturating_sub(1)] {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(format!("`{}` is now a symlink", at.display()))
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

fn set_mode(path: &Path, change: &Change) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt as _;
    let Some(before) = change.before else {
        return Ok(());
    };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(before.mode & 0o7777))
        .map_err(|e| e.to_string())
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
