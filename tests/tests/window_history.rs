//! The task history in the window: the search above the task list (words of the conversation
//! with their snippet, the intent, dates and cost as filters, a hostile search, no match) and a
//! task exported as Markdown by the host, shown to copy.

use mandate_core::agent::{TaskRecord, TaskStore};
use mandate_tests::app::{workspace, App, UserDirs};
use serde_json::{json, Value};

const INTENTS: &str = r#"active_intents:
  - id: INT-A
    name: Lexer fixes
    owned_scope: ["src/**"]
  - id: INT-B
    name: Release notes
    owned_scope: ["docs/**"]
"#;

/// A stored task: the person's message, a tool call on `target`, the agent's answer.
fn task(id: &str, title: &str, day: &str, intent: &str, cost: f64, said: [&str; 3]) -> TaskRecord {
    let [person, target, agent] = said;
    let governance = mandate_core::hooks::TaskGovernance {
        task_id: id.into(),
        selected_intent: Some(intent.into()),
        ..Default::default()
    };
    let record: Value = json!({
        "format": 1, "workspace": "/w", "objective": person, "governance": governance,
        "summary": {
            "id": id, "title": title, "status": "completed", "intent_id": intent,
            "model": "test-model", "error": null,
            "usage": {"input_tokens": 5000, "output_tokens": 700, "cost_usd": cost},
            "created_at": format!("{day}T09:00:00Z"), "updated_at": format!("{day}T10:00:00Z"),
        },
        "turns": [{"message_id": "u1", "text": person, "conversation_at": 0, "messages_at": 0}],
        "messages": [
            {"kind": "user", "id": "u1", "text": person},
            {"kind": "tool", "id": "t1", "call": {"call_id": "c1", "tool": "read_file",
                "kind": "read", "target": target, "status": "succeeded",
                "summary": "40 lines", "output": "…"}},
            {"kind": "assistant", "id": "a1", "safe_html": format!("<p>{agent}</p>"),
             "complete": true},
        ],
        "conversation": [
            {"role": "user", "text": person},
            {"role": "assistant", "text": "", "tool_calls": [
                {"id": "c1", "name": "read_file", "arguments": format!("{{\"path\":\"{target}\"}}")}]},
            {"role": "tool_result", "call_id": "c1", "name": "read_file", "content": "…",
             "is_error": false},
            {"role": "assistant", "text": agent, "tool_calls": []},
        ],
    });
    serde_json::from_value(record).expect("a task record")
}

fn visible_hits() -> &'static str {
    "return [...document.querySelectorAll('#history-results .history-hit')].map(li => li.dataset.taskId)"
}

#[tokio::test]
async fn the_history_is_searched_above_the_task_list_and_a_task_exported_as_markdown() {
    let ws = workspace(Some(INTENTS), &[("src/lexer.rs", "fn lex() {}\n")]);
    let dirs = UserDirs::new();
    let root = ws.path().canonicalize().expect("root");
    let store = TaskStore::new(&dirs.data(), &root);
    for record in [
        task(
            "task-lexer",
            "Fix the lexer",
            "2026-10-02",
            "INT-A",
            0.42,
            [
                "The tokenizer chokes on nested brackets",
                "src/lexer.rs",
                "The depth counter in lex_bracket never goes down; I fixed it.",
            ],
        ),
        task(
            "task-notes",
            "Write the release notes",
            "2026-11-03",
            "INT-B",
            2.5,
            [
                "Summarise what changed since 0.3",
                "CHANGELOG.md",
                "Here are the notes: the lexer handles nested brackets now.",
            ],
        ),
        task(
            "task-docs",
            "Tidy the docs",
            "2026-11-20",
            "INT-B",
            0.05,
            [
                "Make the docs shorter",
                "docs/guide.md",
                "Trimmed the guide by a third.",
            ],
        ),
    ] {
        store.save(&record).expect("save a task");
    }
    let app = App::launch("history", ws.path(), &dirs, &[])
        .await
        .expect("launch");
    app.wait_until("document.querySelectorAll('#task-list .task-item').length === 3")
        .await
        .expect("the three tasks are listed");

    // Words of the agent's answer and of the person's message: newest first, with snippets.
    app.type_into("#history-text", "nested BRACKETS")
        .await
        .expect("type");
    app.wait_until("document.querySelectorAll('#history-results .history-hit').length === 2")
        .await
        .expect("two tasks match");
    assert_eq!(
        app.eval(visible_hits()).await.expect("hits"),
        json!(["task-notes", "task-lexer"])
    );
    let snippet = app
        .text("#history-results .history-hit[data-task-id=\"task-lexer\"] .history-snippet")
        .await
        .expect("snippet");
    assert_eq!(snippet, "you: The tokenizer chokes on nested brackets");
    let marked = app
        .eval("return document.querySelector('#history-results .history-hit[data-task-id=\"task-notes\"] mark').textContent")
        .await
        .expect("mark");
    assert_eq!(marked, json!("nested"));
    let marks = app
        .eval("return [...document.querySelectorAll('#history-results .history-hit[data-task-id=\"task-lexer\"] mark')].map(m => m.textContent)")
        .await
        .expect("marks");
    assert_eq!(marks, json!(["nested", "brackets"]), "every word is marked");
    assert!(
        app.eval("return getComputedStyle(document.getElementById('task-list')).display")
            .await
            .expect("style")
            == json!("none"),
        "the results take the list's place"
    );
    assert!(app
        .text("#history-status")
        .await
        .expect("status")
        .contains("2 of 3 tasks match"));

    app.screenshot("history-search").await.expect("screenshot");

    // A tool's target, with the filters open: an intent and a cost bound.
    app.click("#history-filters-toggle").await.expect("filters");
    app.type_into("#history-text", "docs/").await.expect("type");
    app.wait_until("document.querySelectorAll('#history-results .history-hit').length === 1")
        .await
        .expect("one task read docs/");
    app.eval("const t = document.getElementById('history-text'); t.value = ''; t.dispatchEvent(new Event('input', {bubbles: true}));")
        .await
        .expect("clear words");
    app.choose("#history-intent", "INT-B")
        .await
        .expect("intent");
    app.wait_until("document.querySelectorAll('#history-results .history-hit').length === 2")
        .await
        .expect("two tasks hold INT-B");
    app.type_into("#history-min-cost", "1").await.expect("cost");
    app.wait_until("document.querySelectorAll('#history-results .history-hit').length === 1")
        .await
        .expect("one of them cost a dollar or more");
    assert_eq!(
        app.eval(visible_hits()).await.expect("hits"),
        json!(["task-notes"])
    );
    app.screenshot("history-filters").await.expect("screenshot");

    // Dates, as the date inputs give them (the person's own days).
    app.click("#history-clear").await.expect("clear");
    app.eval("const d = document.getElementById('history-until'); d.value = '2026-10-31'; d.dispatchEvent(new Event('input', {bubbles: true}));")
        .await
        .expect("until");
    app.wait_until("document.querySelectorAll('#history-results .history-hit').length === 1")
        .await
        .expect("one task started by the end of October");
    assert_eq!(
        app.eval(visible_hits()).await.expect("hits"),
        json!(["task-lexer"])
    );

    // A hostile search is taken literally; no match says so; Escape gives the list back.
    app.click("#history-clear").await.expect("clear");
    app.type_into("#history-text", r".*(?<\[")
        .await
        .expect("type");
    app.wait_until("(document.getElementById('history-status').textContent || '').includes('No task matches (3 searched)')")
        .await
        .expect("no match");
    app.keys("#history-text", "\u{E00C}").await.expect("escape");
    app.wait_until("getComputedStyle(document.getElementById('task-list')).display !== 'none' && document.getElementById('history-results').hidden")
        .await
        .expect("the task list is back");

    // Export: the host writes the Markdown into its data directory and shows it.
    app.click(".task-item[data-task-id=\"task-lexer\"] [data-action=\"export-task\"]")
        .await
        .expect("export");
    app.wait_until("document.getElementById('export-text').value.startsWith('# Fix the lexer')")
        .await
        .expect("the Markdown is shown");
    let path = app.text("#export-path").await.expect("path");
    assert!(
        path.starts_with(&dirs.data().join("exports").display().to_string()),
        "{path}"
    );
    let shown = app
        .eval("return document.getElementById('export-text').value")
        .await
        .expect("markdown");
    let written = std::fs::read_to_string(&path).expect("the export file");
    assert_eq!(shown, json!(written));
    for part in [
        "- **Intent:** `INT-A` — Lexer fixes",
        "- **Cost:** $0.4200",
        "### You\n\nThe tokenizer chokes on nested brackets\n",
        "- Tool `read_file` on `src/lexer.rs`: succeeded — 40 lines",
        "### Agent\n\nThe depth counter in lex_bracket never goes down; I fixed it.\n",
    ] {
        assert!(written.contains(part), "{part:?} in:\n{written}");
    }
    assert!(
        !root.join(".mandate").exists() && !root.join("exports").exists(),
        "nothing is written in the workspace"
    );
    app.click("#export-copy").await.expect("copy");
    app.wait_until("document.getElementById('export-status').dataset.copied !== undefined")
        .await
        .expect("copied, or said why not");
    app.screenshot("history-export").await.expect("screenshot");
    assert_eq!(
        app.unnamed_controls(".sidebar").await.expect("controls"),
        json!([])
    );
    app.click("#export-close").await.expect("close the dialog");
    app.close().await.expect("close");
}
