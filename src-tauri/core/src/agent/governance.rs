//! What all tasks of one workspace share: the workspace, its intents, ledger, policy and ignore
//! list (reloaded when their files change), the hook engine, and per-path write locks.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::hooks::command_policy::{CommandPolicy, PolicyError};
use crate::hooks::ignore_list::{IntentIgnore, INTENTIGNORE_FILE};
use crate::hooks::HookEngine;
use crate::orchestration::intent_map;
use crate::orchestration::intents::IntentStore;
use crate::orchestration::ledger::Ledger;
use crate::workspace::Workspace;

/// One async mutex per file path: writes to a path are serialized across tasks.
#[derive(Default)]
pub struct PathLocks {
    locks: Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>,
}

impl PathLocks {
    pub fn lock_for(&self, path: &Path) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(|p| p.into_inner());
        locks.entry(path.to_path_buf()).or_default().clone()
    }
}

/// A file-backed value, reloaded when the file's size or modification time changes.
/// `None` until first loaded; then the last load's outcome.
struct Reloading<T> {
    stamp: Option<(u64, Option<SystemTime>)>,
    loaded: Option<Result<Arc<T>, String>>,
}

impl<T> Reloading<T> {
    fn new() -> Mutex<Self> {
        Mutex::new(Self {
            stamp: None,
            loaded: None,
        })
    }
}

fn current<T>(
    cell: &Mutex<Reloading<T>>,
    path: &Path,
    load: impl FnOnce() -> Result<T, String>,
) -> Result<Arc<T>, String> {
    let mut state = cell.lock().unwrap_or_else(|p| p.into_inner());
    let now = stamp(path);
    if state.loaded.is_none() || now != state.stamp {
        state.stamp = now;
        state.loaded = Some(load().map(Arc::new));
    }
    state
        .loaded
        .clone()
        .unwrap_or_else(|| Err("not loaded".into()))
}

pub struct Governance {
    pub workspace: Workspace,
    pub intents: IntentStore,
    pub ledger: Ledger,
    pub hooks: HookEngine,
    pub path_locks: PathLocks,
    policy: Mutex<Reloading<CommandPolicy>>,
    ignore: Mutex<Reloading<IntentIgnore>>,
    /// Environment variables removed from commands the agent runs (API keys).
    pub scrubbed_env: Vec<String>,
    map_dirty: Mutex<bool>,
}

fn stamp(path: &Path) -> Option<(u64, Option<SystemTime>)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.len(), m.modified().ok()))
}

impl Governance {
    pub fn new(workspace: Workspace) -> Self {
        let root = workspace.root().to_path_buf();
        Self {
            intents: IntentStore::new(&root),
            ledger: Ledger::new(&root),
            hooks: HookEngine::standard(),
            path_locks: PathLocks::default(),
            policy: Reloading::new(),
            ignore: Reloading::new(),
            scrubbed_env: vec![crate::secrets::API_KEY_ENV.to_string()],
            map_dirty: Mutex::new(false),
            workspace,
        }
    }

    pub fn root(&self) -> &Path {
        self.workspace.root()
    }

    /// The command policy now. A policy file that fails to load (bad YAML, a failing example)
    /// is an error: commands are then refused rather than judged by rules nobody wrote.
    pub fn policy(&self) -> Result<Arc<CommandPolicy>, String> {
        let path = self
            .root()
            .join(".orchestration")
            .join(CommandPolicy::FILE_NAME);
        current(&self.policy, &path, || {
            CommandPolicy::load(self.root()).map_err(|e| policy_error(&e))
        })
    }

    /// The `.intentignore` list now; an unreadable list is an error (writes are then refused).
    pub fn ignore(&self) -> Result<Arc<IntentIgnore>, String> {
        current(&self.ignore, &self.root().join(INTENTIGNORE_FILE), || {
            IntentIgnore::load(self.root())
        })
    }

    /// Marks intent_map.md for regeneration; [`Governance::flush_intent_map`] does the work, off
    /// the write path.
    pub fn intent_map_dirty(&self) {
        *self.map_dirty.lock().unwrap_or_else(|p| p.into_inner()) = true;
    }

    /// Regenerates intent_map.md if something changed since the last time.
    pub fn flush_intent_map(&self) -> std::io::Result<()> {
        {
            let mut dirty = self.map_dirty.lock().unwrap_or_else(|p| p.into_inner());
            if !*dirty {
                return Ok(());
            }
            *dirty = false;
        }
        let snapshot = self.intents.snapshot();
        intent_map::regenerate(self.root(), &snapshot.doc)
    }
}

fn policy_error(e: &PolicyError) -> String {
    format!("{e}. Commands are refused until the policy loads.")
}
