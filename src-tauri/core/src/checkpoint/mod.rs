//! The checkpoint store: every version of a file that a governed change replaced or produced,
//! content-addressed by SHA-256 and deduplicated, kept outside the workspace (the data directory,
//! one store per workspace) where the agent's commands cannot reach it. Undo restores from here;
//! after a crash, recovery knows what a file held before and after an interrupted write.
//!
//! Objects are written without fsync: they must survive the death of a process (the page cache
//! does), and a lost object after a power cut only means that one change cannot be undone, which
//! undo then says.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::fsutil::sha256_hex;

mod scope;
pub use scope::{Kept, ScopeCache, ScopeImages};

pub struct CheckpointStore {
    objects: PathBuf,
}

impl CheckpointStore {
    /// The store of the workspace at `root`, under `data_dir`.
    pub fn new(data_dir: &Path, root: &Path) -> Self {
        Self {
            objects: data_dir
                .join("checkpoints")
                .join(crate::settings::workspace_key(root))
                .join("objects"),
        }
    }

    fn object(&self, hash: &str) -> Option<PathBuf> {
        let valid = hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit());
        valid.then(|| self.objects.join(&hash[..2]).join(hash))
    }

    /// Stores `bytes` (once: an object already present is not written again); returns its hash.
    pub fn put(&self, bytes: &[u8]) -> io::Result<String> {
        let hash = sha256_hex(bytes);
        self.put_hashed(&hash, bytes)?;
        Ok(hash)
    }

    /// Like [`put`](Self::put) when the caller already hashed the bytes.
    pub fn put_hashed(&self, hash: &str, bytes: &[u8]) -> io::Result<()> {
        let path = self
            .object(hash)
            .ok_or_else(|| io::Error::other(format!("`{hash}` is not a SHA-256 hex digest")))?;
        if path.exists() {
            return Ok(());
        }
        let dir = path.parent().unwrap_or(&self.objects);
        match store_new(dir, &path, bytes) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                fs::create_dir_all(dir)?;
                store_new(dir, &path, bytes)
            }
            other => other,
        }
    }

    /// The bytes of an object; `NotFound` when it was never stored or was pruned.
    pub fn get(&self, hash: &str) -> io::Result<Vec<u8>> {
        let path = self.object(hash).ok_or_else(|| {
            io::Error::new(io::ErrorKind::NotFound, format!("no checkpoint `{hash}`"))
        })?;
        let bytes = fs::read(path)?;
        if sha256_hex(&bytes) != hash {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("checkpoint `{hash}` is damaged (its bytes no longer hash to its name)"),
            ));
        }
        Ok(bytes)
    }

    pub fn contains(&self, hash: &str) -> bool {
        self.object(hash).is_some_and(|p| p.exists())
    }

    /// Every object with its size and last write time, oldest first.
    fn objects(&self) -> Vec<(String, u64, std::time::SystemTime, PathBuf)> {
        let mut out = Vec::new();
        let Ok(shards) = fs::read_dir(&self.objects) else {
            return out;
        };
        for shard in shards.flatten() {
            let Ok(entries) = fs::read_dir(shard.path()) else {
                continue;
            };
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with('.') {
                    continue;
                }
                if let Ok(meta) = e.metadata() {
                    let at = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
                    out.push((name, meta.len(), at, e.path()));
                }
            }
        }
        out.sort_by_key(|o| o.2);
        out
    }

    /// Removes the oldest objects not in `keep` until the store is within `cap` bytes. What an
    /// open task can still undo is in `keep` and never removed, even over the cap.
    pub fn prune(&self, cap: u64, keep: &std::collections::HashSet<String>) -> PruneReport {
        let objects = self.objects();
        let mut total: u64 = objects.iter().map(|o| o.1).sum();
        let mut report = PruneReport {
            before: total,
            ..PruneReport::default()
        };
        for (hash, size, _, path) in objects {
            if total <= cap {
                break;
            }
            if keep.contains(&hash) {
                continue;
            }
            if fs::remove_file(&path).is_ok() {
                total -= size;
                report.removed += 1;
            }
        }
        report.after = total;
        report
    }
}

/// What a prune did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PruneReport {
    pub before: u64,
    pub after: u64,
    pub removed: usize,
}

/// The store's size cap when the settings give none: 2 GiB per workspace.
pub const DEFAULT_CAP: u64 = 2 << 30;

/// Writes `bytes` as the object at `path` in `dir` so that it appears whole or not at all: an
/// unnamed file linked in once written (`O_TMPFILE`), or where the file system cannot make
/// one, a temporary file renamed into place.
fn store_new(dir: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let unnamed = fs::OpenOptions::new()
        .write(true)
        .mode(0o644)
        .custom_flags(libc::O_TMPFILE)
        .open(dir);
    match unnamed {
        Ok(mut file) => {
            file.write_all(bytes)?;
            match crate::fsutil::link_unnamed(&file, path) {
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
                Err(e) if e.kind() == io::ErrorKind::NotFound && dir.exists() => {
                    // No /proc to name the unnamed file by.
                    store_renamed(dir, path, bytes)
                }
                other => other,
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(e),
        Err(_) => store_renamed(dir, path, bytes),
    }
}

fn store_renamed(dir: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
    let result = (|| {
        let mut file = fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        drop(file);
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_appear_whole_by_either_way_of_writing_them() {
        let dir = tempfile::tempdir().expect("tmp");
        let store = CheckpointStore::new(dir.path(), dir.path());
        let a = store.put(b"first").expect("put");
        store.put(b"first").expect("again");
        let hash = sha256_hex(b"second");
        let path = store.object(&hash).expect("path");
        let parent = path.parent().expect("dir");
        fs::create_dir_all(parent).expect("mkdir");
        store_renamed(parent, &path, b"second").expect("renamed");
        assert_eq!(store.get(&a).expect("get"), b"first");
        assert_eq!(store.get(&hash).expect("get"), b"second");
        let names: Vec<String> = fs::read_dir(&store.objects)
            .expect("ls")
            .flatten()
            .flat_map(|d| fs::read_dir(d.path()).expect("ls").flatten())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 2, "no temporary files are left: {names:?}");
    }

    #[test]
    fn objects_are_deduplicated_and_checked_on_read() {
        let tmp = tempfile::tempdir().expect("tmp");
        let store = CheckpointStore::new(tmp.path(), Path::new("/ws"));
        let a = store.put(b"hello").expect("put");
        assert_eq!(store.put(b"hello").expect("again"), a);
        assert_eq!(store.get(&a).expect("get"), b"hello");
        assert!(store.get(&"0".repeat(64)).is_err());
        assert!(store.get("../../etc/passwd").is_err());
        let path = store.object(&a).expect("path");
        fs::write(&path, b"tampered").expect("write");
        let err = store.get(&a).expect_err("damaged");
        assert!(err.to_string().contains("damaged"), "{err}");
    }

    #[test]
    fn pruning_keeps_what_can_still_be_undone_and_drops_the_oldest_rest() {
        let tmp = tempfile::tempdir().expect("tmp");
        let store = CheckpointStore::new(tmp.path(), Path::new("/ws"));
        let hashes: Vec<String> = (0..6)
            .map(|i| {
                let h = store.put(&[b'a' + i; 100]).expect("put");
                // Distinct ages, oldest first.
                let old = std::time::SystemTime::now()
                    - std::time::Duration::from_secs(600 - u64::from(i) * 60);
                fs::File::options()
                    .write(true)
                    .open(store.object(&h).expect("p"))
                    .and_then(|f| f.set_modified(old))
                    .expect("age");
                h
            })
            .collect();
        let keep: std::collections::HashSet<String> = [hashes[0].clone()].into_iter().collect();
        let report = store.prune(300, &keep);
        assert_eq!(report.before, 600);
        assert_eq!(report.after, 300);
        assert!(store.contains(&hashes[0]), "kept although the oldest");
        assert!(
            !store.contains(&hashes[1])
                && !store.contains(&hashes[2])
                && !store.contains(&hashes[3])
        );
        assert!(store.contains(&hashes[4]) && store.contains(&hashes[5]));
        // Everything kept: over the cap is allowed, nothing kept is dropped.
        let all: std::collections::HashSet<String> = hashes.iter().cloned().collect();
        assert_eq!(store.prune(0, &all).removed, 0);
    }
}
