//! The checkpoint store: every version of a file that a governed change replaced or produced,
//! content-addressed by SHA-256 and deduplicated, kept outside the workspace (the data directory,
//! one store per workspace) where the agent's commands cannot reach it. Undo restores from here;
//! after a crash, recovery knows what a file held before and after an interrupted write.
//!
//! Objects are appended to packs (`pack`), a few large files, rather than written one file
//! each; stores kept from before packs have loose objects (`objects/ab/abcd…`), still read and
//! pruned. Objects are written without fsync: they must survive the death of a process (the page
//! cache does), and a lost object after a power cut only means that one change cannot be undone,
//! which undo then says.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::fsutil::sha256_hex;

mod pack;
mod scope;
pub use scope::{Kept, ScopeCache, ScopeImages};

pub struct CheckpointStore {
    objects: PathBuf,
    packs: pack::Packs,
}

impl CheckpointStore {
    /// The store of the workspace at `root`, under `data_dir`.
    pub fn new(data_dir: &Path, root: &Path) -> Self {
        let dir = data_dir
            .join("checkpoints")
            .join(crate::settings::workspace_key(root));
        Self {
            objects: dir.join("objects"),
            packs: pack::Packs::new(dir.join("packs")),
        }
    }

    /// Where a loose object (from a store older than packs) is.
    fn object(&self, hash: &str) -> Option<PathBuf> {
        let valid = hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit());
        valid.then(|| self.objects.join(&hash[..2]).join(hash))
    }

    fn parse(hash: &str) -> io::Result<pack::Hash> {
        pack::parse_hash(hash).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{hash}` is not a SHA-256 hex digest"),
            )
        })
    }

    /// Stores `bytes` (once: an object already present is not written again); returns its hash.
    pub fn put(&self, bytes: &[u8]) -> io::Result<String> {
        let hash = sha256_hex(bytes);
        self.put_hashed(&hash, bytes)?;
        Ok(hash)
    }

    /// Like [`put`](Self::put) when the caller already hashed the bytes.
    pub fn put_hashed(&self, hash: &str, bytes: &[u8]) -> io::Result<()> {
        let parsed = Self::parse(hash)?;
        if self.packs.contains(&parsed) || self.object(hash).is_some_and(|p| p.exists()) {
            return Ok(());
        }
        self.packs.put(&parsed, bytes).or_else(|e| {
            // A file of its own where no pack can be written to (no `flock` on some network
            // file systems, something else where the packs' directory goes): the change can
            // still be undone.
            self.put_loose(hash, bytes).map_err(|_| e)
        })
    }

    /// Writes a loose object so that it appears whole or not at all.
    fn put_loose(&self, hash: &str, bytes: &[u8]) -> io::Result<()> {
        let path = self
            .object(hash)
            .ok_or_else(|| io::Error::other("not a hash"))?;
        crate::fsutil::write_replace(&path, bytes)
    }

    /// The bytes of an object; `NotFound` when it was never stored or was pruned.
    pub fn get(&self, hash: &str) -> io::Result<Vec<u8>> {
        let not_found =
            || io::Error::new(io::ErrorKind::NotFound, format!("no checkpoint `{hash}`"));
        let parsed = Self::parse(hash).map_err(|_| not_found())?;
        let damaged = || {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("checkpoint `{hash}` is damaged (its bytes no longer hash to its name)"),
            )
        };
        let intact = |bytes: &[u8]| sha256_hex(bytes) == hash;
        let packed = match self.packs.get(&parsed, intact) {
            Some(Ok(bytes)) => return Ok(bytes),
            Some(Err(e)) if e.kind() == io::ErrorKind::InvalidData => Some(Err(damaged())),
            other => other,
        };
        // Not in a pack (or damaged there): a loose object from before packs.
        let loose = self.object(hash).ok_or_else(not_found)?;
        match (fs::read(loose), packed) {
            (Ok(bytes), _) if intact(&bytes) => Ok(bytes),
            (Ok(_), _) => Err(damaged()),
            (Err(_), Some(Err(e))) => Err(e),
            // No store yet, or something else where its directory would be.
            (Err(e), _) if e.kind() == io::ErrorKind::NotADirectory => Err(not_found()),
            (Err(e), _) => Err(e),
        }
    }

    pub fn contains(&self, hash: &str) -> bool {
        pack::parse_hash(hash).is_some_and(|h| self.packs.contains(&h))
            || self.object(hash).is_some_and(|p| p.exists())
    }

    /// Every loose object with its size and last write time.
    fn loose_objects(&self) -> Vec<(String, u64, SystemTime, PathBuf)> {
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
        out
    }

    /// Removes the oldest objects not in `keep` until the store is within `cap` bytes. What an
    /// open task can still undo is in `keep` and never removed, even over the cap; so is what
    /// another process is still appending to (its pack is counted, not rewritten).
    pub fn prune(&self, cap: u64, keep: &HashSet<String>) -> PruneReport {
        enum Place {
            Loose(PathBuf),
            Packed(usize, u64),
        }
        let idle = self.packs.idle();
        let mut objects: Vec<(String, u64, SystemTime, Place)> = self
            .loose_objects()
            .into_iter()
            .map(|(hash, len, at, path)| (hash, len, at, Place::Loose(path)))
            .collect();
        for (n, pack) in idle.iter().enumerate() {
            objects.extend(
                pack.records
                    .iter()
                    .map(|r| (r.hex(), r.len, r.at, Place::Packed(n, r.offset()))),
            );
        }
        objects.sort_by_key(|o| o.2);
        let mut total: u64 =
            objects.iter().map(|o| o.1).sum::<u64>() + self.packs.busy_bytes(&idle);
        let mut report = PruneReport {
            before: total,
            ..PruneReport::default()
        };
        let mut dropped: HashMap<usize, (HashSet<u64>, u64)> = HashMap::new();
        for (hash, size, _, place) in objects {
            if total <= cap {
                break;
            }
            if keep.contains(&hash) {
                continue;
            }
            match place {
                Place::Loose(path) => {
                    if fs::remove_file(&path).is_err() {
                        continue;
                    }
                }
                Place::Packed(pack, offset) => {
                    let entry = dropped.entry(pack).or_default();
                    entry.0.insert(offset);
                    entry.1 += size;
                }
            }
            total -= size;
            report.removed += 1;
        }
        for (pack, (offsets, size)) in dropped {
            if let Err(e) = self.packs.rewrite(&idle[pack], &offsets) {
                tracing::warn!(pack = %idle[pack].path.display(), error = %e, "a checkpoint pack could not be pruned");
                total += size;
                report.removed -= offsets.len();
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

#[cfg(test)]
mod tests;
