//! From an intent's owned globs to the paths a command may write. The kernel grants rights on
//! whole hierarchies, so each glob becomes the directory that covers it (`src/auth/**` →
//! `src/auth`, `src/*.rs` → `src`); exactness is checked after the command by change detection
//! (`crate::changes`). The workspace root itself is never granted (that would grant `.git/`
//! and `.orchestration/` with it): a glob reaching the root becomes its top-level directories
//! and the root-level files it matches.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use globset::GlobBuilder;

use crate::workspace::protected_reason;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GrantKind {
    /// The directory and everything beneath it.
    Directory,
    /// One existing file, written in place (no rename, no delete).
    File,
}

/// One path a command may write.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Grant {
    pub path: PathBuf,
    pub kind: GrantKind,
}

impl Grant {
    pub fn directory(path: impl Into<PathBuf>) -> Grant {
        Grant {
            path: path.into(),
            kind: GrantKind::Directory,
        }
    }
}

fn has_glob(component: &str) -> bool {
    component.contains(['*', '?', '[', '{', '\\'])
}

/// The writable paths covering `owned_scope` (an intent's globs, as in
/// `active_intents.yaml`) in the workspace `root` (canonical). A literal directory that does
/// not exist yet is covered by its nearest existing parent, never the root: nothing is made
/// here (see [`scope_grants_making`]).
pub fn scope_grants(root: &Path, owned_scope: &[String]) -> Vec<Grant> {
    scope_grants_making(root, owned_scope, &mut |_| false)
}

/// [`scope_grants`], where a literal directory whose nearest existing parent is the root is
/// given to `make` first (a new top-level directory the intent owns): when `make` creates it,
/// it is granted.
pub(super) fn scope_grants_making(
    root: &Path,
    owned_scope: &[String],
    make: &mut dyn FnMut(&Path) -> bool,
) -> Vec<Grant> {
    let mut grants = Vec::new();
    for pattern in owned_scope {
        let trimmed = pattern.trim().trim_start_matches("./");
        if trimmed.is_empty() || trimmed.starts_with('/') || trimmed.split('/').any(|c| c == "..") {
            continue;
        }
        let normalized = match trimmed.strip_suffix('/') {
            Some(dir) => format!("{dir}/**"),
            None => trimmed.to_string(),
        };
        let components: Vec<&str> = normalized.split('/').filter(|c| !c.is_empty()).collect();
        let literal = components.iter().take_while(|c| !has_glob(c)).count();
        if literal == 0 {
            grants.extend(root_level(root, &components, &normalized));
            continue;
        }
        let prefix: PathBuf = components[..literal].iter().collect();
        let all_literal = literal == components.len();
        let mut dir = if all_literal {
            // A literal path: the directory itself, or the directory of the file.
            match std::fs::symlink_metadata(root.join(&prefix)) {
                Ok(meta) if meta.is_dir() => prefix.clone(),
                _ => prefix.parent().map(Path::to_path_buf).unwrap_or_default(),
            }
        } else {
            prefix.clone()
        };
        while !dir.as_os_str().is_empty() && !root.join(&dir).is_dir() {
            let Some(parent) = dir.parent().map(Path::to_path_buf) else {
                break;
            };
            if parent.as_os_str().is_empty() {
                // A new top-level directory the intent owns: made so it can be granted.
                if protected_reason(&dir.to_string_lossy()).is_none() && make(&root.join(&dir)) {
                    break;
                }
            }
            dir = parent;
        }
        if dir.as_os_str().is_empty() {
            // A root-level file: only an existing one, in place.
            if all_literal && root.join(&prefix).is_file() {
                grants.push(Grant {
                    path: root.join(&prefix),
                    kind: GrantKind::File,
                });
            }
            continue;
        }
        grants.push(Grant::directory(root.join(dir)));
    }
    grants.sort_by(|a, b| a.path.cmp(&b.path));
    grants.dedup();
    // A directory inside another granted one adds nothing.
    let dirs: Vec<PathBuf> = grants
        .iter()
        .filter(|g| g.kind == GrantKind::Directory)
        .map(|g| g.path.clone())
        .collect();
    grants.retain(|g| !dirs.iter().any(|d| *d != g.path && g.path.starts_with(d)));
    grants
}

/// A glob whose first component already has a wildcard: the matching top-level directories
/// (all of them for `**`) and the root-level files the whole glob matches.
fn root_level(root: &Path, components: &[&str], pattern: &str) -> Vec<Grant> {
    let Ok(first) = GlobBuilder::new(components[0])
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
    else {
        return Vec::new();
    };
    let Ok(whole) = GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
    else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut grants = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if protected_reason(&name).is_some() {
            continue;
        }
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir()
            && (components[0] == "**" || (components.len() > 1 && first.is_match(&name)))
        {
            grants.push(Grant::directory(entry.path()));
        } else if kind.is_file() && whole.is_match(&name) {
            grants.push(Grant {
                path: entry.path(),
                kind: GrantKind::File,
            });
        }
    }
    grants
}

/// The grant if it is safe to give: inside the workspace, not the workspace itself, not a
/// protected path or inside one, reached without symlinks, and of the kind it says.
pub(super) fn checked_grant(root: &Path, grant: Grant) -> Option<Grant> {
    let rel = grant.path.strip_prefix(root).ok()?;
    if rel.as_os_str().is_empty() || protected_reason(&rel.to_string_lossy()).is_some() {
        return None;
    }
    // Every component must be what it says, not a symlink to elsewhere.
    let mut at = root.to_path_buf();
    for component in rel.components() {
        at.push(component);
        let meta = std::fs::symlink_metadata(&at).ok()?;
        if meta.file_type().is_symlink() {
            return None;
        }
    }
    let meta = std::fs::symlink_metadata(&grant.path).ok()?;
    let right_kind = match grant.kind {
        GrantKind::Directory => meta.is_dir(),
        GrantKind::File => meta.is_file() && meta.nlink() == 1,
    };
    right_kind.then_some(grant)
}
