//! What is kept of the workspace before a process that may change it out of scope, so that
//! the change can be undone: copies of the protected files (Mandate's own, the person's hooks
//! and MCP servers, the repository's `.git/` configuration) and of every nested repository's
//! `.git` but its objects, and the files the checkpoint store holds.

use std::collections::HashMap;

use super::{real_path, EntryKind, Snapshot};

/// Files up to this size are copied whole; all copies together stay under `MAX_COPIED`.
const MAX_COPY: u64 = 4 * 1024 * 1024;
const MAX_COPIED: u64 = 64 * 1024 * 1024;

/// What is known of the workspace before a command, beyond its metadata.
#[derive(Debug, Clone, Default)]
pub struct BeforeImages {
    pub(super) copies: HashMap<String, Vec<u8>>,
    /// Larger protected files: their length and the hash of their content.
    pub(super) prefixes: HashMap<String, (u64, String)>,
    /// What could not be kept, to say when it is needed.
    not_kept: Vec<String>,
    /// Files kept in the checkpoint store before (by hash): what a process that may write
    /// more than its intent owns (an MCP server allowed to write in the workspace) could
    /// change out of scope comes back from there.
    pub(super) stored: HashMap<String, String>,
    pub(super) store: Option<Store>,
}

/// The checkpoint store, shown by name only.
#[derive(Clone)]
pub(super) struct Store(pub(super) std::sync::Arc<crate::checkpoint::CheckpointStore>);

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CheckpointStore")
    }
}

#[cfg(test)]
impl BeforeImages {
    pub(super) fn capture_for_test(snapshot: &Snapshot, max_copy: u64) -> BeforeImages {
        let mut images = BeforeImages::default();
        let mut copied = 0u64;
        images.keep(snapshot, &worth_copying, max_copy, true, &mut copied);
        images.keep(snapshot, &in_nested_git, max_copy, false, &mut copied);
        images
    }
}

/// The protected files worth a copy before an unconfined process: the intents and the
/// ledger, the ignore list, the person's hooks (`.mandate/`, `.claude/`) and the workspace's
/// MCP servers (`.mcp.json`) — none is in the checkpoint store, and each decides what runs
/// next with the person's rights — and the repository's configuration.
fn worth_copying(rel: &str) -> bool {
    if matches!(
        rel,
        ".intentignore" | ".mcp.json" | ".roomodes" | "AGENTS.md" | "CLAUDE.md"
    ) || [
        ".orchestration/",
        ".mandate/",
        ".claude/",
        ".roo/",
        ".agents/",
    ]
    .iter()
    .any(|dir| rel.starts_with(dir))
    {
        return true;
    }
    let Some(git) = rel.strip_prefix(".git/") else {
        return false;
    };
    matches!(git, "config" | "HEAD" | "packed-refs" | "index")
        || ["hooks/", "refs/", "info/"]
            .iter()
            .any(|dir| git.starts_with(dir))
}

/// Whether `rel` is a nested repository's `.git` file or a file of its `.git` directory other
/// than its objects (content-addressed, and the bulk of it): what a process that may write
/// there (any confinement: a bind made read-only at the start covers only what existed then,
/// and only so many) could change, and git would run.
pub(super) fn in_nested_git(rel: &str) -> bool {
    let mut parts = rel.split('/');
    if parts.next().is_none_or(|p| p.eq_ignore_ascii_case(".git")) {
        return false;
    }
    let mut inside = false;
    for part in parts {
        if inside && part == "objects" {
            return false;
        }
        inside |= part.eq_ignore_ascii_case(".git");
    }
    inside
}

impl BeforeImages {
    /// The copy kept of `rel`, if one was.
    pub fn copy_of(&self, rel: &str) -> Option<&[u8]> {
        self.copies.get(rel).map(Vec::as_slice)
    }

    /// How many bytes are kept as copies.
    pub fn kept_bytes(&self) -> u64 {
        self.copies.values().map(|c| c.len() as u64).sum()
    }

    /// Files that should have been kept but could not be read.
    pub fn not_kept(&self) -> &[String] {
        &self.not_kept
    }

    /// Adds the files kept in `store` (path → hash, as `ScopeCache::capture` keeps them).
    pub fn with_stored(
        mut self,
        kept: impl IntoIterator<Item = (String, String)>,
        store: std::sync::Arc<crate::checkpoint::CheckpointStore>,
    ) -> BeforeImages {
        self.stored.extend(kept);
        self.store = Some(Store(store));
        self
    }

    /// Nothing kept (for a process that cannot change anything out of scope).
    pub fn none() -> BeforeImages {
        BeforeImages::default()
    }

    /// Keeps what an unconfined command could destroy and Mandate must get back (see the
    /// module's documentation). `snapshot` is the one taken before the same command.
    pub fn capture(snapshot: &Snapshot) -> BeforeImages {
        BeforeImages::capture_with(snapshot, true)
    }

    /// As [`BeforeImages::capture`], choosing whether to copy the protected files (needed
    /// when confinement is partial or absent); the nested repositories' `.git` is copied
    /// either way ([`in_nested_git`]). Clean tracked files need nothing here: they come back
    /// from git's index, read at restore time ([`super::git_index`]).
    pub fn capture_with(snapshot: &Snapshot, protected_copies: bool) -> BeforeImages {
        BeforeImages::capture_except(snapshot, protected_copies, &[])
    }

    /// As [`BeforeImages::capture_with`], without the nested `.git` at or beneath `fixed`:
    /// what bubblewrap binds read-only for the run cannot change.
    pub fn capture_except(
        snapshot: &Snapshot,
        protected_copies: bool,
        fixed: &[String],
    ) -> BeforeImages {
        let mut images = BeforeImages::default();
        let mut copied = 0u64;
        if protected_copies {
            images.keep(snapshot, &worth_copying, MAX_COPY, true, &mut copied);
        }
        let nested = |rel: &str| {
            in_nested_git(rel) && !fixed.iter().any(|f| super::moves::at_or_beneath(rel, f))
        };
        images.keep(snapshot, &nested, MAX_COPY, false, &mut copied);
        images
    }

    /// Adds copies of the files at or beneath `rels` but objects (what the repository's git
    /// configuration names, repository databases not named `.git`: a process whose scope
    /// covers them may change them wherever bubblewrap does not bind them read-only).
    pub fn keeping(mut self, snapshot: &Snapshot, rels: &[String]) -> BeforeImages {
        if rels.is_empty() {
            return self;
        }
        // A repository database's objects are content-addressed, and the bulk of it.
        let named = |rel: &str| {
            rels.iter().any(|n| {
                super::moves::at_or_beneath(rel, n)
                    && !rel[n.len()..].split('/').any(|p| p == "objects")
            })
        };
        let mut copied = self.kept_bytes();
        self.keep(snapshot, &named, MAX_COPY, false, &mut copied);
        self
    }

    /// Copies the files of `snapshot` that `wanted` picks, in path order, each up to
    /// `max_copy` bytes and all under [`MAX_COPIED`]; a larger one is kept by its length and
    /// hash when `prefixes` (the ledger, appended to), else named as not kept.
    fn keep(
        &mut self,
        snapshot: &Snapshot,
        wanted: &dyn Fn(&str) -> bool,
        max_copy: u64,
        prefixes: bool,
        copied: &mut u64,
    ) {
        let root = snapshot.root();
        let mut paths: Vec<(&String, &super::Stamp)> = snapshot
            .entries
            .iter()
            .filter(|(rel, s)| s.kind == EntryKind::File && wanted(rel))
            .collect();
        paths.sort_by_key(|(rel, _)| rel.as_str());
        for (rel, stamp) in paths {
            let fits = stamp.size <= max_copy && *copied + stamp.size <= MAX_COPIED;
            if !fits && !prefixes {
                self.not_kept
                    .push(format!("{}: too large to keep", super::shown(rel)));
                continue;
            }
            let path = root.join(real_path(rel));
            let bytes = match std::fs::read(&path) {
                Ok(bytes) => bytes,
                Err(e) => {
                    self.not_kept.push(format!("{}: {e}", super::shown(rel)));
                    continue;
                }
            };
            if fits {
                *copied += bytes.len() as u64;
                self.copies.insert(rel.clone(), bytes);
            } else {
                let hash = crate::fsutil::sha256_hex(&bytes);
                self.prefixes
                    .insert(rel.clone(), (bytes.len() as u64, hash));
            }
        }
    }
}
