//! Anchors: the ledger's head at each commit, kept in git as a commit-message trailer
//! (`Mandate-Ledger: <records> <sha256 of its last line>`, with the ledger's path after them
//! when the workspace is not the repository's top level), written by the
//! `prepare-commit-msg` hook that `mandate init` installs.
//!
//! Why a trailer and not a git note: a trailer is part of the commit, so it travels with every
//! push, fetch, clone and CI checkout without configuration, is shown by every hosting service,
//! and cannot be changed without changing the commit's id (which everyone who has the commit
//! would see). Notes live in a separate ref that is neither pushed nor fetched by default (CI
//! checkouts do not have them), are not carried through a rebase unless configured, and can
//! be rewritten without touching the commit. The hook runs on `--no-verify` commits too
//! (`prepare-commit-msg` is not skipped by it); rebases and cherry-picks keep the message.
//!
//! `mandate trace verify --git [RANGE]` proves that no anchored record was rewritten or
//! dropped since: the ledger at the range's last commit must be a valid chain and still hold
//! the line each anchor names (the line's hash commits to everything before it). The merge
//! driver never drops a line, so merges, rebases and cherry-picks keep every anchor valid.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde::Serialize;

use super::chain::{self, Chain};
use super::git::{self, GitError, Repo};
use super::integrity::{ledger_in_repo, short};
use super::ledger::{map_file, unhex32, LEDGER_FILE};

pub const TRAILER: &str = "Mandate-Ledger";

#[derive(Debug, thiserror::Error)]
pub enum AnchorError {
    #[error("{0} is not in a git repository")]
    NotARepository(String),
    #[error("`{0}` is not a revision or range git knows")]
    BadRange(String),
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("cannot read the ledger: {0}")]
    Io(#[from] std::io::Error),
}

/// The ledger's head as anchored at one commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Anchor {
    pub records: u64,
    /// SHA-256 (hex) of the ledger's last line.
    pub tip: String,
    /// The ledger's path in the repository.
    pub path: String,
}

impl Anchor {
    /// The trailer's value.
    pub fn value(&self) -> String {
        if self.path == LEDGER_FILE {
            format!("{} {}", self.records, self.tip)
        } else {
            format!("{} {} {}", self.records, self.tip, self.path)
        }
    }

    pub fn parse(value: &str) -> Option<Anchor> {
        let mut parts = value.split_whitespace();
        let records = parts.next()?.parse().ok()?;
        let tip = parts.next()?.to_ascii_lowercase();
        unhex32(tip.as_bytes())?;
        let path = parts.next().unwrap_or(LEDGER_FILE).to_string();
        Some(Anchor { records, tip, path })
    }
}

pub fn repo_of(root: &Path) -> Result<(Repo, String), AnchorError> {
    let repo = git::discover(root)
        .ok_or_else(|| AnchorError::NotARepository(root.display().to_string()))?;
    let rel = ledger_in_repo(&repo, root)
        .ok_or_else(|| AnchorError::NotARepository(root.display().to_string()))?;
    Ok((repo, rel))
}

/// The head of the ledger as staged for the next commit (None when it is not staged).
pub fn staged_anchor(root: &Path) -> Result<Option<Anchor>, AnchorError> {
    let (repo, rel) = repo_of(root)?;
    let listing = git::text(&repo.toplevel, &["ls-files", "-s", "--", &rel])?;
    let Some(blob) = listing.split_whitespace().nth(1).filter(|b| git::is_sha(b)) else {
        return Ok(None);
    };
    // The work tree's copy when it is what is staged (no need to inflate the blob).
    let same = git::check(&repo.toplevel, &["diff", "--quiet", "--", &rel])?;
    let file = repo.toplevel.join(&rel);
    let bytes: Vec<u8>;
    let map;
    let data: &[u8] = if same && file.is_file() {
        map = map_file(&std::fs::File::open(&file)?, false)?;
        map.as_deref().unwrap_or(&[])
    } else {
        bytes = git::read_blob(&repo, blob)?;
        &bytes
    };
    Ok(anchor_of(data, &rel))
}

fn anchor_of(data: &[u8], rel: &str) -> Option<Anchor> {
    let lines = chain::split_lines(data);
    let last = lines.last()?;
    Some(Anchor {
        records: lines.len() as u64,
        tip: hex::encode(chain::link_hash(last)),
        path: rel.to_string(),
    })
}

/// Adds (or replaces) the anchor trailer in a commit message file.
pub fn write_trailer(root: &Path, message_file: &Path, anchor: &Anchor) -> Result<(), AnchorError> {
    let (repo, _) = repo_of(root)?;
    let trailer = format!("{TRAILER}: {}", anchor.value());
    let file = message_file.to_string_lossy();
    git::run(
        &repo.toplevel,
        &[
            "interpret-trailers",
            "--in-place",
            "--if-exists",
            "replace",
            "--trailer",
            &trailer,
            &file,
        ],
    )?;
    Ok(())
}

/// One anchor that no longer holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AnchorProblem {
    pub commit: String,
    pub subject: String,
    pub anchor: Anchor,
    pub detail: String,
}

/// A line of the ledger at the range's end that breaks the chain.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct ChainProblem {
    pub line: usize,
    pub detail: String,
}

/// What `verify --git` found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GitVerification {
    pub range: String,
    /// The commit whose ledger was checked (the end of the range).
    pub end: String,
    pub commits: usize,
    /// Anchors checked (in the range, plus the nearest anchored ancestor of its start).
    pub anchors: usize,
    /// Commits in the range that changed the ledger without an anchor (no hook installed).
    pub unanchored: usize,
    /// Records in the ledger at the end.
    pub records: usize,
    /// Lines of the ledger at the end where the chain is broken.
    pub chain_problems: Vec<ChainProblem>,
    pub problems: Vec<AnchorProblem>,
}

impl GitVerification {
    pub fn intact(&self) -> bool {
        self.chain_problems.is_empty() && self.problems.is_empty()
    }
}

/// The range's last commit: `B` of `A..B` or `A...B` (HEAD when empty), or the revision.
pub fn range_end(range: &str) -> &str {
    let end = match range.rsplit_once("..") {
        Some((_, end)) => end.trim_start_matches('.'),
        None => range,
    };
    if end.is_empty() {
        "HEAD"
    } else {
        end
    }
}

struct Commit {
    sha: String,
    subject: String,
    anchors: Vec<Anchor>,
}

fn log(repo: &Repo, args: &[&str]) -> Result<Vec<Commit>, AnchorError> {
    let format =
        format!("--format=%H%x1f%s%x1f%(trailers:key={TRAILER},valueonly,separator=%x1d)%x1e");
    let mut all = vec!["log", "--no-color", format.as_str()];
    all.extend_from_slice(args);
    let out = git::run(&repo.toplevel, &all)?;
    let text = String::from_utf8_lossy(&out);
    Ok(text
        .split('\x1e')
        .filter_map(|entry| {
            let mut parts = entry.trim_start_matches('\n').splitn(3, '\x1f');
            let sha = parts.next()?.trim().to_string();
            if !git::is_sha(&sha) {
                return None;
            }
            let subject = parts.next().unwrap_or("").to_string();
            let anchors = parts
                .next()
                .unwrap_or("")
                .split('\x1d')
                .filter_map(|v| Anchor::parse(v.trim()))
                .collect();
            Some(Commit {
                sha,
                subject,
                anchors,
            })
        })
        .collect())
}

/// The ledger as committed at `rev` (the work tree's copy when it is exactly that).
pub fn ledger_at(repo: &Repo, rev: &str, rel: &str) -> Result<Vec<u8>, AnchorError> {
    let Some((id, size)) = git::blob_at(repo, rev, rel)? else {
        return Ok(Vec::new());
    };
    let file = repo.toplevel.join(rel);
    if let Ok(meta) = std::fs::metadata(&file) {
        if meta.len() == size {
            let bytes = std::fs::read(&file)?;
            if git::blob_id(&bytes, id.len() == 64) == id {
                return Ok(bytes);
            }
        }
    }
    Ok(git::read_blob(repo, &id)?)
}

/// The anchors of the ledger `rel` in `commits`, and (for `A..B`) those of the nearest
/// anchored ancestor of the range's start, which must hold too: (commit, subject, anchor).
fn anchors_of(
    repo: &Repo,
    rel: &str,
    range: &str,
    commits: &[Commit],
) -> Result<Vec<(String, String, Anchor)>, AnchorError> {
    let mut anchored = Vec::new();
    for c in commits {
        for a in c.anchors.iter().filter(|a| a.path == rel) {
            anchored.push((c.sha.clone(), c.subject.clone(), a.clone()));
        }
    }
    if range.contains("..") {
        let boundary = git::text(&repo.toplevel, &["rev-list", "--boundary", range, "--"])?;
        for b in boundary.lines().filter_map(|l| l.strip_prefix('-')) {
            let grep = format!("--grep=^{TRAILER}: ");
            for c in log(repo, &["-1", "-E", &grep, b, "--"])? {
                for a in c.anchors.into_iter().filter(|a| a.path == rel) {
                    anchored.push((c.sha.clone(), c.subject.clone(), a));
                }
            }
        }
    }
    Ok(anchored)
}

/// Lines of a ledger that are not records, edited records, and breaks of the chain.
fn chain_problems(links: &[chain::Link]) -> Vec<ChainProblem> {
    let mut out: Vec<ChainProblem> = Vec::new();
    let mut problem = |line: usize, detail: &str| {
        out.push(ChainProblem {
            line,
            detail: detail.to_string(),
        })
    };
    for (i, l) in links.iter().enumerate() {
        if l.prev.is_none() {
            problem(i + 1, "this line is not a Mandate trace record");
        } else if !l.digest_ok {
            problem(i + 1, "this record was edited after it was written");
        }
    }
    for (i, b) in Chain::check(links).breaks {
        problem(i + 1, b.explain());
    }
    out.sort();
    out
}

/// Checks the anchors of `range` (default: everything reachable from HEAD) against the
/// ledger at its end.
pub fn verify_git(root: &Path, range: Option<&str>) -> Result<GitVerification, AnchorError> {
    let (repo, rel) = repo_of(root)?;
    let range = range.unwrap_or("HEAD").to_string();
    if range.starts_with('-') {
        return Err(AnchorError::BadRange(range));
    }
    let end_spec = format!("{}^{{commit}}", range_end(&range));
    let end = git::text(&repo.toplevel, &["rev-parse", "--verify", "-q", &end_spec])
        .map_err(|_| AnchorError::BadRange(range.clone()))?;
    let commits = log(&repo, &[range.as_str(), "--"]).map_err(|e| match e {
        AnchorError::Git(GitError::Failed { .. }) => AnchorError::BadRange(range.clone()),
        other => other,
    })?;
    let anchored = anchors_of(&repo, &rel, &range, &commits)?;
    let touching: HashSet<String> =
        git::text(&repo.toplevel, &["log", "--format=%H", &range, "--", &rel])?
            .lines()
            .map(str::to_string)
            .collect();
    let unanchored = commits
        .iter()
        .filter(|c| touching.contains(&c.sha) && !c.anchors.iter().any(|a| a.path == rel))
        .count();
    let bytes = ledger_at(&repo, &end, &rel)?;
    let lines = chain::split_lines(&bytes);
    let links = chain::links_of(&lines);
    let chain_problems = chain_problems(&links);
    let wanted: HashSet<[u8; 32]> = anchored
        .iter()
        .filter_map(|(_, _, a)| unhex32(a.tip.as_bytes()))
        .collect();
    let found: HashMap<[u8; 32], usize> = links
        .iter()
        .enumerate()
        .filter(|(_, l)| wanted.contains(&l.hash))
        .map(|(i, l)| (l.hash, i + 1))
        .collect();
    let mut problems = Vec::new();
    let mut seen = HashSet::new();
    for (commit, subject, anchor) in anchored.iter() {
        if !seen.insert((commit.clone(), anchor.tip.clone())) {
            continue;
        }
        let tip = unhex32(anchor.tip.as_bytes()).unwrap_or_default();
        let detail = match found.get(&tip) {
            Some(&line) if (line as u64) < anchor.records => format!(
                "the record this commit anchored (its line {}) is now at line {line}: records before it were removed",
                anchor.records
            ),
            Some(_) => continue,
            None => format!(
                "the ledger at {} no longer holds the record this commit anchored (line {} of its ledger): it was removed or rewritten since",
                short(&end),
                anchor.records
            ),
        };
        problems.push(AnchorProblem {
            commit: commit.clone(),
            subject: subject.clone(),
            anchor: anchor.clone(),
            detail,
        });
    }
    Ok(GitVerification {
        range,
        end,
        commits: commits.len(),
        anchors: seen.len(),
        unanchored,
        records: lines.len(),
        chain_problems,
        problems,
    })
}
