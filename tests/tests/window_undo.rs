//! Undo in the real window: a tool call (one hunk chosen of two), a person's edit on the same
//! lines (a conflict, shown and not applied), a turn (the conversation rewinds and the message
//! comes back to the composer), a task, and an intent's changes since a time from the Trace view.
//! Each shows its preview in the side panel first.

use mandate_tests::app::{workspace, App, UserDirs};
use mandate_tests::cli::ledger;
use mandate_tests::llm_server::ScriptedServer;
use mandate_tests::sse::openai;
use serde_json::json;

const INTENTS: &str = r#"active_intents:
  - id: INT-001
    name: Greeting module
    status: IN_PROGRESS
    owned_scope: ["src/**"]
"#;

/// Twenty lines; the agent changes line 2 and line 15 (two hunks).
const BEFORE: &str =
    "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\nl11\nl12\nl13\nl14\nl15\nl16\nl17\nl18\nl19\nl20\n";
const AFTER: &str = "l1\nTWO\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\nl11\nl12\nl13\nl14\nFIFTEEN\nl16\nl17\nl18\nl19\nl20\n";
const FILE: &str = "src/lines.txt";

fn script() -> Vec<mandate_tests::llm_server::Reply> {
    vec![
        openai::turn()
            .tool_call("s", "select_active_intent", json!({"intent_id": "INT-001"}))
            .reply(),
        openai::turn()
            .tool_call("r", "read_file", json!({"path": FILE}))
            .reply(),
        openai::turn()
            .tool_call("w", "write_to_file", json!({"path": FILE, "content": AFTER, "intent_id": "INT-001", "mutation_class": "INTENT_EVOLUTION"}))
            .reply(),
        openai::turn()
            .tool_call("d", "attempt_completion", json!({"result": "done"}))
            .reply(),
    ]
}

/// Opens the app, runs the scripted task (writes are not asked about) and waits for its end.
/// The directories and the server are returned so they live as long as the app.
async fn after_a_write(name: &str) -> (App, tempfile::TempDir, (ScriptedServer, UserDirs)) {
    let server = ScriptedServer::start(script()).await;
    let ws = workspace(Some(INTENTS), &[(FILE, BEFORE)]);
    let dirs = UserDirs::new();
    dirs.settings_openai(&format!("{}/v1", server.base_url()), false);
    let app = App::launch(name, ws.path(), &dirs, &[])
        .await
        .expect("launch");
    app.send("Capitalise two and fifteen").await.expect("send");
    app.wait_until(
        "document.querySelector('.task-panel:not([hidden]) .task-status')?.dataset.status === 'completed'",
    )
    .await
    .expect("completed");
    assert_eq!(read(&ws), AFTER);
    (app, ws, (server, dirs))
}

fn read(ws: &tempfile::TempDir) -> String {
    std::fs::read_to_string(ws.path().join(FILE)).expect("read")
}

/// The preview is in the side panel, and every control in it has a name.
async fn preview_shown(app: &App) {
    app.wait_until("!!document.querySelector('#undo-area .undo-preview[data-preview-id]')")
        .await
        .expect("preview");
    assert_eq!(
        app.unnamed_controls("#undo-area").await.expect("a11y"),
        json!([]),
        "controls without a name in the preview"
    );
}

#[tokio::test]
async fn undoing_a_call_previews_each_hunk_and_applies_the_chosen_ones() {
    let (app, ws, _keep) = after_a_write("undo-call").await;
    let undo = ".tool-card[data-call-id=\"w\"] [data-action=\"undo-call\"]";
    app.wait_until(&format!("!document.querySelector('{undo}').hidden"))
        .await
        .expect("undo offered on the write");
    // The read changed nothing: no undo there; its path opens in the editor.
    app.wait_until("document.querySelector('.tool-card[data-call-id=\"r\"] [data-action=\"undo-call\"]').hidden && !!document.querySelector('.tool-card[data-call-id=\"r\"] .tool-open .path-link')").await.expect("read card");
    app.click(undo).await.expect("undo");
    preview_shown(&app).await;
    app.wait_until("document.querySelectorAll('#undo-area .undo-file[data-action=\"restore\"] .hunk').length === 2")
        .await
        .expect("two hunks to restore");
    app.screenshot("undo-preview").await.expect("screenshot");
    // Keep the agent's second change: only line 2 goes back.
    app.click("#undo-area input.hunk-accept[data-hunk-index=\"1\"]")
        .await
        .expect("leave out hunk 1");
    app.click("#undo-area [data-action=\"apply-undo\"]")
        .await
        .expect("apply");
    app.find("#undo-area .undo-outcome[data-outcome=\"undone\"]")
        .await
        .expect("outcome shown");
    assert_eq!(read(&ws), AFTER.replace("TWO\n", "l2\n"));
    let records = ledger(ws.path());
    assert_eq!(records.len(), 2, "the undo is appended, never rewritten");
    assert_eq!(
        records[1]["metadata"]["dev.mandate"]["revert_of"][0],
        records[0]["id"]
    );
    app.screenshot("undo-applied").await.expect("screenshot");
    app.close().await.expect("close");
}

#[tokio::test]
async fn a_persons_edit_on_the_same_lines_is_shown_as_a_conflict_and_kept() {
    let (app, ws, _keep) = after_a_write("undo-conflict").await;
    // A person rewrites the line the agent wrote, after the agent's write and before the undo.
    let edited = AFTER.replace("TWO\n", "Two, as I want it\n");
    std::fs::write(ws.path().join(FILE), &edited).expect("person's edit");
    app.click(".tool-card[data-call-id=\"w\"] [data-action=\"undo-call\"]")
        .await
        .expect("undo");
    preview_shown(&app).await;
    app.find("#undo-area .undo-file[data-action=\"conflict\"] .undo-reason")
        .await
        .expect("conflict with its reason");
    let text = app.text("#undo-area .undo-preview").await.expect("text");
    assert!(text.contains(FILE) && text.contains("Conflict"), "{text}");
    app.wait_until("document.querySelector('#undo-area [data-action=\"apply-undo\"]').disabled && !document.querySelector('#undo-area input.undo-file-accept')")
        .await
        .expect("a conflict cannot be applied");
    app.screenshot("undo-conflict").await.expect("screenshot");
    app.click("#undo-area [data-action=\"close-undo\"]")
        .await
        .expect("cancel");
    app.wait_until("document.querySelector('#undo-area').children.length === 0")
        .await
        .expect("closed");
    assert_eq!(read(&ws), edited, "the person's edit is kept");
    assert_eq!(ledger(ws.path()).len(), 1, "nothing recorded");
    app.close().await.expect("close");
}

#[tokio::test]
async fn undo_from_a_message_rewinds_the_conversation_to_edit_and_resend() {
    let (app, ws, _keep) = after_a_write("undo-turn").await;
    app.click(".task-panel:not([hidden]) .message[data-role=\"user\"] [data-action=\"undo-turn\"]")
        .await
        .expect("undo from here");
    preview_shown(&app).await;
    app.find("#undo-area .undo-rewind")
        .await
        .expect("says the conversation rewinds");
    app.screenshot("undo-turn").await.expect("screenshot");
    app.click("#undo-area [data-action=\"apply-undo\"]")
        .await
        .expect("apply");
    app.wait_until(
        "document.querySelector('#composer-input').value === 'Capitalise two and fifteen'",
    )
    .await
    .expect("the message is back in the composer");
    app.wait_until(
        "document.querySelectorAll('.task-panel:not([hidden]) .message[data-role=\"user\"]').length === 0 && !document.querySelector('.task-panel:not([hidden]) .tool-card')",
    )
    .await
    .expect("the conversation went back");
    assert_eq!(read(&ws), BEFORE);
    app.close().await.expect("close");
}

#[tokio::test]
async fn undoing_a_task_from_its_header() {
    let (app, ws, _keep) = after_a_write("undo-task").await;
    app.click(".task-panel:not([hidden]) [data-action=\"undo-task\"]")
        .await
        .expect("undo task");
    preview_shown(&app).await;
    app.screenshot("undo-task").await.expect("screenshot");
    app.click("#undo-area [data-action=\"apply-undo\"]")
        .await
        .expect("apply");
    app.find("#undo-area .undo-outcome[data-outcome=\"undone\"]")
        .await
        .expect("undone");
    assert_eq!(read(&ws), BEFORE);
    app.close().await.expect("close");
}

/// Sets the Trace view's "since" field to now plus `minutes`, in the page's local time.
async fn since(app: &App, minutes: i64) {
    app.session
        .execute(
            "const pad = (n) => String(n).padStart(2, '0');\
             const d = new Date(Date.now() + arguments[0] * 60000);\
             document.querySelector('#trace-undo-since').value = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;",
            vec![json!(minutes)],
        )
        .await
        .expect("set the time");
}

#[tokio::test]
async fn undoing_an_intents_changes_since_a_time_from_the_trace_view() {
    let (app, ws, _keep) = after_a_write("undo-intent").await;
    app.click("nav button[data-view=\"trace\"]")
        .await
        .expect("trace view");
    app.choose("#trace-intent", "INT-001")
        .await
        .expect("intent");
    app.find("#trace-changes .trace-change")
        .await
        .expect("the change is listed");
    // Nothing changed in the next hour: said so, nothing offered.
    since(&app, 60).await;
    app.click("#trace-undo").await.expect("undo");
    app.wait_until(
        "(document.querySelector('#undo-area .inline-error')?.textContent ?? '') !== ''",
    )
    .await
    .expect("nothing to undo since then");
    assert!(app
        .eval("return document.querySelector('nav button[data-view=\"chat\"]').getAttribute('aria-current')")
        .await
        .expect("eval")
        == json!("page"));
    app.click("nav button[data-view=\"trace\"]")
        .await
        .expect("trace view");
    since(&app, -30).await;
    app.click("#trace-undo").await.expect("undo");
    preview_shown(&app).await;
    let title = app.text("#undo-area .approval-title").await.expect("title");
    assert!(title.contains("INT-001"), "{title}");
    app.screenshot("undo-intent").await.expect("screenshot");
    app.click("#undo-area [data-action=\"apply-undo\"]")
        .await
        .expect("apply");
    app.find("#undo-area .undo-outcome[data-outcome=\"undone\"]")
        .await
        .expect("undone");
    assert_eq!(read(&ws), BEFORE);
    app.close().await.expect("close");
}
