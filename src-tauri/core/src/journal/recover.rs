//! Finishing what a dead writer left: run by every process that opens a workspace, before it
//! writes anything. Entries whose path lock is held belong to a live writer and are left alone.

use std::fs;
use std::io;
use std::path::Path;

use super::{slots, try_lock_path, Entry, WORKSPACE_JOURNAL_DIR};
use crate::fsutil::sha256_hex;
use crate::orchestration::ledger::Ledger;

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
    /// The entry is not one Mandate writes (a hand-made or planted file): removed, nothing done.
    Rejected { file: String, reason: String },
    /// An entry in the workspace, where the journal once lay: removed unread.
    Untrusted { file: String },
}

impl std::fmt::Display for Recovered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Recovered::Completed { path } => write!(f, "the interrupted write to {path} had reached the disk, so its ledger record was added"),
            Recovered::RolledBack { path } => write!(f, "the interrupted write to {path} had not reached the disk; the file is unchanged"),
            Recovered::Abandoned { path } => write!(f, "{path} changed after an interrupted write, so that write was not recorded and the file was left as it is"),
            Recovered::Cleaned { path } => write!(f, "leftovers of a finished write to {path} were removed"),
            Recovered::Failed { path, reason } => write!(f, "an interrupted write to {path} could not be finished ({reason}); it will be tried again"),
            Recovered::Rejected { file, reason } => write!(f, "the journal entry {file} is not one Mandate wrote ({reason}), so it was removed and nothing was changed or recorded"),
            Recovered::Untrusted { file } => write!(f, "the journal entry {file} lay in the workspace, where anyone who can write it (a git branch, a command) could have put it, so it was removed unread and nothing was recorded; Mandate keeps its journal in its data directory"),
        }
    }
}

/// Finishes or rolls back every interrupted write of the workspace at `root`, and removes the
/// temporary files of atomic writes (intents, lessons) whose process is gone.
pub fn recover(root: &Path, ledger: &Ledger) -> Vec<Recovered> {
    sweep_temp_files(&crate::orchestration::dir(root));
    let mut done = refuse_workspace_entries(root);
    let dir = ledger.journal_dir();
    let Ok(entries) = fs::read_dir(&dir) else {
        return done;
    };
    let mut names: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    names.sort();
    for file in names {
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if slots::is_slot(&name) {
            done.extend(recover_slot(root, ledger, &file));
        } else if let Some(stem) = name.strip_suffix(".json") {
            done.extend(recover_file(root, ledger, &file, stem));
        }
    }
    done
}

/// An entry kept in a file of its own (as earlier versions kept them).
fn recover_file(root: &Path, ledger: &Ledger, file: &Path, stem: &str) -> Option<Recovered> {
    let Some(entry) = fs::read(file)
        .ok()
        .and_then(|b| serde_json::from_slice::<Entry>(&b).ok())
    else {
        // A torn entry: the write it announced never started (the entry precedes it).
        let _ = fs::remove_file(file);
        return None;
    };
    let named = entry.record["id"].as_str() == Some(stem);
    let checked = if named {
        check_entry(root, &entry)
    } else {
        Err(NotMandates::Unnamed)
    };
    if let Err(why) = checked {
        let _ = fs::remove_file(file);
        return Some(Recovered::Rejected {
            file: file.display().to_string(),
            reason: why.to_string(),
        });
    }
    finish(root, ledger, &entry, || {
        let _ = fs::remove_file(file);
    })
}

/// An entry in a journal slot; a slot a live process holds is left alone.
fn recover_slot(root: &Path, ledger: &Ledger, path: &Path) -> Option<Recovered> {
    let file = slots::open_locked(path).ok()??;
    let clear = || {
        let _ = slots::mark_free(&file);
    };
    let bytes = match slots::read(&file).ok()? {
        slots::Content::Free => return None,
        slots::Content::Torn => {
            // The write it announced never started (the entry precedes it).
            clear();
            return None;
        }
        slots::Content::Entry(bytes) => bytes,
    };
    let checked = serde_json::from_slice::<Entry>(&bytes)
        .map_err(|e| NotMandates::NotAnEntry(e.to_string()))
        .and_then(|entry| check_entry(root, &entry).map(|()| entry));
    let entry = match checked {
        Ok(entry) => entry,
        Err(why) => {
            clear();
            return Some(Recovered::Rejected {
                file: path.display().to_string(),
                reason: why.to_string(),
            });
        }
    };
    finish(root, ledger, &entry, clear)
}

/// Finishes one entry; `remove` drops it once it is done with.
fn finish(root: &Path, ledger: &Ledger, entry: &Entry, remove: impl FnOnce()) -> Option<Recovered> {
    match recover_one(root, ledger, entry) {
        Ok(None) => None,
        Ok(Some(outcome)) => {
            remove();
            (!matches!(outcome, Recovered::Cleaned { .. })).then_some(outcome)
        }
        Err(e) => Some(Recovered::Failed {
            path: entry.path.clone(),
            reason: e.to_string(),
        }),
    }
}

/// Entries in the workspace's `.orchestration/.journal` (where the journal once lay) are removed
/// unread: a branch or a command could have put them there to have a record of its choosing
/// appended. The directory goes too once empty.
fn refuse_workspace_entries(root: &Path) -> Vec<Recovered> {
    let dir = root.join(WORKSPACE_JOURNAL_DIR);
    // Only a real directory inside the workspace: a branch could make it a link to any
    // directory, whose `.json` files would then be removed.
    let real = fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir())
        && matches!(
            (dir.canonicalize(), root.canonicalize()),
            (Ok(d), Ok(r)) if d.starts_with(&r)
        );
    if !real {
        return Vec::new();
    }
    let Ok(entries) = fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut refused = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".json") || !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        if fs::remove_file(entry.path()).is_ok() {
            refused.push(Recovered::Untrusted {
                file: format!("{WORKSPACE_JOURNAL_DIR}/{name}"),
            });
        }
    }
    let _ = fs::remove_dir(&dir);
    refused
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
    if ledger.contains_record(id)? {
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

/// An entry is acted on only if it is exactly what [`super::Journal::write`] writes: for a
/// workspace path an agent may write, with the temporary name the writer
/// uses beside it, and a record about that path alone. The journal lies outside the workspace,
/// but the data directory is the person's to edit too: anything else (a hand-made entry) must
/// not steer what recovery deletes, reads or records.
fn check_entry(root: &Path, entry: &Entry) -> Result<(), NotMandates> {
    let id = entry.record["id"].as_str().unwrap_or_default();
    let uuid_like = !id.is_empty() && id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
    if !uuid_like {
        return Err(NotMandates::Id);
    }
    let workspace = crate::workspace::Workspace::new(root)
        .map_err(|e| NotMandates::Workspace(e.to_string()))?;
    let resolved = workspace
        .resolve(&entry.path)
        .map_err(|e| NotMandates::Path(e.to_string()))?;
    if resolved.rel != entry.path {
        return Err(NotMandates::NotPlain);
    }
    if let Some(why) = crate::workspace::protected_reason(&resolved.rel) {
        return Err(NotMandates::Protected(why.to_string()));
    }
    let name = resolved
        .abs
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if entry.temp != format!(".{name}.mandate-{id}.tmp") {
        return Err(NotMandates::Temp);
    }
    let files = entry.record["files"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if files
        .iter()
        .any(|f| f["path"].as_str() != Some(entry.path.as_str()))
    {
        return Err(NotMandates::OtherFile);
    }
    let image = &entry.record["metadata"]["dev.mandate"]["images"][entry.path.as_str()];
    let claimed = |key: &str, hash: &Option<String>| match (image[key].as_str(), hash) {
        (Some(h), Some(want)) => h.trim_start_matches("sha256:") == want,
        (None, None) => true,
        _ => false,
    };
    if !image.is_object() || !claimed("before", &entry.before) || !claimed("after", &entry.after) {
        return Err(NotMandates::Images);
    }
    Ok(())
}

/// Why a journal entry is not one Mandate wrote (said in [`Recovered::Rejected`]).
#[derive(Debug, thiserror::Error)]
enum NotMandates {
    #[error("it is not an entry ({0})")]
    NotAnEntry(String),
    #[error("its record's id does not name it")]
    Unnamed,
    #[error("its record's id is not one Mandate makes")]
    Id,
    #[error("{0}")]
    Workspace(String),
    #[error("its path: {0}")]
    Path(String),
    #[error("its path is not a plain workspace path")]
    NotPlain,
    #[error("its path is protected: {0}")]
    Protected(String),
    #[error("its temporary file is not the writer's")]
    Temp,
    #[error("its record is about another file")]
    OtherFile,
    #[error("its record's images do not match it")]
    Images,
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
