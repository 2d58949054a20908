//! Several tasks side by side, each holding its own intent; task history that survives a restart
//! (list, reopen, resume, delete); intents' status, order and deletion from the GUI.

use mandate_tests::app::{workspace, App, UserDirs};
use mandate_tests::llm_server::ScriptedServer;
use mandate_tests::sse::openai;
use serde_json::json;

const INTENTS: &str = r#"active_intents:
  - id: INT-A
    name: Architecture notes
    owned_scope: ["docs/**"]
  - id: INT-B
    name: Builder work
    owned_scope: ["src/**"]
  - id: INT-C
    name: Spare
    owned_scope: ["spare/**"]
"#;

#[tokio::test]
async fn two_tasks_hold_their_own_intents_and_history_survives_a_restart() {
    let server = ScriptedServer::start(vec![
        openai::turn().text("Architect here.").reply(),
        openai::turn().text("Builder here.").reply(),
        openai::turn().text("Welcome back, architect.").reply(),
    ])
    .await;
    let ws = workspace(Some(INTENTS), &[]);
    let dirs = UserDirs::new();
    dirs.settings_openai(&format!("{}/v1", server.base_url()), true);
    let app = App::launch("tasks", ws.path(), &dirs, &[])
        .await
        .expect("launch");

    app.send("Plan the architecture").await.expect("send");
    app.wait_until("[...document.querySelectorAll('.task-panel:not([hidden]) .message[data-role=\"assistant\"]')].some(m => m.textContent.includes('Architect here.'))").await.expect("first answer");
    let first = app
        .eval("return document.querySelector('.task-panel:not([hidden])').dataset.taskId")
        .await
        .expect("id");
    let first = first.as_str().expect("id").to_string();
    app.choose(
        &format!(".task-panel[data-task-id=\"{first}\"] .task-intent-select"),
        "INT-A",
    )
    .await
    .expect("choose intent");

    app.click("#new-task").await.expect("new task");
    app.send("Build it").await.expect("send");
    app.wait_until("[...document.querySelectorAll('.task-panel:not([hidden]) .message[data-role=\"assistant\"]')].some(m => m.textContent.includes('Builder here.'))").await.expect("second answer");
    let second = app
        .eval("return document.querySelector('.task-panel:not([hidden])').dataset.taskId")
        .await
        .expect("id");
    let second = second.as_str().expect("id").to_string();
    assert_ne!(first, second);
    app.choose(
        &format!(".task-panel[data-task-id=\"{second}\"] .task-intent-select"),
        "INT-B",
    )
    .await
    .expect("choose intent");

    app.wait_until(&format!("(document.querySelector('.task-item[data-task-id=\"{first}\"]')?.textContent ?? '').includes('INT-A')")).await.expect("first holds INT-A");
    app.wait_until(&format!("(document.querySelector('.task-item[data-task-id=\"{second}\"]')?.textContent ?? '').includes('INT-B')")).await.expect("second holds INT-B");
    app.click("#split-toggle").await.expect("split");
    app.screenshot("tasks-split").await.expect("screenshot");

    // Delete the second task, with confirmation.
    app.click(&format!(
        ".task-item[data-task-id=\"{second}\"] [data-action=\"delete-task\"]"
    ))
    .await
    .expect("delete");
    app.click("#confirm-dialog [data-action=\"confirm\"]")
        .await
        .expect("confirm");
    app.wait_until(&format!(
        "document.querySelector('.task-item[data-task-id=\"{second}\"]') === null"
    ))
    .await
    .expect("deleted");
    app.close().await.expect("close");

    // After a restart the first task is in the history, reopens with its messages and intent,
    // and resumes.
    let app = App::launch("tasks-restart", ws.path(), &dirs, &[])
        .await
        .expect("relaunch");
    app.click(&format!(".task-item[data-task-id=\"{first}\"]"))
        .await
        .expect("reopen");
    app.wait_until("[...document.querySelectorAll('.task-panel:not([hidden]) .message[data-role=\"assistant\"]')].some(m => m.textContent.includes('Architect here.'))").await.expect("history shown");
    app.wait_until("(document.querySelector('.task-panel:not([hidden]) .task-intent')?.textContent ?? '').includes('INT-A')").await.expect("intent kept");
    app.send("Go on").await.expect("send");
    app.wait_until("[...document.querySelectorAll('.task-panel:not([hidden]) .message[data-role=\"assistant\"]')].some(m => m.textContent.includes('Welcome back'))").await.expect("resumed");
    assert!(app
        .eval(&format!(
            "return document.querySelector('.task-item[data-task-id=\"{second}\"]')"
        ))
        .await
        .expect("eval")
        .is_null());
    let last = server.requests().last().cloned().expect("request").json();
    let texts: Vec<String> = last["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect();
    assert!(
        texts.iter().any(|t| t == "Plan the architecture"),
        "the resumed request carries the history"
    );
    app.screenshot("tasks-history").await.expect("screenshot");
    app.close().await.expect("close");
}

#[tokio::test]
async fn intent_status_order_and_deletion_from_the_gui() {
    let server = ScriptedServer::start(vec![]).await;
    let ws = workspace(Some(INTENTS), &[]);
    let dirs = UserDirs::new();
    dirs.settings_openai(&format!("{}/v1", server.base_url()), true);
    let app = App::launch("intents-manage", ws.path(), &dirs, &[])
        .await
        .expect("launch");
    let yaml = ws.path().join(".orchestration/active_intents.yaml");
    app.click("nav button[data-view=\"intents\"]")
        .await
        .expect("intents");
    app.click(".intent-item[data-intent-id=\"INT-C\"] [data-action=\"move-up\"]")
        .await
        .expect("move up");
    app.wait_until("[...document.querySelectorAll('.intent-item')].map(i => i.dataset.intentId).join(',') === 'INT-A,INT-C,INT-B'").await.expect("reordered");
    let text = std::fs::read_to_string(&yaml).expect("yaml");
    assert!(
        text.find("INT-C").unwrap_or(0) < text.find("INT-B").unwrap_or(0),
        "{text}"
    );

    app.click(".intent-item[data-intent-id=\"INT-B\"] [data-action=\"open\"]")
        .await
        .expect("open");
    app.choose("#intent-status", "BLOCKED")
        .await
        .expect("set status");
    app.click("#intent-save").await.expect("save");
    app.wait_until("document.querySelector('.intent-item[data-intent-id=\"INT-B\"] .chip')?.dataset.status === 'BLOCKED'").await.expect("blocked");
    assert!(std::fs::read_to_string(&yaml)
        .expect("yaml")
        .contains("status: BLOCKED"));

    app.click("#intent-delete").await.expect("delete");
    app.click("#confirm-dialog [data-action=\"cancel\"]")
        .await
        .expect("cancel");
    assert!(
        std::fs::read_to_string(&yaml)
            .expect("yaml")
            .contains("INT-B"),
        "cancel keeps it"
    );
    app.click("#intent-delete").await.expect("delete");
    app.click("#confirm-dialog [data-action=\"confirm\"]")
        .await
        .expect("confirm");
    app.wait_until("document.querySelector('.intent-item[data-intent-id=\"INT-B\"]') === null")
        .await
        .expect("gone");
    let text = std::fs::read_to_string(&yaml).expect("yaml");
    assert!(
        !text.contains("INT-B") && text.contains("INT-A") && text.contains("INT-C"),
        "{text}"
    );
    app.close().await.expect("close");
}

/// Every control a user can reach has an accessible name, and the views are keyboard-reachable.
#[tokio::test]
async fn every_control_has_a_label_in_every_view() {
    let server = ScriptedServer::start(vec![]).await;
    let ws = workspace(Some(INTENTS), &[]);
    let dirs = UserDirs::new();
    dirs.settings_openai(&format!("{}/v1", server.base_url()), true);
    let app = App::launch("a11y", ws.path(), &dirs, &[])
        .await
        .expect("launch");
    let check = "const unnamed = [];\
        for (const el of document.querySelectorAll('button, input, select, textarea, [role=\"tab\"]')) {\
          if (el.closest('[hidden]') || el.type === 'hidden') continue;\
          const labelled = (el.labels && el.labels.length) || el.getAttribute('aria-label') || el.getAttribute('aria-labelledby') || el.getAttribute('title') || (el.textContent || '').trim();\
          if (!labelled) unnamed.push(el.outerHTML.slice(0, 120));\
        }\
        return unnamed;";
    for view in ["chat", "intents", "trace", "settings"] {
        app.click(&format!("nav button[data-view=\"{view}\"]"))
            .await
            .expect("view");
        let unnamed = app.eval(check).await.expect("eval");
        assert_eq!(
            unnamed,
            json!([]),
            "{view}: controls without an accessible name"
        );
    }
    // Keyboard: Alt+2 switches to the intents view without a mouse.
    let body = app.find("body").await.expect("body");
    app.session
        .send_keys(&body, "\u{E00A}2")
        .await
        .expect("alt+2");
    app.wait_until("document.querySelector('nav button[data-view=\"intents\"]')?.getAttribute('aria-current') === 'page'").await.expect("keyboard navigation");
    app.close().await.expect("close");
}
