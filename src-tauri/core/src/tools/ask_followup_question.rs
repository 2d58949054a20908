//! `ask_followup_question`: a question to the user, answered in the chat.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{AgentTool, Plan, RunCx, ToolCx, ToolError, ToolOutput};
use crate::hooks::Action;
use crate::protocol::ToolKind;

/// Ask the user a question when you cannot proceed without their answer. Offer short options
/// when the answer is a choice.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The question.
    pub question: String,
    /// Suggested answers, if any.
    pub options: Option<Vec<String>>,
}

pub struct AskFollowupQuestion;

pub struct Work {
    question: String,
    options: Vec<String>,
}

#[async_trait]
impl AgentTool for AskFollowupQuestion {
    type Args = Args;
    type Work = Work;
    const NAME: &'static str = "ask_followup_question";
    const KIND: ToolKind = ToolKind::Read;
    const DESCRIPTION: &'static str =
        "Ask the user a question (with optional suggested answers) and wait for the answer.";

    fn plan(&self, args: Args, _: &ToolCx<'_>) -> Result<Plan<Work>, ToolError> {
        if args.question.trim().is_empty() {
            return Err(ToolError::InvalidArguments("question is empty".into()));
        }
        let options: Vec<String> = args
            .options
            .unwrap_or_default()
            .into_iter()
            .map(|o| o.trim().to_string())
            .filter(|o| !o.is_empty())
            .take(8)
            .collect();
        Ok(Plan {
            target: String::new(),
            action: Action::Meta,
            work: Work {
                question: args.question.trim().to_string(),
                options,
            },
        })
    }

    async fn run(&self, _: Action, work: Work, cx: &RunCx<'_>) -> Result<ToolOutput, ToolError> {
        let answer = cx
            .task
            .ask(
                cx.interaction,
                cx.events,
                cx.call_id,
                &work.question,
                &work.options,
                cx.cancel,
            )
            .await;
        Ok(match answer {
            Some(answer) => {
                // The window shows the answer where it was typed; the transcript keeps it.
                cx.task.push_message(crate::protocol::UiMessage::User {
                    id: uuid::Uuid::new_v4().to_string(),
                    text: answer.clone(),
                    images: Vec::new(),
                });
                ToolOutput::text("answered", format!("<answer>\n{answer}\n</answer>"))
            }
            None => ToolOutput::text(
                "no one to answer",
                "No one can answer right now (this is an unattended run). Make a reasonable assumption, say which, and continue.",
            ),
        })
    }
}
