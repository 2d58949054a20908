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
