//! What all tasks of one workspace share: the workspace, its intents, ledger, policy and ignore
//! list (reloaded when their files change), the hook engine, and the journal that every governed
//! write goes through. Opening it first finishes what an interrupted writer left.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::checkpoint::{CheckpointStore, ScopeCache};
use crate::hooks::command_policy::{CommandPolicy, PolicyError};
use crate::hooks::ignore_list::{IgnoreError, IntentIgnore, INTENTIGNORE_FILE};
use crate::hooks::HookEngine;
use crate::journal::{Journal, Recovered};
use crate::orchestration::intent_map;
use crate::orchestration::intents::IntentStore;
use crate::orchestration::ledger::Ledger;
use crate::sandbox::Confinement;
use crate::settings::AppDirs;
use crate::workspace::Workspace;

/// Why a file the hooks depend on cannot be used now.
#[derive(Debug, Clone, thiserror::Error)]
pub enum GovernanceError {
    #[error("{0}. Commands are refused until the policy loads.")]
    Policy(Arc<PolicyError>),
    #[error(transparent)]
    Ignore(#[from] IgnoreError),
}

/// A file-backed value, reloaded when the file's size or modification time changes (or that
/// of another file the value says it was made from).
/// `None` until first loaded; then the last load's outcome.
struct Reloading<T> {
    stamp: Vec<Option<(u64, Option<SystemTime>)>>,
    /// The other files the loaded value was made from.
    sources: Vec<PathBuf>,
    loaded: Option<Result<Arc<T>, GovernanceError>>,
}

impl<T> Reloading<T> {
    fn new() -> Mutex<Self> {
        Mutex::new(Self {
            stamp: Vec::new(),
            sources: Vec::new(),
            loaded: None,
        })
    }
}

fn current<T>(
    cell: &Mutex<Reloading<T>>,
    path: &Path,
    sources: impl FnOnce(&T) -> Vec<PathBuf>,
    load: impl FnOnce() -> Result<T, GovernanceError>,
) -> Result<Arc<T>, GovernanceError> {
    let mut state = cell.lock().unwrap_or_else(|p| p.into_inner());
    let stamps = |others: &[PathBuf]| -> Vec<_> {
        std::iter::once(path)
            .chain(others.iter().map(PathBuf::as_path))
            .map(stamp)
            .collect()
    };
    let now = stamps(&state.sources);
    match &state.loaded {
        Some(loaded) if now == state.stamp => loaded.clone(),
        _ => {
            let loaded = load().map(Arc::new);
            state.sources = loaded.as_ref().map(|v| sources(v)).unwrap_or_default();
            // The main file as it was before loading (a change during the load is seen next
            // time); the others as they are now.
            let mut stamp = stamps(&state.sources);
            stamp[0] = now[0];
            state.stamp = stamp;
            state.loaded = Some(loaded.clone());
            loaded
        }
    }
}

pub struct Governance {
    pub workspace: Workspace,
    pub intents: IntentStore,
    pub ledger: Arc<Ledger>,
    pub hooks: HookEngine,
    pub journal: Journal,
    policy: Mutex<Reloading<CommandPolicy>>,
    ignore: Mutex<Reloading<IntentIgnore>>,
    map_dirty: AtomicBool,
    /// What opening the workspace recovered from interrupted writes (said once to the user).
    pub recovered: Vec<Recovered>,
    /// How commands are confined on this machine (found once).
    pub confinement: Confinement,
    /// Mandate's own directories, which commands may neither read for secrets nor write.
    pub app_dirs: Vec<PathBuf>,
    /// The owned files' stat cache for the images kept before each command.
    pub scope_cache: ScopeCache,
    /// The person's own hooks (`.mandate/hooks.json`, `.claude/settings.json`) and which of
    /// them they confirmed.
    pub user_hooks: crate::user_hooks::UserHooks,
    /// The workspace's parsed files, for the repo map and `list_code_definitions`.
    pub code_map: crate::code::map::RepoMap,
    /// The workspace's search index (`codebase_search`).
    pub code_index: crate::code::search::SearchIndex,
    /// The project's check: its baseline and last result (`check_steps`).
    pub project_check: super::ProjectCheck,
    /// What commands left running in the background (`crate::processes`).
    pub processes: crate::processes::ProcessTable,
}

fn stamp(path: &Path) -> Option<(u64, Option<SystemTime>)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.len(), m.modified().ok()))
}

impl Governance {
    /// The person's config directory (global modes and rules), when known.
    pub fn config_dir(&self) -> Option<&Path> {
        self.app_dirs.first().map(PathBuf::as_path)
    }

    /// Opens a workspace; `dirs.data` holds this user's checkpoints. Interrupted writes are
    /// finished or rolled back first (see `journal`).
    pub fn new(workspace: Workspace, dirs: &AppDirs) -> Self {
        let root = workspace.root().to_path_buf();
        let ledger = Arc::new(Ledger::new(&root));
        let recovered = crate::journal::recover(&root, &ledger);
        Self {
            code_map: Default::default(),
            code_index: crate::code::search::SearchIndex::stored_at(
                crate::code::search::index_path(&dirs.data, &root),
            ),
            project_check: super::ProjectCheck::new(&root),
            processes: Default::default(),
            intents: IntentStore::new(&root),
            journal: Journal::new(&root, Arc::new(CheckpointStore::new(&dirs.data, &root))),
            confinement: Confinement::detect(),
            app_dirs: vec![dirs.config.clone(), dirs.data.clone()],
            scope_cache: ScopeCache::default(),
            user_hooks: crate::user_hooks::UserHooks::new(&root, &dirs.data),
            ledger,
            hooks: HookEngine::standard(),
            policy: Reloading::new(),
            ignore: Reloading::new(),
            map_dirty: AtomicBool::new(false),
            recovered,
            workspace,
        }
    }

    /// What the post-hooks may touch.
    pub fn post_context(&self) -> crate::hooks::PostContext<'_> {
        crate::hooks::PostContext {
            root: self.root(),
            intents: &self.intents,
            intent_map_dirty: &self.map_dirty,
        }
    }

    pub fn root(&self) -> &Path {
        self.workspace.root()
    }

    /// The command policy now. A policy file that fails to load (bad YAML, a failing example)
    /// is an error: commands are then refused rather than judged by rules nobody wrote.
    pub fn policy(&self) -> Result<Arc<CommandPolicy>, GovernanceError> {
        let path = crate::orchestration::dir(self.root()).join(CommandPolicy::FILE_NAME);
        current(
            &self.policy,
            &path,
            |_| Vec::new(),
            || CommandPolicy::load(self.root()).map_err(|e| GovernanceError::Policy(Arc::new(e))),
        )
    }

    /// The `.intentignore` list now, with what the repository's git configuration names; an
    /// unreadable list is an error (writes are then refused).
    pub fn ignore(&self) -> Result<Arc<IntentIgnore>, GovernanceError> {
        let sources = |list: &IntentIgnore| list.sources().to_vec();
        current(
            &self.ignore,
            &self.root().join(INTENTIGNORE_FILE),
            sources,
            || Ok(IntentIgnore::load(self.root())?),
        )
    }

    /// Regenerates intent_map.md if a recorded change made it out of date.
    pub fn flush_intent_map(&self) -> std::io::Result<()> {
        if !self.map_dirty.swap(false, Ordering::SeqCst) {
            return Ok(());
        }
        let snapshot = self.intents.snapshot();
        intent_map::regenerate(self.root(), &snapshot.doc)
    }
}
