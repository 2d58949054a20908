//! Hook 1: mutating and command tools (and MCP tools that are not read-only) need a selected,
//! valid intent that is not DONE, and a write must cite the intent the task holds.

use super::{Action, Decision, Denial, DenialCode, HookContext, HookError, PreHook};
use crate::orchestration::intents::{IntentsSnapshot, INTENTS_FILE};
use crate::protocol::{IntentStatus, ToolKind};

pub const NO_ACTIVE_INTENT_MESSAGE: &str = "You must cite a valid active Intent ID.";

pub struct IntentGate;

impl PreHook for IntentGate {
    fn name(&self) -> &'static str {
        "intent gate"
    }

    fn check(
        &self,
        cx: &HookContext<'_>,
        kind: ToolKind,
        action: &Action,
    ) -> Result<Decision, HookError> {
        // A mutating MCP call is gated whatever kind its tool reports (fail closed).
        if kind == ToolKind::Read && !action.is_mutating_external() {
            return Ok(Decision::Allow);
        }
        let deny = |detail: String, id: Option<&str>| {
            Ok(Decision::Deny(
                Denial::new(
                    DenialCode::NoActiveIntent,
                    format!("{NO_ACTIVE_INTENT_MESSAGE} {detail}"),
                )
                .with_intent(id),
            ))
        };
        let valid_ids = || {
            let ids = cx.intents.doc.open_ids_listed(50);
            match (broken_intents_file(cx.intents), ids.is_empty()) {
                // A broken file is not "no intents": the model must not invent one or give up.
                (Some(problem), true) => problem,
                (Some(problem), false) => format!(
                    "{problem} Until then you may select one of the intents that still load: {ids}."
                ),
                (None, true) => "No intent is available: ask the user to create one.".to_string(),
                (None, false) => format!("Call select_active_intent with one of: {ids}."),
            }
        };
        let Some(selected) = cx.task.selected_intent.as_deref() else {
            return deny(
                format!("No intent is selected for this task. {}", valid_ids()),
                None,
            );
        };
        let Some(intent) = cx.intents.doc.get(selected) else {
            return deny(
                format!(
                    "The selected intent `{selected}` no longer exists. {}",
                    valid_ids()
                ),
                Some(selected),
            );
        };
        if intent.status == IntentStatus::Done {
            return deny(
                format!(
                    "Intent `{selected}` is DONE and takes no more changes. {}",
                    valid_ids()
                ),
                Some(selected),
            );
        }
        let cited = match action {
            Action::Write(w) => Some(w.intent_id.trim()),
            Action::Intents(crate::hooks::IntentChange::ExpandScope { intent_id, .. }) => {
                Some(intent_id.trim())
            }
            _ => None,
        };
        if let Some(cited) = cited {
            if cited != selected {
                return deny(
                    format!(
                        "This call cites `{cited}` but the task holds `{selected}`; cite `{selected}` or select the other intent first."
                    ),
                    Some(selected),
                );
            }
        }
        Ok(Decision::Allow)
    }
}

/// The intents file does not load, in words for the model: the file, where, what, and who fixes it.
pub fn broken_intents_file(intents: &IntentsSnapshot) -> Option<String> {
    let error = intents.error.as_deref()?;
    let error = error
        .strip_suffix(" The last good version stays in use.")
        .unwrap_or(error)
        .trim_end_matches('.');
    let line = error
        .split("line ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .filter(|n| !n.is_empty());
    let fix = match line {
        Some(n) => format!("ask the user to fix line {n} of {INTENTS_FILE}"),
        None => format!("ask the user to fix {INTENTS_FILE}"),
    };
    Some(format!(
        "The intents file is broken ({error}); {fix}. Do not create or edit intents yourself."
    ))
}
