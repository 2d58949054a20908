//! What `mandate run` prints: every event as a JSON line, or a short log for a person, with a
//! subtask's lines indented under its parent's.

use std::io::Write;
use std::sync::Mutex;

use crate::agent::EventSink;
use crate::protocol::{ApprovalDetail, ApprovalRequest, Event, ProcessStatus, ToolCallStatus};

/// Events as JSON lines, or a short human-readable log, on stdout.
pub(super) struct CliSink {
    json: bool,
    out: Mutex<std::io::Stdout>,
    /// The subtasks seen so far: their lines are indented under their parent's.
    subtasks: Mutex<std::collections::HashSet<String>>,
}

impl CliSink {
    pub(super) fn new(json: bool) -> Self {
        Self {
            json,
            out: Mutex::new(std::io::stdout()),
            subtasks: Mutex::default(),
        }
    }
}

/// The task an event is about, where it says.
fn event_task(event: &Event) -> Option<&str> {
    match event {
        Event::ToolCallFinished { task_id, .. }
        | Event::MessageFinished { task_id, .. }
        | Event::MessageAdded { task_id, .. } => Some(task_id),
        Event::TaskUpdated { task } => Some(&task.id),
        _ => None,
    }
}

impl EventSink for CliSink {
    fn emit(&self, event: Event) {
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        if self.json {
            if let Ok(line) = serde_json::to_string(&event) {
                let _ = writeln!(out, "{line}");
            }
            let _ = out.flush();
            return;
        }
        if let Some(line) = self.log_line(&event) {
            let _ = writeln!(out, "{line}");
        }
    }
}

impl CliSink {
    /// The log's line for `event`: a subtask's indented under its parent's.
    fn log_line(&self, event: &Event) -> Option<String> {
        let mut subtasks = self.subtasks.lock().unwrap_or_else(|p| p.into_inner());
        if let Event::TaskUpdated { task } = event {
            if task.parent_id.is_some() {
                subtasks.insert(task.id.clone());
            }
        }
        let depth = event_task(event).map_or(0, |id| usize::from(subtasks.contains(id)));
        human_line(event).map(|line| format!("{}{line}", "    ".repeat(depth)))
    }
}

/// What the short human-readable log says of `event`, if anything.
fn human_line(event: &Event) -> Option<String> {
    match event {
        Event::ToolCallFinished { call, .. } => {
            let mark = match call.status {
                ToolCallStatus::Succeeded => "ok",
                ToolCallStatus::Denied => "DENIED",
                _ => "FAILED",
            };
            // Said on every call of a server running outside any confinement.
            let unconfined = if call.unconfined {
                " [UNCONFINED: ran outside any confinement]"
            } else {
                ""
            };
            Some(format!(
                "• {} {}{unconfined} — {mark}: {}",
                call.tool, call.target, call.summary
            ))
        }
        Event::MessageFinished { safe_html, .. } if !safe_html.is_empty() => {
            Some(strip_tags(safe_html))
        }
        Event::ApprovalRequested { request, .. } => {
            Some(format!("? approval needed: {}", describe(request)))
        }
        Event::ApprovalResolved { outcome, .. } => Some(format!("  -> {outcome}")),
        Event::MessageAdded {
            message: crate::protocol::UiMessage::Error { message, .. },
            ..
        } => Some(format!("error: {message}")),
        Event::Notice { message, .. } => Some(format!("note: {message}")),
        Event::ProcessChanged { process } => match process.status {
            ProcessStatus::Running => Some(format!(
                "▶ background process {}: {}",
                process.process_id, process.command
            )),
            ProcessStatus::Stopping { .. } => None,
            ProcessStatus::Exited { code } => Some(format!(
                "■ background process {} exited ({})",
                process.process_id,
                code.map_or("a signal".into(), |c| format!("code {c}"))
            )),
            ProcessStatus::Stopped { by } => Some(format!(
                "■ background process {} stopped (by: {})",
                process.process_id,
                format!("{by:?}").to_lowercase()
            )),
        },
        Event::MessageAdded {
            message:
                crate::protocol::UiMessage::Subtask {
                    title,
                    mode,
                    status,
                    result_safe_html,
                    ..
                },
            ..
        } => Some(match result_safe_html {
            None => format!("▶ subtask in {mode} mode: {title}"),
            Some(result) => format!(
                "◀ subtask {}: {}",
                format!("{status:?}").to_lowercase(),
                strip_tags(result)
            ),
        }),
        Event::MessageAdded {
            message: crate::protocol::UiMessage::Notice { text, .. },
            ..
        } => Some(format!("note: {text}")),
        Event::Condensing { automatic, .. } => Some(format!(
            "… condensing the conversation ({})",
            if *automatic {
                "at the threshold"
            } else {
                "asked"
            }
        )),
        Event::MessageAdded {
            message:
                crate::protocol::UiMessage::Condensed {
                    tokens_before,
                    tokens_after,
                    cost_usd,
                    ..
                },
            ..
        } => Some(format!(
            "  context condensed: {tokens_before} → {tokens_after} tokens{}",
            cost_usd.map(|c| format!(", ${c:.4}")).unwrap_or_default()
        )),
        Event::ContextRetry {
            attempt,
            limit_tokens,
            ..
        } => Some(format!(
            "note: the request did not fit the model's window{}; sending less (try {attempt} of 3)",
            limit_tokens
                .map(|l| format!(" of {l} tokens"))
                .unwrap_or_default()
        )),
        _ => None,
    }
}

fn describe(request: &ApprovalRequest) -> String {
    let what = match &request.detail {
        ApprovalDetail::Write { path, .. } => format!("write {path}"),
        ApprovalDetail::Command { command, .. } => format!("run `{command}`"),
        ApprovalDetail::Continue { reason } => reason.clone(),
        ApprovalDetail::ScopeExpansion {
            intent_id, globs, ..
        } => format!("widen {intent_id} to {}", globs.join(", ")),
        ApprovalDetail::NewIntent { intent, .. } => format!("create intent {}", intent.id),
        ApprovalDetail::McpCall {
            server,
            tool,
            unconfined,
            ..
        } => {
            let how = if *unconfined {
                ", which runs UNCONFINED (it can read and write anything you can)"
            } else {
                ""
            };
            format!("call `{tool}` of MCP server `{server}`{how}")
        }
        ApprovalDetail::ToolCall { tool, target, .. } => format!("{tool} {target}"),
        ApprovalDetail::UserHooks { hooks, .. } => format!("run {} hooks", hooks.len()),
    };
    match request.hook_reasons.is_empty() {
        true => what,
        false => format!("{what} ({})", request.hook_reasons.join("; ")),
    }
}

fn strip_tags(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{McpSource, ToolCallView, ToolKind};

    #[test]
    fn every_call_of_an_unconfined_server_says_so_in_the_log() {
        let call = |unconfined: bool| ToolCallView {
            call_id: "c1".into(),
            tool: "mcp__srv__lookup".into(),
            kind: ToolKind::Read,
            target: "srv › lookup".into(),
            status: ToolCallStatus::Succeeded,
            summary: "the value of a".into(),
            output: String::new(),
            path: None,
            line: None,
            changed_paths: Vec::new(),
            unconfined,
        };
        let finished = |unconfined| Event::ToolCallFinished {
            task_id: "t".into(),
            call: call(unconfined),
        };
        assert_eq!(
            human_line(&finished(true)).as_deref(),
            Some("• mcp__srv__lookup srv › lookup [UNCONFINED: ran outside any confinement] — ok: the value of a")
        );
        assert_eq!(
            human_line(&finished(false)).as_deref(),
            Some("• mcp__srv__lookup srv › lookup — ok: the value of a")
        );
        let asked = Event::ApprovalRequested {
            task_id: "t".into(),
            request: ApprovalRequest {
                approval_id: "a".into(),
                call_id: "c1".into(),
                intent: None,
                detail: ApprovalDetail::McpCall {
                    server: "srv".into(),
                    source: McpSource::Project,
                    tool: "lookup".into(),
                    description: String::new(),
                    arguments: "{}".into(),
                    annotations: Default::default(),
                    writes_workspace: false,
                    unconfined: true,
                },
                hook_reasons: Vec::new(),
            },
        };
        assert_eq!(
            human_line(&asked).as_deref(),
            Some("? approval needed: call `lookup` of MCP server `srv`, which runs UNCONFINED (it can read and write anything you can)")
        );
    }

    #[test]
    fn a_subtask_is_said_in_the_parents_log_and_its_lines_are_indented() {
        use crate::protocol::{TaskStatus, TaskSummary, UiMessage};
        let sink = CliSink::new(false);
        let card = |status, result: Option<&str>| Event::MessageAdded {
            task_id: "parent".into(),
            message: UiMessage::Subtask {
                id: "subtask-child".into(),
                task_id: "child".into(),
                title: "Write the parser".into(),
                mode: "Code".into(),
                status,
                result_safe_html: result.map(str::to_string),
            },
        };
        assert_eq!(
            sink.log_line(&card(TaskStatus::Running, None)).as_deref(),
            Some("▶ subtask in Code mode: Write the parser")
        );
        let child: TaskSummary = serde_json::from_value(serde_json::json!({
            "id": "child", "title": "Write the parser", "status": "running", "intent_id": null,
            "model": "m", "usage": {"input_tokens": 0, "output_tokens": 0, "cost_usd": null},
            "created_at": "", "updated_at": "", "error": null, "parent_id": "parent"
        }))
        .expect("summary");
        sink.log_line(&Event::TaskUpdated { task: child });
        let call = ToolCallView {
            call_id: "c".into(),
            tool: "write_to_file".into(),
            kind: ToolKind::Mutate,
            target: "src/parser.rs".into(),
            status: ToolCallStatus::Succeeded,
            summary: "wrote 1 lines".into(),
            output: String::new(),
            path: None,
            line: None,
            changed_paths: Vec::new(),
            unconfined: false,
        };
        let line = sink.log_line(&Event::ToolCallFinished {
            task_id: "child".into(),
            call,
        });
        assert_eq!(
            line.as_deref(),
            Some("    • write_to_file src/parser.rs — ok: wrote 1 lines")
        );
        assert_eq!(
            sink.log_line(&card(
                TaskStatus::Completed,
                Some("<p>Done &amp; tested</p>")
            ))
            .as_deref(),
            Some("◀ subtask completed: Done & tested")
        );
    }
}
