//! Background processes in the window: the approval card says the command keeps running, the
//! task's header lists the process with its live output once approved, it keeps running while
//! the task waits for the person, and the person's Stop ends it and everything it started.

use mandate_tests::app::{until, workspace, App, UserDirs};
use mandate_tests::llm_server::ScriptedServer;
use mandate_tests::processes::{running, start_in_background};
use mandate_tests::sse::openai;
use serde_json::json;

const INTENTS: &str = "active_intents:\n  - id: INT-1\n    name: Web app\n    status: IN_PROGRESS\n    owned_scope: [\"src/*.rs\"]\n";

#[tokio::test]
async fn a_background_process_is_listed_with_its_live_output_and_the_person_stops_it() {
    let marker = format!("mandate-window-bg-{}", std::process::id());
    let command = format!(
        "touch src/server.rs; echo 'dev server ready on :5173'; (exec -a {marker} sleep 300) & for i in $(seq 1 600); do echo \"GET /page/$i 200\"; sleep 0.3; done"
    );
    let mut script = start_in_background("INT-1", &command);
    script.extend([
        openai::turn()
            .text("The dev server runs in the background.")
            .reply(),
        openai::turn()
            .tool_call(
                "watch",
                "execute_command",
                json!({"command": format!("exec -a {marker}-watcher sleep 300"), "background": true}),
            )
            .reply(),
        openai::turn().text("The watcher runs.").reply(),
    ]);
    let server = ScriptedServer::start(script).await;
    let ws = workspace(Some(INTENTS), &[("src/main.rs", "fn main() {}\n")]);
    let dirs = UserDirs::new();
    dirs.settings_openai(&format!("{}/v1", server.base_url()), false);
    let app = App::launch("processes", ws.path(), &dirs, &[])
        .await
        .expect("launch");
    app.send("Start the dev server").await.expect("send");

    // It writes a file: the person is asked, and told it keeps running.
    app.wait_until("!!document.querySelector('#approval-panel .tag-background')")
        .await
        .expect("the card says it stays");
    app.screenshot("process-approval")
        .await
        .expect("screenshot");
    app.click("#approval-panel [data-action=\"approve\"]")
        .await
        .expect("approve");

    let panel = ".task-panel:not([hidden])";
    app.wait_until(&format!(
        "document.querySelector('{panel} .process')?.dataset.state === 'running'"
    ))
    .await
    .expect("listed as running");
    app.wait_until(&format!("(document.querySelector('{panel} .process-output')?.textContent ?? '').includes('GET /page/3 200')"))
        .await
        .expect("its output streams in");
    app.wait_until(&format!("[...document.querySelectorAll('{panel} .message[data-role=\"assistant\"]')].some(m => m.textContent.includes('runs in the background'))"))
        .await
        .expect("the model answered");
    assert_eq!(
        app.eval(&format!(
            "return document.querySelector('{panel} .process-command').textContent"
        ))
        .await
        .expect("command"),
        json!(command)
    );
    assert!(app
        .text(&format!("{panel} .task-processes summary"))
        .await
        .expect("summary")
        .contains("1 running"));
    // The task waits for the person; its process goes on.
    app.wait_until("document.querySelector('.task-panel .task-status')?.dataset.status === 'idle'")
        .await
        .expect("idle");
    assert!(!running(&marker).is_empty());
    app.screenshot("process-list").await.expect("screenshot");

    // The person stops it: all it started ends.
    app.click(&format!("{panel} .process-stop"))
        .await
        .expect("stop");
    app.wait_until(&format!(
        "document.querySelector('{panel} .process')?.dataset.state === 'stopped'"
    ))
    .await
    .expect("stopped");
    assert_eq!(
        app.text(&format!("{panel} .process-state"))
            .await
            .expect("state"),
        "stopped by you"
    );
    until("everything it started to end", || {
        running(&marker).is_empty()
    })
    .await
    .expect("gone");
    // The list is the host's: what the page asks is what it shows.
    let listed = app
        .ipc(json!({"type": "list_processes", "task_id": app.eval("return document.querySelector('.task-panel').dataset.taskId").await.expect("id")}))
        .await
        .expect("list");
    assert_eq!(
        listed["ok"]["processes"][0]["status"]["state"], "stopped",
        "{listed}"
    );
    // One left running when Mandate closes ends with it.
    app.send("Now start the watcher").await.expect("send");
    app.wait_until(&format!("document.querySelectorAll('{panel} .process').length === 2 && document.querySelector('{panel} .process:last-child')?.dataset.state === 'running'"))
        .await
        .expect("the watcher is listed");
    let watcher = format!("{marker}-watcher");
    assert!(!running(&watcher).is_empty());
    app.close().await.expect("close");
    until("the watcher to end with Mandate", || {
        running(&watcher).is_empty()
    })
    .await
    .expect("gone");
}
