//! `trace verify`: the hash chain (`chain.rs`), each record's digest, the ledger against its
//! heads and git (`integrity.rs`), and every recorded range against the files as they are now.
//!
//! Records are written canonically, so the chain and the digests are checked on the raw bytes
//! without parsing JSON (see `chain::link`); only the leading `files` array is parsed. A line
//! not in canonical form falls back to a full parse, so hand-edited but valid records are still
//! judged on their content. Lines and files are checked on every core: each core takes a run
//! of whole lines, then a share of the files (chosen by a hash of the path, so every range of
//! a file is checked by one core, in ledger order).

use std::path::Path;

use serde_json::Value;

use super::chain::{self, Chain, Link};
use super::heads::{HeadStore, Heads};
use super::integrity;
#[path = "verify_scan.rs"]
mod scan;
use super::ledger::{map_file, TextLines, LEDGER_FILE, VENDOR_KEY};
use scan::{scan_run, Run};

use crate::protocol::{FindingKind, LineRange, VerifyFinding, VerifyReport};

/// Below this a ledger is checked on one core: threads would cost more than they save.
const PARALLEL_BYTES: usize = 1 << 20;

fn record_id(line: &[u8]) -> Option<String> {
    serde_json::from_slice::<Value>(line)
        .ok()?
        .get("id")?
        .as_str()
        .map(str::to_string)
}

/// A verification: the report the window shows, and what could not be judged.
#[derive(Debug, Clone)]
pub struct Verification {
    pub report: VerifyReport,
    /// Not tampering, worth saying (no head known here, a branch that was reset).
    pub notes: Vec<String>,
}

/// Verifies the ledger of `root` against its heads in the app's data directory.
pub fn verify(root: &Path) -> std::io::Result<VerifyReport> {
    let store = HeadStore::new(&HeadStore::default_data_dir(), root);
    verify_with(root, &store).map(|v| v.report)
}

/// The ledger's bytes and its heads as of the same moment: appends hold the ledger's lock
/// from the write through the head update, and this holds it shared while reading both.
fn snapshot(
    root: &Path,
    store: &HeadStore,
) -> std::io::Result<(Option<memmap2::Mmap>, Result<Heads, String>)> {
    for _ in 0..2 {
        match std::fs::File::open(root.join(LEDGER_FILE)) {
            Ok(file) => {
                file.lock_shared()?;
                let map = map_file(&file, false);
                let heads = store.read().map_err(|e| e.to_string());
                let _ = file.unlock();
                return Ok((map?, heads));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let heads = store.read().map_err(|e| e.to_string());
                // The first append may have created it meanwhile: then read it with its head.
                if !root.join(LEDGER_FILE).exists() {
                    return Ok((None, heads));
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok((None, store.read().map_err(|e| e.to_string())))
}

pub fn verify_with(root: &Path, store: &HeadStore) -> std::io::Result<Verification> {
    let (map, heads) = snapshot(root, store)?;
    let bytes: &[u8] = map.as_deref().unwrap_or(&[]);
    let cores = if bytes.len() < PARALLEL_BYTES {
        1
    } else {
        chain::threads()
    };
    Ok(judge_ledger(root, bytes, heads, cores))
}

/// Verifies the ledger `bytes` of the workspace at `root` on `cores` threads.
fn judge_ledger(
    root: &Path,
    bytes: &[u8],
    heads: Result<Heads, String>,
    cores: usize,
) -> Verification {
    let byte_runs = chain::line_runs(bytes, cores);
    let mut runs = chain::par_map(&byte_runs, byte_runs.len(), |r| scan_run(r, cores));
    // The first run's lists become the whole ledger's (the others are appended to them): the
    // first half of a big ledger is not copied again.
    let total: usize = runs.iter().map(|r| r.lines.len()).sum();
    let mut lines = runs
        .first_mut()
        .map(|r| std::mem::take(&mut r.lines))
        .unwrap_or_default();
    let mut links = runs
        .first_mut()
        .map(|r| std::mem::take(&mut r.links))
        .unwrap_or_default();
    lines.reserve(total - lines.len());
    links.reserve(total - links.len());
    let mut first_lines = vec![0];
    for run in runs.iter_mut().skip(1) {
        first_lines.push(lines.len() as u32);
        lines.append(&mut run.lines);
        links.append(&mut run.links);
    }
    let mut report = VerifyReport {
        records: 0,
        ranges: 0,
        intact: 0,
        moved: 0,
        superseded: 0,
        changed: 0,
        missing: 0,
        tampered: 0,
        malformed: 0,
        findings: Vec::new(),
        chain_ok: true,
    };
    for (n, link) in links.iter().enumerate() {
        line_findings(&mut report, &lines, n, link);
    }
    let chain_check = Chain::check(&links);
    for (i, b) in &chain_check.breaks {
        report.tampered += 1;
        let finding = line_finding(&lines, *i, FindingKind::Tampered, b.explain().into());
        report.findings.push(finding);
    }
    let notes = head_findings(
        root,
        bytes,
        &lines,
        &links,
        &chain_check,
        heads,
        &mut report,
    );
    report.chain_ok = report.tampered == 0 && report.malformed == 0;
    let shares: Vec<usize> = (0..cores).collect();
    let per_share = chain::par_map(&shares, cores, |&k| {
        check_share(root, &runs, &first_lines, k)
    });
    for (counts, findings) in per_share {
        report.ranges += counts[0];
        report.intact += counts[1];
        report.moved += counts[2];
        report.superseded += counts[3];
        report.changed += counts[4];
        report.missing += counts[5];
        report.findings.extend(findings);
    }
    report.findings.sort_by(|a, b| {
        let key = |f: &VerifyFinding| (f.ledger_line, f.range.as_ref().map(|r| r.start_line));
        key(a).cmp(&key(b)).then_with(|| a.path.cmp(&b.path))
    });
    Verification { report, notes }
}

/// Checks the files of share `k`: every range recorded for them, in ledger order.
fn check_share(
    root: &Path,
    runs: &[Run<'_>],
    first_lines: &[u32],
    k: usize,
) -> ([u32; 6], Vec<VerifyFinding>) {
    let total = runs
        .iter()
        .filter_map(|r| r.ranges.get(k))
        .map(Vec::len)
        .sum();
    // (directory's hash, path's hash, path, range)
    let mut mine: Vec<(u64, u64, &str, Checked)> = Vec::with_capacity(total);
    for (run, first) in runs.iter().zip(first_lines) {
        let Some(ranges) = run.ranges.get(k) else {
            continue;
        };
        mine.extend(ranges.iter().map(|r| {
            (
                r.dir_hash,
                r.path_hash,
                &*r.path,
                (first + r.line + 1, r.start, r.end, r.hash),
            )
        }));
    }
    // Grouped by file, the files of a directory together (each directory is opened once),
    // each file's ranges in ledger order. The sort looks only at hashes and the line, not at
    // the path: its text is in the ledger, and reading it there for every comparison was a
    // cache miss each time. Paths are compared once per range below, for the rare paths
    // whose hashes are equal.
    mine.sort_unstable_by_key(|(dir, path, _, checked)| (*dir, *path, checked.0));
    let mut counts = [0u32; 6];
    let mut findings = Vec::new();
    let mut ranges = Vec::new();
    let mut reader = Reader::new(root);
    let mut check = |path: &str, group: &mut dyn Iterator<Item = Checked>| {
        ranges.clear();
        ranges.extend(group);
        let (c, f) = check_file(path, &ranges, &mut reader);
        for (total, n) in counts.iter_mut().zip(c) {
            *total += n;
        }
        findings.extend(f);
    };
    for same_hash in mine.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)) {
        let first = same_hash[0].2;
        if same_hash.iter().all(|(_, _, path, _)| *path == first) {
            check(first, &mut same_hash.iter().map(|e| e.3));
            continue;
        }
        let mut paths: Vec<&str> = same_hash.iter().map(|e| e.2).collect();
        paths.sort_unstable();
        paths.dedup();
        for path in paths {
            let mut group = same_hash.iter().filter(|e| e.2 == path).map(|e| e.3);
            check(path, &mut group);
        }
    }
    (counts, findings)
}

/// What line `n` says about itself: not a record, edited, or a person's acceptance.
fn line_findings(report: &mut VerifyReport, lines: &[&[u8]], n: usize, link: &Link) {
    if link.prev.is_none() {
        report.malformed += 1;
        report.findings.push(line_finding(
            lines,
            n,
            FindingKind::Malformed,
            "this line is not a Mandate trace record (torn write or hand edit)".into(),
        ));
        return;
    }
    report.records += 1;
    if !link.digest_ok {
        report.tampered += 1;
        report.findings.push(line_finding(
            lines,
            n,
            FindingKind::Tampered,
            "this record was edited after it was written (its digest does not match)".into(),
        ));
    }
    if link.accepts_break {
        report.tampered += 1;
        let detail = acceptance_detail(lines[n]);
        report
            .findings
            .push(line_finding(lines, n, FindingKind::Tampered, detail));
    }
}

/// The ledger against its heads and git (`integrity.rs`); returns the notes.
fn head_findings(
    root: &Path,
    bytes: &[u8],
    lines: &[&[u8]],
    links: &[Link],
    chain_check: &Chain,
    heads: Result<Heads, String>,
    report: &mut VerifyReport,
) -> Vec<String> {
    let heads = match heads {
        Ok(h) => h,
        Err(e) => {
            report.tampered += 1;
            report.findings.push(VerifyFinding {
                kind: FindingKind::Tampered,
                ledger_line: 0,
                record_id: None,
                path: None,
                range: None,
                detail: format!("the ledger cannot be checked against its head: {e}"),
            });
            return Vec::new();
        }
    };
    let mut line_problems: Vec<u64> = report
        .findings
        .iter()
        // A torn line does not explain a missing head; an edit or a broken chain does.
        .filter(|f| f.kind == FindingKind::Tampered && !f.detail.starts_with("a person accepted"))
        .map(|f| u64::from(f.ledger_line))
        .collect();
    line_problems.sort_unstable();
    let found = integrity::Found {
        line_problems,
        accepted_upto: None,
    };
    let judgement = integrity::judge(root, bytes, links, chain_check, &heads, &found);
    for p in judgement.problems {
        report.tampered += 1;
        let index = (p.line as usize)
            .checked_sub(1)
            .filter(|&i| i < lines.len());
        report.findings.push(VerifyFinding {
            kind: FindingKind::Tampered,
            ledger_line: p.line as u32,
            record_id: index.and_then(|i| record_id(lines[i])),
            path: None,
            range: None,
            detail: p.reason,
        });
    }
    judgement.notes
}

fn line_finding(lines: &[&[u8]], index: usize, kind: FindingKind, detail: String) -> VerifyFinding {
    VerifyFinding {
        kind,
        ledger_line: index as u32 + 1,
        record_id: record_id(lines[index]),
        path: None,
        range: None,
        detail,
    }
}

fn acceptance_detail(line: &[u8]) -> String {
    let record = serde_json::from_slice::<Value>(line).unwrap_or_default();
    let accepted = record
        .pointer(&format!("/metadata/{VENDOR_KEY}/accepted_break"))
        .cloned()
        .unwrap_or_default();
    let at = accepted.get("line").and_then(Value::as_u64).unwrap_or(0);
    let reason = accepted.get("reason").and_then(Value::as_str).unwrap_or("");
    format!(
        "a person accepted appending to this ledger while it was broken at {}: {reason}",
        if at == 0 {
            "the file as a whole".to_string()
        } else {
            format!("line {at}")
        }
    )
}

/// Reads the files of the workspace one after the other into one buffer, opening each relative
/// to its directory when the last file was in the same one (the path is not walked again from
/// the root: that walk was a tenth of the file checks' time).
/// Why a recorded file gives no text to check.
enum Unread {
    /// Nothing is at its path.
    Missing,
    /// Something is, but cannot be read (a directory, no permission).
    Unreadable,
    /// It is no longer UTF-8 text.
    NotText,
}

struct Reader<'r> {
    root: &'r Path,
    buffer: Vec<u8>,
    /// The directory of the last file read (its path as recorded) and a handle on it.
    dir: Option<(String, std::fs::File)>,
}

impl<'r> Reader<'r> {
    fn new(root: &'r Path) -> Self {
        Self {
            root,
            buffer: Vec::new(),
            dir: None,
        }
    }

    /// The text of the workspace file `path` (as recorded); None when it cannot be read or is
    /// not UTF-8 text.
    #[cfg(test)]
    fn read(&mut self, path: &str) -> Option<&str> {
        self.read_text(path).ok()
    }

    /// The file's text, or why there is none.
    fn read_text(&mut self, path: &str) -> Result<&str, Unread> {
        use std::io::Read;
        let Some(mut file) = self.open(path) else {
            let gone = std::fs::symlink_metadata(self.root.join(path))
                .err()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::NotFound);
            return Err(if gone {
                Unread::Missing
            } else {
                Unread::Unreadable
            });
        };
        // Read until the end without asking the size first: `read_to_end` costs a `statx`
        // and an `lseek` per file, a tenth of the file checks at 50k files.
        let mut filled = 0;
        loop {
            if filled == self.buffer.len() {
                self.buffer.resize((2 * filled).max(64 << 10), 0);
            }
            match file.read(&mut self.buffer[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return Err(Unread::Unreadable),
            }
        }
        std::str::from_utf8(&self.buffer[..filled]).map_err(|_| Unread::NotText)
    }

    fn open(&mut self, path: &str) -> Option<std::fs::File> {
        // Only a plain name under a plain directory is opened relative to it; anything else
        // (`..`, `.`, an absolute path, a name with a NUL) the ordinary way, as before.
        let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
        let plain = !name.is_empty() && name != "." && name != ".." && !path.starts_with('/');
        let Some(name) = plain.then(|| std::ffi::CString::new(name).ok()).flatten() else {
            return std::fs::File::open(self.root.join(path)).ok();
        };
        if self.dir.as_ref().is_none_or(|(d, _)| d != dir) {
            self.dir = None;
            let handle = std::fs::File::open(self.root.join(dir)).ok()?;
            self.dir = Some((dir.to_string(), handle));
        }
        let (_, handle) = self.dir.as_ref()?;
        use std::os::fd::{AsRawFd, FromRawFd};
        // SAFETY: `openat` with a live directory descriptor and a NUL-terminated name; the
        // descriptor it returns is owned by the File made from it and by nothing else.
        let fd = unsafe {
            libc::openat(
                handle.as_raw_fd(),
                name.as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC,
            )
        };
        (fd >= 0).then(|| unsafe { std::fs::File::from_raw_fd(fd) })
    }
}

/// A range to check: (1-based ledger line, start, end, hash).
type Checked = (u32, u32, u32, Option<[u8; 32]>);

/// Checks one file's ranges: [ranges, intact, moved, superseded, changed, missing] and findings.
fn check_file(
    path: &str,
    ranges: &[Checked],
    reader: &mut Reader,
) -> ([u32; 6], Vec<VerifyFinding>) {
    let mut counts = [0u32; 6];
    let mut findings = Vec::new();
    let text = reader.read_text(path);
    let lines = TextLines::new(text.as_deref().unwrap_or(""));
    for (i, (n, start, end, hash)) in ranges.iter().enumerate() {
        counts[0] += 1;
        let range = LineRange {
            start_line: *start,
            end_line: *end,
        };
        let mut push = |kind, detail: String| {
            findings.push(VerifyFinding {
                kind,
                ledger_line: *n,
                record_id: None,
                path: Some(path.to_string()),
                range: Some(range.clone()),
                detail,
            })
        };
        match &text {
            Ok(_) => {}
            Err(Unread::Missing) => {
                counts[5] += 1;
                push(FindingKind::Missing, format!("{path} no longer exists"));
                continue;
            }
            Err(Unread::Unreadable) => {
                counts[5] += 1;
                push(
                    FindingKind::Missing,
                    format!("{path} cannot be read (not a file, or not readable)"),
                );
                continue;
            }
            Err(Unread::NotText) => {
                counts[4] += 1;
                push(
                    FindingKind::Changed,
                    format!("{path} is no longer UTF-8 text: lines {start}-{end} cannot be found"),
                );
                continue;
            }
        }
        let len = end.saturating_sub(*start) as usize + 1;
        let preferred = start.saturating_sub(1) as usize;
        let found =
            hash.and_then(|h| super::trace::find_block(&lines, preferred, len, &h, &|_| false));
        match found {
            Some(at) if at == preferred => counts[1] += 1,
            Some(at) => {
                counts[2] += 1;
                push(
                    FindingKind::Moved,
                    format!("lines {start}-{end} moved to {}-{}", at + 1, at + len),
                );
            }
            None if ranges[i + 1..].iter().any(|(m, s, e, _)| {
                m > n && *s <= end.saturating_add(1) && *start <= e.saturating_add(1)
            }) =>
            {
                // A later recorded change to the same lines accounts for it.
                counts[3] += 1;
            }
            None => {
                counts[4] += 1;
                push(
                    FindingKind::Changed,
                    format!("lines {start}-{end} were changed by someone else after this record"),
                );
            }
        }
    }
    (counts, findings)
}

#[cfg(test)]
#[path = "verify_tests.rs"]
mod tests;
