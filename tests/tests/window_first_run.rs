//! A first run that guides: from a fresh config and an empty workspace, the chat says what is
//! missing, offers the model server found on this machine and the first intent, and a person
//! clicking through it reaches a first governed change (an approved write in the ledger) in
//! under a minute.
//!
//! The scripted provider stands in for a local Ollama: the app is told its port through
//! `MANDATE_LOCAL_SERVERS`, which the host reads only to look for local servers.

use std::time::{Duration, Instant};

use mandate_tests::app::{until, workspace, App, UserDirs};
use mandate_tests::cli::ledger;
use mandate_tests::llm_server::{Reply, ScriptedServer};
use mandate_tests::sse::openai;
use mandate_tests::trace_schema::assert_valid;
use serde_json::json;

#[tokio::test]
async fn a_fresh_start_reaches_a_first_governed_change_in_under_a_minute() {
    let server = ScriptedServer::start(vec![
        openai::turn()
            .tool_call("s", "select_active_intent", json!({"intent_id": "INT-001"}))
            .reply(),
        openai::turn()
            .text("I will create the file.")
            .tool_call("w", "write_to_file", json!({"path": "hello.txt", "content": "hello\n", "intent_id": "INT-001", "mutation_class": "INTENT_EVOLUTION"}))
            .reply(),
        openai::turn()
            .tool_call("d", "attempt_completion", json!({"result": "hello.txt exists"}))
            .reply(),
    ])
    .await;
    server.on_get(
        "/v1/models",
        Reply::json(
            200,
            &json!({"object": "list", "data": [{"id": "qwen2.5-coder:7b"}, {"id": "llama3.2:3b"}]}),
        ),
    );
    let port = server
        .base_url()
        .rsplit(':')
        .next()
        .unwrap_or("")
        .to_string();
    let local = format!("ollama={port}");
    let ws = workspace(None, &[]);
    let dirs = UserDirs::new();
    let started = Instant::now();
    let app = App::launch(
        "first-run",
        ws.path(),
        &dirs,
        &[("MANDATE_LOCAL_SERVERS", &local), ("MANDATE_API_KEY", "")],
    )
    .await
    .expect("launch");

    // The chat says what is missing, and the composer will not send into the void.
    app.wait_until("!document.querySelector('#guide-provider').hidden && !document.querySelector('#guide-intent').hidden")
        .await
        .expect("both steps shown");
    app.find("#guide-local .guide-server[data-preset=\"ollama\"]")
        .await
        .expect("the local server is offered");
    let hint = app.text("#composer-hint").await.expect("hint");
    assert!(hint.contains("Connect a model"), "{hint}");
    app.screenshot("first-run").await.expect("screenshot");

    // Use the server found, with the model of the person's choice.
    app.choose(
        "#guide-local .guide-server[data-preset=\"ollama\"] select",
        "qwen2.5-coder:7b",
    )
    .await
    .expect("model");
    app.click("#guide-local [data-action=\"use-server\"]")
        .await
        .expect("use it");
    app.wait_until("document.querySelector('#guide-provider').hidden")
        .await
        .expect("provider step done");

    // The first intent, in the intents editor with its live glob preview.
    app.click("#guide-intent-create").await.expect("create");
    app.wait_until("document.querySelector('#intent-id').value === 'INT-001'")
        .await
        .expect("an id is proposed");
    app.type_into("#intent-name", "Say hello")
        .await
        .expect("name");
    app.type_into("#intent-scope li:last-child input", "hello.txt")
        .await
        .expect("glob");
    app.wait_until("(document.querySelector('#intent-scope li:last-child .scope-preview')?.textContent ?? '') !== ''")
        .await
        .expect("preview");
    app.screenshot("first-run-intent")
        .await
        .expect("screenshot");
    app.click("#intent-save").await.expect("save");
    // The way back appears once the host has saved the intent (slower on a busy machine).
    app.wait_until("!document.querySelector('#intent-back-to-chat').hidden")
        .await
        .expect("saved");
    app.click("#intent-back-to-chat").await.expect("back");
    app.wait_until("document.querySelector('#guide').hidden")
        .await
        .expect("nothing missing any more");

    // The first task, and its first change approved.
    app.send("Create hello.txt that says hello")
        .await
        .expect("send");
    app.find("#approval-panel .approval[data-kind=\"write\"]")
        .await
        .expect("approval");
    app.click("#approval-panel [data-action=\"approve\"]")
        .await
        .expect("approve");
    let trace = ws.path().join(".orchestration/agent_trace.jsonl");
    // A whole record: the file exists (created empty) before its first line is appended.
    until("the change in the ledger", || {
        std::fs::read_to_string(&trace).is_ok_and(|t| t.ends_with('\n'))
    })
    .await
    .expect("ledger");
    let elapsed = started.elapsed();
    let records = ledger(ws.path());
    assert_eq!(records.len(), 1);
    assert_valid(&records[0]);
    assert_eq!(
        records[0]["metadata"]["dev.mandate"]["intent_id"],
        "INT-001"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("hello.txt")).expect("written"),
        "hello\n"
    );
    eprintln!(
        "first governed change {:.1} s after launch",
        elapsed.as_secs_f64()
    );
    assert!(
        elapsed < Duration::from_secs(60),
        "the first governed change took {elapsed:?}"
    );
    // The model chosen in the guide is the one that was asked.
    let body = server.requests().last().cloned().expect("request").json();
    assert_eq!(body["model"], "qwen2.5-coder:7b");
    app.wait_until(
        "document.querySelector('.task-panel .task-status')?.dataset.status === 'completed'",
    )
    .await
    .expect("completed");
    app.screenshot("first-run-done").await.expect("screenshot");
    app.close().await.expect("close");
}

#[tokio::test]
async fn without_a_local_server_a_key_sets_up_a_provider() {
    let ws = workspace(
        Some("active_intents:\n  - id: INT-1\n    name: Docs\n    owned_scope: [\"docs/**\"]\n"),
        &[],
    );
    let dirs = UserDirs::new();
    // Nothing listens there: discovery finds nothing.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("port");
    let local = format!("ollama={closed}");
    let app = App::launch(
        "first-run-key",
        ws.path(),
        &dirs,
        &[("MANDATE_LOCAL_SERVERS", &local), ("MANDATE_API_KEY", "")],
    )
    .await
    .expect("launch");
    app.wait_until("(document.querySelector('#guide-local-status')?.textContent ?? '').startsWith('None found')")
        .await
        .expect("nothing found, and said so");
    assert_eq!(
        app.eval("return document.querySelector('#guide-intent').hidden")
            .await
            .expect("eval"),
        json!(true),
        "the workspace has an intent already"
    );
    app.screenshot("first-run-no-server")
        .await
        .expect("screenshot");
    app.choose("#guide-preset", "openrouter")
        .await
        .expect("preset");
    assert_eq!(
        app.eval("return document.querySelector('#guide-model').value")
            .await
            .expect("eval"),
        json!("openai/gpt-4.1-mini")
    );
    app.type_into("#guide-key", "sk-or-first-run")
        .await
        .expect("key");
    app.click("#guide-key-save").await.expect("save");
    app.wait_until("document.querySelector('#guide').hidden")
        .await
        .expect("set up");
    assert_eq!(
        app.eval("return document.querySelector('#guide-key').value")
            .await
            .expect("eval"),
        json!(""),
        "the key left the page"
    );
    let saved = std::fs::read_to_string(dirs.config().join("settings.json")).expect("settings");
    let saved: serde_json::Value = serde_json::from_str(&saved).expect("json");
    assert_eq!(saved["preset"], "openrouter");
    assert_eq!(saved["base_url"], "https://openrouter.ai/api/v1");
    assert!(!saved.to_string().contains("sk-or-first-run"));
    // The key went to the test session's keyring: leave it as it was found.
    let r = app
        .ipc(json!({"type": "clear_api_key", "provider": "openai"}))
        .await
        .expect("ipc");
    assert_eq!(r["ok"]["settings"]["api_key_set"], false, "{r}");
    app.close().await.expect("close");
}
