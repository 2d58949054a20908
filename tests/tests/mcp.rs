//! MCP servers behind the gate, through `mandate run` against a scripted provider and a real MCP
//! server the tests start (stdio, and streamable HTTP on 127.0.0.1): the model sees the tools, a
//! read-only call runs without an intent, a mutating one needs an intent and a person and is
//! recorded by digest, a workspace's server waits for consent, and a server that crashes or
//! never answers gives a clear error while the task goes on.

use mandate_tests::app::{workspace, UserDirs};
use mandate_tests::cli::{ledger, run_openai, Output};
use mandate_tests::llm_server::ScriptedServer;
use mandate_tests::mcp::{
    consent, starts_file, stdio_entry, write_project_file, write_user_file, HttpServer, INTENTS,
};
use mandate_tests::sse::openai;
use mandate_tests::trace_schema::assert_valid;
use serde_json::{json, Value};

fn done(id: &str) -> mandate_tests::llm_server::Reply {
    openai::turn()
        .tool_call(id, "attempt_completion", json!({"result": "done"}))
        .reply()
}

fn notices(out: &Output) -> Vec<String> {
    out.events_of("notice")
        .iter()
        .filter_map(|e| e["message"].as_str().map(str::to_string))
        .collect()
}

fn tool_names(server: &ScriptedServer) -> Vec<String> {
    server.requests()[0].json()["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect()
}

fn error_code(result: &str) -> Value {
    serde_json::from_str::<Value>(result)
        .map(|v| v["error"]["code"].clone())
        .unwrap_or(Value::Null)
}

#[tokio::test]
async fn the_model_sees_the_tools_and_a_read_only_call_runs_without_an_intent() {
    let ws = workspace(Some(INTENTS), &[]);
    let dirs = UserDirs::new();
    write_project_file(ws.path(), json!({"srv": stdio_entry(&[], json!({}))}));
    let server = ScriptedServer::start(vec![
        openai::turn()
            .tool_call("r1", "mcp__srv__lookup", json!({"key": "answer"}))
            .reply(),
        openai::turn()
            .tool_call("r2", "mcp__srv__env_report", json!({}))
            .reply(),
        openai::turn()
            .tool_call("r3", "mcp__srv__weird_name_", json!(null))
            .reply(),
        done("end"),
    ])
    .await;
    let out = mandate_tests::cli::mandate(
        &[
            "run",
            "--workspace",
            &ws.path().display().to_string(),
            "--provider",
            "openai",
            "--base-url",
            &format!("{}/v1", server.base_url()),
            "--model",
            "test-model",
            "--api-key-env",
            "TEST_KEY",
            "--trust-mcp",
            "srv",
            "--json",
            "look it up",
        ],
        &dirs,
        &[
            ("TEST_KEY", "sk-test-secret-4242"),
            ("MANDATE_API_KEY", "sk-other-secret-777"),
        ],
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("--trust-mcp srv: starting"),
        "{}",
        out.stderr
    );

    // The catalog: Mandate's tools, then the server's, sanitized; the broken schema is hidden.
    let names = tool_names(&server);
    for name in [
        "mcp__srv__lookup",
        "mcp__srv__env_report",
        "mcp__srv__write_marker",
        "mcp__srv__crash",
        "mcp__srv__weird_name_",
    ] {
        assert!(
            names.iter().any(|n| n == name),
            "{name} missing from {names:?}"
        );
    }
    assert!(
        !names.iter().any(|n| n.contains("broken_schema")),
        "{names:?}"
    );
    assert!(
        notices(&out)
            .iter()
            .any(|n| n.contains("broken_schema") && n.contains("not an object schema")),
        "{:?}",
        notices(&out)
    );
    let tools = server.requests()[0].json()["tools"].clone();
    let lookup = tools
        .as_array()
        .and_then(|t| {
            t.iter()
                .find(|t| t["function"]["name"] == "mcp__srv__lookup")
        })
        .expect("lookup");
    assert_eq!(lookup["function"]["parameters"]["required"], json!(["key"]));
    assert!(lookup["function"]["description"]
        .as_str()
        .unwrap_or("")
        .contains("server declares it read-only"));
    let system = server.requests()[0].json()["messages"][0]["content"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(
        system.contains("Tools named mcp__<server>__<tool>"),
        "{system}"
    );

    // Read-only: ran with no intent selected, nothing recorded.
    assert_eq!(
        server.tool_result_in(1, "r1").as_deref(),
        Some("the value of answer")
    );
    assert_eq!(
        server.tool_result_in(3, "r3").as_deref(),
        Some("odd but fine")
    );
    assert!(ledger(ws.path()).is_empty());

    // The server got an allow-listed environment: no API key, whatever its name.
    let report = server.tool_result_in(2, "r2").expect("env report");
    assert!(report.contains("PATH"), "{report}");
    for leaked in [
        "TEST_KEY",
        "MANDATE_API_KEY",
        "sk-test-secret-4242",
        "sk-other-secret-777",
        "DBUS_SESSION_BUS_ADDRESS",
    ] {
        assert!(
            !report.contains(leaked),
            "{leaked} reached the server: {report}"
        );
    }
}

#[tokio::test]
async fn a_mutating_call_needs_an_intent_and_a_person() {
    let ws = workspace(Some(INTENTS), &[]);
    let outside = tempfile::tempdir().expect("tempdir");
    let marker = outside.path().join("marker.txt");
    let dirs = UserDirs::new();
    write_project_file(ws.path(), json!({"srv": stdio_entry(&[], json!({}))}));
    let args = json!({"path": marker.display().to_string(), "text": "written"});
    let server = ScriptedServer::start(vec![
        openai::turn()
            .tool_call("w1", "mcp__srv__write_marker", args.clone())
            .reply(),
        openai::turn()
            .tool_call("s", "select_active_intent", json!({"intent_id": "INT-001"}))
            .reply(),
        openai::turn()
            .tool_call("w2", "mcp__srv__write_marker", args.clone())
            .reply(),
        done("end"),
    ])
    .await;
    let out = run_openai(
        ws.path(),
        &server.base_url(),
        &["--trust-mcp", "srv", "--approve", "deny"],
        "write it",
        &dirs,
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert_eq!(
        error_code(&server.tool_result_in(1, "w1").expect("w1")),
        "NO_ACTIVE_INTENT"
    );
    assert_eq!(
        error_code(&server.tool_result_in(3, "w2").expect("w2")),
        "REJECTED_BY_USER"
    );
    assert!(!marker.exists(), "the tool ran without approval");
    assert!(ledger(ws.path()).is_empty());

    // The person was asked, with the server's words and the arguments.
    let asked = out.events_of("approval_requested");
    assert_eq!(asked.len(), 1, "{asked:#?}");
    let detail = &asked[0]["request"]["detail"];
    assert_eq!(detail["kind"], "mcp_call");
    assert_eq!(detail["server"], "srv");
    assert_eq!(detail["source"], "project");
    assert_eq!(detail["tool"], "write_marker");
    assert_eq!(detail["description"], "Writes TEXT to the file PATH.");
    assert_eq!(detail["annotations"]["read_only"], Value::Null);
    assert_eq!(
        serde_json::from_str::<Value>(detail["arguments"].as_str().expect("arguments"))
            .expect("json"),
        args
    );
}

#[tokio::test]
async fn an_approved_mutating_call_runs_and_is_recorded_by_digest() {
    let ws = workspace(Some(INTENTS), &[]);
    let outside = tempfile::tempdir().expect("tempdir");
    let dirs = UserDirs::new();
    write_project_file(ws.path(), json!({"srv": stdio_entry(&[], json!({}))}));
    // A confined server writes nothing outside its own directories: its temporary one here.
    let args = json!({"text": "approved-text-1234", "path": "tmp:marker.txt"});
    let server = ScriptedServer::start(vec![
        openai::turn().tool_call("s", "select_active_intent", json!({"intent_id": "INT-001"})).reply(),
        openai::turn().tool_call("w", "mcp__srv__write_marker", args.clone()).reply(),
        openai::turn().tool_call("bad", "mcp__srv__write_marker", json!({"path": outside.path().join("no/such/dir/x").display().to_string(), "text": "x"})).reply(),
        done("end"),
    ])
    .await;
    let out = run_openai(
        ws.path(),
        &server.base_url(),
        &["--trust-mcp", "srv", "--approve", "allow"],
        "write it",
        &dirs,
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let wrote = server.tool_result_in(2, "w").expect("w");
    assert!(
        wrote.starts_with("wrote ") && wrote.ends_with("/marker.txt"),
        "{wrote}"
    );
    assert!(server
        .tool_result_in(3, "bad")
        .expect("bad")
        .contains("cannot write"));

    let records = ledger(ws.path());
    assert_eq!(records.len(), 2, "{records:#?}");
    for r in &records {
        assert_valid(r);
        assert_eq!(r["files"], json!([]));
        let vendor = &r["metadata"]["dev.mandate"];
        assert_eq!(vendor["intent_id"], "INT-001");
        assert_eq!(vendor["tool"], "mcp__srv__write_marker");
        assert_eq!(vendor["mutation_class"]["computed"], "EXTERNAL_ACTION");
        assert_eq!(vendor["approval"]["by"], "headless");
        assert_eq!(vendor["mcp"]["server"], "srv");
        assert_eq!(vendor["mcp"]["tool"], "write_marker");
    }
    let first = &records[0]["metadata"]["dev.mandate"]["mcp"];
    assert_eq!(first["args_sha256"], mandate_core::mcp::args_sha256(&args));
    assert_eq!(first["is_error"], false);
    assert_eq!(
        records[1]["metadata"]["dev.mandate"]["mcp"]["is_error"],
        true
    );
    // The digest, never the arguments.
    let raw = std::fs::read_to_string(ws.path().join(".orchestration/agent_trace.jsonl"))
        .expect("ledger");
    assert!(
        !raw.contains("approved-text-1234") && !raw.contains("marker.txt"),
        "{raw}"
    );

    let verify = mandate_tests::cli::mandate(
        &[
            "trace",
            "verify",
            "--workspace",
            &ws.path().display().to_string(),
        ],
        &dirs,
        &[],
    )
    .await;
    assert_eq!(verify.code, Some(0), "{}\n{}", verify.stdout, verify.stderr);
}

#[tokio::test]
async fn a_settings_server_over_streamable_http() {
    let http = HttpServer::start();
    let ws = workspace(Some(INTENTS), &[]);
    let outside = tempfile::tempdir().expect("tempdir");
    let marker = outside.path().join("over-http.txt");
    let dirs = UserDirs::new();
    // Added in Settings: the person's own file, no consent needed.
    write_user_file(
        &dirs.config(),
        json!({"mcpServers": {"web": {"type": "http", "url": http.url}}}),
    );
    let server = ScriptedServer::start(vec![
        openai::turn()
            .tool_call("r", "mcp__web__lookup", json!({"key": "k"}))
            .reply(),
        openai::turn()
            .tool_call("s", "select_active_intent", json!({"intent_id": "INT-001"}))
            .reply(),
        openai::turn()
            .tool_call(
                "w",
                "mcp__web__write_marker",
                json!({"path": marker.display().to_string(), "text": "via http"}),
            )
            .reply(),
        done("end"),
    ])
    .await;
    let out = run_openai(
        ws.path(),
        &server.base_url(),
        &["--approve", "allow"],
        "use the web server",
        &dirs,
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert_eq!(
        server.tool_result_in(1, "r").as_deref(),
        Some("the value of k")
    );
    assert_eq!(
        std::fs::read_to_string(&marker).expect("marker"),
        "via http"
    );
    let records = ledger(ws.path());
    assert_eq!(records.len(), 1);
    assert_valid(&records[0]);
    assert_eq!(
        records[0]["metadata"]["dev.mandate"]["mcp"]["transport"],
        "http"
    );
    assert_eq!(
        records[0]["metadata"]["dev.mandate"]["mcp"]["source"],
        "settings"
    );
}

#[tokio::test]
async fn a_workspace_server_is_not_started_without_consent() {
    let ws = workspace(Some(INTENTS), &[]);
    let dirs = UserDirs::new();
    let env = json!({"MCP_TEST_STARTS": "state"});
    write_project_file(ws.path(), json!({"srv": stdio_entry(&[], env.clone())}));
    let script = || {
        vec![openai::turn()
            .text("ok")
            .tool_call("end", "attempt_completion", json!({"result": "done"}))
            .reply()]
    };

    // Unattended, no consent: never started, and the note shows what it would run.
    let server = ScriptedServer::start(script()).await;
    let out = run_openai(
        ws.path(),
        &server.base_url(),
        &["--approve", "allow"],
        "hi",
        &dirs,
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(
        !starts_file(&dirs, "srv").exists(),
        "an unconsented server was started"
    );
    assert!(!tool_names(&server).iter().any(|n| n.starts_with("mcp__")));
    let note = notices(&out)
        .into_iter()
        .find(|n| n.contains("needs your consent"))
        .expect("a consent note");
    assert!(
        note.contains("mcp-test-server") && note.contains("--trust-mcp srv"),
        "{note}"
    );

    // Consent given in Settings for this definition: started.
    let (key, decisions) = consent(ws.path(), "srv");
    write_user_file(
        &dirs.config(),
        json!({"projects": {key.clone(): decisions}}),
    );
    let server = ScriptedServer::start(script()).await;
    let out = run_openai(ws.path(), &server.base_url(), &[], "hi", &dirs).await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let starts = starts_file(&dirs, "srv");
    assert_eq!(
        std::fs::read_to_string(&starts)
            .expect("started")
            .lines()
            .count(),
        1
    );
    assert!(tool_names(&server).iter().any(|n| n == "mcp__srv__lookup"));

    // The workspace changes the command: asked again, not started.
    write_project_file(ws.path(), json!({"srv": stdio_entry(&["--extra"], env)}));
    let server = ScriptedServer::start(script()).await;
    let out = run_openai(ws.path(), &server.base_url(), &[], "hi", &dirs).await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert_eq!(
        std::fs::read_to_string(&starts)
            .expect("starts")
            .lines()
            .count(),
        1
    );
    assert!(notices(&out)
        .iter()
        .any(|n| n.contains("needs your consent") && n.contains("--extra")));
}

#[tokio::test]
async fn servers_that_crash_hang_or_are_missing_give_clear_errors_and_the_task_goes_on() {
    let ws = workspace(Some(INTENTS), &[]);
    let dirs = UserDirs::new();
    let mut hangs = stdio_entry(&["--hang"], json!({}));
    hangs["startupTimeoutSec"] = json!(1);
    write_project_file(
        ws.path(),
        json!({
            "crashy": stdio_entry(&[], json!({"MCP_TEST_STARTS": "state"})),
            "hangs": hangs,
            "gone": {"command": "/nonexistent/mcp-server"},
            "refuses": stdio_entry(&["--exit-at-start"], json!({})),
        }),
    );
    let server = ScriptedServer::start(vec![
        openai::turn()
            .tool_call("c", "mcp__crashy__crash", json!({}))
            .reply(),
        openai::turn()
            .tool_call("l", "mcp__crashy__lookup", json!({"key": "after"}))
            .reply(),
        openai::turn()
            .tool_call("h", "mcp__hangs__lookup", json!({"key": "x"}))
            .reply(),
        done("end"),
    ])
    .await;
    let trust = [
        "--trust-mcp",
        "crashy",
        "--trust-mcp",
        "hangs",
        "--trust-mcp",
        "gone",
        "--trust-mcp",
        "refuses",
    ];
    let out = run_openai(ws.path(), &server.base_url(), &trust, "go on", &dirs).await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);

    let notes = notices(&out).join("\n");
    assert!(
        notes.contains(
            "`hangs` is unavailable: it could not start: it did not answer `initialize` within 1 s"
        ),
        "{notes}"
    );
    assert!(
        notes.contains(
            "`gone` is unavailable: it could not start: could not start `/nonexistent/mcp-server`"
        ),
        "{notes}"
    );
    assert!(
        notes.contains("`refuses` is unavailable")
            && notes.contains("this server refuses to start"),
        "{notes}"
    );

    // The crash is a clear tool error; the next call waits for the restart and works.
    let crash = server.tool_result_in(1, "c").expect("crash result");
    assert!(
        crash.contains("MCP server `crashy` stopped while running `crash`"),
        "{crash}"
    );
    assert_eq!(
        server.tool_result_in(2, "l").as_deref(),
        Some("the value of after")
    );
    assert_eq!(
        std::fs::read_to_string(starts_file(&dirs, "crashy"))
            .expect("starts")
            .lines()
            .count(),
        2
    );
    // A server that never started offers no tools.
    let hung = server.tool_result_in(3, "h").expect("hung result");
    assert!(
        hung.contains("There is no tool `mcp__hangs__lookup`"),
        "{hung}"
    );
}

#[tokio::test]
async fn mandate_mcp_lists_servers_and_records_consent_from_a_terminal() {
    let ws = workspace(Some(INTENTS), &[]);
    let dirs = UserDirs::new();
    write_project_file(
        ws.path(),
        json!({"srv": stdio_entry(&[], json!({"K": "v"}))}),
    );
    let ws_arg = ws.path().display().to_string();
    let list_args = ["mcp", "list", "--json", "--workspace", &ws_arg];
    let list = || mandate_tests::cli::mandate(&list_args, &dirs, &[]);

    let out = list().await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let overview: Value = serde_json::from_str(&out.stdout).expect("json");
    let srv = &overview["servers"][0];
    assert_eq!(srv["status"], "needs_consent");
    assert_eq!(srv["variables"], json!([{"name": "K", "value": "v"}]));
    assert!(srv["target"]
        .as_str()
        .unwrap_or("")
        .contains("mcp-test-server"));

    // Without a terminal to ask in, nothing is agreed unless --yes says so (bad usage: exit 2).
    let out =
        mandate_tests::cli::mandate(&["mcp", "trust", "srv", "--workspace", &ws_arg], &dirs, &[])
            .await;
    assert_eq!(out.code, Some(2), "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("mcp-test-server") && out.stdout.contains("K=v"),
        "{}",
        out.stdout
    );
    let out = mandate_tests::cli::mandate(
        &["mcp", "trust", "srv", "--yes", "--workspace", &ws_arg],
        &dirs,
        &[],
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);

    let out = list().await;
    let overview: Value = serde_json::from_str(&out.stdout).expect("json");
    let srv = &overview["servers"][0];
    assert_eq!(srv["status"], "ready", "{srv:#}");
    let tools = srv["tools"].as_array().expect("tools");
    let lookup = tools
        .iter()
        .find(|t| t["tool"] == "lookup")
        .expect("lookup");
    assert_eq!(
        (lookup["model_name"].clone(), lookup["runs_as_read"].clone()),
        (json!("mcp__srv__lookup"), json!(true))
    );
    let write = tools
        .iter()
        .find(|t| t["tool"] == "write_marker")
        .expect("write_marker");
    assert_eq!(write["runs_as_read"], false);
    let broken = tools
        .iter()
        .find(|t| t["tool"] == "broken_schema")
        .expect("broken_schema");
    assert!(
        broken["hidden"]
            .as_str()
            .unwrap_or("")
            .contains("not an object schema"),
        "{broken}"
    );

    // Confined, and allowed to write in the workspace only when the person says so.
    assert!(
        srv["confinement"]
            .as_str()
            .unwrap_or("")
            .contains("writes nothing in it"),
        "{srv:#}"
    );
    let allow = ["mcp", "allow-write", "srv", "--workspace", &ws_arg];
    let out = mandate_tests::cli::mandate(&allow, &dirs, &[]).await;
    assert_eq!(out.code, Some(2), "no terminal, no --yes: {}", out.stderr);
    let out = mandate_tests::cli::mandate(&[&allow[..], &["--yes"]].concat(), &dirs, &[]).await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let out = list().await;
    let overview: Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(overview["servers"][0]["may_write_workspace"], true);
    let deny = ["mcp", "deny-write", "srv", "--workspace", &ws_arg];
    let out = mandate_tests::cli::mandate(&deny, &dirs, &[]).await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let text = std::fs::read_to_string(dirs.config().join("mcp.json")).expect("mcp.json");
    assert!(!text.contains("\"writes\""), "{text}");

    // Marked untrusted in Settings: every tool of it is mutating, even a declared read.
    let (key, mut decisions) = consent(ws.path(), "srv");
    decisions["untrusted"] = json!(["srv"]);
    write_user_file(&dirs.config(), json!({"projects": {key: decisions}}));
    let server = ScriptedServer::start(vec![
        openai::turn()
            .tool_call("r", "mcp__srv__lookup", json!({"key": "k"}))
            .reply(),
        done("end"),
    ])
    .await;
    let out = run_openai(ws.path(), &server.base_url(), &[], "look", &dirs).await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert_eq!(
        error_code(&server.tool_result_in(1, "r").expect("r")),
        "NO_ACTIVE_INTENT"
    );
}
