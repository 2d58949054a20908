//! The person is told when Mandate waits for them, in the real window: with the window focused
//! nothing but the card; with the focus elsewhere (taken away on the X display, as going back
//! to the editor does) a desktop notification through the session bus's notification service
//! (a recording one here) and a taskbar entry that asks for attention; clicking the
//! notification brings the window up on the task, and deciding takes the notification down.
//! Then dunst shows one for real, for the screenshot.

use std::time::Duration;

use mandate_tests::app::{until, workspace, App, UserDirs};
use mandate_tests::llm_server::ScriptedServer;
use mandate_tests::notifications::{Call, Dunst, FakeNotifications};
use mandate_tests::sse::openai;
use mandate_tests::x11::XDisplay;
use pretty_assertions::assert_eq;
use serde_json::json;

const INTENTS: &str = r#"active_intents:
  - id: INT-001
    name: Shed
    status: IN_PROGRESS
    owned_scope: ["src/**"]
"#;

fn write(id: &str, path: &str) -> mandate_tests::llm_server::Reply {
    openai::turn()
        .tool_call(
            id,
            "write_to_file",
            json!({"path": path, "content": "blue\n", "intent_id": "INT-001", "mutation_class": "INTENT_EVOLUTION"}),
        )
        .reply()
}

fn script() -> Vec<mandate_tests::llm_server::Reply> {
    vec![
        openai::turn()
            .tool_call("s", "select_active_intent", json!({"intent_id": "INT-001"}))
            .reply(),
        write("w1", "src/wall.txt"),
        openai::turn().text("The wall is blue.").reply(),
        write("w2", "src/door.txt"),
        openai::turn().text("The door is blue.").reply(),
        openai::turn()
            .tool_call(
                "q",
                "ask_followup_question",
                json!({"question": "Blue or red for the roof?", "options": ["Blue", "Red"]}),
            )
            .reply(),
        openai::turn().text("Blue it is.").reply(),
    ]
}

/// Waits until the window is told, by the page's own account, that it has (not) the focus.
async fn page_focus(app: &App, focused: bool) {
    let js = format!("document.hasFocus() === {focused}");
    app.wait_until(&js)
        .await
        .expect("the page saw the focus change");
}

async fn until_notes(fake: &FakeNotifications, n: usize) -> Vec<Call> {
    until(&format!("{n} notifications"), || fake.notes().len() >= n)
        .await
        .expect("notified");
    fake.notes()
}

#[tokio::test]
async fn an_unfocused_window_notifies_once_asks_for_attention_and_a_click_opens_the_task() {
    let fake = FakeNotifications::start().expect("a notification service on the session bus");
    let server = ScriptedServer::start(script()).await;
    let ws = workspace(Some(INTENTS), &[]);
    let dirs = UserDirs::new();
    dirs.settings_openai(&format!("{}/v1", server.base_url()), true);
    let app = App::launch("notifications", ws.path(), &dirs, &[])
        .await
        .expect("launch");
    // No window manager: the keyboard follows the pointer, which is over the window.
    let x = XDisplay::open(app.display_name()).expect("the app's display");
    page_focus(&app, true).await;

    // Focused: the card is enough.
    app.send("Paint the shed <blue> & quick")
        .await
        .expect("send");
    app.click("#approval-panel [data-action=\"approve\"]")
        .await
        .expect("approve the wall");
    app.wait_until("document.body.textContent.includes('The wall is blue.')")
        .await
        .expect("first answer");
    let task_id = app
        .eval("return document.querySelector('.task-panel:not([hidden])').dataset.taskId")
        .await
        .expect("task id");
    let task_id = task_id.as_str().expect("an id").to_string();

    // The person goes back to their editor; the next wait is told to them.
    x.unfocus();
    page_focus(&app, false).await;
    let sent = app
        .ipc(json!({"type": "send_message", "task_id": task_id, "text": "Now the door"}))
        .await
        .expect("send");
    assert!(sent.get("ok").is_some(), "{sent}");
    let notes = until_notes(&fake, 1).await;
    let Call::Notify { id, .. } = notes[0].clone() else {
        unreachable!()
    };
    assert_eq!(
        notes,
        vec![Call::Notify {
            app_name: "Mandate".into(),
            replaces_id: 0,
            app_icon: "dev.mandate.app".into(),
            summary: "Mandate needs your approval".into(),
            // The service reads markup: the task's own words are escaped.
            body: "Paint the shed &lt;blue&gt; &amp; quick\nCreate src/door.txt".into(),
            actions: vec!["default".into(), "Show the task".into()],
            hints: vec!["desktop-entry".into(), "urgency".into()],
            expire_timeout: -1,
            id,
        }],
        "the focused wait was not notified, the unfocused one once"
    );
    assert!(app
        .text("#approval-panel")
        .await
        .expect("card")
        .contains("src/door.txt"));

    // Elsewhere in the window. A program that is not the notification service says the
    // notification was clicked: nothing happens.
    app.click("nav button[data-view=\"intents\"]")
        .await
        .expect("intents view");
    FakeNotifications::forge_click(id).expect("forged click");
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        app.eval("return document.getElementById('view-chat').hidden")
            .await
            .expect("view"),
        json!(true),
        "a forged click moved the window"
    );
    // The notification is clicked: the window comes up on the task.
    fake.click(id);
    app.wait_until(&format!(
        "!document.getElementById('view-chat').hidden && !document.querySelector('.task-panel[data-task-id=\"{task_id}\"]').hidden"
    ))
    .await
    .expect("the task is shown");
    until("the window to take the focus", || x.focus() > 1)
        .await
        .expect("focused by the click");
    page_focus(&app, true).await;
    // The window the click focused asks for attention while the task still waits.
    let window = x.focus();
    assert!(x.urgent(window), "the taskbar entry asks for attention");

    // Deciding ends the wait: the notification is taken down and the taskbar stops asking.
    app.click("#approval-panel [data-action=\"approve\"]")
        .await
        .expect("approve the door");
    until("the notification to be closed", || {
        fake.calls().contains(&Call::Close(id))
    })
    .await
    .expect("closed");
    until("the taskbar to stop asking", || !x.urgent(window))
        .await
        .expect("not urgent");
    app.wait_until("document.body.textContent.includes('The door is blue.')")
        .await
        .expect("second answer");
    assert_eq!(fake.notes().len(), 1, "{:?}", fake.calls());
    fake.stop();

    // A real notification service on the app's display, for the screenshot.
    let dunst = Dunst::start(app.display_name()).expect("dunst");
    until("dunst to serve", || dunst.displayed().is_some())
        .await
        .expect("dunst serves");
    x.unfocus();
    page_focus(&app, false).await;
    let sent = app
        .ipc(json!({"type": "send_message", "task_id": task_id, "text": "And the roof?"}))
        .await
        .expect("send");
    assert!(sent.get("ok").is_some(), "{sent}");
    app.find(".question[data-call-id=\"q\"]")
        .await
        .expect("the question");
    until("dunst to show the notification", || {
        dunst.displayed() == Some(1)
    })
    .await
    .expect("shown");
    // Drawn a frame after it is counted.
    tokio::time::sleep(Duration::from_millis(300)).await;
    app.screenshot("notification").await.expect("screenshot");
    // Before the display goes away with the app (Xlib ends a process whose display is gone).
    drop(x);
    app.close().await.expect("close");
}
