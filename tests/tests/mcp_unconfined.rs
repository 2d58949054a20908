//! A server the person allowed to run unconfined, with the real test server and the real
//! kernel: confined, its write outside its own directories is refused; unconfined, the same
//! write lands. Every call of an unconfined server — a declared read too — waits for approval
//! and says "unconfined" on its card and its approval. What it changes in the workspace is
//! recorded when the intent owns it and put back otherwise (protected files byte for byte);
//! what it writes outside its calls is undone and it is refused. The consent is given, listed
//! and taken back from the command line, and a changed definition makes it stale.

use mandate_tests::app::{workspace, UserDirs};
use mandate_tests::cli::{ledger, mandate, Output};
use mandate_tests::llm_server::ScriptedServer;
use mandate_tests::mcp::{
    consent, consent_and_unconfined, stdio_entry, write_project_file, write_user_file, INTENTS,
};
use mandate_tests::script::{call, done, notices, run_go, select};
use mandate_tests::trace_schema::assert_valid;
use serde_json::{json, Value};

/// A workspace with the test server `srv`, consented to (and, with `unconfined`, allowed to
/// run unconfined).
fn setup(unconfined: bool) -> (tempfile::TempDir, UserDirs) {
    setup_with(unconfined, json!({}), &[("docs/notes.md", "notes\n")])
}

/// [`setup`] with the server's variables `env` and the workspace's `files`.
fn setup_with(
    unconfined: bool,
    env: Value,
    files: &[(&str, &str)],
) -> (tempfile::TempDir, UserDirs) {
    let ws = workspace(Some(INTENTS), files);
    write_project_file(ws.path(), json!({"srv": stdio_entry(&[], env)}));
    let dirs = UserDirs::new();
    let (key, decisions) = if unconfined {
        consent_and_unconfined(ws.path(), "srv")
    } else {
        consent(ws.path(), "srv")
    };
    write_user_file(&dirs.config(), json!({"projects": {key: decisions}}));
    (ws, dirs)
}

/// A read, then a write to `marker` (outside the workspace and the server's own directories),
/// approved by `--approve allow`.
async fn read_then_write(
    ws: &std::path::Path,
    dirs: &UserDirs,
    marker: &str,
) -> (ScriptedServer, Output) {
    let server = ScriptedServer::start(vec![
        select(),
        call("r", "mcp__srv__lookup", json!({"key": "a"})),
        call(
            "w",
            "mcp__srv__write_marker",
            json!({"path": marker, "text": "from the server"}),
        ),
        done(),
    ])
    .await;
    let out = run_go(ws, &server, &["--approve", "allow"], dirs).await;
    (server, out)
}

fn finished_cards(out: &Output) -> Vec<Value> {
    out.events_of("tool_call_finished")
        .into_iter()
        .map(|e| e["call"].clone())
        .filter(|c| {
            c["tool"]
                .as_str()
                .is_some_and(|t| t.starts_with("mcp__srv__"))
        })
        .collect()
}

fn asked_tools(out: &Output) -> Vec<(String, Value)> {
    out.events_of("approval_requested")
        .into_iter()
        .map(|e| {
            let d = &e["request"]["detail"];
            (
                d["tool"].as_str().unwrap_or("").to_string(),
                d["unconfined"].clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn unconfined_by_consent_it_writes_where_a_confined_server_cannot_and_every_call_asks() {
    // Not under /tmp: bubblewrap gives a confined server a /tmp of its own.
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tmp");
    let marker = outside.path().join("marker.txt");
    let marker_arg = marker.display().to_string();

    // Confined: the read runs unasked, the write is refused by the kernel, no card says
    // unconfined.
    let (ws, dirs) = setup(false);
    let (server, out) = read_then_write(ws.path(), &dirs, &marker_arg).await;
    assert_eq!(server.tool_result("r").as_deref(), Some("the value of a"));
    let wrote = server.tool_result("w").expect("w");
    assert!(wrote.starts_with("cannot write"), "{wrote}");
    assert!(!marker.exists());
    assert_eq!(
        asked_tools(&out),
        vec![("write_marker".to_string(), Value::Bool(false))]
    );
    let cards = finished_cards(&out);
    assert_eq!(cards.len(), 2, "{cards:#?}");
    assert!(cards.iter().all(|c| c["unconfined"] == false), "{cards:#?}");
    let records = ledger(ws.path());
    assert_eq!(
        records[0]["metadata"]["dev.mandate"]["mcp"]["unconfined"],
        false
    );

    // Allowed to run unconfined: both calls ask, both cards say so, and the write lands.
    let (ws, dirs) = setup(true);
    let (server, out) = read_then_write(ws.path(), &dirs, &marker_arg).await;
    assert_eq!(server.tool_result("r").as_deref(), Some("the value of a"));
    assert_eq!(
        server.tool_result("w").as_deref(),
        Some(format!("wrote {marker_arg}").as_str())
    );
    assert_eq!(
        std::fs::read_to_string(&marker).expect("marker"),
        "from the server"
    );
    assert_eq!(
        asked_tools(&out),
        vec![
            ("lookup".to_string(), Value::Bool(true)),
            ("write_marker".to_string(), Value::Bool(true)),
        ],
        "the read asks too"
    );
    let cards = finished_cards(&out);
    assert_eq!(cards.len(), 2, "{cards:#?}");
    assert!(cards.iter().all(|c| c["unconfined"] == true), "{cards:#?}");
    // The ledger keeps it too: the mutating call's record says it ran unconfined.
    let records = ledger(ws.path());
    assert_eq!(records.len(), 1, "{records:#?}");
    assert_valid(&records[0]);
    assert_eq!(
        records[0]["metadata"]["dev.mandate"]["mcp"]["unconfined"], true,
        "{:#}",
        records[0]
    );
    assert!(
        notices(&out)
            .iter()
            .any(|n| n.contains("MCP server `srv` runs unconfined, as you allowed")),
        "{:?}",
        notices(&out)
    );

    // Refused by the person: the read never reaches the server.
    let server = ScriptedServer::start(vec![
        call("r", "mcp__srv__lookup", json!({"key": "b"})),
        done(),
    ])
    .await;
    run_go(ws.path(), &server, &["--approve", "deny"], &dirs).await;
    let result = server.tool_result("r").expect("r");
    assert!(result.contains("REJECTED_BY_USER"), "{result}");
}

async fn list(ws: &std::path::Path, dirs: &UserDirs) -> (Value, String) {
    let root = ws.display().to_string();
    let json = mandate(&["mcp", "list", "--json", "--workspace", &root], dirs, &[]).await;
    assert_eq!(json.code, Some(0), "{}\n{}", json.stdout, json.stderr);
    let text = mandate(&["mcp", "list", "--workspace", &root], dirs, &[]).await;
    assert_eq!(text.code, Some(0), "{}\n{}", text.stdout, text.stderr);
    let overview: Value = serde_json::from_str(&json.stdout).expect("json");
    (overview["servers"][0].clone(), text.stdout)
}

#[tokio::test]
async fn the_consent_is_given_listed_and_taken_back_from_the_command_line() {
    let (ws, dirs) = setup(false);
    let root = ws.path().display().to_string();
    let (key, decisions) = consent(ws.path(), "srv");
    let allow = ["mcp", "allow-unconfined", "srv", "--workspace", &root];

    // No terminal to ask in: refused, and nothing kept.
    let out = mandate(&allow, &dirs, &[]).await;
    assert_eq!(out.code, Some(2), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("give --yes"), "{}", out.stderr);
    let file = std::fs::read_to_string(dirs.config().join("mcp.json")).expect("mcp.json");
    assert!(!file.contains("\"unconfined\""), "{file}");

    let mut with_yes = allow.to_vec();
    with_yes.push("--yes");
    let out = mandate(&with_yes, &dirs, &[]).await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("mcp-test-server") && out.stdout.contains("outside any sandbox"),
        "the person sees what runs and what it means: {}",
        out.stdout
    );
    let file: Value = serde_json::from_str(
        &std::fs::read_to_string(dirs.config().join("mcp.json")).expect("mcp.json"),
    )
    .expect("json");
    let kept = &file["projects"][&key]["unconfined"]["srv"];
    assert_eq!(kept["definition"], decisions["consents"]["srv"], "{kept:#}");
    assert!(
        kept["program"]
            .as_str()
            .is_some_and(|p| p.ends_with("mcp-test-server")),
        "{kept:#}"
    );

    let (srv, text) = list(ws.path(), &dirs).await;
    assert_eq!(srv["runs_unconfined"], true, "{srv:#}");
    assert_eq!(srv["unconfined"]["state"], "in_force", "{srv:#}");
    assert!(
        text.contains("unconfined, as you allowed: it can read and write anything you can"),
        "{text}"
    );

    // A changed definition: the consent is stale until given again.
    write_project_file(
        ws.path(),
        json!({"srv": stdio_entry(&["--changed"], json!({}))}),
    );
    let (srv, text) = list(ws.path(), &dirs).await;
    assert_eq!(srv["runs_unconfined"], false, "{srv:#}");
    assert_eq!(srv["unconfined"]["state"], "stale", "{srv:#}");
    assert!(
        text.contains("consent to run it unconfined is stale, not used: its definition changed since it was allowed")
            && text.contains("mandate mcp allow-unconfined srv"),
        "{text}"
    );

    // Taken back.
    write_project_file(ws.path(), json!({"srv": stdio_entry(&[], json!({}))}));
    let out = mandate(
        &["mcp", "deny-unconfined", "srv", "--workspace", &root],
        &dirs,
        &[],
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let (srv, text) = list(ws.path(), &dirs).await;
    assert_eq!(srv["unconfined"]["state"], "not_granted", "{srv:#}");
    assert!(text.contains("confined (landlock"), "{text}");
}

const MAIN: &str = "fn main() {}\n";
const SETTINGS: &str = "{\n  \"permissions\": {}\n}\n";

/// A workspace with notes INT-001 owns, a source file it does not and the person's Claude
/// Code settings; its server `srv` (with `env`) allowed to run unconfined.
fn unconfined_workspace(env: Value) -> (tempfile::TempDir, UserDirs) {
    let files = [
        ("docs/notes.md", "notes\n"),
        ("src/main.rs", MAIN),
        (".claude/settings.json", SETTINGS),
    ];
    setup_with(true, env, &files)
}

fn write_marker(id: &str, path: &str, text: &str) -> mandate_tests::llm_server::Reply {
    call(
        id,
        "mcp__srv__write_marker",
        json!({"path": path, "text": text}),
    )
}

#[tokio::test]
async fn what_an_unconfined_server_changes_in_the_workspace_is_recorded_in_scope_and_undone_out_of_it(
) {
    let (ws, dirs) = unconfined_workspace(json!({}));
    let intents =
        std::fs::read(ws.path().join(".orchestration/active_intents.yaml")).expect("intents");
    let server = ScriptedServer::start(vec![
        select(),
        write_marker("in", "docs/notes.md", "notes, changed by the server\n"),
        write_marker("out", "src/main.rs", "fn main() { evil() }\n"),
        write_marker(
            "intents",
            ".orchestration/active_intents.yaml",
            "active_intents: []\n",
        ),
        write_marker("hooks", ".claude/settings.json", "{\"hooks\": {}}"),
        done(),
    ])
    .await;
    let out = run_go(ws.path(), &server, &["--approve", "allow"], &dirs).await;

    // In scope: it stays, and the call's record lists it.
    let result = server.tool_result("in").expect("in");
    assert!(
        result.contains("recorded in the trace ledger under INT-001"),
        "{result}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("docs/notes.md")).expect("notes"),
        "notes, changed by the server\n"
    );
    let records = ledger(ws.path());
    assert_eq!(records.len(), 4, "{records:#?}");
    for record in &records {
        assert_valid(record);
        assert_eq!(record["metadata"]["dev.mandate"]["mcp"]["unconfined"], true);
    }
    assert_eq!(
        records[0]["files"][0]["path"], "docs/notes.md",
        "{:#}",
        records[0]
    );
    assert_eq!(records[0]["files"].as_array().map(Vec::len), Some(1));

    // Out of scope, and protected: put back byte for byte, and the model told.
    for (id, path) in [
        ("out", "src/main.rs"),
        ("intents", ".orchestration/active_intents.yaml"),
        ("hooks", ".claude/settings.json"),
    ] {
        let result = server.tool_result(id).expect(id);
        assert!(
            result.contains("SCOPE_VIOLATION") && result.contains(&format!("{path} (undone)")),
            "{result}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(ws.path().join("src/main.rs")).expect("main"),
        MAIN
    );
    assert_eq!(
        std::fs::read(ws.path().join(".orchestration/active_intents.yaml")).expect("intents"),
        intents
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join(".claude/settings.json")).expect("settings"),
        SETTINGS
    );
    assert!(
        notices(&out)
            .iter()
            .any(|n| n.contains("Scope Violation") && n.contains("src/main.rs")),
        "{:?}",
        notices(&out)
    );
}

#[tokio::test]
async fn an_unconfined_server_that_writes_outside_its_calls_has_it_undone_and_is_refused() {
    let ws_file = "docs/planted.md";
    let (ws, dirs) = unconfined_workspace(json!({"MCP_TEST_WRITE_AT_START": ws_file}));
    let server = ScriptedServer::start(vec![
        select(),
        write_marker("w", "docs/notes.md", "changed\n"),
        done(),
    ])
    .await;
    let out = run_go(ws.path(), &server, &["--approve", "allow"], &dirs).await;
    assert!(
        !ws.path().join(ws_file).exists(),
        "what it wrote while no call was running is still there"
    );
    let result = server.tool_result("w").expect("w");
    assert!(result.contains("mcp__srv__write_marker"), "{result}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("docs/notes.md")).expect("notes"),
        "notes\n"
    );
    assert!(
        notices(&out)
            .iter()
            .any(|n| n.contains("`srv` is unavailable")
                && n.contains("outside any call")
                && n.contains("docs/planted.md (undone)")),
        "{:?}",
        notices(&out)
    );
}
