//! Mandate's tools under the names and input shapes hook scripts already know.
//!
//! | Mandate          | `tool_name`            | familiar fields added to `tool_input`                |
//! |------------------|------------------------|------------------------------------------------------|
//! | `write_to_file`  | `Write`                | `file_path` (absolute), `content` (what is written)  |
//! | `apply_diff`     | `Edit` (one block)     | `file_path`, `old_string`, `new_string`              |
//! |                  | `MultiEdit` (several)  | `file_path`, `edits: [{old_string, new_string}]`     |
//! | `execute_command`| `Bash`                 | `command`, `timeout` (milliseconds, when given)      |
//! | `read_file`      | `Read`                 | `file_path`, `offset`, `limit` (from the line range) |
//! | `list_files`     | `LS`                   | (Mandate's `path`, relative)                         |
//! | `search_files`   | `Grep`                 | `pattern`, `glob` (Mandate's `path` stays relative)  |
//! | `ask_followup_question` | `AskUserQuestion` | —                                                  |
//!
//! Mandate's own arguments stay in `tool_input` beside the familiar ones, and its name is in
//! `mandate_tool_name`. Other tools (and MCP tools, `mcp__server__tool`) keep their name and
//! arguments. A matcher is tested against Mandate's name and every alias, so `Edit` also
//! matches a several-block `apply_diff`.

use serde_json::{json, Map, Value};

use crate::hooks::Action;

/// The familiar names a matcher may use for `tool` (the first is its `tool_name`).
pub fn aliases(tool: &str) -> &'static [&'static str] {
    match tool {
        "write_to_file" => &["Write"],
        "apply_diff" => &["Edit", "MultiEdit"],
        "execute_command" => &["Bash"],
        "read_file" => &["Read"],
        "list_files" => &["LS"],
        "search_files" => &["Grep"],
        "ask_followup_question" => &["AskUserQuestion"],
        _ => &[],
    }
}

/// Mandate's name and its aliases, for matching.
pub fn match_names(tool: &str) -> Vec<&str> {
    let mut names = vec![tool];
    names.extend_from_slice(aliases(tool));
    names
}

/// `tool_name` and `tool_input` for a call of `tool` with `args`, as planned (`action`).
pub fn tool_name_and_input(tool: &str, args: &Value, action: &Action) -> (String, Value) {
    let mut input: Map<String, Value> = match args {
        Value::Object(m) => m.clone(),
        Value::Null => Map::new(),
        other => {
            let mut m = Map::new();
            m.insert("arguments".into(), other.clone());
            m
        }
    };
    let familiar = aliases(tool).first().copied();
    let mut name = familiar.unwrap_or(tool).to_string();
    let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_string);
    match (tool, action) {
        ("write_to_file", Action::Write(w)) => {
            input.insert("file_path".into(), json!(w.path.abs));
            input.insert("content".into(), json!(w.new_content));
        }
        ("apply_diff", Action::Write(w)) => {
            input.insert("file_path".into(), json!(w.path.abs));
            let blocks = text("diff")
                .and_then(|d| crate::tools::search_replace::parse_blocks(&d).ok())
                .unwrap_or_default();
            let edit = |b: &crate::tools::search_replace::SearchReplaceBlock| {
                (
                    b.search.strip_suffix('\n').unwrap_or(&b.search).to_string(),
                    b.replace
                        .strip_suffix('\n')
                        .unwrap_or(&b.replace)
                        .to_string(),
                )
            };
            if let [one] = blocks.as_slice() {
                let (old, new) = edit(one);
                input.insert("old_string".into(), json!(old));
                input.insert("new_string".into(), json!(new));
            } else {
                name = "MultiEdit".into();
                let edits: Vec<Value> = blocks
                    .iter()
                    .map(edit)
                    .map(|(old, new)| json!({"old_string": old, "new_string": new}))
                    .collect();
                input.insert("edits".into(), json!(edits));
            }
        }
        ("execute_command", Action::Command(c)) => {
            input.insert("command".into(), json!(c.command));
            if let Some(s) = args.get("timeout_seconds").and_then(Value::as_u64) {
                input.insert("timeout".into(), json!(s.saturating_mul(1000)));
            }
        }
        ("read_file", Action::Read { path }) => {
            input.insert("file_path".into(), json!(path.abs));
            let start = args.get("start_line").and_then(Value::as_u64);
            let end = args.get("end_line").and_then(Value::as_u64);
            if let Some(start) = start {
                input.insert("offset".into(), json!(start));
            }
            if let Some(end) = end {
                input.insert("limit".into(), json!(end + 1 - start.unwrap_or(1).min(end)));
            }
        }
        ("search_files", _) => {
            if let Some(regex) = text("regex") {
                input.insert("pattern".into(), json!(regex));
            }
            if let Some(glob) = text("file_pattern") {
                input.insert("glob".into(), json!(glob));
            }
        }
        _ => {}
    }
    (name, Value::Object(input))
}

/// `tool_response` for PostToolUse: what the model reads (`content`), whether it is an error,
/// the card's summary, and the familiar fields (`filePath` and `success` for file tools,
/// `stdout` for `Bash`).
pub fn tool_response(
    tool: &str,
    action: &Action,
    content: &str,
    display: &str,
    summary: &str,
    is_error: bool,
) -> Value {
    let mut response = json!({
        "content": content,
        "is_error": is_error,
        "summary": summary,
    });
    match action {
        Action::Write(w) => {
            response["filePath"] = json!(w.path.abs);
            response["success"] = json!(!is_error);
        }
        Action::Read { path } if tool == "read_file" => {
            response["filePath"] = json!(path.abs);
        }
        Action::Command(_) => {
            response["stdout"] = json!(display);
            response["stderr"] = json!("");
            response["interrupted"] = json!(false);
        }
        _ => {}
    }
    response
}
