//! The extension host as the window sees it: one entry point that takes a [`Request`] (as raw
//! JSON from the untrusted UI), validates it, and answers with a [`Reply`] or an [`IpcError`].

mod attention;
mod desktop;
mod diagnostics;
mod discovery;
pub mod editor;
mod health;
mod history;
mod images;
mod intents;
mod interaction;
mod processes;
mod profiles;
mod routes;
mod settings_view;
mod undo;

use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

pub use desktop::{Confirmation, Desktop, DesktopNote, NoDesktop};
pub use interaction::{GuiInteraction, Pending};

use crate::agent::{run_task, AgentEnv, EventSink, Governance, TaskHandle, TaskStore};
use crate::llm::provider_for;
use crate::protocol::{AppState, Event, IpcError, IpcErrorCode, Reply, Request, TaskSummary};
use crate::secrets::SecretStore;
use crate::settings::{AppDirs, Settings};
use crate::workspace::Workspace;

fn err(code: IpcErrorCode, message: impl Into<String>) -> IpcError {
    IpcError::new(code, message)
}

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("cannot open the workspace {path}: {source}")]
    Workspace {
        path: String,
        source: std::io::Error,
    },
    #[error("the workspace {0} is not a directory")]
    NotADirectory(String),
}

/// One open workspace: its governance, its task history and the tasks in memory.
struct Opened {
    gov: Arc<Governance>,
    store: Arc<TaskStore>,
    tasks: Arc<crate::agent::LiveTasks>,
    /// What the history search read of the task files, kept by their stamps.
    history: Arc<crate::history::HistoryIndex>,
    /// The MCP servers of the workspace; stopped when it is closed (the hub is dropped).
    mcp: crate::mcp::McpHub,
}

impl Opened {
    /// Must be called inside the tokio runtime (the MCP hub spawns its event pusher).
    fn open(
        root: &Path,
        dirs: &AppDirs,
        secrets: &Arc<dyn SecretStore>,
        sink: &Arc<dyn EventSink>,
    ) -> Result<Opened, HostError> {
        if !root.is_dir() {
            return Err(HostError::NotADirectory(root.display().to_string()));
        }
        let workspace = Workspace::new(root).map_err(|source| HostError::Workspace {
            path: root.display().to_string(),
            source,
        })?;
        Ok(Opened {
            store: Arc::new(TaskStore::new(&dirs.data, workspace.root())),
            mcp: crate::mcp::McpHub::new(
                workspace.root(),
                dirs,
                secrets.clone(),
                sink.clone(),
                Default::default(),
            ),
            gov: Arc::new(Governance::new(workspace, dirs)),
            tasks: Arc::default(),
            history: Arc::default(),
        })
    }
}

pub struct Host {
    /// Replaced whole when the person opens another folder.
    opened: RwLock<Arc<Opened>>,
    /// Every run of a task holds it shared: a workspace is switched only when none runs.
    runs: Arc<tokio::sync::RwLock<()>>,
    dirs: AppDirs,
    secrets: Arc<dyn SecretStore>,
    sink: Arc<dyn EventSink>,
    desktop: Arc<dyn Desktop>,
    settings: Mutex<Settings>,
    pending: Arc<Pending>,
    attention: Arc<attention::Attention>,
    editors: editor::Launcher,
    runtime: tokio::runtime::Handle,
    watching: std::sync::atomic::AtomicBool,
    previews: undo::Previews,
    ledger_health: health::LedgerHealth,
    /// What opening the workspace found, for the page to come (see [`Host::page_ready`]).
    opening_notices: Mutex<Vec<(crate::protocol::NoticeLevel, String)>>,
    /// Images attached to a message not sent yet.
    images: images::Attached,
}

impl Host {
    /// Opens a workspace. Must be called with a tokio runtime handle for background work.
    pub fn new(
        workspace_root: &Path,
        dirs: AppDirs,
        secrets: Arc<dyn SecretStore>,
        sink: Arc<dyn EventSink>,
        desktop: Arc<dyn Desktop>,
        runtime: tokio::runtime::Handle,
    ) -> Result<Arc<Host>, HostError> {
        let opened = {
            let _inside = runtime.enter();
            Opened::open(workspace_root, &dirs, &secrets, &sink)?
        };
        let (settings, warning) = Settings::load(&dirs);
        let attention = attention::Attention::start(desktop.clone(), &runtime);
        attention.set_notifications(settings.notifications);
        let host = Arc::new(Host {
            opened: RwLock::new(Arc::new(opened)),
            runs: Arc::default(),
            dirs,
            secrets,
            sink,
            desktop,
            settings: Mutex::new(settings),
            pending: Arc::default(),
            attention,
            editors: editor::Launcher::default(),
            runtime,
            watching: Default::default(),
            previews: Default::default(),
            ledger_health: Default::default(),
            opening_notices: Mutex::default(),
            images: Default::default(),
        });
        if let Some(w) = warning {
            host.notice(crate::protocol::NoticeLevel::Warning, w);
        }
        host.say_recovered();
        host.remember_workspace();
        host.prune_checkpoints();
        Ok(host)
    }

    /// Keeps the checkpoint store within its cap, in the background; what a task in the history
    /// can still undo is kept.
    fn prune_checkpoints(&self) {
        let opened = self.opened();
        let (gov, store) = (opened.gov.clone(), opened.store.clone());
        self.runtime.spawn_blocking(move || {
            let open = store.list().into_iter().map(|t| t.id).collect();
            match crate::undo::prune(
                gov.root(),
                &gov.journal.checkpoints,
                &open,
                crate::checkpoint::DEFAULT_CAP,
            ) {
                Ok(r) if r.removed > 0 => tracing::info!(
                    removed = r.removed,
                    before = r.before,
                    after = r.after,
                    "checkpoints pruned"
                ),
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "checkpoints not pruned"),
            }
        });
    }

    fn opened(&self) -> Arc<Opened> {
        self.opened
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The governance of the workspace open now.
    pub fn governance(&self) -> Arc<Governance> {
        self.opened().gov.clone()
    }

    fn notice(&self, level: crate::protocol::NoticeLevel, message: String) {
        self.sink.emit(Event::Notice { level, message });
    }

    /// Keeps, for the next page that subscribes (the window's first, or the one reloaded on a
    /// newly opened workspace), what opening the workspace found of interrupted writes and of
    /// journal entries planted in the workspace (removed unread).
    fn say_recovered(&self) {
        use crate::journal::Recovered;
        use crate::protocol::NoticeLevel;
        let gov = self.governance();
        for done in &gov.recovered {
            let level = match done {
                Recovered::Cleaned { .. } => continue,
                Recovered::Completed { .. }
                | Recovered::RolledBack { .. }
                | Recovered::Abandoned { .. } => NoticeLevel::Info,
                Recovered::Rejected { .. } | Recovered::Untrusted { .. } => NoticeLevel::Warning,
                Recovered::Failed { .. } => NoticeLevel::Error,
            };
            let mut message = done.to_string();
            if let Some(first) = message.get_mut(0..1) {
                first.make_ascii_uppercase();
            }
            self.opening_notices
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((level, format!("{message}.")));
        }
    }

    /// A page subscribed: it is told what opening its workspace found.
    pub fn page_ready(&self) {
        let said = std::mem::take(
            &mut *self
                .opening_notices
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
        );
        for (level, message) in said {
            self.notice(level, message);
        }
    }

    fn settings(&self) -> Settings {
        self.settings
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Watches the intents file and pushes changes (external edits included) to the UI.
    pub fn start_watching(self: &Arc<Self>) {
        if self
            .watching
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return;
        }
        let host = Arc::downgrade(self);
        self.runtime.spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(700));
            loop {
                tick.tick().await;
                let Some(host) = host.upgrade() else { break };
                let gov = host.governance();
                let Ok((snapshot, changed)) =
                    tokio::task::spawn_blocking(move || gov.intents.refresh()).await
                else {
                    continue;
                };
                if changed {
                    host.sink.emit(Event::IntentsChanged {
                        intents: snapshot.view(),
                    });
                }
                host.watch_ledger().await;
            }
        });
    }

    /// Entry point for the UI: raw JSON in, typed reply out. Never panics on bad input.
    pub async fn handle_json(self: &Arc<Self>, raw: serde_json::Value) -> Result<Reply, IpcError> {
        let request: Request = serde_json::from_value(raw).map_err(|e| {
            err(
                IpcErrorCode::MalformedRequest,
                format!("the request is not a valid Mandate request: {e}"),
            )
        })?;
        self.handle(request).await
    }

    pub async fn handle(self: &Arc<Self>, request: Request) -> Result<Reply, IpcError> {
        // Every request is named here, in the list of its area (no catch-all): a new request
        // does not compile until it is routed.
        match request {
            r @ (Request::GetState
            | Request::SaveSettings { .. }
            | Request::SetApiKey { .. }
            | Request::ClearApiKey { .. }
            | Request::ListModels { .. }
            | Request::MoveProfileKey { .. }
            | Request::DeleteProfile { .. }
            | Request::DiscoverLocalServers
            | Request::Diagnostics) => self.handle_settings(r).await,
            r @ (Request::StartTask { .. }
            | Request::ListModes
            | Request::ListCommands
            | Request::ListMentionables { .. }
            | Request::PreviewMentions { .. }
            | Request::AttachImage { .. }
            | Request::ListInstructions
            | Request::SetTaskMode { .. }
            | Request::SetTodos { .. }
            | Request::SendMessage { .. }
            | Request::CancelTask { .. }
            | Request::RetryTask { .. }
            | Request::CondenseTask { .. }
            | Request::AnswerQuestion { .. }
            | Request::DecideApproval { .. }
            | Request::ListTasks
            | Request::OpenTask { .. }
            | Request::DeleteTask { .. }
            | Request::SelectIntent { .. }) => self.handle_task(r).await,
            r @ (Request::ListProcesses { .. } | Request::StopProcess { .. }) => {
                self.handle_processes(r).await
            }
            r @ (Request::ListIntents
            | Request::SaveIntent { .. }
            | Request::DeleteIntent { .. }
            | Request::ReorderIntents { .. }
            | Request::SetIntentStatus { .. }
            | Request::PreviewScope { .. }
            | Request::CheckCommand { .. }) => self.handle_intents(r).await,
            r @ (Request::IntentTrace { .. }
            | Request::Blame { .. }
            | Request::VerifyTrace
            | Request::ChangeDiff { .. }
            | Request::PreviewUndo { .. }
            | Request::ApplyUndo { .. }) => self.handle_trace(r).await,
            r @ (Request::SearchHistory { .. } | Request::ExportTask { .. }) => {
                self.handle_history(r).await
            }
            r @ (Request::OpenInEditor { .. }
            | Request::OpenWorkspace { .. }
            | Request::OpenExternal { .. }) => self.handle_desktop(r).await,
            r @ (Request::ListMcpServers
            | Request::SaveMcpServer { .. }
            | Request::RemoveMcpServer { .. }
            | Request::SetMcpSecret { .. }
            | Request::ClearMcpSecret { .. }
            | Request::GrantMcpConsent { .. }
            | Request::RevokeMcpConsent { .. }
            | Request::SetMcpTrust { .. }
            | Request::RestartMcpServer { .. }
            | Request::SetMcpWorkspaceWrite { .. }
            | Request::SetMcpUnconfined { .. }) => self.handle_mcp(r).await,
        }
    }

    async fn state(&self) -> AppState {
        let gov = self.governance();
        AppState {
            workspace: gov.root().display().to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            settings: self.settings_view().await,
            tasks: self.task_list(),
            intents: gov.intents.snapshot().view(),
            ledger_problem: self.known_ledger_problem(),
        }
    }

    async fn env(
        self: &Arc<Self>,
        opened: &Opened,
        profile: Option<&str>,
    ) -> Result<Arc<AgentEnv>, IpcError> {
        let settings = self.settings();
        let config = self.provider_config(profile).await?;
        let provider = provider_for(config);
        let context = crate::context::ContextConfig::from_settings(
            &settings.context,
            &provider.model_id(),
            &self.dirs.data,
        );
        // The servers start with the task (each within its start-up limit); their tools join
        // Mandate's own for this run.
        opened
            .gov
            .code_index
            .use_embeddings(crate::settings::embeddings_endpoint(&settings.code_search));
        let mcp = opened.mcp.prepare_run().await;
        for note in mcp.notes {
            self.notice(crate::protocol::NoticeLevel::Warning, note);
        }
        let mut tools = crate::tools::registry();
        tools.extend(mcp.tools);
        Ok(Arc::new(AgentEnv {
            gov: opened.gov.clone(),
            provider: Arc::from(provider),
            sink: self.sink.clone(),
            interaction: Arc::new(GuiInteraction {
                pending: self.pending.clone(),
                sink: self.sink.clone(),
                attention: self.attention.clone(),
            }),
            store: opened.store.clone(),
            tasks: opened.tasks.clone(),
            tools: Arc::new(tools),
            approval: settings.approval,
            custom_instructions: settings.custom_instructions,
            max_turns: None,
            interactive: true,
            render_interval: Duration::from_millis(100),
            context,
            budget: settings.budget,
            profiles: Some(Arc::new(profiles::HostProfiles(Arc::downgrade(self)))),
        }))
    }

    async fn start_task(
        self: &Arc<Self>,
        text: String,
        mode: Option<String>,
        images: Vec<String>,
        profile: Option<String>,
    ) -> Result<Reply, IpcError> {
        let text = non_empty(text)?;
        let command = self.command_mode(&text);
        let modes = self.modes();
        // A command that names its mode runs in it, whatever the picker says.
        let slug = command
            .as_deref()
            .or(mode.as_deref())
            .unwrap_or(crate::modes::DEFAULT_MODE);
        let mode = modes
            .get(slug)
            .cloned()
            .ok_or_else(|| err(IpcErrorCode::NotFound, format!("there is no mode `{slug}`")))?;
        // The profile the person picked, else the one Settings name for the mode.
        let profile = profile.or_else(|| self.settings().mode_profiles.get(&mode.slug).cloned());
        // Held until the run ends, so the workspace cannot change under it.
        let run = self.runs.clone().read_owned().await;
        let opened = self.opened();
        let env = self.env(&opened, profile.as_deref()).await?;
        let task = TaskHandle::create(
            opened.store.clone(),
            &opened.gov.root().display().to_string(),
            &text,
            &env.provider.model_id(),
        );
        task.set_mode(&mode);
        task.set_profile(Some(self.profile(profile.as_deref())?.id));
        // A model that cannot read the images refuses the task before it exists.
        self.give_images(&task, &images).await?;
        opened.tasks.insert(task.clone());
        let summary = task.summary();
        self.sink.emit(Event::TaskUpdated {
            task: summary.clone(),
        });
        self.runtime.spawn(async move {
            let _run = run;
            run_task(env, task, Some(text)).await
        });
        Ok(Reply::Task { task: summary })
    }

    async fn spawn_run(
        self: &Arc<Self>,
        task: Arc<TaskHandle>,
        text: Option<String>,
    ) -> Result<(), IpcError> {
        if task.is_running() {
            return Err(err(
                IpcErrorCode::Conflict,
                "the task is still running; wait for it or stop it first",
            ));
        }
        let run = self.runs.clone().read_owned().await;
        let profile = task.summary().profile;
        let env = self.env(&self.opened(), profile.as_deref()).await?;
        self.runtime.spawn(async move {
            let _run = run;
            run_task(env, task, text).await
        });
        Ok(())
    }

    /// Condenses a task's conversation now, at the person's request (not while it runs).
    async fn spawn_condense(self: &Arc<Self>, task: Arc<TaskHandle>) -> Result<(), IpcError> {
        if task.is_running() {
            return Err(err(
                IpcErrorCode::Conflict,
                "the task is running; condense it when it waits for you",
            ));
        }
        let run = self.runs.clone().read_owned().await;
        let profile = task.summary().profile;
        let env = self.env(&self.opened(), profile.as_deref()).await?;
        self.runtime.spawn(async move {
            let _run = run;
            crate::agent::condense_task(env, task).await
        });
        Ok(())
    }

    /// A task in memory, or loaded from history.
    fn task(&self, id: &str) -> Result<Arc<TaskHandle>, IpcError> {
        let opened = self.opened();
        opened
            .tasks
            .get_or_load(&opened.store, id)
            .map_err(|e| err(IpcErrorCode::NotFound, e.to_string()))
    }

    fn task_list(&self) -> Vec<TaskSummary> {
        let opened = self.opened();
        let mut list = opened.store.list();
        for summary in list.iter_mut() {
            if let Some(t) = opened.tasks.get(&summary.id) {
                *summary = t.summary();
            }
        }
        for t in opened.tasks.all() {
            if !list.iter().any(|s| s.id == t.id) {
                list.push(t.summary());
            }
        }
        list.sort_by(|a, b| b.updated_at.cmp(&a.updated_at));
        list
    }
}

fn non_empty(text: String) -> Result<String, IpcError> {
    if text.trim().is_empty() {
        return Err(err(IpcErrorCode::InvalidInput, "the message is empty"));
    }
    if text.len() > 200_000 {
        return Err(err(
            IpcErrorCode::InvalidInput,
            "the message is longer than 200,000 characters",
        ));
    }
    Ok(text)
}
