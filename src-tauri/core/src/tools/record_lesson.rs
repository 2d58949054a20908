//! `record_lesson`: a lesson for every later task in this workspace (`.orchestration/AGENT.md`).

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{blocking, AgentTool, Plan, RunCx, ToolCx, ToolError, ToolOutput};
use crate::hooks::Action;
use crate::protocol::ToolKind;

/// Record a lesson learned (a pitfall, a convention, a command that works) so later tasks know it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The lesson, in one to a few sentences.
    pub lesson: String,
}

pub struct RecordLesson;

#[async_trait]
impl AgentTool for RecordLesson {
    type Args = Args;
    type Work = String;
    const NAME: &'static str = "record_lesson";
    const KIND: ToolKind = ToolKind::Read;
    const DESCRIPTION: &'static str = "Record a lesson for later tasks in .orchestration/AGENT.md.";

    fn plan(&self, args: Args, _: &ToolCx<'_>) -> Result<Plan<String>, ToolError> {
        let lesson = args.lesson.trim();
        if lesson.is_empty() || lesson.len() > 4000 {
            return Err(ToolError::InvalidArguments(
                "a lesson is 1 to 4000 characters".into(),
            ));
        }
        Ok(Plan {
            target: String::new(),
            action: Action::Meta,
            work: lesson.to_string(),
        })
    }

    async fn run(&self, _: Action, text: String, cx: &RunCx<'_>) -> Result<ToolOutput, ToolError> {
        let root = cx.gov.root().to_path_buf();
        blocking("recording the lesson", move || {
            crate::orchestration::lessons::append(&root, "recorded by the agent", &text)
                .map_err(|e| ToolError::Failed(format!("could not record the lesson: {e}")))
        })
        .await?;
        Ok(ToolOutput::text(
            "lesson recorded",
            "The lesson was recorded in .orchestration/AGENT.md.",
        ))
    }
}
