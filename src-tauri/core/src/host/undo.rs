//! Undo from the window: a preview first (per file, what it will hold, hunk by hunk, or why it is
//! left alone), kept until the person applies it with their choices.

use std::collections::HashMap;
use std::sync::Mutex;

use super::{err, Host};
use crate::agent::language_of;
use crate::protocol::{
    Event, IpcError, IpcErrorCode, Reply, UndoAction, UndoFileChoice, UndoFileOutcome,
    UndoFileView, UndoOutcome, UndoPreview, UndoResult, UndoScope,
};
use crate::undo::{self, FileAction, FileChoice, FileResult, Grain, PlanError, Resolved, Undoer};

/// Previews waiting to be applied (the plan is applied against exactly what was shown).
#[derive(Default)]
pub struct Previews {
    plans: Mutex<HashMap<String, (Option<undo::UndoPlan>, Resolved)>>,
}

fn grain(scope: UndoScope) -> Grain {
    match scope {
        UndoScope::Call { task_id, call_id } => Grain::Call {
            task_id: Some(task_id),
            call_id,
        },
        UndoScope::Turn {
            task_id,
            message_id,
        } => Grain::Turn {
            task_id,
            message_id,
        },
        UndoScope::Task { task_id } => Grain::Task { task_id },
        UndoScope::Intent { intent_id, since } => Grain::Intent { intent_id, since },
    }
}

fn view(file: &undo::FilePlan) -> UndoFileView {
    let text = |b: &Option<Vec<u8>>| {
        b.as_deref()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default()
    };
    let (old_text, new_text) = (text(&file.current), text(&file.target));
    let (action, reason) = match &file.action {
        FileAction::Restore => (UndoAction::Restore, None),
        FileAction::Merge => (UndoAction::Merge, None),
        FileAction::Remove => (UndoAction::Remove, None),
        FileAction::Recreate => (UndoAction::Recreate, None),
        FileAction::Nothing => (UndoAction::Nothing, None),
        FileAction::Conflict(r) => (UndoAction::Conflict, Some(r.clone())),
        FileAction::Unavailable(r) => (UndoAction::Unavailable, Some(r.clone())),
    };
    UndoFileView {
        path: file.path.clone(),
        action,
        reason,
        language: language_of(&file.path),
        hunks: if file.action.applies() {
            crate::diff::hunks(&old_text, &new_text)
        } else {
            Vec::new()
        },
        old_text,
        new_text,
    }
}

impl Host {
    /// A task that is running cannot have its changes taken back under it.
    fn refuse_if_running(&self, scope: &UndoScope) -> Result<(), IpcError> {
        let opened = self.opened();
        let tasks = &opened.tasks;
        let busy = match scope {
            UndoScope::Call { task_id, .. }
            | UndoScope::Turn { task_id, .. }
            | UndoScope::Task { task_id } => tasks.get(task_id).is_some_and(|t| t.is_running()),
            UndoScope::Intent { intent_id, .. } => tasks.all().iter().any(|t| {
                t.is_running() && t.governance().selected_intent.as_deref() == Some(intent_id)
            }),
        };
        if busy {
            return Err(err(
                IpcErrorCode::Conflict,
                "a task is still running on these changes; stop it first",
            ));
        }
        Ok(())
    }

    pub(super) async fn preview_undo(&self, scope: UndoScope) -> Result<Reply, IpcError> {
        self.refuse_if_running(&scope)?;
        let opened = self.opened();
        let (gov, store) = (opened.gov.clone(), opened.store.clone());
        let rewinds = matches!(scope, UndoScope::Turn { .. });
        let (plan, resolved) = Self::blocking(move || {
            let resolved = grain(scope)
                .resolve(&store)
                .map_err(|e| err(IpcErrorCode::NotFound, e.to_string()))?;
            match undo::plan(gov.root(), &gov.journal.checkpoints, &resolved.selection) {
                Ok(plan) => Ok((Some(plan), resolved)),
                // A turn without changes still rewinds the conversation.
                Err(PlanError::Nothing(_)) if resolved.rewind.is_some() => Ok((None, resolved)),
                Err(e @ PlanError::Nothing(_)) => Err(err(IpcErrorCode::NotFound, e.to_string())),
                Err(e) => Err(err(IpcErrorCode::Io, e.to_string())),
            }
        })
        .await?;
        let preview = UndoPreview {
            preview_id: uuid::Uuid::new_v4().to_string(),
            scope: resolved.label.clone(),
            records: plan.as_ref().map_or(0, |p| p.records.len() as u32),
            files: plan
                .as_ref()
                .map(|p| p.files.iter().map(view).collect())
                .unwrap_or_default(),
            rewinds,
        };
        self.previews
            .plans
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(preview.preview_id.clone(), (plan, resolved));
        Ok(Reply::UndoPreview { preview })
    }

    pub(super) async fn apply_undo(
        &self,
        preview_id: String,
        files: Vec<UndoFileChoice>,
    ) -> Result<Reply, IpcError> {
        let (plan, resolved) = self
            .previews
            .plans
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&preview_id)
            .ok_or_else(|| {
                err(
                    IpcErrorCode::NotFound,
                    "that preview is no longer open; preview the undo again",
                )
            })?;
        let choices: Vec<FileChoice> = files
            .into_iter()
            .map(|f| FileChoice {
                path: f.path,
                rejected_hunks: f.rejected_hunks,
            })
            .collect();
        let mut outcomes = Vec::new();
        if let Some(plan) = &plan {
            let undo_id = uuid::Uuid::new_v4().to_string();
            let who = Undoer {
                by: crate::protocol::Approver::User,
                scope: &resolved.label,
                undo_id: &undo_id,
            };
            let gov = &self.governance();
            let applied = undo::apply(
                &gov.workspace,
                &gov.journal,
                gov.ledger.clone(),
                plan,
                Some(&choices),
                &who,
            )
            .await;
            outcomes = applied
                .into_iter()
                .map(|a| {
                    let (outcome, reason) = match a.result {
                        FileResult::Undone { .. } => (UndoOutcome::Undone, None),
                        FileResult::Skipped { reason } => (UndoOutcome::Skipped, Some(reason)),
                        FileResult::Failed { reason } => (UndoOutcome::Failed, Some(reason)),
                    };
                    UndoFileOutcome {
                        path: a.path,
                        outcome,
                        reason,
                    }
                })
                .collect();
            let touched: Vec<String> = plan.files.iter().flat_map(|f| f.intents.clone()).collect();
            let gov = self.governance();
            let followed = Self::blocking(move || {
                undo::follow_intent_status(gov.root(), &gov.intents, &touched)
                    .map_err(|e| err(IpcErrorCode::Io, e.to_string()))
            })
            .await;
            match followed {
                Ok(true) => self.sink.emit(Event::IntentsChanged {
                    intents: self.governance().intents.snapshot().view(),
                }),
                Ok(false) => {}
                Err(e) => self.notice(
                    crate::protocol::NoticeLevel::Warning,
                    format!("The intents' status could not follow the undo: {e}"),
                ),
            }
        }
        let rewound_text = match &resolved.rewind {
            Some((task_id, message_id)) => {
                let task = self.task(task_id)?;
                let text = task.rewind_to(message_id);
                task.checkpoint(self.sink.as_ref()).await;
                task.emit_summary(self.sink.as_ref());
                text
            }
            None => None,
        };
        Ok(Reply::UndoApplied {
            result: UndoResult {
                files: outcomes,
                rewound_text,
            },
        })
    }
}
