//! The servers of one workspace: their definitions read again at each task start (and when
//! Settings ask), the servers supervised, their tools handed to a run, their state pushed to the
//! window. Dropping the hub stops every server.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::catalog::{self, Entry, Hidden};
use super::config::{self, ConfigProblem, ServerDef, Source, Transport};
use super::grant::{self, GrantState};
use super::server::{Granted, Server, ServerEnv};
use super::user_file::{read_capped, UserFile};
use super::McpTool;
use crate::agent::EventSink;
use crate::protocol::{Event, McpSecretView, McpStatus};
use crate::sandbox::Confinement;
use crate::secrets::SecretStore;
use crate::settings::AppDirs;
use crate::tools::Tool;

pub const PROJECT_FILE: &str = ".mcp.json";

/// A server as the hub keeps it: the supervised server and what the person decided about it.
pub(super) struct Slot {
    pub server: Arc<Server>,
    pub consented: bool,
    /// What the person's grant to write in the workspace is worth now.
    pub write: GrantState,
    /// What the person's consent to run it unconfined is worth now.
    pub unconfined: GrantState,
    pub trusts_hints: bool,
    pub secrets: Vec<McpSecretView>,
}

impl Slot {
    /// Whether the grant to write in the workspace is in force (its code unchanged) and was
    /// not dropped at the server's last start.
    pub fn may_write(&self) -> bool {
        matches!(self.write, GrantState::InForce(_)) && self.server.grant_dropped().is_none()
    }
}

#[derive(Default)]
pub(super) struct Slots {
    pub servers: BTreeMap<String, Slot>,
    pub problems: Vec<ConfigProblem>,
    pub file_problems: Vec<String>,
}

pub(super) struct Shared {
    pub root: PathBuf,
    pub config_dir: PathBuf,
    pub env: Arc<ServerEnv>,
    pub sink: Arc<dyn EventSink>,
    /// Consent given for this process only (`mandate run --trust-mcp NAME`).
    pub run_consents: BTreeSet<String>,
    pub cancel: CancellationToken,
    pub slots: Mutex<Slots>,
    /// Notes already given: a window shows each once, not at every task.
    pub noted: Mutex<BTreeSet<String>>,
}

/// The MCP servers of one workspace.
pub struct McpHub {
    pub(super) shared: Arc<Shared>,
}

impl Drop for McpHub {
    fn drop(&mut self) {
        self.shared.cancel.cancel();
    }
}

/// The tools a run gets, and what the person should know about the servers that gave none
/// (each note once per hub).
pub struct RunTools {
    pub tools: Vec<Box<dyn Tool>>,
    pub notes: Vec<String>,
}

/// A definition and what the person decided about it.
struct Decided {
    def: ServerDef,
    consented: bool,
    trusts_hints: bool,
    write: GrantState,
    unconfined: GrantState,
    secrets: Vec<McpSecretView>,
}

/// What one load of both files yields.
struct Loaded {
    defs: Vec<Decided>,
    problems: Vec<ConfigProblem>,
    file_problems: Vec<String>,
}

impl McpHub {
    /// A hub for `root`; must be called inside a tokio runtime (it spawns the event pusher).
    pub fn new(
        root: &Path,
        dirs: &AppDirs,
        secrets: Arc<dyn SecretStore>,
        sink: Arc<dyn EventSink>,
        run_consents: BTreeSet<String>,
    ) -> McpHub {
        let cache_root = AppDirs::cache_from_env();
        McpHub::with_cache(root, dirs, cache_root, secrets, sink, run_consents)
    }

    /// [`McpHub::new`] with servers' cache directories under `cache_root` (none: no cache).
    pub fn with_cache(
        root: &Path,
        dirs: &AppDirs,
        cache_root: Option<PathBuf>,
        secrets: Arc<dyn SecretStore>,
        sink: Arc<dyn EventSink>,
        run_consents: BTreeSet<String>,
    ) -> McpHub {
        let confinement = Confinement::detect();
        McpHub::with_confinement(
            root,
            dirs,
            cache_root,
            confinement,
            secrets,
            sink,
            run_consents,
        )
    }

    /// [`McpHub::with_cache`] on a machine that confines stdio servers as `confinement` says
    /// (tests run each level on purpose).
    pub fn with_confinement(
        root: &Path,
        dirs: &AppDirs,
        cache_root: Option<PathBuf>,
        confinement: Confinement,
        secrets: Arc<dyn SecretStore>,
        sink: Arc<dyn EventSink>,
        run_consents: BTreeSet<String>,
    ) -> McpHub {
        let changes = Arc::new(tokio::sync::Notify::new());
        let notify = changes.clone();
        let shared = Arc::new(Shared {
            root: root.to_path_buf(),
            config_dir: dirs.config.clone(),
            env: Arc::new(ServerEnv {
                root: root.to_path_buf(),
                confinement,
                hidden: vec![dirs.config.clone(), dirs.data.clone()],
                cache_root,
                secrets,
                changed: Box::new(move || notify.notify_one()),
            }),
            sink,
            run_consents,
            cancel: CancellationToken::new(),
            slots: Mutex::default(),
            noted: Mutex::default(),
        });
        spawn_pusher(Arc::downgrade(&shared), changes, shared.cancel.clone());
        McpHub { shared }
    }

    /// Reads both files again and brings the servers in line with them.
    pub async fn refresh(&self) {
        let (dir, env, consents) = (
            self.shared.config_dir.clone(),
            self.shared.env.clone(),
            self.shared.run_consents.clone(),
        );
        let loaded = tokio::task::spawn_blocking(move || load(&env, &dir, &consents))
            .await
            .unwrap_or_else(|e| Loaded {
                defs: Vec::new(),
                problems: Vec::new(),
                file_problems: vec![format!("reading the MCP files failed: {e}")],
            });
        self.reconcile(loaded);
    }

    fn reconcile(&self, loaded: Loaded) {
        let mut slots = self.shared.slots.lock().unwrap_or_else(|p| p.into_inner());
        let mut kept = BTreeMap::new();
        for Decided {
            def,
            consented,
            trusts_hints,
            write,
            unconfined,
            secrets,
        } in loaded.defs
        {
            let status = if def.disabled {
                McpStatus::Disabled
            } else if consented {
                McpStatus::Stopped
            } else {
                McpStatus::NeedsConsent
            };
            // Kept only while nothing the person decided about it changed: consent taken back
            // stops a running server.
            let server = match slots.servers.remove(&def.name) {
                Some(old)
                    if old.server.def == def
                        && old.consented == consented
                        && old.write == write
                        && old.unconfined == unconfined
                        && !old.server.is_stopped_for_good() =>
                {
                    old.server
                }
                old => {
                    if let Some(old) = old {
                        old.server.stop();
                    }
                    let granted = Granted {
                        write: write.grant(),
                        unconfined: unconfined.grant(),
                    };
                    Server::new(
                        def.clone(),
                        status,
                        granted,
                        self.shared.env.clone(),
                        &self.shared.cancel,
                    )
                }
            };
            kept.insert(
                def.name.clone(),
                Slot {
                    server,
                    consented,
                    write,
                    unconfined,
                    trusts_hints,
                    secrets,
                },
            );
        }
        for (_, gone) in std::mem::take(&mut slots.servers) {
            gone.server.stop();
        }
        slots.servers = kept;
        slots.problems = loaded.problems;
        slots.file_problems = loaded.file_problems;
        (self.shared.env.changed)();
    }

    /// Starts every server that may run and is not running; returns them.
    pub fn start_eligible(&self) -> Vec<Arc<Server>> {
        let slots = self.shared.slots.lock().unwrap_or_else(|p| p.into_inner());
        slots
            .servers
            .values()
            .filter(|s| s.consented && !s.server.def.disabled)
            .map(|s| {
                s.server.start_outside_call();
                s.server.clone()
            })
            .collect()
    }

    /// At a task's start: the servers started (each within its start-up time), their tools.
    pub async fn prepare_run(&self) -> RunTools {
        self.refresh().await;
        let started = self.start_eligible();
        futures_util::future::join_all(started.iter().map(|s| s.settled())).await;
        let slots = self.shared.slots.lock().unwrap_or_else(|p| p.into_inner());
        let (entries, _) = catalog_of(&slots);
        let tools = entries
            .into_iter()
            .filter_map(|entry| {
                let slot = slots.servers.get(&entry.server)?;
                Some(
                    Box::new(McpTool::new(slot.server.clone(), entry, slot.trusts_hints))
                        as Box<dyn Tool>,
                )
            })
            .collect();
        let mut noted = self.shared.noted.lock().unwrap_or_else(|p| p.into_inner());
        let notes = notes(&slots)
            .into_iter()
            .filter(|n| noted.insert(n.clone()))
            .collect();
        RunTools { tools, notes }
    }

    /// Stops every server (also done when the hub is dropped; stdio servers still alive when
    /// the process exits are killed then).
    pub fn shutdown(&self) {
        self.shared.cancel.cancel();
    }
}

/// Every tool of the servers that are up (or restarting), named; the rest hidden with a reason.
pub(super) fn catalog_of(slots: &Slots) -> (Vec<Entry>, Vec<Hidden>) {
    let states: Vec<(String, Arc<Vec<catalog::ToolInfo>>)> = slots
        .servers
        .iter()
        .filter_map(|(name, slot)| {
            let state = slot.server.state();
            // A watched one waits, stopped, for a call to start it.
            let waits = slot.server.watched()
                && matches!(state.status, McpStatus::Stopped | McpStatus::Failed)
                && !state.tools.is_empty()
                && !slot.server.is_stopped_for_good();
            (matches!(state.status, McpStatus::Ready | McpStatus::Restarting) || waits)
                .then(|| (name.clone(), state.tools))
        })
        .collect();
    catalog::build(states.iter().map(|(n, t)| (n.as_str(), t.as_slice())))
}

/// Why servers give no tools, in words for the person (shown as notices when a task starts).
fn notes(slots: &Slots) -> Vec<String> {
    let mut out: Vec<String> = slots.file_problems.clone();
    for p in &slots.problems {
        let file = match p.source {
            Source::Project => PROJECT_FILE,
            Source::Settings => "Settings",
        };
        out.push(match &p.server {
            Some(name) => format!("MCP server `{name}` in {file} is not used: {}", p.message),
            None => p.message.clone(),
        });
    }
    for (name, slot) in &slots.servers {
        let state = slot.server.state();
        match state.status {
            McpStatus::NeedsConsent => out.push(format!(
                "MCP server `{name}` from {PROJECT_FILE} was not started: it runs `{}`, which needs your consent (Settings → MCP servers; headless: --trust-mcp {name}).",
                slot.server.def.display_target()
            )),
            McpStatus::Failed => out.push(format!(
                "MCP server `{name}` is unavailable: {}.",
                state.error.unwrap_or_else(|| "it failed".into())
            )),
            McpStatus::Starting => out.push(format!(
                "MCP server `{name}` is still starting; its tools are not offered to this task."
            )),
            _ => {}
        }
        for (tool, why) in state.refused.iter() {
            out.push(format!("MCP tool `{tool}` of `{name}` is hidden: {why}."));
        }
        match &slot.write {
            GrantState::Stale(why) => out.push(format!(
                "MCP server `{name}` runs without your grant to write in the workspace, which is stale: {why}. If you trust the code it runs now, allow it again (Settings → MCP servers; `mandate mcp allow-write {name}`)."
            )),
            GrantState::Refused(why) => out.push(format!(
                "MCP server `{name}` runs without your grant to write in the workspace: {why}."
            )),
            GrantState::NotGranted | GrantState::InForce(_) => {}
        }
        out.extend(unconfined_note(name, slot));
    }
    let (_, hidden) = catalog_of(slots);
    for h in hidden {
        out.push(format!(
            "MCP tool `{}` of `{}` is hidden: {}.",
            h.tool, h.server, h.reason
        ));
    }
    out
}

/// What the person should know of a server's consent to run unconfined: in use (every call
/// asks), stale (allow it again), or refused.
fn unconfined_note(name: &str, slot: &Slot) -> Option<String> {
    let state = slot.server.state();
    // Ready, or stopped with its tools known: it waits for a call to start it.
    let usable = state.status == McpStatus::Ready
        || (state.status == McpStatus::Stopped && !state.tools.is_empty());
    match &slot.unconfined {
        GrantState::InForce(_) if usable => Some(format!(
            "MCP server `{name}` runs unconfined, as you allowed: it can read and write anything you can, and each of its calls waits for your approval; what a call changes in the workspace is recorded when the selected intent owns it and undone otherwise."
        )),
        GrantState::Stale(why) => Some(format!(
            "MCP server `{name}`: your consent to run it unconfined is stale ({why}), so it is not used. If you trust the code it runs now, allow it again (Settings → MCP servers; `mandate mcp allow-unconfined {name}`)."
        )),
        GrantState::Refused(why) => Some(format!(
            "MCP server `{name}` is not run unconfined: {why}."
        )),
        GrantState::InForce(_) | GrantState::NotGranted => None,
    }
}

fn load(env: &ServerEnv, config_dir: &Path, run: &BTreeSet<String>) -> Loaded {
    let (root, secrets) = (env.root.as_path(), env.secrets.as_ref());
    let mut file_problems = Vec::new();
    let project = match read_capped(&root.join(PROJECT_FILE)) {
        Ok(Some(text)) => config::parse(&text, Source::Project, PROJECT_FILE),
        Ok(None) => config::Parsed::default(),
        Err(e) => {
            file_problems.push(format!(
                "{PROJECT_FILE} cannot be read ({e}); no server from it is used"
            ));
            config::Parsed::default()
        }
    };
    let (user, user_ok) = match UserFile::load(config_dir) {
        Ok(f) => (f, true),
        Err(e) => {
            file_problems.push(e.to_string());
            (UserFile::default(), false)
        }
    };
    let settings = user.servers();
    let mut problems = project.problems;
    problems.extend(settings.problems);
    let mut defs: BTreeMap<String, ServerDef> = BTreeMap::new();
    for def in project.servers {
        defs.insert(def.name.clone(), def);
    }
    for def in settings.servers {
        if defs.contains_key(&def.name) {
            problems.push(ConfigProblem {
                server: Some(def.name.clone()),
                source: Source::Project,
                message: "a server of the same name in Settings is used instead".into(),
            });
        }
        defs.insert(def.name.clone(), def);
    }
    let defs = defs
        .into_values()
        .map(|def| {
            let consented = user_ok && user.consented(root, &def) || run.contains(&def.name);
            // While the file with the person's decisions is broken, no hint is believed.
            let trusts_hints = user_ok && user.trusts_hints(root, &def);
            // The code a granted server runs is found and hashed again at every load.
            let entry = user.write_entry(root, &def).filter(|_| user_ok);
            let write = grant::state(root, &def, entry, || super::server::resolve(&def, env));
            // So is the code a server the person allowed to run unconfined runs.
            let entry = user.unconfined_entry(root, &def).filter(|_| user_ok);
            let unconfined = grant::state(root, &def, entry, || super::server::resolve(&def, env));
            let secrets = secret_views(root, &def, secrets);
            Decided {
                def,
                consented,
                trusts_hints,
                write,
                unconfined,
                secrets,
            }
        })
        .collect();
    Loaded {
        defs,
        problems,
        file_problems,
    }
}

/// The secrets a definition references, and whether each is stored.
pub(super) fn secret_views(
    root: &Path,
    def: &ServerDef,
    store: &dyn SecretStore,
) -> Vec<McpSecretView> {
    let names: BTreeSet<String> = referenced(def).into_iter().collect();
    names
        .into_iter()
        .map(|name| {
            let key = super::refs::keyring_name(def.source, root, &def.name, &name);
            let set = matches!(store.get(&key), Ok(Some(_)));
            McpSecretView { name, set }
        })
        .collect()
}

/// Every secret name a definition's values refer to.
pub(super) fn referenced(def: &ServerDef) -> Vec<String> {
    let values: Vec<&String> = match &def.transport {
        Transport::Stdio { args, env, .. } => args.iter().chain(env.values()).collect(),
        Transport::Http { url, headers } => std::iter::once(url).chain(headers.values()).collect(),
    };
    values
        .into_iter()
        .flat_map(|v| super::refs::names(v))
        .collect()
}

/// Pushes the servers' state to the window, at most every 50 ms.
fn spawn_pusher(
    shared: Weak<Shared>,
    changes: Arc<tokio::sync::Notify>,
    cancel: CancellationToken,
) {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = changes.notified() => {}
                () = cancel.cancelled() => return,
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            let Some(shared) = shared.upgrade() else {
                return;
            };
            let overview = super::views::overview(&shared);
            shared.sink.emit(Event::McpServersChanged { overview });
        }
    });
}
