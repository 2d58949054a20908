//! An MCP server the person allowed to run unconfined, in the real window: a call of a tool it
//! declares read-only still waits for approval, its approval and every card of the call carry
//! the "unconfined" badge and say what it means, and Settings show the consent, take it back
//! and give it again only after a warning.

use mandate_tests::app::{workspace, App, UserDirs};
use mandate_tests::llm_server::ScriptedServer;
use mandate_tests::mcp::{
    consent, consent_and_unconfined, stdio_entry, write_project_file, write_user_file, INTENTS,
};
use mandate_tests::sse::openai;
use serde_json::json;

/// A script that is true when the element `selector` exists and its text holds every part.
fn shows(selector: &str, parts: &[&str]) -> String {
    let checks: Vec<String> = parts
        .iter()
        .map(|p| {
            format!(
                "t.includes({})",
                serde_json::to_string(p).unwrap_or_default()
            )
        })
        .collect();
    format!(
        "const el = document.querySelector({}); const t = el?.textContent ?? ''; return !!el && {};",
        serde_json::to_string(selector).unwrap_or_default(),
        checks.join(" && ")
    )
}

#[tokio::test]
async fn an_unconfined_servers_call_card_says_so_and_settings_ask_before_allowing_it() {
    let ws = workspace(Some(INTENTS), &[]);
    write_project_file(ws.path(), json!({"srv": stdio_entry(&[], json!({}))}));
    let dirs = UserDirs::new();
    let (key, decisions) = consent_and_unconfined(ws.path(), "srv");
    write_user_file(&dirs.config(), json!({"projects": {&key: decisions}}));
    let server = ScriptedServer::start(vec![
        openai::turn()
            .text("I will look the key up.")
            .tool_call("r", "mcp__srv__lookup", json!({"key": "a"}))
            .reply(),
        openai::turn()
            .tool_call("d", "attempt_completion", json!({"result": "done"}))
            .reply(),
    ])
    .await;
    dirs.settings_openai(&format!("{}/v1", server.base_url()), true);
    let app = App::launch("mcp-unconfined", ws.path(), &dirs, &[])
        .await
        .expect("launch");
    app.send("Look the key up").await.expect("send");

    // A declared read of an unconfined server waits for the person; both cards say why.
    app.find("#approval-panel .approval[data-kind=\"mcp_call\"]")
        .await
        .expect("the read asks");
    app.wait_until(&shows(
        "#approval-panel .approval",
        &["unconfined", "runs outside any confinement", "lookup"],
    ))
    .await
    .expect("the approval says unconfined");
    let card = ".tool-card[data-call-id=\"r\"]";
    app.wait_until(&format!(
        "const c = document.querySelector('{card}'); return !!c && c.dataset.status === 'waiting_for_approval' \
         && c.dataset.unconfined === 'true' && !c.querySelector('.tool-unconfined').hidden \
         && !c.querySelector('.tool-unconfined-note').hidden;"
    ))
    .await
    .expect("the waiting card carries the badge");
    assert!(
        server.tool_result("r").is_none(),
        "nothing ran before the decision"
    );
    app.screenshot("mcp-unconfined-approval")
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
    assert_eq!(server.tool_result("r").as_deref(), Some("the value of a"));
    // The finished card still says it, badge and explanation, without being opened.
    app.wait_until(&format!(
        "const c = document.querySelector('{card}'); return !!c && c.dataset.status === 'succeeded' \
         && c.dataset.unconfined === 'true' && !c.querySelector('.tool-unconfined').hidden;"
    ))
    .await
    .expect("the finished card carries the badge");
    let text = app.text(card).await.expect("card text");
    for expected in [
        "unconfined",
        "Unconfined: this MCP server runs outside any confinement",
        "What a call changes in the workspace is found afterwards",
    ] {
        assert!(text.contains(expected), "{expected} missing from {text}");
    }
    app.screenshot("mcp-unconfined-card")
        .await
        .expect("screenshot");

    // Settings: the consent is shown, taken back at once, and given again after a warning.
    app.click("nav button[data-view=\"settings\"]")
        .await
        .expect("settings");
    let srv = "#mcp-servers li[data-server=\"srv\"]";
    let ticked = |checked: bool| {
        format!("return document.querySelector('#mcp-unconfined-srv')?.checked === {checked};")
    };
    app.wait_until(&ticked(true)).await.expect("ticked");
    app.wait_until(&shows(
        srv,
        &["Runs unconfined, as you allowed", "Run it unconfined"],
    ))
    .await
    .expect("how it runs");
    app.eval("document.querySelector('#mcp-servers').scrollIntoView(); return true;")
        .await
        .expect("scroll");
    app.screenshot("settings-mcp-unconfined")
        .await
        .expect("screenshot");
    let tick = "document.querySelector('#mcp-unconfined-srv').click(); return true;";
    app.eval(tick).await.expect("untick");
    app.wait_until(&ticked(false)).await.expect("unticked");
    app.wait_until(&shows(srv, &["Runs confined (landlock"]))
        .await
        .expect("confined again");
    let file = std::fs::read_to_string(dirs.config().join("mcp.json")).expect("mcp.json");
    assert!(!file.contains("\"unconfined\""), "{file}");

    app.eval(tick).await.expect("tick");
    app.wait_until(
        "const d = document.querySelector('#confirm-dialog'); \
         return !!d && d.open && d.textContent.includes('outside any sandbox') \
         && d.textContent.includes('Run srv unconfined?');",
    )
    .await
    .expect("the warning is shown first");
    app.screenshot("settings-mcp-unconfined-warning")
        .await
        .expect("screenshot");
    app.click("#confirm-dialog [data-action=\"confirm\"]")
        .await
        .expect("confirm");
    app.wait_until(&ticked(true)).await.expect("ticked again");
    app.wait_until(&shows(srv, &["Runs unconfined, as you allowed"]))
        .await
        .expect("unconfined again");
    let file: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dirs.config().join("mcp.json")).expect("mcp.json"),
    )
    .expect("json");
    let (_, decisions) = consent(ws.path(), "srv");
    assert_eq!(
        file["projects"][&key]["unconfined"]["srv"]["definition"],
        decisions["consents"]["srv"]
    );
    app.close().await.expect("close");
}
