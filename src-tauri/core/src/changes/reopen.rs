//! What a process left where Mandate cannot read it. A command or a server runs as the
//! person's user, so it can `chmod 000` a directory of theirs, change files inside, and leave
//! the snapshot after it blind there; or `chmod 000` a file it rewrote so that its content
//! cannot be hashed. Mandate's user owns such entries (a process can change the mode only of
//! what its user owns), so Mandate puts back the mode each had before the run (a new one gets
//! the owner's read, write and search bits) and reads it again; the mode change itself is a
//! change like any other. What Mandate still cannot read (another user's) stays listed as
//! unreadable, and the caller fails closed.

use std::collections::HashSet;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::Path;

use serde::Serialize;

use super::{real_path, walk, EntryKind, Snapshot, Stamp};

/// An entry Mandate opened again after a process had left it unreadable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reopened {
    /// The key of the path ([`super::key_of`]).
    pub path: String,
    /// The permission bits the process left (`st_mode & 0o7777`).
    pub left_mode: u32,
    /// The permission bits it has now.
    pub mode: u32,
}

/// Owner read and search (for a directory) or read (for a file).
const OWNER_READ: u32 = 0o400;
const OWNER_READ_SEARCH: u32 = 0o500;

/// Sets the mode of the directory or file at `path` if it is one and Mandate's user (`me`)
/// owns it. The entry is opened without following a symlink and changed through that
/// descriptor, so a symlink put in its place since it was looked at is never followed.
fn set_mode(path: &Path, mode: u32, me: u32) -> bool {
    use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
    use std::os::unix::ffi::OsStrExt as _;
    let Ok(c_path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c_path` is a valid NUL-terminated string; the result is checked.
    let fd = unsafe {
        libc::open(
            c_path.as_ptr(),
            libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return false;
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: `stat` is plain data that fstat fills; the result is checked.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut stat) } != 0 {
        return false;
    }
    let kind = stat.st_mode & libc::S_IFMT;
    if (kind != libc::S_IFDIR && kind != libc::S_IFREG) || stat.st_uid != me {
        return false;
    }
    // The descriptor's own name in /proc is the opened entry itself, whatever has its path now.
    let by_descriptor = format!("/proc/self/fd/{}", fd.as_raw_fd());
    std::fs::set_permissions(by_descriptor, std::fs::Permissions::from_mode(mode)).is_ok()
}

fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

impl Snapshot {
    /// Reads what this snapshot could not (see the module's documentation). `before` is the
    /// snapshot taken before the run, whose modes are put back; without it (the snapshot
    /// before a run) a directory the person left unreadable is opened only for the time of
    /// the reading and its mode set back, so both snapshots see the same tree.
    pub fn reopen(&mut self, before: Option<&Snapshot>) {
        let me = effective_uid();
        let mut todo: Vec<String> = std::mem::take(&mut self.unreadable);
        todo.sort_by(|a, b| b.cmp(a));
        let mut seen = HashSet::new();
        let mut still = Vec::new();
        // Directories opened only for the reading, shallowest first, with the mode to set back.
        let mut to_close: Vec<(String, u32)> = Vec::new();
        while let Some(key) = todo.pop() {
            let path = self.root.join(real_path(&key));
            let meta = match std::fs::symlink_metadata(&path) {
                Ok(meta) => meta,
                // Gone since: there is nothing left to read.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(_) => {
                    still.push(key);
                    continue;
                }
            };
            if !meta.is_dir() {
                // An entry that could not be stamped during the walk.
                self.entries.insert(key, Stamp::of(&meta));
                continue;
            }
            if meta.uid() != me || !seen.insert(key.clone()) {
                still.push(key);
                continue;
            }
            let left = meta.mode() & 0o7777;
            let was = before.and_then(|b| b.entries.get(&key));
            let want = match (before, was) {
                (_, Some(was)) if was.kind == EntryKind::Directory => was.mode & 0o7777,
                (None, _) => left,
                (Some(_), _) => left | 0o700,
            };
            let open = want | OWNER_READ_SEARCH;
            if !set_mode(&path, open, me) {
                still.push(key);
                continue;
            }
            if open != want {
                to_close.push((key.clone(), want));
            }
            let (entries, unreadable) =
                walk::stamp_subtrees(&self.root, std::slice::from_ref(&key));
            self.entries.extend(entries);
            let mut deeper = unreadable;
            deeper.sort_by(|a, b| b.cmp(a));
            todo.extend(deeper);
            if before.is_some() && left != want {
                self.reopened.push(Reopened {
                    path: key,
                    left_mode: left,
                    mode: want,
                });
            }
        }
        // Deepest first: a directory closed again cannot be entered to close the next one.
        for (key, want) in to_close.into_iter().rev() {
            let path = self.root.join(real_path(&key));
            if !set_mode(&path, want, me) {
                tracing::warn!(path = %super::shown(&key), "could not set a directory's mode back");
            }
            if let Ok(meta) = std::fs::symlink_metadata(&path) {
                self.entries.insert(key, Stamp::of(&meta));
            }
        }
        if let Some(before) = before {
            self.reopen_files(before, me);
        }
        self.reopened.sort_by(|a, b| a.path.cmp(&b.path));
        still.sort();
        still.dedup();
        self.unreadable = still;
    }

    /// Files that moved since `before` and that Mandate owns but cannot read (their content
    /// is to be hashed): their mode is put back.
    fn reopen_files(&mut self, before: &Snapshot, me: u32) {
        if me == 0 {
            return;
        }
        let moved: Vec<String> = self
            .entries
            .iter()
            .filter(|(key, now)| {
                now.kind == EntryKind::File
                    && now.mode & OWNER_READ == 0
                    && before.entries.get(*key) != Some(*now)
            })
            .map(|(key, _)| key.clone())
            .collect();
        for key in moved {
            let path = self.root.join(real_path(&key));
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if !meta.is_file() || meta.uid() != me {
                continue;
            }
            let left = meta.mode() & 0o7777;
            let want = match before.entries.get(&key) {
                Some(was) if was.kind == EntryKind::File => was.mode & 0o7777,
                _ => left | 0o600,
            };
            // The person's own unreadable file: hashing it fails, and the caller is told.
            if want & OWNER_READ == 0 || !set_mode(&path, want, me) {
                continue;
            }
            if let Ok(meta) = std::fs::symlink_metadata(&path) {
                self.entries.insert(key.clone(), Stamp::of(&meta));
            }
            self.reopened.push(Reopened {
                path: key,
                left_mode: left,
                mode: want,
            });
        }
    }

    /// What [`Snapshot::reopen`] opened again after the run.
    pub fn reopened(&self) -> &[Reopened] {
        &self.reopened
    }
}
