//! The requests of the window by area. [`Host::handle`] names every request in one area's list, so
//! a new request is a compile error until it is routed; each area answers the requests of its list.

use std::sync::Arc;

use super::{discovery, err, intents, non_empty, Host};
use crate::llm::provider_for;
use crate::protocol::{Event, IpcError, IpcErrorCode, Reply, Request};

/// A request sent to an area whose list does not name it: a routing mistake in this module.
fn misrouted(area: &str) -> IpcError {
    err(
        IpcErrorCode::Internal,
        format!("this request is not a request about {area}"),
    )
}

impl Host {
    /// Settings, API keys, models and what the app knows about this machine.
    pub(super) async fn handle_settings(&self, request: Request) -> Result<Reply, IpcError> {
        match request {
            Request::GetState => Ok(Reply::State {
                state: self.state().await,
            }),
            Request::SaveSettings { settings } => {
                let new = self
                    .settings()
                    .with_update(settings)
                    .map_err(|e| err(IpcErrorCode::InvalidInput, e.to_string()))?;
                new.save(&self.dirs)
                    .map_err(|e| err(IpcErrorCode::Io, e.to_string()))?;
                self.attention.set_notifications(new.notifications);
                *self.settings.lock().unwrap_or_else(|p| p.into_inner()) = new;
                self.settings_changed().await
            }
            Request::SetApiKey {
                api_key, profile, ..
            } => self.set_api_key(profile.as_deref(), api_key).await,
            Request::ClearApiKey { profile, .. } => {
                let profile = self.profile(profile.as_deref())?;
                let secrets = self.secrets.clone();
                tokio::task::spawn_blocking(move || {
                    crate::profiles::clear_keys(secrets.as_ref(), &profile)
                })
                .await
                .map_err(|e| err(IpcErrorCode::Internal, e.to_string()))?
                .map_err(|e| err(IpcErrorCode::Keyring, e.to_string()))?;
                self.settings_changed().await
            }
            Request::MoveProfileKey { profile } => self.move_profile_key(&profile).await,
            Request::DeleteProfile { profile } => self.delete_profile(&profile).await,
            Request::ListModels { profile } => {
                let provider = provider_for(self.provider_config(profile.as_deref()).await?);
                let models = provider
                    .list_models()
                    .await
                    .map_err(|e| err(IpcErrorCode::Provider, e.to_string()))?;
                Ok(Reply::Models { models })
            }
            Request::DiscoverLocalServers => Ok(Reply::LocalServers {
                servers: discovery::discover(&discovery::Probes::from_env()).await,
            }),
            Request::Diagnostics => Ok(Reply::Diagnostics {
                text: self.diagnostics().await,
            }),
            _ => Err(misrouted("settings")),
        }
    }

    /// Tasks: starting, talking to, stopping and deleting them, and the person's answers.
    pub(super) async fn handle_task(self: &Arc<Self>, request: Request) -> Result<Reply, IpcError> {
        match request {
            Request::StartTask {
                text,
                mode,
                images,
                profile,
            } => self.start_task(text, mode, images, profile).await,
            Request::ListCommands => {
                let gov = self.governance();
                let mut ignored = Vec::new();
                let commands = crate::modes::commands::load_commands(
                    gov.root(),
                    gov.config_dir(),
                    &mut ignored,
                );
                Ok(Reply::Commands {
                    commands: commands.iter().map(|c| c.info()).collect(),
                })
            }
            Request::ListMentionables { query } => {
                let gov = self.governance();
                let items = tokio::task::spawn_blocking(move || {
                    crate::agent::mentionables(gov.workspace.root(), &query)
                })
                .await
                .unwrap_or_default();
                Ok(Reply::Mentionables { items })
            }
            Request::AttachImage { name, data_base64 } => Ok(Reply::Image {
                image: self.attach_image(name, data_base64).await?,
            }),
            Request::PreviewMentions { text } => {
                let gov = self.governance();
                let mentions = tokio::task::spawn_blocking(move || {
                    let ignore = gov.ignore().unwrap_or_else(|_| {
                        std::sync::Arc::new(crate::hooks::ignore_list::IntentIgnore::empty())
                    });
                    let last_check = gov.project_check.last_text();
                    crate::agent::attach_mentions(
                        &gov.workspace,
                        &ignore,
                        last_check.as_deref(),
                        &text,
                    )
                    .iter()
                    .map(|a| a.view())
                    .collect()
                })
                .await
                .unwrap_or_default();
                Ok(Reply::Mentions { mentions })
            }
            Request::ListInstructions => Ok(Reply::Instructions {
                view: self.instructions(),
            }),
            Request::ListModes => {
                let loaded = self.modes();
                Ok(Reply::Modes {
                    modes: loaded.modes.iter().map(|m| m.info()).collect(),
                    problems: loaded.problems,
                })
            }
            Request::SetTodos { task_id, todos } => {
                let task = self.task(&task_id)?;
                let todos = crate::tools::check_todos(todos)
                    .map_err(|why| err(IpcErrorCode::InvalidInput, why.to_string()))?;
                task.set_todos(todos, true);
                task.checkpoint(self.sink.as_ref()).await;
                let summary = task.summary();
                self.sink.emit(Event::TaskUpdated {
                    task: summary.clone(),
                });
                Ok(Reply::Task { task: summary })
            }
            Request::SetTaskMode { task_id, mode } => {
                let task = self.task(&task_id)?;
                let modes = self.modes();
                let mode = modes.get(&mode).ok_or_else(|| {
                    err(IpcErrorCode::NotFound, format!("there is no mode `{mode}`"))
                })?;
                task.set_mode(mode);
                // A mode on a profile of its own (Settings) takes the task's next run there; a
                // running task moves at its next turn (the turn loop sees the mode change).
                if let Some(profile) = self.settings().mode_profiles.get(&mode.slug) {
                    if !task.is_running() {
                        task.set_profile(Some(profile.clone()));
                    }
                }
                task.checkpoint(self.sink.as_ref()).await;
                let summary = task.summary();
                self.sink.emit(Event::TaskUpdated {
                    task: summary.clone(),
                });
                Ok(Reply::Task { task: summary })
            }
            Request::SendMessage {
                task_id,
                text,
                images,
            } => {
                let text = non_empty(text)?;
                let task = self.task(&task_id)?;
                if task.is_running() {
                    return Err(err(
                        IpcErrorCode::Conflict,
                        "the task is still running; wait for it or stop it first",
                    ));
                }
                self.give_images(&task, &images).await?;
                let wanted = self.command_mode(&text);
                if let Some(mode) = wanted.and_then(|slug| self.modes().get(&slug).cloned()) {
                    task.set_mode(&mode);
                }
                self.spawn_run(task, Some(text)).await?;
                Ok(Reply::Ok)
            }
            Request::CancelTask { task_id } => {
                self.task(&task_id)?.cancel();
                Ok(Reply::Ok)
            }
            Request::RetryTask { task_id } => {
                let task = self.task(&task_id)?;
                // Retrying after a plain answer asks for that answer again.
                task.drop_plain_answer();
                self.spawn_run(task, None).await?;
                Ok(Reply::Ok)
            }
            Request::CondenseTask { task_id } => {
                let task = self.task(&task_id)?;
                self.spawn_condense(task).await?;
                Ok(Reply::Ok)
            }
            Request::AnswerQuestion {
                task_id,
                call_id,
                answer,
            } => {
                if self.pending.answer(&task_id, &call_id, answer) {
                    Ok(Reply::Ok)
                } else {
                    Err(err(
                        IpcErrorCode::NotFound,
                        "that question is no longer waiting for an answer",
                    ))
                }
            }
            Request::DecideApproval {
                task_id,
                approval_id,
                decision,
            } => {
                if self.pending.decide(&task_id, &approval_id, decision) {
                    Ok(Reply::Ok)
                } else {
                    Err(err(
                        IpcErrorCode::NotFound,
                        "that approval is no longer pending (it was decided already or the task stopped)",
                    ))
                }
            }
            Request::ListTasks => Ok(Reply::Tasks {
                tasks: self.task_list(),
            }),
            Request::OpenTask { task_id } => {
                let record = self.task(&task_id)?.record();
                Ok(Reply::TaskDetail {
                    task: record.summary,
                    messages: record.messages,
                })
            }
            Request::DeleteTask { task_id } => self.delete_task(task_id),
            Request::SelectIntent { task_id, intent_id } => {
                self.select_intent(&task_id, intent_id).await?;
                Ok(Reply::Ok)
            }
            _ => Err(misrouted("tasks")),
        }
    }

    /// Everything the person keeps for the agent, as read now.
    fn instructions(&self) -> crate::protocol::InstructionsView {
        use crate::modes::commands::{load_commands, load_skills};
        let gov = self.governance();
        let (root, config) = (gov.root(), gov.config_dir());
        let modes = crate::modes::load_modes(root, config);
        let mut problems = modes.problems.clone();
        let skills = load_skills(root, config, &mut problems);
        let commands = load_commands(root, config, &mut problems);
        crate::protocol::InstructionsView {
            rules: crate::prompt::load_rules(root, config, &[])
                .into_iter()
                .map(|(name, _)| name)
                .collect(),
            modes: modes.modes.iter().map(|m| m.info()).collect(),
            skills: skills
                .into_iter()
                .map(|s| format!("{} — {}", s.name, s.shown))
                .collect(),
            commands: commands.iter().map(|c| c.info()).collect(),
            problems,
        }
    }

    /// The mode named by the person's command when the message starts with one (`/NAME`);
    /// the run expands the command itself.
    pub(super) fn command_mode(&self, text: &str) -> Option<String> {
        let gov = self.governance();
        let mut problems = Vec::new();
        let commands =
            crate::modes::commands::load_commands(gov.root(), gov.config_dir(), &mut problems);
        let (_, command) = crate::modes::commands::expand_message(text, &commands);
        command.and_then(|c| c.mode.clone())
    }

    /// The workspace's modes now (their files are read each time: the person may edit them).
    pub(super) fn modes(&self) -> crate::modes::LoadedModes {
        let gov = self.governance();
        crate::modes::load_modes(gov.root(), gov.config_dir())
    }

    fn delete_task(&self, task_id: String) -> Result<Reply, IpcError> {
        let task = self.task(&task_id)?;
        if task.is_running() {
            return Err(err(
                IpcErrorCode::Conflict,
                "the task is running; stop it first",
            ));
        }
        let opened = self.opened();
        opened
            .store
            .delete(&task_id)
            .map_err(|e| err(IpcErrorCode::Io, e.to_string()))?;
        if let Some(task) = opened.tasks.remove(&task_id) {
            task.abandon();
        }
        self.end_processes_of(&task_id);
        self.sink.emit(Event::TaskDeleted { task_id });
        Ok(Reply::Ok)
    }

    /// The intents file, the scope previews and the command check of the intent editor.
    pub(super) async fn handle_intents(&self, request: Request) -> Result<Reply, IpcError> {
        match request {
            Request::ListIntents => self.list_intents().await,
            Request::SaveIntent {
                original_id,
                intent,
            } => self.save_intent(original_id, intent).await,
            Request::DeleteIntent { id } => self.delete_intent(id).await,
            Request::ReorderIntents { ids } => self.reorder_intents(ids).await,
            Request::SetIntentStatus { id, status } => self.set_intent_status(id, status).await,
            Request::PreviewScope { globs } => self.preview_scope(globs).await,
            Request::CheckCommand { command } => self.check_command(command).await,
            _ => Err(misrouted("intents")),
        }
    }

    /// The trace ledger and undoing what it records.
    pub(super) async fn handle_trace(&self, request: Request) -> Result<Reply, IpcError> {
        match request {
            Request::IntentTrace { intent_id } => self.intent_trace(intent_id).await,
            Request::Blame { path } => self.blame(path).await,
            Request::VerifyTrace => self.verify_trace().await,
            Request::ChangeDiff { record_id, path } => self.change_diff(record_id, path).await,
            Request::PreviewUndo { scope } => self.preview_undo(scope).await,
            Request::ApplyUndo { preview_id, files } => self.apply_undo(preview_id, files).await,
            _ => Err(misrouted("the trace")),
        }
    }

    /// What leaves the window for the desktop: an editor, a folder, a link.
    pub(super) async fn handle_desktop(
        self: &Arc<Self>,
        request: Request,
    ) -> Result<Reply, IpcError> {
        match request {
            Request::OpenInEditor { path, line } => {
                self.open_in_editor(&path, line).await?;
                Ok(Reply::Ok)
            }
            Request::OpenWorkspace { path } => self.open_workspace(path).await,
            Request::OpenExternal { url } => {
                intents::open_external(&url)?;
                Ok(Reply::Ok)
            }
            _ => Err(misrouted("the desktop")),
        }
    }

    /// The MCP servers: listing and changing them.
    pub(super) async fn handle_mcp(&self, request: Request) -> Result<Reply, IpcError> {
        let opened = self.opened();
        let mcp = &opened.mcp;
        let result = match request {
            Request::ListMcpServers => {
                return Ok(Reply::McpServers {
                    overview: mcp.overview(true).await,
                })
            }
            Request::SaveMcpServer { name, server } => mcp.save_server(name, server).await,
            Request::RemoveMcpServer { name } => mcp.remove_server(name).await,
            Request::SetMcpSecret {
                server,
                name,
                value,
            } => mcp.set_secret(server, name, Some(value)).await,
            Request::ClearMcpSecret { server, name } => mcp.set_secret(server, name, None).await,
            Request::GrantMcpConsent {
                name,
                definition_hash,
            } => mcp.grant_consent(name, definition_hash).await,
            Request::RevokeMcpConsent { name } => mcp.revoke_consent(name).await,
            Request::SetMcpTrust { name, trusted } => mcp.set_trust(name, trusted).await,
            Request::RestartMcpServer { name } => mcp.restart(name).await,
            Request::SetMcpWorkspaceWrite {
                name,
                definition_hash,
                allowed,
            } => {
                mcp.set_workspace_write(name, definition_hash, allowed)
                    .await
            }
            Request::SetMcpUnconfined {
                name,
                definition_hash,
                allowed,
            } => mcp.set_unconfined(name, definition_hash, allowed).await,
            _ => return Err(misrouted("MCP servers")),
        };
        result
            .map(|overview| Reply::McpServers { overview })
            .map_err(|e| {
                use crate::mcp::ManageError as E;
                let code = match &e {
                    E::Invalid(_) | E::Refused(_) => IpcErrorCode::InvalidInput,
                    E::NotFound(_) => IpcErrorCode::NotFound,
                    E::Conflict(_) => IpcErrorCode::Conflict,
                    E::File(_) => IpcErrorCode::Io,
                    E::Keyring(_) => IpcErrorCode::Keyring,
                    E::Internal(_) => IpcErrorCode::Internal,
                };
                err(code, e.to_string())
            })
    }
}
