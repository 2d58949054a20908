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
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use serde_json::{json, Value};

use super::chain::{self, Chain};
use super::git;
use super::heads::{read_before, HeadError, HeadStore, Heads};
use super::integrity::{self, Problem};
use super::ledger::{
    build_record, map_file, now_rfc3339, LedgerError, TraceEntry, LEDGER_FILE, SPEC_VERSION,
    VENDOR_KEY,
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
    /// The ledger file, kept open between appends (see [`Ledger::lock`]).
    file: Mutex<Option<crate::fsutil::KeptFile>>,
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
            file: Mutex::new(None),
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
    /// The file stays open between appends; it is opened again when its path names another
    /// file (removed, or replaced: a checkout writes a new file).
    fn lock(&self) -> Result<(MutexGuard<'_, Option<Verified>>, File), LedgerError> {
        let verified = self.verified.lock().unwrap_or_else(|p| p.into_inner());
        let mut kept = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let open = || {
            if let Some(dir) = self.path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            OpenOptions::new()
                .create(true)
                .read(true)
                .append(true)
                .open(&self.path)
        };
        // Other processes (a second window, the CLI) append too.
        let locked = crate::fsutil::lock_kept(&mut kept, &self.path, open)?;
        // The caller's handle shares the kept file's lock (and unlocks it).
        match locked.try_clone() {
            Ok(file) => Ok((verified, file)),
            Err(e) => {
                let _ = locked.unlock();
                Err(e.into())
            }
        }
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

#[path = "ledger_append.rs"]
mod append;
