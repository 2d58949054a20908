//! The API key in the real OS keyring: a round trip through Secret Service (gnome-keyring in the
//! test run's private D-Bus session), and through the app's settings view, after which the key
//! is in the keyring and in no IPC payload, log line or file the app wrote.

use mandate_core::profiles::key_name;
use mandate_core::protocol::ProviderKind;
use mandate_core::secrets::{api_key_name, KeyringStore, Secret, SecretStore};
use mandate_tests::app::{workspace, App, UserDirs};

fn keyring_available() -> Result<(), String> {
    KeyringStore.probe().map_err(|e| {
        format!("{e}\nThese tests need a Secret Service: run them through `make test`, which starts gnome-keyring in a private D-Bus session.")
    })
}

#[test]
fn a_secret_round_trips_through_the_real_keyring() {
    keyring_available().expect("keyring");
    let store = KeyringStore;
    let name = format!("test-roundtrip-{}", std::process::id());
    store.set(&name, &Secret::new("s3cr3t-value")).expect("set");
    assert_eq!(
        store.get(&name).expect("get"),
        Some(Secret::new("s3cr3t-value"))
    );
    store.set(&name, &Secret::new("second")).expect("overwrite");
    assert_eq!(store.get(&name).expect("get"), Some(Secret::new("second")));
    store.delete(&name).expect("delete");
    assert_eq!(store.get(&name).expect("get"), None);
    store.delete(&name).expect("deleting twice is fine");
}

fn files_containing(dir: &std::path::Path, needle: &str) -> Vec<String> {
    let mut hits = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return hits;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            hits.extend(files_containing(&path, needle));
        } else if std::fs::read(&path)
            .map(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes()))
            .unwrap_or(false)
        {
            hits.push(path.display().to_string());
        }
    }
    hits
}

#[tokio::test]
async fn the_key_typed_in_settings_lands_in_the_keyring_and_nowhere_else() {
    keyring_available().expect("keyring");
    let key = format!("sk-ui-{}-{}", std::process::id(), uuid_like());
    let ws = workspace(Some("active_intents: []\n"), &[]);
    let dirs = UserDirs::new();
    dirs.settings_openai("http://127.0.0.1:9/v1", true);
    let app = App::launch("settings-key", ws.path(), &dirs, &[])
        .await
        .expect("launch");
    app.click("nav button[data-view=\"settings\"]")
        .await
        .expect("open settings");
    app.type_into("#settings-api-key", &key)
        .await
        .expect("type key");
    app.click("#settings-save-key").await.expect("save key");
    app.wait_until(
        "(document.querySelector('#settings-key-status')?.textContent ?? '').includes('keyring')",
    )
    .await
    .expect("status");
    let field = app
        .eval("return document.querySelector('#settings-api-key').value")
        .await
        .expect("field");
    assert_eq!(field, "", "the field is cleared after saving");
    app.screenshot("settings").await.expect("screenshot");

    // Kept for the default profile and the origin it points at, and for nothing else.
    let entry = key_name("default", "http://127.0.0.1:9");
    let stored = KeyringStore.get(&entry).expect("keyring get");
    assert_eq!(stored, Some(Secret::new(&key)));
    assert_eq!(
        KeyringStore
            .get(&api_key_name(ProviderKind::Openai))
            .expect("keyring get"),
        None,
        "no key for a whole wire format"
    );

    // Reload the state: the UI learns only that a key is set.
    let state = app
        .ipc(serde_json::json!({"type": "get_state"}))
        .await
        .expect("ipc");
    assert_eq!(state["ok"]["state"]["settings"]["api_key_set"], true);
    assert!(!state.to_string().contains(&key));
    let trace = std::fs::read_to_string(&app.ipc_trace).expect("trace");
    assert!(
        trace.contains("\"api_key_set\":true"),
        "the trace saw the settings"
    );
    assert!(
        !trace.contains(&key),
        "the key crossed the boundary to the page"
    );
    let log = std::fs::read_to_string(&app.log).unwrap_or_default();
    assert!(!log.contains(&key), "the key is in a log line");
    for dir in [ws.path().to_path_buf(), dirs.config(), dirs.data()] {
        let hits = files_containing(&dir, &key);
        assert!(hits.is_empty(), "the key was written to {hits:?}");
    }
    app.click("#settings-clear-key").await.expect("clear");
    app.wait_until(
        "(document.querySelector('#settings-key-status')?.textContent ?? '').startsWith('No key')",
    )
    .await
    .expect("cleared");
    assert_eq!(KeyringStore.get(&entry).expect("get"), None);
    app.close().await.expect("close");
}

#[tokio::test]
async fn without_a_keyring_the_settings_view_says_so() {
    let ws = workspace(None, &[]);
    let dirs = UserDirs::new();
    let app = App::launch(
        "no-keyring",
        ws.path(),
        &dirs,
        &[("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")],
    )
    .await
    .expect("launch");
    app.click("nav button[data-view=\"settings\"]")
        .await
        .expect("settings");
    app.wait_until("(document.querySelector('#settings-keyring-error')?.textContent ?? '').includes('keyring')").await.expect("keyring error shown");
    app.type_into("#settings-api-key", "sk-nowhere")
        .await
        .expect("type");
    app.click("#settings-save-key").await.expect("save");
    app.wait_until(
        "(document.querySelector('#settings-error')?.textContent ?? '').includes('keyring')",
    )
    .await
    .expect("save error shown");
    assert!(
        files_containing(&dirs.config(), "sk-nowhere").is_empty(),
        "no plaintext fallback"
    );
    app.screenshot("settings-no-keyring")
        .await
        .expect("screenshot");
    app.close().await.expect("close");
}

fn uuid_like() -> String {
    format!(
        "{:x}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    )
}

/// An MCP server's secret: stored with `mandate mcp secret` (read from stdin), in the keyring
/// only, given to the server in its environment, and scrubbed from what comes back.
#[tokio::test]
async fn an_mcp_server_secret_reaches_the_server_and_never_comes_back() {
    use mandate_tests::cli::{mandate, run_openai};
    use mandate_tests::llm_server::ScriptedServer;
    use mandate_tests::mcp::{stdio_entry, write_user_file};
    use mandate_tests::sse::openai;
    use serde_json::json;
    use tokio::io::AsyncWriteExt;

    keyring_available().expect("keyring");
    let ws = workspace(Some("active_intents: []\n"), &[]);
    let dirs = UserDirs::new();
    let server_name = format!("kr{}", std::process::id());
    let value = format!("mcp-token-{}", uuid_like());
    write_user_file(
        &dirs.config(),
        json!({"mcpServers": {&server_name: stdio_entry(&[], json!({"MCP_TEST_TOKEN": "${TOKEN}"}))}}),
    );
    let ws_arg = ws.path().display().to_string();

    // Not stored yet: the server does not start, and the note says which secret is missing.
    let out = mandate(
        &["mcp", "list", "--json", "--workspace", &ws_arg],
        &dirs,
        &[],
    )
    .await;
    assert!(out.stdout.contains("`TOKEN` is not set"), "{}", out.stdout);

    let mut child = tokio::process::Command::new(mandate_tests::app::mandate_bin())
        .args([
            "mcp",
            "secret",
            &server_name,
            "TOKEN",
            "--workspace",
            &ws_arg,
        ])
        .envs(dirs.env())
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(format!("{value}\n").as_bytes())
        .await
        .expect("write");
    drop(stdin);
    assert!(child.wait().await.expect("wait").success());

    let tool = format!("mcp__{server_name}__env_report");
    let server = ScriptedServer::start(vec![
        openai::turn().tool_call("e", &tool, json!({})).reply(),
        openai::turn()
            .tool_call("end", "attempt_completion", json!({"result": "done"}))
            .reply(),
    ])
    .await;
    let out = run_openai(ws.path(), &server.base_url(), &[], "report", &dirs).await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let report = server.tool_result_in(1, "e").expect("report");
    assert!(
        report.contains("MCP_TEST_TOKEN") && report.contains("token: [REDACTED]"),
        "{report}"
    );
    for dir in [ws.path().to_path_buf(), dirs.config(), dirs.data()] {
        let hits = files_containing(&dir, &value);
        assert!(hits.is_empty(), "the secret was written to {hits:?}");
    }
    assert!(!out.stdout.contains(&value));

    let out = mandate(
        &[
            "mcp",
            "secret",
            &server_name,
            "TOKEN",
            "--clear",
            "--workspace",
            &ws_arg,
        ],
        &dirs,
        &[],
    )
    .await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
}
