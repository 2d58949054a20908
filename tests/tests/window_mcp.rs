//! MCP in the real window: the approval card of a mutating MCP call (server, tool, the server's
//! description and claims, the arguments), approved by a person, then recorded.

use mandate_tests::app::{workspace, App, UserDirs};
use mandate_tests::cli::ledger;
use mandate_tests::llm_server::ScriptedServer;
use mandate_tests::mcp::{consent, stdio_entry, write_project_file, write_user_file};
use mandate_tests::sse::openai;
use mandate_tests::trace_schema::assert_valid;
use serde_json::json;

const INTENTS: &str = r#"active_intents:
  - id: INT-001
    name: Release notes
    status: IN_PROGRESS
    owned_scope: ["docs/**"]
"#;

#[tokio::test]
async fn a_person_approves_an_mcp_call_on_its_card() {
    let outside = tempfile::tempdir().expect("tempdir");
    let marker = outside.path().join("from-the-window.txt");
    let ws = workspace(Some(INTENTS), &[]);
    write_project_file(ws.path(), json!({"srv": stdio_entry(&[], json!({}))}));
    let dirs = UserDirs::new();
    let (key, decisions) = consent(ws.path(), "srv");
    write_user_file(&dirs.config(), json!({"projects": {key: decisions}}));
    let server = ScriptedServer::start(vec![
        openai::turn()
            .tool_call("s", "select_active_intent", json!({"intent_id": "INT-001"}))
            .reply(),
        openai::turn()
            .text("I will write the marker.")
            .tool_call(
                "w",
                "mcp__srv__write_marker",
                json!({"path": marker.display().to_string(), "text": "approved in the window"}),
            )
            .reply(),
        openai::turn()
            .tool_call("d", "attempt_completion", json!({"result": "done"}))
            .reply(),
    ])
    .await;
    dirs.settings_openai(&format!("{}/v1", server.base_url()), true);
    let app = App::launch("mcp-approval", ws.path(), &dirs, &[])
        .await
        .expect("launch");
    app.send("Write the marker").await.expect("send");
    app.find("#approval-panel .approval[data-kind=\"mcp_call\"]")
        .await
        .expect("an MCP approval card");
    let card = app.text("#approval-panel .approval").await.expect("card");
    for expected in [
        "Call an MCP tool",
        "srv",
        "write_marker",
        "Writes TEXT to the file PATH.",
        "approved in the window",
        "INT-001",
        "cannot show, check or undo",
    ] {
        assert!(card.contains(expected), "{expected} missing from {card}");
    }
    assert!(!marker.exists(), "nothing ran before the decision");
    app.screenshot("approval-mcp-call")
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
        std::fs::read_to_string(&marker).expect("marker"),
        "approved in the window"
    );
    let records = ledger(ws.path());
    assert_eq!(records.len(), 1);
    assert_valid(&records[0]);
    assert_eq!(
        records[0]["metadata"]["dev.mandate"]["approval"]["by"],
        "user"
    );
    app.close().await.expect("close");
}
