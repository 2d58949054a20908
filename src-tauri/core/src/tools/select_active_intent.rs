//! `select_active_intent`: the handshake. The task takes an intent and receives its context.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{parse_args, spec_for, Effect, Planned, Tool, ToolCx, ToolError};
use crate::hooks::Action;
use crate::llm::ToolSpec;
use crate::protocol::{IntentStatus, ToolKind};

/// Select the intent this task works under, before any change. Returns the intent's context:
/// constraints, owned scope, acceptance criteria and recent history.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// An intent id from .orchestration/active_intents.yaml, e.g. INT-001.
    pub intent_id: String,
}

pub struct SelectActiveIntent;

impl Tool for SelectActiveIntent {
    fn name(&self) -> &'static str {
        "select_active_intent"
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }
    fn spec(&self) -> ToolSpec {
        spec_for::<Args>(self.name(), "Select the intent you will work under (required before any write or command). Returns <intent_context>.")
    }
    fn plan(&self, args: Value, cx: &ToolCx<'_>) -> Result<Planned, ToolError> {
        let args: Args = parse_args(self.name(), args)?;
        let id = args.intent_id.trim().to_string();
        let valid = cx.intents.doc.open_ids();
        let listing = if valid.is_empty() {
            "There are no selectable intents; ask the user to create one.".to_string()
        } else {
            format!("Valid ids: {}.", valid.join(", "))
        };
        match cx.intents.doc.get(&id) {
            None => Err(ToolError::Failed(format!(
                "There is no intent `{id}`. {listing}"
            ))),
            Some(i) if i.status == IntentStatus::Done => Err(ToolError::Failed(format!(
                "Intent `{id}` is DONE and cannot be selected. {listing}"
            ))),
            Some(_) => Ok(Planned {
                target: id.clone(),
                action: Action::Meta,
                effect: Effect::SelectIntent { intent_id: id },
            }),
        }
    }
}
