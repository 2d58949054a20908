//! Governance flows in the real window: approving a write, rejecting one hunk, editing before
//! accepting (recorded as `mixed`), rejecting a command with a reason, answering a question,
//! managing intents (YAML on disk, external edits), blame, and verify after tampering.

use std::time::Duration;

use mandate_tests::app::{workspace, App, UserDirs};
use mandate_tests::cli::{ledger, run_openai};
use mandate_tests::llm_server::ScriptedServer;
use mandate_tests::sse::openai;
use mandate_tests::trace_schema::assert_valid;
use serde_json::{json, Value};

const INTENTS: &str = r#"active_intents:
  - id: INT-001
    name: Greeting module
    status: NOT_STARTED
    owned_scope: ["src/greet/**"]
    constraints: ["Keep the public API"]
    acceptance_criteria: ["greet() says hello"]
  - id: INT-002
    name: Build tooling
    status: IN_PROGRESS
    owned_scope: ["build/**"]
"#;

/// Twenty lines; changes to line 2 and line 15 make two hunks.
const TEN: &str =
    "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\nl11\nl12\nl13\nl14\nl15\nl16\nl17\nl18\nl19\nl20\n";
const TEN_NEW: &str = "l1\nTWO\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\nl11\nl12\nl13\nl14\nFIFTEEN\nl16\nl17\nl18\nl19\nl20\n";

fn tool_result(server: &ScriptedServer, call_id: &str) -> String {
    server
        .tool_result(call_id)
        .unwrap_or_else(|| panic!("no result for {call_id}"))
}

/// Select the intent, read the file, then propose `write`.
fn write_script(write: Value) -> Vec<mandate_tests::llm_server::Reply> {
    vec![
        openai::turn()
            .tool_call("s", "select_active_intent", json!({"intent_id": "INT-001"}))
            .reply(),
        openai::turn()
            .tool_call("r", "read_file", json!({"path": "src/greet/lines.txt"}))
            .reply(),
        openai::turn()
            .text("Here is my change.")
            .tool_call("w", "write_to_file", write)
            .reply(),
        openai::turn()
            .tool_call("d", "attempt_completion", json!({"result": "done"}))
            .reply(),
    ]
}

async fn start(name: &str, server: &ScriptedServer) -> (App, tempfile::TempDir, UserDirs) {
    let ws = workspace(
        Some(INTENTS),
        &[("src/greet/lines.txt", TEN), ("build/out.txt", "x\n")],
    );
    let dirs = UserDirs::new();
    dirs.settings_openai(&format!("{}/v1", server.base_url()), true);
    let app = App::launch(name, ws.path(), &dirs, &[])
        .await
        .expect("launch");
    (app, ws, dirs)
}

fn write_args(content: &str) -> Value {
    json!({"path": "src/greet/lines.txt", "content": content, "intent_id": "INT-001", "mutation_class": "INTENT_EVOLUTION"})
}

#[tokio::test]
async fn a_full_task_with_an_approved_write() {
    let server = ScriptedServer::start(write_script(write_args(TEN_NEW))).await;
    let (app, ws, _dirs) = start("approve-write", &server).await;
    app.send("Capitalise two and nine").await.expect("send");
    app.find("#approval-panel .approval[data-kind=\"write\"]")
        .await
        .expect("approval card");
    let card = app
        .text("#approval-panel .approval")
        .await
        .expect("card text");
    assert!(
        card.contains("src/greet/lines.txt") && card.contains("INT-001"),
        "{card}"
    );
    app.wait_until("document.querySelectorAll('#approval-panel .hunk').length === 2")
        .await
        .expect("two hunks");
    // The intent is always visible on the task.
    app.wait_until("(document.querySelector('.task-panel .task-intent')?.textContent ?? '').includes('INT-001')").await.expect("intent shown");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("src/greet/lines.txt")).expect("read"),
        TEN,
        "nothing written before the decision"
    );
    app.screenshot("approval-write").await.expect("screenshot");
    app.click("#approval-panel [data-action=\"toggle-diff-mode\"]")
        .await
        .expect("side by side");
    app.screenshot("approval-write-side-by-side")
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
    assert_eq!(
        std::fs::read_to_string(ws.path().join("src/greet/lines.txt")).expect("read"),
        TEN_NEW
    );
    let records = ledger(ws.path());
    assert_eq!(records.len(), 1);
    assert_valid(&records[0]);
    let vendor = &records[0]["metadata"]["dev.mandate"];
    assert_eq!(vendor["approval"]["by"], "user");
    assert_eq!(vendor["approval"]["accepted_hunks"], json!([0, 1]));
    assert_eq!(
        records[0]["files"][0]["conversations"][0]["contributor"]["type"],
        "ai"
    );
    app.wait_until(
        "document.querySelector('.tool-card[data-call-id=\"w\"]')?.dataset.status === 'succeeded'",
    )
    .await
    .expect("card succeeded");
    app.screenshot("chat-after-task").await.expect("screenshot");
    app.close().await.expect("close");
}

#[tokio::test]
async fn rejecting_one_hunk_writes_only_the_other() {
    let server = ScriptedServer::start(write_script(write_args(TEN_NEW))).await;
    let (app, ws, _dirs) = start("reject-hunk", &server).await;
    app.send("Capitalise two and nine").await.expect("send");
    app.wait_until("document.querySelectorAll('#approval-panel .hunk').length === 2")
        .await
        .expect("hunks");
    app.click("#approval-panel input.hunk-accept[data-hunk-index=\"1\"]")
        .await
        .expect("uncheck hunk 1");
    app.click("#approval-panel [data-action=\"approve\"]")
        .await
        .expect("approve");
    app.wait_until(
        "document.querySelector('.task-panel .task-status')?.dataset.status === 'completed'",
    )
    .await
    .expect("completed");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("src/greet/lines.txt")).expect("read"),
        TEN.replace("l2\n", "TWO\n")
    );
    let vendor = ledger(ws.path())[0]["metadata"]["dev.mandate"].clone();
    assert_eq!(vendor["approval"]["accepted_hunks"], json!([0]));
    assert_eq!(vendor["approval"]["rejected_hunks"], json!([1]));
    assert!(
        tool_result(&server, "w").contains("rejected hunks [1]"),
        "the model is told"
    );
    app.close().await.expect("close");
}

#[tokio::test]
async fn edit_before_accept_is_written_and_recorded_as_mixed() {
    let server = ScriptedServer::start(write_script(write_args(TEN_NEW))).await;
    let (app, ws, _dirs) = start("edit-accept", &server).await;
    app.send("Capitalise two and nine").await.expect("send");
    app.find("#approval-panel .approval[data-kind=\"write\"]")
        .await
        .expect("card");
    app.click("#approval-panel [data-action=\"edit\"]")
        .await
        .expect("edit");
    let edited = TEN.replace("l2\n", "Two (edited)\n");
    // Typed as a person would, then the whole text set (WebDriver drops newlines in send_keys).
    app.type_into("#approval-panel textarea[name=\"edited-content\"]", "x")
        .await
        .expect("type");
    let area = app
        .find("#approval-panel textarea[name=\"edited-content\"]")
        .await
        .expect("area");
    app.session
        .execute("arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('input', {bubbles: true}));", vec![area.to_value(), json!(edited)])
        .await
        .expect("set edited text");
    app.screenshot("approval-edit").await.expect("screenshot");
    app.click("#approval-panel [data-action=\"approve\"]")
        .await
        .expect("approve");
    app.wait_until(
        "document.querySelector('.task-panel .task-status')?.dataset.status === 'completed'",
    )
    .await
    .expect("completed");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("src/greet/lines.txt")).expect("read"),
        edited
    );
    let record = ledger(ws.path())[0].clone();
    assert_valid(&record);
    assert_eq!(
        record["files"][0]["conversations"][0]["contributor"]["type"],
        "mixed"
    );
    assert_eq!(
        record["metadata"]["dev.mandate"]["approval"]["edited"],
        true
    );
    app.close().await.expect("close");
}

#[tokio::test]
async fn a_rejected_command_returns_the_reason_to_the_model() {
    let server = ScriptedServer::start(vec![
        openai::turn().tool_call("s", "select_active_intent", json!({"intent_id": "INT-002"})).reply(),
        openai::turn().tool_call("c", "execute_command", json!({"command": "rm -rf build && git push --force"})).reply(),
        openai::turn().tool_call("q", "ask_followup_question", json!({"question": "Which directory should I clean?", "options": ["build/", "target/"]})).reply(),
        openai::turn().tool_call("d", "attempt_completion", json!({"result": "left everything in place"})).reply(),
    ])
    .await;
    let (app, ws, _dirs) = start("reject-command", &server).await;
    app.send("Clean the build").await.expect("send");
    app.find("#approval-panel .approval[data-kind=\"command\"]")
        .await
        .expect("command card");
    let card = app.text("#approval-panel .approval").await.expect("text");
    assert!(card.contains("rm -rf build && git push --force"), "{card}");
    assert!(card.to_lowercase().contains("destructive"), "{card}");
    app.screenshot("approval-command")
        .await
        .expect("screenshot");
    app.type_into(
        "#approval-panel textarea[name=\"reject-reason\"]",
        "never push from here",
    )
    .await
    .expect("reason");
    app.click("#approval-panel [data-action=\"reject\"]")
        .await
        .expect("reject");
    // The follow-up question is answered inline.
    app.find(".question[data-call-id=\"q\"]")
        .await
        .expect("question");
    app.click(".question[data-call-id=\"q\"] .question-option")
        .await
        .expect("option");
    app.wait_until(
        "document.querySelector('.task-panel .task-status')?.dataset.status === 'completed'",
    )
    .await
    .expect("completed");
    let rejected: Value = serde_json::from_str(&tool_result(&server, "c")).expect("json");
    assert_eq!(rejected["error"]["code"], "REJECTED_BY_USER");
    assert!(rejected["error"]["message"]
        .as_str()
        .unwrap_or("")
        .contains("never push from here"));
    assert!(tool_result(&server, "q").contains("build/"));
    assert!(
        ws.path().join("build/out.txt").exists(),
        "the command did not run"
    );
    app.close().await.expect("close");
}

#[tokio::test]
async fn intents_are_created_and_edited_from_the_gui_and_external_edits_show_up() {
    let server = ScriptedServer::start(vec![]).await;
    let (app, ws, _dirs) = start("intents", &server).await;
    let yaml = ws.path().join(".orchestration/active_intents.yaml");
    app.click("nav button[data-view=\"intents\"]")
        .await
        .expect("intents view");
    app.click("#intent-new").await.expect("new");
    app.type_into("#intent-id", "INT-010").await.expect("id");
    app.type_into("#intent-name", "Parser rewrite")
        .await
        .expect("name");
    app.click("#intent-scope [data-action=\"add\"]")
        .await
        .expect("add scope");
    app.type_into("#intent-scope li:last-child input", "src/**")
        .await
        .expect("glob");
    app.wait_until("(document.querySelector('#intent-scope li:last-child .scope-preview')?.textContent ?? '').includes('src/greet/lines.txt')").await.expect("live preview");
    app.click("#intent-constraints [data-action=\"add\"]")
        .await
        .expect("add constraint");
    app.type_into("#intent-constraints li:last-child input", "No unsafe code")
        .await
        .expect("constraint");
    app.click("#intent-criteria [data-action=\"add\"]")
        .await
        .expect("add criterion");
    app.type_into(
        "#intent-criteria li:last-child input",
        "Round-trips every fixture",
    )
    .await
    .expect("criterion");
    app.screenshot("intents-editor").await.expect("screenshot");
    app.click("#intent-save").await.expect("save");
    app.find(".intent-item[data-intent-id=\"INT-010\"]")
        .await
        .expect("listed");
    let text = std::fs::read_to_string(&yaml).expect("yaml");
    assert!(
        text.contains("id: INT-010")
            && text.contains("Parser rewrite")
            && text.contains("src/**")
            && text.contains("No unsafe code"),
        "{text}"
    );
    assert!(text.contains("id: INT-001"), "the others are kept");

    // A bad glob is refused inline and nothing is written.
    app.type_into("#intent-scope li:last-child input", "src/[")
        .await
        .expect("bad glob");
    app.click("#intent-save").await.expect("save");
    app.wait_until("(document.querySelector('#intent-error')?.textContent ?? '').includes('glob')")
        .await
        .expect("inline error");
    assert_eq!(std::fs::read_to_string(&yaml).expect("yaml"), text);

    // An edit made to the file outside the app shows up without a restart.
    std::fs::write(
        &yaml,
        text.replace("Greeting module", "Greeting module (edited on disk)"),
    )
    .expect("external edit");
    app.wait_until("[...document.querySelectorAll('.intent-item')].some(i => i.textContent.includes('edited on disk'))").await.expect("external edit shown");
    app.screenshot("intents").await.expect("screenshot");
    app.close().await.expect("close");
}

#[tokio::test]
async fn blame_and_verify_after_tampering_in_the_trace_explorer() {
    // A governed write made headless, explored in the window.
    let ws = workspace(Some(INTENTS), &[("src/greet/lines.txt", TEN)]);
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(write_script(write_args(TEN_NEW))).await;
    let out = run_openai(
        ws.path(),
        &server.base_url(),
        &["--approve", "allow"],
        "capitalise",
        &dirs,
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    dirs.settings_openai(&format!("{}/v1", server.base_url()), true);
    let app = App::launch("trace", ws.path(), &dirs, &[])
        .await
        .expect("launch");
    app.click("nav button[data-view=\"trace\"]")
        .await
        .expect("trace view");

    app.choose("#trace-intent", "INT-001")
        .await
        .expect("choose");
    app.find("#trace-changes .trace-change")
        .await
        .expect("change row");
    // The row opens the diff (its path opens the file in the editor).
    app.click("#trace-changes .trace-change td:nth-child(2)")
        .await
        .expect("open diff");
    app.wait_until("(document.querySelector('#trace-diff')?.textContent ?? '').includes('TWO')")
        .await
        .expect("diff shown");
    app.screenshot("trace-changes").await.expect("screenshot");

    app.type_into("#blame-path", "src/greet/lines.txt")
        .await
        .expect("path");
    app.click("#blame-run").await.expect("blame");
    app.wait_until("(document.querySelector('#blame-table .blame-line[data-line=\"2\"]')?.textContent ?? '').includes('INT-001')").await.expect("line 2 by INT-001");
    let line1 = app
        .text("#blame-table .blame-line[data-line=\"1\"]")
        .await
        .expect("line 1");
    assert!(!line1.contains("INT-001"), "{line1}");
    app.screenshot("trace-blame").await.expect("screenshot");

    app.click("#verify-run").await.expect("verify");
    app.wait_until("document.querySelector('#verify-report')?.dataset.chainOk === 'true'")
        .await
        .expect("intact");
    let ledger_path = ws.path().join(".orchestration/agent_trace.jsonl");
    let text = std::fs::read_to_string(&ledger_path).expect("read");
    std::fs::write(
        &ledger_path,
        text.replace("\"by\":\"headless\"", "\"by\":\"user\""),
    )
    .expect("tamper");
    app.click("#verify-run").await.expect("verify again");
    app.wait_until("document.querySelector('#verify-report')?.dataset.chainOk === 'false'")
        .await
        .expect("tampering found");
    app.find("#verify-report .finding[data-kind=\"tampered\"]")
        .await
        .expect("finding");
    app.eval("document.querySelector('#verify-report').scrollIntoView(); return null")
        .await
        .expect("scroll");
    app.screenshot("trace-verify").await.expect("screenshot");
    let _ = tokio::time::timeout(Duration::from_secs(5), app.close()).await;
}

#[tokio::test]
async fn always_allow_and_keyboard_approval() {
    let server = ScriptedServer::start(vec![
        openai::turn().tool_call("s", "select_active_intent", json!({"intent_id": "INT-002"})).reply(),
        openai::turn().tool_call("c1", "execute_command", json!({"command": "rm -f build/out.txt"})).reply(),
        openai::turn().tool_call("c2", "execute_command", json!({"command": "rm -f build/out.txt"})).reply(),
        openai::turn().tool_call("w", "write_to_file", json!({"path": "build/new.txt", "content": "x\n", "intent_id": "INT-002", "mutation_class": "INTENT_EVOLUTION"})).reply(),
        openai::turn().tool_call("d", "attempt_completion", json!({"result": "cleaned"})).reply(),
    ])
    .await;
    let (app, ws, _dirs) = start("always-allow", &server).await;
    app.send("Clean up").await.expect("send");
    app.find("#approval-panel .approval[data-kind=\"command\"]")
        .await
        .expect("command card");
    app.click("#approval-panel [data-action=\"always-allow\"]")
        .await
        .expect("always allow");
    // The same command again runs without asking; the write asks, and Alt+A approves it.
    app.find("#approval-panel .approval[data-kind=\"write\"]")
        .await
        .expect("write card");
    let body = app.find("body").await.expect("body");
    app.session
        .send_keys(&body, "\u{E00A}a")
        .await
        .expect("alt+a");
    app.wait_until(
        "document.querySelector('.task-panel .task-status')?.dataset.status === 'completed'",
    )
    .await
    .expect("completed");
    assert!(
        tool_result(&server, "c2").contains("exited with code 0"),
        "{}",
        tool_result(&server, "c2")
    );
    assert!(!ws.path().join("build/out.txt").exists());
    assert_eq!(
        std::fs::read_to_string(ws.path().join("build/new.txt")).expect("written"),
        "x\n"
    );
    let asked = std::fs::read_to_string(&app.ipc_trace)
        .expect("trace")
        .lines()
        .filter(|l| l.contains("\"type\":\"approval_requested\""))
        .count();
    assert_eq!(asked, 2, "the second identical command did not ask");
    app.close().await.expect("close");
}

#[tokio::test]
async fn a_journal_entry_planted_in_the_workspace_is_ignored_and_said_in_the_window() {
    // What a branch could carry: an entry where the journal once lay, asking recovery to
    // record a change no one approved.
    let planted = json!({"format": 1, "path": "src/greet/mod.rs", "before": null,
        "after": null, "temp": ".mod.rs.tmp", "record": {"id": "planted"}});
    let ws = workspace(
        Some(INTENTS),
        &[
            ("src/greet/mod.rs", "pub fn greet() {}\n"),
            (
                ".orchestration/.journal/0190c0de-0000-7000-8000-000000000000.json",
                &planted.to_string(),
            ),
        ],
    );
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(Vec::new()).await;
    dirs.settings_openai(&format!("{}/v1", server.base_url()), false);
    let app = App::launch("journal-planted", ws.path(), &dirs, &[])
        .await
        .expect("launch");
    app.wait_until(
        "[...document.querySelectorAll('#notices .notice')].some(n => n.textContent.includes('lay in the workspace'))",
    )
    .await
    .expect("the person is told");
    let said = app.text("#notices").await.expect("notices");
    assert!(
        said.contains(".orchestration/.journal/0190c0de-0000-7000-8000-000000000000.json")
            && said.contains("removed unread and nothing was recorded"),
        "{said}"
    );
    app.screenshot("notice-planted-journal")
        .await
        .expect("screenshot");
    assert!(!ws.path().join(".orchestration/.journal").exists());
    assert!(ledger(ws.path()).is_empty());
    app.close().await.expect("close");
}
