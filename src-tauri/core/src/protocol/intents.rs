//! Intents as the window shows and edits them.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::Budget;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum IntentStatus {
    NotStarted,
    InProgress,
    Done,
    Blocked,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct IntentView {
    pub id: String,
    pub name: String,
    pub status: IntentStatus,
    pub owned_scope: Vec<String>,
    pub constraints: Vec<String>,
    pub acceptance_criteria: Vec<String>,
    /// The `budget` key of the intent: a cap over all tasks that hold it.
    pub budget: Option<Budget>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct IntentDraft {
    pub id: String,
    pub name: String,
    pub status: IntentStatus,
    pub owned_scope: Vec<String>,
    pub constraints: Vec<String>,
    pub acceptance_criteria: Vec<String>,
    /// The intent's own budget; absent or None removes it.
    #[serde(default)]
    #[ts(optional)]
    pub budget: Option<Budget>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct IntentsView {
    /// Workspace-relative path of the intents file.
    pub path: String,
    pub exists: bool,
    pub intents: Vec<IntentView>,
    /// Why the file on disk does not load (the last good version stays in use).
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct GlobPreview {
    pub glob: String,
    pub error: Option<String>,
    /// The first matching files, workspace-relative.
    pub matches: Vec<String>,
    pub total: u32,
}
