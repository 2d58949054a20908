//! Modes in the window: the picker beside the message box lists the built-in modes and the
//! workspace's own (`.roomodes`), a new task starts in the mode picked, its header shows it,
//! the mode holds the agent to its kinds of action under an intent that owns everything, and
//! the person changes an open task's mode from the same picker.

use mandate_tests::app::{workspace, App, UserDirs};
use mandate_tests::llm_server::ScriptedServer;
use mandate_tests::sse::openai;
use serde_json::json;

const INTENTS: &str = r#"active_intents:
  - id: INT-1
    name: Everything
    status: IN_PROGRESS
    owned_scope: ["**"]
"#;

const ROOMODES: &str = "customModes:\n  - slug: docs-writer\n    name: Docs Writer\n    roleDefinition: You write the docs.\n    whenToUse: Documentation.\n    groups: [read, [edit, {fileRegex: '^docs/'}]]\n";

#[tokio::test]
async fn the_mode_picked_beside_the_message_box_holds_the_task_and_shows_in_its_header() {
    let server = ScriptedServer::start(vec![
        openai::turn().tool_call("s", "select_active_intent", json!({"intent_id": "INT-1"})).reply(),
        openai::turn().tool_call("w", "write_to_file", json!({"path": "src/x.rs", "content": "fn x() {}\n", "intent_id": "INT-1", "mutation_class": "INTENT_EVOLUTION"})).reply(),
        openai::turn().text("Architect cannot write code; here is the plan instead.").reply(),
    ])
    .await;
    let ws = workspace(Some(INTENTS), &[(".roomodes", ROOMODES)]);
    let dirs = UserDirs::new();
    dirs.settings_openai(&format!("{}/v1", server.base_url()), false);
    let app = App::launch("modes", ws.path(), &dirs, &[])
        .await
        .expect("launch");

    // The built-in modes and the workspace's own, Code first for a new task.
    app.wait_until("[...document.querySelectorAll('#mode-picker option')].some(o => o.value === 'docs-writer')")
        .await
        .expect("the workspace's mode is offered");
    let offered = app
        .eval("return [...document.querySelectorAll('#mode-picker option')].map(o => o.value)")
        .await
        .expect("options");
    assert_eq!(
        offered,
        json!([
            "code",
            "architect",
            "ask",
            "debug",
            "orchestrator",
            "docs-writer"
        ])
    );
    assert_eq!(
        app.eval("return document.querySelector('#mode-picker').value")
            .await
            .expect("value"),
        json!("code")
    );

    app.choose("#mode-picker", "architect").await.expect("pick");
    app.send("Plan the parser").await.expect("send");
    app.wait_until("[...document.querySelectorAll('.task-panel:not([hidden]) .message[data-role=\"assistant\"]')].some(m => m.textContent.includes('here is the plan instead'))")
        .await
        .expect("answer");
    assert_eq!(
        app.text(".task-panel:not([hidden]) .task-mode")
            .await
            .expect("mode"),
        "Architect"
    );
    // The model's write was refused by the mode, and it read why.
    let result = server
        .tool_result_in(2, "w")
        .expect("the write's result reached the model");
    assert!(result.contains("MODE_RESTRICTED"), "{result}");
    assert!(!ws.path().join("src/x.rs").exists());
    app.wait_until("document.querySelector('#mode-picker').value === 'architect'")
        .await
        .expect("the picker shows the open task's mode");
    app.screenshot("modes-picker").await.expect("screenshot");

    // The person puts the open task in Code mode from the picker.
    app.choose("#mode-picker", "code").await.expect("pick code");
    app.wait_until(
        "document.querySelector('.task-panel:not([hidden]) .task-mode')?.textContent === 'Code'",
    )
    .await
    .expect("the header follows");
    // A new task starts in the mode picked last (Code here).
    app.click("#new-task").await.expect("new task");
    app.wait_until("document.querySelector('#mode-picker').value === 'code'")
        .await
        .expect("a new task starts in Code");
}

#[tokio::test]
async fn the_todo_list_shows_above_the_task_and_the_persons_edit_reaches_the_model() {
    let server = ScriptedServer::start(vec![
        openai::turn()
            .tool_call(
                "t",
                "update_todo_list",
                json!({"todos": "[x] Read the parser\n[-] Plan the change\n[ ] Write the tests"}),
            )
            .reply(),
        openai::turn().text("Planning now.").reply(),
        openai::turn()
            .text("Writing the tests, as you said.")
            .reply(),
    ])
    .await;
    let ws = workspace(Some(INTENTS), &[]);
    let dirs = UserDirs::new();
    dirs.settings_openai(&format!("{}/v1", server.base_url()), false);
    let app = App::launch("todos", ws.path(), &dirs, &[])
        .await
        .expect("launch");
    app.send("Fix the parser").await.expect("send");
    app.wait_until("(document.querySelector('.task-panel:not([hidden]) .task-todos:not([hidden]) summary')?.textContent ?? '').includes('1/3')")
        .await
        .expect("the bar shows done of total");
    assert_eq!(
        app.eval(
            "return document.querySelector('.task-panel:not([hidden]) .todo-current').textContent"
        )
        .await
        .expect("current"),
        json!("Plan the change")
    );
    app.wait_until("[...document.querySelectorAll('.task-panel:not([hidden]) .message[data-role=\"assistant\"]')].some(m => m.textContent.includes('Planning now.'))")
        .await
        .expect("answer");
    // The person opens the list and puts "Write the tests" in progress.
    app.click(".task-panel:not([hidden]) .task-todos summary")
        .await
        .expect("open");
    app.click(".task-panel:not([hidden]) .todo-item[data-index=\"2\"]")
        .await
        .expect("advance");
    app.wait_until("document.querySelector('.task-panel:not([hidden]) .todo-current')?.textContent === 'Write the tests'")
        .await
        .expect("the edit shows");
    app.screenshot("todos-bar").await.expect("screenshot");
    app.send("Go on").await.expect("send");
    app.wait_until("[...document.querySelectorAll('.task-panel:not([hidden]) .message[data-role=\"assistant\"]')].some(m => m.textContent.includes('as you said'))")
        .await
        .expect("second answer");
    let last = server.requests()[2].json()["messages"]
        .as_array()
        .and_then(|m| m.last().cloned())
        .expect("last message");
    let text = last["content"].as_str().unwrap_or_default().to_string();
    assert!(
        text.starts_with("Go on")
            && text.contains("The user edited it")
            && text.contains("[ ] Plan the change\n[-] Write the tests"),
        "{text}"
    );
}

#[tokio::test]
async fn slash_commands_are_offered_as_the_person_types_and_run_when_sent() {
    let server = ScriptedServer::start(vec![openai::turn().text("Reviewed.").reply()]).await;
    let ws = workspace(
        Some(INTENTS),
        &[
            (
                ".roo/commands/review.md",
                "---\ndescription: Review a file for bugs\nargument-hint: <path>\n---\nReview $ARGUMENTS for bugs.\n",
            ),
            (".claude/commands/release.md", "Cut a release.\n"),
        ],
    );
    let dirs = UserDirs::new();
    dirs.settings_openai(&format!("{}/v1", server.base_url()), false);
    let app = App::launch("slash", ws.path(), &dirs, &[])
        .await
        .expect("launch");
    app.type_into("#composer-input", "/re").await.expect("type");
    app.wait_until("!document.querySelector('#slash-list').hidden && document.querySelectorAll('#slash-list .slash-option').length === 2")
        .await
        .expect("the matching commands are offered");
    let offered = app
        .eval("return [...document.querySelectorAll('#slash-list .slash-option')].map(o => o.textContent)")
        .await
        .expect("options");
    assert_eq!(
        offered,
        json!(["/release", "/review <path> — Review a file for bugs"])
    );
    app.keys("#composer-input", "\u{E015}")
        .await
        .expect("arrow down");
    app.screenshot("slash-autocomplete")
        .await
        .expect("screenshot");
    app.keys("#composer-input", "\u{E004}").await.expect("tab");
    app.wait_until("document.querySelector('#composer-input').value === '/review ' && document.querySelector('#slash-list').hidden")
        .await
        .expect("the command is taken");
    app.keys("#composer-input", "src/lib.rs")
        .await
        .expect("type the argument");
    app.click("#composer-send").await.expect("send");
    app.wait_until("[...document.querySelectorAll('.task-panel:not([hidden]) .message[data-role=\"assistant\"]')].some(m => m.textContent.includes('Reviewed.'))")
        .await
        .expect("answer");
    let user = server.requests()[0].json()["messages"][1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        user.starts_with("/review src/lib.rs\n\n<command name=\"/review\"")
            && user.contains("Review src/lib.rs for bugs."),
        "{user}"
    );
}

#[tokio::test]
async fn settings_list_what_is_read_of_the_persons_files_and_name_what_is_not() {
    let server = ScriptedServer::start(vec![]).await;
    let ws = workspace(
        Some(INTENTS),
        &[
            ("AGENTS.md", "Run the tests first."),
            (".roo/rules/general.md", "Small diffs."),
            (
                ".roomodes",
                "customModes:\n  - slug: Bad Slug\n    roleDefinition: x\n    groups: [read]\n",
            ),
            (
                ".claude/skills/release/SKILL.md",
                "---\nname: release\ndescription: Cut a release.\n---\nSteps.\n",
            ),
            (
                ".claude/commands/review.md",
                "---\ndescription: Review a file\n---\nReview $ARGUMENTS.\n",
            ),
        ],
    );
    let dirs = UserDirs::new();
    dirs.settings_openai(&format!("{}/v1", server.base_url()), false);
    let app = App::launch("instructions", ws.path(), &dirs, &[])
        .await
        .expect("launch");
    app.click("nav button[data-view=\"settings\"]")
        .await
        .expect("settings");
    app.wait_until("(document.querySelector('#instructions-list')?.textContent ?? '').includes('.roo/rules/general.md')")
        .await
        .expect("the rule files are listed");
    let text = app
        .eval("return document.querySelector('#instructions-list').textContent")
        .await
        .expect("text");
    let text = text.as_str().unwrap_or_default();
    for needle in [
        "AGENTS.md",
        ".roo/rules/general.md",
        "Architect (architect) — read, edit, edits \\.md$ · built-in",
        "release — .claude/skills/release/SKILL.md",
        "/review Review a file · .claude/commands/review.md",
        ".roomodes, mode 1 (Bad Slug): the slug must be letters, digits and dashes",
    ] {
        assert!(text.contains(needle), "{needle} not in: {text}");
    }
    app.eval("document.querySelector('#instructions-heading').scrollIntoView(); return true")
        .await
        .expect("scroll");
    app.screenshot("settings-instructions")
        .await
        .expect("screenshot");
}
