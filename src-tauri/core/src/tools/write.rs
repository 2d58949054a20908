//! What `write_to_file` and `apply_diff` do once allowed: one governed write through the journal
//! (lock, last stale check, record, rename, ledger), then the result the model reads.

use super::{Consequence, RunCx, ToolError, ToolOutput};
use crate::hooks::{Action, Denial, DenialCode, WriteAction};
use crate::journal::{FileWrite, WriteError};
use crate::orchestration::ledger::TraceEntry;
use crate::protocol::Contributor;

pub(super) async fn apply(action: Action, cx: &RunCx<'_>) -> Result<ToolOutput, ToolError> {
    let Action::Write(w) = action else {
        return Err(ToolError::Failed(
            "internal: a write tool was given another kind of plan".into(),
        ));
    };
    let governance = cx.task.governance();
    let intent_id = governance.selected_intent.clone().unwrap_or_default();
    let entry = TraceEntry {
        task_id: cx.task.id.clone(),
        intent_id: intent_id.clone(),
        model_id: cx.model_id.to_string(),
        tool: cx.tool.to_string(),
        tool_call_id: cx.call_id.to_string(),
        contributor: if cx.approval.edited {
            Contributor::Mixed
        } else {
            Contributor::Ai
        },
        mutation_declared: Some(w.mutation_class.clone()),
        mutation_computed: None,
        approval: cx.approval.clone(),
        files: Vec::new(),
        extra: cx.trace_extra(),
    };
    let rel = w.path.rel.clone();
    let write = FileWrite::new(
        w.path.clone(),
        w.old.clone(),
        w.new_content.clone().into_bytes(),
        entry,
    );
    // The task's own stale rule, checked again under the lock right before the bytes change.
    let stale_rel = rel.clone();
    let check =
        move |hash: Option<&str>| crate::hooks::stale::stale_denial(&governance, &stale_rel, hash);
    let written = cx
        .gov
        .journal
        .write(cx.gov.ledger.clone(), write, check)
        .await
        .map_err(|e| write_error(e, &intent_id, &rel))?;
    if let Some(hash) = &written.new_hash {
        cx.task.record_read(&rel, hash.clone());
    }
    cx.gov.code_index.touched(&rel);
    let mut summary = format!("wrote {} lines", crate::text::line_count(&w.new_content));
    let mut content = report(&w, &intent_id, &written, cx);
    if let Some((n, said)) = syntax_check(&w).await {
        summary.push_str(&format!(
            " · {n} syntax error{}",
            if n == 1 { "" } else { "s" }
        ));
        content.push_str(&said);
    }
    Ok(ToolOutput {
        consequences: vec![Consequence::Changed {
            intent_id: intent_id.clone(),
        }],
        ..ToolOutput::text(summary, content)
    })
}

/// The syntax errors in the file as written, said at once so the model fixes them in the same
/// turn (with how many it had before, when it already had some): None when it parses.
async fn syntax_check(w: &WriteAction) -> Option<(usize, String)> {
    // A file of no known language is not parsed: no thread is woken for it.
    crate::code::Lang::of(&w.path.rel)?;
    let (rel, new, old) = (w.path.rel.clone(), w.new_content.clone(), w.old_text());
    let found = super::blocking("checking the syntax", move || {
        let problems = crate::code::syntax_problems(&rel, &new);
        if problems.is_empty() {
            return Ok(None);
        }
        let before = crate::code::syntax_problems(&rel, &old).len();
        let had = match before {
            0 => String::new(),
            n => format!("; the file had {n} before this write"),
        };
        Ok(Some((
            problems.len(),
            format!(
                "\n\nSyntax errors in {rel} as written (found by parsing it{had}):\n{}\nFix them before going on: the file does not parse.",
                crate::code::describe_problems(&problems)
            ),
        )))
    });
    found.await.ok().flatten()
}

fn write_error(e: WriteError, intent_id: &str, rel: &str) -> ToolError {
    match e {
        WriteError::Refused(denial) => ToolError::Denied(denial),
        WriteError::Moved { .. } => ToolError::Denied(
            Denial::new(DenialCode::StaleFile, e.to_string())
                .with_intent(Some(intent_id))
                .with_path(rel),
        ),
        WriteError::Ledger { .. } => ToolError::Denied(
            Denial::new(DenialCode::HookFailure, e.to_string())
                .with_intent(Some(intent_id))
                .with_path(rel),
        ),
        WriteError::Io { .. } => ToolError::Failed(e.to_string()),
    }
}

/// What the model reads: what was written, how it was recorded, and what the person changed.
fn report(
    w: &WriteAction,
    intent_id: &str,
    written: &crate::journal::Written,
    cx: &RunCx<'_>,
) -> String {
    let ranges: Vec<String> = written
        .ranges
        .iter()
        .map(|(s, e)| {
            if s == e {
                s.to_string()
            } else {
                format!("{s}-{e}")
            }
        })
        .collect();
    let computed = &written.computed.class;
    let mut content = format!(
        "Wrote {} ({} lines; changed lines: {}). Recorded in the trace ledger under {intent_id} as {computed}.",
        w.path.rel,
        crate::text::line_count(&w.new_content),
        if ranges.is_empty() { "none (lines removed only)".into() } else { ranges.join(", ") },
    );
    if *computed != w.mutation_class {
        content.push_str(&format!(
            " You declared {}, but the change was computed as {computed} ({}); both are recorded.",
            w.mutation_class, written.computed.reason
        ));
    }
    if !cx.approval.rejected_hunks.is_empty() {
        content.push_str(&format!(
            " The user accepted hunks {:?} and rejected hunks {:?}: the file holds only the accepted changes. Read it before editing it again.",
            cx.approval.accepted_hunks, cx.approval.rejected_hunks
        ));
    }
    if cx.approval.edited {
        content.push_str(" The user edited your change before accepting it. Read the file to see what was written.");
    }
    content
}
