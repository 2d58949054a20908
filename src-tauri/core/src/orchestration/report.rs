//! `mandate trace report RANGE`: for a pull request, per intent, which files and lines agents
//! changed, with which models, approved how, and what was undone; and coverage: of the lines
//! added in the range, how many carry an agent record and how many carry none (written by
//! people, or by tools that record nothing).
//!
//! RANGE is `BASE..END` (or `BASE...END`; a single revision R means `R..HEAD`). The lines added
//! are those of `git diff $(git merge-base BASE END) END`, outside `.orchestration/`. The
//! records of the range are the ledger lines at END that the ledger at the merge base does not
//! hold. A line added in the range counts as an agent's when a record of the range covers it
//! now (by its content hash, wherever the line moved within the file).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, Read, Write};
use std::path::Path;
use std::process::Stdio;

use serde::Serialize;

use super::anchor::{ledger_at, range_end, repo_of, Anchor, AnchorError, TRAILER};
use super::chain;
use super::git::{self, Repo};
use super::ledger::{content_hash_bytes, TextLines};
use super::record::TraceRecord;
use super::trace::find_block;

pub const REPORT_SCHEMA: &str = "mandate.trace.report/1";

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Count {
    pub name: String,
    pub records: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct IntentFile {
    pub path: String,
    /// Lines added in the range that this intent's records cover now.
    pub agent_lines: usize,
    /// Lines the intent's records of the range name (at the time of each change).
    pub recorded_lines: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct IntentReport {
    pub intent_id: String,
    pub records: usize,
    pub files: Vec<IntentFile>,
    pub models: Vec<Count>,
    /// Who approved: `user`, `policy`, `headless`.
    pub approvals: Vec<Count>,
    /// Changes a person edited before accepting them.
    pub edited_by_people: usize,
    pub rejected_hunks: usize,
    /// Ids of the records this intent's undo records reverted.
    pub undos: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FileLines {
    pub path: String,
    pub lines: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Coverage {
    pub added_lines: usize,
    /// Added lines a record of the range covers.
    pub agent_lines: usize,
    /// Added lines no record covers.
    pub unrecorded_lines: usize,
    /// agent_lines / added_lines, in percent (100 when nothing was added).
    pub percent: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceReport {
    pub schema: &'static str,
    pub range: String,
    pub base: String,
    pub end: String,
    pub commits: usize,
    pub records: usize,
    pub intents: Vec<IntentReport>,
    /// Added lines no agent record covers, per file.
    pub unrecorded: Vec<FileLines>,
    pub coverage: Coverage,
}

/// Splits RANGE into (base revision, end revision).
fn split_range(range: &str) -> Result<(String, String), AnchorError> {
    if range.is_empty() || range.starts_with('-') {
        return Err(AnchorError::BadRange(range.to_string()));
    }
    let end = range_end(range).to_string();
    let base = match range.split_once("..") {
        Some(("", _)) => "HEAD".to_string(),
        Some((base, _)) => base.to_string(),
        None => return Ok((range.to_string(), "HEAD".to_string())),
    };
    Ok((base, end))
}

fn rev(repo: &Repo, spec: &str, range: &str) -> Result<String, AnchorError> {
    let spec = format!("{spec}^{{commit}}");
    git::text(&repo.toplevel, &["rev-parse", "--verify", "-q", &spec])
        .map_err(|_| AnchorError::BadRange(range.to_string()))
}

pub fn report(root: &Path, range: &str) -> Result<TraceReport, AnchorError> {
    let (repo, rel) = repo_of(root)?;
    let (base_spec, end_spec) = split_range(range)?;
    let end = rev(&repo, &end_spec, range)?;
    let tip = rev(&repo, &base_spec, range)?;
    let base = git::text(&repo.toplevel, &["merge-base", &tip, &end])
        .map_err(|_| AnchorError::BadRange(range.to_string()))?;
    let commits = git::text(
        &repo.toplevel,
        &["rev-list", "--count", &format!("{base}..{end}")],
    )?
    .parse()
    .unwrap_or(0);
    let ledger = ledger_at(&repo, &end, &rel)?;
    let records = new_records(&repo, &base, &rel, &ledger)?;
    let orchestration = rel.trim_end_matches("agent_trace.jsonl").to_string();
    let added = added_lines(&repo, &base, &end, &orchestration)?;
    let contents = contents_at(&repo, &end, added.keys())?;

    let mut intents: BTreeMap<String, IntentReport> = BTreeMap::new();
    let mut by_path: HashMap<&str, Vec<(usize, &TraceRecord)>> = HashMap::new();
    for (n, r) in records.iter().enumerate() {
        let intent_id = r.intent_id().unwrap_or("(none)").to_string();
        let entry = intents
            .entry(intent_id.clone())
            .or_insert_with(|| IntentReport {
                intent_id,
                ..IntentReport::default()
            });
        tally(entry, r);
        for f in &r.files {
            by_path.entry(&f.path).or_default().push((n, r));
        }
    }
    let mut coverage = Coverage::default();
    let mut unrecorded = Vec::new();
    let mut agent: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (path, lines_added) in &added {
        let text = contents.get(path).map(String::as_str).unwrap_or("");
        let lines = TextLines::new(text);
        let owners = attribute(
            &lines,
            path,
            by_path.get(path.as_str()).map(Vec::as_slice).unwrap_or(&[]),
        );
        let mut none = 0;
        for &l in lines_added {
            coverage.added_lines += 1;
            match owners.get(l.saturating_sub(1)).and_then(|o| o.as_ref()) {
                Some(intent) => {
                    coverage.agent_lines += 1;
                    *agent.entry((intent.clone(), path.clone())).or_default() += 1;
                }
                None => none += 1,
            }
        }
        if none > 0 {
            coverage.unrecorded_lines += none;
            unrecorded.push(FileLines {
                path: path.clone(),
                lines: none,
            });
        }
    }
    coverage.percent = if coverage.added_lines == 0 {
        100.0
    } else {
        (coverage.agent_lines as f64 * 1000.0 / coverage.added_lines as f64).round() / 10.0
    };
    for ((intent, path), n) in agent {
        if let Some(i) = intents.get_mut(&intent) {
            match i.files.iter_mut().find(|f| f.path == path) {
                Some(f) => f.agent_lines = n,
                None => i.files.push(IntentFile {
                    path,
                    agent_lines: n,
                    recorded_lines: 0,
                }),
            }
        }
    }
    let mut intents: Vec<IntentReport> = intents.into_values().collect();
    for i in &mut intents {
        i.files.sort_by(|a, b| a.path.cmp(&b.path));
    }
    Ok(TraceReport {
        schema: REPORT_SCHEMA,
        range: range.to_string(),
        base,
        end,
        commits,
        records: records.len(),
        intents,
        unrecorded,
        coverage,
    })
}

fn bump(counts: &mut Vec<Count>, name: &str) {
    match counts.iter_mut().find(|c| c.name == name) {
        Some(c) => c.records += 1,
        None => counts.push(Count {
            name: name.to_string(),
            records: 1,
        }),
    }
}

fn tally(i: &mut IntentReport, r: &TraceRecord) {
    i.records += 1;
    let approval = r.approval();
    bump(
        &mut i.approvals,
        approval.map_or("unknown", |a| a.by.as_str()),
    );
    if approval.is_some_and(|a| a.edited) {
        i.edited_by_people += 1;
    }
    i.rejected_hunks += approval.map_or(0, |a| a.rejected_hunks.len());
    i.undos.extend(r.revert_of().iter().cloned());
    let mut models = HashSet::new();
    for f in &r.files {
        let mut recorded = 0;
        for c in &f.conversations {
            if let Some(m) = c.contributor.as_ref().and_then(|c| c.model_id.as_ref()) {
                models.insert(m.clone());
            }
            for range in &c.ranges {
                recorded += range.end_line.saturating_sub(range.start_line) as usize + 1;
            }
        }
        match i.files.iter_mut().find(|x| x.path == f.path) {
            Some(x) => x.recorded_lines += recorded,
            None => i.files.push(IntentFile {
                path: f.path.clone(),
                agent_lines: 0,
                recorded_lines: recorded,
            }),
        }
    }
    for m in models {
        bump(&mut i.models, &m);
    }
}

/// Which intent's record (of the range) covers each line now: newest record first, each line
/// claimed once, a record's block looked for at its recorded place, then nearest to it.
fn attribute(
    lines: &TextLines<'_>,
    path: &str,
    records: &[(usize, &TraceRecord)],
) -> Vec<Option<String>> {
    let mut owners: Vec<Option<String>> = vec![None; lines.lines.len()];
    for (_, r) in records.iter().rev() {
        let intent = r.intent_id().unwrap_or("(none)");
        for f in r.files.iter().filter(|f| f.path == path) {
            for (_, range) in f.ranges() {
                let (s, e) = (range.start_line, range.end_line);
                let Some(want) = range.content_hash.as_deref().and_then(content_hash_bytes) else {
                    continue;
                };
                if s == 0 || e < s {
                    continue;
                }
                let n = (e - s + 1) as usize;
                let claimed = |at: usize| owners[at..at + n].iter().all(Option::is_some);
                if let Some(at) = find_block(lines, s as usize - 1, n, &want, &claimed) {
                    for o in owners.iter_mut().skip(at).take(n) {
                        if o.is_none() {
                            *o = Some(intent.to_string());
                        }
                    }
                }
            }
        }
    }
    owners
}

/// The records at END that the ledger at BASE does not hold, oldest first.
fn new_records(
    repo: &Repo,
    base: &str,
    rel: &str,
    ledger: &[u8],
) -> Result<Vec<TraceRecord>, AnchorError> {
    let lines = chain::split_lines(ledger);
    let old = old_lines(repo, base, rel, ledger, &lines)?;
    Ok(lines
        .iter()
        .enumerate()
        .filter(|(i, l)| !old.contains(*i, l))
        .filter_map(|(_, l)| TraceRecord::from_line(l))
        .filter(|r| !r.files.is_empty())
        .collect())
}

/// Which lines of the ledger at END the ledger at BASE already had.
enum Old {
    /// The first N lines.
    Prefix(usize),
    Hashes(HashSet<[u8; 32]>),
}

impl Old {
    fn contains(&self, i: usize, line: &[u8]) -> bool {
        match self {
            Old::Prefix(n) => i < *n,
            Old::Hashes(set) => set.contains(&chain::link_hash(line)),
        }
    }
}

fn old_lines(
    repo: &Repo,
    base: &str,
    rel: &str,
    ledger: &[u8],
    lines: &[&[u8]],
) -> Result<Old, AnchorError> {
    // The anchor at BASE, when its line is where it was: everything up to it is old.
    let format = format!("--format=%(trailers:key={TRAILER},valueonly)");
    let text = git::text(&repo.toplevel, &["log", "-1", &format, base, "--"])?;
    for anchor in text.lines().filter_map(|l| Anchor::parse(l.trim())) {
        if anchor.path != rel {
            continue;
        }
        let at = anchor.records as usize;
        if at >= 1
            && at <= lines.len()
            && hex::encode(chain::link_hash(lines[at - 1])) == anchor.tip
        {
            return Ok(Old::Prefix(at));
        }
    }
    let Some((id, size)) = git::blob_at(repo, base, rel)? else {
        return Ok(Old::Prefix(0));
    };
    let size = size as usize;
    if size <= ledger.len() && git::blob_id(&ledger[..size], id.len() == 64) == id {
        return Ok(Old::Prefix(
            memchr::memchr_iter(b'\n', &ledger[..size]).count(),
        ));
    }
    let bytes = git::read_blob(repo, &id)?;
    Ok(Old::Hashes(
        chain::split_lines(&bytes)
            .iter()
            .map(|l| chain::link_hash(l))
            .collect(),
    ))
}

/// Lines added between BASE and END (new line numbers), per file, outside `.orchestration/`.
fn added_lines(
    repo: &Repo,
    base: &str,
    end: &str,
    orchestration: &str,
) -> Result<BTreeMap<String, Vec<usize>>, AnchorError> {
    let exclude = format!(":(exclude){orchestration}");
    let out = git::run(
        &repo.toplevel,
        &[
            "-c",
            "core.quotePath=false",
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-renames",
            "--unified=0",
            base,
            end,
            "--",
            ".",
            &exclude,
        ],
    )?;
    let mut files: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in out.split(|b| *b == b'\n') {
        if let Some(path) = line.strip_prefix(b"+++ ") {
            let path = String::from_utf8_lossy(path);
            current = path.strip_prefix("b/").map(|p| unquote(p.trim_end()));
        } else if line.starts_with(b"@@ ") {
            let Some(path) = &current else { continue };
            if let Some((start, count)) = hunk_added(line) {
                files
                    .entry(path.clone())
                    .or_default()
                    .extend(start..start + count);
            }
        }
    }
    files.retain(|_, v| !v.is_empty());
    Ok(files)
}

fn unquote(path: &str) -> String {
    path.trim_matches('"').to_string()
}

/// `@@ -a,b +c,d @@`: (c, d), with d = 1 when omitted.
fn hunk_added(line: &[u8]) -> Option<(usize, usize)> {
    let text = std::str::from_utf8(line).ok()?;
    let plus = text.split_whitespace().find(|w| w.starts_with('+'))?;
    let spec = &plus[1..];
    let (start, count) = match spec.split_once(',') {
        Some((s, c)) => (s.parse().ok()?, c.parse().ok()?),
        None => (spec.parse().ok()?, 1),
    };
    Some((start, count))
}

/// A write to a closed pipe on this thread fails with EPIPE and raises no signal (a blocked
/// signal a thread raised on itself is dropped when the thread ends).
fn block_sigpipe_on_this_thread() {
    // SAFETY: plain signal-mask calls on a set owned here.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// The text of `paths` at END, in one `git cat-file --batch`.
fn contents_at<'a>(
    repo: &Repo,
    end: &str,
    paths: impl Iterator<Item = &'a String>,
) -> Result<HashMap<String, String>, AnchorError> {
    let paths: Vec<&String> = paths.collect();
    let mut child = git::command(&repo.toplevel)
        .args(["cat-file", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| AnchorError::Git(git::GitError::Spawn(e)))?;
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| std::io::Error::other("no stdin"))?;
    let specs: Vec<String> = paths.iter().map(|p| format!("{end}:{p}\n")).collect();
    let writer = std::thread::spawn(move || {
        // git gone early fails the write here rather than ending Mandate (`mandate trace`
        // leaves SIGPIPE its default action).
        block_sigpipe_on_this_thread();
        for s in specs {
            if stdin.write_all(s.as_bytes()).is_err() {
                break;
            }
        }
    });
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| std::io::Error::other("no stdout"))?;
    let mut reader = std::io::BufReader::new(stdout);
    let mut out = HashMap::new();
    for path in paths {
        let mut header = String::new();
        reader.read_line(&mut header)?;
        let parts: Vec<&str> = header.split_whitespace().collect();
        let size = match parts.as_slice() {
            [_, "blob", size] => size.parse::<usize>().unwrap_or(0),
            _ => continue,
        };
        let mut body = vec![0u8; size + 1];
        reader.read_exact(&mut body)?;
        body.pop();
        out.insert(path.clone(), String::from_utf8_lossy(&body).into_owned());
    }
    let _ = writer.join();
    let _ = child.wait();
    Ok(out)
}

/// The report as Markdown, ready to paste into a pull request.
pub fn markdown(r: &TraceReport) -> String {
    let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let mut out = format!(
        "## Agent trace: `{}` ({} commits, {} records)\n\n",
        cell(&r.range),
        r.commits,
        r.records
    );
    out.push_str(&format!(
        "**Coverage:** {} of {} added lines ({}%) carry an agent record; {} carry none.\n\n",
        r.coverage.agent_lines,
        r.coverage.added_lines,
        r.coverage.percent,
        r.coverage.unrecorded_lines
    ));
    if !r.intents.is_empty() {
        out.push_str("| intent | records | files | lines by agents | models | approvals | undos |\n|---|---|---|---|---|---|---|\n");
        let list = |c: &[Count]| {
            c.iter()
                .map(|c| format!("{} ({})", cell(&c.name), c.records))
                .collect::<Vec<_>>()
                .join(", ")
        };
        for i in &r.intents {
            let mut approvals = list(&i.approvals);
            if i.edited_by_people > 0 {
                approvals.push_str(&format!("; {} edited by a person", i.edited_by_people));
            }
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} |\n",
                cell(&i.intent_id),
                i.records,
                i.files.len(),
                i.files.iter().map(|f| f.agent_lines).sum::<usize>(),
                list(&i.models),
                approvals,
                i.undos.len()
            ));
        }
        out.push('\n');
        for i in &r.intents {
            out.push_str(&format!("### {}\n\n", cell(&i.intent_id)));
            for f in &i.files {
                out.push_str(&format!(
                    "- `{}`: {} added lines by agents now ({} lines recorded)\n",
                    cell(&f.path),
                    f.agent_lines,
                    f.recorded_lines
                ));
            }
            out.push('\n');
        }
    }
    if !r.unrecorded.is_empty() {
        out.push_str(
            "### Added lines with no agent record (people, or tools that record nothing)\n\n",
        );
        for f in &r.unrecorded {
            out.push_str(&format!("- `{}`: {} lines\n", cell(&f.path), f.lines));
        }
        out.push('\n');
    }
    out
}
