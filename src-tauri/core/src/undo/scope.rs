//! What the person asked to take back, turned into a selection of ledger records.

use super::plan::Selection;
use crate::agent::TaskStore;

/// The four grains of undo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grain {
    /// One tool call (its id; the task narrows it when given).
    Call {
        task_id: Option<String>,
        call_id: String,
    },
    /// A turn and everything after it: the turn starting with this message of the person's.
    Turn { task_id: String, message_id: String },
    /// The same, by the turn's number (1 = the task's first message).
    TurnNumber { task_id: String, number: usize },
    /// Every change of a task.
    Task { task_id: String },
    /// Every change of an intent, optionally only since a time (RFC 3339).
    Intent {
        intent_id: String,
        since: Option<String>,
    },
}

/// A resolved grain: the records to select, in words, and the turn to rewind the task to.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub selection: Selection,
    pub label: String,
    /// For a turn: (task, message) to take the conversation back to.
    pub rewind: Option<(String, String)>,
}

#[derive(Debug, thiserror::Error)]
pub enum GrainError {
    #[error("{0}")]
    Task(#[from] crate::agent::StoreError),
    #[error("task {task_id} has no turn {what}; it has {count}")]
    NoTurn {
        task_id: String,
        what: String,
        count: usize,
    },
    #[error("`{0}` is not a time; use RFC 3339, e.g. 2026-11-22T10:00:00Z")]
    BadTime(String),
}

impl Grain {
    pub fn resolve(&self, store: &TaskStore) -> Result<Resolved, GrainError> {
        let only = |selection: Selection, label: String| Resolved {
            selection,
            label,
            rewind: None,
        };
        Ok(match self {
            Grain::Call { task_id, call_id } => only(
                Selection {
                    task_id: task_id.clone(),
                    call_ids: Some([call_id.clone()].into_iter().collect()),
                    ..Selection::default()
                },
                format!("tool call {call_id}"),
            ),
            Grain::Task { task_id } => only(
                Selection {
                    task_id: Some(task_id.clone()),
                    whole_tasks: subtasks(store, task_id, None),
                    ..Selection::default()
                },
                format!("task {task_id}"),
            ),
            Grain::Intent { intent_id, since } => {
                if let Some(s) = since {
                    time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
                        .map_err(|_| GrainError::BadTime(s.clone()))?;
                }
                only(
                    Selection {
                        intent_id: Some(intent_id.clone()),
                        since: since.clone(),
                        ..Selection::default()
                    },
                    match since {
                        Some(s) => format!("intent {intent_id} since {s}"),
                        None => format!("intent {intent_id}"),
                    },
                )
            }
            Grain::TurnNumber { task_id, number } => {
                let record = store.load(task_id)?;
                let mark = number
                    .checked_sub(1)
                    .and_then(|n| record.turns.get(n))
                    .ok_or_else(|| GrainError::NoTurn {
                        task_id: task_id.clone(),
                        what: number.to_string(),
                        count: record.turns.len(),
                    })?;
                return Grain::Turn {
                    task_id: task_id.clone(),
                    message_id: mark.message_id.clone(),
                }
                .resolve(store);
            }
            Grain::Turn {
                task_id,
                message_id,
            } => {
                let record = store.load(task_id)?;
                let calls =
                    record
                        .calls_from_turn(message_id)
                        .ok_or_else(|| GrainError::NoTurn {
                            task_id: task_id.clone(),
                            what: format!("starting with message {message_id}"),
                            count: record.turns.len(),
                        })?;
                let n = record
                    .turns
                    .iter()
                    .position(|t| &t.message_id == message_id)
                    .unwrap_or(0);
                let calls: std::collections::HashSet<String> = calls.into_iter().collect();
                Resolved {
                    selection: Selection {
                        task_id: Some(task_id.clone()),
                        whole_tasks: subtasks(store, task_id, Some(&calls)),
                        call_ids: Some(calls),
                        ..Selection::default()
                    },
                    label: format!("turn {} of task {task_id} and after", n + 1),
                    rewind: Some((task_id.clone(), message_id.clone())),
                }
            }
        })
    }
}

/// The subtasks of `task_id` and theirs, all the way down; with `calls`, only those started by
/// one of these calls of `task_id` (and everything under them).
fn subtasks(
    store: &TaskStore,
    task_id: &str,
    calls: Option<&std::collections::HashSet<String>>,
) -> std::collections::HashSet<String> {
    let all = store.list();
    let mut found = std::collections::HashSet::new();
    let mut next: Vec<String> = all
        .iter()
        .filter(|t| t.parent_id.as_deref() == Some(task_id))
        .filter(|t| {
            calls.is_none_or(|calls| {
                store
                    .load(&t.id)
                    .ok()
                    .and_then(|r| r.parent_call_id)
                    .is_some_and(|c| calls.contains(&c))
            })
        })
        .map(|t| t.id.clone())
        .collect();
    while let Some(id) = next.pop() {
        if found.insert(id.clone()) {
            next.extend(
                all.iter()
                    .filter(|t| t.parent_id.as_deref() == Some(id.as_str()))
                    .map(|t| t.id.clone()),
            );
        }
    }
    found
}
