//! Post-hooks: what follows an accepted mutation once it is recorded (an intent's status, the
//! intent map, lessons from failed commands). They report their failures and never undo the
//! change. The ledger record itself is not a post-hook: a write and its record are one step
//! (`journal`), and a command's changes are recorded by the command tool as it finishes.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::orchestration::intents::IntentStore;
use crate::orchestration::ledger::{now_rfc3339, ApprovalRecord};
use crate::orchestration::lessons;
use crate::protocol::IntentStatus;

use super::HookError;

/// What happened, for the post-hooks.
#[derive(Debug, Clone, PartialEq)]
pub enum Consequence {
    /// An accepted change under this intent was recorded in the ledger.
    Changed { intent_id: String },
    /// A command ended.
    CommandFinished(Box<CommandOutcome>),
}

/// What the post-hooks may touch.
pub struct PostContext<'a> {
    pub root: &'a Path,
    pub intents: &'a IntentStore,
    /// Set when `intent_map.md` needs regenerating (done off the write path).
    pub intent_map_dirty: &'a AtomicBool,
}

/// What a post-hook did that the window should know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PostEffect {
    Nothing,
    IntentsChanged,
}

pub trait PostHook: Send + Sync {
    fn name(&self) -> &'static str;
    fn after(&self, cx: &PostContext<'_>, what: &Consequence) -> Result<PostEffect, HookError>;
}

/// A command that ran, with the files it changed.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandOutcome {
    pub task_id: String,
    pub intent_id: String,
    pub model_id: String,
    pub call_id: String,
    pub command: String,
    pub cwd: String,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// Stopped by the person: not a failure to learn from.
    pub cancelled: bool,
    pub changed_in_scope: Vec<String>,
    pub changed_out_of_scope: Vec<String>,
    pub output_tail: String,
    pub approval: ApprovalRecord,
}

/// NOT_STARTED -> IN_PROGRESS on the first accepted change.
pub struct IntentStatusHook;

impl PostHook for IntentStatusHook {
    fn name(&self) -> &'static str {
        "intent status"
    }
    fn after(&self, cx: &PostContext<'_>, what: &Consequence) -> Result<PostEffect, HookError> {
        let Consequence::Changed { intent_id } = what else {
            return Ok(PostEffect::Nothing);
        };
        match cx.intents.snapshot().doc.get(intent_id) {
            Some(i) if i.status == IntentStatus::NotStarted => {}
            _ => return Ok(PostEffect::Nothing),
        }
        cx.intents
            .set_status(intent_id, IntentStatus::InProgress)
            .map(|_| PostEffect::IntentsChanged)
            .map_err(|e| {
                HookError(format!(
                    "intent {intent_id} could not be moved to IN_PROGRESS: {e}"
                ))
            })
    }
}

/// Every recorded change makes `intent_map.md` out of date.
pub struct IntentMapHook;

impl PostHook for IntentMapHook {
    fn name(&self) -> &'static str {
        "intent map"
    }
    fn after(&self, cx: &PostContext<'_>, what: &Consequence) -> Result<PostEffect, HookError> {
        if matches!(what, Consequence::Changed { .. }) {
            cx.intent_map_dirty.store(true, Ordering::SeqCst);
        }
        Ok(PostEffect::Nothing)
    }
}

/// Failed commands become lessons in `.orchestration/AGENT.md`.
pub struct LessonHook;

impl PostHook for LessonHook {
    fn name(&self) -> &'static str {
        "lessons"
    }
    fn after(&self, cx: &PostContext<'_>, what: &Consequence) -> Result<PostEffect, HookError> {
        let Consequence::CommandFinished(o) = what else {
            return Ok(PostEffect::Nothing);
        };
        let failed = o.timed_out || o.exit_code.is_some_and(|c| c != 0) || o.exit_code.is_none();
        if !failed || o.cancelled {
            return Ok(PostEffect::Nothing);
        }
        let how = if o.timed_out {
            "timed out".to_string()
        } else {
            match o.exit_code {
                Some(c) => format!("exited with status {c}"),
                None => "was killed by a signal".to_string(),
            }
        };
        let tail: String = o
            .output_tail
            .lines()
            .rev()
            .take(8)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n");
        let lesson = format!(
            "`{}` (in `{}`, intent {}) {how} at {}.\n\n```\n{}\n```",
            o.command.replace('`', "'"),
            if o.cwd.is_empty() { "." } else { &o.cwd },
            o.intent_id,
            now_rfc3339(),
            tail.replace("```", "'''")
        );
        lessons::append(cx.root, "command failed", &lesson)
            .map(|()| PostEffect::Nothing)
            .map_err(|e| {
                HookError(format!(
                    "could not record a lesson for the failed command: {e}"
                ))
            })
    }
}
