//! Task history in the user's data directory, one JSON file per task, written atomically after
//! every change so a crash loses at most the step in flight.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::fsutil::write_atomic;
use crate::hooks::TaskGovernance;
use crate::llm::ChatMessage;
use crate::protocol::{TaskStatus, TaskSummary, UiMessage};

/// Everything about a task: what the API sees, what the UI shows, and what the hooks remember.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    pub format: u32,
    pub workspace: String,
    pub summary: TaskSummary,
    pub conversation: Vec<ChatMessage>,
    pub messages: Vec<UiMessage>,
    pub governance: TaskGovernance,
    /// The request that started the task (the prompt's objective).
    pub objective: String,
    /// Where each of the person's messages starts, so a turn can be taken back.
    #[serde(default)]
    pub turns: Vec<TurnMark>,
    /// Condensations and the last measure of the window (what is sent; the conversation
    /// above stays whole).
    #[serde(default)]
    pub context: crate::context::ContextState,
    /// A subtask's: the parent's `new_task` call that started it.
    #[serde(default)]
    pub parent_call_id: Option<String>,
}

/// The start of a turn: the person's message and where it sits in both lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnMark {
    /// The id of the `UiMessage::User` that starts the turn.
    pub message_id: String,
    pub text: String,
    /// Index of its `ChatMessage::User` in `conversation`.
    pub conversation_at: usize,
    /// Index of its `UiMessage::User` in `messages`.
    pub messages_at: usize,
}

impl TaskRecord {
    /// The tool calls made in the turn that starts with `message_id` and every turn after it.
    pub fn calls_from_turn(&self, message_id: &str) -> Option<Vec<String>> {
        let mark = self.turns.iter().find(|t| t.message_id == message_id)?;
        Some(
            self.conversation[mark.conversation_at.min(self.conversation.len())..]
                .iter()
                .flat_map(|m| match m {
                    ChatMessage::Assistant { tool_calls, .. } => {
                        tool_calls.iter().map(|c| c.id.clone()).collect()
                    }
                    _ => Vec::new(),
                })
                .collect(),
        )
    }

    /// Takes the conversation and the transcript back to before the turn that starts with
    /// `message_id`; returns that message's text (for the person to edit and send again).
    pub fn rewind_to(&mut self, message_id: &str) -> Option<String> {
        let n = self.turns.iter().position(|t| t.message_id == message_id)?;
        let mark = self.turns[n].clone();
        self.conversation.truncate(mark.conversation_at);
        self.messages.truncate(mark.messages_at);
        self.turns.truncate(n);
        self.context.rewound_to(self.conversation.len());
        Some(mark.text)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("could not save task {id}: {source}")]
    Save { id: String, source: std::io::Error },
    #[error("task {0} was not found")]
    NotFound(String),
    #[error("task file {path} is unreadable: {message}")]
    Corrupt { path: String, message: String },
}

/// A task that was running when the process died is not running any more.
fn mark_interrupted(summary: &mut TaskSummary) {
    if matches!(
        summary.status,
        TaskStatus::Running
            | TaskStatus::WaitingForApproval
            | TaskStatus::WaitingForAnswer
            | TaskStatus::WaitingForSubtask
    ) {
        summary.status = TaskStatus::Idle;
        summary.error = Some(
            "Interrupted: Mandate stopped while this task was running. Resume to continue.".into(),
        );
    }
}

pub struct TaskStore {
    dir: PathBuf,
}

fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

impl TaskStore {
    /// Tasks of one workspace live in their own directory.
    pub fn new(data_dir: &Path, workspace_root: &Path) -> Self {
        Self {
            dir: data_dir
                .join("tasks")
                .join(crate::settings::workspace_key(workspace_root)),
        }
    }

    fn file(&self, id: &str) -> Result<PathBuf, StoreError> {
        if !valid_id(id) {
            return Err(StoreError::NotFound(id.to_string()));
        }
        Ok(self.dir.join(format!("{id}.json")))
    }

    pub fn save(&self, record: &TaskRecord) -> Result<(), StoreError> {
        let id = record.summary.id.clone();
        let path = self.file(&id)?;
        let bytes = serde_json::to_vec(record).map_err(|e| StoreError::Save {
            id: id.clone(),
            source: std::io::Error::other(e),
        })?;
        // A last net: no secret Mandate holds is kept in the history, whatever carried it here.
        let text = String::from_utf8_lossy(&bytes);
        let bytes = crate::redact::Redactor::global()
            .redact(&text)
            .into_owned()
            .into_bytes();
        write_atomic(&path, &bytes).map_err(|source| StoreError::Save { id, source })
    }

    pub fn load(&self, id: &str) -> Result<TaskRecord, StoreError> {
        let path = self.file(id)?;
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::NotFound(id.to_string()))
            }
            Err(e) => {
                return Err(StoreError::Corrupt {
                    path: path.display().to_string(),
                    message: e.to_string(),
                })
            }
        };
        let mut record: TaskRecord =
            serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt {
                path: path.display().to_string(),
                message: e.to_string(),
            })?;
        mark_interrupted(&mut record.summary);
        Ok(record)
    }

    /// Only the summary of a task (the history list does not need whole conversations).
    fn load_summary(&self, id: &str) -> Option<TaskSummary> {
        #[derive(Deserialize)]
        struct SummaryOnly {
            summary: TaskSummary,
        }
        let bytes = std::fs::read(self.file(id).ok()?).ok()?;
        let mut summary = serde_json::from_slice::<SummaryOnly>(&bytes).ok()?.summary;
        mark_interrupted(&mut summary);
        Some(summary)
    }

    /// Summaries of every readable task, newest first.
    pub fn list(&self) -> Vec<TaskSummary> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut tasks: Vec<TaskSummary> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let id = name.strip_suffix(".json")?;
                self.load_summary(id)
            })
            .collect();
        tasks.sort_by(|a, b| b.updated_at.cmp(&a.updated_at));
        tasks
    }

    /// Each stored task's id and file, in no order (the history search keeps its own copy of
    /// what it read, by the files' stamps).
    pub fn files(&self) -> Vec<(String, PathBuf)> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let id = name.strip_suffix(".json").filter(|id| valid_id(id))?;
                Some((id.to_string(), e.path()))
            })
            .collect()
    }

    /// The directory of a task's kept outputs (whole outputs of results cut for the window).
    fn outputs(&self, id: &str) -> Result<PathBuf, StoreError> {
        self.file(id)?;
        Ok(self.dir.join(format!("{id}.outputs")))
    }

    /// A call id as a file name: its own when it is plain, else its hash.
    fn output_name(call_id: &str) -> String {
        let plain = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        if !call_id.is_empty() && call_id.len() <= 64 && call_id.chars().all(plain) {
            return format!("{call_id}.txt");
        }
        format!(
            "{}.txt",
            &crate::fsutil::sha256_hex(call_id.as_bytes())[..32]
        )
    }

    /// Keeps a call's whole output with the task (atomically, like the task itself).
    pub fn save_output(&self, id: &str, call_id: &str, text: &str) -> Result<(), StoreError> {
        let dir = self.outputs(id)?;
        let save = |source| StoreError::Save {
            id: id.to_string(),
            source,
        };
        std::fs::create_dir_all(&dir).map_err(save)?;
        write_atomic(&dir.join(Self::output_name(call_id)), text.as_bytes()).map_err(save)
    }

    /// A call's kept output.
    pub fn load_output(&self, id: &str, call_id: &str) -> Result<String, StoreError> {
        let path = self.outputs(id)?.join(Self::output_name(call_id));
        std::fs::read_to_string(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => StoreError::NotFound(call_id.to_string()),
            _ => StoreError::Corrupt {
                path: path.display().to_string(),
                message: e.to_string(),
            },
        })
    }

    pub fn delete(&self, id: &str) -> Result<(), StoreError> {
        if let Ok(dir) = self.outputs(id) {
            let _ = std::fs::remove_dir_all(dir);
        }
        let path = self.file(id)?;
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(StoreError::NotFound(id.to_string()))
            }
            Err(source) => Err(StoreError::Save {
                id: id.to_string(),
                source,
            }),
        }
    }
}
