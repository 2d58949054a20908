//! The ledger's heads, kept in the app's data directory (`DATA/ledgers/<workspace key>/`),
//! where the agent's confined commands cannot write.
//!
//! A head says what the ledger looked like right after Mandate's last append on one branch:
//! how many lines, how many bytes, the hash of its last line and the commit checked out then.
//! The hash of a line commits to every line before it (the chain), so "the ledger still holds
//! the line Mandate wrote last" proves nothing Mandate wrote was removed or rewritten, and
//! "every line descends from a head or is in git" proves nothing was added behind its back.
//! The merge driver also notes the tips of the ledgers it produced, so a merge that has not
//! been committed yet is not mistaken for a forgery.
//!
//! Every append updates the head under the ledger's OS lock: before the write, the hash of the
//! line about to be written is noted as *pending* (a file of its own, 65 bytes: appends to one
//! ledger are serialized, so one slot is enough); after the record is on disk, it becomes the
//! branch's head. So a process killed between the two leaves a line the head still vouches for
//! (its hash cannot be produced by anything but that very line). The head file is rewritten
//! in place and its write-back started at once (`sync_file_range`), not
//! waited for: a second fsync per append would double the cost of a governed write. The price
//! is a window of milliseconds after an append in which a power cut (not a crash of Mandate:
//! the page cache survives that) can leave the head one record behind the ledger, which
//! verify then reports. The file carries its own checksum, so a torn write is named as such.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::fsutil::sha256_hex;

/// How many merge tips are remembered (a merge's tip matters only until it is committed).
const MERGE_TIPS: usize = 64;

#[derive(Debug, thiserror::Error)]
pub enum HeadError {
    #[error("cannot keep the ledger's head in {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("the ledger's head in {path} is damaged ({reason}); it was written when the machine lost power, or edited")]
    Damaged { path: String, reason: String },
}

/// The head of one branch's ledger, after Mandate's last append on that branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BranchHead {
    /// Lines in the ledger then.
    pub records: u64,
    /// Its length in bytes then.
    pub bytes: u64,
    /// SHA-256 (hex) of its last line.
    pub last: String,
    /// The commit checked out then (None outside git or on an unborn branch).
    pub commit: Option<String>,
    /// Size of the branch's reflog then (it grows whenever the branch moves).
    #[serde(default)]
    pub reflog: Option<u64>,
    /// When (RFC 3339).
    pub at: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Heads {
    /// The workspace these heads belong to (for people reading the file).
    #[serde(default)]
    pub workspace: String,
    /// The identity (device, inode, birth time) of the workspace's directory: a directory
    /// deleted and made again at the same path (a fresh clone) is another workspace.
    #[serde(default)]
    pub root_id: Option<String>,
    /// Keyed by what HEAD names: `refs/heads/NAME`, `HEAD` when detached, `""` outside git.
    #[serde(default)]
    pub branches: BTreeMap<String, BranchHead>,
    /// Tips (hex) of ledgers the merge driver produced, newest last.
    #[serde(default)]
    pub merges: Vec<String>,
    /// The hash (hex) of the line the last append set out to write (kept in its own file).
    #[serde(skip)]
    pub pending: Option<String>,
}

impl Heads {
    pub fn is_empty(&self) -> bool {
        self.branches.is_empty() && self.merges.is_empty()
    }

    /// Every tip Mandate vouches for: each branch's last line, a line being appended, and
    /// each merge's result.
    pub fn tips(&self) -> Vec<[u8; 32]> {
        self.branches
            .values()
            .map(|b| b.last.as_str())
            .chain(self.pending.as_deref())
            .chain(self.merges.iter().map(String::as_str))
            .filter_map(|h| super::ledger::unhex32(h.as_bytes()))
            .collect()
    }
}

#[derive(Serialize, Deserialize)]
struct HeadFile {
    version: u32,
    /// SHA-256 of the canonical JSON of `heads` as stored (so fields added later, or unknown
    /// to an older Mandate, do not make the file look damaged).
    check: String,
    heads: serde_json::Value,
}

/// Where one workspace's heads live.
#[derive(Debug, Clone)]
pub struct HeadStore {
    dir: PathBuf,
    workspace: String,
    root: PathBuf,
    /// The `pending` file, kept open between appends (see [`HeadStore::record_pending`]).
    pending: std::sync::Arc<std::sync::Mutex<Option<File>>>,
    /// What [`HeadStore::update`] keeps between updates.
    kept: std::sync::Arc<std::sync::Mutex<Kept>>,
}

/// The lock file, kept open (see [`crate::fsutil::lock_kept`]), and the heads file's bytes as
/// last read or written with the heads they hold: an update parses the file again only when
/// its bytes differ (another process wrote it, or someone edited it).
#[derive(Debug, Default)]
struct Kept {
    lock: Option<crate::fsutil::KeptFile>,
    parsed: Option<(Vec<u8>, Heads)>,
}

/// `device:inode:birth time` of a directory (file systems reuse inode numbers at once, so the
/// time it was made tells a directory made again apart; without it, device and inode).
pub fn dir_identity(path: &Path) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).ok()?;
        let born = m
            .created()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        Some(format!("{}:{}:{born}", m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

impl HeadStore {
    /// The heads of the workspace at `root`, under the data directory `data`.
    pub fn new(data: &Path, root: &Path) -> Self {
        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        Self {
            dir: data
                .join("ledgers")
                .join(crate::settings::workspace_key(&root)),
            workspace: root.to_string_lossy().into_owned(),
            root,
            pending: Default::default(),
            kept: Default::default(),
        }
    }

    /// The data directory the app uses (`MANDATE_DATA_DIR`, else the XDG data directory).
    /// Core unit tests use a private temporary directory instead, never the user's.
    pub fn default_data_dir() -> PathBuf {
        if cfg!(test) {
            return std::env::temp_dir().join("mandate-unit-test-data");
        }
        crate::settings::AppDirs::from_env().data
    }

    pub fn file(&self) -> PathBuf {
        self.dir.join("heads.json")
    }

    /// This workspace's directory in the data directory (outside the workspace: nothing that
    /// can write the workspace, a git branch or a command, can write here).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn io(&self, source: std::io::Error) -> HeadError {
        HeadError::Io {
            path: self.dir.display().to_string(),
            source,
        }
    }

    fn lock_file(&self, create: bool) -> Result<Option<File>, HeadError> {
        match self.open_lock(create) {
            Ok(f) => Ok(Some(f)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !create => Ok(None),
            Err(e) => Err(self.io(e)),
        }
    }

    fn open_lock(&self, create: bool) -> std::io::Result<File> {
        if create {
            std::fs::create_dir_all(&self.dir)?;
        }
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(false)
            .open(self.dir.join("lock"))
    }

    /// The heads as they are now (empty when none were ever written, or when they were
    /// written for an earlier directory at this path: see [`HeadStore::recreated`]).
    pub fn read(&self) -> Result<Heads, HeadError> {
        self.read_all().map(|h| {
            if self.is_current(&h) {
                h
            } else {
                Heads::default()
            }
        })
    }

    /// Whether heads exist for an earlier directory at this workspace's path (deleted and
    /// made again, e.g. a fresh clone): they do not apply to this one.
    pub fn recreated(&self) -> bool {
        self.read_all()
            .map(|h| !h.is_empty() && !self.is_current(&h))
            .unwrap_or(false)
    }

    fn is_current(&self, heads: &Heads) -> bool {
        written_for(heads, dir_identity(&self.root).as_deref())
    }

    fn read_all(&self) -> Result<Heads, HeadError> {
        let Some(lock) = self.lock_file(false)? else {
            return Ok(Heads::default());
        };
        lock.lock_shared().map_err(|e| self.io(e))?;
        let heads = self.read_unlocked();
        let _ = lock.unlock();
        let mut heads = heads?;
        heads.pending = std::fs::read_to_string(self.dir.join("pending"))
            .ok()
            .map(|p| p.trim().to_string())
            .filter(|p| super::ledger::unhex32(p.as_bytes()).is_some());
        Ok(heads)
    }

    fn read_unlocked(&self) -> Result<Heads, HeadError> {
        match self.read_bytes()? {
            Some(text) => self.parse(&text),
            None => Ok(Heads::default()),
        }
    }

    /// The heads file's bytes (None when there is none).
    fn read_bytes(&self) -> Result<Option<Vec<u8>>, HeadError> {
        match std::fs::read(self.file()) {
            Ok(t) => Ok(Some(t)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.io(e)),
        }
    }

    /// [`HeadStore::read_unlocked`] through what `kept` holds: parsed again only when the
    /// bytes differ from those it was parsed from.
    fn read_kept(&self, kept: &mut Option<(Vec<u8>, Heads)>) -> Result<Heads, HeadError> {
        let Some(text) = self.read_bytes()? else {
            *kept = None;
            return Ok(Heads::default());
        };
        if let Some((_, heads)) = kept.as_ref().filter(|(bytes, _)| *bytes == text) {
            return Ok(heads.clone());
        }
        *kept = None;
        let heads = self.parse(&text)?;
        *kept = Some((text, heads.clone()));
        Ok(heads)
    }

    fn parse(&self, text: &[u8]) -> Result<Heads, HeadError> {
        let path = self.file();
        let damaged = |reason: String| HeadError::Damaged {
            path: path.display().to_string(),
            reason,
        };
        let file: HeadFile =
            serde_json::from_slice(text).map_err(|e| damaged(format!("not JSON: {e}")))?;
        if file.version != 1 {
            return Err(damaged(format!("unknown version {}", file.version)));
        }
        if file.check != check_of(&file.heads) {
            return Err(damaged("its checksum does not match".into()));
        }
        serde_json::from_value(file.heads).map_err(|e| damaged(format!("unreadable: {e}")))
    }

    /// Changes the heads under their lock. `change` sees the heads as they are now.
    pub fn update(&self, change: impl FnOnce(&mut Heads)) -> Result<Heads, HeadError> {
        self.prepare(change)?.write()
    }

    /// The first half of [`HeadStore::update`]: takes the lock and makes the change, writing
    /// nothing yet; [`PreparedHeads::write`] writes it. The lock is held until then (or until
    /// it is dropped), so nobody changes the heads meanwhile.
    pub(crate) fn prepare(
        &self,
        change: impl FnOnce(&mut Heads),
    ) -> Result<PreparedHeads<'_>, HeadError> {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let Kept { lock, parsed } = &mut *kept;
        crate::fsutil::lock_kept(lock, &self.dir.join("lock"), || self.open_lock(true))
            .map_err(|e| self.io(e))?;
        let root_id = dir_identity(&self.root);
        // A damaged file, or heads of an earlier directory at this path, are replaced: the
        // update carries what is known now.
        let mut heads = self
            .read_kept(parsed)
            .ok()
            .filter(|h| written_for(h, root_id.as_deref()))
            .unwrap_or_default();
        heads.workspace = self.workspace.clone();
        heads.root_id = root_id;
        change(&mut heads);
        if heads.merges.len() > MERGE_TIPS {
            let extra = heads.merges.len() - MERGE_TIPS;
            heads.merges.drain(..extra);
        }
        let bytes = self.encode(&heads)?;
        Ok(PreparedHeads {
            store: self,
            kept,
            heads,
            bytes,
        })
    }

    /// Notes the hash of the line an append is about to write (the caller holds the
    /// ledger's lock, so appends never race for this slot).
    /// The file stays open between appends; it is opened again when it was removed or
    /// replaced (its link count is then 0).
    pub fn record_pending(&self, line_hex: &str) -> Result<(), HeadError> {
        use std::os::unix::fs::{FileExt as _, MetadataExt as _};
        let line = format!("{line_hex}\n");
        let mut cached = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        let stale = cached.as_ref().is_none_or(|f| {
            f.metadata()
                .map_or(true, |m| m.nlink() == 0 || m.len() != line.len() as u64)
        });
        if stale {
            std::fs::create_dir_all(&self.dir).map_err(|e| self.io(e))?;
            let f = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .open(self.dir.join("pending"))
                .map_err(|e| self.io(e))?;
            f.set_len(line.len() as u64).map_err(|e| self.io(e))?;
            *cached = Some(f);
        }
        let f = cached
            .as_ref()
            .ok_or_else(|| self.io(std::io::ErrorKind::NotFound.into()))?;
        f.write_all_at(line.as_bytes(), 0).map_err(|e| self.io(e))?;
        start_writeback(f, line.len());
        Ok(())
    }

    /// Records the head of `branch` after an append.
    pub fn record_append(&self, branch: &str, head: BranchHead) -> Result<(), HeadError> {
        self.update(|h| {
            h.branches.insert(branch.to_string(), head);
        })
        .map(|_| ())
    }

    /// Notes the tip of a ledger the merge driver produced.
    pub fn record_merge(&self, tip_hex: &str) -> Result<(), HeadError> {
        self.update(|h| {
            h.merges.retain(|m| m != tip_hex);
            h.merges.push(tip_hex.to_string());
        })
        .map(|_| ())
    }

    /// The heads file's bytes for `heads`.
    fn encode(&self, heads: &Heads) -> Result<Vec<u8>, HeadError> {
        let value = serde_json::to_value(heads)
            .map_err(|e| self.io(std::io::Error::other(e.to_string())))?;
        let file = HeadFile {
            version: 1,
            check: check_of(&value),
            heads: value,
        };
        let mut bytes =
            serde_json::to_vec(&file).map_err(|e| self.io(std::io::Error::other(e.to_string())))?;
        bytes.push(b'\n');
        Ok(bytes)
    }

    /// Writes the heads file (`bytes` from [`HeadStore::encode`]).
    fn write_unlocked(&self, bytes: &[u8]) -> Result<(), HeadError> {
        let mut f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(self.file())
            .map_err(|e| self.io(e))?;
        let old_len = f.metadata().map_err(|e| self.io(e))?.len();
        f.seek(SeekFrom::Start(0)).map_err(|e| self.io(e))?;
        f.write_all(bytes).map_err(|e| self.io(e))?;
        if old_len > bytes.len() as u64 {
            f.set_len(bytes.len() as u64).map_err(|e| self.io(e))?;
        }
        start_writeback(&f, bytes.len());
        Ok(())
    }
}

/// Heads changed under their lock and not yet written (see [`HeadStore::prepare`]).
pub(crate) struct PreparedHeads<'a> {
    store: &'a HeadStore,
    kept: std::sync::MutexGuard<'a, Kept>,
    heads: Heads,
    bytes: Vec<u8>,
}

impl PreparedHeads<'_> {
    /// Writes the heads; returns them.
    pub(crate) fn write(mut self) -> Result<Heads, HeadError> {
        let heads = std::mem::take(&mut self.heads);
        let bytes = std::mem::take(&mut self.bytes);
        self.kept.parsed = None;
        self.store.write_unlocked(&bytes)?;
        self.kept.parsed = Some((bytes, heads.clone()));
        Ok(heads)
    }
}

impl Drop for PreparedHeads<'_> {
    fn drop(&mut self) {
        if let Some(lock) = &self.kept.lock {
            let _ = lock.file.unlock();
        }
    }
}

/// Whether `heads` were written for the workspace directory whose identity is `now` (heads
/// without one, or a directory without one, are taken as its).
fn written_for(heads: &Heads, now: Option<&str>) -> bool {
    match (&heads.root_id, now) {
        (Some(then), Some(now)) => then == now,
        _ => true,
    }
}

fn check_of(heads: &serde_json::Value) -> String {
    sha256_hex(super::ledger::canonical_json(heads).as_bytes())
}

/// Starts writing the file back to disk without waiting (see the module doc).
pub(crate) fn start_writeback(f: &File, len: usize) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: a plain syscall on an open descriptor; failure only means a later write-back.
        unsafe {
            libc::sync_file_range(
                f.as_raw_fd(),
                0,
                len as libc::off64_t,
                libc::SYNC_FILE_RANGE_WRITE,
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (f, len);
    }
}

/// Reads at most `n` bytes ending at `end` (for the tail of a ledger).
pub(crate) fn read_before(file: &mut File, end: u64, n: u64) -> std::io::Result<Vec<u8>> {
    let start = end.saturating_sub(n);
    file.seek(SeekFrom::Start(start))?;
    let mut buf = Vec::with_capacity((end - start) as usize);
    Read::by_ref(file).take(end - start).read_to_end(&mut buf)?;
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(n: u64) -> BranchHead {
        BranchHead {
            records: n,
            bytes: n * 10,
            last: "ab".repeat(32),
            commit: None,
            reflog: None,
            at: "2026-01-01T00:00:00Z".into(),
        }
    }

    #[test]
    fn heads_round_trip_per_branch_and_detect_damage() {
        let tmp = tempfile::tempdir().expect("tmp");
        let ws = tmp.path().join("ws");
        std::fs::create_dir_all(&ws).expect("mkdir");
        let store = HeadStore::new(&tmp.path().join("data"), &ws);
        assert!(store.read().expect("read").is_empty());
        store.record_append("refs/heads/main", head(3)).expect("w");
        store.record_append("refs/heads/dev", head(5)).expect("w");
        store.record_append("refs/heads/main", head(4)).expect("w");
        let heads = store.read().expect("read");
        assert_eq!(heads.branches["refs/heads/main"].records, 4);
        assert_eq!(heads.branches["refs/heads/dev"].records, 5);
        for i in 0..70 {
            store.record_merge(&format!("{i:064x}")).expect("merge");
        }
        assert_eq!(store.read().expect("read").merges.len(), MERGE_TIPS);
        let text = std::fs::read_to_string(store.file()).expect("read");
        std::fs::write(store.file(), text.replace("\"records\":5", "\"records\":9")).expect("edit");
        let err = store.read().expect_err("damaged");
        assert!(err.to_string().contains("checksum"), "{err}");
    }

    #[test]
    fn heads_of_a_directory_made_again_at_the_same_path_do_not_apply() {
        let tmp = tempfile::tempdir().expect("tmp");
        let ws = tmp.path().join("ws");
        std::fs::create_dir_all(&ws).expect("mkdir");
        let store = HeadStore::new(&tmp.path().join("data"), &ws);
        store.record_append("", head(3)).expect("w");
        assert!(!store.read().expect("read").is_empty());
        std::fs::remove_dir_all(&ws).expect("rm");
        // Made again at once: the file system may well give the same inode number back.
        std::thread::sleep(std::time::Duration::from_millis(2));
        std::fs::create_dir_all(&ws).expect("mkdir again");
        if dir_identity(&ws) == store.read_all().expect("read").root_id {
            return; // a file system without birth times reused the inode: nothing to tell apart
        }
        assert!(store.read().expect("read").is_empty());
        assert!(store.recreated());
        store.record_append("", head(1)).expect("w");
        assert_eq!(store.read().expect("read").branches[""].records, 1);
        assert!(!store.recreated());
    }

    #[test]
    fn an_update_sees_what_another_process_wrote_and_locks_the_lock_file_the_path_names_now() {
        let tmp = tempfile::tempdir().expect("tmp");
        let ws = tmp.path().join("ws");
        std::fs::create_dir_all(&ws).expect("mkdir");
        let data = tmp.path().join("data");
        let mine = HeadStore::new(&data, &ws);
        // Another process: its own kept files and parsed heads.
        let other = HeadStore::new(&data, &ws);
        mine.record_append("refs/heads/main", head(1)).expect("w");
        other.record_append("refs/heads/dev", head(2)).expect("w");
        mine.record_append("refs/heads/main", head(3)).expect("w");
        let heads = other.read().expect("read");
        assert_eq!(
            heads.branches["refs/heads/dev"].records, 2,
            "kept heads were stale"
        );
        assert_eq!(heads.branches["refs/heads/main"].records, 3);
        // The lock file replaced (a restore from a backup): the lock taken is the new file's.
        let lock = mine.dir().join("lock");
        std::fs::write(mine.dir().join("lock.new"), "").expect("w");
        std::fs::rename(mine.dir().join("lock.new"), &lock).expect("mv");
        let held = File::open(&lock).expect("open");
        held.lock().expect("lock");
        let (tx, rx) = std::sync::mpsc::channel();
        let updating = mine.clone();
        let writer = std::thread::spawn(move || {
            updating.record_append("", head(4)).expect("w");
            let _ = tx.send(());
        });
        let waited = std::time::Duration::from_millis(200);
        assert!(
            rx.recv_timeout(waited).is_err(),
            "the update went ahead under the lock of a file the path no longer names"
        );
        held.unlock().expect("unlock");
        rx.recv_timeout(std::time::Duration::from_secs(10))
            .expect("the update ends once the lock is free");
        writer.join().expect("writer");
        assert_eq!(mine.read().expect("read").branches[""].records, 4);
    }

    #[test]
    fn the_pending_hash_lands_in_the_file_even_when_it_was_removed_or_replaced_between_appends() {
        let tmp = tempfile::tempdir().expect("tmp");
        let ws = tmp.path().join("ws");
        std::fs::create_dir_all(&ws).expect("mkdir");
        let store = HeadStore::new(&tmp.path().join("data"), &ws);
        let read = || store.read_all().expect("read").pending;
        store.record_append("", head(1)).expect("head");
        store.record_pending(&"a".repeat(64)).expect("pending");
        assert_eq!(read(), Some("a".repeat(64)));
        std::fs::remove_file(store.dir.join("pending")).expect("rm");
        store.record_pending(&"b".repeat(64)).expect("pending");
        assert_eq!(read(), Some("b".repeat(64)));
        // Replaced by another file (another process, a restore from backup).
        let other = tmp.path().join("other");
        std::fs::write(
            &other,
            "junk that is longer than one hash line ........................................\n",
        )
        .expect("w");
        std::fs::rename(&other, store.dir.join("pending")).expect("mv");
        store.record_pending(&"c".repeat(64)).expect("pending");
        assert_eq!(read(), Some("c".repeat(64)));
        std::fs::remove_dir_all(&store.dir).expect("rm dir");
        store.record_pending(&"d".repeat(64)).expect("pending");
        store.record_append("", head(2)).expect("head");
        assert_eq!(read(), Some("d".repeat(64)));
    }
}
