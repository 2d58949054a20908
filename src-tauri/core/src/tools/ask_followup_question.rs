//! `ask_followup_question`: a question to the user, answered in the chat.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{parse_args, spec_for, Effect, Planned, Tool, ToolCx, ToolError};
use crate::hooks::Action;
use crate::llm::ToolSpec;
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

impl Tool for AskFollowupQuestion {
    fn name(&self) -> &'static str {
        "ask_followup_question"
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }
    fn spec(&self) -> ToolSpec {
        spec_for::<Args>(
            self.name(),
            "Ask the user a question (with optional suggested answers) and wait for the answer.",
        )
    }
    fn plan(&self, args: Value, _cx: &ToolCx<'_>) -> Result<Planned, ToolError> {
        let args: Args = parse_args(self.name(), args)?;
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
        Ok(Planned {
            target: String::new(),
            action: Action::Meta,
            effect: Effect::Ask {
                question: args.question.trim().to_string(),
                options,
            },
        })
    }
}
