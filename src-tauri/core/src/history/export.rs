//! One task as Markdown, for a person to keep or share: what it was (title, mode, model,
//! intent, dates, cost and tokens), its todo list and its conversation, each tool call on one
//! line. Everything passes the redactor last: no secret Mandate holds is written out, whatever
//! carried it into the history.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::agent::TaskRecord;
use crate::llm::ChatMessage;
use crate::protocol::{TaskSummary, TodoStatus, ToolCallView, UiMessage};

/// The task as Markdown; `intent_name` is the intent's name in the intents file now.
pub fn to_markdown(record: &TaskRecord, intent_name: Option<&str>) -> String {
    let mut out = String::new();
    header(&mut out, &record.summary, intent_name);
    if !record.summary.todos.is_empty() {
        out.push_str("\n## Todo list\n\n");
        for item in &record.summary.todos {
            let line = one_line(&item.text);
            let _ = match item.status {
                TodoStatus::Completed => writeln!(out, "- [x] {line}"),
                TodoStatus::InProgress => writeln!(out, "- [ ] {line} (in progress)"),
                TodoStatus::Pending => writeln!(out, "- [ ] {line}"),
            };
        }
    }
    out.push_str("\n## Conversation\n");
    conversation(&mut out, record);
    crate::redact::Redactor::global().redact(&out).into_owned()
}

fn header(out: &mut String, task: &TaskSummary, intent_name: Option<&str>) {
    let title = match one_line(&task.title) {
        t if t.is_empty() => "Untitled task".to_string(),
        t => t,
    };
    let _ = writeln!(out, "# {title}\n");
    let intent = match (&task.intent_id, intent_name) {
        (Some(id), Some(name)) => format!("{} — {}", code(id), one_line(name)),
        (Some(id), None) => code(id),
        (None, _) => "none".into(),
    };
    let usage = &task.usage;
    let cost = match usage.cost_usd {
        Some(c) => format!("${c:.4}"),
        None => "unknown (the model's price is not known)".into(),
    };
    let mut tokens = format!("{} in", usage.input_tokens);
    if usage.cache_read_tokens > 0 || usage.cache_write_tokens > 0 {
        let _ = write!(
            tokens,
            " ({} read from the prompt cache, {} written to it)",
            usage.cache_read_tokens, usage.cache_write_tokens
        );
    }
    let _ = write!(tokens, ", {} out", usage.output_tokens);
    let status = in_words(task.status);
    let rows = [
        ("Task", code(&task.id)),
        ("Mode", task.mode.clone().unwrap_or_else(|| "code".into())),
        ("Model", code(&task.model)),
        ("Intent", intent),
        ("Status", status),
        ("Started", task.created_at.clone()),
        ("Last activity", task.updated_at.clone()),
        ("Cost", cost),
        ("Tokens", tokens),
    ];
    for (name, value) in rows {
        let _ = writeln!(out, "- **{name}:** {value}");
    }
    if let Some(parent) = &task.parent_id {
        let _ = writeln!(out, "- **Subtask of:** {}", code(parent));
    }
    if let Some(error) = &task.error {
        let _ = writeln!(out, "- **Last error:** {}", one_line(error));
    }
}

fn conversation(out: &mut String, record: &TaskRecord) {
    let typed: HashMap<usize, &str> = record
        .turns
        .iter()
        .map(|t| (t.conversation_at, t.text.as_str()))
        .collect();
    let views: HashMap<&str, &ToolCallView> = record
        .messages
        .iter()
        .filter_map(|m| match m {
            UiMessage::Tool { call, .. } => Some((call.call_id.as_str(), call)),
            _ => None,
        })
        .collect();
    for (at, message) in record.conversation.iter().enumerate() {
        match message {
            ChatMessage::User { text, images } => {
                let shown = match typed.get(&at) {
                    Some(typed) => Some(*typed),
                    // A subtask's request from its parent, or a headless run's prompt.
                    None if at == 0 => Some(text.as_str()),
                    None => None,
                };
                match shown {
                    Some(text) => {
                        let _ = write!(out, "\n### You\n\n{}\n", text.trim_end());
                        if !images.is_empty() {
                            let _ = writeln!(out, "\n_{} image(s) attached._", images.len());
                        }
                    }
                    None => {
                        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                        let _ = write!(
                            out,
                            "\n> Mandate told the model: {}\n",
                            crate::text::ellipsize(first.trim(), 160)
                        );
                    }
                }
            }
            ChatMessage::Assistant {
                text, tool_calls, ..
            } => {
                if !text.trim().is_empty() {
                    let _ = write!(out, "\n### Agent\n\n{}\n", text.trim_end());
                }
                if !tool_calls.is_empty() {
                    out.push('\n');
                }
                for call in tool_calls {
                    let line = match views.get(call.id.as_str()) {
                        Some(view) => tool_line(view),
                        None => format!(
                            "{} {}",
                            code(&call.name),
                            code(&crate::text::ellipsize(&one_line(&call.arguments), 120))
                        ),
                    };
                    let _ = writeln!(out, "- Tool {line}");
                }
            }
            ChatMessage::ToolResult { .. } => {}
        }
    }
}

/// `read_file` on `src/lib.rs`: succeeded — 120 lines
fn tool_line(view: &ToolCallView) -> String {
    let status = in_words(view.status);
    let mut line = code(&view.tool);
    if !view.target.trim().is_empty() {
        let _ = write!(
            line,
            " on {}",
            code(&crate::text::ellipsize(&one_line(&view.target), 200))
        );
    }
    let _ = write!(line, ": {status}");
    let summary = one_line(&view.summary);
    if !summary.is_empty() {
        let _ = write!(line, " — {}", crate::text::ellipsize(&summary, 200));
    }
    line
}

/// A status as the protocol spells it, in words: `waiting_for_approval` → `waiting for approval`.
fn in_words(status: impl serde::Serialize) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|v| v.as_str().map(|s| s.replace('_', " ")))
        .unwrap_or_default()
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` as an inline code span, however many backticks it holds.
fn code(text: &str) -> String {
    let text = one_line(text);
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    if longest == 0 {
        format!("{fence}{text}{fence}")
    } else {
        format!("{fence} {text} {fence}")
    }
}

/// `2026-11-28-fix-the-parser-0b1c2d3e.md`: the day it started, its title, its id.
pub fn export_file_name(task: &TaskSummary) -> String {
    let day: String = task.created_at.chars().take(10).collect();
    let day = if day.len() == 10 && day.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
        day
    } else {
        "undated".into()
    };
    let mut slug = String::new();
    for c in task.title.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
        if slug.len() >= 40 {
            break;
        }
    }
    let slug = match slug.trim_matches('-') {
        "" => "task",
        s => s,
    };
    let id: String = task
        .id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .take(8)
        .collect();
    format!("{day}-{slug}-{id}.md")
}

/// Where the window's exports go, under Mandate's data directory.
pub const EXPORTS_DIR: &str = "exports";

#[derive(Debug, thiserror::Error)]
#[error("could not write the export {path}: {source}")]
pub struct ExportError {
    pub path: String,
    pub source: std::io::Error,
}

/// Writes the task's Markdown into `dir` (made if missing) under [`export_file_name`],
/// replacing an earlier export of the same task.
pub fn save_export(
    dir: &std::path::Path,
    record: &TaskRecord,
    intent_name: Option<&str>,
) -> Result<crate::protocol::TaskExport, ExportError> {
    let markdown = to_markdown(record, intent_name);
    let path = dir.join(export_file_name(&record.summary));
    let failed = |source| ExportError {
        path: path.display().to_string(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(failed)?;
    crate::fsutil::write_atomic(&path, markdown.as_bytes()).map_err(failed)?;
    Ok(crate::protocol::TaskExport {
        markdown,
        path: path.display().to_string(),
    })
}
