//! Hook 3 (optimistic locking): a task may overwrite an existing file only if the bytes on disk
//! are the ones it last read or wrote. The dispatcher checks again under the per-path lock right
//! before writing, after any approval wait.

use super::{
    Action, Decision, Denial, DenialCode, HookContext, HookError, PreHook, TaskGovernance,
};
use crate::protocol::ToolKind;

pub struct StaleGuard;

/// The shared rule, used by the hook and by the last check before the write.
pub fn stale_denial(
    task: &TaskGovernance,
    rel: &str,
    current_hash: Option<&str>,
) -> Option<Denial> {
    let current = current_hash?; // a file that does not exist cannot be stale
    let intent = task.selected_intent.as_deref();
    match task.read_hashes.get(rel) {
        None => Some(
            Denial::new(
                DenialCode::StaleFile,
                format!("{rel} exists and this task has not read it. Read it with read_file first, then write."),
            )
            .with_intent(intent)
            .with_path(rel),
        ),
        Some(seen) if seen != current => Some(
            Denial::new(
                DenialCode::StaleFile,
                format!("{rel} changed on disk since this task last read it (edited by the user or another task). Read it again and redo the change on the current content."),
            )
            .with_intent(intent)
            .with_path(rel),
        ),
        Some(_) => None,
    }
}

impl PreHook for StaleGuard {
    fn name(&self) -> &'static str {
        "stale guard"
    }

    fn check(
        &self,
        cx: &HookContext<'_>,
        _: ToolKind,
        action: &Action,
    ) -> Result<Decision, HookError> {
        let Action::Write(w) = action else {
            return Ok(Decision::Allow);
        };
        Ok(
            match stale_denial(cx.task, &w.path.rel, w.old_hash().as_deref()) {
                Some(d) => Decision::Deny(d),
                None => Decision::Allow,
            },
        )
    }
}
