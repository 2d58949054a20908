//! Where journal entries are kept: a few slot files (`slot-0`, `slot-1`, …) in the journal
//! directory, each holding at most one entry, written in place.
//!
//! A new file per entry cost a governed write a file creation, a synchronous metadata write and,
//! at its removal, a discard of its blocks; a slot costs one write of the entry's bytes and one
//! fdatasync of data only (the file exists and rarely grows). A process holds each slot it uses
//! under an exclusive `flock` for as long as it keeps the slot, so two processes never share
//! one, and recovery leaves alone the slots a live process holds.
//!
//! An entry is a header line (`mandate-journal-entry 1 <length> <sha256>`) and the entry's
//! JSON: a write torn by a power cut fails its checksum and counts as no entry, which is right,
//! since the write it announced starts only after the entry is on disk. Freeing a slot writes a
//! `free` mark over the header without waiting for the disk: if the mark is lost in a crash,
//! recovery finds the entry's record in the ledger and has nothing to do.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

const MAGIC: &str = "mandate-journal-entry 1 ";
const FREE: &[u8] = b"mandate-journal-free\n";
/// A process never needs more: one slot per write in flight.
const MAX_SLOTS: usize = 256;

/// One slot, held (under its `flock`) by this process.
pub(crate) struct Slot {
    file: File,
    path: PathBuf,
}

impl Slot {
    /// Makes `entry` the slot's content, durably.
    #[cfg(test)]
    pub(crate) fn persist(&self, entry: &[u8]) -> io::Result<()> {
        self.write(entry).and_then(|()| self.sync())
    }

    /// Makes `entry` the slot's content and starts writing it to disk; durable only after
    /// [`Slot::sync`].
    pub(crate) fn write(&self, entry: &[u8]) -> io::Result<()> {
        let mut bytes = header(entry).into_bytes();
        bytes.extend_from_slice(entry);
        self.file
            .write_all_at(&bytes, 0)
            .map(|()| crate::orchestration::heads::start_writeback(&self.file, bytes.len()))
            .map_err(|e| self.error(e))
    }

    /// Waits until what [`Slot::write`] wrote is on disk.
    pub(crate) fn sync(&self) -> io::Result<()> {
        self.file.sync_data().map_err(|e| self.error(e))
    }

    fn error(&self, e: io::Error) -> io::Error {
        io::Error::new(
            e.kind(),
            format!("journal entry in {}: {e}", self.path.display()),
        )
    }

    /// Marks the slot free (not waited for: see the module doc).
    pub(crate) fn clear(&self) -> io::Result<()> {
        mark_free(&self.file)
    }

    #[cfg(test)]
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

/// Marks the slot file `file` free.
pub(crate) fn mark_free(file: &File) -> io::Result<()> {
    file.write_all_at(FREE, 0)
}

fn header(entry: &[u8]) -> String {
    format!(
        "{MAGIC}{} {}\n",
        entry.len(),
        crate::fsutil::sha256_hex(entry)
    )
}

/// What a slot file holds.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Content {
    Free,
    /// An entry whose bytes do not match their header (a power cut during the write).
    Torn,
    Entry(Vec<u8>),
}

/// Reads what the slot file `file` holds.
pub(crate) fn read(file: &File) -> io::Result<Content> {
    let len = file.metadata()?.len();
    let mut bytes = vec![0; usize::try_from(len).unwrap_or(0)];
    file.read_exact_at(&mut bytes, 0)?;
    if bytes.is_empty() || bytes.starts_with(FREE) {
        return Ok(Content::Free);
    }
    let Some(rest) = bytes.strip_prefix(MAGIC.as_bytes()) else {
        return Ok(Content::Torn);
    };
    let Some(end) = rest.iter().position(|&b| b == b'\n') else {
        return Ok(Content::Torn);
    };
    let head = String::from_utf8_lossy(&rest[..end]).into_owned();
    let body = &rest[end + 1..];
    let mut words = head.split(' ');
    let (Some(size), Some(sum)) = (words.next(), words.next()) else {
        return Ok(Content::Torn);
    };
    let Some(entry) = size.parse::<usize>().ok().and_then(|n| body.get(..n)) else {
        return Ok(Content::Torn);
    };
    if crate::fsutil::sha256_hex(entry) != sum {
        return Ok(Content::Torn);
    }
    Ok(Content::Entry(entry.to_vec()))
}

/// Opens the slot file at `path` and takes its lock; None when another holder has it.
pub(crate) fn open_locked(path: &Path) -> io::Result<Option<File>> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(fs::TryLockError::WouldBlock) => Ok(None),
        Err(fs::TryLockError::Error(e)) => Err(e),
    }
}

/// Whether `name` is a slot file's name.
pub(crate) fn is_slot(name: &str) -> bool {
    name.strip_prefix("slot-")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The slots this process holds and is not using, per journal directory.
#[derive(Default)]
pub(crate) struct Slots {
    free: Mutex<HashMap<PathBuf, Vec<Slot>>>,
}

impl Slots {
    /// A slot of the journal in `dir`: one this process holds, or the first slot file nobody
    /// holds and that is free (a dead writer's entry is left for recovery).
    pub(crate) fn take(&self, dir: &Path) -> io::Result<Slot> {
        let kept = self
            .free
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(dir)
            .and_then(Vec::pop);
        if let Some(slot) = kept {
            return Ok(slot);
        }
        fs::create_dir_all(dir)?;
        for i in 0..MAX_SLOTS {
            let path = dir.join(format!("slot-{i}"));
            let existed = path.exists();
            let Some(file) = open_locked(&path)? else {
                continue;
            };
            if read(&file)? != Content::Free && existed {
                continue;
            }
            if !existed {
                // Once per slot file: its directory entry must outlive a crash for recovery to
                // find what is written in it.
                file.sync_all()?;
                crate::fsutil::sync_dir(dir)?;
            }
            return Ok(Slot { file, path });
        }
        Err(io::Error::other(format!(
            "all {MAX_SLOTS} journal slots in {} are in use",
            dir.display()
        )))
    }

    /// Gives a slot back for the next write (its lock stays held).
    pub(crate) fn give_back(&self, dir: &Path, slot: Slot) {
        self.free
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(dir.to_path_buf())
            .or_default()
            .push(slot);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_reads_back_and_a_torn_or_freed_one_does_not() {
        let dir = tempfile::tempdir().expect("tmp");
        let slots = Slots::default();
        let slot = slots.take(dir.path()).expect("slot");
        slot.persist(b"{\"a\":1}").expect("persist");
        assert_eq!(
            read(&slot.file).expect("read"),
            Content::Entry(b"{\"a\":1}".to_vec())
        );
        // A longer entry, then a shorter one over it: the header says where it ends.
        slot.persist(&[b'x'; 500]).expect("persist");
        slot.persist(b"short").expect("persist");
        assert_eq!(
            read(&slot.file).expect("read"),
            Content::Entry(b"short".to_vec())
        );
        // One byte of the entry changed (a torn write): no entry.
        slot.file
            .write_all_at(b"S", (header(b"short").len()) as u64)
            .expect("w");
        assert_eq!(read(&slot.file).expect("read"), Content::Torn);
        slot.clear().expect("clear");
        assert_eq!(read(&slot.file).expect("read"), Content::Free);
    }

    #[test]
    fn a_held_slot_or_one_with_an_entry_is_not_taken_again() {
        let dir = tempfile::tempdir().expect("tmp");
        let slots = Slots::default();
        let first = slots.take(dir.path()).expect("slot");
        let second = slots.take(dir.path()).expect("slot");
        assert_ne!(first.path(), second.path(), "slot-0 is held");
        // A dead writer's entry in slot-1: released, but not free, so not taken.
        second.persist(b"{}").expect("persist");
        drop(second);
        let third = Slots::default().take(dir.path()).expect("slot");
        assert_eq!(third.path(), dir.path().join("slot-2"));
        // A slot given back is used again, without another file.
        slots.give_back(dir.path(), first);
        assert_eq!(
            slots.take(dir.path()).expect("slot").path(),
            dir.path().join("slot-0")
        );
        assert!(is_slot("slot-12") && !is_slot("slot-") && !is_slot("slot-1.json"));
    }
}
