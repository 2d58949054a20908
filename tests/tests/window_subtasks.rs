//! Subtasks in the window: an Orchestrator task hands work to a child; the child opens in front
//! with a breadcrumb back to its parent, nests under it in the task list, and may wait for the
//! person; its result reaches the parent, whose transcript shows the subtask's card.

use mandate_tests::app::{workspace, App, UserDirs};
use mandate_tests::llm_server::ScriptedServer;
use mandate_tests::sse::openai;
use serde_json::json;

const INTENTS: &str = r#"active_intents:
  - id: INT-1
    name: Sources
    status: IN_PROGRESS
    owned_scope: ["src/**"]
  - id: INT-2
    name: The parser
    status: IN_PROGRESS
    owned_scope: ["src/parser/**"]
"#;

const SHOWN: &str = ".task-panel:not([hidden])";

#[tokio::test]
async fn a_subtask_opens_with_a_breadcrumb_back_to_its_parent_and_answers_it() {
    let server = ScriptedServer::start(vec![
        // The parent, in Orchestrator mode.
        openai::turn().tool_call("s", "select_active_intent", json!({"intent_id": "INT-1"})).reply(),
        openai::turn().tool_call("n", "new_task", json!({"mode": "code", "message": "Write the parser in src/parser/mod.rs", "intent_id": "INT-2"})).reply(),
        // The child asks the person, then completes.
        openai::turn().text("Which grammar should the parser use?").reply(),
        openai::turn().tool_call("cd", "attempt_completion", json!({"result": "The PEG parser is written."})).reply(),
        // The parent completes with the child's result.
        openai::turn().tool_call("d", "attempt_completion", json!({"result": "Delegated and done."})).reply(),
    ])
    .await;
    let ws = workspace(Some(INTENTS), &[]);
    let dirs = UserDirs::new();
    dirs.settings_openai(&format!("{}/v1", server.base_url()), false);
    let app = App::launch("subtasks", ws.path(), &dirs, &[])
        .await
        .expect("launch");
    app.wait_until("[...document.querySelectorAll('#mode-picker option')].some(o => o.value === 'orchestrator')")
        .await
        .expect("modes");
    app.choose("#mode-picker", "orchestrator")
        .await
        .expect("pick");
    app.send("Add a parser").await.expect("send");

    // The child opens in front, in Code mode, under the narrower intent, with the way back.
    app.wait_until(&format!(
        "[...document.querySelectorAll('{SHOWN} .message[data-role=\"assistant\"]')].some(m => m.textContent.includes('Which grammar'))"
    ))
    .await
    .expect("the child's question shows in front");
    assert_eq!(
        app.text(&format!("{SHOWN} .task-mode"))
            .await
            .expect("mode"),
        "Code"
    );
    assert_eq!(
        app.text(&format!("{SHOWN} .task-intent .intent-id"))
            .await
            .expect("intent"),
        "INT-2"
    );
    assert_eq!(
        app.eval(&format!(
            "return document.querySelector('{SHOWN} .task-breadcrumb .crumb').textContent"
        ))
        .await
        .expect("crumb"),
        json!("Add a parser")
    );
    // The task list nests the child under its parent, which waits for it.
    let list = app
        .eval("return [...document.querySelectorAll('#task-list .task-item')].map(li => [li.querySelector('.task-item-title').textContent, li.dataset.depth, li.dataset.status])")
        .await
        .expect("list");
    assert_eq!(list[0][0], json!("Add a parser"));
    assert_eq!(list[0][1], json!("0"));
    assert_eq!(list[0][2], json!("waiting_for_subtask"));
    assert_eq!(list[1][1], json!("1"), "{list}");
    app.screenshot("subtask-breadcrumb")
        .await
        .expect("screenshot");

    // Back to the parent by the breadcrumb: its card shows the subtask at work.
    app.click(&format!("{SHOWN} .task-breadcrumb .crumb"))
        .await
        .expect("crumb");
    app.wait_until(&format!(
        "document.querySelector('{SHOWN} .subtask-card[data-status=\"running\"]') !== null"
    ))
    .await
    .expect("the parent's card");
    assert_eq!(
        app.text(&format!("{SHOWN} .task-status"))
            .await
            .expect("status"),
        "Waiting for a subtask"
    );
    // And to the child again from the card; the person answers it.
    app.click(&format!("{SHOWN} .subtask-card [data-open-subtask]"))
        .await
        .expect("open");
    app.wait_until(&format!(
        "document.querySelector('{SHOWN} .task-breadcrumb:not([hidden])') !== null"
    ))
    .await
    .expect("the child in front");
    app.send("Use a PEG grammar.")
        .await
        .expect("answer the child");

    // The child completes; the parent comes back to the front with the result in its card.
    app.wait_until(&format!(
        "(document.querySelector('{SHOWN} .subtask-card[data-status=\"completed\"]')?.textContent ?? '').includes('The PEG parser is written.')"
    ))
    .await
    .expect("the parent shows the child's result");
    app.wait_until(&format!(
        "document.querySelector('{SHOWN} .task-status')?.textContent === 'Completed'"
    ))
    .await
    .expect("the parent completed");
    let answer = server
        .tool_result_in(4, "n")
        .expect("the result reached the parent's model");
    assert!(answer.contains("The PEG parser is written."), "{answer}");
    app.screenshot("subtask-card").await.expect("screenshot");
}
