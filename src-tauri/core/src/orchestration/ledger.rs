//! `.orchestration/agent_trace.jsonl`: one Agent Trace 0.1 record per accepted mutation.
//!
//! Records are serialized canonically (sorted keys, no spaces) so they can be re-hashed. Each
//! carries, under `metadata["dev.mandate"]`, `prev` (SHA-256 of the previous line, a hash chain)
//! and `digest` (SHA-256 of the record itself without `digest`), so an edit to any record,
//! the last included, is detected. Appending (`Ledger`, in `ledger_write.rs`) is serialized by a
//! mutex and an OS file lock, written with one `write` of the whole line and fsynced.

use std::fs::File;
use std::path::Path;

use serde_json::{Map, Value};

use crate::fsutil::sha256_hex;
use crate::protocol::{Approver, Contributor, MutationClass};

pub use super::ledger_write::{Ledger, LedgerHealth};

pub const LEDGER_FILE: &str = crate::orchestration_file!("agent_trace.jsonl");
pub const SPEC_VERSION: &str = "0.1";
pub const VENDOR_KEY: &str = "dev.mandate";
/// `prev` of the first record.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error("could not append to {LEDGER_FILE}: {0}")]
    Io(#[from] std::io::Error),
    #[error("could not serialize a trace record: {0}")]
    Serialize(String),
    /// The ledger is damaged: nothing is appended to it unless the person accepts that.
    #[error("{LEDGER_FILE} is broken at {}: {reason}", line_name(*.line))]
    Broken { line: u64, reason: String },
    /// The ledger is missing or empty while Mandate knows it wrote records to it.
    #[error("{reason}")]
    Missing { records: u64, reason: String },
    /// The write or its fsync failed (a full disk); the file was cut back to where it was.
    #[error("could not append to {LEDGER_FILE} ({source}); {}", if *rolled_back { "nothing partial remains: the ledger ends at its last complete record" } else { "cutting the partial line off failed too: verify will report it" })]
    AppendFailed {
        source: std::io::Error,
        rolled_back: bool,
    },
    /// The record was written but its head could not be kept; the record was removed again.
    #[error("{source}; {}", if *rolled_back { "the record was removed again, nothing partial remains" } else { "removing the record again failed: verify will report it" })]
    Head {
        source: super::heads::HeadError,
        rolled_back: bool,
    },
}

fn line_name(line: u64) -> String {
    if line == 0 {
        "the file as a whole".into()
    } else {
        format!("line {line}")
    }
}

/// A changed range of the new content with the hash of its LF-normalized text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HashedRange {
    pub start_line: u32,
    pub end_line: u32,
    pub content_hash: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub path: String,
    pub ranges: Vec<HashedRange>,
}

/// How a mutation was approved, as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalRecord {
    pub by: Approver,
    pub at: String,
    pub accepted_hunks: Vec<u32>,
    pub rejected_hunks: Vec<u32>,
    pub edited: bool,
    /// The names of the person's PreToolUse hooks that ran on the call (recorded as
    /// `user_hooks` when there were any).
    pub user_hooks: Vec<String>,
}

/// Everything a record says about one accepted mutation.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceEntry {
    pub task_id: String,
    pub intent_id: String,
    pub model_id: String,
    pub tool: String,
    pub tool_call_id: String,
    /// `ai`, or `mixed` when the user edited the change before accepting it.
    pub contributor: Contributor,
    /// None when nothing was declared (commands, undo): recorded as `""`.
    pub mutation_declared: Option<MutationClass>,
    /// None until the write computes it.
    pub mutation_computed: Option<MutationClass>,
    pub approval: ApprovalRecord,
    pub files: Vec<FileChange>,
    /// Extra Mandate data (unified diff, command details), merged under `dev.mandate`.
    pub extra: Map<String, Value>,
}

/// The changed `ranges` (1-based, inclusive) of `text`, each with its content hash; a range
/// that does not lie within the text is left out.
pub fn hashed_ranges(ranges: &[(u32, u32)], text: &str) -> Vec<HashedRange> {
    let lines = split_lines(text);
    ranges
        .iter()
        .copied()
        .filter(|(s, e)| *s >= 1 && (*e as usize) <= lines.len())
        .map(|(s, e)| HashedRange {
            start_line: s,
            end_line: e,
            content_hash: content_hash(&lines[s as usize - 1..e as usize]),
        })
        .collect()
}

/// `sha256:` + hex over the LF-normalized text of `lines` (joined with `\n`, no final newline).
pub fn content_hash<S: AsRef<str>>(lines: &[S]) -> String {
    format!("sha256:{}", hex::encode(raw_content_hash(lines)))
}

fn raw_content_hash<S: AsRef<str>>(lines: &[S]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            hasher.update(b"\n");
        }
        hasher.update(line.as_ref().trim_end_matches('\r').as_bytes());
    }
    hasher.finalize().into()
}

/// Whether `lines` hash to `expected` (`sha256:<hex>`), without allocating.
pub fn content_hash_matches<S: AsRef<str>>(lines: &[S], expected: &str) -> bool {
    content_hash_bytes(expected).is_some_and(|want| raw_content_hash(lines) == want)
}

/// The 32 bytes of a content hash `sha256:<64 hex>`; None for anything else (which then
/// matches no lines).
pub fn content_hash_bytes(expected: &str) -> Option<[u8; 32]> {
    unhex32(expected.strip_prefix("sha256:")?.as_bytes())
}

/// 64 hex digits to 32 bytes (the verify hot path, twice per record: a table, no branches
/// per digit, no allocation).
pub fn unhex32(hex: &[u8]) -> Option<[u8; 32]> {
    const BAD: u8 = 0xff;
    const TABLE: [u8; 256] = {
        let mut t = [BAD; 256];
        let mut i = 0;
        while i < 10 {
            t[b'0' as usize + i] = i as u8;
            i += 1;
        }
        let mut i = 0;
        while i < 6 {
            t[b'a' as usize + i] = 10 + i as u8;
            t[b'A' as usize + i] = 10 + i as u8;
            i += 1;
        }
        t
    };
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    let mut bad = 0u8;
    for (o, pair) in out.iter_mut().zip(hex.chunks_exact(2)) {
        let (hi, lo) = (TABLE[pair[0] as usize], TABLE[pair[1] as usize]);
        // Any digit that is not hex has all bits set, and so does `bad` then.
        bad |= hi | lo;
        *o = hi << 4 | lo;
    }
    (bad & 0xf0 == 0).then_some(out)
}

/// The ledger's bytes, mapped rather than copied (it can be hundreds of MB).
pub fn map_ledger(root: &Path) -> std::io::Result<Option<memmap2::Mmap>> {
    match File::open(root.join(LEDGER_FILE)) {
        Ok(f) => map_file(&f, true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Maps an open ledger; `populate` faults every page in up front (one pass of page-table
/// work instead of a fault per page) when all of it will be read.
pub fn map_file(file: &File, populate: bool) -> std::io::Result<Option<memmap2::Mmap>> {
    if file.metadata()?.len() == 0 {
        return Ok(None);
    }
    let mut options = memmap2::MmapOptions::new();
    if populate {
        options.populate();
    }
    // SAFETY: the map is read-only. Mandate only appends to the ledger, and cuts back only
    // what it appended itself under the lock; a file truncated under a reader by something
    // else is tampering, which verify then reports.
    let map = unsafe { options.map(file)? };
    Ok(Some(map))
}

/// Lines of a text, LF-normalized (a final newline does not make an extra line).
pub fn split_lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

/// A file's text and its lines, so that a block of lines can be hashed in one piece.
pub struct TextLines<'a> {
    text: &'a str,
    pub lines: Vec<&'a str>,
}

impl<'a> TextLines<'a> {
    pub fn new(text: &'a str) -> Self {
        Self {
            text,
            lines: split_lines(text),
        }
    }

    /// Whether lines `s..s + n` hash to `want` (a content hash as [`content_hash_bytes`]
    /// reads it), as [`content_hash_matches`] would say. Without a carriage return in the block,
    /// the lines joined by `\n` are the text itself, hashed in one update instead of two per
    /// line.
    pub fn block_matches(&self, s: usize, n: usize, want: &[u8; 32]) -> bool {
        let Some(block) = self.lines.get(s..s + n) else {
            return false;
        };
        let (Some(first), Some(last)) = (block.first(), block.last()) else {
            return raw_content_hash(block) == *want;
        };
        let base = self.text.as_ptr() as usize;
        let from = first.as_ptr() as usize - base;
        let to = last.as_ptr() as usize - base + last.len();
        match self.text.as_bytes().get(from..to) {
            Some(bytes) if memchr::memchr(b'\r', bytes).is_none() => {
                use sha2::{Digest, Sha256};
                let got: [u8; 32] = Sha256::digest(bytes).into();
                got == *want
            }
            _ => raw_content_hash(block) == *want,
        }
    }
}

/// `mandate://` URIs: conversation (task) and related (intent) links.
pub fn task_url(task_id: &str) -> String {
    format!("mandate://task/{}", uri_escape(task_id))
}

pub fn intent_url(intent_id: &str) -> String {
    format!("mandate://intent/{}", uri_escape(intent_id))
}

fn uri_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc();
    now.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".into())
}

/// Builds the record (without `prev` and `digest`).
pub fn build_record(entry: &TraceEntry, revision: Option<String>) -> Value {
    build_record_with_id(entry, revision, new_record_id())
}

/// A new record's id.
pub fn new_record_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// [`build_record`] with the id chosen beforehand ([`new_record_id`]).
pub fn build_record_with_id(entry: &TraceEntry, revision: Option<String>, id: String) -> Value {
    super::record::TraceRecord::from_entry(entry, revision, id, now_rfc3339()).to_value()
}

/// Canonical JSON: object keys sorted at every level, no spaces. Written this way (whatever
/// key order the JSON library keeps) so that a record can be re-hashed by anyone.
pub fn canonical_json(value: &Value) -> String {
    let mut out = Vec::with_capacity(1024);
    write_canonical(value, &mut out);
    // serde_json writes UTF-8 only.
    String::from_utf8(out).unwrap_or_default()
}

/// Keys sorted, no spaces; strings and numbers as serde_json writes them (written straight
/// into `out`, not through a string each).
fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable();
            out.push(b'{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                let _ = serde_json::to_writer(&mut *out, key);
                out.push(b':');
                if let Some(v) = map.get(key) {
                    write_canonical(v, out);
                }
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(v, out);
            }
            out.push(b']');
        }
        scalar => {
            let _ = serde_json::to_writer(&mut *out, scalar);
        }
    }
}

/// The record's own digest: SHA-256 of its canonical form without `digest`.
pub fn record_digest(record: &Value) -> String {
    let pointer = format!("/metadata/{VENDOR_KEY}/digest");
    if record.pointer(&pointer).is_none() {
        return sha256_hex(canonical_json(record).as_bytes());
    }
    let mut copy = record.clone();
    if let Some(vendor) = copy
        .pointer_mut(&format!("/metadata/{VENDOR_KEY}"))
        .and_then(Value::as_object_mut)
    {
        vendor.remove("digest");
    }
    sha256_hex(canonical_json(&copy).as_bytes())
}

/// One line of the ledger as read back.
#[derive(Debug, Clone)]
pub struct LedgerLine {
    /// 1-based.
    pub number: u32,
    pub raw: String,
    pub record: Option<Value>,
}

/// Reads every line (for verify). Lines that are not JSON keep `record: None`.
pub fn read_lines(path: &Path) -> std::io::Result<Vec<LedgerLine>> {
    let text = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let text = String::from_utf8_lossy(&text);
    Ok(text
        .split_terminator('\n')
        .enumerate()
        .map(|(i, raw)| LedgerLine {
            number: i as u32 + 1,
            raw: raw.to_string(),
            record: serde_json::from_str(raw).ok(),
        })
        .collect())
}

#[cfg(test)]
#[path = "ledger_tests.rs"]
pub(crate) mod tests;
