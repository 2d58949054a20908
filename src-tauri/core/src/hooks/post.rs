//! Post-hooks: what happens after an accepted mutation. The trace hook is required (if the ledger
//! cannot record a write, the dispatcher undoes the write); the others report their failures.

use std::path::Path;

use serde_json::{json, Map};

use crate::orchestration::intents::IntentStore;
use crate::orchestration::ledger::{
    content_hash, now_rfc3339, split_lines, ApprovalRecord, FileChange, HashedRange, Ledger,
    TraceEntry,
};
use crate::orchestration::lessons;
use crate::protocol::IntentStatus;

use super::HookError;

/// An accepted, written change to one file.
#[derive(Debug, Clone)]
pub struct WriteOutcome {
    pub task_id: String,
    pub intent_id: String,
    pub model_id: String,
    pub tool: String,
    pub call_id: String,
    pub path: String,
    pub old_text: Option<String>,
    pub new_text: String,
    pub contributor: &'static str,
    pub declared_class: String,
    pub computed_class: String,
    pub computed_reason: String,
    pub approval: ApprovalRecord,
    /// Changed ranges of the new text and the unified diff (see `diff::analyze`).
    pub changes: crate::diff::LineChanges,
}

/// A command that ran, with the files it changed.
#[derive(Debug, Clone)]
pub struct CommandOutcome {
    pub task_id: String,
    pub intent_id: String,
    pub model_id: String,
    pub call_id: String,
    pub command: String,
    pub cwd: String,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub changed_in_scope: Vec<String>,
    pub changed_out_of_scope: Vec<String>,
    pub output_tail: String,
    pub approval: ApprovalRecord,
}

/// Appends the Agent Trace record.
pub struct TraceHook<'a> {
    pub ledger: &'a Ledger,
}

impl TraceHook<'_> {
    pub fn after_write(&self, o: &WriteOutcome) -> Result<serde_json::Value, HookError> {
        let new_lines = split_lines(&o.new_text);
        let ranges: Vec<HashedRange> = o
            .changes
            .ranges
            .iter()
            .copied()
            .filter(|(s, e)| *s >= 1 && (*e as usize) <= new_lines.len())
            .map(|(s, e)| HashedRange {
                start_line: s,
                end_line: e,
                content_hash: content_hash(&new_lines[s as usize - 1..e as usize]),
            })
            .collect();
        let mut extra = Map::new();
        extra.insert("mutation_reason".into(), json!(o.computed_reason));
        extra.insert(
            "diffs".into(),
            json!({ o.path.clone(): cap(o.changes.unified.clone()) }),
        );
        let entry = TraceEntry {
            task_id: o.task_id.clone(),
            intent_id: o.intent_id.clone(),
            model_id: o.model_id.clone(),
            tool: o.tool.clone(),
            tool_call_id: o.call_id.clone(),
            contributor: o.contributor.into(),
            mutation_declared: o.declared_class.clone(),
            mutation_computed: o.computed_class.clone(),
            approval: o.approval.clone(),
            files: vec![FileChange {
                path: o.path.clone(),
                ranges,
            }],
            extra,
        };
        self.ledger
            .append(&entry)
            .map_err(|e| HookError(e.to_string()))
    }

    /// Commands change files the host did not write; they are recorded without line ranges.
    pub fn after_command(&self, o: &CommandOutcome) -> Result<(), HookError> {
        if o.changed_in_scope.is_empty() && o.changed_out_of_scope.is_empty() {
            return Ok(());
        }
        let mut extra = Map::new();
        extra.insert(
            "command".into(),
            json!({
                "command": o.command, "cwd": o.cwd, "exit_code": o.exit_code, "timed_out": o.timed_out,
                "changed_in_scope": o.changed_in_scope, "changed_out_of_scope": o.changed_out_of_scope,
            }),
        );
        let files = o
            .changed_in_scope
            .iter()
            .chain(&o.changed_out_of_scope)
            .map(|p| FileChange {
                path: p.clone(),
                ranges: Vec::new(),
            })
            .collect();
        let entry = TraceEntry {
            task_id: o.task_id.clone(),
            intent_id: o.intent_id.clone(),
            model_id: o.model_id.clone(),
            tool: "execute_command".into(),
            tool_call_id: o.call_id.clone(),
            contributor: "ai".into(),
            mutation_declared: String::new(),
            mutation_computed: crate::mutation::INTENT_EVOLUTION.into(),
            approval: o.approval.clone(),
            files,
            extra,
        };
        self.ledger
            .append(&entry)
            .map(|_| ())
            .map_err(|e| HookError(e.to_string()))
    }
}

/// Diffs bigger than this are not kept in the ledger (the record says so).
fn cap(diff: String) -> String {
    const MAX: usize = 256 * 1024;
    if diff.len() <= MAX {
        return diff;
    }
    let mut end = MAX;
    while !diff.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n\\ diff truncated at {MAX} bytes\n", &diff[..end])
}

/// NOT_STARTED -> IN_PROGRESS on the first accepted change.
pub struct IntentStatusHook<'a> {
    pub intents: &'a IntentStore,
}

impl IntentStatusHook<'_> {
    pub fn after_change(&self, intent_id: &str) -> Result<bool, HookError> {
        let snapshot = self.intents.snapshot();
        match snapshot.doc.get(intent_id) {
            Some(i) if i.status == IntentStatus::NotStarted => {}
            _ => return Ok(false),
        }
        self.intents
            .set_status(intent_id, IntentStatus::InProgress)
            .map(|_| true)
            .map_err(|e| HookError(e.to_string()))
    }
}

/// Failed commands become lessons in `.orchestration/AGENT.md`.
pub struct LessonHook<'a> {
    pub root: &'a Path,
}

impl LessonHook<'_> {
    pub fn after_command(&self, o: &CommandOutcome) -> Result<(), HookError> {
        let failed = o.timed_out || o.exit_code.is_some_and(|c| c != 0) || o.exit_code.is_none();
        if !failed {
            return Ok(());
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
        lessons::append(self.root, "command failed", &lesson).map_err(|e| HookError(e.to_string()))
    }
}
