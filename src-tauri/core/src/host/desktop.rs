//! What the host asks of the desktop around it: a folder picker, the window's title, its focus
//! and taskbar entry, desktop notifications (the shell provides them; the core has no window),
//! and the requests that use them: opening a file in the person's editor and switching the
//! workspace without a restart.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;

use super::{editor, err, Host, Opened};
use crate::protocol::{IpcError, IpcErrorCode, Reply};

#[async_trait]
pub trait Desktop: Send + Sync {
    /// Asks the person for a folder, starting beside `near` (the workspace open now); None when
    /// they cancel.
    async fn pick_folder(&self, near: &Path) -> Option<PathBuf>;
    /// Shows which workspace is open (the window title).
    fn workspace_opened(&self, root: &Path);
    /// Whether the person is looking at the window now (may block briefly).
    fn is_focused(&self) -> bool;
    /// The window's taskbar entry asks for the person's attention (`false`: no longer).
    fn ask_attention(&self, asking: bool);
    /// Shows a desktop notification (in place of `note.replaces`, when not 0); its id, or None
    /// when the desktop shows none. Clicking it brings the window up on the task.
    fn notify(&self, note: &DesktopNote) -> Option<u32>;
    /// Takes down a notification shown before.
    fn withdraw(&self, id: u32);
    /// Asks the person a yes-or-no question in a dialog of the desktop's own, outside the page
    /// (what the page asks, a page under someone else's control could answer itself); `accept`
    /// labels the yes. False when they decline, or when there is no desktop to ask on.
    async fn confirm(&self, question: &Confirmation) -> bool;
}

/// A question only the person may answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confirmation {
    pub title: String,
    pub message: String,
    pub accept: String,
}

/// A desktop notification about one task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesktopNote {
    pub task_id: String,
    /// One line.
    pub summary: String,
    /// Plain text (the shell escapes it for servers that read markup).
    pub body: String,
    /// The notification it replaces (0: none).
    pub replaces: u32,
}

/// No desktop (tests of the host alone): nothing is picked, nothing is shown, and the person
/// is taken to be looking.
pub struct NoDesktop;

#[async_trait]
impl Desktop for NoDesktop {
    async fn pick_folder(&self, _near: &Path) -> Option<PathBuf> {
        None
    }
    fn workspace_opened(&self, _root: &Path) {}
    fn is_focused(&self) -> bool {
        true
    }
    fn ask_attention(&self, _asking: bool) {}
    fn notify(&self, _note: &DesktopNote) -> Option<u32> {
        None
    }
    async fn confirm(&self, _question: &Confirmation) -> bool {
        false
    }
    fn withdraw(&self, _id: u32) {}
}

impl Host {
    pub(super) async fn open_in_editor(
        &self,
        path: &str,
        line: Option<u32>,
    ) -> Result<(), IpcError> {
        let gov = self.governance();
        let resolved = gov
            .workspace
            .resolve(path)
            .map_err(|e| err(IpcErrorCode::InvalidInput, e.to_string()))?;
        let choice = self.settings().editor;
        let root = gov.root().to_path_buf();
        let file = resolved.abs.clone();
        let launch = tokio::task::spawn_blocking(move || {
            if !file.is_file() {
                return Err(err(
                    IpcErrorCode::NotFound,
                    format!("{} is not a file in the workspace", resolved.display()),
                ));
            }
            editor::launch_for(
                &choice,
                &file,
                line.unwrap_or(1),
                &editor::EditorEnv::from_process(),
            )
            .map_err(|e| err(IpcErrorCode::NotFound, e.to_string()))
        })
        .await
        .map_err(|e| err(IpcErrorCode::Internal, e.to_string()))??;
        self.editors
            .start(&launch, &root)
            .map_err(|e| err(IpcErrorCode::Io, e.to_string()))
    }

    /// Puts the open workspace first in the recent list (saved only when that changes it).
    pub(super) fn remember_workspace(&self) {
        let root = self.governance().root().display().to_string();
        let mut settings = self.settings.lock().unwrap_or_else(|p| p.into_inner());
        if settings.remember_workspace(&root) {
            if let Err(e) = settings.save(&self.dirs) {
                drop(settings);
                self.notice(crate::protocol::NoticeLevel::Warning, e.to_string());
            }
        }
    }

    pub(super) async fn open_workspace(
        self: &Arc<Self>,
        path: Option<String>,
    ) -> Result<Reply, IpcError> {
        let root = match path {
            // The page may only name a folder the person opened before.
            Some(p) => {
                if !self.settings().recent_workspaces.contains(&p) {
                    return Err(err(
                        IpcErrorCode::InvalidInput,
                        "only a recent workspace can be opened by name; use Open folder… for another",
                    ));
                }
                PathBuf::from(p)
            }
            None => match self.desktop.pick_folder(self.governance().root()).await {
                Some(p) => p,
                None => return Ok(Reply::Ok),
            },
        };
        let Ok(_no_runs) = self.runs.clone().try_write_owned() else {
            return Err(err(
                IpcErrorCode::Conflict,
                "a task is running in this workspace; stop it (or let it finish) first",
            ));
        };
        let (dirs, secrets, sink) = (self.dirs.clone(), self.secrets.clone(), self.sink.clone());
        let opened =
            tokio::task::spawn_blocking(move || Opened::open(&root, &dirs, &secrets, &sink))
                .await
                .map_err(|e| err(IpcErrorCode::Internal, e.to_string()))?
                .map_err(|e| err(IpcErrorCode::NotFound, e.to_string()))?;
        let root = opened.gov.root().to_path_buf();
        let previous = std::mem::replace(
            &mut *self.opened.write().unwrap_or_else(|p| p.into_inner()),
            Arc::new(opened),
        );
        // Nothing runs there any more; its intent map is brought up to date on the way out.
        let gov = previous.gov.clone();
        gov.processes
            .end_all(crate::protocol::ProcessStopper::Mandate)
            .await;
        if let Ok(Err(e)) = tokio::task::spawn_blocking(move || gov.flush_intent_map()).await {
            self.notice(
                crate::protocol::NoticeLevel::Warning,
                format!("could not update the intent map of the previous workspace: {e}"),
            );
        }
        self.say_recovered();
        self.remember_workspace();
        self.desktop.workspace_opened(&root);
        Ok(Reply::State {
            state: self.state().await,
        })
    }
}
