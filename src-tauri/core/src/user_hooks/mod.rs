//! The person's own hooks: command hooks in the Claude Code contract, run under Mandate's gate.
//!
//! Read from `.mandate/hooks.json` and the `hooks` section of `.claude/settings.json` and
//! `.claude/settings.local.json` ([`config`]). Events: `PreToolUse` and `PostToolUse` (matched
//! on the tool's name, Mandate's or the familiar alias, see [`names`]), `UserPromptSubmit`,
//! `Stop`, `SessionStart`, and `Notification` when Mandate waits for the person (advisory,
//! matched on its type: `permission_prompt`, `elicitation_dialog`, `idle_prompt`, or Mandate's
//! `approval`, `question`, `paused`). Each hook gets the event as JSON on stdin
//! ([`event_input`]) and runs confined ([`process`]); what it said is read by the contract
//! ([`output`]).
//!
//! The rules Mandate adds to the contract:
//! - **Under the gate.** PreToolUse hooks run after Mandate's own pre-hooks, only when those
//!   allow or ask; a hook can add a deny or an ask, never lift one (`allow` does not skip an
//!   approval Mandate asks for).
//! - **Fail closed.** A hook that crashes, times out, exits with a code other than 0 or 2,
//!   prints what cannot be read, or cannot run here, denies a tool that changes things
//!   (writes, commands, intent changes), unless its entry says `"advisory": true`; either way
//!   the person is told. On reads and the other events a failure is only reported.
//! - **The person's, not the agent's.** `.mandate/` and `.claude/` are never writable by the
//!   agent. Hooks (and the workspace scripts their commands name) that changed since the person
//!   last confirmed them do not run until confirmed ([`trust`]): in the window a card asks;
//!   headless, `mandate run --trust-hooks` confirms the hooks as they are when the run starts,
//!   and without it (or if they change during the run) they do not run and tools that change
//!   things are refused. A configuration that does not load is an error shown to the person,
//!   and tools that change things are refused until it is fixed.
//! - **In parallel, strictest wins.** The hooks of one event run at the same time (as in the
//!   contract; one command configured twice runs once); deny > ask > allow, and every
//!   context is passed on in configuration order.

pub mod code;
pub mod config;
pub mod names;
pub mod output;
pub mod process;
pub mod trust;

#[cfg(test)]
mod tests;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

pub use config::{ConfigError, HookCommand, HookConfig, HookEvent, HookSpec, Matcher};
pub use output::{EventReport, HookAnswer, Said};
pub use process::{run_hook, HookPlace, HookRun};
pub use trust::{TrustError, TrustStore};

/// Whether the person confirmed the hooks as they are now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    Confirmed,
    /// The person said no in the window: not run, not asked again until they change.
    Declined,
    Unconfirmed,
}

/// The hooks of a workspace now.
#[derive(Debug, Clone)]
pub enum HooksState {
    /// Nothing configured.
    None,
    /// A file cannot be used: no hook runs and tools that change things are refused.
    Broken(ConfigError),
    Ready {
        hooks: Arc<HookConfig>,
        fingerprint: String,
        trust: Trust,
    },
}

/// The hooks of one workspace and what the person decided about them.
pub struct UserHooks {
    root: PathBuf,
    trust: TrustStore,
    /// Confirmed in this process (also when the store could not be written).
    confirmed: Mutex<HashSet<String>>,
    declined: Mutex<HashSet<String>>,
    /// The configuration and fingerprint last made, and the stamps of every file they were
    /// made from: made again only when one of those changes.
    loaded: Mutex<Option<Loaded>>,
    /// One confirmation card at a time: a second task waits for the first answer.
    pub asking: tokio::sync::Mutex<()>,
}

/// What the files said, with the stamps they had (see [`UserHooks::state`]).
struct Loaded {
    stamps: Vec<(PathBuf, Stamp)>,
    said: Result<Option<(Arc<HookConfig>, String)>, ConfigError>,
}

/// A file's size, times and inode: any write, rename or replacement changes it (the change
/// time cannot be set back).
type Stamp = Option<(u64, i64, i64, i64, i64, u64)>;

fn stamp(path: &Path) -> Stamp {
    use std::os::unix::fs::MetadataExt as _;
    let m = std::fs::symlink_metadata(path).ok()?;
    Some((
        m.len(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec(),
        m.ino(),
    ))
}

fn stamps(paths: Vec<PathBuf>) -> Vec<(PathBuf, Stamp)> {
    paths
        .into_iter()
        .map(|p| {
            let s = stamp(&p);
            (p, s)
        })
        .collect()
}

impl UserHooks {
    /// `data_dir` keeps the confirmed fingerprints.
    pub fn new(root: &Path, data_dir: &Path) -> UserHooks {
        UserHooks {
            root: root.to_path_buf(),
            trust: TrustStore::new(data_dir),
            confirmed: Mutex::default(),
            declined: Mutex::default(),
            loaded: Mutex::default(),
            asking: tokio::sync::Mutex::new(()),
        }
    }

    /// The hooks and whether the person confirmed them (blocking). The files are read and the
    /// code hashed again only when one of the files they were made from changed.
    pub fn state(&self) -> HooksState {
        self.state_of(self.said(), true)
    }

    /// [`UserHooks::state`] when nothing it was made from changed and the person's decision
    /// is known without reading the trust store: a few `lstat`s, cheap enough for an async
    /// worker. `None`: call [`UserHooks::state`] off the async workers.
    pub fn state_if_kept(&self) -> Option<HooksState> {
        let said = self.kept()?;
        let state = self.state_of(said, false);
        match &state {
            HooksState::Ready {
                trust: Trust::Unconfirmed,
                ..
            } => None,
            _ => Some(state),
        }
    }

    /// The state of what the files said; `store`: the trust store may be read.
    fn state_of(
        &self,
        said: Result<Option<(Arc<HookConfig>, String)>, ConfigError>,
        store: bool,
    ) -> HooksState {
        let (hooks, fingerprint) = match said {
            Err(e) => return HooksState::Broken(e),
            Ok(None) => return HooksState::None,
            Ok(Some(said)) => said,
        };
        let here = |set: &Mutex<HashSet<String>>| {
            set.lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains(&fingerprint)
        };
        let stored = || {
            let yes = store && self.trust.is_confirmed(&self.root, &fingerprint);
            if yes {
                // Known from now on without reading the store again.
                self.confirmed
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(fingerprint.clone());
            }
            yes
        };
        let trust = if here(&self.confirmed) || stored() {
            Trust::Confirmed
        } else if here(&self.declined) {
            Trust::Declined
        } else {
            Trust::Unconfirmed
        };
        HooksState::Ready {
            hooks,
            fingerprint,
            trust,
        }
    }

    /// The configuration and its fingerprint, kept while their files are unchanged.
    /// What the files said when last read, if none of them changed since.
    #[allow(clippy::type_complexity)]
    fn kept(&self) -> Option<Result<Option<(Arc<HookConfig>, String)>, ConfigError>> {
        let loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        let kept = loaded.as_ref()?;
        let now = stamps(kept.stamps.iter().map(|(p, _)| p.clone()).collect());
        (now == kept.stamps).then(|| kept.said.clone())
    }

    fn said(&self) -> Result<Option<(Arc<HookConfig>, String)>, ConfigError> {
        if let Some(said) = self.kept() {
            return said;
        }
        let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        let sources: Vec<PathBuf> = config::SOURCES.iter().map(|f| self.root.join(f)).collect();
        // Stamped before reading: a change during the reading is seen next time.
        let before = stamps(sources.clone());
        let said = match config::load(&self.root) {
            Err(e) => Err(e),
            Ok(config) if config.is_empty() => Ok(None),
            Ok(config) => {
                let code = code::trace(&self.root, &config);
                let fingerprint = trust::fingerprint_of(&self.root, &config, &code);
                let mut watched = before;
                watched.extend(stamps(code.watched()));
                *loaded = Some(Loaded {
                    stamps: watched,
                    said: Ok(Some((Arc::new(config.clone()), fingerprint.clone()))),
                });
                return Ok(Some((Arc::new(config), fingerprint)));
            }
        };
        *loaded = Some(Loaded {
            stamps: before,
            said: said.clone(),
        });
        said
    }

    /// Remembers the person's yes, here and for later runs.
    pub fn confirm(&self, fingerprint: &str) -> Result<(), TrustError> {
        self.confirmed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(fingerprint.to_string());
        self.trust.confirm(&self.root, fingerprint)
    }

    pub fn decline(&self, fingerprint: &str) {
        self.declined
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(fingerprint.to_string());
    }

    /// Confirms the hooks as they are now (`mandate run --trust-hooks`); returns how many
    /// there are. A configuration that does not load is an error.
    pub fn confirm_current(&self) -> Result<usize, String> {
        match self.state() {
            HooksState::None => Ok(0),
            HooksState::Broken(e) => Err(e.to_string()),
            HooksState::Ready {
                hooks, fingerprint, ..
            } => {
                self.confirm(&fingerprint).map_err(|e| e.to_string())?;
                Ok(hooks.hooks.len())
            }
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }
}

/// The hooks as the confirmation card shows them.
pub fn views(config: &HookConfig) -> Vec<crate::protocol::UserHookView> {
    config
        .hooks
        .iter()
        .map(|h| crate::protocol::UserHookView {
            event: h.event.name().to_string(),
            matcher: if h.event.uses_matcher() {
                h.matcher.describe()
            } else {
                "*".into()
            },
            name: h.name.clone(),
            command: match &h.command {
                HookCommand::Shell(c) => c.clone(),
                HookCommand::Unsupported(what) => format!("(Mandate does not run {what})"),
            },
            source: h.source.to_string(),
            advisory: h.advisory,
            network: h.network,
            timeout_seconds: h.timeout.as_secs_f64(),
        })
        .collect()
}

/// What every event's input carries.
pub struct Common<'a> {
    /// The task id.
    pub session_id: &'a str,
    /// The workspace root.
    pub cwd: &'a Path,
    /// The intent the task holds (a Mandate field: `mandate_intent_id`).
    pub intent_id: Option<&'a str>,
}

/// The JSON a hook reads on stdin: the contract's common fields (`session_id`,
/// `transcript_path` — null: Mandate keeps no transcript file a hook could read —, `cwd`,
/// `permission_mode` — always `default` —, `hook_event_name`), Mandate's `mandate_intent_id`,
/// and the event's own `fields`.
pub fn event_input(event: HookEvent, common: &Common<'_>, fields: Map<String, Value>) -> Value {
    let mut input = json!({
        "session_id": common.session_id,
        "transcript_path": Value::Null,
        "cwd": common.cwd,
        "permission_mode": "default",
        "hook_event_name": event.name(),
        "mandate_intent_id": common.intent_id,
    });
    if let Value::Object(map) = &mut input {
        map.extend(fields);
    }
    input
}

/// Runs `hooks` (all of `event`) at the same time; answers in configuration order.
pub async fn run_event(
    event: HookEvent,
    hooks: &[&HookSpec],
    input: &Value,
    place: &HookPlace<'_>,
    cancel: &CancellationToken,
) -> EventReport {
    let bytes = serde_json::to_vec(input).unwrap_or_default();
    let runs = hooks.iter().map(|hook| {
        let bytes = bytes.clone();
        async move {
            let run = match &hook.command {
                HookCommand::Shell(command) => {
                    run_hook(command, hook.network, hook.timeout, bytes, place, cancel).await
                }
                HookCommand::Unsupported(what) => {
                    HookRun::failed(format!("Mandate does not run {what}"))
                }
            };
            output::interpret(event, hook, run)
        }
    });
    EventReport {
        answers: futures_util::future::join_all(runs).await,
    }
}
