//! Taking changes back: scopes, previews and results.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::DiffHunk;

/// What to take back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum UndoScope {
    Call {
        task_id: String,
        call_id: String,
    },
    /// The turn that starts with this message of the person's, and everything after it; the
    /// conversation is rewound so the message can be edited and sent again.
    Turn {
        task_id: String,
        message_id: String,
    },
    Task {
        task_id: String,
    },
    /// An intent's changes, optionally only since a time (RFC 3339).
    Intent {
        intent_id: String,
        since: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct UndoFileChoice {
    pub path: String,
    /// Hunks of the preview to leave out.
    pub rejected_hunks: Vec<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum UndoAction {
    /// Put back as it was before.
    Restore,
    /// Changed since: the change is taken out, the other edits kept.
    Merge,
    /// Created by the change: removed.
    Remove,
    /// Removed by the change: comes back.
    Recreate,
    /// Already as before.
    Nothing,
    /// Undoing would overwrite someone's edit: left alone (see the reason).
    Conflict,
    /// The earlier version is not known: left alone (see the reason).
    Unavailable,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct UndoFileView {
    pub path: String,
    pub action: UndoAction,
    pub reason: Option<String>,
    pub language: String,
    /// The file now → after the undo, with three lines of context.
    pub hunks: Vec<DiffHunk>,
    pub old_text: String,
    pub new_text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct UndoPreview {
    pub preview_id: String,
    /// What is taken back, in words.
    pub scope: String,
    /// How many recorded changes are taken back.
    pub records: u32,
    pub files: Vec<UndoFileView>,
    /// A turn: the conversation goes back to before its message.
    pub rewinds: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum UndoOutcome {
    Undone,
    Skipped,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct UndoFileOutcome {
    pub path: String,
    pub outcome: UndoOutcome,
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct UndoResult {
    pub files: Vec<UndoFileOutcome>,
    /// For a turn: the message to put back in the composer.
    pub rewound_text: Option<String>,
}
