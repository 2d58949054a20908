//! The agent's tools. Each file holds one tool: its arguments (the doc comment is what the model
//! reads), its kind, `plan` (validate the arguments and work out what the call would do, without
//! doing it: the input of the hooks) and `run` (do it, once the hooks and the person allowed it).
//! The orchestrator (`agent::orchestrator`) owns the order; tools never re-implement it.
//! Adding a tool is one file and one line in [`registry`].

mod apply_diff;
mod ask_followup_question;
mod attempt_completion;
mod background_command;
mod codebase_search;
pub(crate) mod command_record;
mod execute_command;
mod intent_record;
mod list_code_definitions;
mod list_files;
mod new_task;
mod propose_intent;
mod read_file;
mod read_process_output;
mod read_tool_output;
mod record_lesson;
mod request_scope_expansion;
mod search_files;
pub mod search_replace;
mod select_active_intent;
mod skill;
mod stop_process;
mod switch_mode;
mod update_todo_list;
pub mod walk;
mod write;
mod write_to_file;

use std::any::Any;
use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use crate::hooks::Consequence;
pub(crate) use execute_command::keep_owned_files;
pub use new_task::SubtaskSpec;
pub use read_file::read_for_model;
pub use select_active_intent::intent_context;
pub use update_todo_list::{check_todos, parse_todos, reminder as todo_reminder};

use crate::agent::{EventSink, Governance, Interaction, TaskHandle};
use crate::hooks::{Action, Denial, TaskGovernance};
use crate::llm::ToolSpec;
use crate::orchestration::intents::IntentsSnapshot;
use crate::orchestration::ledger::ApprovalRecord;
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

/// What a tool may use while it runs.
pub struct RunCx<'a> {
    pub gov: &'a std::sync::Arc<Governance>,
    pub task: &'a TaskHandle,
    pub events: &'a dyn EventSink,
    /// The same sink, for what outlives the call (a background process's output).
    pub sink: &'a std::sync::Arc<dyn EventSink>,
    pub interaction: &'a dyn Interaction,
    /// `provider/model`, as recorded in the ledger.
    pub model_id: &'a str,
    pub call_id: &'a str,
    pub tool: &'a str,
    pub cancel: &'a CancellationToken,
    /// How the call was approved (by policy, a person, or `--approve`).
    pub approval: &'a ApprovalRecord,
    /// What the person's settings let go without asking.
    pub policy: &'a crate::protocol::ApprovalPolicy,
}

impl RunCx<'_> {
    /// What every ledger record of this call carries under `dev.mandate` besides the typed
    /// fields: a subtask's records name the task that started it.
    pub fn trace_extra(&self) -> serde_json::Map<String, Value> {
        let mut extra = serde_json::Map::new();
        if let Some(parent) = self.task.parent_task() {
            extra.insert("parent_task_id".into(), Value::String(parent));
        }
        extra
    }
}

/// A tool call the model can recover from.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    #[error("{0}")]
    InvalidArguments(String),
    #[error("{0}")]
    Failed(String),
    /// Refused while running (the file moved under an approved write, the ledger refused).
    #[error("{}", .0.message)]
    Denied(Denial),
}

/// The result of a call that ran.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOutput {
    /// What the model reads.
    pub content: String,
    /// One line for the tool card.
    pub summary: String,
    /// Output shown on the card (command output), truncated by the orchestrator.
    pub display: String,
    /// The call ran but failed (a command's non-zero exit): the model sees an error result.
    pub failed: bool,
    /// `attempt_completion`'s result: the task ends.
    pub completed: Option<String>,
    /// `new_task`'s subtask: the turn loop starts it and its result answers the call.
    pub subtask: Option<SubtaskSpec>,
    pub consequences: Vec<Consequence>,
}

impl ToolOutput {
    pub fn text(summary: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            summary: summary.into(),
            content: content.into(),
            ..Self::default()
        }
    }
}

/// A planned call: the hooks' view of it, what the card shows, and the tool's own plan.
pub struct Planned {
    pub action: Action,
    /// What the call acts on, for the tool card: a path, a command, an intent id.
    pub target: String,
    work: Box<dyn Any + Send>,
}

impl std::fmt::Debug for Planned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Planned")
            .field("action", &self.action)
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl Planned {
    /// A plan made by a tool that implements [`Tool`] directly (MCP tools).
    pub fn new<W: Send + 'static>(action: Action, target: String, work: W) -> Self {
        Self {
            action,
            target,
            work: Box::new(work),
        }
    }

    /// The action (as the person may have changed it) and the tool's own plan.
    pub fn into_parts<W: 'static>(self) -> Option<(Action, W)> {
        let action = self.action;
        self.work.downcast::<W>().ok().map(|w| (action, *w))
    }

    /// The tool's own plan (tests look inside it).
    pub fn work<W: 'static>(&self) -> Option<&W> {
        self.work.downcast_ref()
    }
}

/// A planned call as a typed tool returns it.
pub struct Plan<W> {
    pub action: Action,
    pub target: String,
    pub work: W,
}

/// A tool as the orchestrator sees it. Built-in tools implement [`AgentTool`]; tools known only
/// at run time implement this directly.
#[async_trait]
pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    fn kind(&self) -> ToolKind;
    fn spec(&self) -> ToolSpec;
    fn plan(&self, args: Value, cx: &ToolCx<'_>) -> Result<Planned, ToolError>;
    /// `planned.action` may differ from what `plan` returned: the person may have edited it.
    async fn run(&self, planned: Planned, cx: &RunCx<'_>) -> Result<ToolOutput, ToolError>;
}

/// A built-in tool: typed arguments in, typed plan, output out.
#[async_trait]
pub trait AgentTool: Send + Sync + 'static {
    /// The doc comment of `Args` is the schema's description; its fields' comments the arguments'.
    type Args: DeserializeOwned + JsonSchema + Send;
    type Work: Send + 'static;
    const NAME: &'static str;
    const KIND: ToolKind;
    /// What the model reads in the tool list.
    const DESCRIPTION: &'static str;
    fn plan(&self, args: Self::Args, cx: &ToolCx<'_>) -> Result<Plan<Self::Work>, ToolError>;
    async fn run(
        &self,
        action: Action,
        work: Self::Work,
        cx: &RunCx<'_>,
    ) -> Result<ToolOutput, ToolError>;
}

#[async_trait]
impl<T: AgentTool> Tool for T {
    fn name(&self) -> &str {
        T::NAME
    }
    fn kind(&self) -> ToolKind {
        T::KIND
    }
    fn spec(&self) -> ToolSpec {
        spec_for::<T::Args>(T::NAME, T::DESCRIPTION)
    }
    fn plan(&self, args: Value, cx: &ToolCx<'_>) -> Result<Planned, ToolError> {
        let plan = AgentTool::plan(self, parse_args::<T::Args>(T::NAME, args)?, cx)?;
        Ok(Planned {
            action: plan.action,
            target: plan.target,
            work: Box::new(plan.work),
        })
    }
    async fn run(&self, planned: Planned, cx: &RunCx<'_>) -> Result<ToolOutput, ToolError> {
        let work = planned.work.downcast::<T::Work>().map_err(|_| {
            ToolError::Failed(format!(
                "internal: {} was given another tool's plan",
                T::NAME
            ))
        })?;
        AgentTool::run(self, planned.action, *work, cx).await
    }
}

/// Every tool, in the order the catalog lists them.
pub fn registry() -> Vec<Box<dyn Tool>> {
    vec![
        Box::new(select_active_intent::SelectActiveIntent),
        Box::new(read_file::ReadFile),
        Box::new(read_tool_output::ReadToolOutput),
        Box::new(list_files::ListFiles),
        Box::new(search_files::SearchFiles),
        Box::new(list_code_definitions::ListCodeDefinitions),
        Box::new(codebase_search::CodebaseSearch),
        Box::new(write_to_file::WriteToFile),
        Box::new(apply_diff::ApplyDiff),
        Box::new(execute_command::ExecuteCommand),
        Box::new(read_process_output::ReadProcessOutput),
        Box::new(stop_process::StopProcess),
        Box::new(request_scope_expansion::RequestScopeExpansion),
        Box::new(propose_intent::ProposeIntent),
        Box::new(ask_followup_question::AskFollowupQuestion),
        Box::new(switch_mode::SwitchMode),
        Box::new(update_todo_list::UpdateTodoList),
        Box::new(new_task::NewTask),
        Box::new(skill::SkillTool),
        Box::new(skill::RunSlashCommand),
        Box::new(attempt_completion::AttemptCompletion),
        Box::new(record_lesson::RecordLesson),
    ]
}

/// Runs blocking work (file I/O, hashing) off the async workers.
pub(crate) async fn blocking<R: Send + 'static>(
    what: &str,
    f: impl FnOnce() -> Result<R, ToolError> + Send + 'static,
) -> Result<R, ToolError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ToolError::Failed(format!("{what} failed: {e}")))?
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

pub(crate) fn validate_mutation_class(
    class: &str,
) -> Result<crate::mutation::MutationClass, ToolError> {
    let normalized = crate::mutation::MutationClass::parse(&class.trim().to_ascii_uppercase());
    if crate::mutation::MutationClass::DECLARABLE.contains(&normalized) {
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
