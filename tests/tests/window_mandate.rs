//! Asking the person for a wider mandate, in the real window: a wider scope for an intent (the
//! person edits the globs, then approves; the intents file and view follow), a new intent
//! (approved with an edited scope), a refused request (nothing changes, the model hears why), and
//! a command's network grant (ticked: the command reaches a listener; unticked: it does not).

use std::sync::{Arc, Mutex};

use mandate_tests::app::{until, workspace, App, UserDirs};
use mandate_tests::llm_server::ScriptedServer;
use mandate_tests::sse::openai;
use serde_json::{json, Value};

const INTENTS: &str = r#"active_intents:
  - id: INT-001
    name: Greeting module
    status: IN_PROGRESS
    owned_scope: ["src/greet/**"]
  - id: INT-002
    name: Build tooling
    status: IN_PROGRESS
    owned_scope: ["build/**"]
"#;

const FILES: &[(&str, &str)] = &[
    ("src/greet/lines.txt", "hello\n"),
    ("docs/guide.md", "# Guide\n"),
    ("docs/api.md", "# API\n"),
    ("build/out.txt", "x\n"),
];

async fn launch(name: &str, server: &ScriptedServer) -> (App, tempfile::TempDir, UserDirs) {
    let ws = workspace(Some(INTENTS), FILES);
    let dirs = UserDirs::new();
    dirs.settings_openai(&format!("{}/v1", server.base_url()), true);
    let app = App::launch(name, ws.path(), &dirs, &[])
        .await
        .expect("launch");
    (app, ws, dirs)
}

fn intents_file(ws: &tempfile::TempDir) -> String {
    std::fs::read_to_string(ws.path().join(".orchestration/active_intents.yaml")).expect("yaml")
}

/// Replaces the text of the first card's glob editor, as a person typing it would.
async fn edit_globs(app: &App, text: &str) {
    let area = app
        .find("#approval-panel .approval textarea[name=\"edited-globs\"]")
        .await
        .expect("glob editor");
    app.session
        .execute(
            "arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('input', {bubbles: true}));",
            vec![area.to_value(), json!(text)],
        )
        .await
        .expect("edit the globs");
}

async fn wait_completed(app: &App) {
    app.wait_until(
        "document.querySelector('.task-panel:not([hidden]) .task-status')?.dataset.status === 'completed'",
    )
    .await
    .expect("completed");
}

#[tokio::test]
async fn a_wider_scope_is_asked_for_edited_and_approved() {
    let server = ScriptedServer::start(vec![
        openai::turn().tool_call("s", "select_active_intent", json!({"intent_id": "INT-001"})).reply(),
        openai::turn().tool_call("x", "request_scope_expansion", json!({"intent_id": "INT-001", "globs": ["docs/**", "build/**"], "reason": "The guide in docs/ must describe greet()."})).reply(),
        openai::turn().tool_call("d", "attempt_completion", json!({"result": "asked"})).reply(),
    ])
    .await;
    let (app, ws, _dirs) = launch("approval-scope", &server).await;
    app.send("Document greet()").await.expect("send");
    app.find("#approval-panel .approval[data-kind=\"scope_expansion\"]")
        .await
        .expect("scope card");
    // What each requested glob matches, the current scope and the reason are on the card.
    app.wait_until("(document.querySelector('#approval-panel .glob-match[data-glob=\"docs/**\"]')?.textContent ?? '').includes('2 files')")
        .await
        .expect("docs/** matches two files");
    let card = app
        .text("#approval-panel .approval")
        .await
        .expect("card text");
    assert!(
        card.contains("Owned scope: src/greet/**")
            && card.contains("build/out.txt")
            && card.contains("must describe greet()"),
        "{card}"
    );
    assert_eq!(
        app.unnamed_controls("#approval-panel").await.expect("a11y"),
        json!([])
    );
    // The person grants less than asked: docs only.
    edit_globs(&app, "docs/**\n").await;
    app.wait_until("document.querySelectorAll('#approval-panel .glob-match').length === 1")
        .await
        .expect("the preview follows the edit");
    app.screenshot("approval-scope").await.expect("screenshot");
    app.click("#approval-panel [data-action=\"approve\"]")
        .await
        .expect("approve");
    wait_completed(&app).await;
    let yaml = intents_file(&ws);
    assert!(
        yaml.contains("docs/**") && yaml.matches("build/**").count() == 1,
        "only docs/** was added: {yaml}"
    );
    let result = server.tool_result("x").expect("result");
    assert!(
        result.contains("docs/**") && !result.contains("build/**"),
        "{result}"
    );
    // The intents view shows the new scope.
    app.click("nav button[data-view=\"intents\"]")
        .await
        .expect("intents view");
    app.click(".intent-item[data-intent-id=\"INT-001\"] .intent-open")
        .await
        .expect("open INT-001");
    app.wait_until(
        "[...document.querySelectorAll('#intent-scope input')].map(i => i.value).join(' ') === 'src/greet/** docs/**'",
    )
    .await
    .expect("scope in the editor");
    app.screenshot("intents-after-scope")
        .await
        .expect("screenshot");
    app.close().await.expect("close");
}

#[tokio::test]
async fn a_proposed_intent_is_created_with_the_scope_the_person_gives_and_a_refusal_changes_nothing(
) {
    let server = ScriptedServer::start(vec![
        openai::turn().tool_call("p", "propose_intent", json!({
            "id": "INT-009", "name": "API documentation", "owned_scope": ["docs/api.md"],
            "constraints": ["No code changes"], "acceptance_criteria": ["Every endpoint is documented"],
            "reason": "Documenting the API is work no open intent covers.",
        })).reply(),
        openai::turn().tool_call("s", "select_active_intent", json!({"intent_id": "INT-001"})).reply(),
        openai::turn().tool_call("x", "request_scope_expansion", json!({"intent_id": "INT-001", "globs": ["build/**"], "reason": "To rebuild."})).reply(),
        openai::turn().tool_call("d", "attempt_completion", json!({"result": "proposed"})).reply(),
    ])
    .await;
    let (app, ws, _dirs) = launch("approval-new-intent", &server).await;
    app.send("Plan the API docs").await.expect("send");
    app.find("#approval-panel .approval[data-kind=\"new_intent\"]")
        .await
        .expect("new intent card");
    let card = app
        .text("#approval-panel .approval")
        .await
        .expect("card text");
    assert!(
        card.contains("INT-009")
            && card.contains("API documentation")
            && card.contains("No code changes")
            && card.contains("Every endpoint is documented"),
        "{card}"
    );
    app.wait_until("(document.querySelector('#approval-panel .glob-match[data-glob=\"docs/api.md\"]')?.textContent ?? '').includes('1 file')")
        .await
        .expect("what the scope matches");
    edit_globs(&app, "docs/**").await;
    app.wait_until(
        "!!document.querySelector('#approval-panel .glob-match[data-glob=\"docs/**\"]')",
    )
    .await
    .expect("the preview follows the edit");
    assert_eq!(
        app.unnamed_controls("#approval-panel").await.expect("a11y"),
        json!([])
    );
    app.screenshot("approval-new-intent")
        .await
        .expect("screenshot");
    app.click("#approval-panel [data-action=\"approve\"]")
        .await
        .expect("approve");
    app.find(".intent-item[data-intent-id=\"INT-009\"]")
        .await
        .expect("listed among the intents");

    // The scope request that follows is refused with a reason.
    app.find("#approval-panel .approval[data-kind=\"scope_expansion\"]")
        .await
        .expect("scope card");
    let before = intents_file(&ws);
    app.type_into(
        "#approval-panel textarea[name=\"reject-reason\"]",
        "build/ is not yours",
    )
    .await
    .expect("reason");
    app.click("#approval-panel [data-action=\"reject\"]")
        .await
        .expect("reject");
    wait_completed(&app).await;
    let yaml = intents_file(&ws);
    assert_eq!(yaml, before, "a refusal changes nothing");
    assert!(
        yaml.contains("id: INT-009") && yaml.contains("docs/**") && !yaml.contains("docs/api.md"),
        "{yaml}"
    );
    let refused: Value =
        serde_json::from_str(&server.tool_result("x").expect("result")).expect("json");
    assert_eq!(refused["error"]["code"], "REJECTED_BY_USER");
    assert!(refused["error"]["message"]
        .as_str()
        .unwrap_or("")
        .contains("build/ is not yours"));
    app.close().await.expect("close");
}

/// A loopback HTTP server that records the path of every request it is sent.
async fn listener() -> (u16, Arc<Mutex<Vec<String>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let mut buf = vec![0u8; 4096];
            let n = conn.read(&mut buf).await.unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).into_owned();
            let path = head.split_whitespace().nth(1).unwrap_or("?").to_string();
            record.lock().expect("lock").push(path);
            let _ = conn
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n")
                .await;
        }
    });
    (port, seen)
}

#[tokio::test]
async fn a_command_reaches_the_network_only_when_allowed_on_its_card() {
    let (port, seen) = listener().await;
    let one = format!("curl -s -m 5 http://127.0.0.1:{port}/one");
    let two = format!("curl -s -m 5 http://127.0.0.1:{port}/two");
    let server = ScriptedServer::start(vec![
        openai::turn()
            .tool_call("s", "select_active_intent", json!({"intent_id": "INT-002"}))
            .reply(),
        openai::turn()
            .tool_call("c1", "execute_command", json!({"command": one}))
            .reply(),
        openai::turn()
            .tool_call("c2", "execute_command", json!({"command": two}))
            .reply(),
        openai::turn()
            .tool_call("d", "attempt_completion", json!({"result": "fetched"}))
            .reply(),
    ])
    .await;
    let (app, _ws, _dirs) = launch("approval-command-network", &server).await;
    let state = app.ipc(json!({"type": "get_state"})).await.expect("state");
    let confined = state["ok"]["state"]["settings"]["confinement"]["confined"] == json!(true);
    app.send("Fetch the page").await.expect("send");
    app.find("#approval-panel .approval[data-kind=\"command\"]")
        .await
        .expect("command card");
    if !confined {
        // Nothing confines commands here: the card says so plainly instead of offering grants.
        let card = app.text("#approval-panel .approval").await.expect("text");
        assert!(
            card.contains("nothing but this card stops this command"),
            "{card}"
        );
        app.screenshot("approval-command-network")
            .await
            .expect("screenshot");
        eprintln!("commands are not confined on this machine: the grant itself is not tested");
        app.close().await.expect("close");
        return;
    }
    // The policy says curl needs the network: the box is ticked already.
    app.wait_until("document.querySelector('#approval-panel input[name=\"grant-network\"]')?.checked === true && document.querySelector('#approval-panel input[name=\"grant-write-git\"]')?.checked === false")
        .await
        .expect("network pre-ticked");
    assert_eq!(
        app.unnamed_controls("#approval-panel").await.expect("a11y"),
        json!([])
    );
    app.screenshot("approval-command-network")
        .await
        .expect("screenshot");
    app.click("#approval-panel [data-action=\"approve\"]")
        .await
        .expect("approve with network");
    until("the first request", || {
        seen.lock().expect("lock").iter().any(|p| p == "/one")
    })
    .await
    .expect("the command reached the listener");

    // The second time the person unticks it: the command runs without the network.
    app.wait_until("!!document.querySelector('#approval-panel .approval[data-kind=\"command\"]') && (document.querySelector('#approval-panel pre.command')?.textContent ?? '').includes('/two')")
        .await
        .expect("second card");
    app.click("#approval-panel input[name=\"grant-network\"]")
        .await
        .expect("untick");
    app.click("#approval-panel [data-action=\"approve\"]")
        .await
        .expect("approve without network");
    wait_completed(&app).await;
    let result = server.tool_result("c2").expect("c2 result");
    assert!(!result.contains("exited with code 0"), "{result}");
    assert_eq!(
        *seen.lock().expect("lock"),
        vec!["/one".to_string()],
        "no connection without the grant"
    );
    app.close().await.expect("close");
}
