//! The real app in a real window (WebKitGTK under Xvfb, driven by WebDriver): streaming chat,
//! the locked-down webview, the IPC boundary, provider errors, stop, links and settings.

use std::time::Duration;

use mandate_tests::app::{until_file_contains, workspace, App, UserDirs};
use mandate_tests::llm_server::{Reply, ScriptedServer};
use mandate_tests::sse::openai;
use serde_json::{json, Value};

const INTENTS: &str =
    "active_intents:\n  - id: INT-1\n    name: Docs\n    owned_scope: [\"docs/**\"]\n";

async fn launch(name: &str, server: &ScriptedServer) -> (App, tempfile::TempDir, UserDirs) {
    let ws = workspace(Some(INTENTS), &[("docs/a.md", "# A\n")]);
    let dirs = UserDirs::new();
    dirs.settings_openai(&format!("{}/v1", server.base_url()), true);
    let app = App::launch(name, ws.path(), &dirs, &[])
        .await
        .expect("launch the app");
    (app, ws, dirs)
}

#[tokio::test]
async fn a_typed_message_streams_back_as_sanitized_html() {
    let server = ScriptedServer::start(vec![openai::turn()
        .delay_ms(40)
        .text("Here is **x** and a list:\n\n- one\n- two\n\n```rust\nfn main() {}\n```\n\nDone.")
        .usage(12, 30)
        .reply()])
    .await;
    let (app, _ws, _dirs) = launch("chat-stream", &server).await;
    app.send("Hello there").await.expect("send");
    app.wait_until("document.querySelector('.message[data-role=\"user\"]')?.textContent.includes('Hello there')").await.expect("user message");
    app.wait_until("document.querySelector('.message[data-role=\"assistant\"] .content strong')?.textContent === 'x'").await.expect("bold rendered");
    app.wait_until("document.querySelector('.message[data-role=\"assistant\"] .content')?.textContent.includes('Done.')").await.expect("complete answer");
    let code_class = app.eval("return document.querySelector('.message[data-role=\"assistant\"] pre code')?.className").await.expect("eval");
    assert!(
        code_class.as_str().unwrap_or("").contains("language-rust"),
        "{code_class}"
    );
    app.wait_until("/12 in.*30 out/.test(document.querySelector('.task-panel .task-usage')?.textContent ?? '')").await.expect("tokens shown");
    app.screenshot("chat").await.expect("screenshot");

    // The answer streamed: several coalesced re-renders, fewer than the deltas that arrived.
    let trace = std::fs::read_to_string(&app.ipc_trace).expect("ipc trace");
    let deltas = trace
        .lines()
        .filter(|l| l.contains("\"type\":\"message_delta\""))
        .count();
    let sent_deltas = openai::turn()
        .text("Here is **x** and a list:\n\n- one\n- two\n\n```rust\nfn main() {}\n```\n\nDone.")
        .chunks()
        .len();
    assert!(
        deltas >= 2 && deltas < sent_deltas,
        "re-renders: {deltas}, deltas sent: {sent_deltas}"
    );
    for line in trace.lines() {
        let v: Value = serde_json::from_str(line).expect("trace line");
        if let Some(html) = v["payload"]["safe_html"].as_str() {
            assert!(
                !html.contains("<script") && !html.contains("onerror"),
                "{html}"
            );
        }
    }
    app.close().await.expect("close");
}

#[tokio::test]
async fn script_injected_at_run_time_is_blocked_by_the_csp() {
    let server = ScriptedServer::start(vec![]).await;
    let (app, _ws, _dirs) = launch("csp", &server).await;
    let result = app
        .session
        .execute_async(
            "const done = arguments[arguments.length - 1];\
             const seen = [];\
             document.addEventListener('securitypolicyviolation', e => seen.push(e.violatedDirective));\
             const s = document.createElement('script');\
             s.textContent = 'window.__injected = true;';\
             document.body.appendChild(s);\
             const d = document.createElement('div');\
             d.setAttribute('onclick', 'window.__clicked = true');\
             document.body.appendChild(d); d.click();\
             const report = () => done({ran: window.__injected === true, clicked: window.__clicked === true, seen,\
                                        frozen: Object.isFrozen(Object.prototype)});\
             const check = () => seen.length >= 2 ? report() : setTimeout(check, 20);\
             check();",
            vec![],
        )
        .await
        .expect("inject");
    assert_eq!(result["ran"], false, "{result}");
    assert_eq!(result["clicked"], false, "{result}");
    assert_eq!(result["frozen"], true, "freezePrototype is on");
    let seen: Vec<String> = serde_json::from_value(result["seen"].clone()).expect("list");
    assert!(
        seen.iter().all(|d| d.starts_with("script-src")),
        "the script and the handler each raised a CSP violation: {seen:?}"
    );
    app.close().await.expect("close");
}

#[tokio::test]
async fn html_and_handlers_in_model_output_do_not_run() {
    let answer = "Look: <img src=x onerror=\"window.__xss='img'\"> and <b onclick=\"window.__xss='b'\">bold?</b> \
                  [click me](javascript:window.__xss='link') <script>window.__xss='script'</script>";
    let server = ScriptedServer::start(vec![openai::turn().text(answer).reply()]).await;
    let (app, _ws, _dirs) = launch("xss", &server).await;
    app.send("show me html").await.expect("send");
    app.wait_until("document.querySelector('.message[data-role=\"assistant\"] .content')?.textContent.includes('bold?')").await.expect("answer");
    let facts = app
        .eval(
            "const c = document.querySelector('.message[data-role=\"assistant\"] .content');\
             for (const el of c.querySelectorAll('*')) { el.click?.(); }\
             return {xss: window.__xss ?? null, imgs: c.querySelectorAll('img').length,\
                     handlers: [...c.querySelectorAll('*')].filter(e => [...e.attributes].some(a => a.name.startsWith('on'))).length,\
                     scripts: c.querySelectorAll('script').length, text: c.textContent,\
                     jsLinks: [...c.querySelectorAll('a')].filter(a => !/^(https?|mailto):/.test(a.getAttribute('href') || '')).length};",
        )
        .await
        .expect("eval");
    assert_eq!(facts["xss"], Value::Null, "{facts}");
    assert_eq!(facts["imgs"], 0);
    assert_eq!(facts["handlers"], 0);
    assert_eq!(facts["scripts"], 0);
    assert_eq!(facts["jsLinks"], 0);
    let text = facts["text"].as_str().unwrap_or("");
    assert!(
        text.contains("<img src=x onerror="),
        "raw HTML is shown as text: {text}"
    );
    app.close().await.expect("close");
}

#[tokio::test]
async fn only_the_granted_commands_reach_the_host() {
    let server = ScriptedServer::start(vec![]).await;
    let (app, _ws, _dirs) = launch("acl", &server).await;
    let call = |cmd: &str, args: Value| {
        format!(
            "const done = arguments[arguments.length - 1];\
             window.__TAURI_INTERNALS__.invoke({}, {}).then(ok => done({{ok: ok ?? null}}), err => done({{err: String(err?.message ?? JSON.stringify(err))}}));",
            json!(cmd),
            args
        )
    };
    for (cmd, args) in [
        ("plugin:app|version", json!({})),
        (
            "plugin:event|listen",
            json!({"event": "x", "target": {"kind": "Any"}, "handler": 1}),
        ),
        ("plugin:window|close", json!({})),
        ("plugin:webview|print", json!({})),
        ("not_a_command", json!({})),
    ] {
        let r = app
            .session
            .execute_async(&call(cmd, args), vec![])
            .await
            .expect("invoke");
        let err = r["err"].as_str().unwrap_or_default().to_string();
        assert!(!err.is_empty(), "{cmd} was not refused: {r}");
        assert!(
            err.contains("not allowed") || err.contains("not found"),
            "{cmd}: {err}"
        );
    }
    // The granted command answers malformed and unknown messages with a typed error.
    for bad in [
        json!({"type": "launch_missiles"}),
        json!({"type": "start_task"}),
        json!({"type": "start_task", "text": "x", "extra": 1}),
        json!([1, 2]),
        json!("text"),
    ] {
        let r = app.ipc(bad.clone()).await.expect("ipc");
        assert_eq!(r["err"]["code"], "malformed_request", "{bad}: {r}");
        assert!(!r["err"]["message"].as_str().unwrap_or("").is_empty());
    }
    let ok = app.ipc(json!({"type": "list_intents"})).await.expect("ipc");
    assert_eq!(ok["ok"]["intents"]["intents"][0]["id"], "INT-1");
    // Links only as http(s), and only through the host.
    let r = app
        .ipc(json!({"type": "open_external", "url": "javascript:alert(1)"}))
        .await
        .expect("ipc");
    assert_eq!(r["err"]["code"], "invalid_input");
    let r = app
        .ipc(json!({"type": "open_external", "url": "file:///etc/passwd"}))
        .await
        .expect("ipc");
    assert_eq!(r["err"]["code"], "invalid_input");
    app.close().await.expect("close");
}

#[tokio::test]
async fn links_open_outside_and_the_window_never_navigates() {
    let server = ScriptedServer::start(vec![openai::turn()
        .text("See [the docs](https://example.org/docs?q=1), https://example.org/bare_url_here. or [write](mailto:dev@example.org?attach=/etc/passwd).")
        .reply()])
    .await;
    let ws = workspace(Some(INTENTS), &[]);
    let dirs = UserDirs::new();
    dirs.settings_openai(&format!("{}/v1", server.base_url()), true);
    let opened = dirs.home.path().join("opened.txt");
    let opener = dirs.home.path().join("opener.sh");
    std::fs::write(
        &opener,
        format!("#!/bin/sh\necho \"$@\" >> {}\n", opened.display()),
    )
    .expect("opener");
    std::fs::set_permissions(&opener, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let opener_path = opener.display().to_string();
    let app = App::launch(
        "links",
        ws.path(),
        &dirs,
        &[("MANDATE_OPENER", &opener_path)],
    )
    .await
    .expect("launch");
    app.send("where are the docs").await.expect("send");
    // A link, a bare URL (made a link by the host), and a mail link that opens with the address
    // alone (a link must not attach files).
    for (n, expected) in [
        "https://example.org/docs?q=1",
        "https://example.org/bare_url_here",
        "mailto:dev@example.org",
    ]
    .into_iter()
    .enumerate()
    {
        app.click(&format!(
            ".message[data-role=\"assistant\"] .content a:nth-of-type({})",
            n + 1
        ))
        .await
        .expect("click link");
        let text = until_file_contains(&opened, expected)
            .await
            .expect("opened");
        assert_eq!(text.lines().nth(n), Some(expected), "{text}");
    }
    let before = app.eval("return location.href").await.expect("href");
    let _ = app
        .eval("location.href = 'https://example.org/'; return null")
        .await;
    // The shell records each navigation it refuses: wait for that, then look where the page is.
    until_file_contains(&app.ipc_trace, "\"navigation_refused\"")
        .await
        .expect("the navigation was decided");
    let after = app.eval("return location.href").await.expect("href");
    assert_eq!(before, after, "navigation away from the app is refused");
    app.close().await.expect("close");
}

#[tokio::test]
async fn provider_errors_are_readable_and_the_app_stays_usable() {
    let server = ScriptedServer::start(vec![
        openai::error_json(401, "Incorrect API key provided"),
        Reply::CutAfter {
            chunks: openai::turn()
                .text("A long answer that will be cut")
                .chunks()[..3]
                .to_vec(),
        },
        openai::turn().text("All good now.").reply(),
    ])
    .await;
    let (app, _ws, _dirs) = launch("chat-errors", &server).await;
    app.send("first").await.expect("send");
    app.wait_until("document.querySelector('.message[data-role=\"error\"]')?.textContent.includes('rejected the API key')").await.expect("401 message");
    app.screenshot("chat-error").await.expect("screenshot");
    app.send("second").await.expect("send");
    app.wait_until("[...document.querySelectorAll('.message[data-role=\"error\"]')].some(m => m.textContent.includes('connection was cut'))").await.expect("cut message");
    app.wait_until("document.querySelector('.message[data-role=\"assistant\"].cut-off') !== null")
        .await
        .expect("cut-off bubble");
    app.send("third").await.expect("send");
    app.wait_until("[...document.querySelectorAll('.message[data-role=\"assistant\"] .content')].some(c => c.textContent.includes('All good now.'))").await.expect("recovered");
    // The cut-off answer was never stored as complete.
    let task_id = app
        .eval("return document.querySelector('.task-panel')?.dataset.taskId")
        .await
        .expect("task id");
    let detail = app
        .ipc(json!({"type": "open_task", "task_id": task_id}))
        .await
        .expect("ipc");
    let messages = detail["ok"]["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let assistants: Vec<&Value> = messages
        .iter()
        .filter(|m| m["kind"] == "assistant")
        .collect();
    assert_eq!(assistants.len(), 2, "{messages:#?}");
    assert_eq!(assistants[0]["complete"], false);
    assert_eq!(assistants[1]["complete"], true);
    app.close().await.expect("close");
}

#[tokio::test]
async fn stop_cancels_the_request() {
    let server =
        ScriptedServer::start(vec![Reply::Hang, openai::turn().text("after stop").reply()]).await;
    let (app, _ws, _dirs) = launch("chat-stop", &server).await;
    app.send("this will hang").await.expect("send");
    app.wait_until("document.querySelector('.task-panel [data-action=\"stop\"]') && !document.querySelector('.task-panel [data-action=\"stop\"]').disabled").await.expect("stop enabled");
    // The provider holds the request: Stop must cancel a request that hangs, not one that has
    // not reached it yet (which would leave the hanging reply for the next message).
    server
        .wait_for_requests(1, Duration::from_secs(20))
        .await
        .expect("the provider has the request");
    app.click(".task-panel [data-action=\"stop\"]")
        .await
        .expect("stop");
    app.wait_until(
        "document.querySelector('.task-panel .task-status')?.dataset.status === 'cancelled'",
    )
    .await
    .expect("cancelled");
    app.send("again").await.expect("send");
    app.wait_until("[...document.querySelectorAll('.message[data-role=\"assistant\"] .content')].some(c => c.textContent.includes('after stop'))").await.expect("usable after stop");
    app.close().await.expect("close");
}

#[tokio::test]
async fn settings_persist_and_the_model_list_comes_from_the_provider() {
    let server = ScriptedServer::start(vec![]).await;
    server.on_get("/v1/models", Reply::json(200, &json!({"object": "list", "data": [{"id": "gpt-test-large"}, {"id": "gpt-test-small"}]})));
    let (app, _ws, dirs) = launch("settings", &server).await;
    app.click("nav button[data-view=\"settings\"]")
        .await
        .expect("settings");
    app.click("#settings-fetch-models")
        .await
        .expect("fetch models");
    app.wait_until("[...document.querySelectorAll('#settings-models option')].map(o => o.value).join(',') === 'gpt-test-large,gpt-test-small'").await.expect("models listed");
    app.type_into("#settings-model", "gpt-test-small")
        .await
        .expect("model");
    app.type_into("#settings-custom-instructions", "Prefer small diffs.")
        .await
        .expect("instructions");
    app.click("#settings-ask-safe-commands")
        .await
        .expect("toggle");
    app.click("#settings-switch-modes")
        .await
        .expect("toggle mode switches");
    app.click("#settings-save").await.expect("save");
    let path = dirs.config().join("settings.json");
    let saved = until_file_contains(&path, "gpt-test-small")
        .await
        .expect("settings saved");
    let saved: Value = serde_json::from_str(&saved).expect("json");
    assert_eq!(saved["model"], "gpt-test-small");
    assert_eq!(saved["custom_instructions"], "Prefer small diffs.");
    assert_eq!(saved["approval"]["ask_before_safe_commands"], true);
    assert_eq!(saved["approval"]["switch_modes_without_asking"], true);
    assert!(saved.get("api_key").is_none());
    // A bad base URL is refused where it was typed (once the first save has finished).
    app.wait_until("!document.querySelector('#settings-save').disabled")
        .await
        .expect("save done");
    app.type_into("#settings-base-url", "file:///etc")
        .await
        .expect("url");
    app.click("#settings-save").await.expect("save");
    app.wait_until(
        "(document.querySelector('#settings-error')?.textContent ?? '').includes('http')",
    )
    .await
    .expect("inline error");
    app.close().await.expect("close");
}

#[tokio::test]
async fn settings_show_the_command_policy_and_judge_a_command() {
    let server = ScriptedServer::start(vec![]).await;
    let (app, ws, _dirs) = launch("settings-policy", &server).await;
    app.click("nav button[data-view=\"settings\"]")
        .await
        .expect("settings");
    app.wait_until(
        "(document.querySelector('#policy-source')?.textContent ?? '').includes('built-in')",
    )
    .await
    .expect("source shown");
    app.type_into("#policy-command", "ls -la && git push --force")
        .await
        .expect("command");
    app.click("#policy-check").await.expect("check");
    app.wait_until("document.querySelector('#policy-result')?.dataset.class === 'destructive' && document.querySelector('#policy-result').textContent.includes('git push')").await.expect("verdict");
    app.type_into("#policy-command", "ls -la")
        .await
        .expect("command");
    app.click("#policy-check").await.expect("check");
    app.wait_until("document.querySelector('#policy-result')?.dataset.class === 'safe'")
        .await
        .expect("safe");
    app.screenshot("settings-policy").await.expect("screenshot");
    // A workspace policy whose examples fail is reported, and commands are refused.
    std::fs::write(
        ws.path().join(".orchestration/command_policy.yaml"),
        "version: 1\nexamples:\n  - {command: \"rm -rf /\", class: safe}\n",
    )
    .expect("policy");
    app.click("#policy-check").await.expect("check");
    app.wait_until(
        "(document.querySelector('#policy-error')?.textContent ?? '').includes('rm -rf /')",
    )
    .await
    .expect("policy error");
    app.close().await.expect("close");
}

#[tokio::test]
async fn retry_runs_the_failed_turn_again() {
    let server = ScriptedServer::start(vec![
        openai::error_json(500, "upstream exploded"),
        openai::error_json(500, "upstream exploded"),
        openai::error_json(500, "upstream exploded"),
        openai::error_json(500, "upstream exploded"),
        openai::turn().text("Second time lucky.").reply(),
    ])
    .await;
    let (app, _ws, _dirs) = launch("chat-retry", &server).await;
    app.send("hello").await.expect("send");
    app.wait_until(
        "document.querySelector('.task-panel .task-status')?.dataset.status === 'failed'",
    )
    .await
    .expect("failed");
    app.wait_until("!document.querySelector('.task-panel [data-action=\"retry\"]').disabled")
        .await
        .expect("retry enabled");
    app.click(".task-panel [data-action=\"retry\"]")
        .await
        .expect("retry");
    app.wait_until("[...document.querySelectorAll('.message[data-role=\"assistant\"] .content')].some(c => c.textContent.includes('Second time lucky.'))").await.expect("answer after retry");
    app.close().await.expect("close");
}

#[tokio::test]
async fn the_theme_follows_the_system() {
    let server = ScriptedServer::start(vec![]).await;
    let ws = workspace(Some(INTENTS), &[]);
    let mut backgrounds = Vec::new();
    for (name, theme) in [("theme-light", "Adwaita"), ("theme-dark", "Adwaita:dark")] {
        let dirs = UserDirs::new();
        dirs.settings_openai(&format!("{}/v1", server.base_url()), true);
        let app = App::launch(name, ws.path(), &dirs, &[("GTK_THEME", theme)])
            .await
            .expect("launch");
        let facts = app
            .eval("return {dark: matchMedia('(prefers-color-scheme: dark)').matches, bg: getComputedStyle(document.body).backgroundColor}")
            .await
            .expect("eval");
        assert_eq!(
            facts["dark"],
            json!(theme.ends_with("dark")),
            "{name}: {facts}"
        );
        backgrounds.push(facts["bg"].as_str().unwrap_or("").to_string());
        app.screenshot(name).await.expect("screenshot");
        app.close().await.expect("close");
    }
    assert_ne!(
        backgrounds[0], backgrounds[1],
        "dark and light look different"
    );
}

/// Once the page has settled, the window and WebKit's web process give back the pages of code
/// that only start-up used (the web process through Mandate's web process extension, which the
/// window writes next to its data), and everything runs on: the code comes back when used.
#[tokio::test]
async fn once_settled_the_window_and_its_web_process_give_back_start_up_pages() {
    let server = ScriptedServer::start(vec![openai::turn().text("Still here.").reply()]).await;
    let (app, _ws, dirs) = launch("pages-given-back", &server).await;
    let trace = until_file_contains(&app.ipc_trace, "\"process\":\"web\"")
        .await
        .expect("the web process extension answered");
    for process in ["window", "web"] {
        let mappings = trace
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["direction"] == "pages_given_back" && v["payload"]["process"] == process)
            .map(|v| v["payload"]["mappings"].as_u64().unwrap_or(0))
            .next();
        assert!(
            mappings.is_some_and(|n| n > 10),
            "{process}: {mappings:?} mappings given back\n{trace}"
        );
    }
    assert!(dirs
        .data()
        .join("webkit-extension/libmandate_pages.so")
        .is_file());
    app.send("Are you there?").await.expect("send");
    app.wait_until("document.querySelector('.message[data-role=\"assistant\"] .content')?.textContent.includes('Still here.')").await.expect("answer after the pages went back");
    app.close().await.expect("close");
}

/// The page runs in WebKit's bubblewrap sandbox: its web process has a mount namespace of its
/// own in which neither the workspace, nor the person's home directory, nor their cache
/// directory is there (only what WebKit itself needs), and the page still works.
#[tokio::test]
async fn the_page_runs_in_webkits_sandbox_without_the_workspace_or_the_home_directory() {
    let server = ScriptedServer::start(vec![openai::turn().text("Sandboxed.").reply()]).await;
    let (app, ws, _dirs) = launch("web-sandbox", &server).await;
    let (window, web) = web_process_of(&app).expect("the app's web process");
    let namespace = |pid: u32| std::fs::read_link(format!("/proc/{pid}/ns/mnt")).expect("ns");
    assert_ne!(
        namespace(window),
        namespace(web),
        "the web process is not sandboxed"
    );
    let seen = |path: &std::path::Path| {
        std::path::Path::new(&format!("/proc/{web}/root"))
            .join(path.strip_prefix("/").expect("absolute"))
            .exists()
    };
    assert!(ws.path().join("docs/a.md").exists());
    assert!(
        !seen(&ws.path().join("docs/a.md")),
        "the web process sees the workspace"
    );
    let home = std::path::PathBuf::from(std::env::var_os("HOME").expect("HOME"));
    let private = std::fs::read_dir(&home)
        .expect("home")
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            !matches!(
                p.file_name().and_then(|n| n.to_str()),
                Some(".cache" | ".config" | ".local")
            )
        })
        .expect("an entry of the home directory");
    assert!(
        !seen(&private),
        "the web process sees {}",
        private.display()
    );
    // Nor the person's cache directory, where other programs keep code they run (WebKit
    // would let the page write all of it, were its own caches not elsewhere).
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| home.join(".cache"));
    std::fs::create_dir_all(&cache).expect("cache dir");
    let probe = tempfile::Builder::new()
        .prefix("mandate-sandbox-probe-")
        .tempfile_in(&cache)
        .expect("probe");
    assert!(
        !seen(probe.path()),
        "the web process sees {}",
        probe.path().display()
    );
    app.send("Still working?").await.expect("send");
    app.wait_until("document.querySelector('.message[data-role=\"assistant\"] .content')?.textContent.includes('Sandboxed.')").await.expect("answer");
    app.close().await.expect("close");
}

/// The pids of the app's window process and of its WebKit web process (found through their
/// parents, the window being the one whose IPC trace is this app's).
fn web_process_of(app: &App) -> Option<(u32, u32)> {
    let parent = |pid: u32| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat.rsplit_once(')')?
            .1
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    let comm = |pid: u32| std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    let trace = format!("MANDATE_IPC_TRACE={}", app.ipc_trace.display());
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if comm(pid).trim() != "WebKitWebProces" {
            continue;
        }
        let mut up = pid;
        while let Some(p) = parent(up).filter(|p| *p > 1) {
            if comm(p).trim() == "mandate-window" {
                let environ = std::fs::read(format!("/proc/{p}/environ")).unwrap_or_default();
                if environ.split(|b| *b == 0).any(|v| v == trace.as_bytes()) {
                    return Some((p, pid));
                }
                break;
            }
            up = p;
        }
    }
    None
}
