//! The current git revision, read from `.git` directly: no `git` process per write.

use std::path::{Path, PathBuf};

/// The commit HEAD points at, or None outside a repository or on an unborn branch.
pub fn head_revision(root: &Path) -> Option<String> {
    let git_dir = git_dir(root)?;
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    let head = head.trim();
    match head.strip_prefix("ref:") {
        Some(reference) => resolve_ref(&git_dir, reference.trim()),
        None => is_sha(head).then(|| head.to_string()),
    }
}

/// `.git` is a directory, or (worktrees, submodules) a file saying `gitdir: PATH`.
fn git_dir(root: &Path) -> Option<PathBuf> {
    let dot_git = root.join(".git");
    let meta = std::fs::metadata(&dot_git).ok()?;
    if meta.is_dir() {
        return Some(dot_git);
    }
    let text = std::fs::read_to_string(&dot_git).ok()?;
    let target = text.trim().strip_prefix("gitdir:")?.trim();
    let path = Path::new(target);
    Some(if path.is_absolute() {
        path.to_path_buf()
    } else {
        root.join(path)
    })
}

fn resolve_ref(git_dir: &Path, reference: &str) -> Option<String> {
    if reference.contains("..") {
        return None;
    }
    // Linked worktrees keep branch refs in the common directory.
    let common = std::fs::read_to_string(git_dir.join("commondir"))
        .ok()
        .map(|c| git_dir.join(c.trim()))
        .unwrap_or_else(|| git_dir.to_path_buf());
    for dir in [git_dir, common.as_path()] {
        if let Ok(text) = std::fs::read_to_string(dir.join(reference)) {
            let sha = text.trim();
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

fn is_sha(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
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
        let sha = "a".repeat(40);
        std::fs::write(
            git.join("packed-refs"),
            format!("# pack-refs\n{sha} refs/heads/main\n"),
        )
        .expect("w");
        assert_eq!(head_revision(root), Some(sha.clone()));
        let loose = "b".repeat(40);
        std::fs::write(git.join("refs/heads/main"), format!("{loose}\n")).expect("w");
        assert_eq!(head_revision(root), Some(loose));
        std::fs::write(git.join("HEAD"), format!("{sha}\n")).expect("w");
        assert_eq!(head_revision(root), Some(sha));
    }
}
