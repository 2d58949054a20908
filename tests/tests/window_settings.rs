//! Settings and the window's warnings, in the real window: which confinement commands run under,
//! "Copy diagnostics" (to the clipboard, never the key), a task budget that pauses a task until it
//! is raised, an intent's own budget saved in the intents file, and a banner in every view when
//! the intents file does not load or the ledger's chain is broken.

use mandate_tests::app::{until, workspace, App, UserDirs};
use mandate_tests::cli::run_openai;
use mandate_tests::llm_server::ScriptedServer;
use mandate_tests::sse::openai;
use serde_json::{json, Value};

const INTENTS: &str = r#"active_intents:
  - id: INT-001
    name: Greeting module
    status: IN_PROGRESS
    owned_scope: ["src/**"]
"#;

/// A key that must never show up in what the window shows or copies.
const SECRET: &str = "sk-test-diagnostics-3f9a1c7e5b2d4a6f8e0c";

async fn launch(
    name: &str,
    server: &ScriptedServer,
    env: &[(&str, &str)],
) -> (App, tempfile::TempDir, UserDirs) {
    let ws = workspace(Some(INTENTS), &[("src/a.txt", "a\n")]);
    let dirs = UserDirs::new();
    dirs.settings_openai(&format!("{}/v1", server.base_url()), true);
    let app = App::launch(name, ws.path(), &dirs, env)
        .await
        .expect("launch");
    (app, ws, dirs)
}

/// What the X clipboard holds, read as another program would.
async fn clipboard(display: &str) -> Option<String> {
    let out = tokio::process::Command::new("xclip")
        .args(["-o", "-selection", "clipboard", "-display", display])
        .output()
        .await
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

#[tokio::test]
async fn settings_show_the_confinement_and_copy_diagnostics_without_the_key() {
    let server = ScriptedServer::start(vec![]).await;
    let (app, _ws, _dirs) = launch(
        "settings-diagnostics",
        &server,
        &[("MANDATE_API_KEY", SECRET)],
    )
    .await;
    app.click("nav button[data-view=\"settings\"]")
        .await
        .expect("settings");
    let state = app.ipc(json!({"type": "get_state"})).await.expect("state");
    let confinement = &state["ok"]["state"]["settings"]["confinement"];
    let summary = app.text("#confinement-summary").await.expect("summary");
    if confinement["confined"] == json!(true) {
        let said = confinement["summary"].as_str().unwrap_or("?");
        assert!(summary.contains(said), "{summary}");
        app.wait_until("document.querySelector('#confinement-warning').hidden")
            .await
            .expect("no warning when confined");
    } else {
        app.wait_until("!document.querySelector('#confinement-warning').hidden")
            .await
            .expect("a visible warning when not confined");
    }
    let gaps = confinement["gaps"].as_array().cloned().unwrap_or_default();
    if let Some(Value::String(gap)) = gaps.first() {
        let listed = app.text("#confinement-gaps").await.expect("gaps");
        assert!(listed.contains(gap.as_str()), "{listed}");
    }
    app.eval("document.querySelector('#confinement-heading').closest('section').scrollIntoView(); return null")
        .await
        .expect("scroll");
    assert_eq!(
        app.eval("return document.scrollingElement.scrollTop")
            .await
            .expect("eval"),
        json!(0),
        "the page never scrolls under its header"
    );
    app.screenshot("settings-confinement")
        .await
        .expect("screenshot");

    app.click("#diagnostics-copy").await.expect("copy");
    app.wait_until("!!document.querySelector('#diagnostics-status').dataset.copied")
        .await
        .expect("copied (or said why not)");
    let text = app
        .eval("return document.querySelector('#diagnostics-text').value")
        .await
        .expect("text");
    let text = text.as_str().unwrap_or("").to_string();
    for part in [
        "Mandate diagnostics",
        "version: ",
        "system: ",
        "confinement: ",
        "provider: openai",
        "model: test-model",
        "API key: set (source: env:MANDATE_API_KEY)",
        "lines of the log",
    ] {
        assert!(text.contains(part), "{part:?} missing from:\n{text}");
    }
    assert!(!text.contains(SECRET), "the key leaked:\n{text}");
    // The clipboard holds the same text, put there by the page.
    assert_eq!(
        app.eval("return document.querySelector('#diagnostics-status').dataset.copied")
            .await
            .expect("copied"),
        json!("true"),
        "the webview's clipboard was reachable"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let held = clipboard(app.display_name()).await;
        if held.as_deref() == Some(text.as_str()) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the clipboard holds {held:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    app.eval("document.querySelector('#diagnostics-heading').closest('section').scrollIntoView(); return null")
        .await
        .expect("scroll");
    app.screenshot("settings-diagnostics")
        .await
        .expect("screenshot");
    app.close().await.expect("close");
}

#[tokio::test]
async fn a_task_pauses_at_its_token_budget_and_goes_on_after_it_is_raised() {
    let server = ScriptedServer::start(vec![
        openai::turn()
            .tool_call("s", "select_active_intent", json!({"intent_id": "INT-001"}))
            .usage(100, 20)
            .reply(),
        openai::turn()
            .tool_call("d", "attempt_completion", json!({"result": "done"}))
            .usage(10, 5)
            .reply(),
    ])
    .await;
    let (app, _ws, dirs) = launch("budget-pause", &server, &[]).await;
    app.click("nav button[data-view=\"settings\"]")
        .await
        .expect("settings");
    app.type_into("#settings-max-tokens", "50")
        .await
        .expect("cap");
    app.click("#settings-save").await.expect("save");
    app.wait_until("(document.querySelector('#settings-saved')?.textContent ?? '') === 'Saved.'")
        .await
        .expect("saved");
    let saved: Value = serde_json::from_str(
        &std::fs::read_to_string(dirs.config().join("settings.json")).expect("settings"),
    )
    .expect("json");
    assert_eq!(saved["budget"]["max_tokens"], 50);

    app.click("nav button[data-view=\"chat\"]")
        .await
        .expect("chat");
    app.send("Say hello").await.expect("send");
    app.wait_until(
        "document.querySelector('.task-panel:not([hidden]) .task-status')?.dataset.status === 'paused'",
    )
    .await
    .expect("paused at the budget");
    let why = app
        .text(".task-panel:not([hidden]) .task-last-error")
        .await
        .expect("why");
    assert!(
        why.contains("budget") && why.contains("120 tokens"),
        "{why}"
    );
    assert_eq!(server.requests().len(), 1, "no request past the cap");
    app.screenshot("task-paused").await.expect("screenshot");

    // The way to raise it is one click away; then Retry goes on.
    app.click(".task-panel:not([hidden]) [data-action=\"budget\"]")
        .await
        .expect("budget settings");
    app.wait_until("document.activeElement?.id === 'settings-max-cost'")
        .await
        .expect("settings, at the budget");
    app.type_into("#settings-max-tokens", "100000")
        .await
        .expect("raise");
    app.click("#settings-save").await.expect("save");
    app.wait_until("(document.querySelector('#settings-saved')?.textContent ?? '') === 'Saved.'")
        .await
        .expect("saved");
    app.click("nav button[data-view=\"chat\"]")
        .await
        .expect("chat");
    app.click(".task-panel:not([hidden]) [data-action=\"retry\"]")
        .await
        .expect("retry");
    app.wait_until(
        "document.querySelector('.task-panel:not([hidden]) .task-status')?.dataset.status === 'completed'",
    )
    .await
    .expect("completed after the raise");
    app.close().await.expect("close");
}

#[tokio::test]
async fn an_intents_budget_is_edited_saved_and_cleared() {
    let server = ScriptedServer::start(vec![]).await;
    let (app, ws, _dirs) = launch("intent-budget", &server, &[]).await;
    let yaml = ws.path().join(".orchestration/active_intents.yaml");
    app.click("nav button[data-view=\"intents\"]")
        .await
        .expect("intents");
    app.click(".intent-item[data-intent-id=\"INT-001\"] .intent-open")
        .await
        .expect("open");
    app.type_into("#intent-max-cost", "2.5")
        .await
        .expect("cost");
    app.type_into("#intent-max-tokens", "10000")
        .await
        .expect("tokens");
    app.screenshot("intent-budget").await.expect("screenshot");
    app.click("#intent-save").await.expect("save");
    let text = mandate_tests::app::until_file_contains(&yaml, "max_tokens: 10000")
        .await
        .expect("saved");
    assert!(
        text.contains("budget:") && text.contains("max_cost_usd: 2.5"),
        "{text}"
    );
    // A cap that is not a number is refused inline.
    app.type_into("#intent-max-tokens", "-3")
        .await
        .expect("bad");
    app.click("#intent-save").await.expect("save");
    app.wait_until(
        "(document.querySelector('#intent-error')?.textContent ?? '').includes('token cap')",
    )
    .await
    .expect("refused");
    // Empty fields remove the budget.
    for field in ["#intent-max-cost", "#intent-max-tokens"] {
        let el = app.find(field).await.expect("field");
        app.session.clear(&el).await.expect("clear");
    }
    app.click("#intent-save").await.expect("save");
    until("the budget to be removed", || {
        std::fs::read_to_string(&yaml).is_ok_and(|t| !t.contains("budget"))
    })
    .await
    .expect("removed");
    app.close().await.expect("close");
}

#[tokio::test]
async fn a_broken_intents_file_and_a_tampered_ledger_are_said_in_every_view() {
    // A governed write made headless, so the ledger has a record to tamper with.
    let ws = workspace(Some(INTENTS), &[("src/a.txt", "a\n")]);
    let dirs = UserDirs::new();
    let server = ScriptedServer::start(vec![
        openai::turn().tool_call("s", "select_active_intent", json!({"intent_id": "INT-001"})).reply(),
        openai::turn().tool_call("r", "read_file", json!({"path": "src/a.txt"})).reply(),
        openai::turn().tool_call("w", "write_to_file", json!({"path": "src/a.txt", "content": "b\n", "intent_id": "INT-001", "mutation_class": "INTENT_EVOLUTION"})).reply(),
        openai::turn().tool_call("d", "attempt_completion", json!({"result": "done"})).reply(),
    ])
    .await;
    let out = run_openai(
        ws.path(),
        &server.base_url(),
        &["--approve", "allow"],
        "write",
        &dirs,
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let ledger = ws.path().join(".orchestration/agent_trace.jsonl");
    let record = std::fs::read_to_string(&ledger).expect("ledger");
    std::fs::write(
        &ledger,
        record.replace("\"by\":\"headless\"", "\"by\":\"user\""),
    )
    .expect("tamper");
    let intents = ws.path().join(".orchestration/active_intents.yaml");
    std::fs::write(
        &intents,
        "active_intents:\n  - id: INT-001\n    name: [unclosed\n    owned_scope: [\"src/**\"]\n",
    )
    .expect("break the intents file");

    dirs.settings_openai(&format!("{}/v1", server.base_url()), true);
    let app = App::launch("banner-broken", ws.path(), &dirs, &[])
        .await
        .expect("launch");
    for view in ["chat", "intents", "trace", "settings"] {
        app.click(&format!("nav button[data-view=\"{view}\"]"))
            .await
            .expect("view");
        app.wait_until("!document.querySelector('#health-intents').hidden && !document.querySelector('#health-ledger').hidden")
            .await
            .unwrap_or_else(|e| panic!("{view}: both banners: {e}"));
    }
    let said = app.text("#health-intents").await.expect("text");
    assert!(
        said.contains(".orchestration/active_intents.yaml") && said.contains("line 3"),
        "{said}"
    );
    let said = app.text("#health-ledger").await.expect("text");
    assert!(
        said.contains(".orchestration/agent_trace.jsonl") && said.contains("line 1"),
        "{said}"
    );
    app.click("nav button[data-view=\"chat\"]")
        .await
        .expect("chat");
    app.screenshot("banner-broken").await.expect("screenshot");
    assert_eq!(
        app.unnamed_controls("#health-intents, #health-ledger")
            .await
            .expect("a11y"),
        json!([])
    );

    // The ledger's banner leads to its check, finding by finding.
    app.click("#health-ledger-open").await.expect("check");
    app.find("#verify-report .finding[data-kind=\"tampered\"]")
        .await
        .expect("the check shows where");
    // A fixed intents file takes its banner away, without a restart.
    std::fs::write(&intents, INTENTS).expect("fix");
    app.wait_until("document.querySelector('#health-intents').hidden")
        .await
        .expect("banner gone once fixed");
    // So does a ledger put back as it was: it is checked again when it changes.
    std::fs::write(&ledger, &record).expect("restore the ledger");
    app.wait_until("document.querySelector('#health-ledger').hidden")
        .await
        .expect("ledger banner gone once the chain holds");
    app.close().await.expect("close");
}
