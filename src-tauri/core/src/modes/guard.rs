//! The pre-hook that holds a task to its mode: a call whose kind the mode does not allow, or
//! an edit of a path outside the mode's `fileRegex`, is refused with `MODE_RESTRICTED`. It
//! narrows; the intent gate, the scope guard and the rest still decide everything else.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use super::{Group, ModePolicy};
use crate::hooks::{
    Action, Decision, Denial, DenialCode, HookContext, HookError, IntentChange, PreHook,
};
use crate::protocol::ToolKind;

pub struct ModeGuard;

impl PreHook for ModeGuard {
    fn name(&self) -> &'static str {
        "mode guard"
    }

    fn check(
        &self,
        cx: &HookContext<'_>,
        kind: ToolKind,
        action: &Action,
    ) -> Result<Decision, HookError> {
        let Some(mode) = cx.task.mode.as_ref() else {
            return Ok(Decision::Allow);
        };
        Ok(match decide(mode, kind, action) {
            Ok(()) => Decision::Allow,
            Err(denial) => Decision::Deny(denial),
        })
    }
}

/// The group an action needs; None for what every mode may do.
fn needed(kind: ToolKind, action: &Action) -> Option<Group> {
    match action {
        Action::Read { .. } => Some(Group::Read),
        Action::Write(_) => Some(Group::Edit),
        Action::Command(_) => Some(Group::Command),
        Action::External(_) => Some(Group::Mcp),
        Action::Intents(IntentChange::ExpandScope { .. }) => Some(Group::Edit),
        Action::Intents(IntentChange::Propose { .. }) => None,
        Action::Meta => match kind {
            ToolKind::Read => None,
            ToolKind::Mutate => Some(Group::Edit),
            ToolKind::Command => Some(Group::Command),
        },
    }
}

pub(crate) fn decide(mode: &ModePolicy, kind: ToolKind, action: &Action) -> Result<(), Denial> {
    let Some(group) = needed(kind, action) else {
        return Ok(());
    };
    if !mode.allows(group) {
        let allowed: Vec<&str> = mode.groups.iter().map(|g| g.name()).collect();
        return Err(Denial::new(
            DenialCode::ModeRestricted,
            format!(
                "{} mode does not allow {} actions (it allows: {}). Do it another way, or call switch_mode to ask the user for a mode that allows it.",
                mode.name,
                group.name(),
                if allowed.is_empty() { "none of read, edit, command or mcp".into() } else { allowed.join(", ") },
            ),
        ));
    }
    if let (Action::Write(w), Some(pattern)) = (action, mode.edit_regex.as_deref()) {
        let rel = w.path.rel.as_str();
        match compiled(pattern) {
            Some(re) if re.is_match(rel) => {}
            Some(_) => {
                return Err(Denial::new(
                    DenialCode::ModeRestricted,
                    format!(
                        "{} mode can edit only files matching `{pattern}`, and {rel} does not. Call switch_mode to ask the user for a mode that edits it.",
                        mode.name
                    ),
                )
                .with_path(rel))
            }
            None => {
                return Err(Denial::new(
                    DenialCode::ModeRestricted,
                    format!(
                        "{} mode limits edits by the pattern `{pattern}`, which is not a valid regular expression, so no edit is allowed in it; the user must fix the mode",
                        mode.name
                    ),
                )
                .with_path(rel))
            }
        }
    }
    Ok(())
}

/// A mode's pattern compiled once per process (None when it is not a valid regex).
fn compiled(pattern: &str) -> Option<regex::Regex> {
    static CACHE: LazyLock<Mutex<HashMap<String, Option<regex::Regex>>>> =
        LazyLock::new(Default::default);
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    if cache.len() > 256 {
        cache.clear();
    }
    cache
        .entry(pattern.to_string())
        .or_insert_with(|| regex::Regex::new(pattern).ok())
        .clone()
}
