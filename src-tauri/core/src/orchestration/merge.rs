//! The ledger's git merge driver: `mandate trace merge BASE OURS THEIRS [PATH]`.
//!
//! Both sides' records are kept byte for byte (their digests and chain links stay valid), so
//! each side's history is still intact in the result. The merged ledger is the lines both
//! sides share (their common prefix), then the new lines of one side, then the new lines of
//! the other that the first does not already hold, then a **merge record** (no files;
//! `metadata["dev.mandate"].merge.parents` names the two tips it joins). Which side comes first
//! is decided by the sides' tip hashes, not by which is "ours", and the merge record's id and
//! timestamp derive from its parents: merging A into B and B into A give the same bytes, so the
//! two merges merge again without a conflict.
//!
//! Nothing is ever dropped, whatever BASE says: a cherry-pick or a rebase brings the picked
//! commit's ledger with the records before it (their ranges may then show as changed or
//! missing, which is not tampering), and a revert keeps the records of what it reverts (the
//! ledger is only ever appended to). A side whose new lines are not a valid chain (a torn or
//! edited line, a record naming no parent, a fork never merged) is refused: the driver exits 1
//! and git reports a conflict, leaving OURS as it was.

use std::collections::HashSet;

use serde_json::{json, Value};

use super::chain::{self, ByPrefix};
use super::ledger::{canonical_json, record_digest, SPEC_VERSION, VENDOR_KEY};

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("the {side} ledger is broken at line {line}: {reason}; merge it by hand after fixing it (`mandate trace verify`)")]
    Broken {
        side: &'static str,
        line: usize,
        reason: String,
    },
}

/// What went into a merged ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeSummary {
    /// Lines both sides shared.
    pub common: usize,
    /// New lines taken from ours and from theirs.
    pub from_ours: usize,
    pub from_theirs: usize,
    /// Hash (hex) of the merge record, when one was needed.
    pub merge_tip: Option<String>,
}

/// The merged ledger and what went into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    pub bytes: Vec<u8>,
    pub common: usize,
    pub from_ours: usize,
    pub from_theirs: usize,
    pub merge_tip: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum MergeWriteError {
    #[error(transparent)]
    Merge(#[from] MergeError),
    #[error("cannot write the merged ledger: {0}")]
    Io(#[from] std::io::Error),
}

/// One side's lines after the common prefix, with their hashes and parents.
struct Side<'a> {
    name: &'static str,
    /// 1-based line number of the first new line in that side's file.
    first_line: usize,
    lines: Vec<&'a [u8]>,
    hashes: Vec<[u8; 32]>,
}

impl Side<'_> {
    fn tip(&self) -> Option<[u8; 32]> {
        self.hashes.last().copied()
    }
}

/// Merges the ledgers `ours` and `theirs` (the base is not needed: nothing is dropped).
pub fn merge(ours: &[u8], theirs: &[u8]) -> Result<Merged, MergeError> {
    let mut bytes = Vec::with_capacity(ours.len() + theirs.len());
    let s = merge_to(ours, theirs, &mut bytes).map_err(|e| match e {
        MergeWriteError::Merge(m) => m,
        // Writing to memory does not fail.
        MergeWriteError::Io(e) => MergeError::Broken {
            side: "ours",
            line: 0,
            reason: e.to_string(),
        },
    })?;
    Ok(Merged {
        bytes,
        common: s.common,
        from_ours: s.from_ours,
        from_theirs: s.from_theirs,
        merge_tip: s.merge_tip,
    })
}

/// Merges `ours` and `theirs` into `out`, writing slices of the inputs as they are (the
/// driver maps both files and writes the result without copying it first).
pub fn merge_to(
    ours: &[u8],
    theirs: &[u8],
    out: &mut impl std::io::Write,
) -> Result<MergeSummary, MergeWriteError> {
    for (name, bytes) in [("ours", ours), ("theirs", theirs)] {
        if !bytes.is_empty() && bytes.last() != Some(&b'\n') {
            let line = memchr::memchr_iter(b'\n', bytes).count() + 1;
            return Err(MergeError::Broken {
                side: name,
                line,
                reason: "its last line is torn (no end of line)".into(),
            }
            .into());
        }
    }
    let prefix = common_lines_prefix(ours, theirs);
    let common_bytes = &ours[..prefix];
    let common = memchr::memchr_iter(b'\n', common_bytes).count();
    let before = last_line(common_bytes).map(chain::link_hash);
    let a = side("ours", &ours[prefix..], common + 1);
    let b = side("theirs", &theirs[prefix..], common + 1);
    for s in [&a, &b] {
        check_side(s, before, common_bytes)?;
    }
    let summary = |from_ours, from_theirs, merge_tip| MergeSummary {
        common,
        from_ours,
        from_theirs,
        merge_tip,
    };
    let in_a: HashSet<[u8; 32], ByPrefix> = a.hashes.iter().copied().collect();
    if b.hashes.iter().all(|h| in_a.contains(h)) {
        out.write_all(ours)?;
        return Ok(summary(a.lines.len(), 0, None));
    }
    let in_b: HashSet<[u8; 32], ByPrefix> = b.hashes.iter().copied().collect();
    if a.hashes.iter().all(|h| in_b.contains(h)) {
        out.write_all(theirs)?;
        return Ok(summary(0, b.lines.len(), None));
    }
    // Deterministic order: the side with the smaller tip first.
    let (first, second, first_rest) = if a.tip() <= b.tip() {
        (&a, &b, &ours[prefix..])
    } else {
        (&b, &a, &theirs[prefix..])
    };
    let in_first = if first.name == "ours" { &in_a } else { &in_b };
    out.write_all(common_bytes)?;
    out.write_all(first_rest)?;
    let mut taken = 0;
    for (line, hash) in second.lines.iter().zip(&second.hashes) {
        if !in_first.contains(hash) {
            out.write_all(line)?;
            out.write_all(b"\n")?;
            taken += 1;
        }
    }
    let (Some(first_tip), Some(second_tip)) = (first.tip(), second.tip()) else {
        return Err(MergeError::Broken {
            side: second.name,
            line: 0,
            reason: "it has no records".into(),
        }
        .into());
    };
    let record = merge_record(
        [first_tip, second_tip],
        [first.lines.last(), second.lines.last()],
    );
    let line = canonical_json(&record);
    out.write_all(line.as_bytes())?;
    out.write_all(b"\n")?;
    let (from_ours, from_theirs) = if first.name == "ours" {
        (first.lines.len(), taken)
    } else {
        (taken, first.lines.len())
    };
    let tip = hex::encode(chain::link_hash(line.as_bytes()));
    Ok(summary(from_ours, from_theirs, Some(tip)))
}

/// Length of the longest common prefix of `a` and `b` that ends at a line boundary.
fn common_lines_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut at = 0;
    // Compare in large blocks (memcmp), then byte by byte inside the first differing block.
    const BLOCK: usize = 1 << 16;
    while at + BLOCK <= n && a[at..at + BLOCK] == b[at..at + BLOCK] {
        at += BLOCK;
    }
    while at < n && a[at] == b[at] {
        at += 1;
    }
    if at == a.len() && at == b.len() {
        return at;
    }
    memchr::memrchr(b'\n', &a[..at]).map_or(0, |p| p + 1)
}

fn last_line(bytes: &[u8]) -> Option<&[u8]> {
    let body = bytes.strip_suffix(b"\n")?;
    Some(match memchr::memrchr(b'\n', body) {
        Some(p) => &body[p + 1..],
        None => body,
    })
}

fn side<'a>(name: &'static str, rest: &'a [u8], first_line: usize) -> Side<'a> {
    let lines = chain::split_lines(rest);
    let hashes = chain::par_map(&lines, chain::line_jobs(lines.len()), |l| {
        chain::link_hash(l)
    });
    Side {
        name,
        first_line,
        lines,
        hashes,
    }
}

/// Each new line is a record naming an earlier line (of the common part or of its own side),
/// and every new line but the last is continued by a later one.
fn check_side(s: &Side<'_>, before: Option<[u8; 32]>, common: &[u8]) -> Result<(), MergeError> {
    let genesis = chain::genesis();
    let mut own: std::collections::HashMap<[u8; 32], usize, ByPrefix> =
        std::collections::HashMap::with_capacity_and_hasher(s.lines.len(), ByPrefix);
    let mut continued = vec![false; s.lines.len()];
    let mut older: Option<HashSet<[u8; 32], ByPrefix>> = None;
    let broken = |i: usize, reason: &str| MergeError::Broken {
        side: s.name,
        line: s.first_line + i,
        reason: reason.to_string(),
    };
    for (i, line) in s.lines.iter().enumerate() {
        let (prev, parents) = chain::parents_of(line)
            .ok_or_else(|| broken(i, "this line is not a Mandate trace record"))?;
        for p in std::iter::once(prev).chain(parents) {
            if p == genesis || Some(p) == before {
                continue;
            }
            if let Some(&j) = own.get(&p) {
                continued[j] = true;
                continue;
            }
            // A parent deep in the common part: hash it once, only when needed.
            let older = older.get_or_insert_with(|| {
                chain::split_lines(common)
                    .iter()
                    .map(|l| chain::link_hash(l))
                    .collect()
            });
            if !older.contains(&p) {
                return Err(broken(
                    i,
                    "this record names a parent that is not an earlier line",
                ));
            }
        }
        own.entry(s.hashes[i]).or_insert(i);
    }
    if let Some(i) = continued
        .iter()
        .take(s.lines.len().saturating_sub(1))
        .position(|c| !c)
    {
        return Err(broken(
            i + 1,
            "the chain is broken here: the line before was edited, removed or reordered",
        ));
    }
    Ok(())
}

/// The merge record joining `parents` (first side's tip, second side's tip); its `prev` is the
/// second tip, the line just before it.
fn merge_record(parents: [[u8; 32]; 2], tips: [Option<&&[u8]>; 2]) -> Value {
    let timestamp = tips
        .iter()
        .filter_map(|t| {
            let v: Value = serde_json::from_slice((*t)?).ok()?;
            v.get("timestamp")?.as_str().map(str::to_string)
        })
        .max()
        .unwrap_or_else(|| "1970-01-01T00:00:00Z".into());
    let hexes: Vec<String> = parents.iter().map(hex::encode).collect();
    let mut record = json!({
        "version": SPEC_VERSION,
        "id": derived_uuid(&parents),
        "timestamp": timestamp,
        "tool": {"name": "mandate", "version": env!("CARGO_PKG_VERSION")},
        "files": [],
        "metadata": {VENDOR_KEY: {
            "kind": "merge",
            "merge": {"parents": hexes},
            "prev": hex::encode(parents[1]),
        }},
    });
    let digest = record_digest(&record);
    record["metadata"][VENDOR_KEY]["digest"] = json!(digest);
    record
}

/// A version 8 (custom) UUID from the parents, so the same merge has the same id.
fn derived_uuid(parents: &[[u8; 32]; 2]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(b"mandate merge");
    h.update(parents[0]);
    h.update(parents[1]);
    let d = h.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&d[..16]);
    uuid::Builder::from_custom_bytes(bytes)
        .into_uuid()
        .to_string()
}

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
