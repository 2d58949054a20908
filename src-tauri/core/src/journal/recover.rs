//! Finishing what a dead writer left: run by every process that opens a workspace, before it
//! writes anything. Entries whose path lock is held belong to a live writer and are left alone.

use std::fs;
use std::io;
use std::path::Path;

use super::{try_lock_path, Entry, JOURNAL_DIR};
use crate::fsutil::sha256_hex;
use crate::orchestration::ledger::{Ledger, LEDGER_FILE};

/// What recovery did with one interrupted write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recovered {
    /// The file held the new bytes: its record was added to the ledger.
    Completed { path: String },
    /// The file still held the old bytes: the write never happened; its leftovers were removed.
    RolledBack { path: String },
    /// The file changed since (someone edited it): left as it is, nothing recorded.
    Abandoned { path: String },
    /// The record was in the ledger already; only leftovers were removed.
    Cleaned { path: String },
    /// The entry could not be finished; it stays for the next start.
    Failed { path: String, reason: String },
}

impl std::fmt::Display for Recovered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Recovered::Completed { path } => write!(f, "the interrupted write to {path} had reached the disk, so its ledger record was added"),
            Recovered::RolledBack { path } => write!(f, "the interrupted write to {path} had not reached the disk; the file is unchanged"),
            Recovered::Abandoned { path } => write!(f, "{path} changed after an interrupted write, so that write was not recorded and the file was left as it is"),
            Recovered::Cleaned { path } => write!(f, "leftovers of a finished write to {path} were removed"),
            Recovered::Failed { path, reason } => write!(f, "an interrupted write to {path} could not be finished ({reason}); it will be tried again"),
        }
    }
}

/// Finishes or rolls back every interrupted write of the workspace at `root`, and removes the
/// temporary files of atomic writes (intents, lessons) whose process is gone.
pub fn recover(root: &Path, ledger: &Ledger) -> Vec<Recovered> {
    sweep_temp_files(&crate::orchestration::dir(root));
    let dir = root.join(JOURNAL_DIR);
    let Ok(entries) = fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut done = Vec::new();
    let mut names: Vec<_> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    names.sort();
    for file in names {
        let entry: Entry = match fs::read(&file)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
        {
            Some(e) => e,
            None => {
                // A torn entry: the write it announced never started (the entry precedes it).
                let _ = fs::remove_file(&file);
                continue;
            }
        };
        match recover_one(root, ledger, &entry) {
            Ok(None) => {}
            Ok(Some(outcome)) => {
                let _ = fs::remove_file(&file);
                if !matches!(outcome, Recovered::Cleaned { .. }) {
                    done.push(outcome);
                }
            }
            Err(e) => done.push(Recovered::Failed {
                path: entry.path.clone(),
                reason: e.to_string(),
            }),
        }
    }
    done
}

/// None: a live writer holds the path; leave its entry.
fn recover_one(root: &Path, ledger: &Ledger, entry: &Entry) -> io::Result<Option<Recovered>> {
    let Some(_lock) = try_lock_path(root, &entry.path)? else {
        return Ok(None);
    };
    let target = root.join(&entry.path);
    if let Some(dir) = target.parent() {
        let _ = fs::remove_file(dir.join(&entry.temp));
    }
    let id = entry.record["id"].as_str().unwrap_or_default();
    if !id.is_empty() && ledger_has_record(root, id)? {
        return Ok(Some(Recovered::Cleaned {
            path: entry.path.clone(),
        }));
    }
    let current = match fs::read(&target) {
        Ok(b) => Some(sha256_hex(&b)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let path = entry.path.clone();
    Ok(Some(if current == entry.after {
        ledger
            .append_record(entry.record.clone())
            .map_err(|e| io::Error::other(e.to_string()))?;
        Recovered::Completed { path }
    } else if current == entry.before {
        Recovered::RolledBack { path }
    } else {
        Recovered::Abandoned { path }
    }))
}

/// Whether the ledger holds the record `id` (records are canonical: `"id":"<uuid>"`).
fn ledger_has_record(root: &Path, id: &str) -> io::Result<bool> {
    let bytes = match fs::read(root.join(LEDGER_FILE)) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    let needle = format!("\"id\":\"{id}\"");
    Ok(memchr::memmem::find(&bytes, needle.as_bytes()).is_some())
}

/// `.NAME.tmp-PID-UUID` files (see `fsutil::write_atomic`) left by a process that died.
fn sweep_temp_files(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix('.').and_then(|n| n.split_once(".tmp-")) else {
            continue;
        };
        let pid = rest.1.split('-').next().and_then(|p| p.parse::<i32>().ok());
        if pid.is_some_and(|pid| !process_alive(pid)) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

fn process_alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists; nothing is sent.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}
