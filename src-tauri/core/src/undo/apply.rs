//! Applying an undo plan: each file through the journal (its lock, a last check that it still
//! holds what the preview showed, the write, its ledger record), so an undo is appended to the
//! ledger like any change — naming the records it takes back — and never rewrites it.

use std::sync::Arc;

use serde_json::json;

use super::plan::{FileAction, UndoPlan};
use crate::journal::{FileWrite, Journal, WriteError};
use crate::orchestration::intents::IntentStore;
use crate::orchestration::ledger::{now_rfc3339, ApprovalRecord, Ledger, TraceEntry};
use crate::protocol::IntentStatus;
use crate::workspace::Workspace;

/// The person's choice for one file of the preview.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChoice {
    pub path: String,
    /// Hunks of the preview (current → after the undo) to leave out.
    pub rejected_hunks: Vec<u32>,
}

/// What happened to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileResult {
    Undone { record_id: String },
    Skipped { reason: String },
    Failed { reason: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub path: String,
    pub result: FileResult,
}

/// Who takes the change back, as the ledger records it.
pub struct Undoer<'a> {
    /// A person in the window, or headless (the command line).
    pub by: crate::protocol::Approver,
    /// What is undone, in words (`tool call c3 of task …`).
    pub scope: &'a str,
    pub undo_id: &'a str,
}

/// Applies `plan`: every file whose action applies, or only those in `choices` when given.
pub async fn apply(
    ws: &Workspace,
    journal: &Journal,
    ledger: Arc<Ledger>,
    plan: &UndoPlan,
    choices: Option<&[FileChoice]>,
    who: &Undoer<'_>,
) -> Vec<Applied> {
    let mut out = Vec::new();
    for file in &plan.files {
        let choice = match choices {
            None => Some(FileChoice {
                path: file.path.clone(),
                rejected_hunks: Vec::new(),
            }),
            Some(list) => list.iter().find(|c| c.path == file.path).cloned(),
        };
        let result = match (&file.action, choice) {
            (FileAction::Conflict(reason) | FileAction::Unavailable(reason), _) => {
                FileResult::Skipped {
                    reason: reason.clone(),
                }
            }
            (FileAction::Nothing, _) => FileResult::Skipped {
                reason: format!("{} already holds what it held before", file.path),
            },
            (_, None) => FileResult::Skipped {
                reason: format!("{} was left out", file.path),
            },
            (_, Some(choice)) => apply_file(ws, journal, ledger.clone(), file, &choice, who).await,
        };
        out.push(Applied {
            path: file.path.clone(),
            result,
        });
    }
    out
}

async fn apply_file(
    ws: &Workspace,
    journal: &Journal,
    ledger: Arc<Ledger>,
    file: &super::plan::FilePlan,
    choice: &FileChoice,
    who: &Undoer<'_>,
) -> FileResult {
    // Paths come from the ledger, which a person (or worse) may have edited: resolved and
    // checked like any path the agent gives.
    let path = match super::plan::undoable(ws, &file.path) {
        Ok(p) => p,
        Err(reason) => return FileResult::Failed { reason },
    };
    let target = match (&file.current, &file.target) {
        (Some(current), Some(target)) if !choice.rejected_hunks.is_empty() => Some(
            crate::diff::apply_selected(
                &String::from_utf8_lossy(current),
                &String::from_utf8_lossy(target),
                &choice.rejected_hunks,
            )
            .into_bytes(),
        ),
        (_, target) => target.clone(),
    };
    if target == file.current {
        return FileResult::Skipped {
            reason: format!("every hunk of {} was left out", file.path),
        };
    }
    let mut extra = serde_json::Map::new();
    extra.insert("revert_of".into(), json!(file.records));
    extra.insert(
        "undo".into(),
        json!({"id": who.undo_id, "scope": who.scope, "partial": !choice.rejected_hunks.is_empty()}),
    );
    let entry = TraceEntry {
        task_id: file.tasks.first().cloned().unwrap_or_default(),
        intent_id: file.intents.first().cloned().unwrap_or_default(),
        model_id: String::new(),
        tool: "undo".into(),
        tool_call_id: who.undo_id.to_string(),
        contributor: crate::protocol::Contributor::Human,
        mutation_declared: None,
        mutation_computed: None,
        approval: ApprovalRecord {
            by: who.by.clone(),
            at: now_rfc3339(),
            accepted_hunks: Vec::new(),
            rejected_hunks: choice.rejected_hunks.clone(),
            edited: false,
            user_hooks: Vec::new(),
        },
        files: Vec::new(),
        extra,
    };
    let write = FileWrite {
        path,
        base: file.current.clone(),
        new: target,
        mode: file.mode,
        claim_lines: false,
        entry,
    };
    match journal.write(ledger, write, |_| None).await {
        Ok(written) => FileResult::Undone {
            record_id: written.record["id"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        },
        Err(WriteError::Moved { path }) => FileResult::Failed {
            reason: format!("{path} changed after the preview; preview the undo again"),
        },
        Err(e) => FileResult::Failed {
            reason: e.to_string(),
        },
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    #[error("cannot read the trace ledger: {0}")]
    Ledger(std::io::Error),
    #[error(transparent)]
    Intents(#[from] crate::orchestration::intents::IntentError),
}

/// Intents whose changes were taken back: none left means NOT_STARTED again; some left under a
/// DONE intent means it is not done any more. Returns whether the intents file changed.
pub fn follow_intent_status(
    root: &std::path::Path,
    intents: &IntentStore,
    touched: &[String],
) -> Result<bool, StatusError> {
    let changes = super::plan::read_changes(root).map_err(StatusError::Ledger)?;
    let reverted: std::collections::HashSet<&str> = changes
        .iter()
        .flat_map(|c| c.reverts.iter().map(String::as_str))
        .collect();
    let mut changed = false;
    for id in touched {
        let remaining = changes
            .iter()
            .filter(|c| &c.intent_id == id && c.reverts.is_empty())
            .filter(|c| !reverted.contains(c.id.as_str()))
            .count();
        let Some(status) = intents.snapshot().doc.get(id).map(|i| i.status) else {
            continue;
        };
        let next = match (remaining, status) {
            (0, IntentStatus::InProgress | IntentStatus::Done) => IntentStatus::NotStarted,
            (_, IntentStatus::Done) => IntentStatus::InProgress,
            _ => continue,
        };
        intents.set_status(id, next)?;
        changed = true;
    }
    Ok(changed)
}
