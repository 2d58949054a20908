//! The person's grant to a stdio server to write in the workspace, bound to the code it was
//! given for: with the definition's hash, the grant keeps the content hash of the program
//! file and of every file outside the workspace its command line names ([`super::launch`]).
//! A command line that runs code from the workspace is never granted ([`grant_for`]), and
//! at every start the code is found and hashed again ([`verify`]): a mismatch drops the
//! grant for that run (the server runs without write access) and Settings say the grant is
//! stale and ask again.
//!
//! Stored in the person's `mcp.json` under `projects.<workspace>.writes.<server>`:
//!
//! ```json
//! {"definition": "<definition hash>", "program": "/usr/bin/node",
//!  "code": {"/usr/bin/node": "sha256:…", "/home/me/srv/index.js": "sha256:…"}}
//! ```
//!
//! An entry in any other form (a bare definition hash, written before grants were bound to
//! code) is stale, never granted.
//!
//! The person's consent to run a server unconfined (`projects.<workspace>.unconfined.<server>`)
//! is bound the same way, and checked the same way at every load and every start: it is for the
//! code the person saw, never for code the workspace (or the agent) could change.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::config::ServerDef;
use super::connection::Resolved;
use super::launch::{self, CommandLine, Launch, Refusal};

/// A grant to write in the workspace, for one definition and the code it ran when granted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteGrant {
    /// The definition's hash ([`ServerDef::definition_hash`]).
    pub definition: String,
    /// The program file, symbolic links resolved.
    pub program: String,
    /// Every bound file (the program too) → `sha256:` + hex of its content.
    pub code: BTreeMap<String, String>,
}

/// An entry of `writes` as stored: a bound grant, or anything else (stale).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum WriteEntry {
    Bound(WriteGrant),
    Older(serde_json::Value),
}

/// What became of a grant, for one definition now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantState {
    NotGranted,
    /// Granted for this definition and the code it runs now.
    InForce(Arc<WriteGrant>),
    /// Granted, but for other code (or before grants were bound to code): not used until
    /// the person allows it again.
    Stale(String),
    /// Granted, but the code it runs is reached through the workspace: never used.
    Refused(String),
}

impl GrantState {
    pub fn grant(&self) -> Option<Arc<WriteGrant>> {
        match self {
            GrantState::InForce(g) => Some(g.clone()),
            _ => None,
        }
    }
}

/// Why a grant no longer matches the code a server runs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Lapse {
    #[error("it was allowed before Mandate bound a grant to the code it runs")]
    Older,
    #[error("its definition changed since it was allowed")]
    Definition,
    #[error("it now runs {now} instead of {then}")]
    Program { then: String, now: String },
    #[error("{0} changed since it was allowed")]
    Changed(String),
    #[error("it now also runs {0}, which it did not when it was allowed")]
    Added(String),
    #[error("{0} is no longer part of what it runs")]
    Removed(String),
    #[error("{path} cannot be read ({why})")]
    Unreadable { path: String, why: String },
    #[error("its definition cannot be filled in ({0})")]
    Unresolved(String),
    #[error(transparent)]
    Refused(#[from] Refusal),
}

/// Why a grant cannot be given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrantError {
    #[error("it is not a stdio server")]
    NotStdio,
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error("{path} cannot be read ({why})")]
    Unreadable { path: String, why: String },
    #[error("its definition cannot be filled in ({0}); store its secrets first")]
    Unresolved(String),
}

/// The code a resolved stdio definition runs when started in `root` (blocking).
pub fn examine(resolved: &Resolved, root: &Path) -> Result<Launch, Refusal> {
    let Resolved::Stdio { command, args, env } = resolved else {
        return Err(Refusal::Runs("it is not a stdio server".into()));
    };
    // The environment it is started with: the same function builds it at the start.
    let spawn_env = super::jail::server_environment(
        std::env::vars(),
        env,
        crate::redact::Redactor::global(),
        Path::new("/tmp"),
        None,
    );
    launch::examine(
        &CommandLine {
            command,
            args,
            own_env: env,
            env: &spawn_env,
        },
        root,
    )
}

/// The grant for `definition` running `launch`: every file hashed (blocking).
pub fn bind(definition: &str, launch: &Launch) -> Result<WriteGrant, GrantError> {
    let mut code = BTreeMap::new();
    for file in std::iter::once(&launch.program).chain(&launch.files) {
        let hash = content_hash(file).map_err(|e| GrantError::Unreadable {
            path: file.display().to_string(),
            why: e.to_string(),
        })?;
        code.insert(file.display().to_string(), hash);
    }
    Ok(WriteGrant {
        definition: definition.to_string(),
        program: launch.program.display().to_string(),
        code,
    })
}

/// The grant a person gives now to `def` (resolved by `resolve`) in `root` (blocking).
pub fn grant_for(
    root: &Path,
    def: &ServerDef,
    resolve: impl FnOnce() -> Result<Resolved, String>,
) -> Result<WriteGrant, GrantError> {
    if !def.is_stdio() {
        return Err(GrantError::NotStdio);
    }
    let resolved = resolve().map_err(GrantError::Unresolved)?;
    let launch = examine(&resolved, root)?;
    bind(&def.definition_hash(), &launch)
}

/// Whether `grant` holds for the code `resolved` runs in `root` now (blocking).
pub fn verify(grant: &WriteGrant, resolved: &Resolved, root: &Path) -> Result<(), Lapse> {
    let launch = examine(resolved, root)?;
    let program = launch.program.display().to_string();
    if program != grant.program {
        return Err(Lapse::Program {
            then: grant.program.clone(),
            now: program,
        });
    }
    let now: Vec<&PathBuf> = std::iter::once(&launch.program)
        .chain(&launch.files)
        .collect();
    for file in &now {
        let shown = file.display().to_string();
        let Some(then) = grant.code.get(&shown) else {
            return Err(Lapse::Added(shown));
        };
        let hash = content_hash(file).map_err(|e| Lapse::Unreadable {
            path: shown.clone(),
            why: e.to_string(),
        })?;
        if hash != *then {
            return Err(Lapse::Changed(shown));
        }
    }
    if let Some(gone) = grant
        .code
        .keys()
        .find(|p| !now.iter().any(|f| f.display().to_string() == **p))
    {
        return Err(Lapse::Removed(gone.clone()));
    }
    Ok(())
}

/// What the stored `entry` is worth for `def` now (blocking: resolves and hashes).
pub fn state(
    root: &Path,
    def: &ServerDef,
    entry: Option<&WriteEntry>,
    resolve: impl FnOnce() -> Result<Resolved, String>,
) -> GrantState {
    let Some(entry) = entry.filter(|_| def.is_stdio()) else {
        return GrantState::NotGranted;
    };
    let grant = match entry {
        WriteEntry::Bound(g) if g.definition == def.definition_hash() => g,
        WriteEntry::Bound(_) => return GrantState::Stale(Lapse::Definition.to_string()),
        WriteEntry::Older(_) => return GrantState::Stale(Lapse::Older.to_string()),
    };
    let checked = resolve()
        .map_err(Lapse::Unresolved)
        .and_then(|resolved| verify(grant, &resolved, root));
    match checked {
        Ok(()) => GrantState::InForce(Arc::new(grant.clone())),
        Err(Lapse::Refused(why)) => GrantState::Refused(why.to_string()),
        Err(lapse) => GrantState::Stale(lapse.to_string()),
    }
}

/// The identity of a file's content as far as the kernel tells: a file whose inode, size,
/// modification and change times are the same was not written since (the change time cannot
/// be set by a program).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

fn stamp(meta: &std::fs::Metadata) -> Stamp {
    use std::os::unix::fs::MetadataExt as _;
    Stamp {
        dev: meta.dev(),
        ino: meta.ino(),
        size: meta.len(),
        mtime: (meta.mtime(), meta.mtime_nsec()),
        ctime: (meta.ctime(), meta.ctime_nsec()),
    }
}

/// Hashes already computed, so that a program of 100 MB is read once, not at every start.
static HASHES: Mutex<BTreeMap<PathBuf, (Stamp, String)>> = Mutex::new(BTreeMap::new());
const KEPT_HASHES: usize = 256;

fn settled(stamp: &Stamp) -> bool {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    now - stamp.ctime.0 > 2
}

/// `sha256:` + hex of a file's content.
pub fn content_hash(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let before = stamp(&file.metadata()?);
    if let Some((kept, hash)) = HASHES.lock().unwrap_or_else(|p| p.into_inner()).get(path) {
        if *kept == before {
            return Ok(hash.clone());
        }
    }
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    let hash = format!("sha256:{}", hex::encode(hasher.finalize()));
    // Kept only when the file did not move while it was read, and was last changed long
    // enough ago that a change within the same clock tick cannot hide behind equal times.
    if stamp(&file.metadata()?) == before && settled(&before) {
        let mut kept = HASHES.lock().unwrap_or_else(|p| p.into_inner());
        if kept.len() >= KEPT_HASHES {
            kept.clear();
        }
        kept.insert(path.to_path_buf(), (before, hash.clone()));
    }
    Ok(hash)
}

#[cfg(test)]
#[path = "grant_tests.rs"]
mod tests;
