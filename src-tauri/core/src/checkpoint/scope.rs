//! Before a command runs, the files its intent owns are kept in the checkpoint store, so that
//! what the command changes can be recorded with its diff and taken back later. A stat cache
//! (kept per workspace for the life of the process) means only files that moved since the last
//! command are read again.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt as _;
use std::path::Path;
use std::sync::Mutex;

use crate::checkpoint::CheckpointStore;

/// Files larger than this are not kept (a change to one is recorded without its earlier version).
const MAX_FILE: u64 = 32 * 1024 * 1024;
/// At most this much is read for one command; what is over is not kept.
const MAX_TOTAL: u64 = 512 * 1024 * 1024;

/// A file's identity as `stat` sees it: unchanged stamps mean unchanged content.
type Stamp = (u64, u64, i64, i64, i64, i64);

fn stamp(meta: &std::fs::Metadata) -> Stamp {
    (
        meta.ino(),
        meta.size(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ctime(),
        meta.ctime_nsec(),
    )
}

/// One kept file: its hash in the store and its permission bits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    pub hash: String,
    pub mode: u32,
}

/// What the owned files held before a command.
#[derive(Debug, Clone, Default)]
pub struct ScopeImages {
    pub files: HashMap<String, Kept>,
    /// Owned files that were not kept (too large, unreadable).
    pub not_kept: Vec<String>,
}

/// The stat cache of one workspace.
#[derive(Default)]
pub struct ScopeCache {
    known: Mutex<HashMap<String, (Stamp, String)>>,
}

impl ScopeCache {
    /// Keeps every regular file under `dirs` (workspace-relative; empty = the root) that `owns`
    /// accepts, skipping directories named in `skip` (build output, `.git`).
    pub fn capture(
        &self,
        root: &Path,
        dirs: &[String],
        owns: &dyn Fn(&str) -> bool,
        skip: &[&str],
        store: &CheckpointStore,
    ) -> ScopeImages {
        let mut images = ScopeImages::default();
        let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        let mut read = 0u64;
        for dir in dirs {
            let walker = ignore::WalkBuilder::new(root.join(dir))
                .standard_filters(false)
                .follow_links(false)
                .filter_entry({
                    let skip: Vec<String> = skip.iter().map(|s| s.to_string()).collect();
                    move |e| {
                        !(e.file_type().is_some_and(|t| t.is_dir())
                            && skip.iter().any(|s| e.file_name() == s.as_str()))
                    }
                })
                .build();
            for entry in walker.flatten() {
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    continue;
                }
                let Some(rel) = entry
                    .path()
                    .strip_prefix(root)
                    .ok()
                    .and_then(|r| r.to_str())
                    .map(str::to_string)
                else {
                    continue;
                };
                if images.files.contains_key(&rel) || !owns(&rel) {
                    continue;
                }
                let Ok(meta) = entry.metadata() else {
                    images.not_kept.push(rel);
                    continue;
                };
                let now = stamp(&meta);
                let mode = meta.mode() & 0o7777;
                if let Some((was, hash)) = known.get(&rel) {
                    if *was == now && store.contains(hash) {
                        images.files.insert(
                            rel,
                            Kept {
                                hash: hash.clone(),
                                mode,
                            },
                        );
                        continue;
                    }
                }
                if meta.size() > MAX_FILE || read + meta.size() > MAX_TOTAL {
                    images.not_kept.push(rel);
                    continue;
                }
                match std::fs::read(entry.path()).and_then(|bytes| {
                    read += bytes.len() as u64;
                    store.put(&bytes)
                }) {
                    Ok(hash) => {
                        known.insert(rel.clone(), (now, hash.clone()));
                        images.files.insert(rel, Kept { hash, mode });
                    }
                    Err(_) => images.not_kept.push(rel),
                }
            }
        }
        images
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owned_files_are_kept_once_and_read_again_only_when_they_move() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path().join("ws");
        for (p, c) in [
            ("src/a.rs", "a"),
            ("src/b.rs", "b"),
            ("src/target/x", "x"),
            ("docs/d.md", "d"),
        ] {
            std::fs::create_dir_all(root.join(p).parent().expect("p")).expect("mkdir");
            std::fs::write(root.join(p), c).expect("w");
        }
        let store = CheckpointStore::new(&tmp.path().join("data"), &root);
        let cache = ScopeCache::default();
        let owns = |p: &str| p.starts_with("src/") && p != "src/b.rs";
        let images = cache.capture(&root, &["src".into()], &owns, &["target"], &store);
        let mut kept: Vec<&str> = images.files.keys().map(String::as_str).collect();
        kept.sort();
        assert_eq!(kept, vec!["src/a.rs"]);
        let hash = images.files["src/a.rs"].hash.clone();
        assert_eq!(store.get(&hash).expect("image"), b"a");
        std::fs::write(root.join("src/a.rs"), "changed").expect("w");
        let again = cache.capture(&root, &["src".into()], &owns, &["target"], &store);
        assert_eq!(
            store.get(&again.files["src/a.rs"].hash).expect("image"),
            b"changed"
        );
    }
}
