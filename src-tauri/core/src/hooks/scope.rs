//! Hook 2: a write must land inside the active intent's owned scope, outside `.intentignore`,
//! and never in `.orchestration/` or `.git/`. A command must run inside the workspace.

use super::{Action, Decision, Denial, DenialCode, HookContext, HookError, PreHook};
use crate::protocol::ToolKind;
use crate::workspace::protected_reason;

pub struct ScopeGuard;

impl PreHook for ScopeGuard {
    fn name(&self) -> &'static str {
        "scope guard"
    }

    fn check(
        &self,
        cx: &HookContext<'_>,
        _: ToolKind,
        action: &Action,
    ) -> Result<Decision, HookError> {
        let intent_id = cx.task.selected_intent.as_deref();
        match action {
            Action::Write(w) => {
                let rel = w.path.rel.as_str();
                if rel.is_empty() {
                    return Ok(Decision::Deny(Denial::new(
                        DenialCode::InvalidArguments,
                        "The workspace root is a directory, not a file.",
                    )));
                }
                if let Some(reason) = protected_reason(rel) {
                    return Ok(Decision::Deny(
                        Denial::new(
                            DenialCode::ProtectedPath,
                            format!("{rel} is protected: {reason}."),
                        )
                        .with_intent(intent_id)
                        .with_path(rel),
                    ));
                }
                if let Some(pattern) = cx.ignore.matched(rel) {
                    return Ok(Decision::Deny(
                        Denial::new(
                            DenialCode::ProtectedPath,
                            format!("{rel} is excluded by `.intentignore` (rule `{pattern}`); no intent may edit it."),
                        )
                        .with_intent(intent_id)
                        .with_path(rel),
                    ));
                }
                if let Some(reason) = cx.ignore.why(rel) {
                    return Ok(Decision::Deny(
                        Denial::new(
                            DenialCode::ProtectedPath,
                            format!("{rel} is protected: {reason}."),
                        )
                        .with_intent(intent_id)
                        .with_path(rel),
                    ));
                }
                let Some(id) = intent_id else {
                    return Err(HookError(
                        "no intent selected (the gate should have denied)".into(),
                    ));
                };
                let Some(intent) = cx.intents.doc.get(id) else {
                    return Err(HookError(format!("intent `{id}` vanished")));
                };
                if !intent.owns(rel) {
                    return Ok(Decision::Deny(
                        Denial::new(
                            DenialCode::ScopeViolation,
                            format!(
                                "Scope Violation: {id} is not authorized to edit {rel} (its owned scope: {}). Request scope expansion with request_scope_expansion (intent_id, globs, reason); the user decides.",
                                if intent.owned_scope.is_empty() { "nothing".to_string() } else { intent.owned_scope.join(", ") }
                            ),
                        )
                        .with_intent(Some(id))
                        .with_path(rel)
                        .with_owned_scope(&intent.owned_scope),
                    ));
                }
                if let Some((outer, scope)) = cx.task.outside_bounds(cx.intents, rel) {
                    return Ok(Decision::Deny(
                        Denial::new(
                            DenialCode::ScopeViolation,
                            format!(
                                "Scope Violation: this is a subtask, and its parent task works under {outer}, which does not own {rel} (its owned scope: {scope}). A subtask never reaches wider than its parent: finish with attempt_completion and say what is left outside."
                            ),
                        )
                        .with_intent(Some(id))
                        .with_path(rel),
                    ));
                }
                Ok(Decision::Allow)
            }
            Action::Command(c) => {
                if let Some(reason) = protected_reason(&c.cwd.rel) {
                    return Ok(Decision::Deny(
                        Denial::new(
                            DenialCode::ProtectedPath,
                            format!("Commands may not run in {}: {reason}.", c.cwd.rel),
                        )
                        .with_intent(intent_id)
                        .with_path(&c.cwd.rel),
                    ));
                }
                Ok(Decision::Allow)
            }
            // An MCP call acts outside the workspace's files: no owned scope can judge it; the
            // gate and the person do.
            Action::Read { .. } | Action::Meta | Action::Intents(_) | Action::External(_) => {
                Ok(Decision::Allow)
            }
        }
    }
}
