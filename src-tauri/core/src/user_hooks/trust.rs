//! Which hooks the person has seen: a fingerprint of what would run, and the fingerprints
//! the person confirmed per workspace, kept in Mandate's data directory (out of the agent's
//! reach, like its settings).
//!
//! The fingerprint covers each file's `hooks` section and the workspace files a hook command
//! names by path (`python3 scripts/check.py`, `"$CLAUDE_PROJECT_DIR"/tools/hook.sh`): a
//! script the agent may edit inside its scope changes the fingerprint, so the changed hook is
//! not run until the person confirms it again. Scripts reached another way (a script that
//! sources another) are not covered; `.mandate/` and `.claude/` are never writable by the agent.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::config::{HookCommand, HookConfig};

/// Confirmed fingerprints kept per workspace (the newest last): switching between branches
/// does not ask each time.
const KEPT_PER_WORKSPACE: usize = 8;
/// At most this many script files are hashed, each up to this many bytes (plus its size).
const MAX_SCRIPTS: usize = 32;
const MAX_SCRIPT_BYTES: u64 = 4 * 1024 * 1024;

/// The workspace files the hooks' commands name, relative to `root`, that exist.
pub fn named_scripts(root: &Path, config: &HookConfig) -> Vec<String> {
    let Ok(root) = root.canonicalize() else {
        return Vec::new();
    };
    let mut found: Vec<String> = Vec::new();
    for hook in &config.hooks {
        let HookCommand::Shell(command) = &hook.command else {
            continue;
        };
        for word in command_words(&root, command) {
            let path = if Path::new(&word).is_absolute() {
                PathBuf::from(&word)
            } else {
                root.join(&word)
            };
            let Ok(real) = path.canonicalize() else {
                continue;
            };
            let Ok(rel) = real.strip_prefix(&root) else {
                continue;
            };
            if rel.as_os_str().is_empty() || !real.is_file() {
                continue;
            }
            let rel = rel.to_string_lossy().into_owned();
            if !found.contains(&rel) {
                found.push(rel);
            }
            if found.len() >= MAX_SCRIPTS {
                return found;
            }
        }
    }
    found
}

/// The words of a hook's command line, roughly as the shell splits them (quotes join, they
/// do not separate: `"$CLAUDE_PROJECT_DIR"/x.sh`), with `$CLAUDE_PROJECT_DIR` and
/// `$MANDATE_PROJECT_DIR` replaced by `root`: where to look for the files it runs.
pub fn command_words(root: &Path, command: &str) -> Vec<String> {
    let mut line = command.to_string();
    for var in ["CLAUDE_PROJECT_DIR", "MANDATE_PROJECT_DIR"] {
        line = line
            .replace(&format!("${{{var}}}"), &root.display().to_string())
            .replace(&format!("${var}"), &root.display().to_string());
    }
    line.split(|c: char| c.is_whitespace() || ";|&()<>`=".contains(c))
        .map(|w| w.replace(['"', '\''], ""))
        .filter(|w| !w.is_empty())
        .take(256)
        .collect()
}

/// The fingerprint of `config` with the scripts it names as they are now.
pub fn fingerprint(root: &Path, config: &HookConfig) -> String {
    let mut hasher = Sha256::new();
    for (file, section) in &config.sections {
        hasher.update(format!("file {file} {}\n", section.len()));
        hasher.update(section.as_bytes());
    }
    for script in named_scripts(root, config) {
        hasher.update(format!("script {script}\n"));
        match std::fs::File::open(root.join(&script)) {
            Ok(file) => {
                let size = file.metadata().map(|m| m.len()).unwrap_or(0);
                hasher.update(format!("{size}\n"));
                let mut bytes = Vec::new();
                let _ = file.take(MAX_SCRIPT_BYTES).read_to_end(&mut bytes);
                hasher.update(&bytes);
            }
            Err(e) => hasher.update(format!("unreadable {}\n", e.kind())),
        }
    }
    hex::encode(hasher.finalize())
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
