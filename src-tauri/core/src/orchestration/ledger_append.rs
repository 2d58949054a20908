//! Writing one record at the ledger's end: sealed onto the verified end under the ledger's
//! locks (`Ledger::prepare_append`, while a governed write's bytes go to disk), then written
//! durably with its head recorded, or cut back off when either fails.

use std::fs::File;
use std::io::Write;
use std::sync::MutexGuard;

use serde_json::Value;

use super::super::chain;
use super::super::git;
use super::super::heads::{read_before, BranchHead, HeadError, PreparedHeads};
use super::super::ledger::{canonical_json, now_rfc3339, record_digest, LedgerError, VENDOR_KEY};
#[cfg(test)]
use super::Fault;
use super::{Ledger, Verified};

impl Ledger {
    /// The first half of [`Ledger::append_record`]: takes the ledger's locks, checks its end
    /// and seals `record` onto it, writing nothing to the ledger yet. The write path does this
    /// while the file's bytes go to disk; [`PreparedAppend::commit`] writes the record. Dropped
    /// without a commit, nothing is appended.
    pub fn prepare_append(&self, record: Value) -> Result<PreparedAppend<'_>, LedgerError> {
        self.prepare_append_at(record, None)
    }

    /// The state of git's HEAD now (the branch, its commit, its reflog), read once.
    pub fn head_state(&self) -> git::HeadState {
        git::head_state(self.repo().as_ref())
    }

    /// [`Ledger::prepare_append`] for a record whose revision was read as `head` (from
    /// [`Ledger::head_state`]): the record and the branch head it leaves name the same commit.
    pub fn prepare_append_at(
        &self,
        record: Value,
        head: Option<git::HeadState>,
    ) -> Result<PreparedAppend<'_>, LedgerError> {
        let (verified, file) = self.lock()?;
        let mut prepared = PreparedAppend {
            ledger: self,
            verified,
            file,
            sealed: None,
        };
        let PreparedAppend { verified, file, .. } = &mut prepared;
        let at = self.verified_end(verified, file)?;
        prepared.sealed = Some(self.seal_line(&mut prepared.file, at, record, head)?);
        Ok(prepared)
    }

    /// Seals `record` onto the verified end `at`, writes it durably, records the head.
    pub(super) fn write_record(
        &self,
        verified: &mut Option<Verified>,
        file: &mut File,
        at: (Verified, u64),
        record: Value,
    ) -> Result<Value, LedgerError> {
        let sealed = self.seal_line(file, at, record, None)?;
        self.write_sealed(verified, file, sealed)
    }

    /// The line `record` makes on the verified end `at`, with the head it will leave (the
    /// heads changed under their lock, written once the line is on disk); its hash noted as
    /// pending.
    fn seal_line(
        &self,
        file: &mut File,
        at: (Verified, u64),
        record: Value,
        head: Option<git::HeadState>,
    ) -> Result<Sealed<'_>, LedgerError> {
        let (v, len) = at;
        let torn = len > 0 && read_before(file, len, 1)?.first() != Some(&b'\n');
        let record = seal(record, v.last)?;
        let mut line = String::new();
        if torn {
            // A torn last line (power loss) stays a line of its own; verify reports it.
            line.push('\n');
        }
        let body = canonical_json(&record);
        line.push_str(&body);
        line.push('\n');
        let hash = chain::link_hash(body.as_bytes());
        // HEAD as it is now, read once: the branch, its commit and its reflog belong together.
        let git::HeadState {
            key: branch,
            commit,
            reflog,
        } = head.unwrap_or_else(|| self.head_state());
        // Killed after the write and before the head: the pending hash still vouches for it.
        self.heads
            .record_pending(&hex::encode(hash))
            .map_err(|source| LedgerError::Head {
                source,
                rolled_back: true,
            })?;
        let new = Verified {
            len: len + line.len() as u64,
            lines: v.lines + 1,
            last: hash,
        };
        let head = BranchHead {
            records: new.lines,
            bytes: new.len,
            last: hex::encode(new.last),
            commit,
            reflog,
            at: now_rfc3339(),
        };
        // Made now, while the disk works on what comes before the line.
        let heads = self
            .heads
            .prepare(|h| {
                h.branches.insert(branch, head);
            })
            .map_err(|source| LedgerError::Head {
                source,
                rolled_back: true,
            })?;
        Ok(Sealed {
            record,
            line: line.into_bytes(),
            len,
            new,
            heads,
        })
    }

    /// Writes a sealed line durably at its end and records its head.
    fn write_sealed(
        &self,
        verified: &mut Option<Verified>,
        file: &mut File,
        sealed: Sealed<'_>,
    ) -> Result<Value, LedgerError> {
        let Sealed {
            record,
            line,
            len,
            new,
            heads,
        } = sealed;
        self.write_durably(file, len, &line)?;
        if let Err(e) = self.record_head(heads) {
            let undone = rollback(file, len);
            return Err(LedgerError::Head {
                source: e,
                rolled_back: undone.is_ok(),
            });
        }
        *verified = Some(new);
        Ok(record)
    }

    fn record_head(&self, heads: PreparedHeads<'_>) -> Result<(), HeadError> {
        #[cfg(test)]
        if let Some(Fault::HeadFails) = *self.fault.lock().unwrap_or_else(|p| p.into_inner()) {
            return Err(HeadError::Io {
                path: "the data directory".into(),
                source: std::io::Error::from_raw_os_error(libc::EROFS),
            });
        }
        heads.write().map(|_| ())
    }

    /// Writes and fsyncs `line` at the end (`len`); on failure cuts the file back to `len`.
    fn write_durably(&self, file: &mut File, len: u64, line: &[u8]) -> Result<(), LedgerError> {
        let written = self.write_line(file, line).and_then(|()| self.sync(file));
        if let Err(source) = written {
            let undone = rollback(file, len);
            return Err(LedgerError::AppendFailed {
                source,
                rolled_back: undone.is_ok(),
            });
        }
        Ok(())
    }

    fn write_line(&self, file: &mut File, line: &[u8]) -> std::io::Result<()> {
        #[cfg(test)]
        if let Some(Fault::WriteFailsAfter(n)) =
            *self.fault.lock().unwrap_or_else(|p| p.into_inner())
        {
            file.write_all(&line[..n.min(line.len())])?;
            return Err(std::io::Error::from_raw_os_error(libc::ENOSPC));
        }
        file.write_all(line)
    }

    fn sync(&self, file: &File) -> std::io::Result<()> {
        #[cfg(test)]
        if let Some(Fault::SyncFails) = *self.fault.lock().unwrap_or_else(|p| p.into_inner()) {
            return Err(std::io::Error::from_raw_os_error(libc::EIO));
        }
        file.sync_data()
    }
}

/// Adds `prev` and the digest.
fn seal(mut record: Value, prev: [u8; 32]) -> Result<Value, LedgerError> {
    let vendor = record
        .pointer_mut(&format!("/metadata/{VENDOR_KEY}"))
        .and_then(Value::as_object_mut)
        .ok_or_else(|| LedgerError::Serialize("record has no dev.mandate metadata".into()))?;
    vendor.insert("prev".into(), Value::String(hex::encode(prev)));
    vendor.remove("digest");
    let digest = record_digest(&record);
    if let Some(vendor) = record
        .pointer_mut(&format!("/metadata/{VENDOR_KEY}"))
        .and_then(Value::as_object_mut)
    {
        vendor.insert("digest".into(), Value::String(digest));
    }
    Ok(record)
}

/// Cuts the file back to `len` and makes that durable.
pub(super) fn rollback(file: &File, len: u64) -> std::io::Result<()> {
    file.set_len(len)?;
    file.sync_data()
}

/// A record sealed onto the ledger's end, not yet written.
struct Sealed<'a> {
    record: Value,
    line: Vec<u8>,
    /// The ledger's length it goes after.
    len: u64,
    new: Verified,
    /// The heads with the branch's head this line leaves.
    heads: PreparedHeads<'a>,
}

/// An append prepared by [`Ledger::prepare_append`]: the ledger stays locked (in this process
/// and for others) until it is committed or dropped.
pub struct PreparedAppend<'a> {
    ledger: &'a Ledger,
    verified: MutexGuard<'a, Option<Verified>>,
    file: File,
    sealed: Option<Sealed<'a>>,
}

impl PreparedAppend<'_> {
    /// Writes the record durably and records the head; returns the record as written.
    pub fn commit(mut self) -> Result<Value, LedgerError> {
        let sealed = self
            .sealed
            .take()
            .ok_or_else(|| LedgerError::Io(std::io::Error::other("nothing prepared")))?;
        let PreparedAppend {
            ledger,
            verified,
            file,
            ..
        } = &mut self;
        ledger.write_sealed(verified, file, sealed)
    }
}

impl Drop for PreparedAppend<'_> {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}
