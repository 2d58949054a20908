//! `attempt_completion`: the task is done; the result is shown to the user, and the intent becomes
//! DONE when the result reports every acceptance criterion.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{AgentTool, Plan, RunCx, ToolCx, ToolError, ToolOutput};
use crate::hooks::Action;
use crate::protocol::{Event, IntentStatus, ToolKind, UiMessage};

/// Finish the task. Summarize what was done and, when you worked under an intent, report each of
/// its acceptance criteria as met or not.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// What was done, and the acceptance criteria with their status.
    pub result: String,
}

pub struct AttemptCompletion;

#[async_trait]
impl AgentTool for AttemptCompletion {
    type Args = Args;
    type Work = String;
    const NAME: &'static str = "attempt_completion";
    const KIND: ToolKind = ToolKind::Read;
    const DESCRIPTION: &'static str =
        "Finish the task with a summary of the result (report the intent's acceptance criteria).";

    fn plan(&self, args: Args, _: &ToolCx<'_>) -> Result<Plan<String>, ToolError> {
        if args.result.trim().is_empty() {
            return Err(ToolError::InvalidArguments("result is empty".into()));
        }
        Ok(Plan {
            target: String::new(),
            action: Action::Meta,
            work: args.result,
        })
    }

    async fn run(
        &self,
        _: Action,
        result: String,
        cx: &RunCx<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let note = complete_intent(cx, &result).await;
        cx.task.post(
            cx.events,
            UiMessage::Assistant {
                id: uuid::Uuid::new_v4().to_string(),
                safe_html: crate::markdown::render(&result),
                complete: true,
            },
        );
        Ok(ToolOutput {
            completed: Some(result),
            ..ToolOutput::text(
                format!("task complete{note}"),
                format!("The task is complete.{note}"),
            )
        })
    }
}

/// DONE only when every acceptance criterion is reported in the completion.
async fn complete_intent(cx: &RunCx<'_>, result: &str) -> String {
    let Some(id) = cx.task.governance().selected_intent else {
        return String::new();
    };
    let snapshot = cx.gov.intents.snapshot();
    let Some(intent) = snapshot.doc.get(&id) else {
        return String::new();
    };
    if intent.status == IntentStatus::Done {
        return String::new();
    }
    let normalize = |s: &str| {
        s.to_lowercase()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let reported = normalize(result);
    let missing: Vec<&str> = intent
        .acceptance_criteria
        .iter()
        .filter(|c| {
            let key = normalize(c);
            !reported.contains(crate::text::first_chars(&key, 40))
        })
        .map(String::as_str)
        .collect();
    if intent.acceptance_criteria.is_empty() {
        return format!(" Intent {id} has no acceptance criteria, so it stays open until the user marks it DONE.");
    }
    if !missing.is_empty() {
        return format!(
            " Intent {id} stays {} because the result does not report these acceptance criteria: {}.",
            crate::orchestration::intents::status_str(intent.status),
            missing.join("; ")
        );
    }
    let (intents, done_id) = (cx.gov.clone(), id.clone());
    let marked = super::blocking("updating the intents file", move || {
        intents
            .intents
            .set_status(&done_id, IntentStatus::Done)
            .map_err(|e| ToolError::Failed(e.to_string()))
    })
    .await;
    match marked {
        Ok(snap) => {
            cx.events.emit(Event::IntentsChanged {
                intents: snap.view(),
            });
            format!(" Intent {id} is now DONE.")
        }
        Err(e) => format!(" Intent {id} could not be marked DONE: {e}"),
    }
}
