//! Tasks, their messages and the tool calls in them.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Idle,
    Running,
    WaitingForApproval,
    WaitingForAnswer,
    /// Waiting for a subtask it started (`new_task`) to finish.
    WaitingForSubtask,
    Completed,
    Failed,
    Cancelled,
    /// Stopped at its cost or token budget; raising the budget and retrying goes on.
    Paused,
}

/// A cap on what a task (or all tasks of an intent) may spend; None is no cap.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    pub max_cost_usd: Option<f64>,
    pub max_tokens: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct Usage {
    /// Every input token sent, cached or not.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// In US dollars, when the model's price is known (condensing calls included).
    pub cost_usd: Option<f64>,
    /// Input tokens read from the provider's prompt cache (part of `input_tokens`).
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache (part of `input_tokens`).
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// What cache reads saved against the full input price, when the price is known.
    #[serde(default)]
    pub cache_saved_usd: Option<f64>,
}

/// How full the model's context window is, as the task header's gauge shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct ContextView {
    /// Tokens the next request holds (the last usage plus an estimate of what was added).
    pub used_tokens: u64,
    /// The model's whole window.
    pub window_tokens: u64,
    /// What input may use: the window less the output reserved and a margin.
    pub usable_tokens: u64,
    /// Where automatic condensing starts.
    pub threshold_tokens: u64,
    /// Where the window figure comes from: `settings`, `provider`, `table`, `learned`, `default`.
    pub window_source: String,
    /// How many times the conversation was condensed.
    pub condensations: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct TaskSummary {
    pub id: String,
    pub title: String,
    pub status: TaskStatus,
    pub intent_id: Option<String>,
    pub model: String,
    pub usage: Usage,
    pub created_at: String,
    pub updated_at: String,
    /// The last error, in words for the user.
    pub error: Option<String>,
    /// How full the model's window is (known once the task has asked the model).
    #[serde(default)]
    pub context: Option<ContextView>,
    /// The slug of the task's mode (None: a task from before modes, or none chosen).
    #[serde(default)]
    pub mode: Option<String>,
    /// The task's todo list (`update_todo_list`, or the person's edits).
    #[serde(default)]
    pub todos: Vec<TodoItem>,
    /// The person changed the list since the model last wrote it (the model is told).
    #[serde(default)]
    pub todos_edited: bool,
    /// The task that started this one with `new_task` (None: the person started it).
    #[serde(default)]
    pub parent_id: Option<String>,
    /// The provider profile it runs on (None: a task from before profiles: the default one).
    #[serde(default)]
    pub profile: Option<String>,
}

/// One item of a task's todo list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct TodoItem {
    pub text: String,
    pub status: TodoStatus,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

impl TodoItem {
    /// The item as a line of the checklist: `[ ]`, `[-]` or `[x]`, then its text.
    pub fn line(&self) -> String {
        let mark = match self.status {
            TodoStatus::Pending => "[ ]",
            TodoStatus::InProgress => "[-]",
            TodoStatus::Completed => "[x]",
        };
        format!("{mark} {}", self.text)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum UiMessage {
    User {
        id: String,
        text: String,
        /// Images the person attached (their previews; the model got the images themselves).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        #[ts(as = "Option<Vec<ImageView>>", optional)]
        images: Vec<ImageView>,
    },
    Assistant {
        id: String,
        safe_html: String,
        complete: bool,
    },
    Tool {
        id: String,
        call: ToolCallView,
    },
    Error {
        id: String,
        message: String,
    },
    Notice {
        id: String,
        text: String,
    },
    /// The model's reasoning before an answer, shown collapsed (plain text).
    Thinking {
        id: String,
        text: String,
    },
    /// The conversation was condensed: what it held before and after, what the summary cost,
    /// and the summary itself (behind a disclosure).
    Condensed {
        id: String,
        tokens_before: u64,
        tokens_after: u64,
        cost_usd: Option<f64>,
        summary_safe_html: String,
        /// True when Mandate condensed at the threshold; false when the person asked.
        automatic: bool,
    },
    /// A subtask this task started: shown while it works, then with how it ended. Posted again
    /// with the same id when it ends.
    Subtask {
        id: String,
        task_id: String,
        title: String,
        mode: String,
        status: TaskStatus,
        /// Its `attempt_completion` result, or why it did not complete.
        result_safe_html: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    Read,
    Mutate,
    Command,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallStatus {
    Running,
    WaitingForApproval,
    Succeeded,
    Denied,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ToolCallView {
    pub call_id: String,
    pub tool: String,
    pub kind: ToolKind,
    /// What it acts on: a path, a command, an intent id.
    pub target: String,
    pub status: ToolCallStatus,
    /// One line on the outcome (or the denial code and message).
    pub summary: String,
    /// Command output or result text, truncated for display.
    pub output: String,
    /// The workspace file the call acts on (reads and writes), to open in the editor.
    #[serde(default)]
    pub path: Option<String>,
    /// Where in `path` to open it (a write: its first changed line), 1-based.
    #[serde(default)]
    pub line: Option<u32>,
    /// Workspace files the call changed and recorded in the ledger: what undoing it takes back.
    #[serde(default)]
    pub changed_paths: Vec<String>,
    /// The call runs in a program outside any confinement (an MCP server the person allowed
    /// to run unconfined, or any stdio server where the machine offers no confinement): it
    /// can read and write whatever the person can; what it changes in the workspace is found
    /// after the call, recorded in scope and undone out of it, and Mandate cannot see what it
    /// does elsewhere.
    #[serde(default)]
    pub unconfined: bool,
}

/// A mode as the picker shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ModeInfo {
    pub slug: String,
    pub name: String,
    /// When to use it, in its author's words.
    pub description: String,
    /// What it allows: `read`, `edit`, `command`, `mcp`.
    pub groups: Vec<String>,
    /// Edits only of paths matching this (a regex), when set.
    pub edit_regex: Option<String>,
    /// `built-in`, `global` or the file it comes from.
    pub source: String,
    /// The model it runs on, when it names one.
    #[serde(default)]
    pub model: Option<String>,
}

/// A slash command as the message box offers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct CommandInfo {
    pub name: String,
    pub description: String,
    pub argument_hint: String,
    /// The file it comes from.
    pub source: String,
}

/// The person's instructions to the agent as Mandate reads them now (Settings).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct InstructionsView {
    /// Rule files every task reads (a task also reads those of the folders it works in, and
    /// its mode's).
    pub rules: Vec<String>,
    pub modes: Vec<ModeInfo>,
    /// `name — file` of each skill.
    pub skills: Vec<String>,
    pub commands: Vec<CommandInfo>,
    /// Files or entries that could not be read, each naming the file.
    pub problems: Vec<String>,
}

/// An image the person attached, as the host re-encoded it: what the chip and the transcript
/// show. `preview` is a small JPEG the host made (a `data:` URL); the page never reads files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ImageView {
    /// SHA-256 of the re-encoded image.
    pub id: String,
    /// The file's name, or `pasted image`.
    pub name: String,
    pub media_type: String,
    pub width: u32,
    pub height: u32,
    /// Size of the re-encoded image.
    pub bytes: u64,
    /// Estimated tokens it adds to the request.
    pub tokens: u64,
    pub preview: String,
}

/// One `@` mention of a message: what it attaches, sized, or why it cannot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct MentionView {
    /// As typed, without the `@`.
    pub mention: String,
    /// Estimated tokens it adds to the request.
    pub tokens: u64,
    pub error: Option<String>,
}
