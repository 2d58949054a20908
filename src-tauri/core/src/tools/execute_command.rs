//! `execute_command`: a shell command in the workspace, with a timeout.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{
    parse_args, resolve, spec_for, Effect, Planned, Tool, ToolCx, ToolError,
    DEFAULT_COMMAND_TIMEOUT, MAX_COMMAND_TIMEOUT,
};
use crate::hooks::{Action, CommandAction};
use crate::llm::ToolSpec;
use crate::protocol::ToolKind;

/// Run a shell command (`sh -c`) in the workspace. Output is streamed to the user and truncated
/// for you. Destructive commands wait for the user's approval. The whole process group is
/// killed on timeout.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The command line.
    pub command: String,
    /// Working directory relative to the workspace root (default: the root).
    pub cwd: Option<String>,
    /// Seconds before the command is killed (default 120, at most 1800).
    pub timeout_seconds: Option<u64>,
}

pub struct ExecuteCommand;

impl Tool for ExecuteCommand {
    fn name(&self) -> &'static str {
        "execute_command"
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Command
    }
    fn spec(&self) -> ToolSpec {
        spec_for::<Args>(self.name(), "Run a shell command in the workspace (cwd optional, timeout_seconds optional). Destructive commands need the user's approval.")
    }
    fn plan(&self, args: Value, cx: &ToolCx<'_>) -> Result<Planned, ToolError> {
        let args: Args = parse_args(self.name(), args)?;
        let command = args.command.trim().to_string();
        if command.is_empty() {
            return Err(ToolError::InvalidArguments("command is empty".into()));
        }
        if command.contains('\0') {
            return Err(ToolError::InvalidArguments(
                "command contains a NUL byte".into(),
            ));
        }
        let cwd = resolve(cx, args.cwd.as_deref().unwrap_or("."))?;
        if !cwd.abs.is_dir() {
            return Err(ToolError::Failed(format!(
                "cwd {} is not a directory",
                cwd.display()
            )));
        }
        let timeout = match args.timeout_seconds {
            Some(0) => {
                return Err(ToolError::InvalidArguments(
                    "timeout_seconds must be at least 1".into(),
                ))
            }
            Some(s) => Duration::from_secs(s).min(MAX_COMMAND_TIMEOUT),
            None => DEFAULT_COMMAND_TIMEOUT,
        };
        Ok(Planned {
            target: command.clone(),
            action: Action::Command(CommandAction {
                command,
                cwd,
                timeout,
            }),
            effect: Effect::Command,
        })
    }
}
