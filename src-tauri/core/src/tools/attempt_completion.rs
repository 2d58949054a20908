//! `attempt_completion`: the task is done; the result is shown to the user.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{parse_args, spec_for, Effect, Planned, Tool, ToolCx, ToolError};
use crate::hooks::Action;
use crate::llm::ToolSpec;
use crate::protocol::ToolKind;

/// Finish the task. Summarize what was done and, when you worked under an intent, report each of
/// its acceptance criteria as met or not.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// What was done, and the acceptance criteria with their status.
    pub result: String,
}

pub struct AttemptCompletion;

impl Tool for AttemptCompletion {
    fn name(&self) -> &'static str {
        "attempt_completion"
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }
    fn spec(&self) -> ToolSpec {
        spec_for::<Args>(self.name(), "Finish the task with a summary of the result (report the intent's acceptance criteria).")
    }
    fn plan(&self, args: Value, _cx: &ToolCx<'_>) -> Result<Planned, ToolError> {
        let args: Args = parse_args(self.name(), args)?;
        if args.result.trim().is_empty() {
            return Err(ToolError::InvalidArguments("result is empty".into()));
        }
        Ok(Planned {
            target: String::new(),
            action: Action::Meta,
            effect: Effect::Complete {
                result: args.result,
            },
        })
    }
}
