//! Which hooks the person has seen: a fingerprint of what would run, and the fingerprints
//! the person confirmed per workspace, kept in Mandate's data directory (out of the agent's
//! reach, like its settings).
//!
//! The fingerprint covers each file's `hooks` section and the code the hooks run, found the
//! way their interpreters find it ([`super::code`]): the scripts, what they import or source,
//! and the directories whose loads cannot be followed. That code is the person's (no intent
//! may change it), and when the person changes it the hooks do not run until confirmed again.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::code::HookCode;
use super::config::{HookConfig, HookEvent};

/// Confirmed fingerprints kept per workspace (the newest last): switching between branches
/// does not ask each time.
const KEPT_PER_WORKSPACE: usize = 8;
/// At most this many files are hashed, each up to this many bytes (plus its size).
const MAX_FILES: usize = 4096;
const MAX_SCRIPT_BYTES: u64 = 4 * 1024 * 1024;

/// The words of a hook's command line, roughly as the shell splits them (quotes join, they
/// do not separate: `"$CLAUDE_PROJECT_DIR"/x.sh`), with `$CLAUDE_PROJECT_DIR` and
/// `$MANDATE_PROJECT_DIR` replaced by `root`: where to look for the files it runs.
pub fn command_words(root: &Path, command: &str) -> Vec<String> {
    let line = super::code::with_project_dir(root, command);
    line.split(|c: char| c.is_whitespace() || ";|&()<>`=".contains(c))
        .map(|w| w.replace(['"', '\''], ""))
        .filter(|w| !w.is_empty())
        .take(256)
        .collect()
}

/// The fingerprint of `config` with the code its hooks run ([`super::code`]) as it is now:
/// every file read, every file of a tree that is the hook's, and the names in each directory
/// an import searches.
pub fn fingerprint(root: &Path, config: &HookConfig) -> String {
    fingerprint_of(root, config, &super::code::trace(root, config))
}

/// [`fingerprint`] with the code already traced.
pub fn fingerprint_of(root: &Path, config: &HookConfig, code: &HookCode) -> String {
    let mut hasher = Sha256::new();
    // Notification hooks were once listed and not run: a configuration confirmed then is
    // confirmed again before they run.
    if config
        .hooks
        .iter()
        .any(|h| h.event == HookEvent::Notification)
    {
        hasher.update("runs Notification\n");
    }
    for (file, section) in &config.sections {
        hasher.update(format!("file {file} {}\n", section.len()));
        hasher.update(section.as_bytes());
    }
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let mut budget = MAX_FILES;
    for file in &code.files {
        hash_file(&mut hasher, &root, file, &mut budget);
    }
    for tree in &code.trees {
        let mut files: Vec<PathBuf> = files_under(tree);
        files.sort();
        hasher.update(format!("tree {} {}\n", tree.display(), files.len()));
        for file in files {
            hash_file(&mut hasher, &root, &file, &mut budget);
        }
    }
    for dir in &code.search_dirs {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        hasher.update(format!("dir {} {}\n", dir.display(), names.join("\0")));
    }
    hex::encode(hasher.finalize())
}

fn hash_file(hasher: &mut Sha256, root: &Path, file: &Path, budget: &mut usize) {
    if *budget == 0 {
        return;
    }
    *budget -= 1;
    let shown = file.strip_prefix(root).unwrap_or(file);
    hasher.update(format!("script {}\n", shown.display()));
    match std::fs::File::open(file) {
        Ok(handle) => {
            let size = handle.metadata().map(|m| m.len()).unwrap_or(0);
            hasher.update(format!("{size}\n"));
            let mut bytes = Vec::new();
            let _ = handle.take(MAX_SCRIPT_BYTES).read_to_end(&mut bytes);
            hasher.update(&bytes);
        }
        Err(e) => hasher.update(format!("unreadable {}\n", e.kind())),
    }
}

/// The files under `dir` (symbolic links not followed), at most [`MAX_FILES`].
pub(super) fn files_under(dir: &Path) -> Vec<PathBuf> {
    walk(dir, false)
}

/// The files and directories under `dir`, at most [`MAX_FILES`] files.
pub(super) fn entries_under(dir: &Path) -> Vec<PathBuf> {
    walk(dir, true)
}

fn walk(dir: &Path, with_dirs: bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut files = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&at) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if with_dirs {
                    out.push(entry.path());
                }
                stack.push(entry.path());
            } else if kind.is_file() {
                out.push(entry.path());
                files += 1;
                if files >= MAX_FILES {
                    return out;
                }
            }
        }
    }
    out
}

/// The confirmed fingerprints, per canonical workspace path.
pub struct TrustStore {
    path: PathBuf,
}

#[derive(Debug, thiserror::Error)]
#[error("could not remember the confirmed hooks in {path}: {source}")]
pub struct TrustError {
    path: String,
    source: std::io::Error,
}

impl TrustStore {
    pub const FILE_NAME: &'static str = "confirmed_hooks.json";

    pub fn new(data_dir: &Path) -> TrustStore {
        TrustStore {
            path: data_dir.join(Self::FILE_NAME),
        }
    }

    /// A store that cannot be read trusts nothing.
    fn read(&self) -> BTreeMap<String, Vec<String>> {
        std::fs::read(&self.path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    pub fn is_confirmed(&self, root: &Path, fingerprint: &str) -> bool {
        self.read()
            .get(&key(root))
            .is_some_and(|kept| kept.iter().any(|f| f == fingerprint))
    }

    pub fn confirm(&self, root: &Path, fingerprint: &str) -> Result<(), TrustError> {
        let mut all = self.read();
        let kept = all.entry(key(root)).or_default();
        kept.retain(|f| f != fingerprint);
        kept.push(fingerprint.to_string());
        if kept.len() > KEPT_PER_WORKSPACE {
            kept.drain(..kept.len() - KEPT_PER_WORKSPACE);
        }
        let bytes = serde_json::to_vec_pretty(&all).unwrap_or_default();
        crate::fsutil::write_atomic(&self.path, &bytes).map_err(|source| TrustError {
            path: self.path.display().to_string(),
            source,
        })
    }
}

fn key(root: &Path) -> String {
    root.canonicalize()
        .unwrap_or_else(|_| root.to_path_buf())
        .display()
        .to_string()
}
