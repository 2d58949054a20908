//! `@` in the message box: the workspace's files and folders are offered as the person types,
//! the one taken shows as a chip with its size, an ignored file's chip says why it cannot go,
//! and what was mentioned reaches the model with the message.

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

#[tokio::test]
async fn files_are_offered_after_an_at_and_shown_as_chips_with_their_size() {
    let server =
        ScriptedServer::start(vec![openai::turn().text("It parses numbers.").reply()]).await;
    let ws = workspace(
        Some(INTENTS),
        &[
            ("src/parser.rs", "pub fn parse(input: &str) -> u32 { 1 }\n"),
            ("src/printer.rs", "pub fn print() {}\n"),
            (".gitignore", "secrets.txt\n"),
            ("secrets.txt", "TOKEN=do-not-send\n"),
        ],
    );
    let dirs = UserDirs::new();
    dirs.settings_openai(&format!("{}/v1", server.base_url()), false);
    let app = App::launch("mentions", ws.path(), &dirs, &[])
        .await
        .expect("launch");
    app.type_into("#composer-input", "Explain @par")
        .await
        .expect("type");
    app.wait_until("!document.querySelector('#mention-list').hidden && document.querySelector('#mention-list .mention-option')?.dataset.item === 'src/parser.rs'")
        .await
        .expect("the matching file is offered");
    app.screenshot("mention-autocomplete")
        .await
        .expect("screenshot");
    app.keys("#composer-input", "\u{E004}").await.expect("tab");
    app.wait_until("document.querySelector('#composer-input').value === 'Explain @src/parser.rs ' && document.querySelector('#mention-list').hidden")
        .await
        .expect("the file is taken");
    app.wait_until("(document.querySelector('#mention-chips .mention-chip')?.textContent ?? '').startsWith('@src/parser.rs · ')")
        .await
        .expect("its chip shows, sized");
    // An ignored file gets a chip that says why it cannot go.
    app.keys("#composer-input", "and @secrets.txt")
        .await
        .expect("type more");
    app.wait_until("document.querySelector('#mention-chips .mention-chip[data-error=\"true\"]')?.textContent.includes('ignored')")
        .await
        .expect("the refused chip");
    app.screenshot("mention-chips").await.expect("screenshot");
    // Sent without the refused mention, the file goes with the message.
    app.type_into("#composer-input", "Explain @src/parser.rs")
        .await
        .expect("retype");
    app.click("#composer-send").await.expect("send");
    app.wait_until("[...document.querySelectorAll('.task-panel:not([hidden]) .message[data-role=\"assistant\"]')].some(m => m.textContent.includes('It parses numbers.'))")
        .await
        .expect("answer");
    let user = server.requests()[0].json()["messages"][1]["content"].clone();
    let user = user.as_str().unwrap_or_default();
    assert!(user.contains("<mention name=\"@src/parser.rs\">"), "{user}");
    assert!(
        user.contains("pub fn parse(input: &str) -> u32 { 1 }"),
        "{user}"
    );
    assert!(!user.contains("do-not-send"));
    // The transcript shows the message as typed.
    assert_eq!(
        app.eval("return document.querySelector('.task-panel:not([hidden]) .message[data-role=\"user\"] .content').textContent")
            .await
            .expect("user message"),
        json!("Explain @src/parser.rs")
    );
}
