//! The window beside the person's editor: file paths in approvals, tool cards, the trace and
//! blame open in the editor chosen in Settings, at their line; the page can name neither a
//! program nor a file outside the workspace. Open folder… and recent workspaces switch the
//! workspace without a restart.

use mandate_tests::app::{workspace, App, FakePrograms, UserDirs};
use mandate_tests::llm_server::{Reply, ScriptedServer};
use mandate_tests::sse::openai;
use serde_json::json;

const INTENTS: &str = r#"active_intents:
  - id: INT-001
    name: Greeting module
    owned_scope: ["src/greet/**"]
"#;

const LINES: &str =
    "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\nl11\nl12\nl13\nl14\nl15\nl16\nl17\nl18\nl19\nl20\n";

fn write_script() -> Vec<Reply> {
    let new = LINES.replace("l15\n", "FIFTEEN\n");
    vec![
        openai::turn()
            .tool_call("s", "select_active_intent", json!({"intent_id": "INT-001"}))
            .reply(),
        openai::turn()
            .tool_call("r", "read_file", json!({"path": "src/greet/lines.txt"}))
            .reply(),
        openai::turn()
            .tool_call("w", "write_to_file", json!({"path": "src/greet/lines.txt", "content": new, "intent_id": "INT-001", "mutation_class": "INTENT_EVOLUTION"}))
            .reply(),
        openai::turn()
            .tool_call("d", "attempt_completion", json!({"result": "done"}))
            .reply(),
    ]
}

#[tokio::test]
async fn file_paths_open_in_the_chosen_editor_at_their_line() {
    let editors = FakePrograms::new(&["code", "zed", "subl"]);
    let server = ScriptedServer::start(write_script()).await;
    let ws = workspace(Some(INTENTS), &[("src/greet/lines.txt", LINES)]);
    let file = ws
        .path()
        .canonicalize()
        .expect("canonical")
        .join("src/greet/lines.txt");
    let file = file.display().to_string();
    let dirs = UserDirs::new();
    dirs.settings_openai(&format!("{}/v1", server.base_url()), true);
    let path = editors.path_env();
    let app = App::launch("editor", ws.path(), &dirs, &[("PATH", &path)])
        .await
        .expect("launch");

    // Settings show what was found; the person picks Zed.
    app.click("nav button[data-view=\"settings\"]")
        .await
        .expect("settings");
    let options = app
        .eval("return [...document.querySelectorAll('#settings-editor option')].map(o => o.value + '=' + o.textContent)")
        .await
        .expect("options");
    let options: Vec<String> = serde_json::from_value(options).expect("list");
    assert!(
        options.contains(&"auto=Automatic (Visual Studio Code, detected)".to_string()),
        "{options:?}"
    );
    assert!(
        options.contains(&"zed=Zed (detected)".to_string()),
        "{options:?}"
    );
    assert!(
        options.contains(&"idea=IntelliJ IDEA (not found)".to_string()),
        "{options:?}"
    );
    app.choose("#settings-editor", "zed").await.expect("zed");
    app.screenshot("settings-editor").await.expect("screenshot");
    app.click("#settings-save").await.expect("save");
    app.wait_until("(document.querySelector('#settings-saved')?.textContent ?? '') === 'Saved.'")
        .await
        .expect("saved");

    // The path in the approval opens where the change starts.
    app.click("nav button[data-view=\"chat\"]")
        .await
        .expect("chat");
    app.send("Capitalise fifteen").await.expect("send");
    app.click("#approval-panel .approval-path")
        .await
        .expect("path in the approval");
    assert_eq!(
        editors.wait_for_call(1).await.expect("call"),
        format!("zed [{file}:15]")
    );
    app.screenshot("approval-path-link")
        .await
        .expect("screenshot");
    app.click("#approval-panel [data-action=\"approve\"]")
        .await
        .expect("approve");
    app.wait_until(
        "document.querySelector('.task-panel .task-status')?.dataset.status === 'completed'",
    )
    .await
    .expect("completed");

    // The tool card of the read opens the file.
    app.click(".tool-card[data-call-id=\"r\"] .tool-open .path-link")
        .await
        .expect("open from the tool card");
    assert_eq!(
        editors.wait_for_call(2).await.expect("call"),
        format!("zed [{file}:1]")
    );
    app.screenshot("tool-card-open").await.expect("screenshot");

    // The trace: the recorded change opens at its first line, a blamed line at that line.
    app.click("nav button[data-view=\"trace\"]")
        .await
        .expect("trace");
    app.choose("#trace-intent", "INT-001")
        .await
        .expect("intent");
    app.click("#trace-changes .trace-change .path-link")
        .await
        .expect("path in the changes");
    assert_eq!(
        editors.wait_for_call(3).await.expect("call"),
        format!("zed [{file}:15]")
    );
    assert_eq!(
        app.eval("return document.querySelector('#trace-diff').children.length")
            .await
            .expect("eval"),
        json!(0),
        "opening the file does not also open the diff"
    );
    app.type_into("#blame-path", "src/greet/lines.txt")
        .await
        .expect("path");
    app.click("#blame-run").await.expect("blame");
    app.click("#blame-table .blame-line[data-line=\"15\"] .path-link")
        .await
        .expect("blamed line");
    assert_eq!(
        editors.wait_for_call(4).await.expect("call"),
        format!("zed [{file}:15]")
    );
    app.screenshot("trace-blame-links")
        .await
        .expect("screenshot");

    // The page names a path and a line, nothing else, and only inside the workspace.
    for (path, code) in [
        ("../../etc/passwd", "invalid_input"),
        ("/etc/passwd", "invalid_input"),
        ("src/greet/missing.txt", "not_found"),
        ("src/greet", "not_found"),
        ("-g", "not_found"),
    ] {
        let r = app
            .ipc(json!({"type": "open_in_editor", "path": path, "line": 1}))
            .await
            .expect("ipc");
        assert_eq!(r["err"]["code"], code, "{path}: {r}");
    }
    let r = app
        .ipc(json!({"type": "open_in_editor", "path": "src/greet/lines.txt", "line": 1, "program": "/bin/sh"}))
        .await
        .expect("ipc");
    assert_eq!(r["err"]["code"], "malformed_request", "{r}");
    let r = app
        .ipc(json!({"type": "save_settings", "settings": {"provider": "openai", "preset": "custom", "base_url": format!("{}/v1", server.base_url()), "model": "m", "custom_instructions": "", "approval": {"ask_before_writes": true, "ask_before_safe_commands": false}, "editor": "/bin/sh"}}))
        .await
        .expect("ipc");
    assert_eq!(r["err"]["code"], "invalid_input", "{r}");
    assert_eq!(editors.calls().len(), 4, "{:?}", editors.calls());
    app.close().await.expect("close");
}

#[tokio::test]
async fn open_folder_and_recent_workspaces_switch_without_a_restart() {
    let server = ScriptedServer::start(vec![Reply::Hang]).await;
    let first = workspace(Some(INTENTS), &[("src/greet/lines.txt", LINES)]);
    let second = workspace(
        Some("active_intents:\n  - id: DOCS-1\n    name: Docs\n    owned_scope: [\"docs/**\"]\n"),
        &[("docs/a.md", "# A\n")],
    );
    let first_path = first.path().canonicalize().expect("canonical");
    let second_path = second.path().canonicalize().expect("canonical");
    let dirs = UserDirs::new();
    dirs.settings_openai(&format!("{}/v1", server.base_url()), true);
    let pick = second_path.display().to_string();
    let app = App::launch(
        "workspace-switch",
        first.path(),
        &dirs,
        &[("MANDATE_TEST_PICK_FOLDER", &pick)],
    )
    .await
    .expect("launch");

    // A folder the person never opened cannot be named by the page.
    let r = app
        .ipc(json!({"type": "open_workspace", "path": second_path.display().to_string()}))
        .await
        .expect("ipc");
    assert_eq!(r["err"]["code"], "invalid_input", "{r}");

    app.click("#workspace-button").await.expect("menu");
    app.wait_until("!document.querySelector('#workspace-recent-empty').hidden")
        .await
        .expect("nothing recent yet");
    app.screenshot("workspace-menu-empty")
        .await
        .expect("screenshot");
    app.click("#workspace-open").await.expect("open folder");
    let shows = |p: &std::path::Path| {
        format!(
            "document.body.dataset.ready === 'true' && document.querySelector('#app-workspace').textContent.includes({})",
            json!(p.display().to_string())
        )
    };
    app.wait_until(&shows(&second_path))
        .await
        .expect("second workspace");
    app.click("nav button[data-view=\"intents\"]")
        .await
        .expect("intents");
    app.find(".intent-item[data-intent-id=\"DOCS-1\"]")
        .await
        .expect("its intents");

    // Back through the recent list.
    app.click("#workspace-button").await.expect("menu");
    let item = format!(
        "#workspace-recent [data-workspace={}]",
        json!(first_path.display().to_string())
    );
    app.find(&item).await.expect("first one is recent");
    app.screenshot("workspace-menu").await.expect("screenshot");
    app.click(&item).await.expect("open recent");
    app.wait_until(&shows(&first_path))
        .await
        .expect("first workspace again");
    app.click("nav button[data-view=\"intents\"]")
        .await
        .expect("intents");
    app.find(".intent-item[data-intent-id=\"INT-001\"]")
        .await
        .expect("its intents");
    let saved = std::fs::read_to_string(dirs.config().join("settings.json")).expect("settings");
    let saved: serde_json::Value = serde_json::from_str(&saved).expect("json");
    assert_eq!(
        saved["recent_workspaces"],
        json!([
            first_path.display().to_string(),
            second_path.display().to_string()
        ])
    );

    // Not while a task runs there.
    app.click("nav button[data-view=\"chat\"]")
        .await
        .expect("chat");
    app.send("this will hang").await.expect("send");
    server
        .wait_for_requests(1, std::time::Duration::from_secs(20))
        .await
        .expect("running");
    let r = app
        .ipc(json!({"type": "open_workspace", "path": second_path.display().to_string()}))
        .await
        .expect("ipc");
    assert_eq!(r["err"]["code"], "conflict", "{r}");
    app.close().await.expect("close");
}
