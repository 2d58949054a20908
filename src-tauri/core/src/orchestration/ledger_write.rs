//! Appending to the ledger, so that it stays true through crashes, full disks, other
//! processes and tampering.
//!
//! - An append is one `write` of the whole line, fsynced; if the write or the fsync fails
//!   (a full disk), the file is cut back to its length before the append and fsynced, so no
//!   partial line remains, and the error says so.
//! - A ledger whose chain is broken, that lost records Mandate wrote, or that holds records
//!   Mandate did not write (see `integrity.rs`) is not appended to: the append fails with
//!   [`LedgerError::Broken`] (or [`LedgerError::Missing`]) naming the line and what is wrong,
//!   unless the person accepted it ([`Ledger::accept_broken`]). Accepting appends a record of
//!   that decision (no files; `metadata["dev.mandate"].accepted_break` names the line and the
//!   reason), so the break is never buried: verify keeps reporting it, and the write path
//!   judges only what comes after it.
//! - The check is cheap on the write path: each `Ledger` keeps the prefix of the file it has
//!   verified (length, lines, hash of its last line). An append re-hashes only the last line of
//!   that prefix and the lines appended since (by other processes, whose last line must be a
//!   head they recorded). Anything else — a shorter file, a changed last line, a line nobody
//!   vouches for — means a full check ([`Ledger::health`]), which also accepts what git
//!   explains (a branch switch, a pull, a merge).
//! - After the record is on disk, the branch's head in the data directory is updated under the
//!   same lock; if that fails, the record is cut off again and the append fails.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use serde_json::{json, Value};

use super::chain::{self, Chain};
use super::git;
use super::heads::{read_before, BranchHead, HeadError, HeadStore, Heads};
use super::integrity::{self, Problem};
use super::ledger::{
    build_record, canonical_json, map_file, now_rfc3339, record_digest, LedgerError, TraceEntry,
    LEDGER_FILE, SPEC_VERSION, VENDOR_KEY,
};

/// What a full check of the ledger found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LedgerHealth {
    /// Intact as far as Mandate can tell; `notes` say what could not be checked or what a
    /// person accepted earlier.
    Ok { records: u64, notes: Vec<String> },
    /// Broken at `line` (1-based; 0 for the file as a whole).
    Broken { line: u64, reason: String },
    /// Missing or empty while Mandate wrote `records` records to it.
    Missing { records: u64, reason: String },
}

impl LedgerHealth {
    pub fn is_ok(&self) -> bool {
        matches!(self, LedgerHealth::Ok { .. })
    }

    /// What is wrong, in a sentence naming the file and the line; None when it holds.
    pub fn problem(&self) -> Option<String> {
        match self {
            LedgerHealth::Ok { .. } => None,
            LedgerHealth::Broken { line: 0, reason } => Some(format!(
                "The trace ledger {LEDGER_FILE} cannot be trusted: {reason}."
            )),
            LedgerHealth::Broken { line, reason } => Some(format!(
                "The trace ledger {LEDGER_FILE} is damaged at line {line}: {reason}."
            )),
            LedgerHealth::Missing { records, reason } => Some(format!(
                "The trace ledger {LEDGER_FILE} lost the {records} records Mandate wrote to it: {reason}."
            )),
        }
    }
}

/// The part of the file this `Ledger` has verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Verified {
    len: u64,
    lines: u64,
    /// Hash of the last line (of the genesis when empty).
    last: [u8; 32],
}

/// Faults injected by unit tests into the next append.
#[cfg(test)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The write stops after this many bytes with "no space left on device".
    WriteFailsAfter(usize),
    /// The fsync fails.
    SyncFails,
    /// The head cannot be recorded.
    HeadFails,
}

/// The append-only ledger of one workspace.
pub struct Ledger {
    root: PathBuf,
    path: PathBuf,
    heads: HeadStore,
    verified: Mutex<Option<Verified>>,
    /// The repository the workspace belongs to, found once and checked on each use
    /// ([`git::still_holds`]): a write does not look for it again.
    repo: Mutex<Option<git::Repo>>,
    #[cfg(test)]
    pub(crate) fault: Mutex<Option<Fault>>,
}

impl Ledger {
    /// The ledger of the workspace at `root`, its heads in the app's data directory
    /// ([`HeadStore::default_data_dir`]).
    pub fn new(root: &Path) -> Self {
        Self::with_data_dir(root, &HeadStore::default_data_dir())
    }

    /// The same, with the heads under the data directory `data` (`AppDirs::data`).
    pub fn with_data_dir(root: &Path, data: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            path: root.join(LEDGER_FILE),
            heads: HeadStore::new(data, root),
            verified: Mutex::new(None),
            repo: Mutex::new(None),
            #[cfg(test)]
            fault: Mutex::new(None),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn heads(&self) -> &HeadStore {
        &self.heads
    }

    /// Where the journal of governed writes to this workspace lives: beside the heads, in the
    /// data directory. An entry there is what makes recovery append a record, so it must not
    /// be where a git branch or a command could plant one.
    pub fn journal_dir(&self) -> PathBuf {
        self.heads.dir().join("journal")
    }

    /// Appends one record; returns it as written.
    pub fn append(&self, entry: &TraceEntry) -> Result<Value, LedgerError> {
        let record = build_record(entry, self.head_revision());
        self.append_record(record)
    }

    /// The repository the workspace belongs to now (found again only when the one found
    /// before no longer holds).
    pub fn repo(&self) -> Option<git::Repo> {
        let mut kept = self.repo.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(repo) = kept.as_ref().filter(|r| git::still_holds(r, &self.root)) {
            return Some(repo.clone());
        }
        *kept = git::discover(&self.root);
        kept.clone()
    }

    /// The commit HEAD points at (see [`git::head_revision`]).
    pub fn head_revision(&self) -> Option<String> {
        git::resolve_head(&self.repo()?)
    }

    /// Chains and appends a prepared record (see [`build_record`]); returns it as written.
    /// Refused with [`LedgerError::Broken`] or [`LedgerError::Missing`] when the ledger is
    /// damaged and the person has not accepted that.
    pub fn append_record(&self, record: Value) -> Result<Value, LedgerError> {
        self.prepare_append(record)?.commit()
    }

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

    /// A full check of the ledger (the chain, its heads, git): once at task start. Also
    /// makes the result the verified prefix later appends start from.
    pub fn health(&self) -> Result<LedgerHealth, LedgerError> {
        let mut verified = self.verified.lock().unwrap_or_else(|p| p.into_inner());
        let file = match File::open(&self.path) {
            Ok(f) => {
                f.lock_shared()?;
                Some(f)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e.into()),
        };
        let result = self.examine(file.as_ref());
        if let Some(f) = &file {
            let _ = f.unlock();
        }
        let (health, v) = result?;
        if health.is_ok() {
            *verified = Some(v);
        }
        Ok(health)
    }

    /// What is wrong with the ledger now (see [`Ledger::health`]), in words for the person;
    /// None when it holds. The one judgment the window's banner and a task's start share.
    pub fn problem(&self) -> Option<String> {
        match self.health() {
            Ok(health) => health.problem(),
            Err(e) => Some(format!(
                "The trace ledger {LEDGER_FILE} cannot be checked: {e}."
            )),
        }
    }

    /// The person decided to append to the ledger as it is now, broken or missing: a record
    /// of that decision is appended (naming the line and what is wrong), after which appends
    /// go ahead. A different breakage later is refused again. Returns what was accepted
    /// (`Ok`, and nothing appended, when nothing was wrong).
    pub fn accept_broken(&self) -> Result<LedgerHealth, LedgerError> {
        self.locked(|verified, file| {
            let len = file.metadata()?.len();
            let (health, v) = self.examine(Some(file))?;
            let (line, reason) = match &health {
                LedgerHealth::Ok { .. } => {
                    *verified = Some(v);
                    return Ok(health);
                }
                LedgerHealth::Broken { line, reason } => (*line, reason.clone()),
                LedgerHealth::Missing { reason, .. } => (0, reason.clone()),
            };
            let record = acceptance_record(line, &reason);
            self.write_record(verified, file, (v, len), record)?;
            Ok(health)
        })
    }

    /// Whether a record with this id is in the ledger, looking from the end (where a record
    /// written just before a crash is).
    pub fn contains_record(&self, id: &str) -> std::io::Result<bool> {
        let file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e),
        };
        let Some(map) = map_file(&file, false)? else {
            return Ok(false);
        };
        let needle = format!("\"id\":{}", Value::String(id.to_string()));
        for pos in memchr::memmem::rfind_iter(&map, needle.as_bytes()) {
            let start = memchr::memrchr(b'\n', &map[..pos]).map_or(0, |p| p + 1);
            let end = memchr::memchr(b'\n', &map[pos..]).map_or(map.len(), |p| pos + p);
            let found = serde_json::from_slice::<Value>(&map[start..end])
                .ok()
                .is_some_and(|r| r.get("id").and_then(Value::as_str) == Some(id));
            if found {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Runs `f` holding the in-process mutex and the OS lock on the ledger file.
    fn locked<T>(
        &self,
        f: impl FnOnce(&mut Option<Verified>, &mut File) -> Result<T, LedgerError>,
    ) -> Result<T, LedgerError> {
        let (mut verified, mut file) = self.lock()?;
        let result = f(&mut verified, &mut file);
        let _ = file.unlock();
        result
    }

    /// The in-process mutex and the ledger file under its OS lock (the caller unlocks it).
    fn lock(&self) -> Result<(MutexGuard<'_, Option<Verified>>, File), LedgerError> {
        let verified = self.verified.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&self.path)?;
        // Other processes (a second window, the CLI) append too.
        file.lock()?;
        Ok((verified, file))
    }

    /// The full check: health and the state of the file it judged.
    fn examine(&self, file: Option<&File>) -> Result<(LedgerHealth, Verified), LedgerError> {
        let map = match file {
            Some(f) => map_file(f, true)?,
            None => None,
        };
        let bytes: &[u8] = map.as_deref().unwrap_or(&[]);
        Ok(judge_bytes(&self.root, bytes, self.heads.read()))
    }

    /// The verified state of the file now and its length, or why nothing may be appended.
    fn verified_end(
        &self,
        verified: &mut Option<Verified>,
        file: &mut File,
    ) -> Result<(Verified, u64), LedgerError> {
        let len = file.metadata()?.len();
        if let Some(v) = *verified {
            if let Some(v) = self.extend_verified(file, v, len)? {
                return Ok((v, len));
            }
        }
        match self.examine(Some(file))? {
            (LedgerHealth::Ok { .. }, v) => Ok((v, len)),
            (LedgerHealth::Broken { line, reason }, _) => Err(LedgerError::Broken { line, reason }),
            (LedgerHealth::Missing { records, reason }, _) => {
                Err(LedgerError::Missing { records, reason })
            }
        }
    }

    /// Seals `record` onto the verified end `at`, writes it durably, records the head.
    fn write_record(
        &self,
        verified: &mut Option<Verified>,
        file: &mut File,
        at: (Verified, u64),
        record: Value,
    ) -> Result<Value, LedgerError> {
        let sealed = self.seal_line(file, at, record, None)?;
        self.write_sealed(verified, file, sealed)
    }

    /// The line `record` makes on the verified end `at`, with the head it will leave; its
    /// hash noted as pending.
    fn seal_line(
        &self,
        file: &mut File,
        at: (Verified, u64),
        record: Value,
        head: Option<git::HeadState>,
    ) -> Result<Sealed, LedgerError> {
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
        Ok(Sealed {
            record,
            line: line.into_bytes(),
            len,
            new,
            branch,
            head,
        })
    }

    /// Writes a sealed line durably at its end and records its head.
    fn write_sealed(
        &self,
        verified: &mut Option<Verified>,
        file: &mut File,
        sealed: Sealed,
    ) -> Result<Value, LedgerError> {
        let Sealed {
            record,
            line,
            len,
            new,
            branch,
            head,
        } = sealed;
        self.write_durably(file, len, &line)?;
        if let Err(e) = self.record_head(&branch, head) {
            let undone = rollback(file, len);
            return Err(LedgerError::Head {
                source: e,
                rolled_back: undone.is_ok(),
            });
        }
        *verified = Some(new);
        Ok(record)
    }

    fn record_head(&self, branch: &str, head: BranchHead) -> Result<(), HeadError> {
        #[cfg(test)]
        if let Some(Fault::HeadFails) = *self.fault.lock().unwrap_or_else(|p| p.into_inner()) {
            return Err(HeadError::Io {
                path: "the data directory".into(),
                source: std::io::Error::from_raw_os_error(libc::EROFS),
            });
        }
        self.heads.record_append(branch, head)
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

    /// The verified prefix still holds and what follows it was appended by Mandate (another
    /// process): the new verified prefix, or None when a full check is needed.
    fn extend_verified(
        &self,
        file: &mut File,
        v: Verified,
        len: u64,
    ) -> Result<Option<Verified>, LedgerError> {
        if len < v.len || !ends_with_line(file, v)? {
            return Ok(None);
        }
        if len == v.len {
            return Ok(Some(v));
        }
        let added = read_before(file, len, len - v.len)?;
        if added.last() != Some(&b'\n') {
            return Ok(None);
        }
        let mut last = v.last;
        let mut lines = v.lines;
        for line in chain::split_lines(&added) {
            let l = chain::link(line);
            if l.prev != Some(last) || !l.digest_ok || !l.merge_parents.is_empty() {
                return Ok(None);
            }
            last = l.hash;
            lines += 1;
        }
        // Another Mandate process recorded its head after its append.
        let vouched = self
            .heads
            .read()
            .map(|h| h.tips().contains(&last))
            .unwrap_or(false);
        Ok(vouched.then_some(Verified { len, lines, last }))
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

/// The record of a person's decision to append to a broken ledger.
fn acceptance_record(line: u64, reason: &str) -> Value {
    json!({
        "version": SPEC_VERSION,
        "id": uuid::Uuid::new_v4().to_string(),
        "timestamp": now_rfc3339(),
        "tool": {"name": "mandate", "version": env!("CARGO_PKG_VERSION")},
        "files": [],
        "metadata": {VENDOR_KEY: {"accepted_break": {"line": line, "reason": reason}}},
    })
}

const MALFORMED: &str = "this line is not a Mandate trace record (a torn write or a hand edit)";

/// Judges the ledger `bytes`: its health, and the state of the file judged.
fn judge_bytes(
    root: &Path,
    bytes: &[u8],
    heads: Result<Heads, HeadError>,
) -> (LedgerHealth, Verified) {
    let lines = chain::split_lines(bytes);
    let links = chain::links_of(&lines);
    let verified = Verified {
        len: bytes.len() as u64,
        lines: lines.len() as u64,
        last: links.last().map_or_else(chain::genesis, |l| l.hash),
    };
    let heads = match heads {
        Ok(h) => h,
        Err(e) => {
            let health = LedgerHealth::Broken {
                line: 0,
                reason: format!("its head cannot be checked: {e}"),
            };
            return (health, verified);
        }
    };
    let chain_check = Chain::check(&links);
    let mut problems: Vec<Problem> = Vec::new();
    for (i, l) in links.iter().enumerate() {
        let reason = if l.prev.is_none() {
            MALFORMED
        } else if !l.digest_ok {
            "this record was edited after it was written (its digest does not match)"
        } else {
            continue;
        };
        problems.push(Problem {
            line: i as u64 + 1,
            reason: reason.into(),
        });
    }
    for (i, b) in &chain_check.breaks {
        problems.push(Problem {
            line: *i as u64 + 1,
            reason: b.explain().into(),
        });
    }
    // What lies before a person's acceptance was accepted then (verify still reports it).
    let accepted_upto = integrity::honoured_acceptance(root, bytes, &links, &chain_check, &heads);
    if let Some(at) = accepted_upto {
        problems.retain(|p| p.line > at as u64 + 1);
    }
    problems.sort_by_key(|p| p.line);
    let found = integrity::Found {
        // A torn line does not explain a missing head; an edit or a broken chain does.
        line_problems: problems
            .iter()
            .filter(|p| p.reason != MALFORMED)
            .map(|p| p.line)
            .collect(),
        accepted_upto,
    };
    let judgement = integrity::judge(root, bytes, &links, &chain_check, &heads, &found);
    // Line by line first: for the same line, what is wrong with it says more.
    problems.extend(judgement.problems);
    let mut notes = judgement.notes;
    if let Some(at) = accepted_upto {
        notes.push(format!(
            "a person accepted appending to this ledger while it was broken (the record at line {})",
            at + 1
        ));
    }
    problems.sort_by_key(|p| p.line);
    let health = match problems.into_iter().next() {
        None => LedgerHealth::Ok {
            records: lines.len() as u64,
            notes,
        },
        Some(p) if bytes.is_empty() => LedgerHealth::Missing {
            records: heads
                .branches
                .get(&git::head_key(root))
                .map_or(0, |h| h.records),
            reason: p.reason,
        },
        Some(p) => LedgerHealth::Broken {
            line: p.line,
            reason: p.reason,
        },
    };
    (health, verified)
}

/// Whether the line ending at `v.len` still hashes to `v.last`.
fn ends_with_line(file: &mut File, v: Verified) -> std::io::Result<bool> {
    if v.len == 0 {
        return Ok(true);
    }
    let mut window: u64 = 4096;
    loop {
        let buf = read_before(file, v.len, window)?;
        let body = buf.strip_suffix(b"\n").unwrap_or(&buf);
        match memchr::memrchr(b'\n', body) {
            Some(p) => return Ok(chain::link_hash(&body[p + 1..]) == v.last),
            None if buf.len() as u64 >= v.len => return Ok(chain::link_hash(body) == v.last),
            None => window = window.saturating_mul(4),
        }
    }
}

/// Cuts the file back to `len` and makes that durable.
fn rollback(file: &File, len: u64) -> std::io::Result<()> {
    file.set_len(len)?;
    file.sync_data()
}

/// A record sealed onto the ledger's end, not yet written.
struct Sealed {
    record: Value,
    line: Vec<u8>,
    /// The ledger's length it goes after.
    len: u64,
    new: Verified,
    branch: String,
    head: BranchHead,
}

/// An append prepared by [`Ledger::prepare_append`]: the ledger stays locked (in this process
/// and for others) until it is committed or dropped.
pub struct PreparedAppend<'a> {
    ledger: &'a Ledger,
    verified: MutexGuard<'a, Option<Verified>>,
    file: File,
    sealed: Option<Sealed>,
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
