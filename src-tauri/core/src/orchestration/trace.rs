//! Reading the ledger back: `verify` (chain, digests, and every range against the files now),
//! `blame` (which recorded change produced each line now), per-intent history and stored diffs.
//!
//! Blame and the per-intent queries do not parse the whole ledger: records are canonical JSON,
//! so a byte search for `"path":"…"` (or `"intent_id":"…"`) finds the few lines worth parsing.

use std::path::Path;

use serde_json::Value;

use super::ledger::{content_hash_bytes, map_ledger, TextLines};
use super::record::TraceRecord;
use crate::protocol::{
    Approver, BlameLine, ChangeDiffView, FileBlame, LineOrigin, LineRange, MutationClass,
    TraceChange,
};

fn approver(record: &TraceRecord) -> Approver {
    record
        .approval()
        .map_or(Approver::Other("unknown".into()), |a| a.by.clone())
}

fn approval_summary(record: &TraceRecord) -> String {
    let Some(a) = record.approval() else {
        return String::new();
    };
    let mut s = format!("{} {}", a.by, a.at).trim().to_string();
    if !a.rejected_hunks.is_empty() {
        s.push_str(&format!(", {} hunk(s) rejected", a.rejected_hunks.len()));
    }
    if a.edited {
        s.push_str(", edited before accepting");
    }
    s
}

/// Lines of the ledger whose raw text contains `needle`, parsed, oldest first. The ledger is
/// searched on every core, each taking a run of whole lines (a needle never spans lines).
fn matching_records(root: &Path, needle: &str) -> std::io::Result<Vec<TraceRecord>> {
    let Some(map) = map_ledger(root)? else {
        return Ok(Vec::new());
    };
    let bytes: &[u8] = &map;
    let finder = memchr::memmem::Finder::new(needle.as_bytes());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get().clamp(1, 8));
    let mut bounds = vec![0];
    for k in 1..cores {
        let at = bytes.len() * k / cores;
        let next = memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |p| at + p + 1);
        if next > *bounds.last().unwrap_or(&0) && next < bytes.len() {
            bounds.push(next);
        }
    }
    bounds.push(bytes.len());
    let scan = |from: usize, to: usize| {
        let part = &bytes[from..to];
        let mut out = Vec::new();
        let mut last_line_start = usize::MAX;
        for pos in finder.find_iter(part) {
            let start = memchr::memrchr(b'\n', &part[..pos]).map_or(0, |p| p + 1);
            if start == last_line_start {
                continue;
            }
            last_line_start = start;
            let end = memchr::memchr(b'\n', &part[pos..]).map_or(part.len(), |p| pos + p);
            // A line that is not a trace record is skipped here; verify reports it.
            if let Some(r) = TraceRecord::from_line(&part[start..end]) {
                out.push(r);
            }
        }
        out
    };
    if bounds.len() == 2 {
        return Ok(scan(0, bytes.len()));
    }
    Ok(std::thread::scope(|s| {
        let handles: Vec<_> = bounds
            .windows(2)
            .map(|w| {
                let (from, to) = (w[0], w[1]);
                s.spawn(move || scan(from, to))
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    }))
}

fn json_key(key: &str, value: &str) -> String {
    format!("\"{key}\":{}", Value::String(value.to_string()))
}

/// Where a block of `n` lines with `hash` is in `lines`: at `preferred` (0-based) if it is still
/// there, else the nearest place it occurs (so a block whose text repeats in the file is found
/// where it moved to, not at the first copy). `skip` rules out places (already attributed).
pub(crate) fn find_block(
    file: &TextLines<'_>,
    preferred: usize,
    n: usize,
    want: &[u8; 32],
    skip: &dyn Fn(usize) -> bool,
) -> Option<usize> {
    if n == 0 || n > file.lines.len() {
        return None;
    }
    let last = file.lines.len() - n;
    let fits = |s: usize| !skip(s) && file.block_matches(s, n, want);
    let preferred = preferred.min(last);
    if fits(preferred) {
        return Some(preferred);
    }
    for d in 1..=last.max(preferred) {
        if let Some(s) = preferred.checked_sub(d) {
            if fits(s) {
                return Some(s);
            }
        }
        let s = preferred + d;
        if s <= last && fits(s) {
            return Some(s);
        }
    }
    None
}

/// Which recorded change produced each line of `rel_path` now.
pub fn blame(root: &Path, rel_path: &str) -> std::io::Result<FileBlame> {
    let records = matching_records(root, &json_key("path", rel_path))?;
    let records: Vec<&TraceRecord> = records.iter().collect();
    blame_records(root, rel_path, &records)
}

/// Blame from records already read (oldest first); those not touching `rel_path` are skipped.
pub fn blame_records(
    root: &Path,
    rel_path: &str,
    records: &[&TraceRecord],
) -> std::io::Result<FileBlame> {
    let text = std::fs::read_to_string(root.join(rel_path))?;
    let file_lines = TextLines::new(&text);
    let lines = &file_lines.lines;
    let mut origins: Vec<Option<LineOrigin>> = vec![None; lines.len()];
    // Newest first: a later change wins over an earlier one for the same lines.
    for record in records.iter().rev() {
        for file in record.files.iter().filter(|f| f.path == rel_path) {
            for (conversation, range) in file.ranges() {
                let (start, end) = (range.start_line, range.end_line);
                let hash = range.content_hash.as_deref().unwrap_or("");
                let Some(want) = content_hash_bytes(hash) else {
                    continue;
                };
                if start == 0 || end < start {
                    continue;
                }
                let n = (end - start + 1) as usize;
                // A block newer records already explain entirely is looked for elsewhere.
                let claimed = |at: usize| origins[at..at + n].iter().all(Option::is_some);
                let Some(at) = find_block(&file_lines, start as usize - 1, n, &want, &claimed)
                else {
                    continue;
                };
                let origin = LineOrigin {
                    intent_id: record.mandate_str(|m| &m.intent_id).into(),
                    record_id: record.id.clone(),
                    task_id: record.mandate_str(|m| &m.task_id).into(),
                    model: conversation.model_id().into(),
                    contributor: conversation.contributor_kind(),
                    approved_by: approver(record),
                    approval: approval_summary(record),
                    timestamp: record.timestamp.clone(),
                };
                for slot in origins.iter_mut().skip(at).take(n) {
                    if slot.is_none() {
                        *slot = Some(origin.clone());
                    }
                }
            }
        }
    }
    Ok(FileBlame {
        path: rel_path.to_string(),
        lines: lines
            .iter()
            .zip(origins)
            .enumerate()
            .map(|(i, (text, origin))| BlameLine {
                line: i as u32 + 1,
                text: text.to_string(),
                origin,
            })
            .collect(),
    })
}

/// The changes recorded under one intent, oldest first.
pub fn intent_changes(root: &Path, intent_id: &str) -> std::io::Result<Vec<TraceChange>> {
    let records = matching_records(root, &json_key("intent_id", intent_id))?;
    let mut out = Vec::new();
    for record in records.iter().filter(|r| r.intent_id() == Some(intent_id)) {
        let mutation_class = record
            .mandate()
            .and_then(|m| m.mutation_class.as_ref())
            .map_or(MutationClass::Other(String::new()), |c| c.computed.clone());
        for file in &record.files {
            for conversation in &file.conversations {
                out.push(TraceChange {
                    record_id: record.id.clone(),
                    timestamp: record.timestamp.clone(),
                    path: file.path.clone(),
                    ranges: conversation
                        .ranges
                        .iter()
                        .map(|r| LineRange {
                            start_line: r.start_line,
                            end_line: r.end_line,
                        })
                        .collect(),
                    model: conversation.model_id().into(),
                    contributor: conversation.contributor_kind(),
                    tool: record.mandate_str(|m| &m.tool).into(),
                    task_id: record.mandate_str(|m| &m.task_id).into(),
                    mutation_class: mutation_class.clone(),
                    approved_by: approver(record),
                    approval: approval_summary(record),
                });
            }
        }
    }
    Ok(out)
}

/// The diff stored with a record for one of its files.
pub fn change_diff(root: &Path, record_id: &str, path: &str) -> std::io::Result<ChangeDiffView> {
    let records = matching_records(root, &json_key("id", record_id))?;
    let diff = records.iter().find(|r| r.id == record_id).and_then(|r| {
        // The journal's diffs (path to unified diff) stay in the block's extra keys.
        r.mandate()?
            .extra
            .get("diffs")?
            .get(path)?
            .as_str()
            .map(str::to_string)
    });
    Ok(ChangeDiffView {
        record_id: record_id.into(),
        path: path.into(),
        available: diff.is_some(),
        hunks: diff
            .map(|d| crate::diff::parse_unified(&d))
            .unwrap_or_default(),
    })
}

pub use super::verify::{verify, verify_with, Verification};

#[cfg(test)]
#[path = "trace_tests.rs"]
mod tests;
