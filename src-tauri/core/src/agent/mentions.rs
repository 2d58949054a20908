//! The person's context in a message: `@path` (a file's text, a folder's listing),
//! `@git-changes` (the working tree's diff), `@<commit>` (a commit by hash) and `@problems` (the
//! syntax errors of the files changed in the working tree, and what the project's last check
//! found). What a mention attaches goes to the model with the message, sized, and counted
//! against the window. A file `.gitignore` or `.intentignore` leaves out, or one Mandate
//! protects, is refused, as is anything outside the workspace.

use std::path::Path;

use crate::protocol::MentionView;
use crate::workspace::{protected_reason, Workspace};

/// A file larger than this is not attached (read it with its line ranges instead).
const MAX_FILE_BYTES: usize = 200 * 1024;
/// A diff or a commit is cut at this size.
const MAX_GIT_BYTES: usize = 200 * 1024;
/// What a web address attaches until the message is sent.
const NOT_FETCHED_YET: &str = "(fetched when the message is sent)";
/// A folder lists at most this many entries.
const MAX_LISTED: usize = 300;

/// Why a mention cannot be attached (or a message with it cannot go), in words for the person.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

impl From<String> for Refused {
    fn from(why: String) -> Self {
        Self(why)
    }
}

/// What one mention attaches, or why it cannot.
#[derive(Debug, Clone, PartialEq)]
pub struct Attached {
    pub mention: String,
    pub text: Result<String, Refused>,
}

impl Attached {
    /// Estimated tokens (4 characters a token).
    pub fn tokens(&self) -> u64 {
        self.text
            .as_ref()
            .map_or(0, |t| (t.len() as u64).div_ceil(4))
    }

    pub fn view(&self) -> MentionView {
        MentionView {
            mention: self.mention.clone(),
            tokens: self.tokens(),
            error: self.text.as_ref().err().map(|r| r.0.clone()),
        }
    }
}

/// The `@` mentions of a message, in order, each once: an `@` at the start or after a space,
/// up to the next space (trailing punctuation dropped).
pub fn mentions_in(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        let Some(rest) = word.strip_prefix('@') else {
            continue;
        };
        let rest = rest.trim_end_matches(['.', ',', ';', ':', ')', '?', '!', '"', '\'']);
        if !rest.is_empty() && !out.iter().any(|m| m == rest) {
            out.push(rest.to_string());
        }
    }
    out
}

/// Everything the message mentions, attached or refused. An `@word` that names nothing (no
/// such file, folder or commit) is left as text. `last_check`: what the project's last check
/// found, in words (`ProjectCheck::last_text`), which `@problems` adds.
pub fn attach_all(
    workspace: &Workspace,
    ignore: &crate::hooks::ignore_list::IntentIgnore,
    last_check: Option<&str>,
    text: &str,
) -> Vec<Attached> {
    mentions_in(text)
        .into_iter()
        .filter_map(|mention| {
            let text = attach(workspace, ignore, last_check, &mention)?;
            Some(Attached { mention, text })
        })
        .collect()
}

fn attach(
    workspace: &Workspace,
    ignore: &crate::hooks::ignore_list::IntentIgnore,
    last_check: Option<&str>,
    mention: &str,
) -> Option<Result<String, Refused>> {
    let root = workspace.root();
    let diff = [
        "diff",
        "HEAD",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
    ];
    Some(match mention {
        "git-changes" => git(root, &diff).map(|d| {
            if d.trim().is_empty() {
                "(no changes in the working tree)".to_string()
            } else {
                d
            }
        }),
        "problems" => Ok(match last_check {
            Some(checked) => format!("{}\n\n{checked}", problems(root)),
            None => problems(root),
        }),
        // Fetched when the message is sent (`checked`), never while the person types.
        url if super::fetch_url::is_url(url) => Ok(NOT_FETCHED_YET.into()),
        hash if is_commit(hash) && !root.join(hash).exists() => {
            let show = [
                "show",
                "--no-color",
                "--no-ext-diff",
                "--no-textconv",
                "--stat",
                "--patch",
                hash,
                "--",
            ];
            // Hex that is no commit here is a word like any other.
            git(root, &show).ok()?;
            git(root, &show)
        }
        path => file_or_folder(workspace, ignore, path)?,
    })
}

fn is_commit(s: &str) -> bool {
    (7..=40).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `git ARGS` in the workspace, read-only: no external diff, no text conversion, no file
/// system monitor.
fn git(root: &Path, args: &[&str]) -> Result<String, Refused> {
    let mut all = vec!["-c", "core.fsmonitor=false", "-c", "core.quotePath=false"];
    all.extend_from_slice(args);
    let out = crate::orchestration::git::run(root, &all).map_err(|e| {
        Refused(match e {
            crate::orchestration::git::GitError::Failed { message, .. } => {
                format!("git could not say: {message}")
            }
            other => other.to_string(),
        })
    })?;
    let mut text = String::from_utf8_lossy(&out).into_owned();
    if text.len() > MAX_GIT_BYTES {
        let cut = crate::text::first_chars(&text, MAX_GIT_BYTES).len();
        text.truncate(cut);
        text.push_str("\n… (cut: too long to attach whole)");
    }
    Ok(text)
}

/// The syntax errors of the files changed in the working tree (by git), or of none.
fn problems(root: &Path) -> String {
    let changed = crate::orchestration::git::run(
        root,
        &[
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.quotePath=false",
            "status",
            "--porcelain",
            "--untracked-files=all",
        ],
    )
    .map(|o| String::from_utf8_lossy(&o).into_owned())
    .unwrap_or_default();
    let mut out = String::new();
    for line in changed.lines() {
        let Some(path) = line.get(3..) else { continue };
        let path = path.rsplit(" -> ").next().unwrap_or(path);
        let Ok(text) = std::fs::read_to_string(root.join(path)) else {
            continue;
        };
        let found = crate::code::syntax_problems(path, &text);
        if !found.is_empty() {
            out.push_str(&format!(
                "{path}:\n{}\n",
                crate::code::describe_problems(&found)
            ));
        }
    }
    if out.is_empty() {
        out.push_str("No syntax errors in the files changed in the working tree.");
    }
    out
}

/// A file's text or a folder's listing; None when `path` names nothing in the workspace.
fn file_or_folder(
    workspace: &Workspace,
    ignore: &crate::hooks::ignore_list::IntentIgnore,
    path: &str,
) -> Option<Result<String, Refused>> {
    let resolved = match workspace.resolve(path) {
        Ok(r) if r.abs.exists() => r,
        Ok(_) => return None,
        // Outside the workspace, through a link or `..`: named, and refused.
        Err(e) => {
            return workspace
                .root()
                .join(path)
                .exists()
                .then(|| Err(Refused(format!("`{path}`: {e}"))))
        }
    };
    Some(attach_path(workspace, ignore, resolved))
}

fn attach_path(
    workspace: &Workspace,
    ignore: &crate::hooks::ignore_list::IntentIgnore,
    resolved: crate::workspace::ResolvedPath,
) -> Result<String, Refused> {
    let rel = resolved.rel.trim_end_matches('/').to_string();
    if let Some(reason) = protected_reason(&rel) {
        return Err(Refused(format!(
            "{rel} is protected ({reason}); it cannot be attached"
        )));
    }
    if let Some(reason) = ignore.why(&rel) {
        return Err(Refused(format!("{rel} is left out: {reason}")));
    }
    if !rel.is_empty() && !listed_by_walk(workspace.root(), &rel) {
        return Err(Refused(format!("{rel} is ignored (`.gitignore`)")));
    }
    if resolved.abs.is_dir() {
        let (entries, total) =
            crate::tools::walk::list(&resolved, false, MAX_LISTED).map_err(|e| e.to_string())?;
        let mut text = format!(
            "Folder {}:\n{}",
            if rel.is_empty() { "." } else { &rel },
            entries.join("\n")
        );
        if total > entries.len() {
            text.push_str(&format!("\n… and {} more", total - entries.len()));
        }
        return Ok(text);
    }
    let bytes = std::fs::read(&resolved.abs).map_err(|e| format!("cannot read {rel}: {e}"))?;
    if bytes.len() > MAX_FILE_BYTES {
        return Err(Refused(format!(
            "{rel} is {} KiB, more than {} KiB: ask for the parts you need instead",
            bytes.len() / 1024,
            MAX_FILE_BYTES / 1024
        )));
    }
    if bytes.iter().take(8192).any(|b| *b == 0) {
        return Err(Refused(format!("{rel} is a binary file")));
    }
    Ok(format!("File {rel}:\n{}", String::from_utf8_lossy(&bytes)))
}

/// Whether the walk (which honours `.gitignore` at every level) lists `rel` in its folder.
fn listed_by_walk(root: &Path, rel: &str) -> bool {
    let (parent, _) = rel.rsplit_once('/').unwrap_or(("", rel));
    let dir = crate::workspace::ResolvedPath {
        abs: root.join(parent),
        rel: parent.to_string(),
    };
    crate::tools::walk::list(&dir, false, usize::MAX)
        .map(|(entries, _)| entries.iter().any(|e| e.trim_end_matches('/') == rel))
        .unwrap_or(false)
}

/// What an `@` may name, for the message box: `git-changes` and `problems` when they match,
/// then the workspace's folders and files whose path contains `query` (case-insensitive),
/// shortest paths and names starting with it first; at most 30.
pub fn mentionables(root: &Path, query: &str) -> Vec<String> {
    let q = query.trim().trim_start_matches('@').to_lowercase();
    let mut out: Vec<String> = ["git-changes", "problems"]
        .into_iter()
        .filter(|s| s.starts_with(&q))
        .map(str::to_string)
        .collect();
    let top = crate::workspace::ResolvedPath {
        abs: root.to_path_buf(),
        rel: String::new(),
    };
    let files = crate::tools::walk::list(&top, true, 200_000)
        .map(|l| l.0)
        .unwrap_or_default();
    let mut folders = std::collections::BTreeSet::new();
    for f in &files {
        let mut at = f.as_str();
        while let Some((parent, _)) = at.rsplit_once('/') {
            folders.insert(format!("{parent}/"));
            at = parent;
        }
    }
    let mut found: Vec<&str> = folders
        .iter()
        .map(String::as_str)
        .chain(files.iter().map(String::as_str))
        .filter(|p| !p.starts_with(".orchestration/") && p.to_lowercase().contains(&q))
        .collect();
    let name_starts = |p: &str| {
        let name = p.trim_end_matches('/').rsplit('/').next().unwrap_or(p);
        !name.to_lowercase().starts_with(&q)
    };
    found.sort_by(|a, b| (name_starts(a), a.len(), *a).cmp(&(name_starts(b), b.len(), *b)));
    out.extend(found.into_iter().take(30).map(str::to_string));
    out
}

/// What the message's mentions attach, as the model reads them with it; the refusal, in words
/// for the person, when one cannot be attached or all together would take more than half of
/// the model's window. A web address is fetched only in a message the person wrote
/// (`by_person`); in one a model wrote (a subtask's first message) it stays words.
pub(super) async fn checked(
    env: &super::AgentEnv,
    text: &str,
    by_person: bool,
) -> Result<Option<String>, Refused> {
    if mentions_in(text).is_empty() {
        return Ok(None);
    }
    let (gov, owned) = (env.gov.clone(), text.to_string());
    let attached = tokio::task::spawn_blocking(move || {
        let ignore = gov.ignore().unwrap_or_else(|_| {
            std::sync::Arc::new(crate::hooks::ignore_list::IntentIgnore::empty())
        });
        let last_check = gov.project_check.last_text();
        attach_all(&gov.workspace, &ignore, last_check.as_deref(), &owned)
    })
    .await
    .map_err(|e| Refused(format!("the mentions could not be read: {e}")))?;
    let mut attached = attached;
    if !by_person {
        attached.retain(|a| !super::fetch_url::is_url(&a.mention));
    }
    for a in attached
        .iter_mut()
        .filter(|a| super::fetch_url::is_url(&a.mention))
    {
        a.text = super::fetch_url::fetch_text(&a.mention).await;
    }
    let refused: Vec<String> = attached
        .iter()
        .filter_map(|a| {
            a.text
                .as_ref()
                .err()
                .map(|why| format!("@{}: {why}", a.mention))
        })
        .collect();
    if !refused.is_empty() {
        return Err(Refused(format!(
            "The message was not sent: {}. Remove the mention or name another file.",
            refused.join("; ")
        )));
    }
    let total: u64 = attached.iter().map(Attached::tokens).sum();
    let usable = super::context_steps::window(env).await.usable_input();
    if total > usable / 2 {
        return Err(Refused(format!(
            "The message was not sent: its mentions attach about {total} tokens, more than half of what the model can read ({usable}). Mention fewer or smaller files."
        )));
    }
    Ok(as_context(&attached))
}

/// The attachments as the model reads them with the message.
pub fn as_context(attached: &[Attached]) -> Option<String> {
    let parts: Vec<String> = attached
        .iter()
        .filter_map(|a| {
            a.text
                .as_ref()
                .ok()
                .map(|t| format!("<mention name=\"@{}\">\n{t}\n</mention>", a.mention))
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n"))
}

#[cfg(test)]
#[path = "mentions_tests.rs"]
mod tests;
