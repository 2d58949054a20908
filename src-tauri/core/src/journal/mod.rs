//! Governed writes as one atomic step across processes, and the ledger and the files kept in
//! agreement through crashes and full disks.
//!
//! A write, start to end: the diff and classification of a large change run on another
//! thread, started when the change was planned ([`Journal::foresee`]) or now (see `analysis`);
//! take the path's lock (in-process, then across processes); check that the file still holds
//! what the change was planned on; write the new bytes (an unnamed file beside the target: see
//! `staged`) and sync them, on another thread; meanwhile build the ledger
//! record from the analysis, write a journal entry (in a slot file of
//! [`Ledger::journal_dir`], in the data directory, written in place: see `slots`; the path,
//! both hashes, the temporary file, the prepared record) and start it towards the disk; while
//! the disk works, take the ledger's lock and seal the record onto its end
//! ([`Ledger::prepare_append`]) and keep the before- and after-images in the checkpoint
//! store; wait until the entry and the bytes are on disk, name the bytes' file and rename it
//! over the target; append the sealed record; mark the slot free. If the ledger
//! refuses the record (a full disk, a broken chain), the file is left or put back as it was,
//! so the bytes and the ledger always agree.
//!
//! Any process that opens the workspace first finishes what a dead writer left
//! ([`recover`]): a journal entry whose record is in the ledger is done; one whose file holds
//! the new bytes gets its record (the change was approved and is on disk); one whose file still
//! holds the old bytes is dropped with its temporary file. Every outcome is "old bytes, no
//! record" or "new bytes, a record".

mod analysis;
mod lock;
mod recover;
mod slots;
mod staged;

use std::fs;
use std::io::{self, Read as _};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

pub use lock::{lock_path, try_lock_path, FileLock, PathLocks, LOCK_DIR};
pub use recover::{recover, Recovered};

use crate::checkpoint::CheckpointStore;
use crate::fsutil::sha256_hex;
use crate::hooks::Denial;
use crate::mutation::Classified;
use crate::orchestration::ledger::{
    build_record_with_id, new_record_id, FileChange, Ledger, TraceEntry,
};
use crate::workspace::ResolvedPath;
use analysis::{Analysis, Analyzing, Foreseen};
use staged::Staged;

/// Where the journal once lay, in the workspace. Entries found there are not acted on: anyone
/// who can write the workspace (a git branch, a command) could have planted them.
pub const WORKSPACE_JOURNAL_DIR: &str = crate::orchestration_file!(".journal");

/// One interrupted-or-not governed write, as kept on disk until its record is in the ledger.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Entry<R = Value> {
    pub format: u32,
    /// Workspace-relative path.
    pub path: String,
    /// SHA-256 of the file before (None: it did not exist).
    pub before: Option<String>,
    /// SHA-256 of the file after (None: the write removes it).
    pub after: Option<String>,
    /// The temporary file beside the target (its name only).
    pub temp: String,
    /// The record, ready for the ledger but for `prev` and `digest` (borrowed when written).
    pub record: R,
}

/// A write the hooks and the person allowed.
pub struct FileWrite {
    pub path: ResolvedPath,
    /// The bytes the change was planned on (None: a new file). If the file holds anything else
    /// when the lock is taken, nothing is written.
    pub base: Option<Vec<u8>>,
    /// The new bytes; None removes the file.
    pub new: Option<Vec<u8>>,
    /// Permission bits for a file this write creates (a replaced file keeps its own).
    pub mode: Option<u32>,
    /// Whether the record claims the changed lines for this change (blame shows it as their
    /// origin). An undo claims none: the lines it restores keep their earlier origin.
    pub claim_lines: bool,
    /// Who, why and under which intent; the file's ranges and hashes are added here.
    pub entry: TraceEntry,
}

impl FileWrite {
    /// A write of `new` over `base` that claims the lines it changes.
    pub fn new(path: ResolvedPath, base: Option<Vec<u8>>, new: Vec<u8>, entry: TraceEntry) -> Self {
        Self {
            path,
            base,
            new: Some(new),
            mode: None,
            claim_lines: true,
            entry,
        }
    }
}

/// What a completed write recorded.
#[derive(Debug, Clone)]
pub struct Written {
    pub record: Value,
    /// Changed line ranges of the new content (1-based, inclusive).
    pub ranges: Vec<(u32, u32)>,
    pub computed: Classified,
    /// None when the write removed the file.
    pub new_hash: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("{path} changed on disk while this change waited for approval. Read it again and redo the change on its current content.")]
    Moved { path: String },
    #[error("{}", .0.message)]
    Refused(Denial),
    #[error("could not write {path}: {source}; nothing was changed")]
    Io { path: String, source: io::Error },
    #[error("the trace ledger could not record the change to {path} ({message}); {}", if *.rolled_back { "the file was put back as it was, so nothing was lost" } else { "putting the file back failed too: check it" })]
    Ledger {
        path: String,
        message: String,
        rolled_back: bool,
    },
}

/// The governed writes of one workspace.
pub struct Journal {
    root: PathBuf,
    locks: PathLocks,
    slots: Arc<slots::Slots>,
    pub checkpoints: Arc<CheckpointStore>,
    foreseen: Arc<Foreseen>,
}

impl Journal {
    pub fn new(root: &Path, checkpoints: Arc<CheckpointStore>) -> Self {
        Self {
            root: root.to_path_buf(),
            locks: PathLocks::default(),
            slots: Arc::default(),
            checkpoints,
            foreseen: Arc::default(),
        }
    }

    /// Starts the analysis of a planned write of `new` over `base` at `rel` now, so that the
    /// write (if allowed, and if its bytes stay these) finds it done.
    pub fn foresee(&self, rel: &str, base: Option<&[u8]>, new: &str) {
        self.foreseen.start(rel, base, new);
    }

    /// Writes `w` as one step (see the module doc). `check` is the caller's last word on the
    /// bytes about to be replaced (the task's stale rule), given their hash.
    pub async fn write(
        &self,
        ledger: Arc<Ledger>,
        w: FileWrite,
        check: impl FnOnce(Option<&str>) -> Option<Denial> + Send + 'static,
    ) -> Result<Written, WriteError> {
        let in_process = self.locks.lock_for(&w.path.rel);
        let _guard = in_process.lock().await;
        let root = self.root.clone();
        let checkpoints = self.checkpoints.clone();
        let (slots, foreseen) = (self.slots.clone(), self.foreseen.clone());
        let path = w.path.rel.clone();
        crate::fsutil::blocking(move || {
            let analysis = Analyzing::start(&w, &foreseen);
            write_locked(&root, &ledger, &checkpoints, &slots, w, analysis, check)
        })
        .await
        .unwrap_or_else(|e| {
            Err(WriteError::Io {
                path,
                source: io::Error::other(e.to_string()),
            })
        })
    }
}

fn io_error(path: &str) -> impl Fn(io::Error) -> WriteError + '_ {
    move |source| WriteError::Io {
        path: path.to_string(),
        source,
    }
}

fn write_locked(
    root: &Path,
    ledger: &Ledger,
    checkpoints: &Arc<CheckpointStore>,
    slots: &slots::Slots,
    w: FileWrite,
    analysis: Analyzing,
    check: impl FnOnce(Option<&str>) -> Option<Denial>,
) -> Result<Written, WriteError> {
    // `analysis` (the diff and the classification) depends only on the bytes: worked out on
    // another thread (from when the write was planned, or from now) while the lock is taken
    // and the bytes staged, used once the file proves to hold `base`.
    let rel = w.path.rel.clone();
    let io = io_error(&rel);
    let _lock = lock_path(root, &rel).map_err(&io)?;
    let Current {
        bytes: current,
        mode: current_mode,
        file: replaced,
    } = Current::read(&w.path.abs).map_err(&io)?;
    if current != w.base {
        return Err(WriteError::Moved { path: rel.clone() });
    }
    let record_id = new_record_id();
    let file_name = w
        .path
        .abs
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    let temp = format!(".{file_name}.mandate-{record_id}.tmp");
    // The new bytes are written and synced on another thread while the record and the journal
    // entry are made: the rename needs both on disk. (Dropped, what was written goes.)
    let staged = Staged::start(&w, &temp, current_mode);
    let current_hash = current.as_deref().map(sha256_hex);
    if let Some(denial) = check(current_hash.as_deref()) {
        return Err(WriteError::Refused(denial));
    }
    let new_hash = w.new.as_deref().map(sha256_hex);
    let head = ledger.head_state();
    let rev = head.commit.clone();
    let analysis = analysis.finish(&w);
    let images = Images {
        before: current_hash.as_deref(),
        after: new_hash.as_deref(),
        before_mode: current_mode,
        after_mode: w.new.as_ref().and(w.mode.or(current_mode)),
    };
    let (record, ranges, computed) = prepare_record(&w, &images, rev, record_id, analysis);
    let entry = Entry {
        format: 1,
        path: rel.clone(),
        before: current_hash.clone(),
        after: new_hash.clone(),
        temp,
        record: &record,
    };
    let finish_staged =
        |staged: Option<staged::Syncing>| staged.map(staged::Syncing::finish).transpose();
    let dir = ledger.journal_dir();
    let slot = match slots.take(&dir) {
        Ok(slot) => slot,
        Err(e) => return Err(io(e)),
    };
    let done = |slot: slots::Slot| {
        // A slot that cannot be marked free is not used again (recovery will find its
        // entry's record in the ledger, or its file unchanged).
        if slot.clear().is_ok() {
            slots.give_back(&dir, slot);
        }
    };
    let bytes = serde_json::to_vec(&entry).map_err(|e| io(io::Error::other(e)))?;
    // The entry is written and its write-back started, then the ledger's record is sealed and
    // the images for undo are stored while the disk works, then the entry and the new bytes
    // are waited for.
    let slot_written = slot.write(&bytes);
    let prepared = ledger.prepare_append_at(record, Some(head));
    // The images for undo: appended to the store's pack, a copy into the page cache, cheaper
    // here than handing them to another thread.
    let undo_images = [
        current_hash.as_deref().zip(current.as_deref()),
        new_hash.as_deref().zip(w.new.as_deref()),
    ];
    store_images(checkpoints, &rel, undo_images);
    let persisted = slot_written.and_then(|()| slot.sync());
    let staged = finish_staged(staged);
    let prepared = match prepared {
        Ok(prepared) => prepared,
        Err(e) => {
            if let Ok(Some(temp)) = &staged {
                let _ = fs::remove_file(temp);
            }
            done(slot);
            // Nothing was changed: the file is as it was.
            return Err(WriteError::Ledger {
                path: rel.clone(),
                message: e.to_string(),
                rolled_back: true,
            });
        }
    };
    let applied = match (persisted, staged) {
        (Ok(()), Ok(temp)) => commit_bytes(&w, temp),
        (Err(e), staged) => {
            if let Ok(Some(temp)) = staged {
                let _ = fs::remove_file(temp);
            }
            Err(e)
        }
        (Ok(()), Err(e)) => Err(e),
    };
    if let Err(e) = applied {
        drop(prepared);
        done(slot);
        return Err(io(e));
    }
    if let Some(replaced) = replaced {
        // The replaced file is freed when its last descriptor closes (a discard on some
        // disks): closed on another thread, that does not hold up the write.
        crate::fsutil::in_background(move || drop(replaced));
    }
    let record = match prepared.commit() {
        Ok(sealed) => sealed,
        Err(e) => {
            let rolled_back = put_back(&w.path.abs, current.as_deref(), current_mode).is_ok();
            done(slot);
            return Err(WriteError::Ledger {
                path: rel.clone(),
                message: e.to_string(),
                rolled_back,
            });
        }
    };
    done(slot);
    Ok(Written {
        record,
        ranges,
        computed,
        new_hash,
    })
}

/// What the file holds when the write takes its lock.
struct Current {
    /// None: it does not exist.
    bytes: Option<Vec<u8>>,
    mode: Option<u32>,
    /// Kept open until the new bytes replaced it (see `write_locked`).
    file: Option<fs::File>,
}

impl Current {
    fn read(path: &Path) -> io::Result<Self> {
        let file = match fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Ok(Current {
                    bytes: None,
                    mode: None,
                    file: None,
                })
            }
            Err(e) => return Err(e),
        };
        let meta = file.metadata()?;
        let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
        (&file).read_to_end(&mut bytes)?;
        Ok(Current {
            bytes: Some(bytes),
            mode: Some(meta.permissions().mode()),
            file: Some(file),
        })
    }
}

/// Stores the file's bytes before and after as checkpoint objects. Undo reads these; a failure
/// costs only the ability to undo this change (said in the log).
fn store_images(checkpoints: &CheckpointStore, rel: &str, images: [Option<(&str, &[u8])>; 2]) {
    let stored = images
        .into_iter()
        .flatten()
        .try_for_each(|(hash, bytes)| checkpoints.put_hashed(hash, bytes));
    if let Err(e) = stored {
        tracing::warn!(path = %rel, error = %e, "checkpoint images not stored; this change cannot be undone");
    }
}

/// Puts the staged bytes in place (renamed over the target), or removes the target.
fn commit_bytes(w: &FileWrite, temp: Option<PathBuf>) -> io::Result<()> {
    let Some(temp) = temp else {
        return match fs::remove_file(&w.path.abs) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        };
    };
    let result = fs::rename(&temp, &w.path.abs);
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

/// Restores what a file held (or its absence) when the ledger refused the record.
fn put_back(path: &Path, old: Option<&[u8]>, mode: Option<u32>) -> io::Result<()> {
    match old {
        Some(old) => {
            crate::fsutil::write_atomic(path, old)?;
            match mode {
                Some(mode) => fs::set_permissions(path, fs::Permissions::from_mode(mode)),
                None => Ok(()),
            }
        }
        None => match fs::remove_file(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        },
    }
}

/// Hashes and modes of a file before and after a write, as the record keeps them.
pub(crate) struct Images<'a> {
    pub before: Option<&'a str>,
    pub after: Option<&'a str>,
    pub before_mode: Option<u32>,
    pub after_mode: Option<u32>,
}

/// Where earlier versions kept an entry (recovery still reads these; tests leave them).
#[cfg(test)]
pub(crate) fn entry_file(ledger: &Ledger, record_id: &str) -> PathBuf {
    ledger.journal_dir().join(format!("{record_id}.json"))
}

/// An entry in a file of its own, as earlier versions wrote them.
#[cfg(test)]
fn persist_entry(path: &Path, entry: &Entry) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    use std::io::Write as _;
    let bytes = serde_json::to_vec(entry).map_err(io::Error::other)?;
    let mut file = fs::File::create(path)?;
    file.write_all(&bytes)?;
    file.sync_data()
}

/// The ledger record of a write, from its analysis, before anything is written.
fn prepare_record(
    w: &FileWrite,
    images: &Images<'_>,
    revision: Option<String>,
    id: String,
    analysis: Analysis,
) -> (Value, Vec<(u32, u32)>, Classified) {
    let Analysis {
        computed,
        ranges: changed,
        hashed: ranges,
        unified,
    } = analysis;
    let mut entry = w.entry.clone();
    if entry.mutation_computed.is_none() {
        entry.mutation_computed = Some(computed.class.clone());
        entry
            .extra
            .insert("mutation_reason".into(), json!(computed.reason));
    }
    entry.extra.insert(
        "diffs".into(),
        json!({ w.path.rel.clone(): cap_diff(unified) }),
    );
    let mut image = json!({
        "before": images.before.map(|h| format!("sha256:{h}")),
        "after": images.after.map(|h| format!("sha256:{h}")),
    });
    for (key, mode) in [
        ("before_mode", images.before_mode),
        ("after_mode", images.after_mode),
    ] {
        if let Some(mode) = mode {
            image[key] = json!(mode & 0o7777);
        }
    }
    entry
        .extra
        .insert("images".into(), json!({ w.path.rel.clone(): image }));
    entry.files = vec![FileChange {
        path: w.path.rel.clone(),
        ranges,
    }];
    let record = build_record_with_id(&entry, revision, id);
    (record, changed, computed)
}

/// Diffs bigger than this are not kept in the ledger (the record says so).
fn cap_diff(diff: String) -> String {
    const MAX: usize = 256 * 1024;
    if diff.len() <= MAX {
        return diff;
    }
    let kept = crate::text::truncate_bytes(&diff, MAX);
    format!("{kept}\n\\ diff truncated at {MAX} bytes\n")
}

#[cfg(test)]
#[path = "journal_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "staged_tests.rs"]
mod staged_tests;
