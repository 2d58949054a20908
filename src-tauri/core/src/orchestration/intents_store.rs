//! The intents of one workspace as the app holds them: the last good version, reloaded when
//! the file's stamp changes, and changed on disk only through a lock and a canonical rewrite.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::{Intent, IntentError, IntentsDoc, INTENTS_FILE};
use crate::fsutil::write_atomic;
use crate::protocol::{IntentStatus, IntentsView};

/// Identity of the file on disk, to notice external edits without re-reading it every time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileStamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    inode: u64,
}

fn stamp(path: &Path) -> Option<FileStamp> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    Some(FileStamp {
        len: meta.len(),
        modified: meta.modified().ok(),
        inode: meta.ino(),
    })
}

#[derive(Default)]
struct StoreState {
    good: Arc<IntentsDoc>,
    stamp: Option<FileStamp>,
    exists: bool,
    error: Option<String>,
    loaded_once: bool,
}

/// The intents of one workspace, reloaded when the file changes.
pub struct IntentStore {
    root: PathBuf,
    path: PathBuf,
    state: Mutex<StoreState>,
}

/// What the store holds now: the last good intents and, if the file is broken, why.
#[derive(Debug, Clone)]
pub struct IntentsSnapshot {
    pub doc: Arc<IntentsDoc>,
    pub exists: bool,
    pub error: Option<String>,
}

impl IntentsSnapshot {
    pub fn view(&self) -> IntentsView {
        IntentsView {
            path: INTENTS_FILE.into(),
            exists: self.exists,
            intents: self.doc.intents.iter().map(Intent::view).collect(),
            error: self.error.clone(),
        }
    }
}

impl IntentStore {
    pub fn new(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            path: root.join(INTENTS_FILE),
            state: Mutex::default(),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The current intents; re-reads the file if its stamp changed. The bool says whether
    /// anything changed since the previous call (for pushing updates to the UI).
    pub fn refresh(&self) -> (IntentsSnapshot, bool) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let now = stamp(&self.path);
        let changed = !state.loaded_once || now != state.stamp;
        if changed {
            state.loaded_once = true;
            state.stamp = now;
            state.exists = now.is_some();
            match std::fs::read_to_string(&self.path) {
                Ok(text) => match IntentsDoc::parse(&text, INTENTS_FILE) {
                    Ok(doc) => {
                        state.good = Arc::new(doc);
                        state.error = None;
                    }
                    Err(e) => {
                        state.error = Some(format!("{e}. The last good version stays in use."))
                    }
                },
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    state.good = Arc::new(IntentsDoc::default());
                    state.error = None;
                }
                Err(e) => state.error = Some(format!("could not read {INTENTS_FILE}: {e}")),
            }
        }
        let snapshot = IntentsSnapshot {
            doc: state.good.clone(),
            exists: state.exists,
            error: state.error.clone(),
        };
        (snapshot, changed)
    }

    pub fn snapshot(&self) -> IntentsSnapshot {
        self.refresh().0
    }

    /// Changes the intents on disk: re-reads the file under a lock, refuses if it does not parse
    /// (a person's half-finished edit is never overwritten), applies `change`, writes atomically.
    pub fn update(
        &self,
        change: impl FnOnce(&mut IntentsDoc) -> Result<(), IntentError>,
    ) -> Result<IntentsSnapshot, IntentError> {
        let io = |e: std::io::Error| IntentError::Io {
            file: INTENTS_FILE.into(),
            message: e.to_string(),
        };
        let dir = crate::orchestration::dir(&self.root);
        std::fs::create_dir_all(&dir).map_err(io)?;
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(".active_intents.lock"))
            .map_err(io)?;
        lock.lock().map_err(io)?;
        let mut doc = match std::fs::read_to_string(&self.path) {
            Ok(text) => IntentsDoc::parse(&text, INTENTS_FILE).map_err(|e| {
                IntentError::Rejected(format!(
                    "{e}. Fix the file first; Mandate does not overwrite a file that does not parse."
                ))
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => IntentsDoc::default(),
            Err(e) => return Err(io(e)),
        };
        change(&mut doc)?;
        let text = doc.to_yaml()?;
        drop(doc);
        // Check that what is about to be written reads back to the same intents.
        let written = IntentsDoc::parse(&text, INTENTS_FILE)?;
        write_atomic(&self.path, text.as_bytes()).map_err(io)?;
        self.adopt(written, text.len() as u64);
        drop(lock);
        Ok(self.refresh().0)
    }

    /// Takes the intents just written as the current ones, so the next refresh need not read
    /// the file again, unless the file on disk is already not the one written (a person's
    /// editor saved meanwhile): then the refresh reads it.
    fn adopt(&self, written: IntentsDoc, len: u64) {
        let now = stamp(&self.path);
        if now.is_none_or(|s| s.len != len) {
            return;
        }
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        *state = StoreState {
            good: Arc::new(written),
            stamp: now,
            exists: true,
            error: None,
            loaded_once: true,
        };
    }

    /// Sets one intent's status (used by the status post-hook and the GUI).
    pub fn set_status(
        &self,
        id: &str,
        status: IntentStatus,
    ) -> Result<IntentsSnapshot, IntentError> {
        self.update(|doc| {
            let intent = doc
                .intents
                .iter_mut()
                .find(|i| i.id == id)
                .ok_or_else(|| IntentError::NotFound(id.to_string()))?;
            intent.status = status;
            Ok(())
        })
    }
}
