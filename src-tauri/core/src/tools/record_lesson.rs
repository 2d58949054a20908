//! `record_lesson`: a lesson for every later task in this workspace (`.orchestration/AGENT.md`).

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{parse_args, spec_for, Effect, Planned, Tool, ToolCx, ToolError};
use crate::hooks::Action;
use crate::llm::ToolSpec;
use crate::protocol::ToolKind;

/// Record a lesson learned (a pitfall, a convention, a command that works) so later tasks know it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The lesson, in one to a few sentences.
    pub lesson: String,
}

pub struct RecordLesson;

impl Tool for RecordLesson {
    fn name(&self) -> &'static str {
        "record_lesson"
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }
    fn spec(&self) -> ToolSpec {
        spec_for::<Args>(
            self.name(),
            "Record a lesson for later tasks in .orchestration/AGENT.md.",
        )
    }
    fn plan(&self, args: Value, _cx: &ToolCx<'_>) -> Result<Planned, ToolError> {
        let args: Args = parse_args(self.name(), args)?;
        let lesson = args.lesson.trim();
        if lesson.is_empty() || lesson.len() > 4000 {
            return Err(ToolError::InvalidArguments(
                "a lesson is 1 to 4000 characters".into(),
            ));
        }
        Ok(Planned {
            target: String::new(),
            action: Action::Meta,
            effect: Effect::Lesson {
                text: lesson.to_string(),
            },
        })
    }
}
