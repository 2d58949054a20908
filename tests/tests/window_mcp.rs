//! MCP in the real window: the approval card of a mutating MCP call (server, tool, the server's
//! description and claims, the arguments), approved by a person, then recorded.

use mandate_tests::app::{workspace, App, UserDirs};
use mandate_tests::cli::ledger;
use mandate_tests::llm_server::ScriptedServer;
use mandate_tests::mcp::{
    consent, project_def, server_bin, stdio_entry, write_project_file, write_user_file, EXEC_ARGS,
};
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
                // A confined server writes nothing outside its own directories.
                json!({"path": "tmp:from-the-window.txt", "text": "approved in the window"}),
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
    assert!(
        server.tool_result("w").is_none(),
        "nothing ran before the decision"
    );
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
    let wrote = server.tool_result("w").expect("the call ran");
    assert!(
        wrote.starts_with("wrote ") && wrote.ends_with("/from-the-window.txt"),
        "{wrote}"
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

#[tokio::test]
async fn settings_list_servers_ask_consent_and_add_one() {
    let http = mandate_tests::mcp::HttpServer::start();
    let ws = workspace(Some(INTENTS), &[]);
    write_project_file(
        ws.path(),
        json!({"srv": stdio_entry(&["--flag"], json!({"MODE": "test", "MCP_TEST_STARTS": "state"}))}),
    );
    let dirs = UserDirs::new();
    dirs.settings_openai("http://127.0.0.1:9/v1", true);
    let app = App::launch("mcp-settings", ws.path(), &dirs, &[])
        .await
        .expect("launch");
    app.click("nav button[data-view=\"settings\"]")
        .await
        .expect("settings");
    let srv = "#mcp-servers li[data-server=\"srv\"]";
    app.find(&format!("{srv}[data-status=\"needs_consent\"]"))
        .await
        .expect("the workspace's server waits for consent");
    // The list is drawn again on every change: read it in one script, never by a stale node.
    let shows = |selector: &str, parts: &[&str]| {
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
            "const t = document.querySelector({})?.textContent ?? ''; return {};",
            serde_json::to_string(selector).unwrap_or_default(),
            checks.join(" && ")
        )
    };
    app.wait_until(&shows(srv, &["mcp-test-server", "--flag", "MODE=test"]))
        .await
        .expect("the person sees what would run");
    app.screenshot("settings-mcp-consent")
        .await
        .expect("screenshot");
    app.click(&format!("{srv} [data-mcp-action=\"Allow it to run\"]"))
        .await
        .expect("allow");
    app.find(&format!("{srv}[data-status=\"ready\"]"))
        .await
        .expect("started once allowed");
    app.wait_until(&shows(srv, &["mcp__srv__lookup"]))
        .await
        .expect("its tools are listed");
    app.wait_until(&shows(
        srv,
        &[
            "Runs confined (landlock",
            "reads the workspace, writes nothing in it",
        ],
    ))
    .await
    .expect("how it is confined");

    // Allowed to write in the workspace: said so, kept in the person's file under this
    // definition, and stopped: only a call starts it (inside that call's watch).
    app.click("#mcp-write-srv").await.expect("grant writes");
    app.wait_until(&shows(
        srv,
        &["may write in the workspace: stopped between calls"],
    ))
    .await
    .expect("the grant is shown");
    app.find(&format!("{srv}[data-status=\"stopped\"]"))
        .await
        .expect("waits for its call");
    app.wait_until(&shows(
        srv,
        &["mcp__srv__lookup", "its next call starts it"],
    ))
    .await
    .expect("its tools are still listed");
    app.screenshot("settings-mcp-write-grant")
        .await
        .expect("screenshot");
    let granted: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dirs.config().join("mcp.json")).expect("mcp.json"),
    )
    .expect("json");
    let (key, decisions) = consent(ws.path(), "srv");
    assert_eq!(
        granted["projects"][&key]["writes"]["srv"]["definition"],
        decisions["consents"]["srv"]
    );

    app.type_into("#mcp-add-name", "web").await.expect("name");
    app.choose("#mcp-add-type", "http").await.expect("type");
    app.type_into("#mcp-add-target", &http.url)
        .await
        .expect("url");
    app.click("#mcp-add").await.expect("add");
    app.find("#mcp-servers li[data-server=\"web\"][data-status=\"ready\"]")
        .await
        .expect("the added server runs");
    app.wait_until(&shows(
        "#mcp-servers li[data-server=\"web\"]",
        &[
            "read (the server declares it read-only)",
            "asks you, under an intent",
            "hidden: its input schema is not an object schema",
        ],
    ))
    .await
    .expect("the tools and how each runs");
    app.screenshot("settings-mcp").await.expect("screenshot");
    let file: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dirs.config().join("mcp.json")).expect("mcp.json"),
    )
    .expect("json");
    assert_eq!(file["mcpServers"]["web"]["url"], http.url.as_str());
    assert_eq!(file["projects"].as_object().map(|p| p.len()), Some(1));

    // A server allowed to write does not run outside a call (it was started once more,
    // without the grant, to list its tools, and stopped); taking consent back keeps it so.
    assert_eq!(
        mandate_tests::mcp::wait_gone(&mandate_tests::mcp::server_pids(ws.path())).await,
        Vec::<u32>::new(),
        "a granted server runs only during its calls"
    );
    app.click(&format!("{srv} [data-mcp-action=\"Stop allowing it\"]"))
        .await
        .expect("revoke");
    app.find(&format!("{srv}[data-status=\"needs_consent\"]"))
        .await
        .expect("waits for consent again");
    let starts = mandate_tests::mcp::started_pids(&mandate_tests::mcp::starts_file(&dirs, "srv"));
    assert_eq!(
        starts.len(),
        2,
        "started, then once more without the grant to list its tools"
    );
    assert!(mandate_tests::mcp::server_pids(ws.path()).is_empty());
    app.close().await.expect("close");
}

#[tokio::test]
async fn settings_say_when_a_write_grant_is_stale_or_refused_and_ask_again() {
    let ws = workspace(Some(INTENTS), &[("tools/srv.sh", EXEC_ARGS)]);
    write_project_file(
        ws.path(),
        json!({
            "srv": stdio_entry(&[], json!({})),
            "local": {"command": "/bin/sh", "args": ["tools/srv.sh", server_bin().display().to_string()]},
        }),
    );
    let (srv, local) = (
        project_def(ws.path(), "srv"),
        project_def(ws.path(), "local"),
    );
    let (key, _) = consent(ws.path(), "srv");
    // `srv` was allowed to write before grants were bound to code; `local` runs the
    // workspace's own script, and a grant for it was written into the file anyway.
    let dirs = UserDirs::new();
    write_user_file(
        &dirs.config(),
        json!({"projects": {&key: {
            "consents": {"srv": srv.definition_hash(), "local": local.definition_hash()},
            "writes": {
                "srv": srv.definition_hash(),
                "local": {"definition": local.definition_hash(), "program": "/bin/sh", "code": {}},
            },
        }}}),
    );
    dirs.settings_openai("http://127.0.0.1:9/v1", true);
    let app = App::launch("mcp-stale-grant", ws.path(), &dirs, &[])
        .await
        .expect("launch");
    app.click("nav button[data-view=\"settings\"]")
        .await
        .expect("settings");
    let item = |name: &str| format!("#mcp-servers li[data-server=\"{name}\"]");
    let shows = |selector: &str, part: &str, checked: bool| {
        format!(
            "const li = document.querySelector({}); const box = li?.querySelector('input[id^=\"mcp-write-\"]'); \
             return !!box && box.checked === {checked} && li.textContent.includes({});",
            serde_json::to_string(selector).unwrap_or_default(),
            serde_json::to_string(part).unwrap_or_default(),
        )
    };
    app.wait_until(&shows(
        &item("srv"),
        "Your grant to write in the workspace is stale and not used: it was allowed before Mandate bound a grant to the code it runs",
        false,
    ))
    .await
    .expect("the stale grant is said, and not in force");
    let script_path = ws
        .path()
        .canonicalize()
        .expect("canonical")
        .join("tools/srv.sh")
        .display()
        .to_string();
    app.wait_until(&shows(
        &item("local"),
        "It cannot be allowed to write in this workspace: its script `tools/srv.sh` leads to",
        false,
    ))
    .await
    .expect("the refused grant is said");
    app.eval("document.querySelector('#mcp-servers').scrollIntoView(); return true;")
        .await
        .expect("scroll");
    app.screenshot("settings-mcp-stale-grant")
        .await
        .expect("screenshot");

    // The list is drawn again whenever a server's state moves: click in one script, never
    // through a node found earlier.
    let tick = |id: &str| format!("document.querySelector('#{id}').click(); return true;");
    // Asked again, the person allows the code `srv` runs now.
    app.eval(&tick("mcp-write-srv")).await.expect("grant again");
    app.wait_until(&shows(
        &item("srv"),
        "may write in the workspace: stopped between calls",
        true,
    ))
    .await
    .expect("in force");
    // `local` cannot be allowed: the error names the script, and the box is unticked.
    app.eval(&tick("mcp-write-local"))
        .await
        .expect("try to grant");
    app.wait_until(&format!(
        "const e = document.querySelector('#mcp-error')?.textContent ?? ''; \
         return e.includes('cannot be allowed to write in this workspace') && e.includes({}) \
         && document.querySelector('#mcp-write-local')?.checked === false;",
        serde_json::to_string(&script_path).unwrap_or_default()
    ))
    .await
    .expect("refused, naming the script");
    app.close().await.expect("close");
}
