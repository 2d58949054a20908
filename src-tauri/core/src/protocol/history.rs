//! The task history: searching it and exporting a task as Markdown.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::TaskSummary;

/// What to look for in the task history; every part given must hold.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct HistoryQuery {
    /// Words that must all appear, in any case, in the task's title, the person's messages,
    /// the agent's answers, the tools' targets (paths, commands) or its intent's id and name.
    /// Taken literally (no patterns); empty: any task.
    #[serde(default)]
    pub text: String,
    /// An intent's id, or words of its name.
    pub intent: Option<String>,
    /// Tasks still active at or after this moment: RFC 3339, or a day `YYYY-MM-DD` (its
    /// start, UTC).
    pub since: Option<String>,
    /// Tasks started at or before this moment: RFC 3339, or a day (its end, UTC).
    pub until: Option<String>,
    /// Tasks that cost at least this (US dollars); a task of unknown cost does not.
    pub min_cost_usd: Option<f64>,
    /// Tasks that cost at most this; a task of unknown cost does not.
    pub max_cost_usd: Option<f64>,
}

/// Where in a task the words were found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum HistoryField {
    Title,
    /// A message of the person.
    Person,
    /// An answer of the agent.
    Agent,
    /// What a tool call acted on: a path, a command.
    Tool,
    Intent,
}

/// The words in their context, as plain text: the page shows `matched` marked between the two.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct HistorySnippet {
    pub field: HistoryField,
    pub before: String,
    pub matched: String,
    pub after: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct HistoryHit {
    pub task: TaskSummary,
    /// The intent's name in the intents file now, when it is still there.
    pub intent_name: Option<String>,
    /// Where the first word was found; None when no words were asked for.
    pub snippet: Option<HistorySnippet>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct HistoryResults {
    /// Newest first, at most a few hundred.
    pub hits: Vec<HistoryHit>,
    /// How many tasks matched (more than `hits` when the list was cut).
    pub total: u64,
    /// How many tasks were searched.
    pub searched: u64,
}

/// A task written out as Markdown by the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct TaskExport {
    pub markdown: String,
    /// The file the host wrote it to (in Mandate's data directory, out of the agent's reach).
    pub path: String,
}
