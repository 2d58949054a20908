//! Writing files so that a crash, a full disk or a bad value never leaves a half-written file:
//! write a temporary file beside the target, fsync it, rename it over the target, fsync the
//! directory. Readers see the old version or the new one, nothing in between.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Replaces `path` with `bytes` atomically. The parent directory is created if missing.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace(path, bytes, true)
}

/// Like [`write_atomic`] but without the directory fsync after the rename: readers still see
/// the old bytes or the new, never a mix, and the data is on disk before the rename. Used for
/// the agent's writes to the user's files, which are followed at once by the fsynced ledger
/// append; on journaling filesystems that commit also makes the rename durable.
pub fn write_replace(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace(path, bytes, false)
}

fn replace(path: &Path, bytes: &[u8], sync_parent: bool) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    let tmp = dir.join(format!(
        ".{name}.tmp-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let result = (|| {
        let mut file = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        // Keep the permissions of the file being replaced (a user may have made it read-only for others).
        if let Ok(meta) = fs::metadata(path) {
            let _ = file.set_permissions(meta.permissions());
        }
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp, path)?;
        if sync_parent {
            sync_dir(&dir)?;
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Makes a rename or a new directory entry durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(bytes))
}

/// Gives a file opened with `O_TMPFILE` the name `path` (through `/proc/self/fd`); `NotFound`
/// when there is no `/proc`.
pub(crate) fn link_unnamed(file: &fs::File, path: &Path) -> io::Result<()> {
    use std::os::fd::AsRawFd as _;
    use std::os::unix::ffi::OsStrExt as _;
    let from = std::ffi::CString::new(format!("/proc/self/fd/{}", file.as_raw_fd()))
        .map_err(io::Error::other)?;
    let to = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)?;
    // SAFETY: two NUL-terminated paths valid for the call.
    let rc = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A file kept open between uses, with the identity (device, inode) it had when opened, so a
/// user can tell when its path no longer names it (removed, or replaced by a rename).
#[derive(Debug)]
pub(crate) struct KeptFile {
    pub file: File,
    id: (u64, u64),
}

impl KeptFile {
    pub(crate) fn new(file: File) -> io::Result<Self> {
        use std::os::unix::fs::MetadataExt as _;
        let m = file.metadata()?;
        Ok(Self {
            id: (m.dev(), m.ino()),
            file,
        })
    }

    /// Whether `path` names this file now.
    pub(crate) fn is_at(&self, path: &Path) -> bool {
        use std::os::unix::fs::MetadataExt as _;
        fs::metadata(path).is_ok_and(|m| (m.dev(), m.ino()) == self.id)
    }
}

/// Takes the exclusive lock of the file `path` names, through the file kept in `kept` (opened
/// with `open` when none is kept, or when the path no longer names the kept one). The path is
/// checked after the lock is taken: a lock on a file that was removed or replaced meanwhile
/// excludes nobody, so it is dropped and the file the path names now is locked instead.
pub(crate) fn lock_kept<'a>(
    kept: &'a mut Option<KeptFile>,
    path: &Path,
    open: impl Fn() -> io::Result<File>,
) -> io::Result<&'a File> {
    for _ in 0..16 {
        let held = match kept.take() {
            Some(k) => k,
            None => KeptFile::new(open()?)?,
        };
        held.file.lock()?;
        if held.is_at(path) {
            return Ok(&kept.insert(held).file);
        }
        let _ = held.file.unlock();
    }
    Err(io::Error::other(format!(
        "{} keeps being replaced: its lock cannot be taken",
        path.display()
    )))
}

/// Work running on another thread (the runtime's blocking pool when there is one), so that the
/// caller goes on while it runs; [`Background::wait`] gives its result.
pub(crate) struct Background<T>(std::sync::mpsc::Receiver<T>);

impl<T: Send + 'static> Background<T> {
    pub(crate) fn start(f: impl FnOnce() -> T + Send + 'static) -> Self {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let job = move || {
            let _ = tx.send(f());
        };
        // If no thread can be had, the job is dropped unrun and `wait` says so.
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(job)),
            Err(_) => drop(std::thread::Builder::new().spawn(job)),
        }
        Self(rx)
    }

    /// Waits for the result; an error when the work could not run to its end.
    pub(crate) fn wait(self) -> io::Result<T> {
        self.0
            .recv()
            .map_err(|_| io::Error::other("work on a background thread stopped before its end"))
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// Runs `f` on a thread kept for work nobody waits for (closing a replaced file, starting a
/// write-back), after what was given it before; run here when that thread cannot be had.
pub(crate) fn in_background(f: impl FnOnce() + Send + 'static) {
    static DEFERRED: std::sync::OnceLock<Option<std::sync::mpsc::Sender<Job>>> =
        std::sync::OnceLock::new();
    let deferred = DEFERRED.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        let worker = move || {
            for job in rx {
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            }
        };
        std::thread::Builder::new()
            .name("mandate-deferred".into())
            .spawn(worker)
            .ok()
            .map(|_| tx)
    });
    let job: Job = Box::new(f);
    let unsent = match deferred {
        Some(tx) => tx.send(job).err().map(|e| e.0),
        None => Some(job),
    };
    if let Some(job) = unsent {
        job();
    }
}

/// Work that blocks on the file system (reads, fsyncs) run from async code. On a multi-thread
/// runtime (the window's and `mandate run`'s) it runs on this very thread while the worker's
/// other tasks are handed to another (`block_in_place`): a governed write then makes no trip to
/// another thread and back. On a current-thread runtime it goes to the blocking pool.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Interrupted> {
    use tokio::runtime::{Handle, RuntimeFlavor};
    let multi =
        Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread);
    if multi {
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            tokio::task::block_in_place(f)
        }));
        return ran.map_err(|panic| Interrupted(panic_message(panic.as_ref())));
    }
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Interrupted(e.to_string()))
}

/// Blocking work that did not run to its end (it panicked or its thread was lost).
#[derive(Debug)]
pub struct Interrupted(String);

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the work stopped before its end ({})", self.0)
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_content_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a/b.txt");
        write_atomic(&path, b"one").expect("first write");
        write_atomic(&path, b"two").expect("second write");
        assert_eq!(fs::read(&path).expect("read"), b"two");
        let entries: Vec<_> = fs::read_dir(path.parent().expect("parent"))
            .expect("list")
            .collect();
        assert_eq!(entries.len(), 1, "temp files left behind");
    }

    #[test]
    fn failed_write_keeps_previous_version() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("x.txt");
        write_atomic(&path, b"good").expect("write");
        // A directory in place of the target makes the rename fail.
        let blocked = dir.path().join("blocked");
        fs::create_dir_all(blocked.join("inner")).expect("mkdir");
        assert!(write_atomic(&blocked, b"bad").is_err());
        assert_eq!(fs::read(&path).expect("read"), b"good");
    }

    #[test]
    fn work_nobody_waits_for_runs_in_the_order_given() {
        let (tx, rx) = std::sync::mpsc::channel();
        for i in 0..100 {
            let tx = tx.clone();
            in_background(move || {
                let _ = tx.send(i);
            });
        }
        in_background(|| panic!("one job fails"));
        in_background(move || {
            let _ = tx.send(100);
        });
        let got: Vec<i32> = rx.iter().take(101).collect();
        assert_eq!(got, (0..=100).collect::<Vec<_>>());
    }

    #[test]
    fn background_work_gives_its_result_with_or_without_a_runtime() {
        assert_eq!(Background::start(|| 6 * 7).wait().expect("result"), 42);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let _entered = rt.enter();
        assert_eq!(
            Background::start(|| "on the pool").wait().expect("result"),
            "on the pool"
        );
        let died = Background::<u8>::start(|| panic!("the work fails"));
        assert!(died.wait().is_err());
    }

    #[test]
    fn blocking_work_runs_on_either_runtime_and_a_panic_is_an_error() {
        for multi in [false, true] {
            let rt = if multi {
                tokio::runtime::Builder::new_multi_thread().build()
            } else {
                tokio::runtime::Builder::new_current_thread().build()
            }
            .expect("runtime");
            let here = std::thread::current().id();
            let (value, there) = rt
                .block_on(rt.spawn(super::blocking(move || (42, std::thread::current().id()))))
                .expect("task")
                .expect("ran");
            assert_eq!(value, 42);
            // On a multi-thread runtime the work ran on the worker that awaited it.
            assert_ne!(there, here);
            let failed = rt
                .block_on(rt.spawn(super::blocking(|| -> u8 { panic!("the disk is gone") })))
                .expect("task");
            let message = failed.expect_err("a panic").to_string();
            assert!(message.contains("the disk is gone"), "{message}");
        }
    }
}
