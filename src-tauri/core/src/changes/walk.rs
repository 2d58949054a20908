//! Stamping a whole tree fast: directories are shared out to a few threads, each entry is
//! stamped with one `fstatat` relative to its directory (no path lookups from the root), and
//! nothing is skipped or followed. Entries are keyed by [`super::names::key_of`], never by a
//! lossy name.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};

use super::{EntryKind, Stamp};

/// What one thread found: stamped entries, and directories it could not read or search (and
/// entries it could not stamp for another reason).
type Found = (Vec<(String, Stamp)>, Vec<String>);

/// Work shared by the threads: directories still to read, and how many are being read.
struct Queue {
    todo: Vec<(PathBuf, String)>,
    busy: usize,
}

/// Every entry under `root` by relative path, and the directories that could not be read.
pub(super) fn stamp_tree(root: &Path) -> (HashMap<String, Stamp>, Vec<String>) {
    stamp_subtrees(root, &[String::new()])
}

/// As [`stamp_tree`], for the directories `rels` (relative to `root`; `""` is the root) and
/// everything beneath them, each directory itself included.
pub(super) fn stamp_subtrees(
    root: &Path,
    rels: &[String],
) -> (HashMap<String, Stamp>, Vec<String>) {
    let mut start = Vec::new();
    let mut own = Vec::new();
    for rel in rels {
        let dir = if rel.is_empty() {
            root.to_path_buf()
        } else {
            root.join(super::names::real_path(rel))
        };
        if !rel.is_empty() {
            match std::fs::symlink_metadata(&dir) {
                Ok(meta) => {
                    let stamp = Stamp::of(&meta);
                    own.push((rel.clone(), stamp));
                    if stamp.kind != EntryKind::Directory {
                        continue;
                    }
                }
                Err(_) => continue,
            }
        }
        start.push((dir, rel.clone()));
    }
    let (mut entries, unreadable) = stamp_from(start);
    entries.extend(own);
    (entries, unreadable)
}

fn stamp_from(start: Vec<(PathBuf, String)>) -> (HashMap<String, Stamp>, Vec<String>) {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .clamp(2, 8);
    let queue = Mutex::new(Queue {
        todo: start,
        busy: 0,
    });
    let wake = Condvar::new();
    let results: Vec<Found> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| scope.spawn(|| worker(&queue, &wake)))
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap_or_default())
            .collect()
    });
    let total = results.iter().map(|(e, _)| e.len()).sum();
    let mut entries = HashMap::with_capacity(total);
    let mut unreadable = Vec::new();
    for (found, failed) in results {
        entries.extend(found);
        unreadable.extend(failed);
    }
    unreadable.sort();
    (entries, unreadable)
}

fn worker(queue: &Mutex<Queue>, wake: &Condvar) -> Found {
    let mut found = Vec::new();
    let mut failed = Vec::new();
    loop {
        let next = {
            let Ok(mut q) = queue.lock() else {
                return (found, failed);
            };
            loop {
                if let Some(dir) = q.todo.pop() {
                    q.busy += 1;
                    break Some(dir);
                }
                if q.busy == 0 {
                    break None;
                }
                q = match wake.wait(q) {
                    Ok(q) => q,
                    Err(_) => return (found, failed),
                };
            }
        };
        let Some((dir, rel)) = next else {
            wake.notify_all();
            return (found, failed);
        };
        let mut subdirs = Vec::new();
        match read_one(&dir, &rel, &mut subdirs) {
            Some((stamped, lost)) => {
                found.extend(stamped);
                failed.extend(lost);
            }
            None => {
                subdirs.clear();
                failed.push(rel.clone());
            }
        }
        if let Ok(mut q) = queue.lock() {
            q.todo.extend(subdirs);
            q.busy -= 1;
        }
        wake.notify_all();
    }
}

/// The entries of one directory, stamped, with the subdirectories to read next and the
/// entries that vanished before they could be stamped. `None` when the directory cannot be
/// listed whole, or listed but not searched (read without execute permission): then nothing
/// found in it counts, and the caller reports the directory itself.
fn read_one(dir: &Path, rel: &str, subdirs: &mut Vec<(PathBuf, String)>) -> Option<Found> {
    let mut stamped = Vec::new();
    let mut lost = Vec::new();
    for entry in std::fs::read_dir(dir).ok()? {
        let entry = entry.ok()?;
        let name = entry.file_name();
        let name = super::names::key_of(&name);
        let mut child = String::with_capacity(rel.len() + 1 + name.len());
        if !rel.is_empty() {
            child.push_str(rel);
            child.push('/');
        }
        child.push_str(&name);
        // `DirEntry::metadata` does not follow symlinks.
        let meta = match entry.metadata() {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => return None,
            Err(_) => {
                lost.push(child);
                continue;
            }
        };
        let stamp = Stamp::of(&meta);
        if stamp.kind == EntryKind::Directory {
            subdirs.push((entry.path(), child.clone()));
        }
        stamped.push((child, stamp));
    }
    Some((stamped, lost))
}
