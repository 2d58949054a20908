//! Provider profiles in the window: the picker beside the message box chooses the profile a new
//! task runs on; each task's header says its profile and its requests go to that profile's
//! server only; Settings edits each profile in turn.

use mandate_tests::app::{workspace, App, UserDirs};
use mandate_tests::llm_server::ScriptedServer;
use mandate_tests::sse::openai;
use serde_json::json;

const SHOWN: &str = ".task-panel:not([hidden])";

/// Waits until the open task's transcript holds an answer with `text`.
async fn answered(app: &App, text: &str) -> anyhow::Result<()> {
    app.wait_until(&format!(
        "[...document.querySelectorAll('{SHOWN} .message[data-role=\"assistant\"]')].some(m => m.textContent.includes('{text}'))"
    ))
    .await
}

/// The profile the open task's header names.
async fn header_profile(app: &App) -> serde_json::Value {
    app.eval(&format!(
        "return document.querySelector('{SHOWN} .task-profile').textContent"
    ))
    .await
    .expect("header")
}

/// Settings with these OpenAI-compatible profiles (id, name, base URL, model), the first the
/// default, and no approval asked for writes.
fn with_profiles(dirs: &UserDirs, profiles: &[(&str, &str, &str, &str)]) {
    std::fs::create_dir_all(dirs.config()).expect("mkdir");
    let profiles: Vec<_> = profiles
        .iter()
        .map(|(id, name, url, model)| json!({"id": id, "name": name, "provider": "openai", "preset": "custom", "base_url": url, "model": model}))
        .collect();
    std::fs::write(
        dirs.config().join("settings.json"),
        json!({
            "approval": {"ask_before_writes": false, "ask_before_safe_commands": false},
            "default_profile": profiles[0]["id"],
            "profiles": profiles,
        })
        .to_string(),
    )
    .expect("settings");
}

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
    with_profiles(
        &dirs,
        &[
            ("remote-a", "Remote A", &url_one, "model-a"),
            ("local-b", "Local B", &url_two, "model-b"),
        ],
    );
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
    answered(&app, "Answer from B.").await.expect("B answers");
    assert_eq!(header_profile(&app).await, json!("Local B"));
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
    answered(&app, "Answer from A.").await.expect("A answers");
    assert_eq!(header_profile(&app).await, json!("Remote A"));
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
    with_profiles(
        &dirs,
        &[
            ("remote-a", "Remote A", &url_one, "model-a"),
            ("local-b", "Local B", &url_two, "model-b"),
        ],
    );
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
    answered(&app, "A plan from B.").await.expect("B answers");
    assert_eq!(header_profile(&app).await, json!("Local B"));
    assert!(one.requests().is_empty(), "nothing went to A");
}

/// The dialog Mandate shows outside the page: found by its title on the app's display, then
/// answered from the keyboard (`alt+u` accepts, Escape declines).
fn answer_desktop_dialog(display: &str, title: &str, keys: &str) {
    let xdotool = |args: &[&str]| {
        let out = std::process::Command::new("xdotool")
            .args(args)
            .env("DISPLAY", display)
            .output()
            .expect("xdotool");
        assert!(
            out.status.success(),
            "xdotool {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let found = xdotool(&["search", "--sync", "--name", title]);
    let window = found.lines().last().expect("the dialog").to_string();
    xdotool(&["windowfocus", "--sync", &window]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    // The whole display, the dialog over the window, as the person sees it.
    let shot = mandate_tests::app::artifacts("screenshots")
        .join(format!("desktop-dialog-{}.png", keys.replace('+', "-")));
    let _ = std::process::Command::new("import")
        .args(["-window", "root"])
        .arg(&shot)
        .env("DISPLAY", display)
        .status();
    xdotool(&["key", "--clearmodifiers", keys]);
}

/// A key moves to another server only when the person says so in the desktop's own dialog: a
/// page asking for the move by itself (as one under someone else's control would) gets the
/// dialog too, and a "no" keeps the key where it was given.
#[tokio::test]
async fn a_key_moves_to_another_server_only_when_the_person_says_so_outside_the_page() {
    let one = ScriptedServer::start(vec![]).await;
    let two = ScriptedServer::start(vec![openai::turn().text("The key came.").reply()]).await;
    let (url_one, url_two) = (
        format!("{}/v1", one.base_url()),
        format!("{}/v1", two.base_url()),
    );
    let ws = workspace(None, &[("README.md", "# Demo\n")]);
    let dirs = UserDirs::new();
    with_profiles(&dirs, &[("remote-a", "Remote A", &url_one, "model-a")]);
    let app = App::launch("move-key", ws.path(), &dirs, &[])
        .await
        .expect("launch");
    let set = app
        .ipc(json!({"type": "set_api_key", "provider": "openai", "api_key": "sk-move-test-0001", "profile": "remote-a"}))
        .await
        .expect("ipc");
    assert!(set.get("ok").is_some(), "{set}");
    // The profile pointed at the second server: its key stays behind.
    let repoint = app
        .ipc(json!({"type": "save_settings", "settings": {
            "provider": "openai", "preset": "custom", "base_url": url_two, "model": "model-b",
            "custom_instructions": "", "editor": "auto", "profile": "remote-a",
            "approval": {"ask_before_writes": false, "ask_before_safe_commands": false, "switch_modes_without_asking": false},
        }}))
        .await
        .expect("ipc");
    assert!(repoint.get("ok").is_some(), "{repoint}");

    // The page asks for the move by itself: the desktop's dialog comes up, the person says no.
    let title = "Send the Remote A key to";
    let display = app.display_name().to_string();
    let (moved, ()) = tokio::join!(
        app.ipc(json!({"type": "move_profile_key", "profile": "remote-a"})),
        async {
            let display = display.clone();
            tokio::task::spawn_blocking(move || answer_desktop_dialog(&display, title, "Escape"))
                .await
                .expect("answered");
        }
    );
    let moved = moved.expect("ipc");
    assert!(
        moved["err"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("not confirmed"),
        "{moved}"
    );
    // A task on the profile is refused, saying why; nothing reaches the new server.
    let refused = app
        .ipc(json!({"type": "start_task", "text": "Hello", "profile": "remote-a"}))
        .await
        .expect("ipc");
    assert!(
        refused["err"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("is not sent there until you let it go"),
        "{refused}"
    );
    assert!(
        two.requests().is_empty(),
        "the key stayed behind, and so did the task"
    );

    // In Settings, the person moves it and says yes in the dialog.
    app.click("[data-view=\"settings\"]")
        .await
        .expect("settings");
    app.wait_until("!document.querySelector('#settings-key-elsewhere').hidden")
        .await
        .expect("the key held back is said");
    let (clicked, ()) = tokio::join!(app.click("#settings-key-move"), async {
        let display = display.clone();
        tokio::task::spawn_blocking(move || answer_desktop_dialog(&display, title, "alt+u"))
            .await
            .expect("answered");
    });
    clicked.expect("click");
    app.wait_until("document.querySelector('#settings-key-elsewhere').hidden")
        .await
        .expect("moved");
    app.click("[data-view=\"chat\"]").await.expect("chat");
    app.send("Hello again").await.expect("send");
    answered(&app, "The key came.")
        .await
        .expect("answered with the key");
    assert_eq!(
        two.requests()[0].header("authorization"),
        Some("Bearer sk-move-test-0001")
    );
    assert!(one.requests().is_empty());
}
