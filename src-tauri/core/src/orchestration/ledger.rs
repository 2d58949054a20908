//! `.orchestration/agent_trace.jsonl`: one Agent Trace 0.1 record per accepted mutation.
//!
//! Records are serialized canonically (sorted keys, no spaces) so they can be re-hashed. Each
//! carries, under `metadata["dev.mandate"]`, `prev` (SHA-256 of the previous line, a hash chain)
//! and `digest` (SHA-256 of the record itself without `digest`), so an edit to any record,
//! the last included, is detected. Appends are serialized by a mutex and an OS file lock, written
//! with one `write` of the whole line and fsynced.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{json, Map, Value};

use super::git;
use crate::fsutil::sha256_hex;

pub const LEDGER_FILE: &str = ".orchestration/agent_trace.jsonl";
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
    /// `user` (a person in the GUI), `policy` (no approval needed), `headless` (`--approve allow`).
    pub by: String,
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
    pub contributor: String,
    pub mutation_declared: String,
    pub mutation_computed: String,
    pub approval: ApprovalRecord,
    pub files: Vec<FileChange>,
    /// Extra Mandate data (unified diff, command details), merged under `dev.mandate`.
    pub extra: Map<String, Value>,
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
    let Some(hex_part) = expected.strip_prefix("sha256:") else {
        return false;
    };
    unhex32(hex_part.as_bytes()).is_some_and(|want| raw_content_hash(lines) == want)
}

/// 64 hex digits to 32 bytes (the verify hot path; no allocation).
pub fn unhex32(hex: &[u8]) -> Option<[u8; 32]> {
    fn nibble(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    }
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in hex.chunks_exact(2).enumerate() {
        out[i] = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    Some(out)
}

/// The ledger's bytes, mapped rather than copied (it can be hundreds of MB). The ledger is
/// only ever appended to; a file truncated under a reader is outside what Mandate does.
pub fn map_ledger(root: &Path) -> std::io::Result<Option<memmap2::Mmap>> {
    let file = match File::open(root.join(LEDGER_FILE)) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if file.metadata()?.len() == 0 {
        return Ok(None);
    }
    // SAFETY: the map is read-only and Mandate never truncates or rewrites the ledger in place.
    // Populated up front: one pass of page-table work instead of a fault per page.
    let map = unsafe { memmap2::MmapOptions::new().populate().map(&file)? };
    Ok(Some(map))
}

/// Lines of a text, LF-normalized (a final newline does not make an extra line).
pub fn split_lines(text: &str) -> Vec<&str> {
    text.lines().collect()
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
    let conversation = |ranges: &[HashedRange]| {
        json!({
            "url": task_url(&entry.task_id),
            "contributor": {"type": entry.contributor, "model_id": truncate_model(&entry.model_id)},
            "ranges": ranges.iter().map(|r| json!({
                "start_line": r.start_line, "end_line": r.end_line, "content_hash": r.content_hash
            })).collect::<Vec<_>>(),
            "related": [{"type": "intent", "url": intent_url(&entry.intent_id)}],
        })
    };
    let files: Vec<Value> = entry
        .files
        .iter()
        .map(|f| json!({"path": f.path, "conversations": [conversation(&f.ranges)]}))
        .collect();
    let mut vendor = Map::new();
    vendor.insert("intent_id".into(), json!(entry.intent_id));
    vendor.insert("task_id".into(), json!(entry.task_id));
    vendor.insert(
        "mutation_class".into(),
        json!({"declared": entry.mutation_declared, "computed": entry.mutation_computed}),
    );
    vendor.insert("tool".into(), json!(entry.tool));
    vendor.insert("tool_call_id".into(), json!(entry.tool_call_id));
    vendor.insert(
        "approval".into(),
        json!({
            "by": entry.approval.by, "at": entry.approval.at,
            "accepted_hunks": entry.approval.accepted_hunks,
            "rejected_hunks": entry.approval.rejected_hunks,
            "edited": entry.approval.edited,
        }),
    );
    if !entry.approval.user_hooks.is_empty() {
        vendor.insert("user_hooks".into(), json!(entry.approval.user_hooks));
    }
    for (k, v) in &entry.extra {
        vendor.insert(k.clone(), v.clone());
    }
    let mut record = json!({
        "version": SPEC_VERSION,
        "id": uuid::Uuid::new_v4().to_string(),
        "timestamp": now_rfc3339(),
        "tool": {"name": "mandate", "version": env!("CARGO_PKG_VERSION")},
        "files": files,
        "metadata": {VENDOR_KEY: Value::Object(vendor)},
    });
    if let Some(revision) = revision {
        record["vcs"] = json!({"type": "git", "revision": revision});
    }
    record
}

fn truncate_model(model: &str) -> String {
    model.chars().take(250).collect()
}

/// Canonical JSON: object keys sorted at every level, no spaces. Written this way (whatever
/// key order the JSON library keeps) so that a record can be re-hashed by anyone.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                if let Some(v) = map.get(key) {
                    write_canonical(v, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(v, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// The record's own digest: SHA-256 of its canonical form without `digest`.
pub fn record_digest(record: &Value) -> String {
    let mut copy = record.clone();
    if let Some(vendor) = copy
        .pointer_mut(&format!("/metadata/{VENDOR_KEY}"))
        .and_then(Value::as_object_mut)
    {
        vendor.remove("digest");
    }
    sha256_hex(canonical_json(&copy).as_bytes())
}

/// The append-only ledger of one workspace.
pub struct Ledger {
    root: PathBuf,
    path: PathBuf,
    lock: Mutex<()>,
}

impl Ledger {
    pub fn new(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            path: root.join(LEDGER_FILE),
            lock: Mutex::new(()),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one record; returns it as written.
    pub fn append(&self, entry: &TraceEntry) -> Result<Value, LedgerError> {
        let record = build_record(entry, git::head_revision(&self.root));
        self.append_record(record)
    }

    /// Chains and appends a prepared record (also used by tests and benchmarks).
    pub fn append_record(&self, mut record: Value) -> Result<Value, LedgerError> {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&self.path)?;
        // Other processes (a second window, the CLI) append too.
        file.lock()?;
        let (prev, needs_newline) = last_line_hash(&mut file)?;
        let vendor = record
            .pointer_mut(&format!("/metadata/{VENDOR_KEY}"))
            .and_then(Value::as_object_mut)
            .ok_or_else(|| LedgerError::Serialize("record has no dev.mandate metadata".into()))?;
        vendor.insert("prev".into(), Value::String(prev));
        let digest = record_digest(&record);
        if let Some(vendor) = record
            .pointer_mut(&format!("/metadata/{VENDOR_KEY}"))
            .and_then(Value::as_object_mut)
        {
            vendor.insert("digest".into(), Value::String(digest));
        }
        let mut line = String::new();
        if needs_newline {
            // A torn last line (power loss) stays a line of its own; verify reports it.
            line.push('\n');
        }
        line.push_str(&canonical_json(&record));
        line.push('\n');
        file.write_all(line.as_bytes())?;
        file.sync_data()?;
        file.unlock()?;
        Ok(record)
    }
}

/// Hash of the last line and whether the file lacks a final newline; reads only the tail.
fn last_line_hash(file: &mut File) -> std::io::Result<(String, bool)> {
    let len = file.seek(SeekFrom::End(0))?;
    if len == 0 {
        return Ok((GENESIS.to_string(), false));
    }
    let mut window: u64 = 4096;
    loop {
        let start = len.saturating_sub(window);
        file.seek(SeekFrom::Start(start))?;
        let mut buf = Vec::with_capacity((len - start) as usize);
        Read::by_ref(file).take(len - start).read_to_end(&mut buf)?;
        let needs_newline = buf.last() != Some(&b'\n');
        let body = if needs_newline {
            &buf[..]
        } else {
            &buf[..buf.len() - 1]
        };
        if let Some(pos) = memchr::memrchr(b'\n', body) {
            return Ok((sha256_hex(&body[pos + 1..]), needs_newline));
        }
        if start == 0 {
            return Ok((sha256_hex(body), needs_newline));
        }
        window = window.saturating_mul(4);
    }
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
