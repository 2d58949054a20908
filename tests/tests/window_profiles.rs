//! Provider profiles in the window: the picker beside the message box chooses the profile a new
//! task runs on; each task's header says its profile and its requests go to that profile's
//! server only; Settings edits each profile in turn.

use mandate_tests::app::{workspace, App, UserDirs};
use mandate_tests::llm_server::ScriptedServer;
use mandate_tests::sse::openai;
use serde_json::json;

const SHOWN: &str = ".task-panel:not([hidden])";

#[tokio::test]
async fn each_task_runs_on_the_profile_chosen_when_it_started() {
    let one = ScriptedServer::start(vec![openai::turn().text("Answer from A.").reply()]).await;
    let two = ScriptedServer::start(vec![openai::turn().text("Answer from B.").reply()]).await;
    let (url_one, url_two) = (
        format!("{}/v1", one.base_url()),
        format!("{}/v1", two.base_url()),
    );
    let ws = workspace(None, &[("README.md", "# Demo\n")]);
    let dirs = UserDirs::new();
    std::fs::create_dir_all(dirs.config()).expect("mkdir");
    let profile = |id: &str, name: &str, url: &str, model: &str| json!({"id": id, "name": name, "provider": "openai", "preset": "custom", "base_url": url, "model": model});
    std::fs::write(
        dirs.config().join("settings.json"),
        json!({
            "approval": {"ask_before_writes": false, "ask_before_safe_commands": false},
            "profiles": [profile("remote-a", "Remote A", &url_one, "model-a"), profile("local-b", "Local B", &url_two, "model-b")],
            "default_profile": "remote-a",
        })
        .to_string(),
    )
    .expect("settings");
    let app = App::launch("profiles", ws.path(), &dirs, &[])
        .await
        .expect("launch");
    app.wait_until("!document.querySelector('#profile-picker').hidden && document.querySelectorAll('#profile-picker option').length === 2")
        .await
        .expect("the picker offers both profiles");
    assert_eq!(
        app.eval("return document.querySelector('#profile-picker').value")
            .await
            .expect("value"),
        json!("remote-a"),
        "the default profile first"
    );
    app.choose("#profile-picker", "local-b")
        .await
        .expect("pick");
    app.screenshot("profile-picker").await.expect("screenshot");
    app.send("Hello B").await.expect("send");
    app.wait_until(&format!(
        "[...document.querySelectorAll('{SHOWN} .message[data-role=\"assistant\"]')].some(m => m.textContent.includes('Answer from B.'))"
    ))
    .await
    .expect("B answers");
    assert_eq!(
        app.eval(&format!(
            "return document.querySelector('{SHOWN} .task-profile').textContent"
        ))
        .await
        .expect("header"),
        json!("Local B")
    );
    assert!(one.requests().is_empty(), "nothing went to A");
    assert_eq!(two.requests()[0].json()["model"], "model-b");
    // In a task the picker steps aside: the task keeps its profile.
    app.wait_until("document.querySelector('#profile-picker').hidden")
        .await
        .expect("hidden in a task");

    // A new task on the default profile goes to A.
    app.click("#new-task").await.expect("new task");
    app.wait_until("!document.querySelector('#profile-picker').hidden")
        .await
        .expect("picker back");
    app.choose("#profile-picker", "remote-a")
        .await
        .expect("pick");
    app.send("Hello A").await.expect("send");
    app.wait_until(&format!(
        "[...document.querySelectorAll('{SHOWN} .message[data-role=\"assistant\"]')].some(m => m.textContent.includes('Answer from A.'))"
    ))
    .await
    .expect("A answers");
    assert_eq!(
        app.eval(&format!(
            "return document.querySelector('{SHOWN} .task-profile').textContent"
        ))
        .await
        .expect("header"),
        json!("Remote A")
    );
    assert_eq!(one.requests()[0].json()["model"], "model-a");
    assert_eq!(two.requests().len(), 1, "B got only its own task");

    // Settings edit each profile in turn.
    app.click("[data-view=\"settings\"]")
        .await
        .expect("settings");
    app.wait_until("document.querySelectorAll('#settings-profile option').length === 3")
        .await
        .expect("both profiles and a new one");
    app.choose("#settings-profile", "local-b")
        .await
        .expect("pick");
    app.wait_until(&format!(
        "document.querySelector('#settings-base-url').value === '{url_two}' && document.querySelector('#settings-profile-name').value === 'Local B'"
    ))
    .await
    .expect("the card shows B");
}

/// Settings → Profiles by mode: a mode named there takes a new task in it to its profile (the
/// picker beside the message box follows the mode), and notifications can be turned off.
#[tokio::test]
async fn a_mode_on_a_profile_of_its_own_takes_its_new_tasks_there() {
    let one = ScriptedServer::start(vec![]).await;
    let two = ScriptedServer::start(vec![openai::turn().text("A plan from B.").reply()]).await;
    let (url_one, url_two) = (
        format!("{}/v1", one.base_url()),
        format!("{}/v1", two.base_url()),
    );
    let ws = workspace(None, &[("README.md", "# Demo\n")]);
    let dirs = UserDirs::new();
    std::fs::create_dir_all(dirs.config()).expect("mkdir");
    let profile = |id: &str, name: &str, url: &str, model: &str| json!({"id": id, "name": name, "provider": "openai", "preset": "custom", "base_url": url, "model": model});
    std::fs::write(
        dirs.config().join("settings.json"),
        json!({
            "approval": {"ask_before_writes": false, "ask_before_safe_commands": false},
            "profiles": [profile("remote-a", "Remote A", &url_one, "model-a"), profile("local-b", "Local B", &url_two, "model-b")],
            "default_profile": "remote-a",
        })
        .to_string(),
    )
    .expect("settings");
    let app = App::launch("mode-profiles", ws.path(), &dirs, &[])
        .await
        .expect("launch");
    app.click("[data-view=\"settings\"]")
        .await
        .expect("settings");
    app.wait_until(
        "document.querySelectorAll('#settings-mode-profile-architect option').length === 3",
    )
    .await
    .expect("the architect mode offers both profiles");
    app.choose("#settings-mode-profile-architect", "local-b")
        .await
        .expect("pick");
    app.click("#settings-notifications").await.expect("off");
    app.eval("document.querySelector('#settings-mode-profiles').scrollIntoView({block: 'center'}); return true")
        .await
        .expect("scroll");
    app.screenshot("mode-profiles").await.expect("screenshot");
    app.click("#settings-save").await.expect("save");
    app.wait_until("(document.querySelector('#settings-saved')?.textContent ?? '') === 'Saved.'")
        .await
        .expect("saved");
    let saved: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dirs.config().join("settings.json")).expect("settings"),
    )
    .expect("json");
    assert_eq!(saved["mode_profiles"], json!({"architect": "local-b"}));
    assert_eq!(saved["notifications"], json!(false));

    app.click("[data-view=\"chat\"]").await.expect("chat");
    app.choose("#mode-picker", "architect").await.expect("mode");
    app.wait_until("document.querySelector('#profile-picker').value === 'local-b'")
        .await
        .expect("the picker follows the mode");
    app.send("Plan the parser").await.expect("send");
    app.wait_until(&format!(
        "[...document.querySelectorAll('{SHOWN} .message[data-role=\"assistant\"]')].some(m => m.textContent.includes('A plan from B.'))"
    ))
    .await
    .expect("B answers");
    assert_eq!(
        app.eval(&format!(
            "return document.querySelector('{SHOWN} .task-profile').textContent"
        ))
        .await
        .expect("header"),
        json!("Local B")
    );
    assert!(one.requests().is_empty(), "nothing went to A");
}
