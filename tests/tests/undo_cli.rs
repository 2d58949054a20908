//! `mandate undo` after real headless runs: by call, by turn (the conversation rewinds too), by
//! task and by intent; a dry run changes nothing; a person's edit on the same lines stops that
//! file with its reason; the ledger only grows and still verifies.

use mandate_tests::app::{workspace, UserDirs};
use mandate_tests::cli::{ledger, mandate, run_openai, task_record};
use mandate_tests::llm_server::ScriptedServer;
use mandate_tests::sse::openai;
use serde_json::{json, Value};

const INTENTS: &str = r#"active_intents:
  - id: INT-001
    name: Greeting module
    status: NOT_STARTED
    owned_scope: ["src/**"]
"#;

const V0: &str = "fn greet() {\n    hi();\n}\n\nfn other() {}\n";
const V1: &str = "fn greet() {\n    hello();\n}\n\nfn other() {}\n";
const V2: &str = "fn greet() {\n    hello();\n}\n\nfn other() { more(); }\n";

async fn two_writes(dirs: &UserDirs) -> (tempfile::TempDir, String) {
    let ws = workspace(Some(INTENTS), &[("src/lib.rs", V0)]);
    let server = ScriptedServer::start(vec![
        openai::turn().tool_call("s", "select_active_intent", json!({"intent_id": "INT-001"})).reply(),
        openai::turn().tool_call("r", "read_file", json!({"path": "src/lib.rs"})).reply(),
        openai::turn().tool_call("w1", "write_to_file", json!({"path": "src/lib.rs", "content": V1, "intent_id": "INT-001", "mutation_class": "INTENT_EVOLUTION"})).reply(),
        openai::turn().tool_call("w2", "write_to_file", json!({"path": "src/lib.rs", "content": V2, "intent_id": "INT-001", "mutation_class": "INTENT_EVOLUTION"})).reply(),
        openai::turn().tool_call("new", "write_to_file", json!({"path": "src/new.rs", "content": "fn new() {}\n", "intent_id": "INT-001", "mutation_class": "INTENT_EVOLUTION"})).reply(),
        openai::turn().tool_call("done", "attempt_completion", json!({"result": "done"})).reply(),
    ])
    .await;
    let out = run_openai(
        ws.path(),
        &server.base_url(),
        &["--approve", "allow"],
        "greet",
        dirs,
    )
    .await;
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let task = out.task_id().expect("task id");
    (ws, task)
}

async fn undo(
    ws: &std::path::Path,
    dirs: &UserDirs,
    args: &[&str],
) -> (Option<i32>, Value, String) {
    let ws = ws.display().to_string();
    let mut all = vec!["undo", "--workspace", ws.as_str(), "--json"];
    all.extend_from_slice(args);
    let out = mandate(&all, dirs, &[]).await;
    let value = serde_json::from_str(out.stdout.trim()).unwrap_or(Value::Null);
    (out.code, value, out.stderr)
}

fn read(ws: &std::path::Path, rel: &str) -> Option<String> {
    std::fs::read_to_string(ws.join(rel)).ok()
}

#[tokio::test]
async fn undo_a_call_then_the_task_with_a_dry_run_first() {
    let dirs = UserDirs::new();
    let (ws, task) = two_writes(&dirs).await;
    let records = ledger(ws.path()).len();
    // A dry run says what would happen and changes nothing.
    let (code, preview, err) = undo(ws.path(), &dirs, &["--call", "w2", "--dry-run"]).await;
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(preview["files"][0]["path"], "src/lib.rs");
    assert_eq!(preview["files"][0]["action"], "restore");
    assert_eq!(read(ws.path(), "src/lib.rs").as_deref(), Some(V2));
    assert_eq!(ledger(ws.path()).len(), records);
    // The call itself.
    let (code, done, err) = undo(ws.path(), &dirs, &["--call", "w2"]).await;
    assert_eq!(code, Some(0), "{err} {done}");
    assert_eq!(done["files"][0]["outcome"], "undone");
    assert_eq!(read(ws.path(), "src/lib.rs").as_deref(), Some(V1));
    let all = ledger(ws.path());
    assert_eq!(
        all.len(),
        records + 1,
        "an undo is appended, never a rewrite"
    );
    let w2 = all
        .iter()
        .find(|r| r["metadata"]["dev.mandate"]["tool_call_id"] == "w2")
        .expect("w2");
    assert_eq!(
        all.last().expect("last")["metadata"]["dev.mandate"]["revert_of"],
        json!([w2["id"]])
    );
    // Taken back once only.
    let (code, _, err) = undo(ws.path(), &dirs, &["--call", "w2"]).await;
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("nothing to undo"), "{err}");
    // The whole task: the created file goes, the first file is as before the task.
    let (code, done, err) = undo(ws.path(), &dirs, &["--task", &task]).await;
    assert_eq!(code, Some(0), "{err} {done}");
    assert_eq!(read(ws.path(), "src/lib.rs").as_deref(), Some(V0));
    assert!(!ws.path().join("src/new.rs").exists());
    let verify = mandate(
        &[
            "--workspace",
            &ws.path().display().to_string(),
            "trace",
            "verify",
        ],
        &dirs,
        &[],
    )
    .await;
    assert_eq!(verify.code, Some(0), "{}{}", verify.stdout, verify.stderr);
}

#[tokio::test]
async fn a_persons_edit_on_the_same_lines_stops_that_file_and_keeps_the_edit() {
    let dirs = UserDirs::new();
    let (ws, _task) = two_writes(&dirs).await;
    // A person rewrites the line the agent's first write produced.
    let edited = V2.replace("hello();", "hello_world();");
    std::fs::write(ws.path().join("src/lib.rs"), &edited).expect("edit");
    let (code, out, err) = undo(ws.path(), &dirs, &["--call", "w1"]).await;
    assert_eq!(code, Some(1), "{err} {out}");
    let file = &out["files"][0];
    assert_eq!(file["action"], "conflict");
    let reason = file["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("src/lib.rs") && reason.contains("same lines"),
        "{reason}"
    );
    assert_eq!(
        read(ws.path(), "src/lib.rs").as_deref(),
        Some(edited.as_str())
    );
    // An edit elsewhere in the file merges: the agent's change goes, the person's stays.
    let elsewhere = format!("// a note\n{V2}");
    std::fs::write(ws.path().join("src/lib.rs"), &elsewhere).expect("edit");
    let (code, out, err) = undo(ws.path(), &dirs, &["--call", "w2"]).await;
    assert_eq!(code, Some(0), "{err} {out}");
    assert_eq!(out["files"][0]["action"], "merge");
    assert_eq!(
        read(ws.path(), "src/lib.rs"),
        Some(format!("// a note\n{V1}"))
    );
}

#[tokio::test]
async fn undo_a_turn_rewinds_the_conversation_and_intent_status_follows() {
    let dirs = UserDirs::new();
    let (ws, task) = two_writes(&dirs).await;
    let intents = || read(ws.path(), ".orchestration/active_intents.yaml").unwrap_or_default();
    assert!(intents().contains("IN_PROGRESS"), "{}", intents());
    let (code, out, err) = undo(ws.path(), &dirs, &["--task", &task, "--turn", "1"]).await;
    assert_eq!(code, Some(0), "{err} {out}");
    assert_eq!(read(ws.path(), "src/lib.rs").as_deref(), Some(V0));
    let record = task_record(&dirs, &task);
    assert_eq!(
        record["conversation"],
        json!([]),
        "the conversation is back before the message"
    );
    assert_eq!(record["turns"], json!([]));
    // Every change of the intent was taken back: it has not started after all.
    assert!(intents().contains("NOT_STARTED"), "{}", intents());
    // Bad usage.
    let (code, _, err) = undo(ws.path(), &dirs, &["--turn", "1"]).await;
    assert_eq!(code, Some(2), "{err}");
    let (code, _, err) = undo(ws.path(), &dirs, &["--task", &task, "--turn", "9"]).await;
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no turn 9"), "{err}");
    let (code, _, err) = undo(
        ws.path(),
        &dirs,
        &["--intent", "INT-001", "--since", "yesterday"],
    )
    .await;
    assert_eq!(code, Some(2), "{err}");
}

/// Bad invocations of every subcommand are usage errors: exit 2 and a sentence naming the
/// problem, never 1 (the thing checked is bad) or 3 (it could not be checked).
#[tokio::test]
async fn every_bad_invocation_exits_2_with_a_sentence_naming_the_problem() {
    let dirs = UserDirs::new();
    let (ws, task) = two_writes(&dirs).await;
    let root = ws.path().display().to_string();
    let run = |extra: &[&'static str]| {
        let mut args = vec![
            "run",
            "--provider",
            "openai",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
        ];
        args.extend_from_slice(extra);
        args
    };
    let other_task = format!("{task}-other");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["undo", "--call", "w2", "--task", &other_task],
            "tool call w2 was made in task",
        ),
        (
            vec!["undo", "--call", "w2", "--intent", "INT-001"],
            "--intent",
        ),
        (vec!["undo", "--call", "w2", "--turn", "1"], "--turn"),
        (vec!["undo", "--turn", "1"], "--turn needs --task"),
        (
            vec!["undo", "--since", "2026-01-01T00:00:00Z"],
            "--since needs --intent",
        ),
        (
            vec!["undo", "--intent", "INT-001", "--since", "yesterday"],
            "RFC 3339",
        ),
        (vec!["undo", "--task", &task, "--turn", "0"], "turn 0"),
        (vec!["undo"], "give one of --call"),
        (vec!["intents", "show", "INT-404"], "no intent `INT-404`"),
        (vec!["trace", "blame", "src/missing.rs"], "src/missing.rs"),
        (vec!["trace", "blame", "src/lib.rs:99"], "no line 99"),
        (vec!["trace", "blame", "../outside.rs"], "outside.rs"),
        (vec!["trace", "verify", "--git"], "not in a git repository"),
        (
            vec!["trace", "report", "main..HEAD"],
            "not in a git repository",
        ),
        (vec!["trace", "validate", "missing.jsonl"], "missing.jsonl"),
        (
            vec!["mcp", "trust", "nosuch", "--yes"],
            "no server `nosuch`",
        ),
        (vec!["mcp", "untrust", "nosuch"], "nosuch"),
        (vec!["mcp", "allow-write", "nosuch", "--yes"], "nosuch"),
        (vec!["mcp", "deny-write", "nosuch"], "nosuch"),
        (run(&["go", "--grant", "network"]), "--grant"),
        (run(&["go", "--max-turns", "0"]), "--max-turns"),
        (run(&["go", "--max-tokens", "0"]), "--max-tokens"),
        (run(&["go", "--thinking-budget", "500"]), "thinking budget"),
        (run(&["go", "--context-window", "12"]), "context window"),
        (run(&["go", "--max-cost", "0"]), "--max-cost"),
        (run(&[]), "give the request"),
        (run(&["--resume", "no-such-task"]), "no-such-task"),
        (
            run(&["go", "--condense-threshold", "5"]),
            "--condense-threshold",
        ),
        (
            run(&["go", "--api-key-env", "MANDATE_TEST_UNSET_VAR"]),
            "MANDATE_TEST_UNSET_VAR",
        ),
        (vec!["undo", "--call"], "--call"),
        (vec!["intents", "frobnicate"], "frobnicate"),
        (vec!["trace", "report", "--format", "pdf", "a..b"], "pdf"),
        (
            vec!["--log-level", "mandate_core=shout", "intents", "list"],
            "shout",
        ),
    ];
    let mut wrong = Vec::new();
    for (args, says) in &cases {
        let mut all = vec!["--workspace", root.as_str()];
        all.extend_from_slice(args);
        let out = mandate(&all, &dirs, &[]).await;
        if out.code != Some(2) || !out.stderr.contains(says) {
            wrong.push(format!(
                "{args:?}: exit {:?}, expected 2 saying {says:?}:\n{}",
                out.code,
                out.stderr.trim()
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
    // A second selector that agrees with the call is no error: the call within its task.
    let (code, preview, err) = undo(
        ws.path(),
        &dirs,
        &["--call", "w2", "--task", &task, "--dry-run"],
    )
    .await;
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(preview["files"][0]["path"], "src/lib.rs");
}
