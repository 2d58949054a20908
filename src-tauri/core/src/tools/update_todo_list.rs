//! `update_todo_list`: the task's checklist, written whole each time in the form people know
//! (`[ ]` pending, `[-]` in progress, `[x]` done). It is shown above the task, sent back to the
//! model with every request (so it outlives condensing), and the person may edit it.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{AgentTool, Plan, RunCx, ToolCx, ToolError, ToolOutput};
use crate::hooks::Action;
use crate::protocol::{TodoItem, TodoStatus, ToolKind};

/// At most this many items, each at most this many characters.
const MAX_ITEMS: usize = 100;
const MAX_TEXT: usize = 300;

/// Replace the task's todo list with this checklist, one item per line: `[ ]` pending, `[-]`
/// in progress (one at a time), `[x]` done. Send the whole list each time; keep it current as
/// you work.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The checklist, e.g. "[x] Read the parser\n[-] Add the error case\n[ ] Run the tests".
    pub todos: String,
}

pub struct UpdateTodoList;

/// Why a todo list was refused, in words for the model or the person.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TodoError(String);

impl TodoError {
    fn new(why: impl Into<String>) -> Self {
        Self(why.into())
    }
}

/// Reads a checklist; the error names the line that is wrong.
pub fn parse_todos(text: &str) -> Result<Vec<TodoItem>, TodoError> {
    let mut items = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        let line = line
            .strip_prefix("- ")
            .or_else(|| line.strip_prefix("* "))
            .unwrap_or(line);
        let (status, rest) = if let Some(rest) = line.strip_prefix("[ ]") {
            (TodoStatus::Pending, rest)
        } else if let Some(rest) = line
            .strip_prefix("[-]")
            .or_else(|| line.strip_prefix("[~]"))
        {
            (TodoStatus::InProgress, rest)
        } else if let Some(rest) = line
            .strip_prefix("[x]")
            .or_else(|| line.strip_prefix("[X]"))
        {
            (TodoStatus::Completed, rest)
        } else {
            return Err(TodoError(format!(
                "line {} (`{}`) does not start with [ ], [-] or [x]",
                n + 1,
                crate::text::first_chars(line, 60)
            )));
        };
        items.push(TodoItem {
            text: rest.trim().to_string(),
            status,
        });
    }
    check_todos(items)
}

/// A list as the model or the person gives it, checked: no empty item, none too long, not too
/// many, at most one in progress.
pub fn check_todos(items: Vec<TodoItem>) -> Result<Vec<TodoItem>, TodoError> {
    if items.len() > MAX_ITEMS {
        return Err(TodoError::new(format!(
            "the list has {} items; at most {MAX_ITEMS}",
            items.len()
        )));
    }
    for (n, item) in items.iter().enumerate() {
        if item.text.trim().is_empty() {
            return Err(TodoError::new(format!("item {} has no text", n + 1)));
        }
        if item.text.chars().count() > MAX_TEXT || item.text.contains('\n') {
            return Err(TodoError::new(format!(
                "item {} is longer than {MAX_TEXT} characters or spans lines: keep each item to one short line",
                n + 1
            )));
        }
    }
    let doing = items
        .iter()
        .filter(|i| i.status == TodoStatus::InProgress)
        .count();
    if doing > 1 {
        return Err(TodoError::new(format!(
            "{doing} items are in progress; mark only the one you are working on with [-]"
        )));
    }
    Ok(items)
}

/// The list as the model reads it with every request.
pub fn reminder(items: &[TodoItem], edited_by_person: bool) -> Option<String> {
    if items.is_empty() {
        return None;
    }
    let done = items
        .iter()
        .filter(|i| i.status == TodoStatus::Completed)
        .count();
    let lines: Vec<String> = items.iter().map(TodoItem::line).collect();
    let edited = if edited_by_person {
        " The user edited it since you last wrote it: follow their version."
    } else {
        ""
    };
    Some(format!(
        "<reminders>\nYour todo list ({done} of {} done; keep it current with update_todo_list).{edited}\n{}\n</reminders>",
        items.len(),
        lines.join("\n")
    ))
}

#[async_trait]
impl AgentTool for UpdateTodoList {
    type Args = Args;
    type Work = Vec<TodoItem>;
    const NAME: &'static str = "update_todo_list";
    const KIND: ToolKind = ToolKind::Read;
    const DESCRIPTION: &'static str =
        "Replace the task's todo list (a checklist: [ ] pending, [-] in progress, [x] done). The user sees it above the task and may edit it.";

    fn plan(&self, args: Args, _: &ToolCx<'_>) -> Result<Plan<Vec<TodoItem>>, ToolError> {
        let items = parse_todos(&args.todos).map_err(|why| {
            ToolError::InvalidArguments(format!("The todo list was not changed: {why}."))
        })?;
        Ok(Plan {
            target: format!("{} items", items.len()),
            action: Action::Meta,
            work: items,
        })
    }

    async fn run(
        &self,
        _: Action,
        items: Vec<TodoItem>,
        cx: &RunCx<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let done = items
            .iter()
            .filter(|i| i.status == TodoStatus::Completed)
            .count();
        let total = items.len();
        let current = items
            .iter()
            .find(|i| i.status == TodoStatus::InProgress)
            .map(|i| format!("; in progress: {}", i.text))
            .unwrap_or_default();
        cx.task.set_todos(items, false);
        Ok(ToolOutput::text(
            format!("{done} of {total} done"),
            format!("Todo list updated: {done} of {total} done{current}."),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checklists_are_read_as_people_write_them_and_bad_ones_are_named() {
        let items = parse_todos(
            "[x] Read the parser\n- [-] Add the error case\n\n* [ ] Run the tests\n[X] Done too",
        )
        .expect("list");
        assert_eq!(
            items.iter().map(TodoItem::line).collect::<Vec<_>>(),
            [
                "[x] Read the parser",
                "[-] Add the error case",
                "[ ] Run the tests",
                "[x] Done too"
            ]
        );
        let err = parse_todos("[x] a\nno box here")
            .expect_err("bad line")
            .to_string();
        assert!(err.contains("line 2 (`no box here`)"), "{err}");
        let err = parse_todos("[-] a\n[-] b")
            .expect_err("two in progress")
            .to_string();
        assert!(err.contains("2 items are in progress"), "{err}");
        let err = parse_todos("[ ]   ").expect_err("empty item").to_string();
        assert!(err.contains("item 1 has no text"), "{err}");
        let long = format!("[ ] {}", "x".repeat(301));
        assert!(parse_todos(&long).is_err());
        let many: String = (0..101).map(|n| format!("[ ] item {n}\n")).collect();
        assert!(parse_todos(&many)
            .expect_err("too many")
            .to_string()
            .contains("101 items"));
        assert_eq!(parse_todos("").expect("empty list"), Vec::new());
    }

    #[test]
    fn the_reminder_lists_the_items_and_says_when_the_person_edited_them() {
        let items = parse_todos("[x] a\n[-] b\n[ ] c").expect("list");
        let text = reminder(&items, false).expect("reminder");
        assert!(
            text.contains("1 of 3 done") && text.contains("[-] b\n[ ] c"),
            "{text}"
        );
        assert!(!text.contains("The user edited"));
        assert!(reminder(&items, true)
            .expect("r")
            .contains("The user edited it"));
        assert_eq!(reminder(&[], false), None);
    }
}
