//! `propose_intent`: for planning work, the agent proposes a new intent. Only the person creates
//! it (possibly after editing its scope); the ledger records it as an intent evolution.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{blocking, AgentTool, Plan, RunCx, ToolCx, ToolError, ToolOutput};
use crate::hooks::{Action, IntentChange};
use crate::orchestration::intents::{intent_from_draft, IntentError};
use crate::protocol::{Event, IntentDraft, IntentStatus, ToolKind};

/// Propose a new intent (a unit of work with an owned scope, constraints and acceptance criteria)
/// when the user's request is not covered by any open intent. The user decides; it starts as
/// NOT_STARTED.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// A new id: letters, digits, `-`, `_` or `.` (e.g. INT-007).
    pub id: String,
    pub name: String,
    /// Workspace-relative globs the intent would own.
    pub owned_scope: Vec<String>,
    pub constraints: Option<Vec<String>>,
    pub acceptance_criteria: Option<Vec<String>>,
    /// Why this intent, in a sentence or two.
    pub reason: String,
}

pub struct ProposeIntent;

#[async_trait]
impl AgentTool for ProposeIntent {
    type Args = Args;
    type Work = ();
    const NAME: &'static str = "propose_intent";
    const KIND: ToolKind = ToolKind::Read;
    const DESCRIPTION: &'static str = "Propose a new intent (id, name, owned_scope, constraints, acceptance_criteria, reason) for work no open intent covers. Only the user can create it.";

    fn plan(&self, args: Args, cx: &ToolCx<'_>) -> Result<Plan<()>, ToolError> {
        let reason = args.reason.trim().to_string();
        if reason.is_empty() {
            return Err(ToolError::InvalidArguments(
                "say why this intent (reason)".into(),
            ));
        }
        let draft = IntentDraft {
            id: args.id.trim().to_string(),
            name: args.name,
            status: IntentStatus::NotStarted,
            owned_scope: args.owned_scope,
            constraints: args.constraints.unwrap_or_default(),
            acceptance_criteria: args.acceptance_criteria.unwrap_or_default(),
            budget: None,
        };
        // Checked as the window checks a new intent, so the card never offers one that cannot be saved.
        intent_from_draft(draft.clone(), Default::default())
            .map_err(|e| ToolError::InvalidArguments(e.to_string()))?;
        if cx.intents.doc.get(&draft.id).is_some() {
            return Err(ToolError::InvalidArguments(format!(
                "an intent `{}` exists already; pick another id",
                draft.id
            )));
        }
        Ok(Plan {
            target: draft.id.clone(),
            action: Action::Intents(IntentChange::Propose {
                intent: draft,
                reason,
            }),
            work: (),
        })
    }

    async fn run(&self, action: Action, _: (), cx: &RunCx<'_>) -> Result<ToolOutput, ToolError> {
        let Action::Intents(IntentChange::Propose { intent, reason }) = action else {
            return Err(ToolError::Failed("internal: not an intent proposal".into()));
        };
        let (gov, draft) = (cx.gov.clone(), intent.clone());
        let snapshot = blocking("updating the intents file", move || {
            gov.intents
                .update(move |doc| {
                    if doc.get(&draft.id).is_some() {
                        return Err(IntentError::Rejected(format!(
                            "an intent `{}` exists already",
                            draft.id
                        )));
                    }
                    doc.intents
                        .push(intent_from_draft(draft, Default::default())?);
                    Ok(())
                })
                .map_err(|e| ToolError::Failed(format!("the intent could not be created: {e}")))
        })
        .await?;
        cx.events.emit(Event::IntentsChanged {
            intents: snapshot.view(),
        });
        let change = json!({"kind": "new_intent", "intent_id": intent.id, "owned_scope": intent.owned_scope, "reason": reason});
        super::intent_record::record(cx, &intent.id, change).await?;
        Ok(ToolOutput::text(
            format!("created {}", intent.id),
            format!(
                "The user created intent {} (NOT_STARTED) with owned scope: {}. Select it with select_active_intent to work under it.",
                intent.id,
                intent.owned_scope.join(", ")
            ),
        ))
    }
}
