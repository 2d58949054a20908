use pretty_assertions::assert_eq;
use serde_json::json;

use super::history_tests::Task;
use super::{export_file_name, save_export, to_markdown};

fn parser_task() -> Task {
    Task::new(
        "0b1c2d3e-aaaa-bbbb-cccc-000000000001",
        "Fix the parser: nested `[]`",
        "2026-11-01T09:00:00Z",
        "2026-11-01T10:15:00Z",
    )
    .intent("INT-001")
    .cost(0.4213)
    .set("mode", json!("debug"))
    .set(
        "todos",
        json!([
            {"text": "Find the bug", "status": "completed"},
            {"text": "Fix it", "status": "in_progress"},
            {"text": "Add a test", "status": "pending"},
        ]),
    )
    .person("The tokenizer chokes on nested brackets.\nSee `lex_bracket`.")
    .tool(
        "read_file",
        "src/lexer.rs",
        "120 lines",
        "fn lex_bracket() {}",
    )
    .agent("The depth counter never goes down:\n\n```rust\ndepth += 1;\n```")
}

#[test]
fn a_task_reads_as_markdown_with_its_facts_todos_and_conversation() {
    let mut record = parser_task().record();
    record.summary.usage.cache_read_tokens = 800;
    record.summary.usage.cache_write_tokens = 100;
    let expected = "\
# Fix the parser: nested `[]`

- **Task:** `0b1c2d3e-aaaa-bbbb-cccc-000000000001`
- **Mode:** debug
- **Model:** `test-model`
- **Intent:** `INT-001` — Parser rewrite
- **Status:** completed
- **Started:** 2026-11-01T09:00:00Z
- **Last activity:** 2026-11-01T10:15:00Z
- **Cost:** $0.4213
- **Tokens:** 1200 in (800 read from the prompt cache, 100 written to it), 340 out

## Todo list

- [x] Find the bug
- [ ] Fix it (in progress)
- [ ] Add a test

## Conversation

### You

The tokenizer chokes on nested brackets.
See `lex_bracket`.

- Tool `read_file` on `src/lexer.rs`: succeeded — 120 lines

### Agent

The depth counter never goes down:

```rust
depth += 1;
```
";
    assert_eq!(to_markdown(&record, Some("Parser rewrite")), expected);
}

#[test]
fn what_mandate_added_a_subtask_and_an_unknown_cost_are_said_plainly() {
    let mut record = Task::new("t", "", "2026-11-01T09:00:00Z", "2026-11-01T09:00:00Z")
        .set("parent_id", json!("p-1"))
        .set("error", json!("Interrupted:\nresume"))
        .record();
    record.conversation = vec![
        crate::llm::ChatMessage::user("Do the subtask the parent asked for"),
        crate::llm::ChatMessage::user("\n\nThe project's check found 2 new problems:\n…"),
    ];
    let markdown = to_markdown(&record, None);
    for line in [
        "# Untitled task",
        "- **Intent:** none",
        "- **Cost:** unknown (the model's price is not known)",
        "- **Tokens:** 1200 in, 340 out",
        "- **Subtask of:** `p-1`",
        "- **Last error:** Interrupted: resume",
        "### You\n\nDo the subtask the parent asked for\n",
        "> Mandate told the model: The project's check found 2 new problems:",
    ] {
        assert!(markdown.contains(line), "{line:?} in:\n{markdown}");
    }
}

#[test]
fn no_secret_mandate_holds_reaches_the_export() {
    let secret = "sk-export-test-3f9a7c1e5b2d4a6c8e0f";
    assert!(crate::redact::Redactor::global().add(secret));
    // A history written before the key was known still holds it; the export does not.
    let record = Task::new(
        "t-secret",
        "Use the key",
        "2026-11-01T09:00:00Z",
        "2026-11-01T09:00:00Z",
    )
    .person(&format!("call the API with {secret}"))
    .tool(
        "execute_command",
        &format!("curl -H 'Authorization: Bearer {secret}'"),
        "exit 0",
        "",
    )
    .agent(&format!("Done; I used {secret}."))
    .record();
    let markdown = to_markdown(&record, None);
    assert!(!markdown.contains(secret), "{markdown}");
    assert_eq!(
        markdown.matches(crate::redact::REDACTED).count(),
        3,
        "{markdown}"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let export = save_export(dir.path(), &record, None).expect("export");
    let written = std::fs::read_to_string(&export.path).expect("written");
    assert!(!written.contains(secret));
    assert_eq!(written, export.markdown);
}

#[test]
fn an_export_is_written_under_a_name_of_its_day_title_and_id_replacing_the_last() {
    let record = parser_task().record();
    assert_eq!(
        export_file_name(&record.summary),
        "2026-11-01-fix-the-parser-nested-0b1c2d3e.md"
    );
    let mut odd = record.summary.clone();
    odd.title = "../../etc/passwd \u{202e} ✓✓".into();
    odd.created_at = "not a date".into();
    odd.id = "../x".into();
    assert_eq!(export_file_name(&odd), "undated-etc-passwd-x.md");
    let dir = tempfile::tempdir().expect("tempdir");
    let exports = dir.path().join("exports");
    let first = save_export(&exports, &record, None).expect("export");
    let second = save_export(&exports, &record, Some("Parser rewrite")).expect("again");
    assert_eq!(first.path, second.path);
    let files: Vec<_> = std::fs::read_dir(&exports)
        .expect("dir")
        .flatten()
        .collect();
    assert_eq!(files.len(), 1);
    assert!(std::fs::read_to_string(&second.path)
        .expect("read")
        .contains("Parser rewrite"));
}
