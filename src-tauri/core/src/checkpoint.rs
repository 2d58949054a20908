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
        fs::create_dir_all(dir)?;
        let tmp = dir.join(format!(".{hash}.{}.tmp", uuid::Uuid::new_v4().simple()));
        let result = (|| {
            let mut file = fs::File::create(&tmp)?;
            file.write_all(bytes)?;
            drop(file);
            fs::rename(&tmp, &path)
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
