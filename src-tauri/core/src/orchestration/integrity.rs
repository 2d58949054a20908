//! Judging a ledger against what Mandate knows it wrote: the heads in the data directory
//! (`heads.rs`) and the history git holds.
//!
//! The rule, on top of the hash chain (`chain.rs`):
//!
//! 1. **Nothing Mandate wrote is gone.** The last line Mandate appended on the branch checked
//!    out now must still be in the ledger (its hash commits to every line before it). If it
//!    is not, the ledger was truncated, deleted, or its last records removed or rewritten
//!    (re-chained or not) — unless git explains it: the branch now points at a commit that
//!    does not contain the commit Mandate appended on (a reset, a rewritten branch). A ledger
//!    missing while a head is known is tampering, not an empty ledger.
//! 2. **Nothing was added behind Mandate's back.** Every line must descend from a tip Mandate
//!    vouches for (the last line of any branch's head, a merge the merge driver produced) or
//!    be part of a ledger git has committed (HEAD's, or that of a merge, cherry-pick, revert or
//!    rebase in progress, as a prefix of the file). A forged record appended with a correct
//!    chain is neither.
//!
//! So switching branches, checking out an older commit, pulling, merging through the merge
//! driver, and other Mandate processes appending (they update the head under the ledger's
//! lock) are not tampering. Without any head for the workspace (a fresh clone, another
//! machine) only the chain can be checked here; `trace verify --git` checks committed history
//! against the anchors in git.

use std::collections::HashSet;
use std::path::Path;

use super::chain::{Chain, Link};
use super::git;
use super::heads::{BranchHead, Heads};
use super::ledger::{unhex32, LEDGER_FILE};

/// One thing wrong with the ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// 1-based line of the ledger; 0 when it is about the file as a whole.
    pub line: u64,
    pub reason: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Judgement {
    pub problems: Vec<Problem>,
    /// Things worth saying that are not tampering (no head known, a reset branch).
    pub notes: Vec<String>,
}

pub const NO_HEAD_NOTE: &str = "no head of this ledger is known on this machine (first use here, another machine, a moved or re-created workspace): only the chain was checked";

/// What the caller already found line by line.
#[derive(Debug, Clone, Default)]
pub struct Found {
    /// 1-based lines with a problem of their own (edited, chain broken), sorted. The
    /// same tampering is not reported twice: a head that is gone because its record was
    /// edited is the edit, and which lines descend from a head means nothing once the chain
    /// is broken.
    pub line_problems: Vec<u64>,
    /// 0-based line of the last record of a person's acceptance of a broken ledger that
    /// counts ([`honoured_acceptance`]): every line up to it was accepted.
    pub accepted_upto: Option<usize>,
}

/// Judges the ledger `links` (one per line of `bytes`) of the workspace at `root`.
pub fn judge(
    root: &Path,
    bytes: &[u8],
    links: &[Link],
    chain: &Chain,
    heads: &Heads,
    found: &Found,
) -> Judgement {
    let mut out = Judgement::default();
    if heads.is_empty() {
        out.notes.push(NO_HEAD_NOTE.into());
        return out;
    }
    let key = git::head_key(root);
    let current = heads.branches.get(&key);
    if links.is_empty() {
        if let Some(h) = current.filter(|h| h.records > 0) {
            match git_explains_absence(root, &key, h) {
                Some(note) => out.notes.push(note),
                None => out.problems.push(Problem {
                    line: 0,
                    reason: format!(
                        "the ledger is missing or empty, but Mandate wrote {} records to it{} (the last at {})",
                        h.records,
                        on_branch(&key),
                        h.at
                    ),
                }),
            }
        }
        return out;
    }
    let tips: HashSet<[u8; 32]> = heads.tips().into_iter().collect();
    let tip_lines = tip_lines(links, &tips);
    if let Some(h) = current {
        let pending = heads.pending.as_deref().and_then(|p| unhex32(p.as_bytes()));
        let present = [unhex32(h.last.as_bytes()), pending]
            .into_iter()
            .flatten()
            .any(|w| tip_lines.iter().any(|&i| links[i].hash == w));
        let explained_by_a_line = found.line_problems.first().is_some_and(|&l| l <= h.records);
        if !present && !explained_by_a_line {
            match git_explains_absence(root, &key, h) {
                Some(note) => out.notes.push(note),
                None => out.problems.push(Problem {
                    line: h.records.min(links.len() as u64 + 1),
                    reason: format!(
                        "the last record Mandate wrote{} (line {}, at {}) is no longer in the ledger: it was truncated, or its last records were deleted or rewritten",
                        on_branch(&key),
                        h.records,
                        h.at
                    ),
                }),
            }
        }
    }
    let n = links.len();
    // Once something is wrong, which lines descend from a head says nothing more.
    if tips.contains(&links[n - 1].hash)
        || !found.line_problems.is_empty()
        || !out.problems.is_empty()
    {
        return out;
    }
    let mut vouched = chain.ancestors(n, &tip_lines);
    if let Some(at) = found.accepted_upto {
        for v in vouched.iter_mut().take(at + 1) {
            *v = true;
        }
    }
    if vouched.iter().all(|v| *v) {
        return out;
    }
    let committed = committed_lines(root, bytes);
    for v in vouched.iter_mut().take(committed) {
        *v = true;
    }
    if let Some(first) = vouched.iter().position(|v| !v) {
        out.problems.push(Problem {
            line: first as u64 + 1,
            reason: "this line was not written by Mandate here and is not in git's history: a record was appended or inserted behind Mandate's back".into(),
        });
    }
    out
}

/// 0-based lines of `links` that are tips Mandate vouches for.
fn tip_lines(links: &[Link], tips: &HashSet<[u8; 32]>) -> Vec<usize> {
    links
        .iter()
        .enumerate()
        .filter(|(_, l)| tips.contains(&l.hash))
        .map(|(i, _)| i)
        .collect()
}

/// 0-based line of the last record of a person's acceptance of a broken ledger that counts:
/// one Mandate vouches for (a head's tip or a line it descends from: `accept_broken` records
/// the head after appending) or that git has committed. Its digest proves nothing on its own,
/// since anyone with the code can write a record with a correct chain and digest. Without
/// any head only the chain is checked, so every acceptance counts, as before.
pub fn honoured_acceptance(
    root: &Path,
    bytes: &[u8],
    links: &[Link],
    chain: &Chain,
    heads: &Heads,
) -> Option<usize> {
    let mut claimed = links
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, l)| l.accepts_break && l.digest_ok)
        .map(|(i, _)| i)
        .peekable();
    let last = *claimed.peek()?;
    if heads.is_empty() {
        return Some(last);
    }
    let tips: HashSet<[u8; 32]> = heads.tips().into_iter().collect();
    let vouched = chain.ancestors(links.len(), &tip_lines(links, &tips));
    let mut committed = None;
    claimed
        .find(|&i| vouched[i] || i < *committed.get_or_insert_with(|| committed_lines(root, bytes)))
}

fn on_branch(key: &str) -> String {
    match key.strip_prefix("refs/heads/") {
        Some(b) => format!(" on branch {b}"),
        None if key == "HEAD" => " with a detached HEAD".into(),
        None => String::new(),
    }
}

/// Why the head of `key` may legitimately be missing: the branch moved since Mandate's last
/// append on it (a reset, a rebase, an amended or dropped commit: its reflog grew) to a commit
/// that does not descend from the one Mandate appended on, or back onto that very commit.
/// Only a person moves branches: confined commands cannot write `.git/`.
fn git_explains_absence(root: &Path, key: &str, head: &BranchHead) -> Option<String> {
    let then = head.commit.as_deref()?;
    let repo = git::discover(root)?;
    let now = git::resolve_head(&repo)?;
    let moved = head.reflog.is_some() && git::reflog_size(root, key) != head.reflog;
    let explained = if now == then {
        moved
    } else {
        // An error here means git no longer knows the old commit: history was rewritten.
        !git::is_ancestor(&repo, then, &now).unwrap_or(false)
    };
    explained.then(|| {
        format!(
            "{} has moved since Mandate last appended on it (at {}, on commit {}; now {}): it was reset or rewritten, so the {} records Mandate had written then are not expected here",
            match key.strip_prefix("refs/heads/") {
                Some(b) => format!("branch {b}"),
                None => "HEAD".into(),
            },
            head.at,
            short(then),
            short(&now),
            head.records
        )
    })
}

pub fn short(sha: &str) -> &str {
    crate::text::prefix(sha, 12)
}

/// How many leading lines of `bytes` are exactly a ledger git has committed: HEAD's, or that
/// of an operation in progress. Compared by blob id over the prefix, without reading the blob.
pub fn committed_lines(root: &Path, bytes: &[u8]) -> usize {
    let Some(repo) = git::discover(root) else {
        return 0;
    };
    let Some(rel) = ledger_in_repo(&repo, root) else {
        return 0;
    };
    let mut revs = vec!["HEAD".to_string()];
    revs.extend(git::operations_in_progress(&repo));
    let mut best = 0usize;
    for rev in revs {
        let Ok(Some((id, size))) = git::blob_at(&repo, &rev, &rel) else {
            continue;
        };
        let size = size as usize;
        if size <= best || size > bytes.len() {
            continue;
        }
        if size < bytes.len() && bytes[size - 1] != b'\n' {
            continue;
        }
        if git::blob_id(&bytes[..size], id.len() == 64) == id {
            best = size;
        }
    }
    let whole = memchr::memchr_iter(b'\n', &bytes[..best]).count();
    if best == bytes.len() && best > 0 && bytes[best - 1] != b'\n' {
        whole + 1
    } else {
        whole
    }
}

/// The ledger's path inside the repository (the workspace may be a subdirectory).
pub fn ledger_in_repo(repo: &git::Repo, root: &Path) -> Option<String> {
    let base = git::repo_path(repo, root)?;
    Some(if base.is_empty() {
        LEDGER_FILE.to_string()
    } else {
        format!("{base}/{LEDGER_FILE}")
    })
}
