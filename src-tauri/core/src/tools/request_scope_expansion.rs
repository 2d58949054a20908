//! `request_scope_expansion`: the agent asks the person for a wider owned scope. Nothing changes
//! unless they approve (possibly after editing the globs); then the intents file changes and the
//! ledger records it as an intent evolution.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{blocking, AgentTool, Plan, RunCx, ToolCx, ToolError, ToolOutput};
use crate::hooks::{Action, IntentChange};
use crate::orchestration::intents::{compile_glob, IntentError};
use crate::protocol::{Event, ToolKind};

/// Ask the user to widen the owned scope of the intent you hold, when the work needs files
/// outside it (a SCOPE_VIOLATION told you so). The user sees the globs, what they match, and your
/// reason, and may edit or refuse them.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The intent you selected.
    pub intent_id: String,
    /// Workspace-relative globs to add, e.g. `src/db/**` or `docs/api.md`; as narrow as the work needs.
    pub globs: Vec<String>,
    /// Why the work needs them, in a sentence or two.
    pub reason: String,
}

pub struct RequestScopeExpansion;

#[async_trait]
impl AgentTool for RequestScopeExpansion {
    type Args = Args;
    type Work = ();
    const NAME: &'static str = "request_scope_expansion";
    const KIND: ToolKind = ToolKind::Mutate;
    const DESCRIPTION: &'static str = "Ask the user to add globs to your intent's owned scope (intent_id, globs, reason). Only the user can approve it.";

    fn plan(&self, args: Args, cx: &ToolCx<'_>) -> Result<Plan<()>, ToolError> {
        let reason = args.reason.trim().to_string();
        if reason.is_empty() {
            return Err(ToolError::InvalidArguments(
                "say why the work needs a wider scope (reason)".into(),
            ));
        }
        let intent = cx.intents.doc.get(args.intent_id.trim()).ok_or_else(|| {
            ToolError::Failed(format!("there is no intent `{}`", args.intent_id.trim()))
        })?;
        let mut globs: Vec<String> = Vec::new();
        for g in args
            .globs
            .iter()
            .map(|g| g.trim())
            .filter(|g| !g.is_empty())
        {
            compile_glob(g).map_err(|e| ToolError::InvalidArguments(e.to_string()))?;
            if !intent.owned_scope.iter().any(|s| s == g) && !globs.iter().any(|x| x == g) {
                globs.push(g.to_string());
            }
        }
        if globs.is_empty() || globs.len() > 20 {
            return Err(ToolError::InvalidArguments(
                "give 1 to 20 globs that are not in the scope already".into(),
            ));
        }
        Ok(Plan {
            target: format!("{}: {}", intent.id, globs.join(", ")),
            action: Action::Intents(IntentChange::ExpandScope {
                intent_id: intent.id.clone(),
                globs,
                reason,
            }),
            work: (),
        })
    }

    async fn run(&self, action: Action, _: (), cx: &RunCx<'_>) -> Result<ToolOutput, ToolError> {
        let Action::Intents(IntentChange::ExpandScope {
            intent_id,
            globs,
            reason,
        }) = action
        else {
            return Err(ToolError::Failed("internal: not a scope expansion".into()));
        };
        let (gov, id, added) = (cx.gov.clone(), intent_id.clone(), globs.clone());
        let snapshot = blocking("updating the intents file", move || {
            gov.intents
                .update(move |doc| {
                    let intent = doc
                        .intents
                        .iter_mut()
                        .find(|i| i.id == id)
                        .ok_or_else(|| IntentError::NotFound(id.clone()))?;
                    let mut scope = intent.owned_scope.clone();
                    scope.extend(
                        added
                            .iter()
                            .filter(|g| !intent.owned_scope.contains(g))
                            .cloned(),
                    );
                    intent.set_owned_scope(scope)
                })
                .map_err(|e| ToolError::Failed(format!("the scope could not be widened: {e}")))
        })
        .await?;
        cx.events.emit(Event::IntentsChanged {
            intents: snapshot.view(),
        });
        let change = json!({"kind": "expand_scope", "intent_id": intent_id, "added_scope": super::intent_record::json_list(&globs), "reason": reason});
        super::intent_record::record(cx, &intent_id, change).await?;
        let scope = snapshot
            .doc
            .get(&intent_id)
            .map(|i| i.owned_scope.join(", "))
            .unwrap_or_default();
        Ok(ToolOutput::text(
            format!("scope widened: {}", globs.join(", ")),
            format!("The user approved. {intent_id}'s owned scope is now: {scope}."),
        ))
    }
}
