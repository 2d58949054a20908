//! One writer per file at a time, across tasks and across processes (the window and a headless
//! run on one workspace are two processes). In a process, an async mutex per path keeps tasks in
//! line without tying up threads; across processes, an advisory `flock` on one of 256 lock files
//! under `.orchestration/.locks/` (picked by the path's hash, so the directory never grows) is
//! held from the stale check through the rename and the ledger record. The kernel releases it
//! when a holder dies.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub const LOCK_DIR: &str = crate::orchestration_file!(".locks");

/// In-process async locks, one per path.
#[derive(Default)]
pub struct PathLocks {
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl PathLocks {
    pub fn lock_for(&self, rel: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(|p| p.into_inner());
        locks.entry(rel.to_string()).or_default().clone()
    }
}

/// A held cross-process lock; released on drop.
pub struct FileLock {
    file: File,
}

impl Drop for FileLock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

fn lock_file(root: &Path, rel: &str) -> io::Result<File> {
    let stripe = &crate::fsutil::sha256_hex(rel.as_bytes())[..2];
    let dir: PathBuf = root.join(LOCK_DIR);
    let path = dir.join(format!("{stripe}.lock"));
    let open = || {
        OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
    };
    match open() {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            std::fs::create_dir_all(&dir)?;
            open()
        }
        opened => opened,
    }
}

/// Waits for the lock of `rel` (blocking: call it off the async workers).
pub fn lock_path(root: &Path, rel: &str) -> io::Result<FileLock> {
    let file = lock_file(root, rel)?;
    file.lock()?;
    Ok(FileLock { file })
}

/// The lock of `rel` if nobody holds it now.
pub fn try_lock_path(root: &Path, rel: &str) -> io::Result<Option<FileLock>> {
    let file = lock_file(root, rel)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(FileLock { file })),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}
