//! The person's own hooks in the real window: new hooks are shown on a card and run only once
//! confirmed; a hook's `ask` opens the approval card with its reason; declined hooks do not run.

use mandate_tests::app::{workspace, App, UserDirs};
use mandate_tests::cli::ledger;
use mandate_tests::llm_server::ScriptedServer;
use mandate_tests::sse::openai;
use serde_json::json;

const INTENTS: &str = r#"active_intents:
  - id: INT-001
    name: Greeting module
    status: IN_PROGRESS
    owned_scope: ["src/greet/**"]
"#;

const SETTINGS: &str = r#"{"hooks": {"PreToolUse": [{"matcher": "Write|Edit", "hooks": [
    {"type": "command", "command": "python3 .claude/hooks/review.py", "name": "reviewer", "timeout": 30}
]}], "SubagentStop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}"#;

const REVIEW: &str = r#"import json, sys
sys.path.insert(0, "scripts")
import review_rules
event = json.load(sys.stdin)
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask",
    "permissionDecisionReason": "changes under src/greet are reviewed"}}))
"#;

fn script() -> Vec<mandate_tests::llm_server::Reply> {
    vec![
        openai::turn().tool_call("s", "select_active_intent", json!({"intent_id": "INT-001"})).reply(),
        openai::turn().tool_call("w", "write_to_file", json!({"path": "src/greet/hello.rs", "content": "pub fn hello() {}\n", "intent_id": "INT-001", "mutation_class": "INTENT_EVOLUTION"})).reply(),
        openai::turn().tool_call("d", "attempt_completion", json!({"result": "done"})).reply(),
    ]
}

async fn start(name: &str, server: &ScriptedServer) -> (App, tempfile::TempDir, UserDirs) {
    let ws = workspace(
        Some(INTENTS),
        &[
            ("src/greet/mod.rs", "pub fn greet() {}\n"),
            (".claude/settings.json", SETTINGS),
            (".claude/hooks/review.py", REVIEW),
            ("scripts/review_rules.py", "REVIEWED = ['src/greet']\n"),
        ],
    );
    let dirs = UserDirs::new();
    // Mandate itself would write without asking: only the hook asks.
    dirs.settings_openai(&format!("{}/v1", server.base_url()), false);
    let app = App::launch(name, ws.path(), &dirs, &[])
        .await
        .expect("launch");
    (app, ws, dirs)
}

#[tokio::test]
async fn new_hooks_are_confirmed_on_a_card_and_a_hooks_ask_opens_an_approval() {
    let server = ScriptedServer::start(script()).await;
    let (app, ws, dirs) = start("hooks-confirm", &server).await;
    app.send("Add hello").await.expect("send");
    app.find("#approval-panel .approval[data-kind=\"user_hooks\"]")
        .await
        .expect("hooks card");
    let card = app.text("#approval-panel .approval").await.expect("text");
    for expected in [
        "Run your hooks?",
        "PreToolUse",
        "Write|Edit",
        "python3 .claude/hooks/review.py",
        "From .claude/settings.json",
        "`SubagentStop` hooks",
        "With the code they run, which no intent may change: .claude/hooks/review.py, scripts/review_rules.py",
        "Run them",
    ] {
        assert!(card.contains(expected), "{expected} missing from {card}");
    }
    app.screenshot("approval-user-hooks")
        .await
        .expect("screenshot");
    app.click("#approval-panel [data-action=\"approve\"]")
        .await
        .expect("run them");

    app.find("#approval-panel .approval[data-kind=\"write\"]")
        .await
        .expect("write card");
    let card = app.text("#approval-panel .approval").await.expect("text");
    assert!(
        card.contains("Your hooks ask for your decision")
            && card.contains("your hook `reviewer`: changes under src/greet are reviewed"),
        "{card}"
    );
    app.screenshot("approval-hook-asks")
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
    let records = ledger(ws.path());
    assert_eq!(records.len(), 1);
    let vendor = &records[0]["metadata"]["dev.mandate"];
    assert_eq!(vendor["user_hooks"], json!(["reviewer"]));
    assert_eq!(vendor["approval"]["by"], "user");
    assert!(dirs.data().join("confirmed_hooks.json").is_file());
    app.close().await.expect("close");
}

#[tokio::test]
async fn declined_hooks_do_not_run() {
    let server = ScriptedServer::start(script()).await;
    let (app, ws, _dirs) = start("hooks-decline", &server).await;
    app.send("Add hello").await.expect("send");
    app.find("#approval-panel .approval[data-kind=\"user_hooks\"]")
        .await
        .expect("hooks card");
    app.click("#approval-panel [data-action=\"reject\"]")
        .await
        .expect("don't run them");
    app.wait_until(
        "document.querySelector('.task-panel .task-status')?.dataset.status === 'completed'",
    )
    .await
    .expect("completed without asking");
    assert!(ws.path().join("src/greet/hello.rs").is_file());
    let records = ledger(ws.path());
    assert_eq!(records.len(), 1);
    assert!(records[0]["metadata"]["dev.mandate"]
        .get("user_hooks")
        .is_none());
    app.close().await.expect("close");
}
