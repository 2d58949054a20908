//! The agent's tools. Each file holds one tool: its arguments (the doc comment is what the model
//! reads), its kind, and `plan`, which validates the arguments and works out what the call would do
//! without doing it. The dispatcher runs the plan through the hooks and then executes it.

mod apply_diff;
mod ask_followup_question;
mod attempt_completion;
mod execute_command;
mod list_files;
mod read_file;
mod record_lesson;
mod search_files;
pub mod search_replace;
mod select_active_intent;
pub mod walk;
mod write_to_file;

use std::path::Path;
use std::time::Duration;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use read_file::read_for_model;

use crate::hooks::{Action, TaskGovernance};
use crate::llm::ToolSpec;
use crate::orchestration::intents::IntentsSnapshot;
use crate::protocol::ToolKind;
use crate::workspace::{ResolvedPath, Workspace};

/// What a tool needs to plan a call.
pub struct ToolCx<'a> {
    pub workspace: &'a Workspace,
    pub intents: &'a IntentsSnapshot,
    pub task: &'a TaskGovernance,
}

impl ToolCx<'_> {
    pub fn root(&self) -> &Path {
        self.workspace.root()
    }
}

/// A tool call the model can recover from: bad arguments or a failed operation.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    #[error("{0}")]
    InvalidArguments(String),
    #[error("{0}")]
    Failed(String),
}

/// What executing a planned call means.
#[derive(Debug, Clone)]
pub enum Effect {
    ReadFile {
        path: ResolvedPath,
        start_line: Option<usize>,
        end_line: Option<usize>,
    },
    ListFiles {
        path: ResolvedPath,
        recursive: bool,
    },
    SearchFiles {
        path: ResolvedPath,
        regex: String,
        file_pattern: Option<String>,
    },
    Write,
    Command,
    SelectIntent {
        intent_id: String,
    },
    Ask {
        question: String,
        options: Vec<String>,
    },
    Complete {
        result: String,
    },
    Lesson {
        text: String,
    },
}

#[derive(Debug, Clone)]
pub struct Planned {
    pub action: Action,
    pub effect: Effect,
    /// What the call acts on, for the tool card: a path, a command, an intent id.
    pub target: String,
}

pub trait Tool: Send + Sync {
    fn name(&self) -> &'static str;
    fn kind(&self) -> ToolKind;
    fn spec(&self) -> ToolSpec;
    fn plan(&self, args: Value, cx: &ToolCx<'_>) -> Result<Planned, ToolError>;
}

/// Every tool, in the order the catalog lists them.
pub fn registry() -> Vec<Box<dyn Tool>> {
    vec![
        Box::new(select_active_intent::SelectActiveIntent),
        Box::new(read_file::ReadFile),
        Box::new(list_files::ListFiles),
        Box::new(search_files::SearchFiles),
        Box::new(write_to_file::WriteToFile),
        Box::new(apply_diff::ApplyDiff),
        Box::new(execute_command::ExecuteCommand),
        Box::new(ask_followup_question::AskFollowupQuestion),
        Box::new(attempt_completion::AttemptCompletion),
        Box::new(record_lesson::RecordLesson),
    ]
}

/// Parses arguments into the tool's typed struct; the error says what is wrong and what is expected.
pub(crate) fn parse_args<T: DeserializeOwned + JsonSchema>(
    tool: &str,
    args: Value,
) -> Result<T, ToolError> {
    let args = if args.is_null() {
        Value::Object(Default::default())
    } else {
        args
    };
    serde_json::from_value(args).map_err(|e| {
        let schema = schema_of::<T>();
        let expected: Vec<String> = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| {
                let required: Vec<&str> = schema
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                p.keys()
                    .map(|k| {
                        if required.contains(&k.as_str()) {
                            k.clone()
                        } else {
                            format!("{k}?")
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        ToolError::InvalidArguments(format!(
            "Invalid arguments for {tool}: {e}. Expected {{{}}}.",
            expected.join(", ")
        ))
    })
}

/// The JSON schema of an argument struct, without the decorations providers reject.
pub(crate) fn schema_of<T: JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null);
    if let Some(obj) = schema.as_object_mut() {
        obj.remove("$schema");
        obj.remove("title");
        obj.remove("description");
    }
    schema
}

pub(crate) fn spec_for<T: JsonSchema>(name: &str, description: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: description.into(),
        parameters: schema_of::<T>(),
    }
}

/// Resolves a path argument, as a tool error the model can act on.
pub(crate) fn resolve(cx: &ToolCx<'_>, path: &str) -> Result<ResolvedPath, ToolError> {
    cx.workspace
        .resolve(path)
        .map_err(|e| ToolError::Failed(format!("{e}. Paths are relative to the workspace root.")))
}

pub(crate) fn validate_mutation_class(class: &str) -> Result<String, ToolError> {
    let normalized = class.trim().to_ascii_uppercase();
    if crate::mutation::CLASSES.contains(&normalized.as_str()) {
        Ok(normalized)
    } else {
        Err(ToolError::InvalidArguments(format!(
            "mutation_class must be AST_REFACTOR (moves, renames, reformatting) or INTENT_EVOLUTION (new or changed behaviour), not `{class}`"
        )))
    }
}

/// Bytes of an existing file for a write plan (None when it does not exist yet).
pub(crate) fn current_bytes(path: &ResolvedPath) -> Result<Option<Vec<u8>>, ToolError> {
    match std::fs::read(&path.abs) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::IsADirectory => Err(ToolError::Failed(format!(
            "{} is a directory",
            path.display()
        ))),
        Err(e) => Err(ToolError::Failed(format!(
            "cannot read {}: {e}",
            path.display()
        ))),
    }
}

pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(120);
pub const MAX_COMMAND_TIMEOUT: Duration = Duration::from_secs(1800);

#[cfg(test)]
#[path = "tools_tests.rs"]
mod tests;
