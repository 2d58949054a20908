//! Git, as the ledger needs it. The write path reads `.git` directly (no `git` process per
//! write): the commit HEAD points at and the branch it is on. Everything else (blob sizes,
//! ancestry, logs, diffs) runs the real `git`, read-only: `GIT_OPTIONAL_LOCKS=0` keeps even
//! `git diff` from refreshing the index behind the user's back.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A repository found from a workspace: the workspace may be its top level or any directory
/// beneath it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repo {
    /// The directory holding `.git` (the work tree's top level).
    pub toplevel: PathBuf,
    /// This work tree's git directory (`.git`, or `.git/worktrees/NAME` for a linked worktree).
    pub git_dir: PathBuf,
    /// Where branches and objects live (the main `.git` for a linked worktree).
    pub common_dir: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("cannot run git ({0}); is it installed?")]
    Spawn(std::io::Error),
    #[error("`git {args}` failed: {message}")]
    Failed { args: String, message: String },
}

/// The repository `root` belongs to, looking upwards as git does (without crossing into
/// another repository above a nested one).
pub fn discover(root: &Path) -> Option<Repo> {
    let start = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let mut dir = Some(start.as_path());
    while let Some(d) = dir {
        if let Some(git_dir) = git_dir_at(d) {
            let common_dir = std::fs::read_to_string(git_dir.join("commondir"))
                .ok()
                .map(|c| git_dir.join(c.trim()))
                .unwrap_or_else(|| git_dir.clone());
            return Some(Repo {
                toplevel: d.to_path_buf(),
                git_dir,
                common_dir,
            });
        }
        dir = d.parent();
    }
    None
}

/// `.git` is a directory, or (worktrees, submodules) a file saying `gitdir: PATH`.
fn git_dir_at(dir: &Path) -> Option<PathBuf> {
    let dot_git = dir.join(".git");
    let meta = std::fs::metadata(&dot_git).ok()?;
    if meta.is_dir() {
        return dot_git.join("HEAD").is_file().then_some(dot_git);
    }
    let text = std::fs::read_to_string(&dot_git).ok()?;
    let target = text.trim().strip_prefix("gitdir:")?.trim();
    let path = Path::new(target);
    Some(if path.is_absolute() {
        path.to_path_buf()
    } else {
        dir.join(path)
    })
}

/// What a ledger head keeps of HEAD, read at one moment from one discovered repository.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeadState {
    /// [`head_key`].
    pub key: String,
    /// [`head_revision`].
    pub commit: Option<String>,
    /// [`reflog_size`] of `key`.
    pub reflog: Option<u64>,
}

/// [`HeadState`] of `repo` (all empty outside a repository).
pub fn head_state(repo: Option<&Repo>) -> HeadState {
    let Some(repo) = repo else {
        return HeadState::default();
    };
    let head = std::fs::read_to_string(repo.git_dir.join("HEAD")).ok();
    let head = head.as_deref().map(str::trim);
    let (key, commit) = match head {
        Some(text) => match text.strip_prefix("ref:") {
            Some(reference) => {
                let reference = reference.trim();
                (reference.to_string(), resolve_ref(repo, reference))
            }
            None => ("HEAD".to_string(), is_sha(text).then(|| text.to_string())),
        },
        None => ("HEAD".to_string(), None),
    };
    let reflog = reflog_path(repo, &key).and_then(|p| std::fs::metadata(p).ok().map(|m| m.len()));
    HeadState {
        key,
        commit,
        reflog,
    }
}

/// Whether `repo`, found earlier from `root`, is still the repository `root` belongs to: its
/// `HEAD` is there, and no `.git` has appeared between `root` and its top level.
pub fn still_holds(repo: &Repo, root: &Path) -> bool {
    if !repo.git_dir.join("HEAD").is_file() {
        return false;
    }
    let mut dir = Some(root);
    while let Some(d) = dir.filter(|d| *d != repo.toplevel && d.starts_with(&repo.toplevel)) {
        if std::fs::symlink_metadata(d.join(".git")).is_ok() {
            return false;
        }
        dir = d.parent();
    }
    true
}

/// The commit HEAD points at, or None outside a repository or on an unborn branch.
pub fn head_revision(root: &Path) -> Option<String> {
    let repo = discover(root)?;
    resolve_head(&repo)
}

/// What HEAD names: `refs/heads/NAME` on a branch, `HEAD` when detached, `""` outside git.
/// The ledger keeps one head per branch under this key.
pub fn head_key(root: &Path) -> String {
    let Some(repo) = discover(root) else {
        return String::new();
    };
    match std::fs::read_to_string(repo.git_dir.join("HEAD")) {
        Ok(text) => match text.trim().strip_prefix("ref:") {
            Some(reference) => reference.trim().to_string(),
            None => "HEAD".into(),
        },
        Err(_) => "HEAD".into(),
    }
}

/// Size of the reflog of what HEAD names (`head_key`): it grows each time the branch moves
/// (a commit, a reset, a rebase), so a head can tell whether the branch moved since.
pub fn reflog_size(root: &Path, key: &str) -> Option<u64> {
    let repo = discover(root)?;
    std::fs::metadata(reflog_path(&repo, key)?)
        .ok()
        .map(|m| m.len())
}

fn reflog_path(repo: &Repo, key: &str) -> Option<PathBuf> {
    if key == "HEAD" {
        Some(repo.git_dir.join("logs/HEAD"))
    } else if key.starts_with("refs/") && !key.contains("..") {
        Some(repo.common_dir.join("logs").join(key))
    } else {
        None
    }
}

pub fn resolve_head(repo: &Repo) -> Option<String> {
    let head = std::fs::read_to_string(repo.git_dir.join("HEAD")).ok()?;
    let head = head.trim();
    match head.strip_prefix("ref:") {
        Some(reference) => resolve_ref(repo, reference.trim()),
        None => is_sha(head).then(|| head.to_string()),
    }
}

/// A ref such as `refs/heads/main`, or a pseudo-ref such as `MERGE_HEAD`, read from files.
pub fn resolve_ref(repo: &Repo, reference: &str) -> Option<String> {
    if reference.contains("..") || reference.starts_with('/') {
        return None;
    }
    for dir in [repo.git_dir.as_path(), repo.common_dir.as_path()] {
        if let Ok(text) = std::fs::read_to_string(dir.join(reference)) {
            // MERGE_HEAD may list several commits (an octopus): the first is enough here.
            let sha = text.lines().next().unwrap_or("").trim();
            if is_sha(sha) {
                return Some(sha.to_string());
            }
        }
        if let Ok(packed) = std::fs::read_to_string(dir.join("packed-refs")) {
            for line in packed.lines() {
                if let Some((sha, name)) = line.split_once(' ') {
                    if name.trim() == reference && is_sha(sha) {
                        return Some(sha.to_string());
                    }
                }
            }
        }
    }
    None
}

/// Commits of operations in progress whose ledger may legitimately be in the work tree now
/// (a merge, cherry-pick, revert or rebase that stopped before its commit).
pub fn operations_in_progress(repo: &Repo) -> Vec<String> {
    [
        "MERGE_HEAD",
        "CHERRY_PICK_HEAD",
        "REVERT_HEAD",
        "REBASE_HEAD",
    ]
    .iter()
    .filter_map(|r| resolve_ref(repo, r))
    .collect()
}

pub fn is_sha(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `path` relative to the repository's top level, with `/` separators.
pub fn repo_path(repo: &Repo, path: &Path) -> Option<String> {
    let abs = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let rel = abs.strip_prefix(&repo.toplevel).ok()?;
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    Some(parts.join("/"))
}

/// A `git` command in `dir`, read-only and with messages in English.
pub fn command(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("LC_ALL", "C")
        .env_remove("GIT_EXTERNAL_DIFF")
        .stdin(Stdio::null());
    cmd
}

/// Runs `git ARGS` in `dir`; its stdout on success.
pub fn run(dir: &Path, args: &[&str]) -> Result<Vec<u8>, GitError> {
    let out = command(dir)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .map_err(GitError::Spawn)?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(GitError::Failed {
            args: args.join(" "),
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// Runs `git ARGS` and reports whether it exited 0 (for `--quiet` and `--is-ancestor` checks);
/// an exit status above 1 is an error.
pub fn check(dir: &Path, args: &[&str]) -> Result<bool, GitError> {
    let out = command(dir)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(GitError::Spawn)?;
    match out.status.code() {
        Some(0) => Ok(true),
        Some(1) => Ok(false),
        _ => Err(GitError::Failed {
            args: args.join(" "),
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        }),
    }
}

/// Text output of `git ARGS`, trimmed.
pub fn text(dir: &Path, args: &[&str]) -> Result<String, GitError> {
    run(dir, args).map(|o| String::from_utf8_lossy(&o).trim().to_string())
}

/// Whether `ancestor` is `commit` or one of its ancestors.
pub fn is_ancestor(repo: &Repo, ancestor: &str, commit: &str) -> Result<bool, GitError> {
    check(
        &repo.toplevel,
        &["merge-base", "--is-ancestor", ancestor, commit],
    )
}

/// The blob id and size of `path` at `rev`, or None when that commit does not have the file.
pub fn blob_at(repo: &Repo, rev: &str, path: &str) -> Result<Option<(String, u64)>, GitError> {
    let spec = format!("{rev}:{path}");
    let id = match text(&repo.toplevel, &["rev-parse", "--verify", "-q", &spec]) {
        Ok(id) if is_sha(&id) => id,
        _ => return Ok(None),
    };
    let size = text(&repo.toplevel, &["cat-file", "-s", &id])?;
    let size = size.parse::<u64>().map_err(|_| GitError::Failed {
        args: format!("cat-file -s {id}"),
        message: format!("unexpected size `{size}`"),
    })?;
    Ok(Some((id, size)))
}

/// The bytes of a blob.
pub fn read_blob(repo: &Repo, id: &str) -> Result<Vec<u8>, GitError> {
    run(&repo.toplevel, &["cat-file", "blob", id])
}

/// Git's object id of `bytes` as a blob (SHA-1, or SHA-256 in a SHA-256 repository), so a
/// prefix of the work tree's ledger can be compared with a committed ledger without reading it.
pub fn blob_id(bytes: &[u8], sha256: bool) -> String {
    let header = format!("blob {}\0", bytes.len());
    if sha256 {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(header.as_bytes());
        h.update(bytes);
        hex::encode(h.finalize())
    } else {
        use sha1::{Digest, Sha1};
        let mut h = Sha1::new();
        h.update(header.as_bytes());
        h.update(bytes);
        hex::encode(h.finalize())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_loose_packed_and_detached_heads() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path();
        assert_eq!(head_revision(root), None);
        let git = root.join(".git");
        std::fs::create_dir_all(git.join("refs/heads")).expect("mkdir");
        std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").expect("w");
        assert_eq!(head_revision(root), None, "unborn branch");
        assert_eq!(head_key(root), "refs/heads/main");
        let sha = "a".repeat(40);
        std::fs::write(
            git.join("packed-refs"),
            format!("# pack-refs\n{sha} refs/heads/main\n"),
        )
        .expect("w");
        assert_eq!(head_revision(root), Some(sha.clone()));
        let loose = "b".repeat(40);
        std::fs::write(git.join("refs/heads/main"), format!("{loose}\n")).expect("w");
        assert_eq!(head_revision(root), Some(loose.clone()));
        // A workspace in a subdirectory belongs to the same repository.
        std::fs::create_dir_all(root.join("sub/dir")).expect("mkdir");
        assert_eq!(head_revision(&root.join("sub/dir")), Some(loose));
        std::fs::write(git.join("HEAD"), format!("{sha}\n")).expect("w");
        assert_eq!(head_revision(root), Some(sha));
        assert_eq!(head_key(root), "HEAD");
    }

    #[test]
    fn a_repository_found_once_is_found_again_when_it_no_longer_holds() {
        let tmp = tempfile::tempdir().expect("tmp");
        let top = tmp.path().canonicalize().expect("canonical");
        let fake = |dir: &Path, branch: &str| {
            let git = dir.join(".git");
            std::fs::create_dir_all(git.join("refs/heads")).expect("mkdir");
            std::fs::write(git.join("HEAD"), format!("ref: refs/heads/{branch}\n")).expect("w");
        };
        fake(&top, "main");
        let ws = top.join("sub/ws");
        std::fs::create_dir_all(&ws).expect("mkdir");
        let ledger = crate::orchestration::ledger::Ledger::with_data_dir(&ws, &top.join("data"));
        let found = ledger.repo().expect("the parent's repository");
        assert_eq!(found.toplevel, top);
        assert_eq!(head_state(Some(&found)).key, "refs/heads/main");
        // The person makes the workspace a repository of its own: that one holds from now.
        fake(&ws, "work");
        assert!(!still_holds(&found, &ws));
        let now = ledger.repo().expect("its own repository");
        assert_eq!(now.toplevel, ws);
        assert_eq!(head_state(Some(&now)).key, "refs/heads/work");
        // And when it goes, the parent's again.
        std::fs::remove_dir_all(ws.join(".git")).expect("rm");
        assert_eq!(ledger.repo().map(|r| r.toplevel), Some(top));
        assert_eq!(head_state(None), HeadState::default());
    }

    #[test]
    fn blob_ids_match_git() {
        // `printf 'hello\n' | git hash-object --stdin`
        assert_eq!(
            blob_id(b"hello\n", false),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
    }
}
